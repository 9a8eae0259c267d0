// One run of a kernel with its checks, at either level.
#include "tools/kernel_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <set>

#include "core/buffer_accesses.h"
#include "core/error.h"
#include "core/int_eval.h"
#include "core/intrinsics.h"
#include "core/passes.h"
#include "core/stmt_functor.h"
#include "core/target.h"
#include "interp/block_selection.h"
#include "tools/cli.h"
#include "tools/tensor_fingerprint.h"

namespace tessel::cli {

namespace {

/// A point in wall time and in the process's CPU time (every thread's).
struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
};

/// The wall and CPU seconds since `start`; `start` moves to now.
PhaseTime lap(Clock& start) {
  Clock now;
  PhaseTime t{std::chrono::duration<double>(now.wall - start.wall).count(),
              static_cast<double>(now.cpu - start.cpu) / CLOCKS_PER_SEC};
  start = now;
  return t;
}

/// True when the kernel calls an instruction with a data effect (mbarriers and fences order
/// threads only, which the tile level's program order already does).
bool uses_intrinsics(const Kernel& kernel) {
  bool found = false;
  for (const Kernel& launch : launches_of(kernel)) {
    for_each_stmt(launch->body, [&](const Stmt& s) {
      if (const auto* call = s.as<IntrinsicCallNode>())
        found = found || !intrinsic_info(call->intrinsic).sync;
    });
  }
  return found;
}

const ParamInfo& find_param(const Kernel& kernel, const std::vector<ParamInfo>& signature,
                            const NamedArray& a) {
  for (const ParamInfo& p : signature) {
    if (p.name == a.name) return p;
  }
  std::string known;
  for (const ParamInfo& p : signature) known += (known.empty() ? "" : ", ") + p.name;
  throw UsageError(a.origin + ": kernel '" + kernel->name + "' has no tensor parameter '" + a.name +
                   "'; " + (known.empty() ? "it has none" : "its tensors are " + known));
}

std::vector<OutputCheck> compare_tensors(const TensorMap& actual, const TensorMap& expected,
                                         const std::vector<std::string>& names,
                                         std::optional<double> atol = {},
                                         std::optional<double> rtol = {}) {
  std::vector<OutputCheck> checks;
  for (const std::string& name : names) {
    const HostTensor& a = actual.at(name);
    Tolerance tol = Tolerance::for_dtype(a.dtype());
    tol.atol = atol.value_or(tol.atol);
    tol.rtol = rtol.value_or(tol.rtol);
    auto bound = expected.find(error_bound_name(name));  // Example::bounded_outputs
    OutputCheck check{
        name,
        compare(a, expected.at(name), tol, bound == expected.end() ? nullptr : &bound->second),
        tol,
        a.shape(),
        std::nullopt,
        ""};
    checks.push_back(std::move(check));
  }
  return checks;
}

/// The outputs against a sampled reference: each output's sampled elements only (gathered into
/// a 1-d tensor of its dtype, so that the expected values round as a full reference's would).
std::vector<OutputCheck> compare_sampled(const TensorMap& actual,
                                         const std::vector<SampledOutput>& sampled,
                                         const std::vector<std::string>& names,
                                         std::optional<double> atol, std::optional<double> rtol) {
  std::vector<OutputCheck> checks;
  for (const std::string& name : names) {
    auto s = std::find_if(sampled.begin(), sampled.end(),
                          [&](const SampledOutput& o) { return o.name == name; });
    internal_check(s != sampled.end(), "the sampled reference misses an output");
    const HostTensor& a = actual.at(name);
    const int64_t n = static_cast<int64_t>(s->indices.size());
    const bool bounded = !s->bound.empty();
    HostTensor got(a.dtype(), {n}), want(a.dtype(), {n}), bound(a.dtype(), {bounded ? n : 0});
    for (int64_t i = 0; i < n; ++i) {
      got.set(i, a.at(s->indices[i]));
      want.set(i, s->expected[i]);
      if (bounded) bound.set(i, s->bound[i]);  // rounded as a full reference's bound tensor
    }
    Tolerance tol = Tolerance::for_dtype(a.dtype());
    tol.atol = atol.value_or(tol.atol);
    tol.rtol = rtol.value_or(tol.rtol);
    OutputCheck check{name, compare(got, want, tol, bounded ? &bound : nullptr),
                      tol,  a.shape(),
                      n,    s->description};
    if (check.comparison.first_mismatch >= 0)
      check.comparison.first_mismatch = s->indices[check.comparison.first_mismatch];
    checks.push_back(std::move(check));
  }
  return checks;
}

/// True when a run that samples blocks would run the reference on a sample of the outputs
/// (RunRequest::reference): asked to, or the full reference's outputs would not fit in memory
/// (`full_fits` false), or it would cost more than sample_above_macs.
bool wants_sampled_reference(const Example& example, const Params& params, const RunRequest& req,
                             bool full_fits) {
  if (req.reference == "full" || !example.sampled_reference) return false;
  return req.reference == "sampled" || !full_fits ||
         (example.reference_macs && example.reference_macs(params) > req.sample_above_macs);
}

/// True when the reference runs on a sample of the outputs: `wanted` (wants_sampled_reference)
/// and the run samples blocks. UsageError for --reference sampled where there is no block
/// sample or no sampled reference.
bool use_sampled_reference(const Example& example, const RunRequest& req,
                           const std::optional<BlockSample>& sample, bool wanted) {
  if (req.reference == "full") return false;
  if (req.reference == "sampled") {
    if (!sample) {
      throw UsageError(
          "--reference sampled checks the outputs of the blocks left out of a "
          "sampled run on a sample; it needs --level thread and --blocks naming "
          "fewer than all blocks");
    }
    if (!example.sampled_reference) {
      throw UsageError(
          "--reference sampled: kernel '" + example.name +
          "' has no sampled reference (the GEMM and dequantised GEMM examples have one); use "
          "--reference full");
    }
    return true;
  }
  return sample && wanted;
}

/// UsageError: a kernel that calls intrinsics cannot run its left-out blocks at tile level.
void refuse_sample_of_intrinsics(const std::string& spec, const Kernel& kernel) {
  if (!uses_intrinsics(kernel)) return;
  throw UsageError("--blocks " + spec + ": kernel '" + kernel->name +
                   "' calls instructions of the intrinsic table, which only the thread level "
                   "executes, so the blocks left out cannot run at tile level; use --blocks all");
}

/// The blocks `spec` selects of `launch`'s grid for these tensors (every parameter of the
/// launch among them); total <= 0 when an extent is not positive (the interpreter names it).
BlockSample sample_of_grid(const std::string& spec, uint64_t seed, const Kernel& launch,
                           const TensorMap& tensors) {
  BlockSample sample;
  sample.spec = spec;
  IntEnv env = bind_tensors(launch, tensors);
  sample.total = 1;
  for (const Expr& g : launch->grid) {
    sample.grid.push_back(eval_int(g, env));
    sample.total *= sample.grid.back();
  }
  if (sample.total <= 0) return sample;
  try {
    sample.simulated = BlockSelection::parse(spec).resolve(sample.grid, seed);
  } catch (const BlockSpecError& e) {
    throw UsageError(e.what());
  }
  return sample;
}

/// True when a thread-level run samples the blocks of a kernel of several launches: each
/// launch's sample is drawn from its own grid once its scratch tensors exist
/// (run_sampled_launches).
bool samples_launches(const RunRequest& req, const Kernel& kernel) {
  return req.level == "thread" && !req.blocks.empty() && is_multi_launch(kernel) &&
         !BlockSelection::parse(req.blocks).is_all();
}

/// The blocks `req.blocks` selects of a one-launch `kernel`'s grid for these tensors; nullopt
/// when that is every block (or the kernel has several launches: samples_launches).
std::optional<BlockSample> select_blocks(const RunRequest& req, const Kernel& kernel,
                                         const TensorMap& tensors) {
  if (req.blocks.empty() || is_multi_launch(kernel)) return std::nullopt;
  BlockSample sample = sample_of_grid(req.blocks, req.seed, kernel, tensors);
  if (sample.total <= 0 || static_cast<int64_t>(sample.simulated.size()) == sample.total)
    return std::nullopt;
  refuse_sample_of_intrinsics(req.blocks, kernel);
  return sample;
}

/// The linear ids of `sample`'s grid it does not simulate, ascending.
std::vector<int64_t> left_out(const BlockSample& sample) {
  std::vector<int64_t> rest;
  if (sample.total <= 0) return rest;  // the tile level names the extent
  rest.reserve(static_cast<size_t>(sample.total) - sample.simulated.size());
  for (int64_t b = 0, i = 0; b < sample.total; ++b) {
    if (i < static_cast<int64_t>(sample.simulated.size()) && sample.simulated[i] == b)
      ++i;
    else
      rest.push_back(b);
  }
  return rest;
}

/// Moves `names` from one map into another for a scope and back at its end (also when the
/// scope throws): a run lends the tensors nobody writes instead of copying them.
class Lend {
 public:
  Lend(TensorMap& owner, TensorMap& borrower, std::vector<std::string> names)
      : owner_(owner), borrower_(borrower), names_(std::move(names)) {
    for (const std::string& n : names_) borrower_[n] = std::move(owner_.at(n));
  }
  ~Lend() {
    for (const std::string& n : names_) {
      owner_[n] = std::move(borrower_.at(n));
      borrower_.erase(n);
    }
  }
  Lend(const Lend&) = delete;
  Lend& operator=(const Lend&) = delete;

