/*
 * Memory the ranks share: dmacclMemAlloc/Free, registration, and the
 * translation of buffers into descriptors peers can resolve (coreBufRef).
 * Buffers from dmacclMemAlloc are resolved here (allocation number + offset,
 * the same on every rank); other buffers go to the executor (CUDA IPC).
 */
#include "../exec/exec.h"
#include "../boot/boot.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A Send/Recv channel reaches memory through its parent communicator: the
 * user's allocations and IPC mappings are the parent's. */
static dmacclComm_t owner(dmacclComm_t comm) {
  return comm->parent ? comm->parent : comm;
}
static int ownerRank(dmacclComm_t comm, int rank) {
  return comm->parent ? comm->parentRank[rank] : rank;
}

dmacclResult_t coreMemCheckRange(dmacclComm_t user, const void *ptr, size_t bytes, const char *call,
                                 const char *arg) {
  dmacclComm_t comm = owner(user);
  uintptr_t p = (uintptr_t)ptr;
  dmacclResult_t rc = dmacclSuccess;
  pthread_mutex_lock(&comm->memLock);
  for (coreMem *m = comm->mems; m; m = m->next) {
    uintptr_t b = (uintptr_t)m->mine;
    if (p < b || p >= b + m->size) continue;
    if (bytes > b + m->size - p)
      rc = coreError(comm, dmacclInvalidArgument,
                     "%s: %s %p needs %zu bytes, but its dmacclMemAlloc allocation ends %zu bytes "
                     "after it",
                     call, arg, ptr, bytes, (size_t)(b + m->size - p));
    break;
  }
  pthread_mutex_unlock(&comm->memLock);
  return rc;
}

coreMem *coreMemFind(dmacclComm_t user, const void *ptr, size_t bytes) {
  dmacclComm_t comm = owner(user);
  uintptr_t p = (uintptr_t)ptr;
  coreMem *found = NULL;
  pthread_mutex_lock(&comm->memLock);
  for (coreMem *m = comm->mems; m; m = m->next) {
    uintptr_t b = (uintptr_t)m->mine;
    if (p >= b && p < b + m->size) {
      found = p + bytes <= b + m->size ? m : NULL;
      break;
    }
  }
  pthread_mutex_unlock(&comm->memLock);
  return found;
}

static coreMem *findById(dmacclComm_t comm, uint64_t id) {
  coreMem *found = NULL;
  pthread_mutex_lock(&comm->memLock);
  for (coreMem *m = comm->mems; m && !found; m = m->next)
    if (m->id == id) found = m;
  pthread_mutex_unlock(&comm->memLock);
  return found;
}

dmacclResult_t coreExportBuf(dmacclComm_t comm, const void *ptr, size_t bytes, coreBufRef *ref,
                             const char *call, const char *arg) {
  memset(ref, 0, sizeof(*ref));
  if (bytes == 0) return dmacclSuccess; /* CORE_REF_NONE: nothing will be touched */
  coreMem *m = coreMemFind(comm, ptr, bytes);
  if (m) {
    ref->kind = CORE_REF_MEM;
    ref->id = m->id;
    ref->off = (uint64_t)((const char *)ptr - m->mine);
    return dmacclSuccess;
  }
  return owner(comm)->exec->exportBuf(owner(comm), ptr, bytes, ref, call, arg);
}

dmacclResult_t coreImportBuf(dmacclComm_t comm, int peer, const coreBufRef *ref, void **addr) {
  if (ref->kind == CORE_REF_NONE) {
    *addr = NULL;
    return dmacclSuccess;
  }
  dmacclComm_t o = owner(comm);
  int op = ownerRank(comm, peer), me = ownerRank(comm, comm->rank);
  if (ref->kind == CORE_REF_MEM) {
    coreMem *m = findById(o, ref->id);
    if (!m)
      return coreError(comm, dmacclInvalidUsage,
                       "rank %d used a buffer of dmacclMemAlloc call #%llu, which this rank (%d) "
                       "has already freed",
                       op, (unsigned long long)ref->id, me);
    *addr = m->mine + ((ptrdiff_t)op - me) * (ptrdiff_t)m->stride + ref->off;
    return dmacclSuccess;
  }
  dmacclResult_t rc = o->exec->importBuf(o, op, ref, addr);
  if (rc != dmacclSuccess && o != comm) coreError(comm, rc, "%s", coreLastError(o));
  return rc;
}

