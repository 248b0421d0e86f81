/*
 * planCheck: the queue-safety rules of plan.h, checked on the schedules of
 * one operation (every rank's; a rank's own PIECE words, which push1's
 * kernel writes for its lane C, pair as a peer's would), and that every step that reads or writes a
 * peer's buffers follows a WAIT for that peer and precedes the EXIT to it.
 *
 * Ancestry within a rank ("step a comes before step b in its lane and JOIN
 * order") is computed with vector clocks over lanes: clock[i][m] is how many
 * steps of lane m are done before step i may start, counting i itself on its
 * own lane. Step a (the k-th of its lane) precedes step b iff
 * clock[b][lane(a)] > k.
 */
#include "plan_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (errlen) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static const char *kindName(planStepKind k) {
  static const char *const names[] = {"COPY", "SIGNAL", "WAIT", "JOIN", "REDUCE", "NOTIFY"};
  return (unsigned)k <= PLAN_STEP_NOTIFY ? names[k] : "?";
}

/* Whether l is rank p's send or receive buffer (the caller's memory, which
 * EXIT hands back; staging and line slots are the library's). */
static int touchesUser(planLoc l, int p) {
  return l.rank == p && (l.buf == PLAN_BUF_SEND || l.buf == PLAN_BUF_RECV);
}
/* Whether step S (a COPY or a REDUCE) reads or writes rank p's buffers. */
static int stepTouches(const planSchedule *s, const planStep *S, int p) {
  if (S->kind == PLAN_STEP_COPY) return touchesUser(S->src, p) || touchesUser(S->dst, p);
  if (S->kind != PLAN_STEP_REDUCE) return 0;
  int t = touchesUser(S->dst, p);
  for (int k = 0; k < S->nsrc; k++) t |= touchesUser(s->srcs[S->src0 + k], p);
  return t;
}

static int findSync(const planSchedule *s, planStepKind kind, int peer, int ph);

