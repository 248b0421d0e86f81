/* AllGather block layout: rank `from`'s whole send buffer lands at block
 * `from` of every rank's receive buffer. In place, the send buffer is the
 * rank's own block of its receive buffer (the address is the same, so the
 * layout does not change; direct.c only skips the self copy). */
#include "plan_internal.h"

static planLoc agSrc(const planArgs *a, int from, int to) {
  (void)a;
  (void)to;
  return (planLoc){from, PLAN_BUF_SEND, 0};
}

static planLoc agDst(const planArgs *a, int from, int to) {
  return (planLoc){to, PLAN_BUF_RECV, (size_t)from * a->chunkBytes};
}

const planLayout planAllGatherLayout = {agSrc, agDst};
