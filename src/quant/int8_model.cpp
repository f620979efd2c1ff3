// Post-training quantization: calibration, BN folding, weight quantization, and the grouping of
// the model's layers into stages (int8_stages.h); the Int8Model that runs them.
#include "quant/int8_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "base/check.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dense.h"
#include "nn/layer_registry.h"
#include "nn/pooling.h"
#include "ops/fixed_point.h"
#include "quant/int8_stages.h"
#include "quant/int8_winograd.h"
#include "quant/qs8_gemm.h"

namespace rg {

Int8Model::~Int8Model() = default;

namespace {

// A conv's or dense layer's weights w [k x n] and bias [n] (f32 after BN folding) -> int8
// weights q [k x n] on the grid of `bits` (weight_channel_step) and the requantization; the error says why the
// layer cannot run in int8.
Status quantize_layer(int64_t k, const std::vector<double>& w, const std::vector<double>& bias, int bits,
                      QuantParams in, QuantParams out, Qs8Clamp clamp, const std::string& name,
                      std::vector<int8_t>* q_out, Qs8OutputStage* o_out) {
  const int64_t n = static_cast<int64_t>(bias.size());
  std::vector<int8_t>& q = *q_out;
  q.assign(static_cast<size_t>(k * n), 0);
  Qs8OutputStage& o = *o_out;
  o = Qs8OutputStage();
  o.zero_point = out.zero_point;
  o.lo = clamp.lo;
  o.hi = clamp.hi;
  const double qmax = weight_qmax(bits);
  for (int64_t j = 0; j < n; ++j) {
    const double step = weight_channel_step(w.data() + j, k, n, bits);
    const double scale = step > 0 ? step : 1.0;
    int64_t column_sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const double v = std::nearbyint(w[static_cast<size_t>(p * n + j)] / scale);
      const int8_t qv = static_cast<int8_t>(std::clamp(v, -1.0 * qmax, 1.0 * qmax));
      q[static_cast<size_t>(p * n + j)] = qv;
      column_sum += qv;
    }
    const double product_scale = static_cast<double>(in.scale) * scale;
    const double multiplier = product_scale / out.scale;
    if (!(multiplier < 1.0)) {
      return Status::error(name + ": output channel " + std::to_string(j) + "'s requantization multiplier " +
                           std::to_string(multiplier) + " is not below 1");
    }
    const double bias_q = std::nearbyint(bias[static_cast<size_t>(j)] / product_scale);
    const double folded = bias_q - static_cast<double>(in.zero_point) * static_cast<double>(column_sum);
    // |sum of products| <= k * 128 * 127: with the bias it must stay inside int32.
    if (std::fabs(folded) + static_cast<double>(k) * 128 * 127 >= 2147483647.0) {
      return Status::error(name + ": output channel " + std::to_string(j) + "'s int32 bias " +
                           std::to_string(folded) + " leaves no room for the sums");
    }
    const QuantMultiplier m = quantize_multiplier(multiplier);
    o.bias.push_back(static_cast<int32_t>(folded));
    o.multiplier.push_back(m.multiplier);
    o.shift.push_back(m.shift);
  }
  pad_columns(&o);
  return Status();
}

// A conv's or dense layer's weight [k x n] and bias [n] in double, with a following BN folded in.
void folded_weights(const Tensor& weight, const Tensor& bias, const BatchNorm* bn, std::vector<double>* w,
                    std::vector<double>* b) {
  const int64_t k = weight.shape()[0], n = weight.shape()[1];
  w->assign(weight.f32(), weight.f32() + k * n);
  b->assign(static_cast<size_t>(n), 0.0);
  if (bias.defined())
    for (int64_t j = 0; j < n; ++j) (*b)[static_cast<size_t>(j)] = bias.f32()[j];
  if (bn == nullptr) return;
  for (int64_t j = 0; j < n; ++j) {
    const size_t u = static_cast<size_t>(j);
    const double factor = bn->gamma().f32()[j] / std::sqrt(static_cast<double>(bn->running_var().f32()[j]) + bn->eps());
    for (int64_t p = 0; p < k; ++p) (*w)[static_cast<size_t>(p * n + j)] *= factor;
    (*b)[u] = ((*b)[u] - bn->running_mean().f32()[j]) * factor + bn->beta().f32()[j];
  }
}

// An int8 GEMM stage's layers: the conv or dense layer at its head and those after it that fuse
// in by their rows' rules (nn/layer_registry.h): a batch norm folded into the weights, a relu
// or relu6 as the requantization's clamp.
struct GemmGroup {
  size_t end = 0;  // its last layer
  const BatchNorm* bn = nullptr;
  const Int8Clamp* clamp = nullptr;  // the fused clamp's row's range; none: the whole grid
};

// A stage's int8 clamp on the grid of its output `out`: a fused clamp's range, else the whole
// grid (all of int8, or the narrower one of fewer activation bits).
Qs8Clamp stage_clamp(const Int8Clamp* clamp, QuantParams out) {
  return clamp == nullptr ? Qs8Clamp{out.lo, out.hi} : qs8_clamp(out, clamp->lo, clamp->hi);
}

GemmGroup gemm_group(const Model& model, size_t head) {
  const auto& layers = model.layers();
  GemmGroup group;
  group.end = head;
  while (int8_fuses_into_previous(model, group.end + 1)) {
    const Layer* next = layers[++group.end].get();
    const LayerKind& row = layer_kind_of(*next);
    switch (row.fusion) {
      case Int8Fusion::fold_affine:
        RG_CHECK(group.bn == nullptr && dynamic_cast<const BatchNorm*>(next) != nullptr,
                 "kind " << next->kind() << " folds into an int8 stage: one batch norm a stage");
        group.bn = static_cast<const BatchNorm*>(next);
        break;
      case Int8Fusion::clamp:
        RG_CHECK(group.clamp == nullptr, "kind " << next->kind() << " clamps an int8 stage: one clamp a stage");
        group.clamp = &row.clamp;
        break;
      case Int8Fusion::none: RG_CHECK(false, "kind " << next->kind() << " is fused in int8 without a fusion"); break;
    }
  }
  return group;
}

// A gemm-role layer's geometry (dense: the 1x1 conv of a [1, 1, inputs] image) and its weight
// and bias in double with the group's batch norm folded in (a depthwise conv's weight
// [kernel^2 x channels]: its channels are its columns, as a conv's filters are).
ConvGeometry gemm_weights(const Layer& layer, const BatchNorm* bn, std::vector<double>* w, std::vector<double>* b) {
  if (const auto* conv = dynamic_cast<const ConvLayer*>(&layer); conv != nullptr) {  // conv, depthwise_conv
    // A transposed conv's weight is [c, k*k x filters], not a GEMM's over patches (its role is f32).
    RG_CHECK(dynamic_cast<const ConvTranspose2D*>(&layer) == nullptr, "conv_transpose has no int8 GEMM weights");
    folded_weights(conv->weight(), conv->bias(), bn, w, b);
    return conv->geometry();
  }
  const auto* dense = dynamic_cast<const Dense*>(&layer);
  RG_CHECK(dense != nullptr, "kind " << layer.kind() << " has the int8 role gemm but no int8 weights here");
  folded_weights(dense->weight(), dense->bias(), bn, w, b);
  auto pointwise = conv_geometry(1, 1, dense->inputs(), 1, 1, 0);
  RG_CHECK(pointwise.ok(), "a dense layer's 1x1 geometry");
  return pointwise.value();
}

// The window of a layer of the int8 role max_pool.
const ConvGeometry& pool_geometry(const Layer& layer) {
  const auto* pool = dynamic_cast<const Pool2D*>(&layer);
  RG_CHECK(pool != nullptr, "kind " << layer.kind() << " has the int8 role max_pool but is no pooling");
  return pool->geometry();
}

// The activation parameters at each point of a model (0 its input, i + 1 layer i's output):
// from ranges learned by QAT (Int8Options::ranges), else from the ranges observed running the
// calibration samples through the model.
class Int8Ranges {
 public:
  Int8Ranges(const Int8Options& options, size_t layers)
      : options_(options), count_(layers), learned_(!options.ranges.empty()), observers_(layers + 1) {}

