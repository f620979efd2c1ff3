// A program whose start-up check demands SSE2 to AVX2 and FMA (built from
// src/cpu/startup_check.cpp with every RG_BUILD_NEEDS_* set): on a CPU with them it prints
// "started"; on an older one (qemu -cpu Conroe) the check must stop it with exit code 2
// and a message, before main. tools/qemu_old_cpus.sh runs it both ways.
#include <cstdio>

int main() {
  std::puts("started");
  return 0;
}
