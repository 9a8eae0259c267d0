// The C++ kernel builder. It reads like the paper's Python:
//
//   KernelBuilder T("gemm");
//   auto A = T.tensor("A", {M, K}, DataType::f16());
//   ...
//   auto [bx, by] = T.kernel2(ceildiv(N, 128), ceildiv(M, 128), /*threads=*/128);
//   auto A_s = T.alloc_shared("A_shared", {128, 32}, DataType::f16());
//   auto C_l = T.alloc_fragment("C_local", {128, 128}, DataType::f32());
//   T.clear(C_l);
//   T.pipelined(ceildiv(K, 32), /*num_stages=*/3, [&](Var k) {
//     T.copy(A(by * 128, k * 32), A_s);
//     T.gemm(A_s, B_s, C_l);
//   });
//   T.copy(C_l, C(by * 128, bx * 128));
//   Kernel kernel = T.finish();
//
// Every call records the C++ source location of its caller for error messages and reports.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/buffer.h"
#include "core/intrinsics.h"
#include "core/kernel.h"
#include "core/layout.h"
#include "core/op_atomic.h"
#include "core/op_gemm.h"
#include "core/op_reduce.h"
#include "core/stmt.h"

namespace tessel {

class KernelBuilder;

/// One index of a buffer access: a point, a slice `lo:hi`, or the whole dimension `:`.
struct Index {
  Expr point;
  Expr lo, hi;
  bool is_slice = false;
  Index(Expr e) : point(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  Index(int v) : point(v) {}              // NOLINT(google-explicit-constructor)
  static Index slice(Expr lo, Expr hi);
  static Index all();
};
/// `lo:hi` in a subscript.
inline Index span(Expr lo, Expr hi) { return Index::slice(std::move(lo), std::move(hi)); }
/// `:` in a subscript.
inline Index all() { return Index::all(); }

/// `A[i, j]` or `A[lo:hi, :]` as written in the builder: reads as an expression, assigns as a
/// store, and passes to tile operators as a region (a point-form region when all are points).
class ElementRef {
 public:
  ElementRef(KernelBuilder* builder, Buffer buffer, std::vector<Index> indices)
      : builder_(builder), buffer_(std::move(buffer)), indices_(std::move(indices)) {}
  ElementRef(const ElementRef&) = default;

  /// A load of one element (every index must be a point).
  operator Expr() const;  // NOLINT(google-explicit-constructor)
  Expr load() const { return static_cast<Expr>(*this); }
  /// A store of one element.
  ElementRef& operator=(const Expr& value);
  ElementRef& operator=(const ElementRef& value) { return *this = value.load(); }
  ElementRef& operator+=(const Expr& v) { return *this = load() + v; }
  ElementRef& operator-=(const Expr& v) { return *this = load() - v; }
  ElementRef& operator*=(const Expr& v) { return *this = load() * v; }
  ElementRef& operator/=(const Expr& v) { return *this = load() / v; }
  /// The region these indices describe.
  BufferRegion region() const;
  /// True when every index is a single point (no slice).
  bool is_point() const;

 private:
  KernelBuilder* builder_;
  Buffer buffer_;
  std::vector<Index> indices_;
};

/// A buffer made by the builder; `A(i, j)` subscripts it.
class BufferRef {
 public:
  BufferRef() = default;
  BufferRef(KernelBuilder* builder, Buffer buffer)
      : builder_(builder), buffer_(std::move(buffer)) {}
  template <typename... I>
  ElementRef operator()(I... idx) const {
    return ElementRef(builder_, buffer_, std::vector<Index>{Index(idx)...});
  }
  ElementRef at(std::vector<Index> idx) const {
    return ElementRef(builder_, buffer_, std::move(idx));
  }
  const Buffer& buffer() const { return buffer_; }
  operator const Buffer&() const { return buffer_; }  // NOLINT(google-explicit-constructor)
  const BufferNode* operator->() const { return buffer_.get(); }

 private:
  KernelBuilder* builder_ = nullptr;
  Buffer buffer_;
};

/// A tile argument of an operator: a whole buffer or a region.
struct TileArg {
  BufferRegion region;
  TileArg(const BufferRef& b) : region(BufferRegion::full(b.buffer())) {}  // NOLINT
  TileArg(const ElementRef& e) : region(e.region()) {}                     // NOLINT
  TileArg(const Buffer& b) : region(BufferRegion::full(b)) {}              // NOLINT
};

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name, SourceLoc loc = SourceLoc::here());

  // ---- Signature -----------------------------------------------------------------------------
  /// A global tensor parameter: `A: T.Tensor((M, K), "float16")`.
  BufferRef tensor(std::string name, std::vector<Expr> shape, DataType dtype,
                   SourceLoc loc = SourceLoc::here());
  /// A symbolic dimension (T.dynamic("M")), bound at run time from the tensors' shapes.
  Var dynamic(std::string name);

