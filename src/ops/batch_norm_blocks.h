// How batch norm's statistics and gradient sums are cut and merged, on the CPU (nn/batch_norm.cpp)
// and on a device (kernels/batch_norm.cl, given these as build options by opencl/batch_norm.cpp):
// the same numbers, so the device's bits are the CPU's. Rows go in blocks of kStatsRowBlock, each
// block's partials in the layer's type; the blocks are merged into double in block order within
// groups of kStatsBlockGroup blocks, the groups then in group order: a channel's chain of merges
// is a group long, then a group count (the device runs each group on its own item; cnn at batch
// 256 has 3136 blocks a channel). One group: every block merged in order, as before the groups.
#pragma once

#include <cstdint>

namespace rg {

constexpr int64_t kStatsRowBlock = 64;
constexpr int64_t kStatsBlockGroup = 64;

inline int64_t stats_blocks(int64_t rows) { return (rows + kStatsRowBlock - 1) / kStatsRowBlock; }
inline int64_t stats_groups(int64_t rows) { return (stats_blocks(rows) + kStatsBlockGroup - 1) / kStatsBlockGroup; }

}  // namespace rg
