// GPU check of the compressed allreduce's CUDA kernels (kernels/cuda_compress.cu, issue 32
// item 4; docs/compression.md) in ONE process, without MPI: the functions that the runtime's
// entry points (cuda/runtime_cuda.cc: compress_encode, compress_decode,
// compress_decode_add) call, cuda_compress_encode / cuda_compress_decode, on device memory
// and a non-blocking stream (as the device space's), against the host functions of
// kernels/compress.h:
//   - every format (bf16, fp16, fp8) and type (float, double), sizes 1, 255, 256, 257,
//     4096 + 3 and 1 << 20 (odd sizes at odd element / byte offsets), value patterns:
//     mixed signs and magnitudes, zeros (+0 and -0), a block of zeros among others (fp8's
//     scale 2^-126), each format's edges (largest finite, the rounding ties to inf and to
//     zero, subnormals; for double the roundings to float, beyond float's range, double
//     subnormals), the e4m3 grid and its ties at power-of-two scales, tiny blocks (float
//     subnormals: the scale's floor), inf and NaN (signs, payloads, signalling) among
//     finite values and whole blocks of them;
//   - encode: the device's bytes equal the host's, scales included;
//   - decode and decode_add: of the host's bytes (decode_add onto values of its own), the
//     device's values equal the host's bit for bit, except NaN payloads (NaN on both:
//     allowed, counted);
//   - nothing written before or after the outputs; the launchers' refusals (Off, other
//     types) and n = 0 (nothing enqueued); every e4m3 / 16-bit code decoded.
// An encoded byte that differs only where the input is NaN and both bytes are NaN codes
// is still a mismatch (the kernels promise the host's bytes), reported as such; with
// GCOLLTEST_COMPRESS_NAN_CODES=any it is tolerated and counted instead.
// One line per case, a summary, exit 1 on any mismatch. Without a GPU: "SKIPPED: no GPU",
// exit 77 (it is what the emulated GPU cannot check: it runs the host functions).
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/compress.h"
#include "kernels/compress_elements.h"
#include "kernels/cuda_compress.cuh"
#include "kernels/elements.h"

#include "cuda_check.h"

using namespace gcoll;