  // Checks the learned ranges, or runs the first calibration batches and observes every point.
  Status observe(Model& model, const Tensor& calibration, int64_t batch, ThreadPool* pool) {
    if (learned_ && options_.ranges.size() != count_ + 1) {
      return Status::error("int8 export: " + std::to_string(options_.ranges.size()) + " learned ranges for " +
                           std::to_string(count_ + 1) + " points");
    }
    const int64_t samples = learned_ ? 0 : std::min(calibration.shape()[0], batch * options_.calibration_batches);
    if (samples <= 0 && !learned_) return Status::error("int8 calibration needs at least one sample");
    if (!learned_) RG_TRY(model.reserve(std::min(batch, samples)));
    LayerContext ctx{pool, false};
    for (int64_t begin = 0; begin < samples; begin += batch) {
      const Tensor x = calibration.rows(begin, std::min(samples, begin + batch));
      model.forward(x, ctx);
      observers_[0].observe(x.f32(), x.numel());
      for (size_t i = 0; i < count_; ++i) {
        const Tensor a = model.activation(i);
        observers_[i + 1].observe(a.f32(), a.numel());
      }
    }
    return Status();
  }

  // Point `point`'s grid: Int8Options::activation_bits, but the model's output keeps 8 (it is
  // dequantized; QAT does not round it either).
  QuantParams params_of(size_t point) const {
    const bool model_output = point == count_;
    const int bits = model_output ? 8 : options_.activation_bits;
    if (learned_) return activation_params(options_.ranges[point].first, options_.ranges[point].second, bits);
    float lo = 0, hi = 0;
    observers_[point].range(model_output ? CalibrationMethod::minmax : options_.calibration, options_.percentile, &lo,
                            &hi);
    return activation_params(lo, hi, bits);
  }

