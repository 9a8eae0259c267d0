// cuTensorMapEncodeTiled's arguments for a generated kernel's tensor map (see the header).
#include "codegen/tensor_map_encoding.h"

#include "core/tma_map.h"

namespace tessel {

namespace {

/// CUtensorMapDataType of an element type (bit patterns copied as unsigned integers where the
/// driver has no float type of that width: fp8), or -1.
int data_type_of(DataType t) {
  if (t.lanes != 1) return -1;
  switch (t.code) {
    case TypeCode::kFloat:
      return t.bits == 16 ? 6 : t.bits == 32 ? 7 : t.bits == 64 ? 8 : -1;
    case TypeCode::kBFloat:
      return 9;
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      return 0;
    case TypeCode::kInt:
      return t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 3 : t.bits == 64 ? 5 : -1;
    case TypeCode::kUInt:
      return t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 2 : t.bits == 64 ? 4 : -1;
    case TypeCode::kBool:
      return 0;
  }
  return -1;
}

}  // namespace

std::optional<TensorMapEncoding> encode_tensor_map(const std::string& name, DataType dtype,
                                                   const std::vector<int64_t>& shape,
                                                   const std::vector<int64_t>& box,
                                                   int swizzle_bytes, std::string* why) {
  auto fail = [&](const std::string& text) -> std::optional<TensorMapEncoding> {
    if (why) *why = "tensor map of '" + name + "': " + text;
    return std::nullopt;
  };
  TensorMapEncoding e;
  e.data_type = data_type_of(dtype);
  if (e.data_type < 0) return fail(dtype.name() + " has no TMA element type");
  if (shape.empty() || shape.size() > 5 || box.size() != shape.size()) {
    return fail("a tensor of " + std::to_string(shape.size()) + " dimensions with a box of " +
                std::to_string(box.size()) + "; TMA takes 1 to 5 dimensions, one box extent each");
  }
  if (!is_tma_swizzle(swizzle_bytes)) {
    return fail("swizzle " + std::to_string(swizzle_bytes) + " is not 0, 32, 64 or 128 bytes");
  }
  const int64_t esize = dtype.storage_bytes(1);
  const size_t rank = shape.size();
  e.rank = static_cast<uint32_t>(rank);
  e.swizzle = tma_swizzle_bits(swizzle_bytes);
  int64_t stride = esize;
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = rank - 1 - k;  // dimension k of the map is the tensor's d (innermost first)
    if (shape[d] < 1 || shape[d] > (int64_t{1} << 32)) {
      return fail("extent " + std::to_string(shape[d]) + " of dimension " + std::to_string(d) +
                  " is not 1 to 2^32");
    }
    if (box[d] < 1 || box[d] > 256) {
      return fail("box extent " + std::to_string(box[d]) + " of dimension " + std::to_string(d) +
                  " is not 1 to 256");
    }
    if (k > 0) {
      if (stride % 16 != 0 || stride >= (int64_t{1} << 40)) {
        return fail("the stride of dimension " + std::to_string(d) + " is " +
                    std::to_string(stride) +
                    " bytes; TMA needs a multiple of 16 bytes below 2^40 (pad the rows)");
      }
      e.global_strides.push_back(static_cast<uint64_t>(stride));
    }
    e.global_dim.push_back(static_cast<uint64_t>(shape[d]));
    e.box_dim.push_back(static_cast<uint32_t>(box[d]));
    e.element_strides.push_back(1);
    stride *= shape[d];
  }
  const int64_t inner = box.back() * esize;
  if (inner % 16 != 0) {
    return fail("the box's innermost extent is " + std::to_string(inner) +
                " bytes; TMA needs a multiple of 16");
  }
  if (swizzle_bytes != 0 && inner > swizzle_bytes) {
    return fail("the box's innermost extent is " + std::to_string(inner) +
                " bytes, more than the " + std::to_string(swizzle_bytes) + "-byte swizzle span");
  }
  return e;
}

}  // namespace tessel
