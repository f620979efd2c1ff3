#!/bin/bash
# Installs what retrograd needs on Debian 12 (as root): the compiler, Meson, the libraries,
# the OpenCL C headers (the build compiles against them; libOpenCL is loaded at run time),
# and the Fashion-MNIST package. Quiet and quick when everything is there already.
# Usage: bash tools/setup.sh [--tests] [--bench] [--mpi]
set -euo pipefail

packages=(g++ meson ninja-build pkg-config zlib1g-dev nlohmann-json3-dev libxsimd-dev libstb-dev opencl-c-headers dataset-fashion-mnist python3)
for arg in "$@"; do
  case "$arg" in
    --tests) packages+=(libopenmpi-dev openmpi-bin libgtest-dev googletest qemu-user binutils ocl-icd-libopencl1 pocl-opencl-icd clang libclang-rt-14-dev ccache universal-ctags) ;;  # ccache: every build of tools/test.sh, the cache in ~/.cache/ccache (5 GB at most) outliving the clone; qemu-user: tools/qemu_old_cpus.sh; clang and its sanitizer and libFuzzer runtimes: tools/sanitize_build.sh; binutils (objdump, nm): tools/check_isa_leaks.py; universal-ctags: tools/check_function_length.py; the ICD loader and PoCL (OpenCL on the CPU): tests/test_opencl*.cpp
    --mpi) packages+=(libopenmpi-dev openmpi-bin) ;;  # training over MPI (docs/distributed.md): mpirun and the library the build links
    --bench) packages+=(python3-torch python3-numpy libopenblas0-pthread) ;;  # OpenBLAS: torch's BLAS through Debian's alternatives, else the slow reference BLAS
    *) echo "setup.sh: unknown option $arg (--tests, --bench, --mpi)" >&2; exit 2 ;;
  esac
done

source "$(dirname "${BASH_SOURCE[0]}")/apt_install.sh"
install_missing setup.sh "${packages[@]}"
