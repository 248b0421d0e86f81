/* The one reduction kernel (cuda_reduce.cu): REDUCE steps of the CUDA
 * executor. Plain C interface. */
#ifndef DMACCL_CUDA_REDUCE_H_
#define DMACCL_CUDA_REDUCE_H_

#include "dmaccl.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Inputs a kernel takes (its parameters carry the pointers by value). */
#define EXEC_REDUCE_MAX_SRCS 128

/* A line's flag word (plan.h's PLAN_LINE_FLAG), and the fewest blocks a
 * kernel reading lines takes (DMACCL_REDUCE_CTAS when higher). */
#define EXEC_LINE_FLAG 1u
#define EXEC_LINE_CTAS 32

/* Most peers a kernel stores into (stagesm): plan.h's PLAN_SM_MAX_PEERS. */
#define EXEC_REDUCE_MAX_MOVES 15

/* What the kernel does before it reduces.
 * Moves and signals (stagesm, staged.c): the blocks together copy every
 * move's bytes from src to dst (a peer's staging slot, or as lines its line
 * slot) with their own stores; with `moveCount` set, once every block's
 * stores are done (`*moveCount`, 0 between launches, counts the blocks that
 * are), one writes `signalValue` into each word of `signals` (the peers'
 * DATA words), and every block waits for the others' stores before it
 * reduces (signals need it; so do moves that read what the reduction or a
 * take writes, in place). Then a peer's signal or this kernel's progress depends
 * on every block: all blocks must be resident at once, so the caller
 * launches no more blocks than the GPU has SMs (one block per SM fits at
 * the kernel's register count). Moves as lines need no moveCount of their
 * own (each line is its own signal).
 * Flags (a staged reduction's DATA words, planArgs.kernelWait, and
 * stagesm's): word p of `flags` for every rank p whose bit is set in
 * `mask`, until it reaches `value` (cyclic >=, as CU_STREAM_WAIT_VALUE_GEQ
 * compares); with moves, also until every block's stores are done (an
 * in-place AllReduce overwrites what they read). With `reset` (CUDA
 * graphs, whose flags hold fixed values), the words are set back to 0 once
 * every thread block has seen them. `*count` (0 between launches) counts
 * the blocks that have, when there is a reset or a move. */
typedef struct {
  const void *src;
  void *dst;
  size_t bytes;
  int lines; /* dst is a line slot (plan.h PLAN_BUF_LINES): write bytes as lines */
} execReduceMove;
/* Takes (the movement forms of stagell and stagesm: the REDUCEs of one
 * source after the kernel's own, staged.c): after its reduction the kernel
 * also copies each take's bytes from src to dst. A take of lines (stagell:
 * src a line slot) waits for each line that carries them, reads it into dst
 * and sets it to 0; of 0 bytes, one line (a token, plan.h planLines) read
 * and cleared, nothing written. A plain take (`plain`, stagesm: src a
 * staging slot whose DATA word the kernel polled before it reduced) copies
 * the bytes as they are; of 0 bytes, nothing. */
typedef struct {
  void *src;
  void *dst;
  size_t bytes;
  int plain;
} execReduceTake;
typedef struct {
  uint32_t *flags;
  unsigned long long mask[4]; /* up to 256 ranks */
  uint32_t value;
  int reset;
  unsigned *count;
  int nmoves, nsignals;
  execReduceMove moves[EXEC_REDUCE_MAX_MOVES];
  uint32_t *signals[EXEC_REDUCE_MAX_MOVES];
  uint32_t signalValue;
  unsigned *moveCount;
  /* Bit k: source k is a line slot (stagell): the kernel waits for each of
   * its lines, reads it and sets it to 0 (sources 0..31 only). */
  uint32_t lineSrcs;
  int ntakes;
  execReduceTake takes[EXEC_REDUCE_MAX_MOVES];
  /* Pieces (plan.h pieceBytes; pull1): with pieces > 0 the kernel reduces
   * elements [k*pieceCount, (k+1)*pieceCount) of every source and the
   * destination once word pieceFlags[k*pieceStride] has reached `value`,
   * k = 0..pieces-1, in order (each block polls for itself: no block waits
   * for another; pieceMask: the words of several ranks); with `reset` the last block to finish sets
   * the words back to 0 (`count` counts the blocks). Then, with npieceSignals, the last block done
   * with piece k (pieceCounts[k], 0 between launches, counts them; a system fence after each
   * block's stores) writes `signalValue` into pieceSignals[m][k*pieceStride] for every m: the
   * PIECE+k words of the ranks named (pull1's AllReduce: the peers', which pull the piece from
   * here; push1's: the rank's own, for its lane C). No moves, signals, flags,
   * lines or takes with it. */
  int pieces;
  size_t pieceCount;
  uint32_t *pieceFlags;
  int pieceStride;
  /* push1 (the peers' signals gate the pieces): with a bit set, the kernel
   * polls word pieceFlags[k*pieceStride + q] of every rank q in the mask
   * before piece k (with reset, it resets them all at its end; the CUDA
   * executor does not ask it to: its stream resets them, cuda.c
   * launchPieced), instead of the one word above. */
  unsigned long long pieceMask[4];
  int npieceSignals;
  uint32_t *pieceSignals[EXEC_REDUCE_MAX_MOVES];
  unsigned *pieceCounts;
  /* A premultiplied sum's scalar (op BASE_PREMULSUM, which needs a w): one
   * value of the op's type, read by each launch from `scalar` (device
   * memory) or, NULL, from the low bytes of scalarBits. */
  const void *scalar;
  uint64_t scalarBits;
} execReduceWait;

/* Queues on stream a kernel that computes what baseReduceHost computes, bit
 * for bit: dst[i] = srcs[0][i] op ... op srcs[nsrc-1][i], count elements,
 * with at most ctas thread blocks. srcs is read during the call only (the
 * pointers travel in the kernel's parameters, so a captured launch replays).
 * Any alignment; 16-byte vectors where every pointer allows. count 0 queues
 * nothing. Returns the launch's error. */
cudaError_t execCudaReduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                           dmacclDataType_t t, dmacclRedOp_t op, int ctas, cudaStream_t stream);
/* The same kernel doing w's moves and signals and waiting for its flags
 * first (w may be NULL or empty). count 0 still launches, to move, signal,
 * wait and reset. */
cudaError_t execCudaReduceWait(void *dst, const void *const *srcs, int nsrc, size_t count,
                               dmacclDataType_t t, dmacclRedOp_t op, int ctas,
                               const execReduceWait *w, cudaStream_t stream);
/* The same; with `launched` not NULL, that event completes once every block
 * of the kernel is running (a launch-completion event; in a CUDA graph an
 * edge from the kernel's launch), so another stream may wait for what the
 * kernel signals while it runs without waiting for its end. */
cudaError_t execCudaReduceLaunched(void *dst, const void *const *srcs, int nsrc, size_t count,
                                   dmacclDataType_t t, dmacclRedOp_t op, int ctas,
                                   const execReduceWait *w, cudaStream_t stream,
                                   cudaEvent_t launched);

#ifdef __cplusplus
}
#endif

#endif
