/*
 * Direct algorithms for the movement collectives: every rank exchanges its
 * blocks (the collective's block(from, to)) with its peers in one step,
 * peers visited in rotated order (rank r starts with r+1) so that no peer is
 * the first target of everyone.
 *
 *   push: I write my block for peer p into p's receive buffer.
 *   pull: I read p's block for me from p's send buffer.
 *
 * Handshakes only between ranks that share a block: the rank that copies
 * (the sender for push, the receiver for pull) waits for the other's ENTRY
 * and signals EXIT to it; the other signals ENTRY and waits for EXIT. Both
 * sides derive this from the same block function, so the pairs match; a
 * collective whose blocks are all empty has an empty schedule. With
 * planArgs.syncEvery (the one-lane forms) every pair of ranks exchanges
 * ENTRY and EXIT both ways, blocks or not (staged.c's AlltoAllv).
 *
 * Issue forms, in rounds (plan.h: round k waits only for signals of earlier
 * rounds, and every wait follows its own rank's earlier signals):
 *   *1  one lane. Round 0: signal ENTRY to all, self copy. Round 1: wait
 *       ENTRY from all, the peer copies back to back, signal EXIT to all.
 *       Round 2: wait EXIT from all.
 *   *n  one lane per peer (lane d-1 for the peer at distance d). Round 0:
 *       lane 0 signals ENTRY to all, then the other lanes join it, then the
 *       self copy (lane 0). Round 1: each lane waits for its peer's ENTRY,
 *       copies, signals EXIT to it. Round 2: lane 0 joins the others and
 *       waits for EXIT from all. Signals and the final waits stay on lane 0
 *       so that a peer lane's wait follows every ENTRY signal of its rank.
 *   *b  as *1, with the self and peer copies marked as one batch.
 *
 * split (Broadcast, Gather, Scatter): each block is moved by both of its
 * ends at once, each on its lane 0: the sender pushes its first half (rounded
 * down to PLAN_SPLIT_ALIGN), the receiver pulls the rest. Where a transfer
 * goes one way (the rooted collectives on 2 ranks) a single engine leaves
 * the link direction part idle; two engines on one direction measured
 * 199-214 GB/s each against 340-373 alone (2x H200,
 * docs/results/pull1-2xh200/). Rounds as *1; ranks that share a block in
 * either direction exchange ENTRY and EXIT both ways.
 *
 * In the *1 and *b forms and split a self copy of PLAN_SIDE_LANE_BYTES or more goes on
 * a lane of its own (lane 1), joined from lane 0 at the start and back at the
 * end: it moves HBM to HBM and needs no peer (the driver runs it as thread
 * blocks, not on a copy engine), so on its own lane it overlaps
 * the NVLink copies instead of delaying them (at 1 GB AllGather on 4 H200s it
 * was 256 MB in front of 768 MB of peer copies). Below that size the extra
 * lane's fork and join cost more host time than the overlap saves.
 */
#include "plan_internal.h"

#include <stdlib.h>

static int isPull(planAlgo a) {
  return a == PLAN_ALGO_PULL1 || a == PLAN_ALGO_PULLN || a == PLAN_ALGO_PULLB;
}
static int isPerPeer(planAlgo a) {
  return a == PLAN_ALGO_PUSHN || a == PLAN_ALGO_PULLN;
}
static int isBatch(planAlgo a) {
  return a == PLAN_ALGO_PUSHB || a == PLAN_ALGO_PULLB;
}

/* The block I copy with peer p (p may be me), and the one p copies with me. */
static planBlock mine(const planArgs *a, int pull, int p) {
  const planCollInfo *ci = planCollOf(a->coll);
  if (p == a->rank && a->inPlace) return (planBlock){0, 0, 0};
  return pull ? ci->block(a, p, a->rank) : ci->block(a, a->rank, p);
}
static planBlock theirs(const planArgs *a, int pull, int p) {
  const planCollInfo *ci = planCollOf(a->coll);
  return pull ? ci->block(a, a->rank, p) : ci->block(a, p, a->rank);
}

