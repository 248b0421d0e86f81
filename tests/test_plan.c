/*
 * Planning tests, no executor. Every collective of the table, every
 * algorithm it takes, 1-5 ranks, random V arrays, roots, in and out of
 * place, reductions in several pieces: replayed byte for byte in random
 * step orders (testEveryCollective). AllGather (in and out of place) and
 * AlltoAll for nranks 1..8, block sizes 0, 1, odd and large, against NCCL's
 * layouts written here:
 *  - every destination block is written exactly once, from the block the
 *    collective's contract names (written here from NCCL's layouts, not from
 *    the planner's layout hooks);
 *  - no copy reaches outside the buffers or writes a send buffer;
 *  - for small sizes, a byte-level replay: every output byte written exactly
 *    once with the right value and guard bytes around the buffers untouched;
 *  - the handshake protocol: a copy that touches a peer is preceded on its
 *    lane by WAIT(ENTRY) from that peer and followed by SIGNAL(EXIT) to it,
 *    every SIGNAL has exactly one matching WAIT at the peer, and a rank waits
 *    for EXIT from every peer that touches its buffers;
 *  - queue safety (planCheck), and a simulation of hardware queues: every
 *    algorithm, in sequences of operations, issued into one in-order queue
 *    per rank in random dependency orders (as a graph launch may), or into
 *    queues shared by all ranks with lanes mapped at random, never
 *    deadlocks; two negative controls show the simulation finds deadlocks;
 *  - staged operations in CUDA graphs: random graphs replayed in random
 *    orders with fixed-value flags (testGraphStagedProtocol), and two
 *    broken variants that it must catch.
 */
#include "harness.h"
#include "plan_internal.h"

#define MAXR 8
#define MAXL (MAXR + 2) /* PLAN_MAX_LANES */

/* Old-style arguments: a block of `chunk` bytes (elements of one byte). */
#define PA(coll_, rank_, n_, chunk_, inPlace_, slots_, index_)                                     \
  ((planArgs){.coll = (coll_),                                                                     \
              .rank = (rank_),                                                                     \
              .nranks = (n_),                                                                      \
              .count = (chunk_),                                                                   \
              .elemSize = 1,                                                                       \
              .inPlace = (inPlace_),                                                               \
              .stageSlots = (slots_),                                                              \
              .stageIndex = (index_)})

typedef struct {
  int nranks, inPlace;
  planColl coll;
  size_t chunk;
} caseT;

static size_t sendSize(const caseT *c) {
  return c->coll == PLAN_COLL_ALLGATHER ? c->chunk : c->chunk * (size_t)c->nranks;
}
static size_t recvSize(const caseT *c) {
  return c->chunk * (size_t)c->nranks;
}

/* Expected source of block f of rank t's receive buffer. */
static planLoc expectedSrc(const caseT *c, int t, int f) {
  if (c->coll == PLAN_COLL_ALLGATHER)
    return c->inPlace ? (planLoc){f, PLAN_BUF_RECV, (size_t)f * c->chunk}
                      : (planLoc){f, PLAN_BUF_SEND, 0};
  return (planLoc){f, PLAN_BUF_SEND, (size_t)t * c->chunk};
}

/* In place, rank f's send buffer is its receive block f: normalize. */
static planLoc normalize(const caseT *c, planLoc l) {
  if (c->coll == PLAN_COLL_ALLGATHER && c->inPlace && l.buf == PLAN_BUF_SEND)
    return (planLoc){l.rank, PLAN_BUF_RECV, (size_t)l.rank * c->chunk + l.off};
  return l;
}

static int touchesPeer(const planStep *st, int me, int *peer) {
  if (st->dst.rank != me) return *peer = st->dst.rank, 1;
  if (st->src.rank != me) return *peer = st->src.rank, 1;
  return 0;
}

static int checkCase(const caseT *c, planAlgo algo) {
  planSchedule s[MAXR];
  memset(s, 0, sizeof(s));
  int n = c->nranks;
  int written[MAXR][MAXR];
  memset(written, 0, sizeof(written));
  int sig[PLAN_NUM_PHASES][MAXR][MAXR], wai[PLAN_NUM_PHASES][MAXR][MAXR];
  memset(sig, 0, sizeof(sig));
  memset(wai, 0, sizeof(wai));
  int rc = 0;
  for (int r = 0; r < n; r++) {
    planArgs a = PA(c->coll, r, n, c->chunk, c->inPlace, 0, 0);
    if (planBuild(&a, algo, &s[r]) != 0) {
      TEST_FAIL("planBuild failed");
      rc = 1;
      goto out;
    }
  }
  char why[256];
  if (planCheck(s, n, why, sizeof(why))) {
    TEST_FAIL("%s %s n=%d chunk=%zu: %s", planCollName(c->coll), planAlgoName(algo), n, c->chunk,
              why);
    rc = 1;
    goto out;
  }
  for (int r = 0; r < n && !rc; r++) {
    const planSchedule *sc = &s[r];
    if (c->chunk == 0 && sc->nsteps != 0) {
      TEST_FAIL("%s n=%d: count 0 has %d steps", planAlgoName(algo), n, sc->nsteps);
      rc = 1;
      break;
    }
    int entrySeen[MAXR][MAXR]; /* [lane][peer] */
    memset(entrySeen, 0, sizeof(entrySeen));
    int pendingExit[MAXR][MAXR]; /* copy touching peer not yet followed by SIGNAL EXIT on lane */
    memset(pendingExit, 0, sizeof(pendingExit));
    for (int i = 0; i < sc->nsteps && !rc; i++) {
      const planStep *st = &sc->steps[i];
      if (st->lane < 0 || st->lane >= sc->nlanes || st->lane >= MAXR) {
        TEST_FAIL("lane %d outside 0..%d", st->lane, sc->nlanes - 1);
        rc = 1;
        break;
      }
      if (st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) {
        if (st->peer < 0 || st->peer >= n || st->peer == r) {
          TEST_FAIL("rank %d: sync step with peer %d", r, st->peer);
          rc = 1;
          break;
        }
        if (st->kind == PLAN_STEP_SIGNAL) {
          sig[st->phase][r][st->peer]++;
          if (st->phase == PLAN_PHASE_EXIT) pendingExit[st->lane][st->peer] = 0;
        } else {
          wai[st->phase][r][st->peer]++;
          if (st->phase == PLAN_PHASE_ENTRY) entrySeen[st->lane][st->peer] = 1;
        }
        continue;
      }
      if (st->kind == PLAN_STEP_JOIN) continue;
      /* COPY */
      planLoc src = st->src, dst = st->dst;
      if (st->bytes != c->chunk || dst.buf != PLAN_BUF_RECV) {
        TEST_FAIL("%s rank %d: copy of %zu bytes into buf %d", planAlgoName(algo), r, st->bytes,
                  dst.buf);
        rc = 1;
        break;
      }
      size_t srcLimit = src.buf == PLAN_BUF_SEND ? sendSize(c) : recvSize(c);
      if (src.rank < 0 || src.rank >= n || dst.rank < 0 || dst.rank >= n || src.off > srcLimit ||
          srcLimit - src.off < st->bytes || dst.off > recvSize(c) ||
          recvSize(c) - dst.off < st->bytes || dst.off % c->chunk) {
        TEST_FAIL("%s rank %d: copy out of bounds", planAlgoName(algo), r);
        rc = 1;
        break;
      }
      if (src.rank != r && dst.rank != r) {
        TEST_FAIL("rank %d copies between two other ranks", r);
        rc = 1;
        break;
      }
      int f = (int)(dst.off / c->chunk), t = dst.rank;
      planLoc want = normalize(c, expectedSrc(c, t, f)), got = normalize(c, src);
      if (got.rank != want.rank || got.buf != want.buf || got.off != want.off) {
        TEST_FAIL(
            "%s n=%d rank %d: block %d of rank %d comes from (%d,%d,%zu), expected (%d,%d,%zu)",
            planAlgoName(algo), n, r, f, t, got.rank, got.buf, got.off, want.rank, want.buf,
            want.off);
        rc = 1;
        break;
      }
      written[t][f]++;
      int p;
      if (touchesPeer(st, r, &p)) {
        if (!entrySeen[st->lane][p]) {
          TEST_FAIL("%s rank %d: copy touching rank %d before WAIT(ENTRY) on its lane",
                    planAlgoName(algo), r, p);
          rc = 1;
          break;
        }
        pendingExit[st->lane][p] = 1;
      }
    }
    for (int l = 0; l < MAXR && !rc; l++)
      for (int p = 0; p < n; p++)
        if (pendingExit[l][p]) {
          TEST_FAIL("%s rank %d: copy touching rank %d not followed by SIGNAL(EXIT)",
                    planAlgoName(algo), r, p);
          rc = 1;
        }
  }
  for (int t = 0; t < n && !rc; t++)
    for (int f = 0; f < n; f++) {
      int want =
          c->chunk == 0 ? 0 : (c->coll == PLAN_COLL_ALLGATHER && c->inPlace && f == t ? 0 : 1);
      if (written[t][f] != want) {
        TEST_FAIL(
            "%s %s n=%d chunk=%zu inplace=%d: block %d of rank %d written %d times, expected %d",
            planCollName(c->coll), planAlgoName(algo), n, c->chunk, c->inPlace, f, t, written[t][f],
            want);
        rc = 1;
        break;
      }
    }
  /* Signals and waits pair up; a rank touched by a peer waits for its EXIT. */
  for (int ph = 0; ph < PLAN_NUM_PHASES && !rc; ph++)
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++) {
        if (sig[ph][a][b] != wai[ph][b][a] || sig[ph][a][b] > 1) {
          TEST_FAIL("%s phase %d: rank %d signals rank %d %d times, rank %d waits %d times",
                    planAlgoName(algo), ph, a, b, sig[ph][a][b], b, wai[ph][b][a]);
          rc = 1;
        }
        if (a != b && c->chunk && n > 1 && wai[PLAN_PHASE_EXIT][a][b] != 1) {
          TEST_FAIL("%s: rank %d does not wait for EXIT from rank %d", planAlgoName(algo), a, b);
          rc = 1;
        }
      }
out:
  for (int r = 0; r < n; r++) planScheduleFree(&s[r]);
  return rc;
}

/* Byte-level replay of all ranks' copies (sync ignored: the plan says the
 * copies are independent), with guard bytes around every buffer. */
#define GUARD 64
static int replayCase(const caseT *c, planAlgo algo) {
  int n = c->nranks, rc = 0;
  size_t ss = sendSize(c), rs = recvSize(c);
  unsigned char *send[MAXR], *recv[MAXR], *wcount[MAXR];
  planSchedule s;
  memset(&s, 0, sizeof(s));
  for (int r = 0; r < n; r++) {
    send[r] = malloc(ss + 2 * GUARD);
    recv[r] = malloc(rs + 2 * GUARD);
    wcount[r] = calloc(rs + 2 * GUARD, 1);
    memset(send[r], 0xEE, ss + 2 * GUARD);
    memset(recv[r], 0xDD, rs + 2 * GUARD);
    testFillRandom(send[r] + GUARD, ss, 1000u + (unsigned)r);
    if (c->inPlace)
      testFillRandom(recv[r] + GUARD + (size_t)r * c->chunk, c->chunk, 1000u + (unsigned)r);
  }
  for (int r = 0; r < n && !rc; r++) {
    planArgs a = PA(c->coll, r, n, c->chunk, c->inPlace, 0, 0);
    if (planBuild(&a, algo, &s) != 0) rc = 1;
    for (int i = 0; i < s.nsteps && !rc; i++) {
      const planStep *st = &s.steps[i];
      if (st->kind != PLAN_STEP_COPY) continue;
      /* In place the send buffer is the receive block. */
      unsigned char *sb =
          st->src.buf == PLAN_BUF_SEND
              ? (c->inPlace ? recv[st->src.rank] + GUARD + (size_t)st->src.rank * c->chunk
                            : send[st->src.rank] + GUARD)
              : recv[st->src.rank] + GUARD;
      memcpy(recv[st->dst.rank] + GUARD + st->dst.off, sb + st->src.off, st->bytes);
      for (size_t k = 0; k < st->bytes; k++) wcount[st->dst.rank][GUARD + st->dst.off + k]++;
    }
  }
  for (int t = 0; t < n && !rc; t++) {
    for (size_t k = 0; k < GUARD; k++)
      if (recv[t][k] != 0xDD || recv[t][GUARD + rs + k] != 0xDD || wcount[t][k] ||
          wcount[t][GUARD + rs + k]) {
        TEST_FAIL("%s: guard byte of rank %d's receive buffer touched", planAlgoName(algo), t);
        rc = 1;
        break;
      }
    for (int f = 0; f < n && !rc; f++) {
      int selfInPlace = c->inPlace && f == t;
      /* The source bytes: from rank f's data, at the block the contract names. */
      unsigned char *want = malloc(c->chunk + 1);
      if (c->coll == PLAN_COLL_ALLGATHER)
        testFillRandom(want, c->chunk, 1000u + (unsigned)f);
      else
        memcpy(want, send[f] + GUARD + (size_t)t * c->chunk, c->chunk);
      const unsigned char *got = recv[t] + GUARD + (size_t)f * c->chunk;
      long long d = testFirstDiff(got, want, c->chunk);
      if (d >= 0) {
        TEST_FAIL("%s n=%d: rank %d block %d byte %lld: 0x%02x, expected 0x%02x",
                  planAlgoName(algo), n, t, f, d, got[d], want[d]);
        rc = 1;
      }
      for (size_t k = 0; k < c->chunk && !rc; k++)
        if (wcount[t][GUARD + (size_t)f * c->chunk + k] != (selfInPlace ? 0 : 1)) {
          TEST_FAIL("%s: rank %d block %d byte %zu written %d times", planAlgoName(algo), t, f, k,
                    wcount[t][GUARD + (size_t)f * c->chunk + k]);
          rc = 1;
        }
      free(want);
    }
    for (size_t k = 0; k < 2 * GUARD + ss && !rc && !c->inPlace; k++) {
      int inData = k >= GUARD && k < GUARD + ss;
      if (!inData && send[t][k] != 0xEE) {
        TEST_FAIL("guard byte of rank %d's send buffer touched", t);
        rc = 1;
      }
    }
  }
  planScheduleFree(&s);
  for (int r = 0; r < n; r++) free(send[r]), free(recv[r]), free(wcount[r]);
  return rc;
}

static int testAllCases(void) {
  const size_t chunks[] = {0, 1, 7, 4099, PLAN_SIDE_LANE_BYTES + 3, (size_t)3 << 33};
  int ncase = 0;
  for (int n = 1; n <= MAXR; n++)
    /* AllGather and AlltoAll against NCCL's layouts written here; the other
     * collectives in testEveryCollective. */
    for (int coll = 0; coll <= PLAN_COLL_ALLTOALL; coll++)
      for (int inPlace = 0; inPlace <= (coll == PLAN_COLL_ALLGATHER); inPlace++)
        for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++)
          for (int a = 0; a < PLAN_NUM_ALGOS; a++) {
            if (planIsStaged((planAlgo)a)) continue; /* testStaged* */
            if (!(planCollOf((planColl)coll)->algos & PLAN_ALGO_BIT(a))) continue;
            caseT c = {n, inPlace, (planColl)coll, chunks[k]};
            if (checkCase(&c, (planAlgo)a)) return 1;
            int small = c.chunk <= 4099 || (c.chunk <= PLAN_SIDE_LANE_BYTES + 3 && n <= 4);
            if (small && replayCase(&c, (planAlgo)a)) return 1;
            ncase++;
          }
  printf("  %d plan cases checked\n", ncase);
  return 0;
}

/* planCheck's ENTRY rule: a copy that touches a peer's buffers before any
 * WAIT for that peer (push1 with its WAIT for the peer's ENTRY moved behind
 * the copy) is refused, naming the step; the schedules as built pass. */
static int testCheckEntry(void) {
  planSchedule s[2];
  memset(s, 0, sizeof(s));
  char why[256];
  for (int r = 0; r < 2; r++) {
    planArgs args = PA(PLAN_COLL_ALLGATHER, r, 2, 64, 0, 0, 0);
    ASSERT_EQ_INT(planBuild(&args, PLAN_ALGO_PUSH1, &s[r]), 0);
  }
  ASSERT_EQ_INT(planCheck(s, 2, why, sizeof(why)), 0);
  int moved = 0;
  for (int i = 0; i + 1 < s[0].nsteps && !moved; i++) {
    planStep *w = &s[0].steps[i], *c = &s[0].steps[i + 1];
    if (w->kind == PLAN_STEP_WAIT && w->phase == PLAN_PHASE_ENTRY && c->kind == PLAN_STEP_COPY &&
        c->dst.rank == 1) {
      planStep t = *w;
      *w = *c, *c = t;
      moved = 1;
    }
  }
  ASSERT_TRUE(moved);
  ASSERT_EQ_INT(planCheck(s, 2, why, sizeof(why)), -1);
  ASSERT_TRUE(strstr(why, "touches rank 1's buffers before any WAIT for that rank") != NULL);
  for (int r = 0; r < 2; r++) planScheduleFree(&s[r]);
  return 0;
}

static int testRotatedOrder(void) {
  /* Rank r's first peer copy goes to r+1: no peer is everyone's first target. */
  for (int a = 0; a < PLAN_NUM_ALGOS; a++) {
    if (a == PLAN_ALGO_PULL1 || a == PLAN_ALGO_PULLN || a == PLAN_ALGO_PULLB) continue;
    if (a == PLAN_ALGO_STAGE2D) continue; /* rank order on purpose: one 2D copy */
    if (!(planCollOf(PLAN_COLL_ALLTOALL)->algos & PLAN_ALGO_BIT(a))) continue;
    for (int r = 0; r < 4; r++) {
      planSchedule s = {0};
      planArgs args = PA(PLAN_COLL_ALLTOALL, r, 4, 16, 0, 8, 1);
      ASSERT_EQ_INT(planBuild(&args, (planAlgo)a, &s), 0);
      int first = -1;
      for (int i = 0; i < s.nsteps && first < 0; i++)
        if (s.steps[i].kind == PLAN_STEP_COPY && s.steps[i].dst.rank != r)
          first = s.steps[i].dst.rank;
      planScheduleFree(&s);
      ASSERT_EQ_INT(first, (r + 1) % 4);
    }
  }
  return 0;
}

static int testLanes(void) {
  planSchedule s = {0};
  planArgs args = PA(PLAN_COLL_ALLGATHER, 2, 5, 64, 0, 0, 0);
  ASSERT_EQ_INT(planBuild(&args, PLAN_ALGO_PUSHN, &s), 0);
  ASSERT_EQ_INT(s.nlanes, 4);
  ASSERT_EQ_INT(planBuild(&args, PLAN_ALGO_PUSH1, &s), 0);
  ASSERT_EQ_INT(s.nlanes, 1);
  ASSERT_EQ_INT(planBuild(&args, PLAN_ALGO_PUSHB, &s), 0);
  int batch = 0;
  for (int i = 0; i < s.nsteps; i++) batch += s.steps[i].kind == PLAN_STEP_COPY && s.steps[i].batch;
  ASSERT_EQ_INT(batch, 5);
  /* A large self copy runs on a side lane of its own in the one-lane and
   * batch forms, on lane 0 with one lane per peer. */
  planArgs big = PA(PLAN_COLL_ALLGATHER, 1, 4, PLAN_SIDE_LANE_BYTES, 0, 0, 0);
  for (int al = 0; al < PLAN_NUM_ALGOS; al++) {
    if (planIsStaged((planAlgo)al) || !(planCollOf(big.coll)->algos & PLAN_ALGO_BIT(al))) continue;
    ASSERT_EQ_INT(planBuild(&big, (planAlgo)al, &s), 0);
    int self = -1;
    for (int i = 0; i < s.nsteps; i++)
      if (s.steps[i].kind == PLAN_STEP_COPY && s.steps[i].src.rank == 1 && s.steps[i].dst.rank == 1)
        self = s.steps[i].lane;
    int perPeer = al == PLAN_ALGO_PUSHN || al == PLAN_ALGO_PULLN;
    ASSERT_EQ_INT(self, perPeer ? 0 : 1);
    ASSERT_EQ_INT(s.nlanes, perPeer ? 3 : 2);
  }
  planArgs bad = PA(PLAN_COLL_ALLGATHER, 5, 5, 64, 0, 0, 0);
  ASSERT_EQ_INT(planBuild(&bad, PLAN_ALGO_PUSH1, &s), -1);
  planScheduleFree(&s);
  return 0;
}

/*
 * Staged algorithms (stage, stage2d, stagesm's movement form): every rank
 * runs a sequence of staged operations under a random interleaving, with the executors' flag rules
 * (a WAIT passes once its slot holds the operation's epoch). Checks: no deadlock; every receive
 * buffer byte right for every operation (fresh random data per operation, so a stale slot shows);
 * no write lands in a staging slot whose owner has not yet copied out the operation before; copies
 * stay inside the slot; no peer touches a user buffer.
 */
#define STAGE_MAXOPS 40
typedef struct {
  int n, slots, ops, inPlace;
  planColl coll;
  size_t chunk;
  unsigned seed;
} stageCase;

static uint32_t stageRand(uint32_t *x) {
  *x ^= *x << 13, *x ^= *x >> 17, *x ^= *x << 5;
  return *x;
}

static int runStagedCase(const stageCase *c, planAlgo algo) {
  int n = c->n, rc = 0;
  size_t blk = c->chunk, slotBytes = (size_t)n * blk;
  size_t ss = c->coll == PLAN_COLL_ALLGATHER ? blk : slotBytes;
  unsigned char *send[MAXR][STAGE_MAXOPS + 1], *recv[MAXR][STAGE_MAXOPS + 1], *stage[MAXR];
  int owed[MAXR][16]; /* stage index whose data sits unconsumed in [rank][slot] */
  uint32_t flags[MAXR][PLAN_NUM_PHASES][MAXR];
  int op[MAXR], pc[MAXR];
  planSchedule sch[MAXR];
  memset(sch, 0, sizeof(sch));
  memset(owed, 0, sizeof(owed));
  memset(flags, 0, sizeof(flags));
  for (int r = 0; r < n; r++) {
    stage[r] = malloc(slotBytes * (size_t)c->slots);
    memset(stage[r], 0x5A, slotBytes * (size_t)c->slots);
    for (int k = 1; k <= c->ops; k++) {
      recv[r][k] = malloc(slotBytes);
      memset(recv[r][k], 0xDD, slotBytes);
      send[r][k] = c->inPlace ? recv[r][k] + (size_t)r * blk : malloc(ss);
      testFillRandom(send[r][k], ss, 7000u + 131u * (unsigned)k + (unsigned)r);
    }
    op[r] = 1, pc[r] = 0;
    planArgs a = PA(c->coll, r, n, blk, c->inPlace, c->slots, 1);
    if (planBuild(&a, algo, &sch[r])) {
      TEST_FAIL("%s: planBuild failed", planAlgoName(algo));
      return 1;
    }
  }
  uint32_t rnd = c->seed | 1;
  for (;;) {
    int runnable[MAXR], nr = 0, left = 0;
    for (int r = 0; r < n; r++) {
      if (op[r] > c->ops) continue;
      left++;
      const planStep *st = pc[r] < sch[r].nsteps ? &sch[r].steps[pc[r]] : NULL;
      if (st && st->kind == PLAN_STEP_WAIT &&
          (int32_t)(flags[r][st->phase][st->peer] - (uint32_t)op[r]) < 0)
        continue;
      runnable[nr++] = r;
    }
    if (!left) break;
    if (!nr) {
      TEST_FAIL("%s n=%d slots=%d: deadlock", planAlgoName(algo), n, c->slots);
      rc = 1;
      break;
    }
    int r = runnable[stageRand(&rnd) % (uint32_t)nr], k = op[r];
    if (pc[r] == sch[r].nsteps) { /* operation k done on rank r: check it */
      for (int f = 0; f < n && !rc; f++) {
        const unsigned char *want =
            c->coll == PLAN_COLL_ALLGATHER ? send[f][k] : send[f][k] + (size_t)r * blk;
        long long d = testFirstDiff(recv[r][k] + (size_t)f * blk, want, blk);
        if (d >= 0) {
          TEST_FAIL("%s %s n=%d slots=%d op %d: rank %d block %d wrong at byte %lld",
                    planCollName(c->coll), planAlgoName(algo), n, c->slots, k, r, f, d);
          rc = 1;
        }
      }
      if (rc) break;
      op[r]++, pc[r] = 0;
      if (op[r] <= c->ops) {
        planArgs a = PA(c->coll, r, n, blk, c->inPlace, c->slots, (unsigned long long)op[r]);
        if (planBuild(&a, algo, &sch[r])) rc = 1;
      }
      continue;
    }
    const planStep *st = &sch[r].steps[pc[r]++];
    int slot = (int)(sch[r].stageIndex % (unsigned long long)c->slots);
    if (st->kind == PLAN_STEP_SIGNAL) {
      flags[st->peer][st->phase][r] = (uint32_t)k;
      continue;
    }
    if (st->kind == PLAN_STEP_WAIT) continue;
    /* COPY, or a REDUCE of one source (a copy of bytes: stagesm's movement
     * form): resolve both ends; peers' user buffers are off limits. */
    if (st->kind == PLAN_STEP_REDUCE && st->nsrc != 1) {
      TEST_FAIL("%s rank %d: a REDUCE of %d sources", planAlgoName(algo), r, st->nsrc);
      rc = 1;
      break;
    }
    unsigned char *p[2];
    const planLoc *loc[2] = {st->kind == PLAN_STEP_REDUCE ? &sch[r].srcs[st->src0] : &st->src,
                             &st->dst};
    for (int e = 0; e < 2; e++) {
      const planLoc *l = loc[e];
      size_t lim = l->buf == PLAN_BUF_STAGE ? slotBytes : l->buf == PLAN_BUF_SEND ? ss : slotBytes;
      if ((l->buf != PLAN_BUF_STAGE && l->rank != r) || l->off > lim || lim - l->off < st->bytes) {
        TEST_FAIL("%s rank %d: copy end %d (rank %d buf %d off %zu, %zu bytes) out of bounds",
                  planAlgoName(algo), r, e, l->rank, l->buf, l->off, st->bytes);
        rc = 1;
        break;
      }
      p[e] = l->buf == PLAN_BUF_STAGE  ? stage[l->rank] + (size_t)slot * slotBytes + l->off
             : l->buf == PLAN_BUF_SEND ? send[r][k] + l->off
                                       : recv[r][k] + l->off;
    }
    if (rc) break;
    if (st->dst.buf == PLAN_BUF_STAGE) {
      int *o = &owed[st->dst.rank][slot];
      if (*o && *o != k) {
        TEST_FAIL("%s n=%d slots=%d: rank %d overwrites rank %d's slot %d (op %d) with op %d",
                  planAlgoName(algo), n, c->slots, r, st->dst.rank, slot, *o, k);
        rc = 1;
        break;
      }
      *o = k;
    }
    memmove(p[1], p[0], st->bytes);
    if (loc[0]->buf == PLAN_BUF_STAGE) owed[r][slot] = 0;
  }
  for (int r = 0; r < n; r++) {
    planScheduleFree(&sch[r]);
    free(stage[r]);
    for (int k = 1; k <= c->ops; k++) {
      if (!c->inPlace) free(send[r][k]);
      free(recv[r][k]);
    }
  }
  return rc;
}

static int testStagedProtocol(void) {
  const size_t chunks[] = {1, 7, 33};
  const int slots[] = {2, 3, 8};
  int ncase = 0;
  for (int n = 1; n <= MAXR; n++)
    for (int coll = 0; coll <= PLAN_COLL_ALLTOALL; coll++)
      for (int inPlace = 0; inPlace <= (coll == PLAN_COLL_ALLGATHER); inPlace++)
        for (int si = 0; si < 3; si++)
          for (int ci = 0; ci < 3; ci++)
            for (int a = PLAN_ALGO_STAGE; a <= PLAN_ALGO_STAGESM; a++)
              for (unsigned seed = 1; seed <= 3; seed++) {
                stageCase c = {n,
                               slots[si],
                               3 * slots[si] + 3,
                               inPlace,
                               (planColl)coll,
                               chunks[ci],
                               seed * 2654435761u + (unsigned)n};
                if (runStagedCase(&c, (planAlgo)a)) return 1;
                ncase++;
              }
  printf("  %d staged sequences checked\n", ncase);
  return 0;
}

/* Staged schedules: one lane, n copies (rows in rank order for stage2d),
 * one out copy; bad slot counts refused. */
static int testStagedShape(void) {
  planSchedule s = {0};
  for (unsigned long long k = 1; k <= 8; k++) {
    planArgs a = PA(PLAN_COLL_ALLTOALL, 1, 4, 64, 0, 8, k);
    ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGE2D, &s), 0);
    ASSERT_EQ_INT(s.nlanes, 1);
    int copies = 0, row = 0;
    for (int i = 0; i < s.nsteps; i++) {
      if (s.steps[i].kind == PLAN_STEP_COPY && s.steps[i].batch == 2)
        ASSERT_EQ_INT(s.steps[i].dst.rank, row++); /* rows in rank order */
      copies += s.steps[i].kind == PLAN_STEP_COPY;
    }
    ASSERT_EQ_INT(copies, 5);
    ASSERT_EQ_INT(s.nsteps, 5 + 3 + 3);
  }
  planArgs bad = PA(PLAN_COLL_ALLGATHER, 0, 4, 64, 0, 0, 1);
  ASSERT_EQ_INT(planBuild(&bad, PLAN_ALGO_STAGE, &s), -1);
  bad.stageSlots = 1;
  ASSERT_EQ_INT(planBuild(&bad, PLAN_ALGO_STAGE, &s), -1);
  bad.stageSlots = 4, bad.stageIndex = 0;
  ASSERT_EQ_INT(planBuild(&bad, PLAN_ALGO_STAGE, &s), -1);
  planScheduleFree(&s);
  return 0;
}

/* ---- Every collective of the table ---- */

/* The V forms' arrays of every rank (rows[r] for planArgs.vec). */
typedef struct {
  size_t vec[MAXR][PLAN_VEC_ARRAYS * MAXR];
  const size_t *rows[MAXR];
} vecStore;

/* Displacements for counts c[0..n): blocks in a random order with random
 * gaps (in elements). */
