#!/bin/bash
# The main job: set up, build, and train the mlp preset on Fashion-MNIST (5 epochs),
# printing the per-epoch progress and the summary, then the per-precision table: the trained
# model in fp32 and in int8 (post-training quantization), each with its speed, test accuracy,
# weight bytes and inference memory. Extra arguments go to `retrograd precision` (e.g. --epochs 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
exec build/retrograd precision --model mlp --epochs 5 "$@"
