// The TMA box placement proofs of verify/tma_proofs.h: the tile's layout against the dense,
// swizzled box a tensor map writes or reads, with Z3 over every origin and box element.
#include "verify/tma_proofs.h"

#include <map>
#include <tuple>

#include "core/error.h"
#include "core/expr_printer.h"
#include "core/intrinsics.h"
#include "core/printer.h"
#include "core/stmt_functor.h"
#include "core/tma_map.h"
#include "verify/definition_parts.h"
#include "verify/enclosed_query.h"
#include "verify/kernel_accesses.h"
#include "verify/proof_parts.h"

namespace tessel {

using namespace proof_detail;       // NOLINT(google-build-using-namespace): Stopwatch
using namespace definition_detail;  // NOLINT(google-build-using-namespace): at_text

namespace {

/// One TMA call of the tile-level kernel with the loops and conditions around it.
struct TmaSite {
  Stmt stmt;
  std::vector<Enclosing> frames;
};

/// The TMA calls of a statement tree, in program order, with their frames.
class TmaCollector : public EnclosingWalker {
 public:
  std::vector<TmaSite> run(const Stmt& body) {
    visit(body);
    return std::move(out_);
  }

 private:
  void visit_IntrinsicCall(const IntrinsicCallNode* c, const Stmt& s) override {
    if (intrinsic_info(c->intrinsic).box_rank > 0) out_.push_back({s, frames()});
  }

