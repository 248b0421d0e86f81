/*
 * Planning layer: turns one rank's part of a collective into a schedule of
 * typed steps. Pure C11, no CUDA header: it builds and is tested with a plain
 * C compiler, and the same schedule runs on every executor.
 *
 * Synchronization model. Every rank owns a flag slot per peer and phase
 * (ENTRY, EXIT; DATA for the staged algorithms, PIECE + g for pull1's
 * AllReduce, relay, chain and push1's own words, PUSH + g for push1's
 * pushed pieces). SIGNAL(peer, phase) stores the
 * operation's epoch into the peer's slot [phase][my rank]; WAIT(peer, phase)
 * blocks its lane until my slot [phase][peer] has reached the epoch.
 *   ENTRY: "my buffers are ready": everything queued before the collective on
 *          my stream is done, so peers may read my sendbuff or write my recvbuff
 *          (push1: and my scratch buffer, which my last reduction read).
 *   EXIT:  "I am done with your buffers": my copies that touch the peer are
 *          complete.
 * A rank's part is complete when it has seen EXIT from every peer (push1's
 * ReduceScatter, ReduceScatterV and Reduce touch no peer's send or receive
 * buffer and have no EXIT: their part is complete when their kernel ends,
 * reduce.c).
 *
 * Lanes are in-order queues (streams on the CUDA executor). Lane 0 starts
 * after the caller's earlier work and ends the operation; every other lane
 * begins with JOIN(lane <- 0) and lane 0 JOINs it after its last step, so
 * all ordering between lanes is in the schedule itself.
 *
 * Queue safety (docs/architecture.md). Hardware runs streams on a few
 * in-order queues, so a WAIT at the head of a queue can hold back work of any
 * other stream behind it. Every schedule is built in rounds so that no
 * mapping of lanes to queues can deadlock:
 *   1. a WAIT of round k is released only by SIGNALs of rounds < k;
 *   2. a WAIT of round k comes after, in its rank's own lane and JOIN order,
 *      every SIGNAL of that rank of a round < k (except a WAIT that a
 *      reduction kernel polls itself, inKernel: it sits in no queue);
 *   3. steps are listed in round order, and executors issue them in list
 *      order (several ranks of one process: round by round across them).
 * planCheck verifies 1-3 and the lane structure for every rank's schedule
 * of one operation; test_plan runs it on every algorithm.
 * A SIGNAL that a reduction kernel writes after its REDUCE (pull1's
 * AllReduce in pieces to its peers; push1's AllReduce to the rank itself,
 * for its lane C) is written while the kernel runs, not when its lane
 * has finished it. For rule 2 it counts as before a WAIT in two cases:
 *   - launched: the WAIT's lane is ordered after the kernel's launch (a
 *     JOIN marked `launched`: every block of the kernel is running, so it
 *     has left its queue) and after every step of the other lanes that the
 *     kernel waits for (the JOINs it polls: a queue cannot then hold what
 *     the kernel needs behind the WAIT; the WAITs it polls are the peers',
 *     released by their earlier rounds). Any issue order, CUDA graphs too.
 *   - list order (planSchedule.listOrder: issued in list order, never
 *     captured into a CUDA graph, whose launch may pick any dependency
 *     order): every WAIT listed after the REDUCE. The kernel leaves its
 *     queue when launched, and what it signals depends only on steps listed
 *     before it, which every queue holds ahead of such a WAIT.
 * Where the steps are not issued in list order, a step that sits in a
 * queue (a kernel's launch included, not the steps a kernel does) must also
 * be issued, by JOINs and lane order alone, after every step it waits for:
 * a JOIN a kernel polls orders the steps after that kernel's end but is no
 * edge of a graph, so a step after the kernel (or a JOIN of its lane)
 * queued ahead of the polled lane's steps would hold them back (planCheck).
 */
#ifndef DMACCL_PLAN_H_
#define DMACCL_PLAN_H_

#include <stddef.h>
#include <stdint.h>

/*
 * Collectives: one X-macro list makes the enum and the table (coll.c). Each
 * row (coll_<name>.c) says everything the library needs about a collective:
 * buffer sizes, the in-place rule, and either the block that travels from
 * rank `from` to rank `to` (movement) or the part of the sum that lands on
 * each rank (reductions). Nothing outside src/plan names a collective.
 */
#define PLAN_COLL_LIST(X)                                                                          \
  X(ALLGATHER, allgather)                                                                          \
  X(ALLTOALL, alltoall)                                                                            \
  X(ALLREDUCE, allreduce)                                                                          \
  X(REDUCESCATTER, reducescatter)                                                                  \
  X(BROADCAST, broadcast)                                                                          \
  X(REDUCE, reduce)                                                                                \
  X(GATHER, gather)                                                                                \
  X(SCATTER, scatter)                                                                              \
  X(ALLGATHERV, allgatherv)                                                                        \
  X(REDUCESCATTERV, reducescatterv)                                                                \
  X(ALLTOALLV, alltoallv)

typedef enum {
#define PLAN_COLL_ENUM_(id, name) PLAN_COLL_##id,
  PLAN_COLL_LIST(PLAN_COLL_ENUM_)
#undef PLAN_COLL_ENUM_
      PLAN_NUM_COLLS
} planColl;

