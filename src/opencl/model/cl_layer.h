// The device side of a CPU layer: forward and backward over device buffers, the layer's
// params (and buffers) mirrored in device memory. The CPU Layer stays the owner of the
// configuration, the names and the host values checkpoints save; a ClLayer is made from it
// after its init() (make_cl_layer) and reads its settings from it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "nn/layer.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/fused_activation.h"

namespace rg::ocl {

// A param (or a buffer: BatchNorm's running statistics) of a CPU layer kept on the device:
// value and, for trained params, grad, both f32 [host->value.numel()].
struct ClParam {
  Param* host = nullptr;
  Buffer value, grad;  // grad empty for buffers
  int64_t numel() const { return host->value.numel(); }
};

// Allocates `param`'s device copy (with a gradient buffer when `trained`; both views of the
// model's ParamArena where one is in scope and holds it) and uploads its value.
Result<ClParam> upload_param(Device& device, Param& param, bool trained);
// Host value -> device value, and back (blocking).
Status write_param(const ClParam& param);
Status read_param(const ClParam& param);

// Bytes moved between host and device, and how many copies moved them.
struct TransferCounts {
  int64_t up_bytes = 0, down_bytes = 0;
  int64_t ups = 0, downs = 0;
  void up(int64_t bytes) { up_bytes += bytes, ++ups; }
  void down(int64_t bytes) { down_bytes += bytes, ++downs; }
};

// What one forward or backward of a device layer sees.
struct ClContext {
  const LayerContext& host;  // training, accumulate_grads, noise_stream, row_offset, the CPU's threads
  DeviceSpan workspace;      // f32 scratch shared by every layer: workspace_elements(n) of it are this layer's
  TransferCounts* transfers = nullptr;  // where layers that copy (hybrid ones) count it
};

// What a fusion head's last kernel applies to its output for the layers fused after it (cl_fusion.h).
struct ClEpilogue {
  DeviceSpan affine;           // a batch norm folded in (inference): scale, shift [2, channels]; mem null: none
  FusedActivation activation;  // then relu or leaky relu
};

// What a layer's backward takes on for the model (cl_fusion.h), each with the bits of the launch
// it replaces: the backward of the activation fused after it in the forward (dy is then the
// gradient of that activation's output [n, out...], read through its backward), and adding dx
// onto what dx holds (a graph model's input read by several layers: f32_add's bits).
struct ClBackwardFusion {
  FusedActivation activation;  // kind none: no activation
  DeviceSpan activation_output;
  bool add_to_dx = false;
};

class ClLayer {
 public:
  virtual ~ClLayer() = default;