static void randomDispls(const size_t *c, size_t *d, int n, uint32_t *rnd) {
  int order[MAXR];
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(stageRand(rnd) % (uint32_t)(i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    at += stageRand(rnd) % 3; /* gaps */
    d[order[i]] = at;
    at += c[order[i]];
  }
}

/* Random arrays: counts from 0 to about 2*count, some zero. */
static void makeVec(planColl coll, int n, size_t count, uint32_t *rnd, vecStore *v) {
  memset(v, 0, sizeof(*v));
  for (int r = 0; r < n; r++) v->rows[r] = v->vec[r];
  if (!planCollOf(coll)->vector) return;
  size_t span = 2 * count + 1;
  if (!planCollOf(coll)->peerArrays) {
    size_t c[MAXR] = {0}, d[MAXR] = {0};
    for (int i = 0; i < n; i++) c[i] = stageRand(rnd) % 4 == 0 ? 0 : stageRand(rnd) % span;
    randomDispls(c, d, n, rnd);
    for (int r = 0; r < n; r++) {
      memcpy(v->vec[r], c, (size_t)n * sizeof(size_t));
      memcpy(v->vec[r] + n, d, (size_t)n * sizeof(size_t));
    }
    return;
  }
  size_t sc[MAXR][MAXR];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) sc[i][j] = stageRand(rnd) % 4 == 0 ? 0 : stageRand(rnd) % span;
  for (int r = 0; r < n; r++) {
    size_t rc[MAXR];
    for (int j = 0; j < n; j++) {
      v->vec[r][j] = sc[r][j];
      rc[j] = sc[j][r];
      v->vec[r][2 * (size_t)n + j] = rc[j];
    }
    randomDispls(v->vec[r], v->vec[r] + n, n, rnd);
    randomDispls(rc, v->vec[r] + 3 * (size_t)n, n, rnd);
  }
}

/* Arguments of rank r: one-byte elements summed (uint8, dmacclSum). */
static planArgs anyArgs(planColl coll, int r, int n, size_t count, int root, int inPlace,
                        const vecStore *v, size_t scratch) {
  planArgs a = {.coll = coll,
                .rank = r,
                .nranks = n,
                .count = count,
                .elemSize = 1,
                .dtype = 1,
                .redop = 0,
                .root = root,
                .vec = v->rows,
                .scratchBytes = scratch};
  long long delta;
  a.inPlace = inPlace && planCollOf(coll)->inPlace(&a, r, &delta);
  return a;
}

/* An algorithm the collective takes, picked by x. */
static planAlgo anyAlgo(planColl coll, uint32_t x) {
  unsigned m = planCollOf(coll)->algos;
  int k = 0, pick;
  m &= ~PLAN_ALGO_BIT(PLAN_ALGO_PAIRS); /* composed by the core: no schedule */
  for (int a = 0; a < PLAN_NUM_ALGOS; a++) k += (m >> a) & 1;
  pick = (int)(x % (uint32_t)k);
  for (int a = 0; a < PLAN_NUM_ALGOS; a++)
    if (((m >> a) & 1) && pick-- == 0) return (planAlgo)a;
  return PLAN_ALGO_PUSH1;
}

/*
 * Hardware queues, simulated. Each rank runs a sequence of operations; its
 * steps are issued, in some order, into in-order queues. A queue runs its
 * head step once that step may run: the step before it on its lane ran (it
 * may sit in another queue), a JOIN's lane `from` ran every step listed
 * before the JOIN, a WAIT's flag holds the operation's epoch (SIGNAL stores
 * it). Nothing else runs out of order, so a WAIT at a head holds back its
 * whole queue, as on the GPU. A kernel (its inKernel steps and the REDUCE
 * after them: copies and signals it does, waits it polls) leaves its queue
 * once its lane has reached it, as a launch does, and runs from then on in
 * its lane's order, off every queue; a JOIN marked launched runs once the
 * kernel of its REDUCE has left its queue.
 */
#define SIM_MAXOPS 6
#define SIM_MAXSTEPS 4096
#define SIM_MAXQ MAXR /* a queue per rank at most */
typedef struct {
  short rank, op, idx;
} simRef;
typedef enum {
  SIM_LIST_PER_RANK = 0, /* list order, one queue per rank (one GPU each, one hardware queue) */
  SIM_TOPO_PER_RANK,     /* random dependency order per rank (a graph launch), a queue per rank */
  SIM_ROUNDS_SHARED,     /* all ranks in one process: round by round across ranks, lanes on
                            random queues shared by every rank */
  SIM_RANKS_SHARED       /* negative control: rank after rank into one shared queue */
} simMode;

typedef struct {
  int n, nops;
  planSchedule *s[MAXR][SIM_MAXOPS]; /* the schedules, op k of rank r (epoch k+1) */
  simMode mode;
  int nq;
  uint32_t seed;
  /* 1: CUDA graph words instead of epochs (cuda.c issueSync): a SIGNAL
   * writes 1, a stream WAIT waits for 1 and resets its word to 0, a
   * kernel's polled WAIT resets its word when the kernel ends (modelled
   * as late as can be: when the kernel's lane takes its next step, since no
   * one can know of the end earlier, or when a JOIN from that lane passes;
   * the kernel's own signals come before it); a SIGNAL that finds its word
   * still 1 is lost (simulate returns 2) */
  int graph;
  /* this rank's steps run only when no other rank's can (-1: none lags):
   * the orders where one rank falls behind, which races need */
  int lag;
  /* 1: a kernel's polled PUSH words are reset only when a NOTIFY on the
   * rank passes (standing for the CUDA executor's memory operations after
   * the kernel, plan.h planPushResetAt), not at the kernel's end */
  int pushReset;
} simCase;

/* Whether step i is part of a kernel (an inKernel step, the REDUCE after
 * such steps on its lane, or a SIGNAL written after a REDUCE in pieces);
 * *first: the kernel's first step. */
static int kernelPart(const planSchedule *sc, int i, int *first) {
  const planStep *si = &sc->steps[i];
  if (si->kind == PLAN_STEP_SIGNAL && si->inKernel) {
    int j = i - 1;
    while (j >= 0 && sc->steps[j].lane == si->lane && sc->steps[j].kind == PLAN_STEP_SIGNAL &&
           sc->steps[j].inKernel)
      j--;
    if (j >= 0 && sc->steps[j].lane == si->lane && sc->steps[j].kind == PLAN_STEP_REDUCE &&
        sc->steps[j].pieceBytes)
      return kernelPart(sc, j, first);
  }
  int f = -1;
  for (int j = i; j >= 0; j--) {
    const planStep *sj = &sc->steps[j];
    if (sj->lane != sc->steps[i].lane) continue;
    if (sj->inKernel && sj->kind != PLAN_STEP_REDUCE)
      f = j;
    else if (j != i || sj->kind != PLAN_STEP_REDUCE)
      break;
  }
  *first = f;
  return f >= 0;
}

/* The last step of the kernel whose first step is `first` (its steps on
 * its lane, the SIGNALs after a REDUCE in pieces included). */
static int kernelLast(const planSchedule *sc, int first) {
  int last = first, f;
  for (int j = first + 1; j < sc->nsteps; j++) {
    if (sc->steps[j].lane != sc->steps[first].lane) continue;
    if (!kernelPart(sc, j, &f) || f != first) break;
    last = j;
  }
  return last;
}

/* The steps of lane l before step idx of operation op (lane order). */
static int simOrdInLane(const simCase *c, const int laneBase[][SIM_MAXOPS][MAXL], simRef ref,
                        int l) {
  const planSchedule *sc = c->s[ref.rank][ref.op];
  int o = laneBase[ref.rank][ref.op][l];
  for (int j = 0; j < ref.idx; j++) o += sc->steps[j].lane == l;
  return o;
}

/* The word of step st's phase in operation ref: in a graph DATA of a
 * staged operation on graph staging slot 1 has a word of its own (cuda.c
 * flagGraphWord), index PLAN_NUM_PHASES here. */
static int simPhase(const simCase *c, simRef ref, const planStep *st) {
  const planSchedule *sc = c->s[ref.rank][ref.op];
  if (c->graph && st->phase == PLAN_PHASE_DATA && planIsStaged(sc->algo) && sc->stageSlots > 0 &&
      sc->stageIndex % (unsigned long long)sc->stageSlots == 1)
    return PLAN_NUM_PHASES;
  return (int)st->phase;
}

/* graph: whether the SIGNAL st of ref lands on a word still set (said). */
static int simPhase(const simCase *c, simRef ref, const planStep *st);
static int simLost(const simCase *c, uint32_t flags[][PLAN_NUM_PHASES + 1][MAXR], simRef ref,
                   const planStep *st, char *why, size_t whylen) {
  if (!c->graph || !flags[st->peer][simPhase(c, ref, st)][ref.rank]) return 0;
  snprintf(why, whylen,
           "rank %d's signal (phase %d) to rank %d in op %d lands on a word still set: lost",
           ref.rank, (int)st->phase, st->peer, ref.op + 1);
  return 1;
}

/* Line copies landed (stagell) in simulate's run: where, in which
 * operation. A REDUCE with line sources waits for each at its own offset
 * (its kernel polls each line's flag: cuda.c readsLines), not for any
 * lines in the slot. */
static struct {
  short rank, op;
  size_t off;
} landed[SIM_MAXSTEPS];
static int nlanded;
static int simLinesIn(const simCase *c, simRef ref, const planStep *st) {
  for (int k = 0; k < st->nsrc; k++) {
    const planLoc *src = &c->s[ref.rank][ref.op]->srcs[st->src0 + k];
    int found = src->buf != PLAN_BUF_LINES;
    for (int m = 0; m < nlanded && !found; m++)
      found = landed[m].rank == src->rank && landed[m].op == ref.op && landed[m].off == src->off;
    if (!found) return 0;
  }
  return 1;
}

/* Returns 0 when every step ran, 1 on a deadlock (said in why), 2 on a lost
 * graph signal (simCase.graph; said), -1 on error. */
static int simulate(const simCase *c, char *why, size_t whylen) {
  static simRef q[SIM_MAXQ][SIM_MAXSTEPS], pend[SIM_MAXSTEPS];
  static unsigned char launched[MAXR][SIM_MAXOPS][SIM_MAXSTEPS];
  int npend = 0;
  memset(launched, 0, sizeof(launched));
  int qlen[SIM_MAXQ] = {0}, head[SIM_MAXQ] = {0};
  int laneDone[MAXR][MAXL], laneBase[MAXR][SIM_MAXOPS][MAXL];
  uint32_t flags[MAXR][PLAN_NUM_PHASES + 1][MAXR]; /* (+1: simPhase) */
  int laneQ[MAXR][MAXL];
  nlanded = 0;
  /* graph: the words a running kernel polled, reset when it ends */
  static struct { short rank, op, first, phase, peer, ended, lane; } kreset[SIM_MAXSTEPS];
  int nkreset = 0, allow = 0;
  uint32_t rnd = c->seed | 1;
  memset(laneDone, 0, sizeof(laneDone));
  memset(flags, 0, sizeof(flags));
  int nq = c->mode == SIM_ROUNDS_SHARED ? c->nq : c->mode == SIM_RANKS_SHARED ? 1 : c->n;
  for (int r = 0; r < c->n; r++)
    for (int l = 0; l < MAXL; l++)
      laneQ[r][l] = c->mode == SIM_ROUNDS_SHARED  ? (int)(stageRand(&rnd) % (uint32_t)nq)
                    : c->mode == SIM_RANKS_SHARED ? 0
                                                  : r;
  /* Steps of each lane before operation k (a lane is one stream across operations). */
  for (int r = 0; r < c->n; r++) {
    int cnt[MAXL] = {0};
    for (int k = 0; k < c->nops; k++) {
      memcpy(laneBase[r][k], cnt, sizeof(cnt));
      for (int i = 0; i < c->s[r][k]->nsteps; i++) cnt[c->s[r][k]->steps[i].lane]++;
    }
  }
  /* Issue order. */
#define SIM_PUSH(qi, rr, kk, ii)                                                                   \
  do {                                                                                             \
    if (qlen[qi] == SIM_MAXSTEPS) return -1;                                                       \
    q[qi][qlen[qi]++] = (simRef){(short)(rr), (short)(kk), (short)(ii)};                           \
  } while (0)
  for (int k = 0; k < c->nops; k++) {
    if (c->mode == SIM_ROUNDS_SHARED || c->mode == SIM_LIST_PER_RANK) {
      int maxRounds = 0;
      for (int r = 0; r < c->n; r++)
        if (c->s[r][k]->nrounds > maxRounds) maxRounds = c->s[r][k]->nrounds;
      for (int rd = 0; rd < maxRounds; rd++)
        for (int r = 0; r < c->n; r++)
          for (int i = 0; i < c->s[r][k]->nsteps; i++)
            if (c->s[r][k]->steps[i].round == rd)
              SIM_PUSH(laneQ[r][c->s[r][k]->steps[i].lane], r, k, i);
    } else if (c->mode == SIM_RANKS_SHARED) {
      for (int r = 0; r < c->n; r++)
        for (int i = 0; i < c->s[r][k]->nsteps; i++) SIM_PUSH(0, r, k, i);
    } else { /* a random order that keeps lane order and JOINs */
      for (int r = 0; r < c->n; r++) {
        const planSchedule *sc = c->s[r][k];
        unsigned char issued[256] = {0};
        if (sc->nsteps > 256) return -1;
        for (int left = sc->nsteps; left > 0; left--) {
          int ready[256], nr = 0;
          for (int i = 0; i < sc->nsteps; i++) {
            if (issued[i]) continue;
            int ok = 1;
            for (int j = 0; j < i && ok; j++) {
              const planStep *sj = &sc->steps[j];
              if (issued[j]) continue;
              if (sj->lane == sc->steps[i].lane) ok = 0;
              /* a JOIN is an edge from lane `from`; one a kernel polls
               * (inKernel) is no edge: the word it polls is written there */
              if (sc->steps[i].kind == PLAN_STEP_JOIN && !sc->steps[i].inKernel &&
                  sj->lane == sc->steps[i].from)
                ok = 0;
            }
            if (ok) ready[nr++] = i;
          }
          int pick = ready[stageRand(&rnd) % (uint32_t)nr];
          issued[pick] = 1;
          SIM_PUSH(r, r, k, pick);
        }
      }
    }
  }
#undef SIM_PUSH
  /* graph: a kernel's reset at its end, once its lane goes on */
#define SIM_PUSHWORD(m_) (kreset[m_].phase >= PLAN_PHASE_PUSH && kreset[m_].phase < PLAN_NUM_PHASES)
#define SIM_ENDED(rr, ll, ref_)                                                                    \
  for (int m_ = 0; m_ < nkreset; m_++)                                                             \
    if (kreset[m_].ended && kreset[m_].rank == (rr) && kreset[m_].lane == (ll) &&                  \
        !(c->pushReset && SIM_PUSHWORD(m_)) &&                                                     \
        (kreset[m_].op < (ref_).op ||                                                              \
         (kreset[m_].op == (ref_).op && kreset[m_].first < (ref_).idx))) {                         \
      flags[rr][kreset[m_].phase][kreset[m_].peer] = 0;                                            \
      kreset[m_--] = kreset[--nkreset];                                                            \
    }
  /* Run. */
  for (;;) {
    int progressed = 0, left = npend;
    /* Launched kernels: their steps in lane order, off the queues. */
    for (int i = 0; i < npend; i++) {
      simRef ref = pend[i];
      if (ref.rank == c->lag && !allow) continue;
      const planStep *st = &c->s[ref.rank][ref.op]->steps[ref.idx];
      int ok = laneDone[ref.rank][st->lane] == simOrdInLane(c, laneBase, ref, st->lane);
      if (ok && st->kind == PLAN_STEP_JOIN)
        ok = laneDone[ref.rank][st->from] >= simOrdInLane(c, laneBase, ref, st->from);
      if (ok && st->kind == PLAN_STEP_WAIT)
        ok = c->graph
                 ? flags[ref.rank][simPhase(c, ref, st)][st->peer] == 1
                 : (int32_t)(flags[ref.rank][st->phase][st->peer] - (uint32_t)(ref.op + 1)) >= 0;
      if (ok && st->kind == PLAN_STEP_REDUCE) ok = simLinesIn(c, ref, st); /* it polls them */
      if (!ok) continue;
      SIM_ENDED(ref.rank, st->lane, ref)
      int first = -1;
      if (c->graph) kernelPart(c->s[ref.rank][ref.op], ref.idx, &first);
      if (st->kind == PLAN_STEP_SIGNAL && simLost(c, flags, ref, st, why, whylen)) return 2;
      if (st->kind == PLAN_STEP_SIGNAL)
        flags[st->peer][simPhase(c, ref, st)][ref.rank] = c->graph ? 1 : (uint32_t)ref.op + 1;
      if (c->graph && st->kind == PLAN_STEP_WAIT && first >= 0)
        kreset[nkreset++] = (__typeof__(kreset[0])){(short)ref.rank,
                                                    (short)ref.op,
                                                    (short)first,
                                                    (short)simPhase(c, ref, st),
                                                    (short)st->peer,
                                                    0,
                                                    0};
      if (c->graph && first >= 0 && ref.idx == kernelLast(c->s[ref.rank][ref.op], first))
        for (int m = 0; m < nkreset; m++) /* the kernel ends: the rest reset at its end */
          if (kreset[m].rank == ref.rank && kreset[m].op == ref.op && kreset[m].first == first)
            kreset[m].ended = 1, kreset[m].lane = (short)st->lane;
      if (ref.rank == c->lag) allow = 0;
      if (st->kind == PLAN_STEP_COPY && st->dst.buf == PLAN_BUF_LINES && nlanded == SIM_MAXSTEPS)
        return -1;
      if (st->kind == PLAN_STEP_COPY && st->dst.buf == PLAN_BUF_LINES)
        landed[nlanded++] =
            (__typeof__(landed[0])){(short)st->dst.rank, (short)ref.op, st->dst.off};
      laneDone[ref.rank][st->lane]++;
      pend[i--] = pend[--npend];
      progressed = 1;
    }
    for (int qi = 0; qi < nq; qi++)
      while (head[qi] < qlen[qi]) {
        simRef ref = q[qi][head[qi]];
        if (ref.rank == c->lag && !allow) break;
        const planSchedule *sc = c->s[ref.rank][ref.op];
        const planStep *st = &sc->steps[ref.idx];
        int ordInLane = simOrdInLane(c, laneBase, ref, st->lane);
        int ok = laneDone[ref.rank][st->lane] == ordInLane, first;
        if (kernelPart(sc, ref.idx, &first)) {
          /* The launch leaves the queue once the lane reached the kernel. */
          if (ref.idx == first ? !ok : !launched[ref.rank][ref.op][first]) break;
          launched[ref.rank][ref.op][first] = 1;
          if (ref.rank == c->lag) allow = 0;
          pend[npend++] = ref;
          head[qi]++;
          progressed = 1;
          continue;
        }
        if (ok && st->kind == PLAN_STEP_JOIN && st->launched) {
          /* once the kernel of lane `from`'s REDUCE before it has launched */
          int R = ref.idx - 1, kf = -1;
          while (R >= 0 && (sc->steps[R].lane != st->from || sc->steps[R].kind != PLAN_STEP_REDUCE))
            R--;
          ok = R >= 0 && kernelPart(sc, R, &kf) && launched[ref.rank][ref.op][kf];
        } else if (ok && st->kind == PLAN_STEP_JOIN) {
          int need = laneBase[ref.rank][ref.op][st->from];
          for (int j = 0; j < ref.idx; j++) need += sc->steps[j].lane == st->from;
          ok = laneDone[ref.rank][st->from] >= need;
        }
        uint32_t epoch = (uint32_t)ref.op + 1;
        if (ok && st->kind == PLAN_STEP_REDUCE) ok = simLinesIn(c, ref, st); /* a kernel too */
        if (ok && st->kind == PLAN_STEP_WAIT)
          ok = c->graph ? flags[ref.rank][simPhase(c, ref, st)][st->peer] == 1
                        : (int32_t)(flags[ref.rank][st->phase][st->peer] - epoch) >= 0;
        if (!ok) break;
        SIM_ENDED(ref.rank, st->lane, ref)
        if (st->kind == PLAN_STEP_JOIN && !st->launched) { /* it has seen lane from's kernel end */
          SIM_ENDED(ref.rank, st->from, ref)               /* (kernels listed before it) */
        }
        if (c->pushReset && st->kind == PLAN_STEP_NOTIFY) /* the PUSH words' reset (above) */
          for (int m = 0; m < nkreset; m++)
            if (kreset[m].ended && kreset[m].rank == ref.rank && SIM_PUSHWORD(m) &&
                (kreset[m].op < ref.op || (kreset[m].op == ref.op && kreset[m].first < ref.idx))) {
              flags[ref.rank][kreset[m].phase][kreset[m].peer] = 0;
              kreset[m--] = kreset[--nkreset];
            }
        if (st->kind == PLAN_STEP_SIGNAL && simLost(c, flags, ref, st, why, whylen)) return 2;
        if (st->kind == PLAN_STEP_SIGNAL)
          flags[st->peer][simPhase(c, ref, st)][ref.rank] = c->graph ? 1 : epoch;
        if (c->graph && st->kind == PLAN_STEP_WAIT)
          flags[ref.rank][simPhase(c, ref, st)][st->peer] = 0;
        if (ref.rank == c->lag) allow = 0;
        laneDone[ref.rank][st->lane]++;
        head[qi]++;
        progressed = 1;
      }
    for (int qi = 0; qi < nq; qi++) left += qlen[qi] - head[qi];
    if (!left) return 0;
    if (!progressed && c->lag >= 0 && !allow) { /* the lagging rank's turn: one step */
      allow = 1;
      continue;
    }
    allow = 0;
    if (!progressed) {
      for (int qi = 0; qi < nq; qi++)
        if (head[qi] < qlen[qi]) {
          simRef ref = q[qi][head[qi]];
          const planStep *st = &c->s[ref.rank][ref.op]->steps[ref.idx];
          snprintf(
              why, whylen,
              "deadlock: queue %d holds at rank %d op %d step %d (%s lane %d peer %d round %d)", qi,
              ref.rank, ref.op + 1, ref.idx,
              st->kind == PLAN_STEP_WAIT   ? "WAIT"
              : st->kind == PLAN_STEP_JOIN ? "JOIN"
                                           : "step",
              st->lane, st->peer, st->round);
          break;
        }
      return 1;
    }
  }
}

/* Schedules built with a JOIN marked launched (pull1's AllReduce in a
 * graph), counted where the tests below build them: they must not vanish
 * from the random sequences and replays unnoticed. */
static long launchedBuilt;
/* replayColl: JOINs marked launched that passed while their kernel still
 * had pieces to reduce (lane C running beside it) */
static long launchedEarly;
static void countLaunched(const planSchedule *s) {
  for (int i = 0; i < s->nsteps; i++)
    if (s->steps[i].launched) {
      launchedBuilt++;
      return;
    }
}

static int testQueueSafety(void) {
  static planSchedule sch[MAXR][SIM_MAXOPS];
  memset(sch, 0, sizeof(sch));
  const size_t chunks[] = {64, PLAN_SIDE_LANE_BYTES};
  int runs = 0, rc = 0;
  long launchedBefore = launchedBuilt;
  char why[256];
  for (int n = 1; n <= MAXR && !rc; n++)
    for (int ci = 0; ci < 2 && !rc; ci++)
      for (int mode = SIM_LIST_PER_RANK; mode <= SIM_ROUNDS_SHARED && !rc; mode++)
        for (uint32_t seed = 1; seed <= 12 && !rc; seed++) {
          simCase c = {n, 4,  {{0}}, (simMode)mode, 1 + (int)(seed % 3), seed * 2654435761u + n,
                       0, -1, 0};
          uint32_t pick = c.seed;
          unsigned long long staged = 0;
          for (int k = 0; k < c.nops && !rc; k++) {
            /* A different algorithm and collective for each operation. */
            planColl coll = (planColl)(stageRand(&pick) % PLAN_NUM_COLLS);
            planAlgo algo = anyAlgo(coll, stageRand(&pick) + (uint32_t)k);
            int root = (int)(stageRand(&pick) % (uint32_t)n);
            int inPlace = (int)(stageRand(&pick) & 1);
            static vecStore vs[SIM_MAXOPS];
            makeVec(coll, n, chunks[ci] / 8, &pick, &vs[k]);
            if (planIsStaged(algo)) staged++;
            planSchedule ops[MAXR];
            for (int r = 0; r < n && !rc; r++) {
              planArgs a = anyArgs(coll, r, n, chunks[ci] / 8, root, inPlace, &vs[k], 1 << 20);
              a.stageSlots = 2;
              a.stageIndex = planIsStaged(algo) ? staged : 0;
              /* the graph forms too: ENTRY first, the own block late */
              a.stageEntry = (int)((seed >> 1) & 1) && staged == 1;
              a.stageSelfLate = (int)((seed >> 2) & 1);
              a.kernelWait = (int)((seed >> 3) & 1); /* reductions' kernels poll */
              a.lineBytes = (size_t)1 << 20;         /* stagell: its line form */
              a.pieceMin = 256; /* pull1: several pieces, AllReduce's result in groups */
              /* pull1's AllReduce signalling from its kernel; list order
               * (lane C forked early) only where the steps are issued so,
               * else the graph form (up to 40 smallest pieces) */
              a.kernelSignals = (int)(seed & 1);
              a.listOrder = mode != SIM_TOPO_PER_RANK && (((seed >> 1) ^ (seed >> 3)) & 1);
              if (!a.listOrder && ci == 1) a.pieceMin = 4096;
              if (planBuild(&a, algo, &sch[r][k])) {
                TEST_FAIL("planBuild %s n=%d", planAlgoName(algo), n);
                rc = 1;
              }
              countLaunched(&sch[r][k]);
              ops[r] = sch[r][k];
              c.s[r][k] = &sch[r][k];
            }
            if (!rc && planCheck(ops, n, why, sizeof(why))) {
              TEST_FAIL("%s %s n=%d: %s", planCollName(coll), planAlgoName(algo), n, why);
              rc = 1;
            }
          }
          int sr = rc ? 0 : simulate(&c, why, sizeof(why));
          if (sr) {
            TEST_FAIL("n=%d chunk=%zu mode %d seed %u: %s", n, chunks[ci], mode, seed,
                      sr < 0 ? "simulation overflow" : why);
            rc = 1;
          }
          runs++;
        }
  for (int r = 0; r < MAXR; r++)
    for (int k = 0; k < SIM_MAXOPS; k++) planScheduleFree(&sch[r][k]);
  printf("  %d simulated sequences without deadlock (%ld schedules with a JOIN marked launched)\n",
         runs, launchedBuilt - launchedBefore);
  ASSERT_TRUE(launchedBuilt > launchedBefore);
  return rc;
}

/* Negative controls: the simulation does find deadlocks. (1) Ranks issued
 * one after the other into one queue (not round by round): push1, 2 ranks.
 * (2) A per-peer schedule whose lanes each signal their own peer (the form
 * before queue safety): planCheck refuses it, and with 3 ranks some
 * dependency order deadlocks on one queue per rank. */
static int testQueueSafetyControls(void) {
  planSchedule a[3], b[3];
  memset(a, 0, sizeof(a));
  memset(b, 0, sizeof(b));
  char why[256];
  simCase c = {2, 1, {{0}}, SIM_RANKS_SHARED, 1, 1, 0, -1, 0};
  for (int r = 0; r < 2; r++) {
    planArgs args = PA(PLAN_COLL_ALLGATHER, r, 2, 64, 0, 0, 0);
    ASSERT_EQ_INT(planBuild(&args, PLAN_ALGO_PUSH1, &a[r]), 0);
    c.s[r][0] = &a[r];
  }
  ASSERT_EQ_INT(simulate(&c, why, sizeof(why)), 1);
  printf("  control 1: %s\n", why);
  /* Old per-peer shape: lane d-1 runs peer (r+d)'s whole handshake. */
  for (int r = 0; r < 3; r++) {
    planArgs args = PA(PLAN_COLL_ALLTOALL, r, 3, 64, 0, 0, 0);
    planScheduleReset(&b[r], &args, PLAN_ALGO_PUSHN);
    for (int d = 1; d < 3; d++) {
      int p = (r + d) % 3, l = d - 1;
      b[r].round = 0;
      if (l) ASSERT_EQ_INT(planAddJoin(&b[r], l, 0), 0);
      ASSERT_EQ_INT(planAddSync(&b[r], PLAN_STEP_SIGNAL, l, p, PLAN_PHASE_ENTRY), 0);
    }
    for (int d = 1; d < 3; d++) {
      int p = (r + d) % 3, l = d - 1;
      b[r].round = 1;
      ASSERT_EQ_INT(planAddSync(&b[r], PLAN_STEP_WAIT, l, p, PLAN_PHASE_ENTRY), 0);
      ASSERT_EQ_INT(planAddCopy(&b[r], l, (planLoc){r, PLAN_BUF_SEND, (size_t)p * 64},
                                (planLoc){p, PLAN_BUF_RECV, (size_t)r * 64}, 64, 0),
                    0);
      ASSERT_EQ_INT(planAddSync(&b[r], PLAN_STEP_SIGNAL, l, p, PLAN_PHASE_EXIT), 0);
    }
    for (int d = 1; d < 3; d++) {
      b[r].round = 2;
      ASSERT_EQ_INT(planAddSync(&b[r], PLAN_STEP_WAIT, d - 1, (r + d) % 3, PLAN_PHASE_EXIT), 0);
    }
    ASSERT_EQ_INT(planAddJoin(&b[r], 0, 1), 0);
  }
  ASSERT_EQ_INT(planCheck(b, 3, why, sizeof(why)), -1);
  printf("  control 2: planCheck: %s\n", why);
  int deadlocks = 0;
  for (uint32_t seed = 1; seed <= 400; seed++) {
    simCase t = {3, 1, {{0}}, SIM_TOPO_PER_RANK, 1, seed * 2654435761u, 0, -1, 0};
    for (int r = 0; r < 3; r++) t.s[r][0] = &b[r];
    deadlocks += simulate(&t, why, sizeof(why)) == 1;
  }
  printf("  control 2: %d of 400 dependency orders deadlock\n", deadlocks);
  ASSERT_TRUE(deadlocks > 0);
  for (int r = 0; r < 3; r++) planScheduleFree(&a[r]), planScheduleFree(&b[r]);
  return 0;
}

