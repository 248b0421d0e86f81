/* GPU tests: how many GPUs, and the skip when there are none. */
#ifndef DMACCL_TEST_GPU_COMMON_H_
#define DMACCL_TEST_GPU_COMMON_H_

#include "harness.h"

#include <cuda_runtime_api.h>

/* Number of usable GPUs; exits with the skip code when there are fewer than
 * `need` (so ctest reports the test as skipped, not passed). */
static inline int gpuCountOrSkip(int need, const char *test) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  if (n < need) {
    printf("%s: SKIPPED: needs %d GPU(s), found %d\n", test, need, n);
    exit(TEST_SKIP_CODE);
  }
  return n;
}

#endif
