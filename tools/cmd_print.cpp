// `tessel print KERNEL`: the tile-level IR in TileLang syntax.
#include "core/printer.h"
#include "tools/cli.h"
#include "tools/kernel_source.h"

namespace tessel::cli {

void add_print_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("print", "print the tile-level IR of a kernel");
  add_common_options(*sub, ctx);
  add_kernel_option(*sub, ctx);
  static std::string kernel_name;
  // Fresh values for every App: an earlier in-process run (tests) must not leave its options.
  kernel_name.clear();
  sub->add_option("KERNEL", kernel_name, "built-in kernel name or path to a .py kernel file")->required();
  sub->callback([&ctx] {
    ResolvedKernel k = resolve_kernel(kernel_name, ctx.defines, ctx.kernel_choice);
    Kernel kernel = k.example->build(k.params);
    std::string text = print_kernel(kernel);
    if (ctx.json) {
      emit_json(ctx, {{"kernel", kernel->name}, {"ir", text}});
    } else {
      *ctx.out << text;
    }
  });
}

}  // namespace tessel::cli