 private:
  const Int8Options& options_;
  size_t count_;
  bool learned_;  // by QAT: no calibration
  std::vector<RangeObserver> observers_;
};

// The names of the layers --keep-f32 keeps f32; "first" and "last" name the first and last GEMM layers.
Result<std::set<std::string>> layers_kept_f32(const std::vector<std::unique_ptr<Layer>>& layers,
                                              const Int8Options& options) {
  std::set<std::string> keep = options.keep_f32;
  std::vector<size_t> gemm_layers;
  for (size_t i = 0; i < layers.size(); ++i)
    if (layer_kind_of(*layers[i]).int8 == Int8Role::gemm) gemm_layers.push_back(i);
  for (const std::string& name : options.keep_f32) {
    if (name == "first" || name == "last") {
      if (!gemm_layers.empty()) keep.insert(layers[name == "first" ? gemm_layers.front() : gemm_layers.back()]->name());
      continue;
    }
    bool found = false;
    for (const auto& layer : layers) found = found || layer->name() == name;
    if (!found) return Status::error("--keep-f32: the model has no layer '" + name + "'");
  }
  return keep;
}

// Int8Model::quantize's stages, made layer by layer (or fused group by group) in cfg order: each
// is planned (Int8StagePlan), then made from its plan. Every point of the model (0 its input,
// i + 1 layer i's output) is held by a stage's output, in int8 or in f32; a stage reads the
// points of its layer's inputs, converted (quantize, dequantize) once where a point is needed
// in the other domain, so a point several layers read (a graph model) is converted once.
struct Int8StageBuilder {
  Int8StageBuilder(Model& m, const Int8Options& o, const Int8Ranges& r, const std::set<std::string>& k, Isa level)
      : model(m), options(o), ranges(r), keep(k), isa(level), points(m.layers().size() + 1) {
    points[0].shape = m.input_shape();
  }
  static constexpr int kNone = -2;
  struct Point {
    int stage = -1;     // the stage whose output holds it; -1: the model's input
    bool int8 = false;  // held in int8 with `params`, else f32
    QuantParams params;
    size_t observer = 0;  // the point whose range quantizes it (an identity's output is its input's)
    Shape shape;          // one sample, as its stage holds it
    int as_f32 = kNone, as_int8 = kNone;  // its conversions, once made
  };
  Model& model;
  const Int8Options& options;
  const Int8Ranges& ranges;
  const std::set<std::string>& keep;
  Isa isa;
  std::vector<Point> points;
  std::vector<Int8StagePlan> plans;  // stages[i] was made from plans[i]
  std::vector<std::unique_ptr<Int8Stage>> stages;
  std::vector<LayerPrecision> precisions;

