#!/usr/bin/env python3
"""Where a preset's PyTorch twin spends a training step, op by op: the twin of
bench/pytorch_presets.py (the same layers, init and recipe) on a random batch shaped like
Fashion-MNIST, its step time (median of --steps timed steps, without the profiler), then
torch.profiler's table of self CPU time per op and input shape over --steps more. Set beside
`retrograd train --model P --profile` (the same batch and thread count) it says which layers the
two sides run at different speeds (issue 32: dcgan's step on the Xeon, bench/RESULTS.md
2026-12-01 06:25).

usage: python3 bench/pytorch_op_profile.py --preset dcgan [--threads 1] [--batch 64]
                                           [--warmup 15] [--steps 10] [--rows 30]
(PYTHON as bench/presets_vs_pytorch.sh's: Debian's /usr/bin/python3, or the GPU machine's
/opt/torch/.venv/bin/python3.) Exit 2 on a bad command line.
"""
import argparse
import statistics
import sys
import time

import pytorch_presets as presets
from pytorch_common import import_torch


def whole(limit):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("'%s' is not a whole number" % text)
        if value < 1 or value > limit:
            raise argparse.ArgumentTypeError("%d is out of range: 1 to %d" % (value, limit))
        return value
    return parse


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", required=True, choices=sorted(presets.PRESETS))
    parser.add_argument("--threads", type=whole(1024), default=1)
    parser.add_argument("--batch", type=whole(65536), default=64)
    parser.add_argument("--warmup", type=whole(100000), default=15, help="steps before any timing")
    parser.add_argument("--steps", type=whole(100000), default=10, help="steps timed, then steps profiled")
    parser.add_argument("--rows", type=whole(100000), default=30, help="ops in the table, the costliest first")
    return parser.parse_args()


def main():
    args = parse_args()
    torch, nn = import_torch(args.threads, "pytorch_op_profile.py")
    presets.torch, presets.nn = torch, nn  # the twins' module builds on these
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(1)
    twin = presets.Twin(args.preset, "cpu")
    x = torch.rand(args.batch, 1, 28, 28) * 2 - 1
    y = torch.randn(args.batch, twin.noise) if twin.kind == "gan" else torch.randint(0, 10, (args.batch,))
    for _ in range(args.warmup):
        twin.step(x, y)
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        twin.step(x, y)
        times.append(time.perf_counter() - start)
    print("%s, torch %s, %d thread(s), batch %d: %.2f ms a step (median of %d; %.2f-%.2f)"
          % (args.preset, torch.__version__, args.threads, args.batch, statistics.median(times) * 1e3,
             args.steps, min(times) * 1e3, max(times) * 1e3))
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(args.steps):
            twin.step(x, y)
    print("self CPU time over %d profiled steps (the profiler's own cost included):" % args.steps)
    print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=args.rows))


if __name__ == "__main__":
    sys.exit(main())
