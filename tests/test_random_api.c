/*
 * Random use of the public API on the host executor, seeded and
 * reproducible (test_random_api SEED [ROUNDS] repeats one run): random rank
 * counts (1-8), operations (AllGather, AlltoAll, and from 2 ranks on the
 * tools' sendrecv row: each rank sends count elements to rank (r+1)%n and
 * receives count from rank (r-1+n)%n, through collIssue / collStart, which
 * put a rank's Send and Recv in a group of their own), data types, counts
 * (0 and uneven included), in place or not, several operations per group,
 * calls from one thread per rank outside groups, persistent requests started
 * among eager calls; ranks as threads of one process and as processes. Every
 * operation writes into its own poisoned buffers from fresh random data, and
 * every byte of every output (and every input) is compared with a reference
 * computed here, from NCCL's layouts. A collective added to the library
 * joins the list of operations here.
 */
#include "harness.h"
#include "mp.h"
#include "common/colls.h"

#include <pthread.h>
#include <unistd.h>

#define MAXR 8
#define MAXOPS 6

enum { OP_ALLGATHER = 0, OP_ALLTOALL, OP_SENDRECV };

typedef struct {
  int kind; /* OP_*; OP_SENDRECV only with 2 ranks or more */
  int inPlace, persistent;
  dmacclDataType_t type;
  size_t count;
} opSpec;

typedef struct {
  int n, nops, grouped; /* grouped: one group per round holds every op */
  opSpec ops[MAXOPS];
} roundSpec;

