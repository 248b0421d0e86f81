/* A small C test harness: ASSERT macros that print both values, explicit
 * skip with ctest's skip code, and a random source for test data. */
#ifndef DMACCL_TEST_HARNESS_H_
#define DMACCL_TEST_HARNESS_H_

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_SKIP_CODE 77

static int testFailures __attribute__((unused));

#define TEST_FAIL(...)                                                                             \
  do {                                                                                             \
    fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                                          \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fprintf(stderr, "\n");                                                                         \
    testFailures++;                                                                                \
  } while (0)

#define ASSERT_TRUE(c)                                                                             \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      TEST_FAIL("%s", #c);                                                                         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

#define ASSERT_EQ_INT(a, b)                                                                        \
  do {                                                                                             \
    long long a_ = (long long)(a), b_ = (long long)(b);                                            \
    if (a_ != b_) {                                                                                \
      TEST_FAIL("%s == %s: %lld != %lld", #a, #b, a_, b_);                                         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

#define ASSERT_CONTAINS(hay, needle)                                                               \
  do {                                                                                             \
    const char *h_ = (hay);                                                                        \
    if (!h_ || !strstr(h_, (needle))) {                                                            \
      TEST_FAIL("'%s' does not contain '%s'", h_ ? h_ : "(null)", (needle));                       \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* Runs one test function; counts and reports. */
#define RUN(fn)                                                                                    \
  do {                                                                                             \
    int before_ = testFailures;                                                                    \
    if (fn() != 0 && testFailures == before_) testFailures++;                                      \
    printf("%-48s %s\n", #fn, testFailures == before_ ? "ok" : "FAILED");                          \
    fflush(stdout);                                                                                \
  } while (0)

/* Runs fn unless a filter `only` (a name fragment, usually argv[1]) excludes it. */
#define RUN_IF(fn)                                                                                 \
  do {                                                                                             \
    if (!only || strstr(#fn, only)) RUN(fn);                                                       \
  } while (0)

#define TEST_EXIT()                                                                                \
  do {                                                                                             \
    printf(testFailures ? "%d check(s) failed\n" : "all passed\n", testFailures);                  \
    return testFailures ? 1 : 0;                                                                   \
  } while (0)

#include "common/data.h"

static inline void testFillRandom(void *p, size_t n, uint64_t seed) {
  dataFillRandom(p, n, seed);
}

/* Index of the first byte that differs, or -1. */
static inline long long testFirstDiff(const void *a, const void *b, size_t n) {
  if (memcmp(a, b, n) == 0) return -1;
  const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i]) return (long long)i;
  return -1;
}

#endif
