/*
 * Staged algorithms: the small-message path without an entry handshake.
 *
 * A direct algorithm (direct.c) writes into a peer's receive buffer, so it
 * must first learn that the peer's buffer is free (ENTRY) and then tell the
 * peer it is done (EXIT): two cross-GPU round trips per operation. Here every
 * rank owns stageSlots staging slots that only the library touches, so a
 * sender never waits for its peer's stream. Rank r, one lane:
 *
 *   copies    movement: r's block for every rank p, itself included (not
 *             with stageSelfLate: below), into p's slot where it will lie in
 *             p's receive buffer (the slot mirrors the receive buffer);
 *             reductions: r's contribution to
 *             every peer p's result into p's slot at position r (one batch
 *             command; in rank order for stage2d, so that a strided mapping
 *             makes it one 2D copy)
 *   DATA      SIGNAL(DATA) to every peer, ordered after the copies
 *   wait      WAIT(DATA) from every peer
 *   out       movement: local copies of the slot's filled ranges into the
 *             receive buffer (one for contiguous blocks; with stageSelfLate
 *             the own block went straight from the send buffer to the
 *             receive buffer after the DATA signals, and the out copies
 *             skip it); reductions: one
 *             REDUCE of the slot's n positions (r's own from its send
 *             buffer) into the receive buffer. AllReduce takes the one-shot
 *             form: every rank reduces the whole count.
 *
 * Rounds (plan.h): the copies, DATA signals and a stageSelfLate own-block
 * copy are round 0, the DATA waits and the out copy round 1.
 *
 * With kernelWait (reductions), the DATA waits and the REDUCE go on lane 1,
 * which lane 0 forks at the start and joins at the end, and the waits are
 * inKernel: the CUDA executor launches the reduction kernel right away and
 * the kernel polls the DATA flags itself, so its launch overlaps the copies
 * and the peers' signals instead of following a stream wait. Where the
 * REDUCE writes what the copies read (an in-place AllReduce), lane 1 also
 * joins lane 0 after the DATA signals, and that JOIN is polled too (lane 0
 * writes a word of the rank's own at that point). A kernel that polls
 * holds no hardware queue, so rule 2 (a WAIT after the rank's own earlier
 * SIGNALs) is not needed for it; the slot argument below is unchanged,
 * since lane 0 joins lane 1 before the next operation's copies.
 *
 * stagesm (reductions) is the same schedule with no copy engine on its
 * path: on a rank that reduces, the copies, the DATA signals and the DATA
 * waits are all inKernel on lane 0, before the REDUCE: one kernel stores the
 * rank's contributions into the peers' slots, writes their DATA words once
 * every thread block's stores are done, polls its own and reduces. A copy
 * engine's copy into a peer costs about 13 us after a kernel on an H100; a
 * kernel that stores, signals and polls, 4-6 in all (docs/latency-notes.md).
 * For the small reductions of decode, whose arithmetic already needs the
 * kernel, its stores are the faster path. Other executors run the steps in
 * order, as for stage.
 *
 * stagell is stagesm with the flags in the data (NCCL's LL protocol): the
 * copies go into the peers' line slots (PLAN_BUF_LINES), each 8 data bytes
 * in a 16-byte line with two flag words, and the REDUCE reads its peers'
 * lines there, waiting for each line's flags and clearing the line once
 * read. No DATA SIGNAL or WAIT: a line is its own signal, so the kernel
 * needs no system fence before a flag, no flag write after its stores, no
 * poll of a separate word and no reset; the peer sees each line as it
 * lands (2 us less than stagesm per operation in the probe:
 * docs/latency-notes.md). The lines double the bytes that travel, so it
 * serves the small sizes, where a line slot (planArgs.lineBytes) holds the
 * operation; it needs every rank to reduce and to send to every peer (the
 * slot argument below, with "waited for p's DATA" read as "read p's
 * lines"). Where that does not hold it builds stagesm's schedule. The slot
 * argument also makes clearing safe: the lines of slot k % 2 are written
 * again only by operation k + 2, which a peer starts after it read this
 * rank's lines of k + 1, written after this rank's operation k (its reads
 * and clears) completed.
 *
 * stagell also serves AllGather(V) and AlltoAll (addLinesMove): the
 * kernel stores this rank's block for every peer as lines into the peer's
 * line slot (at this rank's share, lineBytes / (n - 1)) and, out of place, its
 * own block into its receive buffer; then a REDUCE of one source per peer
 * (a copy of bytes) takes that peer's lines into its place (the CUDA
 * executor runs them all in that one kernel, issueKernelRun's takes, but
 * where a NOTIFY follows a REDUCE: planAddArrivals). The data moves on
 * SMs, not copy engines: this is the small-message form for CUDA graphs, where a
 * copy engine's copy after a kernel costs 11-14 us and NCCL's kernels
 * 6-7 us in all. Broadcast, Gather and Scatter (and so Send/Recv) take it
 * too. The slot argument needs every rank to send lines to every peer:
 * where a block is empty, a token line goes instead (addLinesMove); where a
 * block's lines exceed the share, it builds stage's schedule.
 *
 * twoshot (AllReduce) is stagesm in two kernels, for the sizes where the
 * one-shot form's n-1 copies of the whole buffer per rank cost more than a
 * second round. The first kernel is stagesm's ReduceScatter over
 * AllReduce's parts (coll_reduce.c): rank r stores part p of its send
 * buffer at position r of p's slot, signals DATA, polls its peers' DATA and
 * reduces its own part into its receive buffer. The second stores that
 * reduced part straight into every peer's receive buffer at the same
 * place, signals EXIT to every peer and polls theirs (its REDUCE is empty:
 * a kernel run ends in one). No entry handshake is needed for those
 * stores: a peer's DATA of this operation says its stream has reached the
 * operation (its receive buffer is this operation's) and that its kernel
 * has read the parts of its send buffer it sends (in place, the parts a
 * peer writes); it writes its own part there itself, and reads nothing
 * the peers write. The EXIT polls keep every rank in the operation until
 * the peers' stores into its buffer are done. Each rank sends 2(n-1)/n of
 * the buffer instead of n-1 times it. Where an AllReduce has a part of 0
 * bytes (under 256 bytes per rank) or more than PLAN_SM_MAX_PEERS peers,
 * it is stagesm's schedule (and then stage's).
 *
 * With stageEntry, an ENTRY handshake comes first (ENTRY signals round 0;
 * ENTRY waits, copies and DATA signals round 1; DATA waits and out round
 * 2): a peer's ENTRY says its stream reached this operation, so it has
 * emptied its slots and reset its flags of every earlier one, whatever
 * they were. CUDA graphs need it (docs/architecture.md, "Graphs"): their
 * flags hold fixed values, so a wait cannot tell one replay's signal from
 * the next, and the first staged operation of a graph cannot know which
 * operation used its slot last. The later ones of the same graph can: it
 * was the one two places before them in that graph, and the argument
 * below holds with "staged operation" read as "staged operation of this
 * graph".
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
 * out step (and its own stageSelfLate copy): no peer touches a user buffer,
 * but in twoshot's second kernel (above). A rank raises DATA to and waits
 * for DATA from every peer, even one it shares no block with, so that the
 * argument above holds for every collective; and every numbered staged
 * operation does, even one whose ranks disagree about its arguments (the
 * core then runs the handshakes alone: launch_mp.c).
 */
