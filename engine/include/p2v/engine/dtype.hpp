#pragma once
// The one element-type parser of every command (--dtype of run and reshard, a model file's
// grad_dtype): each type has a short name (f32) and the spellings people type for it
// (float32, float, fp32), all accepted wherever a dtype is read.
#include <string>
#include <vector>

namespace p2v::engine {

enum class Dtype { F64, F32, F16, BF16, I64, I32, I16, I8, U32, U8 };

struct DtypeInfo {
  Dtype dtype;
  const char* name;                    // canonical short name: f32
  int bytes;                           // size of one element
  std::vector<const char*> spellings;  // every accepted spelling, the short name first
};
const std::vector<DtypeInfo>& dtypes();
const DtypeInfo& dtype_info(Dtype d);
// Parses any spelling (case-insensitive): f32|float32|float|fp32, f64|float64|double|fp64,
// f16|float16|half|fp16, bf16|bfloat16, i64|int64|long, i32|int32|int, i16|int16|short, i8|int8,
// u32|uint32, u8|uint8|byte. Throws p2v::Error "<what> '<text>': unknown element type; ..."
// listing the types.
Dtype parse_dtype(const std::string& text, const std::string& what = "--dtype");
// "f64 (float64, double), f32 (float32, float), ..." for messages and --help.
std::string dtype_spellings();

}  // namespace p2v::engine
