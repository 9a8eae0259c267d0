// TMA tensor-map facts: the swizzle modes' address functions (see core/tma_map.h).
#include "core/tma_map.h"

#include "core/error.h"

namespace tessel {

bool is_tma_swizzle(int64_t swizzle_bytes) {
  return swizzle_bytes == 0 || swizzle_bytes == 32 || swizzle_bytes == 64 || swizzle_bytes == 128;
}

int tma_swizzle_bits(int swizzle_bytes) {
  switch (swizzle_bytes) {
    case 0:
      return 0;
    case 32:
      return 1;
    case 64:
      return 2;
    case 128:
      return 3;
    default:
      internal_error("TMA swizzle of " + std::to_string(swizzle_bytes) + " bytes");
  }
}

int64_t tma_swizzle_byte(int64_t byte, int swizzle_bytes) {
  const int64_t mask = (int64_t{1} << tma_swizzle_bits(swizzle_bytes)) - 1;
  return byte ^ (((byte >> 7) & mask) << 4);
}

std::string tma_swizzle_name(int swizzle_bytes) {
  return swizzle_bytes == 0 ? "CU_TENSOR_MAP_SWIZZLE_NONE"
                            : "CU_TENSOR_MAP_SWIZZLE_" + std::to_string(swizzle_bytes) + "B";
}

}  // namespace tessel
