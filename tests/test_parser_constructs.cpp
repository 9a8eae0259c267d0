// Constructs inside kernels that real TileLang files use (T.clamp, `.astype`, the T.Serial
// alias, T.copy hints, T.Parallel(loop_layout=), atomics with memory_order=,
// T.no_set_max_nreg): each kernel runs from its text at tile level and, lowered, at thread
// level against values derived by hand; and the constructs Tessel refuses are named as what
// they are, never with a message about something else.
#include <doctest/doctest.h>

#include <functional>

#include "core/builtin_layouts.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "interp/print_output.h"
#include "interp/thread_interpreter.h"
#include "interp/tile_interpreter.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

std::string test_kernel(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/" + name;
}

/// A tensor whose element at flat index i is f(i).
HostTensor tensor(
    DataType dtype, std::vector<int64_t> shape,
    const std::function<double(int64_t)>& f = [](int64_t) { return 0.0; }) {
  HostTensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.set(i, f(i));
  return t;
}

/// Runs `kernel` at tile level on `tile` and, lowered for sm80, at thread level on a copy of
/// its inputs; returns the thread level's tensors.
TensorMap run_levels(const Kernel& kernel, TensorMap& tile) {
  TensorMap thread = tile;
  run_tile_level(kernel, tile);
  run_thread_level(lower_kernel(kernel, find_target("sm80")).kernel, thread);
  return thread;
}

/// The first line of the error parsing `source` raises, or "no error".
std::string error_of(const std::string& source) {
  try {
    parse_kernel(source, "k.py");
  } catch (const UserError& e) {
    std::string m = e.what();
    return m.substr(0, m.find('\n'));
  }
  return "no error";
}

/// A kernel file whose kernel body is `body` (indented by 12), over A (64,) and B (64,).
std::string kernel_with(const std::string& body) {
  return "import tilelang.language as T\n"
         "\n"
         "\n"
         "def k(dtype=\"float32\"):\n"
         "    @T.prim_func\n"
         "    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype)):\n"
         "        with T.Kernel(1, threads=64) as bx:\n" +
         body +
         "\n"
         "    return main\n";
}

}  // namespace

