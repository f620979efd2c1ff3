#!/bin/bash
# Trains the mlp on Fashion-MNIST from the same seed with the x86_64 Linux build (build/, its
# best kernels: AVX2 here) and with the i686 Windows build under 32-bit Wine on the SSE2
# kernels an Athlon 64 would run, then checks (issue 11):
#   - both reach the same test accuracy within 0.3 points;
#   - each checkpoint loads in the other build and scores what its writer scored there
#     (within 0.1 points: the same weights through other kernels).
# One line a check to RESULTS_FILE ("PASS label" or "FAIL label: why"), counted by
# tools/count_tests.py. After tools/build.sh and tools/cross_build.sh i686-w64-mingw32.
# Usage: bash tools/cross_check_training.sh [RESULTS_FILE] [EPOCHS]
set -uo pipefail
cd "$(dirname "$0")/.."
results=${1:-build-cross/cross-check-results.txt}
epochs=${2:-2}
work=$PWD/build-cross/cross-check
data=/usr/share/datasets/fashion-mnist
linux=build/retrograd
windows=build-cross/i686-w64-mingw32/retrograd.exe
rm -rf "$work" && mkdir -p "$work" "$(dirname "$results")"
: > "$results"
pass() { echo "PASS $1" >> "$results"; echo "  ok    $1"; }
fail() { echo "FAIL $1: $2" >> "$results"; echo "  FAIL  $1: $2"; }

# accuracy_of FILE: test_accuracy from a train or eval --json file, as a number in 0..1.
accuracy_of() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_accuracy"])' "$1" 2>/dev/null
}
# within A B POINTS: |A - B| <= POINTS percentage points.
within() {
  python3 -c 'import sys; a, b, p = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) * 100 <= p else 1)' "$@"
}
# Runs a build: the Linux one directly, the Windows one through tools/cross/wine_run.sh. Unix
# paths work for Wine: its Z: drive is the Unix root and a path without a drive is on Z:.
run_build() {
  local which=$1; shift
  if [ "$which" = linux ]; then "$linux" "$@"; else RETROGRAD_ISA=sse2 tools/cross/wine_run.sh "$windows" "$@"; fi
}

train_args=(train --model mlp --data "$data" --epochs "$epochs" --seed 7 --threads 1)
for which in linux windows; do
  run_build $which "${train_args[@]}" --checkpoint "$work/$which.ckpt" --json "$work/$which-train.json" \
    > "$work/$which-train.log" 2>&1
  code=$?
  [ $code -eq 0 ] || fail "train mlp ($which)" "exit code $code (log: $work/$which-train.log)"
done
linux_acc=$(accuracy_of "$work/linux-train.json")
windows_acc=$(accuracy_of "$work/windows-train.json")
if [ -z "$linux_acc" ] || [ -z "$windows_acc" ]; then
  fail "same seed, same accuracy" "a run wrote no accuracy (linux '$linux_acc', windows '$windows_acc')"
elif within "$linux_acc" "$windows_acc" 0.3; then
  pass "same seed, same accuracy: x86_64 Linux $linux_acc, i686 Windows $windows_acc (within 0.3 points)"
else
  fail "same seed, same accuracy" "x86_64 Linux $linux_acc, i686 Windows $windows_acc differ by more than 0.3 points"
fi

# Each checkpoint scored by the other build.
for pair in linux:windows windows:linux; do
  writer=${pair%%:*} reader=${pair#*:}
  written=$(accuracy_of "$work/$writer-train.json")
  run_build "$reader" eval --checkpoint "$work/$writer.ckpt" --data "$data" --threads 1 \
    --json "$work/$writer-by-$reader.json" > "$work/$writer-by-$reader.log" 2>&1
  code=$?
  if [ $code -ne 0 ]; then
    fail "$writer checkpoint loads in the $reader build" "exit code $code (log: $work/$writer-by-$reader.log)"
    continue
  fi
  scored=$(accuracy_of "$work/$writer-by-$reader.json")
  if [ -n "$scored" ] && [ -n "$written" ] && within "$written" "$scored" 0.1; then
    pass "$writer checkpoint loads in the $reader build: $scored (its writer scored $written)"
  else
    fail "$writer checkpoint loads in the $reader build" "scored '$scored', its writer scored '$written'"
  fi
done
grep -q "^FAIL" "$results" && exit 1
exit 0
