#!/usr/bin/env bash
# Builds bench/opencl_launch_bench.cpp against a meson build's static libraries and runs it: the
# cost of one kernel launch, host and device, through our launchers and the raw API (issue 33).
# Arguments go to the tool (its header lists them).
#   env BUILD_DIR  the meson build (default build); the tool is built there as opencl_launch_bench
#   env BIN        a prebuilt tool (nothing built: for the GPU machine, carried from here)
# On the GPU machine: OCL_ICD_FILENAMES=libnvidia-opencl.so.1 BIN=... bench/opencl_launch_bench.sh --sizes 1024,3211264
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/bench_tool_build.sh
bench_tool_exec opencl_launch_bench "$@"
