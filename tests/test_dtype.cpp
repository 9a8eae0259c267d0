// Tests of core/dtype: names, rounding to each format, bit encodings, packed storage and ranges.
// Expected bit patterns are worked out by hand from the published formats in the comments.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/dtype.h"

using namespace tessel;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<DataType> kAllTypes = {
    DataType::f64(),  DataType::f32(), DataType::f16(), DataType::bf16(),   DataType::e4m3(),
    DataType::e5m2(), DataType::i4(),  DataType::u4(),  DataType::i8(),     DataType::u8(),
    DataType::i32(),  DataType::u32(), DataType::i64(), DataType::boolean()};

}  // namespace

TEST_SUITE("dtype names") {
  TEST_CASE("every type's TileLang name parses back to the same type") {
    for (DataType t : kAllTypes) {
      CAPTURE(t.name());
      CHECK(DataType::parse(t.name()) == t);
    }
  }

  TEST_CASE("every type's short name parses back to the same type") {
    for (DataType t : kAllTypes) {
      CAPTURE(t.short_name());
      CHECK(DataType::parse(t.short_name()) == t);
    }
  }

  TEST_CASE("TileLang names are spelled as TileLang spells them") {
    CHECK(DataType::f16().name() == "float16");
    CHECK(DataType::bf16().name() == "bfloat16");
    CHECK(DataType::e4m3().name() == "float8_e4m3");
    CHECK(DataType::e5m2().name() == "float8_e5m2");
    CHECK(DataType::u4().name() == "uint4");
    CHECK(DataType::i64().name() == "int64");
    CHECK(DataType::boolean().name() == "bool");
  }

  TEST_CASE("short names are spelled f16, bf16, e4m3, i32") {
    CHECK(DataType::f16().short_name() == "f16");
    CHECK(DataType::bf16().short_name() == "bf16");
    CHECK(DataType::e4m3().short_name() == "e4m3");
    CHECK(DataType::e5m2().short_name() == "e5m2");
    CHECK(DataType::i32().short_name() == "i32");
    CHECK(DataType::u4().short_name() == "u4");
  }

  TEST_CASE("aliases half, float and float8_e4m3fn parse") {
    CHECK(DataType::parse("half") == DataType::f16());
    CHECK(DataType::parse("float") == DataType::f32());
    CHECK(DataType::parse("float8_e4m3fn") == DataType::e4m3());
  }

  TEST_CASE("vector names append x and the lane count and parse back") {
    DataType v = DataType::f16().with_lanes(4);
    CHECK(v.name() == "float16x4");
    CHECK(v.short_name() == "f16x4");
    CHECK(DataType::parse("float16x4") == v);
    CHECK(DataType::parse("i8x16") == DataType::i8().with_lanes(16));
  }

  TEST_CASE("unknown names give nullopt") {
    for (const char* bad :
         {"", "float128", "int16", "F16", "fp16", "float16x", "float16x0", "x4"}) {
      CAPTURE(bad);
      CHECK_FALSE(DataType::parse(bad).has_value());
    }
  }

  TEST_CASE("accepted_names lists the TileLang spellings") {
    std::string names = DataType::accepted_names();
    for (const char* n :
         {"float16", "bfloat16", "float8_e4m3", "float8_e5m2", "int4", "uint32", "bool"}) {
      CAPTURE(n);
      CHECK(names.find(n) != std::string::npos);
    }
  }
}

