// How many rows of a batch a layer runs on at once when activations are stored in f16 and
// widened into f32 chunk buffers: the CPU Model (model_f16.cpp) and the device model
// (opencl/model/cl_model_passes.cpp) both ask here.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rg {

// f32 values of one chunk buffer. The CPU's four buffers cost a fixed 2 MB whatever the batch,
// and a chunk's rows stay in cache; the device's are 4 MiB each, fewer and larger launches.
constexpr int64_t kF16ChunkValuesHost = int64_t{1} << 17;
constexpr int64_t kF16ChunkValuesDevice = int64_t{1} << 20;

// The rows of a batch of `n` (n >= 1) whose widest side (input or output, values a row) fits
// `chunk_values`: at least one row, at most n.
inline int64_t f16_chunk_rows(int64_t n, int64_t widest, int64_t chunk_values) {
  return std::max<int64_t>(1, std::min(n, chunk_values / std::max<int64_t>(1, widest)));
}

}  // namespace rg
