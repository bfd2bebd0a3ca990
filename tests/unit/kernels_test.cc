// Host reduction kernels against a scalar reference written here, independently of
// src/kernels/functors.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernels/elements.h"
#include "kernels/host_reduce.h"
#include "kernels/types.h"

namespace gcoll {

// Readable parameters in gtest's messages.
void PrintTo(DType t, std::ostream *os) { *os << dtype_name(t); }
void PrintTo(ROp o, std::ostream *os) { *os << rop_name(o); }

namespace {

using Rng = std::mt19937_64;

// MPI's C pair structs and C complex types, declared as an MPI user would.
struct FloatIntC { float v; int i; };
struct DoubleIntC { double v; int i; };
struct LongIntC { long v; int i; };
struct IntIntC { int v; int i; };
struct ShortIntC { short v; int i; };
struct LongDoubleIntC { long double v; int i; };
struct FloatFloatC { float v; float i; };
struct DoubleDoubleC { double v; double i; };
struct CFloatC { float re, im; };
struct CDoubleC { double re, im; };
struct Bf16C { std::uint16_t bits; };
struct HalfC { std::uint16_t bits; };

// ---- reference arithmetic ----------------------------------------------------------

// Integers wrap around: computed in uint64 and truncated to the type's width.
template <class T>
T ref_integer(ROp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const std::uint64_t ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (op) {
    case ROp::Sum: return static_cast<T>(static_cast<U>(ua + ub));
    case ROp::Prod: return static_cast<T>(static_cast<U>(ua * ub));
    case ROp::Max: return a < b ? b : a;
    case ROp::Min: return b < a ? b : a;
    case ROp::Land: return (a != 0 && b != 0) ? 1 : 0;
    case ROp::Lor: return (a != 0 || b != 0) ? 1 : 0;
    case ROp::Lxor: return ((a != 0) ^ (b != 0)) ? 1 : 0;
    case ROp::Band: return static_cast<T>(static_cast<U>(ua & ub));
    case ROp::Bor: return static_cast<T>(static_cast<U>(ua | ub));
    case ROp::Bxor: return static_cast<T>(static_cast<U>(ua ^ ub));
    default: ADD_FAILURE() << "no integer reference for " << rop_name(op); return 0;
  }
}

// MAX/MIN keep the accumulated value unless the next one compares strictly beyond it.
template <class T>
T ref_floating(ROp op, T a, T b) {
  switch (op) {
    case ROp::Sum: return a + b;
    case ROp::Prod: return a * b;
    case ROp::Max: return a < b ? b : a;
    case ROp::Min: return b < a ? b : a;
    default: ADD_FAILURE() << "no float reference for " << rop_name(op); return a;
  }
}

template <class C>
C ref_complex(ROp op, C a, C b) {
  if (op == ROp::Sum) return {a.re + b.re, a.im + b.im};
  EXPECT_EQ(op, ROp::Prod);
  return {a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im};
}

template <class P>
P ref_pair(ROp op, P a, P b) {
  if (a.v == b.v) return {a.v, std::min(a.i, b.i)};
  if (op == ROp::Minloc) return a.v < b.v ? a : b;
  EXPECT_EQ(op, ROp::Maxloc);
  return a.v > b.v ? a : b;
}

// bfloat16: the exact value rounded to 8 significant bits, nearest even, by scaling.
double round_bf16(double r) {
  if (r == 0 || std::isinf(r)) return r;
  const int e = std::max(std::ilogb(r), -126);  // bf16 keeps float's exponent range
  const double ulp = std::ldexp(1.0, e - 7);
  const double q = std::nearbyint(r / ulp) * ulp;  // default mode: ties to even
  return std::fabs(q) > 3.3895313892515355e38 ? std::copysign(INFINITY, q) : q;
}

double bf16_value(Bf16C h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

Bf16C bf16_of(double exact_in_bf16) {
  const float f = static_cast<float>(exact_in_bf16);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return {static_cast<std::uint16_t>(u >> 16)};
}

Bf16C ref_bf16(ROp op, Bf16C a, Bf16C b) {
  const double x = bf16_value(a), y = bf16_value(b);
  switch (op) {
    case ROp::Sum: return bf16_of(round_bf16(x + y));
    case ROp::Prod: return bf16_of(round_bf16(x * y));
    case ROp::Max: return x < y ? b : a;
    case ROp::Min: return y < x ? b : a;
    default: ADD_FAILURE(); return a;
  }
}

#ifdef __FLT16_MAX__
constexpr bool kHaveFloat16 = true;
_Float16 f16(HalfC h) {
  _Float16 f;
  std::memcpy(&f, &h.bits, 2);
  return f;
}
HalfC half_of(_Float16 f) {
  HalfC h;
  std::memcpy(&h.bits, &f, 2);
  return h;
}
HalfC ref_half(ROp op, HalfC a, HalfC b) {
  const _Float16 x = f16(a), y = f16(b);
  _Float16 r;
  switch (op) {
    case ROp::Sum: r = x + y; break;
    case ROp::Prod: r = x * y; break;
    case ROp::Max: return x < y ? b : a;
    case ROp::Min: return y < x ? b : a;
    default: ADD_FAILURE(); return a;
  }
  return half_of(r);
}
#else
constexpr bool kHaveFloat16 = false;
HalfC ref_half(ROp, HalfC a, HalfC) { return a; }
#endif

// ---- random inputs ----------------------------------------------------------------

// Integers: full range, a quarter of them zero (so that the logical ops see both).
template <class T>
T gen_integer(Rng &g) {
  return g() % 4 == 0 ? T(0) : static_cast<T>(g());
}

// Floats: k/64 for |k| <= 128, i.e. within [-2, 2] (no overflow in a product of 7),
// with both signed zeros now and then.
template <class T>
T gen_floating(Rng &g) {
  const int k = static_cast<int>(g() % 257) - 128;
  if (g() % 16 == 0) return g() % 2 ? T(0) : -T(0);
  return static_cast<T>(k) / T(64);
}

Bf16C gen_bf16(Rng &g) { return bf16_of(static_cast<double>(static_cast<int>(g() % 511) - 255) / 128); }

HalfC gen_half(Rng &g) {
#ifdef __FLT16_MAX__
  return half_of(static_cast<_Float16>(static_cast<float>(static_cast<int>(g() % 4095) - 2047) / 1024));
#else
  return {static_cast<std::uint16_t>(g())};
#endif
}

// Pairs: few distinct values and indices, so that ties are frequent.
template <class P>
P gen_pair(Rng &g) {
  P p;
  p.v = static_cast<decltype(p.v)>(static_cast<int>(g() % 4) - 1);
  p.i = static_cast<decltype(p.i)>(g() % 8);
  return p;
}

// ---- type-erased element handling ------------------------------------------------------

struct TypeOps {
  std::size_t size;
  void (*gen)(Rng &g, void *elem);
  void (*apply)(ROp op, void *acc, const void *x);  // *acc = *acc (op) *x
  bool (*equal)(const void *a, const void *b);
};

// Bytes that hold the value (not padding): long double is 10 bytes on x87.
template <class T>
constexpr std::size_t value_bytes() {
  if constexpr (std::is_same_v<T, long double>) {
    return std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(long double);
  } else {
    return sizeof(T);
  }
}

template <class T>
bool same_value(const T &a, const T &b) {
  return std::memcmp(&a, &b, value_bytes<T>()) == 0;
}

template <class T, T (*Gen)(Rng &), T (*Ref)(ROp, T, T), bool (*Eq)(const T &, const T &)>
TypeOps make_ops() {
  TypeOps o;
  o.size = sizeof(T);
  o.gen = [](Rng &g, void *e) {
    const T v = Gen(g);
    std::memcpy(e, &v, sizeof v);
  };
  o.apply = [](ROp op, void *acc, const void *x) {
    T a, b;
    std::memcpy(&a, acc, sizeof a);
    std::memcpy(&b, x, sizeof b);
    a = Ref(op, a, b);
    std::memcpy(acc, &a, sizeof a);
  };
  o.equal = [](const void *a, const void *b) {
    T x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, b, sizeof y);
    return Eq(x, y);
  };
  return o;
}

template <class T>
bool same_bits(const T &a, const T &b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}
template <class C>
bool same_complex(const C &a, const C &b) {
  return same_value(a.re, b.re) && same_value(a.im, b.im);
}
template <class P>
bool same_pair(const P &a, const P &b) {
  return same_value(a.v, b.v) && same_value(a.i, b.i);
}

template <class T>
TypeOps integer_ops() {
  return make_ops<T, gen_integer<T>, ref_integer<T>, same_bits<T>>();
}
template <class T>
TypeOps floating_ops() {
  return make_ops<T, gen_floating<T>, ref_floating<T>, same_value<T>>();
}
template <class C, class V>
C gen_complex(Rng &g) {
  return {gen_floating<V>(g), gen_floating<V>(g)};
}
template <class P>
TypeOps pair_ops() {
  return make_ops<P, gen_pair<P>, ref_pair<P>, same_pair<P>>();
}
std::uint8_t gen_bool(Rng &g) {
  static const std::uint8_t kValues[] = {0, 0, 1, 1, 2, 255};  // nonzero is true
  return kValues[g() % 6];
}

TypeOps ops_for(DType t) {
  switch (t) {
    case DType::Int8: return integer_ops<std::int8_t>();
    case DType::Int16: return integer_ops<std::int16_t>();
    case DType::Int32: return integer_ops<std::int32_t>();
    case DType::Int64: return integer_ops<std::int64_t>();
    case DType::Uint8: return integer_ops<std::uint8_t>();
    case DType::Uint16: return integer_ops<std::uint16_t>();
    case DType::Uint32: return integer_ops<std::uint32_t>();
    case DType::Uint64: return integer_ops<std::uint64_t>();
    case DType::Float: return floating_ops<float>();
    case DType::Double: return floating_ops<double>();
    case DType::LongDouble: return floating_ops<long double>();
    case DType::Half: return make_ops<HalfC, gen_half, ref_half, same_bits<HalfC>>();
    case DType::BFloat16: return make_ops<Bf16C, gen_bf16, ref_bf16, same_bits<Bf16C>>();
    case DType::CFloatComplex:
      return make_ops<CFloatC, gen_complex<CFloatC, float>, ref_complex<CFloatC>,
                      same_complex<CFloatC>>();
    case DType::CDoubleComplex:
      return make_ops<CDoubleC, gen_complex<CDoubleC, double>, ref_complex<CDoubleC>,
                      same_complex<CDoubleC>>();
    case DType::Bool:
      return make_ops<std::uint8_t, gen_bool, ref_integer<std::uint8_t>, same_bits<std::uint8_t>>();
    case DType::FloatInt: return pair_ops<FloatIntC>();
    case DType::DoubleInt: return pair_ops<DoubleIntC>();
    case DType::LongInt: return pair_ops<LongIntC>();
    case DType::IntInt: return pair_ops<IntIntC>();
    case DType::ShortInt: return pair_ops<ShortIntC>();
    case DType::LongDoubleInt: return pair_ops<LongDoubleIntC>();
    case DType::FloatFloat: return pair_ops<FloatFloatC>();
    case DType::DoubleDouble: return pair_ops<DoubleDoubleC>();
    case DType::kCount: break;
  }
  ADD_FAILURE() << "no test type for " << static_cast<int>(t);
  return {};
}

// ---- buffers ------------------------------------------------------------------------

constexpr std::size_t kGuard = 64;              // bytes after the data that must stay intact
constexpr unsigned char kGuardByte = 0xa5;

// `count` elements at a chosen offset from a 64-byte boundary, followed by a guard.
class Buffer {
 public:
  Buffer(std::size_t bytes, std::size_t offset) : mem_(bytes + kGuard + 128, kGuardByte) {
    const auto base = reinterpret_cast<std::uintptr_t>(mem_.data());
    data_ = mem_.data() + ((64 - base % 64) % 64) + offset;
    bytes_ = bytes;
  }
  unsigned char *data() { return data_; }
  bool guard_intact() const {
    for (std::size_t k = 0; k < kGuard; ++k) {
      if (data_[bytes_ + k] != kGuardByte) return false;
    }
    return true;
  }

