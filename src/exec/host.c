/*
 * Host executor: every rank is a worker thread working on host memory, and
 * runs the same schedules as the CUDA executor. Lanes behave as streams: each
 * is an in-order queue, and a WAIT blocks only its own lane, so the worker
 * advances every lane as far as it can and spins, then sleeps, while all are blocked. A
 * rank that waits longer than DMACCL_HOST_TIMEOUT seconds for a peer fails
 * the operation with an asynchronous error that names the peer (a schedule
 * that deadlocks is caught this way in tests).
 *
 * Flags are per-rank arrays of 32-bit counters in host memory, [phase][peer],
 * written by peers with release stores and read with acquire loads, so data
 * copied before a SIGNAL is visible after the matching WAIT.
 *
 * Lines (stagell, plan.h PLAN_BUF_LINES) are written as the CUDA kernel
 * writes them, data words first and the two flag words with release stores;
 * a REDUCE with line sources blocks its lane, as a WAIT does, until every
 * line of them carries the flag in both words (acquire loads), then reads
 * them and sets them back to 0.
 */
#include "exec.h"
#include "../boot/boot.h"
#include "../base/reduce.h"

#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  planSchedule sched;
  const void **send;
  void **recv;
  void **stage;      /* this operation's staging slot of every rank */
  void **lines;      /* ... and line slot */
  void **scratch;    /* every rank's scratch buffer (reductions), in its area (exec.h) */
  uint32_t *arrived; /* NOTIFY: the caller's arrival words and value */
  uint32_t arrivedValue;
  const void *scalar; /* a premultiplied sum's (execBuffers) */
  uint64_t scalarBits;
  uint32_t epoch;
  uint64_t seq;
} hostJob;

typedef struct {
  pthread_t worker;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  hostJob jobs[CORE_BOARD_DEPTH];
  uint64_t queued, done; /* sequence numbers queued to and finished by the worker */
  int stop;
  _Atomic uint32_t *flags;      /* own, [PLAN_NUM_PHASES][nranks]; NULL when on the board */
  _Atomic uint32_t **peerFlags; /* every rank's flags as seen here */
  char *stage;                  /* own staging slots (one process: malloc) */
  char **peerStage;             /* every rank's staging slots */
  coreShm stageShm;             /* processes: every rank's staging slots */
  double timeoutSec;
  _Atomic int waitingFor; /* peer the worker waits for, -1 when none (watchdog) */
  /* A job with lines failed (its lines may lie in a slot): the worker runs
   * nothing more, and the next synchronize breaks the set with linesWhy
   * (coreBreak wants the set's lock, which a launching thread may hold
   * while it waits for this worker). */
  _Atomic int linesFailed; /* dmacclResult_t, 0: none */
  char linesWhy[256];
} hostState;

static hostState *stateOf(dmacclComm_t c) {
  return (hostState *)c->execState;
}

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The first step of lane l at index i or later (s->nsteps if none). */
static int nextOnLane(const planSchedule *s, int l, int i) {
  while (i < s->nsteps && s->steps[i].lane != l) i++;
  return i;
}

/* Data bytes of line v of the lines that carry `bytes` (0 in a token). */
static size_t lineData(size_t bytes, size_t v) {
  return bytes <= v * 8 ? 0 : bytes - v * 8 < 8 ? bytes - v * 8 : 8;
}

static void putLines(char *dst, const char *src, size_t bytes) {
  for (size_t v = 0; v < planLines(bytes); v++) {
    uint32_t d[2] = {0, 0};
    if (lineData(bytes, v)) memcpy(d, src + v * 8, lineData(bytes, v));
    uint32_t *line = (uint32_t *)(void *)(dst + v * 16);
    line[0] = d[0], line[2] = d[1];
    atomic_store_explicit((_Atomic uint32_t *)&line[1], PLAN_LINE_FLAG, memory_order_release);
    atomic_store_explicit((_Atomic uint32_t *)&line[3], PLAN_LINE_FLAG, memory_order_release);
  }
}

/* The first line of a source that has not arrived (both flag words), or
 * planLines(bytes) when all have. */
