/*
 * Posting and launching when ranks are processes. A rank publishes its call
 * on its segment of the shared board and launches its own part inside the
 * call: a staged operation at once (it touches no peer buffer), a direct one,
 * twoshot (it stores into the peers' receive buffers) and AlltoAllv's
 * stagell (its blocks' places are in the peers' arrays) once every peer has
 * published the same sequence number (their buffers and arrays are then
 * known: planRunsAtCall).
 * So a call returns once its commands are queued, and nothing is queued on
 * the caller's stream before the work it waits for (docs/architecture.md,
 * queue safety). Launches of one rank happen in
 * sequence order under the set's lock.
 *
 * Flow control: a rank may publish sequence number s only when every peer has
 * launched and checked s - CORE_BOARD_DEPTH, the last reader of the board
 * slot s reuses.
 */
#include "../exec/exec.h"

#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* Rank r's call of board slot `slot` as a coreOp (what the peers published). */
_Static_assert(sizeof(size_t) == sizeof(uint64_t), "the board keeps arrays as 64-bit words");

static coreOp sharedOp(coreClique *c, int r, int slot, const size_t **vec) {
  const coreSharedOp *o = &coreBoardRank(c, r)->ops[slot];
  coreOp op = {.comm = c->comms[c->localRank],
               .coll = (planColl)o->coll,
               .count = o->count,
               .datatype = (dmacclDataType_t)o->datatype,
               .redop = (dmacclRedOp_t)o->redop,
               .root = o->root,
               .premulPtr = o->premulDevice ? (const void *)o : NULL, /* compared as "on device" */
               .premulBits = o->premulBits};
  *vec = (const size_t *)coreBoardVec(c, r, slot);
  return op;
}

/* -1 when every rank's call of slot agrees, else a rank that disagrees and
 * why. Every rank sees the same board, so every rank reaches the same
 * verdict. */
static int findDisagreement(coreClique *c, int slot, char *why, size_t whylen) {
  int n = c->nranks;
  /* Every rank published the same fields of a form without arrays: they
   * agree (what coreOpDiffer compares is among them), and no coreOp is
   * built (0.1-0.2 us of each call's comparing, 2x H100). */
  const coreSharedOp *o0 = &coreBoardRank(c, 0)->ops[slot];
  int same = (unsigned)o0->coll < PLAN_NUM_COLLS && !planCollOf((planColl)o0->coll)->vector;
  for (int r = 1; r < n && same; r++) {
    const coreSharedOp *o = &coreBoardRank(c, r)->ops[slot];
    same = o->coll == o0->coll && o->datatype == o0->datatype && o->count == o0->count &&
           o->redop == o0->redop && o->root == o0->root && o->premulDevice == o0->premulDevice &&
           o->premulBits == o0->premulBits;
  }
  if (same) return -1;
  const size_t *va, *vb;
  coreOp a0 = sharedOp(c, 0, slot, &va);
  int pairs = (unsigned)a0.coll < PLAN_NUM_COLLS && planCollOf(a0.coll)->peerArrays;
  for (int a = 0; a < (pairs ? n : 1); a++) {
    coreOp A = sharedOp(c, a, slot, &va);
    for (int b = a + 1; b < n; b++) {
      coreOp B = sharedOp(c, b, slot, &vb);
      if ((unsigned)A.coll >= PLAN_NUM_COLLS || (unsigned)B.coll >= PLAN_NUM_COLLS) {
        snprintf(why, whylen, "rank %d or %d published an unknown collective", a, b);
        return b;
      }
      /* coreOpDiffer names ranks by comm: fake them by rank numbers (a
       * channel's too: its parent's ranks) */
      dmacclComm_t own = c->comms[c->localRank];
      struct dmacclComm ca = {.rank = a, .parent = own ? own->parent : NULL},
                        cb = {.rank = b, .parent = ca.parent};
      if (own) memcpy(ca.parentRank, own->parentRank, sizeof(ca.parentRank));
      memcpy(cb.parentRank, ca.parentRank, sizeof(cb.parentRank));
      A.comm = &ca;
      B.comm = &cb;
      if (coreOpDiffer(&A, va, &B, vb, n, why, whylen)) return b;
    }
  }
  return -1;
}

