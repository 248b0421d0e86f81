/*
 * NCCL's API over dmaccl (nccl/libnccl.so.2, src/nccl/nccl.c), called as a
 * program built against NCCL calls it: this file includes NCCL's own nccl.h
 * where NCCL is installed (else the library's copy of the ABI) and links
 * the NCCL-named library, never dmaccl's calls for the collectives.
 *
 * - Without a communicator: the version, the error strings, configs that
 *   are refused (nothing made, the reason in ncclGetLastError).
 * - Ranks as processes (ncclCommInitRankConfig): every NCCL collective and
 *   Send/Recv, types and operations, in and out of place, counts 0, 7 and
 *   1001, random data, poisoned outputs, every byte of the receive
 *   allocation compared with tools/common/colls.c's reference; wrong
 *   arguments (a type, an operation, Avg on integers, a root, a peer, a
 *   split's newcomm) and the calls dmaccl does not serve (shrink, revoke,
 *   premultiplied sums, simulated groups): the NCCL code, a sentence naming
 *   it, nothing written, the communicator still usable. ncclCommSplit by
 *   parity with keys reversing the order, and collectives on the new one.
 * - One process, every rank (ncclCommInitAll) in one group.
 * Host executor (CI; buffers from dmacclMemAlloc on the communicator NCCL's
 * call made, shared memory) and, with the argument "gpu", the CUDA executor:
 * ranks on GPU r % GPUs (ranks share a GPU on a one-GPU machine), buffers
 * from cudaMalloc and ncclMemAlloc, registrations and windows, and a CUDA
 * graph of ncclAllReduce and ncclAllGather replayed on fresh inputs.
 */
#ifdef DMACCL_HAVE_NCCL
#include <nccl.h>
/* nccl_device/core.h's host calls (that header needs CUDA's compiler) */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devComm);
#else
#include "nccl_abi.h"
#endif
#include "harness.h"
#include "mp.h"
#include "common/colls.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUARD 64
#define SPAN (256 << 10)

typedef struct {
  int gpu;
} ncArg;

static ncclResult_t issueOp(collId c, const collShape *s, int rank, const void *sb, void *rb,
                            dmacclDataType_t t, dmacclRedOp_t op, int inPlace, ncclComm_t comm,
                            cudaStream_t st);

/* One collective through NCCL's names (tools/common/colls.c's shapes). The
 * table's premultiplied sum: ncclRedOpCreatePreMulSum, the scalar in
 * device memory every other time (gpu: a buffer of the process; the host
 * executor reads host memory), destroyed once the call has returned. */
static ncclResult_t issue(collId c, const collShape *s, int rank, const void *sb, void *rb,
                          dmacclDataType_t t, dmacclRedOp_t op, int inPlace, ncclComm_t comm,
                          cudaStream_t st, int gpu) {
  if (op != COLL_PREMULSUM || !(collTable[c].flags & COLL_REDUCES))
    return issueOp(c, s, rank, sb, rb, t, op, inPlace, comm, st);
  static int calls;
  static unsigned char hostScalar[8], *devScalar;
  int onDevice = calls++ & 1;
  collPremulScalar(t, hostScalar);
  void *where = hostScalar;
  if (onDevice && gpu) {
    if (!devScalar && cudaMalloc((void **)&devScalar, 8) != cudaSuccess)
      return ncclUnhandledCudaError;
    if (cudaMemcpy(devScalar, hostScalar, 8, cudaMemcpyHostToDevice) != cudaSuccess)
      return ncclUnhandledCudaError;
    where = devScalar;
  }
  ncclRedOp_t pre;
  ncclResult_t rc = ncclRedOpCreatePreMulSum(
      &pre, where, (ncclDataType_t)t, onDevice ? ncclScalarDevice : ncclScalarHostImmediate, comm);
  if (rc != ncclSuccess) return rc;
  rc = issueOp(c, s, rank, sb, rb, t, (dmacclRedOp_t)pre, inPlace, comm, st);
  ncclResult_t d = ncclRedOpDestroy(pre, comm);
  return rc != ncclSuccess ? rc : d;
}

static ncclResult_t issueOp(collId c, const collShape *s, int rank, const void *sb, void *rb,
                            dmacclDataType_t t, dmacclRedOp_t op, int inPlace, ncclComm_t comm,
                            cudaStream_t st) {
  ncclDataType_t nt = (ncclDataType_t)t;
  ncclRedOp_t no = (ncclRedOp_t)op;
  size_t cnt = s->count;
  int n = s->nranks;
  switch (c) {
  case COLL_ALLGATHER: return ncclAllGather(sb, rb, cnt, nt, comm, st);
  case COLL_ALLTOALL: return ncclAlltoAll(sb, rb, cnt, nt, comm, st);
  case COLL_ALLREDUCE: return ncclAllReduce(sb, rb, cnt, nt, no, comm, st);
  case COLL_REDUCESCATTER: return ncclReduceScatter(sb, rb, cnt, nt, no, comm, st);
  case COLL_BROADCAST: /* in place: NCCL's own in-place call */
    if (inPlace && sb == rb) return ncclBcast(rb, cnt, nt, s->root, comm, st);
    return ncclBroadcast(sb, rb, cnt, nt, s->root, comm, st);
  case COLL_REDUCE: return ncclReduce(sb, rb, cnt, nt, no, s->root, comm, st);
  case COLL_GATHER: return ncclGather(sb, rb, cnt, nt, s->root, comm, st);
  case COLL_SCATTER: return ncclScatter(sb, rb, cnt, nt, s->root, comm, st);
  case COLL_SENDRECV: {
    ncclResult_t rc = ncclGroupStart(), e;
    if (rc != ncclSuccess) return rc;
    rc = ncclSend(sb, cnt, nt, (rank + 1) % n, comm, st);
    if (rc == ncclSuccess) rc = ncclRecv(rb, cnt, nt, (rank - 1 + n) % n, comm, st);
    e = ncclGroupEnd();
    return rc != ncclSuccess ? rc : e;
  }
  default: return ncclInvalidArgument;
  }
}

