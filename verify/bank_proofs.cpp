// Conflict freedom and maximum conflict degree of a warp-wide shared-memory access, with Z3.
#include "verify/bank_proofs.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "verify/proof_parts.h"
#include "verify/proof_session.h"

namespace tessel {

using namespace proof_detail;  // NOLINT(google-build-using-namespace): this file's helpers

int BankAccess::access_bytes() const {
  if (width_bytes > 0) return width_bytes;
  if (ldmatrix) return 16;
  return std::max(1, dtype.storage_bits() / 8);
}

Expr BankAccess::byte_address() const {
  if (!layout.defined()) user_error("the access to " + buffer + " has no layout");
  if (index.size() != layout.input_rank()) {
    user_error("the access to " + buffer + " gives " + std::to_string(index.size()) +
               " indices but its layout takes " + std::to_string(layout.input_rank()));
  }
  std::vector<Expr> out = layout.forward(index);
  const std::vector<int64_t>& shape = layout.output_shape();
  Expr linear = out[0];
  for (size_t d = 1; d < out.size(); ++d) linear = linear * make_int(shape[d]) + out[d];
  int bits = dtype.storage_bits();
  Expr bytes = bits % 8 == 0 ? linear * make_int(bits / 8) : floordiv(linear * make_int(bits), 8);
  return base_bytes == 0 ? bytes : bytes + make_int(base_bytes);
}

namespace {

/// Every active lane's start address at the given symbol values.
struct Evaluated {
  std::vector<int64_t> addr;
  uint64_t mask = 0;
};

Evaluated evaluate(const BankAccess& access, const BankModel& model, IntEnv env) {
  Evaluated ev;
  Expr address = access.byte_address();
  for (int lane = 0; lane < model.warp_size; ++lane) {
    env[access.lane.operator->()] = lane;
    bool active = !access.active.defined() || eval_int(access.active, env) != 0;
    ev.addr.push_back(active ? eval_int(address, env) : 0);
    if (active) ev.mask |= uint64_t{1} << lane;
  }
  return ev;
}

/// Lane groups of `phase` as inclusive runs [first, last].
std::vector<std::pair<int, int>> runs_of(const std::vector<int>& phase) {
  std::vector<std::pair<int, int>> runs;
  for (int lane : phase) {
    if (!runs.empty() && runs.back().second + 1 == lane)
      runs.back().second = lane;
    else
      runs.emplace_back(lane, lane);
  }
  return runs;
}

/// The worst bank at the given symbol values: the lanes (one per distinct word) and the words.
struct Worst {
  int degree = 0;
  int bank = 0;
  std::vector<int64_t> lanes, words;
};

Worst worst_bank(const BankAccess& access, const BankModel& model, const IntEnv& symbols) {
  Evaluated ev = evaluate(access, model, symbols);
  int bytes = access.access_bytes();
  Worst worst;
  for (const auto& phase : model.phases(bytes, access.ldmatrix, access.write)) {
    std::map<int, std::map<int64_t, int64_t>> per_bank;  // bank -> word -> first lane
    for (int lane : phase) {
      if (!((ev.mask >> lane) & 1)) continue;
      int64_t first = floor_div(ev.addr[lane], model.bank_bytes);
      int64_t last = floor_div(ev.addr[lane] + bytes - 1, model.bank_bytes);
      for (int64_t w = first; w <= last; ++w) {
        per_bank[static_cast<int>(floor_mod(w, model.num_banks))].emplace(w, lane);
      }
    }
    for (const auto& [bank, words] : per_bank) {
      if (static_cast<int>(words.size()) <= worst.degree) continue;
      worst = {static_cast<int>(words.size()), bank, {}, {}};
      for (const auto& [w, lane] : words) {
        worst.words.push_back(w);
        worst.lanes.push_back(lane);
      }
    }
  }
  return worst;
}

std::string joined(const std::vector<std::string>& items, size_t show) {
  std::string s;
  for (size_t k = 0; k < items.size() && k < show; ++k) s += (k ? ", " : "") + items[k];
  if (items.size() > show) s += ", ...";
  return s;
}

Counterexample describe(const BankAccess& access, const BankModel& model, const Worst& w,
                        const IntEnv& symbols,
                        const std::vector<std::pair<std::string, int64_t>>& symbol_values) {
  Counterexample cex;
  cex.lanes = w.lanes;
  cex.symbols = symbol_values;
  cex.output = {w.bank};
  std::vector<std::string> lanes, indices, bytes;
  for (size_t k = 0; k < w.lanes.size(); ++k) {
    IntEnv env = symbols;
    env[access.lane.operator->()] = w.lanes[k];
    std::vector<int64_t> index;
    for (const Expr& e : access.index) index.push_back(eval_int(e, env));
    cex.indices.push_back(index);
    lanes.push_back(std::to_string(w.lanes[k]));
    indices.push_back(format_index(access.buffer, index));
    bytes.push_back(std::to_string(w.words[k] * model.bank_bytes));
  }
  size_t show = w.degree == 2 ? 2 : 4;
  std::string lane_list = w.degree == 2 ? lanes[0] + " and " + lanes[1] : joined(lanes, show);
  std::string index_list =
      w.degree == 2 ? indices[0] + " and " + indices[1] : joined(indices, show);
  std::string byte_list = w.degree == 2 ? bytes[0] + " and " + bytes[1] : joined(bytes, show);
  cex.text = "lanes " + lane_list +
             (w.degree > 2 ? " (" + std::to_string(w.degree) + " lanes)" : "") + " access " +
             index_list + ": " + std::to_string(w.degree) + " different " +
             std::to_string(model.bank_bytes) + "-byte words of bank " + std::to_string(w.bank) +
             " (bytes " + byte_list + ") in one phase, a " + std::to_string(w.degree) +
             "-way bank conflict" + symbols_text(symbol_values);
  return cex;
}

/// One "degree >= d" query.
class DegreeQuery {
 public:
  DegreeQuery(const BankAccess& access, const BankModel& model, const ProofOptions& options)
      : access_(access), model_(model), options_(options) {
    bytes_ = access.access_bytes();
    phases_ = model.phases(bytes_, access.ldmatrix, access.write);
    Expr addr = access.byte_address();
    word_ = floordiv(addr, make_int(model.bank_bytes)) + word_offset_;
    last_ = floordiv(addr + make_int(bytes_ - 1), make_int(model.bank_bytes));
    bank_ = floormod(word_, make_int(model.num_banks));
    domain_ = options.domain;
    domain_.bound(access.lane, 0, model.warp_size - 1);
    domain_.bound(word_offset_, 0, (bytes_ + model.bank_bytes - 1) / model.bank_bytes);
    exprs_ = {word_, last_, bank_, word_ <= last_};
    if (access.active.defined()) exprs_.push_back(access.active);
  }

