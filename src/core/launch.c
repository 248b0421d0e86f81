/*
 * Posting and launching, one process (dmacclCommInitAll), and the one launch
 * body both kinds of set use (coreLaunchRanks).
 *
 * A rank's call is posted to its set's board under the sequence number it
 * has in that rank's order of calls (all ranks call in the same order, so
 * sequence numbers name operations across ranks). When the last rank posts
 * a sequence number, every rank's buffers are known and the thread that
 * completed it launches the operation for all ranks, in sequence order. On
 * the CUDA executor a call returns once its operation is launched (queued on
 * its stream): a thread that posts for one rank waits for the other ranks'
 * calls, and a group that holds every rank's call launches at its end
 * without waiting.
 * Nothing is queued on a caller's stream before the work it must wait for
 * is queued (docs/architecture.md, queue safety).
 */
#include "../exec/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

planAlgo coreChooseAlgo(const coreClique *c, const planArgs *args, int capture,
                        const planRange **why) {
  size_t size = planCollOf(args->coll)->size(args);
  const planRange *range = NULL;
  planAlgo algo = planSelectIn(&c->table, args->coll, size, capture, &range);
  if (why) *why = range;
  /* pairs is issued before anything is posted (pairs.c); a call that
   * reaches here (captured before the channels exist) runs a direct form */
  if (planIsComposed(algo)) algo = planFallbackAlgo(args->coll);
  /* Ranks on one GPU: in one process they signal each other with events,
   * which a kernel cannot record; across processes a polling kernel would
   * wait for a peer that runs only when the GPU switches to its context. */
  if ((algo == PLAN_ALGO_STAGESM || algo == PLAN_ALGO_STAGELL || algo == PLAN_ALGO_TWOSHOT) &&
      c->gpuShared)
    algo = planCollOf(args->coll)->peerArrays ? PLAN_ALGO_PUSHB : PLAN_ALGO_STAGE;
  /* split puts a second GPU's copy engine on the link: ranks that share a
   * GPU have none, so the built-in table's split runs stage there where the
   * collective fits a staging slot (a 2-rank Broadcast of 2-8 MB took stage
   * before it took split), else pushb (a tuning file measured there,
   * DMACCL_ALGO and the config are kept). */
  if (algo == PLAN_ALGO_SPLIT && c->gpuShared && (!range || range->origin == PLAN_FROM_BUILTIN))
    algo =
        planStageNeed(args, PLAN_ALGO_STAGE) <= (capture ? coreGraphStageBytes(c) : c->stageBytes)
            ? PLAN_ALGO_STAGE
            : PLAN_ALGO_PUSHB;
  int fellBack = 0;
  if (planIsStaged(algo) &&
      planStageNeed(args, algo) > (capture ? coreGraphStageBytes(c) : c->stageBytes))
    algo = planFallbackAlgo(args->coll), fellBack = 1;
  /* early arrival words; the fallback is no choice of the user's */
  if (args->notify)
    algo =
        planArrivalAlgo(args->coll, algo, range && !fellBack ? range->origin : PLAN_FROM_BUILTIN);
  return algo;
}

uint64_t coreStageNumber(coreClique *c, const coreOp *op) {
  if (!op->capture) return ++c->stageCount;
  if (op->captureId != c->capId) {
    c->capId = op->captureId;
    c->capCount = 0;
  }
  return ++c->capCount;
}

/* Multi-process: at the call, from this rank's own arguments (the forms
 * that can be staged read only their own arrays, the same everywhere). The
 * choice reads only what the set fixed at init: no lock. A thread's last
 * choice of a uniform form is kept and given again for the same arguments
 * of the same set (choice and staged number took 0.35 us of a call's host
 * time on 2x H100, 0.29 with it: the walk runs cold after each kernel
 * launch). *size: the operation's size. */
