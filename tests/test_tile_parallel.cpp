// The tile level's compiled T.Parallel nests (interp/tile_parallel.h) against the generic
// evaluator they replace: the same bytes in every tensor, the same errors, the same step counts;
// and the blocks of a kernel with tile atomics giving the same bytes on one worker or two.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>

#include "core/error.h"
#include "core/kernel_parser.h"
#include "core/stmt_functor.h"
#include "examples/run_example.h"
#include "interp/element_access.h"
#include "interp/tile_interpreter.h"
#include "interp/tile_parallel.h"

using namespace tessel;

namespace {

/// What one tile-level run left: every tensor, and the user error it raised ("" when none).
struct Outcome {
  TensorMap tensors;
  std::string error;
};

Outcome run(const Kernel& k, const TensorMap& inputs, bool compiled, int workers = 1,
            RunControl* control = nullptr) {
  Outcome o{inputs, ""};
  TileRunOptions options;
  options.workers = workers;
  options.control = control;
  options.compiled_parallel = compiled;
  try {
    run_tile_level(k, o.tensors, options);
  } catch (const UserError& e) {
    o.error = e.what();
  }
  return o;
}

/// The names of the tensors whose bytes differ between `a` and `b` ("" when none).
std::string differing(const TensorMap& a, const TensorMap& b) {
  std::string out;
  for (const auto& [name, t] : a) {
    const HostTensor& u = b.at(name);
    size_t bytes = static_cast<size_t>(t.dtype().storage_bytes(t.size()));
    if (t.size() != u.size() || std::memcmp(t.data(), u.data(), bytes) != 0) out += name + " ";
  }
  return out;
}

TensorMap inputs_of(const Example& e, const Kernel& k, const Params& p, uint64_t seed) {
  std::map<std::string, int64_t> dims;
  if (e.dynamic_dims) dims = e.dynamic_dims(p);
  TensorMap t = make_tensors(k, dims, e.outputs, seed);
  for (const std::string& name : e.zero_outputs) {
    HostTensor& z = t.at(name);
    for (int64_t i = 0; i < z.size(); ++i) z.set(i, 0.0);
  }
  return t;
}

/// The T.Parallel loops of `k` (of each launch) and how many of them compile.
struct Nests {
  int loops = 0, compiled = 0;
};
Nests nests_of(const Kernel& k) {
  Nests n;
  for (const Kernel& launch : launches_of(k)) {
    for_each_stmt(launch->body, [&](const Stmt& s) {
      const auto* loop = s.as<ForNode>();
      if (!loop || loop->for_kind != ForKind::kParallel) return;
      ++n.loops;
      n.compiled += parallel_nest_compiles(loop);
    });
  }
  return n;
}

Kernel parse(const std::string& source) { return parse_kernel(source, "nest.py", {}).kernel; }

/// The kernel `head` + `body` (+ newline) run by the generic evaluator and compiled on the same
/// seeded inputs: the same error (containing `error`, or none when it is empty), the same
/// bytes, and something written.
void check_like_generic(const std::string& head, const std::string& body, const char* error,
                        uint64_t seed) {
  Kernel k = parse(head + body + "\n");
  TensorMap in = make_tensors(k, {}, {}, seed);
  Outcome generic = run(k, in, false), compiled = run(k, in, true);
  INFO(body << " -> " << generic.error);
  if (*error) {
    CHECK(generic.error.find(error) != std::string::npos);
  } else {
    CHECK(generic.error == "");
  }
  CHECK(compiled.error == generic.error);
  CHECK(differing(generic.tensors, compiled.tensors) == "");
  CHECK(differing(in, generic.tensors) != "");  // the kernel wrote something
}

}  // namespace

