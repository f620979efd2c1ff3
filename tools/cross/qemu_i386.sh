#!/bin/bash
# Runs a 32-bit Linux program as an old CPU: a Core 2 (qemu's core2duo: SSSE3) unless
# RETROGRAD_QEMU_CPU names another qemu model (Opteron_G1: an Athlon 64 / Opteron; qemu's
# model has SSE3). With RETROGRAD_I686_DIRECT=1 it runs the program on this CPU instead, as the
# x86-64 kernel runs 32-bit programs (with libc6-i386's loader, which tools/setup_cross.sh
# installs; not the cross sysroot's loader named on the command line, which would make itself
# /proc/self/exe: the study's children are started from there): 32-bit code at native speed,
# for the suite whose kernels a level chosen by RETROGRAD_ISA stands for an old CPU's
# (tools/cross_test.sh).
# Meson's exe_wrapper for tools/cross/i686-linux-gnu.ini: configure checks and tests run through it.
# -syscall,-lm: the 64-bit features of these models, which a 32-bit qemu warns it cannot give.
if [ "${RETROGRAD_I686_DIRECT:-}" = 1 ]; then
  exec "$@"
fi
exec qemu-i386 -cpu "${RETROGRAD_QEMU_CPU:-core2duo},-syscall,-lm" "$@"
