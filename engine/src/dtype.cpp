#include "p2v/engine/dtype.hpp"

#include <fmt/core.h>

#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::engine {

const std::vector<DtypeInfo>& dtypes() {
  static const std::vector<DtypeInfo> t = {
      {Dtype::F64, "f64", 8, {"f64", "float64", "double", "fp64"}},
      {Dtype::F32, "f32", 4, {"f32", "float32", "float", "fp32"}},
      {Dtype::F16, "f16", 2, {"f16", "float16", "half", "fp16"}},
      {Dtype::BF16, "bf16", 2, {"bf16", "bfloat16"}},
      {Dtype::I64, "i64", 8, {"i64", "int64", "long"}},
      {Dtype::I32, "i32", 4, {"i32", "int32", "int"}},
      {Dtype::I16, "i16", 2, {"i16", "int16", "short"}},
      {Dtype::I8, "i8", 1, {"i8", "int8"}},
      {Dtype::U32, "u32", 4, {"u32", "uint32"}},
      {Dtype::U8, "u8", 1, {"u8", "uint8", "byte"}},
  };
  return t;
}

const DtypeInfo& dtype_info(Dtype d) {
  for (const auto& i : dtypes())
    if (i.dtype == d) return i;
  throw Error("internal: dtype without a table entry");
}

std::string dtype_spellings() {
  std::string s;
  for (const auto& i : dtypes()) {
    s += (s.empty() ? "" : ", ") + std::string(i.name) + " (";
    for (std::size_t k = 1; k < i.spellings.size(); ++k) s += (k > 1 ? ", " : "") + std::string(i.spellings[k]);
    s += ")";
  }
  return s;
}

Dtype parse_dtype(const std::string& text, const std::string& what) {
  const std::string low = ::p2v::engine::text::lower(text);
  for (const auto& i : dtypes())
    for (const char* sp : i.spellings)
      if (low == sp) return i.dtype;
  throw Error(fmt::format("{} '{}': unknown element type; the types are {}", what, text, dtype_spellings()));
}

}  // namespace p2v::engine
