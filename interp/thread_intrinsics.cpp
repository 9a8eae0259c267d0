// Exact simulation semantics of the intrinsic table's instructions, executed per warp. Where a
// matrix element lives (which lane, which register element) is read from the table's operand
// Fragments and nowhere else, so the simulator and codegen agree by construction.
//
// Numerics of mma / MFMA: inputs are exact (f16/bf16 values), every product is exact in double,
// the k products and C are summed in double and D is rounded to f32 once. Hardware sums with at
// least f32 precision in an unspecified order, so it may differ in the last bits of D.
// Atomics: each lane's update is rounded to dst's type (integers wrap), lanes in lane order.
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

/// One register operand's layout as a lookup table: element (row, col) -> (lane, register).
struct FragmentTable {
  int64_t rows = 0, cols = 0;
  std::vector<std::pair<int, int>> at;  ///< [row * cols + col]
};

/// The tables of every register operand of every instruction, built once from the table's
/// Fragments (tables[id][operand]; empty for non-register operands).
const std::vector<std::vector<FragmentTable>>& fragment_tables() {
  static const std::vector<std::vector<FragmentTable>> tables = [] {
    std::vector<std::vector<FragmentTable>> all;
    for (const IntrinsicInfo& info : intrinsic_table()) {
      std::vector<FragmentTable> ops(info.operands.size());
      for (size_t o = 0; o < info.operands.size(); ++o) {
        const Fragment& f = info.operands[o].layout;
        if (!f.defined()) continue;
        FragmentTable& t = ops[o];
        t.rows = f.input_shape()[0];
        t.cols = f.input_shape()[1];
        t.at.resize(static_cast<size_t>(t.rows * t.cols));
        for (int64_t r = 0; r < t.rows; ++r) {
          for (int64_t c = 0; c < t.cols; ++c) {
            auto [lane, reg] = f.map_fragment({r, c});
            t.at[r * t.cols + c] = {static_cast<int>(lane), static_cast<int>(reg)};
          }
        }
      }
      all.push_back(std::move(ops));
    }
    return all;
  }();
  return tables;
}

sim::WarpRequest request(const WarpState& w, int buffer, sim::Access access, int site,
                         uint64_t mask, int vector, const std::array<const int64_t*, 8>& index) {
  sim::WarpRequest req;
  req.buffer = buffer;
  req.access = access;
  req.site = site;
  req.mask = mask;
  req.warp = w.id;
  req.first_thread = w.first_thread;
  req.vector = vector;
  req.index = index;
  return req;
}

/// dst (op) value for one lane, as a cell of dst's kind (double bits for floats, int64 else).
/// `value` is already of dst's type (IntrinsicCallNode::make converts it).
uint64_t atomic_update(AtomicKind kind, DataType dtype, uint64_t old, int64_t value) {
  if (dtype.is_float()) {
    double a = std::bit_cast<double>(old), b = std::bit_cast<double>(value);
    double r = kind == AtomicKind::kAdd   ? round_to(dtype, a + b)
               : kind == AtomicKind::kMax ? std::fmax(a, b)
                                          : std::fmin(a, b);
    return std::bit_cast<uint64_t>(r);
  }
  int64_t a = static_cast<int64_t>(old);
  int64_t r = kind == AtomicKind::kAdd
                  ? wrap_int(dtype, static_cast<int64_t>(static_cast<uint64_t>(a) +
                                                         static_cast<uint64_t>(value)))
              : kind == AtomicKind::kMax ? std::max(a, value)
                                         : std::min(a, value);
  return static_cast<uint64_t>(r);
}

}  // namespace

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
    return req;
  }

  WarpExec& w_;
  const CStmt* s_;
  uint64_t mask_;
};

void WarpExec::exec_intrinsic(const CStmt* s, uint64_t mask) {
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
  block_.lane_ops +=
      std::popcount(mask) * static_cast<int64_t>(std::max<size_t>(1, s->args.size()));
  if (info.home) {
    IntrinsicCallExec exec(*this, s, mask);
    info.home->execute(info, exec);
    return;
  }
  switch (info.family) {
    case IntrinsicFamily::kMma:
      exec_matrix(s, mask);
      break;
    case IntrinsicFamily::kLdmatrix:
      internal_error("ldmatrix executes through its family's home");
    case IntrinsicFamily::kCpAsync:
      exec_cp_async(s, mask);
      break;
    case IntrinsicFamily::kAtomic:
      exec_atomic(s, mask);
      break;
    case IntrinsicFamily::kCommitGroup:
      for_lanes(mask, [&](int l) { block_.sim().async_commit(warp_.first_thread + l); });
      break;
    case IntrinsicFamily::kWaitGroup: {
      int n = static_cast<int>(s->args[0].value->imm.i[0]);
      for_lanes(mask, [&](int l) {
        for (const sim::AsyncCopy& copy : block_.sim().async_wait(warp_.first_thread + l, n)) {
          for (size_t j = 0; j < copy.cells.size(); ++j) {
            block_.cell(copy.buffer, 0, copy.flat + static_cast<int64_t>(j)) = copy.cells[j];
          }
        }
      });
      break;
    }
  }
}

