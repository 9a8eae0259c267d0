// The TileLang-syntax front end reads back what the printer writes and what the example files
// say: printed IR parses to an equal kernel, every kernel file equals its C++ built-in.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/builder.h"
#include "core/kernel_equal.h"
#include "core/kernel_parser.h"
#include "core/printer.h"
#include "examples/registry.h"

using namespace tessel;

namespace {

std::string kernels_dir() { return std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/"; }

Kernel renamed(const Kernel& k, const std::string& name) {
  KernelNode node = *k;
  node.name = name;
  return Kernel::make(node);
}

/// Checks print(k) -> parse -> equal kernel -> the same print.
void check_round_trip(const Kernel& k, const std::string& label) {
  std::string text = print_kernel(k);
  ParsedKernel parsed = parse_kernel(text, label + ".py");
  auto diff = kernel_difference(k, parsed.kernel);
  INFO(label << "\n" << text);
  CHECK_MESSAGE(!diff, (diff ? *diff : ""));
  CHECK(print_kernel(parsed.kernel) == text);
}

}  // namespace

TEST_SUITE("parser round trip") {
  TEST_CASE("every built-in example prints, parses to an equal kernel and prints the same") {
    for (const Example& e : examples()) {
      check_round_trip(e.build(make_params(e, {})), e.name);
    }
  }

  TEST_CASE("ragged and bf16 gemms round-trip too") {
    for (const char* name : {"gemm", "gemm_transpose_b", "gemm_rs", "dequant_gemm"}) {
      const Example* e = find_example(name);
      REQUIRE(e != nullptr);
      check_round_trip(e->build(make_params(*e, {{"M", "200"}, {"N", "136"}, {"K", "96"}})), name);
    }
    const Example* g = find_example("gemm");
    check_round_trip(g->build(make_params(*g, {{"dtype", "bfloat16"}, {"num_stages", "0"}})),
                     "gemm");
  }

  TEST_CASE("every kernel file equals its C++ built-in for the same parameters") {
    struct Case {
      const char* example;
      std::vector<std::map<std::string, std::string>> defines;
    };
    std::map<std::string, std::string> ragged = {{"M", "200"}, {"N", "136"}, {"K", "72"}};
    std::vector<Case> cases = {
        {"gemm", {{}, ragged, {{"dtype", "bfloat16"}, {"block_K", "64"}, {"num_stages", "2"}}}},
        {"gemm_transpose_b", {{}, ragged, {{"threads", "256"}}}},
        {"gemm_rs", {{}, ragged}},
        {"softmax", {{}, {{"M", "64"}, {"N", "256"}, {"block_M", "16"}}, {{"dtype", "float16"}}}},
        {"elementwise", {{}, {{"block", "128"}, {"dtype", "float16"}}}},
        {"dequant_gemm", {{}, {{"M", "256"}, {"K", "1024"}, {"num_stages", "2"}}}},
        {"bug_missing_barrier", {{}, {{"fixed", "true"}, {"blocks", "3"}}}},
        {"warp_shuffle_reduce", {{}, {{"blocks", "5"}}}},
        {"transpose_shared", {{}, {{"M", "128"}, {"N", "32"}}}},
    };
    for (const Case& c : cases) {
      const Example* e = find_example(c.example);
      REQUIRE(e != nullptr);
      for (const auto& defines : c.defines) {
        ParsedKernel parsed = parse_kernel_file(kernels_dir() + c.example + ".py", defines);
        // The Fig. 17 file keeps the paper's function name; the built-in is named after itself.
        Kernel built = e->build(make_params(*e, defines));
        auto diff = kernel_difference(built, renamed(parsed.kernel, built->name));
        INFO(c.example << " with " << defines.size() << " -D values\n"
                       << print_kernel(parsed.kernel));
        CHECK_MESSAGE(!diff, (diff ? *diff : ""));
      }
    }
  }

  TEST_CASE("the tile-level built-ins and part of the thread-level corpus have kernel files") {
    // The rest of the thread-level corpus (examples/bugs) is in C++ only; its printed form is a
    // kernel file too, checked by the round trip above.
    for (const char* name :
         {"gemm", "gemm_transpose_b", "gemm_rs", "softmax", "elementwise", "dequant_gemm",
          "bug_missing_barrier", "warp_shuffle_reduce", "transpose_shared"}) {
      CHECK(std::filesystem::exists(kernels_dir() + name + ".py"));
    }
  }

  TEST_CASE("every kernel file's printed form parses back to the same kernel") {
    // The -D values of the kernel families' parameters without defaults (docs/frontend.md).
    const std::map<std::string, std::map<std::string, std::string>> sizes = {
        {"gemv", {{"N", "256"}, {"K", "128"}}},
        {"topk", {{"M", "64"}, {"N", "32"}, {"topk", "4"}, {"blk_m", "16"}}},
        {"convolution",
         {{"N", "2"}, {"C", "16"}, {"H", "9"}, {"W", "9"}, {"F", "32"}, {"K", "3"}, {"S", "2"},
          {"D", "1"}, {"P", "1"}, {"block_K", "16"}, {"block_N", "32"}}},
        {"gqa_attention",
         {{"batch", "1"}, {"heads", "4"}, {"seq_len", "128"}, {"dim", "32"}, {"is_causal", "True"},
          {"groups", "2"}}},
        {"fp8", {{"M", "16"}, {"N", "256"}, {"K", "128"}, {"blk_m", "8"}}}};
    for (const auto& entry : std::filesystem::directory_iterator(kernels_dir())) {
      if (entry.path().extension() != ".py") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      std::string stem = entry.path().stem().string();
      auto d = sizes.count(stem) ? sizes.at(stem) : std::map<std::string, std::string>{};
      for (const KernelFileEntry& k : list_kernels(text.str(), entry.path().string())) {
        CAPTURE(k.name);
        check_round_trip(parse_kernel_file(entry.path().string(), d, k.name).kernel, stem);
      }
    }
  }

  TEST_CASE("the paper's Fig. 16 is the gemm example with two pipeline stages") {
    ParsedKernel fig16 = parse_kernel_file(kernels_dir() + "fig16_gemm.py");
    CHECK(fig16.kernel->name == "Matmul");
    CHECK(fig16.generator == "gemm");
    REQUIRE(fig16.reference.has_value());
    CHECK(*fig16.reference == "gemm");
    // 512 // 128 = 4 blocks each way and 512 // 32 = 16 k-steps, as the built-in's ceildivs give.
    const Example* gemm = find_example("gemm");
    Kernel built = gemm->build(make_params(*gemm, {{"num_stages", "2"}}));
    auto diff = kernel_difference(renamed(built, "Matmul"), fig16.kernel);
    CHECK_MESSAGE(!diff, (diff ? *diff : ""));
  }

  TEST_CASE("the enclosing def's parameters are reported with their defaults as -D spells them") {
    ParsedKernel p = parse_kernel_file(kernels_dir() + "gemm.py");
    std::vector<std::string> names, defaults;
    for (const KernelFileParam& param : p.params) {
      names.push_back(param.name);
      defaults.push_back(param.default_text.value_or("?"));
    }
    CHECK(names == std::vector<std::string>{"M", "N", "K", "block_M", "block_N", "block_K",
                                            "num_stages", "threads", "dtype"});
    CHECK(defaults ==
          std::vector<std::string>{"512", "512", "512", "128", "128", "32", "3", "128", "float16"});
    CHECK(p.params[0].loc.str() == kernels_dir() + "gemm.py:8:10");
  }

}  // TEST_SUITE
