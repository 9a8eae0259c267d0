// The file around the kernels: host code skipped whatever it is, module constants kept, what a
// def is decided by what it contains, several kernels picked with a name, and the eager
// @tilelang.jit style (T.const sizes, tensors declared in the body, T.empty outputs).
#include <doctest/doctest.h>

#include "core/expr_printer.h"
#include "core/kernel_parser.h"
#include "core/printer.h"

using namespace tessel;

namespace {

/// The first line of the error parsing `source` raises: "file: ..." for a malformed file,
/// "kernel: ..." for a wrong kernel, "no error" otherwise.
std::string error_of(const std::string& source,
                     const std::map<std::string, std::string>& defines = {},
                     const std::string& kernel = "") {
  try {
    parse_kernel(source, "k.py", defines, kernel);
  } catch (const KernelFileError& e) {
    std::string m = e.what();
    return "file: " + m.substr(0, m.find('\n'));
  } catch (const UserError& e) {
    std::string m = e.what();
    return "kernel: " + m.substr(0, m.find('\n'));
  }
  return "no error";
}

/// "A: (M, K) float16" for each parameter of `k`.
std::vector<std::string> signature(const Kernel& k) {
  std::vector<std::string> out;
  for (const Buffer& b : k->params) {
    std::string shape;
    for (const Expr& e : b->shape) shape += (shape.empty() ? "" : ", ") + to_string(e);
    out.push_back(b->name + ": (" + shape + ") " + b->dtype.name());
  }
  return out;
}

// Host code of every kind around one kernel generator, the way example and test files are
// written: none of it is read, and the kernel uses the module's constants.
const char* kHostFile = R"(# Copyright notice
"""A docstring."""
from __future__ import annotations
import argparse, sys
import torch
import torch.nn.functional as F
from einops import rearrange
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune

try:
    import triton
except ImportError:
    triton = None

torch.manual_seed(0)
DEVICE = torch.device("cuda")
CONFIGS = {"block": [64, 128], "stages": [1, 2]}
BLOCK = 64
dtype = "float16"
print(f"block {BLOCK}", file=sys.stderr)
lookup = {k: v for k, v in CONFIGS.items()}
width: int = 2


class Runner:
    def __init__(self, n=128):
        self.n = n


def ref_program(x):
    def twice(v):
        return v * 2
    return twice(x)


def main(n=4096):
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=n)
    args = parser.parse_args()
    def check(out):
        torch.testing.assert_close(out, ref_program(x), rtol=1e-2, atol=1e-2)
    with torch.no_grad():
        check(double(args.n)(torch.randn(args.n, device=DEVICE)))


@autotune(configs=CONFIGS, warmup=3, rep=10)
@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
def double(N, block=BLOCK):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = X[bx * block + i] * width
    return main


if __name__ == "__main__":
    main()
else:
    sys.exit(1)
)";

// An eager @tilelang.jit kernel: sizes from T.const, tensors declared in the body, an output
// made with T.empty and returned.
const char* kEagerFile = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def add(A, B, block_M: int = 32, block_N: int = 32, threads: int = 128, dtype=T.float16):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B: T.Tensor[[M, N], dtype]
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            C[by * block_M + i, bx * block_N + j] = (
                A[by * block_M + i, bx * block_N + j] + B[by * block_M + i, bx * block_N + j])
    return C
)";

}  // namespace