static int toDev(int gpu, void *dst, const void *src, size_t bytes) {
  if (!gpu) return memcpy(dst, src, bytes), 0;
  return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess;
}
static int fromDev(int gpu, void *dst, const void *src, size_t bytes) {
  if (!gpu) return memcpy(dst, src, bytes), 0;
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess;
}

static void makeSend(void *buf, size_t count, dmacclDataType_t t, uint64_t seed, int r) {
  testFillRandom(buf, count * collTypeSize(t), seed * 977u + (uint64_t)r);
  collSanitize(t, buf, count);
}

/* One case on this rank: the allocation poisoned, the inputs written, the
 * call completed (the stream, or the host executor's synchronize), every
 * byte compared. */
static int oneCase(int rank, int n, ncclComm_t comm, int gpu, cudaStream_t st, char *dev, collId c,
                   dmacclDataType_t t, dmacclRedOp_t op, size_t count, int inPlace, uint64_t seed) {
  collShape s = {.nranks = n, .count = count, .root = (int)(seed % (uint64_t)n)};
  size_t es = collTypeSize(t);
  size_t sc = collSendCount(c, &s, rank), rcn = collRecvCount(c, &s, rank);
  long long delta = 0;
  int ip = inPlace && (collTable[c].flags & COLL_IN_PLACE) && collInPlace(c, &s, rank, &delta);
  size_t lo = ip && delta < 0 ? (size_t)(-delta) * es : 0;
  size_t recvOff = lo + GUARD, sendOff = ip ? (size_t)((long long)recvOff + delta * (long long)es)
                                            : recvOff + rcn * es + GUARD;
  size_t span =
      (ip ? (sendOff + sc * es > recvOff + rcn * es ? sendOff + sc * es : recvOff + rcn * es)
          : sendOff + sc * es) +
      GUARD;
  RANK_CHECK(span <= SPAN);
  unsigned char *host = malloc(span), *want = malloc(span);
  void *sends[8] = {0};
  RANK_CHECK(host && want && n <= 8);
  memset(host, 0xA5, span);
  makeSend(host + sendOff, sc, t, seed, rank);
  for (int r = 0; r < n; r++) {
    size_t k = collSendCount(c, &s, r);
    if (k) {
      sends[r] = malloc(k * es);
      makeSend(sends[r], k, t, seed, r);
    }
  }
  memcpy(want, host, span);
  RANK_CHECK(collReference(c, &s, rank, t, op, (const void *const *)sends, want + recvOff) == 0);
  RANK_CHECK(toDev(gpu, dev, host, span) == 0);
  if (gpu) RANK_CHECK(cudaDeviceSynchronize() == cudaSuccess);
  /* a rank with nothing to send passes NULL, as NCCL allows for count 0 */
  const void *sp = sc ? dev + sendOff : (ip ? dev + sendOff : NULL);
  void *rp = dev + recvOff;
  ncclResult_t rc = issue(c, &s, rank, sp, rp, t, op, ip, comm, st, gpu);
  if (rc != ncclSuccess)
    fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, collTable[c].call, ncclGetErrorString(rc),
            ncclGetLastError(comm));
  RANK_CHECK(rc == ncclSuccess);
  /* complete: on a GPU the stream; the host executor's calls across
   * processes complete at dmaccl's synchronize (NCCL has no host executor) */
  if (gpu)
    RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
  else
    RANK_CHECK(dmacclCommSynchronize((dmacclComm_t)(void *)comm) == dmacclSuccess);
  RANK_CHECK(fromDev(gpu, host, dev, span) == 0);
  long long d = testFirstDiff(host, want, span);
  if (d >= 0)
    fprintf(stderr,
            "rank %d of %d: %s type %s op %s count %zu root %d in place %d: byte %lld is 0x%02x, "
            "expected 0x%02x\n",
            rank, n, collTable[c].name, collTypeName(t), collOpName(op), count, s.root, ip, d,
            host[d], want[d]);
  for (int r = 0; r < n; r++) free(sends[r]);
  free(host), free(want);
  return d >= 0;
}

/* A call refused: the code, a sentence naming what, nothing written. */
static int refused(int rank, ncclComm_t comm, int gpu, char *dev, ncclResult_t got,
                   ncclResult_t want, const char *needle) {
  RANK_CHECK(got == want);
  const char *e = ncclGetLastError(comm);
  if (!strstr(e, needle)) fprintf(stderr, "rank %d: '%s' lacks '%s'\n", rank, e, needle);
  RANK_CHECK(strstr(e, needle) != NULL);
  unsigned char probe[256];
  RANK_CHECK(fromDev(gpu, probe, dev, sizeof(probe)) == 0);
  for (size_t i = 0; i < sizeof(probe); i++) RANK_CHECK(probe[i] == 0x3C);
  return 0;
}

