#!/usr/bin/python3
"""PyTorch's own int8 inference beside retrograd's, for bench/int8_inference.sh.

`--model lenet|cnn` builds the preset's architecture as bench/pytorch_presets.py does (the
same layers, inits and recipe), trains it briefly as `retrograd precision` does (1 epoch on the
first --limit training samples, batch 64, the preset's optimizer), then quantizes it with
PyTorch's eager-mode static post-training quantization (torch.ao.quantization): QuantStub and
DeQuantStub around the model, conv+bn+relu / conv+relu / linear+bn / linear+relu fused, the
engine's default qconfig (fbgemm where this torch has it, else onednn, else qnnpack: Debian's
python3-torch 1.13 is built without fbgemm), calibration on --calib-batches training batches of
--batch, convert.

Timing as retrograd's infer_samples_per_s: the 10,000 test images in batches of --batch (eval
mode, no_grad), forward plus the argmax and the count of correct answers, samples / seconds.
Each of --reps rounds times fp32 then int8; the JSON line gives each round's figures, their
medians and the median of the per-round int8 / fp32 ratios.

Run it with the Debian interpreter (/usr/bin/python3, python3-torch 1.13).
"""
import argparse
import json
import statistics
import sys
import time

import pytorch_presets
from pytorch_common import import_torch, peak_rss_bytes


def pick_engine(torch, wanted):
    engines = torch.backends.quantized.supported_engines
    for engine in ([wanted] if wanted else ["fbgemm", "x86", "onednn", "qnnpack"]):
        if engine in engines:
            return engine
    sys.exit("pytorch_int8.py: none of the quantized engines wanted is here (%s)" % engines)


def fusion_groups(model, nn):
    """Index lists of the Sequential's fusable runs: conv/linear [+ bn] [+ relu]."""
    layers = list(model)
    groups = []
    i = 0
    while i < len(layers):
        if isinstance(layers[i], (nn.Conv2d, nn.Linear)):
            group = [i]
            j = i + 1
            if j < len(layers) and isinstance(layers[j], (nn.BatchNorm2d, nn.BatchNorm1d)):
                group.append(j)
                j += 1
            if j < len(layers) and isinstance(layers[j], nn.ReLU):
                group.append(j)
                j += 1
            if len(group) > 1:
                groups.append(group)
            i = j
        else:
            i += 1
    return groups


def fuse(model, nn, torch):
    """Fuses what torch 1.13's eager fuser knows; linear + bn1d + relu becomes linear+bn, relu."""
    from torch.ao.quantization import fuse_modules
    for group in fusion_groups(model, nn):
        names = [str(i) for i in group]
        try:
            fuse_modules(model, [names], inplace=True)
        except (AssertionError, NotImplementedError, KeyError):
            if len(names) == 3:
                fuse_modules(model, [names[:2]], inplace=True)
            else:
                raise


def infer(model, x_test, y_test, batch):
    correct = 0
    start = time.perf_counter()
    for i in range(0, x_test.shape[0], batch):
        out = model(x_test[i:i + batch])
        correct += int((out.argmax(1) == y_test[i:i + batch]).sum())
    seconds = time.perf_counter() - start
    return x_test.shape[0] / seconds, correct / x_test.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=("lenet", "cnn"))
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--limit", type=int, default=2000, help="train 1 epoch on the first N training samples")
    ap.add_argument("--batch", type=int, default=256, help="inference and calibration batch")
    ap.add_argument("--calib-batches", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--engine", default="", help="quantized engine (default: fbgemm, x86, onednn, qnnpack: the first here)")
    args = ap.parse_args()

    torch, nn = import_torch(args.threads, "pytorch_int8.py")
    pytorch_presets.torch, pytorch_presets.nn = torch, nn
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    engine = pick_engine(torch, args.engine)
    torch.backends.quantized.engine = engine

    x_train, y_train = pytorch_presets.load_split(args.data, "train", args.limit)
    x_test, y_test = pytorch_presets.load_split(args.data, "t10k")
    model = pytorch_presets.build(args.model)
    lr = pytorch_presets.PRESETS[args.model].lr
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(args.seed)
    perm = torch.randperm(x_train.shape[0], generator=gen)
    model.train()
    for i in range(0, x_train.shape[0], 64):
        idx = perm[i:i + 64]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x_train[idx]), y_train[idx])
        loss.backward()
        opt.step()
    model.eval()

    from torch.ao.quantization import DeQuantStub, QuantStub, convert, get_default_qconfig, prepare
    quantized = nn.Sequential(QuantStub(), *[m for m in model], DeQuantStub())
    import copy
    quantized = copy.deepcopy(quantized).eval()
    # The Sequential's own indices shift by one (the QuantStub): fuse on the inner layers.
    inner = nn.Sequential(*list(quantized)[1:-1])
    fuse(inner, nn, torch)
    quantized = nn.Sequential(quantized[0], *list(inner), quantized[-1]).eval()
    quantized.qconfig = get_default_qconfig(engine)
    prepare(quantized, inplace=True)
    calibration = x_train[:args.batch * args.calib_batches]
    with torch.no_grad():
        for i in range(0, calibration.shape[0], args.batch):
            quantized(calibration[i:i + args.batch])
    convert(quantized, inplace=True)

    rounds = []
    with torch.no_grad():
        infer(model, x_test[:args.batch], y_test[:args.batch], args.batch)  # warm-up of both
        infer(quantized, x_test[:args.batch], y_test[:args.batch], args.batch)
        for _ in range(args.reps):
            fp32, fp32_acc = infer(model, x_test, y_test, args.batch)
            int8, int8_acc = infer(quantized, x_test, y_test, args.batch)
            rounds.append({"fp32_samples_per_s": fp32, "int8_samples_per_s": int8, "ratio": int8 / fp32,
                           "fp32_accuracy": fp32_acc, "int8_accuracy": int8_acc})

    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "engine": engine,
        "model": args.model,
        "threads": args.threads,
        "batch": args.batch,
        "fp32_samples_per_s": statistics.median(r["fp32_samples_per_s"] for r in rounds),
        "int8_samples_per_s": statistics.median(r["int8_samples_per_s"] for r in rounds),
        "ratio": statistics.median(r["ratio"] for r in rounds),
        "fp32_accuracy": rounds[-1]["fp32_accuracy"],
        "int8_accuracy": rounds[-1]["int8_accuracy"],
        "int8_modules": sorted({type(m).__name__ for m in quantized.modules() if "quantized" in type(m).__module__}),
        "rounds": rounds,
        "peak_rss_bytes": peak_rss_bytes(),
    }))


if __name__ == "__main__":
    main()