TEST_SUITE("parser file") {
  TEST_CASE("host code of any kind is skipped and module constants reach the kernel") {
    ParsedKernel p = parse_kernel(kHostFile, "k.py", {{"N", "256"}});
    CHECK(p.generator == "double");
    CHECK(signature(p.kernel) == std::vector<std::string>{"X: (256) float16", "Y: (256) float16"});
    // BLOCK = 64 sets the default block: ceil(256 / 64) = 4 blocks.
    CHECK(to_string(p.kernel->grid[0]) == "4");
    // out_idx=[-1] marks the last tensor as the output.
    CHECK(p.outputs == std::vector<std::string>{"Y"});
    // The def's parameters, not main()'s or ref_program's: N (4096 without -D: what main()
    // passes, see the next case) and block (64).
    REQUIRE(p.params.size() == 2);
    CHECK(p.params[0].name == "N");
    CHECK(p.params[0].default_text == "4096");
    CHECK(p.params[1].default_text == "64");
  }

  TEST_CASE("a host function is never taken for the kernel generator") {
    // main() defines nested defs and has a parameter; the kernel is `double`. No -D is asked
    // for: main() calls double(args.n), argparse's default for --n is main's n, and __main__
    // calls main() with its default 4096 (tests/test_parser_host_calls.cpp has the rules).
    CHECK(error_of(kHostFile) == "no error");
    ParsedKernel p = parse_kernel(kHostFile, "k.py", {});
    CHECK(signature(p.kernel) ==
          std::vector<std::string>{"X: (4096) float16", "Y: (4096) float16"});
    REQUIRE(p.params[0].host_call);
    CHECK(p.params[0].host_call->str() == "k.py:45:15");
  }

  TEST_CASE("a name set by host code says so where a kernel uses it") {
    std::string source = R"(import torch
import tilelang.language as T
SCALE = torch.finfo(torch.float16).max

@T.prim_func
def k(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        A[0] = SCALE
)";
    CHECK(error_of(source).rfind(
              "file: k.py:8:16: the stored value must be a number or an expression, got 'SCALE', "
              "set at line 3 by host code that Tessel does not run (",
              0) == 0);
    std::string call = R"(import tilelang.language as T
def helper(n):
    return n * 2

def gen(n=4):
    m = helper(n)
    @T.prim_func
    def k(A: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            A[0] = 1.0
    return k
)";
    CHECK(error_of(call) ==
          "file: k.py:6:9: cannot call the plain Python function 'helper' (line 2): Tessel does "
          "not run host code; the helpers of kernels are @T.macro functions, which it inlines");
  }

  TEST_CASE("several kernels: --kernel picks one, none picked lists them") {
    std::string source = R"(import tilelang.language as T

def fwd(n=64):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            A[0] = 1.0
    return main

def bwd(n=64):
    @T.prim_func
    def main(dA: T.Tensor((n,), "float32"), A: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            dA[0] = A[0]
    return main

def run():
    fwd()(None)
)";
    CHECK(error_of(source) ==
          "file: k.py: this file holds 2 kernels: fwd (line 3), bwd (line 10); pick one with "
          "--kernel NAME");
    CHECK(error_of(source, {}, "mid") ==
          "file: k.py: --kernel mid: this file has no kernel of that name; its kernels are fwd "
          "(line 3), bwd (line 10)");
    ParsedKernel b = parse_kernel(source, "k.py", {{"n", "8"}}, "bwd");
    CHECK(b.kernel->name == "bwd");
    CHECK(signature(b.kernel) == std::vector<std::string>{"dA: (8) float32", "A: (8) float32"});
    auto list = list_kernels(source, "k.py");
    REQUIRE(list.size() == 2);
    CHECK(list[0].name == "fwd");
    CHECK(list[1].name == "bwd");
    CHECK(list[1].loc.line == 10);
    REQUIRE(list[1].params.size() == 1);
    CHECK(list[1].params[0].default_text == "64");
  }

  TEST_CASE("variants chosen by if inside one generator, and a kernel picked by return") {
    std::string source = R"(import tilelang.language as T

def kernel(n=16, variant="plain"):
    if variant == "plain":
        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                A[0] = 1.0
    else:
        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(2, threads=32) as bx:
                A[bx] = 2.0

    @T.prim_func
    def other(A: T.Tensor((n,), "float32")):
        with T.Kernel(3, threads=32) as bx:
            A[bx] = 3.0

    return other if variant == "other" else main
)";
    CHECK(to_string(parse_kernel(source, "k.py").kernel->grid[0]) == "1");
    CHECK(to_string(parse_kernel(source, "k.py", {{"variant", "fast"}}).kernel->grid[0]) == "2");
    Kernel other = parse_kernel(source, "k.py", {{"variant", "other"}}).kernel;
    CHECK(other->name == "other");
    CHECK(to_string(other->grid[0]) == "3");
  }

  TEST_CASE("eager jit: T.const sizes, tensors declared in the body, a T.empty output") {
    ParsedKernel p = parse_kernel(kEagerFile, "k.py");
    CHECK(p.kernel->name == "add");
    CHECK(signature(p.kernel) ==
          std::vector<std::string>{"A: (M, N) float16", "B: (M, N) float16", "C: (M, N) float16"});
    REQUIRE(p.kernel->dynamic_vars.size() == 2);  // M and N stay symbolic
    CHECK(p.outputs == std::vector<std::string>{"C"});
    // The -D parameters: the non-tensor arguments, then the T.const sizes.
    std::vector<std::string> names;
    for (const KernelFileParam& param : p.params) names.push_back(param.name);
    CHECK(names == std::vector<std::string>{"block_M", "block_N", "threads", "dtype", "M", "N"});
    CHECK(p.params[4].kind == KernelFileParam::Kind::kConst);

    ParsedKernel set = parse_kernel(kEagerFile, "k.py", {{"M", "64"}, {"N", "96"}});
    CHECK(signature(set.kernel) == std::vector<std::string>{"A: (64, 96) float16",
                                                            "B: (64, 96) float16",
                                                            "C: (64, 96) float16"});
    CHECK(set.kernel->dynamic_vars.empty());
    // ceil(96 / 32) = 3 by ceil(64 / 32) = 2 blocks.
    CHECK(to_string(set.kernel->grid[0]) == "3");
    CHECK(to_string(set.kernel->grid[1]) == "2");
  }

  TEST_CASE("T.const splits names at commas or spaces") {
    std::string source = R"(import tilelang
import tilelang.language as T

@tilelang.jit
def f(X):
    B, S = T.const("B S")
    H = T.const("H")
    X: T.Tensor((B, S, H), "float32")
    with T.Kernel(B, threads=32) as bb:
        X[bb, 0, 0] = 0.0
)";
    ParsedKernel p = parse_kernel(source, "k.py", {{"H", "4"}});
    CHECK(signature(p.kernel) == std::vector<std::string>{"X: (B, S, 4) float32"});
    CHECK(error_of(source, {{"H", "four"}}).find("-D H=four") != std::string::npos);
  }

  TEST_CASE("eager jit errors say what the style needs") {
    std::string not_returned = R"(import tilelang
import tilelang.language as T
@tilelang.jit
def f(A):
    A: T.Tensor((4,), "float32")
    C = T.empty((4,), "float32")
    D = T.empty((4,), "float32")
    with T.Kernel(1, threads=32) as bx:
        C[0] = A[0]
        D[0] = A[0]
    return C
)";
    CHECK(error_of(not_returned) ==
          "file: k.py:11:12: tensor 'D' made with T.empty is not returned; return every output "
          "(return D, ...)");
    std::string wrong_return = R"(import tilelang
