// Datatype table for the gcoll MPI tests. See types.h for the value and tolerance rules.
#include "types.h"

#include "harness.h"

#include <cfloat>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>

namespace gct {
namespace {

// ---- deterministic pseudo-random values -------------------------------------------
inline uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline uint64_t base_of(int rank, uint32_t seed) {
  return splitmix((static_cast<uint64_t>(seed) << 32) ^ static_cast<uint32_t>(rank));
}
inline uint64_t rnd(uint64_t base, size_t i) {
  return splitmix(base + 0xD1B54A32D192ED03ull * (static_cast<uint64_t>(i) + 1));
}
inline double unit(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }  // [0,1)

// Logical inputs: zero never (i%3==0), with probability 1/8 (i%3==1) or 1/2 (i%3==2),
// so that LAND, LOR and LXOR over several ranks give both outcomes.
inline bool logical_zero(uint64_t r, size_t i) {
  switch (i % 3) {
    case 0: return false;
    case 1: return (r % 8) == 0;
    default: return (r % 2) == 0;
  }
}

// ---- integers -----------------------------------------------------------------------
template <class T>
T int_value(uint64_t r, size_t i, int rank, OpClass c) {
  using L = std::numeric_limits<T>;
  constexpr int bits = static_cast<int>(sizeof(T) * 8);
  using U = typename std::make_unsigned<T>::type;
  switch (c) {
    case OpClass::Sum: {
      uint64_t lim = static_cast<uint64_t>(L::max()) / 16;
      if (L::is_signed)
        return static_cast<T>(static_cast<int64_t>(r % (2 * lim + 1)) - static_cast<int64_t>(lim));
      return static_cast<T>(r % (lim + 1));
    }
    case OpClass::Prod: {
      // For p <= 16 ranks at most 4 ranks give a 2 and 3 a -1/3 at any index.
      if ((i + static_cast<size_t>(rank)) % 5 == 0) return static_cast<T>(2);
      if ((i + 2 * static_cast<size_t>(rank)) % 7 == 0) return L::is_signed ? static_cast<T>(-1) : static_cast<T>(3);
      if (r % 29 == 0) return static_cast<T>(0);
      return static_cast<T>(1);
    }
    case OpClass::Logical: {
      if (logical_zero(r, i)) return static_cast<T>(0);
      switch ((r >> 8) % 4) {
        case 0: return static_cast<T>(1);
        case 1: return static_cast<T>(2);
        case 2: return static_cast<T>(static_cast<U>(~static_cast<U>(0)));     // -1 / max
        default: return static_cast<T>(static_cast<U>(static_cast<U>(1) << (bits - 1)));  // top bit
      }
    }
    default: {  // MAX/MIN, bitwise, anything else: any bit pattern
      U u = static_cast<U>(r);
      T v;
      memcpy(&v, &u, sizeof v);
      return v;
    }
  }
}

template <class T>
void fill_int(void *buf, size_t n, int rank, uint32_t seed, MPI_Op op) {
  T *p = static_cast<T *>(buf);
  uint64_t b = base_of(rank, seed);
  OpClass c = op_class(op);
  for (size_t i = 0; i < n; ++i) p[i] = int_value<T>(rnd(b, i), i, rank, c);
}

template <class T>
std::string fmt_int(const void *buf, size_t i) {
  T v;
  memcpy(&v, static_cast<const char *>(buf) + i * sizeof(T), sizeof v);
  if (std::numeric_limits<T>::is_signed) return std::to_string(static_cast<long long>(v));
  return std::to_string(static_cast<unsigned long long>(v));
}

template <class T>
size_t cmp_int(const void *got, const void *ref, size_t n, MPI_Op, int, size_t *first,
               std::string *detail) {
  const T *g = static_cast<const T *>(got);
  const T *r = static_cast<const T *>(ref);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (g[i] != r[i]) {
      if (bad++ == 0) {
        *first = i;
        *detail = "got " + fmt_int<T>(got, i) + ", expected " + fmt_int<T>(ref, i);
      }
    }
  }
  return bad;
}

// ---- logical (C bool, Fortran LOGICAL): values 0/1 ------------------------------------
template <class T>
void fill_logical(void *buf, size_t n, int rank, uint32_t seed, MPI_Op) {
  T *p = static_cast<T *>(buf);
  uint64_t b = base_of(rank, seed);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(!logical_zero(rnd(b, i), i));
}

template <class T>
std::string fmt_logical(const void *buf, size_t i) {
  unsigned char bytes[sizeof(T)];
  memcpy(bytes, static_cast<const char *>(buf) + i * sizeof(T), sizeof(T));
  std::string s = "0x";
  char h[4];
  for (size_t k = sizeof(T); k-- > 0;) {
    snprintf(h, sizeof h, "%02x", bytes[k]);
    s += h;
  }
  return s;
}

// Compared bytewise: a result must be a proper 0/1 value, like Open MPI's.
template <class T>
size_t cmp_logical(const void *got, const void *ref, size_t n, MPI_Op, int, size_t *first,
                   std::string *detail) {
  const char *g = static_cast<const char *>(got);
  const char *r = static_cast<const char *>(ref);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (memcmp(g + i * sizeof(T), r + i * sizeof(T), sizeof(T)) != 0) {
      if (bad++ == 0) {
        *first = i;
        *detail = "got " + fmt_logical<T>(got, i) + ", expected " + fmt_logical<T>(ref, i);
      }
    }
  }
  return bad;
}

