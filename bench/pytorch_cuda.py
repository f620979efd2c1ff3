#!/usr/bin/env python3
"""The CUDA peers of issue 9's GPU benchmark: cuBLAS SGEMM (TF32 off) and PyTorch CUDA FP32
training steps/s of retrograd's presets (lenet, cnn, rcnn, dcgan; for issue 33 also mlp,
autoencoder and resnet20; conv-autoencoder too), on the GPU machine.

  python3 bench/pytorch_cuda.py sgemm --sizes 1024,2048,4096,8192 --reps 10
  python3 bench/pytorch_cuda.py train --models lenet,cnn,rcnn,dcgan --batches 64,256 --steps 200
  python3 bench/pytorch_cuda.py train --models mlp,autoencoder,resnet20 --batches 64,256 --steps 200

sgemm: C = A B of square f32 matrices with torch.backends.cuda.matmul.allow_tf32 = False (and
cudnn's TF32 off), timed with CUDA events after 3 warm-up calls; the median and best of --reps,
as TFLOP/s = 2 n^3 / s.

train: the presets' architectures (mlp, lenet, cnn, resnet20, the autoencoders: those of
bench/pytorch_presets.py, with their optimizers; rcnn and dcgan written here after
src/nn/presets.cpp) in FP32, TF32 off, on random inputs kept in pinned host memory: each step
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
import pytorch_presets  # noqa: E402  (mlp, lenet, cnn, resnet20, the autoencoders)
from pytorch_common import fp32_only  # noqa: E402


def sgemm(sizes, reps):
    for n in sizes:
        a = torch.rand(n, n, device="cuda") * 2 - 1
        b = torch.rand(n, n, device="cuda") * 2 - 1
        for _ in range(3):
            torch.mm(a, b)
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.mm(a, b)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1000.0)
        flops = 2.0 * n ** 3
        print(json.dumps({"kind": "sgemm", "n": n, "median_tflops": flops / statistics.median(times) / 1e12,
                          "best_tflops": flops / min(times) / 1e12, "reps": reps,
                          "device": torch.cuda.get_device_name(), "torch": torch.__version__}), flush=True)


class Rcl(nn.Module):
    """Liang and Hu's recurrent conv layer as src/nn/recurrent_conv.h: z_0 = ff(u), z_t = ff(u) +
    rec(x_{t-1}), x_t = relu(bn_t(z_t)), t = 0..steps; same padding, no conv biases."""

    def __init__(self, cin, cout, steps=3):
        super().__init__()
        self.ff = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.rec = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.norms = nn.ModuleList(nn.BatchNorm2d(cout) for _ in range(steps + 1))

    def forward(self, u):
        ff = self.ff(u)
        x = torch.relu(self.norms[0](ff))
        for bn in self.norms[1:]:
            x = torch.relu(bn(ff + self.rec(x)))
        return x


def rcnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                         Rcl(32, 32), nn.MaxPool2d(2), Rcl(32, 64), nn.MaxPool2d(2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def dcgan():
    g = nn.Sequential(nn.Linear(64, 6272, bias=False), nn.Unflatten(1, (128, 7, 7)), nn.BatchNorm2d(128), nn.ReLU(),
                      nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                      nn.ConvTranspose2d(64, 1, 4, 2, 1), nn.Tanh())
    d = nn.Sequential(nn.Conv2d(1, 64, 4, 2, 1), nn.LeakyReLU(0.2),
                      nn.Conv2d(64, 128, 4, 2, 1, bias=False), nn.BatchNorm2d(128), nn.LeakyReLU(0.2),
                      nn.Flatten(), nn.Linear(128 * 7 * 7, 1))
    return g, d


def preset_step_fn(name):
    """One training step of a classifier or autoencoder preset: rcnn (SGD lr 0.05), or one of
    pytorch_presets.PRESETS with its optimizer, learning rate and loss."""
    if name == "rcnn":
        model, optimizer, lr = rcnn(), "sgd", 0.05
        loss_fn, target = nn.CrossEntropyLoss(), (lambda x, y: y)
    else:
        _, optimizer, lr = pytorch_presets.PRESETS[name]
        model = pytorch_presets.build(name)
        loss_fn, target = pytorch_presets.objective(name)
    model = model.cuda()
    opt = pytorch_presets.make_optimizer(optimizer, model.parameters(), lr)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), target(x, y))
        loss.backward()
        opt.step()
    return step


def gan_step_fn():
    g, d = (m.cuda() for m in dcgan())
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()

    def step(x, _):
        n = x.shape[0]
        ones, zeros = torch.ones(n, 1, device="cuda"), torch.zeros(n, 1, device="cuda")
        fake = g(torch.randn(n, 64, device="cuda"))
        opt_d.zero_grad(set_to_none=True)
        (bce(d(x * 2 - 1), ones) + bce(d(fake.detach()), zeros)).backward()
        opt_d.step()
        opt_g.zero_grad(set_to_none=True)
        bce(d(fake), ones).backward()
        opt_g.step()
    return step


def train(models, batches, steps):
    pytorch_presets.torch, pytorch_presets.nn = torch, nn  # the presets module imports torch lazily
    for name in models:
        for batch in batches:
            torch.manual_seed(1)
            step = gan_step_fn() if name == "dcgan" else preset_step_fn(name)
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


MODELS = sorted(set(pytorch_presets.PRESETS) | {"rcnn", "dcgan"})


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
