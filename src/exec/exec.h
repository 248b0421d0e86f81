/*
 * Executors run schedules. Each is one row of a table of operations, chosen
 * per communicator (dmacclExecutor_t), as libfabric's hmem backends.
 */
#ifndef DMACCL_EXEC_H_
#define DMACCL_EXEC_H_

#include "../core/core.h"

/* Every rank's buffers of the operation being launched. The core fills
 * send and recv (a staged operation knows only its own); the executor adds
 * the staging slots. */
typedef struct {
  const void *const *send; /* [nranks] */
  void *const *recv;       /* [nranks] */
  void *const *stage;      /* [nranks]: this operation's staging slot of every rank */
  void *const *scratch;    /* [nranks]: every rank's scratch buffer (reductions; push1 writes
                              the peers': reduce.c), NULL where the set has none */
  void *const *lines;      /* [nranks]: this operation's line slot of every rank (stagell) */
  uint32_t *arrived;       /* this rank's arrival words (NOTIFY steps), or NULL */
  uint32_t arrivedValue;   /* ... and the value NOTIFY stores */
  const void *scalar;      /* a premultiplied sum's (coreOp premulPtr), or NULL */
  uint64_t scalarBits;     /* ... and the immediate's bytes (coreOp premulBits) */
} execBuffers;

/* The address a schedule location names. */
static inline void *execLocate(const execBuffers *b, planLoc l) {
  const char *base = l.buf == PLAN_BUF_SEND    ? (const char *)b->send[l.rank]
                     : l.buf == PLAN_BUF_RECV  ? (const char *)b->recv[l.rank]
                     : l.buf == PLAN_BUF_STAGE ? (const char *)b->stage[l.rank]
                     : l.buf == PLAN_BUF_LINES ? (const char *)b->lines[l.rank]
                                               : (const char *)b->scratch[l.rank];
  return l.off ? (void *)(base + l.off) : (void *)base; /* a buffer a rank may pass as NULL */
}

/* One rank's part of an operation being launched: its schedule's arguments
 * and every rank's buffers as this rank reaches them. */
typedef struct {
  dmacclComm_t comm;
  const coreOp *op;
  execBuffers bufs;
  planArgs args;
  int handshakesOnly; /* a peer's buffers could not be reached: drop the copies */
  int empty;          /* ranks disagree or the launch was refused: an empty schedule */
} coreLaunch;
/* The one launch body (launch.c): builds each rank's schedule with algo and
 * issues them round by round across the k ranks. Lock held. */
void coreLaunchRanks(coreLaunch *ls, int k, planAlgo algo);

/* Every rank's staging area: CORE_STAGE_SLOTS eager slots of stageBytes and
 * as many eager line slots of coreLineBytes, then (CUDA, withGraph) the
 * CORE_GRAPH_STAGE_SLOTS slots of captured operations and their line
 * slots, then, at a 4 KiB boundary, the rank's scratch buffer of the
 * reductions (clique->scratchBytes; 0 in a channel's set): in the area so
 * that peers reach it as they reach the slots (AllReduce's push1 writes its
 * peers' scratch: reduce.c), and so that a reduction captured into a graph
 * never allocates. The line slots must be 0 when the area is made (plan.h
 * LINES). */
static inline size_t execEagerAreaBytes(const coreClique *c) {
  return (size_t)CORE_STAGE_SLOTS * (c->stageBytes + coreLineBytes(c));
}
/* The slots alone, eager and (withGraph) captured. */
static inline size_t execSlotsBytes(const coreClique *c, int withGraph) {
  return execEagerAreaBytes(c) +
         (withGraph ? (size_t)CORE_GRAPH_STAGE_SLOTS * (coreGraphStageBytes(c) + coreLineBytes(c))
                    : 0);
}
/* Bytes of the scratch buffer (none on one rank) and its offset in the area. */
static inline size_t execScratchBytes(const coreClique *c) {
  return c->nranks > 1 ? c->scratchBytes : 0;
}
static inline size_t execScratchOffset(const coreClique *c, int withGraph) {
  return execScratchBytes(c) ? (execSlotsBytes(c, withGraph) + 4095) / 4096 * 4096
                             : execSlotsBytes(c, withGraph);
}
static inline size_t execAreaBytes(const coreClique *c, int withGraph) {
  return execScratchOffset(c, withGraph) + execScratchBytes(c);
}

