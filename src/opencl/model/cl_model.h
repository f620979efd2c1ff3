// A Model run on an OpenCL device: one ClLayer per layer, the params mirrored in device
// memory, and for a batch of up to reserve()'s: every layer's output (kept for backward), two
// ping-pong gradient buffers, the layers' shared workspace, two input buffers (one is filled
// while the other trains) with their targets, and the loss's per-row results. A graph model
// (Model::is_graph; cl_model_graph.cpp) runs each layer on the outputs of the layers it names
// and keeps, as the CPU's does, one gradient buffer per layer output, where the gradients of
// every layer it feeds are summed (f32 storage only: f16 is refused, issue 31). The CPU Model
// keeps the cfg, the names and the host values: read_params() brings the trained values back
// for checkpoints, write_params() sends host values (a resumed run's) to the device.
// ClModelExecutor is its inference behind the executor interface (nn/executor.h).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "nn/executor.h"
#include "nn/model.h"
#include "opencl/model/cl_fusion.h"
#include "opencl/model/cl_layer.h"
#include "opencl/model/cl_param_arena.h"

namespace rg::ocl {

class ClModel {
 public:
  // The device layers of `model` (after its init()), params and buffers uploaded. Layers named
  // in `on_host` run on the CPU (hybrid; cl_host_layer.h): a name the model lacks is an error.
  static Result<std::unique_ptr<ClModel>> create(Model& model, Device& device,
                                                 const std::vector<std::string>& on_host = {});
  // Waits for the device: loss reads still in flight write into this model's host arrays.
  ~ClModel();

  Model& host() { return model_; }
  Device& device() { return device_; }

  // Where layer outputs (but the last) and the gradients between layers are kept: f32, or f16
  // for mixed precision, as Model::set_storage: layers still compute in f32, on row chunks
  // widened from f16 into four small f32 buffers, their outputs rounded to f16 as stored (layers
  // that need the whole batch get it whole); the output and the loss's gradient stay f32. The
  // chunks follow the samples' place in the batch (row_offset), so dropout draws the same masks.
  // Before reserve(). A graph model is refused f16 (issue 31).
  Status set_storage(DType storage);
  DType storage() const { return storage_; }

  // Device bytes reserve(batch) allocates, by part.
  struct ReservedBytes {
    int64_t activations = 0;  // every layer's output [batch, shape]
    int64_t layer_state = 0;  // what layers keep of their own (batch norm statistics, recurrent steps)
    int64_t gradients = 0;    // the two ping-pong buffers between layers (a graph model: and one
                              // per layer output but the last's)
    int64_t workspace = 0;    // the layers' shared scratch (im2col panels)
    int64_t chunks = 0;       // f16 storage: the f32 row chunks of a layer's x, y, dy and dx
    int64_t io = 0;           // two input buffers, two targets, per-row losses and hits
    int64_t total() const { return activations + layer_state + gradients + workspace + chunks + io; }
  };
  ReservedBytes reserved_bytes(int64_t batch) const;
  // Bytes of the params, their gradients and the buffers (allocated by create()).
  int64_t param_bytes() const;
  // Host bytes reserve(batch) allocates for the layers run on the CPU.
  int64_t host_bytes(int64_t batch) const;
  Status reserve(int64_t batch);
  int64_t reserved_batch() const { return reserved_; }

  // x [n, input...] into the next of the two input buffers, and the loss's target into its
  // pair (when defined): labels int32 [n] (softmax cross-entropy) or f32 [n, output...] (none for
  // target = input models: the input is the target); one-hot models also take their int32
  // `labels` [n], whose hits device_loss counts. Not blocking: the host tensors must stay as they
  // are until the returned event (the last upload's) completes.
  Result<Event> upload(const Tensor& x, const Tensor& target, const Tensor& labels = Tensor());
  // The forward of the last upload's input, layer by layer (elementwise layers fused into the
  // kernel before them with f32 storage, unless RETROGRAD_CL_FUSE=0 at create: cl_fusion.h); the
  // output stays on the device.
  Status forward(const LayerContext& ctx);
  // The forward of n samples already on the device (another model's output, as a GAN's
  // discriminator reads its generator's samples); x must stay as it is until backward.
  Status forward_from(DeviceSpan x, int64_t n, const LayerContext& ctx);
  // The last forward's output [n, output...] and the buffer its gradient goes in, on the device.
  DeviceSpan output() const { return acts_.back().f32(); }
  DeviceSpan output_grad() const { return storage_ == DType::f16 ? output_grad_.f32() : grad_a_.f32(); }
  int64_t batch() const { return batch_; }  // n of the last upload

