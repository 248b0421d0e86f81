/* The collective table: one row per collective of PLAN_COLL_LIST, each
 * defined in its coll_<name>.c, and what every row shares. */
#include "plan_internal.h"

#include <stdint.h>

#define PLAN_COLL_DECL_(id, name) extern const planCollInfo planColl_##name;
PLAN_COLL_LIST(PLAN_COLL_DECL_)
#undef PLAN_COLL_DECL_

const planCollInfo *const planColls[PLAN_NUM_COLLS] = {
#define PLAN_COLL_ROW_(id, name) [PLAN_COLL_##id] = &planColl_##name,
    PLAN_COLL_LIST(PLAN_COLL_ROW_)
#undef PLAN_COLL_ROW_
};

size_t planExtent(const size_t *counts, const size_t *displs, int n, size_t elemSize) {
  size_t end = 0;
  for (int i = 0; i < n; i++)
    if (counts[i] && displs[i] + counts[i] > end) end = displs[i] + counts[i];
  return end * elemSize;
}

size_t planTotal(const size_t *counts, int n, size_t elemSize) {
  size_t s = 0;
  for (int i = 0; i < n; i++) s += counts[i] * elemSize;
  return s;
}

planBlock planOneRankBlock(const planArgs *a) {
  const planCollInfo *ci = planCollOf(a->coll);
  return ci->reduces ? ci->target(a, 0, 0) : ci->block(a, 0, 0);
}

size_t planStageNeed(const planArgs *a, planAlgo algo) {
  const planCollInfo *ci = planCollOf(a->coll);
  /* AlltoAllv: stagell's lines only, in the line slot every rank has (what
   * does not fit runs as a push: staged.c); nothing else staged */
  if (ci->peerArrays) return algo == PLAN_ALGO_STAGELL ? 0 : SIZE_MAX;
  size_t need = 0;
  for (int t = 0; t < a->nranks; t++) {
    size_t b;
    if (ci->reduces) {
      b = planStagePosition(a, algo, t); /* n positions */
      b = b > SIZE_MAX / (size_t)a->nranks ? SIZE_MAX : b * (size_t)a->nranks;
    } else {
      b = ci->recvBytes(a, t);
    }
    if (b > need) need = b;
  }
  return need;
}
