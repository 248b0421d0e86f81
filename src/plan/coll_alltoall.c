/*
 * AlltoAllv: the block rank `from` sends to rank `to` is sendcounts[to]
 * elements at sdispls[to] of from's send buffer (from's arrays) and lands at
 * rdispls[from] of to's receive buffer (to's arrays). AlltoAll is the same
 * with every count equal: block `to` of from's send buffer lands at block
 * `from` of to's receive buffer. Neither runs in place.
 *
 * AlltoAllv's layout needs the peers' arrays, and its selection size (the
 * bytes this rank sends) differs between ranks: it accepts the push forms,
 * which run the same handshakes whatever form each rank picks; pairs
 * (Send/Recv pairs on the channels, composed by the core: plan.h); and
 * stagell, built once every rank's arrays are at hand (lines where every
 * block fits a share, else a push that meets every peer: staged.c). No size
 * may choose either of the last two.
 */
#include "plan_internal.h"

static size_t chunk(const planArgs *a) {
  return a->count * a->elemSize;
}

static size_t a2aBytes(const planArgs *a, int r) {
  (void)r;
  return chunk(a) * (size_t)a->nranks;
}
static int noInPlace(const planArgs *a, int r, long long *delta) {
  (void)a, (void)r;
  *delta = 0;
  return 0;
}
static size_t a2aSize(const planArgs *a) {
  return chunk(a) * (size_t)a->nranks;
}
static planBlock a2aBlock(const planArgs *a, int from, int to) {
  return (planBlock){(size_t)to * chunk(a), (size_t)from * chunk(a), chunk(a)};
}

const planCollInfo planColl_alltoall = {
    .name = "alltoall",
    .call = "dmacclAlltoAll",
    .countArg = "count",
    .algos = PLAN_ALGOS_MOVE | PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) | PLAN_ALGO_BIT(PLAN_ALGO_STAGELL),
    .sendBytes = a2aBytes,
    .recvBytes = a2aBytes,
    .inPlace = noInPlace,
    .size = a2aSize,
    .block = a2aBlock,
};

static size_t a2avSend(const planArgs *a, int r) {
  return planExtent(planVec(a, r, PLAN_VEC_COUNTS), planVec(a, r, PLAN_VEC_DISPLS), a->nranks,
                    a->elemSize);
}
static size_t a2avRecv(const planArgs *a, int r) {
  return planExtent(planVec(a, r, PLAN_VEC_RCOUNTS), planVec(a, r, PLAN_VEC_RDISPLS), a->nranks,
                    a->elemSize);
}
static size_t a2avSize(const planArgs *a) {
  return planTotal(planVec(a, a->rank, PLAN_VEC_COUNTS), a->nranks, a->elemSize);
}
static planBlock a2avBlock(const planArgs *a, int from, int to) {
  return (planBlock){planVec(a, from, PLAN_VEC_DISPLS)[to] * a->elemSize,
                     planVec(a, to, PLAN_VEC_RDISPLS)[from] * a->elemSize,
                     planVec(a, from, PLAN_VEC_COUNTS)[to] * a->elemSize};
}

const planCollInfo planColl_alltoallv = {
    .name = "alltoallv",
    .call = "dmacclAlltoAllv",
    .countArg = "sendcounts",
    .vector = 1,
    .peerArrays = 1,
    .algos = PLAN_ALGO_BIT(PLAN_ALGO_PUSH1) | PLAN_ALGO_BIT(PLAN_ALGO_PUSHN) |
             PLAN_ALGO_BIT(PLAN_ALGO_PUSHB) | PLAN_ALGO_BIT(PLAN_ALGO_PAIRS) |
             PLAN_ALGO_BIT(PLAN_ALGO_STAGELL),
    .sendBytes = a2avSend,
    .recvBytes = a2avRecv,
    .inPlace = noInPlace,
    .size = a2avSize,
    .block = a2avBlock,
};
