/*
 * The direct form of the reducing collectives (pull1): every rank pulls its
 * part of the result (the collective's target) from every peer's send
 * buffer into its own scratch buffer with copy commands, reduces the parts
 * with one REDUCE step (the reduction kernel), and, for AllReduce, pulls
 * every peer's reduced part from that peer's receive buffer. Every copy
 * reads a peer and writes the rank itself: a GPU's copies, which its copy
 * engine runs one after the other, all travel one direction of its links,
 * while the peers' copies use the other (a push of the result would share
 * the engine with the pulls, and each direction with a peer's copies:
 * docs/algorithms.md). Rank r, target T:
 *
 *   round 0  lane 0: SIGNAL ENTRY to every peer whose target is not empty
 *            (it will read my send buffer)
 *   round 1  lane 0: WAIT ENTRY from every peer (when T is not empty); then
 *            T in pieces k = 0, 1, ...:
 *              copy lane A (even k) or B (odd k): one copy per peer of its
 *                piece k into half k%2 of the scratch buffer
 *              lane 0: JOIN that copy lane, REDUCE piece k (inputs in rank
 *                order: mine from my send buffer, the peers' from scratch)
 *                into my receive buffer
 *              AllReduce: when the reduced bytes complete group g of T
 *                (groups: T cut into parts of about a quarter, by T's size
 *                alone, so that every rank knows every rank's),
 *                lane 0 SIGNALs PIECE+g to every peer (round 1+g); lane C
 *                JOINs lane 0, and for each peer p WAITs PIECE+g from p
 *                (round 2+g) and copies p's group g from p's receive buffer
 *                into mine
 *              the copy lane JOINs lane 0 before piece k+2 reuses the half
 *                (AllReduce: only where the pieces do not all fit the
 *                scratch buffer side by side; otherwise piece k has a
 *                region of its own and the copies never wait for a
 *                reduction)
 *            the lane of my last reads of the peers' buffers (C, or the
 *            last piece's copy lane) JOINs the other reading lanes and
 *            SIGNALs EXIT to every peer whose buffers it read (round 2 +
 *            the most groups of any rank): a ReduceScatter's peers need not
 *            wait for its last reductions
 *   then     lane 0: JOIN A, B, C, WAIT EXIT from every peer that read mine
 *
 * Two copy lanes make the pipeline: piece k+1's copies run while piece k is
 * reduced, and a JOIN waits for exactly the steps it needs (a JOIN waits for
 * everything its source lane was given before it, so one copy lane could
 * not let the reduction of k start before the copies of k+1 were queued).
 * Pieces are a quarter of T, at least 1 MB (PLAN_PIECE_MIN: fewer, larger
 * kernels and copies) and at most half the scratch buffer divided among the
 * peers. In an AllReduce whose pieces all fit the scratch buffer at once
 * (T up to 32 MB on 2 ranks with the default 32 MB; about 10 MB on 4),
 * piece k lies in region k, so the copy engine need not wait for the
 * reduction of k-2 (a kernel's end reaches a copy 8-9 us late in a graph
 * on 2x H200): 16-64 MB took 0.94-0.96x the time in graphs, 0.91-0.99x
 * eager. A ReduceScatter keeps the halves: with regions of its own its
 * eager 64 MB on 2 ranks took 1.16x the time (probably two pieces' copies
 * running at once on the engine, so that the first lands late for its
 * reduction; no timeline shows it; docs/results/pull1-exit-4xh200/).
 *
 * A reduction whose pieces all fit the scratch buffer at once takes
 * another shape, one kernel for all pieces: buildPieced (below); an
 * AllReduce only where the kernel may signal the peers (no peer on this
 * GPU), eager only over 24 MB and in CUDA graphs only over 12 and up to 40
 * MB, so this one is AllReduce's form eager up to 24 MB, in graphs up to
 * 12 MB and over 40 MB, and where the pieces do not fit.
 *
 * Safety in place: only rank t reads block T_t of the peers' buffers, and a
 * rank writes a peer's group into its own buffer only after that peer's
 * PIECE signal, which follows the peer's reduction of the group, which
 * followed its copies of the group from this rank.
 */
#include "plan_internal.h"

#include <stdlib.h>

enum { LANE_A = 1, LANE_B = 2, LANE_C = 3 };

