/* Internal definitions shared by the core layer and the executors. */
#ifndef DMACCL_CORE_H_
#define DMACCL_CORE_H_

#include "dmaccl.h"
#include "../plan/plan.h"
#include "../base/reduce.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

/* Operations a rank may have posted ahead of the slowest rank of its set. */
#define CORE_BOARD_DEPTH 64
#define CORE_MAX_RANKS 256
/* Staging slots per rank for the staged algorithms (two are enough: staged.c). */
#define CORE_STAGE_SLOTS 2
/* ... and for staged operations captured into CUDA graphs, which alternate
 * between two slots of their own by their place in the capture (staged.c,
 * docs/architecture.md "Graphs"). */
#define CORE_GRAPH_STAGE_SLOTS 2

struct execOps;
struct bootState;

/* A buffer as a peer process finds it (descriptors on the shared board). */
typedef enum { CORE_REF_NONE = 0, CORE_REF_MEM = 1, CORE_REF_IPC = 2 } coreRefKind;
typedef struct {
  int32_t kind, pad;
  uint64_t id;   /* MEM: allocation number; IPC: CUDA buffer id of the allocation */
  uint64_t off;  /* MEM: offset in the owner's part; IPC: offset from the allocation base */
  uint64_t base; /* IPC: the owner's allocation base and size (cache bookkeeping) */
  uint64_t size;
  unsigned char handle[64]; /* IPC: cudaIpcMemHandle_t */
} coreBufRef;

/* One rank's call, as recorded at the call and used at launch. */
typedef struct coreOp {
  dmacclComm_t comm;
  planColl coll;
  const char *call; /* the public call's name, for messages */
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  dmacclDataType_t datatype;
  dmacclRedOp_t redop; /* reductions; BASE_PREMULSUM once a caller's operator is resolved */
  int root;            /* rooted collectives */
  /* A premultiplied sum (redop BASE_PREMULSUM): its scalar as the caller's
   * operator held it at the call (op.c coreResolveRedOp): a device pointer
   * (dmacclScalarDevice), or NULL and the immediate's bytes in the low
   * bytes of premulBits. */
  const void *premulPtr;
  uint64_t premulBits;
  /* V forms: PLAN_VEC_ARRAYS arrays of nranks entries, back to back. Valid
   * while the op is being posted: the caller's copy during an eager call, the
   * group's or the request's copy; posting copies it to the board. */
  const size_t *vec;
  size_t sendBytes, recvBytes; /* this rank's buffer sizes (argcheck) */
  int inPlace;
  cudaStream_t stream;
  uint64_t seq;                 /* 1-based position in the comm's sequence: the epoch */
  int capture;                  /* the stream is being captured into a CUDA graph */
  unsigned long long captureId; /* ... that capture's id (CUDA's; 0 when not captured) */
  coreBufRef sendRef, recvRef;  /* multi-process communicators only */
  /* Set when the operation is sequenced (multi-process: at the call). */
  planAlgo algo;
  uint64_t stageIndex; /* staged algorithms: index among staged operations, else 0 */
  int refsReady;       /* sendRef and recvRef were exported already (persistent requests) */
  /* Send/Recv (p2p.c): 1 dmacclSend, 2 dmacclRecv, to or from rank peer. Until
   * it is bound to its channel (coreP2pBind), comm is the parent and root
   * the sender's rank; then comm is the channel's end and root 0. */
  int p2p, peer;
  int oneRank; /* a communicator of one rank: issued by exec->oneRank, not sequenced */
  /* A rank's own block of an AlltoAllv run as Send/Recv pairs (pairs.c):
   * count bytes from sendbuff to recvbuff, issued by exec->oneRank (oneRank
   * is set when it is posted), not sequenced. */
  int self;
  /* A Send/Recv whose peer is this rank, recorded in a group (p2p.c): the
   * group's end pairs it with its match and issues the pair as one self op
   * (coreP2pPairSelf). */
  int selfP2p;
  /* An AlltoAllv recorded in a group to run as Send/Recv pairs (pairs.c):
   * the group's end issues its pieces instead, or runs it as a collective
   * where the group holds other calls of the set. */
  int pairs;
  /* A group's call that shares its stream with a call of another
   * communicator or channel of the same group: it runs beside them, forked
   * from the stream when posted and joined back at attach (group.c), instead
   * of in line on the stream after them. */
  int detach;
  /* AllGather(V)Notify (notify 1): this rank's arrival words (nranks of
   * them) and the value stored into word p once block p has arrived
   * (NOTIFY steps); NULL for the other calls. */
  int notify;
  uint32_t *arrived;
  uint32_t arrivedValue;
} coreOp;

