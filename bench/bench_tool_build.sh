# Sourced by the scripts of bench/ that build a C++ tool against a meson build's static libraries
# (opencl_gemm_vs_clblast.sh, opencl_conv_bench.sh): the libraries to make, and the compile
# command. The core library needs the ISA levels' kernels, stb and the device layers' registry,
# so they are linked as one group.
bench_tool_libs=(libretrograd_core.a libretrograd_cl_layers.a libretrograd_dist.a libretrograd_stb.a)
# bench_tool_command BUILD_DIR SOURCE OUT: sets the array BENCH_TOOL_CMD (run it after ninja).
bench_tool_command() {
  local dir=$1
  BENCH_TOOL_CMD=(g++ -std=c++17 -O2 -Wall -Wextra -Isrc "$2" -o "$3" -Wl,--start-group
                  "$dir"/libretrograd_cl_layers.a "$dir"/libretrograd_core.a "$dir"/libretrograd_dist.a
                  "$dir"/libretrograd_stb.a "$dir"/libretrograd_isa_*.a -Wl,--end-group -ldl -lz -pthread)
}
