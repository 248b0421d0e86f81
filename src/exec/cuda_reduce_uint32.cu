/* The reduction kernel for dmacclUint32 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclUint32, uint32)
