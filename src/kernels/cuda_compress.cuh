// The compressed allreduce's formats on device memory (kernels/compress.h;
// docs/compression.md): host-side launchers of the CUDA kernels, callable from plain C++
// (this header has no device code). The kernels give the same bytes and values as the
// host loops of compress.h: the same conversions (kernels/elements.h,
// kernels/compress_elements.h), IEEE round-to-nearest operations only (__fdiv_rn,
// __fmul_rn, __fadd_rn, __dadd_rn; built with --fmad=false), the fp8 block maximum an
// exact max. Not yet run on a GPU (docs/compression.md).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernels/compress.h"
#include "kernels/types.h"

namespace gcoll {

// Enqueue on `stream` compress_encode / compress_decode / compress_decode_add of n
// elements of t (Float or Double) between device buffers (src and dst must not overlap).
// cudaErrorInvalidValue for Compress::Off or another type (nothing enqueued), else the
// launch status; n == 0 enqueues nothing.
cudaError_t cuda_compress_encode(Compress c, DType t, const void *src, std::size_t n, void *dst,
                                 cudaStream_t stream);
cudaError_t cuda_compress_decode(Compress c, DType t, const void *src, std::size_t n, void *dst, bool add,
                                 cudaStream_t stream);

}  // namespace gcoll
