/* The one reduction kernel (cuda_reduce.cu): REDUCE steps of the CUDA
 * executor. Plain C interface. */
#ifndef DMACCL_CUDA_REDUCE_H_
#define DMACCL_CUDA_REDUCE_H_

#include "dmaccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Inputs a kernel takes (its parameters carry the pointers by value). */
#define EXEC_REDUCE_MAX_SRCS 128

/* Queues on stream a kernel that computes what baseReduceHost computes, bit
 * for bit: dst[i] = srcs[0][i] op ... op srcs[nsrc-1][i], count elements,
 * with at most ctas thread blocks. srcs is read during the call only (the
 * pointers travel in the kernel's parameters, so a captured launch replays).
 * Any alignment; 16-byte vectors where every pointer allows. count 0 queues
 * nothing. Returns the launch's error. */
cudaError_t execCudaReduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                           dmacclDataType_t t, dmacclRedOp_t op, int ctas, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