 private:
  std::vector<unsigned char> mem_;
  unsigned char *data_;
  std::size_t bytes_;
};

std::string hex(const void *p, std::size_t n) {
  std::string s;
  char b[4];
  for (std::size_t k = 0; k < n; ++k) {
    std::snprintf(b, sizeof b, "%02x", static_cast<const unsigned char *>(p)[k]);
    s += b;
  }
  return s;
}

// Runs host_reduce over m random sources (dst separate, then dst == each source in
// turn) and compares with the reference fold.
void check_reduce(DType t, ROp op, int m, std::size_t count, std::size_t offset, Rng &g) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " " + rop_name(op) + " m=" + std::to_string(m) +
               " count=" + std::to_string(count) + " offset=" + std::to_string(offset));
  const TypeOps o = ops_for(t);
  const std::size_t bytes = count * o.size;
  std::vector<Buffer> src;
  for (int s = 0; s < m; ++s) {
    src.emplace_back(bytes, offset);
    for (std::size_t i = 0; i < count; ++i) o.gen(g, src.back().data() + i * o.size);
  }
  // reference: left fold in source order
  std::vector<unsigned char> want(bytes);
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char *acc = want.data() + i * o.size;
    std::memcpy(acc, src[0].data() + i * o.size, o.size);
    for (int s = 1; s < m; ++s) o.apply(op, acc, src[s].data() + i * o.size);
  }
  auto expect_result = [&](Buffer &dst, const char *what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(dst.guard_intact()) << "wrote past count";
    int shown = 0;
    for (std::size_t i = 0; i < count && shown < 5; ++i) {
      const unsigned char *got = dst.data() + i * o.size;
      const unsigned char *exp = want.data() + i * o.size;
      if (!o.equal(got, exp)) {
        ++shown;
        ADD_FAILURE() << "element " << i << ": got " << hex(got, o.size) << ", want "
                      << hex(exp, o.size);
      }
    }
  };
  std::vector<const void *> ptrs;
  for (auto &b : src) ptrs.push_back(b.data());

  Buffer dst(bytes, offset);
  ASSERT_TRUE(ok(host_reduce(t, op, dst.data(), ptrs.data(), m, count)));
  expect_result(dst, "separate dst");

  // in place: dst is srcs[0]
  Buffer alias(bytes, offset);
  std::memcpy(alias.data(), src[0].data(), bytes);
  ptrs[0] = alias.data();
  ASSERT_TRUE(ok(host_reduce(t, op, alias.data(), ptrs.data(), m, count)));
  expect_result(alias, "dst == srcs[0]");
  ptrs[0] = src[0].data();

  // in place at another source, as the two-shot allreduce does on local rank k: dst is
  // srcs[k] (the CUDA kernel allows it; the emulated GPU runs these host kernels)
  for (int k = 1; k < m; ++k) {
    Buffer at_k(bytes, offset);
    std::memcpy(at_k.data(), src[k].data(), bytes);
    ptrs[k] = at_k.data();
    ASSERT_TRUE(ok(host_reduce(t, op, at_k.data(), ptrs.data(), m, count)));
    expect_result(at_k, ("dst == srcs[" + std::to_string(k) + "]").c_str());
    ptrs[k] = src[k].data();
  }
}

