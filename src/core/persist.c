/*
 * Persistent collectives (as MPI's): dmaccl<Collective>Init fixes the
 * buffers, the count (the V forms: a copy of the arrays), the type, op and
 * root once; dmacclStart issues the collective on a stream as often as
 * wanted; dmacclRequestFree releases the request.
 *
 * What a start saves against an eager call is what Init did once: the
 * argument checks (pointer attribute queries), and for multi-process sets
 * the export of both buffers (allocation lookups, IPC handles). A start
 * checks only its stream. The device commands are those of the eager call
 * of the same algorithm: a staged start goes straight onto the stream (no
 * peer rendezvous on the host), like an eager staged call, but for twoshot
 * and AlltoAllv's stagell, which meet their peers' calls first
 * (planRunsAtCall).
 *
 * dmacclSendInit / dmacclRecvInit: the request holds the call as checked on
 * the parent communicator; each start binds it to its channel as an eager
 * Send/Recv does (inside a group: at the group's end, in channel order), so
 * the first start with a peer makes the channel and must not be captured.
 * Between processes the buffers are exported at each start (on the channel).
 * An AlltoAllv that runs as Send/Recv pairs (pairs.c) exports at Init all
 * the same, and its pieces export at each start, as Send/Recv starts do.
 */
#include "../exec/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUEST_MAGIC 0x9e45u

struct dmacclRequest {
  unsigned magic;
  coreOp op;   /* checked arguments, buffers exported (refsReady); stream set per start */
  size_t *vec; /* the V forms' arrays (op.vec points here) */
};

static dmacclResult_t requestInit(coreOp *op, const size_t *const *arrays, const char *const *names,
                                  int k, dmacclRequest_t *request) {
  char call[64];
  if (!op->call) op->call = planCollOf(op->coll)->call; /* Send/Recv name themselves */
  snprintf(call, sizeof(call), "%sInit", op->call);
  dmacclResult_t rc = coreEnter(op->comm, call);
  if (rc != dmacclSuccess) return rc;
  struct dmacclRequest *r = NULL;
  size_t packed[PLAN_VEC_ARRAYS * CORE_MAX_RANKS];
  op->stream = NULL; /* the stream comes with each start */
  if (!request) {
    rc = coreError(op->comm, dmacclInvalidArgument, "%s: request is NULL", call);
    goto out;
  }
  if (arrays && (rc = corePackArrays(op, arrays, names, k, packed)) != dmacclSuccess) goto out;
  if ((rc = op->p2p ? coreP2pCheck(op, call) : coreCheckCollArgs(op, call)) != dmacclSuccess)
    goto out;
  if (!(r = calloc(1, sizeof(*r))) || (arrays && !(r->vec = coreVecDup(op)))) {
    rc = coreError(op->comm, dmacclSystemError, "%s: out of memory", call);
    goto out;
  }
  r->magic = REQUEST_MAGIC;
  r->op = *op;
  r->op.vec = r->vec;
  /* Send/Recv: exported at each start, on the channel (made at the first). */
  if (op->comm->clique->mp && !op->p2p && (rc = coreMpExportOp(&r->op, call)) != dmacclSuccess)
    goto out;
  if ((rc = coreRegisterRequest(r)) != dmacclSuccess) goto out;
  *request = r;
  r = NULL;
out:
  if (r) free(r->vec);
  free(r);
  coreLeave(op->comm);
  return rc;
}

#define INIT(c, ...)                                                                               \
  coreOp op = {.comm = comm, .coll = PLAN_COLL_##c, __VA_ARGS__};                                  \
  return requestInit(&op, NULL, NULL, 0, request)

dmacclResult_t dmacclAllGatherInit(const void *sendbuff, void *recvbuff, size_t sendcount,
                                   dmacclDataType_t datatype, dmacclComm_t comm,
                                   dmacclRequest_t *request) {
  INIT(ALLGATHER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = sendcount,
       .datatype = datatype);
}

dmacclResult_t dmacclAlltoAllInit(const void *sendbuff, void *recvbuff, size_t count,
                                  dmacclDataType_t datatype, dmacclComm_t comm,
                                  dmacclRequest_t *request) {
  INIT(ALLTOALL, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype);
}

dmacclResult_t dmacclAllReduceInit(const void *sendbuff, void *recvbuff, size_t count,
                                   dmacclDataType_t datatype, dmacclRedOp_t op_, dmacclComm_t comm,
                                   dmacclRequest_t *request) {
  INIT(ALLREDUCE, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
       .redop = op_);
}

dmacclResult_t dmacclReduceScatterInit(const void *sendbuff, void *recvbuff, size_t recvcount,
                                       dmacclDataType_t datatype, dmacclRedOp_t op_,
                                       dmacclComm_t comm, dmacclRequest_t *request) {
  INIT(REDUCESCATTER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = recvcount,
       .datatype = datatype, .redop = op_);
}

dmacclResult_t dmacclBroadcastInit(const void *sendbuff, void *recvbuff, size_t count,
                                   dmacclDataType_t datatype, int root, dmacclComm_t comm,
                                   dmacclRequest_t *request) {
  INIT(BROADCAST, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
       .root = root);
}

dmacclResult_t dmacclReduceInit(const void *sendbuff, void *recvbuff, size_t count,
                                dmacclDataType_t datatype, dmacclRedOp_t op_, int root,
                                dmacclComm_t comm, dmacclRequest_t *request) {
  INIT(REDUCE, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
       .redop = op_, .root = root);
}

dmacclResult_t dmacclGatherInit(const void *sendbuff, void *recvbuff, size_t count,
                                dmacclDataType_t datatype, int root, dmacclComm_t comm,
                                dmacclRequest_t *request) {
  INIT(GATHER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
       .root = root);
}

dmacclResult_t dmacclScatterInit(const void *sendbuff, void *recvbuff, size_t count,
                                 dmacclDataType_t datatype, int root, dmacclComm_t comm,
                                 dmacclRequest_t *request) {
  INIT(SCATTER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
       .root = root);
}

dmacclResult_t dmacclSendInit(const void *sendbuff, size_t count, dmacclDataType_t datatype,
                              int peer, dmacclComm_t comm, dmacclRequest_t *request) {
  coreOp op = coreP2pOp(1, (void *)sendbuff, count, datatype, peer, comm);
  return requestInit(&op, NULL, NULL, 0, request);
}

dmacclResult_t dmacclRecvInit(void *recvbuff, size_t count, dmacclDataType_t datatype, int peer,
                              dmacclComm_t comm, dmacclRequest_t *request) {
  coreOp op = coreP2pOp(0, recvbuff, count, datatype, peer, comm);
  return requestInit(&op, NULL, NULL, 0, request);
}

static const char *const countsDispls[] = {"counts", "displs"};

dmacclResult_t dmacclAllGatherVInit(const void *sendbuff, void *recvbuff, const size_t counts[],
                                    const size_t displs[], dmacclDataType_t datatype,
                                    dmacclComm_t comm, dmacclRequest_t *request) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLGATHERV,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .datatype = datatype};
  const size_t *arrays[] = {counts, displs};
  return requestInit(&op, arrays, countsDispls, 2, request);
}

