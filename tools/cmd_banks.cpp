// `tessel banks`: the bank conflicts of one warp-wide shared-memory access, counted exactly and
// (with --prove) proved with Z3 for every value of the access's symbolic parameters.
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include "core/bank_phase.h"
#include "core/bank_rules.h"
#include "core/error.h"
#include "core/expr_parser.h"
#include "core/target.h"
#include "tools/cli.h"
#include "verify/bank_proofs.h"

namespace tessel::cli {

namespace {

using nlohmann::json;

struct BanksArgs {
  std::string layout;
  std::string dtype;
  std::string access;
  std::string target = "sm80";
  std::string name = "A_shared";
  std::vector<std::string> ranges;
  int width = 0;
  int lanes = 0;
  bool ldmatrix = false;
  bool prove = false;
  bool write = false;
  std::string svg;  ///< --svg FILE: the bank map of the worst phase
};

/// `lambda lane[, k, ...]: index` or `... : (i, j)`: the parameters and the index expressions.
struct AccessLambda {
  std::vector<Var> params;
  std::vector<Expr> index;
};

AccessLambda parse_access(const std::string& text) {
  TokenCursor cur(text);
  if (!cur.at_name("lambda")) {
    cur.error_at(cur.peek(),
                 "--access must be a lambda of the lane, e.g. 'lambda lane: (lane, 0)'; found " +
                     TokenCursor::describe(cur.peek()));
  }
  ParsedLambda parsed = parse_lambda(cur);
  if (parsed.params.empty()) {
    cur.error_at(parsed.body_at, "the lambda needs the lane as its first parameter");
  }
  AccessLambda l{parsed.params, parsed.outputs};
  // A bare tuple of indices after the colon: `lambda lane: lane, 0`.
  ExprParseHooks hooks;
  hooks.resolve_name = [&](const std::string& name, const Token&) -> std::optional<Expr> {
    for (const Var& v : l.params) {
      if (v.name() == name) return Expr(v);
    }
    return std::nullopt;
  };
  while (cur.accept_op(",")) l.index.push_back(parse_expression(cur, hooks));
  if (!cur.at_end()) cur.error_at(cur.peek(), "unexpected " + TokenCursor::describe(cur.peek()));
  return l;
}

/// -D name=value and --range name=lo:hi for the lambda's parameters after the lane.
struct Symbols {
  std::vector<std::pair<Var, IntBound>> ranges;
};

int64_t parse_int(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument("");
    return v;
  } catch (const std::exception&) {
    throw UsageError(what + ": '" + s + "' is not an integer");
  }
}

Symbols bind_symbols(const AccessLambda& l, const BanksArgs& args, const Context& ctx) {
  std::map<std::string, IntBound> given;
  std::map<std::string, std::string> origin;  // the option that set each name
  auto set = [&](const std::string& name, IntBound b, const std::string& option) {
    if (origin.count(name)) {
      throw UsageError(option + " sets '" + name + "', which " + origin[name] +
                       " already set; give each symbol one value or range");
    }
    bool known = false;
    for (size_t k = 1; k < l.params.size(); ++k) known = known || l.params[k].name() == name;
    if (!known) {
      std::string params;
      for (size_t k = 1; k < l.params.size(); ++k)
        params += (params.empty() ? "" : ", ") + l.params[k].name();
      throw UsageError(option + ": the access lambda has no symbol '" + name + "'; " +
                       (params.empty() ? std::string("it has only the lane")
                                       : "its symbols after the lane are " + params));
    }
    given[name] = b;
    origin[name] = option;
  };
  for (const std::string& d : ctx.defines) {
    auto eq = d.find('=');
    if (eq == std::string::npos) throw UsageError("-D expects name=value, got '" + d + "'");
    int64_t v = parse_int(d.substr(eq + 1), "-D " + d.substr(0, eq));
    set(d.substr(0, eq), {v, v}, "-D " + d);
  }
  for (const std::string& r : args.ranges) {
    auto eq = r.find('='), colon = r.find(':');
    if (eq == std::string::npos || colon == std::string::npos || colon < eq) {
      throw UsageError("--range expects name=lo:hi (inclusive), got '" + r + "'");
    }
    int64_t lo = parse_int(r.substr(eq + 1, colon - eq - 1), "--range " + r);
    int64_t hi = parse_int(r.substr(colon + 1), "--range " + r);
    if (lo > hi) throw UsageError("--range " + r + " is empty");
    set(r.substr(0, eq), {lo, hi}, "--range " + r);
  }
  Symbols s;
  for (size_t k = 1; k < l.params.size(); ++k) {
    auto it = given.find(l.params[k].name());
    if (it == given.end()) {
      throw UsageError("the access lambda's parameter '" + l.params[k].name() +
                       "' needs a value (-D " + l.params[k].name() + "=0) or a range (--range " +
                       l.params[k].name() + "=0:3)");
    }
    s.ranges.emplace_back(l.params[k], it->second);
  }
  return s;
}

/// UsageError when an active lane's index lies outside the layout's shape for the symbols'
/// values in `env`.
void check_in_layout(const BankAccess& access, const BankModel& model, IntEnv env,
                     const Symbols& symbols) {
  const std::vector<int64_t>& shape = access.layout.input_shape();
  for (int lane = 0; lane < model.warp_size; ++lane) {
    env[access.lane.operator->()] = lane;
    if (access.active.defined() && eval_int(access.active, env) == 0) continue;
    std::vector<int64_t> idx;
    bool inside = true;
    for (size_t d = 0; d < access.index.size(); ++d) {
      idx.push_back(eval_int(access.index[d], env));
      inside = inside && idx.back() >= 0 && idx.back() < shape[d];
    }
    if (inside) continue;
    auto list = [](const std::vector<int64_t>& v) {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s;
    };
    std::string with;
    for (const auto& [v, b] : symbols.ranges)
      with += ", " + v.name() + "=" + std::to_string(env.at(v.operator->()));
    throw UsageError("--access: lane " + std::to_string(lane) + with + " accesses " +
                     access.buffer + "[" + list(idx) + "], outside the layout's shape (" +
                     list(shape) + "); every active lane must index inside the buffer");
  }
}

/// The worst exact count over every combination of the symbols' values (at most 2^16); every
/// combination's indices are checked to lie inside the layout.
std::pair<BankCount, IntEnv> worst_count(const BankAccess& access, const BankModel& model,
                                         const Symbols& symbols) {
  int64_t combos = 1;
  for (const auto& [v, b] : symbols.ranges) {
    combos *= (b.max - b.min + 1);
    if (combos > (int64_t{1} << 16)) {
      throw UsageError(
          "the --range values have more than 65536 combinations to count; narrow "
          "them (--prove covers any range)");
    }
  }
  BankCount worst;
  IntEnv worst_env;
  for (int64_t c = 0; c < combos; ++c) {
    IntEnv env;
    int64_t rest = c;
    for (const auto& [v, b] : symbols.ranges) {
      env[v.operator->()] = b.min + rest % (b.max - b.min + 1);
      rest /= (b.max - b.min + 1);
    }
    check_in_layout(access, model, env, symbols);
    BankCount count = count_access(access, model, env);
    if (c == 0 || count.wavefronts > worst.wavefronts) {
      worst = count;
      worst_env = env;
    }
  }
  return {worst, worst_env};
}

json cex_json(const Counterexample& cex) {
  json symbols = json::object();
  for (const auto& [name, value] : cex.symbols) symbols[name] = value;
  return {{"lanes", cex.lanes},
          {"indices", cex.indices},
          {"bank", cex.output.empty() ? 0 : cex.output[0]},
          {"symbols", symbols},
          {"message", cex.text}};
}

/// --svg FILE: the worst phase of the access at the symbol values `at` (the costliest ones).
void write_bank_svg(const BanksArgs& args, const BankAccess& access, const BankModel& model,
                    const IntEnv& at, const BankCount& count) {
  BankRequest req = access_request(access, model, at);
  BankPhaseMap map = worst_phase(model, req.addr, req.mask, access.access_bytes(), access.ldmatrix,
                                 access.write);
  BankMapSvgOptions options;
  options.title = args.name + ": " + args.access + " — phase " + std::to_string(map.phase) +
                  " of " + std::to_string(map.num_phases) + ", " +
                  std::to_string(map.wavefronts) + " wavefront" +
                  (map.wavefronts == 1 ? "" : "s") + " (request: " +
                  std::to_string(count.wavefronts) + ", ideal " +
                  std::to_string(count.ideal_wavefronts) + ")";
  std::ofstream file(args.svg);
  if (!file) throw UsageError("cannot write --svg file '" + args.svg + "'");
  file << bank_phase_svg(map, options);
  if (!file) throw UsageError("could not write all of --svg file '" + args.svg + "'");
}

void run_banks(const BanksArgs& args, const CLI::App& sub, Context& ctx) {
  if (sub.count("--width") && args.width <= 0) {
    throw UsageError("--width " + std::to_string(args.width) +
                     ": the bytes each lane accesses must be 1, 2, 4, 8 or 16");
  }
  const Target* target = lookup_target(args.target, true);
  if (!target)
    throw UsageError("unknown --target '" + args.target + "'; use one of " + target_names() +
                     " (or " + target_aliases() + ")");
  const BankModel* model = &target->banks;
  std::optional<DataType> dtype = DataType::parse(args.dtype);
  if (!dtype)
    throw UsageError("unknown --dtype '" + args.dtype + "'; use one of " +
                     DataType::accepted_names());
  BankAccess access;
  AccessLambda lambda;
  try {
    std::variant<Layout, Fragment> parsed = parse_layout_spec(args.layout);
    if (!std::holds_alternative<Layout>(parsed)) {
      throw UsageError("--layout must be a shared-memory Layout, not a Fragment: " + args.layout);
    }
    access.layout = std::get<Layout>(parsed);
    lambda = parse_access(args.access);
    if (lambda.index.size() != access.layout.input_rank()) {
      throw UsageError("--access gives " + std::to_string(lambda.index.size()) +
                       " indices but the layout has " + std::to_string(access.layout.input_rank()) +
                       " dimensions");
    }
  } catch (const UserError& e) {
    throw UsageError(std::string("malformed --layout or --access: ") + e.what());
  }
  access.buffer = args.name;
  access.dtype = *dtype;
  access.lane = lambda.params[0];
  access.index = lambda.index;
  access.width_bytes = args.width;
  access.ldmatrix = args.ldmatrix;
  access.write = args.write;
  if ((sub.count("--lanes") && args.lanes < 1) || args.lanes > model->warp_size) {
    throw UsageError("--lanes must be in [1, " + std::to_string(model->warp_size) + "]");
  }
  if (args.lanes > 0) access.active = access.lane < make_int(args.lanes);
  Symbols symbols = bind_symbols(lambda, args, ctx);
  try {
    model->phases(access.access_bytes(), access.ldmatrix, access.write);  // validates the width
  } catch (const UserError& e) {
    throw UsageError(e.what());
  }
  auto [count, at] = worst_count(access, *model, symbols);
  json j = {{"wavefronts", count.wavefronts},         {"ideal_wavefronts", count.ideal_wavefronts},
            {"bank_conflicts", count.bank_conflicts}, {"max_degree", count.max_degree},
            {"access_bytes", access.access_bytes()},  {"target", args.target}};
  if (!args.svg.empty()) write_bank_svg(args, access, *model, at, count);
  std::optional<BankProofResult> proof;
  if (args.prove) {
    ProofOptions options;
    options.name = args.name;
    for (const auto& [v, b] : symbols.ranges) options.domain.ranges.emplace_back(v, b);
    proof = prove_conflict_free(access, *model, options);
    j["conflict_free"] = proof->holds;
    j["counterexample"] = proof->cex ? cex_json(*proof->cex) : json(nullptr);
    j["proved_max_degree"] = proof->max_degree;
    j["proof"] = {{"decided", proof->decided}, {"ms", proof->ms}, {"message", proof->message}};
    ctx.exit_code = proof->holds ? kOk : kKernelWrong;
  }
  if (ctx.json) {
    emit_json(ctx, j);
    return;
  }
  std::ostream& out = *ctx.out;
  out << "access      " << args.access << " into " << access.layout.to_string() << "\n";
  out << "            " << dtype->name() << ", " << access.access_bytes() << " bytes per lane"
      << (args.ldmatrix ? " (ldmatrix rows)" : "") << ", target " << args.target << " ("
      << model->num_banks << " banks x " << model->bank_bytes << " B, warp " << model->warp_size
      << ")\n";
  out << "wavefronts  " << count.wavefronts << " (ideal " << count.ideal_wavefronts << ", "
      << count.bank_conflicts << " bank conflicts, worst bank serves " << count.max_degree
      << " words in one phase)";
  if (!symbols.ranges.empty()) {
    out << " at";
    for (const auto& [v, b] : symbols.ranges)
      out << " " << v.name() << "=" << at.at(v.operator->());
  }
  out << "\n";
  if (!args.svg.empty()) out << "bank map    written to " << args.svg << "\n";
  if (proof) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f ms", proof->ms);
    out << "proof       "
        << (proof->holds
                ? (symbols.ranges.empty() ? "conflict-free" : "conflict-free for every value")
                : "CONFLICTS, max degree " + std::to_string(proof->max_degree))
        << " (" << ms << ")\n";
    if (!proof->holds) out << "            " << proof->message << "\n";
  }
}

}  // namespace

