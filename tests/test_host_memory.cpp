// What a run holds in host memory: the tensors once, the reference's outputs, at thread level
// one copy of the written tensors, and nothing else; the tensors a kernel only reads are checked
// unchanged by fingerprints instead of a second copy.
#include <doctest/doctest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.h"
#include "tools/host_data.h"
#include "tools/tensor_fingerprint.h"

using namespace tessel;
using namespace tessel::cli;

namespace {

/// A float32 parameter of `fraction` of the host memory budget.
ParamInfo tensor(const std::string& name, double fraction, bool written) {
  const auto elements =
      static_cast<int64_t>(fraction * static_cast<double>(host_memory_budget()) / 4);
  return {"k", name, DataType::f32(), {elements}, written};
}

}  // namespace

TEST_SUITE("host memory") {
  TEST_CASE("a run holds its tensors once, the reference's outputs and one copy of the written") {
    // In fractions of the budget: input 0.6, output 0.1.
    std::vector<ParamInfo> small_out = {tensor("A", 0.6, false), tensor("C", 0.1, true)};
    // Tile level: 0.6 + 0.1 + the reference's C 0.1 = 0.8 (twice the tensors would be 1.4).
    CHECK(fits_host_memory(small_out, {"C"}, false, false));
    // Thread level, sampled blocks: + the tile level's copy of C = 0.9.
    CHECK(fits_host_memory(small_out, {"C"}, true, true));
    // An output of 0.15: 0.6 + 0.15 + 0.15 (the copy) = 0.9 with a sampled reference (it keeps
    // no output), 1.05 with the full one's 0.15.
    std::vector<ParamInfo> larger_out = {tensor("A", 0.6, false), tensor("C", 0.15, true)};
    CHECK(fits_host_memory(larger_out, {}, true, true));
    CHECK_FALSE(fits_host_memory(larger_out, {"C"}, true, true));
    // An error bound beside the output counts once more: 0.6 + 0.1 + 2 * 0.1 + 0.1 = 1.0 is
    // at the limit; with 0.12 it is over (0.6 + 4 * 0.12 = 1.08).
    std::vector<ParamInfo> bounded = {tensor("A", 0.6, false), tensor("C", 0.12, true)};
    CHECK_FALSE(fits_host_memory(bounded, {"C", "C"}, true, true));
    CHECK(fits_host_memory(bounded, {"C"}, true, true));  // 0.6 + 3 * 0.12 = 0.96
    // Every element's 24-byte shadow without a block sample: 0.7 of float32 elements is 4.2.
    CHECK_FALSE(fits_host_memory(small_out, {"C"}, true, false));
  }

  TEST_CASE("the refusal names the tensors and three quarters of the machine's memory") {
    // 2 x 1e6 x 1e6 fp16 elements, far beyond any machine.
    CliResult r = run_tessel({"run", "gemm", "-D", "M=1000000", "-D", "N=1000000"});
    CHECK(r.status == 1);
    CHECK(r.err.find("three quarters of this machine's memory") != std::string::npos);
    CHECK(r.err.find("with the reference's outputs") != std::string::npos);
  }

  TEST_CASE("a fingerprint finds the chunk of 4096 elements where a tensor changed") {
    HostTensor t(DataType::f16(), {3, 5000});
    t.fill_random(1);
    TensorFingerprint before = TensorFingerprint::of(t);
    CHECK(before.chunks.size() == 4);  // 15000 elements: 3 full chunks and 2712 more
    CHECK_FALSE(TensorFingerprint::of(t).first_change(before));
    t.set(9000, t.at(9000) + 1);  // chunk 2: [8192, 12288)
    CHECK(TensorFingerprint::of(t).first_change(before) == 8192);
    t.set(14999, t.at(14999) + 1);  // the last element; the first change is still chunk 2
    CHECK(TensorFingerprint::of(t).first_change(before) == 8192);

    // int4 packs two elements a byte; element 4097 shares its byte only with 4096.
    HostTensor packed(DataType::i4(), {9000});
    packed.fill_random(2);
    TensorFingerprint p = TensorFingerprint::of(packed);
    packed.set(4097, packed.at(4097) == 0 ? 1 : 0);
    CHECK(TensorFingerprint::of(packed).first_change(p) == 4096);
  }

  TEST_CASE("a fingerprint sees words swapped within a chunk and a change in its last bytes") {
    // 4096 f16 elements a chunk: 1024 whole 64-bit words; the tensor's 4099 elements leave a
    // second chunk of 3 halves, 6 bytes, shorter than a word.
    HostTensor t(DataType::f16(), {4099});
    t.fill_random(3);
    const TensorFingerprint before = TensorFingerprint::of(t);
    uint64_t w0, w1;  // swap words 0 and 1 (elements 0-3 and 4-7): the same sum, other order
    std::memcpy(&w0, t.data(), 8);
    std::memcpy(&w1, t.data() + 8, 8);
    REQUIRE(w0 != w1);
    std::memcpy(t.data(), &w1, 8);
    std::memcpy(t.data() + 8, &w0, 8);
    CHECK(TensorFingerprint::of(t).first_change(before) == 0);
    std::memcpy(t.data(), &w0, 8);
    std::memcpy(t.data() + 8, &w1, 8);
    CHECK_FALSE(TensorFingerprint::of(t).first_change(before));
    t.data()[8197] ^= 0x01;  // the last byte: element 4098's high byte
    CHECK(TensorFingerprint::of(t).first_change(before) == 4096);
  }

  TEST_CASE("a thread-level run checks every tensor against the tile level, inputs included") {
    CliResult r = run_tessel(
        {"run", "gemm", "-D", "M=128", "-D", "N=128", "-D", "K=64", "--level", "thread", "--json"});
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["tile"]["tensors"].size() == 3);
    // In the kernel's parameter order: A and B by fingerprint, C by value.
    CHECK(j["tile"]["tensors"][0]["name"] == "A");
    CHECK(j["tile"]["tensors"][1]["name"] == "B");
    CHECK(j["tile"]["tensors"][2]["name"] == "C");
    for (const auto& c : j["tile"]["tensors"]) CHECK(c["passed"] == true);
    CHECK(j["tile"]["matches"] == true);
  }
}
