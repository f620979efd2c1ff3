#!/bin/bash
# Configures (once) and builds the optimised build in build/. Usage: bash tools/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/ccache_env.sh
# MPI is found when the build is set up (meson_options.txt: mpi=auto): set up again when Open
# MPI or MPICH came or went since (tools/setup.sh --tests or --mpi installs it).
mpi=$( (pkg-config --exists ompi-cxx || pkg-config --exists mpich) 2>/dev/null && echo yes || echo no)
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release >/dev/null
elif [ "$(cat build/.mpi-found 2>/dev/null)" != "$mpi" ]; then
  meson setup --reconfigure build >/dev/null
fi
echo "$mpi" > build/.mpi-found
# Quiet when it builds; the compiler's messages when it does not (ninja prints them on stdout).
ninja -C build > build/build.log || { tail -n 60 build/build.log; exit 1; }
