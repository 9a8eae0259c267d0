// The list of thread-level examples.
#include "examples/bugs/thread_examples.h"

namespace tessel {

std::vector<Example> thread_level_examples() {
  return {bug_missing_barrier_example(),
          bug_reduction_missing_barrier_example(),
          bug_divergent_barrier_example(),
          bug_unmasked_tail_example(),
          bug_cp_async_no_wait_example(),
          bug_global_race_example(),
          bug_wgmma_stage_race_example(),
          bug_wgmma_rs_overwrite_example(),
          bug_wgmma_missing_fence_example(),
          bug_wgmma_unwaited_example(),
          bug_missing_proxy_fence_example(),
          bug_atomic_proxy_fence_example(),
          bug_tma_store_overlap_example(),
          bug_tma_store_read_early_example(),
          row_sum_bank_conflicts_example(),
          row_sum_padded_example(),
          warp_shuffle_reduce_example(),
          transpose_shared_example(),
          gemm_simt_example(),
          gemm_mma_example()};
}

}  // namespace tessel