/* Whether a target of `bytes` in pieces of P fits buildPieced: at most
 * PLAN_PIECE_GROUPS pieces, every peer's all in the scratch buffer at once. */
static int fitsAt(const planArgs *a, size_t bytes, size_t P) {
  size_t K = P ? (bytes + P - 1) / P : 0;
  return P && K <= PLAN_PIECE_GROUPS && K * (size_t)(a->nranks - 1) * P <= a->scratchBytes;
}

/* The pieces of a target of `total` bytes: a quarter of it, at least the
 * smallest piece. buildPieced's one kernel (pieced): a third of it (rounded
 * up) where that is larger and at most 6 x the smallest piece (6 MB), and
 * where quarters and thirds both fit the scratch buffer at once (so thirds
 * never change which form a size takes: a third rounded up to 256 bytes
 * can overflow a scratch buffer that quarters fill exactly). Measured on 2x
 * H100 (docs/results/pieces-2xh100/), against quarters: ReduceScatter of
 * 16 MB (targets of 8 MB) 0.92x the time in graphs, AllReduce of 32 MB
 * eager 0.94-0.96x; 64 MB was best in quarters (8 MB pieces), and the
 * groups of planBuildReduce lost with thirds (AllReduce in graphs, 32 MB:
 * 1.10x the time), so they keep quarters. */
static size_t pieceBytes(const planArgs *a, size_t total, int pieced) {
  size_t cap =
      a->scratchBytes / (2 * (size_t)(a->nranks - 1)) / PLAN_PIECE_ALIGN * PLAN_PIECE_ALIGN;
  size_t q = (total / 4 + PLAN_PIECE_ALIGN - 1) / PLAN_PIECE_ALIGN * PLAN_PIECE_ALIGN;
  if (q < planPieceMin(a)) q = planPieceMin(a);
  if (q > cap) q = cap;
  size_t t = ((total + 2) / 3 + PLAN_PIECE_ALIGN - 1) / PLAN_PIECE_ALIGN * PLAN_PIECE_ALIGN;
  if (pieced && t > q && t <= 6 * planPieceMin(a) && t <= cap && fitsAt(a, total, q) &&
      fitsAt(a, total, t))
    return t;
  return q;
}

/* Lane C, AllReduce: for every peer with a group g, WAIT its PIECE signal
 * and copy the group from its receive buffer into mine (round 2+g). */
static int pullGroup(const planArgs *a, planSchedule *s, int g) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0;
  s->round = 2 + g;
  rc = planAddJoin(s, LANE_C, 0); /* after my own signals (queue safety, rule 2) */
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n;
    planBlock Tp = ci->target(a, p, 0);
    if (g >= planGroups(a, Tp.bytes)) continue;
    size_t lo = planGroupAt(a, Tp.bytes, g), hi = planGroupAt(a, Tp.bytes, g + 1);
    rc = planAddSync(s, PLAN_STEP_WAIT, LANE_C, p, (planPhase)(PLAN_PHASE_PIECE + g));
    if (!rc)
      rc = planAddCopy(s, LANE_C, (planLoc){p, PLAN_BUF_RECV, Tp.dstOff + lo},
                       (planLoc){r, PLAN_BUF_RECV, Tp.dstOff + lo}, hi - lo, 1);
  }
  return rc;
}

/* Lane 0, rounds 0 and 1: SIGNAL ENTRY to every peer whose target is not
 * empty (it will read my send buffer), then, when my target T is not
 * empty, WAIT ENTRY from every peer (I will read theirs). Leaves round 1. */
static int entry(const planArgs *a, planSchedule *s, size_t T) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0;
  s->round = 0;
  for (int d = 1; d < n && !rc; d++)
    if (ci->target(a, (r + d) % n, 0).bytes)
      rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  s->round = 1;
  for (int d = 1; d < n && !rc && T; d++)
    rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  return rc;
}

/* Whether a target of `bytes` fits buildPieced in its pieces (0 bytes fit). */
static int piecedFits(const planArgs *a, size_t bytes) {
  return !bytes || fitsAt(a, bytes, pieceBytes(a, bytes, 1));
}