  // The loss of the last forward against the last upload's target, on the device: per-row
  // losses (and argmax hits when count_hits) copied back to the host without blocking, and
  // when grad_scale != 0 the output gradient scaled by it. Needs cl_khr_fp64.
  Status device_loss(double grad_scale, bool count_hits);
  // The results of earlier device_loss calls, oldest first: waits for each, sums its row losses
  // in row order (the CPU's compute_loss total) and its hits. `keep_newest`: the last call's
  // results stay pending, so a training loop collects step t's loss after enqueueing step t + 1
  // and never waits for the step it just enqueued. At most two calls may be pending.
  struct LossSums {
    double loss = 0;
    int64_t hits = 0;
    int64_t rows = 0;  // the rows collected (0: nothing was pending)
  };
  Result<LossSums> loss_sums(bool keep_newest = false);
  // The output of the last forward, read back [n, output...] into `out` (blocking), and an
  // output gradient computed on the host sent to the device: the loss run on the CPU.
  Status read_output(const Tensor& out);
  Status write_output_grad(const Tensor& grad);
  // A GAN's loss of the last forward (train/gan.cpp) against `target` [n, output...] (f32, the
  // model's loss not softmax_cross_entropy), on the device: the output gradient scaled by
  // grad_scale, the rows' losses into row_loss [n] and the output into `out` [n, output...], read
  // back without waiting: target, row_loss and out must stay until the returned event (the last
  // of the four commands) completes. Needs cl_khr_fp64.
  Result<Event> output_loss_async(const Tensor& target, double grad_scale, double* row_loss, const Tensor& out);

  // Back-propagates the output gradient through every layer; the first layer's input gradient
  // goes to `input_grad` [n, input...] when it has a buffer (a GAN's generator's output gradient).
  // An error after an inference forward that folded a batch norm into a product (its input was
  // not kept).
  Status backward(const LayerContext& ctx, DeviceSpan input_grad = {});
  // The groups the last forward ran (cl_fusion.h).
  const std::vector<FusedGroup>& fused_groups() const { return groups_; }

  std::vector<ClParam*> params();   // in Model::params() order
  std::vector<ClParam*> buffers();  // in Model::buffers() order
  // The params' values and gradients in two buffers, each param a view of them (cl_param_arena.h).
  const ParamArena* param_arena() const { return arena_.get(); }
  // The device params were updated (an optimizer step): layers run on the CPU read them again.
  void params_changed();
  // Every copy between host and device so far: inputs, targets, losses, outputs, the hybrid
  // layers' edges and params.
  const TransferCounts& transfers() const { return transfers_; }
  // Device -> host values of every param and buffer, and host -> device (blocking).
  Status read_params();
  Status write_params();

 private:
  ClModel(Model& model, Device& device) : model_(model), device_(device) {}

  Model& model_;
  Device& device_;
  std::unique_ptr<ParamArena> arena_;  // before layers_: their params' views go first
  std::vector<std::unique_ptr<ClLayer>> layers_;
  TransferCounts transfers_;
  std::vector<int64_t> sizes_;  // sizes_[i]: values per sample of layer i's output
  int64_t input_size_ = 0, largest_ = 0;
  std::vector<Buffer> acts_;  // [batch, sizes_[i]] in the storage dtype; the last always f32
  Buffer grad_a_, grad_b_, workspace_;  // ping-pong gradients in the storage dtype
  // A graph model: graph_grads_[i] the gradient of layer i's output [batch, sizes_[i]], f32, for
  // every layer but the last, whose gradient is grad_a_ (where the loss writes it); grad_b_ is
  // then the scratch a layer's dx goes to before it is added to a gradient already there.
  std::vector<Buffer> graph_grads_;
  // reads_alone_[i]: layer i reads layer i - 1's output alone, and no other layer reads it (every
  // layer but the first of a chain): where it may fuse into the group before (plan_fusion).
  std::vector<bool> reads_alone_;
  DType storage_ = DType::f32;
  bool fuse_ = true;                 // RETROGRAD_CL_FUSE at create
  std::vector<FusedGroup> groups_;   // of the last forward, which its backward follows
  Buffer output_grad_;                  // f16 storage: the loss's f32 gradient [batch, output]
  Buffer chunk_x_, chunk_y_, chunk_dy_, chunk_dx_;  // f16 storage: f32 [chunk_elements()]
  Buffer inputs_[2], targets_[2];  // targets: labels or values; none for target = input
  Buffer onehot_labels_[2];         // one-hot models: the int32 labels the hits are counted against
  Buffer row_loss_, hits_;
  Buffer loss_target_;              // output_loss_async's target, allocated at its first call
  // device_loss's reads in flight: two slots used in turn, the oldest pending one first.
  struct PendingLoss {
    std::vector<double> row_loss;
    std::vector<int32_t> hits;
    Event loss_read, hits_read;
    int64_t rows = 0;
    bool counts_hits = false;
  };
  PendingLoss pending_[2];
  int pending_count_ = 0, next_slot_ = 0;
  int current_ = 1;  // the input buffer of the last upload
  int64_t reserved_ = 0, batch_ = 0;

