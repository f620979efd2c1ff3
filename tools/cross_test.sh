#!/bin/bash
# Builds the cross targets (tools/cross_build.sh) and runs their test suites on emulated old
# machines:
#   i686-linux-gnu      the whole suite as 32-bit programs run directly on this CPU at the Core 2's
#                       kernel level (RETROGRAD_ISA=ssse3), label i686, and the int8 programs at
#                       the Athlon 64's (sse3), label i686_sse3; tools/check_isa_leaks.py on its
#                       binaries (build-cross/i686-linux-gnu/isa-leaks-results.txt); the CPU
#                       detection and a few programs under qemu-i386 as a Core 2 (core2duo: SSSE3)
#                       and as an Athlon 64 (Opteron_G1: SSE3 in qemu's model); labels core2duo,
#                       opteron_g1
#   x86_64-w64-mingw32  under wine64; label wine64
#   i686-w64-mingw32    under the 32-bit Wine of build-cross/wine32; label wine32; then
#                       tools/cross_check_training.sh against build/ (the native build):
#                       build-cross/cross-check-results.txt
# On a kernel that runs no 32-bit program the direct runs and the 32-bit Wine cannot happen: see
# "A kernel that runs no 32-bit program" below.
# Each run writes GoogleTest reports to build-cross/TRIPLET/test-results-LABEL/ and Meson's log
# to build-cross/TRIPLET/meson-logs/testlog-LABEL-env.json; build-cross/cross-runs.txt lists
# every pair this invocation meant to write (a run that never happened leaves its log missing,
# which counts as failed), and the leak check's results file as "--checks FILE", for
# tools/count_tests.py (tools/test.sh passes them on). Wine and qemu-user print nothing for a
# program they could not start and may exit 0: a program with no report counts as failed there.
# Usage: bash tools/cross_test.sh [TRIPLET...]   (none: all three)
set -uo pipefail
cd "$(dirname "$0")/.."
triplets=("$@")
[ ${#triplets[@]} -gt 0 ] || triplets=(i686-linux-gnu x86_64-w64-mingw32 i686-w64-mingw32)
status=0

# Emulated SIMD runs 20-40 times slower than native: under qemu the suite runs but for the
# slow cases of tools/slow_cases.sh (6 minutes of the Core 2's 16 otherwise); natively, under
# Wine and in cross_check_training.sh they run in full.
source tools/slow_cases.sh
emulated_filter=GTEST_FILTER=-$slow_cases
# Under qemu only what emulation adds to the direct runs (docs/testing.md, "What each emulated
# run adds"): a real CPUID (test_cpu), and a CPU that dies with SIGILL on an instruction above
# its level under the dispatch from that CPUID, through the elementwise, int8 and conv-layer
# kernels as a Core 2 and the int8 GEMM's sse2 tiles, which the Athlon takes where the Core 2
# takes ssse3's (src/cpu/kernel_tables.cpp), up to an int8 training as an Athlon. The kernels'
# results are the direct runs' (every level in 32-bit code at native speed; the int8 programs
# again at the Athlon's level), and that no code above its level is reachable is part 5's leak
# check, run here on this build's binaries too.
athlon_programs="test_cpu test_qs8 test_int8_training"
athlon_direct_programs="test_qs8 test_int8_model test_int8_training test_qat"
core2_programs="test_cpu test_kernels test_qs8 test_conv_layers test_int8_winograd"
# Under Wine everything runs but the three trainings on all of Fashion-MNIST (Acceptance.*:
# 130-150 s of each Wine suite, and its longest program): the Windows builds train the short
# runs of test_cli, and the i686 .exe trains the mlp on all of Fashion-MNIST in
# cross_check_training.sh, against the Linux build's accuracy.
wine_filter=GTEST_FILTER=-Acceptance.*
# A kernel that runs no 32-bit program (tools/cross/kernel_runs_32bit.sh; CI's machine at stop 60)
# runs the i686 build under qemu only and the i686 .exe not at all (the 32-bit Wine is a 32-bit
# program). There the direct runs' programs that emulation affords run under qemu instead, the
# i686 .exe is compiled and linked but not run, and what could not run is a SKIP line in
# build-cross/cross-no-32bit.txt that says so (with the .exe's build as a PASS or FAIL line).
runs_32bit=yes
probe=0
case " ${triplets[*]} " in *" i686-"*) bash tools/cross/kernel_runs_32bit.sh || probe=$? ;; esac
if [ $probe -eq 1 ]; then
  runs_32bit=no
  export RG_KERNEL_RUNS_32BIT=no  # cross_build.sh asks too: one answer for the whole invocation
  echo "== this kernel runs no 32-bit program: the i686 suite under qemu only, the i686 .exe built but not run (build-cross/cross-no-32bit.txt)"
fi
# Under qemu as a Core 2 the direct run's programs that take under 2 minutes each there (seconds
# in Meson's run on 2026-12-02, two at a time on this VM): base 4, cfg 1, data 3, memory_plan 22,
# image_data 20, layers 19, rcl 17, study 22, train 116, the report programs and gan (slow cases
# left out) 1 each; not gemm (154 s), fixed_point (90 s alone), mixed_precision (70), winograd
# (45: f32 kernels, which the kernel programs run at every level natively), reliability (184: its
# children emulated too) or cli (600); as an Athlon, test_qat (44 s alone), not test_int8_model
# (200 s). A study's runs are children it starts from /proc/self/exe, which qemu-user hands to the
# kernel as they are: 32-bit programs that cannot start there, so test_study's two cases that run
# a study are left out of that run.
core2_instead_of_direct="test_base test_cfg test_data test_memory_plan test_image_data test_layers test_rcl test_study \
test_train test_hardware_table test_svg_chart test_roofline test_study_report test_opencl test_gan"
study_children="StudyCli.AStoppedStudyResumesWithTheRunsItHas:StudyCli.WithoutOpenClTheReportIsCompleteAndSaysWhy"
athlon_instead_of_direct="test_qat"
# The runs of each build: TRIPLET LABEL [VARIABLE=VALUE...] [PROGRAM...] (none: every program).
runs_of() {
  case "$1-$runs_32bit" in
    i686-linux-gnu-yes)
      echo "$1 i686 RETROGRAD_I686_DIRECT=1 RETROGRAD_ISA=ssse3 $emulated_filter"
      echo "$1 i686_sse3 RETROGRAD_I686_DIRECT=1 RETROGRAD_ISA=sse3 $emulated_filter $athlon_direct_programs"
      echo "$1 core2duo RETROGRAD_QEMU_CPU=core2duo $emulated_filter $core2_programs"
      echo "$1 opteron_g1 RETROGRAD_QEMU_CPU=Opteron_G1 $emulated_filter $athlon_programs" ;;
    i686-linux-gnu-no)
      echo "$1 core2duo RETROGRAD_QEMU_CPU=core2duo $emulated_filter:$study_children $core2_programs $core2_instead_of_direct"
      echo "$1 opteron_g1 RETROGRAD_QEMU_CPU=Opteron_G1 $emulated_filter $athlon_programs $athlon_instead_of_direct" ;;
    x86_64-w64-mingw32-*) echo "$1 wine64 $wine_filter" ;;
    i686-w64-mingw32-yes) echo "$1 wine32 $wine_filter" ;;
  esac
}
# no_32bit_lines TRIPLET: the SKIP lines of what a kernel without 32-bit programs kept from running.
no_32bit_lines() {
  local why="this kernel runs no 32-bit program (tools/cross/kernel_runs_32bit.sh)"
  case "$1" in
    i686-linux-gnu)
      echo "SKIP i686: the i686 suite run directly at the Core 2's level: $why; under qemu instead: $core2_programs $core2_instead_of_direct (core2duo), but for $study_children (a study's children are 32-bit programs)"
      echo "SKIP i686_sse3: the int8 programs run directly at the Athlon 64's level: $why; under qemu instead: $athlon_programs $athlon_instead_of_direct (opteron_g1)" ;;
    i686-w64-mingw32) echo "SKIP wine32: the i686 .exe's suite under the 32-bit Wine: $why" ;;
  esac
}
mkdir -p build-cross
: > build-cross/cross-runs.txt
rm -f build-cross/cross-no-32bit.txt
for triplet in "${triplets[@]}"; do
  runs_of "$triplet" | while read -r t label _; do
    echo "build-cross/$t/test-results-$label build-cross/$t/meson-logs/testlog-$label-env.json" >> build-cross/cross-runs.txt
  done
  [ "$triplet" != i686-linux-gnu ] || echo "--checks build-cross/$triplet/isa-leaks-results.txt" >> build-cross/cross-runs.txt
  [ $runs_32bit = yes ] || no_32bit_lines "$triplet" >> build-cross/cross-no-32bit.txt