TEST_SUITE("parser constructs") {
  TEST_CASE("clamp_cast_count.py clamps, casts and counts the clipped elements at both levels") {
    ParsedKernel p =
        parse_kernel_file(test_kernel("clamp_cast_count.py"), {{"M", "8"}, {"N", "16"}});
    // A[k] = k % 11 - 5 takes the values -5..5; [lo, hi] = [-2, 3] clips -5, -4, -3, 4 and 5.
    auto a = [](int64_t k) { return static_cast<double>(k % 11 - 5); };
    TensorMap tile{{"A", tensor(DataType::f32(), {8, 16}, a)},
                   {"B", tensor(DataType::f16(), {8, 16})},
                   {"Clipped", tensor(DataType::i32(), {1})}};
    TensorMap thread = run_levels(p.kernel, tile);
    for (TensorMap* t : {&tile, &thread}) {
      // 128 elements = 11 full cycles of 11 values (5 clipped each: 55) and k = 121..127, whose
      // values -5..1 clip three more: 58.
      CHECK((*t)["Clipped"].at(0) == 58);
      for (int64_t k = 0; k < 128; ++k) {
        double want = std::min(std::max(a(k), -2.0), 3.0);
        CHECK((*t)["B"].at(k) == want);
        CHECK((*t)["A"].at(k) == want);  // clamped in place (twice, through T.Serial)
      }
    }
  }

  TEST_CASE("clamp_cast_count.py goes through print, both runs, verify and emit") {
    for (std::vector<std::string> command : {std::vector<std::string>{"print"},
                                             {"run", "--level", "tile"},
                                             {"run", "--level", "thread"},
                                             {"verify"},
                                             {"emit", "--target", "cuda"}}) {
      CAPTURE(command[0]);
      command.insert(command.begin() + 1, test_kernel("clamp_cast_count.py"));
      for (const char* d : {"M=8", "N=16"}) command.insert(command.end(), {"-D", d});
      CliResult r = run_tessel(command);
      CHECK_MESSAGE(r.status == 0, r.err);
    }
  }

  TEST_CASE("T.clamp is T.min(T.max(x, lo), hi) and `.astype(dtype)` is a cast") {
    ParsedKernel p = parse_kernel(kernel_with("            for i in T.Parallel(64):\n"
                                              "                B[i] = T.clamp(A[i], -1.5, 2.0)"
                                              ".astype(\"int32\").astype(dtype)\n"),
                                  "k.py");
    std::string printed = print_kernel(p.kernel);
    CHECK(printed.find(
              "B[i] = T.cast(T.cast(T.min(T.max(A[i], -1.5), 2.0), \"int32\"), \"float32\")") !=
          std::string::npos);
  }

  TEST_CASE("T.Serial, T.Unroll and T.Vectorized are the loops T.serial, T.unroll, T.vectorized") {
    ParsedKernel p = parse_kernel(kernel_with("            for i in T.Serial(2):\n"
                                              "                for j in T.Unroll(4):\n"
                                              "                    for v in T.Vectorized(8):\n"
                                              "                        B[i * 32 + j * 8 + v] = "
                                              "A[i * 32 + j * 8 + v]\n"),
                                  "k.py");
    std::string printed = print_kernel(p.kernel);
    CHECK(printed.find("for i in T.serial(2):") != std::string::npos);
    CHECK(printed.find("for j in T.unroll(4):") != std::string::npos);
    CHECK(printed.find("for v in T.vectorized(8):") != std::string::npos);
  }

  TEST_CASE("T.no_set_max_nreg and the hints of T.copy and T.Parallel leave the kernel as is") {
    std::string plain = kernel_with(
        "            S = T.alloc_shared((64,), dtype)\n"
        "            T.copy(A, S)\n"
        "            for i in T.Parallel(64):\n"
        "                B[i] = S[i]\n");
    std::string hinted = kernel_with(
        "            T.no_set_max_nreg()\n"
        "            S = T.alloc_shared((64,), dtype)\n"
        "            T.copy(A, S, coalesced_width=4, disable_tma=True, "
        "eviction_policy=\"evict_first\")\n"
        "            for i in T.Parallel(64, loop_layout=T.Fragment([64], "
        "forward_thread_fn=lambda i: i)):\n"
        "                B[i] = S[i]\n");
    CHECK(print_kernel(parse_kernel(hinted, "k.py").kernel) ==
          print_kernel(parse_kernel(plain, "k.py").kernel));
  }

  TEST_CASE("memory_order= is accepted with TileLang's names and refused with another") {
    std::string body = "            T.atomic_add(B[0], A[0], memory_order=ORDER)\n";
    for (const char* order : {"\"relaxed\"", "\"release\"", "\"seq_cst\"", "None"}) {
      CAPTURE(order);
      std::string b = body;
      b.replace(b.find("ORDER"), 5, order);
      CHECK(error_of(kernel_with(b)) == "no error");
    }
    std::string b = body;
    b.replace(b.find("ORDER"), 5, "\"strong\"");
    CHECK(error_of(kernel_with(b)) ==
          "k.py:8:51: T.atomic_add: memory_order is \"relaxed\", \"consume\", \"acquire\", "
          "\"release\", \"acq_rel\" or \"seq_cst\", got \"strong\"");
    CHECK(error_of(kernel_with("            T.atomic_add(B[0], A[0], return_prev=True)\n")) ==
          "k.py:8:50: T.atomic_add(..., return_prev=True) is not supported: an atomic here is "
          "a statement; its previous value cannot be read");
  }

  TEST_CASE("Hopper's low-level TMA calls and wgmma are refused as such, as a statement or value") {
    const char* kHopper = " (Hopper TMA, wgmma or cluster barriers) is not supported yet";
    struct Case {
      const char* line;
      int column;
      const char* name;
    };
    for (Case c :
         {Case{"            T.tma_store(A)\n", 13, "T.tma_store"},
          Case{"            T.wgmma_gemm(A, B, C)\n", 13, "T.wgmma_gemm"},
          Case{"            d = T.alloc_descriptor()\n", 17, "T.alloc_descriptor"},
          Case{"            T.mbarrier_arrive_cluster(bar)\n", 13, "T.mbarrier_arrive_cluster"}}) {
      CAPTURE(c.line);
      std::string e = error_of(kernel_with(c.line));
      CHECK(e.rfind("k.py:8:" + std::to_string(c.column) + ": " + c.name + kHopper, 0) == 0);
    }
  }

  TEST_CASE("an allocator Tessel lacks is named as unsupported, with the ones it has") {
    CHECK(error_of(kernel_with("            d = T.alloc_descriptor()\n")).find("Hopper") !=
          std::string::npos);
    CHECK(error_of(kernel_with("            t = T.alloc_tmem([128, 256], \"float32\")\n")) ==
          "k.py:8:17: T.alloc_tmem is a Blackwell (sm100) tensor-memory construct, which Tessel "
          "does not support; use T.alloc_fragment accumulators with T.gemm");
    CHECK(error_of(kernel_with("            t = T.alloc_something((4, 4), \"float32\")\n")) ==
          "k.py:8:17: T.alloc_something is not supported; the allocations Tessel has are "
          "T.alloc_shared, T.alloc_fragment, T.alloc_local and T.alloc_var");
  }

  TEST_CASE("T.Persistent and T.thread_binding loops say what to write instead") {
    CHECK(error_of(kernel_with("            for i in T.Persistent([4], 8, bx):\n"
                               "                pass\n"))
              .rfind("k.py:8:22: T.Persistent (persistent-kernel tile scheduling) is not "
                     "supported yet",
                     0) == 0);
    CHECK(error_of(kernel_with("            for tx in T.thread_binding(0, 64, "
                               "thread=\"threadIdx.x\"):\n"
                               "                pass\n"))
              .rfind("k.py:8:23: T.thread_binding is TVM TIR's scheduling form, not supported",
                     0) == 0);
  }
}

