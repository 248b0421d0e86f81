/* The reduction kernel for dmacclFloat64 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclFloat64, float64)