/* Entries of an op's vec (0 for the forms without arrays). */
static inline size_t coreVecLen(const coreOp *op, int nranks) {
  return planCollOf(op->coll)->vector ? (size_t)PLAN_VEC_ARRAYS * (size_t)nranks : 0;
}
/* The planner's arguments of op on `rank`; vecs[r] is rank r's arrays
 * (NULL where unknown) and must outlive the result. */
planArgs coreOpArgs(const coreOp *op, int rank, int nranks, const size_t *const *vecs,
                    size_t scratchBytes);
/* 0 when a and b are the same operation; else writes what differs. */
int coreOpDiffer(const coreOp *a, const size_t *avec, const coreOp *b, const size_t *bvec,
                 int nranks, char *why, size_t whylen);
/* A reduction's op at its check: a built-in one stays; a caller's operator
 * of dmacclRedOpCreatePreMulSum becomes BASE_PREMULSUM with its scalar
 * (premulPtr, premulBits), or an error naming op. */
dmacclResult_t coreResolveRedOp(coreOp *op, const char *call);

/* Ranks' calls for one sequence number, gathered until every rank posted. */
typedef struct {
  uint64_t seq;
  int nposted;
  coreOp *ops; /* [nranks] */
  size_t *vec; /* [nranks][PLAN_VEC_ARRAYS * nranks]: the V forms' arrays (made at first use) */
} coreBoardSlot;

/*
 * Shared board of a multi-process set: every rank owns one segment of shared
 * memory, mapped by every rank at a fixed stride. A rank publishes its calls
 * in its own segment (fields first, seq last with release); peers read them.
 * The host executor's flags live here too.
 */
typedef struct {
  _Atomic uint64_t seq;
  int32_t coll, datatype, inPlace, capture;
  uint64_t count;
  int32_t algo, redop, root;
  int32_t premulDevice; /* BASE_PREMULSUM: a device scalar (not compared) */
  uint64_t premulBits;  /* ... else the immediate's bytes */
  uint32_t stage;       /* the low bits of the op's stageIndex: its slot and, captured, its ENTRY */
  uint64_t vecHash;     /* the V forms' arrays (on the board after the ranks, coreBoardVec) */
  coreBufRef send, recv;
} coreSharedOp;

typedef struct {
  int32_t rank, pid;
  _Atomic uint64_t launched; /* highest sequence number this rank has launched */
  _Atomic uint64_t checked;  /* ... and compared with every peer's call (board slot free) */
  coreSharedOp ops[CORE_BOARD_DEPTH];
  _Atomic uint32_t hostFlags[]; /* [PLAN_NUM_PHASES][nranks] (host executor) */
} coreSharedRank;

/* nranks parts of size bytes each, mapped at base + r*stride (shm.c). */
typedef struct {
  char *base;
  size_t size, stride;
  int nranks;
} coreShm;
dmacclResult_t coreShmCreate(struct bootState *boot, int nranks, size_t size, coreShm *out,
                             char *err, size_t errlen);
void coreShmRelease(coreShm *m);

/* An allocation of dmacclMemAlloc (mem.c). */
typedef struct coreMem {
  struct coreMem *next;
  uint64_t id;   /* sequence number of the collective call, same on every rank */
  char *mine;    /* this rank's part */
  size_t size;   /* bytes of each part */
  size_t stride; /* distance between ranks' parts; 0 for single-process sets */
  void *exec;    /* executor's record */
} coreMem;

/* The communicators made by one dmacclCommInitAll, or the one local rank of
 * a dmacclCommInitRank set (mp). */
