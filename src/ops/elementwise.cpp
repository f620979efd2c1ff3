// The split f32 column sum (ops/elementwise.h).
#include <algorithm>
#include <vector>

#include "ops/elementwise.h"

namespace rg {

// Blocks of rows_per_block(cols) rows sum into their own partial row, in parallel; the partials
// are then added into `sums` in block order. One block: straight into `sums`, no partials.
void column_sum(ThreadPool* pool, int64_t rows, int64_t cols, const float* x, float* sums) {
  const int64_t block = rows_per_block(cols), blocks = (rows + block - 1) / block;
  if (blocks <= 1) {
    f32_vector().column_sum(rows, cols, x, sums);
    return;
  }
  std::vector<float> partial(static_cast<size_t>(blocks * cols), 0.0f);  // [blocks, cols]
  parallel_for(pool, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
      f32_vector().column_sum(r1 - r0, cols, x + r0 * cols, partial.data() + b * cols);
    }
  });
  f32_vector().column_sum(blocks, cols, partial.data(), sums);
}

}  // namespace rg
