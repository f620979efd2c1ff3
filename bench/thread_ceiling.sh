#!/bin/bash
# The machine's own ceiling on parallel efficiency (bench/thread_ceiling.cpp says what it runs):
# compiled here with g++ and run with this script's arguments, e.g.
#   bash bench/thread_ceiling.sh --cpus 3-6 --threads 1,2,4 --rounds 5
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
g++ -O3 -std=c++17 -pthread bench/thread_ceiling.cpp -o build/thread_ceiling
exec build/thread_ceiling "$@"
