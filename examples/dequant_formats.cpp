// Low-bit weight formats: IR decoding with shifts and masks, and an independent host decoding.
#include "examples/dequant_formats.h"

#include <cmath>

namespace tessel {

const std::array<double, 16> kNF4Table = {
    -1.0,
    -0.6961928009986877,
    -0.5250730514526367,
    -0.39491748809814453,
    -0.28444138169288635,
    -0.18477343022823334,
    -0.09105003625154495,
    0.0,
    0.07958029955625534,
    0.16093020141124725,
    0.24611230194568634,
    0.33791524171829224,
    0.44070982933044434,
    0.5626170039176941,
    0.7229568362236023,
    1.0,
};

int lowbit_bits(LowBit f) { return f == LowBit::kInt2 ? 2 : 4; }

bool lowbit_scaled(LowBit f) { return f == LowBit::kNF4 || f == LowBit::kFP4; }

std::string lowbit_name(LowBit f) {
  switch (f) {
    case LowBit::kUInt4:
      return "uint4";
    case LowBit::kInt4:
      return "int4";
    case LowBit::kNF4:
      return "nf4";
    case LowBit::kFP4:
      return "fp4";
    case LowBit::kInt2:
      return "int2";
  }
  return "?";
}

Expr decode_field(LowBit f, const Expr& byte, const Expr& pos) {
  const int bits = lowbit_bits(f);
  const int64_t mask = (int64_t{1} << bits) - 1, sign = int64_t{1} << (bits - 1);
  // The field as an unsigned int32: shift the byte right by pos * bits, keep the low bits.
  Expr field = (cast(DataType::i32(), byte) >> (pos * make_int(bits))) & make_int(mask);
  switch (f) {
    case LowBit::kUInt4:
    case LowBit::kNF4:
      return field;
    case LowBit::kInt4:
    case LowBit::kInt2:
      // Sign extension without overflow: flipping the sign bit and subtracting it maps
      // 0..2^(b-1)-1 to itself and 2^(b-1)..2^b-1 to -2^(b-1)..-1.
      return (field ^ make_int(sign)) - make_int(sign);
    case LowBit::kFP4: {
      // E2M1: s = bit 3, e = bits 2..1, m = bit 0. Twice the magnitude is m for e = 0
      // (subnormal: m * 0.5) and (2 + m) << (e - 1) otherwise ((1 + m / 2) * 2^(e - 1)).
      Expr s = field >> make_int(3), e = (field >> make_int(1)) & make_int(3);
      Expr m = field & make_int(1);
      Expr twice = if_then_else(e == make_int(0), m, (make_int(2) + m) << (e - make_int(1)));
      Expr mag = cast(DataType::f32(), twice) * make_const(DataType::f32(), 0.5);
      return if_then_else(s == make_int(1), -mag, mag);
    }
  }
  return field;
}

double host_decode(LowBit f, uint8_t byte, int pos) {
  const int bits = lowbit_bits(f);
  const unsigned code = (static_cast<unsigned>(byte) >> (pos * bits)) & ((1u << bits) - 1u);
  switch (f) {
    case LowBit::kUInt4:
      return code;
    case LowBit::kInt4:
      return code >= 8 ? static_cast<double>(code) - 16 : code;
    case LowBit::kInt2:
      return code >= 2 ? static_cast<double>(code) - 4 : code;
    case LowBit::kNF4:
      return kNF4Table[code];
    case LowBit::kFP4: {
      // OCP Microscaling spec, FP4 E2M1: exponent bias 1, no infinities or NaN; the values are
      // 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
      static const double kMagnitude[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
      double v = kMagnitude[code & 7u];
      return (code & 8u) ? -v : v;
    }
  }
  return 0;
}

}  // namespace tessel
