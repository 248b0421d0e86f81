/* dmaccl-c3's GPU side: the GEMM loop (gemm.c) and the contenders
 * (contender.c). Only main.c, gemm.c and contender.c include it. */
#ifndef DMACCL_C3_GPU_H_
#define DMACCL_C3_GPU_H_

#include "c3.h"
#include "dmaccl.h"
#include "perf/baseline_nccl.h"

#include <cuda_runtime_api.h>

/* Returns -1 from the calling function after naming the failed CUDA call. */
#define C3_CUDA(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "dmaccl-c3: %s: %s\n", #call, cudaGetErrorString(e_));                       \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

/* bf16 GEMMs on one stream: C = A B, captured as one graph of `count`
 * GEMMs, so a loop of thousands starts with one launch. */
typedef struct c3Gemm c3Gemm;
/* Buffers for the largest scenario, filled with random values in [-1, 1). */
c3Gemm *c3GemmInit(cudaStream_t stream, const c3Scenario *sc, int nsc, unsigned seed);
/* Microseconds of one GEMM of the scenario (the mean of a few, after warm-up). */
int c3GemmTime(c3Gemm *g, const c3Scenario *s, double *us);
/* Captures `count` GEMMs of the scenario as the graph c3GemmLaunch runs. */
int c3GemmCapture(c3Gemm *g, const c3Scenario *s, long count);
int c3GemmLaunch(c3Gemm *g);
/* Fused scenarios: rows [row0, row0 + rows) of the row-major C = A B
 * (A: M x K, B: K x N, C: M x N, bf16), from `a`, the first of those rows
 * of A, on the GEMM stream; and C (M x N, device memory). */
int c3GemmRows(c3Gemm *g, const c3Scenario *s, const void *a, long row0, long rows);
void *c3GemmOut(c3Gemm *g);
void c3GemmFini(c3Gemm *g);

/* One contender of this rank (one process per rank). */
typedef struct {
  c3ContenderSpec spec;
  int rank;
  ncclBase *nccl;
  dmacclComm_t comm;
  cudaStream_t stream; /* the collective stream; highest priority for -prio */
  void *send, *recv;   /* nccl-ce: its own windows; otherwise the shared buffers */
} c3Contender;

/* Shared id for a communicator of this contender: NCCL (128 bytes) or dmaccl. */
typedef union {
  char nccl[128];
  dmacclUniqueId dmaccl;
} c3Id;

/* Rank 0 makes the id (0 or -1 with err). */
int c3ContenderMakeId(const c3ContenderSpec *s, c3Id *id, char *err, size_t errlen);
/* Creates this rank's communicator and stream; 0, or -1 with err. send and
 * recv are the shared buffers (sendBytes and recvBytes), send holding this
 * rank's data. colls: the run's collectives (bit 1u << collId), which a
 * dmaccl algorithm's selection string covers (c3Selection). */
int c3ContenderInit(c3Contender *c, const c3ContenderSpec *s, int nranks, int rank, const c3Id *id,
                    unsigned colls, void *send, size_t sendBytes, void *recv, size_t recvBytes,
                    char *err, size_t errlen);
/* One collective coll of shape sh (c3Shape: this run's ranks, root 0) on
 * c->stream, bf16, reductions summing: collIssue for dmaccl, ncclBaseIssue
 * for NCCL. 0, or -1 after a message on stderr. */
int c3ContenderIssue(c3Contender *c, collId coll, const collShape *sh);
void c3ContenderFini(c3Contender *c);

#endif
