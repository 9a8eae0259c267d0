// Sector and line counting of one global-memory request.
#include "sim/global_sectors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

namespace tessel::sim {

namespace {

/// Distinct `byte >> shift` over sorted, merged byte intervals [first, last].
int64_t distinct_units(const std::pair<int64_t, int64_t>* merged, int n, int shift) {
  int64_t count = 0, last = INT64_MIN;
  for (int i = 0; i < n; ++i) {
    int64_t s = merged[i].first >> shift, e = merged[i].second >> shift;
    if (s <= last) s = last + 1;
    if (s <= e) count += e - s + 1;
    last = std::max(last, e);
  }
  return count;
}

}  // namespace

SectorCount count_sectors(std::span<const int64_t> byte_addr, std::span<const int> bytes,
                          uint64_t mask) {
  std::array<std::pair<int64_t, int64_t>, 64> iv;  // inclusive byte intervals
  int n = 0;
  for (uint64_t m = mask; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (lane >= static_cast<int>(byte_addr.size()) || lane >= static_cast<int>(bytes.size())) break;
    iv[n++] = {byte_addr[lane], byte_addr[lane] + std::max(bytes[lane], 1) - 1};
  }
  SectorCount c;
  if (n == 0) return c;
  std::sort(iv.begin(), iv.begin() + n);
  int merged = 0;
  for (int i = 0; i < n; ++i) {
    if (merged > 0 && iv[i].first <= iv[merged - 1].second + 1) {
      iv[merged - 1].second = std::max(iv[merged - 1].second, iv[i].second);
    } else {
      iv[merged++] = iv[i];
    }
  }
  for (int i = 0; i < merged; ++i) c.bytes += iv[i].second - iv[i].first + 1;
  c.sectors = distinct_units(iv.data(), merged, 5);
  c.lines = distinct_units(iv.data(), merged, 7);
  c.ideal_sectors = (c.bytes + 31) / 32;
  return c;
}

}  // namespace tessel::sim
