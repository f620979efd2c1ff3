#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into tests/fuzz/corpus/NAME/ (seed-*; files named
found-* are inputs the fuzzers found, kept so every run replays them). The seeds are committed;
run this again after a format changes: python3 tests/fuzz/make_seeds.py. Standard library only,
but for the JPEG seeds, which need Pillow (Debian: python3-pil; skipped with a note when
it is missing).

Each seed starts with the options byte its target reads first (see tests/fuzz/fuzz_*.cpp)."""
import ast
import gzip
import io
import os
import re
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data)


def sized(part):  # fuzz_input.h's sized_part: a 16-bit little-endian length, then the bytes
    return struct.pack("<H", len(part)) + part


# --- cfg: every preset (src/nn/presets.cpp) and small models of the other layer kinds ------
def preset_cfgs():
    source = open(os.path.join(ROOT, "src/nn/presets.cpp")).read()
    for name, literals in re.findall(r'\{"([\w-]+)",\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\}', source):
        yield name, "".join(ast.literal_eval(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', literals))


SMALL_CFGS = {
    "conv-bn-pool": "[net]\ninput = 8x8x1\n[conv]\nfilters = 4\nsize = 3\npad = 1\nbias = false\n[batchnorm]\n"
                    "[relu]\n[maxpool]\nsize = 2\n[avgpool]\nsize = 2\nstride = 2\n[dense]\nunits = 3\n",
    "rcl": "[net]\ninput = 6x6x2\n[rcl]\nfilters = 2\nsize = 3\nsteps = 2\n[global_avgpool]\n[dense]\nunits = 2\n",
    "decoder": "[net]\ninput = 4\nloss = mse\ntarget = input\n[dense]\nunits = 32\n[reshape]\nshape = 4x4x2\n"
               "[upsample]\n[conv_transpose]\nfilters = 1\nsize = 4\nstride = 2\npad = 1\noutput_pad = 0\n"
               "[tanh]\n[flatten]\n[dense]\nunits = 4\n[sigmoid]\n",
    "dropout-leaky": "[net]\ninput = 5\n[dense]\nunits = 6\n[leaky_relu]\nslope = 0.2\n[dropout]\nrate = 0.5\n"
                     "[dense]\nunits = 2\n[softmax]\n",
}


def cfg_seeds():
    for name, text in preset_cfgs():
        write("cfg", "preset-" + name, text.encode())
    for name, text in SMALL_CFGS.items():
        write("cfg", name, text.encode())


# --- checkpoint: the layout of src/train/checkpoint.h, for fuzz_checkpoint.cpp's model ------
def lp_str(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def tensor(name, dtype_code, dims, raw):
    return lp_str(name) + struct.pack("<II", dtype_code, len(dims)) + b"".join(struct.pack("<q", d) for d in dims) + raw


def checkpoint_seeds():
    cfg = "[net]\ninput = 4\n[dense]\nunits = 3\n"  # the model fuzz_checkpoint.cpp restores into
    settings = {"epochs_done": "1", "seed": "7"}
    payload = lp_str("fuzz.cfg") + lp_str(cfg) + struct.pack("<I", len(settings))
    payload += b"".join(lp_str(k) + lp_str(v) for k, v in sorted(settings.items()))
    weights = struct.pack("<12f", *[i / 10 for i in range(12)])
    payload += struct.pack("<I", 2) + tensor("dense1.weight", 0, [4, 3], weights) + tensor("dense1.bias", 0, [3], bytes(12))
    header = b"RETROGRD" + struct.pack("<IIQ", 1, 0, len(payload))
    write("checkpoint", "file", b"\x00" + header + payload + struct.pack("<I", zlib.crc32(payload)))
    write("checkpoint", "payload", b"\x01" + payload)
    # an f16 tensor and rank 0 (a scalar): other dtypes and shapes of the parser
    other = lp_str("x") + lp_str("") + struct.pack("<I", 0) + struct.pack("<I", 2)
    other += tensor("half", 1, [2, 1], bytes(4)) + tensor("scalar", 3, [], bytes(4))
    write("checkpoint", "payload-f16-scalar", b"\x01" + other)


# --- idx: raw and gzipped pairs, u8 and float32 images --------------------------------------
def idx_images_u8(n, h, w):
    return struct.pack(">IIII", 0x803, n, h, w) + bytes((i * 37) % 256 for i in range(n * h * w))


def idx_images_f32(n, h, w):
    return struct.pack(">IIII", 0xD03, n, h, w) + struct.pack(">%df" % (n * h * w), *[i / 7 for i in range(n * h * w)])


def idx_labels(n):
    return struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n))


def idx_seeds():
    raw_u8, raw_f32, labels = idx_images_u8(3, 4, 2), idx_images_f32(2, 2, 3), idx_labels(3)
    gz = lambda b: gzip.compress(b, mtime=0)
    write("idx", "u8", b"\x00" + sized(labels) + raw_u8)
    write("idx", "u8-streamed", b"\x01" + sized(labels) + raw_u8)
    write("idx", "u8-gz", b"\x00" + sized(gz(labels)) + gz(raw_u8))
    write("idx", "u8-gz-streamed", b"\x01" + sized(gz(labels)) + gz(raw_u8))
    write("idx", "f32", b"\x00" + sized(idx_labels(2)) + raw_f32)
    write("idx", "f32-as-f16", b"\x02" + sized(idx_labels(2)) + raw_f32)
    write("idx", "f32-gz-streamed-f16", b"\x03" + sized(gz(idx_labels(2))) + gz(raw_f32))


# --- cifar: six files of one record (options 0) or two (1), with and without the meta file -
def cifar_seeds():
    meta = b"airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n"
    records = lambda n: b"".join(bytes([i % 10]) + bytes((i + j) % 256 for j in range(3072)) for i in range(n))
    write("cifar", "one-record-meta", bytes([64]) + sized(meta) + records(6))
    write("cifar", "two-records", bytes([1]) + sized(b"") + records(12))
    write("cifar", "truncated-third-file", bytes([32 | (2 << 2)]) + sized(b"") + records(6))


# --- image: PNG (grey, RGB, RGBA with a palette-free filter mix), BMP, JPEG ------------------
def png(width, height, colour_type, channels):
    rows = b"".join(bytes([y % 5]) + bytes((x * 29 + y * 7) % 256 for x in range(width * channels)) for y in range(height))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def bmp(width, height):
    row = bytes((x * 40) % 256 for x in range(width * 3))
    row += bytes((4 - len(row) % 4) % 4)
    pixels = row * height
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + len(info) + len(pixels), 0, 0, 14 + len(info)) + info + pixels


def image_seeds():
    write("image", "png-grey", b"\x00" + png(5, 3, 0, 1))
    write("image", "png-rgb-crop", b"\x03" + png(4, 6, 2, 3))
    write("image", "png-rgba", b"\x01" + png(3, 3, 6, 4))
    write("image", "bmp-rgb", b"\x01" + bmp(5, 4))
    try:
        from PIL import Image
    except ImportError:
        print("make_seeds.py: no Pillow: the JPEG seeds are left as they are")
        return
    for name, mode, options in (("jpeg-grey", "L", 0), ("jpeg-rgb-progressive", "RGB", 3)):
        out = io.BytesIO()
        Image.new(mode, (9, 7), 120).save(out, "JPEG", quality=80, progressive=name.endswith("progressive"))
        write("image", name, bytes([options]) + out.getvalue())


# --- cli: a command byte (fuzz_cli.cpp's kCommands: 0 train, 1 eval, 2 precision, 3 probe, 4
# make-data), then one argument a line; names are fuzz_cli's fixtures or files of the run's own.
CLI_SEEDS = {
    "train-defaults": (0, []),
    "train-mnist-streamed": (0, ["--data", "mnist", "--stream", "yes", "--model", "lenet"]),
    "train-images-crop": (0, ["--data", "images", "--model", "lenet", "--image-fit", "crop", "--test-split", "0.3"]),
    "train-cfg-outputs": (0, ["--model", "tiny.cfg", "--json", "run.json", "--checkpoint", "run.ckpt", "--val-split", "0.2"]),
    "train-autoencoder-samples": (0, ["--model", "autoencoder", "--samples", "grid.png"]),
    "train-resume": (0, ["--resume", "mlp.ckpt", "--epochs", "2"]),
    "train-budget-adam": (0, ["--mem-budget", "3M", "--optimizer", "adam", "--schedule", "cosine", "--batch", "32"]),
    "train-fp16-stop": (0, ["--train-precision=fp16", "--epochs=2", "--stop-after=1", "--checkpoint=half.ckpt"]),
    "train-bad-batch": (0, ["--batch", "0"]),
    "train-samples-jpg": (0, ["--model", "autoencoder", "--samples", "grid.jpg"]),
    "eval-defaults": (1, []),
    "eval-int8-json": (1, ["--int8", "--json", "eval.json", "--data", "mnist"]),
    "eval-cfg-as-checkpoint": (1, ["--checkpoint", "tiny.cfg"]),
    "precision-fp32-int8": (2, ["--precision", "fp32,int8", "--csv", "table.csv"]),
    "precision-qat": (2, ["--model", "autoencoder", "--precision", "int8-qat", "--qat-epochs", "1", "--epochs", "2"]),
    "probe": (3, []),
    "probe-help": (3, ["--help"]),
    "make-data": (4, ["--samples", "10", "--test-samples", "5", "--out", "small"]),
}


def cli_seeds():
    for name, (command, words) in CLI_SEEDS.items():
        write("cli", name, bytes([command]) + "\n".join(words).encode())


if __name__ == "__main__":
    cfg_seeds()
    checkpoint_seeds()
    idx_seeds()
    cifar_seeds()
    image_seeds()
    cli_seeds()
