// A block's shared memory, registers and threads against a target's limits (see capacity.h).
#include "core/capacity.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/expr_functor.h"
#include "core/stmt_functor.h"

namespace tessel {

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t saturate(__int128 v) { return v > kMax ? kMax : static_cast<int64_t>(v); }

/// The number of elements of `b`, or nullopt when a size has no value in `env`.
std::optional<int64_t> elements(const Buffer& b, const IntEnv& env) {
  __int128 n = 1;
  for (const Expr& e : b->shape) {
    std::optional<int64_t> c = as_const_int(e);
    if (!c) {
      bool known = true;
      pre_order_visit(e, [&](const Expr& x) {
        if (const auto* v = x.as<VarNode>()) known = known && env.count(v) > 0;
        known = known && x.as<BufferLoadNode>() == nullptr;
      });
      if (!known) return std::nullopt;
      c = eval_int(e, env);
    }
    if (*c <= 0) return int64_t{0};  // the allocation itself reports it
    n = std::min<__int128>(n * *c, kMax);
  }
  return saturate(n);
}

/// Bits of `count` elements of `b`.
__int128 bits_of(const Buffer& b, int64_t count) {
  return __int128{count} * b->dtype.storage_bits() * b->dtype.lanes;
}

std::string kib(int64_t bytes) {
  if (bytes % 1024 != 0) return std::to_string(bytes) + " bytes";
  return std::to_string(bytes) + " bytes (" + std::to_string(bytes / 1024) + " KiB)";
}

/// "KV_shared 131072 B (at mla.py:30:9), Q_shared 65536 B, ..." — the largest first.
std::string listing(std::vector<BufferNeed> needs, bool registers) {
  std::stable_sort(needs.begin(), needs.end(), [&](const BufferNeed& a, const BufferNeed& b) {
    return registers ? a.registers > b.registers : a.bytes > b.bytes;
  });
  std::string s;
  for (size_t k = 0; k < needs.size() && k < 6; ++k) {
    const BufferNeed& n = needs[k];
    s += (k ? ", " : "") + n.name + " " +
         (registers ? std::to_string(n.registers) + " registers" : std::to_string(n.bytes) + " B");
    if (n.loc.known()) s += " at " + n.loc.str();
  }
  if (needs.size() > 6) s += ", and " + std::to_string(needs.size() - 6) + " more";
  return s;
}

}  // namespace

BlockNeeds block_needs(const Kernel& kernel, const IntEnv& env) {
  BlockNeeds needs;
  needs.threads = kernel->threads;
  __int128 shared = 0, registers = 0;
  for_each_stmt(kernel->body, [&](const Stmt& s) {
    const auto* a = s.as<AllocNode>();
    if (!a) return;
    const Buffer& b = a->buffer;
    if (b->scope == Scope::kGlobal) return;
    std::optional<int64_t> n = elements(b, env);
    if (!n) {
      needs.unknown.push_back(b->name);
      return;
    }
    BufferNeed need{b->name, 0, 0, a->loc.known() ? a->loc : b->loc};
    if (b->scope == Scope::kShared || b->scope == Scope::kSharedDyn) {
      __int128 bytes = (bits_of(b, *n) + 7) / 8;
      need.bytes = saturate(bytes);
      shared += (bytes + 15) / 16 * 16;
      needs.shared.push_back(need);
      return;
    }
    int64_t per_thread = *n;
    if (b->scope == Scope::kFragment) {  // spread over the block (tile level)
      per_thread = (*n + kernel->threads - 1) / std::max(1, kernel->threads);
    }
    __int128 bits = bits_of(b, per_thread);
    need.bytes = saturate((bits + 7) / 8);
    need.registers = saturate((bits + 31) / 32);
    registers += (bits + 31) / 32;
    needs.local.push_back(need);
  });
  needs.shared_bytes = saturate(shared);
  needs.registers = saturate(registers);
  return needs;
}

const Target& loosest_target() {
  static const Target loosest = [] {
    Target t = all_targets().front();
    t.name = "any supported GPU";
    for (const Target& x : all_targets()) {
      t.shared_bytes = std::max(t.shared_bytes, x.shared_bytes);
      t.max_threads = std::max(t.max_threads, x.max_threads);
      t.max_registers = std::max(t.max_registers, x.max_registers);
      t.block_registers = std::max(t.block_registers, x.block_registers);
    }
    t.warp_size = 32;
    return t;
  }();
  return loosest;
}

