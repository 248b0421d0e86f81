#include "baseline_nccl.h"
#include "args.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DMACCL_HAVE_NCCL
#include <nccl.h>

#if NCCL_VERSION_CODE >= 22800
#define HAVE_CE 1
/* 2.28 added ncclAlltoAll, ncclGather and ncclScatter */
#define HAVE_A2A_GATHER_SCATTER 1
#endif

struct ncclBase {
  int n;
  int ce; /* copy-engine path: CTA policy ZERO, symmetric windows */
  int devs[64];
  ncclComm_t *comms;
  char version[32];
#ifdef HAVE_CE
  void *bufs[64][2];
  ncclWindow_t wins[64][2];
  int nbufs;
#endif
};

static void setVersion(ncclBase *b) {
  int v = 0;
  ncclGetVersion(&v);
  snprintf(b->version, sizeof(b->version), "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

static ncclDataType_t toNccl(dmacclDataType_t t) {
  switch (t) {
  case dmacclInt8: return ncclInt8;
  case dmacclUint8: return ncclUint8;
  case dmacclInt32: return ncclInt32;
  case dmacclUint32: return ncclUint32;
  case dmacclInt64: return ncclInt64;
  case dmacclUint64: return ncclUint64;
  case dmacclFloat16: return ncclFloat16;
  case dmacclBfloat16: return ncclBfloat16;
  case dmacclFloat64: return ncclFloat64;
  case dmacclFloat8e4m3: return ncclFloat8e4m3;
  case dmacclFloat8e5m2: return ncclFloat8e5m2;
  default: return ncclFloat32;
  }
}

static ncclBase *newBase(int n, int ce, char *err, size_t errlen) {
  /* Never NVLink multicast (NVLS): it can take shared GPUs out of service. */
  setenv("NCCL_NVLS_ENABLE", "0", 1);
#ifndef HAVE_CE
  if (ce) {
    snprintf(err, errlen, "NCCL %d.%d has no copy-engine collectives (2.28 or later)", NCCL_MAJOR,
             NCCL_MINOR);
    return NULL;
  }
#endif
  ncclBase *b = calloc(1, sizeof(*b));
  if (!b || n > 64 || !(b->comms = calloc((size_t)n, sizeof(ncclComm_t)))) {
    snprintf(err, errlen, "out of memory");
    free(b);
    return NULL;
  }
  b->n = n;
  b->ce = ce;
  return b;
}

static ncclConfig_t makeConfig(int ce, int maxCTAs) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (maxCTAs > 0) cfg.maxCTAs = maxCTAs;
#ifdef HAVE_CE
  if (ce) cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
#else
  (void)ce;
#endif
  return cfg;
}

static ncclBase *failInit(ncclBase *b, const char *what, ncclResult_t r, char *err, size_t errlen) {
  snprintf(err, errlen, "%s: %s", what, ncclGetErrorString(r));
  free(b->comms);
  free(b);
  return NULL;
}

ncclBase *ncclBaseInit(int n, const int *devs, int ce, int maxCTAs, char *err, size_t errlen) {
  ncclBase *b = newBase(n, ce, err, errlen);
  if (!b) return NULL;
  for (int i = 0; i < n; i++) b->devs[i] = devs[i];
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return failInit(b, "ncclGetUniqueId", r, err, errlen);
  ncclConfig_t cfg = makeConfig(ce, maxCTAs);
  r = ncclGroupStart();
  for (int i = 0; i < n && r == ncclSuccess; i++) {
    cudaSetDevice(devs[i]);
    r = ncclCommInitRankConfig(&b->comms[i], n, id, i, &cfg);
  }
  ncclResult_t e = ncclGroupEnd();
  if (r == ncclSuccess) r = e;
  if (r != ncclSuccess) return failInit(b, "ncclCommInitRankConfig", r, err, errlen);
  setVersion(b);
  return b;
}

int ncclBaseMakeId(void *id128, char *err, size_t errlen) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) {
    snprintf(err, errlen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
    return -1;
  }
  memcpy(id128, &id, sizeof(id));
  return 0;
}

ncclBase *ncclBaseInitRank(int n, int rank, const void *id128, int ce, int maxCTAs, char *err,
                           size_t errlen) {
  ncclBase *b = newBase(1, ce, err, errlen);
  if (!b) return NULL;
  cudaGetDevice(&b->devs[0]);
  ncclUniqueId id;
  memcpy(&id, id128, sizeof(id));
  ncclConfig_t cfg = makeConfig(ce, maxCTAs);
  ncclResult_t r = ncclCommInitRankConfig(&b->comms[0], n, id, rank, &cfg);
  if (r != ncclSuccess) return failInit(b, "ncclCommInitRankConfig", r, err, errlen);
  setVersion(b);
  return b;
}

