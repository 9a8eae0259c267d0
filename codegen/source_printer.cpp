// Prints thread-level IR as one CUDA or HIP kernel: the signature from the parameters, indices
// from the thread/block registers, shared buffers carved from one shared pool, per-thread
// buffers as local arrays, statements and expressions one to one, intrinsic calls through the
// dialect's helpers.
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "codegen/dialect.h"
#include "codegen/emit.h"
#include "codegen/loop_unroll.h"
#include "core/analyzer.h"
#include "core/capacity.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/instruction_family.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"
#include "core/vector_copy.h"

namespace tessel {

namespace {

using codegen::c_type;

class SourcePrinter {
 public:
  SourcePrinter(const Kernel& kernel, Language lang) : k_(kernel), lang_(lang) {
    bind_kernel_vars(analyzer_, kernel);
    // The shared tiles TMA copies reach: a TMA shared address must be 128-byte aligned, and the
    // swizzle modes are a function of the address bits up to 1024 (core/tma_map.h).
    for_each_stmt(kernel->body, [&](const Stmt& s) {
      const auto* c = s.as<IntrinsicCallNode>();
      if (!c) return;
      const IntrinsicInfo& info = intrinsic_info(c->intrinsic);
      if (info.box_rank > 0) tma_tiles_.insert(c->args[info.tma_shared].buffer.get());
    });
    shared_address_bound_ = shared_address_bound();
  }

