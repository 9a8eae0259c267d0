// Pass infer_layouts: the paper's layout inference (§4.2). The inference units are the tile
// operators and the T.Parallel nests; each infers for itself (TileOp::infer_layout,
// ParallelLoop::infer_layout) — the pass never looks at what kind of unit it drives. A
// Boost.Graph bipartite graph links every unit to the shared and fragment buffers it touches;
// propagation visits units breadth-first from the buffers fixed by strict constraints, so
// layouts spread outwards from gemm operands and annotations, and units the search does not
// reach follow in program order.
//
//   1. strict: every unit once.
//   2. common: every unit in propagation order, repeated until nothing changes.
//   3. free: units in order of the largest fragment they touch (then in propagation order) until
//      one decides something; then back to 2. Stop when a whole free sweep decides nothing. Big
//      tiles choose first, so row vectors follow the tiles they are reduced from (online
//      softmax's running maximum) rather than being fixed by a T.fill that happens to come first.
//   4. fragments nobody constrained (written and never read in a loop) get the free partition.
// A unit inside branches on the thread index (`with T.ws(g)`) infers for the threads of that
// group (ctx.threads() is their count); a fragment touched from two different thread sets is a
// user error.
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <deque>
#include <functional>
#include <map>
#include <set>

#include "core/buffer_accesses.h"
#include "core/parallel_loop.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "core/thread_group.h"
#include "core/tile_op.h"

namespace tessel {

namespace {

struct Unit {
  std::function<void(LayoutInferContext&, InferLevel)> infer;
  std::vector<Buffer> buffers;  ///< shared and fragment buffers it touches
  int threads = 0;              ///< the thread count of its group (0: the whole block)
};

void add_buffer(std::vector<Buffer>& out, const Buffer& b) {
  if (b->scope == Scope::kGlobal || b->scope == Scope::kLocal) return;
  for (const Buffer& x : out) {
    if (x.same_as(b)) return;
  }
  out.push_back(b);
}

std::vector<Buffer> buffers_of(const Stmt& body) {
  std::vector<Buffer> out;
  for (const BufferAccess& a : buffer_accesses(body)) add_buffer(out, a.buffer);
  return out;
}

/// The inference units of `body`, in program order (a Parallel nest is one unit), each with the
/// thread count of the group it runs on (0: the whole block).
class UnitCollector {
 public:
  UnitCollector(const Kernel& kernel, std::vector<Unit>& units, std::deque<ParallelLoop>& loops)
      : kernel_(kernel), units_(units), loops_(loops) {}

  void collect(const Stmt& s, const ThreadSet& set) {
    if (const auto* call = s.as<TileOpCallNode>()) {
      std::shared_ptr<const TileOp> op = call->op;
      Unit u{[op](LayoutInferContext& c, InferLevel l) { op->infer_layout(c, l); }, {}};
      for (const auto& r : op->reads()) add_buffer(u.buffers, r.buffer);
      for (const auto& r : op->writes()) add_buffer(u.buffers, r.buffer);
      add(std::move(u), set, op->describe());
    } else if (const auto* f = s.as<ForNode>()) {
      if (f->for_kind != ForKind::kParallel) return collect(f->body, set);
      const ParallelLoop* p = &loops_.emplace_back(ParallelLoop::from_for(*f));
      add({[p](LayoutInferContext& c, InferLevel l) { p->infer_layout(c, l); },
           buffers_of(p->body())},
          set, "T.Parallel" + (f->loc.file.empty() ? "" : " at " + f->loc.str()));
    } else if (const auto* seq = s.as<SeqNode>()) {
      for (const Stmt& c : seq->stmts) collect(c, set);
    } else if (const auto* i = s.as<IfNode>()) {
      // A condition on the thread index alone narrows the group; any other keeps it (the
      // lowering refuses tile operators under a thread condition it cannot evaluate).
      auto then_set = set.narrowed(i->cond, kernel_->thread_var, false);
      collect(i->then_case, then_set.value_or(set));
      if (i->else_case.defined()) {
        auto else_set = set.narrowed(i->cond, kernel_->thread_var, true);
        collect(i->else_case, else_set.value_or(set));
      }
    } else if (const auto* let = s.as<LetNode>()) {
      collect(let->body, set);
    }
  }

