/*
 * Posting and launching. A rank's call is posted to its set's board under
 * the sequence number it has in that rank's order of calls (all ranks call in
 * the same order, so sequence numbers name operations across ranks). When the
 * last rank posts a sequence number, every rank's buffers are known and the
 * operation is launched for all ranks, in sequence order, by whichever thread
 * made it complete. Calls never wait for peers, except when a rank runs more
 * than CORE_BOARD_DEPTH operations ahead of the slowest one.
 */
#include "../exec/exec.h"

#include <string.h>

planAlgo coreChooseAlgo(const coreClique *c, planColl coll, size_t chunkBytes, int capture,
                        const planRange **why) {
  size_t size = (size_t)c->nranks * chunkBytes;
  planAlgo algo = planSelect(&c->table, coll, size, why);
  /* Staged operations use epoch flags and the batch API, which graphs cannot replay. */
  if (planIsStaged(algo) && (capture || size > c->stageBytes)) algo = PLAN_ALGO_PUSH1;
  return algo;
}

void coreSequenceAlgo(coreClique *c, coreOp *op) {
  op->algo = coreChooseAlgo(c, op->coll, op->chunkBytes, op->capture, NULL);
  op->stageIndex = planIsStaged(op->algo) && op->chunkBytes ? ++c->stageCount : 0;
}

static int sameOp(const coreOp *a, const coreOp *b) {
  return a->coll == b->coll && a->count == b->count && a->datatype == b->datatype;
}

/* Launches one complete slot for every rank. Called with the lock held. */
static void launchSlot(coreClique *c, coreBoardSlot *slot) {
  const coreOp *ref = &slot->ops[0];
  const void *send[CORE_MAX_RANKS];
  void *recv[CORE_MAX_RANKS];
  const coreOp *bad = NULL; /* a rank that disagrees with rank 0 */
  for (int r = 0; r < c->nranks; r++) {
    send[r] = slot->ops[r].sendbuff;
    recv[r] = slot->ops[r].recvbuff;
    if (!bad && !sameOp(ref, &slot->ops[r])) bad = &slot->ops[r];
  }
  int agree = bad == NULL;
  execBuffers bufs = {send, recv, NULL};
  /* One selection for all ranks: they must run the same algorithm. */
  size_t size = (size_t)c->nranks * ref->chunkBytes;
  const planRange *why = NULL;
  planAlgo algo = coreChooseAlgo(c, ref->coll, ref->chunkBytes, ref->capture, &why);
  uint64_t stageIndex = planIsStaged(algo) && agree && ref->chunkBytes ? ++c->stageCount : 0;
  if (agree && ref->chunkBytes)
    CORE_INFO("op %llu %s %zu bytes: %s (size range %zu-%zu)", (unsigned long long)slot->seq,
              planCollName(ref->coll), size, planAlgoName(algo), why ? why->lo : 0,
              why ? why->hi : 0);

  for (int r = 0; r < c->nranks; r++) {
    dmacclComm_t comm = c->comms[r];
    const coreOp *op = &slot->ops[r];
    planArgs args = {op->coll,         r,         c->nranks, op->chunkBytes, op->inPlace,
                     CORE_STAGE_SLOTS, stageIndex};
    if (!agree) {
      coreSetAsyncError(comm, dmacclInvalidUsage,
                        "operation %llu: ranks disagree: rank 0 called %s with count %zu of %s, "
                        "rank %d called %s with count %zu of %s; nothing was copied",
                        (unsigned long long)slot->seq, planCollName(ref->coll), ref->count,
                        coreTypeName(ref->datatype), bad->comm->rank, planCollName(bad->coll),
                        bad->count, coreTypeName(bad->datatype));
      args.chunkBytes = 0; /* empty schedule: releases the caller's stream */
    }
    if (planBuild(&args, algo, &comm->sched) != 0) {
      coreSetAsyncError(comm, dmacclSystemError,
                        "operation %llu: out of memory building the schedule",
                        (unsigned long long)slot->seq);
      args.chunkBytes = 0;
      planBuild(&args, algo, &comm->sched); /* an empty schedule allocates nothing */
    }
    dmacclResult_t rc = comm->exec->launch(comm, op, &comm->sched, &bufs);
    if (rc != dmacclSuccess)
      coreSetAsyncError(comm, rc, "operation %llu: launch failed: %s",
                        (unsigned long long)slot->seq, comm->lastError);
  }
}

static void launchReady(coreClique *c) {
  for (;;) {
    coreBoardSlot *slot = &c->slots[c->nextLaunch % CORE_BOARD_DEPTH];
    if (slot->seq != c->nextLaunch || slot->nposted != c->nranks) break;
    launchSlot(c, slot);
    slot->nposted = 0;
    c->nextLaunch++;
    pthread_cond_broadcast(&c->cond);
  }
}

static dmacclResult_t spPost(coreOp *op) {
  dmacclComm_t comm = op->comm;
  coreClique *c = comm->clique;
  pthread_mutex_lock(&c->lock);
  op->seq = comm->posted + 1;
  coreBoardSlot *slot = &c->slots[op->seq % CORE_BOARD_DEPTH];
  /* The slot may still hold an operation CORE_BOARD_DEPTH older. */
  while (slot->nposted > 0 && slot->seq != op->seq) pthread_cond_wait(&c->cond, &c->lock);
  dmacclResult_t rc = comm->exec->post(comm, op);
  if (rc == dmacclSuccess) {
    comm->posted = op->seq;
    slot->seq = op->seq;
    slot->ops[comm->rank] = *op;
    slot->nposted++;
    launchReady(c);
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}

dmacclResult_t coreWaitLaunched(dmacclComm_t comm, uint64_t seq) {
  coreClique *c = comm->clique;
  if (c->mp) return coreMpWaitLaunched(comm, seq);
  pthread_mutex_lock(&c->lock);
  while (c->nextLaunch <= seq && !c->aborting) pthread_cond_wait(&c->cond, &c->lock);
  pthread_mutex_unlock(&c->lock);
  return dmacclSuccess;
}

dmacclResult_t corePostNoAttach(coreOp *op) {
  return op->comm->clique->mp ? coreMpPost(op) : spPost(op);
}

dmacclResult_t coreAttach(coreOp *op) {
  if (!op->capture) return dmacclSuccess;
  /* The caller's stream may go on only once the operation is in the graph. */
  dmacclResult_t rc = coreWaitLaunched(op->comm, op->seq);
  if (rc != dmacclSuccess) return rc;
  return op->comm->exec->attach(op->comm, op);
}

dmacclResult_t corePost(coreOp *op) {
  dmacclResult_t rc = corePostNoAttach(op);
  if (rc != dmacclSuccess) return rc;
  return coreAttach(op);
}