/*
 * A reduction whose pieces all fit the scratch buffer at once, as one
 * kernel: ReduceScatter, ReduceScatterV and Reduce (T in more than one
 * piece), and AllReduce where planArgs.kernelSignals allows and every
 * rank's target fits. One copy lane pulls the pieces one after the other,
 * each into a region of its own (peer p's piece k at (p's index among the
 * peers * K + k) * P, so every source advances by P per piece), and one
 * kernel reduces them, polling the word lane A writes after each piece (an
 * inKernel JOIN of phase PIECE+k) instead of one kernel per piece behind an
 * event: in a CUDA graph on 2x H200 the first of four kernels started 15
 * us after its piece landed and each later one 1.5-3 us after the one
 * before (docs/results/pull1-exit-4xh200/). Measured there: ReduceScatter
 * 64 MB 0.86-0.91x the time of a kernel per piece (NCCL's time), 16 MB
 * 0.95x (each word's write, between two copies on lane A, leaves 5 us
 * between them).
 *
 * AllReduce: the kernel also SIGNALs PIECE+k to every peer once piece k is
 * reduced (inKernel SIGNALs after the REDUCE, round 1), and lane C WAITs
 * for each peer's PIECE+k (round 2) and pulls that piece of the peer's
 * result from its receive buffer, so the result pulls run while later
 * pieces are reduced, with no kernel end, event or stream write between a
 * reduction and the pull of its bytes. Rule 2 (plan.h) wants lane C's
 * WAITs ordered after those SIGNALs, which the kernel writes while it
 * runs. Two ways:
 *   - list order (eager): lane C is forked before the copies, and its
 *     WAITs are listed after the REDUCE, so every queue holds the kernel's
 *     launch and lane A's copies ahead of them; lane C's pulls may then run
 *     between lane A's.
 *   - launched (CUDA graphs, whose launch may order independent steps
 *     either way): lane C starts after the kernel's launch (a JOIN marked
 *     launched) and after lane A's copies, so that no queue can hold the
 *     kernel or the copies it waits for behind lane C's WAITs. A GPU runs
 *     its copies from its peers one at a time whatever their lanes
 *     (docs/algorithms.md), so lane C's pulls, which follow all of lane
 *     A's, cost the engine no more time.
 * In place, a rank writes a peer's piece into its own buffer only after
 * that peer's PIECE signal, which follows the peer's reduction of the
 * piece, which followed its copies of the piece from this rank.
 *
 * EXIT leaves from the lane of the last reads (C, else A), after it joins
 * the other reading lane.
 */
static int buildPieced(const planArgs *a, planSchedule *s, planBlock T, int share) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0, Kmax = 0;
  size_t P = pieceBytes(a, T.bytes, 1), K = T.bytes ? (T.bytes + P - 1) / P : 0;
  planLoc *src = malloc((size_t)n * sizeof(*src));
  if (!src) return -1;
  for (int d = 1; d < n && share; d++) {
    size_t Tp = ci->target(a, (r + d) % n, 0).bytes, Pp = pieceBytes(a, Tp, 1);
    int Kp = Tp ? (int)((Tp + Pp - 1) / Pp) : 0;
    if (Kp > Kmax) Kmax = Kp;
  }
#define PIECED_AT(k, p) ((((size_t)((p) < r ? (p) : (p)-1)) * K + (k)) * P)
  int early = a->listOrder; /* lane C forked before the copies (above) */
  rc = entry(a, s, T.bytes);
  if (!rc && Kmax && early) rc = planAddJoin(s, LANE_C, 0); /* after my ENTRY signals (rule 2) */
  if (!rc && T.bytes) rc = planAddJoin(s, LANE_A, 0);
  for (size_t k = 0; k < K && !rc; k++) {
    size_t off = k * P, len = T.bytes - off < P ? T.bytes - off : P;
    for (int d = 1; d < n && !rc; d++) {
      int p = (r + d) % n;
      rc = planAddCopy(s, LANE_A, (planLoc){p, PLAN_BUF_SEND, T.srcOff + off},
                       (planLoc){r, PLAN_BUF_SCRATCH, PIECED_AT(k, p)}, len, 1);
    }
    if (!rc && !(rc = planAddJoin(s, 0, LANE_A))) {
      planStep *j = &s->steps[s->nsteps - 1];
      j->inKernel = 1;
      j->phase = (planPhase)(PLAN_PHASE_PIECE + (int)k);
    }
  }
  for (int i = 0; i < n && !rc && T.bytes; i++)
    src[i] = i == r ? (planLoc){r, PLAN_BUF_SEND, T.srcOff}
                    : (planLoc){r, PLAN_BUF_SCRATCH, PIECED_AT(0, i)};
  if (!rc && T.bytes)
    rc = planAddReduce(s, 0, src, n, (planLoc){r, PLAN_BUF_RECV, T.dstOff}, T.bytes);
  if (!rc && T.bytes) s->steps[s->nsteps - 1].pieceBytes = P;
