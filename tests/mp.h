/* Multi-process tests: fork one process per rank, and one rank's check of a
 * collective (random data, poisoned outputs, guard bytes, every byte). */
#ifndef DMACCL_TEST_MP_H_
#define DMACCL_TEST_MP_H_

#include "dmaccl.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MP_GUARD 256

/* In a rank's body (a variable `rank` in scope): fail the rank with a line. */
#define RANK_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "rank %d: %s:%d: %s failed\n", rank, __FILE__, __LINE__, #cond);             \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* Runs body in n forked processes (rank 0..n-1) with one fresh unique id.
 * Returns the number of ranks that failed: body returned non-zero, crashed,
 * or ran past timeoutSec (then it is killed). A rank in expectKilled (bit
 * mask) must die of SIGKILL instead. Nothing CUDA may run before this. */
typedef int (*mpBody)(int rank, int n, const dmacclUniqueId *id, void *arg);
int mpRun(int n, mpBody body, void *arg, double timeoutSec, unsigned expectKilled);

/* This rank's part of one collective on buffers the caller provides, each
 * with MP_GUARD spare bytes after its end (send: n*count elements for
 * AlltoAll, count for AllGather; recv: n*count). gpu: buffers are device
 * memory and completion is awaited on stream; else host memory and
 * dmacclCommSynchronize. Returns wrong bytes, or -1 when a call failed. */
long long mpCheckColl(dmacclComm_t comm, int gpu, cudaStream_t stream, int alltoall,
                      dmacclDataType_t type, size_t count, int inPlace, void *send, void *recv,
                      uint64_t seed);

/* 1 when a GPU is present, counted in a child process so that the caller
 * touches no CUDA before it forks its ranks. */
int mpGpusPresent(void);

/* Element size of a type. */
size_t mpTypeSize(dmacclDataType_t t);

#ifdef __cplusplus
}
#endif

#endif
