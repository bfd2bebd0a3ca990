// The fused one-shot collectives (kernels/fused.h): bcast and allgather kernels, and
// cuda_fused's checks and dispatch (allreduce kernels live in the unit files).
#include "kernels/cuda_fused_kernels.cuh"

namespace gcoll {

namespace gpu {
namespace {

__global__ void __launch_bounds__(kFusedThreads) fused_bcast_kernel(const __grid_constant__ FusedParams p) {
  fused_block(p, [&](std::size_t lo, std::size_t hi, std::size_t off) {
    if (p.me == p.root) return;  // the root's buffer is the source
    block_copy<true>(static_cast<unsigned char *>(p.out) + lo,
                     reinterpret_cast<const unsigned char *>(p.bank[p.root]) + off + lo, hi - lo);
  });
}

__global__ void __launch_bounds__(kFusedThreads) fused_allgather_kernel(const __grid_constant__ FusedParams p) {
  fused_block(p, [&](std::size_t lo, std::size_t hi, std::size_t off) {
    for (int q = 0; q < p.nranks; ++q)
      if (p.dst[q])
        block_copy<true>(static_cast<unsigned char *>(p.dst[q]) + lo,
                         reinterpret_cast<const unsigned char *>(p.bank[q]) + off + lo, hi - lo);
  });
}

}  // namespace
}  // namespace gpu

cudaError_t cuda_fused(const FusedParams &p, cudaStream_t stream) {
  if (!fused_params_valid(p)) return cudaErrorInvalidValue;
  switch (p.kind) {
    case FusedKind::Bcast:
      gpu::fused_bcast_kernel<<<p.blocks, kFusedThreads, 0, stream>>>(p);
      return cudaGetLastError();
    case FusedKind::Allgather:
      gpu::fused_allgather_kernel<<<p.blocks, kFusedThreads, 0, stream>>>(p);
      return cudaGetLastError();
    case FusedKind::Allreduce: break;
  }
  if (!cuda_op_supported(p.op, p.dtype)) return cudaErrorNotSupported;
  if (p.elem != dtype_size(p.dtype) || kFusedAlign % p.elem != 0) return cudaErrorInvalidValue;
  const gpu::FusedJob j{&p, stream};
  switch (gpu::cuda_unit(p.dtype)) {
    case gpu::CudaUnit::Integer: return gpu::fused_integer(p.dtype, p.op, j);
    case gpu::CudaUnit::Floating: return gpu::fused_floating(p.dtype, p.op, j);
    case gpu::CudaUnit::Pair: return gpu::fused_pair(p.dtype, p.op, j);
    case gpu::CudaUnit::None: break;
  }
  return cudaErrorNotSupported;
}

}  // namespace gcoll
