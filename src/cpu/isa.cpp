// ISA levels and the start-up choice.
#include "cpu/isa.h"

#include <atomic>
#include <cstdlib>

namespace rg {

namespace {
struct IsaInfo {
  Isa isa;
  const char* name;
};
constexpr IsaInfo kIsas[] = {{Isa::reference, "reference"}, {Isa::sse2, "sse2"},   {Isa::sse3, "sse3"},
                             {Isa::ssse3, "ssse3"},         {Isa::sse41, "sse4.1"}, {Isa::avx, "avx"},
                             {Isa::avx2_fma, "avx2"},       {Isa::avx512, "avx512"}};

struct Startup {
  IsaChoice choice;
  Status status;
};

const Startup& startup() {
  static const Startup s = [] {
    Startup result;
    auto choice = choose_isa(detect_cpu().features, std::getenv("RETROGRAD_ISA"));
    if (choice.ok()) {
      result.choice = choice.value();
    } else {
      result.status = choice.status();
      result.choice.best = result.choice.chosen = best_supported_isa(detect_cpu().features);
    }
    return result;
  }();
  return s;
}

std::atomic<int>& active_level() {
  static std::atomic<int> level{static_cast<int>(startup().choice.chosen)};
  return level;
}
}  // namespace

const char* isa_name(Isa isa) { return kIsas[static_cast<int>(isa)].name; }

Result<Isa> isa_from_name(const std::string& name) {
  for (const auto& info : kIsas)
    if (name == info.name) return info.isa;
  if (name == "sse41") return Isa::sse41;
  if (name == "avx2_fma" || name == "avx2+fma") return Isa::avx2_fma;
  std::string known;
  for (const auto& info : kIsas) known += std::string(known.empty() ? "" : ", ") + info.name;
  return Status::error("unknown ISA level '" + name + "' (" + known + ")");
}

std::vector<Isa> all_isas() {
  std::vector<Isa> isas;
  for (const auto& info : kIsas) isas.push_back(info.isa);
  return isas;
}

bool isa_supported(Isa isa, const CpuFeatures& f) {
  switch (isa) {
    case Isa::reference: return true;
    case Isa::sse2: return f.sse2;
    case Isa::sse3: return f.sse2 && f.sse3;
    case Isa::ssse3: return f.sse2 && f.sse3 && f.ssse3;
    case Isa::sse41: return f.sse2 && f.sse3 && f.ssse3 && f.sse41;
    case Isa::avx: return isa_supported(Isa::sse41, f) && f.avx && f.os_saves_avx;
    case Isa::avx2_fma: return isa_supported(Isa::avx, f) && f.avx2 && f.fma;
    // x86-64-v4 also lists AVX-512CD, which every CPU with BW, DQ and VL has and no kernel uses.
    case Isa::avx512:
      return isa_supported(Isa::avx2_fma, f) && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.os_saves_avx512;
  }
  return false;
}

Isa best_supported_isa(const CpuFeatures& features) {
  Isa best = Isa::reference;
  for (const auto& info : kIsas)
    if (isa_supported(info.isa, features)) best = info.isa;
  return best;
}

Result<IsaChoice> choose_isa(const CpuFeatures& features, const char* cap) {
  IsaChoice choice;
  choice.best = choice.chosen = best_supported_isa(features);
  if (cap == nullptr || *cap == '\0') return choice;
  choice.cap = cap;
  auto wanted = isa_from_name(cap);
  if (!wanted.ok()) return wanted.status().with_context("RETROGRAD_ISA: ");
  if (static_cast<int>(wanted.value()) > static_cast<int>(choice.best)) {
    return Status::error(std::string("RETROGRAD_ISA=") + cap + ": this CPU supports up to " + isa_name(choice.best));
  }
  choice.chosen = wanted.value();
  return choice;
}

const IsaChoice& active_isa_choice() { return startup().choice; }
Status isa_choice_status() { return startup().status; }

void set_active_isa(Isa isa) {
  RG_CHECK(isa_supported(isa, detect_cpu().features), "ISA " << isa_name(isa) << " is not supported here");
  active_level().store(static_cast<int>(isa));
}

Isa active_isa() { return static_cast<Isa>(active_level().load()); }

}  // namespace rg