  /// The hardware axis each block index runs on: its own, except that a constant extent above
  /// 65535 (the most blocks along y or z on NVIDIA and AMD GPUs) goes on x, where 2^31 - 1 fit,
  /// and x's index goes on its axis. User error when that cannot make the grid fit.
  std::vector<int> hardware_grid_axes() {
    std::vector<int> axes(k_->grid.size());
    for (size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<int>(d);
    constexpr int64_t kMaxYZ = 65535, kMaxX = (int64_t{1} << 31) - 1;
    auto extent = [&](size_t d) { return as_const_int(k_->grid[d]); };
    auto too_large = [&](size_t d, int64_t limit) {
      std::optional<int64_t> e = extent(d);
      return e && *e > limit;
    };
    for (size_t d = 1; d < axes.size(); ++d) {
      if (!too_large(d, kMaxYZ)) continue;
      bool x_fits_yz = extent(0) && *extent(0) <= kMaxYZ;
      if (axes[0] != 0 || !x_fits_yz || too_large(d, kMaxX)) {
        user_error("kernel '" + k_->name + "': the grid (" + grid_text() +
                   ") does not fit a GPU launch, which takes at most 2^31 - 1 blocks along one "
                   "axis and 65535 along the other two; fold the large block indices into one");
      }
      std::swap(axes[0], axes[d]);
    }
    if (too_large(0, kMaxX) && axes[0] == 0) {
      user_error("kernel '" + k_->name + "': the grid (" + grid_text() +
                 ") has more than 2^31 - 1 blocks along its first axis; split the launch");
    }
    return axes;
  }

  std::string grid_text() {
    std::string t;
    for (size_t d = 0; d < k_->grid.size(); ++d) t += (d ? ", " : "") + expr_text(k_->grid[d]);
    return t;
  }

  EmittedSource run() {
    EmittedSource out;
    out.language = lang_;
    out.entry = k_->name;
    out.threads = k_->threads;
    out.thread_dims = k_->thread_dims;
    std::ostringstream body;
    indent_ = 1;
    line(body, "const int " + name(k_->thread_var) + " = " + linear_thread_index() + ";");
    if (lang_ == Language::kCuda && k_->threads % kNvidiaWarpSize) {
      // The lanes this thread's warp has: all 32 but in the last, partial warp (shuffle masks).
      line(body, "const unsigned tessel_lanes = " + name(k_->thread_var) +
                     " / 32 == " + std::to_string(k_->threads / kNvidiaWarpSize) + " ? (1u << " +
                     std::to_string(k_->threads % kNvidiaWarpSize) + ") - 1u : 0xffffffffu;");
    }
    out.grid_axes = hardware_grid_axes();
    for (size_t d = 0; d < k_->block_vars.size(); ++d) {
      line(body, "const int " + name(k_->block_vars[d]) + " = " +
                     codegen::block_index(lang_, out.grid_axes[d]) + ";");
    }
    stmt(body, k_->body);
    out.dynamic_shared_bytes = lang_ == Language::kCuda ? shared_offset_ : 0;

    std::ostringstream sig;
    sig << "extern \"C\" ";
    if (lang_ == Language::kCuda) {
      // At least one block per SM lets ptxas use up to 255 registers. Warp-specialised kernels
      // too: with sink_consumer_code the consumers' accumulators no longer live on the
      // producer's path, and without the minimum ptxas (CUDA 13.0, sm_90a) squeezed the GEMM's
      // consumer into 154 registers at 145 main-loop instructions instead of 114 (0 spills both).
      sig << "__global__ void __launch_bounds__(" << k_->threads << ", 1) ";
    } else {
      sig << "__attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, " << k_->threads
          << "))) void ";
    }
    sig << k_->name << "(";
    bool first = true;
    for (const Buffer& p : k_->params) {
      sig << (first ? "" : ", ") << c_type(lang_, p->dtype) << "* __restrict__ " << name(p);
      out.arguments.push_back(p->name);
      first = false;
    }
    for (const Var& v : k_->dynamic_vars) {
      sig << (first ? "" : ", ") << "int " << name(v);
      out.arguments.push_back(v.name());
      first = false;
    }
    for (const TensorMapArg& m : tensor_map_args_) {
      sig << (first ? "" : ", ") << "const __grid_constant__ CUtensorMap " << m.name;
      out.tensor_maps.push_back(m);
      first = false;
    }
    sig << ")";

    std::ostringstream code;
    code << "// Generated by Tessel from kernel '" << k_->name << "' ("
         << (lang_ == Language::kCuda ? "CUDA" : "HIP") << "). Launch: grid (";
    out.grid.resize(k_->grid.size());
    for (size_t d = 0; d < k_->grid.size(); ++d)
      out.grid[out.grid_axes[d]] = expr_text(k_->grid[d]);
    for (size_t d = 0; d < out.grid.size(); ++d) code << (d ? ", " : "") << out.grid[d];
    code << "), " << k_->threads << " threads";
    if (k_->thread_dims.size() > 1) {
      code << " (";
      for (size_t d = 0; d < k_->thread_dims.size(); ++d) {
        code << (d ? " x " : "") << k_->thread_dims[d];
      }
      code << ")";
    }
    if (out.dynamic_shared_bytes)
      code << ", " << out.dynamic_shared_bytes << " bytes of dynamic shared memory";
    code << ".\n";
    header_ = code.str();
    std::ostringstream fn;
    fn << sig.str() << " {\n";
    if (lang_ == Language::kCuda && shared_offset_) {
      fn << "  extern __shared__ __align__(" << max_shared_align_
         << ") unsigned char tessel_shared[];\n";
    }
    fn << body.str() << "}\n";
    function_ = fn.str();
    out.code = header_ + codegen::prelude(lang_, used_) + "\n" + function_;
    return out;
  }

  /// After run(): the comment that opens the source (the launch's shape), the kernel function,
  /// and the helpers it uses (for one prelude shared by several launches).
  const std::string& header() const { return header_; }
  const std::string& function() const { return function_; }
  const std::set<std::string>& used() const { return used_; }

 private:
  /// threadIdx.x + X * (threadIdx.y + Y * threadIdx.z): the IR's linear thread index.
  std::string linear_thread_index() const {
    const int n = static_cast<int>(k_->thread_dims.size());
    std::string index = codegen::thread_index(lang_, n - 1);
    for (int d = n - 2; d >= 0; --d) {
      if (d < n - 2) index = "(" + index + ")";
      index = codegen::thread_index(lang_, d) + " + " + std::to_string(k_->thread_dims[d]) + " * " +
              index;
    }
    return index;
  }

  // ---- Names -----------------------------------------------------------------------------------
  std::string unique(const void* key, const std::string& base) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string n = base.empty() ? "v" : base;
    for (char& c : n) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    if (std::isdigit(static_cast<unsigned char>(n[0]))) n = "_" + n;
    std::string candidate = n;
    for (int i = 1; taken_.count(candidate); ++i) candidate = n + "_" + std::to_string(i);
    taken_.insert(candidate);
    names_.emplace(key, candidate);
    return candidate;
  }
  std::string name(const Var& v) { return unique(v.get(), v.name()); }
  std::string name(const Buffer& b) { return unique(b.get(), b->name); }

  void line(std::ostream& o, const std::string& text) {
    o << std::string(2 * indent_, ' ') << text << "\n";
  }