/* Algorithms. Direction (push: write into peers; pull: read from peers) times
 * issue form (one lane; one lane per peer; one batch command on one lane).
 * The reductions: pull1 pulls the peers' parts into scratch and reduces
 * (reduce.c); push1 pushes instead, every copy a write into a peer
 * (reduce.c, buildPush; AllReduce then pushes its reduced parts too), and
 * runs as pull1 where a rank shares its GPU (planArgs.kernelSignals) or
 * the pieces do not fit the scratch buffer. */
typedef enum {
  PLAN_ALGO_PUSH1 = 0,
  PLAN_ALGO_PUSHN = 1,
  PLAN_ALGO_PUSHB = 2,
  PLAN_ALGO_PULL1 = 3,
  PLAN_ALGO_PULLN = 4,
  PLAN_ALGO_PULLB = 5,
  PLAN_ALGO_STAGE = 6,   /* staging slots, peer copies as one batch command (staged.c) */
  PLAN_ALGO_STAGE2D = 7, /* staging slots, peer copies in rank order: one 2D copy where strided */
  /* The staged form with no copy engine on its path; the reduction kernel
   * itself stores the rank's contributions into the peers' slots, signals
   * DATA, polls the peers' DATA and reduces (staged.c). Also AllGather(V),
   * AlltoAll, Broadcast, Gather and Scatter: the kernel stores each peer's
   * block into its slot, copies its own into place, signals, polls and takes
   * the peers' blocks out of its slot (addSmMove; not AlltoAllv; up to
   * PLAN_SM_MAX_PEERS ranks, the own block being one more move) */
  PLAN_ALGO_STAGESM = 8, /* up to PLAN_SM_MAX_PEERS peers; more run as stage */
  /* stagesm whose stores carry their own flags, as lines (PLAN_BUF_LINES):
   * no fence, no DATA word, no reset (staged.c); where a rank has nothing to
   * reduce or the lines do not fit, it runs as stagesm. Also AllGather(V),
   * AlltoAll, Broadcast, Gather and Scatter: the kernel stores each peer's
   * block as lines (a token line where the block is empty) and takes the
   * peers' lines into place (data moved by SMs: the small sizes in graphs,
   * where a copy engine's copy after a kernel costs 11-14 us); where the
   * lines do not fit, it runs as stage */
  PLAN_ALGO_STAGELL = 9,
  /* Broadcast: the non-roots pull parts of the root's block and pass them
   * on to each other (relay.c): the root's links and every GPU's copy
   * engine carry the block once */
  PLAN_ALGO_RELAY = 10,
  /* Broadcast: each non-root pulls the block in groups from the rank before
   * it in a chain from the root (chain.c) */
  PLAN_ALGO_CHAIN = 11,
  /* AllReduce only: stagesm in two shots (staged.c): the kernel stores each
   * peer's part into that peer's slot and reduces its own part, then a
   * second kernel stores the reduced part into every peer's receive buffer
   * and signals EXIT. Each rank sends 2(n-1)/n of the buffer, not n-1 */
  PLAN_ALGO_TWOSHOT = 12,
  /* Broadcast, Gather, Scatter: each block moved by both ends at once, its
   * first half pushed by the sender, the rest pulled by the receiver
   * (direct.c): two GPUs' copy engines on one link direction */
  PLAN_ALGO_SPLIT = 13,
  /* AlltoAllv: no schedule of its own. The core issues it as a group of
   * Send/Recv pairs on the Send/Recv channels (one per direction between two
   * ranks) and the rank's own block as a local copy (src/core/pairs.c). Each
   * pair's channel chooses its algorithm by that pair's block, which both
   * ends know, so ranks that send different amounts agree block by block;
   * the choice between pairs and the collective's own forms cannot depend on
   * the size (a finished table may not have a pairs range that is not 0-inf:
   * planTableCheckPairs). */
  PLAN_ALGO_PAIRS = 14,
  PLAN_NUM_ALGOS = 15
} planAlgo;

/* JOIN: the step's lane waits until lane `from` has completed every step
 * listed before this one (an event edge between streams). A JOIN marked
 * `launched` waits instead until the kernel of lane `from`'s last REDUCE
 * (a REDUCE in pieces, listed before the JOIN with nothing after it on
 * that lane but the SIGNALs its kernel writes) is running, every block of
 * it: the steps of lane `from` before that REDUCE are then complete, the
 * REDUCE and its SIGNALs not yet (a launch-completion event on the CUDA
 * executor; others run it as a JOIN). */
/* REDUCE: dst = srcs[0] op srcs[1] op ... (the schedule's srcs list, in
 * rank order), `bytes` of the schedule's element type; runs on the lane like
 * a copy (a kernel on the CUDA executor, C on the host executor). */
/* NOTIFY: block `peer` of the rank's receive buffer (the block rank `peer`
 * sends it) holds its data from here on the lane: the executor stores the
 * caller's arrival value into the caller's arrival word `peer` (planArgs.
 * notify; planAddArrivals). A local store, no peer involved. */
