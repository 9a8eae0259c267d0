// The thread-level interpreter's entry point: binds the tensors, sets up the models, and runs
// the blocks over the CPU's cores in the order the schedule picks.
#include "interp/thread_interpreter.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <exception>
#include <list>
#include <mutex>
#include <random>
#include <thread>

#include "core/capacity.h"
#include "core/expr_printer.h"
#include "core/int_eval.h"
#include "interp/run_control.h"
#include "interp/thread_exec.h"

namespace tessel {

std::optional<Schedule> Schedule::parse(std::string_view text) {
  if (text == "in-order") return Schedule{Kind::kInOrder, 0};
  if (text == "reverse") return Schedule{Kind::kReverse, 0};
  constexpr std::string_view kRandom = "random:";
  if (text.substr(0, kRandom.size()) == kRandom) {
    std::string_view digits = text.substr(kRandom.size());
    uint64_t seed = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
    if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty()) {
      return Schedule{Kind::kRandom, seed};
    }
  }
  return std::nullopt;
}

std::string Schedule::name() const {
  switch (kind) {
    case Kind::kInOrder:
      return "in-order";
    case Kind::kReverse:
      return "reverse";
    case Kind::kRandom:
      return "random:" + std::to_string(seed);
  }
  return "?";
}

namespace {}  // namespace

