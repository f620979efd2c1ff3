#!/usr/bin/env bash
# Builds bench/opencl_bn_bench.cpp against a meson build's static libraries and runs it: the
# device's batch norm in training per shape and pass, and its kernels' device times (issue 33).
# Arguments go to the tool (its header lists them).
#   env BUILD_DIR  the meson build (default build); the tool is built there as opencl_bn_bench
#   env BIN        a prebuilt tool (nothing built: for the GPU machine, carried from here)
# On the GPU machine: OCL_ICD_FILENAMES=libnvidia-opencl.so.1 BIN=... bench/opencl_bn_bench.sh --shapes 200704x16,50176x32
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/bench_tool_build.sh
bench_tool_exec opencl_bn_bench "$@"