std::vector<CapacityCheck> capacity_checks(const Kernel& kernel, const Target& target,
                                           const IntEnv& env) {
  const std::string k = "kernel '" + kernel->name + "'";
  const std::string on = target.name == loosest_target().name ? "" : " on " + target.name;
  std::vector<CapacityCheck> out;

  CapacityCheck threads{"threads per block: " + std::to_string(kernel->threads) + " within the " +
                            std::to_string(target.max_threads) + " a block can have" + on,
                        std::nullopt};
  if (kernel->threads > target.max_threads) {
    threads.problem = k + " has " + std::to_string(kernel->threads) +
                      " threads per block, over the " + std::to_string(target.max_threads) +
                      " a block can have" + on + "; fix: launch fewer threads (threads=...)";
  }
  out.push_back(threads);

  BlockNeeds needs = block_needs(kernel, env);
  std::string shared_list = needs.shared.empty() ? "none" : listing(needs.shared, false);
  CapacityCheck shared{"shared memory per block: " + std::to_string(needs.shared_bytes) +
                           " bytes (" + shared_list + ") within the " + kib(target.shared_bytes) +
                           " a block can use" + on,
                       std::nullopt};
  if (needs.shared_bytes > target.shared_bytes) {
    shared.problem = k + ": shared memory per block is " + std::to_string(needs.shared_bytes) +
                     " bytes, over the " + kib(target.shared_bytes) + " a block can use" + on +
                     ": " + shared_list +
                     "; fix: smaller tiles, fewer pipeline stages (num_stages), or one shared "
                     "buffer reused for two tiles";
  }
  out.push_back(shared);

  const int warp = std::max(1, target.warp_size);
  const int64_t lanes = (int64_t{kernel->threads} + warp - 1) / warp * warp;
  const int64_t block = saturate(__int128{lanes} * needs.registers);
  std::string local_list = needs.local.empty() ? "none" : listing(needs.local, true);
  CapacityCheck registers{"registers: at least " + std::to_string(needs.registers) +
                              " 32-bit registers per thread for its register buffers (" +
                              local_list + ") within the " + std::to_string(target.max_registers) +
                              " a thread can have, and " + std::to_string(lanes) + " threads x " +
                              std::to_string(needs.registers) + " = " + std::to_string(block) +
                              " within the " + std::to_string(target.block_registers) +
                              " of a block" + on,
                          std::nullopt};
  if (needs.registers > target.max_registers) {
    registers.problem =
        k + ": each thread needs at least " + std::to_string(needs.registers) +
        " 32-bit registers for its register buffers, over the " +
        std::to_string(target.max_registers) + " a thread can have" + on + ": " + local_list +
        " (the estimate counts these buffers only: addresses and loop counters come on top); "
        "fix: fewer elements per thread — smaller fragments, or more threads";
  } else if (block > target.block_registers) {
    registers.problem = k + ": " + std::to_string(lanes) + " threads x at least " +
                        std::to_string(needs.registers) + " registers = " + std::to_string(block) +
                        " 32-bit registers per block, over the " +
                        std::to_string(target.block_registers) + " the threads of a block share" +
                        on + ": " + local_list +
                        "; fix: fewer threads per block or smaller register buffers";
  }
  out.push_back(registers);
  return out;
}

std::optional<std::string> capacity_problem(const Kernel& kernel, const Target& target,
                                            const IntEnv& env) {
  for (const CapacityCheck& c : capacity_checks(kernel, target, env)) {
    if (c.problem) return c.problem;
  }
  return std::nullopt;
}

void check_capacity(const Kernel& kernel, const Target* target, const IntEnv& env) {
  std::optional<std::string> problem =
      capacity_problem(kernel, target ? *target : loosest_target(), env);
  if (problem) user_error(*problem);
}

void check_allocation(const Kernel& kernel, const Buffer& buffer, const std::vector<int64_t>& shape,
                      const Target* target) {
  const Target& t = target ? *target : loosest_target();
  __int128 n = 1;
  for (int64_t e : shape) n = std::min<__int128>(n * std::max<int64_t>(e, 0), kMax);
  const Buffer& b = buffer;
  auto refuse = [&](const std::string& use, const std::string& fix) {  // built only to refuse
    std::string dims;
    for (int64_t e : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(e);
    user_error("kernel '" + kernel->name + "': '" + b->name + "'" +
               (b->loc.known() ? " (at " + b->loc.str() + ")" : "") + " of shape [" + dims + "], " +
               b->dtype.name() + ", would take " + use + (target ? " on " + t.name : "") +
               "; nothing was allocated. Fix: " + fix +
               " (check the -D values its shape depends on)");
  };
  if (b->scope == Scope::kShared || b->scope == Scope::kSharedDyn) {
    const int64_t bytes = saturate((bits_of(b, saturate(n)) + 7) / 8);
    if (bytes > t.shared_bytes) {
      refuse(std::to_string(bytes) + " bytes of shared memory, over the " + kib(t.shared_bytes) +
                 " a block can use",
             "smaller extents for it");
    }
    return;
  }
  if (b->scope != Scope::kLocal && b->scope != Scope::kFragment) return;
  __int128 per_thread = n;
  if (b->scope == Scope::kFragment) {  // spread over the block (tile level)
    per_thread = (n + kernel->threads - 1) / std::max(1, kernel->threads);
  }
  const int64_t registers = saturate((bits_of(b, saturate(per_thread)) + 31) / 32);
  if (registers > t.max_registers) {
    refuse(std::to_string(registers) + " 32-bit registers per thread, over the " +
               std::to_string(t.max_registers) + " registers a thread can have",
           "fewer elements per thread");
  }
}

}  // namespace tessel
