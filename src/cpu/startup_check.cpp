// Runs before anything else in the program (a priority-101 constructor) and stops with a
// message, not an illegal instruction, when this CPU lacks what the build's baseline code
// was compiled for (SSE2 on i686; more if someone built with -march=...). Compiled with
// -mgeneral-regs-only so this file itself uses no SSE instruction. The RG_BUILD_NEEDS_*
// macros come from meson.build, which reads them off the compiler flags of the build.
#if defined(__i386__) || defined(__x86_64__)
#include <cpuid.h>

#if defined(_WIN32)
#include <io.h>
#include <stdlib.h>
#define RG_WRITE_STDERR(text, size) _write(2, text, size)
#define RG_EXIT(code) _exit(code)
#else
#include <unistd.h>
#define RG_WRITE_STDERR(text, size) write(2, text, size)
#define RG_EXIT(code) _exit(code)
#endif

namespace {

void say(const char* text) {
  unsigned size = 0;
  while (text[size] != '\0') ++size;
  if (RG_WRITE_STDERR(text, size) < 0) return;
}

bool has_bit(unsigned leaf, unsigned sub, int reg, unsigned bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (static_cast<unsigned>(__get_cpuid_max(0, nullptr)) < leaf) return false;  // int in clang's cpuid.h
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
  return (r[reg] >> bit) & 1u;
}

enum { kEax, kEbx, kEcx, kEdx };

__attribute__((constructor(101))) void check_build_isa() {
  struct Need {
    bool needed;
    unsigned leaf;
    int reg;
    unsigned bit;
    const char* name;
  };
  const Need needs[] = {
      {RG_BUILD_NEEDS_SSE2, 1, kEdx, 26, "SSE2"},   {RG_BUILD_NEEDS_SSE3, 1, kEcx, 0, "SSE3"},
      {RG_BUILD_NEEDS_SSSE3, 1, kEcx, 9, "SSSE3"},  {RG_BUILD_NEEDS_SSE4_1, 1, kEcx, 19, "SSE4.1"},
      {RG_BUILD_NEEDS_AVX, 1, kEcx, 28, "AVX"},     {RG_BUILD_NEEDS_AVX2, 7, kEbx, 5, "AVX2"},
      {RG_BUILD_NEEDS_FMA, 1, kEcx, 12, "FMA"},
  };
  bool missing = false;
  for (const Need& need : needs) {
    if (!need.needed || has_bit(need.leaf, 0, need.reg, need.bit)) continue;
    if (!missing) say("retrograd: this build was compiled for instructions this CPU lacks:");
    say(" ");
    say(need.name);
    missing = true;
  }
  if (missing) {
    say(".\nUse a build for the plain x86 baseline (the default: meson setup without -march or -m flags);"
        " it picks faster kernels at run time where the CPU has them.\n");
    RG_EXIT(2);
  }
}

}  // namespace
#endif