// ---- floating point -----------------------------------------------------------------
template <class T>
T float_value(uint64_t r, OpClass c) {
  double u = unit(r);
  switch (c) {
    case OpClass::Prod: return static_cast<T>(0.9375 + 0.125 * u);
    case OpClass::MinMax: {
      double v = (2 * u - 1) * 1000;
      return static_cast<T>(v == 0 ? 1.0 : v);
    }
    default: return static_cast<T>(2 * u - 1);  // SUM and anything else: [-1, 1)
  }
}

template <class T>
void fill_float(void *buf, size_t n, int rank, uint32_t seed, MPI_Op op) {
  T *p = static_cast<T *>(buf);
  uint64_t b = base_of(rank, seed);
  OpClass c = op_class(op);
  for (size_t i = 0; i < n; ++i) p[i] = float_value<T>(rnd(b, i), c);
}

template <class T>
std::string fmt_float(const void *buf, size_t i) {
  T v;
  memcpy(&v, static_cast<const char *>(buf) + i * sizeof(T), sizeof v);
  char s[64];
  snprintf(s, sizeof s, "%.21Lg", static_cast<long double>(v));
  return s;
}

// Tolerances (see types.h). p = communicator size.
template <class T>
long double sum_tol(int p) {
  long double eps = std::numeric_limits<T>::epsilon();
  return 2.0L * (p - 1) * eps * p * 1.0L;  // max|x| = 1 for SUM inputs
}
template <class T>
long double prod_tol(int p, long double ref_abs, long double factor) {
  long double eps = std::numeric_limits<T>::epsilon();
  return factor * (p - 1) * eps * ref_abs;
}

template <class T>
size_t cmp_float(const void *got, const void *ref, size_t n, MPI_Op op, int p, size_t *first,
                 std::string *detail) {
  const T *g = static_cast<const T *>(got);
  const T *r = static_cast<const T *>(ref);
  OpClass c = op_class(op);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    long double gv = g[i], rv = r[i], tol = 0;
    if (c == OpClass::Sum) tol = sum_tol<T>(p);
    else if (c == OpClass::Prod) tol = prod_tol<T>(p, fabsl(rv), 4);
    bool ok = (tol == 0) ? (gv == rv) : (fabsl(gv - rv) <= tol);
    if (!ok || std::isnan(static_cast<double>(gv))) {
      if (bad++ == 0) {
        *first = i;
        char t[64];
        snprintf(t, sizeof t, "%.3Lg", tol);
        *detail = "got " + fmt_float<T>(got, i) + ", expected " + fmt_float<T>(ref, i) +
                  " (tolerance " + t + ")";
      }
    }
  }
  return bad;
}

