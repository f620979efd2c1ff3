#!/bin/bash
# Exits 0 when this x86-64 kernel runs 32-bit x86 programs, 1 when it does not (a kernel built
# without IA-32 emulation, or with it switched off, says "Exec format error": CI's machine at
# stop 60), 2 with a message when it cannot tell (the probe not written, or failing otherwise: a
# folder mounted noexec). tools/cross_test.sh and tools/cross_build.sh ask it before running an
# i686 program directly or under the 32-bit Wine, neither of which can start on such a kernel;
# only a 1 leaves those runs out, so a probe that could not run never hides them.
# The probe is the smallest i386 ELF program there is, written here byte by byte so that it needs
# no 32-bit compiler or library: a 52-byte ELF header, one 32-byte program header that loads the
# file at 0x08048000, and 9 bytes of code at 0x08048054: mov eax, 1 (exit); xor ebx, ebx; int 0x80.
# Usage: bash tools/cross/kernel_runs_32bit.sh [FOLDER]   (the probe is written there and removed;
#        default build-cross: /tmp may be mounted noexec)
#   env RG_KERNEL_RUNS_32BIT=no: answer no without asking (to try that path on a kernel that has them)
set -uo pipefail
cannot_tell() { echo "kernel_runs_32bit.sh: $*" >&2; exit 2; }
case "${RG_KERNEL_RUNS_32BIT:-}" in
  "") ;;
  no) exit 1 ;;
  *) cannot_tell "RG_KERNEL_RUNS_32BIT='$RG_KERNEL_RUNS_32BIT': only 'no' (or unset) is understood" ;;
esac
[ $# -le 1 ] || cannot_tell "one FOLDER at most (got $#)"
folder=${1:-build-cross}
mkdir -p "$folder" || cannot_tell "cannot make the folder $folder"
probe=$(mktemp "$folder/kernel-runs-32bit.XXXXXX") || cannot_tell "cannot write a probe in $folder"
trap 'rm -f "$probe"' EXIT
elf_header='\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00'  # 32-bit, little-endian, version 1
elf_header+='\x02\x00\x03\x00\x01\x00\x00\x00\x54\x80\x04\x08'        # executable, i386, entry 0x08048054
elf_header+='\x34\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'        # program headers at 52, no sections
elf_header+='\x34\x00\x20\x00\x01\x00\x00\x00\x00\x00\x00\x00'        # sizes: 52, 32 a program header, 1 of it
program_header='\x01\x00\x00\x00\x00\x00\x00\x00\x00\x80\x04\x08\x00\x80\x04\x08'  # load offset 0 at 0x08048000
program_header+='\x5d\x00\x00\x00\x5d\x00\x00\x00\x05\x00\x00\x00\x00\x10\x00\x00'  # 93 bytes, read+execute
code='\xb8\x01\x00\x00\x00\x31\xdb\xcd\x80'
printf "$elf_header$program_header$code" > "$probe" && chmod +x "$probe" || cannot_tell "cannot write the probe $probe"
said=$(export LC_ALL=C; "$probe" 2>&1) && exit 0  # LC_ALL=C: bash's message below in English
case "$said" in
  *"Exec format error"*) exit 1 ;;
  *) cannot_tell "the probe $probe did not run: ${said:-no message}" ;;
esac