namespace {

constexpr std::size_t kGuard = 64;         // bytes checked after (and before) every output
constexpr unsigned char kFill = 0xA5;      // what they must still hold
int cases = 0, failed_cases = 0, nan_payload_cases = 0, nan_code_cases = 0;
bool nan_codes_any = false;                // GCOLLTEST_COMPRESS_NAN_CODES=any
cudaStream_t stream = nullptr;

enum class Pattern { Mixed, Zeros, ZeroBlock, Edges, E4m3Grid, Tiny, Specials };
const Pattern kPatterns[] = {Pattern::Mixed, Pattern::Zeros, Pattern::ZeroBlock, Pattern::Edges,
                             Pattern::E4m3Grid, Pattern::Tiny, Pattern::Specials};
const char *pattern_name(Pattern p) {
  switch (p) {
    case Pattern::Mixed: return "mixed";
    case Pattern::Zeros: return "zeros";
    case Pattern::ZeroBlock: return "zero_block";
    case Pattern::Edges: return "edges";
    case Pattern::E4m3Grid: return "e4m3_grid";
    case Pattern::Tiny: return "tiny";
    case Pattern::Specials: return "specials";
  }
  return "?";
}

double d_bits(std::uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}
std::uint64_t bits_d(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

// The formats' edges, as doubles (exact), for both types: a float input gets them rounded
// to float by the generator (static_cast), which is itself an edge for the encoders.
std::vector<double> edge_values() {
  const double p = 1.0;
  std::vector<double> e = {
      0.0, -0.0, 1.0, FLT_MAX, FLT_MIN, std::ldexp(p, -149), 3 * std::ldexp(p, -149), std::ldexp(p, -127),
      std::ldexp(p, -140),
      // bf16: largest finite, the tie to inf and just below it, subnormals and their ties
      bits_float(0x7f7f0000u), bits_float(0x7f7f8000u), bits_float(0x7f7f7fffu), std::ldexp(p, -133),
      std::ldexp(p, -134), 3 * std::ldexp(p, -134), 1 + std::ldexp(p, -8), 1 + 3 * std::ldexp(p, -8),
      1 + std::ldexp(p, -8) + std::ldexp(p, -20),
      // fp16: largest finite, the overflow threshold, subnormals, ties
      65504.0, 65519.0, 65519.99609375, 65520.0, 65536.0, 1e5, std::ldexp(p, -14), std::ldexp(p, -24),
      std::ldexp(p, -25), std::ldexp(p, -25) * (1 + std::ldexp(p, -10)), 3 * std::ldexp(p, -25),
      std::ldexp(p, -14) - std::ldexp(p, -25), 1 + std::ldexp(p, -11), 1 + 3 * std::ldexp(p, -11),
      // e4m3 at scale 1 (when a block's largest finite is 448): saturation, subnormals
      448.0, 464.0, 480.0, std::ldexp(p, -6), std::ldexp(p, -9), std::ldexp(p, -10), 3 * std::ldexp(p, -10),
      // double -> float: ties, the overflow threshold (a tie: rounds to inf), beyond range,
      // double subnormals, the tie to float's smallest subnormal
      1 + std::ldexp(p, -24), 1 + 3 * std::ldexp(p, -24), std::ldexp(2 - std::ldexp(p, -24), 127),
      std::nextafter(std::ldexp(2 - std::ldexp(p, -24), 127), 0.0), 1e39, 1e300, DBL_MAX, DBL_MIN,
      d_bits(1), std::ldexp(p, -150), std::ldexp(p, -150) * (1 + std::ldexp(p, -30)), std::ldexp(p, -151),
      // ordinary magnitudes
      1e30, 3.0e38, 1e-30, 1e-40, 1e-45, 0.1, 1.0 / 3, 12345.678};
  return e;
}

// Non-finite values of each type, by bits.
const std::uint32_t kFloatSpecials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
                                        0x7fc12345u, 0x7f800001u, 0xff812345u, 0x7fffffffu};
const std::uint64_t kDoubleSpecials[] = {0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull,
                                         0xfff8000000000000ull, 0x7ff8000012345678ull, 0x7ff0000000000001ull,
                                         0xfff4000000000000ull, 0x7fffffffffffffffull};

// A value of mixed sign and magnitude (2^-40 .. 2^40, most of them within 2^-8 .. 2^8).
double mixed_value(std::mt19937_64 &g) {
  const std::uint64_t r = g();
  const int span = (r & 3) == 0 ? 80 : 16;
  const int ex = static_cast<int>((r >> 2) % span) - span / 2;
  const double m = 1.0 + static_cast<double>((r >> 12) & 0xfffffffffffull) / 17592186044416.0;  // [1, 2)
  const double v = std::ldexp(m, ex);
  return (r >> 60) & 1 ? -v : v;
}

// The e4m3 values (codes 0..126) and their midpoints, and a little either side of them.
std::vector<double> e4m3_grid() {
  std::vector<double> v;
  v.push_back(448.0);  // code 126, the largest (127 is NaN)
  for (int c = 0; c < 126; ++c) {
    const double a = e4m3_decode(static_cast<std::uint8_t>(c)), b = e4m3_decode(static_cast<std::uint8_t>(c + 1));
    const double mid = (a + b) / 2;
    v.push_back(a);
    v.push_back(mid);
    v.push_back(std::nextafter(static_cast<float>(mid), 0.0f));
    v.push_back(std::nextafter(static_cast<float>(mid), 1000.0f));
  }
  return v;
}

// v as T: a double beyond float's range becomes +-inf explicitly (static_cast would be
// undefined there), else it is rounded to nearest.
template <class T>
T to_type(double v) {
  if (sizeof(T) == 4 && std::fabs(v) >= std::ldexp(2 - std::ldexp(1.0, -24), 127))
    return static_cast<T>(v > 0 ? HUGE_VALF : -HUGE_VALF);
  return static_cast<T>(v);
}

// n elements of type T (float or double) in `out` (bytes), pattern p.
template <class T>
void generate(Pattern p, std::size_t n, std::mt19937_64 &g, std::vector<unsigned char> &out) {
  out.assign(n * sizeof(T), 0);
  T *o = reinterpret_cast<T *>(out.data());
  static const std::vector<double> edges = edge_values();
  static const std::vector<double> grid = e4m3_grid();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = i / kFp8Block, k = i % kFp8Block;
    double v = mixed_value(g);
    switch (p) {
      case Pattern::Mixed:
        if (g() % 13 == 0) v = 0;
        break;
      case Pattern::Zeros: v = (g() & 1) ? 0.0 : -0.0; break;
      case Pattern::ZeroBlock:  // block 1 (or the only block) all zeros, the others mixed
        if (b == 1 || n <= kFp8Block) v = (g() & 1) ? 0.0 : -0.0;
        break;
      case Pattern::Edges: {
        const std::size_t q = i % edges.size();
        v = edges[q];
        if ((i / edges.size()) % 2) v = -v;
        break;
      }
      case Pattern::E4m3Grid: {
        // block b at scale 2^x: its first element 448 x 2^x (the block's largest), then the
        // grid x 2^x; x = 0 for block 0, then over -140 .. 20 (below -126 - 9 the scale's
        // floor takes over)
        const int x = static_cast<int>((b * 37 + 140) % 161) - 140;
        v = k == 0 ? 448.0 : grid[(k - 1 + b * 11) % grid.size()];
        v = std::ldexp(v, x);
        if (k != 0 && (g() & 1)) v = -v;
        break;
      }
      case Pattern::Tiny:  // float subnormals and the smallest normals: the scale's floor
        v = std::ldexp(1.0 + static_cast<double>(g() % 1024) / 1024, -149 + static_cast<int>(g() % 36));
        if (g() & 1) v = -v;
        if (g() % 17 == 0) v = 0;
        break;
      case Pattern::Specials:
        break;
    }
    o[i] = to_type<T>(v);
    if (p == Pattern::Specials && (i % 7 == 3 || (b == 2 && n > 3 * kFp8Block))) {
      const std::size_t s = (i / 7 + b) % 8;
      if (sizeof(T) == 4) std::memcpy(&o[i], &kFloatSpecials[s], 4);
      else std::memcpy(&o[i], &kDoubleSpecials[s], 8);
    }
  }
}