  /// sat: the symbol values of an access with degree >= d; unsat; unknown.
  z3::check_result run(int d, IntEnv* symbols,
                       std::vector<std::pair<std::string, int64_t>>* named) {
    ProofSession s(domain_, {access_.lane, word_offset_}, exprs_, options_.timeout_ms,
                   options_.force_width);
    z3::expr phase = s.ctx().bv_const("phase", static_cast<unsigned>(s.width()));
    z3::expr goal = s.ctx().bool_val(true);
    std::vector<z3::expr> words, banks;
    for (int i = 0; i < d; ++i) {
      Z3ExprTranslator& c = s.copy("_" + std::to_string(i));
      z3::expr lane = c.var(access_.lane);
      z3::expr in_phase = s.ctx().bool_val(false);
      for (size_t k = 0; k < phases_.size(); ++k) {
        z3::expr member = s.ctx().bool_val(false);
        for (auto [lo, hi] : runs_of(phases_[k])) {
          member = member || (z3::sge(lane, c.constant(lo)) && z3::sle(lane, c.constant(hi)));
        }
        in_phase = in_phase || (phase == c.constant(static_cast<int64_t>(k)) && member);
      }
      goal = goal && in_phase && c.boolean(word_ <= last_);
      if (access_.active.defined()) goal = goal && c.boolean(access_.active);
      words.push_back(c.bv(word_));
      banks.push_back(c.bv(bank_));
    }
    for (int i = 1; i < d; ++i)
      goal = goal && z3::slt(words[i - 1], words[i]) && banks[i] == banks[0];
    z3::check_result res = s.check(goal);
    if (res == z3::sat) {
      *symbols = s.symbol_env();
      *named = s.symbol_values();
    }
    return res;
  }

