/*
 * GPU correctness on the CUDA executor, one process driving every rank:
 * every algorithm, AllGather in and out of place and AlltoAll, sizes from 0
 * bytes to 64 MB with odd counts (256 MB in one set of ranks), several data types, random data,
 * poisoned outputs with guard bytes. Sets of 2, 3 and 4 ranks (and every GPU when there are more
 * than 4) put rank r on GPU r % GPUs: with one GPU the ranks share it, with two GPUs 3 and 4 ranks
 * mix shared and separate GPUs. Graph capture: one graph per rank where ranks have GPUs of their
 * own, one graph for all ranks (which ranks sharing a GPU need), and the refusal of separate graphs
 * for ranks that share a GPU; separate graphs of ranks on GPUs of their own take an AllReduce
 * algorithm that writes its peers, or refuse one that reads them (testGraphApart). Every collective
 * of the table (tools/common/colls.h) on 1-4 ranks, eagerly and captured into one graph replayed
 * twice with new data (testEveryCollective); its sendrecv row (a ring of Send/Recv) from 2 ranks
 * on, its channels made by an eager run before the capture (a channel cannot be made under
 * capture). One rank's calls on several streams in call order (testOneRank). Skipped without a GPU.
 */
#include "collcheck.h"
#include "gpu_common.h"

#include <cuda.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  dmacclDataType_t type;
  size_t count;
} sizeCase;

static int ngpu;

static int runSet(int n) {
  /* Counts are per block; sizes are total receive bytes at n=4. */
  const sizeCase sizes[] = {
      {dmacclFloat32, 0},        /* 0 B */
      {dmacclInt8, 1},           /* 1 element */
      {dmacclFloat16, 333},      /* odd */
      {dmacclFloat64, 4099},     /* ~128 KB */
      {dmacclBfloat16, 262147},  /* ~2 MB, odd */
      {dmacclUint8, 16777213},   /* ~64 MB, odd */
      {dmacclFloat32, 16777216}, /* 256 MB at 4 ranks */
  };
  for (int a = 0; a < CC_NALGOS; a++) {
    /* AllGather and AlltoAll: the algorithms they take (with the others
     * they would run the built-in selection again) */
    if (!ccAlgoTakes(COLL_ALLGATHER, ccAlgos[a])) continue;
    dmacclComm_t comms[CC_MAXR];
    if (ccInitAlgo(comms, n, 1, ccAlgos[a]) != dmacclSuccess) {
      TEST_FAIL("init n=%d %s", n, ccAlgos[a]);
      return 1;
    }
    ccEnv env;
    ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
    int bad = 0;
    /* The largest case (its host-side fill and check take seconds) runs in
     * one set per machine: the most ranks that have a GPU each, up to 4 (2
     * ranks on one GPU), and the every-GPU set above 4. */
    int own = ngpu < 2 ? 2 : ngpu < 4 ? ngpu : 4;
    size_t nsizes = sizeof(sizes) / sizeof(sizes[0]) - (n == own || n > 4 ? 0 : 1);
    for (size_t s = 0; s < nsizes && !bad; s++) {
      /* Keep the largest total at 256 MB whatever n is (64 MB for 3 or more
       * ranks sharing GPUs, to keep the check's host time down). */
      size_t count = sizes[s].count;
      if (s == sizeof(sizes) / sizeof(sizes[0]) - 1)
        count = count * 4 / (size_t)n / (n > 2 && ngpu < n ? 4 : 1);
      for (int coll = COLL_ALLGATHER; coll <= COLL_ALLTOALL && !bad; coll++)
        for (int inPlace = 0; inPlace <= (coll == COLL_ALLGATHER) && !bad; inPlace++) {
          long long w = ccRun(&env, comms, n, coll, sizes[s].type, count, inPlace,
                              1000 * s + 10 * coll + inPlace);
          printf("  n=%d on %d GPU(s) %-7s %-9s %-10zu elems of %zu B inplace=%d: %s\n", n,
                 n < ngpu ? n : ngpu, ccAlgos[a], ccCollName(coll), count,
                 ccTypeSize(sizes[s].type), inPlace, w == 0 ? "ok" : "WRONG");
          if (w != 0) {
            TEST_FAIL("n=%d %s %s count %zu inplace %d: %lld wrong bytes", n, ccAlgos[a],
                      ccCollName(coll), count, inPlace, w);
            bad = 1;
          }
        }
    }
    ccEnvFini(&env, n);
    for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
    if (bad) return 1;
  }
  return 0;
}

static int testTwoRanks(void) {
  return runSet(2);
}
static int testThreeRanks(void) {
  return runSet(3);
}
static int testFourRanks(void) {
  return runSet(4);
}
static int testAllGpus(void) {
  if (ngpu <= 4) return 0;
  return runSet(ngpu > CC_MAXR ? CC_MAXR : ngpu);
}

/* The caller's stream semantics: work queued after the collective on the
 * same stream sees its result, without any host synchronization between. */
