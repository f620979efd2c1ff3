// Sizes and names of element types.
#include "tensor/dtype.h"

namespace rg {

namespace {
struct DTypeInfo {
  DType dtype;
  size_t size;
  const char* name;
};
constexpr DTypeInfo kTypes[] = {
    {DType::f32, 4, "f32"}, {DType::f16, 2, "f16"}, {DType::i8, 1, "i8"},
    {DType::i32, 4, "i32"}, {DType::u8, 1, "u8"},   {DType::f64, 8, "f64"}, {DType::bf16, 2, "bf16"},
};
}  // namespace

size_t dtype_size(DType dtype) { return kTypes[static_cast<int>(dtype)].size; }
const char* dtype_name(DType dtype) { return kTypes[static_cast<int>(dtype)].name; }

bool dtype_from_name(const std::string& name, DType* dtype) {
  for (const auto& info : kTypes) {
    if (name == info.name) {
      *dtype = info.dtype;
      return true;
    }
  }
  return false;
}

bool dtype_from_code(uint32_t code, DType* dtype) {
  if (code >= sizeof kTypes / sizeof kTypes[0]) return false;
  *dtype = static_cast<DType>(code);
  return true;
}

}  // namespace rg
