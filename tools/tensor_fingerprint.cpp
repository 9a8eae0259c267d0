// Chunked checksums of a tensor's bytes: a sum and a position-weighted sum of 64-bit words.
#include "tools/tensor_fingerprint.h"

#include <cstring>

#include "core/on_cores.h"

namespace tessel::cli {

namespace {

/// The checksum of `n` bytes: the sum of their 64-bit words (the last one zero-padded) and the
/// sum of each word times an odd weight of its position, modulo 2^64, mixed into one word. A
/// change of one word changes both sums (an odd weight is invertible modulo 2^64); words
/// swapped change the weighted one. One pass that the compiler vectorises: std::hash's byte
/// loop was 2.6% of a chunk_scan CC5 run, which reads its 6.5 GiB of inputs twice here.
uint64_t checksum(const uint8_t* bytes, int64_t n) {
  uint64_t sum = 0, weighted = 0;
  const int64_t words = n / 8;
  for (int64_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes + i * 8, 8);
    sum += w;
    weighted += w * (2 * static_cast<uint64_t>(i) + 1);
  }
  if (n % 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes + words * 8, static_cast<size_t>(n % 8));
    sum += w;
    weighted += w * (2 * static_cast<uint64_t>(words) + 1);
  }
  return sum ^ (weighted * 0x9E3779B97F4A7C15ull + (weighted >> 29));
}

}  // namespace

TensorFingerprint TensorFingerprint::of(const HostTensor& tensor) {
  TensorFingerprint f;
  const int64_t n = tensor.size();
  f.chunks.resize(static_cast<size_t>((n + kChunkElements - 1) / kChunkElements));
  const DataType dtype = tensor.dtype();
  const uint8_t* bytes = tensor.data();
  // Chunks of 4096 elements start on a byte for every dtype (sub-byte ones pack 2 or 4 a byte).
  parallel_for(static_cast<int64_t>(f.chunks.size()), [&](int64_t c) {
    const int64_t first = c * kChunkElements;
    const int64_t begin = dtype.storage_bytes(first);
    const int64_t end = dtype.storage_bytes(std::min(n, first + kChunkElements));
    f.chunks[static_cast<size_t>(c)] = checksum(bytes + begin, end - begin);
  });
  return f;
}

std::optional<int64_t> TensorFingerprint::first_change(const TensorFingerprint& before) const {
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (c >= before.chunks.size() || chunks[c] != before.chunks[c])
      return static_cast<int64_t>(c) * kChunkElements;
  }
  return std::nullopt;
}

}  // namespace tessel::cli
