// Our own CPU detection (CPUID and XGETBV), baseline code: it runs on any x86 CPU.
// xsimd 8.1's detector misreads SSE2 and never sees AVX (DESIGN.md), so we do not use it.
#pragma once

#include <string>

namespace rg {

struct CpuFeatures {
  bool sse2 = false, sse3 = false, ssse3 = false, sse41 = false, sse42 = false, popcnt = false;
  bool avx = false, avx2 = false, fma = false, f16c = false;
  // AVX-512 foundation and the extensions of x86-64-v4 (byte/word, doubleword/quadword, 128/256-bit
  // forms), and VNNI's int8 dot products (vpdpbusd).
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, avx512vnni = false;
  // The OS saves the wide registers (XGETBV): without it AVX flags from CPUID are unusable.
  bool os_saves_avx = false, os_saves_avx512 = false;
};

struct CpuInfo {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"; empty off x86
  std::string brand;   // "Intel(R) Core(TM)2 Duo CPU E8400 @ 3.00GHz"
  int family = 0, model = 0, stepping = 0;
  CpuFeatures features;  // avx/avx2/fma/f16c/avx512* are reported usable only when the OS saves their state
};

CpuInfo detect_cpu();
// "sse2 sse3 ssse3 sse4.1 sse4.2 popcnt avx avx2 fma f16c avx512f avx512bw avx512dq avx512vl
// avx512vnni": the usable features, in that order.
std::string features_string(const CpuFeatures& features);

}  // namespace rg