/* -1 when every rank runs slot's operation with the same protocol
 * (algorithm, staged number, captured or not), else a rank that does not
 * and why. Settings the set does not agree on at init (the selection table,
 * DMACCL_ALGO, a tuning file) or calls captured on some ranks or at
 * different places of their captures lead here. */
static int protoDisagreement(coreClique *c, int slot, char *why, size_t whylen) {
  const coreSharedOp *o0 = &coreBoardRank(c, 0)->ops[slot];
  int call0 = planRunsAtCall((planColl)o0->coll, (planAlgo)o0->algo);
  for (int q = 1; q < c->nranks; q++) {
    const coreSharedOp *o = &coreBoardRank(c, q)->ops[slot];
    int call = planRunsAtCall((planColl)o->coll, (planAlgo)o->algo);
    if (call != call0 && o->coll != o0->coll) { /* e.g. AllGatherV's stagell, AlltoAllv's */
      snprintf(why, whylen,
               "rank 0 runs it as %s's %s%s, rank %d as %s's %s%s: one launches at its call, the "
               "other after every rank's call; the ranks called different collectives",
               planCollName((planColl)o0->coll), planAlgoName((planAlgo)o0->algo),
               call0 ? " at the call" : "", q, planCollName((planColl)o->coll),
               planAlgoName((planAlgo)o->algo), call ? " at the call" : "");
      return q;
    }
    if (o->algo == o0->algo && o->stage == o0->stage && o->capture == o0->capture) continue;
    snprintf(why, whylen,
             "rank 0 runs it as %s%s (staged number %u), rank %d as %s%s (staged number %u): "
             "their algorithm tables differ (DMACCL_ALGO, DMACCL_TUNE_FILE, the config), or "
             "one captured it into a CUDA graph and the other did not, or they captured it at "
             "different places of their captures, or one called the ...Notify form and the "
             "other the plain call",
             planAlgoName((planAlgo)o0->algo), o0->capture ? " in a graph" : "", o0->stage, q,
             planAlgoName((planAlgo)o->algo), o->capture ? " in a graph" : "", o->stage);
    return q;
  }
  return -1;
}

static void breakProtocols(coreClique *c, uint64_t seq, const char *why) {
  char broke[640];
  snprintf(broke, sizeof(broke),
           "operation %llu: ranks ran different protocols (%s); call dmacclCommAbort",
           (unsigned long long)seq, why);
  coreBreak(c, dmacclInvalidUsage, broke);
}

/* Ranks that disagree about a stagell operation wrote lines of other
 * lengths or places than their peers read: a rank may wait for lines that
 * never come, and lines left in a slot would be taken by a later operation
 * (plan.h LINES). */
static void breakLines(coreClique *c, uint64_t seq, const char *why) {
  char broke[640];
  snprintf(broke, sizeof(broke),
           "operation %llu (stagell): ranks disagree (%s): its line slots cannot recover; call "
           "dmacclCommAbort",
           (unsigned long long)seq, why);
  coreBreak(c, dmacclInvalidUsage, broke);
}

/* Launched at the call, before the peers call, and compared with their calls
 * later: the staged operations that touch no peer buffer or arrays (not
 * twoshot, nor AlltoAllv's stagell: planRunsAtCall). */
static int atOnce(const coreOp *op) {
  return planRunsAtCall(op->coll, op->algo);
}

static void reportDisagreement(coreClique *c, uint64_t seq, const char *why, const char *outcome) {
  coreSetOpError(c->comms[c->localRank], dmacclInvalidUsage,
                 "operation %llu: ranks disagree: %s; %s", (unsigned long long)seq, why, outcome);
}