// ---- tests --------------------------------------------------------------------------

std::vector<std::tuple<DType, ROp>> supported_cases() {
  std::vector<std::tuple<DType, ROp>> v;
  for (int t = 0; t < kNumDTypes; ++t) {
    for (int o = 0; o < kNumROps; ++o) {
      if (op_supported(static_cast<ROp>(o), static_cast<DType>(t))) {
        v.emplace_back(static_cast<DType>(t), static_cast<ROp>(o));
      }
    }
  }
  return v;
}

class KernelReduce : public ::testing::TestWithParam<std::tuple<DType, ROp>> {};

TEST_P(KernelReduce, MatchesReference) {
  const auto [t, op] = GetParam();
  if (t == DType::Half && !kHaveFloat16) GTEST_SKIP() << "no _Float16 for the reference";
  Rng g(0x6763'6f6c'6cull + 1000u * static_cast<unsigned>(t) + static_cast<unsigned>(op));
  for (int m : {1, 2, 3, 7}) {
    // 20011 elements span several 8 KiB blocks for every element size
    for (std::size_t count : {0, 1, 3, 17, 1001, 20011}) check_reduce(t, op, m, count, 0, g);
  }
}

TEST_P(KernelReduce, MisalignedBuffers) {
  const auto [t, op] = GetParam();
  if (t == DType::Half && !kHaveFloat16) GTEST_SKIP() << "no _Float16 for the reference";
  Rng g(0x6d69'7361'6c69ull + 1000u * static_cast<unsigned>(t) + static_cast<unsigned>(op));
  check_reduce(t, op, 3, 1001, 1, g);  // one byte past alignment: the staged path
  check_reduce(t, op, 2, 5000, 3, g);
}

