// The compressed allreduce's formats (kernels/compress.h, docs/compression.md): round trips,
// rounding to nearest even, the specials (NaN, inf, subnormals, zeros), fp8's per-block
// scale (all-zero blocks, tiny blocks, saturation), sizes, and the error bound of one
// encoding against the formats' unit roundoff.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/compress.h"
#include "kernels/compress_elements.h"
#include "kernels/elements.h"

namespace gcoll {
namespace {

std::vector<float> round_trip(Compress c, const std::vector<float> &x) {
  std::vector<unsigned char> enc(compressed_bytes(c, x.size()));
  std::vector<float> out(x.size());
  compress_encode(c, DType::Float, x.data(), x.size(), enc.data());
  compress_decode(c, DType::Float, enc.data(), x.size(), out.data());
  return out;
}

float one(Compress c, float v) { return round_trip(c, {v})[0]; }

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Compress, NamesAndSizes) {
  Compress c;
  EXPECT_TRUE(parse_compress(" FP8 ", &c));
  EXPECT_EQ(c, Compress::Fp8);
  EXPECT_TRUE(parse_compress("bf16", &c));
  EXPECT_EQ(c, Compress::Bf16);
  EXPECT_TRUE(parse_compress("off", &c));
  EXPECT_EQ(c, Compress::Off);
  EXPECT_FALSE(parse_compress("fp4", &c));
  EXPECT_EQ(compressed_bytes(Compress::Bf16, 10), 20u);
  EXPECT_EQ(compressed_bytes(Compress::Fp16, 10), 20u);
  EXPECT_EQ(compressed_bytes(Compress::Fp8, 0), 0u);
  EXPECT_EQ(compressed_bytes(Compress::Fp8, 1), 5u);
  EXPECT_EQ(compressed_bytes(Compress::Fp8, 256), 260u);
  EXPECT_EQ(compressed_bytes(Compress::Fp8, 257), 265u);
  EXPECT_TRUE(compressible(DType::Float, ROp::Sum));
  EXPECT_TRUE(compressible(DType::Double, ROp::Sum));
  EXPECT_FALSE(compressible(DType::Float, ROp::Max));
  EXPECT_FALSE(compressible(DType::Int32, ROp::Sum));
  EXPECT_FALSE(compressible(DType::Half, ROp::Sum));
}

TEST(Compress, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even (1). 1 + 3 * 2^-8: up to 1 + 2^-6.
  EXPECT_EQ(one(Compress::Bf16, 1.0f + std::ldexp(1.0f, -8)), 1.0f);
  EXPECT_EQ(one(Compress::Bf16, 1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(one(Compress::Bf16, 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(one(Compress::Bf16, -2.5f), -2.5f);  // representable: exact
}

TEST(Compress, Fp16RoundsToNearestEvenAndOverflowsToInf) {
  EXPECT_EQ(one(Compress::Fp16, 1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(one(Compress::Fp16, 1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(one(Compress::Fp16, 65504.0f), 65504.0f);
  EXPECT_EQ(one(Compress::Fp16, 65519.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(one(Compress::Fp16, 65520.0f)));  // not saturating (docs/compression.md)
  EXPECT_TRUE(std::isinf(one(Compress::Fp16, -1e6f)));
  EXPECT_LT(one(Compress::Fp16, -1e6f), 0);
  // Subnormal halves: units of 2^-24; below 2^-25 to zero.
  EXPECT_EQ(one(Compress::Fp16, std::ldexp(3.0f, -24)), std::ldexp(3.0f, -24));
  EXPECT_EQ(one(Compress::Fp16, std::ldexp(1.0f, -26)), 0.0f);
}

TEST(Compress, Specials) {
  for (Compress c : {Compress::Bf16, Compress::Fp16, Compress::Fp8}) {
    SCOPED_TRACE(compress_name(c));
    const std::vector<float> x = {0.0f, -0.0f, NAN, 1.0f, -1.0f};
    const auto y = round_trip(c, x);
    EXPECT_EQ(bits(y[0]), bits(0.0f));
    EXPECT_EQ(bits(y[1]), bits(-0.0f));
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 1.0f);  // the block's amax: exact in every format
    EXPECT_EQ(y[4], -1.0f);
  }
  // inf: kept by bf16 and fp16; NaN in fp8 (e4m3 has no infinity), its block's other
  // elements unharmed.
  EXPECT_EQ(one(Compress::Bf16, INFINITY), INFINITY);
  EXPECT_EQ(one(Compress::Fp16, -INFINITY), -INFINITY);
  const auto y = round_trip(Compress::Fp8, {INFINITY, 2.0f, -448.0f, 0.5f});
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(y[2], -448.0f);
  EXPECT_EQ(y[3], 0.5f);
  // bf16 keeps float's range: a float subnormal stays (rounded), FLT_MAX rounds to inf.
  EXPECT_EQ(one(Compress::Bf16, std::ldexp(1.0f, -130)), std::ldexp(1.0f, -130));  // bf16 subnormal: exact
  EXPECT_EQ(one(Compress::Bf16, std::ldexp(1.0f, -140)), 0.0f);  // below half of bf16's smallest, 2^-133
  EXPECT_TRUE(std::isinf(one(Compress::Bf16, FLT_MAX)));
}

// Every 16-bit code decodes to the exact value of the format (fp16 through its table),
// and encodes back to itself (NaNs: to a NaN).
TEST(Compress, Every16BitCodeDecodesExactly) {
  std::vector<std::uint16_t> codes(65536);
  for (std::uint32_t h = 0; h < 65536; ++h) codes[h] = static_cast<std::uint16_t>(h);
  std::vector<float> out(65536);
  compress_decode(Compress::Fp16, DType::Float, codes.data(), codes.size(), out.data());
  for (std::uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(bits(out[h]), bits(half_to_float(HalfBits{codes[h]}))) << h;
    if (!std::isnan(out[h])) ASSERT_EQ(float_to_half(out[h]).bits, codes[h]) << h;
  }
  compress_decode(Compress::Bf16, DType::Float, codes.data(), codes.size(), out.data());
  for (std::uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(bits(out[h]), h << 16) << h;
    if (!std::isnan(out[h])) ASSERT_EQ(float_to_bf16(out[h]).bits, codes[h]) << h;
  }
}

TEST(Compress, E4m3Codes) {
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(1000.0f), 0x7e);  // saturates
  EXPECT_EQ(float_to_e4m3(-1000.0f), 0xfe);
  EXPECT_EQ(float_to_e4m3(NAN) & 0x7f, 0x7f);
  EXPECT_EQ(float_to_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // halfway to zero: even
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);  // 1.5 units: even (2)
  EXPECT_EQ(float_to_e4m3(1.0f + 1.0f / 16), 0x38);       // halfway: even (1.0)
  EXPECT_EQ(float_to_e4m3(1.0f + 3.0f / 16), 0x3a);       // halfway: even (1.25)
  EXPECT_EQ(float_to_e4m3(std::ldexp(15.0f, -10)), 0x08);  // 7.5 units: rounds up to the smallest normal
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;
    const float v = e4m3_to_float(static_cast<std::uint8_t>(c));
    EXPECT_EQ(float_to_e4m3(v), c == 0x80 ? 0x80 : c) << c;  // every code round-trips
  }
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
}

// The bit-level decoding the CUDA kernels use (compress_elements.h) gives the host table's
// value for every code: the same bits (NaN: NaN with the code's sign).
TEST(Compress, E4m3DecodeOnBitsEqualsTheTable) {
  for (int c = 0; c < 256; ++c) {
    const float a = e4m3_decode(static_cast<std::uint8_t>(c)), b = e4m3_to_float(static_cast<std::uint8_t>(c));
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b)) << c;
      continue;
    }
    EXPECT_EQ(float_bits(a), float_bits(b)) << c;
    EXPECT_EQ(e4m3_encode(a), float_to_e4m3(a)) << c;
  }
}

TEST(Compress, Fp8ScalePerBlock) {
  // An all-zero block next to a block of large values: the zero block stays zero, exactly.
  std::vector<float> x(2 * kFp8Block + 7, 0.0f);
  for (std::size_t i = kFp8Block; i < 2 * kFp8Block; ++i) x[i] = 1e30f * static_cast<float>(i % 7);
  x[2 * kFp8Block + 3] = 1e-30f;  // a tiny last, partial block: its own scale
  const auto y = round_trip(Compress::Fp8, x);
  for (std::size_t i = 0; i < kFp8Block; ++i) EXPECT_EQ(bits(y[i]), 0u) << i;
  for (std::size_t i = kFp8Block; i < 2 * kFp8Block; ++i)
    EXPECT_LE(std::fabs(y[i] - x[i]), std::ldexp(1.0f, -4) * std::fabs(x[i]) + 1e30f * 6 / 448 * std::ldexp(1.0f, -10));
  EXPECT_NEAR(y[2 * kFp8Block + 3], 1e-30f, 1e-30f / 16);
  // Below 448 x 2^-126 the scale is 2^-126: still no NaN or inf, errors tiny.
  const auto z = round_trip(Compress::Fp8, {1e-40f, -3e-41f});
  EXPECT_NEAR(z[0], 1e-40f, 1e-40f);
  EXPECT_TRUE(std::isfinite(z[1]));
}

// One encoding's error against the bound docs/compression.md builds on: bf16 / fp16
// |Q(x) - x| <= u |x| (normal range), fp8 |Q(x) - x| <= 2^-4 |x| + 2^-10 s (s = the
// block's scale), for float and double inputs.
TEST(Compress, OneEncodingWithinTheUnitRoundoff) {
  std::mt19937 rng(7);
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<double> xd(3000);
  for (auto &v : xd) v = d(rng) * std::exp(d(rng) * 3);
  std::vector<float> xf(xd.begin(), xd.end());
  struct F {
    Compress c;
    double u;
  };
  for (F f : {F{Compress::Bf16, std::ldexp(1.0, -8)}, F{Compress::Fp16, std::ldexp(1.0, -11)},
              F{Compress::Fp8, std::ldexp(1.0, -4)}}) {
    SCOPED_TRACE(compress_name(f.c));
    std::vector<unsigned char> enc(compressed_bytes(f.c, xd.size()));
    std::vector<double> yd(xd.size());
    compress_encode(f.c, DType::Double, xd.data(), xd.size(), enc.data());
    compress_decode(f.c, DType::Double, enc.data(), xd.size(), yd.data());
    const auto yf = round_trip(f.c, xf);
    for (std::size_t i = 0; i < xd.size(); ++i) {
      double amax = 0;
      const std::size_t b0 = i / kFp8Block * kFp8Block;
      for (std::size_t j = b0; j < std::min(xd.size(), b0 + kFp8Block); ++j) amax = std::max(amax, std::fabs(xd[j]));
      const double abs_term = f.c == Compress::Fp8 ? std::ldexp(amax / 448, -10) : f.c == Compress::Fp16 ? std::ldexp(1.0, -25) : 0;
      const double bound = (f.u + std::ldexp(1.0, -22)) * std::fabs(xd[i]) + abs_term * 1.001;
      if (f.c == Compress::Fp16 && std::fabs(xd[i]) > 65504) continue;  // inf: documented
      ASSERT_LE(std::fabs(yd[i] - xd[i]), bound) << i << " x=" << xd[i];
      ASSERT_LE(std::fabs(static_cast<double>(yf[i]) - xf[i]), bound) << i;
    }
  }
}

TEST(Compress, DecodeAddIsFullPrecision) {
  const std::vector<double> acc0 = {1e-9, 1.0, -3.0};
  const std::vector<double> x = {1.0, 0.5, 1.0};  // exact in every format
  for (Compress c : {Compress::Bf16, Compress::Fp16, Compress::Fp8}) {
    std::vector<unsigned char> enc(compressed_bytes(c, x.size()));
    compress_encode(c, DType::Double, x.data(), x.size(), enc.data());
    std::vector<double> acc = acc0;
    compress_decode_add(c, DType::Double, enc.data(), x.size(), acc.data());
    EXPECT_EQ(acc[0], 1.0 + 1e-9);  // a double sum: not rounded to the format
    EXPECT_EQ(acc[1], 1.5);
    EXPECT_EQ(acc[2], -2.0);
  }
}

}  // namespace
}  // namespace gcoll