dmacclResult_t dmacclReduceScatterVInit(const void *sendbuff, void *recvbuff, const size_t counts[],
                                        const size_t displs[], dmacclDataType_t datatype,
                                        dmacclRedOp_t op_, dmacclComm_t comm,
                                        dmacclRequest_t *request) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_REDUCESCATTERV,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .datatype = datatype,
               .redop = op_};
  const size_t *arrays[] = {counts, displs};
  return requestInit(&op, arrays, countsDispls, 2, request);
}

dmacclResult_t dmacclAlltoAllvInit(const void *sendbuff, const size_t sendcounts[],
                                   const size_t sdispls[], void *recvbuff,
                                   const size_t recvcounts[], const size_t rdispls[],
                                   dmacclDataType_t datatype, dmacclComm_t comm,
                                   dmacclRequest_t *request) {
  static const char *const names[] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLTOALLV,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .datatype = datatype};
  const size_t *arrays[] = {sendcounts, sdispls, recvcounts, rdispls};
  return requestInit(&op, arrays, names, 4, request);
}

/* A live request (the registry, never its possibly freed memory); free:
 * also take it out of the registry, atomically with the check. */
static dmacclResult_t checkRequest(dmacclRequest_t request, const char *call, int free) {
  if (!request) return coreError(NULL, dmacclInvalidArgument, "%s: request is NULL", call);
  if (!coreRequestIsLive(request, free))
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: request %p is not a live request (freed, or not from a "
                     "dmaccl...Init call)",
                     call, (void *)request);
  return dmacclSuccess;
}

static dmacclResult_t startRequest(dmacclRequest_t request, cudaStream_t stream) {
  const char *call = "dmacclStart";
  dmacclResult_t rc = checkRequest(request, call, 0);
  if (rc != dmacclSuccess) return rc;
  coreOp op = request->op;
  op.stream = stream;
  if (coreEnter(op.comm, call) != dmacclSuccess)
    return coreError(NULL, dmacclInvalidUsage,
                     "%s: request %p's communicator %p was destroyed; free the request", call,
                     (void *)request, (void *)op.comm);
  rc = op.comm->exec->checkStream(op.comm, stream, call, &op.capture, &op.captureId);
  if (rc == dmacclSuccess && coreUsesPairs(&op)) {
    op.pairs = 1;
    if (coreGroupActive())
      rc = coreGroupRecord(&op);
    else if ((rc = coreCheckSoloUse(op.comm, call)) == dmacclSuccess)
      rc = corePostPairs(&op);
  } else if (rc == dmacclSuccess && (rc = corePairsPrepare(&op)) == dmacclSuccess) {
    if (coreGroupActive())
      rc = coreGroupRecord(&op);
    else if (op.p2p)
      return coreP2pPost(&op, call); /* leaves the communicator */
    else if ((rc = coreCheckSoloUse(op.comm, call)) == dmacclSuccess)
      rc = corePost(&op);
  }
  coreLeave(op.comm);
  return rc;
}

/* Inside a group a refused start fails the group (group.c, coreGroupFail). */
dmacclResult_t dmacclStart(dmacclRequest_t request, cudaStream_t stream) {
  dmacclResult_t rc = startRequest(request, stream);
  coreGroupFail(rc);
  return rc;
}

dmacclResult_t dmacclRequestFree(dmacclRequest_t request) {
  dmacclResult_t rc = checkRequest(request, "dmacclRequestFree", 1);
  if (rc != dmacclSuccess) return rc;
  request->magic = 0;
  free(request->vec);
  free(request);
  return dmacclSuccess;
}
