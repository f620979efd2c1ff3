// He: variance 2/fan_in. Glorot: variance 2/(fan_in+fan_out). Uniform bounds are sqrt(3) sigma.
#include "nn/init.h"

#include <cmath>

#include "nn/cfg.h"

namespace rg {

Result<Init> init_from_name(const std::string& name) {
  if (name == "he" || name == "he_uniform" || name == "kaiming") return Init::he_uniform;
  if (name == "he_normal") return Init::he_normal;
  if (name == "glorot" || name == "glorot_uniform" || name == "xavier") return Init::glorot_uniform;
  if (name == "glorot_normal") return Init::glorot_normal;
  if (name == "dcgan") return Init::dcgan_normal;
  if (name == "zeros") return Init::zeros;
  return Status::error("unknown initialiser '" + name + "' (he, he_normal, glorot, glorot_normal, dcgan, zeros)");
}

Result<Init> init_from_section(const CfgSection& section) {
  RG_ASSIGN(const std::string text, section.get_string_or("init", "he"));
  auto init = init_from_name(text);
  if (!init.ok()) return Status::error(section.where("init") + init.status().message());
  return init;
}

const char* init_name(Init init) {
  switch (init) {
    case Init::he_uniform: return "he";
    case Init::he_normal: return "he_normal";
    case Init::glorot_uniform: return "glorot";
    case Init::glorot_normal: return "glorot_normal";
    case Init::dcgan_normal: return "dcgan";
    case Init::zeros: return "zeros";
  }
  return "?";
}

void initialise(const Tensor& w, Init init, int64_t fan_in, int64_t fan_out, Rng& rng) {
  double sigma = 0;
  bool uniform = true;
  switch (init) {
    case Init::he_uniform: sigma = std::sqrt(2.0 / static_cast<double>(fan_in)); break;
    case Init::he_normal: sigma = std::sqrt(2.0 / static_cast<double>(fan_in)), uniform = false; break;
    case Init::glorot_uniform: sigma = std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)); break;
    case Init::glorot_normal:
      sigma = std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), uniform = false;
      break;
    case Init::dcgan_normal: sigma = 0.02, uniform = false; break;
    case Init::zeros: break;
  }
  const double bound = std::sqrt(3.0) * sigma;
  const int64_t n = w.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double v = init == Init::zeros ? 0.0 : uniform ? rng.uniform(-bound, bound) : sigma * rng.normal();
    if (w.dtype() == DType::f64) {
      w.data<double>()[i] = v;
    } else {
      w.f32()[i] = static_cast<float>(v);
    }
  }
}

}  // namespace rg
