#!/usr/bin/env bash
# Builds bench/pool_bench.cpp against a meson build's static libraries and runs it: what one
# fork-join of the ThreadPool costs beside its work, and what moving a buffer's parts to other
# cores costs (issue 32's 4-thread point). Arguments go to the tool (its header lists them).
#   env BUILD_DIR  the meson build (default build); the tool is built there as pool_bench
#   env BIN        a prebuilt tool (nothing built: for the GPU machine's Xeon, carried from here)
# e.g. BUILD_DIR=build-dev taskset -c 3-6 bench/pool_bench.sh --threads 4
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/bench_tool_build.sh
bench_tool_exec pool_bench "$@"
