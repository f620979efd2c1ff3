#!/bin/bash
# The main job: set up, build, and run the quick hardware study (`retrograd study --quick`): every
# network on every CPU ISA level and OpenCL device in each precision, the batch-size and
# learning-rate sweeps, efficiency against the hardware's peaks, estimates for other machines,
# and advice per network. Leaves the report in retrograd-study/ (report.html to open in a browser,
# report.md, runs.csv, estimates.csv, study.json) and prints the advice. Extra arguments go to
# `retrograd study` (e.g. --no-opencl, --out DIR, or drop --quick by running build/retrograd study).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
exec build/retrograd study --quick "$@"