 private:
  /// Records the unit with its group; a fragment's registers belong to the threads of one
  /// group, so a fragment that units of two different thread sets touch is refused.
  void add(Unit u, const ThreadSet& set, const std::string& what) {
    std::optional<ThreadGroup> group = thread_group_of(set);
    u.threads = group && !set.whole_block() ? static_cast<int>(group->count) : 0;
    for (const Buffer& b : u.buffers) {
      if (b->scope != Scope::kFragment) continue;
      auto [it, fresh] = fragment_users_.emplace(b.get(), std::make_pair(set, what));
      if (fresh || it->second.first == set) continue;
      auto place = [&](const ThreadSet& s) {
        return s.whole_block() ? "the whole block (" + s.to_string() + ")" : s.to_string();
      };
      user_error("kernel '" + kernel_->name + "': fragment '" + b->name + "' is used by " +
                 it->second.second + " on " + place(it->second.first) + " and by " + what + " on " +
                 place(set) +
                 ", but a fragment's registers belong to the threads of one group (its layout "
                 "spreads it over those threads). fix: use '" +
                 b->name +
                 "' inside branches over the same threads only (e.g. move its T.clear or "
                 "T.fill into the same `with T.ws(...)` as its T.gemm), or copy it through "
                 "shared memory into a fragment of the other group");
    }
    units_.push_back(std::move(u));
  }

  const Kernel& kernel_;
  std::vector<Unit>& units_;
  std::deque<ParallelLoop>& loops_;
  /// Per fragment: the thread set and the unit that used it first.
  std::map<const BufferNode*, std::pair<ThreadSet, std::string>> fragment_users_;
};

}  // namespace

LayoutMap infer_layouts(const Kernel& kernel, const Target& target) {
  std::vector<Unit> units;
  std::deque<ParallelLoop> loops;  // stable addresses: units point into it
  UnitCollector(kernel, units, loops).collect(kernel->body, ThreadSet::all(kernel->threads));

  // The unit-buffer graph: units are vertices [0, U), buffers follow.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  std::map<const BufferNode*, size_t> buffer_vertex;
  std::vector<Buffer> buffers;
  for (const Unit& u : units) {
    for (const Buffer& b : u.buffers) {
      if (buffer_vertex.emplace(b.get(), units.size() + buffers.size()).second)
        buffers.push_back(b);
    }
  }
  Graph graph(units.size() + buffers.size());
  for (size_t i = 0; i < units.size(); ++i) {
    for (const Buffer& b : units[i].buffers) boost::add_edge(i, buffer_vertex.at(b.get()), graph);
  }

  LayoutMap map;
  LayoutInferContext ctx(kernel, target, map);
  auto infer = [&](size_t i, InferLevel level) {
    ctx.set_group_threads(units[i].threads);
    units[i].infer(ctx, level);
    ctx.set_group_threads(0);
  };
  for (size_t i = 0; i < units.size(); ++i) infer(i, InferLevel::kStrict);

  // Propagation order: breadth-first from the buffers decided so far, then the rest in order.
  std::vector<size_t> order;
  {
    std::vector<boost::default_color_type> color(boost::num_vertices(graph), boost::white_color);
    auto colors =
        boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, graph));
    struct Recorder : boost::default_bfs_visitor {
      std::vector<size_t>* order;
      size_t units;
      void discover_vertex(size_t v, const Graph&) const {
        if (v < units) order->push_back(v);
      }
    } recorder;
    recorder.order = &order;
    recorder.units = units.size();
    for (const Buffer& b : buffers) {
      if (!map.fragment(b) && !map.shared_layout(b)) continue;
      size_t v = buffer_vertex.at(b.get());
      if (color[v] == boost::white_color) {
        boost::breadth_first_visit(graph, v, boost::visitor(recorder).color_map(colors));
      }
    }
    std::set<size_t> seen(order.begin(), order.end());
    for (size_t i = 0; i < units.size(); ++i) {
      if (!seen.count(i)) order.push_back(i);
    }
  }

  // Free choices: the units touching the largest fragments first.
  auto largest_fragment = [&](size_t i) {
    int64_t most = 0;
    for (const Buffer& b : units[i].buffers) {
      if (b->scope == Scope::kFragment) most = std::max(most, b->const_size().value_or(0));
    }
    return most;
  };
  std::vector<size_t> free_order = order;
  std::stable_sort(free_order.begin(), free_order.end(),
                   [&](size_t a, size_t b) { return largest_fragment(a) > largest_fragment(b); });

  auto common = [&] {
    do {
      for (size_t i : order) infer(i, InferLevel::kCommon);
    } while (ctx.take_changed());
  };
  common();
  bool decided = true;
  while (decided) {
    decided = false;
    for (size_t i : free_order) {
      infer(i, InferLevel::kFree);
      if (ctx.take_changed()) {
        decided = true;
        common();
        break;
      }
    }
  }
  std::map<const BufferNode*, int> group_threads;  // of the units that touch each buffer
  for (const Unit& u : units) {
    for (const Buffer& b : u.buffers) group_threads[b.get()] = u.threads;
  }
  for (const Buffer& b : buffers) {
    if (b->scope != Scope::kFragment || map.fragment(b)) continue;
    int threads = group_threads[b.get()] > 0 ? group_threads[b.get()] : kernel->threads;
    std::vector<int64_t> shape;
    for (const Expr& e : b->shape) shape.push_back(as_const_int(e).value_or(1));
    ctx.set_fragment(b, default_loop_layout(shape, threads, 1), "no operator constrains it (free)");
  }
  return map;
}

}  // namespace tessel
