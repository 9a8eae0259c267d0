// `tessel list`: the built-in kernels with their parameters and defaults.
#include "examples/registry.h"
#include "tools/cli.h"

namespace tessel::cli {

void add_list_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("list", "built-in kernels with their parameters and defaults");
  add_common_options(*sub, ctx);
  sub->callback([&ctx] {
    if (ctx.json) {
      nlohmann::json list = nlohmann::json::array();
      for (const Example& e : examples()) {
        nlohmann::json params = nlohmann::json::array();
        for (const ParamSpec& p : e.params) {
          params.push_back({{"name", p.name}, {"default", p.default_value}, {"help", p.help}});
        }
        list.push_back({{"name", e.name}, {"description", e.description}, {"params", params}});
      }
      emit_json(ctx, {{"kernels", list}});
      return;
    }
    for (const Example& e : examples()) {
      *ctx.out << e.name << " — " << e.description << "\n";
      for (const ParamSpec& p : e.params) {
        *ctx.out << "    " << p.name << "=" << p.default_value << "  (" << p.help << ")\n";
      }
    }
  });
}

}  // namespace tessel::cli
