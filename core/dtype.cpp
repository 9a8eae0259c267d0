// Element types: parsing and naming, exact rounding of doubles to each format, and bit encodings.
#include "core/dtype.h"

#include <Eigen/Core>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace tessel {
namespace {

/// One spelling of a scalar type, for parse().
struct NamedType {
  std::string_view name;
  DataType type;
};

/// TileLang spellings first (accepted_names() lists exactly these), then the aliases.
constexpr int kTileLangNameCount = 15;
// clang-format off
constexpr std::array<NamedType, 30> kNames = {{
    {"float16", DataType::f16()},        {"float32", DataType::f32()},
    {"float64", DataType::f64()},        {"bfloat16", DataType::bf16()},
    {"float8_e4m3", DataType::e4m3()},   {"float8_e4m3fn", DataType::e4m3()},
    {"float8_e5m2", DataType::e5m2()},   {"int4", DataType::i4()},
    {"uint4", DataType::u4()},           {"int8", DataType::i8()},
    {"uint8", DataType::u8()},           {"int32", DataType::i32()},
    {"uint32", DataType::u32()},         {"int64", DataType::i64()},
    {"bool", DataType::boolean()},       {"f16", DataType::f16()},
    {"f32", DataType::f32()},            {"f64", DataType::f64()},
    {"bf16", DataType::bf16()},          {"e4m3", DataType::e4m3()},
    {"e5m2", DataType::e5m2()},          {"i4", DataType::i4()},
    {"u4", DataType::u4()},              {"i8", DataType::i8()},
    {"u8", DataType::u8()},              {"i32", DataType::i32()},
    {"u32", DataType::u32()},            {"i64", DataType::i64()},
    {"half", DataType::f16()},           {"float", DataType::f32()},
}};
// clang-format on

/// A small binary float format with an implicit leading bit and subnormals (the OCP FP8 formats).
/// `ieee_specials`: the top exponent field holds inf (mantissa 0) and NaNs, as in E5M2. Otherwise
/// (E4M3) the top exponent field holds finite values and only S.1111.111 is NaN.
struct SmallFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee_specials;

  int max_field() const { return (1 << exp_bits) - 1; }
  int min_exp() const { return 1 - bias; }
  double largest() const {
    if (ieee_specials) return std::ldexp(2.0 - std::ldexp(1.0, -man_bits), max_field() - 1 - bias);
    return std::ldexp(2.0 - std::ldexp(1.0, 1 - man_bits), max_field() - bias);
  }
  uint64_t nan_bits() const { return (uint64_t{1} << (exp_bits + man_bits)) - 1; }
};

constexpr SmallFloat kE4M3{4, 3, 7, false};
constexpr SmallFloat kE5M2{5, 2, 15, true};

SmallFloat small_float(DataType type) { return type.code == TypeCode::kE4M3 ? kE4M3 : kE5M2; }

/// Rounds to the nearest integer, ties to even, whatever the current floating-point rounding mode.
double round_half_even(double x) {
  double floor = std::floor(x);
  double diff = x - floor;
  if (diff > 0.5 || (diff == 0.5 && std::fmod(floor, 2.0) != 0.0)) floor += 1.0;
  return floor;
}

/// Rounds `value` to `fmt` (ties to even, subnormals included); out-of-range values and infinities
/// saturate to ±largest or become inf/NaN, per `overflow`.
double round_small_float(const SmallFloat& fmt, double value, Overflow overflow) {
  if (std::isnan(value)) return value;
  const double largest = fmt.largest();
  const double overflowed = overflow == Overflow::kSaturate ? largest
                            : fmt.ieee_specials ? std::numeric_limits<double>::infinity()
                                                : std::numeric_limits<double>::quiet_NaN();
  double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return std::copysign(overflowed, value);
  if (magnitude == 0.0) return value;
  int exp2 = 0;
  std::frexp(magnitude,
             &exp2);  // magnitude = f * 2^exp2 with f in [0.5, 1): leading bit 2^(exp2-1)
  // The spacing of representable values at this magnitude, with the exponent range unbounded above
  // (IEEE 754 decides overflow after rounding so), and fixed below at the subnormal spacing.
  int quantum_exp = std::max(exp2 - 1, fmt.min_exp()) - fmt.man_bits;
  double rounded = std::ldexp(round_half_even(std::ldexp(magnitude, -quantum_exp)), quantum_exp);
  if (rounded > largest) rounded = overflowed;
  return std::copysign(rounded, value);
}

