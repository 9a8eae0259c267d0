// The cross-block global-memory shadow: one packed 64-bit cell per element for the first storing
// block and one for the readers, in pages allocated on first touch.
#include "sim/global_shadow.h"

#include <algorithm>

#include "core/error.h"

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

GlobalShadow::~GlobalShadow() {
  for (Buffer& b : buffers_) {
    for (int64_t i = 0; i < b.count; ++i) delete b.pages[i].load(std::memory_order_relaxed);
  }
}

void GlobalShadow::add_buffer(int id, int64_t size, std::string name) {
  if (static_cast<int>(buffers_.size()) <= id) buffers_.resize(id + 1);
  Buffer& b = buffers_[id];
  b.name = std::move(name);
  b.count = (size + kPageElements - 1) / kPageElements;
  b.pages = std::make_unique<std::atomic<Page*>[]>(b.count);  // value-initialised: null
}

GlobalShadow::Page& GlobalShadow::allocate(int id, std::atomic<Page*>& slot) {
  const int64_t pages = ++pages_;
  if (max_bytes_ > 0 && pages * kPageBytes > max_bytes_) {
    --pages_;
    user_error(
        "the simulator's record of who read and wrote each global element (24 bytes an "
        "element, kept for the elements the simulated blocks touch) would pass " +
        std::to_string(max_bytes_ >> 20) + " MiB, the memory left beside the tensors, at '" +
        buffers_[id].name +
        "': simulate fewer blocks (e.g. --blocks random:8) or choose smaller sizes with -D");
  }
  auto fresh = std::make_unique<Page>();  // value-initialised: every cell 0 ("nobody")
  Page* seen = nullptr;
  if (slot.compare_exchange_strong(seen, fresh.get(), std::memory_order_acq_rel)) {
    return *fresh.release();
  }
  --pages_;  // another thread installed the page first
  return *seen;
}

std::optional<GlobalConflict> GlobalShadow::read(int id, int64_t flat, uint32_t block, int thread,
                                                 int site) {
  Page& c = page(id, flat);
  flat %= kPageElements;
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
  Page& c = page(id, flat);
  flat %= kPageElements;
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
  Page& c = page(id, flat);
  flat %= kPageElements;
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
