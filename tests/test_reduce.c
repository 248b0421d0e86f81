/*
 * The reduction arithmetic (src/base): conversions of the small float types
 * checked against an independent definition (the value of every bit pattern
 * from its fields with ldexp; rounding checked as "the nearest
 * representable value, ties to even", found by search), and the reductions
 * against expectations computed another way (integers: sums in 64-bit then
 * truncated; floats: exactly representable cases; Avg; aliasing; guards).
 */
#include "harness.h"
#include "../src/base/reduce.h"
#include "../src/base/reduce_math.h"

#include <math.h>

typedef struct {
  const char *name;
  int E, M, hasInf, bits;
  float (*toF)(uint32_t);
  uint32_t (*fromF)(float);
} fmt;

static float h2f(uint32_t b) {
  return rmHalfToFloat((uint16_t)b);
}
static uint32_t f2h(float x) {
  return rmFloatToHalf(x);
}
static float b2f(uint32_t b) {
  return rmBf16ToFloat((uint16_t)b);
}
static uint32_t f2b(float x) {
  return rmFloatToBf16(x);
}
static float e4(uint32_t b) {
  return rmE4m3ToFloat((uint8_t)b);
}
static uint32_t f2e4(float x) {
  return rmFloatToE4m3(x);
}
static float e5(uint32_t b) {
  return rmE5m2ToFloat((uint8_t)b);
}
static uint32_t f2e5(float x) {
  return rmFloatToE5m2(x);
}

static const fmt fmts[] = {{"fp16", 5, 10, 1, 16, h2f, f2h},
                           {"bf16", 8, 7, 1, 16, b2f, f2b},
                           {"e4m3", 4, 3, 0, 8, e4, f2e4},
                           {"e5m2", 5, 2, 1, 8, e5, f2e5}};

/* The value of bit pattern b from its fields; NAN for NaN patterns. */
static double fieldValue(const fmt *f, uint32_t b) {
  int bias = (1 << (f->E - 1)) - 1;
  uint32_t s = (b >> (f->E + f->M)) & 1, e = (b >> f->M) & ((1u << f->E) - 1),
           m = b & ((1u << f->M) - 1);
  double v;
  if (e == (1u << f->E) - 1 && (f->hasInf || m == (1u << f->M) - 1))
    v = f->hasInf && m == 0 ? INFINITY : NAN;
  else if (e == 0)
    v = ldexp((double)m, 1 - bias - f->M);
  else
    v = ldexp((double)(m + (1u << f->M)), (int)e - bias - f->M);
  return s ? -v : v;
}

static int testToFloat(void) {
  for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
    const fmt *f = &fmts[k];
    for (uint32_t b = 0; b < (1u << f->bits); b++) {
      double want = fieldValue(f, b);
      float got = f->toF(b);
      if (isnan(want) ? !isnan(got) : (double)got != want) {
        TEST_FAIL("%s 0x%x: %g, expected %g", f->name, b, (double)got, want);
        return 1;
      }
      /* back: the same pattern (NaNs: the canonical one) */
      uint32_t back = f->fromF(got);
      /* (fp8 saturates: its infinities come back as the largest finite value) */
      if (!isnan(want) && !(isinf(want) && f->bits == 8) && back != b &&
          !(want == 0 && b == (1u << (f->bits - 1)) && back == b)) {
        TEST_FAIL("%s 0x%x -> %g -> 0x%x", f->name, b, (double)got, back);
        return 1;
      }
      if (isnan(want) && !isnan((double)f->toF(back))) {
        TEST_FAIL("%s NaN 0x%x came back as 0x%x", f->name, b, back);
        return 1;
      }
    }
  }
  return 0;
}

/* The nearest finite representable value to x, ties to the even pattern;
 * overflow per the format (inf, or the largest finite when saturating). */
