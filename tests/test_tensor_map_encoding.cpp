// The host's cuTensorMapEncodeTiled arguments for a generated kernel's TMA tensor maps
// (codegen/tensor_map_encoding.h), against values derived by hand from the CUDA driver API's
// rules; and the GPU runner's TMA path, skipped with its reason where there is no GPU.
#include <doctest/doctest.h>

#include "codegen/gpu_runner.h"
#include "codegen/tensor_map_encoding.h"

using namespace tessel;

TEST_SUITE("tensor map encoding") {
  TEST_CASE("a 2-d f16 tensor with a 64 x 64 box and the 128B swizzle") {
    // A (256, 512) f16: dimension 0 of the map is the contiguous K = 512; dimension 1 is M = 256
    // with a row stride of 512 * 2 = 1024 bytes. Box (64, 64) innermost first is (64, 64); its
    // rows are 64 * 2 = 128 bytes, exactly the 128B span (CU_TENSOR_MAP_SWIZZLE_128B = 3).
    std::string why;
    auto e = encode_tensor_map("A", DataType::f16(), {256, 512}, {64, 64}, 128, &why);
    REQUIRE_MESSAGE(e, why);
    CHECK(e->data_type == 6);  // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    CHECK(e->rank == 2);
    CHECK(e->global_dim == std::vector<uint64_t>{512, 256});
    CHECK(e->global_strides == std::vector<uint64_t>{1024});
    CHECK(e->box_dim == std::vector<uint32_t>{64, 64});
    CHECK(e->element_strides == std::vector<uint32_t>{1, 1});
    CHECK(e->swizzle == 3);
    CHECK(e->interleave == 0);
    CHECK(e->oob_fill == 0);
  }

  TEST_CASE("a 3-d f32 tensor: strides of every outer dimension, innermost first") {
    // (4, 48, 40) f32: strides of dimension 1 (48 rows of 40 * 4 = 160 bytes) and dimension 2
    // (48 * 160 = 7680 bytes); box (1, 32, 8): innermost first (8, 32, 1), rows of 32 bytes.
    std::string why;
    auto e = encode_tensor_map("X", DataType::f32(), {4, 48, 40}, {1, 32, 8}, 0, &why);
    REQUIRE_MESSAGE(e, why);
    CHECK(e->data_type == 7);  // FLOAT32
    CHECK(e->global_dim == std::vector<uint64_t>{40, 48, 4});
    CHECK(e->global_strides == std::vector<uint64_t>{160, 7680});
    CHECK(e->box_dim == std::vector<uint32_t>{8, 32, 1});
    CHECK(e->swizzle == 0);
  }

  TEST_CASE("element types map to the driver's enum") {
    std::string why;
    auto of = [&](DataType t) { return encode_tensor_map("T", t, {16, 64}, {16, 16}, 0, &why); };
    CHECK(of(DataType::bf16())->data_type == 9);
    CHECK(of(DataType::i32())->data_type == 3);
    CHECK(of(DataType::u32())->data_type == 2);
    CHECK(of(DataType::e4m3())->data_type == 0);  // bytes: UINT8
    CHECK_FALSE(of(DataType::i4()));
  }

  TEST_CASE("what the driver refuses is refused with the rule") {
    std::string why;
    // Rows of 100 f16 = 200 bytes: not a multiple of 16.
    CHECK_FALSE(encode_tensor_map("A", DataType::f16(), {64, 100}, {16, 16}, 0, &why));
    CHECK(why.find("tensor map of 'A': the stride of dimension 0 is 200 bytes") == 0);
    // A 64 x 128 f16 box has 256-byte rows: more than the 128B span.
    CHECK_FALSE(encode_tensor_map("A", DataType::f16(), {64, 128}, {64, 128}, 128, &why));
    CHECK(why.find("more than the 128-byte swizzle span") != std::string::npos);
    CHECK_FALSE(encode_tensor_map("A", DataType::f16(), {64, 512}, {300, 16}, 0, &why));
    CHECK(why.find("box extent 300 of dimension 0 is not 1 to 256") != std::string::npos);
  }

  TEST_CASE("the GPU runner reaches the driver for a TMA kernel, or says why not") {
    // Without a GPU the runner stops at the driver (no libcuda or no device); a refused map is
    // reported before that.
    EmittedSource src;
    src.entry = "k";
    src.arguments = {"A"};
    src.tensor_maps.push_back({"tmap_A_16x16", "A", {16, 16}, 0, DataType::f16()});
    std::vector<uint8_t> bytes(64 * 100 * 2);
    std::vector<LaunchArg> args = {{bytes.data(), bytes.size(), false, 0, {64, 100}}};
    GpuRunResult r = run_on_cuda(src, GpuLaunch{{{1}}, 0, 1, false}, args);
    CHECK_FALSE(r.ran);
    CHECK(r.unavailable.find("the stride of dimension 0 is 200 bytes") != std::string::npos);
    args[0].shape = {64, 64};
    r = run_on_cuda(src, GpuLaunch{{{1}}, 0, 1, false}, args);
    if (!r.ran) MESSAGE("skipped the device run: " << r.unavailable);
    CHECK(r.unavailable.find("stride") == std::string::npos);
  }
}