  int push(Int8StagePlan plan, std::unique_ptr<Int8Stage> stage) {
    plan.out_shape = stage->out_shape;
    plans.push_back(std::move(plan));
    stages.push_back(std::move(stage));
    return static_cast<int>(stages.size()) - 1;
  }
  int add(Int8StagePlan plan) {
    auto stage = make_int8_stage(plan, isa);
    RG_CHECK(stage.ok(), "int8 stage: " << stage.status().message());  // only a gemm's can fail
    return push(std::move(plan), stage.take());
  }
  // The point layer i's k-th input reads.
  size_t input_point(size_t i, size_t k = 0) const { return static_cast<size_t>(model.layer_inputs(i)[k] + 1); }
  void set_point(size_t p, int stage, bool int8, QuantParams params) {
    points[p] = Point();
    points[p].stage = stage;
    points[p].int8 = int8;
    points[p].params = params;
    points[p].observer = p;
    points[p].shape = plans[static_cast<size_t>(stage)].out_shape;
  }
  // The parameters point p has in int8: its own, or those quantizing it would use.
  QuantParams int8_params(size_t p) const { return points[p].int8 ? points[p].params : ranges.params_of(points[p].observer); }
  // The stage holding point p in f32 / in int8 (int8_params), a conversion added the first time.
  int f32_of(size_t p) { return converted(p, false); }
  int int8_of(size_t p) { return converted(p, true); }
  int converted(size_t p, bool int8);
  void add_f32_layer(size_t i, const std::string& note);
  // Layer i's stage (or its fused group's, or none for an identity); returns the last layer it took.
  size_t add_layer(size_t i);
  size_t add_gemm_group(size_t i);
  size_t add_int8_add(size_t i);
  void choose_gemm_path(size_t end, const ConvGeometry& g, bool is_conv, size_t filters, Int8StagePlan* plan) const;
  void note_gemm_group(size_t i, size_t end, bool pooled, Int8GemmPath path);
};

int Int8StageBuilder::converted(size_t p, bool int8) {
  if (points[p].int8 == int8) return points[p].stage;
  int& made = int8 ? points[p].as_int8 : points[p].as_f32;
  if (made == kNone) {
    Int8StagePlan plan;
    plan.kind = int8 ? Int8StageKind::quantize : Int8StageKind::dequantize;
    plan.params = int8_params(p);
    plan.out_shape = points[p].shape;
    plan.inputs = {points[p].stage};
    plan.name = p == 0 ? "input" : model.layers()[p - 1]->name();
    made = add(std::move(plan));
  }
  return made;
}

void Int8StageBuilder::add_f32_layer(size_t i, const std::string& note) {
  const auto& layers = model.layers();
  Int8StagePlan plan;
  plan.kind = Int8StageKind::f32;
  for (size_t k = 0; k < model.layer_inputs(i).size(); ++k) plan.inputs.push_back(f32_of(input_point(i, k)));
  plan.layer = layers[i].get();
  const size_t first = input_point(i);
  plan.in_shape = first == 0 ? model.input_shape() : model.layer_output_shape(first - 1);
  plan.out_shape = model.layer_output_shape(i);
  plan.name = layers[i]->name();
  set_point(i + 1, add(std::move(plan)), false, QuantParams());
  precisions.push_back({layers[i]->name(), "f32", note, layers[i]->kind()});
}

size_t Int8StageBuilder::add_layer(size_t i) {
  Layer* layer = model.layers()[i].get();
  const std::string kind = layer->kind();
  const Int8Role role = layer_kind_of(*layer).int8;
  const size_t in = input_point(i);
  if (role == Int8Role::identity) {
    precisions.push_back({layer->name(), "-", "identity at inference", kind});
    points[i + 1] = points[in];  // the same stage's output, read in this layer's shape where converted
    points[i + 1].shape = model.layer_output_shape(i);
    return i;
  }
  if (role == Int8Role::max_pool && points[in].int8) {
    Int8StagePlan plan;
    plan.kind = Int8StageKind::max_pool;
    plan.geometry = pool_geometry(*layer);
    plan.inputs = {points[in].stage};
    plan.name = layer->name();
    set_point(i + 1, add(std::move(plan)), true, points[in].params);
    precisions.push_back({layer->name(), "int8", "same scale as its input", kind});
    return i;
  }
  if (keep.count(layer->name()) > 0) {
    add_f32_layer(i, "kept f32 by the policy");
    return i;
  }
  if (role == Int8Role::add && model.layer_inputs(i).size() == 2) return add_int8_add(i);
  if (role != Int8Role::gemm) {
    add_f32_layer(i, role == Int8Role::add ? "an int8 add sums two inputs" : "no int8 kernel");
    return i;
  }
  return add_gemm_group(i);
}

// The add layer i (two inputs) as an int8 stage, with a relu (or relu6) after it fused as its
// clamp; when its constants cannot be made, f32 (and the relu too).
size_t Int8StageBuilder::add_int8_add(size_t i) {
  const auto& layers = model.layers();
  const bool clamped = int8_fuses_into_previous(model, i + 1);
  RG_CHECK(!clamped || layer_kind_of(*layers[i + 1]).fusion == Int8Fusion::clamp,
           "kind " << layers[i + 1]->kind() << " fuses into an int8 add: only as a clamp");
  const size_t end = clamped ? i + 1 : i, a = input_point(i, 0), b = input_point(i, 1);
  const QuantParams out = ranges.params_of(end + 1);
  const Qs8Clamp clamp = stage_clamp(clamped ? &layer_kind_of(*layers[i + 1]).clamp : nullptr, out);
  auto params = qs8_add_params(int8_params(a), int8_params(b), out, clamp, layers[i]->name());
  if (!params.ok()) {
    for (size_t j = i; j <= end; ++j) add_f32_layer(j, params.status().message());
    return end;
  }
  Int8StagePlan plan;
  plan.kind = Int8StageKind::add;
  plan.add = params.value();
  plan.inputs = {int8_of(a), int8_of(b)};
  plan.out_shape = model.layer_output_shape(i);
  plan.name = layers[i]->name();
  set_point(end + 1, add(std::move(plan)), true, out);
  precisions.push_back({layers[i]->name(), "int8", clamped ? layers[end]->name() + " fused" : "", layers[i]->kind()});
  if (clamped) precisions.push_back({layers[end]->name(), "int8", "in " + layers[i]->name(), layers[end]->kind()});
  return end;
}

// The path of a conv's int8 stage, and a 2x2 max pooling right after a direct single-channel
// conv or a Winograd conv fused into it.
void Int8StageBuilder::choose_gemm_path(size_t end, const ConvGeometry& g, bool is_conv, size_t filters,
                                        Int8StagePlan* plan) const {
  const auto& layers = model.layers();
  const bool pool_next = is_conv && model.reads_only_previous(end + 1) &&
                         layer_kind_of(*layers[end + 1]).int8 == Int8Role::max_pool &&
                         keep.count(layers[end + 1]->name()) == 0 &&
                         fusable_max_pool_2x2(g, pool_geometry(*layers[end + 1]));
  // The direct conv where it pays: with the pooling fused, or with few filters (its lanes are
  // pixels, so each filter is requantized and stored on its own; with many filters the GEMM's
  // lanes-are-filters layout requantizes whole rows at once). Else Winograd where it fits
  // (its error keeps the group f32), else im2col and the GEMM. Weights of 4 bits or fewer skip
  // Winograd: its transformed weights (int16, 16 for 9) would hold 7 times the packed ones.
  if (options.direct_conv && is_conv && conv_pairs_fits(g) && (pool_next || static_cast<int64_t>(filters) <= 8)) {
    plan->path = Int8GemmPath::conv_pairs;
  } else if (options.winograd && options.weight_bits > 4 && is_conv && winograd_fits(g)) {
    plan->path = Int8GemmPath::winograd;
  }
  plan->pool = plan->path != Int8GemmPath::gemm && pool_next;
  if (plan->pool) plan->pool_geometry = pool_geometry(*layers[end + 1]);
}

// The precision rows of a gemm group made int8: its layer, the layers fused into it, a pooling fused after.
void Int8StageBuilder::note_gemm_group(size_t i, size_t end, bool pooled, Int8GemmPath path) {
  const auto& layers = model.layers();
  const Layer* layer = layers[i].get();
  std::string note;
  for (size_t j = i + 1; j <= end; ++j) {
    const bool clamp = layer_kind_of(*layers[j]).fusion == Int8Fusion::clamp;
    note += (note.empty() ? "" : ", ") + layers[j]->name() + (clamp ? " fused" : " folded");
  }
  if (options.weight_bits < 8) {
    const bool packed = options.weight_bits <= 4 && path == Int8GemmPath::gemm;
    note += (note.empty() ? "" : ", ") + std::to_string(options.weight_bits) + "-bit weights" +
            (packed ? " two a byte" : options.weight_bits <= 4 ? " (held in this path's own form)" : "");
  }
  precisions.push_back({layer->name(), "int8", note, layer->kind()});
  for (size_t j = i + 1; j <= end; ++j)
    precisions.push_back({layers[j]->name(), "int8", "in " + layer->name(), layers[j]->kind()});
  if (pooled) {  // the pooling's output has its input's parameters
    precisions.push_back({layers[end + 1]->name(), "int8", "fused into " + layer->name(), layers[end + 1]->kind()});
  }
}

// The gemm-role layer i and the layers fused after it as one int8 stage; when that cannot be
// made, every layer of the group f32.
size_t Int8StageBuilder::add_gemm_group(size_t i) {
  const auto& layers = model.layers();
  const Layer* layer = layers[i].get();
  const GemmGroup group = gemm_group(model, i);
  size_t end = group.end;
  std::vector<double> w, b;
  const ConvGeometry g = gemm_weights(*layer, group.bn, &w, &b);
  const bool is_conv = dynamic_cast<const Conv2D*>(layer) != nullptr;  // the conv-only paths
  const QuantParams in = int8_params(input_point(i));
  const QuantParams out = ranges.params_of(end + 1);
  Int8StagePlan plan;
  plan.kind = Int8StageKind::gemm;
  plan.params = in;
  plan.geometry = g;
  plan.name = layer->name();
  const int64_t rows = static_cast<int64_t>(w.size() / b.size());  // patch_size; depthwise: kernel^2
  Status built =
      quantize_layer(rows, w, b, options.weight_bits, in, out, stage_clamp(group.clamp, out), layer->name(),
                     &plan.weights, &plan.output);
  plan.weight_bits = options.weight_bits;
  if (dynamic_cast<const DepthwiseConv2D*>(layer) != nullptr) plan.path = Int8GemmPath::depthwise;
  choose_gemm_path(end, g, is_conv, b.size(), &plan);
  std::unique_ptr<Int8Stage> stage;
  if (built.ok()) {
    auto made = make_int8_stage(plan, isa);
    if (made.ok()) {
      stage = made.take();
    } else {
      built = made.status();
    }
  }
  if (!built.ok()) {  // the whole group stays f32
    for (size_t j = i; j <= end; ++j) add_f32_layer(j, built.message());
    return end;
  }
  const bool pooled = plan.pool;
  const Int8GemmPath path = plan.path;
  plan.inputs = {int8_of(input_point(i))};  // its quantize (if any) runs first
  const int made = push(std::move(plan), std::move(stage));
  note_gemm_group(i, end, pooled, path);
  if (pooled) ++end;  // the pooling's output has its input's parameters
  set_point(end + 1, made, true, out);
  return end;
}

}  // namespace

