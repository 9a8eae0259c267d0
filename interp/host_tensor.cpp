// Host tensor storage, random fill and comparison.
#include "interp/host_tensor.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "core/on_cores.h"
#include "interp/element_access.h"

namespace tessel {

namespace {

/// Calls write(begin, count) for slices of 64 MiB of `bytes` bytes, on every core: the first
/// touch of a page costs more than writing it.
template <typename Write>
void write_in_slices(int64_t bytes, Write&& write) {
  constexpr int64_t kSlice = int64_t{1} << 26;
  parallel_for((bytes + kSlice - 1) / kSlice, [&](int64_t s) {
    const int64_t begin = s * kSlice;
    write(begin, static_cast<size_t>(std::min(kSlice, bytes - begin)));
  });
}

}  // namespace

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> shape, Unfilled)
    : dtype_(dtype), shape_(std::move(shape)) {
  size_ = 1;
  for (int64_t e : shape_) {
    if (e < 0) user_error("a tensor cannot have the negative extent " + std::to_string(e));
    size_ *= e;
  }
  bytes_ = TensorStorage(static_cast<size_t>(dtype_.storage_bytes(size_)));
}

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> shape, uint8_t fill_byte)
    : HostTensor(dtype, std::move(shape), Unfilled{}) {
  write_in_slices(static_cast<int64_t>(bytes_.size()), [&](int64_t begin, size_t n) {
    std::memset(bytes_.data() + begin, fill_byte, n);
  });
}

HostTensor HostTensor::random(DataType dtype, std::vector<int64_t> shape, uint64_t seed) {
  const bool whole_bytes = dtype.storage_bits() % 8 == 0 && dtype.lanes == 1;
  HostTensor t = whole_bytes ? HostTensor(dtype, std::move(shape), Unfilled{})
                             : HostTensor(dtype, std::move(shape));
  t.fill_random(seed);
  return t;
}

HostTensor::HostTensor(const HostTensor& other)
    : dtype_(other.dtype_), shape_(other.shape_), size_(other.size_), bytes_(other.bytes_.size()) {
  write_in_slices(static_cast<int64_t>(bytes_.size()), [&](int64_t begin, size_t n) {
    std::memcpy(bytes_.data() + begin, other.bytes_.data() + begin, n);
  });
}

HostTensor HostTensor::snapshot() {
  if (!bytes_.can_share()) return *this;
  HostTensor copy;
  copy.bytes_ = bytes_.share();
  if (copy.bytes_.size() != bytes_.size()) return *this;  // the system refused the mappings
  copy.dtype_ = dtype_;
  copy.shape_ = shape_;
  copy.size_ = size_;
  return copy;
}

HostTensor& HostTensor::operator=(const HostTensor& other) {
  if (this != &other) *this = HostTensor(other);
  return *this;
}

TensorView HostTensor::view(const BufferNode* buffer) {
  return TensorView{buffer, dtype_, shape_, bytes_.data()};
}

int64_t host_memory_budget() {
  const int64_t bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  return bytes / 4 * 3;
}

namespace {

/// SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a bijection on 64-bit words that spreads nearby inputs apart.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The generator seed of chunk `c`: `seed` itself for the first chunk (a tensor of at most
/// kRandomChunk elements is one sequence of std::mt19937_64(seed)), a mix of both otherwise.
uint64_t chunk_seed(uint64_t seed, int64_t c) {
  return c == 0 ? seed : mix64(seed ^ mix64(static_cast<uint64_t>(c)));
}

/// Values a random fill draws at a time.
constexpr int64_t kDraws = 1024;

/// out[k] = std::uniform_real_distribution<double>(-1.0, 1.0)(rng) for k < n <= kDraws, bit for
/// bit, with the generator's words drawn first and converted in a second pass that vectorises.
/// libstdc++ draws one 64-bit word w per value (std::generate_canonical<double, 53>: w as a
/// double, to nearest, over 2^64, and the largest double below 1 if that rounds to 1) and
/// returns canonical * (b - a) + a.
void uniform_draws(std::mt19937_64& rng, double* out, int64_t n) {
  uint64_t words[kDraws];
  for (int64_t k = 0; k < n; ++k) words[k] = rng();
  for (int64_t k = 0; k < n; ++k) {
    const double canonical =
        std::min(static_cast<double>(words[k]) * 0x1p-64, 0x1.fffffffffffffp-1);
    out[k] = canonical * 2.0 + -1.0;
  }
}

}  // namespace

