/*
 * Bad input that only a GPU can show: a buffer that is not device memory of
 * the communicator's GPU, a buffer smaller than the count needs, a stream of
 * another GPU (these two need 2 GPUs), several ranks' calls from one thread
 * outside a group, devices that do not exist. Each returns
 * dmacclInvalidArgument/Usage with a message naming the argument, writes
 * nothing, and the communicator still works. The two ranks share the GPU
 * when there is only one.
 */
#include <pthread.h>

#include "collcheck.h"
#include "gpu_common.h"

#define N 2
#define COUNT 4096
static dmacclComm_t comms[N];
static ccEnv env;
static float *sendb[N], *recvb[N];
static int devs[N], ngpu;

static int poison(void) {
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    ASSERT_EQ_INT(cudaMemset(recvb[r], CC_POISON, COUNT * N * sizeof(float)), cudaSuccess);
    ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
  }
  return 0;
}

static int untouchedAndUsable(void) {
  static unsigned char host[COUNT * N * sizeof(float)];
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    ASSERT_EQ_INT(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ_INT(cudaMemcpy(host, recvb[r], sizeof(host), cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < sizeof(host); i++)
      if (host[i] != CC_POISON) {
        TEST_FAIL("rank %d recvbuff byte %zu written by a failed call", r, i);
        return 1;
      }
  }
  ASSERT_EQ_INT(ccRun(&env, comms, N, COLL_ALLGATHER, dmacclFloat32, 3001, 0, 99), 0);
  ASSERT_EQ_INT(ccRun(&env, comms, N, COLL_ALLTOALL, dmacclFloat32, 3001, 0, 98), 0);
  return 0;
}

static int testHostMemory(void) {
  if (poison()) return 1;
  float *plain = malloc(COUNT * N * sizeof(float)), *pinned = NULL;
  ASSERT_EQ_INT(cudaMallocHost((void **)&pinned, COUNT * N * sizeof(float)), cudaSuccess);
  EXPECT_ERR(dmacclAllGather(plain, recvb[0], COUNT, dmacclFloat32, comms[0], env.stream[0]),
             dmacclInvalidArgument, comms[0], "sendbuff");
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[0]), "not device memory of GPU 0");
  EXPECT_ERR(dmacclAlltoAll(sendb[0], pinned, COUNT, dmacclFloat32, comms[0], env.stream[0]),
             dmacclInvalidArgument, comms[0], "recvbuff");
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[0]), "page-locked host memory");
  float *managed = NULL;
  ASSERT_EQ_INT(
      cudaMallocManaged((void **)&managed, COUNT * N * sizeof(float), cudaMemAttachGlobal),
      cudaSuccess);
  EXPECT_ERR(dmacclAllGather(managed, recvb[0], COUNT, dmacclFloat32, comms[0], env.stream[0]),
             dmacclInvalidArgument, comms[0], "sendbuff");
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[0]), "managed memory");
  free(plain);
  cudaFreeHost(pinned);
  cudaFree(managed);
  return untouchedAndUsable();
}

static int testOtherGpuMemory(void) {
  if (ngpu < 2) return printf("  one GPU: no other GPU's memory\n"), 0;
  if (poison()) return 1;
  EXPECT_ERR(dmacclAllGather(sendb[1], recvb[0], COUNT, dmacclFloat32, comms[0], env.stream[0]),
             dmacclInvalidArgument, comms[0], "sendbuff");
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[0]), "is memory of GPU 1");
  return untouchedAndUsable();
}

static int testTooSmall(void) {
  if (poison()) return 1;
  /* Well past any rounding of the allocation's size. */
  EXPECT_ERR(
      dmacclAllGather(sendb[0], recvb[0], COUNT * 1024, dmacclFloat32, comms[0], env.stream[0]),
      dmacclInvalidArgument, comms[0], "sendbuff");
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[0]), "allocation ends");
  return untouchedAndUsable();
}

static int testStreamOfOtherGpu(void) {
  if (ngpu < 2) return printf("  one GPU: no other GPU's stream\n"), 0;
  if (poison()) return 1;
  EXPECT_ERR(dmacclAlltoAll(sendb[0], recvb[0], COUNT, dmacclFloat32, comms[0], env.stream[1]),
             dmacclInvalidArgument, comms[0], "belongs to GPU 1");
  return untouchedAndUsable();
}

/* One thread per rank, outside groups: each call returns once both ranks
 * have called. Then a thread that issued for rank 1 issues for rank 0 too:
 * refused, nothing issued. */
static void *rankZero(void *arg) {
  (void)arg;
  cudaSetDevice(devs[0]);
  dmacclResult_t rc =
      dmacclAlltoAll(sendb[0], recvb[0], COUNT, dmacclFloat32, comms[0], env.stream[0]);
  return (void *)(intptr_t)rc;
}

static int testSeveralRanksOneThread(void) {
  if (poison()) return 1;
  pthread_t t;
  ASSERT_EQ_INT(pthread_create(&t, NULL, rankZero, NULL), 0);
  ASSERT_EQ_INT(dmacclAlltoAll(sendb[1], recvb[1], COUNT, dmacclFloat32, comms[1], env.stream[1]),
                dmacclSuccess);
  void *rc0 = NULL;
  pthread_join(t, &rc0);
  ASSERT_EQ_INT((int)(intptr_t)rc0, dmacclSuccess);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    ASSERT_EQ_INT(cudaStreamSynchronize(env.stream[r]), cudaSuccess);
  }
  if (poison()) return 1;
  EXPECT_ERR(dmacclAlltoAll(sendb[0], recvb[0], COUNT, dmacclFloat32, comms[0], env.stream[0]),
             dmacclInvalidUsage, comms[0], "dmacclGroupStart");
  return untouchedAndUsable();
}

static int testTooManyDevices(void) {
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  dmacclComm_t c[CC_MAXR + 1];
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorCuda;
  int bad[2] = {0, ndev};
  EXPECT_ERR(dmacclCommInitAll(c, 2, bad, &cfg), dmacclInvalidArgument, NULL, "devlist[1]");
  EXPECT_ERR(dmacclCommInitAll(c, ndev + 1, NULL, &cfg), dmacclInvalidArgument, NULL,
             "give a devlist that repeats it");
  return 0;
}

int main(void) {
  ngpu = gpuCountOrSkip(1, "test_gpu_args");
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorCuda;
  ccDevices(N, devs);
  if (dmacclCommInitAll(comms, N, devs, &cfg) != dmacclSuccess) {
    fprintf(stderr, "init: %s\n", dmacclCommGetLastError(NULL));
    return 1;
  }
  ccEnvInit(&env, 1, comms, N);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(devs[r]);
    cudaMalloc((void **)&sendb[r], COUNT * N * sizeof(float));
    cudaMalloc((void **)&recvb[r], COUNT * N * sizeof(float));
  }
  RUN(testHostMemory);
  RUN(testOtherGpuMemory);
  RUN(testTooSmall);
  RUN(testStreamOfOtherGpu);
  RUN(testSeveralRanksOneThread);
  RUN(testTooManyDevices);
  ccEnvFini(&env, N);
  for (int r = 0; r < N; r++) dmacclCommDestroy(comms[r]);
  TEST_EXIT();
}
