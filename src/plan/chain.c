/*
 * chain: a rooted collective whose root sends every rank the same block
 * (Broadcast), as a chain of pulls. A GPU runs its copies one after the
 * other on one copy engine (docs/algorithms.md), so a root that pushes, or
 * that n-1 ranks pull from, moves n-1 blocks through one engine or one
 * GPU's links: on 4 H200s a third of NVLink's rate (pushb 131 GB/s at 1 GB,
 * NCCL 360). Here the ranks form a chain from the root, root+1, root+2, ...,
 * and each non-root pulls the block in groups from the rank before it, a
 * group as soon as that rank has it: every GPU's engine and links carry the
 * block once, and only the chain's fill (n-2 groups) is added.
 *
 * relay (relay.c) cuts the block in parts instead; on 4 H200s it reached
 * 218 GB/s at 1 GB, as its non-roots pull from the root all at once
 * (docs/algorithms.md). Predicted on 4 GPUs at 256 MB-1 GB: 0.85-0.9x
 * NCCL's rate with 8 groups (the fill is n-2 groups); measured on 4 H200s
 * 0.87x and 0.90x (301 and 323 GB/s; docs/results/x4-h200/), the
 * Broadcast default from 4 MB on 3 ranks or more.
 *
 * Groups: planGroups of the block (a quarter, 2-16 MB, at most
 * PLAN_PIECE_GROUPS). Non-root rank r at position i = (r - root - 1) mod n
 * of the chain (0..n-2), its predecessor p (the root for i = 0), its
 * successor q (none for i = n-2), G groups:
 *
 *   root     round 0: SIGNAL ENTRY to root+1 (it will read my send buffer);
 *            the self copy, out of place
 *            round G+n+1: WAIT EXIT from root+1
 *   non-root i = 0, round 1: WAIT ENTRY from the root
 *            group g (round 1+g+i), lane 0: i > 0: WAIT PIECE+g from p;
 *              copy group g from p's buffer (the root's send buffer, or p's
 *              receive buffer) into my receive buffer; SIGNAL PIECE+g to q
 *            round G+n: SIGNAL EXIT to p
 *            round G+n+1: WAIT EXIT from q
 *
 * Only the root's send buffer is read before a signal (ENTRY); a non-root's
 * receive buffer is written by that rank alone, and read by its successor
 * only after its PIECE signal for the group, which follows its copy of it.
 * On 2 ranks the one non-root pulls the block from the root in groups.
 */
#include "plan_internal.h"

int planBuildChain(const planArgs *a, planSchedule *s) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, R = a->root, rc = 0;
  planScheduleReset(s, a, PLAN_ALGO_CHAIN);
  planBlock self = ci->block(a, R, R), b = n > 1 ? ci->block(a, R, (R + 1) % n) : self;
  int G = n > 1 ? planGroups(a, b.bytes) : 0, last = G + n;
  if (r == R) {
    s->round = 0;
    if (G) rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (R + 1) % n, PLAN_PHASE_ENTRY);
    if (!rc && self.bytes && !a->inPlace)
      rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_SEND, self.srcOff},
                       (planLoc){r, PLAN_BUF_RECV, self.dstOff}, self.bytes, 0);
    s->round = last + 1;
    if (!rc && G) rc = planAddSync(s, PLAN_STEP_WAIT, 0, (R + 1) % n, PLAN_PHASE_EXIT);
    return rc;
  }
  if (!G) return 0;
  int i = (r - R - 1 + n) % n, p = (r - 1 + n) % n, q = i < n - 2 ? (r + 1) % n : -1;
  s->round = 1;
  if (i == 0) rc = planAddSync(s, PLAN_STEP_WAIT, 0, R, PLAN_PHASE_ENTRY);
  for (int g = 0; g < G && !rc; g++) {
    size_t lo = planGroupAt(a, b.bytes, g), hi = planGroupAt(a, b.bytes, g + 1);
    planPhase piece = (planPhase)(PLAN_PHASE_PIECE + g);
    s->round = 1 + g + i;
    if (i > 0) rc = planAddSync(s, PLAN_STEP_WAIT, 0, p, piece);
    planLoc from = i == 0 ? (planLoc){R, PLAN_BUF_SEND, b.srcOff + lo}
                          : (planLoc){p, PLAN_BUF_RECV, b.dstOff + lo};
    if (!rc) rc = planAddCopy(s, 0, from, (planLoc){r, PLAN_BUF_RECV, b.dstOff + lo}, hi - lo, 0);
    if (!rc && q >= 0) rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, q, piece);
  }
  s->round = last;
  if (!rc) rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, p, PLAN_PHASE_EXIT);
  s->round = last + 1;
  if (!rc && q >= 0) rc = planAddSync(s, PLAN_STEP_WAIT, 0, q, PLAN_PHASE_EXIT);
  return rc;
}