static uint32_t nearest(const fmt *f, double x, int saturate) {
  uint32_t best = 0, n = 1u << (f->bits - 1);
  double bestErr = INFINITY, maxFinite = 0;
  uint32_t maxPat = 0;
  for (uint32_t b = 0; b < n; b++) { /* positive patterns */
    double v = fieldValue(f, b);
    if (isnan(v) || isinf(v)) continue;
    if (v > maxFinite) maxFinite = v, maxPat = b;
    double err = fabs(fabs(x) - v);
    if (err < bestErr || (err == bestErr && !(b & 1))) bestErr = err, best = b;
  }
  /* beyond the largest finite value by half an ulp or more: overflow */
  double ulp = maxFinite - fieldValue(f, maxPat - 1);
  if (fabs(x) >= maxFinite + ulp / 2 && !(fabs(x) == maxFinite + ulp / 2 && !(maxPat & 1)))
    best = saturate || !f->hasInf ? maxPat : ((1u << f->E) - 1) << f->M;
  return (x < 0 || (x == 0 && signbit(x)) ? n : 0) | best;
}

static int testRounding(void) {
  uint64_t rnd = 99;
  for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
    const fmt *f = &fmts[k];
    int saturate = f->bits == 8;
    for (int i = 0; i < (f->bits == 8 ? 20000 : 3000); i++) {
      float x;
      if (i % 3 == 0) { /* exact midpoints between neighbours */
        uint32_t b = (uint32_t)(dataRand(&rnd) % ((1u << (f->bits - 1)) - 1));
        double a = fieldValue(f, b), c = fieldValue(f, b + 1);
        if (isnan(a) || isnan(c) || isinf(c)) continue;
        x = (float)((a + c) / 2);
      } else {
        uint32_t u = (uint32_t)dataRand(&rnd);
        x = rmBitsToFloat((u & 0x807fffffu) | ((uint32_t)(100 + u % 60) << 23));
      }
      uint32_t want = nearest(f, (double)x, saturate), got = f->fromF(x);
      if (got != want) {
        TEST_FAIL("%s(%.9g) = 0x%x, nearest even is 0x%x", f->name, (double)x, got, want);
        return 1;
      }
    }
    /* infinities: inf where the format has it and does not saturate */
    uint32_t pinf = f->fromF(INFINITY);
    ASSERT_TRUE(pinf == nearest(f, 1e300, saturate));
    ASSERT_TRUE(isnan(f->toF(f->fromF(NAN))));
  }
  return 0;
}

static int testIntegers(void) {
  uint64_t rnd = 5;
  const dmacclDataType_t ts[] = {dmacclInt8,   dmacclUint8, dmacclInt32,
                                 dmacclUint32, dmacclInt64, dmacclUint64};
  const size_t sz[] = {1, 1, 4, 4, 8, 8};
  for (int ti = 0; ti < 6; ti++)
    for (int op = 0; op < 4; op++)
      for (int n = 1; n <= 9; n += 4) {
        size_t count = 37, bytes = count * sz[ti];
        unsigned char in[9][37 * 8], out[37 * 8 + 16];
        const void *src[9];
        for (int k = 0; k < n; k++) dataFillRandom(in[k], bytes, dataRand(&rnd)), src[k] = in[k];
        memset(out, 0xA5, sizeof(out));
        baseReduceHost(out, src, n, count, ts[ti], (dmacclRedOp_t)op);
        for (size_t i = 0; i < count; i++) {
          /* 64-bit arithmetic, then truncated; comparisons on sign-extended values */
          int64_t s = 0, p = 1, mx = 0, mn = 0;
          for (int k = 0; k < n; k++) {
            int64_t v = 0;
            memcpy(&v, in[k] + i * sz[ti], sz[ti]);
            if (ts[ti] == dmacclInt8) v = (int8_t)v;
            if (ts[ti] == dmacclInt32) v = (int32_t)v;
            int uns = ts[ti] == dmacclUint8 || ts[ti] == dmacclUint32 || ts[ti] == dmacclUint64;
            s = (int64_t)((uint64_t)s + (uint64_t)v);
            p = (int64_t)((uint64_t)p * (uint64_t)v);
            if (k == 0 || (uns ? (uint64_t)v > (uint64_t)mx : v > mx)) mx = v;
            if (k == 0 || (uns ? (uint64_t)v < (uint64_t)mn : v < mn)) mn = v;
          }
          int64_t want = op == 0 ? s : op == 1 ? p : op == 2 ? mx : mn;
          if (memcmp(out + i * sz[ti], &want, sz[ti])) {
            TEST_FAIL("type %d op %d n %d element %zu", (int)ts[ti], op, n, i);
            return 1;
          }
        }
        for (size_t i = bytes; i < sizeof(out); i++) ASSERT_EQ_INT(out[i], 0xA5);
      }
  return 0;
}