typedef struct coreClique {
  unsigned long id; /* unique in the process, from 1 (coreNewCliqueId) */
  uint64_t setKey;  /* ranks as processes: the same for every rank of the set made from one
                       unique id (a hash of it), so that a thread holding two ranks of it can
                       tell (group.c); 0 for one process */
  int nranks;
  dmacclComm_t *comms;
  int alive;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  coreBoardSlot slots[CORE_BOARD_DEPTH];
  uint64_t nextLaunch; /* lowest sequence number not yet launched */
  planTable table;     /* algorithm selection, one for all ranks */
  char *algorithm;     /* the config's algorithm string (dmacclCommInitRank and dmacclCommSplit;
                          NULL for none): a split without a config builds its table from it */
  size_t stageBytes;   /* bytes of one staging slot (0: no staged algorithms) */
  size_t lineBytes;    /* bytes of one line slot (stagell; coreLineBytes) */
  size_t scratchBytes; /* bytes of each rank's scratch buffer (reductions; 0 in a channel's
                          set, which only broadcasts) */
  int kernelWait;      /* DMACCL_KERNEL_WAIT (the host executor runs those schedules too) */
  int gpuShared;       /* two ranks of the set on one GPU (CUDA executor): stagesm runs as
                          stage (launch.c) */
  uint64_t stageCount; /* eager staged operations sequenced so far */
  /* Captured staged operations: the capture they are in (CUDA's id; one
   * process: rank 0's) and how many of them it holds so far. */
  unsigned long long capId;
  uint64_t capCount;
  int aborting;          /* dmacclCommAbort is running: waits give up */
  dmacclResult_t broken; /* a peer died or the watchdog fired: waits give up */
  char brokenWhy[256];
  /* Multi-process sets only. */
  int mp, localRank;
  struct bootState *boot;
  coreShm board; /* one coreSharedRank per rank */
  size_t boardRankBytes;
  size_t boardVecOffset; /* where coreBoardVec starts in a rank's part */
  int *pids;
  /* Ranks as processes: each rank's planSelectionDigest of the Broadcast
   * rows its Send/Recv channels would take (planTableForChannel); a channel
   * between two ranks whose digests differ is refused at once, on both
   * ranks (p2p.c), as its ends would choose differently. */
  uint64_t *channelRows;
  size_t boardMailOffset; /* where the Send/Recv channel mailboxes start (coreBoardMail) */
  coreOp localOps[CORE_BOARD_DEPTH]; /* the local rank's posted calls */
  pthread_t progress;
  int progressStarted;
  /* The progress thread sleeps on progressCv under progressMu, not the set's
   * lock (progress.c). */
  pthread_mutex_t progressMu;
  pthread_cond_t progressCv;
  _Atomic int progressStop;
  _Atomic int progressIdle;  /* it sleeps the watchdog's long wait */
  _Atomic uint64_t postTick; /* the local rank's posts, counted for the thread */
  double timeoutSec;         /* DMACCL_TIMEOUT: 0 = no watchdog (both kinds of set) */
  uint64_t completed;        /* highest sequence number known complete (progress thread) */
  uint64_t checked;          /* highest sequence number compared with every peer's call */
  double pendingSince;       /* when the oldest incomplete operation was first seen pending */
  double deadSince;          /* when a peer was first seen dead with work pending */
  int deadRank;              /* ... that peer (named even if others exit in the grace period) */
  pthread_mutex_t p2pLock;   /* making Send/Recv channels (p2p.c) */
} coreClique;

static inline coreSharedRank *coreBoardRank(coreClique *c, int r) {
  return (coreSharedRank *)(c->board.base + (size_t)r * c->board.stride);
}
/* Rank s's mailbox for rank d > s: the unique ids of the two channels
 * between them (id[0]: s -> d, id[1]: d -> s), published with gen (the
 * attempt number) last. */
typedef struct {
  _Atomic uint64_t gen;
  dmacclUniqueId id[2];
} coreBoardMail;
static inline coreBoardMail *coreBoardMailOf(coreClique *c, int s, int d) {
  return (coreBoardMail *)((char *)coreBoardRank(c, s) + c->boardMailOffset) + d;
}
/* Rank r's V-form arrays of board slot `slot`: PLAN_VEC_ARRAYS*nranks entries. */
static inline uint64_t *coreBoardVec(coreClique *c, int r, int slot) {
  return (uint64_t *)((char *)coreBoardRank(c, r) + c->boardVecOffset) +
         (size_t)slot * PLAN_VEC_ARRAYS * (size_t)c->nranks;
}