#undef PIECED_AT
  /* AllReduce: the kernel signals piece k to every peer; lane C pulls the
   * peers' pieces as their signals come. */
  for (size_t k = 0; k < K && share && !rc; k++)
    for (int d = 1; d < n && !rc; d++)
      if (!(rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n,
                             (planPhase)(PLAN_PHASE_PIECE + (int)k))))
        s->steps[s->nsteps - 1].inKernel = 1;
  s->round = 2;
  if (!rc && Kmax && !early) { /* after the kernel's launch and lane A's copies */
    rc = T.bytes ? planAddLaunchJoin(s, LANE_C, 0) : planAddJoin(s, LANE_C, 0);
    if (!rc && T.bytes) rc = planAddJoin(s, LANE_C, LANE_A);
  }
  for (int k = 0; k < Kmax && !rc; k++)
    for (int d = 1; d < n && !rc; d++) {
      int p = (r + d) % n;
      planBlock Tp = ci->target(a, p, 0);
      size_t Pp = pieceBytes(a, Tp.bytes, 1), off = (size_t)k * Pp;
      if (off >= Tp.bytes) continue;
      size_t len = Tp.bytes - off < Pp ? Tp.bytes - off : Pp;
      rc = planAddSync(s, PLAN_STEP_WAIT, LANE_C, p, (planPhase)(PLAN_PHASE_PIECE + k));
      if (!rc)
        rc = planAddCopy(s, LANE_C, (planLoc){p, PLAN_BUF_RECV, Tp.dstOff + off},
                         (planLoc){r, PLAN_BUF_RECV, Tp.dstOff + off}, len, 1);
    }
  /* EXIT to every peer whose buffers I read, from the lane of my last reads */
  int x = Kmax ? LANE_C : LANE_A;
  if (!rc && Kmax && T.bytes && early) rc = planAddJoin(s, LANE_C, LANE_A);
  s->round = share ? 3 : 2;
  for (int d = 1; d < n && !rc; d++)
    if (T.bytes || (share && ci->target(a, (r + d) % n, 0).bytes))
      rc = planAddSync(s, PLAN_STEP_SIGNAL, x, (r + d) % n, PLAN_PHASE_EXIT);
  if (!rc && T.bytes) rc = planAddJoin(s, 0, LANE_A);
  if (!rc && Kmax) rc = planAddJoin(s, 0, LANE_C);
  s->round = share ? 4 : 3;
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n;
    if (ci->target(a, p, 0).bytes || (share && T.bytes))
      rc = planAddSync(s, PLAN_STEP_WAIT, 0, p, PLAN_PHASE_EXIT);
  }
  free(src);
  return rc;
}

