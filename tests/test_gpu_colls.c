/*
 * Every collective on the CUDA executor against the host executor, byte for
 * byte (the host executor's schedules are checked by test_plan and its
 * results against the header's contract by test_colls): ranks r on GPU
 * r % GPUs (ranks share a GPU when there are fewer), eager with the built-in
 * selection (Broadcast from 4 MB on 3 ranks or more: chain) and with the
 * direct algorithms forced (Broadcast: relay), and captured into one
 * CUDA graph then replayed twice on new data; the reductions also with
 * push1 forced, eager and in the graph (where ranks share a GPU it runs as
 * pull1: only 2 GPUs or more run its pushes); random inputs, poisoned
 * outputs (the whole receive allocation, gaps and a guard included).
 * AllGather and AllGatherV run as their ...Notify calls: eager, a consumer
 * stream per rank waits for each block's arrival word (a stream memory wait)
 * and copies that block out at once, and the copies must hold the block's
 * final bytes; in the graph, every word must hold the value after each
 * replay (the test resets them before it). The same consumers also run
 * against AllGather of 16 MB per rank with each of its eight algorithms
 * forced (testArrivalAlgorithms); a word never stored fails after 60 s.
 * The reductions include premultiplied sums (COLL_PREMULSUM): eager, the
 * scalar in device memory (built-in selection) or immediate (direct forms);
 * in the graph in device memory, changed before each replay; and on one
 * rank (testPremulOneRank).
 * Arg: a collective name to run only that one.
 */

#include "gpu_common.h"
#include "common/colls.h"
#include "dmaccl.h"
#include "plan.h"

#include <limits.h>
#include <unistd.h>

