// cuda_reduce's checks and dispatch to the unit files; the copy kernel.
#include "kernels/cuda_kernels.cuh"

namespace gcoll {

namespace gpu {
namespace {

// Bytes [0, sp.head) and [sp.head + 16 * sp.nvec, bytes) one at a time, uint4 between.
__global__ void __launch_bounds__(kThreads)
    copy_kernel(unsigned char *dst, const unsigned char *src, Split sp, std::size_t bytes) {
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const uint4 *vsrc = reinterpret_cast<const uint4 *>(src + sp.head);
  uint4 *vdst = reinterpret_cast<uint4 *>(dst + sp.head);
  for (std::size_t k = tid; k < sp.nvec; k += stride) vdst[k] = vsrc[k];
  const std::size_t tail_start = sp.head + sp.nvec * kVecBytes;
  const std::size_t scalar = sp.head + (bytes - tail_start);
  for (std::size_t r = tid; r < scalar; r += stride) {
    const std::size_t i = r < sp.head ? r : tail_start + (r - sp.head);
    dst[i] = src[i];
  }
}

}  // namespace
}  // namespace gpu

bool cuda_op_supported(ROp op, DType t) {
  return gpu::cuda_unit(t) != gpu::CudaUnit::None && op_supported(op, t);
}

cudaError_t cuda_copy(void *dst, const void *src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return cudaSuccess;
  const void *ptrs[2] = {dst, src};
  const gpu::Split sp = gpu::plan_split(ptrs, 2, bytes, 1);
  const std::size_t work = sp.nvec + (bytes - sp.nvec * gpu::kVecBytes);
  gpu::copy_kernel<<<gpu::grid_for(work), gpu::kThreads, 0, stream>>>(
      static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src), sp, bytes);
  return cudaGetLastError();
}

cudaError_t cuda_reduce(DType t, ROp op, void *dst, const void *const *srcs, int m,
                        std::size_t count, cudaStream_t stream) {
  if (!cuda_op_supported(op, t)) return cudaErrorNotSupported;
  if (m < 1 || m > kCudaMaxSources) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  if (m == 1) return cuda_copy(dst, srcs[0], count * dtype_size(t), stream);
  const gpu::Job j{dst, srcs, m, count, stream};
  switch (gpu::cuda_unit(t)) {
    case gpu::CudaUnit::Integer: return gpu::reduce_integer(t, op, j);
    case gpu::CudaUnit::Floating: return gpu::reduce_floating(t, op, j);
    case gpu::CudaUnit::Pair: return gpu::reduce_pair(t, op, j);
    case gpu::CudaUnit::None: break;
  }
  return cudaErrorNotSupported;
}

}  // namespace gcoll