int ncclBaseAllocBuffers(ncclBase *b, size_t bytes, void **send, void **recv, char *err,
                         size_t errlen) {
#ifdef HAVE_CE
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < b->n && r == ncclSuccess; i++) {
    cudaSetDevice(b->devs[i]);
    r = ncclMemAlloc(&b->bufs[i][0], bytes);
    if (r == ncclSuccess) r = ncclMemAlloc(&b->bufs[i][1], bytes);
  }
  if (r != ncclSuccess) {
    snprintf(err, errlen, "ncclMemAlloc of %zu bytes: %s", bytes, ncclGetErrorString(r));
    return -1;
  }
  /* Window registration is collective: every rank of the process in one group. */
  r = ncclGroupStart();
  for (int i = 0; i < b->n && r == ncclSuccess; i++)
    for (int k = 0; k < 2 && r == ncclSuccess; k++)
      r = ncclCommWindowRegister(b->comms[i], b->bufs[i][k], bytes, &b->wins[i][k],
                                 NCCL_WIN_COLL_SYMMETRIC);
  ncclResult_t e = ncclGroupEnd();
  if (r == ncclSuccess) r = e;
  if (r != ncclSuccess) {
    snprintf(err, errlen, "ncclCommWindowRegister: %s", ncclGetErrorString(r));
    return -1;
  }
  b->nbufs = b->n;
  for (int i = 0; i < b->n; i++) {
    send[i] = b->bufs[i][0];
    recv[i] = b->bufs[i][1];
  }
  return 0;
#else
  (void)b, (void)bytes, (void)send, (void)recv;
  snprintf(err, errlen, "NCCL without ncclMemAlloc windows");
  return -1;
#endif
}

/* One rank's part of collective c (V forms: vLLM's grouped emulation;
 * sendrecv: nccl-tests' sendrecv_perf ring), inside ncclBaseIssue's group. */
static ncclResult_t issueOne(ncclComm_t comm, int c, const collShape *s, void *send, void *recv,
                             ncclDataType_t t, ncclRedOp_t op, size_t ts, cudaStream_t st) {
  int me = 0, n = s->nranks;
  ncclCommUserRank(comm, &me);
  size_t count = s->count;
  ncclResult_t r = ncclSuccess;
  switch (c) {
  case COLL_ALLGATHER: return ncclAllGather(send, recv, count, t, comm, st);
#ifdef HAVE_A2A_GATHER_SCATTER
  case COLL_ALLTOALL: return ncclAlltoAll(send, recv, count, t, comm, st);
#else
  case COLL_ALLTOALL: /* grouped Send/Recv, as nccl-tests before 2.28 */
    for (int j = 0; j < n && r == ncclSuccess; j++) {
      r = ncclSend((char *)send + (size_t)j * count * ts, count, t, j, comm, st);
      if (r == ncclSuccess)
        r = ncclRecv((char *)recv + (size_t)j * count * ts, count, t, j, comm, st);
    }
    return r;
#endif
  case COLL_ALLREDUCE: return ncclAllReduce(send, recv, count, t, op, comm, st);
  case COLL_REDUCESCATTER: return ncclReduceScatter(send, recv, count, t, op, comm, st);
  case COLL_BROADCAST: return ncclBroadcast(send, recv, count, t, s->root, comm, st);
  case COLL_REDUCE: return ncclReduce(send, recv, count, t, op, s->root, comm, st);
#ifdef HAVE_A2A_GATHER_SCATTER
  case COLL_GATHER: return ncclGather(send, recv, count, t, s->root, comm, st);
  case COLL_SCATTER: return ncclScatter(send, recv, count, t, s->root, comm, st);
#endif
  case COLL_ALLGATHERV:
    for (int j = 0; j < n && r == ncclSuccess; j++)
      r = ncclBroadcast(send, (char *)recv + s->displs[j] * ts, s->counts[j], t, j, comm, st);
    return r;
  case COLL_REDUCESCATTERV:
    for (int j = 0; j < n && r == ncclSuccess; j++)
      r = ncclReduce((char *)send + s->displs[j] * ts, recv, s->counts[j], t, op, j, comm, st);
    return r;
  case COLL_ALLTOALLV:
    for (int j = 0; j < n && r == ncclSuccess; j++) {
      size_t k = (size_t)me * (size_t)n + (size_t)j;
      r = ncclSend((char *)send + s->sdispls[k] * ts, s->sendcounts[k], t, j, comm, st);
      if (r == ncclSuccess)
        r = ncclRecv((char *)recv + s->rdispls[k] * ts, s->recvcounts[k], t, j, comm, st);
    }
    return r;
  case COLL_SENDRECV: /* count elements to the next rank, count from the previous one */
    r = ncclSend(send, count, t, (me + 1) % n, comm, st);
    if (r == ncclSuccess) r = ncclRecv(recv, count, t, (me - 1 + n) % n, comm, st);
    return r;
  default: return ncclInvalidArgument;
  }
}

