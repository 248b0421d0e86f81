/* Runs a collective on every rank of a set with random data, poisoned
 * outputs and guard bytes, and checks every byte. Works on both executors. */
#ifndef DMACCL_TEST_COLLCHECK_H_
#define DMACCL_TEST_COLLCHECK_H_

#include "dmaccl.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CC_MAXR 16
#define CC_GUARD 256
#define CC_POISON 0xA5

enum { CC_ALLGATHER = 0, CC_ALLTOALL = 1 };

typedef struct {
  int gpu;                      /* 0: host executor, 1: CUDA executor */
  int dev[CC_MAXR];             /* device of each rank (gpu only) */
  cudaStream_t stream[CC_MAXR]; /* the caller's stream of each rank (gpu only) */
} ccEnv;

/* Creates one stream per rank on the CUDA executor. */
int ccEnvInit(ccEnv *env, int gpu, dmacclComm_t *comms, int n);
void ccEnvFini(ccEnv *env, int n);

/* Issues coll on all n ranks from this thread in one group, waits, checks.
 * Returns the number of wrong bytes (outputs, guards and unchanged inputs),
 * or -1 when a call failed. */
long long ccRun(ccEnv *env, dmacclComm_t *comms, int n, int coll, dmacclDataType_t type,
                size_t count, int inPlace, uint64_t seed);

/* The GPUs of n ranks: rank r on GPU r % (GPUs found), so ranks share GPUs
 * when there are fewer GPUs than ranks. Returns the number of GPUs found. */
int ccDevices(int n, int *devs);

/* Creates n communicators (CUDA: on the GPUs of ccDevices) that use one
 * algorithm for both collectives; "auto" keeps the built-in selection.
 * Prints the error. */
dmacclResult_t ccInitAlgo(dmacclComm_t *comms, int n, int gpu, const char *algo);

/* The algorithm names, as dmacclConfig_t.algorithm and DMACCL_ALGO know them. */
extern const char *const ccAlgos[];
#define CC_NALGOS 8

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
const char *ccCollName(int coll);

#ifdef __cplusplus
}
#endif

#endif