 private:
  const BankAccess& access_;
  const BankModel& model_;
  const ProofOptions& options_;
  Var word_offset_ = Var("word");
  int bytes_ = 0;
  std::vector<std::vector<int>> phases_;
  Expr word_, last_, bank_;
  VarDomain domain_;
  std::vector<Expr> exprs_;
};

}  // namespace

BankCount count_access(const BankAccess& access, const BankModel& model, const IntEnv& symbols) {
  Evaluated ev = evaluate(access, model, symbols);
  return count_wavefronts(model, ev.addr, ev.mask, access.access_bytes(), access.ldmatrix,
                          access.write);
}

BankRequest access_request(const BankAccess& access, const BankModel& model,
                           const IntEnv& symbols) {
  Evaluated ev = evaluate(access, model, symbols);
  return {std::move(ev.addr), ev.mask};
}

BankProofResult prove_conflict_free(const BankAccess& access, const BankModel& model,
                                    const ProofOptions& options, bool compute_max_degree) {
  Stopwatch clock;
  BankProofResult r;
  static_cast<ProofResult&>(r) =
      start("the access to " + access.buffer + " is free of bank conflicts");
  if (model.num_banks <= 0 || model.bank_bytes <= 0) internal_error("invalid bank model");
  DegreeQuery query(access, model, options);
  IntEnv symbols;
  std::vector<std::pair<std::string, int64_t>> named;
  z3::check_result res = query.run(2, &symbols, &named);
  if (res == z3::unsat) {
    static_cast<ProofResult&>(r) = proved(r, clock);
    r.max_degree = 1;
    return r;
  }
  if (res == z3::unknown) {
    static_cast<ProofResult&>(r) = undecided(r, clock, options.timeout_ms);
    return r;
  }
  // Climb: the exact degree at the model's symbol values, then ask for one more.
  Worst best = worst_bank(access, model, symbols);
  // A model always replays at the chosen width (a forced, narrower one is for tests only).
  internal_check(options.force_width > 0 || best.degree >= 2,
                 "bank-conflict model does not replay");
  IntEnv best_symbols = symbols;
  auto best_named = named;
  bool decided = true;
  while (compute_max_degree) {
    IntEnv next;
    std::vector<std::pair<std::string, int64_t>> next_named;
    z3::check_result more = query.run(best.degree + 1, &next, &next_named);
    if (more == z3::unsat) break;
    if (more == z3::unknown) {
      decided = false;
      break;
    }
    Worst w = worst_bank(access, model, next);
    internal_check(options.force_width > 0 || w.degree > best.degree,
                   "bank-conflict degree model does not replay");
    if (w.degree <= best.degree) break;
    best = w;
    best_symbols = next;
    best_named = next_named;
  }
  Counterexample cex = describe(access, model, best, best_symbols, best_named);
  static_cast<ProofResult&>(r) = failed(r, clock, std::move(cex));
  r.max_degree = best.degree;
  if (!decided) r.message += " (a higher degree could not be ruled out: Z3 gave up)";
  return r;
}

}  // namespace tessel
