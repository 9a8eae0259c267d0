// Software pipelining of a lowered T.Pipelined loop (the paper's §4.4). With statements of stage
// s in [0, S] (S = num_stages - 1), body iteration k runs stage-s statements for source iteration
// k - s, so the loop runs n + S times and each statement is guarded by 0 <= k - s < n: the first
// S iterations are the prologue, the last S the epilogue, and trip counts below the stage count
// or symbolic ones need nothing special.
//
// Shared tiles written in one stage and read in a later one get S + 1 versions: a leading
// dimension indexed by (source iteration) % (S + 1). Producer copies issued as cp.async are
// closed into one group per iteration (committed even when empty, so counts stay uniform); the
// statements of stage s >= 1 read data of iteration k - s, whose group was the (k - s)-th, and
// (k + 1) groups exist by then, so `cp_async_wait_group(s)` before the first of them is exactly
// the wait they need (a larger stage reads older data, already landed). Barriers are left to the
// insert_barriers pass, which sees the cp.async writes and the readers.
#include "core/pipeline_inject.h"

#include <algorithm>
#include <functional>
#include <set>

#include "core/access_rewriter.h"
#include "core/buffer_accesses.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

/// Rewrites accesses of versioned buffers to their version (`version` of the buffer), and the
/// loop variable to the source iteration.
class Versioner : public AccessRewriter {
 public:
  using VersionOf = std::function<Expr(const BufferNode*)>;
  Versioner(const PipelineVersions& versions, VersionOf version, const Var& loop, Expr source)
      : versions_(versions),
        version_(std::move(version)),
        loop_(loop),
        source_(std::move(source)) {}

  std::optional<Access> rewrite(const Buffer& b, const std::vector<Expr>& idx) override {
    auto it = versions_.buffers.find(b.get());
    if (it == versions_.buffers.end()) return std::nullopt;
    std::vector<Expr> out{version_(b.get())};
    out.insert(out.end(), idx.begin(), idx.end());
    return Access{it->second.versioned, out};
  }

 protected:
  Expr mutate_expr(const Expr& e) override {
    return AccessRewriter::mutate_expr(
        substitute(e, [&](const Var& v) { return v.same_as(loop_) ? source_ : Expr(); }));
  }

 private:
  const PipelineVersions& versions_;
  VersionOf version_;
  Var loop_;
  Expr source_;
};

bool issues_async(const Stmt& s) {
  bool found = false;
  for_each_stmt(s, [&](const Stmt& x) {
    if (const auto* c = x.as<IntrinsicCallNode>()) {
      found = found || intrinsic_info(c->intrinsic).family == IntrinsicFamily::kCpAsync;
    }
  });
  return found;
}

Stmt intrinsic(IntrinsicId id, std::vector<IntrinsicArg> args, const SourceLoc& loc) {
  return IntrinsicCallNode::make(id, std::move(args), loc);
}

}  // namespace

void version_buffers(const ForNode& loop, const std::vector<PipelineGroup>& groups, int depth,
                     PipelineVersions& versions) {
  // Shared tiles that cross stages get `depth` versions.
  std::vector<ReadsWrites> t;
  auto shared = [](const Buffer& b) {
    return b->scope == Scope::kShared || b->scope == Scope::kSharedDyn;
  };
  for (const PipelineGroup& g : groups) t.push_back(reads_writes(g.stmt, shared));
  for (size_t w = 0; w < groups.size(); ++w) {
    for (const auto* b : t[w].writes) {
      for (size_t r = 0; r < groups.size(); ++r) {
        if (groups[r].stage <= groups[w].stage || !t[r].reads.count(b)) continue;
        auto it = versions.buffers.find(b);
        const Buffer& buf = t[w].buffers.at(b);
        if (it == versions.buffers.end()) {
          std::vector<Expr> shape{make_int(depth)};
          shape.insert(shape.end(), buf->shape.begin(), buf->shape.end());
          versions.buffers.emplace(
              b, PipelineVersions::Entry{
                     buf, BufferNode::make(buf->name, shape, buf->dtype, buf->scope, buf->loc),
                     depth});
        } else if (it->second.depth != depth) {
          user_error("T.Pipelined at " + loop.loc.str() + ": shared buffer '" + buf->name +
                     "' is multi-buffered by two pipelines with different depths (" +
                     std::to_string(it->second.depth) + " and " + std::to_string(depth) +
                     "); give both loops the same num_stages");
        }
      }
    }
  }
}

