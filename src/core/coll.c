/* The collective entry points: check, then record (in a group) or post. */
#include "core.h"

static dmacclResult_t issue(coreOp *op, const char *call) {
  dmacclResult_t rc = coreEnter(op->comm, call);
  if (rc != dmacclSuccess) return rc;
  rc = coreCheckCollArgs(op, call);
  if (rc == dmacclSuccess && coreGroupActive())
    rc = coreGroupRecord(op);
  else if (rc == dmacclSuccess && (rc = coreCheckSoloUse(op->comm, call)) == dmacclSuccess)
    rc = corePost(op);
  coreLeave(op->comm);
  return rc;
}

dmacclResult_t dmacclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                               dmacclDataType_t datatype, dmacclComm_t comm, cudaStream_t stream) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLGATHER,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .count = sendcount,
               .datatype = datatype,
               .stream = stream};
  return issue(&op, "dmacclAllGather");
}

dmacclResult_t dmacclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                              dmacclDataType_t datatype, dmacclComm_t comm, cudaStream_t stream) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLTOALL,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .count = count,
               .datatype = datatype,
               .stream = stream};
  return issue(&op, "dmacclAlltoAll");
}
