#include "collcheck.h"
#include "harness.h"

#include <cuda_runtime_api.h>

size_t ccTypeSize(dmacclDataType_t t) {
  static const size_t sz[dmacclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1}; /* NCCL numbering */
  return (unsigned)t < dmacclNumTypes ? sz[t] : 0;
}
const char *ccCollName(int coll) {
  return coll == CC_ALLGATHER ? "allgather" : "alltoall";
}

const char *const ccAlgos[CC_NALGOS] = {"push1", "pushn", "pushb", "pull1",
                                        "pulln", "pullb", "stage", "stage2d"};

int ccDevices(int n, int *devs) {
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
    cudaGetLastError();
    ngpu = 1;
  }
  for (int r = 0; r < n && r < CC_MAXR; r++) devs[r] = r % ngpu;
  return ngpu;
}

dmacclResult_t ccInitAlgo(dmacclComm_t *comms, int n, int gpu, const char *algo) {
  char sel[96];
  int devs[CC_MAXR];
  if (gpu) ccDevices(n, devs);
  snprintf(sel, sizeof(sel), "allgather:%s;alltoall:%s", algo, algo);
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  cfg.algorithm = strcmp(algo, "auto") == 0 ? NULL : sel;
  dmacclResult_t rc = dmacclCommInitAll(comms, n, gpu ? devs : NULL, &cfg);
  if (rc != dmacclSuccess)
    fprintf(stderr, "dmacclCommInitAll(%d, %s): %s\n", n, algo, dmacclCommGetLastError(NULL));
  return rc;
}

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));       \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

int ccEnvInit(ccEnv *env, int gpu, dmacclComm_t *comms, int n) {
  memset(env, 0, sizeof(*env));
  env->gpu = gpu;
  for (int r = 0; r < n && gpu; r++) {
    dmacclCommCuDevice(comms[r], &env->dev[r]);
    CUDA_OK(cudaSetDevice(env->dev[r]));
    CUDA_OK(cudaStreamCreateWithFlags(&env->stream[r], cudaStreamNonBlocking));
  }
  return 0;
}

void ccEnvFini(ccEnv *env, int n) {
  for (int r = 0; r < n && env->gpu; r++) {
    cudaSetDevice(env->dev[r]);
    cudaStreamDestroy(env->stream[r]);
  }
}

static void *devAlloc(ccEnv *env, int r, size_t bytes) {
  void *p = NULL;
  if (!env->gpu) return malloc(bytes);
  if (cudaSetDevice(env->dev[r]) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess)
    return NULL;
  return p;
}
static void devFree(ccEnv *env, int r, void *p) {
  if (!p) return;
  if (!env->gpu) {
    free(p);
    return;
  }
  cudaSetDevice(env->dev[r]);
  cudaFree(p);
}
static int upload(ccEnv *env, void *dst, const void *src, size_t n) {
  if (!env->gpu)
    memcpy(dst, src, n);
  else
    CUDA_OK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
  return 0;
}
static int download(ccEnv *env, void *dst, const void *src, size_t n) {
  if (!env->gpu)
    memcpy(dst, src, n);
  else
    CUDA_OK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
  return 0;
}

static long long countDiff(const unsigned char *got, const unsigned char *want, size_t n,
                           const char *what, int rank) {
  if (memcmp(got, want, n) == 0) return 0;
  long long bad = 0, first = -1;
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) {
      if (first < 0) first = (long long)i;
      bad++;
    }
  fprintf(stderr, "  rank %d %s: %lld wrong bytes, first at %lld: 0x%02x, expected 0x%02x\n", rank,
          what, bad, first, got[first], want[first]);
  return bad;
}

