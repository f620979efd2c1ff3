#!/bin/bash
# Sets up, builds and runs every test; the last line is "N passed, N failed"
# (counting GoogleTest cases; a test program that dies without a report counts as 1 failed).
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --tests || exit 2
bash tools/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
rm -rf build/test-results && mkdir -p build/test-results
meson test -C build --print-errorlogs --num-processes 2
meson_status=$?
python3 tools/count_tests.py build/test-results build/meson-logs/testlog.json
count_status=$?
[ $meson_status -eq 0 ] && [ $count_status -eq 0 ]
