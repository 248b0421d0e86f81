/*
 * The rooted movement collectives. `count` elements are one block.
 *   Broadcast: the root's send buffer lands in every rank's receive buffer.
 *   Gather:    rank `from`'s send buffer lands at block `from` of the root's
 *              receive buffer.
 *   Scatter:   block `to` of the root's send buffer lands in rank `to`'s
 *              receive buffer.
 * Buffers only the root uses have 0 bytes elsewhere; the in-place forms
 * exist at the root only.
 */
#include "plan_internal.h"

static size_t chunk(const planArgs *a) {
  return a->count * a->elemSize;
}
static size_t all(const planArgs *a) {
  return chunk(a) * (size_t)a->nranks;
}
static size_t one(const planArgs *a, int r) {
  (void)r;
  return chunk(a);
}
static size_t atRoot(const planArgs *a, int r, size_t bytes) {
  return r == a->root ? bytes : 0;
}

static size_t bcSend(const planArgs *a, int r) {
  return atRoot(a, r, chunk(a));
}
static int bcInPlace(const planArgs *a, int r, long long *delta) {
  *delta = 0;
  return r == a->root;
}
static planBlock bcBlock(const planArgs *a, int from, int to) {
  (void)to;
  return (planBlock){0, 0, from == a->root ? chunk(a) : 0};
}

const planCollInfo planColl_broadcast = {
    .name = "broadcast",
    .call = "dmacclBroadcast",
    .countArg = "count",
    .rooted = 1,
    .algos = PLAN_ALGOS_MOVE | PLAN_ALGO_BIT(PLAN_ALGO_RELAY) | PLAN_ALGO_BIT(PLAN_ALGO_CHAIN) |
             PLAN_ALGO_BIT(PLAN_ALGO_SPLIT) | PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) |
             PLAN_ALGO_BIT(PLAN_ALGO_STAGELL),
    .sendBytes = bcSend,
    .recvBytes = one,
    .inPlace = bcInPlace,
    .size = chunk,
    .block = bcBlock,
};

static size_t gaRecv(const planArgs *a, int r) {
  return atRoot(a, r, all(a));
}
static int gaInPlace(const planArgs *a, int r, long long *delta) {
  *delta = (long long)((size_t)r * chunk(a));
  return r == a->root;
}
static planBlock gaBlock(const planArgs *a, int from, int to) {
  return (planBlock){0, (size_t)from * chunk(a), to == a->root ? chunk(a) : 0};
}

const planCollInfo planColl_gather = {
    .name = "gather",
    .call = "dmacclGather",
    .countArg = "count",
    .rooted = 1,
    .algos = PLAN_ALGOS_MOVE | PLAN_ALGO_BIT(PLAN_ALGO_SPLIT) | PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) |
             PLAN_ALGO_BIT(PLAN_ALGO_STAGELL),
    .sendBytes = one,
    .recvBytes = gaRecv,
    .inPlace = gaInPlace,
    .size = all,
    .block = gaBlock,
};

static size_t scSend(const planArgs *a, int r) {
  return atRoot(a, r, all(a));
}
static int scInPlace(const planArgs *a, int r, long long *delta) {
  *delta = -(long long)((size_t)r * chunk(a));
  return r == a->root;
}
static planBlock scBlock(const planArgs *a, int from, int to) {
  return (planBlock){(size_t)to * chunk(a), 0, from == a->root ? chunk(a) : 0};
}

const planCollInfo planColl_scatter = {
    .name = "scatter",
    .call = "dmacclScatter",
    .countArg = "count",
    .rooted = 1,
    .algos = PLAN_ALGOS_MOVE | PLAN_ALGO_BIT(PLAN_ALGO_SPLIT) | PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) |
             PLAN_ALGO_BIT(PLAN_ALGO_STAGELL),
    .sendBytes = scSend,
    .recvBytes = one,
    .inPlace = scInPlace,
    .size = all,
    .block = scBlock,
};
