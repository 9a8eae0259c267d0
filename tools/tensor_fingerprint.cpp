// Chunked checksums of a tensor's bytes (std::hash over each chunk's bytes).
#include "tools/tensor_fingerprint.h"

#include <functional>
#include <string_view>

#include "core/on_cores.h"

namespace tessel::cli {

TensorFingerprint TensorFingerprint::of(const HostTensor& tensor) {
  TensorFingerprint f;
  const int64_t n = tensor.size();
  f.chunks.resize(static_cast<size_t>((n + kChunkElements - 1) / kChunkElements));
  const DataType dtype = tensor.dtype();
  const auto* bytes = reinterpret_cast<const char*>(tensor.data());
  // Chunks of 4096 elements start on a byte for every dtype (sub-byte ones pack 2 or 4 a byte).
  parallel_for(static_cast<int64_t>(f.chunks.size()), [&](int64_t c) {
    const int64_t first = c * kChunkElements;
    const int64_t begin = dtype.storage_bytes(first);
    const int64_t end = dtype.storage_bytes(std::min(n, first + kChunkElements));
    f.chunks[static_cast<size_t>(c)] =
        std::hash<std::string_view>{}(std::string_view(bytes + begin, end - begin));
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