uint64_t encode_small_float(const SmallFloat& fmt, double value, Overflow overflow) {
  double rounded = round_small_float(fmt, value, overflow);
  if (std::isnan(rounded)) return fmt.nan_bits();
  uint64_t sign = std::signbit(rounded) ? uint64_t{1} << (fmt.exp_bits + fmt.man_bits) : 0;
  double magnitude = std::fabs(rounded);
  if (std::isinf(magnitude)) return sign | (uint64_t(fmt.max_field()) << fmt.man_bits);
  if (magnitude == 0.0) return sign;
  int exp2 = 0;
  std::frexp(magnitude, &exp2);
  int exponent = exp2 - 1;
  if (exponent <
      fmt.min_exp()) {  // subnormal: exponent field 0, value = mantissa * 2^(min_exp-man)
    auto mantissa = uint64_t(std::ldexp(magnitude, fmt.man_bits - fmt.min_exp()));
    return sign | mantissa;
  }
  auto mantissa =
      uint64_t(std::ldexp(magnitude, fmt.man_bits - exponent)) & ((1u << fmt.man_bits) - 1);
  return sign | (uint64_t(exponent + fmt.bias) << fmt.man_bits) | mantissa;
}

double decode_small_float(const SmallFloat& fmt, uint64_t bits) {
  const uint64_t man_mask = (uint64_t{1} << fmt.man_bits) - 1;
  const bool negative = (bits >> (fmt.exp_bits + fmt.man_bits)) & 1;
  const int field = int((bits >> fmt.man_bits) & uint64_t(fmt.max_field()));
  const uint64_t mantissa = bits & man_mask;
  double magnitude = 0.0;
  if (fmt.ieee_specials && field == fmt.max_field()) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (!fmt.ieee_specials && field == fmt.max_field() && mantissa == man_mask) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (field == 0) {
    magnitude = std::ldexp(double(mantissa), fmt.min_exp() - fmt.man_bits);
  } else {
    magnitude = std::ldexp(double(mantissa | (man_mask + 1)), field - fmt.bias - fmt.man_bits);
  }
  return negative ? -magnitude : magnitude;
}

/// Narrows a double to float rounding to odd (truncate, then set the last bit if inexact). A later
/// round-to-nearest-even to a format with at least two fewer significand bits (f16: 11, bf16: 8,
/// float: 24) then gives the correctly rounded result, with none of the errors of double rounding.
float to_float_round_to_odd(double value) {
  float narrowed = static_cast<float>(value);
  if (std::isnan(value) || double(narrowed) == value) return narrowed;
  if (std::fabs(double(narrowed)) > std::fabs(value)) narrowed = std::nextafter(narrowed, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(narrowed) | 1u);
}

Eigen::half to_half(double value) { return Eigen::half(to_float_round_to_odd(value)); }
Eigen::bfloat16 to_bfloat16(double value) { return Eigen::bfloat16(to_float_round_to_odd(value)); }

/// `value` modulo 2^64 as a two's-complement int64 (value must be an integer; NaN gives 0).
int64_t wrap_double_to_int64(double value) {
  if (!std::isfinite(value)) return 0;
  double reduced = std::fmod(value, 0x1p64);  // exact; |reduced| < 2^64
  if (reduced >= 0x1p63) reduced -= 0x1p64;
  if (reduced < -0x1p63) reduced += 0x1p64;
  return static_cast<int64_t>(reduced);
}

void check_float_bits(DataType type) {
  internal_check(type.bits == 16 || type.bits == 32 || type.bits == 64,
                 "float DataType must have 16, 32 or 64 bits");
}

}  // namespace

