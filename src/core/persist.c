/*
 * Persistent collectives (as MPI's): dmacclAllGatherInit / dmacclAlltoAllInit
 * fix the buffers and the count once; dmacclStart issues the collective on a
 * stream as often as wanted; dmacclRequestFree releases the request.
 *
 * What a start saves against an eager call is what Init did once: the
 * argument checks (pointer attribute queries), and for multi-process sets
 * the export of both buffers (allocation lookups, IPC handles). A start
 * checks only its stream. The device commands are those of the eager call
 * of the same algorithm: a staged start goes straight onto the stream (no
 * peer rendezvous on the host), like an eager staged call.
 */
#include "../exec/exec.h"

#include <stdlib.h>
#include <string.h>

#define REQUEST_MAGIC 0x9e45u

struct dmacclRequest {
  unsigned magic;
  coreOp op; /* checked arguments, buffers exported (refsReady); stream set per start */
};

static dmacclResult_t requestInit(coreOp *op, const char *call, dmacclRequest_t *request) {
  dmacclResult_t rc = coreEnter(op->comm, call);
  if (rc != dmacclSuccess) return rc;
  struct dmacclRequest *r = NULL;
  op->stream = NULL; /* the stream comes with each start */
  if (!request) {
    rc = coreError(op->comm, dmacclInvalidArgument, "%s: request is NULL", call);
    goto out;
  }
  if ((rc = coreCheckCollArgs(op, call)) != dmacclSuccess) goto out;
  if (!(r = calloc(1, sizeof(*r)))) {
    rc = coreError(op->comm, dmacclSystemError, "%s: out of memory", call);
    goto out;
  }
  r->magic = REQUEST_MAGIC;
  r->op = *op;
  if (op->comm->clique->mp && (rc = coreMpExportOp(&r->op, call)) != dmacclSuccess) goto out;
  if ((rc = coreRegisterRequest(r)) != dmacclSuccess) goto out;
  *request = r;
  r = NULL;
out:
  free(r);
  coreLeave(op->comm);
  return rc;
}

dmacclResult_t dmacclAllGatherInit(const void *sendbuff, void *recvbuff, size_t sendcount,
                                   dmacclDataType_t datatype, dmacclComm_t comm,
                                   dmacclRequest_t *request) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLGATHER,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .count = sendcount,
               .datatype = datatype};
  return requestInit(&op, "dmacclAllGatherInit", request);
}

dmacclResult_t dmacclAlltoAllInit(const void *sendbuff, void *recvbuff, size_t count,
                                  dmacclDataType_t datatype, dmacclComm_t comm,
                                  dmacclRequest_t *request) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLTOALL,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .count = count,
               .datatype = datatype};
  return requestInit(&op, "dmacclAlltoAllInit", request);
}

/* A live request (the registry, never its possibly freed memory); free:
 * also take it out of the registry, atomically with the check. */
static dmacclResult_t checkRequest(dmacclRequest_t request, const char *call, int free) {
  if (!request) return coreError(NULL, dmacclInvalidArgument, "%s: request is NULL", call);
  if (!coreRequestIsLive(request, free))
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: request %p is not a live request (freed, or not from "
                     "dmacclAllGatherInit/dmacclAlltoAllInit)",
                     call, (void *)request);
  return dmacclSuccess;
}

dmacclResult_t dmacclStart(dmacclRequest_t request, cudaStream_t stream) {
  const char *call = "dmacclStart";
  dmacclResult_t rc = checkRequest(request, call, 0);
  if (rc != dmacclSuccess) return rc;
  coreOp op = request->op;
  op.stream = stream;
  if (coreEnter(op.comm, call) != dmacclSuccess)
    return coreError(NULL, dmacclInvalidUsage,
                     "%s: request %p's communicator %p was destroyed; free the request", call,
                     (void *)request, (void *)op.comm);
  rc = op.comm->exec->checkStream(op.comm, stream, call, &op.capture);
  if (rc == dmacclSuccess && coreGroupActive())
    rc = coreGroupRecord(&op);
  else if (rc == dmacclSuccess && (rc = coreCheckSoloUse(op.comm, call)) == dmacclSuccess)
    rc = corePost(&op);
  coreLeave(op.comm);
  return rc;
}

dmacclResult_t dmacclRequestFree(dmacclRequest_t request) {
  dmacclResult_t rc = checkRequest(request, "dmacclRequestFree", 1);
  if (rc != dmacclSuccess) return rc;
  request->magic = 0;
  free(request);
  return dmacclSuccess;
}