done
[ $runs_32bit = yes ] || echo "--checks build-cross/cross-no-32bit.txt" >> build-cross/cross-runs.txt

# run_suite TRIPLET LABEL [VARIABLE=VALUE...] [PROGRAM...]: the suite of one build (the programs
# named, else all), once.
run_suite() {
  local triplet=$1 label=$2 word variables=() programs=()
  shift 2
  for word in "$@"; do
    if [[ "$word" == *=* ]]; then variables+=("$word"); else programs+=("$word"); fi
  done
  local build=build-cross/$triplet
  local results=$PWD/$build/test-results-$label
  mkdir -p "$results"
  # GoogleTest under Wine takes "/x/y" for a relative path; Z: is Wine's Unix root.
  local report_dir=$results
  [[ "$triplet" != *-mingw32 ]] || report_dir="Z:$results"
  echo "== $triplet: test suite ($label)"
  # Under qemu a program runs 10-400 times slower than natively (SIMD floats the most), and a
  # loaded machine doubles that: test_cli, 302 s quiet as a Core 2, hit the 600 s limit of
  # tests/meson.build on CI's machine and under load here. Emulated runs get twice the limit.
  local multiplier=1
  [[ "$triplet" != *-linux-gnu || " ${variables[*]} " == *" RETROGRAD_I686_DIRECT=1 "* ]] || multiplier=2
  # Meson's test(env:) overrides the caller's environment: the variables go through a wrapper
  # command, as in tools/test.sh (Meson adds the wrapper's name to the log: testlog-LABEL-env.json).
  meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 --logbase "testlog-$label" \
    --timeout-multiplier "$multiplier" \
    --wrapper "env GTEST_OUTPUT=xml:$report_dir/ ${variables[*]}" "${programs[@]}" || status=1
}

