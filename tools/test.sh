#!/bin/bash
# Sets up, builds and runs every test; the last line is "N passed, N failed", counting:
#   1. the suite (meson test): GoogleTest cases, XML in build/test-results/;
#   2. the suite again with RETROGRAD_ISA=sse2: build/test-results-sse2/;
#   3. tools/qemu_old_cpus.sh: probe, test_gemm and a short training on emulated old CPUs
#      (test_gemm's cases in build/test-results-qemu/, its checks in build/qemu-results.txt);
#   4. tools/check_isa_leaks.py: no AVX code reachable from baseline code, and its
#      self-test (build/isa-leaks-results.txt, build/isa-leaks-selftest-results.txt);
#      count_tests.py's own self-test (build/count-tests-selftest-results.txt);
#   5. tools/cross_test.sh: the i686 Linux build's suite under qemu-i386 as a Core 2 and as an
#      Athlon 64, the x86_64 .exe's under wine64, the i686 .exe's under 32-bit Wine
#      (build-cross/TRIPLET/test-results-LABEL/ with their Meson logs).
# A test program that dies without a report counts as 1 failed. docs/testing.md gives the
# time of each part on 2 cores and how to run each alone.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --tests || exit 2
bash tools/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
unset RETROGRAD_ISA
rm -rf build/test-results build/test-results-sse2 build/test-results-qemu
rm -f build/meson-logs/testlog.json build/meson-logs/testlog-sse2*.json build/qemu-results.txt build/isa-leaks-results.txt \
  build/isa-leaks-selftest-results.txt build/count-tests-selftest-results.txt
mkdir -p build/test-results build/test-results-sse2
status=0
timings=""
stage_start=$SECONDS
stage_end() { timings+="${timings:+, }$1 $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }

echo "== 1/5 test suite"
meson test -C build --print-errorlogs --num-processes 2 || status=1
stage_end "suite"

# Meson's test(env:) overrides the caller's environment, so the second pass sets its own
# variables through a wrapper command; --logbase keeps the first pass's log (Meson adds
# the wrapper's name: testlog-sse2-env.json).
echo "== 2/5 test suite with RETROGRAD_ISA=sse2"
meson test -C build --print-errorlogs --num-processes 2 --logbase testlog-sse2 \
  --wrapper "env RETROGRAD_ISA=sse2 GTEST_OUTPUT=xml:$PWD/build/test-results-sse2/" || status=1
sse2_log=$(ls build/meson-logs/testlog-sse2*.json 2>/dev/null | head -1)
stage_end "suite (sse2)"

echo "== 3/5 old CPUs under qemu-user"
bash tools/qemu_old_cpus.sh build/qemu-results.txt || status=1
stage_end "qemu"

echo "== 4/5 ISA leak check"
python3 tools/check_isa_leaks.py --results build/isa-leaks-results.txt || status=1
python3 tools/check_isa_leaks.py --self-test --results build/isa-leaks-selftest-results.txt || status=1
python3 tools/count_tests.py --self-test build/count-tests-selftest-results.txt >/dev/null || status=1
stage_end "ISA leaks"

echo "== 5/5 cross builds: i686 Linux under qemu, Windows .exe under Wine"
bash tools/cross_test.sh || status=1
stage_end "cross"
# The runs cross_test.sh meant to make, each a report folder and its Meson log; none listed:
# a missing checks file, counted as failed.
cross_runs=(--checks build-cross/cross-runs-not-listed)
[ -s build-cross/cross-runs.txt ] && read -r -a cross_runs <<< "$(tr '\n' ' ' < build-cross/cross-runs.txt)"

echo "== times: $timings; all with setup and build $SECONDS s"
# Every failure above is in the files counted here; the statuses are a second guard.
python3 tools/count_tests.py \
  build/test-results build/meson-logs/testlog.json \
  build/test-results-sse2 "${sse2_log:-build/meson-logs/testlog-sse2-env.json}" \
  --xml-dir build/test-results-qemu \
  --checks build/qemu-results.txt \
  --checks build/isa-leaks-results.txt \
  --checks build/isa-leaks-selftest-results.txt \
  --checks build/count-tests-selftest-results.txt \
  --checks build-cross/cross-check-results.txt \
  "${cross_runs[@]}" || status=1
exit $status
