#!/bin/bash
# Sets up, builds and runs every test; the last line is "N passed, N failed", counting:
#   1. the suite (meson test): GoogleTest cases, XML in build/test-results/; then the layer and
#      training programs again with RETROGRAD_ISA=sse2 (build/test-results-sse2/): the shipped
#      gcc build's model-level code on the SSE2 kernels;
#   2. the suite built with clang under AddressSanitizer and UndefinedBehaviorSanitizer
#      (tools/sanitize_build.sh: build-sanitize/), run with RETROGRAD_ISA=sse2 so the model-level
#      cases take the baseline kernels there and the AVX2 ones in part 1 (the kernel cases run
#      every level in both): build-sanitize/test-results/;
#   3. tools/fuzz.sh: each libFuzzer target for 60 s from its seed corpus
#      (build-sanitize/fuzz-results.txt);
#   4. tools/qemu_old_cpus.sh: probe, test_gemm and a short training on emulated old CPUs
#      (test_gemm's cases in build/test-results-qemu/, its checks in build/qemu-results.txt);
#   5. tools/check_isa_leaks.py: no AVX code reachable from baseline code, and its
#      self-test (build/isa-leaks-results.txt, build/isa-leaks-selftest-results.txt);
#      tools/check_unity_names.py: no file-local name twice in one unity target, and its
#      self-test (build/unity-names-results.txt, build/unity-names-selftest-results.txt);
#      tools/check_layers.py: every include of src/ goes down the layer order, README's Layout
#      names the floors in that order, and its self-test (build/layers-results.txt,
#      build/layers-selftest-results.txt);
#      tools/check_function_length.py: no function of src/ over 80 lines without a reason
#      written above it, and its self-test (build/function-length-results.txt,
#      build/function-length-selftest-results.txt);
#      tools/check_thread_locals.py: every thread_local a scalar or a pointer (MinGW frees a
#      thread_local's storage before its destructor), and its self-test
#      (build/thread-locals-results.txt, build/thread-locals-selftest-results.txt);
#      count_tests.py's own self-test (build/count-tests-selftest-results.txt);
#      tools/bad_inputs.py: every bad input of docs/reliability.md's table gets its message
#      and exit 2 (build/bad-inputs-results.txt); tools/check_twin_flops.py: each PyTorch twin
#      of bench/pytorch_presets.py has its preset's flops and parameters (a SKIP line without
#      python3-torch; build/twin-flops-results.txt);
#   6. tools/cross_test.sh: the i686 Linux build's suite run directly at the Core 2's and the
#      Athlon 64's kernel levels, its leak check, its CPU detection and a few kernel programs
#      under qemu-i386 as both CPUs, the x86_64 .exe's suite under wine64, the i686 .exe's under 32-bit Wine
#      (build-cross/TRIPLET/test-results-LABEL/ with their Meson logs); on a kernel that runs no
#      32-bit program, more of the i686 suite under qemu and SKIP lines for what cannot run there.
# A test program that dies without a report counts as 1 failed. docs/testing.md gives the
# time of each part on 2 cores and how to run each alone.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --tests || exit 2
bash tools/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
unset RETROGRAD_ISA
rm -rf build/test-results build/test-results-sse2 build/test-results-qemu build-sanitize/test-results
rm -f build/meson-logs/testlog.json build/meson-logs/testlog-sse2*.json build-sanitize/meson-logs/testlog*.json build-sanitize/fuzz-results.txt \
  build/qemu-results.txt build/isa-leaks-results.txt build/isa-leaks-selftest-results.txt \
  build/count-tests-selftest-results.txt build/bad-inputs-results.txt build/twin-flops-results.txt \
  build/unity-names-results.txt build/unity-names-selftest-results.txt \
  build/layers-results.txt build/layers-selftest-results.txt \
  build/function-length-results.txt build/function-length-selftest-results.txt
