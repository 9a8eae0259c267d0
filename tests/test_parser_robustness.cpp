// Generated inputs never crash the kernel-file parser: truncated, spliced and mutated kernel
// files either parse or raise a UserError — never an InternalError or another exception — and a
// mutant that parses prints and parses back. (tests/fuzz/fuzz_parser.cpp is the libFuzzer form.)
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/kernel_parser.h"
#include "core/printer.h"
#include "examples/registry.h"

using namespace tessel;

namespace {

std::vector<std::string> seed_sources() {
  std::vector<std::string> sources;
  std::string dir = std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".py") continue;
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    sources.push_back(text.str());
  }
  for (const char* name : {"gemm_mma", "warp_shuffle_reduce", "elementwise"}) {
    const Example* e = find_example(name);
    if (e) sources.push_back(print_kernel(e->build(make_params(*e, {}))));
  }
  std::sort(sources.begin(), sources.end());
  return sources;
}

/// Parses `source`; fails the test when anything but a UserError escapes.
void must_not_crash(const std::string& source, int& accepted) {
  try {
    ParsedKernel parsed = parse_kernel(source, "mutant.py");
    ++accepted;
    std::string printed = print_kernel(parsed.kernel);
    try {
      (void)parse_kernel(printed, "printed.py");
    } catch (const UserError& e) {
      FAIL_CHECK("an accepted kernel's printed form does not parse back: " << std::string(e.what())
                                                                           << "\n"
                                                                           << printed);
    }
  } catch (const UserError&) {
    // expected for most mutants
  } catch (const std::exception& e) {
    FAIL_CHECK("not a UserError: " << std::string(e.what()) << "\ninput:\n" << source);
  }
}

}  // namespace

TEST_SUITE("parser robustness") {
  TEST_CASE("every prefix of a kernel file parses or raises a UserError") {
    int accepted = 0;
    for (const std::string& source : seed_sources()) {
      size_t step = std::max<size_t>(1, source.size() / 150);
      for (size_t n = 0; n < source.size(); n += step)
        must_not_crash(source.substr(0, n), accepted);
    }
    CHECK(accepted > 0);  // cutting trailing blank lines or the return still parses
  }

  TEST_CASE("mutated kernel files parse or raise a UserError") {
    static const char* kPieces[] = {"(",
                                    ")",
                                    "[",
                                    "]",
                                    ":",
                                    "=",
                                    ",",
                                    ".",
                                    "T.",
                                    "for ",
                                    "if ",
                                    "else:",
                                    "\n",
                                    "    ",
                                    "\t",
                                    "lambda ",
                                    "'",
                                    "\"",
                                    "\"\"\"",
                                    "#",
                                    "@",
                                    "**",
                                    "-",
                                    "~",
                                    "0",
                                    "1e309",
                                    "99999999999999999999",
                                    "0x",
                                    "\\",
                                    "not ",
                                    " in ",
                                    "T.Kernel(",
                                    "T.copy(",
                                    "T.alloc_shared(",
                                    "None",
                                    "*",
                                    "//",
                                    "% 0",
                                    "// 0",
                                    "<< 70",
                                    "True",
                                    "def ",
                                    "@T.macro\n",
                                    "return ",
                                    "with ",
                                    "as ",
                                    "A[0:1]",
                                    "_tir_packed_to_unsigned_convert(",
                                    "T.dynamic(",
                                    "T.gemm(",
                                    "; ",
                                    "pass",
                                    "{",
                                    "}",
                                    "\x80"};
    std::mt19937 rng(20240611);
    int accepted = 0, tried = 0;
    for (const std::string& source : seed_sources()) {
      std::vector<std::string> lines;
      std::istringstream in(source);
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      auto join = [](const std::vector<std::string>& ls) {
        std::string s;
        for (const std::string& l : ls) s += l + "\n";
        return s;
      };
      for (int round = 0; round < 400; ++round) {
        std::string mutant = source;
        int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits && !mutant.empty(); ++e) {
          size_t pos = rng() % mutant.size();
          switch (rng() % 4) {
            case 0:
              mutant.insert(pos, kPieces[rng() % std::size(kPieces)]);
              break;
            case 1:
              mutant.erase(pos, 1 + rng() % 12);
              break;
            case 2:
              mutant[pos] = static_cast<char>(32 + rng() % 95);
              break;
            default: {
              std::vector<std::string> ls = lines;
              size_t a = rng() % ls.size(), b = rng() % ls.size();
              if (rng() % 2)
                std::swap(ls[a], ls[b]);
              else
                ls.insert(ls.begin() + static_cast<std::ptrdiff_t>(a), ls[b]);
              mutant = join(ls);
            }
          }
        }
        ++tried;
        must_not_crash(mutant, accepted);
      }
    }
    MESSAGE(accepted << " of " << tried << " mutants parsed");
    CHECK(tried > 1000);
  }

  TEST_CASE("deep nesting and long lines are refused with a message, not a stack overflow") {
    std::string head =
        "@T.prim_func\ndef k(A: T.Tensor((4,), \"float32\")):\n"
        "    with T.Kernel(1, threads=32) as bx:\n        A[0] = ";
    for (std::string body : {std::string(5000, '(') + "1" + std::string(5000, ')'),
                             std::string(20000, '-') + "1", std::string(3000, '~') + "1"}) {
      CHECK_THROWS_AS(parse_kernel(head + body + "\n", "deep.py"), KernelFileError);
    }
    std::string sum = "1";
    for (int i = 0; i < 3000; ++i) sum += " + 1";
    CHECK_THROWS_WITH_AS(parse_kernel(head + sum + "\n", "long.py"),
                         doctest::Contains("tokens; split it"), KernelFileError);
    // Expressions that grow through constants: each line adds one level.
    std::string src = "def g():\n    N = T.dynamic(\"N\")\n    x = N\n";
    for (int i = 0; i < 400; ++i) src += "    x = x + N\n";
    src +=
        "    @T.prim_func\n    def main(A: T.Tensor((x,), \"float32\")):\n"
        "        with T.Kernel(1, threads=32) as bx:\n            T.clear(A)\n    return main\n";
    CHECK_THROWS_WITH_AS(parse_kernel(src, "grow.py"), doctest::Contains("operations deep"),
                         KernelFileError);
    std::string nested =
        "@T.prim_func\ndef k(A: T.Tensor((4,), \"float32\")):\n"
        "    with T.Kernel(1, threads=32) as bx:\n";
    std::string indent = "        ";
    for (int i = 0; i < 80; ++i) {
      nested += indent + "if bx < " + std::to_string(i + 1) + ":\n";
      indent += " ";
    }
    nested += indent + "A[0] = 1.0\n";
    CHECK_THROWS_WITH_AS(parse_kernel(nested, "nested.py"), doctest::Contains("nest more than"),
                         KernelFileError);
  }

}  // TEST_SUITE
