// The subnormal-float mode: one process-wide choice and a generation counter that each thread
// compares with the one it last applied. On x86 the mode is MXCSR, the SSE/AVX control
// register, per thread: FTZ is bit 15, DAZ bit 6.
//
// 32-bit x86 (i686 Linux and Windows): meson.build compiles with -msse2 -mfpmath=sse, so the
// engine's float and double arithmetic is SSE and follows MXCSR as on x86-64. The x87 unit,
// which MXCSR does not govern and which has no flush-to-zero of its own, still does what the
// 32-bit ABI gives it: float results of functions are returned through x87 registers, and
// 32-bit glibc's libm (expf, logf, tanhf...) computes on x87. Such a result can be subnormal
// under `flush` as well; the next SSE operation reads it as 0 (DAZ). Results stay the same
// from run to run; a subnormal passing through x87 may still cost an assist there.
//
// Other CPUs (ARM, POWER...): the engine sets nothing, and their default (IEEE subnormals) is
// what both modes give; the choice is only recorded.
#include "base/float_mode.h"

#include <atomic>
#include <cstdint>

#if defined(__i386__) || defined(__x86_64__) || defined(_M_IX86) || defined(_M_X64)
#define RG_FLOAT_MODE_X86 1
#include <xmmintrin.h>
#endif

namespace rg {

namespace {

std::atomic<int> g_mode{static_cast<int>(Denormals::flush)};
// Bumped by every set_denormals(); starts above 0 so a new thread (generation 0) applies the
// default before its first job.
std::atomic<uint32_t> g_generation{1};
thread_local uint32_t t_applied_generation = 0;

#ifdef RG_FLOAT_MODE_X86
constexpr uint32_t kFlushToZero = 1u << 15;
constexpr uint32_t kDenormalsAreZero = 1u << 6;

// MXCSR_MASK, the MXCSR bits this CPU implements, from FXSAVE's area (bytes 28-31). Writing a
// bit outside it faults (#GP), so DAZ is set only where the mask has it. A mask of 0 means the
// CPU predates the field: 0xFFBF, DAZ absent (Intel SDM vol. 1, 11.6.6).
uint32_t mxcsr_mask() {
#if defined(__GNUC__)
  alignas(16) unsigned char area[512] = {};
  __asm__ __volatile__("fxsave %0" : "=m"(area));
  const uint32_t mask = static_cast<uint32_t>(area[28]) | static_cast<uint32_t>(area[29]) << 8 |
                        static_cast<uint32_t>(area[30]) << 16 | static_cast<uint32_t>(area[31]) << 24;
  return mask != 0 ? mask : 0xFFBFu;
#else
  return 0xFFFFu;  // another compiler: x86-64 only here, and every x86-64 CPU has DAZ
#endif
}
#endif

}  // namespace

const char* denormals_name(Denormals mode) { return mode == Denormals::flush ? "flush" : "keep"; }

Result<Denormals> denormals_from_name(const std::string& name) {
  if (name == "flush") return Denormals::flush;
  if (name == "keep") return Denormals::keep;
  return Status::error("'" + name + "' is not flush or keep");
}

bool cpu_has_denormals_are_zero() {
#ifdef RG_FLOAT_MODE_X86
  static const bool has = (mxcsr_mask() & kDenormalsAreZero) != 0;
  return has;
#else
  return false;
#endif
}

void set_denormals(Denormals mode) {
  g_mode.store(static_cast<int>(mode), std::memory_order_relaxed);
  g_generation.fetch_add(1, std::memory_order_release);
  apply_denormals_on_this_thread();
}

Denormals denormals() { return static_cast<Denormals>(g_mode.load(std::memory_order_relaxed)); }

void apply_denormals_on_this_thread() {
  // The generation first: a set_denormals() between the two loads leaves this thread one
  // generation behind, so it applies again at its next follow.
  t_applied_generation = g_generation.load(std::memory_order_acquire);
#ifdef RG_FLOAT_MODE_X86
  // Without DAZ (the first SSE CPUs) only results are flushed: a subnormal input, from data or
  // from x87 code, is still computed as such, and may still be slow there.
  const uint32_t bits = kFlushToZero | (cpu_has_denormals_are_zero() ? kDenormalsAreZero : 0u);
  const uint32_t csr = _mm_getcsr();
  _mm_setcsr(denormals() == Denormals::flush ? (csr | bits) : (csr & ~(kFlushToZero | kDenormalsAreZero)));
#endif
}

void follow_denormals_on_this_thread() {
  if (g_generation.load(std::memory_order_acquire) != t_applied_generation) apply_denormals_on_this_thread();
}

}  // namespace rg
