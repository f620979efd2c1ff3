#!/bin/bash
# Builds the cross targets (tools/cross_build.sh) and runs their test suites on emulated old
# machines:
#   i686-linux-gnu      under qemu-i386 as a Core 2 (core2duo: SSSE3) and as an Athlon 64
#                       (Opteron_G1: SSE2 only); labels core2duo, opteron_g1
#   x86_64-w64-mingw32  under wine64; label wine64
#   i686-w64-mingw32    under the 32-bit Wine of build-cross/wine32; label wine32; then
#                       tools/cross_check_training.sh against build/ (the native build):
#                       build-cross/cross-check-results.txt
# Each run writes GoogleTest reports to build-cross/TRIPLET/test-results-LABEL/ and Meson's log
# to build-cross/TRIPLET/meson-logs/testlog-LABEL-env.json; tools/count_tests.py counts the
# pairs (tools/test.sh passes them on). Wine and qemu-user print nothing for a program they
# could not start and may exit 0: a program with no report counts as failed there.
# Usage: bash tools/cross_test.sh [TRIPLET...]   (none: all three)
set -uo pipefail
cd "$(dirname "$0")/.."
triplets=("$@")
[ ${#triplets[@]} -gt 0 ] || triplets=(i686-linux-gnu x86_64-w64-mingw32 i686-w64-mingw32)
status=0

# run_suite TRIPLET LABEL [VARIABLE=VALUE...]: the whole suite of one build, once.
run_suite() {
  local triplet=$1 label=$2
  shift 2
  local build=build-cross/$triplet
  local results=$PWD/$build/test-results-$label
  mkdir -p "$results"
  echo "== $triplet: test suite ($label)"
  # Meson's test(env:) overrides the caller's environment: the variables go through a wrapper
  # command, as in tools/test.sh (Meson adds the wrapper's name to the log: testlog-LABEL-env.json).
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 --logbase "testlog-$label" \
    --wrapper "env GTEST_OUTPUT=xml:$results/ $*" || status=1
}

for triplet in "${triplets[@]}"; do
  echo "== $triplet: build"
  # No report of an earlier run may stand for this one: a build that fails leaves no log, and
  # count_tests.py counts a missing log as failed.
  rm -rf build-cross/"$triplet"/test-results-* build-cross/"$triplet"/meson-logs/testlog-*.json
  [ "$triplet" != i686-w64-mingw32 ] || rm -f build-cross/cross-check-results.txt
  if ! bash tools/cross_build.sh "$triplet"; then
    echo "cross_test.sh: the $triplet build failed" >&2
    status=1
    continue
  fi
  case "$triplet" in
    i686-linux-gnu)
      run_suite "$triplet" core2duo RETROGRAD_QEMU_CPU=core2duo
      run_suite "$triplet" opteron_g1 RETROGRAD_QEMU_CPU=Opteron_G1 ;;
    x86_64-w64-mingw32) run_suite "$triplet" wine64 ;;
    i686-w64-mingw32)
      run_suite "$triplet" wine32
      if [ -x build/retrograd ]; then
        echo "== $triplet against x86_64 Linux: the same mlp, checkpoints both ways"
        bash tools/cross_check_training.sh build-cross/cross-check-results.txt || status=1
      else
        echo "FAIL cross check: no build/retrograd to compare with (run tools/build.sh first)" > build-cross/cross-check-results.txt
        status=1
      fi ;;
  esac
done
exit $status