long long ccRun(ccEnv *env, dmacclComm_t *comms, int n, int coll, dmacclDataType_t type,
                size_t count, int inPlace, uint64_t seed) {
  size_t chunk = count * ccTypeSize(type), rs = chunk * (size_t)n;
  size_t ss = coll == CC_ALLGATHER ? chunk : rs;
  unsigned char *sendDev[CC_MAXR] = {0}, *recvDev[CC_MAXR] = {0}, *sendHost[CC_MAXR] = {0};
  unsigned char *got = malloc(rs + 2 * CC_GUARD), *want = malloc(rs + 2 * CC_GUARD);
  long long wrong = -1;
  if (!got || !want) goto out;
  /* Inputs: random per rank and call; outputs: poison with guards. */
  for (int r = 0; r < n; r++) {
    sendHost[r] = malloc(ss + 2 * CC_GUARD);
    sendDev[r] = devAlloc(env, r, ss + 2 * CC_GUARD);
    recvDev[r] = devAlloc(env, r, rs + 2 * CC_GUARD);
    if (!sendHost[r] || !sendDev[r] || !recvDev[r]) goto out;
    memset(sendHost[r], CC_POISON ^ 0xFF, ss + 2 * CC_GUARD);
    testFillRandom(sendHost[r] + CC_GUARD, ss, seed * 131 + (uint64_t)r);
    memset(want, CC_POISON, rs + 2 * CC_GUARD);
    if (inPlace) memcpy(want + CC_GUARD + (size_t)r * chunk, sendHost[r] + CC_GUARD, chunk);
    if (upload(env, recvDev[r], want, rs + 2 * CC_GUARD)) goto out;
    if (!inPlace && upload(env, sendDev[r], sendHost[r], ss + 2 * CC_GUARD)) goto out;
  }
  if (dmacclGroupStart() != dmacclSuccess) goto out;
  for (int r = 0; r < n; r++) {
    unsigned char *recv = recvDev[r] + CC_GUARD;
    const unsigned char *send = inPlace ? recv + (size_t)r * chunk : sendDev[r] + CC_GUARD;
    cudaStream_t st = env->gpu ? env->stream[r] : NULL;
    dmacclResult_t rc = coll == CC_ALLGATHER
                            ? dmacclAllGather(send, recv, count, type, comms[r], st)
                            : dmacclAlltoAll(send, recv, count, type, comms[r], st);
    if (rc != dmacclSuccess) {
      fprintf(stderr, "  rank %d: %s: %s\n", r, dmacclGetErrorString(rc),
              dmacclCommGetLastError(comms[r]));
      dmacclGroupEnd();
      goto out;
    }
  }
  if (dmacclGroupEnd() != dmacclSuccess) goto out;
  for (int r = 0; r < n; r++) {
    if (env->gpu) {
      cudaSetDevice(env->dev[r]);
      if (cudaStreamSynchronize(env->stream[r]) != cudaSuccess) goto out;
    }
    dmacclResult_t rc = dmacclCommSynchronize(comms[r]);
    if (rc != dmacclSuccess) {
      fprintf(stderr, "  rank %d: %s\n", r, dmacclCommGetLastError(comms[r]));
      goto out;
    }
  }
  wrong = 0;
  for (int t = 0; t < n; t++) {
    memset(want, CC_POISON, rs + 2 * CC_GUARD);
    for (int f = 0; f < n; f++) {
      const unsigned char *src =
          sendHost[f] + CC_GUARD + (coll == CC_ALLGATHER ? 0 : (size_t)t * chunk);
      memcpy(want + CC_GUARD + (size_t)f * chunk, src, chunk);
    }
    if (download(env, got, recvDev[t], rs + 2 * CC_GUARD)) {
      wrong = -1;
      goto out;
    }
    wrong += countDiff(got, want, rs + 2 * CC_GUARD, "recvbuff (with guards)", t);
    if (!inPlace) {
      if (download(env, got, sendDev[t], ss + 2 * CC_GUARD)) {
        wrong = -1;
        goto out;
      }
      wrong += countDiff(got, sendHost[t], ss + 2 * CC_GUARD, "sendbuff (must be unchanged)", t);
    }
  }
out:
  for (int r = 0; r < n; r++) {
    free(sendHost[r]);
    devFree(env, r, sendDev[r]);
    devFree(env, r, recvDev[r]);
  }
  free(got);
  free(want);
  return wrong;
}
