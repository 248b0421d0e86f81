/*
 * The direct form of the reducing collectives (pull1): every rank pulls its
 * part of the result (the collective's target) from every peer's send
 * buffer into its own scratch buffer with copy commands, reduces the parts
 * with one REDUCE step (the reduction kernel), and, for AllReduce, copies
 * the reduced part into every peer's receive buffer. Rank r, target T:
 *
 *   round 0  lane 0: SIGNAL ENTRY to every peer whose target is not empty
 *            (it will read my send buffer, and AllReduce writes my receive
 *            buffer)
 *   round 1  lane 0: WAIT ENTRY from every peer (when T is not empty); then
 *            T in pieces k = 0, 1, ...:
 *              copy lane A (even k) or B (odd k): one copy per peer of its
 *                piece k into half k%2 of the scratch buffer
 *              lane 0: JOIN that copy lane, REDUCE piece k (inputs in rank
 *                order: mine from my send buffer, the peers' from scratch)
 *                into my receive buffer
 *              AllReduce, lane C: JOIN lane 0, copy the reduced piece into
 *                every peer's receive buffer
 *              the copy lane JOINs lane 0 before piece k+2 reuses the half
 *            lane 0 joins A, B, C and SIGNALs EXIT to every peer
 *   round 2  lane 0: WAIT EXIT from every peer whose target is not empty
 *
 * Two copy lanes make the pipeline: piece k+1's copies run while piece k is
 * reduced, and a JOIN waits for exactly the steps it needs (a JOIN waits for
 * everything its source lane was given before it, so one copy lane could
 * not let the reduction of k start before the copies of k+1 were queued).
 * Pieces are at least 1 MB (fewer, larger kernels and copies) and at most
 * half the scratch buffer divided among the peers.
 *
 * Safety in place: only rank t reads block T_t of the peers' buffers, and
 * AllReduce writes T_t into a peer only after reading that piece from it.
 */
#include "plan_internal.h"

#include <stdlib.h>

enum { LANE_A = 1, LANE_B = 2, LANE_C = 3 };
#define PIECE_ALIGN ((size_t)256)
#define PIECE_MIN ((size_t)1 << 20)

static size_t pieceBytes(const planArgs *a, size_t total) {
  size_t cap = a->scratchBytes / (2 * (size_t)(a->nranks - 1)) / PIECE_ALIGN * PIECE_ALIGN;
  size_t want = (total / 4 + PIECE_ALIGN - 1) / PIECE_ALIGN * PIECE_ALIGN;
  if (want < PIECE_MIN) want = PIECE_MIN;
  return want < cap ? want : cap;
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
  size_t P = pieceBytes(a, T.bytes);
  if (T.bytes && P == 0) return -1; /* the scratch buffer is too small */
  s->round = 0;
  for (int d = 1; d < n && !rc; d++)
    if (ci->target(a, (r + d) % n, 0).bytes)
      rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  s->round = 1;
  planLoc *src = malloc((size_t)n * sizeof(*src));
  if (!src) return -1;
  if (T.bytes) {
    for (int d = 1; d < n && !rc; d++)
      rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_ENTRY);
    size_t K = (T.bytes + P - 1) / P;
    int lanes[3] = {LANE_A, K > 1 ? LANE_B : 0, ci->shareResult ? LANE_C : 0};
    for (int i = 0; i < 3 && !rc; i++)
      if (lanes[i]) rc = planAddJoin(s, lanes[i], 0);
        /* Peer p's piece k lies in scratch half k%2, at its index among the peers. */
#define SCRATCH_AT(k, p) ((((k) % 2) * (size_t)(n - 1) + (size_t)((p) < r ? (p) : (p)-1)) * P)
    for (size_t k = 0; k < K + 2 && !rc; k++) {
      /* Copies of piece k (queued two pieces ahead of its reduction). */
      if (k < K) {
        int lane = k % 2 ? LANE_B : LANE_A;
        size_t off = k * P, len = T.bytes - off < P ? T.bytes - off : P;
        if (k >= 2) rc = planAddJoin(s, lane, 0); /* the reduction of k-2 freed the half */
        for (int d = 1; d < n && !rc; d++) {
          int p = (r + d) % n;
          rc = planAddCopy(s, lane, (planLoc){p, PLAN_BUF_SEND, T.srcOff + off},
                           (planLoc){r, PLAN_BUF_SCRATCH, SCRATCH_AT(k, p)}, len, 1);
        }
      }
      /* Reduction (and sharing) of piece j = k-1, once piece k's copies are queued. */
      if (k >= 1 && k - 1 < K && !rc) {
        size_t j = k - 1, off = j * P, len = T.bytes - off < P ? T.bytes - off : P;
        rc = planAddJoin(s, 0, j % 2 ? LANE_B : LANE_A);
        for (int i = 0; i < n; i++)
          src[i] = i == r ? (planLoc){r, PLAN_BUF_SEND, T.srcOff + off}
                          : (planLoc){r, PLAN_BUF_SCRATCH, SCRATCH_AT(j, i)};
        if (!rc) rc = planAddReduce(s, 0, src, n, (planLoc){r, PLAN_BUF_RECV, T.dstOff + off}, len);
        if (!rc && ci->shareResult) {
          rc = planAddJoin(s, LANE_C, 0);
          for (int d = 1; d < n && !rc; d++)
            rc = planAddCopy(s, LANE_C, (planLoc){r, PLAN_BUF_RECV, T.dstOff + off},
                             (planLoc){(r + d) % n, PLAN_BUF_RECV, T.dstOff + off}, len, 1);
        }
      }
    }
#undef SCRATCH_AT
    for (int i = 0; i < 3 && !rc; i++)
      if (lanes[i]) rc = planAddJoin(s, 0, lanes[i]);
    for (int d = 1; d < n && !rc; d++)
      rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_EXIT);
  }
  free(src);
  s->round = 2;
  for (int d = 1; d < n && !rc; d++)
    if (ci->target(a, (r + d) % n, 0).bytes)
      rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_EXIT);
  return rc;
}
