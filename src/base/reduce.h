/* The reduction arithmetic of the host executor, and which ops each type
 * takes (the rules: dmacclRedOp_t in include/dmaccl.h; the code shared with
 * the reduction kernel: reduce_math.h). */
#ifndef DMACCL_BASE_REDUCE_H_
#define DMACCL_BASE_REDUCE_H_

#include "dmaccl.h"

/* 1 when op is defined for t: Sum, Prod, Max, Min for every type, Avg for
 * the floating-point ones; 0 for anything else (out-of-range values too). */
int baseRedOpSupported(dmacclDataType_t t, dmacclRedOp_t op);
/* "sum", "prod", "max", "min", "avg", or "invalid". */
const char *baseRedOpName(dmacclRedOp_t op);
/* dst[i] = srcs[0][i] op ... op srcs[nsrc-1][i] for count elements; dst may
 * be one of the sources; Avg divides by nsrc. Same bytes as the kernel. */
void baseReduceHost(void *dst, const void *const *srcs, int nsrc, size_t count, dmacclDataType_t t,
                    dmacclRedOp_t op);

#endif