std::optional<DataType> DataType::parse(std::string_view name) {
  int lanes = 1;
  // A vector suffix "x<lanes>": no scalar spelling contains an 'x'.
  if (auto x = name.rfind('x'); x != std::string_view::npos && x + 1 < name.size()) {
    lanes = 0;
    for (char c : name.substr(x + 1)) {
      if (c < '0' || c > '9' || lanes > 1'000'000) return std::nullopt;
      lanes = lanes * 10 + (c - '0');
    }
    if (lanes < 1) return std::nullopt;
    name = name.substr(0, x);
  }
  for (const NamedType& entry : kNames) {
    if (entry.name == name) return entry.type.with_lanes(lanes);
  }
  return std::nullopt;
}

std::string DataType::accepted_names() {
  std::string out;
  for (int i = 0; i < kTileLangNameCount; ++i) {
    if (i > 0) out += ", ";
    out += kNames[i].name;
  }
  return out + " (short forms f16, bf16, e4m3, i32, ... also accepted)";
}

std::string DataType::name() const {
  std::string base;
  switch (code) {
    case TypeCode::kInt:
      base = "int" + std::to_string(bits);
      break;
    case TypeCode::kUInt:
      base = "uint" + std::to_string(bits);
      break;
    case TypeCode::kFloat:
      base = "float" + std::to_string(bits);
      break;
    case TypeCode::kBFloat:
      base = "bfloat16";
      break;
    case TypeCode::kE4M3:
      base = "float8_e4m3";
      break;
    case TypeCode::kE5M2:
      base = "float8_e5m2";
      break;
    case TypeCode::kBool:
      base = "bool";
      break;
  }
  return lanes == 1 ? base : base + "x" + std::to_string(lanes);
}

std::string DataType::short_name() const {
  std::string base;
  switch (code) {
    case TypeCode::kInt:
      base = "i" + std::to_string(bits);
      break;
    case TypeCode::kUInt:
      base = "u" + std::to_string(bits);
      break;
    case TypeCode::kFloat:
      base = "f" + std::to_string(bits);
      break;
    case TypeCode::kBFloat:
      base = "bf16";
      break;
    case TypeCode::kE4M3:
      base = "e4m3";
      break;
    case TypeCode::kE5M2:
      base = "e5m2";
      break;
    case TypeCode::kBool:
      base = "bool";
      break;
  }
  return lanes == 1 ? base : base + "x" + std::to_string(lanes);
}

// Vector types round, encode and store lane by lane: these functions use the element type.

double round_to(DataType type, double value, Overflow overflow) {
  switch (type.code) {
    case TypeCode::kFloat:
      check_float_bits(type);
      if (type.bits == 64) return value;
      if (type.bits == 32) return static_cast<float>(value);
      return static_cast<double>(static_cast<float>(to_half(value)));
    case TypeCode::kBFloat:
      return static_cast<double>(static_cast<float>(to_bfloat16(value)));
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      return round_small_float(small_float(type), value, overflow);
    case TypeCode::kBool:
      return value != 0.0 ? 1.0 : 0.0;  // NaN is nonzero, as in C++: 1
    case TypeCode::kInt:
    case TypeCode::kUInt:
      // Round to the nearest integer (ties to even), then wrap modulo 2^bits; NaN and inf give 0.
      return static_cast<double>(wrap_int(type, wrap_double_to_int64(round_half_even(value))));
  }
  internal_error("round_to: unknown TypeCode");
}

int64_t wrap_int(DataType type, int64_t value) {
  if (type.is_bool()) return value != 0 ? 1 : 0;
  internal_check(type.is_int() || type.is_uint(), "wrap_int needs an integer DataType");
  if (type.bits >= 64) return value;
  const uint64_t mask = (uint64_t{1} << type.bits) - 1;
  uint64_t low = static_cast<uint64_t>(value) & mask;
  if (type.is_int() && (low >> (type.bits - 1)) != 0) low |= ~mask;  // sign-extend
  return static_cast<int64_t>(low);
}