/* One rank alone: lanes, rounds, JOIN structure, rule 2, EXIT's order. */
static int checkRank(const planSchedule *s, int n, char *err, size_t errlen) {
  int r = s->rank, nl = s->nlanes, rc = 0;
  if (s->nsteps == 0) return 0;
  if (nl < 1 || nl > PLAN_MAX_LANES(n))
    return fail(err, errlen, "rank %d: %d lanes for %d ranks", r, nl, n);
  int *clock = calloc((size_t)s->nsteps * (size_t)nl, sizeof(int));
  int *last = calloc((size_t)nl * (size_t)nl, sizeof(int)); /* clock after each lane's last step */
  int *ord = calloc((size_t)s->nsteps, sizeof(int));        /* index of a step within its lane */
  int *count = calloc((size_t)nl, sizeof(int));
  int *joinedBack = calloc((size_t)nl, sizeof(int)); /* lane 0 joined lane l after its last step */
  int *pend = calloc((size_t)nl * (size_t)nl, sizeof(int)); /* polled JOINs for a lane's REDUCE */
  int *after = malloc((size_t)s->nsteps * sizeof(int)); /* a kernel's SIGNAL: its REDUCE, or -1 */
  /* pre[i], for a REDUCE: its clock before the JOINs its kernel polls
   * (what its launch waits for). */
  int *pre = calloc((size_t)s->nsteps * (size_t)nl, sizeof(int));
  int *lastStep = malloc((size_t)nl * sizeof(int)); /* each lane's last step so far, or -1 */
  /* Issue ancestry: ic[i][m] is how many steps of lane m are issued before
   * step i by JOINs and lane order alone, which a CUDA graph's launch
   * keeps; a JOIN a kernel polls is no such edge (the kernel only reads a
   * word), so unlike clock it leaves them out. A JOIN marked launched
   * counts its REDUCE as issued (ic[i][m] > the REDUCE's index in lane m):
   * by any edge, a REDUCE counted so is running or done before step i. */
  int *ic = calloc((size_t)s->nsteps * (size_t)nl, sizeof(int));
  int *lastIc = calloc((size_t)nl * (size_t)nl, sizeof(int));
  if (!clock || !last || !ord || !count || !joinedBack || !pend || !after || !pre || !lastStep ||
      !ic || !lastIc) {
    rc = fail(err, errlen, "out of memory");
    goto out;
  }
  int maxRound = -1;
  for (int l = 0; l < nl; l++) lastStep[l] = -1;
  for (int i = 0; i < s->nsteps && !rc; i++) {
    const planStep *st = &s->steps[i];
    int L = st->lane;
    /* SIGNALs a kernel writes after its REDUCE in pieces (plan.h
     * pieceBytes): right after it in the list, on its lane */
    const planStep *B = i ? &s->steps[i - 1] : NULL;
    after[i] = -1;
    if (st->kind == PLAN_STEP_SIGNAL && st->inKernel && B && B->lane == L)
      after[i] = B->kind == PLAN_STEP_REDUCE && B->pieceBytes ? i - 1 : after[i - 1];
    if (L < 0 || L >= nl) {
      rc = fail(err, errlen, "rank %d step %d: lane %d outside 0..%d", r, i, L, nl - 1);
      break;
    }
    if (st->round < maxRound || st->round < 0) {
      rc = fail(err, errlen, "rank %d step %d (%s): round %d listed after round %d", r, i,
                kindName(st->kind), st->round, maxRound);
      break;
    }
    maxRound = st->round;
    /* A rank signals itself only from a kernel, after its REDUCE in pieces
     * (push1: piece k of its result is reduced), for a WAIT of a lane. */
    int self = st->peer == r && (st->kind == PLAN_STEP_SIGNAL ? after[i] >= 0 : !st->inKernel) &&
               st->phase >= PLAN_PHASE_PIECE && st->phase < PLAN_PHASE_PUSH;
    if ((st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) &&
        (st->peer < 0 || st->peer >= n || (st->peer == r && !self) ||
         (unsigned)st->phase >= PLAN_NUM_PHASES)) {
      rc = fail(err, errlen, "rank %d step %d: %s with peer %d, phase %d", r, i, kindName(st->kind),
                st->peer, (int)st->phase);
      break;
    }
    /* A kernel polls a peer's piece on PUSH words: reset after the kernel
     * in a CUDA graph, they are words no other operation writes (plan.h). */
    if (st->kind == PLAN_STEP_WAIT && st->inKernel && st->phase >= PLAN_PHASE_PIECE &&
        st->phase < PLAN_PHASE_PUSH) {
      rc = fail(err, errlen,
                "rank %d step %d: a kernel polls rank %d's PIECE+%d word (a peer's piece is "
                "polled on PUSH words)",
                r, i, st->peer, planPhaseGroup(st->phase));
      break;
    }
    if (st->kind == PLAN_STEP_NOTIFY && (st->peer < 0 || st->peer >= n || st->inKernel)) {
      rc = fail(err, errlen, "rank %d step %d: NOTIFY of block %d", r, i, st->peer);
      break;
    }
    if (st->kind == PLAN_STEP_JOIN && (st->from < 0 || st->from >= nl || st->from == L)) {
      rc = fail(err, errlen, "rank %d step %d: lane %d joins lane %d", r, i, L, st->from);
      break;
    }
    /* Lanes other than 0 open with a JOIN from lane 0. */
    if (L > 0 && count[L] == 0 && !(st->kind == PLAN_STEP_JOIN && st->from == 0)) {
      rc = fail(err, errlen, "rank %d step %d: lane %d starts with %s, not a JOIN from lane 0", r,
                i, L, kindName(st->kind));
      break;
    }
    int *c = &clock[(size_t)i * (size_t)nl], *q = &ic[(size_t)i * (size_t)nl];
    memcpy(c, &last[(size_t)L * (size_t)nl], (size_t)nl * sizeof(int));
    memcpy(q, &lastIc[(size_t)L * (size_t)nl], (size_t)nl * sizeof(int));
    if (st->kind == PLAN_STEP_JOIN && st->launched) {
      /* After the launch of lane `from`'s last REDUCE, in pieces, with
       * nothing after it on that lane but its kernel's SIGNALs: what that
       * launch waited for, and the launch itself. */
      int R = lastStep[st->from];
      if (R >= 0 && after[R] >= 0) R = after[R];
      if (st->inKernel || R < 0 || s->steps[R].kind != PLAN_STEP_REDUCE ||
          !s->steps[R].pieceBytes || R + 1 >= s->nsteps || after[R + 1] != R) {
        rc = fail(err, errlen,
                  "rank %d step %d: a JOIN marked launched does not follow a REDUCE in pieces on "
                  "lane %d (with only its kernel's SIGNALs, at least one, after it)",
                  r, i, st->from);
        break;
      }
      const int *from = &pre[(size_t)R * (size_t)nl], *fq = &ic[(size_t)R * (size_t)nl];
      for (int m = 0; m < nl; m++) {
        if (from[m] > c[m]) c[m] = from[m];
        if (fq[m] > q[m]) q[m] = fq[m];
      }
    } else if (st->kind == PLAN_STEP_JOIN) {
      /* A polled JOIN (inKernel) orders only the REDUCE whose kernel polls
       * it, and what follows that REDUCE: the steps between them are issued
       * before the kernel has seen the word. */
      const int *from = &last[(size_t)st->from * (size_t)nl];
      const int *fq = &lastIc[(size_t)st->from * (size_t)nl];
      int *into = st->inKernel ? &pend[(size_t)L * (size_t)nl] : c;
      for (int m = 0; m < nl; m++) {
        if (from[m] > into[m]) into[m] = from[m];
        if (!st->inKernel && fq[m] > q[m]) q[m] = fq[m];
      }
      if (L == 0) joinedBack[st->from] = count[st->from];
    }
    if (st->kind == PLAN_STEP_REDUCE) {
      memcpy(&pre[(size_t)i * (size_t)nl], c, (size_t)nl * sizeof(int));
      for (int m = 0; m < nl; m++) {
        int *p = &pend[(size_t)L * (size_t)nl + (size_t)m];
        if (*p > c[m]) c[m] = *p;
        *p = 0;
      }
    }
    ord[i] = count[L]++;
    c[L] = q[L] = ord[i] + 1;
    lastStep[L] = i;
    memcpy(&last[(size_t)L * (size_t)nl], c, (size_t)nl * sizeof(int));
    memcpy(&lastIc[(size_t)L * (size_t)nl], q, (size_t)nl * sizeof(int));
  }
  /* A step that sits in a queue is issued after everything it waits for:
   * else, where a graph's launch puts it ahead of a step it waits for in
   * one queue, it holds that step back (a step after a kernel that polls
   * another lane's words, before a JOIN of that lane). A kernel's launch
   * (a REDUCE) waits in its queue for what came before it on its lane and
   * JOINs (pre), not for what it polls; a kernel's own steps (inKernel) sit
   * in no queue. List order issues every step after those listed before
   * it. */
  for (int i = 0; i < s->nsteps && !rc && !s->listOrder; i++) {
    const planStep *st = &s->steps[i];
    if (st->inKernel) continue;
    const int *c = st->kind == PLAN_STEP_REDUCE ? &pre[(size_t)i * (size_t)nl]
                                                : &clock[(size_t)i * (size_t)nl];
    const int *q = &ic[(size_t)i * (size_t)nl];
    for (int m = 0; m < nl && !rc; m++)
      if (m != st->lane && q[m] < c[m])
        rc = fail(err, errlen,
                  "rank %d step %d (%s, lane %d) waits for step %d of lane %d, which only a kernel "
                  "polls before it: a graph's launch may queue it ahead of that step",
                  r, i, kindName(st->kind), st->lane, c[m] - 1, m);
  }
  if (!rc && maxRound + 1 != s->nrounds)
    rc = fail(err, errlen, "rank %d: nrounds %d but the last round is %d", r, s->nrounds, maxRound);
  /* Lane 0 joins every other lane after that lane's last step. */
  for (int l = 1; l < nl && !rc; l++)
    if (count[l] > 0 && joinedBack[l] != count[l])
      rc = fail(err, errlen, "rank %d: lane 0 does not join lane %d after its last step", r, l);
  /* The SIGNALs a kernel writes after its REDUCE in pieces: the
   * executor's shape, every piece k in order, each to the same peers in the
   * same order (at most PLAN_SM_MAX_PEERS), phase PIECE+k. */
  for (int i = 0; i < s->nsteps && !rc; i++) {
    int peers = 0;
    if (i + 1 >= s->nsteps || after[i + 1] != i) continue;
    if (planPieceSignals(s, i, &peers) < 0)
      rc = fail(err, errlen,
                "rank %d: the SIGNALs its kernel writes after the REDUCE in pieces (step %d) are "
                "not every piece in order, each to the same peers in the same order (at most %d)",
                r, i, PLAN_SM_MAX_PEERS);
  }
  /* A step a kernel does (inKernel: a COPY or a DATA or EXIT SIGNAL it
   * does, a DATA or EXIT WAIT or a JOIN it polls) is followed on its lane by
   * more such steps, then the REDUCE whose kernel it is; the steps one
   * launch takes (all but a JOIN) are consecutive in the list, at most
   * PLAN_SM_MAX_PEERS copies and as many signals, and its SIGNALs and WAITs
   * are of one phase (the executor polls one phase's words). */
  int moves = 0, sigs = 0, phase = -1;
  for (int w = 0; w < s->nsteps && !rc; w++) {
    const planStep *W = &s->steps[w];
    if (!W->inKernel || after[w] >= 0) {
      if (W->kind == PLAN_STEP_REDUCE) moves = sigs = 0, phase = -1;
      continue;
    }
    int join = W->kind == PLAN_STEP_JOIN;
    /* a WAIT of PUSH+k that the kernel of a REDUCE in pieces polls before
     * piece k (push1; checked with the REDUCE below) */
    int pieceWait = W->kind == PLAN_STEP_WAIT && W->phase >= PLAN_PHASE_PIECE;
    int next = w + 1;
    while ((join || pieceWait) && next < s->nsteps && s->steps[next].lane != W->lane) next++;
    const planStep *N = next < s->nsteps ? &s->steps[next] : NULL;
    moves += W->kind == PLAN_STEP_COPY;
    sigs += W->kind == PLAN_STEP_SIGNAL;
    int sync = (W->kind == PLAN_STEP_SIGNAL || W->kind == PLAN_STEP_WAIT) && !pieceWait;
    int kindOk = join || pieceWait || W->kind == PLAN_STEP_COPY ||
                 (sync && (W->phase == PLAN_PHASE_DATA || W->phase == PLAN_PHASE_EXIT) &&
                  (phase < 0 || phase == (int)W->phase));
    if (sync && phase < 0) phase = (int)W->phase;
    if (!kindOk || !N || N->lane != W->lane ||
        !(N->kind == PLAN_STEP_REDUCE || (N->inKernel && N->kind != PLAN_STEP_REDUCE)))
      rc = fail(err, errlen,
                "rank %d step %d: %s marked inKernel is not followed on lane %d by the REDUCE "
                "whose kernel does it (or is not a COPY, a SIGNAL or WAIT of the kernel's one "
                "phase, DATA or EXIT, or a JOIN)",
                r, w, kindName(W->kind), W->lane);
    else if (moves > PLAN_SM_MAX_PEERS || sigs > PLAN_SM_MAX_PEERS)
      rc = fail(err, errlen, "rank %d step %d: one kernel does more than %d copies or signals", r,
                w, PLAN_SM_MAX_PEERS);
  }
  /* Rule 2: a WAIT follows every SIGNAL of its rank from an earlier round
   * (not one that a kernel polls: it holds no queue). A SIGNAL a kernel
   * writes after its REDUCE R (plan.h) comes before a WAIT that follows its
   * own lane's step, or R's launch and everything R's kernel polls (R's
   * clock on every other lane), or, in a listOrder schedule, R in the
   * list. */
  for (int w = 0; w < s->nsteps && !rc; w++) {
    const planStep *W = &s->steps[w];
    if (W->kind != PLAN_STEP_WAIT || W->inKernel) continue;
    const int *cw = &clock[(size_t)w * (size_t)nl], *iw = &ic[(size_t)w * (size_t)nl];
    for (int i = 0; i < s->nsteps && !rc; i++) {
      const planStep *S = &s->steps[i];
      if (S->kind != PLAN_STEP_SIGNAL || S->round >= W->round) continue;
      int before = cw[S->lane] > ord[i], R = after[i];
      if (!before && R >= 0 && s->listOrder) before = w > R;
      if (!before && R >= 0 && iw[S->lane] > ord[R]) {
        const int *cr = &clock[(size_t)R * (size_t)nl];
        before = 1;
        for (int m = 0; m < nl; m++)
          if (m != S->lane && cw[m] < cr[m]) before = 0;
      }
      if (!before)
        rc = fail(err, errlen,
                  "rank %d: WAIT of round %d (step %d, lane %d) is not ordered after the SIGNAL "
                  "of round %d (step %d, lane %d): a shared hardware queue could deadlock",
                  r, W->round, w, W->lane, S->round, i, S->lane);
    }
  }
  /* A REDUCE in pieces (plan.h pieceBytes): its lane's steps just before it
   * are, per piece k = 0, 1, ... in order, one polled JOIN of phase
   * PIECE+k, or (push1) inKernel WAITs of PUSH+k for the same peers in
   * the same order every piece; one form for all pieces. */
  for (int i = 0; i < s->nsteps && !rc; i++) {
    const planStep *R = &s->steps[i];
    if (R->kind != PLAN_STEP_REDUCE || !R->pieceBytes) continue;
    size_t K = (R->bytes + R->pieceBytes - 1) / R->pieceBytes;
    int ok = K >= 1 && K <= PLAN_PIECE_GROUPS && R->pieceBytes % 256 == 0;
    int j = i - 1, m = 0; /* m: the steps before R on its lane that gate pieces */
    for (; j >= 0; j--) {
      const planStep *J = &s->steps[j];
      if (J->lane != R->lane) continue;
      if (!J->inKernel || !(J->kind == PLAN_STEP_JOIN || J->kind == PLAN_STEP_WAIT) ||
          J->phase < PLAN_PHASE_PIECE)
        break;
      m++;
    }
    int per = m && K ? m / (int)K : 0; /* steps per piece */
    const planStep *G[PLAN_PIECE_GROUPS * PLAN_SM_MAX_PEERS];
    ok = ok && per >= 1 && (size_t)m == K * (size_t)per && m <= (int)(sizeof(G) / sizeof(*G));
    for (int t = 0, at = j + 1; ok && t < m; at++)
      if (s->steps[at].lane == R->lane) G[t++] = &s->steps[at];
    for (int t = 0; t < m && ok; t++) {
      int base = G[t]->kind == PLAN_STEP_JOIN ? PLAN_PHASE_PIECE : PLAN_PHASE_PUSH;
      ok = (int)G[t]->phase == base + t / per && G[t]->kind == G[0]->kind &&
           (G[t]->kind == PLAN_STEP_JOIN ? per == 1
                                         : G[t]->peer == G[t % per]->peer && G[t]->peer != r);
      for (int q = 0; q < t && t < per && ok; q++) ok = G[q]->peer != G[t]->peer;
    }
    if (!ok)
      rc = fail(err, errlen,
                "rank %d step %d: a REDUCE in pieces of %zu bytes is not preceded on lane %d by "
                "one polled JOIN per piece, or by WAITs it polls for the same peers each piece "
                "(phases PIECE+0..%zu, WAITs PUSH+0..%zu, at most %d pieces of 256-byte "
                "multiples)",
                r, i, R->pieceBytes, R->lane, K ? K - 1 : 0, K ? K - 1 : 0, PLAN_PIECE_GROUPS);
  }
  /* EXIT to peer p ("I am done with your buffers") follows every step of
   * this rank that reads or writes p's send or receive buffer. */
  for (int x = 0; x < s->nsteps && !rc; x++) {
    const planStep *X = &s->steps[x];
    if (X->kind != PLAN_STEP_SIGNAL || X->phase != PLAN_PHASE_EXIT) continue;
    const int *cx = &clock[(size_t)x * (size_t)nl];
    for (int i = 0; i < s->nsteps && !rc; i++) {
      const planStep *S = &s->steps[i];
      if (stepTouches(s, S, X->peer) && i != x && cx[S->lane] <= ord[i])
        rc = fail(err, errlen,
                  "rank %d: EXIT to rank %d (step %d, lane %d) is not ordered after step %d "
                  "(%s, lane %d), which touches that rank's buffers",
                  r, X->peer, x, X->lane, i, kindName(S->kind), S->lane);
    }
  }
  /* ENTRY's side: a step that reads or writes peer p's send or receive
   * buffer is ordered after a WAIT for p (any phase: p's ENTRY, or a signal
   * p raises only once it is in the operation), so that p's buffers are
   * ready before they are touched. */
  for (int i = 0; i < s->nsteps && !rc; i++) {
    const planStep *S = &s->steps[i];
    const int *ci = &clock[(size_t)i * (size_t)nl];
    for (int p = 0; p < n && !rc; p++) {
      if (p == r || !stepTouches(s, S, p)) continue;
      int waited = 0;
      for (int w = 0; w < s->nsteps && !waited; w++) {
        const planStep *W = &s->steps[w];
        waited = W->kind == PLAN_STEP_WAIT && W->peer == p && w != i && ci[W->lane] > ord[w];
      }
      if (!waited)
        rc = fail(err, errlen,
                  "rank %d step %d (%s, lane %d) touches rank %d's buffers before any WAIT for "
                  "that rank: they may not be ready",
                  r, i, kindName(S->kind), S->lane, p);
    }
  }
  /* A COPY into peer p's scratch buffer (push1) follows a WAIT for p (p's
   * ENTRY: its previous reduction no longer reads the buffer), and the j-th
   * such COPY on its lane is followed there, before the next one, by the
   * SIGNAL of PUSH+j to p (p's kernel polls that word before it reads
   * piece j: buildPush pushes a peer's pieces in order, one a lane step). */
  for (int i = 0; i < s->nsteps && !rc; i++) {
    const planStep *S = &s->steps[i];
    int p = S->dst.rank, j = 0;
    if (S->kind != PLAN_STEP_COPY || S->dst.buf != PLAN_BUF_SCRATCH || p == r) continue;
    const int *ci = &clock[(size_t)i * (size_t)nl];
    int waited = 0, told = 0;
    for (int w = 0; w < s->nsteps && !waited; w++) {
      const planStep *W = &s->steps[w];
      waited = W->kind == PLAN_STEP_WAIT && W->peer == p && ci[W->lane] > ord[w];
    }
    for (int g = 0; g < i; g++) /* this COPY's place among the lane's into p's scratch */
      j += s->steps[g].lane == S->lane && s->steps[g].kind == PLAN_STEP_COPY &&
           s->steps[g].dst.rank == p && s->steps[g].dst.buf == PLAN_BUF_SCRATCH;
    for (int g = i + 1; g < s->nsteps; g++) {
      const planStep *G = &s->steps[g];
      if (G->lane != S->lane) continue;
      if (G->kind == PLAN_STEP_COPY && G->dst.rank == p && G->dst.buf == PLAN_BUF_SCRATCH) break;
      if (G->kind == PLAN_STEP_SIGNAL && G->peer == p) {
        told = (int)G->phase == PLAN_PHASE_PUSH + j;
        break;
      }
    }
    if (!waited || !told)
      rc = fail(err, errlen, "rank %d step %d (COPY, lane %d) writes rank %d's scratch buffer %s",
                r, i, S->lane, p,
                !waited ? "before any WAIT for that rank: its last reduction may still read it"
                        : "and the next SIGNAL to that rank on its lane, before its next push "
                          "there, is not the PUSH of this piece");
  }
  /* ... and every peer whose buffers a step touches gets an EXIT. */
  for (int i = 0; i < s->nsteps && !rc; i++) {
    const planStep *S = &s->steps[i];
    for (int p = 0; p < n && !rc; p++) {
      if (p != r && stepTouches(s, S, p) && findSync(s, PLAN_STEP_SIGNAL, p, PLAN_PHASE_EXIT) == -1)
        rc = fail(err, errlen,
                  "rank %d step %d (%s, lane %d) touches rank %d's buffers, and no EXIT goes to "
                  "that rank",
                  r, i, kindName(S->kind), S->lane, p);
    }
  }
out:
  free(clock);
  free(last);
  free(ord);
  free(count);
  free(joinedBack);
  free(pend);
  free(after);
  free(pre);
  free(lastStep);
  free(ic);
  free(lastIc);
  return rc;
}