/* The caller's config has this field: its struct (config->size, a header
 * of its time) reaches past it. Fields it lacks take their defaults. */
#define CONFIG_HAS(config, field)                                                                  \
  ((config) && (config)->size >= offsetof(dmacclConfig_t, field) + sizeof((config)->field))

/* An operator of dmacclRedOpCreatePreMulSum (op.c): a slot of its
 * communicator's table, up to CORE_REDOP_MAX live at once. Its value, from
 * CORE_REDOP_FIRST up, is drawn from one count of the process, so no two
 * operators have the same value (until the count wraps after 2^31 - 64 of
 * them): another communicator's operator, or one destroyed, is found to be
 * none of this one's. */
#define CORE_REDOP_FIRST 64
#define CORE_REDOP_MAX 65536
typedef struct {
  int live;
  int value; /* the dmacclRedOp_t the caller holds */
  dmacclDataType_t datatype;
  const void *ptr; /* dmacclScalarDevice: the caller's pointer */
  uint64_t bits;   /* dmacclScalarHostImmediate: the value's bytes (low bytes) */
} coreRedOp;

struct dmacclComm {
  int rank, nranks, device;
  dmacclExecutor_t executor;
  const struct execOps *exec;
  void *execState;
  coreClique *clique;
  planSchedule sched;        /* reused by the launcher (under the clique lock) */
  uint64_t posted;           /* sequence numbers posted */
  dmacclResult_t asyncError; /* breaks the communicator: every later wait reports it */
  dmacclResult_t opError;    /* one operation failed (ranks disagreed): the next
                                dmacclCommSynchronize reports it once */
  int users;                 /* calls inside the library on this comm (handles.c) */
  /* The last failure's sentence. Any thread may write it (the progress
   * thread breaks the set while the caller fails a wait): under errLock,
   * and read through coreLastError. */
  char lastError[512];
  pthread_mutex_t errLock;
  /* The last operation whose launch was refused (one process: launch.c). */
  uint64_t refusedSeq;
  dmacclResult_t refusedCode;
  char refusedWhy[448];
  pthread_mutex_t memLock; /* mems, redOps and regs */
  coreRedOp *redOps;       /* nredOps slots (op.c) */
  int nredOps;
  /* dmacclCommRegister's handles not yet deregistered, each with its count
   * (a pointer registered twice is one handle twice on some executors) */
  struct coreReg {
    void *handle;
    int count;
  } * regs;
  int nregs, capregs;
  coreMem *mems;     /* dmacclMemAlloc allocations */
  uint64_t memCount; /* dmacclMemAlloc calls so far */
  /* Send/Recv (p2p.c). A communicator's channels, made at first use and
   * destroyed with it: p2p[d] carries this rank's sends to rank d, p2p[n + s]
   * its receives from rank s; NULL until used (the array too). */
  dmacclComm_t *p2p;
  uint64_t *p2pSeen; /* ranks as processes: the last mailbox gen taken from each lower rank */
  /* A channel is a 2-rank communicator: rank 0 sends, rank 1 receives. It
   * serves `parent`, whose ranks parentRank[0] and [1] its ranks are; memory
   * and buffer descriptors are resolved through the parent (mem.c). */
  dmacclComm_t parent;
  int parentRank[2];
  /* An AlltoAllv outside a graph capture ran as Send/Recv pairs (pairs.c):
   * its channels with every peer exist, so a captured one may run so too. */
  int pairsReady;
};

/* Errors (errors.c). coreError records a sentence on comm (may be NULL) and on
 * the calling thread and returns code. */
