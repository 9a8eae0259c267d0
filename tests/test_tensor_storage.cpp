// Tensor bytes: small ones on the heap, large ones in a memory file whose shared copy
// (HostTensor::snapshot) is copy-on-write — equal bytes, and writes on either side stay there.
#include <doctest/doctest.h>

#include <cstring>

#include "interp/host_tensor.h"
#include "interp/tensor_storage.h"

using namespace tessel;

namespace {

constexpr int64_t kLarge = int64_t{80} << 20;  // above TensorStorage::kMappedBytes (64 MiB)

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.dtype().storage_bytes(a.size()))) ==
             0;
}

}  // namespace

TEST_SUITE("tensor storage") {
  TEST_CASE("only a large storage can share its pages, and only until it has shared them") {
    CHECK_FALSE(TensorStorage(4096).can_share());
    TensorStorage large(static_cast<size_t>(kLarge));
#ifdef __linux__
    REQUIRE(large.can_share());
    TensorStorage copy = large.share();
    CHECK(copy.size() == large.size());
    CHECK_FALSE(large.can_share());
    CHECK_FALSE(copy.can_share());
#else
    CHECK_FALSE(large.can_share());
#endif
  }

  TEST_CASE("a snapshot holds the same bytes, and a write on either side stays on that side") {
    HostTensor t(DataType::u8(), {kLarge});
    t.fill_random(5);
    const int64_t near = 3, far = kLarge - 2;  // the first and the last page
    const double near_was = t.at(near), far_was = t.at(far);
    HostTensor copy = t.snapshot();
    CHECK(same_bytes(copy, t));
    CHECK(t.at(near) == near_was);  // the original's bytes moved, unchanged
    copy.set(near, near_was == 7.0 ? 8.0 : 7.0);
    t.set(far, far_was == 9.0 ? 10.0 : 9.0);
    CHECK(t.at(near) == near_was);
    CHECK(copy.at(near) != near_was);
    CHECK(copy.at(far) == far_was);
    CHECK(t.at(far) != far_was);
    // A second snapshot of either copies every byte: equal, and independent too.
    HostTensor again = copy.snapshot();
    CHECK(same_bytes(again, copy));
    again.set(far, 1.0);
    CHECK(copy.at(far) == far_was);
  }

  TEST_CASE("a small tensor's snapshot is a plain copy") {
    HostTensor t(DataType::f32(), {16});
    t.fill_random(2);
    HostTensor copy = t.snapshot();
    CHECK(same_bytes(copy, t));
    copy.set(0, 0.5);
    CHECK(t.at(0) != 0.5);
  }

  TEST_CASE("a moved storage leaves an empty one behind, and owns the bytes alone") {
    TensorStorage a(static_cast<size_t>(kLarge));
    a.data()[0] = 42;
    TensorStorage b = std::move(a);
    CHECK(a.data() == nullptr);
    CHECK(a.size() == 0);
    CHECK_FALSE(a.can_share());
    CHECK(b.data()[0] == 42);
    a = std::move(b);
    CHECK(a.data()[0] == 42);
  }
}