#define MAXN 4
#define GUARD 256
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      TEST_FAIL("%s: %s", #x, cudaGetErrorString(e_));                                             \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define DK(x)                                                                                      \
  do {                                                                                             \
    dmacclResult_t e_ = (x);                                                                       \
    if (e_ != dmacclSuccess) {                                                                     \
      TEST_FAIL("%s: %s", #x, dmacclCommGetLastError(NULL));                                       \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

typedef struct {
  planColl coll;
  int n, root, inPlace;
  size_t count;
  dmacclDataType_t type;
  dmacclRedOp_t op;
  size_t vec[MAXN][PLAN_VEC_ARRAYS * MAXN];
  const size_t *rows[MAXN];
  planArgs a[MAXN];
  size_t sendB[MAXN], recvB[MAXN], span[MAXN];
  long long lo[MAXN], delta[MAXN];
} caseT;

/* the CUDA executor's: built-in selection, the direct forms, the reductions' push1 */
static dmacclComm_t hostComms[MAXN], gpuComms[3][MAXN];
static cudaStream_t streams[MAXN], consumers[MAXN];
static int ngpu;

/* The ...Notify calls' arrival words of the case being issued (NULL: the
 * plain calls) and their value. */
static uint32_t *arrivedOf[MAXN], arrivedValue;

/* Uneven arrays: rank i's count is count*(i+1)/n, some zero, gaps of 3. */
static void setup(caseT *c) {
  int n = c->n;
  memset(c->vec, 0, sizeof(c->vec));
  for (int r = 0; r < n; r++) c->rows[r] = c->vec[r];
  if (planCollOf(c->coll)->vector) {
    for (int r = 0; r < n; r++) {
      size_t at = 0, rat = 0;
      for (int j = 0; j < n; j++) {
        size_t cnt = (j == 1 ? 0 : c->count * (size_t)(j + 1) / (size_t)n);
        size_t sc = (c->count * (size_t)((r + j) % n + 1)) / (size_t)n; /* r sends to j */
        size_t rc = (c->count * (size_t)((j + r) % n + 1)) / (size_t)n; /* j sends to r */
        if (planCollOf(c->coll)->peerArrays) {
          c->vec[r][j] = sc, c->vec[r][n + j] = at, at += sc + 3;
          c->vec[r][2 * n + j] = rc, c->vec[r][3 * n + j] = rat, rat += rc + 3;
        } else {
          c->vec[r][j] = cnt, c->vec[r][n + j] = at, at += cnt + 3;
        }
      }
    }
  }
  const planCollInfo *ci = planCollOf(c->coll);
  for (int r = 0; r < n; r++) {
    c->a[r] = (planArgs){.coll = c->coll,
                         .rank = r,
                         .nranks = n,
                         .count = c->count,
                         .elemSize = collTypeSize(c->type),
                         .root = c->root,
                         .vec = c->rows};
    c->sendB[r] = ci->sendBytes(&c->a[r], r);
    c->recvB[r] = ci->recvBytes(&c->a[r], r);
    long long d = 0;
    int ip = c->inPlace && ci->inPlace(&c->a[r], r, &d) && c->sendB[r] && c->recvB[r];
    c->delta[r] = ip ? d : LLONG_MIN;
    c->lo[r] = ip && d < 0 ? d : 0;
    long long hi =
        ip ? (d + (long long)c->sendB[r] > (long long)c->recvB[r] ? d + (long long)c->sendB[r]
                                                                  : (long long)c->recvB[r])
           : (long long)c->recvB[r];
    c->span[r] = (size_t)(hi - c->lo[r]) + GUARD + (ip ? 0 : c->sendB[r] + GUARD);
  }
}

/* Send and receive pointers in one allocation of span bytes. */
static void place(const caseT *c, int r, unsigned char *base, void **send, void **recv) {
  unsigned char *rv = base - c->lo[r];
  *recv = rv;
  *send = c->delta[r] != LLONG_MIN ? rv + c->delta[r] : base + (c->span[r] - c->sendB[r] - GUARD);
}

/* The table's premultiplied sum (COLL_PREMULSUM): variant 0 its scalar
 * (collPremulScalar), 1 and 2 others, which the graph replays take in
 * turn. On the CUDA executor the scalar is in device memory (devScalar,
 * rank r's on its GPU, written by setPremul outside the capture): a replay
 * must read the value of its moment. */
static int premulVariant, premulImmediate; /* immediate: CUDA runs get the bytes too */
static void *devScalar[MAXN];
static void premulValue(dmacclDataType_t t, int variant, unsigned char *out) {
  memset(out, 0, 8);
  collPremulScalar(t, out);
  if (variant && t == dmacclBfloat16) {
    uint16_t v = variant == 1 ? 0xc000 : 0x3f40; /* -2, 0.75 */
    memcpy(out, &v, 2);
  } else if (variant && t == dmacclInt64) {
    int64_t v = variant == 1 ? 7 : -1;
    memcpy(out, &v, 8);
  }
}
static int setPremul(const caseT *c, int variant) {
  premulVariant = variant;
  if (c->op != COLL_PREMULSUM) return 0;
  unsigned char b[8];
  premulValue(c->type, variant, b);
  for (int r = 0; r < c->n; r++) {
    CK(cudaSetDevice(r % ngpu));
    CK(cudaMemcpy(devScalar[r], b, 8, cudaMemcpyHostToDevice));
  }
  return 0;
}

static dmacclResult_t issueOp(const caseT *c, int r, const void *s, void *d, dmacclComm_t comm,
                              cudaStream_t st, dmacclRedOp_t op);
static dmacclResult_t issue(const caseT *c, int r, const void *s, void *d, dmacclComm_t comm,
                            cudaStream_t st) {
  if (c->op != COLL_PREMULSUM || !planCollOf(c->coll)->reduces)
    return issueOp(c, r, s, d, comm, st, c->op);
  unsigned char b[8];
  premulValue(c->type, premulVariant, b);
  dmacclRedOp_t pre;
  dmacclResult_t rc =
      st && !premulImmediate
          ? dmacclRedOpCreatePreMulSum(&pre, devScalar[r], c->type, dmacclScalarDevice, comm)
          : dmacclRedOpCreatePreMulSum(&pre, b, c->type, dmacclScalarHostImmediate, comm);
  if (rc != dmacclSuccess) return rc;
  rc = issueOp(c, r, s, d, comm, st, pre);
  dmacclResult_t e = dmacclRedOpDestroy(pre, comm);
  return rc != dmacclSuccess ? rc : e;
}

static dmacclResult_t issueOp(const caseT *c, int r, const void *s, void *d, dmacclComm_t comm,
                              cudaStream_t st, dmacclRedOp_t op) {
  const size_t *v = c->vec[r];
  int n = c->n;
  if (arrivedOf[r] && c->coll == PLAN_COLL_ALLGATHER)
    return dmacclAllGatherNotify(s, d, c->count, c->type, arrivedOf[r], arrivedValue, comm, st);
  if (arrivedOf[r] && c->coll == PLAN_COLL_ALLGATHERV)
    return dmacclAllGatherVNotify(s, d, v, v + n, c->type, arrivedOf[r], arrivedValue, comm, st);
  switch (c->coll) {
  case PLAN_COLL_ALLGATHER: return dmacclAllGather(s, d, c->count, c->type, comm, st);
  case PLAN_COLL_ALLTOALL: return dmacclAlltoAll(s, d, c->count, c->type, comm, st);
  case PLAN_COLL_ALLREDUCE: return dmacclAllReduce(s, d, c->count, c->type, op, comm, st);
  case PLAN_COLL_REDUCESCATTER: return dmacclReduceScatter(s, d, c->count, c->type, op, comm, st);
  case PLAN_COLL_BROADCAST: return dmacclBroadcast(s, d, c->count, c->type, c->root, comm, st);
  case PLAN_COLL_REDUCE: return dmacclReduce(s, d, c->count, c->type, op, c->root, comm, st);
  case PLAN_COLL_GATHER: return dmacclGather(s, d, c->count, c->type, c->root, comm, st);
  case PLAN_COLL_SCATTER: return dmacclScatter(s, d, c->count, c->type, c->root, comm, st);
  case PLAN_COLL_ALLGATHERV: return dmacclAllGatherV(s, d, v, v + n, c->type, comm, st);
  case PLAN_COLL_REDUCESCATTERV: return dmacclReduceScatterV(s, d, v, v + n, c->type, op, comm, st);
  case PLAN_COLL_ALLTOALLV:
    return dmacclAlltoAllv(s, v, v + n, d, v + 2 * n, v + 3 * n, c->type, comm, st);
  default: return dmacclInvalidArgument;
  }
}

/* Rank r's allocation before the call: poisoned, its send part random
 * (float and double with moderate exponents: no inf or NaN in the sums). */
static void inputs(const caseT *c, int r, unsigned char *buf, uint64_t seed) {
  void *s, *d;
  memset(buf, 0xA5, c->span[r]);
  place(c, r, buf, &s, &d);
  testFillRandom(s, c->sendB[r], seed + (uint64_t)r);
  if (c->type == dmacclFloat32 || c->type == dmacclFloat64)
    for (size_t i = collTypeSize(c->type) - 1; i < c->sendB[r]; i += collTypeSize(c->type))
      ((unsigned char *)s)[i] = 0x3f ^ (((unsigned char *)s)[i] & 0x80);
}

/* The host executor's result for the inputs of seed, in hb (the plain
 * calls: the arrival words are device memory). */
static int runHost(const caseT *c, unsigned char **hb, uint64_t seed) {
  void *s[MAXN], *d[MAXN];
  uint32_t *keep[MAXN];
  memcpy(keep, arrivedOf, sizeof(keep));
  memset(arrivedOf, 0, sizeof(arrivedOf));
  for (int r = 0; r < c->n; r++) {
    inputs(c, r, hb[r], seed);
    place(c, r, hb[r], &s[r], &d[r]);
  }
  int rc = 0;
  dmacclResult_t e = dmacclGroupStart();
  for (int r = 0; r < c->n && e == dmacclSuccess; r++)
    e = issue(c, r, s[r], d[r], hostComms[r], NULL);
  dmacclResult_t end = dmacclGroupEnd();
  if (e == dmacclSuccess) e = end;
  for (int r = 0; r < c->n && e == dmacclSuccess; r++) e = dmacclCommSynchronize(hostComms[r]);
  if (e != dmacclSuccess) {
    TEST_FAIL("host executor: %s", dmacclCommGetLastError(NULL));
    rc = 1;
  }
  memcpy(arrivedOf, keep, sizeof(keep));
  return rc;
}

/* The same inputs on the devices. */
static int upload(const caseT *c, unsigned char **db, uint64_t seed) {
  for (int r = 0; r < c->n; r++) {
    unsigned char *in = malloc(c->span[r]);
    inputs(c, r, in, seed);
    cudaError_t e = cudaMemcpy(db[r], in, c->span[r], cudaMemcpyHostToDevice);
    free(in);
    CK(e);
  }
  /* A copy from pageable memory may return before its DMA lands, and the
   * test's streams do not wait for the legacy stream: wait here. */
  for (int g = 0; g < ngpu && g < c->n; g++) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceSynchronize());
  }
  return 0;
}

static int compare(const caseT *c, unsigned char **want, unsigned char **db, const char *how) {
  unsigned char *got = malloc(c->span[0] > 1 ? c->span[0] : 1);
  for (int r = 0; r < c->n; r++) {
    got = realloc(got, c->span[r]);
    CK(cudaMemcpy(got, db[r], c->span[r], cudaMemcpyDeviceToHost));
    long long d = testFirstDiff(got, want[r], c->span[r]);
    if (d >= 0) {
      TEST_FAIL("%s %s n=%d count=%zu type %d op %d root %d inPlace %d (%s): rank %d byte %lld "
                "(of %zu) is 0x%02x, host executor 0x%02x",
                planCollName(c->coll), how, c->n, c->count, (int)c->type, (int)c->op, c->root,
                c->inPlace, how, r, d + c->lo[r], c->span[r], got[d], want[r][d]);
      free(got);
      return 1;
    }
  }
  free(got);
  return 0;
}

/* Arrival words (n, between two guard words) of every rank: 0, or check
 * that they hold arrivedValue and the guards 0. */
static int arrivalWords(const caseT *c, uint32_t **words, int check, const char *how) {
  for (int r = 0; r < c->n; r++) {
    uint32_t w[MAXN + 2];
    size_t bytes = (size_t)(c->n + 2) * sizeof(uint32_t);
    CK(cudaSetDevice(r % ngpu));
    if (!check) { /* on the legacy stream, which the test's streams do not wait for: wait */
      CK(cudaMemset(words[r], 0, bytes));
      CK(cudaDeviceSynchronize());
      continue;
    }
    CK(cudaMemcpy(w, words[r], bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < c->n + 2; i++)
      if (w[i] != (i == 0 || i == c->n + 1 ? 0 : arrivedValue)) {
        TEST_FAIL("%s %s n=%d count=%zu inPlace %d: rank %d's arrival word %d is %u, expected %u",
                  planCollName(c->coll), how, c->n, c->count, c->inPlace, r, i - 1, w[i],
                  i == 0 || i == c->n + 1 ? 0 : arrivedValue);
        return 1;
      }
  }
  return 0;
}

/* The consumers' copies poisoned (the test's streams do not wait for the
 * legacy stream: wait here). */
static int poisonChecks(const caseT *c, unsigned char **chk) {
  for (int r = 0; r < c->n; r++) {
    CK(cudaSetDevice(r % ngpu));
    CK(cudaMemset(chk[r], 0xA5, c->span[r]));
    CK(cudaDeviceSynchronize());
  }
  return 0;
}

/* Each rank's consumer: for every block, wait for its arrival word
 * (dmacclStreamWaitArrival), then copy the block into chk at the same
 * place. */
static int consume(const caseT *c, uint32_t **words, unsigned char **db, void **d,
                   unsigned char **chk, dmacclComm_t *comms) {
  for (int r = 0; r < c->n; r++) {
    CK(cudaSetDevice(r % ngpu));
    for (int p = 0; p < c->n; p++) {
      planBlock b = planCollOf(c->coll)->block(&c->a[p], p, r);
      DK(dmacclStreamWaitArrival(words[r] + 1, p, arrivedValue, comms[r], consumers[r]));
      size_t at = (size_t)((unsigned char *)d[r] - db[r]) + b.dstOff;
      if (b.bytes)
        CK(cudaMemcpyAsync(chk[r] + at, db[r] + at, b.bytes, cudaMemcpyDeviceToDevice,
                           consumers[r]));
    }
  }
  return 0;
}

/* Waits up to 60 s for st; a stream still running then (a consumer waits
 * for a word never stored) is released by storing every rank's words from
 * the host. 0: done in time. */
static int finishOrRelease(const caseT *c, cudaStream_t st, int dev, uint32_t **words,
                           const char *how) {
  CK(cudaSetDevice(dev));
  cudaError_t q = cudaErrorNotReady;
  for (int ms = 0; ms < 60000 && (q = cudaStreamQuery(st)) == cudaErrorNotReady; ms++) usleep(1000);
  if (q != cudaErrorNotReady) {
    CK(q);
    return 0;
  }
  uint32_t v[MAXN];
  for (int p = 0; p < c->n; p++) v[p] = arrivedValue;
  for (int r = 0; r < c->n; r++) {
    CK(cudaSetDevice(r % ngpu));
    CK(cudaMemcpy(words[r] + 1, v, (size_t)c->n * sizeof(uint32_t), cudaMemcpyHostToDevice));
  }
  CK(cudaSetDevice(dev));
  CK(cudaStreamSynchronize(st));
  TEST_FAIL("%s %s n=%d count=%zu inPlace %d: a consumer still waited for an arrival word "
            "after 60 s",
            planCollName(c->coll), how, c->n, c->count, c->inPlace);
  return 1;
}

/* The consumer's copies against the host executor's blocks, once the
 * consumers are done (finishOrRelease for each). */
static int compareBlocks(const caseT *c, unsigned char **want, unsigned char **chk, void **d,
                         unsigned char **db, uint32_t **words) {
  for (int r = 0; r < c->n; r++)
    if (finishOrRelease(c, consumers[r], r % ngpu, words, "eager")) return 1;
  for (int r = 0; r < c->n; r++) {
    CK(cudaSetDevice(r % ngpu));
    for (int p = 0; p < c->n; p++) {
      planBlock b = planCollOf(c->coll)->block(&c->a[p], p, r);
      size_t at = (size_t)((unsigned char *)d[r] - db[r]) + b.dstOff;
      unsigned char *got = malloc(b.bytes + 1);
      CK(cudaMemcpy(got, chk[r] + at, b.bytes, cudaMemcpyDeviceToHost));
      long long x = testFirstDiff(got, want[r] + at, b.bytes);
      free(got);
      if (x >= 0) {
        TEST_FAIL("%s n=%d count=%zu inPlace %d: rank %d's consumer copied block %d after its "
                  "arrival word, and its byte %lld differs from the final result",
                  planCollName(c->coll), c->n, c->count, c->inPlace, r, p, x);
        return 1;
      }
    }
  }
  return 0;
}

static int runCase(caseT *c, uint64_t seed) {
  setup(c);
  int n = c->n, rc = 0;
  int notify = c->coll == PLAN_COLL_ALLGATHER || c->coll == PLAN_COLL_ALLGATHERV;
  unsigned char *hb[MAXN], *db[MAXN], *chk[MAXN];
  uint32_t *words[MAXN];
  void *s[MAXN], *d[MAXN];
  for (int r = 0; r < n; r++) {
    hb[r] = malloc(c->span[r]);
    CK(cudaSetDevice(r % ngpu));
    CK(cudaMalloc((void **)&db[r], c->span[r]));
    words[r] = NULL, chk[r] = NULL;
    if (notify) {
      CK(cudaMalloc((void **)&words[r], (size_t)(n + 2) * sizeof(uint32_t)));
      CK(cudaMalloc((void **)&chk[r], c->span[r]));
    }
    place(c, r, db[r], &s[r], &d[r]);
  }
  /* Eager, built-in selection (k=0) and the direct forms forced (k=1;
   * premultiplied sums with immediate scalars there); the reductions also
   * push1 (k=2; pull1 where a GPU is shared), eager and in the graph. */
  int push = planCollOf(c->coll)->reduces, ks = push ? 3 : 2;
  static const char *const what[] = {"eager", "eager, direct forms", "eager, push1"};
  for (int k = 0; k < ks && !rc; k++) {
    premulImmediate = k == 1;
    if ((rc = setPremul(c, 0)) || (rc = runHost(c, hb, seed + (uint64_t)k)) ||
        (rc = upload(c, db, seed + (uint64_t)k)))
      break;
    arrivedValue = (uint32_t)(seed * 2654435761u + (uint64_t)k) | 1u;
    if (notify && ((rc = arrivalWords(c, words, 0, "")) || (rc = poisonChecks(c, chk)))) break;
    for (int r = 0; r < n; r++) arrivedOf[r] = notify ? words[r] + 1 : NULL;
    DK(dmacclGroupStart());
    for (int r = 0; r < n; r++) DK(issue(c, r, s[r], d[r], gpuComms[k][r], streams[r]));
    DK(dmacclGroupEnd());
    if (notify && (rc = consume(c, words, db, d, chk, gpuComms[k])) != 0) break;
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r % ngpu));
      CK(cudaStreamSynchronize(streams[r]));
      DK(dmacclCommSynchronize(gpuComms[k][r]));
    }
    rc = compare(c, hb, db, what[k]);
    if (!rc && notify) rc = compareBlocks(c, hb, chk, d, db, words);
    if (!rc && notify) rc = arrivalWords(c, words, 1, what[k]);
  }
  /* One graph for every rank: streams forked from rank 0's capture (the
   * built-in selection's; the reductions' push1 too). */
  for (int gk = 0; gk <= push && !rc; gk++) {
    dmacclComm_t *gc = gpuComms[gk ? 2 : 0];
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaEvent_t fork, join[MAXN];
    CK(cudaSetDevice(0));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeGlobal));
    CK(cudaEventRecord(fork, streams[0]));
    for (int r = 1; r < n; r++) CK(cudaStreamWaitEvent(streams[r], fork, 0));
    /* with arrival words, each rank's consumer forks from its stream
     * before the call and joins rank 0's at the end: its waits are graph
     * nodes beside the operation's */
    cudaEvent_t cfork[MAXN], cjoin[MAXN];
    for (int r = 0; r < n && notify; r++) {
      CK(cudaSetDevice(r % ngpu));
      CK(cudaEventCreateWithFlags(&cfork[r], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&cjoin[r], cudaEventDisableTiming));
      CK(cudaEventRecord(cfork[r], streams[r]));
      CK(cudaStreamWaitEvent(consumers[r], cfork[r], 0));
    }
    premulImmediate = 0; /* the replays change the scalar in device memory */
    DK(dmacclGroupStart());
    for (int r = 0; r < n; r++) DK(issue(c, r, s[r], d[r], gc[r], streams[r]));
    DK(dmacclGroupEnd());
    if (notify && (rc = consume(c, words, db, d, chk, gc)) != 0) return rc;
    for (int r = 0; r < n && notify; r++) {
      CK(cudaSetDevice(r % ngpu));
      CK(cudaEventRecord(cjoin[r], consumers[r]));
      CK(cudaSetDevice(0));
      CK(cudaStreamWaitEvent(streams[0], cjoin[r], 0));
    }
    for (int r = 1; r < n; r++) {
      CK(cudaSetDevice(r % ngpu));
      CK(cudaEventCreateWithFlags(&join[r], cudaEventDisableTiming));
      CK(cudaEventRecord(join[r], streams[r]));
      CK(cudaSetDevice(0));
      CK(cudaStreamWaitEvent(streams[0], join[r], 0));
    }
    CK(cudaStreamEndCapture(streams[0], &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int rep = 0; rep < 2 && !rc; rep++) {
      uint64_t sd = seed + 100 + (uint64_t)rep;
      if ((rc = setPremul(c, 1 + rep)) || (rc = runHost(c, hb, sd)) || (rc = upload(c, db, sd)))
        break;
      if (notify && (rc = arrivalWords(c, words, 0, "")) != 0) break; /* the replay stores again */
      if (notify && (rc = poisonChecks(c, chk)) != 0) break;
      CK(cudaSetDevice(0));
      CK(cudaGraphLaunch(ge, streams[0]));
      if (notify && (rc = finishOrRelease(c, streams[0], 0, words, "graph replay")) != 0) break;
      CK(cudaStreamSynchronize(streams[0]));
      rc = compare(c, hb, db, gk ? "graph replay, push1" : "graph replay");
      if (!rc && notify) rc = compareBlocks(c, hb, chk, d, db, words);
      if (!rc && notify) rc = arrivalWords(c, words, 1, "graph replay");
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaEventDestroy(fork);
    for (int r = 1; r < n; r++) cudaEventDestroy(join[r]);
    for (int r = 0; r < n && notify; r++) cudaEventDestroy(cfork[r]), cudaEventDestroy(cjoin[r]);
  }
  for (int r = 0; r < n; r++) {
    free(hb[r]);
    cudaFree(db[r]);
    cudaFree(words[r]);
    cudaFree(chk[r]);
    arrivedOf[r] = NULL;
  }
  return rc;
}