static int testStreamOrder(void) {
  enum { N = 2, COUNT = 1 << 20 };
  dmacclComm_t comms[N];
  int devs[N];
  ccDevices(N, devs);
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorCuda;
  ASSERT_EQ_INT(dmacclCommInitAll(comms, N, devs, &cfg), dmacclSuccess);
  ccEnv env;
  ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, N), 0);
  size_t bytes = COUNT * 4;
  unsigned char *host = malloc(bytes * N), *src[N], *send[N], *recv[N], *out = malloc(bytes * N);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    cudaMalloc((void **)&src[r], bytes);
    cudaMalloc((void **)&send[r], bytes);
    cudaMalloc((void **)&recv[r], bytes * N);
    testFillRandom(host + (size_t)r * bytes, bytes, 7 + (uint64_t)r);
    cudaMemcpy(src[r], host + (size_t)r * bytes, bytes, cudaMemcpyHostToDevice);
    cudaMemset(send[r], 0x11, bytes);
    cudaMemset(recv[r], CC_POISON, bytes * N);
    cudaDeviceSynchronize();
  }
  /* produce sendbuff on the stream -> collective -> consume recvbuff */
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    ASSERT_EQ_INT(cudaMemcpyAsync(send[r], src[r], bytes, cudaMemcpyDeviceToDevice, env.stream[r]),
                  cudaSuccess);
    ASSERT_EQ_INT(dmacclAllGather(send[r], recv[r], COUNT, dmacclFloat32, comms[r], env.stream[r]),
                  dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    ASSERT_EQ_INT(cudaMemcpyAsync(out, recv[r], bytes * N, cudaMemcpyDeviceToHost, env.stream[r]),
                  cudaSuccess);
    ASSERT_EQ_INT(cudaStreamSynchronize(env.stream[r]), cudaSuccess);
    ASSERT_TRUE(memcmp(out, host, bytes * N) == 0);
  }
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    cudaFree(src[r]), cudaFree(send[r]), cudaFree(recv[r]);
  }
  free(host), free(out);
  ccEnvFini(&env, N);
  for (int r = 0; r < N; r++) dmacclCommDestroy(comms[r]);
  return 0;
}

/* Captures `reps` grouped AllGather + AlltoAll per rank. joint: one graph,
 * rank 0's stream begins the capture and the others join it through events
 * (ranks that share a GPU need this); else one graph per rank's stream. */
static int captureColls(ccEnv *env, dmacclComm_t *comms, int n, int joint, int reps, size_t count,
                        unsigned char **ag, unsigned char **agOut, unsigned char **aa,
                        unsigned char **aaOut, cudaGraph_t *graph, dmacclResult_t *issued) {
  cudaEvent_t ev[CC_MAXR];
  for (int r = 0; r < n; r++) {
    cudaSetDevice(env->dev[r]);
    ASSERT_EQ_INT(cudaEventCreateWithFlags(&ev[r], cudaEventDisableTiming), cudaSuccess);
  }
  /* No allocation may happen while this thread captures. */
  for (int r = 0; r < n; r++) {
    cudaSetDevice(env->dev[r]);
    if (!joint || r == 0)
      ASSERT_EQ_INT(cudaStreamBeginCapture(env->stream[r], cudaStreamCaptureModeThreadLocal),
                    cudaSuccess);
    else
      ASSERT_EQ_INT(cudaStreamWaitEvent(env->stream[r], ev[0], 0), cudaSuccess);
    if (joint && r == 0) ASSERT_EQ_INT(cudaEventRecord(ev[0], env->stream[0]), cudaSuccess);
  }
  *issued = dmacclSuccess;
  for (int k = 0; k < reps && *issued == dmacclSuccess; k++) {
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    for (int r = 0; r < n; r++) {
      ASSERT_EQ_INT(
          dmacclAllGather(ag[r], agOut[r], count, dmacclFloat32, comms[r], env->stream[r]),
          dmacclSuccess);
      ASSERT_EQ_INT(dmacclAlltoAll(aa[r], aaOut[r], count, dmacclFloat32, comms[r], env->stream[r]),
                    dmacclSuccess);
    }
    *issued = dmacclGroupEnd();
  }
  for (int r = n - 1; r >= 0; r--) {
    cudaSetDevice(env->dev[r]);
    if (joint && r > 0) {
      ASSERT_EQ_INT(cudaEventRecord(ev[r], env->stream[r]), cudaSuccess);
      ASSERT_EQ_INT(cudaStreamWaitEvent(env->stream[0], ev[r], 0), cudaSuccess);
      continue;
    }
    ASSERT_EQ_INT(cudaStreamEndCapture(env->stream[r], &graph[r]), cudaSuccess);
  }
  for (int r = 0; r < n; r++) {
    cudaSetDevice(env->dev[r]);
    cudaEventDestroy(ev[r]);
  }
  return 0;
}

/* Replays the graph(s) 50 times with fresh random inputs, every byte checked.
 * An eager call comes first and dmacclCommSynchronize right after the
 * capture: with reps * 2 >= CORE_BOARD_DEPTH (64) the captured operations
 * reuse the eager one's slot, whose tail Synchronize reads. */