#include "plan_internal.h"

#include <stdint.h>
#include <stdlib.h>

int planIsStaged(planAlgo a) {
  return a == PLAN_ALGO_STAGE || a == PLAN_ALGO_STAGE2D || a == PLAN_ALGO_STAGESM ||
         a == PLAN_ALGO_STAGELL || a == PLAN_ALGO_TWOSHOT;
}

int planRunsAtCall(planColl coll, planAlgo a) {
  return planIsStaged(a) && a != PLAN_ALGO_TWOSHOT && (unsigned)coll < PLAN_NUM_COLLS &&
         !planCollOf(coll)->peerArrays;
}

/* twoshot's form: an AllReduce whose every part is non-empty, on 2 to
 * PLAN_SM_MAX_PEERS + 1 ranks. The same verdict on every rank. */
static int twoShotFits(const planArgs *a) {
  int n = a->nranks;
  if (a->coll != PLAN_COLL_ALLREDUCE || n < 2 || n - 1 > PLAN_SM_MAX_PEERS) return 0;
  for (int t = 0; t < n; t++)
    if (!planCollOf(a->coll)->target(a, t, 0).bytes) return 0;
  return 1;
}

/* twoshot: the bytes between two positions of a slot holding parts of
 * `part` bytes (every position aligned). */
