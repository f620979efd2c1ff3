#!/usr/bin/env bash
# Builds bench/winograd_bench.cpp against a meson build's static libraries and runs it: the CPU's
# Winograd convolution alone per shape (weight transform, forward, weight gradient; issue 32).
# Arguments go to the tool (its header lists them); RETROGRAD_ISA caps the level.
#   env BUILD_DIR  the meson build (default build); the tool is built there as winograd_bench
#   env BIN        a prebuilt tool (nothing built: for the GPU machine's Xeon, carried from here)
# e.g. RETROGRAD_ISA=avx2 BUILD_DIR=build-dev bench/winograd_bench.sh --shapes 32x32x28 --reps 41
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/bench_tool_build.sh
bench_tool_exec winograd_bench "$@"
