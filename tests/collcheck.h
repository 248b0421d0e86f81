/* Runs a collective on every rank of a set with random data, poisoned
 * outputs and guard bytes, and checks every byte. Works on both executors. */
#ifndef DMACCL_TEST_COLLCHECK_H_
#define DMACCL_TEST_COLLCHECK_H_

#include "dmaccl.h"

#include <stddef.h>
#include <stdint.h>

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

size_t ccTypeSize(dmacclDataType_t t);
const char *ccCollName(int coll);

#endif
