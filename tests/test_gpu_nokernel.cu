/*
 * The collective path launches no kernel: CUPTI activity records of every
 * kernel, copy and memset on the GPUs, collected around collectives of every
 * algorithm, show zero kernels and the expected copies. A positive control
 * (one tiny kernel of this test) shows that CUPTI does record kernels here.
 * Two sets: ranks on GPUs of their own (when there are 2 or more), and 2
 * ranks sharing GPU 0, whose copies must all be device-local (no
 * peer-to-peer copy record). Then every collective of the table with every
 * algorithm it takes: movement-only ones launch no kernel, reducing ones
 * only the reduction kernel (a name containing dmacclReduce), and so does
 * stagell's movement form (AllGather(V), AlltoAll), whose kernel moves the
 * data as lines (staged.c; the built-in selection takes it below 2 MB): no
 * other kernel, no memset. The table's
 * sendrecv row (a ring of Send/Recv, Broadcast's algorithm) is movement: its
 * channels are made by one untraced run first, then a traced one is counted.
 *
 * CUPTI records a device-local copy as a copy, but the driver runs it as
 * thread blocks (bench/probes/smuse.cu: every form of a same-GPU copy or
 * memset waits for free SM slots). So a last set checks the zero-SM promise
 * itself: while a "hog" kernel holds every SM thread slot of every GPU, each
 * movement collective runs with each algorithm it takes. Those with no
 * device-local copy (the direct algorithms, relay and chain in place, and
 * Send/Recv) must finish while the hog still holds the SMs; the others (out
 * of place: the own block; the staged ones: their out copies) are reported,
 * not asserted.
 */
#include <cupti.h>
#include <time.h>

#include "collcheck.h"
#include "gpu_common.h"

static int nKernels, nCopies, nPeerCopies, nMemsets;
static int nReduceKernels;    /* kernels whose name contains dmacclReduce */
static char otherKernel[256]; /* the name of the last other kernel */
static unsigned maxBlocks;    /* the most thread blocks of any kernel recorded */

static void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
  *size = 1 << 20;
  *buffer = (uint8_t *)aligned_alloc(8, *size);
  *maxRecords = 0;
}

static void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid) {
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
      const char *name = k->name;
      unsigned blocks = (unsigned)k->gridX * (unsigned)k->gridY * (unsigned)k->gridZ;
      if (blocks > maxBlocks) maxBlocks = blocks;
      nKernels++;
      if (name && strstr(name, "dmacclReduce"))
        nReduceKernels++;
      else
        snprintf(otherKernel, sizeof(otherKernel), "%s", name ? name : "(no name)");
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: nCopies++; break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: nCopies++, nPeerCopies++; break; /* peer to peer */
    case CUPTI_ACTIVITY_KIND_MEMSET: nMemsets++; break;
    default: break;
    }
  }
  free(buffer);
}

static void resetCounts(void) {
  cuptiActivityFlushAll(1);
  nKernels = nCopies = nPeerCopies = nMemsets = nReduceKernels = 0;
  maxBlocks = 0;
  otherKernel[0] = 0;
}

__global__ void touch(int *p) {
  *p = 1;
}