dmacclResult_t coreError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* comm's last sentence, copied under its lock into a buffer of the calling
 * thread (valid until this thread's next coreLastError). */
const char *coreLastError(dmacclComm_t comm);
void coreSetAsyncError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An operation failed without breaking the communicator (opError). */
void coreSetOpError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* What a wait reports once its work is done: the sticky error, else the
 * operation error, which this clears (reported once). */
dmacclResult_t coreTakeErrors(dmacclComm_t comm);

/* Data types (datatype.c). */
size_t coreTypeSize(dmacclDataType_t t); /* 0 for an invalid type */
const char *coreTypeName(dmacclDataType_t t);

/* Parameters and logging (param.c). */
typedef enum { CORE_LOG_NONE = 0, CORE_LOG_WARN = 1, CORE_LOG_INFO = 2 } coreLogLevel;
coreLogLevel coreLogLevelGet(void);
/* Reads DMACCL_DEBUG again at the next coreLogLevelGet (tests: a forked
 * rank that sets it). */
void coreLogLevelReload(void);
void coreLog(coreLogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define CORE_INFO(...)                                                                             \
  do {                                                                                             \
    if (coreLogLevelGet() >= CORE_LOG_INFO) coreLog(CORE_LOG_INFO, __VA_ARGS__);                   \
  } while (0)
const char *coreParamString(const char *name); /* getenv with the table's default */
size_t coreStageBytesParam(void);              /* DMACCL_STAGE_BYTES */
size_t coreScratchBytesParam(void);            /* DMACCL_SCRATCH_BYTES */
int coreReduceCtasParam(void);                 /* DMACCL_REDUCE_CTAS */
/* A parameter in seconds: finite, above 0 (or 0 when zeroMeansOff), below
 * 1e9; anything else warns and gives fallback. */
double coreParamSeconds(const char *name, double fallback, int zeroMeansOff);
int coreKernelWaitParam(int ctaPolicy); /* DMACCL_KERNEL_WAIT: 0, 1 (graphs) or 2 (and eager); 0
                                        under CTA policy zero unless set */
int coreBatchOverlapParam(void);        /* DMACCL_BATCH_OVERLAP: 0 or 1 */
int coreLanePriorityHigh(void);         /* DMACCL_LANE_PRIORITY is high */
void coreParamPrintAll(void *file);     /* FILE*: name, value, doc of every parameter */

/* Communicator construction shared by InitAll (comm.c) and InitRank (comm_rank.c). */
/* Group rule, config, executor and selection table: the checks both inits share. */
dmacclResult_t coreInitPrelude(const dmacclConfig_t *config, const char *call, int nranks,
                               dmacclExecutor_t *executor, planTable *table);
/* The selection table for nranks: built-in defaults, DMACCL_TUNE_FILE (a file
 * that cannot be read or parsed is skipped with a warning, said in note),
 * DMACCL_ALGO, config->algorithm. Fails only for the last two. */
dmacclResult_t coreBuildTable(const dmacclConfig_t *config, planTable *t, const char *call,
                              int nranks, char *note, size_t notelen);
dmacclComm_t coreNewComm(coreClique *c, int rank, int device, dmacclExecutor_t executor);
/* The set of one process behind dmacclCommInitAll, with a given executor and
 * selection table (p2p.c makes its channels with it: `channel` 1, a set that
 * only runs Broadcasts, so no rank gets a scratch buffer). */
dmacclResult_t coreMakeSet(dmacclComm_t *comms, int ndev, const int *devlist,
                           dmacclExecutor_t executor, const planTable *table, int channel,
                           const char *call);
/* coreInitPrelude without the group rule (dmacclCommInitRank inside a group). */
dmacclResult_t coreInitCheck(const dmacclConfig_t *config, const char *call, int nranks,
                             dmacclExecutor_t *executor, planTable *table);
/* dmacclCommInitRank inside a group: recorded by the call (coreGroupRecordInit,
 * which takes it), made at the outermost dmacclGroupEnd by coreRunInits, all
 * of the thread's at once (one thread each: a thread may make several ranks
 * of one set), *out written only if every one succeeded (comm_rank.c). */
typedef struct coreInitCall coreInitCall;
dmacclResult_t coreRunInits(coreInitCall **calls, int n); /* frees calls[] and the list */
void coreFreeInit(coreInitCall *call);
/* dmacclCommInitRank's body: device -1 is the calling thread's current one;
 * `channel` as for coreMakeSet. */
dmacclResult_t coreInitRankWith(dmacclComm_t *out, int nranks, const dmacclUniqueId *id, int rank,
                                dmacclExecutor_t executor, const planTable *table, int device,
                                int channel, const char *call);
/* Destroy (abort 0) or abort a communicator that has left the registry (comm.c). */
void coreTeardown(dmacclComm_t comm, int abort);

/* Send/Recv channels of a communicator (p2p.c). */
/* Waits for the channels' work; returns their first error (sentence on comm). */
dmacclResult_t coreP2pSync(dmacclComm_t comm, const char *call);
/* Waits for the work comm's rank posted so far, its own and its channels',
 * whatever its outcome: an error stays for the next synchronize. */
void coreDrainRank(dmacclComm_t comm);
/* Their pending asynchronous error, if any (not cleared). */
dmacclResult_t coreP2pAsyncError(dmacclComm_t comm);
/* Destroys or aborts them (before comm itself). */
void coreP2pTeardown(dmacclComm_t comm, int abort);
/* Group order of a call: 0 for a collective, else 1 + its channel's key (the
 * pair of ranks, then the direction), so that every rank makes the channels
 * and posts a group's Send/Recv calls in one order (docs/architecture.md);
 * a self op last, beside its Send/Recv calls rather than before them. */
uint64_t coreP2pOrderKey(const coreOp *op);
/* Makes both channels between comm's rank and peer if they do not exist
 * (not under capture; between processes a rendezvous with peer). */
dmacclResult_t coreP2pMake(dmacclComm_t comm, int peer, const char *call);
/* Makes op (a Send/Recv checked on its parent) an operation of its channel,
 * making the channel if needed; on success the channel's end is entered
 * (coreEnter) and the parent left. */
dmacclResult_t coreP2pBind(coreOp *op);
/* A Send (send 1) or Recv on comm (the parent), not yet checked (comm is
 * not touched); no stream. */
coreOp coreP2pOp(int send, void *buf, size_t count, dmacclDataType_t datatype, int peer,
                 dmacclComm_t comm);
/* Checks it on the parent (entered): the peer, then as a collective
 * (a Broadcast whose root is the sender). The peer may be this rank itself
 * only where op->selfP2p is set (a call inside a group). */
dmacclResult_t coreP2pCheck(coreOp *op, const char *call);
/* The group's Send/Recv calls to this rank itself (selfP2p; ops[0..*n)),
 * matched per communicator in call order, the k-th Send with the k-th Recv,
 * as NCCL matches them: each pair becomes one self op in the Recv's place
 * (the Send's buffer copied into the Recv's on the Recv's stream) and the
 * Send is removed; an empty or in-place pair becomes nothing. A call left
 * without its match, or a pair whose counts, types or streams differ,
 * fails the whole group (why in err, *n untouched). Reads no communicator
 * (each call's peer is its rank). */
dmacclResult_t coreP2pPairSelf(coreOp *ops, int *n, char *err, size_t errLen);
/* AlltoAllv as Send/Recv pairs (pairs.c). Whether op (checked) runs so: the
 * table's choice at every size, and outside a capture or once the channels
 * exist (an earlier uncaptured one made them; every rank counts alike). */
int coreUsesPairs(const coreOp *op);
/* An uncaptured AlltoAllv that does not run as pairs, where captured ones
 * would (the table's choice for graphs): makes the channels with every peer
 * (peers in rank order: between processes each pair's rendezvous comes in
 * one order on every rank), so that later captured ones can; every rank
 * does so at the same call. Nothing otherwise. op checked, comm entered. */
dmacclResult_t corePairsPrepare(coreOp *op);
/* Issues it outside a group: recorded (op->pairs) in a group of its own,
 * whose end issues its pieces. op's comm entered; op->vec valid during the
 * call. */
dmacclResult_t corePostPairs(coreOp *op);
/* Its pieces (at most 2 * nranks - 1): a Send and a Recv with every peer,
 * empty blocks too, and the rank's own block as a self op (none if empty);
 * returns how many. The group's end marks the channels ready
 * (comm->pairsReady) once an uncaptured call's pieces have posted. */
int corePairsPieces(const coreOp *op, coreOp *pieces);
/* Posts a self op (corePostNoAttach). */
dmacclResult_t corePostSelf(coreOp *op);
/* A piece of a checked call (pairs.c's Send/Recv): coreP2pCheck's results
 * without its queries (the call's checks covered its stream and buffers). */
void coreP2pPiece(coreOp *piece, const coreOp *whole);
/* Outside a group: binds op (checked, its parent entered) and posts it on
 * its channel; the parent is left on return, and errors are on it. */
dmacclResult_t coreP2pPost(coreOp *op, const char *call);
void coreFreeComm(dmacclComm_t comm);
void coreFreeClique(coreClique *c);

/* Live handles (handles.c). coreCheckComm: comm is a live communicator;
 * coreEnter also counts the call as a user until coreLeave, and destroy
 * waits for the users (coreWaitUsers) after unregistering the comm. */
dmacclResult_t coreCheckComm(dmacclComm_t comm, const char *call);
dmacclResult_t coreEnter(dmacclComm_t comm, const char *call);
void coreLeave(dmacclComm_t comm);
void coreWaitUsers(dmacclComm_t comm);
dmacclResult_t coreRegisterComm(dmacclComm_t comm);
int coreUnregisterComm(dmacclComm_t comm); /* -1: it was not live */
int coreCommIsLive(dmacclComm_t comm);
dmacclResult_t coreRegisterRequest(const void *request);
int coreRequestIsLive(const void *request, int unregister);

/* The V forms' k caller arrays packed as planArgs.vec reads them, into
 * packed (PLAN_VEC_ARRAYS * nranks entries); op->vec points there. Fails,
 * naming it, for a NULL array (coll.c). */
dmacclResult_t corePackArrays(coreOp *op, const size_t *const *arrays, const char *const *names,
                              int k, size_t *packed);

/* Argument checks (argcheck.c). */
/* op->comm must be live and entered (coreEnter) by the caller. */
dmacclResult_t coreCheckCollArgs(coreOp *op, const char *call);
/* dmacclStreamWaitArrival's arguments (outside a group; the nranks words
 * where the executor reaches them; rank in range; the stream). */
dmacclResult_t coreCheckWaitArgs(dmacclComm_t comm, const uint32_t *arrived, int rank,
                                 cudaStream_t stream, const char *call);

/* Bytes of one graph staging slot: as an eager one (8 MB by default; it was
 * half until twoshot's AllReduce of 4-8 MB on 4 ranks fell back to pull1 in
 * graphs at 2.2x NCCL's time, docs/results/x4-h200/). */
static inline size_t coreGraphStageBytes(const coreClique *c) {
  return c->stageBytes;
}
/* Bytes of one line slot (stagell, eager and graph alike), set when the
 * set is made (coreSetLineBytes; c->nranks set), a multiple of 16: n - 1
 * shares, one per peer (planLineShareBytes; a rank never writes its own
 * slot, so it has no share there: the slots were n shares until
 * 2026-11-28, 16 MB more per rank on 2 ranks). A share holds 8 data bytes in
 * 16. On 2 ranks a share is half a staging slot (4 MB by default: an
 * AllReduce of up to 2 MB, a ReduceScatter or AllGather of up to 4 MB):
 * with a quarter of that the 2 MB AllGathers of a sequence-parallel decode
 * step at batch 256 ran push1 in graphs (2x H100, Llama-3-8B-shaped: the
 * step took 1.09x NCCL's time, 0.97x with lines). On 3 ranks or more a
 * quarter of a staging slot divided by n, as the table's ranges there were
 * measured (larger shares would turn, e.g., a 4-rank AllReduce of 512 KB-1
 * MB into lines: twice the bytes on every link, not measured). A Send/Recv
 * channel (2 ranks) has a 2-rank set's: its operations are 2-rank
 * Broadcasts, which take stagell at the small sizes as a 2-rank
 * communicator's do. */
static inline size_t coreLineBytes(const coreClique *c) {
  return c->lineBytes;
}
static inline void coreSetLineBytes(coreClique *c) {
  c->lineBytes = planLineSlotBytes(c->nranks, c->stageBytes);
}
/* The algorithm of a collective (launch.c): the table's choice for its size,
 * except that a staged algorithm falls back to the collective's direct one
 * when the collective does not fit a staging slot (a graph slot under
 * capture). The same on every rank given the same table, stageBytes and
 * arguments. */
planAlgo coreChooseAlgo(const coreClique *c, const planArgs *args, int capture,
                        const planRange **why);
/* A staged operation's number, whose parity picks its slot (staged.c):
 * eager, its place among the set's eager staged operations; captured, its
 * place from 1 among the staged operations of its capture (counted anew
 * whenever the capture changes). In sequence order. */
uint64_t coreStageNumber(coreClique *c, const coreOp *op);
/* Sets the fields of a's planner arguments that depend on capture or on
 * the set (the staged ones for op numbered idx, kernelSignals, listOrder). */
void coreStageArgs(planArgs *a, const coreOp *op, uint64_t idx);
/* A new set's id: unique in the process, never 0. */
unsigned long coreNewCliqueId(void);
/* Multi-process: the algorithm of op from this rank's arguments (no lock),
 * then, in sequencing order, its stage index (op->algo set). */
planAlgo coreOwnAlgo(const coreClique *c, const coreOp *op, size_t *size);
void coreSequenceStage(coreClique *c, coreOp *op, size_t size);
/* Breaks the set: waits give up with code (progress.c). */
void coreBreak(coreClique *c, dmacclResult_t code, const char *why);

/* Posting and launching (launch.c: one process; launch_mp.c: ranks as
 * processes). corePost dispatches and returns once the operation is
 * launched; coreWaitLaunched waits until seq is launched and returns the
 * comm's stop reason (abort, broken) if it never will be. */
dmacclResult_t corePost(coreOp *op);         /* post, then coreAttach */
dmacclResult_t corePostNoAttach(coreOp *op); /* groups attach after posting every call */
dmacclResult_t coreAttach(coreOp *op);       /* wait for the launch (one process) */
dmacclResult_t coreWaitLaunched(dmacclComm_t comm, uint64_t seq);
dmacclResult_t coreMpPost(coreOp *op);
/* Exports op's buffers for peers (sendRef, recvRef) unless already done. */
dmacclResult_t coreMpExportOp(coreOp *op, const char *call);
/* Compares launched staged operations with the peers' calls once they are
 * published; lock held. Returns how many it compared. */
int coreMpCheckStaged(coreClique *c);
dmacclResult_t coreMpWaitLaunched(dmacclComm_t comm, uint64_t seq);
/* Waits until operations up to seq are compared with the peers' calls. */
dmacclResult_t coreMpWaitChecked(dmacclComm_t comm, uint64_t seq);

/* Progress thread of a multi-process set (progress.c). */
dmacclResult_t coreProgressStart(coreClique *c);
void coreProgressStop(coreClique *c);
void coreProgressWake(coreClique *c);
double coreNowSec(void);

/* Registration: where a buffer lives, as peers find it (mem.c). */
coreMem *coreMemFind(dmacclComm_t comm, const void *ptr, size_t bytes);
/* A buffer that starts inside a dmacclMemAlloc allocation must end inside it
 * (its peers' parts lie right after it): InvalidArgument otherwise. */
dmacclResult_t coreMemCheckRange(dmacclComm_t comm, const void *ptr, size_t bytes, const char *call,
                                 const char *arg);
dmacclResult_t coreExportBuf(dmacclComm_t comm, const void *ptr, size_t bytes, coreBufRef *ref,
                             const char *call, const char *arg);
dmacclResult_t coreImportBuf(dmacclComm_t comm, int peer, const coreBufRef *ref, void **addr);
void coreMemReleaseAll(dmacclComm_t comm);

/* Groups (group.c). */
int coreGroupActive(void);
/* A public call that records into the open group failed with rc (its
 * sentence already set): the outermost dmacclGroupEnd issues nothing and
 * returns the first such failure. Nothing outside a group. */
void coreGroupFail(dmacclResult_t rc);
dmacclResult_t coreGroupRecordInit(coreInitCall *call); /* takes call, also on failure */
/* This thread is posting its group's calls (the outermost dmacclGroupEnd):
 * an executor may hold their launches until execOps.flush. */
int coreGroupPosting(void);
/* Before the posting thread waits for a peer or the device (a peer's call,
 * a board slot, a channel's making): what the executor holds is issued, so
 * that nothing a peer may wait for stays held while this thread waits. */
void coreGroupFlush(dmacclComm_t comm);
/* This thread's open group holds calls on comm. */
int coreGroupHolds(dmacclComm_t comm);
/* Records op; the group keeps its own copy of op->vec until it ends. */
dmacclResult_t coreGroupRecord(const coreOp *op);

/* A heap copy of op's vec for a recorded op (group, persistent request). */
size_t *coreVecDup(const coreOp *op);
dmacclResult_t coreCheckSoloUse(dmacclComm_t comm, const char *call);

#endif