/* Arrival words with every algorithm AllGather takes, forced, at 16 MB per
 * rank (blocks still moving while the consumers queue their waits; stagell
 * at 64 KB, where its lines fit; stagesm at 2 MB), in and
 * out of place: each consumer copy holds its block's final bytes and every
 * word the value. */
static int testArrivalAlgorithms(int n, const int *devs) {
  static const char *const algos[] = {"push1", "pushn", "pushb",   "pull1",   "pulln",
                                      "pullb", "stage", "stage2d", "stagell", "stagesm"};
  int rc = 0;
  for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]) && !rc; a++) {
    char sel[64];
    snprintf(sel, sizeof(sel), "allgather:%s", algos[a]);
    dmacclConfig_t gc = DMACCL_CONFIG_INITIALIZER;
    gc.executor = dmacclExecutorCuda;
    gc.algorithm = sel;
    dmacclComm_t comms[MAXN];
    DK(dmacclCommInitAll(comms, n, devs, &gc));
    for (int inPlace = 0; inPlace <= 1 && !rc; inPlace++) {
      caseT c = {.coll = PLAN_COLL_ALLGATHER,
                 .n = n,
                 .inPlace = inPlace,
                 /* stagell: lines that fit (its kernel moves them);
                  * stagesm: a receive buffer that fits a staging slot
                  * (n x 2 MB: on up to 4 ranks) */
                 .count = !strcmp(algos[a], "stagell")   ? (size_t)16384
                          : !strcmp(algos[a], "stagesm") ? (size_t)1 << 19
                                                         : (size_t)4 << 20,
                 .type = dmacclFloat32,
                 .op = dmacclSum};
      setup(&c);
      unsigned char *hb[MAXN], *db[MAXN], *chk[MAXN];
      uint32_t *words[MAXN];
      void *sp[MAXN], *dp[MAXN];
      for (int r = 0; r < n; r++) {
        hb[r] = malloc(c.span[r]);
        CK(cudaSetDevice(devs[r]));
        CK(cudaMalloc((void **)&db[r], c.span[r]));
        CK(cudaMalloc((void **)&chk[r], c.span[r]));
        CK(cudaMalloc((void **)&words[r], (size_t)(n + 2) * sizeof(uint32_t)));
        place(&c, r, db[r], &sp[r], &dp[r]);
        arrivedOf[r] = words[r] + 1;
      }
      uint64_t seed = 4242u + 10u * (uint64_t)a + (uint64_t)inPlace;
      arrivedValue = (uint32_t)(seed * 2654435761u) | 1u;
      if (!(rc = runHost(&c, hb, seed)) && !(rc = upload(&c, db, seed)) &&
          !(rc = arrivalWords(&c, words, 0, "")) && !(rc = poisonChecks(&c, chk))) {
        DK(dmacclGroupStart());
        for (int r = 0; r < n; r++) DK(issue(&c, r, sp[r], dp[r], comms[r], streams[r]));
        DK(dmacclGroupEnd());
        rc = consume(&c, words, db, dp, chk, comms);
        for (int r = 0; r < n && !rc; r++) {
          CK(cudaSetDevice(devs[r]));
          CK(cudaStreamSynchronize(streams[r]));
          DK(dmacclCommSynchronize(comms[r]));
        }
        if (!rc) rc = compare(&c, hb, db, algos[a]);
        if (!rc) rc = compareBlocks(&c, hb, chk, dp, db, words);
        if (!rc) rc = arrivalWords(&c, words, 1, algos[a]);
      }
      for (int r = 0; r < n; r++) {
        free(hb[r]);
        cudaFree(db[r]), cudaFree(chk[r]), cudaFree(words[r]);
        arrivedOf[r] = NULL;
      }
    }
    for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
    if (!rc)
      printf("  arrival words with %s: every consumer copy final, every word stored\n", algos[a]);
  }
  return rc;
}

