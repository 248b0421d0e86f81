/* State shared by the CUDA executor's files (cuda.c, cuda_mem.c). */
#ifndef DMACCL_CUDA_INTERNAL_H_
#define DMACCL_CUDA_INTERNAL_H_

#include "exec.h"
#include "cuda_driver.h"

#define MEMOP_CHUNK 128

/* nranks parts of one VMM allocation each, mapped at base + r*stride
 * (the executor's counterpart of coreShm). */
typedef struct {
  CUdeviceptr base;
  size_t part, stride;
  int nranks;
  CUmemGenericAllocationHandle *handles; /* [nranks] */
} cudaVmm;

typedef struct ipcExport {
  struct ipcExport *next;
  unsigned long long bufferId;
  CUdeviceptr base;
  size_t size;
  int registered; /* dmacclCommRegister count */
  cudaIpcMemHandle_t handle;
} ipcExport;

typedef struct ipcImport {
  struct ipcImport *next;
  int peer;
  unsigned long long bufferId;
  uint64_t base, size; /* in the owner's address space */
  char *mapped;
} ipcImport;

typedef enum { SIGNAL_MEMOP = 0, SIGNAL_COPY = 1 } signalPath;

/*
 * Flag words of a rank, in its GPU's memory (one array, n = nranks, P =
 * PLAN_NUM_PHASES, L = lanes):
 *   [0, Pn)             eager slots [phase][peer]: epoch values, waits >= epoch
 *   [Pn, 2Pn)           graph slots [phase][peer]: 1 = signalled, reset to 0 by the waiter
 *                       (DATA: of graph staging slot 0)
 *   [2Pn, 2Pn+n)        graph DATA slots of graph staging slot 1, [peer]
 *   [Q, Q+L)            copy-signal sources, one per lane (SIGNAL_COPY); Q = (2P+1)n
 *   Q+L                 the constant 1 (graph signals by copy)
 *   [Q+1+L, Q+1+L+n)    probe words, one per peer (signal-path probe at init)
 *   Q+1+L+n             the reduction kernel's block count when it waits and
 *                       resets graph flags itself (execReduceWait), 0 between
 *                       kernels
 *   Q+2+L+n             the reduction kernel's count of blocks done storing
 *                       (stagesm: execReduceWait.moveCount), 0 between kernels
 *   [Q+3+L+n, +G)       the reduction kernel's count of blocks done with piece
 *                       k (execReduceWait.pieceCounts), 0 between kernels;
 *                       G = PLAN_PIECE_GROUPS
 * Each graph staging slot has its own DATA words: a graph's staged operations
 * alternate between the two slots without an ENTRY handshake (staged.c), and
 * only the slot's own previous user is known to have reset its word.
 */
#define FLAG_P ((size_t)PLAN_NUM_PHASES)
#define FLAG_EAGER(n, ph, peer) ((size_t)(ph) * (n) + (peer))
#define FLAG_GRAPH(n, ph, peer) (FLAG_P * (n) + (size_t)(ph) * (n) + (peer))
#define FLAG_GDATA1(n, peer) (2 * FLAG_P * (n) + (peer))
#define FLAG_Q(n) ((2 * FLAG_P + 1) * (n))
#define FLAG_SRC(n, lane) (FLAG_Q(n) + (lane))
#define FLAG_ONE(n, L) (FLAG_Q(n) + (L))
#define FLAG_PROBE(n, L, peer) (FLAG_Q(n) + 1 + (L) + (peer))
#define FLAG_KCOUNT(n, L) (FLAG_Q(n) + 1 + (L) + (n))
#define FLAG_KMOVE(n, L) (FLAG_Q(n) + 2 + (L) + (n))
#define FLAG_KPIECE(n, L) (FLAG_Q(n) + 3 + (L) + (n))
#define FLAG_WORDS(n, L) (FLAG_Q(n) + (n) + 3 + (L) + PLAN_PIECE_GROUPS)
/* The graph word of (phase, peer) for an operation on graph staging slot
 * `gslot` (0 or 1; only DATA differs). */
static inline size_t flagGraphWord(int n, int ph, int peer, int gslot) {
  return ph == PLAN_PHASE_DATA && gslot == 1 ? FLAG_GDATA1(n, peer) : FLAG_GRAPH(n, ph, peer);
}