// ---- complex --------------------------------------------------------------------------
template <class T>
void fill_complex(void *buf, size_t n, int rank, uint32_t seed, MPI_Op op) {
  T *p = static_cast<T *>(buf);  // re, im pairs
  uint64_t b = base_of(rank, seed);
  bool prod = op_class(op) == OpClass::Prod;
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = rnd(b, i);
    double u1 = unit(r), u2 = unit(splitmix(r));
    if (prod) {
      p[2 * i] = static_cast<T>(0.95 + 0.1 * u1);
      p[2 * i + 1] = static_cast<T>(-0.05 + 0.1 * u2);
    } else {
      p[2 * i] = static_cast<T>(2 * u1 - 1);
      p[2 * i + 1] = static_cast<T>(2 * u2 - 1);
    }
  }
}

template <class T>
std::string fmt_complex(const void *buf, size_t i) {
  T v[2];
  memcpy(v, static_cast<const char *>(buf) + i * 2 * sizeof(T), sizeof v);
  char s[128];
  snprintf(s, sizeof s, "(%.21Lg, %.21Lg)", static_cast<long double>(v[0]),
           static_cast<long double>(v[1]));
  return s;
}

template <class T>
size_t cmp_complex(const void *got, const void *ref, size_t n, MPI_Op op, int p, size_t *first,
                   std::string *detail) {
  const T *g = static_cast<const T *>(got);
  const T *r = static_cast<const T *>(ref);
  bool prod = op_class(op) == OpClass::Prod;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    long double gr = g[2 * i], gi = g[2 * i + 1], rr = r[2 * i], ri = r[2 * i + 1];
    bool ok;
    long double tol;
    if (prod) {
      tol = prod_tol<T>(p, hypotl(rr, ri), 8);
      ok = (tol == 0) ? (gr == rr && gi == ri) : hypotl(gr - rr, gi - ri) <= tol;
    } else {
      tol = sum_tol<T>(p);
      ok = (tol == 0) ? (gr == rr && gi == ri) : (fabsl(gr - rr) <= tol && fabsl(gi - ri) <= tol);
    }
    if (!ok || std::isnan(static_cast<double>(gr)) || std::isnan(static_cast<double>(gi))) {
      if (bad++ == 0) {
        *first = i;
        char t[64];
        snprintf(t, sizeof t, "%.3Lg", tol);
        *detail = "got " + fmt_complex<T>(got, i) + ", expected " + fmt_complex<T>(ref, i) +
                  " (tolerance " + t + ")";
      }
    }
  }
  return bad;
}

// ---- MINLOC/MAXLOC pairs ---------------------------------------------------------------
template <class V, class I>
struct Pair {
  V v;
  I k;
};

template <class V, class I>
void fill_pair(void *buf, size_t n, int rank, uint32_t seed, MPI_Op) {
  auto *p = static_cast<Pair<V, I> *>(buf);
  uint64_t b = base_of(rank, seed);
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = rnd(b, i);
    // Values from a set of 5, so that ties are frequent; indices in [-500, 500).
    if (std::is_floating_point<V>::value)
      p[i].v = static_cast<V>(0.5 * static_cast<double>(r % 5) - 1.0);
    else
      p[i].v = static_cast<V>(static_cast<int>(r % 5) - 2);
    p[i].k = static_cast<I>(static_cast<int>((r >> 32) % 1000) - 500);
  }
}

template <class V, class I>
std::string fmt_pair(const void *buf, size_t i) {
  Pair<V, I> e;
  memcpy(&e, static_cast<const char *>(buf) + i * sizeof e, sizeof e);
  char s[128];
  snprintf(s, sizeof s, "(value %.21Lg, index %lld)", static_cast<long double>(e.v),
           static_cast<long long>(e.k));
  return s;
}