static size_t twoShotStride(size_t part) {
  return (part + 255) / 256 * 256;
}

size_t planStagePosition(const planArgs *a, planAlgo algo, int t) {
  const planCollInfo *ci = planCollOf(a->coll);
  if (algo != PLAN_ALGO_TWOSHOT || !twoShotFits(a)) return ci->target(a, t, 1).bytes;
  return twoShotStride(ci->target(a, t, 0).bytes);
}

/* stagell's line form: every rank reduces something (so every rank's kernel
 * sends lines to, and reads lines from, every peer) and each peer's lines
 * fit its share of a line slot. The same verdict on every rank. */
static int linesFit(const planArgs *a) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks;
  if (!ci->reduces || n < 2 || n - 1 > PLAN_SM_MAX_PEERS || !a->lineBytes) return 0;
  for (int t = 0; t < n; t++) {
    size_t b = ci->target(a, t, 1).bytes;
    if (!b || b > a->lineBytes || planLinesBytes(b) > a->lineBytes / (size_t)(n - 1)) return 0;
  }
  return 1;
}

/* stagell for a movement collective: each rank's share of a peer's line
 * slot (lineBytes / (n - 1), a multiple of 16), at its place
 * (planLinePlace). */
static size_t lineShare(const planArgs *a) {
  return a->nranks < 2 ? 0 : a->lineBytes / (size_t)(a->nranks - 1) / 16 * 16;
}

/* ... and whether its lines fit: every block to a peer, or the token
 * that stands for an empty one, in a share (AlltoAllv's blocks also at most
 * PLAN_V_LINES_MAX). The same verdict on every rank
 * (the rooted forms' blocks and the V form's arrays are every rank's, and
 * AlltoAllv's are built only once every rank's arrays are at hand:
 * planBuildStaged). */
static int linesFitMove(const planArgs *a) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks;
  /* n - 1 line stores and the own block's copy: one kernel's moves */
  if (ci->reduces || n < 2 || n > PLAN_SM_MAX_PEERS || !a->lineBytes) return 0;
  for (int f = 0; f < n; f++)
    for (int t = 0; t < n; t++) {
      size_t b = f != t ? ci->block(a, f, t).bytes : 0;
      if (f != t && (planLinesBytes(b) > lineShare(a) || (ci->peerArrays && b > PLAN_V_LINES_MAX)))
        return 0;
    }
  return 1;
}

/* A COPY the kernel does (inKernel), on lane 0. */
static int addKernelCopy(planSchedule *s, planLoc from, planLoc to, size_t bytes) {
  int rc = planAddCopy(s, 0, from, to, bytes, 0);
  if (!rc) s->steps[s->nsteps - 1].inKernel = 1;
  return rc;
}

/* The movement forms' own block, out of place, straight into its place by
 * the kernel (in place it is there already). */
static int addOwnBlockInKernel(planSchedule *s, const planArgs *a) {
  int r = a->rank;
  planBlock self = planCollOf(a->coll)->block(a, r, r);
  if (!self.bytes || a->inPlace) return 0;
  return addKernelCopy(s, (planLoc){r, PLAN_BUF_SEND, self.srcOff},
                       (planLoc){r, PLAN_BUF_RECV, self.dstOff}, self.bytes);
}

/* stagell's movement form: one kernel stores this rank's block for every
 * peer as lines into the peer's line slot and (out of place) copies its own
 * block into place; then each peer's lines are taken into that peer's
 * place in the receive buffer by a REDUCE of that one source (a REDUCE of
 * one source copies bytes: plan.h), all in the same kernel on the CUDA
 * executor (issueKernelRun's takes; with arrival words each NOTIFY after a
 * REDUCE ends the kernel there, so that it follows its own block). No copy
 * engine, no DATA word: a line is its own signal.
 *
 * Where a block is empty (a rooted collective's blocks between the root's
 * peers and from them to a Broadcast's or Scatter's root, an AllGatherV's
 * empty block), the COPY is a token and so is the REDUCE that takes it: one
 * line with no data (plan.h planLines). The slot argument needs it: every
 * rank hears from every peer in every staged operation, or a rank that
 * only sends (a Broadcast's root) would write a peer's slot again two
 * operations on while the peer may still be reading it. The REDUCEs of
 * data come first (the first is the kernel's own), the tokens' after. */