static int wrongArguments(int rank, int n, ncclComm_t comm, int gpu, cudaStream_t st, char *dev) {
  unsigned char fill[256];
  memset(fill, 0x3C, sizeof(fill));
  RANK_CHECK(toDev(gpu, dev, fill, sizeof(fill)) == 0);
  if (gpu) RANK_CHECK(cudaDeviceSynchronize() == cudaSuccess);
  char *a = dev + 512, *b = dev;
  if (refused(rank, comm, gpu, dev, ncclAllReduce(a, b, 16, (ncclDataType_t)12, ncclSum, comm, st),
              ncclInvalidArgument, "datatype"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclAllReduce(a, b, 16, ncclFloat, (ncclRedOp_t)5, comm, st),
              ncclInvalidArgument, "op"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclAllReduce(a, b, 16, ncclInt32, ncclAvg, comm, st),
              ncclInvalidArgument, "Avg"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclBroadcast(a, b, 16, ncclFloat, n, comm, st),
              ncclInvalidArgument, "root"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclBcast(b, 16, ncclFloat, -1, comm, st), ncclInvalidArgument,
              "root"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclSend(a, 16, ncclFloat, n, comm, st), ncclInvalidArgument,
              "peer"))
    return 1;
  /* a split every rank gets wrong (each its own error) */
  if (refused(rank, comm, gpu, dev, ncclCommSplit(comm, 0, rank, NULL, NULL), ncclInvalidArgument,
              "newcomm"))
    return 1;
  /* what dmaccl does not serve: invalid usage, nothing made */
  ncclComm_t sub = (ncclComm_t)(uintptr_t)0x1234;
  int exclude = 0;
  if (refused(rank, comm, gpu, dev, ncclCommShrink(comm, &exclude, 1, &sub, NULL, 0),
              ncclInvalidUsage, "ncclCommShrink"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclCommRevoke(comm, 0), ncclInvalidUsage, "ncclCommRevoke"))
    return 1;
  char devComm[64] = {0};
  if (refused(rank, comm, gpu, dev, ncclDevCommCreate(comm, devComm, devComm), ncclInvalidUsage,
              "ncclDevCommCreate"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclDevCommDestroy(comm, devComm), ncclInvalidUsage,
              "ncclDevCommDestroy"))
    return 1;
  ncclRedOp_t pre = ncclSum;
  float scalar = 0.5f;
  if (refused(rank, comm, gpu, dev,
              ncclRedOpCreatePreMulSum(&pre, &scalar, ncclFloat, (ncclScalarResidence_t)3, comm),
              ncclInvalidArgument, "residence 3"))
    return 1;
  RANK_CHECK(pre == ncclSum);
  RANK_CHECK(ncclRedOpCreatePreMulSum(&pre, &scalar, ncclFloat, ncclScalarHostImmediate, comm) ==
             ncclSuccess);
  if (refused(rank, comm, gpu, dev, ncclAllReduce(a, b, 16, ncclInt32, pre, comm, st),
              ncclInvalidArgument, "premultiplied sum of float, the call's datatype is int32"))
    return 1;
  RANK_CHECK(ncclRedOpDestroy(pre, comm) == ncclSuccess);
  if (refused(rank, comm, gpu, dev, ncclRedOpDestroy(pre, comm), ncclInvalidArgument,
              "destroyed already"))
    return 1;
  if (refused(rank, comm, gpu, dev, ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument,
              "built-in"))
    return 1;
  /* a simulated end ends the group and issues nothing (every rank records
   * an AllReduce into the probed bytes and drops it) */
  RANK_CHECK(ncclGroupStart() == ncclSuccess);
  RANK_CHECK(ncclAllReduce(a, b, 16, ncclFloat, ncclSum, comm, st) == ncclSuccess);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  if (refused(rank, comm, gpu, dev, ncclGroupSimulateEnd(&sim), ncclInvalidUsage,
              "ncclGroupSimulateEnd"))
    return 1;
  RANK_CHECK(ncclGroupEnd() == ncclInvalidUsage); /* no group is open any more */
  if (gpu)
    RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
  else
    RANK_CHECK(dmacclCommSynchronize((dmacclComm_t)(void *)comm) == dmacclSuccess);
  if (refused(rank, comm, gpu, dev, ncclInvalidUsage, ncclInvalidUsage, "no group is open"))
    return 1;
  RANK_CHECK(ncclCommDestroy(NULL) == ncclSuccess && ncclCommAbort(NULL) == ncclSuccess);
  ncclResult_t async = ncclInternalError;
  RANK_CHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess);
  return 0;
}