  // ---- Expressions ---------------------------------------------------------------------------
  std::string expr_text(const Expr& e) {
    fp8_on_hip(e);
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        if (e.dtype().is_bool()) return v ? "true" : "false";
        std::string s = std::to_string(v);
        if (e.dtype().bits == 64) s += "LL";
        return s;
      }
      case ExprKind::kFloatImm:
        return codegen::float_literal(lang_, e.dtype(), e.as<FloatImmNode>()->value);
      case ExprKind::kVar:
        return unique(e.get(), e.as<VarNode>()->name);
      case ExprKind::kNot:
        return "(!" + expr_text(e.as<NotNode>()->a) + ")";
      case ExprKind::kSelect: {
        const auto* s = e.as<SelectNode>();
        return "(" + expr_text(s->cond) + " ? " + expr_text(s->t) + " : " + expr_text(s->f) + ")";
      }
      case ExprKind::kCast:
        return cast_text(e.dtype(), e.as<CastNode>()->value);
      case ExprKind::kBufferLoad: {
        const auto* ld = e.as<BufferLoadNode>();
        return name(ld->buffer) + "[" + flat_index(ld->buffer, ld->indices) + "]";
      }
      case ExprKind::kCall:
        return call_text(e);
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        bool div = e.kind() == ExprKind::kFloorDiv;
        if (e.dtype().is_float()) return binary(b, div ? "/" : "%");
        if (analyzer_.can_prove(b->a >= make_int(0)) && analyzer_.can_prove(b->b > make_int(0))) {
          return binary(b, div ? "/" : "%");
        }
        return "static_cast<" + c_type(lang_, e.dtype()) + ">(" +
               (div ? "tessel_floordiv(" : "tessel_floormod(") + expr_text(b->a) + ", " +
               expr_text(b->b) + "))";
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        std::string x = expr_text(b->a), y = expr_text(b->b);
        if (e.dtype().is_float()) {
          // fmin/fmax, as both interpreter levels evaluate them (a NaN operand yields the other
          // operand; a compare-and-select would yield the NaN): one FMNMX on NVIDIA.
          DataType t = e.dtype();
          bool dbl = t.code == TypeCode::kFloat && t.bits == 64;
          auto operand = [&](const Expr& a, const std::string& text) {
            return is_half_like(a.dtype()) ? "static_cast<float>(" + text + ")" : text;
          };
          std::string out = codegen::math_call(lang_, e.kind() == ExprKind::kMin ? "fmin" : "fmax",
                                               {operand(b->a, x), operand(b->b, y)}, dbl);
          return is_half_like(t) ? "static_cast<" + c_type(lang_, t) + ">(" + out + ")" : out;
        }
        // A call, not `y < x ? y : x`: that evaluates an operand twice, once on only the lanes
        // the compare picks, and a shuffle operand (a reduction's) must run on the whole warp.
        return std::string(e.kind() == ExprKind::kMin ? "tessel_min<" : "tessel_max<") +
               c_type(lang_, e.dtype()) + ">(" + x + ", " + y + ")";
      }
      default:
        break;
    }
    switch (e.kind()) {
#define TESSEL_CASE_(n, sym) \
  case ExprKind::k##n:       \
    return binary(static_cast<const BinaryNode*>(e.get()), sym);
      TESSEL_CASE_(Add, "+")
      TESSEL_CASE_(Sub, "-")
      TESSEL_CASE_(Mul, "*")
      TESSEL_CASE_(Div, "/")
      TESSEL_CASE_(BitAnd, "&")
      TESSEL_CASE_(BitOr, "|")
      TESSEL_CASE_(BitXor, "^")
      TESSEL_CASE_(Shl, "<<")
      TESSEL_CASE_(Shr, ">>")
#undef TESSEL_CASE_
      default:
        break;
    }
    const auto* c = static_cast<const CompareNode*>(e.get());
    const char* sym = e.kind() == ExprKind::kEQ    ? "=="
                      : e.kind() == ExprKind::kNE  ? "!="
                      : e.kind() == ExprKind::kLT  ? "<"
                      : e.kind() == ExprKind::kLE  ? "<="
                      : e.kind() == ExprKind::kGT  ? ">"
                      : e.kind() == ExprKind::kGE  ? ">="
                      : e.kind() == ExprKind::kAnd ? "&&"
                                                   : "||";
    return "(" + expr_text(c->a) + " " + sym + " " + expr_text(c->b) + ")";
  }

  std::string binary(const BinaryNode* b, const char* sym) {
    return "(" + expr_text(b->a) + " " + sym + " " + expr_text(b->b) + ")";
  }

  /// Types whose arithmetic and conversions go through float: f16, bf16 and the fp8 types.
  static bool is_half_like(DataType t) {
    return (t.code == TypeCode::kFloat && t.bits == 16) || t.code == TypeCode::kBFloat || is_fp8(t);
  }
  static bool is_fp8(DataType t) { return t.code == TypeCode::kE4M3 || t.code == TypeCode::kE5M2; }

  /// HIP kernels hold fp8 values as bytes, so they may load and store them but never convert
  /// or compute with them: Tessel's fp8 types are the OCP formats, which gfx90a lacks and
  /// gfx942 replaces by its FNUZ variant (another bias, one NaN, no negative zero).
  void fp8_on_hip(const Expr& e) const {
    if (lang_ != Language::kHip) return;
    DataType operand = e.dtype();
    if (const auto* c = e.as<CastNode>(); c && is_fp8(c->value.dtype())) operand = c->value.dtype();
    switch (e.kind()) {
      case ExprKind::kEQ:
      case ExprKind::kNE:
      case ExprKind::kLT:
      case ExprKind::kLE:
      case ExprKind::kGT:
      case ExprKind::kGE:
        operand = static_cast<const CompareNode*>(e.get())->a.dtype();
        break;
      default:
        break;
    }
    if (!is_fp8(operand) || e.kind() == ExprKind::kBufferLoad) return;
    user_error("emit --target hip: kernel '" + k_->name + "' converts or computes with " +
               operand.name() + " values (`" + to_string(e) +
               "`), which HIP code cannot do here: Tessel's fp8 types are the OCP formats, "
               "which gfx90a does not have and gfx942 replaces by its FNUZ variant (another "
               "exponent bias, no negative zero, one NaN); emit this kernel for CUDA "
               "(__nv_fp8_e4m3 / __nv_fp8_e5m2, sm89 and newer compute with them, any arch "
               "converts), or keep fp8 data to copies");
  }

  std::string cast_text(DataType to, const Expr& value) {
    std::string v = expr_text(value);
    DataType from = value.dtype();
    // 16-bit floats convert to and from other types through float.
    if (is_half_like(from) && !(to.code == TypeCode::kFloat && to.bits == 32)) {
      v = "static_cast<float>(" + v + ")";
    }
    if (is_half_like(to) && from.is_integral()) v = "static_cast<float>(" + v + ")";
    return "static_cast<" + c_type(lang_, to) + ">(" + v + ")";
  }

  std::string call_text(const Expr& e) {
    const auto* c = e.as<CallNode>();
    std::string fn = builtin_name(c->op);
    if (is_shuffle(c->op)) {
      return codegen::shuffle_call(lang_, fn, expr_text(c->args[0]), expr_text(c->args[1]),
                                   c_type(lang_, c->args[0].dtype()),
                                   k_->threads % kNvidiaWarpSize ? "tessel_lanes" : "0xffffffffu");
    }
    DataType t = e.dtype();
    if (t.is_integral() && fn == "abs") {  // a call: its operand evaluated once (see kMin)
      return "tessel_abs<" + c_type(lang_, t) + ">(" + expr_text(c->args[0]) + ")";
    }
    bool dbl = t.code == TypeCode::kFloat && t.bits == 64;
    std::vector<std::string> args;
    for (const Expr& a : c->args) {
      std::string s = expr_text(a);
      args.push_back(is_half_like(a.dtype()) ? "static_cast<float>(" + s + ")" : s);
    }
    std::string out = codegen::math_call(lang_, fn, args, dbl);
    return is_half_like(t) ? "static_cast<" + c_type(lang_, t) + ">(" + out + ")" : out;
  }

  /// Row-major offset of `idx` in `b` (per-thread and shared buffers are declared with their
  /// own shape flattened the same way).
  std::string flat_index(const Buffer& b, const std::vector<Expr>& idx) {
    return expr_text(analyzer_.simplify(flat_offset(b, idx)));
  }

  /// `&b[index]` for an instruction's operand. In CUDA, when a shared tile's index sums terms
  /// that vary with the outermost enclosing serial loop holding another serial loop (a
  /// pipeline's main loop around its copy and k-step loops: the stage's version offset) and
  /// terms that do not, it is printed `(&b[invariant] + (varying))`: nvcc then hoists the
  /// invariant part's byte offset out of the loop and adds the varying one per address (one
  /// instruction each instead of three on the Fig. 16 GEMM's ldmatrix addresses). The address
  /// is the same.
  std::string element_pointer(const Buffer& b, const std::vector<Expr>& idx) {
    Expr flat = analyzer_.simplify(flat_offset(b, idx));
    bool shared = b->scope == Scope::kShared || b->scope == Scope::kSharedDyn;
    if (lang_ != Language::kCuda || !shared || !stage_loop_.defined()) {
      return "&" + name(b) + "[" + expr_text(flat) + "]";
    }
    std::vector<std::pair<Expr, bool>> terms;  // (term, negated)
    std::function<void(const Expr&, bool)> flatten = [&](const Expr& e, bool neg) {
      if (const auto* n = e.as<AddNode>()) {
        flatten(n->a, neg);
        flatten(n->b, neg);
      } else if (const auto* n = e.as<SubNode>()) {
        flatten(n->a, neg);
        flatten(n->b, !neg);
      } else {
        terms.emplace_back(e, neg);
      }
    };
    flatten(flat, false);
    Expr fixed, varying;
    for (const auto& [term, neg] : terms) {
      Expr& sum = uses_var(term, stage_loop_) ? varying : fixed;
      if (!sum.defined()) {
        sum = neg ? make_const(term.dtype(), 0) - term : term;
      } else {
        sum = neg ? sum - term : sum + term;
      }
    }
    if (!fixed.defined() || !varying.defined()) {
      return "&" + name(b) + "[" + expr_text(flat) + "]";
    }
    return "(&" + name(b) + "[" + expr_text(fixed) + "] + " + expr_text(varying) + ")";
  }

  // ---- Statements ------------------------------------------------------------------------------
  void comment_origin(std::ostream& o, const Stmt& s) {
    if (!s->loc.known() || s->loc.str() == last_loc_) return;
    last_loc_ = s->loc.str();
    line(o, "// " + last_loc_);
  }

  void stmt(std::ostream& o, const Stmt& s) {
    if (const auto* seq = s.as<SeqNode>()) {
      for (const Stmt& c : seq->stmts) stmt(o, c);
      return;
    }
    comment_origin(o, s);
    switch (s.kind()) {
      case StmtKind::kFor: {
        const auto* f = s.as<ForNode>();
        bind_loop(analyzer_, *f);
        if (f->for_kind == ForKind::kVectorized && vector_copy(o, *f)) return;
        if (f->for_kind == ForKind::kUnrolled || f->for_kind == ForKind::kVectorized) {
          line(o, "#pragma unroll");
        }
        // The outermost serial loop around serial loops (a pipeline's main loop; nvcc unrolls the
        // small inner ones) is the one whose terms element_pointer moves out, and, in an sm90
        // consumer, the one unrolled over its stage period (codegen/loop_unroll.h).
        bool outer =
            f->for_kind == ForKind::kSerial && !stage_loop_.defined() && has_serial_loop(f->body);
        if (outer && lang_ == Language::kCuda) {
          if (const int64_t n = codegen::consumer_unroll(*f)) {
            line(o, "#pragma unroll " + std::to_string(n));
          }
        }
        std::string v = name(f->var);
        line(o, "for (" + c_type(lang_, f->var.dtype()) + " " + v + " = " + expr_text(f->min) +
                    "; " + v + " < " + expr_text(analyzer_.simplify(f->min + f->extent)) + "; ++" +
                    v + ") {");
        ++indent_;
        if (outer) stage_loop_ = f->var;
        stmt(o, f->body);
        if (outer) stage_loop_ = Var();
        --indent_;
        line(o, "}");
        return;
      }
      case StmtKind::kIf: {
        const auto* i = s.as<IfNode>();
        line(o, "if (" + expr_text(i->cond) + ") {");
        ++indent_;
        stmt(o, i->then_case);
        --indent_;
        if (i->else_case.defined() && !is_empty(i->else_case)) {
          line(o, "} else {");
          ++indent_;
          stmt(o, i->else_case);
          --indent_;
        }
        line(o, "}");
        return;
      }
      case StmtKind::kStore: {
        const auto* st = s.as<StoreNode>();
        std::string value = st->value.dtype() == st->buffer->dtype
                                ? expr_text(st->value)
                                : cast_text(st->buffer->dtype, st->value);
        line(o,
             name(st->buffer) + "[" + flat_index(st->buffer, st->indices) + "] = " + value + ";");
        return;
      }
      case StmtKind::kAlloc:
        return alloc(o, *s.as<AllocNode>());
      case StmtKind::kLet: {
        const auto* let = s.as<LetNode>();
        line(o, "const " + c_type(lang_, let->var.dtype()) + " " + name(let->var) + " = " +
                    expr_text(let->value) + ";");
        stmt(o, let->body);
        return;
      }
      case StmtKind::kBarrier:
        line(o, codegen::barrier(lang_));
        return;
      case StmtKind::kIntrinsicCall:
        return intrinsic(o, *s.as<IntrinsicCallNode>());
      case StmtKind::kTileOpCall:
        user_error("kernel '" + k_->name + "': " + s.as<TileOpCallNode>()->op->describe() +
                   " was not lowered; codegen prints thread-level IR (run the lowering first)");
      case StmtKind::kUseSwizzle:
        user_error("kernel '" + k_->name + "': T.use_swizzle was not lowered");
      case StmtKind::kPrint: {
        // The interpreters' line, from the device's printf.
        const auto* p = s.as<PrintNode>();
        DataType dt = p->value.dtype();
        std::string format =
            "T.print" + (p->loc.known() ? " at " + p->loc.str() : "") + ": block (";
        std::string args;
        for (size_t d = 0; d < k_->block_vars.size(); ++d) {
          format += std::string(d ? ", " : "") + "%d";
          args += ", (int)" + name(k_->block_vars[d]);
        }
        format += "), thread %d: " + (p->msg.empty() ? "" : p->msg + " = ");
        args += ", (int)" + name(k_->thread_var);
        if (dt.is_integral()) {
          format += "%lld";
          args += ", (long long)(" + expr_text(p->value) + ")";
        } else {
          format += "%.9g";
          args += ", (double)" + cast_text(DataType::f32(), p->value);
        }
        line(o, "printf(\"" + format + "\\n\"" + args + ");");
        return;
      }
      case StmtKind::kSeq:
        return;
    }
  }

  /// A vector copy (core/vector_copy.h) as one vector load and store; false when the loop is
  /// anything else (printed as an unrolled loop instead).
  bool vector_copy(std::ostream& o, const ForNode& f) {
    std::optional<VectorCopy> c = match_vector_copy(f, analyzer_);
    if (!c) return false;
    std::string type = c->bytes == 4 ? "unsigned" : c->bytes == 8 ? "tessel_u32x2" : "tessel_u32x4";
    used_.insert("vector_types");
    line(o, "*reinterpret_cast<" + type + "*>(&" + name(c->store->buffer) + "[" +
                expr_text(c->dst_first) + "]) = *reinterpret_cast<const " + type + "*>(&" +
                name(c->load->buffer) + "[" + expr_text(c->src_first) + "]);");
    return true;
  }

  static bool has_serial_loop(const Stmt& s) {
    bool found = false;
    for_each_stmt(s, [&](const Stmt& x) {
      const auto* f = x.as<ForNode>();
      found = found || (f && f->for_kind == ForKind::kSerial);
    });
    return found;
  }

  static bool is_empty(const Stmt& s) {
    const auto* seq = s.as<SeqNode>();
    return seq && seq->stmts.empty();
  }

  void alloc(std::ostream& o, const AllocNode& a) {
    const Buffer& b = a.buffer;
    std::string type = c_type(lang_, b->dtype);
    auto size = b->const_size();
    if (!size) {
      user_error("kernel '" + k_->name + "': buffer '" + b->name +
                 "' has a symbolic size; "
                 "shared and register buffers need constant shapes in generated code");
    }
    if (b->scope == Scope::kShared || b->scope == Scope::kSharedDyn) {
      if (lang_ == Language::kCuda) {
        int64_t bytes = b->dtype.storage_bytes(*size);
        const int64_t align = std::max<int64_t>(
            shared_align(b), tma_tiles_.count(b.get()) ? kTmaTileAlign : int64_t{16});
        internal_check(align <= kTmaTileAlign, "a shared buffer aligned beyond 1024 bytes");
        max_shared_align_ = std::max(max_shared_align_, align);
        shared_offset_ = (shared_offset_ + align - 1) / align * align;
        line(o, type + "* " + name(b) + " = reinterpret_cast<" + type + "*>(tessel_shared + " +
                    std::to_string(shared_offset_) + ");  // " + std::to_string(*size) +
                    " elements");
        shared_offset_ += bytes;
      } else {
        line(o, "__attribute__((shared)) __attribute__((aligned(16))) static " + type + " " +
                    name(b) + "[" + std::to_string(*size) + "];");
      }
      return;
    }
    std::string decl = type + " " + name(b) + "[" + std::to_string(*size) + "]";
    if (lang_ == Language::kCuda) decl = "__align__(16) " + decl;
    if (a.init.defined()) {
      line(o, decl + ";");
      line(o, name(b) + "[0] = " + expr_text(a.init) + ";");
    } else {
      line(o, decl + ";");
    }
  }

  void intrinsic(std::ostream& o, const IntrinsicCallNode& call) {
    const IntrinsicInfo& info = intrinsic_info(call.intrinsic);
    CallText text;
    text.lang = lang_;
    text.shared_address_bound = shared_address_bound_;
    std::vector<std::string>& args = text.args;
    std::vector<std::string>& buffers = text.buffers;
    std::optional<DataType> dst_type;
    for (const IntrinsicArg& a : call.args) {
      buffers.emplace_back();
      text.indices.emplace_back();
      text.offsets16.emplace_back();
      if (a.buffer.defined()) {
        if (!dst_type) dst_type = a.buffer->dtype;
        args.push_back(element_pointer(a.buffer, a.indices));
        buffers.back() = name(a.buffer);
        for (const Expr& i : a.indices) text.indices.back().push_back(expr_text(i));
        const bool shared =
            a.buffer->scope == Scope::kShared || a.buffer->scope == Scope::kSharedDyn;
        if (lang_ == Language::kCuda && shared) {
          // Every shared buffer starts 16-byte aligned (alloc), so the element's address >> 4 is
          // the buffer's address >> 4 plus this.
          const int64_t eb = a.buffer->dtype.storage_bytes(1);
          Expr bytes = flat_offset(a.buffer, a.indices) * make_int(eb);
          text.offsets16.back() = expr_text(analyzer_.simplify(floordiv(bytes, make_int(16))));
        }
      } else {
        args.push_back(expr_text(a.value));
      }
    }
    text.dst_type = dst_type.value_or(DataType::f32());
    if (info.box_rank > 0) {
      // A TMA copy reaches its global tensor through a tensor map the host builds: a kernel
      // parameter.
      const auto first = args.begin() + info.box_first;
      std::vector<std::string> box(first, first + info.box_rank);
      std::vector<int64_t> extents;
      for (int d = 0; d < info.box_rank; ++d)
        extents.push_back(*as_const_int(call.args[info.box_first + d].value));
      const int swizzle =
          static_cast<int>(*as_const_int(call.args[info.box_first + info.box_rank].value));
      std::string map = tensor_map_name(buffers[info.tma_global], box, swizzle);
      if (tensor_maps_.insert(map).second) {
        const Buffer& g = call.args[info.tma_global].buffer;
        tensor_map_args_.push_back({map, g->name, extents, swizzle, g->dtype});
      }
      used_.insert("tensor_maps");
    }
    line(o, codegen::intrinsic_call(info, std::move(text), used_));
  }

  /// An upper bound of every shared address of the block (CUDA): the 1 KB the driver reserves
  /// at the start of a block's shared window (compute capability 8.0 and later) plus each shared
  /// buffer's bytes and its alignment padding (alloc). 0 for HIP.
  int64_t shared_address_bound() const {
    if (lang_ != Language::kCuda) return 0;
    int64_t bound = kSharedReserved;
    for_each_stmt(k_->body, [&](const Stmt& s) {
      const auto* a = s.as<AllocNode>();
      if (!a || (a->buffer->scope != Scope::kShared && a->buffer->scope != Scope::kSharedDyn)) {
        return;
      }
      const auto size = a->buffer->const_size();
      if (!size) return;  // alloc refuses it with a user error
      // alloc pads below the buffer's alignment, at most kTmaTileAlign (checked there).
      bound += a->buffer->dtype.storage_bytes(*size) + kTmaTileAlign;
    });
    return bound;
  }

  const Kernel& k_;
  Language lang_;
  Analyzer analyzer_;
  Var stage_loop_;  ///< see element_pointer
  int indent_ = 1;
  std::map<const void*, std::string> names_;
  std::set<std::string> taken_{"int",      "float",   "half", "for",    "if",       "else",
                               "const",    "static",  "char", "double", "unsigned", "signed",
                               "long",     "short",   "bool", "auto",   "new",      "delete",
                               "register", "default", "case", "switch"};
  std::set<std::string> used_;
  std::set<std::string> tensor_maps_;
  std::set<const BufferNode*> tma_tiles_;
  static constexpr int64_t kTmaTileAlign = 1024;
  static constexpr int64_t kSharedReserved = 1024;  ///< see shared_address_bound
  int64_t shared_address_bound_ = 0;
  std::vector<TensorMapArg> tensor_map_args_;
  std::string header_, function_;
  int64_t shared_offset_ = 0;
  int64_t max_shared_align_ = 16;
  std::map<const BufferNode*, int64_t> shared_align_;  ///< buffers that need more than 16 bytes
  bool shared_align_known_ = false;

  /// The alignment shared buffer `b` needs: 16 bytes, or what an instruction reading it asks
  /// for its whole buffer (OperandMemoryAccess::buffer_align: wgmma's swizzled tiles, 1024).
  int64_t shared_align(const Buffer& b) {
    if (!shared_align_known_) {
      shared_align_known_ = true;
      for_each_stmt(k_->body, [&](const Stmt& x) {
        const auto* call = x.as<IntrinsicCallNode>();
        if (!call) return;
        const IntrinsicInfo& info = intrinsic_info(call->intrinsic);
        for (size_t i = 0; i < call->args.size(); ++i) {
          if (!call->args[i].buffer.defined()) continue;
          std::optional<OperandMemoryAccess> a = info.home->memory_access(info, i);
          if (!a || a->buffer_align <= 16) continue;
          int64_t& v = shared_align_[call->args[i].buffer.get()];
          v = std::max<int64_t>(v, a->buffer_align);
        }
      });
    }
    auto it = shared_align_.find(b.get());
    if (it == shared_align_.end()) return 16;
    max_shared_align_ = std::max(max_shared_align_, it->second);
    return it->second;
  }
  std::string last_loc_;
};

}  // namespace

