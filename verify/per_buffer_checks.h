// One KernelCheck per buffer over that buffer's accesses: the grouping in first-access order and
// the folding of each access's proof into the check, shared by the alignment and bounds proofs.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/kernel.h"
#include "verify/kernel_proofs.h"
#include "verify/proof_parts.h"

namespace tessel::proof_detail {

/// What became of one access's proof: "proved", else "failed" or "undecided" with the message.
struct AccessOutcome {
  std::string result = "proved";
  std::string message;
};

/// `accesses` grouped by their `buffer`, the buffers in the order of their first access (the
/// report follows the kernel).
template <class Access>
std::vector<std::pair<Buffer, std::vector<const Access*>>> group_by_buffer(
    const std::vector<Access>& accesses) {
  std::vector<std::pair<Buffer, std::vector<const Access*>>> groups;
  std::map<const BufferNode*, size_t> index;
  for (const Access& a : accesses) {
    auto [it, fresh] = index.try_emplace(a.buffer.get(), groups.size());
    if (fresh) groups.push_back({a.buffer, {}});
    groups[it->second].second.push_back(&a);
  }
  return groups;
}

/// The check `what`, proved when `prove` proves every access of `list`; else the first failure's
/// message, or the last undecided access's, with the wall time of all the proofs.
template <class Access, class Prove>
KernelCheck check_each(std::string what, const std::vector<const Access*>& list, Prove&& prove) {
  Stopwatch clock;
  KernelCheck check{std::move(what), "proved", std::nullopt, 0};
  for (const Access* a : list) {
    AccessOutcome o = prove(*a);
    if (o.result == "proved") continue;
    check.result = o.result;
    check.counterexample = o.message;
    if (o.result == "failed") break;
  }
  check.ms = clock.ms();
  return check;
}

}  // namespace tessel::proof_detail
