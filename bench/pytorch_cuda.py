#!/usr/bin/env python3
"""The CUDA peers of issue 9's GPU benchmark: cuBLAS SGEMM (TF32 off) and PyTorch CUDA FP32
training steps/s of retrograd's presets (lenet, cnn, rcnn, dcgan; for issue 33 also mlp,
autoencoder and resnet20; conv-autoencoder too), on the GPU machine.

  python3 bench/pytorch_cuda.py sgemm --sizes 1024,2048,4096,8192 --reps 10
  python3 bench/pytorch_cuda.py train --models lenet,cnn,rcnn,dcgan --batches 64,256 --steps 200
  python3 bench/pytorch_cuda.py train --models mlp,autoencoder,resnet20 --batches 64,256 --steps 200

sgemm: C = A B of square f32 matrices with torch.backends.cuda.matmul.allow_tf32 = False (and
cudnn's TF32 off), timed with CUDA events after 3 warm-up calls; the median and best of --reps,
as TFLOP/s = 2 n^3 / s; and by host wall time from the call to torch.cuda.synchronize()'s return
(median_wall_tflops), as bench/opencl_gemm_bench.cpp times ours from the enqueue to clFinish.

train: the presets' twins of bench/pytorch_presets.py (its Twin: layers, inits, optimizers and
steps) in FP32, TF32 off, on random inputs kept in pinned host memory: each step
copies its batch to the GPU (non_blocking), as retrograd uploads each micro-batch, then forward,
loss (an autoencoder's: MSE against its input), backward and the optimizer step (dcgan: one D
update on a real and a fake batch, then one G update through D, as retrograd's GanTrainer). steps/s over --steps steps after 20
warm-up steps, the clock stopped after torch.cuda.synchronize(). Random data: speed, not accuracy.

Prints one JSON object per line on stdout: {"kind": "sgemm", ...} or {"kind": "train", ...}.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_presets  # noqa: E402  (every preset's twin)
from pytorch_common import fp32_only  # noqa: E402


def sgemm(sizes, reps):
    for n in sizes:
        a = torch.rand(n, n, device="cuda") * 2 - 1
        b = torch.rand(n, n, device="cuda") * 2 - 1
        for _ in range(3):
            torch.mm(a, b)
        times, walls = [], []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            torch.mm(a, b)
            end.record()
            torch.cuda.synchronize()
            walls.append(time.perf_counter() - t0)
            times.append(start.elapsed_time(end) / 1000.0)
        flops = 2.0 * n ** 3
        print(json.dumps({"kind": "sgemm", "n": n, "median_tflops": flops / statistics.median(times) / 1e12,
                          "best_tflops": flops / min(times) / 1e12,
                          "median_wall_tflops": flops / statistics.median(walls) / 1e12, "reps": reps,
                          "device": torch.cuda.get_device_name(), "torch": torch.__version__}), flush=True)


def step_fn(name):
    """One training step of the preset's twin on a batch (x, y) on the GPU: its own loss and
    optimizer; dcgan's noise drawn on the GPU and its real images mapped to [-1, 1]."""
    twin = pytorch_presets.Twin(name, "cuda")
    if twin.kind != "gan":
        return twin.step
    return lambda x, _: twin.step(x * 2 - 1, torch.randn(x.shape[0], twin.noise, device="cuda"))


def train(models, batches, steps):
    pytorch_presets.torch, pytorch_presets.nn = torch, nn  # the presets module imports torch lazily
    for name in models:
        for batch in batches:
            torch.manual_seed(1)
            step = step_fn(name)
            pool = 8  # batches of random pinned host data, cycled
            xs = [torch.rand(batch, 1, 28, 28).pin_memory() for _ in range(pool)]
            ys = [torch.randint(0, 10, (batch,)).pin_memory() for _ in range(pool)]
            for i in range(20):
                step(xs[i % pool].cuda(non_blocking=True), ys[i % pool].cuda(non_blocking=True))
            torch.cuda.synchronize()
            start = time.perf_counter()
            for i in range(steps):
                step(xs[i % pool].cuda(non_blocking=True), ys[i % pool].cuda(non_blocking=True))
            torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            print(json.dumps({"kind": "train", "model": name, "batch": batch, "steps": steps,
                              "steps_per_s": steps / seconds, "samples_per_s": steps * batch / seconds,
                              "device": torch.cuda.get_device_name(), "torch": torch.__version__}), flush=True)


MODELS = sorted(pytorch_presets.PRESETS)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("sgemm", "train"))
    ap.add_argument("--sizes", default="1024,2048,4096,8192")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--models", default="lenet,cnn,rcnn,dcgan",
                    help="comma-separated: %s" % ",".join(MODELS))
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("pytorch_cuda.py: torch %s sees no CUDA device" % torch.__version__)
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error("--models: unknown %s (known: %s)" % (",".join(unknown), ",".join(MODELS)))
    fp32_only(torch)
    if args.what == "sgemm":
        sgemm([int(s) for s in args.sizes.split(",")], args.reps)
    else:
        train(models, [int(b) for b in args.batches.split(",")], args.steps)


if __name__ == "__main__":
    main()
