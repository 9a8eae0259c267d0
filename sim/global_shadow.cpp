// The cross-block global-memory shadow: one packed 64-bit cell per element for the first storing
// block and one for the readers.
#include "sim/global_shadow.h"

#include <algorithm>

namespace tessel::sim {

namespace {

// A cell packs (block + 1) in bits 63..32, the thread in 31..16 and the site in 15..0; 0 means
// "nobody", kSeveral "reads by more than one block".
constexpr uint64_t kSeveral = ~uint64_t{0};

uint64_t pack(uint32_t block, int thread, int site) {
  uint64_t s = static_cast<uint64_t>(std::clamp(site, 0, 0xFFFF));
  return (uint64_t{block} + 1) << 32 | (static_cast<uint64_t>(thread) & 0xFFFF) << 16 | s;
}

uint32_t block_of(uint64_t cell) { return static_cast<uint32_t>((cell >> 32) - 1); }

Toucher unpack(uint64_t cell) {
  if (cell == kSeveral) return Toucher{0, 0, -1, true};
  return Toucher{block_of(cell), static_cast<int>((cell >> 16) & 0xFFFF),
                 static_cast<int>(cell & 0xFFFF), false};
}

}  // namespace

void GlobalShadow::add_buffer(int id, int64_t size) {
  if (static_cast<int>(buffers_.size()) <= id) buffers_.resize(id + 1);
  // Value-initialised atomics start at 0 ("nobody").
  buffers_[id].writer = std::make_unique<std::atomic<uint64_t>[]>(size);
  buffers_[id].reader = std::make_unique<std::atomic<uint64_t>[]>(size);
  buffers_[id].value = std::make_unique<uint64_t[]>(size);
}

std::optional<GlobalConflict> GlobalShadow::read(int id, int64_t flat, uint32_t block, int thread,
                                                 int site) {
  Cells& c = buffers_[id];
  std::optional<GlobalConflict> conflict;
  uint64_t w = c.writer[flat].load(std::memory_order_relaxed);
  if (w != 0 && block_of(w) != block) {
    conflict = GlobalConflict{FindingKind::kRace, false, true, unpack(w)};
  }
  std::atomic<uint64_t>& r = c.reader[flat];
  uint64_t seen = r.load(std::memory_order_relaxed);
  if (seen == 0) {
    if (r.compare_exchange_strong(seen, pack(block, thread, site), std::memory_order_relaxed)) {
      return conflict;
    }
  }
  if (seen != kSeveral && block_of(seen) != block) r.store(kSeveral, std::memory_order_relaxed);
  return conflict;
}

std::optional<GlobalConflict> GlobalShadow::write(int id, int64_t flat, uint32_t block, int thread,
                                                  int site, bool same_value) {
  Cells& c = buffers_[id];
  std::atomic<uint64_t>& w = c.writer[flat];
  uint64_t seen = w.load(std::memory_order_relaxed);
  if (seen == 0 &&
      w.compare_exchange_strong(seen, pack(block, thread, site), std::memory_order_relaxed)) {
    seen = 0;
  }
  if (seen != 0 && block_of(seen) != block) {
    return GlobalConflict{same_value ? FindingKind::kRace : FindingKind::kWriteConflict, same_value,
                          true, unpack(seen)};
  }
  uint64_t r = c.reader[flat].load(std::memory_order_relaxed);
  if (r != 0 && (r == kSeveral || block_of(r) != block)) {
    return GlobalConflict{FindingKind::kRace, false, false, unpack(r)};
  }
  return std::nullopt;
}

std::optional<GlobalConflict> GlobalShadow::write_in_turn(int id, int64_t flat, uint32_t block,
                                                          int thread, int site, uint64_t value) {
  Cells& c = buffers_[id];
  uint64_t seen = c.writer[flat].load(std::memory_order_relaxed);
  if (seen == 0) {
    c.writer[flat].store(pack(block, thread, site), std::memory_order_relaxed);
    c.value[flat] = value;
  } else if (block_of(seen) != block) {
    bool same = c.value[flat] == value;
    return GlobalConflict{same ? FindingKind::kRace : FindingKind::kWriteConflict, same, true,
                          unpack(seen)};
  }
  uint64_t r = c.reader[flat].load(std::memory_order_relaxed);
  if (r != 0 && (r == kSeveral || block_of(r) != block)) {
    return GlobalConflict{FindingKind::kRace, false, false, unpack(r)};
  }
  return std::nullopt;
}

}  // namespace tessel::sim
