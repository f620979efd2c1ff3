// Which algorithm each Conv2D left to `auto` runs (no cfg `algorithm`; an rcl's convolutions
// too): Winograd F(4x4, 3x3) or the gathered GEMM, chosen by measuring on this machine at first
// use, never assumed: the layer's forward and backward on the step's micro-batch (at most 64
// samples of it) with each, on one thread, the median of 3 runs after a warm-up; Winograd where
// it is at least 5% faster. The timings are cached on disk per CPU, ISA level, layer shape and
// timed batch (cache_folder()/conv-algorithms.txt), so later runs here choose the same without
// measuring, whatever their thread count; a checkpoint stores the choices (setting
// "conv_algorithms"), and resuming or evaluating it runs what training ran, whatever the cache
// holds. Results depend on the choice (Winograd rounds differently), never on the thread count.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "nn/conv.h"
#include "nn/model.h"

namespace rg {

struct ConvChoice {
  std::string layer;  // "conv2", "rcl1.ff"
  ConvAlgorithm algorithm = ConvAlgorithm::gemm;
  double gemm_ms = 0, winograd_ms = 0;  // forward + backward of a micro-batch (0: not timed)
  std::string source;                   // "measured", "cached", or why nothing was timed
};

// The model's Conv2D layers whose cfg leaves the algorithm to auto and for which Winograd is a
// candidate (Conv2D::winograd_candidate: 3x3, stride 1, pad <= 2, at least 8 input channels).
std::vector<Conv2D*> auto_convs(Model& model);

// Chooses for each of auto_convs from the cache, else by measuring on min(batch, 64) samples in `ctx`
// (then written to the cache; a cache that cannot be read or written is measured around and
// said so in the choices' source). The GEMM without measuring where Winograd cannot run:
// int8 training's products (ctx.gemm), `why_gemm` non-empty (it becomes the source). Measuring
// overwrites the layers' gradients (the next step overwrites them again).
Result<std::vector<ConvChoice>> choose_conv_algorithms(Model& model, int64_t batch, const LayerContext& ctx,
                                                       const std::string& why_gemm = "");

// The choices as a checkpoint keeps them: "conv2=winograd,conv3=gemm" (auto_convs' order).
std::string conv_algorithms_text(Model& model);
// Sets auto_convs from such text, each named exactly once; nothing changes on an error, which
// starts with `where`.
Status set_conv_algorithms(Model& model, const std::string& text, const std::string& where);
// For the log: "conv2 winograd (gemm 8.1 ms, winograd 3.2 ms, measured), ...".
std::string conv_choices_text(const std::vector<ConvChoice>& choices);

}  // namespace rg
