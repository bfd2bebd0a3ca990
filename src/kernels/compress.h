// Compressed formats of the opt-in compressed allreduce (GCOLL_ALLREDUCE_COMPRESS, the
// communicator info key gcoll_allreduce_compress; docs/compression.md): what travels
// between nodes, encoded and decoded on the host. No MPI, no CUDA (the conversions of
// kernels/elements.h are host-and-device code, for device kernels later).
//
// Formats (elements of MPI_FLOAT or MPI_DOUBLE; a double is rounded to float first):
//   bf16: bfloat16, round to nearest even; inf stays inf, NaN becomes NaN (0x7fff);
//         values beyond bfloat16's largest finite (about 3.39e38) round to inf.
//   fp16: IEEE binary16, round to nearest even; NOT saturating: |x| >= 65520 becomes inf
//         (a sum out of fp16's range shows as inf instead of a clipped, silently wrong
//         number); |x| < 2^-24 rounds to zero or a subnormal.
//   fp8:  e4m3 (OCP "E4M3FN": 3 mantissa bits, largest finite 448, no infinity) with one
//         float scale per block of kFp8Block elements, s = max(amax / 448, 2^-126) where
//         amax is the largest finite |x| of the block; code = RNE(x / s), saturating at
//         +-448; inf and NaN become NaN (0x7f: e4m3 has no infinity).
// Decoding is exact arithmetic on the codes (bf16, fp16) or one IEEE multiply (fp8), so
// every rank that decodes the same bytes gets the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/types.h"

namespace gcoll {

// In GCOLL_ALLREDUCE_COMPRESS's order of choices (base/config.cc).
enum class Compress : std::uint8_t { Off = 0, Bf16 = 1, Fp16 = 2, Fp8 = 3 };
constexpr int kCompressFormats = 4;

constexpr std::size_t kFp8Block = 256;  // elements per fp8 scale

const char *compress_name(Compress c);  // "off", "bf16", "fp16", "fp8"
// "off|bf16|fp16|fp8" (case-insensitive, surrounding blanks ignored).
bool parse_compress(const char *text, Compress *out);

// The (type, op) pairs that are ever compressed: MPI_FLOAT and MPI_DOUBLE with MPI_SUM.
inline bool compressible(DType t, ROp op) { return op == ROp::Sum && (t == DType::Float || t == DType::Double); }

// Bytes of n elements in format c (bf16, fp16: 2n; fp8: 4 x ceil(n / kFp8Block) + n).
std::size_t compressed_bytes(Compress c, std::size_t n);

// n elements of type t (Float or Double) at src, encoded into dst (compressed_bytes).
void compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst);
// The encoded n elements at src, decoded into dst (overwritten).
void compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst);
// dst[i] = dst[i] + decode(src)[i], in dst's precision (the reduction in full precision).
void compress_decode_add(Compress c, DType t, const void *src, std::size_t n, void *dst);

// One element (tests, docs).
std::uint8_t float_to_e4m3(float f);  // f already divided by the scale
float e4m3_to_float(std::uint8_t code);

}  // namespace gcoll
