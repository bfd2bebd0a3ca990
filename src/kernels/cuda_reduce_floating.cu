// Device reductions (and the fused one-shot allreduce, kernels/fused.h) on float, double,
// half, bfloat16 and the complex types: the kernels of the list's types of CUDA unit
// Floating (type_op_list.h).
#include "kernels/cuda_fused_kernels.cuh"

namespace gcoll {
namespace gpu {

cudaError_t reduce_floating(DType t, ROp op, const Job &j) {
  return reduce_unit<CudaUnit::Floating>(t, op, j);
}

cudaError_t fused_floating(DType t, ROp op, const FusedJob &j) {
  return run_unit<LaunchFused, CudaUnit::Floating>(t, op, j);
}

}  // namespace gpu
}  // namespace gcoll
