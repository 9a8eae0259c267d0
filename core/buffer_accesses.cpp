// buffer_accesses: one walk over statements and their expressions.
#include "core/buffer_accesses.h"

#include "core/expr_functor.h"
#include "core/intrinsics.h"
#include "core/stmt_functor.h"
#include "core/tile_op.h"

namespace tessel {

std::vector<BufferAccess> buffer_accesses(const Stmt& s) {
  std::vector<BufferAccess> out;
  for_each_stmt(s, [&](const Stmt& x) {
    if (const auto* st = x.as<StoreNode>()) out.push_back({st->buffer, st->indices, true, false});
    if (const auto* call = x.as<IntrinsicCallNode>()) {
      const IntrinsicInfo& info = intrinsic_info(call->intrinsic);
      const bool atomic = info.family == IntrinsicFamily::kAtomic || info.sync;
      for (size_t k = 0; k < call->args.size() && k < info.operands.size(); ++k) {
        const IntrinsicArg& a = call->args[k];
        if (a.buffer.defined())
          out.push_back({a.buffer, a.indices, info.operands[k].written, atomic});
      }
    }
    if (const auto* op = x.as<TileOpCallNode>()) {
      for (const BufferRegion& r : op->op->reads()) out.push_back({r.buffer, {}, false, false});
      for (const BufferRegion& r : op->op->writes()) out.push_back({r.buffer, {}, true, false});
    }
  });
  for_each_expr(s, [&](const Expr& e) {
    pre_order_visit(e, [&](const Expr& x) {
      if (const auto* ld = x.as<BufferLoadNode>())
        out.push_back({ld->buffer, ld->indices, false, false});
    });
  });
  return out;
}

ReadsWrites reads_writes(const Stmt& s, const std::function<bool(const Buffer&)>& keep) {
  ReadsWrites rw;
  for (const BufferAccess& a : buffer_accesses(s)) {
    if (keep && !keep(a.buffer)) continue;
    (a.write ? rw.writes : rw.reads).insert(a.buffer.get());
    rw.buffers.emplace(a.buffer.get(), a.buffer);
  }
  return rw;
}

}  // namespace tessel
