// T.annotate_layout: validation, printing, and its strict layout constraints.
#include "core/op_annotate_layout.h"

#include <map>
#include <optional>

#include "core/builtin_layouts.h"
#include "core/expr_printer.h"
#include "core/instruction_family.h"
#include "core/lowering.h"

namespace tessel {

namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string index_string(const std::vector<int64_t>& index) {
  std::string s;
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s;
}

/// Boxes up to this many points are checked for collisions by evaluation here; larger ones are
/// left to `tessel verify`, which proves injectivity for every index.
constexpr int64_t kMaxCheckedPoints = int64_t{1} << 20;

/// A description of two indices that `layout` stores at one place (nullopt when none).
std::optional<std::string> collision(const std::string& name, const Layout& layout) {
  if (layout.input_size() > kMaxCheckedPoints) return std::nullopt;
  std::map<std::vector<int64_t>, std::vector<int64_t>> seen;
  std::optional<std::string> found;
  for_each_index(layout.input_shape(), [&](const std::vector<int64_t>& index) {
    if (found) return;
    std::vector<int64_t> out = layout.map(index);
    auto [it, fresh] = seen.emplace(out, index);
    if (!fresh) {
      found = name + "[" + index_string(it->second) + "] and " + name + "[" + index_string(index) +
              "] both map to offset (" + index_string(out) + ")";
    }
  });
  return found;
}

/// The same for a fragment: two (index, replica) pairs in one register of one thread.
std::optional<std::string> collision(const std::string& name, const Fragment& frag) {
  if (frag.input_size() * frag.replicate() > kMaxCheckedPoints) return std::nullopt;
  std::map<std::pair<int64_t, int64_t>, std::pair<std::vector<int64_t>, int64_t>> seen;
  std::optional<std::string> found;
  for_each_index(frag.input_shape(), [&](const std::vector<int64_t>& index) {
    for (int64_t rep = 0; rep < frag.replicate() && !found; ++rep) {
      auto at = frag.map_fragment(index, rep);
      auto [it, fresh] = seen.emplace(at, std::make_pair(index, rep));
      if (!fresh) {
        found = name + "[" + index_string(it->second.first) + "] (replica " +
                std::to_string(it->second.second) + ") and " + name + "[" + index_string(index) +
                "] (replica " + std::to_string(rep) + ") both live in thread " +
                std::to_string(at.first) + ", register " + std::to_string(at.second);
      }
    }
  });
  return found;
}

}  // namespace

TileOpRef AnnotateLayoutOp::make(std::vector<Entry> entries, SourceLoc loc) {
  std::string op = "T.annotate_layout" + (loc.known() ? " at " + loc.str() : "");
  for (size_t i = 0; i < entries.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (entries[j].first.get() == entries[i].first.get()) {
        user_error(op + ": buffer '" + entries[i].first->name +
                   "' is given two layouts; give it one");
      }
    }
  }
  for (const auto& [buffer, layout] : entries) {
    bool is_fragment = std::holds_alternative<Fragment>(layout);
    Scope s = buffer->scope;
    bool shared = s == Scope::kShared || s == Scope::kSharedDyn;
    if (is_fragment ? s != Scope::kFragment : !shared) {
      user_error(op + ": '" + buffer->name + "' is a " + scope_name(s) +
                 " buffer but was given a " + (is_fragment ? "Fragment" : "Layout") +
                 "; annotate fragments with a Fragment and shared buffers with a Layout");
    }
    const std::vector<int64_t>& in = is_fragment ? std::get<Fragment>(layout).input_shape()
                                                 : std::get<Layout>(layout).input_shape();
    bool same = in.size() == buffer->ndim();
    for (size_t d = 0; same && d < in.size(); ++d) {
      auto c = as_const_int(buffer->shape[d]);
      same = !c || *c == in[d];
    }
    if (!same) {
      user_error(op + ": the layout for '" + buffer->name + "' takes indices of shape " +
                 shape_string(in) + " but the buffer has " + std::to_string(buffer->ndim()) +
                 " dimension(s) of another shape; build the layout for the buffer's shape");
    }
    // A layout that stores two elements in one place loses one of them at thread level (the
    // tile level never looks at layouts): refused here, for both levels.
    auto clash = std::visit([&](const auto& l) { return collision(buffer->name, l); }, layout);
    if (clash) {
      user_error(op + ": the " + (is_fragment ? "fragment" : "layout") + " given to '" +
                 buffer->name + "' is not injective: " + *clash + "; give every element its own " +
                 (is_fragment ? "(thread, register)" : "offset (pad or swizzle, never fold)"));
    }
  }
  return std::make_shared<AnnotateLayoutOp>(std::move(entries), std::move(loc));
}

std::string AnnotateLayoutOp::to_string() const {
  std::string s = "T.annotate_layout({";
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& [buffer, layout] = entries_[i];
    s += (i ? ", " : "") + buffer->name + ": " +
         std::visit([](const auto& l) { return l.to_string(); }, layout);
  }
  return s + "})";
}

}  // namespace tessel

namespace tessel {

namespace {

/// The annotated layout on this target. The sm80 gemm-operand swizzle (what
/// make_swizzled_layout and gemm_operand_layout give) asks for "the matrix unit's operand
/// swizzle"; where gemms run on MFMA that is mfma_operand_layout, whose 8-byte granules keep the
/// ds_read_b64 phases conflict-free (the sm80 one leaves them 2-way). A layout only places
/// elements, so the values the kernel computes are the same.
Layout for_target(const Layout& l, const Buffer& b, const Target& target) {
  if (!target.has(mfma_family()) || b->ndim() != 2) return l;
  auto rows = as_const_int(b->shape[0]), cols = as_const_int(b->shape[1]);
  if (!rows || !cols) return l;
  for (bool k_inner : {true, false}) {
    if (gemm_operand_layout_kind(*rows, *cols, b->dtype, k_inner) == "padded") continue;
    if (l == gemm_operand_layout(*rows, *cols, b->dtype, k_inner)) {
      return mfma_operand_layout(*rows, *cols, b->dtype, k_inner);
    }
  }
  return l;
}

}  // namespace

void AnnotateLayoutOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  if (level != InferLevel::kStrict) return;
  for (const auto& [buffer, layout] : entries_) {
    if (const auto* l = std::get_if<Layout>(&layout)) {
      ctx.set_shared_layout(buffer, for_target(*l, buffer, ctx.target()), describe() + " (strict)",
                            /*annotation=*/true);
    } else {
      ctx.set_fragment(buffer, std::get<Fragment>(layout), describe() + " (strict)");
    }
  }
}

Stmt AnnotateLayoutOp::lower(LowerContext&) const { return SeqNode::make({}); }

}  // namespace tessel
