// Errors of the kernel-file front end: every one names file:line:column, quotes the line with a
// caret under the offending column and says what is accepted. Malformed text raises a
// KernelFileError; errors the C++ builder raises too (a bad gemm, a bad thread count) stay plain
// UserErrors with the location added; runtime errors of the tile interpreter carry it as well.
#include <doctest/doctest.h>

#include "core/dtype.h"
#include "core/kernel_parser.h"
#include "interp/tile_interpreter.h"

using namespace tessel;

namespace {

/// "file: MESSAGE" for a KernelFileError, "kernel: MESSAGE" for another UserError.
std::string error_of(const std::string& source,
                     const std::map<std::string, std::string>& defines = {}) {
  try {
    parse_kernel(source, "k.py", defines);
  } catch (const KernelFileError& e) {
    return std::string("file: ") + e.what();
  } catch (const UserError& e) {
    return std::string("kernel: ") + e.what();
  }
  return "no error";
}

/// The quoted line and the caret under `column` that end every located message.
std::string quote(const std::string& line, int column) {
  return "\n  " + line + "\n  " + std::string(static_cast<size_t>(column - 1), ' ') + "^";
}

// Lines 1-3 of most cases; the statement under test is on line 4.
const std::string kHead =
    "@T.prim_func\n"
    "def k(A: T.Tensor((64, 64), \"float16\"), C: T.Tensor((64, 64), \"float32\")):\n"
    "    with T.Kernel(1, threads=128) as bx:\n";

}  // namespace

