/* AlltoAll block layout: the block rank `from` sends to rank `to` is block
 * `to` of from's send buffer and lands at block `from` of to's receive
 * buffer. */
#include "plan_internal.h"

static planLoc a2aSrc(const planArgs *a, int from, int to) {
  return (planLoc){from, PLAN_BUF_SEND, (size_t)to * a->chunkBytes};
}

static planLoc a2aDst(const planArgs *a, int from, int to) {
  return (planLoc){to, PLAN_BUF_RECV, (size_t)from * a->chunkBytes};
}

const planLayout planAlltoAllLayout = {a2aSrc, a2aDst};
