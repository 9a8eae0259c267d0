// Shared plumbing of the `tessel` command line: global options, exit codes, and one registration
// function per command (each command lives in its own tools/cmd_*.cpp file).
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessel::cli {

/// Exit statuses of DESIGN.md.
enum ExitCode : int { kOk = 0, kKernelWrong = 1, kUsage = 2 };

/// A malformed command line or input file (exit status 2). Kernel errors are tessel::UserError.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

/// Options every command takes, and where commands write.
struct Context {
  bool json = false;                 ///< --json: one JSON object on stdout
  std::vector<std::string> defines;  ///< -D name=value
  std::string kernel_choice;         ///< --kernel NAME: one kernel of a file with several
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool err_is_terminal = false;  ///< `err` is the process's stderr and a terminal
  int exit_code = kOk;  ///< set by the command that ran
};

/// Adds `--json` and `-D` to a subcommand, bound to `ctx`.
void add_common_options(CLI::App& sub, Context& ctx);
/// Checks of a number option with plain messages ("--seed: -1 is negative; give 0 or more")
/// instead of CLI11's "Value -1 not in range 0.000000 to 1797693...".
CLI::Validator non_negative();
CLI::Validator positive();
/// Adds `--kernel NAME` to a subcommand that takes a KERNEL.
void add_kernel_option(CLI::App& sub, Context& ctx);

/// Prints a JSON object (with --json) and sets the exit code.
void emit_json(Context& ctx, const nlohmann::json& object);

// Each registers one subcommand of `app`.
void add_list_command(CLI::App& app, Context& ctx);
void add_print_command(CLI::App& app, Context& ctx);
void add_run_command(CLI::App& app, Context& ctx);
void add_layout_command(CLI::App& app, Context& ctx);
void add_banks_command(CLI::App& app, Context& ctx);
void add_lower_command(CLI::App& app, Context& ctx);
void add_emit_command(CLI::App& app, Context& ctx);
void add_verify_command(CLI::App& app, Context& ctx);
void add_fuzz_command(CLI::App& app, Context& ctx);
void add_report_command(CLI::App& app, Context& ctx);

/// Runs the command line; returns the exit status. Catches every error and reports it: usage
/// errors -> 2, kernel errors -> 1, internal errors -> 3 (with a request to report them).
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace tessel::cli
