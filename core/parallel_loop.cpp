// Parallel loops: inference of their thread partition and of the fragments they touch.
// Their lowering is in core/parallel_loop_lower.cpp.
#include "core/parallel_loop.h"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <set>

#include "core/analyzer.h"
#include "core/buffer.h"
#include "core/buffer_accesses.h"
#include "core/error.h"
#include "core/expr_functor.h"
#include "core/int_eval.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

/// The storage offset of `index` under `layout`: its output index flattened row-major.
int64_t flat_offset(const Layout& layout, const std::vector<int64_t>& index) {
  const std::vector<int64_t> out = layout.map(index);
  const std::vector<int64_t>& shape = layout.output_shape();
  int64_t offset = 0;
  for (size_t d = 0; d < out.size(); ++d) offset = offset * shape[d] + out[d];
  return offset;
}

}  // namespace

bool keeps_chunks_aligned(const Layout& layout, int64_t w) {
  const std::vector<int64_t>& shape = layout.input_shape();
  if (w == 1) return true;
  if (shape.empty() || shape.back() % w != 0 || layout.output_size() % w != 0) return false;
  if (layout.input_size() > (int64_t{1} << 20)) return false;  // too many to enumerate
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    const int64_t first = flat_offset(layout, idx);
    if (first % w != 0) return false;
    for (int64_t t = 1; t < w; ++t) {
      std::vector<int64_t> next = idx;
      next.back() += t;
      if (flat_offset(layout, next) != first + t) return false;
    }
    // The next chunk start: the last dimension steps by w, the others count as an odometer.
    size_t d = shape.size() - 1;
    idx[d] += w;
    while (idx[d] >= shape[d]) {
      if (d == 0) return true;
      idx[d] = 0;
      ++idx[--d];
    }
  }
}

ParallelLoop ParallelLoop::from_for(const ForNode& loop) {
  std::vector<Var> vars;
  std::vector<int64_t> extents;
  const ForNode* f = &loop;
  Stmt body;
  while (true) {
    auto extent = as_const_int(f->extent);
    auto min = as_const_int(f->min);
    if (!extent || !min || *min != 0) {
      user_error("T.Parallel at " + loop.loc.str() + ": the extent of loop '" + f->var.name() +
                 "' must be a constant (a tile size) for layout inference; " +
                 "use T.serial for a symbolic trip count");
    }
    vars.push_back(f->var);
    extents.push_back(*extent);
    const ForNode* inner = f->body.as<ForNode>();
    if (!inner || inner->for_kind != ForKind::kParallel) {
      body = f->body;
      break;
    }
    f = inner;
  }
  ParallelLoop out(&loop, "T.Parallel at " + loop.loc.str(), std::move(vars), std::move(extents),
                   std::move(body), loop.loc);
  out.cap_to_shared_ = true;
  return out;
}

// ---- The free partition ----------------------------------------------------------------------

Fragment default_loop_layout(const std::vector<int64_t>& extents, int64_t threads, int64_t vec) {
  return Fragment::from_fn(extents, [&](const std::vector<Var>& v, const Var&) {
    Expr flat = make_int(0);
    for (size_t d = 0; d < v.size(); ++d) flat = d == 0 ? Expr(v[d]) : flat * extents[d] + v[d];
    Expr chunk = floordiv(flat, make_int(vec));
    Expr thread = floormod(chunk, make_int(threads));
    Expr local = floordiv(chunk, make_int(threads)) * vec + floormod(flat, make_int(vec));
    return std::pair<Expr, Expr>{thread, local};
  });
}

int64_t choose_vector_width(const std::vector<int64_t>& extents, int max_bits) {
  int64_t vec = std::max<int64_t>(1, 128 / std::max(max_bits, 8));
  while (vec > 1 && extents.back() % vec != 0) vec /= 2;
  return vec;
}

// ---- Accesses --------------------------------------------------------------------------------

