// Warp-wide expression evaluation: each node is evaluated for every active lane at once. The
// arithmetic is the tile-level interpreter's (interp/scalar_eval.cpp), lane by lane: floats are
// rounded to each node's dtype, integers wrap, `//` and `%` floor, `and`/`or`/select evaluate
// their second operand only in the lanes that need it (so a guarded load never runs unguarded).
// A uniform node (CExpr::uniform: the same value in every lane) is computed in one lane, and a
// thread-invariant tree (CExpr::cache) once per warp and block.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/int_eval.h"
#include "interp/division_error.h"
#include "interp/float_builtin.h"
#include "interp/thread_exec.h"

namespace tessel::thread_detail {

namespace {

inline double round_float(const CExpr* e, double x) {
  switch (e->rounding) {
    case Rounding::kNone:
      return x;
    case Rounding::kF32:
      return static_cast<double>(static_cast<float>(x));
    default:
      return round_to(e->dtype, x);
  }
}

inline int64_t wrap(const CExpr* e, int64_t x) {
  switch (e->rounding) {
    case Rounding::kNone:
      return x;
    case Rounding::kI32:
      return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(x)));
    default:
      return wrap_int(e->dtype, x);
  }
}

}  // namespace

const LaneValues& WarpExec::eval(const CExpr* e, uint64_t mask, LaneValues& out) {
  if (e->cache >= 0) return eval_cached(e, mask, out);
  if (e->reuse >= 0) return eval_reused(e, mask, out);
  return eval_fresh(e, mask, out);
}

const LaneValues& WarpExec::eval_fresh(const CExpr* e, uint64_t mask, LaneValues& out) {
  if (e->uniform && (mask & (mask - 1)) && e->op != XOp::kImm && e->op != XOp::kVar) {
    // Every lane computes the same value: compute it in the first lane and copy it. Each node
    // below is visited with all of `mask` or not at all (the lanes agree on every branch), so
    // the lane-operations are the first lane's times the lanes.
    const int lane = std::countr_zero(mask);
    const int64_t before = block_.lane_ops;
    const int64_t x = eval_node(e, uint64_t{1} << lane, out).i[lane];
    block_.lane_ops += (block_.lane_ops - before) * (std::popcount(mask) - 1);
    std::fill(std::begin(out.i), std::end(out.i), x);
    return out;
  }
  return eval_node(e, mask, out);
}

const LaneValues& WarpExec::eval_cached(const CExpr* e, uint64_t mask, LaneValues& out) {
  // A thread-invariant tree: each lane's value is computed the first time the lane needs it.
  // Every node of the tree is visited with the whole mask (no select, and, or), so a lane's
  // operations are the tree's nodes. A division by zero is raised the first time, as before.
  if (warp_.cached_lanes.empty()) {
    warp_.cached.resize(static_cast<size_t>(block_.prog().num_cached));
    warp_.cached_lanes.assign(static_cast<size_t>(block_.prog().num_cached), 0);
  }
  LaneValues& v = warp_.cached[e->cache];
  uint64_t& have = warp_.cached_lanes[e->cache];
  if (const uint64_t need = mask & ~have) {
    const int64_t before = block_.lane_ops;
    const LaneValues& r = eval_node(e, need, out);
    for_lanes(need, [&](int l) { v.i[l] = r.i[l]; });
    have |= need;
    block_.lane_ops = before;
  }
  block_.lane_ops += e->nodes * std::popcount(mask);
  return v;
}

const LaneValues& WarpExec::eval_reused(const CExpr* e, uint64_t mask, LaneValues& out) {
  // Arithmetic on registers and constants: a lane's value is the same until a register is
  // written. No node of the tree evaluates an operand in some lanes only, so a lane's
  // operations are the tree's nodes, computed or reused. A division by zero is raised the
  // first time a lane meets it, as before.
  const auto k = static_cast<size_t>(e->reuse);
  if (warp_.reused.empty()) {
    const auto slots = static_cast<size_t>(block_.prog().num_reused);
    warp_.reused.resize(slots);
    warp_.reused_lanes.assign(slots, 0);
    warp_.reused_at.assign(slots, ~uint64_t{0});
  }
  uint64_t& have = warp_.reused_lanes[k];
  if (warp_.reused_at[k] != warp_.reg_writes) {
    warp_.reused_at[k] = warp_.reg_writes;
    have = 0;
  }
  LaneValues& v = warp_.reused[k];
  if (const uint64_t need = mask & ~have) {
    const int64_t before = block_.lane_ops;
    const LaneValues& r = eval_fresh(e, need, out);
    if (have == 0) {  // the lanes up to the last one needed, whatever the others hold
      std::memcpy(v.i, r.i, sizeof(int64_t) * static_cast<size_t>(64 - std::countl_zero(need)));
    } else {
      for_lanes(need, [&](int l) { v.i[l] = r.i[l]; });
    }
    have |= need;
    block_.lane_ops = before;
  }
  block_.lane_ops += e->nodes * std::popcount(mask);
  return v;
}

