/* Argument checks of the public calls, in one place, read from the
 * collective table. Every failure names the call, the argument and its
 * value, and happens before anything is issued. */
#include "../exec/exec.h"
#include "../base/reduce.h"
#include "../exec/cuda_reduce.h"

#include <stdint.h>
#include <stdlib.h>

static int overlaps(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return alen && blen && pa < pb + blen && pb < pa + alen;
}

/* One array of a V form: present, every block's end representable, and
 * (written blocks: noOverlap) no two non-empty blocks overlapping. */
static dmacclResult_t checkArray(dmacclComm_t comm, const char *call, const size_t *counts,
                                 const size_t *displs, const char *countName, const char *displName,
                                 size_t tsize, int noOverlap) {
  int n = comm->nranks;
  if (!counts)
    return coreError(comm, dmacclInvalidArgument, "%s: %s is NULL (it needs %d entries)", call,
                     countName, n);
  if (!displs)
    return coreError(comm, dmacclInvalidArgument, "%s: %s is NULL (it needs %d entries)", call,
                     displName, n);
  size_t limit = (size_t)PTRDIFF_MAX / tsize;
  for (int i = 0; i < n; i++)
    if (counts[i] > limit || displs[i] > limit - counts[i])
      return coreError(comm, dmacclInvalidArgument,
                       "%s: %s[%d] = %zu with %s[%d] = %zu runs past the largest buffer (%zu "
                       "elements of %zu bytes)",
                       call, displName, i, displs[i], countName, i, counts[i], limit, tsize);
  if (!noOverlap) return dmacclSuccess;
  /* Overlap: sort the non-empty blocks by displacement (n is small). */
  int *order = malloc((size_t)n * sizeof(int)), k = 0;
  if (!order) return coreError(comm, dmacclSystemError, "%s: out of memory", call);
  for (int i = 0; i < n; i++) {
    if (!counts[i]) continue;
    int j = k++;
    for (; j > 0 && displs[order[j - 1]] > displs[i]; j--) order[j] = order[j - 1];
    order[j] = i;
  }
  for (int j = 1; j < k; j++) {
    int p = order[j - 1], q = order[j];
    if (displs[p] + counts[p] > displs[q]) {
      free(order);
      return coreError(comm, dmacclInvalidArgument,
                       "%s: blocks %d ([%zu, %zu)) and %d ([%zu, %zu)) overlap (%s and %s, in "
                       "elements)",
                       call, p, displs[p], displs[p] + counts[p], q, displs[q],
                       displs[q] + counts[q], displName, countName);
    }
  }
  free(order);
  return dmacclSuccess;
}

static dmacclResult_t checkArrays(coreOp *op, const char *call, size_t tsize) {
  dmacclComm_t comm = op->comm;
  const planCollInfo *ci = planCollOf(op->coll);
  int n = comm->nranks;
  if (!op->vec) return dmacclSuccess; /* the caller passed its arrays in vec */
  const size_t *v = op->vec;
  dmacclResult_t rc;
  if (ci->peerArrays) {
    /* Send blocks may overlap (a block sent to several ranks); receive blocks not. */
    rc = checkArray(comm, call, v, v + n, "sendcounts", "sdispls", tsize, 0);
    if (rc == dmacclSuccess)
      rc = checkArray(comm, call, v + 2 * (size_t)n, v + 3 * (size_t)n, "recvcounts", "rdispls",
                      tsize, 1);
    /* the rank's own block: what it sends itself is what it receives */
    int me = comm->rank;
    if (rc == dmacclSuccess && v[me] != v[2 * (size_t)n + (size_t)me])
      rc = coreError(comm, dmacclInvalidArgument,
                     "%s: sendcounts[%d] is %zu but recvcounts[%d] is %zu: this rank's block to "
                     "itself must have one count",
                     call, me, v[me], me, v[2 * (size_t)n + (size_t)me]);
    return rc;
  }
  return checkArray(comm, call, v, v + n, "counts", "displs", tsize, 1);
}

static dmacclResult_t checkBuf(dmacclComm_t comm, const void *buf, size_t bytes, const char *call,
                               const char *arg) {
  if (!bytes) return dmacclSuccess;
  if (!buf)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: %s is NULL but this rank's part of the operation has %zu bytes (NULL "
                     "is allowed only for an empty part or a buffer only the root uses)",
                     call, arg, bytes);
  dmacclResult_t rc = coreMemCheckRange(comm, buf, bytes, call, arg);
  if (rc == dmacclSuccess) rc = comm->exec->checkBuffer(comm, buf, bytes, call, arg);
  return rc;
}