bool is_nan_elem(const unsigned char *p, std::size_t es) {
  if (es == 4) {
    std::uint32_t u;
    std::memcpy(&u, p, 4);
    return (u & 0x7fffffffu) > 0x7f800000u;
  }
  std::uint64_t u;
  std::memcpy(&u, p, 8);
  return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}

std::string elem_text(const unsigned char *p, std::size_t es) {
  char s[80];
  if (es == 4) {
    float f;
    std::uint32_t u;
    std::memcpy(&f, p, 4);
    std::memcpy(&u, p, 4);
    std::snprintf(s, sizeof s, "%a (0x%08x)", static_cast<double>(f), u);
  } else {
    double d;
    std::uint64_t u;
    std::memcpy(&d, p, 8);
    std::memcpy(&u, p, 8);
    std::snprintf(s, sizeof s, "%a (0x%016llx)", d, static_cast<unsigned long long>(u));
  }
  return s;
}

bool nan_code(Compress c, const unsigned char *p) {
  if (c == Compress::Fp8) return (p[0] & 0x7f) == 0x7f;
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  if (c == Compress::Bf16) return (h & 0x7fff) > 0x7f80;
  return (h & 0x7fff) > 0x7c00;
}

// Device memory with kGuard filler bytes before and after `bytes` at byte offset `off`.
struct Dev {
  unsigned char *base = nullptr, *p = nullptr;
  std::size_t bytes = 0, off = 0;
  void make(std::size_t b, std::size_t o) {
    bytes = b;
    off = kGuard + o;
    CK(cudaMalloc(&base, bytes + off + kGuard));
    CK(cudaMemset(base, kFill, bytes + off + kGuard));
    p = base + off;
  }
  void put(const std::vector<unsigned char> &h) { CK(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice)); }
  // The output, and whether the bytes around it still hold the filler.
  bool get(std::vector<unsigned char> &h) {
    std::vector<unsigned char> all(bytes + off + kGuard);
    CK(cudaMemcpy(all.data(), base, all.size(), cudaMemcpyDeviceToHost));
    h.assign(all.begin() + static_cast<std::ptrdiff_t>(off), all.begin() + static_cast<std::ptrdiff_t>(off + bytes));
    for (std::size_t k = 0; k < off; ++k)
      if (all[k] != kFill) return false;
    for (std::size_t k = off + bytes; k < all.size(); ++k)
      if (all[k] != kFill) return false;
    return true;
  }
  ~Dev() {
    if (base) cudaFree(base);
  }
};

