// Element-wise reductions and copies on host memory.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "kernels/types.h"

namespace gcoll {

// dst[i] = op(...op(op(srcs[0][i], srcs[1][i]), srcs[2][i])..., srcs[m-1][i]) for
// i < count: a left fold in source order (the order fixes floating-point results).
// m >= 1 (m == 1 copies srcs[0]). dst may be any of the sources itself (the same
// elements: in place), as for cuda_reduce; it must not overlap a source partially.
// Buffers need no particular alignment. Returns Status::NotSupported, touching nothing,
// when op_supported(op, t) is false, Status::ErrInternal (touching nothing) when m < 1.
// Half and BFloat16 are always available here (own conversions, no CUDA needed) and
// give the same bits as cuda_reduce. Floating-point results assume the default FP
// environment (round to nearest, no flush-to-zero).
Status host_reduce(DType t, ROp op, void *dst, const void *const *srcs, int m, std::size_t count);

// memmove that skips dst == src and bytes == 0.
void host_copy(void *dst, const void *src, std::size_t bytes);

}  // namespace gcoll
