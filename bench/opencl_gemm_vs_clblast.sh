#!/usr/bin/env bash
# retrograd's OpenCL SGEMM (ocl::f32_gemm: the tuned choice, and any configurations named) vs CLBlast's
# CLBlastSgemm on one device: same context, queue and buffers; square row-major C = A * B
# (alpha 1, beta 0) with random A, B in [-1, 1].
#
# How: bench/opencl_gemm_bench.cpp times each call by its OpenCL event's profiling times
# (device time; median and best of REPS after 2 warm-ups; TFLOP/s = 2n^3 / s) and also by
# host wall time (enqueue to clFinish), since CLBlast's event covers only its last kernel.
# Each tile's C is checked against CLBlast's: max|diff| / max|C| >= 1e-4 fails (exit 1).
# CLBlast is dlopen'ed at run time (no build-time dependency); without it, ours is still
# timed and the reason is printed. Debian 12's libclblast1 (CLBlast 1.5.3) needs only
# libOpenCL.so.1, libstdc++, libm, libgcc_s and libc (ldd).
#
# usage: bench/opencl_gemm_vs_clblast.sh
#   env DEVICE     --device of the tool (default cl:0:0)
#   env SIZES      square sizes (default 1024,2048,4096,8192; a size whose matrices do not
#                  fit the device's max buffer is skipped)
#   env REPS       timed repetitions per side (default 10)
#   env CONFIGS    our configurations (default auto: the device's tuning; names as
#                  opencl/gemm_config.h writes them, e.g. auto,128x128x16/16x16/v4/p)
#   env JSON       also write every figure and the device name / driver to this file
#   env BUILD_DIR  the library's meson build dir (default build); the tool is built there as
#                  BUILD_DIR/opencl_gemm_bench with g++ against BUILD_DIR's static libraries
#   env BIN        a prebuilt tool: nothing is built (for a machine without the sources' build)
#   env RETROGRAD_CLBLAST_LIBRARY  CLBlast to load (default libclblast.so.1, from the system)
#
# On the GPU machine (same Debian 12; it cannot download): prepare here
#   BUILD_DIR=build-helperF SIZES=128 REPS=1 bench/opencl_gemm_vs_clblast.sh   # builds the tool
#   (cd build-helperF && apt-get download libclblast1 && dpkg -x libclblast1_*.deb clblast)
# carry build-helperF/opencl_gemm_bench and build-helperF/clblast, then run there
#   OCL_ICD_FILENAMES=libnvidia-opencl.so.1 BIN=build-helperF/opencl_gemm_bench \
#   RETROGRAD_CLBLAST_LIBRARY=$PWD/build-helperF/clblast/usr/lib/x86_64-linux-gnu/libclblast.so.1 \
#   bench/opencl_gemm_vs_clblast.sh
set -euo pipefail

die() { echo "opencl_gemm_vs_clblast.sh: FAILED: $*" >&2; exit 1; }

DEVICE=${DEVICE:-cl:0:0}
SIZES=${SIZES:-1024,2048,4096,8192}
REPS=${REPS:-10}
CONFIGS=${CONFIGS:-auto}
BUILD_DIR=${BUILD_DIR:-build}
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer (got '$REPS')"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# --- build (skipped with BIN) -------------------------------------------------
if [[ -n "${BIN:-}" ]]; then
  [[ -x "$BIN" ]] || die "BIN=$BIN is not an executable"
  BUILT="prebuilt $BIN"
else
  [[ -f /usr/include/CL/cl.h ]] || die "/usr/include/CL/cl.h missing: apt-get install opencl-c-headers"
  if [[ ! -d $BUILD_DIR ]]; then
    meson setup "$BUILD_DIR" --buildtype=release >&2 || die "meson setup $BUILD_DIR failed"
  fi
  source bench/bench_tool_build.sh
  ninja -C "$BUILD_DIR" "${bench_tool_libs[@]}" >&2 || die "ninja -C $BUILD_DIR failed"
  BIN=$BUILD_DIR/opencl_gemm_bench
  bench_tool_command "$BUILD_DIR" bench/opencl_gemm_bench.cpp "$BIN"
  CXX_CMD=("${BENCH_TOOL_CMD[@]}")
  "${CXX_CMD[@]}" >&2 || die "compiling bench/opencl_gemm_bench.cpp failed"
  BUILT="${CXX_CMD[*]}"
fi

# --- provenance (git may be absent where the files were carried) ---------------
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ $COMMIT != unknown && -n "$(git status --porcelain -- src kernels 2>/dev/null)" ]]; then
  COMMIT="$COMMIT plus uncommitted changes in src/ or kernels/"
fi
LIB=${RETROGRAD_CLBLAST_LIBRARY:-libclblast.so.1}
if [[ -e $LIB ]]; then LIB_FILE=$(readlink -f "$LIB")
else LIB_FILE=$(ldconfig -p 2>/dev/null | awk -v l="$LIB" '$1 == l {print $NF; exit}'); fi
[[ -n $LIB_FILE && -e $LIB_FILE ]] && LIB_FILE=$(readlink -f "$LIB_FILE")

# --- run ---------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/opencl_gemm_vs_clblast.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ARGS=(--device "$DEVICE" --sizes "$SIZES" --reps "$REPS" --configs "$CONFIGS")
[[ -n "${JSON:-}" ]] && ARGS+=(--json "$JSON")
set +e
"$BIN" "${ARGS[@]}" > "$WORK/out.md"
RC=$?
set -e

NAME=$(sed -n 's/^device: *cl:[0-9]*:[0-9]* (\(.*\)), .*, driver .*/\1/p' "$WORK/out.md" | head -1)
echo "## OpenCL SGEMM, retrograd vs CLBlast: ${NAME:-$DEVICE}"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: $COMMIT"
echo "- tool: $BUILT"
echo "- CLBlast: $LIB${LIB_FILE:+ ($LIB_FILE)}"
echo "- cells: TFLOP/s by the event's device time, median (best) of $REPS; ratio = CLBlast's wall time / our best tile's (medians; CLBlast's event times only its last kernel, so wall against wall), > 1: ours faster; wall = TFLOP/s by enqueue-to-finish host time (medians)"
echo
cat "$WORK/out.md"
[[ $RC == 0 ]] || die "opencl_gemm_bench exited with $RC"
