// Fake quantization for QAT: the points, the moving ranges, the weight grid.
#include "quant/fake_quant.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "nn/layer_registry.h"
#include "ops/quant_params.h"

namespace rg {

namespace {
// A weight the export quantizes (a GEMM layer's ".weight"): QAT keeps its f32 master.
bool has_master(const Layer& layer, const Param& p) {
  return layer_kind_of(layer).int8 == Int8Role::gemm && p.name.size() > 7 &&
         p.name.compare(p.name.size() - 7, 7, ".weight") == 0;
}
}  // namespace

FakeQuantizer::FakeQuantizer(Model& model, int weight_bits, int activation_bits, double averaging)
    : weight_bits_(weight_bits), activation_bits_(activation_bits), averaging_(averaging) {
  RG_CHECK(weight_bits >= kMinWeightBits && weight_bits <= kMaxWeightBits, "FakeQuantizer: " << weight_bits << " weight bits");
  RG_CHECK(activation_bits >= 2 && activation_bits <= 8, "FakeQuantizer: " << activation_bits << " activation bits");
  const auto& layers = model.layers();
  const size_t points = layers.size() + 1;
  rounded_.assign(points, true);
  tracked_.assign(points, true);
  seen_.assign(points, false);
  lo_.assign(points, 0.0f);
  hi_.assign(points, 0.0f);
  for (size_t i = 0; i < layers.size(); ++i) {
    // Not rounded where the export keeps the input's grid or fuses the next layer into this
    // one's stage (int8_fuses_into_previous): in a graph model an output several layers read
    // ends its stage, and is rounded like any other.
    rounded_[i + 1] = !int8_keeps_input_grid(layers[i]->kind()) && !int8_fuses_into_previous(model, i + 1);
    tracked_[i + 1] = rounded_[i + 1];
    if (i + 1 == layers.size()) {  // the output: its range is tracked for the export, its values left alone
      rounded_[i + 1] = false;
      tracked_[i + 1] = true;
    }
    for (Param* p : layers[i]->params())
      if (has_master(*layers[i], *p)) weights_.push_back(p);
  }
}

int64_t FakeQuantizer::master_bytes_of(const Model& model) {
  int64_t bytes = 0;
  for (const auto& layer : model.layers())
    for (const Param* p : layer->params())
      if (has_master(*layer, *p)) bytes += static_cast<int64_t>(p->value.bytes());
  return bytes;
}

void FakeQuantizer::on_values(size_t point, const Tensor& values, const LayerContext& ctx) {
  if (!tracked_[point]) return;
  float* v = values.f32();
  const int64_t n = values.numel();
  if (ctx.training) {
    float lo = v[0], hi = v[0];
    for (int64_t i = 1; i < n; ++i) {
      lo = std::min(lo, v[i]);
      hi = std::max(hi, v[i]);
    }
    const auto a = static_cast<float>(averaging_);
    lo_[point] = seen_[point] ? lo_[point] + a * (lo - lo_[point]) : lo;
    hi_[point] = seen_[point] ? hi_[point] + a * (hi - hi_[point]) : hi;
    seen_[point] = true;
  }
  if (!rounded_[point] || !seen_[point]) return;  // nothing learned yet: the values pass unchanged
  const QuantParams q = activation_params(lo_[point], hi_[point], activation_bits_);
  const float inverse = 1.0f / q.scale, zero = static_cast<float>(q.zero_point);
  const float grid_lo = static_cast<float>(q.lo), grid_hi = static_cast<float>(q.hi);
  for (int64_t i = 0; i < n; ++i) {
    const float level = std::clamp(std::nearbyint(v[i] * inverse) + zero, grid_lo, grid_hi);
    v[i] = q.scale * (level - zero);
  }
}

Status FakeQuantizer::reserve() {
  masters_.clear();
  for (Param* p : weights_) {
    RG_ASSIGN(Tensor copy, p->value.clone(p->name + " f32 master (QAT)"));
    masters_.push_back(copy);
  }
  return Status();
}

int64_t FakeQuantizer::master_bytes() const {
  int64_t bytes = 0;
  for (const Param* p : weights_) bytes += static_cast<int64_t>(p->value.bytes());
  return bytes;
}

void FakeQuantizer::quantize_weights() {
  RG_CHECK(masters_.size() == weights_.size(), "FakeQuantizer::reserve() before quantize_weights()");
  for (size_t w = 0; w < weights_.size(); ++w) {
    const Tensor& value = weights_[w]->value;
    masters_[w].copy_from(value);
    const int64_t outputs = value.shape()[value.shape().rank() - 1], depth = value.numel() / outputs;
    float* data = value.f32();
    const double qmax = weight_qmax(weight_bits_);
    for (int64_t j = 0; j < outputs; ++j) {  // as the export: weight_channel_step per channel
      const double scale = weight_channel_step(data + j, depth, outputs, weight_bits_);
      if (scale == 0) continue;
      for (int64_t p = 0; p < depth; ++p) {
        float& x = data[p * outputs + j];
        x = static_cast<float>(std::clamp(std::nearbyint(x / scale), -qmax, qmax) * scale);
      }
    }
  }
}

void FakeQuantizer::restore_weights() {
  for (size_t w = 0; w < masters_.size(); ++w) weights_[w]->value.copy_from(masters_[w]);
}

std::vector<std::pair<float, float>> FakeQuantizer::ranges() const {
  std::vector<std::pair<float, float>> out;
  for (size_t p = 0; p < lo_.size(); ++p) out.emplace_back(lo_[p], hi_[p]);
  return out;
}

std::string FakeQuantizer::ranges_text() const {
  std::ostringstream os;
  for (size_t p = 0; p < lo_.size(); ++p) {
    char item[64];
    if (seen_[p]) {
      std::snprintf(item, sizeof item, "%s%.9g:%.9g", p == 0 ? "" : ",", lo_[p], hi_[p]);
    } else {
      std::snprintf(item, sizeof item, "%s-", p == 0 ? "" : ",");
    }
    os << item;
  }
  return os.str();
}

Status FakeQuantizer::set_ranges_text(const std::string& text) {
  std::vector<bool> seen;
  std::vector<float> lo, hi;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    float a = 0, b = 0;
    char tail = 0;
    if (item == "-") {
      seen.push_back(false);
    } else if (std::sscanf(item.c_str(), "%g:%g%c", &a, &b, &tail) == 2 && std::isfinite(a) && std::isfinite(b) &&
               a <= b) {
      seen.push_back(true);
    } else {
      return Status::error("QAT range " + std::to_string(seen.size() + 1) + " '" + item +
                           "' is not lo:hi with finite lo <= hi, nor '-'");
    }
    lo.push_back(a);
    hi.push_back(b);
  }
  if (seen.size() != seen_.size()) {
    return Status::error("QAT ranges: " + std::to_string(seen.size()) + " given, the model has " +
                         std::to_string(seen_.size()) + " points");
  }
  seen_ = seen;
  lo_ = lo;
  hi_ = hi;
  return Status();
}

Result<std::unique_ptr<Model>> qat_copy_of(Model& trained, uint64_t seed) {
  RG_ASSIGN(std::unique_ptr<Model> copy, Model::from_cfg(trained.cfg()));
  RG_TRY(copy->init(seed));  // allocates; the values are overwritten below
  std::vector<Param*> from = trained.params(), to = copy->params();
  for (Param* p : trained.buffers()) from.push_back(p);
  for (Param* p : copy->buffers()) to.push_back(p);
  for (size_t i = 0; i < from.size(); ++i) to[i]->value.copy_from(from[i]->value);
  return copy;
}

}  // namespace rg
