/* dmaccl-perf's state, shared by its files: main.c (processes, setup, the
 * sweep), ops.c (issuing, graphs, checking, timing), report.c (table and
 * JSON), energy.c (NVML), breakdown.c (CUPTI). */
#ifndef DMACCL_PERF_BENCH_H_
#define DMACCL_PERF_BENCH_H_

#include "args.h"
#include "baseline_nccl.h"
#include "breakdown.h"
#include "energy.h"
#include "plan.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

#define MAXR 64
#define POISON 0xA5

/* Returns -1 from the calling function after saying which CUDA call failed. */
#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "dmaccl-perf: %s: %s\n", #call, cudaGetErrorString(e_));                     \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

enum { KIND_DMACCL = 0, KIND_NCCL = 1, KIND_NCCL_CE = 2 };

/* Traced operations per row of the kernel pass (--kernels). */
#define KERNEL_TRACE_REPS 3

/* Kernels of one operation, per rank (mean over ranks): the --kernels columns. */
typedef struct {
  double kernels; /* launches */
  double us;      /* their GPU time, summed */
  int ctas;       /* the largest grid */
  double copies;  /* copy commands (CUPTI memcpy records) */
} perfKernels;
extern const char *const perfKindName[3];

typedef struct {
  char name[16];
  int kind;
  dmacclComm_t comms[MAXR]; /* local ranks (dmaccl) */
  ncclBase *nccl;           /* baselines */
  void *send[MAXR], *recv[MAXR];
  int ownBuffers; /* send/recv from dmacclMemAlloc on this contender's comm */
  int ownSend;    /* send buffers of its own (filled from the input pool): not b->send */
  /* --persistent: the requests of the current (collective, count, in place):
   * collRequests(reqColl) per local rank (sendrecv: two) */
  dmacclRequest_t req[MAXR][COLL_MAX_REQUESTS];
  int reqColl, reqInPlace;
  size_t reqCount;
  /* --notify: each local rank's arrival words (MAXR; made at first use) and
   * the value of the last call */
  uint32_t *words[MAXR];
  uint32_t wordValue;
} contender;

/* What the processes of -p share (mapped before fork). */
typedef struct {
  pthread_barrier_t barrier;
  double vals[MAXR];
  int okId[3];
  char ncclId[3][128];
  dmacclUniqueId ids[PERF_MAX_ALGOS + 1];
} perfShared;

/* A time over ranks: nccl-tests' -a choices. */
typedef struct {
  double v[4]; /* PERF_AVG_RANK0, _MEAN, _MIN, _MAX */
} perfStat;

/* One table row half: one contender, one size, out of place or in place. */
typedef struct {
  int cycle, coll, inPlace, contender;
  size_t bytes, count;
  perfStat us;
  double slowest;    /* the slowest iteration's host time in the timed loop (one call of
                        every local rank, or one launch of their graphs), us, the most of any
                        process */
  double skew;       /* how much later than the first the last rank started the timed loop, us
                        (the time counts from that start) */
  double completion; /* the timed loop's wait for completion after its last operation
                        (perfSyncAll), us, the most of any process */
  double runqueue;   /* how long the timing thread was runnable but not running in the timed
                        loop (/proc/thread-self/schedstat), us, the most of any process; -1
                        where a process cannot tell */
  long ops;          /* operations the timed loop ran (-n, or -G x -n) */
  long callOps;      /* operations one iteration of it issues (1, or -n for a graph launch) */
  double refOp;      /* time per operation before the timed loop (the warm-up's, or the
                        graphs' upload launch, whichever is less), us, the least of any
                        process; 0 = none (-w 0 eager) */
  long long wrong;
  double speedup;       /* best baseline's time / this time; 0 = no baseline or a baseline row */
  int best;             /* contender index of that baseline, -1 if none */
  double joules, watts; /* per operation, all GPUs; watts = average power; 0 = not measured */
  int hasBreakdown;
  perfBreakdown bd; /* averaged over ranks, median over repetitions */
  int hasKernels;
  perfKernels kern; /* --kernels */
} perfRow;

typedef struct {
  perfArgs args;
  int argc;
  char **argv;
  int gpu, n;        /* n: ranks in all */
  int nlocal, first; /* ranks of this process: first .. first+nlocal-1 */
  int ngpu;          /* GPUs found; rank r runs on GPU r % ngpu */
  int shared;        /* more ranks than GPUs: ranks share GPUs */
  unsigned tooFew;   /* PERF_COLL bits of the -o rows skipped: fewer ranks than collMinRanks */
  int mp;            /* one rank per process (-p) */
  int print;         /* this process prints (rank 0) */
  perfShared *sh;
  int devs[MAXR];
  cudaStream_t streams[MAXR];
  void *send[MAXR], *recv[MAXR];
  unsigned char *pool[MAXR];  /* host copy of each rank's send data: random bits */
  unsigned char *exact[MAXR]; /* small integers (perfExactData), allocated when needed */
  int useExact;               /* the send buffers hold exact[] rather than pool[] */
  unsigned char *scratch;     /* host buffer for checking */
  unsigned char *want;        /* the expected output (tools/common/colls.c's reference) */
  size_t tsize;
  contender cs[PERF_MAX_ALGOS + 2];
  int nc;
  perfEnergy *energy; /* this process's GPUs */
  double idleWatts;
  double energyMs; /* length of an energy loop, the same on every rank */
  int breakdownOk;
  char gpuName[128];
  /* --kernels: one entry per (collective, size index, contender, in place) */
  perfKernels *kern;
  int kernOk, nsizes;
  char kernWhy[256]; /* why there are no kernel columns */
  perfRow *rows;
  size_t nrows, caprows;
} bench;

