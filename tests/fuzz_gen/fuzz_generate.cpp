// Draws random valid tile programs (tests/fuzz_gen/fuzz_program.h) and checks their validity.
#include <algorithm>
#include <functional>
#include <random>

#include "tests/fuzz_gen/fuzz_program.h"

namespace tessel::fuzz {

namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed * 0x9E3779B97F4A7C15ull + 17) {}
  int below(int n) { return static_cast<int>(gen_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  template <typename T>
  T pick(std::initializer_list<T> xs) {
    return *(xs.begin() + below(static_cast<int>(xs.size())));
  }

 private:
  std::mt19937_64 gen_;
};

bool is_vec(const FBuffer& b) { return b.shape != Shape::kTile; }

}  // namespace

std::vector<int> step_reads(const Step& s) {
  std::vector<int> r;
  for (int b : {s.a, s.b, s.vec}) {
    if (b >= 0) r.push_back(b);
  }
  // Accumulating gemms, reductions and serial loops read their destination.
  bool accumulates = ((s.kind == StepKind::kGemm || s.kind == StepKind::kPipeline ||
                       s.kind == StepKind::kReduce || s.kind == StepKind::kPipeSum) &&
                      !s.flag) ||
                     s.kind == StepKind::kSerialAcc;
  if (accumulates) r.push_back(s.dst);
  return r;
}

std::optional<std::string> invalid_reason(const Program& p) {
  const int nb = static_cast<int>(p.buffers.size());
  std::vector<bool> written(nb, false);
  auto buf = [&](int i) -> const FBuffer& { return p.buffers[i]; };
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& s = p.steps[si];
    std::string where = "step " + std::to_string(si);
    for (int b : {s.dst, s.a, s.b, s.vec}) {
      if (b >= nb) return where + ": no buffer " + std::to_string(b);
    }
    for (int b : step_reads(s)) {
      if (b < 0 || !written[b]) return where + ": reads buffer " + std::to_string(b) + " unwritten";
    }
    auto need = [&](bool ok, const char* what) -> std::optional<std::string> {
      if (!ok) return where + ": " + what;
      return std::nullopt;
    };
    std::optional<std::string> bad;
    switch (s.kind) {
      case StepKind::kLoad:
      case StepKind::kFill:
        bad = need(s.dst >= 0, "no destination");
        if (!bad && s.kind == StepKind::kLoad) bad = need(!is_vec(buf(s.dst)), "load of a vector");
        break;
      case StepKind::kCopy:
        bad = need(s.dst >= 0 && s.a >= 0 && s.dst != s.a && buf(s.dst).shape == buf(s.a).shape,
                   "copy between different shapes");
        break;
      case StepKind::kElemwise:
        bad = need(s.dst >= 0 && s.a >= 0 && s.b >= 0 && !is_vec(buf(s.dst)) && !is_vec(buf(s.a)) &&
                       !is_vec(buf(s.b)),
                   "elementwise needs tiles");
        break;
      case StepKind::kLocalTmp:
      case StepKind::kSerialAcc:
        bad =
            need(s.dst >= 0 && s.a >= 0 && !is_vec(buf(s.dst)) && !is_vec(buf(s.a)), "needs tiles");
        break;
      case StepKind::kReduce: {
        Shape want = s.dim == 1 ? Shape::kRow : Shape::kCol;
        bad = need(s.dst >= 0 && s.a >= 0 && !is_vec(buf(s.a)) && buf(s.dst).shape == want &&
                       buf(s.a).scope == FScope::kFragment &&
                       buf(s.dst).scope == FScope::kFragment && !buf(s.a).f16 && !buf(s.dst).f16,
                   "reduce needs an f32 fragment tile and an f32 fragment vector of its axis");
        break;
      }
      case StepKind::kBroadcast: {
        Shape want = s.dim == 1 ? Shape::kRow : Shape::kCol;
        bad = need(s.dst >= 0 && s.a >= 0 && s.vec >= 0 && !is_vec(buf(s.dst)) &&
                       !is_vec(buf(s.a)) && buf(s.vec).shape == want,
                   "broadcast needs tiles and a vector of its axis");
        break;
      }
      case StepKind::kVecOp:
        bad = need(s.dst >= 0 && s.a >= 0 && s.dst != s.a && is_vec(buf(s.dst)) &&
                       buf(s.dst).shape == buf(s.a).shape,
                   "vector op needs two vectors of one shape");
        break;
      case StepKind::kGemm:
      case StepKind::kPipeline:
        bad = need(s.dst >= 0 && !is_vec(buf(s.dst)) && buf(s.dst).scope == FScope::kFragment &&
                       !buf(s.dst).f16,
                   "gemm accumulates into an f32 fragment tile");
        if (!bad && s.kind == StepKind::kPipeline)
          bad = need(s.stages >= 0 && s.stages <= 4, "stages 0-4");
        break;
      case StepKind::kPipeSum:
        bad = need(s.dst >= 0 && !is_vec(buf(s.dst)) && s.stages >= 0 && s.stages <= 4,
                   "pipelined sum needs a tile and 0-4 stages");
        break;
      case StepKind::kStore:
        bad = need(s.a >= 0 && s.out >= 0, "store needs a source");
        break;
      case StepKind::kAtomic:
        bad =
            need(s.a >= 0 && s.out >= 0 && !is_vec(buf(s.a)) && buf(s.a).scope == FScope::kFragment,
                 "atomic needs a fragment tile");
        break;
    }
    if (bad) return bad;
    if (s.dst >= 0) written[s.dst] = true;
  }
  return std::nullopt;
}