  // x [n, in...] -> y [n, out...], f32 spans holding at least that much (n <= the reserved batch).
  virtual Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) = 0;
  // As Layer::backward: params' grads += (or =, when !ctx.host.accumulate_grads) their
  // gradient; dx written when dx.mem is not null.
  virtual Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx,
                          const ClContext& ctx) = 0;

  // In the order of the CPU layer's params() and buffers().
  virtual std::vector<ClParam*> params() { return {}; }
  virtual std::vector<ClParam*> buffers() { return {}; }
  // f32 scratch elements forward and backward take for a batch of n from ClContext::workspace.
  virtual int64_t workspace_elements(int64_t n) const {
    (void)n;
    return 0;
  }
  // Device bytes the layer keeps of its own from forward to backward for batches of up to
  // `batch` (BatchNorm's statistics, a recurrent layer's steps): reserve() allocates them.
  virtual int64_t state_bytes(int64_t batch) const {
    (void)batch;
    return 0;
  }
  virtual Status reserve(int64_t batch) {
    (void)batch;
    return Status();
  }
  // Frees what reserve() allocated (ClModel::reserve calls it on every layer first, so a smaller
  // batch after a failed larger one does not keep the larger one's buffers).
  virtual void release() {}
  // True when forward and backward must see the whole batch at once even where the model runs
  // layers on row chunks (f16 storage): a layer run on the CPU keeps the batch in its own buffers.
  virtual bool needs_whole_batch() const { return false; }
  // Host bytes reserve() allocates (a layer run on the CPU: its inputs and outputs).
  virtual int64_t host_bytes(int64_t batch) const {
    (void)batch;
    return 0;
  }
  // The device optimizer changed the params: a layer holding host copies reads them again.
  virtual void params_changed() {}

  // Fusion (cl_fusion.h): the elementwise layers after a head run in the head's last kernel. The
  // defaults: none, so a layer run on the CPU (hybrid) or of another kind is never fused.
  // As a head: what its last kernel applies to y (dense and Conv2D: both, in the GEMM's
  // epilogue; batch norm: the activation, in its apply kernel).
  // Backward (backward_fused): activation_backward, the fused activation's backward as it reads
  // dy; add_to_dx, dx added onto (a product that can take beta 1 now: it may change after the
  // first backward, which chooses the path).
  struct FusionHead {
    bool affine = false, activation = false;
    bool activation_backward = false, add_to_dx = false;
  };
  virtual FusionHead fusion_head() const { return {}; }
  // forward with `epilogue` applied to y; only what fusion_head() says it takes.
  virtual Status forward_fused(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx,
                               const ClEpilogue& epilogue) {
    (void)n, (void)x, (void)y, (void)ctx, (void)epilogue;
    RG_CHECK(false, "forward_fused of a layer that is no fusion head");
    return Status();
  }
  // backward taking on `fusion`: only what fusion_head() says it takes.
  virtual Status backward_fused(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx,
                                const ClContext& ctx, const ClBackwardFusion& fusion) {
    (void)n, (void)x, (void)y, (void)dy, (void)dx, (void)ctx, (void)fusion;
    RG_CHECK(false, "backward_fused of a layer that takes no backward fusion");
    return Status();
  }
  // After a head: an activation it can apply (kind none: not one), or a batch norm whose
  // inference is a per-channel affine (write_inference_affine). A fused activation's backward
  // reads its output y in place of its input x, which the head never writes: so only
  // activations whose gradient is the same from either.
  struct FusionTail {
    FusedActivation activation;
    bool inference_affine = false;
  };
  virtual FusionTail fusion_tail() const { return {}; }
  // The affine of a batch norm in inference, [2, channels] (scale, then shift), written into a
  // buffer of the layer's own (reserve()) by one launch, for the head's epilogue.
  virtual Result<DeviceSpan> write_inference_affine() {
    RG_CHECK(false, "write_inference_affine of a layer that has none");
    return DeviceSpan{};
  }
};

// The device makers, by kind: each takes the CPU layer of its kind (a bug otherwise) after its
// init(), and the per-sample input shape.
using ClLayerMake = Result<std::unique_ptr<ClLayer>> (*)(Layer& layer, const Shape& input, Device& device);
struct ClLayerMaker {
  const char* kind;  // the cfg section, as in nn's rows (nn/layer_registry.h)
  ClLayerMake make;
};
// Registers `make` for each of `kinds`; returns true. A device layer's source registers its
// makers at start-up, as `const bool kSomethingRegistered = register_cl_layer_makers(...)` in its
// anonymous namespace: no table elsewhere names them. Those sources are linked whole
// (cl_layer_sources in meson.build), since nothing else refers to them by name.
bool register_cl_layer_makers(std::initializer_list<const char*> kinds, ClLayerMake make);
// Every maker registered: one for each kind whose row says DeviceRun::own (checked by
// check_cl_layer_makers).
const std::vector<ClLayerMaker>& cl_layer_makers();
// `makers` against nn's rows: a maker for every kind the device runs itself, none for a kind
// run on the host or for a name that is no kind, no kind twice; the error names each.
Status check_cl_layer_makers(const std::vector<ClLayerMaker>& makers);

// The device layer of `layer` (initialised: its params are uploaded), whose samples are `input`
// and `output`: its own device layer, or its CPU layer run inside the device model
// (cl_host_layer.h) when `on_host` (--cpu-layers) or when its kind's row says host.
Result<std::unique_ptr<ClLayer>> make_cl_layer(Layer& layer, const Shape& input, const Shape& output, Device& device,
                                               bool on_host = false);

}  // namespace rg::ocl