static int addLinesMove(planSchedule *s, const planArgs *a) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0;
  size_t share = lineShare(a);
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n;
    planBlock b = ci->block(a, r, p);
    rc = addKernelCopy(s, (planLoc){r, PLAN_BUF_SEND, b.bytes ? b.srcOff : 0},
                       (planLoc){p, PLAN_BUF_LINES, planLinePlace(r, p, n) * share}, b.bytes);
  }
  if (!rc) rc = addOwnBlockInKernel(s, a);
  s->round++;
  for (int tokens = 0; tokens < 2; tokens++)
    for (int d = 1; d < n && !rc; d++) {
      int p = (r + n - d) % n; /* the peer whose lines were stored first */
      planBlock b = ci->block(a, p, r);
      if ((b.bytes == 0) != tokens) continue;
      planLoc src = {r, PLAN_BUF_LINES, planLinePlace(p, r, n) * share};
      rc = planAddReduce(s, 0, &src, 1, (planLoc){r, PLAN_BUF_RECV, b.bytes ? b.dstOff : 0},
                         b.bytes);
      if (!rc) s->steps[s->nsteps - 1].peer = p; /* whose lines (plan.h) */
    }
  return rc;
}

/* stagesm's movement form (AllGather(V), AlltoAll, Broadcast, Gather,
 * Scatter): stage's schedule with the kernel on its whole path, as for the
 * reductions. One kernel stores this rank's block for every peer into the
 * peer's staging slot at its place (plain stores, the bytes once, where
 * stagell's lines carry each 8 bytes in 16), copies its own block into
 * place out of place, writes the peers' DATA words once every block's
 * stores are done (a system fence first), polls its own, and takes each
 * peer's block out of its slot into place: one REDUCE of one STAGE source
 * per peer that sent it something, which copies bytes (plan.h), the first
 * the kernel's own and the others its takes on the CUDA executor. A rank
 * that receives nothing (a Broadcast's root, a Gather's non-root) ends the
 * kernel with an empty REDUCE, as twoshot's second kernel does. DATA goes
 * to and comes from every peer, a block or none, as the slot argument
 * above needs. No copy engine and no dependent copy behind a stream wait:
 * a copy engine's copy after a kernel starts about 13 us late
 * (docs/results/stagesm-2xh100/), and the staged form's dependent local
 * copy costs a round of its own. */
static int syncAll(planSchedule *s, const planArgs *a, planStepKind kind, planPhase phase, int lane,
                   int inKernel);

static int addSmMove(planSchedule *s, const planArgs *a) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank, rc = 0, outs = 0;
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + d) % n;
    planBlock b = ci->block(a, r, p);
    if (b.bytes)
      rc = addKernelCopy(s, (planLoc){r, PLAN_BUF_SEND, b.srcOff},
                         (planLoc){p, PLAN_BUF_STAGE, b.dstOff}, b.bytes);
  }
  if (!rc) rc = addOwnBlockInKernel(s, a);
  if (!rc) rc = syncAll(s, a, PLAN_STEP_SIGNAL, PLAN_PHASE_DATA, 0, 1);
  s->round++;
  if (!rc) rc = syncAll(s, a, PLAN_STEP_WAIT, PLAN_PHASE_DATA, 0, 1);
  for (int d = 1; d < n && !rc; d++) {
    int p = (r + n - d) % n; /* the peer that stored first */
    planBlock b = ci->block(a, p, r);
    if (!b.bytes) continue;
    planLoc src = {r, PLAN_BUF_STAGE, b.dstOff};
    rc = planAddReduce(s, 0, &src, 1, (planLoc){r, PLAN_BUF_RECV, b.dstOff}, b.bytes);
    if (!rc) s->steps[s->nsteps - 1].peer = p, outs++;
  }
  if (!rc && !outs) {
    planLoc none = {r, PLAN_BUF_RECV, 0};
    rc = planAddReduce(s, 0, &none, 1, none, 0);
  }
  return rc;
}

int planVMovesLines(const planArgs *a) {
  for (int r = 0; r < a->nranks; r++)
    if (!a->vec || !a->vec[r]) return 0;
  return linesFitMove(a);
}

