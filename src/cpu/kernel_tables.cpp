// Which kernel of each family runs at each ISA level (baseline code: it only picks
// function pointers; nothing here executes an ISA's instructions).
#include "cpu/kernel_tables.h"

#include "base/check.h"

namespace rg {

namespace {
// The f32 families' one table of levels: each level has its own kernels but SSE3, SSSE3 and
// SSE4.1, which add nothing f32 vector code uses (they run sse2's).
template <class Family>
const Family& f32_level(Isa isa, const Family& reference, const Family& sse2, const Family& avx,
                        const Family& avx2_fma, const Family& avx512) {
  switch (isa) {
    case Isa::reference: return reference;
    case Isa::sse2:
    case Isa::sse3:
    case Isa::ssse3:
    case Isa::sse41: return sse2;
    case Isa::avx: return avx;
    case Isa::avx2_fma: return avx2_fma;
    case Isa::avx512: return avx512;
  }
  return reference;
}
}  // namespace

const F32GemmKernel& f32_gemm_kernel(Isa isa) {
  static const F32GemmKernel reference{f32_gemm_6x8__reference, f32_gemm_gathered_6x8__reference, 6, 8, "f32_gemm_6x8__reference"};
  static const F32GemmKernel sse2{f32_gemm_6x8__sse2, f32_gemm_gathered_6x8__sse2, 6, 8, "f32_gemm_6x8__sse2"};
  static const F32GemmKernel avx{f32_gemm_6x16__avx, f32_gemm_gathered_6x16__avx, 6, 16, "f32_gemm_6x16__avx"};
  static const F32GemmKernel avx2_fma{f32_gemm_6x16__avx2_fma, f32_gemm_gathered_6x16__avx2_fma, 6, 16, "f32_gemm_6x16__avx2_fma"};
  static const F32GemmKernel avx512{f32_gemm_12x32__avx512, f32_gemm_gathered_12x32__avx512, 12, 32,
                                    "f32_gemm_12x32__avx512"};
  return f32_level(isa, reference, sse2, avx, avx2_fma, avx512);
}

const F32GemmKernel& f32_gemm_narrow_kernel(Isa isa) {
  static const F32GemmKernel avx{f32_gemm_8x8__avx, f32_gemm_gathered_8x8__avx, 8, 8, "f32_gemm_8x8__avx"};
  static const F32GemmKernel avx2_fma{f32_gemm_8x8__avx2_fma, f32_gemm_gathered_8x8__avx2_fma, 8, 8,
                                      "f32_gemm_8x8__avx2_fma"};
  static const F32GemmKernel avx512{f32_gemm_16x16__avx512, f32_gemm_gathered_16x16__avx512, 16, 16,
                                    "f32_gemm_16x16__avx512"};
  switch (isa) {
    case Isa::avx: return avx;
    case Isa::avx2_fma: return avx2_fma;
    case Isa::avx512: return avx512;
    default: return f32_gemm_kernel(isa);  // its tile is 8 wide already
  }
}

const F32GemmKernel& f32_gemm_kernel_for(Isa isa, int64_t n) {
  if (isa == Isa::avx512 && n <= 8) return f32_gemm_narrow_kernel(Isa::avx2_fma);
  const F32GemmKernel& narrow = f32_gemm_narrow_kernel(isa);
  return n <= narrow.nr ? narrow : f32_gemm_kernel(isa);
}

const F32ShiftedKernel& f32_gemm_shifted_kernel(Isa isa) {
  static const F32ShiftedKernel reference{f32_gemm_shifted_6x8__reference, 6, 8, "f32_gemm_shifted_6x8__reference"};
  static const F32ShiftedKernel sse2{f32_gemm_shifted_6x8__sse2, 6, 8, "f32_gemm_shifted_6x8__sse2"};
  static const F32ShiftedKernel avx{f32_gemm_shifted_6x16__avx, 6, 16, "f32_gemm_shifted_6x16__avx"};
  static const F32ShiftedKernel avx2_fma{f32_gemm_shifted_6x16__avx2_fma, 6, 16, "f32_gemm_shifted_6x16__avx2_fma"};
  static const F32ShiftedKernel avx512{f32_gemm_shifted_6x32__avx512, 6, 32, "f32_gemm_shifted_6x32__avx512"};
  return f32_level(isa, reference, sse2, avx, avx2_fma, avx512);
}

const F32DotKernel& f32_gemm_dot_kernel(Isa isa) {
  static const F32DotKernel reference{f32_gemm_dot_1x6__reference, 1, 6, "f32_gemm_dot_1x6__reference"};
  static const F32DotKernel sse2{f32_gemm_dot_1x3__sse2, 1, 3, "f32_gemm_dot_1x3__sse2"};
  static const F32DotKernel avx{f32_gemm_dot_1x6__avx, 1, 6, "f32_gemm_dot_1x6__avx"};
  static const F32DotKernel avx2_fma{f32_gemm_dot_1x6__avx2_fma, 1, 6, "f32_gemm_dot_1x6__avx2_fma"};
  static const F32DotKernel avx512{f32_gemm_dot_4x6__avx512, 4, 6, "f32_gemm_dot_4x6__avx512"};
  return f32_level(isa, reference, sse2, avx, avx2_fma, avx512);
}

// One level's F32VectorKernels: function##__##isa of each kernel of the family's list, then its name.
#define RG_F32_VECTOR_ENTRY(member, Type, function, isa) function##__##isa,
#define RG_F32_VECTOR_TABLE(isa) \
  F32VectorKernels { RG_F32_VECTOR_KERNEL_LIST(RG_F32_VECTOR_ENTRY, isa) #isa }

const F32VectorKernels& f32_vector_kernels(Isa isa) {
  static const F32VectorKernels reference = RG_F32_VECTOR_TABLE(reference);
  static const F32VectorKernels sse2 = RG_F32_VECTOR_TABLE(sse2);
  static const F32VectorKernels avx = RG_F32_VECTOR_TABLE(avx);
  static const F32VectorKernels avx2_fma = RG_F32_VECTOR_TABLE(avx2_fma);
  static const F32VectorKernels avx512 = RG_F32_VECTOR_TABLE(avx512);
  return f32_level(isa, reference, sse2, avx, avx2_fma, avx512);
}

const F32WinogradKernels& f32_winograd_kernels(Isa isa) {
#define RG_F32_WINOGRAD_TABLE(isa) \
  F32WinogradKernels { f32_winograd_input__##isa, f32_winograd_output__##isa, f32_winograd_grad__##isa, #isa }
  static const F32WinogradKernels reference = RG_F32_WINOGRAD_TABLE(reference);
  static const F32WinogradKernels sse2 = RG_F32_WINOGRAD_TABLE(sse2);
  static const F32WinogradKernels avx = RG_F32_WINOGRAD_TABLE(avx);
  static const F32WinogradKernels avx2_fma = RG_F32_WINOGRAD_TABLE(avx2_fma);
  static const F32WinogradKernels avx512 = RG_F32_WINOGRAD_TABLE(avx512);
#undef RG_F32_WINOGRAD_TABLE
  return f32_level(isa, reference, sse2, avx, avx2_fma, avx512);
}

const HalfConvertKernels& bf16_convert_kernels(Isa isa) {
  static const HalfConvertKernels reference{bf16_to_f32__reference, f32_to_bf16__reference, "reference"};
  static const HalfConvertKernels sse2{bf16_to_f32__sse2, f32_to_bf16__sse2, "sse2"};
  return isa == Isa::reference ? reference : sse2;
}

const HalfConvertKernels& f16_convert_kernels(Isa isa, bool cpu_has_f16c) {
  static const HalfConvertKernels reference{f16_to_f32__reference, f32_to_f16__reference, "reference"};
  static const HalfConvertKernels sse2{f16_to_f32__sse2, f32_to_f16__sse2, "sse2"};
  static const HalfConvertKernels f16c{f16_to_f32__f16c, f32_to_f16__f16c, "f16c"};
  if (isa == Isa::reference) return reference;
  if (cpu_has_f16c && isa >= Isa::avx) return f16c;
  return sse2;  // SSE3..SSE4.1 and AVX add nothing these use
}

// The int8 families: avx512 runs avx2's kernels, but the GEMM and Winograd tiles where the CPU
// has VNNI.

namespace {
// This CPU's AVX512_VNNI (CPUID, with the OS saving the ZMM state: CpuFeatures), read once.
bool this_cpu_has_vnni() {
  static const bool has_vnni = detect_cpu().features.avx512vnni;
  return has_vnni;
}
}  // namespace

const Qs8GemmKernel& qs8_gemm_kernel(Isa isa) { return qs8_gemm_kernel(isa, this_cpu_has_vnni()); }

const Qs8GemmKernel& qs8_gemm_kernel(Isa isa, bool cpu_has_vnni) {
  static const Qs8GemmKernel reference{qs8_gemm_4x8__reference, qs8_requantize__reference, 4, 8,
                                       "qs8_gemm_4x8__reference", qs8_gemm_requant_4x8__reference};
  // SSE2's requantization (pmuludq products, shifts as products) serves every level below AVX2.
  static const Qs8GemmKernel sse2{qs8_gemm_4x8__sse2, qs8_requantize__sse2, 4, 8, "qs8_gemm_4x8__sse2",
                                  qs8_gemm_requant_4x8__sse2};
  static const Qs8GemmKernel ssse3{qs8_gemm_4x8__ssse3, qs8_requantize__sse2, 4, 8, "qs8_gemm_4x8__ssse3",
                                   qs8_gemm_requant_4x8__ssse3};
  static const Qs8GemmKernel avx2{qs8_gemm_4x16__avx2, qs8_requantize__avx2, 4, 16, "qs8_gemm_4x16__avx2",
                                  qs8_gemm_requant_4x16__avx2};
  static const Qs8GemmKernel vnni{qs8_gemm_8x16__avx512_vnni, qs8_requantize__avx2, 8, 16,
                                  "qs8_gemm_8x16__avx512_vnni", qs8_gemm_requant_8x16__avx512_vnni};
  switch (isa) {
    case Isa::reference: return reference;
    case Isa::sse2:
    case Isa::sse3: return sse2;
    case Isa::ssse3:
    case Isa::sse41:
    case Isa::avx: return ssse3;  // AVX1 has no 256-bit integer instructions
    case Isa::avx2_fma: return avx2;
    case Isa::avx512: return cpu_has_vnni ? vnni : avx2;
  }
  return reference;
}

const Qs16GemmKernel& qs16_gemm_kernel(Isa isa) {
  static const Qs16GemmKernel reference{qs16_gemm_4x8__reference, 4, 8, "qs16_gemm_4x8__reference", false,
                                        qs16_split_2x8__reference, 2};
  static const Qs16GemmKernel sse2{qs16_gemm_4x8__sse2, 4, 8, "qs16_gemm_4x8__sse2", false, qs16_split_2x8__sse2, 2};
  static const Qs16GemmKernel sse2_for_int8{qs16_gemm_4x8__sse2, 4, 8, "qs16_gemm_4x8__sse2", true,
                                            qs16_split_2x8__sse2, 2};
  static const Qs16GemmKernel avx2{qs16_gemm_4x16__avx2, 4, 16, "qs16_gemm_4x16__avx2"};
  static const Qs16GemmKernel avx512{qs16_gemm_8x16__avx512, 8, 16, "qs16_gemm_8x16__avx512"};
  switch (isa) {
    case Isa::reference: return reference;
    case Isa::sse2:
    case Isa::sse3: return sse2_for_int8;  // the qs8 tile below ssse3 widens bytes in its loop
    case Isa::ssse3:
    case Isa::sse41:
    case Isa::avx: return sse2;  // AVX1 has no 256-bit integer instructions
    case Isa::avx2_fma: return avx2;
    case Isa::avx512: return avx512;
  }
  return reference;
}

const Qs8GemmKernel& qs8_gemm_narrow_kernel(Isa isa) {
  static const Qs8GemmKernel avx2{qs8_gemm_4x8__avx2, qs8_requantize__avx2, 4, 8, "qs8_gemm_4x8__avx2",
                                  qs8_gemm_requant_4x8__avx2};
  return isa >= Isa::avx2_fma ? avx2 : qs8_gemm_kernel(isa);
}

const Qs8ConvKernel& qs8_conv_kernel(Isa isa) {
  static const Qs8ConvKernel reference{qs8_conv_pairs__reference, 1, "qs8_conv_pairs__reference"};
  static const Qs8ConvKernel sse2{qs8_conv_pairs__sse2, 4, "qs8_conv_pairs__sse2"};
  static const Qs8ConvKernel avx2{qs8_conv_pairs__avx2, 8, "qs8_conv_pairs__avx2"};
  switch (isa) {
    case Isa::reference: return reference;
    case Isa::avx2_fma:
    case Isa::avx512: return avx2;
    default: return sse2;
  }
}

const HalfConvertKernels& f16_convert() {
  static const bool has_f16c = detect_cpu().features.f16c;  // usable: F16C and the OS saves AVX state
  return f16_convert_kernels(active_isa(), has_f16c);
}

const HalfConvertKernels& bf16_convert() { return bf16_convert_kernels(active_isa()); }

const HalfConvertKernels& half_convert(DType half) {
  RG_CHECK(half == DType::f16 || half == DType::bf16, "half_convert of " << dtype_name(half));
  return half == DType::f16 ? f16_convert() : bf16_convert();
}

const Qs8WinogradKernel& qs8_winograd_kernel(Isa isa) {
  return qs8_winograd_kernel(isa, this_cpu_has_vnni());
}

const Qs8WinogradKernel& qs8_winograd_kernel(Isa isa, bool cpu_has_vnni) {
  static const Qs8WinogradKernel reference{qs8_winograd_input__reference, qs8_winograd_4x8__reference, 4, 8,
                                           "qs8_winograd_4x8__reference"};
  static const Qs8WinogradKernel sse2{qs8_winograd_input__sse2, qs8_winograd_4x8__sse2, 4, 8,
                                      "qs8_winograd_4x8__sse2"};
  static const Qs8WinogradKernel avx2{qs8_winograd_input__avx2, qs8_winograd_6x16__avx2, 6, 16,
                                      "qs8_winograd_6x16__avx2"};
  static const Qs8WinogradKernel vnni{qs8_winograd_input__avx512_vnni, qs8_winograd_12x32__avx512_vnni, 12, 32,
                                      "qs8_winograd_12x32__avx512_vnni"};
  switch (isa) {
    case Isa::reference: return reference;
    case Isa::avx2_fma: return avx2;
    case Isa::avx512: return cpu_has_vnni ? vnni : avx2;
    default: return sse2;  // pmaddwd is all it needs; AVX1 has no 256-bit integer instructions
  }
}

std::string f32_kernels_identity(Isa isa) {
  return std::string(f32_gemm_kernel(isa).name) + " " + f32_gemm_narrow_kernel(isa).name + " f32_vector__" + f32_vector_kernels(isa).isa +
         " f32_winograd__" + f32_winograd_kernels(isa).isa;
}

}  // namespace rg