namespace {

struct Access {
  Buffer buffer;
  std::vector<Expr> indices;
};

/// True when `body` stores to `buffer`.
bool writes_fragment(const Stmt& body, const Buffer& buffer) {
  for (const BufferAccess& a : buffer_accesses(body)) {
    if (a.write && a.buffer.same_as(buffer)) return true;
  }
  return false;
}

/// Every distinct access (buffer + indices) to a fragment buffer in `body`.
std::vector<Access> fragment_accesses(const Stmt& body) {
  std::vector<Access> out;
  for (const BufferAccess& a : buffer_accesses(body)) {
    if (a.buffer->scope != Scope::kFragment || a.indices.empty()) continue;
    bool seen = false;
    for (const Access& o : out) {
      if (!o.buffer.same_as(a.buffer) || o.indices.size() != a.indices.size()) continue;
      bool same = true;
      for (size_t d = 0; d < a.indices.size(); ++d)
        same = same && structural_equal(o.indices[d], a.indices[d]);
      seen = seen || same;
    }
    if (!seen) out.push_back({a.buffer, a.indices});
  }
  return out;
}

/// The widest element (bits) the body loads or stores.
int max_element_bits(const Stmt& body) {
  int bits = 8;
  for (const BufferAccess& a : buffer_accesses(body))
    bits = std::max(bits, a.buffer->dtype.storage_bits());
  return bits;
}

/// True when `a` indexes its fragment with exactly the loop variables over the fragment's whole
/// box, unit dimensions (indexed by 0) aside: `acc[i, j]`, or `s[i, 0]` of a (32, 1) tile in a
/// loop over i.
bool is_identity(const Access& a, const std::vector<Var>& vars, const std::vector<int64_t>& ext) {
  size_t k = 0;
  for (size_t d = 0; d < a.indices.size(); ++d) {
    auto e = as_const_int(a.buffer->shape[d]);
    if (!e) return false;
    if (*e == 1 && as_const_int(a.indices[d]) == std::optional<int64_t>(0)) continue;
    if (k == vars.size() || !a.indices[d].same_as(vars[k]) || *e != ext[k]) return false;
    ++k;
  }
  return k == vars.size();
}

std::vector<int64_t> const_shape(const Buffer& b) {
  std::vector<int64_t> shape;
  for (const Expr& e : b->shape) {
    auto c = as_const_int(e);
    if (!c) {
      user_error("fragment '" + b->name + "' at " + b->loc.str() +
                 " has a symbolic shape; fragments live in registers and need constant extents");
    }
    shape.push_back(*c);
  }
  return shape;
}

std::string index_text(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t d = 0; d < index.size(); ++d) s += (d ? ", " : "") + std::to_string(index[d]);
  return s + "]";
}

void bind_point(IntEnv& env, const std::vector<Var>& vars, const std::vector<int64_t>& p) {
  for (size_t k = 0; k < vars.size(); ++k) env[static_cast<const VarNode*>(vars[k].get())] = p[k];
}

/// Calls fn(point, rep, thread) for every point and replica of `frag`'s box.
void for_each_thread(const Fragment& frag,
                     const std::function<void(const std::vector<int64_t>&, int64_t, int64_t)>& fn) {
  for_each_index(frag.input_shape(), [&](const std::vector<int64_t>& p) {
    for (int64_t r = 0; r < frag.replicate(); ++r) fn(p, r, frag.map_fragment(p, r).first);
  });
}

}  // namespace

std::vector<int64_t> holders(const Fragment& frag, const std::vector<int64_t>& index) {
  std::set<int64_t> threads;
  for (int64_t r = 0; r < frag.replicate(); ++r) threads.insert(frag.map_fragment(index, r).first);
  return {threads.begin(), threads.end()};
}

// ---- Loops over part of a fragment -------------------------------------------------------------