static void launchOne(coreClique *c, uint64_t seq) {
  dmacclComm_t comm = c->comms[c->localRank];
  int n = c->nranks, me = c->localRank, slot = (int)(seq % CORE_BOARD_DEPTH);
  const coreOp *op = &c->localOps[slot];
  const void *send[CORE_MAX_RANKS];
  void *recv[CORE_MAX_RANKS];
  const size_t *vecs[CORE_MAX_RANKS];
  /* the disagreement's reference arrays, read while the schedule is built */
  const size_t *refVecs[CORE_MAX_RANKS];
  int early = atOnce(op); /* launched before the peers call */
  memset(send, 0, sizeof(void *) * (size_t)n);
  memset(recv, 0, sizeof(void *) * (size_t)n);
  memset(vecs, 0, sizeof(void *) * (size_t)n);
  /* A staged operation reads only its own arrays (the same on every rank). */
  for (int r = 0; r < n; r++)
    if (r == me || !early) vecs[r] = (const size_t *)coreBoardVec(c, r, slot);
  coreLaunch l = {.comm = comm,
                  .op = op,
                  .bufs = {send, recv, NULL, NULL, NULL, op->arrived, op->arrivedValue,
                           op->premulPtr, op->premulBits},
                  .args = coreOpArgs(op, me, n, vecs, c->scratchBytes)};
  send[me] = op->sendbuff;
  recv[me] = op->recvbuff;
  /* A staged operation touches no peer buffer and may run before the peers
   * have called: it is compared with their calls later (checkStaged). */
  char why[384], proto[384];
  int argsDiffer = !early && findDisagreement(c, slot, why, sizeof(why)) >= 0;
  if (!early && protoDisagreement(c, slot, proto, sizeof(proto)) >= 0) {
    /* a staged peer may already wait for this rank */
    breakProtocols(c, seq, argsDiffer ? why : proto);
    l.empty = 1;
  } else if (argsDiffer) {
    reportDisagreement(c, seq, why, "nothing was copied");
    if (planIsStaged(op->algo)) {
      /* twoshot took its staged number at the call: the slot argument
       * (staged.c) needs every numbered operation to exchange DATA, so
       * every rank runs the handshakes of one schedule, built from rank 0's
       * call (the same board everywhere: the same shape on every rank) */
      const size_t *v0;
      coreOp ref = sharedOp(c, 0, slot, &v0);
      for (int r = 0; r < n; r++) refVecs[r] = v0;
      ref.capture = op->capture;
      ref.stageIndex = op->stageIndex;
      l.args = coreOpArgs(&ref, me, n, refVecs, c->scratchBytes);
      /* AlltoAllv's stagell: the form that meets every peer (its lines
       * would leave no step: staged.c, buildPeerArrays) */
      if (planCollOf(op->coll)->peerArrays) l.args.lineBytes = 0;
      l.handshakesOnly = 1;
    } else {
      l.empty = 1; /* every rank sees the disagreement: all run empty schedules */
    }
  } else if (!early) {
    /* AlltoAllv's stagell as lines reaches no peer's buffer: no import
     * that could fail on one rank only (its lines would then be missing) */
    int lines = op->algo == PLAN_ALGO_STAGELL && planVMovesLines(&l.args);
    /* twoshot and push1's AllReduce write the peers' receive buffers only;
     * push1's other reductions neither (their scratch buffers) */
    int pushes =
        op->algo == PLAN_ALGO_PUSH1 && planCollOf(op->coll)->reduces && planPushRuns(&l.args);
    int needSend = op->algo != PLAN_ALGO_TWOSHOT && !pushes,
        needRecv = !pushes || planCollOf(op->coll)->shareResult;
    for (int r = 0; r < n && !l.handshakesOnly && !lines; r++) {
      if (r == me) continue;
      const coreSharedOp *o = &coreBoardRank(c, r)->ops[slot];
      void *sp = NULL, *dp = NULL;
      if ((needSend && coreImportBuf(comm, r, &o->send, &sp) != dmacclSuccess) ||
          (needRecv && coreImportBuf(comm, r, &o->recv, &dp) != dmacclSuccess)) {
        coreSetAsyncError(comm, dmacclRemoteError,
                          "operation %llu: rank %d's buffers cannot be reached from rank %d (%s); "
                          "this rank copied nothing",
                          (unsigned long long)seq, r, me, coreLastError(comm));
        l.handshakesOnly = 1;
      }
      send[r] = sp;
      recv[r] = dp;
    }
  }
  if (!l.empty)
    CORE_INFO("op %llu %s %zu bytes: %s", (unsigned long long)seq, planCollName(op->coll),
              planCollOf(op->coll)->size(&l.args), planAlgoName(op->algo));
  coreLaunchRanks(&l, 1, op->algo);
  atomic_store_explicit(&coreBoardRank(c, me)->launched, seq, memory_order_release);
}

