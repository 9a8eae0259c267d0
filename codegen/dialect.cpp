// CUDA and HIP spellings of types, indices, barriers, shuffles, math and literals.
#include "codegen/dialect.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/error.h"

namespace tessel::codegen {

std::string c_type(Language lang, DataType t) {
  const bool cuda = lang == Language::kCuda;
  if (t.lanes != 1) user_error("codegen: vector element type " + t.name() + " is not supported");
  switch (t.code) {
    case TypeCode::kBool:
      return "bool";
    case TypeCode::kFloat:
      if (t.bits == 16) return cuda ? "half" : "_Float16";
      if (t.bits == 32) return "float";
      if (t.bits == 64) return "double";
      break;
    case TypeCode::kBFloat:
      return cuda ? "__nv_bfloat16" : "__bf16";
    case TypeCode::kInt:
      if (t.bits == 8) return "signed char";
      if (t.bits == 16) return "short";
      if (t.bits == 32) return "int";
      if (t.bits == 64) return "long long";
      break;
    case TypeCode::kUInt:
      if (t.bits == 8) return "unsigned char";
      if (t.bits == 16) return "unsigned short";
      if (t.bits == 32) return "unsigned";
      if (t.bits == 64) return "unsigned long long";
      break;
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      // CUDA's OCP FP8 types (cuda_fp8.h): conversions from float round to nearest even and
      // saturate, as Tessel's casts do. HIP kernels hold the bytes (copies only): the source
      // printer refuses any conversion or arithmetic on them (see fp8_on_hip).
      if (cuda) return t.code == TypeCode::kE4M3 ? "__nv_fp8_e4m3" : "__nv_fp8_e5m2";
      return "unsigned char";
  }
  user_error("codegen: element type " + t.name() +
             " has no C type here (4-bit tensors are "
             "packed two per byte; unpack them into int8 in the kernel)");
}

std::string thread_index(Language lang, int dim) {
  const char* xyz[] = {"x", "y", "z"};
  if (lang == Language::kCuda) return std::string("static_cast<int>(threadIdx.") + xyz[dim] + ")";
  return std::string("static_cast<int>(__builtin_amdgcn_workitem_id_") + xyz[dim] + "())";
}

std::string block_index(Language lang, int dim) {
  const char* xyz[] = {"x", "y", "z"};
  if (lang == Language::kCuda) return std::string("static_cast<int>(blockIdx.") + xyz[dim] + ")";
  return std::string("static_cast<int>(__builtin_amdgcn_workgroup_id_") + xyz[dim] + "())";
}

std::string barrier(Language lang) {
  return lang == Language::kCuda ? "__syncthreads();" : "tessel_syncthreads();";
}

std::string math_call(Language lang, const std::string& fn, const std::vector<std::string>& args,
                      bool is_double) {
  std::string name = fn;
  if (fn == "abs") name = "fabs";
  if (lang == Language::kCuda) {
    if (fn == "exp2" && !is_double) return "tessel_exp2f(" + args[0] + ")";
    if (fn == "rsqrt") name = "rsqrt";
    if (!is_double) name += "f";
  } else {
    if (fn == "rsqrt") {
      return std::string("(1.0") + (is_double ? "" : "f") + " / __builtin_sqrt" +
             (is_double ? "" : "f") + "(" + args[0] + "))";
    }
    name = "__builtin_" + name + (is_double ? "" : "f");
  }
  std::string out = name + "(";
  for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
  return out + ")";
}

std::string shuffle_call(Language lang, const std::string& kind, const std::string& value,
                         const std::string& lane_arg, const std::string& value_type,
                         const std::string& lanes) {
  if (lang == Language::kCuda) {
    std::string fn = kind == "shfl_xor"    ? "__shfl_xor_sync"
                     : kind == "shfl_down" ? "__shfl_down_sync"
                                           : "__shfl_up_sync";
    return fn + "(" + lanes + ", " + value + ", " + lane_arg + ")";
  }
  return "tessel_" + kind + "<" + value_type + ">(" + value + ", " + lane_arg + ")";
}

std::string float_literal(Language lang, DataType t, double value) {
  std::string type = c_type(lang, t);
  std::string text;
  if (std::isinf(value)) {
    text = value > 0 ? "__builtin_huge_valf()" : "(-__builtin_huge_valf())";
  } else if (std::isnan(value)) {
    text = "__builtin_nanf(\"\")";
  } else {
    std::ostringstream os;
    os << std::setprecision(17) << value;
    text = os.str();
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    if (t.bits != 64) text += "f";
  }
  if (t.code == TypeCode::kFloat && t.bits == 32) return text;
  if (t.code == TypeCode::kFloat && t.bits == 64) return text;
  return "static_cast<" + type + ">(" + text + ")";
}

}  // namespace tessel::codegen
