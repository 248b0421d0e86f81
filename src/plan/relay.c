/*
 * relay: a rooted collective whose root sends every rank the same block
 * (Broadcast), as pulls that every rank but the root passes on. A GPU runs
 * its copies one after the other on one copy engine (docs/algorithms.md), so
 * a root that pushes, or that n-1 ranks pull from, moves n-1 blocks through
 * one engine or one GPU's links: on 4 H200s pushb reached 131 GB/s at 1 GB,
 * a third of NCCL's 360. Here the block is cut into n-1 parts, one per
 * non-root rank; a non-root pulls its own part from the root and every other
 * part from the rank that owns it, after that rank has it. Every GPU's
 * engine moves one block in all, and the root's links carry it once.
 * Measured there: 218 GB/s at 1 GB (docs/results/x4-h200/), likely because
 * the non-roots pull from the root all at once; chain.c, which does not,
 * reached 323 GB/s and is the default.
 *
 * Non-root rank r owns part i(r) = (r - root - 1) mod n; parts are cut on
 * PLAN_PIECE_ALIGN boundaries, and each into groups (planGroups: a quarter
 * of the part, 2-16 MB), so that a rank passes a group on as soon as it has
 * it. Rank r, part P, G groups, Gmax the most groups of any part:
 *
 *   root     round 0: SIGNAL ENTRY to every non-root whose part is not
 *            empty (it will read my send buffer); the self copy, out of place
 *            round 3+Gmax: WAIT EXIT from each of them
 *   non-root round 1: WAIT ENTRY from the root (P not empty)
 *            group g of P (round 1+g), lane 0: copy it from the root's send
 *              buffer into my receive buffer, SIGNAL PIECE+g to every other
 *              non-root
 *            lane 1, for every g < Gmax (round 2+g): JOIN lane 0 (after my
 *              signals: queue safety, rule 2), then for every other non-root
 *              p with a group g: WAIT PIECE+g from p, copy p's group g from
 *              p's receive buffer into mine
 *            round 2+Gmax, lane 0: JOIN lane 1; SIGNAL EXIT to the root (P
 *              not empty) and to every non-root whose part I read
 *            round 3+Gmax: WAIT EXIT from every other non-root (P not empty:
 *              they read my receive buffer)
 *
 * Only the root's send buffer is read before a signal (ENTRY); a non-root's
 * receive buffer is written by that rank alone, and read by its peers only
 * after its PIECE signal for the group, which follows its own copy of it.
 * On 2 ranks the one non-root pulls the block from the root in groups.
 */
#include "plan_internal.h"

enum { LANE_PASS = 1 };

typedef struct {
  const planArgs *a;
  planBlock b; /* the root's block, the same for every rank */
  int n, root, parts;
} relay;

static int partOf(const relay *x, int t) {
  return (t - x->root - 1 + x->n) % x->n;
}
static size_t partLo(const relay *x, int t) {
  return planCutAt(x->b.bytes, x->parts, partOf(x, t));
}
static size_t partBytes(const relay *x, int t) {
  return planCutAt(x->b.bytes, x->parts, partOf(x, t) + 1) - partLo(x, t);
}

/* Copy group g of rank t's part from rank `from`'s buffer into mine. */
static int copyGroup(planSchedule *s, const relay *x, int lane, int t, int from, planBuf buf,
                     int g) {
  size_t P = partBytes(x, t), lo = partLo(x, t) + planGroupAt(x->a, P, g),
         hi = partLo(x, t) + planGroupAt(x->a, P, g + 1);
  size_t srcOff = (buf == PLAN_BUF_SEND ? x->b.srcOff : x->b.dstOff) + lo;
  return planAddCopy(s, lane, (planLoc){from, buf, srcOff},
                     (planLoc){x->a->rank, PLAN_BUF_RECV, x->b.dstOff + lo}, hi - lo, 0);
}

/* Lane 1: the other non-roots' groups g, as each arrives (round 2+g). */
static int passGroup(planSchedule *s, const relay *x, int g) {
  int r = x->a->rank, rc = 0;
  s->round = 2 + g;
  rc = planAddJoin(s, LANE_PASS, 0);
  for (int d = 1; d < x->n && !rc; d++) {
    int p = (r + d) % x->n;
    if (p == x->root || g >= planGroups(x->a, partBytes(x, p))) continue;
    rc = planAddSync(s, PLAN_STEP_WAIT, LANE_PASS, p, (planPhase)(PLAN_PHASE_PIECE + g));
    if (!rc) rc = copyGroup(s, x, LANE_PASS, p, p, PLAN_BUF_RECV, g);
  }
  return rc;
}

int planBuildRelay(const planArgs *a, planSchedule *s) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, R = a->root, rc = 0;
  planScheduleReset(s, a, PLAN_ALGO_RELAY);
  relay x = {a, n > 1 ? ci->block(a, R, (R + 1) % n) : ci->block(a, R, R), n, R, n - 1};
  int Gmax = 0;
  for (int t = 0; t < n; t++)
    if (t != R && planGroups(a, partBytes(&x, t)) > Gmax) Gmax = planGroups(a, partBytes(&x, t));
  if (r == R) {
    planBlock self = ci->block(a, R, R);
    s->round = 0;
    for (int d = 1; d < n && !rc; d++)
      if (partBytes(&x, (r + d) % n))
        rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_ENTRY);
    if (!rc && self.bytes && !a->inPlace)
      rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_SEND, self.srcOff},
                       (planLoc){r, PLAN_BUF_RECV, self.dstOff}, self.bytes, 0);
    s->round = 3 + Gmax;
    for (int d = 1; d < n && !rc; d++)
      if (partBytes(&x, (r + d) % n))
        rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_EXIT);
    return rc;
  }
  size_t P = partBytes(&x, r);
  int G = planGroups(a, P), pass = n > 2 && Gmax > 0;
  s->round = 1;
  if (P) rc = planAddSync(s, PLAN_STEP_WAIT, 0, R, PLAN_PHASE_ENTRY);
  for (int g = 0; g < G && !rc; g++) {
    s->round = 1 + g;
    rc = copyGroup(s, &x, 0, r, R, PLAN_BUF_SEND, g);
    for (int d = 1; d < n && !rc; d++)
      if ((r + d) % n != R)
        rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, (planPhase)(PLAN_PHASE_PIECE + g));
    if (!rc && pass) rc = passGroup(s, &x, g);
  }
  for (int g = G; g < Gmax && pass && !rc; g++) rc = passGroup(s, &x, g);
  s->round = 2 + Gmax;
  if (!rc && pass) rc = planAddJoin(s, 0, LANE_PASS);
  if (!rc && P) rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, R, PLAN_PHASE_EXIT);
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n;
    if (p != R && partBytes(&x, p)) rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, p, PLAN_PHASE_EXIT);
  }
  s->round = 3 + Gmax;
  for (int d = 1; d < n && !rc && P; d++)
    if ((r + d) % n != R) rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_EXIT);
  return rc;
}