 private:
  TensorMap& owner_;
  TensorMap& borrower_;
  std::vector<std::string> names_;
};

/// The tensors of a thread-level run before its simulated blocks ran: a copy of those the
/// kernel writes (the tile level runs on it afterwards, to compare with, and a launch that runs
/// again in block order restores from it; a large one shares its pages until one side writes
/// them, HostTensor::snapshot) and the fingerprints of those it only reads, which are lent to
/// the tile level and must come out of the thread level unchanged.
struct BeforeThreadRun {
  TensorMap written;
  std::vector<std::string> read_only;
  std::vector<TensorFingerprint> fingerprints;

  BeforeThreadRun(const std::vector<ParamInfo>& signature, TensorMap& tensors) {
    for (const ParamInfo& p : signature) {
      if (p.written) {
        written.emplace(p.name, tensors.at(p.name).snapshot());
      } else {
        read_only.push_back(p.name);
        fingerprints.push_back(TensorFingerprint::of(tensors.at(p.name)));
      }
    }
  }
};

/// The tensors the kernel only reads against their fingerprints before the thread level ran:
/// one failed check for each the lowered kernel changed.
std::vector<OutputCheck> check_unchanged(const BeforeThreadRun& before, const TensorMap& tensors) {
  std::vector<OutputCheck> checks;
  for (size_t i = 0; i < before.read_only.size(); ++i) {
    const HostTensor& t = tensors.at(before.read_only[i]);
    OutputCheck c{before.read_only[i], {}, Tolerance::for_dtype(t.dtype()), t.shape(), {}, ""};
    if (auto at = TensorFingerprint::of(t).first_change(before.fingerprints[i])) {
      const int64_t end = std::min(t.size(), *at + TensorFingerprint::kChunkElements);
      c.comparison.passed = false;
      c.comparison.first_mismatch = *at;
      c.note = "the thread level changed it (somewhere in its elements " + std::to_string(*at) +
               " to " + std::to_string(end - 1) +
               ", flat), though no tile operator of the kernel writes it";
    }
    checks.push_back(std::move(c));
  }
  return checks;
}

/// Adds `t` to `sum`.
void add_time(PhaseTime& sum, PhaseTime t) {
  sum.wall += t.wall;
  sum.cpu += t.cpu;
}

/// The names of the parameters `launch` writes (the kernel's and the scratch).
std::set<std::string> written_by(const Kernel& launch) {
  const std::set<const BufferNode*> writes = reads_writes(launch->body).writes;
  std::set<std::string> names;
  for (const Buffer& b : launch->params) {
    if (writes.count(b.get())) names.insert(b->name);
  }
  return names;
}

/// run_thread for a kernel of several launches with a block sample. A launch reads what the
/// one before it wrote, so the levels take turns launch by launch: the blocks the spec leaves
/// out of the launch's grid at tile level, its sampled blocks at thread level, then the tile
/// level of the sampled blocks again on a copy of what the launch writes (from before its
/// thread level), which the thread level's results must equal. A tensor's check is that of the
/// first launch it differs after, else of the last launch that writes it; the tile level's
/// tensors are each one's copy after the last launch that writes it.
void run_sampled_launches(KernelRun& run, const Kernel& kernel, const Kernel& thread_kernel,
                          ThreadRunOptions options, Clock& clock) {
  const RunRequest& req = run.request;
  std::vector<ParamInfo> read_only;  // fingerprinted, to check the thread level left them
  for (const ParamInfo& p : run.signature) {
    if (!p.written) read_only.push_back(p);
  }
  const BeforeThreadRun unchanged(read_only, run.tensors);
  const std::vector<std::string> scratch = add_scratch_tensors(kernel, run.tensors);
  ThreadRunResult total;
  total.threads = 0;
  total.workers = 0;
  std::map<std::string, OutputCheck> checks;
  std::vector<std::string> checked;  // in the order first written
  try {
    // Every launch's sample before any runs: a block outside a later launch's grid is refused
    // at once, naming that launch.
    std::vector<LaunchSample> samples;
    for (size_t i = 0; i < kernel->launches.size(); ++i) {
      const std::string label = launch_label(kernel, i);
      try {
        samples.push_back(
            {label, sample_of_grid(req.blocks, req.seed, kernel->launches[i], run.tensors), {}});
      } catch (const UsageError& e) {
        throw UsageError("kernel '" + kernel->name + "', " + label + ": " + e.what() +
                         "; a --blocks spec selects blocks of every launch");
      }
    }
    for (size_t i = 0; i < kernel->launches.size(); ++i) {
      const Kernel& launch = kernel->launches[i];
      LaunchSample& ls = samples[i];
      const BlockSample& sample = ls.sample;
      std::vector<int64_t> rest = left_out(sample);
      run_tile_level(launch, run.tensors, TileRunOptions{req.workers, req.control, &rest});
      add_time(run.phases.tile_rest, lap(clock));

      const std::set<std::string> writes = written_by(launch);
      TensorMap copy;
      for (const std::string& n : writes) copy.emplace(n, run.tensors.at(n).snapshot());
      options.only_blocks = sample.simulated;
      options.before = &copy;
      ThreadRunResult one = run_thread_level(thread_kernel->launches[i], run.tensors, options);
      const int tile_workers = one.in_block_order ? 1 : req.workers;
      ls.measured = one.report.total;
      append_launch(total, std::move(one), ls.launch);
      add_time(run.phases.run, lap(clock));

      if (!run.tile_note.empty()) continue;  // the tile level failed on an earlier launch
      try {
        std::vector<std::string> lent;
        for (const Buffer& b : launch->params) {
          if (!writes.count(b->name)) lent.push_back(b->name);
        }
        Lend lend(run.tensors, copy, lent);
        run_tile_level(launch, copy, TileRunOptions{tile_workers, req.control, &sample.simulated});
      } catch (const RunStopped&) {
        throw;  // the limits hold for both levels
      } catch (const UserError& e) {
        run.tile_note = "failed on " + ls.launch + ": " + e.what();
        continue;
      }
      std::vector<std::string> names(writes.begin(), writes.end());
      for (OutputCheck& c : compare_tensors(run.tensors, copy, names)) {
        auto [it, first] = checks.emplace(c.name, c);
        if (first) checked.push_back(c.name);
        if (!first && it->second.comparison.passed) it->second = std::move(c);
      }
      for (const std::string& n : names) {
        if (std::find(scratch.begin(), scratch.end(), n) == scratch.end())
          run.tile_tensors[n] = std::move(copy.at(n));
      }
      add_time(run.phases.tile_check, lap(clock));
    }
    run.launch_samples = std::move(samples);
  } catch (...) {
    remove_scratch_tensors(scratch, run.tensors);
    throw;
  }
  remove_scratch_tensors(scratch, run.tensors);
  run.blocks = total.blocks;
  run.threads = total.threads;
  run.seconds = total.seconds;
  run.thread = std::move(total);
  run.tile_ran = run.tile_note.empty();
  run.vs_tile = check_unchanged(unchanged, run.tensors);
  for (const std::string& n : checked) run.vs_tile.push_back(std::move(checks.at(n)));
}

/// Lowers a tile-level kernel for the target and runs it on every thread; then the tile level
/// on the same inputs, when it can. With a block sample (run.sample), the blocks left out run at
/// tile level first, into the same tensors; then the sampled blocks run at thread level, and at
/// tile level on the copy of the written tensors taken before, which so holds the whole grid's
/// tile-level results to compare with.
void run_thread(KernelRun& run, const Kernel& kernel) {
  const RunRequest& req = run.request;
  ThreadRunOptions options;
  options.target = req.target;
  options.schedule = *Schedule::parse(req.schedule);
  options.workers = req.workers;
  options.control = req.control;
  options.bank_samples = req.bank_samples;
  options.shadow_limit_bytes = std::max<int64_t>(run.shadow_budget, 1);
  Kernel thread_kernel = kernel;
  run.lowered = is_tile_level(kernel);
  LowerOptions lower;
  lower.warp_specialize = req.warp_specialize;
  if (run.lowered) thread_kernel = lower_kernel(kernel, find_target(req.target), lower).kernel;
  Clock clock;
  if (samples_launches(req, kernel)) {
    run_sampled_launches(run, kernel, thread_kernel, options, clock);
    return;
  }
  if (run.sample) {
    const BlockSample& sample = *run.sample;
    std::vector<int64_t> rest = left_out(sample);
    run_tile_level(kernel, run.tensors, TileRunOptions{req.workers, req.control, &rest});
    options.only_blocks = sample.simulated;
    run.phases.tile_rest = lap(clock);
  }
  // The tile level does not execute intrinsics: kernels written with them are compared with
  // the reference only (a sample of such a kernel was refused by select_blocks).
  const bool tile_check = !uses_intrinsics(kernel);
  std::optional<BeforeThreadRun> before;
  if (tile_check) {
    before.emplace(run.signature, run.tensors);
    options.before = &before->written;
  }
  run.thread = run_thread_level(thread_kernel, run.tensors, options);
  run.blocks = run.thread->blocks;
  run.threads = run.thread->threads;
  run.seconds = run.thread->seconds;
  run.phases.run = lap(clock);
  if (!tile_check) {
    run.tile_note =
        "not run: the kernel calls instructions of the intrinsic table, which only the thread "
        "level executes";
    return;
  }
  std::vector<OutputCheck> unchanged = check_unchanged(*before, run.tensors);
  try {
    // Blocks that race on global elements load what other blocks stored as the CPU threads
    // happen to interleave; the thread level then ran them one after another, and so does the
    // tile level, so that both levels (and every --workers) give the same values.
    const int tile_workers = run.thread->in_block_order ? 1 : req.workers;
    run.tile_tensors = std::move(before->written);
    Lend lend(run.tensors, run.tile_tensors, before->read_only);
    run_tile_level(
        kernel, run.tile_tensors,
        TileRunOptions{tile_workers, req.control, run.sample ? &run.sample->simulated : nullptr});
    run.tile_ran = true;
  } catch (const RunStopped&) {
    throw;  // the limits hold for both levels
  } catch (const UserError& e) {
    run.tile_note = std::string("failed: ") + e.what();
  }
  run.vs_tile = std::move(unchanged);
  run.phases.tile_check = lap(clock);
}

void check_request(const RunRequest& req) {
  if (req.level != "tile" && req.level != "thread") {
    throw UsageError("level '" + req.level + "': expected tile or thread");
  }
  if (req.reference != "auto" && req.reference != "full" && req.reference != "sampled") {
    throw UsageError("--reference " + req.reference + ": expected auto, full or sampled");
  }
  if (req.level != "thread") {
    if (!req.blocks.empty()) {
      throw UsageError("--blocks " + req.blocks +
                       " picks the blocks --level thread simulates; the tile level runs every "
                       "block: add --level thread or leave it out");
    }
    return;
  }
  if (!Schedule::parse(req.schedule)) {
    throw UsageError("schedule '" + req.schedule +
                     "': expected in-order, reverse or random:SEED (e.g. random:7)");
  }
  if (!lookup_target(req.target, false)) {
    throw UsageError("target '" + req.target + "': unknown target; use one of " + target_names());
  }
  if (!req.blocks.empty()) {
    try {
      (void)BlockSelection::parse(req.blocks);  // malformed specs fail before anything runs
    } catch (const BlockSpecError& e) {
      throw UsageError(e.what());
    }
  }
}

}  // namespace