// Encoded bytes: host vs device. Returns the mismatches; *nan_only: those at NaN inputs
// where both bytes are NaN codes (counted in the return value unless tolerated).
long compare_encoded(Compress c, std::size_t es, std::size_t n, const std::vector<unsigned char> &in,
                     const std::vector<unsigned char> &want, const std::vector<unsigned char> &got, long *nan_only,
                     std::string *detail) {
  const std::size_t nb = (n + kFp8Block - 1) / kFp8Block;
  long bad = 0;
  *nan_only = 0;
  int shown = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (want[k] == got[k]) continue;
    std::size_t elem = 0, first = k;
    bool scale = false;
    if (c == Compress::Fp8) {
      if (k < 4 * nb) scale = true, elem = k / 4;
      else elem = k - 4 * nb;
    } else {
      elem = k / 2;
      first = elem * 2;
      if (k % 2 == 1 && want[k - 1] != got[k - 1]) continue;  // one element, counted once
    }
    const bool tolerable = !scale && is_nan_elem(&in[elem * es], es) && nan_code(c, &want[first]) &&
                           nan_code(c, &got[first]);
    if (tolerable) ++*nan_only;
    if (!tolerable || !nan_codes_any) ++bad;
    if (shown++ < 3) {
      char s[256];
      if (scale)
        std::snprintf(s, sizeof s, " [scale of block %zu: byte %zu host 0x%02x device 0x%02x]", elem, k % 4, want[k],
                      got[k]);
      else if (c == Compress::Fp8)
        std::snprintf(s, sizeof s, " [element %zu = %s: host 0x%02x device 0x%02x%s]", elem,
                      elem_text(&in[elem * es], es).c_str(), want[k], got[k], tolerable ? ", NaN codes both" : "");
      else
        std::snprintf(s, sizeof s, " [element %zu = %s: host 0x%02x%02x device 0x%02x%02x%s]", elem,
                      elem_text(&in[elem * es], es).c_str(), want[first + 1], want[first], got[first + 1], got[first],
                      tolerable ? ", NaN codes both" : "");
      *detail += s;
    }
  }
  return bad;
}

// Decoded values: bit for bit, except NaN against NaN (*nan_payload).
long compare_values(std::size_t es, const std::vector<unsigned char> &want, const std::vector<unsigned char> &got,
                    long *nan_payload, std::string *detail) {
  long bad = 0;
  *nan_payload = 0;
  int shown = 0;
  for (std::size_t i = 0; i * es < want.size(); ++i) {
    const unsigned char *w = &want[i * es], *d = &got[i * es];
    if (std::memcmp(w, d, es) == 0) continue;
    if (is_nan_elem(w, es) && is_nan_elem(d, es)) {
      ++*nan_payload;
      continue;
    }
    ++bad;
    if (shown++ < 3) *detail += " [element " + std::to_string(i) + ": host " + elem_text(w, es) + " device " + elem_text(d, es) + "]";
  }
  return bad;
}

struct Outcome {
  bool ok = true;
  std::string text;
  long nan_payload = 0, nan_codes = 0;
};