/* Every rank (but skip, -1 for none) has published seq. */
static int allPosted(coreClique *c, uint64_t seq, int skip) {
  int slot = (int)(seq % CORE_BOARD_DEPTH);
  for (int r = 0; r < c->nranks; r++)
    if (r != skip &&
        atomic_load_explicit(&coreBoardRank(c, r)->ops[slot].seq, memory_order_acquire) != seq)
      return 0;
  return 1;
}

/*
 * Advances the checked mark over launched operations. A direct operation was
 * compared at launch; a staged one is compared once every peer has called.
 * Ranks that disagree about a staged operation have run it on their slots:
 * the receive buffers hold undefined data. If they even disagree about
 * whether it was staged, they wait on different flags and cannot recover;
 * nor can stagell's line slots (a rank may wait for lines that never come,
 * or leave lines a later operation would read): both break the set.
 */
int coreMpCheckStaged(coreClique *c) {
  int me = c->localRank, done = 0;
  while (c->checked + 1 < c->nextLaunch) {
    uint64_t seq = c->checked + 1;
    int slot = (int)(seq % CORE_BOARD_DEPTH);
    if (atOnce(&c->localOps[slot])) {
      if (!allPosted(c, seq, -1)) return done;
      char why[384], proto[384];
      int argsDiffer = findDisagreement(c, slot, why, sizeof(why)) >= 0;
      /* The report first: a break wakes the caller's waits, whose error
       * must stay the break's sentence (which says the set cannot go on). */
      if (argsDiffer) reportDisagreement(c, seq, why, "the receive buffers hold undefined data");
      if (protoDisagreement(c, slot, proto, sizeof(proto)) >= 0)
        breakProtocols(c, seq, argsDiffer ? why : proto);
      else if (argsDiffer && c->localOps[slot].algo == PLAN_ALGO_STAGELL)
        breakLines(c, seq, why);
    }
    c->checked = seq;
    atomic_store_explicit(&coreBoardRank(c, me)->checked, seq, memory_order_release);
    done++;
  }
  return done;
}