/*
 * push1 (docs/results/pushtwo-2xh200/): every copy a push, so that a
 * GPU's copy engine writes into its peers (340-390 GB/s on 2x H200) instead
 * of reading them (200-280). Rank r, target T (its part of the result),
 * each peer p's target T_p, every target in K pieces (pushPiece):
 *
 *   round 0  lane 0: SIGNAL ENTRY to every peer (something moves either way)
 *   round 1  lane 0: WAIT ENTRY from them (the peer's stream reached the
 *            operation: its scratch buffer and its receive buffer are free)
 *            lane A: per piece k, per peer p: push piece k of T_p from my
 *              send buffer into p's scratch buffer (my region there, as
 *              buildPieced lays a peer's pieces out), SIGNAL PUSH+k to p
 *   round 2  lane 0: one kernel (a REDUCE in pieces) that polls every
 *            peer's PUSH+k word itself (inKernel WAITs) before piece k,
 *            reduces mine and the pushed pieces into my receive buffer, and
 *            after piece k writes my own PIECE+k word (an inKernel SIGNAL to
 *            myself: "piece k of my result is reduced")
 *   AllReduce (shareResult):
 *   round 3  lane C, after the kernel's launch and lane A's copies (a JOIN
 *            marked launched: no queue can then hold the kernel or what it
 *            waits for behind lane C's WAITs): per piece, WAIT my own
 *            PIECE+k, push that piece of my result into every peer's
 *            receive buffer; then SIGNAL EXIT to every peer
 *   round 4  lane 0: JOIN A and C, WAIT EXIT from every peer
 *   ReduceScatter, ReduceScatterV, Reduce: the kernel writes no word, and
 *   lane 0 JOINs lane A after it. No EXIT: no rank touches a peer's send or
 *   receive buffer, and a rank's part is complete once its kernel has
 *   reduced every piece (every peer's pushes landed before the words it
 *   polled); the next operation's ENTRY frees the scratch buffers again.
 *
 * The polled words are PUSH words (plan.h), reset after the kernel in a
 * CUDA graph (lane 0, after its JOIN of lane A: planPushResetAt); only a
 * push1 operation writes them, after its ENTRY WAIT, and a rank's next
 * ENTRY SIGNAL follows its reset on lane 0, so neither form
 * needs its EXIT to wait for the kernel's end (test_plan
 * testGraphWordsMixed: on PIECE words, without an EXIT after the kernel, a
 * chain Broadcast's signal is lost in some orders).
 *
 * In place, a peer writes its piece k of T_p into my buffer only after its
 * kernel reduced that piece, which followed my push of it out of the same
 * bytes. A kernel polls its peers' words, so the form needs every peer off
 * this GPU (planArgs.kernelSignals), at most PLAN_SM_MAX_PEERS peers
 * and every rank's pieces in the scratch buffer at once; elsewhere push1 runs as pull1 (the same
 * verdict on every rank: the scratch size is the set's and every target is
 * known to all).
 */
/* The pieces of a target of `total` bytes under push1: two while the
 * target is at most 24 x the smallest piece (an AllReduce of 48 MB on 2
 * ranks), three above: the probe's best on 2x H200 (two from 8 to 48 MB,
 * two or three at 64; more pieces add an engine's gap between copies each:
 * docs/results/pushtwo-2xh200/). At least the smallest piece, 256-byte
 * multiples. */
static size_t pushPiece(const planArgs *a, size_t total) {
  size_t K = total <= 24 * planPieceMin(a) ? 2 : 3;
  size_t P = ((total + K - 1) / K + PLAN_PIECE_ALIGN - 1) / PLAN_PIECE_ALIGN * PLAN_PIECE_ALIGN;
  return P < planPieceMin(a) ? planPieceMin(a) : P;
}

/* Whether push1 runs as itself for a (see above); the same on every rank.
 * An AllReduce's part may be empty (under 256 bytes a rank): that rank
 * pushes, has no kernel, and its next operation's ENTRY still waits for the
 * EXIT its peers send after their ENTRY waits (whose words those waits
 * reset). (Such calls once hung in graphs: the CUDA executor issued
 * a kernel's polled WAIT as a stream wait together with the ENTRY WAIT
 * before it, which reset the word; planRunEnd now ends a run at a
 * kernel's step.) Not where another collective's part is empty (a Reduce's
 * non-roots, a ReduceScatterV's zero counts): such a rank has no EXIT and
 * hears nothing after its ENTRY wait, so in a graph its next ENTRY could
 * land on a word its peer has not reset yet, and be lost (test_plan
 * testGraphWordsRepeat). */
int planPushRuns(const planArgs *a) {
  const planCollInfo *ci = planCollOf(a->coll);
  if (!a->kernelSignals || a->nranks < 2 || a->nranks - 1 > PLAN_SM_MAX_PEERS) return 0;
  for (int t = 0; t < a->nranks; t++) {
    size_t Tt = ci->target(a, t, 0).bytes;
    if (Tt ? !fitsAt(a, Tt, pushPiece(a, Tt)) : !ci->shareResult) return 0;
  }
  return 1;
}