void note(Outcome &o, const char *what, long bad, const std::string &detail) {
  if (!bad) return;
  o.ok = false;
  o.text += std::string(" ") + what + ": " + std::to_string(bad) + " differ" + detail + ";";
}

// Device decode (add: decode_add onto `base`) of the host's bytes, against the host's.
void check_decode(Compress c, DType t, std::size_t n, std::size_t eoff, std::size_t voff,
                  const std::vector<unsigned char> &enc, const std::vector<unsigned char> &base, bool add, Outcome &o) {
  const std::size_t es = t == DType::Double ? 8 : 4;
  std::vector<unsigned char> want = base;
  if (add) compress_decode_add(c, t, enc.data(), n, want.data());
  else compress_decode(c, t, enc.data(), n, want.data());
  Dev de, dv;
  de.make(enc.size(), eoff);
  dv.make(n * es, voff);
  de.put(enc);
  if (add) dv.put(base);
  CK(cudaDeviceSynchronize());  // the copies and fills land before the non-blocking stream reads
  const cudaError_t e = cuda_compress_decode(c, t, de.p, n, dv.p, add, stream);
  if (e != cudaSuccess) {
    o.ok = false;
    o.text += std::string(" ") + (add ? "decode_add" : "decode") + ": launch " + cudaGetErrorString(e) + ";";
    return;
  }
  CK(cudaStreamSynchronize(stream));
  std::vector<unsigned char> got;
  if (!dv.get(got)) {
    o.ok = false;
    o.text += std::string(" ") + (add ? "decode_add" : "decode") + ": wrote outside its output;";
  }
  long nanp = 0;
  std::string detail;
  const long bad = compare_values(es, want, got, &nanp, &detail);
  note(o, add ? "decode_add" : "decode", bad, detail);
  o.nan_payload += nanp;
}

void report(const char *fmt_name, const char *type_name, std::size_t n, const char *what, const Outcome &o) {
  ++cases;
  if (!o.ok) ++failed_cases;
  if (o.nan_payload) ++nan_payload_cases;
  if (o.nan_codes) ++nan_code_cases;
  std::string extra;
  if (o.nan_payload) extra += " (NaN payloads differ: " + std::to_string(o.nan_payload) + ")";
  if (o.nan_codes) extra += std::string(" (NaN codes differ at NaN inputs: ") + std::to_string(o.nan_codes) +
                            (nan_codes_any ? ", tolerated)" : ")");
  std::printf("%s %-4s %-6s n=%-8zu %-10s%s%s\n", o.ok ? "ok  " : "FAIL", fmt_name, type_name, n, what,
              o.ok ? " encode, decode, decode_add equal" : o.text.c_str(), extra.c_str());
  std::fflush(stdout);
}

template <class T>
void run_case(Compress c, DType t, std::size_t n, Pattern p, std::mt19937_64 &g) {
  const std::size_t es = sizeof(T);
  std::vector<unsigned char> in, base;
  generate<T>(p, n, g, in);
  generate<T>(p == Pattern::Specials ? Pattern::Specials : Pattern::Mixed, n, g, base);  // decode_add's dst
  const std::size_t cb = compressed_bytes(c, n);
  std::vector<unsigned char> want(cb);
  compress_encode(c, t, in.data(), n, want.data());
  // Odd sizes at odd offsets: the source by one element, the bytes by 2 (bf16, fp16: their
  // alignment) or 1 (fp8), the values by one element.
  const bool odd = n % 2 == 1;
  const std::size_t voff = odd ? es : 0, eoff = odd ? (c == Compress::Fp8 ? 1 : 2) : 0;
  Outcome o;
  Dev ds, dd;
  ds.make(n * es, voff);
  dd.make(cb, eoff);
  ds.put(in);
  CK(cudaDeviceSynchronize());
  const cudaError_t e = cuda_compress_encode(c, t, ds.p, n, dd.p, stream);
  if (e != cudaSuccess) {
    o.ok = false;
    o.text += std::string(" encode: launch ") + cudaGetErrorString(e) + ";";
  } else {
    CK(cudaStreamSynchronize(stream));
    std::vector<unsigned char> got;
    if (!dd.get(got)) {
      o.ok = false;
      o.text += " encode: wrote outside its output;";
    }
    std::vector<unsigned char> after;
    if (!ds.get(after) || after != in) {
      o.ok = false;
      o.text += " encode: changed its source;";
    }
    long nan_only = 0;
    std::string detail;
    const long bad = compare_encoded(c, es, n, in, want, got, &nan_only, &detail);
    o.nan_codes = nan_only;
    note(o, "encode", bad, detail);
  }
  check_decode(c, t, n, eoff, voff, want, base, false, o);
  check_decode(c, t, n, eoff, voff, want, base, true, o);
  report(compress_name(c), t == DType::Double ? "double" : "float", n, pattern_name(p), o);
}