INSTANTIATE_TEST_SUITE_P(All, KernelReduce, ::testing::ValuesIn(supported_cases()),
                         [](const ::testing::TestParamInfo<std::tuple<DType, ROp>> &info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  rop_name(std::get<1>(info.param));
                         });

TEST(KernelReduceArgs, UnsupportedReturnsFalseAndTouchesNothing) {
  unsigned char a[64], b[64], d[64];
  std::memset(a, 1, sizeof a);
  std::memset(b, 2, sizeof b);
  const void *srcs[] = {a, b};
  int unsupported = 0;
  for (int t = 0; t < kNumDTypes; ++t) {
    for (int o = 0; o < kNumROps; ++o) {
      if (op_supported(static_cast<ROp>(o), static_cast<DType>(t))) continue;
      ++unsupported;
      std::memset(d, 7, sizeof d);
      for (int m : {1, 2}) {
        EXPECT_FALSE(ok(host_reduce(static_cast<DType>(t), static_cast<ROp>(o), d, srcs, m, 1)))
            << dtype_name(static_cast<DType>(t)) << " " << rop_name(static_cast<ROp>(o));
      }
      for (unsigned char c : d) ASSERT_EQ(c, 7);
    }
  }
  EXPECT_EQ(unsupported, kNumDTypes * kNumROps - static_cast<int>(supported_cases().size()));
  EXPECT_FALSE(ok(host_reduce(DType::Float, ROp::Band, d, srcs, 2, 4)));
  EXPECT_FALSE(ok(host_reduce(DType::Bool, ROp::Sum, d, srcs, 2, 4)));
  EXPECT_FALSE(ok(host_reduce(DType::Int32, ROp::Minloc, d, srcs, 2, 4)));
  EXPECT_FALSE(ok(host_reduce(DType::Int32, ROp::Sum, d, srcs, 0, 4)));  // m < 1
  EXPECT_FALSE(ok(host_reduce(DType::kCount, ROp::Sum, d, srcs, 2, 4)));
  EXPECT_FALSE(ok(host_reduce(DType::Int32, ROp::kCount, d, srcs, 2, 4)));
}

