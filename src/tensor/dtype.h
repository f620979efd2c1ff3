// Element types a tensor can hold. f64 exists for reference math and gradient checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rg {

enum class DType : uint8_t { f32 = 0, f16 = 1, i8 = 2, i32 = 3, u8 = 4, f64 = 5, bf16 = 6 };
// The 16-bit float storage types (fp16, bf16): data<uint16_t>() reads either's bits.
inline bool is_half(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
bool dtype_from_name(const std::string& name, DType* dtype);
bool dtype_from_code(uint32_t code, DType* dtype);  // for files: rejects unknown codes

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::f16; }  // fp16 bits (bf16 too: is_half)

}  // namespace rg