// Every code decoded: bf16 / fp16 all 65536 values; fp8 all 256 codes in blocks of
// several scales (those an encoding makes: 2^-126 up to FLT_MAX / 448, and others).
void run_every_code(Compress c, DType t, std::mt19937_64 &g) {
  std::vector<unsigned char> enc;
  std::size_t n;
  if (c == Compress::Fp8) {
    const float scales[] = {1.0f, FLT_MIN, FLT_MAX / 448.0f, std::ldexp(1.0f, -20), 0.013f, 3.5e20f, 1.0f / 448.0f,
                            std::ldexp(1.0f, -100)};
    const std::size_t nb = sizeof scales / sizeof scales[0];
    n = nb * kFp8Block;
    enc.resize(compressed_bytes(c, n));
    for (std::size_t b = 0; b < nb; ++b) std::memcpy(&enc[4 * b], &scales[b], 4);
    for (std::size_t i = 0; i < n; ++i) enc[4 * nb + i] = static_cast<unsigned char>(i % 256);
  } else {
    n = 65536;
    enc.resize(compressed_bytes(c, n));
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t h = static_cast<std::uint16_t>(i);
      std::memcpy(&enc[2 * i], &h, 2);
    }
  }
  std::vector<unsigned char> base;
  if (t == DType::Double) generate<double>(Pattern::Mixed, n, g, base);
  else generate<float>(Pattern::Mixed, n, g, base);
  Outcome o;
  check_decode(c, t, n, 0, 0, enc, base, false, o);
  check_decode(c, t, n, 0, 0, enc, base, true, o);
  report(compress_name(c), t == DType::Double ? "double" : "float", n, "every_code", o);
}

// The launchers' refusals and n = 0: cudaErrorInvalidValue and nothing written.
void run_refusals() {
  Outcome o;
  Dev s, d;
  s.make(64, 0);
  d.make(64, 0);
  CK(cudaDeviceSynchronize());
  struct Try {
    const char *what;
    cudaError_t got, want;
  } tries[] = {
      {"encode off", cuda_compress_encode(Compress::Off, DType::Float, s.p, 4, d.p, stream), cudaErrorInvalidValue},
      {"encode int32", cuda_compress_encode(Compress::Bf16, DType::Int32, s.p, 4, d.p, stream), cudaErrorInvalidValue},
      {"decode off", cuda_compress_decode(Compress::Off, DType::Double, s.p, 4, d.p, false, stream),
       cudaErrorInvalidValue},
      {"decode_add half", cuda_compress_decode(Compress::Fp8, DType::Half, s.p, 4, d.p, true, stream),
       cudaErrorInvalidValue},
      {"encode n=0", cuda_compress_encode(Compress::Fp8, DType::Float, s.p, 0, d.p, stream), cudaSuccess},
      {"decode n=0", cuda_compress_decode(Compress::Bf16, DType::Double, s.p, 0, d.p, false, stream), cudaSuccess},
  };
  CK(cudaStreamSynchronize(stream));
  cudaGetLastError();
  for (const Try &x : tries)
    if (x.got != x.want) {
      o.ok = false;
      o.text += std::string(" ") + x.what + ": " + cudaGetErrorString(x.got) + ", expected " + cudaGetErrorString(x.want) + ";";
    }
  std::vector<unsigned char> h;
  if (!d.get(h) || h != std::vector<unsigned char>(64, kFill)) {
    o.ok = false;
    o.text += " a refused or empty call wrote its output;";
  }
  report("-", "-", 0, "refusals", o);
}