TEST_SUITE("parser errors") {
  TEST_CASE("an unclosed call points at its '(' and says what came instead") {
    // `        T.copy(` puts the '(' in column 15; the next token is `T` of line 6, column 9.
    CHECK(error_of(kHead + "        A_s = T.alloc_shared((64, 64), \"float16\")\n"
                           "        T.copy(A[0, 0], A_s\n"
                           "        T.clear(A_s)\n") ==
          "file: k.py:5:15: '(' of T.copy is not closed: expected ',' or ')' but found name 'T' at "
          "line 6, column 9" +
              quote("        T.copy(A[0, 0], A_s", 15));
  }

  TEST_CASE("a syntax error inside an expression carries line, column and caret") {
    CHECK(error_of(kHead + "        C[0, 0] = 1.0 +\n") ==
          "file: k.py:4:24: expected an expression, found end of line" +
              quote("        C[0, 0] = 1.0 +", 24));
  }

  TEST_CASE("an unknown character is reported by the tokenizer with the file's name") {
    CHECK(error_of(kHead + "        x = 3 $ 4\n") ==
          "file: k.py:4:15: unexpected character '$'" + quote("        x = 3 $ 4", 15));
  }

  TEST_CASE("unsupported statements say why and what is supported") {
    std::string w = error_of(kHead + "        while True:\n            pass\n");
    CHECK(w.rfind("file: k.py:4:9: 'while' loops are not supported: the IR has counted loops only; "
                  "use `for i in T.serial(n):` with an `if` guard; supported statements are "
                  "assignments (constants, T.alloc_*, element stores), tile operators",
                  0) == 0);
    CHECK(w.find(quote("        while True:", 9)) != std::string::npos);
    CHECK(error_of(kHead + "        class Foo:\n            pass\n")
              .rfind("file: k.py:4:9: classes are not supported in kernel files: kernels are "
                     "@T.prim_func functions and helpers are @T.macro functions; supported",
                     0) == 0);
    CHECK(error_of(kHead + "        for i in T.serial(4):\n            break\n")
              .rfind("file: k.py:5:13: 'break' is not supported: loops run their whole extent; "
                     "guard the body with `if`",
                     0) == 0);
  }

  TEST_CASE("lambda outside a layout spec is refused with the reason") {
    CHECK(error_of(kHead + "        f = lambda x: x\n") ==
          "file: k.py:4:13: lambda is only accepted in layout specs (`tessel layout`, "
          "T.annotate_layout); it is not a value Tessel evaluates" +
              quote("        f = lambda x: x", 13));
  }

  TEST_CASE("an error inside a layout spec points into the spec") {
    // The spec starts in column 33; `q` is its 40th character, so column 33 + 40 - 1 = 72.
    std::string line =
        "        T.annotate_layout({A_s: Layout([64, 64], lambda i, j: i * 64 + q)})";
    CHECK(error_of(kHead + "        A_s = T.alloc_shared((64, 64), \"float16\")\n" + line + "\n") ==
          "file: k.py:5:72: T.annotate_layout: the layout of 'A_s': unknown name 'q'" +
              quote(line, 72));
    CHECK(error_of(kHead + "        T.annotate_padding({})\n")
              .rfind("file: k.py:4:9: T.annotate_padding is not supported; of the annotations, "
                     "Tessel's IR has T.annotate_layout({buffer: layout, ...})",
                     0) == 0);
  }

  TEST_CASE("an unknown name suggests the closest one in scope") {
    CHECK(error_of(kHead + "        A_shared = T.alloc_shared((64, 64), \"float16\")\n"
                           "        T.copy(A, A_shard)\n") ==
          "file: k.py:5:19: unknown name 'A_shard'; did you mean 'A_shared'?" +
              quote("        T.copy(A, A_shard)", 19));
    CHECK(error_of(kHead + "        T.clear(zzz)\n") ==
          "file: k.py:4:17: unknown name 'zzz': define it above this line (a kernel parameter goes "
          "in the enclosing def's signature)" +
              quote("        T.clear(zzz)", 17));
  }

  TEST_CASE("wrong argument counts, unknown and repeated keywords name the operator's arguments") {
    CHECK(error_of(kHead + "        T.copy(A)\n") ==
          "file: k.py:4:9: T.copy needs argument 'dst' (it takes src, dst, coalesced_width, "
          "disable_tma, eviction_policy, annotations, loop_layout; the first 2 are required), "
          "got 1 argument" +
              quote("        T.copy(A)", 9));
    CHECK(error_of(kHead + "        T.clear(A, A)\n") ==
          "file: k.py:4:20: T.clear takes 1 argument (buffer), got 2" +
              quote("        T.clear(A, A)", 20));
    std::string alloc = "        A_s = T.alloc_shared((64, 64), \"float16\")\n";
    CHECK(error_of(kHead + alloc + "        T.copy(A, A_s, vector_width=8)\n") ==
          "file: k.py:5:24: T.copy has no argument 'vector_width'; its arguments are src, dst, "
          "coalesced_width, disable_tma, eviction_policy, annotations, loop_layout" +
              quote("        T.copy(A, A_s, vector_width=8)", 24));
    CHECK(error_of(kHead + alloc + "        T.copy(A, A_s, src=A)\n") ==
          "file: k.py:5:24: T.copy got argument 'src' twice" +
              quote("        T.copy(A, A_s, src=A)", 24));
    CHECK(error_of(kHead + "        for i in T.Pipelined(4, num_stages=2, sync=True):\n"
                           "            pass\n")
              .rfind("file: k.py:4:47: T.Pipelined has no argument 'sync'; its arguments are "
                     "start, stop, num_stages, order, stage",
                     0) == 0);
  }

  TEST_CASE("arguments of the wrong kind name the argument, what it must be and what it is") {
    std::string decls =
        "        A_s = T.alloc_shared((64, 64), \"float16\")\n"
        "        F = T.alloc_fragment((64, 64), \"float32\")\n";
    CHECK(error_of(kHead + decls + "        T.gemm(A_s, 3, F)\n") ==
          "file: k.py:6:21: T.gemm: argument 'B' must be a whole buffer (T.gemm works on whole "
          "tiles), got the number 3" +
              quote("        T.gemm(A_s, 3, F)", 21));
    CHECK(error_of(kHead + decls + "        T.fill(F, A_s)\n") ==
          "file: k.py:6:19: T.fill: argument 'value' must be a number or an expression, got buffer "
          "'A_s'" +
              quote("        T.fill(F, A_s)", 19));
    CHECK(error_of(kHead + decls + "        T.gemm(A_s, A_s, F, policy=\"square\")\n")
              .rfind("file: k.py:6:36: T.gemm: argument 'policy' must be T.GemmWarpPolicy.Square, "
                     "FullRow or FullCol, got the string \"square\"",
                     0) == 0);
    CHECK(error_of("@T.prim_func\ndef k(A: T.Tensor((64,), \"float17\")):\n    pass\n") ==
          "file: k.py:2:26: T.Tensor: \"float17\" is not a data type; use one of " +
              DataType::accepted_names() + quote("def k(A: T.Tensor((64,), \"float17\")):", 26));
    CHECK(error_of(kHead +
                   "        C[0, 0] = _tir_packed_to_unsigned_convert(\"int\", 8)(4, C[0, 1], "
                   "0, dtype=\"float16\")\n")
              .rfind("file: k.py:4:64: _tir_packed_to_unsigned_convert(\"int\", 8): val is float32 "
                     "(`C[0, 1]`) but the storage type is int8; pass an element of the packed int8 "
                     "buffer",
                     0) == 0);
  }

  TEST_CASE("errors the builder also raises stay UserErrors, located in the file") {
    std::string gemm = error_of(kHead +
                                "        A_s = T.alloc_shared((64, 32), \"float16\")\n"
                                "        B_s = T.alloc_shared((16, 64), \"float16\")\n"
                                "        F = T.alloc_fragment((64, 64), \"float32\")\n"
                                "        T.gemm(A_s, B_s, F)\n");
    CHECK(gemm.rfind("kernel: T.gemm at k.py:7:9: K (the reduction dimension) of 'A_s' (64, 32) is "
                     "32 but K (the reduction dimension) of 'B_s' (16, 64) is 16",
                     0) == 0);
    CHECK(gemm.find(quote("        T.gemm(A_s, B_s, F)", 9)) != std::string::npos);
    CHECK(error_of("@T.prim_func\ndef k(A: T.Tensor((64,), \"float16\")):\n"
                   "    with T.Kernel(1, threads=2000) as bx:\n        T.clear(A)\n") ==
          "kernel: k.py:3:10: kernel 'k': threads=2000 must be between 1 and 1024 (the threads a "
          "block may have)" +
              quote("    with T.Kernel(1, threads=2000) as bx:", 10));
    CHECK(error_of(kHead + "        C[1] = 1.0\n") ==
          "kernel: store at k.py:4:9 of 'C' with 1 index(es), but it has 2 dimension(s); give one "
          "index per dimension" +
              quote("        C[1] = 1.0", 9));
  }

  TEST_CASE("the structure of a kernel file: launch, kernels, parameters and directives") {
    CHECK(error_of("@T.prim_func\ndef k(A: T.Tensor((64,), \"float16\")):\n    T.clear(A)\n"
                   "    with T.Kernel(1) as bx:\n        pass\n") ==
          "file: k.py:3:5: kernel 'k': T.clear comes before T.Kernel(...); open the kernel launch "
          "first (with T.Kernel(grid..., threads=128) as (bx, by):)" +
              quote("    T.clear(A)", 5));
    CHECK(error_of(kHead + "        with T.Kernel(2) as by:\n            pass\n") ==
          "file: k.py:4:9: kernel 'k': a T.Kernel launch inside another; launches run one after "
          "another: close the first `with T.Kernel(...)` block before opening the next" +
              quote("        with T.Kernel(2) as by:", 9));
    CHECK(error_of("M = 4\n") ==
          "file: k.py: no kernel in this file: expected a @T.prim_func or @tilelang.jit function "
          "with a `with T.Kernel(...)` launch (its tensors annotated T.Tensor((...), dtype)), or a "
          "function that defines one and returns it");
    CHECK(
        error_of("@T.prim_func\ndef k(A: T.Tensor):\n    pass\n") ==
        "file: k.py:2:10: parameter 'A' is annotated with a bare T.Tensor, so its shape and dtype "
        "are unknown: write A: T.Tensor((M, K), \"float16\"), or keep the signature and add a line "
        "`# tessel: A: T.Tensor((M, K), \"float16\")`" +
            quote("def k(A: T.Tensor):", 10));
    CHECK(error_of("# tessel: refrence=gemm\n" + kHead + "        pass\n")
              .rfind("file: k.py:1:11: unknown directive; the directives are `# tessel: "
                     "reference=NAME`",
                     0) == 0);
    CHECK(error_of("# tessel: B: T.Tensor((4,), \"float32\")\n" + kHead + "        pass\n") ==
          "file: k.py:1:14: this directive describes 'B', but no kernel parameter 'B' is annotated "
          "with a bare T.Tensor" +
              quote("# tessel: B: T.Tensor((4,), \"float32\")", 14));
    std::string two = kHead +
                      "        pass\n@T.prim_func\ndef k2(B: T.Tensor((4,), \"float32\")):\n"
                      "    pass\n";
    CHECK(error_of(two) ==
          "file: k.py: this file holds 2 kernels: k (line 2), k2 (line 6); pick one with "
          "--kernel NAME");
  }

  TEST_CASE("enclosing def parameters need a default or a -D value of their kind") {
    std::string gen =
        "def g(M, n=64):\n"
        "    @T.prim_func\n"
        "    def main(A: T.Tensor((M, n), \"float16\")):\n"
        "        with T.Kernel(1) as bx:\n"
        "            T.clear(A)\n"
        "    return main\n";
    CHECK(error_of(gen) ==
          "file: k.py:1:7: parameter 'M' of 'g' has no default; give it with -D "
          "M=VALUE" +
              quote("def g(M, n=64):", 7));
    CHECK(error_of(gen, {{"M", "8"}, {"n", "abc"}}) ==
          "file: -D n=abc: parameter 'n' of 'g' (k.py:1:10) is an integer (default 64); give e.g. "
          "-D n=64");
    CHECK(error_of(gen, {{"M", "8"}}) == "no error");
  }

  TEST_CASE("names in the kernel body are bound once and regions are not stored through") {
    CHECK(
        error_of(kHead + "        x = bx * 2\n        x = bx * 3\n") ==
        "file: k.py:5:9: 'x' is already bound at k.py:4:9; a name in the kernel body is bound once "
        "(use T.alloc_var for a value that changes, or pick another name)" +
            quote("        x = bx * 3", 9));
    CHECK(error_of(kHead + "        x = bx * 2\n        x += 1\n") ==
          "file: k.py:5:9: 'x' is bound once at k.py:4:9 and cannot change; use T.alloc_var for a "
          "value that changes" +
              quote("        x += 1", 9));
    CHECK(
        error_of(kHead + "        A[0:4, 0] = 1.0\n") ==
        "file: k.py:4:9: 'A' is assigned through a slice; stores write one element (use T.copy or "
        "T.fill for a region)" +
            quote("        A[0:4, 0] = 1.0", 9));
    CHECK(error_of(kHead + "        for if in T.serial(4):\n            pass\n") ==
          "file: k.py:4:13: 'if' is a keyword and cannot be a name" +
              quote("        for if in T.serial(4):", 13));
  }

  TEST_CASE("a macro that calls itself stops at the nesting limit, naming the calls") {
    std::string e = error_of("@T.macro\ndef f(x):\n    f(x)\n" + kHead + "        f(1)\n");
    CHECK(e.rfind("file: k.py:3:5: T.macro calls nest more than 16 deep (does 'f' call itself?)",
                  0) == 0);
    CHECK(e.find("(in T.macro 'f' called at k.py:3:5)") != std::string::npos);
    CHECK(e.find("(in T.macro 'f' called at k.py:7:9)") != std::string::npos);
    CHECK(e.find("(in T.macro 'f' called at k.py:3:5)\n  (in T.macro 'f' called at k.py:3:5)") ==
          std::string::npos);
  }

  TEST_CASE("runtime errors of the tile interpreter name the file's line and column") {
    Kernel barrier = parse_kernel(
                         "@T.prim_func\n"
                         "def k(A: T.Tensor((128,), \"float32\")):\n"
                         "    with T.Kernel(1, threads=128) as bx:\n"
                         "        tx = T.get_thread_binding()\n"
                         "        if tx < 64:\n"
                         "            T.sync_threads()\n",
                         "k.py")
                         .kernel;
    TensorMap tensors;
    tensors.emplace("A", HostTensor(DataType::f32(), {128}));
    // Threads 0..63 take the branch: 64 of the 128 reach the barrier.
    CHECK_THROWS_WITH_AS(run_tile_level(barrier, tensors),
                         doctest::Contains("(at k.py:6:13): T.sync_threads() is reached by only 64 "
                                           "of 128 threads"),
                         UserError);
    Kernel extent = parse_kernel(
                        "@T.prim_func\n"
                        "def k(A: T.Tensor((128,), \"float32\")):\n"
                        "    with T.Kernel(2, threads=128) as bx:\n"
                        "        S = T.alloc_shared((4,), \"float32\")\n"
                        "        T.clear(S[0:bx])\n",
                        "k.py")
                        .kernel;
    // Block 0 clears S[0:0], a region of extent 0.
    CHECK_THROWS_WITH_AS(run_tile_level(extent, tensors),
                         "T.clear at k.py:5:9: region of 'S' has extent 0 in dimension 0; extents "
                         "must be positive",
                         UserError);
  }

}  // TEST_SUITE