typedef struct {
  int device;
  int nlanes;
  cudaStream_t *lanes;
  int issuedTo; /* steps of the operation being launched issued so far (cudaLaunch) */
  /* An operation launched as part of a group's held kernel (cuda.c, "Held
   * launches"): its sequence number until its last round is issued (0:
   * none), and whether the kernel and its tail are still held. */
  uint64_t heldSeq;
  int heldPending;
  cudaStream_t aside;  /* abort and watchdog reads (a hardware queue it shares may be blocked) */
  uint32_t *asideHost; /* pinned: the watchdog's read of the eager slots */
  cudaEvent_t fork[CORE_BOARD_DEPTH]; /* legacy default stream: lane 0 starts after it */
  cudaEvent_t tail[CORE_BOARD_DEPTH]; /* recorded on lane 0 at the end of each eager operation */
  /* ... and of each captured one: an event recorded in a capture can only
   * be waited on inside it, so it must not take the place of an eager
   * operation's tail that Synchronize or the next launch still reads. */
  cudaEvent_t capTail[CORE_BOARD_DEPTH];
  /* One rank (cudaOneRank): the last eager copy's end and its stream. */
  cudaEvent_t oneTail;
  cudaStream_t oneStream;
  int oneSeen;
  int captured[CORE_BOARD_DEPTH]; /* that launch went into a graph */
  cudaEvent_t *join;
  cudaEvent_t launched; /* a REDUCE's launch, for the JOIN marked launched after it (plan.h) */
  int launchedAt;       /* ... that REDUCE's step in the operation being launched, or -1 */
  /* In a graph, push1's PUSH words to reset after step pushResetAt of the
   * operation being launched (plan.h planPushResetAt), or -1: pieces x the
   * ranks in the mask, from pushResetWords at a stride of nranks */
  int pushResetAt, pushResetPieces;
  uint32_t *pushResetWords;
  unsigned long long pushResetMask[4];
  uint32_t *flags;      /* own flag words */
  uint32_t **peerFlags; /* every rank's flag words as this rank reaches them */
  cudaEvent_t *sigEv;   /* [phase][peer]: signals to a peer of this process on this GPU */
  signalPath signal;
  cudaVmm flagVmm; /* multi-process: the flag words of every rank */
  /* Staging area (staged algorithms): the staging and line slots of eager
   * and captured operations (exec.h execAreaBytes, execStageOffset,
   * execLineOffset). */
  char *stage;             /* own (single process: cudaMalloc) */
  char **peerStage;        /* every rank's staging area as this rank reaches it */
  size_t stageStride;      /* peerStage[r] = peerStage[0] + r*stride (multi-process), else 0 */
  cudaVmm stageVmm;        /* multi-process: every rank's staging area */
  void **stageSlot;        /* [nranks] scratch: this operation's slot of every rank */
  void **lineSlot;         /* [nranks] scratch: ... and line slot (stagell) */
  void **scratchOf;        /* [nranks] every rank's scratch buffer, in its area (exec.h) */
  int reduceCtas;          /* DMACCL_REDUCE_CTAS */
  int smCount;             /* the GPU's SMs: the most blocks a stagesm kernel takes */
  uint64_t lastSeq;        /* the last eager operation launched */
  cudaStream_t lastStream; /* ... its lane 0 (its tail event orders the next on another) */
  /* The last captured operation, its lane 0 and its capture: a captured
   * operation on another stream of the same capture waits for its tail, so
   * a graph runs a communicator's operations in the order they were
   * captured (the graph staging slots rely on it: staged.c). */
  uint64_t lastCapSeq;
  cudaStream_t lastCapStream;
  unsigned long long lastCapId;
  unsigned batchFlags; /* cudaMemcpyAttributes.flags of batch copies (DMACCL_BATCH_OVERLAP) */
  /* Scratch for one batch command, reused under the set's lock. */
  CUstreamBatchMemOpParams memops[MEMOP_CHUNK];
  void **bdst;
  const void **bsrc;
  size_t *bsize;
  /* Multi-process buffer caches (cuda_mem.c). */
  pthread_mutex_t ipcLock;
  ipcExport *exports;
  ipcImport *imports;
  ipcImport *stale; /* mappings of freed peer allocations, closed at the next sync */
} cudaState;

static inline cudaState *cudaStateOf(dmacclComm_t c) {
  return (cudaState *)c->execState;
}

/* Errors (cuda.c). The _TRY macros set rc and jump to `out` on failure. */
dmacclResult_t cudaFail(dmacclComm_t comm, const char *what, cudaError_t e);
dmacclResult_t cuFail(dmacclComm_t comm, const char *what, CUresult r);
#define CUDA_TRY(comm, call)                                                                       \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      rc = cudaFail(comm, #call, e_);                                                              \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)
#define CU_TRY(comm, call)                                                                         \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      rc = cuFail(comm, #call, r_);                                                                \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)
int cudaEnterDevice(int dev);
void cudaLeaveDevice(int prev, int dev);

/* VMM strided allocations (cuda_mem.c): collective over the bootstrap. */
dmacclResult_t cudaVmmCreate(dmacclComm_t comm, size_t part, cudaVmm *v, const char *call);
void cudaVmmRelease(cudaVmm *v);
void cudaIpcRelease(dmacclComm_t comm);
/* Closes stale mappings; only where every posted operation has completed. */
void cudaIpcCloseStale(dmacclComm_t comm);

dmacclResult_t cudaMemAllocImpl(dmacclComm_t comm, size_t size, coreMem *m);
void cudaMemFreeImpl(dmacclComm_t comm, coreMem *m);
dmacclResult_t cudaExportBuf(dmacclComm_t comm, const void *ptr, size_t bytes, coreBufRef *ref,
                             const char *call, const char *arg);
dmacclResult_t cudaImportBuf(dmacclComm_t comm, int peer, const coreBufRef *ref, void **addr);
dmacclResult_t cudaRegisterBuf(dmacclComm_t comm, void *ptr, size_t size, void **handle);
dmacclResult_t cudaDeregisterBuf(dmacclComm_t comm, void *handle);

#endif
