// Row softmax: reduce_max, an exp2 Parallel loop, reduce_sum, a normalising Parallel loop.
#include <cmath>

#include "core/builder.h"
#include "examples/reference_math.h"
#include "examples/registry.h"

namespace tessel {

namespace {

Kernel build_softmax(const Params& p) {
  int64_t M = p.integer("M"), N = p.integer("N"), bM = p.positive("block_M");
  DataType dtype = p.dtype("dtype");
  const double log2e = 1.4426950408889634;

  KernelBuilder T("softmax");
  auto X = T.tensor("X", {M, N}, dtype);
  auto Y = T.tensor("Y", {M, N}, dtype);
  Var bx = T.kernel1(ceildiv(M, bM), static_cast<int>(p.integer("threads")));
  auto X_local = T.alloc_fragment("X_local", {bM, N}, DataType::f32());
  auto row_max = T.alloc_fragment("row_max", {bM}, DataType::f32());
  auto row_sum = T.alloc_fragment("row_sum", {bM}, DataType::f32());
  T.copy(X(bx * bM, 0), X_local);
  T.reduce_max(X_local, row_max, 1);
  T.parallel(bM, N, [&](Var i, Var j) {
    X_local(i, j) = exp2((X_local(i, j) - row_max(i)) * log2e);
  });
  T.reduce_sum(X_local, row_sum, 1);
  T.parallel(bM, N, [&](Var i, Var j) { X_local(i, j) = X_local(i, j) / row_sum(i); });
  T.copy(X_local, Y(bx * bM, 0));
  return T.finish();
}

void softmax_reference(TensorMap& t) {
  MatrixD x = to_matrix(t.at("X"));
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    x.row(r) = (x.row(r).array() - x.row(r).maxCoeff()).exp().matrix();
    x.row(r) /= x.row(r).sum();
  }
  from_matrix(t.at("Y"), x);
}

}  // namespace

Example softmax_example() {
  Example e;
  e.name = "softmax";
  e.description = "Y = softmax(X) along rows, one block per block_M rows";
  e.params = {{"M", "256", "rows"},
              {"N", "128", "row length (one block holds whole rows)"},
              {"block_M", "32", "rows per block"},
              {"threads", "128", "threads per block"},
              {"dtype", "float32", "element type of X and Y"}};
  e.outputs = {"Y"};
  e.build = build_softmax;
  e.reference = [](const Params&, TensorMap& t) { softmax_reference(t); };
  return e;
}

}  // namespace tessel
