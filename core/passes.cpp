// The lowering driver: the passes of core/passes.h in order.
#include "core/passes.h"

#include "core/capacity.h"
#include "core/printer.h"
#include "core/stmt_functor.h"

namespace tessel {

Kernel with_body(const Kernel& kernel, Stmt body) {
  KernelNode node = *kernel;
  node.body = std::move(body);
  return Kernel(std::make_shared<const KernelNode>(std::move(node)));
}

bool is_tile_level(const Kernel& kernel) {
  if (is_multi_launch(kernel)) {
    for (const Kernel& launch : kernel->launches) {
      if (is_tile_level(launch)) return true;
    }
    return false;
  }
  bool tile = false;
  for_each_stmt(kernel->body, [&](const Stmt& s) {
    if (s.as<TileOpCallNode>() || s.as<UseSwizzleNode>()) tile = true;
    if (const auto* f = s.as<ForNode>()) {
      tile = tile || f->for_kind == ForKind::kParallel || f->for_kind == ForKind::kPipelined;
    }
  });
  return tile;
}

LoweredKernel lower_kernel(const Kernel& kernel, const Target& target,
                           const LowerOptions& options) {
  LoweredKernel out;
  if (is_multi_launch(kernel)) {
    // Each launch is lowered on its own (its own grid, threads and layouts); the layout maps are
    // merged (their keys are distinct nodes) and the snapshots name the launch.
    std::vector<Kernel> lowered;
    for (size_t i = 0; i < kernel->launches.size(); ++i) {
      LoweredKernel one = lower_kernel(kernel->launches[i], target, options);
      lowered.push_back(one.kernel);
      out.layouts.shared.insert(one.layouts.shared.begin(), one.layouts.shared.end());
      out.layouts.fragments.insert(one.layouts.fragments.begin(), one.layouts.fragments.end());
      out.layouts.loops.insert(one.layouts.loops.begin(), one.layouts.loops.end());
      for (PassSnapshot& s : one.snapshots) {
        out.snapshots.push_back({s.pass + " (" + launch_label(kernel, i) + ")", std::move(s.text)});
      }
    }
    out.kernel = with_launches(kernel, std::move(lowered));
    return out;
  }
  auto snapshot = [&](const char* pass, const Kernel& k, const std::string& extra = "") {
    if (options.print_after_all) out.snapshots.push_back({pass, extra + print_kernel(k)});
  };
  // Before anything is laid out (a fragment of 2^40 elements is refused here, not enumerated).
  if (options.check_capacity) check_capacity(kernel, &target);
  Kernel k = rasterize_blocks(kernel);
  snapshot("rasterize_blocks", k);
  k = plan_pipelines(k);
  snapshot("plan_pipelines", k);
  LayoutMap layouts = infer_layouts(k, target);
  snapshot("infer_layouts", k, layouts.to_string());
  LoweringState state = lower_tile_ops(k, target, layouts, options);
  snapshot("lower_tile_ops", state.kernel);
  if (defers_pipelines(k, target, options)) {
    state = warp_specialize(std::move(state), options);
    std::string note;
    if (!state.warp_specialize_blocker.empty()) {
      note = "T.Pipelined not warp-specialised (" + state.warp_specialize_blocker +
             "): sm80 pipelining";
    } else if (!state.warp_specialize_cp_async_reason.empty()) {
      note = "the warp-specialised producer copies with cp.async, not TMA: " +
             state.warp_specialize_cp_async_reason;
    }
    if (!note.empty()) out.notes.push_back(note);
    snapshot("warp_specialize", state.kernel, note.empty() ? "" : "# " + note + "\n");
  }
  out.before_flatten = state.kernel;
  k = flatten_buffers(state);
  snapshot("flatten_buffers", k);
  k = insert_barriers(k);
  snapshot("insert_barriers", k);
  k = simplify_indices(k);
  snapshot("simplify_indices", k);
  if (options.split_loops) {
    bool split = false;
    k = split_loops(k, &split);
    if (split) {
      k = simplify_indices(k);
      snapshot("split_loops", k);
    }
  }
  if (Kernel sunk = sink_consumer_code(k); sunk.operator->() != k.operator->()) {
    k = sunk;
    snapshot("sink_consumer_code", k);
  }
  // Pipelining multiplies shared tiles and reductions add workspaces: the lowered kernel again.
  if (options.check_capacity) check_capacity(k, &target);
  out.kernel = k;
  out.layouts = std::move(state.layouts);
  return out;
}

}  // namespace tessel
