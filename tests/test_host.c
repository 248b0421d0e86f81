/*
 * Host executor: the same schedules as on GPUs, ranks as threads on host
 * memory. All data types, in place and out of place, nranks 1..8, every
 * algorithm, random data, poisoned outputs with guards; one thread per rank
 * without groups; many operations in flight before a synchronize; groups
 * of every size around the group's inline and stack limits.
 */
#include "collcheck.h"
#include "harness.h"

#include <pthread.h>

static int makeComms(dmacclComm_t *comms, int n, const char *algo) {
  return ccInitAlgo(comms, n, 0, algo) == dmacclSuccess ? 0 : -1;
}

static void destroyAll(dmacclComm_t *comms, int n) {
  for (int r = 0; r < n; r++) dmacclCommDestroy(comms[r]);
}

static int testAllTypesRanksAlgos(void) {
  const size_t counts[] = {0, 1, 1023};
  int runs = 0;
  uint64_t seed = 1;
  for (int n = 1; n <= 8; n++)
    for (int a = 0; a < CC_NALGOS; a++) {
      dmacclComm_t comms[CC_MAXR];
      ccEnv env;
      ASSERT_EQ_INT(makeComms(comms, n, ccAlgos[a]), 0);
      ccEnvInit(&env, 0, comms, n);
      for (int t = 0; t < dmacclNumTypes; t++)
        for (int coll = COLL_ALLGATHER; coll <= COLL_ALLTOALL; coll++)
          for (int inPlace = 0; inPlace <= (coll == COLL_ALLGATHER); inPlace++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
              long long wrong =
                  ccRun(&env, comms, n, coll, (dmacclDataType_t)t, counts[c], inPlace, seed++);
              if (wrong != 0) {
                TEST_FAIL("%s %s n=%d type=%d count=%zu inplace=%d: %lld wrong", ccCollName(coll),
                          ccAlgos[a], n, t, counts[c], inPlace, wrong);
                destroyAll(comms, n);
                return 1;
              }
              runs++;
            }
      destroyAll(comms, n);
    }
  printf("  %d host collectives checked\n", runs);
  return 0;
}

static int testLarge(void) {
  /* A few MB per rank, odd element count. */
  for (int a = 0; a < CC_NALGOS; a++) {
    dmacclComm_t comms[CC_MAXR];
    ccEnv env;
    int n = 5;
    ASSERT_EQ_INT(makeComms(comms, n, ccAlgos[a]), 0);
    ccEnvInit(&env, 0, comms, n);
    ASSERT_EQ_INT(ccRun(&env, comms, n, COLL_ALLGATHER, dmacclFloat32, 300007, 0, 77), 0);
    ASSERT_EQ_INT(ccRun(&env, comms, n, COLL_ALLGATHER, dmacclBfloat16, 300007, 1, 78), 0);
    ASSERT_EQ_INT(ccRun(&env, comms, n, COLL_ALLTOALL, dmacclInt8, 300007, 0, 79), 0);
    destroyAll(comms, n);
  }
  return 0;
}

/* One thread per rank, calls outside groups, several operations queued
 * before synchronizing. */
typedef struct {
  dmacclComm_t comm;
  int rank, n, iters;
  size_t count;
  unsigned char *send, *recv; /* [iters] consecutive buffers */
  int rc;
} threadArg;

static void *rankThread(void *p) {
  threadArg *a = p;
  size_t chunk = a->count * 4;
  for (int i = 0; i < a->iters && !a->rc; i++) {
    const void *s = a->send + (size_t)i * chunk * (size_t)a->n;
    void *r = a->recv + (size_t)i * chunk * (size_t)a->n;
    dmacclResult_t rc = (i % 2) ? dmacclAlltoAll(s, r, a->count, dmacclUint32, a->comm, NULL)
                                : dmacclAllGather(s, r, a->count, dmacclUint32, a->comm, NULL);
    if (rc != dmacclSuccess) a->rc = (int)rc;
  }
  if (!a->rc) a->rc = (int)dmacclCommSynchronize(a->comm);
  return NULL;
}

