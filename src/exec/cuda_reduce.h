/* The one reduction kernel (cuda_reduce.cu): REDUCE steps of the CUDA
 * executor. Plain C interface. */
#ifndef DMACCL_CUDA_REDUCE_H_
#define DMACCL_CUDA_REDUCE_H_

#include "dmaccl.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Inputs a kernel takes (its parameters carry the pointers by value). */
#define EXEC_REDUCE_MAX_SRCS 128

/* Flags the kernel waits for before it reads its inputs (a staged
 * reduction's DATA words, planArgs.kernelWait): word p of `flags` for every
 * rank p whose bit is set in `mask`, until it reaches `value` (cyclic >=, as
 * CU_STREAM_WAIT_VALUE_GEQ compares). With `reset` (CUDA graphs, whose flags
 * hold fixed values), the words are set back to 0 once every thread block
 * has seen them, and `*count` (0 between launches) counts the blocks that
 * have. */
typedef struct {
  uint32_t *flags;
  unsigned long long mask[4]; /* up to 256 ranks */
  uint32_t value;
  int reset;
  unsigned *count;
} execReduceWait;

/* Queues on stream a kernel that computes what baseReduceHost computes, bit
 * for bit: dst[i] = srcs[0][i] op ... op srcs[nsrc-1][i], count elements,
 * with at most ctas thread blocks. srcs is read during the call only (the
 * pointers travel in the kernel's parameters, so a captured launch replays).
 * Any alignment; 16-byte vectors where every pointer allows. count 0 queues
 * nothing. Returns the launch's error. */
cudaError_t execCudaReduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                           dmacclDataType_t t, dmacclRedOp_t op, int ctas, cudaStream_t stream);
/* The same kernel waiting first for w's flags (w not NULL, its mask not
 * empty). count 0 still launches, to wait and reset. */
cudaError_t execCudaReduceWait(void *dst, const void *const *srcs, int nsrc, size_t count,
                               dmacclDataType_t t, dmacclRedOp_t op, int ctas,
                               const execReduceWait *w, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