static int body(int rank, int n, const dmacclUniqueId *did, void *arg) {
  const ncArg *a = arg;
  cudaStream_t st = NULL;
  int ngpu = 0;
  if (a->gpu) {
    RANK_CHECK(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0);
    RANK_CHECK(cudaSetDevice(rank % ngpu) == cudaSuccess);
    RANK_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
  }
  ncclUniqueId id;
  memcpy(&id, did, sizeof(id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0; /* a dmaccl communicator is ready when the call returns */
  cfg.CTAPolicy = n == 3 ? NCCL_CTA_POLICY_ZERO : NCCL_CTA_POLICY_DEFAULT;
  ncclComm_t comm = NULL;
  ncclResult_t rc = ncclCommInitRankConfig(&comm, n, id, rank, &cfg);
  if (rc != ncclSuccess) fprintf(stderr, "rank %d: init: %s\n", rank, ncclGetLastError(NULL));
  RANK_CHECK(rc == ncclSuccess && comm);
  ncclResult_t async = ncclInProgress;
  RANK_CHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess);
  int got = -2;
  RANK_CHECK(ncclCommCount(comm, &got) == ncclSuccess && got == n);
  RANK_CHECK(ncclCommUserRank(comm, &got) == ncclSuccess && got == rank);
  RANK_CHECK(ncclCommCuDevice(comm, &got) == ncclSuccess && got == (a->gpu ? rank % ngpu : -1));
  char *dev = NULL, *dev2 = NULL;
  void *reg = NULL;
  ncclWindow_t win = NULL;
  if (a->gpu) {
    RANK_CHECK(cudaMalloc((void **)&dev, SPAN) == cudaSuccess);
    RANK_CHECK(ncclMemAlloc((void **)&dev2, SPAN) == ncclSuccess && dev2);
    RANK_CHECK(ncclCommRegister(comm, dev, SPAN, &reg) == ncclSuccess);
    RANK_CHECK(ncclCommWindowRegister(comm, dev2, SPAN, &win, NCCL_WIN_COLL_SYMMETRIC) ==
               ncclSuccess);
  } else { /* the host executor across processes: shared memory */
    RANK_CHECK(dmacclMemAlloc((dmacclComm_t)(void *)comm, SPAN, (void **)&dev) == dmacclSuccess);
    RANK_CHECK(dmacclMemAlloc((dmacclComm_t)(void *)comm, SPAN, (void **)&dev2) == dmacclSuccess);
  }
  const struct {
    dmacclDataType_t t;
    dmacclRedOp_t op;
  } tops[] = {{dmacclFloat32, dmacclSum},   {dmacclBfloat16, dmacclAvg},
              {dmacclInt64, dmacclMax},     {dmacclUint8, dmacclMin},
              {dmacclFloat16, dmacclProd},  {dmacclBfloat16, COLL_PREMULSUM},
              {dmacclInt32, COLL_PREMULSUM}};
  const collId colls[] = {COLL_ALLGATHER,     COLL_ALLTOALL,  COLL_ALLREDUCE,
                          COLL_REDUCESCATTER, COLL_BROADCAST, COLL_REDUCE,
                          COLL_GATHER,        COLL_SCATTER,   COLL_SENDRECV};
  const size_t counts[] = {0, 7, 1001};
  uint64_t seed = 11;
  for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++) {
    collId c = colls[ci];
    if (n < collMinRanks(c)) continue;
    for (size_t ti = 0; ti < sizeof(tops) / sizeof(tops[0]); ti++) {
      if (!(collTable[c].flags & COLL_REDUCES) && ti > 1) break;
      for (size_t k = 0; k < 3; k++)
        for (int inPlace = 0; inPlace <= 1; inPlace++, seed++)
          if (oneCase(rank, n, comm, a->gpu, st, (seed & 1) ? dev : dev2, c, tops[ti].t,
                      tops[ti].op, counts[k], inPlace, seed))
            return 1;
    }
  }
  if (wrongArguments(rank, n, comm, a->gpu, st, dev)) return 1;
  { /* ncclCommSplit: parity colors, keys reversing the order (rank 0 in
     * none when n > 2); the new communicator's ranks and an AllGather and an
     * AllReduce on it */
    int color = n > 2 && rank == 0 ? NCCL_SPLIT_NOCOLOR : rank % 2, m = 0, me = 0;
    for (int r = 0; r < n; r++)
      if (!(n > 2 && r == 0) && r % 2 == color) m++, me += r > rank;
    ncclComm_t sub = (ncclComm_t)(uintptr_t)0x1234;
    ncclConfig_t sc = NCCL_CONFIG_INITIALIZER;
    RANK_CHECK(ncclCommSplit(comm, color, -rank, &sub, rank == 1 ? &sc : NULL) == ncclSuccess);
    if (color == NCCL_SPLIT_NOCOLOR) {
      RANK_CHECK(sub == NULL);
    } else {
      RANK_CHECK(ncclCommCount(sub, &got) == ncclSuccess && got == m);
      RANK_CHECK(ncclCommUserRank(sub, &got) == ncclSuccess && got == me);
      char *sbuf = dev;
      if (!a->gpu)
        RANK_CHECK(dmacclMemAlloc((dmacclComm_t)(void *)sub, SPAN, (void **)&sbuf) ==
                   dmacclSuccess);
      /* (seeds of their own: rank 0 may take no part) */
      if (oneCase(me, m, sub, a->gpu, st, sbuf, COLL_ALLGATHER, dmacclFloat32, dmacclSum, 7, 0,
                  seed + 100) ||
          oneCase(me, m, sub, a->gpu, st, sbuf, COLL_ALLREDUCE, dmacclInt64, dmacclSum, 1001, 1,
                  seed + 101))
        return 1;
      if (!a->gpu) RANK_CHECK(dmacclMemFree((dmacclComm_t)(void *)sub, sbuf) == dmacclSuccess);
      RANK_CHECK(ncclCommDestroy(sub) == ncclSuccess);
    }
  }
  /* still usable */
  if (oneCase(rank, n, comm, a->gpu, st, dev, COLL_ALLREDUCE, dmacclFloat32, dmacclSum, 1001, 0,
              seed++))
    return 1;
  if (a->gpu && n > 1) { /* a graph of NCCL calls, replayed on fresh inputs */
    const size_t cnt = 4099;
    float *in = malloc(cnt * sizeof(float) * (size_t)n), *out = malloc(cnt * sizeof(float) * 8),
          *want = malloc(cnt * sizeof(float) * 8);
    RANK_CHECK(in && out && want);
    char *g = dev2;
    float *din = (float *)(void *)g, *dsum = din + cnt, *dgat = dsum + cnt;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    RANK_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    ncclResult_t r1 = ncclAllReduce(din, dsum, cnt, ncclFloat, ncclSum, comm, st);
    ncclResult_t r2 = ncclAllGather(dsum, dgat, cnt, ncclFloat, comm, st);
    RANK_CHECK(cudaStreamEndCapture(st, &graph) == cudaSuccess);
    RANK_CHECK(r1 == ncclSuccess && r2 == ncclSuccess);
    RANK_CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    for (int rep = 0; rep < 3; rep++) {
      /* small integers: every sum exact in any order */
      for (int r = 0; r < n; r++)
        for (size_t i = 0; i < cnt; i++)
          in[(size_t)r * cnt + i] =
              (float)((int)((i * 7 + (size_t)r * 13 + (size_t)rep * 5) % 61) - 30);
      RANK_CHECK(cudaMemcpy(din, in + (size_t)rank * cnt, cnt * sizeof(float),
                            cudaMemcpyHostToDevice) == cudaSuccess);
      RANK_CHECK(cudaMemset(dgat, 0xA5, cnt * sizeof(float) * (size_t)n) == cudaSuccess);
      RANK_CHECK(cudaDeviceSynchronize() == cudaSuccess);
      RANK_CHECK(cudaGraphLaunch(exec, st) == cudaSuccess);
      RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
      RANK_CHECK(cudaMemcpy(out, dgat, cnt * sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost) ==
                 cudaSuccess);
      for (size_t i = 0; i < cnt; i++) {
        float sum = 0;
        for (int r = 0; r < n; r++) sum += in[(size_t)r * cnt + i];
        for (int r = 0; r < n; r++) want[(size_t)r * cnt + i] = sum;
      }
      RANK_CHECK(memcmp(out, want, cnt * sizeof(float) * (size_t)n) == 0);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    free(in), free(out), free(want);
  }
  if (a->gpu) {
    RANK_CHECK(ncclCommWindowDeregister(comm, win) == ncclSuccess);
    RANK_CHECK(ncclCommDeregister(comm, reg) == ncclSuccess);
    RANK_CHECK(ncclMemFree(dev2) == ncclSuccess);
    RANK_CHECK(cudaFree(dev) == cudaSuccess);
  } else {
    RANK_CHECK(dmacclMemFree((dmacclComm_t)(void *)comm, dev) == dmacclSuccess);
    RANK_CHECK(dmacclMemFree((dmacclComm_t)(void *)comm, dev2) == dmacclSuccess);
  }
  RANK_CHECK(ncclCommFinalize(comm) == ncclSuccess);
  RANK_CHECK(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

/* Without a communicator (no CUDA is touched: the ranks fork later). */
static int testNoComm(void) {
  int v = 0;
  ASSERT_EQ_INT(ncclGetVersion(&v), ncclSuccess);
  ASSERT_EQ_INT(v, NCCL_VERSION(2, 28, 0));
  ASSERT_EQ_INT(ncclGetVersion(NULL), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "version");
  for (int r = 0; r < 8; r++) ASSERT_TRUE(strlen(ncclGetErrorString((ncclResult_t)r)) > 0);
  ASSERT_CONTAINS(ncclGetErrorString((ncclResult_t)99), "unknown");
  ASSERT_CONTAINS(ncclGetErrorString(ncclInvalidArgument), "ncclGetLastError names it");
  for (int r = 0; r < 8; r++) /* no string sends this API's caller to dmaccl's calls */
    ASSERT_TRUE(!strstr(ncclGetErrorString((ncclResult_t)r), "dmacclComm"));
  ncclUniqueId id;
  ASSERT_EQ_INT(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = (ncclComm_t)(uintptr_t)0x5678;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.magic = 0x1234;
  ASSERT_EQ_INT(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "magic");
  cfg = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  cfg.size = 4;
  ASSERT_EQ_INT(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "size");
  cfg = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  cfg.CTAPolicy = 7;
  ASSERT_EQ_INT(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "ctaPolicy");
  ASSERT_EQ_INT(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "nranks");
  ASSERT_EQ_INT(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "rank 2");
  ASSERT_EQ_INT(ncclCommInitRankScalable(&comm, 1, 0, 0, &id, NULL), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "nId");
  ASSERT_EQ_INT(ncclCommInitRankScalable(&comm, 1, 0, 1, NULL, NULL), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "commIds");
  ASSERT_TRUE(comm == (ncclComm_t)(uintptr_t)0x5678);
  ncclResult_t async;
  ASSERT_EQ_INT(ncclCommGetAsyncError(NULL, &async), ncclInvalidArgument);
  ASSERT_EQ_INT(ncclCommCount(NULL, &v), ncclInvalidArgument);
  return 0;
}

static int testProcesses(int gpu) {
  if (gpu && !mpGpusPresent()) {
    printf("test_nccl_api gpu: SKIPPED: no GPU\n");
    exit(TEST_SKIP_CODE);
  }
  ncArg a = {gpu};
  for (int n = 1; n <= 4; n++) {
    int failed = mpRun(n, body, &a, 300, 0);
    if (failed) {
      TEST_FAIL("%s, %d ranks: %d rank(s) failed", gpu ? "cuda" : "host", n, failed);
      return 1;
    }
  }
  return 0;
}

typedef struct {
  ncclComm_t comm;
  ncclResult_t async;
  char why[320];
} asyncProbe;

/* Polls comm's async error from a thread of its own (up to 10 s), then
 * keeps that thread's ncclGetLastError. */
static void *asyncOnThread(void *arg) {
  asyncProbe *p = arg;
  for (int i = 0; i < 10000 && p->async == ncclSuccess; i++) {
    if (ncclCommGetAsyncError(p->comm, &p->async) != ncclSuccess) break;
    if (p->async == ncclSuccess) usleep(1000);
  }
  snprintf(p->why, sizeof(p->why), "%s", ncclGetLastError(p->comm));
  return NULL;
}

/* ncclCommInitAll on the host executor: ranks as host threads of this
 * process, one thread issuing for all of them in a group (an AllReduce of
 * each rank's values, then a Broadcast from the last rank). */
static int testInitAll(void) {
  enum { N = 3, CNT = 513 };
  ncclComm_t comms[N];
  ASSERT_EQ_INT(ncclCommInitAll(comms, N, NULL), ncclSuccess);
  int32_t *in[N], *out[N];
  for (int r = 0; r < N; r++) {
    in[r] = malloc(CNT * sizeof(int32_t));
    out[r] = malloc(CNT * sizeof(int32_t));
    ASSERT_TRUE(in[r] && out[r]);
    for (int i = 0; i < CNT; i++) in[r][i] = (int32_t)(i * 31 + r * 1000003);
    memset(out[r], 0xA5, CNT * sizeof(int32_t));
  }
  ASSERT_EQ_INT(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(ncclAllReduce(in[r], out[r], CNT, ncclInt32, ncclSum, comms[r], NULL),
                  ncclSuccess);
  ASSERT_EQ_INT(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(dmacclCommSynchronize((dmacclComm_t)(void *)comms[r]), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < CNT; i++) {
      uint32_t want = 0;
      for (int q = 0; q < N; q++) want += (uint32_t)in[q][i];
      ASSERT_TRUE((uint32_t)out[r][i] == want);
    }
  ASSERT_EQ_INT(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(ncclBcast(in[r], CNT, ncclInt32, N - 1, comms[r], NULL), ncclSuccess);
  ASSERT_EQ_INT(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(dmacclCommSynchronize((dmacclComm_t)(void *)comms[r]), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < CNT; i++) ASSERT_TRUE(in[r][i] == (int32_t)(i * 31 + (N - 1) * 1000003));
  /* counts that disagree: another thread's ncclCommGetAsyncError sees the
   * error, and its ncclGetLastError then has the sentence (NCCL's last error
   * is the process's; the disagreement was found on this thread) */
  ASSERT_EQ_INT(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(ncclAllReduce(in[r], out[r], 8 + (r == 1), ncclInt32, ncclSum, comms[r], NULL),
                  ncclSuccess);
  ASSERT_EQ_INT(ncclGroupEnd(), ncclSuccess);
  asyncProbe probe = {comms[0], ncclSuccess, ""};
  pthread_t th;
  ASSERT_EQ_INT(pthread_create(&th, NULL, asyncOnThread, &probe), 0);
  ASSERT_EQ_INT(pthread_join(th, NULL), 0);
  ASSERT_EQ_INT(probe.async, ncclInvalidUsage);
  ASSERT_CONTAINS(probe.why, "count");
  for (int r = 0; r < N; r++) dmacclCommSynchronize((dmacclComm_t)(void *)comms[r]); /* reported */
  /* a refusal of the NCCL names' own (a config that is not NCCL's) fails
   * the group as dmaccl's refusals do: nothing issued, nothing made */
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0x1234;
  ncclUniqueId uid;
  ASSERT_EQ_INT(ncclGetUniqueId(&uid), ncclSuccess);
  ncclComm_t extra = (ncclComm_t)(uintptr_t)9;
  for (int r = 0; r < N; r++) memset(out[r], 0xA5, CNT * sizeof(int32_t));
  ASSERT_EQ_INT(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ_INT(ncclCommInitRankConfig(&extra, 1, uid, 0, &bad), ncclInvalidArgument);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(ncclAllReduce(in[r], out[r], CNT, ncclInt32, ncclSum, comms[r], NULL),
                  ncclSuccess);
  ASSERT_EQ_INT(ncclGroupEnd(), ncclInvalidArgument);
  ASSERT_CONTAINS(ncclGetLastError(NULL), "ncclGroupEnd: a call inside the group failed");
  ASSERT_CONTAINS(ncclGetLastError(NULL), "magic");
  ASSERT_TRUE(extra == (ncclComm_t)(uintptr_t)9);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ_INT(dmacclCommSynchronize((dmacclComm_t)(void *)comms[r]), dmacclSuccess);
    for (int i = 0; i < CNT; i++) ASSERT_TRUE((uint32_t)out[r][i] == 0xA5A5A5A5u);
  }
  /* nested: an inner simulated end only closes its level (as NCCL); the
   * outer end issues the calls */
  ASSERT_EQ_INT(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ_INT(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(ncclAllReduce(in[r], out[r], CNT, ncclInt32, ncclSum, comms[r], NULL),
                  ncclSuccess);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ_INT(ncclGroupSimulateEnd(&sim), ncclSuccess);
  ASSERT_EQ_INT(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(dmacclCommSynchronize((dmacclComm_t)(void *)comms[r]), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < CNT; i++)
      ASSERT_TRUE(out[r][i] == (int32_t)((uint32_t)(i * 31 + (N - 1) * 1000003) * N));
  for (int r = 0; r < N; r++) {
    ASSERT_EQ_INT(ncclCommDestroy(comms[r]), ncclSuccess);
    free(in[r]), free(out[r]);
  }
  return 0;
}

/* NCCL's idiom for several ranks in one thread (and nccl-tests' for one):
 * ncclCommInitRank calls inside a group, made at its end. Process 0 makes
 * ranks 0 and 1 of a 3-rank communicator in one group, process 1 rank 2 in
 * a group of its own; then an AllReduce and an AllGather on every rank,
 * every element compared. Host executor: process 0's one thread issues for
 * both of its ranks in a group. CUDA executor: a thread per rank (a rank of
 * dmacclCommInitRank may wait inside a call for its peers' calls, so one
 * thread cannot drive two of them: docs/nccl.md), and then process 0's
 * one-thread group for both is refused at its end with nothing issued
 * (it hung before the refusal). Before that, a group whose inits disagree
 * (beside one that succeeds, which is freed) fails at its end with nothing
 * written to any comm; a simulated end drops a recorded init, and one with
 * no simInfo is an ordinary end. */
enum { GR_CNT = 1031 };
typedef struct {
  ncclComm_t comm;
  char *buf;
  cudaStream_t st;
  int rank, gpu;
  int rc;
} grRank;

static int32_t grIn[3][GR_CNT];

static void *grAlloc(void *arg) { /* collective: each rank on its own thread */
  grRank *g = arg;
  g->rc =
      g->gpu
          ? cudaSetDevice(0) != cudaSuccess || cudaMalloc((void **)&g->buf, SPAN) != cudaSuccess ||
                cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking) != cudaSuccess
          : dmacclMemAlloc((dmacclComm_t)(void *)g->comm, SPAN, (void **)&g->buf) != dmacclSuccess;
  return NULL;
}

/* rank's inputs, then recv of the AllGather at 1 block in, the AllReduce's at 4 */
static void grIssue(grRank *g) {
  char *b = g->buf;
  ncclResult_t a = ncclAllReduce(b, b + 4 * GR_CNT * 4, GR_CNT, ncclInt32, ncclMax, g->comm, g->st);
  ncclResult_t c = ncclAllGather(b, b + GR_CNT * 4, GR_CNT, ncclInt32, g->comm, g->st);
  g->rc = a != ncclSuccess || c != ncclSuccess;
}

static void *grIssueThread(void *arg) {
  grRank *g = arg;
  if (g->gpu && cudaSetDevice(0) != cudaSuccess) return g->rc = 1, NULL;
  grIssue(g);
  if (!g->rc && g->gpu) g->rc = cudaStreamSynchronize(g->st) != cudaSuccess;
  return NULL;
}

static int groupBody(int proc, int nproc, const dmacclUniqueId *did, void *arg) {
  const ncArg *a = arg;
  int rank = proc; /* (RANK_CHECK's name) */
  (void)nproc;
  if (a->gpu) RANK_CHECK(cudaSetDevice(0) == cudaSuccess);
  ncclUniqueId id;
  memcpy(&id, did, sizeof(id));
  grRank g[2] = {{.rank = proc == 0 ? 0 : 2, .gpu = a->gpu}, {.rank = 1, .gpu = a->gpu}};
  int mine = proc == 0 ? 2 : 1;
  if (proc == 0) { /* a group that cannot succeed: nranks disagree (fresh id) */
    ncclUniqueId other;
    RANK_CHECK(ncclGetUniqueId(&other) == ncclSuccess);
    ncclUniqueId alone;
    RANK_CHECK(ncclGetUniqueId(&alone) == ncclSuccess);
    ncclComm_t x = (ncclComm_t)(uintptr_t)5, y = (ncclComm_t)(uintptr_t)6,
               z = (ncclComm_t)(uintptr_t)7;
    RANK_CHECK(ncclGroupStart() == ncclSuccess);
    RANK_CHECK(ncclCommInitRank(&x, 2, other, 0) == ncclSuccess);
    RANK_CHECK(ncclCommInitRank(&y, 3, other, 1) == ncclSuccess);
    RANK_CHECK(ncclCommInitRank(&z, 1, alone, 0) == ncclSuccess); /* made, then freed */
    RANK_CHECK(ncclGroupEnd() == ncclInvalidArgument);
    RANK_CHECK(strstr(ncclGetLastError(NULL), "nranks") != NULL);
    RANK_CHECK(x == (ncclComm_t)(uintptr_t)5 && y == (ncclComm_t)(uintptr_t)6 &&
               z == (ncclComm_t)(uintptr_t)7);
    /* a simulated end drops a recorded init; with no simInfo it is an end;
     * a simInfo not initialized is refused with the group still open */
    RANK_CHECK(ncclGroupStart() == ncclSuccess);
    RANK_CHECK(ncclCommInitRank(&z, 1, alone, 0) == ncclSuccess);
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER, raw;
    memset(&raw, 0, sizeof(raw));
    RANK_CHECK(ncclGroupSimulateEnd(&raw) == ncclInvalidArgument);
    RANK_CHECK(strstr(ncclGetLastError(NULL), "magic") != NULL);
    RANK_CHECK(ncclGroupSimulateEnd(&sim) == ncclInvalidUsage);
    RANK_CHECK(z == (ncclComm_t)(uintptr_t)7);
    RANK_CHECK(ncclGroupEnd() == ncclInvalidUsage); /* none open */
    RANK_CHECK(ncclGroupStart() == ncclSuccess);
    RANK_CHECK(ncclCommInitRank(&z, 1, alone, 0) == ncclSuccess);
    RANK_CHECK(ncclGroupSimulateEnd(NULL) == ncclSuccess);
    int one = 0;
    RANK_CHECK(z != (ncclComm_t)(uintptr_t)7 && ncclCommCount(z, &one) == ncclSuccess && one == 1);
    RANK_CHECK(ncclCommDestroy(z) == ncclSuccess);
  }
  RANK_CHECK(ncclGroupStart() == ncclSuccess);
  for (int k = 0; k < mine; k++)
    RANK_CHECK(ncclCommInitRank(&g[k].comm, 3, id, g[k].rank) == ncclSuccess);
  ncclResult_t rc = ncclGroupEnd();
  if (rc != ncclSuccess) fprintf(stderr, "process %d: %s\n", proc, ncclGetLastError(NULL));
  RANK_CHECK(rc == ncclSuccess);
  pthread_t th[2];
  for (int k = 0; k < mine; k++) {
    int r = -1;
    RANK_CHECK(ncclCommUserRank(g[k].comm, &r) == ncclSuccess && r == g[k].rank);
    RANK_CHECK(pthread_create(&th[k], NULL, grAlloc, &g[k]) == 0);
  }
  for (int k = 0; k < mine; k++) RANK_CHECK(pthread_join(th[k], NULL) == 0 && g[k].rc == 0);
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < GR_CNT; i++)
      grIn[r][i] = (int32_t)((uint32_t)i * 2654435761u ^ (uint32_t)r * 40503u);
  int32_t got[5 * GR_CNT]; /* the input, the AllGather's 3 blocks, the AllReduce */
  for (int k = 0; k < mine; k++) {
    memset(got, 0xA5, sizeof(got));
    memcpy(got, grIn[g[k].rank], sizeof(grIn[0]));
    RANK_CHECK(toDev(a->gpu, g[k].buf, got, sizeof(got)) == 0);
  }
  if (a->gpu) {
    RANK_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    for (int k = 0; k < mine; k++)
      RANK_CHECK(pthread_create(&th[k], NULL, grIssueThread, &g[k]) == 0);
    for (int k = 0; k < mine; k++) RANK_CHECK(pthread_join(th[k], NULL) == 0 && g[k].rc == 0);
  } else { /* one thread, every rank of this process, one group */
    RANK_CHECK(ncclGroupStart() == ncclSuccess);
    for (int k = 0; k < mine; k++) grIssue(&g[k]);
    RANK_CHECK(ncclGroupEnd() == ncclSuccess);
    for (int k = 0; k < mine; k++) RANK_CHECK(g[k].rc == 0);
    for (int k = 0; k < mine; k++)
      RANK_CHECK(dmacclCommSynchronize((dmacclComm_t)(void *)g[k].comm) == dmacclSuccess);
  }
  for (int k = 0; k < mine; k++) {
    RANK_CHECK(fromDev(a->gpu, got, g[k].buf, sizeof(got)) == 0);
    RANK_CHECK(memcmp(got, grIn[g[k].rank], sizeof(grIn[0])) == 0);
    for (int r = 0; r < 3; r++)
      RANK_CHECK(memcmp(got + (1 + r) * GR_CNT, grIn[r], sizeof(grIn[0])) == 0);
    for (int i = 0; i < GR_CNT; i++) {
      int32_t m = grIn[0][i];
      for (int r = 1; r < 3; r++) m = grIn[r][i] > m ? grIn[r][i] : m;
      RANK_CHECK(got[4 * GR_CNT + i] == m);
    }
  }
  if (a->gpu && mine == 2) { /* one thread for both: refused at the group's end, nothing issued */
    int32_t before[5 * GR_CNT]; /* rank 0's input, its receive blocks poisoned */
    memcpy(before, grIn[0], sizeof(grIn[0]));
    memset(before + GR_CNT, 0x5A, sizeof(before) - sizeof(grIn[0]));
    RANK_CHECK(toDev(1, g[0].buf, before, sizeof(before)) == 0);
    RANK_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    RANK_CHECK(ncclGroupStart() == ncclSuccess);
    for (int k = 0; k < 2; k++)
      RANK_CHECK(ncclAllGather(g[k].buf, g[k].buf + GR_CNT * 4, GR_CNT, ncclInt32, g[k].comm,
                               g[k].st) == ncclSuccess);
    RANK_CHECK(ncclGroupEnd() == ncclInvalidUsage);
    RANK_CHECK(strstr(ncclGetLastError(NULL), "one thread cannot drive two") != NULL);
    RANK_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    RANK_CHECK(fromDev(1, got, g[0].buf, sizeof(got)) == 0);
    RANK_CHECK(memcmp(got, before, sizeof(got)) == 0);
  }
  for (int k = 0; k < mine; k++) {
    if (a->gpu)
      cudaFree(g[k].buf);
    else
      RANK_CHECK(dmacclMemFree((dmacclComm_t)(void *)g[k].comm, g[k].buf) == dmacclSuccess);
  }
  for (int k = 0; k < mine; k++) RANK_CHECK(ncclCommDestroy(g[k].comm) == ncclSuccess);
  return 0;
}

static int testHostProcesses(void) {
  return testProcesses(0);
}
static int testGpuProcesses(void) {
  return testProcesses(1);
}
static int testInitInGroup(int gpu) {
  ncArg a = {gpu};
  int failed = mpRun(2, groupBody, &a, 300, 0);
  if (failed) TEST_FAIL("%s: %d process(es) failed", gpu ? "cuda" : "host", failed);
  return failed != 0;
}
static int testHostInitInGroup(void) {
  return testInitInGroup(0);
}
static int testGpuInitInGroup(void) {
  return testInitInGroup(1);
}

int main(int argc, char **argv) {
  int gpu = argc > 1 && !strcmp(argv[1], "gpu");
  if (!gpu) {
    setenv("DMACCL_EXECUTOR", "host", 1);
    RUN(testNoComm);
    RUN(testHostProcesses);
    RUN(testHostInitInGroup);
    RUN(testInitAll);
  } else {
    RUN(testGpuProcesses);
    RUN(testGpuInitInGroup);
  }
  TEST_EXIT();
}