Result<std::unique_ptr<Int8Model>> Int8Model::quantize(Model& model, const Tensor& calibration, int64_t batch,
                                                       const Int8Options& options, ThreadPool* pool) {
  if (is_half(model.storage()) || model.weights_f16()) {
    return Status::error(std::string("int8 quantization reads the f32 model, and this one keeps ") +
                         (model.weights_f16() ? "f16 weights" : std::string(dtype_name(model.storage())) +
                                                                    " activations (Model::set_storage: f32 first)"));
  }
  if (options.weight_bits < kMinWeightBits || options.weight_bits > kMaxWeightBits) {
    return Status::error("int8 quantization: weights of " + std::to_string(options.weight_bits) + " bits (" +
                         std::to_string(kMinWeightBits) + " to " + std::to_string(kMaxWeightBits) + " are possible)");
  }
  if (options.activation_bits < 2 || options.activation_bits > 8) {
    return Status::error("int8 quantization: activations of " + std::to_string(options.activation_bits) +
                         " bits (2 to 8 are possible)");
  }
  const auto& layers = model.layers();
  Int8Ranges ranges(options, layers.size());
  RG_TRY(ranges.observe(model, calibration, batch, pool));
  RG_ASSIGN(const std::set<std::string> keep, layers_kept_f32(layers, options));
  Int8StageBuilder builder(model, options, ranges, keep, options.has_isa ? options.isa : active_isa());
  for (size_t i = 0; i < layers.size(); ++i) i = builder.add_layer(i);
  auto net = std::unique_ptr<Int8Model>(new Int8Model());
  net->source_ = &model;
  net->output_stage_ = builder.f32_of(layers.size());
  net->plan_ = std::move(builder.plans);
  net->stages_ = std::move(builder.stages);
  net->precisions_ = std::move(builder.precisions);
  return net;
}