TEST(KernelTypes, OpSupportedTable) {
  // 8 integer types x 10 ops, 5 float types x 4, 2 complex x 2, Bool x 3, 8 pairs x 2
  EXPECT_EQ(supported_cases().size(), 80u + 20u + 4u + 3u + 16u);
  EXPECT_TRUE(op_supported(ROp::Bxor, DType::Uint8));  // MPI_BYTE
  EXPECT_TRUE(op_supported(ROp::Lxor, DType::Int64));
  EXPECT_TRUE(op_supported(ROp::Prod, DType::CDoubleComplex));
  EXPECT_TRUE(op_supported(ROp::Lor, DType::Bool));
  EXPECT_TRUE(op_supported(ROp::Max, DType::Half));
  EXPECT_TRUE(op_supported(ROp::Min, DType::BFloat16));
  EXPECT_TRUE(op_supported(ROp::Maxloc, DType::LongDoubleInt));
  EXPECT_TRUE(op_supported(ROp::Minloc, DType::FloatFloat));
  EXPECT_FALSE(op_supported(ROp::Max, DType::CFloatComplex));
  EXPECT_FALSE(op_supported(ROp::Land, DType::Double));
  EXPECT_FALSE(op_supported(ROp::Band, DType::Float));
  EXPECT_FALSE(op_supported(ROp::Sum, DType::Bool));
  EXPECT_FALSE(op_supported(ROp::Max, DType::Bool));
  EXPECT_FALSE(op_supported(ROp::Minloc, DType::Int32));
  EXPECT_FALSE(op_supported(ROp::Sum, DType::DoubleInt));
  EXPECT_FALSE(op_supported(ROp::Sum, DType::kCount));
  EXPECT_FALSE(op_supported(ROp::kCount, DType::Int32));
}

