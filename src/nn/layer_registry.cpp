// The rows of every layer kind (layer_registry.h), their checks and the int8 rules read from them.
#include "nn/layer_registry.h"

#include <algorithm>
#include <limits>
#include <set>

#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dense.h"
#include "nn/dropout.h"
#include "nn/merge_layers.h"
#include "ops/fixed_point_precision.h"
#include "nn/model.h"
#include "nn/pooling.h"
#include "nn/recurrent_conv.h"
#include "nn/shape_layers.h"

namespace rg {

namespace {

using D = DeviceRun;
using Q = Int8Role;
using F = Int8Fusion;

constexpr float kNoLimit = std::numeric_limits<float>::infinity();

// name, cfg reader, device, int8 role, fusion, the kinds it fuses after, a clamp's range, whether
// a `precision` key applies
std::vector<LayerKind> make_kinds() {
  return {
      {"dense", Dense::from_cfg, D::own, Q::gemm, F::none, {}, {}, true},
      {"conv", Conv2D::from_cfg, D::own, Q::gemm, F::none, {}, {}, true},
      {"conv_transpose", ConvTranspose2D::from_cfg, D::own, Q::f32, F::none, {}, {}, true},
      {"depthwise_conv", DepthwiseConv2D::from_cfg, D::own, Q::gemm, F::none, {}},
      {"maxpool", Pool2D::from_cfg, D::own, Q::max_pool, F::none, {}},
      {"avgpool", Pool2D::from_cfg, D::own, Q::f32, F::none, {}},
      {"global_avgpool", GlobalAvgPool::from_cfg, D::own, Q::f32, F::none, {}},
      {"rcl", RecurrentConv2D::from_cfg, D::own, Q::f32, F::none, {}, {}, true},
      {"batchnorm", BatchNorm::from_cfg, D::own, Q::fused, F::fold_affine, {"conv", "depthwise_conv", "dense"}},
      {"dropout", Dropout::from_cfg, D::own, Q::identity, F::none, {}},
      {"flatten", Reshape::from_cfg, D::own, Q::identity, F::none, {}},
      {"reshape", Reshape::from_cfg, D::own, Q::identity, F::none, {}},
      {"upsample", Upsample::from_cfg, D::own, Q::f32, F::none, {}},
      {"relu", Activation::from_cfg, D::own, Q::fused, F::clamp,
       {"conv", "depthwise_conv", "dense", "batchnorm", "add"}, {0.0f, kNoLimit}},
      {"relu6", Activation::from_cfg, D::own, Q::fused, F::clamp,
       {"conv", "depthwise_conv", "dense", "batchnorm", "add"}, {0.0f, 6.0f}},
      {"leaky_relu", Activation::from_cfg, D::own, Q::f32, F::none, {}},
      {"sigmoid", Activation::from_cfg, D::own, Q::f32, F::none, {}},
      {"tanh", Activation::from_cfg, D::own, Q::f32, F::none, {}},
      {"softmax", Activation::from_cfg, D::own, Q::f32, F::none, {}},
      {"add", Add::from_cfg, D::own, Q::add, F::none, {}},
      {"concat", Concat::from_cfg, D::own, Q::f32, F::none, {}},
  };
}

// What one row lacks or gets wrong, "" when nothing; `names` are every row's.
std::string row_problems(const LayerKind& row, const std::set<std::string>& names) {
  std::string problems;
  auto add = [&](const std::string& problem) { problems += (problems.empty() ? "" : "; ") + problem; };
  if (row.from_cfg == nullptr) add("no cfg reader");
  if (row.device == DeviceRun::unset) add("no device entry (its own device layer, or host)");
  if (row.int8 == Int8Role::unset) add("no int8 role");
  const bool fused = row.int8 == Int8Role::fused;
  if (fused && row.fusion == Int8Fusion::none) add("fused in int8 without saying how");
  if (fused && row.fuses_after.empty()) add("fused in int8 after no kind");
  if (!fused && (row.fusion != Int8Fusion::none || !row.fuses_after.empty())) {
    add("a fusion rule without the fused role");
  }
  for (const std::string& before : row.fuses_after) {
    if (names.count(before) == 0) add("fuses after '" + before + "', which is no kind");
  }
  const bool clamps = row.fusion == Int8Fusion::clamp;
  if (clamps && !(row.clamp.lo < row.clamp.hi)) add("a clamp fusion without a range lo < hi");
  if (!clamps && (row.clamp.lo != 0.0f || row.clamp.hi != 0.0f)) add("a clamp range without the clamp fusion");
  return problems;
}

}  // namespace

const std::vector<LayerKind>& layer_kinds() {
  static const std::vector<LayerKind> kinds = make_kinds();
  return kinds;
}

const LayerKind* find_layer_kind(const std::string& kind) {
  for (const LayerKind& row : layer_kinds()) {
    if (row.name == kind) return &row;
  }
  return nullptr;
}

const LayerKind& layer_kind_of(const Layer& layer) {
  const LayerKind* row = find_layer_kind(layer.kind());
  RG_CHECK(row != nullptr,
           "layer " << layer.name() << " of kind " << layer.kind() << " has no row in nn/layer_registry.cpp");
  return *row;
}

Status check_layer_kinds(const std::vector<LayerKind>& rows) {
  std::set<std::string> names;
  std::string errors;
  for (const LayerKind& row : rows) {
    if (!names.insert(row.name).second) errors += "\n  " + row.name + ": a second row of the same name";
  }
  for (const LayerKind& row : rows) {
    const std::string problems = row_problems(row, names);
    if (!problems.empty()) errors += "\n  " + row.name + ": " + problems;
  }
  if (errors.empty()) return Status();
  return Status::error("layer kinds (nn/layer_registry.cpp) incomplete:" + errors);
}

bool int8_fuses_after(const std::string& kind, const std::string& before) {
  const LayerKind* row = find_layer_kind(kind);
  if (row == nullptr || row->int8 != Int8Role::fused) return false;
  return std::find(row->fuses_after.begin(), row->fuses_after.end(), before) != row->fuses_after.end();
}

bool int8_keeps_input_grid(const std::string& kind) {
  const LayerKind* row = find_layer_kind(kind);
  return row != nullptr && (row->int8 == Int8Role::identity || row->int8 == Int8Role::max_pool);
}

bool int8_fuses_into_previous(const Model& model, size_t j) {
  const auto& layers = model.layers();
  return j > 0 && j < layers.size() && model.reads_only_previous(j) &&
         int8_fuses_after(layers[j]->kind(), layers[j - 1]->kind());
}

Result<OwnPrecision> own_precision_from_name(const std::string& name) {
  OwnPrecision p;
  p.name = name;
  if (name == "fp32") return p;
  if (!names_fixed_point(name)) {
    return Status::error("'" + name + "' is not a layer precision (fp32, int8-train, or a fixed-point shorthand such as "
                         "w8a8e8, w16a16g16-sr: docs/quantization.md)");
  }
  RG_ASSIGN(const FixedPointPrecision fixed, parse_fixed_point_precision(name));
  p.name = fixed.name;
  p.gemm = GemmPrecision::fixed_point;
  p.formats = fixed.roles;
  return p;
}

Result<std::unique_ptr<Layer>> make_layer(const CfgSection& section) {
  if (const LayerKind* row = find_layer_kind(section.kind()); row != nullptr) {
    RG_ASSIGN(std::unique_ptr<Layer> layer, row->from_cfg(section));
    RG_ASSIGN(const std::string name, section.get_string_or("name", ""));
    layer->set_name(name);
    RG_ASSIGN(const std::string precision, section.get_string_or("precision", ""));
    if (section.has("precision") && precision.empty()) {
      return Status::error(section.where("precision") + "no precision given (fp32 or a fixed-point shorthand)");
    }
    if (!precision.empty()) {
      if (!row->own_precision) {
        std::string kinds;
        for (const LayerKind& k : layer_kinds())
          if (k.own_precision) kinds += (kinds.empty() ? "" : ", ") + k.name;
        return Status::error(section.where("precision") + "a precision of its own applies to layers with products (" +
                             kinds + "), not to " + row->name);
      }
      auto own = own_precision_from_name(precision);
      if (!own.ok()) return Status::error(section.where("precision") + own.status().message());
      layer->set_own_precision(own.take());
    }
    RG_TRY(section.check_all_used());
    return layer;
  }
  std::string known;
  for (const LayerKind& row : layer_kinds()) known += (known.empty() ? "" : ", ") + row.name;
  return Status::error(section.where() + "unknown layer type (known: net, " + known + ")");
}

}  // namespace rg
