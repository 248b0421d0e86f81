/*
 * Every collective with ranks as processes: the board carries the V forms'
 * arrays and the ranks' calls are compared there. Host executor (CI: buffers
 * from dmacclMemAlloc, shared memory) and, when GPUs are present, the CUDA
 * executor (rank r on GPU r % GPUs, cudaMalloc buffers reached by CUDA IPC,
 * one stream per rank). Every rank regenerates every rank's inputs from the
 * seed and checks its whole receive allocation (gaps and guard included)
 * against tools/common/colls.c's reference. Both the built-in selection and
 * the direct forms, one collective at a time, every collective but AlltoAllv
 * as stagesm, the reductions as stagell, AllReduce as twoshot, Broadcast, Gather and
 * Scatter as split and AlltoAllv as pairs. The table's sendrecv
 * row (each rank sends to the next and receives from the previous, one group
 * per rank) runs from 2 ranks on, with the broadcast entry's algorithm
 * (direct: pushb), and is skipped on one rank (a Send to oneself is refused).
 * AllGather and AllGatherV run as their ...Notify calls on odd seeds, every
 * arrival word checked.
 * No argument: the host executor; "gpu": the CUDA executor (skips without a GPU).
 */
#include "harness.h"
#include "mp.h"
#include "common/colls.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#define GUARD 128
#define MAXN 4

typedef struct {
  int gpu;          /* CUDA executor */
  const char *algo; /* NULL: built-in selection */
} mpArg;

static const char *direct = "allgather:pull1;alltoall:pushn;broadcast:pushb;gather:pulln;"
                            "scatter:push1;allgatherv:pushn;alltoallv:push1;allreduce:pull1;"
                            "reducescatter:pull1;reducescatterv:pull1;reduce:pull1";
/* Every collective with the kernel moving its data but AlltoAllv (built in:
 * stagell's lines or the push form); the movement collectives take it out of
 * the peers' staging slots (staged.c, addSmMove). */
static const char *stagesm =
    "allreduce:stagesm;reducescatter:stagesm;reducescatterv:stagesm;reduce:stagesm;"
    "allgather:stagesm;alltoall:stagesm;broadcast:stagesm;gather:stagesm;scatter:stagesm;"
    "allgatherv:stagesm";
/* ... with the flags in the data (lines; the sizes that fit, else stagesm's
 * form), and AlltoAllv's lines (else a push that meets every peer) */
static const char *stagell = "allreduce:stagell;reducescatter:stagell;reducescatterv:stagell;"
                             "reduce:stagell;alltoallv:stagell";
/* ... in two shots (the rest built in) */
static const char *twoshot = "allreduce:twoshot";
/* The rooted collectives pushed and pulled in halves, AlltoAllv as Send/Recv
 * pairs on the channels (the rest built in) */
static const char *split = "broadcast:split;gather:split;scatter:split;alltoallv:pairs";
static const char *formName(const char *algo) {
  return !algo             ? "built-in selection"
         : algo == stagesm ? "stagesm"
         : algo == stagell ? "stagell"
         : algo == twoshot ? "twoshot"
         : algo == split   ? "split, pairs"
                           : "direct forms";
}

/* Rank r's inputs of one case (sanitized for the reductions). */
static void makeSend(void *buf, size_t count, dmacclDataType_t t, uint64_t seed, int r) {
  testFillRandom(buf, count * collTypeSize(t), seed * 131u + (uint64_t)r);
  collSanitize(t, buf, count);
}

/* One collective on this rank: buffers of span bytes (device or shared
 * memory); recv at base, send after it, or in place at the row's delta. */
