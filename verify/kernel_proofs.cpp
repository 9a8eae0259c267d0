// prove_kernel: the layout, fragment, loop-partition and bank-conflict proofs of one lowered
// kernel, each turned into a KernelCheck with its time.
#include "verify/kernel_proofs.h"

#include <algorithm>
#include <map>

#include "core/capacity.h"
#include "core/error.h"
#include "core/stmt_functor.h"
#include "verify/alignment_proofs.h"
#include "verify/bank_proofs.h"
#include "verify/barrier_arrivals.h"
#include "verify/barrier_bytes.h"
#include "verify/barrier_parities.h"
#include "verify/completeness.h"
#include "verify/definition_proofs.h"
#include "verify/global_bounds.h"
#include "verify/layout_proofs.h"
#include "verify/proof_parts.h"
#include "verify/shared_accesses.h"
#include "verify/tma_proofs.h"
#include "verify/wgmma_proofs.h"

namespace tessel {

int KernelProofs::count(const std::string& result) const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(),
                                        [&](const KernelCheck& c) { return c.result == result; }));
}

double KernelProofs::total_ms() const {
  double ms = 0;
  for (const KernelCheck& c : checks) ms += c.ms;
  return ms;
}

namespace {

using proof_detail::Stopwatch;

/// Runs one proof; a proof that cannot be posed (an unbounded symbol, an index Z3 cannot
/// translate) is an undecided check saying why.
template <typename Prove>
KernelCheck attempt(const std::string& what, Prove prove) {
  Stopwatch clock;
  try {
    return prove();
  } catch (const UserError& e) {
    return {what, "undecided", std::string(e.what()), clock.ms()};
  }
}

KernelCheck check_of(std::string what, const ProofResult& r, std::string note = "") {
  KernelCheck c{std::move(what),
                r.holds     ? "proved"
                : r.decided ? "failed"
                            : "undecided",
                std::nullopt, r.ms};
  if (!r.holds) c.counterexample = r.message + note;
  return c;
}

std::string origin_text(const std::string& origin) {
  return origin.empty() ? "" : ", from " + origin;
}

/// Elements of each shared buffer as the lowered kernel allocates it, by name.
std::map<std::string, int64_t> allocations(const Kernel& kernel) {
  std::map<std::string, int64_t> sizes;
  for_each_stmt(kernel->body, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocNode>()) {
      if (std::optional<int64_t> n = a->buffer->const_size()) sizes[a->buffer->name] = *n;
    }
  });
  return sizes;
}

/// The layout as a map onto a flat allocation of `size` elements (row-major over its outputs).
IndexMap flat_map(const Layout& layout, int64_t size) {
  IndexMap m;
  m.iter_vars = layout.iter_vars();
  for (int64_t e : layout.input_shape()) m.input_shape.push_back(make_int(e));
  const std::vector<Expr>& out = layout.forward_index();
  Expr linear = out[0];
  for (size_t d = 1; d < out.size(); ++d)
    linear = linear * make_int(layout.output_shape()[d]) + out[d];
  m.forward_index = {linear};
  m.output_shape = {make_int(size)};
  return m;
}

void prove_shared_layouts(const LoweredKernel& lowered, const ProofOptions& base,
                          std::vector<KernelCheck>& out) {
  std::map<std::string, int64_t> sizes = allocations(lowered.kernel);
  std::map<std::string, const Decided<Layout>*> by_name;
  for (const auto& [_, d] : lowered.layouts.shared) by_name[d.buffer->name] = &d;
  for (const auto& [name, d] : by_name) {
    const Layout& layout = d->layout;
    auto it = sizes.find(name);
    int64_t size = it != sizes.end() ? it->second : layout.output_size();
    IndexMap map = flat_map(layout, size);
    ProofOptions options = base;
    options.name = name;
    std::string subject = "shared layout of " + name + origin_text(d->origin);
    if (layout.input_size() == size) {
      std::string what = subject + ": a bijection onto its " + std::to_string(size) +
                         " elements (every element stored once, no slot unused)";
      out.push_back(attempt(what, [&] { return check_of(what, prove_bijective(map, options)); }));
    } else {
      std::string injective = subject + ": injective (no two elements share a slot)";
      out.push_back(
          attempt(injective, [&] { return check_of(injective, prove_injective(map, options)); }));
      std::string in_range =
          subject + ": inside its " + std::to_string(size) + "-element allocation";
      out.push_back(
          attempt(in_range, [&] { return check_of(in_range, prove_in_range(map, options)); }));
    }
  }
}

