/*
 * The reduction kernel: the only kernel dmaccl launches. It reads nsrc
 * inputs (all in this GPU's memory: copy engines, or under stagesm the
 * peers' kernels, brought the peers' parts into scratch or staging first)
 * and writes one output. The arithmetic is
 * reduce_math.h's, shared with the host executor, so results are the same
 * bytes (bf16 and fp16 results are rounded by the hardware's conversion,
 * which gives the same bits: VecStore). A few thread blocks (DMACCL_REDUCE_CTAS) stream through the
 * data: each thread takes 16-byte vectors when every pointer is 16-byte aligned, single elements
 * otherwise and for the tail. A staged reduction's kernel may first wait for
 * its peers' DATA flags itself (execReduceWait: launched beside the copies,
 * it polls instead of following a stream wait), and under stagesm first
 * store the rank's contributions into the peers' staging slots and signal
 * them itself: the one place where dmaccl moves data with SMs, for small
 * reductions, where a copy engine's start after a kernel costs more than
 * the whole operation (docs/latency-notes.md). pull1's ReduceScatter runs
 * one kernel for all its pieces, polling each piece's word before it
 * (execReduceWait.pieces).
 *
 * This file checks the arguments and dispatches on the type; the kernel's
 * templates are in cuda_reduce_kernel.cuh, one type's instantiations in
 * each cuda_reduce_<type>.cu (they compile in parallel: the instantiations
 * took a minute in one file).
 */
#include "cuda_reduce_launch.h"
#include "../base/reduce.h"

#include <stdint.h>
#include <string.h>

extern "C" cudaError_t execCudaReduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                                      dmacclDataType_t t, dmacclRedOp_t op, int ctas,
                                      cudaStream_t stream) {
  return execCudaReduceWait(dst, srcs, nsrc, count, t, op, ctas, NULL, stream);
}

extern "C" cudaError_t execCudaReduceWait(void *dst, const void *const *srcs, int nsrc,
                                          size_t count, dmacclDataType_t t, dmacclRedOp_t op,
                                          int ctas, const execReduceWait *wait,
                                          cudaStream_t stream) {
  return execCudaReduceLaunched(dst, srcs, nsrc, count, t, op, ctas, wait, stream, nullptr);
}

extern "C" cudaError_t execCudaReduceLaunched(void *dst, const void *const *srcs, int nsrc,
                                              size_t count, dmacclDataType_t t, dmacclRedOp_t op,
                                              int ctas, const execReduceWait *wait,
                                              cudaStream_t stream, cudaEvent_t launched) {
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  if (wait && (wait->mask[0] | wait->mask[1] | wait->mask[2] | wait->mask[3] | wait->nmoves |
               wait->nsignals | wait->lineSrcs | wait->pieces | wait->ntakes))
    w = *wait;
  if (w.pieces &&
      (w.pieces < 0 || !w.pieceFlags || w.pieceStride < 0 || !w.pieceCount || w.nmoves ||
       w.nsignals || w.lineSrcs || w.ntakes || (w.reset && ctas > 1 && !w.count) ||
       w.npieceSignals < 0 || w.npieceSignals > EXEC_REDUCE_MAX_MOVES ||
       (w.npieceSignals && !w.pieceCounts) || (w.mask[0] | w.mask[1] | w.mask[2] | w.mask[3]) ||
       (size_t)w.pieces * w.pieceCount < count))
    return cudaErrorInvalidValue;
  if (op == BASE_PREMULSUM) { /* its scalar: by pointer, or the immediate's bits */
    if (!wait) return cudaErrorInvalidValue;
    w.scalar = wait->scalar;
    w.scalarBits = wait->scalarBits;
  }
  if (!(w.mask[0] | w.mask[1] | w.mask[2] | w.mask[3])) w.flags = nullptr;
  if (!w.nmoves && !w.nsignals) w.moveCount = nullptr;
  if (count == 0 && !w.flags && !w.nmoves && !w.nsignals && !w.lineSrcs && !w.ntakes)
    return cudaSuccess;
  if (w.ntakes < 0 || w.ntakes > EXEC_REDUCE_MAX_MOVES) return cudaErrorInvalidValue;
  for (int t = 0; t < w.ntakes; t++)
    if (w.takes[t].plain ? w.takes[t].bytes && (!w.takes[t].src || !w.takes[t].dst)
                         : !w.takes[t].src || ((uintptr_t)w.takes[t].src & 15) ||
                               (w.takes[t].bytes && !w.takes[t].dst))
      return cudaErrorInvalidValue;
  if (w.lineSrcs && (nsrc > 32 || (nsrc < 32 && w.lineSrcs >> nsrc))) return cudaErrorInvalidValue;
  if (nsrc < 1 || nsrc > EXEC_REDUCE_MAX_SRCS || ctas < 1) return cudaErrorInvalidValue;
  if (w.nmoves < 0 || w.nmoves > EXEC_REDUCE_MAX_MOVES || w.nsignals < 0 ||
      w.nsignals > EXEC_REDUCE_MAX_MOVES)
    return cudaErrorInvalidValue;
  if ((w.flags || w.moveCount) && !w.count && ctas > 1 && (w.reset || w.moveCount))
    return cudaErrorInvalidValue;
  if (w.nsignals && !w.moveCount) return cudaErrorInvalidValue;
  execReduceK::Srcs s;
  for (int k = 0; k < nsrc; k++) s.p[k] = srcs[k];
  for (int k = nsrc; k < EXEC_REDUCE_MAX_SRCS; k++) s.p[k] = nullptr;
  switch (t) {
#define CASE(id, name)                                                                             \
  case id:                                                                                         \
    return execReduceK::launch_##name((int)op, dst, s, nsrc, count, ctas, w, stream, launched);
    DMACCL_REDUCE_TYPES(CASE)
#undef CASE
  default: return cudaErrorInvalidValue;
  }
}
