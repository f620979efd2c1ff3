#!/bin/bash
# Runs a Windows .exe under Wine, headless: a 64-bit one under the system's wine64, a 32-bit
# one under the 32-bit Wine that tools/setup_cross.sh --wine32 unpacks in build-cross/wine32
# (wine64 alone runs a 32-bit .exe as nothing: no output, exit 0). Each has its own prefix in
# build-cross/, made on first use (about 10 s) under a lock, so parallel tests wait for it.
# Meson's exe_wrapper for the MinGW cross files; a test program Wine did not start is run once
# more (below). Usage: tools/cross/wine_run.sh PROGRAM.exe [ARGS]
#   env RG_WINE_SERVER: persist (start a server that stays, then run) or kill (end it)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exe=$1
# The PE header's machine field: 0x14c i386, 0x8664 x86-64 (offset at 0x3c, machine at +4).
pe_offset=$(od -An -tu4 -j60 -N4 "$exe" 2>/dev/null | tr -d ' ')
machine=$(od -An -tx2 -j$((pe_offset + 4)) -N2 "$exe" 2>/dev/null | tr -d ' ')
case "$machine" in
  8664) loader=/usr/lib/wine/wine64; prefix=$repo/build-cross/wine64-prefix ;;
  014c)
    loader=$repo/build-cross/wine32/usr/lib/wine/wine64; prefix=$repo/build-cross/wine32-prefix
    if [ ! -f "$repo/build-cross/wine32/ready" ]; then
      echo "wine_run.sh: no 32-bit Wine in build-cross/wine32 for $exe: run bash tools/setup_cross.sh --wine32" >&2
      exit 2
    fi ;;
  *) echo "wine_run.sh: $exe is not a Windows x86 or x86-64 program (PE machine '${machine}')" >&2; exit 2 ;;
esac
export WINEPREFIX=$prefix WINEDEBUG=${WINEDEBUG:--all} WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}
unset DISPLAY
if [ ! -f "$prefix/system.reg" ]; then
  mkdir -p "$(dirname "$prefix")"
  (
    flock 9
    if [ ! -f "$prefix/system.reg" ]; then
      "$loader" wineboot --init > "$prefix.log" 2>&1
      "$(dirname "$loader")/wineserver" -w
    fi
  ) 9>"$prefix.lock"
  if [ ! -f "$prefix/system.reg" ]; then
    echo "wine_run.sh: Wine could not make its prefix $prefix (its output: $prefix.log)" >&2
    exit 2
  fi
fi
# RG_WINE_SERVER=persist: first start a server that stays (tools/cross_test.sh, for a suite);
# =kill: end this prefix's server and its services instead of running the program.
case "${RG_WINE_SERVER:-}" in
  persist) "$(dirname "$loader")/wineserver" -p > /dev/null 2>&1 ;;  # exit 2 when one runs: kept
  kill) exec "$(dirname "$loader")/wineserver" -k ;;
esac
[ -n "${GTEST_OUTPUT:-}" ] || exec "$loader" "$@"
# A test program (GTEST_OUTPUT set: tests/meson.build sets it for every test) that Wine never
# started exits non-zero at once having printed nothing: wine32's test_gemm in 0.03 s (session 44),
# wine64's test_cpu in 0.14 s (CI at stop 60), each passing when run again. Such a run (no line on
# stdout, under 2 s) is started once more and the second run's result stands; it says so on
# stderr, which Meson's log keeps. GoogleTest prints its first line before any test, so this
# retries only a program that died before it ran a test.
printed=$(mktemp "${TMPDIR:-/tmp}/wine_run.XXXXXX") || exit 2
trap 'rm -f "$printed"' EXIT
trap 'exit 143' TERM  # Meson's timeout: the EXIT trap still removes the file
trap 'exit 130' INT
for try in 1 2; do
  started=$(date +%s%N)
  "$loader" "$@" | tee "$printed"
  status=${PIPESTATUS[0]}
  took_ms=$(( ($(date +%s%N) - started) / 1000000 ))
  [ "$status" -ne 0 ] && [ ! -s "$printed" ] && [ "$took_ms" -lt 2000 ] && [ "$try" = 1 ] || break
  echo "wine_run.sh: $exe exited $status in $took_ms ms without a line of output (Wine did not start it): once more" >&2
done
exit "$status"
