// The TMA box placement check and the lowering's choice of swizzle mode (core/tma_placement.h).
#include "core/tma_placement.h"

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/int_eval.h"
#include "core/intrinsics.h"
#include "core/printer.h"
#include "core/tma_map.h"

namespace tessel {

namespace {

std::string index_text(const std::vector<int64_t>& idx) {
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

}  // namespace

int64_t shared_flat(const BufferNode& buffer, const Layout* layout,
                    const std::vector<int64_t>& idx) {
  if (layout) {
    std::vector<int64_t> out = layout->map(idx);
    const std::vector<int64_t>& shape = layout->output_shape();
    int64_t flat = out[0];
    for (size_t d = 1; d < out.size(); ++d) flat = flat * shape[d] + out[d];
    return flat;
  }
  int64_t flat = 0;
  for (size_t d = 0; d < idx.size(); ++d) flat = flat * *as_const_int(buffer.shape[d]) + idx[d];
  return flat;
}

std::optional<std::string> tma_box_mismatch(const BufferNode& buffer, const Layout* layout,
                                            const std::vector<int64_t>& origin,
                                            const std::vector<int64_t>& box, int swizzle) {
  const int64_t esize = buffer.dtype.storage_bytes(1);
  const int64_t base = shared_flat(buffer, layout, origin);
  if ((base * esize) % 128 != 0) {
    return "the box starts at " + buffer.name + index_text(origin) + ", byte " +
           std::to_string(base * esize) +
           " of the tile, but a TMA copy's shared address must be a multiple of 128 bytes";
  }
  int64_t elements = 1;
  for (int64_t b : box) elements *= b;
  const size_t rank = box.size();
  std::vector<int64_t> idx;
  for (int64_t e = 0; e < elements; ++e) {
    idx = origin;
    int64_t r = e;
    for (size_t d = rank; d-- > 0;) {
      idx[idx.size() - rank + d] += r % box[d];
      r /= box[d];
    }
    for (size_t d = 0; d < idx.size(); ++d) {
      std::optional<int64_t> n = as_const_int(buffer.shape[d]);
      if (n && idx[d] >= *n) {
        return "box element " + std::to_string(e) + " is " + buffer.name + index_text(idx) +
               ", outside the tile";
      }
    }
    const int64_t want = shared_flat(buffer, layout, idx);
    const int64_t got = tma_swizzle_byte((base + e) * esize, swizzle) / esize;
    if (want != got) {
      return "box element " + std::to_string(e) + " (" + buffer.name + index_text(idx) +
             ") lands at element " + std::to_string(got) + " of the tile's storage, but its " +
             (layout ? "layout" : "row-major layout") + " stores it at " + std::to_string(want);
    }
  }
  return std::nullopt;
}

Stmt with_tma_swizzle(const IntrinsicCallNode& call, const Layout* layout,
                      const std::string& kernel) {
  const IntrinsicInfo& info = intrinsic_info(call.intrinsic);
  const IntrinsicArg& shared = call.args[info.tma_shared];
  const int swizzle_at = info.box_first + info.box_rank;
  std::vector<int64_t> box;
  for (int d = 0; d < info.box_rank; ++d)
    box.push_back(*as_const_int(call.args[info.box_first + d].value));
  const int given = static_cast<int>(*as_const_int(call.args[swizzle_at].value));
  // The origin's constant part: every variable at 0.
  IntEnv env;
  for (const Expr& i : shared.indices) {
    pre_order_visit(i, [&](const Expr& x) {
      if (const auto* v = x.as<VarNode>()) env[v] = 0;
    });
  }
  std::vector<int64_t> origin;
  try {
    for (const Expr& i : shared.indices) origin.push_back(eval_int(i, env));
  } catch (const UserError&) {
    return IntrinsicCallNode::make(call.intrinsic, call.args, call.loc);  // verify proves it
  }
  std::optional<std::string> why = tma_box_mismatch(*shared.buffer, layout, origin, box, given);
  int chosen = given;
  for (int s : kTmaSwizzles) {
    if (!why) break;
    const int64_t inner = shared.buffer->dtype.storage_bytes(box.back());
    if (s == given || (s != 0 && inner > s)) continue;
    if (!tma_box_mismatch(*shared.buffer, layout, origin, box, s)) {
      why.reset();
      chosen = s;
    }
  }
  if (why) {
    // A tile wider than a swizzle span (TileLang's swizzles store a wide tile as column panels
    // of 128, 64 or 32 bytes): one copy per panel, as TileLang issues them.
    const int64_t esize = shared.buffer->dtype.storage_bytes(1);
    const IntrinsicArg& global = call.args[info.tma_global];
    for (int s : {128, 64, 32}) {
      const int64_t panel = s / esize;
      if (panel < 1 || box.back() <= panel || box.back() % panel != 0) continue;
      std::vector<int64_t> pbox = box;
      pbox.back() = panel;
      bool agrees = true;
      for (int64_t p = 0; agrees && p < box.back() / panel; ++p) {
        std::vector<int64_t> at = origin;
        at.back() += p * panel;
        agrees = !tma_box_mismatch(*shared.buffer, layout, at, pbox, s);
      }
      if (!agrees) continue;
      std::vector<Stmt> panels;
      for (int64_t p = 0; p < box.back() / panel; ++p) {
        std::vector<IntrinsicArg> args = call.args;
        args[info.tma_shared].indices.back() = shared.indices.back() + make_int(p * panel);
        args[info.tma_global].indices.back() = global.indices.back() + make_int(p * panel);
        args[info.box_first + info.box_rank - 1].value = make_int(panel);
        args[swizzle_at].value = make_int(s);
        panels.push_back(IntrinsicCallNode::make(call.intrinsic, std::move(args), call.loc));
      }
      return SeqNode::make(std::move(panels));
    }
    std::string text = print_stmt(IntrinsicCallNode::make(call.intrinsic, call.args, call.loc));
    user_error("kernel '" + kernel + "': `" + text.substr(0, text.find('\n')) + "` at " +
               call.loc.str() + ": no TMA swizzle mode (none, 32B, 64B, 128B) places the box as '" +
               shared.buffer->name + "' is laid out: with " +
               (given == 0 ? std::string("no swizzle") : std::to_string(given) + "B swizzle") +
               ", " + *why +
               ". Give the tile a layout a tensor map can write (row-major, or "
               "T.annotate_layout with tilelang.layout.make_swizzled_layout) and a box that "
               "covers whole rows of it");
  }
  std::vector<IntrinsicArg> args = call.args;
  args[swizzle_at].value = make_int(chosen);
  return IntrinsicCallNode::make(call.intrinsic, std::move(args), call.loc);
}

}  // namespace tessel
