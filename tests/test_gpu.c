/*
 * GPU correctness on the CUDA executor: every algorithm, AllGather in and
 * out of place and AlltoAll, sizes from 0 bytes to 256 MB with odd counts,
 * several data types, random data, poisoned outputs with guard bytes, on 2
 * and 4 GPUs (and on all GPUs when there are more). Skipped without 2 GPUs.
 */
#include "collcheck.h"
#include "gpu_common.h"

typedef struct {
  dmacclDataType_t type;
  size_t count;
} sizeCase;

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
    dmacclComm_t comms[CC_MAXR];
    if (ccInitAlgo(comms, n, 1, ccAlgos[a]) != dmacclSuccess) {
      TEST_FAIL("init n=%d %s", n, ccAlgos[a]);
      return 1;
    }
    ccEnv env;
    ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
    int bad = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && !bad; s++) {
      /* Keep the largest total at 256 MB whatever n is. */
      size_t count = sizes[s].count;
      if (s == sizeof(sizes) / sizeof(sizes[0]) - 1) count = count * 4 / (size_t)n;
      for (int coll = 0; coll < 2 && !bad; coll++)
        for (int inPlace = 0; inPlace <= (coll == CC_ALLGATHER) && !bad; inPlace++) {
          long long w = ccRun(&env, comms, n, coll, sizes[s].type, count, inPlace,
                              1000 * s + 10 * coll + inPlace);
          printf("  n=%d %-5s %-9s %-10zu elems of %zu B inplace=%d: %s\n", n, ccAlgos[a],
                 ccCollName(coll), count, ccTypeSize(sizes[s].type), inPlace,
                 w == 0 ? "ok" : "WRONG");
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

static int testTwoGpus(void) {
  return runSet(2);
}
static int testFourGpus(void) {
  int n = 0;
  cudaGetDeviceCount(&n);
  if (n < 4) {
    printf("  fewer than 4 GPUs: 4-GPU set not run\n");
    return 0;
  }
  return runSet(4);
}
static int testAllGpus(void) {
  int n = 0;
  cudaGetDeviceCount(&n);
  if (n <= 4) return 0;
  return runSet(n > CC_MAXR ? CC_MAXR : n);
}

/* The caller's stream semantics: work queued after the collective on the
 * same stream sees its result, without any host synchronization between. */
static int testStreamOrder(void) {
  enum { N = 2, COUNT = 1 << 20 };
  dmacclComm_t comms[N];
  int devs[N] = {0, 1};
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorCuda;
  ASSERT_EQ_INT(dmacclCommInitAll(comms, N, devs, &cfg), dmacclSuccess);
  ccEnv env;
  ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, N), 0);
  size_t bytes = COUNT * 4;
  unsigned char *host = malloc(bytes * N), *src[N], *send[N], *recv[N], *out = malloc(bytes * N);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(r);
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
    cudaSetDevice(r);
    ASSERT_EQ_INT(cudaMemcpyAsync(send[r], src[r], bytes, cudaMemcpyDeviceToDevice, env.stream[r]),
                  cudaSuccess);
    ASSERT_EQ_INT(dmacclAllGather(send[r], recv[r], COUNT, dmacclFloat32, comms[r], env.stream[r]),
                  dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(r);
    ASSERT_EQ_INT(cudaMemcpyAsync(out, recv[r], bytes * N, cudaMemcpyDeviceToHost, env.stream[r]),
                  cudaSuccess);
    ASSERT_EQ_INT(cudaStreamSynchronize(env.stream[r]), cudaSuccess);
    ASSERT_TRUE(memcmp(out, host, bytes * N) == 0);
  }
  for (int r = 0; r < N; r++) {
    cudaSetDevice(r);
    cudaFree(src[r]), cudaFree(send[r]), cudaFree(recv[r]);
  }
  free(host), free(out);
  ccEnvFini(&env, N);
  for (int r = 0; r < N; r++) dmacclCommDestroy(comms[r]);
  return 0;
}

/* One process driving N GPUs: each rank's stream is captured, one grouped
 * AllGather + AlltoAll per rank goes into the graphs, and the graphs are
 * replayed 50 times with fresh random inputs, every byte checked. */
static int testGraphCapture(void) {
  int n = 0;
  cudaGetDeviceCount(&n);
  if (n > 4) n = 4;
  enum { COUNT = 30011 };
  dmacclComm_t comms[4];
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorCuda;
  ASSERT_EQ_INT(dmacclCommInitAll(comms, n, NULL, &cfg), dmacclSuccess);
  ccEnv env;
  ASSERT_EQ_INT(ccEnvInit(&env, 1, comms, n), 0);
  size_t chunk = COUNT * 4, total = chunk * (size_t)n;
  unsigned char *ag[4], *agOut[4], *aa[4], *aaOut[4];
  unsigned char *h = malloc(total), *got = malloc(total), *want = malloc(total);
  cudaGraph_t graph[4];
  cudaGraphExec_t exec[4];
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    ASSERT_EQ_INT(cudaMalloc((void **)&ag[r], chunk), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&agOut[r], total), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&aa[r], total), cudaSuccess);
    ASSERT_EQ_INT(cudaMalloc((void **)&aaOut[r], total), cudaSuccess);
  }
  /* No allocation may happen while this thread captures. */
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    ASSERT_EQ_INT(cudaStreamBeginCapture(env.stream[r], cudaStreamCaptureModeThreadLocal),
                  cudaSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < n; r++) {
    ASSERT_EQ_INT(dmacclAllGather(ag[r], agOut[r], COUNT, dmacclFloat32, comms[r], env.stream[r]),
                  dmacclSuccess);
    ASSERT_EQ_INT(dmacclAlltoAll(aa[r], aaOut[r], COUNT, dmacclFloat32, comms[r], env.stream[r]),
                  dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    ASSERT_EQ_INT(cudaStreamEndCapture(env.stream[r], &graph[r]), cudaSuccess);
  }
  for (int r = 0; r < n; r++) { /* only once no stream of this thread captures */
    cudaSetDevice(r);
    ASSERT_EQ_INT(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
  }
  for (int it = 0; it < 50; it++) {
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      testFillRandom(h, chunk, 100u * (uint64_t)it + (uint64_t)r);
      cudaMemcpy(ag[r], h, chunk, cudaMemcpyHostToDevice);
      testFillRandom(h, total, 7000u + 100u * (uint64_t)it + (uint64_t)r);
      cudaMemcpy(aa[r], h, total, cudaMemcpyHostToDevice);
      cudaMemset(agOut[r], CC_POISON, total);
      cudaMemset(aaOut[r], CC_POISON, total);
      ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
    }
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      ASSERT_EQ_INT(cudaGraphLaunch(exec[r], env.stream[r]), cudaSuccess);
    }
    for (int r = 0; r < n; r++) {
      cudaSetDevice(r);
      ASSERT_EQ_INT(cudaStreamSynchronize(env.stream[r]), cudaSuccess);
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
  for (int r = 0; r < n; r++) {
    cudaSetDevice(r);
    cudaGraphExecDestroy(exec[r]);
    cudaGraphDestroy(graph[r]);
    cudaFree(ag[r]), cudaFree(agOut[r]), cudaFree(aa[r]), cudaFree(aaOut[r]);
  }
  free(h), free(got), free(want);
  ccEnvFini(&env, n);
  for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
  return 0;
}

int main(void) {
  gpuCountOrSkip(2, "test_gpu");
  RUN(testStreamOrder);
  RUN(testGraphCapture);
  RUN(testTwoGpus);
  RUN(testFourGpus);
  RUN(testAllGpus);
  TEST_EXIT();
}
