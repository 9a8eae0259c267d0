// The intrinsic table (its entries come from the instruction families' homes, core/families/),
// the argument validation every instruction shares, and printing of calls.
#include "core/intrinsics.h"

#include <algorithm>
#include <initializer_list>

#include "core/builtin_layouts.h"
#include "core/error.h"
#include "core/expr_printer.h"
#include "core/instruction_family.h"
#include "core/op_atomic.h"
#include "core/stmt.h"

namespace tessel {

namespace {

std::vector<IntrinsicInfo> build_table() {
  std::vector<IntrinsicInfo> t;
  for (const InstructionFamily* family : instruction_families()) {
    for (IntrinsicInfo info : family->entries()) {
      info.home = family;
      t.push_back(std::move(info));
    }
  }
  std::stable_sort(t.begin(), t.end(),
                   [](const IntrinsicInfo& a, const IntrinsicInfo& b) { return a.id < b.id; });
  for (size_t i = 0; i < t.size(); ++i) {
    internal_check(static_cast<size_t>(t[i].id) == i,
                   "intrinsic table: an IntrinsicId without an entry, or with two");
  }
  return t;
}

std::string arg_to_string(const IntrinsicArg& a) {
  if (a.buffer.defined()) return to_string(BufferLoadNode::make(a.buffer, a.indices));
  return to_string(a.value);
}

bool scope_fits(OperandKind kind, Scope scope) {
  switch (kind) {
    case OperandKind::kRegisters:
      return scope == Scope::kLocal || scope == Scope::kFragment;
    case OperandKind::kShared:
      return scope == Scope::kShared || scope == Scope::kSharedDyn;
    case OperandKind::kGlobal:
      return scope == Scope::kGlobal;
    case OperandKind::kMemory:
      return scope == Scope::kGlobal || scope == Scope::kShared || scope == Scope::kSharedDyn;
    default:
      return false;
  }
}

const char* kind_words(OperandKind kind) {
  switch (kind) {
    case OperandKind::kRegisters:
      return "an element of a local (register) buffer";
    case OperandKind::kShared:
      return "an element of a shared buffer";
    case OperandKind::kGlobal:
      return "an element of a global tensor";
    case OperandKind::kMemory:
      return "an element of a global or shared buffer";
    case OperandKind::kValue:
      return "an integer value";
    case OperandKind::kNumber:
      return "a number";
    case OperandKind::kImmediate:
      return "an integer constant";
  }
  return "?";
}

/// "float32, float16 or int32".
std::string dtype_list(const std::vector<DataType>& dtypes) {
  std::string s;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == dtypes.size() ? " or " : ", ") + dtypes[i].name();
  }
  return s;
}

}  // namespace

bool is_element_operand(OperandKind kind) {
  return kind == OperandKind::kRegisters || kind == OperandKind::kShared ||
         kind == OperandKind::kGlobal || kind == OperandKind::kMemory;
}

const std::vector<IntrinsicInfo>& intrinsic_table() {
  static const std::vector<IntrinsicInfo> table = build_table();
  return table;
}

const IntrinsicInfo& intrinsic_info(IntrinsicId id) {
  return intrinsic_table()[static_cast<size_t>(id)];
}

std::optional<IntrinsicId> find_intrinsic(std::string_view name) {
  for (const IntrinsicInfo& info : intrinsic_table()) {
    if (info.name == name) return info.id;
  }
  return std::nullopt;
}

std::optional<IntrinsicId> find_matrix_intrinsic(bool nvidia, int m, int n, int k, DataType in) {
  for (const IntrinsicInfo& info : intrinsic_table()) {
    if (info.family == IntrinsicFamily::kMma && info.nvidia == nvidia && info.m == m &&
        info.n == n && info.k == k && info.operands[1].dtypes[0] == in) {
      return info.id;
    }
  }
  return std::nullopt;
}

Stmt IntrinsicCallNode::make(IntrinsicId intrinsic, std::vector<IntrinsicArg> args, SourceLoc loc) {
  const IntrinsicInfo& info = intrinsic_info(intrinsic);
  std::string where = "T." + info.name + (loc.known() ? " at " + loc.str() : "");
  if (args.size() != info.operands.size()) {
    std::string names;
    for (const IntrinsicOperand& o : info.operands) names += (names.empty() ? "" : ", ") + o.name;
    user_error(where + " takes " + std::to_string(info.operands.size()) + " argument(s) (" + names +
               "), got " + std::to_string(args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const IntrinsicOperand& o = info.operands[i];
    IntrinsicArg& a = args[i];
    std::string what = where + ", operand " + o.name;
    bool is_access = is_element_operand(o.kind);
    if (is_access != a.buffer.defined()) {
      user_error(what + " must be " + kind_words(o.kind) + ", got " + arg_to_string(a));
    }
    if (!is_access) {
      internal_check(a.value.defined(), "intrinsic argument without a value");
      if (o.kind == OperandKind::kNumber) {
        internal_check(i > 0 && is_element_operand(info.operands[0].kind),
                       "a number operand converts to operand 0, which must be an element");
        a.value = cast(args[0].buffer->dtype, a.value);
        continue;
      }
      if (!a.value.dtype().is_integral()) {
        user_error(what + " must be an integer, got " + to_string(a.value) + " of type " +
                   a.value.dtype().name());
      }
      if (o.kind == OperandKind::kImmediate && !as_const_int(a.value)) {
        user_error(what + " must be a constant, got " + to_string(a.value) +
                   "; write the number itself");
      }
      continue;
    }
    check_indices(a.buffer, a.indices, what.c_str());
    const BufferNode& b = *a.buffer;
    if (!scope_fits(o.kind, b.scope)) {
      user_error(what + " must be " + kind_words(o.kind) + ", but '" + b.name + "' is a " +
                 scope_name(b.scope) + " buffer");
    }
    DataType t = b.dtype;
    bool ok = o.dtypes.empty() ? (o.bits == 0 || t.storage_bits() * t.lanes == o.bits)
                               : std::find(o.dtypes.begin(), o.dtypes.end(), t) != o.dtypes.end();
    if (!ok) {
      std::string want =
          o.dtypes.empty() ? std::to_string(o.bits) + "-bit elements" : dtype_list(o.dtypes);
      user_error(what + " needs " + want + ", but '" + b.name + "' holds " + t.name());
    }
  }
  info.home->check_call(info, args, where);
  return Stmt(
      std::make_shared<const IntrinsicCallNode>(intrinsic, std::move(args), std::move(loc)));
}

IntrinsicId atomic_intrinsic(AtomicKind kind) {
  switch (kind) {
    case AtomicKind::kAdd:
      return IntrinsicId::kAtomAdd;
    case AtomicKind::kMax:
      return IntrinsicId::kAtomMax;
    case AtomicKind::kMin:
      return IntrinsicId::kAtomMin;
  }
  internal_error("unknown atomic kind");
}

std::string intrinsic_call_to_string(const IntrinsicCallNode& call) {
  const IntrinsicInfo& info = intrinsic_info(call.intrinsic);
  std::string s = "T." + info.name + "(";
  for (size_t i = 0; i < call.args.size(); ++i) s += (i ? ", " : "") + arg_to_string(call.args[i]);
  return s + ")";
}

}  // namespace tessel
