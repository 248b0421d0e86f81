/*
 * Live handles. Every communicator and persistent request is in a registry
 * from creation until it is freed, so a call given a destroyed or made-up
 * handle is answered with dmacclInvalidArgument instead of touching freed
 * memory. A call that may block (collectives, synchronize, memory) also
 * counts itself as a user of its communicator, and destroy or abort waits
 * for the users to leave before freeing it: abort from another thread makes
 * them return first (they see the abort), then frees.
 */
#include "core.h"

#include <stdlib.h>
#include <time.h>

static pthread_mutex_t liveLock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
  const void **v;
  size_t n, cap;
} handleSet;

static handleSet liveComms, liveRequests;

static int setAdd(handleSet *s, const void *h) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    const void **v = realloc(s->v, cap * sizeof(*v));
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = h;
  return 0;
}

static int setFind(const handleSet *s, const void *h) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == h) return (int)i;
  return -1;
}

static int setRemove(handleSet *s, const void *h) {
  int i = setFind(s, h);
  if (i < 0) return -1;
  s->v[i] = s->v[--s->n];
  return 0;
}

static dmacclResult_t notLive(const void *comm, const char *call) {
  return coreError(NULL, dmacclInvalidArgument,
                   "%s: comm %p is not a live communicator (destroyed, or never created)", call,
                   comm);
}

dmacclResult_t coreRegisterComm(dmacclComm_t comm) {
  pthread_mutex_lock(&liveLock);
  int bad = setAdd(&liveComms, comm);
  pthread_mutex_unlock(&liveLock);
  return bad ? coreError(NULL, dmacclSystemError, "out of memory registering a communicator")
             : dmacclSuccess;
}

int coreUnregisterComm(dmacclComm_t comm) {
  pthread_mutex_lock(&liveLock);
  int bad = setRemove(&liveComms, comm);
  pthread_mutex_unlock(&liveLock);
  return bad ? -1 : 0;
}

int coreCommIsLive(dmacclComm_t comm) {
  pthread_mutex_lock(&liveLock);
  int live = comm && setFind(&liveComms, comm) >= 0;
  pthread_mutex_unlock(&liveLock);
  return live;
}

dmacclResult_t coreCheckComm(dmacclComm_t comm, const char *call) {
  if (!comm) return coreError(NULL, dmacclInvalidArgument, "%s: comm is NULL", call);
  if (!coreCommIsLive(comm)) return notLive(comm, call);
  return dmacclSuccess;
}

dmacclResult_t coreEnter(dmacclComm_t comm, const char *call) {
  if (!comm) return coreError(NULL, dmacclInvalidArgument, "%s: comm is NULL", call);
  pthread_mutex_lock(&liveLock);
  int live = setFind(&liveComms, comm) >= 0;
  if (live) __atomic_add_fetch(&comm->users, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&liveLock);
  return live ? dmacclSuccess : notLive(comm, call);
}

void coreLeave(dmacclComm_t comm) {
  __atomic_sub_fetch(&comm->users, 1, __ATOMIC_ACQ_REL);
}

void coreWaitUsers(dmacclComm_t comm) {
  while (__atomic_load_n(&comm->users, __ATOMIC_ACQUIRE) > 0) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
}

dmacclResult_t coreRegisterRequest(const void *request) {
  pthread_mutex_lock(&liveLock);
  int bad = setAdd(&liveRequests, request);
  pthread_mutex_unlock(&liveLock);
  return bad ? coreError(NULL, dmacclSystemError, "out of memory registering a request")
             : dmacclSuccess;
}

int coreRequestIsLive(const void *request, int unregister) {
  pthread_mutex_lock(&liveLock);
  int live = request && setFind(&liveRequests, request) >= 0;
  if (live && unregister) setRemove(&liveRequests, request);
  pthread_mutex_unlock(&liveLock);
  return live;
}