EmittedSource emit_source(const Kernel& lowered, const Target& target) {
  // Hopper's instructions (mbarriers, TMA) only where the target has their family.
  for (const Kernel& launch : launches_of(lowered)) {
    for_each_stmt(launch->body, [&](const Stmt& s) {
      const auto* call = s.as<IntrinsicCallNode>();
      if (!call) return;
      const IntrinsicInfo& info = intrinsic_info(call->intrinsic);
      if ((info.sync || info.home == &tma_family()) && !target.has(*info.home)) {
        user_error("kernel '" + lowered->name + "': T." + info.name + " (" + info.cuda +
                   ") is a Hopper instruction that target " + target.name +
                   " does not have; emit with --target sm90");
      }
    });
  }
  const Language lang = target.nvidia ? Language::kCuda : Language::kHip;
  if (!is_multi_launch(lowered)) {
    check_capacity(lowered, &target);  // no source for a kernel the GPU cannot launch
    return SourcePrinter(lowered, lang).run();
  }
  // Several launches: one translation unit with one prelude and one kernel function per launch,
  // in the order the host launches them; the scratch is the host's to allocate (emit.h).
  EmittedSource out;
  out.language = lang;
  std::set<std::string> used;
  std::string functions;
  std::ostringstream head;
  head << "// Generated by Tessel from kernel '" << lowered->name << "' ("
       << (lang == Language::kCuda ? "CUDA" : "HIP") << "): " << lowered->launches.size()
       << " launches, run in this order on one stream.\n";
  for (const Buffer& b : lowered->scratch) {
    std::string shape;
    for (size_t d = 0; d < b->shape.size(); ++d) shape += (d ? ", " : "") + to_string(b->shape[d]);
    head << "// Scratch (T.alloc_global, allocated by the host before the first launch, passed "
            "after the parameters): "
         << b->name << " " << b->dtype.name() << "[" << shape << "].\n";
    out.scratch.push_back(b->name);
  }
  for (size_t i = 0; i < lowered->launches.size(); ++i) {
    const Kernel& launch = lowered->launches[i];
    check_capacity(launch, &target);
    SourcePrinter printer(launch, lang);
    EmittedSource one = printer.run();
    used.insert(printer.used().begin(), printer.used().end());
    functions += "\n// " + launch_label(lowered, i) + ":\n" + printer.header() + printer.function();
    EmittedLaunch l;
    l.entry = one.entry;
    l.grid = one.grid;
    l.grid_axes = one.grid_axes;
    l.threads = one.threads;
    l.thread_dims = one.thread_dims;
    l.dynamic_shared_bytes = one.dynamic_shared_bytes;
    l.tensor_maps = one.tensor_maps;
    out.launches.push_back(std::move(l));
    if (i == 0) {
      out.entry = one.entry;
      out.threads = one.threads;
      out.thread_dims = one.thread_dims;
      out.grid_axes = one.grid_axes;
      out.grid = one.grid;
      out.dynamic_shared_bytes = one.dynamic_shared_bytes;
      out.arguments = one.arguments;
    }
  }
  out.code = head.str() + codegen::prelude(lang, used) + functions;
  return out;
}

}  // namespace tessel
