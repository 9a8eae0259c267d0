// `tessel fuzz --seed S --count N --target T`: random tile programs (tests/fuzz_gen/) run at
// tile level and, lowered, at thread level on the same inputs, and verified; every disagreement
// is shrunk and printed as a reproducer (TileLang syntax). Exit 1 when any program disagrees.
#include <chrono>
#include <map>

#include "core/printer.h"
#include "core/target.h"
#include "tests/fuzz_gen/fuzz_check.h"
#include "tools/cli.h"

namespace tessel::cli {

namespace {

struct Found {
  uint64_t seed;
  fuzz::Outcome outcome;
  fuzz::Program reduced;
  std::string reduced_reason, reduced_detail, kernel_text;
};

/// Shrinks a disagreeing program while it fails the same way.
Found reduce(const fuzz::Program& p, const fuzz::Outcome& o) {
  Found f{p.seed, o, p, o.reason, o.detail, ""};
  // Only a failure of verify itself needs verify while shrinking (it is the slow part).
  fuzz::CheckOptions fast;
  fast.verify = o.reason == "internal error in verify";
  f.reduced = fuzz::shrink(p, [&](const fuzz::Program& q) {
    fuzz::Outcome r = fuzz::check_program(q, fast);
    return r.verdict == fuzz::Verdict::kDisagree && r.reason == o.reason;
  });
  fuzz::Outcome r = fuzz::check_program(f.reduced, fast);
  f.reduced_detail = r.detail;
  try {
    f.kernel_text = print_kernel(fuzz::build_program(f.reduced).kernel);
  } catch (const std::exception& e) {
    f.kernel_text = std::string("(the reduced program does not print: ") + e.what() + ")\n";
  }
  return f;
}

}  // namespace

void add_fuzz_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand(
      "fuzz", "random tile programs: tile level vs thread level on one target, plus verify");
  add_common_options(*sub, ctx);
  static uint64_t seed = 1;
  static int count = 100;
  static std::string target = "sm80";
  static bool no_verify = false, print = false, no_shrink = false;
  static unsigned timeout_ms = 2000;
  static int verify_every = 1;
  sub->add_option("--seed", seed, "first seed (programs use seed, seed+1, ...)")->default_val(1);
  sub->add_option("--count", count, "number of programs")->default_val(100)->check(non_negative());
  sub->add_option("--target", target, target_names())
      ->check(CLI::IsMember(target_name_list(false)))
      ->default_val("sm80");
  sub->add_flag("--no-verify", no_verify, "skip tessel verify on each program");
  sub->add_option("--verify-every", verify_every,
                  "verify only programs whose seed is a multiple of K (long campaigns)")
      ->default_val(1)
      ->check(positive());
  sub->add_option("--verify-timeout-ms", timeout_ms, "limit of one Z3 query")->default_val(2000);
  sub->add_flag("--print", print, "print every program (TileLang syntax) with its verdict");
  sub->add_flag("--no-shrink", no_shrink, "report disagreements without reducing them");
  sub->callback([&ctx] {
    fuzz::CheckOptions options;
    options.verify_timeout_ms = timeout_ms;
    auto t0 = std::chrono::steady_clock::now();
    int agree = 0, refused = 0;
    int verified = 0, verify_all = 0;
    std::map<std::string, int> refusals, verify_failures;
    std::vector<Found> found;
    for (int n = 0; n < count; ++n) {
      uint64_t s = seed + static_cast<uint64_t>(n);
      fuzz::Program p = fuzz::generate(s, target);
      options.verify = !no_verify && s % static_cast<uint64_t>(verify_every) == 0;
      fuzz::Outcome o = fuzz::check_program(p, options);
      if (o.verify_ran) {
        ++verified;
        verify_all += o.verify_all_proved;
        for (const std::string& f : o.verify_failed) ++verify_failures[f];
      }
      if (print && !ctx.json) {
        std::string k;
        try {
          k = print_kernel(fuzz::build_program(p).kernel);
        } catch (const std::exception& e) {
          k = e.what();
        }
        *ctx.out << "# seed " << s << ": " << fuzz::summary(p) << "\n"
                 << k << "# -> " << (o.reason.empty() ? "agree" : o.reason) << "\n\n";
      }
      if (o.verdict == fuzz::Verdict::kAgree) {
        ++agree;
      } else if (o.verdict == fuzz::Verdict::kRefused) {
        ++refused;
        ++refusals[o.reason];
      } else if (no_shrink) {
        found.push_back(Found{s, o, p, o.reason, o.detail, ""});
      } else {
        found.push_back(reduce(p, o));
      }
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ctx.exit_code = found.empty() ? kOk : kKernelWrong;
    if (ctx.json) {
      nlohmann::json dis = nlohmann::json::array();
      for (const Found& f : found) {
        dis.push_back({{"seed", f.seed},
                       {"kind", f.outcome.reason},
                       {"detail", f.outcome.detail},
                       {"program", fuzz::summary(f.reduced)},
                       {"reduced_detail", f.reduced_detail},
                       {"reproducer", f.kernel_text}});
      }
      emit_json(ctx, {{"target", target},
                      {"seed", seed},
                      {"programs", count},
                      {"agree", agree},
                      {"refused", refused},
                      {"disagree", found.size()},
                      {"refusals", refusals},
                      {"verified", verified},
                      {"verify_all_proved", verify_all},
                      {"verify_not_proved", verify_failures},
                      {"seconds", seconds},
                      {"disagreements", dis}});
      return;
    }
    std::ostream& out = *ctx.out;
    for (const Found& f : found) {
      out << "DISAGREE seed " << f.seed << " on " << target << ": " << f.outcome.reason << "\n  "
          << f.outcome.detail << "\n";
      if (!f.kernel_text.empty()) {
        out << "reduced to " << fuzz::summary(f.reduced) << "\n  " << f.reduced_detail << "\n"
            << f.kernel_text << "\n";
      }
    }
    out << "fuzz " << target << " seeds " << seed << ".." << seed + count - (count > 0) << ": "
        << count << " programs, " << agree << " agree, " << refused << " refused, " << found.size()
        << " disagree";
    char t[32];
    std::snprintf(t, sizeof t, " (%.1f s)\n", seconds);
    out << t;
    if (verified) {
      out << "verify: " << verify_all << " of " << verified
          << " programs fully proved; checks not proved, by family:\n";
      for (const auto& [what, n] : verify_failures) out << "  " << n << " x " << what << "\n";
    }
    for (const auto& [why, n] : refusals) out << "refused " << n << " x " << why << "\n";
  });
}

}  // namespace tessel::cli