/* One rank: a premultiplied sum is the reduction kernel scaling the input
 * (launch.c postOneRank), out of place and in place, with the scalar in
 * the parameters and in device memory, against the host executor's; the
 * bytes past the result untouched. */
static int testPremulOneRank(void) {
  const dmacclDataType_t types[] = {dmacclBfloat16, dmacclFloat32, dmacclInt32, dmacclFloat8e4m3};
  const size_t count = 100003, guard = 64;
  dmacclComm_t g, h;
  dmacclConfig_t gc = DMACCL_CONFIG_INITIALIZER, hc = DMACCL_CONFIG_INITIALIZER;
  gc.executor = dmacclExecutorCuda;
  hc.executor = dmacclExecutorHost;
  int dev0 = 0, rc = 0, cases = 0;
  DK(dmacclCommInitAll(&g, 1, &dev0, &gc));
  DK(dmacclCommInitAll(&h, 1, NULL, &hc));
  CK(cudaSetDevice(0));
  unsigned char *hin = malloc(count * 4 + guard), *hout = malloc(count * 4 + guard),
                *got = malloc(count * 4 + guard);
  char *din, *dout, *dsc;
  CK(cudaMalloc((void **)&din, count * 4 + guard));
  CK(cudaMalloc((void **)&dout, count * 4 + guard));
  CK(cudaMalloc((void **)&dsc, 8));
  for (size_t ti = 0; ti < 4 && !rc; ti++)
    for (int v = 0; v < 4 && !rc; v++) { /* in place (v & 1), device scalar (v & 2) */
      dmacclDataType_t t = types[ti];
      size_t bytes = count * collTypeSize(t);
      unsigned char b[8];
      premulValue(t, v >> 1, b);
      testFillRandom(hin, bytes, 900u + (uint64_t)(ti * 4 + (size_t)v));
      collSanitize(t, hin, count);
      memset(hin + bytes, 0x5C, guard);
      memcpy(hout, hin, bytes + guard);
      if (!(v & 1)) memset(hout, 0xA5, bytes + guard);
      CK(cudaMemcpy(din, hin, bytes + guard, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dout, hout, bytes + guard, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dsc, b, 8, cudaMemcpyHostToDevice));
      dmacclRedOp_t gop, hop;
      DK(dmacclRedOpCreatePreMulSum(&gop, (v & 2) ? (void *)dsc : (void *)b, t,
                                    (v & 2) ? dmacclScalarDevice : dmacclScalarHostImmediate, g));
      DK(dmacclRedOpCreatePreMulSum(&hop, b, t, dmacclScalarHostImmediate, h));
      DK(dmacclAllReduce(din, (v & 1) ? din : dout, count, t, gop, g, streams[0]));
      DK(dmacclAllReduce(hin, (v & 1) ? hin : hout, count, t, hop, h, NULL));
      DK(dmacclRedOpDestroy(gop, g));
      DK(dmacclRedOpDestroy(hop, h));
      CK(cudaStreamSynchronize(streams[0]));
      DK(dmacclCommSynchronize(h));
      CK(cudaMemcpy(got, (v & 1) ? din : dout, bytes + guard, cudaMemcpyDeviceToHost));
      long long d = testFirstDiff(got, (v & 1) ? hin : hout, bytes + guard);
      if (d >= 0) {
        TEST_FAIL("one rank premul %s %s %s: byte %lld", collTypeName(t),
                  (v & 1) ? "in place" : "out of place", (v & 2) ? "device" : "immediate", d);
        rc = 1;
      }
      cases++;
    }
  cudaFree(din), cudaFree(dout), cudaFree(dsc);
  free(hin), free(hout), free(got);
  dmacclCommDestroy(g);
  dmacclCommDestroy(h);
  if (!rc) printf("  %d one-rank premultiplied sums match the host executor\n", cases);
  return rc;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  ngpu = gpuCountOrSkip(1, "test_gpu_colls");
  static const char *direct =
      "allgather:push1;alltoall:pushn;broadcast:relay;gather:pushb;scatter:pulln;"
      "allgatherv:pullb;alltoallv:pushn;allreduce:pull1;reducescatter:pull1;"
      "reducescatterv:pull1;reduce:pull1";
  struct {
    dmacclDataType_t t;
    dmacclRedOp_t op;
  } tops[] = {{dmacclFloat32, dmacclSum},       {dmacclBfloat16, dmacclAvg},
              {dmacclFloat16, dmacclMax},       {dmacclInt32, dmacclProd},
              {dmacclFloat8e4m3, dmacclSum},    {dmacclUint8, dmacclMin},
              {dmacclBfloat16, COLL_PREMULSUM}, {dmacclInt64, COLL_PREMULSUM}};
  /* the last only for Broadcast (relay's parts and chain's block in
   * several groups: 16 MB of float32, 8 MB of bfloat16) and, as
   * reduceCount, the reductions in their first two types */
  const size_t counts[] = {1, 1000, 300001, 4194311};
  /* the reductions' largest count: float32 32 MB (pull1's AllReduce in one
   * kernel on 2 and 4 GPUs), bfloat16 16 MB (its groups) */
  const size_t reduceCount = 8388617;
  int cases = 0, rc = 0;
  for (int nn = 2; nn <= 3 && !rc; nn++) {
    int n = nn == 3 && ngpu >= 3 ? ngpu < MAXN ? ngpu : MAXN : nn;
    int devs[MAXN];
    for (int r = 0; r < n; r++) devs[r] = r % ngpu;
    dmacclConfig_t hc = DMACCL_CONFIG_INITIALIZER, gc = DMACCL_CONFIG_INITIALIZER;
    hc.executor = dmacclExecutorHost;
    gc.executor = dmacclExecutorCuda;
    DK(dmacclCommInitAll(hostComms, n, NULL, &hc));
    DK(dmacclCommInitAll(gpuComms[0], n, devs, &gc));
    gc.algorithm = direct;
    DK(dmacclCommInitAll(gpuComms[1], n, devs, &gc));
    gc.algorithm = "allreduce:push1;reducescatter:push1;reducescatterv:push1;reduce:push1";
    DK(dmacclCommInitAll(gpuComms[2], n, devs, &gc));
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(devs[r]));
      CK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
      CK(cudaStreamCreateWithFlags(&consumers[r], cudaStreamNonBlocking));
      CK(cudaMalloc(&devScalar[r], 8));
    }
    if (!only || !strcmp(only, "allgather")) rc = testArrivalAlgorithms(n, devs);
    if (!rc && nn == 2 && (!only || !strcmp(only, "allreduce"))) rc = testPremulOneRank();
    for (int coll = 0; coll < PLAN_NUM_COLLS && !rc; coll++) {
      if (only && strcmp(only, planCollName((planColl)coll))) continue;
      int reduces = planCollOf((planColl)coll)->reduces;
      for (size_t ti = 0; ti < sizeof(tops) / sizeof(tops[0]) && !rc; ti++) {
        if (!reduces && ti > 1) break; /* movement: two types are enough */
        /* the reductions' pull1 in several pieces too (its one-kernel
         * AllReduce on 2 and 3 GPUs): two types */
        size_t ncounts = coll == PLAN_COLL_BROADCAST || (reduces && ti < 2) ? 4 : 3;
        for (size_t ci = 0; ci < ncounts && !rc; ci++)
          for (int inPlace = 0; inPlace <= 1 && !rc; inPlace++) {
            caseT c = {.coll = (planColl)coll,
                       .n = n,
                       .root = cases % n, /* every root in turn */
                       .inPlace = inPlace,
                       .count = ci == 3 && reduces ? reduceCount : counts[ci],
                       .type = tops[ti].t,
                       .op = tops[ti].op};
            rc = runCase(&c, 7919u * (uint64_t)(cases + 1));
            cases++;
          }
      }
    }
    for (int r = 0; r < n; r++) {
      dmacclCommDestroy(hostComms[r]);
      dmacclCommDestroy(gpuComms[0][r]);
      dmacclCommDestroy(gpuComms[1][r]);
      dmacclCommDestroy(gpuComms[2][r]);
      cudaStreamDestroy(streams[r]);
      cudaStreamDestroy(consumers[r]);
      cudaSetDevice(devs[r]);
      cudaFree(devScalar[r]);
    }
  }
  printf("  %d cases (x2 eager, x2 graph replays) match the host executor on %d GPU(s)\n", cases,
         ngpu);
  printf(rc ? "FAILED\n" : "all passed\n");
  return rc;
}
