// What differs between the CUDA and the HIP output: type names, thread and block indices,
// barriers, shuffles, math functions, and the helpers (preludes) that spell the instructions of
// the intrinsic table. The statement and expression printer (codegen/source_printer.cpp) is one.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "core/dtype.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"

namespace tessel::codegen {

/// The C type of one element ("half", "float", "_Float16"). User error for 4-bit types.
std::string c_type(Language lang, DataType t);
/// `threadIdx.x` / `__builtin_amdgcn_workitem_id_x()` for dim 0 (y, z for 1, 2); block index d
/// similarly.
std::string thread_index(Language lang, int dim);
std::string block_index(Language lang, int dim);
/// The barrier statement.
std::string barrier(Language lang);
/// A math builtin applied to float operands ("exp2f(x)"); `fn` is the IR builtin's name.
std::string math_call(Language lang, const std::string& fn, const std::vector<std::string>& args,
                      bool is_double);
/// `__shfl_xor_sync(lanes, v, m)` and the other shuffles; `value_type` is the C type, `lanes`
/// the CUDA member mask (the lanes the warp has: all 32 but in a partial last warp).
std::string shuffle_call(Language lang, const std::string& kind, const std::string& value,
                         const std::string& lane_arg, const std::string& value_type,
                         const std::string& lanes);
/// A float literal of the given C type.
std::string float_literal(Language lang, DataType t, double value);

/// The call of one intrinsic with its operands already printed (CallText: register and memory
/// operands as pointers, `&C_local[4]`, values as expressions; the buffers, indices and 16-byte
/// offsets per operand where known). Fills in `text.c_type`; records the helpers the call needs
/// in `used`.
std::string intrinsic_call(const IntrinsicInfo& info, CallText text, std::set<std::string>& used);
/// The definitions of the helpers in `used`, the headers and macros every kernel needs.
std::string prelude(Language lang, const std::set<std::string>& used);

}  // namespace tessel::codegen
