/* What the core knows of one call: its planner arguments, whether two
 * ranks' calls agree, and copies of the V forms' arrays. */
#include "core.h"
#include "../base/reduce.h"
#include "../base/reduce_math.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void coreStageArgs(planArgs *a, const coreOp *op, uint64_t idx) {
  a->stageSlots = op->capture ? CORE_GRAPH_STAGE_SLOTS : CORE_STAGE_SLOTS;
  a->stageIndex = idx;
  a->stageEntry = op->capture && idx == 1;
  a->stageSelfLate = op->capture; /* no batch command in a graph (staged.c) */
  int kw = op->comm->clique->kernelWait;
  a->kernelWait = kw == 2 || (kw == 1 && op->capture);
  a->lineBytes = coreLineBytes(op->comm->clique);
  /* pull1's AllReduce signals from its kernel where no two ranks share a
   * GPU (one process: their signals are events; several processes: the
   * form is not measured there); eager steps are issued in list order */
  a->kernelSignals = !op->comm->clique->gpuShared;
  a->listOrder = !op->capture;
}

planArgs coreOpArgs(const coreOp *op, int rank, int nranks, const size_t *const *vecs,
                    size_t scratchBytes) {
  planArgs a = {.coll = op->coll,
                .rank = rank,
                .nranks = nranks,
                .count = op->count,
                .elemSize = coreTypeSize(op->datatype),
                .dtype = (int)op->datatype,
                .redop = (int)op->redop,
                .root = op->root,
                .inPlace = op->inPlace,
                .vec = vecs,
                .scratchBytes = scratchBytes,
                .notify = op->notify};
  coreStageArgs(&a, op, op->stageIndex);
  return a;
}

size_t *coreVecDup(const coreOp *op) {
  size_t n = coreVecLen(op, op->comm->nranks);
  size_t *v = n ? malloc(n * sizeof(*v)) : NULL;
  if (v) memcpy(v, op->vec, n * sizeof(*v));
  return v;
}

/* A premultiplied sum's scalar for a sentence: its value, or where it is. */
static void scalarText(const coreOp *op, char *buf, size_t len) {
  uint64_t b = op->premulBits;
  if (op->premulPtr) {
    snprintf(buf, len, "a scalar in device memory");
    return;
  }
  double f = 0;
  switch (op->datatype) {
  case dmacclInt8: snprintf(buf, len, "%d", (int)(int8_t)b); return;
  case dmacclUint8: snprintf(buf, len, "%u", (unsigned)(uint8_t)b); return;
  case dmacclInt32: snprintf(buf, len, "%d", (int)(int32_t)b); return;
  case dmacclUint32: snprintf(buf, len, "%u", (unsigned)(uint32_t)b); return;
  case dmacclInt64: snprintf(buf, len, "%lld", (long long)(int64_t)b); return;
  case dmacclUint64: snprintf(buf, len, "%llu", (unsigned long long)b); return;
  case dmacclFloat16: f = rmHalfToFloat((uint16_t)b); break;
  case dmacclBfloat16: f = rmBf16ToFloat((uint16_t)b); break;
  case dmacclFloat32: f = rmBitsToFloat((uint32_t)b); break;
  case dmacclFloat64: memcpy(&f, &b, sizeof(f)); break;
  case dmacclFloat8e4m3: f = rmE4m3ToFloat((uint8_t)b); break;
  case dmacclFloat8e5m2: f = rmE5m2ToFloat((uint8_t)b); break;
  default: break;
  }
  snprintf(buf, len, "%.9g", f);
}