int ncclBaseIssue(ncclBase *b, int coll, const collShape *s, void *const *send, void *const *recv,
                  dmacclDataType_t type, dmacclRedOp_t op, const cudaStream_t *streams) {
  /* the table's premultiplied sum: an operator of each communicator around
   * the group (the table's scalar), as torch makes one around each call */
  int premul = op == COLL_PREMULSUM && (collTable[coll].flags & COLL_REDUCES);
  ncclRedOp_t ops[COLL_MAX_RANKS];
  unsigned char scalar[8];
  collPremulScalar(type, scalar);
  ncclResult_t r = ncclSuccess;
  int made = 0;
  for (; premul && made < b->n && r == ncclSuccess; made++)
    r = ncclRedOpCreatePreMulSum(&ops[made], scalar, toNccl(type), ncclScalarHostImmediate,
                                 b->comms[made]);
  if (r != ncclSuccess) made--;
  if (r == ncclSuccess) r = ncclGroupStart();
  for (int i = 0; i < b->n && r == ncclSuccess; i++)
    r = issueOne(b->comms[i], coll, s, send[i], recv[i], toNccl(type),
                 premul ? ops[i] : (ncclRedOp_t)op, collTypeSize(type), streams[i]);
  ncclResult_t e = r == ncclSuccess ? ncclGroupEnd() : ncclSuccess;
  if (r == ncclSuccess) r = e;
  for (int i = 0; i < made; i++) ncclRedOpDestroy(ops[i], b->comms[i]);
  if (r != ncclSuccess) fprintf(stderr, "nccl: %s\n", ncclGetErrorString(r));
  return r == ncclSuccess ? 0 : -1;
}

const char *ncclBaseLacks(int coll, int ce) {
#ifndef HAVE_A2A_GATHER_SCATTER
  static char why[160];
  if (coll == COLL_GATHER || coll == COLL_SCATTER) {
    snprintf(why, sizeof(why), "NCCL %d.%d has no ncclGather/ncclScatter (2.28 or later)",
             NCCL_MAJOR, NCCL_MINOR);
    return why;
  }
  if (ce) {
    snprintf(why, sizeof(why), "NCCL %d.%d has no copy-engine collectives (2.28 or later)",
             NCCL_MAJOR, NCCL_MINOR);
    return why;
  }
  return NULL;
#else
  /* NCCL 2.28's copy-engine collectives: AllGather, AlltoAll, Gather, Scatter */
  if (!ce || coll == COLL_ALLGATHER || coll == COLL_ALLTOALL || coll == COLL_GATHER ||
      coll == COLL_SCATTER)
    return NULL;
  if (coll == COLL_SENDRECV)
    return "NCCL's copy-engine path covers AllGather, AlltoAll, Gather and Scatter, not "
           "ncclSend/ncclRecv";
  if (coll >= COLL_ALLGATHERV)
    return "its emulation (grouped Broadcast, Reduce or Send/Recv) has no copy-engine path";
  return collTable[coll].flags & COLL_REDUCES
             ? "NCCL's copy-engine path has no reductions (they need SM kernels)"
             : "NCCL's copy-engine path covers AllGather, AlltoAll, Gather and Scatter only";
#endif
}

const char *ncclBaseVersion(ncclBase *b) {
  return b->version;
}

void ncclBaseFini(ncclBase *b) {
  if (!b) return;
#ifdef HAVE_CE
  if (b->nbufs) {
    ncclGroupStart();
    for (int i = 0; i < b->nbufs; i++)
      for (int k = 0; k < 2; k++) ncclCommWindowDeregister(b->comms[i], b->wins[i][k]);
    ncclGroupEnd();
    for (int i = 0; i < b->nbufs; i++)
      for (int k = 0; k < 2; k++) ncclMemFree(b->bufs[i][k]);
  }
#endif
  for (int i = 0; i < b->n; i++) ncclCommDestroy(b->comms[i]);
  free(b->comms);
  free(b);
}

#else /* built without NCCL */

struct ncclBase {
  int unused;
};

ncclBase *ncclBaseInit(int n, const int *devs, int ce, int maxCTAs, char *err, size_t errlen) {
  (void)n, (void)devs, (void)ce, (void)maxCTAs;
  snprintf(err, errlen, "built without NCCL");
  return NULL;
}
int ncclBaseMakeId(void *id128, char *err, size_t errlen) {
  (void)id128;
  snprintf(err, errlen, "built without NCCL");
  return -1;
}
ncclBase *ncclBaseInitRank(int n, int rank, const void *id128, int ce, int maxCTAs, char *err,
                           size_t errlen) {
  (void)n, (void)rank, (void)id128, (void)ce, (void)maxCTAs;
  snprintf(err, errlen, "built without NCCL");
  return NULL;
}
int ncclBaseAllocBuffers(ncclBase *b, size_t bytes, void **send, void **recv, char *err,
                         size_t errlen) {
  (void)b, (void)bytes, (void)send, (void)recv;
  snprintf(err, errlen, "built without NCCL");
  return -1;
}
int ncclBaseIssue(ncclBase *b, int coll, const collShape *s, void *const *send, void *const *recv,
                  dmacclDataType_t type, dmacclRedOp_t op, const cudaStream_t *streams) {
  (void)b, (void)coll, (void)s, (void)send, (void)recv, (void)type, (void)op, (void)streams;
  return -1;
}
const char *ncclBaseLacks(int coll, int ce) {
  (void)coll, (void)ce;
  return "built without NCCL";
}
const char *ncclBaseVersion(ncclBase *b) {
  (void)b;
  return "none";
}
void ncclBaseFini(ncclBase *b) {
  (void)b;
}
#endif