  int64_t target_bytes(int64_t batch) const;
  int64_t stored_bytes() const { return storage_ == DType::f16 ? 2 : 4; }
  // Values per sample of layer i's (first) input; the output it reads, on the device.
  int64_t input_size_of(size_t i) const {
    const int j = model_.layer_inputs(i)[0];
    return j == Model::kModelInput ? input_size_ : sizes_[static_cast<size_t>(j)];
  }
  DeviceSpan layer_input(size_t i, size_t k = 0) const {
    const int j = model_.layer_inputs(i)[k];
    return j == Model::kModelInput ? input_span() : acts_[static_cast<size_t>(j)].f32();
  }
  // Rows of layer i's chunks for n samples: all of them with f32 storage or for a layer that
  // needs the whole batch; else f16_chunk_rows with kF16ChunkValuesDevice (nn/f16_chunks.h).
  int64_t chunk_rows(size_t i, const LayerContext& ctx, int64_t n) const;
  int64_t chunk_elements(int64_t batch) const;  // the largest chunk of any layer, training
  // Layer i on rows [r0, r0 + rows) of the batch (cl_model_passes.cpp).
  Status forward_rows(size_t i, int64_t r0, int64_t rows, DeviceSpan in, const ClContext& ctx);
  Status forward_group(const FusedGroup& g, const ClContext& ctx);  // a fused group over the batch
  std::string fused_names(const FusedGroup& g) const;                // "with bn1, relu1"
  // `fusion`: what layer i's backward takes on (its activation_output over the whole batch).
  Status backward_rows(size_t i, int64_t r0, int64_t rows, DeviceSpan in, DeviceSpan dy_buffer, bool dy_f32,
                       DeviceSpan dx_buffer, const ClContext& ctx, const ClBackwardFusion& fusion = {});
  // How layer i runs in the backward after the last forward (its groups_, cl_fusion.h).
  struct LayerBackward {
    bool reads_own_output = false;  // an activation fused in the forward: its y stands for its x
    bool taken_by_head = false;     // such an activation whose backward its head takes: not run
    int64_t tail = -1;              // a head that takes it: the activation's index
    size_t top(size_t i) const { return tail >= 0 ? static_cast<size_t>(tail) : i; }  // whose output's gradient is dy
  };
  // An error when the last forward folded a batch norm (whose input was not kept).
  Result<std::vector<LayerBackward>> backward_plan() const;
  // Layer i's backward fusion under `plan`: its tail's activation, and `add_to_dx`.
  ClBackwardFusion backward_fusion(size_t i, const std::vector<LayerBackward>& plan, bool add_to_dx) const;
  // Graph models (cl_model_graph.cpp): the flags above, the byte count and buffers of the
  // gradients, a merge layer's forward, and the backward over every edge.
  static std::vector<bool> reads_alone(const Model& model);
  int64_t graph_gradient_bytes(int64_t batch) const;
  Status reserve_graph_grads(int64_t batch);
  DeviceSpan gradient_of(size_t i) const { return i + 1 == layers_.size() ? grad_a_.f32() : graph_grads_[i].f32(); }
  // A merge layer's forward, the group's head (writing the group's last output, its epilogue applied).
  Status forward_merge(const FusedGroup& g, const ClContext& ctx, const ClEpilogue& epilogue);
  Status backward_graph(const ClContext& ctx, const std::vector<LayerBackward>& plan, DeviceSpan input_grad);
  Status backward_graph_layer(size_t i, const std::vector<DeviceSpan>& dxs, const std::vector<bool>& add_to,
                              const std::vector<LayerBackward>& plan, const ClContext& ctx);
  DeviceSpan external_input_;  // forward_from's x (mem null: the upload's)
  DeviceSpan input_span() const { return external_input_.mem != nullptr ? external_input_ : inputs_[current_].f32(); }
  DeviceSpan target_span() const;
  DeviceSpan labels_span() const;  // the int32 labels of the hits
  DeviceSpan output_span() const { return acts_.back().f32(); }
};

// A ClModel's inference as an Executor (nn/executor.h): the input uploaded, the forward in `ctx`,
// the output read back (blocking) into a host buffer of the reserved rows: `output` [rows,
// output...] when its owner has one (a Trainer's), else one made by reserve() or the first forward.
class ClModelExecutor : public Executor {
 public:
  ClModelExecutor(ClModel& model, const LayerContext& ctx, Tensor output = Tensor())
      : cl_(model), ctx_(ctx), output_(std::move(output)) {}
  const Model& model() const override { return cl_.host(); }
  std::string storage() const override { return cl_.storage() == DType::f16 ? "fp16" : "fp32"; }
  std::string description() const override;
  std::string place() const override { return cl_.device().label(); }
  int64_t weight_bytes() const override { return cl_.host().weight_bytes(); }
  ExecutorBytes reserved_bytes(int64_t rows) const override;
  Status reserve(int64_t rows) override;
  Result<Tensor> forward(const Tensor& x) override;

 private:
  Status reserve_output(int64_t rows);
  ClModel& cl_;
  LayerContext ctx_;
  Tensor output_;
};

}  // namespace rg::ocl