typedef enum {
  PLAN_STEP_COPY = 0,
  PLAN_STEP_SIGNAL = 1,
  PLAN_STEP_WAIT = 2,
  PLAN_STEP_JOIN = 3,
  PLAN_STEP_REDUCE = 4,
  PLAN_STEP_NOTIFY = 5
} planStepKind;
/* STAGE: the rank's library-owned staging slot of this operation (staged.c),
 * which peers write. SCRATCH: the rank's library-owned scratch buffer of the
 * reductions (reduce.c), which pull1's copies write on the rank itself and
 * push1's from the peers. LINES: the rank's library-owned
 * line slot of this operation (stagell), which peers write in lines of 16
 * bytes: 8 bytes of data in 32-bit words 0 and 2, PLAN_LINE_FLAG in words 1
 * and 3. A COPY into LINES writes `bytes` data bytes as lines (the last one
 * padded with zeros); a REDUCE source in LINES is read as the lines of the
 * REDUCE's `bytes`: the executor waits until each line carries the flag in
 * both words (a line may land in two halves), reads it, and sets it back to
 * 0, so every line is 0 between operations and a line's flag can only be
 * this operation's (the line is its own signal: no DATA word). Of 0 bytes,
 * both are one line with no data (a token, planLines): the REDUCE then
 * waits for it, clears it and writes nothing. A COPY source or a REDUCE
 * destination is never LINES. A REDUCE of one source
 * copies its bytes, whatever the type (stagell's movement form takes each
 * peer's lines so; its `peer` is the rank that writes those lines; a
 * REDUCE of several line sources has them in rank order). */
typedef enum {
  PLAN_BUF_SEND = 0,
  PLAN_BUF_RECV = 1,
  PLAN_BUF_STAGE = 2,
  PLAN_BUF_SCRATCH = 3,
  PLAN_BUF_LINES = 4
} planBuf;
#define PLAN_LINE_FLAG 1u
/* A line slot holds a share for each peer, which only that peer writes (the
 * slot's own rank writes none): n - 1 shares. Bytes of a share for nranks
 * with staging slots of stageBytes: half a staging slot on 2 ranks, a
 * quarter of it divided by n on more (core.h, coreSetLineBytes, says why),
 * a multiple of 16. */
static inline size_t planLineShareBytes(int nranks, size_t stageBytes) {
  return nranks < 2 ? 0 : (nranks == 2 ? stageBytes : stageBytes / 4) / (size_t)nranks / 16 * 16;
}
/* ... and of a line slot. */
static inline size_t planLineSlotBytes(int nranks, size_t stageBytes) {
  return nranks < 2 ? 0 : (size_t)(nranks - 1) * planLineShareBytes(nranks, stageBytes);
}
/* The place, in shares, of writer w's lines in rank `to`'s line slot:
 * 0 .. n-2, from the next rank after `to` on. */
static inline size_t planLinePlace(int w, int to, int nranks) {
  return (size_t)((w - to - 1 + nranks) % nranks);
}
/* Lines that carry `bytes` data bytes: one per 8, and one for none (a
 * token: a line with no data, which a rank that sends a peer nothing in
 * stagell's movement form stores so that the peer hears from it; staged.c,
 * the slot argument). Executors write, wait for and clear planLines(bytes)
 * lines for a COPY into LINES or a REDUCE source in LINES of `bytes`. */
static inline size_t planLines(size_t bytes) {
  return bytes ? (bytes + 7) / 8 : 1;
}
/* Bytes of those lines. */
static inline size_t planLinesBytes(size_t bytes) {
  return 16 * planLines(bytes);
}
/* DATA belongs to the staged algorithms (staged.c): "my block is in your
 * staging slot". PIECE + g belongs to pull1's AllReduce (reduce.c): "group
 * g of my part is reduced in my receive buffer" (in pieces: piece g), to
 * push1 (reduce.c) from the rank's kernel to itself "piece g of my part is
 * reduced", and to relay (relay.c) and chain (chain.c): "group g of my
 * part (chain: of the block) is in my receive buffer". PUSH + g belongs to
 * push1 alone: from a peer "piece g of your part is in your scratch
 * buffer", polled by the rank's kernel (inKernel WAITs) and, in a CUDA
 * graph, reset after it. Words of its own, so that no other operation's
 * signal can land on one before that reset: a peer writes them only in a
 * push1 operation, after its ENTRY WAIT for this rank, whose ENTRY SIGNAL
 * follows the reset on lane 0. (On PIECE words, which a Broadcast's chain
 * signals at once, push1's EXIT had to wait for its kernel's end: 8 us of
 * an AllReduce in a graph on 2x H200, docs/results/push1-empty-2xh200/.) */
#define PLAN_PIECE_GROUPS 8
#define PLAN_PIECE_MIN ((size_t)1 << 20)
typedef enum {
  PLAN_PHASE_ENTRY = 0,
  PLAN_PHASE_EXIT = 1,
  PLAN_PHASE_DATA = 2,
  PLAN_PHASE_PIECE = 3,
  PLAN_PHASE_PUSH = PLAN_PHASE_PIECE + PLAN_PIECE_GROUPS,
  PLAN_NUM_PHASES = PLAN_PHASE_PUSH + PLAN_PIECE_GROUPS
} planPhase;
/* g of a phase PIECE + g or PUSH + g. */
static inline int planPhaseGroup(planPhase ph) {
  return (int)ph - (ph >= PLAN_PHASE_PUSH ? PLAN_PHASE_PUSH : PLAN_PHASE_PIECE);
}

typedef struct {
  int rank;    /* whose buffer */
  planBuf buf; /* which of its buffers */
  size_t off;  /* byte offset into it */
} planLoc;