void HostTensor::fill_random(uint64_t seed, int workers) {
  const int64_t chunks = (size_ + kRandomChunk - 1) / kRandomChunk;
  const element_access::ElemKind kind = element_access::elem_kind(dtype_);
  // uint8 is the storage of packed low-bit values: every byte pattern. Other integers stay small
  // (-8..7, unsigned 0..15) so they can serve as indices and products do not overflow.
  const bool bytes = dtype_ == DataType::u8();
  const int64_t lo = dtype_.is_uint() ? 0 : -8, hi = bytes ? 256 : dtype_.is_uint() ? 16 : 8;
  auto fill_chunk = [&](int64_t c) {
    std::mt19937_64 rng(chunk_seed(seed, c));
    const int64_t begin = c * kRandomChunk, end = std::min(size_, begin + kRandomChunk);
    if (dtype_.is_float()) {  // the draws of a row, then their bits (f16: in one pass)
      double draws[kDraws];
      uint16_t bits[kDraws];
      for (int64_t i = begin; i < end; i += kDraws) {
        const int64_t n = std::min(kDraws, end - i);
        uniform_draws(rng, draws, n);
        if (kind == element_access::ElemKind::kF16) {
          element_access::f16_bits_row(draws, n, bits);
          std::memcpy(data() + i * 2, bits, static_cast<size_t>(n) * 2);
        } else {
          for (int64_t k = 0; k < n; ++k) element_access::store_elem(kind, *this, i + k, draws[k]);
        }
      }
    } else if (dtype_.is_bool()) {
      for (int64_t i = begin; i < end; ++i) set(i, static_cast<double>(rng() & 1));
    } else if (bytes) {
      std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
      for (int64_t i = begin; i < end; ++i) data()[i] = static_cast<uint8_t>(dist(rng));
    } else if (kind == element_access::ElemKind::kI8) {  // set's bytes, without its switch
      std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
      for (int64_t i = begin; i < end; ++i)
        data()[i] = static_cast<uint8_t>(static_cast<int8_t>(dist(rng)));
    } else {
      std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
      for (int64_t i = begin; i < end; ++i) set(i, static_cast<double>(dist(rng)));
    }
  };
  // Each chunk writes its own elements (whole bytes: a chunk starts at a multiple of
  // kRandomChunk elements), and nothing in fill_chunk throws.
  parallel_for(chunks, fill_chunk, workers);
}

Tolerance Tolerance::for_dtype(DataType dtype) {
  if (!dtype.is_float()) return {0, 0};
  switch (dtype.code) {
    case TypeCode::kBFloat:
      return {2e-2, 2e-2};
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      return {1.25e-1, 1.25e-1};
    default:
      break;
  }
  if (dtype.bits == 16) return {1e-2, 1e-2};
  if (dtype.bits == 32) return {1e-3, 1e-3};
  return {1e-9, 1e-9};
}

