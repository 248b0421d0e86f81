/* The reduction kernel for dmacclUint8 (cuda_reduce_kernel.cuh). */
#include "cuda_reduce_kernel.cuh"

DMACCL_REDUCE_DEFINE(dmacclUint8, uint8)