static int oneCase(int rank, int n, dmacclComm_t comm, const mpArg *a, cudaStream_t st, collId c,
                   dmacclDataType_t t, dmacclRedOp_t op, const collShape *s, int inPlace,
                   uint64_t seed, char *dev, size_t devBytes) {
  size_t es = collTypeSize(t);
  size_t sc = collSendCount(c, s, rank), rcn = collRecvCount(c, s, rank);
  long long delta = 0;
  int ip = inPlace && collInPlace(c, s, rank, &delta) && sc && rcn;
  size_t lo = ip && delta < 0 ? (size_t)(-delta) * es : 0;
  size_t recvOff = lo, sendOff = ip ? (size_t)((long long)recvOff + delta * (long long)es)
                                    : lo + rcn * es + GUARD;
  size_t span =
      (ip ? (sendOff + sc * es > recvOff + rcn * es ? sendOff + sc * es : recvOff + rcn * es)
          : sendOff + sc * es) +
      GUARD;
  RANK_CHECK(span <= devBytes);
  unsigned char *host = malloc(span), *want = malloc(span);
  memset(host, 0xA5, span);
  makeSend(host + sendOff, sc, t, seed, rank);
  /* Everyone's inputs, for the reference. */
  void *sends[MAXN];
  for (int r = 0; r < n; r++) {
    size_t k = collSendCount(c, s, r);
    sends[r] = k ? malloc(k * es) : NULL;
    if (k) makeSend(sends[r], k, t, seed, r);
  }
  memcpy(want, host, span);
  RANK_CHECK(collReference(c, s, rank, t, op, (const void *const *)sends, want + recvOff) == 0);
  if (a->gpu) {
    RANK_CHECK(cudaMemcpy(dev, host, span, cudaMemcpyHostToDevice) == cudaSuccess);
    RANK_CHECK(cudaDeviceSynchronize() == cudaSuccess);
  } else {
    memcpy(dev, host, span);
  }
  /* AllGather(V) on odd seeds: the ...Notify call, its arrival words (and a
   * guard on each side) at the end of the allocation, apart from the buffers */
  int notify = (c == COLL_ALLGATHER || c == COLL_ALLGATHERV) && (seed & 1);
  uint32_t words[MAXN + 2], value = (uint32_t)(seed * 2654435761u) | 1u;
  size_t wordsOff = devBytes - sizeof(words);
  if (notify) {
    RANK_CHECK(span <= wordsOff);
    for (int i = 0; i < n + 2; i++) words[i] = 0x5A5A0000u + (uint32_t)i;
    if (a->gpu) /* pageable: may return before it lands; st does not wait for it */
      RANK_CHECK(cudaMemcpy(dev + wordsOff, words, sizeof(words), cudaMemcpyHostToDevice) ==
                     cudaSuccess &&
                 cudaDeviceSynchronize() == cudaSuccess);
    else
      memcpy(dev + wordsOff, words, sizeof(words));
  }
  uint32_t *arrived = (uint32_t *)(void *)(dev + wordsOff) + 1;
  char *sp = sc ? dev + sendOff : NULL, *rp = rcn ? dev + recvOff : NULL;
  dmacclResult_t rc =
      !notify ? collIssue(c, s, rank, sp, rp, t, op, comm, a->gpu ? st : NULL, NULL)
      : c == COLL_ALLGATHER
          ? dmacclAllGatherNotify(sp, rp, s->count, t, arrived, value, comm, a->gpu ? st : NULL)
          : dmacclAllGatherVNotify(sp, rp, s->counts, s->displs, t, arrived, value, comm,
                                   a->gpu ? st : NULL);
  if (rc != dmacclSuccess)
    fprintf(stderr, "rank %d: %s: %s\n", rank, collTable[c].call, dmacclCommGetLastError(comm));
  RANK_CHECK(rc == dmacclSuccess);
  if (a->gpu) RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
  rc = dmacclCommSynchronize(comm);
  if (rc != dmacclSuccess)
    fprintf(stderr, "rank %d: %s, seed %llu: dmacclCommSynchronize: %s\n", rank, collTable[c].call,
            (unsigned long long)seed, dmacclCommGetLastError(comm));
  RANK_CHECK(rc == dmacclSuccess);
  if (a->gpu)
    RANK_CHECK(cudaMemcpy(host, dev, span, cudaMemcpyDeviceToHost) == cudaSuccess);
  else
    memcpy(host, dev, span);
  if (notify) {
    uint32_t got[MAXN + 2];
    if (a->gpu)
      RANK_CHECK(cudaMemcpy(got, dev + wordsOff, sizeof(got), cudaMemcpyDeviceToHost) ==
                 cudaSuccess);
    else
      memcpy(got, dev + wordsOff, sizeof(got));
    for (int i = 0; i < n + 2; i++) {
      uint32_t w = i == 0 || i == n + 1 ? words[i] : value;
      if (got[i] != w)
        fprintf(stderr, "rank %d of %d (%s): %s count %zu: arrival word %d is %u, expected %u\n",
                rank, n, a->gpu ? "cuda" : "host", collTable[c].name, s->count, i - 1, got[i], w);
      RANK_CHECK(got[i] == w);
    }
  }
  long long d = testFirstDiff(host, want, span);
  if (d >= 0)
    fprintf(stderr,
            "rank %d of %d (%s, %s): %s type %s op %s count %zu root %d in place %d: byte %lld "
            "(receive buffer at %zu) is 0x%02x, expected 0x%02x\n",
            rank, n, a->gpu ? "cuda" : "host", formName(a->algo), collTable[c].name,
            collTypeName(t), collOpName(op), s->count, s->root, ip, d, recvOff, host[d], want[d]);
  for (int r = 0; r < n; r++) free(sends[r]);
  free(host), free(want);
  return d >= 0;
}

