/* Result strings and the "last error" sentences. */
#include "core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char threadLastError[512];
static _Thread_local char threadCommError[512]; /* coreLastError's copy */

const char *coreLastError(dmacclComm_t comm) {
  pthread_mutex_lock(&comm->errLock);
  memcpy(threadCommError, comm->lastError, sizeof(threadCommError));
  pthread_mutex_unlock(&comm->errLock);
  return threadCommError;
}

const char *dmacclGetErrorString(dmacclResult_t result) {
  switch (result) {
#define DMACCL_RESULT_STR_(name, value, msg)                                                       \
  case name: return msg;
    DMACCL_RESULT_LIST(DMACCL_RESULT_STR_)
#undef DMACCL_RESULT_STR_
  default: return "unknown result code";
  }
}

const char *dmacclCommGetLastError(dmacclComm_t comm) {
  if (!comm) return threadLastError;
  if (!coreCommIsLive(comm)) {
    coreError(NULL, dmacclInvalidArgument,
              "dmacclCommGetLastError: comm %p is not a live communicator", (void *)comm);
    return threadLastError;
  }
  return coreLastError(comm);
}

dmacclResult_t dmacclCommGetAsyncError(dmacclComm_t comm, dmacclResult_t *asyncError) {
  dmacclResult_t rc = coreCheckComm(comm, "dmacclCommGetAsyncError");
  if (rc != dmacclSuccess) return rc;
  if (!asyncError)
    return coreError(comm, dmacclInvalidArgument, "dmacclCommGetAsyncError: asyncError is NULL");
  dmacclResult_t e = __atomic_load_n(&comm->asyncError, __ATOMIC_ACQUIRE);
  if (e == dmacclSuccess) e = __atomic_load_n(&comm->opError, __ATOMIC_ACQUIRE);
  *asyncError = e != dmacclSuccess ? e : coreP2pAsyncError(comm);
  return dmacclSuccess;
}

static void record(dmacclComm_t comm, const char *fmt, va_list ap) {
  vsnprintf(threadLastError, sizeof(threadLastError), fmt, ap);
  if (comm) {
    pthread_mutex_lock(&comm->errLock);
    memcpy(comm->lastError, threadLastError, sizeof(comm->lastError));
    pthread_mutex_unlock(&comm->errLock);
  }
  if (coreLogLevelGet() >= CORE_LOG_WARN) coreLog(CORE_LOG_WARN, "%s", threadLastError);
}

dmacclResult_t coreError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(comm, fmt, ap);
  va_end(ap);
  return code;
}

/* Records the sentence, and code in *slot unless an error is there already. */
static void keepFirst(dmacclComm_t comm, dmacclResult_t *slot, dmacclResult_t code, const char *fmt,
                      va_list ap) {
  record(comm, fmt, ap);
  dmacclResult_t none = dmacclSuccess;
  __atomic_compare_exchange_n(slot, &none, code, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

void coreSetAsyncError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  keepFirst(comm, &comm->asyncError, code, fmt, ap);
  va_end(ap);
}

void coreSetOpError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  keepFirst(comm, &comm->opError, code, fmt, ap);
  va_end(ap);
}

dmacclResult_t coreTakeErrors(dmacclComm_t comm) {
  dmacclResult_t e = __atomic_load_n(&comm->asyncError, __ATOMIC_ACQUIRE);
  if (e != dmacclSuccess) return e;
  return __atomic_exchange_n(&comm->opError, dmacclSuccess, __ATOMIC_ACQ_REL);
}
