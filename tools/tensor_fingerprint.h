// Checksums of a tensor's bytes in fixed chunks, so that a run can show a tensor unchanged
// without keeping a copy of it, and say where it changed when it did.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "interp/host_tensor.h"

namespace tessel::cli {

/// One checksum per kChunkElements elements of a tensor (the last chunk shorter), computed over
/// the machine's cores.
struct TensorFingerprint {
  static constexpr int64_t kChunkElements = 4096;
  std::vector<uint64_t> chunks;

  static TensorFingerprint of(const HostTensor& tensor);
  /// The first element of the first chunk whose checksum differs from `before`'s, or nullopt
  /// when every chunk matches. Requires: both of one tensor's shape and dtype.
  std::optional<int64_t> first_change(const TensorFingerprint& before) const;
};

}  // namespace tessel::cli
