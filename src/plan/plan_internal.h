/* Internal to the planning layer: step constructors, the builders, and what
 * the collective rows share. */
#ifndef DMACCL_PLAN_INTERNAL_H_
#define DMACCL_PLAN_INTERNAL_H_

#include "plan.h"

int planAddCopy(planSchedule *s, int lane, planLoc src, planLoc dst, size_t bytes, int batch);
int planAddSync(planSchedule *s, planStepKind kind, int lane, int peer, planPhase phase);
/* Lane `lane` waits for every step of lane `from` added so far. */
int planAddJoin(planSchedule *s, int lane, int from);
/* A JOIN marked launched (plan.h): after the launch of lane `from`'s REDUCE. */
int planAddLaunchJoin(planSchedule *s, int lane, int from);
/* dst = srcs[0] op ... op srcs[n-1] over `bytes` (the schedule's type and op). */
int planAddReduce(planSchedule *s, int lane, const planLoc *srcs, int n, planLoc dst, size_t bytes);

/* Pieces and groups (pull1's AllReduce result, relay, chain): byte ranges are cut
 * on PLAN_PIECE_ALIGN boundaries, so that every part is reduced or copied
 * on aligned vectors. planPieceMin: the smallest piece (planArgs.pieceMin,
 * 0: PLAN_PIECE_MIN). planGroups: how many groups a range of `total` bytes
 * is cut into: a quarter of it each (rounded up), at least 2 and at most 16
 * smallest pieces (2-16 MB), at most PLAN_PIECE_GROUPS groups (past 128 MB
 * they grow beyond 16 MB); by the size alone, so every rank computes every
 * peer's. Group g is [planGroupAt(g), planGroupAt(g+1)). Each group costs a
 * signal, a wait, a JOIN and a copy per peer on the host: more of them made
 * a 64 MB AllReduce slower, not faster. */
#define PLAN_PIECE_ALIGN ((size_t)256)
size_t planPieceMin(const planArgs *a);
int planGroups(const planArgs *a, size_t total);
size_t planGroupAt(const planArgs *a, size_t total, int g);
/* `total` bytes cut into `parts` ranges on PLAN_PIECE_ALIGN boundaries:
 * range i is [planCutAt(i), planCutAt(i+1)) (the last takes the rest). */
size_t planCutAt(size_t total, int parts, int i);

/* Bytes spanned by the blocks of a V form: max(displs[i] + counts[i]) over
 * the non-empty ones, times elemSize. */
size_t planExtent(const size_t *counts, const size_t *displs, int n, size_t elemSize);
/* Bytes of all the blocks of a V form: sum(counts) * elemSize. */
size_t planTotal(const size_t *counts, int n, size_t elemSize);
/* The arrays of the V forms that are the same on every rank (this rank's). */
static inline const size_t *planCounts(const planArgs *a) {
  return planVec(a, a->rank, PLAN_VEC_COUNTS);
}
static inline const size_t *planDispls(const planArgs *a) {
  return planVec(a, a->rank, PLAN_VEC_DISPLS);
}

/* The builders: movement collectives (direct.c, staged.c; Broadcast also
 * relay.c and chain.c), reductions (reduce.c, staged.c). */
int planBuildDirect(const planArgs *args, planAlgo algo, planSchedule *s);
int planBuildStaged(const planArgs *args, planAlgo algo, planSchedule *s);
/* A staged reduction: the bytes between two positions of rank t's slot (its
 * result; twoshot: its part of the AllReduce, rounded up to 256 so that
 * every position is aligned). */
size_t planStagePosition(const planArgs *a, planAlgo algo, int t);
int planBuildReduce(const planArgs *args, planSchedule *s);
/* push1's AllReduce (reduce.c), or pull1's where it cannot run. */
int planBuildReducePush(const planArgs *args, planSchedule *s);
int planBuildRelay(const planArgs *args, planSchedule *s);
int planBuildChain(const planArgs *args, planSchedule *s);

#endif