/* Byte offset of a staged schedule's slot in every rank's staging area. */
static inline size_t execStageOffset(dmacclComm_t comm, const planSchedule *s, int graph) {
  if (!planIsStaged(s->algo) || s->stageSlots < 1) return 0;
  size_t slot = (size_t)(s->stageIndex % (unsigned long long)s->stageSlots);
  if (!graph) return slot * comm->clique->stageBytes;
  return execEagerAreaBytes(comm->clique) + slot * coreGraphStageBytes(comm->clique);
}

/* Byte offset of line slot `slot` (eager, or graph) in the staging area. */
static inline size_t execLineSlotOffset(const coreClique *c, int graph, size_t slot) {
  if (!graph) return (size_t)CORE_STAGE_SLOTS * c->stageBytes + slot * coreLineBytes(c);
  return execEagerAreaBytes(c) + (size_t)CORE_GRAPH_STAGE_SLOTS * coreGraphStageBytes(c) +
         slot * coreLineBytes(c);
}

/* ... and of a staged schedule's line slot. */
static inline size_t execLineOffset(dmacclComm_t comm, const planSchedule *s, int graph) {
  if (!planIsStaged(s->algo) || s->stageSlots < 1) return 0;
  size_t slot = (size_t)(s->stageIndex % (unsigned long long)s->stageSlots);
  return execLineSlotOffset(comm->clique, graph, slot);
}

