/*
 * AlltoAllv as Send/Recv pairs (PLAN_ALGO_PAIRS, plan.h), as NCCL and
 * PyTorch issue it: one group with a Send to and a Recv from every peer, on
 * the Send/Recv channels (p2p.c), and the rank's own block as a local copy.
 *
 * Why: the collective's own forms need every rank's arrays to place a block,
 * so they are never staged and never move lines; each pair's channel knows
 * its block from both ends (the sender's sendcounts, the receiver's
 * recvcounts) and chooses by it, lines included, and a group's line moves
 * go out as one kernel (cuda.c, "Held launches").
 *
 * Agreement. Every rank must issue pairs or none for a given call. The
 * table cannot choose pairs by size (planTableParse), so the choice is the
 * table's for the call's capture state, which every rank shares. A channel
 * is made at its first operation, which a graph capture must not contain:
 * a captured AlltoAllv runs as pairs only once an uncaptured one did, or
 * made the channels where only captured calls run as pairs
 * (corePairsPrepare; comm->pairsReady), which happens at the same call on
 * every rank, and before that it runs the collective's own form
 * (coreChooseAlgo). Empty
 * blocks are sent too, so that one call makes every channel and the
 * channels see counts that disagree.
 *
 * Order. The group posts the Send/Recv calls by channel (group.c), the
 * order every rank's channels need, then the self copy (coreP2pOrderKey):
 * on the caller's stream while the channels' copies run on their lanes, or
 * in the kernel held for their lines (cuda.c), not before either.
 */
#include "../exec/exec.h"

int coreUsesPairs(const coreOp *op) {
  dmacclComm_t comm = op->comm;
  if (op->coll != PLAN_COLL_ALLTOALLV || comm->nranks < 2 || comm->parent) return 0;
  /* any size: the table gives pairs at every size or at none */
  if (planSelectIn(&comm->clique->table, op->coll, 0, op->capture, NULL) != PLAN_ALGO_PAIRS)
    return 0;
  return !op->capture || comm->pairsReady;
}

dmacclResult_t corePairsPrepare(coreOp *op) {
  dmacclComm_t comm = op->comm;
  if (op->coll != PLAN_COLL_ALLTOALLV || comm->nranks < 2 || comm->parent || op->capture ||
      comm->pairsReady ||
      planSelectIn(&comm->clique->table, op->coll, 0, 1, NULL) != PLAN_ALGO_PAIRS)
    return dmacclSuccess;
  for (int p = 0; p < comm->nranks; p++) {
    dmacclResult_t rc = p == comm->rank ? dmacclSuccess : coreP2pMake(comm, p, op->call);
    if (rc != dmacclSuccess) return rc;
  }
  comm->pairsReady = 1;
  return dmacclSuccess;
}

dmacclResult_t corePostPairs(coreOp *op) {
  dmacclComm_t comm = op->comm;
  int n = comm->nranks, me = comm->rank;
  size_t es = coreTypeSize(op->datatype);
  const size_t *sc = op->vec + (size_t)PLAN_VEC_COUNTS * (size_t)n;
  const size_t *sd = op->vec + (size_t)PLAN_VEC_DISPLS * (size_t)n;
  const size_t *rc_ = op->vec + (size_t)PLAN_VEC_RCOUNTS * (size_t)n;
  const size_t *rd = op->vec + (size_t)PLAN_VEC_RDISPLS * (size_t)n;
  const char *send = op->sendbuff;
  char *recv = op->recvbuff;
  int mark = coreGroupMark();
  dmacclGroupStart();
  dmacclResult_t rc = dmacclSuccess;
  if (sc[me]) {
    coreOp self = {.comm = comm,
                   .coll = op->coll,
                   .call = op->call,
                   .sendbuff = send + sd[me] * es,
                   .recvbuff = recv + rd[me] * es,
                   .count = sc[me] * es,
                   .datatype = dmacclUint8,
                   .stream = op->stream,
                   .capture = op->capture,
                   .captureId = op->captureId,
                   .self = 1};
    rc = coreGroupRecord(&self);
  }
  for (int k = 1; k < n && rc == dmacclSuccess; k++) {
    int to = (me + k) % n, from = (me + n - k) % n;
    coreOp s = coreP2pOp(1, (void *)(send + sd[to] * es), sc[to], op->datatype, to, comm);
    coreOp r = coreP2pOp(0, recv + rd[from] * es, rc_[from], op->datatype, from, comm);
    coreP2pPiece(&s, op);
    coreP2pPiece(&r, op);
    rc = coreGroupRecord(&s);
    if (rc == dmacclSuccess) rc = coreGroupRecord(&r);
  }
  if (rc != dmacclSuccess) coreGroupDrop(mark); /* none of it, rather than a part */
  dmacclResult_t end = dmacclGroupEnd();
  if (rc == dmacclSuccess) rc = end;
  if (rc == dmacclSuccess && !op->capture) comm->pairsReady = 1;
  return rc;
}

dmacclResult_t corePostSelf(coreOp *op) {
  dmacclComm_t comm = op->comm;
  op->oneRank = 1; /* issued on the caller's thread: nothing to attach */
  /* The host executor copies at once, on this thread: after the rank's
   * earlier operations, whose peers may still read or write these buffers
   * (a stream would order it after them), this call's Send/Recv calls
   * among them. Their errors are theirs: the rank's own block is copied. */
  if (!comm->exec->launchBeforeReturn) coreDrainRank(comm);
  return comm->exec->oneRank(comm, op, op->sendbuff, op->recvbuff, op->count);
}