sim::Counters BlockSample::scaled(const sim::Counters& m) const {
  const double k = scale();
  auto sc = [k](int64_t v) {
    return static_cast<int64_t>(std::llround(static_cast<double>(v) * k));
  };
  sim::Counters c;
  c.shared_requests = sc(m.shared_requests);
  c.wavefronts = sc(m.wavefronts);
  c.ideal_wavefronts = sc(m.ideal_wavefronts);
  c.bank_conflicts = sc(m.bank_conflicts);
  c.global_requests = sc(m.global_requests);
  c.sectors = sc(m.sectors);
  c.ideal_sectors = sc(m.ideal_sectors);
  c.lines = sc(m.lines);
  c.lane_accesses = sc(m.lane_accesses);
  return c;
}

const HostTensor& KernelRun::tile_tensor(const std::string& name) const {
  auto it = tile_tensors.find(name);
  return it != tile_tensors.end() ? it->second : tensors.at(name);
}

std::vector<std::string> KernelRun::output_names() const {
  std::vector<std::string> names;
  for (const ParamInfo& p : signature) {
    bool checked = std::any_of(vs_reference.begin(), vs_reference.end(),
                               [&](const OutputCheck& c) { return c.name == p.name; }) ||
                   std::any_of(vs_expected.begin(), vs_expected.end(),
                               [&](const OutputCheck& c) { return c.name == p.name; });
    if (p.written || checked) names.push_back(p.name);
  }
  return names;
}

