// CPUID and XGETBV read by hand, so the ISA dispatcher sees what this CPU and this OS really allow.
// Compiled with baseline flags only (no -mavx): it runs at start-up on any x86 CPU, K8 and Core 2
// included. Off x86 it compiles to an empty CpuInfo.
#include "cpu/cpuid.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#define RG_CPUID_X86 1
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#else
#define RG_CPUID_X86 0
#endif

namespace rg {

#if RG_CPUID_X86
namespace {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// One CPUID query. Callers check the maximum leaf first; sub_leaf matters for leaf 7 only.
CpuidRegs cpuid_query(uint32_t leaf, uint32_t sub_leaf) {
  CpuidRegs regs;
#if defined(_MSC_VER) && !defined(__clang__)
  int out[4] = {0, 0, 0, 0};
  __cpuidex(out, static_cast<int>(leaf), static_cast<int>(sub_leaf));
  regs.eax = static_cast<uint32_t>(out[0]);
  regs.ebx = static_cast<uint32_t>(out[1]);
  regs.ecx = static_cast<uint32_t>(out[2]);
  regs.edx = static_cast<uint32_t>(out[3]);
#else
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid_count(leaf, sub_leaf, a, b, c, d);
  regs.eax = a;
  regs.ebx = b;
  regs.ecx = c;
  regs.edx = d;
#endif
  return regs;
}

// The highest standard (base 0) or extended (base 0x80000000) leaf; 0 when CPUID is missing
// (a 486 without the EFLAGS.ID bit: __get_cpuid_max tests it on i386).
uint32_t cpuid_max_leaf(uint32_t base) {
#if defined(_MSC_VER) && !defined(__clang__)
  return cpuid_query(base, 0).eax;
#else
  return __get_cpuid_max(base, nullptr);
#endif
}

// XCR0, the register-state components the OS saves on a context switch. Call only when
// CPUID.1:ECX.OSXSAVE is set: XGETBV is an illegal instruction otherwise. Written as bytes
// (0F 01 D0) so old assemblers that do not know the mnemonic still build it.
uint64_t read_xcr0() {
#if defined(_MSC_VER) && !defined(__clang__)
  return _xgetbv(0);
#else
  uint32_t lo = 0, hi = 0;
  __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
#endif
}

bool bit(uint32_t reg, int index) { return ((reg >> index) & 1u) != 0; }

// Drops leading/trailing spaces and the NUL padding of the brand string.
std::string trim_spaces(const std::string& text) {
  const size_t first = text.find_first_not_of(' ');
  if (first == std::string::npos) return std::string();
  const size_t last = text.find_last_not_of(' ');
  return text.substr(first, last - first + 1);
}

}  // namespace

CpuInfo detect_cpu() {
  CpuInfo info;
  const uint32_t max_leaf = cpuid_max_leaf(0);
  if (max_leaf == 0) return info;

  // Leaf 0: the vendor string is EBX, EDX, ECX in that order.
  const CpuidRegs leaf0 = cpuid_query(0, 0);
  char vendor[13];
  std::memcpy(vendor + 0, &leaf0.ebx, 4);
  std::memcpy(vendor + 4, &leaf0.edx, 4);
  std::memcpy(vendor + 8, &leaf0.ecx, 4);
  vendor[12] = '\0';
  info.vendor = vendor;

  CpuFeatures& f = info.features;
  if (max_leaf >= 1) {
    const CpuidRegs leaf1 = cpuid_query(1, 0);
    // EAX: stepping 3:0, model 7:4, family 11:8, extended model 19:16, extended family 27:20.
    // The extended family adds only when the base family is 0xF; the extended model is the
    // high nibble of the model only when the base family is 6 or 0xF (Intel and AMD agree).
    const int base_family = static_cast<int>((leaf1.eax >> 8) & 0xF);
    const int base_model = static_cast<int>((leaf1.eax >> 4) & 0xF);
    info.stepping = static_cast<int>(leaf1.eax & 0xF);
    info.family = base_family;
    if (base_family == 0xF) info.family += static_cast<int>((leaf1.eax >> 20) & 0xFF);
    info.model = base_model;
    if (base_family == 0x6 || base_family == 0xF) info.model += static_cast<int>((leaf1.eax >> 16) & 0xF) << 4;

    f.sse2 = bit(leaf1.edx, 26);
    f.sse3 = bit(leaf1.ecx, 0);
    f.ssse3 = bit(leaf1.ecx, 9);
    f.sse41 = bit(leaf1.ecx, 19);
    f.sse42 = bit(leaf1.ecx, 20);
    f.popcnt = bit(leaf1.ecx, 23);

    // AVX state (XMM and YMM, XCR0 bits 1 and 2) must be saved by the OS, else the upper
    // halves are lost on a context switch; AVX-512 also needs opmask, ZMM_Hi256, Hi16_ZMM (5, 6, 7).
    const bool osxsave = bit(leaf1.ecx, 27);
    if (osxsave) {
      const uint64_t xcr0 = read_xcr0();
      f.os_saves_avx = (xcr0 & 0x6) == 0x6;
      f.os_saves_avx512 = f.os_saves_avx && (xcr0 & 0xE0) == 0xE0;
    }
    f.avx = bit(leaf1.ecx, 28) && f.os_saves_avx;
    f.fma = bit(leaf1.ecx, 12) && f.avx;
    f.f16c = bit(leaf1.ecx, 29) && f.avx;
  }

  if (max_leaf >= 7) {
    const CpuidRegs leaf7 = cpuid_query(7, 0);
    f.avx2 = bit(leaf7.ebx, 5) && f.avx;
    f.avx512f = bit(leaf7.ebx, 16) && f.os_saves_avx512;
    f.avx512dq = bit(leaf7.ebx, 17) && f.avx512f;
    f.avx512bw = bit(leaf7.ebx, 30) && f.avx512f;
    f.avx512vl = bit(leaf7.ebx, 31) && f.avx512f;
    f.avx512vnni = bit(leaf7.ecx, 11) && f.avx512f;
  }

  // Brand string: 48 bytes in leaves 0x80000002..0x80000004, NUL-padded, sometimes space-led.
  if (cpuid_max_leaf(0x80000000u) >= 0x80000004u) {
    char brand[49];
    for (uint32_t i = 0; i < 3; ++i) {
      const CpuidRegs regs = cpuid_query(0x80000002u + i, 0);
      std::memcpy(brand + 16 * i + 0, &regs.eax, 4);
      std::memcpy(brand + 16 * i + 4, &regs.ebx, 4);
      std::memcpy(brand + 16 * i + 8, &regs.ecx, 4);
      std::memcpy(brand + 16 * i + 12, &regs.edx, 4);
    }
    brand[48] = '\0';
    info.brand = trim_spaces(std::string(brand));
  }
  return info;
}

#else  // not x86: no CPUID, nothing to report.

CpuInfo detect_cpu() { return CpuInfo(); }

#endif

std::string features_string(const CpuFeatures& features) {
  struct Named {
    bool present;
    const char* name;
  };
  const Named all[] = {
      {features.sse2, "sse2"},     {features.sse3, "sse3"}, {features.ssse3, "ssse3"},
      {features.sse41, "sse4.1"},  {features.sse42, "sse4.2"}, {features.popcnt, "popcnt"},
      {features.avx, "avx"},       {features.avx2, "avx2"}, {features.fma, "fma"},
      {features.f16c, "f16c"},     {features.avx512f, "avx512f"}, {features.avx512bw, "avx512bw"},
      {features.avx512dq, "avx512dq"}, {features.avx512vl, "avx512vl"}, {features.avx512vnni, "avx512vnni"},
  };
  std::string text;
  for (const Named& feature : all) {
    if (!feature.present) continue;
    if (!text.empty()) text += ' ';
    text += feature.name;
  }
  return text;
}

}  // namespace rg
