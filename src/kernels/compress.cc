#include "kernels/compress.h"

#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/compress_elements.h"
#include "kernels/elements.h"

namespace gcoll {

const char *compress_name(Compress c) {
  switch (c) {
    case Compress::Off: return "off";
    case Compress::Bf16: return "bf16";
    case Compress::Fp16: return "fp16";
    case Compress::Fp8: return "fp8";
  }
  return "?";
}

bool parse_compress(const char *text, Compress *out) {
  if (!text) return false;
  std::string t;
  for (const char *p = text; *p; ++p)
    if (!std::isspace(static_cast<unsigned char>(*p))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  for (int k = 0; k < kCompressFormats; ++k)
    if (t == compress_name(static_cast<Compress>(k))) {
      *out = static_cast<Compress>(k);
      return true;
    }
  return false;
}

std::size_t compressed_bytes(Compress c, std::size_t n) {
  switch (c) {
    case Compress::Bf16:
    case Compress::Fp16: return 2 * n;
    case Compress::Fp8: return 4 * ((n + kFp8Block - 1) / kFp8Block) + n;
    case Compress::Off: break;
  }
  return 0;
}

std::uint8_t float_to_e4m3(float f) { return e4m3_encode(f); }

namespace {

struct E4m3Table {
  float v[256];
  E4m3Table() {
    for (int c = 0; c < 256; ++c) {
      const int e = (c >> 3) & 0xf, m = c & 7;
      float mag;
      if (e == 0xf && m == 7) mag = NAN;
      else if (e == 0) mag = static_cast<float>(m) * (1.0f / 512.0f);
      else mag = std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
      v[c] = (c & 0x80) ? -mag : mag;
    }
  }
};

const E4m3Table &e4m3_table() {
  static const E4m3Table t;
  return t;
}

// fp16 decoding by table (256 KiB, built at the first fp16 decode): the same exact values
// as half_to_float, without its branches.
const float *half_table() {
  static const float *const t = [] {
    auto *v = new float[65536];
    for (std::uint32_t h = 0; h < 65536; ++h) v[h] = half_to_float(HalfBits{static_cast<std::uint16_t>(h)});
    return v;
  }();
  return t;
}

template <class T>
float as_float(T x) {
  return static_cast<float>(x);  // double: rounded to nearest (the FP environment's default)
}

template <class T>
void encode(Compress c, const T *src, std::size_t n, void *dst) {
  if (c == Compress::Bf16 || c == Compress::Fp16) {
    auto *o = static_cast<std::uint16_t *>(dst);
    if (c == Compress::Bf16)
      for (std::size_t i = 0; i < n; ++i) o[i] = float_to_bf16(as_float(src[i])).bits;
    else
      for (std::size_t i = 0; i < n; ++i) o[i] = float_to_half(as_float(src[i])).bits;
    return;
  }
  // fp8: the blocks' scales first, then the codes.
  const std::size_t nb = (n + kFp8Block - 1) / kFp8Block;
  auto *scales = static_cast<unsigned char *>(dst);
  auto *codes = scales + 4 * nb;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t i0 = b * kFp8Block, i1 = i0 + kFp8Block < n ? i0 + kFp8Block : n;
    float amax = 0;
    for (std::size_t i = i0; i < i1; ++i) {
      const float a = std::fabs(as_float(src[i]));
      if (a <= FLT_MAX && a > amax) amax = a;  // finite only (NaN compares false)
    }
    float s = amax / 448.0f;
    if (!(s >= FLT_MIN)) s = FLT_MIN;  // all-zero, tiny or subnormal blocks: 2^-126
    const float inv = 1.0f / s;
    std::memcpy(scales + 4 * b, &s, 4);
    for (std::size_t i = i0; i < i1; ++i) codes[i] = float_to_e4m3(as_float(src[i]) * inv);
  }
}

// f(i, v): element i decodes to v.
template <class F>
void decode_each(Compress c, const void *src, std::size_t n, F &&f) {
  if (c == Compress::Bf16) {
    const auto *in = static_cast<const std::uint16_t *>(src);
    for (std::size_t i = 0; i < n; ++i) f(i, bf16_to_float(BF16Bits{in[i]}));
    return;
  }
  if (c == Compress::Fp16) {
    const auto *in = static_cast<const std::uint16_t *>(src);
    const float *table = half_table();
    for (std::size_t i = 0; i < n; ++i) f(i, table[in[i]]);
    return;
  }
  const float *table = e4m3_table().v;
  const std::size_t nb = (n + kFp8Block - 1) / kFp8Block;
  const auto *scales = static_cast<const unsigned char *>(src);
  const auto *codes = scales + 4 * nb;
  for (std::size_t b = 0; b < nb; ++b) {
    float s;
    std::memcpy(&s, scales + 4 * b, 4);
    const std::size_t i0 = b * kFp8Block, i1 = i0 + kFp8Block < n ? i0 + kFp8Block : n;
    for (std::size_t i = i0; i < i1; ++i) f(i, table[codes[i]] * s);
  }
}

}  // namespace

float e4m3_to_float(std::uint8_t code) { return e4m3_table().v[code]; }

void compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst) {
  if (t == DType::Double) encode(c, static_cast<const double *>(src), n, dst);
  else encode(c, static_cast<const float *>(src), n, dst);
}

void compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst) {
  if (t == DType::Double) {
    auto *o = static_cast<double *>(dst);
    decode_each(c, src, n, [o](std::size_t i, float v) { o[i] = static_cast<double>(v); });
  } else {
    auto *o = static_cast<float *>(dst);
    decode_each(c, src, n, [o](std::size_t i, float v) { o[i] = v; });
  }
}

void compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst) {
  if (t == DType::Double) {
    auto *o = static_cast<double *>(dst);
    decode_each(c, src, n, [o](std::size_t i, float v) { o[i] = o[i] + static_cast<double>(v); });
  } else {
    auto *o = static_cast<float *>(dst);
    decode_each(c, src, n, [o](std::size_t i, float v) { o[i] = o[i] + v; });
  }
}

}  // namespace gcoll