static int addBlockCopy(planSchedule *s, const planArgs *a, int pull, int p, int lane, int batch) {
  planBlock b = mine(a, pull, p);
  int from = pull ? p : a->rank, to = pull ? a->rank : p;
  if (!b.bytes) return 0;
  return planAddCopy(s, lane, (planLoc){from, PLAN_BUF_SEND, b.srcOff},
                     (planLoc){to, PLAN_BUF_RECV, b.dstOff}, b.bytes, batch);
}

/* Handshakes with peer at distance d (1..n-1): ENTRY/EXIT steps of lane. */
static int entrySignals(planSchedule *s, const planArgs *a, int pull) {
  int n = a->nranks, r = a->rank, rc = 0;
  for (int d = 1; d < n && !rc; d++)
    if (theirs(a, pull, (r + d) % n).bytes || a->syncEvery)
      rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  return rc;
}
static int exitWaits(planSchedule *s, const planArgs *a, int pull) {
  int n = a->nranks, r = a->rank, rc = 0;
  for (int d = 1; d < n && !rc; d++)
    if (theirs(a, pull, (r + d) % n).bytes || a->syncEvery)
      rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_EXIT);
  return rc;
}

/* The lane of the self copy: 0, or a side lane past the peer lanes. */
static int selfLane(const planArgs *a, size_t bytes, int peerLanes) {
  return a->nranks > 1 && bytes >= PLAN_SIDE_LANE_BYTES ? peerLanes : 0;
}

static int buildOneLane(const planArgs *a, planAlgo algo, planSchedule *s) {
  int n = a->nranks, r = a->rank, pull = isPull(algo), batch = isBatch(algo);
  size_t selfBytes = mine(a, pull, r).bytes;
  int side = selfBytes ? selfLane(a, selfBytes, 1) : 0, rc = 0;
  /* Round 0. On a side lane the self copy starts at once; on lane 0 it
   * overlaps the entry handshake with single copies and joins the batch in
   * batch form. */
  s->round = 0;
  if (side) rc = planAddJoin(s, side, 0);
  if (!rc && side) rc = addBlockCopy(s, a, pull, r, side, 0);
  if (!rc) rc = entrySignals(s, a, pull);
  if (!rc && !side && !batch) rc = addBlockCopy(s, a, pull, r, 0, 0);
  s->round = 1;
  for (int d = 1; d < n && !rc; d++)
    if (mine(a, pull, (r + d) % n).bytes || a->syncEvery)
      rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  if (!rc && !side && batch) rc = addBlockCopy(s, a, pull, r, 0, 1);
  for (int d = 1; d < n && !rc; d++) rc = addBlockCopy(s, a, pull, (r + d) % n, 0, batch);
  for (int d = 1; d < n && !rc; d++)
    if (mine(a, pull, (r + d) % n).bytes || a->syncEvery)
      rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_EXIT);
  s->round = 2;
  if (!rc) rc = exitWaits(s, a, pull);
  if (!rc && side) rc = planAddJoin(s, 0, side);
  return rc;
}

/* split: the bytes of a block its sender pushes (the receiver pulls the rest). */
static size_t splitPushed(size_t bytes) {
  return bytes / 2 / PLAN_SPLIT_ALIGN * PLAN_SPLIT_ALIGN;
}

/* split: whether rank r and peer p move a block between them, either way. */
static int splitShares(const planArgs *a, int p) {
  const planCollInfo *ci = planCollOf(a->coll);
  return ci->block(a, a->rank, p).bytes || ci->block(a, p, a->rank).bytes;
}

