// libFuzzer target: model cfg files (nn/cfg.h, Model::from_cfg; a GAN file's [gan] section,
// train/gan.h). The text is parsed and the model built (every shape is checked there); one of
// up to 1 M parameters gets them allocated and, when a sample costs at most 10 MFLOP, one zero
// sample run forward and backward: shape rules that let a wrong size through show up as
// out-of-bounds accesses under AddressSanitizer. Allocations are counted against a 256 MiB
// budget, so a cfg asking for more must be refused with a message.
#include <cstdint>
#include <cstring>

#include "base/memory.h"
#include "fuzz_input.h"
#include "nn/model.h"
#include "train/gan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rg::host_memory().set_budget(int64_t{256} << 20);
  auto cfg = rg::parse_cfg(std::string(reinterpret_cast<const char*>(data), size), "fuzz.cfg");
  rg::fuzz::report("parse", cfg.status());
  if (!cfg.ok()) return 0;
  if (!cfg.value().sections.empty() && cfg.value().sections.front().kind() == "gan") {
    // A GAN file names its two networks: presets, or files beside it. Only names without a
    // folder are followed, from an empty folder of this run's own: a fuzz input must not make
    // the target read /dev/stdin or the files of wherever it was started.
    static const bool in_scratch = chdir(rg::fuzz::scratch_folder().c_str()) == 0;
    const rg::CfgSection& gan = cfg.value().sections.front();
    for (const char* key : {"generator", "discriminator"}) {
      auto name = gan.get_string_or(key, "");
      if (!in_scratch || !name.ok() || name.value().find_first_of("/\\") != std::string::npos) return 0;
    }
    rg::fuzz::report("gan", rg::gan_pair_from_cfg(cfg.value()).status());
    return 0;
  }
  auto built = rg::Model::from_cfg(cfg.value());
  rg::fuzz::report("build", built.status());
  if (!built.ok()) return 0;
  rg::Model& model = *built.value();
  // Large models are real (catdog: 21 M parameters) but drawing their weights takes seconds
  // under the sanitizers: what a fuzz input can reach is the shape rules, checked by now.
  if (model.param_count() > 1'000'000) return 0;
  const rg::Status init = model.init(7);
  rg::fuzz::report("init", init);
  if (!init.ok() || model.forward_flops_per_sample() > 10'000'000) return 0;
  const rg::Status reserved = model.reserve(1);
  rg::fuzz::report("reserve", reserved);
  if (!reserved.ok()) return 0;
  const rg::Shape& input = model.input_shape();
  int64_t dims[rg::Shape::kMaxRank] = {1};
  if (input.rank() + 1 > rg::Shape::kMaxRank) return 0;
  for (int i = 0; i < input.rank(); ++i) dims[i + 1] = input[i];
  auto x = rg::Tensor::zeros(rg::Shape::from_dims(dims, input.rank() + 1), rg::DType::f32, "the fuzz sample");
  if (!x.ok()) return 0;
  rg::LayerContext ctx;
  ctx.training = true;
  model.forward(x.value(), ctx);
  rg::Tensor output_grad = model.output_grad();  // what a loss would write: zeros do
  std::memset(output_grad.raw_data(), 0, output_grad.bytes());
  model.zero_grads();
  model.backward(ctx);
  rg::fuzz::report("forward and backward", rg::Status());
  return 0;
}