/// Replication, then the owner threads against the block's: one check.
KernelCheck prove_partition(const std::string& what, const Fragment& f, int threads,
                            const ProofOptions& options) {
  Stopwatch clock;
  ProofResult r = prove_replication(f, options);
  if (r.holds && f.thread_extent() > threads) {
    // The analyzer's bound is loose or the partition needs more threads: ask Z3.
    IndexMap owners;
    owners.iter_vars = f.iter_vars();
    for (int64_t e : f.input_shape()) owners.input_shape.push_back(make_int(e));
    owners.iter_vars.push_back(f.replicate_var());
    owners.input_shape.push_back(make_int(f.replicate()));
    owners.forward_index = {f.forward_thread()};
    owners.output_shape = {make_int(threads)};
    r = prove_in_range(owners, options);
    if (!r.holds && r.decided) {
      r.message += " (the block has " + std::to_string(threads) +
                   " threads; fix: launch more threads or change the partition)";
    }
  }
  r.ms = clock.ms();
  return check_of(what, r);
}

std::string partition_claim(const Fragment& f, int threads) {
  return ": each element held by exactly " + std::to_string(f.replicate()) +
         (f.replicate() == 1 ? " thread" : " threads") +
         ", no register slot shared, owners within the block's " + std::to_string(threads) +
         " threads";
}

void prove_partitions(const LoweredKernel& lowered, const ProofOptions& base,
                      std::vector<KernelCheck>& out) {
  const int threads = lowered.kernel->threads;
  // A loop partition equal to a fragment already proved reuses that proof.
  std::map<std::string, std::pair<std::string, KernelCheck>> proved_maps;
  auto prove_one = [&](const std::string& subject, const std::string& label, const Fragment& f,
                       const std::string& name) {
    std::string what = subject + partition_claim(f, threads);
    auto it = proved_maps.find(f.to_string());
    if (it != proved_maps.end()) {
      KernelCheck c = it->second.second;
      c.what = what + " (the same map as " + it->second.first + ")";
      c.ms = 0;
      out.push_back(std::move(c));
      return;
    }
    ProofOptions options = base;
    options.name = name;
    KernelCheck c = attempt(what, [&] { return prove_partition(what, f, threads, options); });
    proved_maps.emplace(f.to_string(), std::make_pair(label, c));
    out.push_back(std::move(c));
  };
  std::map<std::string, const Decided<Fragment>*> fragments;
  for (const auto& [_, d] : lowered.layouts.fragments) fragments[d.buffer->name] = &d;
  for (const auto& [name, d] : fragments) {
    prove_one("fragment " + name + origin_text(d->origin), "fragment " + name, d->layout, name);
  }
  std::vector<const Decided<Fragment>*> loops;
  for (const auto& [_, d] : lowered.layouts.loops) loops.push_back(&d);
  std::stable_sort(loops.begin(), loops.end(),
                   [](const auto* a, const auto* b) { return a->origin < b->origin; });
  for (const auto* d : loops) {
    std::string name = d->origin.substr(0, d->origin.find(' '));  // "T.copy"
    prove_one("loop partition of " + d->origin, "loop partition of " + d->origin, d->layout, name);
  }
}

