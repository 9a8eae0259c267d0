// `tessel run KERNEL --device cuda`.
#include <algorithm>
#include <iomanip>

#include "codegen/emit.h"
#include "codegen/gpu_runner.h"
#include "core/int_eval.h"
#include "core/passes.h"
#include "examples/run_example.h"
#include "interp/tile_interpreter.h"
#include "tools/run_device.h"
#include "verify/alignment_proofs.h"

namespace tessel::cli {

void run_on_device(Context& ctx, const ResolvedKernel& k, uint64_t seed, int repeats) {
  std::string why;
  std::string target = cuda_device_target(&why);
  if (target.empty()) throw UsageError("--device cuda: cannot run on a GPU here: " + why);
  const Example& example = *k.example;
  Kernel kernel = example.build(k.params);
  if (is_multi_launch(kernel)) {
    throw UsageError(
        "--device cuda: kernel '" + kernel->name + "' has " +
        std::to_string(kernel->launches.size()) +
        " launches; the GPU runner runs one-launch kernels only so far (`tessel "
        "emit` gives the source of every launch, `run --level thread` simulates them)");
  }
  std::map<std::string, int64_t> dims = run_dims(k);
  TensorMap tensors = make_tensors(kernel, dims, example.outputs, seed);
  TensorMap tile = tensors;
  run_tile_level(kernel, tile);

  Kernel lowered =
      is_tile_level(kernel) ? lower_kernel(kernel, find_target(target)).kernel : kernel;
  require_alignment(lowered, find_target(target), "run --device");
  EmittedSource src = emit_source(lowered, find_target(target));
  IntEnv env = bind_tensors(kernel, tensors);
  GpuLaunch launch;
  for (const Expr& g : kernel->grid) launch.grid.push_back(eval_int(g, env));
  launch.warmup = repeats > 1 ? 1 : 0;
  launch.repeats = repeats;
  std::vector<LaunchArg> args;
  for (const Buffer& p : kernel->params) {
    HostTensor& t = tensors.at(p->name);
    args.push_back(
        {t.data(), static_cast<size_t>(t.dtype().storage_bytes(t.size())), false, 0, t.shape()});
  }
  for (const Var& v : kernel->dynamic_vars) {
    args.push_back(
        {nullptr, 0, true, static_cast<int>(env.at(static_cast<const VarNode*>(v.get())))});
  }
  GpuRunResult r = run_on_cuda(src, launch, args);
  if (!r.ran) throw UsageError("--device cuda: " + r.unavailable);

  bool passed = true;
  nlohmann::json outputs = nlohmann::json::array();
  std::ostringstream text;
  for (const std::string& name : example.outputs) {
    Comparison c =
        compare(tensors.at(name), tile.at(name), Tolerance::for_dtype(tile.at(name).dtype()));
    passed &= c.passed;
    outputs.push_back({{"name", name},
                       {"passed", c.passed},
                       {"max_abs_err", c.max_abs_err},
                       {"max_rel_err", c.max_rel_err},
                       {"mismatches", c.mismatches}});
    text << "  " << name << ": " << (c.passed ? "matches" : "DIFFERS FROM")
         << " the tile level (max abs err " << c.max_abs_err << ")\n";
  }
  std::vector<double> ms = r.kernel_ms;
  std::sort(ms.begin(), ms.end());
  double median = ms.empty() ? 0 : ms[ms.size() / 2];
  ctx.exit_code = passed ? kOk : kKernelWrong;
  if (ctx.json) {
    emit_json(ctx, {{"kernel", kernel->name},
                    {"device", r.device},
                    {"arch", r.arch},
                    {"passed", passed},
                    {"compile_seconds", r.compile_seconds},
                    {"kernel_ms", r.kernel_ms},
                    {"median_ms", median},
                    {"outputs", outputs}});
    return;
  }
  *ctx.out << "kernel " << kernel->name << " on " << r.device << " (" << r.arch << "), seed "
           << seed << ": compiled in " << std::fixed << std::setprecision(2) << r.compile_seconds
           << " s, median " << std::setprecision(3) << median << " ms over " << ms.size()
           << " run(s)\n"
           << text.str() << (passed ? "PASSED" : "FAILED") << "\n";
}

}  // namespace tessel::cli
