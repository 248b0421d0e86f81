/* The collective entry points: each fills a coreOp (the V forms' arrays
 * packed into one array, as the planner reads them), then check, then
 * record (in a group) or post. */
#include "core.h"

#include <string.h>

/* arrays: the V form's k arrays (NULL for the other forms), read during the
 * call only: packed on the stack. */
static dmacclResult_t issueIn(coreOp *op, const size_t *const *arrays, const char *const *names,
                              int k) {
  const char *call = op->call ? op->call : planCollOf(op->coll)->call; /* ...Notify: its own */
  op->call = call;
  dmacclResult_t rc = coreEnter(op->comm, call);
  if (rc != dmacclSuccess) return rc;
  size_t packed[PLAN_VEC_ARRAYS * CORE_MAX_RANKS];
  rc = arrays ? corePackArrays(op, arrays, names, k, packed) : dmacclSuccess;
  if (rc == dmacclSuccess) rc = coreCheckCollArgs(op, call);
  if (rc == dmacclSuccess && coreUsesPairs(op)) {
    op->pairs = 1;
    if (coreGroupActive())
      rc = coreGroupRecord(op);
    else if ((rc = coreCheckSoloUse(op->comm, call)) == dmacclSuccess)
      rc = corePostPairs(op);
  } else if (rc == dmacclSuccess && (rc = corePairsPrepare(op)) == dmacclSuccess) {
    if (coreGroupActive())
      rc = coreGroupRecord(op);
    else if ((rc = coreCheckSoloUse(op->comm, call)) == dmacclSuccess)
      rc = corePost(op);
  }
  coreLeave(op->comm);
  return rc;
}

/* Inside a group a refused call fails the group (group.c, coreGroupFail). */
static dmacclResult_t issueArrays(coreOp *op, const size_t *const *arrays, const char *const *names,
                                  int k) {
  dmacclResult_t rc = issueIn(op, arrays, names, k);
  coreGroupFail(rc);
  return rc;
}

static dmacclResult_t issue(coreOp *op) {
  return issueArrays(op, NULL, NULL, 0);
}

dmacclResult_t corePackArrays(coreOp *op, const size_t *const *arrays, const char *const *names,
                              int k, size_t *packed) {
  int n = op->comm->nranks;
  for (int i = 0; i < k; i++) {
    if (!arrays[i])
      return coreError(op->comm, dmacclInvalidArgument, "%s: %s is NULL (it needs %d entries)",
                       op->call ? op->call : planCollOf(op->coll)->call, names[i], n);
    memcpy(packed + (size_t)i * (size_t)n, arrays[i], (size_t)n * sizeof(size_t));
  }
  for (int i = k; i < PLAN_VEC_ARRAYS; i++)
    memset(packed + (size_t)i * (size_t)n, 0, (size_t)n * sizeof(size_t));
  op->vec = packed;
  return dmacclSuccess;
}

#define OP(c, ...)                                                                                 \
  coreOp op = {.comm = comm, .coll = PLAN_COLL_##c, .stream = stream, __VA_ARGS__};                \
  return issue(&op)

dmacclResult_t dmacclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                               dmacclDataType_t datatype, dmacclComm_t comm, cudaStream_t stream) {
  OP(ALLGATHER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = sendcount,
     .datatype = datatype);
}

dmacclResult_t dmacclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                              dmacclDataType_t datatype, dmacclComm_t comm, cudaStream_t stream) {
  OP(ALLTOALL, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype);
}

dmacclResult_t dmacclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                               dmacclDataType_t datatype, dmacclRedOp_t op_, dmacclComm_t comm,
                               cudaStream_t stream) {
  OP(ALLREDUCE, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
     .redop = op_);
}

dmacclResult_t dmacclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                   dmacclDataType_t datatype, dmacclRedOp_t op_, dmacclComm_t comm,
                                   cudaStream_t stream) {
  OP(REDUCESCATTER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = recvcount,
     .datatype = datatype, .redop = op_);
}