typedef struct {
  planStepKind kind;
  int lane;
  int round; /* queue-safety round (above); steps are listed in round order */
  /* COPY */
  planLoc src, dst;
  size_t bytes;
  int batch; /* consecutive batch copies on a lane may be issued as one command;
               2: rows in rank order, one 2D copy where the addresses are strided */
  /* SIGNAL / WAIT */
  int peer;
  planPhase phase;
  /* JOIN */
  int from;
  int launched; /* 1: wait for the launch of lane `from`'s REDUCE, not its end (above) */
  /* REDUCE: sources srcs[src0 .. src0+nsrc) of the schedule */
  int src0, nsrc;
  /* REDUCE: 0, or the bytes of each piece it may be done in (pull1 and
   * push1, reduce.c): the steps before it on its lane are inKernel, one
   * JOIN per piece of phases PIECE+0, PIECE+1, ... in order (pull1), or
   * WAITs of PUSH+0, PUSH+1, ... for the same peers in the same order each
   * piece (push1), and
   * piece k (bytes [k*pieceBytes, (k+1)*pieceBytes) of the destination and
   * of every source) may be reduced once JOIN k's lane reached it, or the
   * peers' signals of PUSH+k came. SIGNALs of phase PIECE+k marked
   * inKernel right after it in the list, on its lane, in order of k, are
   * written by the kernel once piece k is reduced (the WAITs that need
   * them: rule 2 above); such a SIGNAL may name the rank itself (push1: its
   * lane C WAITs for it; a rank's own PIECE words pair as a peer's do, and
   * nothing else signals or waits for itself). The CUDA executor launches
   * one kernel that polls each piece's words before the piece and signals
   * after it; other executors run the JOINs and WAITs as such, the REDUCE
   * whole, then the SIGNALs. */
  size_t pieceBytes;
  /* 1 when the REDUCE that follows the step on its lane does it itself, in
   * its kernel: a WAIT or JOIN it polls (a peer's signal, or for a JOIN a
   * word that lane `from` writes at this point); a COPY whose bytes it
   * stores and a SIGNAL it writes (stagesm). No hardware queue holds such a
   * wait, so rule 2 of queue safety does not apply to it. Other executors
   * run the steps as usual, in lane order. */
  int inKernel;
} planStep;

typedef struct {
  planColl coll;
  planAlgo algo;
  int rank, nranks;
  int nlanes;                    /* lanes 0..nlanes-1 are used; at most PLAN_MAX_LANES(nranks) */
  int nrounds;                   /* rounds 0..nrounds-1 (0 for an empty schedule) */
  int round;                     /* builders: the round of the steps added next */
  unsigned long long stageIndex; /* staged algorithms: slot = stageIndex % stageSlots */
  int stageSlots;
  size_t lineBytes; /* stagell: planArgs.lineBytes (planCheck keeps every line inside a slot) */
  int dtype, redop; /* REDUCE steps: dmacclDataType_t and dmacclRedOp_t numbers */
  size_t elemSize;
  int listOrder; /* planArgs.listOrder: issued in list order, never in a graph (rule 2) */
  int nsteps, cap;
  planStep *steps;
  int nsrcs, srcCap; /* REDUCE sources */
  planLoc *srcs;
} planSchedule;

/* stagesm: the most peers one kernel stores into; larger sets run stage. */
#define PLAN_SM_MAX_PEERS 15

/* Lanes a schedule may use: one per peer, plus two for pipelined reductions. */
#define PLAN_MAX_LANES(n) ((n) > 1 ? (n) + 2 : 1)

/* Self copies from this size on get a lane of their own (direct.c). */
#define PLAN_SIDE_LANE_BYTES ((size_t)1 << 20)
/* split: the pushed half of a block is a multiple of this (direct.c) */
#define PLAN_SPLIT_ALIGN ((size_t)4096)

/*
 * Arguments of one rank's call, as the planner needs them. Counts are in
 * elements of elemSize bytes. V forms: vec[r] is rank r's arrays, each of
 * nranks entries, back to back (PLAN_VEC_* below); the forms whose arrays are
 * the same on every rank (AllGatherV, ReduceScatterV) read only vec[rank].
 */
