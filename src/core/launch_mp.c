/*
 * Posting and launching when ranks are processes. A rank publishes its call
 * on its segment of the shared board; it launches its own part once every
 * peer has published the same sequence number (their buffers are then
 * known). Whoever finds an operation ready launches it: the calling thread
 * when the peers were there first, else the set's progress thread. Launches
 * of one rank happen in sequence order under the set's lock.
 *
 * Flow control: a rank may publish sequence number s only when every peer has
 * launched s - CORE_BOARD_DEPTH, the last reader of the board slot s reuses.
 */
#include "../exec/exec.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static int sameShared(const coreSharedOp *a, const coreSharedOp *b) {
  return a->coll == b->coll && a->count == b->count && a->datatype == b->datatype;
}

/* Drops COPY steps: the handshakes still run, so peers are not left waiting. */
static void keepHandshakesOnly(planSchedule *s) {
  int k = 0;
  for (int i = 0; i < s->nsteps; i++)
    if (s->steps[i].kind != PLAN_STEP_COPY) s->steps[k++] = s->steps[i];
  s->nsteps = k;
}

static void launchOne(coreClique *c, uint64_t seq) {
  dmacclComm_t comm = c->comms[c->localRank];
  int n = c->nranks, me = c->localRank, slot = (int)(seq % CORE_BOARD_DEPTH);
  const coreOp *op = &c->localOps[slot];
  const void *send[CORE_MAX_RANKS];
  void *recv[CORE_MAX_RANKS];
  const coreSharedOp *ref = &coreBoardRank(c, 0)->ops[slot];
  int bad = -1;
  for (int r = 0; r < n && bad < 0; r++)
    if (!sameShared(ref, &coreBoardRank(c, r)->ops[slot])) bad = r;
  size_t size = (size_t)n * op->chunkBytes;
  const planRange *why = NULL;
  planAlgo algo = planSelect(&c->table, op->coll, size, &why);
  planArgs args = {op->coll, me, n, op->chunkBytes, op->inPlace};
  int copies = 1;
  if (bad >= 0) {
    const coreSharedOp *b = &coreBoardRank(c, bad)->ops[slot];
    coreSetAsyncError(comm, dmacclInvalidUsage,
                      "operation %llu: ranks disagree: rank 0 called %s with count %llu of %s, "
                      "rank %d called %s with count %llu of %s; nothing was copied",
                      (unsigned long long)seq, planCollName((planColl)ref->coll),
                      (unsigned long long)ref->count, coreTypeName((dmacclDataType_t)ref->datatype),
                      bad, planCollName((planColl)b->coll), (unsigned long long)b->count,
                      coreTypeName((dmacclDataType_t)b->datatype));
    args.chunkBytes = 0; /* every rank sees the disagreement: all run empty schedules */
  } else {
    for (int r = 0; r < n && copies; r++) {
      const coreSharedOp *o = &coreBoardRank(c, r)->ops[slot];
      if (r == me) {
        send[r] = op->sendbuff;
        recv[r] = op->recvbuff;
        continue;
      }
      void *s = NULL, *d = NULL;
      if (coreImportBuf(comm, r, &o->send, &s) != dmacclSuccess ||
          coreImportBuf(comm, r, &o->recv, &d) != dmacclSuccess) {
        coreSetAsyncError(comm, dmacclRemoteError,
                          "operation %llu: rank %d's buffers cannot be reached from rank %d (%s); "
                          "this rank copied nothing",
                          (unsigned long long)seq, r, me, comm->lastError);
        copies = 0;
      }
      send[r] = s;
      recv[r] = d;
    }
  }
  if (args.chunkBytes)
    CORE_INFO("op %llu %s %zu bytes: %s (size range %zu-%zu)", (unsigned long long)seq,
              planCollName(op->coll), size, planAlgoName(algo), why ? why->lo : 0,
              why ? why->hi : 0);
  if (planBuild(&args, algo, &comm->sched) != 0) {
    coreSetAsyncError(comm, dmacclSystemError,
                      "operation %llu: out of memory building the schedule",
                      (unsigned long long)seq);
    args.chunkBytes = 0;
    planBuild(&args, algo, &comm->sched);
  }
  if (!copies) keepHandshakesOnly(&comm->sched);
  execBuffers bufs = {send, recv};
  dmacclResult_t rc = comm->exec->launch(comm, op, &comm->sched, &bufs);
  if (rc != dmacclSuccess)
    coreSetAsyncError(comm, rc, "operation %llu: launch failed: %s", (unsigned long long)seq,
                      comm->lastError);
  atomic_store_explicit(&coreBoardRank(c, me)->launched, seq, memory_order_release);
}

