/*
 * One process per rank on the CUDA executor: every algorithm on 2 and 4
 * processes with both signal paths (and 3 processes with two algorithms), on
 * cudaMalloc buffers (CUDA IPC, cached) and dmacclMemAlloc buffers (VMM
 * strided mapping); two CUDA graphs (AllGather, AlltoAll, AllReduce) replayed
 * 100 times in an irregular order with fresh random data; the IPC cache across cudaFree/cudaMalloc
 * at the same address; abort releasing a stream that waits for a peer that never calls; no context
 * on another rank's GPU (2 GPUs). Rank r uses
 * GPU r % GPUs, so with fewer GPUs than processes the processes share them. Skipped (77) without a
 * GPU. The parent never touches CUDA: the GPU count comes from a forked probe.
 */
#include "harness.h"
#include "mp.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *algos[] = {"push1", "pushn", "pushb", "pull1",
                              "pulln", "pullb", "stage", "stage2d"};

#define RANK_CUDA(call) RANK_CHECK((call) == cudaSuccess)
#define RANK_OK(comm, call)                                                                        \
  do {                                                                                             \
    if ((call) != dmacclSuccess) {                                                                 \
      fprintf(stderr, "rank %d: %s:%d: %s: %s\n", rank, __FILE__, __LINE__, #call,                 \
              dmacclCommGetLastError(comm));                                                       \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static int ngpu; /* GPUs found; rank r uses GPU r % ngpu */

static int gpuCount(void) {
  fflush(stdout);
  pid_t p = fork();
  if (p == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    _exit(n > 100 ? 100 : n);
  }
  int st = 0;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 0;
}

typedef struct {
  const char *algo, *signal;
} collArg;

static dmacclResult_t initRank(dmacclComm_t *comm, int n, const dmacclUniqueId *id, int rank,
                               const char *algo) {
  char table[64];
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorCuda;
  if (algo) {
    snprintf(table, sizeof(table), "allgather:%s;alltoall:%s", algo, algo);
    cfg.algorithm = table;
  }
  if (cudaSetDevice(rank % ngpu) != cudaSuccess) return dmacclUnhandledCudaError;
  dmacclResult_t rc = dmacclCommInitRank(comm, n, *id, rank, &cfg);
  if (rc != dmacclSuccess)
    fprintf(stderr, "rank %d: init: %s\n", rank, dmacclCommGetLastError(NULL));
  return rc;
}

static int collBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  collArg *a = arg;
  setenv("DMACCL_SIGNAL", a->signal, 1);
  dmacclComm_t comm;
  RANK_CHECK(initRank(&comm, n, id, rank, a->algo) == dmacclSuccess);
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  size_t counts[] = {0, 1, 1001, 262147, 4u << 20};
  size_t maxBytes = (4u << 20) * 4 * (size_t)n + MP_GUARD;
  void *send[2], *recv[2];
  RANK_CUDA(cudaMalloc(&send[0], maxBytes));
  RANK_CUDA(cudaMalloc(&recv[0], maxBytes));
  RANK_CHECK(dmacclMemAlloc(comm, maxBytes, &send[1]) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, maxBytes, &recv[1]) == dmacclSuccess);
  uint64_t seed = 11;
  for (int mem = 0; mem < 2; mem++)
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
      for (int mode = 0; mode < 3; mode++) {
        dmacclDataType_t type = c % 2 ? dmacclBfloat16 : dmacclFloat32;
        long long w = mpCheckColl(comm, 1, stream, mode == 2, type, counts[c], mode == 1, send[mem],
                                  recv[mem], seed++);
        if (w != 0) {
          fprintf(stderr, "rank %d of %d, %s, signal %s, %s buffers: %lld\n", rank, n, a->algo,
                  a->signal, mem ? "dmacclMemAlloc" : "cudaMalloc", w);
          return 1;
        }
      }
  RANK_CHECK(dmacclMemFree(comm, send[1]) == dmacclSuccess);
  RANK_CHECK(dmacclMemFree(comm, recv[1]) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  cudaFree(send[0]);
  cudaFree(recv[0]);
  cudaStreamDestroy(stream);
  return 0;
}

static int testEveryAlgorithm(void) {
  const char *signals[] = {"memop", "copy"};
  for (int n = 2; n <= 4; n += 2)
    for (size_t s = 0; s < 2; s++)
      for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
        collArg a = {algos[i], signals[s]};
        int failed = mpRun(n, collBody, &a, 300, 0);
        if (failed) {
          TEST_FAIL("%d processes, %s, signal %s: %d failed", n, algos[i], signals[s], failed);
          return 1;
        }
      }
  const char *three[] = {"push1", "stage"};
  for (int i = 0; i < 2; i++) {
    collArg a = {three[i], "memop"};
    int failed = mpRun(3, collBody, &a, 300, 0);
    if (failed) {
      TEST_FAIL("3 processes, %s: %d failed", three[i], failed);
      return 1;
    }
  }
  return 0;
}

