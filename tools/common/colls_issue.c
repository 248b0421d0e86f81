/* collIssue (colls.h): the one part of the collective table that calls the
 * library, apart so that programs that only name collectives (the parsers'
 * fuzzer) need not link it. */
#include "colls.h"

dmacclResult_t collIssue(collId c, const collShape *s, int rank, const void *sendbuff,
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
  default: return dmacclInvalidArgument;
  }
}
