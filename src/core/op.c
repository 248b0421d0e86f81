/* What the core knows of one call: its planner arguments, whether two
 * ranks' calls agree, and copies of the V forms' arrays. */
#include "core.h"
#include "../base/reduce.h"

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
