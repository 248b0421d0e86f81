/*
 * Memory of the CUDA executor across processes:
 *   - VMM strided mappings: each rank creates one part with cuMemCreate,
 *     exported as a POSIX file descriptor; the descriptors travel over the
 *     bootstrap socket and every rank maps every part at base + r*stride.
 *     Used for the flag words and for dmacclMemAlloc.
 *   - CUDA IPC caches for cudaMalloc buffers: the exporter keeps one handle
 *     per allocation (keyed by CUDA's buffer id, never reused for a new
 *     allocation), importers keep one mapping per (peer, buffer id); a peer's
 *     new allocation over the range of an old one evicts the old mapping.
 */
#include "cuda_internal.h"
#include "../boot/boot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cudaVmmRelease(cudaVmm *v) {
  const cudaDriver *d = cudaDriverGet();
  if (!v->handles) return;
  for (int r = 0; r < v->nranks; r++)
    if (v->handles[r]) {
      d->memUnmap(v->base + (size_t)r * v->stride, v->part);
      d->memRelease(v->handles[r]);
    }
  if (v->base) d->addressFree(v->base, v->stride * (size_t)v->nranks);
  free(v->handles);
  memset(v, 0, sizeof(*v));
}

dmacclResult_t cudaVmmCreate(dmacclComm_t comm, size_t want, cudaVmm *v, const char *call) {
  const cudaDriver *d = cudaDriverGet();
  coreClique *c = comm->clique;
  int n = comm->nranks, me = comm->rank;
  dmacclResult_t rc = dmacclSuccess;
  char err[256];
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = comm->device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  CUmemGenericAllocationHandle mine = 0;
  int fd = -1, *fds = calloc((size_t)n, sizeof(int));
  memset(v, 0, sizeof(*v));
  v->nranks = n;
  v->handles = calloc((size_t)n, sizeof(*v->handles));
  if (!fds || !v->handles) {
    free(fds);
    free(v->handles);
    v->handles = NULL;
    return coreError(comm, dmacclSystemError, "%s: out of memory", call);
  }
  CUresult cr = d->granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  size_t part = cr == CUDA_SUCCESS ? (want + gran - 1) / gran * gran : 0;
  if (cr == CUDA_SUCCESS) cr = d->memCreate(&mine, part, &prop, 0);
  if (cr == CUDA_SUCCESS) cr = d->memExport(&fd, mine, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  /* Every rank says whether it got this far and how big its part is, so a
   * failure or a size disagreement fails every rank at once. */
  uint64_t say[2] = {cr == CUDA_SUCCESS, part}, *all = calloc((size_t)n * 2, sizeof(uint64_t));
  if (!all) {
    rc = coreError(comm, dmacclSystemError, "%s: out of memory", call);
    goto out;
  }
  rc = bootAllGather(c->boot, say, all, sizeof(say), err, sizeof(err));
  if (rc != dmacclSuccess) {
    rc = coreError(comm, rc, "%s: %s", call, err);
    goto out;
  }
  if (cr != CUDA_SUCCESS) {
    rc = cuFail(comm, "cuMemCreate/cuMemExportToShareableHandle (POSIX fd)", cr);
    goto out;
  }
  for (int r = 0; r < n; r++) {
    if (!all[2 * r]) {
      rc = coreError(comm, dmacclRemoteError, "%s: rank %d could not create its device memory",
                     call, r);
      goto out;
    }
    if (all[2 * r + 1] != part) {
      rc =
          coreError(comm, dmacclInvalidArgument,
                    "%s: rank %d asked for %llu bytes (rounded), rank %d for %zu: sizes must agree",
                    call, r, (unsigned long long)all[2 * r + 1], me, part);
      goto out;
    }
  }
  rc = bootAllGatherFd(c->boot, fd, fds, err, sizeof(err));
  if (rc != dmacclSuccess) {
    rc = coreError(comm, rc, "%s: %s", call, err);
    goto out;
  }
  v->part = v->stride = part;
  CU_TRY(comm, d->addressReserve(&v->base, part * (size_t)n, gran, 0, 0));
  for (int r = 0; r < n; r++) {
    CUmemGenericAllocationHandle h = mine;
    if (r != me)
      CU_TRY(comm,
             d->memImport(&h, (void *)(uintptr_t)fds[r], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    else
      mine = 0; /* now owned by v */
    v->handles[r] = h;
    CU_TRY(comm, d->memMap(v->base + (size_t)r * part, part, 0, h, 0));
  }
  CUmemAccessDesc acc;
  memset(&acc, 0, sizeof(acc));
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = comm->device;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_TRY(comm, d->memSetAccess(v->base, part * (size_t)n, &acc, 1));
out:
  free(all);
  if (fd >= 0) close(fd);
  for (int r = 0; r < n; r++)
    if (fds[r] > 0) close(fds[r]);
  free(fds);
  if (mine) d->memRelease(mine);
  if (rc != dmacclSuccess) {
    /* Unmapping handles that were never mapped fails harmlessly. */
    cudaVmmRelease(v);
  }
  return rc;
}

dmacclResult_t cudaMemAllocImpl(dmacclComm_t comm, size_t size, coreMem *m) {
  int prev = cudaEnterDevice(comm->device);
  dmacclResult_t rc = dmacclSuccess;
  if (!comm->clique->mp) {
    cudaError_t e = cudaMalloc((void **)&m->mine, size);
    if (e != cudaSuccess) rc = cudaFail(comm, "dmacclMemAlloc: cudaMalloc", e);
  } else {
    cudaVmm *v = calloc(1, sizeof(*v));
    if (!v) {
      rc = coreError(comm, dmacclSystemError, "dmacclMemAlloc: out of memory");
    } else if ((rc = cudaVmmCreate(comm, size, v, "dmacclMemAlloc")) != dmacclSuccess) {
      free(v);
    } else {
      m->mine = (char *)(uintptr_t)(v->base + (size_t)comm->rank * v->stride);
      m->stride = v->stride;
      m->exec = v;
    }
  }
  cudaLeaveDevice(prev, comm->device);
  return rc;
}

void cudaMemFreeImpl(dmacclComm_t comm, coreMem *m) {
  int prev = cudaEnterDevice(comm->device);
  if (!comm->clique->mp) {
    cudaFree(m->mine);
  } else {
    cudaVmmRelease(m->exec);
    free(m->exec);
  }
  cudaLeaveDevice(prev, comm->device);
}

/* The allocation that holds ptr: its base, size and CUDA buffer id. */
static dmacclResult_t allocationOf(dmacclComm_t comm, const void *ptr, CUdeviceptr *base,
                                   size_t *size, unsigned long long *id, const char *call,
                                   const char *arg) {
  const cudaDriver *d = cudaDriverGet();
  CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                  CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_BUFFER_ID};
  void *vals[3] = {base, size, id};
  CUresult r = d->pointerGetAttributes(3, attrs, vals, (CUdeviceptr)(uintptr_t)ptr);
  if (r != CUDA_SUCCESS || !*base)
    return coreError(comm, dmacclInvalidArgument, "%s: %s %p: CUDA does not know its allocation",
                     call, arg, ptr);
  return dmacclSuccess;
}

static ipcExport *exportLookup(cudaState *s, unsigned long long id) {
  for (ipcExport *e = s->exports; e; e = e->next)
    if (e->bufferId == id) return e;
  return NULL;
}

/* Finds or makes the export record of ptr's allocation. ipcLock held. */
static dmacclResult_t exportOf(dmacclComm_t comm, const void *ptr, ipcExport **out,
                               const char *call, const char *arg) {
  cudaState *s = cudaStateOf(comm);
  CUdeviceptr base = 0;
  size_t size = 0;
  unsigned long long id = 0;
  dmacclResult_t rc = allocationOf(comm, ptr, &base, &size, &id, call, arg);
  if (rc != dmacclSuccess) return rc;
  ipcExport *e = exportLookup(s, id);
  if (!e) {
    e = calloc(1, sizeof(*e));
    if (!e) return coreError(comm, dmacclSystemError, "%s: out of memory", call);
    int prev = cudaEnterDevice(s->device);
    cudaError_t ce = cudaIpcGetMemHandle(&e->handle, (void *)(uintptr_t)base);
    cudaLeaveDevice(prev, s->device);
    if (ce != cudaSuccess) {
      cudaGetLastError();
      free(e);
      return coreError(comm, dmacclInvalidArgument,
                       "%s: %s %p cannot be shared with other processes (cudaIpcGetMemHandle: "
                       "%s); use memory from cudaMalloc or dmacclMemAlloc",
                       call, arg, ptr, cudaGetErrorString(ce));
    }
    e->bufferId = id;
    e->base = base;
    e->size = size;
    e->next = s->exports;
    s->exports = e;
    CORE_INFO("rank %d: exported allocation %p (%zu bytes, buffer id %llu) for IPC", comm->rank,
              (void *)(uintptr_t)base, size, id);
  }
  *out = e;
  return dmacclSuccess;
}

dmacclResult_t cudaExportBuf(dmacclComm_t comm, const void *ptr, size_t bytes, coreBufRef *ref,
                             const char *call, const char *arg) {
  (void)bytes; /* the range was checked by checkBuffer */
  cudaState *s = cudaStateOf(comm);
  ipcExport *e = NULL;
  pthread_mutex_lock(&s->ipcLock);
  dmacclResult_t rc = exportOf(comm, ptr, &e, call, arg);
  if (rc == dmacclSuccess) {
    ref->kind = CORE_REF_IPC;
    ref->id = e->bufferId;
    ref->off = (uint64_t)((uintptr_t)ptr - e->base);
    ref->base = e->base;
    ref->size = e->size;
    memcpy(ref->handle, &e->handle, sizeof(e->handle));
  }
  pthread_mutex_unlock(&s->ipcLock);
  return rc;
}

dmacclResult_t cudaImportBuf(dmacclComm_t comm, int peer, const coreBufRef *ref, void **addr) {
  cudaState *s = cudaStateOf(comm);
  dmacclResult_t rc = dmacclSuccess;
  pthread_mutex_lock(&s->ipcLock);
  ipcImport *hit = NULL;
  for (ipcImport **pp = &s->imports; *pp;) {
    ipcImport *i = *pp;
    if (i->peer == peer && i->bufferId == ref->id) {
      hit = i;
      break;
    }
    /* The peer's allocation this one overlaps was freed: never use its
     * mapping again. It is closed later (cudaIpcCloseStale): closing
     * synchronizes the device, and here the caller's stream may be waiting
     * for the very launch that runs this import. */
    if (i->peer == peer && i->base < ref->base + ref->size && ref->base < i->base + i->size) {
      CORE_INFO("rank %d: rank %d's buffer id %llu was freed: its mapping is retired", comm->rank,
                peer, i->bufferId);
      *pp = i->next;
      i->next = s->stale;
      s->stale = i;
      continue;
    }
    pp = &i->next;
  }
  if (!hit) {
    hit = calloc(1, sizeof(*hit));
    if (!hit) {
      rc = coreError(comm, dmacclSystemError, "out of memory importing rank %d's buffer", peer);
      goto out;
    }
    cudaIpcMemHandle_t h;
    memcpy(&h, ref->handle, sizeof(h));
    int prev = cudaEnterDevice(s->device);
    cudaError_t e = cudaIpcOpenMemHandle((void **)&hit->mapped, h, cudaIpcMemLazyEnablePeerAccess);
    cudaLeaveDevice(prev, s->device);
    if (e != cudaSuccess) {
      cudaGetLastError();
      free(hit);
      rc = coreError(comm, dmacclUnhandledCudaError,
                     "cudaIpcOpenMemHandle of rank %d's allocation (%llu bytes): %s", peer,
                     (unsigned long long)ref->size, cudaGetErrorString(e));
      goto out;
    }
    hit->peer = peer;
    hit->bufferId = ref->id;
    hit->base = ref->base;
    hit->size = ref->size;
    hit->next = s->imports;
    s->imports = hit;
    CORE_INFO("rank %d: opened rank %d's allocation (buffer id %llu, %llu bytes)", comm->rank, peer,
              (unsigned long long)ref->id, (unsigned long long)ref->size);
  }
  *addr = hit->mapped + ref->off;
out:
  pthread_mutex_unlock(&s->ipcLock);
  return rc;
}

dmacclResult_t cudaRegisterBuf(dmacclComm_t comm, void *ptr, size_t size, void **handle) {
  (void)size;
  if (!comm->clique->mp || coreMemFind(comm, ptr, size)) {
    *handle = ptr; /* reachable as it is */
    return dmacclSuccess;
  }
  cudaState *s = cudaStateOf(comm);
  ipcExport *e = NULL;
  pthread_mutex_lock(&s->ipcLock);
  dmacclResult_t rc = exportOf(comm, ptr, &e, "dmacclCommRegister", "buff");
  if (rc == dmacclSuccess) {
    e->registered++;
    *handle = e;
  }
  pthread_mutex_unlock(&s->ipcLock);
  return rc;
}

dmacclResult_t cudaDeregisterBuf(dmacclComm_t comm, void *handle) {
  if (!comm->clique->mp) return dmacclSuccess;
  cudaState *s = cudaStateOf(comm);
  dmacclResult_t rc = dmacclSuccess;
  pthread_mutex_lock(&s->ipcLock);
  ipcExport *e = s->exports;
  while (e && (void *)e != handle) e = e->next;
  if (!e) {
    if (!coreMemFind(comm, handle, 1))
      rc = coreError(comm, dmacclInvalidArgument,
                     "dmacclCommDeregister: handle %p was not returned by dmacclCommRegister on "
                     "this communicator (or was deregistered already)",
                     handle);
  } else if (e->registered > 0) {
    e->registered--; /* the handle stays cached for unregistered use */
  } else {
    rc = coreError(comm, dmacclInvalidArgument,
                   "dmacclCommDeregister: handle %p is not registered (deregistered twice?)",
                   handle);
  }
  pthread_mutex_unlock(&s->ipcLock);
  return rc;
}

void cudaIpcCloseStale(dmacclComm_t comm) {
  cudaState *s = cudaStateOf(comm);
  pthread_mutex_lock(&s->ipcLock);
  ipcImport *list = s->stale;
  s->stale = NULL;
  pthread_mutex_unlock(&s->ipcLock);
  if (!list) return;
  int prev = cudaEnterDevice(s->device);
  for (ipcImport *i = list, *n; i; i = n) {
    n = i->next;
    cudaIpcCloseMemHandle(i->mapped);
    free(i);
  }
  cudaLeaveDevice(prev, s->device);
}

void cudaIpcRelease(dmacclComm_t comm) {
  cudaState *s = cudaStateOf(comm);
  cudaIpcCloseStale(comm);
  int prev = cudaEnterDevice(s->device);
  for (ipcImport *i = s->imports, *n; i; i = n) {
    n = i->next;
    cudaIpcCloseMemHandle(i->mapped);
    free(i);
  }
  for (ipcExport *e = s->exports, *n; e; e = n) {
    n = e->next;
    free(e);
  }
  s->imports = NULL;
  s->exports = NULL;
  cudaLeaveDevice(prev, s->device);
}