mkdir -p build/test-results build/test-results-sse2
status=0
timings=""
stage_start=$SECONDS
stage_end() { timings+="${timings:+, }$1 $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }

echo "== 1/6 test suite"
meson test -C build --print-errorlogs --num-processes 2 || status=1
# Meson's test(env:) overrides the caller's environment: the variables go through a wrapper
# (Meson adds its name to the log: testlog-sse2-env.json). Part 2 runs everything at SSE2
# under the sanitizers, built by clang; these are the programs where gcc's build trains.
meson test -C build --print-errorlogs --num-processes 2 --logbase testlog-sse2 \
  --wrapper "env RETROGRAD_ISA=sse2 GTEST_OUTPUT=xml:$PWD/build/test-results-sse2/" \
  test_layers test_conv_layers test_rcl test_train test_mixed_precision test_qat test_int8_training test_gan || status=1
sse2_log=$(ls build/meson-logs/testlog-sse2*.json 2>/dev/null | head -1)
stage_end "suite"

# Meson's test(env:) overrides the caller's environment, so RETROGRAD_ISA goes through a
# wrapper command (Meson adds the wrapper's name to the log: testlog-env.json). Any sanitizer
# report fails its program (the build makes UBSan's fatal; LeakSanitizer is on). The slow cases
# (tools/slow_cases.sh) run in part 1 only: they would take minutes each here.
# intercept_tls_get_addr=0: LeakSanitizer's exit scan read a dlopen'd library's (PoCL's) dynamic TLS
# entry at a bogus address and crashed ("Tracer caught signal 11", test_opencl with GTEST_OUTPUT set).
echo "== 2/6 test suite under AddressSanitizer and UndefinedBehaviorSanitizer, RETROGRAD_ISA=sse2"
source tools/slow_cases.sh
if bash tools/sanitize_build.sh; then
  mkdir -p build-sanitize/test-results
  meson test -C build-sanitize --print-errorlogs --num-processes 2 \
    --wrapper "env RETROGRAD_ISA=sse2 GTEST_FILTER=-$slow_cases:$sanitizer_repeats ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1" || status=1
else
  echo "sanitizer build failed"; status=1
fi
sanitize_log=$(ls build-sanitize/meson-logs/testlog*.json 2>/dev/null | head -1)
stage_end "sanitizers"

echo "== 3/6 fuzz targets, 60 s each"
bash tools/fuzz.sh --seconds 60 --results build-sanitize/fuzz-results.txt || status=1
stage_end "fuzz"

echo "== 4/6 old CPUs under qemu-user"
bash tools/qemu_old_cpus.sh build/qemu-results.txt || status=1
stage_end "qemu"

echo "== 5/6 ISA leak check, unity names, layers, function length, thread_locals, bad inputs, twins' flops"
python3 tools/check_isa_leaks.py --results build/isa-leaks-results.txt || status=1
python3 tools/check_isa_leaks.py --self-test --results build/isa-leaks-selftest-results.txt || status=1
python3 tools/check_unity_names.py --build build --results build/unity-names-results.txt || status=1
python3 tools/check_unity_names.py --self-test --results build/unity-names-selftest-results.txt >/dev/null || status=1
python3 tools/check_layers.py --results build/layers-results.txt || status=1
python3 tools/check_layers.py --self-test --results build/layers-selftest-results.txt >/dev/null || status=1
python3 tools/check_function_length.py --results build/function-length-results.txt || status=1
python3 tools/check_function_length.py --self-test --results build/function-length-selftest-results.txt >/dev/null || status=1
python3 tools/check_thread_locals.py --results build/thread-locals-results.txt || status=1
python3 tools/check_thread_locals.py --self-test --results build/thread-locals-selftest-results.txt >/dev/null || status=1
python3 tools/count_tests.py --self-test build/count-tests-selftest-results.txt >/dev/null || status=1
python3 tools/bad_inputs.py build/retrograd --results build/bad-inputs-results.txt || status=1
/usr/bin/python3 tools/check_twin_flops.py build/retrograd --results build/twin-flops-results.txt || status=1
stage_end "ISA leaks, unity names, layers, function length, bad inputs and twins' flops"

echo "== 6/6 cross builds: i686 Linux under qemu, Windows .exe under Wine"
bash tools/cross_test.sh || status=1
stage_end "cross"
# The runs cross_test.sh meant to make, each a report folder and its Meson log, and its checks
# files ("--checks FILE"); none listed: a missing checks file, counted as failed.
cross_runs=(--checks build-cross/cross-runs-not-listed)
[ -s build-cross/cross-runs.txt ] && read -r -a cross_runs <<< "$(tr '\n' ' ' < build-cross/cross-runs.txt)"

echo "== times: $timings; all with setup and build $SECONDS s"
# Every failure above is in the files counted here; the statuses are a second guard.
python3 tools/count_tests.py \
  build/test-results build/meson-logs/testlog.json \
  build/test-results-sse2 "${sse2_log:-build/meson-logs/testlog-sse2-env.json}" \
  build-sanitize/test-results "${sanitize_log:-build-sanitize/meson-logs/testlog-env.json}" \
  --xml-dir build/test-results-qemu \
  --checks build-sanitize/fuzz-results.txt \
  --checks build/qemu-results.txt \
  --checks build/isa-leaks-results.txt \
  --checks build/isa-leaks-selftest-results.txt \
  --checks build/unity-names-results.txt \
  --checks build/unity-names-selftest-results.txt \
  --checks build/layers-results.txt \
  --checks build/layers-selftest-results.txt \
  --checks build/function-length-results.txt \
  --checks build/function-length-selftest-results.txt \
  --checks build/thread-locals-results.txt \
  --checks build/thread-locals-selftest-results.txt \
  --checks build/count-tests-selftest-results.txt \
  --checks build/bad-inputs-results.txt \
  --checks build/twin-flops-results.txt \
  --checks build-cross/cross-check-results.txt \
  "${cross_runs[@]}" || status=1
exit $status