/*
 * Every collective of the table, byte for byte: every rank's schedule runs
 * on plain memory, steps picked at random among those that may run (a lane's
 * head whose WAIT or JOIN is satisfied), so a missing handshake shows up as
 * wrong data in some order; elements are bytes summed mod 256. The expected
 * buffers come from the rows' block and target functions (their meaning is
 * tested against the header's contract end to end in test_colls).
 */
typedef struct {
  unsigned char *base[MAXR];
  unsigned char *send[MAXR], *recv[MAXR], *stage[MAXR], *scratch[MAXR], *lines[MAXR];
  size_t sendB[MAXR], recvB[MAXR];
} replayMem;

/* Line slots (plan.h PLAN_BUF_LINES) as the executors use them, one flag
 * word checked here per half-line; planLines(bytes) lines, a token's one
 * without data. */
static size_t lineData(size_t bytes, size_t v) {
  return bytes <= v * 8 ? 0 : bytes - v * 8 < 8 ? bytes - v * 8 : 8;
}
static void putLines(unsigned char *dst, const unsigned char *src, size_t bytes) {
  for (size_t v = 0; v < planLines(bytes); v++) {
    uint32_t w[4] = {0, PLAN_LINE_FLAG, 0, PLAN_LINE_FLAG};
    size_t k = lineData(bytes, v);
    if (k) memcpy(&w[0], src + v * 8, k < 4 ? k : 4);
    if (k > 4) memcpy(&w[2], src + v * 8 + 4, k - 4);
    memcpy(dst + v * 16, w, 16);
  }
}
static int linesReady(const unsigned char *l, size_t bytes) {
  for (size_t v = 0; v < planLines(bytes); v++) {
    uint32_t w[4];
    memcpy(w, l + v * 16, 16);
    if (w[1] != PLAN_LINE_FLAG || w[3] != PLAN_LINE_FLAG) return 0;
  }
  return 1;
}
static void takeLines(unsigned char *dst, unsigned char *l, size_t bytes) {
  for (size_t v = 0; v < planLines(bytes); v++) {
    uint32_t w[4];
    size_t k = lineData(bytes, v);
    memcpy(w, l + v * 16, 16);
    if (k) memcpy(dst + v * 8, &w[0], k < 4 ? k : 4);
    if (k > 4) memcpy(dst + v * 8 + 4, &w[2], k - 4);
    memset(l + v * 16, 0, 16);
  }
}

#undef GUARD
#define GUARD 16
#define POISON 0xA5

/* Arrival words (planAddArrivals): NOTIFY steps replayed, and the control
 * that moves one of rank 0's peer-block NOTIFYs to the front. */
static long notifiesChecked;
static int notifyEarlyControl;

static int replayColl(planColl coll, int n, size_t count, int root, int inPlace, planAlgo algo,
                      const vecStore *v, size_t scratchBytes, size_t pieceMin, uint32_t seed) {
  const planCollInfo *ci = planCollOf(coll);
  planSchedule s[MAXR];
  planArgs a[MAXR];
  replayMem m;
  unsigned char *snap[MAXR], *want[MAXR];
  memset(s, 0, sizeof(s));
  memset(&m, 0, sizeof(m));
  memset(snap, 0, sizeof(snap));
  memset(want, 0, sizeof(want));
  int rc = 0, staged = planIsStaged(algo);
  uint32_t rnd = seed | 1;
  char why[256];
  for (int r = 0; r < n; r++) {
    a[r] = anyArgs(coll, r, n, count, root, inPlace, v, scratchBytes);
    a[r].pieceMin = pieceMin;
    a[r].stageSlots = 2;
    a[r].stageIndex = 1;
    a[r].stageEntry = (int)(seed & 1);           /* the first staged operation of a graph */
    a[r].stageSelfLate = (int)((seed >> 1) & 1); /* a graph's own-block copy */
    a[r].kernelWait = (int)((seed >> 2) & 1);    /* reductions: the kernel polls */
    /* stagell: line slots that hold the operation, or too small ones */
    a[r].lineBytes = (seed >> 3) & 1 ? 256 : (size_t)1 << 20;
    /* AllGather(V): arrival NOTIFYs in half the runs */
    a[r].notify = (coll == PLAN_COLL_ALLGATHER || coll == PLAN_COLL_ALLGATHERV) &&
                  (((seed >> 4) & 1) || notifyEarlyControl);
    a[r].kernelSignals = (int)((seed >> 5) & 1); /* pull1's AllReduce in one kernel */
    a[r].listOrder = (int)((seed >> 6) & 1);     /* ... with lane C forked early */
  }
  int notified[MAXR][MAXR];
  memset(notified, 0, sizeof(notified));
  size_t stageNeed = staged ? planStageNeed(&a[0], algo) : 0;
  int linesUsed = 0;
  for (int r = 0; r < n && !rc; r++) {
    if (planBuild(&a[r], algo, &s[r])) {
      TEST_FAIL("%s %s n=%d count=%zu: planBuild failed", ci->name, planAlgoName(algo), n, count);
      rc = 1;
    }
    countLaunched(&s[r]);
  }
  for (int i = 0; notifyEarlyControl && !rc && i < s[0].nsteps; i++) {
    planStep *st = &s[0].steps[i];
    if (st->kind != PLAN_STEP_NOTIFY || st->peer == 0 ||
        !ci->block(&a[st->peer], st->peer, 0).bytes)
      continue;
    planStep moved = *st; /* to the front of lane 0: before its block can have arrived */
    memmove(&s[0].steps[1], &s[0].steps[0], (size_t)i * sizeof(*st));
    moved.lane = 0, moved.round = 0;
    s[0].steps[0] = moved;
    break;
  }
  if (!rc && planCheck(s, n, why, sizeof(why))) {
    TEST_FAIL("%s %s n=%d count=%zu: %s", ci->name, planAlgoName(algo), n, count, why);
    rc = 1;
  }
  /* Buffers: in place, send and recv are one allocation at the row's delta. */
  for (int r = 0; r < n && !rc; r++) {
    size_t sb = ci->sendBytes(&a[r], r), rb = ci->recvBytes(&a[r], r);
    long long d = 0;
    if (a[r].inPlace) ci->inPlace(&a[r], r, &d);
    long long lo = a[r].inPlace && d < 0 ? d : 0;
    long long hi = a[r].inPlace
                       ? (d + (long long)sb > (long long)rb ? d + (long long)sb : (long long)rb)
                       : (long long)rb;
    m.base[r] = malloc((size_t)(hi - lo) + 2 * GUARD + (a[r].inPlace ? 0 : sb + GUARD));
    m.stage[r] = malloc(stageNeed + 1);
    m.scratch[r] = malloc(scratchBytes);
    m.lines[r] = calloc(1, a[r].lineBytes);
    snap[r] = malloc(sb + 1);
    want[r] = malloc((size_t)(hi - lo) + 2 * GUARD + 1);
    memset(m.base[r], POISON, (size_t)(hi - lo) + 2 * GUARD + (a[r].inPlace ? 0 : sb + GUARD));
    m.recv[r] = m.base[r] + GUARD - lo;
    m.send[r] = a[r].inPlace ? m.recv[r] + d : m.base[r] + (size_t)(hi - lo) + 2 * GUARD;
    m.sendB[r] = sb;
    m.recvB[r] = rb;
    for (size_t i = 0; i < sb; i++) m.send[r][i] = (unsigned char)stageRand(&rnd);
    memcpy(snap[r], m.send[r], sb);
    memcpy(want[r], m.base[r], (size_t)(hi - lo) + 2 * GUARD);
  }
  /* Expected receive buffers (want[r] mirrors base[r] up to the send part). */
#define WANT(r) (want[r] + (m.recv[r] - m.base[r]))
  for (int to = 0; to < n && !rc; to++) {
    if (!ci->reduces) {
      for (int f = 0; f < n; f++) {
        planBlock b = ci->block(&a[f], f, to);
        if (b.bytes) memcpy(WANT(to) + b.dstOff, snap[f] + b.srcOff, b.bytes);
      }
      continue;
    }
    planBlock t = ci->target(&a[to], to, staged);
    for (size_t i = 0; i < t.bytes; i++) {
      unsigned char sum = 0;
      for (int f = 0; f < n; f++) sum = (unsigned char)(sum + snap[f][t.srcOff + i]);
      WANT(to)[t.dstOff + i] = sum;
      if (ci->shareResult && !staged)
        for (int p = 0; p < n; p++) WANT(p)[t.dstOff + i] = sum;
    }
  }
  /* Run, steps in random order. */
  uint32_t flags[MAXR][PLAN_NUM_PHASES][MAXR];
  int next[MAXR][MAXL], done[MAXR][MAXL];
  memset(flags, 0, sizeof(flags));
  memset(done, 0, sizeof(done));
  for (int r = 0; r < n; r++)
    for (int l = 0; l < MAXL; l++) {
      next[r][l] = 0;
      while (next[r][l] < s[r].nsteps && s[r].steps[next[r][l]].lane != l) next[r][l]++;
    }
  const void *bufs[4];
  (void)bufs;
  /* A REDUCE in pieces runs as its kernel may: piece k at any pick after
   * its polled JOIN passed (pieces in order, before the REDUCE's lane goes
   * on), then that piece's SIGNALs written after the REDUCE. Per rank: the
   * REDUCE's step, pieces whose JOIN passed, pieces done. */
  int pieceRed[MAXR], piecesReady[MAXR], piecesDone[MAXR];
  for (int r = 0; r < n; r++) pieceRed[r] = -1, piecesReady[r] = piecesDone[r] = 0;
  for (int steps = 0; !rc; steps++) {
    int cand[MAXR * (MAXL + 1)][2], nc = 0, left = 0;
    for (int r = 0; r < n; r++)
      if (piecesDone[r] < piecesReady[r]) cand[nc][0] = r, cand[nc][1] = MAXL, nc++;
    for (int r = 0; r < n; r++)
      for (int l = 0; l < MAXL; l++) {
        int i = next[r][l];
        if (i >= s[r].nsteps) continue;
        left++;
        const planStep *st = &s[r].steps[i];
        if (st->kind == PLAN_STEP_WAIT && flags[r][st->phase][st->peer] == 0) continue;
        /* a JOIN marked launched: once lane `from` has reached its REDUCE
         * (the kernel runs; its pieces go on beside) */
        int need = i;
        while (st->kind == PLAN_STEP_JOIN && st->launched && need > 0 &&
               !(s[r].steps[need].lane == st->from && s[r].steps[need].kind == PLAN_STEP_REDUCE))
          need--;
        if (st->kind == PLAN_STEP_JOIN && next[r][st->from] < need) continue;
        if (st->kind == PLAN_STEP_REDUCE && st->pieceBytes &&
            piecesDone[r] * st->pieceBytes < st->bytes)
          continue;    /* its kernel has pieces to go */
        int ready = 1; /* a REDUCE's lines are its waits */
        for (int k = 0; st->kind == PLAN_STEP_REDUCE && k < st->nsrc; k++) {
          planLoc q = s[r].srcs[st->src0 + k];
          if (q.buf == PLAN_BUF_LINES &&
              (q.off > a[r].lineBytes || a[r].lineBytes - q.off < planLinesBytes(st->bytes) ||
               !linesReady(m.lines[r] + q.off, st->bytes)))
            ready = 0;
        }
        if (!ready) continue;
        cand[nc][0] = r, cand[nc][1] = l, nc++;
      }
    if (!left) break;
    if (!nc) {
      TEST_FAIL("%s %s n=%d count=%zu: deadlock", ci->name, planAlgoName(algo), n, count);
      rc = 1;
      break;
    }
    int pick = (int)(stageRand(&rnd) % (uint32_t)nc), r = cand[pick][0], l = cand[pick][1];
    if (l == MAXL) { /* the next piece of rank r's REDUCE in pieces, and its SIGNALs */
      const planStep *red = &s[r].steps[pieceRed[r]];
      size_t k = (size_t)piecesDone[r]++, lo = k * red->pieceBytes;
      size_t hi = lo + red->pieceBytes < red->bytes ? lo + red->pieceBytes : red->bytes;
      for (size_t i = lo; i < hi; i++) {
        unsigned char sum = 0;
        for (int q = 0; q < red->nsrc; q++) {
          planLoc x = s[r].srcs[red->src0 + q];
          unsigned char *b = x.buf == PLAN_BUF_SEND   ? m.send[x.rank]
                             : x.buf == PLAN_BUF_RECV ? m.recv[x.rank]
                                                      : m.scratch[r];
          sum = (unsigned char)(sum + b[x.off + i]);
        }
        (red->dst.buf == PLAN_BUF_RECV ? m.recv[r] : m.scratch[r])[red->dst.off + i] = sum;
      }
      for (int q = pieceRed[r] + 1; q < s[r].nsteps && s[r].steps[q].kind == PLAN_STEP_SIGNAL &&
                                    s[r].steps[q].inKernel && s[r].steps[q].lane == red->lane;
           q++)
        if ((int)s[r].steps[q].phase == PLAN_PHASE_PIECE + (int)k)
          flags[s[r].steps[q].peer][s[r].steps[q].phase][r] = 1;
      continue;
    }
    const planStep *st = &s[r].steps[next[r][l]];
    if (st->kind == PLAN_STEP_JOIN && st->launched && pieceRed[r] >= 0 &&
        (size_t)piecesDone[r] * s[r].steps[pieceRed[r]].pieceBytes < s[r].steps[pieceRed[r]].bytes)
      launchedEarly++;
#define AT(loc)                                                                                    \
  ((loc).buf == PLAN_BUF_SEND    ? m.send[(loc).rank] + (loc).off                                  \
   : (loc).buf == PLAN_BUF_RECV  ? m.recv[(loc).rank] + (loc).off                                  \
   : (loc).buf == PLAN_BUF_STAGE ? m.stage[(loc).rank] + (loc).off                                 \
   : (loc).buf == PLAN_BUF_LINES ? m.lines[(loc).rank] + (loc).off                                 \
                                 : m.scratch[(loc).rank] + (loc).off)
    if (st->kind == PLAN_STEP_SIGNAL) {
      flags[st->peer][st->phase][r] = 1;
    } else if (st->kind == PLAN_STEP_NOTIFY) {
      /* the block rank peer sends here must hold its bytes already */
      planBlock b = ci->block(&a[st->peer], st->peer, r);
      if (b.bytes && memcmp(m.recv[r] + b.dstOff, WANT(r) + b.dstOff, b.bytes)) {
        if (notifyEarlyControl)
          printf("  control, %s: rank %d's NOTIFY of block %d before its bytes arrived\n",
                 planAlgoName(algo), r, st->peer);
        else
          TEST_FAIL("%s %s n=%d count=%zu: rank %d's NOTIFY of block %d before its bytes arrived",
                    ci->name, planAlgoName(algo), n, count, r, st->peer);
        rc = 1;
      }
      notified[r][st->peer]++;
      notifiesChecked++;
    } else if (st->kind == PLAN_STEP_COPY && st->dst.buf == PLAN_BUF_LINES) {
      planLoc q = st->dst;
      if (q.off > a[q.rank].lineBytes || a[q.rank].lineBytes - q.off < planLinesBytes(st->bytes)) {
        TEST_FAIL("%s %s: rank %d writes lines past rank %d's slot", ci->name, planAlgoName(algo),
                  r, q.rank);
        rc = 1;
        break;
      }
      putLines(AT(q), AT(st->src), st->bytes);
      linesUsed = 1;
    } else if (st->kind == PLAN_STEP_COPY) {
      unsigned char *dst = AT(st->dst), *src = AT(st->src);
      if ((dst < src + st->bytes && src < dst + st->bytes) && dst != src) {
        TEST_FAIL("%s %s: rank %d copies between overlapping ranges", ci->name, planAlgoName(algo),
                  r);
        rc = 1;
      }
      if (dst != src) memcpy(dst, src, st->bytes);
    } else if ((st->kind == PLAN_STEP_JOIN || st->kind == PLAN_STEP_WAIT) && st->inKernel &&
               st->phase >= PLAN_PHASE_PIECE) {
      /* piece k of the REDUCE in pieces after it may be reduced from now on
       * (push1: once the last of the piece's WAITs passed) */
      int R = next[r][l], more = R + 1;
      while (more < s[r].nsteps && s[r].steps[more].lane != l) more++;
      if (st->kind == PLAN_STEP_WAIT && more < s[r].nsteps &&
          s[r].steps[more].kind == PLAN_STEP_WAIT && s[r].steps[more].inKernel &&
          s[r].steps[more].phase == st->phase) {
        next[r][l] = more;
        continue;
      }
      while (R < s[r].nsteps && (s[r].steps[R].lane != l || s[r].steps[R].kind != PLAN_STEP_REDUCE))
        R++;
      if (R == s[r].nsteps || !s[r].steps[R].pieceBytes || (pieceRed[r] >= 0 && pieceRed[r] != R) ||
          planPhaseGroup(st->phase) != piecesReady[r]) {
        TEST_FAIL("%s %s: rank %d's polled JOIN of piece %d has no REDUCE in pieces after it, "
                  "or comes out of order",
                  ci->name, planAlgoName(algo), r, planPhaseGroup(st->phase));
        rc = 1;
        break;
      }
      pieceRed[r] = R;
      piecesReady[r]++;
    } else if (st->kind == PLAN_STEP_REDUCE && st->pieceBytes) {
      /* reduced piece by piece (above): the kernel's end */
      pieceRed[r] = -1, piecesReady[r] = piecesDone[r] = 0;
    } else if (st->kind == PLAN_STEP_REDUCE) {
      unsigned char *dst = AT(st->dst), *src[MAXR];
      for (int k = 0; k < st->nsrc; k++) {
        planLoc q = s[r].srcs[st->src0 + k];
        src[k] = AT(q);
        if (q.buf == PLAN_BUF_LINES) {
          unsigned char *t = malloc(st->bytes + 1);
          takeLines(t, src[k], st->bytes);
          src[k] = t;
        }
      }
      for (size_t i = 0; i < st->bytes; i++) {
        unsigned char sum = 0;
        for (int k = 0; k < st->nsrc; k++) sum = (unsigned char)(sum + src[k][i]);
        dst[i] = sum;
      }
      for (int k = 0; k < st->nsrc; k++)
        if (s[r].srcs[st->src0 + k].buf == PLAN_BUF_LINES) free(src[k]);
    }
#undef AT
    int i = next[r][l] + 1;
    while (i < s[r].nsteps && s[r].steps[i].lane != l) i++;
    next[r][l] = i;
  }
  for (int r = 0; r < n && !rc; r++) {
    size_t span = (size_t)(m.recv[r] - m.base[r]) + m.recvB[r] + GUARD;
    if (a[r].inPlace) {
      long long d;
      ci->inPlace(&a[r], r, &d);
      size_t end = (size_t)((m.send[r] - m.base[r]) + (long long)m.sendB[r]) + GUARD;
      if (end > span) span = end;
    }
    for (size_t i = 0; i < span && !rc; i++)
      if (m.base[r][i] != want[r][i]) {
        TEST_FAIL("%s %s n=%d count=%zu root=%d inPlace=%d seed=%u: rank %d byte %ld of its "
                  "receive buffer is %d, expected %d",
                  ci->name, planAlgoName(algo), n, count, root, a[r].inPlace, seed, r,
                  (long)(i - (size_t)(m.recv[r] - m.base[r])), m.base[r][i], want[r][i]);
        rc = 1;
      }
    if (!a[r].inPlace && memcmp(m.send[r], snap[r], m.sendB[r])) {
      TEST_FAIL("%s %s: rank %d's send buffer was written", ci->name, planAlgoName(algo), r);
      rc = 1;
    }
  }
#undef WANT
  /* one NOTIFY per block of every rank that asked for them */
  for (int r = 0; r < n && !rc; r++)
    for (int p = 0; p < n && a[r].notify && !rc; p++)
      if (notified[r][p] != 1) {
        TEST_FAIL("%s %s n=%d count=%zu: rank %d notified block %d %d times", ci->name,
                  planAlgoName(algo), n, count, r, p, notified[r][p]);
        rc = 1;
      }
  /* Every line read is 0 again: the next operation's flags are its own. */
  for (int r = 0; r < n && !rc; r++)
    for (size_t i = 0; i < a[r].lineBytes && !rc; i++)
      if (m.lines[r][i]) {
        TEST_FAIL("%s %s n=%d count=%zu: rank %d's line slot byte %zu is %d after the operation",
                  ci->name, planAlgoName(algo), n, count, r, i, m.lines[r][i]);
        rc = 1;
      }
  /* stagell takes the line form where every rank reduces something and
   * each rank's n - 1 places of lines (one per peer) fit its slot; a
   * movement collective where the lines of every block to a peer fit that
   * peer's share of the slot, lineBytes / (n - 1) rounded down to 16 (an
   * empty block is a token line: staged.c; AlltoAllv, whose size is what
   * a rank sends, at any size, then a push that meets every peer) */
  int expectLines = algo == PLAN_ALGO_STAGELL && n > 1 && (ci->size(&a[0]) > 0 || ci->peerArrays);
  for (int t = 0; t < n && expectLines && ci->reduces; t++) {
    size_t b = ci->target(&a[t], t, 1).bytes;
    expectLines = b && (size_t)(n - 1) * planLinesBytes(b) <= a[t].lineBytes;
  }
  if (!ci->reduces && n > PLAN_SM_MAX_PEERS) expectLines = 0;
  for (int f = 0; f < n && expectLines && ci->peerArrays; f++) /* AlltoAllv: 1 MB blocks at most */
    for (int t = 0; t < n && expectLines; t++)
      expectLines = f == t || ci->block(&a[f], f, t).bytes <= ((size_t)1 << 20);
  for (int f = 0; f < n && expectLines && !ci->reduces; f++)
    for (int t = 0; t < n && expectLines; t++) {
      size_t b = ci->block(&a[f], f, t).bytes;
      expectLines = f == t || planLinesBytes(b) <= a[f].lineBytes / (size_t)(n - 1) / 16 * 16;
    }
  if (!rc && linesUsed != expectLines) {
    TEST_FAIL("%s stagell n=%d count=%zu lineBytes %zu: lines %s", ci->name, n, count,
              a[0].lineBytes, linesUsed ? "used" : "not used");
    rc = 1;
  }
  for (int r = 0; r < n; r++) {
    planScheduleFree(&s[r]);
    free(m.base[r]), free(m.stage[r]), free(m.scratch[r]), free(snap[r]), free(want[r]);
    free(m.lines[r]);
  }
  return rc;
}

/*
 * Staged operations in CUDA graphs (staged.c, docs/architecture.md
 * "Graphs"), simulated: flags hold fixed values (SIGNAL stores 1; WAIT
 * waits for 1, then, as a separate step another rank may run before, resets
 * to 0), graphs of 1-4 operations (staged AllGather/AlltoAll numbered from 1
 * in their graph, slot = number % 2, ENTRY on the first; push1 AllGather
 * between them on the graph's ENTRY/EXIT words) replayed in a random order,
 * the same on every rank, the ranks interleaved at random. Checks: no
 * deadlock; no signal lands on a word still set (it would be lost); no copy
 * lands in a slot whose owner has not copied out what it holds, or in a
 * receive buffer its owner's stream has not reached; every receive byte
 * right. Two controls must fail: no ENTRY on the first staged operation, and
 * one DATA word for both slots.
 */
#define GR_MAXR 4
#define GR_GRAPHS 3
#define GR_OPS 4
#define GR_REPLAYS 10
#define GR_INST (GR_REPLAYS * GR_OPS)
enum { GW_ENTRY = 0, GW_EXIT, GW_DATA0, GW_DATA1, GW_WORDS };
typedef struct {
  int n, variant; /* 0: as built; 1: no ENTRY; 2: one DATA word */
  uint32_t seed;
} graphCase;

static int runGraphCase(const graphCase *c, int quiet) {
  int n = c->n, rc = 0;
  const size_t blk = 5, slotBytes = (size_t)n * blk;
  uint32_t rnd = c->seed | 1;
  /* The graphs: per op a collective, its algorithm and its staged number. */
  int gops[GR_GRAPHS], gcoll[GR_GRAPHS][GR_OPS], galgo[GR_GRAPHS][GR_OPS], gnum[GR_GRAPHS][GR_OPS];
  for (int g = 0; g < GR_GRAPHS; g++) {
    gops[g] = 1 + (int)(stageRand(&rnd) % GR_OPS);
    for (int k = 0, num = 0; k < gops[g]; k++) {
      uint32_t x = stageRand(&rnd) % 5;
      gcoll[g][k] = x == 1 ? PLAN_COLL_ALLTOALL : PLAN_COLL_ALLGATHER;
      galgo[g][k] = x == 4 ? PLAN_ALGO_PUSH1 : x == 3 ? PLAN_ALGO_STAGE2D : PLAN_ALGO_STAGE;
      gnum[g][k] = galgo[g][k] == PLAN_ALGO_PUSH1 ? 0 : ++num;
    }
  }
  /* The instances every rank runs, in order. */
  int ninst = 0, icoll[GR_INST], ialgo[GR_INST], inum[GR_INST];
  for (int rp = 0; rp < GR_REPLAYS; rp++) {
    int g = (int)(stageRand(&rnd) % GR_GRAPHS);
    for (int k = 0; k < gops[g]; k++, ninst++)
      icoll[ninst] = gcoll[g][k], ialgo[ninst] = galgo[g][k], inum[ninst] = gnum[g][k];
  }
  static unsigned char send[GR_MAXR][GR_INST][GR_MAXR * 5], recv[GR_MAXR][GR_INST][GR_MAXR * 5];
  static unsigned char stage[GR_MAXR][2][GR_MAXR * 5];
  int owed[GR_MAXR][2]; /* instance + 1 whose data sits unread in [rank][slot] */
  uint8_t w[GR_MAXR][GW_WORDS][GR_MAXR];
  int cur[GR_MAXR], pc[GR_MAXR], reset[GR_MAXR]; /* reset: word index + 1 waiting to be reset */
  planSchedule sch[GR_MAXR];
  memset(sch, 0, sizeof(sch));
  memset(owed, 0, sizeof(owed));
  memset(w, 0, sizeof(w));
  memset(recv, 0xDD, sizeof(recv));
  for (int r = 0; r < n; r++)
    for (int i = 0; i < ninst; i++)
      testFillRandom(send[r][i], sizeof(send[r][i]), c->seed * 7919u + (unsigned)(i * 31 + r));
  for (int r = 0; r < n; r++) cur[r] = -1, pc[r] = 0, reset[r] = 0;
  for (;;) {
    int runnable[GR_MAXR], nr = 0, left = 0;
    for (int r = 0; r < n; r++) {
      if (cur[r] >= ninst) continue;
      left++;
      if (!reset[r] && cur[r] >= 0 && pc[r] < sch[r].nsteps) {
        const planStep *st = &sch[r].steps[pc[r]];
        if (st->kind == PLAN_STEP_WAIT) {
          int word = st->phase == PLAN_PHASE_DATA
                         ? (c->variant != 2 && sch[r].stageIndex % 2 ? GW_DATA1 : GW_DATA0)
                         : (int)st->phase;
          if (!w[r][word][st->peer]) continue;
        }
      }
      runnable[nr++] = r;
    }
    if (!left) break;
    if (!nr) {
      if (!quiet) TEST_FAIL("graph case n=%d seed=%u: deadlock", n, c->seed);
      rc = 1;
      break;
    }
    int r = runnable[stageRand(&rnd) % (uint32_t)nr];
    if (reset[r]) { /* the reset that follows a wait */
      int word = (reset[r] - 1) / GR_MAXR, peer = (reset[r] - 1) % GR_MAXR;
      w[r][word][peer] = 0;
      reset[r] = 0;
      continue;
    }
    if (cur[r] < 0 || pc[r] == sch[r].nsteps) { /* instance done: check it, start the next */
      int i = cur[r];
      for (int f = 0; i >= 0 && f < n && !rc; f++) {
        const unsigned char *want =
            icoll[i] == PLAN_COLL_ALLGATHER ? send[f][i] : send[f][i] + (size_t)r * blk;
        long long d = testFirstDiff(recv[r][i] + (size_t)f * blk, want, blk);
        if (d >= 0) {
          if (!quiet)
            TEST_FAIL("graph case n=%d seed=%u: rank %d instance %d block %d wrong at byte %lld", n,
                      c->seed, r, i, f, d);
          rc = 1;
        }
      }
      if (rc) break;
      cur[r]++, pc[r] = 0;
      if (cur[r] < ninst) {
        i = cur[r];
        planArgs a = PA((planColl)icoll[i], r, n, blk, 0, 2, (unsigned long long)inum[i]);
        a.stageEntry = inum[i] == 1 && c->variant != 1;
        a.stageSelfLate = 1;
        if (planBuild(&a, (planAlgo)ialgo[i], &sch[r])) {
          TEST_FAIL("graph case: planBuild failed");
          rc = 1;
          break;
        }
      }
      continue;
    }
    int i = cur[r], slot = (int)(sch[r].stageIndex % 2);
    const planStep *st = &sch[r].steps[pc[r]++];
    int word = st->phase == PLAN_PHASE_DATA ? (c->variant != 2 && slot ? GW_DATA1 : GW_DATA0)
                                            : (int)st->phase;
    if (st->kind == PLAN_STEP_SIGNAL) {
      if (w[st->peer][word][r]) {
        if (!quiet)
          TEST_FAIL("graph case n=%d seed=%u: rank %d's signal (word %d) to rank %d lands on a "
                    "set word and is lost",
                    n, c->seed, r, word, st->peer);
        rc = 1;
        break;
      }
      w[st->peer][word][r] = 1;
      continue;
    }
    if (st->kind == PLAN_STEP_WAIT) {
      reset[r] = 1 + word * GR_MAXR + st->peer;
      continue;
    }
    if (st->kind != PLAN_STEP_COPY) {
      TEST_FAIL("graph case: unexpected step kind %d", st->kind);
      rc = 1;
      break;
    }
    unsigned char *p[2];
    const planLoc *loc[2] = {&st->src, &st->dst};
    for (int e = 0; e < 2; e++) {
      const planLoc *l = loc[e];
      p[e] = l->buf == PLAN_BUF_STAGE  ? stage[l->rank][slot] + l->off
             : l->buf == PLAN_BUF_SEND ? send[l->rank][i] + l->off
                                       : recv[l->rank][i] + l->off;
      if (l->off + st->bytes > slotBytes) rc = 1;
    }
    if (st->dst.buf == PLAN_BUF_RECV && st->dst.rank != r && cur[st->dst.rank] < i) {
      if (!quiet)
        TEST_FAIL("graph case n=%d seed=%u: rank %d writes rank %d's receive buffer of instance "
                  "%d before rank %d reached it",
                  n, c->seed, r, st->dst.rank, i, st->dst.rank);
      rc = 1;
    }
    if (st->dst.buf == PLAN_BUF_STAGE) {
      int *o = &owed[st->dst.rank][slot];
      if (*o && *o != i + 1) {
        if (!quiet)
          TEST_FAIL("graph case n=%d seed=%u: rank %d overwrites rank %d's slot %d (instance %d) "
                    "with instance %d",
                    n, c->seed, r, st->dst.rank, slot, *o - 1, i);
        rc = 1;
      }
      *o = i + 1;
    }
    if (rc) break;
    memmove(p[1], p[0], st->bytes);
    if (loc[0]->buf == PLAN_BUF_STAGE) owed[r][slot] = 0;
  }
  for (int r = 0; r < n; r++) planScheduleFree(&sch[r]);
  return rc;
}

