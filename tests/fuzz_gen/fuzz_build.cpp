// Turns a random program (tests/fuzz_gen/fuzz_program.h) into a tile-level kernel with the C++
// builder, and summarises it in one line.
#include <sstream>

#include "core/builder.h"
#include "core/builtin_layouts.h"
#include "tests/fuzz_gen/fuzz_program.h"

namespace tessel::fuzz {

namespace {

DataType dtype_of(const FBuffer& b) { return b.f16 ? DataType::f16() : DataType::f32(); }

Expr f32(double v) { return make_const(DataType::f32(), v); }
Expr as_f32(Expr e) { return e.dtype() == DataType::f32() ? e : cast(DataType::f32(), e); }

/// The widest TileLang swizzle the tile's shape allows (annotate 1), else rows padded by
/// 1-8 elements.
Layout annotated_layout(const FBuffer& b, int R, int C) {
  DataType dt = dtype_of(b);
  int vec = 128 / dt.bits;
  if (b.annotate == 1 && R % 8 == 0) {
    if (C % (8 * vec) == 0) return swizzle_128b(R, C, dt);
    if (C % (4 * vec) == 0) return swizzle_64b(R, C, dt);
    if (C % (2 * vec) == 0) return swizzle_32b(R, C, dt);
  }
  return padded(R, C, b.annotate == 1 ? 1 : b.annotate == 2 ? 4 : 8);
}

const char* kind_name(StepKind k) {
  switch (k) {
    case StepKind::kLoad:
      return "load";
    case StepKind::kCopy:
      return "copy";
    case StepKind::kFill:
      return "fill";
    case StepKind::kElemwise:
      return "elemwise";
    case StepKind::kLocalTmp:
      return "local";
    case StepKind::kSerialAcc:
      return "serial";
    case StepKind::kReduce:
      return "reduce";
    case StepKind::kBroadcast:
      return "broadcast";
    case StepKind::kVecOp:
      return "vecop";
    case StepKind::kGemm:
      return "gemm";
    case StepKind::kPipeline:
      return "pipelined";
    case StepKind::kPipeSum:
      return "pipelined_sum";
    case StepKind::kStore:
      return "store";
    case StepKind::kAtomic:
      return "atomic";
  }
  return "?";
}

/// Builds the kernel body step by step.
class Builder {
 public:
  explicit Builder(const Program& p) : p_(p), T_("fuzz_" + std::to_string(p.seed)) {}

  BuiltProgram build() {
    Expr M = p_.rows();
    if (p_.symbolic) {
      Var m = T_.dynamic("M");
      M = m;
      out_.dims["M"] = p_.rows();
    }
    M_ = M;
    const int cols = p_.cols(), depth = p_.depth();
    X_ = T_.tensor("X", {M, cols}, DataType::f32());
    // Gemm operands, one pair per gemm step, stored as the step's transposes say.
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      const Step& s = p_.steps[i];
      if (s.kind != StepKind::kGemm && s.kind != StepKind::kPipeline) continue;
      std::string n = std::to_string(i);
      int d = s.kind == StepKind::kGemm ? p_.K : depth;
      ga_[i] = T_.tensor("GA" + n, s.trans_a ? std::vector<Expr>{d, M} : std::vector<Expr>{M, d},
                         DataType::f16());
      gb_[i] =
          T_.tensor("GB" + n, s.trans_b ? std::vector<Expr>{cols, d} : std::vector<Expr>{d, cols},
                    DataType::f16());
    }
    // Column tiles of the pipelined sums, one tensor per step.
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      if (p_.steps[i].kind != StepKind::kPipeSum) continue;
      xk_[i] = T_.tensor("XK" + std::to_string(i), {M, p_.C * p_.k_tiles - p_.ragged_cols},
                         DataType::f32());
    }
    for (const Step& s : p_.steps) {
      if (s.kind == StepKind::kStore) {
        const FBuffer& b = p_.buffers[s.a];
        std::string n = "O" + std::to_string(s.out);
        std::vector<Expr> shape = b.shape == Shape::kTile  ? std::vector<Expr>{M, cols}
                                  : b.shape == Shape::kRow ? std::vector<Expr>{M}
                                                           : std::vector<Expr>{p_.grid, cols};
        outs_[s.out] = T_.tensor(n, shape, dtype_of(b));
        out_.outputs.push_back(n);
      } else if (s.kind == StepKind::kAtomic) {
        std::string n = "O" + std::to_string(s.out);
        outs_[s.out] = T_.tensor(n, {p_.R, p_.C}, DataType::f32());
        out_.outputs.push_back(n);
        out_.zeroed.push_back(n);
      }
    }
    bx_ = T_.kernel1(ceildiv(M, p_.R), p_.threads);
    for (const FBuffer& b : p_.buffers) {
      std::vector<Expr> shape = b.shape == Shape::kTile  ? std::vector<Expr>{p_.R, p_.C}
                                : b.shape == Shape::kRow ? std::vector<Expr>{p_.R}
                                                         : std::vector<Expr>{p_.C};
      bufs_.push_back(b.scope == FScope::kShared ? T_.alloc_shared(b.name, shape, dtype_of(b))
                                                 : T_.alloc_fragment(b.name, shape, dtype_of(b)));
    }
    annotate();
    for (size_t i = 0; i < p_.steps.size(); ++i) step(i, p_.steps[i]);
    out_.kernel = T_.finish();
    return out_;
  }

