/*
 * Host executor: every rank is a worker thread working on host memory, and
 * runs the same schedules as the CUDA executor. Lanes behave as streams: each
 * is an in-order queue, and a WAIT blocks only its own lane, so the worker
 * advances every lane as far as it can and spins while all are blocked. A
 * rank that waits longer than DMACCL_HOST_TIMEOUT seconds for a peer fails
 * the operation with an asynchronous error that names the peer (a schedule
 * that deadlocks is caught this way in tests).
 *
 * Flags are per-rank arrays of 32-bit counters in host memory, [phase][peer],
 * written by peers with release stores and read with acquire loads, so data
 * copied before a SIGNAL is visible after the matching WAIT.
 */
#include "exec.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  planSchedule sched;
  const void **send;
  void **recv;
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
  _Atomic uint32_t *flags; /* [PLAN_NUM_PHASES][nranks] */
  double timeoutSec;
} hostState;

static hostState *stateOf(dmacclComm_t c) {
  return (hostState *)c->execState;
}

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs one job; returns -1 and the peer on timeout. */
static int runJob(dmacclComm_t comm, hostJob *j, int *stuckPeer) {
  const planSchedule *s = &j->sched;
  const execBuffers b = {j->send, j->recv};
  int nl = s->nlanes;
  int cursor[CORE_MAX_RANKS];
  for (int l = 0; l < nl; l++) cursor[l] = 0;
  double start = 0;
  for (;;) {
    int progressed = 0, finished = 1;
    for (int l = 0; l < nl; l++) {
      for (;;) {
        while (cursor[l] < s->nsteps && s->steps[cursor[l]].lane != l) cursor[l]++;
        if (cursor[l] >= s->nsteps) break;
        const planStep *st = &s->steps[cursor[l]];
        if (st->kind == PLAN_STEP_WAIT) {
          _Atomic uint32_t *f = &stateOf(comm)->flags[st->phase * comm->nranks + st->peer];
          uint32_t v = atomic_load_explicit(f, memory_order_acquire);
          if ((int32_t)(v - j->epoch) < 0) {
            *stuckPeer = st->peer;
            break;
          }
        } else if (st->kind == PLAN_STEP_SIGNAL) {
          hostState *peer = stateOf(comm->clique->comms[st->peer]);
          atomic_store_explicit(&peer->flags[st->phase * comm->nranks + comm->rank], j->epoch,
                                memory_order_release);
        } else {
          memcpy(execLocate(&b, st->dst), execLocate(&b, st->src), st->bytes);
        }
        cursor[l]++;
        progressed = 1;
      }
      if (cursor[l] < s->nsteps) finished = 0;
    }
    if (finished) return 0;
    if (!progressed) {
      if (start == 0)
        start = nowSec();
      else if (nowSec() - start > stateOf(comm)->timeoutSec)
        return -1;
      sched_yield();
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
    if (runJob(comm, j, &peer) != 0)
      coreSetAsyncError(
          comm, dmacclTimeout,
          "operation %llu: rank %d waited more than %.0f s for rank %d (host executor)",
          (unsigned long long)j->seq, comm->rank, h->timeoutSec, peer);
    pthread_mutex_lock(&h->mu);
    h->done++;
    pthread_cond_broadcast(&h->cv);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

static void hostFini(dmacclComm_t comm) {
  hostState *h = stateOf(comm);
  if (!h) return;
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->worker, NULL);
  for (int i = 0; i < CORE_BOARD_DEPTH; i++) {
    planScheduleFree(&h->jobs[i].sched);
    free(h->jobs[i].send);
    free(h->jobs[i].recv);
  }
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h->flags);
  free(h);
  comm->execState = NULL;
}

static dmacclResult_t hostInit(dmacclComm_t *comms, int n, const int *devlist) {
  (void)devlist;
  double timeout = atof(coreParamString("DMACCL_HOST_TIMEOUT"));
  if (timeout <= 0) timeout = 60;
  for (int i = 0; i < n; i++) {
    hostState *h = calloc(1, sizeof(*h));
    if (!h || !(h->flags = calloc((size_t)PLAN_NUM_PHASES * (size_t)n, sizeof(*h->flags)))) {
      free(h);
      goto nomem;
    }
    for (int k = 0; k < CORE_BOARD_DEPTH; k++) {
      h->jobs[k].send = calloc((size_t)n, sizeof(void *));
      h->jobs[k].recv = calloc((size_t)n, sizeof(void *));
    }
    h->timeoutSec = timeout;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    comms[i]->execState = h;
    int bad = 0;
    for (int k = 0; k < CORE_BOARD_DEPTH; k++) bad |= !h->jobs[k].send || !h->jobs[k].recv;
    if (bad || pthread_create(&h->worker, NULL, workerMain, comms[i]) != 0) {
      /* No worker to join: release by hand. */
      for (int k = 0; k < CORE_BOARD_DEPTH; k++) {
        free(h->jobs[k].send);
        free(h->jobs[k].recv);
      }
      free(h->flags);
      free(h);
      comms[i]->execState = NULL;
      goto nomem;
    }
  }
  return dmacclSuccess;
nomem:
  for (int i = 0; i < n; i++) hostFini(comms[i]);
  return coreError(NULL, dmacclSystemError,
                   "dmacclCommInitAll: host executor: out of memory or threads");
}

static dmacclResult_t hostCheckBuffer(dmacclComm_t comm, const void *ptr, size_t bytes,
                                      const char *call, const char *argName) {
  /* Host memory cannot be validated without touching it; NULL was checked. */
  (void)comm, (void)ptr, (void)bytes, (void)call, (void)argName;
  return dmacclSuccess;
}

static dmacclResult_t hostCheckStream(dmacclComm_t comm, cudaStream_t stream, const char *call) {
  if (stream != NULL)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: stream %p given to a host-executor communicator: pass 0 and wait with "
                     "dmacclCommSynchronize",
                     call, (void *)stream);
  return dmacclSuccess;
}

static dmacclResult_t hostPost(dmacclComm_t comm, const coreOp *op) {
  (void)comm, (void)op;
  return dmacclSuccess;
}

static dmacclResult_t hostLaunch(dmacclComm_t comm, const coreOp *op, const planSchedule *s,
                                 const execBuffers *bufs) {
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
  planStep *keep = d->steps;
  int keepCap = d->cap;
  *d = *s;
  d->steps = keep;
  d->cap = keepCap;
  if (s->nsteps) memcpy(d->steps, s->steps, (size_t)s->nsteps * sizeof(*s->steps));
  for (int r = 0; r < comm->nranks; r++) {
    j->send[r] = bufs->send[r];
    j->recv[r] = bufs->recv[r];
  }
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
  dmacclResult_t err = __atomic_load_n(&comm->asyncError, __ATOMIC_ACQUIRE);
  return err;
}

const execOps execHostOps = {
    "host", hostInit, hostFini, hostCheckBuffer, hostCheckStream, hostPost, hostLaunch, hostSync,
};