static int testGraphStagedProtocol(void) {
  int runs = 0;
  for (int n = 2; n <= GR_MAXR; n++)
    for (uint32_t seed = 1; seed <= 400; seed++) {
      graphCase c = {n, 0, seed * 2654435761u + (uint32_t)n};
      if (runGraphCase(&c, 0)) return 1;
      runs++;
    }
  /* Controls: each broken protocol is caught by some seed. */
  for (int variant = 1; variant <= 2; variant++) {
    int caught = 0;
    for (uint32_t seed = 1; seed <= 400 && !caught; seed++) {
      graphCase c = {2, variant, seed * 2654435761u + 2u};
      caught = runGraphCase(&c, 1);
    }
    if (!caught) {
      TEST_FAIL("graph control %d (%s) was never caught", variant,
                variant == 1 ? "no ENTRY" : "one DATA word");
      return 1;
    }
  }
  printf("  %d graph replay sequences checked, both controls caught\n", runs);
  return 0;
}

/* One simulated run of one operation, ops[r] being rank r's schedule:
 * 0 when every step ran, 1 on a deadlock. */
static int simOnce(planSchedule *const *ops, int n, simMode mode, int nq, uint32_t seed) {
  simCase sc = {n, 1, {{0}}, mode, nq, seed, 0, -1, 0};
  for (int r = 0; r < n; r++) sc.s[r][0] = ops[r];
  char why[256];
  return simulate(&sc, why, sizeof(why));
}

/* How many of 400 random dependency orders (a graph launch, a queue per
 * rank) deadlock one operation. */
static int topoDeadlocks(planSchedule *const *ops, int n) {
  int deadlocks = 0;
  for (uint32_t sd = 1; sd <= 400; sd++)
    deadlocks += simOnce(ops, n, SIM_TOPO_PER_RANK, 1, sd * 2654435761u) == 1;
  return deadlocks;
}

/* A control: planCheck refuses the schedules saying `want`, and some
 * dependency order deadlocks them. */
static int refusedAndDeadlocks(planSchedule *s, planSchedule *const *ops, int n, const char *want,
                               const char *what) {
  char why[256];
  ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
  ASSERT_CONTAINS(why, want);
  int deadlocks = topoDeadlocks(ops, n);
  printf("  control, %s: %s; %d of 400 dependency orders deadlock\n", what, why, deadlocks);
  ASSERT_TRUE(deadlocks > 0);
  return 0;
}

/*
 * Staged reductions whose kernel polls the DATA flags (kernelWait): the
 * waits and the REDUCE on lane 1, forked at the start; where the REDUCE
 * overwrites what the copies read (in-place AllReduce), a polled JOIN from
 * lane 0 after the DATA signals (the byte-for-byte replays in random step
 * orders check the data). Controls:
 * the same schedules with the waits left in their queues fail planCheck's
 * rule 2 and deadlock in some dependency order of the simulated queues; as
 * built, no order deadlocks.
 */
static int testKernelWait(void) {
  static planSchedule s[4][1];
  memset(s, 0, sizeof(s));
  char why[256];
  int orders = 0, caught = 0;
  const planColl colls[] = {PLAN_COLL_ALLREDUCE, PLAN_COLL_REDUCESCATTER};
  for (int c = 0; c < 2; c++)
    for (int n = 2; n <= 4; n++)
      for (int inPlace = 0; inPlace <= 1; inPlace++) {
        planSchedule *ops[4];
        planSchedule flat[4];
        for (int r = 0; r < n; r++) {
          planArgs a = PA(colls[c], r, n, 64, inPlace, 2, 1);
          a.kernelWait = 1;
          ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGE, &s[r][0]), 0);
          const planSchedule *sc = &s[r][0];
          int late = colls[c] == PLAN_COLL_ALLREDUCE && inPlace, lastSignal = -1, waits = 0;
          int polledJoin = -1;
          for (int i = 0; i < sc->nsteps; i++) {
            const planStep *st = &sc->steps[i];
            if (st->kind == PLAN_STEP_SIGNAL) lastSignal = i;
            if (st->kind == PLAN_STEP_JOIN && st->inKernel) {
              ASSERT_EQ_INT(st->lane, 1);
              ASSERT_EQ_INT(st->from, 0);
              polledJoin = i;
            }
            if (st->kind == PLAN_STEP_WAIT) {
              ASSERT_EQ_INT(st->lane, 1);
              ASSERT_EQ_INT(st->inKernel, 1);
              waits++;
            }
            if (st->kind == PLAN_STEP_REDUCE) ASSERT_EQ_INT(st->lane, 1);
          }
          ASSERT_EQ_INT(waits, n - 1);
          ASSERT_EQ_INT(sc->nlanes, 2);
          const planStep *fork = NULL;
          int forkAt = -1;
          for (int i = 0; i < sc->nsteps && !fork; i++)
            if (sc->steps[i].kind == PLAN_STEP_JOIN && sc->steps[i].lane == 1)
              fork = &sc->steps[i], forkAt = i;
          ASSERT_TRUE(fork != NULL);
          ASSERT_EQ_INT(forkAt, 0);
          ASSERT_EQ_INT(polledJoin, late ? lastSignal + 1 : -1);
          const planStep *end = &sc->steps[sc->nsteps - 1];
          ASSERT_TRUE(end->kind == PLAN_STEP_JOIN && end->lane == 0 && end->from == 1);
          flat[r] = *sc;
          ops[r] = &s[r][0];
        }
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), 0);
        for (int ctl = 0; ctl <= 1; ctl++) {
          for (uint32_t seed = 1; seed <= 40; seed++) {
            int d = simOnce(ops, n, SIM_TOPO_PER_RANK, 1, seed * 2654435761u + (uint32_t)n);
            ASSERT_TRUE(d >= 0);
            if (!ctl) ASSERT_EQ_INT(d, 0);
            caught += ctl && d == 1;
            orders++;
          }
          if (ctl) continue;
          /* The control: the waits as stream waits. */
          for (int r = 0; r < n; r++)
            for (int i = 0; i < s[r][0].nsteps; i++) s[r][0].steps[i].inKernel = 0;
          /* (In-place AllReduce's waits follow the JOIN after the signals.) */
          int lateJoin = colls[c] == PLAN_COLL_ALLREDUCE && inPlace;
          ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), lateJoin ? 0 : -1);
          if (!lateJoin) ASSERT_TRUE(strstr(why, "could deadlock") != NULL);
        }
      }
  ASSERT_TRUE(caught > 0);
  printf("  %d dependency orders simulated; with the waits in queues %d deadlocked\n", orders,
         caught);
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r][0]);
  return 0;
}

/* Runs ops (rank r's schedule ops[r]) in `seeds` random dependency orders
 * per simulated mode; returns the deadlocks, or -1 when one is an error, or
 * a deadlock where `control` is 0 (said). */
static int simOrders(planSchedule *const *ops, int n, int seeds, int control, int *orders) {
  int deadlocks = 0;
  for (uint32_t seed = 1; seed <= (uint32_t)seeds; seed++)
    for (int mode = SIM_TOPO_PER_RANK; mode <= SIM_ROUNDS_SHARED; mode++) {
      int d = simOnce(ops, n, (simMode)mode, 1 + (int)(seed % 3), seed * 2654435761u + (uint32_t)n);
      if (d < 0 || (d && !control)) {
        TEST_FAIL("n=%d mode %d seed %u: %s", n, mode, seed, d < 0 ? "error" : "deadlock");
        return -1;
      }
      deadlocks += d;
      (*orders)++;
    }
  return deadlocks;
}

/* A control: the first k kernel SIGNALs of `phase` (-1: any) and the first
 * k kernel WAITs swap places (rounds left as they were): the kernel polls
 * before it signals. */
static void pollFirst(planSchedule *sc, int phase, int k) {
  int fs = -1, fw = -1;
  for (int i = 0; i < sc->nsteps; i++) {
    const planStep *st = &sc->steps[i];
    if (!st->inKernel || (phase >= 0 && (int)st->phase != phase)) continue;
    if (st->kind == PLAN_STEP_SIGNAL && fs < 0) fs = i;
    if (st->kind == PLAN_STEP_WAIT && fw < 0) fw = i;
  }
  if (fs < 0 || fw < 0) return;
  for (int i = 0; i < k; i++) {
    planStep t = sc->steps[fs + i];
    sc->steps[fs + i] = sc->steps[fw + i];
    sc->steps[fw + i] = t;
  }
}

/*
 * stagesm: on a rank that reduces, the peer copies, the DATA signals and
 * the DATA waits are inKernel on lane 0, in that order, right before the
 * REDUCE (with stageEntry, the ENTRY handshake before them stays in the
 * queues); a rank with nothing to reduce (Reduce's non-roots) runs stage's
 * steps. planCheck takes them; the simulated queues run them in every
 * dependency order tried and with lanes on shared queues. Control: the
 * same kernels with their waits moved before their signals deadlock.
 */
static int testStageSm(void) {
  static planSchedule s[4][1];
  memset(s, 0, sizeof(s));
  char why[256];
  int orders = 0, caught = 0;
  const planColl colls[] = {PLAN_COLL_ALLREDUCE, PLAN_COLL_REDUCESCATTER, PLAN_COLL_REDUCE};
  for (int c = 0; c < 3; c++)
    for (int n = 2; n <= 4; n++)
      for (int v = 0; v < 4; v++) { /* in place, stageEntry */
        int inPlace = v & 1, entry = v >> 1;
        planSchedule *ops[4];
        planSchedule flat[4];
        for (int r = 0; r < n; r++) {
          planArgs a = PA(colls[c], r, n, 64, inPlace, 2, 1);
          a.stageEntry = entry;
          a.kernelWait = r & 1; /* ignored by stagesm */
          ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGESM, &s[r][0]), 0);
          const planSchedule *sc = &s[r][0];
          int reduces = colls[c] != PLAN_COLL_REDUCE || r == 0;
          ASSERT_EQ_INT(sc->nlanes, 1);
          int copies = 0, signals = 0, waits = 0, last = -1;
          for (int i = 0; i < sc->nsteps; i++) {
            const planStep *st = &sc->steps[i];
            int data = st->kind == PLAN_STEP_COPY ||
                       ((st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) &&
                        st->phase == PLAN_PHASE_DATA);
            ASSERT_EQ_INT(st->inKernel, data && reduces);
            if (!data) continue;
            /* kernel order: copies, then signals, then waits */
            int rank = st->kind == PLAN_STEP_COPY ? 0 : st->kind == PLAN_STEP_SIGNAL ? 1 : 2;
            ASSERT_TRUE(rank >= last);
            last = rank;
            copies += st->kind == PLAN_STEP_COPY;
            signals += st->kind == PLAN_STEP_SIGNAL;
            waits += st->kind == PLAN_STEP_WAIT;
          }
          ASSERT_EQ_INT(signals, n - 1);
          ASSERT_EQ_INT(waits, n - 1);
          ASSERT_EQ_INT(copies, colls[c] != PLAN_COLL_REDUCE ? n - 1 : r != 0); /* root 0 */
          if (reduces) ASSERT_EQ_INT(sc->steps[sc->nsteps - 1].kind, PLAN_STEP_REDUCE);
          flat[r] = *sc;
          ops[r] = &s[r][0];
        }
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), 0);
        /* planCheck's controls: an ENTRY signal the kernel would do, and a
         * kernel step not next to the rest of its kernel. */
        if (entry) {
          planStep *e = &s[0][0].steps[0];
          ASSERT_TRUE(e->kind == PLAN_STEP_SIGNAL && e->phase == PLAN_PHASE_ENTRY);
          e->inKernel = 1;
          ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), -1);
          ASSERT_CONTAINS(why, "inKernel");
          e->inKernel = 0;
          int last = flat[0].nsteps - 1; /* the REDUCE: its kernel's last step before it */
          planStep moved = flat[0].steps[last - 1];
          flat[0].steps[last - 1] = flat[0].steps[0];
          ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), -1);
          flat[0].steps[0] = flat[0].steps[last - 1], flat[0].steps[last - 1] = moved;
          ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), 0);
        }
        for (int ctl = 0; ctl <= 1; ctl++) {
          int d = simOrders(ops, n, 20, ctl, &orders);
          if (d < 0) return 1;
          caught += d;
          /* The control: every kernel polls before it signals. */
          for (int r = 0; r < n && !ctl; r++) pollFirst(&s[r][0], -1, n - 1);
        }
      }
  ASSERT_TRUE(caught > 0);
  printf("  %d dependency orders simulated; with the waits before the signals %d deadlocked\n",
         orders, caught);
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r][0]);
  return 0;
}

/*
 * stagesm's movement form (staged.c, addSmMove): one kernel per rank on lane
 * 0 and no copy engine: the copies of the rank's blocks into the peers'
 * staging slots (every peer it sends to) and of its own block into place
 * (out of place), DATA to every peer, DATA from every peer, all inKernel in
 * that order, then the REDUCEs of one source that take each peer's block
 * out of the rank's own slot into its place; a rank that receives nothing
 * ends its kernel with one empty REDUCE (the executor needs one). With
 * stageEntry the ENTRY handshake comes first, in the queues. planCheck
 * takes them; the simulated queues run them in every dependency order
 * tried. Control: every kernel polls before it signals: deadlock.
 */
static int testStageSmMove(void) {
  static planSchedule s[4][1];
  memset(s, 0, sizeof(s));
  char why[256];
  int orders = 0, caught = 0;
  const planColl colls[] = {PLAN_COLL_ALLGATHER, PLAN_COLL_ALLTOALL, PLAN_COLL_BROADCAST,
                            PLAN_COLL_GATHER, PLAN_COLL_SCATTER};
  for (int c = 0; c < 5; c++)
    for (int n = 2; n <= 4; n++)
      for (int v = 0; v < 4; v++) { /* in place, stageEntry */
        int inPlace = v & 1, entry = v >> 1;
        const planCollInfo *ci = planCollOf(colls[c]);
        planSchedule *ops[4];
        planSchedule flat[4];
        for (int r = 0; r < n; r++) {
          planArgs a = PA(colls[c], r, n, 64, inPlace, 2, 1);
          a.stageEntry = entry;
          ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGESM, &s[r][0]), 0);
          const planSchedule *sc = &s[r][0];
          ASSERT_EQ_INT(sc->nlanes, 1);
          int sends = 0, gets = 0, self = 0;
          for (int p = 0; p < n; p++) {
            sends += p != r && ci->block(&a, r, p).bytes > 0;
            gets += p != r && ci->block(&a, p, r).bytes > 0;
          }
          self = !inPlace && ci->block(&a, r, r).bytes > 0;
          int copies = 0, own = 0, signals = 0, waits = 0, reduces = 0, empty = 0, last = -1;
          for (int i = 0; i < sc->nsteps; i++) {
            const planStep *st = &sc->steps[i];
            if (st->phase == PLAN_PHASE_ENTRY && st->kind != PLAN_STEP_COPY &&
                st->kind != PLAN_STEP_REDUCE) {
              ASSERT_TRUE(entry && !st->inKernel && last < 0);
              continue;
            }
            /* kernel order: copies, signals, waits, then the REDUCEs */
            int at = st->kind == PLAN_STEP_COPY     ? 0
                     : st->kind == PLAN_STEP_SIGNAL ? 1
                     : st->kind == PLAN_STEP_WAIT   ? 2
                                                    : 3;
            ASSERT_TRUE(at >= last);
            last = at;
            ASSERT_EQ_INT(st->inKernel, at < 3);
            if (st->kind == PLAN_STEP_COPY) {
              int mine = st->dst.rank == r;
              ASSERT_EQ_INT(st->dst.buf, mine ? PLAN_BUF_RECV : PLAN_BUF_STAGE);
              copies += !mine, own += mine;
            } else if (st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) {
              ASSERT_EQ_INT(st->phase, PLAN_PHASE_DATA);
              signals += st->kind == PLAN_STEP_SIGNAL, waits += st->kind == PLAN_STEP_WAIT;
            } else {
              ASSERT_EQ_INT(st->kind, PLAN_STEP_REDUCE);
              ASSERT_EQ_INT(st->nsrc, 1);
              reduces++;
              empty += st->bytes == 0;
              if (st->bytes) ASSERT_EQ_INT(sc->srcs[st->src0].buf, PLAN_BUF_STAGE);
            }
          }
          ASSERT_EQ_INT(copies, sends);
          ASSERT_EQ_INT(own, self);
          ASSERT_EQ_INT(signals, n - 1);
          ASSERT_EQ_INT(waits, n - 1);
          ASSERT_EQ_INT(reduces, gets ? gets : 1);
          ASSERT_EQ_INT(empty, !gets);
          flat[r] = *sc;
          ops[r] = &s[r][0];
        }
        if (planCheck(flat, n, why, sizeof(why))) {
          TEST_FAIL("%s stagesm n=%d inPlace=%d entry=%d: %s", ci->name, n, inPlace, entry, why);
          return 1;
        }
        for (int ctl = 0; ctl <= 1; ctl++) {
          int d = simOrders(ops, n, 20, ctl, &orders);
          if (d < 0) return 1;
          caught += d;
          for (int r = 0; r < n && !ctl; r++) pollFirst(&s[r][0], -1, n - 1);
        }
      }
  ASSERT_TRUE(caught > 0);
  printf("  %d dependency orders simulated; with the waits before the signals %d deadlocked\n",
         orders, caught);
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r][0]);
  return 0;
}

/* stagesm's movement form on the most ranks a kernel serves: n - 1 stores
 * and the own block's copy are at most EXEC_REDUCE_MAX_MOVES (15) moves of
 * one kernel, so 15 ranks take it and 16 run stage's schedule (a kernel run
 * of 16 moves is refused by the CUDA executor). */
static int testStageSmMoveRanks(void) {
  static planSchedule s[PLAN_SM_MAX_PEERS + 1];
  const planColl colls[] = {PLAN_COLL_ALLGATHER, PLAN_COLL_ALLTOALL, PLAN_COLL_SCATTER};
  for (int c = 0; c < 3; c++)
    for (int n = PLAN_SM_MAX_PEERS; n <= PLAN_SM_MAX_PEERS + 1; n++) {
      for (int r = 0; r < n; r++) {
        planArgs a = PA(colls[c], r, n, 64, 0, 2, 1);
        memset(&s[r], 0, sizeof(s[r]));
        ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGESM, &s[r]), 0);
        int moves = 0, kernel = 0;
        for (int i = 0; i < s[r].nsteps; i++) {
          moves += s[r].steps[i].kind == PLAN_STEP_COPY && s[r].steps[i].inKernel;
          kernel |= s[r].steps[i].inKernel;
        }
        ASSERT_TRUE(moves <= PLAN_SM_MAX_PEERS);
        ASSERT_EQ_INT(kernel, n <= PLAN_SM_MAX_PEERS);
      }
      char why[256];
      if (planCheck(s, n, why, sizeof(why))) {
        TEST_FAIL("%s stagesm on %d ranks: %s", planCollName(colls[c]), n, why);
        return 1;
      }
      for (int r = 0; r < n; r++) planScheduleFree(&s[r]);
    }
  return 0;
}

/*
 * stagell: where every rank reduces and the lines fit its slot, each rank's
 * kernel (lane 0: inKernel copies, then the REDUCE) writes lines into every
 * peer's line slot, and its REDUCE reads every peer's lines from its own:
 * no DATA step at all (a line is its own signal). The simulated queues run
 * it in every dependency order tried. Where the lines do not fit, or a rank
 * reduces nothing (Reduce's non-roots), it is stagesm's schedule.
 * planCheck's controls: lines written where no REDUCE reads them, a copy
 * into lines outside a kernel, a line source nobody writes, and a REDUCE
 * that reads lines from a peer it sends none (the peer could not know when
 * its slot is free).
 */
static int testStageLl(void) {
  static planSchedule s[4];
  memset(s, 0, sizeof(s));
  char why[256];
  int orders = 0, controls = 0;
  const planColl colls[] = {PLAN_COLL_ALLREDUCE, PLAN_COLL_REDUCESCATTER, PLAN_COLL_REDUCE};
  for (int c = 0; c < 3; c++)
    for (int n = 2; n <= 4; n++)
      for (int v = 0; v < 12; v++) { /* in place, stageEntry, slot size */
        int inPlace = v & 1, entry = (v >> 1) & 1, slot = v >> 2;
        /* slot 1: 16 bytes short of the n - 1 places of 128 bytes of
         * lines (one per peer); 2: exactly those (the line form fits) */
        size_t lb = slot == 1   ? 128 * (size_t)(n - 1) - 16
                    : slot == 2 ? 128 * (size_t)(n - 1)
                                : (size_t)1 << 20;
        int lines = colls[c] != PLAN_COLL_REDUCE && slot != 1;
        planSchedule *ops[4];
        for (int r = 0; r < n; r++) {
          planArgs a = PA(colls[c], r, n, 64, inPlace, 2, 1);
          a.stageEntry = entry;
          a.lineBytes = lb;
          ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGELL, &s[r]), 0);
          const planSchedule *sc = &s[r];
          int data = 0, lineCopies = 0, lineSrcs = 0;
          for (int i = 0; i < sc->nsteps; i++) {
            const planStep *st = &sc->steps[i];
            data += (st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) &&
                    st->phase == PLAN_PHASE_DATA;
            if (st->kind == PLAN_STEP_COPY && st->dst.buf == PLAN_BUF_LINES) {
              ASSERT_TRUE(st->inKernel && st->lane == 0 && st->dst.rank != r);
              lineCopies++;
            }
            for (int k = 0; st->kind == PLAN_STEP_REDUCE && k < st->nsrc; k++)
              lineSrcs += sc->srcs[st->src0 + k].buf == PLAN_BUF_LINES;
          }
          ASSERT_EQ_INT(data, lines ? 0 : 2 * (n - 1));
          ASSERT_EQ_INT(lineCopies, lines ? n - 1 : 0);
          ASSERT_EQ_INT(lineSrcs, lines ? n - 1 : 0);
          if (lines) ASSERT_EQ_INT(sc->steps[sc->nsteps - 1].kind, PLAN_STEP_REDUCE);
          ops[r] = &s[r];
        }
        planSchedule flat[4];
        for (int r = 0; r < n; r++) flat[r] = s[r];
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), 0);
        if (!lines) continue;
        for (uint32_t seed = 1; seed <= 10; seed++)
          for (int mode = SIM_LIST_PER_RANK; mode <= SIM_ROUNDS_SHARED; mode++) {
            ASSERT_EQ_INT(simOnce(ops, n, (simMode)mode, 1 + (int)(seed % 3), seed * 2654435761u),
                          0);
            orders++;
          }
        if (inPlace || entry || slot) continue; /* the controls: 1 MB slots */
        int i = 0;
        while (flat[0].steps[i].kind != PLAN_STEP_COPY) i++;
        planStep *cp = &flat[0].steps[i], keep = *cp;
        cp->dst.off += 16;
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "not read by one REDUCE");
        *cp = keep, cp->inKernel = 0;
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "must be a kernel's");
        *cp = keep, cp->dst.buf = PLAN_BUF_STAGE;
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), -1); /* a source nobody writes */
        ASSERT_CONTAINS(why, "lines");
        *cp = keep;
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), 0);
        /* rank 0's slot holds n - 1 places of 128 bytes of lines, one per
         * peer (its 1 MB holds them): a slot of exactly those passes, one
         * 16 bytes short is caught */
        size_t keepBytes = flat[0].lineBytes;
        flat[0].lineBytes = 128 * (size_t)(n - 1) - 16;
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "pass the end of rank 0's line slot");
        flat[0].lineBytes = 128 * (size_t)(n - 1);
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), 0);
        flat[0].lineBytes = keepBytes;
        controls += 4;
        /* Rank 1 sends rank 0 no lines (its copy and rank 0's source move
         * to the staging slot), but still reads rank 0's: only the flow
         * rule objects (every rank that uses lines sends every peer
         * some). */
        if (n != 2) continue;
        int j = 0;
        while (flat[1].steps[j].kind != PLAN_STEP_COPY) j++;
        planStep k1 = flat[1].steps[j];
        planLoc *src0 = NULL;
        for (int t = 0; t < flat[0].nsrcs; t++)
          if (flat[0].srcs[t].buf == PLAN_BUF_LINES) src0 = &flat[0].srcs[t];
        ASSERT_TRUE(src0 != NULL);
        planLoc k0 = *src0;
        flat[1].steps[j].dst = (planLoc){0, PLAN_BUF_STAGE, 0};
        *src0 = (planLoc){0, PLAN_BUF_STAGE, 0};
        ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "rank 1 uses line slots but sends rank 0 no lines");
        flat[1].steps[j] = k1, *src0 = k0;
        controls++;
      }
  printf("  %d dependency orders simulated, %d planCheck controls caught\n", orders, controls);
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r]);
  return 0;
}

/* stagell's movement form on many ranks: n - 1 line stores and the own
 * block's copy are one kernel's moves (at most PLAN_SM_MAX_PEERS), so 15
 * ranks take the line form and 16 stage's; planCheck passes either way
 * (a 16-rank line form out of place had 16 moves). */
static int testLinesMoveRanks(void) {
  static planSchedule s[PLAN_SM_MAX_PEERS + 1];
  const planColl colls[] = {PLAN_COLL_ALLGATHER, PLAN_COLL_ALLTOALL};
  for (int ci = 0; ci < 2; ci++)
    for (int n = PLAN_SM_MAX_PEERS; n <= PLAN_SM_MAX_PEERS + 1; n++) {
      int lines = 0;
      for (int r = 0; r < n; r++) {
        planArgs a = PA(colls[ci], r, n, 64, 0, 2, 1);
        a.lineBytes = (size_t)2 << 20;
        memset(&s[r], 0, sizeof(s[r]));
        ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGELL, &s[r]), 0);
        for (int i = 0; i < s[r].nsteps; i++)
          lines |= s[r].steps[i].kind == PLAN_STEP_COPY && s[r].steps[i].dst.buf == PLAN_BUF_LINES;
      }
      char why[256];
      if (planCheck(s, n, why, sizeof(why))) {
        TEST_FAIL("%s stagell on %d ranks: %s", planCollName(colls[ci]), n, why);
        return 1;
      }
      ASSERT_EQ_INT(lines, n <= PLAN_SM_MAX_PEERS);
      for (int r = 0; r < n; r++) planScheduleFree(&s[r]);
    }
  return 0;
}

/* AlltoAllv's stagell (staged.c, buildPeerArrays): built from every rank's
 * arrays, so every rank takes one form, lines or the push form, by the
 * whole count matrix, not its own row; the push form meets every peer
 * (ENTRY and EXIT both ways, blocks or not); blocks over 1 MB never move
 * as lines, whatever the share. m[f][t]: bytes rank f sends rank t. */
static int v2vForm(int n, const size_t m[MAXR][MAXR], size_t lineBytes, int wantLines) {
  static vecStore v;
  static planSchedule s[MAXR];
  memset(&v, 0, sizeof(v));
  for (int r = 0; r < n; r++) {
    size_t *sc = v.vec[r], *sd = sc + n, *rc = sd + n, *rd = rc + n, off = 0, roff = 0;
    for (int t = 0; t < n; t++) sc[t] = m[r][t], sd[t] = off, off += m[r][t];
    for (int f = 0; f < n; f++) rc[f] = m[f][r], rd[f] = roff, roff += m[f][r];
    v.rows[r] = v.vec[r];
  }
  int rc = 0;
  for (int r = 0; r < n && !rc; r++) {
    planArgs a = anyArgs(PLAN_COLL_ALLTOALLV, r, n, 0, 0, 0, &v, 1 << 20);
    a.stageSlots = 2, a.stageIndex = 1, a.lineBytes = lineBytes;
    memset(&s[r], 0, sizeof(s[r]));
    ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_STAGELL, &s[r]), 0);
    int lines = 0, sync[4][MAXR];
    memset(sync, 0, sizeof(sync));
    for (int i = 0; i < s[r].nsteps; i++) {
      const planStep *st = &s[r].steps[i];
      lines |= st->kind == PLAN_STEP_COPY && st->dst.buf == PLAN_BUF_LINES;
      if ((st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) &&
          (st->phase == PLAN_PHASE_ENTRY || st->phase == PLAN_PHASE_EXIT))
        sync[(st->kind == PLAN_STEP_WAIT) * 2 + (st->phase == PLAN_PHASE_EXIT)][st->peer]++;
    }
    if (lines != wantLines) {
      TEST_FAIL("alltoallv stagell n=%d: rank %d %s lines", n, r,
                lines ? "moves" : "does not move");
      rc = 1;
    }
    for (int p = 0; p < n && !rc && !wantLines; p++)
      for (int k = 0; k < 4 && p != r; k++)
        if (sync[k][p] != 1) {
          TEST_FAIL("alltoallv stagell n=%d, the push form: rank %d has %d %s %s with rank %d", n,
                    r, sync[k][p], k & 2 ? "WAIT" : "SIGNAL", k & 1 ? "EXIT" : "ENTRY", p);
          rc = 1;
          break;
        }
  }
  char why[256];
  if (!rc && planCheck(s, n, why, sizeof(why))) {
    TEST_FAIL("alltoallv stagell n=%d: %s", n, why);
    rc = 1;
  }
  for (int r = 0; r < n; r++) planScheduleFree(&s[r]);
  return rc;
}