TEST(KernelTypes, SizesMatchCStructs) {
  EXPECT_EQ(dtype_size(DType::Int8), sizeof(std::int8_t));
  EXPECT_EQ(dtype_size(DType::Int16), sizeof(std::int16_t));
  EXPECT_EQ(dtype_size(DType::Int32), sizeof(std::int32_t));
  EXPECT_EQ(dtype_size(DType::Int64), sizeof(std::int64_t));
  EXPECT_EQ(dtype_size(DType::Uint8), sizeof(std::uint8_t));
  EXPECT_EQ(dtype_size(DType::Uint16), sizeof(std::uint16_t));
  EXPECT_EQ(dtype_size(DType::Uint32), sizeof(std::uint32_t));
  EXPECT_EQ(dtype_size(DType::Uint64), sizeof(std::uint64_t));
  EXPECT_EQ(dtype_size(DType::Float), sizeof(float));
  EXPECT_EQ(dtype_size(DType::Double), sizeof(double));
  EXPECT_EQ(dtype_size(DType::LongDouble), sizeof(long double));
  EXPECT_EQ(dtype_size(DType::Half), 2u);
  EXPECT_EQ(dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::CFloatComplex), sizeof(std::complex<float>));
  EXPECT_EQ(dtype_size(DType::CDoubleComplex), sizeof(std::complex<double>));
  EXPECT_EQ(dtype_size(DType::Bool), sizeof(bool));
  EXPECT_EQ(dtype_size(DType::FloatInt), sizeof(FloatIntC));
  EXPECT_EQ(dtype_size(DType::DoubleInt), sizeof(DoubleIntC));
  EXPECT_EQ(dtype_size(DType::LongInt), sizeof(LongIntC));
  EXPECT_EQ(dtype_size(DType::IntInt), sizeof(IntIntC));
  EXPECT_EQ(dtype_size(DType::ShortInt), sizeof(ShortIntC));
  EXPECT_EQ(dtype_size(DType::LongDoubleInt), sizeof(LongDoubleIntC));
  EXPECT_EQ(dtype_size(DType::FloatFloat), sizeof(FloatFloatC));
  EXPECT_EQ(dtype_size(DType::DoubleDouble), sizeof(DoubleDoubleC));
  EXPECT_EQ(dtype_size(DType::kCount), 0u);
  // the test's element types have the kernels' sizes too
  for (int t = 0; t < kNumDTypes; ++t) {
    EXPECT_EQ(ops_for(static_cast<DType>(t)).size, dtype_size(static_cast<DType>(t)));
  }
}

TEST(KernelTypes, NamesAreDistinct) {
  std::set<std::string> names;
  for (int t = 0; t < kNumDTypes; ++t) names.insert(dtype_name(static_cast<DType>(t)));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kNumDTypes));
  EXPECT_EQ(names.count("?"), 0u);
  names.clear();
  for (int o = 0; o < kNumROps; ++o) names.insert(rop_name(static_cast<ROp>(o)));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kNumROps));
  EXPECT_EQ(names.count("?"), 0u);
  EXPECT_STREQ(dtype_name(DType::kCount), "?");
  EXPECT_STREQ(rop_name(ROp::kCount), "?");
}

// The one list (type_op_list.h) as the tests see it: every table must agree with it.
template <class T>
constexpr bool kHasLongDouble = std::is_same_v<T, long double>;
template <class V, class I>
constexpr bool kHasLongDouble<Pair<V, I>> = kHasLongDouble<V> || kHasLongDouble<I>;

struct ListType {
  DType t;
  const char *name;
  std::size_t size;
  OpSet ops;
  std::string cuda_unit;
  bool long_double;
};