TEST_SUITE("dtype f16 bf16 f32 f64") {
  TEST_CASE("f16 encodes 1, -2, 65504 and 2^-24 as the IEEE binary16 patterns") {
    // binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
    CHECK(encode(DataType::f16(), 1.0) == 0x3C00);                   // 0 01111 0000000000
    CHECK(encode(DataType::f16(), -2.0) == 0xC000);                  // 1 10000 0000000000
    CHECK(encode(DataType::f16(), 65504.0) == 0x7BFF);               // (2-2^-10)*2^15: 0 11110 1..1
    CHECK(encode(DataType::f16(), std::ldexp(1.0, -24)) == 0x0001);  // 2^-14 * 2^-10, subnormal
  }

  TEST_CASE("f16 decodes its patterns back to the values") {
    CHECK(decode(DataType::f16(), 0x3C00) == 1.0);
    CHECK(decode(DataType::f16(), 0xC000) == -2.0);
    CHECK(decode(DataType::f16(), 0x7BFF) == 65504.0);
    CHECK(decode(DataType::f16(), 0x0001) == std::ldexp(1.0, -24));
    CHECK(decode(DataType::f16(), 0x7C00) == kInf);
  }

  TEST_CASE("f16 rounds 65520, the tie above 65504, to infinity") {
    // 65504 has an odd mantissa (all ones); the other neighbour 65536 = 2^16 is even, and
    // overflows.
    CHECK(encode(DataType::f16(), 65520.0) == 0x7C00);
    CHECK(round_to(DataType::f16(), 65519.0) == 65504.0);
  }

  TEST_CASE("f16 rounding from double has no double-rounding error") {
    // 1 + 2^-11 + 2^-40 lies just above the midpoint of 1 and 1 + 2^-10, so it rounds up to
    // 0x3C01. Rounding to float first would drop 2^-40 and leave a tie that rounds to 1.0.
    double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    CHECK(encode(DataType::f16(), x) == 0x3C01);
    CHECK(round_to(DataType::f16(), x) == 1.0 + std::ldexp(1.0, -10));
  }

  TEST_CASE("bf16 encodes 1.0 as 0x3F80") {
    // bfloat16: 1 sign, 8 exponent (bias 127), 7 mantissa bits: 0 01111111 0000000.
    CHECK(encode(DataType::bf16(), 1.0) == 0x3F80);
    CHECK(decode(DataType::bf16(), 0x3F80) == 1.0);
  }

  TEST_CASE("bf16 rounds ties to the even mantissa") {
    // Spacing at 1 is 2^-7. 1 + 2^-8 is halfway between 1 (mantissa 0, even) and 1 + 2^-7 (odd).
    CHECK(encode(DataType::bf16(), 1.0 + std::ldexp(1.0, -8)) == 0x3F80);
    // 1 + 3*2^-8 is halfway between 1 + 2^-7 (mantissa 1) and 1 + 2^-6 (mantissa 2, even).
    CHECK(encode(DataType::bf16(), 1.0 + 3 * std::ldexp(1.0, -8)) == 0x3F82);
  }

  TEST_CASE("f32 rounds through float and encodes its IEEE bits") {
    CHECK(encode(DataType::f32(), 1.0) == 0x3F800000);
    // 0.1 = 1.6 * 2^-4: exponent 123 = 0x7B; 0.6 = 0.1001 1001 ... in binary, 23 bits
    // 10011001100110011001100 followed by 1100... round up to ...1101: 0x4CCCCD.
    CHECK(encode(DataType::f32(), 0.1) == 0x3DCCCCCD);
    CHECK(round_to(DataType::f32(), 0.1) == static_cast<double>(0.1f));
  }

  TEST_CASE("f64 keeps values and encodes IEEE binary64 bits") {
    CHECK(round_to(DataType::f64(), 0.1) == 0.1);
    CHECK(encode(DataType::f64(), 1.0) == 0x3FF0000000000000ull);
    CHECK(decode(DataType::f64(), 0xC000000000000000ull) == -2.0);
  }
}

