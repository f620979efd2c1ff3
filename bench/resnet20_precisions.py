#!/usr/bin/env python3
"""Issue 31's precision table for resnet20: each precision's test accuracy against fp32 from the same seed.

Reads the runs bench/resnet20_accuracy.sh wrote (rg-seedS.json in each folder given):
  --fp32 DIR...        `retrograd precision --precision fp32,int8,int8-qat` runs (PRECISIONS=...): the fp32
                       model and its int8 PTQ and QAT rows, from one JSON a seed
  --fp16 DIR...        `retrograd train --train-precision fp16` runs (TRAIN_PRECISION=fp16)
  --int8-train DIR...  `retrograd train --train-precision int8-train` runs
  --opencl DIR...      fp32 runs on an OpenCL device (DEVICE=cl:P:D)
Prints a Markdown table: per seed the fp32 accuracy and each other's change in points against it, then
the mean change over the seeds both have, its spread, and the verdict against issue 31's tolerances
(PTQ, QAT, fp16 and the device within 0.5 points of fp32, int8-train within 1.5). Runs whose recipe,
data or epochs differ from the fp32 runs' are refused: a change must be what the precision costs.
"""
import argparse
import json
import os
import re
import statistics
import sys

TOLERANCE = {"int8": 0.5, "int8-qat": 0.5, "fp16": 0.5, "int8-train": 1.5, "opencl": 0.5}
LABEL = {"int8": "int8 PTQ", "int8-qat": "int8 QAT", "fp16": "fp16 (mixed precision)",
         "int8-train": "int8-train", "opencl": "fp32 on the OpenCL device"}
SAME = ("model", "epochs", "batch", "optimizer", "lr", "schedule", "train_samples", "test_samples", "parameters")


def runs_in(dirs):
    """{seed: (json, its "training:" line without the precision and threads)} of the folders' runs."""
    runs = {}
    for d in dirs:
        if not os.path.isdir(d):
            sys.stderr.write("resnet20_precisions.py: %s: not a folder of bench/resnet20_accuracy.sh's runs\n" % d)
            sys.exit(2)
        for name in sorted(os.listdir(d)):
            m = re.fullmatch(r"rg-seed(\d+)\.json", name)
            if not m:
                continue
            seed = int(m.group(1))
            if seed in runs:
                sys.exit("seed %d is in more than one of %s" % (seed, " ".join(dirs)))
            try:
                r = json.loads(open(os.path.join(d, name), "rb").read().decode("utf-8"))
                log = open(os.path.join(d, "rg-seed%d.log" % seed), "rb").read().decode("utf-8", "replace")
            except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
                sys.stderr.write("resnet20_precisions.py: %s/%s: not a run's JSON and log (%s)\n" % (d, name, e))
                sys.exit(2)
            line = re.search(r"^training: +\S+, (.*), seed \d+,", log, re.M)
            runs[seed] = (r, line.group(1) if line else "")
    return runs


def check_alike(fp32, other, what):
    for seed, (r, recipe) in other.items():
        if seed not in fp32:
            continue
        base, base_recipe = fp32[seed]
        for key in SAME:
            if r.get(key) != base.get(key):
                sys.exit("%s seed %d: %s %r, the fp32 run's %r" % (what, seed, key, r.get(key), base.get(key)))
        if recipe != base_recipe:
            sys.exit("%s seed %d trained with '%s', the fp32 run with '%s'" % (what, seed, recipe, base_recipe))
        if r.get("epochs_done", r.get("epochs_run")) != r["epochs"]:
            sys.exit("%s seed %d: %r of %d epochs done" % (what, seed, r.get("epochs_done"), r["epochs"]))


def accuracies(args):
    """{precision: {seed: test accuracy in %}}, fp32 first."""
    fp32 = runs_in(args.fp32)
    if not fp32:
        sys.exit("no fp32 runs in %s" % " ".join(args.fp32))
    acc = {"fp32": {}, "int8": {}, "int8-qat": {}}
    for seed, (r, _) in fp32.items():
        for row in r.get("precisions", [{"precision": "fp32", "test_accuracy": r["test_accuracy"]}]):
            if row["precision"] in acc:
                acc[row["precision"]][seed] = 100 * row["test_accuracy"]
    for name, dirs in (("fp16", args.fp16), ("int8-train", args.int8_train), ("opencl", args.opencl)):
        if dirs:
            other = runs_in(dirs)
            check_alike(fp32, other, name)
            acc[name] = {seed: 100 * r["test_accuracy"] for seed, (r, _) in other.items()}
    return fp32, {k: v for k, v in acc.items() if v}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fp32", nargs="+", required=True)
    p.add_argument("--fp16", nargs="+", default=[])
    p.add_argument("--int8-train", nargs="+", default=[])
    p.add_argument("--opencl", nargs="+", default=[])
    args = p.parse_args()
    fp32_runs, acc = accuracies(args)
    seeds = sorted(acc["fp32"])
    others = [k for k in acc if k != "fp32"]
    any_run = next(iter(fp32_runs.values()))[0]
    print("## resnet20: every precision against fp32 from the same seed (%d epochs, %d training and %d test "
          "samples)\n" % (any_run["epochs"], any_run["train_samples"], any_run["test_samples"]))
    print("| seed | fp32 test acc % | " + " | ".join("%s (change)" % LABEL[k] for k in others) + " |")
    print("|---" * (2 + len(others)) + "|")
    changes = {k: {} for k in others}
    for seed in seeds:
        cells = []
        for k in others:
            if seed in acc[k]:
                changes[k][seed] = acc[k][seed] - acc["fp32"][seed]
                cells.append("%.2f (%+.2f)" % (acc[k][seed], changes[k][seed]))
            else:
                cells.append("-")
        print("| %d | %.2f | %s |" % (seed, acc["fp32"][seed], " | ".join(cells)))
    mean = {k: statistics.mean(v.values()) if v else None for k, v in changes.items()}
    print("| mean change | | " + " | ".join("%+.2f" % mean[k] if mean[k] is not None else "-" for k in others) + " |")
    print("| sd of change | | " + " | ".join("%.2f" % statistics.stdev(changes[k].values())
                                              if len(changes[k]) > 1 else "-" for k in others) + " |")
    print()
    for k in others:
        n = len(changes[k])
        if not n:
            print("- %s: no seed ran beside fp32" % LABEL[k])
            continue
        verdict = "within" if abs(mean[k]) <= TOLERANCE[k] else "NOT within"
        print("- %s: mean change %+.2f points over %d seed%s: %s %.1f points%s" % (
            LABEL[k], mean[k], n, "s"[:n != 1], verdict, TOLERANCE[k], "" if n >= 3 else " (fewer than 3 seeds)"))


if __name__ == "__main__":
    main()
