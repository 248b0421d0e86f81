/*
 * dmacclCommSplit with ranks as processes: host executor (CI; buffers from
 * dmacclMemAlloc) and, with the argument "gpu", the CUDA executor (rank r on
 * GPU r % GPUs: ranks share a GPU on a one-GPU machine; cudaMalloc buffers).
 *
 * - Colors by parity, keys reversing the order: each new communicator's
 *   size and ranks, and an AllGather whose order shows who is where, an
 *   AllReduce that shows who is in it (random int64 values, every element
 *   compared), on the new communicator while the parent still works.
 * - DMACCL_SPLIT_NOCOLOR: NULL, and the others' communicator lacks the rank.
 * - A split of a split, with a config (CTA policy zero), and the parent
 *   destroyed before its children are used again.
 * - Without a config the parent's executor, CTA policy and algorithm string
 *   (white box); with one, its CTA policy, passed on to its own splits.
 * - Wrong arguments on one rank (newcomm NULL, a negative color, a config
 *   not initialized, another executor, a call inside a group): that rank's
 *   specific error, dmacclRemoteError naming it on the others, *newcomm
 *   untouched, and the parent usable, and splittable again, afterwards.
 * - One process (dmacclCommInitAll, host executor): dmacclInvalidUsage.
 */
#include "harness.h"
#include "mp.h"
#include "../src/core/core.h" /* white box: what a split inherited */

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXN 6
#define CNT 257

typedef struct {
  int gpu;
} spArg;

typedef struct {
  int gpu;
  cudaStream_t st;
  char *buf; /* 2 * MAXN * CNT int64 values */
} spBufs;

static uint64_t valueOf(int parentRank, int i, uint64_t salt) {
  uint64_t x = (uint64_t)parentRank * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull +
               salt * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x * 0xD6E8FEB86659FD93ull;
}

