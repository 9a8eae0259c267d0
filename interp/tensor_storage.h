// A tensor's bytes: heap memory, or for a large tensor a mapped memory file whose copy made
// with share() is copy-on-write.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessel {

/// The bytes of a HostTensor, uninitialised when made. From kMappedBytes up they live in an
/// anonymous memory file (Linux memfd_create) mapped shared into the process, so that share()
/// can give a copy whose pages stay shared until one side writes them: a run that keeps the
/// 4 GiB output of chunk_scan CC5 to compare eight blocks' writes with then copies the pages
/// those blocks write, not 4 GiB (bench/README.md). Elsewhere, or when the system refuses the
/// file, the bytes are on the heap.
class TensorStorage {
 public:
  static constexpr size_t kMappedBytes = size_t{64} << 20;

  TensorStorage() = default;
  explicit TensorStorage(size_t bytes);
  TensorStorage(TensorStorage&& other) noexcept;
  TensorStorage& operator=(TensorStorage&& other) noexcept;
  TensorStorage(const TensorStorage&) = delete;
  TensorStorage& operator=(const TensorStorage&) = delete;
  ~TensorStorage();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  /// Whether share() can copy these bytes without copying pages: they are in a memory file this
  /// storage still maps shared (share() has not run on it).
  bool can_share() const { return fd_ >= 0; }
  /// Requires can_share(). A copy of the bytes: this storage and the copy each become a private
  /// mapping of the memory file, which keeps the bytes as they are now; each side copies a page
  /// when it first writes it. data() moves (pointers into the old bytes are invalid). An empty
  /// storage, and this one unchanged, when the system refuses the mappings.
  TensorStorage share();

 private:
  void release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  ///< data_ is a mapping (munmap), not heap memory (delete[])
  int fd_ = -1;          ///< the memory file, while data_ maps it shared
};

}  // namespace tessel
