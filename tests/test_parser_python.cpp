// Generator-level Python of kernel files: the constants real files compute before the kernel
// (Python integers and floats, strings, tuples, None, assert, conditional and boolean
// expressions, built-ins), each checked against the value Python gives, worked out by hand.
#include <doctest/doctest.h>

#include "core/expr_printer.h"
#include "core/kernel_parser.h"
#include "core/printer.h"

using namespace tessel;

namespace {

/// A file whose enclosing def runs `body` (lines indented by 4) and then a kernel that stores
/// `value` into A[0], A of `dtype`; returns the printed store's right-hand side.
std::string stored(const std::string& body, const std::string& value,
                   const std::string& dtype = "int64",
                   const std::map<std::string, std::string>& defines = {},
                   const std::string& params = "") {
  std::string source =
      "import math\n"
      "import tilelang\n"
      "import tilelang.language as T\n"
      "from tvm import DataType\n"
      "\n"
      "def k(" +
      params + "):\n" + body +
      "    @T.prim_func\n"
      "    def main(A: T.Tensor((1,), \"" +
      dtype +
      "\")):\n"
      "        with T.Kernel(1, threads=32) as bx:\n"
      "            A[0] = " +
      value +
      "\n"
      "    return main\n";
  std::string printed = print_kernel(parse_kernel(source, "k.py", defines).kernel);
  size_t at = printed.find("A[0] = ");
  REQUIRE(at != std::string::npos);
  size_t end = printed.find('\n', at);
  std::string rhs = printed.substr(at + 7, end - at - 7);
  const std::string wrap = "T." + dtype + "(";  // a literal of A's type prints as T.int64(...)
  if (rhs.rfind(wrap, 0) == 0 && rhs.back() == ')')
    rhs = rhs.substr(wrap.size(), rhs.size() - wrap.size() - 1);
  return rhs;
}

/// "ok" when `assert cond` holds in an enclosing def whose body starts with `body`; else the
/// error's first line.
std::string holds(const std::string& cond, const std::string& body = "",
                  const std::map<std::string, std::string>& defines = {},
                  const std::string& params = "") {
  try {
    stored(body + "    assert " + cond + "\n", "0", "int64", defines, params);
  } catch (const UserError& e) {
    std::string m = e.what();
    return m.substr(0, m.find('\n'));
  }
  return "ok";
}

/// The first line of the error that parsing `body` (then a kernel) raises, with its kind.
std::string error_of(const std::string& body,
                     const std::map<std::string, std::string>& defines = {},
                     const std::string& params = "") {
  try {
    stored(body, "0", "int64", defines, params);
  } catch (const KernelFileError& e) {
    std::string m = e.what();
    return "file: " + m.substr(0, m.find('\n'));
  } catch (const UserError& e) {
    std::string m = e.what();
    return "kernel: " + m.substr(0, m.find('\n'));
  }
  return "no error";
}

}  // namespace