static uint64_t rngNext(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

static const dmacclDataType_t types[] = {dmacclInt8,       dmacclUint8,      dmacclInt32,
                                         dmacclUint32,     dmacclInt64,      dmacclUint64,
                                         dmacclFloat16,    dmacclBfloat16,   dmacclFloat32,
                                         dmacclFloat8e4m3, dmacclFloat8e5m2, dmacclFloat64};

static roundSpec randomRound(uint64_t *s, int maxRanks) {
  roundSpec r;
  memset(&r, 0, sizeof(r));
  r.n = 1 + (int)(rngNext(s) % (uint64_t)maxRanks);
  r.nops = 1 + (int)(rngNext(s) % MAXOPS);
  r.grouped = (int)(rngNext(s) % 2);
  for (int i = 0; i < r.nops; i++) {
    opSpec *o = &r.ops[i];
    o->kind = (int)(rngNext(s) % (r.n > 1 ? 3 : 2)); /* a Send to oneself is refused */
    o->inPlace = o->kind == OP_ALLGATHER && rngNext(s) % 3 == 0;
    o->persistent = rngNext(s) % 4 == 0;
    o->type = types[rngNext(s) % (sizeof(types) / sizeof(types[0]))];
    uint64_t k = rngNext(s) % 10;
    o->count = k == 0 ? 0 : k < 7 ? rngNext(s) % 64 : k < 9 ? rngNext(s) % 5000 : 70001;
  }
  return r;
}

/* One rank's buffers of one op, and the reference fill. */
typedef struct {
  unsigned char *send, *recv;
  size_t chunk, sendBytes, recvBytes;
} opBufs;

static uint64_t blockSeed(uint64_t seed, int op, int from, int to) {
  return seed * 1000003u + (uint64_t)op * 7919u + (uint64_t)from * 131u + (uint64_t)to;
}

/* The seed of the block that rank `from` sends (AlltoAll: its j-th one). */
static uint64_t sentSeed(const opSpec *o, uint64_t seed, int op, int from, int j, int n) {
  int to = o->kind == OP_ALLTOALL ? j : o->kind == OP_SENDRECV ? (from + 1) % n : 0;
  return blockSeed(seed, op, from, to);
}

static void fillInput(const opSpec *o, const opBufs *b, uint64_t seed, int op, int me, int n) {
  memset(b->recv, 0xA5, b->recvBytes + MP_GUARD);
  unsigned char *in = o->inPlace ? b->recv + (size_t)me * b->chunk : b->send;
  for (int j = 0; j < (o->kind == OP_ALLTOALL ? n : 1); j++)
    testFillRandom(in + (size_t)j * b->chunk, b->chunk, sentSeed(o, seed, op, me, j, n));
}

/* Wrong bytes of rank me's output (guard included) and untouched input. */
static long long checkOutput(const opSpec *o, const opBufs *b, uint64_t seed, int op, int me,
                             int n) {
  unsigned char *want = malloc(b->recvBytes + MP_GUARD), *in = malloc(b->sendBytes + 1);
  long long wrong = 0;
  memset(want, 0xA5, b->recvBytes + MP_GUARD);
  if (o->kind == OP_SENDRECV) /* the previous rank's block */
    testFillRandom(want, b->chunk, blockSeed(seed, op, (me + n - 1) % n, me));
  else
    for (int j = 0; j < n; j++)
      testFillRandom(want + (size_t)j * b->chunk, b->chunk,
                     blockSeed(seed, op, j, o->kind == OP_ALLTOALL ? me : 0));
  for (size_t i = 0; i < b->recvBytes + MP_GUARD; i++) wrong += want[i] != b->recv[i];
  if (!o->inPlace) {
    for (int j = 0; j < (o->kind == OP_ALLTOALL ? n : 1); j++)
      testFillRandom(in + (size_t)j * b->chunk, b->chunk, sentSeed(o, seed, op, me, j, n));
    for (size_t i = 0; i < b->sendBytes; i++) wrong += in[i] != b->send[i];
  }
  free(want);
  free(in);
  return wrong;
}

/* req: COLL_MAX_REQUESTS slots (sendrecv's Init form makes two). */
static dmacclResult_t issueOp(const opSpec *o, const opBufs *b, dmacclComm_t comm, int me, int n,
                              dmacclRequest_t *req) {
  const void *send = o->inPlace ? b->recv + (size_t)me * b->chunk : b->send;
  if (o->kind == OP_SENDRECV) {
    collShape s = {.nranks = n, .count = o->count};
    if (!o->persistent)
      return collIssue(COLL_SENDRECV, &s, me, send, b->recv, o->type, dmacclSum, comm, NULL, NULL);
    if (!req[0]) {
      dmacclResult_t rc =
          collIssue(COLL_SENDRECV, &s, me, send, b->recv, o->type, dmacclSum, comm, NULL, req);
      if (rc != dmacclSuccess) return rc;
    }
    return collStart(COLL_SENDRECV, req, NULL);
  }
  int alltoall = o->kind == OP_ALLTOALL;
  if (o->persistent) {
    if (!*req) {
      dmacclResult_t rc = alltoall
                              ? dmacclAlltoAllInit(send, b->recv, o->count, o->type, comm, req)
                              : dmacclAllGatherInit(send, b->recv, o->count, o->type, comm, req);
      if (rc != dmacclSuccess) return rc;
    }
    return dmacclStart(*req, NULL);
  }
  return alltoall ? dmacclAlltoAll(send, b->recv, o->count, o->type, comm, NULL)
                  : dmacclAllGather(send, b->recv, o->count, o->type, comm, NULL);
}

/* Frees the requests of one op of one rank (sendrecv: two). */
static void freeReqs(dmacclRequest_t *req) {
  for (int k = 0; k < COLL_MAX_REQUESTS; k++)
    if (req[k]) dmacclRequestFree(req[k]), req[k] = NULL;
}

static void sizesOf(const opSpec *o, int n, opBufs *b) {
  b->chunk = o->count * mpTypeSize(o->type);
  b->recvBytes = o->kind == OP_SENDRECV ? b->chunk : b->chunk * (size_t)n;
  b->sendBytes = o->kind == OP_ALLTOALL ? b->chunk * (size_t)n : b->chunk;
}

/* --- ranks as threads ------------------------------------------------------ */

typedef struct {
  const roundSpec *r;
  dmacclComm_t comm;
  int me, n;
  uint64_t seed;
  opBufs *b; /* [op] */
  int failed;
} rankJob;

/* One thread per rank, every op outside groups, in order. */
static void *rankThread(void *arg) {
  rankJob *j = arg;
  dmacclRequest_t req[MAXOPS][COLL_MAX_REQUESTS];
  memset(req, 0, sizeof(req));
  for (int i = 0; i < j->r->nops && !j->failed; i++)
    j->failed = issueOp(&j->r->ops[i], &j->b[i], j->comm, j->me, j->n, req[i]) != dmacclSuccess;
  if (!j->failed) j->failed = dmacclCommSynchronize(j->comm) != dmacclSuccess;
  for (int i = 0; i < MAXOPS; i++) freeReqs(req[i]);
  return NULL;
}

static int threadRound(const roundSpec *r, uint64_t seed) {
  dmacclComm_t comms[MAXR];
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  ASSERT_EQ_INT(dmacclCommInitAll(comms, r->n, NULL, &cfg), dmacclSuccess);
  opBufs b[MAXR][MAXOPS];
  for (int me = 0; me < r->n; me++)
    for (int i = 0; i < r->nops; i++) {
      sizesOf(&r->ops[i], r->n, &b[me][i]);
      b[me][i].send = malloc(b[me][i].sendBytes + 1);
      b[me][i].recv = malloc(b[me][i].recvBytes + MP_GUARD);
      fillInput(&r->ops[i], &b[me][i], seed, i, me, r->n);
    }
  int bad = 0;
  if (r->grouped) { /* one thread, every op of every rank in one group */
    dmacclRequest_t req[MAXR][MAXOPS][COLL_MAX_REQUESTS];
    memset(req, 0, sizeof(req));
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    for (int i = 0; i < r->nops; i++)
      for (int me = 0; me < r->n; me++)
        bad |= issueOp(&r->ops[i], &b[me][i], comms[me], me, r->n, req[me][i]) != dmacclSuccess;
    bad |= dmacclGroupEnd() != dmacclSuccess;
    for (int me = 0; me < r->n; me++) {
      bad |= dmacclCommSynchronize(comms[me]) != dmacclSuccess;
      for (int i = 0; i < MAXOPS; i++) freeReqs(req[me][i]);
    }
  } else {
    pthread_t t[MAXR];
    rankJob jobs[MAXR];
    for (int me = 0; me < r->n; me++) {
      jobs[me] = (rankJob){r, comms[me], me, r->n, seed, b[me], 0};
      pthread_create(&t[me], NULL, rankThread, &jobs[me]);
    }
    for (int me = 0; me < r->n; me++) {
      pthread_join(t[me], NULL);
      bad |= jobs[me].failed;
    }
  }
  long long wrong = 0;
  for (int me = 0; me < r->n; me++)
    for (int i = 0; i < r->nops; i++) {
      if (!bad) wrong += checkOutput(&r->ops[i], &b[me][i], seed, i, me, r->n);
      free(b[me][i].send);
      free(b[me][i].recv);
    }
  for (int me = 0; me < r->n; me++) dmacclCommDestroy(comms[me]);
  if (bad || wrong) {
    TEST_FAIL("seed %llu (%d ranks, %d ops, %s): %s, %lld wrong bytes; rerun: test_random_api "
              "%llu 1",
              (unsigned long long)seed, r->n, r->nops, r->grouped ? "grouped" : "thread per rank",
              bad ? "a call failed" : "calls ok", wrong, (unsigned long long)seed);
    return 1;
  }
  return 0;
}

/* --- ranks as processes ---------------------------------------------------- */

typedef struct {
  roundSpec r;
  uint64_t seed;
} procArg;

static int procBody(int me, int n, const dmacclUniqueId *id, void *arg) {
  const procArg *p = arg;
  const roundSpec *r = &p->r;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  dmacclComm_t comm;
  int rank = me;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, me, &cfg) == dmacclSuccess);
  opBufs b[MAXOPS];
  dmacclRequest_t req[MAXOPS][COLL_MAX_REQUESTS];
  memset(req, 0, sizeof(req));
  for (int i = 0; i < r->nops; i++) {
    sizesOf(&r->ops[i], n, &b[i]);
    /* Across processes buffers come from dmacclMemAlloc (collective). */
    RANK_CHECK(dmacclMemAlloc(comm, b[i].sendBytes + 1, (void **)&b[i].send) == dmacclSuccess);
    RANK_CHECK(dmacclMemAlloc(comm, b[i].recvBytes + MP_GUARD, (void **)&b[i].recv) ==
               dmacclSuccess);
    fillInput(&r->ops[i], &b[i], p->seed, i, me, n);
  }
  if (r->grouped) RANK_CHECK(dmacclGroupStart() == dmacclSuccess);
  for (int i = 0; i < r->nops; i++)
    RANK_CHECK(issueOp(&r->ops[i], &b[i], comm, me, n, req[i]) == dmacclSuccess);
  if (r->grouped) RANK_CHECK(dmacclGroupEnd() == dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
  for (int i = 0; i < r->nops; i++) {
    long long w = checkOutput(&r->ops[i], &b[i], p->seed, i, me, n);
    if (w) fprintf(stderr, "rank %d op %d: %lld wrong bytes\n", me, i, w);
    RANK_CHECK(w == 0);
    for (int k = 0; k < COLL_MAX_REQUESTS; k++)
      if (req[i][k]) RANK_CHECK(dmacclRequestFree(req[i][k]) == dmacclSuccess);
  }
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess); /* frees the allocations */
  return 0;
}

int main(int argc, char **argv) {
  uint64_t first = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
  int rounds = argc > 2 ? atoi(argv[2]) : 500;
  int procRounds = argc > 2 ? rounds / 10 + 1 : 40;
  long ops = 0;
  for (int k = 0; k < rounds; k++) {
    uint64_t seed = first + (uint64_t)k, s = seed * 0x9e3779b97f4a7c15ull | 1;
    roundSpec r = randomRound(&s, MAXR);
    if (threadRound(&r, seed)) TEST_EXIT();
    ops += r.nops;
  }
  printf("  %d rounds of ranks as threads, %ld operations\n", rounds, ops);
  for (int k = 0; k < procRounds; k++) {
    uint64_t seed = first + 100000u + (uint64_t)k, s = seed * 0x9e3779b97f4a7c15ull | 1;
    procArg p = {randomRound(&s, 4), seed};
    int failed = mpRun(p.r.n, procBody, &p, 60, 0);
    if (failed) {
      TEST_FAIL("processes, seed %llu (%d ranks, %d ops): %d failed", (unsigned long long)seed,
                p.r.n, p.r.nops, failed);
      TEST_EXIT();
    }
  }
  printf("  %d rounds of ranks as processes\n", procRounds);
  TEST_EXIT();
}