uint64_t encode(DataType type, double value, Overflow overflow) {
  switch (type.code) {
    case TypeCode::kFloat:
      check_float_bits(type);
      if (type.bits == 64) return std::bit_cast<uint64_t>(value);
      if (type.bits == 32) return std::bit_cast<uint32_t>(static_cast<float>(value));
      return Eigen::numext::bit_cast<uint16_t>(to_half(value));
    case TypeCode::kBFloat:
      return Eigen::numext::bit_cast<uint16_t>(to_bfloat16(value));
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      return encode_small_float(small_float(type), value, overflow);
    case TypeCode::kBool:
      return round_to(type, value) != 0.0 ? 1 : 0;
    case TypeCode::kInt:
    case TypeCode::kUInt: {
      int64_t wrapped = wrap_double_to_int64(round_half_even(value));
      if (type.bits >= 64) return static_cast<uint64_t>(wrapped);
      return static_cast<uint64_t>(wrapped) & ((uint64_t{1} << type.bits) - 1);
    }
  }
  internal_error("encode: unknown TypeCode");
}

double decode(DataType type, uint64_t bits) {
  switch (type.code) {
    case TypeCode::kFloat:
      check_float_bits(type);
      if (type.bits == 64) return std::bit_cast<double>(bits);
      if (type.bits == 32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<uint16_t>(bits)));
    case TypeCode::kBFloat:
      return static_cast<float>(
          Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<uint16_t>(bits)));
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      return decode_small_float(small_float(type), bits & 0xFF);
    case TypeCode::kBool:
      return (bits & 0xFF) != 0 ? 1.0 : 0.0;
    case TypeCode::kInt:
    case TypeCode::kUInt:
      if (type.is_uint() && type.bits >= 64) return static_cast<double>(bits);
      return static_cast<double>(wrap_int(type, static_cast<int64_t>(bits)));
  }
  internal_error("decode: unknown TypeCode");
}

uint64_t load_bits(DataType type, const uint8_t* base, int64_t index) {
  internal_check(index >= 0, "load_bits: negative element index");
  const int bits = type.storage_bits();
  if (bits == 4) return (base[index / 2] >> (index % 2 * 4)) & 0xF;
  internal_check(bits % 8 == 0 && bits <= 64, "load_bits: unsupported element width");
  const int bytes = bits / 8;
  const uint8_t* p = base + index * bytes;
  uint64_t out = 0;
  for (int i = 0; i < bytes; ++i) out |= uint64_t{p[i]} << (8 * i);
  return out;
}

void store_bits(DataType type, uint8_t* base, int64_t index, uint64_t bits) {
  internal_check(index >= 0, "store_bits: negative element index");
  const int width = type.storage_bits();
  if (width == 4) {
    const int shift = index % 2 * 4;
    uint8_t& byte = base[index / 2];
    byte = static_cast<uint8_t>((byte & ~(0xF << shift)) | ((bits & 0xF) << shift));
    return;
  }
  internal_check(width % 8 == 0 && width <= 64, "store_bits: unsupported element width");
  const int bytes = width / 8;
  uint8_t* p = base + index * bytes;
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(bits >> (8 * i));
}

double max_value(DataType type) {
  switch (type.code) {
    case TypeCode::kFloat:
      check_float_bits(type);
      if (type.bits == 64) return std::numeric_limits<double>::max();
      if (type.bits == 32) return std::numeric_limits<float>::max();
      return static_cast<float>(std::numeric_limits<Eigen::half>::max());
    case TypeCode::kBFloat:
      return static_cast<float>(std::numeric_limits<Eigen::bfloat16>::max());
    case TypeCode::kE4M3:
    case TypeCode::kE5M2:
      return small_float(type).largest();
    case TypeCode::kBool:
      return 1.0;
    case TypeCode::kInt:
      return std::ldexp(1.0, type.bits - 1) - 1.0;  // i64: rounds to 2^63
    case TypeCode::kUInt:
      return std::ldexp(1.0, type.bits) - 1.0;
  }
  internal_error("max_value: unknown TypeCode");
}

double min_value(DataType type) {
  switch (type.code) {
    case TypeCode::kBool:
    case TypeCode::kUInt:
      return 0.0;
    case TypeCode::kInt:
      return -std::ldexp(1.0, type.bits - 1);
    default:
      return -max_value(type);  // float formats are sign-magnitude
  }
}

}  // namespace tessel
