// Device MINLOC / MAXLOC (and the fused one-shot allreduce, kernels/fused.h) on the pair
// types: the kernels of the list's types of CUDA unit Pair (type_op_list.h).
#include "kernels/cuda_fused_kernels.cuh"

namespace gcoll {
namespace gpu {

cudaError_t reduce_pair(DType t, ROp op, const Job &j) {
  return reduce_unit<CudaUnit::Pair>(t, op, j);
}

cudaError_t fused_pair(DType t, ROp op, const FusedJob &j) {
  return run_unit<LaunchFused, CudaUnit::Pair>(t, op, j);
}

}  // namespace gpu
}  // namespace gcoll
