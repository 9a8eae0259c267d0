// Thread-level example kernels (written with T.get_thread_binding(), indexed loads and stores,
// barriers, shuffles and intrinsics, so they run at thread level without the lowering pass): the
// corpus of deliberately broken kernels and what the simulator reports for each, and correct
// kernels to compare them with.
#pragma once

#include <vector>

#include "examples/registry.h"

namespace tessel {

// Broken on purpose (each reports a finding at --level thread).
Example bug_missing_barrier_example();
Example bug_reduction_missing_barrier_example();
Example bug_divergent_barrier_example();
Example bug_unmasked_tail_example();
Example bug_cp_async_no_wait_example();
Example bug_global_race_example();
/// sm90 (run with --target sm90).
Example bug_wgmma_stage_race_example();
Example bug_wgmma_rs_overwrite_example();
Example bug_wgmma_missing_fence_example();
Example bug_wgmma_unwaited_example();
Example bug_missing_proxy_fence_example();
Example bug_atomic_proxy_fence_example();
Example bug_tma_store_overlap_example();
Example bug_tma_store_read_early_example();
// Correct, with bank conflicts (row_sum_bank_conflicts) and without (row_sum_padded).
Example row_sum_bank_conflicts_example();
Example row_sum_padded_example();
// Correct.
Example warp_shuffle_reduce_example();
Example transpose_shared_example();
Example gemm_simt_example();
Example gemm_mma_example();

/// Every thread-level example, in `tessel list` order.
std::vector<Example> thread_level_examples();

}  // namespace tessel
