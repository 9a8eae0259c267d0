// Z3 proofs that wgmma descriptors read the shared layouts inference chose.
#include "verify/wgmma_proofs.h"

#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/stmt_functor.h"
#include "verify/layout_proofs.h"

namespace tessel {

Layout wgmma_descriptor_layout(const Layout& layout, const WgmmaOperandDesc& d, int64_t elem_bytes,
                               int64_t mn_extent) {
  const size_t rank = layout.input_shape().size();
  internal_check(rank >= 2, "a wgmma operand layout has at least 2 dimensions");
  const std::vector<int64_t>& out = layout.output_shape();
  auto linear = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> o = layout.forward(idx);
    Expr flat = o[0];
    for (size_t i = 1; i < o.size(); ++i) flat = flat * make_int(out[i]) + o[i];
    return flat;
  };
  return Layout::from_fn(layout.input_shape(), [&](const std::vector<Var>& v) {
    // The tile is the last two dimensions; leading ones (pipeline stages) pick the tile.
    Expr r = v[rank - 2], c = v[rank - 1];
    Expr mn = d.mn_major ? c : r, k = d.mn_major ? r : c;
    Expr mn_in = floormod(mn, make_int(mn_extent)), k_in = floormod(k, make_int(16));
    // The box origin as a multiple (not mn - mn_in: the analyzer bounds a product of
    // non-negatives exactly, a difference loosely, and the swizzle's XOR needs the bound).
    Expr mn0 = floordiv(mn, make_int(mn_extent)) * make_int(mn_extent);
    Expr k0 = floordiv(k, make_int(16)) * make_int(16);
    std::vector<Expr> origin(v.begin(), v.end());
    origin[rank - 2] = d.mn_major ? k0 : mn0;
    origin[rank - 1] = d.mn_major ? mn0 : k0;
    Expr start = linear(origin) * make_int(elem_bytes);
    Expr byte = wgmma_element_byte<Expr>(d, elem_bytes, start, mn_in, k_in);
    return std::vector<Expr>{floordiv(byte, make_int(elem_bytes))};
  });
}

KernelCheck prove_wgmma_descriptor(const std::string& buffer, const std::string& operand,
                                   const Layout& layout, const WgmmaOperandDesc& d,
                                   int64_t elem_bytes, int64_t mn_extent, unsigned timeout_ms) {
  std::string what = "wgmma descriptor of " + buffer + " (" + operand + ", " +
                     (d.mn_major ? "MN" : "K") + "-major, swizzle " + std::to_string(d.swizzle) +
                     " B, LBO " + std::to_string(d.lbo) + ", SBO " + std::to_string(d.sbo) +
                     "): reads every element where the layout stores it";
  const std::vector<int64_t>& out = layout.output_shape();
  Layout flat = layout;
  if (out.size() != 1) {
    flat = Layout::from_fn(layout.input_shape(), [&](const std::vector<Var>& v) {
      std::vector<Expr> o = layout.forward(std::vector<Expr>(v.begin(), v.end()));
      Expr x = o[0];
      for (size_t i = 1; i < o.size(); ++i) x = x * make_int(out[i]) + o[i];
      return std::vector<Expr>{x};
    });
  }
  ProofOptions options;
  options.timeout_ms = timeout_ms;
  options.name = buffer;
  try {
    ProofResult r =
        prove_equal(wgmma_descriptor_layout(flat, d, elem_bytes, mn_extent), flat, options);
    KernelCheck c{what,
                  r.holds     ? "proved"
                  : r.decided ? "failed"
                              : "undecided",
                  std::nullopt, r.ms};
    if (!r.holds) {
      c.counterexample = r.message +
                         " (the first: where the descriptor reads the element, the second: "
                         "where the layout stores it; fix the descriptor's swizzle, LBO or SBO, "
                         "or the layout)";
    }
    return c;
  } catch (const UserError& e) {
    return {what, "undecided", std::string(e.what()), 0};
  }
}

std::vector<KernelCheck> prove_wgmma_descriptors(const LoweredKernel& lowered,
                                                 unsigned timeout_ms) {
  std::map<std::string, const Layout*> layouts;
  for (const auto& [_, d] : lowered.layouts.shared) layouts[d.buffer->name] = &d.layout;
  // (buffer, operand, swizzle, lbo, sbo, mn_major, mn extent) of each wgmma operand, once.
  using Key = std::tuple<std::string, std::string, int, int64_t, int64_t, bool, int64_t, int64_t>;
  std::set<Key> seen;
  std::vector<KernelCheck> out;
  for_each_stmt(lowered.kernel->body, [&](const Stmt& s) {
    const auto* call = s.as<IntrinsicCallNode>();
    if (!call) return;
    const IntrinsicInfo& info = intrinsic_info(call->intrinsic);
    if (info.family != IntrinsicFamily::kWgmma) return;
    auto imm = [&](size_t i) { return *as_const_int(call->args[i].value); };
    const int64_t n = imm(3);
    // Descriptor immediates follow n: A's (ss only), then B's (core/families/wgmma.cpp).
    size_t at = 4;
    for (size_t op : {size_t{1}, size_t{2}}) {
      if (info.operands[op].kind != OperandKind::kShared) continue;
      WgmmaOperandDesc d{static_cast<int>(imm(at)), imm(at + 1), imm(at + 2), imm(at + 3) != 0};
      at += 4;
      const Buffer& b = call->args[op].buffer;
      const std::string role = info.operands[op].name + " of " + info.name;
      const int64_t mn_extent = op == 1 ? 64 : n;
      auto it = layouts.find(b->name);
      if (it == layouts.end()) {
        // Thread-level code written by hand: its stores place the elements by their own index
        // arithmetic, which no layout records; the simulator checks the values instead.
        out.push_back({"wgmma descriptor of " + b->name + " (" + role + ")", "undecided",
                       "'" + b->name +
                           "' has no layout from inference (thread-level code "
                           "written by hand): the descriptor cannot be compared with a layout; "
                           "run it at --level thread to check its values",
                       0});
        continue;
      }
      const int64_t eb = b->dtype.storage_bytes(1);
      if (!seen.insert({b->name, role, d.swizzle, d.lbo, d.sbo, d.mn_major, mn_extent, eb})
               .second) {
        continue;
      }
      out.push_back(
          prove_wgmma_descriptor(b->name, role, *it->second, d, eb, mn_extent, timeout_ms));
    }
  });
  return out;
}

}  // namespace tessel