int planPieceSignals(const planSchedule *s, int red, int *peers) {
  const planStep *R = &s->steps[red];
  int m = 0, P0 = 0, ok = 1;
  *peers = 0;
  if (R->kind != PLAN_STEP_REDUCE || !R->pieceBytes) return -1;
  while (red + 1 + m < s->nsteps && s->steps[red + 1 + m].kind == PLAN_STEP_SIGNAL &&
         s->steps[red + 1 + m].inKernel && s->steps[red + 1 + m].lane == R->lane)
    m++;
  if (!m) return 0;
  const planStep *S = &s->steps[red + 1];
  while (P0 < m && S[P0].phase == PLAN_PHASE_PIECE) P0++;
  size_t K = (R->bytes + R->pieceBytes - 1) / R->pieceBytes;
  ok = P0 >= 1 && P0 <= PLAN_SM_MAX_PEERS && K <= PLAN_PIECE_GROUPS && (size_t)m == K * (size_t)P0;
  for (int t = 0; t < m && ok; t++) {
    ok = (int)S[t].phase == PLAN_PHASE_PIECE + t / P0 && S[t].peer == S[t % P0].peer;
    for (int q = 0; q < t && t < P0 && ok; q++) ok = S[q].peer != S[t].peer;
  }
  if (!ok) return -1;
  *peers = P0;
  return m;
}

