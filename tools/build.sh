#!/bin/bash
# Configures (once) and builds the optimised build in build/. Usage: bash tools/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release >/dev/null
fi
# Quiet when it builds; the compiler's messages when it does not (ninja prints them on stdout).
ninja -C build > build/build.log || { tail -n 60 build/build.log; exit 1; }