static size_t firstMissingLine(const char *lines, size_t bytes) {
  size_t v = 0;
  for (; v < planLines(bytes); v++) {
    _Atomic uint32_t *line = (_Atomic uint32_t *)(void *)(lines + v * 16);
    if (atomic_load_explicit(&line[1], memory_order_acquire) != PLAN_LINE_FLAG ||
        atomic_load_explicit(&line[3], memory_order_acquire) != PLAN_LINE_FLAG)
      break;
  }
  return v;
}

static int linesReady(const char *lines, size_t bytes) {
  return firstMissingLine(lines, bytes) == planLines(bytes);
}

/* Reads ready lines into dst and sets them back to 0. */
static void takeLines(char *dst, char *lines, size_t bytes) {
  for (size_t v = 0; v < planLines(bytes); v++) {
    uint32_t *line = (uint32_t *)(void *)(lines + v * 16), d[2] = {line[0], line[2]};
    if (lineData(bytes, v)) memcpy(dst + v * 8, d, lineData(bytes, v));
    line[0] = line[2] = 0;
    atomic_store_explicit((_Atomic uint32_t *)&line[1], 0, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint32_t *)&line[3], 0, memory_order_relaxed);
  }
}

/* A REDUCE: sources in lines are read into a buffer of their own first.
 * Returns -1 when a line source is not all there (the lane waits; *from is
 * the source's rank), -2 out of memory. */
static int runReduce(const planSchedule *s, const planStep *st, const execBuffers *b, int *from) {
  const void *src[CORE_MAX_RANKS];
  char *taken[CORE_MAX_RANKS] = {0};
  int rc = 0;
  for (int k = 0; k < st->nsrc; k++) {
    planLoc l = s->srcs[st->src0 + k];
    src[k] = execLocate(b, l);
    if (l.buf == PLAN_BUF_LINES && !linesReady(src[k], st->bytes)) {
      *from = st->nsrc == 1 ? st->peer : k; /* one source: its writer; else rank order */
      return -1;
    }
  }
  for (int k = 0; k < st->nsrc && !rc; k++) {
    if (s->srcs[st->src0 + k].buf != PLAN_BUF_LINES) continue;
    if (!(taken[k] = malloc(st->bytes ? st->bytes : 1)))
      rc = -2;
    else
      takeLines(taken[k], (char *)(uintptr_t)src[k], st->bytes);
    src[k] = taken[k];
  }
  if (rc || !st->bytes) /* nothing to write (a token's REDUCE: plan.h) */
    ;
  else if (st->nsrc == 1) /* one source: a copy of bytes (plan.h) */
    memmove(execLocate(b, st->dst), src[0], st->bytes);
  else
    baseReduceHostScaled(execLocate(b, st->dst), src, st->nsrc, st->bytes / s->elemSize,
                         (dmacclDataType_t)s->dtype, (dmacclRedOp_t)s->redop,
                         b->scalar ? b->scalar : &b->scalarBits);
  for (int k = 0; k < st->nsrc; k++) free(taken[k]);
  return rc;
}

/* Where a timed-out job stands, for its error: each unfinished lane's
 * next step and what it waits for (the flag's value, a line's words). */
