/*
 * The reduction arithmetic, written once for the host executor (reduce.c)
 * and the reduction kernel (src/exec/cuda_reduce*.cu), so the two give the
 * same bytes by construction: plain integer and IEEE float operations, and
 * conversions of the small floating-point types done with integer
 * operations rather than a compiler's or CUDA's intrinsics. The rules are
 * those of dmacclRedOp_t (include/dmaccl.h): rank order, integers wrap in
 * their own width, fp16/bf16/fp8 accumulate in float and round once to
 * nearest even, fp8 saturates to its largest finite value. NaN results of
 * the small types are their canonical positive quiet NaN (x86 and NVIDIA
 * GPUs make NaNs of different signs and payloads; float and double results
 * that are NaN may differ in those bits between executors).
 *
 * Both compilers must not contract or widen float operations (the build
 * passes -ffp-contract=off to gcc and -fmad=false to nvcc); there is no
 * a*b+c anyway.
 */
#ifndef DMACCL_REDUCE_MATH_H_
#define DMACCL_REDUCE_MATH_H_

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define RM_HD static __host__ __device__ __forceinline__
#else
#define RM_HD static inline
#endif

RM_HD float rmBitsToFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
RM_HD uint32_t rmFloatToBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* A small float (E exponent bits, M mantissa bits, bias 2^(E-1)-1) to float:
 * exact. hasInf: the all-ones exponent is inf/NaN (fp16, e5m2); without it
 * (e4m3) only all-ones exponent and mantissa is NaN. */
RM_HD float rmSmallToFloat(uint32_t b, int E, int M, int hasInf) {
  uint32_t sign = (b >> (E + M)) & 1u, exp = (b >> M) & ((1u << E) - 1u),
           man = b & ((1u << M) - 1u);
  int bias = (1 << (E - 1)) - 1;
  uint32_t out;
  if (exp == (1u << E) - 1u && (hasInf || man == (1u << M) - 1u)) {
    out = (hasInf && man == 0) ? 0x7f800000u : 0x7fc00000u;
  } else if (exp == 0) {
    if (man == 0) {
      out = 0;
    } else { /* subnormal: man * 2^(1-bias-M), normalized for float */
      int e = 1 - bias;
      while (!(man & (1u << M))) man <<= 1, e--;
      man &= (1u << M) - 1u;
      out = ((uint32_t)(e + 127) << 23) | (man << (23 - M));
    }
  } else {
    out = ((uint32_t)((int)exp - bias + 127) << 23) | (man << (23 - M));
  }
  return rmBitsToFloat(out | (sign << 31));
}

/* float to a small float, rounding to nearest even. Overflow gives inf
 * (hasInf and !satfinite) or the largest finite value (satfinite, or no
 * inf); inf inputs likewise. NaN gives the canonical NaN. Returns the bits. */
RM_HD uint32_t rmFloatToSmall(float x, int E, int M, int hasInf, int satfinite) {
  uint32_t u = rmFloatToBits(x), sign = u >> 31, a = u & 0x7fffffffu;
  uint32_t signBit = sign << (E + M);
  uint32_t expMax = (1u << E) - 1u;
  /* largest finite magnitude: all-ones exponent is reserved with inf; e4m3
   * reserves only all-ones exponent and mantissa */
  uint32_t maxFinite =
      hasInf ? ((expMax - 1u) << M) | ((1u << M) - 1u) : (expMax << M) | ((1u << M) - 2u);
  uint32_t nan = hasInf ? (expMax << M) | (1u << (M - 1)) : (expMax << M) | ((1u << M) - 1u);
  uint32_t inf = hasInf && !satfinite ? expMax << M : maxFinite;
  if (a > 0x7f800000u) return nan;
  if (a == 0x7f800000u) return signBit | inf;
  int bias = (1 << (E - 1)) - 1, emin = 1 - bias;
  int e = (int)(a >> 23) - 127;
  uint32_t mant = a & 0x7fffffu;
  if (a >> 23)
    mant |= 0x800000u;
  else
    e = -126; /* float subnormal: tiny, rounds to 0 in every small type */
  int shift = 23 - M + (e < emin ? emin - e : 0);
  uint32_t r;
  if (shift > 25) {
    r = 0;
  } else {
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    /* normal: exponent field e+bias over the implicit bit; q may carry into it */
    r = e >= emin ? ((uint32_t)(e + bias) << M) + q - (1u << M) : q;
  }
  if (r > maxFinite) r = inf;
  return signBit | r;
}

RM_HD float rmHalfToFloat(uint16_t b) {
  return rmSmallToFloat(b, 5, 10, 1);
}
RM_HD uint16_t rmFloatToHalf(float x) {
  return (uint16_t)rmFloatToSmall(x, 5, 10, 1, 0);
}
RM_HD float rmBf16ToFloat(uint16_t b) {
  return rmBitsToFloat((uint32_t)b << 16);
}
RM_HD uint16_t rmFloatToBf16(float x) {
  uint32_t u = rmFloatToBits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  u += 0x7fffu + ((u >> 16) & 1u); /* to nearest even; overflow becomes inf */
  return (uint16_t)(u >> 16);
}
RM_HD float rmE4m3ToFloat(uint8_t b) {
  return rmSmallToFloat(b, 4, 3, 0);
}
RM_HD uint8_t rmFloatToE4m3(float x) {
  return (uint8_t)rmFloatToSmall(x, 4, 3, 0, 1);
}
RM_HD float rmE5m2ToFloat(uint8_t b) {
  return rmSmallToFloat(b, 5, 2, 1);
}
RM_HD uint8_t rmFloatToE5m2(float x) {
  return (uint8_t)rmFloatToSmall(x, 5, 2, 1, 1);
}

/* One reduction step acc = acc op x in the accumulation type (op numbers
 * of dmacclRedOp_t; Avg accumulates as Sum). */
#define RM_COMBINE(op, acc, x)                                                                     \
  do {                                                                                             \
    switch (op) {                                                                                  \
    case 1: (acc) = (acc) * (x); break;                                                            \
    case 2: (acc) = (x) > (acc) ? (x) : (acc); break;                                              \
    case 3: (acc) = (x) < (acc) ? (x) : (acc); break;                                              \
    default: (acc) = (acc) + (x); break;                                                           \
    }                                                                                              \
  } while (0)

#endif