const LaneValues& WarpExec::eval_node(const CExpr* e, uint64_t mask, LaneValues& out) {
  block_.lane_ops += std::popcount(mask);
  switch (e->op) {
    case XOp::kImm:
      return e->imm;
    case XOp::kVar:
      return warp_.regs[e->slot];
    case XOp::kNot: {
      LaneValues sa;
      const LaneValues& a = eval(e->a, mask, sa);
      for_lanes(mask, [&](int l) { out.i[l] = !a.i[l]; });
      return out;
    }
    case XOp::kSelect: {
      LaneValues sc;
      const LaneValues& c = eval(e->a, mask, sc);
      uint64_t yes = 0;
      for_lanes(mask, [&](int l) { yes |= static_cast<uint64_t>(c.i[l] != 0) << l; });
      uint64_t no = mask & ~yes;
      if (yes) {
        LaneValues st;
        const LaneValues& t = eval(e->b, yes, st);
        for_lanes(yes, [&](int l) { out.i[l] = t.i[l]; });
      }
      if (no) {
        LaneValues sf;
        const LaneValues& f = eval(e->c, no, sf);
        for_lanes(no, [&](int l) { out.i[l] = f.i[l]; });
      }
      return out;
    }
    case XOp::kCast: {
      LaneValues sa;
      const LaneValues& a = eval(e->a, mask, sa);
      DataType to = e->dtype;
      if (e->is_float) {
        if (e->operand_float)
          for_lanes(mask, [&](int l) { out.f[l] = round_float(e, a.f[l]); });
        else
          for_lanes(mask, [&](int l) { out.f[l] = round_float(e, static_cast<double>(a.i[l])); });
      } else if (e->operand_float) {
        for_lanes(mask, [&](int l) {
          out.i[l] = static_cast<int64_t>(round_to(to, std::trunc(a.f[l])));
        });
      } else {
        for_lanes(mask, [&](int l) { out.i[l] = wrap_int(to, a.i[l]); });
      }
      return out;
    }
    case XOp::kLoad:
      eval_load(e, mask, out);
      return out;
    case XOp::kCall:
      eval_call(e, mask, out);
      return out;
    case XOp::kShuffle:
      eval_shuffle(e, mask, out);
      return out;
    case XOp::kAnd:
    case XOp::kOr: {
      LaneValues sa;
      const LaneValues& a = eval(e->a, mask, sa);
      uint64_t need = 0;  // lanes whose result depends on b
      bool is_and = e->op == XOp::kAnd;
      for_lanes(mask, [&](int l) {
        bool av = a.i[l] != 0;
        out.i[l] = av;
        if (av == is_and) need |= uint64_t{1} << l;
      });
      if (need) {
        LaneValues sb;
        const LaneValues& b = eval(e->b, need, sb);
        for_lanes(need, [&](int l) { out.i[l] = b.i[l] != 0; });
      }
      return out;
    }
    default:
      eval_binary(e, mask, out);
      return out;
  }
}

void WarpExec::eval_binary(const CExpr* e, uint64_t mask, LaneValues& out) {
  LaneValues sa, sb;
  const LaneValues& a = eval(e->a, mask, sa);
  const LaneValues& b = eval(e->b, mask, sb);
  if (e->op >= XOp::kEQ) {  // comparisons: bool results from int or float operands
#define TESSEL_CMP_(xop, cmp)                                        \
  case XOp::xop:                                                     \
    if (e->operand_float)                                            \
      for_lanes(mask, [&](int l) { out.i[l] = a.f[l] cmp b.f[l]; }); \
    else                                                             \
      for_lanes(mask, [&](int l) { out.i[l] = a.i[l] cmp b.i[l]; }); \
    return;
    switch (e->op) {
      TESSEL_CMP_(kEQ, ==)
      TESSEL_CMP_(kNE, !=)
      TESSEL_CMP_(kLT, <)
      TESSEL_CMP_(kLE, <=) TESSEL_CMP_(kGT, >) TESSEL_CMP_(kGE, >=) default : break;
    }
#undef TESSEL_CMP_
    internal_error("unhandled comparison in the thread-level evaluator");
  }
  if (e->is_float) {
#define TESSEL_FLT_(xop, expr)         \
  case XOp::xop:                       \
    for_lanes(mask, [&](int l) {       \
      double x = a.f[l], y = b.f[l];   \
      out.f[l] = round_float(e, expr); \
    });                                \
    return;
    switch (e->op) {
      TESSEL_FLT_(kAdd, x + y)
      TESSEL_FLT_(kSub, x - y)
      TESSEL_FLT_(kMul, x * y)
      TESSEL_FLT_(kDiv, x / y)
      TESSEL_FLT_(kFloorDiv, std::floor(x / y))
      TESSEL_FLT_(kFloorMod, x - std::floor(x / y) * y)
      TESSEL_FLT_(kMin, std::fmin(x, y))
      TESSEL_FLT_(kMax, std::fmax(x, y))
      default:
        break;
    }
#undef TESSEL_FLT_
    internal_error("bitwise operation on floats in the thread-level evaluator");
  }
#define TESSEL_INT_(xop, expr)        \
  case XOp::xop:                      \
    for_lanes(mask, [&](int l) {      \
      int64_t x = a.i[l], y = b.i[l]; \
      out.i[l] = wrap(e, expr);       \
    });                               \
    return;
  switch (e->op) {
    TESSEL_INT_(kAdd, static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)))
    TESSEL_INT_(kSub, static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)))
    TESSEL_INT_(kMul, static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)))
    TESSEL_INT_(kMin, std::min(x, y))
    TESSEL_INT_(kMax, std::max(x, y))
    TESSEL_INT_(kBitAnd, x & y)
    TESSEL_INT_(kBitOr, x | y)
    TESSEL_INT_(kBitXor, x ^ y)
    TESSEL_INT_(kShl, (y < 0 || y >= 64) ? 0 : static_cast<int64_t>(static_cast<uint64_t>(x) << y))
    TESSEL_INT_(kShr, x >> std::clamp<int64_t>(y, 0, 63))
    case XOp::kDiv:
    case XOp::kFloorDiv:
    case XOp::kFloorMod:
      for_lanes(mask, [&](int l) {
        if (b.i[l] == 0) division_by_zero(e, l);
        out.i[l] = wrap(
            e, e->op == XOp::kFloorMod ? floor_mod(a.i[l], b.i[l]) : floor_div(a.i[l], b.i[l]));
      });
      return;
    default:
      break;
  }