namespace {

/// The example's reference on copies of its outputs, with the run's other tensors lent to it
/// (a reference only reads its inputs): its outputs and their error bounds.
TensorMap full_reference(const Example& example, const Params& params, TensorMap& tensors) {
  TensorMap reference;
  std::vector<std::string> inputs;
  for (const auto& [name, tensor] : tensors) {
    if (std::count(example.outputs.begin(), example.outputs.end(), name))
      reference.emplace(name, tensor);
    else
      inputs.push_back(name);
  }
  {
    Lend lend(tensors, reference, inputs);
    example.reference(params, reference);
  }
  for (auto it = reference.begin(); it != reference.end();) {  // only the outputs are compared
    bool output = std::any_of(
        example.outputs.begin(), example.outputs.end(),
        [&](const std::string& o) { return it->first == o || it->first == error_bound_name(o); });
    it = output ? std::next(it) : reference.erase(it);
  }
  return reference;
}

/// Where `name` stands in the kernel's parameter list (past the end when it is none).
size_t param_position(const std::vector<ParamInfo>& signature, const std::string& name) {
  auto it = std::find_if(signature.begin(), signature.end(),
                         [&](const ParamInfo& p) { return p.name == name; });
  return static_cast<size_t>(it - signature.begin());
}

/// Sets the parameters `init` names to zeros, random values (the seed's) or NaN bytes.
void apply_init(const std::map<std::string, std::string>& init, const Kernel& kernel,
                const std::map<std::string, int64_t>& dims, uint64_t seed, TensorMap& tensors) {
  if (init.empty()) return;
  std::vector<std::string> randoms, nans;  // made for these only
  for (const auto& [name, how] : init) {
    if (how == "random") randoms.push_back(name);
    if (how == "nan") nans.push_back(name);
  }
  TensorMap random = make_tensors(kernel, dims, {}, seed, &randoms);
  TensorMap nan = make_tensors(kernel, dims, nans, seed, &nans);
  for (const auto& [name, how] : init) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      std::string known;
      for (const auto& [n, t] : tensors) known += (known.empty() ? "" : ", ") + n;
      throw UsageError("--init " + name + "=" + how + ": kernel '" + kernel->name +
                       "' has no tensor parameter '" + name + "'; it has " + known);
    }
    if (how == "zeros") {
      for (int64_t i = 0; i < it->second.size(); ++i) it->second.set(i, 0.0);
    } else if (how == "random") {
      it->second = random.at(name);
    } else if (how == "nan") {
      it->second = nan.at(name);
    } else {
      throw UsageError("--init " + name + "=" + how +
                       ": the initial value is one of zeros, random, nan");
    }
  }
}

}  // namespace