static int testThreadPerRank(void) {
  enum { N = 4, ITERS = 150, COUNT = 333 };
  for (int al = 0; al < CC_NALGOS; al++) {
    dmacclComm_t comms[N];
    ASSERT_EQ_INT(makeComms(comms, N, ccAlgos[al]), 0);
    threadArg args[N];
    pthread_t th[N];
    size_t blk = (size_t)COUNT * 4, per = blk * N * ITERS;
    for (int r = 0; r < N; r++) {
      args[r] = (threadArg){comms[r], r, N, ITERS, COUNT, malloc(per), malloc(per), 0};
      testFillRandom(args[r].send, per, 900 + (uint64_t)r);
      memset(args[r].recv, CC_POISON, per);
      pthread_create(&th[r], NULL, rankThread, &args[r]);
    }
    for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
    int bad = 0;
    for (int r = 0; r < N; r++) {
      if (args[r].rc) {
        TEST_FAIL("rank %d: result %d: %s", r, args[r].rc, dmacclCommGetLastError(comms[r]));
        bad = 1;
      }
      for (int i = 0; i < ITERS && !bad; i++)
        for (int f = 0; f < N && !bad; f++) {
          size_t base = (size_t)i * blk * N;
          const unsigned char *got = args[r].recv + base + (size_t)f * blk;
          const unsigned char *want = args[f].send + base + ((i % 2) ? (size_t)r * blk : 0);
          if (memcmp(got, want, blk) != 0) {
            TEST_FAIL("%s iteration %d: rank %d block %d wrong", ccAlgos[al], i, r, f);
            bad = 1;
          }
        }
    }
    for (int r = 0; r < N; r++) free(args[r].send), free(args[r].recv);
    destroyAll(comms, N);
    if (bad) return 1;
  }
  return 0;
}

/* More operations in flight than the board holds, from one thread in groups. */
static int testDeepQueue(void) {
  enum { N = 3, OPS = 200, COUNT = 17 };
  dmacclComm_t comms[N];
  ASSERT_EQ_INT(makeComms(comms, N, "pushn"), 0);
  size_t blk = COUNT * 8;
  unsigned char *send[N], *recv[N];
  for (int r = 0; r < N; r++) {
    send[r] = malloc(blk * OPS);
    recv[r] = malloc(blk * N * OPS);
    testFillRandom(send[r], blk * OPS, 4242 + (uint64_t)r);
    memset(recv[r], CC_POISON, blk * N * OPS);
  }
  for (int i = 0; i < OPS; i++) {
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    for (int r = 0; r < N; r++)
      ASSERT_EQ_INT(dmacclAllGather(send[r] + (size_t)i * blk, recv[r] + (size_t)i * blk * N, COUNT,
                                    dmacclFloat64, comms[r], NULL),
                    dmacclSuccess);
    ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  }
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < OPS; i++)
      for (int f = 0; f < N; f++)
        ASSERT_TRUE(memcmp(recv[r] + (size_t)i * blk * N + (size_t)f * blk,
                           send[f] + (size_t)i * blk, blk) == 0);
  for (int r = 0; r < N; r++) free(send[r]), free(recv[r]);
  destroyAll(comms, N);
  return 0;
}

enum { REG_THREADS = 19 };
typedef struct {
  dmacclComm_t comm;
  char *buf;
  void *h;
  int rc;
} regArg;

static void *regThread(void *arg) {
  regArg *a = arg;
  a->rc = dmacclCommRegister(a->comm, a->buf, 32, &a->h);
  return NULL;
}

/* dmacclCommDeregister takes only what this communicator's dmacclCommRegister
 * returned, as often as it returned it (the host executor's handles are
 * the pointers themselves: any handle was taken before). */
static int testRegisterHandles(void) {
  dmacclComm_t comms[2];
  ASSERT_EQ_INT(makeComms(comms, 2, "auto"), 0);
  char buf[64];
  void *h = NULL, *h2 = NULL;
  ASSERT_EQ_INT(dmacclCommRegister(comms[0], buf, sizeof(buf), &h), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommRegister(comms[0], buf, sizeof(buf), &h2), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommDeregister(comms[1], h), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[1]), "was not returned by dmacclCommRegister");
  ASSERT_EQ_INT(dmacclCommDeregister(comms[0], (void *)(buf + 1)), dmacclInvalidArgument);
  ASSERT_EQ_INT(dmacclCommDeregister(comms[0], h), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommDeregister(comms[0], h2), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommDeregister(comms[0], h), dmacclInvalidArgument);
  /* registered again after: a handle again */
  ASSERT_EQ_INT(dmacclCommRegister(comms[0], buf, sizeof(buf), &h), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommDeregister(comms[0], h), dmacclSuccess);
  /* threads registering at once past the list's capacity (8, then 16, ...):
   * every handle kept once (ASan caught an append past the list before) */
  static char bufs[REG_THREADS][32];
  regArg args[REG_THREADS];
  pthread_t th[REG_THREADS];
  for (int t = 0; t < REG_THREADS; t++) {
    args[t] = (regArg){comms[1], bufs[t], NULL, -1};
    ASSERT_EQ_INT(pthread_create(&th[t], NULL, regThread, &args[t]), 0);
  }
  for (int t = 0; t < REG_THREADS; t++) ASSERT_EQ_INT(pthread_join(th[t], NULL), 0);
  for (int t = 0; t < REG_THREADS; t++) {
    ASSERT_EQ_INT(args[t].rc, dmacclSuccess);
    ASSERT_EQ_INT(dmacclCommDeregister(comms[1], args[t].h), dmacclSuccess);
    ASSERT_EQ_INT(dmacclCommDeregister(comms[1], args[t].h), dmacclInvalidArgument);
  }
  destroyAll(comms, 2);
  return 0;
}

