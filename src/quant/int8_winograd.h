// Int8 3x3 stride-1 convolutions by integer Winograd F(2x2, 3x3): 16 multiplies per 2x2 output
// pixels and channel pair where im2col and the GEMM do 36, with the same bits as the GEMM stage
// (docs/quantization.md says why it is exact). The stage itself: make_winograd_stage
// (int8_stages.h); here the weight transform and when the stage applies (the kernels:
// qs8_winograd_kernel in cpu/kernel_tables.h).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/isa.h"
#include "cpu/kernel_tables.h"
#include "ops/im2col.h"

namespace rg {

// The input channels a Winograd stage takes: Y = 4 x (the direct conv's sum) must stay inside
// int32, |Y| <= 4 * 9 * channels * 128 * 127 < 2^31. Below the minimum im2col and the GEMM win
// (the channels are padded to 8, and the transforms cost per tile whatever the channel count).
constexpr int64_t kWinogradMinChannels = 8;
constexpr int64_t kWinogradMaxChannels = (int64_t{1} << 31) / (4 * 9 * 128 * 127);  // 3669

// A 3x3 kernel, stride 1, padding at most 2, and channels in [kWinogradMinChannels, kWinogradMaxChannels].
bool winograd_fits(const ConvGeometry& g);

// Input channels padded to whole quads of pairs (the kernels' step).
inline int64_t winograd_padded_channels(int64_t channels) { return (channels + 7) / 8 * 8; }

// The int8 filters q [9 * channels x filters] (im2col's row order: (kh * 3 + kw) * channels + c)
// -> U [16][channels][filters], U = G' g G'^T per (channel, filter), |U| <= 9 * 127.
std::vector<int16_t> winograd_weights(int64_t channels, int64_t filters, const int8_t* q);

// U in the tile kernel's panels of nr filters (qs8_winograd.h): panel-major, zeros past
// channels and filters; panels * 16 * (cpad / 2) * nr * 2 values written to `packed`.
void pack_winograd_weights(int64_t channels, int64_t filters, const std::vector<int16_t>& u, int64_t nr,
                           int16_t* packed);

}  // namespace rg
