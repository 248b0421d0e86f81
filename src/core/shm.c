/*
 * Shared memory of a multi-process set: every rank creates one part
 * (memfd), the parts travel as file descriptors over the bootstrap, and every
 * rank maps all of them into one reserved range at a fixed stride. Used for
 * the shared board and for the host executor's dmacclMemAlloc.
 */
#define _GNU_SOURCE
#include "core.h"
#include "../boot/boot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void coreShmRelease(coreShm *m) {
  if (m->base) munmap(m->base, m->stride * (size_t)m->nranks);
  memset(m, 0, sizeof(*m));
}

dmacclResult_t coreShmCreate(struct bootState *boot, int nranks, size_t size, coreShm *out,
                             char *err, size_t errlen) {
  long page = sysconf(_SC_PAGESIZE);
  /* Every rank computes the same verdict: no exchange needed to agree. */
  if (size > (size_t)PTRDIFF_MAX / (size_t)nranks - (size_t)page) {
    snprintf(err, errlen, "%zu bytes per rank times %d ranks does not fit the address space", size,
             nranks);
    return dmacclInvalidArgument;
  }
  size_t stride = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
  if (stride == 0) stride = (size_t)page;
  int fd = memfd_create("dmaccl", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)stride) != 0) {
    snprintf(err, errlen, "shared memory of %zu bytes: %s", stride, strerror(errno));
    if (fd >= 0) close(fd);
    fd = -1; /* peers still need our answer: send a stand-in and fail after */
  }
  int *fds = malloc((size_t)nranks * sizeof(int));
  if (!fds) {
    if (fd >= 0) close(fd);
    snprintf(err, errlen, "out of memory");
    return dmacclSystemError;
  }
  /* Every rank must hand over a descriptor: a failed rank sends /dev/null
   * and everyone learns of it from the size check below. */
  int sendFd = fd >= 0 ? fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
  dmacclResult_t rc = bootAllGatherFd(boot, sendFd, fds, err, errlen);
  if (sendFd >= 0) close(sendFd);
  char *base = NULL;
  if (rc == dmacclSuccess) {
    base = mmap(NULL, stride * (size_t)nranks, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      base = NULL;
      rc = dmacclSystemError;
      snprintf(err, errlen, "reserving %zu bytes of address space: %s", stride * (size_t)nranks,
               strerror(errno));
    }
  }
  for (int r = 0; r < nranks && rc == dmacclSuccess; r++) {
    void *p = mmap(base + (size_t)r * stride, stride, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED, fds[r], 0);
    if (p == MAP_FAILED) {
      rc = dmacclSystemError;
      snprintf(err, errlen, "mapping rank %d's shared memory: %s (did that rank fail?)", r,
               strerror(errno));
    }
  }
  if (rc == dmacclSuccess)
    for (int r = 0; r < nranks && fd >= 0; r++)
      /* A rank that failed sent /dev/null, whose mapping raises SIGBUS on
       * use: detect it now with a size check instead. */
      if (lseek(fds[r], 0, SEEK_END) < (off_t)stride) {
        rc = dmacclSystemError;
        snprintf(err, errlen, "rank %d could not create its shared memory", r);
      }
  if (fd < 0 && rc == dmacclSuccess) rc = dmacclSystemError; /* err already says why */
  for (int r = 0; r < nranks; r++)
    if (fds[r] >= 0) close(fds[r]);
  free(fds);
  if (rc != dmacclSuccess) {
    if (base) munmap(base, stride * (size_t)nranks);
    return rc;
  }
  out->base = base;
  out->size = size;
  out->stride = stride;
  out->nranks = nranks;
  return dmacclSuccess;
}