Stmt version_accesses(const Stmt& s, const PipelineVersions& versions, const Expr& version) {
  return Versioner(
             versions, [&](const BufferNode*) { return version; }, Var("_"), Expr())
      .mutate(s);
}

Stmt inject_pipeline(const ForNode& loop, std::vector<PipelineGroup> groups,
                     PipelineVersions& versions, bool drop_wait) {
  int last_stage = 0;
  for (const PipelineGroup& g : groups) last_stage = std::max(last_stage, g.stage);
  const int depth = last_stage + 1;
  version_buffers(loop, groups, depth, versions);
  std::stable_sort(
      groups.begin(), groups.end(),
      [](const PipelineGroup& a, const PipelineGroup& b) { return a.order < b.order; });
  const Var& k = loop.var;
  const SourceLoc& loc = loop.loc;
  bool any_async = false;
  size_t last_async = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (issues_async(groups[i].stmt)) any_async = true, last_async = i;
  }
  std::vector<Stmt> body;
  bool waited = false;
  for (size_t i = 0; i < groups.size(); ++i) {
    const PipelineGroup& g = groups[i];
    if (any_async && !waited && g.stage > 0 && !drop_wait) {
      body.push_back(intrinsic(IntrinsicId::kCpAsyncWaitGroup,
                               {IntrinsicArg{Buffer(), {}, make_int(g.stage)}}, loc));
      waited = true;
    }
    Expr source = g.stage == 0 ? Expr(k) : k - g.stage;
    // Version of source iteration `source`; a buffer also used outside the loop is rotated so
    // that the last iteration (min + extent - 1) writes version 0, which those accesses read.
    Expr plain = floormod(source - loop.min, make_int(depth));
    Expr rotated = floormod(source - loop.min - (loop.extent - 1), make_int(depth));
    auto version = [&](const BufferNode* b) {
      return versions.used_outside.count(b) ? rotated : plain;
    };
    Stmt s = Versioner(versions, version, k, source).mutate(g.stmt);
    if (last_stage > 0) {
      Expr guard = source < loop.min + loop.extent;
      if (g.stage > 0) guard = source >= loop.min && guard;
      s = IfNode::make(guard, s, Stmt(), loc);
    }
    body.push_back(s);
    if (any_async && i == last_async) {
      body.push_back(intrinsic(IntrinsicId::kCpAsyncCommitGroup, {}, loc));
    }
  }
  return ForNode::make(k, loop.min, loop.extent + last_stage, ForKind::kSerial,
                       SeqNode::make(std::move(body)), loc);
}

Stmt apply_versions(const Stmt& body, const PipelineVersions& versions) {
  if (versions.buffers.empty()) return body;
  /// Allocations take the versioned buffer; accesses outside the pipelines use version 0.
  class Apply : public Versioner {
   public:
    explicit Apply(const PipelineVersions& v)
        : Versioner(
              v, [](const BufferNode*) { return make_int(0); }, Var("_"), Expr()),
          v_(v) {}

   protected:
    Stmt visit_Alloc(const AllocNode* op, const Stmt& s) override {
      auto it = v_.buffers.find(op->buffer.get());
      if (it == v_.buffers.end()) return s;
      return AllocNode::make(it->second.versioned, op->init, op->is_var, op->loc);
    }

   private:
    const PipelineVersions& v_;
  };
  return Apply(versions).mutate(body);
}

void add_versioned_layouts(LayoutMap& layouts, const PipelineVersions& versions) {
  for (const auto& [_, v] : versions.buffers) {  // the originals no longer exist
    auto it = layouts.shared.find(v.original.get());
    if (it == layouts.shared.end()) continue;
    layouts.shared.emplace(
        v.versioned.get(),
        Decided<Layout>{
            v.versioned, versioned_layout(it->second.layout, v.depth),
            it->second.origin + ", " + std::to_string(v.depth) + " versions (T.Pipelined)"});
    layouts.shared.erase(it);
  }
}

Layout versioned_layout(const Layout& layout, int depth) {
  std::vector<int64_t> shape{depth};
  shape.insert(shape.end(), layout.input_shape().begin(), layout.input_shape().end());
  return Layout::from_fn(shape, [&](const std::vector<Var>& v) {
    std::vector<Expr> out = layout.forward(std::vector<Expr>(v.begin() + 1, v.end()));
    Expr flat = out[0];
    for (size_t d = 1; d < out.size(); ++d) flat = flat * layout.output_shape()[d] + out[d];
    return std::vector<Expr>{v[0] * layout.output_size() + flat};
  });
}

}  // namespace tessel