#undef TESSEL_INT_
  internal_error("unhandled binary operation in the thread-level evaluator");
}

void WarpExec::division_by_zero(const CExpr* e, int lane) const {
  std::string where = block_.where(warp_.first_thread + lane);
  const auto& sites = block_.prog().sites;
  if (site_ >= 0 && site_ < static_cast<int>(sites.size()) && !sites[site_].loc.empty()) {
    where += " (at " + sites[site_].loc + ")";
  }
  std::string access;
  if (index_of_.access) {
    access = access_words(index_of_.access, block_.prog().buffers[index_of_.buffer].buffer->name,
                          *index_of_.indices);
  }
  user_error(division_by_zero_message(where, e->source, access));
}

void WarpExec::eval_call(const CExpr* e, uint64_t mask, LaneValues& out) {
  LaneValues sa, sb;
  const LaneValues& a = eval(e->a, mask, sa);
  if (e->builtin == Builtin::kAbs && !e->is_float) {
    for_lanes(mask, [&](int l) { out.i[l] = wrap_int(e->dtype, std::llabs(a.i[l])); });
    return;
  }
  const LaneValues* b = e->b ? &eval(e->b, mask, sb) : nullptr;
  for_lanes(mask, [&](int l) {
    double r = float_builtin(e->builtin, a.f[l], b ? b->f[l] : 0.0);
    out.f[l] = round_to(e->dtype, r);
  });
}

/// Warp shuffles read the operand as the source lane computes it at this point of the lock-step
/// execution. A source outside the warp gives the lane its own value (CUDA semantics); an
/// inactive source lane is reported (its value is undefined) and also gives the own value.
void WarpExec::eval_shuffle(const CExpr* e, uint64_t mask, LaneValues& out) {
  LaneValues sa, sb;
  const LaneValues& v = eval(e->a, mask, sa);
  const LaneValues& off = eval(e->b, mask, sb);
  const int lanes = block_.warp_size();
  for_lanes(mask, [&](int l) {
    int64_t src = l;
    switch (e->builtin) {
      case Builtin::kShflXor:
        src = l ^ off.i[l];
        break;
      case Builtin::kShflDown:
        src = l + off.i[l];
        break;
      case Builtin::kShflUp:
        src = l - off.i[l];
        break;
      default:
        break;
    }
    if (src < 0 || src >= lanes) src = l;
    if (!((mask >> src) & 1)) {
      block_.sim().inactive_shuffle_source(e->site, warp_.first_thread + l, static_cast<int>(src));
      src = l;
    }
    out.i[l] = v.i[src];
  });
}

std::array<const int64_t*, 8> WarpExec::eval_indices(const std::vector<const CExpr*>& indices,
                                                     uint64_t mask, IndexScratch& idx) {
  std::array<const int64_t*, 8> ptrs{};
  if (indices.size() > ptrs.size()) {
    user_error("kernel '" + block_.prog().kernel->name + "': a buffer access with " +
               std::to_string(indices.size()) +
               " indices; the thread-level interpreter "
               "supports up to 8 dimensions");
  }
  for (size_t k = 0; k < indices.size(); ++k) ptrs[k] = eval(indices[k], mask, idx[k]).i;
  return ptrs;
}

void WarpExec::eval_load(const CExpr* e, uint64_t mask, LaneValues& out) {
  IndexScratch idx;
  const IndexOf outer = index_of_;
  const int outer_site = site_;
  const auto* load = e->source.as<BufferLoadNode>();
  if (load) index_of_ = IndexOf{"load of", e->buffer, &load->indices};
  if (site_ < 0) site_ = e->site;
  auto ptrs = eval_indices(e->indices, mask, idx);
  index_of_ = outer;
  site_ = outer_site;
  block_.load(warp_, e->buffer, e->site, mask, ptrs, out);
}

}  // namespace tessel::thread_detail
