// Structural equality and hashing of expressions (variables and buffers compare by identity).
#include "core/buffer.h"
#include "core/expr.h"
#include "core/expr_functor.h"

namespace tessel {

namespace {

size_t combine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case ExprKind::kIntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::kFloatImm: {
      double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
      return x == y || (x != x && y != y);
    }
    case ExprKind::kVar: return false;  // identity already checked
    case ExprKind::kBufferLoad:
      if (!a.as<BufferLoadNode>()->buffer.same_as(b.as<BufferLoadNode>()->buffer)) return false;
      break;
    case ExprKind::kCall:
      if (a.as<CallNode>()->op != b.as<CallNode>()->op) return false;
      break;
    default: break;
  }
  std::vector<Expr> oa = expr_children(a), ob = expr_children(b);
  if (oa.size() != ob.size()) return false;
  for (size_t i = 0; i < oa.size(); ++i) {
    if (!structural_equal(oa[i], ob[i])) return false;
  }
  return true;
}

size_t structural_hash(const Expr& e) {
  if (!e.defined()) return 0;
  size_t h = combine(static_cast<size_t>(e.kind()), std::hash<std::string>()(e.dtype().name()));
  switch (e.kind()) {
    case ExprKind::kIntImm: return combine(h, std::hash<int64_t>()(e.as<IntImmNode>()->value));
    case ExprKind::kFloatImm: return combine(h, std::hash<double>()(e.as<FloatImmNode>()->value));
    case ExprKind::kVar: return combine(h, std::hash<const void*>()(e.get()));
    case ExprKind::kBufferLoad:
      h = combine(h, std::hash<const void*>()(e.as<BufferLoadNode>()->buffer.get()));
      break;
    case ExprKind::kCall: h = combine(h, static_cast<size_t>(e.as<CallNode>()->op)); break;
    default: break;
  }
  for (const Expr& c : expr_children(e)) h = combine(h, structural_hash(c));
  return h;
}

}  // namespace tessel
