// Kernel families written as real TileLang files are (examples/kernels/gemv.py, topk.py,
// convolution.py, gqa_attention.py): each kernel runs from its unmodified file at tile level and,
// lowered for sm80, at thread level, against a plain C++ reference written here, and goes
// through print, verify and emit on the command line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

#include "core/kernel_parser.h"
#include "core/passes.h"
#include "core/printer.h"
#include "interp/thread_interpreter.h"
#include "interp/tile_interpreter.h"
#include "tests/cli_runner.h"

using namespace tessel;

namespace {

std::string example(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/examples/kernels/" + name;
}

/// A tensor whose element at flat index i is f(i) (rounded to the dtype).
HostTensor tensor(
    DataType dtype, std::vector<int64_t> shape,
    const std::function<double(int64_t)>& f = [](int64_t) { return 0.0; }) {
  HostTensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.set(i, f(i));
  return t;
}

/// Runs `kernel` at tile level on `tile` and, lowered for sm80, at thread level on a copy of its
/// inputs; returns both results.
std::vector<TensorMap> run_levels(const Kernel& kernel, const TensorMap& inputs) {
  TensorMap tile = inputs, thread = inputs;
  run_tile_level(kernel, tile);
  run_thread_level(lower_kernel(kernel, find_target("sm80")).kernel, thread);
  return {tile, thread};
}

/// `-D NAME=VALUE` arguments for the command line.
std::vector<std::string> defines(const std::map<std::string, std::string>& d) {
  std::vector<std::string> args;
  for (const auto& [k, v] : d) args.insert(args.end(), {"-D", k + "=" + v});
  return args;
}

/// print, verify (every proof holds), emit for CUDA and HIP, and both run levels exit 0.
void check_commands(const std::string& file, const std::string& kernel,
                    const std::map<std::string, std::string>& d) {
  for (std::vector<std::string> cmd : {std::vector<std::string>{"print"},
                                       {"verify"},
                                       {"emit", "--target", "cuda"},
                                       {"emit", "--target", "hip"},
                                       {"run", "--level", "tile"},
                                       {"run", "--level", "thread"}}) {
    cmd.insert(cmd.begin() + 1, file);
    cmd.insert(cmd.end(), {"--kernel", kernel});
    for (const std::string& a : defines(d)) cmd.push_back(a);
    CAPTURE(cmd[0]);
    CAPTURE(kernel);
    CliResult r = run_tessel(cmd);
    CHECK_MESSAGE(r.status == 0, r.err, r.out.substr(0, 2000));
  }
}

}  // namespace

TEST_SUITE("kernel families") {
  TEST_CASE("gemv.py: the three GEMV kernels sum A[k] * B[n, k] at both levels") {
    const int64_t N = 64, K = 128;
    // Small integers: every product and sum (|sum| <= 128 * 2 * 3) is exact in fp16 and fp32.
    auto a = [](int64_t k) { return static_cast<double>(k % 5 - 2); };
    auto b = [](int64_t f) { return static_cast<double>((f / K + 2 * (f % K)) % 7 - 3); };
    std::vector<double> expect(N, 0.0);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) expect[n] += a(k) * b(n * K + k);
    }
    for (const char* name : {"naive_gemv", "splitk_gemv", "gemv_parallel"}) {
      CAPTURE(name);
      ParsedKernel p = parse_kernel_file(example("gemv.py"), {{"N", "64"}, {"K", "128"}}, name);
      TensorMap in{{"A", tensor(DataType::f16(), {K}, a)},
                   {"B", tensor(DataType::f16(), {N, K}, b)},
                   {"C", tensor(DataType::f16(), {N})}};
      for (TensorMap& t : run_levels(p.kernel, in)) {
        for (int64_t n = 0; n < N; ++n) CHECK(t["C"].at(n) == expect[n]);
      }
    }
  }

  TEST_CASE("gemv.py: all-ones inputs give K in every output (hand-derived)") {
    ParsedKernel p =
        parse_kernel_file(example("gemv.py"), {{"N", "64"}, {"K", "128"}}, "splitk_gemv");
    auto one = [](int64_t) { return 1.0; };
    TensorMap in{{"A", tensor(DataType::f16(), {128}, one)},
                 {"B", tensor(DataType::f16(), {64, 128}, one)},
                 {"C", tensor(DataType::f16(), {64})}};
    for (TensorMap& t : run_levels(p.kernel, in)) {
      for (int64_t n = 0; n < 64; ++n) CHECK(t["C"].at(n) == 128);
    }
  }

  TEST_CASE("gemv.py: every kernel goes through print, verify, emit and both run levels") {
    for (const char* name : {"naive_gemv", "splitk_gemv"}) {
      check_commands(example("gemv.py"), name, {{"N", "64"}, {"K", "128"}});
    }
    check_commands(example("gemv.py"), "gemv_parallel", {{"N", "64"}, {"K", "128"}});
  }
}