/* AlltoAllv (a layout that needs every rank's arrays: planCollInfo.
 * peerArrays) takes stagell only: the movement form's lines where every
 * block of the operation, any two ranks', fits a share and is at most
 * PLAN_V_LINES_MAX (planVMovesLines); where one does not,
 * pushb's schedule with ENTRY and EXIT between every two ranks
 * (planArgs.syncEvery). Each rank reads the whole count matrix, so every
 * rank reaches the same verdict; the core builds it only once every rank
 * has called and published its arrays (a direct operation,
 * planRunsAtCall). Every such operation is numbered, whatever its size,
 * and meets every peer, as the slot argument above needs: the lines with a
 * token for an empty block, the fallback with its handshakes, so a later
 * operation's lines never land in a share a peer may still read. */
static int buildPeerArrays(const planArgs *a, planAlgo algo, planSchedule *s) {
  int n = a->nranks;
  for (int r = 0; r < n; r++)
    if (!a->vec || !a->vec[r]) return -1;
  if (algo != PLAN_ALGO_STAGELL || a->stageSlots < 2 || a->stageIndex == 0) return -1;
  if (!planVMovesLines(a)) {
    planArgs b = *a;
    b.syncEvery = 1;
    return planBuildDirect(&b, PLAN_ALGO_PUSHB, s);
  }
  s->round = 0;
  int rc = 0;
  if (a->stageEntry) {
    rc = syncAll(s, a, PLAN_STEP_SIGNAL, PLAN_PHASE_ENTRY, 0, 0);
    s->round = 1;
    if (!rc) rc = syncAll(s, a, PLAN_STEP_WAIT, PLAN_PHASE_ENTRY, 0, 0);
  }
  return rc ? rc : addLinesMove(s, a);
}

/* The block rank `from` puts into rank `to`'s slot: src in from's send
 * buffer, dst in to's slot (`two`: twoshot's parts). */
static planBlock stagedBlock(const planArgs *a, int from, int to, int two) {
  const planCollInfo *ci = planCollOf(a->coll);
  if (!ci->reduces) return ci->block(a, from, to);
  planBlock t = ci->target(a, to, !two);
  return (planBlock){t.srcOff, (size_t)from * (two ? twoShotStride(t.bytes) : t.bytes), t.bytes};
}

/* The out copies of a movement collective: the filled ranges of my slot,
 * merged where they touch, in order of their place in the receive buffer. */
static int addOutCopies(planSchedule *s, const planArgs *a) {
  int n = a->nranks, r = a->rank, rc = 0;
  int *order = malloc((size_t)n * sizeof(int));
  if (!order) return -1;
  int k = 0;
  for (int f = 0; f < n; f++) {
    planBlock b = stagedBlock(a, f, r, 0);
    if (!b.bytes || (f == r && a->stageSelfLate)) continue;
    int j = k++;
    for (; j > 0 && stagedBlock(a, order[j - 1], r, 0).dstOff > b.dstOff; j--)
      order[j] = order[j - 1];
    order[j] = f;
  }
  for (int i = 0; i < k && !rc;) {
    planBlock b = stagedBlock(a, order[i], r, 0);
    size_t lo = b.dstOff, hi = b.dstOff + b.bytes;
    for (i++; i < k; i++) {
      planBlock c = stagedBlock(a, order[i], r, 0);
      if (c.dstOff != hi) break;
      hi += c.bytes;
    }
    rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_STAGE, lo}, (planLoc){r, PLAN_BUF_RECV, lo},
                     hi - lo, 0);
  }
  free(order);
  return rc;
}

/* With arrival words (planArgs.notify): the out step block by block, each
 * copied as soon as its sender's DATA is here, so that its NOTIFY
 * (planAddArrivals) follows its own copy and not the last peer's: the own
 * block first (it is in my slot already, or, with stageSelfLate, copied
 * straight), then per peer in rotated order the DATA wait and the copy.
 * Every wait still comes after all of round 0's signals. */
static int addOutBlocks(planSchedule *s, const planArgs *a) {
  int n = a->nranks, r = a->rank, rc = 0;
  for (int d = 0; d < n && !rc; d++) {
    int p = (r + d) % n;
    if (d) rc = planAddSync(s, PLAN_STEP_WAIT, 0, p, PLAN_PHASE_DATA);
    planBlock b = stagedBlock(a, p, r, 0);
    if (!rc && b.bytes && !(p == r && a->stageSelfLate))
      rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_STAGE, b.dstOff},
                       (planLoc){r, PLAN_BUF_RECV, b.dstOff}, b.bytes, 0);
  }
  return rc;
}