/* Every peer has launched and checked seq - CORE_BOARD_DEPTH. */
static int slotFree(coreClique *c, uint64_t seq) {
  if (seq <= CORE_BOARD_DEPTH) return 1;
  for (int r = 0; r < c->nranks; r++)
    if (atomic_load_explicit(&coreBoardRank(c, r)->checked, memory_order_acquire) <
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

dmacclResult_t coreMpExportOp(coreOp *op, const char *call) {
  if (op->refsReady) return dmacclSuccess;
  dmacclComm_t comm = op->comm;
  dmacclResult_t rc =
      coreExportBuf(comm, op->sendbuff, op->sendBytes, &op->sendRef, call, "sendbuff");
  if (rc == dmacclSuccess)
    rc = coreExportBuf(comm, op->recvbuff, op->recvBytes, &op->recvRef, call, "recvbuff");
  op->refsReady = rc == dmacclSuccess;
  return rc;
}

/* A direct operation's call that spends more than this in one phase says
 * which, with DMACCL_DEBUG=WARN: a call blocked for 100 ms is seen in
 * benchmarks about once in 30 rows and not explained (docs/latency-notes.md,
 * "The 100-ms-class stall"); the time is CLOCK_MONOTONIC, one clock for the
 * ranks of a host, so two ranks' lines can be put side by side. */
#define SLOW_PHASE_SEC 0.02

/* The slow phases of one call, logged once the set's lock is released. */
typedef struct {
  int on, n;
  double since;
  const char *phase[6];
  double ms[6], end[6];
} slowPhases;

static void phaseDone(slowPhases *p, const char *phase) {
  if (!p->on) return;
  double now = coreNowSec();
  if (now - p->since > SLOW_PHASE_SEC && p->n < 6)
    p->phase[p->n] = phase, p->ms[p->n] = 1e3 * (now - p->since), p->end[p->n++] = now;
  p->since = now;
}

static void logSlow(slowPhases *p, const coreOp *op, uint64_t seq) {
  if (!p->n || coreLogLevelGet() < CORE_LOG_WARN) return;
  const struct dmacclComm *comm = op->comm, *parent = comm->parent;
  char who[96];
  if (parent) /* a Send/Recv channel: its rank and sequence are the pair's own */
    snprintf(who, sizeof(who), "rank %d (Send/Recv from rank %d to rank %d)", parent->rank,
             comm->parentRank[0], comm->parentRank[1]);
  else
    snprintf(who, sizeof(who), "rank %d", comm->rank);
  for (int i = 0; i < p->n; i++)
    coreLog(CORE_LOG_WARN,
            "%s: %s (operation %llu, %s, %zu of %s): %s took %.1f ms, ending at %.6f s", who,
            op->call, (unsigned long long)seq, planAlgoName(op->algo), op->count,
            coreTypeName(op->datatype), p->phase[i], p->ms[i], p->end[i]);
  p->n = 0;
}

dmacclResult_t coreMpPost(coreOp *op) {
  dmacclComm_t comm = op->comm;
  coreClique *c = comm->clique;
  /* Where peers will find the buffers, for the operations that reach into
   * them (not the staged ones launched at the call: no peer imports those);
   * fails before anything is issued. */
  size_t size = 0;
  op->algo = coreOwnAlgo(c, op, &size);
  int direct = !atOnce(op);
  slowPhases slow = {.on = direct};
  if (direct) slow.since = coreNowSec();
  dmacclResult_t rc = direct ? coreMpExportOp(op, op->call) : dmacclSuccess;
  phaseDone(&slow, "exporting its buffers");
  if (rc != dmacclSuccess) {
    logSlow(&slow, op, comm->posted + 1);
    return rc;
  }

  /* A direct operation waits for its peers' calls below. */
  if (direct) coreGroupFlush(comm);
  phaseDone(&slow, "issuing the group's held kernels");
  pthread_mutex_lock(&c->lock);
  phaseDone(&slow, "taking the set's lock");
  uint64_t seq = comm->posted + 1;
  for (int round = 0; !slotFree(c, seq);) {
    coreMpCheckStaged(c);
    if (slotFree(c, seq)) break;
    pthread_mutex_unlock(&c->lock);
    if (round == 0) coreGroupFlush(comm);
    rc = stopReason(comm);
    if (rc != dmacclSuccess) {
      phaseDone(&slow, "waiting for a free board slot, which ended in a failure");
      logSlow(&slow, op, seq);
      return rc;
    }
    backoff(&round);
    pthread_mutex_lock(&c->lock);
  }
  phaseDone(&slow, "waiting for a free board slot (the peers' earlier operations)");
  op->seq = seq;
  rc = comm->exec->post ? comm->exec->post(comm, op) : dmacclSuccess;
  if (rc != dmacclSuccess) {
    pthread_mutex_unlock(&c->lock);
    logSlow(&slow, op, seq);
    return rc;
  }
  coreSequenceStage(c, op, size);
  int slot = (int)(seq % CORE_BOARD_DEPTH);
  c->localOps[slot] = *op;
  c->localOps[slot].vec = NULL; /* the caller's arrays live on the board from here */
  coreSharedOp *so = &coreBoardRank(c, c->localRank)->ops[slot];
  so->coll = (int32_t)op->coll;
  so->datatype = (int32_t)op->datatype;
  so->inPlace = op->inPlace;
  so->capture = op->capture;
  so->count = op->count;
  so->algo = (int32_t)op->algo;
  so->stage = (uint32_t)op->stageIndex;
  so->redop = (int32_t)op->redop;
  so->premulDevice = op->premulPtr != NULL;
  so->premulBits = op->premulBits;
  so->root = op->root;
  size_t vlen = coreVecLen(op, c->nranks);
  uint64_t *bv = coreBoardVec(c, c->localRank, slot);
  for (size_t i = 0; i < vlen; i++) bv[i] = op->vec[i];
  if (!atOnce(op)) { /* 208 bytes of the board a peer would not read */
    so->send = op->sendRef;
    so->recv = op->recvRef;
  }
  atomic_store_explicit(&so->seq, seq, memory_order_release);
  comm->posted = seq;
  /* A direct operation needs every peer's buffers: wait for their calls.
   * The progress thread's watchdog breaks the set if one never comes. */
  for (int round = 0; direct && !allPosted(c, seq, -1);) {
    pthread_mutex_unlock(&c->lock);
    if (round == 0) coreProgressWake(c);
    rc = stopReason(comm);
    if (rc != dmacclSuccess) {
      phaseDone(&slow, "waiting for the peers' calls, which ended in a failure");
      logSlow(&slow, op, seq);
      return rc;
    }
    backoff(&round);
    pthread_mutex_lock(&c->lock);
  }
  phaseDone(&slow, "waiting for the peers' calls");
  launchOne(c, seq);
  phaseDone(&slow, "reaching the peers' buffers and issuing its commands");
  c->nextLaunch = seq + 1;
  pthread_cond_broadcast(&c->cond);
  /* Compares what the peers have called by now; the rest is compared at
   * this rank's next call or by the progress thread's next poll (woken
   * here if it sleeps its long wait: progress.c). */
  coreMpCheckStaged(c);
  atomic_fetch_add(&c->postTick, 1); /* before progressIdle is read (progress.c) */
  int wake = c->checked < seq && atomic_load(&c->progressIdle);
  pthread_mutex_unlock(&c->lock);
  if (wake) coreProgressWake(c);
  logSlow(&slow, op, seq);
  return dmacclSuccess;
}

/* Waits until seq is launched (checked 0) or also compared with the peers'
 * calls (checked 1), or returns the reason the comm stopped. */
static dmacclResult_t mpWait(dmacclComm_t comm, uint64_t seq, int checked) {
  coreClique *c = comm->clique;
  int round = 0;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    if (checked) coreMpCheckStaged(c);
    if (checked ? c->checked >= seq : c->nextLaunch > seq) break;
    pthread_mutex_unlock(&c->lock);
    dmacclResult_t rc = stopReason(comm);
    if (rc != dmacclSuccess) return rc;
    backoff(&round);
    pthread_mutex_lock(&c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return dmacclSuccess;
}

dmacclResult_t coreMpWaitLaunched(dmacclComm_t comm, uint64_t seq) {
  return mpWait(comm, seq, 0);
}

dmacclResult_t coreMpWaitChecked(dmacclComm_t comm, uint64_t seq) {
  return mpWait(comm, seq, 1);
}