template <class V, class I>
size_t cmp_pair(const void *got, const void *ref, size_t n, MPI_Op, int, size_t *first,
                std::string *detail) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    Pair<V, I> g, r;
    memcpy(&g, static_cast<const char *>(got) + i * sizeof g, sizeof g);
    memcpy(&r, static_cast<const char *>(ref) + i * sizeof r, sizeof r);
    if (!(g.v == r.v && g.k == r.k)) {
      if (bad++ == 0) {
        *first = i;
        *detail = "got " + fmt_pair<V, I>(got, i) + ", expected " + fmt_pair<V, I>(ref, i);
      }
    }
  }
  return bad;
}

// ---- table --------------------------------------------------------------------------------
enum : uint32_t {
  kMax = 1u << 0, kMin = 1u << 1, kSum = 1u << 2, kProd = 1u << 3,
  kLand = 1u << 4, kLor = 1u << 5, kLxor = 1u << 6,
  kBand = 1u << 7, kBor = 1u << 8, kBxor = 1u << 9,
  kMinloc = 1u << 10, kMaxloc = 1u << 11,
};
constexpr uint32_t kMinMax = kMax | kMin, kArith = kSum | kProd,
                   kLogical = kLand | kLor | kLxor, kBitwise = kBand | kBor | kBxor,
                   kAllInt = kMinMax | kArith | kLogical | kBitwise;

// Per-type extra ops (Open MPI 4.1 accepts them, the standard does not define them).
std::map<MPI_Datatype, uint32_t> &extras() {
  static std::map<MPI_Datatype, uint32_t> m;
  return m;
}

uint32_t standard_bits(Group g) {
  switch (g) {
    case Group::CInteger: return kAllInt;
    case Group::FortranInteger: return kMinMax | kArith | kBitwise;
    case Group::MultiLanguage: return kMinMax | kArith | kBitwise;
    case Group::Char: return 0;
    case Group::Floating: return kMinMax | kArith;
    case Group::Complex: return kArith;
    case Group::Logical: return kLogical;
    case Group::Byte: return kBitwise;
    case Group::Pair: return kMinloc | kMaxloc;
    case Group::NoReduce: return 0;
  }
  return 0;
}

#define INT_T(mpi, T, grp, extra)                                                     \
  add(mpi, #mpi, grp, sizeof(T), fill_int<T>, cmp_int<T>, fmt_int<T>, extra,            \
      !std::numeric_limits<T>::is_signed)
#define FLT_T(mpi, T, grp) \
  add(mpi, #mpi, grp, sizeof(T), fill_float<T>, cmp_float<T>, fmt_float<T>, 0, false)
#define CPX_T(mpi, T, grp) \
  add(mpi, #mpi, grp, 2 * sizeof(T), fill_complex<T>, cmp_complex<T>, fmt_complex<T>, 0, false)
#define LOG_T(mpi, T, grp) \
  add(mpi, #mpi, grp, sizeof(T), fill_logical<T>, cmp_logical<T>, fmt_logical<T>, 0, false)
#define PAIR_T(mpi, V, I)                                                                   \
  add(mpi, #mpi, Group::Pair, sizeof(Pair<V, I>), fill_pair<V, I>, cmp_pair<V, I>,           \
      fmt_pair<V, I>, 0, false)

// The extra ops (beyond the standard's) this MPI accepts on t: those lists are Open MPI
// 4.1's; another MPI (MPICH rejects MPI_MAX on MPI_BYTE) keeps only the ones its
// PMPI_Reduce_local accepts. Errors return during the probe.
uint32_t accepted_extras(MPI_Datatype t, Group g, uint32_t extra) {
  const uint32_t asked = extra & ~standard_bits(g);
  if (!asked) return extra;
  MPI_Errhandler world_eh, self_eh;
  PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_eh);
  PMPI_Comm_get_errhandler(MPI_COMM_SELF, &self_eh);
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  PMPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const MPI_Op ops[12] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_LOR,
                          MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
  uint32_t keep = extra & standard_bits(g);
  for (int i = 0; i < 12; ++i) {
    if (!(asked & (1u << i))) continue;
    alignas(16) unsigned char in[64] = {0}, inout[64] = {0};
    if (PMPI_Reduce_local(in, inout, 1, t, ops[i]) == MPI_SUCCESS) keep |= 1u << i;
  }
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh);
  PMPI_Comm_set_errhandler(MPI_COMM_SELF, self_eh);
  PMPI_Errhandler_free(&world_eh);
  PMPI_Errhandler_free(&self_eh);
  return keep;
}

std::vector<TypeDesc> build_types() {
  std::vector<TypeDesc> v;
  auto add = [&v](MPI_Datatype t, const char *name, Group g, size_t ext, FillFn f, CompareFn c,
                  FormatFn fm, uint32_t extra, bool is_unsigned) {
    if (t == MPI_DATATYPE_NULL) return;
    int size = 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS || size <= 0) return;  // e.g. no Fortran
    for (const auto &e : v)
      if (e.type == t) return;  // aliases (MPI_LONG_LONG_INT == MPI_LONG_LONG in Open MPI)
    v.push_back(TypeDesc{t, name, g, ext, f, c, fm, is_unsigned});
    extras()[t] = accepted_extras(t, g, extra);
  };
  // Open MPI accepts every integer op on MPI_CHAR and MPI_CHARACTER, all but MINLOC/MAXLOC
  // on MPI_BYTE, logical ops on the multi-language types and on INTEGER1/2/8.
  INT_T(MPI_CHAR, char, Group::Char, kAllInt);
  INT_T(MPI_SIGNED_CHAR, signed char, Group::CInteger, 0);
  INT_T(MPI_UNSIGNED_CHAR, unsigned char, Group::CInteger, 0);
  INT_T(MPI_SHORT, short, Group::CInteger, 0);
  INT_T(MPI_UNSIGNED_SHORT, unsigned short, Group::CInteger, 0);
  INT_T(MPI_INT, int, Group::CInteger, 0);
  INT_T(MPI_UNSIGNED, unsigned, Group::CInteger, 0);
  INT_T(MPI_LONG, long, Group::CInteger, 0);
  INT_T(MPI_UNSIGNED_LONG, unsigned long, Group::CInteger, 0);
  INT_T(MPI_LONG_LONG, long long, Group::CInteger, 0);
  INT_T(MPI_LONG_LONG_INT, long long, Group::CInteger, 0);
  INT_T(MPI_UNSIGNED_LONG_LONG, unsigned long long, Group::CInteger, 0);
  INT_T(MPI_INT8_T, int8_t, Group::CInteger, 0);
  INT_T(MPI_INT16_T, int16_t, Group::CInteger, 0);
  INT_T(MPI_INT32_T, int32_t, Group::CInteger, 0);
  INT_T(MPI_INT64_T, int64_t, Group::CInteger, 0);
  INT_T(MPI_UINT8_T, uint8_t, Group::CInteger, 0);
  INT_T(MPI_UINT16_T, uint16_t, Group::CInteger, 0);
  INT_T(MPI_UINT32_T, uint32_t, Group::CInteger, 0);
  INT_T(MPI_UINT64_T, uint64_t, Group::CInteger, 0);
  INT_T(MPI_AINT, MPI_Aint, Group::MultiLanguage, kLogical);
  INT_T(MPI_OFFSET, MPI_Offset, Group::MultiLanguage, kLogical);
  INT_T(MPI_COUNT, MPI_Count, Group::MultiLanguage, kLogical);
  INT_T(MPI_WCHAR, wchar_t, Group::NoReduce, 0);
  FLT_T(MPI_FLOAT, float, Group::Floating);
  FLT_T(MPI_DOUBLE, double, Group::Floating);
  FLT_T(MPI_LONG_DOUBLE, long double, Group::Floating);
  CPX_T(MPI_C_FLOAT_COMPLEX, float, Group::Complex);
  CPX_T(MPI_C_COMPLEX, float, Group::Complex);
  CPX_T(MPI_C_DOUBLE_COMPLEX, double, Group::Complex);
  CPX_T(MPI_C_LONG_DOUBLE_COMPLEX, long double, Group::Complex);
  LOG_T(MPI_C_BOOL, bool, Group::Logical);
  INT_T(MPI_BYTE, uint8_t, Group::Byte, kMinMax | kArith | kLogical);
  PAIR_T(MPI_FLOAT_INT, float, int);
  PAIR_T(MPI_DOUBLE_INT, double, int);
  PAIR_T(MPI_LONG_INT, long, int);
  PAIR_T(MPI_2INT, int, int);
  PAIR_T(MPI_SHORT_INT, short, int);
  PAIR_T(MPI_LONG_DOUBLE_INT, long double, int);
  // C++ types (usable from C).
  LOG_T(MPI_CXX_BOOL, bool, Group::Logical);
  CPX_T(MPI_CXX_FLOAT_COMPLEX, float, Group::Complex);
  CPX_T(MPI_CXX_DOUBLE_COMPLEX, double, Group::Complex);
  CPX_T(MPI_CXX_LONG_DOUBLE_COMPLEX, long double, Group::Complex);
#if (defined(OPEN_MPI) && OMPI_HAVE_FORTRAN_INTEGER1 && OMPI_HAVE_FORTRAN_INTEGER2 && \
     OMPI_HAVE_FORTRAN_INTEGER4 && OMPI_HAVE_FORTRAN_INTEGER8 && OMPI_HAVE_FORTRAN_REAL4 && \
     OMPI_HAVE_FORTRAN_REAL8) ||                                                          \
    defined(MPICH) || defined(MPI_ABI_VERSION)
  // Fortran types (what gcoll's Fortran entry points see), gfortran sizes. (MPICH and the
  // standard ABI, whose handles for them always exist: types the MPI's Fortran support
  // lacks have size 0 or are MPI_DATATYPE_NULL, and are skipped.)
  INT_T(MPI_CHARACTER, char, Group::Char, kAllInt);
  INT_T(MPI_INTEGER, int32_t, Group::FortranInteger, 0);
  INT_T(MPI_INTEGER1, int8_t, Group::FortranInteger, kLogical);
  INT_T(MPI_INTEGER2, int16_t, Group::FortranInteger, kLogical);
  INT_T(MPI_INTEGER4, int32_t, Group::FortranInteger, 0);
  INT_T(MPI_INTEGER8, int64_t, Group::FortranInteger, kLogical);
  FLT_T(MPI_REAL, float, Group::Floating);
  FLT_T(MPI_DOUBLE_PRECISION, double, Group::Floating);
  FLT_T(MPI_REAL4, float, Group::Floating);
  FLT_T(MPI_REAL8, double, Group::Floating);
  CPX_T(MPI_COMPLEX, float, Group::Complex);
  CPX_T(MPI_DOUBLE_COMPLEX, double, Group::Complex);
  CPX_T(MPI_COMPLEX8, float, Group::Complex);
  CPX_T(MPI_COMPLEX16, double, Group::Complex);
  LOG_T(MPI_LOGICAL, int32_t, Group::Logical);
  PAIR_T(MPI_2INTEGER, int32_t, int32_t);
  PAIR_T(MPI_2REAL, float, float);
  PAIR_T(MPI_2DOUBLE_PRECISION, double, double);
#endif
  return v;
}

std::vector<MPI_Op> ops_from_bits(uint32_t bits) {
  std::vector<MPI_Op> out;
  const auto &ops = all_ops();
  for (size_t i = 0; i < 12; ++i)
    if (bits & (1u << i)) out.push_back(ops[i]);
  return out;
}

}  // namespace

const char *group_name(Group g) {
  switch (g) {
    case Group::CInteger: return "C integer";
    case Group::FortranInteger: return "Fortran integer";
    case Group::MultiLanguage: return "multi-language";
    case Group::Char: return "character (Open MPI extension)";
    case Group::Floating: return "floating point";
    case Group::Complex: return "complex";
    case Group::Logical: return "logical";
    case Group::Byte: return "byte";
    case Group::Pair: return "MINLOC/MAXLOC pair";
    case Group::NoReduce: return "not reducible";
  }
  return "?";
}

OpClass op_class(MPI_Op op) {
  if (op == MPI_MAX || op == MPI_MIN) return OpClass::MinMax;
  if (op == MPI_SUM) return OpClass::Sum;
  if (op == MPI_PROD) return OpClass::Prod;
  if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return OpClass::Logical;
  if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return OpClass::Bitwise;
  if (op == MPI_MINLOC || op == MPI_MAXLOC) return OpClass::Loc;
  return OpClass::Other;
}

const std::vector<MPI_Op> &all_ops() {
  static const std::vector<MPI_Op> ops = {MPI_MAX,  MPI_MIN,    MPI_SUM,    MPI_PROD,
                                          MPI_LAND, MPI_LOR,    MPI_LXOR,   MPI_BAND,
                                          MPI_BOR,  MPI_BXOR,   MPI_MINLOC, MPI_MAXLOC,
                                          MPI_REPLACE, MPI_NO_OP};
  return ops;
}

const std::vector<TypeDesc> &all_types() {
  static const std::vector<TypeDesc> types = build_types();
  return types;
}

std::vector<TypeDesc> matrix_types() {
  const char *v = std::getenv("GCOLLTEST_TYPES");
  if (!v || std::strcmp(v, "per_size") != 0) return all_types();
  std::vector<TypeDesc> out;
  for (const auto &d : all_types()) {
    bool seen = false;
    for (const auto &o : out)
      seen = seen || (o.group == d.group && o.extent == d.extent && o.is_unsigned == d.is_unsigned);
    if (!seen) out.push_back(d);
  }
  return out;
}

const TypeDesc &find_type(MPI_Datatype t) {
  for (const auto &d : all_types())
    if (d.type == t) return d;
  fprintf(stderr, "find_type: datatype %s is not in the table\n", type_name(t).c_str());
  abort();
}

std::vector<MPI_Op> standard_ops(const TypeDesc &t) { return ops_from_bits(standard_bits(t.group)); }
std::vector<MPI_Op> ompi_extra_ops(const TypeDesc &t) {
  all_types();
  return ops_from_bits(extras()[t.type] & ~standard_bits(t.group));
}
std::vector<MPI_Op> tested_ops(const TypeDesc &t) {
  all_types();
  return ops_from_bits(standard_bits(t.group) | extras()[t.type]);
}

namespace {

// True when PMPI_Reduce_local gets MPI_MAX and MPI_MIN right on an unsigned type of
// `bytes` bytes for a value with the top bit set.
bool pmpi_unsigned_minmax_ok(MPI_Datatype t, size_t bytes) {
  unsigned char big[8] = {0}, one[8] = {0};
  one[0] = 1;           // little-endian 1
  big[0] = 1;
  big[bytes - 1] = 0x80;  // top bit set
  for (MPI_Op op : {MPI_MAX, MPI_MIN}) {
    unsigned char in[8], inout[8];
    memcpy(in, big, sizeof in);
    memcpy(inout, one, sizeof inout);
    if (PMPI_Reduce_local(in, inout, 1, t, op) != MPI_SUCCESS) return false;
    if (memcmp(inout, op == MPI_MAX ? big : one, bytes) != 0) return false;
  }
  return true;
}

}  // namespace

bool mpi_unsigned_minmax_wrong(const TypeDesc &t, MPI_Op op) {
  if (!t.is_unsigned || (op != MPI_MAX && op != MPI_MIN) || t.extent > 8) return false;
  static std::map<MPI_Datatype, bool> cache;
  auto it = cache.find(t.type);
  if (it == cache.end()) it = cache.emplace(t.type, !pmpi_unsigned_minmax_ok(t.type, t.extent)).first;
  return it->second;
}

