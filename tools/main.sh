#!/bin/bash
# The main job: set up, build, and train the mlp preset on Fashion-MNIST (5 epochs),
# printing the per-epoch progress and the summary (accuracy, speed, memory).
# Extra arguments go to `retrograd train` (e.g. --epochs 1 --threads 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
exec build/retrograd train --model mlp --epochs 5 "$@"