namespace {

/// The outcome of running a launch's blocks once.
struct Launch {
  std::unique_ptr<sim::SimRun> sim;
  std::exception_ptr failure;  ///< the first failing block's error in the schedule's order
  int64_t lane_ops = 0;
};

/// Runs the blocks in `order` on `workers` CPU threads with fresh models. With several workers
/// it stops handing out blocks once two blocks met on a global element (SimRun::cross_block).
Launch launch_blocks(const Kernel& kernel, const ThreadProgram& prog, const Target& target,
                     const ThreadRunOptions& options, const std::vector<int64_t>& grid,
                     const std::vector<uint32_t>& order, TensorMap& tensors, const IntEnv& env,
                     int workers) {
  Launch out;
  const BankModel& banks = target.banks;
  out.sim = std::make_unique<sim::SimRun>(
      sim::SimOptions{banks, options.detectors, options.counters, options.bank_samples,
                      options.shadow_limit_bytes},
      prog.sites);
  sim::SimRun& run = *out.sim;
  run.set_grid(grid);
  thread_detail::LaunchContext launch{prog, run, {}, {}, grid, banks.warp_size, options.schedule};
  launch.control = options.control;
  launch.target = &target;
  int64_t base = 0;
  for (const Buffer& b : kernel->params) {
    HostTensor& t = tensors.at(b->name);
    base = (base + 255) / 256 * 256;  // device allocations are 256-byte aligned
    sim::BufferDesc desc{b->name, sim::Space::kGlobal, b->dtype, t.shape(), base};
    desc.read_only = !prog.buffers[run.num_globals()].written;
    run.add_global(std::move(desc));
    base += b->dtype.storage_bytes(t.size());
    launch.tensors.push_back(&t);
  }
  for (const auto& [slot, var] : prog.dynamic_slots) {
    auto it = env.find(var);
    if (it == env.end()) {
      user_error("kernel '" + kernel->name + "': symbolic dimension '" + var->name +
                 "' is not the extent of any tensor dimension, so its value is unknown");
    }
    launch.dynamic_values.push_back(it->second);
  }

  const int64_t blocks = static_cast<int64_t>(order.size());
  if (options.control) options.control->begin("thread level", blocks);
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> lane_ops{0};
  // The error reported is the first failing block's in the schedule's order: blocks are handed
  // out in that order, so every block before a failing one has started and is let finish.
  int64_t failed_at = blocks;
  std::mutex failure_lock;
  auto worker = [&] {
    int64_t i = 0;
    try {
      for (i = next++; i < blocks; i = next++) {
        if (workers > 1 && run.cross_block()) break;
        thread_detail::BlockExec block(launch, order[i], i);
        block.run();
        lane_ops += block.lane_ops;
        if (options.control) options.control->block_done();
      }
    } catch (...) {
      std::lock_guard<std::mutex> guard(failure_lock);
      if (i < failed_at) {
        out.failure = std::current_exception();
        failed_at = i;
      }
      next = blocks;
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  out.lane_ops = lane_ops;
  return out;
}

}  // namespace

void append_launch(ThreadRunResult& total, ThreadRunResult one, const std::string& label) {
  sim::SimReport& t = total.report;
  sim::SimReport& r = one.report;
  const int offset = static_cast<int>(t.sites.size());
  t.warp_size = r.warp_size;
  t.total += r.total;
  for (sim::Site& s : r.sites) {
    s.statement = label + ": " + s.statement;
    t.sites.push_back(std::move(s));
  }
  t.per_site.insert(t.per_site.end(), r.per_site.begin(), r.per_site.end());
  if (t.worst_bank.size() == static_cast<size_t>(offset)) {
    t.worst_bank.insert(t.worst_bank.end(), r.worst_bank.begin(), r.worst_bank.end());
  }
  for (sim::Finding& f : r.findings) {
    for (int& s : f.sites) s += offset;
    f.message = label + ": " + f.message;
    t.findings.push_back(std::move(f));
  }
  t.blocks += r.blocks;
  t.barriers += r.barriers;
  t.async_bytes += r.async_bytes;
  t.max_async_in_flight = std::max(t.max_async_in_flight, r.max_async_in_flight);
  total.blocks += one.blocks;
  total.simulated += one.simulated;
  total.threads = std::max(total.threads, one.threads);
  total.warp_size = one.warp_size;
  total.workers = std::max(total.workers, one.workers);
  total.in_block_order = total.in_block_order || one.in_block_order;
  total.seconds += one.seconds;
  total.lane_ops += one.lane_ops;
}

ThreadRunResult run_thread_level(const Kernel& kernel, TensorMap& tensors,
                                 const ThreadRunOptions& options) {
  if (is_multi_launch(kernel)) {
    // The launches run in order on the same tensors (a launch boundary orders every access, so
    // each launch has its own race shadow); the scratch lives from the first to the last.
    std::vector<std::string> scratch = add_scratch_tensors(kernel, tensors);
    ThreadRunResult total;
    total.threads = 0;
    total.workers = 0;
    // options.before holds the tensors before the first launch only.
    ThreadRunOptions each = options;
    try {
      for (size_t i = 0; i < kernel->launches.size(); ++i) {
        append_launch(total, run_thread_level(kernel->launches[i], tensors, each),
                      launch_label(kernel, i));
        each.before = nullptr;
      }
    } catch (...) {
      remove_scratch_tensors(scratch, tensors);
      throw;
    }
    remove_scratch_tensors(scratch, tensors);
    return total;
  }
  auto start = std::chrono::steady_clock::now();
  const Target* target = lookup_target(options.target, false);
  if (!target) {
    user_error("unknown target '" + options.target + "'; use one of " + target_names());
  }
  const BankModel* banks = &target->banks;
  IntEnv env = bind_tensors(kernel, tensors);
  // Before any block allocates its shared and register buffers.
  check_capacity(kernel, target, env);
  std::unique_ptr<ThreadProgram> prog =
      compile_thread_program(kernel, options.reuse_repeated_trees);

  std::vector<int64_t> grid;
  int64_t blocks = 1;
  for (const Expr& g : kernel->grid) {
    int64_t n = eval_int(g, env);
    if (n <= 0) {
      user_error("kernel '" + kernel->name + "': grid extent " + to_string(g) + " = " +
                 std::to_string(n) + " for these shapes; every grid extent must be positive");
    }
    grid.push_back(n);
    blocks *= n;
  }
  if (blocks > (int64_t{1} << 31)) {
    user_error("kernel '" + kernel->name + "': " + std::to_string(blocks) +
               " blocks is more than the thread-level interpreter runs; use smaller shapes");
  }

  // Block order: the schedule's, handed out to the workers one block at a time.
  std::vector<uint32_t> order;
  if (options.only_blocks.empty()) {
    order.resize(static_cast<size_t>(blocks));
    for (size_t b = 0; b < order.size(); ++b) order[b] = static_cast<uint32_t>(b);
  }
  for (int64_t b : options.only_blocks) {
    internal_check(b >= 0 && b < blocks, "run_thread_level: only_blocks lies outside the grid");
    order.push_back(static_cast<uint32_t>(b));
  }
  if (options.schedule.kind == Schedule::Kind::kReverse) std::reverse(order.begin(), order.end());
  if (options.schedule.kind == Schedule::Kind::kRandom) {
    std::mt19937_64 rng(options.schedule.seed);
    std::shuffle(order.begin(), order.end(), rng);
  }

  int workers = options.workers > 0
                    ? options.workers
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers = static_cast<int>(std::min<int64_t>(workers, static_cast<int64_t>(order.size())));
  // Blocks that touch one global element (a race between blocks) see each other's stores as the
  // CPU threads interleave, so what they load and store varies between runs. Such a launch
  // stops handing out blocks and runs again on the tensors as they were, one block after another
  // in the schedule's order: findings, counters and outputs are then those of --workers 1.
  // Kernels without such races never read what another block writes and need no second run.
  // The written tensors as they were: the caller's (options.before) or copies made here.
  std::vector<std::pair<HostTensor*, const HostTensor*>> before;
  std::list<HostTensor> copies;
  if (workers > 1 && options.detectors) {
    for (size_t i = 0; i < kernel->params.size(); ++i) {
      // Only what the launch writes: the sources of asynchronous copies are read, not written.
      if (!prog->buffers[i].written) continue;
      const std::string& name = kernel->params[i]->name;
      HostTensor& t = tensors.at(name);
      const bool kept = options.before && options.before->count(name);
      before.emplace_back(&t, kept ? &options.before->at(name) : &copies.emplace_back(t));
    }
  }
  Launch launch =
      launch_blocks(kernel, *prog, *target, options, grid, order, tensors, env, workers);
  bool stopped = false;  // past --max-steps or --timeout: no second run
  bool in_block_order = false;
  if (launch.failure) {
    try {
      std::rethrow_exception(launch.failure);
    } catch (const RunStopped&) {
      stopped = true;
    } catch (...) {
    }
  }
  if (workers > 1 && !stopped && launch.sim->cross_block()) {
    for (auto& [tensor, saved] : before) *tensor = *saved;
    workers = 1;
    in_block_order = true;
    launch = launch_blocks(kernel, *prog, *target, options, grid, order, tensors, env, workers);
  }
  if (launch.failure) std::rethrow_exception(launch.failure);
  sim::SimRun& run = *launch.sim;
  const int64_t lane_ops = launch.lane_ops;

  ThreadRunResult result;
  result.report = run.report();
  result.blocks = blocks;
  result.simulated = static_cast<int64_t>(order.size());
  result.grid = grid;
  result.threads = kernel->threads;
  result.warp_size = banks->warp_size;
  result.workers = workers;
  result.in_block_order = in_block_order;
  result.lane_ops = lane_ops;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessel
