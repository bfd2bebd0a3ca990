#include "kernels/host_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/functors.h"

namespace gcoll {

namespace {

// Elements are reduced in blocks of this many bytes: the destination block stays in L1
// while each source streams through it once.
constexpr std::size_t kBlockBytes = 8192;

struct Job {
  void *dst;
  const void *const *srcs;
  int m;
  std::size_t count;
};

template <class T>
const T *src_at(const Job &j, int s, std::size_t first) {
  return static_cast<const T *>(j.srcs[s]) + first;
}

// d[i] = op(a[i], b[i]); no overlap (__restrict lets the compiler vectorise without
// runtime alias checks).
template <class T, class Op>
void fold_pair(T *__restrict d, const T *__restrict a, const T *__restrict b, std::size_t n) {
  const Op op;
  for (std::size_t i = 0; i < n; ++i) d[i] = op(a[i], b[i]);
}

// d[i] = op(d[i], x[i]); no overlap.
template <class T, class Op>
void fold_into(T *__restrict d, const T *__restrict x, std::size_t n) {
  const Op op;
  for (std::size_t i = 0; i < n; ++i) d[i] = op(d[i], x[i]);
}

// One block, all pointers aligned for T; d may be source 0 itself.
template <class T, class Op>
void fold_block(const Job &j, std::size_t first, std::size_t n) {
  T *d = static_cast<T *>(j.dst) + first;
  const T *a = src_at<T>(j, 0, first);
  const T *b = src_at<T>(j, 1, first);
  if (d == a) {
    fold_into<T, Op>(d, b, n);
  } else {
    fold_pair<T, Op>(d, a, b, n);
  }
  for (int s = 2; s < j.m; ++s) fold_into<T, Op>(d, src_at<T>(j, s, first), n);
}

// One block through aligned copies: for pointers misaligned for T, and when dst is a
// source other than source 0 (all sources are read before the block is written).
template <class T, class Op>
void fold_block_unaligned(const Job &j, std::size_t first, std::size_t n) {
  constexpr std::size_t kBlock = kBlockBytes / sizeof(T);
  const Op op;
  T acc[kBlock];
  T x[kBlock];
  const std::size_t bytes = n * sizeof(T);
  const unsigned char *s0 = static_cast<const unsigned char *>(j.srcs[0]);
  std::memcpy(acc, s0 + first * sizeof(T), bytes);
  for (int s = 1; s < j.m; ++s) {
    const unsigned char *sk = static_cast<const unsigned char *>(j.srcs[s]);
    std::memcpy(x, sk + first * sizeof(T), bytes);
    for (std::size_t i = 0; i < n; ++i) acc[i] = op(acc[i], x[i]);
  }
  std::memcpy(static_cast<unsigned char *>(j.dst) + first * sizeof(T), acc, bytes);
}

template <class T>
bool aligned_for(const Job &j) {
  auto misaligned = [](const void *p) {
    return reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0;
  };
  if (misaligned(j.dst)) return false;
  for (int s = 0; s < j.m; ++s) {
    if (misaligned(j.srcs[s])) return false;
  }
  return true;
}

template <class T, class Op>
bool run(const Job &j) {
  if (j.m == 1) {
    host_copy(j.dst, j.srcs[0], j.count * sizeof(T));
    return true;
  }
  constexpr std::size_t kBlock = kBlockBytes / sizeof(T);
  static_assert(kBlock > 0, "element larger than a block");
  // dst may be any source (the same elements, as in place), as in the CUDA kernel, which
  // reads every source of an element before it writes it; fold_block handles source 0.
  bool direct = aligned_for<T>(j);
  for (int s = 1; direct && s < j.m; ++s) direct = j.srcs[s] != j.dst;
  for (std::size_t first = 0; first < j.count; first += kBlock) {
    const std::size_t n = std::min(kBlock, j.count - first);
    if (direct) {
      fold_block<T, Op>(j, first, n);
    } else {
      fold_block_unaligned<T, Op>(j, first, n);
    }
  }
  return true;
}

// The kernels of element type T: one per op of the type's op set kOps; the other ops
// are never instantiated.
template <class T, OpSet kOps>
bool reduce_ops(ROp op, const Job &j) {
  switch (op) {
#define GCOLL_X(rop, ...)                                                   \
  case ROp::rop:                                                           \
    if constexpr ((kOps & op_bit(ROp::rop)) != 0) return run<T, rop<T>>(j); \
    break;
    GCOLL_ROPS(GCOLL_X)
#undef GCOLL_X
    case ROp::kCount: break;
  }
  return false;
}

}  // namespace

Status host_reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count) {
  if (m < 1) return Status::ErrInternal;
  const Job j{dst, srcs, m, count};
  bool done = false;
  switch (t) {
#define GCOLL_X(dtype, name, ops, unit, mpi, ...) \
  case DType::dtype: done = reduce_ops<__VA_ARGS__, ops>(op, j); break;
    GCOLL_DTYPES(GCOLL_X)
#undef GCOLL_X
    case DType::kCount: break;
  }
  return done ? Status::Ok : Status::NotSupported;
}

void host_copy(void *dst, const void *src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  std::memmove(dst, src, bytes);
}

}  // namespace gcoll
