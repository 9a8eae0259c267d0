// SIMT statement execution for one warp, and the block's barrier rounds.
#include "interp/thread_exec.h"

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "core/capacity.h"
#include "core/error.h"
#include "interp/print_output.h"

namespace tessel::thread_detail {

namespace {

/// The cell the models expect in storage nothing has written: every byte 0xFF, as the tile-level
/// interpreter fills new allocations (NaN for floats, -1 for signed integers).
uint64_t uninitialised_cell(DataType dtype) {
  HostTensor t(dtype, {1}, 0xFF);
  double v = t.at(0);
  return dtype.is_float() ? std::bit_cast<uint64_t>(v)
                          : static_cast<uint64_t>(static_cast<int64_t>(v));
}

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace

// ---- Block -------------------------------------------------------------------------------------

BlockExec::BlockExec(LaunchContext& launch, uint32_t block_linear, int64_t turn)
    : steps(launch.control),
      launch_(launch),
      block_linear_(block_linear),
      block_index_(launch.sim.block_index(block_linear)),
      threads_(launch.prog.kernel->threads),
      sim_(launch.sim, block_linear, threads_),
      storage_(launch.prog.buffers.size()) {
  const ThreadProgram& prog = launch.prog;
  if (turn >= 0) sim_.set_turn(turn, [this](int b, int64_t flat) { return global_cell(b, flat); });
  for (int b = 0; b < prog.num_globals; ++b) {
    storage_[b].tensor = launch.tensors[b];
    storage_[b].is_float = prog.buffers[b].buffer->dtype.is_float();
    const DataType t = launch.tensors[b]->dtype();
    storage_[b].direct = t == DataType::f16() ? 1 : t == DataType::f32() ? 2 : 0;
  }
  const int ws = launch.warp_size;
  const int num_warps = (threads_ + ws - 1) / ws;
  warps_.resize(num_warps);
  for (int w = 0; w < num_warps; ++w) {
    WarpState& warp = warps_[w];
    warp.id = w;
    warp.first_thread = w * ws;
    warp.live = full_mask(std::min(ws, threads_ - w * ws));
    warp.regs.resize(prog.num_slots);
    for (int l = 0; l < sim::kMaxLanes; ++l) {
      warp.regs[prog.thread_slot].i[l] = warp.first_thread + l;
      for (size_t d = 0; d < prog.block_slots.size(); ++d) {
        warp.regs[prog.block_slots[d]].i[l] = block_index_[d];
      }
      for (size_t d = 0; d < prog.dynamic_slots.size(); ++d) {
        warp.regs[prog.dynamic_slots[d].first].i[l] = launch.dynamic_values[d];
      }
    }
  }
}

void BlockExec::allocate() {
  const ThreadProgram& prog = launch_.prog;
  WarpExec thread0(*this, warps_[0]);
  int64_t shared_top = 0;
  for (size_t b = prog.num_globals; b < prog.buffers.size(); ++b) {
    const CBuffer& cb = prog.buffers[b];
    sim::BufferDesc desc;
    desc.name = cb.buffer->name;
    desc.space = cb.space;
    desc.dtype = cb.buffer->dtype;
    for (size_t d = 0; d < cb.shape.size(); ++d) {
      LaneValues scratch;
      int64_t n = thread0.eval(cb.shape[d], 1, scratch).i[0];
      if (n <= 0) {
        user_error("kernel '" + prog.kernel->name + "': '" + desc.name + "' would have extent " +
                   std::to_string(n) + " in dimension " + std::to_string(d) +
                   "; extents must be positive");
      }
      desc.shape.push_back(n);
    }
    check_allocation(prog.kernel, cb.buffer, desc.shape, launch_.target);
    Storage& s = storage_[b];
    s.size = desc.size();
    s.is_float = desc.dtype.is_float();
    int64_t copies = cb.space == sim::Space::kLocal ? threads_ : 1;
    s.cells.assign(static_cast<size_t>(s.size * copies), uninitialised_cell(desc.dtype));
    if (cb.space == sim::Space::kShared) {
      // Buffers follow one another in declaration order, each 128-byte aligned, so element 0
      // of every shared buffer sits in bank 0.
      desc.base = align_up(shared_top, 128);
      shared_top = desc.base + desc.dtype.storage_bytes(s.size);
    }
    int id = sim_.add_buffer(std::move(desc));
    internal_check(id == static_cast<int>(b), "simulator buffer ids out of program order");
  }
}

std::vector<int> BlockExec::warp_order(int round) {
  std::vector<int> order(warps_.size());
  for (size_t w = 0; w < order.size(); ++w) order[w] = static_cast<int>(w);
  switch (launch_.schedule.kind) {
    case Schedule::Kind::kInOrder:
      break;
    case Schedule::Kind::kReverse:
      std::reverse(order.begin(), order.end());
      break;
    case Schedule::Kind::kRandom: {
      std::mt19937_64 rng(launch_.schedule.seed * 0x9E3779B97F4A7C15ull ^
                          (uint64_t{block_linear_} << 20) ^ static_cast<uint64_t>(round));
      std::shuffle(order.begin(), order.end(), rng);
      break;
    }
  }
  return order;
}

void BlockExec::run_warp(WarpState& w) {
  if (w.done) return;
  const CStmt* body = launch_.prog.body;
  if (!w.started) {
    w.started = true;
    if (!body->has_barrier) {
      WarpExec(*this, w).exec(body, w.live);
      w.done = true;
      return;
    }
    execs_.at(w.id) = std::make_unique<WarpExec>(*this, w);
    w.task = execs_[w.id]->exec_co(body, w.live);
    w.resume = w.task.handle();
  }
  w.resume.resume();
  auto h = w.task.handle();
  if (h.done()) {
    w.done = true;
    if (h.promise().error) std::rethrow_exception(h.promise().error);
  }
}

void BlockExec::run() {
  allocate();
  execs_.resize(warps_.size());
  for (int round = 0;; ++round) {
    // Every warp runs to its next T.sync_threads() or its end; a warp blocked on an mbarrier
    // runs again once that barrier's phase has completed, until no warp can move.
    std::vector<int> order = warp_order(round);
    for (WarpState& w : warps_) w.barrier_site = -1;
    for (bool moved = true; moved;) {
      moved = false;
      for (int i : order) {
        WarpState& w = warps_[i];
        if (w.done || w.barrier_site >= 0) continue;
        if (w.mbar_site >= 0 && !sim_.mbar_phase_done(w.mbar_buffer, w.mbar_flat, w.mbar_parity))
          continue;
        // A blocked warp runs only when its wait can pass, so every run moves it on.
        run_warp(w);
        moved = true;
      }
    }
    bool all_done =
        std::all_of(warps_.begin(), warps_.end(), [](const WarpState& w) { return w.done; });
    if (all_done) break;
    if (std::any_of(warps_.begin(), warps_.end(),
                    [](const WarpState& w) { return !w.done && w.mbar_site >= 0; })) {
      report_deadlock();
      break;
    }
    std::vector<sim::Arrival> arrivals;
    for (const WarpState& w : warps_) {
      arrivals.push_back({w.id, w.done ? -1 : w.barrier_site, w.done ? 0 : w.barrier_mask, w.live});
    }
    sim_.barrier(arrivals);
  }
  // wgmmas a finished warp never waited for are findings; their results are dropped.
  for (const WarpState& w : warps_) {
    if (w.done) sim_.wgmma_warp_end(w.id);
  }
  // Copies nobody waited for land when the block ends.
  for (const sim::AsyncCopy& copy : sim_.async_drain()) {
    for (size_t j = 0; j < copy.cells.size(); ++j)
      cell(copy.buffer, 0, copy.flat + j) = copy.cells[j];
  }
  // TMA stores nobody waited for complete when the block ends.
  for (const sim::BulkStore& store : sim_.bulk_drain()) land_bulk_store(store);
  steps.flush([&] { return where(0); });
  sim_.commit_global();
  launch_.sim.absorb(sim_);
}

void BlockExec::land_bulk_store(const sim::BulkStore& store) {
  std::vector<uint8_t> same(store.gflats.size(), 0);
  for (size_t j = 0; j < store.gflats.size(); ++j) {
    if (store.gflats[j] < 0) continue;
    same[j] = global_cell(store.global_buffer, store.gflats[j]) == store.cells[j];
    set_global_cell(store.global_buffer, store.gflats[j], store.cells[j]);
  }
  sim_.bulk_landed(store, same);
}

void BlockExec::report_deadlock() {
  struct Group {
    std::vector<int> warps;
    int thread = 0;
  };
  // Warps waiting at the same place on the same barrier phase, in warp order.
  std::map<std::tuple<int, int, int64_t, int64_t>, Group> groups;
  std::vector<int> finished;
  for (const WarpState& w : warps_) {
    if (w.done) {
      finished.push_back(w.id);
      continue;
    }
    auto key = w.mbar_site >= 0
                   ? std::make_tuple(w.mbar_site, w.mbar_buffer, w.mbar_flat, w.mbar_parity)
                   : std::make_tuple(w.barrier_site, -1, int64_t{0}, int64_t{0});
    Group& g = groups[key];
    if (g.warps.empty()) g.thread = w.first_thread + (w.mbar_site >= 0 ? w.mbar_lane : 0);
    g.warps.push_back(w.id);
  }
  auto warp_words = [&](const std::vector<int>& ws) {
    std::string s = ws.size() == 1 ? "warp " : "warps ";
    for (size_t i = 0; i < ws.size();) {
      size_t j = i;
      while (j + 1 < ws.size() && ws[j + 1] == ws[j] + 1) ++j;
      s += (i ? ", " : "") + std::to_string(ws[i]) + (j > i ? "-" + std::to_string(ws[j]) : "");
      i = j + 1;
    }
    int first = ws.front() * warp_size();
    int last = std::min(threads_, (ws.back() + 1) * warp_size()) - 1;
    return s + " (threads " + std::to_string(first) + "-" + std::to_string(last) + ")";
  };
  const auto& sites = launch_.prog.sites;
  std::string msg = "every live warp waits and none can move on:";
  int site_a = -1, site_b = -1, thread = 0;
  for (const auto& [key, g] : groups) {
    auto [site, buffer, flat, parity] = key;
    if (site_a < 0) {
      site_a = site;
      thread = g.thread;
    } else if (site_b < 0 && site != site_a) {
      site_b = site;
    }
    msg += "\n  " + warp_words(g.warps) + (g.warps.size() == 1 ? " waits" : " wait") + " at " +
           sites[site].describe();
    if (buffer >= 0) {
      msg += " for the phase of parity " + std::to_string(parity) + ": " +
             sim_.mbar_state(buffer, flat);
    }
  }
  if (!finished.empty()) msg += "\n  " + warp_words(finished) + " finished";
  msg +=
      "\nA phase completes when every arrival its T.alloc_barrier / T.mbarrier_init count asks "
      "for has come and every byte expect_tx announced has landed; phase k has parity k % 2. "
      "Check the arrive counts, who arrives, and the parity each wait passes";
  sim_.deadlock(msg, thread, site_a, site_b);
}

// ---- Warp --------------------------------------------------------------------------------------

void WarpExec::exec(const CStmt* s, uint64_t mask) {
  if (!mask) return;
  block_.steps.step([&] {
    return block_.where(warp_.first_thread) + " (warp " + std::to_string(warp_.id) + ")";
  });
  switch (s->op) {
    case SOp::kSeq:
      for (const CStmt* c : s->body) exec(c, mask);
      break;
    case SOp::kFor:
      if (s->vector > 0 && !block_.vectors().active())
        exec_vectorized(s, mask);
      else
        exec_for(s, mask);
      break;
    case SOp::kIf: {
      LaneValues sc;
      const LaneValues& c = eval(s->a, mask, sc);
      uint64_t yes = 0;
      for_lanes(mask, [&](int l) { yes |= static_cast<uint64_t>(c.i[l] != 0) << l; });
      exec(s->body[0], yes);
      if (s->body.size() > 1) exec(s->body[1], mask & ~yes);
      break;
    }
    case SOp::kStore:
      exec_store(s, mask);
      break;
    case SOp::kAlloc:
      exec_alloc(s, mask);
      break;
    case SOp::kLet: {
      LaneValues sv;
      const LaneValues& v = eval(s->a, mask, sv);
      LaneValues& reg = warp_.write_reg(s->slot);
      for_lanes(mask, [&](int l) { reg.i[l] = v.i[l]; });
      exec(s->body[0], mask);
      break;
    }
    case SOp::kBarrier:
      internal_error("a barrier outside the barrier-aware executor");
    case SOp::kIntrinsic:
      internal_check(exec_intrinsic(s, mask), "a blocking call outside the barrier-aware executor");
      break;
    case SOp::kPrint: {
      LaneValues sv;
      const LaneValues& v = eval(s->a, mask, sv);
      DataType dt = s->print->value.dtype();
      for_lanes(mask, [&](int l) {
        write_print(s->print->loc, s->print->msg, block_.block_index(), warp_.first_thread + l, dt,
                    dt.is_integral() ? 0.0 : v.f[l], dt.is_integral() ? v.i[l] : 0);
      });
      break;
    }
    case SOp::kNop:
      break;
  }
}

namespace {

/// Per-lane loop bounds, and whether every lane has the same ones.
struct LoopBounds {
  std::array<int64_t, sim::kMaxLanes> lo{}, n{};
  int64_t most = 0;
};

}  // namespace

void WarpExec::exec_for(const CStmt* s, uint64_t mask) {
  LoopBounds b;
  {
    LaneValues slo, sn;
    const LaneValues& lo = eval(s->a, mask, slo);
    const LaneValues& n = eval(s->b, mask, sn);
    for_lanes(mask, [&](int l) {
      b.lo[l] = lo.i[l];
      b.n[l] = n.i[l];
      b.most = std::max(b.most, n.i[l]);
    });
  }
  for (int64_t it = 0; it < b.most; ++it) {
    uint64_t active = 0;
    LaneValues& reg = warp_.write_reg(s->slot);
    for_lanes(mask, [&](int l) {
      if (it < b.n[l]) {
        active |= uint64_t{1} << l;
        reg.i[l] = b.lo[l] + it;
      }
    });
    exec(s->body[0], active);
  }
}

Task WarpExec::exec_co(const CStmt* s, uint64_t mask) {
  if (!mask) co_return;
  block_.steps.step([&] {
    return block_.where(warp_.first_thread) + " (warp " + std::to_string(warp_.id) + ")";
  });
  if (!s->has_barrier) {  // e.g. the body of a let: no need to be able to suspend
    exec(s, mask);
    co_return;
  }
  switch (s->op) {
    case SOp::kSeq:
      for (const CStmt* c : s->body) {
        if (c->has_barrier)
          co_await exec_co(c, mask);
        else
          exec(c, mask);
      }
      break;
    case SOp::kFor: {
      LoopBounds b;
      {
        LaneValues slo, sn;
        const LaneValues& lo = eval(s->a, mask, slo);
        const LaneValues& n = eval(s->b, mask, sn);
        for_lanes(mask, [&](int l) {
          b.lo[l] = lo.i[l];
          b.n[l] = n.i[l];
          b.most = std::max(b.most, n.i[l]);
        });
      }
      for (int64_t it = 0; it < b.most; ++it) {
        uint64_t active = 0;
        LaneValues& reg = warp_.write_reg(s->slot);
        for_lanes(mask, [&](int l) {
          if (it < b.n[l]) {
            active |= uint64_t{1} << l;
            reg.i[l] = b.lo[l] + it;
          }
        });
        co_await exec_co(s->body[0], active);
      }
      break;
    }
    case SOp::kIf: {
      uint64_t yes = 0;
      {
        LaneValues sc;
        const LaneValues& c = eval(s->a, mask, sc);
        for_lanes(mask, [&](int l) { yes |= static_cast<uint64_t>(c.i[l] != 0) << l; });
      }
      if (s->body[0]->has_barrier)
        co_await exec_co(s->body[0], yes);
      else
        exec(s->body[0], yes);
      if (s->body.size() > 1) {
        if (s->body[1]->has_barrier)
          co_await exec_co(s->body[1], mask & ~yes);
        else
          exec(s->body[1], mask & ~yes);
      }
      break;
    }
    case SOp::kLet: {
      {
        LaneValues sv;
        const LaneValues& v = eval(s->a, mask, sv);
        LaneValues& reg = warp_.write_reg(s->slot);
        for_lanes(mask, [&](int l) { reg.i[l] = v.i[l]; });
      }
      co_await exec_co(s->body[0], mask);
      break;
    }
    case SOp::kBarrier:
      block_.lane_ops += std::popcount(mask);
      co_await BarrierAwaiter{warp_, s->site, mask};
      break;
    case SOp::kIntrinsic:  // a blocking call (mbarrier wait): retried until it passes
      while (!exec_intrinsic(s, mask)) co_await MbarrierAwaiter{warp_};
      warp_.mbar_site = -1;
      break;
    default:
      exec(s, mask);
      break;
  }
}

void WarpExec::exec_store(const CStmt* s, uint64_t mask) {
  IndexScratch idx;
  site_ = s->site;
  index_of_ = IndexOf{"store to", s->buffer, &s->source_indices};
  auto ptrs = eval_indices(s->indices, mask, idx);
  index_of_ = IndexOf{};
  LaneValues sv;
  const LaneValues& v = eval(s->a, mask, sv);
  site_ = -1;
  block_.lane_ops += std::popcount(mask);
  block_.store(warp_, s->buffer, s->site, mask, ptrs, v);
}

void WarpExec::exec_alloc(const CStmt* s, uint64_t mask) {
  if (!s->a) return;  // storage exists from the start of the block
  LaneValues sv;
  const LaneValues& v = eval(s->a, mask, sv);
  Storage& st = block_.storage(s->buffer);
  for_lanes(mask, [&](int l) {
    for (int64_t e = 0; e < st.size; ++e) {
      block_.cell(s->buffer, warp_.first_thread + l, e) = static_cast<uint64_t>(v.i[l]);
    }
  });
  // The models see the initialisation as one store of the whole array per lane.
  std::array<int64_t, sim::kMaxLanes> zeros{};
  sim::WarpRequest req;
  req.buffer = s->buffer;
  req.access = sim::Access::kStore;
  req.site = s->site;
  req.mask = mask;
  req.warp = warp_.id;
  req.first_thread = warp_.first_thread;
  req.vector = static_cast<int>(std::min<int64_t>(st.size, 1 << 30));
  for (size_t d = 0; d < block_.prog().buffers[s->buffer].shape.size(); ++d)
    req.index[d] = zeros.data();
  sim::Resolved r = block_.sim().resolve(req);
  block_.sim().observe(req, r);
}

}  // namespace tessel::thread_detail
