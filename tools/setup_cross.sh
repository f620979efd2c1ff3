#!/bin/bash
# Installs and prepares what the cross builds need (as root, Debian 12), quietly when done already:
#   the cross compilers (i686-linux-gnu, and MinGW-w64's -posix compilers for std::thread),
#   qemu-user (runs the i686 Linux build as old CPUs), wine64 (runs the x86_64 .exe), and in
#   build-cross/deps/TRIPLET/ a pkg-config folder and the headers of the header-only libraries
#   (xsimd, nlohmann/json, stb, OpenCL's C headers) linked from /usr/include, since a cross
#   compiler must not search the host's /usr/include. zlib: MinGW's from libz-mingw-w64-dev;
#   i386's from Debian's zlib1g-dev:i386, fetched as a package file (below).
#   --wine32: also the 32-bit Wine for the i686 .exe, in build-cross/wine32/ (below).
# i386 packages: `dpkg --add-architecture i386` fails on this mirror, so apt fetches them
# with a private state folder (signatures checked as usual) and dpkg-deb unpacks them into
# build-cross/; nothing of i386 is installed on the system.
# Usage: bash tools/setup_cross.sh [--wine32] TRIPLET...   (i686-linux-gnu, i686-w64-mingw32,
#        x86_64-w64-mingw32; none: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD/build-cross
wine32=0
triplets=()
for arg in "$@"; do
  case "$arg" in
    --wine32) wine32=1 ;;
    i686-linux-gnu|i686-w64-mingw32|x86_64-w64-mingw32) triplets+=("$arg") ;;
    *) echo "setup_cross.sh: unknown argument $arg (--wine32, i686-linux-gnu, i686-w64-mingw32, x86_64-w64-mingw32)" >&2; exit 2 ;;
  esac
done
[ ${#triplets[@]} -gt 0 ] || triplets=(i686-linux-gnu i686-w64-mingw32 x86_64-w64-mingw32)

packages=(meson ninja-build pkg-config python3 libxsimd-dev nlohmann-json3-dev libstb-dev opencl-c-headers googletest
  dataset-fashion-mnist)
for t in "${triplets[@]}"; do
  case "$t" in
    i686-linux-gnu) packages+=(g++-i686-linux-gnu qemu-user libc6-i386) ;;  # libc6-i386: the 32-bit loader, for qemu-i386 and for the children a test starts
    i686-w64-mingw32) packages+=(g++-mingw-w64-i686-posix libz-mingw-w64-dev wine64) ;;
    x86_64-w64-mingw32) packages+=(g++-mingw-w64-x86-64-posix libz-mingw-w64-dev wine64) ;;
  esac
done
[ $wine32 -eq 0 ] || packages+=(wine64 patchelf libz-mingw-w64-dev)
source tools/apt_install.sh
install_missing setup_cross.sh "${packages[@]}"

# Fetches i386 packages (NAME:i386 or NAME:i386=VERSION) into build-cross/debs/, replacing
# any other version there. Only runs when something is missing, so the index is fresh each time.
fetch_i386() {
  local apt_dir=$root/apt-i386
  local options=(-o Dir::State="$apt_dir/state" -o Dir::Cache="$apt_dir/cache" -o APT::Architecture=i386
    -o APT::Architectures::=i386 -o APT::Sandbox::User=root -o Debug::NoLocking=1)
  mkdir -p "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial" "$root/debs"
  # bookworm-updates and the security suite may lack i386 indices on this mirror: the main
  # suite is enough, and a package missing from all of them fails the download below.
  apt-get "${options[@]}" update -qq >/dev/null 2>&1 || true
  local spec
  for spec in "$@"; do rm -f "$root/debs/${spec%%:*}"_*_i386.deb; done
  (cd "$root/debs" && apt-get "${options[@]}" download -qq "$@" >/dev/null) || {
    echo "setup_cross.sh: could not fetch the i386 packages $* (see: apt-get ${options[*]} download $*)" >&2
    exit 2
  }
}