/* The only SIGNAL (or WAIT) of rank a for peer b in phase ph; -1 if none, -2 if several. */
static int findSync(const planSchedule *s, planStepKind kind, int peer, int ph) {
  int found = -1;
  for (int i = 0; i < s->nsteps; i++) {
    const planStep *st = &s->steps[i];
    if (st->kind != kind || st->peer != peer || (int)st->phase != ph) continue;
    if (found >= 0) return -2;
    found = i;
  }
  return found;
}

/* Line slots (stagell, plan.h PLAN_BUF_LINES): a kernel's COPY writes lines
 * into a peer's slot, 16-byte aligned and inside the slot (its schedule's
 * lineBytes; of 0 bytes: a token, one line); each
 * is read by exactly one REDUCE source of that peer at the same offset and
 * length, in a later round (the REDUCE waits for it: rule 1), and never
 * overlaps another source's lines; a rank whose schedule touches lines
 * sends lines to every peer, so that every peer hears from it in the
 * operation (the slot argument of staged.c: a rank that writes a peer's
 * slot must have read that peer's lines of the operation before). Nothing
 * else touches LINES. */
static int lineSource(const planSchedule *s, int p, size_t off, const planStep **red) {
  int found = 0;
  for (int i = 0; i < s->nsteps; i++) {
    const planStep *st = &s->steps[i];
    if (st->kind != PLAN_STEP_REDUCE) continue;
    for (int k = 0; k < st->nsrc; k++) {
      planLoc l = s->srcs[st->src0 + k];
      if (l.buf == PLAN_BUF_LINES && l.rank == p && l.off == off) found++, *red = st;
    }
  }
  return found;
}

