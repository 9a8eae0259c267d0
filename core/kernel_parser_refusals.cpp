// What the kernel-file parser says about TileLang constructs Tessel does not support: each is
// named as what it is (Hopper warp specialisation, a Blackwell instruction, a construct not yet
// supported) with what Tessel supports instead, before its arguments are read, so that no
// message about something else (an argument's kind, an assignment's form) stands in for it.
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// TileLang's warp-specialisation constructs (sm90: mbarriers, TMA, producer/consumer warps).
bool is_hopper_construct(const std::string& n) {
  static const char* kNames[] = {"T.alloc_barrier",
                                 "T.alloc_cluster_barrier",
                                 "T.ws",
                                 "T.tma_copy",
                                 "T.tma_load",
                                 "T.tma_store",
                                 "T.tma_store_arrive",
                                 "T.tma_store_wait",
                                 "T.create_tma_descriptor",
                                 "T.barrier_wait",
                                 "T.barrier_arrive",
                                 "T.create_list_of_mbarrier",
                                 "T.get_mbarrier",
                                 "T.set_max_nreg",
                                 "T.inc_max_nreg",
                                 "T.dec_max_nreg",
                                 "T.annotate_producer_reg_dealloc",
                                 "T.annotate_consumer_reg_alloc",
                                 "T.fence_proxy_async",
                                 "T.warpgroup_arrive",
                                 "T.warpgroup_commit_batch",
                                 "T.warpgroup_wait",
                                 "T.wait_wgmma",
                                 "T.wgmma_gemm",
                                 "T.alloc_wgmma_desc",
                                 "T.alloc_descriptor",
                                 "T.initialize_descriptor"};
  for (const char* k : kNames) {
    if (n == k) return true;
  }
  return starts_with(n, "T.mbarrier_") || starts_with(n, "T.cluster_");
}

/// Blackwell (sm100) tensor-memory constructs.
bool is_blackwell_construct(const std::string& n) {
  return starts_with(n, "T.tcgen05") || n == "T.alloc_tmem" || starts_with(n, "T.alloc_tcgen05");
}

}  // namespace

std::optional<std::string> refusal_of(const std::string& norm) {
  if (is_hopper_construct(norm)) {
    return norm +
           " is Hopper warp specialisation (mbarriers, TMA, producer/consumer warp groups), "
           "which Tessel does not support yet; write the loop as `for k in T.Pipelined(n, "
           "num_stages=...)` with T.copy and T.gemm, and Tessel plans the pipeline "
           "(cp.async on sm80, checked by `tessel verify`)";
  }
  if (is_blackwell_construct(norm)) {
    return norm +
           " is a Blackwell (sm100) tensor-memory construct, which Tessel does not support; "
           "use T.alloc_fragment accumulators with T.gemm";
  }
  if (norm == "T.Persistent") {
    return "T.Persistent (persistent-kernel tile scheduling) is not supported yet; launch one "
           "block per tile with T.Kernel(grid...) and T.use_swizzle for the order";
  }
  if (norm == "T.thread_binding") {
    return "T.thread_binding is TVM TIR's scheduling form, not supported; write "
           "T.Kernel(..., threads=128) and use T.get_thread_binding()";
  }
  return std::nullopt;
}

}  // namespace tessel::kernel_parser_detail