KernelRun run_kernel(const ResolvedKernel& k, const RunRequest& request) {
  check_request(request);
  Clock clock;
  const Example& example = *k.example;
  KernelRun run;
  run.request = request;
  run.has_reference = k.has_reference;
  run.kernel = example.build(k.params);
  std::map<std::string, int64_t> dims = run_dims(k);
  run.signature = kernel_signature(run.kernel, dims);
  // The tensors, the reference's outputs, at thread level the tile level's copy of the written
  // tensors and the cross-block shadow (24 bytes per element touched): refused before any is
  // allocated when too large.
  const bool thread = request.level == "thread";
  const bool sampled = thread && !request.blocks.empty() && request.blocks != "all";
  if (samples_launches(request, run.kernel))  // before anything runs (one launch: select_blocks)
    refuse_sample_of_intrinsics(request.blocks, run.kernel);
  std::vector<std::string> kept;  // by the reference: its outputs with their bounds
  if (k.has_reference) {
    kept = example.outputs;
    kept.insert(kept.end(), example.bounded_outputs.begin(), example.bounded_outputs.end());
  }
  const bool sampled_kept =
      sampled && wants_sampled_reference(example, k.params, request,
                                         fits_host_memory(run.signature, kept, thread, sampled));
  run.shadow_budget = check_host_memory(
      run.signature, sampled_kept ? std::vector<std::string>{} : kept, thread, sampled);

  // Checked before anything runs: every array names a parameter and fits it.
  TensorMap given, expected;
  for (const NamedArray& a : request.inputs) {
    given.insert_or_assign(
        a.name, input_tensor(a.array, find_param(run.kernel, run.signature, a), a.origin));
  }
  for (const NamedArray& a : request.expected) {
    expected.insert_or_assign(
        a.name, expected_tensor(a.array, find_param(run.kernel, run.signature, a), a.origin));
  }
  // Outputs start as NaN bytes, so elements the kernel leaves unwritten show: the reference's
  // outputs and the tensors the user expects values of (unless given as inputs).
  std::vector<std::string> nan_filled = example.outputs;
  for (const auto& [name, tensor] : expected) {
    if (!given.count(name)) nan_filled.push_back(name);
  }
  run.tensors = make_tensors(run.kernel, dims, nan_filled, request.seed);
  std::map<std::string, std::string> init = request.init;
  for (const std::string& name : example.zero_outputs) init.emplace(name, "zeros");
  apply_init(init, run.kernel, dims, request.seed, run.tensors);
  for (auto& [name, tensor] : given) run.tensors.insert_or_assign(name, std::move(tensor));
  if (thread) run.sample = select_blocks(request, run.kernel, run.tensors);
  if (sampled_kept && !run.sample)  // the spec named every block: the full reference runs
    run.shadow_budget = check_host_memory(run.signature, kept, thread, false);
  run.phases.inputs = lap(clock);
  TensorMap reference;
  std::vector<SampledOutput> sampled_reference;
  if (k.has_reference && use_sampled_reference(example, request, run.sample, sampled_kept)) {
    ReferenceSampleRequest ask{run.sample->grid, run.sample->simulated, request.seed};
    sampled_reference = example.sampled_reference(k.params, run.tensors, ask);
  } else if (k.has_reference) {
    reference = full_reference(example, k.params, run.tensors);
  }
  run.phases.reference = lap(clock);

  if (request.level == "thread") {
    run_thread(run, run.kernel);
  } else {
    TileRunStats stats =
        run_tile_level(run.kernel, run.tensors, TileRunOptions{request.workers, request.control});
    run.blocks = stats.blocks;
    run.threads = run.kernel->threads;
    run.seconds = stats.seconds;
    run.phases.run = lap(clock);
  }
  clock = Clock{};  // run_thread timed its parts

  if (k.has_reference) {
    std::optional<double> atol, rtol;  // the example's stated tolerance, else the dtype's
    if (example.tolerance) atol = example.tolerance->atol, rtol = example.tolerance->rtol;
    run.vs_reference =
        sampled_reference.empty()
            ? compare_tensors(run.tensors, reference, example.outputs, atol, rtol)
            : compare_sampled(run.tensors, sampled_reference, example.outputs, atol, rtol);
  }
  std::vector<std::string> expected_names;
  for (const NamedArray& a : request.expected) {
    if (std::find(expected_names.begin(), expected_names.end(), a.name) == expected_names.end())
      expected_names.push_back(a.name);
  }
  run.vs_expected =
      compare_tensors(run.tensors, expected, expected_names, request.atol, request.rtol);
  if (run.tile_ran && run.launch_samples.empty()) {  // (run_sampled_launches checked its own)
    // Every tensor the kernel writes, not only the declared outputs: a broken kernel may write
    // where it should not (those it only reads were checked unchanged, run_thread).
    std::vector<std::string> written;
    for (const auto& [name, tensor] : run.tile_tensors) written.push_back(name);
    for (OutputCheck& c : compare_tensors(run.tensors, run.tile_tensors, written))
      run.vs_tile.push_back(std::move(c));
    std::stable_sort(
        run.vs_tile.begin(), run.vs_tile.end(), [&](const OutputCheck& a, const OutputCheck& b) {
          return param_position(run.signature, a.name) < param_position(run.signature, b.name);
        });
  }
  for (const auto* checks : {&run.vs_reference, &run.vs_expected}) {
    for (const OutputCheck& c : *checks) {
      run.passed &= c.comparison.passed;
      run.max_abs_err = std::max(run.max_abs_err, c.comparison.max_abs_err);
      run.max_rel_err = std::max(run.max_rel_err, c.comparison.max_rel_err);
    }
  }
  for (const OutputCheck& c : run.vs_tile) run.passed &= c.comparison.passed;
  if (run.thread) run.passed &= !run.thread->report.has_errors();
  run.phases.checks = lap(clock);
  return run;
}

}  // namespace tessel::cli
