// Packing and the blocked loop over the qs8 tiles.
#include "quant/qs8_gemm.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "cpu/kernel_tables.h"
#include "ops/fixed_point.h"

namespace rg {

Result<Qs8PackedWeights> pack_qs8_weights(int64_t k, int64_t n, const int8_t* b, int64_t nr,
                                          const std::string& what) {
  Qs8PackedWeights packed;
  packed.k = k;
  packed.n = n;
  packed.nr = nr;
  const int64_t panels = (n + nr - 1) / nr, kgroups = packed.kgroups();
  auto data = Tensor::zeros(Shape{panels * kgroups * nr * 4}, DType::i8, what);
  if (!data.ok()) return data.status();
  packed.data = data.take();
  int8_t* out = packed.data.data<int8_t>();
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < nr && panel * nr + j < n; ++j) {
        const int8_t v = b[p * n + panel * nr + j];
        RG_CHECK(v != -128, "" << what << ": weight " << p << "," << panel * nr + j << " is -128 (must be in [-127, 127])");
        out[((panel * kgroups + p / 4) * nr + j) * 4 + p % 4] = v;
      }
  return packed;
}

void pad_columns(Qs8OutputStage* out) {
  const size_t n = (out->bias.size() + 31) / 32 * 32;
  out->bias.resize(n, 0);
  out->multiplier.resize(n, 0);
  out->shift.resize(n, 0);
}

const Qs8GemmKernel& qs8_kernel_for_packing(Isa isa, int64_t nr) {
  const Qs8GemmKernel& wide = qs8_gemm_kernel(isa);
  return nr == wide.nr ? wide : qs8_gemm_narrow_kernel(isa);
}

void qs8_gemm(Isa isa, int64_t m, const int8_t* a, int64_t lda, const Qs8PackedWeights& b,
              const Qs8OutputStage& out, int8_t* c, int64_t ldc, ThreadPool* pool) {
  const Qs8GemmKernel& kernel = qs8_kernel_for_packing(isa, b.nr);
  RG_CHECK(b.nr == kernel.nr, "weights packed for nr " << b.nr << ", the " << kernel.name << " tile needs " << kernel.nr);
  RG_CHECK(lda >= qs8_padded_depth(b.k) && ldc >= b.n, "qs8_gemm: lda " << lda << ", ldc " << ldc);
  RG_CHECK(static_cast<int64_t>(out.bias.size()) >= (b.n + kernel.nr - 1) / kernel.nr * kernel.nr,
           "qs8_gemm: the output stage's columns are not padded (pad_columns)");
  const int64_t mr = kernel.mr, nr = kernel.nr, kgroups = b.kgroups(), n = b.n;
  const int64_t panels = (n + nr - 1) / nr;
  const int8_t* packed = b.data.data<int8_t>();
  // Blocks of 32 rows: their A (32 x k bytes) stays in L1 while every panel of B passes by.
  constexpr int64_t kRowBlock = 32;
  const int64_t blocks = (m + kRowBlock - 1) / kRowBlock;
  const int64_t flops = 2 * m * n * b.k;
  parallel_for(flops >= (int64_t{1} << 21) ? pool : nullptr, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) {
      const int64_t row_end = std::min(m, (block + 1) * kRowBlock);
      for (int64_t panel = 0; panel < panels; ++panel) {
        const int64_t j0 = panel * nr, cols = std::min(nr, n - j0);
        const int8_t* b_panel = packed + panel * kgroups * nr * 4;
        const Qs8Requant rq{out.bias.data() + j0, out.multiplier.data() + j0, out.shift.data() + j0,
                            out.zero_point, out.lo, out.hi};
        for (int64_t i = block * kRowBlock; i < row_end; i += mr)
          kernel.tile_requant(std::min(mr, row_end - i), cols, kgroups, a + i * lda, lda, b_panel, &rq, c + i * ldc + j0,
                              ldc);
      }
    }
  });
}

void qs8_gemm_ref(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b,
                  const Qs8OutputStage& out, int8_t* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int32_t sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += int32_t{a[i * lda + p]} * int32_t{b[p * n + j]};
      const QuantMultiplier mult{out.multiplier[static_cast<size_t>(j)], out.shift[static_cast<size_t>(j)]};
      c[i * ldc + j] = static_cast<int8_t>(
          requantize(sum + out.bias[static_cast<size_t>(j)], mult, out.zero_point, out.lo, out.hi));
    }
}

}  // namespace rg
