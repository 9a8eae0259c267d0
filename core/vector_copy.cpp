// Recognition of the vector copies codegen issues (see vector_copy.h).
#include "core/vector_copy.h"

#include <limits>

#include "core/expr_functor.h"

namespace tessel {

namespace {

/// True when `b` provably holds fewer than 2^31 elements.
bool fits_int32(const Buffer& b) {
  int64_t n = 1;
  for (const Expr& e : b->shape) {
    auto c = as_const_int(e);
    if (!c || *c < 0 || __builtin_mul_overflow(n, *c, &n)) return false;
  }
  return n <= std::numeric_limits<int32_t>::max();
}

}  // namespace

Expr flat_offset(const Buffer& b, const std::vector<Expr>& idx) {
  Expr e = idx[0];
  if (e.dtype().bits < 64 && !fits_int32(b)) e = cast(DataType::i64(), e);
  for (size_t d = 1; d < idx.size(); ++d) e = e * b->shape[d] + idx[d];
  return e;
}

std::optional<VectorCopy> match_vector_copy(const ForNode& loop, Analyzer& analyzer) {
  if (loop.for_kind != ForKind::kVectorized) return std::nullopt;
  auto extent = as_const_int(loop.extent);
  const auto* st = loop.body.as<StoreNode>();
  const auto* ld = st ? st->value.as<BufferLoadNode>() : nullptr;
  if (!extent || !ld || ld->buffer->dtype != st->buffer->dtype) return std::nullopt;
  const int64_t bytes = *extent * st->buffer->dtype.storage_bits() / 8;
  if (st->buffer->dtype.storage_bits() % 8 != 0 || (bytes != 4 && bytes != 8 && bytes != 16)) {
    return std::nullopt;
  }
  auto at = [&](const Expr& e, int64_t v) {
    return analyzer.simplify(
        substitute(e, [&](const Var& x) { return x.same_as(loop.var) ? make_int(v) : Expr(); }));
  };
  VectorCopy c{st, ld, bytes, Expr(), Expr()};
  for (bool dst : {true, false}) {
    Expr e = dst ? flat_offset(st->buffer, st->indices) : flat_offset(ld->buffer, ld->indices);
    Expr first = at(e, 0);
    if (!analyzer.can_prove_equal(analyzer.simplify(e - first), loop.var)) return std::nullopt;
    if (!analyzer.can_prove(floormod(first, make_int(*extent)) == make_int(0))) return std::nullopt;
    (dst ? c.dst_first : c.src_first) = first;
  }
  return c;
}

void bind_kernel_vars(Analyzer& analyzer, const Kernel& kernel) {
  analyzer.bind(kernel->thread_var, 0, kernel->threads);
  for (size_t d = 0; d < kernel->grid.size() && d < kernel->block_vars.size(); ++d) {
    if (auto g = as_const_int(kernel->grid[d])) {
      analyzer.bind(kernel->block_vars[d], 0, *g);
    } else {
      analyzer.bind(kernel->block_vars[d], IntBound{0, IntBound::kPosInf});
    }
  }
  for (const Var& v : kernel->dynamic_vars) analyzer.bind(v, IntBound{0, IntBound::kPosInf});
}

void bind_loop(Analyzer& analyzer, const ForNode& loop) {
  auto min = as_const_int(loop.min);
  auto extent = as_const_int(loop.extent);
  if (min && extent && *extent > 0) {
    analyzer.bind(loop.var, *min, *extent);
  } else if (min && *min >= 0) {
    analyzer.bind(loop.var, IntBound{*min, IntBound::kPosInf});
  } else {
    bind_symbolic_loop(analyzer, loop);
  }
}

void bind_symbolic_loop(Analyzer& analyzer, const ForNode& loop) {
  // Between the bounds of its first and last values (vacuous when the loop is empty), else
  // the whole dtype: always rebound, since one variable may head several loops (a split loop's
  // parts, the producer's and the consumers' loop) and an earlier range must not leak in.
  IntBound first = analyzer.const_int_bound(loop.min);
  IntBound last = analyzer.const_int_bound(loop.min + loop.extent - 1);
  if (first.min <= last.max) {
    analyzer.bind(loop.var, IntBound{first.min, last.max});
  } else {
    analyzer.bind(loop.var, IntBound{});
  }
}

}  // namespace tessel
