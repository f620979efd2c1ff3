// Packing (8-bit, and 4-bit two a byte) and the blocked loop over the qs8 tiles.
#include "quant/qs8_gemm.h"

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>  // the baseline's own instructions (widen_s4)
#endif

#include "base/check.h"
#include "base/thread_scratch.h"
#include "cpu/kernel_tables.h"
#include "ops/fixed_point.h"

namespace rg {

void widen_s4_ref(int64_t n, const uint8_t* packed, int8_t* out) {
  RG_CHECK(n % 2 == 0, "widen_s4: " << n << " values (two a byte: an even count)");
  for (int64_t i = 0; i < n; i += 2) {
    const int byte = packed[i / 2];
    out[i] = static_cast<int8_t>(((byte & 15) ^ 8) - 8);  // the low nibble, sign-extended
    out[i + 1] = static_cast<int8_t>(((byte >> 4) ^ 8) - 8);
  }
}

// widen_s4_ref 32 values at a time on SSE2: each nibble masked, sign-extended by (v ^ 8) - 8 in
// bytes, low and high nibbles interleaved back into their order.
void widen_s4(int64_t n, const uint8_t* packed, int8_t* out) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
  for (; i + 32 <= n; i += 32) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + i / 2));
    const __m128i lo = _mm_sub_epi8(_mm_xor_si128(_mm_and_si128(bytes, mask), eight), eight);
    const __m128i hi = _mm_sub_epi8(_mm_xor_si128(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), eight), eight);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi8(lo, hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 16), _mm_unpackhi_epi8(lo, hi));
  }
#endif
  widen_s4_ref(n - i, packed + i / 2, out + i);
}

namespace {

// The 8-bit panel layout's values, two a byte (the low nibble first).
Result<Tensor> two_a_byte(const Tensor& wide, const std::string& what) {
  const int64_t n = wide.shape()[0];
  auto data = Tensor::zeros(Shape{n / 2}, DType::i8, what);
  if (!data.ok()) return data.status();
  const int8_t* in = wide.data<int8_t>();
  int8_t* out = data.value().data<int8_t>();  // bytes, not values
  for (int64_t i = 0; i < n; i += 2) out[i / 2] = static_cast<int8_t>((in[i] & 15) | ((in[i + 1] & 15) << 4));
  return data.take();
}

}  // namespace

Result<Qs8PackedWeights> pack_qs8_weights(int64_t k, int64_t n, const int8_t* b, int64_t nr, const std::string& what,
                                          int bits) {
  RG_CHECK(bits == 8 || bits == 4, "pack_qs8_weights: " << bits << " bits (8 or 4)");
  Qs8PackedWeights packed;
  packed.k = k;
  packed.n = n;
  packed.nr = nr;
  const int64_t panels = (n + nr - 1) / nr, kgroups = packed.kgroups();
  auto data = Tensor::zeros(Shape{panels * packed.panel_values()}, DType::i8, what);
  if (!data.ok()) return data.status();
  packed.data = data.take();
  int8_t* out = packed.data.data<int8_t>();
  const int lo = bits == 8 ? -127 : -8, hi = bits == 8 ? 127 : 7;
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < nr && panel * nr + j < n; ++j) {
        const int8_t v = b[p * n + panel * nr + j];
        RG_CHECK(v >= lo && v <= hi, "" << what << ": weight " << p << "," << panel * nr + j << " is " << int{v}
                                        << " (must be in [" << lo << ", " << hi << "])");
        out[((panel * kgroups + p / 4) * nr + j) * 4 + p % 4] = v;
      }
  if (bits == 4) {
    RG_ASSIGN(packed.data, two_a_byte(packed.data, what));
    packed.bits = 4;
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
  const int64_t panel_values = b.panel_values(), panel_bytes = panel_values * b.bits / 8;
  static const ThreadScratchKey wide_key;  // a 4-bit panel widened
  // Blocks of 32 rows: their A (32 x k bytes) stays in L1 while every panel of B passes by (a
  // 4-bit panel is widened for each block: ~1/32 of the tiles' work, on vectors).
  constexpr int64_t kRowBlock = 32;
  const int64_t blocks = (m + kRowBlock - 1) / kRowBlock;
  const int64_t flops = 2 * m * n * b.k;
  parallel_for(flops >= (int64_t{1} << 21) ? pool : nullptr, blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<int8_t>* wide = nullptr;
    if (b.bits == 4) {
      wide = &thread_scratch<std::vector<int8_t>>(wide_key);
      if (static_cast<int64_t>(wide->size()) < panel_values) wide->resize(static_cast<size_t>(panel_values));
    }
    for (int64_t block = begin; block < end; ++block) {
      const int64_t row_end = std::min(m, (block + 1) * kRowBlock);
      for (int64_t panel = 0; panel < panels; ++panel) {
        const int64_t j0 = panel * nr, cols = std::min(nr, n - j0);
        const int8_t* b_panel = packed + panel * panel_bytes;
        if (wide != nullptr) {
          widen_s4(panel_values, reinterpret_cast<const uint8_t*>(b_panel), wide->data());
          b_panel = wide->data();
        }
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
