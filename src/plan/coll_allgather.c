/*
 * AllGather: rank `from`'s whole send buffer lands at block `from` of every
 * rank's receive buffer. AllGatherV: counts[from] elements land at
 * displs[from] (the arrays are the same on every rank). In place, the send
 * buffer is the rank's own block of its receive buffer: the layout does not
 * change, the builders only skip the self block.
 */
#include "plan_internal.h"

static size_t chunk(const planArgs *a) {
  return a->count * a->elemSize;
}

static size_t agSend(const planArgs *a, int r) {
  (void)r;
  return chunk(a);
}
static size_t agRecv(const planArgs *a, int r) {
  (void)r;
  return chunk(a) * (size_t)a->nranks;
}
static int agInPlace(const planArgs *a, int r, long long *delta) {
  *delta = (long long)((size_t)r * chunk(a));
  return 1;
}
static size_t agSize(const planArgs *a) {
  return chunk(a) * (size_t)a->nranks;
}
static planBlock agBlock(const planArgs *a, int from, int to) {
  (void)to;
  return (planBlock){0, (size_t)from * chunk(a), chunk(a)};
}

const planCollInfo planColl_allgather = {
    .name = "allgather",
    .call = "dmacclAllGather",
    .countArg = "sendcount",
    .algos = PLAN_ALGOS_MOVE | PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) | PLAN_ALGO_BIT(PLAN_ALGO_STAGELL),
    .sendBytes = agSend,
    .recvBytes = agRecv,
    .inPlace = agInPlace,
    .size = agSize,
    .block = agBlock,
};

static size_t agvSend(const planArgs *a, int r) {
  return planCounts(a)[r] * a->elemSize;
}
static size_t agvRecv(const planArgs *a, int r) {
  (void)r;
  return planExtent(planCounts(a), planDispls(a), a->nranks, a->elemSize);
}
static int agvInPlace(const planArgs *a, int r, long long *delta) {
  *delta = (long long)(planDispls(a)[r] * a->elemSize);
  return 1;
}
static size_t agvSize(const planArgs *a) {
  return planTotal(planCounts(a), a->nranks, a->elemSize);
}
static planBlock agvBlock(const planArgs *a, int from, int to) {
  (void)to;
  return (planBlock){0, planDispls(a)[from] * a->elemSize, planCounts(a)[from] * a->elemSize};
}

const planCollInfo planColl_allgatherv = {
    .name = "allgatherv",
    .call = "dmacclAllGatherV",
    .countArg = "counts",
    .vector = 1,
    .algos = PLAN_ALGOS_MOVE | PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) | PLAN_ALGO_BIT(PLAN_ALGO_STAGELL),
    .sendBytes = agvSend,
    .recvBytes = agvRecv,
    .inPlace = agvInPlace,
    .size = agvSize,
    .block = agvBlock,
};
