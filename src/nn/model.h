// A model: the layers built from a cfg document, the loss it ends in, and the activation
// buffers of one batch. Activations of every layer are kept for backward. A chain (no layer
// names its inputs: each reads the one before) passes gradients through two ping-pong buffers
// sized for the largest layer. A graph model (some layer says `inputs = a, b`; model_graph.cpp)
// keeps one gradient buffer per layer output, where the gradients of every layer it feeds are
// summed. Both run in f32 (or f64) storage and in f16 storage (model_f16.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/cfg.h"
#include "nn/layer.h"
#include "nn/loss.h"
#include "nn/workspace.h"

namespace rg {

class Model {
 public:
  // Reads [net] (input, loss, target) and one section per layer; every shape is checked here.
  static Result<std::unique_ptr<Model>> from_cfg(const CfgDocument& doc);

  // Allocates and initialises the parameters from `seed` in f32 (training) or f64 (checks).
  Status init(uint64_t seed, DType dtype = DType::f32);
  // Where activations and the gradients between layers are kept: f32 (the default), f16 or bf16
  // (both "f16" below: model_f16.cpp), the storage of mixed-precision training. With f16, layers still compute in f32: each runs on row
  // chunks widened from f16 into small f32 buffers, and its output is rounded to f16 as it is
  // stored (layers that need the whole batch, needs_whole_batch, get the whole batch). The
  // model's output and the gradient the loss writes stay f32. Call before reserve().
  Status set_storage(DType storage);
  // Called with (0, x) before the first layer and (i + 1, output) after layer i's forward; it
  // may change the values in place (quantization-aware training rounds them to an int8 grid,
  // quant/fake_quant.h). f32 storage only.
  using ValuesHook = std::function<void(size_t point, const Tensor& values, const LayerContext& ctx)>;
  void set_values_hook(ValuesHook hook) { values_hook_ = std::move(hook); }
  DType storage() const { return stored_dtype(); }
  // Inference with f16 weights (model_f16_weights.cpp): the conv and dense kernels (params of
  // rank >= 2) are rounded to f16 and kept so, half their bytes; biases and batch-norm values stay
  // f32. Dense layers widen their f16 W a block of rows at a time as they multiply; other layers'
  // f16 params are widened into one shared f32 buffer before their forward. From then on the
  // model runs forward only (the params have no gradients). Call before reserve().
  Status store_weights_f16();
  bool weights_f16() const { return weights_f16_; }
  // Bytes of the params and buffers as kept, and of the buffers f16 params are widened into (a
  // dense layer's block of rows counted though it lives in the shared workspace).
  int64_t weight_bytes();
  // Allocates activation and gradient buffers, and the layers' shared workspace, for batches
  // of up to `batch` samples.
  Status reserve(int64_t batch);

  // x [n, input...] with n <= the reserved batch -> the output [n, output...] (a view of a buffer).
  Tensor forward(const Tensor& x, const LayerContext& ctx);
  // The buffer the loss writes d(loss)/d(output) into, for the last forward's n.
  Tensor output_grad() const;
  // Back-propagates output_grad() through every layer; parameter gradients accumulate (or are
  // written: ctx.accumulate_grads). When input_grad [n, input...] is defined, the first layer
  // writes d(loss)/d(input) there (a GAN's discriminator passing the gradient to its generator).
  void backward(const LayerContext& ctx, const Tensor& input_grad = Tensor());
  void zero_grads();

  // The output of layer i in the last forward, [n, shapes_[i]...], in the storage dtype (the
  // last layer's always f32); undefined for a layer that ran a relu after it (fuses_relu_after)
  // in a training forward, which wrote the relu's output instead of its own.
  Tensor activation(size_t i) const {
    return relu_fused_ && fuses_relu_after(i) ? Tensor() : acts_[i].rows(0, batch_);
  }
  // Whether a training forward runs layer i + 1, a relu, inside layer i (Layer::fuses_relu:
  // batch norm, before cnn's and rcnn's relus, and the convolutions): fewer passes over the
  // values, the same bits. Chains in f32 or f64 storage without a values hook; the relu's own
  // forward and backward then do not run (a profile shows it fused).
  bool fuses_relu_after(size_t i) const;
  const Shape& layer_output_shape(size_t i) const { return shapes_[i]; }