namespace {

/// `var + c`, `c + var` or `var` for one of `vars`: its position and c; nullopt otherwise.
std::optional<std::pair<size_t, int64_t>> var_plus_const(const Expr& e,
                                                         const std::vector<Var>& vars) {
  Expr v = e;
  int64_t c = 0;
  if (const auto* add = e.as<AddNode>()) {
    if (auto k = as_const_int(add->b)) {
      v = add->a, c = *k;
    } else if (auto k2 = as_const_int(add->a)) {
      v = add->b, c = *k2;
    }
  }
  for (size_t k = 0; k < vars.size(); ++k) {
    if (v.same_as(vars[k])) return std::pair<size_t, int64_t>{k, c};
  }
  return std::nullopt;
}

/// A loop over part of a fragment — `acc_o[0:16, :]` of a (64, 64) accumulator, one row
/// `acc[3, :]` — must run each element's iteration where the fragment holds it. Such a loop is
/// rewritten to run over the fragment's whole box, its body guarded by "inside the part", so its
/// access is the fragment's own index and its partition can be the fragment's layout. Applies
/// when no fragment is accessed with exactly the loop variables, to the first fragment whose
/// indices are each a distinct loop variable plus a constant, or a constant.
void widen_to_fragment(std::vector<Var>& vars, std::vector<int64_t>& extents, Stmt& body) {
  std::vector<Access> accesses = fragment_accesses(body);
  for (const Access& a : accesses) {
    if (is_identity(a, vars, extents)) return;
  }
  for (const Access& a : accesses) {
    const std::vector<Expr>& idx = a.indices;
    std::vector<Var> wide_vars;
    std::vector<int64_t> wide_extents;
    std::vector<Expr> old_value(vars.size());  // each old variable in terms of the new ones
    Expr inside;
    bool ok = true;
    for (size_t d = 0; d < idx.size() && ok; ++d) {
      auto shape = as_const_int(a.buffer->shape[d]);
      if (!shape) return;
      if (*shape == 1 && as_const_int(idx[d]) == std::optional<int64_t>(0)) continue;
      auto vc = var_plus_const(idx[d], vars);
      Var w(vc ? vars[vc->first].name() : "d" + std::to_string(d));
      wide_vars.push_back(w);
      wide_extents.push_back(*shape);
      Expr lo, hi;
      if (vc) {
        auto [k, c] = *vc;
        ok = !old_value[k].defined() && c >= 0 && c + extents[k] <= *shape;
        old_value[k] = w - make_int(c);
        if (c > 0) lo = w >= make_int(c);
        if (c + extents[k] < *shape) hi = w < make_int(c + extents[k]);
      } else if (auto c = as_const_int(idx[d])) {
        ok = *c >= 0 && *c < *shape;
        lo = w == make_int(*c);
      } else {
        ok = false;
      }
      for (const Expr& t : {lo, hi}) {
        if (t.defined()) inside = inside.defined() ? (inside && t) : t;
      }
    }
    for (const Expr& v : old_value) ok = ok && v.defined();
    if (!ok || !inside.defined()) continue;
    body = IfNode::make(inside, substitute(body, vars, old_value), Stmt(), body->loc);
    vars = std::move(wide_vars);
    extents = std::move(wide_extents);
    return;
  }
}

}  // namespace

ParallelLoop::ParallelLoop(const void* key, std::string origin, std::vector<Var> vars,
                           std::vector<int64_t> extents, Stmt body, SourceLoc loc)
    : key_(key), origin_(std::move(origin)), loc_(std::move(loc)) {
  // A variable of extent 1 is the constant 0 (as a tile's unit dimension is): `s[i, k]` in a
  // loop over (32, 1) is `s[i, 0]`, and the loop is the 1-d loop over i.
  std::vector<Var> dropped;
  for (size_t k = 0; k < vars.size(); ++k) {
    bool keep = extents[k] != 1 || (k + 1 == vars.size() && vars_.empty());  // keep one
    (keep ? vars_ : dropped).push_back(vars[k]);
    if (keep) extents_.push_back(extents[k]);
  }
  body_ = substitute(body, dropped, std::vector<Expr>(dropped.size(), make_int(0)));
  widen_to_fragment(vars_, extents_, body_);
}

// ---- Deriving a fragment from a loop layout ----------------------------------------------------