typedef struct execOps {
  const char *name;
  /* 1: a call returns only once its operation is launched, because work the
   * caller queues on its stream afterwards must follow it (CUDA). 0: calls
   * of a one-process set return at once; completion is observed with
   * dmacclCommSynchronize (host executor). */
  int launchBeforeReturn;
  /* Creates the executor state of every communicator of a new set (one
   * process). On failure everything created is released. */
  dmacclResult_t (*init)(dmacclComm_t *comms, int n, const int *devlist);
  /* Releases a communicator's state; its operations have completed. */
  void (*fini)(dmacclComm_t comm);
  /* Checks that [ptr, ptr+bytes) is memory this executor can use for comm;
   * argName names the argument in the error. */
  dmacclResult_t (*checkBuffer)(dmacclComm_t comm, const void *ptr, size_t bytes, const char *call,
                                const char *argName);
  /* Also says whether stream is being captured into a CUDA graph, and
   * into which capture (an id, not 0, the same for every stream of it). */
  dmacclResult_t (*checkStream)(dmacclComm_t comm, cudaStream_t stream, const char *call,
                                int *capturing, unsigned long long *captureId);
  /* One process, before a launch: may refuse it (e.g. ranks that share a
   * GPU but are not captured into one graph, or a call captured on some
   * ranks only), saying why. NULL: no check. */
  dmacclResult_t (*checkLaunch)(const dmacclComm_t *comms, const coreOp *ops, int n, char *why,
                                size_t whylen);
  /* On the caller's thread, at the call and once the call's operation is
   * launched (which may happen on another thread): ties a thread-relative
   * stream (cudaStreamPerThread) to the operation. NULL: nothing to do. */
  dmacclResult_t (*post)(dmacclComm_t comm, const coreOp *op);
  dmacclResult_t (*attach)(dmacclComm_t comm, const coreOp *op);
  /* Queues steps [from, to) of this rank's schedule of op, once every rank
   * has posted it (from == 0 also ties the operation to the caller's
   * stream, to == s->nsteps joins it back; an empty schedule does both in
   * one call). The core calls it round by round, in sequence order, under
   * the set's lock, and nothing is queued on the caller's stream before
   * the work it waits for. While this thread posts a group
   * (coreGroupPosting), what it would queue for an operation of that group
   * may be held until flush or a later launch issues it (under whatever
   * lock that caller holds). */
  dmacclResult_t (*launch)(dmacclComm_t comm, const coreOp *op, const planSchedule *s,
                           const execBuffers *bufs, int from, int to);
  /* Issues what launch held back on this thread (coreGroupPosting): before
   * the thread waits for anything (coreGroupFlush), and at the end of the
   * group's posts (end = 1), which also returns the first launch error since
   * the last end (set on the operations' communicators too). CUDA: a
   * group's operations that are each one kernel of lines go out as one
   * kernel per stream (cuda.c, "Held launches"). NULL: launch holds
   * nothing. */
  dmacclResult_t (*flush)(int end);
  /* Waits for every launched operation of comm to complete; gives up with
   * the async error if one is recorded meanwhile. */
  dmacclResult_t (*sync)(dmacclComm_t comm, uint64_t seq);
  /* A communicator of one rank, on the caller's thread at the call (or at
   * the group's end): op is the copy of bytes from src to dst (distinct,
   * bytes > 0; 0 when there is nothing to copy and only op's arrival word
   * to store), then that store where op has arrival words, issued on op's
   * stream in the order of the rank's calls; no sequence number, board or
   * schedule (planOneRankBlock). sync waits for it too. */
  dmacclResult_t (*oneRank)(dmacclComm_t comm, const coreOp *op, const void *src, void *dst,
                            size_t bytes);
  /* (A premultiplied sum, op->redop BASE_PREMULSUM: dst = src times its
   * scalar, bytes of op's type, src == dst in place.) */
  /* dmacclStreamWaitArrival, arguments checked: work on stream waits until
   * *word == value (CUDA), or the caller's thread does (host: gives up with
   * an error if the set breaks or is aborted, an operation fails, or every
   * operation the rank had posted completes without storing the value). */
  dmacclResult_t (*waitWord)(dmacclComm_t comm, const uint32_t *word, uint32_t value,
                             cudaStream_t stream);

  /* --- Ranks as processes --- */
  /* The device (in: -1 for the calling thread's current one, else that
   * device; out: -1 for none) and a host-wide name of it (PCI bus id) that
   * rank 0 uses to find two ranks on one device. */
  dmacclResult_t (*identify)(int *device, char *name, size_t namelen);
  /* Creates the state of comm, the local rank of a multi-process set, whose
   * bootstrap and board are up; peerNames[r] is rank r's identify name. */
  dmacclResult_t (*initRank)(dmacclComm_t comm, char (*peerNames)[32]);
  /* dmacclMemAlloc/Free (collective for multi-process sets; see dmaccl.h). */
  dmacclResult_t (*memAlloc)(dmacclComm_t comm, size_t size, coreMem *m);
  void (*memFree)(dmacclComm_t comm, coreMem *m);
  /* A buffer not from dmacclMemAlloc, as peers will find it; and a peer's
   * such buffer in this process (opened on first use, then cached). */
  dmacclResult_t (*exportBuf)(dmacclComm_t comm, const void *ptr, size_t bytes, coreBufRef *ref,
                              const char *call, const char *arg);
  dmacclResult_t (*importBuf)(dmacclComm_t comm, int peer, const coreBufRef *ref, void **addr);
  dmacclResult_t (*registerBuf)(dmacclComm_t comm, void *ptr, size_t size, void **handle);
  dmacclResult_t (*deregisterBuf)(dmacclComm_t comm, void *handle);
  /* Called first on a thread the library starts for a rank on `device` (the
   * progress thread; a thread making a communicator recorded in a group):
   * makes the device that thread's own, so that the executor's device
   * switches around its calls (cudaEnterDevice) are none there. A new
   * thread's device is 0: switching back to it after each event query made
   * a primary context on GPU 0 in the process of every rank on another GPU
   * (CUDA 12's cudaSetDevice initializes one). NULL: nothing. */
  void (*bindThread)(int device);
  /* Releases every wait comm has queued (dmacclCommAbort). */
  void (*abort)(dmacclComm_t comm);
  /* 1 when operation seq has completed on this rank. */
  int (*complete)(dmacclComm_t comm, uint64_t seq);
  /* Names, in why, the peer a stuck operation seq waits for; 0 if unknown. */
  int (*stuck)(dmacclComm_t comm, uint64_t seq, char *why, size_t whylen);
} execOps;

extern const execOps execHostOps;
extern const execOps execCudaOps;

#endif