dmacclResult_t dmacclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                               dmacclDataType_t datatype, int root, dmacclComm_t comm,
                               cudaStream_t stream) {
  OP(BROADCAST, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
     .root = root);
}

dmacclResult_t dmacclReduce(const void *sendbuff, void *recvbuff, size_t count,
                            dmacclDataType_t datatype, dmacclRedOp_t op_, int root,
                            dmacclComm_t comm, cudaStream_t stream) {
  OP(REDUCE, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
     .redop = op_, .root = root);
}

dmacclResult_t dmacclGather(const void *sendbuff, void *recvbuff, size_t count,
                            dmacclDataType_t datatype, int root, dmacclComm_t comm,
                            cudaStream_t stream) {
  OP(GATHER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
     .root = root);
}

dmacclResult_t dmacclScatter(const void *sendbuff, void *recvbuff, size_t count,
                             dmacclDataType_t datatype, int root, dmacclComm_t comm,
                             cudaStream_t stream) {
  OP(SCATTER, .sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .datatype = datatype,
     .root = root);
}

static const char *const countsDispls[] = {"counts", "displs"};
static const char *const a2avArrays[] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};

dmacclResult_t dmacclAllGatherV(const void *sendbuff, void *recvbuff, const size_t counts[],
                                const size_t displs[], dmacclDataType_t datatype, dmacclComm_t comm,
                                cudaStream_t stream) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLGATHERV,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .datatype = datatype,
               .stream = stream};
  const size_t *arrays[] = {counts, displs};
  return issueArrays(&op, arrays, countsDispls, 2);
}

dmacclResult_t dmacclAllGatherNotify(const void *sendbuff, void *recvbuff, size_t sendcount,
                                     dmacclDataType_t datatype, uint32_t *arrived, uint32_t value,
                                     dmacclComm_t comm, cudaStream_t stream) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLGATHER,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .count = sendcount,
               .datatype = datatype,
               .stream = stream,
               .call = "dmacclAllGatherNotify",
               .notify = 1,
               .arrived = arrived,
               .arrivedValue = value};
  return issue(&op);
}

dmacclResult_t dmacclAllGatherVNotify(const void *sendbuff, void *recvbuff, const size_t counts[],
                                      const size_t displs[], dmacclDataType_t datatype,
                                      uint32_t *arrived, uint32_t value, dmacclComm_t comm,
                                      cudaStream_t stream) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLGATHERV,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .datatype = datatype,
               .stream = stream,
               .call = "dmacclAllGatherVNotify",
               .notify = 1,
               .arrived = arrived,
               .arrivedValue = value};
  const size_t *arrays[] = {counts, displs};
  return issueArrays(&op, arrays, countsDispls, 2);
}

dmacclResult_t dmacclReduceScatterV(const void *sendbuff, void *recvbuff, const size_t counts[],
                                    const size_t displs[], dmacclDataType_t datatype,
                                    dmacclRedOp_t op_, dmacclComm_t comm, cudaStream_t stream) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_REDUCESCATTERV,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .datatype = datatype,
               .redop = op_,
               .stream = stream};
  const size_t *arrays[] = {counts, displs};
  return issueArrays(&op, arrays, countsDispls, 2);
}

dmacclResult_t dmacclAlltoAllv(const void *sendbuff, const size_t sendcounts[],
                               const size_t sdispls[], void *recvbuff, const size_t recvcounts[],
                               const size_t rdispls[], dmacclDataType_t datatype, dmacclComm_t comm,
                               cudaStream_t stream) {
  coreOp op = {.comm = comm,
               .coll = PLAN_COLL_ALLTOALLV,
               .sendbuff = sendbuff,
               .recvbuff = recvbuff,
               .datatype = datatype,
               .stream = stream};
  const size_t *arrays[] = {sendcounts, sdispls, recvcounts, rdispls};
  return issueArrays(&op, arrays, a2avArrays, 4);
}
