/* Runs collectives of the table (tools/common/colls.h) on every rank of a set
 * with random data, poisoned outputs and guard bytes, and checks every byte
 * against the table's reference. Works on both executors. The sendrecv row
 * (a ring of dmacclSend/dmacclRecv) is one of them; it needs 2 ranks or more
 * (collMinRanks), and callers that iterate the table skip it below. */
#ifndef DMACCL_TEST_COLLCHECK_H_
#define DMACCL_TEST_COLLCHECK_H_

#include "dmaccl.h"
#include "common/colls.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CC_MAXR 16
#define CC_GUARD 256
#define CC_POISON 0xA5

typedef struct {
  int gpu;                      /* 0: host executor, 1: CUDA executor */
  int dev[CC_MAXR];             /* device of each rank (gpu only) */
  cudaStream_t stream[CC_MAXR]; /* the caller's stream of each rank (gpu only) */
} ccEnv;

/* Creates one stream per rank on the CUDA executor. */
int ccEnvInit(ccEnv *env, int gpu, dmacclComm_t *comms, int n);
void ccEnvFini(ccEnv *env, int n);

/* One collective of a test. */
typedef struct {
  collId coll;
  dmacclDataType_t type;
  dmacclRedOp_t op;          /* reducing collectives */
  size_t count;              /* uniform forms: the count argument; V forms: the largest block */
  int root;                  /* rooted collectives */
  int inPlace;               /* the in-place form (collectives that have one) */
  int persistent;            /* Init form (sendrecv: two requests), started by ccOpIssue */
  int nullUnused;            /* NULL for the buffers a rank does not use (else poisoned ones) */
  uint64_t seed;             /* the V layout (fixed for the op's life) and the first data */
  const collVArrays *arrays; /* V forms: these arrays instead of random ones from seed */
  int notify; /* AllGather(V), eager: the ...Notify call, its arrival words checked */
} ccCase;

/* A collective's buffers on every rank (ccOpNew), their contents
 * (ccOpFill), its calls (ccOpIssue) and the check (ccOpCheck). */
typedef struct ccOp ccOp;
/* NULL (and a line) on failure, fewer ranks than collMinRanks(c->coll) included. */
ccOp *ccOpNew(ccEnv *env, int n, const ccCase *c);
/* Random inputs (sanitized for reductions of floating types), poisoned
 * outputs and guards, and the expected bytes. */
int ccOpFill(ccOp *o, uint64_t seed);
/* Rank r's call (collIssue): the eager call, or (persistent) the Init form on
 * the first call and collStart. The arrays of V forms are copies, overwritten
 * once the call returns (they must be read during the call only). */
dmacclResult_t ccOpIssue(ccOp *o, dmacclComm_t *comms, int r);
/* Downloads every buffer of every rank and compares every byte (guards,
 * gaps, unused buffers and unchanged inputs included). Returns the number of
 * wrong bytes (printing the first per buffer), or -1. */
long long ccOpCheck(ccOp *o);
/* Persistent: makes rank r's requests now (ccOpIssue then only starts them),
 * e.g. before a graph capture. Eager: nothing. (A sendrecv's first start
 * also makes the Send/Recv channels, which cannot be captured: run one
 * before capturing.) */
dmacclResult_t ccOpInit(ccOp *o, dmacclComm_t *comms, int r);
void ccOpFree(ccOp *o); /* frees its requests too */
const ccCase *ccOpCase(const ccOp *o);

/* Waits for every rank: its stream (gpu), then dmacclCommSynchronize.
 * Returns the first failure's code (and prints it). */
dmacclResult_t ccWait(ccEnv *env, dmacclComm_t *comms, int n);

/* Runs cases[0..k) in one group (each rank's calls in case order), waits and
 * checks; persistent cases are started twice with new data. Returns wrong
 * bytes, or -1 when a call failed. */
long long ccRunGroup(ccEnv *env, dmacclComm_t *comms, int n, const ccCase *cases, int k);
long long ccRunCase(ccEnv *env, dmacclComm_t *comms, int n, const ccCase *c);

/* The first form: AllGather or AlltoAll (or any collective: op Sum, root 0). */
long long ccRun(ccEnv *env, dmacclComm_t *comms, int n, collId coll, dmacclDataType_t type,
                size_t count, int inPlace, uint64_t seed);

/* "allgather float32 sum count 7 root 0 n=3 in place persistent" */
void ccDescribe(const ccCase *c, int n, char *buf, size_t len);

/* The GPUs of n ranks: rank r on GPU r % (GPUs found), so ranks share GPUs
 * when there are fewer GPUs than ranks. Returns the number of GPUs found. */
int ccDevices(int n, int *devs);

/* Creates n communicators (CUDA: on the GPUs of ccDevices) that use one
 * algorithm for every collective that takes it (ccAlgoTable); "auto" keeps
 * the built-in selection. Prints the error. */
dmacclResult_t ccInitAlgo(dmacclComm_t *comms, int n, int gpu, const char *algo);

/* The selection string naming algo for every collective that takes it
 * (docs/algorithms.md: movement ones all eight, alltoallv the push forms and stagell,
 * reductions stage and pull1), in the library's names only. Returns 1 when
 * coll takes algo; sendrecv takes what Broadcast takes, through the
 * broadcast entry (collInfo.select), and adds no entry of its own. */
int ccAlgoTakes(collId coll, const char *algo);
void ccAlgoTable(const char *algo, char *buf, size_t len);

/* The algorithm names, as dmacclConfig_t.algorithm and DMACCL_ALGO know them. */
extern const char *const ccAlgos[];
#define CC_NALGOS 15

/* A call that must fail with code and a message containing text, on comm and
 * on the calling thread (needs harness.h). */
#define EXPECT_ERR(call, code, comm, text)                                                         \
  do {                                                                                             \
    dmacclResult_t rc_ = (call);                                                                   \
    ASSERT_EQ_INT(rc_, code);                                                                      \
    ASSERT_CONTAINS(dmacclCommGetLastError(comm), text);                                           \
    ASSERT_CONTAINS(dmacclCommGetLastError(NULL), text);                                           \
  } while (0)

size_t ccTypeSize(dmacclDataType_t t);
const char *ccCollName(collId coll);

#ifdef __cplusplus
}
#endif

#endif