const ListType kListTypes[] = {
#define GCOLL_X(dtype, name, ops, unit, mpi, ...) \
  {DType::dtype, name, sizeof(__VA_ARGS__), ops, #unit, kHasLongDouble<__VA_ARGS__>},
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
};

struct ListOp {
  ROp op;
  const char *name;
  std::string mpi;
};

const ListOp kListOps[] = {
#define GCOLL_X(rop, name, group, mpi) {ROp::rop, name, #mpi},
    GCOLL_ROPS(GCOLL_X)
#undef GCOLL_X
};

// The enums are in list order, and names, sizes and op sets are the list's; the host
// has a kernel for exactly the (type, op) pairs the list allows.
TEST(KernelTypes, TablesFollowTheList) {
  ASSERT_EQ(std::size(kListTypes), static_cast<std::size_t>(kNumDTypes));
  ASSERT_EQ(std::size(kListOps), static_cast<std::size_t>(kNumROps));
  for (int i = 0; i < kNumROps; ++i) {
    const ListOp &l = kListOps[i];
    SCOPED_TRACE(l.name);
    EXPECT_EQ(static_cast<int>(l.op), i);
    EXPECT_STREQ(rop_name(l.op), l.name);
    // the MPI column names the same op (MPI_SUM for "sum")
    std::string upper = l.name;
    for (char &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(l.mpi, "MPI_" + upper);
  }
  unsigned char a[64] = {}, b[64] = {}, d[64];
  const void *srcs[] = {a, b};
  for (int i = 0; i < kNumDTypes; ++i) {
    const ListType &l = kListTypes[i];
    SCOPED_TRACE(l.name);
    EXPECT_EQ(static_cast<int>(l.t), i);
    EXPECT_STREQ(dtype_name(l.t), l.name);
    EXPECT_EQ(dtype_size(l.t), l.size);
    EXPECT_NE(l.ops, 0u);
    // no long double on the device: exactly those types have no CUDA unit
    EXPECT_EQ(l.cuda_unit == "None", l.long_double);
    for (int o = 0; o < kNumROps; ++o) {
      const ROp op = static_cast<ROp>(o);
      const bool listed = (l.ops & op_bit(op)) != 0;
      EXPECT_EQ(op_supported(op, l.t), listed) << rop_name(op);
      EXPECT_EQ(ok(host_reduce(l.t, op, d, srcs, 2, 1)), listed) << rop_name(op);
    }
  }
}

// MINLOC/MAXLOC: smaller/larger value wins; equal values take the smaller index,
// whatever the source order.
TEST(KernelReduceLoc, TieBreaking) {
  const FloatIntC a[] = {{1.0f, 5}, {3.0f, 4}, {2.0f, 8}, {-1.0f, 3}};
  const FloatIntC b[] = {{1.0f, 2}, {1.0f, 9}, {5.0f, 1}, {-1.0f, 3}};
  const FloatIntC c[] = {{1.0f, 7}, {1.0f, 3}, {5.0f, 0}, {-1.0f, 0}};
  const void *srcs[] = {a, b, c};
  FloatIntC d[4];
  ASSERT_TRUE(ok(host_reduce(DType::FloatInt, ROp::Minloc, d, srcs, 3, 4)));
  const FloatIntC want_min[] = {{1.0f, 2}, {1.0f, 3}, {2.0f, 8}, {-1.0f, 0}};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(d[k].v, want_min[k].v) << k;
    EXPECT_EQ(d[k].i, want_min[k].i) << k;
  }
  ASSERT_TRUE(ok(host_reduce(DType::FloatInt, ROp::Maxloc, d, srcs, 3, 4)));
  const FloatIntC want_max[] = {{1.0f, 2}, {3.0f, 4}, {5.0f, 0}, {-1.0f, 0}};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(d[k].v, want_max[k].v) << k;
    EXPECT_EQ(d[k].i, want_max[k].i) << k;
  }
  // 2INT with negative indices, and the Fortran 2DOUBLE_PRECISION (index is a double)
  const IntIntC x[] = {{4, -1}, {4, 6}};
  const IntIntC y[] = {{4, -7}, {2, 6}};
  const void *isrcs[] = {x, y};
  IntIntC id[2];
  ASSERT_TRUE(ok(host_reduce(DType::IntInt, ROp::Maxloc, id, isrcs, 2, 2)));
  EXPECT_EQ(id[0].v, 4);
  EXPECT_EQ(id[0].i, -7);
  EXPECT_EQ(id[1].v, 4);
  EXPECT_EQ(id[1].i, 6);
  const DoubleDoubleC p[] = {{0.5, 3.0}};
  const DoubleDoubleC q[] = {{0.5, 2.0}};
  const void *dsrcs[] = {p, q};
  DoubleDoubleC dd[1];
  ASSERT_TRUE(ok(host_reduce(DType::DoubleDouble, ROp::Minloc, dd, dsrcs, 2, 1)));
  EXPECT_EQ(dd[0].v, 0.5);
  EXPECT_EQ(dd[0].i, 2.0);
}

