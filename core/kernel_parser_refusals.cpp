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

/// The warp-specialisation constructs Tessel supports (kernel_parser_hopper.cpp).
bool is_supported_hopper(const std::string& n) {
  static const char* kNames[] = {"T.alloc_barrier",
                                 "T.ws",
                                 "T.barrier_wait",
                                 "T.barrier_arrive",
                                 "T.set_max_nreg",
                                 "T.inc_max_nreg",
                                 "T.dec_max_nreg",
                                 "T.no_set_max_nreg",
                                 "T.disable_warp_group_reg_alloc",
                                 "T.fence_proxy_async",
                                 "T.mbarrier_init",
                                 "T.mbarrier_arrive",
                                 "T.mbarrier_expect_tx",
                                 "T.mbarrier_arrive_expect_tx",
                                 "T.mbarrier_wait_parity",
                                 "T.tma_copy",
                                 "T.tma_store_arrive",
                                 "T.tma_store_wait"};
  for (const char* k : kNames) {
    if (n == k) return true;
  }
  return false;
}

/// Blackwell (sm100) tensor-memory constructs.
bool is_blackwell_construct(const std::string& n) {
  return starts_with(n, "T.tcgen05") || n == "T.alloc_tmem" || starts_with(n, "T.alloc_tcgen05");
}

}  // namespace

std::optional<std::string> refusal_of(const std::string& norm) {
  if (is_hopper_construct(norm) && !is_supported_hopper(norm)) {
    return norm +
           " (Hopper TMA, wgmma or cluster barriers) is not supported yet; Tessel has the "
           "mbarriers (T.alloc_barrier, T.barrier_arrive, T.barrier_wait, T.mbarrier_*), "
           "T.fence_proxy_async, T.set_max_nreg and warp specialisation (`with T.ws(g):` or "
           "`if tx < 128:`); copy with T.copy or element loops, or write the loop as `for k in "
           "T.Pipelined(n, num_stages=...)` and Tessel plans the pipeline";
  }
  if (is_blackwell_construct(norm)) {
    return norm +
           " is a Blackwell (sm100) tensor-memory construct, which Tessel does not support; "
           "use T.alloc_fragment accumulators with T.gemm";
  }
  if (norm == "T.device_assert") {
    return norm +
           " is not supported yet: the interpreters have no output statement; read values with "
           "`tessel run --save DIR` (every tensor after the run) or copy them to an output tensor";
  }
  if (norm == "T.alloc_reducer" || norm == "T.finalize_reducer") {
    return norm +
           " (TileLang's per-thread reducer buffers) is not supported yet; accumulate into a "
           "T.alloc_fragment and combine it with T.reduce_sum/max/min";
  }
  if (norm == "T.view" || norm == "T.reshape" || norm == "T.make_tensor" ||
      norm == "T.make_tensor_from_addr") {
    return norm +
           " (a view of a buffer's storage under another shape or dtype) is not supported yet; "
           "index the buffer itself (A[i // 8, i % 8])";
  }
  if (norm == "T.call_extern" || norm == "T.call_intrin" || norm == "T.call_packed" ||
      norm == "T.import_source" || norm == "T.evaluate") {
    return norm +
           " (calling code Tessel cannot see) is not supported yet: the interpreters and the "
           "proofs need every statement's meaning";
  }
  if (norm == "T.loop_break") {
    return "T.loop_break is not supported: loops run their whole extent; guard the body with "
           "`if`";
  }
  if (norm == "T.atomic_addx2" || norm == "T.atomic_addx4" || norm == "T.atomic_load" ||
      norm == "T.atomic_store") {
    return norm +
           " is not supported; the atomics Tessel has are T.atomic_add, T.atomic_max and "
           "T.atomic_min (element or tile form)";
  }
  if (norm == "T.any_of" || norm == "T.all_of") {
    return norm +
           " is not supported yet; combine the conditions with `or` / `and`, or reduce a "
           "fragment with T.reduce_max";
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

bool is_builtin_function(const std::string& name) {
  static const char* kNames[] = {"min",      "max",        "T.min",      "T.max", "T.if_then_else",
                                 "T.Select", "T.floordiv", "T.floormod", "abs"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  if (name.rfind("T.", 0) != 0) return false;
  std::string short_name = name.substr(2);
#define TESSEL_KNOWN_(id, text) \
  if (short_name == text) return true;
  TESSEL_BUILTINS(TESSEL_KNOWN_)
#undef TESSEL_KNOWN_
  return DataType::parse(short_name).has_value();
}

}  // namespace tessel::kernel_parser_detail
