/*
 * Progress thread of a multi-process set. It compares staged operations
 * with the peers' calls once those are published (a staged call launches
 * before its peers call), and it watches:
 *   - peers' processes: a peer that exited while operations are pending
 *     breaks the communicator (dmacclRemoteError naming it);
 *   - DMACCL_TIMEOUT (seconds, 0 = off): an operation pending longer breaks
 *     the communicator (dmacclTimeout naming the peer it waits for).
 * A broken communicator records the error for dmacclCommGetAsyncError, and
 * host-side waits (dmacclCommSynchronize, Destroy, posting) give up with it.
 * Device-side waits are released only by dmacclCommAbort.
 */
#include "../exec/exec.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double coreNowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A process that is gone or a zombie. */
static int processGone(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0; /* cannot tell (other PID namespace): assume alive */
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

void coreBreak(coreClique *c, dmacclResult_t code, const char *why) {
  snprintf(c->brokenWhy, sizeof(c->brokenWhy), "%s", why);
  __atomic_store_n(&c->broken, code, __ATOMIC_RELEASE);
  for (int r = 0; r < c->nranks; r++) /* one process: every rank; else the local one */
    if (c->comms[r]) coreSetAsyncError(c->comms[r], code, "%s", why);
  pthread_cond_broadcast(&c->cond);
}

/* The first rank that has not published seq. */
static int missingPoster(coreClique *c, uint64_t seq) {
  for (int r = 0; r < c->nranks; r++)
    if (atomic_load_explicit(&coreBoardRank(c, r)->ops[seq % CORE_BOARD_DEPTH].seq,
                             memory_order_acquire) != seq)
      return r;
  return -1;
}

/* Checks peers and the oldest pending operation. Lock held. */
static void watch(coreClique *c, double now) {
  dmacclComm_t comm = c->comms[c->localRank];
  /* A rank's eager operations complete in order, so the walk may start at
   * the oldest of the last CORE_BOARD_DEPTH launched (the oldest whose
   * board slot, and executor's event, is still its own): if it is eager
   * and complete, so is every operation before it (a captured one counts
   * as complete, so it proves nothing). Walking every operation since the
   * last round queried thousands of events under the set's lock after a
   * busy 100 ms (an eager loop launches one every 8 us): milliseconds that
   * a caller waited for the lock. */
  uint64_t last = c->nextLaunch - 1;
  if (last >= c->completed + CORE_BOARD_DEPTH) {
    uint64_t oldest = last - CORE_BOARD_DEPTH + 1;
    if (!c->localOps[oldest % CORE_BOARD_DEPTH].capture && comm->exec->complete(comm, oldest)) {
      c->completed = oldest;
      c->pendingSince = 0;
    }
  }
  while (c->completed < last && comm->exec->complete(comm, c->completed + 1)) {
    c->completed++;
    c->pendingSince = 0;
  }
  int pending = c->completed < comm->posted;
  if (!pending) {
    c->pendingSince = c->deadSince = 0;
    return;
  }
  if (c->pendingSince == 0) c->pendingSince = now;
  uint64_t seq = c->completed + 1;
  char why[256];
  /* The timeout first: it names what blocks the operation, and a peer that
   * gave up on the same operation may already have exited. */
  if (c->timeoutSec > 0 && now - c->pendingSince > c->timeoutSec) {
    char detail[160] = "";
    int r = seq >= c->nextLaunch ? missingPoster(c, seq) : -1;
    if (r >= 0)
      snprintf(detail, sizeof(detail), "rank %d has not called it", r);
    else if (!comm->exec->stuck(comm, seq, detail, sizeof(detail)))
      snprintf(detail, sizeof(detail), "the copies have not finished");
    snprintf(why, sizeof(why),
             "operation %llu on rank %d is not complete after %.0f s (DMACCL_TIMEOUT): %s",
             (unsigned long long)seq, c->localRank, c->timeoutSec, detail);
    coreBreak(c, dmacclTimeout, why);
    return;
  }
  for (int r = 0; r < c->nranks; r++) {
    if (r == c->localRank || !processGone(c->pids[r])) continue;
    /* A peer that finished cleanly may exit while our last copies drain:
     * give pending work a grace period before calling it lost. The peer
     * named is the first seen gone: peers that see the same death give up
     * and may exit within the grace period, and are not the cause. */
    if (c->deadSince == 0) c->deadSince = now, c->deadRank = r;
    if (now - c->deadSince < 2.0) return;
    if (processGone(c->pids[c->deadRank])) r = c->deadRank;
    snprintf(why, sizeof(why),
             "rank %d (pid %d) exited while operation %llu was pending on rank %d; it cannot "
             "complete: call dmacclCommAbort",
             r, c->pids[r], (unsigned long long)seq, c->localRank);
    coreBreak(c, dmacclRemoteError, why);
    return;
  }
}

/*
 * The thread never polls the board in a tight loop: while a rank keeps
 * calling, its own posts compare the staged operations the peers have
 * called too (coreMpPost), and a thread that took the set's lock over and
 * over beside them made each call wait for it (a 2-rank eager AllGather
 * spent 0.6-1.6 us per call in the lock's hand-over, 2x H100). The thread
 * compares what is left every PROGRESS_POLL_NS while comparisons are due
 * or the rank called in the last PROGRESS_QUIET_POLLS polls (a rank that
 * stopped calling still lets its peers' flow control go on: a peer 64
 * operations ahead waits for this rank's comparisons), and otherwise sleeps
 * until the watchdog's next round; a post that leaves comparisons due wakes
 * it from that sleep (progressIdle), which the quiet polls keep to the
 * first call after a pause.
 *
 * It sleeps on its own lock and takes the set's only when it is free
 * (trylock): a poll that waited for the set's lock, held by a caller for
 * most of each call (the kernel launch is inside it), made that caller's
 * unlock wake the thread, a futex wake of microseconds in a VM; the caller
 * is comparing anyway. After PROGRESS_TRY_MAX busy polls in a row it waits
 * for the lock: the watchdog must run.
 */
#define PROGRESS_POLL_NS 250000L
#define PROGRESS_QUIET_POLLS 80 /* 20 ms */
#define PROGRESS_TRY_MAX 40     /* 10 ms */

static void *progressMain(void *arg) {
  coreClique *c = arg;
  dmacclComm_t own = c->comms[c->localRank];
  if (own && own->exec->bindThread) own->exec->bindThread(own->device);
  double lastWatch = 0;
  uint64_t seen = 0; /* postTick at the last poll */
  int quiet = 0;     /* polls since the rank last called */
  int busy = 0;      /* polls in a row that found the set's lock taken */
  while (!atomic_load(&c->progressStop)) {
    int waiting = 1; /* a busy poll: a caller is in a call, poll again soon */
    int got = busy >= PROGRESS_TRY_MAX ? pthread_mutex_lock(&c->lock) == 0
                                       : pthread_mutex_trylock(&c->lock) == 0;
    if (got) {
      busy = 0;
      /* Work: staged operations to compare with the peers' calls. */
      if (c->checked + 1 < c->nextLaunch && !c->aborting) coreMpCheckStaged(c);
      double now = coreNowSec();
      if (now - lastWatch > 0.1 && !c->broken && !c->aborting) {
        watch(c, now);
        lastWatch = now;
      }
      uint64_t tick = atomic_load(&c->postTick);
      quiet = tick != seen ? 0 : quiet + 1;
      seen = tick;
      int due = c->checked + 1 < c->nextLaunch;
      waiting = (due || quiet < PROGRESS_QUIET_POLLS) && !c->aborting && !c->broken;
      pthread_mutex_unlock(&c->lock);
    } else {
      busy++;
    }
    pthread_mutex_lock(&c->progressMu);
    /* Idle, then the posts looked at once more: a post counts itself, then
     * reads progressIdle (coreMpPost), so one of the two sees the other
     * and no post is left without a wake or a poll. */
    atomic_store(&c->progressIdle, !waiting);
    if (!waiting && atomic_load(&c->postTick) != seen) {
      waiting = 1;
      atomic_store(&c->progressIdle, 0);
    }
    if (!atomic_load(&c->progressStop)) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      ts.tv_nsec += waiting ? PROGRESS_POLL_NS : 100000000L; /* else the watchdog's 100 ms */
      if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&c->progressCv, &c->progressMu, &ts);
    }
    atomic_store(&c->progressIdle, 0);
    pthread_mutex_unlock(&c->progressMu);
  }
  return NULL;
}

void coreProgressWake(coreClique *c) {
  pthread_mutex_lock(&c->progressMu);
  pthread_cond_signal(&c->progressCv);
  pthread_mutex_unlock(&c->progressMu);
}

dmacclResult_t coreProgressStart(coreClique *c) {
  /* monotonic: a step of the wall clock must not stall the 250 us polls
   * that peers' flow control may wait for */
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&c->progressCv, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&c->progressMu, NULL);
  atomic_store(&c->progressStop, 0);
  atomic_store(&c->progressIdle, 0);
  atomic_store(&c->postTick, 0);
  if (pthread_create(&c->progress, NULL, progressMain, c) != 0)
    return coreError(NULL, dmacclSystemError,
                     "dmacclCommInitRank: cannot start the progress thread");
  c->progressStarted = 1;
  return dmacclSuccess;
}

void coreProgressStop(coreClique *c) {
  if (!c->progressStarted) return;
  atomic_store(&c->progressStop, 1);
  coreProgressWake(c);
  pthread_join(c->progress, NULL);
  c->progressStarted = 0;
  pthread_cond_destroy(&c->progressCv);
  pthread_mutex_destroy(&c->progressMu);
}
