/* The reduction kernel for dmacclFloat32 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclFloat32, float32)
