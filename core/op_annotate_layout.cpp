// T.annotate_layout: validation, printing, and its strict layout constraints.
#include "core/op_annotate_layout.h"

#include "core/expr_printer.h"
#include "core/lowering.h"

namespace tessel {

namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

TileOpRef AnnotateLayoutOp::make(std::vector<Entry> entries, SourceLoc loc) {
  std::string op = "T.annotate_layout" + (loc.known() ? " at " + loc.str() : "");
  for (const auto& [buffer, layout] : entries) {
    bool is_fragment = std::holds_alternative<Fragment>(layout);
    Scope s = buffer->scope;
    bool shared = s == Scope::kShared || s == Scope::kSharedDyn;
    if (is_fragment ? s != Scope::kFragment : !shared) {
      user_error(op + ": '" + buffer->name + "' is a " + scope_name(s) + " buffer but was given a " +
                 (is_fragment ? "Fragment" : "Layout") +
                 "; annotate fragments with a Fragment and shared buffers with a Layout");
    }
    const std::vector<int64_t>& in =
        is_fragment ? std::get<Fragment>(layout).input_shape() : std::get<Layout>(layout).input_shape();
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

void AnnotateLayoutOp::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  if (level != InferLevel::kStrict) return;
  for (const auto& [buffer, layout] : entries_) {
    if (const auto* l = std::get_if<Layout>(&layout)) {
      ctx.set_shared_layout(buffer, *l, describe() + " (strict)", /*annotation=*/true);
    } else {
      ctx.set_fragment(buffer, std::get<Fragment>(layout), describe() + " (strict)");
    }
  }
}

Stmt AnnotateLayoutOp::lower(LowerContext&) const { return SeqNode::make({}); }

}  // namespace tessel