static dmacclResult_t memAlloc(dmacclComm_t comm, size_t size, void **ptr) {
  const char *call = "dmacclMemAlloc";
  dmacclResult_t rc;
  if (!ptr) return coreError(comm, dmacclInvalidArgument, "%s: ptr is NULL", call);
  if (size == 0) return coreError(comm, dmacclInvalidArgument, "%s: size is 0", call);
  /* Every rank maps every rank's part: nranks parts must fit, rounded up. */
  if (size > (size_t)PTRDIFF_MAX / (size_t)comm->nranks - ((size_t)1 << 30))
    return coreError(comm, dmacclInvalidArgument,
                     "%s: size %zu is too large (%d ranks' parts of it must fit the address space)",
                     call, size, comm->nranks);
  if (coreGroupActive())
    return coreError(comm, dmacclInvalidUsage, "%s: not allowed inside a group", call);
  coreMem *m = calloc(1, sizeof(*m));
  if (!m) return coreError(comm, dmacclSystemError, "%s: out of memory", call);
  m->id = ++comm->memCount;
  m->size = size;
  rc = comm->exec->memAlloc(comm, size, m);
  if (rc != dmacclSuccess) {
    free(m);
    return rc;
  }
  pthread_mutex_lock(&comm->memLock);
  m->next = comm->mems;
  comm->mems = m;
  pthread_mutex_unlock(&comm->memLock);
  *ptr = m->mine;
  CORE_INFO("%s: %zu bytes at %p (allocation #%llu, stride %zu)", call, size, (void *)m->mine,
            (unsigned long long)m->id, m->stride);
  return dmacclSuccess;
}

static dmacclResult_t memFree(dmacclComm_t comm, void *ptr) {
  const char *call = "dmacclMemFree";
  if (!ptr) return dmacclSuccess; /* as free(NULL) */
  coreMem *m = NULL;
  pthread_mutex_lock(&comm->memLock);
  for (coreMem **pp = &comm->mems; *pp; pp = &(*pp)->next)
    if ((*pp)->mine == ptr) {
      m = *pp;
      *pp = m->next;
      break;
    }
  pthread_mutex_unlock(&comm->memLock);
  if (!m)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: %p is not the start of a dmacclMemAlloc allocation of this communicator",
                     call, ptr);
  /* Operations still queued may use it: let them finish first. */
  coreWaitLaunched(comm, comm->posted);
  comm->exec->sync(comm, comm->posted);
  comm->exec->memFree(comm, m);
  free(m);
  return dmacclSuccess;
}

/* Both may block (collective allocation, waiting for queued work): the call
 * counts as a user of comm, so destroy or abort elsewhere waits for it. */
dmacclResult_t dmacclMemAlloc(dmacclComm_t comm, size_t size, void **ptr) {
  dmacclResult_t rc = coreEnter(comm, "dmacclMemAlloc");
  if (rc != dmacclSuccess) return rc;
  rc = memAlloc(comm, size, ptr);
  coreLeave(comm);
  return rc;
}

dmacclResult_t dmacclMemFree(dmacclComm_t comm, void *ptr) {
  dmacclResult_t rc = coreEnter(comm, "dmacclMemFree");
  if (rc != dmacclSuccess) return rc;
  rc = memFree(comm, ptr);
  coreLeave(comm);
  return rc;
}