/* op's buffer sizes on its rank (checked arguments). op->vec, when the form
 * has arrays, points at the caller's arrays laid out as PLAN_VEC_*. */
static void sizeBuffers(coreOp *op) {
  dmacclComm_t comm = op->comm;
  const planCollInfo *ci = planCollOf(op->coll);
  const size_t *vecs[CORE_MAX_RANKS];
  for (int r = 0; r < comm->nranks; r++) vecs[r] = op->vec;
  planArgs a = coreOpArgs(op, comm->rank, comm->nranks, vecs, 0);
  op->sendBytes = ci->sendBytes(&a, comm->rank);
  op->recvBytes = ci->recvBytes(&a, comm->rank);
  op->inPlace = 0;
}

/* Buffers that overlap: the collective's in-place form (op->inPlace), or an
 * error. */
static dmacclResult_t checkPlace(coreOp *op, const char *call) {
  dmacclComm_t comm = op->comm;
  const planCollInfo *ci = planCollOf(op->coll);
  if (!overlaps(op->sendbuff, op->sendBytes, op->recvbuff, op->recvBytes)) return dmacclSuccess;
  const size_t *vecs[CORE_MAX_RANKS];
  for (int r = 0; r < comm->nranks; r++) vecs[r] = op->vec;
  planArgs a = coreOpArgs(op, comm->rank, comm->nranks, vecs, 0);
  long long delta = 0;
  int has = ci->inPlace(&a, comm->rank, &delta);
  long long got = (long long)((intptr_t)op->sendbuff - (intptr_t)op->recvbuff);
  if (has && got == delta) {
    op->inPlace = 1;
    return dmacclSuccess;
  }
  if (has)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: sendbuff [%p, +%zu) overlaps recvbuff [%p, +%zu) but is not the "
                     "in-place form, which needs sendbuff == recvbuff %s %lld bytes (rank %d)",
                     call, op->sendbuff, op->sendBytes, op->recvbuff, op->recvBytes,
                     delta < 0 ? "-" : "+", delta < 0 ? -delta : delta, comm->rank);
  return coreError(comm, dmacclInvalidArgument,
                   "%s: sendbuff [%p, +%zu) overlaps recvbuff [%p, +%zu); %s does not run in "
                   "place%s",
                   call, op->sendbuff, op->sendBytes, op->recvbuff, op->recvBytes, ci->call,
                   ci->rooted ? " on this rank" : "");
}

void coreP2pPiece(coreOp *piece, const coreOp *whole) {
  piece->call = whole->call;
  piece->stream = whole->stream;
  piece->capture = whole->capture;
  piece->captureId = whole->captureId;
  piece->root = piece->p2p == 1 ? piece->comm->rank : piece->peer; /* as coreP2pCheck */
  sizeBuffers(piece);
  (void)checkPlace(piece, whole->call); /* a Send is in place, a Recv has no send buffer */
}

