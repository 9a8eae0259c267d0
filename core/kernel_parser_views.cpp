// Views of kernel files: `flat = T.Tensor((M * N, K), dtype, A.data)` inside the T.Kernel body is
// A under another shape (same dtype, same element count, row-major). The front end keeps the view
// as a buffer of its own while reading and maps every access back onto A when the kernel is
// finished, so the IR, the interpreters, the proofs and the generated code only see A.
#include "core/analyzer.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"
#include "core/op_copy.h"
#include "core/stmt_functor.h"

namespace tessel::kernel_parser_detail {

namespace {

bool unit(const Expr& e) { return as_const_int(e) == std::optional<int64_t>(1); }

Expr product(const std::vector<Expr>& shape) {
  Expr p = make_int(1);
  for (const Expr& e : shape) p = p * e;
  return p;
}

/// Row-major: the flat offset of `idx` in `shape`.
Expr flatten(const std::vector<Expr>& idx, const std::vector<Expr>& shape) {
  Expr flat = make_int(0);
  for (size_t d = 0; d < idx.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

/// Row-major: the index in `shape` of flat offset `flat`.
std::vector<Expr> unflatten(const Expr& flat, const std::vector<Expr>& shape) {
  std::vector<Expr> idx(shape.size());
  Expr rest = flat;
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = d == 0 ? rest : floormod(rest, shape[d]);
    rest = floordiv(rest, shape[d]);
  }
  return idx;
}

/// Rewrites loads and stores of views into loads and stores of the tensors they view.
class ViewRewriter : public StmtMutator {
 public:
  explicit ViewRewriter(const std::map<const BufferNode*, Buffer>& views) : views_(views) {}

 protected:
  Expr mutate_expr(const Expr& e) override { return loads_.mutate(e); }

  Stmt visit_Store(const StoreNode* op, const Stmt& s) override {
    Stmt rewritten = StmtMutator::visit_Store(op, s);
    const auto* st = rewritten.as<StoreNode>();
    auto it = views_.find(st->buffer.get());
    if (it == views_.end()) return rewritten;
    return StoreNode::make(it->second, onto(st->buffer, it->second, st->indices), st->value,
                           st->loc);
  }

 private:
  static std::vector<Expr> onto(const Buffer& view, const Buffer& base,
                                const std::vector<Expr>& idx) {
    return unflatten(flatten(idx, view->shape), base->shape);
  }

  class Loads : public ExprMutator {
   public:
    explicit Loads(const std::map<const BufferNode*, Buffer>& views) : views_(views) {}

   protected:
    Expr visit_BufferLoad(const BufferLoadNode* op, const Expr& e) override {
      Expr rewritten = ExprMutator::visit_BufferLoad(op, e);
      const auto* ld = rewritten.as<BufferLoadNode>();
      auto it = views_.find(ld->buffer.get());
      if (it == views_.end()) return rewritten;
      return BufferLoadNode::make(it->second, onto(ld->buffer, it->second, ld->indices));
    }

   private:
    const std::map<const BufferNode*, Buffer>& views_;
  };

  const std::map<const BufferNode*, Buffer>& views_;
  Loads loads_{views_};
};

}  // namespace

Value Parser::make_view(const CallArgs& call) {
  const std::string& op = call.callee;
  auto a = bind_args(call, {"shape", "dtype", "data"}, 2);
  if (!a[2]) {
    fail(call.at, op + "(shape, dtype) in a kernel body declares nothing; a view is " + op +
                      "(shape, dtype, A.data), A's storage under another shape");
  }
  std::vector<Expr> shape = arg_shape(call, *a[0], "shape");
  DataType dtype = arg_dtype(call, *a[1], "dtype");
  if (a[2]->value.kind != Value::Kind::kBuffer) {
    wrong_kind(call, *a[2], "data", "the storage of a tensor (A.data)");
  }
  Buffer base = a[2]->value.buffer;
  if (const Buffer* inner = view_base(base)) base = *inner;  // a view of a view
  if (base->scope != Scope::kGlobal) {
    fail(a[2]->value_at, op + ": a view of '" + base->name + "' (" + scope_name(base->scope) +
                             "): Tessel takes views of kernel tensors (global) only; index " +
                             "the buffer itself");
  }
  if (dtype != base->dtype) {
    fail(a[1]->value_at, op + ": a view of '" + base->name + "' (" + base->dtype.name() + ") as " +
                             dtype.name() +
                             " reinterprets its bits, which Tessel does not support; view it "
                             "as " +
                             base->dtype.name() + " and convert the values");
  }
  Analyzer analyzer;
  if (!analyzer.can_prove_equal(product(shape), product(base->shape))) {
    fail(a[0]->value_at, op + ": the view has " + to_string(analyzer.simplify(product(shape))) +
                             " elements but '" + base->name + "' has " +
                             to_string(analyzer.simplify(product(base->shape))) +
                             "; a view must cover its tensor exactly");
  }
  Buffer view = located(call.at, [&] {
    return BufferNode::make(base->name + "_view", shape, dtype, Scope::kGlobal, loc_of(call.at));
  });
  views_.emplace(view.get(), base);
  return Value::of(view);
}

const Buffer* Parser::view_base(const Buffer& b) const {
  auto it = views_.find(b.get());
  return it == views_.end() ? nullptr : &it->second;
}

Stmt Parser::view_copy(const CallArgs& call, const BufferRegion& src_in,
                       const BufferRegion& dst_in) const {
  // CopyOp::make validates the two regions and gives a point-form one its extents; its meaning
  // is then written out: reads outside src's tensor give 0, writes outside dst's are dropped.
  TileOpRef checked =
      located(call.at, [&] { return CopyOp::make(src_in, dst_in, loc_of(call.at)); });
  const auto& copy = static_cast<const CopyOp&>(*checked);
  const BufferRegion &src = copy.src(), &dst = copy.dst();
  std::vector<Expr> extents;
  for (const Range& r : src.ranges) {
    if (!unit(r.extent)) extents.push_back(r.extent);
  }
  std::vector<Var> vars;
  for (size_t k = 0; k < extents.size(); ++k) {
    vars.emplace_back("i" + std::to_string(k), loop_var_type(make_int(0), extents[k]));
  }
  auto indices = [&](const BufferRegion& region, Expr* inside) {
    std::vector<Expr> idx;
    size_t k = 0;
    for (size_t d = 0; d < region.ranges.size(); ++d) {
      const Range& r = region.ranges[d];
      Expr i = unit(r.extent) ? r.min : r.min + vars[k++];
      if (region.buffer->scope == Scope::kGlobal) {
        Expr in = i >= make_int(0) && i < region.buffer->shape[d];
        *inside = inside->defined() ? (*inside && in) : in;
      }
      idx.push_back(i);
    }
    return idx;
  };
  Expr src_inside, dst_inside;
  std::vector<Expr> si = indices(src, &src_inside), di = indices(dst, &dst_inside);
  Expr value = BufferLoadNode::make(src.buffer, si);
  if (src_inside.defined())
    value = if_then_else(src_inside, value, make_const(src.buffer->dtype, 0));
  if (dst.buffer->dtype != src.buffer->dtype) value = cast(dst.buffer->dtype, value);
  SourceLoc loc = loc_of(call.at);
  return located(call.at, [&] {
    Stmt body = StoreNode::make(dst.buffer, di, value, loc);
    if (dst_inside.defined()) body = IfNode::make(dst_inside, body, Stmt(), loc);
    for (size_t k = vars.size(); k-- > 0;) {
      body = ForNode::make(vars[k], make_int(0), extents[k], ForKind::kParallel, body, loc);
    }
    return body;
  });
}

Stmt Parser::view_accesses(const Stmt& body) const {
  Stmt out = ViewRewriter(views_).mutate(body);
  // Only indexing and T.copy take views, and both were rewritten: nothing may still name one.
  for_each_stmt(out, [&](const Stmt& s) {
    if (const auto* call = s.as<TileOpCallNode>()) {
      for (const auto& regions : {call->op->reads(), call->op->writes()}) {
        for (const BufferRegion& r : regions) {
          internal_check(!views_.count(r.buffer.get()), "a view left in a tile operator");
        }
      }
    }
  });
  return out;
}

}  // namespace tessel::kernel_parser_detail