# build-cross/deps/TRIPLET: include/ (header-only libraries) and pkgconfig/*.pc for Meson.
write_deps() {
  local t=$1 deps=$root/deps/$1
  mkdir -p "$deps/include" "$deps/pkgconfig"
  for h in xsimd nlohmann stb CL; do ln -sfn "/usr/include/$h" "$deps/include/$h"; done
  local pc=$deps/pkgconfig
  # header_pc NAME VERSION INCLUDE_DIR: a pkg-config file for a header-only library.
  header_pc() { printf 'Name: %s\nDescription: headers\nVersion: %s\nCflags: -I%s\n' "$1" "$2" "$3" > "$pc/$1.pc"; }
  header_pc xsimd 8.1.0 "$deps/include"
  header_pc nlohmann_json 3.11.2 "$deps/include"
  header_pc stb 0.0 "$deps/include/stb"
  header_pc OpenCL-Headers 3.0 "$deps/include"
  case "$t" in
    *-mingw32)  # libz-mingw-w64-dev: zlib.h and libz.a in the compiler's own folders
      printf 'Name: zlib\nDescription: zlib\nVersion: 1.2.13\nLibs: -lz\n' > "$pc/zlib.pc" ;;
    i686-linux-gnu)
      if [ ! -f "$deps/zlib/usr/lib/i386-linux-gnu/libz.a" ]; then
        fetch_i386 zlib1g-dev:i386
        rm -rf "$deps/zlib" && mkdir -p "$deps/zlib"
        dpkg-deb -x "$root"/debs/zlib1g-dev_*_i386.deb "$deps/zlib"
      fi
      # Static: the binary then needs no libz.so.1 on the old PC.
      printf 'Name: zlib\nDescription: zlib\nVersion: 1.2.13\nCflags: -I%s\nLibs: %s\n' \
        "$deps/zlib/usr/include" "$deps/zlib/usr/lib/i386-linux-gnu/libz.a" > "$pc/zlib.pc" ;;
  esac
}

# build-cross/wine32: Debian's 32-bit Wine (wine32, libwine:i386, libc6:i386, libgcc-s1:i386)
# unpacked beside a copy of the system's wine64, which starts it for a 32-bit .exe. Wine finds
# its parts from where its loader lies: lib/wine/{wine64,wine,wineserver}, 64-bit DLLs under
# lib/x86_64-linux-gnu/wine (linked to the system's) with i386-windows linked to the 32-bit
# ones (the fake DLLs of syswow64 are made from there). The 32-bit loader's ELF interpreter
# and library path point into the folder (patchelf). zlib1.dll: Wine's user32 needs it; Debian
# copies it in at install time, so it is copied here.
setup_wine32() {
  local w=$root/wine32
  [ -x "$w/usr/lib/wine/wine" ] && [ "$(cat "$w/ready" 2>/dev/null)" = "$w" ] && return 0
  # The 32-bit half must be the version of the system's wine64, which starts it.
  local version
  version=$(dpkg-query -W -f='${Version}' wine64)
  fetch_i386 "wine32:i386=$version" "libwine:i386=$version" libc6:i386 libgcc-s1:i386
  rm -rf "$w" && mkdir -p "$w"
  for name in wine32 libwine libc6 libgcc-s1; do
    dpkg-deb -x "$root"/debs/${name}_*_i386.deb "$w"
  done
  cp /usr/lib/wine/wine64 /usr/lib/wine/wineserver64 "$w/usr/lib/wine/"
  mkdir -p "$w/usr/lib/x86_64-linux-gnu/wine"
  for d in x86_64-unix x86_64-windows; do ln -sfn "/usr/lib/x86_64-linux-gnu/wine/$d" "$w/usr/lib/x86_64-linux-gnu/wine/$d"; done
  ln -sfn "$w/usr/lib/i386-linux-gnu/wine/i386-windows" "$w/usr/lib/x86_64-linux-gnu/wine/i386-windows"
  sed -i "s|/usr/lib/wine/|$w/usr/lib/wine/|g" "$w/usr/lib/wine/wineserver"
  cp /usr/i686-w64-mingw32/lib/zlib1.dll "$w/usr/lib/i386-linux-gnu/wine/i386-windows/"
  patchelf --set-interpreter "$w/lib/ld-linux.so.2" --set-rpath "$w/lib/i386-linux-gnu" "$w/usr/lib/wine/wine"
  echo "$w" > "$w/ready"  # the folder patchelf and sed wrote in: a moved checkout sets up again
}

for t in "${triplets[@]}"; do write_deps "$t"; done
[ $wine32 -eq 0 ] || setup_wine32