namespace {

/// Row r of `logits` (M, N) sorted largest first, ties by the smaller column: (value, column).
std::vector<std::pair<double, int64_t>> sorted_row(const std::function<double(int64_t)>& logits,
                                                   int64_t r, int64_t N) {
  std::vector<int64_t> cols(N);
  std::iota(cols.begin(), cols.end(), 0);
  std::stable_sort(cols.begin(), cols.end(),
                   [&](int64_t x, int64_t y) { return logits(r * N + x) > logits(r * N + y); });
  std::vector<std::pair<double, int64_t>> out;
  for (int64_t c : cols) out.emplace_back(logits(r * N + c), c);
  return out;
}

}  // namespace

TEST_SUITE("kernel families") {
  TEST_CASE("topk.py tl_topk: the k largest of each row, ties to the smaller column") {
    const int64_t M = 32, N = 32, k = 4;
    // Row r holds (7r + 13c) % 32 halved: 13 is odd, so each value 0..15 appears exactly twice
    // per row and the top 4 are 15, 15, 14, 14 — every pick after the first is a tie.
    auto logits = [](int64_t f) {
      return static_cast<double>(((f / 32) * 7 + (f % 32) * 13) % 32 / 2);
    };
    ParsedKernel p = parse_kernel_file(
        example("topk.py"), {{"M", "32"}, {"N", "32"}, {"topk", "4"}, {"blk_m", "16"}}, "tl_topk");
    TensorMap in{{"logits", tensor(DataType::f32(), {M, N}, logits)},
                 {"topk_gates", tensor(DataType::f32(), {M, k})},
                 {"topk_indices", tensor(DataType::i32(), {M, k})}};
    // Row 0 by hand: 13 * 5 = 65 = 1 (mod 32), so 13c = v (mod 32) at c = 5v mod 32. Value 15
    // is v = 30, 31: c = 22, 27; value 14 is v = 28, 29: c = 12, 17.
    for (TensorMap& t : run_levels(p.kernel, in)) {
      CHECK(t["topk_gates"].at(0) == 15);
      CHECK(t["topk_indices"].at(0) == 22);
      CHECK(t["topk_indices"].at(1) == 27);
      CHECK(t["topk_indices"].at(2) == 12);
      CHECK(t["topk_indices"].at(3) == 17);
      CHECK(t["topk_gates"].at(3) == 14);
      for (int64_t r = 0; r < M; ++r) {
        auto want = sorted_row(logits, r, N);
        for (int64_t j = 0; j < k; ++j) {
          CHECK(t["topk_gates"].at(r * k + j) == want[j].first);
          CHECK(t["topk_indices"].at(r * k + j) == want[j].second);
        }
      }
    }
  }

  TEST_CASE("topk.py topk_gating: softmax over the k picked logits, with their columns") {
    const int64_t M = 32, N = 64, k = 4;
    auto logits = [](int64_t f) {
      return static_cast<double>(((f / 64) * 5 + (f % 64) * 23) % 64) / 16.0;
    };
    ParsedKernel p =
        parse_kernel_file(example("topk.py"), {{"M", "32"}, {"N", "64"}}, "topk_gating");
    TensorMap in{{"logits", tensor(DataType::f32(), {M, N}, logits)},
                 {"gates", tensor(DataType::f32(), {M, k})},
                 {"indices", tensor(DataType::i32(), {M, k})}};
    // Each row is a permutation of 0..63 / 16: the picks are 63/16, 62/16, 61/16, 60/16 and the
    // gates softmax(0, -1/16, -2/16, -3/16) = e^(-j/16) / sum, the same for every row.
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += std::exp(-j / 16.0);
    for (TensorMap& t : run_levels(p.kernel, in)) {
      for (int64_t r = 0; r < M; ++r) {
        auto want = sorted_row(logits, r, N);
        for (int64_t j = 0; j < k; ++j) {
          CHECK(want[j].first == (63 - j) / 16.0);
          CHECK(t["gates"].at(r * k + j) ==
                doctest::Approx(std::exp(-j / 16.0) / sum).epsilon(1e-5));
          CHECK(t["indices"].at(r * k + j) == want[j].second);
        }
      }
    }
  }

  TEST_CASE("topk.py: both kernels go through print, verify, emit and both run levels") {
    check_commands(example("topk.py"), "tl_topk",
                   {{"M", "64"}, {"N", "32"}, {"topk", "4"}, {"blk_m", "16"}});
    check_commands(example("topk.py"), "topk_gating", {{"M", "64"}, {"N", "32"}});
  }
}