static int buildPush(const planArgs *a, planSchedule *s) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0, toAny = 0, Kmax = 0, share = ci->shareResult;
  planBlock T = ci->target(a, r, 0);
  size_t P = T.bytes ? pushPiece(a, T.bytes) : 0, K = T.bytes ? (T.bytes + P - 1) / P : 0;
  planLoc *src = malloc((size_t)n * sizeof(*src));
  if (!src) return -1;
  for (int d = 1; d < n; d++) {
    size_t Tp = ci->target(a, (r + d) % n, 0).bytes;
    int Kp = Tp ? (int)((Tp + pushPiece(a, Tp) - 1) / pushPiece(a, Tp)) : 0;
    if (Kp > Kmax) Kmax = Kp;
    toAny |= Tp != 0;
  }
  /* peer p exchanges with me when either of us has a part */
#define MEETS(p) (T.bytes || ci->target(a, (p), 0).bytes)
  s->round = 0;
  for (int d = 1; d < n && !rc; d++)
    if (MEETS((r + d) % n)) rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  s->round = 1;
  for (int d = 1; d < n && !rc; d++)
    if (MEETS((r + d) % n)) rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  if (!rc && toAny) rc = planAddJoin(s, LANE_A, 0);
  /* my pushes: piece k of every peer's part into its scratch buffer, at my
   * index among its peers (buildPieced's layout, from the peer's side) */
  for (int k = 0; k < Kmax && !rc; k++)
    for (int d = 1; d < n && !rc; d++) {
      int p = (r + d) % n;
      planBlock Tp = ci->target(a, p, 0);
      size_t Pp = Tp.bytes ? pushPiece(a, Tp.bytes) : 0, off = (size_t)k * Pp;
      if (off >= Tp.bytes) continue;
      size_t Kp = (Tp.bytes + Pp - 1) / Pp, len = Tp.bytes - off < Pp ? Tp.bytes - off : Pp;
      size_t at = ((size_t)(r < p ? r : r - 1) * Kp + (size_t)k) * Pp;
      rc = planAddCopy(s, LANE_A, (planLoc){r, PLAN_BUF_SEND, Tp.srcOff + off},
                       (planLoc){p, PLAN_BUF_SCRATCH, at}, len, 1);
      if (!rc) rc = planAddSync(s, PLAN_STEP_SIGNAL, LANE_A, p, (planPhase)(PLAN_PHASE_PUSH + k));
    }
  /* the kernel: polls the peers' words of piece k, reduces it, tells lane C */
  s->round = 2;
  for (size_t k = 0; k < K && !rc; k++)
    for (int d = 1; d < n && !rc; d++)
      if (!(rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n,
                             (planPhase)(PLAN_PHASE_PUSH + (int)k))))
        s->steps[s->nsteps - 1].inKernel = 1;
  for (int i = 0; i < n && !rc && T.bytes; i++)
    src[i] = i == r ? (planLoc){r, PLAN_BUF_SEND, T.srcOff}
                    : (planLoc){r, PLAN_BUF_SCRATCH, (size_t)(i < r ? i : i - 1) * K * P};
  if (!rc && T.bytes) {
    rc = planAddReduce(s, 0, src, n, (planLoc){r, PLAN_BUF_RECV, T.dstOff}, T.bytes);
    if (!rc) s->steps[s->nsteps - 1].pieceBytes = P;
  }
  for (size_t k = 0; k < K && share && !rc; k++)
    if (!(rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, r, (planPhase)(PLAN_PHASE_PIECE + (int)k))))
      s->steps[s->nsteps - 1].inKernel = 1;
  if (!share) { /* the kernel's end is the rank's part: no EXIT (above) */
    if (!rc && toAny) rc = planAddJoin(s, 0, LANE_A);
    free(src);
    return rc;
  }
  /* lane C: my result's pieces into every peer's receive buffer */
  s->round = 3;
  if (!rc && T.bytes) rc = planAddLaunchJoin(s, LANE_C, 0);
  if (!rc && T.bytes && toAny) rc = planAddJoin(s, LANE_C, LANE_A);
  for (size_t k = 0; k < K && !rc; k++) {
    size_t off = k * P, len = T.bytes - off < P ? T.bytes - off : P;
    rc = planAddSync(s, PLAN_STEP_WAIT, LANE_C, r, (planPhase)(PLAN_PHASE_PIECE + (int)k));
    for (int d = 1; d < n && !rc; d++)
      rc = planAddCopy(s, LANE_C, (planLoc){r, PLAN_BUF_RECV, T.dstOff + off},
                       (planLoc){(r + d) % n, PLAN_BUF_RECV, T.dstOff + off}, len, 1);
  }
  int x = T.bytes ? LANE_C : LANE_A;
  for (int d = 1; d < n && !rc; d++)
    if (MEETS((r + d) % n)) rc = planAddSync(s, PLAN_STEP_SIGNAL, x, (r + d) % n, PLAN_PHASE_EXIT);
  s->round = 4;
  if (!rc && toAny) rc = planAddJoin(s, 0, LANE_A);
  if (!rc && T.bytes) rc = planAddJoin(s, 0, LANE_C);
  for (int d = 1; d < n && !rc; d++)
    if (MEETS((r + d) % n)) rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_EXIT);
