#!/bin/bash
# Runs a 32-bit Linux program as an old CPU: a Core 2 (qemu's core2duo: SSSE3) unless
# RETROGRAD_QEMU_CPU names another qemu model (Opteron_G1: an Athlon 64 / Opteron; qemu's
# model has SSE3).
# Meson's exe_wrapper for tools/cross/i686-linux-gnu.ini: configure checks and tests run through it.
# -syscall,-lm: the 64-bit features of these models, which a 32-bit qemu warns it cannot give.
exec qemu-i386 -cpu "${RETROGRAD_QEMU_CPU:-core2duo},-syscall,-lm" "$@"