static int body(int rank, int n, const dmacclUniqueId *id, void *arg) {
  const mpArg *a = arg;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = a->gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  cfg.algorithm = a->algo;
  cudaStream_t st = NULL;
  int ngpu = 0;
  if (a->gpu) {
    RANK_CHECK(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0);
    RANK_CHECK(cudaSetDevice(rank % ngpu) == cudaSuccess);
    RANK_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
  }
  dmacclComm_t comm;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  /* on GPUs room for the largest reductions below (64 MB and guards) */
  size_t devBytes = (size_t)(a->gpu ? 72 : 8) << 20;
  char *dev = NULL;
  if (a->gpu)
    RANK_CHECK(cudaMalloc((void **)&dev, devBytes) == cudaSuccess);
  else
    RANK_CHECK(dmacclMemAlloc(comm, devBytes, (void **)&dev) == dmacclSuccess);
  const struct {
    dmacclDataType_t t;
    dmacclRedOp_t op;
  } tops[] = {{dmacclFloat32, dmacclSum},
              {dmacclBfloat16, dmacclAvg},
              {dmacclInt64, dmacclMax},
              {dmacclFloat16, COLL_PREMULSUM}};
  const size_t counts[] = {0, 5, 3001, 100003};
  uint64_t seed = 1;
  collVArrays va;
  for (int c = 0; c < COLL_NUM; c++)
    for (size_t ti = 0; ti < sizeof(tops) / sizeof(tops[0]); ti++) {
      if (!(collTable[c].flags & COLL_REDUCES) && ti > 0) break;
      if (n < collMinRanks((collId)c)) break; /* sendrecv on one rank */
      for (size_t k = 0; k < 4; k++)
        for (int inPlace = 0; inPlace <= 1; inPlace++) {
          collShape s = {.nranks = n, .count = counts[k], .root = (int)(seed % (uint64_t)n)};
          if (collTable[c].flags & COLL_VECTOR) collRandomV(&s, &va, n, counts[k], seed);
          if (oneCase(rank, n, comm, a, st, (collId)c, tops[ti].t, tops[ti].op, &s, inPlace, seed++,
                      dev, devBytes))
            return 1;
        }
    }
  /* The largest reductions across processes (GPUs; built-in selection and
   * direct forms): an AllReduce over 24 MB takes pull1's one kernel that
   * signals the peers each reduced piece where no two ranks share a GPU,
   * and a ReduceScatter of 8 MB targets the one kernel in thirds (reduce.c
   * buildPieced); the counts above stay below both. */
  const struct {
    collId c;
    size_t count;
  } big[] = {{COLL_ALLREDUCE, 8388617}, {COLL_REDUCESCATTER, 2097155}};
  for (size_t b = 0; a->gpu && (!a->algo || a->algo == direct) && n > 1 && b < 2; b++)
    for (int inPlace = 0; inPlace <= 1; inPlace++) {
      collShape s = {.nranks = n, .count = big[b].count, .root = 0};
      if (oneCase(rank, n, comm, a, st, big[b].c, dmacclFloat32, dmacclSum, &s, inPlace, seed++,
                  dev, devBytes))
        return 1;
    }
  if (a->gpu)
    cudaFree(dev);
  else
    RANK_CHECK(dmacclMemFree(comm, dev) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int run(int gpu) {
  const int nr[] = {1, 2, 3, 4};
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 6; k++) {
      const char *forms[] = {NULL, direct, stagesm, stagell, twoshot, split};
      mpArg a = {gpu, forms[k]};
      int failed = mpRun(nr[i], body, &a, 300, 0);
      if (failed) {
        TEST_FAIL("%s, %d ranks, %s: %d rank(s) failed", gpu ? "cuda" : "host", nr[i],
                  formName(a.algo), failed);
        return 1;
      }
    }
  return 0;
}

static int testHost(void) {
  return run(0);
}

static int testCuda(void) {
  if (!mpGpusPresent()) {
    printf("test_mp_colls gpu: SKIPPED: no GPU\n");
    exit(TEST_SKIP_CODE);
  }
  return run(1);
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (!only || strcmp(only, "gpu")) RUN(testHost);
  if (only && !strcmp(only, "gpu")) RUN(testCuda);
  TEST_EXIT();
}