static int testAlltoallvForms(void) {
  static size_t m[MAXR][MAXR];
  const size_t share4 = 4096; /* lineBytes on 4 ranks: 3 shares of 1360 bytes, 680 of data */
  /* 4 ranks, sparse: ranks 0 and 1 see only a small block; 2 to 3 is over
   * its share, so every rank takes the push form, meeting every peer */
  memset(m, 0, sizeof(m));
  m[0][1] = 16, m[2][3] = 1000;
  ASSERT_EQ_INT(v2vForm(4, m, share4, 0), 0);
  m[2][3] = 600; /* every block fits: lines, tokens for the empty ones */
  ASSERT_EQ_INT(v2vForm(4, m, share4, 1), 0);
  /* 2 ranks with shares of 4 MB of lines (2 MB of data): 1 MB blocks move
   * as lines, one 1 MB + 1 block does not (PLAN_V_LINES_MAX) */
  memset(m, 0, sizeof(m));
  m[0][1] = m[1][0] = (size_t)1 << 20;
  ASSERT_EQ_INT(v2vForm(2, m, (size_t)4 << 20, 1), 0);
  m[1][0] = ((size_t)1 << 20) + 1;
  ASSERT_EQ_INT(v2vForm(2, m, (size_t)4 << 20, 0), 0);
  return 0;
}

static int testEveryCollective(void) {
  const size_t counts[] = {0, 1, 7, 1000, 3000};
  int runs = 0, rc = 0;
  uint32_t rnd = 12345;
  for (int c = 0; c < PLAN_NUM_COLLS && !rc; c++)
    for (int n = 1; n <= 5 && !rc; n++)
      for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]) && !rc; k++)
        for (int algo = 0; algo < PLAN_NUM_ALGOS && !rc; algo++) {
          if (!(planCollOf((planColl)c)->algos & PLAN_ALGO_BIT(algo))) continue;
          if (planIsComposed((planAlgo)algo)) { /* no schedule of its own: refused */
            vecStore v;
            makeVec((planColl)c, n, counts[k], &rnd, &v);
            planArgs pa = anyArgs((planColl)c, 0, n, counts[k], 0, 0, &v, (size_t)1 << 20);
            planSchedule ps;
            memset(&ps, 0, sizeof(ps));
            ASSERT_TRUE(planBuild(&pa, (planAlgo)algo, &ps) != 0);
            continue;
          }
          for (int rep = 0; rep < 3 && !rc; rep++) {
            vecStore v;
            makeVec((planColl)c, n, counts[k], &rnd, &v);
            int root = (int)(stageRand(&rnd) % (uint32_t)n), inPlace = rep == 1;
            /* A small scratch buffer makes the reductions run in several pieces. */
            size_t scratch = rep == 2 ? (size_t)(n > 1 ? n - 1 : 1) * 2 * 256 : (size_t)1 << 20;
            rc = replayColl((planColl)c, n, counts[k], root, inPlace, (planAlgo)algo, &v, scratch,
                            0, stageRand(&rnd));
            runs++;
          }
          /* pull1's pipeline at full shape (reduce.c): a dozen pieces of
           * 2K, AllReduce's result in 6 groups, a count no part divides
           * evenly, in and out of place; relay's parts in up to 8 groups
           * (relay.c), parts with different numbers of groups; chain's
           * block in up to 8 groups (chain.c); split's blocks with a
           * pushed half (PLAN_SPLIT_ALIGN or more) and a pulled rest */
          int pipelined = (algo == PLAN_ALGO_PULL1 && planCollOf((planColl)c)->reduces) ||
                          algo == PLAN_ALGO_RELAY || algo == PLAN_ALGO_CHAIN ||
                          algo == PLAN_ALGO_SPLIT;
          if (!pipelined || k != 0 || n < 2) continue;
          for (int rep = 0; rep < 6 && !rc; rep++) {
            vecStore v;
            /* reps 2-3: 2303 on 2 ranks gives parts of 1024 and 1279 bytes,
             * so 2 and 3 groups (a rank pulls groups beyond its own), and
             * one piece completes two groups; reps 4-5: a scratch buffer
             * that holds every piece at once (pull1's pieces in regions of
             * their own, no wait for a reduction before a copy) */
            size_t count =
                rep < 2 || rep >= 4 ? 24000 * (size_t)n + 37 : 2303 + 1000 * (size_t)(n - 2);
            makeVec((planColl)c, n, count, &rnd, &v);
            int root = (int)(stageRand(&rnd) % (uint32_t)n);
            rc = replayColl((planColl)c, n, count, root, rep & 1, (planAlgo)algo, &v,
                            rep >= 4 ? (size_t)8 << 20 : (size_t)(n - 1) * 2 * 2048, 256,
                            stageRand(&rnd));
            runs++;
          }
        }
  /* relay and chain on 6-8 ranks too (their parts, groups and chain
   * positions change with n), every root, in and out of place */
  const planAlgo rooted[] = {PLAN_ALGO_RELAY, PLAN_ALGO_CHAIN};
  for (int n = 6; n <= MAXR && !rc; n++)
    for (int ai = 0; ai < 2 && !rc; ai++)
      for (int root = 0; root < n && !rc; root++) {
        size_t count = root % 2 ? 24000 * (size_t)n + 37 : 2303 + 1000 * (size_t)(n - 2);
        vecStore v;
        makeVec(PLAN_COLL_BROADCAST, n, count, &rnd, &v);
        rc = replayColl(PLAN_COLL_BROADCAST, n, count, root, root % 3 == 0, rooted[ai], &v,
                        (size_t)1 << 20, 256, stageRand(&rnd));
        runs++;
      }
  printf("  %d collective schedules replayed byte for byte (%ld arrival NOTIFYs checked)\n", runs,
         notifiesChecked);
  /* Control: a NOTIFY moved before its block can have arrived is caught
   * (each algorithm AllGather takes, 3 ranks, out of place). */
  for (int algo = 0; algo < PLAN_NUM_ALGOS && !rc; algo++) {
    if (!(planCollOf(PLAN_COLL_ALLGATHER)->algos & PLAN_ALGO_BIT(algo))) continue;
    vecStore v;
    makeVec(PLAN_COLL_ALLGATHER, 3, 1000, &rnd, &v);
    int before = testFailures;
    notifyEarlyControl = 1;
    int caught = replayColl(PLAN_COLL_ALLGATHER, 3, 1000, 0, 0, (planAlgo)algo, &v, (size_t)1 << 20,
                            0, stageRand(&rnd));
    notifyEarlyControl = 0;
    testFailures = before;
    if (!caught) {
      TEST_FAIL("control: %s's NOTIFY moved to the front was not caught",
                planAlgoName((planAlgo)algo));
      rc = 1;
    }
  }
  if (!rc) printf("  control: a NOTIFY before its block's bytes is caught for every algorithm\n");
  return rc;
}

/*
 * Sequences of operations run action by action (graphPieceRun,
 * twoShotRun). A rank's actions: the next step of each of its lanes, a
 * pending reset of a graph's wait (an action of its own that runs later,
 * holding the waiting lane until then, as in a replayed graph), and the
 * completion of its operation once every lane is done. Eager flags hold
 * epochs (operation k signals k + 1); a graph's hold 1 until reset, and a
 * staged operation in slot 1 has DATA words of its own.
 */
#define SQ_N 8
#define SQ_RESETS 64
#define SQ_LANES PLAN_MAX_LANES(SQ_N)
#define SQ_WORDS (PLAN_NUM_PHASES + 1) /* + 1: a graph's DATA words of slot 1 */
enum { SQ_COMPLETE = -1, SQ_RESET0 = 1000 };

typedef struct {
  int word, peer, lane;
} sqReset;
typedef struct {
  int cur, nreset, pc[SQ_LANES];
  sqReset pend[SQ_RESETS];
} sqRank;
typedef struct {
  int rank, what; /* a lane, SQ_RESET0 + j (pending reset j) or SQ_COMPLETE */
} sqAction;
typedef uint32_t sqFlags[SQ_N][SQ_WORDS][SQ_N]; /* [rank][word][peer] */

static int sqWord(const planStep *st, int graph, int gslot) {
  return graph && st->phase == PLAN_PHASE_DATA && gslot ? PLAN_NUM_PHASES : (int)st->phase;
}

/* A step that may not run yet for a reason of the caller's (lines not all
 * there): nonzero. */
typedef int (*sqBlocked)(const planSchedule *s, const planStep *st, int r, void *ctx);

/* Appends rank r's possible actions to out; s: its current operation's
 * schedule (NULL once it has none left); blocked may be NULL. Returns how
 * many. */
static int sqActions(const planSchedule *s, sqRank *q, int r, int graph, int gslot, sqFlags flag,
                     sqBlocked blocked, void *ctx, sqAction *out) {
  int nc = 0, busy = 0;
  for (int j = 0; j < q->nreset; j++) out[nc++] = (sqAction){r, SQ_RESET0 + j};
  if (!s) return nc;
  for (int l = 0; l < s->nlanes; l++) {
    int i = q->pc[l], held = 0;
    while (i < s->nsteps && s->steps[i].lane != l) i++;
    q->pc[l] = i;
    for (int j = 0; j < q->nreset; j++) held |= q->pend[j].lane == l;
    if (held || i < s->nsteps) busy = 1;
    if (held || i >= s->nsteps) continue;
    const planStep *st = &s->steps[i];
    if (st->kind == PLAN_STEP_WAIT &&
        flag[r][sqWord(st, graph, gslot)][st->peer] < (graph ? 1u : (uint32_t)q->cur + 1))
      continue;
    if (st->kind == PLAN_STEP_JOIN) {
      int j = q->pc[st->from], fromHeld = 0;
      while (j < s->nsteps && s->steps[j].lane != st->from) j++;
      for (int k = 0; k < q->nreset; k++) fromHeld |= q->pend[k].lane == st->from;
      if (j < i || fromHeld) continue;
    }
    if (blocked && blocked(s, st, r, ctx)) continue;
    out[nc++] = (sqAction){r, l};
  }
  if (!busy) out[nc++] = (sqAction){r, SQ_COMPLETE};
  return nc;
}

/* Runs pending reset j of a rank. */
static void sqReset1(sqRank *q, int r, int j, sqFlags flag) {
  sqReset *g = &q->pend[j];
  flag[r][g->word][g->peer] = 0;
  *g = q->pend[--q->nreset];
}

/* Runs a SIGNAL or a WAIT of rank r on lane l (1), or leaves any other step
 * to the caller (0); on a graph's signal that lands on a set word (it would
 * be lost) -1, on too many pending resets -2. */
static int sqSync(const planStep *st, sqRank *q, int r, int l, int graph, int gslot, sqFlags flag) {
  int w = sqWord(st, graph, gslot);
  if (st->kind == PLAN_STEP_SIGNAL) {
    uint32_t *f = &flag[st->peer][w][r];
    if (graph && *f) return -1;
    *f = graph ? 1 : (uint32_t)q->cur + 1;
    return 1;
  }
  if (st->kind != PLAN_STEP_WAIT) return 0;
  if (!graph) return 1;
  if (q->nreset == SQ_RESETS) return -2;
  q->pend[q->nreset++] = (sqReset){w, st->peer, l};
  return 1;
}

/*
 * Broadcasts in sequence with the graph form of the flags (relay's and
 * chain's PIECE phases above all): a SIGNAL sets the peer's word to 1, a
 * WAIT passes on 1 and its reset is an action of its own that runs later
 * (in the waiting lane, which it holds until then), as in a replayed graph;
 * eager runs the same with epochs. Random algorithms (relay, chain, direct),
 * roots, sizes (groups of 256 or 512 bytes), in and out of place; buffers
 * reused, and a rank's buffers overwritten by "the user" as soon as its
 * operation completes. Checks every receive buffer at completion, a signal
 * that lands on a set word (it would be lost), and deadlocks. Control: PIECE
 * signalled before the copy it announces is caught.
 */
#define GP_N SQ_N
#define GP_OPS 12
#define GP_BYTES 20000

/* 0 ok, 1 a failure (why says which), in one random sequence. */
static int graphPieceRun(uint32_t seed, int graph, int control, char *why, size_t len) {
  static unsigned char send[GP_N][GP_BYTES], recv[GP_N][GP_BYTES], want[GP_OPS][GP_BYTES];
  static planSchedule S[GP_N][GP_OPS];
  static sqFlags flag;
  static sqRank q[GP_N];
  const planAlgo algos[] = {PLAN_ALGO_RELAY, PLAN_ALGO_CHAIN, PLAN_ALGO_PUSH1, PLAN_ALGO_PULL1,
                            PLAN_ALGO_PULLN, PLAN_ALGO_PUSHB, PLAN_ALGO_SPLIT};
  uint32_t x = seed | 1;
  int n = control ? 3 + (int)(stageRand(&x) % 6) : 2 + (int)(stageRand(&x) % 7), rc = 0;
  size_t bytes[GP_OPS];
  int root[GP_OPS], inPlace[GP_OPS];
  size_t pieceMin = stageRand(&x) % 2 ? 256 : 512;
  for (int r = 0; r < GP_N; r++) /* a failed run returned without freeing them */
    for (int k = 0; k < GP_OPS; k++) planScheduleFree(&S[r][k]);
  for (int k = 0; k < GP_OPS && !rc; k++) {
    uint32_t c = stageRand(&x) % 4;
    bytes[k] = c == 0   ? stageRand(&x) % 300
               : c == 1 ? stageRand(&x) % 3000
                        : stageRand(&x) % GP_BYTES;
    root[k] = (int)(stageRand(&x) % (uint32_t)n);
    inPlace[k] = (int)(stageRand(&x) & 1);
    planAlgo al =
        control || stageRand(&x) % 3 ? algos[stageRand(&x) % 2] : algos[2 + stageRand(&x) % 5];
    for (int r = 0; r < n && !rc; r++) {
      planArgs a = {.coll = PLAN_COLL_BROADCAST,
                    .rank = r,
                    .nranks = n,
                    .count = bytes[k],
                    .elemSize = 1,
                    .root = root[k],
                    .inPlace = inPlace[k] && r == root[k],
                    .pieceMin = pieceMin};
      if (planBuild(&a, al, &S[r][k])) rc = snprintf(why, len, "planBuild failed") > 0;
      for (int i = 1; control && !rc && i < S[r][k].nsteps; i++) { /* signal before the copy */
        planStep *p = &S[r][k].steps[i - 1], *q = &S[r][k].steps[i];
        if (q->kind == PLAN_STEP_SIGNAL && q->phase >= PLAN_PHASE_PIECE &&
            p->kind == PLAN_STEP_COPY && p->lane == q->lane) {
          planStep t = *p;
          *p = *q, *q = t;
          break;
        }
      }
    }
    testFillRandom(want[k], bytes[k], seed * 31u + (uint32_t)k);
  }
  memset(flag, 0, sizeof(flag));
  memset(q, 0, sizeof(q));
  for (int r = 0; r < n; r++) {
    memset(recv[r], POISON, GP_BYTES);
    memset(send[r], POISON, GP_BYTES);
    if (r == root[0]) memcpy(inPlace[0] ? recv[r] : send[r], want[0], bytes[0]);
  }
  while (!rc) {
    static sqAction cand[GP_N * (SQ_LANES + SQ_RESETS + 1)];
    int nc = 0, left = 0;
    for (int r = 0; r < n; r++) {
      left += q[r].cur < GP_OPS;
      nc += sqActions(q[r].cur < GP_OPS ? &S[r][q[r].cur] : NULL, &q[r], r, graph, 0, flag, NULL,
                      NULL, cand + nc);
    }
    if (!left && !nc) break;
    if (!nc) {
      snprintf(why, len, "deadlock (n=%d)", n);
      return 1;
    }
    sqAction a = cand[stageRand(&x) % (uint32_t)nc];
    int r = a.rank, l = a.what, k = q[r].cur;
    if (l >= SQ_RESET0) {
      sqReset1(&q[r], r, l - SQ_RESET0, flag);
      continue;
    }
    if (l == SQ_COMPLETE) { /* check, then the user reuses both buffers */
      long long d = testFirstDiff(recv[r], want[k], bytes[k]);
      if (d >= 0) {
        snprintf(why, len,
                 "n=%d op %d (%s, root %d, %zu bytes, in place %d): rank %d byte %lld wrong", n, k,
                 planAlgoName(S[r][k].algo), root[k], bytes[k], inPlace[k], r, d);
        return 1;
      }
      memset(recv[r], POISON ^ (k + 1), GP_BYTES);
      memset(send[r], POISON ^ (k + 2), GP_BYTES);
      q[r].cur++;
      memset(q[r].pc, 0, sizeof(q[r].pc));
      if (q[r].cur < GP_OPS && r == root[q[r].cur])
        memcpy(inPlace[q[r].cur] ? recv[r] : send[r], want[q[r].cur], bytes[q[r].cur]);
      continue;
    }
    const planStep *st = &S[r][k].steps[q[r].pc[l]++];
    int y = sqSync(st, &q[r], r, l, graph, 0, flag);
    if (y == -1)
      return snprintf(why, len,
                      "n=%d op %d: rank %d's signal (phase %d) to rank %d lands on a set word", n,
                      k, r, (int)st->phase, st->peer) > 0;
    if (y == -2) return snprintf(why, len, "reset overflow") > 0;
    if (y == 0 && st->kind == PLAN_STEP_COPY) {
      int srcRoot = inPlace[k] && st->src.rank == root[k];
      unsigned char *src =
          st->src.buf == PLAN_BUF_SEND && !srcRoot ? send[st->src.rank] : recv[st->src.rank];
      unsigned char *dst = recv[st->dst.rank];
      if (st->dst.buf != PLAN_BUF_RECV || st->src.off + st->bytes > GP_BYTES ||
          st->dst.off + st->bytes > GP_BYTES)
        return snprintf(why, len, "copy outside the buffers") > 0;
      if (src + st->src.off != dst + st->dst.off)
        memmove(dst + st->dst.off, src + st->src.off, st->bytes);
    }
  }
  for (int r = 0; r < n; r++)
    for (int k = 0; k < GP_OPS; k++) planScheduleFree(&S[r][k]);
  return rc;
}

/* 1500 random sequences of run's, with epochs and with graph flags: how
 * many, or -1 after a failure (said). */
typedef int (*sqRun)(uint32_t seed, int graph, int control, char *why, size_t len);
static int sqSweep(sqRun run) {
  char why[256];
  int runs = 0;
  for (int graph = 0; graph <= 1; graph++)
    for (uint32_t seed = 1; seed <= 1500; seed++, runs++)
      if (run(seed * 2654435761u + (uint32_t)graph, graph, 0, why, sizeof(why))) {
        TEST_FAIL("%s, seed %u: %s", graph ? "graph flags" : "epochs", seed, why);
        return -1;
      }
  return runs;
}

static int testGraphPiecePhases(void) {
  char why[256];
  int runs = sqSweep(graphPieceRun);
  if (runs < 0) return 1;
  int caught = 0;
  for (uint32_t seed = 1; seed <= 400 && !caught; seed++)
    caught = graphPieceRun(seed * 40503u + 11u, 1, 1, why, sizeof(why));
  if (!caught) {
    TEST_FAIL("control (PIECE signalled before its copy) was never caught");
    return 1;
  }
  printf(
      "  %d Broadcast sequences (relay, chain, direct) with epochs and graph flags; control: %s\n",
      runs, why);
  return 0;
}

/*
 * twoshot: two kernels on lane 0 after any ENTRY handshake. The first
 * stores each peer's part into that peer's slot, signals and polls DATA and
 * reduces the rank's own part; the second stores that part into every
 * peer's receive buffer at the same place, signals and polls EXIT, and ends
 * in an empty REDUCE. Where a part is empty (under 256 bytes per rank) it is
 * stagesm's schedule. planCheck takes them, and the simulated queues run
 * them in every dependency order tried. Control: the second kernels poll
 * before they signal, and deadlock.
 */
/* Ranks apart (planPullsAcross, planPushAcross: the core applies them to
 * ranks of one process on other GPUs captured into other graphs, where a
 * copy that reads the other graph's GPU can deadlock). For every
 * collective on 2-4 ranks (AllGather(V) also as its ...Notify form), in
 * and out of place, small and large, with nothing apart, ranks apart by
 * parity (two GPUs, shared on 3-4 ranks) or all apart, the arguments a
 * captured call gets (capturedArgs):
 *   - stage, pushn, push1 and pushb never copy from a rank apart, wherever
 *     the collective takes them (what planPushAcross rests on);
 *   - every algorithm the collective takes: planPullsAcross says 1 exactly
 *     where a rank's schedule has a COPY from a rank apart (found here
 *     independently), naming such a pair, and 0 with nothing apart;
 *   - planPushAcross's answer, where it pulls: an algorithm of those four
 *     that the collective takes, whose staging fits, under which no COPY
 *     reads a rank apart, the first such; -1 only where none is.
 * And the GPU test's premises (test_gpu testGraphApart) on 2 ranks: the
 * table's pull1 Reduce of 2 MB becomes stage, pull1's AllReduce of 32 MB
 * finds none (the slot holds 8 MB), twoshot's of 6 MB pulls nothing. */
/* The staged and form arguments of the first captured call, as the core
 * sets them (coreStageArgs: graph slots, the default DMACCL_KERNEL_WAIT, 8
 * MB staging slots); own: no two ranks share a GPU. */
static void capturedArgs(planArgs *a, int n, int own) {
  a->stageSlots = 2, a->stageIndex = 1, a->stageEntry = 1, a->stageSelfLate = 1;
  a->kernelWait = 1;
  a->lineBytes = planLineSlotBytes(n, (size_t)8 << 20);
  a->kernelSignals = own;
  a->listOrder = 0;
}

static int copiesAcross(const planArgs *args, int n, planAlgo algo, const unsigned char *sep,
                        int *who, int *from) {
  planSchedule s;
  memset(&s, 0, sizeof(s));
  int found = 0;
  for (int r = 0; r < n && !found; r++) {
    if (planBuild(&args[r], algo, &s)) {
      planScheduleFree(&s);
      return -1;
    }
    for (int i = 0; i < s.nsteps && !found; i++)
      if (s.steps[i].kind == PLAN_STEP_COPY && s.steps[i].src.rank != r &&
          s.steps[i].src.rank >= 0 && s.steps[i].src.rank < n && sep[r * n + s.steps[i].src.rank])
        found = 1, *who = r, *from = s.steps[i].src.rank;
  }
  planScheduleFree(&s);
  return found;
}

static int testPullsAcross(void) {
  static const planAlgo pushes[] = {PLAN_ALGO_STAGE, PLAN_ALGO_PUSHN, PLAN_ALGO_PUSH1,
                                    PLAN_ALGO_PUSHB};
  const size_t stageBytes = (size_t)8 << 20;
  uint32_t rnd = 77;
  static vecStore v;
  planSchedule s;
  memset(&s, 0, sizeof(s));
  long pulling = 0, switched = 0, none = 0;
  for (int coll = 0; coll < PLAN_NUM_COLLS; coll++)
    for (int n = 2; n <= 4; n++)
      for (int big = 0; big < 2; big++)
        for (int inPlace = 0; inPlace < 2; inPlace++)
          for (int all = 0; all < 6; all++) {
            size_t count = big ? ((size_t)3 << 20) + 7 : 1000;
            int notify = all >= 3; /* the ...Notify forms: arrival words */
            if (notify && coll != PLAN_COLL_ALLGATHER && coll != PLAN_COLL_ALLGATHERV) continue;
            makeVec((planColl)coll, n, count, &rnd, &v);
            planArgs args[MAXR];
            unsigned char sep[MAXR * MAXR];
            for (int r = 0; r < n; r++) {
              args[r] = anyArgs((planColl)coll, r, n, count, n - 1, inPlace, &v, (size_t)32 << 20);
              capturedArgs(&args[r], n, all % 3 != 1 || n == 2); /* parity, 3-4: GPUs shared */
              args[r].notify = notify;
              for (int q = 0; q < n; q++) /* 0: nothing apart, 1: by parity, 2: all */
                sep[r * n + q] = all % 3 == 2 ? r != q : all % 3 == 1 ? (r % 2) != (q % 2) : 0;
            }
            unsigned mask = planCollOf((planColl)coll)->algos;
            for (int a = 0; a < PLAN_NUM_ALGOS; a++) {
              if (!(mask & PLAN_ALGO_BIT(a)) || planIsComposed((planAlgo)a)) continue;
              int w = -1, f = -1, w2 = -1, f2 = -1;
              int want = copiesAcross(args, n, (planAlgo)a, sep, &w, &f);
              int got = planPullsAcross(args, n, (planAlgo)a, sep, &s, &w2, &f2);
              if (want < 0)
                TEST_FAIL("%s %s n=%d count %zu: no schedule", planCollName((planColl)coll),
                          planAlgoName((planAlgo)a), n, count);
              ASSERT_TRUE(want >= 0);
              if (got != want)
                TEST_FAIL("%s %s n=%d: planPullsAcross %d, a COPY from a rank apart %d",
                          planCollName((planColl)coll), planAlgoName((planAlgo)a), n, got, want);
              ASSERT_EQ_INT(got, want);
              if (got == 1) ASSERT_TRUE(sep[w2 * n + f2] && w2 != f2);
              for (size_t k = 0; k < sizeof(pushes) / sizeof(pushes[0]); k++)
                if (pushes[k] == (planAlgo)a && want &&
                    s.algo == (planAlgo)a) /* not run as pull1 */
                  TEST_FAIL("%s %s n=%d %s: a push algorithm copies from rank %d on rank %d",
                            planCollName((planColl)coll), planAlgoName((planAlgo)a), n,
                            inPlace ? "in place" : "out of place", f, w);
              if (!got) continue;
              pulling++;
              int alt = planPushAcross(args, n, (planAlgo)a, sep, stageBytes, &s), first = -1;
              for (size_t k = 0; k < sizeof(pushes) / sizeof(pushes[0]) && first < 0; k++) {
                planAlgo p = pushes[k];
                if (!(mask & PLAN_ALGO_BIT(p)) || p == (planAlgo)a ||
                    (planIsStaged(p) && planStageNeed(&args[0], p) > stageBytes))
                  continue;
                if (copiesAcross(args, n, p, sep, &w, &f) == 0) first = (int)p;
              }
              ASSERT_EQ_INT(alt, first);
              if (alt >= 0)
                switched++;
              else
                none++;
            }
          }
  planScheduleFree(&s);
  printf("  %ld pulling across: %ld switched, %ld with none\n", pulling, switched, none);
  ASSERT_TRUE(pulling > 0 && switched > 0 && none > 0);
  /* the GPU test's premises: 2 ranks apart, int32 */
  const struct {
    planColl coll;
    planAlgo algo;
    size_t bytes;
    int pulls, alt;
  } gpu[] = {{PLAN_COLL_REDUCE, PLAN_ALGO_PULL1, (size_t)2 << 20, 1, PLAN_ALGO_STAGE},
             {PLAN_COLL_ALLREDUCE, PLAN_ALGO_PULL1, (size_t)32 << 20, 1, PLAN_ALGO_PUSH1},
             {PLAN_COLL_ALLREDUCE, PLAN_ALGO_PULL1, (size_t)128 << 20, 1, -1},
             {PLAN_COLL_ALLREDUCE, PLAN_ALGO_TWOSHOT, (size_t)6 << 20, 0, -1}};
  for (size_t k = 0; k < sizeof(gpu) / sizeof(gpu[0]); k++) {
    makeVec(gpu[k].coll, 2, 0, &rnd, &v);
    planArgs args[2];
    unsigned char sep[4] = {0, 1, 1, 0};
    for (int r = 0; r < 2; r++) {
      args[r] = anyArgs(gpu[k].coll, r, 2, gpu[k].bytes / 4, 0, 0, &v, (size_t)32 << 20);
      args[r].elemSize = 4;
      capturedArgs(&args[r], 2, 1);
    }
    int w = -1, f = -1;
    ASSERT_EQ_INT(planPullsAcross(args, 2, gpu[k].algo, sep, &s, &w, &f), gpu[k].pulls);
    if (gpu[k].pulls)
      ASSERT_EQ_INT(planPushAcross(args, 2, gpu[k].algo, sep, stageBytes, &s), gpu[k].alt);
  }
  planScheduleFree(&s);
  return 0;
}

static int testTwoShot(void) {
  static planSchedule s[8];
  memset(s, 0, sizeof(s));
  char why[256];
  int orders = 0, caught = 0;
  for (int n = 2; n <= 8; n++)
    for (int v = 0; v < 8; v++) { /* in place, stageEntry, a count too small for parts */
      int inPlace = v & 1, entry = (v >> 1) & 1, tiny = v >> 2;
      size_t count = tiny ? 256 * (size_t)n - 1 : 4099 * (size_t)n + 3;
      planSchedule *ops[8], flat[8];
      for (int r = 0; r < n; r++) {
        planArgs a = PA(PLAN_COLL_ALLREDUCE, r, n, count, inPlace, 2, 1);
        a.stageEntry = entry;
        ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_TWOSHOT, &s[r]), 0);
        const planSchedule *sc = &s[r];
        int kernels = 0, copies[2] = {0, 0}, exits = 0, data = 0;
        for (int i = 0; i < sc->nsteps; i++) {
          const planStep *st = &sc->steps[i];
          ASSERT_EQ_INT(st->lane, 0);
          if (st->kind == PLAN_STEP_REDUCE) {
            ASSERT_TRUE(kernels < 2);
            /* the first reduces the rank's part, the second nothing */
            if (!tiny) ASSERT_TRUE(kernels == 0 ? st->bytes > 0 : st->bytes == 0);
            kernels++;
            continue;
          }
          if (st->kind == PLAN_STEP_COPY) {
            ASSERT_TRUE(st->inKernel && kernels < 2);
            ASSERT_EQ_INT((int)st->dst.buf, kernels ? PLAN_BUF_RECV : PLAN_BUF_STAGE);
            copies[kernels]++;
          }
          exits += st->phase == PLAN_PHASE_EXIT && st->kind != PLAN_STEP_COPY;
          data += st->phase == PLAN_PHASE_DATA && st->kind != PLAN_STEP_COPY;
        }
        ASSERT_EQ_INT(kernels, tiny ? 1 : 2);
        ASSERT_EQ_INT(copies[0], n - 1);
        ASSERT_EQ_INT(copies[1], tiny ? 0 : n - 1);
        ASSERT_EQ_INT(exits, tiny ? 0 : 2 * (n - 1));
        ASSERT_EQ_INT(data, 2 * (n - 1));
        flat[r] = *sc;
        ops[r] = &s[r];
      }
      ASSERT_EQ_INT(planCheck(flat, n, why, sizeof(why)), 0);
      for (int ctl = 0; ctl <= !tiny; ctl++) {
        int d = simOrders(ops, n, 10, ctl, &orders);
        if (d < 0) return 1;
        caught += d;
        /* the control: the second kernels poll EXIT before they signal it */
        for (int r = 0; r < n && !ctl; r++) pollFirst(&s[r], PLAN_PHASE_EXIT, n - 1);
      }
    }
  ASSERT_TRUE(caught > 0);
  printf("  %d dependency orders simulated; with the EXIT waits first %d deadlocked\n", orders,
         caught);
  for (int r = 0; r < 8; r++) planScheduleFree(&s[r]);
  return 0;
}

