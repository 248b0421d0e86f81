/* The reduction kernel for dmacclFloat8e4m3 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclFloat8e4m3, float8e4m3)
