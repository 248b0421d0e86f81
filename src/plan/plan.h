/*
 * Planning layer: turns one rank's part of a collective into a schedule of
 * typed steps. Pure C11, no CUDA header: it builds and is tested with a plain
 * C compiler, and the same schedule runs on every executor.
 *
 * Synchronization model. Every rank owns two flag slots per peer, one for the
 * ENTRY phase and one for the EXIT phase. SIGNAL(peer, phase) stores the
 * operation's epoch into the peer's slot [phase][my rank]; WAIT(peer, phase)
 * blocks its lane until my slot [phase][peer] has reached the epoch.
 *   ENTRY: "my buffers are ready": everything queued before the collective on
 *          my stream is done, so peers may read my sendbuff or write my recvbuff.
 *   EXIT:  "I am done with your buffers": my copies that touch the peer are
 *          complete.
 * A rank's part is complete when it has seen EXIT from every peer.
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
 *      every SIGNAL of that rank of a round < k;
 *   3. steps are listed in round order, and executors issue them in list
 *      order (several ranks of one process: round by round across them).
 * planCheck verifies 1-3 and the lane structure for every rank's schedule
 * of one operation; test_plan runs it on every algorithm.
 */
#ifndef DMACCL_PLAN_H_
#define DMACCL_PLAN_H_

#include <stddef.h>

typedef enum { PLAN_COLL_ALLGATHER = 0, PLAN_COLL_ALLTOALL = 1, PLAN_NUM_COLLS = 2 } planColl;

/* Algorithms. Direction (push: write into peers; pull: read from peers) times
 * issue form (one lane; one lane per peer; one batch command on one lane). */
typedef enum {
  PLAN_ALGO_PUSH1 = 0,
  PLAN_ALGO_PUSHN = 1,
  PLAN_ALGO_PUSHB = 2,
  PLAN_ALGO_PULL1 = 3,
  PLAN_ALGO_PULLN = 4,
  PLAN_ALGO_PULLB = 5,
  PLAN_ALGO_STAGE = 6,   /* staging slots, peer copies as one batch command (staged.c) */
  PLAN_ALGO_STAGE2D = 7, /* staging slots, peer copies in rank order: one 2D copy where strided */
  PLAN_NUM_ALGOS = 8
} planAlgo;

/* JOIN: the step's lane waits until lane `from` has completed every step
 * listed before this one (an event edge between streams). */
typedef enum {
  PLAN_STEP_COPY = 0,
  PLAN_STEP_SIGNAL = 1,
  PLAN_STEP_WAIT = 2,
  PLAN_STEP_JOIN = 3
} planStepKind;
/* STAGE: the rank's library-owned staging slot of this operation (staged.c). */
typedef enum { PLAN_BUF_SEND = 0, PLAN_BUF_RECV = 1, PLAN_BUF_STAGE = 2 } planBuf;
/* DATA belongs to the staged algorithms (staged.c): "my block is in your
 * staging slot". */
typedef enum {
  PLAN_PHASE_ENTRY = 0,
  PLAN_PHASE_EXIT = 1,
  PLAN_PHASE_DATA = 2,
  PLAN_NUM_PHASES = 3
} planPhase;

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
} planStep;

typedef struct {
  planColl coll;
  planAlgo algo;
  int rank, nranks;
  int nlanes;                    /* lanes 0..nlanes-1 are used; never more than max(nranks, 1) */
  int nrounds;                   /* rounds 0..nrounds-1 (0 for an empty schedule) */
  int round;                     /* builders: the round of the steps added next */
  unsigned long long stageIndex; /* staged algorithms: slot = stageIndex % stageSlots */
  int stageSlots;
  int nsteps, cap;
  planStep *steps;
} planSchedule;

/* Self copies from this size on get a lane of their own (direct.c). */
#define PLAN_SIDE_LANE_BYTES ((size_t)1 << 20)

