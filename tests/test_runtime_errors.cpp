// Errors met while a kernel runs, at both levels: an integer division by zero in an index names
// the kernel, block, thread, source line, buffer and indices in the same words at tile and thread
// level; buffers whose size is only known at run time are checked against the limits before a
// byte of them is allocated.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <string>

#include "core/error.h"
#include "core/kernel_parser.h"
#include "core/passes.h"
#include "examples/run_example.h"
#include "interp/thread_interpreter.h"

using namespace tessel;

namespace {

/// The user error `f` raises ("" when none); any other exception fails the test.
template <typename F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// The messages of running `source` at tile level and, lowered for sm80, at thread level.
struct LevelErrors {
  std::string tile, thread;
};

LevelErrors run_both(const std::string& source, const std::string& file,
                     const std::vector<std::string>& outputs,
                     const std::map<std::string, std::string>& defines = {}) {
  Kernel k = parse_kernel(source, file, defines).kernel;
  TensorMap tile = make_tensors(k, {}, outputs, 1), thread = tile;
  LevelErrors e;
  e.tile = user_error_of([&] { run_tile_level(k, tile); });
  e.thread = user_error_of([&] {
    Kernel lowered = lower_kernel(k, find_target("sm80")).kernel;
    run_thread_level(lowered, thread);
  });
  return e;
}

long peak_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

}  // namespace

TEST_SUITE("runtime errors") {
  // Thread 5 divides by tx - 5 = 0; line 8 is the statement (1-based, counted in the text).
  TEST_CASE("a division by zero in a load's index names the buffer and indices at both levels") {
    LevelErrors e = run_both(R"(import tilelang.language as T


@T.prim_func
def div_load(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        tx = T.get_thread_binding()
        B[tx] = A[64 // (tx - 5) % 64]
)",
                             "div_load.py", {"B"});
    for (const std::string* m : {&e.tile, &e.thread}) {
      INFO(*m);
      CHECK(contains(*m, "kernel 'div_load', block (0,), thread 5 (at div_load.py:8:"));
      CHECK(contains(*m, "integer division by zero in `64 // (tx - 5)`"));
      CHECK(contains(*m, "the divisor `tx - 5` is 0"));
      CHECK(contains(*m, "in an index of the load of A[64 // (tx - 5) % 64]"));
    }
    CHECK(e.tile == e.thread);
  }

  // (tx % (tx - 7)) % 64 is in bounds for every thread but 7, whose divisor is 0.
  TEST_CASE("a division by zero in a store's index names the buffer and indices at both levels") {
    LevelErrors e = run_both(R"(import tilelang.language as T


@T.prim_func
def div_store(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        tx = T.get_thread_binding()
        B[tx % (tx - 7) % 64] = A[tx]
)",
                             "div_store.py", {"B"});
    for (const std::string* m : {&e.tile, &e.thread}) {
      INFO(*m);
      CHECK(contains(*m, "kernel 'div_store', block (0,), thread 7 (at div_store.py:8:"));
      CHECK(contains(*m, "integer division by zero in `tx % (tx - 7)`"));
      CHECK(contains(*m, "in an index of the store to B[tx % (tx - 7) % 64]"));
    }
    CHECK(e.tile == e.thread);
  }

  TEST_CASE("a division by zero outside an index names the line but no buffer") {
    LevelErrors e = run_both(R"(import tilelang.language as T


@T.prim_func
def div_value(A: T.Tensor((64,), "int32"), B: T.Tensor((64,), "int32")):
    with T.Kernel(1, threads=32) as bx:
        tx = T.get_thread_binding()
        B[tx] = A[tx] // (tx - 2)
)",
                             "div_value.py", {"B"});
    for (const std::string* m : {&e.tile, &e.thread}) {
      INFO(*m);
      CHECK(contains(*m, "kernel 'div_value', block (0,), thread 2 (at div_value.py:8:"));
      CHECK(contains(*m, "the divisor `tx - 2` is 0"));
      CHECK(!contains(*m, "in an index"));
    }
  }

  // A shared buffer whose extent is the scalar parameter n: 2**30 floats are 4 GiB, over the
  // 227 KiB of the largest shared memory (sm90's), at both levels and before any allocation.
  TEST_CASE("a shared buffer sized by a scalar parameter is checked before it is allocated") {
    long before = peak_mib();
    const char* source = R"(import tilelang.language as T


@T.prim_func
def scalar_shared(A: T.Tensor((128,), "float32"), n: T.int32):
    with T.Kernel(1, threads=128) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((n,), "float32")
        S[tx] = A[tx]
        A[tx] = S[tx]
)";
    LevelErrors e = run_both(source, "scalar_shared.py", {}, {{"n", "1073741824"}});
    for (const std::string* m : {&e.tile, &e.thread}) {
      INFO(*m);
      CHECK(contains(*m, "kernel 'scalar_shared'"));
      CHECK(contains(*m, "S 4294967296 B"));
    }
    CHECK(peak_mib() - before < 256);
  }

  // Sizes known only inside a block (here from the block index) pass the check before the run;
  // each block checks its buffers before allocating them. Block 1's S has 2**30 + 128 floats:
  // 4 * (2**30 + 128) = 4294967808 bytes; block 1's acc 100001 floats, one 32-bit register each.
  TEST_CASE("buffers sized by the block index are checked by the block, before allocation") {
    long before = peak_mib();
    LevelErrors shared = run_both(R"(import tilelang.language as T


@T.prim_func
def bx_shared(A: T.Tensor((128,), "float32")):
    with T.Kernel(2, threads=128) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((bx * 1073741824 + 128,), "float32")
        S[tx] = A[tx]
        A[tx] = S[tx]
)",
                                  "bx_shared.py", {});
    for (const std::string* m : {&shared.tile, &shared.thread}) {
      INFO(*m);
      CHECK(contains(*m, "kernel 'bx_shared': 'S' (at bx_shared.py:8:"));
      CHECK(contains(*m,
                     "of shape [1073741952], float32, would take 4294967808 bytes of shared "
                     "memory, over the "));
      CHECK(contains(*m, "nothing was allocated"));
    }
    CHECK(contains(shared.tile, "232448 bytes (227 KiB) a block can use;"));  // sm90's, the most
    CHECK(contains(shared.thread, "166912 bytes (163 KiB) a block can use on sm80"));
    LevelErrors local = run_both(R"(import tilelang.language as T


@T.prim_func
def bx_local(A: T.Tensor((128,), "float32")):
    with T.Kernel(2, threads=128) as bx:
        tx = T.get_thread_binding()
        acc = T.alloc_local((bx * 100000 + 1,), "float32")
        acc[0] = A[tx]
        A[tx] = acc[0]
)",
                                 "bx_local.py", {});
    for (const std::string* m : {&local.tile, &local.thread}) {
      INFO(*m);
      CHECK(contains(*m, "kernel 'bx_local': 'acc' (at bx_local.py:8:"));
      CHECK(contains(*m,
                     "of shape [100001], float32, would take 100001 32-bit registers per "
                     "thread, over the "));
    }
    CHECK(contains(local.tile, "over the 512 registers a thread can have;"));  // gfx90a's, the most
    CHECK(contains(local.thread, "over the 255 registers a thread can have on sm80"));
    CHECK(peak_mib() - before < 256);
  }
}