static int testFloats(void) {
  /* Exactly representable: small integers in every float type. */
  const dmacclDataType_t ts[] = {dmacclFloat16, dmacclBfloat16,   dmacclFloat32,
                                 dmacclFloat64, dmacclFloat8e4m3, dmacclFloat8e5m2};
  for (int ti = 0; ti < 6; ti++)
    for (int op = 0; op < 5; op++) {
      const int n = 4;
      double vals[4] = {1, -2, 3, 2};
      unsigned char in[4][8], out[8];
      const void *src[4];
      for (int k = 0; k < n; k++) {
        src[k] = in[k];
        switch (ts[ti]) {
        case dmacclFloat16: {
          uint16_t b = rmFloatToHalf((float)vals[k]);
          memcpy(in[k], &b, 2);
        } break;
        case dmacclBfloat16: {
          uint16_t b = rmFloatToBf16((float)vals[k]);
          memcpy(in[k], &b, 2);
        } break;
        case dmacclFloat32: {
          float b = (float)vals[k];
          memcpy(in[k], &b, 4);
        } break;
        case dmacclFloat64: memcpy(in[k], &vals[k], 8); break;
        case dmacclFloat8e4m3: in[k][0] = rmFloatToE4m3((float)vals[k]); break;
        default: in[k][0] = rmFloatToE5m2((float)vals[k]); break;
        }
      }
      double want = op == 0 ? 4 : op == 1 ? -12 : op == 2 ? 3 : op == 3 ? -2 : 1;
      baseReduceHost(out, src, n, 1, ts[ti], (dmacclRedOp_t)op);
      double got;
      switch (ts[ti]) {
      case dmacclFloat16: {
        uint16_t b;
        memcpy(&b, out, 2);
        got = rmHalfToFloat(b);
      } break;
      case dmacclBfloat16: {
        uint16_t b;
        memcpy(&b, out, 2);
        got = rmBf16ToFloat(b);
      } break;
      case dmacclFloat32: {
        float b;
        memcpy(&b, out, 4);
        got = b;
      } break;
      case dmacclFloat64: memcpy(&got, out, 8); break;
      case dmacclFloat8e4m3: got = rmE4m3ToFloat(out[0]); break;
      default: got = rmE5m2ToFloat(out[0]); break;
      }
      if (got != want) {
        TEST_FAIL("type %d op %d: %g, expected %g", (int)ts[ti], op, got, want);
        return 1;
      }
    }
  /* One rounding at the end: fp16 1 + 2^-11 + 2^-11 is 1 + 2^-10 in float,
   * exactly representable, where rounding each step would stay at 1. */
  uint16_t a = rmFloatToHalf(1.0f), b = rmFloatToHalf(ldexpf(1, -11)), out;
  const void *src[3] = {&a, &b, &b};
  baseReduceHost(&out, src, 3, 1, dmacclFloat16, dmacclSum);
  ASSERT_TRUE(rmHalfToFloat(out) == 1.0f + ldexpf(1, -10));
  /* In place: dst is a source. */
  float x[3] = {1.5f, 2.25f, -8}, y[3] = {0.5f, 0.75f, 8};
  const void *s2[2] = {x, y};
  baseReduceHost(x, s2, 2, 3, dmacclFloat32, dmacclAvg);
  ASSERT_TRUE(x[0] == 1.0f && x[1] == 1.5f && x[2] == 0.0f);
  return 0;
}