static int buildSplit(const planArgs *a, planSchedule *s) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0;
  size_t selfBytes = mine(a, 0, r).bytes;
  int side = selfBytes ? selfLane(a, selfBytes, 1) : 0;
  s->round = 0;
  if (side) rc = planAddJoin(s, side, 0);
  if (!rc && side) rc = addBlockCopy(s, a, 0, r, side, 0);
  for (int d = 1; d < n && !rc; d++)
    if (splitShares(a, (r + d) % n))
      rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  if (!rc && !side) rc = addBlockCopy(s, a, 0, r, 0, 0);
  s->round = 1;
  for (int d = 1; d < n && !rc; d++)
    if (splitShares(a, (r + d) % n))
      rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_ENTRY);
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n;
    planBlock out = ci->block(a, r, p), in = ci->block(a, p, r);
    size_t pushed = splitPushed(out.bytes), kept = splitPushed(in.bytes);
    if (pushed)
      rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_SEND, out.srcOff},
                       (planLoc){p, PLAN_BUF_RECV, out.dstOff}, pushed, 0);
    if (!rc && in.bytes > kept)
      rc = planAddCopy(s, 0, (planLoc){p, PLAN_BUF_SEND, in.srcOff + kept},
                       (planLoc){r, PLAN_BUF_RECV, in.dstOff + kept}, in.bytes - kept, 0);
  }
  for (int d = 1; d < n && !rc; d++)
    if (splitShares(a, (r + d) % n))
      rc = planAddSync(s, PLAN_STEP_SIGNAL, 0, (r + d) % n, PLAN_PHASE_EXIT);
  s->round = 2;
  for (int d = 1; d < n && !rc; d++)
    if (splitShares(a, (r + d) % n))
      rc = planAddSync(s, PLAN_STEP_WAIT, 0, (r + d) % n, PLAN_PHASE_EXIT);
  if (!rc && side) rc = planAddJoin(s, 0, side);
  return rc;
}

static int buildPerPeer(const planArgs *a, planAlgo algo, planSchedule *s) {
  int n = a->nranks, r = a->rank, pull = isPull(algo);
  int rc = 0;
  s->round = 0;
  rc = entrySignals(s, a, pull);
  /* Lane d-1 serves the peer at distance d, if I copy with it. */
  for (int d = 2; d < n && !rc; d++)
    if (mine(a, pull, (r + d) % n).bytes) rc = planAddJoin(s, d - 1, 0);
  /* The self copy stays on lane 0 here: with one lane per peer a side lane
   * makes nranks concurrent copies per GPU, more than its copy engines
   * (measured at 1 GB on 4 H200s: pushn 2265 us with it on lane 0, 3230 us
   * on a side lane). */
  if (!rc) rc = addBlockCopy(s, a, pull, r, 0, 0);
  s->round = 1;
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n, lane = d - 1;
    if (!mine(a, pull, p).bytes) continue;
    rc = planAddSync(s, PLAN_STEP_WAIT, lane, p, PLAN_PHASE_ENTRY);
    if (!rc) rc = addBlockCopy(s, a, pull, p, lane, 0);
    if (!rc) rc = planAddSync(s, PLAN_STEP_SIGNAL, lane, p, PLAN_PHASE_EXIT);
  }
  s->round = 2;
  for (int d = 2; d < n && !rc; d++)
    if (mine(a, pull, (r + d) % n).bytes) rc = planAddJoin(s, 0, d - 1);
  if (!rc) rc = exitWaits(s, a, pull);
  return rc;
}

int planBuildDirect(const planArgs *args, planAlgo algo, planSchedule *s) {
  planScheduleReset(s, args, algo);
  if (algo == PLAN_ALGO_SPLIT) return buildSplit(args, s);
  return isPerPeer(algo) ? buildPerPeer(args, algo, s) : buildOneLane(args, algo, s);
}

int planBuild(const planArgs *args, planAlgo algo, planSchedule *s) {
  if ((unsigned)args->coll >= PLAN_NUM_COLLS || (unsigned)algo >= PLAN_NUM_ALGOS ||
      args->nranks < 1 || args->rank < 0 || args->rank >= args->nranks ||
      !(planCollOf(args->coll)->algos & PLAN_ALGO_BIT(algo)) || planIsComposed(algo) ||
      (planCollOf(args->coll)->vector && !args->vec) ||
      (planCollOf(args->coll)->rooted && (args->root < 0 || args->root >= args->nranks)))
    return -1;
  if (args->notify && args->coll != PLAN_COLL_ALLGATHER && args->coll != PLAN_COLL_ALLGATHERV)
    return -1;
  int rc = planIsStaged(algo)        ? planBuildStaged(args, algo, s)
           : algo == PLAN_ALGO_RELAY ? planBuildRelay(args, s)
           : algo == PLAN_ALGO_CHAIN ? planBuildChain(args, s)
           : planCollOf(args->coll)->reduces && algo == PLAN_ALGO_PUSH1
               ? planBuildReducePush(args, s)
           : planCollOf(args->coll)->reduces ? planBuildReduce(args, s)
                                             : planBuildDirect(args, algo, s);
  return rc || !args->notify ? rc : planAddArrivals(s, args);
}
