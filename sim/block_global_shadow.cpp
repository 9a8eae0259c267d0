// The per-block global-memory shadow: the race rules of one barrier interval applied to the
// global elements a block touches, in an open-addressing table cleared by a new interval.
#include "sim/block_global_shadow.h"

#include <algorithm>
#include <bit>

namespace tessel::sim {

namespace {

constexpr size_t kFirstSize = 1024;

/// Fibonacci hashing: the top bits of key * 2^64 / phi.
size_t hash(uint64_t key, size_t size) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - std::countr_zero(size)));
}

/// A thread or site in a slot's 16 bits (kNone for a negative site).
uint16_t narrow(int v) { return static_cast<uint16_t>(std::clamp(v, -1, 0xFFFE)); }
int wide(uint16_t v) { return v == 0xFFFF ? -1 : v; }

}  // namespace

BlockGlobalShadow::Slot& BlockGlobalShadow::slot(int buffer, int64_t flat) {
  if (4 * (used_ + 1) > 3 * slots_.size()) grow();
  const uint64_t key = static_cast<uint64_t>(buffer) << 48 | static_cast<uint64_t>(flat);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash(key, slots_.size());; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.interval != interval_) {
      s = Slot{key, interval_};
      ++used_;
      return s;
    }
    if (s.key == key) return s;
  }
}

void BlockGlobalShadow::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max(kFirstSize, 2 * old.size()), Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.interval != interval_) continue;
    size_t i = hash(s.key, slots_.size());
    while (slots_[i].interval == interval_) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void BlockGlobalShadow::barrier() {
  used_ = 0;
  if (++interval_ == 0) {  // wrapped around: no slot may look current
    for (Slot& s : slots_) s.interval = 0;
    interval_ = 1;
  }
}

std::optional<BlockConflict> BlockGlobalShadow::read(int buffer, int64_t flat, int thread,
                                                     int site) {
  Slot& c = slot(buffer, flat);
  const uint16_t t = narrow(thread);
  std::optional<BlockConflict> conflict;
  if (c.writer != kNone && c.writer != t) {
    conflict = BlockConflict{FindingKind::kRace, false, true, c.writer, wide(c.w_site)};
  }
  if (c.reader == kNone) {
    c.reader = t;
    c.r_site = narrow(site);
  } else if (c.reader != t && c.reader2 == kNone) {
    c.reader2 = t;
    c.r_site2 = narrow(site);
  }
  return conflict;
}

std::optional<BlockConflict> BlockGlobalShadow::write(int buffer, int64_t flat, int thread,
                                                      int site, bool same_value) {
  Slot& c = slot(buffer, flat);
  const uint16_t t = narrow(thread);
  std::optional<BlockConflict> conflict;
  if (c.writer != kNone && c.writer != t) {
    conflict = BlockConflict{same_value ? FindingKind::kRace : FindingKind::kWriteConflict,
                             same_value, true, c.writer, wide(c.w_site)};
  } else if (c.reader != kNone && (c.reader != t || c.reader2 != kNone)) {
    bool first = c.reader != t;
    conflict = BlockConflict{FindingKind::kRace, false, false, first ? c.reader : c.reader2,
                             wide(first ? c.r_site : c.r_site2)};
  }
  c.writer = t;
  c.w_site = narrow(site);
  return conflict;
}

}  // namespace tessel::sim
