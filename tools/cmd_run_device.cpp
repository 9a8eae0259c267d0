// `tessel run KERNEL --device cuda`.
#include <algorithm>
#include <iomanip>

#include "codegen/gpu_runner.h"
#include "core/target.h"
#include "examples/run_example.h"
#include "interp/tile_interpreter.h"
#include "tools/kernel_views.h"
#include "tools/run_device.h"

namespace tessel::cli {
namespace {

/// Outputs the GPU's are compared with: the tile level's or the reference's.
struct Expected {
  const char* against;  ///< "the tile level" or "the reference", for the report
  bool reference;       ///< the reference's tolerance and error bounds apply
  TensorMap tensors;
};

/// An AMD or unknown `--target` is refused before the GPU is looked for.
void check_asked_target(const std::string& asked) {
  if (asked.empty()) return;
  const Target* t = lookup_target(asked, false);
  if (!t) {
    throw UsageError("--device cuda --target " + asked + ": unknown target; use one of " +
                     target_names());
  }
  if (!t->nvidia) {
    throw UsageError("--device cuda --target " + asked +
                     ": that is an AMD target; the GPU runner runs CUDA code, lowered for an "
                     "NVIDIA target (sm80, sm90)");
  }
}

/// The target to lower for: `asked` when the device runs code lowered for it, else a user error.
/// Code lowered for an older target runs on a newer GPU (the cubin is built for the device).
std::string lowering_target(const std::string& device_target, const std::string& asked) {
  if (asked.empty()) return device_target;
  const Target& t = find_target(asked);
  if (t.compute_capability > find_target(device_target).compute_capability) {
    throw UsageError("--device cuda --target " + asked + ": the GPU runs " + device_target +
                     " code, and code lowered for " + asked +
                     " uses instructions it lacks; leave out --target or name an older one");
  }
  return t.name;
}

}  // namespace

DeviceCall device_call(const Kernel& kernel, TensorMap& tensors) {
  add_scratch_tensors(kernel, tensors);
  const IntEnv env = bind_tensors(kernel, tensors);
  DeviceCall call{launch_grids(kernel, env), {}};
  std::vector<Buffer> buffers = kernel->params;
  buffers.insert(buffers.end(), kernel->scratch.begin(), kernel->scratch.end());
  for (const Buffer& b : buffers) {
    HostTensor& t = tensors.at(b->name);
    call.args.push_back(
        {t.data(), static_cast<size_t>(t.dtype().storage_bytes(t.size())), false, 0, t.shape()});
  }
  for (const Var& v : kernel->dynamic_vars) {
    call.args.push_back(
        {nullptr, 0, true, static_cast<int>(env.at(static_cast<const VarNode*>(v.get())))});
  }
  return call;
}

TensorMap device_tensors(const ResolvedKernel& k, const Kernel& kernel, uint64_t seed) {
  TensorMap tensors = make_tensors(kernel, run_dims(k), k.example->outputs, seed);
  for (const std::string& name : k.example->zero_outputs) {
    HostTensor& t = tensors.at(name);
    t = HostTensor(t.dtype(), t.shape(), 0);
  }
  return tensors;
}

void run_on_device(Context& ctx, const ResolvedKernel& k, uint64_t seed, int repeats,
                   const std::string& asked_target) {
  check_asked_target(asked_target);
  std::string why;
  std::string device_target = cuda_device_target(&why);
  if (device_target.empty()) throw UsageError("--device cuda: cannot run on a GPU here: " + why);
  std::string target = lowering_target(device_target, asked_target);
  const Example& example = *k.example;
  Kernel kernel = example.build(k.params);
  TensorMap tensors = device_tensors(k, kernel, seed);
  // What the GPU's outputs are compared with: the tile level (the same arithmetic, before
  // lowering) where the kernel is tile-level code, and the reference where there is one.
  std::vector<Expected> expected;
  std::string tile_note;  // why the tile level is not compared, where it could not run
  if (is_tile_level(kernel)) {
    TensorMap tile = tensors;
    try {
      run_tile_level(kernel, tile);
      expected.push_back({"the tile level", false, std::move(tile)});
    } catch (const UserError& e) {
      // Tile-level code the tile level cannot run in program order (T.ws branches that must
      // run concurrently): the reference alone checks it, where there is one; the report says.
      if (!k.has_reference) throw;
      tile_note =
          std::string("the tile level could not run it, so only the reference checks it: ") +
          e.what();
    }
  }
  if (k.has_reference) {
    expected.push_back({"the reference", true, tensors});
    example.reference(k.params, expected.back().tensors);
  }
  if (expected.empty()) {
    throw UsageError("--device cuda: kernel '" + kernel->name +
                     "' is hand-lowered (thread-level code) and its file names no reference, so "
                     "there is nothing to compare the GPU's outputs with; add `# tessel: "
                     "reference=NAME` or run it with --level thread");
  }

  EmittedSource src = emit_kernel(kernel, find_target(target), {}, "run --device");
  DeviceCall call = device_call(kernel, tensors);
  GpuLaunch launch;
  launch.grids = call.grids;
  launch.warmup = repeats > 1 ? 1 : 0;
  launch.repeats = repeats;
  GpuRunResult r = run_on_cuda(src, launch, call.args);
  if (!r.ran) throw UsageError("--device cuda: " + r.unavailable);

  bool passed = true;
  nlohmann::json outputs = nlohmann::json::array();
  std::ostringstream text;
  for (const Expected& want : expected) {
    for (const std::string& name : example.outputs) {
      const HostTensor& got = tensors.at(name);
      Tolerance tol = want.reference ? example.tolerance.value_or(Tolerance::for_dtype(got.dtype()))
                                     : Tolerance::for_dtype(got.dtype());
      auto bound = want.tensors.find(error_bound_name(name));
      Comparison c =
          compare(got, want.tensors.at(name), tol,
                  want.reference && bound != want.tensors.end() ? &bound->second : nullptr);
      passed &= c.passed;
      outputs.push_back({{"name", name},
                         {"against", want.reference ? "reference" : "tile"},
                         {"passed", c.passed},
                         {"max_abs_err", c.max_abs_err},
                         {"max_rel_err", c.max_rel_err},
                         {"mismatches", c.mismatches}});
      text << "  " << name << ": " << (c.passed ? "matches" : "DIFFERS FROM") << " " << want.against
           << " (max abs err " << c.max_abs_err << ")\n";
    }
  }
  if (!tile_note.empty()) text << "  " << tile_note << "\n";
  std::vector<double> ms = r.kernel_ms;
  std::sort(ms.begin(), ms.end());
  double median = ms.empty() ? 0 : ms[ms.size() / 2];
  ctx.exit_code = passed ? kOk : kKernelWrong;
  if (ctx.json) {
    emit_json(ctx, {{"kernel", kernel->name},
                    {"device", r.device},
                    {"target", target},
                    {"arch", r.arch},
                    {"passed", passed},
                    {"compile_seconds", r.compile_seconds},
                    {"kernel_ms", r.kernel_ms},
                    {"median_ms", median},
                    {"outputs", outputs},
                    {"tile_note", tile_note}});
    return;
  }
  *ctx.out << "kernel " << kernel->name << " lowered for " << target << " on " << r.device << " ("
           << r.arch << "), seed " << seed << ": compiled in " << std::fixed << std::setprecision(2)
           << r.compile_seconds << " s, median " << std::setprecision(3) << median << " ms over "
           << ms.size() << " run(s)\n"
           << text.str() << (passed ? "PASSED" : "FAILED") << "\n";
}

}  // namespace tessel::cli