TEST_SUITE("dtype e4m3") {
  // OCP OFP8 E4M3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; S.1111.111 is NaN, no infinity.
  TEST_CASE("e4m3 encodes 1, 448, min normal and min subnormal") {
    CHECK(encode(DataType::e4m3(), 1.0) == 0x38);                  // 0 0111 000
    CHECK(encode(DataType::e4m3(), 448.0) == 0x7E);                // 1.75 * 2^8: 0 1111 110
    CHECK(encode(DataType::e4m3(), -448.0) == 0xFE);               // sign bit set
    CHECK(encode(DataType::e4m3(), std::ldexp(1.0, -6)) == 0x08);  // 0 0001 000
    CHECK(encode(DataType::e4m3(), std::ldexp(1.0, -9)) == 0x01);  // 2^-6 * 2^-3: 0 0000 001
  }

  TEST_CASE("e4m3 decodes 0x7F and 0xFF as NaN and 0x7E as 448") {
    CHECK(std::isnan(decode(DataType::e4m3(), 0x7F)));
    CHECK(std::isnan(decode(DataType::e4m3(), 0xFF)));
    CHECK(decode(DataType::e4m3(), 0x7E) == 448.0);
    CHECK(decode(DataType::e4m3(), 0x01) == std::ldexp(1.0, -9));
  }

  TEST_CASE("e4m3 encodes NaN as 0x7F in both overflow modes") {
    CHECK(encode(DataType::e4m3(), kNaN) == 0x7F);
    CHECK(encode(DataType::e4m3(), kNaN, Overflow::kNonSaturate) == 0x7F);
  }

  TEST_CASE("e4m3 saturating conversion clamps 500 and infinities to 448") {
    CHECK(round_to(DataType::e4m3(), 500.0) == 448.0);
    CHECK(encode(DataType::e4m3(), kInf) == 0x7E);
    CHECK(encode(DataType::e4m3(), -kInf) == 0xFE);
  }

  TEST_CASE("e4m3 non-saturating conversion turns 500 and infinity into NaN") {
    CHECK(std::isnan(round_to(DataType::e4m3(), 500.0, Overflow::kNonSaturate)));
    CHECK(encode(DataType::e4m3(), 500.0, Overflow::kNonSaturate) == 0x7F);
    CHECK(std::isnan(round_to(DataType::e4m3(), kInf, Overflow::kNonSaturate)));
  }

  TEST_CASE("e4m3 rounds 464, the tie between 448 and 480, down to 448 in both modes") {
    // Spacing in [256, 512) is 32. 464 is halfway between 448 (mantissa 110, even) and 480
    // (mantissa 111, odd, the NaN pattern). Ties go to even, so 464 -> 448: no overflow. Anything
    // above 464 rounds to 480, beyond the largest finite value.
    CHECK(round_to(DataType::e4m3(), 464.0, Overflow::kNonSaturate) == 448.0);
    CHECK(round_to(DataType::e4m3(), 464.0) == 448.0);
    CHECK(std::isnan(round_to(DataType::e4m3(), 465.0, Overflow::kNonSaturate)));
    CHECK(round_to(DataType::e4m3(), 465.0) == 448.0);
  }

  TEST_CASE("e4m3 rounds subnormal ties to even") {
    // 2^-10 is halfway between 0 (even) and 2^-9 (mantissa 001): rounds to +0.
    CHECK(encode(DataType::e4m3(), std::ldexp(1.0, -10)) == 0x00);
    // 3 * 2^-10 is halfway between 1 * 2^-9 (001) and 2 * 2^-9 (010, even): 0x02.
    CHECK(encode(DataType::e4m3(), 3 * std::ldexp(1.0, -10)) == 0x02);
    // 7.5 * 2^-9 is halfway between 7 * 2^-9 (0 0000 111) and 2^-6 (0 0001 000, even).
    CHECK(encode(DataType::e4m3(), 7.5 * std::ldexp(1.0, -9)) == 0x08);
  }

  TEST_CASE("e4m3 round trips every non-NaN bit pattern") {
    for (uint64_t bits = 0; bits < 256; ++bits) {
      if ((bits & 0x7F) == 0x7F) continue;
      CAPTURE(bits);
      CHECK(encode(DataType::e4m3(), decode(DataType::e4m3(), bits)) == bits);
    }
  }
}

