/* Argument checks of the public calls, in one place. Every failure names the
 * call, the argument and its value, and happens before anything is issued. */
#include "../exec/exec.h"

#include <stdint.h>

static int overlaps(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return alen && blen && pa < pb + blen && pb < pa + alen;
}

dmacclResult_t coreCheckCollArgs(coreOp *op, const char *call) {
  dmacclComm_t comm = op->comm; /* live: the caller entered it (coreEnter) */
  dmacclResult_t rc;
  size_t tsize = coreTypeSize(op->datatype);
  if (tsize == 0)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: datatype %d is not a dmacclDataType_t (valid values are 0 to %d)", call,
                     (int)op->datatype, dmacclNumTypes - 1);
  const char *countName = op->coll == PLAN_COLL_ALLGATHER ? "sendcount" : "count";
  if (op->count > SIZE_MAX / tsize)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: %s %zu of %s (%zu bytes each) overflows the byte size", call, countName,
                     op->count, coreTypeName(op->datatype), tsize);
  size_t chunk = op->count * tsize;
  if (chunk > SIZE_MAX / (size_t)comm->nranks || chunk * (size_t)comm->nranks > (size_t)PTRDIFF_MAX)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: %s %zu of %s times %d ranks overflows the buffer size", call, countName,
                     op->count, coreTypeName(op->datatype), comm->nranks);
  size_t total = chunk * (size_t)comm->nranks;
  size_t sendBytes = op->coll == PLAN_COLL_ALLGATHER ? chunk : total;
  op->chunkBytes = chunk;
  op->inPlace = 0;

  rc = comm->exec->checkStream(comm, op->stream, call, &op->capture);
  if (rc != dmacclSuccess) return rc;
  if (op->count == 0) return dmacclSuccess; /* nothing is read or written */
  if (!op->sendbuff)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: sendbuff is NULL with %s %zu (NULL is allowed only when the count is 0)",
                     call, countName, op->count);
  if (!op->recvbuff)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: recvbuff is NULL with %s %zu (NULL is allowed only when the count is 0)",
                     call, countName, op->count);
  rc = coreMemCheckRange(comm, op->sendbuff, sendBytes, call, "sendbuff");
  if (rc == dmacclSuccess) rc = coreMemCheckRange(comm, op->recvbuff, total, call, "recvbuff");
  if (rc != dmacclSuccess) return rc;
  rc = comm->exec->checkBuffer(comm, op->sendbuff, sendBytes, call, "sendbuff");
  if (rc != dmacclSuccess) return rc;
  rc = comm->exec->checkBuffer(comm, op->recvbuff, total, call, "recvbuff");
  if (rc != dmacclSuccess) return rc;

  if (overlaps(op->sendbuff, sendBytes, op->recvbuff, total)) {
    const char *own = (const char *)op->recvbuff + (size_t)comm->rank * chunk;
    if (op->coll == PLAN_COLL_ALLGATHER && op->sendbuff == own) {
      op->inPlace = 1;
    } else if (op->coll == PLAN_COLL_ALLGATHER) {
      return coreError(comm, dmacclInvalidArgument,
                       "%s: sendbuff %p overlaps recvbuff [%p, %p) but is not this rank's block: "
                       "in place needs sendbuff == recvbuff + rank*sendcount*size = %p (rank %d)",
                       call, op->sendbuff, op->recvbuff,
                       (const void *)((const char *)op->recvbuff + total), (const void *)own,
                       comm->rank);
    } else {
      return coreError(
          comm, dmacclInvalidArgument,
          "%s: sendbuff [%p, %p) overlaps recvbuff [%p, %p); AlltoAll does not run in place", call,
          op->sendbuff, (const void *)((const char *)op->sendbuff + sendBytes), op->recvbuff,
          (const void *)((const char *)op->recvbuff + total));
    }
  }
  return dmacclSuccess;
}