 private:
  /// One T.annotate_layout for the shared tiles that ask for a swizzle or padding.
  void annotate() {
    std::vector<std::pair<Buffer, std::variant<Layout, Fragment>>> entries;
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      const FBuffer& b = p_.buffers[i];
      if (b.scope != FScope::kShared || b.shape != Shape::kTile || b.annotate == 0) continue;
      entries.emplace_back(bufs_[i].buffer(), annotated_layout(b, p_.R, p_.C));
    }
    if (!entries.empty()) T_.annotate_layout(entries);
  }

  /// `dst[idx] = value`, cast to dst's dtype.
  void store(const BufferRef& dst, std::vector<Index> idx, Expr value) {
    if (value.dtype() != dst->dtype) value = cast(dst->dtype, value);
    dst.at(std::move(idx)) = value;
  }
  Expr load(const BufferRef& b, std::vector<Index> idx) { return as_f32(b.at(std::move(idx))); }

  void step(size_t index, const Step& s) {
    const Expr row0 = bx_ * p_.R;
    switch (s.kind) {
      case StepKind::kLoad:
        T_.copy(X_(row0, 0), bufs_[s.dst]);
        break;
      case StepKind::kCopy:
        T_.copy(bufs_[s.a], bufs_[s.dst]);
        break;
      case StepKind::kFill:
        if (s.op == 0) {
          T_.clear(bufs_[s.dst]);
        } else {
          T_.fill(bufs_[s.dst], make_const(dtype_of(p_.buffers[s.dst]), s.op == 1 ? 0.5 : -1.25));
        }
        break;
      case StepKind::kElemwise:
        T_.parallel(p_.R, p_.C, [&](Var i, Var j) {
          Expr a = load(bufs_[s.a], {i, j}), b = load(bufs_[s.b], {i, j});
          Expr v = s.op == 0 ? a + b : s.op == 1 ? a * b : s.op == 2 ? max(a, b) : a - b * f32(0.5);
          if (s.flag) {
            // A global term, its indices clamped into the tensor at the ragged edge.
            Expr r = min(row0 + i, M_ - 1), c = min(j, Expr(p_.cols() - 1));
            v = v + X_(r, c);
          }
          store(bufs_[s.dst], {i, j}, v);
        });
        break;
      case StepKind::kLocalTmp: {
        // With the flag, T.fill of the per-thread buffer first: every thread's t[1] is 0.25.
        BufferRef t = T_.alloc_local("tmp" + std::to_string(index), {2}, DataType::f32());
        if (s.flag) T_.fill(t, f32(0.25));
        T_.parallel(p_.R, p_.C, [&](Var i, Var j) {
          t(0) = load(bufs_[s.a], {i, j}) * f32(2.0);
          Expr v = t(0).load() - f32(0.75);
          if (s.flag) v = v + t(1).load();
          store(bufs_[s.dst], {i, j}, v);
        });
        break;
      }
      case StepKind::kSerialAcc:
        T_.serial(
            2,
            [&](Var) {
              T_.parallel(p_.R, p_.C, [&](Var i, Var j) {
                Expr v = load(bufs_[s.dst], {i, j}) + load(bufs_[s.a], {i, j}) * f32(0.5);
                store(bufs_[s.dst], {i, j}, v);
              });
            },
            "s" + std::to_string(index));
        break;
      case StepKind::kReduce: {
        static const ReduceKind kinds[] = {ReduceKind::kSum, ReduceKind::kMax, ReduceKind::kMin,
                                           ReduceKind::kAbsSum, ReduceKind::kAbsMax};
        T_.reduce(kinds[s.op % 5], bufs_[s.a], bufs_[s.dst], s.dim, s.flag);
        break;
      }
      case StepKind::kBroadcast:
        T_.parallel(p_.R, p_.C, [&](Var i, Var j) {
          Expr a = load(bufs_[s.a], {i, j});
          Expr v = load(bufs_[s.vec], {s.dim == 1 ? i : j});
          store(bufs_[s.dst], {i, j}, s.op == 0 ? a - v : a * v);
        });
        break;
      case StepKind::kVecOp: {
        int n = p_.buffers[s.a].shape == Shape::kRow ? p_.R : p_.C;
        T_.parallel(n, [&](Var i) {
          store(bufs_[s.dst], {i}, load(bufs_[s.a], {i}) * f32(0.5) + f32(0.25));
        });
        break;
      }
      case StepKind::kGemm:
      case StepKind::kPipeline:
        gemm(index, s, row0);
        break;
      case StepKind::kPipeSum: {
        std::string n = std::to_string(index);
        BufferRef stage = T_.alloc_shared("S" + n + "_shared", {p_.R, p_.C},
                                          s.op == 1 ? DataType::f16() : DataType::f32());
        if (s.flag) T_.clear(bufs_[s.dst]);
        T_.pipelined(
            p_.k_tiles, s.stages,
            [&](Var k) {
              T_.copy(xk_.at(index)(row0, k * p_.C), stage);
              T_.parallel(p_.R, p_.C, [&](Var i, Var j) {
                store(bufs_[s.dst], {i, j}, load(bufs_[s.dst], {i, j}) + load(stage, {i, j}));
              });
            },
            {}, "k" + n);
        break;
      }
      case StepKind::kStore:
        store_out(s, row0);
        break;
      case StepKind::kAtomic:
        if (s.flag) {
          // Element atomics inside a T.Parallel (split-K style).
          T_.parallel(p_.R, p_.C, [&](Var i, Var j) {
            T_.atomic_add(outs_[s.out](i, j), bufs_[s.a](i, j).load());
          });
        } else {
          T_.atomic_add(outs_[s.out](0, 0), bufs_[s.a]);
        }
        break;
    }
  }

  void gemm(size_t index, const Step& s, const Expr& row0) {
    std::string n = std::to_string(index);
    const int R = p_.R, C = p_.C, K = p_.K;
    auto alloc = [&](const std::string& name, std::vector<Expr> shape, int scope) {
      return scope == 1 ? T_.alloc_fragment(name, shape, DataType::f16())
                        : T_.alloc_shared(name, shape, DataType::f16());
    };
    BufferRef A = alloc("A" + n + (s.a_scope ? "_frag" : "_shared"),
                        s.trans_a ? std::vector<Expr>{K, R} : std::vector<Expr>{R, K}, s.a_scope);
    BufferRef B = alloc("B" + n + (s.b_scope ? "_frag" : "_shared"),
                        s.trans_b ? std::vector<Expr>{C, K} : std::vector<Expr>{K, C}, s.b_scope);
    GemmOptions opt;
    opt.transpose_A = s.trans_a;
    opt.transpose_B = s.trans_b;
    opt.policy = static_cast<GemmWarpPolicy>(s.op % 3);
    const BufferRef& ga = ga_.at(index);
    const BufferRef& gb = gb_.at(index);
    auto body = [&](Expr k0) {
      if (s.trans_a) {
        T_.copy(ga(k0, row0), A);
      } else {
        T_.copy(ga(row0, k0), A);
      }
      if (s.trans_b) {
        T_.copy(gb(0, k0), B);
      } else {
        T_.copy(gb(k0, 0), B);
      }
      T_.gemm(A, B, bufs_[s.dst], opt);
    };
    if (s.kind == StepKind::kGemm) {
      opt.clear_accum = s.flag;
      body(0);
      return;
    }
    if (s.flag) T_.clear(bufs_[s.dst]);
    T_.pipelined(
        p_.k_tiles, s.stages, [&](Var k) { body(k * K); }, {}, "k" + n);
  }

  void store_out(const Step& s, const Expr& row0) {
    const FBuffer& b = p_.buffers[s.a];
    const BufferRef& o = outs_.at(s.out);
    const BufferRef& src = bufs_[s.a];
    if (b.shape == Shape::kTile) {
      if (!s.flag && s.op == 1) {
        // A slice of the tile: its first half of the rows (MLA's valid heads).
        T_.copy(src.at({span(0, p_.R / 2), all()}), o(row0, 0));
        return;
      }
      if (!s.flag) {
        T_.copy(src, o(row0, 0));
        return;
      }
      T_.parallel(p_.R, p_.C, [&](Var i, Var j) {
        T_.if_then((row0 + i < M_) && (j < p_.cols()), [&] { o(row0 + i, j) = src(i, j).load(); });
      });
    } else if (b.shape == Shape::kRow) {
      if (!s.flag) {
        T_.copy(src, o(row0));
        return;
      }
      T_.parallel(p_.R,
                  [&](Var i) { T_.if_then(row0 + i < M_, [&] { o(row0 + i) = src(i).load(); }); });
    } else {
      if (!s.flag) {
        T_.copy(src, o(bx_, 0));
        return;
      }
      T_.parallel(p_.C,
                  [&](Var j) { T_.if_then(j < p_.cols(), [&] { o(bx_, j) = src(j).load(); }); });
    }
  }

  const Program& p_;
  KernelBuilder T_;
  BuiltProgram out_;
  Expr M_;
  Var bx_;
  BufferRef X_;
  std::map<size_t, BufferRef> ga_, gb_, xk_;
  std::map<int, BufferRef> outs_;
  std::vector<BufferRef> bufs_;
};

}  // namespace

BuiltProgram build_program(const Program& p) { return Builder(p).build(); }

std::string summary(const Program& p) {
  std::ostringstream os;
  os << p.target << " threads=" << p.threads << " grid=" << p.grid << " R=" << p.R << " C=" << p.C
     << " K=" << p.K << "x" << p.k_tiles << " ragged=" << p.ragged_rows << "/" << p.ragged_cols
     << "/" << p.ragged_k << (p.symbolic ? " symbolic" : "") << " steps:";
  for (const Step& s : p.steps) os << " " << kind_name(s.kind);
  return os.str();
}

}  // namespace tessel::fuzz