typedef struct {
  planColl coll;
  int rank, nranks;
  size_t count;    /* the call's count (sendcount, recvcount, count) */
  size_t elemSize; /* bytes of one element */
  int dtype, redop;
  int root;
  int inPlace; /* the call's buffers are in its collective's in-place form */
  const size_t *const *vec;
  size_t scratchBytes; /* reductions: the rank's scratch buffer (bytes) */
  /* pull1 reductions: the smallest piece of the pipeline, and half the
   * smallest group of AllReduce's result (reduce.c); the same on every rank.
   * 0: PLAN_PIECE_MIN (what the library uses; tests pass less to run the
   * pipeline's shapes at small sizes). */
  size_t pieceMin;
  /* Staged algorithms only: slots per rank (>= 2) and the 1-based index of
   * this operation among the staged ones (same on every rank). */
  int stageSlots;
  unsigned long long stageIndex;
  /* Staged algorithms only: 1 to begin with an ENTRY handshake with every
   * peer, so that the slots are free whatever ran before (the first staged
   * operation of a CUDA graph: staged.c). */
  int stageEntry;
  /* Staged movement only: 1 to copy the rank's own block straight from its
   * send buffer to its receive buffer after the DATA signals, instead of
   * through its own slot before them: where copies are not batched (CUDA
   * graphs) that local copy then overlaps the peers' signals, and the out
   * copies skip it (staged.c). */
  int stageSelfLate;
  /* Staged reductions only: 1 to put the DATA waits and the REDUCE on a lane
   * of their own, forked at the start, with the waits marked inKernel (and,
   * where the REDUCE would overwrite what the copies read, an inKernel JOIN
   * after them): the kernel is queued beside the copies and waits for the
   * peers' data itself, instead of being queued behind a stream wait
   * (staged.c). */
  int kernelWait;
  /* stagell only: bytes of one line slot of a rank (0: stagell runs as
   * stagesm, a movement collective's as stage). The slots rotate as the
   * staging slots do (stageIndex). */
  size_t lineBytes;
  /* AllGather and AllGatherV only: 1 to add a NOTIFY step per block of the
   * receive buffer where that block is complete (planAddArrivals). */
  int notify;
  /* Direct push forms: 1 to exchange ENTRY and EXIT with every peer, also
   * where no block moves between the two (stagell's AlltoAllv where its
   * lines do not fit: a numbered staged operation meets every peer,
   * staged.c). */
  int syncEvery;
  /* pull1's AllReduce: 1 where the reduction kernel can write every
   * peer's words (no peer on this GPU), so that it may signal each piece of
   * the rank's result to the peers as soon as it is reduced (reduce.c,
   * buildPieced: at most PLAN_SM_MAX_PEERS peers, every rank's pieces in
   * scratchBytes; eager only where the whole buffer exceeds 24 x the
   * smallest piece). The same on every rank, as scratchBytes must be. */
  int kernelSignals;
  /* 1 where the executor issues the steps in list order (eager: not
   * captured into a CUDA graph); the schedule may then rely on it (rule 2
   * above). The same on every rank. */
  int listOrder;
} planArgs;

/* The arrays of a V form: AlltoAllv has four, the others the first two. */
enum { PLAN_VEC_COUNTS = 0, PLAN_VEC_DISPLS = 1, PLAN_VEC_RCOUNTS = 2, PLAN_VEC_RDISPLS = 3 };
#define PLAN_VEC_ARRAYS 4
static inline const size_t *planVec(const planArgs *a, int r, int which) {
  return a->vec[r] + (size_t)which * (size_t)a->nranks;
}

/* A byte range that travels (movement) or is reduced (reductions). */
typedef struct {
  size_t srcOff, dstOff, bytes; /* bytes 0: nothing */
} planBlock;

typedef struct {
  const char *name;     /* "allgather": the selection grammar's name */
  const char *call;     /* "dmacclAllGather": for messages */
  const char *countArg; /* the count argument's name ("sendcount") */
  int reduces;          /* takes an op; built by reduce.c */
  int rooted;           /* takes a root */
  int vector;           /* takes arrays (planArgs.vec) */
  int peerArrays;       /* the layout needs every rank's arrays (staged.c: buildPeerArrays) */
  unsigned algos;       /* algorithms it accepts (bit planAlgo) */
  /* Bytes of rank's send and receive buffers (0: unused on that rank). */
  size_t (*sendBytes)(const planArgs *a, int rank);
  size_t (*recvBytes)(const planArgs *a, int rank);
  /* In place: 1 when the collective has an in-place form on rank; then
   * sendbuff - recvbuff == *delta bytes is that form. */
  int (*inPlace)(const planArgs *a, int rank, long long *delta);
  /* The selection size (nccl-tests' size), the same on every rank. */
  size_t (*size)(const planArgs *a);
  /* Movement: the block rank `from` sends to rank `to` (from's send buffer
   * to to's receive buffer). NULL for reductions. */
  planBlock (*block)(const planArgs *a, int from, int to);
  /* Reductions: the part of the result that lands on rank t: every rank's
   * send[srcOff, srcOff+bytes) reduced into t's recv at dstOff. oneShot:
   * the staged form, which may give every rank the whole result. */
  planBlock (*target)(const planArgs *a, int t, int oneShot);
  /* Reductions: every rank's part is then copied to every peer (AllReduce). */
  int shareResult;
} planCollInfo;

/* The rows, by collective (coll.c); every row is planColl_<name> of coll_*.c. */
extern const planCollInfo *const planColls[PLAN_NUM_COLLS];
static inline const planCollInfo *planCollOf(planColl c) {
  return planColls[c];
}
/* One rank (a->nranks == 1): every collective is one copy from the send
 * buffer to the receive buffer (a reduction of one rank is its input), this
 * block; nothing when bytes is 0 or the two ends are the same address. */
planBlock planOneRankBlock(const planArgs *a);
/* Staging bytes the collective needs on its busiest rank under a staged
 * algorithm (SIZE_MAX: it cannot be staged). */
size_t planStageNeed(const planArgs *a, planAlgo algo);

/* Staged algorithms (staged.c): instead of an entry handshake, every rank
 * pushes its blocks into library-owned staging slots of its peers, raises
 * DATA, waits for DATA from every peer, and copies its own slot into its
 * receive buffer. Slots are reused round robin (two are enough); with
 * stageEntry an ENTRY handshake comes first. */
int planIsStaged(planAlgo a);
/* Whether an operation of coll with a may run at the call, before the peers
 * have called: staged, and touching no peer's buffer or arrays (not
 * twoshot, whose second shot stores into the peers' receive buffers, nor
 * AlltoAllv's stagell, built from every rank's arrays). Every staged
 * operation is numbered at the call either way. */