  const Shape& input_shape() const { return input_; }
  const Shape& output_shape() const { return shapes_.back(); }
  LossKind loss() const { return loss_; }
  TargetKind target() const { return target_; }
  const CfgDocument& cfg() const { return cfg_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // The index in cfg().sections of layer i's section.
  size_t section_of(size_t layer) const { return layer_sections_[layer]; }
  // A graph model: some layer names its inputs (cfg `inputs = ...`). Executors that run only
  // chains refuse one through refuse_graph.
  bool is_graph() const { return !graph_layer_.empty(); }
  // The layers whose outputs layer i reads, in order; kModelInput for the model's input.
  static constexpr int kModelInput = -1;
  const std::vector<int>& layer_inputs(size_t i) const { return inputs_[i]; }
  // Layer j (> 0) reads layer j - 1 alone and is the only layer that reads it: what lets an
  // executor fuse the two (int8 stages; nn/layer_registry.h's int8_fuses_into_previous). Always
  // true in a chain.
  bool reads_only_previous(size_t j) const;
  // An error for an executor that cannot run a graph model (empty for a chain): "graph models
  // (layer X names its inputs) do not run on `executor` yet: issue 31".
  Status refuse_graph(const std::string& executor) const;
  std::vector<Param*> params();
  // Non-trained state saved with the params (BatchNorm running statistics).
  std::vector<Param*> buffers();
  int64_t param_count() const;
  // Floating-point operations per sample (Layer::forward_flops_per_sample): the forward's, and a
  // training step's: each product again for the weights' gradient and for dx, but the first
  // layer's dx, which backward never computes.
  int64_t forward_flops_per_sample() const;
  int64_t train_flops_per_sample() const;
  // What reserve(batch) allocates, in bytes, in the storage this model has now (model_memory.cpp);
  // reserved_bytes_in: in `storage` (f32 or f16), whatever the model's is: what the memory
  // planner asks, so that planning changes nothing.
  struct ReservedBytes {
    int64_t activations = 0;  // every layer's output [batch, shape], kept for backward
    int64_t layer_state = 0;  // what layers keep of their own (a recurrent layer's steps)
    int64_t gradients = 0;    // the two ping-pong buffers of the gradients between layers (f16:
                              // and the loss's f32 gradient); a graph model: one per layer output
                              // and a scratch
    int64_t chunks = 0;       // f16 storage: the f32 row chunks layers compute on
    int64_t workspace = 0;    // the layers' shared scratch (im2col panels)
    int64_t total() const { return activations + layer_state + gradients + chunks + workspace; }
  };
  ReservedBytes reserved_bytes(int64_t batch) const { return reserved_bytes_in(storage_, batch); }
  ReservedBytes reserved_bytes_in(DType storage, int64_t batch) const;
  // Bytes of the parameters and their gradients (allocated by init()).
  int64_t param_bytes() const;
  // Per layer, the bytes one sample costs in training: the output kept for backward and the
  // layer's own state; the gradient it passes back (dx; a graph model: the buffer of its output's
  // gradient); and the workspace its forward and
  // backward take for a batch of `batch`, divided by batch.
  struct LayerMemory {
    std::string layer;
    int64_t kept_per_sample = 0, gradient_per_sample = 0, workspace_per_sample = 0;
  };
  std::vector<LayerMemory> layer_memory(int64_t batch) const;
  // Bytes of the activation buffers an inference forward of `batch` samples writes, in the
  // storage dtype (with f16, the f32 chunks of one layer's input and output included).
  int64_t inference_activation_bytes(int64_t batch) const;
  // A table: layer, output shape, parameters, details.
  std::string summary() const;

 private:
  CfgDocument cfg_;
  Shape input_;
  LossKind loss_ = LossKind::softmax_cross_entropy;
  TargetKind target_ = TargetKind::labels;
  DType dtype_ = DType::f32;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> layer_sections_;  // each layer's section in cfg_
  std::vector<Shape> shapes_;  // shapes_[i]: per-sample output of layer i
  std::vector<Tensor> acts_;   // acts_[i]: [batch, shapes_[i]...]
  Tensor grad_a_, grad_b_;     // ping-pong [batch * largest layer]
  Workspace workspace_;        // scratch shared by the layers (im2col panels)
  Tensor input_view_;          // the x of the last forward
  bool relu_fused_ = false;    // the last forward fused relus (a training forward: fuses_relu_after)
  int64_t reserved_ = 0;
  int64_t batch_ = 0;          // n of the last forward

  // ctx with fused_relu set to `fused`.
  static LayerContext fused_relu_context(const LayerContext& ctx, bool fused);
  // The dx layer i writes in backward: a view of `buffer` (a ping-pong gradient buffer) for
  // i > 0; for the first layer the caller's input_grad, or nothing.
  Tensor input_grad_of(size_t i, const Tensor& x, const Tensor& input_grad, const Tensor& buffer) const;
  ValuesHook values_hook_;
  // f16 or bf16 storage (model_f16.cpp): acts_ but the last and grad_a_/grad_b_ are in it.
  DType storage_ = DType::f32;  // f32 means: the model's own dtype (f64 in gradient checks)
  DType stored_dtype() const { return stored_dtype_in(storage_); }
  DType stored_dtype_in(DType storage) const { return is_half(storage) ? storage : dtype_; }
  // The dtype layer i's output and its gradient are kept in: the storage's, but the last
  // layer's (the loss reads and writes it in the model's dtype).
  DType kept_dtype(size_t i) const { return kept_dtype_in(storage_, i); }
  DType kept_dtype_in(DType storage, size_t i) const {
    return i + 1 == layers_.size() ? dtype_ : stored_dtype_in(storage);
  }
  Tensor output_grad_;                              // f32 [batch, output...] (a chain's; a graph's is grads_.back())
  Tensor chunk_x_, chunk_y_, chunk_dy_, chunk_dx_;  // f32 rows of one layer's x, y, dy, dx (every input's, one after another)
  // Values a sample of every input of layer i (the one before it in a chain).
  int64_t input_values(size_t i) const;
  // Rows of layer i's chunks for a batch of n.
  int64_t chunk_rows(size_t i, const LayerContext& ctx, int64_t n) const;
  // f32 elements of each chunk buffer: the widest layer's chunk rows times its row.
  int64_t chunk_elements(const LayerContext& ctx, int64_t batch) const;
  Status reserve_f16_chunks(int64_t batch);
  // A chain's two ping-pong gradient buffers of `largest` values a sample (`largest_name`'s).
  Status reserve_chain_grads(int64_t batch, int64_t largest, const std::string& largest_name);
  bool weights_f16_ = false;
  Tensor widened_params_;  // f32 [the largest layer's f16 param elements], layers without reads_f16_weights
  // Layer `layer`'s f16 params widened into widened_params_ for the scope of its forward (nothing
  // when the model keeps f32 weights or the layer reads f16 itself).
  class WidenedParams {
   public:
    WidenedParams(Model& model, size_t layer);
    ~WidenedParams();
    WidenedParams(const WidenedParams&) = delete;
    WidenedParams& operator=(const WidenedParams&) = delete;

   private:
    std::vector<std::pair<Param*, Tensor>> swapped_;  // each param and its f16 value
  };
  Tensor forward_f16(const Tensor& x, const LayerContext& ctx);
  // Graph models (model_graph.cpp).
  std::string graph_layer_;              // the first layer that names its inputs; empty: a chain
  std::vector<std::vector<int>> inputs_;  // inputs_[i]: what layer i reads (indices, kModelInput)
  std::vector<Tensor> grads_;            // grads_[i]: d(loss)/d(layer i's output) [batch, shapes_[i]...]
  Tensor grad_scratch_;                  // a layer's dx before it is added to a gradient already there
  // Reads every layer's `inputs` (none: the layer before) into inputs_ and checks the graph:
  // names known, unique and earlier; each layer's output read by a later one but the last's.
  Status resolve_inputs(const CfgDocument& doc, const std::vector<size_t>& sections);
  // Configures layer i on the outputs it reads (shapes_ of the earlier layers).
  Result<Shape> configure_layer(size_t i, const CfgSection& section);
  Tensor graph_input(size_t i, size_t k) const;
  Status reserve_graph_grads(int64_t batch);
  int64_t graph_gradient_bytes(DType storage, int64_t batch) const;
  Tensor forward_graph(const Tensor& x, const LayerContext& ctx);
  void backward_graph(const LayerContext& ctx, const Tensor& input_grad);
  // d(loss)/d(layer i's output) [batch_, shapes_[i]...] as the f16 and graph passes keep it: a
  // graph's buffer of that output, a chain's ping-pong buffer (or output_grad()).
  Tensor output_grad_of(size_t i) const;
  // Where the gradients of layer i's inputs go in backward (undefined: the model's input when
  // the caller wants none), and whether each is added to one already there (an output feeding
  // several layers). `written` marks what holds a gradient: [0] the model's input, [j + 1]
  // layer j's output; `model_dx` is the caller's input gradient.
  void gradient_targets(size_t i, const Tensor& model_dx, std::vector<char>& written, std::vector<Tensor>* dxs,
                        std::vector<bool>* add_to) const;
  void backward_f16(const LayerContext& ctx, const Tensor& input_grad);
  // Rows [r0, r1) of layer i's backward on f16 storage: widened, run in f32, stored or added.
  void backward_f16_rows(size_t i, int64_t r0, int64_t r1, const Tensor& dy_all, const std::vector<Tensor>& dx_all,
                         const std::vector<bool>& add_to, const LayerContext& ctx);
};

// Built-in models as cfg text ("mlp", ...); empty when the name is unknown.
std::string preset_cfg(const std::string& name);
std::vector<std::string> preset_names();

// A preset name or a cfg file path -> the parsed document.
Result<CfgDocument> load_model_cfg(const std::string& name_or_path);

}  // namespace rg