static void describeStuck(dmacclComm_t comm, const hostJob *j, const execBuffers *b,
                          const int *next, char *why, size_t len) {
  static const char *phases[] = {"ENTRY", "EXIT", "DATA"}; /* below PLAN_PHASE_PIECE */
  const planSchedule *s = &j->sched;
  size_t at = (size_t)snprintf(why, len,
                               "%s, staged number %llu, epoch %u:", planAlgoName((planAlgo)s->algo),
                               (unsigned long long)s->stageIndex, j->epoch);
  for (int l = 0; l < s->nlanes && at < len; l++) {
    if (next[l] >= s->nsteps) continue;
    const planStep *st = &s->steps[next[l]];
    int w = 0;
    if (st->kind == PLAN_STEP_WAIT) {
      uint32_t v = atomic_load_explicit(
          &stateOf(comm)->peerFlags[comm->rank][st->phase * comm->nranks + st->peer],
          memory_order_acquire);
      char phase[24];
      if (st->phase < PLAN_PHASE_PIECE)
        snprintf(phase, sizeof(phase), "%s", phases[st->phase]);
      else if (st->phase < PLAN_PHASE_PUSH)
        snprintf(phase, sizeof(phase), "PIECE+%d", (int)st->phase - PLAN_PHASE_PIECE);
      else
        snprintf(phase, sizeof(phase), "PUSH+%d", (int)st->phase - PLAN_PHASE_PUSH);
      w = snprintf(why + at, len - at, " lane %d at step %d of %d, WAIT %s from rank %d (flag %u)",
                   l, next[l], s->nsteps, phase, st->peer, v);
    } else if (st->kind == PLAN_STEP_REDUCE) {
      int k = 0;
      size_t v = 0;
      for (; k < st->nsrc; k++) {
        planLoc sl = s->srcs[st->src0 + k];
        if (sl.buf != PLAN_BUF_LINES) continue;
        v = firstMissingLine(execLocate(b, sl), st->bytes);
        if (v < planLines(st->bytes)) break;
      }
      w = snprintf(why + at, len - at,
                   " lane %d at step %d of %d, REDUCE of %zu bytes, line source %d: line %zu of "
                   "%zu not there",
                   l, next[l], s->nsteps, st->bytes, k, v, planLines(st->bytes));
    } else {
      w = snprintf(why + at, len - at, " lane %d at step %d of %d (kind %d)", l, next[l], s->nsteps,
                   (int)st->kind);
    }
    at += w > 0 ? (size_t)w : 0;
  }
}

/* How a blocked worker (and dmacclStreamWaitArrival's host wait) waits: it
 * yields for the first HOST_SPIN_SEC of a wait (peers are usually
 * microseconds away), then sleeps between checks (20 us asked; about
 * 70 with Linux's default timer slack). Never only yields:
 * on the CI kind of VM (2 vCPUs, kernel 6.18) three workers yielding in a
 * loop kept every other process of the machine off the CPUs for as long as
 * they waited, the rank they waited for included, until they timed out
 * (docs/results/host-hang/). */
