// Block state: per-thread variables and storage, block-wide shared and fragment storage.
#include "interp/block_state.h"

#include "core/capacity.h"
#include "core/expr_functor.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "sim/sim_run.h"

namespace tessel {

BlockState::BlockState(const Kernel& kernel, GlobalMemory& global, std::vector<int64_t> block_index,
                       const std::unordered_map<const VarNode*, int64_t>& dynamic_values)
    : kernel_(kernel),
      global_(global),
      block_index_(std::move(block_index)),
      threads_(kernel->threads),
      thread_var_(static_cast<const VarNode*>(kernel->thread_var.get())) {
  for (size_t d = 0; d < kernel->block_vars.size(); ++d) {
    block_vars_[static_cast<const VarNode*>(kernel->block_vars[d].get())] =
        Value::of_int(block_index_[d]);
  }
  for (const auto& [var, value] : dynamic_values) block_vars_[var] = Value::of_int(value);
}

std::string BlockState::block_name() const {
  return "block " + sim::block_string(block_index_);  // as the thread level names blocks
}

HostTensor& BlockState::storage(const Buffer& buffer, int t) {
  const BufferNode* b = buffer.get();
  if (b->scope == Scope::kGlobal) {
    auto it = global_.tensors.find(b);
    if (it == global_.tensors.end()) {
      user_error("kernel '" + kernel_->name + "': global buffer '" + b->name +
                 "' is not a parameter of the kernel; pass it in the signature");
    }
    return *it->second;
  }
  if (is_per_thread(b->scope)) {
    auto& locals = threads_[t].locals;
    auto it = locals.find(b);
    if (it != locals.end()) return it->second;
  } else {
    auto it = block_buffers_.find(b);
    if (it != block_buffers_.end()) return it->second;
  }
  user_error("kernel '" + kernel_->name + "': '" + b->name + "' is used before its allocation" +
             (b->loc.known() ? " at " + b->loc.str() : "") +
             "; allocate it (T.alloc_*) before the first statement that uses it");
}

HostTensor* BlockState::find_storage(const Buffer& buffer, int t) {
  const BufferNode* b = buffer.get();
  if (b->scope == Scope::kGlobal) {
    auto it = global_.tensors.find(b);
    return it == global_.tensors.end() ? nullptr : it->second;
  }
  auto& table = is_per_thread(b->scope) ? threads_[t].locals : block_buffers_;
  auto it = table.find(b);
  return it == table.end() ? nullptr : &it->second;
}

void BlockState::allocate(const Buffer& buffer, int t) {
  const BufferNode* b = buffer.get();
  auto& table = is_per_thread(b->scope) ? threads_[t].locals : block_buffers_;
  if (table.count(b)) return;  // an allocation inside a loop keeps its storage
  std::vector<int64_t> shape;
  IntEnv env;  // the variables an extent reads, as thread t sees them
  for (const Expr& e : b->shape) {
    if (!as_const_int(e)) {
      pre_order_visit(e, [&](const Expr& x) {
        const auto* v = x.as<VarNode>();
        if (const Value* value = v ? find_var(v, t) : nullptr) env[v] = value->i;
      });
    }
    int64_t n = eval_int(e, env);
    if (n <= 0) {
      user_error("kernel '" + kernel_->name + "': '" + b->name + "' would have extent " +
                 std::to_string(n) + " (" + to_string(e) + "); extents must be positive");
    }
    shape.push_back(n);
  }
  check_allocation(kernel_, buffer, shape, nullptr);  // before a byte of it is allocated
  table.emplace(b, HostTensor(b->dtype, std::move(shape), 0xFF));
}

}  // namespace tessel