void WarpExec::exec_matrix(const CStmt* s, uint64_t mask) {
  const IntrinsicInfo& info = *s->intrinsic;
  const auto& tables = fragment_tables()[static_cast<size_t>(info.id)];
  const uint64_t full = full_mask(block_.warp_size());
  if (mask != full) block_.sim().partial_warp(warp_.id, s->site, mask, full, warp_.first_thread);
  // Operands D, A, B, C: resolve each lane's register run.
  std::array<sim::Resolved, 4> res;
  std::array<sim::WarpRequest, 4> req;
  for (int o = 0; o < 4; ++o) {
    const CArg& arg = s->args[o];
    const IntrinsicOperand& op = info.operands[o];
    IndexScratch idx;
    auto ptrs = eval_indices(arg.indices, mask, idx);
    req[o] = request(warp_, arg.buffer, o == 0 ? sim::Access::kStore : sim::Access::kLoad, arg.site,
                     mask, op.elements, ptrs);
    res[o] = block_.sim().resolve(req[o]);
    req[o].index = {};  // the index scratch dies with this iteration; flats are in res[o]
  }
  auto read = [&](int o, int row, int col) -> double {
    const FragmentTable& t = tables[o];
    auto [lane, reg] = t.at[row * t.cols + col];
    if (!((res[o].ok >> lane) & 1)) return 0.0;
    return std::bit_cast<double>(
        block_.cell(s->args[o].buffer, warp_.first_thread + lane, res[o].flat[lane] + reg));
  };
  const int m = info.m, n = info.n, k = info.k;
  std::vector<double> d(static_cast<size_t>(m * n));
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double acc = read(3, i, j);
      for (int kk = 0; kk < k; ++kk) acc += read(1, i, kk) * read(2, kk, j);
      d[i * n + j] = static_cast<double>(static_cast<float>(acc));
    }
  }
  for (int o = 1; o < 4; ++o) block_.sim().observe(req[o], res[o]);
  const FragmentTable& td = tables[0];
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      auto [lane, reg] = td.at[i * td.cols + j];
      if (!((res[0].ok >> lane) & 1)) continue;
      block_.cell(s->args[0].buffer, warp_.first_thread + lane, res[0].flat[lane] + reg) =
          std::bit_cast<uint64_t>(d[i * n + j]);
    }
  }
  block_.sim().observe(req[0], res[0]);
  block_.lane_ops += static_cast<int64_t>(m) * n * k;
}

void WarpExec::exec_cp_async(const CStmt* s, uint64_t mask) {
  const IntrinsicInfo& info = *s->intrinsic;
  const CArg& dst = s->args[0];
  const CArg& src = s->args[1];
  const DataType dtype = block_.prog().buffers[dst.buffer].buffer->dtype;
  const int elem_bits = dtype.storage_bits() * dtype.lanes;
  const int n = info.bytes * 8 / elem_bits;
  // src_size: the bytes actually read; the rest of the destination is zero-filled.
  std::array<uint8_t, sim::kMaxLanes> read_elems{};
  uint64_t read_lanes = 0;
  {
    LaneValues ss;
    const LaneValues& size = eval(s->args[2].value, mask, ss);
    for_lanes(mask, [&](int l) {
      int64_t bytes = std::clamp<int64_t>(size.i[l], 0, info.bytes);
      read_elems[l] = static_cast<uint8_t>(bytes * 8 / elem_bits);
      if (read_elems[l] > 0) read_lanes |= uint64_t{1} << l;
    });
  }
  IndexScratch src_idx, dst_idx;
  sim::WarpRequest src_req = request(warp_, src.buffer, sim::Access::kLoad, src.site, read_lanes, n,
                                     eval_indices(src.indices, read_lanes, src_idx));
  src_req.lane_vector = read_elems.data();
  src_req.align = info.bytes;  // both addresses: multiples of the copy's size
  sim::Resolved src_res = block_.sim().resolve(src_req);
  sim::WarpRequest dst_req = request(warp_, dst.buffer, sim::Access::kAsyncWrite, dst.site, mask, n,
                                     eval_indices(dst.indices, mask, dst_idx));
  dst_req.align = info.bytes;
  sim::Resolved dst_res = block_.sim().resolve(dst_req);
  block_.sim().observe(src_req, src_res);
  block_.sim().observe(dst_req, dst_res);
  for_lanes(dst_res.ok, [&](int l) {
    std::vector<uint64_t> cells(static_cast<size_t>(n), 0);  // zero bits: 0 and +0.0
    if ((src_res.ok >> l) & 1) {
      for (int j = 0; j < read_elems[l]; ++j) {
        cells[j] = block_.global_cell(src.buffer, src_res.flat[l] + j);
      }
    }
    block_.sim().async_issue(warp_.first_thread + l, dst.site, dst.buffer, dst_res.flat[l],
                             std::move(cells));
  });
}

void WarpExec::exec_atomic(const CStmt* s, uint64_t mask) {
  const IntrinsicInfo& info = *s->intrinsic;
  const CArg& dst = s->args[0];
  const CBuffer& buffer = block_.prog().buffers[dst.buffer];
  const DataType dtype = buffer.buffer->dtype;
  LaneValues sv;
  const LaneValues& value = eval(s->args[1].value, mask, sv);
  IndexScratch idx;
  sim::WarpRequest req = request(warp_, dst.buffer, sim::Access::kAtomic, dst.site, mask, 1,
                                 eval_indices(dst.indices, mask, idx));
  sim::Resolved r = block_.sim().resolve(req);
  if (buffer.space == sim::Space::kGlobal) {
    std::lock_guard<std::mutex> lock(block_.global_atomics());
    for_lanes(r.ok, [&](int l) {
      uint64_t old = block_.global_cell(dst.buffer, r.flat[l]);
      block_.set_global_cell(dst.buffer, r.flat[l],
                             atomic_update(info.atomic, dtype, old, value.i[l]));
    });
  } else {
    for_lanes(r.ok, [&](int l) {
      uint64_t& c = block_.cell(dst.buffer, warp_.first_thread + l, r.flat[l]);
      c = atomic_update(info.atomic, dtype, c, value.i[l]);
    });
  }
  block_.sim().observe(req, r);
}

}  // namespace tessel::thread_detail