  // ---- Launch --------------------------------------------------------------------------------
  /// `with T.Kernel(grid..., threads=threads) as (bx, by, ...)`: returns the block indices.
  /// Called again, it closes the open launch and opens the next: the kernel then has several
  /// launches that run in order (core/kernel.h), sharing the tensors and alloc_global scratch.
  std::vector<Var> kernel(std::vector<Expr> grid, int threads, SourceLoc loc = SourceLoc::here());
  std::pair<Var, Var> kernel2(Expr gx, Expr gy, int threads, SourceLoc loc = SourceLoc::here());
  Var kernel1(Expr gx, int threads, SourceLoc loc = SourceLoc::here());
  /// `with T.Kernel(grid..., threads=(x, y[, z]))`: a block of 2 or 3 dimensions.
  std::vector<Var> kernel(std::vector<Expr> grid, std::vector<int> thread_dims,
                          SourceLoc loc = SourceLoc::here());
  /// T.get_thread_binding(): this thread's linear index in the block (x fastest).
  Var get_thread_binding();
  /// T.get_thread_binding(dim): this thread's index along x (0), y (1) or z (2).
  Expr get_thread_binding(int dim);

  /// `name = value` in the kernel body (a let binding, as the front end reads it): an immutable
  /// variable for the rest of the enclosing block, printed as `name = value`.
  Var let(std::string name, Expr value, SourceLoc loc = SourceLoc::here());

  // ---- Allocation ----------------------------------------------------------------------------
  /// `X = T.alloc_global(shape, dtype)`: global scratch that every launch of the kernel sees
  /// (allocated by the host before the first launch, uninitialised).
  BufferRef alloc_global(std::string name, std::vector<Expr> shape, DataType dtype,
                         SourceLoc loc = SourceLoc::here());
  BufferRef alloc_shared(std::string name, std::vector<Expr> shape, DataType dtype,
                         SourceLoc loc = SourceLoc::here());
  BufferRef alloc_fragment(std::string name, std::vector<Expr> shape, DataType dtype,
                           SourceLoc loc = SourceLoc::here());
  BufferRef alloc_local(std::string name, std::vector<Expr> shape, DataType dtype,
                        SourceLoc loc = SourceLoc::here());
  /// A per-thread scalar (T.alloc_var), read and written as `x(0)`.
  BufferRef alloc_var(std::string name, DataType dtype, Expr init = Expr(),
                      SourceLoc loc = SourceLoc::here());

  // ---- Tile operators ------------------------------------------------------------------------
  void copy(TileArg src, TileArg dst, SourceLoc loc = SourceLoc::here());
  void gemm(const Buffer& A, const Buffer& B, const Buffer& C, GemmOptions options = {},
            SourceLoc loc = SourceLoc::here());
  void reduce(ReduceKind kind, const Buffer& src, const Buffer& dst, int dim, bool clear = true,
              SourceLoc loc = SourceLoc::here());
  void reduce_sum(const Buffer& s, const Buffer& d, int dim, bool clear = true,
                  SourceLoc loc = SourceLoc::here());
  void reduce_max(const Buffer& s, const Buffer& d, int dim, bool clear = true,
                  SourceLoc loc = SourceLoc::here());
  void reduce_min(const Buffer& s, const Buffer& d, int dim, bool clear = true,
                  SourceLoc loc = SourceLoc::here());
  void reduce_abssum(const Buffer& s, const Buffer& d, int dim, bool clear = true,
                     SourceLoc loc = SourceLoc::here());
  void reduce_absmax(const Buffer& s, const Buffer& d, int dim, bool clear = true,
                     SourceLoc loc = SourceLoc::here());
  /// Tile form (`T.atomic_add(C[...], C_local)`) or scalar form (`T.atomic_add(C[i, j], x)`).
  void atomic(AtomicKind kind, TileArg dst, TileArg src, SourceLoc loc = SourceLoc::here());
  void atomic(AtomicKind kind, TileArg dst, Expr value, SourceLoc loc = SourceLoc::here());
  void atomic_add(TileArg dst, TileArg src, SourceLoc loc = SourceLoc::here());
  void atomic_add(TileArg dst, Expr value, SourceLoc loc = SourceLoc::here());
  /// A subscripted source: with slices it is a tile, with points only a scalar value.
  void atomic_add(TileArg dst, const ElementRef& src, SourceLoc loc = SourceLoc::here());
  void fill(TileArg dst, Expr value, SourceLoc loc = SourceLoc::here());
  void clear(TileArg dst, SourceLoc loc = SourceLoc::here());

