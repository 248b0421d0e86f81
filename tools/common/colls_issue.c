/* collIssue, collStart and collFree (colls.h): the part of the collective
 * table that calls the library, apart so that programs that only name
 * collectives (the parsers' fuzzer) need not link it. */
#include "colls.h"

#include <stddef.h>

/* sendrecv: rank's Send to the next rank, then its Receive from the
 * previous one, in a group of their own (inside the caller's group they
 * join it); the Init form makes the two requests. */
static dmacclResult_t sendRecv(const collShape *s, int rank, const void *sendbuff, void *recvbuff,
                               dmacclDataType_t t, dmacclComm_t comm, cudaStream_t stream,
                               dmacclRequest_t *req) {
  int n = s->nranks, next = n > 0 ? (rank + 1) % n : 0, prev = n > 0 ? (rank - 1 + n) % n : 0;
  size_t cnt = s->count;
  dmacclResult_t rc;
  if (req) {
    req[0] = req[1] = NULL;
    rc = dmacclSendInit(sendbuff, cnt, t, next, comm, &req[0]);
    if (rc == dmacclSuccess) rc = dmacclRecvInit(recvbuff, cnt, t, prev, comm, &req[1]);
    if (rc != dmacclSuccess) collFree(COLL_SENDRECV, req);
    return rc;
  }
  rc = dmacclGroupStart();
  if (rc != dmacclSuccess) return rc;
  rc = dmacclSend(sendbuff, cnt, t, next, comm, stream);
  if (rc == dmacclSuccess) rc = dmacclRecv(recvbuff, cnt, t, prev, comm, stream);
  dmacclResult_t e = dmacclGroupEnd();
  return rc != dmacclSuccess ? rc : e;
}

static dmacclResult_t issue(collId c, const collShape *s, int rank, const void *sendbuff,
                            void *recvbuff, dmacclDataType_t t, dmacclRedOp_t op, dmacclComm_t comm,
                            cudaStream_t stream, dmacclRequest_t *req);

dmacclResult_t collIssue(collId c, const collShape *s, int rank, const void *sendbuff,
                         void *recvbuff, dmacclDataType_t t, dmacclRedOp_t op, dmacclComm_t comm,
                         cudaStream_t stream, dmacclRequest_t *req) {
  if (op != COLL_PREMULSUM || (unsigned)c >= COLL_NUM || !(collTable[c].flags & COLL_REDUCES))
    return issue(c, s, rank, sendbuff, recvbuff, t, op, comm, stream, req);
  /* an operator of its own, destroyed once the call has returned */
  unsigned char scalar[8];
  collPremulScalar(t, scalar);
  dmacclRedOp_t pre;
  dmacclResult_t rc = dmacclRedOpCreatePreMulSum(&pre, scalar, t, dmacclScalarHostImmediate, comm);
  if (rc != dmacclSuccess) return rc;
  rc = issue(c, s, rank, sendbuff, recvbuff, t, pre, comm, stream, req);
  dmacclResult_t d = dmacclRedOpDestroy(pre, comm);
  return rc != dmacclSuccess ? rc : d;
}

static dmacclResult_t issue(collId c, const collShape *s, int rank, const void *sendbuff,
                            void *recvbuff, dmacclDataType_t t, dmacclRedOp_t op, dmacclComm_t comm,
                            cudaStream_t stream, dmacclRequest_t *req) {
  size_t cnt = s->count, row = (size_t)rank * (size_t)s->nranks;
  int root = s->root;
  const void *sb = sendbuff;
  void *rb = recvbuff;
  switch (c) {
  case COLL_ALLGATHER:
    return req ? dmacclAllGatherInit(sb, rb, cnt, t, comm, req)
               : dmacclAllGather(sb, rb, cnt, t, comm, stream);
  case COLL_ALLTOALL:
    return req ? dmacclAlltoAllInit(sb, rb, cnt, t, comm, req)
               : dmacclAlltoAll(sb, rb, cnt, t, comm, stream);
  case COLL_ALLREDUCE:
    return req ? dmacclAllReduceInit(sb, rb, cnt, t, op, comm, req)
               : dmacclAllReduce(sb, rb, cnt, t, op, comm, stream);
  case COLL_REDUCESCATTER:
    return req ? dmacclReduceScatterInit(sb, rb, cnt, t, op, comm, req)
               : dmacclReduceScatter(sb, rb, cnt, t, op, comm, stream);
  case COLL_BROADCAST:
    return req ? dmacclBroadcastInit(sb, rb, cnt, t, root, comm, req)
               : dmacclBroadcast(sb, rb, cnt, t, root, comm, stream);
  case COLL_REDUCE:
    return req ? dmacclReduceInit(sb, rb, cnt, t, op, root, comm, req)
               : dmacclReduce(sb, rb, cnt, t, op, root, comm, stream);
  case COLL_GATHER:
    return req ? dmacclGatherInit(sb, rb, cnt, t, root, comm, req)
               : dmacclGather(sb, rb, cnt, t, root, comm, stream);
  case COLL_SCATTER:
    return req ? dmacclScatterInit(sb, rb, cnt, t, root, comm, req)
               : dmacclScatter(sb, rb, cnt, t, root, comm, stream);
  case COLL_ALLGATHERV:
    return req ? dmacclAllGatherVInit(sb, rb, s->counts, s->displs, t, comm, req)
               : dmacclAllGatherV(sb, rb, s->counts, s->displs, t, comm, stream);
  case COLL_REDUCESCATTERV:
    return req ? dmacclReduceScatterVInit(sb, rb, s->counts, s->displs, t, op, comm, req)
               : dmacclReduceScatterV(sb, rb, s->counts, s->displs, t, op, comm, stream);
  case COLL_ALLTOALLV:
    return req ? dmacclAlltoAllvInit(sb, s->sendcounts + row, s->sdispls + row, rb,
                                     s->recvcounts + row, s->rdispls + row, t, comm, req)
               : dmacclAlltoAllv(sb, s->sendcounts + row, s->sdispls + row, rb, s->recvcounts + row,
                                 s->rdispls + row, t, comm, stream);
  case COLL_SENDRECV: return sendRecv(s, rank, sb, rb, t, comm, stream, req);
  default: return dmacclInvalidArgument;
  }
}

dmacclResult_t collStart(collId c, dmacclRequest_t *requests, cudaStream_t stream) {
  int k = collRequests(c);
  if (k == 1) return dmacclStart(requests[0], stream);
  dmacclResult_t rc = dmacclGroupStart();
  if (rc != dmacclSuccess) return rc;
  for (int i = 0; i < k && rc == dmacclSuccess; i++) rc = dmacclStart(requests[i], stream);
  dmacclResult_t e = dmacclGroupEnd();
  return rc != dmacclSuccess ? rc : e;
}

void collFree(collId c, dmacclRequest_t *requests) {
  for (int i = 0; i < collRequests(c); i++)
    if (requests[i]) {
      dmacclRequestFree(requests[i]);
      requests[i] = NULL;
    }
}
