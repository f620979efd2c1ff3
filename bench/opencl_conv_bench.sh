#!/usr/bin/env bash
# Builds bench/opencl_conv_bench.cpp against a meson build's static libraries and runs it: the
# device's implicit-GEMM convolutions per layer, pass and GEMM configuration (issue 33). Arguments
# go to the tool (its header lists them).
#   env BUILD_DIR  the meson build (default build); the tool is built there as opencl_conv_bench
#   env BIN        a prebuilt tool (nothing built: for the GPU machine, carried from here)
# On the GPU machine: OCL_ICD_FILENAMES=libnvidia-opencl.so.1 BIN=... bench/opencl_conv_bench.sh --batch 256
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [[ -z "${BIN:-}" ]]; then
  [[ -f $BUILD_DIR/build.ninja ]] || meson setup "$BUILD_DIR" --buildtype=release >&2
  ninja -C "$BUILD_DIR" libretrograd_core.a libretrograd_cl_layers.a libretrograd_dist.a libretrograd_stb.a >&2
  BIN=$BUILD_DIR/opencl_conv_bench
  libs=("$BUILD_DIR"/libretrograd_cl_layers.a "$BUILD_DIR"/libretrograd_core.a "$BUILD_DIR"/libretrograd_dist.a
        "$BUILD_DIR"/libretrograd_stb.a "$BUILD_DIR"/libretrograd_isa_*.a)
  g++ -std=c++17 -O2 -Wall -Wextra -Isrc bench/opencl_conv_bench.cpp -o "$BIN" \
    -Wl,--start-group "${libs[@]}" -Wl,--end-group -ldl -lz -pthread
fi
exec "$BIN" "$@"