static int graphCase(int n, int joint, int reps) {
  enum { COUNT = 30011 };
  dmacclComm_t comms[CC_MAXR];
  ASSERT_EQ_INT(ccInitAlgo(comms, n, 1, "auto"), dmacclSuccess);
  ccEnv env;
  ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
  size_t chunk = COUNT * 4, total = chunk * (size_t)n;
  unsigned char *ag[CC_MAXR], *agOut[CC_MAXR], *aa[CC_MAXR], *aaOut[CC_MAXR];
  unsigned char *h = malloc(total), *got = malloc(total), *want = malloc(total);
  cudaGraph_t graph[CC_MAXR] = {0};
  cudaGraphExec_t exec[CC_MAXR] = {0};
  for (int r = 0; r < n; r++) {
    cudaSetDevice(env.dev[r]);
    ASSERT_EQ_INT(cudaMalloc((void **)&ag[r], chunk), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&agOut[r], total), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&aa[r], total), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&aaOut[r], total), cudaSuccess);
  }
  dmacclResult_t issued = dmacclSuccess;
  ASSERT_EQ_INT(ccRun(&env, comms, n, COLL_ALLGATHER, dmacclFloat32, 3001, 0, 40), 0);
  if (captureColls(&env, comms, n, joint, reps, COUNT, ag, agOut, aa, aaOut, graph, &issued))
    return 1;
  ASSERT_EQ_INT(issued, dmacclSuccess);
  for (int r = 0; r < n; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  int ngraphs = joint ? 1 : n;
  for (int r = 0; r < ngraphs; r++) { /* only once no stream of this thread captures */
    cudaSetDevice(env.dev[r]);
    ASSERT_EQ_INT(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
  }
  for (int it = 0; it < 50; it++) {
    for (int r = 0; r < n; r++) {
      cudaSetDevice(env.dev[r]);
      testFillRandom(h, chunk, 100u * (uint64_t)it + (uint64_t)r);
      cudaMemcpy(ag[r], h, chunk, cudaMemcpyHostToDevice);
      testFillRandom(h, total, 7000u + 100u * (uint64_t)it + (uint64_t)r);
      cudaMemcpy(aa[r], h, total, cudaMemcpyHostToDevice);
      cudaMemset(agOut[r], CC_POISON, total);
      cudaMemset(aaOut[r], CC_POISON, total);
      ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
    }
    for (int r = 0; r < ngraphs; r++) {
      cudaSetDevice(env.dev[r]);
      ASSERT_EQ_INT(cudaGraphLaunch(exec[r], env.stream[r]), cudaSuccess);
    }
    for (int r = 0; r < n; r++) {
      cudaSetDevice(env.dev[r]);
      ASSERT_EQ_INT(cudaStreamSynchronize(env.stream[r < ngraphs ? r : 0]), cudaSuccess);
      ASSERT_EQ_INT(cudaMemcpy(got, agOut[r], total, cudaMemcpyDeviceToHost), cudaSuccess);
      for (int j = 0; j < n; j++)
        testFillRandom(want + (size_t)j * chunk, chunk, 100u * (uint64_t)it + (uint64_t)j);
      ASSERT_EQ_INT(testFirstDiff(got, want, total), -1);
      ASSERT_EQ_INT(cudaMemcpy(got, aaOut[r], total, cudaMemcpyDeviceToHost), cudaSuccess);
      for (int j = 0; j < n; j++) {
        /* rank j's block for r: bytes [r*chunk, (r+1)*chunk) of j's input */
        testFillRandom(h, total, 7000u + 100u * (uint64_t)it + (uint64_t)j);
        memcpy(want + (size_t)j * chunk, h + (size_t)r * chunk, chunk);
      }
      ASSERT_EQ_INT(testFirstDiff(got, want, total), -1);
    }
  }
  /* Eager calls still work after the replays. */
  ASSERT_EQ_INT(ccRun(&env, comms, n, COLL_ALLTOALL, dmacclFloat32, 3001, 0, 42), 0);
  for (int r = 0; r < n; r++) {
    cudaSetDevice(env.dev[r]);
    if (exec[r]) cudaGraphExecDestroy(exec[r]);
    if (graph[r]) cudaGraphDestroy(graph[r]);
    cudaFree(ag[r]), cudaFree(agOut[r]), cudaFree(aa[r]), cudaFree(aaOut[r]);
  }
  free(h), free(got), free(want);
  ccEnvFini(&env, n);
  for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
  return 0;
}

static int testGraphCapture(void) {
  int n = ngpu > 4 ? 4 : ngpu;
  if (n >= 2 && graphCase(n, 0, 1)) return 1; /* a graph per rank, a GPU per rank */
  if (graphCase(2, 1, 1)) return 1;           /* one graph; on one GPU the ranks share it */
  if (graphCase(2, 1, 40)) return 1;          /* 80 operations per rank in the graph */
  return graphCase(4, 1, 1);                  /* 4 ranks: shared GPUs (and mixed with 2 GPUs) */
}

/* Ranks that share a GPU, captured into separate graphs: refused with a
 * sentence, nothing issued, and the communicator still works. */
static int testGraphRefused(void) {
  if (ngpu >= 2) {
    printf("  every rank has a GPU of its own: nothing to refuse\n");
    return 0;
  }
  enum { N = 2, COUNT = 1000 };
  dmacclComm_t comms[N];
  ASSERT_EQ_INT(ccInitAlgo(comms, N, 1, "auto"), dmacclSuccess);
  ccEnv env;
  ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, N), 0);
  unsigned char *ag[N], *agOut[N], *aa[N], *aaOut[N];
  for (int r = 0; r < N; r++) {
    ASSERT_EQ_INT(cudaMalloc((void **)&ag[r], COUNT * 4), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&agOut[r], COUNT * 4 * N), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&aa[r], COUNT * 4 * N), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&aaOut[r], COUNT * 4 * N), cudaSuccess);
    ASSERT_EQ_INT(cudaMemset(agOut[r], CC_POISON, COUNT * 4 * N), cudaSuccess);
  }
  cudaGraph_t graph[N] = {0};
  dmacclResult_t issued = dmacclSuccess;
  if (captureColls(&env, comms, N, 0, 1, COUNT, ag, agOut, aa, aaOut, graph, &issued)) return 1;
  ASSERT_EQ_INT(issued, dmacclInvalidUsage);
  ASSERT_CONTAINS(dmacclCommGetLastError(NULL), "share GPU 0");
  for (int r = 0; r < N; r++) {
    size_t nodes = 99;
    ASSERT_EQ_INT(cudaGraphGetNodes(graph[r], NULL, &nodes), cudaSuccess);
    ASSERT_EQ_INT((int)nodes, 0); /* nothing was captured */
    cudaGraphDestroy(graph[r]);
    unsigned char host[COUNT * 4 * N];
    ASSERT_EQ_INT(cudaMemcpy(host, agOut[r], sizeof(host), cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < sizeof(host); i++) ASSERT_EQ_INT(host[i], CC_POISON);
  }
  ASSERT_EQ_INT(ccRun(&env, comms, N, COLL_ALLGATHER, dmacclFloat32, 3001, 0, 41), 0);
  for (int r = 0; r < N; r++)
    cudaFree(ag[r]), cudaFree(agOut[r]), cudaFree(aa[r]), cudaFree(aaOut[r]);
  ccEnvFini(&env, N);
  for (int r = 0; r < N; r++) dmacclCommDestroy(comms[r]);
  return 0;
}