/* Groups of 6 to 60 recorded calls from one thread, 2 to 20 per rank
 * (group.c keeps up to 8 recorded calls in the thread's own array and its
 * scratch arrays for up to 16 on the stack, more on the heap): k
 * AllGathers and k AlltoAlls per rank, then k = 1 again after the largest,
 * every byte checked against a poisoned output. */
static int testGroupSizes(void) {
  enum { N = 3, COUNT = 5, MAXK = 10 };
  const int ks[] = {1, 2, 3, 4, 5, 6, 9, MAXK, 1};
  dmacclComm_t comms[N];
  ASSERT_EQ_INT(makeComms(comms, N, "auto"), 0);
  size_t blk = COUNT * 4;
  unsigned char *send[N], *recv[N];
  for (int r = 0; r < N; r++) {
    send[r] = malloc(2 * MAXK * blk * N);
    recv[r] = malloc(2 * MAXK * blk * N);
  }
  uint64_t seed = 77;
  for (size_t g = 0; g < sizeof(ks) / sizeof(ks[0]); g++) {
    int k = ks[g];
    for (int r = 0; r < N; r++) {
      testFillRandom(send[r], 2 * MAXK * blk * N, seed++);
      memset(recv[r], CC_POISON, 2 * MAXK * blk * N);
    }
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    for (int i = 0; i < k; i++)
      for (int r = 0; r < N; r++) {
        size_t at = (size_t)(2 * i) * blk * N, at2 = at + blk * N;
        ASSERT_EQ_INT(
            dmacclAllGather(send[r] + at, recv[r] + at, COUNT, dmacclFloat32, comms[r], NULL),
            dmacclSuccess);
        ASSERT_EQ_INT(
            dmacclAlltoAll(send[r] + at2, recv[r] + at2, COUNT, dmacclFloat32, comms[r], NULL),
            dmacclSuccess);
      }
    ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
    for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
    for (int r = 0; r < N; r++)
      for (int i = 0; i < MAXK; i++) {
        size_t at = (size_t)(2 * i) * blk * N, at2 = at + blk * N;
        for (int f = 0; f < N; f++) {
          /* AllGather: block f is rank f's send; AlltoAll: block f is rank
           * f's block r; untouched calls' outputs keep the poison */
          const unsigned char *ag = i < k ? send[f] + at : NULL;
          const unsigned char *aa = i < k ? send[f] + at2 + (size_t)r * blk : NULL;
          for (size_t b = 0; b < blk; b++) {
            unsigned char want = ag ? ag[b] : CC_POISON, got = recv[r][at + (size_t)f * blk + b];
            unsigned char want2 = aa ? aa[b] : CC_POISON;
            unsigned char got2 = recv[r][at2 + (size_t)f * blk + b];
            if (got != want || got2 != want2) {
              fprintf(stderr, "group of %d calls per rank: rank %d call %d block %d byte %zu\n",
                      2 * k, r, i, f, b);
              return 1;
            }
          }
        }
      }
  }
  for (int r = 0; r < N; r++) free(send[r]), free(recv[r]);
  destroyAll(comms, N);
  return 0;
}

int main(void) {
  RUN(testAllTypesRanksAlgos);
  RUN(testLarge);
  RUN(testThreadPerRank);
  RUN(testDeepQueue);
  RUN(testGroupSizes);
  RUN(testRegisterHandles);
  TEST_EXIT();
}
