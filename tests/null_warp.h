// A warp for unit tests of instruction families: every WarpIntrinsicExec hook is a no-op on one
// full 32-lane warp; a test derives from it and overrides the operands it looks at.
#pragma once

#include "core/instruction_family.h"

namespace tessel::testing {

class NullWarp : public WarpIntrinsicExec {
 public:
  int warp_size() const override { return 32; }
  uint64_t mask() const override { return 0xffffffffu; }
  void require_full_warp() override {}
  DataType dtype(int) const override { return DataType::f16(); }
  bool is_global(int) const override { return false; }
  std::array<int64_t, 64> values(int, uint64_t) override { return {}; }
  int64_t immediate(int) const override { return 0; }
  /// Every requested lane is in bounds, its run starting at element 0.
  OperandLanes resolve(const OperandRequest& r) override {
    OperandLanes out;
    out.ok = r.lanes;
    return out;
  }
  void observe(const OperandRequest&, const OperandLanes&) override {}
  uint64_t global_cell(int, int64_t) override { return 0; }
  void set_global_cell(int, int64_t, uint64_t) override {}
  std::unique_lock<std::mutex> lock_atomics() override { return {}; }
  void count_lane_ops(int64_t) override {}
  void async_issue(int, int, int64_t, std::vector<uint64_t>) override {}
  void async_commit(int) override {}
  void async_wait(int, int) override {}
  void mbarrier_init(int, int, int64_t, int64_t) override {}
  void mbarrier_arrive(int, int, int64_t, int64_t, bool) override {}
  bool mbarrier_try_wait(int, int, int64_t, int64_t) override { return true; }
  void block(int, int, int64_t, int64_t) override {}
  void fence_proxy_async(int) override {}
  std::vector<int64_t> lane_indices(int, int) override { return {}; }
  std::vector<int64_t> shape(int) const override { return {}; }
  void tma_write(int, int, const std::vector<int64_t>&, const std::vector<uint64_t>&, int,
                 int64_t) override {}
  int warp_index() const override { return 0; }
  /// No wgmma in flight: the accumulator is the register itself.
  uint64_t wgmma_accumulator(int operand, int lane, int64_t flat) override {
    return cell(operand, lane, flat);
  }
  void wgmma_issue(const std::vector<std::pair<int, int64_t>>&, const std::vector<WgmmaRegister>&,
                   const std::vector<WgmmaWrite>&) override {}
  void wgmma_fence() override {}
  void wgmma_commit() override {}
  void wgmma_wait(int) override {}
  void tma_store(int, int, const std::vector<int64_t>&, int, const std::vector<int64_t>&) override {
  }
  void bulk_commit(int) override {}
  void bulk_wait(int, int) override {}
};

}  // namespace tessel::testing