#define HOST_SPIN_SEC 200e-6
static void idle(double waited) {
  if (waited < HOST_SPIN_SEC) {
    sched_yield();
  } else {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

/* Runs one job; returns -1 and the peer on timeout (-2 abandoned, -3 out of
 * memory), and then where it stands in why. next[l] is lane l's next step,
 * so a JOIN at index i may pass once next[from] > i. */
static int runJob(dmacclComm_t comm, hostJob *j, int *stuckPeer, char *why, size_t whylen) {
  const planSchedule *s = &j->sched;
  const execBuffers b = {j->send,    j->recv,         j->stage,  j->scratch,   j->lines,
                         j->arrived, j->arrivedValue, j->scalar, j->scalarBits};
  int nl = s->nlanes;
  int next[CORE_MAX_RANKS];
  for (int l = 0; l < nl; l++) next[l] = nextOnLane(s, l, 0);
  double start = 0;
  coreClique *c = comm->clique;
  for (;;) {
    /* Abandoned (abort, broken set): the rest of the job is dropped before
     * another step runs, so abort can free the buffers once we are idle. */
    if (__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) ||
        atomic_load_explicit(&stateOf(comm)->linesFailed, memory_order_acquire))
      return -2;
    int progressed = 0, finished = 1;
    for (int l = 0; l < nl; l++) {
      while (next[l] < s->nsteps) {
        const planStep *st = &s->steps[next[l]];
        if (st->kind == PLAN_STEP_WAIT) {
          _Atomic uint32_t *f =
              &stateOf(comm)->peerFlags[comm->rank][st->phase * comm->nranks + st->peer];
          uint32_t v = atomic_load_explicit(f, memory_order_acquire);
          if ((int32_t)(v - j->epoch) < 0) {
            *stuckPeer = st->peer;
            break;
          }
        } else if (st->kind == PLAN_STEP_JOIN) {
          if (next[st->from] <= next[l]) break;
        } else if (st->kind == PLAN_STEP_SIGNAL) {
          atomic_store_explicit(
              &stateOf(comm)->peerFlags[st->peer][st->phase * comm->nranks + comm->rank], j->epoch,
              memory_order_release);
        } else if (st->kind == PLAN_STEP_NOTIFY) {
          if (b.arrived) __atomic_store_n(&b.arrived[st->peer], b.arrivedValue, __ATOMIC_RELEASE);
        } else if (st->kind == PLAN_STEP_REDUCE) {
          int rr = runReduce(s, st, &b, stuckPeer);
          if (rr == -1) break;
          if (rr) return -3;
        } else if (st->dst.buf == PLAN_BUF_LINES) {
          putLines(execLocate(&b, st->dst), execLocate(&b, st->src), st->bytes);
        } else {
          memcpy(execLocate(&b, st->dst), execLocate(&b, st->src), st->bytes);
        }
        next[l] = nextOnLane(s, l, next[l] + 1);
        progressed = 1;
      }
      if (next[l] < s->nsteps) finished = 0;
    }
    if (finished) return 0;
    if (!progressed) {
      atomic_store_explicit(&stateOf(comm)->waitingFor, *stuckPeer, memory_order_relaxed);
      double now = nowSec(), waited = start == 0 ? 0 : now - start;
      if (start == 0) start = now;
      if (waited > stateOf(comm)->timeoutSec) {
        describeStuck(comm, j, &b, next, why, whylen);
        return -1;
      }
      idle(waited);
    } else {
      start = 0;
    }
  }
}

static void *workerMain(void *arg) {
  dmacclComm_t comm = arg;
  hostState *h = stateOf(comm);
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->stop && h->done == h->queued) pthread_cond_wait(&h->cv, &h->mu);
    if (h->done == h->queued) break; /* stop requested and nothing left */
    hostJob *j = &h->jobs[(h->done + 1) % CORE_BOARD_DEPTH];
    pthread_mutex_unlock(&h->mu);
    int peer = -1;
    char why[512] = "";
    int r = runJob(comm, j, &peer, why, sizeof(why));
    atomic_store_explicit(&h->waitingFor, -1, memory_order_relaxed);
    if (r == -1)
      coreSetAsyncError(
          comm, dmacclTimeout,
          "operation %llu: rank %d waited more than %.0f s for rank %d (host executor; %s)",
          (unsigned long long)j->seq, comm->rank, h->timeoutSec, peer, why);
    else if (r == -3)
      coreSetAsyncError(comm, dmacclSystemError,
                        "operation %llu: rank %d: out of memory reading lines (host executor)",
                        (unsigned long long)j->seq, comm->rank);
    if ((r == -1 || r == -3) && planUsesLines(&j->sched) &&
        !atomic_load_explicit(&h->linesFailed, memory_order_relaxed)) {
      /* Its lines may lie in a slot, where a later operation would take
       * them for its own (plan.h LINES): nothing on this set may run. */
      snprintf(h->linesWhy, sizeof(h->linesWhy),
               "operation %llu (stagell) did not complete on rank %d: its line slots may hold "
               "its lines; call dmacclCommAbort",
               (unsigned long long)j->seq, comm->rank);
      atomic_store_explicit(&h->linesFailed, (int)(r == -1 ? dmacclTimeout : dmacclSystemError),
                            memory_order_release);
    }
    pthread_mutex_lock(&h->mu);
    h->done++;
    pthread_cond_broadcast(&h->cv);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* Frees a state whose worker has stopped (or never started). */
static void freeState(dmacclComm_t comm) {
  hostState *h = stateOf(comm);
  for (int i = 0; i < CORE_BOARD_DEPTH; i++) {
    planScheduleFree(&h->jobs[i].sched);
    free(h->jobs[i].send);
    free(h->jobs[i].recv);
    free(h->jobs[i].stage);
    free(h->jobs[i].lines);
    free(h->jobs[i].scratch);
  }
  if (comm->clique->mp)
    coreShmRelease(&h->stageShm);
  else
    free(h->stage);
  free(h->peerStage);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h->flags);
  free(h->peerFlags);
  free(h);
  comm->execState = NULL;
}

static void hostFini(dmacclComm_t comm) {
  hostState *h = stateOf(comm);
  if (!h) return;
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->worker, NULL);
  freeState(comm);
}