/* Arguments of one rank's call, as the planner needs them. */
typedef struct {
  planColl coll;
  int rank, nranks;
  size_t chunkBytes; /* AllGather: sendcount*size; AlltoAll: count*size (one block) */
  int inPlace;       /* AllGather only: sendbuff is recvbuff's own block */
  /* Staged algorithms only: slots per rank (>= 2) and the 1-based index of
   * this operation among the staged ones (same on every rank). */
  int stageSlots;
  unsigned long long stageIndex;
} planArgs;

/* Staged algorithms (staged.c): instead of an entry handshake, every rank
 * pushes its blocks into library-owned staging slots of its peers, raises
 * DATA, waits for DATA from every peer, and copies its own slot into its
 * receive buffer. Slots are reused round robin (two are enough). */
int planIsStaged(planAlgo a);

/* Builds the schedule of args.rank with algorithm algo into s (s is reset;
 * planScheduleFree releases it). Returns 0, or -1 on allocation failure or
 * arguments the algorithm cannot take (a staged algorithm without slots). */
int planBuild(const planArgs *args, planAlgo algo, planSchedule *s);
void planScheduleFree(planSchedule *s);

/* Checks the schedules of one operation, s[r] being rank r's (n ranks), for
 * the queue-safety rules above, the lane structure (lanes > 0 open with a
 * JOIN from lane 0 and are joined back), and the pairing of SIGNALs and
 * WAITs (at most one per pair and phase). Returns 0, or -1 with a sentence
 * naming the rank and step in err. */
int planCheck(const planSchedule *s, int n, char *err, size_t errlen);

/* Algorithm and collective names ("push1", "allgather"). */
const char *planAlgoName(planAlgo a);
const char *planCollName(planColl c);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int planAlgoParse(const char *name, size_t len, planAlgo *out);
int planCollParse(const char *name, size_t len, planColl *out);

/*
 * Selection table: for each collective, size ranges [lo, hi) of the
 * collective's size (nccl-tests' size: AllGather = nranks*chunk bytes,
 * AlltoAll = nranks*block bytes) mapped to an algorithm. Grammar:
 *   table  := entry (';' entry)*
 *   entry  := coll ':' ranged (',' ranged)*
 *   ranged := [size '-' (size | 'inf') ':'] algo
 *   size   := digits [K|M|G]   (binary units)
 * An entry without a range covers all sizes. Later ranges override earlier
 * ones where they overlap; a string that names only some collectives leaves
 * the others as they were. Empty strings change nothing.
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
  int line; /* line of the tuning text it came from (0: none) */
} planRange;
typedef struct {
  int nranges[PLAN_NUM_COLLS];
  planRange ranges[PLAN_NUM_COLLS][PLAN_MAX_RANGES];
  planOrigin origin; /* stamped on the ranges that parsing adds */
  int line;
} planTable;

/* A size as the grammar writes it ("4M", "inf" = SIZE_MAX), exactly len chars: 0 or -1. */
int planParseSize(const char *p, size_t len, size_t *out);
/* Writes a size as the grammar reads it ("64K", "1536", "inf") into buf. */
const char *planSizeString(size_t v, char *buf, size_t len);

/* Applies str on top of *t. On error returns -1, leaves *t unchanged, and
 * writes a sentence naming the offending text into err. */
int planTableParse(planTable *t, const char *str, char *err, size_t errlen);

/*
 * Tuning text (built-in defaults and DMACCL_TUNE_FILE): lines of
 *   RANKS TABLE
 * where RANKS is a rank count or '*' (any) and TABLE is in the grammar
 * above; '#' starts a comment. The '*' lines apply first, then the lines of
 * the given rank count, each in file order. Every line is checked, whatever
 * its rank count: on error returns -1, leaves *t unchanged and names the line.
 */
int planTuneParse(planTable *t, int nranks, const char *text, char *err, size_t errlen);
/* Built-in defaults, as tuning text (measured on H200s: select.c). */
extern const char planDefaultTune[];
/* Resets *t to the built-in defaults for nranks (0: the '*' lines only). */
void planTableDefaults(planTable *t, int nranks);
/* The algorithm for a collective of the given size, and the range that chose it. */
planAlgo planSelect(const planTable *t, planColl coll, size_t size, const planRange **why);

#endif /* DMACCL_PLAN_H_ */