# wine_session start|stop TRIPLET: Wine's server exits 3 s after its last program, and a program
# starting in that moment fails ("wine client error:0: recvmsg: Connection reset by peer": two
# test programs of 35 in a CI run). For a suite one server stays up: started first, with its
# services (which live as long as it does) started by a program whose output goes nowhere, so
# they hold no test's output open; ended after. The starting program is run until it exits 0
# (3 tries): the suite's first program once exited 1 in 0.03 s without a line of output, never
# started (wine32's test_gemm, session 44), which passed when run again.
wine_session() {
  local exe=build-cross/$2/tests/test_base.exe try
  [[ "$2" == *-mingw32 ]] || return 0
  if [ "$1" = start ]; then
    for try in 1 2 3; do
      RG_WINE_SERVER=persist tools/cross/wine_run.sh "$exe" --gtest_list_tests < /dev/null > /dev/null 2>&1 && break
      echo "cross_test.sh: Wine did not run $exe for the $2 suite's server (try $try of 3)" >&2
    done
  else
    RG_WINE_SERVER=kill tools/cross/wine_run.sh "$exe" < /dev/null > /dev/null 2>&1
  fi
}

for triplet in "${triplets[@]}"; do
  echo "== $triplet: build"
  # No report of an earlier run may stand for this one: a build that fails leaves no log, and
  # count_tests.py counts a missing log as failed.
  rm -rf build-cross/"$triplet"/test-results-* build-cross/"$triplet"/meson-logs/testlog-*.json
  [ "$triplet" != i686-w64-mingw32 ] || rm -f build-cross/cross-check-results.txt
  rm -f build-cross/"$triplet"/isa-leaks-results.txt
  if [ "$triplet-$runs_32bit" = i686-w64-mingw32-no ]; then
    # tools/test.sh counts the training check's file whatever ran.
    echo "SKIP cross check: the i686 .exe against the x86_64 Linux build (tools/cross_check_training.sh): this kernel runs no 32-bit program" \
      > build-cross/cross-check-results.txt
    # Only what a Windows PC runs: the test programs could not run here.
    if bash tools/cross_build.sh "$triplet" --no-tests; then
      echo "PASS $triplet: retrograd.exe compiled and linked (not run: no 32-bit programs here)" >> build-cross/cross-no-32bit.txt
    else
      echo "FAIL $triplet: the build failed (tools/cross_build.sh $triplet --no-tests)" >> build-cross/cross-no-32bit.txt
      status=1
    fi
    continue
  fi
  if ! bash tools/cross_build.sh "$triplet"; then
    echo "cross_test.sh: the $triplet build failed" >&2
    status=1
    continue
  fi
  if [ "$triplet" = i686-linux-gnu ]; then
    echo "== $triplet: no instruction above a function's level (tools/check_isa_leaks.py)"
    python3 tools/check_isa_leaks.py --build "build-cross/$triplet" --results "build-cross/$triplet/isa-leaks-results.txt" \
      | tail -n 1 || status=1
  fi
  mapfile -t runs < <(runs_of "$triplet")  # not read in the loop: meson test reads stdin
  wine_session start "$triplet"
  for run in "${runs[@]}"; do
    set -f  # the words as they are: no file names for the filter's '*'
    # shellcheck disable=SC2086  # TRIPLET LABEL VARIABLE=VALUE...: words on purpose
    run_suite $run
    set +f
  done
  if [ "$triplet" = i686-w64-mingw32 ]; then
    if [ -x build/retrograd ]; then
      echo "== $triplet against x86_64 Linux: the same mlp, checkpoints both ways"
      bash tools/cross_check_training.sh build-cross/cross-check-results.txt || status=1
    else
      echo "FAIL cross check: no build/retrograd to compare with (run tools/build.sh first)" > build-cross/cross-check-results.txt
      status=1
    fi
  fi
  wine_session stop "$triplet"
done
exit $status