#define CUPTI_OK(call)                                                                             \
  do {                                                                                             \
    CUptiResult r_ = (call);                                                                       \
    if (r_ != CUPTI_SUCCESS) {                                                                     \
      const char *m_ = "";                                                                         \
      cuptiGetResultString(r_, &m_);                                                               \
      printf("%s: %s\n", #call, m_);                                                               \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* Every algorithm on n ranks on devs: zero kernels and memsets, the copies
 * expected; shared: no peer-to-peer copy at all. */
static int runSet(int n, const int *devs, int shared) {
  const size_t count = 1 << 18; /* 1 MB of floats per block */
  for (int a = 0; a < CC_NALGOS; a++) {
    /* stagesm's and stagell's kernels move the data (runColls counts them) */
    if (!ccAlgoTakes(COLL_ALLGATHER, ccAlgos[a]) || !strcmp(ccAlgos[a], "stagell") ||
        !strcmp(ccAlgos[a], "stagesm"))
      continue;
    dmacclComm_t comms[CC_MAXR];
    char sel[512];
    ccAlgoTable(ccAlgos[a], sel, sizeof(sel));
    dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
    cfg.executor = dmacclExecutorCuda;
    cfg.algorithm = sel;
    ASSERT_EQ_INT(dmacclCommInitAll(comms, n, devs, &cfg), dmacclSuccess);
    void *send[CC_MAXR], *recv[CC_MAXR];
    cudaStream_t st[CC_MAXR];
    for (int r = 0; r < n; r++) {
      cudaSetDevice(devs[r]);
      ASSERT_EQ_INT(cudaMalloc(&send[r], count * 4 * n), cudaSuccess);
      ASSERT_EQ_INT(cudaMalloc(&recv[r], count * 4 * n), cudaSuccess);
      ASSERT_EQ_INT(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking), cudaSuccess);
      cudaDeviceSynchronize();
    }
    resetCounts();
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    for (int r = 0; r < n; r++) {
      ASSERT_EQ_INT(dmacclAllGather(send[r], recv[r], count, dmacclFloat32, comms[r], st[r]),
                    dmacclSuccess);
      ASSERT_EQ_INT(dmacclAlltoAll(send[r], recv[r], count, dmacclFloat32, comms[r], st[r]),
                    dmacclSuccess);
    }
    ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
    for (int r = 0; r < n; r++) {
      cudaSetDevice(devs[r]);
      ASSERT_EQ_INT(cudaStreamSynchronize(st[r]), cudaSuccess);
    }
    cuptiActivityFlushAll(1);
    printf("%-7s: %d kernels, %d copies (%d peer to peer), %d memsets for AllGather+AlltoAll on "
           "%d ranks%s\n",
           ccAlgos[a], nKernels, nCopies, nPeerCopies, nMemsets, n,
           shared ? " sharing GPU 0" : " on GPUs of their own");
    ASSERT_EQ_INT(nKernels, 0);
    ASSERT_EQ_INT(nMemsets, 0);
    if (shared) ASSERT_EQ_INT(nPeerCopies, 0);
    /* The batch form may be recorded as one copy record per batch. */
    ASSERT_TRUE(nCopies >= (a == 2 || a == 5 ? 2 * n : 2 * n * (n - 1)));
    for (int r = 0; r < n; r++) {
      cudaSetDevice(devs[r]);
      cudaFree(send[r]), cudaFree(recv[r]), cudaStreamDestroy(st[r]);
      dmacclCommDestroy(comms[r]);
    }
  }
  return 0;
}

/* Every collective of the table on n ranks on devs, with every algorithm it
 * takes and the built-in selection under each CTA policy: movement-only
 * ones launch no kernel (and no memset) but for stagell's, which the
 * built-in selection takes for these sizes on GPUs of their own under the
 * default and efficiency policies (the control that the zero policy's none
 * means something); reducing ones only kernels named dmacclReduce (at
 * least one: n > 1). Each result is checked too. shared: no peer-to-peer
 * copy. */
static int runColls(int n, const int *devs, int shared) {
  static const char *const policyName[] = {"auto", "auto/efficiency", "auto/zero"};
  for (int a = 0; a < CC_NALGOS + 3; a++) {
    int policy = a < CC_NALGOS ? dmacclCtaPolicyDefault : a - CC_NALGOS;
    const char *algo = a < CC_NALGOS ? ccAlgos[a] : policyName[policy];
    char sel[512];
    ccAlgoTable(algo, sel, sizeof(sel));
    dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
    cfg.executor = dmacclExecutorCuda;
    cfg.algorithm = a < CC_NALGOS ? sel : NULL;
    cfg.ctaPolicy = policy;
    dmacclComm_t comms[CC_MAXR];
    ASSERT_EQ_INT(dmacclCommInitAll(comms, n, devs, &cfg), dmacclSuccess);
    ccEnv env;
    ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
    for (int c = 0; c < COLL_NUM; c++) {
      if (a < CC_NALGOS && !ccAlgoTakes((collId)c, algo)) continue;
      int reduces = (collTable[c].flags & COLL_REDUCES) != 0;
      ccCase cs;
      memset(&cs, 0, sizeof(cs));
      cs.coll = (collId)c;
      cs.type = reduces ? dmacclBfloat16 : dmacclFloat32;
      cs.op = dmacclSum;
      cs.count = 1 << 16;
      cs.root = n - 1;
      cs.seed = 40u + (uint64_t)c;
      /* AllGatherV: uneven blocks with gaps, whose lines fit a rank's
       * share of the line slot on any rank count, so that the built-in
       * selection takes the line form (the control). None empty: an empty
       * block ran stage before token lines (staged.c) and failed the
       * control on 3 ranks; it takes the line form now too */
      collVArrays agv;
      if (c == COLL_ALLGATHERV) {
        memset(&agv, 0, sizeof(agv));
        for (size_t r = 0, at = 0; r < (size_t)n; r++) {
          agv.counts[r] = cs.count - 1000 * r;
          agv.displs[r] = at;
          at += agv.counts[r] + 3;
        }
        cs.arrays = &agv;
      }
      ccOp *op = ccOpNew(&env, n, &cs);
      ASSERT_TRUE(op != NULL);
      if ((collTable[c].flags & COLL_P2P) || c == COLL_ALLTOALLV) {
        /* the first Send/Recv makes the ring's channels (set-up, not the
         * operation's work), and so does AlltoAllv's first as pairs: once
         * before counting */
        ASSERT_EQ_INT(ccOpFill(op, cs.seed + 1), 0);
        ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
        for (int r = 0; r < n; r++) ASSERT_EQ_INT(ccOpIssue(op, comms, r), dmacclSuccess);
        ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
        ASSERT_EQ_INT(ccWait(&env, comms, n), dmacclSuccess);
        ASSERT_EQ_INT(ccOpCheck(op), 0);
      }
      ASSERT_EQ_INT(ccOpFill(op, cs.seed), 0);
      for (int r = 0; r < n; r++) {
        cudaSetDevice(devs[r]);
        ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
      }
      resetCounts();
      ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
      for (int r = 0; r < n; r++) ASSERT_EQ_INT(ccOpIssue(op, comms, r), dmacclSuccess);
      ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
      ASSERT_EQ_INT(ccWait(&env, comms, n), dmacclSuccess);
      cuptiActivityFlushAll(1);
      printf("%-7s %-14s: %d kernels (%d dmacclReduce, at most %u blocks), %d copies (%d peer "
             "to peer), %d memsets on %d ranks%s\n",
             algo, collTable[c].name, nKernels, nReduceKernels, maxBlocks, nCopies, nPeerCopies,
             nMemsets, n, shared ? " sharing GPU 0" : " on GPUs of their own");
      if (nKernels != nReduceKernels) printf("  another kernel: %s\n", otherKernel);
      ASSERT_EQ_INT(nKernels - nReduceKernels, 0);
      /* the control: stagell's kernel, which the built-in table takes for
       * these sizes */
      int lines = !shared && !reduces && c != COLL_ALLTOALLV;
      if (a >= CC_NALGOS && policy != dmacclCtaPolicyZero && lines) ASSERT_TRUE(nKernels >= 1);
      /* a rank's Send and Recv of the ring are one group's two channel
       * operations of lines: one kernel per rank, not one per channel
       * (cuda.c, held launches) */
      if (c == COLL_SENDRECV && lines &&
          (a >= CC_NALGOS ? policy != dmacclCtaPolicyZero : !strcmp(algo, "stagell")))
        ASSERT_EQ_INT(nKernels, n);
      if (reduces) {
        ASSERT_TRUE(nReduceKernels >= 1);
      } else if (!strcmp(algo, "stagesm") && !shared && c != COLL_ALLTOALLV && c != COLL_SENDRECV) {
        /* stagesm's movement form: one kernel per rank, nothing between
         * GPUs on a copy engine (its fallback, stage, would copy) */
        ASSERT_EQ_INT(nKernels, n);
        ASSERT_EQ_INT(nPeerCopies, 0);
        ASSERT_EQ_INT(nMemsets, 0);
      } else if (!strcmp(algo, "stagell") || !strcmp(algo, "stagesm") || !strcmp(algo, "pairs") ||
                 (a >= CC_NALGOS && policy != dmacclCtaPolicyZero)) {
        /* the lines' kernel (stage where they do not fit; the built-in
         * table takes stagell for the small movement collectives but
         * AlltoAllv, whose pairs' channels take it as Send/Recv do), or
         * stagesm's (stage where ranks share a GPU) */
        ASSERT_EQ_INT(nMemsets, 0);
      } else {
        ASSERT_EQ_INT(nKernels, 0);
        ASSERT_EQ_INT(nMemsets, 0);
      }
      if (shared) ASSERT_EQ_INT(nPeerCopies, 0);
      ASSERT_EQ_INT(ccOpCheck(op), 0);
      ccOpFree(op);
    }
    ccEnvFini(&env, n);
    for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
  }
  return 0;
}

/* Holds every SM thread slot it can until *release (host-mapped), or limitNs
 * at most; each block says it runs in started[blockIdx.x] (host-mapped). */
__global__ void hogSms(volatile int *release, volatile int *started, unsigned long long limitNs) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  if (threadIdx.x == 0) started[blockIdx.x] = 1;
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (!*release && t - t0 < limitNs);
}

enum { HOG_MAX_BLOCKS = 4096 };

static double nowSeconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Whether coll with algo runs without any device-local copy: no SM needed. */
static int noLocalCopy(collId coll, const char *algo, int inPlace) {
  if (!strcmp(algo, "auto") || !strncmp(algo, "stage", 5)) return 0; /* staged: out copies */
  return inPlace || coll == COLL_SENDRECV;
}

/* The zero-SM set (see the header): n ranks on GPUs of their own. */
static int runNoSm(int n, const int *devs) {
  int blocks[CC_MAXR];
  cudaStream_t hogStream[CC_MAXR];
  volatile int *release = NULL, *started[CC_MAXR];
  ASSERT_EQ_INT(
      cudaHostAlloc((void **)&release, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable),
      cudaSuccess);
  for (int r = 0; r < n; r++) {
    cudaDeviceProp p;
    int perSm = 0;
    ASSERT_EQ_INT(cudaSetDevice(devs[r]), cudaSuccess);
    ASSERT_EQ_INT(cudaGetDeviceProperties(&p, devs[r]), cudaSuccess);
    ASSERT_EQ_INT(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, hogSms, 1024, 0),
                  cudaSuccess);
    if (perSm * 1024 < p.maxThreadsPerMultiProcessor) {
      printf("zero SMs: SKIPPED: 1024-thread blocks cannot fill the SMs of GPU %d\n", devs[r]);
      return 0;
    }
    blocks[r] = perSm * p.multiProcessorCount;
    ASSERT_TRUE(blocks[r] <= HOG_MAX_BLOCKS);
    ASSERT_EQ_INT(cudaHostAlloc((void **)&started[r], HOG_MAX_BLOCKS * sizeof(int),
                                cudaHostAllocMapped | cudaHostAllocPortable),
                  cudaSuccess);
    ASSERT_EQ_INT(cudaStreamCreateWithFlags(&hogStream[r], cudaStreamNonBlocking), cudaSuccess);
  }
  int asserted = 0;
  for (int a = 0; a <= CC_NALGOS; a++) {
    const char *algo = a < CC_NALGOS ? ccAlgos[a] : "auto";
    char sel[512];
    ccAlgoTable(algo, sel, sizeof(sel));
    dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
    cfg.executor = dmacclExecutorCuda;
    cfg.algorithm = a < CC_NALGOS ? sel : NULL;
    dmacclComm_t comms[CC_MAXR];
    ASSERT_EQ_INT(dmacclCommInitAll(comms, n, devs, &cfg), dmacclSuccess);
    ccEnv env;
    ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
    for (int c = 0; c < COLL_NUM; c++) {
      if (collTable[c].flags & COLL_REDUCES) continue; /* the reduction kernel's SMs */
      if (a < CC_NALGOS && !ccAlgoTakes((collId)c, algo)) continue;
      ccCase cs;
      memset(&cs, 0, sizeof(cs));
      cs.coll = (collId)c;
      cs.type = dmacclFloat32;
      cs.count = 1 << 16;
      cs.root = n - 1;
      cs.inPlace = (collTable[c].flags & COLL_IN_PLACE) != 0;
      cs.seed = 90u + (uint64_t)c;
      ccOp *op = ccOpNew(&env, n, &cs);
      ASSERT_TRUE(op != NULL);
      /* once unhindered: first-use work (Send/Recv channels) and the check */
      ASSERT_EQ_INT(ccOpFill(op, cs.seed + 1), 0);
      ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
      for (int r = 0; r < n; r++) ASSERT_EQ_INT(ccOpIssue(op, comms, r), dmacclSuccess);
      ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
      ASSERT_EQ_INT(ccWait(&env, comms, n), dmacclSuccess);
      ASSERT_EQ_INT(ccOpCheck(op), 0);
      ASSERT_EQ_INT(ccOpFill(op, cs.seed), 0);
      for (int r = 0; r < n; r++) {
        ASSERT_EQ_INT(cudaSetDevice(devs[r]), cudaSuccess);
        ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
      }
      /* every SM thread slot of every GPU taken, then the collective */
      *release = 0;
      for (int r = 0; r < n; r++) {
        memset((void *)started[r], 0, HOG_MAX_BLOCKS * sizeof(int));
        ASSERT_EQ_INT(cudaSetDevice(devs[r]), cudaSuccess);
        hogSms<<<blocks[r], 1024, 0, hogStream[r]>>>(release, started[r], 30000000000ull);
        ASSERT_EQ_INT(cudaGetLastError(), cudaSuccess);
      }
      for (int r = 0; r < n; r++) {
        double until = nowSeconds() + 10.0;
        int running = 0;
        while (running < blocks[r] && nowSeconds() < until) {
          running = 0;
          for (int b = 0; b < blocks[r]; b++) running += started[r][b];
        }
        ASSERT_EQ_INT(running, blocks[r]);
      }
      ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
      for (int r = 0; r < n; r++) ASSERT_EQ_INT(ccOpIssue(op, comms, r), dmacclSuccess);
      ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
      int expect = noLocalCopy((collId)c, algo, cs.inPlace), done = 0;
      /* seconds, not a timing threshold: a collective that needs an SM cannot
       * finish before the release, however long it is given */
      double until = nowSeconds() + (expect ? 10.0 : 0.2);
      while (!done && nowSeconds() < until) {
        done = 1;
        for (int r = 0; r < n; r++) {
          ASSERT_EQ_INT(cudaSetDevice(devs[r]), cudaSuccess);
          cudaError_t q = cudaStreamQuery(env.stream[r]);
          if (q == cudaErrorNotReady)
            done = 0;
          else
            ASSERT_EQ_INT(q, cudaSuccess);
        }
      }
      int hogsStillRunning = 1;
      for (int r = 0; r < n; r++)
        if (cudaStreamQuery(hogStream[r]) != cudaErrorNotReady) hogsStillRunning = 0;
      *release = 1;
      ASSERT_EQ_INT(ccWait(&env, comms, n), dmacclSuccess);
      for (int r = 0; r < n; r++) {
        ASSERT_EQ_INT(cudaSetDevice(devs[r]), cudaSuccess);
        ASSERT_EQ_INT(cudaStreamSynchronize(hogStream[r]), cudaSuccess);
      }
      ASSERT_TRUE(hogsStillRunning); /* the 30 s limit never ended a hog early */
      printf("zero SMs: %-7s %-14s %s on %d ranks: %s%s\n", algo, collTable[c].name,
             cs.inPlace ? "in place" : "out of place", n,
             done ? "finished while every SM slot was held"
                  : "waited for SM slots (a device-local copy)",
             expect ? " (asserted)" : "");
      if (expect) {
        ASSERT_TRUE(done);
        asserted++;
      }
      ASSERT_EQ_INT(ccOpCheck(op), 0);
      ccOpFree(op);
    }
    ccEnvFini(&env, n);
    for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
  }
  ASSERT_TRUE(asserted > 0);
  for (int r = 0; r < n; r++) {
    cudaSetDevice(devs[r]);
    cudaStreamDestroy(hogStream[r]);
    cudaFreeHost((void *)started[r]);
  }
  cudaFreeHost((void *)release);
  return 0;
}