/* A reduction's out step: my slot's positions (mine from my send buffer);
 * `lines`: the peers' in my line slot; `two`: twoshot's part. */
static int addOutReduce(planSchedule *s, const planArgs *a, int lane, int lines, int two) {
  int n = a->nranks, r = a->rank;
  planBlock t = planCollOf(a->coll)->target(a, r, !two);
  if (!t.bytes) return 0;
  planLoc *src = malloc((size_t)n * sizeof(*src));
  if (!src) return -1;
  for (int i = 0; i < n; i++)
    src[i] = i == r ? (planLoc){r, PLAN_BUF_SEND, t.srcOff}
             : lines
                 ? (planLoc){r, PLAN_BUF_LINES, planLinePlace(i, r, n) * planLinesBytes(t.bytes)}
                 : (planLoc){r, PLAN_BUF_STAGE, stagedBlock(a, i, r, two).dstOff};
  int rc = planAddReduce(s, lane, src, n, (planLoc){r, PLAN_BUF_RECV, t.dstOff}, t.bytes);
  free(src);
  return rc;
}

/* One SIGNAL or WAIT of phase to every peer, in rotated order, on a lane;
 * inKernel marks the ones the REDUCE after them does itself. */
static int syncAll(planSchedule *s, const planArgs *a, planStepKind kind, planPhase phase, int lane,
                   int inKernel) {
  int rc = 0;
  for (int d = 1; d < a->nranks && !rc; d++) {
    rc = planAddSync(s, kind, lane, (a->rank + d) % a->nranks, phase);
    if (!rc) s->steps[s->nsteps - 1].inKernel = inKernel;
  }
  return rc;
}

/* In place, whether a peer's part of my send buffer overlaps my result
 * (AllReduce: the whole buffer), which the REDUCE then overwrites. */
static int reduceOverwritesSources(const planArgs *a) {
  if (!a->inPlace) return 0;
  const planCollInfo *ci = planCollOf(a->coll);
  planBlock mine = ci->target(a, a->rank, 1);
  for (int p = 0; p < a->nranks; p++) {
    planBlock b = stagedBlock(a, a->rank, p, 0);
    if (p != a->rank && b.bytes && mine.bytes && b.srcOff < mine.srcOff + mine.bytes &&
        mine.srcOff < b.srcOff + b.bytes)
      return 1;
  }
  return 0;
}

/* twoshot's second kernel: my reduced part into every peer's receive buffer,
 * EXIT to every peer (round + 1), the peers' EXIT polled (round + 2), and
 * the empty REDUCE that ends the kernel's steps. */
static int addSecondShot(planSchedule *s, const planArgs *a) {
  int n = a->nranks, r = a->rank, rc = 0;
  planBlock mine = planCollOf(a->coll)->target(a, r, 0);
  planLoc part = {r, PLAN_BUF_RECV, mine.dstOff};
  for (int d = 1; d < n && !rc; d++) {
    rc = planAddCopy(s, 0, part, (planLoc){(r + d) % n, PLAN_BUF_RECV, mine.dstOff}, mine.bytes, 0);
    if (!rc) s->steps[s->nsteps - 1].inKernel = 1;
  }
  if (!rc) rc = syncAll(s, a, PLAN_STEP_SIGNAL, PLAN_PHASE_EXIT, 0, 1);
  s->round++;
  if (!rc) rc = syncAll(s, a, PLAN_STEP_WAIT, PLAN_PHASE_EXIT, 0, 1);
  if (!rc) rc = planAddReduce(s, 0, &part, 1, part, 0);
  return rc;
}

