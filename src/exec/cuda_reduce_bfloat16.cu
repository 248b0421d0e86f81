/* The reduction kernel for dmacclBfloat16 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclBfloat16, bfloat16)
