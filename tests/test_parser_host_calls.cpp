// The values a file's own host code passes to its kernel def stand for the parameters -D leaves
// unset: `kernel = rms_norm(M, N, blk_m)` under `if __name__ == "__main__":`, a host main()'s
// defaults, argparse's defaults, keyword arguments; -D still wins, and a call Tessel cannot
// evaluate is named in the error.
#include <doctest/doctest.h>

#include "core/expr_printer.h"
#include "core/kernel_parser.h"

using namespace tessel;

namespace {

/// An element-wise kernel generator with three parameters and no defaults, then `host`.
std::string with_host(const std::string& host) {
  return R"(import argparse
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def scale_rows(M, N, blk_m, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            for i, j in T.Parallel(blk_m, N):
                B[bx * blk_m + i, j] = A[bx * blk_m + i, j] * 2.0
    return main


)" + host;
}

/// "M=64 N=256 ..." for the parameters of the parsed file, in order.
std::string values(const ParsedKernel& p) {
  std::string out;
  for (const KernelFileParam& param : p.params) {
    out += (out.empty() ? "" : " ") + param.name + "=" + param.default_text.value_or("?");
  }
  return out;
}

std::string shape_of(const Kernel& k, size_t i) {
  std::string s;
  for (const Expr& e : k->params[i]->shape) s += (s.empty() ? "" : ", ") + to_string(e);
  return s;
}

std::string error_of(const std::string& source, const std::map<std::string, std::string>& d = {}) {
  try {
    parse_kernel(source, "k.py", d);
  } catch (const UserError& e) {
    std::string m = e.what();
    return m.substr(0, m.find('\n'));
  }
  return "no error";
}

}  // namespace

TEST_SUITE("parser host calls") {
  TEST_CASE("the sizes the __main__ block passes are the parameters' values") {
    std::string source = with_host(R"(if __name__ == "__main__":
    M, N, blk_m = 64, 256, 4
    kernel = scale_rows(M, N, blk_m)
    x = torch.randn(M, N)
    torch.testing.assert_close(kernel(x), x * 2)
)");
    ParsedKernel p = parse_kernel(source, "k.py", {});
    CHECK(values(p) == "M=64 N=256 blk_m=4 threads=128");
    CHECK(shape_of(p.kernel, 0) == "64, 256");
    CHECK(to_string(p.kernel->grid[0]) == "16");  // 64 rows / 4 per block
    // The call is on line 19 of the file (the kernel text is 16 lines, then the if).
    REQUIRE(p.params[0].host_call);
    CHECK(p.params[0].host_call->line == 19);
    CHECK(!p.params[3].host_call);  // threads is its default, not passed
  }

  TEST_CASE("-D overrides what the host code passes") {
    std::string source = with_host(R"(if __name__ == "__main__":
    kernel = scale_rows(64, 256, 4)
)");
    ParsedKernel p = parse_kernel(source, "k.py", {{"M", "32"}});
    CHECK(shape_of(p.kernel, 0) == "32, 256");
    // What a run without -D would take is still listed, with its call.
    CHECK(values(p) == "M=64 N=256 blk_m=4 threads=128");
  }

  TEST_CASE("a host main's defaults and argparse's defaults flow into the call") {
    // __main__ passes argparse's defaults (M 128, blk_m 8) to main(); main's own default N 512
    // is used for the argument __main__ leaves out; threads comes by keyword.
    std::string source = with_host(R"(def main(M=1024, N=512, blk_m=1, verbose=False):
    rows = M
    kernel = scale_rows(rows, N, blk_m, threads=64)
    print(kernel.get_kernel_source() if verbose else "")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=128, help="rows")
    parser.add_argument("--blk-m", dest="blk", type=int, default=8)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    main(args.m, blk_m=args.blk, verbose=args.verbose)
)");
    ParsedKernel p = parse_kernel(source, "k.py", {});
    CHECK(values(p) == "M=128 N=512 blk_m=8 threads=64");
    CHECK(to_string(p.kernel->grid[0]) == "16");  // 128 rows / 8 per block
    CHECK(p.kernel->threads == 64);
  }

  TEST_CASE("a call Tessel cannot evaluate is skipped, whole, for a later one that it can") {
    // TileLang's autotuning examples: the first call spreads a tuned config with *, the
    // second passes constants; none of the first call's arguments is taken.
    std::string source = with_host(R"(def main():
    best = tune()
    if best:
        kernel = scale_rows(256, 256, *best)
    else:
        kernel = scale_rows(256, 128, 2)
)");
    ParsedKernel p = parse_kernel(source, "k.py", {});
    CHECK(values(p) == "M=256 N=128 blk_m=2 threads=128");
  }

  TEST_CASE("a call passing host objects is named in the error") {
    std::string source = with_host(R"(if __name__ == "__main__":
    x = torch.randn(64, 64)
    kernel = scale_rows(x.shape[0], 64, 4)
)");
    std::string e = error_of(source);
    CHECK(e.find("parameter 'M' of 'scale_rows' has no default and the call at line 19 passes "
                 "a value Tessel cannot evaluate") != std::string::npos);
    CHECK(e.find("'x', set at line 18 by host code") != std::string::npos);
    CHECK(e.find("give it with -D M=VALUE") != std::string::npos);
    // A call is taken whole or not at all: with M set, N is still missing.
    CHECK(error_of(source, {{"M", "32"}})
              .find("parameter 'N' of 'scale_rows' has no default and "
                    "the call at line 19") != std::string::npos);
    ParsedKernel p = parse_kernel(source, "k.py", {{"M", "32"}, {"N", "64"}, {"blk_m", "4"}});
    CHECK(values(p) == "M=? N=? blk_m=? threads=128");
    CHECK(shape_of(p.kernel, 0) == "32, 64");
  }

  TEST_CASE("tessel list shows the values the host code passes and where") {
    std::string source = with_host(R"(if __name__ == "__main__":
    kernel = scale_rows(M=96, N=32, blk_m=3)
)");
    std::vector<KernelFileEntry> list = list_kernels(source, "k.py");
    REQUIRE(list.size() == 1);
    REQUIRE(list[0].params.size() == 4);
    CHECK(list[0].params[0].default_text == "96");
    CHECK(list[0].params[2].default_text == "3");
    REQUIRE(list[0].params[1].host_call);
    CHECK(list[0].params[1].host_call->str() == "k.py:18:14");
    CHECK(list[0].params[3].default_text == "128");
    CHECK(!list[0].params[3].host_call);
  }

  TEST_CASE("calls of the def from its own body or of another def's attribute are not taken") {
    std::string source = with_host(R"(class Wrapper:
    def scale_rows(self, n):
        return n


if __name__ == "__main__":
    w = Wrapper()
    w.scale_rows(5)
)");
    CHECK(error_of(source) ==
          "k.py:8:16: parameter 'M' of 'scale_rows' has no default; give it with -D M=VALUE");
  }
}