/* The premultiplied sum: the sum in the accumulation type times the
 * scalar, one rounding (values from numpy: float32(1.5+2.25-0.5)*float32(0.3);
 * fp16 (1+2)*fp16(0.3) in float, rounded to fp16; the integers wrap). */
static int testPremul(void) {
  float f[3] = {1.5f, 2.25f, -0.5f}, fs = 0.3f, fo = 0;
  const void *fsrc[3] = {&f[0], &f[1], &f[2]};
  baseReduceHostScaled(&fo, fsrc, 3, 1, dmacclFloat32, BASE_PREMULSUM, &fs);
  uint32_t fb;
  memcpy(&fb, &fo, 4);
  ASSERT_EQ_INT(fb, 0x3f79999au);
  uint16_t h[2] = {0x3c00, 0x4000}, hs = 0x34cd, ho = 0;
  const void *hsrc[2] = {&h[0], &h[1]};
  baseReduceHostScaled(&ho, hsrc, 2, 1, dmacclFloat16, BASE_PREMULSUM, &hs);
  ASSERT_EQ_INT(ho, 0x3b34);
  double d[2] = {0.1, 0.2}, ds = 3.0, dout = 0;
  const void *dsrc[2] = {&d[0], &d[1]};
  baseReduceHostScaled(&dout, dsrc, 2, 1, dmacclFloat64, BASE_PREMULSUM, &ds);
  uint64_t db;
  memcpy(&db, &dout, 8);
  ASSERT_TRUE(db == 0x3fecccccccccccceull);
  int8_t i8[2] = {100, 100}, i8s = -3, i8o = 0; /* 200 wraps to -56; -56 * -3 = 168 wraps to -88 */
  const void *isrc[2] = {&i8[0], &i8[1]};
  baseReduceHostScaled(&i8o, isrc, 2, 1, dmacclInt8, BASE_PREMULSUM, &i8s);
  ASSERT_EQ_INT(i8o, -88);
  uint32_t u[2] = {0xffffffffu, 2}, us = 5, uo = 0; /* 1 * 5 */
  const void *usrc[2] = {&u[0], &u[1]};
  baseReduceHostScaled(&uo, usrc, 2, 1, dmacclUint32, BASE_PREMULSUM, &us);
  ASSERT_EQ_INT(uo, 5);
  /* one source in place: a scaling */
  float x[2] = {2.0f, -8.0f}, half = 0.5f;
  const void *xs[1] = {x};
  baseReduceHostScaled(x, xs, 1, 2, dmacclFloat32, BASE_PREMULSUM, &half);
  ASSERT_TRUE(x[0] == 1.0f && x[1] == -4.0f);
  ASSERT_CONTAINS(baseRedOpName(BASE_PREMULSUM), "premulsum");
  return 0;
}

static int testSupported(void) {
  for (int t = -1; t <= dmacclNumTypes; t++)
    for (int op = -1; op <= dmacclNumOps + 1; op++) {
      /* BASE_PREMULSUM, the library's own number after the built-in ops */
      int valid = t >= 0 && t < dmacclNumTypes && op >= 0 && op <= dmacclNumOps;
      int isFloat = t == dmacclFloat16 || t == dmacclBfloat16 || t == dmacclFloat32 ||
                    t == dmacclFloat64 || t == dmacclFloat8e4m3 || t == dmacclFloat8e5m2;
      int want = valid && (op != dmacclAvg || isFloat);
      ASSERT_EQ_INT(baseRedOpSupported((dmacclDataType_t)t, (dmacclRedOp_t)op), want);
    }
  ASSERT_CONTAINS(baseRedOpName(dmacclAvg), "avg");
  ASSERT_CONTAINS(baseRedOpName((dmacclRedOp_t)9), "invalid");
  return 0;
}

int main(void) {
  RUN(testToFloat);
  RUN(testPremul);
  RUN(testRounding);
  RUN(testIntegers);
  RUN(testFloats);
  RUN(testSupported);
  TEST_EXIT();
}