static int sendsLines(const planSchedule *s, int to) {
  for (int i = 0; i < s->nsteps; i++)
    if (s->steps[i].kind == PLAN_STEP_COPY && s->steps[i].dst.buf == PLAN_BUF_LINES &&
        s->steps[i].dst.rank == to)
      return 1;
  return 0;
}

static int checkLines(const planSchedule *s, int n, char *err, size_t errlen) {
  for (int r = 0; r < n; r++)
    for (int p = 0; p < n && planUsesLines(&s[r]); p++)
      if (p != r && !sendsLines(&s[r], p))
        return fail(err, errlen,
                    "rank %d uses line slots but sends rank %d no lines: rank %d could not "
                    "know when rank %d's slot is free again",
                    r, p, p, r);
  for (int r = 0; r < n; r++)
    for (int i = 0; i < s[r].nsteps; i++) {
      const planStep *st = &s[r].steps[i];
      if (st->kind == PLAN_STEP_COPY && st->src.buf == PLAN_BUF_LINES)
        return fail(err, errlen, "rank %d step %d: a COPY reads lines", r, i);
      if (st->kind == PLAN_STEP_REDUCE) {
        if (st->dst.buf == PLAN_BUF_LINES)
          return fail(err, errlen, "rank %d step %d: a REDUCE writes lines", r, i);
        for (int k = 0; k < st->nsrc; k++) {
          planLoc l = s[r].srcs[st->src0 + k];
          if (l.buf != PLAN_BUF_LINES) continue;
          if (l.rank != r || l.off % 16)
            return fail(err, errlen,
                        "rank %d step %d: REDUCE source %d reads rank %d's lines at %zu", r, i, k,
                        l.rank, l.off);
          for (int q = 0; q < k; q++) {
            planLoc o = s[r].srcs[st->src0 + q];
            if (o.buf == PLAN_BUF_LINES && o.off < l.off + planLinesBytes(st->bytes) &&
                l.off < o.off + planLinesBytes(st->bytes))
              return fail(err, errlen, "rank %d step %d: REDUCE sources %d and %d share lines", r,
                          i, q, k);
          }
          int senders = 0;
          for (int f = 0; f < n; f++)
            for (int j = 0; j < s[f].nsteps; j++) {
              const planStep *c = &s[f].steps[j];
              senders += c->kind == PLAN_STEP_COPY && c->dst.buf == PLAN_BUF_LINES &&
                         c->dst.rank == r && c->dst.off == l.off;
            }
          if (senders != 1)
            return fail(err, errlen,
                        "rank %d step %d: REDUCE source %d (lines at %zu) is written by %d copies, "
                        "not 1: its wait would never end, or lines would be left set",
                        r, i, k, l.off, senders);
        }
      }
      if (st->kind != PLAN_STEP_COPY || st->dst.buf != PLAN_BUF_LINES) continue;
      int p = st->dst.rank;
      const planStep *red = NULL;
      if (!st->inKernel || p == r || p < 0 || p >= n || st->dst.off % 16)
        return fail(err, errlen,
                    "rank %d step %d: a COPY into lines must be a kernel's (inKernel), into a "
                    "peer's slot at a multiple of 16",
                    r, i);
      if (st->dst.off + planLinesBytes(st->bytes) > s[p].lineBytes)
        return fail(err, errlen,
                    "rank %d step %d: its lines at %zu-%zu pass the end of rank %d's line slot "
                    "(%zu bytes)",
                    r, i, st->dst.off, st->dst.off + planLinesBytes(st->bytes), p, s[p].lineBytes);
      if (lineSource(&s[p], p, st->dst.off, &red) != 1 || red->bytes != st->bytes ||
          red->round <= st->round)
        return fail(err, errlen,
                    "rank %d step %d: its %zu bytes of lines at %zu are not read by one REDUCE of "
                    "rank %d of as many bytes in a later round",
                    r, i, st->bytes, st->dst.off, p);
    }
  return 0;
}