int planRunsAtCall(planColl coll, planAlgo a);
/* AlltoAllv's stagell moves its blocks as lines only where none between
 * two ranks exceeds this (and each fits a share: staged.c). Measured on 4x
 * H200 with 2 ranks, eager (docs/results/x4-h200/at-5e98e04/): blocks of
 * 512 KB as lines 10.2-11.0 us against pushb's 21.9-25.1, of 2 MB 28.8-29.1
 * against 20.7-21.0 (a 4-rank share holds 256 KB). Needs every rank's
 * arrays. */
#define PLAN_V_LINES_MAX ((size_t)1 << 20)
/* Whether AlltoAllv's stagell moves a's blocks as lines (every rank's
 * arrays at hand, each block in a share and at most PLAN_V_LINES_MAX): the
 * same verdict on every rank. Lines need no peer's buffers. */
int planVMovesLines(const planArgs *a);
/* Whether a is composed of other operations by the core and has no schedule
 * of its own (pairs): planBuild refuses it. */
static inline int planIsComposed(planAlgo a) {
  return a == PLAN_ALGO_PAIRS;
}
/* A built schedule reduced to its handshakes, for a rank that cannot reach
 * a peer's buffers (the core: nothing moves, and the peers are not left
 * waiting): its SIGNALs and WAITs alone, all on lane 0 in list order, which
 * is round order, so every WAIT follows every SIGNAL of the rank's earlier
 * rounds in its one lane (rule 2; a WAIT a kernel polled, or push1's lane C
 * WAIT for its kernel's own signal, kept on their lanes, would not); a
 * rank's SIGNALs and WAITs to itself go (they order nothing without the
 * kernel and lane C). nrounds and nlanes follow; planCheck accepts it. */
void planHandshakesOnly(planSchedule *s);
/* Whether a reduction's push1 runs as itself (not as pull1) for a: every
 * rank off a shared GPU (kernelSignals), at most PLAN_SM_MAX_PEERS peers,
 * every rank's part non-empty but an AllReduce's (so never a Reduce:
 * reduce.c says why), and every rank's pieces in the scratch buffer. Then no rank reads
 * a peer's send buffer, and only AllReduce writes a peer's receive buffer. */
int planPushRuns(const planArgs *a);
/* Whether a schedule writes lines (a COPY into LINES) or reads them (a
 * REDUCE source in LINES). */
int planUsesLines(const planSchedule *s);

/* Builds the schedule of args.rank with algorithm algo into s (s is reset;
 * planScheduleFree releases it). Returns 0, or -1 on allocation failure or
 * arguments the algorithm cannot take (a staged algorithm without slots). */
int planBuild(const planArgs *args, planAlgo algo, planSchedule *s);
void planScheduleFree(planSchedule *s);
/* Makes s the empty schedule of args (no steps; keeps its memory). */
void planScheduleReset(planSchedule *s, const planArgs *args, planAlgo algo);
/* Adds to a built schedule one NOTIFY per block of the rank's receive
 * buffer (AllGather, AllGatherV), on the lane and right after the step that
 * completes the block: the last of the rank's copies into it (a pull, the
 * own block, a staged copy out of the slot), or, where only the sender
 * writes it, the last WAIT for that sender's signal (its EXIT after its
 * copy); at the start of lane 0 where nothing writes it (an empty block,
 * the own block in place). -1 where the copies into one block run on more
 * than one lane, or nothing says a written block is complete. */
int planAddArrivals(planSchedule *s, const planArgs *a);

/* The end of the run of steps from steps[i] that an executor may issue as
 * one command (a batch of stream memory operations, a batched copy): the
 * same kind on the same lane, none of them a kernel's (inKernel), COPYs all
 * batched (after steps[i] itself, which the caller issues in any case), at
 * most `most` (>= 1) steps. A kernel's step is never part of a stream
 * command: push1's kernel polls a peer's PUSH word itself, and a CUDA
 * graph's stream wait resets the word it waited for, so a stream wait that
 * took that WAIT along would leave the kernel polling for good. */
int planRunEnd(const planSchedule *s, int i, int most);

/* In a CUDA graph the PUSH words that the kernel of the REDUCE in pieces
 * steps[red] polls are reset by its lane after it (memory operations; an
 * executor issues them right after steps[planPushResetAt(s, red)]): after
 * the first JOIN on that lane, past the kernel, from the lane that SIGNALs
 * PUSH words (push1's lane A), else after the kernel's last step. Never
 * ahead of that lane's pushes and signals: a graph's launch may queue a
 * step after the kernel ahead of another lane's, and with one hardware
 * queue a reset that waited there for the kernel's end would hold the
 * signals the peers' kernels need (test_plan testPushResetQueued). */
int planPushResetAt(const planSchedule *s, int red);

/* The SIGNALs a kernel writes after the REDUCE in pieces steps[red]: the
 * inKernel SIGNALs right after it in the list, on its lane. Returns how
 * many (0: none) and sets *peers to how many each piece has; -1 when they
 * are not the one shape executors take: piece 0, 1, ... in order, each to
 * the same distinct peers (1 to PLAN_SM_MAX_PEERS) in the same order, phase
 * PIECE+k for piece k, every piece of the REDUCE. planCheck and the CUDA
 * executor both hold a schedule to it. */
int planPieceSignals(const planSchedule *s, int red, int *peers);

