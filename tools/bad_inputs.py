#!/usr/bin/env python3
"""Feeds the retrograd binary every kind of bad input we know of and checks what each gets: exit
code 2 (a message, never a crash), a message naming the file or option and the rule, and
nothing the user had changed or lost. Writes one "PASS id" / "FAIL id: why" line a case to
RESULTS (tools/count_tests.py --checks; tools/test.sh part 5) and, with --doc, the table of
docs/reliability.md between its markers, from the messages this run printed.

Usage: python3 tools/bad_inputs.py BINARY [--results FILE] [--doc docs/reliability.md]
"""
import gzip
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

# --- making bad files ------------------------------------------------------------------------


def idx_images(n, h=28, w=28):
    return struct.pack(">IIII", 0x803, n, h, w) + bytes((i * 7) % 256 for i in range(n * h * w))


def idx_labels(n, classes=10):
    return struct.pack(">II", 0x801, n) + bytes(i % classes for i in range(n))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def mnist_folder(d, train_images=None, train_labels=None, gz=False):
    """An MNIST-layout folder of 64 training and 16 test images, with the training files replaced."""
    files = {
        "train-images-idx3-ubyte": train_images if train_images is not None else idx_images(64),
        "train-labels-idx1-ubyte": train_labels if train_labels is not None else idx_labels(64),
        "t10k-images-idx3-ubyte": idx_images(16),
        "t10k-labels-idx1-ubyte": idx_labels(16),
    }
    for name, data in files.items():
        write(os.path.join(d, name + (".gz" if gz else "")), gzip.compress(data, mtime=0) if gz else data)


def cifar_folder(d, records=10000, bad_label_at=None, short_file=None):
    record = bytes([3]) + bytes(3072)
    for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
        n = records - 1 if name == short_file else records
        data = bytearray(record * n)
        if bad_label_at is not None and name == "data_batch_1.bin":
            data[bad_label_at * 3073] = 12
        write(os.path.join(d, name), bytes(data))


def png_header(width, height):
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    import zlib
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))


# --- the cases -------------------------------------------------------------------------------
# Each: (id, area, what is wrong, setup(dir) -> None, args with {d} for the folder, the words
# the message must hold ({d} too), files under {d} that must be left exactly as they were).
# Args may also hold ENV=NAME=VALUE (set in the environment), ULIMIT=KB (ulimit -v) and AS_NOBODY
# (run as uid 65534 when the suite runs as root, so permission bits hold).
QUICK = ["--data", "synthetic", "--limit", "256", "--epochs", "1", "--threads", "1"]