int planBuildStaged(const planArgs *a, planAlgo algo, planSchedule *s) {
  const planCollInfo *ci = planCollOf(a->coll);
  planScheduleReset(s, a, algo);
  if (ci->peerArrays) return buildPeerArrays(a, algo, s);
  /* Nothing moves anywhere (the size is the same on every rank): no copy
   * and no signal. */
  if (ci->size(a) == 0) return 0;
  if (a->stageSlots < 2 || a->stageIndex == 0) return -1;
  int n = a->nranks, r = a->rank, rc = 0;
  int inRankOrder = algo == PLAN_ALGO_STAGE2D;
  /* One rank: no staging at all; a reduction of one rank is its input. */
  if (n == 1 && ci->reduces) {
    planBlock t = ci->target(a, 0, 1);
    if (a->inPlace || !t.bytes) return 0;
    return planAddCopy(s, 0, (planLoc){0, PLAN_BUF_SEND, t.srcOff},
                       (planLoc){0, PLAN_BUF_RECV, t.dstOff}, t.bytes, 0);
  }
  s->round = 0;
  /* stagesm: the kernel does the copies, signals and waits (a rank with
   * nothing to reduce runs them as stage does). kernelWait: the REDUCE's
   * lane, forked now; `late`: it also polls for lane 0 after the DATA
   * signals (the REDUCE overwrites what they read). */
  int ll = algo == PLAN_ALGO_STAGELL && linesFit(a);
  int two = algo == PLAN_ALGO_TWOSHOT && twoShotFits(a);
  int sm = (algo == PLAN_ALGO_STAGESM || algo == PLAN_ALGO_STAGELL || algo == PLAN_ALGO_TWOSHOT) &&
           ci->reduces && ci->target(a, r, 1).bytes && n - 1 <= PLAN_SM_MAX_PEERS;
  int kw = !sm && ci->reduces && a->kernelWait && ci->target(a, r, 1).bytes;
  int late = kw && reduceOverwritesSources(a);
  if (kw) rc = planAddJoin(s, 1, 0);
  if (a->stageEntry && !rc) {
    rc = syncAll(s, a, PLAN_STEP_SIGNAL, PLAN_PHASE_ENTRY, 0, 0);
    s->round = 1;
    if (!rc) rc = syncAll(s, a, PLAN_STEP_WAIT, PLAN_PHASE_ENTRY, 0, 0);
  }
  if (algo == PLAN_ALGO_STAGELL && !ci->reduces && linesFitMove(a))
    return rc ? rc : addLinesMove(s, a);
  /* n - 1 stores and the own block's copy: one kernel's moves
   * (EXEC_REDUCE_MAX_MOVES), as for the lines */
  if (algo == PLAN_ALGO_STAGESM && !ci->reduces && n <= PLAN_SM_MAX_PEERS)
    return rc ? rc : addSmMove(s, a);
  /* Rotated order (peer r+1 first, self last) unless the rows must be in
   * rank order. A reduction reads its own part from its send buffer. */
  int selfLate = a->stageSelfLate && !ci->reduces;
  for (int i = 0; i < n && !rc; i++) {
    int p = inRankOrder ? i : (r + 1 + i) % n;
    planBlock b = stagedBlock(a, r, p, two);
    if (!b.bytes || ((ci->reduces || selfLate) && p == r)) continue;
    planLoc to = ll ? (planLoc){p, PLAN_BUF_LINES, planLinePlace(r, p, n) * planLinesBytes(b.bytes)}
                    : (planLoc){p, PLAN_BUF_STAGE, b.dstOff};
    rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_SEND, b.srcOff}, to, b.bytes,
                     sm            ? 0
                     : inRankOrder ? 2
                                   : 1);
    if (!rc) s->steps[s->nsteps - 1].inKernel = sm;
  }
  if (!rc && !ll) rc = syncAll(s, a, PLAN_STEP_SIGNAL, PLAN_PHASE_DATA, 0, sm);
  if (late && !rc && !(rc = planAddJoin(s, 1, 0))) s->steps[s->nsteps - 1].inKernel = 1;
  /* The own block, straight to its place (in place it is there already, as
   * direct.c's self copy takes it). */
  planBlock self = selfLate && !a->inPlace ? stagedBlock(a, r, r, 0) : (planBlock){0, 0, 0};
  if (self.bytes && !rc)
    rc = planAddCopy(s, 0, (planLoc){r, PLAN_BUF_SEND, self.srcOff},
                     (planLoc){r, PLAN_BUF_RECV, self.dstOff}, self.bytes, 0);
  s->round++;
  if (a->notify && !ci->reduces && !rc) {
    rc = addOutBlocks(s, a);
  } else {
    if (!rc && !ll) rc = syncAll(s, a, PLAN_STEP_WAIT, PLAN_PHASE_DATA, kw, kw || sm);
    if (!rc) rc = ci->reduces ? addOutReduce(s, a, kw, ll, two) : addOutCopies(s, a);
  }
  if (kw && !rc) rc = planAddJoin(s, 0, 1);
  if (two && !rc) rc = addSecondShot(s, a);
  return rc;
}
