/* NCCL as a baseline in the same run (one process driving all GPUs, or one
 * rank per process), for dmaccl-perf and dmaccl-c3. Built
 * as a stub that reports "not built" when NCCL was not found. */
#ifndef DMACCL_PERF_BASELINE_NCCL_H_
#define DMACCL_PERF_BASELINE_NCCL_H_

#include "dmaccl.h"
#include "common/colls.h"

#include <stddef.h>

typedef struct ncclBase ncclBase;

/* NULL with a reason in err when NCCL is missing or fails to start. ce: NCCL's
 * copy-engine path (CTA policy ZERO; use buffers from ncclBaseAllocBuffers).
 * maxCTAs > 0 caps the SMs NCCL's kernels take (config.maxCTAs); 0 = NCCL's
 * default. */
ncclBase *ncclBaseInit(int n, const int *devs, int ce, int maxCTAs, char *err, size_t errlen);
/* One rank per process: rank 0 makes the id (NCCL_UNIQUE_ID_BYTES = 128
 * bytes, passed to the others by the caller), every rank joins with it on
 * the current device. */
int ncclBaseMakeId(void *id128, char *err, size_t errlen);
ncclBase *ncclBaseInitRank(int n, int rank, const void *id128, int ce, int maxCTAs, char *err,
                           size_t errlen);
/* Send and receive buffers of `bytes` per local rank from ncclMemAlloc,
 * registered as symmetric windows (collective over all ranks); freed by
 * ncclBaseFini. What NCCL's copy-engine collectives need. */
int ncclBaseAllocBuffers(ncclBase *b, size_t bytes, void **send, void **recv, char *err,
                         size_t errlen);
/* Issues collective coll (a collId) on every local rank, grouped; the V
 * forms as vLLM emulates them (grouped Broadcast, Reduce, Send/Recv);
 * sendrecv as nccl-tests' sendrecv_perf (ncclSend of count elements to rank
 * (r+1)%n and ncclRecv of count from rank (r-1+n)%n, in the same group). 0 on
 * success. */
int ncclBaseIssue(ncclBase *b, int coll, const collShape *s, void *const *send, void *const *recv,
                  dmacclDataType_t type, dmacclRedOp_t op, const cudaStream_t *streams);
/* NULL when the baseline has collective coll (ce: through NCCL's copy-engine
 * path); else a sentence saying why its row is absent. */
const char *ncclBaseLacks(int coll, int ce);
const char *ncclBaseVersion(ncclBase *b);
void ncclBaseFini(ncclBase *b);

#endif
