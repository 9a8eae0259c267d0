// The command-line driver: global setup, error-to-exit-status mapping, and shared helpers.
#include "tools/cli.h"

#include <ostream>

#include "core/error.h"

namespace tessel::cli {

void add_common_options(CLI::App& sub, Context& ctx) {
  sub.add_flag("--json", ctx.json, "print one JSON object on stdout");
  sub.add_option("-D", ctx.defines, "kernel parameter, name=value (repeatable)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
}

void add_kernel_option(CLI::App& sub, Context& ctx) {
  sub.add_option("--kernel", ctx.kernel_choice,
                 "the kernel to read from a file that defines several (tessel list FILE)")
      ->type_name("NAME");
}

void emit_json(Context& ctx, const nlohmann::json& object) { *ctx.out << object.dump(2) << "\n"; }

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  CLI::App app{"tessel: tile kernels on the CPU, proved with Z3, lowered to CUDA and HIP"};
  app.require_subcommand(1);
  add_list_command(app, ctx);
  add_print_command(app, ctx);
  add_run_command(app, ctx);
  add_layout_command(app, ctx);
  add_banks_command(app, ctx);
  add_lower_command(app, ctx);
  add_emit_command(app, ctx);
  add_verify_command(app, ctx);
  add_fuzz_command(app, ctx);
  try {
    app.parse(argc, argv);
    return ctx.exit_code;
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kOk;
  } catch (const CLI::ParseError& e) {
    err << "tessel: " << e.what() << "\n"
        << "run 'tessel --help' for usage\n";
    return kUsage;
  } catch (const UsageError& e) {
    err << "tessel: " << e.what() << "\n";
    return kUsage;
  } catch (const UserError& e) {
    if (ctx.json) {
      emit_json(ctx, {{"passed", false}, {"error", e.what()}});
    }
    err << "tessel: error: " << e.what() << "\n";
    return kKernelWrong;
  } catch (const std::bad_alloc&) {
    err << "tessel: error: out of memory running the kernel; choose smaller sizes with -D\n";
    return kKernelWrong;
  } catch (const std::exception& e) {
    err << "tessel: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace tessel::cli