/* Checks the schedules of one operation, s[r] being rank r's (n ranks), for
 * the queue-safety rules above, the lane structure (lanes > 0 open with a
 * JOIN from lane 0 and are joined back), the pairing of SIGNALs and WAITs
 * (at most one per pair and phase), and that a step touching a peer's send
 * or receive buffer comes after a WAIT for that peer and before the EXIT to
 * it. Returns 0, or -1 with a sentence naming the rank and step in err. */
int planCheck(const planSchedule *s, int n, char *err, size_t errlen);

/* Algorithm and collective names ("push1", "allgather"). */
#define PLAN_ALGO_BIT(a) (1u << (a))
/* The algorithms that every movement collective takes (copy engines only):
 * the direct and staged ones (Broadcast also takes relay and chain). */
#define PLAN_ALGOS_MOVE ((1u << PLAN_ALGO_STAGESM) - 1)
const char *planAlgoName(planAlgo a);
const char *planCollName(planColl c);
/* The direct algorithm a collective runs when it cannot be staged. */
planAlgo planFallbackAlgo(planColl c);
/*
 * Ranks whose graphs are apart (the core: one process, ranks on different
 * GPUs captured into different CUDA graphs, which deadlock where a copy
 * reads the other graph's GPU: docs/architecture.md, queue safety).
 * sep[r * n + q] is nonzero where rank r may not read rank q's memory by
 * copy. planPullsAcross: whether some rank's schedule under algo (rank r's
 * from args[r], built into s, which the caller frees) has such a COPY: 1
 * (*who copies from *from), 0, or -1 where a schedule cannot be built.
 * planPushAcross: what runs instead, the first of stage, pushn, push1 and
 * pushb that the collective takes, whose staging (if any) fits stageBytes
 * and whose schedules can be built and pull nothing across; -1 where none
 * does. A rank never counts as apart from itself.
 */
int planPullsAcross(const planArgs *args, int n, planAlgo algo, const unsigned char *sep,
                    planSchedule *s, int *who, int *from);
int planPushAcross(const planArgs *args, int n, planAlgo algo, const unsigned char *sep,
                   size_t stageBytes, planSchedule *s);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int planAlgoParse(const char *name, size_t len, planAlgo *out);
int planCollParse(const char *name, size_t len, planColl *out);

/*
 * Selection table: for each collective, size ranges [lo, hi) of the
 * collective's size (its row's size(): nccl-tests' size, e.g. AllGather =
 * nranks*chunk bytes, AlltoAll = nranks*block bytes, AllReduce = count
 * bytes) mapped to an algorithm the collective takes (its row's algos).
 * Grammar:
 *   table  := entry (';' entry)*
 *   entry  := coll ['@graph'] ':' ranged (',' ranged)*
 *   ranged := [size '-' (size | 'inf') ':'] algo
 *   size   := digits [K|M|G]   (binary units)
 * An entry without a range covers all sizes. Later ranges override earlier
 * ones where they overlap; a string that names only some collectives leaves
 * the others as they were. Empty strings change nothing. An entry of
 * 'coll@graph' holds ranges for calls captured into CUDA graphs: where one
 * covers a size it wins over the plain entry's range there, elsewhere the
 * plain entry decides; a plain range clears the graph ranges it overlaps
 * (so a later layer decides for captured calls too). Built in: 2-rank
 * AllGather/AlltoAll of 2-8 MB (select.c).
 */
#define PLAN_MAX_RANGES 32
/* Where a range came from (dmaccl-info says it). */
typedef enum {
  PLAN_FROM_BUILTIN = 0,
  PLAN_FROM_TUNE_FILE = 1,
  PLAN_FROM_ENV = 2,
  PLAN_FROM_CONFIG = 3
} planOrigin;
typedef struct {
  size_t lo, hi; /* hi == SIZE_MAX means infinity */
  planAlgo algo;
  planOrigin origin;
  int line;     /* line of the tuning text it came from (0: none) */
  int noSmMove; /* its algorithm was the SM-moving one's copy-engine form (planTableNoSmMoves) */
} planRange;
typedef struct {
  int nranges[PLAN_NUM_COLLS];
  planRange ranges[PLAN_NUM_COLLS][PLAN_MAX_RANGES];
  /* coll@graph: ranges for captured calls (sparse: sizes not covered take
   * the plain ranges) */
  int gnranges[PLAN_NUM_COLLS];
  planRange granges[PLAN_NUM_COLLS][PLAN_MAX_RANGES];
  planOrigin origin; /* stamped on the ranges that parsing adds */
  int line;
  int ctaPolicy; /* a dmacclCtaPolicy_t (coreBuildTable; Default from planTableDefaults) */
} planTable;

/* A size as the grammar writes it ("4M", "inf" = SIZE_MAX), exactly len chars: 0 or -1. */
int planParseSize(const char *p, size_t len, size_t *out);
/* Writes a size as the grammar reads it ("64K", "1536", "inf") into buf. */
const char *planSizeString(size_t v, char *buf, size_t len);

/* Applies str on top of *t. On error returns -1, leaves *t unchanged, and
 * writes a sentence naming the offending text into err. */
int planTableParse(planTable *t, const char *str, char *err, size_t errlen);
/* 0 where every collective takes pairs (plan.h) at every size or at none,
 * eager and captured; else -1 and a sentence in err. planTableParse does
 * not check it (a table may pass through such a state between layers):
 * whoever finishes a table does. */
int planTableCheckPairs(const planTable *t, char *err, size_t errlen);