int planCheck(const planSchedule *s, int n, char *err, size_t errlen) {
  if (errlen) err[0] = 0;
  for (int r = 0; r < n; r++) {
    if (s[r].rank != r || s[r].nranks != n)
      return fail(err, errlen, "schedule %d is rank %d of %d, expected rank %d of %d", r, s[r].rank,
                  s[r].nranks, r, n);
    if (checkRank(&s[r], n, err, errlen)) return -1;
  }
  if (checkLines(s, n, err, errlen)) return -1;
  /* Rule 1 and pairing: SIGNAL(a -> b, ph) matches WAIT(b <- a, ph), once. */
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      for (int ph = a == b ? PLAN_PHASE_PIECE : 0; ph < PLAN_NUM_PHASES; ph++) {
        int si = findSync(&s[a], PLAN_STEP_SIGNAL, b, ph);
        int wi = findSync(&s[b], PLAN_STEP_WAIT, a, ph);
        if (si == -2 || wi == -2)
          return fail(err, errlen, "rank %d %s rank %d more than once in phase %d",
                      si == -2 ? a : b, si == -2 ? "signals" : "waits for", si == -2 ? b : a, ph);
        if ((si < 0) != (wi < 0))
          return fail(err, errlen, "phase %d: rank %d %s rank %d, but rank %d %s", ph, a,
                      si >= 0 ? "signals" : "does not signal", b, b,
                      wi >= 0 ? "waits for it" : "does not wait for it");
        if (si >= 0 && s[b].steps[wi].round <= s[a].steps[si].round)
          return fail(err, errlen,
                      "rank %d's WAIT for rank %d (phase %d) is in round %d, not after the "
                      "SIGNAL's round %d",
                      b, a, ph, s[b].steps[wi].round, s[a].steps[si].round);
      }
    }
  return 0;
}
