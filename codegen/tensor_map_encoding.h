// The arguments the host passes to the CUDA driver's cuTensorMapEncodeTiled for one TMA tensor
// map of a generated kernel (codegen/emit.h TensorMapArg), computed from the tensor's element
// type and shape, the box and the swizzle mode. A pure function, so its numbers are tested
// without a GPU; the GPU runner (gpu_runner.cpp) passes them to the driver as they are.
//
// Facts from the CUDA Driver API reference, "cuTensorMapEncodeTiled":
//   - dimension 0 is the innermost (contiguous) one: globalDim, boxDim and elementStrides list
//     the tensor's dimensions innermost first; globalStrides has rank - 1 entries, the byte
//     strides of dimensions 1 .. rank-1, each a multiple of 16 and below 2^40;
//   - globalDim[i] is 1 to 2^32, boxDim[i] 1 to 256, boxDim[0] * element size a multiple of 16
//     bytes (no interleave) and, with a swizzle, at most the swizzle's span;
//   - enums: CUtensorMapDataType UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5,
//     FLOAT16 6, FLOAT32 7, FLOAT64 8, BFLOAT16 9; CUtensorMapSwizzle NONE 0, 32B 1, 64B 2,
//     128B 3; CU_TENSOR_MAP_INTERLEAVE_NONE 0; CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3;
//     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0 (elements past the edges read as zeros).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tessel {

struct TensorMapEncoding {
  int data_type = 0;  ///< CUtensorMapDataType
  uint32_t rank = 0;
  std::vector<uint64_t> global_dim;       ///< innermost first
  std::vector<uint64_t> global_strides;   ///< bytes, of dimensions 1 .. rank-1
  std::vector<uint32_t> box_dim;          ///< innermost first
  std::vector<uint32_t> element_strides;  ///< innermost first (all 1: every element)
  int interleave = 0;                     ///< CU_TENSOR_MAP_INTERLEAVE_NONE
  int swizzle = 0;                        ///< CUtensorMapSwizzle
  int l2_promotion = 3;                   ///< CU_TENSOR_MAP_L2_PROMOTION_L2_256B
  int oob_fill = 0;                       ///< CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (zeros)
};

/// The encoding of a tensor map over a contiguous row-major tensor of `dtype` and `shape`
/// (outermost first) with box `box` (outermost first, one extent per dimension) and swizzle
/// `swizzle_bytes` (0, 32, 64, 128), or nullopt with `why` set when the driver would refuse it
/// (names the tensor `name`, the dimension and the rule).
std::optional<TensorMapEncoding> encode_tensor_map(const std::string& name, DataType dtype,
                                                   const std::vector<int64_t>& shape,
                                                   const std::vector<int64_t>& box,
                                                   int swizzle_bytes, std::string* why);

}  // namespace tessel