import tilelang.language as T
@tilelang.jit
def f(A):
    A: T.Tensor((4,), "float32")
    with T.Kernel(1, threads=32) as bx:
        A[0] = 1.0
    return A
)";
    CHECK(error_of(wrong_return) ==
          "file: k.py:8:12: a kernel function returns the tensors it made with T.empty, got "
          "buffer 'A'");
    std::string not_param = R"(import tilelang
import tilelang.language as T
@tilelang.jit
def f(A):
    A: T.Tensor((4,), "float32")
    Z: T.Tensor((4,), "float32")
    with T.Kernel(1, threads=32) as bx:
        A[0] = 1.0
)";
    CHECK(error_of(not_param).rfind(
              "file: k.py:6:5: `Z: T.Tensor(...)` declares a tensor parameter of an eager "
              "@tilelang.jit function, before its T.Kernel launch, but 'Z' is not a parameter of "
              "'f' here",
              0) == 0);
    std::string empty_inside = R"(import tilelang
import tilelang.language as T
@tilelang.jit
def f(A):
    A: T.Tensor((4,), "float32")
    with T.Kernel(1, threads=32) as bx:
        C = T.empty((4,), "float32")
)";
    CHECK(error_of(empty_inside)
              .rfind("file: k.py:7:13: T.empty makes an output tensor of an "
                     "eager @tilelang.jit function, before its T.Kernel launch",
                     0) == 0);
  }

  TEST_CASE("out_idx marks outputs of the returned kernel, counted from either end") {
    std::string source = R"(import tilelang
import tilelang.language as T
@tilelang.jit(out_idx=OUT, target="cuda")
def g(n=4):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"),
             C: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            C[0] = A[0] + B[0]
    return main
)";
    auto with = [&](const std::string& out_idx) {
      std::string s = source;
      s.replace(s.find("OUT"), 3, out_idx);
      return s;
    };
    CHECK(parse_kernel(with("[-1]"), "k.py").outputs == std::vector<std::string>{"C"});
    CHECK(parse_kernel(with("[1, 2]"), "k.py").outputs == std::vector<std::string>{"B", "C"});
    CHECK(parse_kernel(with("0"), "k.py").outputs == std::vector<std::string>{"A"});
    CHECK(parse_kernel(with("None"), "k.py").outputs.empty());
    CHECK(error_of(with("[3]")) ==
          "file: k.py:3:23: out_idx must index the 3 tensors of kernel 'g' (-3 to 2), got the "
          "number 3");
  }
}
