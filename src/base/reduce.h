/* The reduction arithmetic of the host executor, and which ops each type
 * takes (the rules: dmacclRedOp_t in include/dmaccl.h; the code shared with
 * the reduction kernel: reduce_math.h). */
#ifndef DMACCL_BASE_REDUCE_H_
#define DMACCL_BASE_REDUCE_H_

#include "dmaccl.h"

/* The library's own number of a premultiplied sum (dmacclRedOpCreatePreMulSum):
 * after the built-in ops, never a value a caller passes (core.h: the
 * callers' operators are other numbers, resolved at the call). */
#define BASE_PREMULSUM ((dmacclRedOp_t)dmacclNumOps)

/* 1 when op is defined for t: Sum, Prod, Max, Min and BASE_PREMULSUM for
 * every type, Avg for the floating-point ones; 0 for anything else
 * (out-of-range values too). */
int baseRedOpSupported(dmacclDataType_t t, dmacclRedOp_t op);
/* "sum", "prod", "max", "min", "avg", "premulsum", or "invalid". */
const char *baseRedOpName(dmacclRedOp_t op);
/* dst[i] = srcs[0][i] op ... op srcs[nsrc-1][i] for count elements; dst may
 * be one of the sources; Avg divides by nsrc. Same bytes as the kernel. */
void baseReduceHost(void *dst, const void *const *srcs, int nsrc, size_t count, dmacclDataType_t t,
                    dmacclRedOp_t op);
/* The same; BASE_PREMULSUM multiplies the sum by *scalar (one value of t,
 * read once; not NULL with that op) where Avg divides, before the
 * rounding. */
void baseReduceHostScaled(void *dst, const void *const *srcs, int nsrc, size_t count,
                          dmacclDataType_t t, dmacclRedOp_t op, const void *scalar);

#endif
