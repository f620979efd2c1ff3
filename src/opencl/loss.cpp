// Launchers of kernels/loss.cl (one work-item per row, launch_1d.h) and the host sums of what
// they write: per-row losses added in row order as compute_loss adds them, hits counted.
#include "opencl/loss.h"

#include <string>
#include <vector>

#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kLossProgram = "loss.cl";
using detail::check_u32;
using detail::launch_1d;
using detail::need_fp64;
using detail::u32;

int64_t prediction_count(int64_t rows, int64_t cols) {
  RG_CHECK(rows >= 0 && cols >= 1, "a loss over " << rows << " x " << cols << " predictions");
  return rows * cols;
}

// Shared by the three losses: `target` is labels [rows] (softmax) or values [rows x cols]. A
// null dx.mem skips the gradient; the kernel still gets a buffer there (row_loss's), unwritten.
Result<Event> launch_loss(Device& device, const char* name, const std::string& options, int64_t rows, int64_t cols,
                          DeviceSpan x, DeviceSpan target, int64_t target_count, float grad_scale, DeviceSpan dx,
                          DeviceSpan row_loss) {
  const int64_t n = prediction_count(rows, cols);
  RG_TRY(need_fp64(device, name));
  RG_TRY(check_u32(name, n, {x}));
  RG_TRY(check_u32(name, target_count, {target}));
  RG_TRY(check_u32(name, rows, {row_loss}));
  const bool grad = dx.mem != nullptr;
  if (grad) RG_TRY(check_u32(name, n, {dx}));
  return launch_1d(device, kLossProgram, name, options, rows, u32(rows), u32(cols), x.mem, u32(x.offset), target.mem,
                   u32(target.offset), grad_scale, cl_uint{grad ? 1u : 0u}, grad ? dx.mem : row_loss.mem,
                   u32(grad ? dx.offset : 0), row_loss.mem, u32(row_loss.offset));
}

template <class T>
Result<std::vector<T>> read_elements(const Buffer& buffer, int64_t offset, int64_t rows) {
  RG_CHECK(offset >= 0 && rows >= 0 && (offset + rows) * static_cast<int64_t>(sizeof(T)) <= buffer.bytes(),
           "rows [" << offset << ", " << offset + rows << ") of " << buffer.what());
  std::vector<T> values(static_cast<size_t>(rows));
  const int64_t size = static_cast<int64_t>(sizeof(T));
  if (rows > 0) RG_TRY(read_buffer(buffer, offset * size, values.data(), rows * size));
  return values;
}

}  // namespace

DeviceSpan element_span(const Buffer& buffer, int64_t element_bytes, int64_t offset, int64_t count) {
  RG_CHECK(element_bytes > 0, "elements of " << element_bytes << " bytes");
  const int64_t total = buffer.bytes() / element_bytes;
  if (count < 0) count = total - offset;
  RG_CHECK(offset >= 0 && count >= 0 && offset + count <= total,
           "span [" << offset << ", " << offset + count << ") of " << buffer.what() << ", which holds " << total
                    << " elements of " << element_bytes << " bytes");
  return DeviceSpan{buffer.mem(), offset, count};
}

Result<Event> f32_softmax_cross_entropy(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan labels,
                                        float grad_scale, DeviceSpan dx, DeviceSpan row_loss) {
  return launch_loss(device, "f32_softmax_cross_entropy", "", rows, cols, x, labels, rows, grad_scale, dx, row_loss);
}

Result<Event> f32_mse(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan target, float grad_scale,
                      DeviceSpan dx, DeviceSpan row_loss) {
  return launch_loss(device, "f32_elementwise_mean_loss", "-DLOSS_TERM=0", rows, cols, x, target,
                     prediction_count(rows, cols), grad_scale, dx, row_loss);
}

Result<Event> f32_bce_with_logits(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan target,
                                  float grad_scale, DeviceSpan dx, DeviceSpan row_loss) {
  return launch_loss(device, "f32_elementwise_mean_loss", "-DLOSS_TERM=1", rows, cols, x, target,
                     prediction_count(rows, cols), grad_scale, dx, row_loss);
}

Result<Event> f32_loss(Device& device, LossKind kind, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan target,
                       float grad_scale, DeviceSpan dx, DeviceSpan row_loss) {
  switch (kind) {
    case LossKind::softmax_cross_entropy:
      return f32_softmax_cross_entropy(device, rows, cols, x, target, grad_scale, dx, row_loss);
    case LossKind::mse: return f32_mse(device, rows, cols, x, target, grad_scale, dx, row_loss);
    case LossKind::bce_with_logits: return f32_bce_with_logits(device, rows, cols, x, target, grad_scale, dx, row_loss);
    case LossKind::none: break;
  }
  RG_CHECK(false, "loss " << loss_name(kind) << " has nothing to compute");
  return Event();
}

Result<Event> f32_argmax_hits(Device& device, int64_t rows, int64_t cols, DeviceSpan pred, DeviceSpan labels,
                              DeviceSpan hits) {
  RG_TRY(check_u32("f32_argmax_hits", prediction_count(rows, cols), {pred}));
  RG_TRY(check_u32("f32_argmax_hits", rows, {labels, hits}));
  return launch_1d(device, kLossProgram, "f32_argmax_hits", "", rows, u32(rows), u32(cols), pred.mem, u32(pred.offset),
                   labels.mem, u32(labels.offset), hits.mem, u32(hits.offset));
}

Result<double> sum_row_losses(const Buffer& row_loss, int64_t offset, int64_t rows) {
  RG_ASSIGN(const std::vector<double> values, read_elements<double>(row_loss, offset, rows));
  double total = 0;
  for (double v : values) total += v;  // compute_loss's order: row 0 first
  return total;
}

Result<int64_t> sum_hits(const Buffer& hits, int64_t offset, int64_t rows) {
  RG_ASSIGN(const std::vector<int32_t> values, read_elements<int32_t>(hits, offset, rows));
  int64_t total = 0;
  for (int32_t v : values) total += v;
  return total;
}

}  // namespace rg::ocl
