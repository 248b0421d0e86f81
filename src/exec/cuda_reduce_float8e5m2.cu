/* The reduction kernel for dmacclFloat8e5m2 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclFloat8e5m2, float8e5m2)
