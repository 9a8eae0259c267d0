// The linear-attention workloads (Mamba-2 chunk_state and chunk_scan): hand-checked references,
// tile level against the reference, thread level on sm80 and gfx942, proofs, the kernel files
// and compiled CUDA/HIP.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "codegen/emit.h"
#include "codegen/toolchain.h"
#include "core/kernel_equal.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "examples/registry.h"
#include "examples/run_example.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

const char* const kWorkloads[] = {"chunk_state", "chunk_scan", "linear_attention"};

/// Small shapes with a ragged last chunk (200 = 3 chunks of 64 + 8) and, for the SSD kernels,
/// two groups of B/C.
std::map<std::string, std::string> ragged(const std::string& name) {
  if (name == "linear_attention") return {{"batch", "2"}, {"heads", "2"}, {"seq_len", "200"}};
  return {{"batch", "2"}, {"nheads", "4"}, {"ngroups", "2"}, {"seq_len", "200"}};
}

std::vector<std::string> with_defines(std::vector<std::string> args,
                                      const std::map<std::string, std::string>& defines) {
  for (const auto& [k, v] : defines) {
    args.push_back("-D");
    args.push_back(k + "=" + v);
  }
  return args;
}

/// Tensors of `example` at `defines`, every element zero.
TensorMap zero_tensors(const Example& e, const std::map<std::string, std::string>& defines) {
  Kernel k = e.build(make_params(e, defines));
  TensorMap t = make_tensors(k, {}, {}, 0);
  for (auto& [name, tensor] : t) {
    for (int64_t i = 0; i < tensor.size(); ++i) tensor.set(i, 0);
  }
  return t;
}

/// `name` (2 heads, seq_len 512) at tile level on seeded inputs, and its reference with the
/// error bounds on the same inputs.
std::tuple<const Example*, TensorMap, TensorMap> tile_level_and_reference(const std::string& name) {
  const Example* e = find_example(name);
  REQUIRE(e);
  REQUIRE(e->tolerance);
  Params p = make_params(*e, {{"nheads", "2"}, {"seq_len", "512"}});
  Kernel k = e->build(p);
  TensorMap t = make_tensors(k, {}, e->outputs, 5);
  TensorMap expected = t;
  run_tile_level(k, t);
  e->reference(p, expected);
  return {e, std::move(t), std::move(expected)};
}

/// `actual` within `want`'s per-element error bound (and the example's tolerance).
void check_within_bound(const HostTensor& actual, const HostTensor& want, const Tolerance& tol,
                        const HostTensor& bound) {
  Comparison kernel = compare(actual, want, tol, &bound);
  INFO("kernel: max_abs_err " << kernel.max_abs_err << ", mismatches " << kernel.mismatches);
  CHECK(kernel.passed);
}

}  // namespace