/* State and worker of one rank; flags NULL means "on the shared board". */
static dmacclResult_t createState(dmacclComm_t comm, int withFlags) {
  int n = comm->nranks;
  double timeout = coreParamSeconds("DMACCL_HOST_TIMEOUT", 60, 0);
  hostState *h = calloc(1, sizeof(*h));
  if (!h) return dmacclSystemError;
  h->peerFlags = calloc((size_t)n, sizeof(*h->peerFlags));
  h->peerStage = calloc((size_t)n, sizeof(*h->peerStage));
  if (withFlags) h->flags = calloc((size_t)PLAN_NUM_PHASES * (size_t)n, sizeof(*h->flags));
  size_t stageBytes = execAreaBytes(comm->clique, 0);
  /* line slots start at 0; the scratch buffer's pages are touched only by
   * the reductions that use them */
  if (withFlags && stageBytes) h->stage = calloc(1, stageBytes);
  int bad = !h->peerFlags || !h->peerStage || (withFlags && !h->flags) ||
            (withFlags && stageBytes && !h->stage);
  for (int k = 0; k < CORE_BOARD_DEPTH && !bad; k++) {
    h->jobs[k].send = calloc((size_t)n, sizeof(void *));
    h->jobs[k].recv = calloc((size_t)n, sizeof(void *));
    h->jobs[k].stage = calloc((size_t)n, sizeof(void *));
    h->jobs[k].lines = calloc((size_t)n, sizeof(void *));
    h->jobs[k].scratch = calloc((size_t)n, sizeof(void *));
    bad |= !h->jobs[k].send || !h->jobs[k].recv || !h->jobs[k].stage || !h->jobs[k].lines ||
           !h->jobs[k].scratch;
  }
  h->timeoutSec = timeout;
  atomic_init(&h->waitingFor, -1);
  atomic_init(&h->linesFailed, 0);
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  comm->execState = h;
  if (bad || pthread_create(&h->worker, NULL, workerMain, comm) != 0) {
    freeState(comm); /* no worker to join */
    return dmacclSystemError;
  }
  return dmacclSuccess;
}

static dmacclResult_t hostInit(dmacclComm_t *comms, int n, const int *devlist) {
  (void)devlist;
  for (int i = 0; i < n; i++)
    if (createState(comms[i], 1) != dmacclSuccess) {
      for (int k = 0; k < i; k++) hostFini(comms[k]);
      return coreError(NULL, dmacclSystemError,
                       "dmacclCommInitAll: host executor: out of memory or threads");
    }
  for (int i = 0; i < n; i++)
    for (int r = 0; r < n; r++) {
      stateOf(comms[i])->peerFlags[r] = stateOf(comms[r])->flags;
      stateOf(comms[i])->peerStage[r] = stateOf(comms[r])->stage;
    }
  return dmacclSuccess;
}

static dmacclResult_t hostIdentify(int *device, char *name, size_t namelen) {
  *device = -1;
  if (namelen) name[0] = 0;
  return dmacclSuccess;
}

static dmacclResult_t hostInitRank(dmacclComm_t comm, char (*peerNames)[32]) {
  (void)peerNames;
  if (createState(comm, 0) != dmacclSuccess)
    return coreError(NULL, dmacclSystemError,
                     "dmacclCommInitRank: host executor: out of memory or threads");
  hostState *h = stateOf(comm);
  for (int r = 0; r < comm->nranks; r++)
    h->peerFlags[r] = coreBoardRank(comm->clique, r)->hostFlags;
  size_t stageBytes = execAreaBytes(comm->clique, 0); /* a new file reads as 0 */
  if (stageBytes) {
    char err[256];
    dmacclResult_t rc =
        coreShmCreate(comm->clique->boot, comm->nranks, stageBytes, &h->stageShm, err, sizeof(err));
    if (rc != dmacclSuccess) {
      hostFini(comm);
      return coreError(NULL, rc, "dmacclCommInitRank: staging slots: %s", err);
    }
    for (int r = 0; r < comm->nranks; r++)
      h->peerStage[r] = h->stageShm.base + (size_t)r * h->stageShm.stride;
  }
  return dmacclSuccess;
}