planAlgo coreOwnAlgo(const coreClique *c, const coreOp *op, size_t *size) {
  static _Thread_local struct {
    int kept; /* 0: nothing kept yet */
    unsigned long clique;
    planColl coll;
    int rank, datatype, redop, inPlace, capture, notify, root;
    size_t count, size;
    planAlgo algo;
  } last;
  int uniform = !op->vec;
  if (uniform && last.kept && last.clique == c->id && last.rank == op->comm->rank &&
      last.coll == op->coll && last.count == op->count && last.datatype == (int)op->datatype &&
      last.redop == (int)op->redop && last.inPlace == op->inPlace && last.capture == op->capture &&
      last.notify == op->notify && last.root == op->root) {
    *size = last.size;
    return last.algo;
  }
  const size_t *vecs[CORE_MAX_RANKS] = {0};
  vecs[op->comm->rank] = op->vec;
  planArgs a = coreOpArgs(op, op->comm->rank, c->nranks, vecs, c->scratchBytes);
  planAlgo algo = coreChooseAlgo(c, &a, op->capture, NULL);
  *size = planCollOf(op->coll)->size(&a);
  if (uniform) {
    last.kept = 1, last.clique = c->id, last.rank = op->comm->rank, last.coll = op->coll;
    last.count = op->count, last.datatype = (int)op->datatype, last.redop = (int)op->redop;
    last.inPlace = op->inPlace;
    last.capture = op->capture, last.notify = op->notify, last.root = op->root;
    last.size = *size, last.algo = algo;
  }
  return algo;
}

/* Whether an operation of coll with algo and size gets a staged number: a
 * staged one that moves something, which the size tells alike on every
 * rank; AlltoAllv's (its size is what the rank sends) whatever its size
 * (staged.c, buildPeerArrays). */
static int numbered(planColl coll, planAlgo algo, size_t size) {
  return planIsStaged(algo) && (size || planCollOf(coll)->peerArrays);
}

/* ... and the staged number of op (op->algo set; size from coreOwnAlgo),
 * with the set's lock held. */
void coreSequenceStage(coreClique *c, coreOp *op, size_t size) {
  op->stageIndex = numbered(op->coll, op->algo, size) ? coreStageNumber(c, op) : 0;
}

/*
 * Builds every rank's schedule, then issues them round by round across the
 * ranks: all round-0 steps of every rank, then round 1, ... So when several
 * ranks of this process share a GPU (and possibly one hardware queue), every
 * WAIT is queued after the SIGNALs of earlier rounds that release it.
 */
void coreLaunchRanks(coreLaunch *ls, int k, planAlgo algo) {
  int cursor[CORE_MAX_RANKS], failed[CORE_MAX_RANKS], rounds = 1;
  for (int i = 0; i < k; i++) {
    coreLaunch *l = &ls[i];
    planSchedule *s = &l->comm->sched;
    if (l->empty) {
      planScheduleReset(s, &l->args, algo);
    } else if (planBuild(&l->args, algo, s) != 0) {
      coreSetAsyncError(l->comm, dmacclSystemError,
                        "operation %llu: out of memory building the schedule",
                        (unsigned long long)l->op->seq);
      planScheduleReset(s, &l->args, algo); /* an empty schedule */
    }
    if (l->handshakesOnly) planHandshakesOnly(s); /* the peers are not left waiting */
    if (s->nrounds > rounds) rounds = s->nrounds;
    cursor[i] = failed[i] = 0;
  }
  /* One rank (a process of a multi-process set): the rounds order nothing
   * between ranks here, and its steps are listed in round order: one
   * launch of all of them (the executor's entry per launch is 0.2 us). */
  if (k == 1) {
    const planSchedule *s = &ls[0].comm->sched;
    dmacclResult_t rc =
        ls[0].comm->exec->launch(ls[0].comm, ls[0].op, s, &ls[0].bufs, 0, s->nsteps);
    if (rc != dmacclSuccess)
      coreSetAsyncError(ls[0].comm, rc, "operation %llu: launch failed: %s",
                        (unsigned long long)ls[0].op->seq, coreLastError(ls[0].comm));
    return;
  }
  for (int rd = 0; rd < rounds; rd++)
    for (int i = 0; i < k; i++) {
      dmacclComm_t comm = ls[i].comm;
      const planSchedule *s = &comm->sched;
      int from = cursor[i], to = from;
      while (to < s->nsteps && s->steps[to].round == rd) to++;
      cursor[i] = to;
      if (rd > 0 && to == from) continue;
      /* After a failure only the end is issued, so the caller's stream is joined. */
      if (failed[i]) from = to = to == s->nsteps ? s->nsteps : -1;
      if (from < 0) continue;
      dmacclResult_t rc = comm->exec->launch(comm, ls[i].op, s, &ls[i].bufs, from, to);
      if (rc != dmacclSuccess && !failed[i]) {
        failed[i] = 1;
        coreSetAsyncError(comm, rc, "operation %llu: launch failed: %s",
                          (unsigned long long)ls[i].op->seq, coreLastError(comm));
      }
    }
}