/* AllReduce data: small integers, so the float sum is exact in any order. */
static float arValue(int rank, int it, size_t i) {
  return (float)(((unsigned)(it * 7 + rank * 13) + (unsigned)i * 5u) % 61u);
}

/* Captures two graphs, A = AllGather, AlltoAll and B = AlltoAll, AllGather,
 * AllReduce (on a side stream of the capture), AlltoAll (staged operations
 * 1-4 of their capture: every graph staging slot and the ENTRY form, next to
 * direct ones where the algorithm is forced), then replays them 100 times in an irregular order (A,
 * B, and B twice in a row every fifth time), each time with fresh random inputs and poisoned
 * outputs, and checks every byte. */
static int graphBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  collArg *a = arg;
  setenv("DMACCL_SIGNAL", a->signal, 1);
  dmacclComm_t comm;
  RANK_CHECK(initRank(&comm, n, id, rank, a->algo) == dmacclSuccess);
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t count = 40000; /* floats per block */
  size_t chunk = count * 4, total = chunk * (size_t)n;
  char *agSend, *agRecv, *aaSend, *aaRecv;
  float *arSend, *arRecv;
  RANK_CUDA(cudaMalloc((void **)&agSend, chunk));
  RANK_CUDA(cudaMalloc((void **)&agRecv, total));
  RANK_CUDA(cudaMalloc((void **)&aaSend, total));
  RANK_CUDA(cudaMalloc((void **)&aaRecv, total));
  RANK_CUDA(cudaMalloc((void **)&arSend, chunk));
  RANK_CUDA(cudaMalloc((void **)&arRecv, chunk));
  /* One eager call first: the cache and the eager flags are in use too. */
  RANK_OK(comm, dmacclAllGather(agSend, agRecv, count, dmacclFloat32, comm, stream));
  RANK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph[2];
  cudaGraphExec_t exec[2];
  RANK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  RANK_OK(comm, dmacclAllGather(agSend, agRecv, count, dmacclFloat32, comm, stream));
  RANK_OK(comm, dmacclAlltoAll(aaSend, aaRecv, count, dmacclFloat32, comm, stream));
  RANK_CUDA(cudaStreamEndCapture(stream, &graph[0]));
  /* B's AllReduce is captured on a side stream forked from the capture, and
   * the AlltoAll after it on the main one: in the user's graph nothing
   * orders the two, the library's edge does (capture order). */
  cudaStream_t side;
  cudaEvent_t fork, join;
  RANK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  RANK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  RANK_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  RANK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  RANK_OK(comm, dmacclAlltoAll(aaSend, aaRecv, count, dmacclFloat32, comm, stream));
  RANK_OK(comm, dmacclAllGather(agSend, agRecv, count, dmacclFloat32, comm, stream));
  RANK_CUDA(cudaEventRecord(fork, stream));
  RANK_CUDA(cudaStreamWaitEvent(side, fork, 0));
  RANK_OK(comm, dmacclAllReduce(arSend, arRecv, count, dmacclFloat32, dmacclSum, comm, side));
  RANK_OK(comm, dmacclAlltoAll(aaSend, aaRecv, count, dmacclFloat32, comm, stream));
  RANK_CUDA(cudaEventRecord(join, side));
  RANK_CUDA(cudaStreamWaitEvent(stream, join, 0));
  RANK_CUDA(cudaStreamEndCapture(stream, &graph[1]));
  dmacclResult_t async = dmacclSuccess;
  dmacclCommGetAsyncError(comm, &async);
  if (async != dmacclSuccess) {
    fprintf(stderr, "rank %d: capture: %s\n", rank, dmacclCommGetLastError(comm));
    return 1;
  }
  for (int g = 0; g < 2; g++) RANK_CUDA(cudaGraphInstantiate(&exec[g], graph[g], 0));
  unsigned char *h = malloc(total), *want = malloc(total), *got = malloc(total);
  float *fh = malloc(chunk), *fw = malloc(chunk);
  for (int it = 0, replays = 0; it < 100; it++) {
    int g = it % 2, times = g && it % 5 == 0 ? 2 : 1;
    uint64_t seed = 1000u * (uint64_t)it;
    dataFillRandom(h, chunk, seed + (uint64_t)rank);
    RANK_CUDA(cudaMemcpy(agSend, h, chunk, cudaMemcpyHostToDevice));
    for (int j = 0; j < n; j++)
      dataFillRandom(h + (size_t)j * chunk, chunk, seed + 500 + (uint64_t)rank * 16 + (uint64_t)j);
    RANK_CUDA(cudaMemcpy(aaSend, h, total, cudaMemcpyHostToDevice));
    for (size_t i = 0; i < count; i++) fh[i] = arValue(rank, it, i);
    RANK_CUDA(cudaMemcpy(arSend, fh, chunk, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(agRecv, 0xA5, total));
    RANK_CUDA(cudaMemset(aaRecv, 0xA5, total));
    RANK_CUDA(cudaMemset(arRecv, 0xA5, chunk));
    RANK_CUDA(cudaDeviceSynchronize());
    for (int t = 0; t < times; t++, replays++) RANK_CUDA(cudaGraphLaunch(exec[g], stream));
    RANK_CUDA(cudaStreamSynchronize(stream));
    RANK_CUDA(cudaMemcpy(got, agRecv, total, cudaMemcpyDeviceToHost));
    for (int j = 0; j < n; j++) dataFillRandom(want + (size_t)j * chunk, chunk, seed + (uint64_t)j);
    if (memcmp(got, want, total) != 0) {
      fprintf(stderr, "rank %d: replay %d of graph %c: allgather wrong (first byte %lld)\n", rank,
              it, 'A' + g, testFirstDiff(got, want, total));
      return 1;
    }
    RANK_CUDA(cudaMemcpy(got, aaRecv, total, cudaMemcpyDeviceToHost));
    for (int j = 0; j < n; j++)
      dataFillRandom(want + (size_t)j * chunk, chunk,
                     seed + 500 + (uint64_t)j * 16 + (uint64_t)rank);
    if (memcmp(got, want, total) != 0) {
      fprintf(stderr, "rank %d: replay %d of graph %c: alltoall wrong (first byte %lld)\n", rank,
              it, 'A' + g, testFirstDiff(got, want, total));
      return 1;
    }
    RANK_CUDA(cudaMemcpy(fh, arRecv, chunk, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; i++) {
      fw[i] = 0;
      for (int j = 0; j < n; j++) fw[i] += arValue(j, it, i);
    }
    if (g == 1 && memcmp(fh, fw, chunk) != 0) {
      fprintf(stderr, "rank %d: replay %d of graph B: allreduce wrong (first byte %lld)\n", rank,
              it, testFirstDiff(fh, fw, chunk));
      return 1;
    }
    if (g == 0)
      for (size_t i = 0; i < chunk; i++) RANK_CHECK(((unsigned char *)fh)[i] == 0xA5);
  }
  /* Eager calls still work after the replays. */
  RANK_CHECK(mpCheckColl(comm, 1, stream, 1, dmacclFloat32, count / (size_t)n, 0, aaSend, aaRecv,
                         77) == 0);
  free(h), free(want), free(got), free(fh), free(fw);
  for (int g = 0; g < 2; g++) {
    cudaGraphExecDestroy(exec[g]);
    cudaGraphDestroy(graph[g]);
  }
  cudaEventDestroy(fork), cudaEventDestroy(join), cudaStreamDestroy(side);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testGraphReplay(void) {
  int n = ngpu >= 4 ? 4 : 2; /* 2 processes share the GPU when there is one */
  /* stage and stage2d: the graph's own staging slots, ENTRY on its first
   * staged operation only (staged.c) */
  const char *cases[][2] = {{"push1", "memop"}, {"pushb", "memop"}, {"pull1", "copy"},
                            {"pushn", "copy"},  {"stage", "memop"}, {"stage2d", "copy"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    collArg a = {cases[i][0], cases[i][1]};
    int failed = mpRun(n, graphBody, &a, 300, 0);
    if (failed) {
      TEST_FAIL("graph, %d processes, %s, signal %s: %d failed", n, a.algo, a.signal, failed);
      return 1;
    }
  }
  return 0;
}

/* cudaFree + cudaMalloc of the same size usually returns the same address:
 * peers must open the new allocation, not reuse the old mapping. */
static int cacheBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  RANK_CHECK(initRank(&comm, n, id, rank, NULL) == dmacclSuccess);
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  size_t bytes = (1u << 20) * (size_t)n + MP_GUARD;
  void *send, *recv, *h = NULL;
  RANK_CUDA(cudaMalloc(&send, bytes));
  RANK_CHECK(dmacclCommRegister(comm, send, bytes, &h) == dmacclSuccess);
  void *prev = NULL;
  int same = 0;
  for (int round = 0; round < 6; round++) {
    RANK_CUDA(cudaMalloc(&recv, bytes));
    same += recv == prev;
    prev = recv;
    RANK_CHECK(mpCheckColl(comm, 1, stream, round & 1, dmacclUint8, 1u << 20, 0, send, recv,
                           300u + (uint64_t)round) == 0);
    RANK_CUDA(cudaFree(recv));
  }
  RANK_CHECK(dmacclCommDeregister(comm, h) == dmacclSuccess);
  RANK_CHECK(dmacclCommDeregister(comm, h) == dmacclInvalidArgument);
  /* Host memory cannot be shared: a clear error, and the comm goes on. */
  char *host = malloc(bytes);
  RANK_CHECK(dmacclAllGather(host, send, 16, dmacclUint8, comm, stream) == dmacclInvalidArgument);
  RANK_CUDA(cudaMalloc(&recv, bytes));
  RANK_CHECK(mpCheckColl(comm, 1, stream, 0, dmacclUint8, 4096, 0, send, recv, 9) == 0);
  if (rank == 0) printf("  (reallocation at the same address in %d of 5 rounds)\n", same);
  free(host);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testCacheRealloc(void) {
  ASSERT_EQ_INT(mpRun(ngpu >= 4 ? 4 : 2, cacheBody, NULL, 120, 0), 0);
  return 0;
}

/* Rank 1 never calls: rank 0's stream waits on the device; abort releases it. */
static int abortBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  RANK_CHECK(initRank(&comm, n, id, rank, NULL) == dmacclSuccess);
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *send, *recv;
  RANK_CUDA(cudaMalloc(&send, 4096 * (size_t)n));
  RANK_CUDA(cudaMalloc(&recv, 4096 * (size_t)n));
  if (rank == 0) {
    RANK_CHECK(dmacclAllGather(send, recv, 4096, dmacclUint8, comm, stream) == dmacclSuccess);
    usleep(200000);
    RANK_CHECK(cudaStreamQuery(stream) == cudaErrorNotReady); /* really waiting */
    RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
    RANK_CUDA(cudaStreamSynchronize(stream)); /* returns: the wait was released */
  } else {
    usleep(1000000);
    RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  }
  return 0;
}

/* A graph replay in flight whose peer never replays: abort releases it to
 * the end, although its staged operations wait on each graph DATA word
 * several times (a word released once is reset by the first wait). */
static int abortGraphBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  RANK_CHECK(initRank(&comm, n, id, rank, NULL) == dmacclSuccess);
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t count = 1024;
  float *send, *recv;
  RANK_CUDA(cudaMalloc((void **)&send, count * 4 * (size_t)n));
  RANK_CUDA(cudaMalloc((void **)&recv, count * 4 * (size_t)n));
  RANK_OK(comm, dmacclAllGather(send, recv, count, dmacclFloat32, comm, stream));
  RANK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < 3; k++) {
    RANK_OK(comm, dmacclAllGather(send, recv, count, dmacclFloat32, comm, stream));
    RANK_OK(comm, dmacclAllReduce(send, recv, count, dmacclFloat32, dmacclSum, comm, stream));
  }
  RANK_CUDA(cudaStreamEndCapture(stream, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  if (rank == 0) {
    RANK_CUDA(cudaGraphLaunch(exec, stream));
    usleep(200000);
    RANK_CHECK(cudaStreamQuery(stream) == cudaErrorNotReady); /* really waiting */
    RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
    RANK_CUDA(cudaStreamSynchronize(stream)); /* returns: every wait was released */
  } else {
    usleep(1500000);
    RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 0;
}

static int testAbortReleasesStream(void) {
  ASSERT_EQ_INT(mpRun(2, abortBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(2, abortGraphBody, NULL, 60, 0), 0);
  return 0;
}

/* A rank touches no GPU but its own: no primary context on another GPU in
 * its process after its calls and its progress thread's watchdog rounds
 * (which query events: the thread switched to the rank's device for each
 * and back to device 0, a new thread's device, and since CUDA 12 that
 * switch made a context on GPU 0 in every process of another GPU, 100-130
 * ms under the set's lock: docs/latency-notes.md, "The 100-ms-class stall,
 * found"). Needs 2 GPUs. */
/* The other GPU with an active primary context in this process, or -1. */
static int foreignContext(int rank) {
  CUresult (*state)(CUdevice, unsigned int *, int *) = NULL;
  CUresult (*getDev)(CUdevice *, int) = NULL;
  enum cudaDriverEntryPointQueryResult q, q2;
  if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", (void **)&state, 12000,
                                       cudaEnableDefault, &q) != cudaSuccess ||
      cudaGetDriverEntryPointByVersion("cuDeviceGet", (void **)&getDev, 12000, cudaEnableDefault,
                                       &q2) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || q2 != cudaDriverEntryPointSuccess || !state || !getDev)
    return -2;
  for (int d = 0; d < ngpu; d++) {
    unsigned int flags = 0;
    int active = 0;
    CUdevice dev = 0;
    if (getDev(&dev, d) != CUDA_SUCCESS || state(dev, &flags, &active) != CUDA_SUCCESS) return -2;
    if (d != rank % ngpu && active) return d;
  }
  return -1;
}

/* Checked after each step, so that a failure names the step that made the
 * context. (A driver that retained a peer's context for IPC or VMM peer
 * mappings would fail it too; this driver did not on 2x H200.) */
#define OWN_GPU_ONLY(step)                                                                         \
  do {                                                                                             \
    int d_ = foreignContext(rank);                                                                 \
    if (d_ == -2)                                                                                  \
      fprintf(stderr, "rank %d (GPU %d): after %s: the driver query failed\n", rank, rank % ngpu,  \
              step);                                                                               \
    else if (d_ >= 0)                                                                              \
      fprintf(stderr, "rank %d (GPU %d): after %s: a primary context is active on GPU %d\n", rank, \
              rank % ngpu, step, d_);                                                              \
    if (d_ != -1) return 1;                                                                        \
  } while (0)

static int ownGpuBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  RANK_CHECK(initRank(&comm, n, id, rank, NULL) == dmacclSuccess);
  /* (the progress thread may not have bound its device yet: a context it
   * made would be named at the next step) */
  OWN_GPU_ONLY("init");
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  size_t bytes = (1u << 20) * (size_t)n + MP_GUARD;
  void *send, *recv;
  RANK_CUDA(cudaMalloc(&send, bytes));
  RANK_CUDA(cudaMalloc(&recv, bytes));
  for (int round = 0; round < 4; round++)
    RANK_CHECK(mpCheckColl(comm, 1, stream, round & 1, dmacclUint8, 1u << 20, 0, send, recv,
                           400u + (uint64_t)round) == 0);
  for (int k = 0; k < 20; k++)
    RANK_OK(comm, dmacclAllGather(send, recv, 1u << 20, dmacclUint8, comm, stream));
  usleep(350000); /* the watchdog's rounds (every 100 ms) query the operations' events */
  RANK_CUDA(cudaStreamSynchronize(stream));
  usleep(250000);
  OWN_GPU_ONLY("collectives and the watchdog's rounds");
  /* a dmacclMemAlloc buffer: every rank's part mapped in every process */
  void *mem = NULL;
  RANK_OK(comm, dmacclMemAlloc(comm, 1u << 20, &mem));
  OWN_GPU_ONLY("dmacclMemAlloc");
  /* a Send/Recv pair: its channels are sets with progress threads of their own */
  int peer = (rank + 1) % n, from = (rank + n - 1) % n;
  for (int k = 0; k < 4; k++) {
    RANK_OK(comm, dmacclGroupStart());
    RANK_OK(comm, dmacclSend(send, 1u << 20, dmacclUint8, peer, comm, stream));
    RANK_OK(comm, dmacclRecv(k & 1 ? mem : recv, 1u << 20, dmacclUint8, from, comm, stream));
    RANK_OK(comm, dmacclGroupEnd());
  }
  RANK_CUDA(cudaStreamSynchronize(stream));
  OWN_GPU_ONLY("Send/Recv");
  usleep(350000);
  OWN_GPU_ONLY("Send/Recv and the channels' watchdog rounds");
  RANK_OK(comm, dmacclMemFree(comm, mem));
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testOwnGpuOnly(void) {
  if (ngpu < 2) {
    printf("  (one GPU: nothing to check)\n");
    return 0;
  }
  ASSERT_EQ_INT(mpRun(2, ownGpuBody, NULL, 60, 0), 0);
  return 0;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  ngpu = gpuCount();
  if (ngpu < 1) {
    printf("no GPU: skipped\n");
    return TEST_SKIP_CODE;
  }
  printf("%d GPU(s): rank r runs on GPU r %% %d\n", ngpu, ngpu);
  RUN_IF(testOwnGpuOnly);
  RUN_IF(testCacheRealloc);
  RUN_IF(testAbortReleasesStream);
  RUN_IF(testGraphReplay);
  RUN_IF(testEveryAlgorithm);
  TEST_EXIT();
}