/* Waits for a stream for at most `sec` seconds; a hang fails the test at
 * once (the process exits: its GPU work would never end). */
static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int waitBounded(cudaStream_t st, double sec) {
  for (double t0 = nowSec();;) {
    cudaError_t e = cudaStreamQuery(st);
    if (e == cudaSuccess) return 0;
    ASSERT_EQ_INT(e, cudaErrorNotReady);
    if (nowSec() - t0 > sec) {
      fprintf(stderr, "FAIL: the stream did not finish in %.0f s (hung)\n", sec);
      fflush(NULL);
      _exit(1);
    }
  }
}

/* Ranks on GPUs of their own, captured into a graph each (one process): no
 * copy may read the other graph's GPU (docs/architecture.md; planPullsAcross).
 * Three calls per graph, the graphs launched one after the other, replayed
 * with new data, every element checked (the root's, for Reduce); before the
 * launch, no copy node of either graph may read the other GPU:
 *   - AllReduce 6 MB (the table's twoshot: its kernel stores into the
 *     peer, no copy reads it): runs as chosen;
 *   - Reduce 2 MB (the table's pull1, which pulls): runs as stage, whose
 *     copies write the root's staging slot (copy nodes asserted);
 *   - AllReduce 32 MB (the table's pull1; no stage fits its 8 MB slot):
 *     runs as push1, whose copies write the peer;
 *   - AllReduce 6 MB of pull1 named by the config, and 128 MB of the
 *     table's pull1 (no stage fits, and push1's pieces do not fit the 32 MB
 *     scratch buffer, so it runs as pull1): refused with a sentence,
 *     nothing captured or written, the communicators usable (eager calls
 *     after). */
static int testGraphApart(void) {
  if (ngpu < 2) {
    printf("  needs 2 GPUs (ranks of their own)\n");
    return 0;
  }
  typedef CUresult (*NodeType)(CUgraphNode, CUgraphNodeType *);
  NodeType nodeType = NULL;
  enum cudaDriverEntryPointQueryResult q;
  ASSERT_EQ_INT(cudaGetDriverEntryPointByVersion("cuGraphNodeGetType", (void **)&nodeType, 12000,
                                                 cudaEnableDefault, &q),
                cudaSuccess);
  ASSERT_TRUE(q == cudaDriverEntryPointSuccess && nodeType);
  enum { N = 2, REPS = 3 };
  const struct {
    int reduce; /* dmacclReduce to rank 0, else dmacclAllReduce */
    const char *algo;
    size_t count;       /* int32 elements */
    const char *refuse; /* NULL: runs; else the refusal's words */
    int copies;         /* runs with copy nodes */
  } cases[] = {{0, "auto", (size_t)6 << 18, NULL, 0},
               {1, "auto", (size_t)2 << 18, NULL, 1},
               {0, "auto", (size_t)8 << 20, NULL, 1},
               {0, "pull1", (size_t)6 << 18, "chosen by the config", 0},
               {0, "auto", (size_t)32 << 20, "no algorithm that writes its peers fits", 0}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    size_t count = cases[c].count, bytes = count * 4;
    int red = cases[c].reduce;
    printf("  %s %s, %zu bytes: %s\n", red ? "Reduce" : "AllReduce", cases[c].algo, bytes,
           cases[c].refuse ? "refused" : "runs");
    dmacclComm_t comms[N];
    ASSERT_EQ_INT(ccInitAlgo(comms, N, 1, cases[c].algo), dmacclSuccess);
    ccEnv env;
    ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, N), 0);
    int32_t *in[N], *out[N], *h[N], *got = malloc(bytes);
    for (int r = 0; r < N; r++) {
      cudaSetDevice(env.dev[r]);
      ASSERT_EQ_INT(cudaMalloc((void **)&in[r], bytes), cudaSuccess);
      ASSERT_EQ_INT(cudaMalloc((void **)&out[r], bytes), cudaSuccess);
      ASSERT_EQ_INT(cudaMemset(out[r], CC_POISON, bytes), cudaSuccess);
      h[r] = malloc(bytes);
    }
    ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
    cudaGraph_t graph[N] = {0};
    cudaGraphExec_t exec[N] = {0};
    for (int r = 0; r < N; r++) {
      cudaSetDevice(env.dev[r]);
      ASSERT_EQ_INT(cudaStreamBeginCapture(env.stream[r], cudaStreamCaptureModeThreadLocal),
                    cudaSuccess);
    }