TEST_SUITE("tile level: compiled T.Parallel nests") {
  // Every built-in example at its default (small) sizes: the generic evaluator's result is the
  // expected one, since it is the tile level's reference semantics the compiled nests must keep.
  TEST_CASE("every built-in example gives the generic evaluator's bytes") {
    int compared = 0, loops = 0;
    for (const Example& e : examples()) {
      Params p = make_params(e, {});
      Kernel k = e.build(p);
      TensorMap in = inputs_of(e, k, p, 7);
      Outcome generic = run(k, in, false), compiled = run(k, in, true);
      INFO(e.name);
      CHECK(generic.error == compiled.error);
      CHECK(differing(generic.tensors, compiled.tensors) == "");
      compared += generic.error.empty();
      Nests n = nests_of(k);
      CHECK(n.compiled == n.loops);  // the examples hold nothing the compiled path refuses
      loops += n.loops;
    }
    CHECK(compared >= 20);  // most examples run at tile level (a few use intrinsics only)
    // softmax 4, flash_attention 10, mla_decode 8, mla_decode_split 17, chunk_scan 6, the ten
    // dequant formats 2 each, ...: far more than 50 nests were compared.
    CHECK(loops >= 50);
  }

  // Nests with each kind of expression node: integer floor division and modulo of negative
  // numbers, min/max, bit operations and shifts, comparisons of floats and of integers, and/or/not,
  // select, casts both ways (f32 -> i32 truncates, i32 -> f16 rounds), builtins, an int abs, a let,
  // a serial loop and an if/else inside the nest, stores to a fragment, a local and a global buffer
  // of four dtypes; the last nest is one store, so it runs as rows, where a literal power-of-two
  // divisor is a shift and a mask: (j * 3 - 11) % 8 is 5 at j = 0 (-11 = -2 * 8 + 5), where C's
  // remainder would give -3.
  TEST_CASE("each expression and statement kind in a nest gives the generic evaluator's bytes") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def nest(A: T.Tensor((16, 8), "float16"), I: T.Tensor((16, 8), "int32"),
         F: T.Tensor((16, 8), "float32"), H: T.Tensor((16, 8), "float16"),
         J: T.Tensor((16, 8), "int32"), G: T.Tensor((16, 8), "int8"),
         U: T.Tensor((16, 8), "uint8"), S: T.Tensor((16, 8), "int8")):
    with T.Kernel(2, threads=32) as bx:
        acc = T.alloc_fragment((16, 8), "float32")
        for i, j in T.Parallel(16, 8):
            q = (i - 7) // 3 + (j - 5) % 3
            acc[i, j] = T.exp2(A[i, j] * 0.5) + T.max(A[i, j], 0.25) * T.cast(q, "float32")
            if (i & 3) == (j >> 1) or not (i < j):
                J[i, j] = T.min(I[i, j] ^ (i << 2), T.abs(I[i, j] - 3)) | (j % 2)
            else:
                J[i, j] = T.if_then_else(A[i, j] > 0.0, i * 8 + j, -i)
            for s in T.serial(3):
                acc[i, j] = acc[i, j] + T.sqrt(T.abs(acc[i, j])) * s
        for i, j in T.Parallel(16, 8):
            F[i, j] = acc[i, j] + bx
            H[i, j] = T.cast(T.cast(acc[i, j] * 100.0, "int32"), "float16")
            G[i, j] = T.cast(I[i, j] * 37 + bx, "int8") + (U[i, j] >> 2) + S[i, j] * 3
            J[i, j] = J[i, j] + (i - 7) // -1 + (j - 9) % -4 + (i * 5 - 40) // 8 + (U[i, j] & 7)
        for i, j in T.Parallel(16, 8):
            I[i, j] = (j * 3 - 11) % 8 + (j - 6) // 2 * 16 + T.cast(S[i, j] // 4, "int32") + i
)");
    Nests n = nests_of(k);
    CHECK(n.loops == 6);  // three 2-d nests: an i loop holding a j loop each
    CHECK(n.compiled == 6);
    TensorMap in = make_tensors(k, {}, {"F", "H", "J", "G"}, 3);
    Outcome generic = run(k, in, false), compiled = run(k, in, true);
    CHECK(generic.error == "");
    CHECK(compiled.error == "");
    CHECK(differing(generic.tensors, compiled.tensors) == "");
  }

  // A sub-expression repeated in one store is evaluated once per execution of that store (Reuse
  // in tile_parallel_expr.cpp); the next store, which reads what the one before stored, must
  // compute it again. A = 0.5 everywhere: x = 2A + 1 = 2, B = x * x - x = 2, A' = x + B * x = 6,
  // C = (2A' + 1)^2 = 169; a stale x (2) would give C = 4.
  TEST_CASE("a sub-expression repeated in a store is reused only within that store") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def rep(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32"),
        C: T.Tensor((8, 8), "float32")):
    with T.Kernel(1, threads=32) as bx:
        for i, j in T.Parallel(8, 8):
            B[i, j] = (A[i, j] * 2.0 + 1.0) * (A[i, j] * 2.0 + 1.0) - (A[i, j] * 2.0 + 1.0)
            A[i, j] = A[i, j] * 2.0 + 1.0 + B[i, j] * (A[i, j] * 2.0 + 1.0)
            C[i, j] = (A[i, j] * 2.0 + 1.0) * (A[i, j] * 2.0 + 1.0)
)");
    TensorMap in = make_tensors(k, {}, {"B", "C"}, 1);
    for (int64_t e = 0; e < 64; ++e) in.at("A").set(e, 0.5);
    Outcome generic = run(k, in, false), compiled = run(k, in, true);
    CHECK(compiled.error == "");
    CHECK(differing(generic.tensors, compiled.tensors) == "");
    CHECK(compiled.tensors.at("B").at(9) == 2.0);
    CHECK(compiled.tensors.at("A").at(9) == 6.0);
    CHECK(compiled.tensors.at("C").at(9) == 169.0);
  }

  TEST_CASE("a division by zero in a repeated sub-expression is the generic evaluator's error") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def rep(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
    with T.Kernel(1, threads=32) as bx:
        for i, j in T.Parallel(8, 8):
            B[i, j] = A[i, 8 // (j - 3) % 8] + A[i, 8 // (j - 3) % 8] * 2.0
)");
    TensorMap in = make_tensors(k, {}, {"B"}, 1);
    Outcome generic = run(k, in, false), compiled = run(k, in, true);
    CHECK(generic.error.find("integer division by zero") != std::string::npos);
    CHECK(compiled.error == generic.error);
    CHECK(differing(generic.tensors, compiled.tensors) == "");
  }

  // The compiled nests cache sub-expressions invariant in the innermost loop (exp(A[k, i] * 0.5)
  // and w[i] in the j loop, i * 3 + bx under the let). The cache must be dropped when an outer
  // loop moves (i), in the next run of the nest (A[k, 0] reads only k, bound outside the nest by
  // the serial loop; w is rewritten by another nest between the runs), and never hold a load of a
  // buffer the nest stores to (acc[i, 0], written at j = 0 and read at every j). Each of the
  // three rules broken on its own fails this test.
  TEST_CASE("cached loop-invariant sub-expressions give the generic evaluator's bytes") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def memo(A: T.Tensor((3, 16), "float16"), W: T.Tensor((16,), "float32"),
         C: T.Tensor((2, 16, 8), "float32")):
    with T.Kernel(2, threads=32) as bx:
        acc = T.alloc_fragment((16, 8), "float32")
        w = T.alloc_fragment((16,), "float32")
        for i, j in T.Parallel(16, 8):
            acc[i, j] = 0.0
        for i in T.Parallel(16):
            w[i] = W[i]
        for k in T.serial(3):
            for i, j in T.Parallel(16, 8):
                row = i * 3 + bx
                acc[i, j] = (acc[i, j] * 0.75 + T.exp(A[k, i] * 0.5) * w[i] + row +
                             acc[i, 7 - j] + A[k, 0] * 2.0 + acc[i, 0])
            for i in T.Parallel(16):
                w[i] = w[i] * 0.5 + acc[i, 0]
        for i, j in T.Parallel(16, 8):
            C[bx, i, j] = acc[i, j]
)");
    TensorMap in = make_tensors(k, {}, {"C"}, 4);
    Outcome generic = run(k, in, false), compiled = run(k, in, true);
    CHECK(generic.error == "");
    CHECK(compiled.error == "");
    CHECK(differing(generic.tensors, compiled.tensors) == "");
  }

  TEST_CASE("an out-of-bounds load in a nest is the generic evaluator's error") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def oob(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(16):
            B[i] = A[i + 3]
)");
    TensorMap in = make_tensors(k, {}, {"B"}, 1);
    Outcome generic = run(k, in, false), compiled = run(k, in, true);
    CHECK(generic.error.find("load of A[16] is out of bounds") != std::string::npos);
    CHECK(compiled.error == generic.error);
    // The elements before the failing one were stored by both (B[0..12] = A[3..15]).
    CHECK(differing(generic.tensors, compiled.tensors) == "");
  }

  TEST_CASE("a division by zero in a nest's load or store index is the generic evaluator's error") {
    for (const char* store : {"B[i % (i - 9) % 16] = A[i]", "B[i] = A[16 // (i - 9) % 16]"}) {
      Kernel k = parse(std::string(R"(import tilelang.language as T


@T.prim_func
def div(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(16):
            )") + store +
                       "\n");
      TensorMap in = make_tensors(k, {}, {"B"}, 1);
      Outcome generic = run(k, in, false), compiled = run(k, in, true);
      std::string what = std::string(store) + " -> " + generic.error;
      INFO(what);
      CHECK(generic.error.find("integer division by zero") != std::string::npos);
      CHECK(generic.error.find("in an index of the") != std::string::npos);
      CHECK(compiled.error == generic.error);
    }
  }

  // The innermost loop of a nest runs as one row when its body is one store indexed by the loop's
  // variable that reads the stored buffer only at its own element: the rows must keep the
  // element-by-element bytes and errors. Each kernel below is one case: a select whose untaken
  // branch would load out of bounds (the row hands back to one-by-one evaluation, no error), an
  // out-of-bounds store in the middle of a row (stores before it done, the same error), a store
  // that reads another element of its own buffer and one not indexed by the loop variable (both
  // run element by element), a row over a non-zero lower bound; then rows whose indices are all
  // variables (one stride per row): down a column, along a diagonal, and past the edge of a store
  // and of a load (the checked path raises at the iteration); then selects whose every iteration
  // takes one branch, the other loading out of bounds (only the taken one runs: no error), and
  // one whose taken branch loads A[16] at i = 15; and a load at computed indices, all inside.
  TEST_CASE("rows of a nest's innermost loop give the generic evaluator's bytes and errors") {
    const char* const bodies[] = {
        "for i in T.Parallel(16):\n            B[i] = T.if_then_else(i < 13, A[i + 3], 0.0)",
        "for i in T.Parallel(16):\n            B[i + 5] = A[i] * 2.0",
        "for i in T.Parallel(15):\n            B[i + 1] = B[i] + A[i]",
        "for i, j in T.Parallel(2, 16):\n            B[i] = B[i] + A[j]",
        "for i in T.Parallel(2):\n            for j in T.serial(4, 16):\n                B[j] = "
        "B[j] * A[j] - i",
        "for i, j in T.Parallel(4, 4):\n            M[j, i] = M[j, i] + A[j * 4 + i]",
        "for j in T.Parallel(4):\n            M[j, j] = A[j] * 3.0",
        "for i in T.Parallel(20):\n            B[i] = A[i % 16] + 1.0",
        "for i in T.Parallel(16):\n            B[i] = A[i] + M[i, 0]",
        "for i in T.Parallel(16):\n            B[i] = T.if_then_else(i < 100, A[i], A[i + 100])",
        "for i in T.Parallel(16):\n            B[i] = T.if_then_else(i > 100, A[i + 100], A[i])",
        "for i in T.Parallel(16):\n            B[i] = T.if_then_else(i < 100, A[i + 1], 0.0)",
        "for i, j in T.Parallel(4, 4):\n            M[i, j] = A[(i * 4 + j * 5) % 16 + i // 3]",
    };
    const char* const errors[] = {"",
                                  "store to B[16] is out of bounds",
                                  "",
                                  "",
                                  "",
                                  "",
                                  "",
                                  "store to B[16] is out of bounds",
                                  "load of M[4, 0] is out of bounds",
                                  "",
                                  "",
                                  "load of A[16] is out of bounds",
                                  ""};
    for (size_t c = 0; c < std::size(bodies); ++c) {
      check_like_generic(R"(import tilelang.language as T


@T.prim_func
def rows(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32"),
         M: T.Tensor((4, 4), "float16")):
    with T.Kernel(1, threads=32) as bx:
        )",
                         bodies[c], errors[c], 2);
    }
  }

  // A loop longer than a row (1024 iterations) runs as several rows: 2500 stores, then 2600 whose
  // last 100 lie past the edge of B (the error at B[2500], in the third row, after its first 452
  // stores), and a serial loop of 2500 inside a nest.
  TEST_CASE("loops longer than a row give the generic evaluator's bytes and errors") {
    const char* const bodies[] = {
        "for i in T.Parallel(2500):\n            B[i] = A[i % 16] * 2.0 + i",
        "for i in T.Parallel(2600):\n            B[i] = A[i % 16] - i",
        "for i in T.Parallel(1):\n            for j in T.serial(2500):\n                "
        "B[j] = B[j] * 0.5 + A[j % 16]",
    };
    const char* const errors[] = {"", "store to B[2500] is out of bounds", ""};
    for (size_t c = 0; c < std::size(bodies); ++c) {
      check_like_generic(R"(import tilelang.language as T


@T.prim_func
def long_rows(A: T.Tensor((16,), "float32"), B: T.Tensor((2500,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        )",
                         bodies[c], errors[c], 6);
    }
  }

  // A sub-expression that reads, of the nest's variables, only the innermost loop's is kept from
  // one row of that loop to the next (RowMemo in tile_parallel_expr.cpp): `A[j] * 2.0 + 1.0` is
  // the same in each row i. It must be computed again for a row over other iterations (the serial
  // j loop from i to i + 8: same length, other start) and in another run of the nest (A changes
  // between the two runs, in the k loop around them).
  TEST_CASE("a row that only the innermost loop's variable decides is kept only for its rows") {
    const char* const bodies[] = {
        "for i, j in T.Parallel(4, 16):\n            M[i, j] = (A[j] * 2.0 + 1.0) * i",
        "for i in T.Parallel(4):\n            for j in T.serial(i, i + 8):\n                "
        "M[i, j] = A[j] * 3.0 - j * 2",
        "for k in T.serial(2):\n            for i, j in T.Parallel(4, 16):\n                "
        "M[i, j] = M[i, j] + A[(j + 3) % 16] * 2.0 + k\n            for j in T.Parallel(16):\n"
        "                A[j] = A[j] * 0.5 + 1.0",
    };
    for (const char* body : bodies) {
      check_like_generic(R"(import tilelang.language as T


@T.prim_func
def kept(A: T.Tensor((16,), "float32"), M: T.Tensor((4, 16), "float32")):
    with T.Kernel(1, threads=32) as bx:
        )",
                         body, "", 4);
    }
  }

  // A loop whose body is a loop of one store indexed by both variables runs several of its
  // iterations with all of the body loop's as one 2-d row (Loop::run_2d in tile_parallel.cpp):
  // the stores at one stride (M[i, j]) and scattered (M[j, i], the lower half of a taller
  // buffer); a value invariant in j computed once a pass of j (T.exp2(A[i] * 0.5)), one of j
  // alone kept from pass to pass (A[j] * 2.0 + 1.0) and one of neither; a read of the stored
  // element itself; 3 x 500 iterations (one outer pass a row: not 2-d), 40 x 30 (34 passes of
  // the outer loop a row: two rows, the second of 6) and 64 x 16 (one row of all 1024); a body
  // loop whose bounds read the outer variable (no 2-d rows); stores past the edge in the second
  // pass of a row (B[i * 4 + j] for j up to 7: B[16] at i = 2 after 16 stores; M[i, j + 1] at
  // i = 0) and a load past it (the error where the generic evaluator raises it); loads whose
  // indices each read i or j but not both (P[i, j // 2], A[i // 2]: a part of the position a
  // pass, a part an iteration), one whose index reads both (P[(i + j) % 16, j % 8]) and one of
  // the first kind past the edge (P[0, 8] at j = 14).
  TEST_CASE("2-d rows of a loop and its body loop give the generic evaluator's bytes and errors") {
    const char* const bodies[] = {
        "for i, j in T.Parallel(16, 16):\n            M[i, j] = M[i, j] * T.exp2(A[i] * 0.5) + "
        "(A[j] * 2.0 + 1.0) - A[3]",
        "for i, j in T.Parallel(16, 16):\n            M[j, i] = A[i] - A[j] * 2.0",
        "for i, j in T.Parallel(8, 16):\n            M[i + 8, j] = M[i + 8, j] + i * 16 + j",
        "for i, j in T.Parallel(16, 16):\n            M[j, i] = M[j, i] + i * 16 + j",
        "for i, j in T.Parallel(3, 500):\n            L[i, j] = A[j % 16] * i + j",
        "for i, j in T.Parallel(40, 30):\n            L[i, j] = A[(i + j) % 16] + i - j",
        "for i, j in T.Parallel(64, 16):\n            L[i, j] = T.exp2(A[i % 16]) * A[j] + i",
        "for i in T.Parallel(16):\n            for j in T.serial(i, 16):\n                "
        "M[i, j] = A[j] * i",
        "for i, j in T.Parallel(4, 8):\n            B[i * 4 + j] = A[j] + i",
        "for i, j in T.Parallel(16, 16):\n            M[i, j + 1] = A[j] + i",
        "for i, j in T.Parallel(16, 16):\n            M[i, j] = A[i + j] + i",
        "for i, j in T.Parallel(16, 16):\n            M[i, j] = T.cast(P[i, j // 2], \"float32\") "
        "* "
        "A[i // 2] + A[j % 8]",
        "for i, j in T.Parallel(16, 16):\n            M[i, j] = T.cast(P[(i + j) % 16, j % 8], "
        "\"float32\") + A[i]",
        "for i, j in T.Parallel(16, 16):\n            M[i, j] = T.cast(P[i, j // 2 + 1], "
        "\"float32\")",
        // A packed byte repeated 4 times along j (int2), and 3 times (not unrolled).
        "for i, j in T.Parallel(16, 16):\n            M[i, j] = T.cast(P[i, j // 4 + 2], "
        "\"float32\") - i",
        "for i, j in T.Parallel(16, 12):\n            M[i, j] = T.cast(P[15 - i, j // 3], "
        "\"float32\")",
    };
    const char* const errors[] = {"",
                                  "",
                                  "",
                                  "",
                                  "",
                                  "",
                                  "",
                                  "",
                                  "store to B[16] is out of bounds",
                                  "store to M[0, 16] is out of bounds",
                                  "load of A[16] is out of bounds",
                                  "",
                                  "",
                                  "load of P[0, 8] is out of bounds",
                                  "",
                                  ""};
    for (size_t c = 0; c < std::size(bodies); ++c) {
      check_like_generic(R"(import tilelang.language as T


@T.prim_func
def two_d(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32"),
          M: T.Tensor((16, 16), "float16"), L: T.Tensor((64, 500), "float32"),
          P: T.Tensor((16, 8), "int8")):
    with T.Kernel(1, threads=32) as bx:
        )",
                         bodies[c], errors[c], 9);
    }
  }

  // A sub-expression that one 8-bit load and a remainder by a small literal decide is looked up
  // in a table the generic evaluator fills (tile_parallel_table.cpp). One case a kernel: int4
  // fields of uint8 bytes into float16; fp4 e2m1 fields (a select on the exponent, a shift by
  // it); int2 fields of signed bytes into int8; the byte's own high bits, no remainder; the
  // field as the index of a per-thread table (nf4); a division by the field, zero for some bytes
  // (no table: the generic evaluator's error where a field is zero); a select whose untaken
  // branch loads past the edge (no error); a byte loaded past the edge (the generic error); a
  // field invariant in the inner loop (B[i, 3]: its value cached once a row of j); a remainder of
  // the byte itself beside the byte (one input inside the other).
  TEST_CASE("sub-expressions of a packed byte and a remainder give the generic evaluator's bytes") {
    const char* const bodies[] = {
        "for i, j in T.Parallel(16, 16):\n            H[i, j] = T.cast((T.cast(B[i, j // 2], "
        "\"int32\") >> j % 2 * 4 & 15 ^ 8) - 8, \"float16\")",
        "for i, j in T.Parallel(16, 16):\n            F[i, j] = T.if_then_else((T.cast(B[i, j // "
        "2], \"int32\") >> j % 2 * 4 & 8) == 8, -0.5, 0.5) * T.cast(T.if_then_else((T.cast(B[i, "
        "j // 2], \"int32\") >> j % 2 * 4 + 1 & 3) == 0, T.cast(B[i, j // 2], \"int32\") >> j % 2 "
        "* 4 & 1, (2 + (T.cast(B[i, j // 2], \"int32\") >> j % 2 * 4 & 1)) << (T.cast(B[i, j // "
        "2], \"int32\") >> j % 2 * 4 + 1 & 3) - 1), \"float32\")",
        "for i, j in T.Parallel(16, 32):\n            Q[i, j] = T.cast((T.cast(S[i, j // 4], "
        "\"int32\") >> j % 4 * 2 & 3 ^ 2) - 2, \"int8\")",
        "for i, j in T.Parallel(16, 16):\n            F[i, j] = T.cast(T.cast(B[i, j % 8], "
        "\"int32\") >> 4, \"float32\") * 0.25 + 1.0",
        "for k in T.serial(16):\n            lut[k] = T.cast(k, \"float32\") * 0.125 - 1.0\n     "
        "   for i, j in T.Parallel(16, 16):\n            F[i, j] = lut[T.cast(B[i, j // 2], "
        "\"int32\") >> j % 2 * 4 & 15]",
        "for i, j in T.Parallel(16, 16):\n            F[i, j] = T.cast(100 // (T.cast(B[i, j // "
        "2], \"int32\") >> j % 2 * 4 & 15), \"float32\")",
        "for i, j in T.Parallel(16, 16):\n            F[i, j] = T.if_then_else(j % 4 < 2, "
        "T.cast(T.cast(B[i, j % 4 * 4], \"int32\") >> 1 ^ 5, \"float32\") * 0.5, -1.0)",
        "for i, j in T.Parallel(16, 16):\n            F[i, j] = T.cast(T.cast(B[i, j // 2 + 1], "
        "\"int32\") >> j % 2 * 4 & 7 ^ 3, \"float32\")",
        "for i, j in T.Parallel(16, 16):\n            F[i, j] = T.cast(T.cast(B[i, 3], \"int32\") "
        ">> 2 & 7 ^ 5, \"float32\") * 0.5 + j",
        "for i, j in T.Parallel(16, 16):\n            F[i, j] = T.cast(T.cast(B[i, j // 2], "
        "\"int32\") % 4 * 3 - (T.cast(B[i, j // 2], \"int32\") >> 4), \"float32\")",
        // The code table changes between runs of one nest: its lookup is built again.
        "for r in T.serial(3):\n            for k in T.serial(16):\n                lut[k] = "
        "T.cast(k * (r + 1), \"float32\") - 4.0\n            for i, j in T.Parallel(16, 16):\n"
        "                F[i, j] = F[i, j] * 0.5 + lut[T.cast(B[i, j // 2], \"int32\") >> j % 2 "
        "* 4 & 15]",
        // Field 15 reads past the table: the iteration that meets it raises the error.
        "for k in T.serial(16):\n            lut[k] = T.cast(k, \"float32\")\n        for i, j in "
        "T.Parallel(16, 16):\n            F[i, j] = lut[(T.cast(B[i, j // 2], \"int32\") >> j % 2 "
        "* 4 & 15) + 1] * 2.0",
        // A table of bools (a byte each) rewritten between runs in elements 2 and up only: every
        // byte of it is compared (k * (k - 1) is 0 for k < 2).
        "for r in T.serial(3):\n            for k in T.serial(16):\n                flags[k] = "
        "k * (k - 1) * (r + 1) % 3 == 0\n            for i, j in T.Parallel(16, 16):\n             "
        "   F[i, j] = "
        "F[i, j] * 0.5 + T.if_then_else(flags[T.cast(B[i, j // 2], \"int32\") >> j % 2 * 4 & "
        "15], 1.0, -1.0)",
    };
    const char* const errors[] = {"", "",
                                  "", "",
                                  "", "integer division by zero",
                                  "", "load of B[0, 8] is out of bounds",
                                  "", "",
                                  "", "load of lut[16] is out of bounds",
                                  ""};
    for (size_t c = 0; c < std::size(bodies); ++c) {
      check_like_generic(R"(import tilelang.language as T


@T.prim_func
def packed(B: T.Tensor((16, 8), "uint8"), S: T.Tensor((16, 8), "int8"),
           H: T.Tensor((16, 16), "float16"), F: T.Tensor((16, 16), "float32"),
           Q: T.Tensor((16, 32), "int8")):
    with T.Kernel(1, threads=32) as bx:
        lut = T.alloc_local((16,), "float32")
        flags = T.alloc_local((16,), "bool")
        )",
                         bodies[c], errors[c], 11);
    }
  }

  // The same lookups against values decoded by hand. B[0, 0] = 0x3B: fp4 field 0 is 0xB = 1011
  // (s = 1, e = 01, m = 1: -(1 + 1/2) * 2^0 = -1.5), field 1 is 0x3 (+1.5); B[0, 1] = 0x80:
  // field 0 is 0 (+0), field 1 is 0x8 (-0). As int4: 0xB - 16 = -5, 3, 0, 8 - 16 = -8. S[0, 0] =
  // -97 = 0x9F = 10 01 11 11 as int2 fields from the low end: 3 -> -1, 3 -> -1, 1, 2 -> -2.
  TEST_CASE("packed fields looked up in a table are the values decoded by hand") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def fields(B: T.Tensor((1, 2), "uint8"), S: T.Tensor((1, 1), "int8"),
           F: T.Tensor((2, 4), "float32"), Q: T.Tensor((1, 4), "int8")):
    with T.Kernel(1, threads=32) as bx:
        for i, j in T.Parallel(1, 4):
            F[0, j] = T.if_then_else((T.cast(B[i, j // 2], "int32") >> j % 2 * 4 & 8) == 8, -0.5,
                0.5) * T.cast(T.if_then_else((T.cast(B[i, j // 2], "int32") >> j % 2 * 4 + 1 & 3)
                == 0, T.cast(B[i, j // 2], "int32") >> j % 2 * 4 & 1, (2 + (T.cast(B[i, j // 2],
                "int32") >> j % 2 * 4 & 1)) << (T.cast(B[i, j // 2], "int32") >> j % 2 * 4 + 1 &
                3) - 1), "float32")
        for i, j in T.Parallel(1, 4):
            F[1, j] = T.cast((T.cast(B[i, j // 2], "int32") >> j % 2 * 4 & 15 ^ 8) - 8,
                "float32")
        for i, j in T.Parallel(1, 4):
            Q[i, j] = T.cast((T.cast(S[i, j // 4], "int32") >> j % 4 * 2 & 3 ^ 2) - 2, "int8")
)");
    TensorMap in = make_tensors(k, {}, {"F", "Q"}, 1);
    in.at("B").set(0, 0x3B);
    in.at("B").set(1, 0x80);
    in.at("S").set(0, -97);
    Outcome compiled = run(k, in, true);
    REQUIRE(compiled.error == "");
    const double fp4[] = {-1.5, 1.5, 0.0, -0.0}, int4[] = {-5, 3, 0, -8}, int2[] = {-1, -1, 1, -2};
    for (int j = 0; j < 4; ++j) {
      INFO("field " << j);
      CHECK(compiled.tensors.at("F").at(j) == fp4[j]);
      CHECK(std::signbit(compiled.tensors.at("F").at(j)) == std::signbit(fp4[j]));
      CHECK(compiled.tensors.at("F").at(4 + j) == int4[j]);
      CHECK(compiled.tensors.at("Q").at(j) == int2[j]);
    }
  }

  // With a step limit a 2-d row runs only where all its steps fit the batch before the next
  // hand-over (else the loop's iterations run one by one), so the stop falls on the generic
  // evaluator's statement; without one every step counts at once, and a whole run counts the
  // generic evaluator's steps: 1 for the i loop + 64 x (1 for the j loop + 16 stores) = 1089 a
  // block, 2 blocks.
  TEST_CASE("steps of 2-d rows are the generic evaluator's, with a limit and without") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def counted(A: T.Tensor((16,), "float32"), L: T.Tensor((64, 16), "float32")):
    with T.Kernel(2, threads=32) as bx:
        for i, j in T.Parallel(64, 16):
            L[i, j] = A[j] * i + bx
)");
    TensorMap in = make_tensors(k, {}, {"L"}, 5);
    for (int64_t limit : {int64_t{50}, int64_t{700}, int64_t{1500}, int64_t{0}}) {
      RunControl a(limit), b(limit);
      Outcome generic = run(k, in, false, 1, &a), compiled = run(k, in, true, 1, &b);
      INFO(limit);
      CHECK(compiled.error == generic.error);
      CHECK(a.steps() == b.steps());
      CHECK(differing(generic.tensors, compiled.tensors) == "");
      if (limit == 0) {
        CHECK(generic.error == "");
        CHECK(b.steps() == 2 * 1089);
      } else {
        CHECK(generic.error.find("steps") != std::string::npos);
      }
    }
  }

  // A one-argument builtin of a half is a lookup in a table of its f16 results (Call in
  // tile_parallel_expr.cpp). Each builtin over halves from -20 to 20 (2^20 overflows to inf, 2^-20
  // is subnormal, the log and square root of a negative number are NaN) and over those results
  // again (NaN and inf arguments), and over a float argument (no table): the generic bytes.
  TEST_CASE("builtins of halves give the generic evaluator's bytes on every kind of value") {
    const char* const builtins[] = {"exp2", "exp", "log", "log2",  "sqrt", "rsqrt",
                                    "tanh", "sin", "cos", "floor", "ceil", "abs"};
    for (const char* b : builtins) {
      const std::string call = std::string("T.") + b;
      const std::string body =
          "for i in T.Parallel(64):\n            B[i] = " + call + "(A[i] * 20.0)\n" +
          "        for i in T.Parallel(64):\n            C[i] = " + call + "(" + call +
          "(A[i] * 20.0) * 0.001)\n" +
          "        for i in T.Parallel(64):\n            D[i] = " + call + "(F[i] * 20.0)";
      check_like_generic(R"(import tilelang.language as T


@T.prim_func
def halves(A: T.Tensor((64,), "float16"), F: T.Tensor((64,), "float32"),
           B: T.Tensor((64,), "float16"), C: T.Tensor((64,), "float16"),
           D: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        )",
                         body, "", 8);
    }
  }

  // --max-steps stops a run at the same statement when every executed statement counts one step in
  // both paths: the message names where it stopped and how many steps were taken.
  TEST_CASE("a step limit stops a compiled nest where it stops the generic one") {
    const Example* e = find_example("softmax");
    Params p = make_params(*e, {});
    Kernel k = e->build(p);
    TensorMap in = inputs_of(*e, k, p, 1);
    for (int64_t limit : {100, 5000, 20000}) {
      RunControl a(limit), b(limit);
      Outcome generic = run(k, in, false, 1, &a), compiled = run(k, in, true, 1, &b);
      INFO(limit);
      CHECK(generic.error.find("steps") != std::string::npos);
      CHECK(compiled.error == generic.error);
      CHECK(a.steps() == b.steps());
    }
  }

}  // TEST_SUITE

TEST_SUITE("tile level: element fast paths") {
  // The compiled nests round to f16 and store f16 without round_to's double-rounding guard when
  // the value is exact in float; every other value takes round_to / encode themselves. Compared on
  // values of each kind: exact products of halves, doubles between two floats and between two
  // halves (the guard's cases), ties, the overflow edge 65520, subnormals, signed zeros, inf, NaN.
  TEST_CASE("f16 rounding and stores equal round_to and encode on every kind of value") {
    std::vector<double> values = {0.0,
                                  -0.0,
                                  1.0,
                                  65504.0,
                                  65519.99,
                                  65520.0,
                                  -65520.0,
                                  1e-8,
                                  -6e-8,
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(),
                                  1.0 + 0x1p-11,
                                  1.0 + 0x1p-11 + 0x1p-40,
                                  1.0 + 0x1p-11 - 0x1p-40,
                                  1.0 + 3 * 0x1p-11,  // a tie that rounds up to even
                                  -(1.0 + 3 * 0x1p-11),
                                  0x1p-14 * (1.0 + 0x1p-11),  // ties at the smallest normal
                                  0x1p-14 * (1.0 + 3 * 0x1p-11),
                                  65504.0 - 0x1p-30,
                                  65504.0 + 0x1p-30,
                                  0x1p-24,
                                  0x1p-25,
                                  3.5e38,
                                  -1e39,
                                  3.4028234e38,
                                  0x1p-14,
                                  0x1p-14 - 0x1p-26,
                                  0x1p-14 - 0x1p-25,
                                  -0x1p-14 + 0x1p-40,
                                  65504.0 + 1e-9,
                                  65503.99,
                                  65519.0,
                                  3 * 0x1p-25,
                                  5 * 0x1p-25,
                                  2049.0,
                                  2051.0,
                                  -2049.0,
                                  1e-30,
                                  -1e-30};
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-4.0, 4.0);
    for (int i = 0; i < 20000; ++i) {
      double a = round_to(DataType::f16(), u(rng)), b = round_to(DataType::f16(), u(rng));
      values.push_back(a * b);                // exact in float
      values.push_back(a * b * 1.000000001);  // between two floats
      values.push_back(u(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40) - 25));
    }
    for (int i = 0; i < 300000; ++i)  // across f16's whole range and past both ends
      values.push_back(u(rng) * std::ldexp(1.0, static_cast<int>(rng() % 50) - 32));
    HostTensor fast(DataType::f16(), {1}), slow(DataType::f16(), {1});
    int mismatches = 0;
    for (double x : values) {
      double r = element_access::round_f16(x), want = round_to(DataType::f16(), x);
      bool same = std::isnan(want) ? std::isnan(r) : std::memcmp(&r, &want, sizeof r) == 0;
      element_access::store_elem(element_access::ElemKind::kF16, fast, 0, x);
      slow.set(0, x);
      same = same && std::memcmp(fast.data(), slow.data(), 2) == 0;
      if (!same) {
        ++mismatches;
        INFO(x);
        CHECK(same);
      }
    }
    CHECK(mismatches == 0);
    CHECK(values.size() > 360000);

    // The row forms (round_f16_row, f16_bits_row) on rows of 64 and of 200 (across stretches)
    // of the same values, most holding an overflow or a NaN (the second pass of a stretch), on
    // rows of the normal ones only and of the finite ones up to 65504 (subnormals and zeros
    // among them: the one pass), and of each value rounded to float (rounded by the CPU, where
    // the build has AVX-512, sixteen at a time): the bits of round_to and of encode, element by
    // element.
    std::vector<double> normal, finite, floats;
    for (double x : values) {
      if (std::fabs(x) >= 0x1p-14 && std::fabs(x) <= 65504.0) normal.push_back(x);
      if (std::fabs(x) <= 65504.0) finite.push_back(x);
      floats.push_back(static_cast<float>(x));  // the CPU's conversion, where the build has it
    }
    CHECK(normal.size() > 100000);
    CHECK(finite.size() - normal.size() > 20000);
    int row_mismatches = 0, rows = 0;
    for (const std::vector<double>* all : {&values, &normal, &finite, &floats})
      for (size_t length : {64, 200}) {
        for (size_t lo = 0; lo < all->size(); lo += length) {
          const int64_t n = static_cast<int64_t>(std::min<size_t>(length, all->size() - lo));
          double rounded[200];
          uint16_t bits[200];
          std::copy(all->begin() + static_cast<int64_t>(lo),
                    all->begin() + static_cast<int64_t>(lo) + n, rounded);
          element_access::round_f16_row(rounded, n);
          element_access::f16_bits_row(all->data() + lo, n, bits);
          ++rows;
          for (int64_t k = 0; k < n; ++k) {
            const double x = (*all)[lo + static_cast<size_t>(k)],
                         want = round_to(DataType::f16(), x);
            slow.set(0, x);
            const bool same =
                (std::isnan(want) ? std::isnan(rounded[k])
                                  : std::memcmp(&rounded[k], &want, sizeof want) == 0) &&
                std::memcmp(&bits[k], slow.data(), 2) == 0;
            if (!same) {
              ++row_mismatches;
              INFO(x);
              CHECK(same);
            }
          }
        }
      }
    CHECK(row_mismatches == 0);
    CHECK(rows > 7000);
  }

  // compare() skips runs of elements with the same bits; what it reports must not change: 1000
  // f16 elements equal but for [3] (NaN in both: equal), [700] (1.0 vs 1.5: |0.5| > 1e-2 +
  // 1e-2 * 1.5, a mismatch) and [999] (2.0 vs 2.0078125, one f16 step: 0.0078125 <= 0.01 + 0.02,
  // passes with that error).
  // A row of halves is decoded by the CPU's conversion (the tail past a multiple of 8 by the
  // table): every one of the 65,536 bit patterns, in rows of 8 (the CPU's width), 13 (a tail of
  // 5) and 64, gives the table's double, bit for bit — the 1,022 signalling NaNs (0x7C01), whose
  // floats differ, and quiet ones (0xFE00) included.
  TEST_CASE("rows of halves decode to the table's values, NaN payloads included") {
    const float* table = element_access::f16_floats();
    std::vector<uint16_t> bits(1 << 16);
    for (size_t b = 0; b < bits.size(); ++b) bits[b] = static_cast<uint16_t>(b);
    std::vector<float> scratch;
    for (int64_t width : {8, 13, 64}) {
      std::vector<double> out(static_cast<size_t>(width));
      int64_t mismatched = 0;
      for (int64_t first = 0; first + width <= static_cast<int64_t>(bits.size()); first += width) {
        element_access::f16_values_row(bits.data() + first, width, out.data(), scratch);
        for (int64_t k = 0; k < width; ++k) {
          const double expected = table[bits[static_cast<size_t>(first + k)]];
          mismatched += std::memcmp(&expected, &out[static_cast<size_t>(k)], sizeof expected) != 0;
        }
      }
      INFO(width);
      CHECK(mismatched == 0);
    }
    const uint16_t nans[] = {0x3C00, 0x7C01, 0xFE00, 0x0001, 0x3C00, 0x7C00, 0x8000, 0x0400};
    std::vector<double> out(8);
    element_access::f16_values_row(nans, 8, out.data(), scratch);
    for (int k = 0; k < 8; ++k) {
      const double expected = table[nans[k]];
      CHECK(std::memcmp(&expected, &out[static_cast<size_t>(k)], sizeof expected) == 0);
    }
  }

  // Floats to halves by the CPU (T.copy of a float accumulator into an f16 tensor): every 4099th
  // float bit pattern (all exponents, both signs, subnormals, past 65504, inf) and the midpoint
  // of every pair of adjacent positive halves (a tie, to the even one) give Eigen::half's bits; a
  // row with a NaN is converted only up to its eight, the rest left to Eigen::half.
  TEST_CASE("floats round to halves by the CPU as Eigen::half rounds them, NaN rows left to it") {
    std::vector<float> floats;
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
      const float f = std::bit_cast<float>(static_cast<uint32_t>(b));
      if (!std::isnan(f)) floats.push_back(f);
    }
    const float* halves = element_access::f16_floats();
    for (uint32_t h = 0; h + 1 < 0x7C00; ++h)
      floats.push_back(static_cast<float>((static_cast<double>(halves[h]) + halves[h + 1]) / 2));
    floats.resize(floats.size() / 8 * 8);
    std::vector<uint16_t> bits(floats.size());
    const int64_t n = static_cast<int64_t>(floats.size());
    const int64_t done = floats_to_halves_in_hardware(floats.data(), bits.data(), n);
    if (done == 0) {
      MESSAGE("skipped: this CPU has no F16C conversion");
      return;
    }
    CHECK(done == n);
    int64_t mismatched = 0;
    for (int64_t k = 0; k < n; ++k) {
      const float f = floats[static_cast<size_t>(k)];
      mismatched +=
          bits[static_cast<size_t>(k)] != Eigen::numext::bit_cast<uint16_t>(Eigen::half(f));
    }
    CHECK(mismatched == 0);
    CHECK(n > 1000000);
    const float row[16] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, std::numeric_limits<float>::quiet_NaN()};
    CHECK(floats_to_halves_in_hardware(row, bits.data(), 16) == 8);
  }

  TEST_CASE("comparing tensors that are mostly bit-equal reports exactly the differing elements") {
    HostTensor a(DataType::f16(), {1000}), b(DataType::f16(), {1000});
    for (int64_t i = 0; i < 1000; ++i) a.set(i, 0.25 * static_cast<double>(i % 7));
    a.set(3, std::numeric_limits<double>::quiet_NaN());
    b = a;
    a.set(700, 1.0);
    b.set(700, 1.5);
    a.set(999, 2.0);
    b.set(999, 2.0078125);
    Comparison c = compare(a, b, Tolerance{1e-2, 1e-2});
    CHECK(!c.passed);
    CHECK(c.mismatches == 1);
    CHECK(c.first_mismatch == 700);
    CHECK(c.max_abs_err == 0.5);
    CHECK(c.max_rel_err == doctest::Approx(0.5 / 1.5));
    // With a negative tolerance even equal elements fail, as before the skip existed: every finite
    // element (999 of 1000; NaN equals NaN whatever the tolerance).
    CHECK(compare(a, a, Tolerance{-1.0, 0.0}).mismatches == 999);
  }

  // A tensor of three slices of 2^22 elements is compared on every core and the slices merged in
  // index order: mismatches in the last slice (at 9,000,000: 3 vs 0) and the first (at 5: 1 vs 0)
  // make the first mismatch 5, two in all, the largest error the last slice's 3; the bound lets
  // the one element it covers pass.
  TEST_CASE("comparing a tensor in slices reports what one pass over it reports") {
    const int64_t n = 3 * (int64_t{1} << 22);
    HostTensor a(DataType::f32(), {n}), b(DataType::f32(), {n});
    a.set(5, 1.0);
    a.set(9000000, 3.0);
    a.set(4200000, 0.5);  // within the bound below
    HostTensor bound(DataType::f32(), {n});
    bound.set(4200000, 0.5);
    Comparison c = compare(a, b, Tolerance{1e-3, 1e-3}, &bound);
    CHECK(!c.passed);
    CHECK(c.mismatches == 2);
    CHECK(c.first_mismatch == 5);
    CHECK(c.first_actual == 1.0);
    CHECK(c.first_expected == 0.0);
    CHECK(c.max_abs_err == 3.0);
    Comparison unbounded = compare(a, b, Tolerance{1e-3, 1e-3});
    CHECK(unbounded.mismatches == 3);
    CHECK(unbounded.first_mismatch == 5);
  }

}  // TEST_SUITE

TEST_SUITE("tile level: blocks on several workers") {
  // gemm_splitk adds each block's partial C tile into C with T.atomic_add: 4 x 4 output tiles of
  // 64 x 64, K = 512 split over the third grid axis. In float the sum of the partials depends on
  // their order, so two workers must apply them in the order one worker does.
  TEST_CASE("split-K tile atomics give one worker's bytes on two workers, run after run") {
    const Example* e = find_example("gemm_splitk");
    Params p = make_params(*e, {});
    Kernel k = e->build(p);
    TensorMap in = inputs_of(*e, k, p, 11);
    Outcome one = run(k, in, true, 1);
    CHECK(one.error == "");
    for (int rep = 0; rep < 4; ++rep) {
      Outcome two = run(k, in, true, 2);
      INFO(rep);
      CHECK(two.error == "");
      CHECK(differing(one.tensors, two.tensors) == "");
    }
  }

  // A failing block must not leave the blocks after it waiting for their turn at the atomics.
  TEST_CASE("a failing block does not hold up the atomics of the blocks after it") {
    Kernel k = parse(R"(import tilelang.language as T


@T.prim_func
def fail_then_add(A: T.Tensor((8, 16), "float32"), C: T.Tensor((16,), "float32")):
    with T.Kernel(8, threads=32) as bx:
        acc = T.alloc_fragment((16,), "float32")
        for i in T.Parallel(16):
            acc[i] = A[bx, i + bx // 7]
        T.atomic_add(C[0:16], acc)
)");
    TensorMap in = make_tensors(k, {}, {}, 2);
    Outcome two = run(k, in, true, 2);  // block 7 reads A[7, 16]: out of bounds
    CHECK(two.error.find("load of A[7, 16] is out of bounds") != std::string::npos);
  }

}  // TEST_SUITE
