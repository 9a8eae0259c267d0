// Software pipelining of a lowered T.Pipelined loop (the paper's §4.4). With statements of stage
// s in [0, S] (S = num_stages - 1), iteration k of the schedule runs stage-s statements for
// source iteration k - s, for k in [min, min + extent + S). When the caller proved extent > S,
// the first S iterations (the prologue) and the last S (the epilogue) are peeled off, each with
// only the stages that have a source iteration, and the main loop over [min + S, min + extent)
// runs every stage without a guard. Otherwise (a trip count that may be S or below) one
// loop of extent + S iterations guards each statement by 0 <= k - s < extent.
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
                     PipelineVersions& versions, bool drop_wait, bool peel) {
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
  // One iteration of the schedule with the loop variable at `at`: the groups `include` admits,
  // each under `guard(stage)` when that is defined. The wait stays where the single loop has it
  // whenever a later group of this iteration reads (a wait only delays, so leaving it out where
  // nothing follows changes no value); the commit stays in every iteration, so that group counts
  // are those of the single loop.
  auto iteration = [&](const Expr& at, const std::function<bool(int)>& include,
                       const std::function<Expr(int)>& guard) {
    std::vector<Stmt> body;
    bool waited = false;
    for (size_t i = 0; i < groups.size(); ++i) {
      const PipelineGroup& g = groups[i];
      if (any_async && !waited && g.stage > 0 && !drop_wait) {
        bool reader_follows = false;
        for (size_t j = i; j < groups.size(); ++j) {
          reader_follows = reader_follows || (groups[j].stage > 0 && include(groups[j].stage));
        }
        if (reader_follows) {
          body.push_back(intrinsic(IntrinsicId::kCpAsyncWaitGroup,
                                   {IntrinsicArg{Buffer(), {}, make_int(g.stage)}}, loc));
        }
        waited = true;
      }
      if (include(g.stage)) {
        Expr source = g.stage == 0 ? at : at - g.stage;
        // Version of source iteration `source`; a buffer also used outside the loop is rotated
        // so that the last iteration (min + extent - 1) writes version 0, which those accesses
        // read.
        Expr plain = floormod(source - loop.min, make_int(depth));
        Expr rotated = floormod(source - loop.min - (loop.extent - 1), make_int(depth));
        auto version = [&](const BufferNode* b) {
          return versions.used_outside.count(b) ? rotated : plain;
        };
        Stmt s = Versioner(versions, version, k, source).mutate(g.stmt);
        if (Expr cond = guard(g.stage); cond.defined()) s = IfNode::make(cond, s, Stmt(), loc);
        body.push_back(s);
      }
      if (any_async && i == last_async) {
        body.push_back(intrinsic(IntrinsicId::kCpAsyncCommitGroup, {}, loc));
      }
    }
    return SeqNode::make(std::move(body));
  };
  auto all = [](int) { return true; };
  auto unguarded = [](int) { return Expr(); };
  if (last_stage == 0) {
    return ForNode::make(k, loop.min, loop.extent, ForKind::kSerial, iteration(k, all, unguarded),
                         loc);
  }
  if (!peel) {
    // Iteration k runs stage s for source iteration k - s when 0 <= k - s < extent.
    auto guard = [&](int stage) {
      Expr source = stage == 0 ? Expr(k) : k - stage;
      Expr cond = source < loop.min + loop.extent;
      return stage > 0 ? (source >= loop.min && cond) : cond;
    };
    return ForNode::make(k, loop.min, loop.extent + last_stage, ForKind::kSerial,
                         iteration(k, all, guard), loc);
  }
  // extent > S (the caller proved it): the S prologue iterations run the stages that have a
  // source iteration (s <= i), the main loop every stage unguarded, and the S epilogue
  // iterations the stages whose source iteration is still below the extent (s > j).
  std::vector<Stmt> out;
  for (int i = 0; i < last_stage; ++i) {
    out.push_back(iteration(
        loop.min + i, [i](int s) { return s <= i; }, unguarded));
  }
  out.push_back(ForNode::make(k, loop.min + last_stage, loop.extent - last_stage, ForKind::kSerial,
                              iteration(k, all, unguarded), loc));
  for (int j = 0; j < last_stage; ++j) {
    out.push_back(iteration(
        loop.min + loop.extent + j, [j](int s) { return s > j; }, unguarded));
  }
  return SeqNode::make(std::move(out));
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