/*
 * AllReduce sequences that mix twoshot with stagesm, stage, pull1 and
 * stagell (lines: a REDUCE waits for its line sources; no line is written
 * over one its owner has not read; every line is read in the end), with
 * the executors' flag rules: eager, epochs (one DATA word per peer); in a
 * CUDA graph, a graph of 1-5 operations replayed three times, SIGNAL sets a
 * word to 1, a WAIT passes on 1 and its reset is an action of its own that
 * runs later in the waiting lane, staged operations numbered from 1 in the
 * graph (slot = number % 2, each slot its own DATA words) with an ENTRY
 * handshake on the first. Fresh data per operation; a rank's buffers are
 * overwritten by "the user" as soon as its operation completes. Checks:
 * every receive byte at completion; no deadlock; no signal on a set word;
 * no copy into or out of a peer's receive buffer unless the peer is in the
 * same operation; no copy into a staging slot whose owner has not reduced
 * what an earlier operation left there. Also sequences where the ranks
 * disagree about some twoshot operations and run only their handshakes, as
 * launch_mp.c does (their own result is not checked; every other one is).
 * Controls: twoshot's second kernel without its EXIT waits (a rank
 * completes while peers still write into its buffer), no ENTRY handshake
 * on a graph's first staged operation, and an empty schedule for a
 * disagreeing twoshot (its staged number's DATA never exchanged); all
 * caught.
 */
#define TS_N 6
#define TS_LINES (1 << 15) /* a line slot: stagell's line form up to a few KB */
#define TS_G 5
#define TS_OPS (3 * TS_G)
#define TS_BYTES 6000

static long tsLineCopies; /* stagell's line form did run */

/* stagell's REDUCE waits until its line sources are all there. */
typedef struct {
  unsigned char (*lines)[2][TS_LINES];
  const int *gslot;
  const sqRank *q;
} tsLineCtx;
static int tsLinesMissing(const planSchedule *s, const planStep *st, int r, void *ctx) {
  const tsLineCtx *c = ctx;
  for (int j = 0; st->kind == PLAN_STEP_REDUCE && j < st->nsrc; j++) {
    planLoc o = s->srcs[st->src0 + j];
    if (o.buf == PLAN_BUF_LINES &&
        (o.off + planLinesBytes(st->bytes) > TS_LINES ||
         !linesReady(c->lines[r][c->gslot[c->q[r].cur]] + o.off, st->bytes)))
      return 1;
  }
  return 0;
}

/* 0 ok, 1 a failure (why says which). control: 1 no EXIT waits, 2 no ENTRY;
 * 3 ranks disagree about some twoshot operations and run their handshakes
 * alone (launch_mp.c), 4 the same with empty schedules (a control). */
static int twoShotRun(uint32_t seed, int graph, int control, char *why, size_t len) {
  static unsigned char send[TS_N][TS_BYTES], recv[TS_N][TS_BYTES], stage[TS_N][2][TS_N * TS_BYTES];
  static unsigned char scratch[TS_N][1 << 14], data[TS_OPS][TS_N][TS_BYTES];
  static planSchedule S[TS_N][TS_OPS];
  static sqFlags flag;
  static sqRank q[TS_N];
  static unsigned char lines[TS_N][2][TS_LINES];
  const planAlgo algos[] = {PLAN_ALGO_TWOSHOT, PLAN_ALGO_STAGESM, PLAN_ALGO_STAGE, PLAN_ALGO_PULL1,
                            PLAN_ALGO_STAGELL};
  uint32_t x = seed | 1;
  int n = 2 + (int)(stageRand(&x) % (TS_N - 1)), rc = 0, nops = graph ? 0 : TS_OPS;
  int gops = 1 + (int)(stageRand(&x) % TS_G);
  size_t bytes[TS_OPS];
  int inPlace[TS_OPS], gslot[TS_OPS], owed[TS_N][2], dis[TS_OPS];
  unsigned long long number = 0; /* staged operations so far (in the graph) */
  for (int r = 0; r < TS_N; r++) /* a failed run returned without freeing them */
    for (int k = 0; k < TS_OPS; k++) planScheduleFree(&S[r][k]);
  for (int k = 0; k < TS_OPS && !rc; k++) {
    int first = graph && k % gops == 0; /* a replay of the graph starts */
    if (graph && k >= 3 * gops) break;
    if (first) number = 0;
    int src = graph && k >= gops ? k % gops : -1; /* replays repeat the graph's operations */
    uint32_t c = stageRand(&x) % 3;
    bytes[k] = src >= 0 ? bytes[src] : c == 0 ? stageRand(&x) % 600 : stageRand(&x) % TS_BYTES;
    inPlace[k] = src >= 0 ? inPlace[src] : (int)(stageRand(&x) & 1);
    planAlgo al = src >= 0 ? S[0][src].algo : algos[stageRand(&x) % 5];
    if (control && src < 0 && stageRand(&x) % 2) al = PLAN_ALGO_TWOSHOT;
    /* 3, 4: ranks that disagree about a twoshot operation */
    dis[k] =
        src >= 0 ? dis[src] : control >= 3 && al == PLAN_ALGO_TWOSHOT && stageRand(&x) % 3 == 0;
    int staged = planIsStaged(al) && bytes[k] > 0;
    unsigned long long idx = staged ? ++number : 0;
    gslot[k] = (int)(idx % 2);
    for (int r = 0; r < n && !rc; r++) {
      planArgs a = {.coll = PLAN_COLL_ALLREDUCE,
                    .rank = r,
                    .nranks = n,
                    .count = bytes[k],
                    .elemSize = 1,
                    .dtype = 1,
                    .inPlace = inPlace[k],
                    .stageSlots = 2,
                    .stageIndex = idx,
                    .stageEntry = graph && idx == 1 && control != 2,
                    .scratchBytes = sizeof(scratch[0]),
                    .pieceMin = 256,
                    .lineBytes = TS_LINES};
      if (planBuild(&a, al, &S[r][k])) rc = snprintf(why, len, "planBuild failed") > 0;
      planSchedule *q = &S[r][k];
      int m = 0;
      for (int i = 0; i < q->nsteps; i++) {
        planStep *st = &q->steps[i];
        int exitWait = st->kind == PLAN_STEP_WAIT && st->phase == PLAN_PHASE_EXIT;
        int moves = st->kind == PLAN_STEP_COPY || st->kind == PLAN_STEP_REDUCE;
        if ((control == 1 && al == PLAN_ALGO_TWOSHOT && exitWait) || (dis[k] && moves)) continue;
        q->steps[m] = *st;
        q->steps[m++].inKernel &= !dis[k]; /* handshakes alone (launch_mp.c) */
      }
      q->nsteps = control == 4 && dis[k] ? 0 : m; /* 4: an empty schedule instead */
      testFillRandom(data[k][r], bytes[k], seed * 31u + (uint32_t)(k * TS_N + r));
    }
    nops = k + 1;
  }
  memset(flag, 0, sizeof(flag));
  memset(q, 0, sizeof(q));
  memset(owed, 0xff, sizeof(owed));
  memset(lines, 0, sizeof(lines));
  tsLineCtx lctx = {lines, gslot, q};
  for (int r = 0; r < n; r++) {
    memset(recv[r], POISON, TS_BYTES);
    memcpy(inPlace[0] ? recv[r] : send[r], data[0][r], bytes[0]);
  }
  while (!rc) {
    static sqAction cand[TS_N * (SQ_LANES + SQ_RESETS + 1)];
    int nc = 0, left = 0;
    for (int r = 0; r < n; r++) {
      int k = q[r].cur;
      left += k < nops;
      nc += sqActions(k < nops ? &S[r][k] : NULL, &q[r], r, graph, k < nops ? gslot[k] : 0, flag,
                      tsLinesMissing, &lctx, cand + nc);
    }
    if (!left && !nc) break;
    if (!nc) return snprintf(why, len, "deadlock (n=%d)", n) > 0;
    sqAction act = cand[stageRand(&x) % (uint32_t)nc];
    int r = act.rank, l = act.what, k = q[r].cur;
    if (l >= SQ_RESET0) {
      sqReset1(&q[r], r, l - SQ_RESET0, flag);
      continue;
    }
    if (l == SQ_COMPLETE) { /* check, then the user reuses both buffers */
      unsigned char want[TS_BYTES];
      for (size_t i = 0; i < bytes[k]; i++) {
        unsigned sum = 0;
        for (int p = 0; p < n; p++) sum += data[k][p][i];
        want[i] = (unsigned char)sum;
      }
      long long d = dis[k] ? -1 : testFirstDiff(recv[r], want, bytes[k]);
      if (d >= 0)
        return snprintf(why, len,
                        "n=%d op %d (%s, %zu bytes, in place %d): rank %d byte %lld wrong", n, k,
                        planAlgoName(S[r][k].algo), bytes[k], inPlace[k], r, d) > 0;
      memset(recv[r], POISON ^ (k + 1), TS_BYTES);
      memset(send[r], POISON ^ (k + 2), TS_BYTES);
      q[r].cur++;
      memset(q[r].pc, 0, sizeof(q[r].pc));
      if (q[r].cur < nops)
        memcpy(inPlace[q[r].cur] ? recv[r] : send[r], data[q[r].cur][r], bytes[q[r].cur]);
      continue;
    }
    const planSchedule *s = &S[r][k];
    const planStep *st = &s->steps[q[r].pc[l]++];
    int y = sqSync(st, &q[r], r, l, graph, gslot[k], flag);
    if (y == -1)
      return snprintf(why, len,
                      "n=%d op %d: rank %d's signal (phase %d) to rank %d lands on a set word", n,
                      k, r, (int)st->phase, st->peer) > 0;
    if (y == -2) return snprintf(why, len, "reset overflow") > 0;
    if (st->kind != PLAN_STEP_COPY && st->kind != PLAN_STEP_REDUCE) continue;
    /* Where a location lies, and whether its owner may be touched now. */
    planLoc locs[TS_N + 1];
    int nl = 0;
    if (st->kind == PLAN_STEP_COPY) locs[nl++] = st->src;
    for (int i = 0; st->kind == PLAN_STEP_REDUCE && i < st->nsrc; i++)
      locs[nl++] = s->srcs[st->src0 + i];
    locs[nl++] = st->dst;
    unsigned char *at[TS_N + 1];
    for (int i = 0; i < nl; i++) {
      planLoc o = locs[i];
      int p = o.rank, inpl = inPlace[k] && o.buf == PLAN_BUF_SEND;
      size_t cap = o.buf == PLAN_BUF_STAGE     ? sizeof(stage[0][0])
                   : o.buf == PLAN_BUF_SCRATCH ? sizeof(scratch[0])
                   : o.buf == PLAN_BUF_LINES   ? TS_LINES
                                               : TS_BYTES;
      size_t span = o.buf == PLAN_BUF_LINES ? planLinesBytes(st->bytes) : st->bytes;
      if (o.off + span > cap) return snprintf(why, len, "a step outside its buffer") > 0;
      if ((o.buf == PLAN_BUF_RECV || o.buf == PLAN_BUF_SEND) && p != r && q[p].cur != k)
        return snprintf(why, len,
                        "n=%d op %d (%s): rank %d touches rank %d's user buffer, which is at "
                        "operation %d",
                        n, k, planAlgoName(s->algo), r, p, q[p].cur) > 0;
      at[i] = o.buf == PLAN_BUF_STAGE          ? stage[p][gslot[k]] + o.off
              : o.buf == PLAN_BUF_LINES        ? lines[p][gslot[k]] + o.off
              : o.buf == PLAN_BUF_SCRATCH      ? scratch[r] + o.off
              : o.buf == PLAN_BUF_RECV || inpl ? recv[p] + o.off
                                               : send[p] + o.off;
    }
    planLoc dst = st->dst;
    if (dst.buf == PLAN_BUF_STAGE && st->bytes) {
      int *o = &owed[dst.rank][gslot[k]];
      if (*o >= 0 && *o != k)
        return snprintf(why, len,
                        "n=%d op %d: rank %d writes rank %d's slot %d, which still holds operation "
                        "%d",
                        n, k, r, dst.rank, gslot[k], *o) > 0;
      *o = k;
    }
    if (st->kind == PLAN_STEP_COPY && dst.buf == PLAN_BUF_LINES) {
      for (size_t i = 0; i < planLinesBytes(st->bytes); i++)
        if (at[1][i]) /* a line its owner has not read yet */
          return snprintf(why, len,
                          "n=%d op %d: rank %d writes lines over unread ones in rank %d's slot %d",
                          n, k, r, dst.rank, gslot[k]) > 0;
      putLines(at[1], at[0], st->bytes);
      tsLineCopies++;
    } else if (st->kind == PLAN_STEP_COPY) {
      memmove(at[nl - 1], at[0], st->bytes);
    } else {
      static unsigned char taken[TS_N][TS_BYTES];
      for (int j = 0; j < st->nsrc; j++)
        if (s->srcs[st->src0 + j].buf == PLAN_BUF_LINES) { /* read and cleared */
          takeLines(taken[j], at[j], st->bytes);
          at[j] = taken[j];
        }
      for (size_t i = 0; i < st->bytes; i++) {
        unsigned sum = 0;
        for (int j = 0; j < st->nsrc; j++) sum += at[j][i];
        at[nl - 1][i] = (unsigned char)sum;
      }
      for (int j = 0; j < st->nsrc; j++)
        if (s->srcs[st->src0 + j].buf == PLAN_BUF_STAGE) owed[r][gslot[k]] = -1;
    }
  }
  for (size_t i = 0; i < sizeof(lines); i++) /* every line read */
    if (((unsigned char *)lines)[i]) return snprintf(why, len, "n=%d: lines left in a slot", n) > 0;
  for (int r = 0; r < n; r++)
    for (int k = 0; k < TS_OPS; k++) planScheduleFree(&S[r][k]);
  return rc;
}

static int testTwoShotSequences(void) {
  char why[256];
  int runs = sqSweep(twoShotRun);
  if (runs < 0) return 1;
  /* Ranks that disagree about some twoshot operations run their handshakes
   * alone (launch_mp.c): every other operation still right. */
  for (uint32_t seed = 1; seed <= 1000; seed++, runs++)
    if (twoShotRun(seed * 2246822519u + 3u, (int)(seed & 1), 3, why, sizeof(why))) {
      TEST_FAIL("disagreement, handshakes alone, seed %u: %s", seed, why);
      return 1;
    }
  static const char *const controls[] = {"no EXIT waits", "no ENTRY",
                                         "disagreement, empty schedules"};
  char caught[3][256] = {"", "", ""};
  for (int control = 1; control <= 3; control++)
    for (uint32_t seed = 1; seed <= 600 && !caught[control - 1][0]; seed++)
      if (twoShotRun(seed * 40503u + 7u, control == 2 || seed % 2, control == 3 ? 4 : control, why,
                     sizeof(why)))
        snprintf(caught[control - 1], sizeof(caught[0]), "%s", why);
  for (int k = 0; k < 3; k++)
    if (!caught[k][0]) {
      TEST_FAIL("control (%s) was never caught", controls[k]);
      return 1;
    }
  ASSERT_TRUE(tsLineCopies > 0);
  printf("  %d AllReduce sequences (twoshot, stagesm, stage, pull1, stagell: %ld line copies)\n"
         "  with epochs and graph flags, some with ranks that disagree about a twoshot (its\n"
         "  handshakes alone)\n",
         runs, tsLineCopies);
  for (int k = 0; k < 3; k++) printf("  control, %s: %s\n", controls[k], caught[k]);
  return 0;
}

/*
 * stagell's movement form in sequence (staged.c: the slot argument and its
 * token lines): random Broadcasts, Gathers, Scatters and AllGathers with
 * random roots and sizes, stagell or (one in three) stage, whose DATA
 * exchange stands in for the lines between two line operations, the ranks
 * interleaved at random, each
 * kernel's line stores and REDUCEs as steps of their own (a REDUCE waits
 * until its lines are all there). Checks: no line is stored where its
 * owner has not read the last one yet, every receive byte at completion,
 * no deadlock, every line read by the end. Control: the tokens taken out
 * (every COPY into lines and REDUCE from lines of 0 bytes): a rank that
 * only sends, a Broadcast's root, then stores over lines a peer has not
 * read.
 */
#define LT_OPS 16
#define LT_CHUNK 600

static long ltTokens; /* token lines stored */
static int ltAlgoSm;  /* stagesm instead of stagell */

/* 0 ok, 1 a failure (why says which). */
static int lineTokenRun(uint32_t seed, int control, char *why, size_t len) {
  static unsigned char send[LT_OPS][TS_N][TS_N * LT_CHUNK], recv[LT_OPS][TS_N][TS_N * LT_CHUNK];
  static unsigned char lines[TS_N][2][TS_LINES], stage[TS_N][2][TS_N * LT_CHUNK];
  static planSchedule S[TS_N][LT_OPS];
  static planArgs A[LT_OPS];
  static sqFlags flag;
  static sqRank q[TS_N];
  const planColl colls[] = {PLAN_COLL_BROADCAST, PLAN_COLL_GATHER, PLAN_COLL_SCATTER,
                            PLAN_COLL_ALLGATHER};
  uint32_t x = seed | 1;
  int n = 2 + (int)(stageRand(&x) % (TS_N - 1)), rc = 0, gslot[LT_OPS];
  unsigned long long number = 0;
  for (int r = 0; r < TS_N; r++) /* a failed run returned without freeing them */
    for (int k = 0; k < LT_OPS; k++) planScheduleFree(&S[r][k]);
  for (int k = 0; k < LT_OPS && !rc; k++) {
    planColl c = colls[stageRand(&x) % 4];
    size_t count = stageRand(&x) % 4 == 0 ? stageRand(&x) % 9 : stageRand(&x) % LT_CHUNK;
    int root = (int)(stageRand(&x) % (uint32_t)n);
    uint32_t pick = stageRand(&x) % 3;
    planAlgo al = ltAlgoSm ? (pick == 2 ? PLAN_ALGO_STAGESM
                              : pick    ? PLAN_ALGO_STAGELL
                                        : PLAN_ALGO_STAGE)
                           : (pick ? PLAN_ALGO_STAGELL : PLAN_ALGO_STAGE);
    unsigned long long idx = count ? ++number : 0;
    gslot[k] = (int)(idx % 2);
    for (int r = 0; r < n && !rc; r++) {
      planArgs a = {.coll = c,
                    .rank = r,
                    .nranks = n,
                    .count = count,
                    .elemSize = 1,
                    .root = root,
                    .stageSlots = 2,
                    .stageIndex = idx,
                    .lineBytes = TS_LINES};
      if (r == 0) A[k] = a;
      if (planBuild(&a, al, &S[r][k])) rc = snprintf(why, len, "planBuild") > 0;
      planSchedule *sc = &S[r][k];
      int m = 0;
      for (int i = 0; i < sc->nsteps; i++) {
        planStep *st = &sc->steps[i];
        int lineCopy = st->kind == PLAN_STEP_COPY && st->dst.buf == PLAN_BUF_LINES;
        int token = !st->bytes && (lineCopy || (st->kind == PLAN_STEP_REDUCE && st->nsrc == 1 &&
                                                sc->srcs[st->src0].buf == PLAN_BUF_LINES));
        if (token && control == 1) continue;
        /* control 2: stagesm's DATA only with the peers a block moves between */
        if (control == 2 && al == PLAN_ALGO_STAGESM &&
            (st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) &&
            st->phase == PLAN_PHASE_DATA) {
          const planCollInfo *ci2 = planCollOf(c);
          if (!ci2->block(&a, r, st->peer).bytes && !ci2->block(&a, st->peer, r).bytes) continue;
        }
        if (token && lineCopy) ltTokens++;
        sc->steps[m++] = *st;
      }
      sc->nsteps = m;
      testFillRandom(send[k][r], sizeof(send[k][r]), seed * 31u + (uint32_t)(k * TS_N + r));
      memset(recv[k][r], POISON, sizeof(recv[k][r]));
    }
  }
  memset(flag, 0, sizeof(flag));
  memset(q, 0, sizeof(q));
  memset(lines, 0, sizeof(lines));
  tsLineCtx lctx = {lines, gslot, q};
  while (!rc) {
    static sqAction cand[TS_N * (SQ_LANES + SQ_RESETS + 1)];
    int nc = 0, left = 0;
    for (int r = 0; r < n; r++) {
      int k = q[r].cur;
      left += k < LT_OPS;
      nc += sqActions(k < LT_OPS ? &S[r][k] : NULL, &q[r], r, 0, 0, flag, tsLinesMissing, &lctx,
                      cand + nc);
    }
    if (!left && !nc) break;
    if (!nc) return snprintf(why, len, "deadlock (n=%d)", n) > 0;
    sqAction act = cand[stageRand(&x) % (uint32_t)nc];
    int r = act.rank, l = act.what, k = q[r].cur;
    if (l == SQ_COMPLETE) { /* every block into this rank, checked */
      const planCollInfo *ci = planCollOf(A[k].coll);
      for (int f = 0; f < n; f++) {
        planBlock b = ci->block(&A[k], f, r);
        long long d = testFirstDiff(recv[k][r] + b.dstOff, send[k][f] + b.srcOff, b.bytes);
        if (d >= 0)
          return snprintf(why, len,
                          "n=%d op %d (%s, root %d, %zu bytes): rank %d's block from %d "
                          "wrong at byte %lld",
                          n, k, ci->name, A[k].root, A[k].count, r, f, d) > 0;
      }
      q[r].cur++;
      memset(q[r].pc, 0, sizeof(q[r].pc));
      continue;
    }
    if (l >= SQ_RESET0) return snprintf(why, len, "a reset without a graph") > 0;
    const planSchedule *sc = &S[r][k];
    const planStep *st = &sc->steps[q[r].pc[l]++];
    int y = sqSync(st, &q[r], r, l, 0, gslot[k], flag);
    if (y < 0) return snprintf(why, len, "a signal lost") > 0;
    if (st->kind != PLAN_STEP_COPY && st->kind != PLAN_STEP_REDUCE) continue;
    planLoc src = st->kind == PLAN_STEP_COPY ? st->src : sc->srcs[st->src0], dst = st->dst;
    if (st->kind == PLAN_STEP_REDUCE && st->nsrc != 1)
      return snprintf(why, len, "a REDUCE of %d sources in a movement collective", st->nsrc) > 0;
#define LT_AT(o)                                                                                   \
  ((o).buf == PLAN_BUF_SEND    ? send[k][(o).rank] + (o).off                                       \
   : (o).buf == PLAN_BUF_RECV  ? recv[k][(o).rank] + (o).off                                       \
   : (o).buf == PLAN_BUF_LINES ? lines[(o).rank][gslot[k]] + (o).off                               \
   : (o).buf == PLAN_BUF_STAGE ? stage[(o).rank][gslot[k]] + (o).off                               \
                               : NULL)
    unsigned char *from = LT_AT(src), *to = LT_AT(dst);
#undef LT_AT
    size_t span = planLinesBytes(st->bytes);
    if (!from || !to ||
        ((src.buf == PLAN_BUF_LINES || dst.buf == PLAN_BUF_LINES) &&
         (src.buf == PLAN_BUF_LINES ? src : dst).off + span > TS_LINES) ||
        ((src.buf == PLAN_BUF_STAGE || dst.buf == PLAN_BUF_STAGE) &&
         (src.buf == PLAN_BUF_STAGE ? src : dst).off + st->bytes > sizeof(stage[0][0])))
      return snprintf(why, len, "a step outside the buffers") > 0;
    if (dst.buf == PLAN_BUF_LINES) {
      for (size_t i = 0; i < span; i++)
        if (to[i]) /* a line its owner has not read yet */
          return snprintf(why, len,
                          "n=%d op %d (%s, root %d): rank %d stores lines over unread ones in "
                          "rank %d's slot %d",
                          n, k, planCollOf(A[k].coll)->name, A[k].root, r, dst.rank, gslot[k]) > 0;
      putLines(to, from, st->bytes);
    } else if (src.buf == PLAN_BUF_LINES) {
      static unsigned char taken[TS_N * LT_CHUNK + 8];
      takeLines(taken, from, st->bytes);
      memcpy(to, taken, st->bytes);
    } else {
      memmove(to, from, st->bytes);
    }
  }
  for (size_t i = 0; i < sizeof(lines) && !rc; i++)
    if (((unsigned char *)lines)[i]) return snprintf(why, len, "n=%d: lines left in a slot", n) > 0;
  for (int r = 0; r < n; r++)
    for (int k = 0; k < LT_OPS; k++) planScheduleFree(&S[r][k]);
  return rc;
}

/* stagesm's movement form mixed with stagell and stage in random sequences of
 * the rooted collectives and AllGather(V) with empty blocks (lineTokenRun:
 * slot reuse, every byte). Control: DATA only between ranks that share a
 * block, not with every peer: a later operation overwrites a slot a peer
 * still reads, and the run is caught. */
static int testSmMoveSequences(void) {
  char why[256];
  ltAlgoSm = 1;
  for (uint32_t seed = 1; seed <= 3000; seed++)
    if (lineTokenRun(seed * 2654435761u + 5u, 0, why, sizeof(why))) {
      TEST_FAIL("stagesm seed %u: %s", seed, why);
      ltAlgoSm = 0;
      return 1;
    }
  char caught[256] = "";
  int tries = 0;
  for (uint32_t seed = 1; seed <= 3000 && !caught[0]; seed++, tries++)
    if (lineTokenRun(seed * 40503u + 9u, 2, why, sizeof(why)))
      snprintf(caught, sizeof(caught), "%s", why);
  printf("  3000 stagesm/stage sequences ok; control (DATA only with block peers): %s after %d\n",
         caught[0] ? caught : "NOT caught", tries);
  ltAlgoSm = 0;
  ASSERT_TRUE(caught[0] != 0);
  return 0;
}

static int testLineTokenSequences(void) {
  char why[256];
  int runs = 0;
  for (uint32_t seed = 1; seed <= 1500; seed++, runs++)
    if (lineTokenRun(seed * 2654435761u + 5u, 0, why, sizeof(why))) {
      TEST_FAIL("seed %u: %s", seed, why);
      return 1;
    }
  ASSERT_TRUE(ltTokens > 0);
  char caught[256] = "";
  for (uint32_t seed = 1; seed <= 600 && !caught[0]; seed++)
    if (lineTokenRun(seed * 40503u + 9u, 1, why, sizeof(why)))
      snprintf(caught, sizeof(caught), "%s", why);
  if (!caught[0]) {
    TEST_FAIL("control (no token lines) was never caught");
    return 1;
  }
  printf("  %d sequences of Broadcast, Gather, Scatter and AllGather, stagell or stage (%ld token "
         "lines)\n"
         "  control, no token lines: %s\n",
         runs, ltTokens, caught);
  return 0;
}

/* Arrival words arrive early where the algorithm lets them: on 4 ranks,
 * the NOTIFY of the first peer's block comes before the last step that
 * involves the last peer (its wait or its copy) in the pull forms with one
 * copy per command and in the staged forms (their out copies go block by
 * block with notify); the push forms and pullb notify after the sender's
 * EXIT or the whole batch (include/dmaccl.h says so). */
static int testArrivalEarly(void) {
  const planAlgo early[] = {PLAN_ALGO_PULL1, PLAN_ALGO_PULLN, PLAN_ALGO_STAGE, PLAN_ALGO_STAGE2D};
  const int n = 4, r = 1;
  for (size_t k = 0; k < sizeof(early) / sizeof(early[0]); k++)
    for (int selfLate = 0; selfLate <= 1; selfLate++) {
      vecStore v;
      uint32_t rnd = 99;
      makeVec(PLAN_COLL_ALLGATHER, n, 1000, &rnd, &v);
      planArgs a = anyArgs(PLAN_COLL_ALLGATHER, r, n, 1000, 0, 0, &v, (size_t)1 << 20);
      a.stageSlots = 2, a.stageIndex = 1, a.stageSelfLate = selfLate, a.notify = 1;
      planSchedule s;
      memset(&s, 0, sizeof(s));
      ASSERT_EQ_INT(planBuild(&a, early[k], &s), 0);
      int first = (r + 1) % n, last = (r + n - 1) % n, notifyFirst = -1, lastStep = -1;
      for (int i = 0; i < s.nsteps; i++) {
        const planStep *st = &s.steps[i];
        if (st->kind == PLAN_STEP_NOTIFY && st->peer == first) notifyFirst = i;
        if ((st->kind == PLAN_STEP_WAIT && st->peer == last && st->phase != PLAN_PHASE_EXIT) ||
            (st->kind == PLAN_STEP_COPY && st->src.rank == last))
          lastStep = i;
      }
      if (notifyFirst < 0 || lastStep < 0 || notifyFirst > lastStep) {
        TEST_FAIL("%s: rank %d's NOTIFY of block %d (step %d) does not come before the last "
                  "step with rank %d (step %d)",
                  planAlgoName(early[k]), r, first, notifyFirst, last, lastStep);
        planScheduleFree(&s);
        return 1;
      }
      planScheduleFree(&s);
    }
  printf("  pull1, pulln, stage, stage2d: the first peer's block is notified before the last "
         "peer's data is waited for or copied\n");
  return 0;
}

/* pull1's EXIT goes on the lane of its last reads, after that lane JOINs
 * the other reading lanes (reduce.c; a ReduceScatter whose pieces do not
 * all fit the scratch buffer has two); planCheck refuses an EXIT that a
 * read of the peer's buffer may still follow (the JOIN removed). */
/* Every rank's pull1 ReduceScatter of `count` bytes on n ranks, pieces of
 * at least 256 bytes, into s[0..n). */
static int buildPull1Rs(int n, size_t count, size_t scratch, uint32_t seed, planSchedule *s) {
  static vecStore v;
  memset(s, 0, (size_t)n * sizeof(*s));
  makeVec(PLAN_COLL_REDUCESCATTER, n, count, &seed, &v);
  for (int r = 0; r < n; r++) {
    planArgs a = anyArgs(PLAN_COLL_REDUCESCATTER, r, n, count, 0, 0, &v, scratch);
    a.pieceMin = 256;
    if (planBuild(&a, PLAN_ALGO_PULL1, &s[r])) return -1;
  }
  return 0;
}