/* Arrays of a V form as one sentence fragment: "[3 0 5]". */
static void arrayText(const size_t *v, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < n && used + 24 < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%zu", i ? " " : "[", v[i]);
  if (used + 2 < len) snprintf(buf + used, len - used, "]");
}

int coreOpDiffer(const coreOp *a, const size_t *avec, const coreOp *b, const size_t *bvec,
                 int nranks, char *why, size_t whylen) {
  const planCollInfo *ci = planCollOf(a->coll);
  int ra = a->comm->rank, rb = b->comm->rank;
  const dmacclComm_t ch = a->comm->parent ? a->comm : NULL; /* a Send/Recv channel's */
  if (ch && a->coll == b->coll && (a->datatype != b->datatype || a->count != b->count)) {
    /* rank 0 of a channel sends, rank 1 receives (p2p.c) */
    const coreOp *s = ra == 0 ? a : b, *r = ra == 0 ? b : a;
    snprintf(why, whylen, "rank %d sends %zu of %s to rank %d, which receives %zu of %s",
             ch->parentRank[0], s->count, coreTypeName(s->datatype), ch->parentRank[1], r->count,
             coreTypeName(r->datatype));
    return 1;
  }
  if (a->coll != b->coll || a->datatype != b->datatype || (!ci->vector && a->count != b->count)) {
    snprintf(why, whylen,
             "rank %d called %s with count %zu of %s, rank %d called %s with count %zu of %s", ra,
             planCollName(a->coll), a->count, coreTypeName(a->datatype), rb, planCollName(b->coll),
             b->count, coreTypeName(b->datatype));
    return 1;
  }
  if (ci->reduces && a->redop != b->redop) {
    snprintf(why, whylen, "rank %d called %s with op %s, rank %d with op %s", ra, ci->call,
             baseRedOpName(a->redop), rb, baseRedOpName(b->redop));
    return 1;
  }
  /* immediate scalars only: a device scalar's value is not known here */
  if (ci->reduces && a->redop == BASE_PREMULSUM && !a->premulPtr && !b->premulPtr &&
      a->premulBits != b->premulBits) {
    char x[48], y[48];
    scalarText(a, x, sizeof(x));
    scalarText(b, y, sizeof(y));
    snprintf(why, whylen,
             "rank %d called %s with a premultiplied sum by %s, rank %d by %s (every rank must "
             "pass the same scalar)",
             ra, ci->call, x, rb, y);
    return 1;
  }
  if (ci->rooted && a->root != b->root) {
    snprintf(why, whylen, "rank %d called %s with root %d, rank %d with root %d", ra, ci->call,
             a->root, rb, b->root);
    return 1;
  }
  if (!ci->vector) return 0;
  char x[96], y[96];
  if (!ci->peerArrays) { /* the same arrays everywhere */
    for (int k = 0; k < 2; k++)
      if (memcmp(avec + (size_t)k * nranks, bvec + (size_t)k * nranks,
                 (size_t)nranks * sizeof(size_t))) {
        arrayText(avec + (size_t)k * nranks, nranks, x, sizeof(x));
        arrayText(bvec + (size_t)k * nranks, nranks, y, sizeof(y));
        snprintf(why, whylen, "rank %d called %s with %s %s, rank %d with %s", ra, ci->call,
                 k ? "displs" : "counts", x, rb, y);
        return 1;
      }
    return 0;
  }
  /* AlltoAllv: what a sends to b is what b receives from a, both ways. */
  const size_t *as = avec + (size_t)PLAN_VEC_COUNTS * nranks,
               *ar = avec + (size_t)PLAN_VEC_RCOUNTS * nranks;
  const size_t *bs = bvec + (size_t)PLAN_VEC_COUNTS * nranks,
               *br = bvec + (size_t)PLAN_VEC_RCOUNTS * nranks;
  if (as[rb] != br[ra] || bs[ra] != ar[rb]) {
    int fwd = as[rb] != br[ra];
    snprintf(why, whylen,
             "rank %d's sendcounts[%d] is %zu but rank %d's recvcounts[%d] is %zu (%s)",
             fwd ? ra : rb, fwd ? rb : ra, fwd ? as[rb] : bs[ra], fwd ? rb : ra, fwd ? ra : rb,
             fwd ? br[ra] : ar[rb], ci->call);
    return 1;
  }
  return 0;
}

/* Operators of dmacclRedOpCreatePreMulSum: the slot of comm's table that
 * holds op, or -1 (core.h: values are unique in the process). memLock held. */
static int slotOf(dmacclComm_t comm, dmacclRedOp_t op) {
  if ((long)op < CORE_REDOP_FIRST) return -1;
  for (int i = 0; i < comm->nredOps; i++)
    if (comm->redOps[i].live && comm->redOps[i].value == (int)op) return i;
  return -1;
}

/* The next operator value: CORE_REDOP_FIRST, +1, ... up to INT_MAX, then
 * again from CORE_REDOP_FIRST. */
static int nextRedOpValue(void) {
  static unsigned count;
  unsigned k = __atomic_fetch_add(&count, 1u, __ATOMIC_RELAXED);
  return CORE_REDOP_FIRST + (int)(k % (unsigned)(INT_MAX - CORE_REDOP_FIRST + 1));
}

dmacclResult_t coreResolveRedOp(coreOp *op, const char *call) {
  dmacclComm_t comm = op->comm;
  op->premulPtr = NULL;
  op->premulBits = 0;
  if ((unsigned)op->redop < dmacclNumOps) return dmacclSuccess;
  pthread_mutex_lock(&comm->memLock);
  int i = slotOf(comm, op->redop);
  coreRedOp r = i >= 0 ? comm->redOps[i] : (coreRedOp){0};
  pthread_mutex_unlock(&comm->memLock);
  if (i < 0)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: op %d is neither a dmacclRedOp_t (0 to %d) nor an operator of this "
                     "communicator's dmacclRedOpCreatePreMulSum (made on another one, or "
                     "destroyed?)",
                     call, (int)op->redop, dmacclNumOps - 1);
  if (r.datatype != op->datatype)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: op %d is a premultiplied sum of %s, the call's datatype is %s", call,
                     (int)op->redop, coreTypeName(r.datatype), coreTypeName(op->datatype));
  op->redop = BASE_PREMULSUM;
  op->premulPtr = r.ptr;
  op->premulBits = r.bits;
  return dmacclSuccess;
}