TEST_SUITE("parser constructs") {
  TEST_CASE("make_swizzled_layout picks TileLang's swizzle by the tile's row width") {
    ParsedKernel p = parse_kernel_file(test_kernel("gemm_swizzle_annotated.py"));
    std::string printed = print_kernel(p.kernel);
    // A_shared (64 x 32 float16): a row is 32 elements = 4 chunks of 8; 32 % 64 != 0 and
    // 32 % 32 == 0, so the 64B swizzle. B_shared (32 x 64): 64 % 64 == 0, the 128B swizzle.
    CHECK(printed.find("A_shared: " + swizzle_64b(64, 32, DataType::f16()).to_string()) !=
          std::string::npos);
    CHECK(printed.find("B_shared: " + swizzle_128b(32, 64, DataType::f16()).to_string()) !=
          std::string::npos);
  }

  TEST_CASE("gemm_swizzle_annotated.py goes through print, both runs, verify and emit") {
    for (std::vector<std::string> command : {std::vector<std::string>{"print"},
                                             {"run", "--level", "tile"},
                                             {"run", "--level", "thread"},
                                             {"verify"},
                                             {"emit", "--target", "cuda"}}) {
      CAPTURE(command[0]);
      command.insert(command.begin() + 1, test_kernel("gemm_swizzle_annotated.py"));
      CliResult r = run_tessel(command);
      CHECK_MESSAGE(r.status == 0, r.err);
    }
  }

  TEST_CASE("the other layout makers build their layouts; Volta's is refused by name") {
    auto annotated = [](const std::string& value) {
      return kernel_with(
          "            S = T.alloc_shared((16, 64), dtype)\n"
          "            T.annotate_layout({S: " +
          value + "})\n");
    };
    auto layout_of = [&](const std::string& value) {
      std::string printed = print_kernel(parse_kernel(annotated(value), "k.py").kernel);
      size_t at = printed.find("{S: ");
      return at == std::string::npos ? printed
                                     : printed.substr(at + 4, printed.find("})") - at - 4);
    };
    DataType f32 = DataType::f32();
    CHECK(layout_of("tilelang.layout.make_full_bank_swizzled_layout(S)") ==
          swizzle_128b(16, 64, f32).to_string());
    CHECK(layout_of("tilelang.layout.make_half_bank_swizzled_layout(S)") ==
          swizzle_64b(16, 64, f32).to_string());
    CHECK(layout_of("tilelang.layout.make_quarter_bank_swizzled_layout(S)") ==
          swizzle_32b(16, 64, f32).to_string());
    CHECK(layout_of("tilelang.layout.make_linear_layout(S)") ==
          Layout::row_major({16, 64}).to_string());
    // float32: 4 elements per 16-byte chunk; 64 % 32 == 0, so the wgmma rule picks 128B too.
    CHECK(layout_of("tilelang.layout.make_wgmma_swizzled_layout(S)") ==
          swizzle_128b(16, 64, f32).to_string());
    CHECK(error_of(annotated("tilelang.layout.make_volta_swizzled_layout(S)")) ==
          "k.py:9:35: make_volta_swizzled_layout is a layout for Volta (sm70) mma, which Tessel "
          "does not target; use make_swizzled_layout");
  }
}