void add_banks_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<BanksArgs>();
  CLI::App* sub =
      app.add_subcommand("banks", "bank conflicts of one warp-wide shared-memory access");
  add_common_options(*sub, ctx);
  sub->add_option("--layout", args->layout, "the buffer's layout SPEC (as for `tessel layout`)")
      ->required();
  sub->add_option("--dtype", args->dtype, "element type (f16, f32, ...)")->required();
  sub->add_option(
         "--access", args->access,
         "lambda from the lane to the buffer index it accesses, e.g. 'lambda lane: (lane, 0)'; "
         "with --ldmatrix the first element of the 16-byte row the lane addresses; further "
         "parameters are symbols set by -D name=value or --range name=lo:hi")
      ->required();
  sub->add_option("--width", args->width,
                  "bytes each lane accesses (default: the dtype's size; 16 with --ldmatrix)");
  sub->add_flag("--ldmatrix", args->ldmatrix,
                "ldmatrix: each 8-lane group of row addresses is one phase");
  sub->add_flag("--prove", args->prove,
                "prove conflict freedom with Z3 for every symbol value (exit 1 on conflicts)");
  sub->add_flag("--write", args->write,
                "the access is a store (AMD 16-byte stores use other phases)");
  sub->add_option("--target", args->target,
                  "bank rules of a target: " + target_names() + " (default sm80)");
  sub->add_option("--lanes", args->lanes,
                  "only the first N lanes take part (ldmatrix.x1: 8, .x2: 16)");
  sub->add_option("--range", args->ranges, "a symbol's inclusive range, name=lo:hi (repeatable)");
  sub->add_option("--name", args->name, "buffer name used in messages (default A_shared)");
  sub->add_option("--svg", args->svg,
                  "draw the bank map of the costliest phase (banks x lanes, each cell the word "
                  "the lane requests, conflicting words in red) to FILE");
  sub->callback([args, sub, &ctx] { run_banks(*args, *sub, ctx); });
}

}  // namespace tessel::cli