dmacclResult_t dmacclRedOpCreatePreMulSum(dmacclRedOp_t *op, void *scalar,
                                          dmacclDataType_t datatype,
                                          dmacclScalarResidence_t residence, dmacclComm_t comm) {
  const char *call = "dmacclRedOpCreatePreMulSum";
  dmacclResult_t rc = coreEnter(comm, call);
  if (rc != dmacclSuccess) return rc;
  size_t size = coreTypeSize(datatype);
  if (!op)
    rc = coreError(comm, dmacclInvalidArgument, "%s: op is NULL (where the operator goes)", call);
  else if (!scalar)
    rc = coreError(comm, dmacclInvalidArgument, "%s: scalar is NULL", call);
  else if (!size)
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: datatype %d is not a dmacclDataType_t (valid values are 0 to %d)", call,
                   (int)datatype, dmacclNumTypes - 1);
  else if (residence != dmacclScalarDevice && residence != dmacclScalarHostImmediate)
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: residence %d is neither dmacclScalarDevice (0) nor "
                   "dmacclScalarHostImmediate (1)",
                   call, (int)residence);
  if (rc != dmacclSuccess) {
    coreLeave(comm);
    return rc;
  }
  coreRedOp r = {.live = 1, .datatype = datatype};
  if (residence == dmacclScalarHostImmediate)
    memcpy(&r.bits, scalar, size); /* the low bytes (little-endian: the value) */
  else
    r.ptr = scalar;
  pthread_mutex_lock(&comm->memLock);
  int i = 0;
  while (i < comm->nredOps && comm->redOps[i].live) i++;
  if (i == comm->nredOps) {
    int cap = comm->nredOps ? 2 * comm->nredOps : 8;
    coreRedOp *m = cap <= CORE_REDOP_MAX ? realloc(comm->redOps, (size_t)cap * sizeof(*m)) : NULL;
    if (m) {
      memset(m + comm->nredOps, 0, (size_t)(cap - comm->nredOps) * sizeof(*m));
      comm->redOps = m;
      comm->nredOps = cap;
    }
  }
  if (i < comm->nredOps) {
    r.value = nextRedOpValue();
    comm->redOps[i] = r;
    *op = (dmacclRedOp_t)r.value;
  }
  pthread_mutex_unlock(&comm->memLock);
  if (i >= CORE_REDOP_MAX)
    rc = coreError(comm, dmacclInvalidUsage,
                   "%s: this communicator holds %d operators already (destroy some with "
                   "dmacclRedOpDestroy)",
                   call, CORE_REDOP_MAX);
  else if (i >= comm->nredOps)
    rc = coreError(comm, dmacclSystemError, "%s: out of memory", call);
  coreLeave(comm);
  return rc;
}

dmacclResult_t dmacclRedOpDestroy(dmacclRedOp_t op, dmacclComm_t comm) {
  const char *call = "dmacclRedOpDestroy";
  dmacclResult_t rc = coreEnter(comm, call);
  if (rc != dmacclSuccess) return rc;
  pthread_mutex_lock(&comm->memLock);
  int i = slotOf(comm, op);
  if (i >= 0) comm->redOps[i].live = 0;
  pthread_mutex_unlock(&comm->memLock);
  if ((unsigned)op < dmacclNumOps)
    rc = coreError(comm, dmacclInvalidArgument, "%s: op %d is a built-in operator (%s)", call,
                   (int)op, baseRedOpName(op));
  else if (i < 0)
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: op %d is not an operator of this communicator (made on another one, or "
                   "destroyed already)",
                   call, (int)op);
  coreLeave(comm);
  return rc;
}
