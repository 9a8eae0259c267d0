// T.Pipelined schedules: default stages and order, and the one validation of a schedule against
// the body's dependencies, which a Boost.Graph graph holds: an edge u -> v when v comes after u
// in the source and they touch one buffer with at least one write.
//   - a statement that reads what another writes cannot run in an earlier stage than the writer,
//     nor before it in the same stage;
//   - a fragment or local buffer cannot be written in one stage and used in another (registers
//     are not multi-buffered; shared tiles are, by the injection that follows lowering).
#include "core/pipeline_schedule.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <numeric>
#include <set>

#include "core/buffer_accesses.h"
#include "core/error.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

bool is_producer(const Stmt& s) {
  const auto* call = s.as<TileOpCallNode>();
  if (!call || call->op->name() != "copy") return false;
  auto reads = call->op->reads(), writes = call->op->writes();
  return reads.size() == 1 && writes.size() == 1 && reads[0].buffer->scope == Scope::kGlobal &&
         (writes[0].buffer->scope == Scope::kShared ||
          writes[0].buffer->scope == Scope::kSharedDyn);
}

std::string list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string describe(const Stmt& s) {
  if (const auto* call = s.as<TileOpCallNode>()) return call->op->describe();
  return "statement at " + s->loc.str();
}

void check_dependencies(const std::string& where, const std::vector<Stmt>& body,
                        const PipelineInfo& plan) {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  const size_t n = body.size();
  Graph deps(n);
  std::vector<ReadsWrites> t;
  for (const Stmt& s : body) t.push_back(reads_writes(s));
  auto shares = [&](const std::set<const BufferNode*>& a, const std::set<const BufferNode*>& b) {
    for (const auto* x : a) {
      if (b.count(x)) return x;
    }
    return static_cast<const BufferNode*>(nullptr);
  };
  for (size_t u = 0; u < n; ++u) {
    for (size_t v = u + 1; v < n; ++v) {
      if (shares(t[u].writes, t[v].reads) || shares(t[u].writes, t[v].writes) ||
          shares(t[u].reads, t[v].writes)) {
        boost::add_edge(u, v, deps);
      }
    }
  }
  boost::graph_traits<Graph>::edge_iterator e, end;
  for (std::tie(e, end) = boost::edges(deps); e != end; ++e) {
    size_t u = boost::source(*e, deps), v = boost::target(*e, deps);
    const BufferNode* raw = shares(t[u].writes, t[v].reads);
    if (raw && plan.stage[v] < plan.stage[u]) {
      user_error(where + ": " + describe(body[v]) + " reads '" + raw->name + "', which " +
                 describe(body[u]) + " writes, but runs in stage " + std::to_string(plan.stage[v]) +
                 ", before the writer's stage " + std::to_string(plan.stage[u]) +
                 "; give it stage >= " + std::to_string(plan.stage[u]));
    }
    if (plan.stage[u] == plan.stage[v] && plan.order[v] < plan.order[u]) {
      const BufferNode* b = raw ? raw : shares(t[u].reads, t[v].writes);
      if (!b) b = shares(t[u].writes, t[v].writes);
      user_error(where + ": order=" + list(plan.order) + " puts " + describe(body[v]) + " before " +
                 describe(body[u]) + " in stage " + std::to_string(plan.stage[u]) +
                 ", but both touch '" + b->name +
                 "' and the second depends on the first; keep them in source order");
    }
    // Registers cannot be multi-buffered.
    for (const auto* x : t[u].writes) {
      if (!t[v].reads.count(x) || plan.stage[u] == plan.stage[v]) continue;
      Scope scope = t[u].buffers.at(x)->scope;
      if (scope == Scope::kFragment || scope == Scope::kLocal) {
        user_error(where + ": '" + x->name + "' lives in registers; it is written in stage " +
                   std::to_string(plan.stage[u]) + " by " + describe(body[u]) +
                   " and read in stage " + std::to_string(plan.stage[v]) + " by " +
                   describe(body[v]) +
                   "; registers are not multi-buffered, so put both in one stage");
      }
    }
  }
}

}  // namespace

std::vector<Stmt> pipeline_statements(const Stmt& body) {
  const auto* seq = body.as<SeqNode>();
  return seq ? seq->stmts : std::vector<Stmt>{body};
}

PipelineInfo complete_pipeline_schedule(const std::vector<Stmt>& body, const PipelineInfo& given) {
  const int n = static_cast<int>(body.size());
  const int last = std::max(given.num_stages, 1) - 1;
  PipelineInfo plan = given;
  if (plan.stage.empty()) {
    for (const Stmt& s : body) plan.stage.push_back(is_producer(s) ? 0 : last);
  }
  if (plan.order.empty() && static_cast<int>(plan.stage.size()) == n) {
    std::vector<int> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int a, int b) { return plan.stage[a] < plan.stage[b]; });
    plan.order.assign(n, 0);
    for (int pos = 0; pos < n; ++pos) plan.order[idx[pos]] = pos;
  }
  return plan;
}

void check_pipeline_schedule(const std::string& where, const std::vector<Stmt>& body,
                             const PipelineInfo& plan) {
  const int n = static_cast<int>(body.size());
  const int stages = std::max(plan.num_stages, 1);
  if (static_cast<int>(plan.stage.size()) != n || static_cast<int>(plan.order.size()) != n) {
    user_error(where + ": stage=" + list(plan.stage) + " and order=" + list(plan.order) +
               " need one entry per statement of the loop body, which has " + std::to_string(n));
  }
  std::vector<int> sorted = plan.order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i) {
    if (sorted[i] != i) {
      user_error(where + ": order=" + list(plan.order) + " must be a permutation of 0.." +
                 std::to_string(n - 1));
    }
    if (plan.stage[i] < 0 || plan.stage[i] >= stages) {
      user_error(where + ": stage=" + list(plan.stage) + " has " + std::to_string(plan.stage[i]) +
                 " for " + describe(body[i]) +
                 "; stages run from 0 to num_stages - 1 = " + std::to_string(stages - 1));
    }
  }
  check_dependencies(where, body, plan);
}

}  // namespace tessel