namespace {

struct ConvShape {
  int64_t n, c, h, w, f, k, s, d, p;
  int64_t oh() const { return (h + 2 * p - d * (k - 1) - 1) / s + 1; }
  int64_t ow() const { return (w + 2 * p - d * (k - 1) - 1) / s + 1; }
  std::map<std::string, std::string> defines() const {
    return {{"N", std::to_string(n)}, {"C", std::to_string(c)}, {"H", std::to_string(h)},
            {"W", std::to_string(w)}, {"F", std::to_string(f)}, {"K", std::to_string(k)},
            {"S", std::to_string(s)}, {"D", std::to_string(d)}, {"P", std::to_string(p)},
            {"block_K", "16"},        {"block_N", "32"}};
  }
};

/// Runs convolution.py's `kernel` on small-integer data and weights and checks `out` at both
/// levels against the direct 7-loop convolution (every sum exact in fp32 and fp16).
void check_convolution(const std::string& kernel, const ConvShape& s) {
  auto data = [&](int64_t f) {
    int64_t c = f % s.c, w = f / s.c % s.w, h = f / (s.c * s.w) % s.h, n = f / (s.c * s.w * s.h);
    return static_cast<double>((n + h + 2 * w + 3 * c) % 5 - 2);
  };
  auto weight = [&](int64_t f) {
    int64_t o = f % s.f, c = f / s.f % s.c, kw = f / (s.f * s.c) % s.k, kh = f / (s.f * s.c * s.k);
    return static_cast<double>((kh + 2 * kw + c + o) % 3 - 1);
  };
  const int64_t OH = s.oh(), OW = s.ow();
  std::vector<double> expect(s.n * OH * OW * s.f, 0.0);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t o = 0; o < s.f; ++o) {
          double acc = 0;
          for (int64_t kh = 0; kh < s.k; ++kh)
            for (int64_t kw = 0; kw < s.k; ++kw)
              for (int64_t c = 0; c < s.c; ++c) {
                int64_t h = oh * s.s + kh * s.d - s.p, w = ow * s.s + kw * s.d - s.p;
                if (h < 0 || h >= s.h || w < 0 || w >= s.w) continue;
                acc += data(((n * s.h + h) * s.w + w) * s.c + c) *
                       weight(((kh * s.k + kw) * s.c + c) * s.f + o);
              }
          expect[((n * OH + oh) * OW + ow) * s.f + o] = acc;
        }
  ParsedKernel p = parse_kernel_file(example("convolution.py"), s.defines(), kernel);
  TensorMap in{{"data", tensor(DataType::f16(), {s.n, s.h, s.w, s.c}, data)},
               {"kernel", tensor(DataType::f16(), {s.k, s.k, s.c, s.f}, weight)},
               {"out", tensor(DataType::f16(), {s.n, OH, OW, s.f})}};
  for (TensorMap& t : run_levels(p.kernel, in)) {
    int64_t wrong = 0;
    for (size_t i = 0; i < expect.size(); ++i) wrong += t["out"].at(i) != expect[i];
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_SUITE("kernel families") {
  TEST_CASE("convolution.py: implicit-GEMM convolution with padding and stride 2") {
    // OH = OW = (9 + 2 - 2 - 1) // 2 + 1 = 5: 3 * 25 = 75 pixels over two 64-row blocks, 64
    // filters over two 32-column blocks, K = 3 * 3 * 16 = 144 in nine 16-wide steps.
    ConvShape s{3, 16, 9, 9, 64, 3, 2, 1, 1};
    CHECK(s.oh() == 5);
    check_convolution("convolution", s);
  }

  TEST_CASE("convolution.py: dilation 2 with padding 2 keeps the 8 x 8 image size") {
    // OH = (8 + 4 - 2 * 2 - 1) // 1 + 1 = 8.
    ConvShape s{1, 16, 8, 8, 32, 3, 1, 2, 2};
    CHECK(s.oh() == 8);
    check_convolution("convolution", s);
  }

  TEST_CASE("convolution.py: T.c2d_im2col gathers the same patches as the written-out loop") {
    check_convolution("convolution_tma", ConvShape{3, 16, 9, 9, 64, 3, 2, 1, 1});
    check_convolution("convolution_tma", ConvShape{1, 32, 8, 8, 32, 3, 1, 2, 2});
  }

  TEST_CASE("convolution.py: both kernels go through print, verify, emit and both run levels") {
    ConvShape s{2, 16, 9, 9, 32, 3, 2, 1, 1};
    check_commands(example("convolution.py"), "convolution", s.defines());
    check_commands(example("convolution.py"), "convolution_tma", s.defines());
  }
}

namespace {

/// Runs gqa_attention.py with `causal` and checks Output at both levels against softmax(QK^T /
/// sqrt(dim)) V in double, query head h reading kv head h / groups.
void check_gqa(bool causal) {
  const int64_t B = 1, S = 128, H = 4, G = 2, HK = H / G, D = 32;
  auto q = [](int64_t f) { return ((f * 37) % 17 - 8) / 8.0; };
  auto k = [](int64_t f) { return ((f * 11) % 13 - 6) / 6.0; };
  auto v = [](int64_t f) { return ((f * 7) % 19 - 9) / 4.0; };
  ParsedKernel p =
      parse_kernel_file(example("gqa_attention.py"), {{"batch", "1"},
                                                      {"heads", "4"},
                                                      {"seq_len", "128"},
                                                      {"dim", "32"},
                                                      {"groups", "2"},
                                                      {"is_causal", causal ? "True" : "False"},
                                                      {"block_M", "64"},
                                                      {"block_N", "32"}});
  TensorMap in{{"Q", tensor(DataType::f16(), {B, S, H, D}, q)},
               {"K", tensor(DataType::f16(), {B, S, HK, D}, k)},
               {"V", tensor(DataType::f16(), {B, S, HK, D}, v)},
               {"Output", tensor(DataType::f16(), {B, S, H, D})}};
  // The reference reads the fp16-rounded inputs.
  const HostTensor &Q = in["Q"], &K = in["K"], &V = in["V"];
  std::vector<double> expect(S * H * D);
  for (int64_t h = 0; h < H; ++h) {
    const int64_t kv = h / G;
    for (int64_t i = 0; i < S; ++i) {
      std::vector<double> s(S, -INFINITY);
      double most = -INFINITY;
      for (int64_t j = 0; j < (causal ? i + 1 : S); ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += Q.at((i * H + h) * D + d) * K.at((j * HK + kv) * D + d);
        s[j] = dot / std::sqrt(static_cast<double>(D));
        most = std::max(most, s[j]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - most));
      for (int64_t d = 0; d < D; ++d) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) o += s[j] * V.at((j * HK + kv) * D + d);
        expect[(i * H + h) * D + d] = o / sum;
      }
    }
  }
  for (TensorMap& t : run_levels(p.kernel, in)) {
    int64_t wrong = 0;
    double worst = 0;
    for (size_t f = 0; f < expect.size(); ++f) {
      // P is rounded to fp16 before P V and O is fp16: 1e-2 relative plus 2e-3 absolute.
      double err = std::abs(t["Output"].at(f) - expect[f]);
      worst = std::max(worst, err);
      wrong += err > 2e-3 + 1e-2 * std::abs(expect[f]);
    }
    CAPTURE(worst);
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_SUITE("kernel families") {
  TEST_CASE("gqa_attention.py: non-causal GQA, two query heads per kv head") { check_gqa(false); }

  TEST_CASE("gqa_attention.py: causal GQA") { check_gqa(true); }

  TEST_CASE("gqa_attention.py goes through print, verify, emit and both run levels") {
    check_commands(example("gqa_attention.py"), "flashattn",
                   {{"batch", "1"},
                    {"heads", "4"},
                    {"seq_len", "64"},
                    {"dim", "32"},
                    {"groups", "2"},
                    {"is_causal", "True"},
                    {"block_M", "64"},
                    {"block_N", "32"}});
  }
}

namespace {

/// The first line of the error reading `source` raises, or "no error".
std::string error_of(const std::string& source) {
  try {
    parse_kernel(source, "k.py");
  } catch (const UserError& e) {
    std::string m = e.what();
    return m.substr(0, m.find('\n'));
  }
  return "no error";
}

/// The first line of the error lowering `source`'s kernel for sm80, or "no error".
std::string lowering_error_of(const std::string& source) {
  ParsedKernel p = parse_kernel(source, "k.py");
  try {
    lower_kernel(p.kernel, find_target("sm80"));
  } catch (const UserError& e) {
    std::string m = e.what();
    return m.substr(0, m.find('\n'));
  }
  return "no error";
}

/// A kernel over img (2, 8, 8, 16) fp16 whose body (indented by 12) is `body`.
std::string im2col_kernel(const std::string& body) {
  return "import tilelang.language as T\n"
         "\n"
         "\n"
         "@T.prim_func\n"
         "def k(img: T.Tensor((2, 8, 8, 16), \"float16\"), out: T.Tensor((64, 16), \"float16\")):\n"
         "    with T.Kernel(1, threads=128) as bx:\n"
         "        col = T.alloc_shared((64, 16), \"float16\")\n"
         "        wide = T.alloc_shared((64, 32), \"float16\")\n"
         "        frag = T.alloc_fragment((64, 16), \"float16\")\n" +
         body;
}

}  // namespace

TEST_SUITE("kernel families") {
  TEST_CASE("T.im2col is refused with the reason when its operands do not fit TileLang's rules") {
    CHECK(error_of(im2col_kernel("        T.im2col(img, frag, 0, 0, 3, 1, 1, 1)\n")) ==
          "k.py:10:23: T.im2col: col must be a 2-d (pixels, channels) shared tile; 'frag' is 2-d "
          "local.fragment");
    CHECK(error_of(im2col_kernel("        T.c2d_im2col(out, col, 0, 0, 3, 1, 1, 1)\n")) ==
          "k.py:10:22: T.c2d_im2col: img must be a 4-d (N, H, W, C) global tensor; 'out' is 2-d "
          "global");
    CHECK(error_of(im2col_kernel("        T.im2col(img, wide, 0, 0, 3, 1, 1, 1)\n")) ==
          "k.py:10:9: T.im2col: the channel count C of 'img' must be a known multiple of col's "
          "width (as TileLang requires: each tile takes whole channel slices of one (kh, kw)); "
          "got C = 16, width 32; gather the patch with a T.Parallel loop instead");
    CHECK(error_of(im2col_kernel("        T.im2col(img, col, 0, 0, 0, 1, 1, 1)\n")) ==
          "k.py:10:34: T.im2col: argument 'kernel' must be between 1 and 65536, got 0");
  }

  TEST_CASE("a view is the tensor under another shape: reads, writes and T.copy reach the tensor") {
    // img (2, 8, 8, 16) viewed as (128, 16): row r is img[r // 64, r // 8 % 8, r % 8, :].
    ParsedKernel p =
        parse_kernel(im2col_kernel("        flat = T.Tensor((128, 16), \"float16\", img.data)\n"
                                   "        T.copy(flat[64, 0], col)\n"
                                   "        flat[127, 15] = col[0, 1] + 1\n"
                                   "        T.copy(col, out)\n"),
                     "k.py");
    TensorMap in{{"img", tensor(DataType::f16(), {2, 8, 8, 16}, [](int64_t f) { return f % 512; })},
                 {"out", tensor(DataType::f16(), {64, 16})}};
    for (TensorMap& t : run_levels(p.kernel, in)) {
      // out[r, c] = flat[64 + r, c] = img flat offset (64 + r) * 16 + c, whose value is that % 512.
      for (int64_t f = 0; f < 64 * 16; ++f) CHECK(t["out"].at(f) == (64 * 16 + f) % 512);
      // img[1, 7, 7, 15] is flat[127, 15] = col[0, 1] + 1 = (1024 + 1) % 512 + 1 = 2.
      CHECK(t["img"].at(2 * 8 * 8 * 16 - 1) == 2);
    }
    std::string printed = print_kernel(p.kernel);
    CHECK(printed.find("flat") == std::string::npos);  // only img is left
  }

  TEST_CASE("views that Tessel cannot take are refused with the reason") {
    CHECK(error_of(im2col_kernel("        v = T.Tensor((128, 32), \"float16\", img.data)\n")) ==
          "k.py:10:22: T.Tensor: the view has 4096 elements but 'img' has 2048; a view must "
          "cover its tensor exactly");
    CHECK(error_of(im2col_kernel("        v = T.Tensor((128, 8), \"int32\", img.data)\n")) ==
          "k.py:10:32: T.Tensor: a view of 'img' (float16) as int32 reinterprets its bits, which "
          "Tessel does not support; view it as float16 and convert the values");
    CHECK(error_of(im2col_kernel("        v = T.Tensor((32, 32), \"float16\", wide.data)\n")) ==
          "k.py:10:43: T.Tensor: a view of 'wide' (shared): Tessel takes views of kernel tensors "
          "(global) only; index the buffer itself");
    CHECK(error_of(im2col_kernel("        v = T.Tensor((128, 16), \"float16\", img.data)\n"
                                 "        T.fill(v, 0)\n")) ==
          "k.py:11:16: T.fill: 'img_view' is a view (T.Tensor(shape, dtype, A.data)); views can "
          "be indexed and copied with T.copy, other tile operators take the tensor itself or a "
          "T.copy of the view into shared memory");
  }

  TEST_CASE("TileLang's own T.Fragment forms in T.annotate_layout are refused with what to write") {
    CHECK(error_of(im2col_kernel("        T.annotate_layout({frag: T.Fragment(frag.shape, "
                                 "forward_thread_fn=lambda i, j: i)})\n")) ==
          "k.py:10:45: T.annotate_layout: a layout spec's shape is a list of extents ([64, 128], "
          "[block_M, block_K]), got name 'frag'; write the extents out");
    CHECK(error_of(im2col_kernel("        T.annotate_layout({frag: T.Fragment([64, 16], "
                                 "forward_thread_fn=lambda i, j: i)})\n")) ==
          "k.py:10:55: T.annotate_layout: TileLang's T.Fragment/T.Layout with "
          "forward_thread_fn= (a map TileLang completes itself) is not supported; write the "
          "whole map in Tessel's spec form, T.Fragment([64, 128], lambda i, j: (thread, "
          "register)) or T.Layout([64, 64], lambda i, j: (offset,)), or leave the buffer to "
          "layout inference (verify proves its choice)");
  }

  TEST_CASE("a fragment that no loop can lay out still gets the loop's message") {
    // `acc[i, k]` with k a serial loop variable: this loop cannot derive acc's layout and no
    // other operator touches acc, so the deferred message is raised.
    std::string source =
        "import tilelang.language as T\n"
        "\n"
        "\n"
        "@T.prim_func\n"
        "def k(A: T.Tensor((16, 4), \"float32\")):\n"
        "    with T.Kernel(1, threads=32) as bx:\n"
        "        acc = T.alloc_fragment((16, 4), \"float32\")\n"
        "        for k in T.serial(4):\n"
        "            for i in T.Parallel(16):\n"
        "                acc[i, k] = A[i, k]\n"
        "            for i in T.Parallel(16):\n"
        "                A[i, k] = acc[i, k] * 2\n";
    std::string e = lowering_error_of(source);
    CAPTURE(e);
    CHECK(e.find("kernel 'k': T.Parallel at k.py:9:13 cannot give fragment 'acc' a layout") == 0);
  }

  TEST_CASE("a loop indexing a fragment by an outer loop's variable is checked for every value") {
    // T.copy lays acc out one row per thread; the loop over i runs 4 rows per thread, so the
    // iteration i = 1 (thread 0) writes acc[1, k], held by thread 1, whatever k is. (It was an
    // error about k having no value.)
    std::string source =
        "import tilelang.language as T\n"
        "\n"
        "\n"
        "@T.prim_func\n"
        "def k(A: T.Tensor((16, 4), \"float32\")):\n"
        "    with T.Kernel(1, threads=32) as bx:\n"
        "        acc = T.alloc_fragment((16, 4), \"float32\")\n"
        "        T.copy(A, acc)\n"
        "        for k in T.serial(4):\n"
        "            for i in T.Parallel(16):\n"
        "                acc[i, k] = acc[i, k] * 2\n"
        "        T.copy(acc, A)\n";
    CHECK(lowering_error_of(source) ==
          "kernel 'k': T.Parallel at k.py:10:13 runs iteration (i=1) in thread 0, but element "
          "[1, 0] of fragment 'acc' lives in thread(s) 1");
  }

  TEST_CASE("tessel list shows scalar kernel parameters, of a prim_func inside a generator too") {
    CliResult r = run_tessel(
        {"list", std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/scale_rows_scalar_params.py"});
    CHECK(r.status == 0);
    CHECK(r.out.find("    scale  (scalar") != std::string::npos);
    CHECK(r.out.find("    rows  (scalar") != std::string::npos);
    CliResult j = run_tessel(
        {"list", std::string(TESSEL_SOURCE_DIR) + "/tests/kernels/scale_rows_scalar_params.py",
         "--json"});
    CHECK(j.out.find("\"kind\": \"scalar\"") != std::string::npos);
    // A top-level prim_func's own scalar parameter.
    std::string dir = std::filesystem::temp_directory_path().string();
    std::string path = dir + "/tessel_list_scalar.py";
    {
      std::ofstream f(path);
      f << "import tilelang.language as T\n\n\n@T.prim_func\n"
           "def k(A: T.Tensor((64,), \"float32\"), n: T.int32):\n"
           "    with T.Kernel(1, threads=64) as bx:\n"
           "        for i in T.Parallel(64):\n"
           "            A[i] = n\n";
    }
    CliResult top = run_tessel({"list", path});
    CHECK(top.out.find("    n  (scalar") != std::string::npos);
    CHECK(top.out.find("    A") == std::string::npos);  // the tensor is not listed
  }
}