TEST_SUITE("parser constructs") {
  TEST_CASE("chunk_local_cumsum.py scans each chunk forward, in reverse and by maximum") {
    ParsedKernel p = parse_kernel_file(test_kernel("chunk_local_cumsum.py"));
    const int64_t B = 2, S = 64, H = 4, chunk = 16;
    // G[b, s, h] = (7 * s + 3 * h + b) % 9 - 4: small integers, so every sum is exact.
    auto g = [&](int64_t b, int64_t s, int64_t h) {
      return static_cast<double>((7 * s + 3 * h + b) % 9 - 4);
    };
    auto at = [&](int64_t f) { return g(f / (S * H), f / H % S, f % H); };
    DataType f32 = DataType::f32();
    TensorMap tile{{"G", tensor(f32, {B, S, H}, at)},
                   {"O", tensor(f32, {B, S, H})},
                   {"R", tensor(f32, {B, S, H})},
                   {"X", tensor(f32, {B, S, H})}};
    TensorMap thread = run_levels(p.kernel, tile);
    // Chunk 0 of sequence 0, column 0: G = -4, 3, 1, -1, -3, 4, 2, 0, -2, -4, 3, 1, -1, -3, 4, 2
    // (7s % 9 - 4), so O starts -4, -1, 0, -1, -4, 0, 2, 2 and ends at the chunk's sum, 2;
    // R[0] is that sum too, and the running maximum is -4, 3, 3, ...
    CHECK(tile["O"].at(0 * H) == -4);
    CHECK(tile["O"].at(5 * H) == 0);
    CHECK(tile["O"].at(15 * H) == 2);
    CHECK(tile["R"].at(0) == 2);
    CHECK(tile["X"].at(1 * H) == 3);
    for (TensorMap* t : {&tile, &thread}) {
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t c = 0; c < S / chunk; ++c) {
          for (int64_t h = 0; h < H; ++h) {
            double sum = 0, best = -1e9, total = 0;
            for (int64_t s = c * chunk; s < (c + 1) * chunk; ++s) total += g(b, s, h);
            double suffix = total;
            for (int64_t s = c * chunk; s < (c + 1) * chunk; ++s) {
              int64_t f = (b * S + s) * H + h;
              sum += g(b, s, h);
              best = std::max(best, g(b, s, h));
              CHECK((*t)["O"].at(f) == sum);
              CHECK((*t)["R"].at(f) == suffix);  // the sum from s to the chunk's end
              CHECK((*t)["X"].at(f) == best);
              suffix -= g(b, s, h);
            }
          }
        }
      }
    }
  }

  TEST_CASE("chunk_local_cumsum.py goes through print, both runs, verify and emit") {
    for (std::vector<std::string> command : {std::vector<std::string>{"print"},
                                             {"run", "--level", "tile"},
                                             {"run", "--level", "thread"},
                                             {"verify"},
                                             {"emit", "--target", "cuda"}}) {
      CAPTURE(command[0]);
      command.insert(command.begin() + 1, test_kernel("chunk_local_cumsum.py"));
      CliResult r = run_tessel(command);
      CHECK_MESSAGE(r.status == 0, r.err);
    }
  }

  TEST_CASE("a printed scan (a fragment's staging tile included) parses back to itself") {
    std::string printed =
        print_kernel(parse_kernel_file(test_kernel("chunk_local_cumsum.py")).kernel);
    CHECK(printed.find("G_fragment_scan = T.alloc_shared((16, 4), \"float32\")") !=
          std::string::npos);
    CHECK(printed.find("T.cumsum(R_shared") == std::string::npos);
    CHECK(printed.find("T.cumsum(G_shared, R_shared, dim=0, reverse=True)") != std::string::npos);
    CHECK(print_kernel(parse_kernel(printed, "printed.py").kernel) == printed);
  }

  TEST_CASE("T.cumsum checks its regions and dimension") {
    CHECK(error_of(kernel_with("            T.cumsum(A, dim=1)\n")) ==
          "k.py:8:29: T.cumsum: argument 'dim' must be between -1 and 0, got 1");
    CHECK(error_of(kernel_with("            S = T.alloc_shared((32,), dtype)\n"
                               "            T.cumsum(A, S)\n")) ==
          "T.cumsum at k.py:9:13: the regions of 'A' and 'S' differ in shape; dst "
          "must have src's shape");
  }
}

