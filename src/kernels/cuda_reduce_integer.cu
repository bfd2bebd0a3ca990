// Device reductions (and the fused one-shot allreduce, kernels/fused.h) on the integer
// types and Bool: the kernels of the list's types of CUDA unit Integer (type_op_list.h).
#include "kernels/cuda_fused_kernels.cuh"

namespace gcoll {
namespace gpu {

cudaError_t reduce_integer(DType t, ROp op, const Job &j) {
  return reduce_unit<CudaUnit::Integer>(t, op, j);
}

cudaError_t fused_integer(DType t, ROp op, const FusedJob &j) {
  return run_unit<LaunchFused, CudaUnit::Integer>(t, op, j);
}

}  // namespace gpu
}  // namespace gcoll