TEST(KernelReduceArgs, LeftFoldOrder) {
  // (1e30 + -1e30) + 1 = 1, but 1e30 + (-1e30 + 1) = 0 in float
  const float a[] = {1e30f}, b[] = {-1e30f}, c[] = {1.0f};
  const void *abc[] = {a, b, c};
  const void *cba[] = {c, b, a};
  float d[1];
  ASSERT_TRUE(ok(host_reduce(DType::Float, ROp::Sum, d, abc, 3, 1)));
  EXPECT_EQ(d[0], 1.0f);
  ASSERT_TRUE(ok(host_reduce(DType::Float, ROp::Sum, d, cba, 3, 1)));
  EXPECT_EQ(d[0], 0.0f);
}

TEST(KernelReduceArgs, HostCopy) {
  std::vector<unsigned char> a(1000), b(1000, 0);
  for (std::size_t k = 0; k < a.size(); ++k) a[k] = static_cast<unsigned char>(k * 7);
  host_copy(b.data() + 1, a.data() + 3, 997);
  EXPECT_EQ(std::memcmp(b.data() + 1, a.data() + 3, 997), 0);
  EXPECT_EQ(b[0], 0);
  host_copy(a.data(), a.data(), a.size());  // same buffer: nothing to do
  host_copy(nullptr, nullptr, 0);
}

// ---- the 16-bit float conversions the host path computes with ---------------------------

#ifdef __FLT16_MAX__
TEST(KernelHalf, MatchesFloat16Exhaustively) {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const HalfC h{static_cast<std::uint16_t>(bits)};
    const float want = static_cast<float>(f16(h));
    const float got = half_to_float(HalfBits{h.bits});
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << bits;
      ASSERT_EQ(float_to_half(got).bits, 0x7fffu);
      continue;
    }
    ASSERT_EQ(float_bits(got), float_bits(want)) << bits;
    ASSERT_EQ(float_to_half(got).bits, bits);
  }
}

TEST(KernelHalf, RoundsLikeFloat16) {
  Rng g(16);
  std::vector<float> values = {65504.0f, 65519.996f, 65520.0f, 1e9f, -1e9f, INFINITY,
                               -INFINITY, 0.0f, -0.0f, 6.1035156e-05f, 6.1005e-05f,
                               5.9604645e-08f, 2.9802322e-08f, 2.98024e-08f, 8.9407e-08f,
                               1e-30f, -3.0e-8f};
  for (int k = 0; k < 1000000; ++k) {
    // random bits over the half range and around it
    std::uint32_t u = static_cast<std::uint32_t>(g());
    u = (u & 0x807fffffu) | ((0x60u + (u >> 23) % 0x30u) << 23);
    values.push_back(bits_float(u));
  }
  for (float f : values) {
    ASSERT_EQ(float_to_half(f).bits, half_of(static_cast<_Float16>(f)).bits) << f;
  }
}
#endif

TEST(KernelBf16, RoundsToNearestEven) {
  Rng g(17);
  std::vector<float> values = {3.3895314e38f, 3.39e38f, 3.4028235e38f, INFINITY, -INFINITY,
                               0.0f, -0.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256,
                               1e-40f, 1.17549435e-38f};
  for (int k = 0; k < 1000000; ++k) values.push_back(bits_float(static_cast<std::uint32_t>(g())));
  for (float f : values) {
    if (std::isnan(f)) {
      ASSERT_EQ(float_to_bf16(f).bits, 0x7fffu);
      continue;
    }
    const BF16Bits got = float_to_bf16(f);
    ASSERT_EQ(got.bits, bf16_of(round_bf16(f)).bits) << f;
    ASSERT_EQ(bf16_to_float(got), static_cast<float>(bf16_value({got.bits})));
  }
}

}  // namespace
}  // namespace gcoll