MPI_Datatype reference_type(const TypeDesc &t, MPI_Op op) {
  if (!t.is_unsigned || (op != MPI_MAX && op != MPI_MIN) || t.extent > 8) return t.type;
  static std::map<MPI_Datatype, MPI_Datatype> cache;
  auto it = cache.find(t.type);
  if (it != cache.end()) return it->second;
  MPI_Datatype use = t.type;
  if (!pmpi_unsigned_minmax_ok(t.type, t.extent)) {
    for (MPI_Datatype cand : {MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T}) {
      int size = 0;
      PMPI_Type_size(cand, &size);
      if (static_cast<size_t>(size) == t.extent && pmpi_unsigned_minmax_ok(cand, t.extent)) {
        use = cand;
        break;
      }
    }
    if (world_rank() == 0) {
      printf("note: the MPI's MPI_MAX/MPI_MIN on %s are wrong (compared as signed); the "
             "reference uses PMPI_Allreduce on %s instead\n",
             t.name, use == t.type ? "the same type (no correct substitute found)" : type_name(use).c_str());
      fflush(stdout);
    }
  }
  cache.emplace(t.type, use);
  return use;
}

std::vector<unsigned char> significant_bytes(MPI_Datatype t, int count) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(t, &lb, &extent);
  size_t bytes = static_cast<size_t>(extent) * static_cast<size_t>(count);
  std::vector<unsigned char> ones(bytes, 0xff), mask(bytes, 0);
  int packed_size = 0;
  PMPI_Pack_size(count, t, MPI_COMM_SELF, &packed_size);
  std::vector<char> packed(static_cast<size_t>(packed_size) + 16);
  int pos = 0;
  PMPI_Pack(ones.data() - lb, count, t, packed.data(), static_cast<int>(packed.size()), &pos,
            MPI_COMM_SELF);
  int upos = 0;
  PMPI_Unpack(packed.data(), pos, &upos, mask.data() - lb, count, t, MPI_COMM_SELF);
  return mask;
}

size_t compare_masked(const void *got, const void *ref, size_t n, size_t extent,
                      const std::vector<unsigned char> &mask, size_t *first) {
  const unsigned char *g = static_cast<const unsigned char *>(got);
  const unsigned char *r = static_cast<const unsigned char *>(ref);
  bool full = true;
  for (unsigned char m : mask) full = full && m == 0xff;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char *ge = g + i * extent, *re = r + i * extent;
    bool same;
    if (full) {
      same = memcmp(ge, re, extent) == 0;
    } else {
      same = true;
      for (size_t b = 0; b < extent && same; ++b) same = ((ge[b] ^ re[b]) & mask[b]) == 0;
    }
    if (!same && bad++ == 0) *first = i;
  }
  return bad;
}

std::string hex_element(const void *buf, size_t i, size_t extent) {
  const unsigned char *p = static_cast<const unsigned char *>(buf) + i * extent;
  std::string s;
  char h[4];
  for (size_t b = 0; b < extent && b < 64; ++b) {
    snprintf(h, sizeof h, "%02x", p[b]);
    s += h;
  }
  return s;
}

uint64_t value_hash(const TypeDesc &t, const void *buf, size_t n) {
  static std::map<MPI_Datatype, std::vector<unsigned char>> masks;
  auto it = masks.find(t.type);
  if (it == masks.end()) {
    std::vector<unsigned char> m = significant_bytes(t.type);
    // long double: only the value bytes count (x87 80-bit format has 6 padding bytes).
    const size_t ld_value = (LDBL_MANT_DIG == 64) ? 10 : sizeof(long double);
    auto clear_ld_padding = [&](size_t off) {
      for (size_t b = off + ld_value; b < off + sizeof(long double) && b < m.size(); ++b) m[b] = 0;
    };
    if (t.type == MPI_LONG_DOUBLE || t.type == MPI_LONG_DOUBLE_INT) clear_ld_padding(0);
    if (t.type == MPI_C_LONG_DOUBLE_COMPLEX || t.type == MPI_CXX_LONG_DOUBLE_COMPLEX) {
      clear_ld_padding(0);
      clear_ld_padding(sizeof(long double));
    }
    it = masks.emplace(t.type, std::move(m)).first;
  }
  const std::vector<unsigned char> &mask = it->second;
  const unsigned char *p = static_cast<const unsigned char *>(buf);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i)
    for (size_t b = 0; b < t.extent; ++b)
      if (mask[b]) h = (h ^ p[i * t.extent + b]) * 1099511628211ull;
  return h;
}

}  // namespace gct
