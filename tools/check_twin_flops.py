#!/usr/bin/python3
"""Checks that each PyTorch twin of bench/pytorch_presets.py does the work of retrograd's preset:
the same flops per training sample and the same parameter count. The twin's flops are counted
from its own modules running one training step (pytorch_presets.train_flops_per_sample), the
preset's are `retrograd train --json`'s train_flops_per_sample (Model::train_flops_per_sample; a
GAN's from report/roofline.h), read from a run of one step of 8 synthetic samples; the parameter
counts are the JSON's "parameters" (a GAN: its "generator ... (N parameters), discriminator ...
(M parameters)" line) against the twin's. presets_vs_pytorch.sh divides samples/s by samples/s,
which compares speeds only while these agree.

Without torch in this interpreter, one SKIP line says so (CI's tools/setup.sh
--tests does not install python3-torch; tools/setup.sh --bench does). Run it with Debian's
/usr/bin/python3, which has python3-torch, not a pyenv python3 that may be first on PATH.
Writes one "PASS twin-flops P" / "FAIL twin-flops P: why" / "SKIP twin-flops P: why" line a
preset to RESULTS (tools/count_tests.py --checks; tools/test.sh part 5). Exits 1 on a FAIL.

Usage: /usr/bin/python3 tools/check_twin_flops.py BINARY [--results FILE]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")
pytorch_presets = None  # imported in check(), with torch


def retrograd_counts(binary, preset, folder):
    """(train flops a sample, parameter count as "N" or a GAN's "N + M") of one step of `preset`."""
    report = os.path.join(folder, preset + ".json")
    cmd = [binary, "train", "--model", preset, "--data", "synthetic", "--limit", "8", "--test-limit", "8",
           "--batch", "8", "--epochs", "1", "--threads", "1", "--json", report]
    if pytorch_presets.PRESETS[preset].kind == "gan":
        cmd += ["--score-samples", "0", "--out", os.path.join(folder, preset + "-run")]
    p = subprocess.run(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stdout.strip()[-400:]))
    with open(report) as f:
        d = json.load(f)
    if "parameters" in d:
        parameters = str(d["parameters"])
    else:
        m = re.search(r"generator \S+ \((\d+) parameters\), discriminator \S+ \((\d+) parameters\)", p.stdout)
        if not m:
            raise RuntimeError("no parameter counts in the GAN run's output")
        parameters = "%s + %s" % m.groups()
    return round(d["train_flops_per_sample"]), parameters


def twin_counts(preset):
    twin = pytorch_presets.Twin(preset, "cpu")
    return pytorch_presets.train_flops_per_sample(preset), " + ".join(str(n) for n in twin.parameters())


def check(binary):
    """One (word, preset, why) a preset, or one SKIP line without torch."""
    global pytorch_presets
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import torch
        sys.path.insert(0, BENCH)
        import pytorch_presets  # (numpy too)
    except ImportError as e:
        return [("SKIP", "all", "no torch for %s (%s): install python3-torch (tools/setup.sh --bench) and run "
                 "this with /usr/bin/python3" % (sys.executable, e))]
    presets = sorted(pytorch_presets.PRESETS)
    torch.set_num_threads(1)
    pytorch_presets.torch, pytorch_presets.nn = torch, torch.nn  # it imports torch lazily
    torch.manual_seed(1)
    folder = tempfile.mkdtemp(prefix="retrograd-twin-flops-")
    lines = []
    try:
        for p in presets:
            try:
                ours, theirs = retrograd_counts(binary, p, folder), twin_counts(p)
            except (OSError, RuntimeError, subprocess.SubprocessError, ValueError, KeyError) as e:
                lines.append(("FAIL", p, "could not count: %s" % e))
                continue
            why = "retrograd %d flops a training sample, %s parameters; the twin %d, %s" % (ours + theirs)
            lines.append(("PASS" if ours == theirs else "FAIL", p, why))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return lines


def main(argv):
    if not argv or argv[0].startswith("-") or argv[1:2] not in ([], ["--results"]) or len(argv) not in (1, 3):
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(argv[0])
    lines = check(binary)
    for word, preset, why in lines:
        print("  %-4s  %-17s %s" % (word, preset, why))
    if len(argv) == 3:
        with open(argv[2], "w") as f:
            f.write("".join("%s twin-flops %s: %s\n" % line for line in lines))
    return 1 if any(word == "FAIL" for word, _, _ in lines) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