#define APART_CALL(r)                                                                              \
  (red ? dmacclReduce(in[r], out[r], count, dmacclInt32, dmacclSum, 0, comms[r], env.stream[r])    \
       : dmacclAllReduce(in[r], out[r], count, dmacclInt32, dmacclSum, comms[r], env.stream[r]))
    dmacclResult_t issued = dmacclSuccess;
    for (int k = 0; k < REPS && issued == dmacclSuccess; k++) {
      ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
      for (int r = 0; r < N; r++) ASSERT_EQ_INT(APART_CALL(r), dmacclSuccess);
      issued = dmacclGroupEnd();
    }
    for (int r = 0; r < N; r++) {
      cudaSetDevice(env.dev[r]);
      ASSERT_EQ_INT(cudaStreamEndCapture(env.stream[r], &graph[r]), cudaSuccess);
    }
    if (cases[c].refuse) {
      ASSERT_EQ_INT(issued, dmacclInvalidUsage);
      ASSERT_CONTAINS(dmacclCommGetLastError(NULL), "captured into different CUDA graphs");
      ASSERT_CONTAINS(dmacclCommGetLastError(NULL), cases[c].refuse);
      for (int r = 0; r < N; r++) {
        size_t nodes = 99;
        ASSERT_EQ_INT(cudaGraphGetNodes(graph[r], NULL, &nodes), cudaSuccess);
        ASSERT_EQ_INT((int)nodes, 0); /* nothing was captured */
        ASSERT_EQ_INT(cudaMemcpy(got, out[r], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t i = 0; i < bytes; i++) ASSERT_EQ_INT(((unsigned char *)got)[i], CC_POISON);
      }
    } else {
      ASSERT_EQ_INT(issued, dmacclSuccess);
      size_t copies = 0;
      for (int r = 0; r < N; r++) {
        cudaSetDevice(env.dev[r]);
        /* no copy node reads the other GPU; the driver's node type, as the
         * runtime's fails on a graph's stream memory operations */
        cudaGraphNode_t nodes[512];
        size_t nn = 512;
        ASSERT_EQ_INT(cudaGraphGetNodes(graph[r], nodes, &nn), cudaSuccess);
        ASSERT_TRUE(nn < 512);
        for (size_t i = 0; i < nn; i++) {
          CUgraphNodeType t;
          ASSERT_EQ_INT(nodeType((CUgraphNode)nodes[i], &t), CUDA_SUCCESS);
          if (t != CU_GRAPH_NODE_TYPE_MEMCPY) continue;
          struct cudaMemcpy3DParms p;
          ASSERT_EQ_INT(cudaGraphMemcpyNodeGetParams(nodes[i], &p), cudaSuccess);
          struct cudaPointerAttributes at;
          ASSERT_EQ_INT(cudaPointerGetAttributes(&at, p.srcPtr.ptr), cudaSuccess);
          ASSERT_EQ_INT(at.device, env.dev[r]);
          copies++;
        }
        ASSERT_EQ_INT(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
      }
      if (cases[c].copies) ASSERT_TRUE(copies > 0);
    }
    /* Replays (or, refused, eager calls): new inputs, every element. */
    for (int it = 0; it < 3; it++) {
      for (int r = 0; r < N; r++) {
        cudaSetDevice(env.dev[r]);
        testFillRandom(h[r], bytes, 900u + 10u * (uint64_t)it + (uint64_t)r);
        for (size_t i = 0; i < count; i++) h[r][i] &= 0xffff; /* sums exact, no overflow */
        ASSERT_EQ_INT(cudaMemcpy(in[r], h[r], bytes, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ_INT(cudaMemset(out[r], CC_POISON, bytes), cudaSuccess);
        ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
      }
      if (!cases[c].refuse) {
        for (int r = 0; r < N; r++) { /* one after the other, as a loop over GPUs does */
          cudaSetDevice(env.dev[r]);
          ASSERT_EQ_INT(cudaGraphLaunch(exec[r], env.stream[r]), cudaSuccess);
        }
      } else {
        ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
        for (int r = 0; r < N; r++) ASSERT_EQ_INT(APART_CALL(r), dmacclSuccess);
        ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
      }
      for (int r = 0; r < N; r++) {
        cudaSetDevice(env.dev[r]);
        if (waitBounded(env.stream[r], 60)) return 1;
        ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
      }
      for (int r = 0; r < (red ? 1 : N); r++) {
        ASSERT_EQ_INT(cudaMemcpy(got, out[r], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t i = 0; i < count; i++) ASSERT_EQ_INT(got[i], h[0][i] + h[1][i]);
      }
    }
#undef APART_CALL
    for (int r = 0; r < N; r++) {
      cudaSetDevice(env.dev[r]);
      if (exec[r]) cudaGraphExecDestroy(exec[r]);
      if (graph[r]) cudaGraphDestroy(graph[r]);
      cudaFree(in[r]), cudaFree(out[r]), free(h[r]);
    }
    free(got);
    ccEnvFini(&env, N);
    for (int r = 0; r < N; r++) dmacclCommDestroy(comms[r]);
  }
  return 0;
}

/* Two communicators over the same ranks, their calls chained on one stream
 * per rank of the highest priority: x -> A.AllGather -> y -> B.AlltoAll -> z,
 * so z of rank t is x_t in every block. Staged and direct sizes, each pair of
 * algorithm forms; gpu-check also runs it under CUDA_DEVICE_MAX_CONNECTIONS=1. */
static int testTwoCommsOneStream(void) {
  enum { N = 4 };
  const char *pairs[][2] = {{"auto", "auto"}, {"pushn", "stage"}, {"stage2d", "pull1"}};
  const size_t counts[] = {1000, 300001}; /* floats per block */
  int devs[N], least = 0, greatest = 0;
  ccDevices(N, devs);
  for (size_t pi = 0; pi < sizeof(pairs) / sizeof(pairs[0]); pi++) {
    dmacclComm_t a[N], b[N];
    ASSERT_EQ_INT(ccInitAlgo(a, N, 1, pairs[pi][0]), dmacclSuccess);
    ASSERT_EQ_INT(ccInitAlgo(b, N, 1, pairs[pi][1]), dmacclSuccess);
    for (size_t ci = 0; ci < 2; ci++) {
      size_t chunk = counts[ci] * 4, total = chunk * N;
      unsigned char *x[N], *y[N], *z[N], *h = malloc(total), *want = malloc(total);
      cudaStream_t st[N];
      for (int r = 0; r < N; r++) {
        cudaSetDevice(devs[r]);
        ASSERT_EQ_INT(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
        ASSERT_EQ_INT(cudaStreamCreateWithPriority(&st[r], cudaStreamNonBlocking, greatest),
                      cudaSuccess);
        ASSERT_EQ_INT(cudaMalloc((void **)&x[r], chunk), cudaSuccess);
        ASSERT_EQ_INT(cudaMalloc((void **)&y[r], total), cudaSuccess);
        ASSERT_EQ_INT(cudaMalloc((void **)&z[r], total), cudaSuccess);
        testFillRandom(h, chunk, 900u + 10u * ci + (uint64_t)r);
        ASSERT_EQ_INT(cudaMemcpy(x[r], h, chunk, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ_INT(cudaMemset(y[r], CC_POISON, total), cudaSuccess);
        ASSERT_EQ_INT(cudaMemset(z[r], CC_POISON, total), cudaSuccess);
        ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
      }
      for (int rep = 0; rep < 3; rep++) {
        ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
        for (int r = 0; r < N; r++) {
          ASSERT_EQ_INT(dmacclAllGather(x[r], y[r], counts[ci], dmacclFloat32, a[r], st[r]),
                        dmacclSuccess);
          ASSERT_EQ_INT(dmacclAlltoAll(y[r], z[r], counts[ci], dmacclFloat32, b[r], st[r]),
                        dmacclSuccess);
        }
        ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
      }
      for (int t = 0; t < N; t++) {
        cudaSetDevice(devs[t]);
        ASSERT_EQ_INT(cudaStreamSynchronize(st[t]), cudaSuccess);
        ASSERT_EQ_INT(cudaMemcpy(h, z[t], total, cudaMemcpyDeviceToHost), cudaSuccess);
        for (int f = 0; f < N; f++)
          testFillRandom(want + (size_t)f * chunk, chunk, 900u + 10u * ci + (uint64_t)t);
        if (testFirstDiff(h, want, total) != -1) {
          TEST_FAIL("%s/%s count %zu: rank %d's output wrong at byte %lld", pairs[pi][0],
                    pairs[pi][1], counts[ci], t, testFirstDiff(h, want, total));
          return 1;
        }
      }
      for (int r = 0; r < N; r++) {
        cudaSetDevice(devs[r]);
        cudaFree(x[r]), cudaFree(y[r]), cudaFree(z[r]), cudaStreamDestroy(st[r]);
      }
      free(h), free(want);
    }
    for (int r = 0; r < N; r++) dmacclCommDestroy(a[r]), dmacclCommDestroy(b[r]);
  }
  return 0;
}

/* One rank: a collective is one copy on the caller's stream (or nothing in
 * place). Calls on different streams still run in call order, and
 * dmacclCommSynchronize waits for them: x -> AllGather on stream A -> y ->
 * AlltoAll on stream B -> z -> AllReduce on the legacy stream -> w, 64 MB
 * each (a copy that started early would read poison), then only Synchronize
 * before reading w; in place nothing changes. */
static int testOneRank(void) {
  enum { COUNT = 16 << 20 };
  size_t bytes = (size_t)COUNT * 4;
  dmacclComm_t comm;
  ASSERT_EQ_INT(ccInitAlgo(&comm, 1, 1, "auto"), dmacclSuccess);
  cudaStream_t a, b;
  ASSERT_EQ_INT(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ_INT(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ_INT(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  unsigned char *x, *y, *z, *w, *host = malloc(bytes), *got = malloc(bytes);
  ASSERT_TRUE(host && got);
  ASSERT_EQ_INT(cudaMalloc((void **)&x, bytes), cudaSuccess);
  ASSERT_EQ_INT(cudaMalloc((void **)&y, bytes), cudaSuccess);
  ASSERT_EQ_INT(cudaMalloc((void **)&z, bytes), cudaSuccess);
  ASSERT_EQ_INT(cudaMalloc((void **)&w, bytes), cudaSuccess);
  for (int it = 0; it < 3; it++) {
    testFillRandom(host, bytes, 500u + (uint64_t)it);
    for (size_t i = 0; i < bytes; i += 4) host[i + 3] &= 0x3f; /* finite floats, no NaN */
    ASSERT_EQ_INT(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ_INT(cudaMemset(y, CC_POISON, bytes), cudaSuccess);
    ASSERT_EQ_INT(cudaMemset(z, CC_POISON, bytes), cudaSuccess);
    ASSERT_EQ_INT(cudaMemset(w, CC_POISON, bytes), cudaSuccess);
    ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ_INT(dmacclAllGather(x, y, COUNT, dmacclFloat32, comm, a), dmacclSuccess);
    ASSERT_EQ_INT(dmacclAlltoAll(y, z, COUNT, dmacclFloat32, comm, b), dmacclSuccess);
    ASSERT_EQ_INT(dmacclAllReduce(z, w, COUNT, dmacclFloat32, dmacclSum, comm, NULL),
                  dmacclSuccess);
    ASSERT_EQ_INT(dmacclAllReduce(w, w, COUNT, dmacclFloat32, dmacclMax, comm, a), dmacclSuccess);
    ASSERT_EQ_INT(dmacclCommSynchronize(comm), dmacclSuccess);
    ASSERT_EQ_INT(cudaMemcpy(got, w, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ_INT(testFirstDiff(got, host, bytes), -1);
  }
  cudaFree(x), cudaFree(y), cudaFree(z), cudaFree(w);
  cudaStreamDestroy(a), cudaStreamDestroy(b);
  free(host), free(got);
  ASSERT_EQ_INT(dmacclCommDestroy(comm), dmacclSuccess);
  return 0;
}

/* --- every collective of the table ------------------------------------------ */

typedef struct {
  dmacclDataType_t type;
  dmacclRedOp_t op; /* for the reducing collectives */
} typeOp;
static const typeOp typeOps[] = {{dmacclFloat32, dmacclSum},
                                 {dmacclBfloat16, dmacclAvg},
                                 {dmacclInt8, dmacclMax},
                                 {dmacclFloat8e5m2, dmacclProd},
                                 {dmacclFloat64, dmacclMin}};
#define NTYPEOPS ((int)(sizeof(typeOps) / sizeof(typeOps[0])))

/* Every collective eagerly on n ranks with algo: the type/op pairs above,
 * counts 1 and odd (and ~1-8 MB for the first two pairs), in and out of
 * place, roots 0 and last, some persistent (started twice), some with NULL
 * for the buffers a rank does not use. */
static int collsEager(int n, const char *algo) {
  dmacclComm_t comms[CC_MAXR];
  if (ccInitAlgo(comms, n, 1, algo) != dmacclSuccess) {
    TEST_FAIL("init n=%d %s", n, algo);
    return 1;
  }
  ccEnv env;
  ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
  const size_t counts[] = {1, 3001, 262147};
  int runs = 0, bad = 0, broken = 0;
  uint64_t seed = 9000;
  /* rows that need more ranks (sendrecv: a Send to oneself is refused) run no case */
  for (int c = 0; c < COLL_NUM && !broken; c++)
    for (int t = 0; t < NTYPEOPS && !broken && n >= collMinRanks((collId)c); t++)
      for (int k = 0; k < (t < 2 ? 3 : 2) && !broken; k++)
        for (int ip = 0; ip <= !!(collTable[c].flags & COLL_IN_PLACE) && !broken; ip++) {
          ccCase cs = {.coll = (collId)c,
                       .type = typeOps[t].type,
                       .op = typeOps[t].op,
                       .count = counts[k],
                       .root = (k + ip) % 2 ? n - 1 : 0,
                       .inPlace = ip,
                       .persistent = (t + k) % 3 == 0,
                       .nullUnused = (t + ip) % 2,
                       .seed = seed++};
          long long w = ccRunCase(&env, comms, n, &cs);
          runs++;
          if (w != 0) {
            char d[256];
            ccDescribe(&cs, n, d, sizeof(d));
            TEST_FAIL("%s (algorithm %s): %s", d, algo, w < 0 ? "a call failed" : "wrong bytes");
            bad++;
            broken = w < 0; /* ranks may wait for each other: stop using these */
          }
        }
  printf("  n=%d on %d GPU(s), %-5s: %d collectives, %d wrong\n", n, n < ngpu ? n : ngpu, algo,
         runs, bad);
  ccEnvFini(&env, n);
  for (int r = 0; r < n; r++) broken ? dmacclCommAbort(comms[r]) : dmacclCommDestroy(comms[r]);
  return bad ? 1 : 0;
}

/* Every collective (two cases each, one in place where defined, some
 * persistent) captured into one CUDA graph: rank 0's stream begins the
 * capture and the other ranks' streams join it through events (ranks that
 * share a GPU need one graph). The graph is replayed twice with new data;
 * then the same cases run eagerly. sendrecv (2 ranks or more): its first
 * case runs eagerly (and is checked) before the capture, which makes the
 * ring's Send/Recv channels; the capture cannot make them. */
static int collsGraph(int n) {
  enum { KMAX = 2 * COLL_NUM };
  dmacclComm_t comms[CC_MAXR];
  ASSERT_EQ_INT(ccInitAlgo(comms, n, 1, "auto"), dmacclSuccess);
  ccEnv env;
  ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
  ccCase cases[KMAX];
  ccOp *ops[KMAX] = {0};
  int K = 0;
  for (int c = 0; c < COLL_NUM; c++) {
    if (n < collMinRanks((collId)c)) continue; /* sendrecv on one rank */
    const typeOp *a = &typeOps[c % NTYPEOPS], *b = &typeOps[(c + 2) % NTYPEOPS];
    cases[K++] = (ccCase){.coll = (collId)c,
                          .type = a->type,
                          .op = a->op,
                          .count = 4099 + (size_t)c,
                          .root = n - 1,
                          .seed = 700u + (uint64_t)c};
    cases[K++] = (ccCase){.coll = (collId)c,
                          .type = b->type,
                          .op = b->op,
                          .count = 1001,
                          .root = c % n,
                          .inPlace = 1,
                          .persistent = c % 2,
                          .seed = 800u + (uint64_t)c};
    if (collTable[c].flags & COLL_P2P) /* the channels, before the capture */
      ASSERT_EQ_INT(ccRunCase(&env, comms, n, &cases[K - 2]), 0);
  }
  int bad = 0;
  for (int i = 0; i < K && !bad; i++) {
    ops[i] = ccOpNew(&env, n, &cases[i]);
    bad = !ops[i] || ccOpFill(ops[i], cases[i].seed) != 0;
    for (int r = 0; r < n && !bad; r++) bad = ccOpInit(ops[i], comms, r) != dmacclSuccess;
  }
  ASSERT_EQ_INT(bad, 0);
  /* capture (nothing may allocate on the GPU meanwhile; check failures
   * only once the capture has ended) */
  cudaEvent_t ev[CC_MAXR];
  for (int r = 0; r < n; r++) {
    cudaSetDevice(env.dev[r]);
    ASSERT_EQ_INT(cudaEventCreateWithFlags(&ev[r], cudaEventDisableTiming), cudaSuccess);
  }
  cudaSetDevice(env.dev[0]);
  ASSERT_EQ_INT(cudaStreamBeginCapture(env.stream[0], cudaStreamCaptureModeThreadLocal),
                cudaSuccess);
  int failed = cudaEventRecord(ev[0], env.stream[0]) != cudaSuccess;
  for (int r = 1; r < n; r++) {
    cudaSetDevice(env.dev[r]);
    failed |= cudaStreamWaitEvent(env.stream[r], ev[0], 0) != cudaSuccess;
  }
  failed |= dmacclGroupStart() != dmacclSuccess;
  for (int i = 0; i < K; i++)
    for (int r = 0; r < n; r++) failed |= ccOpIssue(ops[i], comms, r) != dmacclSuccess;
  dmacclResult_t issued = dmacclGroupEnd();
  for (int r = 1; r < n; r++) {
    cudaSetDevice(env.dev[r]);
    failed |= cudaEventRecord(ev[r], env.stream[r]) != cudaSuccess;
    cudaSetDevice(env.dev[0]);
    failed |= cudaStreamWaitEvent(env.stream[0], ev[r], 0) != cudaSuccess;
  }
  cudaGraph_t graph = NULL;
  cudaSetDevice(env.dev[0]);
  cudaError_t ended = cudaStreamEndCapture(env.stream[0], &graph);
  ASSERT_EQ_INT(ended, cudaSuccess);
  ASSERT_EQ_INT(failed, 0);
  if (issued != dmacclSuccess) TEST_FAIL("group end: %s", dmacclCommGetLastError(NULL));
  ASSERT_EQ_INT(issued, dmacclSuccess);
  cudaGraphExec_t exec = NULL;
  ASSERT_EQ_INT(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int rep = 1; rep <= 2; rep++) {
    for (int i = 0; i < K; i++) ASSERT_EQ_INT(ccOpFill(ops[i], cases[i].seed + 1000u * rep), 0);
    cudaSetDevice(env.dev[0]);
    ASSERT_EQ_INT(cudaGraphLaunch(exec, env.stream[0]), cudaSuccess);
    ASSERT_EQ_INT(cudaStreamSynchronize(env.stream[0]), cudaSuccess);
    for (int i = 0; i < K; i++) {
      long long w = ccOpCheck(ops[i]);
      if (w != 0) {
        char d[256];
        ccDescribe(&cases[i], n, d, sizeof(d));
        TEST_FAIL("graph replay %d: %s: %lld wrong bytes", rep, d, w);
        bad++;
      }
    }
  }
  printf("  n=%d on %d GPU(s): %d collectives in one graph, replayed twice: %s\n", n,
         n < ngpu ? n : ngpu, K, bad ? "WRONG" : "ok");
  cudaSetDevice(env.dev[0]);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (int r = 0; r < n; r++) {
    cudaSetDevice(env.dev[r]);
    cudaEventDestroy(ev[r]);
  }
  for (int i = 0; i < K; i++) ccOpFree(ops[i]);
  /* eagerly, all in one group */
  if (!bad) ASSERT_EQ_INT(ccRunGroup(&env, comms, n, cases, K), 0);
  ccEnvFini(&env, n);
  for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
  return bad ? 1 : 0;
}

static int testEveryCollective(void) {
  int bad = 0;
  for (int n = 1; n <= 4; n++) {
    bad += collsEager(n, "auto");
    bad += collsEager(n, "pull1"); /* reductions' pipelined form, movement's pull form */
    bad += collsGraph(n);
  }
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL; /* run only the tests whose name has this */
  ngpu = gpuCountOrSkip(1, "test_gpu");
  printf("%d GPU(s): rank r runs on GPU r %% %d\n", ngpu, ngpu);
  RUN_IF(testStreamOrder);
  RUN_IF(testOneRank);
  RUN_IF(testGraphCapture);
  RUN_IF(testGraphRefused);
  RUN_IF(testGraphApart);
  RUN_IF(testTwoCommsOneStream);
  RUN_IF(testTwoRanks);
  RUN_IF(testThreeRanks);
  RUN_IF(testFourRanks);
  RUN_IF(testAllGpus);
  RUN_IF(testEveryCollective);
  TEST_EXIT();
}