/* ops.c */
/* DMACCL_PERF_TRACE=1: every rank says which step it starts, on stderr. */
void perfTrace(bench *b, const char *step, const contender *c, size_t count);
double perfNowSec(void);
void perfBarrier(bench *b);
/* Combines one value per process into rank 0's, mean, min and max. */
void perfShare(bench *b, double mine, perfStat *out);
/* Sum of one value per process over all processes. */
double perfSum(bench *b, double mine);
int perfIssue(bench *b, contender *c, int coll, size_t count, int inPlace);
/* The input rank's send buffer holds now (pool or exact). */
const unsigned char *perfInput(const bench *b, int rank);
/* 1 when collective coll is checked on exact data: a floating-point type
 * with sum, prod or avg, which NCCL combines in its own order. */
int perfWantsExact(const bench *b, int coll);
/* Fills exact[] from pool[] (perfWantsExact's data). */
void perfExactData(const bench *b, unsigned char *out, const unsigned char *random, size_t bytes);
/* 1 when contender c runs collective coll: a dmaccl algorithm the collective
 * takes (sendrecv: one its selection entry, Broadcast's, takes), NCCL, or
 * NCCL's copy-engine path where NCCL has one (AllGather, AlltoAll, Gather,
 * Scatter). */
int perfTakes(const bench *b, const contender *c, int coll);
void perfFreeRequests(bench *b, contender *c);
int perfSyncAll(bench *b, contender *c);
/* Times the row: warm-up, a barrier, then -n operations (or -G launches of
 * a graph of them), each rank's time counted from the last rank's start
 * (r->us); r->slowest: the longest one iteration (call, launch) took on the
 * host, us, the most of any process; r->skew: how much later than the
 * first the last rank started, us; r->completion and r->runqueue (above).
 * Leaves a captured graph in *graphs for the check and energy. */
int perfMeasure(bench *b, contender *c, int coll, size_t count, int inPlace, perfRow *r,
                cudaGraphExec_t *graphs);
/* Wrong elements over every rank in -c checked operations into poisoned
 * outputs; through the graph when graphs is not NULL. -1 on error. */
long long perfCheck(bench *b, contender *c, int coll, size_t count, int inPlace,
                    cudaGraphExec_t *graphs);
/* Energy per operation (J, all GPUs) and average power over a loop of at
 * least a few hundred ms. */
int perfEnergyRow(bench *b, contender *c, int coll, size_t count, double usPerOp,
                  cudaGraphExec_t *graphs, double *joules, double *watts);
/* One traced operation per repetition; median of each part, averaged over ranks. */
int perfBreakdownRow(bench *b, contender *c, int coll, size_t count, int reps, perfBreakdown *out);
void perfFreeGraphs(bench *b, cudaGraphExec_t *graphs);
/* --kernels: reps traced operations after one untraced; 0, 1 when tracing
 * failed (no columns), -1 on error. */
int perfKernelsRow(bench *b, contender *c, int coll, size_t count, int inPlace, int reps,
                   perfKernels *out);

/* Whether row r had a stall (the 100-ms-class stall of
 * docs/latency-notes.md), 10 ms or more of it:
 *   - one iteration's call (or graph launch) took 10 times what its
 *     operations take;
 *   - one process ended 10 ms or more after the fastest (ops x the spread
 *     of the processes' times per operation);
 *   - the completion wait took twice what all the timed operations take at
 *     the time per operation measured before the loop (refOp): a stall
 *     every process waits through, or one process alone (-g), inflates the
 *     loop's own times, so those cannot be the yardstick.
 * The wait covers every operation still queued when the last call returned,
 * up to all of them: 50 captured AllReduces of 64 MB wait about 12.5 ms
 * with no stall. */
static inline int perfStalled(const perfRow *r) {
  double most = r->us.v[PERF_AVG_MAX], least = r->us.v[PERF_AVG_MIN];
  if (r->slowest >= 1e4 && r->slowest >= 10 * (double)r->callOps * most) return 1;
  if ((double)r->ops * (most - least) >= 1e4) return 1;
  return r->refOp > 0 && r->completion >= 1e4 && r->completion >= 2 * (double)r->ops * r->refOp;
}

/* report.c */
void perfHeader(bench *b);
/* Prints one size's rows (out of place and in place side by side). */
void perfPrintSize(bench *b, size_t firstRow);
void perfSummary(bench *b, int failures);
void perfPrintBreakdown(bench *b);
/* tune.c: auto against the fastest algorithm per size; the tuning file. */
void perfPrintAutoVsBest(bench *b);
int perfWriteTune(bench *b, const char *path);
/* The rows so far as JSON (-J), replacing the file whole; complete 0 while
 * the sweep runs (written after every size, so that a run stopped at a time
 * limit keeps its rows), 1 at the end. */
int perfWriteJson(bench *b, const char *path, int complete);

#endif