def gz_cut(d):
    mnist_folder(d, gz=True)
    p = os.path.join(d, "train-images-idx3-ubyte.gz")
    data = open(p, "rb").read()
    write(p, data[: len(data) // 2])


def gz_corrupt(d):
    mnist_folder(d, gz=True)
    p = os.path.join(d, "train-images-idx3-ubyte.gz")
    data = bytearray(open(p, "rb").read())
    for i in range(20, 40):
        data[i] ^= 0x5A
    write(p, bytes(data))


def float_nan(d):
    n = 64
    images = struct.pack(">IIII", 0xD03, n, 28, 28) + struct.pack(">f", float("nan")) + struct.pack(">%df" % (n * 784 - 1), *([0.5] * (n * 784 - 1)))
    mnist_folder(d, train_images=images)


def image_folder(d, bad):
    for cls in ("cat", "dog"):
        for i in range(3):
            write(os.path.join(d, cls, "%d.png" % i), png_real(4, 4))
    if bad == "not-png":
        write(os.path.join(d, "dog", "notes.png"), b"hello, not an image")
    elif bad == "huge":
        write(os.path.join(d, "dog", "huge.png"), png_header(20000, 100))
    elif bad == "cut-png":
        write(os.path.join(d, "dog", "cut.png"), png_real(4, 4)[:-20])  # into the image data
    elif bad == "empty-class":
        os.makedirs(os.path.join(d, "bird"))


def png_real(w, h):
    import zlib
    rows = b"".join(b"\x00" + bytes(3 * w) for _ in range(h))
    chunk = lambda k, data: struct.pack(">I", len(data)) + k + data + struct.pack(">I", zlib.crc32(k + data))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def png_grey_zeros(w, h):
    """A valid grey PNG of w x h black pixels, compressed a row at a time (16384 x 16384: 260 KB)."""
    import zlib
    packer, row = zlib.compressobj(9), b"\x00" * (w + 1)
    data = b"".join(packer.compress(row) for _ in range(h)) + packer.flush()
    chunk = lambda k, body: struct.pack(">I", len(body)) + k + body + struct.pack(">I", zlib.crc32(k + body))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def image_folder_with(d, make_entry):
    """A good two-class image folder, then one more entry made by make_entry(folder)."""
    image_folder(d, None)
    make_entry(d)


def unreadable_png(d):
    p = os.path.join(d, "dog", "locked.png")
    write(p, png_real(4, 4))
    os.chmod(p, 0)


def stale_cache_same_size(d):
    """A gzipped MNIST folder streamed once (its inflated copy cached in {d}/cache), then the
    images file replaced by one of the same size and time whose gzip data is damaged: a cache
    keyed by size and time serves the old copy (exit 0); keyed by content, the new file is
    read and refused. Random pixels, so that the gzip file is larger than what reading the
    header inflates (zlib reads 128 KiB ahead): only a fresh inflation meets the damage."""
    import random
    n = 600
    pixels = random.Random(1).getrandbits(8 * n * 784).to_bytes(n * 784, "little")
    mnist_folder(d, train_images=struct.pack(">IIII", 0x803, n, 28, 28) + pixels, train_labels=idx_labels(n), gz=True)
    subprocess.run([BINARY, "train", "--data", d, "--stream", "yes", "--epochs", "1", "--threads", "1"],
                   env=dict(os.environ, RETROGRAD_CACHE=os.path.join(d, "cache")), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = os.path.join(d, "train-images-idx3-ubyte.gz")
    before = os.stat(p)
    data = bytearray(open(p, "rb").read())
    for i in range(len(data) * 4 // 5, len(data) * 4 // 5 + 16):
        data[i] ^= 0x5A
    write(p, bytes(data))
    os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns))


def gz_trailing(d):
    mnist_folder(d, train_images=idx_images(64) + b"extra", gz=True)


def unreadable_folder(d):
    mnist_folder(os.path.join(d, "data"))
    os.chmod(os.path.join(d, "data"), 0)


def checkpoint_then(d, change):
    """A real checkpoint (one quick epoch), then `change` applied to its bytes."""
    subprocess.run([BINARY, "train", "--checkpoint", os.path.join(d, "run.ckpt")] + QUICK, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = os.path.join(d, "run.ckpt")
    write(p, change(open(p, "rb").read()))


def flip_middle(data):
    data = bytearray(data)
    data[len(data) // 2] ^= 0x01
    return bytes(data)


def read_only_folder(d):
    os.makedirs(os.path.join(d, "ro"))
    os.chmod(os.path.join(d, "ro"), 0o555)


def unix_socket(d):
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(d, "sock"))  # the socket file stays after close
    s.close()


def held_checkpoint(d):
    """A checkpoint another run is writing: its lock held (flock, as retrograd holds it) by a
    process that stands for that run until the case's folder is removed (60 s at most), its
    process id in the lock file."""
    lock = os.path.join(d, "run.ckpt.lock")
    holder = ("import fcntl, os, time\n"
              "f = open(%r, 'w'); fcntl.flock(f, fcntl.LOCK_EX); f.write(str(os.getpid())); f.flush()\n"
              "open(%r, 'w').close()\n"
              "for _ in range(600):\n"
              "    if not os.path.exists(%r): break  # the case's folder is gone: done\n"
              "    time.sleep(0.1)\n" % (lock, lock + ".ready", lock + ".ready"))
    subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        if os.path.exists(lock + ".ready"):
            return
        import time
        time.sleep(0.01)
    raise OSError("the lock holder did not start")


def checkpoint_on_folder(d, relabel):
    """A checkpoint of a run on the MNIST-layout folder {d}/mnist; `relabel`: its training labels
    changed afterwards (the same file sizes and names)."""
    mnist_folder(os.path.join(d, "mnist"))
    subprocess.run([BINARY, "train", "--data", os.path.join(d, "mnist"), "--epochs", "1", "--threads", "1",
                    "--checkpoint", os.path.join(d, "run.ckpt")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if relabel:
        write(os.path.join(d, "mnist", "train-labels-idx1-ubyte"),
              struct.pack(">II", 0x801, 64) + bytes((i + 3) % 10 for i in range(64)))

def fifo_at(d, name):
    """A FIFO with no writer: a reader that opens it waits forever."""
    os.makedirs(d, exist_ok=True)
    os.mkfifo(os.path.join(d, name))


def checkpoint_header(d, name, size):
    """A file of `size` bytes (sparse) with a valid checkpoint header claiming the rest as payload."""
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(b"RETROGRD" + struct.pack("<IIQ", 1, 0, size - 28))
        f.truncate(size)


def mnist_with_fifo(d):
    mnist_folder(d)
    os.remove(os.path.join(d, "train-labels-idx1-ubyte"))
    fifo_at(d, "train-labels-idx1-ubyte")


def cifar_sparse(d, odd_one, make_odd):
    """A CIFAR-10 folder of full-size sparse batch files (all label 0), `odd_one` made by make_odd(path)."""
    for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin", "batches.meta.txt"]:
        p = os.path.join(d, name)
        if name == odd_one:
            make_odd(p)
        elif name.endswith(".bin"):
            with open(p, "wb") as f:
                f.truncate(10000 * 3073)


def trained_then_moved(d):
    """A checkpoint trained on {d}/data, whose folder then moved away."""
    mnist_folder(os.path.join(d, "data"))
    subprocess.run([BINARY, "train", "--data", os.path.join(d, "data"), "--epochs", "1", "--threads", "1", "--checkpoint",
                    os.path.join(d, "run.ckpt")], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.rename(os.path.join(d, "data"), os.path.join(d, "moved"))


CFG_BASE = "[net]\ninput = 28x28x1\n"


def labels_with(n, classes=10, bad_at=None, bad_label=255):
    """IDX labels i % classes, the one at `bad_at` replaced by `bad_label`."""
    data = bytearray(idx_labels(n, classes))
    if bad_at is not None:
        data[8 + bad_at] = bad_label
    return bytes(data)


def mnist_folder_bad_test_label(d, at=5):
    mnist_folder(d)
    write(os.path.join(d, "t10k-labels-idx1-ubyte"), labels_with(16, bad_at=at))


def trained_then_bad_test_label(d):
    """A checkpoint trained on a good MNIST folder ({d}/good), and the same folder with test label 255 ({d}/bad)."""
    mnist_folder(os.path.join(d, "good"))
    subprocess.run([BINARY, "train", "--data", os.path.join(d, "good"), "--epochs", "1", "--threads", "1",
                    "--checkpoint", os.path.join(d, "run.ckpt")], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    mnist_folder_bad_test_label(os.path.join(d, "bad"))


def four_class_model_and_ten_class_data(d):
    """A model of 4 outputs trained on a folder of 4 image classes ({d}/four.ckpt), and a 10-class MNIST folder."""
    for c in range(4):
        for i in range(3):
            write(os.path.join(d, "four", "class%d" % c, "%d.png" % i), png_real(28, 28))
    write(os.path.join(d, "four.cfg"), (CFG_BASE + "[dense]\nunits = 16\n[relu]\n[dense]\nunits = 4\n").encode())
    subprocess.run([BINARY, "train", "--model", os.path.join(d, "four.cfg"), "--data", os.path.join(d, "four"),
                    "--epochs", "1", "--threads", "1", "--checkpoint", os.path.join(d, "four.ckpt")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mnist_folder(os.path.join(d, "ten"))


def gan_run(d):
    subprocess.run([BINARY, "train", "--model", "dcgan", "--out", os.path.join(d, "gan"), "--score-samples", "0"] + QUICK,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def small_study(d):
    """A stopped-looking study of the mlp alone in {d}/s (one round, the best CPU level)."""
    subprocess.run([BINARY, "study", "--quick", "--data", "synthetic", "--networks", "mlp", "--parts", "devices",
                    "--precisions", "fp32", "--isa-ladder", "none", "--no-opencl", "--rounds", "1", "--seconds", "0.1",
                    "--out", os.path.join(d, "s")], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def two_studies(d):
    """{d}/s as small_study makes it, and {d}/t: the same but with runs twice as long (other settings)."""
    small_study(d)
    shutil.copytree(os.path.join(d, "s"), os.path.join(d, "t"))
    path = os.path.join(d, "t", "study.json")
    with open(path) as f:
        text = f.read()
    assert '"seconds_per_run": 0.1' in text
    with open(path, "w") as f:
        f.write(text.replace('"seconds_per_run": 0.1', '"seconds_per_run": 0.2'))


CASES = [
    # datasets
    ("idx-missing-folder", "dataset", "a --data folder that does not exist",
     lambda d: None, ["train", "--data", "{d}/nowhere", "--epochs", "1"], ["{d}/nowhere"], []),
    ("idx-truncated", "dataset", "an IDX image file cut short",
     lambda d: mnist_folder(d, train_images=idx_images(64)[:-100]), ["train", "--data", "{d}", "--epochs", "1"],
     ["{d}/train-images-idx3-ubyte", "truncated"], []),
    ("idx-wrong-magic", "dataset", "an IDX file whose magic number is wrong (labels given as images)",
     lambda d: mnist_folder(d, train_images=idx_labels(64)), ["train", "--data", "{d}", "--epochs", "1"],
     ["{d}/train-images-idx3-ubyte", "magic number"], []),
    ("idx-count-mismatch", "dataset", "63 labels for 64 images",
     lambda d: mnist_folder(d, train_labels=idx_labels(63)), ["train", "--data", "{d}", "--epochs", "1"],
     ["{d}/train-labels-idx1-ubyte", "63"], []),
    ("idx-trailing-bytes", "dataset", "bytes after an IDX file's data",
     lambda d: mnist_folder(d, train_images=idx_images(64) + b"extra"), ["train", "--data", "{d}", "--epochs", "1"],
     ["{d}/train-images-idx3-ubyte"], []),
    ("idx-gz-cut", "dataset", "a gzipped IDX file cut in half",
     gz_cut, ["train", "--data", "{d}", "--epochs", "1"], ["{d}/train-images-idx3-ubyte.gz"], []),
    ("idx-gz-corrupt", "dataset", "a gzipped IDX file with 20 bytes changed",
     gz_corrupt, ["train", "--data", "{d}", "--epochs", "1"], ["{d}/train-images-idx3-ubyte.gz", "gzip"], []),
    ("idx-gz-cut-streamed", "dataset", "the same cut file, streamed (--stream yes)",
     gz_cut, ["train", "--data", "{d}", "--epochs", "1", "--stream", "yes"], ["{d}/train-images-idx3-ubyte.gz"], []),
    ("idx-float-nan", "dataset", "a float32 IDX image holding a NaN",
     float_nan, ["train", "--data", "{d}", "--epochs", "1"], ["{d}/train-images-idx3-ubyte", "nan", "finite"], []),
    ("cifar-short-file", "dataset", "a CIFAR-10 batch file one record short",
     lambda d: cifar_folder(d, short_file="data_batch_3.bin"), ["train", "--data", "{d}", "--model", "cnn", "--epochs", "1"],
     ["{d}/data_batch_3.bin", "9999 records"], []),
    ("cifar-bad-label", "dataset", "a CIFAR-10 record with label 12",
     lambda d: cifar_folder(d, bad_label_at=5), ["train", "--data", "{d}", "--model", "cnn", "--epochs", "1"],
     ["{d}/data_batch_1.bin", "record 5", "label 12"], []),
    ("image-not-an-image", "dataset", "a .png file in an image folder that is text",
     lambda d: image_folder(d, "not-png"), ["train", "--data", "{d}", "--epochs", "1"], ["{d}/dog/notes.png"], []),
    ("image-huge-header", "dataset", "a PNG whose header claims 20000 x 100 pixels",
     lambda d: image_folder(d, "huge"), ["train", "--data", "{d}", "--epochs", "1"],
     ["{d}/dog/huge.png", "20000x100", "before decoding"], []),
    ("image-cut-short", "dataset", "a PNG in an image folder cut short",
     lambda d: image_folder(d, "cut-png"), ["train", "--data", "{d}", "--epochs", "1"],
     ["{d}/dog/cut.png", "truncated PNG", "bytes follow its header"], []),
    ("image-empty-class", "dataset", "an empty class folder",
     lambda d: image_folder(d, "empty-class"), ["train", "--data", "{d}", "--epochs", "1"], ["{d}/bird"], []),
    # model cfg files
    ("cfg-syntax", "cfg", "a line that is not key = value",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[dense]\nunits 10\n").encode()), ["train", "--model", "{d}/m.cfg"] + QUICK,
     ["{d}/m.cfg:4"], []),
    ("cfg-unknown-layer", "cfg", "a section of a kind there is none of",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[densely]\nunits = 10\n").encode()), ["train", "--model", "{d}/m.cfg"] + QUICK,
     ["{d}/m.cfg:3", "densely"], []),
    ("cfg-unknown-key", "cfg", "a key the layer does not take",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[dense]\nunits = 10\nfilters = 3\n").encode()), ["train", "--model", "{d}/m.cfg"] + QUICK,
     ["{d}/m.cfg", "filters"], []),
    ("cfg-out-of-range", "cfg", "units = 0",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[dense]\nunits = 0\n").encode()), ["train", "--model", "{d}/m.cfg"] + QUICK,
     ["{d}/m.cfg", "units"], []),
    ("cfg-shape", "cfg", "a 9x9 convolution over a 2x2 input",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[maxpool]\nsize = 14\n[conv]\nfilters = 2\nsize = 9\n[dense]\nunits = 10\n").encode()),
     ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg", "conv"], []),
    ("cfg-winograd-5x5", "cfg", "a 5x5 convolution asked to run Winograd F(4x4, 3x3)",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[conv]\nfilters = 2\nsize = 5\nalgorithm = winograd\n[dense]\nunits = 10\n").encode()),
     ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg", "algorithm", "size = 3"], []),
    ("cfg-binary", "cfg", "a binary file given as a cfg",
     lambda d: write(d + "/m.cfg", bytes(range(256))), ["train", "--model", "{d}/m.cfg"] + QUICK,
     ["{d}/m.cfg:1", "a cfg file is text"], []),
    # checkpoints
    ("ckpt-byte-changed", "checkpoint", "a checkpoint with one byte changed, resumed",
     lambda d: checkpoint_then(d, flip_middle), ["train", "--resume", "{d}/run.ckpt", "--epochs", "2"],
     ["{d}/run.ckpt", "checksum"], ["run.ckpt"]),
    ("ckpt-truncated", "checkpoint", "a checkpoint cut short, scored",
     lambda d: checkpoint_then(d, lambda b: b[: len(b) // 3]), ["eval", "--checkpoint", "{d}/run.ckpt"],
     ["{d}/run.ckpt", "truncated"], ["run.ckpt"]),
    ("ckpt-not-one", "checkpoint", "a text file given as a checkpoint",
     lambda d: write(d + "/run.ckpt", b"this is a text file, not a checkpoint\n"), ["eval", "--checkpoint", "{d}/run.ckpt"],
     ["{d}/run.ckpt", "not a retrograd checkpoint"], ["run.ckpt"]),
    ("ckpt-done", "checkpoint", "resuming a run that has done all its epochs",
     lambda d: checkpoint_then(d, lambda b: b), ["train", "--resume", "{d}/run.ckpt"] + QUICK[:4],
     ["{d}/run.ckpt", "epochs done"], ["run.ckpt"]),
    # memory
    ("mem-budget-too-small", "memory", "--mem-budget 300k for the mlp",
     lambda d: None, ["train", "--mem-budget", "300k"] + QUICK, ["--mem-budget 300.0 KiB", "needs"], []),
    ("mem-budget-malformed", "memory", "--mem-budget 12parsecs",
     lambda d: None, ["train", "--mem-budget", "12parsecs"] + QUICK, ["12parsecs"], []),
    ("mem-failed-allocation", "memory", "an allocation the system refuses (ulimit -v 300000, --mem-budget 4G, the cnn at batch 6000)",
     lambda d: None, ["ULIMIT=300000", "train", "--mem-budget", "4G", "--model", "cnn", "--batch", "6000", "--data", "synthetic",
                      "--epochs", "1", "--threads", "1"], ["allocation of", "failed"], []),
    # numerics
    ("nan-loss", "numerics", "a learning rate of 1000 (the loss diverges), with a checkpoint from before",
     lambda d: checkpoint_then(d, lambda b: b), ["train", "--lr", "1000", "--checkpoint", "{d}/run.ckpt", "--overwrite"] + QUICK,
     ["loss became", "the first Inf or NaN", "dense"], ["run.ckpt"]),
    # options and devices
    ("opt-bad-number", "options", "--batch 0", lambda d: None, ["train", "--batch", "0"] + QUICK, ["--batch"], []),
    ("opt-unknown", "options", "an option that does not exist", lambda d: None, ["train", "--batchsize", "8"], ["--batchsize"], []),
    ("opt-denormals", "options", "--denormals fast (flush or keep)",
     lambda d: None, ["train", "--denormals", "fast"] + QUICK, ["--denormals", "'fast' is not flush or keep"], []),
    ("opt-fixed-point-bits", "options", "--train-precision w17a8 (a fixed-point width past 16 bits)",
     lambda d: None, ["train", "--train-precision", "w17a8"] + QUICK, ["--train-precision", "17 bits; 2 to 16"], []),
    ("opt-fixed-point-order", "options", "--train-precision a8w8 (roles out of the order w, a, g, e)",
     lambda d: None, ["train", "--train-precision", "a8w8"] + QUICK, ["--train-precision", "out of the order"], []),
    ("opt-fixed-point-pc", "options", "--train-precision a8-pc (per-channel scales without weights or gradients)",
     lambda d: None, ["train", "--train-precision", "a8-pc"] + QUICK, ["--train-precision", "name w or g"], []),
    ("opt-fixed-point-zp", "options", "--train-precision w8e8-zp (a zero point without activations)",
     lambda d: None, ["train", "--train-precision", "w8e8-zp"] + QUICK, ["--train-precision", "gives role 'a' a zero point"], []),
    ("opt-ptq-as-training", "options", "--train-precision w4a8-ptq (post-training quantization is not a way to train)",
     lambda d: None, ["train", "--train-precision", "w4a8-ptq"] + QUICK, ["--train-precision", "not a way to train"], []),
    ("opt-int8-engine-activations", "options", "precision --precision fp32,w4a9-qat (the int8 engine's activations: 2 to 8 bits)",
     lambda d: None, ["precision", "--precision", "fp32,w4a9-qat"] + QUICK,
     ["--precision", "name the activations' bits, 2 to 8"], []),
    ("opt-sweep-seeds-twice", "options", "precision --sweep --sweep-seeds 1,1 (a seed twice)",
     lambda d: None, ["precision", "--sweep", "--sweep-seeds", "1,1"] + QUICK, ["--sweep-seeds", "listed twice"], []),
    ("out-sweep-file", "outputs", "precision --sweep --sweep-out naming a regular file (kept as it was)",
     lambda d: write(d + "/f", b"keep"), ["precision", "--sweep", "--sweep-out", "{d}/f"] + QUICK,
     ["--sweep-out", "{d}/f", "not a folder"], ["f"]),
    ("opt-layer-precision-name", "options", "--layer-precision conv9=w8a8e8 (the model has no conv9)",
     lambda d: None, ["train", "--model", "lenet", "--layer-precision", "conv9=w8a8e8"] + QUICK,
     ["--layer-precision", "no layer 'conv9'"], []),
    ("opt-denormals-eval", "options", "--denormals FLUSH on eval (the names are lower case)",
     lambda d: checkpoint_then(d, lambda b: b), ["eval", "--checkpoint", "{d}/run.ckpt", "--denormals", "FLUSH"],
     ["--denormals", "'FLUSH' is not flush or keep"], ["run.ckpt"]),
    ("study-rounds-zero", "options", "study --rounds 0",
     lambda d: None, ["study", "--rounds", "0", "--out", "{d}/s"], ["--rounds"], []),
    ("study-rounds-fraction", "options", "study --rounds 2.5 (a whole number of rounds)",
     lambda d: None, ["study", "--rounds", "2.5", "--out", "{d}/s"], ["--rounds"], []),
    ("study-quality-samples-negative", "options", "study --quality-samples -5",
     lambda d: None, ["study", "--quality-samples", "-5", "--out", "{d}/s"], ["--quality-samples"], []),
    ("study-resume-nothing", "options", "study --resume where no study was made",
     lambda d: None, ["study", "--resume", "--no-opencl", "--out", "{d}/s"], ["--resume", "{d}/s/study.json", "no study there"], []),
    ("study-resume-other-settings", "options", "study --resume with other settings than the stopped study's",
     small_study, ["study", "--resume", "--quick", "--data", "synthetic", "--networks", "lenet", "--no-opencl", "--out", "{d}/s"],
     ["--resume", "other settings"], ["s/study.json"]),
    ("study-resume-fifo", "options", "study --resume where study.json is a FIFO (never waited on)",
     lambda d: (os.makedirs(os.path.join(d, "s")), os.mkfifo(os.path.join(d, "s", "study.json"))),
     ["study", "--resume", "--no-opencl", "--out", "{d}/s"], ["{d}/s/study.json", "FIFO"], []),
    ("compare-one-study", "options", "compare with one study only",
     small_study, ["compare", "{d}/s"], ["compare needs two studies"], ["s/study.json"]),
    ("compare-dev-zero", "options", "compare /dev/zero against a study",
     small_study, ["compare", "/dev/zero", "{d}/s"], ["/dev/zero"], ["s/study.json"]),
    ("compare-other-settings", "options", "compare two studies made with other settings",
     two_studies, ["compare", "{d}/s", "{d}/t"], ["{d}/t/study.json", "other settings than {d}/s/study.json"],
     ["s/study.json", "t/study.json"]),
    ("compare-out-folder", "options", "compare --out naming a folder",
     small_study, ["compare", "{d}/s", "{d}/s", "--out", "{d}/s"], ["{d}/s"], ["s/study.json"]),
    ("opt-unwritable", "options", "a checkpoint path in a folder that does not exist",
     lambda d: None, ["train", "--checkpoint", "{d}/no/such/folder/run.ckpt"] + QUICK, ["{d}/no/such/folder/run.ckpt"], []),
    ("device-missing", "devices", "an OpenCL device that is not there",
     lambda d: None, ["train", "--device", "cl:7:3"] + QUICK, ["cl:7:3"], []),
    ("device-no-loader", "devices", "no OpenCL library (RETROGRAD_OPENCL_LIBRARY names a missing file)",
     lambda d: None, ["ENV=RETROGRAD_OPENCL_LIBRARY={d}/libOpenCL-none.so", "train", "--device", "cl:0:0"] + QUICK,
     ["libOpenCL-none.so"], []),
    ("isa-unknown", "devices", "RETROGRAD_ISA=avx1024", lambda d: None, ["ENV=RETROGRAD_ISA=avx1024", "probe"], ["avx1024"], []),
    # --- issue 29 section 1 labels: begin
    ("labels-test-255-train", "labels", "a test label of 255 in an IDX folder, trained on",
     mnist_folder_bad_test_label, ["train", "--data", "{d}", "--epochs", "1", "--checkpoint", "{d}/never.ckpt"],
     ["{d}/t10k-labels-idx1-ubyte: sample 5 has label 255", "10 outputs (classes 0 to 9)"], []),
    ("labels-test-255-eval", "labels", "a test label of 255 in an IDX folder, scored by eval",
     trained_then_bad_test_label, ["eval", "--checkpoint", "{d}/run.ckpt", "--data", "{d}/bad"],
     ["{d}/bad/t10k-labels-idx1-ubyte: sample 5 has label 255", "10 outputs"], ["run.ckpt"]),
    ("labels-validation-split", "labels", "a training label of 200 held out for validation (--val-split 0.5)",
     lambda d: mnist_folder(d, train_labels=labels_with(64, bad_at=41, bad_label=200)),
     ["train", "--data", "{d}", "--val-split", "0.5", "--epochs", "1"],
     ["{d}/train-labels-idx1-ubyte: sample 41 has label 200"], []),
    ("labels-fewer-outputs", "labels", "a 4-output model (trained on 4 image classes) scored on 10 classes",
     four_class_model_and_ten_class_data, ["eval", "--checkpoint", "{d}/four.ckpt", "--data", "{d}/ten"],
     ["{d}/ten/t10k-labels-idx1-ubyte: sample 4 has label 4", "4 outputs (classes 0 to 3)"], ["four.ckpt"]),
    ("labels-fewer-outputs-train", "labels", "the same 4-output model trained on 10 classes",
     four_class_model_and_ten_class_data, ["train", "--model", "{d}/four.cfg", "--data", "{d}/ten", "--epochs", "1"],
     ["{d}/ten/train-labels-idx1-ubyte: sample 4 has label 4", "4 outputs"], []),
    # --- issue 29 section 1: end
    # --- issue 29 section 2 inputs that identify themselves: begin
    ("cfg-dev-zero", "cfg", "/dev/zero given as the model cfg (read whole, it fills memory)",
     lambda d: None, ["train", "--model", "/dev/zero"] + QUICK, ["/dev/zero is a character device, not a cfg file"], []),
    ("cfg-fifo", "cfg", "a FIFO with no writer given as the model cfg",
     lambda d: fifo_at(d, "m.cfg"), ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg is a FIFO (named pipe), not a cfg file"], []),
    ("cfg-folder", "cfg", "a folder given as the model cfg",
     lambda d: os.makedirs(d + "/m.cfg"), ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg is a folder, not a cfg file"], []),
    ("cfg-too-large", "cfg", "a 2 MB cfg (a model description is kilobytes; the limit is 1 MiB)",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[dense]\nunits = 10\n" + "# padding\n" * 210000).encode()),
     ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg: 2.0 MiB, more than the 1.0 MiB a cfg file may hold"], []),
    ("cfg-200000-relu", "cfg", "a cfg of 200000 [relu] sections (1.4 MB)",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[relu]\n" * 200000 + "[dense]\nunits = 10\n").encode()),
     ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg: 1.3 MiB, more than the 1.0 MiB"], []),
    ("cfg-20000-relu", "cfg", "a cfg of 20000 [relu] sections (140 KB; the limit is 10000 sections)",
     lambda d: write(d + "/m.cfg", (CFG_BASE + "[relu]\n" * 20000 + "[dense]\nunits = 10\n").encode()),
     ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg:10002: section 10001: a cfg holds at most 10000 sections"], []),
    ("cfg-past-any-memory", "cfg", "a dense layer of 2^24 units over a 4096x4096x3 input (10^15 parameters)",
     lambda d: write(d + "/m.cfg", b"[net]\ninput = 4096x4096x3\n[dense]\nunits = 16777216\n"),
     ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg:3: [dense]", "more than 4294967296 parameters (2^32)"], []),
    ("cfg-past-this-memory", "cfg", "a model whose parameters need 32 GiB, under ulimit -v 2000000",
     lambda d: write(d + "/m.cfg", b"[net]\ninput = 65536\n[dense]\nunits = 65535\n"),
     ["ULIMIT=2000000", "train", "--model", "{d}/m.cfg"] + QUICK,
     ["{d}/m.cfg: the parameters and their gradients", "32.0 GiB needed, more than the", "ulimit -v"], []),
    ("ckpt-dev-urandom", "checkpoint", "/dev/urandom given as the checkpoint to score",
     lambda d: None, ["eval", "--checkpoint", "/dev/urandom"], ["/dev/urandom is a character device, not a checkpoint"], []),
    ("ckpt-fifo", "checkpoint", "a FIFO with no writer given to --resume",
     lambda d: fifo_at(d, "run.ckpt"), ["train", "--resume", "{d}/run.ckpt"], ["{d}/run.ckpt is a FIFO (named pipe), not a checkpoint"], []),
    ("ckpt-random-47mb", "checkpoint", "47 MB of random bytes given as a checkpoint (refused on its first 8)",
     lambda d: write(d + "/run.ckpt", os.urandom(47 << 20)), ["ULIMIT=200000", "eval", "--checkpoint", "{d}/run.ckpt"],
     ["{d}/run.ckpt: not a retrograd checkpoint"], []),
    ("ckpt-claims-more", "checkpoint", "a checkpoint header claiming 2^40 payload bytes in a 1000-byte file",
     lambda d: write(d + "/run.ckpt", b"RETROGRD" + struct.pack("<IIQ", 1, 0, 1 << 40) + bytes(976)),
     ["eval", "--checkpoint", "{d}/run.ckpt"], ["{d}/run.ckpt: the header says 1099511627776 payload bytes"], ["run.ckpt"]),
    ("ckpt-past-this-memory", "checkpoint", "a well-formed header over 3 GiB (sparse), under ulimit -v 2000000",
     lambda d: checkpoint_header(d, "run.ckpt", 3 << 30), ["ULIMIT=2000000", "eval", "--checkpoint", "{d}/run.ckpt"],
     ["{d}/run.ckpt: reading the checkpoint", "needed, more than the", "ulimit -v"], []),
    ("data-not-a-folder", "dataset", "/dev/null given as the data folder",
     lambda d: None, ["train", "--data", "/dev/null", "--epochs", "1"], ["/dev/null is a character device, not a dataset folder"], []),
    ("data-fifo", "dataset", "an MNIST folder whose labels file is a FIFO with no writer",
     mnist_with_fifo, ["train", "--data", "{d}", "--epochs", "1"],
     ["{d}/train-labels-idx1-ubyte is a FIFO (named pipe), not an IDX file"], []),
    ("data-cifar-folder", "dataset", "a CIFAR-10 folder whose data_batch_2.bin is a folder",
     lambda d: cifar_sparse(d, "data_batch_2.bin", os.makedirs),
     ["train", "--data", "{d}", "--model", "cnn", "--epochs", "1"], ["{d}/data_batch_2.bin is a folder, not a CIFAR-10 batch file"], []),
    ("data-synthetic-shape", "dataset", "--data synthetic for a model of 2-channel input (generated images have 1 or 3)",
     lambda d: write(d + "/m.cfg", b"[net]\ninput = 28x28x2\n[dense]\nunits = 10\n"),
     ["train", "--model", "{d}/m.cfg", "--data", "synthetic", "--epochs", "1"], ["--data synthetic: generated images", "[28, 28, 2]"], []),
    ("data-cifar-meta-fifo", "dataset", "a CIFAR-10 folder whose batches.meta.txt is a FIFO with no writer",
     lambda d: cifar_sparse(d, "batches.meta.txt", os.mkfifo), ["train", "--data", "{d}", "--model", "cnn", "--epochs", "1"],
     ["{d}/batches.meta.txt is a FIFO (named pipe), not a class-names file"], []),
    # --- issue 29 section 2: end
    # --- issue 29 section 3 plans checked against the machine: begin
    ("plan-over-available", "memory", "--batch 1048576 on the mlp, on a machine with 50 MB free (RETROGRAD_MEM_AVAILABLE)",
     lambda d: None, ["ENV=RETROGRAD_MEM_AVAILABLE=50M", "train", "--batch", "1048576", "--data", "synthetic", "--epochs", "1",
                      "--threads", "1"],
     ["predicted peak", "more than the 50.0 MiB available (RETROGRAD_MEM_AVAILABLE)", "--mem-budget 50M runs it",
      "buffers for 6000 samples"], []),
    ("image-decode-over-budget", "memory", "a valid 260 KB PNG of 16384 x 16384 pixels under --mem-budget 16M",
     lambda d: (image_folder(d, None), write(os.path.join(d, "dog", "big.png"), png_grey_zeros(16384, 16384))),
     ["train", "--data", "{d}", "--mem-budget", "16M", "--epochs", "1"],
     ["{d}/dog/big.png", "decoding this 16384x16384 image takes about 768.0 MiB", "--mem-budget 16.0 MiB",
      "refused before decoding"], []),
    ("image-decode-over-available", "memory", "the same PNG without a budget, on a machine with 300 MB free",
     lambda d: (image_folder(d, None), write(os.path.join(d, "dog", "big.png"), png_grey_zeros(16384, 16384))),
     ["ENV=RETROGRAD_MEM_AVAILABLE=300M", "train", "--data", "{d}", "--epochs", "1"],
     ["{d}/dog/big.png", "more than the 300.0 MiB available", "refused before decoding"], []),
    ("data-over-available", "memory", "an IDX training set larger than the memory available (20000 images, 8 MB free)",
     lambda d: mnist_folder(d, train_images=idx_images(20000), train_labels=idx_labels(20000)),
     ["ENV=RETROGRAD_MEM_AVAILABLE=8M", "train", "--data", "{d}", "--epochs", "1"],
     ["{d}/train-images-idx3-ubyte", "--stream yes", "8.0 MiB this machine has available"], []),
    # --- issue 29 section 3: end
    # --- issue 29 section 4 outputs: begin
    ("out-existing-checkpoint", "outputs", "a new run's --checkpoint where an earlier run's checkpoint is",
     lambda d: checkpoint_then(d, lambda b: b), ["train", "--checkpoint", "{d}/run.ckpt", "--seed", "2"] + QUICK,
     ["--checkpoint {d}/run.ckpt: a file is there already", "--overwrite"], ["run.ckpt"]),
    ("out-folder", "outputs", "--json naming a folder",
     lambda d: None, ["train", "--json", "{d}"] + QUICK, ["--json {d} is a folder"], []),
    ("out-link-to-folder", "outputs", "--checkpoint naming a link to a folder",
     lambda d: (os.makedirs(d + "/runs"), os.symlink("runs", d + "/latest.ckpt")),
     ["train", "--checkpoint", "{d}/latest.ckpt"] + QUICK, ["{d}/latest.ckpt (a link to {d}/runs) is a folder"], []),
    ("out-socket", "outputs", "--json naming a Unix socket",
     unix_socket, ["train", "--json", "{d}/sock"] + QUICK, ["--json {d}/sock is a socket"], []),
    ("out-read-only-folder", "outputs", "--json in a folder the user cannot write, refused before training",
     read_only_folder, ["AS_NOBODY", "train", "--json", "{d}/ro/run.json"] + QUICK,
     ["--json {d}/ro/run.json: cannot create a file in the folder {d}/ro"], []),
    ("out-proc", "outputs", "--checkpoint /proc/x (a folder no file can be made in)",
     lambda d: None, ["train", "--checkpoint", "/proc/x"] + QUICK, ["--checkpoint /proc/x: cannot create a file"], []),
    ("out-second-writer", "outputs", "a checkpoint another run is writing (its lock held)",
     held_checkpoint, ["train", "--checkpoint", "{d}/run.ckpt", "--overwrite"] + QUICK,
     ["--checkpoint {d}/run.ckpt is being written by process", "{d}/run.ckpt.lock"], []),
    ("out-make-data-over-data", "outputs", "make-data --out naming a folder that holds a dataset already",
     lambda d: mnist_folder(d + "/data"), ["make-data", "--out", "{d}/data", "--samples", "10", "--test-samples", "10"],
     ["--out {d}/data: {d}/data/train-images-idx3-ubyte is there already", "--overwrite"],
     ["data/train-images-idx3-ubyte", "data/t10k-labels-idx1-ubyte"]),
    # --- issue 29 section 4: end
    # --- issue 29 section 5 resume: begin
    ("resume-other-limit", "resume", "a resume with another --limit than its run's",
     lambda d: checkpoint_then(d, lambda b: b), ["train", "--resume", "{d}/run.ckpt", "--epochs", "2", "--limit", "128"],
     ["--limit 128: the run in {d}/run.ckpt had --limit 256"], ["run.ckpt"]),
    ("resume-new-test-limit", "resume", "a resume with a --test-limit its run did not have",
     lambda d: checkpoint_then(d, lambda b: b), ["train", "--resume", "{d}/run.ckpt", "--epochs", "2", "--test-limit", "50"],
     ["--test-limit 50: the run in {d}/run.ckpt had no --test-limit"], ["run.ckpt"]),
    ("resume-other-data", "resume", "a resume on another --data than its run's",
     lambda d: (checkpoint_then(d, lambda b: b), mnist_folder(d + "/other")),
     ["train", "--resume", "{d}/run.ckpt", "--epochs", "2", "--data", "{d}/other"],
     ["--data {d}/other: not the data the run in {d}/run.ckpt trained on (synthetic)"], ["run.ckpt"]),
    ("resume-data-changed", "resume", "a resume whose data folder now holds other labels",
     lambda d: checkpoint_on_folder(d, relabel=True), ["train", "--resume", "{d}/run.ckpt", "--epochs", "2", "--threads", "1"],
     ["the data in {d}/mnist changed since {d}/run.ckpt was written"], ["run.ckpt"]),
    # --- issue 29 section 5: end
    # --- issue 29 section 6 silent skips and stale caches: begin
    ("image-broken-link", "dataset", "an image folder entry x.png that is a broken symbolic link",
     lambda d: image_folder_with(d, lambda d: os.symlink("gone.png", os.path.join(d, "dog", "x.png"))),
     ["train", "--data", "{d}", "--model", "lenet", "--epochs", "1"], ["{d}/dog/x.png", "broken symbolic link"], []),
    ("image-link-loop", "dataset", "an image folder entry x.png that is a symbolic link to itself",
     lambda d: image_folder_with(d, lambda d: os.symlink("x.png", os.path.join(d, "dog", "x.png"))),
     ["train", "--data", "{d}", "--model", "lenet", "--epochs", "1"], ["{d}/dog/x.png", "symbolic link loop"], []),
    ("image-fifo", "dataset", "an image folder entry x.png that is a FIFO",
     lambda d: image_folder_with(d, lambda d: os.mkfifo(os.path.join(d, "dog", "x.png"))),
     ["train", "--data", "{d}", "--model", "lenet", "--epochs", "1"], ["{d}/dog/x.png", "FIFO"], []),
    ("image-folder-named-png", "dataset", "a folder named x.png inside a class folder",
     lambda d: image_folder_with(d, lambda d: os.makedirs(os.path.join(d, "dog", "x.png"))),
     ["train", "--data", "{d}", "--model", "lenet", "--epochs", "1"], ["{d}/dog/x.png", "a folder"], []),
    ("image-unreadable", "dataset", "an image the user may not read (mode 000)",
     lambda d: image_folder_with(d, unreadable_png), ["AS_NOBODY"] + ["train", "--data", "{d}", "--model", "lenet", "--epochs", "1"], ["{d}/dog/locked.png", "Permission denied"], []),
    ("image-broken-class-link", "dataset", "a class folder that is a broken symbolic link",
     lambda d: image_folder_with(d, lambda d: os.symlink("gone", os.path.join(d, "bird"))),
     ["train", "--data", "{d}", "--model", "lenet", "--epochs", "1"], ["{d}/bird", "broken symbolic link"], []),
    ("cache-stale-same-size", "dataset", "a gzipped images file replaced by a damaged one of the same size and time after its inflated copy was cached",
     stale_cache_same_size, ["ENV=RETROGRAD_CACHE={d}/cache", "train", "--data", "{d}", "--stream", "yes", "--epochs", "1"],
     ["{d}/train-images-idx3-ubyte.gz", "gzip"], []),
    # --- issue 29 section 6: end
    # --- issue 29 section 7 messages: begin
    ("eval-gan-discriminator", "messages", "eval of a GAN's discriminator (one logit, no classes)",
     gan_run, ["eval", "--checkpoint", "{d}/gan/discriminator.ckpt", "--data", "synthetic"],
     ["{d}/gan/discriminator.ckpt", "a GAN's discriminator", "eval scores classifiers"], ["gan/discriminator.ckpt"]),
    ("precision-own-usage", "messages", "an unknown option to `precision` (its errors and --help are its own)",
     lambda d: None, ["precision", "--bogus"], ["retrograd precision: unknown option --bogus"], []),
    ("idx-gz-trailing-streamed", "dataset", "bytes after a gzipped IDX file's data, streamed: named as the user's file",
     gz_trailing, ["ENV=RETROGRAD_CACHE={d}/cache", "train", "--data", "{d}", "--epochs", "1", "--stream", "yes"],
     ["{d}/train-images-idx3-ubyte.gz", "trailing bytes"], []),
    ("data-folder-unreadable", "dataset", "a --data folder the user may not read (mode 000)",
     unreadable_folder, ["AS_NOBODY", "train", "--data", "{d}/data", "--epochs", "1"],
     ["{d}/data", "cannot read the folder", "Permission denied"], []),
    ("samples-not-png", "options", "--samples x.jpg (the grid is written as PNG)",
     lambda d: None, ["train", "--model", "autoencoder", "--samples", "{d}/x.jpg"] + QUICK, ["x.jpg", "PNG"], []),
    ("cfg-utf8-bom", "cfg", "a cfg saved with a UTF-8 byte-order mark (accepted; its first error is on line 4)",
     lambda d: write(d + "/m.cfg", b"\xef\xbb\xbf" + (CFG_BASE + "[dense]\nunits 10\n").encode()),
     ["train", "--model", "{d}/m.cfg"] + QUICK, ["{d}/m.cfg:4: 'units 10'"], []),
    ("ckpt-folder", "checkpoint", "a folder given as the checkpoint to score",
     lambda d: os.makedirs(d + "/run.ckpt"), ["eval", "--checkpoint", "{d}/run.ckpt"], ["{d}/run.ckpt is a folder, not a checkpoint"], []),
    ("ckpt-data-moved", "checkpoint", "scoring a checkpoint whose data folder has moved",
     trained_then_moved, ["eval", "--checkpoint", "{d}/run.ckpt"],
     ["{d}/data: no such folder", "({d}/data is from the checkpoint {d}/run.ckpt"], ["run.ckpt"]),
    # --- issue 29 section 7: end
]


def run_case(case, root):
    cid, _area, _what, setup, args, words, kept = case
    d = os.path.join(root, cid)
    os.makedirs(d)
    setup(d)
    hashes = {k: hashlib.sha256(open(os.path.join(d, k), "rb").read()).hexdigest() for k in kept}
    env = dict(os.environ)
    env.pop("RETROGRAD_ISA", None)
    argv, limit, unprivileged = [], None, False
    for a in args:
        a = a.replace("{d}", d)
        if a.startswith("ENV="):
            key, _, value = a[4:].partition("=")
            env[key] = value
        elif a.startswith("ULIMIT="):
            limit = a[7:]
        elif a == "AS_NOBODY":
            unprivileged = True
        else:
            argv.append(a)
    command = [BINARY] + argv
    if limit:
        command = ["sh", "-c", 'ulimit -v %s && exec "$@"' % limit, "sh"] + command
    if unprivileged and os.geteuid() == 0:
        # Root reads and writes past every permission bit: the case runs as nobody (uid 65534),
        # with the case's folder opened to it (the files' own modes are the case's).
        os.chmod(root, 0o755)
        os.chmod(d, 0o777)
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
    p = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    out = p.stdout.decode(errors="replace")
    message = [l for l in out.splitlines() if l.startswith("retrograd:")]
    message = [l for l in message if not l.startswith("retrograd: warning:")] or message  # the refusal, not a warning before it
    problems = []
    if p.returncode != 2:
        problems.append("exit %d, not 2" % p.returncode)
    if not message:
        problems.append("no 'retrograd:' message line")
    for w in words:
        w = w.replace("{d}", d)
        if w not in out:
            problems.append("the output lacks %r" % w)
    for k, h in hashes.items():
        if hashlib.sha256(open(os.path.join(d, k), "rb").read()).hexdigest() != h:
            problems.append("%s was changed" % k)
    shown = (message[0] if message else out.strip().splitlines()[-1] if out.strip() else "").replace(d + "/", "").replace(d, ".")
    return problems, shown, p.returncode


def main(argv):
    global BINARY
    if not argv or argv[0].startswith("--"):
        print(__doc__, file=sys.stderr)
        return 2
    BINARY = os.path.abspath(argv[0])
    results = doc = None
    rest = argv[1:]
    while rest:
        opt = rest.pop(0)
        if opt == "--results" and rest:
            results = rest.pop(0)
        elif opt == "--doc" and rest:
            doc = rest.pop(0)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    root = tempfile.mkdtemp(prefix="retrograd-bad-inputs-")
    lines, rows, failed = [], [], 0
    try:
        for case in CASES:
            try:
                problems, shown, code = run_case(case, root)
            except (OSError, subprocess.SubprocessError) as e:  # a setup that failed, a hung run
                problems, shown, code = ["the case could not run: %s" % e], "", -1
            kept = "; " + ", ".join(case[6]) + " unchanged" if case[6] else ""
            rows.append("| %s | %s | %d%s | `%s` |" % (case[1], case[2], code, kept, shown.replace("|", "\\|")))
            if problems:
                failed += 1
                lines.append("FAIL bad-input %s: %s" % (case[0], "; ".join(problems)))
                print("  FAIL  %s: %s\n        %s" % (case[0], "; ".join(problems), shown))
            else:
                lines.append("PASS bad-input %s" % case[0])
                print("  ok    %s" % case[0])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if results:
        with open(results, "w") as f:
            f.write("\n".join(lines) + "\n")
    if doc:
        text = open(doc).read()
        begin, end = "<!-- bad-inputs table: begin -->", "<!-- bad-inputs table: end -->"
        head, _, tail = text.partition(begin)
        _, _, tail = tail.partition(end)
        table = "\n".join(["| area | bad input | exit | what it gets (the first message line; folders as `.`) |", "|---|---|---|---|"] + rows)
        with open(doc, "w") as f:
            f.write(head + begin + "\n" + table + "\n" + end + tail)
    print("%d cases, %d failed" % (len(CASES), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