  std::vector<TmaSite> out_;
};

/// `layout` applied to `idx` and linearised (row-major over the buffer without a layout).
Expr flat_expr(const Buffer& b, const Layout* layout, const std::vector<Expr>& idx) {
  if (layout) {
    std::vector<Expr> out = layout->forward(idx);
    Expr flat = out[0];
    for (size_t d = 1; d < out.size(); ++d)
      flat = flat * make_int(layout->output_shape()[d]) + out[d];
    return flat;
  }
  Expr flat = idx[0];
  for (size_t d = 1; d < idx.size(); ++d) flat = flat * b->shape[d] + idx[d];
  return flat;
}

std::string call_text(const Stmt& s) {
  std::string t = print_stmt(s);
  return t.substr(0, t.find('\n'));
}

}  // namespace

std::vector<KernelCheck> prove_tma_boxes(const Kernel& kernel, const LoweredKernel& lowered,
                                         unsigned timeout_ms) {
  // The copies as flatten_buffers received them (those the lowering made too), else as written.
  const Kernel& logical = lowered.before_flatten.defined() ? lowered.before_flatten : kernel;
  std::vector<TmaSite> sites = TmaCollector().run(logical->body);
  // The swizzle flatten_buffers gave each call and its box's innermost extent (smaller than
  // the call's when it was split into column panels), by its location, instruction and shared
  // tile.
  using Key = std::tuple<std::string, int, std::string>;
  std::map<Key, std::pair<int64_t, int64_t>> chosen;
  for_each_stmt(lowered.kernel->body, [&](const Stmt& s) {
    const auto* c = s.as<IntrinsicCallNode>();
    if (!c) return;
    const IntrinsicInfo& info = intrinsic_info(c->intrinsic);
    if (info.box_rank == 0) return;
    chosen.try_emplace(
        Key{c->loc.str(), static_cast<int>(c->intrinsic), c->args[info.tma_shared].buffer->name},
        std::make_pair(*as_const_int(c->args[info.box_first + info.box_rank].value),
                       *as_const_int(c->args[info.box_first + info.box_rank - 1].value)));
  });
  std::vector<KernelCheck> checks;
  for (const TmaSite& site : sites) {
    Stopwatch clock;
    const auto* call = site.stmt.as<IntrinsicCallNode>();
    const IntrinsicInfo& info = intrinsic_info(call->intrinsic);
    const IntrinsicArg& tile = call->args[info.tma_shared];
    const Buffer& b = tile.buffer;
    const Layout* layout = lowered.layouts.shared_layout(b);
    auto it = chosen.find(Key{call->loc.str(), static_cast<int>(call->intrinsic), b->name});
    const int swizzle = static_cast<int>(
        it != chosen.end() ? it->second.first
                           : *as_const_int(call->args[info.box_first + info.box_rank].value));
    KernelCheck check{
        "TMA box of `" + call_text(site.stmt) + "`" + at_text(site.stmt) +
            ": lands where the layout of " + b->name + " stores each element (" +
            (swizzle ? std::to_string(swizzle) + "B swizzle" : std::string("no swizzle")) +
            ", every origin, 128-byte aligned)",
        "proved", std::nullopt, 0};
    std::vector<int64_t> box;
    for (int d = 0; d < info.box_rank; ++d)
      box.push_back(*as_const_int(call->args[info.box_first + d].value));
    EnclosedQuery q(logical, site.frames);
    if (!q.runs()) continue;
    VarDomain& domain = q.domain();
    // Column panels: panel p is a box of `panel` columns from column p * panel of the call's.
    std::vector<Expr> origin = tile.indices;
    const int64_t panel = it != chosen.end() ? it->second.second : box.back();
    if (panel < box.back()) {
      Var p("panel");
      domain.bound(p, 0, box.back() / panel - 1);
      origin.back() = origin.back() + Expr(p) * make_int(panel);
      box.back() = panel;
      check.what += ", in column panels of " + std::to_string(panel);
    }
    // Box element variables, and the tile element each one is.
    std::vector<Var> bvars;
    std::vector<Expr> idx = origin;
    Expr dense = make_int(0);
    const size_t rank = box.size();
    for (size_t d = 0; d < rank; ++d) {
      Var v("box" + std::to_string(d));
      bvars.push_back(v);
      idx[idx.size() - rank + d] = idx[idx.size() - rank + d] + Expr(v);
      dense = dense * make_int(box[d]) + Expr(v);
    }
    const int64_t esize = b->dtype.storage_bytes(1);
    Expr base = flat_expr(b, layout, origin);
    Expr want = flat_expr(b, layout, idx);
    Expr byte = (base + dense) * make_int(esize);
    const int64_t mask = (int64_t{1} << tma_swizzle_bits(swizzle)) - 1;
    Expr swizzled = byte ^ (((byte >> make_int(7)) & make_int(mask)) << make_int(4));
    Expr got = floordiv(swizzled, make_int(esize));
    Expr misaligned = floormod(base * make_int(esize), make_int(128)) != make_int(0);
    Expr bad = (want != got) || misaligned;
    for (size_t d = 0; d < rank; ++d) domain.bound(bvars[d], 0, box[d] - 1);
    for (size_t d = 0; d < idx.size(); ++d) {
      domain.assume(idx[d] >= make_int(0) && idx[d] < b->shape[d]);
    }
    try {
      z3::check_result r = q.find(bad, {want, got, base}, timeout_ms);
      if (r == z3::unknown) {
        check.result = "undecided";
        check.counterexample = gave_up_text(timeout_ms);
      } else if (r == z3::sat) {
        const std::string element = q.element_text(b, idx);
        std::string when;
        for (const auto& [name, value] : q.session().symbol_values()) {
          if (name.rfind("box", 0) == 0) continue;
          when += (when.empty() ? " when " : ", ") + name + " = " + std::to_string(value);
        }
        const int64_t w = q.value(want), g = q.value(got);
        const int64_t at = q.value(base) * esize;
        check.result = "failed";
        check.counterexample =
            w != g
                ? element + " is stored at element " + std::to_string(w) + " of " + b->name +
                      "'s storage, but the TMA box puts it at element " + std::to_string(g) + when
                : "the box starts at byte " + std::to_string(at) + " of " + b->name + when +
                      ", not a multiple of 128";
      }
    } catch (const UserError& err) {
      check.result = "undecided";
      check.counterexample = err.what();
    }
    check.ms = clock.ms();
    checks.push_back(std::move(check));
  }
  return checks;
}

}  // namespace tessel