/*
 * Tuning text (built-in defaults and DMACCL_TUNE_FILE): lines of
 *   RANKS TABLE
 * where RANKS is a rank count or '*' (any) and TABLE is in the grammar
 * above; '#' starts a comment. The '*' lines apply first, then the lines of
 * the given rank count, each in file order. Every line is checked, whatever
 * its rank count: on error returns -1, leaves *t unchanged and names the line.
 * A file whose result splits pairs by size (planTableCheckPairs) leaves that
 * collective's ranges as they were and applies the rest: 0, with err saying
 * so (err is empty after a clean file).
 */
int planTuneParse(planTable *t, int nranks, const char *text, char *err, size_t errlen);
/* Built-in defaults, as tuning text (measured on H200s: select.c). */
extern const char planDefaultTune[];
/* Resets *t to the built-in defaults for nranks (0: the '*' lines only). */
void planTableDefaults(planTable *t, int nranks);
/* The algorithms whose kernel moves data with SM stores (stagesm, stagell,
 * twoshot; the reduction kernel's arithmetic is not counted). */
#define PLAN_ALGOS_SM_MOVE                                                                         \
  (PLAN_ALGO_BIT(PLAN_ALGO_STAGESM) | PLAN_ALGO_BIT(PLAN_ALGO_STAGELL) |                           \
   PLAN_ALGO_BIT(PLAN_ALGO_TWOSHOT))
/* dmacclCtaPolicyZero: every range of *t that came from the built-in table
 * or a tuning file and names an algorithm of PLAN_ALGOS_SM_MOVE takes its
 * copy-engine form instead: stagesm and stagell the staged one (stage;
 * AlltoAllv's stagell pushb), twoshot pull1. Ranges from DMACCL_ALGO or the config stay as named.
 * Returns how many ranges changed. */
int planTableNoSmMoves(planTable *t);
/* A Send/Recv channel's table, from its parent's (t) of parentRanks ranks.
 * On 2 ranks, where the Broadcast ranges select what the built-in table's
 * do (eager and captured, under t's CTA policy; whatever set them: both
 * ends of a channel must agree), the channel's own built-in Broadcast
 * ranges replace them (select.c,
 * channelBroadcast: lines up to 1 MB, then pushb eager and stage in graphs
 * up to 8 MB; a channel's Broadcast usually runs beside the channel the
 * other way, which the parent's Broadcast ranges were not measured with).
 * Elsewhere, or where DMACCL_ALGO, the config or a tuning file changed a
 * Broadcast range, the channel takes the parent's, as measured there for
 * them or as the user named them. Then every Broadcast range from the
 * built-in table or a tuning file that names a form in which the receiver
 * pulls (pull1, pulln, pullb, split, chain, relay) takes pushb (ranges from
 * DMACCL_ALGO or the config stay as named): a channel's Broadcast usually
 * runs beside the channel the other way, split pulls on the link direction
 * the peer pushes on (dmaccl-perf's sendrecv took 1.6-2.0x pushb's time with
 * split at 16-512 MB, 2x H100, docs/results/split-2xh100/), and a 4-rank
 * communicator's channels took chain (on 2 ranks the receiver pulls in
 * groups) from 4 MB: AlltoAllv as pairs from 16 MB at 1.9x pushb's time, a
 * pull's rate (docs/results/x4-h200/pairs-8863b31/). Returns 1 where the
 * channel's own ranges replaced the parent's. */
int planTableForChannel(planTable *t, int parentRanks);
/* A digest of what t selects for coll at every size, eager and captured:
 * equal for tables that select alike, whatever their ranges and origins
 * (FNV-1a over the sizes where the choice changes). The two ends of a
 * channel between processes compare theirs (comm_rank.c). */
uint64_t planSelectionDigest(const planTable *t, planColl coll);
/* CTA policies by dmacclCtaPolicy_t's numbers (planTable.ctaPolicy). */
enum { PLAN_CTA_DEFAULT = 0, PLAN_CTA_EFFICIENCY = 1, PLAN_CTA_ZERO = 2 };
/* "default", "efficiency", "zero" (as DMACCL_CTA_POLICY takes them), or
 * "unknown". */
const char *planCtaPolicyName(int policy);
/* A policy's name in any case, or its number as one digit: the number;
 * anything else: -1. */
int planCtaPolicyParse(const char *s);
/* The algorithm for a collective of the given size, and the range that chose it. */
planAlgo planSelect(const planTable *t, planColl coll, size_t size, const planRange **why);
/* ... for a call captured into a CUDA graph (graph != 0): a coll@graph
 * range that covers the size, else planSelect's. */
planAlgo planSelectIn(const planTable *t, planColl coll, size_t size, int graph,
                      const planRange **why);
/* A call with arrival words (planArgs.notify): its words come early only
 * from the forms whose own copies complete each block (planAddArrivals:
 * pull1, pulln, stage, stage2d, stagell); the others store a peer's word after that
 * peer's last signal. So a choice of the built-in table or a tuning file of
 * push1, pushn, pushb or pullb becomes pull1 where coll takes it (as fast
 * as pushb at the sizes the table gives it: docs/overlap.md); a choice the
 * user made (origin DMACCL_ALGO or the config) stays. */
planAlgo planArrivalAlgo(planColl coll, planAlgo algo, planOrigin origin);

#endif /* DMACCL_PLAN_H_ */
