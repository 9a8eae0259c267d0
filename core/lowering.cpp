// The layout map and the inference and lowering contexts.
#include "core/lowering.h"

#include <algorithm>

#include "core/buffer.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/stmt_functor.h"

namespace tessel {

const char* infer_level_name(InferLevel level) {
  switch (level) {
    case InferLevel::kStrict:
      return "strict";
    case InferLevel::kCommon:
      return "common";
    case InferLevel::kFree:
      return "free";
  }
  return "?";
}

namespace {

template <typename M>
auto* find_layout(const M& map, const void* key) {
  auto it = map.find(static_cast<decltype(map.begin()->first)>(key));
  return it == map.end() ? nullptr : &it->second.layout;
}

}  // namespace

const Layout* LayoutMap::shared_layout(const Buffer& b) const {
  return find_layout(shared, b.get());
}
const Fragment* LayoutMap::fragment(const Buffer& b) const {
  return find_layout(fragments, b.get());
}
const Fragment* LayoutMap::loop(const void* key) const { return find_layout(loops, key); }

std::string LayoutMap::to_string() const {
  // The maps are keyed by node address; sort each section's lines so the text is stable.
  auto section = [](std::vector<std::string> lines) {
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const std::string& l : lines) out += l;
    return out;
  };
  std::vector<std::string> shared_lines, fragment_lines, loop_lines;
  for (const auto& [_, d] : shared) {
    shared_lines.push_back("# layout " + d.buffer->name + ": " + d.layout.to_string() + "  <- " +
                           d.origin + "\n");
  }
  for (const auto& [_, d] : fragments) {
    fragment_lines.push_back("# fragment " + d.buffer->name + ": " + d.layout.to_string() +
                             "  <- " + d.origin + "\n");
  }
  for (const auto& [_, d] : loops) {
    loop_lines.push_back("# loop " + d.origin + ": " + d.layout.to_string() + "\n");
  }
  return section(shared_lines) + section(fragment_lines) + section(loop_lines);
}

namespace {

[[noreturn]] void conflict(const std::string& kernel, const Buffer& b,
                           const std::string& old_layout, const std::string& old_origin,
                           const std::string& new_layout, const std::string& new_origin) {
  user_error("kernel '" + kernel + "': layout inference cannot agree on buffer '" + b->name +
             "':\n  " + old_origin + " needs\n    " + old_layout + "\n  " + new_origin +
             " needs\n    " + new_layout + "\n  fix: give '" + b->name +
             "' one layout with T.annotate_layout, or copy it "
             "into a second buffer between the two operators (a hop through shared memory)");
}

/// A fragment without replication whose thread expression still mentions its (single-valued)
/// replicate variable: the same map without it, so that it can be inverted.
Fragment without_unused_rep(const Fragment& f) {
  if (f.replicate() != 1 || !uses_var(f.forward_thread(), f.replicate_var())) return f;
  Expr thread = substitute(f.forward_thread(), [&](const Var& v) {
    return v.same_as(f.replicate_var()) ? make_int(0) : Expr();
  });
  return Fragment::make(f.iter_vars(), f.input_shape(), thread, f.local_index());
}

}  // namespace

void LayoutInferContext::set_shared_layout(const Buffer& b, Layout layout,
                                           const std::string& origin, bool annotation) {
  auto it = map_.shared.find(b.get());
  if (annotated_.count(b.get())) {
    // A second T.annotate_layout of one buffer would be ignored: refuse it (the same annotation
    // seen again in a later round of inference is fine).
    if (annotation && (it->second.origin != origin || !(it->second.layout == layout))) {
      user_error("kernel '" + kernel_->name + "': buffer '" + b->name +
                 "' is annotated twice: by " + it->second.origin + " with\n    " +
                 it->second.layout.to_string() + "\n  and by " + origin + " with\n    " +
                 layout.to_string() + "\n  fix: keep one T.annotate_layout entry for it");
    }
    return;
  }
  if (annotation) {
    annotated_.insert(b.get());
    if (it != map_.shared.end()) map_.shared.erase(it);
    map_.shared.emplace(b.get(), Decided<Layout>{b, std::move(layout), origin});
    changed_ = true;
    return;
  }
  if (it != map_.shared.end()) {
    if (!(it->second.layout == layout) && !equal_by_evaluation(it->second.layout, layout)) {
      conflict(kernel_->name, b, it->second.layout.to_string(), it->second.origin,
               layout.to_string(), origin);
    }
    return;
  }
  map_.shared.emplace(b.get(), Decided<Layout>{b, std::move(layout), origin});
  changed_ = true;
}

void LayoutInferContext::set_fragment(const Buffer& b, Fragment fragment,
                                      const std::string& origin) {
  fragment = without_unused_rep(fragment);
  auto it = map_.fragments.find(b.get());
  if (it != map_.fragments.end()) {
    if (!(it->second.layout == fragment) && !equal_by_evaluation(it->second.layout, fragment)) {
      conflict(kernel_->name, b, it->second.layout.to_string(), it->second.origin,
               fragment.to_string(), origin);
    }
    return;
  }
  map_.fragments.emplace(b.get(), Decided<Fragment>{b, std::move(fragment), origin});
  changed_ = true;
}

void LayoutInferContext::set_loop(const void* key, Fragment layout, const std::string& origin) {
  if (map_.loops.count(key)) return;
  layout = without_unused_rep(layout);
  map_.loops.emplace(key, Decided<Fragment>{Buffer(), std::move(layout), origin});
  changed_ = true;
}

bool LayoutInferContext::take_changed() {
  bool c = changed_;
  changed_ = false;
  return c;
}

LowerContext::LowerContext(const Kernel& kernel, const Target& target, const LayoutMap& map,
                           Analyzer& analyzer)
    : kernel_(kernel), target_(target), map_(map), analyzer_(analyzer) {
  for (const Buffer& p : kernel->params) names_[p->name] = 1;
  for_each_stmt(kernel->body, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocNode>()) names_[a->buffer->name] = 1;
    if (const auto* f = s.as<ForNode>()) names_[f->var.name()] = 1;
    if (const auto* l = s.as<LetNode>()) names_[l->var.name()] = 1;
  });
}

std::string LowerContext::fresh_name(const std::string& base) {
  int n = names_[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

Buffer LowerContext::registers(const Buffer& fragment) {
  auto it = registers_.find(fragment.get());
  if (it != registers_.end()) return it->second;
  const Fragment* f = map_.fragment(fragment);
  if (!f) {
    internal_error("fragment '" + fragment->name + "' has no layout after inference");
  }
  Buffer regs = BufferNode::make(fragment->name, {make_int(f->local_extent())}, fragment->dtype,
                                 Scope::kLocal, fragment->loc);
  registers_.emplace(fragment.get(), regs);
  return regs;
}

Buffer LowerContext::temporary(const std::string& base, std::vector<Expr> shape, DataType dtype,
                               Scope scope) {
  Buffer b = BufferNode::make(fresh_name(base), std::move(shape), dtype, scope);
  temporaries_.push_back(b);
  return b;
}

Var LowerContext::fresh_var(const std::string& base) { return Var(fresh_name(base)); }

Var LowerContext::enter_group(const ThreadGroup& group) {
  internal_check(group_.count == 0 && group.count > 0, "LowerContext::enter_group: nested group");
  group_ = group;
  group_thread_ = fresh_var(kernel_->thread_var.name() + "_g");
  analyzer_.bind(group_thread_, 0, group.count);
  return group_thread_;
}

}  // namespace tessel