static dmacclResult_t hostMemAlloc(dmacclComm_t comm, size_t size, coreMem *m) {
  coreClique *c = comm->clique;
  if (!c->mp) {
    /* One process: plain memory, which every rank's thread reaches. */
    if (!(m->mine = calloc(1, size)))
      return coreError(comm, dmacclSystemError, "dmacclMemAlloc: out of memory (%zu bytes)", size);
    return dmacclSuccess;
  }
  char err[256];
  uint64_t mine = size, *all = calloc((size_t)comm->nranks, sizeof(uint64_t));
  coreShm *shm = calloc(1, sizeof(*shm));
  if (!all || !shm) {
    free(all), free(shm);
    return coreError(comm, dmacclSystemError, "dmacclMemAlloc: out of memory");
  }
  dmacclResult_t rc = bootAllGather(c->boot, &mine, all, sizeof(mine), err, sizeof(err));
  for (int r = 0; rc == dmacclSuccess && r < comm->nranks; r++)
    if (all[r] != mine) {
      rc = dmacclInvalidArgument;
      snprintf(err, sizeof(err), "rank %d asked for %llu bytes, rank %d for %llu: sizes must agree",
               comm->rank, (unsigned long long)mine, r, (unsigned long long)all[r]);
    }
  free(all);
  if (rc == dmacclSuccess) rc = coreShmCreate(c->boot, comm->nranks, size, shm, err, sizeof(err));
  if (rc != dmacclSuccess) {
    free(shm);
    return coreError(comm, rc, "dmacclMemAlloc: %s", err);
  }
  m->mine = shm->base + (size_t)comm->rank * shm->stride;
  m->stride = shm->stride;
  m->exec = shm;
  return dmacclSuccess;
}

static void hostMemFree(dmacclComm_t comm, coreMem *m) {
  if (!comm->clique->mp) {
    free(m->mine);
    return;
  }
  coreShmRelease(m->exec);
  free(m->exec);
}

static dmacclResult_t hostExportBuf(dmacclComm_t comm, const void *ptr, size_t bytes,
                                    coreBufRef *ref, const char *call, const char *arg) {
  (void)ref;
  return coreError(comm, dmacclInvalidArgument,
                   "%s: %s %p (%zu bytes) is not inside memory from dmacclMemAlloc: the host "
                   "executor across processes reaches peers only through it",
                   call, arg, ptr, bytes);
}

static dmacclResult_t hostImportBuf(dmacclComm_t comm, int peer, const coreBufRef *ref,
                                    void **addr) {
  (void)addr;
  return coreError(comm, dmacclInternalError,
                   "host executor: rank %d sent a buffer of kind %d, which it cannot export", peer,
                   ref->kind);
}

static dmacclResult_t hostRegisterBuf(dmacclComm_t comm, void *ptr, size_t size, void **handle) {
  if (comm->clique->mp && !coreMemFind(comm, ptr, size))
    return hostExportBuf(comm, ptr, size, NULL, "dmacclCommRegister", "buff");
  *handle = ptr; /* nothing to keep: memory is reachable as it is */
  return dmacclSuccess;
}

static dmacclResult_t hostDeregisterBuf(dmacclComm_t comm, void *handle) {
  (void)comm, (void)handle;
  return dmacclSuccess;
}

/* The worker sees c->aborting and drops what is left; wait until it has, so
 * that no copy of it still reads or writes the buffers abort frees next
 * (dmacclMemAlloc memory is released before the executor). */
static void hostAbort(dmacclComm_t comm) {
  hostState *h = stateOf(comm);
  pthread_mutex_lock(&h->mu);
  while (h->done != h->queued) pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
}

static int hostComplete(dmacclComm_t comm, uint64_t seq) {
  hostState *h = stateOf(comm);
  pthread_mutex_lock(&h->mu);
  int done = h->done >= seq;
  pthread_mutex_unlock(&h->mu);
  return done;
}

static int hostStuck(dmacclComm_t comm, uint64_t seq, char *why, size_t whylen) {
  (void)seq;
  int p = atomic_load_explicit(&stateOf(comm)->waitingFor, memory_order_relaxed);
  if (p < 0) return 0;
  snprintf(why, whylen, "waiting for rank %d's signal", p);
  return 1;
}