namespace {

/// compare() over the elements [begin, end).
Comparison compare_range(const HostTensor& actual, const HostTensor& expected, Tolerance tol,
                         const HostTensor* bound, int64_t begin, int64_t end) {
  Comparison c;
  // An element with the same bits in both (same dtype) is equal to itself: with tolerances that
  // are not negative and no bound it passes with no error and changes nothing below, so runs of
  // such elements are skipped (a thread-level run compares every tensor with the tile level's,
  // mostly unchanged inputs).
  const bool same_type = actual.dtype() == expected.dtype() &&
                         actual.dtype().storage_bits() % 8 == 0 && actual.dtype().lanes == 1 &&
                         !bound && tol.atol >= 0 && tol.rtol >= 0;
  const int64_t width = actual.dtype().storage_bits() / 8;
  const element_access::ElemKind ka = element_access::elem_kind(actual.dtype()),
                                 ke = element_access::elem_kind(expected.dtype());
  constexpr int64_t kRun = 256;
  for (int64_t i = begin; i < end; ++i) {
    if (same_type) {
      if (i % kRun == 0 && i + kRun <= end &&
          std::memcmp(actual.data() + i * width, expected.data() + i * width, kRun * width) == 0) {
        i += kRun - 1;
        continue;
      }
      if (std::memcmp(actual.data() + i * width, expected.data() + i * width, width) == 0) continue;
    }
    double a = element_access::load_elem(ka, actual, i),
           e = element_access::load_elem(ke, expected, i);
    bool ok;
    double abs_err = 0, rel_err = 0;
    if (std::isnan(a) || std::isnan(e) || std::isinf(a) || std::isinf(e)) {
      // Not finite: equal only to itself (NaN to NaN, +inf to +inf, -inf to -inf).
      ok = (std::isnan(a) && std::isnan(e)) || a == e;
      abs_err = rel_err = ok ? 0 : INFINITY;
    } else {
      abs_err = std::fabs(a - e);
      rel_err = e != 0 ? abs_err / std::fabs(e) : (abs_err == 0 ? 0 : INFINITY);
      ok = abs_err <= tol.atol + (bound ? bound->at(i) : 0.0) + tol.rtol * std::fabs(e);
    }
    c.max_abs_err = std::max(c.max_abs_err, abs_err);
    if (std::isfinite(rel_err) || !ok) c.max_rel_err = std::max(c.max_rel_err, rel_err);
    if (!ok) {
      if (c.first_mismatch < 0) {
        c.first_mismatch = i;
        c.first_actual = a;
        c.first_expected = e;
      }
      ++c.mismatches;
      c.passed = false;
    }
  }
  return c;
}

}  // namespace

Comparison compare(const HostTensor& actual, const HostTensor& expected, Tolerance tol,
                   const HostTensor* bound) {
  internal_check(actual.size() == expected.size(), "compare: tensors of different sizes");
  internal_check(!bound || bound->size() == expected.size(), "compare: bound of another size");
  // Slices of kCompareSlice elements (a multiple of the 256-element runs) on every core, merged
  // in index order: the result does not depend on the number of threads.
  constexpr int64_t kCompareSlice = int64_t{1} << 22;
  const int64_t n = actual.size(), slices = (n + kCompareSlice - 1) / kCompareSlice;
  if (slices <= 1) return compare_range(actual, expected, tol, bound, 0, n);
  std::vector<Comparison> parts(static_cast<size_t>(slices));
  parallel_for(slices, [&](int64_t s) {  // compare_range throws nothing
    parts[static_cast<size_t>(s)] = compare_range(actual, expected, tol, bound, s * kCompareSlice,
                                                  std::min(n, (s + 1) * kCompareSlice));
  });
  Comparison c;
  for (const Comparison& p : parts) {
    c.passed = c.passed && p.passed;
    c.max_abs_err = std::max(c.max_abs_err, p.max_abs_err);
    c.max_rel_err = std::max(c.max_rel_err, p.max_rel_err);
    c.mismatches += p.mismatches;
    if (c.first_mismatch < 0 && p.first_mismatch >= 0) {
      c.first_mismatch = p.first_mismatch;
      c.first_actual = p.first_actual;
      c.first_expected = p.first_expected;
    }
  }
  return c;
}

std::string index_string(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

}  // namespace tessel