/* Ranks that disagree: -1, or a rank that disagrees with another (why says
 * how). Every pair for the forms whose arrays differ per rank. */
static int findDisagreement(coreClique *c, coreBoardSlot *slot, char *why, size_t whylen) {
  int n = c->nranks, pairs = planCollOf(slot->ops[0].coll)->peerArrays;
  for (int a = 0; a < (pairs ? n : 1); a++)
    for (int b = a + 1; b < n; b++)
      if (coreOpDiffer(&slot->ops[a], slot->ops[a].vec, &slot->ops[b], slot->ops[b].vec, n, why,
                       whylen))
        return b;
  return -1;
}

/*
 * One process, CUDA graphs: sep (n x n) marks the pairs whose copies may
 * not read each other, rank q on another GPU than rank r and captured into
 * another graph; returns whether there is one. Graphs per GPU launched one
 * after the other deadlock on such pulls, never on pushes (bench/probes/
 * graphpeer.cu, plain CUDA): by inference, CUDA queues a copy that reads
 * another GPU of the process on that GPU, so the graph launched first
 * holds the second GPU's queue with a pull that waits for a signal the
 * second graph would send from behind it (docs/architecture.md, queue
 * safety; the plan layer's planPullsAcross and planPushAcross decide).
 */
static int apartPairs(const coreClique *c, const coreBoardSlot *slot, unsigned char *sep) {
  int n = c->nranks, any = 0;
  for (int r = 0; r < n; r++)
    for (int q = 0; q < n; q++) {
      int x = c->comms[q]->device != c->comms[r]->device &&
              slot->ops[q].captureId != slot->ops[r].captureId;
      sep[r * n + q] = (unsigned char)x;
      any |= x;
    }
  return any;
}

/* A channel's rank as its parent numbers it (Send/Recv), else r. */
static int userRank(const coreClique *c, int r) {
  dmacclComm_t m = c->comms[r];
  return m->parent && r < 2 ? m->parentRank[r] : r;
}