TEST_SUITE("parser constructs") {
  TEST_CASE("scalar kernel parameters take their -D values at both levels") {
    ParsedKernel p = parse_kernel_file(test_kernel("scale_rows_scalar_params.py"),
                                       {{"scale", "2.5"}, {"rows", "37"}});
    // X[r, c] = r - c; Y = 2.5 * X on rows 0..36, 0 on rows 37..63.
    auto x = [](int64_t f) { return static_cast<double>(f / 32 - f % 32); };
    TensorMap tile{{"X", tensor(DataType::f32(), {64, 32}, x)},
                   {"Y", tensor(DataType::f32(), {64, 32})}};
    TensorMap thread = run_levels(p.kernel, tile);
    for (TensorMap* t : {&tile, &thread}) {
      CHECK((*t)["Y"].at(36 * 32 + 1) == 87.5);  // 2.5 * (36 - 1)
      CHECK((*t)["Y"].at(37 * 32) == 0);
      for (int64_t f = 0; f < 64 * 32; ++f)
        CHECK((*t)["Y"].at(f) == (f / 32 < 37 ? 2.5 * x(f) : 0));
    }
  }

  TEST_CASE("an integer scalar parameter not given stays symbolic; a float one must be given") {
    ParsedKernel p =
        parse_kernel_file(test_kernel("scale_rows_scalar_params.py"), {{"scale", "2.5"}});
    REQUIRE(p.kernel->dynamic_vars.size() == 1);
    CHECK(p.kernel->dynamic_vars[0].name() == "rows");
    CHECK(p.params.back().kind == KernelFileParam::Kind::kScalar);
    CHECK(error_of(kernel_with("").replace(kernel_with("").find("B: T.Tensor((64,), dtype)"), 25,
                                           "B: T.Tensor((64,), dtype), eps: T.float32")) ==
          "k.py:6:68: scalar parameter 'eps: T.float32' of kernel 'k' has no value: Tessel "
          "specialises float32 scalar parameters, so give one with -D eps=0.5 (an integer scalar "
          "parameter may stay symbolic)");
    for (std::vector<std::string> command :
         {std::vector<std::string>{"print"}, {"verify"}, {"emit", "--target", "cuda"}}) {
      CAPTURE(command[0]);
      command.insert(command.begin() + 1, test_kernel("scale_rows_scalar_params.py"));
      command.insert(command.end(), {"-D", "scale=0.5"});
      CliResult r = run_tessel(command);
      CHECK_MESSAGE(r.status == 0, r.err);
    }
    CliResult run = run_tessel(
        {"run", test_kernel("scale_rows_scalar_params.py"), "-D", "scale=0.5", "-D", "rows=5"});
    CHECK_MESSAGE(run.status == 0, run.err);
  }
}

TEST_SUITE("parser constructs") {
  TEST_CASE("constructs not supported yet are named as such, never with a message about another") {
    struct Case {
      const char* line;
      const char* message;
    };
    for (Case c :
         {Case{"T.device_assert(A[0] > 0)", "k.py:8:13: T.device_assert is not supported yet"},
          Case{"T.print(A, msg=\"a\")",
               "k.py:8:21: T.print of a whole buffer is not supported yet"},
          Case{"r = T.alloc_reducer((64,), dtype, op=\"sum\")",
               "k.py:8:17: T.alloc_reducer (TileLang's per-thread reducer buffers) is not "
               "supported yet"},
          Case{"T.finalize_reducer(A)", "k.py:8:13: T.finalize_reducer (TileLang's"},
          Case{"g = T.alloc_global((64,), dtype)",
               "k.py:8:17: T.alloc_global makes global scratch that the kernel's launches share: "
               "allocate it in the kernel function's body, before the `with T.Kernel(...)` launch "
               "that first uses it, not inside a launch"},
          Case{"V = T.view(A, (8, 8))", "k.py:8:17: T.view (a view of a buffer's storage"},
          Case{"T.call_extern(\"handle\", \"foo\", A[0])",
               "k.py:8:13: T.call_extern (calling code Tessel cannot see) is not supported "
               "yet"},
          Case{"T.import_source(\"int foo();\")", "k.py:8:13: T.import_source (calling code"},
          Case{"x = T.any_of(A)", "k.py:8:17: T.any_of is not supported yet"},
          Case{"T.loop_break()", "k.py:8:13: T.loop_break is not supported: loops run"},
          Case{"T.atomic_addx2(A[0], B[0])",
               "k.py:8:13: T.atomic_addx2 is not supported; the "
               "atomics Tessel has are T.atomic_add"},
          Case{"x = T.frobnicate(A, (1, 2))",
               "k.py:8:17: T.frobnicate is not a function Tessel supports in expressions"},
          Case{"T.frobnicate(A)",
               "k.py:8:13: T.frobnicate is not a statement Tessel supports; the statements of "
               "T are T.copy"},
          Case{"x = [A[i] for i in range(4)]",
               "k.py:8:23: comprehensions ([x for x in ...]) are not supported"}}) {
      CAPTURE(c.line);
      std::string e = error_of(kernel_with("            " + std::string(c.line) + "\n"));
      CHECK(e.rfind(c.message, 0) == 0);
      CHECK(e.find("must be a number") == std::string::npos);
      CHECK(e.find("line of its own") == std::string::npos);
    }
  }

  TEST_CASE("T.reduce names its kind as a string") {
    std::string body =
        "            S = T.alloc_fragment((64,), dtype)\n"
        "            M = T.alloc_fragment((1,), dtype)\n"
        "            T.copy(A, S)\n"
        "            T.reduce(S, M, \"max\", 0, True)\n";
    std::string printed = print_kernel(parse_kernel(kernel_with(body), "k.py").kernel);
    CHECK(printed.find("T.reduce_max(S, M, dim=0)") != std::string::npos);
    CHECK(error_of(kernel_with(body.replace(body.find("\"max\""), 5, "\"bitand\""))) ==
          "k.py:11:28: T.reduce: reduce_type \"bitand\" is not supported; Tessel reduces with "
          "\"sum\", \"max\", \"min\", \"abssum\" and \"absmax\"");
  }
}