static int testExitOrder(void) {
  char why[256];
  planSchedule s[2];
  /* pieces of 2 KB through two halves: two copy lanes */
  ASSERT_EQ_INT(buildPull1Rs(2, 48037, 2 * 2048, 7, s), 0);
  ASSERT_EQ_INT(planCheck(s, 2, why, sizeof(why)), 0);
  int x = -1;
  for (int i = 0; i < s[0].nsteps && x < 0; i++)
    if (s[0].steps[i].kind == PLAN_STEP_SIGNAL && s[0].steps[i].phase == PLAN_PHASE_EXIT) x = i;
  ASSERT_TRUE(x > 0 && s[0].steps[x].lane != 0); /* on a copy lane, not after the reductions */
  const planStep *j = &s[0].steps[x - 1];
  ASSERT_TRUE(j->kind == PLAN_STEP_JOIN && j->lane == s[0].steps[x].lane && j->from != 0);
  memmove(&s[0].steps[x - 1], &s[0].steps[x], (size_t)(s[0].nsteps - x) * sizeof(planStep));
  s[0].nsteps--;
  ASSERT_EQ_INT(planCheck(s, 2, why, sizeof(why)), -1);
  ASSERT_CONTAINS(why, "EXIT to rank 1");
  printf("  control: %s\n", why);
  for (int r = 0; r < 2; r++) planScheduleFree(&s[r]);
  /* No EXIT at all (rank 0's signal and rank 1's wait for it removed). */
  ASSERT_EQ_INT(buildPull1Rs(2, 48037, 2 * 2048, 7, s), 0);
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < s[r].nsteps; i++) {
      const planStep *st = &s[r].steps[i];
      if (st->phase == PLAN_PHASE_EXIT &&
          ((r == 0 && st->kind == PLAN_STEP_SIGNAL) || (r == 1 && st->kind == PLAN_STEP_WAIT))) {
        memmove(&s[r].steps[i], &s[r].steps[i + 1],
                (size_t)(s[r].nsteps - i - 1) * sizeof(planStep));
        s[r].nsteps--;
        break;
      }
    }
  ASSERT_EQ_INT(planCheck(s, 2, why, sizeof(why)), -1);
  ASSERT_CONTAINS(why, "no EXIT goes to");
  printf("  control: %s\n", why);
  for (int r = 0; r < 2; r++) planScheduleFree(&s[r]);
  return 0;
}

/* pull1's ReduceScatter whose pieces fit the scratch buffer at once
 * (reduce.c buildPieced): one copy lane, one polled JOIN per piece (phase
 * PIECE+k) and one REDUCE in pieces; planCheck refuses a JOIN out of order. */
static int testPiecedReduce(void) {
  char why[256];
  planSchedule s[3];
  ASSERT_EQ_INT(buildPull1Rs(3, 3 * 40000 + 5, (size_t)1 << 20, 11, s), 0);
  ASSERT_EQ_INT(planCheck(s, 3, why, sizeof(why)), 0);
  int joins = 0, reduces = 0, red = -1, join1 = -1;
  for (int i = 0; i < s[0].nsteps; i++) {
    const planStep *st = &s[0].steps[i];
    if (st->kind == PLAN_STEP_COPY) ASSERT_EQ_INT(st->lane, 1);
    if (st->kind == PLAN_STEP_JOIN && st->inKernel) {
      ASSERT_EQ_INT((int)st->phase, PLAN_PHASE_PIECE + joins);
      if (joins++ == 1) join1 = i;
    }
    if (st->kind == PLAN_STEP_REDUCE) reduces++, red = i;
  }
  ASSERT_EQ_INT(reduces, 1);
  ASSERT_TRUE(s[0].steps[red].pieceBytes > 0);
  ASSERT_EQ_INT(joins, (int)((s[0].steps[red].bytes + s[0].steps[red].pieceBytes - 1) /
                             s[0].steps[red].pieceBytes));
  ASSERT_TRUE(joins >= 2 && join1 > 0);
  s[0].steps[join1].phase = PLAN_PHASE_PIECE; /* two JOINs of piece 0 */
  ASSERT_EQ_INT(planCheck(s, 3, why, sizeof(why)), -1);
  ASSERT_CONTAINS(why, "in pieces");
  printf("  control: %s\n", why);
  for (int r = 0; r < 3; r++) planScheduleFree(&s[r]);
  return 0;
}

/* buildPieced's pieces (reduce.c pieceBytes): a third of the target
 * (rounded up) where that is at most 6 x the smallest piece (measured best
 * for targets of 8 and 16 MB), a quarter above; every rank's REDUCE is cut
 * so, and the schedules pass planCheck. Where thirds would overflow a
 * scratch buffer that quarters fill exactly, quarters. */
static int testPiecedThirds(void) {
  char why[256];
  planSchedule s[3];
  const size_t counts[2] = {3 * 1000 + 2, 3 * 40000 + 5};
  for (int c = 0; c < 2; c++) {
    ASSERT_EQ_INT(buildPull1Rs(3, counts[c], (size_t)1 << 20, 5, s), 0);
    ASSERT_EQ_INT(planCheck(s, 3, why, sizeof(why)), 0);
    for (int r = 0; r < 3; r++) {
      const planStep *R = NULL;
      for (int i = 0; i < s[r].nsteps; i++)
        if (s[r].steps[i].kind == PLAN_STEP_REDUCE) R = &s[r].steps[i];
      ASSERT_TRUE(R && R->pieceBytes > 0);
      size_t third = ((R->bytes + 2) / 3 + 255) / 256 * 256,
             quarter = (R->bytes / 4 + 255) / 256 * 256;
      size_t want = third > quarter && third <= 6 * 256 ? third : quarter;
      ASSERT_EQ_INT((long long)R->pieceBytes, (long long)want);
      ASSERT_EQ_INT((int)((R->bytes + R->pieceBytes - 1) / R->pieceBytes), c ? 4 : 3);
    }
    for (int r = 0; r < 3; r++) planScheduleFree(&s[r]);
  }
  /* Targets of 4096 bytes on 3 ranks, scratch 8192: quarters fill it
   * exactly, thirds (1536 bytes, rounded up) would not fit; the one kernel
   * stays, in quarters (with thirds taken regardless, the schedule fell
   * back to a kernel per piece). */
  ASSERT_EQ_INT(buildPull1Rs(3, 4096, 8192, 5, s), 0);
  ASSERT_EQ_INT(planCheck(s, 3, why, sizeof(why)), 0);
  for (int r = 0; r < 3; r++) {
    int reduces = 0;
    size_t piece = 0;
    for (int i = 0; i < s[r].nsteps; i++)
      if (s[r].steps[i].kind == PLAN_STEP_REDUCE) {
        reduces++, piece = s[r].steps[i].pieceBytes;
        ASSERT_EQ_INT((int)s[r].steps[i].bytes, 4096);
      }
    ASSERT_EQ_INT(reduces, 1);
    ASSERT_EQ_INT((int)piece, 1024);
    planScheduleFree(&s[r]);
  }
  return 0;
}

/*
 * pull1's AllReduce in one kernel (reduce.c buildPieced, planArgs.
 * kernelSignals): the REDUCE in pieces, the kernel's SIGNALs of PIECE+k to
 * every peer right after it, lane C's WAITs and pulls of the peers' pieces;
 * targets of different sizes (4 ranks, a count no rank divides evenly), and
 * every rank's last piece short. Two forms:
 *   - list order (eager): lane C forked before the copies. Simulated
 *     queues in list order (one per rank, and shared by all ranks round by
 *     round) never deadlock. Controls: without listOrder the schedules fail
 *     planCheck, and issued in random dependency orders (a graph launch)
 *     they deadlock in some: lane C's WAIT ahead of lane A's copies holds
 *     them, so no kernel reaches its piece.
 *   - launched (graphs): lane C opens with a JOIN marked launched after the
 *     kernel's SIGNALs, then a JOIN from lane A. No order deadlocks, random
 *     dependency orders included. Controls: without the JOIN from lane A
 *     the schedules fail planCheck and deadlock in some dependency order;
 *     with the launched JOIN before the REDUCE's signals, or on a lane with
 *     no REDUCE, planCheck refuses it.
 */
static int piecedAllReduce(int listOrder) {
  char why[256];
  const int n = 4;
  planSchedule s[4], *ops[4];
  static vecStore v;
  uint32_t seed = 5;
  size_t count = listOrder ? 4 * 30000 + 3 : 4 * 31000 + 3; /* no target a multiple of its pieces */
  makeVec(PLAN_COLL_ALLREDUCE, n, count, &seed, &v);
  for (int r = 0; r < n; r++) {
    planArgs a = anyArgs(PLAN_COLL_ALLREDUCE, r, n, count, 0, 0, &v, (size_t)1 << 20);
    /* eager: over 24 smallest pieces; graphs: over 12 and at most 40 */
    a.pieceMin = listOrder ? 256 : 4096;
    a.kernelSignals = 1;
    a.listOrder = listOrder;
    memset(&s[r], 0, sizeof(s[r]));
    ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_PULL1, &s[r]), 0);
    ops[r] = &s[r];
  }
  ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
  for (int r = 0; r < n; r++) {
    int red = -1, sigs = 0, waits = 0, pulls = 0, K = 0, firstC = -1;
    for (int i = 0; i < s[r].nsteps; i++) {
      const planStep *st = &s[r].steps[i];
      if (st->lane == 3 && firstC < 0) firstC = i;
      if (st->kind == PLAN_STEP_REDUCE) {
        ASSERT_EQ_INT(red, -1);
        red = i;
        ASSERT_TRUE(st->pieceBytes > 0 && st->bytes % st->pieceBytes);
        K = (int)((st->bytes + st->pieceBytes - 1) / st->pieceBytes);
      }
      if (st->kind == PLAN_STEP_SIGNAL && st->inKernel) {
        ASSERT_TRUE(red >= 0 && i == red + 1 + sigs && st->lane == 0);
        ASSERT_EQ_INT((int)st->phase, PLAN_PHASE_PIECE + sigs / (n - 1));
        sigs++;
      }
      if (st->kind == PLAN_STEP_WAIT && st->phase >= PLAN_PHASE_PIECE) {
        ASSERT_TRUE(st->lane == 3 && i > red && !st->inKernel);
        waits++;
      }
      if (st->kind == PLAN_STEP_COPY && st->src.buf == PLAN_BUF_RECV) {
        ASSERT_TRUE(st->lane == 3 && st->src.rank != r && st->dst.rank == r);
        pulls++;
      }
      ASSERT_TRUE(!st->launched || (!listOrder && i == firstC));
    }
    ASSERT_TRUE(K >= 2);
    ASSERT_EQ_INT(sigs, K * (n - 1));
    ASSERT_EQ_INT(waits, pulls);
    ASSERT_TRUE(waits >= K * (n - 1) - (n - 1));
    const planStep *c0 = &s[r].steps[firstC], *c1 = &s[r].steps[firstC + 1];
    ASSERT_TRUE(c0->kind == PLAN_STEP_JOIN && c0->from == 0);
    if (listOrder) {
      ASSERT_TRUE(firstC < red && !c0->launched);
    } else { /* right after the kernel's SIGNALs: launched, then lane A */
      ASSERT_TRUE(firstC == red + 1 + sigs && c0->launched);
      ASSERT_TRUE(c1->kind == PLAN_STEP_JOIN && c1->lane == 3 && c1->from == 1 && !c1->launched);
    }
  }
  for (uint32_t sd = 1; sd <= 40; sd++) {
    ASSERT_EQ_INT(simOnce(ops, n, SIM_LIST_PER_RANK, 1, sd * 2654435761u), 0);
    ASSERT_EQ_INT(simOnce(ops, n, SIM_ROUNDS_SHARED, 1 + (int)(sd % 3), sd * 2654435761u), 0);
  }
  int deadlocks = topoDeadlocks(ops, n);
  if (listOrder) {
    printf("  control: %d of 400 dependency orders (a graph launch) deadlock\n", deadlocks);
    ASSERT_TRUE(deadlocks > 0);
  } else {
    printf("  launched: %d of 400 dependency orders deadlock\n", deadlocks);
    ASSERT_EQ_INT(deadlocks, 0);
  }
  /* piece 1's signals to two peers swapped: the executor's shape no more */
  int red = 0;
  while (s[0].steps[red].kind != PLAN_STEP_REDUCE) red++;
  planStep *a = &s[0].steps[red + n], *b = &s[0].steps[red + n + 1], keep = *a;
  ASSERT_TRUE(a->inKernel && a->phase == PLAN_PHASE_PIECE + 1 && b->phase == a->phase);
  a->peer = b->peer, b->peer = keep.peer;
  ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
  ASSERT_CONTAINS(why, "same peers in the same order");
  if (listOrder) printf("  control: %s\n", why);
  b->peer = a->peer, a->peer = keep.peer;
  ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
  /* a piece's signal missing (the last), and a peer twice in piece 0 */
  int last = red + 1;
  while (last + 1 < s[0].nsteps && s[0].steps[last + 1].kind == PLAN_STEP_SIGNAL &&
         s[0].steps[last + 1].inKernel)
    last++;
  s[0].steps[last].inKernel = 0; /* launched: the JOIN no more follows the kernel's SIGNALs */
  ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
  ASSERT_CONTAINS(why, listOrder ? "same peers in the same order" : "marked launched");
  s[0].steps[last].inKernel = 1;
  int p1 = s[0].steps[red + 2].peer;
  s[0].steps[red + 2].peer = s[0].steps[red + 1].peer;
  ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
  ASSERT_CONTAINS(why, "same peers in the same order");
  s[0].steps[red + 2].peer = p1;
  ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
  if (listOrder) {
    for (int r = 0; r < n; r++) s[r].listOrder = 0;
    ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
    ASSERT_CONTAINS(why, "is not ordered after the SIGNAL");
    printf("  control: without listOrder: %s\n", why);
  } else {
    /* lane C's JOIN from lane A taken out (every rank): rule 2 refuses it,
     * and a graph's dependency order can deadlock */
    for (int r = 0; r < n; r++) {
      int j = last + 2; /* after the launched JOIN */
      while (!(s[r].steps[j].kind == PLAN_STEP_JOIN && s[r].steps[j].lane == 3 &&
               s[r].steps[j].from == 1))
        j++;
      memmove(&s[r].steps[j], &s[r].steps[j + 1], (size_t)(s[r].nsteps - j - 1) * sizeof(planStep));
      s[r].nsteps--;
    }
    if (refusedAndDeadlocks(s, ops, n, "is not ordered after the SIGNAL",
                            "launched without lane A"))
      return 1;
    /* ... and lane C after the kernel's end instead of its launch: its JOIN
     * waits for a kernel that polls lane A's words, and a graph may queue
     * it ahead of lane A's copies */
    int relaunch[4];
    for (int r = 0; r < n; r++)
      for (int i = 0; i < s[r].nsteps; i++)
        if (s[r].steps[i].launched) relaunch[r] = i, s[r].steps[i].launched = 0;
    if (refusedAndDeadlocks(s, ops, n, "which only a kernel polls before it",
                            "lane C after the kernel's end without lane A"))
      return 1;
    for (int r = 0; r < n; r++) s[r].steps[relaunch[r]].launched = 1;
    /* a second kernel on lane 0 after the first, before lane 0 JOINs lane A:
     * its launch waits in a queue for a kernel that polls lane A's words */
    int ja = s[0].nsteps - 1;
    while (!(s[0].steps[ja].kind == PLAN_STEP_JOIN && s[0].steps[ja].lane == 0 &&
             s[0].steps[ja].from == 1))
      ja--;
    planStep keepJa = s[0].steps[ja];
    s[0].steps[ja] = s[0].steps[red];
    s[0].steps[ja].pieceBytes = 0;
    s[0].steps[ja].round = keepJa.round;
    ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
    ASSERT_CONTAINS(why, "(REDUCE, lane 0) waits for step");
    printf("  control, a second kernel after the first: %s\n", why);
    s[0].steps[ja] = keepJa;
    /* lane 0's JOIN of lane A at the end marked launched: lane A has no
     * REDUCE */
    int j = s[0].nsteps - 1;
    while (!(s[0].steps[j].kind == PLAN_STEP_JOIN && s[0].steps[j].lane == 0 &&
             s[0].steps[j].from == 1))
      j--;
    s[0].steps[j].launched = 1;
    ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
    ASSERT_CONTAINS(why, "marked launched does not follow a REDUCE in pieces");
    printf("  control: %s\n", why);
  }
  for (int r = 0; r < n; r++) planScheduleFree(&s[r]);
  return 0;
}

static int testPiecedAllReduce(void) {
  uint32_t seed = 5;
  static vecStore v;
  if (piecedAllReduce(1) || piecedAllReduce(0)) return 1;
  /* 2 and 3 ranks byte for byte, pieces reduced and signalled one by one
   * (replayColl: seed bit 5 sets kernelSignals, bit 6 listOrder), in and
   * out of place, both forms (lane C of the launched one runs while its own
   * kernel still reduces) */
  long launchedBefore = launchedBuilt;
  for (int nn = 2; nn <= 3; nn++)
    for (uint32_t sd = 0; sd < 8; sd++) {
      size_t cnt = 40000 * (size_t)nn + 7 * sd;
      makeVec(PLAN_COLL_ALLREDUCE, nn, cnt, &seed, &v);
      ASSERT_EQ_INT(replayColl(PLAN_COLL_ALLREDUCE, nn, cnt, 0, (int)(sd & 1), PLAN_ALGO_PULL1, &v,
                               (size_t)1 << 20, sd & 4 ? 4096 : 256,
                               32u | ((sd >> 1 & 1) << 6) | (sd << 7)),
                    0);
    }
  printf("  %ld schedules replayed with a JOIN marked launched, %ld of those JOINs passed while "
         "their kernel still reduced\n",
         launchedBuilt - launchedBefore, launchedEarly);
  ASSERT_TRUE(launchedBuilt > launchedBefore && launchedEarly > 0);
  /* graphs take the form over 12 and up to 40 smallest pieces: the groups
   * (no JOIN marked launched) on either side */
  for (int k = 0; k < 3; k++) {
    const size_t mins[] = {1 << 14, 1 << 12, 1 << 10}; /* total ~10x, ~39x, ~156x */
    size_t cnt = 4 * 40000 + 5;
    makeVec(PLAN_COLL_ALLREDUCE, 4, cnt, &seed, &v);
    planSchedule g;
    memset(&g, 0, sizeof(g));
    planArgs a = anyArgs(PLAN_COLL_ALLREDUCE, 1, 4, cnt, 0, 0, &v, (size_t)1 << 20);
    a.pieceMin = mins[k];
    a.kernelSignals = 1;
    ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_PULL1, &g), 0);
    long before = launchedBuilt;
    countLaunched(&g);
    ASSERT_EQ_INT((int)(launchedBuilt - before), k == 1);
    planScheduleFree(&g);
  }
  return 0;
}

/*
 * push1's AllReduce (reduce.c buildPush): every COPY writes a peer from the
 * rank's own buffers; the kernel polls the peers' PUSH+k words itself
 * (inKernel WAITs, the same peers every piece) and signals its own lane C
 * after each piece (an inKernel SIGNAL to the rank itself), which WAITs for
 * it and pushes the piece of the result. Two pieces a target up to 24
 * smallest pieces, three above. 2-4 ranks, targets of different sizes;
 * simulated queues in list order and round by round never deadlock, nor
 * do random dependency orders (a graph launch). Where a rank shares its
 * GPU (kernelSignals 0) or the pieces do not fit the scratch buffer, push1
 * runs as pull1. Controls: lane C's JOIN from lane A taken out (rule 2
 * refuses it, and a dependency order deadlocks); a lane's WAIT for its own
 * word that no kernel writes, a rank's kernel polling its own word, and a
 * kernel polling a peer's piece on a PIECE word instead of a PUSH word.
 */
static int testPushAllReduce(void) {
  char why[256];
  uint32_t seed = 11;
  static vecStore v;
  planSchedule s[4], *ops[4];
  memset(s, 0, sizeof(s));
  for (int n = 2; n <= 4; n++)
    for (int big = 0; big < 2; big++) {
      size_t count = (size_t)n * (big ? 31000 : 9000) + 5, min = 1024;
      makeVec(PLAN_COLL_ALLREDUCE, n, count, &seed, &v);
      for (int r = 0; r < n; r++) {
        planArgs a = anyArgs(PLAN_COLL_ALLREDUCE, r, n, count, 0, 0, &v, (size_t)1 << 20);
        a.pieceMin = min;
        a.kernelSignals = 1;
        a.listOrder = big;
        ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_PUSH1, &s[r]), 0);
        ASSERT_EQ_INT((int)s[r].algo, PLAN_ALGO_PUSH1);
        ops[r] = &s[r];
        size_t T = planCollOf(PLAN_COLL_ALLREDUCE)->target(&a, r, 0).bytes;
        int K = 0, polls = 0, selfSigs = 0, selfWaits = 0, pushes = 0;
        for (int i = 0; i < s[r].nsteps; i++) {
          const planStep *st = &s[r].steps[i];
          if (st->kind == PLAN_STEP_COPY) {
            ASSERT_TRUE(st->src.rank == r && st->dst.rank != r);
            pushes++;
          }
          if (st->kind == PLAN_STEP_REDUCE) {
            ASSERT_TRUE(st->pieceBytes && st->bytes == T);
            K = (int)((st->bytes + st->pieceBytes - 1) / st->pieceBytes);
          }
          if (st->kind == PLAN_STEP_WAIT && st->inKernel) {
            ASSERT_TRUE(st->peer != r && st->lane == 0 && st->phase >= PLAN_PHASE_PUSH);
            polls++;
          }
          selfSigs += st->kind == PLAN_STEP_SIGNAL && st->peer == r;
          if (st->kind == PLAN_STEP_WAIT && st->peer == r) {
            ASSERT_TRUE(st->lane == 3 && !st->inKernel);
            selfWaits++;
          }
        }
        /* two pieces up to 24 smallest pieces of target, three above */
        ASSERT_EQ_INT(K, T <= 24 * min ? 2 : 3);
        ASSERT_EQ_INT(polls, K * (n - 1));
        ASSERT_TRUE(selfSigs == K && selfWaits == K);
        ASSERT_TRUE(pushes >= 2 * K * (n - 1) - (n - 1));
      }
      ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
      for (uint32_t sd = 1; sd <= 20; sd++) {
        ASSERT_EQ_INT(simOnce(ops, n, SIM_LIST_PER_RANK, 1, sd * 2654435761u), 0);
        ASSERT_EQ_INT(simOnce(ops, n, SIM_ROUNDS_SHARED, 1 + (int)(sd % 3), sd * 2654435761u), 0);
      }
      ASSERT_EQ_INT(topoDeadlocks(ops, n), 0);
      if (n == 3 && big) {
        /* a kernel polling its own word, and lane C's WAIT for a word no
         * kernel writes (its SIGNAL moved to lane A) */
        int w = 0, c = 0;
        while (!(s[0].steps[w].kind == PLAN_STEP_WAIT && s[0].steps[w].inKernel)) w++;
        int keep = s[0].steps[w].peer;
        s[0].steps[w].peer = 0;
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
        printf("  control, the kernel polls its own word: %s\n", why);
        s[0].steps[w].peer = keep;
        /* ... a peer's piece on a PIECE word (a chain's signal may land
         * there before the reset after the kernel: plan.h) */
        planPhase ph = s[0].steps[w].phase;
        s[0].steps[w].phase = (planPhase)(PLAN_PHASE_PIECE + planPhaseGroup(ph));
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "polled on PUSH words");
        printf("  control, the kernel polls a PIECE word: %s\n", why);
        s[0].steps[w].phase = ph;
        while (!(s[0].steps[c].kind == PLAN_STEP_SIGNAL && s[0].steps[c].peer == 0)) c++;
        s[0].steps[c].inKernel = 0;
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "with peer 0");
        printf("  control, a rank signals itself outside a kernel: %s\n", why);
        s[0].steps[c].inKernel = 1;
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
        /* lane A forked before the ENTRY WAITs: its pushes may land in a
         * scratch buffer the peer's last reduction still reads */
        int e = 0, ja = 0;
        while (!(s[0].steps[e].kind == PLAN_STEP_WAIT && s[0].steps[e].phase == PLAN_PHASE_ENTRY))
          e++;
        while (!(s[0].steps[ja].kind == PLAN_STEP_JOIN && s[0].steps[ja].lane == 1)) ja++;
        ASSERT_TRUE(ja > e && s[0].steps[ja].round == s[0].steps[e].round);
        planStep fork = s[0].steps[ja];
        memmove(&s[0].steps[e + 1], &s[0].steps[e], (size_t)(ja - e) * sizeof(planStep));
        s[0].steps[e] = fork;
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "scratch buffer before any WAIT");
        printf("  control, lane A before the ENTRY WAITs: %s\n", why);
        memmove(&s[0].steps[e], &s[0].steps[e + 1], (size_t)(ja - e) * sizeof(planStep));
        s[0].steps[ja] = fork;
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
        /* a piece's SIGNAL before its push: the peer's kernel could read
         * the piece before it lands */
        int cp = 0;
        while (
            !(s[0].steps[cp].kind == PLAN_STEP_COPY && s[0].steps[cp].dst.buf == PLAN_BUF_SCRATCH))
          cp++;
        planStep push = s[0].steps[cp];
        ASSERT_TRUE(s[0].steps[cp + 1].kind == PLAN_STEP_SIGNAL &&
                    s[0].steps[cp + 1].peer == push.dst.rank);
        s[0].steps[cp] = s[0].steps[cp + 1];
        s[0].steps[cp + 1] = push;
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), -1);
        ASSERT_CONTAINS(why, "is not the PUSH of this piece");
        printf("  control, a piece signalled before its push: %s\n", why);
        s[0].steps[cp + 1] = s[0].steps[cp];
        s[0].steps[cp] = push;
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
        /* lane C's JOIN from lane A taken out (every rank) */
        for (int r = 0; r < n; r++) {
          int j = 0;
          while (!(s[r].steps[j].kind == PLAN_STEP_JOIN && s[r].steps[j].lane == 3 &&
                   s[r].steps[j].from == 1))
            j++;
          memmove(&s[r].steps[j], &s[r].steps[j + 1],
                  (size_t)(s[r].nsteps - j - 1) * sizeof(planStep));
          s[r].nsteps--;
        }
        if (refusedAndDeadlocks(s, ops, n, "is not ordered after the SIGNAL",
                                "push1 without lane C's JOIN from lane A"))
          return 1;
      }
    }
  /* byte for byte, in and out of place, both piece counts, tiny counts
   * (targets of nothing on some ranks) */
  long launchedBefore = launchedBuilt;
  for (int n = 2; n <= 3; n++)
    for (uint32_t sd = 0; sd < 12; sd++) {
      size_t cnt = sd >= 10 ? 7 + sd : (size_t)(sd & 4 ? 60000 : 9000) * (size_t)n + 7 * sd;
      makeVec(PLAN_COLL_ALLREDUCE, n, cnt, &seed, &v);
      ASSERT_EQ_INT(replayColl(PLAN_COLL_ALLREDUCE, n, cnt, 0, (int)(sd & 1), PLAN_ALGO_PUSH1, &v,
                               (size_t)1 << 20, sd & 2 ? 4096 : 1024,
                               32u | ((sd >> 3 & 1) << 6) | (sd << 7)),
                    0);
    }
  ASSERT_TRUE(launchedBuilt > launchedBefore);
  /* as pull1 where a rank shares its GPU, or the pieces do not fit */
  for (int k = 0; k < 2; k++) {
    makeVec(PLAN_COLL_ALLREDUCE, 2, 600000, &seed, &v);
    planArgs a = anyArgs(PLAN_COLL_ALLREDUCE, 0, 2, 600000, 0, 0, &v,
                         k ? (size_t)1 << 18 : (size_t)1 << 20); /* 300 KB targets */
    a.pieceMin = 1024;
    a.kernelSignals = k;
    ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_PUSH1, &s[0]), 0);
    ASSERT_EQ_INT((int)s[0].algo, PLAN_ALGO_PULL1);
  }
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r]);
  return 0;
}

/*
 * push1 of ReduceScatter, ReduceScatterV and Reduce (reduce.c buildPush
 * without lane C; as pull1 where a rank's part is empty: always a
 * Reduce's non-roots): every COPY a push from the rank's own send buffer into a
 * peer's scratch buffer, the kernel polling the peers' words, no word of
 * its own, no EXIT. 2-4 ranks, every root; planCheck, simulated queues
 * (list order, rounds, random dependency orders) and byte-for-byte
 * replays, in and out of place, in two and three pieces.
 */