static dmacclResult_t hostCheckBuffer(dmacclComm_t comm, const void *ptr, size_t bytes,
                                      const char *call, const char *argName) {
  /* Host memory cannot be validated without touching it; NULL was checked. */
  (void)comm, (void)ptr, (void)bytes, (void)call, (void)argName;
  return dmacclSuccess;
}

static dmacclResult_t hostCheckStream(dmacclComm_t comm, cudaStream_t stream, const char *call,
                                      int *capturing, unsigned long long *captureId) {
  *capturing = 0;
  *captureId = 0;
  if (stream != NULL)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: stream %p given to a host-executor communicator: pass 0 and wait with "
                     "dmacclCommSynchronize",
                     call, (void *)stream);
  return dmacclSuccess;
}

/* The worker runs whole schedules: the job is queued with its last round. */
static dmacclResult_t hostLaunch(dmacclComm_t comm, const coreOp *op, const planSchedule *s,
                                 const execBuffers *bufs, int from, int to) {
  (void)from;
  if (to != s->nsteps) return dmacclSuccess;
  hostState *h = stateOf(comm);
  pthread_mutex_lock(&h->mu);
  /* The board keeps launches within CORE_BOARD_DEPTH of completion only for
   * posting; wait here if the worker is that far behind. */
  while (h->queued - h->done >= CORE_BOARD_DEPTH - 1) pthread_cond_wait(&h->cv, &h->mu);
  hostJob *j = &h->jobs[(h->queued + 1) % CORE_BOARD_DEPTH];
  pthread_mutex_unlock(&h->mu);

  planSchedule *d = &j->sched;
  if (d->cap < s->nsteps) {
    planStep *steps = realloc(d->steps, (size_t)s->nsteps * sizeof(*steps));
    if (!steps) return coreError(comm, dmacclSystemError, "host executor: out of memory");
    d->steps = steps;
    d->cap = s->nsteps;
  }
  if (d->srcCap < s->nsrcs) {
    planLoc *srcs = realloc(d->srcs, (size_t)s->nsrcs * sizeof(*srcs));
    if (!srcs) return coreError(comm, dmacclSystemError, "host executor: out of memory");
    d->srcs = srcs;
    d->srcCap = s->nsrcs;
  }
  planStep *keep = d->steps;
  planLoc *keepSrcs = d->srcs;
  int keepCap = d->cap, keepSrcCap = d->srcCap;
  *d = *s;
  d->steps = keep;
  d->cap = keepCap;
  d->srcs = keepSrcs;
  d->srcCap = keepSrcCap;
  if (s->nsteps) memcpy(d->steps, s->steps, (size_t)s->nsteps * sizeof(*s->steps));
  if (s->nsrcs) memcpy(d->srcs, s->srcs, (size_t)s->nsrcs * sizeof(*s->srcs));
  size_t off = execStageOffset(comm, s, 0); /* nothing is captured here */
  size_t loff = execLineOffset(comm, s, 0);
  for (int r = 0; r < comm->nranks; r++) {
    j->send[r] = bufs->send[r];
    j->recv[r] = bufs->recv[r];
    j->stage[r] = h->peerStage[r] ? h->peerStage[r] + off : NULL;
    j->lines[r] = h->peerStage[r] ? h->peerStage[r] + loff : NULL;
    j->scratch[r] = h->peerStage[r] && execScratchBytes(comm->clique)
                        ? h->peerStage[r] + execScratchOffset(comm->clique, 0)
                        : NULL;
  }
  j->arrived = bufs->arrived;
  j->arrivedValue = bufs->arrivedValue;
  j->scalar = bufs->scalar;
  j->scalarBits = bufs->scalarBits;
  j->epoch = (uint32_t)op->seq;
  j->seq = op->seq;

  pthread_mutex_lock(&h->mu);
  h->queued++;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
  return dmacclSuccess;
}

