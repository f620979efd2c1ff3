#!/bin/bash
# Runs the libFuzzer targets of build-sanitize/ (tools/sanitize_build.sh): each for SECONDS
# (default 60), two at a time, starting from its seed corpus tests/fuzz/corpus/NAME/ (the
# seeds and the inputs found before, replayed first) plus what earlier runs here added in
# build-sanitize/fuzz-corpus/NAME/. An input that crashes, leaks, trips a sanitizer or passes
# the limits below is written to build-sanitize/fuzz-findings/; copy it into the seed corpus
# as found-WHAT once fixed. One line a target in RESULTS_FILE: "PASS fuzz_NAME: N runs in S s"
# or "FAIL fuzz_NAME: ..." (tools/count_tests.py --checks); logs in build-sanitize/fuzz-logs/.
# Usage: bash tools/fuzz.sh [--seconds S] [--results FILE] [NAME...]
#   (default 60 s, build-sanitize/fuzz-results.txt, all of checkpoint cfg idx cifar image cli)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=60
results=build-sanitize/fuzz-results.txt
all=(checkpoint cfg idx cifar image cli)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) [ $# -ge 2 ] || { echo "fuzz.sh: --seconds needs a number" >&2; exit 2; }; seconds=$2; shift 2 ;;
    --results) [ $# -ge 2 ] || { echo "fuzz.sh: --results needs a file" >&2; exit 2; }; results=$2; shift 2 ;;
    checkpoint|cfg|idx|cifar|image|cli) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (--seconds S, --results FILE, targets: ${all[*]})" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
mkdir -p build-sanitize/fuzz-logs build-sanitize/fuzz-findings
# The targets' scratch files (fuzz_input.h) in a folder of this run's, removed at the end.
export TMPDIR=$PWD/build-sanitize/fuzz-tmp
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
: > "$results"

# fuzz_one NAME: one target, its outcome appended to the results file.
fuzz_one() {
  local name=$1 exe=build-sanitize/tests/fuzz/fuzz_$1 log=build-sanitize/fuzz-logs/$1.log
  local corpus=build-sanitize/fuzz-corpus/$name
  if [ ! -x "$exe" ]; then
    echo "FAIL fuzz_$name: $exe is missing (bash tools/sanitize_build.sh)" >> "$results"
    return
  fi
  mkdir -p "$corpus"
  # 10 s an input and 2 GiB at most (a loaded machine runs them several times slower): a reader
  # that a small file keeps busy or makes allocate that much is a finding too. New inputs go to
  # the first folder; the seeds are only read. Absolute paths: fuzz_cfg changes its folder.
  "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$PWD/build-sanitize/fuzz-findings/$name-" "$PWD/$corpus" "$PWD/tests/fuzz/corpus/$name" > "$log" 2>&1
  local code=$?
  local runs
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $code -eq 0 ] && [ -n "$runs" ]; then
    echo "PASS fuzz_$name: ${runs} runs in ${seconds} s" >> "$results"
  else
    local why
    why=$(grep -m1 -E "ERROR: |runtime error|SUMMARY" "$log" | cut -c1-200)
    echo "FAIL fuzz_$name: exit $code after ${runs:-no} runs: ${why:-see $log}; input in build-sanitize/fuzz-findings/" >> "$results"
  fi
  echo "  $(grep "fuzz_$name:" "$results")"
}

running=0
for name in "${targets[@]}"; do
  fuzz_one "$name" &
  running=$((running + 1))
  if [ $running -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
wait
rm -rf "$TMPDIR"
! grep -q '^FAIL' "$results"
