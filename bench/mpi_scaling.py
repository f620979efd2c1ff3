#!/usr/bin/env python3
"""Data-parallel training over MPI on this machine, and an estimate for a room of lab PCs.

Measured (ROUNDS rounds, the configurations in a rotating order, medians; the second of two
epochs, the first warms caches):
  1 rank x 1 thread, 1 rank x 2 threads, 2 ranks x 1 thread (shared memory), 2 ranks x 1 thread
  over TCP on loopback (--mca btl tcp,self), 2 ranks with f16 gradients; samples/s and the time
  per step spent summing gradients (train's comm_seconds: transfer and waiting for the other rank).
  Then one process at the per-PC batches of 2..16 PCs (global batch / PCs), for the estimate.

Estimated (marked as such in the output): P PCs on 100 Mbit/s and 1 Gbit/s Ethernet, for global
batches of 64 and 256, each PC as fast as this machine's 2-thread run, or SLOWER times slower
(--slower, default 6.2: a Core 2 Duo E6600's fp32 peak, 38.4 GFLOPS, against this machine's 2
cores at 3.69 GHz x 32 FLOP/cycle, 236 GFLOPS; older PCs compute slower still, which favours
scaling). A step is the PC's compute at its share of the batch (measured here, times the factor)
plus a ring all-reduce of the gradients:
  2 (P-1)/P x bytes / bandwidth + 2 (P-1) x latency,
bandwidth 94% of the line rate (TCP/IP over Ethernet), latency per message 100 us (100 Mbit) or
50 us (1 Gbit): assumptions, not measurements.

Usage: python3 bench/mpi_scaling.py [--retrograd build/retrograd] [--models mlp lenet]
         [--rounds 5] [--data DIR] [--out DIR] [--slower 6.2]   (prints Markdown for bench/RESULTS.md)
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

LINKS = [("100 Mbit/s", 100e6 / 8 * 0.94, 100e-6), ("1 Gbit/s", 1e9 / 8 * 0.94, 50e-6)]
PCS = [4, 8, 16]
ESTIMATE_BATCHES = [64, 256]


def run_train(binary, model, args, ranks, threads, batch, limit, extra, out, tag):
    json_path = os.path.join(out, tag + ".json")
    command = [binary, "train", "--model", model, "--epochs", "2", "--batch", str(batch), "--limit", str(limit),
               "--test-limit", "1000", "--threads", str(threads), "--json", json_path] + args.data + extra
    if ranks > 1:
        command = ["mpirun", "--oversubscribe", "-np", str(ranks)] + args.mpi_options + command
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}")
    with open(json_path) as f:
        report = json.load(f)
    epoch = report["history"][1]
    steps = math.ceil(limit / batch)
    return {"samples_per_s": epoch["samples_per_s"], "comm_ms": 1e3 * epoch.get("comm_seconds", 0.0) / steps,
            "step_ms": 1e3 * epoch["seconds"] / steps, "parameters": report["parameters"]}


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--retrograd", default="build/retrograd")
    parser.add_argument("--models", nargs="+", default=["mlp", "lenet"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", default="")
    parser.add_argument("--out", default="")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--slower", type=float, default=6.2)
    args = parser.parse_args()
    args.data = ["--data", args.data] if args.data else []
    args.mpi_options = []
    out = args.out or tempfile.mkdtemp(prefix="mpi-scaling.")
    os.makedirs(out, exist_ok=True)
    limits = {"mlp": 30000, "lenet": 12800, "cnn": 2560}  # two epochs of 1-5 s each here

    configs = [  # label, ranks, threads, extra options, mpirun options
        ("1 rank x 1 thread", 1, 1, [], []),
        ("1 rank x 2 threads", 1, 2, [], []),
        ("2 ranks x 1 thread (shared memory)", 2, 1, [], []),
        ("2 ranks x 1 thread (TCP, loopback)", 2, 1, [], ["--mca", "btl", "tcp,self"]),
        ("2 ranks x 1 thread, f16 gradients", 2, 1, ["--grad-format", "f16"], []),
    ]
    print(f"# {args.rounds} rounds, medians; batch {args.batch}; second epoch of two\n")
    for model in args.models:
        limit = limits.get(model, 12800)
        results = {c[0]: [] for c in configs}
        per_pc = {}  # batch -> runs of one process (2 threads) at that batch: a PC's share
        for round_index in range(args.rounds):
            shift = round_index % len(configs)
            for label, ranks, threads, extra, mpi in configs[shift:] + configs[:shift]:
                args.mpi_options = mpi
                results[label].append(run_train(args.retrograd, model, args, ranks, threads, args.batch, limit, extra,
                                                out, f"{model}-{len(results[label])}-{label[:14].replace(' ', '_')}"))
            for global_batch in ESTIMATE_BATCHES:
                for pcs in [1] + PCS:
                    share = max(1, global_batch // pcs)
                    if len(per_pc.get(share, [])) > round_index:
                        continue  # measured this round already (64 / 4 = 256 / 16)
                    args.mpi_options = []
                    per_pc.setdefault(share, []).append(run_train(args.retrograd, model, args, 1, 2, share,
                                                                  max(limit // 4, 50 * share), [], out,
                                                                  f"{model}-share{share}-{round_index}"))
        params = results[configs[0][0]][0]["parameters"]
        base = median_of(results["1 rank x 1 thread"], "samples_per_s")
        print(f"## {model}: {params} parameters, gradients {params * 4 / 1e6:.2f} MB a step in f32, "
              f"{params * 2 / 1e6:.2f} MB in f16\n")
        print("| configuration | samples/s (median) | vs 1 rank x 1 thread | step ms | summing gradients, ms a step | runs |")
        print("|---|---|---|---|---|---|")
        for label, *_ in configs:
            runs = results[label]
            sps = median_of(runs, "samples_per_s")
            print(f"| {label} | {sps:.0f} | {sps / base:.2f} | {median_of(runs, 'step_ms'):.3f} | "
                  f"{median_of(runs, 'comm_ms'):.3f} | {', '.join('%.0f' % r['samples_per_s'] for r in runs)} |")
        print(f"\n**Estimate** (not measured: the model in bench/mpi_scaling.py's docstring): samples/s of P PCs "
              f"(speed-up over one such PC), compute at each PC's share of the global batch measured here with 2 "
              f"threads; Core 2 class: that compute x {args.slower}.\n")
        print("| PCs like | global batch | link | gradients | " + " | ".join(f"{p} PCs" for p in PCS) + " |")
        print("|---|---|---|---|" + "---|" * len(PCS))
        for kind, factor in (("this one", 1.0), ("a Core 2 Duo", args.slower)):
            for global_batch in ESTIMATE_BATCHES:
                one_step = factor * global_batch / median_of(per_pc[global_batch], "samples_per_s")
                for link, bandwidth, latency in LINKS:
                    for wire, element in (("f32", 4), ("f16", 2)):
                        cells = []
                        for pcs in PCS:
                            share = max(1, global_batch // pcs)
                            compute = factor * share / median_of(per_pc[share], "samples_per_s")
                            comm = 2 * (pcs - 1) / pcs * params * element / bandwidth + 2 * (pcs - 1) * latency
                            cells.append(f"{global_batch / (compute + comm):.0f} ({one_step / (compute + comm):.2f}x)")
                        print(f"| {kind} | {global_batch} | {link} | {wire} | " + " | ".join(cells) + " |")
        print()
    print(f"(runs' JSON and logs: {out})")


if __name__ == "__main__":
    main()
