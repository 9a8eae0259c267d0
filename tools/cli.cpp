// The command-line driver: global setup, error-to-exit-status mapping, and shared helpers.
#include "tools/cli.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <ostream>
#include <string_view>

#include "core/error.h"
#include "examples/registry.h"
#include "interp/run_control.h"

namespace tessel::cli {

namespace {

/// A validator of numbers of at least `min` (an option's own conversion reports non-numbers).
CLI::Validator at_least(double min, const char* name, const char* complaint, const char* fix) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) return "";
        } catch (const std::exception&) {
          return "";
        }
        return v < min ? text + " " + complaint + "; give " + fix : "";
      },
      name);
}

}  // namespace

CLI::Validator non_negative() { return at_least(0, "NONNEGATIVE", "is negative", "0 or more"); }
CLI::Validator positive() { return at_least(1e-300, "POSITIVE", "is not positive", "more than 0"); }

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

void emit_json(Context& ctx, const nlohmann::json& object) {
  // Bytes of the command line that are not UTF-8 (they reach messages) print as U+FFFD.
  *ctx.out << object.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

namespace {

/// The commands, for the message when none is given.
std::string command_list(const CLI::App& app) {
  std::string s;
  for (const CLI::App* sub : app.get_subcommands({})) {
    s += "  tessel " + sub->get_name() +
         std::string(8 - std::min<size_t>(sub->get_name().size(), 7), ' ') +
         sub->get_description() + "\n";
  }
  return s;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Context ctx;
  // --json anywhere: errors too are one JSON object on stdout, even when parsing fails before
  // the option is bound.
  bool json = false;
  for (int i = 1; i < argc; ++i) json = json || std::string_view(argv[i]) == "--json";
  auto usage = [&](const std::string& message, const std::string& hint) {
    if (json) emit_json(ctx, {{"passed", false}, {"error", message}, {"exit_code", int{kUsage}}});
    err << "tessel: " << message << "\n" << hint;
    return kUsage;
  };
  ctx.out = &out;
  ctx.err = &err;
  ctx.err_is_terminal = &err == &std::cerr && isatty(STDERR_FILENO);
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
  add_report_command(app, ctx);
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
    if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e)) {
      return usage("a command is required; the commands are:",
                   command_list(app) + "run 'tessel COMMAND --help' for a command's options\n");
    }
    return usage(e.what(), "run 'tessel --help' for usage\n");
  } catch (const UsageError& e) {
    return usage(e.what(), "");
  } catch (const ParamError& e) {
    return usage(e.what(), "");  // a -D value of the wrong kind: a command-line mistake
  } catch (const UserError& e) {
    if (json) {
      nlohmann::json j = {{"passed", false}, {"error", e.what()}, {"exit_code", int{kKernelWrong}}};
      if (dynamic_cast<const RunStopped*>(&e)) j["stopped"] = true;
      emit_json(ctx, j);
    }
    err << "tessel: error: " << e.what() << "\n";
    return kKernelWrong;
  } catch (const std::bad_alloc&) {
    // The sizes are checked before anything large is allocated (core/capacity.h, the host
    // memory check); this is what slips past them. Name the command and its kernel.
    std::string what = "tessel";
    for (int a = 1; a < argc && a < 3; ++a) what += std::string(" ") + argv[a];
    std::string message = "out of memory running `" + what +
                          "`: this machine could not allocate what the run needs; choose smaller "
                          "sizes with -D, or fewer --workers";
    if (json) {
      emit_json(ctx, {{"passed", false}, {"error", message}, {"exit_code", int{kKernelWrong}}});
    }
    err << "tessel: error: " << message << "\n";
    return kKernelWrong;
  } catch (const std::exception& e) {
    err << "tessel: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace tessel::cli