/// For a counterexample on a flattened shared buffer: which tile element each offset holds
/// under the buffer's layout (" (offset 128 is A_shared[4, 0] of the 128 x 32 tile, ...)"); ""
/// when the buffer has no layout or its tile is too large to search.
std::string logical_note(const Layout& layout, const std::string& name,
                         const std::vector<std::vector<int64_t>>& offsets) {
  if (layout.input_size() > (int64_t{1} << 16) || offsets.empty()) return "";
  std::map<int64_t, std::vector<int64_t>> at;  // flat offset -> tile index
  const std::vector<int64_t>& in = layout.input_shape();
  const std::vector<int64_t>& out = layout.output_shape();
  std::vector<int64_t> point(in.size(), 0);
  for (int64_t n = 0; n < layout.input_size(); ++n) {
    std::vector<int64_t> o = layout.map(point);
    int64_t flat = o[0];
    for (size_t d = 1; d < o.size(); ++d) flat = flat * out[d] + o[d];
    at.emplace(flat, point);
    for (size_t d = in.size(); d-- > 0;) {  // next point, row-major
      if (++point[d] < in[d]) break;
      point[d] = 0;
    }
  }
  std::string shape;
  for (size_t d = 0; d < in.size(); ++d) shape += (d ? " x " : "") + std::to_string(in[d]);
  std::string note;
  for (size_t k = 0; k < offsets.size() && k < 4; ++k) {
    if (offsets[k].size() != 1) return "";
    auto it = at.find(offsets[k][0]);
    if (it == at.end()) return "";
    note += (k ? ", " : "") + std::string("offset ") + std::to_string(offsets[k][0]) + " is " +
            format_index(name, it->second);
  }
  return " (in the " + shape + " tile: " + note + (offsets.size() > 4 ? ", ..." : "") + ")";
}

std::string access_claim(const SharedAccess& a) {
  std::string s = a.kind + " " + a.index_text;
  if (!a.site.empty()) s += " at " + a.site;
  s += ", " + std::to_string(a.access.access_bytes()) + " B per lane";
  if (a.vector > 0)
    s += " (T.vectorized(" + std::to_string(a.vector) + "), taken at its first element)";
  if (!a.symbols.empty()) s += ", for every " + a.symbols;
  if (!a.guard.empty()) s += ", under `if " + a.guard + "`";
  if (a.guard_dropped) s += ", over all lanes (a condition on loaded data is not modelled)";
  return s + ": no bank conflicts";
}

void prove_accesses(const LoweredKernel& lowered, const Target& target, const ProofOptions& base,
                    std::vector<KernelCheck>& out) {
  std::map<std::string, const Layout*> layouts;
  for (const auto& [_, d] : lowered.layouts.shared) layouts[d.buffer->name] = &d.layout;
  for (const SharedAccess& a : collect_shared_accesses(lowered.kernel, target, base.timeout_ms)) {
    std::string what = access_claim(a);
    if (a.access.ldmatrix && target.banks.vendor != BankVendor::kNvidia) {
      out.push_back({what, "undecided",
                     "ldmatrix is an NVIDIA instruction: this kernel cannot run on " + target.name +
                         "; verify it for sm80 or sm90",
                     0});
      continue;
    }
    if (!a.not_provable.empty()) {
      out.push_back({what, "undecided", a.not_provable + "; Z3 cannot bound it", 0});
      continue;
    }
    ProofOptions options = base;
    options.name = a.access.buffer;
    options.domain = a.domain;
    out.push_back(attempt(what, [&] {
      BankProofResult r = prove_conflict_free(a.access, target.banks, options);
      std::string note;
      auto layout = layouts.find(a.access.buffer);
      if (r.cex && layout != layouts.end()) {
        note = logical_note(*layout->second, a.access.buffer, r.cex->indices);
      }
      if (a.guard_dropped && !r.holds) {
        note +=
            " (the access is under a condition on loaded data that the proof ignores: check "
            "that these lanes can take part together)";
      }
      return check_of(what, r, note);
    }));
  }
}

