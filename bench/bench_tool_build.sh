# Sourced by the scripts of bench/ that build a C++ tool against a meson build's static libraries
# (opencl_gemm_vs_clblast.sh, opencl_conv_bench.sh, opencl_bn_bench.sh, opencl_launch_bench.sh): the libraries to make,
# the compile command, and the build-then-run of a one-file tool. The core library needs the ISA levels' kernels, stb and the device layers' registry,
# so they are linked as one group.
bench_tool_libs=(libretrograd_core.a libretrograd_cl_layers.a libretrograd_dist.a libretrograd_stb.a)
# bench_tool_command BUILD_DIR SOURCE OUT: sets the array BENCH_TOOL_CMD (run it after ninja).
bench_tool_command() {
  local dir=$1
  BENCH_TOOL_CMD=(g++ -std=c++17 -O2 -Wall -Wextra -Isrc "$2" -o "$3" -Wl,--start-group
                  "$dir"/libretrograd_cl_layers.a "$dir"/libretrograd_core.a "$dir"/libretrograd_dist.a
                  "$dir"/libretrograd_stb.a "$dir"/libretrograd_isa_*.a -Wl,--end-group -ldl -lz -pthread)
}
# bench_tool_exec NAME ARGS...: bench/NAME.cpp built into $BUILD_DIR/NAME (BUILD_DIR: a meson
# build, default build, set up in release where missing) and run with ARGS; with BIN set, that
# prebuilt tool is run instead (for the GPU machine: built here, carried); a BIN that is not an
# executable file, or a BUILD_DIR that is not a folder, ends it with exit 2. From the repository root.
bench_tool_exec() {
  local name=$1 dir=${BUILD_DIR:-build}
  shift
  if [[ -n "${BIN:-}" && ! ( -f "$BIN" && -x "$BIN" ) ]]; then
    echo "$name: BIN '$BIN' is not an executable file" >&2
    exit 2
  fi
  if [[ -z "${BIN:-}" && -e "$dir" && ! -d "$dir" ]]; then
    echo "$name: BUILD_DIR '$dir' is not a folder" >&2
    exit 2
  fi
  if [[ -z "${BIN:-}" ]]; then
    [[ -f $dir/build.ninja ]] || meson setup "$dir" --buildtype=release >&2
    ninja -C "$dir" "${bench_tool_libs[@]}" >&2
    BIN=$dir/$name
    bench_tool_command "$dir" "bench/$name.cpp" "$BIN"
    "${BENCH_TOOL_CMD[@]}"
  fi
  exec "$BIN" "$@"
}
