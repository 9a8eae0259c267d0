// The state of one block under the tile-level interpreter: its threads' variables and local
// storage, its shared and fragment storage, and the kernel's global tensors.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/kernel.h"
#include "interp/host_tensor.h"

namespace tessel {

/// A scalar value: integers exactly as int64, floats as double (already rounded to their dtype).
struct Value {
  int64_t i = 0;
  double f = 0;
  static Value of_int(int64_t v) { return {v, static_cast<double>(v)}; }
  static Value of_float(double v) { return {0, v}; }
  double as_double(DataType t) const { return t.is_float() ? f : static_cast<double>(i); }
};

/// One thread's private state: the variables it binds itself (the thread index, the block
/// indices and the dynamic dimensions are the block's, BlockState::find_var).
struct ThreadState {
  std::unordered_map<const VarNode*, Value> vars;
  std::unordered_map<const BufferNode*, HostTensor> locals;
};

/// Global tensors shared by every block, and the lock for atomics.
struct GlobalMemory {
  std::unordered_map<const BufferNode*, HostTensor*> tensors;
  std::mutex atomics;
};

class BlockState {
 public:
  BlockState(const Kernel& kernel, GlobalMemory& global, std::vector<int64_t> block_index,
             const std::unordered_map<const VarNode*, int64_t>& dynamic_values);

  const Kernel& kernel() const { return kernel_; }
  int num_threads() const { return static_cast<int>(threads_.size()); }
  ThreadState& thread(int t) { return threads_[t]; }
  GlobalMemory& global() { return global_; }
  const std::vector<int64_t>& block_index() const { return block_index_; }

  /// The value of `var` in thread t: its own binding, else the thread index or a value of the
  /// whole block (block indices, dynamic dimensions); null when none binds it.
  const Value* find_var(const VarNode* var, int t) {
    const auto& own = threads_[t].vars;
    if (!own.empty()) {
      auto it = own.find(var);
      if (it != own.end()) return &it->second;
    }
    if (var == thread_var_) {
      thread_value_ = Value::of_int(t);
      return &thread_value_;
    }
    auto it = block_vars_.find(var);
    return it == block_vars_.end() ? nullptr : &it->second;
  }

  /// Binds `var` to `v` in every thread at once (a value that is the same in all of them).
  void bind_uniform(const VarNode* var, Value v) {
    block_vars_[var] = v;
    for (ThreadState& t : threads_) {
      if (!t.vars.empty()) t.vars.erase(var);  // an older binding of one thread's own
    }
  }

  /// Storage of `buffer` as thread `t` sees it (its own copy of a local buffer).
  HostTensor& storage(const Buffer& buffer, int t);
  /// As storage(), or null where storage() reports an error (not allocated, not a parameter).
  HostTensor* find_storage(const Buffer& buffer, int t);
  /// Creates storage for an allocation (once per block, or per thread for locals), filled with
  /// 0xFF bytes so that reading it before writing shows up as NaN / -1 in results.
  void allocate(const Buffer& buffer, int t);
  /// "block (1, 0)" for messages.
  std::string block_name() const;
  /// The source location of the statement being executed (for runtime errors).
  const SourceLoc& current_loc() const { return *current_loc_; }
  /// Requires: `loc` outlives its use (statement locations live as long as the kernel).
  void set_current_loc(const SourceLoc& loc) { current_loc_ = &loc; }

 private:
  const Kernel& kernel_;
  GlobalMemory& global_;
  std::vector<int64_t> block_index_;
  std::vector<ThreadState> threads_;
  const VarNode* thread_var_;
  Value thread_value_;  ///< find_var's answer for the thread index
  std::unordered_map<const VarNode*, Value> block_vars_;  ///< the same in every thread
  std::unordered_map<const BufferNode*, HostTensor> block_buffers_;
  static inline const SourceLoc kNoLoc{};
  const SourceLoc* current_loc_ = &kNoLoc;
};

}  // namespace tessel