std::optional<Fragment> derive_fragment(const Fragment& loop, const std::vector<Var>& loop_vars,
                                        const std::vector<Expr>& indices,
                                        const std::vector<int64_t>& shape, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<Fragment> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  // Which buffer dimension determines each loop variable, and with which factor.
  std::vector<int> dim_of(loop_vars.size(), -1);
  std::vector<int64_t> factor(loop_vars.size(), 1);
  for (size_t d = 0; d < indices.size(); ++d) {
    const Expr& e = indices[d];
    Expr var = e;
    int64_t f = 1;
    if (const auto* div = e.as<FloorDivNode>()) {
      auto c = as_const_int(div->b);
      if (c && *c > 0) var = div->a, f = *c;
    }
    bool matched = false;
    for (size_t k = 0; k < loop_vars.size(); ++k) {
      if (!var.same_as(loop_vars[k])) continue;
      if (dim_of[k] >= 0)
        return fail("loop variable '" + loop_vars[k].name() + "' indexes two dimensions");
      dim_of[k] = static_cast<int>(d), factor[k] = f, matched = true;
    }
    if (!matched && !(as_const_int(e) == std::optional<int64_t>(0) && shape[d] == 1)) {
      return fail("index " + std::to_string(d) +
                  " is neither a loop variable nor a loop variable "
                  "divided by a constant");
    }
  }
  // Numerically: the threads that need each element.
  std::map<std::vector<int64_t>, std::set<int64_t>> needs;
  IntEnv env;
  for_each_thread(loop, [&](const std::vector<int64_t>& p, int64_t, int64_t t) {
    bind_point(env, loop_vars, p);
    std::vector<int64_t> b;
    for (const Expr& e : indices) b.push_back(eval_int(e, env));
    needs[b].insert(t);
  });
  int64_t elements = 1;
  for (int64_t s : shape) elements *= s;
  if (static_cast<int64_t>(needs.size()) != elements) {
    return fail("the loop touches " + std::to_string(needs.size()) + " of its " +
                std::to_string(elements) + " elements");
  }
  // The thread bits over which every element's holders form one XOR coset.
  int64_t nbits =
      std::bit_width(static_cast<uint64_t>(std::max<int64_t>(loop.thread_extent() - 1, 1)));
  int64_t group = 0;
  for (int64_t bit = 0; bit < nbits; ++bit) {
    bool closed = true;
    for (const auto& [b, ts] : needs) {
      for (int64_t t : ts) closed = closed && ts.count(t ^ (int64_t{1} << bit));
      if (!closed) break;
    }
    if (closed) group |= int64_t{1} << bit;
  }
  const int64_t replicate = int64_t{1} << std::popcount(static_cast<uint64_t>(group));
  for (const auto& [b, ts] : needs) {
    if (static_cast<int64_t>(ts.size()) != replicate) {
      return fail("element " + index_text(b) + " is needed by " + std::to_string(ts.size()) +
                  " threads that do not form one group of thread-index bits");
    }
  }
  // thread(b, rep): the representative iteration's thread with the group bits set from rep.
  std::vector<Var> iv;
  for (const std::string& n : default_iter_var_names(shape.size())) iv.emplace_back(n);
  Var rep("rep");
  std::vector<Expr> point;
  for (size_t k = 0; k < loop_vars.size(); ++k) {
    point.push_back(dim_of[k] < 0    ? make_int(0)
                    : factor[k] == 1 ? Expr(iv[dim_of[k]])
                                     : iv[dim_of[k]] * factor[k]);
  }
  auto [thread0, local] = loop.forward(point, make_int(0));
  Analyzer analyzer;
  for (size_t d = 0; d < iv.size(); ++d) analyzer.bind(iv[d], 0, shape[d]);
  thread0 = analyzer.simplify(thread0);
  local = analyzer.simplify(local);
  Expr thread = thread0;
  if (group) {
    // The group bits of the thread come from rep: contiguous bits lo.. take rep << lo, others
    // one bit of rep each.
    int64_t keep = ((int64_t{1} << nbits) - 1) ^ group;
    int lo = std::countr_zero(static_cast<uint64_t>(group));
    Expr spread;
    if (((group >> lo) & ((group >> lo) + 1)) == 0) {  // contiguous bits
      spread = lo == 0 ? Expr(rep) : rep << make_int(lo);
    } else {
      spread = make_int(0);
      int g = 0;
      for (int64_t bit = 0; bit < nbits; ++bit) {
        if (!((group >> bit) & 1)) continue;
        spread = spread + (((rep >> make_int(g)) & make_int(1)) << make_int(bit));
        ++g;
      }
    }
    // When the representative thread has the group bits clear everywhere (a row's first
    // column is in its group's first lane), the OR is a sum: an affine, invertible map.
    bool clear = true;
    IntEnv at;
    for_each_index(shape, [&](const std::vector<int64_t>& b) {
      bind_point(at, iv, b);
      clear = clear && (eval_int(thread0, at) & group) == 0;
    });
    thread = keep == 0 ? spread : clear ? thread0 + spread : (thread0 & make_int(keep)) | spread;
  }
  // Registers taken from a coarser loop leave gaps (every other one for `j // 2`, every fourth
  // for a row of a 4-wide partition): divide by the gcd of the registers used; then close
  // periodic gaps (registers 0-3 and 16-19 used: v % 16 + v // 16 * 4).
  {
    IntEnv at;
    std::set<int64_t> used;
    for_each_index(shape, [&](const std::vector<int64_t>& b) {
      bind_point(at, iv, b);
      used.insert(eval_int(local, at));
    });
    int64_t g = 0;
    for (int64_t v : used) g = std::gcd(g, v);
    if (g > 1) {
      local = analyzer.simplify(floordiv(local, make_int(g)));
      std::set<int64_t> scaled;
      for (int64_t v : used) scaled.insert(v / g);
      used = scaled;
    }
    // The period P (a power of two) whose window [0, W) holds every register modulo P, with the
    // smallest resulting extent; only when that is denser and keeps registers distinct.
    const int64_t top = used.empty() ? 0 : *used.rbegin();
    int64_t best_p = 0, best_w = 0, best_extent = top + 1;
    for (int64_t period = 2; period <= top; period *= 2) {
      int64_t width = 0;
      for (int64_t v : used) width = std::max(width, v % period + 1);
      int64_t extent = (top / period) * width + width;
      std::set<int64_t> packed;
      for (int64_t v : used) packed.insert(v % period + v / period * width);
      if (width < period && extent < best_extent && packed.size() == used.size()) {
        best_p = period, best_w = width, best_extent = extent;
      }
    }
    if (best_p) {
      local = analyzer.simplify(floormod(local, make_int(best_p)) +
                                floordiv(local, make_int(best_p)) * best_w);
    }
  }
  auto frag = Fragment::try_make(iv, shape, thread, local, replicate, rep);
  if (!frag) return fail("the derived map is not a valid fragment");
  // Check: holders are exactly the needing threads, and registers do not collide.
  std::set<std::pair<int64_t, int64_t>> used;
  for (const auto& [b, ts] : needs) {
    std::vector<int64_t> h = holders(*frag, b);
    if (h != std::vector<int64_t>(ts.begin(), ts.end())) {
      return fail("element " + index_text(b) + " would be held by other threads than need it");
    }
    int64_t reg = frag->map_fragment(b, 0).second;
    for (int64_t t : h) {
      if (!used.insert({t, reg}).second) {
        return fail("two elements would share register " + std::to_string(reg) + " of thread " +
                    std::to_string(t));
      }
    }
  }
  return frag;
}

