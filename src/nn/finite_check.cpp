// Scans for Inf and NaN by their bits: an exponent of all ones (one pass, vectorisable).
#include "nn/finite_check.h"

#include <cstring>

namespace rg {

namespace {
template <class Bits>
bool finite_bits(const void* data, int64_t n, Bits exponent_mask) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  Bits bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    Bits bits;
    std::memcpy(&bits, bytes + i * sizeof(Bits), sizeof bits);
    bad |= static_cast<Bits>((bits & exponent_mask) == exponent_mask);
  }
  return bad == 0;
}
}  // namespace

std::string NonFiniteUpdate::text(const std::string& owner) const {
  if (gradient_finite) return "the update of " + owner + param + " overflowed (its weights hold an Inf or a NaN)";
  return "the gradient of " + owner + param + " held an Inf or a NaN";
}

NonFiniteUpdate flagged_update(const Param* param) {
  return param != nullptr ? NonFiniteUpdate{param->name, all_finite(param->grad)} : NonFiniteUpdate{};
}

bool all_finite(const Tensor& t) {
  if (!t.defined()) return true;
  switch (t.dtype()) {
    case DType::f32: return finite_bits<uint32_t>(t.raw_data(), t.numel(), 0x7f800000u);
    case DType::f16: return finite_bits<uint16_t>(t.raw_data(), t.numel(), 0x7c00u);
    case DType::bf16: return finite_bits<uint16_t>(t.raw_data(), t.numel(), 0x7f80u);
    case DType::f64: return finite_bits<uint64_t>(t.raw_data(), t.numel(), 0x7ff0000000000000ull);
    default: return true;
  }
}

std::string first_non_finite_output(const Model& model, const Tensor& input) {
  if (!all_finite(input)) return "the input batch";
  const size_t layers = model.layers().size();
  for (size_t i = 0; i < layers; ++i) {
    if (!all_finite(model.activation(i))) {
      return "the output of " + model.layers()[i]->name() + " (layer " + std::to_string(i + 1) + " of " +
             std::to_string(layers) + ")";
    }
  }
  return "";
}

const Param* first_non_finite_value(const std::vector<Param*>& params) {
  for (const Param* p : params)
    if (!all_finite(p->value)) return p;
  return nullptr;
}

}  // namespace rg
