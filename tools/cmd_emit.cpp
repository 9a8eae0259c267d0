// `tessel emit KERNEL --target cuda|hip|<a core/target.h name> [-o FILE]`: the kernel lowered
// for the target and printed as CUDA (NVIDIA) or HIP (AMD) source.
#include "core/target.h"
#include "tools/cli.h"
#include "tools/file_io.h"
#include "tools/kernel_source.h"
#include "tools/kernel_views.h"

namespace tessel::cli {

namespace {

/// The TMA tensor maps a host encodes and passes after the arguments.
nlohmann::json tensor_maps_json(const std::vector<TensorMapArg>& maps) {
  nlohmann::json out = nlohmann::json::array();
  for (const TensorMapArg& m : maps) {
    out.push_back({{"name", m.name},
                   {"tensor", m.tensor},
                   {"dtype", m.dtype.name()},
                   {"box", m.box},
                   {"swizzle_bytes", m.swizzle}});
  }
  return out;
}

}  // namespace

void add_emit_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("emit", "print the CUDA or HIP source of a kernel");
  add_common_options(*sub, ctx);
  add_kernel_option(*sub, ctx);
  static std::string kernel_name, target = "cuda", output;
  static bool no_ws = false;
  // Fresh values for every App: an earlier in-process run (tests) must not leave its options.
  kernel_name.clear(), target = "cuda", output.clear(), no_ws = false;
  sub->add_option("KERNEL", kernel_name, "built-in kernel name or path to a .py kernel file")
      ->required();
  sub->add_option("--target", target,
                  "cuda (= " + default_target(true).name +
                      "), hip (= " + default_target(false).name + "), or " + target_names())
      ->check(CLI::IsMember(target_name_list(true)))
      ->default_val("cuda");
  sub->add_option("-o,--output", output, "write the source to FILE instead of stdout");
  sub->add_flag("--no-warp-specialize", no_ws,
                "sm90: keep the sm80 software pipeline (cp.async multi-buffering) instead of "
                "warp-specialising T.Pipelined loops");
  sub->callback([&ctx] {
    ResolvedKernel k = resolve_kernel(kernel_name, ctx.defines, ctx.kernel_choice);
    Kernel kernel = k.example->build(k.params);
    const Target& t = *lookup_target(target, true);  // the option accepts nothing else
    const std::string& name = t.name;
    LowerOptions lower;
    lower.warp_specialize = !no_ws;
    EmittedSource src = emit_kernel(kernel, t, lower);
    if (!output.empty()) {
      write_checked(output, src.code, "-o " + output);
    }
    if (ctx.json) {
      nlohmann::json j = {{"kernel", kernel->name},
                          {"target", name},
                          {"language", src.language == Language::kCuda ? "cuda" : "hip"},
                          {"entry", src.entry},
                          {"threads", src.threads},
                          {"thread_dims", src.thread_dims},
                          {"grid", src.grid},
                          {"grid_axes", src.grid_axes},
                          {"dynamic_shared_bytes", src.dynamic_shared_bytes},
                          {"arguments", src.arguments},
                          {"tensor_maps", tensor_maps_json(src.tensor_maps)}};
      if (!src.launches.empty()) {
        nlohmann::json launches = nlohmann::json::array();
        for (const EmittedLaunch& l : src.launches) {
          launches.push_back({{"entry", l.entry},
                              {"grid", l.grid},
                              {"grid_axes", l.grid_axes},
                              {"threads", l.threads},
                              {"thread_dims", l.thread_dims},
                              {"dynamic_shared_bytes", l.dynamic_shared_bytes},
                              {"tensor_maps", tensor_maps_json(l.tensor_maps)}});
        }
        j["launches"] = launches;
        j["scratch"] = src.scratch;
      }
      if (output.empty()) j["source"] = src.code;
      emit_json(ctx, j);
    } else if (output.empty()) {
      *ctx.out << src.code;
    }
  });
}

}  // namespace tessel::cli
