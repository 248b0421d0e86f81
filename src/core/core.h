/* Internal definitions shared by the core layer and the executors. */
#ifndef DMACCL_CORE_H_
#define DMACCL_CORE_H_

#include "dmaccl.h"
#include "../plan/plan.h"

#include <pthread.h>
#include <stdint.h>

/* Operations a rank may have posted ahead of the slowest rank of its set. */
#define CORE_BOARD_DEPTH 64
#define CORE_MAX_RANKS 256

struct execOps;

/* One rank's call, as recorded at the call and used at launch. */
typedef struct coreOp {
  dmacclComm_t comm;
  planColl coll;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  dmacclDataType_t datatype;
  size_t chunkBytes; /* bytes of one block */
  int inPlace;
  cudaStream_t stream;
  uint64_t seq; /* 1-based position in the comm's sequence: the epoch */
} coreOp;

/* Ranks' calls for one sequence number, gathered until every rank posted. */
typedef struct {
  uint64_t seq;
  int nposted;
  coreOp *ops; /* [nranks] */
} coreBoardSlot;

/* The communicators made by one dmacclCommInitAll. */
typedef struct coreClique {
  unsigned long id;
  int nranks;
  dmacclComm_t *comms;
  int alive;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  coreBoardSlot slots[CORE_BOARD_DEPTH];
  uint64_t nextLaunch; /* lowest sequence number not yet launched */
  planTable table;     /* algorithm selection, one for all ranks */
} coreClique;

struct dmacclComm {
  int rank, nranks, device;
  dmacclExecutor_t executor;
  const struct execOps *exec;
  void *execState;
  coreClique *clique;
  planSchedule sched; /* reused by the launcher (under the clique lock) */
  uint64_t posted;    /* sequence numbers posted */
  dmacclResult_t asyncError;
  char lastError[512];
};

/* Errors (errors.c). coreError records a sentence on comm (may be NULL) and on
 * the calling thread and returns code. */
dmacclResult_t coreError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void coreSetAsyncError(dmacclComm_t comm, dmacclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Data types (datatype.c). */
size_t coreTypeSize(dmacclDataType_t t); /* 0 for an invalid type */
const char *coreTypeName(dmacclDataType_t t);

/* Parameters and logging (param.c). */
typedef enum { CORE_LOG_NONE = 0, CORE_LOG_WARN = 1, CORE_LOG_INFO = 2 } coreLogLevel;
coreLogLevel coreLogLevelGet(void);
void coreLog(coreLogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define CORE_INFO(...)                                                                             \
  do {                                                                                             \
    if (coreLogLevelGet() >= CORE_LOG_INFO) coreLog(CORE_LOG_INFO, __VA_ARGS__);                   \
  } while (0)
const char *coreParamString(const char *name); /* getenv with the table's default */
void coreParamPrintAll(void *file);            /* FILE*: name, value, doc of every parameter */

/* Argument checks (argcheck.c). */
dmacclResult_t coreCheckComm(dmacclComm_t comm, const char *call);
dmacclResult_t coreCheckCollArgs(coreOp *op, const char *call);

/* Posting and launching (launch.c). */
dmacclResult_t corePost(coreOp *op);
dmacclResult_t coreWaitLaunched(dmacclComm_t comm);

/* Groups (group.c). */
int coreGroupActive(void);
dmacclResult_t coreGroupRecord(const coreOp *op);
dmacclResult_t coreCheckSoloUse(dmacclComm_t comm, const char *call);

#endif
