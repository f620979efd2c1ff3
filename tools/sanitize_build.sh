#!/bin/bash
# Configures and builds build-sanitize/: clang with AddressSanitizer and
# UndefinedBehaviorSanitizer (any report aborts the program: no recovery), -O2 with asserts on,
# the test suite and the libFuzzer targets (tests/fuzz/). tools/test.sh runs the suite there;
# tools/fuzz.sh runs the fuzz targets. Usage: bash tools/sanitize_build.sh
# Debug information: line tables only (-gline-tables-only), all the sanitizers' and libFuzzer's
# stack traces print (function, file:line); full -g made a test program's object 43% larger and
# its compile 12% slower (test_layers 31.2/34.2 s against 27.6/29.8, 2026-11-28), for variables
# only a debugger reads: gdb on this build still has lines and functions.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/ccache_env.sh
# -O2 rather than the usual -O1: the suite's kernels and trainings run 2-3 times faster, and
# ASan's reports keep their stacks with the frame pointers kept. Without MPI: Open MPI's own
# allocations, never freed, would be LeakSanitizer's reports (the build without MPI is checked
# here instead; tools/test.sh runs the MPI tests in part 1).
options=(--buildtype=plain -Doptimization=2 -Ddebug=false -Db_ndebug=false
         -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true -Dmpi=disabled
         "-Dcpp_args=-fno-sanitize-recover=all -fno-omit-frame-pointer -gline-tables-only" -Dcpp_link_args=-fno-sanitize-recover=all)
# Meson adds ccache itself only to a compiler it finds on its own, not to one named in CC: named
# here, and dropped by Meson where ccache is not installed.
if [ ! -f build-sanitize/build.ninja ]; then
  CC="ccache clang" CXX="ccache clang++" meson setup build-sanitize "${options[@]}" >/dev/null
elif [ "$(cat build-sanitize/.sanitize-setup 2>/dev/null)" != "${options[*]}" ]; then
  meson setup --reconfigure build-sanitize "${options[@]:1}" >/dev/null  # the build type is set up once
fi
echo "${options[*]}" > build-sanitize/.sanitize-setup
# Quiet when it builds; the compiler's messages when it does not (ninja prints them on stdout).
ninja -C build-sanitize > build-sanitize/build.log || { tail -n 60 build-sanitize/build.log; exit 1; }
