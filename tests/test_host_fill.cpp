// HostTensor::fill_random: chunked generators filled on several threads give the same bytes for
// every worker count and every run, and a tensor of one chunk is std::mt19937_64(seed)'s sequence.
// A copy (made on every core) holds the same bytes.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "interp/host_tensor.h"

using namespace tessel;

namespace {

/// A tensor of `dtype` with two and a half chunks, filled from `seed` by `workers` threads.
HostTensor filled(DataType dtype, uint64_t seed, int workers) {
  HostTensor t(dtype, {HostTensor::kRandomChunk * 5 / 2});
  t.fill_random(seed, workers);
  return t;
}

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.size() == b.size() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.dtype().storage_bytes(a.size())) == 0;
}

}  // namespace

TEST_SUITE("host tensor fill") {
  TEST_CASE("every worker count fills the same bytes, run after run") {
    for (DataType dtype : {DataType::u8(), DataType::f16(), DataType::f32(), DataType::i32()}) {
      INFO(dtype.name());
      HostTensor one = filled(dtype, 7, 1);
      CHECK(same_bytes(one, filled(dtype, 7, 2)));
      CHECK(same_bytes(one, filled(dtype, 7, 3)));
      CHECK(same_bytes(one, filled(dtype, 7, 0)));  // one worker per core
      CHECK(same_bytes(one, filled(dtype, 7, 2)));
      CHECK_FALSE(same_bytes(one, filled(dtype, 8, 2)));  // another seed, other values
    }
  }

  TEST_CASE("each chunk draws its own values: the second chunk does not repeat the first") {
    HostTensor t = filled(DataType::u8(), 7, 2);
    const int64_t n = HostTensor::kRandomChunk;
    CHECK(std::memcmp(t.data(), t.data() + n, static_cast<size_t>(n)) != 0);
    CHECK(std::memcmp(t.data() + n, t.data() + 2 * n, static_cast<size_t>(n / 2)) != 0);
  }

  TEST_CASE("a tensor of one chunk holds the values of std::mt19937_64 seeded with the seed") {
    // The expected values come straight from the standard library: a uint8 tensor is uniform
    // over [0, 256), a float32 one uniform over [-1, 1) rounded to float.
    HostTensor bytes(DataType::u8(), {1000}), floats(DataType::f32(), {1000});
    bytes.fill_random(42, 2);
    floats.fill_random(42, 2);
    std::mt19937_64 rb(42), rf(42);
    std::uniform_int_distribution<int64_t> byte(0, 255);
    std::uniform_real_distribution<double> real(-1.0, 1.0);
    int64_t bad_bytes = 0, bad_floats = 0;
    for (int64_t i = 0; i < 1000; ++i) {
      bad_bytes += bytes.at(i) != static_cast<double>(byte(rb));
      bad_floats += floats.at(i) != static_cast<double>(static_cast<float>(real(rf)));
    }
    CHECK(bad_bytes == 0);
    CHECK(bad_floats == 0);

    // A float16 one: the same draws rounded to half (round_to, not the fill's row rounding), over
    // 2500 elements (the fill converts rows of 1024 draws at a time: two whole rows and a part).
    HostTensor halves(DataType::f16(), {2500});
    halves.fill_random(42, 2);
    std::mt19937_64 rh(42);
    int64_t bad_halves = 0;
    for (int64_t i = 0; i < 2500; ++i)
      bad_halves += halves.at(i) != round_to(DataType::f16(), real(rh));
    CHECK(bad_halves == 0);

    // An int8 one: uniform over [-8, 8) (small enough to index with), as the standard library
    // draws it.
    HostTensor small(DataType::i8(), {1000});
    small.fill_random(42, 2);
    std::mt19937_64 rs(42);
    std::uniform_int_distribution<int64_t> signed_small(-8, 7);
    int64_t bad_small = 0;
    for (int64_t i = 0; i < 1000; ++i)
      bad_small += small.at(i) != static_cast<double>(signed_small(rs));
    CHECK(bad_small == 0);
  }

  TEST_CASE("a copy holds the same bytes, and writes to it leave the original unchanged") {
    // 80 MiB: the copy is made in two slices (64 MiB each); `far` lies in the second.
    HostTensor t(DataType::u8(), {int64_t{80} << 20});
    t.fill_random(3);
    HostTensor copy = t;
    CHECK(same_bytes(copy, t));
    const int64_t far = (int64_t{64} << 20) + 5;
    const double was = t.at(far);
    copy.set(far, was == 7.0 ? 8.0 : 7.0);
    CHECK(t.at(far) == was);
    CHECK(copy.at(far) != was);
    HostTensor assigned(DataType::f32(), {2});
    assigned = t;
    CHECK(same_bytes(assigned, t));
  }

  TEST_CASE("a sub-byte dtype fills whole bytes per chunk: workers agree on every element") {
    // int4 packs two elements per byte; a chunk boundary in the middle of a byte would let two
    // workers write one byte at once.
    DataType int4 = DataType::i4();
    HostTensor one = filled(int4, 3, 1), two = filled(int4, 3, 2);
    CHECK(same_bytes(one, two));
    int64_t out_of_range = 0;
    for (int64_t i = 0; i < two.size(); i += 4099) out_of_range += two.at(i) < -8 || two.at(i) > 7;
    CHECK(out_of_range == 0);
  }
}