#undef MEETS
  free(src);
  return rc;
}

int planBuildReducePush(const planArgs *a, planSchedule *s) {
  if (!planPushRuns(a)) return planBuildReduce(a, s);
  planScheduleReset(s, a, PLAN_ALGO_PUSH1);
  return buildPush(a, s);
}

int planBuildReduce(const planArgs *a, planSchedule *s) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0;
  planScheduleReset(s, a, PLAN_ALGO_PULL1);
  planBlock T = ci->target(a, r, 0);
  if (n == 1) { /* a reduction of one rank is its input */
    if (a->inPlace || !T.bytes) return 0;
    return planAddCopy(s, 0, (planLoc){r, PLAN_BUF_SEND, T.srcOff},
                       (planLoc){r, PLAN_BUF_RECV, T.dstOff}, T.bytes, 0);
  }
  size_t P = pieceBytes(a, T.bytes, 0);
  if (T.bytes && P == 0) return -1; /* the scratch buffer is too small */
  int share = ci->shareResult, Gmax = 0, G = share ? planGroups(a, T.bytes) : 0;
  if (!share && T.bytes > P && piecedFits(a, T.bytes)) return buildPieced(a, s, T, 0);
  /* AllReduce in one kernel where every rank's pieces fit. Eager where the
   * whole buffer exceeds 24 x the smallest piece (24 MB): at 16 MB the
   * eager call is bound by the host issuing its CUDA calls (40 on 2 ranks)
   * and the form took 1.03x the time on 2 ranks, 1.07-1.09x on 4; at 32 MB
   * 0.75x and 0.93x (2x and 4x H100, docs/results/pull1-signals/). In CUDA
   * graphs (lane C after lane A's copies: buildPieced) over 12 and up to 40
   * x the smallest piece: on 2 ranks 0.94-0.95x the time of the groups at
   * 16 and 32 MB (2x H100), 0.93-0.94x at 24 MB, but 1.02-1.04x at 48 MB
   * (2x H200) and 1.03-1.04x at 64 MB (docs/results/pull1-launched/);
   * below 16 MB not measured (the built-in table takes pull1 there only
   * under CTA policy zero), so the groups stay up to 12 MB. The 24 and 40
   * MB cuts lie between measured sizes, all three away from powers of two.
   * The same choice on every rank: the sizes of every rank's target and the
   * scratch size (the set's smallest) are known to all. */
  if (share && a->kernelSignals && n - 1 <= PLAN_SM_MAX_PEERS) {
    int all = 1;
    size_t total = 0;
    for (int t = 0; t < n && all; t++) {
      size_t Tt = ci->target(a, t, 0).bytes;
      all = piecedFits(a, Tt);
      total += Tt;
    }
    size_t min = planPieceMin(a);
    if (all && (a->listOrder ? total > 24 * min : total > 12 * min && total <= 40 * min))
      return buildPieced(a, s, T, 1);
  }
  for (int t = 0; t < n && share; t++) {
    int Gt = planGroups(a, ci->target(a, t, 0).bytes);
    if (Gt > Gmax) Gmax = Gt;
  }
  /* peer p reads my buffers / I read p's */
  unsigned char *readsMe = calloc((size_t)n, 1), *readP = calloc((size_t)n, 1);
  planLoc *src = malloc((size_t)n * sizeof(*src));
  if (!src || !readsMe || !readP) rc = -1;
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n;
    size_t Tp = ci->target(a, p, 0).bytes;
    readsMe[p] = Tp || (share && T.bytes);
    readP[p] = T.bytes || (share && Tp);
  }
  if (!rc) rc = entry(a, s, T.bytes);
  int lanes[3] = {0, 0, share && Gmax ? LANE_C : 0}, signalled = 0;
  size_t K = 0; /* pieces of T */
  if (T.bytes) lanes[0] = LANE_A, lanes[1] = T.bytes > P ? LANE_B : 0;
  for (int i = 0; i < 2 && !rc; i++) /* lane C begins with pullGroup's JOIN */
    if (lanes[i]) rc = planAddJoin(s, lanes[i], 0);
  if (T.bytes) {
    /* Peer p's piece k lies in scratch region k (all fit) or half k%2, at
     * p's index among the peers. */
    K = (T.bytes + P - 1) / P;
    int apart = share && K * (size_t)(n - 1) * P <= a->scratchBytes;
#define SCRATCH_AT(k, p)                                                                           \
  (((apart ? (k) : (k) % 2) * (size_t)(n - 1) + (size_t)((p) < r ? (p) : (p)-1)) * P)
    for (size_t k = 0; k < K + 2 && !rc; k++) {
      /* Copies of piece k (queued two pieces ahead of its reduction). */
      if (k < K) {
        int lane = k % 2 ? LANE_B : LANE_A;
        size_t off = k * P, len = T.bytes - off < P ? T.bytes - off : P;
        if (k >= 2 && !apart)
          rc = planAddJoin(s, lane, 0); /* the reduction of k-2 freed the half */
        for (int d = 1; d < n && !rc; d++) {
          int p = (r + d) % n;
          rc = planAddCopy(s, lane, (planLoc){p, PLAN_BUF_SEND, T.srcOff + off},
                           (planLoc){r, PLAN_BUF_SCRATCH, SCRATCH_AT(k, p)}, len, 1);
        }
      }
      /* Reduction of piece j = k-1, once piece k's copies are queued. */
      if (k >= 1 && k - 1 < K && !rc) {
        size_t j = k - 1, off = j * P, len = T.bytes - off < P ? T.bytes - off : P;
        rc = planAddJoin(s, 0, j % 2 ? LANE_B : LANE_A);
        for (int i = 0; i < n; i++)
          src[i] = i == r ? (planLoc){r, PLAN_BUF_SEND, T.srcOff + off}
                          : (planLoc){r, PLAN_BUF_SCRATCH, SCRATCH_AT(j, i)};
        if (!rc) rc = planAddReduce(s, 0, src, n, (planLoc){r, PLAN_BUF_RECV, T.dstOff + off}, len);
        /* the groups this piece completes: signal them, then pull the peers' */
        while (!rc && signalled < G && planGroupAt(a, T.bytes, signalled + 1) <= off + len) {
          s->round = 1 + signalled;
          for (int d = 1; d < n && !rc; d++)
            rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n,
                             (planPhase)(PLAN_PHASE_PIECE + signalled));
          if (!rc) rc = pullGroup(a, s, signalled);
          signalled++;
        }
      }
    }