int64_t ParallelLoop::vector_width() const {
  int64_t vec = choose_vector_width(extents_, max_element_bits(body_));
  while (max_vector_ > 0 && vec > max_vector_) vec /= 2;
  return vec;
}

// ---- Inference -------------------------------------------------------------------------------

namespace {

/// `vec` halved until every shared tile of `body` with a known layout and a last extent that
/// `vec` divides keeps runs of `vec` elements contiguous and aligned.
int64_t shared_run_cap(const Stmt& body, LayoutInferContext& ctx, int64_t vec) {
  for (const BufferAccess& a : buffer_accesses(body)) {
    const Buffer& b = a.buffer;
    if (b->scope != Scope::kShared && b->scope != Scope::kSharedDyn) continue;
    const Layout* stored = ctx.shared_layout(b);
    if (!stored || stored->input_shape().empty()) continue;
    const int64_t last = stored->input_shape().back();
    while (vec > 1 && last % vec == 0 && !keeps_chunks_aligned(*stored, vec)) vec /= 2;
  }
  return vec;
}

}  // namespace

void ParallelLoop::infer_layout(LayoutInferContext& ctx, InferLevel level) const {
  if (level == InferLevel::kStrict) return;
  std::vector<Access> accesses = fragment_accesses(body_);
  if (!ctx.loop(key_)) {
    for (const Access& a : accesses) {
      const Fragment* f = ctx.fragment(a.buffer);
      if (f && is_identity(a, vars_, extents_)) {
        ctx.set_loop(key_, f->input_shape() == extents_ ? *f : f->reshape(extents_),
                     origin_ + " (from " + a.buffer->name + ")");
        break;
      }
    }
    if (!ctx.loop(key_) && level == InferLevel::kFree) {
      // Nothing decided the partition: the free one; undecided fragments follow it below.
      int64_t vec = vector_width();
      // A vector no wider than the runs the body's shared tiles keep contiguous (swizzle_mfma
      // keeps 8-byte granules): a wider one would be split into element accesses.
      if (cap_to_shared_) vec = shared_run_cap(body_, ctx, vec);
      ctx.set_loop(key_, default_loop_layout(extents_, ctx.threads(), vec), origin_ + " (free)");
    }
  }
  const Fragment* loop = ctx.loop(key_);
  if (!loop) return;
  for (const Access& a : accesses) {
    if (ctx.fragment(a.buffer)) continue;
    std::string why;
    auto frag = derive_fragment(*loop, vars_, a.indices, const_shape(a.buffer), &why);
    if (frag) {
      ctx.set_fragment(a.buffer, *frag, origin_ + " (" + infer_level_name(level) + ")");
    } else if (level == InferLevel::kFree && !writes_fragment(body_, a.buffer)) {
      // Only read here, by threads that form no group of thread bits (a row over 6 threads, a
      // block of 96): every thread holds all of it, and whoever writes it writes every copy.
      ctx.set_fragment(a.buffer, Fragment::fully_replicated(const_shape(a.buffer), ctx.threads()),
                       origin_ + " (every thread: " + why + ")");
    } else if (level == InferLevel::kFree) {
      user_error("kernel '" + ctx.kernel()->name + "': " + origin_ + " cannot give fragment '" +
                 a.buffer->name + "' a layout from the loop's partition " + loop->to_string() +
                 ": " + why +
                 "; fix: T.annotate_layout the fragment, or copy the values through "
                 "shared memory");
    }
  }
  if (level == InferLevel::kFree && !converts_layouts_) check_held(ctx);
}