int coreMpLaunchReady(coreClique *c, int byCaller) {
  dmacclComm_t comm = c->comms[c->localRank];
  int launched = 0;
  while (c->nextLaunch <= comm->posted && !c->aborting) {
    uint64_t seq = c->nextLaunch;
    int slot = (int)(seq % CORE_BOARD_DEPTH);
    /* A captured operation must be issued by the capturing thread, into
     * the capture it belongs to. */
    if (c->localOps[slot].capture && !byCaller) return launched;
    for (int r = 0; r < c->nranks; r++)
      if (atomic_load_explicit(&coreBoardRank(c, r)->ops[slot].seq, memory_order_acquire) != seq)
        return launched;
    launchOne(c, seq);
    c->nextLaunch++;
    launched++;
    pthread_cond_broadcast(&c->cond);
  }
  return launched;
}

/* Every peer has launched seq - CORE_BOARD_DEPTH. */
static int slotFree(coreClique *c, uint64_t seq) {
  if (seq <= CORE_BOARD_DEPTH) return 1;
  for (int r = 0; r < c->nranks; r++)
    if (atomic_load_explicit(&coreBoardRank(c, r)->launched, memory_order_acquire) <
        seq - CORE_BOARD_DEPTH)
      return 0;
  return 1;
}

/* Gives up when the comm is aborting or has an async error. */
static dmacclResult_t stopReason(dmacclComm_t comm) {
  coreClique *c = comm->clique;
  if (__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE))
    return coreError(comm, dmacclInvalidUsage, "the communicator is being aborted");
  dmacclResult_t e = __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE);
  if (e != dmacclSuccess) return coreError(comm, e, "the communicator is broken: %s", c->brokenWhy);
  return dmacclSuccess;
}

/* Yields for a growing while: spins first (peers are usually microseconds
 * away), then sleeps. */
static void backoff(int *round) {
  if (*round < 2000)
    sched_yield();
  else
    usleep(*round < 4000 ? 20 : 200);
  (*round)++;
}

dmacclResult_t coreMpPost(coreOp *op) {
  dmacclComm_t comm = op->comm;
  coreClique *c = comm->clique;
  /* Where peers will find the buffers; fails before anything is issued. */
  const char *call = op->coll == PLAN_COLL_ALLGATHER ? "dmacclAllGather" : "dmacclAlltoAll";
  size_t recvBytes = op->count ? op->chunkBytes * (size_t)comm->nranks : 0;
  size_t sendBytes = op->coll == PLAN_COLL_ALLGATHER && op->count ? op->chunkBytes : recvBytes;
  dmacclResult_t rc = coreExportBuf(comm, op->sendbuff, sendBytes, &op->sendRef, call, "sendbuff");
  if (rc == dmacclSuccess)
    rc = coreExportBuf(comm, op->recvbuff, recvBytes, &op->recvRef, call, "recvbuff");
  if (rc != dmacclSuccess) return rc;

  pthread_mutex_lock(&c->lock);
  uint64_t seq = comm->posted + 1;
  for (int round = 0; !slotFree(c, seq);) {
    coreMpLaunchReady(c, 1);
    if (slotFree(c, seq)) break;
    pthread_mutex_unlock(&c->lock);
    rc = stopReason(comm);
    if (rc != dmacclSuccess) return rc;
    backoff(&round);
    pthread_mutex_lock(&c->lock);
  }
  op->seq = seq;
  rc = comm->exec->post(comm, op);
  if (rc != dmacclSuccess) {
    pthread_mutex_unlock(&c->lock);
    return rc;
  }
  int slot = (int)(seq % CORE_BOARD_DEPTH);
  c->localOps[slot] = *op;
  coreSharedOp *so = &coreBoardRank(c, c->localRank)->ops[slot];
  so->coll = (int32_t)op->coll;
  so->datatype = (int32_t)op->datatype;
  so->inPlace = op->inPlace;
  so->capture = op->capture;
  so->count = op->count;
  so->chunkBytes = op->chunkBytes;
  so->send = op->sendRef;
  so->recv = op->recvRef;
  atomic_store_explicit(&so->seq, seq, memory_order_release);
  comm->posted = seq;
  coreMpLaunchReady(c, 1);
  int pending = c->nextLaunch <= seq;
  pthread_mutex_unlock(&c->lock);
  if (pending) coreProgressWake(c);
  return dmacclSuccess;
}

dmacclResult_t coreMpWaitLaunched(dmacclComm_t comm, uint64_t seq) {
  coreClique *c = comm->clique;
  int round = 0;
  pthread_mutex_lock(&c->lock);
  while (c->nextLaunch <= seq) {
    coreMpLaunchReady(c, 1);
    if (c->nextLaunch > seq) break;
    pthread_mutex_unlock(&c->lock);
    dmacclResult_t rc = stopReason(comm);
    if (rc != dmacclSuccess) return rc;
    backoff(&round);
    pthread_mutex_lock(&c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return dmacclSuccess;
}
