// Intrinsic calls at thread level: the interpreter's WarpIntrinsicExec (core/instruction_family.h)
// over one warp, its registers and storage and the sim/ models; each call runs the execute() of
// its family's home (core/families/), which holds the instruction's exact semantics.
#include <algorithm>
#include <bit>
#include <cmath>

#include "core/bank_rules.h"
#include "core/error.h"
#include "core/instruction_family.h"
#include "core/op_atomic.h"
#include "core/target.h"
#include "interp/thread_exec.h"

namespace tessel::thread_detail {

namespace {

sim::Access sim_access(LaneAccess a) {
  switch (a) {
    case LaneAccess::kLoad:
      return sim::Access::kLoad;
    case LaneAccess::kStore:
      return sim::Access::kStore;
    case LaneAccess::kAsyncWrite:
      return sim::Access::kAsyncWrite;
    case LaneAccess::kAtomic:
      return sim::Access::kAtomic;
  }
  internal_error("unknown lane access");
}

}  // namespace

/// WarpIntrinsicExec over one call statement executed by one warp.
class IntrinsicCallExec final : public WarpIntrinsicExec {
 public:
  IntrinsicCallExec(WarpExec& w, const CStmt* s, uint64_t mask) : w_(w), s_(s), mask_(mask) {}

  int warp_size() const override { return w_.block_.warp_size(); }
  uint64_t mask() const override { return mask_; }
  void require_full_warp() override {
    const uint64_t full = full_mask(w_.block_.warp_size());
    if (mask_ != full) {
      w_.block_.sim().partial_warp(w_.warp_.id, s_->site, mask_, full, w_.warp_.first_thread);
    }
  }
  DataType dtype(int operand) const override { return buffer(operand).buffer->dtype; }
  bool is_global(int operand) const override {
    return buffer(operand).space == sim::Space::kGlobal;
  }
  std::array<int64_t, 64> values(int operand, uint64_t lanes) override {
    LaneValues scratch;
    const LaneValues& v = w_.eval(s_->args[operand].value, lanes, scratch);
    std::array<int64_t, 64> out{};
    for_lanes(lanes, [&](int l) { out[l] = v.i[l]; });
    return out;
  }
  int64_t immediate(int operand) const override { return s_->args[operand].value->imm.i[0]; }
  OperandLanes resolve(const OperandRequest& request) override {
    const CArg& arg = s_->args[request.operand];
    IndexScratch idx;
    sim::WarpRequest req = sim_request(request);
    req.index = w_.eval_indices(arg.indices, request.lanes, idx);
    sim::Resolved r = w_.block_.sim().resolve(req);
    OperandLanes out;
    out.ok = r.ok;
    std::copy(r.flat.begin(), r.flat.end(), out.flat.begin());
    return out;
  }
  void observe(const OperandRequest& request, const OperandLanes& lanes) override {
    sim::Resolved r;
    r.ok = lanes.ok;
    std::copy(lanes.flat.begin(), lanes.flat.end(), r.flat.begin());
    w_.block_.sim().observe(sim_request(request), r);
  }
  uint64_t& cell(int operand, int lane, int64_t flat) override {
    return w_.block_.cell(s_->args[operand].buffer, w_.warp_.first_thread + lane, flat);
  }
  uint64_t global_cell(int operand, int64_t flat) override {
    // A TMA load reads its box through global_cell; tma_write then shows the reads to the
    // global race detectors.
    if (s_->intrinsic->family == IntrinsicFamily::kTmaLoad) tma_reads_.push_back(flat);
    return w_.block_.global_cell(s_->args[operand].buffer, flat);
  }
  void set_global_cell(int operand, int64_t flat, uint64_t bits) override {
    w_.block_.set_global_cell(s_->args[operand].buffer, flat, bits);
  }
  std::unique_lock<std::mutex> lock_atomics() override {
    return std::unique_lock<std::mutex>(w_.block_.global_atomics());
  }
  void count_lane_ops(int64_t n) override { w_.block_.lane_ops += n; }
  void async_issue(int lane, int operand, int64_t flat, std::vector<uint64_t> cells) override {
    const CArg& arg = s_->args[operand];
    w_.block_.sim().async_issue(w_.warp_.first_thread + lane, arg.site, arg.buffer, flat,
                                std::move(cells));
  }
  void async_commit(int lane) override {
    w_.block_.sim().async_commit(w_.warp_.first_thread + lane);
  }
  void mbarrier_init(int lane, int operand, int64_t flat, int64_t count) override {
    w_.block_.sim().mbar_init(thread(lane), s_->site, s_->args[operand].buffer, flat, count);
  }
  void mbarrier_arrive(int lane, int operand, int64_t flat, int64_t tx, bool arrive) override {
    w_.block_.sim().mbar_arrive(thread(lane), s_->site, s_->args[operand].buffer, flat, tx, arrive);
  }
  bool mbarrier_try_wait(int lane, int operand, int64_t flat, int64_t parity) override {
    return w_.block_.sim().mbar_try_wait(thread(lane), s_->site, s_->args[operand].buffer, flat,
                                         parity);
  }
  void block(int lane, int operand, int64_t flat, int64_t parity) override {
    blocked_ = true;
    WarpState& w = w_.warp_;
    w.mbar_site = s_->site;
    w.mbar_buffer = s_->args[operand].buffer;
    w.mbar_flat = flat;
    w.mbar_parity = parity;
    w.mbar_lane = lane;
  }
  void fence_proxy_async(int lane) override { w_.block_.sim().fence_proxy_async(thread(lane)); }
  std::vector<int64_t> lane_indices(int operand, int lane) override {
    const CArg& arg = s_->args[operand];
    IndexScratch idx;
    auto ptrs = w_.eval_indices(arg.indices, uint64_t{1} << lane, idx);
    std::vector<int64_t> out;
    for (size_t d = 0; d < arg.indices.size(); ++d) out.push_back(ptrs[d][lane]);
    return out;
  }
  std::vector<int64_t> shape(int operand) const override {
    return w_.block_.sim().buffer(s_->args[operand].buffer).shape;
  }
  void tma_write(int lane, int operand, const std::vector<int64_t>& flats,
                 const std::vector<uint64_t>& cells, int bar_operand, int64_t bar_flat) override {
    const int buffer = s_->args[operand].buffer;
    if (!tma_reads_.empty()) {
      const CArg& g = s_->args[s_->intrinsic->tma_global];
      w_.block_.sim().tma_global_reads(thread(lane), g.site, g.buffer, tma_reads_);
      tma_reads_.clear();
    }
    w_.block_.sim().tma_write(thread(lane), s_->args[operand].site, buffer, flats,
                              s_->args[bar_operand].buffer, bar_flat);
    for (size_t j = 0; j < flats.size(); ++j) w_.block_.cell(buffer, 0, flats[j]) = cells[j];
  }
  int warp_index() const override { return w_.warp_.id; }
  uint64_t wgmma_accumulator(int operand, int lane, int64_t flat) override {
    const int buffer = s_->args[operand].buffer;
    if (auto v = w_.block_.sim().wgmma_pending_value(buffer, thread(lane), flat)) return *v;
    return w_.block_.cell(buffer, thread(lane), flat);
  }
  void wgmma_issue(const std::vector<std::pair<int, int64_t>>& reads,
                   const std::vector<WgmmaRegister>& a_regs,
                   const std::vector<WgmmaWrite>& writes) override {
    std::vector<std::pair<int, int64_t>> cells;
    cells.reserve(reads.size());
    for (const auto& [operand, flat] : reads) cells.emplace_back(s_->args[operand].buffer, flat);
    std::vector<sim::RegisterRead> a;
    a.reserve(a_regs.size());
    for (const WgmmaRegister& r : a_regs) {
      a.push_back({s_->args[r.operand].buffer, thread(r.lane), r.flat});
    }
    std::vector<sim::RegisterWrite> regs;
    regs.reserve(writes.size());
    for (const WgmmaWrite& w : writes) {
      regs.push_back({s_->args[w.operand].buffer, thread(w.lane), w.flat, w.bits});
    }
    w_.block_.sim().wgmma_issue(w_.warp_.id, w_.warp_.first_thread, s_->site, cells, std::move(a),
                                std::move(regs));
  }
  void wgmma_fence() override { w_.block_.sim().wgmma_fence(w_.warp_.id); }
  void wgmma_commit() override { w_.block_.sim().wgmma_commit(w_.warp_.id); }
  void wgmma_wait(int n) override {
    for (const sim::RegisterWrite& r : w_.block_.sim().wgmma_wait(w_.warp_.id, n)) {
      w_.block_.cell(r.buffer, r.thread, r.flat) = r.bits;
    }
  }
  void tma_store(int lane, int operand, const std::vector<int64_t>& flats, int global_operand,
                 const std::vector<int64_t>& gflats) override {
    const int buffer = s_->args[operand].buffer;
    sim::BulkStore store;
    store.global_buffer = s_->args[global_operand].buffer;
    store.global_site = s_->args[global_operand].site;
    store.gflats = gflats;
    store.cells.reserve(flats.size());
    for (int64_t f : flats) store.cells.push_back(w_.block_.cell(buffer, 0, f));
    w_.block_.sim().bulk_store(thread(lane), s_->args[operand].site, buffer, flats,
                               std::move(store));
  }
  void bulk_commit(int lane) override { w_.block_.sim().bulk_commit(thread(lane)); }
  void bulk_wait(int lane, int n) override {
    for (const sim::BulkStore& store : w_.block_.sim().bulk_wait(thread(lane), n)) {
      w_.block_.land_bulk_store(store);
    }
  }
  bool blocked() const { return blocked_; }
  void async_wait(int lane, int n) override {
    for (const sim::AsyncCopy& copy : w_.block_.sim().async_wait(w_.warp_.first_thread + lane, n)) {
      for (size_t j = 0; j < copy.cells.size(); ++j) {
        w_.block_.cell(copy.buffer, 0, copy.flat + static_cast<int64_t>(j)) = copy.cells[j];
      }
    }
  }