/// The capacity limits as checks (`when`: "" or " before lowering").
void check_limits(const Kernel& kernel, const Target& target, const std::string& when,
                  std::vector<KernelCheck>& out) {
  for (CapacityCheck& c : capacity_checks(kernel, target)) {
    out.push_back({"capacity" + when + ", " + c.claim, c.problem ? "failed" : "proved",
                   std::move(c.problem), 0});
  }
}

}  // namespace

KernelProofs prove_kernel(const LoweredKernel& lowered, const Target& target,
                          const KernelProofOptions& options, const std::vector<Buffer>& scratch) {
  if (is_multi_launch(lowered.kernel)) {
    user_error("kernel '" + lowered.kernel->name +
               "' has several launches: prove each with verify_kernel, which lowers and proves "
               "them one by one");
  }
  ProofOptions base;
  base.timeout_ms = options.timeout_ms;
  KernelProofs proofs;
  proofs.checks.push_back(check_complete(lowered.kernel));
  check_limits(lowered.kernel, target, "", proofs.checks);
  prove_shared_layouts(lowered, base, proofs.checks);
  prove_partitions(lowered, base, proofs.checks);
  for (KernelCheck& c : prove_register_definitions(lowered.kernel, lowered.layouts,
                                                   target.warp_size, options.timeout_ms)) {
    proofs.checks.push_back(std::move(c));
  }
  for (KernelCheck& c : prove_alignment(lowered.kernel, target.warp_size, options.timeout_ms)) {
    proofs.checks.push_back(std::move(c));
  }
  prove_accesses(lowered, target, base, proofs.checks);
  for (KernelCheck& c : prove_wgmma_descriptors(lowered, options.timeout_ms)) {
    proofs.checks.push_back(std::move(c));
  }
  for (KernelCheck& c :
       prove_global_bounds(lowered.kernel, scratch, target.warp_size, options.timeout_ms)) {
    proofs.checks.push_back(std::move(c));
  }
  for (KernelCheck& c : prove_barrier_arrivals(lowered.kernel)) {
    proofs.checks.push_back(std::move(c));
  }
  for (KernelCheck& c : prove_barrier_bytes(lowered.kernel)) {
    proofs.checks.push_back(std::move(c));
  }
  for (KernelCheck& c : prove_barrier_parities(lowered.kernel, options.timeout_ms)) {
    proofs.checks.push_back(std::move(c));
  }
  return proofs;
}

KernelProofs verify_kernel(const Kernel& kernel, const Target& target,
                           const KernelProofOptions& options) {
  if (is_multi_launch(kernel)) {
    // Every launch is proved on its own, with the bounds of its scratch accesses; each check
    // names its launch.
    KernelProofs all;
    for (size_t i = 0; i < kernel->launches.size(); ++i) {
      const Kernel& launch = kernel->launches[i];
      KernelProofs one;
      check_limits(launch, target, " before lowering", one.checks);
      if (one.all_proved()) {
        LowerOptions lower;
        lower.check_capacity = false;
        lower.warp_specialize = options.warp_specialize;
        LoweredKernel lowered = lower_kernel(launch, target, lower);
        one = prove_kernel(lowered, target, options, kernel->scratch);
        for (KernelCheck& c : prove_tma_boxes(launch, lowered, options.timeout_ms)) {
          one.checks.push_back(std::move(c));
        }
      }
      for (KernelCheck& c : one.checks) {
        c.what = launch_label(kernel, i) + ": " + c.what;
        all.checks.push_back(std::move(c));
      }
    }
    return all;
  }
  KernelProofs before;
  check_limits(kernel, target, " before lowering", before.checks);
  if (!before.all_proved()) return before;  // too large to lay out: nothing else is proved
  LowerOptions lower;
  lower.check_capacity = false;
  lower.warp_specialize = options.warp_specialize;
  LoweredKernel lowered = lower_kernel(kernel, target, lower);
  KernelProofs proofs = prove_kernel(lowered, target, options);
  for (KernelCheck& c : prove_tma_boxes(kernel, lowered, options.timeout_ms)) {
    proofs.checks.push_back(std::move(c));
  }
  return proofs;
}

}  // namespace tessel
