// The fused multiply-add the f32 kernels ask for, one rounding on every level that has FMA.
// xsimd 8.1's own xsimd::fma is a multiply then an add (two roundings, two instructions) on its
// avx512 architectures: they derive from its generic one, not from fma3<avx2>. Include ONLY from
// an isa/*.cpp file's headers (see f32_gemm_impl.h): templated on Arch, so no symbol is shared
// between levels.
#pragma once

#include <type_traits>
#include <xsimd/xsimd.hpp>

namespace rg {
namespace ukernel {

// x * y + z: vfmadd on AVX-512, xsimd::fma elsewhere (one rounding with FMA3, x * y + z without).
template <class Arch>
inline xsimd::batch<float, Arch> fused_multiply_add(const xsimd::batch<float, Arch>& x,
                                                    const xsimd::batch<float, Arch>& y,
                                                    const xsimd::batch<float, Arch>& z) {
#if defined(__AVX512F__)
  if constexpr (std::is_base_of<xsimd::avx512f, Arch>::value) {
    return _mm512_fmadd_ps(x, y, z);
  } else {
    return xsimd::fma(x, y, z);
  }
#else
  return xsimd::fma(x, y, z);
#endif
}

}  // namespace ukernel
}  // namespace rg