TEST_SUITE("linear attention") {
  TEST_CASE("the chunk_state reference sums each position's decayed outer product") {
    // One head, headdim = dstate = 1, one chunk of 2 positions: x = (1, 2), B = (3, 5), dt = (1,
    // 1), dA_cumsum = (0, 1). states = x0 B0 e^(dA1 - dA0) dt0 + x1 B1 e^0 dt1 = 3e + 10.
    const Example* e = find_example("chunk_state");
    REQUIRE(e);
    std::map<std::string, std::string> d = {{"nheads", "1"},  {"seq_len", "2"}, {"chunk_size", "2"},
                                            {"headdim", "1"}, {"dstate", "1"},  {"block_K", "2"}};
    TensorMap t = zero_tensors(*e, d);
    t.at("x").set(0, 1), t.at("x").set(1, 2);
    t.at("B").set(0, 3), t.at("B").set(1, 5);
    t.at("dt").set(0, 1), t.at("dt").set(1, 1);
    t.at("dA_cumsum").set(1, 1);
    e->reference(make_params(*e, d), t);
    CHECK(t.at("states").at(0) == doctest::Approx(3 * std::exp(1.0) + 10).epsilon(1e-3));
    // Its bound (examples/chunk_state.cpp), u = 2^-11, a = dA log2e: position 0 has a_last =
    // log2e, a_0 = 0, |a_last - a_0| = log2e, so eps = ln2 u 3 log2e + 4u = 7u on the term 3e;
    // position 1 has eps = ln2 u 2 log2e + 4u = 6u on the term 10. Twice their sum (gamma =
    // 4 2^-24 adds ~1e-5): 2 (21e + 60) u = 0.1143, times 1 + 2^-9.
    const double u = std::ldexp(1.0, -11);
    CHECK(t.at(error_bound_name("states")).at(0) ==
          doctest::Approx(2 * (21 * std::exp(1.0) + 60) * u * (1 + std::ldexp(1.0, -9)))
              .epsilon(1e-2));
  }

  TEST_CASE("the chunk_scan reference adds the decayed state, the causal chunk and the skip") {
    // One head, headdim = dstate = 1, one chunk of 2 positions; C = (1, 1), prev_state = 2,
    // dA_cumsum = (0, 1), dt = (1, 1), cb = [[1, 7], [1, 1]] (7 lies above the diagonal and must
    // not count), x = (1, 3), D = 0.5:
    //   y0 = e^0 * 1 * 2 + cb00 x0 + 0.5 x0           = 2 + 1 + 0.5       = 3.5
    //   y1 = e^1 * 1 * 2 + cb10 e^(1-0) x0 + cb11 x1 + 0.5 x1 = 2e + e + 3 + 1.5 = 3e + 4.5
    const Example* e = find_example("chunk_scan");
    REQUIRE(e);
    std::map<std::string, std::string> d = {{"nheads", "1"},  {"seq_len", "2"}, {"chunk_size", "2"},
                                            {"headdim", "1"}, {"dstate", "1"},  {"block_M", "2"},
                                            {"block_K", "2"}};
    TensorMap t = zero_tensors(*e, d);
    t.at("C").set(0, 1), t.at("C").set(1, 1);
    t.at("prev_states").set(0, 2);
    t.at("dA_cumsum").set(1, 1);
    t.at("dt").set(0, 1), t.at("dt").set(1, 1);
    t.at("cb").set(0, 1), t.at("cb").set(1, 7), t.at("cb").set(2, 1), t.at("cb").set(3, 1);
    t.at("x").set(0, 1), t.at("x").set(1, 3);
    t.at("D").set(0, 0.5);
    e->reference(make_params(*e, d), t);
    CHECK(t.at("Output").at(0) == doctest::Approx(3.5).epsilon(1e-3));
    CHECK(t.at("Output").at(1) == doctest::Approx(3 * std::exp(1.0) + 4.5).epsilon(1e-3));
  }

  TEST_CASE("the chunk_scan reference takes each decay's own exp when dA_cumsum is large") {
    // The case above with dA_cumsum = (400, 401) and no state (C = 0): past |dA| = 300 the
    // reference takes exp(dA[l] - dA[s]) directly instead of exp(dA[l]) exp(-dA[s]).
    //   y0 = cb00 x0 + 0.5 x0 = 1.5;  y1 = cb10 e^(401-400) x0 + cb11 x1 + 0.5 x1 = e + 4.5.
    const Example* e = find_example("chunk_scan");
    REQUIRE(e);
    std::map<std::string, std::string> d = {{"nheads", "1"},  {"seq_len", "2"}, {"chunk_size", "2"},
                                            {"headdim", "1"}, {"dstate", "1"},  {"block_M", "2"},
                                            {"block_K", "2"}};
    TensorMap t = zero_tensors(*e, d);
    t.at("prev_states").set(0, 2);
    t.at("dA_cumsum").set(0, 400), t.at("dA_cumsum").set(1, 401);
    t.at("dt").set(0, 1), t.at("dt").set(1, 1);
    t.at("cb").set(0, 1), t.at("cb").set(1, 7), t.at("cb").set(2, 1), t.at("cb").set(3, 1);
    t.at("x").set(0, 1), t.at("x").set(1, 3);
    t.at("D").set(0, 0.5);
    e->reference(make_params(*e, d), t);
    CHECK(t.at("Output").at(0) == doctest::Approx(1.5).epsilon(1e-3));
    CHECK(t.at("Output").at(1) == doctest::Approx(std::exp(1.0) + 4.5).epsilon(1e-3));
    CHECK(std::isfinite(t.at(error_bound_name("Output")).at(1)));
  }

  TEST_CASE("the chunk_scan reference and its bound equal the formulas summed term by term") {
    // Random inputs, two chunks (the second ragged: 6 = 4 + 2 positions), two heads, three
    // state dimensions. The reference (triangular products, grouped bound terms) against the
    // formulas of examples/chunk_scan.cpp evaluated one term at a time:
    //   y = e^dA[l] sum_n C[l,n] S[p,n] + sum_{s<=l} cb[l,s] e^(dA[l]-dA[s]) dt[s] x[s,p] + D
    //   x[l,p] bound = 2 (sum_s eps_w |W x| + eps_d(l) T + u |D x| + gamma M) (1 + 2^-9), with T
    //   the state terms' magnitudes and M every term's. Both are rounded to f16 when stored, so
    //   they agree to one f16 rounding (2^-11 relative, 2^-24 absolute for subnormals).
    const Example* e = find_example("chunk_scan");
    REQUIRE(e);
    std::map<std::string, std::string> d = {{"nheads", "2"},  {"seq_len", "6"}, {"chunk_size", "4"},
                                            {"headdim", "2"}, {"dstate", "3"},  {"block_M", "4"},
                                            {"block_N", "2"}, {"block_K", "4"}};
    Params p = make_params(*e, d);
    TensorMap t = make_tensors(e->build(p), {}, {}, 11);
    e->reference(p, t);
    const HostTensor &x = t.at("x"), &C = t.at("C"), &S = t.at("prev_states"), &cb = t.at("cb"),
                     &dt = t.at("dt"), &dA = t.at("dA_cumsum"), &D = t.at("D");
    const double u = std::ldexp(1.0, -11), ln2 = std::log(2.0);
    const double gamma = (3 + 4 + 2) * std::ldexp(1.0, -24);
    const int64_t H = 2, P = 2, N = 3, Q = 4, NC = 2, L = 6;
    int checked = 0;
    for (int64_t pos = 0; pos < L; ++pos) {
      const int64_t c = pos / Q, l = pos % Q;
      for (int64_t h = 0; h < H; ++h) {
        auto a = [&](int64_t k) { return dA.at((h * NC + c) * Q + k) / ln2; };  // dA log2e
        const double decay = std::exp(dA.at((h * NC + c) * Q + l));
        for (int64_t i = 0; i < P; ++i) {
          double y = 0, state = 0, err = 0, mag = 0;
          for (int64_t n = 0; n < N; ++n) {
            y += decay * C.at(pos * N + n) * S.at(((c * H + h) * P + i) * N + n);
            state += decay * std::fabs(C.at(pos * N + n) * S.at(((c * H + h) * P + i) * N + n));
          }
          for (int64_t j = 0; j <= l && c * Q + j < L; ++j) {
            const double w = cb.at((c * Q + l) * Q + j) *
                             std::exp(dA.at((h * NC + c) * Q + l) - dA.at((h * NC + c) * Q + j)) *
                             dt.at((h * NC + c) * Q + j);
            const double term = w * x.at(((c * Q + j) * H + h) * P + i);
            y += term;
            err += (ln2 * u * (std::fabs(a(l)) + std::fabs(a(j)) + 2 * std::fabs(a(l) - a(j))) +
                    3 * u) *
                   std::fabs(term);
            mag += std::fabs(term);
          }
          const double skip = D.at(h) * x.at((pos * H + h) * P + i);
          y += skip;
          err += (2 * ln2 * u * std::fabs(a(l)) + u + std::ldexp(1.0, -23)) * state +
                 u * std::fabs(skip);
          mag += state + std::fabs(skip);
          const double bound = 2 * (err + gamma * mag) * (1 + std::ldexp(1.0, -9));
          const int64_t flat = (pos * H + h) * P + i;
          INFO("pos " << pos << " head " << h << " p " << i);
          CHECK(std::fabs(t.at("Output").at(flat) - y) <= std::ldexp(std::fabs(y), -11) + 1e-7);
          const double got = t.at(error_bound_name("Output")).at(flat);
          CHECK(std::fabs(got - bound) <= std::ldexp(bound, -10) + std::ldexp(1.0, -24));
          ++checked;
        }
      }
    }
    CHECK(checked == L * H * P);
  }

  TEST_CASE("the linear_attention reference sums q . k v over the positions up to each query") {
    // dim_k = dim_v = 1 (scale 1 / sqrt(1) = 1), two positions: q = (1, 2), k = (3, 4),
    // v = (5, 6). O0 = q0 k0 v0 = 15; O1 = q1 (k0 v0 + k1 v1) = 2 (15 + 24) = 78.
    const Example* e = find_example("linear_attention");
    REQUIRE(e);
    std::map<std::string, std::string> d = {
        {"heads", "1"}, {"seq_len", "2"}, {"dim_k", "1"}, {"dim_v", "1"}};
    TensorMap t = zero_tensors(*e, d);
    t.at("Q").set(0, 1), t.at("Q").set(1, 2);
    t.at("K").set(0, 3), t.at("K").set(1, 4);
    t.at("V").set(0, 5), t.at("V").set(1, 6);
    e->reference(make_params(*e, d), t);
    CHECK(t.at("O").at(0) == 15);
    CHECK(t.at("O").at(1) == 78);
  }

  TEST_CASE("each workload equals its double-precision reference at tile level") {
    for (const char* name : kWorkloads) {
      const Example* e = find_example(name);
      REQUIRE(e);
      for (const auto& defines : {std::map<std::string, std::string>{}, ragged(name)}) {
        ExampleRun run = run_example_tile(*e, make_params(*e, defines), 3);
        INFO(name << ": max_abs_err " << run.max_abs_err << ", max_rel_err " << run.max_rel_err);
        CHECK(run.passed);
        // The fp16 output within the f16 tolerance (1e-2 absolute + 1e-2 relative).
        CHECK(run.max_abs_err < 5e-2);
      }
    }
  }

  TEST_CASE("chunk_scan's per-element error bound passes the kernel and fails a dropped term") {
    // The reference bounds each output's rounding error (examples/chunk_scan.cpp derives it);
    // the tile level must lie within it. The same output with the diagonal term of the causal
    // sum dropped (a mask `s < l` where it should be `s <= l`: minus cb[l][l] * e^0 * dt[l] *
    // x[l]) must not: that error is a whole term, about |cb dt x| ~ 0.1, where the bound is a few
    // times 2^-11 of the terms' magnitudes.
    auto [e, t, expected] = tile_level_and_reference("chunk_scan");
    const HostTensor& bound = expected.at(error_bound_name("Output"));
    const HostTensor& want = expected.at("Output");
    check_within_bound(t.at("Output"), want, *e->tolerance, bound);

    HostTensor dropped = t.at("Output");
    const HostTensor &x = t.at("x"), &cb = t.at("cb"), &dt = t.at("dt");
    const int64_t batch = x.shape()[0], seq = x.shape()[1], heads = x.shape()[2],
                  dim = x.shape()[3], nchunks = cb.shape()[1], Q = cb.shape()[3];
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t pos = 0; pos < seq; ++pos) {
        const int64_t c = pos / Q, l = pos % Q;
        for (int64_t h = 0; h < heads; ++h) {
          // ngroups = 1: every head reads group 0's cb.
          const double w = cb.at(((b * nchunks + c) * Q + l) * Q + l) *
                           dt.at(((b * heads + h) * nchunks + c) * Q + l);
          for (int64_t i = 0; i < dim; ++i) {
            const int64_t flat = ((b * seq + pos) * heads + h) * dim + i;
            dropped.set(flat, dropped.at(flat) - w * x.at(flat));
          }
        }
      }
    }
    Comparison bug = compare(dropped, want, *e->tolerance, &bound);
    INFO("dropped term: " << bug.mismatches << " of " << want.size() << " outside the bound");
    CHECK_FALSE(bug.passed);
    CHECK(bug.mismatches > want.size() / 2);
  }

  TEST_CASE(
      "chunk_state's per-element error bound passes the kernel and fails a dropped position") {
    // The reference bounds each state's rounding error (examples/chunk_state.cpp derives it);
    // the tile level must lie within it. The same states without each chunk's last position
    // (a loop one position short: minus x[l] B[l] dt[l], its decay e^0 = 1) must not: that error
    // is a whole term, |x B dt| ~ 0.1, where the bound is a few 2^-11 of the terms' magnitudes.
    auto [e, t, expected] = tile_level_and_reference("chunk_state");
    const HostTensor& bound = expected.at(error_bound_name("states"));
    const HostTensor& want = expected.at("states");
    check_within_bound(t.at("states"), want, *e->tolerance, bound);

    HostTensor dropped = t.at("states");
    const HostTensor &x = t.at("x"), &B = t.at("B"), &dt = t.at("dt");
    // x [batch, seq, heads, dim], B [batch, seq, groups = 1, dstate], dt [batch, heads, chunks,
    // Q], states [batch, chunks, heads, dim, dstate].
    const int64_t batch = x.shape()[0], seq = x.shape()[1], heads = x.shape()[2],
                  dim = x.shape()[3], dstate = B.shape()[3], nchunks = dt.shape()[2],
                  Q = dt.shape()[3];
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t c = 0; c < nchunks; ++c) {
        const int64_t pos = c * Q + Q - 1;
        for (int64_t h = 0; h < heads; ++h) {
          const double w = dt.at(((b * heads + h) * nchunks + c) * Q + Q - 1);
          for (int64_t i = 0; i < dim; ++i) {
            for (int64_t n = 0; n < dstate; ++n) {
              const int64_t flat = (((b * nchunks + c) * heads + h) * dim + i) * dstate + n;
              dropped.set(flat, dropped.at(flat) - x.at(((b * seq + pos) * heads + h) * dim + i) *
                                                       B.at((b * seq + pos) * dstate + n) * w);
            }
          }
        }
      }
    }
    Comparison bug = compare(dropped, want, *e->tolerance, &bound);
    INFO("dropped position: " << bug.mismatches << " of " << want.size() << " outside the bound");
    CHECK_FALSE(bug.passed);
    // Not every state: the worst-case bound sums 256 positions' errors of ~7u each, twice, so
    // about 2 * 256 * 7 * 2^-11 = 1.75 times an average term; a dropped term shows where it is
    // larger than that (here about 40% of the states, by a seeded run; a quarter is asserted).
    CHECK(bug.mismatches > want.size() / 4);
  }

  TEST_CASE("each workload runs at thread level like its tile level on sm80 and gfx942") {
    for (const char* name : kWorkloads) {
      for (const char* target : {"sm80", "gfx942"}) {
        CliResult r = run_tessel(with_defines(
            {"run", name, "--level", "thread", "--json", "--target", target}, ragged(name)));
        INFO(name << " on " << target << ": " << r.err << r.out.substr(0, 400));
        REQUIRE(r.status == 0);
        auto j = nlohmann::json::parse(r.out);
        CHECK(j["passed"] == true);
        CHECK(j["tile"]["matches"] == true);
        CHECK(j["sim"]["findings"].empty());
        if (std::string(target) == "sm80") CHECK(j["sim"]["shared"]["bank_conflicts"] == 0);
      }
    }
  }

  TEST_CASE("verify proves each workload with no bank conflicts on sm80") {
    for (const char* name : kWorkloads) {
      CliResult r = run_tessel({"verify", name, "--json", "--target", "sm80"});
      INFO(name << ": " << r.err << r.out.substr(0, 2000));
      CHECK(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["failed"] == 0);
      CHECK(j["proved"].get<int>() > 20);
    }
  }

  TEST_CASE("verify proves each workload with no bank conflicts on gfx942") {
    // The MFMA operand tiles use swizzle_mfma (docs/layouts.md): the 8-byte operand loads, the
    // 2-byte loads of operands stored N-contiguous and the copies are all conflict-free.
    // chunk_scan copies cb_shared into its fragment before the causal mask (as TileLang's
    // example): masked element loads of cb_shared would stay 2-way under any layout that keeps
    // the 8-byte granules the copy writes (docs/layouts.md, "Masked element loads").
    for (const char* name : kWorkloads) {
      CliResult r = run_tessel({"verify", name, "--json", "--target", "gfx942"});
      INFO(name << ": " << r.err << r.out.substr(0, 2000));
      CHECK(r.status == 0);
      auto j = nlohmann::json::parse(r.out);
      CHECK(j["failed"] == 0);
      CHECK(j["proved"].get<int>() > 20);
    }
  }

  TEST_CASE("the causal loop's block-dependent extent still lets its copies be asynchronous") {
    // chunk_scan's k loop runs ceildiv((by + 1) * block_M, block_K) steps: with by < 2 (chunk 128,
    // block_M 64) k stays below 2, so the cb tile copy is in bounds and becomes cp.async, not a
    // guarded element-by-element copy.
    CliResult r = run_tessel({"lower", "chunk_scan", "-D", "chunk_size=128"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("T.cp_async_16(cb_shared[") != std::string::npos);
  }

  TEST_CASE("each kernel file equals its C++ built-in") {
    for (const char* name : kWorkloads) {
      const Example* e = find_example(name);
      REQUIRE(e);
      for (const auto& defines : {std::map<std::string, std::string>{}, ragged(name)}) {
        ParsedKernel parsed = parse_kernel_file(
            std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/" + name + ".py", defines);
        auto diff = kernel_difference(e->build(make_params(*e, defines)), parsed.kernel);
        CHECK_MESSAGE(!diff, name << ": " << (diff ? *diff : ""));
      }
    }
  }

  TEST_CASE("a chunk that a tile would cross is a usage error naming the parameters") {
    CliResult r = run_tessel({"run", "chunk_state", "-D", "chunk_size=96"});
    CHECK(r.status == 2);
    CHECK(r.err.find("chunk_size=96 is not a multiple of block_K=64") != std::string::npos);
    CliResult g = run_tessel({"run", "chunk_scan", "-D", "nheads=3", "-D", "ngroups=2"});
    CHECK(g.status == 2);
    CHECK(g.err.find("nheads=3 is not a multiple of ngroups=2") != std::string::npos);
  }

  TEST_CASE("each workload's CUDA and HIP compile where the compilers are present") {
    for (const char* target_name : {"sm80", "gfx942"}) {
      const Target& target = find_target(target_name);
      std::string dir =
          (std::filesystem::temp_directory_path() / ("tessel_linear_attention_" + target.name))
              .string();
      for (const char* name : kWorkloads) {
        const Example* e = find_example(name);
        REQUIRE(e);
        Kernel k = lower_kernel(e->build(make_params(*e, {})), target).kernel;
        CompileResult r = compile_device_code(emit_source(k, target), target, dir);
        if (!r.skipped.empty()) {
          MESSAGE("skipped compiling for " << target.name << ": " << r.skipped);
          break;
        }
        INFO(name << " for " << target.name << ": " << r.command << "\n" << r.log.substr(0, 2000));
        CHECK(r.compiled);
      }
    }
  }

}  // TEST_SUITE