dmacclResult_t coreCheckCollArgs(coreOp *op, const char *call) {
  dmacclComm_t comm = op->comm; /* live: the caller entered it (coreEnter) */
  const planCollInfo *ci = planCollOf(op->coll);
  int n = comm->nranks;
  dmacclResult_t rc;
  size_t tsize = coreTypeSize(op->datatype);
  if (tsize == 0)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: datatype %d is not a dmacclDataType_t (valid values are 0 to %d)", call,
                     (int)op->datatype, dmacclNumTypes - 1);
  if (ci->reduces) {
    if ((rc = coreResolveRedOp(op, call)) != dmacclSuccess) return rc;
    if (!baseRedOpSupported(op->datatype, op->redop))
      return coreError(comm, dmacclInvalidArgument,
                       "%s: op %s is not defined for datatype %s (Avg needs a floating-point "
                       "type)",
                       call, baseRedOpName(op->redop), coreTypeName(op->datatype));
  }
  if (ci->reduces && n > EXEC_REDUCE_MAX_SRCS)
    return coreError(comm, dmacclUnsupported,
                     "%s: reductions take at most %d ranks (the reduction kernel's inputs); this "
                     "communicator has %d",
                     call, EXEC_REDUCE_MAX_SRCS, n);
  if (ci->reduces && n > 1 && comm->clique->scratchBytes / (2 * (size_t)(n - 1)) < 256)
    return coreError(comm, dmacclInvalidUsage,
                     "%s: the scratch buffer (%zu bytes: DMACCL_SCRATCH_BYTES, the smallest any "
                     "rank's process asked for) is too small for %d ranks: it needs at least %zu "
                     "bytes",
                     call, comm->clique->scratchBytes, n, (size_t)512 * (size_t)(n - 1));
  if (ci->rooted && (op->root < 0 || op->root >= n))
    return coreError(comm, dmacclInvalidArgument, "%s: root %d is not a rank (0 to %d)", call,
                     op->root, n - 1);
  if (ci->vector) {
    if ((rc = checkArrays(op, call, tsize)) != dmacclSuccess) return rc;
  } else {
    /* count * size * nranks: the largest buffer any uniform form has (a
     * Send/Recv's is its count alone) */
    if (op->p2p && op->count > (size_t)PTRDIFF_MAX / tsize)
      return coreError(comm, dmacclInvalidArgument,
                       "%s: count %zu of %s (%zu bytes each) overflows the buffer size", call,
                       op->count, coreTypeName(op->datatype), tsize);
    if (!op->p2p && op->count > (size_t)PTRDIFF_MAX / tsize / (size_t)n)
      return coreError(comm, dmacclInvalidArgument,
                       "%s: %s %zu of %s (%zu bytes each) times %d ranks overflows the buffer size",
                       call, ci->countArg, op->count, coreTypeName(op->datatype), tsize, n);
  }
  sizeBuffers(op);
  rc = comm->exec->checkStream(comm, op->stream, call, &op->capture, &op->captureId);
  if (rc != dmacclSuccess) return rc;
  /* In place at the same address (AllReduce, Broadcast, ...): the range the
   * send check covered needs no second pointer query. */
  int covered = op->recvbuff == op->sendbuff && op->recvBytes <= op->sendBytes;
  if ((rc = checkBuf(comm, op->sendbuff, op->sendBytes, call, "sendbuff")) != dmacclSuccess ||
      (!covered &&
       (rc = checkBuf(comm, op->recvbuff, op->recvBytes, call, "recvbuff")) != dmacclSuccess) ||
      (rc = checkPlace(op, call)) != dmacclSuccess)
    return rc;
  if (op->notify) { /* nranks arrival words of the caller's, apart from the buffers */
    size_t ab = (size_t)n * sizeof(uint32_t);
    if (!op->arrived)
      return coreError(comm, dmacclInvalidArgument,
                       "%s: arrived is NULL (it needs %d 32-bit words, one per rank)", call, n);
    if ((uintptr_t)op->arrived % sizeof(uint32_t))
      return coreError(comm, dmacclInvalidArgument, "%s: arrived %p is not 4-byte aligned", call,
                       (void *)op->arrived);
    if ((rc = checkBuf(comm, op->arrived, ab, call, "arrived")) != dmacclSuccess) return rc;
    const char *hit = overlaps(op->arrived, ab, op->sendbuff, op->sendBytes)   ? "sendbuff"
                      : overlaps(op->arrived, ab, op->recvbuff, op->recvBytes) ? "recvbuff"
                                                                               : NULL;
    if (hit)
      return coreError(comm, dmacclInvalidArgument,
                       "%s: arrived [%p, +%zu) overlaps %s; the words must lie apart from the "
                       "buffers",
                       call, (void *)op->arrived, ab, hit);
  }
  return dmacclSuccess;
}

dmacclResult_t coreCheckWaitArgs(dmacclComm_t comm, const uint32_t *arrived, int rank,
                                 cudaStream_t stream, const char *call) {
  int n = comm->nranks, capturing;
  unsigned long long captureId;
  if (coreGroupActive())
    return coreError(comm, dmacclInvalidUsage,
                     "%s: called inside a group: its operations are queued at dmacclGroupEnd, "
                     "so wait after it",
                     call);
  if (!arrived)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: arrived is NULL (the %d words given to the ...Notify call)", call, n);
  if ((uintptr_t)arrived % sizeof(uint32_t))
    return coreError(comm, dmacclInvalidArgument, "%s: arrived %p is not 4-byte aligned", call,
                     (const void *)arrived);
  if (rank < 0 || rank >= n)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: rank %d is not a rank of the communicator (0 to %d)", call, rank, n - 1);
  dmacclResult_t rc = comm->exec->checkStream(comm, stream, call, &capturing, &captureId);
  if (rc == dmacclSuccess)
    rc = checkBuf(comm, arrived, (size_t)n * sizeof(uint32_t), call, "arrived");
  return rc;
}
