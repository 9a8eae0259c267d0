// One program at both levels and under verify; the shrinker of disagreeing programs.
#include "tests/fuzz_gen/fuzz_check.h"

#include <cctype>
#include <exception>

#include "core/error.h"
#include "core/passes.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"
#include "verify/kernel_proofs.h"

namespace tessel::fuzz {

std::string blur_reason(const std::string& error) {
  std::string line = error.substr(0, error.find('\n'));
  std::string out;
  for (size_t i = 0; i < line.size();) {
    char c = line[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
      out += 'N';
      continue;
    }
    if (c == '\'') {  // a quoted name: keep its first character class only
      size_t end = line.find('\'', i + 1);
      if (end != std::string::npos && end - i < 40) {
        out += "'_'";
        i = end + 1;
        continue;
      }
    }
    out += c;
    ++i;
  }
  if (out.size() > 140) out = out.substr(0, 140) + "...";
  return out;
}

namespace {

Outcome refused(const std::string& stage, const std::string& what) {
  Outcome o;
  o.verdict = Verdict::kRefused;
  o.reason = stage + ": " + blur_reason(what);
  o.detail = what;
  return o;
}

Outcome disagree(const std::string& kind, const std::string& detail) {
  Outcome o;
  o.verdict = Verdict::kDisagree;
  o.reason = kind;
  o.detail = detail;
  return o;
}

Outcome run_levels(const Program& p, const CheckOptions& options, const BuiltProgram& built) {
  TensorMap inputs;
  try {
    inputs = make_tensors(built.kernel, built.dims, built.outputs, options.data_seed);
  } catch (const UserError& e) {
    return refused("tensors", e.what());
  }
  for (const std::string& z : built.zeroed) {
    HostTensor& t = inputs.at(z);
    for (int64_t i = 0; i < t.size(); ++i) t.set(i, 0);
  }
  TensorMap tile = inputs, thread = inputs;
  try {
    run_tile_level(built.kernel, tile, TileRunOptions{1});
  } catch (const UserError& e) {
    return refused("tile level", e.what());
  }
  Kernel lowered;
  try {
    lowered = lower_kernel(built.kernel, find_target(p.target)).kernel;
  } catch (const UserError& e) {
    return refused("lower", e.what());
  }
  ThreadRunOptions topt;
  topt.target = p.target;
  topt.workers = 1;
  topt.counters = false;
  ThreadRunResult result;
  try {
    result = run_thread_level(lowered, thread, topt);
  } catch (const UserError& e) {
    return disagree("thread-level error", e.what());
  }
  if (options.corrupt) options.corrupt(p, thread);
  for (const sim::Finding& f : result.report.findings) {
    if (!f.benign) {
      return disagree(std::string("finding:") + sim::finding_kind_name(f.kind),
                      f.buffer + f.element + ": " + f.message);
    }
  }
  for (const auto& [name, want] : tile) {
    const HostTensor& got = thread.at(name);
    Comparison c = compare(got, want, Tolerance::for_dtype(want.dtype()));
    if (!c.passed) {
      return disagree("mismatch", name + index_string(want.shape(), c.first_mismatch) +
                                      ": thread level " + std::to_string(c.first_actual) +
                                      ", tile level " + std::to_string(c.first_expected) + " (" +
                                      std::to_string(c.mismatches) + " elements differ)");
    }
  }
  return Outcome{};
}

}  // namespace

Outcome check_program(const Program& p, const CheckOptions& options) {
  Outcome o;
  BuiltProgram built;
  try {
    built = build_program(p);
  } catch (const UserError& e) {
    return refused("construction", e.what());
  } catch (const std::exception& e) {
    return disagree("internal error", std::string("construction: ") + e.what());
  }
  try {
    o = run_levels(p, options, built);
  } catch (const std::exception& e) {
    return disagree("internal error", e.what());
  }
  if (!options.verify || o.verdict == Verdict::kRefused) return o;
  try {
    KernelProofOptions vopt;
    vopt.timeout_ms = options.verify_timeout_ms;
    KernelProofs proofs = verify_kernel(built.kernel, find_target(p.target), vopt);
    o.verify_ran = true;
    o.verify_all_proved = proofs.all_proved();
    for (const KernelCheck& c : proofs.checks) {
      if (c.result == "proved") continue;
      // Bank conflicts and misalignment are the program's choice of layouts, not a fault of
      // Tessel: counted by family. Any other check that fails is listed by its claim.
      std::string family = c.what.find("no bank conflicts") != std::string::npos
                               ? "bank conflicts (performance, not a bug)"
                           : c.what.find("alignment") != std::string::npos ? "alignment"
                                                                           : blur_reason(c.what);
      o.verify_failed.push_back(c.result + ": " + family);
    }
  } catch (const UserError& e) {
    o.verify_failed.push_back("error: " + blur_reason(e.what()));
  } catch (const std::exception& e) {
    if (o.verdict == Verdict::kAgree)
      return disagree("internal error in verify", std::string("verify: ") + e.what());
  }
  if (o.verdict == Verdict::kDisagree && o.verify_all_proved) {
    o.detail += "\n(verify proved every check of this kernel: a second bug)";
  }
  return o;
}

namespace {

/// `p` without step `i` and without every step that then reads a buffer nothing wrote.
Program without_dependents(const Program& p, int i) {
  Program q = p;
  q.steps.clear();
  std::vector<bool> written(p.buffers.size(), false);
  for (int k = 0; k < static_cast<int>(p.steps.size()); ++k) {
    const Step& s = p.steps[k];
    if (k == i) continue;
    bool ok = true;
    for (int b : step_reads(s)) {
      if (!written[b]) ok = false;
    }

    if (!ok) continue;
    q.steps.push_back(s);
    if (s.dst >= 0) written[s.dst] = true;
  }
  return q;
}

}  // namespace

Program shrink(const Program& start, const std::function<bool(const Program&)>& still_fails,
               int budget) {
  Program best = start;
  int tried = 0;
  auto attempt = [&](Program q) {
    if (tried >= budget) return false;
    q = drop_unused_buffers(q);
    if (invalid_reason(q)) return false;
    ++tried;
    if (!still_fails(q)) return false;
    best = q;
    return true;
  };
  bool changed = true;
  while (changed && tried < budget) {
    changed = false;
    for (int i = static_cast<int>(best.steps.size()) - 1; i >= 0; --i) {
      if (i >= static_cast<int>(best.steps.size())) continue;
      Program q = best;
      q.steps.erase(q.steps.begin() + i);
      if (attempt(q)) {
        changed = true;
        continue;
      }
      // The step with every later step that reads what it wrote.
      q = without_dependents(best, i);
      if (q.steps.size() + 1 < best.steps.size()) changed |= attempt(q);
    }
    // Sizes and options, each toward its simplest value.
    std::vector<std::function<bool(Program&)>> edits = {
        [](Program& q) { return q.grid > 1 ? (q.grid = 1, true) : false; },
        [](Program& q) { return q.symbolic ? (q.symbolic = false, true) : false; },
        [](Program& q) {
          bool any = q.ragged_rows || q.ragged_cols || q.ragged_k;
          q.ragged_rows = q.ragged_cols = q.ragged_k = 0;
          return any;
        },
        [](Program& q) { return q.k_tiles > 1 ? (q.k_tiles = 1, true) : false; },
        [](Program& q) { return q.R > 16 ? (q.R /= 2, true) : false; },
        [](Program& q) { return q.C > 16 ? (q.C /= 2, true) : false; },
        [](Program& q) { return q.K > 16 ? (q.K = 16, true) : false; },
        [](Program& q) {
          int warp = q.target.rfind("gfx", 0) == 0 ? 64 : 32;
          return q.threads > warp ? (q.threads = warp * ((q.threads / warp + 1) / 2), true) : false;
        },
    };
    for (auto& edit : edits) {
      Program q = best;
      if (edit(q)) changed |= attempt(q);
    }
    for (size_t i = 0; i < best.buffers.size(); ++i) {
      Program q = best;
      FBuffer& b = q.buffers[i];
      if (b.annotate == 0 && !b.f16) continue;
      b.annotate = 0;
      b.f16 = false;
      changed |= attempt(q);
    }
    for (size_t i = 0; i < best.steps.size(); ++i) {
      Program q = best;
      Step& s = q.steps[i];
      if (s.stages > 0) {
        --s.stages;
        changed |= attempt(q);
        continue;
      }
      bool gemm = s.kind == StepKind::kGemm || s.kind == StepKind::kPipeline;
      // An accumulating step that clears instead no longer needs the steps before it.
      if ((gemm || s.kind == StepKind::kReduce || s.kind == StepKind::kPipeSum) && !s.flag) {
        s.flag = true;
        changed |= attempt(q);
        continue;
      }
      if (gemm && s.op != 0) {
        s.op = 0;
        changed |= attempt(q);
        continue;
      }
      if (s.trans_a || s.trans_b || s.a_scope || s.b_scope) {
        s.trans_a = s.trans_b = false;
        s.a_scope = s.b_scope = 0;
        changed |= attempt(q);
      }
    }
  }
  return best;
}

}  // namespace tessel::fuzz