static int put(const spBufs *b, size_t off, const void *src, size_t bytes) {
  if (!b->gpu) return memcpy(b->buf + off, src, bytes), 0;
  return cudaMemcpy(b->buf + off, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
         cudaDeviceSynchronize() != cudaSuccess;
}
static int get(const spBufs *b, size_t off, void *dst, size_t bytes) {
  if (!b->gpu) return memcpy(dst, b->buf + off, bytes), 0;
  return cudaMemcpy(dst, b->buf + off, bytes, cudaMemcpyDeviceToHost) != cudaSuccess;
}

/* On `comm`, whose rank k is parent rank members[k]: an AllGather of each
 * rank's values and an AllReduce (sum) of them, every element checked. */
static int checkComm(int rank, dmacclComm_t comm, const int *members, int n, const spBufs *b,
                     uint64_t salt) {
  int cn = -1, me = -1;
  RANK_CHECK(dmacclCommCount(comm, &cn) == dmacclSuccess && cn == n);
  RANK_CHECK(dmacclCommUserRank(comm, &me) == dmacclSuccess && me >= 0 && me < n);
  RANK_CHECK(members[me] == rank);
  uint64_t mine[CNT], got[MAXN * CNT], poison[MAXN * CNT];
  for (int i = 0; i < CNT; i++) mine[i] = valueOf(rank, i, salt);
  memset(poison, 0xA5, sizeof(poison));
  size_t recvOff = CNT * sizeof(uint64_t);
  RANK_CHECK(put(b, 0, mine, sizeof(mine)) == 0 && put(b, recvOff, poison, sizeof(poison)) == 0);
  RANK_CHECK(dmacclAllGather(b->buf, b->buf + recvOff, CNT, dmacclUint64, comm, b->st) ==
             dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
  if (b->gpu) RANK_CHECK(cudaStreamSynchronize(b->st) == cudaSuccess);
  RANK_CHECK(get(b, recvOff, got, sizeof(got)) == 0);
  for (int k = 0; k < n; k++)
    for (int i = 0; i < CNT; i++) RANK_CHECK(got[k * CNT + i] == valueOf(members[k], i, salt));
  for (int i = n * CNT; i < MAXN * CNT; i++) RANK_CHECK(got[i] == poison[i]);
  RANK_CHECK(put(b, recvOff, poison, sizeof(poison)) == 0);
  RANK_CHECK(dmacclAllReduce(b->buf, b->buf + recvOff, CNT, dmacclUint64, dmacclSum, comm, b->st) ==
             dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
  if (b->gpu) RANK_CHECK(cudaStreamSynchronize(b->st) == cudaSuccess);
  RANK_CHECK(get(b, recvOff, got, sizeof(got)) == 0);
  for (int i = 0; i < CNT; i++) {
    uint64_t want = 0;
    for (int k = 0; k < n; k++) want += valueOf(members[k], i, salt);
    RANK_CHECK(got[i] == want);
  }
  for (int i = CNT; i < MAXN * CNT; i++) RANK_CHECK(got[i] == poison[i]);
  return 0;
}

/* The parent ranks of color `color` ordered by (key, rank), keys given. */
static int membersOf(int n, const int *colors, const int *keys, int color, int *out) {
  int m = 0;
  for (int r = 0; r < n; r++)
    if (colors[r] == color) out[m++] = r;
  for (int i = 1; i < m; i++) /* insertion sort by (key, rank) */
    for (int j = i; j > 0 && (keys[out[j]] < keys[out[j - 1]] ||
                              (keys[out[j]] == keys[out[j - 1]] && out[j] < out[j - 1]));
         j--) {
      int t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return m;
}

/* This rank's buffer for comm (the host executor across processes needs
 * the communicator's shared memory; GPUs any device memory). */
static int bufsFor(dmacclComm_t comm, int gpu, cudaStream_t st, spBufs *b) {
  b->gpu = gpu;
  b->st = st;
  size_t bytes = 2 * MAXN * CNT * sizeof(uint64_t);
  if (gpu) return cudaMalloc((void **)&b->buf, bytes) != cudaSuccess;
  return dmacclMemAlloc(comm, bytes, (void **)&b->buf) != dmacclSuccess;
}
static void bufsFree(dmacclComm_t comm, spBufs *b) {
  if (b->gpu)
    cudaFree(b->buf);
  else
    dmacclMemFree(comm, b->buf);
}

static int body(int rank, int n, const dmacclUniqueId *id, void *arg) {
  const spArg *a = arg;
  cudaStream_t st = NULL;
  if (a->gpu) {
    int ngpu = 0;
    RANK_CHECK(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0);
    RANK_CHECK(cudaSetDevice(rank % ngpu) == cudaSuccess);
    RANK_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
  }
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = a->gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  cfg.algorithm = "allgather:pull1"; /* inherited by the splits without a config */
  dmacclComm_t parent;
  RANK_CHECK(dmacclCommInitRank(&parent, n, *id, rank, &cfg) == dmacclSuccess);
  int dev = -2, sub = -2;
  RANK_CHECK(dmacclCommCuDevice(parent, &dev) == dmacclSuccess);
  spBufs pb;
  RANK_CHECK(bufsFor(parent, a->gpu, st, &pb) == 0);
  int all[MAXN];
  for (int r = 0; r < MAXN; r++) all[r] = r;
  RANK_CHECK(checkComm(rank, parent, all, n, &pb, 1) == 0);

  /* 1. parity colors, reversed keys; rank 0 joins none when n > 2 */
  int colors[MAXN], keys[MAXN], members[MAXN];
  for (int r = 0; r < n; r++) {
    colors[r] = n > 2 && r == 0 ? DMACCL_SPLIT_NOCOLOR : r % 2;
    keys[r] = -r;
  }
  dmacclComm_t half = (dmacclComm_t)(uintptr_t)1;
  RANK_CHECK(dmacclCommSplit(parent, colors[rank], keys[rank], &half, NULL) == dmacclSuccess);
  spBufs hb = {0};
  if (colors[rank] == DMACCL_SPLIT_NOCOLOR) {
    RANK_CHECK(half == NULL);
  } else {
    RANK_CHECK(half != NULL && half != (dmacclComm_t)(uintptr_t)1);
    RANK_CHECK(dmacclCommCuDevice(half, &sub) == dmacclSuccess && sub == dev);
    /* no config: the parent's executor, CTA policy and algorithm string */
    RANK_CHECK(half->executor == parent->executor);
    RANK_CHECK(half->clique->table.ctaPolicy == parent->clique->table.ctaPolicy);
    RANK_CHECK(half->clique->algorithm && !strcmp(half->clique->algorithm, "allgather:pull1"));
    int m = membersOf(n, colors, keys, colors[rank], members);
    RANK_CHECK(bufsFor(half, a->gpu, st, &hb) == 0);
    RANK_CHECK(checkComm(rank, half, members, m, &hb, 2) == 0);
  }
  RANK_CHECK(checkComm(rank, parent, all, n, &pb, 3) == 0); /* the parent still works */

  /* 2. wrong arguments on one rank: its own error, the others' remote
   * error naming it, nothing made, the parent usable and splittable */
  int bad = n - 1;
  for (int how = 0; how < 4; how++) {
    dmacclComm_t keep = (dmacclComm_t)(uintptr_t)7;
    dmacclConfig_t broken = DMACCL_CONFIG_INITIALIZER;
    broken.magic = 0;
    dmacclResult_t rc;
    if (rank != bad)
      rc = dmacclCommSplit(parent, 0, rank, &keep, NULL);
    else if (how == 0)
      rc = dmacclCommSplit(parent, 0, rank, NULL, NULL);
    else if (how == 1)
      rc = dmacclCommSplit(parent, -5, rank, &keep, NULL);
    else if (how == 2)
      rc = dmacclCommSplit(parent, 0, rank, &keep, &broken);
    else { /* another executor than the parent's */
      dmacclConfig_t other = DMACCL_CONFIG_INITIALIZER;
      other.executor = a->gpu ? dmacclExecutorHost : dmacclExecutorCuda;
      rc = dmacclCommSplit(parent, 0, rank, &keep, &other);
    }
    const char *why = dmacclCommGetLastError(parent);
    if (rank == bad) {
      RANK_CHECK(rc == dmacclInvalidArgument);
      RANK_CHECK(strstr(why, how == 0   ? "newcomm"
                             : how == 1 ? "color -5"
                             : how == 2 ? "DMACCL_CONFIG_INITIALIZER"
                                        : "executor"));
    } else {
      RANK_CHECK(rc == dmacclRemoteError);
      char rk[32];
      snprintf(rk, sizeof(rk), "rank %d", bad);
      RANK_CHECK(strstr(why, rk) != NULL);
    }
    RANK_CHECK(keep == (dmacclComm_t)(uintptr_t)7);
    RANK_CHECK(checkComm(rank, parent, all, n, &pb, 4 + (uint64_t)how) == 0);
  }
  /* inside a group (rank 0 only): refused there, and the others learn it */
  dmacclComm_t none = NULL;
  if (rank == 0) RANK_CHECK(dmacclGroupStart() == dmacclSuccess);
  dmacclResult_t grc = dmacclCommSplit(parent, 0, 0, &none, NULL);
  RANK_CHECK(!none);
  RANK_CHECK(grc == (rank == 0 ? dmacclInvalidUsage : dmacclRemoteError));
  RANK_CHECK(strstr(dmacclCommGetLastError(parent), rank == 0 ? "group" : "rank 0"));
  if (rank == 0) RANK_CHECK(dmacclGroupEnd() == dmacclSuccess);
  RANK_CHECK(checkComm(rank, parent, all, n, &pb, 7) == 0);

  /* 3. everyone in one color, keys = rank, with a config (CTA policy zero);
   * then a split of that one, and the parent destroyed before it is used */
  dmacclConfig_t zero = DMACCL_CONFIG_INITIALIZER;
  zero.ctaPolicy = dmacclCtaPolicyZero;
  dmacclComm_t whole = NULL, again = NULL;
  RANK_CHECK(dmacclCommSplit(parent, 7, rank, &whole, &zero) == dmacclSuccess && whole);
  RANK_CHECK(whole->clique->table.ctaPolicy == dmacclCtaPolicyZero && !whole->clique->algorithm);
  spBufs wb;
  RANK_CHECK(bufsFor(whole, a->gpu, st, &wb) == 0);
  RANK_CHECK(checkComm(rank, whole, all, n, &wb, 8) == 0);
  int c2[MAXN], k2[MAXN];
  for (int r = 0; r < n; r++) {
    c2[r] = r < (n + 1) / 2 ? 0 : 1;
    k2[r] = 5;
  }
  RANK_CHECK(dmacclCommSplit(whole, c2[rank], k2[rank], &again, NULL) == dmacclSuccess && again);
  RANK_CHECK(again->clique->table.ctaPolicy == dmacclCtaPolicyZero); /* whole's */
  bufsFree(parent, &pb);
  RANK_CHECK(dmacclCommDestroy(parent) == dmacclSuccess);
  int m2 = membersOf(n, c2, k2, c2[rank], members);
  spBufs ab;
  RANK_CHECK(bufsFor(again, a->gpu, st, &ab) == 0);
  RANK_CHECK(checkComm(rank, again, members, m2, &ab, 9) == 0);
  if (half) {
    int m = membersOf(n, colors, keys, colors[rank], members);
    RANK_CHECK(checkComm(rank, half, members, m, &hb, 10) == 0);
    bufsFree(half, &hb);
    RANK_CHECK(dmacclCommDestroy(half) == dmacclSuccess);
  }
  bufsFree(again, &ab);
  bufsFree(whole, &wb);
  RANK_CHECK(dmacclCommDestroy(again) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(whole) == dmacclSuccess);
  return 0;
}

static int run(int gpu) {
  spArg a = {gpu};
  const int sizes[] = {1, 2, 3, 5};
  for (int i = 0; i < 4; i++) {
    int failed = mpRun(sizes[i], body, &a, 300, 0);
    if (failed) {
      TEST_FAIL("%s, %d ranks: %d rank(s) failed", gpu ? "cuda" : "host", sizes[i], failed);
      return 1;
    }
  }
  return 0;
}

static int testHost(void) {
  return run(0);
}

static int testCuda(void) {
  if (!mpGpusPresent()) {
    printf("test_split gpu: SKIPPED: no GPU\n");
    exit(TEST_SKIP_CODE);
  }
  return run(1);
}

/* Three ranks run body with DMACCL_INIT_TIMEOUT of `timeout` seconds. */
static int runTimed(int timeout, mpBody body, double limit, const char *what) {
  char t[16];
  snprintf(t, sizeof(t), "%d", timeout);
  setenv("DMACCL_INIT_TIMEOUT", t, 1);
  int failed = mpRun(3, body, NULL, limit, 0);
  unsetenv("DMACCL_INIT_TIMEOUT");
  if (failed) {
    TEST_FAIL("%s: %d rank(s) failed", what, failed);
    return 1;
  }
  return 0;
}

/* A rank that comes to a split after the others gave up on it
 * (DMACCL_INIT_TIMEOUT 4 s, rank 1 sleeps 6 s: 2 s of margin either side
 * on a loaded machine): rank 0 times out naming
 * it, ranks 1 and 2 fail with a remote error (rank 0's answer), nothing
 * is made. rank 2's
 * message was never read by rank 0 and rank 1's came late: both are
 * dropped at the next exchange (rank 0 is in it when rank 1 comes, within
 * its 4 s), so the next splits (each rank alone, then all in reversed
 * order) are made from their own colors and keys, not the stale ones. */
static int lateBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  dmacclComm_t parent = NULL;
  RANK_CHECK(dmacclCommInitRank(&parent, n, *id, rank, &cfg) == dmacclSuccess);
  dmacclComm_t out = (dmacclComm_t)(uintptr_t)5;
  if (rank == 1) usleep(6000 * 1000);
  dmacclResult_t rc = dmacclCommSplit(parent, 0, rank, &out, NULL);
  /* rank 2 waits for rank 0's answer (a timeout past its own) */
  RANK_CHECK(rank == 0 ? rc == dmacclTimeout : rc == dmacclRemoteError);
  RANK_CHECK(out == (dmacclComm_t)(uintptr_t)5);
  if (rank == 0) RANK_CHECK(strstr(dmacclCommGetLastError(parent), "rank 1 did not take part"));
  RANK_CHECK(dmacclCommSplit(parent, rank, 0, &out, NULL) == dmacclSuccess);
  int count = 0, me = -1;
  RANK_CHECK(dmacclCommCount(out, &count) == dmacclSuccess && count == 1);
  RANK_CHECK(dmacclCommDestroy(out) == dmacclSuccess);
  RANK_CHECK(dmacclCommSplit(parent, 7, -rank, &out, NULL) == dmacclSuccess);
  RANK_CHECK(dmacclCommCount(out, &count) == dmacclSuccess && count == n);
  RANK_CHECK(dmacclCommUserRank(out, &me) == dmacclSuccess && me == n - 1 - rank);
  RANK_CHECK(dmacclCommDestroy(out) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(parent) == dmacclSuccess);
  return 0;
}

static int testLateRank(void) {
  return runTimed(4, lateBody, 120, "a late rank");
}

/* A rank that comes after an early rank's timeout has ended but within
 * rank 0's (DMACCL_INIT_TIMEOUT 6 s: rank 2 at once, rank 0 after 3 s,
 * rank 1 after 7.5 s; 1.5 s of margin either side): rank 0's answer is the
 * one verdict, so the split fails on every rank, rank 0 naming both ranks,
 * and nothing is made (before, rank 2 timed out on its own clock while
 * ranks 0 and 1 made a communicator with it). The next split works. */
static int earlyBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  dmacclComm_t parent = NULL;
  RANK_CHECK(dmacclCommInitRank(&parent, n, *id, rank, &cfg) == dmacclSuccess);
  dmacclComm_t out = (dmacclComm_t)(uintptr_t)5;
  if (rank == 0) usleep(3000 * 1000);
  if (rank == 1) usleep(7500 * 1000);
  dmacclResult_t rc = dmacclCommSplit(parent, 0, rank, &out, NULL);
  if (rank == 0 && rc != dmacclTimeout)
    fprintf(stderr, "rank 0: %d: %s\n", (int)rc, dmacclCommGetLastError(parent));
  RANK_CHECK(rank == 0 ? rc == dmacclTimeout : rc == dmacclRemoteError);
  RANK_CHECK(out == (dmacclComm_t)(uintptr_t)5);
  if (rank == 0)
    RANK_CHECK(strstr(dmacclCommGetLastError(parent),
                      "rank 1 came to this exchange after rank 2's timeout (6 s) had ended"));
  RANK_CHECK(dmacclCommSplit(parent, 7, -rank, &out, NULL) == dmacclSuccess);
  int count = 0, me = -1;
  RANK_CHECK(dmacclCommCount(out, &count) == dmacclSuccess && count == n);
  RANK_CHECK(dmacclCommUserRank(out, &me) == dmacclSuccess && me == n - 1 - rank);
  RANK_CHECK(dmacclCommDestroy(out) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(parent) == dmacclSuccess);
  return 0;
}

static int testEarlyRank(void) {
  return runTimed(6, earlyBody, 120, "an early rank");
}

/* The join of dmacclCommInitRank honours every rank's timeout as an
 * exchange does (DMACCL_INIT_TIMEOUT 4 s: rank 1 at once, rank 0 after 2 s,
 * rank 2 after 5.5 s): rank 0 fails the join when rank 1's timeout ends, and
 * rank 1 hears that verdict (before, it waited 5 s past its own timeout, so
 * that a rank 0 later than that made the set without it); rank 2 finds no
 * rendezvous. Every rank fails. */
static int joinBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  if (rank == 0) usleep(2000 * 1000);
  if (rank == 2) usleep(5500 * 1000);
  dmacclComm_t comm = (dmacclComm_t)(uintptr_t)5;
  dmacclResult_t rc = dmacclCommInitRank(&comm, n, *id, rank, &cfg);
  const char *e = dmacclCommGetLastError(NULL);
  if (rc != dmacclTimeout) fprintf(stderr, "rank %d: %d: %s\n", rank, (int)rc, e);
  RANK_CHECK(rc == dmacclTimeout);
  if (rank < 2) RANK_CHECK(strstr(e, "2 of 3 ranks joined within rank 1's 4 s"));
  RANK_CHECK(comm == (dmacclComm_t)(uintptr_t)5);
  return 0;
}

static int testEarlyJoin(void) {
  return runTimed(4, joinBody, 60, "a join past a rank's timeout");
}

/* A set of one process cannot be split (each rank's call would wait for the
 * others on this one thread). */
static int testOneProcess(void) {
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  dmacclComm_t comms[2], out = (dmacclComm_t)(uintptr_t)3;
  ASSERT_EQ_INT(dmacclCommInitAll(comms, 2, NULL, &cfg), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommSplit(comms[0], 0, 0, &out, NULL), dmacclInvalidUsage);
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[0]), "dmacclCommInitAll");
  ASSERT_TRUE(out == (dmacclComm_t)(uintptr_t)3);
  ASSERT_EQ_INT(dmacclCommSplit(NULL, 0, 0, &out, NULL), dmacclInvalidArgument);
  for (int r = 0; r < 2; r++) ASSERT_EQ_INT(dmacclCommDestroy(comms[r]), dmacclSuccess);
  return 0;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (!only) {
    RUN(testHost);
    RUN(testOneProcess);
    RUN(testLateRank);
    RUN(testEarlyRank);
    RUN(testEarlyJoin);
  } else if (!strcmp(only, "gpu")) {
    RUN(testCuda);
  }
  TEST_EXIT();
}