Program generate(uint64_t seed, const std::string& target) {
  Rng rng(seed);
  Program p;
  p.seed = seed;
  p.target = target;
  bool amd = target.rfind("gfx", 0) == 0;
  p.threads = amd ? rng.pick({64, 128, 256, 192, 128}) : rng.pick({32, 64, 128, 256, 96, 128, 160});
  p.grid = 1 + rng.below(3);
  p.R = rng.pick({8, 16, 32, 32, 64});
  p.C = rng.pick({8, 16, 32, 32, 64});
  p.K = rng.pick({16, 32});
  p.k_tiles = 1 + rng.below(4);
  p.ragged_rows = rng.chance(40) ? rng.below(std::min(p.R, 5)) : 0;
  p.ragged_cols = rng.chance(40) ? rng.below(std::min(p.C, 5)) : 0;
  p.ragged_k = rng.chance(30) ? rng.below(5) : 0;
  p.symbolic = rng.chance(30);

  auto add_buffer = [&](Shape shape, bool fragment_f32) {
    FBuffer b;
    b.shape = shape;
    b.scope = fragment_f32 || rng.chance(60) ? FScope::kFragment : FScope::kShared;
    b.f16 = !fragment_f32 && shape == Shape::kTile && rng.chance(20);
    if (b.scope == FScope::kShared && shape == Shape::kTile && rng.chance(35))
      b.annotate = 1 + rng.below(3);
    int n = static_cast<int>(p.buffers.size());
    b.name = std::string(shape == Shape::kTile ? "t" : "v") + std::to_string(n) +
             (b.scope == FScope::kShared ? "_shared" : "_frag");
    p.buffers.push_back(b);
    return n;
  };
  std::vector<bool> written;
  auto is_written = [&](int i) {
    return i >= 0 && i < static_cast<int>(written.size()) && written[i];
  };
  int outputs = 0;
  // Appends `s` when the program stays valid; marks its destination written.
  auto push = [&](const Step& s) {
    p.steps.push_back(s);
    if (invalid_reason(p)) {
      p.steps.pop_back();
      return false;
    }
    if (s.dst >= 0) {
      written.resize(std::max<size_t>(written.size(), s.dst + 1), false);
      written[s.dst] = true;
    }
    return true;
  };
  using Pred = std::function<bool(const FBuffer&)>;
  /// A written buffer that `pred` accepts, the most recent ones likelier; -1 when none.
  auto pick_written = [&](const Pred& pred) -> int {
    std::vector<int> c;
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      if (is_written(static_cast<int>(i)) && pred(p.buffers[i])) c.push_back(static_cast<int>(i));
    }
    if (c.empty()) return -1;
    if (rng.chance(50)) return c.back();
    return c[rng.below(static_cast<int>(c.size()))];
  };
  /// A tile to read: a written one, or a fresh one loaded from X now.
  auto source_tile = [&](bool fragment_f32) -> int {
    Pred pred = [&](const FBuffer& b) {
      return b.shape == Shape::kTile && (!fragment_f32 || (b.scope == FScope::kFragment && !b.f16));
    };
    int old = pick_written(pred);
    if (old >= 0 && rng.chance(80)) return old;
    Step load;
    load.kind = StepKind::kLoad;
    load.dst = add_buffer(Shape::kTile, fragment_f32);
    return push(load) ? load.dst : old;
  };
  /// A tile to write: a new one mostly, sometimes one already written (overwritten).
  auto dest_tile = [&](bool fragment_f32) -> int {
    Pred pred = [&](const FBuffer& b) {
      return b.shape == Shape::kTile && (!fragment_f32 || (b.scope == FScope::kFragment && !b.f16));
    };
    int old = pick_written(pred);
    if (old >= 0 && rng.chance(25)) return old;
    return add_buffer(Shape::kTile, fragment_f32);
  };
  /// A vector of `shape` to read: a written one, or a fresh reduction or fill.
  auto source_vec = [&](Shape shape) -> int {
    int old = pick_written([&](const FBuffer& b) { return b.shape == shape; });
    if (old >= 0 && rng.chance(75)) return old;
    Step s;
    if (rng.chance(70)) {
      s.kind = StepKind::kReduce;
      s.a = source_tile(true);
      s.dim = shape == Shape::kRow ? 1 : 0;
      s.op = rng.below(5);
      s.flag = true;
      s.dst = add_buffer(shape, true);
    } else {
      s.kind = StepKind::kFill;
      s.dst = add_buffer(shape, false);
      s.op = 1 + rng.below(2);
    }
    if (s.a < 0 && s.kind == StepKind::kReduce) return old;
    return push(s) ? s.dst : old;
  };

  const int nsteps = 2 + rng.below(6);
  for (int attempt = 0; attempt < 40 && static_cast<int>(p.steps.size()) < nsteps; ++attempt) {
    Step s;
    int kind = rng.below(100);
    if (kind < 10) {
      s.kind = StepKind::kCopy;
      s.a = rng.chance(75) ? source_tile(false)
                           : source_vec(rng.chance(50) ? Shape::kRow : Shape::kCol);
      if (s.a < 0) continue;
      s.dst = add_buffer(p.buffers[s.a].shape, false);
    } else if (kind < 15) {
      s.kind = StepKind::kFill;
      s.dst = dest_tile(false);
      s.op = rng.below(3);
    } else if (kind < 33) {
      s.kind = StepKind::kElemwise;
      s.a = source_tile(false);
      s.b = source_tile(false);
      if (s.a < 0 || s.b < 0) continue;
      s.dst = dest_tile(false);
      s.op = rng.below(4);
      s.flag = rng.chance(30);
    } else if (kind < 40) {
      s.kind = rng.chance(65) ? StepKind::kLocalTmp : StepKind::kSerialAcc;
      s.a = source_tile(false);
      if (s.a < 0) continue;
      if (s.kind == StepKind::kSerialAcc) {
        s.dst = pick_written([](const FBuffer& b) { return b.shape == Shape::kTile; });
        if (s.dst < 0) continue;
      } else {
        s.dst = dest_tile(false);
      }
      s.flag = rng.chance(40);
    } else if (kind < 54) {
      s.kind = StepKind::kReduce;
      s.a = source_tile(true);
      if (s.a < 0) continue;
      s.dim = rng.below(2);
      s.op = rng.below(5);
      s.flag = rng.chance(70);
      Shape want = s.dim == 1 ? Shape::kRow : Shape::kCol;
      int old = pick_written(
          [&](const FBuffer& b) { return b.shape == want && b.scope == FScope::kFragment; });
      if (!s.flag && old < 0) s.flag = true;
      s.dst = (!s.flag || (old >= 0 && rng.chance(30))) ? old : add_buffer(want, true);
    } else if (kind < 64) {
      s.kind = StepKind::kBroadcast;
      s.dim = rng.below(2);
      s.vec = source_vec(s.dim == 1 ? Shape::kRow : Shape::kCol);
      s.a = source_tile(false);
      if (s.vec < 0 || s.a < 0) continue;
      s.dst = dest_tile(false);
      s.op = rng.below(2);
    } else if (kind < 70) {
      s.kind = StepKind::kVecOp;
      s.a = source_vec(rng.chance(50) ? Shape::kRow : Shape::kCol);
      if (s.a < 0) continue;
      s.dst = add_buffer(p.buffers[s.a].shape, false);
    } else if (kind < 85) {
      if (rng.chance(30)) {
        s.kind = StepKind::kPipeSum;
        s.dst = dest_tile(false);
        s.flag = !is_written(s.dst) || rng.chance(50);
        s.stages = rng.below(5);
        s.op = rng.below(2);  // the staging tile: 0 float32, 1 float16
        push(s);
        continue;
      }
      s.kind = rng.chance(50) ? StepKind::kGemm : StepKind::kPipeline;
      s.dst = dest_tile(true);
      s.flag = !is_written(s.dst) || rng.chance(50);
      s.trans_a = rng.chance(35);
      s.trans_b = rng.chance(35);
      s.a_scope = s.kind == StepKind::kGemm && rng.chance(40) ? 1 : 0;
      s.b_scope = s.kind == StepKind::kGemm && rng.chance(40) ? 1 : 0;
      s.stages = rng.below(5);
      s.op = rng.chance(60) ? 0 : 1 + rng.below(2);  // warp policy: Square, FullRow, FullCol
    } else if (kind < 92) {
      s.kind = StepKind::kStore;
      s.a = pick_written([](const FBuffer&) { return true; });
      if (s.a < 0) continue;
      s.flag = rng.chance(40);
      s.op = rng.chance(20) ? 1 : 0;  // tiles: store a slice of the rows
      s.out = outputs++;
    } else {
      s.kind = StepKind::kAtomic;
      s.a = source_tile(true);
      if (s.a < 0) continue;
      s.flag = rng.chance(40);
      s.out = outputs++;
    }
    push(s);
  }
  // Every value no later step reads is stored, so that the outputs show every computation.
  std::vector<int> leaves;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    int d = p.steps[i].dst;
    if (d < 0) continue;
    bool read_later = false;
    for (size_t j = i + 1; j < p.steps.size(); ++j) {
      const Step& t = p.steps[j];
      if (t.a == d || t.b == d || t.vec == d) read_later = true;
      if (t.dst == d) break;
    }
    if (!read_later && std::find(leaves.begin(), leaves.end(), d) == leaves.end())
      leaves.push_back(d);
  }
  for (int d : leaves) {
    Step s;
    s.kind = StepKind::kStore;
    s.a = d;
    s.flag = rng.chance(40);
    s.op = rng.chance(20) ? 1 : 0;
    s.out = outputs++;
    push(s);
  }
  return drop_unused_buffers(p);
}

Program drop_unused_buffers(const Program& p) {
  std::vector<int> remap(p.buffers.size(), -1);
  Program q = p;
  q.buffers.clear();
  for (const Step& s : p.steps) {
    for (int b : {s.dst, s.a, s.b, s.vec}) {
      if (b >= 0 && remap[b] < 0) {
        remap[b] = static_cast<int>(q.buffers.size());
        q.buffers.push_back(p.buffers[b]);
      }
    }
  }
  for (Step& s : q.steps) {
    for (int* b : {&s.dst, &s.a, &s.b, &s.vec}) {
      if (*b >= 0) *b = remap[*b];
    }
  }
  // Output tensors numbered in order of use.
  int next = 0;
  for (Step& s : q.steps) {
    if (s.out >= 0) s.out = next++;
  }
  return q;
}

}  // namespace tessel::fuzz
