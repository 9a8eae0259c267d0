// Correct thread-level kernels: a warp-shuffle reduction and a shared-memory transpose.
#include "core/builder.h"
#include "examples/bugs/thread_examples.h"

namespace tessel {

namespace {

// Each warp sums its 32 elements with a butterfly of shfl_xor (offsets 16, 8, 4, 2, 1); lane 0
// writes the warp's sum.
Kernel build_warp_shuffle_reduce(const Params& p) {
  int64_t blocks = p.integer("blocks");
  KernelBuilder T("warp_shuffle_reduce");
  auto A = T.tensor("A", {blocks * 128}, DataType::f32());
  auto S = T.tensor("S", {blocks * 4}, DataType::f32());
  Var bx = T.kernel1(blocks, 128);
  Var tx = T.get_thread_binding();
  auto v = T.alloc_var("v", DataType::f32());
  v(0) = A(bx * 128 + tx);
  T.serial(
      5,
      [&](Var k) {
        v(0) = v(0) + call(Builtin::kShflXor, {v(0), make_int(16) >> k});
      },
      "k");
  T.if_then(tx % 32 == 0, [&] { S(bx * 4 + tx / 32) = v(0); });
  return T.finish();
}

// The classic tiled transpose: 32 x 32 tiles, 32 x 8 threads, each thread moving 4 elements;
// the tile is padded to 33 columns so that the column reads are conflict-free.
Kernel build_transpose(const Params& p) {
  int64_t M = p.integer("M"), N = p.integer("N");
  if (M <= 0 || N <= 0 || M % 32 || N % 32) {
    user_error("kernel 'transpose_shared': M=" + std::to_string(M) + " and N=" + std::to_string(N) +
               " must be positive multiples of the 32 x 32 tile");
  }
  KernelBuilder T("transpose_shared");
  auto A = T.tensor("A", {M, N}, DataType::f32());
  auto B = T.tensor("B", {N, M}, DataType::f32());
  auto [bx, by] = T.kernel2(N / 32, M / 32, 256);
  Var t = T.get_thread_binding();
  Expr tx = t % 32, ty = t / 32;
  auto tile = T.alloc_shared("tile", {32, 33}, DataType::f32());
  T.serial(
      4, [&](Var j) { tile(ty + j * 8, tx) = A(by * 32 + ty + j * 8, bx * 32 + tx); }, "j");
  T.sync_threads();
  T.serial(
      4, [&](Var j) { B(bx * 32 + ty + j * 8, by * 32 + tx) = tile(tx, ty + j * 8); }, "j");
  return T.finish();
}

}  // namespace

Example warp_shuffle_reduce_example() {
  Example e;
  e.name = "warp_shuffle_reduce";
  e.description = "per-warp sums with a shfl_xor butterfly (correct)";
  e.params = {{"blocks", "2", "blocks (128 elements, 4 warps each)"}};
  e.outputs = {"S"};
  e.build = build_warp_shuffle_reduce;
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor& a = t.at("A");
    HostTensor& s = t.at("S");
    for (int64_t w = 0; w < s.size(); ++w) {
      double sum = 0;
      for (int64_t i = 0; i < 32; ++i) sum += a.at(w * 32 + i);
      s.set(w, sum);
    }
  };
  return e;
}

Example transpose_shared_example() {
  Example e;
  e.name = "transpose_shared";
  e.description =
      "B = A^T through padded 32 x 33 shared tiles: coalesced and conflict-free "
      "(correct)";
  e.params = {{"M", "64", "rows of A (a multiple of 32)"},
              {"N", "96", "columns of A (a multiple of 32)"}};
  e.outputs = {"B"};
  e.build = build_transpose;
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor& a = t.at("A");
    HostTensor& b = t.at("B");
    int64_t rows = a.shape()[0], cols = a.shape()[1];
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) b.set(j * rows + i, a.at(i * cols + j));
    }
  };
  return e;
}

}  // namespace tessel