static int testPushReductions(void) {
  char why[256];
  uint32_t seed = 13;
  static vecStore v;
  planSchedule s[4], *ops[4];
  memset(s, 0, sizeof(s));
  const planColl colls[] = {PLAN_COLL_REDUCESCATTER, PLAN_COLL_REDUCESCATTERV, PLAN_COLL_REDUCE};
  int replays = 0, empties = 0;
  for (size_t c = 0; c < 3; c++)
    for (int n = 2; n <= 4; n++)
      for (int big = 0; big < 2; big++) {
        /* Reduce: the root's whole buffer from every peer fits 1 MB */
        size_t count = colls[c] == PLAN_COLL_REDUCE ? (big ? 200000 : 20000) + 3
                                                    : (big ? 60000 : 9000) + 7,
               min = 1024;
        int root = (int)(count % (size_t)n);
        makeVec(colls[c], n, count, &seed, &v);
        for (int r = 0; r < n; r++) {
          planArgs a = anyArgs(colls[c], r, n, count, root, 0, &v, (size_t)1 << 20);
          a.pieceMin = min;
          a.kernelSignals = 1;
          a.listOrder = big;
          ASSERT_EQ_INT(planBuild(&a, PLAN_ALGO_PUSH1, &s[r]), 0);
          /* as pull1 where a rank's part is empty (a Reduce's non-roots,
           * a ReduceScatterV's zero counts: planPushRuns) */
          int empty = 0;
          for (int t = 0; t < n; t++) empty |= !planCollOf(colls[c])->target(&a, t, 0).bytes;
          ASSERT_EQ_INT((int)s[r].algo, empty ? PLAN_ALGO_PULL1 : PLAN_ALGO_PUSH1);
          if (empty) empties++;
          ops[r] = &s[r];
          for (int i = 0; i < s[r].nsteps && !empty; i++) {
            const planStep *st = &s[r].steps[i];
            if (st->kind == PLAN_STEP_COPY)
              ASSERT_TRUE(st->src.rank == r && st->src.buf == PLAN_BUF_SEND && st->dst.rank != r &&
                          st->dst.buf == PLAN_BUF_SCRATCH);
            ASSERT_TRUE(
                !((st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) && st->peer == r));
          }
          /* no EXIT (its polled words are PUSH words: plan.h); the
           * peers' pieces polled on them */
          int exits = 0, polls = 0;
          for (int i = 0; i < s[r].nsteps && !empty; i++) {
            const planStep *st = &s[r].steps[i];
            exits += (st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) &&
                     st->phase == PLAN_PHASE_EXIT;
            if (st->kind == PLAN_STEP_WAIT && st->inKernel) {
              ASSERT_TRUE(st->phase >= PLAN_PHASE_PUSH && st->peer != r);
              polls++;
            }
          }
          if (!empty) ASSERT_TRUE(exits == 0 && polls > 0);
        }
        ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
        for (uint32_t sd = 1; sd <= 10; sd++) {
          ASSERT_EQ_INT(simOnce(ops, n, SIM_LIST_PER_RANK, 1, sd * 2654435761u), 0);
          ASSERT_EQ_INT(simOnce(ops, n, SIM_ROUNDS_SHARED, 1 + (int)(sd % 3), sd * 2654435761u), 0);
        }
        ASSERT_EQ_INT(topoDeadlocks(ops, n), 0);
        for (int ip = 0; ip <= 1; ip++, replays++)
          ASSERT_EQ_INT(replayColl(colls[c], n, count, root, ip, PLAN_ALGO_PUSH1, &v,
                                   (size_t)1 << 20, min, 32u | ((uint32_t)big << 6) | (seed << 7)),
                        0);
      }
  printf("  %d push1 reductions replayed byte for byte (%d schedules as pull1: a part empty)\n",
         replays, empties);
  ASSERT_TRUE(empties > 0);
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r]);
  return 0;
}

/*
 * planHandshakesOnly (a rank that cannot reach a peer's buffers: the core
 * strips every rank's schedule to its SIGNALs and WAITs): for every
 * collective and algorithm, 2-4 ranks, eager and graph forms, kernels
 * allowed or not, the stripped schedules of all ranks never deadlock, in
 * list order, round by round on shared queues, or in random dependency
 * orders (a graph launch). Control: stripped as before 2026-11-29 (lanes
 * and JOINs kept, the kernel's polled WAITs left in their queues), push1's
 * AllReduce deadlocks in some dependency order.
 */
static int stripKeepingLanes(planSchedule *s) {
  int n = 0;
  for (int j = 0; j < s->nsteps; j++)
    if (s->steps[j].kind != PLAN_STEP_COPY && s->steps[j].kind != PLAN_STEP_REDUCE &&
        s->steps[j].kind != PLAN_STEP_NOTIFY) {
      s->steps[n] = s->steps[j];
      s->steps[n].launched = 0;
      s->steps[n++].inKernel = 0;
    }
  return s->nsteps = n;
}

static int testHandshakesOnly(void) {
  uint32_t seed = 17;
  static vecStore v;
  planSchedule s[4], *ops[4];
  memset(s, 0, sizeof(s));
  int cases = 0;
  for (int coll = 0; coll < PLAN_NUM_COLLS; coll++)
    for (int a = 0; a < PLAN_NUM_ALGOS; a++) {
      if (!(planCollOf((planColl)coll)->algos & PLAN_ALGO_BIT(a)) || planIsComposed((planAlgo)a))
        continue;
      for (int n = 2; n <= 4; n++)
        for (int form = 0; form < 4; form++) {
          size_t count = form & 2 ? 100000 + 3 : 1000;
          makeVec((planColl)coll, n, count, &seed, &v);
          for (int r = 0; r < n; r++) {
            planArgs x = anyArgs((planColl)coll, r, n, count, n - 1, 0, &v, (size_t)1 << 20);
            x.pieceMin = 4096;
            x.stageSlots = 2;
            x.stageIndex = 1;
            x.lineBytes = (size_t)1 << 20;
            x.kernelSignals = 1;
            x.listOrder = form & 1;
            x.stageEntry = !x.listOrder;
            ASSERT_EQ_INT(planBuild(&x, (planAlgo)a, &s[r]), 0);
            planHandshakesOnly(&s[r]);
            s[r].listOrder = 1; /* all in one lane: issued in its order */
            for (int i = 0; i < s[r].nsteps; i++)
              ASSERT_TRUE((s[r].steps[i].kind == PLAN_STEP_SIGNAL ||
                           s[r].steps[i].kind == PLAN_STEP_WAIT) &&
                          s[r].steps[i].lane == 0 && !s[r].steps[i].inKernel);
            ops[r] = &s[r];
          }
          char why[256];
          if (planCheck(s, n, why, sizeof(why)))
            TEST_FAIL("%s %s n=%d stripped: %s", planCollName((planColl)coll),
                      planAlgoName((planAlgo)a), n, why);
          ASSERT_EQ_INT(planCheck(s, n, why, sizeof(why)), 0);
          for (uint32_t sd = 1; sd <= 6; sd++) {
            ASSERT_EQ_INT(simOnce(ops, n, SIM_LIST_PER_RANK, 1, sd * 2654435761u), 0);
            ASSERT_EQ_INT(simOnce(ops, n, SIM_ROUNDS_SHARED, 1 + (int)(sd % 3), sd * 2654435761u),
                          0);
            ASSERT_EQ_INT(simOnce(ops, n, SIM_TOPO_PER_RANK, 1, sd * 2654435761u), 0);
          }
          cases++;
        }
    }
  /* the control */
  makeVec(PLAN_COLL_ALLREDUCE, 2, 100000, &seed, &v);
  for (int r = 0; r < 2; r++) {
    planArgs x = anyArgs(PLAN_COLL_ALLREDUCE, r, 2, 100000, 0, 0, &v, (size_t)1 << 20);
    x.pieceMin = 4096;
    x.kernelSignals = 1;
    ASSERT_EQ_INT(planBuild(&x, PLAN_ALGO_PUSH1, &s[r]), 0);
    ASSERT_EQ_INT((int)s[r].algo, PLAN_ALGO_PUSH1);
    stripKeepingLanes(&s[r]);
    ops[r] = &s[r];
  }
  int deadlocks = topoDeadlocks(ops, 2);
  printf("  %d stripped cases never deadlock; control, push1 stripped keeping its lanes: %d of "
         "400 dependency orders deadlock\n",
         cases, deadlocks);
  ASSERT_TRUE(deadlocks > 0);
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r]);
  return 0;
}

/* planRunEnd: every run the CUDA executor issues as one command holds steps
 * of one kind and lane, none a kernel's, and stops only where the next step
 * differs; the sweep must meet the shape that hung push1 in CUDA graphs
 * (an ENTRY WAIT right before a kernel's polled WAIT on the same lane: a
 * push1 AllReduce's rank whose peers' parts are empty), else it proves
 * nothing.
 * Forms: list order or not, kernel signals or not (a peer on this GPU),
 * kernel waits, arrival NOTIFYs, 1 byte to 100 KB. */
static int testRunEnd(void) {
  uint32_t seed = 23;
  static vecStore v;
  planSchedule s;
  memset(&s, 0, sizeof(s));
  int runs = 0, stopped = 0, pushStopped = 0, refused = 0;
  for (int coll = 0; coll < PLAN_NUM_COLLS; coll++)
    for (int a = 0; a < PLAN_NUM_ALGOS; a++) {
      if (!(planCollOf((planColl)coll)->algos & PLAN_ALGO_BIT(a)) || planIsComposed((planAlgo)a))
        continue;
      for (int n = 2; n <= 4; n++)
        for (int form = 0; form < 32; form++) {
          size_t count = form & 2 ? 100000 + 3 : form & 3 ? 1000 : 1;
          makeVec((planColl)coll, n, count, &seed, &v);
          for (int r = 0; r < n; r++) {
            planArgs x = anyArgs((planColl)coll, r, n, count, 0, 0, &v, (size_t)1 << 20);
            x.pieceMin = 4096;
            x.stageSlots = 2;
            x.stageIndex = 1;
            x.lineBytes = (size_t)1 << 20;
            x.kernelSignals = !(form & 4);
            x.kernelWait = !!(form & 8);
            x.notify = !!(form & 16);
            x.listOrder = form & 1;
            x.stageEntry = !x.listOrder;
            if (planBuild(&x, (planAlgo)a, &s)) { /* a form the planner refuses */
              ASSERT_TRUE(form & 24);             /* (only with kernelWait or notify) */
              refused++;
              continue;
            }
            for (int i = 0; i < s.nsteps; i++) {
              const planStep *st = &s.steps[i];
              if (st->inKernel) continue;
              int most = 1 + (int)((unsigned)i % 5), j = planRunEnd(&s, i, most);
              ASSERT_TRUE(j > i && j - i <= most);
              for (int k = i; k < j; k++)
                ASSERT_TRUE(s.steps[k].kind == st->kind && s.steps[k].lane == st->lane &&
                            !s.steps[k].inKernel &&
                            (st->kind != PLAN_STEP_COPY || k == i || s.steps[k].batch));
              if (j < s.nsteps && j - i < most) {
                const planStep *nx = &s.steps[j];
                int same = nx->kind == st->kind && nx->lane == st->lane;
                ASSERT_TRUE(!same || nx->inKernel || (st->kind == PLAN_STEP_COPY && !nx->batch));
                if (same && nx->inKernel) {
                  stopped++;
                  if (a == PLAN_ALGO_PUSH1 && st->kind == PLAN_STEP_WAIT) pushStopped++;
                }
              }
              runs++;
            }
          }
        }
    }
  printf("  %d runs (%d forms refused); %d end at a kernel's step of their kind and lane (%d a "
         "push1 WAIT before its kernel's polled WAIT)\n",
         runs, refused, stopped, pushStopped);
  ASSERT_TRUE(pushStopped > 0);
  planScheduleFree(&s);
  return 0;
}

/* CUDA graph words across operations: every direct algorithm of every
 * collective (staged ones have their own graph sequences above), 2-4
 * ranks, 1 byte to 100 KB (empty parts included), three operations back to
 * back in random dependency orders (a graph launch) and round by round on
 * shared queues, each rank in turn lagging, with graph words
 * (simCase.graph): no signal may land on a word its last signal still
 * holds (the reset not yet done), and nothing deadlocks. Control: AllReduce push1 on 2 ranks with
 * one part empty and its EXIT taken out, the shape a Reduce's push1 with empty parts had (the empty
 * rank has no kernel and nothing after its pushes, so its next ENTRY can overtake its peer's
 * reset): lost signals. */
static int testGraphWordsRepeat(void) {
  uint32_t seed = 29;
  static vecStore v;
  static planSchedule s[4];
  memset(s, 0, sizeof(s));
  int cases = 0, runs = 0;
  char why[256];
  for (int coll = 0; coll < PLAN_NUM_COLLS; coll++)
    for (int a = 0; a < PLAN_NUM_ALGOS; a++) {
      if (!(planCollOf((planColl)coll)->algos & PLAN_ALGO_BIT(a)) || planIsComposed((planAlgo)a) ||
          planIsStaged((planAlgo)a))
        continue;
      for (int n = 2; n <= 4; n++)
        for (int form = 0; form < 12; form++) {
          static const size_t counts[] = {1, 600, 1000, 14000, 30000, 100003};
          size_t count = counts[form % 6];
          int root = form < 6 ? 0 : n - 1;
          makeVec((planColl)coll, n, count, &seed, &v);
          simCase c = {n, 3, {{0}}, SIM_TOPO_PER_RANK, 1, 0, 1, -1, 0};
          for (int r = 0; r < n; r++) {
            planArgs x = anyArgs((planColl)coll, r, n, count, root, 0, &v, (size_t)1 << 20);
            x.pieceMin = 1024;
            x.kernelSignals = 1;
            ASSERT_EQ_INT(planBuild(&x, (planAlgo)a, &s[r]), 0);
            for (int k = 0; k < 3; k++) c.s[r][k] = &s[r];
          }
          for (uint32_t sd = 1; sd <= 24; sd++, runs++) {
            c.lag = (int)(sd % (uint32_t)(n + 1)) - 1;
            c.mode = sd % 3 ? SIM_TOPO_PER_RANK : SIM_ROUNDS_SHARED;
            c.nq = 1 + (int)(sd % 2);
            c.seed = sd * 2654435761u + (uint32_t)(n * 7 + form);
            int rc = simulate(&c, why, sizeof(why));
            if (rc)
              TEST_FAIL("%s %s n=%d count %zu root %d: %s", planCollName((planColl)coll),
                        planAlgoName((planAlgo)a), n, count, root, why);
            ASSERT_EQ_INT(rc, 0);
          }
          cases++;
        }
    }
  /* the control */
  makeVec(PLAN_COLL_ALLREDUCE, 2, 1, &seed, &v);
  simCase c = {2, 3, {{0}}, SIM_TOPO_PER_RANK, 1, 0, 1, -1, 0};
  int empty = 0;
  for (int r = 0; r < 2; r++) {
    planArgs x = anyArgs(PLAN_COLL_ALLREDUCE, r, 2, 1, 0, 0, &v, (size_t)1 << 20);
    x.pieceMin = 1024;
    x.kernelSignals = 1;
    ASSERT_EQ_INT(planBuild(&x, PLAN_ALGO_PUSH1, &s[r]), 0);
    ASSERT_EQ_INT((int)s[r].algo, PLAN_ALGO_PUSH1);
    empty += !planCollOf(PLAN_COLL_ALLREDUCE)->target(&x, r, 0).bytes;
    int m = 0;
    for (int i = 0; i < s[r].nsteps; i++)
      if (!((s[r].steps[i].kind == PLAN_STEP_SIGNAL || s[r].steps[i].kind == PLAN_STEP_WAIT) &&
            s[r].steps[i].phase == PLAN_PHASE_EXIT))
        s[r].steps[m++] = s[r].steps[i];
    s[r].nsteps = m;
    for (int k = 0; k < 3; k++) c.s[r][k] = &s[r];
  }
  ASSERT_EQ_INT(empty, 1);
  int lost = 0;
  for (uint32_t sd = 1; sd <= 1000; sd++) {
    c.lag = (int)(sd % 3) - 1;
    c.mode = sd % 3 ? SIM_TOPO_PER_RANK : SIM_ROUNDS_SHARED;
    c.nq = 1 + (int)(sd % 2);
    c.seed = sd * 2654435761u;
    int rc = simulate(&c, why, sizeof(why));
    ASSERT_TRUE(rc == 0 || rc == 2);
    lost += rc == 2;
  }
  printf("  %d cases, %d runs of three operations with graph words: no signal lost; control, "
         "push1 with an empty part and no EXIT: %d of 1000 orders lose one\n",
         cases, runs, lost);
  ASSERT_TRUE(lost > 0);
  for (int r = 0; r < 4; r++) planScheduleFree(&s[r]);
  return 0;
}

/* Builds rank r's schedule of (coll, algo, count, root) on n ranks into s
 * with the arguments of a captured call (src/core/op.c): a staged one the
 * staged operation number `staged` of its capture (1 for the first: it
 * takes the ENTRY), two graph staging slots, kernel waits. */
static int buildGraphOpAt(planColl coll, planAlgo a, int n, int r, size_t count, int root,
                          const vecStore *v, unsigned long long staged, planSchedule *s) {
  planArgs x = anyArgs(coll, r, n, count, root, 0, v, (size_t)1 << 20);
  x.pieceMin = 1024;
  x.kernelSignals = 1;
  x.stageSlots = 2;
  x.stageIndex = staged;
  x.stageEntry = staged == 1;
  x.stageSelfLate = 1;
  x.kernelWait = 1;
  x.lineBytes = (size_t)1 << 20;
  return planBuild(&x, a, s);
}

/* The same without a staged operation's number. */
static int buildGraphOp(planColl coll, planAlgo a, int n, int r, size_t count, int root,
                        const vecStore *v, planSchedule *s) {
  return buildGraphOpAt(coll, a, n, r, count, root, v, 0, s);
}

/* Moves push1's polled words from PUSH + g back onto PIECE + g, where a
 * chain's or relay's signals also land (a control's schedule; plan.h);
 * how many steps it moved. */
static int pushOntoPiece(planSchedule *s) {
  int moved = 0;
  for (int i = 0; i < s->nsteps; i++) {
    planStep *st = &s->steps[i];
    if ((st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) &&
        st->phase >= PLAN_PHASE_PUSH) {
      st->phase = (planPhase)(PLAN_PHASE_PIECE + planPhaseGroup(st->phase));
      moved++;
    }
  }
  return moved;
}

/* How many of `seeds` orders of c lose a signal (simulate's 2); -1 on a
 * deadlock or error. */
static int lostOrders(simCase *c, int seeds, char *why, size_t whylen) {
  int lost = 0;
  for (uint32_t sd = 1; sd <= (uint32_t)seeds; sd++) {
    c->lag = (int)(sd % (uint32_t)(c->n + 1)) - 1;
    c->mode = sd % 3 ? SIM_TOPO_PER_RANK : SIM_ROUNDS_SHARED;
    c->nq = 1 + (int)(sd % 2);
    c->seed = sd * 2654435761u + (uint32_t)c->n;
    int rc = simulate(c, why, whylen);
    if (rc != 0 && rc != 2) return -1;
    lost += rc == 2;
  }
  return lost;
}

/* The same with different operations one after another: 600 random
 * sequences of three (collective, algorithm, size, root) on 2-4 ranks,
 * staged ones with a captured call's arguments (their DATA words on the
 * graph staging slot of their number in the capture: simPhase). An operation may signal a rank it
 * has not heard from in it (a Broadcast's chain or relay passes PIECE on at once), so each must end
 * with its words reset before any peer can go on, or poll words no such signal reaches. Controls,
 * on 3 ranks, before two chain Broadcasts: ReduceScatter push1 (no EXIT) and AllReduce push1
 * (whose EXIT leaves after lane C's pushes, maybe before its kernel's end, where in a graph its
 * polled words are reset) with those words moved from PUSH back onto PIECE: both lose signals. */
static int testGraphWordsMixed(void) {
  uint32_t seed = 31;
  static vecStore v[3];
  static planSchedule s[4][3];
  memset(s, 0, sizeof(s));
  char why[256];
  static const size_t counts[] = {1, 600, 1000, 14000, 30000, 100003};
  int runs = 0, stagedOps = 0;
  for (int trial = 0; trial < 600; trial++) {
    int n = 2 + (int)(stageRand(&seed) % 3);
    simCase c = {n, 6, {{0}}, SIM_TOPO_PER_RANK, 1, 0, 1, -1, 0}; /* the three, replayed */
    char desc[3][96];
    unsigned long long staged = 0; /* the capture's staged operations so far */
    for (int k = 0; k < 3; k++) {
      int coll, a, root;
      size_t count;
      unsigned long long idx;
      for (;;) { /* one every rank's planner builds */
        coll = (int)(stageRand(&seed) % PLAN_NUM_COLLS);
        a = (int)(stageRand(&seed) % PLAN_NUM_ALGOS);
        if (!(planCollOf((planColl)coll)->algos & PLAN_ALGO_BIT(a)) || planIsComposed((planAlgo)a))
          continue;
        count = counts[stageRand(&seed) % 6];
        root = (int)(stageRand(&seed) % (uint32_t)n);
        idx = planIsStaged((planAlgo)a) ? staged + 1 : 0;
        makeVec((planColl)coll, n, count, &seed, &v[k]);
        int built = 1;
        for (int r = 0; r < n && built; r++)
          built = buildGraphOpAt((planColl)coll, (planAlgo)a, n, r, count, root, &v[k], idx,
                                 &s[r][k]) == 0;
        if (built) break;
      }
      staged += idx != 0;
      stagedOps += idx != 0;
      snprintf(desc[k], sizeof(desc[k]), "%s %s %zu root %d%s", planCollName((planColl)coll),
               planAlgoName((planAlgo)a), count, root, idx ? " (staged)" : "");
      for (int r = 0; r < n; r++) c.s[r][k] = c.s[r][k + 3] = &s[r][k];
    }
    int lost = lostOrders(&c, 6 * (n + 1), why, sizeof(why));
    runs += 6 * (n + 1);
    if (lost)
      TEST_FAIL("n=%d: %s; %s; %s: %s", n, desc[0], desc[1], desc[2], lost < 0 ? "deadlock" : why);
    ASSERT_EQ_INT(lost, 0);
  }
  /* the controls, and the same sequences as built */
  int lostCtl[2], lostBuilt[2];
  for (int ctl = 0; ctl < 2; ctl++) {
    makeVec(PLAN_COLL_BROADCAST, 3, 1000, &seed, &v[1]);
    for (int built = 0; built < 2; built++) {
      planColl first = ctl ? PLAN_COLL_ALLREDUCE : PLAN_COLL_REDUCESCATTER;
      makeVec(first, 3, 30000, &seed, &v[0]);
      simCase c = {3, 3, {{0}}, SIM_TOPO_PER_RANK, 1, 0, 1, -1, 0};
      for (int r = 0; r < 3; r++) {
        ASSERT_EQ_INT(buildGraphOp(first, PLAN_ALGO_PUSH1, 3, r, 30000, 0, &v[0], &s[r][0]), 0);
        ASSERT_EQ_INT((int)s[r][0].algo, PLAN_ALGO_PUSH1);
        if (!built) ASSERT_TRUE(pushOntoPiece(&s[r][0]) > 0);
        ASSERT_EQ_INT(
            buildGraphOp(PLAN_COLL_BROADCAST, PLAN_ALGO_CHAIN, 3, r, 1000, 1, &v[1], &s[r][1]), 0);
        c.s[r][0] = &s[r][0];
        c.s[r][1] = c.s[r][2] = &s[r][1];
      }
      int lost = lostOrders(&c, 1000, why, sizeof(why));
      ASSERT_TRUE(lost >= 0);
      (built ? lostBuilt : lostCtl)[ctl] = lost;
    }
  }
  printf("  600 sequences of three operations (%d staged; %d runs) with graph words: no signal "
         "lost;\n"
         "  controls before two chain Broadcasts, of 1000 orders, push1's polled words on PIECE "
         "instead of PUSH: ReduceScatter %d lose one (as built %d), AllReduce %d (as built %d)\n",
         stagedOps, runs, lostCtl[0], lostBuilt[0], lostCtl[1], lostBuilt[1]);
  ASSERT_TRUE(stagedOps > 0);
  ASSERT_TRUE(lostCtl[0] > 0 && lostCtl[1] > 0);
  ASSERT_TRUE(lostBuilt[0] == 0 && lostBuilt[1] == 0);
  for (int r = 0; r < 4; r++)
    for (int k = 0; k < 3; k++) planScheduleFree(&s[r][k]);
  return 0;
}

/* Puts a queued step (a NOTIFY standing for the reset's memory operations)
 * on the lane of s's REDUCE in pieces right after step `at` (after the
 * kernel's last step where `at` < 0); 1 when it found the REDUCE. */
static int queueReset(planSchedule *s, int at) {
  int red = -1, last;
  for (int i = 0; i < s->nsteps && red < 0; i++)
    if (s->steps[i].kind == PLAN_STEP_REDUCE && s->steps[i].pieceBytes) red = i;
  if (red < 0) return 0;
  for (last = red; last + 1 < s->nsteps && s->steps[last + 1].lane == s->steps[red].lane &&
                   s->steps[last + 1].kind == PLAN_STEP_SIGNAL && s->steps[last + 1].inKernel;)
    last++;
  if (at < 0) at = last;
  int rd = s->steps[at].round;
  if (planAddSync(s, PLAN_STEP_SIGNAL, 0, 0, PLAN_PHASE_ENTRY)) return -1;
  planStep x = s->steps[s->nsteps - 1];
  x.kind = PLAN_STEP_NOTIFY;
  x.peer = 0;
  x.lane = s->steps[red].lane;
  x.round = rd;
  x.inKernel = 0;
  memmove(&s->steps[at + 2], &s->steps[at + 1],
          (size_t)(s->nsteps - 1 - (at + 1)) * sizeof(planStep));
  s->steps[at + 1] = x;
  return 1;
}

/* push1's PUSH words' reset in a CUDA graph (plan.h planPushResetAt; the
 * CUDA executor's memory operations on the kernel's lane): as a queued step
 * there that alone resets the words (simCase.pushReset), ReduceScatter,
 * ReduceScatterV and AllReduce push1 on 2-4 ranks, parts of every rank and
 * tiny AllReduces (ranks with no part: no kernel; ranks whose peers have
 * none: no lane A, the reset right after the kernel), three operations,
 * 400 random dependency orders each (a graph launch, one queue per rank:
 * CUDA_DEVICE_MAX_CONNECTIONS=1) with graph words: no deadlock, no signal
 * lost. Controls: the reset right after the kernel (a review's finding: a
 * launch may queue it ahead of lane A's pushes and signals, which the
 * peers' kernels need before it can end) deadlocks; no reset at all loses
 * the next operation's signals. */
static int testPushResetQueued(void) {
  static vecStore v;
  static planSchedule s[4];
  uint32_t seed = 77;
  char why[256];
  const planColl colls[] = {PLAN_COLL_REDUCESCATTER, PLAN_COLL_REDUCESCATTERV, PLAN_COLL_ALLREDUCE};
  const size_t counts[] = {30000, 130, 70};
  int cases = 0, noLaneA = 0, dead[3] = {0}, lost[3] = {0}, runs[3] = {0};
  for (size_t ci = 0; ci < 3; ci++)
    for (size_t cn = 0; cn < 3; cn++)
      for (int n = 2; n <= 4; n++)
        for (int form = 0; form < 3; form++) { /* 0 as built, 1 and 2 the controls */
          size_t count = counts[cn];
          memset(s, 0, sizeof(s));
          makeVec(colls[ci], n, count, &seed, &v);
          simCase c = {n, 3, {{0}}, SIM_TOPO_PER_RANK, 1, 0, 1, -1, 1};
          int asPull = 0, kernels = 0; /* a zero part but an AllReduce's: pull1 (planPushRuns) */
          for (int r = 0; r < n; r++) {
            ASSERT_EQ_INT(buildGraphOp(colls[ci], PLAN_ALGO_PUSH1, n, r, count, 0, &v, &s[r]), 0);
            asPull |= s[r].algo != PLAN_ALGO_PUSH1;
          }
          for (int r = 0; r < n && !asPull; r++) {
            int red = 0, pushes = 0;
            while (red < s[r].nsteps &&
                   !(s[r].steps[red].kind == PLAN_STEP_REDUCE && s[r].steps[red].pieceBytes))
              red++;
            for (int i = 0; i < s[r].nsteps; i++)
              pushes +=
                  s[r].steps[i].kind == PLAN_STEP_SIGNAL && s[r].steps[i].phase >= PLAN_PHASE_PUSH;
            if (red < s[r].nsteps) {
              int at = planPushResetAt(&s[r], red);
              /* after lane 0's JOIN of lane A, or with no lane A right
               * after the kernel (its last SIGNAL, or the REDUCE) */
              if (pushes)
                ASSERT_TRUE(s[r].steps[at].kind == PLAN_STEP_JOIN && s[r].steps[at].lane == 0 &&
                            s[r].steps[at].from == 1);
              else
                ASSERT_TRUE(at >= red && (at + 1 == s[r].nsteps || s[r].steps[at + 1].lane != 0 ||
                                          !s[r].steps[at + 1].inKernel));
              noLaneA += !pushes && form == 0;
              kernels++;
              if (form < 2) ASSERT_EQ_INT(queueReset(&s[r], form ? -1 : at), 1);
            }
            for (int k = 0; k < 3; k++) c.s[r][k] = &s[r];
          }
          if (asPull || !kernels || (form == 1 && noLaneA && count < 30000)) {
            for (int r = 0; r < n; r++) planScheduleFree(&s[r]);
            continue;
          }
          for (uint32_t sd = 1; sd <= 400; sd++) {
            c.lag = (int)(sd % (uint32_t)(n + 1)) - 1;
            c.seed = sd * 2654435761u + (uint32_t)n;
            int rc = simulate(&c, why, sizeof(why));
            ASSERT_TRUE(rc >= 0);
            dead[form] += rc == 1;
            lost[form] += rc == 2;
            runs[form]++;
            if (form == 0 && rc)
              TEST_FAIL("%s push1 n=%d count %zu: %s", planCollName(colls[ci]), n, count, why);
            ASSERT_TRUE(form || !rc);
          }
          cases += form == 0;
          for (int r = 0; r < n; r++) planScheduleFree(&s[r]);
        }
  printf("  %d cases (%d ranks with no lane A), 400 orders each: no deadlock, no signal lost; "
         "controls: the reset right after the kernel, %d of %d orders deadlock; no reset, %d of %d "
         "lose a signal\n",
         cases, noLaneA, dead[1], runs[1], lost[2], runs[2]);
  ASSERT_TRUE(cases >= 10 && noLaneA > 0 && dead[1] > 0 && lost[2] > 0);
  return 0;
}

int main(void) {
  RUN(testAllCases);
  RUN(testExitOrder);
  RUN(testPiecedReduce);
  RUN(testPiecedThirds);
  RUN(testPiecedAllReduce);
  RUN(testPushAllReduce);
  RUN(testPushReductions);
  RUN(testHandshakesOnly);
  RUN(testRunEnd);
  RUN(testGraphWordsRepeat);
  RUN(testGraphWordsMixed);
  RUN(testPushResetQueued);
  RUN(testEveryCollective);
  RUN(testLinesMoveRanks);
  RUN(testAlltoallvForms);
  RUN(testArrivalEarly);
  RUN(testQueueSafety);
  RUN(testQueueSafetyControls);
  RUN(testKernelWait);
  RUN(testStageSm);
  RUN(testStageSmMove);
  RUN(testStageSmMoveRanks);
  RUN(testStageLl);
  RUN(testSmMoveSequences);
  RUN(testStagedProtocol);
  RUN(testStagedShape);
  RUN(testGraphStagedProtocol);
  RUN(testCheckEntry);
  RUN(testRotatedOrder);
  RUN(testGraphPiecePhases);
  RUN(testPullsAcross);
  RUN(testTwoShot);
  RUN(testTwoShotSequences);
  RUN(testLineTokenSequences);
  RUN(testLanes);
  TEST_EXIT();
}