TEST_SUITE("dtype e5m2") {
  // OCP OFP8 E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-style inf and NaN.
  TEST_CASE("e5m2 encodes 1, 57344, infinity and min subnormal") {
    CHECK(encode(DataType::e5m2(), 1.0) == 0x3C);      // 0 01111 00
    CHECK(encode(DataType::e5m2(), 57344.0) == 0x7B);  // 1.75 * 2^15: 0 11110 11
    CHECK(encode(DataType::e5m2(), kInf, Overflow::kNonSaturate) == 0x7C);  // 0 11111 00
    CHECK(encode(DataType::e5m2(), -kInf, Overflow::kNonSaturate) == 0xFC);
    CHECK(encode(DataType::e5m2(), std::ldexp(1.0, -16)) == 0x01);  // 2^-14 * 2^-2: 0 00000 01
  }

  TEST_CASE("e5m2 decodes 0x7C as infinity and 0x7D..0x7F as NaN") {
    CHECK(decode(DataType::e5m2(), 0x7C) == kInf);
    CHECK(decode(DataType::e5m2(), 0xFC) == -kInf);
    for (uint64_t bits : {0x7Du, 0x7Eu, 0x7Fu}) CHECK(std::isnan(decode(DataType::e5m2(), bits)));
    CHECK(decode(DataType::e5m2(), 0x7B) == 57344.0);
  }

  TEST_CASE("e5m2 saturating conversion clamps overflow and infinity to 57344") {
    CHECK(round_to(DataType::e5m2(), 1e6) == 57344.0);
    CHECK(encode(DataType::e5m2(), kInf) == 0x7B);
    CHECK(encode(DataType::e5m2(), -kInf) == 0xFB);
  }

  TEST_CASE("e5m2 non-saturating conversion overflows to infinity past the rounding threshold") {
    // Spacing in [32768, 65536) is 8192. 61440 is halfway between 57344 (mantissa 11, odd) and
    // 65536 (even): it rounds to 65536, which overflows. 60000 rounds down to 57344 and stays.
    CHECK(round_to(DataType::e5m2(), 61440.0, Overflow::kNonSaturate) == kInf);
    CHECK(round_to(DataType::e5m2(), -61440.0, Overflow::kNonSaturate) == -kInf);
    CHECK(round_to(DataType::e5m2(), 60000.0, Overflow::kNonSaturate) == 57344.0);
  }

  TEST_CASE("e5m2 keeps NaN as NaN in saturating mode") {
    CHECK(std::isnan(round_to(DataType::e5m2(), kNaN)));
    CHECK(std::isnan(decode(DataType::e5m2(), encode(DataType::e5m2(), kNaN))));
  }
}

TEST_SUITE("dtype integers") {
  TEST_CASE("wrap_int wraps i8 200 to -56") { CHECK(wrap_int(DataType::i8(), 200) == -56); }

  TEST_CASE("wrap_int wraps unsigned and 4-bit types modulo 2^bits") {
    CHECK(wrap_int(DataType::u8(), -1) == 255);
    CHECK(wrap_int(DataType::i4(), 8) == -8);
    CHECK(wrap_int(DataType::u4(), 17) == 1);
    CHECK(wrap_int(DataType::u32(), -1) == 4294967295);
  }

  TEST_CASE("round_to an integer type rounds ties to even") {
    CHECK(round_to(DataType::i32(), 2.5) == 2.0);
    CHECK(round_to(DataType::i32(), 3.5) == 4.0);
    CHECK(round_to(DataType::i32(), -2.5) == -2.0);
    CHECK(round_to(DataType::i32(), 2.6) == 3.0);
  }

  TEST_CASE("round_to an integer type wraps out-of-range values") {
    CHECK(round_to(DataType::i8(), 200.0) == -56.0);
    CHECK(round_to(DataType::u8(), -1.0) == 255.0);
    CHECK(round_to(DataType::i4(), 7.6) == -8.0);  // 7.6 -> 8 -> wraps to -8
  }

  TEST_CASE("round_to an integer type maps NaN to 0") {
    CHECK(round_to(DataType::i32(), kNaN) == 0.0);
  }

  TEST_CASE("bool maps nonzero to 1 and zero to 0") {
    CHECK(round_to(DataType::boolean(), 0.5) == 1.0);
    CHECK(round_to(DataType::boolean(), -3.0) == 1.0);
    CHECK(round_to(DataType::boolean(), 0.0) == 0.0);
    CHECK(encode(DataType::boolean(), 2.0) == 1);
    CHECK(decode(DataType::boolean(), 1) == 1.0);
  }

  TEST_CASE("signed integers encode in two's complement in the low bits") {
    CHECK(encode(DataType::i8(), -1.0) == 0xFF);
    CHECK(encode(DataType::i4(), -2.0) == 0xE);
    CHECK(encode(DataType::i32(), -1.0) == 0xFFFFFFFFu);
    CHECK(encode(DataType::i64(), -1.0) == 0xFFFFFFFFFFFFFFFFull);
  }

  TEST_CASE("i4 sign-extends on decode and u4 does not") {
    CHECK(decode(DataType::i4(), 0xE) == -2.0);
    CHECK(decode(DataType::u4(), 0xE) == 14.0);
    CHECK(decode(DataType::i8(), 0x80) == -128.0);
  }
}

