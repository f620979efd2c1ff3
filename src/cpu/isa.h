// Instruction-set levels the kernels are built for, and the choice of one at start-up:
// the best level this CPU and OS support, capped by RETROGRAD_ISA=<level>.
// Baseline code: it runs on any x86 CPU and only reads CPUID results.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "cpu/cpuid.h"

namespace rg {

// Ordered: each level includes the ones before it. avx512 is x86-64-v4's AVX-512F, BW, DQ and VL
// (Skylake-SP and later Xeons, Ice Lake, Zen 4) on top of avx2_fma.
enum class Isa { reference = 0, sse2, sse3, ssse3, sse41, avx, avx2_fma, avx512 };

const char* isa_name(Isa isa);  // "reference", "sse2", ..., "sse4.1", "avx", "avx2", "avx512"
Result<Isa> isa_from_name(const std::string& name);
std::vector<Isa> all_isas();

// The highest level whose instructions the CPU has and whose registers the OS saves.
Isa best_supported_isa(const CpuFeatures& features);
bool isa_supported(Isa isa, const CpuFeatures& features);

struct IsaChoice {
  Isa best = Isa::reference;    // what the CPU could run
  Isa chosen = Isa::reference;  // what runs: best, capped by RETROGRAD_ISA
  std::string cap;              // the RETROGRAD_ISA text, empty when unset
};

// `cap` is the RETROGRAD_ISA value (may be null or empty). A cap above what the CPU has
// is an error (asking for avx2 on a Core 2 must not run, nor silently run something else).
Result<IsaChoice> choose_isa(const CpuFeatures& features, const char* cap);

// The process-wide choice, made once from detect_cpu() and the environment; kernel tables
// are filled from it. An invalid RETROGRAD_ISA is reported by isa_choice_status().
const IsaChoice& active_isa_choice();
Status isa_choice_status();
// Tests and benchmarks switch levels with this (the level must be supported).
void set_active_isa(Isa isa);
Isa active_isa();

}  // namespace rg
