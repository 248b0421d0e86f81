/*
 * The reducing collectives. Each says which part of the result lands on
 * rank t: every rank's send[srcOff, srcOff+bytes) reduced into t's receive
 * buffer at dstOff (reduce.c moves the parts and reduces them).
 *   AllReduce:      the count is split into nranks parts, one per rank, that
 *                   are then copied to every peer (shareResult); the staged
 *                   one-shot form gives every rank the whole count instead.
 *   ReduceScatter:  block t of every send buffer, into t's receive buffer.
 *   ReduceScatterV: counts[t] elements at displs[t] (same arrays everywhere).
 *   Reduce:         the whole buffer, at the root.
 * In place: AllReduce and Reduce when sendbuff == recvbuff; ReduceScatter(V)
 * when recvbuff is the rank's own block of sendbuff.
 */
#include "plan_internal.h"

#define REDUCE_ALGOS                                                                               \
  (PLAN_ALGO_BIT(PLAN_ALGO_PULL1) | PLAN_ALGO_BIT(PLAN_ALGO_STAGE) |                               \
   PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) | PLAN_ALGO_BIT(PLAN_ALGO_STAGELL) |                           \
   PLAN_ALGO_BIT(PLAN_ALGO_PUSH1))

static size_t chunk(const planArgs *a) {
  return a->count * a->elemSize;
}
static size_t one(const planArgs *a, int r) {
  (void)r;
  return chunk(a);
}
static size_t all(const planArgs *a) {
  return chunk(a) * (size_t)a->nranks;
}
static size_t allOf(const planArgs *a, int r) {
  (void)r;
  return all(a);
}
static int sameBuffer(const planArgs *a, int r, long long *delta) {
  (void)a, (void)r;
  *delta = 0;
  return 1;
}

/* AllReduce's split: part t starts at element first(t), on a 256-byte
 * boundary so that every part's reduction runs on aligned vectors. */
static size_t first(const planArgs *a, int t) {
  size_t n = (size_t)a->nranks, c = a->count;
  if ((size_t)t >= n) return c;
  size_t e = (c / n) * (size_t)t + (c % n) * (size_t)t / n;
  size_t align = a->elemSize < 256 ? 256 / a->elemSize : 1;
  return e / align * align;
}
static planBlock arTarget(const planArgs *a, int t, int oneShot) {
  if (oneShot) return (planBlock){0, 0, chunk(a)};
  size_t lo = first(a, t) * a->elemSize, hi = first(a, t + 1) * a->elemSize;
  return (planBlock){lo, lo, hi - lo};
}

const planCollInfo planColl_allreduce = {
    .name = "allreduce",
    .call = "dmacclAllReduce",
    .countArg = "count",
    .reduces = 1,
    .algos = REDUCE_ALGOS | PLAN_ALGO_BIT(PLAN_ALGO_TWOSHOT),
    .sendBytes = one,
    .recvBytes = one,
    .inPlace = sameBuffer,
    .size = chunk,
    .target = arTarget,
    .shareResult = 1,
};

static int rsInPlace(const planArgs *a, int r, long long *delta) {
  *delta = -(long long)((size_t)r * chunk(a));
  return 1;
}
static planBlock rsTarget(const planArgs *a, int t, int oneShot) {
  (void)oneShot;
  return (planBlock){(size_t)t * chunk(a), 0, chunk(a)};
}

const planCollInfo planColl_reducescatter = {
    .name = "reducescatter",
    .call = "dmacclReduceScatter",
    .countArg = "recvcount",
    .reduces = 1,
    .algos = REDUCE_ALGOS,
    .sendBytes = allOf,
    .recvBytes = one,
    .inPlace = rsInPlace,
    .size = all,
    .target = rsTarget,
};

static size_t rsvSend(const planArgs *a, int r) {
  (void)r;
  return planExtent(planCounts(a), planDispls(a), a->nranks, a->elemSize);
}
static size_t rsvRecv(const planArgs *a, int r) {
  return planCounts(a)[r] * a->elemSize;
}
static int rsvInPlace(const planArgs *a, int r, long long *delta) {
  *delta = -(long long)(planDispls(a)[r] * a->elemSize);
  return 1;
}
static size_t rsvSize(const planArgs *a) {
  return planTotal(planCounts(a), a->nranks, a->elemSize);
}
static planBlock rsvTarget(const planArgs *a, int t, int oneShot) {
  (void)oneShot;
  return (planBlock){planDispls(a)[t] * a->elemSize, 0, planCounts(a)[t] * a->elemSize};
}

const planCollInfo planColl_reducescatterv = {
    .name = "reducescatterv",
    .call = "dmacclReduceScatterV",
    .countArg = "counts",
    .reduces = 1,
    .vector = 1,
    .algos = REDUCE_ALGOS,
    .sendBytes = rsvSend,
    .recvBytes = rsvRecv,
    .inPlace = rsvInPlace,
    .size = rsvSize,
    .target = rsvTarget,
};

static size_t reRecv(const planArgs *a, int r) {
  return r == a->root ? chunk(a) : 0;
}
static int reInPlace(const planArgs *a, int r, long long *delta) {
  *delta = 0;
  return r == a->root;
}
static planBlock reTarget(const planArgs *a, int t, int oneShot) {
  (void)oneShot;
  return (planBlock){0, 0, t == a->root ? chunk(a) : 0};
}

const planCollInfo planColl_reduce = {
    .name = "reduce",
    .call = "dmacclReduce",
    .countArg = "count",
    .reduces = 1,
    .rooted = 1,
    .algos = REDUCE_ALGOS,
    .sendBytes = one,
    .recvBytes = reRecv,
    .inPlace = reInPlace,
    .size = chunk,
    .target = reTarget,
};
