/*
 * Staged algorithms: the small-message path without an entry handshake.
 *
 * A direct algorithm (direct.c) writes into a peer's receive buffer, so it
 * must first learn that the peer's buffer is free (ENTRY) and then tell the
 * peer it is done (EXIT): two cross-GPU round trips per operation. Here every
 * rank owns stageSlots staging slots that only the library touches, so a
 * sender never waits for its peer's stream. Rank r, one lane:
 *
 *   copies    r's block for every rank p, itself included, into p's slot at
 *             block r (one batch command; in rank order for stage2d, so that
 *             a strided mapping makes it one 2D copy)
 *   DATA      SIGNAL(DATA) to every peer, ordered after the copies
 *   wait      WAIT(DATA) from every peer
 *   out       one local copy: r's whole slot into its receive buffer
 *
 * Rounds (plan.h): the copies and DATA signals are round 0, the DATA waits
 * and the out copy round 1.
 *
 * Slot k % stageSlots serves the k-th staged operation. Why two slots are
 * enough without any credit message: rank r writes into peer p's slot for
 * staged operation k only after its own operation k-1 waited for p's DATA of
 * k-1, which p raised after its out copy of k-2 completed (p's lane is in
 * order: out(k-2), copies(k-1), DATA(k-1)). So p has emptied every slot up
 * to k-2, and k's slot was last used by k - stageSlots <= k-2. Other
 * operations in between only add synchronization.
 *
 * The sender's send buffer is released when its copies complete (the rank's
 * own completion), and the receiver's buffer is written only by its own
 * out copy: no peer ever touches a user buffer.
 */
#include "plan_internal.h"

int planIsStaged(planAlgo a) {
  return a == PLAN_ALGO_STAGE || a == PLAN_ALGO_STAGE2D;
}

int planBuildStaged(const planArgs *a, const planLayout *l, planAlgo algo, planSchedule *s) {
  planScheduleReset(s, a, algo);
  if (a->chunkBytes == 0) return 0; /* nothing moves: no copy and no signal */
  if (a->stageSlots < 2 || a->stageIndex == 0) return -1;
  int n = a->nranks, r = a->rank, rc = 0;
  int inRankOrder = algo == PLAN_ALGO_STAGE2D;
  s->round = 0;
  /* Rotated order (peer r+1 first, self last) unless the rows must be in rank order. */
  for (int i = 0; i < n && !rc; i++) {
    int p = inRankOrder ? i : (r + 1 + i) % n;
    planLoc src = l->src(a, r, p);
    planLoc dst = {p, PLAN_BUF_STAGE, (size_t)r * a->chunkBytes};
    rc = planAddCopy(s, 0, src, dst, a->chunkBytes, inRankOrder ? 2 : 1);
  }
  for (int d = 1; d < n && !rc; d++)
    rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_DATA);
  s->round = 1;
  for (int d = 1; d < n && !rc; d++)
    rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_DATA);
  if (!rc)
    rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_STAGE, 0}, (planLoc){r, PLAN_BUF_RECV, 0},
                     (size_t)n * a->chunkBytes, 0);
  return rc;
}