void coreMemReleaseAll(dmacclComm_t comm) {
  coreMem *m = comm->mems;
  comm->mems = NULL;
  while (m) {
    coreMem *next = m->next;
    comm->exec->memFree(comm, m);
    free(m);
    m = next;
  }
}

/* One more registration of handle on comm (its count, or a new entry): 0, or
 * -1 out of memory. Under memLock, grown and appended in one hold. */
static int regAdd(dmacclComm_t comm, void *h) {
  pthread_mutex_lock(&comm->memLock);
  int i = 0;
  while (i < comm->nregs && comm->regs[i].handle != h) i++;
  if (i == comm->nregs && comm->nregs == comm->capregs) {
    int cap = comm->capregs ? 2 * comm->capregs : 8;
    struct coreReg *m = realloc(comm->regs, (size_t)cap * sizeof(*m));
    if (!m) {
      pthread_mutex_unlock(&comm->memLock);
      return -1;
    }
    comm->regs = m, comm->capregs = cap;
  }
  if (i == comm->nregs) comm->regs[comm->nregs++] = (struct coreReg){h, 0};
  comm->regs[i].count++;
  pthread_mutex_unlock(&comm->memLock);
  return 0;
}

dmacclResult_t dmacclCommRegister(dmacclComm_t comm, void *buff, size_t size, void **handle) {
  const char *call = "dmacclCommRegister";
  dmacclResult_t rc = coreCheckComm(comm, call);
  if (rc != dmacclSuccess) return rc;
  if (!buff) return coreError(comm, dmacclInvalidArgument, "%s: buff is NULL", call);
  if (!handle) return coreError(comm, dmacclInvalidArgument, "%s: handle is NULL", call);
  if (size == 0) return coreError(comm, dmacclInvalidArgument, "%s: size is 0", call);
  /* Every rank maps every rank's part: nranks parts must fit, rounded up. */
  if (size > (size_t)PTRDIFF_MAX / (size_t)comm->nranks - ((size_t)1 << 30))
    return coreError(comm, dmacclInvalidArgument,
                     "%s: size %zu is too large (%d ranks' parts of it must fit the address space)",
                     call, size, comm->nranks);
  rc = comm->exec->checkBuffer(comm, buff, size, call, "buff");
  if (rc != dmacclSuccess) return rc;
  void *h = NULL;
  rc = comm->exec->registerBuf(comm, buff, size, &h);
  if (rc != dmacclSuccess) return rc;
  if (regAdd(comm, h) != 0) { /* kept nowhere: undone */
    comm->exec->deregisterBuf(comm, h);
    return coreError(comm, dmacclSystemError, "%s: out of memory", call);
  }
  *handle = h;
  return dmacclSuccess;
}

/* Refused before the executor sees it: a handle this communicator's
 * dmacclCommRegister did not return, or one deregistered as many times as
 * it was registered (every executor; the host's and one process's CUDA
 * handles are the pointers themselves, which the executor cannot check). */
dmacclResult_t dmacclCommDeregister(dmacclComm_t comm, void *handle) {
  const char *call = "dmacclCommDeregister";
  dmacclResult_t rc = coreCheckComm(comm, call);
  if (rc != dmacclSuccess) return rc;
  if (!handle) return coreError(comm, dmacclInvalidArgument, "%s: handle is NULL", call);
  pthread_mutex_lock(&comm->memLock);
  int i = 0;
  while (i < comm->nregs && comm->regs[i].handle != handle) i++;
  int known = i < comm->nregs;
  if (known && --comm->regs[i].count == 0) comm->regs[i] = comm->regs[--comm->nregs];
  pthread_mutex_unlock(&comm->memLock);
  if (!known)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: handle %p was not returned by dmacclCommRegister on this communicator "
                     "(or was deregistered as often as it was registered)",
                     call, handle);
  rc = comm->exec->deregisterBuf(comm, handle);
  if (rc != dmacclSuccess) regAdd(comm, handle); /* refused: still registered */
  return rc;
}
