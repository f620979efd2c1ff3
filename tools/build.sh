#!/bin/bash
# Configures (once) and builds the optimised build in build/. Usage: bash tools/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release >/dev/null
fi
ninja -C build >/dev/null
