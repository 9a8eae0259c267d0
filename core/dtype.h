// Element types of tensors and expressions: names, bit widths, and exact value conversion.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessel {

/// The kind of number a DataType holds.
enum class TypeCode : uint8_t {
  kInt,     ///< two's-complement signed integer (i4, i8, i32, i64)
  kUInt,    ///< unsigned integer (u4, u8, u32)
  kFloat,   ///< IEEE binary float (f16, f32, f64)
  kBFloat,  ///< bfloat16
  kE4M3,    ///< OCP FP8 E4M3 (no infinities, one NaN pattern per sign)
  kE5M2,    ///< OCP FP8 E5M2 (IEEE-like: infinities and NaNs)
  kBool,
};

/// An element type: code, bits per lane and lane count (vectors have lanes > 1).
/// 4-bit types are packed two per byte in memory, the even element in the low nibble.
struct DataType {
  TypeCode code = TypeCode::kInt;
  int bits = 32;
  int lanes = 1;

  static constexpr DataType f64() { return {TypeCode::kFloat, 64, 1}; }
  static constexpr DataType f32() { return {TypeCode::kFloat, 32, 1}; }
  static constexpr DataType f16() { return {TypeCode::kFloat, 16, 1}; }
  static constexpr DataType bf16() { return {TypeCode::kBFloat, 16, 1}; }
  static constexpr DataType e4m3() { return {TypeCode::kE4M3, 8, 1}; }
  static constexpr DataType e5m2() { return {TypeCode::kE5M2, 8, 1}; }
  static constexpr DataType i4() { return {TypeCode::kInt, 4, 1}; }
  static constexpr DataType u4() { return {TypeCode::kUInt, 4, 1}; }
  static constexpr DataType i8() { return {TypeCode::kInt, 8, 1}; }
  static constexpr DataType u8() { return {TypeCode::kUInt, 8, 1}; }
  static constexpr DataType i32() { return {TypeCode::kInt, 32, 1}; }
  static constexpr DataType u32() { return {TypeCode::kUInt, 32, 1}; }
  static constexpr DataType i64() { return {TypeCode::kInt, 64, 1}; }
  static constexpr DataType boolean() { return {TypeCode::kBool, 1, 1}; }

  /// Parses "float16", "f16", "half", "bfloat16", "float8_e4m3", "int4", "uint8", "bool", ...
  static std::optional<DataType> parse(std::string_view name);
  /// The list of accepted names, for error messages.
  static std::string accepted_names();

  /// TileLang's spelling: "float16", "bfloat16", "float8_e4m3", "int32", "uint4", "bool".
  std::string name() const;
  /// Short spelling used in layout specs and tables: "f16", "bf16", "e4m3", "i32".
  std::string short_name() const;

  bool is_float() const {
    return code == TypeCode::kFloat || code == TypeCode::kBFloat || code == TypeCode::kE4M3 ||
           code == TypeCode::kE5M2;
  }
  bool is_int() const { return code == TypeCode::kInt; }
  bool is_uint() const { return code == TypeCode::kUInt; }
  bool is_bool() const { return code == TypeCode::kBool; }
  /// Integers and bool: values evaluated exactly as int64.
  bool is_integral() const { return !is_float(); }
  /// Bits one element occupies in memory (bool takes a byte).
  int storage_bits() const { return code == TypeCode::kBool ? 8 : bits; }
  /// Bytes for `count` elements (4-bit types: two per byte, rounded up).
  int64_t storage_bytes(int64_t count) const { return (count * storage_bits() * lanes + 7) / 8; }
  DataType with_lanes(int n) const { return {code, bits, n}; }
  DataType element_of() const { return {code, bits, 1}; }

  friend bool operator==(const DataType&, const DataType&) = default;
};

/// Rounding behaviour when a value does not fit a floating-point format's finite range.
enum class Overflow { kSaturate, kNonSaturate };

/// Rounds a real number to the nearest value `type` can hold (round to nearest, ties to even, for
/// floats; wrap-around for integers; nonzero -> 1 for bool). fp8 follows the OCP OFP8 spec;
/// kSaturate clamps out-of-range values and infinities to the largest finite value (as CUDA's
/// __NV_SATFINITE does), kNonSaturate gives NaN (E4M3) or infinity (E5M2).
double round_to(DataType type, double value, Overflow overflow = Overflow::kSaturate);

/// Wraps an integer into `type`'s range (two's complement for signed types).
int64_t wrap_int(DataType type, int64_t value);

/// The bit pattern of `value` (already representable or not: it is rounded) in `type`'s format,
/// in the low storage_bits() bits of the result.
uint64_t encode(DataType type, double value, Overflow overflow = Overflow::kSaturate);
/// The value of bit pattern `bits` (low storage_bits() bits) of `type`.
double decode(DataType type, uint64_t bits);

/// Reads element `index` of an array of `type` stored packed at `base` (4-bit types: two a byte).
uint64_t load_bits(DataType type, const uint8_t* base, int64_t index);
/// Writes element `index` of an array of `type` stored packed at `base`.
void store_bits(DataType type, uint8_t* base, int64_t index, uint64_t bits);

/// The largest finite value of a float type, or the largest value of an integer type.
double max_value(DataType type);
/// The smallest (most negative) finite value.
double min_value(DataType type);

}  // namespace tessel
