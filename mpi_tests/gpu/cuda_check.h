// CK(call): a CUDA runtime call that must succeed in the GPU-only check programs
// (fused_kernel_check.cc, compress_kernel_check.cc): prints the call, the line and
// CUDA's message, and exits 1.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::printf("CUDA %s at line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_));            \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
