// An elementwise kernel over a symbolic length: C = max(A + B, 0), guarded at the tail.
#include "core/builder.h"
#include "examples/registry.h"

namespace tessel {

namespace {

Kernel build_elementwise(const Params& p) {
  int64_t block = p.positive("block");
  DataType dtype = p.dtype("dtype");
  KernelBuilder T("elementwise");
  Var N = T.dynamic("N");
  auto A = T.tensor("A", {N}, dtype);
  auto B = T.tensor("B", {N}, dtype);
  auto C = T.tensor("C", {N}, dtype);
  Var bx = T.kernel1(ceildiv(N, block), static_cast<int>(p.integer("threads")));
  T.parallel(block, [&](Var i) {
    Expr n = bx * block + i;
    T.if_then(n < N, [&] { C(n) = max(A(n) + B(n), make_const(dtype, 0)); });
  });
  return T.finish();
}

}  // namespace

Example elementwise_example() {
  Example e;
  e.name = "elementwise";
  e.description = "C = relu(A + B) over a symbolic length N (T.dynamic), tail guarded";
  e.params = {{"N", "1000", "length of the vectors (a symbolic dimension of the kernel)"},
              {"block", "256", "elements per block"},
              {"threads", "128", "threads per block"},
              {"dtype", "float32", "element type"}};
  e.outputs = {"C"};
  e.build = build_elementwise;
  e.dynamic_dims = [](const Params& p) {
    return std::map<std::string, int64_t>{{"N", p.integer("N")}};
  };
  e.reference = [](const Params&, TensorMap& t) {
    const HostTensor &a = t.at("A"), &b = t.at("B");
    HostTensor& c = t.at("C");
    for (int64_t i = 0; i < c.size(); ++i) c.set(i, std::max(a.at(i) + b.at(i), 0.0));
  };
  return e;
}

}  // namespace tessel
