/*
 * AlltoAllv as Send/Recv pairs (PLAN_ALGO_PAIRS, plan.h), as NCCL and
 * PyTorch issue it: one group with a Send to and a Recv from every peer, on
 * the Send/Recv channels (p2p.c), and the rank's own block as a local copy.
 *
 * Why: the collective's own forms need every rank's arrays to place a block,
 * so they move lines only after the ranks' calls meet (stagell: staged.c,
 * buildPeerArrays, the built-in choice since 45dc7ef); each pair's channel
 * knows its block from both ends (the sender's sendcounts, the receiver's
 * recvcounts) and chooses by it, lines included, and a group's line moves
 * go out as one kernel (cuda.c, "Held launches"). DMACCL_ALGO or the
 * config chooses pairs.
 *
 * Agreement. Every rank must issue pairs or none for a given call. The
 * table cannot choose pairs by size (planTableCheckPairs), so the choice is
 * the table's for the call's capture state, which every rank shares. A
 * channel is made at its first operation, which a graph capture must not
 * contain: a captured AlltoAllv runs as pairs only once an uncaptured one
 * did, or made the channels where only captured calls run as pairs
 * (corePairsPrepare; comm->pairsReady), which happens at the same call on
 * every rank; before that it runs the collective's own form
 * (coreChooseAlgo). Empty blocks are sent too, so that one call makes
 * every channel and the channels see counts that disagree.
 *
 * Groups. The call is recorded whole (op->pairs) and the outermost
 * dmacclGroupEnd issues its pieces (group.c): a Send/Recv per peer and
 * direction, by channel (the order every rank's channels need), then the
 * self copy (coreP2pOrderKey): on the caller's stream while the channels'
 * copies run on their lanes, or in the kernel held for their lines
 * (cuda.c). The pieces run beside each other, so a group issues them only
 * where it holds nothing else of the set: there a later call of the group
 * on the same communicator, which must follow the AlltoAllv, would run
 * beside its pieces. Otherwise the AlltoAllv runs its collective form
 * (the direct fallback) in its place. Ranks decide alike where they group
 * their calls alike. The host executor, which has no stream order across
 * communicators, waits for the rank's earlier work before it issues the
 * pieces and for the pieces before the group's end returns
 * (coreDrainRank): an AlltoAllv run as pairs there finishes within its
 * call (its collective form, as every host collective, does not).
 */
#include "../exec/exec.h"

/* Whether the table gives op pairs for captured (graph 1) or uncaptured
 * calls: at any size, since it gives pairs at every size or at none. */
static int tablePairs(const coreOp *op, int graph) {
  dmacclComm_t comm = op->comm;
  return op->coll == PLAN_COLL_ALLTOALLV && comm->nranks > 1 && !comm->parent &&
         planSelectIn(&comm->clique->table, op->coll, 0, graph, NULL) == PLAN_ALGO_PAIRS;
}

int coreUsesPairs(const coreOp *op) {
  return tablePairs(op, op->capture) && (!op->capture || op->comm->pairsReady);
}

dmacclResult_t corePairsPrepare(coreOp *op) {
  dmacclComm_t comm = op->comm;
  if (op->capture || comm->pairsReady || !tablePairs(op, 1)) return dmacclSuccess;
  for (int p = 0; p < comm->nranks; p++) {
    dmacclResult_t rc = p == comm->rank ? dmacclSuccess : coreP2pMake(comm, p, op->call);
    if (rc != dmacclSuccess) return rc;
  }
  comm->pairsReady = 1;
  return dmacclSuccess;
}

int corePairsPieces(const coreOp *op, coreOp *pieces) {
  dmacclComm_t comm = op->comm;
  int n = comm->nranks, me = comm->rank, k = 0;
  size_t es = coreTypeSize(op->datatype);
  const size_t *sc = op->vec + (size_t)PLAN_VEC_COUNTS * (size_t)n;
  const size_t *sd = op->vec + (size_t)PLAN_VEC_DISPLS * (size_t)n;
  const size_t *rc = op->vec + (size_t)PLAN_VEC_RCOUNTS * (size_t)n;
  const size_t *rd = op->vec + (size_t)PLAN_VEC_RDISPLS * (size_t)n;
  const char *send = op->sendbuff;
  char *recv = op->recvbuff;
  for (int j = 1; j < n; j++) {
    int to = (me + j) % n, from = (me + n - j) % n;
    pieces[k] = coreP2pOp(1, (void *)(send + sd[to] * es), sc[to], op->datatype, to, comm);
    coreP2pPiece(&pieces[k++], op);
    pieces[k] = coreP2pOp(0, recv + rd[from] * es, rc[from], op->datatype, from, comm);
    coreP2pPiece(&pieces[k++], op);
  }
  if (sc[me])
    pieces[k++] = (coreOp){.comm = comm,
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
  return k;
}

dmacclResult_t corePostPairs(coreOp *op) {
  op->pairs = 1;
  dmacclGroupStart();
  dmacclResult_t rc = coreGroupRecord(op); /* the group's end issues its pieces */
  dmacclResult_t end = dmacclGroupEnd();
  return rc == dmacclSuccess ? end : rc;
}

dmacclResult_t corePostSelf(coreOp *op) {
  op->oneRank = 1; /* issued on the caller's thread: nothing to attach */
  return op->comm->exec->oneRank(op->comm, op, op->sendbuff, op->recvbuff, op->count);
}