#undef SCRATCH_AT
  }
  /* the peers' groups beyond mine (a shorter or empty target) */
  for (int g = signalled; g < Gmax && !rc; g++) rc = pullGroup(a, s, g);
  /* EXIT on the lane of my last reads of the peers' buffers (lane C's, or
   * the last piece's), once the other reading lanes are done: a
   * ReduceScatter's peers then need not wait for its last reductions. */
  int x = lanes[2] ? LANE_C : K ? ((K - 1) % 2 ? LANE_B : LANE_A) : 0;
  for (int i = 0; i < 3 && !rc; i++)
    if (lanes[i] && lanes[i] != x) rc = planAddJoin(s, x, lanes[i]);
  s->round = 2 + Gmax;
  for (int d = 1; d < n && !rc; d++)
    if (readP[(r + d) % n]) rc = planAddSync(s, PLAN_STEP_SIGNAL, x, (r + d) % n, PLAN_PHASE_EXIT);
  for (int i = 0; i < 3 && !rc; i++)
    if (lanes[i]) rc = planAddJoin(s, 0, lanes[i]);
  s->round = 3 + Gmax;
  for (int d = 1; d < n && !rc; d++)
    if (readsMe[(r + d) % n]) rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_EXIT);
  free(src);
  free(readsMe);
  free(readP);
  return rc;
}