/* One rank: an out-of-place AllGather of 256 KB is one copy. By default the
 * library's byte-copy kernel makes it (cheaper to launch); under CTA policy
 * zero the runtime's copy (no kernel of the library). Bytes checked. */
static int runOneRank(void) {
  const size_t bytes = 256 << 10;
  for (int policy = dmacclCtaPolicyDefault; policy <= dmacclCtaPolicyZero; policy += 2) {
    dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
    cfg.executor = dmacclExecutorCuda;
    cfg.ctaPolicy = policy;
    int dev = 0;
    dmacclComm_t comm;
    ASSERT_EQ_INT(dmacclCommInitAll(&comm, 1, &dev, &cfg), dmacclSuccess);
    unsigned char *in = NULL, *out = NULL, *host = (unsigned char *)malloc(2 * bytes);
    ASSERT_TRUE(host != NULL);
    ASSERT_EQ_INT(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&in, bytes), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&out, bytes), cudaSuccess);
    for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(i * 7 + policy);
    ASSERT_EQ_INT(cudaMemcpy(in, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ_INT(cudaMemset(out, CC_POISON, bytes), cudaSuccess);
    ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
    resetCounts();
    ASSERT_EQ_INT(dmacclAllGather(in, out, bytes, dmacclUint8, comm, NULL), dmacclSuccess);
    ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
    cuptiActivityFlushAll(1);
    printf("one rank, CTA policy %s: AllGather of 256 KB: %d kernels, %d copies\n",
           policy ? "zero" : "default", nKernels, nCopies);
    ASSERT_EQ_INT(nKernels, policy == dmacclCtaPolicyZero ? 0 : 1);
    ASSERT_EQ_INT(cudaMemcpy(host + bytes, out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_TRUE(memcmp(host, host + bytes, bytes) == 0);
    cudaFree(in);
    cudaFree(out);
    free(host);
    dmacclCommDestroy(comm);
  }
  return 0;
}

int main(void) {
  int ndev = gpuCountOrSkip(1, "test_gpu_nokernel");
  CUPTI_OK(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));

  /* Positive control: our own kernel is seen. */
  int *flag = NULL;
  ASSERT_EQ_INT(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ_INT(cudaMalloc((void **)&flag, sizeof(int)), cudaSuccess);
  ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
  resetCounts();
  touch<<<1, 1>>>(flag);
  ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
  cuptiActivityFlushAll(1);
  printf("control: %d kernel(s) recorded for one launch\n", nKernels);
  ASSERT_EQ_INT(nKernels, 1);

  int own[4] = {0, 1, 2, 3}, same[2] = {0, 0};
  if (ndev >= 2 && runSet(ndev < 4 ? ndev : 4, own, 0)) return 1;
  if (runSet(2, same, 1)) return 1;
  int three[3] = {0, 1 % ndev, 2 % ndev}, same3[3] = {0, 0, 0};
  if (ndev >= 2 && runColls(ndev < 3 ? 2 : 3, three, 0)) return 1;
  if (runColls(3, same3, 1)) return 1;
  if (ndev >= 2 && runNoSm(ndev < 4 ? ndev : 4, own)) return 1;
  if (runOneRank()) return 1;
  TEST_EXIT();
}
