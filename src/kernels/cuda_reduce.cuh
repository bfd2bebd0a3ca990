// Reductions and copies on device memory: host-side launchers, callable from plain C++
// (this header has no device code; the kernels live in the .cu files).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernels/fused.h"
#include "kernels/types.h"

namespace gcoll {

// The most sources one cuda_reduce call takes (they travel by value as kernel params).
constexpr int kCudaMaxSources = 16;

// op_supported(op, t) for the types the list gives a CUDA unit: all but the long double
// types (LongDouble, LongDoubleInt), as the device has no long double.
bool cuda_op_supported(ROp op, DType t);

// Enqueues on `stream` dst[i] = op(...op(srcs[0][i], srcs[1][i])..., srcs[m-1][i]) for
// i < count, the same left fold (and the same bits) as host_reduce. srcs is a host array
// of m device pointers (1 <= m <= kCudaMaxSources); m == 1 copies. dst may be any of the
// sources itself (the same elements: a thread reads every source of an element before it
// writes it), but must not overlap a source partially. Every pointer must be aligned for the
// element type (any cudaMalloc'd address plus a whole number of elements is).
// Returns cudaErrorNotSupported when !cuda_op_supported(op, t), cudaErrorInvalidValue
// for a bad m or a misaligned pointer (nothing enqueued then), else the launch status.
cudaError_t cuda_reduce(DType t, ROp op, void *dst, const void *const *srcs, int m,
                        std::size_t count, cudaStream_t stream);

// Enqueues a copy of `bytes` bytes between device (or peer-mapped) buffers with a copy
// kernel. dst == src or bytes == 0 enqueue nothing; other overlap is not allowed.
cudaError_t cuda_copy(void *dst, const void *src, std::size_t bytes, cudaStream_t stream);

// Enqueues the fused one-shot kernel of one op (kernels/fused.h): p.blocks blocks of
// kFusedThreads threads. cudaErrorNotSupported for an allreduce !cuda_op_supported,
// cudaErrorInvalidValue for inconsistent parameters (nothing enqueued then), else the
// launch status.
cudaError_t cuda_fused(const FusedParams &p, cudaStream_t stream);

}  // namespace gcoll
