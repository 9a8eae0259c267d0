// Tensor bytes on the heap or in a shared memory file with copy-on-write copies.
#include "interp/tensor_storage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <utility>

namespace tessel {

namespace {

/// A mapping of `bytes` bytes of `fd`, or nullptr.
uint8_t* map_file(int fd, size_t bytes, int flags) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

TensorStorage::TensorStorage(size_t bytes) : size_(bytes) {
#ifdef __linux__
  if (bytes >= kMappedBytes) {
    const int fd = memfd_create("tessel-tensor", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
      if (uint8_t* p = map_file(fd, bytes, MAP_SHARED)) {
        data_ = p;
        mapped_ = true;
        fd_ = fd;
        return;
      }
    }
    if (fd >= 0) close(fd);
  }
#endif
  data_ = bytes ? new uint8_t[bytes] : nullptr;  // uninitialised: the owner writes every byte
}

TensorStorage::TensorStorage(TensorStorage&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)),
      fd_(std::exchange(other.fd_, -1)) {}

TensorStorage& TensorStorage::operator=(TensorStorage&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

TensorStorage::~TensorStorage() { release(); }

void TensorStorage::release() {
  if (mapped_) {
    munmap(data_, size_);
  } else {
    delete[] data_;
  }
  if (fd_ >= 0) close(fd_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
  fd_ = -1;
}

TensorStorage TensorStorage::share() {
  TensorStorage copy;
  uint8_t* mine = map_file(fd_, size_, MAP_PRIVATE);
  uint8_t* theirs = mine ? map_file(fd_, size_, MAP_PRIVATE) : nullptr;
  if (!theirs) {
    if (mine) munmap(mine, size_);
    return copy;
  }
  // Every write so far went through the shared mapping into the file, so both private
  // mappings read the bytes as they are; nothing writes the file from now on.
  munmap(data_, size_);
  close(fd_);
  fd_ = -1;
  data_ = mine;
  copy.data_ = theirs;
  copy.size_ = size_;
  copy.mapped_ = true;
  return copy;
}

}  // namespace tessel
