/*
 * Executors run schedules. Each is one row of a table of operations, chosen
 * per communicator (dmacclExecutor_t), as libfabric's hmem backends.
 */
#ifndef DMACCL_EXEC_H_
#define DMACCL_EXEC_H_

#include "../core/core.h"

/* Every rank's buffers of the operation being launched. */
typedef struct {
  const void *const *send; /* [nranks] */
  void *const *recv;       /* [nranks] */
} execBuffers;

/* The address a schedule location names. */
static inline void *execLocate(const execBuffers *b, planLoc l) {
  const char *base =
      l.buf == PLAN_BUF_SEND ? (const char *)b->send[l.rank] : (const char *)b->recv[l.rank];
  return (void *)(base + l.off);
}

typedef struct execOps {
  const char *name;
  /* Creates the executor state of every communicator of a new set (one
   * process). On failure everything created is released. */
  dmacclResult_t (*init)(dmacclComm_t *comms, int n, const int *devlist);
  /* Releases a communicator's state; its operations have completed. */
  void (*fini)(dmacclComm_t comm);
  /* Checks that [ptr, ptr+bytes) is memory this executor can use for comm;
   * argName names the argument in the error. */
  dmacclResult_t (*checkBuffer)(dmacclComm_t comm, const void *ptr, size_t bytes, const char *call,
                                const char *argName);
  dmacclResult_t (*checkStream)(dmacclComm_t comm, cudaStream_t stream, const char *call);
  /* On the caller's thread, in call order, before the peers may have called:
   * ties the operation to the caller's stream. */
  dmacclResult_t (*post)(dmacclComm_t comm, const coreOp *op);
  /* Once every rank has posted op->seq: queues this rank's schedule.
   * Called under the set's lock, in sequence order. */
  dmacclResult_t (*launch)(dmacclComm_t comm, const coreOp *op, const planSchedule *s,
                           const execBuffers *bufs);
  /* Waits for every launched operation of comm to complete. */
  dmacclResult_t (*sync)(dmacclComm_t comm, uint64_t seq);
} execOps;

extern const execOps execHostOps;
extern const execOps execCudaOps;

#endif