TEST_SUITE("parser python") {
  TEST_CASE("integers are exact in 64 bits and overflow is an error") {
    // 2**40 // 2**20 = 2**20 = 1048576; 3 * 10**12 = 3000000000000 (past 32 bits).
    CHECK(stored("", "2 ** 40 // 2 ** 20") == "1048576");
    CHECK(stored("    big = 3 * 10 ** 12\n", "big // 1000") == "3000000000");
    // Python floors: -7 // 2 = -4 and -7 % 2 = 1.
    CHECK(holds("-7 // 2 == -4 and -7 % 2 == 1") == "ok");
    CHECK(error_of("    x = 2 ** 63\n").find("does not fit in 64 bits") != std::string::npos);
    CHECK(error_of("    x = 9223372036854775807 + 1\n").find("does not fit in 64 bits") !=
          std::string::npos);
    CHECK(error_of("    x = 1 // 0\n").find("division or modulo by zero") != std::string::npos);
  }

  TEST_CASE("powers with negative and fractional exponents are floats") {
    // 2 ** -1 = 0.5, 16 ** 0.5 = 4.0, 64 ** (1 / 3) is 3.9999999999999996 in Python.
    CHECK(stored("", "2 ** -1", "float32") == "0.5");
    CHECK(stored("", "16 ** 0.5", "float32") == "4.0");
    CHECK(holds("abs(64 ** (1 / 3) - 4) < 1e-6") == "ok");
    CHECK(error_of("    x = (-8) ** 0.5\n").find("complex") != std::string::npos);
    CHECK(error_of("    x = 0 ** -1\n").find("negative power") != std::string::npos);
  }

  TEST_CASE("float() and int() convert as Python does") {
    // int truncates towards zero: int(7.9) = 7, int(-7.9) = -7.
    CHECK(holds("int(7.9) == 7 and int(-7.9) == -7") == "ok");
    CHECK(holds("float(3) == 3.0 and int('12') == 12 and float('0.25') == 0.25") == "ok");
    CHECK(stored("", "float(3) / 4", "float32") == "0.75");
    CHECK(error_of("    x = int('twelve')\n").find("\"twelve\" is not a number") !=
          std::string::npos);
  }

  TEST_CASE("None defaults, `is None` and `is not None`") {
    // N defaults to M when not given: N = 256; with -D N=64 it is 64.
    const std::string body = "    N = M if N is None else N\n";
    const std::string params = "M=256, N=None";
    CHECK(stored(body, "N", "int64", {}, params) == "256");
    CHECK(stored(body, "N", "int64", {{"N", "64"}}, params) == "64");
    CHECK(holds("N is not None", "", {{"N", "1"}}, params) == "ok");
    CHECK(holds("N is None and M is not None", "", {}, params) == "ok");
  }

  TEST_CASE("and/or and conditional expressions evaluate only what Python evaluates") {
    // With d None, `DataType(d).bits` would fail; Python never evaluates it here.
    CHECK(stored("    d = None\n", "DataType(d).bits if d is not None else 16") == "16");
    CHECK(holds("not (d is not None and DataType(d).bits == 8)", "    d = None\n") == "ok");
    CHECK(holds("(0 or 5) == 5 and (3 and 0) == 0 and (None or 'x') == 'x'") == "ok");
    CHECK(holds("not [] and not '' and not None and [0]") == "ok");
  }

  TEST_CASE("chained assignment and tuple unpacking from bare tuples") {
    CHECK(stored("    a = b = 8\n", "a * b") == "64");
    // a, b = 3, 4 then a, b = b, a swaps: a = 4, b = 3, so a * 10 + b = 43.
    CHECK(stored("    a, b = 3, 4\n    a, b = b, a\n", "a * 10 + b") == "43");
    CHECK(
        error_of("    a, b = 1, 2, 3\n").find("unpacking into 2 names needs a tuple of 2 items") !=
        std::string::npos);
  }

  TEST_CASE("tuple-valued conditional expressions, indexing and slicing") {
    const std::string body = "    bm, bn = (64, 32) if fast else (32, 64)\n";
    CHECK(stored(body, "bm * 1000 + bn", "int64", {}, "fast=True") == "64032");
    CHECK(stored(body, "bm * 1000 + bn", "int64", {{"fast", "False"}}, "fast=True") == "32064");
    // [1, 2, 3][-1] = 3; (10, 20, 30)[1:] = (20, 30); len((20, 30)) = 2.
    CHECK(stored("    lst = [1, 2, 3]\n", "lst[-1] + len((10, 20, 30)[1:])") == "5");
    CHECK(error_of("    x = [1, 2][2]\n").find("index 2 is out of range") != std::string::npos);
  }

  TEST_CASE("(n) is a number and a 1-d shape") {
    auto parsed = parse_kernel(R"(
import tilelang.language as T
def k(n=48):
    @T.prim_func
    def main(A: T.Tensor((n), "float32")):
        with T.Kernel(1, threads=32) as bx:
            A[0] = 1.0
    return main
)",
                               "k.py");
    REQUIRE(parsed.kernel->params.size() == 1);
    CHECK(to_string(parsed.kernel->params[0]->shape[0]) == "48");
  }

  TEST_CASE("dtype names: DataType(dtype).bits, T.float16, torch dtypes, string joins") {
    CHECK(stored("", "DataType('bfloat16').bits") == "16");
    CHECK(stored("", "T.int8.bits + T.float32.bits") == "40");
    CHECK(holds("'_'.join([dtype, 'x', str(128 // DataType(dtype).bits)]) == 'float16_x_8'", "", {},
                "dtype='float16'") == "ok");
    CHECK(holds("T.float16 == 'float16' and T.bfloat16 != T.float16") == "ok");
    CHECK(holds("torch.bfloat16 == 'bfloat16'", "    import torch\n") == "ok");
  }

  TEST_CASE("string parameters select variants with ==, != and in") {
    const std::string params = "bug='none'";
    CHECK(holds("bug == 'none' and bug != 'race'", "", {}, params) == "ok");
    CHECK(holds("bug == 'race' and bug in ('race', 'oob') and bug not in ['none']", "",
                {{"bug", "race"}}, params) == "ok");
    CHECK(holds("'ace' in bug", "", {{"bug", "race"}}, params) == "ok");
  }

  TEST_CASE("tilelang.cdiv, T.ceildiv, math and min/max compute constants") {
    // ceil(100 / 32) = 4, ceil(-7 / 2) = -3, sqrt(16) = 4.0, log2(1024) = 10.0.
    CHECK(stored("", "tilelang.cdiv(100, 32) * 10 + T.ceildiv(96, 32)") == "43");
    CHECK(holds("tilelang.cdiv(-7, 2) == -3") == "ok");
    CHECK(holds("math.sqrt(16) == 4.0 and math.log2(1024) == 10.0 and math.ceil(2.1) == 3") ==
          "ok");
    CHECK(holds("min(3, 1, 2) == 1 and max((4, 9)) == 9 and abs(-5) == 5") == "ok");
  }

  TEST_CASE("sequences: concatenation, repetition, len") {
    CHECK(holds("'ab' * 2 == 'abab' and [0] * 3 == [0, 0, 0] and (1,) + (2,) == (1, 2)") == "ok");
    CHECK(error_of("    x = (1, 2) + 3\n") ==
          "file: k.py:7:16: operator '+' is not defined between the tuple (1, 2) and the number "
          "3; at compile time Tessel computes with numbers, strings, tuples and None as Python "
          "does, and builds expressions of numbers");
  }

  TEST_CASE("a false assert is a kernel error quoting its message and line") {
    std::string e = error_of("    assert M % 64 == 0, \"M must be a multiple of 64\"\n",
                             {{"M", "100"}}, "M=128");
    CHECK(e == "kernel: k.py:7:5: assertion failed: M must be a multiple of 64");
    CHECK(error_of("    assert M > 1000\n", {}, "M=128") ==
          "kernel: k.py:7:5: assertion failed: `M > 1000`");
    // The message is evaluated only when the assertion fails: a host call there is harmless.
    CHECK(error_of("    assert M == 128, torch.cuda.get_device_name()\n", {}, "M=128") ==
          "no error");
  }

  TEST_CASE("an assert on a symbolic size is kept for the run") {
    auto parsed = parse_kernel(R"(
import tilelang.language as T
N = T.dynamic("N")
@T.prim_func
def k(A: T.Tensor((N,), "float32")):
    assert N % 4 == 0, "N must be a multiple of 4"
    with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
        A[bx] = 1.0
)",
                               "k.py");
    REQUIRE(parsed.assertions.size() == 1);
    CHECK(parsed.assertions[0].message == "assertion failed: N must be a multiple of 4");
    CHECK(to_string(parsed.assertions[0].condition) == "N % 4 == 0");
  }

  TEST_CASE("unsupported constructs say what they are") {
    CHECK(error_of("    xs = [i * 2 for i in range(4)]\n").find("comprehensions") !=
          std::string::npos);
    CHECK(error_of("    d = {'a': 1}\n").find("dicts and sets are not supported") !=
          std::string::npos);
    CHECK(error_of("    x = '%d' % 3\n").find("string formatting is not supported") !=
          std::string::npos);
  }
}