static dmacclResult_t hostSync(dmacclComm_t comm, uint64_t seq) {
  (void)seq;
  hostState *h = stateOf(comm);
  pthread_mutex_lock(&h->mu);
  while (h->done != h->queued) pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
  coreClique *c = comm->clique;
  int lf = atomic_load_explicit(&h->linesFailed, memory_order_acquire);
  if (lf) {
    pthread_mutex_lock(&c->lock);
    if (c->broken == dmacclSuccess) coreBreak(c, (dmacclResult_t)lf, h->linesWhy);
    pthread_mutex_unlock(&c->lock);
  }
  if (__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE))
    return coreError(comm, dmacclInvalidUsage,
                     "dmacclCommSynchronize: the communicator was aborted while this waited");
  dmacclResult_t broken = __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE);
  if (broken != dmacclSuccess)
    return coreError(comm, broken, "the communicator is broken: %s", c->brokenWhy);
  return dmacclSuccess; /* the core reports the errors of the operations */
}

/* One rank: the copy, done at the call (a later Synchronize has nothing to
 * wait for; calls of a one-rank set never reach the worker threads). */
static dmacclResult_t hostOneRank(dmacclComm_t comm, const coreOp *op, const void *src, void *dst,
                                  size_t bytes) {
  (void)comm;
  if (op->redop == BASE_PREMULSUM && planCollOf(op->coll)->reduces)
    baseReduceHostScaled(dst, &src, 1, bytes / coreTypeSize(op->datatype), op->datatype,
                         BASE_PREMULSUM, op->premulPtr ? op->premulPtr : &op->premulBits);
  else if (bytes && src != dst)
    memmove(dst, src, bytes);
  if (op->arrived) __atomic_store_n(op->arrived, op->arrivedValue, __ATOMIC_RELEASE);
  return dmacclSuccess;
}

/* The caller's thread waits for the word (a worker's release store). It
 * gives up when the set is aborted or broken, when an operation of comm
 * failed (its error, not yet reported), or when every operation this rank
 * had posted at the call has completed without storing the value. */
static dmacclResult_t hostWaitWord(dmacclComm_t comm, const uint32_t *word, uint32_t value,
                                   cudaStream_t stream) {
  (void)stream;
  coreClique *c = comm->clique;
  uint64_t upTo = __atomic_load_n(&comm->posted, __ATOMIC_ACQUIRE);
  double start = nowSec();
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value) {
    if (__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE))
      return coreError(comm, dmacclInvalidUsage,
                       "dmacclStreamWaitArrival: the communicator was aborted while this waited");
    dmacclResult_t broken = __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE);
    if (broken != dmacclSuccess)
      return coreError(comm, broken, "dmacclStreamWaitArrival: the communicator is broken: %s",
                       c->brokenWhy);
    dmacclResult_t e = __atomic_load_n(&comm->asyncError, __ATOMIC_ACQUIRE);
    if (e == dmacclSuccess) e = __atomic_load_n(&comm->opError, __ATOMIC_ACQUIRE);
    if (e != dmacclSuccess)
      return coreError(comm, e,
                       "dmacclStreamWaitArrival: an operation of the communicator failed (%s) "
                       "before the word held %u; dmacclCommSynchronize reports it",
                       dmacclGetErrorString(e), value);
    if (hostComplete(comm, upTo) && __atomic_load_n(word, __ATOMIC_ACQUIRE) != value)
      return coreError(comm, dmacclInvalidUsage,
                       "dmacclStreamWaitArrival: every operation this rank had posted has "
                       "completed and none stored %u into the word (another call's words, or "
                       "another value?)",
                       value);
    idle(nowSec() - start);
  }
  return dmacclSuccess;
}

const execOps execHostOps = {
    .name = "host",
    .launchBeforeReturn = 0,
    .init = hostInit,
    .fini = hostFini,
    .checkBuffer = hostCheckBuffer,
    .checkStream = hostCheckStream,
    .checkLaunch = NULL,
    .post = NULL,
    .attach = NULL,
    .launch = hostLaunch,
    .sync = hostSync,
    .oneRank = hostOneRank,
    .waitWord = hostWaitWord,
    .identify = hostIdentify,
    .initRank = hostInitRank,
    .memAlloc = hostMemAlloc,
    .memFree = hostMemFree,
    .exportBuf = hostExportBuf,
    .importBuf = hostImportBuf,
    .registerBuf = hostRegisterBuf,
    .deregisterBuf = hostDeregisterBuf,
    .abort = hostAbort,
    .complete = hostComplete,
    .stuck = hostStuck,
};
