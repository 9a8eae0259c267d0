// T.gemm: validation, printing and reference semantics (Eigen, fp32 or int32 accumulation).
#include "core/op_gemm.h"

#include <Eigen/Core>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/expr_printer.h"
#include "core/half_decode.h"

namespace tessel {

const char* policy_name(GemmWarpPolicy policy) {
  switch (policy) {
    case GemmWarpPolicy::kSquare:
      return "Square";
    case GemmWarpPolicy::kFullRow:
      return "FullRow";
    case GemmWarpPolicy::kFullCol:
      return "FullCol";
  }
  return "?";
}

namespace {

bool on_chip(Scope s) {
  return s == Scope::kShared || s == Scope::kSharedDyn || s == Scope::kFragment ||
         s == Scope::kLocal;
}

std::string shape_string(const Buffer& b) {
  std::string s = "(";
  for (size_t i = 0; i < b->shape.size(); ++i) s += (i ? ", " : "") + to_string(b->shape[i]);
  return s + ")";
}

/// Checks that two extents agree where both are constants.
void check_dim(const std::string& op, const char* what, const Buffer& x, size_t dx, const Buffer& y,
               size_t dy, const std::string& fix) {
  auto a = as_const_int(x->shape[dx]), b = as_const_int(y->shape[dy]);
  if (a && b && *a != *b) {
    user_error(op + ": " + what + " of '" + x->name + "' " + shape_string(x) + " is " +
               std::to_string(*a) + " but " + what + " of '" + y->name + "' " + shape_string(y) +
               " is " + std::to_string(*b) + "; " + fix);
  }
}

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatI = Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Decodes a tile into `m` (resized to the tile's shape: no allocation when it already has it);
/// the common 16- and 32-bit float formats take a direct path.
template <typename Mat>
void read_matrix_into(const TensorView& v, Mat& m) {
  m.resize(v.shape[0], v.shape[1]);
  using Scalar = typename Mat::Scalar;
  Scalar* out = m.data();
  int64_t n = v.size();
  if constexpr (std::is_same_v<Scalar, float>) {
    if (v.dtype == DataType::f32()) {
      std::memcpy(out, v.data, n * sizeof(float));
      return;
    }
    const auto* bits = reinterpret_cast<const uint16_t*>(v.data);
    if (v.dtype == DataType::f16()) {
      const int64_t done = halves_to_floats_in_hardware(bits, out, n);
      const float* table = half_values();
      for (int64_t i = done; i < n; ++i) out[i] = table[bits[i]];
      return;
    }
    if (v.dtype == DataType::bf16()) {  // bfloat16 is the top half of a float
      for (int64_t i = 0; i < n; ++i) {
        uint32_t word = static_cast<uint32_t>(bits[i]) << 16;
        std::memcpy(&out[i], &word, sizeof word);
      }
      return;
    }
  }
  if (v.dtype == DataType::i8()) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Scalar>(static_cast<int8_t>(v.data[i]));
    return;
  }
  if (v.dtype == DataType::u8()) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Scalar>(v.data[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Scalar>(v.load(i));
}

template <typename Mat>
Mat read_matrix(const TensorView& v) {
  Mat m;
  read_matrix_into(v, m);
  return m;
}

template <typename Mat>
void write_matrix(TensorView& v, const Mat& m) {
  if constexpr (std::is_same_v<typename Mat::Scalar, float>) {
    if (v.dtype == DataType::f32()) {
      std::memcpy(v.data, m.data(), v.size() * sizeof(float));
      return;
    }
  }
  for (int64_t i = 0; i < v.size(); ++i) v.store(i, static_cast<double>(m.data()[i]));
}

template <typename Mat, typename CMat>
void accumulate(const GemmOptions& o, const Mat& A, const Mat& B, CMat& C) {
  if (o.transpose_A && o.transpose_B) {
    C.noalias() += A.transpose() * B.transpose();
  } else if (o.transpose_A) {
    C.noalias() += A.transpose() * B;
  } else if (o.transpose_B) {
    C.noalias() += A * B.transpose();
  } else {
    C.noalias() += A * B;
  }
}

template <typename Mat>
void multiply(const GemmOp& op, TileExec& exec) {
  TensorView a = exec.view(op.A()), b = exec.view(op.B()), c = exec.view(op.C());
  // The decoded operands live on in each worker thread: a block's k loop reuses them, no
  // allocation per call.
  thread_local Mat A, B;
  read_matrix_into(a, A);
  read_matrix_into(b, B);
  const GemmOptions& o = op.options();
  if constexpr (std::is_same_v<typename Mat::Scalar, float>) {
    if (c.dtype == DataType::f32()) {  // accumulate in place in the fp32 accumulator
      Eigen::Map<Mat> C(reinterpret_cast<float*>(c.data), c.shape[0], c.shape[1]);
      if (o.clear_accum) C.setZero();
      accumulate(o, A, B, C);
      return;
    }
  }
  Mat C = o.clear_accum ? Mat::Zero(c.shape[0], c.shape[1]) : read_matrix<Mat>(c);
  accumulate(o, A, B, C);
  write_matrix(c, C);
}

/// The largest magnitude of an 8-bit integer dtype (i8: 128, u8: 255), or 0 for any other.
int64_t byte_magnitude(DataType t) {
  if (t == DataType::i8()) return 128;
  if (t == DataType::u8()) return 255;
  return 0;
}

/// An i8/u8 gemm into an int32 accumulator, its products summed in Real by Eigen's vectorised
/// kernels (its int32 kernel is scalar, 30x slower at the int2 GEMMs): every product and every
/// partial sum is an integer no larger than k * 255^2, which `Real` holds exactly (the caller
/// checks), so the sum is the integers' in any order; it is added to the accumulator modulo 2^32,
/// as int32 accumulation wraps.
template <typename Real>
void multiply_bytes(const GemmOp& op, const TensorView& a, const TensorView& b, TensorView& c) {
  using Mat = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  thread_local Mat A, B, P;
  read_matrix_into(a, A);
  read_matrix_into(b, B);
  P.setZero(c.shape[0], c.shape[1]);
  const GemmOptions& o = op.options();
  accumulate(o, A, B, P);
  // The sums as integers (float's within 2^24 fit int32, double's int64), added modulo 2^32.
  using Int = std::conditional_t<std::is_same_v<Real, float>, int32_t, int64_t>;
  const int64_t n = c.size();
  const Real* sum = P.data();
  auto* acc = reinterpret_cast<uint32_t*>(c.data);
  if (o.clear_accum) {
    for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<uint32_t>(static_cast<Int>(sum[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<uint32_t>(static_cast<Int>(sum[i]));
  }
}

/// multiply_bytes when `op` multiplies 8-bit integers into int32, in float where its depth k
/// keeps every partial sum within 2^24 (i8: k <= 1024, u8: k <= 258), else in double (2^53);
/// false, having done nothing, for any other gemm.
bool multiply_bytes_exactly(const GemmOp& op, const TensorView& a, const TensorView& b,
                            TensorView& c) {
  const int64_t ma = byte_magnitude(a.dtype), mb = byte_magnitude(b.dtype);
  if (!ma || !mb || c.dtype != DataType::i32()) return false;
  const int64_t k = op.options().transpose_A ? a.shape[0] : a.shape[1];
  if (k <= (int64_t{1} << 24) / (ma * mb)) {
    multiply_bytes<float>(op, a, b, c);
  } else if (k <= (int64_t{1} << 53) / (ma * mb)) {
    multiply_bytes<double>(op, a, b, c);
  } else {
    return false;
  }
  return true;
}

}  // namespace

TileOpRef GemmOp::make(Buffer A, Buffer B, Buffer C, GemmOptions o, SourceLoc loc) {
  std::string op = "T.gemm" + (loc.known() ? " at " + loc.str() : "");
  for (const Buffer* b : {&A, &B, &C}) {
    if ((*b)->ndim() != 2) {
      user_error(op + ": '" + (*b)->name + "' has " + std::to_string((*b)->ndim()) +
                 " dimensions " + shape_string(*b) + "; gemm operands must be 2-d tiles");
    }
    if (!on_chip((*b)->scope)) {
      user_error(op + ": '" + (*b)->name + "' is in " + scope_name((*b)->scope) +
                 " memory; gemm reads shared memory or fragments — copy the tile into a "
                 "T.alloc_shared or T.alloc_fragment buffer first");
    }
  }
  if (C->scope != Scope::kFragment && C->scope != Scope::kLocal) {
    user_error(op + ": the accumulator '" + C->name + "' is in " + scope_name(C->scope) +
               " memory; allocate it with T.alloc_fragment");
  }
  if (A->dtype != B->dtype) {
    user_error(op + ": '" + A->name + "' is " + A->dtype.name() + " but '" + B->name + "' is " +
               B->dtype.name() + "; both inputs must have one dtype (cast one with T.copy)");
  }
  bool int_inputs = A->dtype.is_integral();
  if (int_inputs ? C->dtype != DataType::i32() : !C->dtype.is_float()) {
    user_error(op + ": the accumulator '" + C->name + "' is " + C->dtype.name() +
               " but the inputs are " + A->dtype.name() + "; accumulate " +
               (int_inputs ? "int8 in int32" : "in float32"));
  }
  size_t a_m = o.transpose_A ? 1 : 0, a_k = 1 - a_m;
  size_t b_k = o.transpose_B ? 1 : 0, b_n = 1 - b_k;
  check_dim(op, "K (the reduction dimension)", A, a_k, B, b_k,
            "the inner dimensions must agree (set transpose_A/transpose_B if a tile is stored "
            "transposed)");
  check_dim(op, "M (rows)", A, a_m, C, 0, "C must have as many rows as op(A)");
  check_dim(op, "N (columns)", B, b_n, C, 1, "C must have as many columns as op(B)");
  return std::make_shared<GemmOp>(std::move(A), std::move(B), std::move(C), o, std::move(loc));
}

std::string GemmOp::variant() const {
  auto letter = [](const Buffer& b) {
    return b->scope == Scope::kShared || b->scope == Scope::kSharedDyn ? "s" : "r";
  };
  return std::string(letter(A_)) + letter(B_);
}

std::string GemmOp::to_string() const {
  std::string s = "T.gemm(" + A_->name + ", " + B_->name + ", " + C_->name;
  if (options_.transpose_A) s += ", transpose_A=True";
  if (options_.transpose_B) s += ", transpose_B=True";
  if (options_.clear_accum) s += ", clear_accum=True";
  if (options_.policy != GemmWarpPolicy::kSquare) {
    s += std::string(", policy=T.GemmWarpPolicy.") + policy_name(options_.policy);
  }
  return s + ")";
}

std::vector<BufferRegion> GemmOp::reads() const {
  std::vector<BufferRegion> r{BufferRegion::full(A_), BufferRegion::full(B_)};
  if (!options_.clear_accum) r.push_back(BufferRegion::full(C_));
  return r;
}

std::vector<BufferRegion> GemmOp::writes() const { return {BufferRegion::full(C_)}; }

TileOpRef GemmOp::map_exprs(const std::function<Expr(const Expr&)>&) const {
  return std::make_shared<GemmOp>(*this);
}

void GemmOp::run_reference(TileExec& exec) const {
  if (A_->dtype.is_integral()) {
    TensorView a = exec.view(A_), b = exec.view(B_), c = exec.view(C_);
    if (multiply_bytes_exactly(*this, a, b, c)) return;
    multiply<MatI>(*this, exec);
  } else {
    multiply<MatF>(*this, exec);
  }
}

}  // namespace tessel
