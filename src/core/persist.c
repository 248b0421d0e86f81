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
  if (!request) return coreError(op->comm, dmacclInvalidArgument, "%s: request is NULL", call);
  op->stream = NULL; /* the stream comes with each start */
  dmacclResult_t rc = coreCheckCollArgs(op, call);
  if (rc != dmacclSuccess) return rc;
  struct dmacclRequest *r = calloc(1, sizeof(*r));
  if (!r) return coreError(op->comm, dmacclSystemError, "%s: out of memory", call);
  r->magic = REQUEST_MAGIC;
  r->op = *op;
  if (op->comm->clique->mp && (rc = coreMpExportOp(&r->op, call)) != dmacclSuccess) {
    free(r);
    return rc;
  }
  *request = r;
  return dmacclSuccess;
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

static dmacclResult_t checkRequest(dmacclRequest_t request, const char *call) {
  if (!request) return coreError(NULL, dmacclInvalidArgument, "%s: request is NULL", call);
  if (request->magic != REQUEST_MAGIC)
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: request %p is not a live request (freed, or not from "
                     "dmacclAllGatherInit/dmacclAlltoAllInit)",
                     call, (void *)request);
  return dmacclSuccess;
}

dmacclResult_t dmacclStart(dmacclRequest_t request, cudaStream_t stream) {
  const char *call = "dmacclStart";
  dmacclResult_t rc = checkRequest(request, call);
  if (rc != dmacclSuccess) return rc;
  coreOp op = request->op;
  op.stream = stream;
  rc = op.comm->exec->checkStream(op.comm, stream, call, &op.capture);
  if (rc != dmacclSuccess) return rc;
  if (coreGroupActive()) return coreGroupRecord(&op);
  rc = coreCheckSoloUse(op.comm, call);
  if (rc != dmacclSuccess) return rc;
  return corePost(&op);
}

dmacclResult_t dmacclRequestFree(dmacclRequest_t request) {
  dmacclResult_t rc = checkRequest(request, "dmacclRequestFree");
  if (rc != dmacclSuccess) return rc;
  request->magic = 0;
  free(request);
  return dmacclSuccess;
}
