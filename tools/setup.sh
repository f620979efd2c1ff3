#!/bin/bash
# Installs what retrograd needs on Debian 12 (as root): the compiler, Meson, the libraries,
# the OpenCL C headers (the build compiles against them; libOpenCL is loaded at run time),
# and the Fashion-MNIST package. Quiet and quick when everything is there already.
# Usage: bash tools/setup.sh [--tests] [--bench]
set -euo pipefail

packages=(g++ meson ninja-build pkg-config zlib1g-dev nlohmann-json3-dev libxsimd-dev libstb-dev opencl-c-headers dataset-fashion-mnist python3)
for arg in "$@"; do
  case "$arg" in
    --tests) packages+=(libgtest-dev googletest qemu-user binutils ocl-icd-libopencl1 pocl-opencl-icd) ;;  # qemu-user: tools/qemu_old_cpus.sh; binutils (objdump, nm): tools/check_isa_leaks.py; the ICD loader and PoCL (OpenCL on the CPU): tests/test_opencl*.cpp
    --bench) packages+=(python3-torch python3-numpy libopenblas0-pthread) ;;  # OpenBLAS: torch's BLAS through Debian's alternatives, else the slow reference BLAS
    *) echo "setup.sh: unknown option $arg (--tests, --bench)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: missing packages: ${missing[*]}; run as root (or install them) first" >&2
    exit 2
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