  // ---- Loops and control ---------------------------------------------------------------------
  /// `for i, j in T.Parallel(e0, e1):` — body(i, j). Names default to i, j, k.
  void parallel(Expr e0, const std::function<void(Var)>& body, SourceLoc loc = SourceLoc::here());
  void parallel(Expr e0, Expr e1, const std::function<void(Var, Var)>& body,
                SourceLoc loc = SourceLoc::here());
  void parallel(Expr e0, Expr e1, Expr e2, const std::function<void(Var, Var, Var)>& body,
                SourceLoc loc = SourceLoc::here());
  /// `for k in T.Pipelined(extent, num_stages=n, order=[...], stage=[...]):`
  void pipelined(Expr extent, int num_stages, const std::function<void(Var)>& body,
                 PipelineInfo extra = {}, std::string var = "k", SourceLoc loc = SourceLoc::here());
  /// `for i in T.serial(extent):` and `T.unroll`, `T.vectorized`.
  void serial(Expr extent, const std::function<void(Var)>& body, std::string var = "i",
              SourceLoc loc = SourceLoc::here());
  void unroll(Expr extent, const std::function<void(Var)>& body, std::string var = "i",
              SourceLoc loc = SourceLoc::here());
  void vectorized(Expr extent, const std::function<void(Var)>& body, std::string var = "v",
                  SourceLoc loc = SourceLoc::here());
  /// `if cond: then_body` / `else: else_body`.
  void if_then(Expr cond, const std::function<void()>& then_body,
               const std::function<void()>& else_body = nullptr, SourceLoc loc = SourceLoc::here());
  /// T.sync_threads().
  void sync_threads(SourceLoc loc = SourceLoc::here());
  /// T.annotate_layout({buffer: layout, ...}): fixes shared-memory layouts / fragment partitions.
  void annotate_layout(std::vector<std::pair<Buffer, std::variant<Layout, Fragment>>> entries,
                       SourceLoc loc = SourceLoc::here());
  /// T.use_swizzle(panel_size): block rasterisation.
  void use_swizzle(int panel_size, bool column_major = false, SourceLoc loc = SourceLoc::here());

  // ---- Thread-level instructions (core/intrinsics.h) -----------------------------------------
  /// Any instruction of the intrinsic table with its arguments in table order.
  void intrinsic(IntrinsicId id, std::vector<IntrinsicArg> args, SourceLoc loc = SourceLoc::here());
  /// `T.mma_m16n8k16_<f16|bf16>(D[..], A[..], B[..], C[..])`: D = A * B + C for one warp; each
  /// argument is the lane's first register (f16 or bf16 inputs picked from A's dtype).
  void mma_m16n8k16(const ElementRef& d, const ElementRef& a, const ElementRef& b,
                    const ElementRef& c, SourceLoc loc = SourceLoc::here());
  /// `T.mfma_<16x16x16|32x32x8>_<f16|bf16>(D, A, B, C)` on a wave64 (m = 16 or 32).
  void mfma(int m, const ElementRef& d, const ElementRef& a, const ElementRef& b,
            const ElementRef& c, SourceLoc loc = SourceLoc::here());
  /// `T.ldmatrix_x<num>[_trans](dst[..], src[..])`: `num` (1, 2, 4) 8x8 matrices from shared
  /// memory; `src` is the row this lane addresses.
  void ldmatrix(int num, bool trans, const ElementRef& dst, const ElementRef& src,
                SourceLoc loc = SourceLoc::here());
  /// `T.cp_async_<bytes>(dst[..], src[..], src_size)`: an asynchronous copy of `bytes` (4, 8,
  /// 16) from global to shared; `src_size` (default: bytes) bytes are read, the rest zero-filled.
  void cp_async(const ElementRef& dst, const ElementRef& src, int bytes, Expr src_size = Expr(),
                SourceLoc loc = SourceLoc::here());
  /// `T.cp_async_commit_group()`.
  void cp_async_commit_group(SourceLoc loc = SourceLoc::here());
  /// `T.cp_async_wait_group(n)`: at most n groups stay pending.
  void cp_async_wait_group(int n, SourceLoc loc = SourceLoc::here());

  /// Appends a statement (used by ElementRef for stores, and by front ends).
  void emit(Stmt stmt);
  /// The finished kernel. Requires: kernel() was called.
  Kernel finish();

  const std::string& name() const { return name_; }

 private:
  void loop(ForKind kind, std::vector<Var> vars, std::vector<Expr> extents,
            const std::function<void()>& body, SourceLoc loc, PipelineInfo pipeline = {});
  void check_launched(const char* what, const SourceLoc& loc) const;
  void open_frame();
  /// Pops the innermost frame as one statement, each let binding the rest of the frame.
  Stmt close_frame();
  BufferRef alloc(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope, Expr init,
                  bool is_var, SourceLoc loc);

  /// Ends the open launch: its body joins `launches_` and the next launch starts empty.
  void close_launch();

  std::string name_;
  SourceLoc loc_;
  KernelNode node_;
  bool launched_ = false;
  std::vector<Buffer> scratch_;       ///< alloc_global tensors
  std::vector<KernelNode> launches_;  ///< closed launches, in order
  std::vector<std::vector<Stmt>> frames_;
  std::vector<std::vector<size_t>> frame_lets_;  ///< positions of the lets in each frame
};

}  // namespace tessel
