// Bank conflicts from reading a shared tile by columns, and the padded fix. Each block stages a
// 32 x 32 float tile in shared memory (row by row: conflict-free) and thread t sums row t.
// Unpadded, lane t's element (t, i) is word 32 t + i, in bank (32 t + i) % 32 = i: all 32 lanes
// hit one bank, 32 wavefronts per read. Padded to 33 columns, word 33 t + i is in bank
// (t + i) % 32: 32 different banks, 1 wavefront.
#include "core/builder.h"
#include "examples/bugs/thread_examples.h"

namespace tessel {

namespace {

Kernel build_row_sum(const Params& p, const char* name) {
  int64_t blocks = p.integer("blocks"), pad = p.integer("pad");
  KernelBuilder T(name);
  auto A = T.tensor("A", {blocks * 32, 32}, DataType::f32());
  auto S = T.tensor("S", {blocks * 32}, DataType::f32());
  Var bx = T.kernel1(blocks, 32);
  Var tx = T.get_thread_binding();
  auto tile = T.alloc_shared("tile", {32, 32 + pad}, DataType::f32());
  auto acc = T.alloc_var("acc", DataType::f32(), 0.0);
  T.serial(32, [&](Var i) { tile(i, tx) = A(bx * 32 + i, tx); });
  T.sync_threads();
  T.serial(32, [&](Var i) { acc(0) = acc(0) + tile(tx, i); });
  S(bx * 32 + tx) = acc(0);
  return T.finish();
}

Example make(const char* name, const char* pad, const char* description) {
  Example e;
  e.name = name;
  e.description = description;
  e.params = {{"blocks", "2", "blocks (32 rows each)"}, {"pad", pad, "extra columns per tile row"}};
  e.outputs = {"S"};
  e.build = [name](const Params& p) { return build_row_sum(p, name); };
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor& a = t.at("A");
    HostTensor& s = t.at("S");
    for (int64_t r = 0; r < s.size(); ++r) {
      double sum = 0;
      for (int64_t i = 0; i < 32; ++i) sum += a.at(r * 32 + i);
      s.set(r, sum);
    }
  };
  return e;
}

}  // namespace

Example row_sum_bank_conflicts_example() {
  return make("row_sum_bank_conflicts", "0",
              "row sums through a 32 x 32 shared tile read by columns across the warp: "
              "32-way bank conflicts (correct, slow)");
}

Example row_sum_padded_example() {
  return make("row_sum_padded", "1",
              "row_sum_bank_conflicts with the tile padded to 33 columns: conflict-free");
}

}  // namespace tessel