TEST_SUITE("parser constructs") {
  TEST_CASE("T.print writes each printing thread's value, with its block, at both levels") {
    std::string file = test_kernel("print_partial_sums.py");
    ParsedKernel p = parse_kernel_file(file);
    // A[r, c] = c + 100 r: thread t of block r sums columns 4t..4t+3, i.e. 16t + 6 + 400r; the
    // row's total is 120 + 1600 r.
    auto a = [](int64_t f) { return static_cast<double>(f % 16 + 100 * (f / 16)); };
    TensorMap tile{{"A", tensor(DataType::i32(), {2, 16}, a)}, {"S", tensor(DataType::i32(), {2})}};
    TensorMap thread = tile;
    std::ostringstream tile_out, thread_out;
    set_print_output(&tile_out);
    run_tile_level(p.kernel, tile, TileRunOptions{1});
    set_print_output(&thread_out);
    ThreadRunOptions options;
    options.workers = 1;
    run_thread_level(lower_kernel(p.kernel, find_target("sm80")).kernel, thread, options);
    set_print_output(nullptr);
    std::string tile_want;
    for (int r = 0; r < 2; ++r) {
      for (int t = 0; t < 4; ++t) {
        tile_want += "T.print at " + file + ":20:13: block (" + std::to_string(r) + "), thread " +
                     std::to_string(t) + ": partial = " + std::to_string(16 * t + 6 + 400 * r) +
                     "\n";
      }
      tile_want += "T.print at " + file + ":27:17: block (" + std::to_string(r) +
                   "): total = " + std::to_string(120 + 1600 * r) + "\n";
    }
    CHECK(tile_out.str() == tile_want);
    // The thread level prints the same partial sums, each total from the threads that hold it.
    std::string thread_text = thread_out.str();
    for (int t = 0; t < 4; ++t) {
      CHECK(thread_text.find("block (1), thread " + std::to_string(t) + ": partial = " +
                             std::to_string(16 * t + 406) + "\n") != std::string::npos);
    }
    CHECK(thread_text.find(":27:17: block (1), thread 0: total = 1720\n") != std::string::npos);
    CHECK(thread["S"].at(0) == 120);
    CHECK(thread["S"].at(1) == 1720);
    CliResult emit = run_tessel({"emit", file, "--target", "cuda"});
    CHECK_MESSAGE(emit.status == 0, emit.err);
    CHECK(emit.out.find("printf(\"T.print at " + file +
                        ":20:13: block (%d), thread %d: partial = %lld\\n\"") != std::string::npos);
    std::string printed = print_kernel(p.kernel);
    CHECK(printed.find("T.print(acc[0], msg=\"partial\")") != std::string::npos);
    CHECK(print_kernel(parse_kernel(printed, "printed.py").kernel) == printed);
  }
}