// Throughput of the kernels alone (printed, not asserted): 2^24 floats, each format.
void throughput() {
  const std::size_t n = std::size_t{1} << 24;
  float *src = nullptr, *dst = nullptr;
  unsigned char *enc = nullptr;
  CK(cudaMalloc(&src, n * 4));
  CK(cudaMalloc(&dst, n * 4));
  CK(cudaMalloc(&enc, compressed_bytes(Compress::Fp8, n) + 2 * n));
  CK(cudaMemset(src, 0x3c, n * 4));
  CK(cudaMemset(dst, 0, n * 4));
  cudaEvent_t e0, e1, e2;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventCreate(&e2));
  CK(cudaDeviceSynchronize());
  for (Compress c : {Compress::Bf16, Compress::Fp16, Compress::Fp8}) {
    CK(cuda_compress_encode(c, DType::Float, src, n, enc, stream));  // warm-up
    CK(cudaEventRecord(e0, stream));
    for (int k = 0; k < 10; ++k) CK(cuda_compress_encode(c, DType::Float, src, n, enc, stream));
    CK(cudaEventRecord(e1, stream));
    for (int k = 0; k < 10; ++k) CK(cuda_compress_decode(c, DType::Float, enc, n, dst, true, stream));
    CK(cudaEventRecord(e2, stream));
    CK(cudaEventSynchronize(e2));
    float ms_e = 0, ms_d = 0;
    CK(cudaEventElapsedTime(&ms_e, e0, e1));
    CK(cudaEventElapsedTime(&ms_d, e1, e2));
    std::printf("info %-4s float n=2^24: encode %.1f GB/s, decode_add %.1f GB/s (of float input, %.3f / %.3f ms)\n",
                compress_name(c), n * 4.0 / (ms_e / 10) / 1e6, n * 4.0 / (ms_d / 10) / 1e6, ms_e / 10, ms_d / 10);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaEventDestroy(e2));
  CK(cudaFree(src));
  CK(cudaFree(dst));
  CK(cudaFree(enc));
}

}  // namespace

int main() {
  int ndev = 0;
  const cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    std::printf("SKIPPED: no GPU (cudaGetDeviceCount: %s, %d devices): the compression kernels need a real GPU "
                "(the emulated GPU runs the host functions)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "no error", ndev);
    return 77;
  }
  const char *nc = std::getenv("GCOLLTEST_COMPRESS_NAN_CODES");
  nan_codes_any = nc && std::strcmp(nc, "any") == 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937_64 g(32);
  const std::size_t sizes[] = {1, 255, 256, 257, 4096 + 3, std::size_t{1} << 20};
  for (Compress c : {Compress::Bf16, Compress::Fp16, Compress::Fp8})
    for (DType t : {DType::Float, DType::Double})
      for (std::size_t n : sizes)
        for (Pattern p : kPatterns) {
          if (t == DType::Double) run_case<double>(c, t, n, p, g);
          else run_case<float>(c, t, n, p, g);
        }
  for (Compress c : {Compress::Bf16, Compress::Fp16, Compress::Fp8})
    for (DType t : {DType::Float, DType::Double}) run_every_code(c, t, g);
  run_refusals();
  throughput();
  CK(cudaStreamDestroy(stream));
  std::printf("%s: %d cases, %d failed; NaN payloads differing (allowed) in %d, NaN codes differing at NaN inputs "
              "in %d%s\n",
              failed_cases ? "FAILED" : "PASSED", cases, failed_cases, nan_payload_cases, nan_code_cases,
              nan_code_cases ? (nan_codes_any ? " (tolerated: GCOLLTEST_COMPRESS_NAN_CODES=any)" : " (counted as failures)")
                             : "");
  return failed_cases ? 1 : 0;
}
