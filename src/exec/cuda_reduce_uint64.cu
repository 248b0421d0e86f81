/* The reduction kernel for dmacclUint64 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclUint64, uint64)