/* Launches one complete slot for every rank. Called with the lock held. */
static void launchSlot(coreClique *c, coreBoardSlot *slot) {
  const coreOp *ref = &slot->ops[0];
  const void *send[CORE_MAX_RANKS];
  void *recv[CORE_MAX_RANKS];
  const size_t *vecs[CORE_MAX_RANKS];
  coreLaunch ls[CORE_MAX_RANKS];
  for (int r = 0; r < c->nranks; r++) {
    send[r] = slot->ops[r].sendbuff;
    recv[r] = slot->ops[r].recvbuff;
    vecs[r] = slot->ops[r].vec;
  }
  char disagree[384];
  int agree = findDisagreement(c, slot, disagree, sizeof(disagree)) < 0;
  /* One selection for all ranks (rank 0's arguments): they must run the
   * same algorithm. */
  planArgs refArgs = coreOpArgs(ref, 0, c->nranks, vecs, c->scratchBytes);
  size_t size = agree ? planCollOf(ref->coll)->size(&refArgs) : 0;
  const planRange *why = NULL;
  planAlgo algo = coreChooseAlgo(c, &refArgs, ref->capture, &why);
  /* A launch the executor refuses (ranks sharing a GPU captured apart)
   * fails every rank's call, and nothing is issued. */
  char refused[448] = "";
  dmacclResult_t rc =
      agree && c->comms[0]->exec->checkLaunch
          ? c->comms[0]->exec->checkLaunch(c->comms, slot->ops, c->nranks, refused, sizeof(refused))
          : dmacclSuccess;
  int run = agree && rc == dmacclSuccess;
  /* Ranks on other GPUs captured into other graphs: a choice of the table's
   * (built in or tuned, or a fallback of the user's) whose copies read them
   * becomes one that writes them; the user's own choice, or no such
   * algorithm that fits, is refused (planPullsAcross, planPushAcross).
   * Every rank's schedule is built into rank 0's (the launch builds them
   * again). */
  int n = c->nranks, who = -1, from = -1, pulls = 0, apart = 0;
  int users =
      why && (why->origin == PLAN_FROM_ENV || why->origin == PLAN_FROM_CONFIG) && algo == why->algo;
  for (int r = 1; r < n && run && ref->capture; r++)
    apart |= slot->ops[r].captureId != ref->captureId; /* else one graph: nothing to check */
  unsigned char *sep = apart ? malloc((size_t)n * (size_t)n) : NULL;
  planArgs *args = sep ? malloc((size_t)n * sizeof(*args)) : NULL;
  if (apart && !args) {
    pulls = -1;
  } else if (apart && apartPairs(c, slot, sep)) {
    for (int r = 0; r < n; r++) {
      args[r] = coreOpArgs(&slot->ops[r], r, n, vecs, c->scratchBytes);
      coreStageArgs(&args[r], ref, 1);
    }
    planSchedule *s = &c->comms[0]->sched;
    pulls = planPullsAcross(args, n, algo, sep, s, &who, &from);
    int alt =
        pulls == 1 && !users ? planPushAcross(args, n, algo, sep, coreGraphStageBytes(c), s) : -1;
    if (alt >= 0) {
      CORE_INFO("op %llu: %s instead of %s: ranks captured into separate graphs",
                (unsigned long long)slot->seq, planAlgoName((planAlgo)alt), planAlgoName(algo));
      algo = (planAlgo)alt, pulls = 0;
    }
  }
  free(sep);
  free(args);
  if (pulls) {
    rc = pulls < 0 ? dmacclSystemError : dmacclInvalidUsage;
    if (pulls < 0)
      snprintf(refused, sizeof(refused),
               "out of memory, or %s's schedule could not be built, choosing the algorithm; "
               "nothing was issued",
               planAlgoName(algo));
    else
      snprintf(refused, sizeof(refused),
               "ranks %d and %d are on GPUs %d and %d and captured into different CUDA graphs, "
               "and %s's copies read rank %d's memory, which can deadlock graphs launched one "
               "after the other; %s: capture every rank's stream into one graph (fork them from "
               "one capture with events); nothing was issued",
               userRank(c, who), userRank(c, from), c->comms[who]->device, c->comms[from]->device,
               planAlgoName(algo), userRank(c, from),
               users ? "it was chosen by the config or DMACCL_ALGO (a stage or push algorithm "
                       "writes its peers)"
                     : "no algorithm that writes its peers fits (stage needs more than the "
                       "DMACCL_STAGE_BYTES slot)");
    run = 0;
  }
  uint64_t stageIndex = run && numbered(ref->coll, algo, size) ? coreStageNumber(c, ref) : 0;
  if (run && size)
    CORE_INFO("op %llu %s %zu bytes: %s (size range %zu-%zu)", (unsigned long long)slot->seq,
              planCollName(ref->coll), size, planAlgoName(algo), why ? why->lo : 0,
              why ? why->hi : 0);
  for (int r = 0; r < c->nranks; r++) {
    const coreOp *op = &slot->ops[r];
    ls[r] = (coreLaunch){.comm = c->comms[r],
                         .op = op,
                         .bufs = {send, recv, NULL, NULL, NULL, op->arrived, op->arrivedValue,
                                  op->premulPtr, op->premulBits},
                         .args = coreOpArgs(op, r, c->nranks, vecs, c->scratchBytes)};
    coreStageArgs(&ls[r].args, ref, stageIndex);
    if (!agree)
      coreSetOpError(c->comms[r], dmacclInvalidUsage,
                     "operation %llu: ranks disagree: %s; nothing was copied",
                     (unsigned long long)slot->seq, disagree);
    if (rc != dmacclSuccess) {
      c->comms[r]->refusedSeq = slot->seq;
      c->comms[r]->refusedCode = rc;
      snprintf(c->comms[r]->refusedWhy, sizeof(c->comms[r]->refusedWhy), "%s", refused);
    }
    if (!run) ls[r].empty = 1;
  }
  coreLaunchRanks(ls, c->nranks, algo);
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

/* Why a one-process wait must give up (lock held): abort, a broken set, or
 * DMACCL_TIMEOUT passed since `since` while operation seq waits for the
 * ranks that have not called it (the set is then broken, naming them). */
static dmacclResult_t spStop(dmacclComm_t comm, uint64_t seq, double since) {
  coreClique *c = comm->clique;
  if (c->aborting) return coreError(comm, dmacclInvalidUsage, "the communicator was aborted");
  if (c->broken == dmacclSuccess && c->timeoutSec > 0 && coreNowSec() - since > c->timeoutSec) {
    char missing[160] = "";
    size_t used = 0;
    for (int r = 0; r < c->nranks && used + 8 < sizeof(missing); r++)
      if (c->comms[r] && c->comms[r]->posted < seq)
        used +=
            (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%d", used ? ", " : "", r);
    char why[256];
    snprintf(why, sizeof(why),
             "operation %llu waited more than %.0f s (DMACCL_TIMEOUT) for rank(s) %s to call it",
             (unsigned long long)seq, c->timeoutSec, missing[0] ? missing : "?");
    coreBreak(c, dmacclTimeout, why);
  }
  if (c->broken != dmacclSuccess)
    return coreError(comm, c->broken, "the communicator is broken: %s", c->brokenWhy);
  return dmacclSuccess;
}

/* Waits on the set's condition for a while (lock held). */
static void spWait(coreClique *c) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 100000000; /* 100 ms: the timeout is checked this often */
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

static dmacclResult_t spPost(coreOp *op) {
  dmacclComm_t comm = op->comm;
  coreClique *c = comm->clique;
  pthread_mutex_lock(&c->lock);
  op->seq = comm->posted + 1;
  coreBoardSlot *slot = &c->slots[op->seq % CORE_BOARD_DEPTH];
  /* The slot may still hold an operation CORE_BOARD_DEPTH older. */
  double since = coreNowSec();
  for (int round = 0; slot->nposted > 0 && slot->seq != op->seq; round++) {
    dmacclResult_t stop = spStop(comm, slot->seq, since);
    if (stop != dmacclSuccess) {
      pthread_mutex_unlock(&c->lock);
      return stop;
    }
    if (round == 0) coreGroupFlush(comm);
    spWait(c);
  }
  dmacclResult_t rc = comm->exec->post ? comm->exec->post(comm, op) : dmacclSuccess;
  if (rc != dmacclSuccess) {
    pthread_mutex_unlock(&c->lock);
    return rc;
  }
  size_t vlen = coreVecLen(op, c->nranks);
  if (vlen && !slot->vec && !(slot->vec = malloc((size_t)c->nranks * vlen * sizeof(size_t)))) {
    pthread_mutex_unlock(&c->lock);
    return coreError(comm, dmacclSystemError, "%s: out of memory", op->call);
  }
  comm->posted = op->seq;
  slot->seq = op->seq;
  slot->ops[comm->rank] = *op;
  if (vlen) {
    size_t *mine = slot->vec + (size_t)comm->rank * vlen;
    memcpy(mine, op->vec, vlen * sizeof(size_t));
    slot->ops[comm->rank].vec = mine;
  }
  slot->nposted++;
  launchReady(c);
  pthread_mutex_unlock(&c->lock);
  return dmacclSuccess;
}

dmacclResult_t coreWaitLaunched(dmacclComm_t comm, uint64_t seq) {
  coreClique *c = comm->clique;
  if (c->mp) return coreMpWaitLaunched(comm, seq);
  dmacclResult_t rc = dmacclSuccess;
  double since = coreNowSec();
  pthread_mutex_lock(&c->lock);
  while (c->nextLaunch <= seq && (rc = spStop(comm, c->nextLaunch, since)) == dmacclSuccess)
    spWait(c);
  /* Launched already: an abort or break later is the device wait's to report. */
  if (c->nextLaunch > seq) rc = dmacclSuccess;
  pthread_mutex_unlock(&c->lock);
  return rc;
}

/* One rank: no peer to meet, so no board, sequence number or schedule: the
 * one copy the collective is (or nothing), issued at once by the executor. */
static dmacclResult_t postOneRank(coreOp *op) {
  dmacclComm_t comm = op->comm;
  const size_t *vecs[1] = {op->vec};
  planArgs a = coreOpArgs(op, 0, 1, vecs, comm->clique->scratchBytes);
  planBlock b = planOneRankBlock(&a);
  op->oneRank = 1;
  const char *src = (const char *)op->sendbuff + b.srcOff;
  char *dst = (char *)op->recvbuff + b.dstOff;
  /* a premultiplied sum scales, in place too */
  if (op->redop == BASE_PREMULSUM && planCollOf(op->coll)->reduces)
    return b.bytes ? comm->exec->oneRank(comm, op, src, dst, b.bytes) : dmacclSuccess;
  /* nothing to copy (empty, in place): only an arrival word to store */
  if ((!b.bytes || src == dst) && !op->arrived) return dmacclSuccess;
  return comm->exec->oneRank(comm, op, src, dst, src == dst ? 0 : b.bytes);
}

dmacclResult_t corePostNoAttach(coreOp *op) {
  if (op->self) return corePostSelf(op);
  if (op->comm->nranks == 1 && op->comm->exec->oneRank) return postOneRank(op);
  return op->comm->clique->mp ? coreMpPost(op) : spPost(op);
}

/* One process, CUDA: the call returns once its operation is launched, and
 * fails if the launch refused it. Ranks as processes launch inside the call;
 * the host executor's calls return at once. Then the executor's attach. */
dmacclResult_t coreAttach(coreOp *op) {
  dmacclComm_t comm = op->comm;
  if (op->oneRank) return dmacclSuccess; /* issued on the caller's thread and stream */
  if (!comm->clique->mp && comm->exec->launchBeforeReturn) {
    dmacclResult_t rc = coreWaitLaunched(comm, op->seq);
    if (rc != dmacclSuccess) return rc;
    /* Written by the launcher before the launch was announced under the
     * lock; only this rank's next call could overwrite it. */
    if (comm->refusedSeq == op->seq)
      return coreError(comm, comm->refusedCode, "%s", comm->refusedWhy);
  }
  return comm->exec->attach ? comm->exec->attach(comm, op) : dmacclSuccess;
}

dmacclResult_t corePost(coreOp *op) {
  dmacclResult_t rc = corePostNoAttach(op);
  if (rc != dmacclSuccess) return rc;
  return coreAttach(op);
}

/* The consumer's side of arrival words: one wait, on the caller's stream
 * (CUDA) or thread (host). */
dmacclResult_t dmacclStreamWaitArrival(const uint32_t *arrived, int rank, uint32_t value,
                                       dmacclComm_t comm, cudaStream_t stream) {
  const char *call = "dmacclStreamWaitArrival";
  dmacclResult_t rc = coreEnter(comm, call);
  if (rc != dmacclSuccess) return rc;
  rc = coreCheckWaitArgs(comm, arrived, rank, stream, call);
  if (rc == dmacclSuccess) rc = comm->exec->waitWord(comm, arrived + rank, value, stream);
  coreLeave(comm);
  return rc;
}
