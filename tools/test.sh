#!/bin/bash
# Sets up, builds and runs every test; the last line is "N passed, N failed", counting:
#   1. the suite (meson test): GoogleTest cases, XML in build/test-results/;
#   2. the suite again with RETROGRAD_ISA=sse2: build/test-results-sse2/;
#   3. tools/qemu_old_cpus.sh: probe, test_gemm and a short training on emulated old CPUs
#      (test_gemm's cases in build/test-results-qemu/, its checks in build/qemu-results.txt);
#   4. tools/check_isa_leaks.py: no AVX code reachable from baseline code, and its
#      self-test (build/isa-leaks-results.txt, build/isa-leaks-selftest-results.txt).
# A test program that dies without a report counts as 1 failed. About 3 minutes on 2 cores
# (docs/testing.md says how to run each part alone).
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --tests || exit 2
bash tools/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
unset RETROGRAD_ISA
rm -rf build/test-results build/test-results-sse2 build/test-results-qemu
rm -f build/meson-logs/testlog.json build/meson-logs/testlog-sse2*.json build/qemu-results.txt build/isa-leaks-results.txt \
  build/isa-leaks-selftest-results.txt
mkdir -p build/test-results build/test-results-sse2
status=0
timings=""
stage_start=$SECONDS
stage_end() { timings+="${timings:+, }$1 $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }

echo "== 1/4 test suite"
meson test -C build --print-errorlogs --num-processes 2 || status=1
stage_end "suite"

# Meson's test(env:) overrides the caller's environment, so the second pass sets its own
# variables through a wrapper command; --logbase keeps the first pass's log (Meson adds
# the wrapper's name: testlog-sse2-env.json).
echo "== 2/4 test suite with RETROGRAD_ISA=sse2"
meson test -C build --print-errorlogs --num-processes 2 --logbase testlog-sse2 \
  --wrapper "env RETROGRAD_ISA=sse2 GTEST_OUTPUT=xml:$PWD/build/test-results-sse2/" || status=1
sse2_log=$(ls build/meson-logs/testlog-sse2*.json 2>/dev/null | head -1)
stage_end "suite (sse2)"

echo "== 3/4 old CPUs under qemu-user"
bash tools/qemu_old_cpus.sh build/qemu-results.txt || status=1
stage_end "qemu"

echo "== 4/4 ISA leak check"
python3 tools/check_isa_leaks.py --results build/isa-leaks-results.txt || status=1
python3 tools/check_isa_leaks.py --self-test --results build/isa-leaks-selftest-results.txt || status=1
stage_end "ISA leaks"

echo "== times: $timings; all with setup and build $SECONDS s"
# Every failure above is in the files counted here; the statuses are a second guard.
python3 tools/count_tests.py \
  build/test-results build/meson-logs/testlog.json \
  build/test-results-sse2 "${sse2_log:-build/meson-logs/testlog-sse2-env.json}" \
  --xml-dir build/test-results-qemu \
  --checks build/qemu-results.txt \
  --checks build/isa-leaks-results.txt \
  --checks build/isa-leaks-selftest-results.txt || status=1
exit $status