void ParallelLoop::check_held(LayoutInferContext& ctx) const {
  const Fragment* loop = ctx.loop(key_);
  if (!loop || loop->input_size() * loop->replicate() > (int64_t{1} << 20)) return;
  for (const Access& a : fragment_accesses(body_)) {
    const Fragment* f = ctx.fragment(a.buffer);
    // Fragments laid out exactly like the loop are held by construction.
    if (!f || (is_identity(a, vars_, extents_) && f->input_shape() == extents_ && *f == *loop)) {
      continue;
    }
    // A dimension indexed by a variable of an enclosing loop (`picked[i, k]` in a serial loop
    // over k) may take any value: the thread must hold every element along it.
    std::vector<bool> any(a.indices.size(), false);
    for (size_t d = 0; d < a.indices.size(); ++d) {
      pre_order_visit(a.indices[d], [&](const Expr& x) {
        if (const auto* v = x.as<VarNode>()) {
          bool own =
              std::any_of(vars_.begin(), vars_.end(), [&](const Var& lv) { return lv.get() == v; });
          any[d] = any[d] || !own;
        }
      });
    }
    IntEnv env;
    std::map<std::vector<int64_t>, std::vector<int64_t>> cache;
    for_each_thread(*loop, [&](const std::vector<int64_t>& p, int64_t, int64_t t) {
      bind_point(env, vars_, p);
      std::vector<int64_t> b(a.indices.size(), 0);
      for (size_t d = 0; d < b.size(); ++d) {
        if (any[d]) continue;
        b[d] = eval_int(a.indices[d], env);
        if (b[d] < 0 || b[d] >= f->input_shape()[d]) return;  // out of bounds: the simulator's job
      }
      // Each element the iteration may touch: the free dimensions over their whole extent.
      std::vector<int64_t> free_shape;
      for (size_t d = 0; d < b.size(); ++d) free_shape.push_back(any[d] ? f->input_shape()[d] : 1);
      bool held = true;
      for_each_index(free_shape, [&](const std::vector<int64_t>& q) {
        if (!held) return;
        for (size_t d = 0; d < b.size(); ++d) {
          if (any[d]) b[d] = q[d];
        }
        auto it = cache.find(b);
        if (it == cache.end()) it = cache.emplace(b, holders(*f, b)).first;
        held = std::binary_search(it->second.begin(), it->second.end(), t);
      });
      if (held) return;
      auto it = cache.find(b);
      std::string point;
      for (size_t k = 0; k < vars_.size(); ++k) {
        point += (k ? ", " : "") + vars_[k].name() + "=" + std::to_string(p[k]);
      }
      user_error("kernel '" + ctx.kernel()->name + "': " + origin_ + " runs iteration (" + point +
                 ") in thread " + std::to_string(t) + ", but element " + index_text(b) +
                 " of fragment '" + a.buffer->name + "' lives in thread(s) " +
                 std::to_string(it->second.front()) + (it->second.size() > 1 ? "..." : "") +
                 "\n  loop partition: " + loop->to_string() + "\n  '" + a.buffer->name +
                 "': " + f->to_string() +
                 "\n  fix: T.annotate_layout the fragment so both agree, or copy it through "
                 "shared memory");
    });
  }
}

}  // namespace tessel