TEST_SUITE("dtype storage") {
  TEST_CASE("i4 packs two a byte with the even index in the low nibble") {
    uint8_t bytes[1] = {0};
    store_bits(DataType::i4(), bytes, 0, encode(DataType::i4(), 3.0));   // 0x3
    store_bits(DataType::i4(), bytes, 1, encode(DataType::i4(), -2.0));  // 0xE
    CHECK(bytes[0] == 0xE3);
    CHECK(decode(DataType::i4(), load_bits(DataType::i4(), bytes, 1)) == -2.0);
    CHECK(decode(DataType::i4(), load_bits(DataType::i4(), bytes, 0)) == 3.0);
  }

  TEST_CASE("u4 stores into one nibble and leaves its neighbour alone") {
    uint8_t bytes[2] = {0xAB, 0xCD};
    store_bits(DataType::u4(), bytes, 2, 15);  // byte 1, low nibble
    CHECK(bytes[1] == 0xCF);
    store_bits(DataType::u4(), bytes, 3, 1);  // byte 1, high nibble
    CHECK(bytes[1] == 0x1F);
    CHECK(bytes[0] == 0xAB);
    CHECK(load_bits(DataType::u4(), bytes, 0) == 0xB);
    CHECK(load_bits(DataType::u4(), bytes, 1) == 0xA);
  }

  TEST_CASE("wider types store little-endian at index times their byte width") {
    uint8_t bytes[8] = {};
    store_bits(DataType::i32(), bytes, 1, 0x12345678);
    CHECK(bytes[4] == 0x78);
    CHECK(bytes[5] == 0x56);
    CHECK(bytes[6] == 0x34);
    CHECK(bytes[7] == 0x12);
    CHECK(load_bits(DataType::i32(), bytes, 1) == 0x12345678);
    store_bits(DataType::f16(), bytes, 0, 0x3C00);
    CHECK(bytes[0] == 0x00);
    CHECK(bytes[1] == 0x3C);
  }

  TEST_CASE("bool takes one byte in storage") {
    uint8_t bytes[2] = {};
    store_bits(DataType::boolean(), bytes, 1, 1);
    CHECK(bytes[0] == 0);
    CHECK(bytes[1] == 1);
    CHECK(DataType::boolean().storage_bytes(3) == 3);
  }
}

TEST_SUITE("dtype ranges") {
  TEST_CASE("float types report their largest finite values") {
    CHECK(max_value(DataType::f16()) == 65504.0);
    CHECK(max_value(DataType::bf16()) == std::ldexp(2.0 - std::ldexp(1.0, -7), 127));  // ~3.3895e38
    CHECK(max_value(DataType::f32()) == std::ldexp(2.0 - std::ldexp(1.0, -23), 127));
    CHECK(max_value(DataType::e4m3()) == 448.0);
    CHECK(max_value(DataType::e5m2()) == 57344.0);
    CHECK(min_value(DataType::e4m3()) == -448.0);
    CHECK(min_value(DataType::f16()) == -65504.0);
  }

  TEST_CASE("integer types report their ranges") {
    CHECK(max_value(DataType::i4()) == 7.0);
    CHECK(min_value(DataType::i4()) == -8.0);
    CHECK(max_value(DataType::u4()) == 15.0);
    CHECK(min_value(DataType::u4()) == 0.0);
    CHECK(max_value(DataType::i8()) == 127.0);
    CHECK(min_value(DataType::i8()) == -128.0);
    CHECK(max_value(DataType::u8()) == 255.0);
    CHECK(max_value(DataType::i32()) == 2147483647.0);
    CHECK(min_value(DataType::i32()) == -2147483648.0);
    CHECK(max_value(DataType::u32()) == 4294967295.0);
    CHECK(max_value(DataType::boolean()) == 1.0);
    CHECK(min_value(DataType::boolean()) == 0.0);
  }
}
