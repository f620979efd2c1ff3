#!/bin/bash
# Cross-builds retrograd (and its tests) for an old PC: sets up what the target needs
# (tools/setup_cross.sh), configures build-cross/TRIPLET once with tools/cross/TRIPLET.ini and
# builds it. The binary: build-cross/TRIPLET/retrograd (.exe for Windows).
# Usage: bash tools/cross_build.sh TRIPLET [--no-tests]
#   TRIPLET: i686-linux-gnu | i686-w64-mingw32 | x86_64-w64-mingw32
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/ccache_env.sh
triplet=${1:-}
tests=true
[ "${2:-}" = "--no-tests" ] && tests=false
# The i686 .exe runs under a 32-bit Wine, which a kernel without 32-bit programs cannot start: there
# it is only compiled and linked (tools/cross/built_not_run.ini), and that Wine is not fetched.
runs_32bit=yes
case "$triplet" in
  i686-linux-gnu|x86_64-w64-mingw32) bash tools/setup_cross.sh "$triplet" ;;
  i686-w64-mingw32)
    probe=0
    bash tools/cross/kernel_runs_32bit.sh || probe=$?
    [ $probe -ne 1 ] || runs_32bit=no
    wine32=(--wine32)
    [ $runs_32bit = yes ] || wine32=()
    bash tools/setup_cross.sh "${wine32[@]}" "$triplet" ;;
  *) echo "usage: bash tools/cross_build.sh i686-linux-gnu|i686-w64-mingw32|x86_64-w64-mingw32 [--no-tests]" >&2; exit 2 ;;
esac
deps=$PWD/build-cross/deps/$triplet
build=build-cross/$triplet
# Meson 1.0's machine files cannot name paths relative to themselves: this one gives them.
# Rewritten only when it changes (Meson reconfigures when a machine file's time changes).
paths=$(printf "[constants]\ndeps = '%s'\ntools = '%s'\n" "$deps" "$PWD/tools/cross")
[ "$(cat "$deps/paths.ini" 2>/dev/null)" = "$paths" ] || echo "$paths" > "$deps/paths.ini"
cross_files=(--cross-file "$deps/paths.ini")
case "$triplet" in *-mingw32) cross_files+=(--cross-file tools/cross/windows.ini) ;; esac
cross_files+=(--cross-file "tools/cross/$triplet.ini")
[ $runs_32bit = yes ] || cross_files+=(--cross-file tools/cross/built_not_run.ini)
# The 32-bit builds leave out the test programs whose every case needs an OpenCL device: no
# 32-bit OpenCL driver runs under qemu-i386 or the 32-bit Wine here, and they would only skip.
options=(--buildtype=release -Dtests=$tests -Dmpi=disabled)
case "$triplet" in i686-*) options+=(-Dopencl_device_tests=false) ;; esac
# Machine files are read when a build folder is set up: set it up again (wiped) when the set
# of files, their content or the options changed since.
setup="${cross_files[*]} ${options[*]} $(cat "$deps/paths.ini" tools/cross/*.ini | cksum)"
if [ ! -f "$build/build.ninja" ] || [ "$(cat "$build/.cross-setup" 2>/dev/null)" != "$setup" ]; then
  wipe=()
  [ ! -d "$build/meson-private" ] || wipe=(--wipe)
  meson setup "${wipe[@]}" "$build" "${cross_files[@]}" "${options[@]}" >/dev/null || {
    echo "cross_build.sh: meson setup failed for $triplet: see $build/meson-logs/meson-log.txt" >&2; exit 1; }
  echo "$setup" > "$build/.cross-setup"
fi
ninja -C "$build" --quiet
