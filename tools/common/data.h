/* Test and benchmark data: a fast seedable random fill (never all zeros) and
 * byte comparison. Shared by the tools and the tests. */
#ifndef DMACCL_TOOLS_DATA_H_
#define DMACCL_TOOLS_DATA_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* xorshift64* step. */
static inline uint64_t dataRand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static inline void dataFillRandom(void *p, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull | 1;
  unsigned char *b = (unsigned char *)p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = dataRand(&s);
    memcpy(b + i, &v, 8);
  }
  if (i < n) {
    uint64_t v = dataRand(&s);
    memcpy(b + i, &v, n - i);
  }
}

/* Number of elemSize-byte elements of a and b that differ. */
static inline size_t dataCountWrong(const void *a, const void *b, size_t n, size_t elemSize) {
  if (memcmp(a, b, n) == 0) return 0;
  const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
  size_t wrong = 0;
  for (size_t i = 0; i < n; i += elemSize) wrong += memcmp(x + i, y + i, elemSize) != 0;
  return wrong;
}

#endif