 private:
  const CBuffer& buffer(int operand) const {
    return w_.block_.prog().buffers[s_->args[operand].buffer];
  }
  sim::WarpRequest sim_request(const OperandRequest& request) const {
    const CArg& arg = s_->args[request.operand];
    sim::WarpRequest req;
    req.buffer = arg.buffer;
    req.access = sim_access(request.access);
    req.site = arg.site;
    req.mask = request.lanes;
    req.warp = w_.warp_.id;
    req.first_thread = w_.warp_.first_thread;
    req.vector = request.elements;
    req.lane_vector = request.lane_elements;
    req.ldmatrix = request.ldmatrix;
    req.align = request.align;
    req.wgmma = request.wgmma_registers;
    return req;
  }

  int thread(int lane) const { return w_.warp_.first_thread + lane; }

  WarpExec& w_;
  const CStmt* s_;
  uint64_t mask_;
  bool blocked_ = false;
  std::vector<int64_t> tma_reads_;  ///< global elements the TMA load of the lane read
};

bool WarpExec::exec_intrinsic(const CStmt* s, uint64_t mask) {
  const IntrinsicInfo& info = *s->intrinsic;
  const bool target_nvidia = block_.warp_size() == 32;
  if (!info.any_vendor && info.nvidia != target_nvidia) {
    user_error("kernel '" + block_.prog().kernel->name +
               "': " + block_.prog().sites[s->site].describe() + " is " +
               (info.nvidia ? "an NVIDIA" : "an AMD") + " instruction (" +
               (info.nvidia ? info.cuda : info.hip) + "), but the target has " +
               std::to_string(block_.warp_size()) + "-lane warps; run with --target " +
               default_target(info.nvidia).name);
  }
  const Target* target = block_.target();
  if ((info.sync || info.box_rank > 0 || info.home == &wgmma_family() ||
       info.home == &tma_family()) &&
      target && !target->has(*info.home)) {
    user_error("kernel '" + block_.prog().kernel->name +
               "': " + block_.prog().sites[s->site].describe() + " (" + info.cuda +
               ") is a Hopper instruction that target " + target->name +
               " does not have; run with --target sm90");
  }
  block_.lane_ops +=
      std::popcount(mask) * static_cast<int64_t>(std::max<size_t>(1, s->args.size()));
  internal_check(info.home != nullptr, "an intrinsic without its family's home");
  IntrinsicCallExec exec(*this, s, mask);
  info.home->execute(info, exec);
  return !exec.blocked();
}

}  // namespace tessel::thread_detail
