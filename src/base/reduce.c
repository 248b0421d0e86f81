/* The reduction arithmetic in C for the host executor: the loops of
 * reduce_math.h's rules, one per type. */
#include "reduce.h"
#include "reduce_math.h"

int baseRedOpSupported(dmacclDataType_t t, dmacclRedOp_t op) {
  if ((unsigned)t >= dmacclNumTypes || (unsigned)op > (unsigned)BASE_PREMULSUM) return 0;
  if (op != dmacclAvg) return 1;
  return t == dmacclFloat16 || t == dmacclBfloat16 || t == dmacclFloat32 || t == dmacclFloat64 ||
         t == dmacclFloat8e4m3 || t == dmacclFloat8e5m2;
}

const char *baseRedOpName(dmacclRedOp_t op) {
  static const char *const names[dmacclNumOps + 1] = {"sum", "prod", "max",
                                                      "min", "avg",  "premulsum"};
  return (unsigned)op <= (unsigned)BASE_PREMULSUM ? names[op] : "invalid";
}

/* Integers: wrap-around arithmetic in the unsigned type of the width (W),
 * comparisons in the type itself (T). */
#define INT_LOOP(T, W)                                                                             \
  for (size_t i = 0; i < count; i++) {                                                             \
    T acc;                                                                                         \
    memcpy(&acc, (const char *)srcs[0] + i * sizeof(T), sizeof(T));                                \
    for (int k = 1; k < nsrc; k++) {                                                               \
      T x;                                                                                         \
      memcpy(&x, (const char *)srcs[k] + i * sizeof(T), sizeof(T));                                \
      if (op == dmacclSum || op == dmacclAvg || op == BASE_PREMULSUM)                              \
        acc = (T)((W)acc + (W)x);                                                                  \
      else if (op == dmacclProd)                                                                   \
        acc = (T)((W)acc * (W)x);                                                                  \
      else                                                                                         \
        RM_COMBINE(op, acc, x);                                                                    \
    }                                                                                              \
    if (op == BASE_PREMULSUM) {                                                                    \
      T sc;                                                                                        \
      memcpy(&sc, scalar, sizeof(T));                                                              \
      acc = (T)((W)acc * (W)sc);                                                                   \
    }                                                                                              \
    memcpy((char *)dst + i * sizeof(T), &acc, sizeof(T));                                          \
  }

/* Floating point: load S as accumulator type A (TOA), combine, Avg, store (FROMA). */
#define FLOAT_LOOP(S, A, TOA, FROMA)                                                               \
  for (size_t i = 0; i < count; i++) {                                                             \
    S raw;                                                                                         \
    memcpy(&raw, (const char *)srcs[0] + i * sizeof(S), sizeof(S));                                \
    A acc = TOA(raw);                                                                              \
    for (int k = 1; k < nsrc; k++) {                                                               \
      memcpy(&raw, (const char *)srcs[k] + i * sizeof(S), sizeof(S));                              \
      A x = TOA(raw);                                                                              \
      RM_COMBINE(op, acc, x);                                                                      \
    }                                                                                              \
    if (op == dmacclAvg) acc = acc / (A)nsrc;                                                      \
    if (op == BASE_PREMULSUM) {                                                                    \
      memcpy(&raw, scalar, sizeof(S));                                                             \
      acc = acc * TOA(raw);                                                                        \
    }                                                                                              \
    raw = FROMA(acc);                                                                              \
    memcpy((char *)dst + i * sizeof(S), &raw, sizeof(S));                                          \
  }

#define SAME(x) (x)

void baseReduceHost(void *dst, const void *const *srcs, int nsrc, size_t count, dmacclDataType_t t,
                    dmacclRedOp_t op) {
  baseReduceHostScaled(dst, srcs, nsrc, count, t, op, NULL);
}

void baseReduceHostScaled(void *dst, const void *const *srcs, int nsrc, size_t count,
                          dmacclDataType_t t, dmacclRedOp_t op, const void *scalar) {
  switch (t) {
  case dmacclInt8: INT_LOOP(int8_t, uint8_t) break;
  case dmacclUint8: INT_LOOP(uint8_t, uint8_t) break;
  case dmacclInt32: INT_LOOP(int32_t, uint32_t) break;
  case dmacclUint32: INT_LOOP(uint32_t, uint32_t) break;
  case dmacclInt64: INT_LOOP(int64_t, uint64_t) break;
  case dmacclUint64: INT_LOOP(uint64_t, uint64_t) break;
  case dmacclFloat16: FLOAT_LOOP(uint16_t, float, rmHalfToFloat, rmFloatToHalf) break;
  case dmacclBfloat16: FLOAT_LOOP(uint16_t, float, rmBf16ToFloat, rmFloatToBf16) break;
  case dmacclFloat32: FLOAT_LOOP(float, float, SAME, SAME) break;
  case dmacclFloat64: FLOAT_LOOP(double, double, SAME, SAME) break;
  case dmacclFloat8e4m3: FLOAT_LOOP(uint8_t, float, rmE4m3ToFloat, rmFloatToE4m3) break;
  case dmacclFloat8e5m2: FLOAT_LOOP(uint8_t, float, rmE5m2ToFloat, rmFloatToE5m2) break;
  default: break;
  }
}
