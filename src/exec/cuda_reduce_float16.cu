/* The reduction kernel for dmacclFloat16 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclFloat16, float16)
