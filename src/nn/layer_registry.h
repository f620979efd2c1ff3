// The layer kinds: one row per cfg section name (layer_registry.cpp's kLayerKinds) saying what
// every backend does with it. The row names its cfg reader (which builds the CPU layer), whether
// the device runs it with a layer of its own or on the host, and its int8 role with its fusion
// rule. What a kind costs (flops, memory traffic) is the layer's own (Layer::traffic). The
// device's makers register themselves by name in opencl/model/cl_*.cpp (nn cannot see opencl)
// and are checked complete against these rows (check_cl_layer_makers); the int8 engine
// (quant/int8_model.cpp) and QAT (quant/fake_quant.cpp) both read their rules from here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/cfg.h"
#include "nn/layer.h"

namespace rg {

class Model;

// How a device model (opencl/model) runs a kind.
enum class DeviceRun : uint8_t {
  unset,   // not said: check_layer_kinds refuses the row
  own,     // a device layer of its own, made by the maker registered under the kind's name
  host,    // its CPU layer inside the device model, the values copied across (cl_host_layer.h)
};

// What int8 inference (quant/int8_model.h) does with a kind; QAT (quant/fake_quant.h) rounds
// values where the export will quantize them, so it reads the same roles.
enum class Int8Role : uint8_t {
  unset,     // not said: check_layer_kinds refuses the row
  gemm,      // an int8 GEMM stage of its own (conv, dense): int8 weights, requantized to its output's range
  max_pool,  // int8 max pooling on int8 input: its output keeps its input's scale and zero point
  fused,     // part of the int8 stage of the layer before it, when that one's kind is in fuses_after
  identity,  // nothing at inference (dropout, flatten, reshape): the values pass as they are
  add,       // an int8 add of two inputs requantized to its output's range (ops/qs8_add.h); of
             // more inputs, f32
  f32,       // no int8 kernel: runs in f32 between a dequantize and a quantize
};

// How a fused kind enters the int8 stage before it.
enum class Int8Fusion : uint8_t {
  none,         // not fused (every role but fused)
  fold_affine,  // an inference affine (batch norm) folded into the weights and the bias
  clamp,        // y = clamp(x, lo, hi) (relu, relu6): the requantization's clamp, the row's
                // Int8Clamp on the output's grid (ops/quant_params.h's qs8_clamp)
};

// The real range a kind of fusion clamp clamps to; hi may be +inf (relu).
struct Int8Clamp {
  float lo = 0, hi = 0;
};

struct LayerKind {
  std::string name;  // the cfg section: "conv"
  // Reads the section's keys and builds the CPU layer.
  Result<std::unique_ptr<Layer>> (*from_cfg)(const CfgSection&) = nullptr;
  DeviceRun device = DeviceRun::unset;
  Int8Role int8 = Int8Role::unset;
  Int8Fusion fusion = Int8Fusion::none;   // for int8 == fused
  std::vector<std::string> fuses_after;   // for int8 == fused: the kinds whose stage takes it
  Int8Clamp clamp = {};                   // for fusion == clamp: its range, lo < hi
  // Its products run through nn/layer_gemm.h, so a precision of its own (cfg key `precision`)
  // applies to it.
  bool own_precision = false;
};

// The precision a name gives a layer of its own ("fp32" or a fixed-point shorthand); an error
// names the rule.
Result<OwnPrecision> own_precision_from_name(const std::string& name);

// Every kind, in the order unknown-kind errors list them.
const std::vector<LayerKind>& layer_kinds();
// The row of `kind`; null when there is none.
const LayerKind* find_layer_kind(const std::string& kind);
// The row of a layer made by make_layer (a missing row is a bug).
const LayerKind& layer_kind_of(const Layer& layer);

// Every row complete and consistent: a reader, a device entry, an int8 role; a fused role with
// its fusion and the kinds it fuses after (existing ones), no other role with either; a clamp
// fusion with its range (lo < hi), no other row with one; names unique. The error names each row and what it lacks.
Status check_layer_kinds(const std::vector<LayerKind>& rows);

// The int8 rules, written once for the engine and for QAT:
// `kind` joins the int8 GEMM stage that ends with a layer of kind `before`.
bool int8_fuses_after(const std::string& kind, const std::string& before);
// `kind`'s int8 output has its input's scale and zero point (identities and max pooling).
bool int8_keeps_input_grid(const std::string& kind);
// Layer j of `model` joins the int8 stage of layer j - 1: its kind fuses after that one's, and
// in a graph model it reads j - 1 alone and is its only reader (a point another layer reads is
// never fused away: it must exist as a stage's output).
bool int8_fuses_into_previous(const Model& model, size_t j);

// Builds the layer of a section and checks that every key in it was understood.
Result<std::unique_ptr<Layer>> make_layer(const CfgSection& section);

}  // namespace rg