Status Int8Model::reserve(int64_t batch) {
  if (batch <= reserved_) return Status();
  outputs_.clear();
  for (const auto& stage : stages_) {
    auto t = Tensor::zeros(stage->out_shape.batched(batch), stage->out_dtype, "int8 model: " + stage->describe());
    if (!t.ok()) return t.status();
    outputs_.push_back(t.take());
    if (Status s = stage->reserve(batch); !s.ok()) return s;
  }
  reserved_ = batch;
  return Status();
}

Tensor Int8Model::forward(const Tensor& x, ThreadPool* pool) {
  const int64_t n = x.shape()[0];
  RG_CHECK(n <= reserved_, "int8 forward of " << n << " samples, reserved " << reserved_);
  std::vector<Tensor> xs;
  if (times_ != nullptr) {
    times_->seconds.resize(stages_.size(), 0.0);
    times_->samples += n;
    ++times_->calls;
  }
  for (size_t s = 0; s < stages_.size(); ++s) {
    xs.clear();
    for (int j : plan_[s].inputs) xs.push_back(j < 0 ? x : outputs_[static_cast<size_t>(j)].rows(0, n));
    const auto start = std::chrono::steady_clock::now();
    stages_[s]->run_inputs(xs, outputs_[s].rows(0, n), pool);
    if (times_ != nullptr) {
      times_->seconds[s] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  return output_stage_ < 0 ? x : outputs_[static_cast<size_t>(output_stage_)].rows(0, n);
}

int64_t Int8Model::weight_bytes() const {
  int64_t bytes = 0;
  for (const auto& stage : stages_) bytes += stage->weight_bytes();
  return bytes;
}

int64_t Int8Model::weight_payload_bytes() const {
  int64_t bytes = 0;
  for (const Int8StagePlan& plan : plan_)
    if (plan.kind == Int8StageKind::gemm) bytes += plan.weight_payload_bytes();
  return bytes;
}

int64_t Int8Model::buffer_bytes(int64_t batch) const {
  int64_t bytes = 0;
  for (const auto& stage : stages_) {
    bytes += stage->out_shape.numel() * batch * static_cast<int64_t>(dtype_size(stage->out_dtype));
    bytes += stage->scratch_bytes(batch);
  }
  return bytes;
}

std::string int8_description(const std::vector<LayerPrecision>& layers) {
  int64_t in_int8 = 0, computing = 0;
  for (const LayerPrecision& p : layers) {
    in_int8 += p.precision == "int8";
    computing += p.precision != "-";
  }
  return "int8 (" + std::to_string(in_int8) + " of " + std::to_string(computing) + " computing layers)";
}

std::string Int8Model::stage_description(size_t s) const { return stages_.at(s)->describe(); }

std::string Int8Model::summary() const {
  std::ostringstream os;
  for (const auto& stage : stages_) os << "  " << stage->describe() << "\n";
  return os.str();
}

}  // namespace rg
