/*
 * The reduction kernel: the only kernel dmaccl launches. It reads nsrc
 * inputs (all in this GPU's memory: copy engines brought the peers' parts
 * into scratch or staging first) and writes one output. The arithmetic is
 * reduce_math.h's, shared with the host executor, so results are the same
 * bytes. A few thread blocks (DMACCL_REDUCE_CTAS) stream through the data:
 * each thread takes 16-byte vectors when every pointer is 16-byte aligned,
 * single elements otherwise and for the tail.
 */
#include "cuda_reduce.h"
#include "../base/reduce_math.h"

#include <stdint.h>

namespace {

struct Srcs {
  const void *p[EXEC_REDUCE_MAX_SRCS];
};

/* Element access per type: S is the stored type, A the accumulation type. */
template <int T> struct Ty;
#define TY(id, S_, A_, LOAD, STORE)                                                                \
  template <> struct Ty<id> {                                                                      \
    typedef S_ S;                                                                                  \
    typedef A_ A;                                                                                  \
    static __device__ __forceinline__ A load(S s) { return LOAD(s); }                              \
    static __device__ __forceinline__ S store(A a) { return STORE(a); }                            \
  };
#define ID(x) (x)
TY(dmacclInt8, int8_t, int8_t, ID, ID)
TY(dmacclUint8, uint8_t, uint8_t, ID, ID)
TY(dmacclInt32, int32_t, int32_t, ID, ID)
TY(dmacclUint32, uint32_t, uint32_t, ID, ID)
TY(dmacclInt64, int64_t, int64_t, ID, ID)
TY(dmacclUint64, uint64_t, uint64_t, ID, ID)
TY(dmacclFloat16, uint16_t, float, rmHalfToFloat, rmFloatToHalf)
TY(dmacclBfloat16, uint16_t, float, rmBf16ToFloat, rmFloatToBf16)
TY(dmacclFloat32, float, float, ID, ID)
TY(dmacclFloat64, double, double, ID, ID)
TY(dmacclFloat8e4m3, uint8_t, float, rmE4m3ToFloat, rmFloatToE4m3)
TY(dmacclFloat8e5m2, uint8_t, float, rmE5m2ToFloat, rmFloatToE5m2)

/* Integer sums and products wrap: computed in the unsigned type of the width. */
template <typename A> __device__ __forceinline__ A combine(int op, A acc, A x) {
  RM_COMBINE(op, acc, x);
  return acc;
}
#define WRAP(A, W)                                                                                 \
  template <> __device__ __forceinline__ A combine<A>(int op, A acc, A x) {                        \
    if (op == dmacclProd) return (A)((W)acc * (W)x);                                               \
    if (op == dmacclSum || op == dmacclAvg) return (A)((W)acc + (W)x);                             \
    RM_COMBINE(op, acc, x);                                                                        \
    return acc;                                                                                    \
  }
WRAP(int8_t, uint8_t)
WRAP(uint8_t, uint8_t)
WRAP(int32_t, uint32_t)
WRAP(uint32_t, uint32_t)
WRAP(int64_t, uint64_t)
WRAP(uint64_t, uint64_t)

template <int T, int OP>
__device__ __forceinline__ typename Ty<T>::S reduceOne(const Srcs &s, int n, size_t i) {
  typedef Ty<T> Y;
  typename Y::A acc = Y::load(((const typename Y::S *)s.p[0])[i]);
  for (int k = 1; k < n; k++)
    acc = combine<typename Y::A>(OP, acc, Y::load(((const typename Y::S *)s.p[k])[i]));
  if (OP == dmacclAvg) acc = acc / (typename Y::A)n;
  return Y::store(acc);
}

template <int T, int OP>
__global__ void __launch_bounds__(512)
    dmacclReduceKernel(void *dst, Srcs s, int n, size_t count, int vec) {
  typedef typename Ty<T>::S S;
  const size_t per = 16 / sizeof(S); /* elements per vector */
  size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
         stride = (size_t)gridDim.x * blockDim.x;
  size_t head = 0;
  if (vec) {
    size_t nv = count / per;
    typedef typename Ty<T>::A A;
    union V {
      uint4 u;
      S e[16 / sizeof(S)];
    };
    /* UNROLL vectors per thread and pass (8; 4 for 1-byte types, whose 16
     * floats per vector fill registers), all loads of an input issued
     * before any arithmetic: more bytes in flight per SM, which is what a
     * few CTAs need to stream at HBM rate. */
    const int UNROLL = sizeof(S) == 1 ? 4 : 8;
    size_t v = tid;
    for (; v + (UNROLL - 1) * stride < nv; v += UNROLL * stride) {
      A acc[UNROLL][16 / sizeof(S)];
      V in[UNROLL];
      for (int u = 0; u < UNROLL; u++) in[u].u = ((const uint4 *)s.p[0])[v + u * stride];
      for (int u = 0; u < UNROLL; u++)
        for (size_t j = 0; j < per; j++) acc[u][j] = Ty<T>::load(in[u].e[j]);
      for (int k = 1; k < n; k++) {
        for (int u = 0; u < UNROLL; u++) in[u].u = ((const uint4 *)s.p[k])[v + u * stride];
        for (int u = 0; u < UNROLL; u++)
          for (size_t j = 0; j < per; j++)
            acc[u][j] = combine<A>(OP, acc[u][j], Ty<T>::load(in[u].e[j]));
      }
      for (int u = 0; u < UNROLL; u++) {
        V out;
        for (size_t j = 0; j < per; j++) {
          if (OP == dmacclAvg) acc[u][j] = acc[u][j] / (A)n;
          out.e[j] = Ty<T>::store(acc[u][j]);
        }
        ((uint4 *)dst)[v + u * stride] = out.u;
      }
    }
    for (; v < nv; v += stride) {
      A acc[16 / sizeof(S)];
      V in;
      in.u = ((const uint4 *)s.p[0])[v];
      for (size_t j = 0; j < per; j++) acc[j] = Ty<T>::load(in.e[j]);
      for (int k = 1; k < n; k++) {
        in.u = ((const uint4 *)s.p[k])[v];
        for (size_t j = 0; j < per; j++) acc[j] = combine<A>(OP, acc[j], Ty<T>::load(in.e[j]));
      }
      V out;
      for (size_t j = 0; j < per; j++) {
        if (OP == dmacclAvg) acc[j] = acc[j] / (A)n;
        out.e[j] = Ty<T>::store(acc[j]);
      }
      ((uint4 *)dst)[v] = out.u;
    }
    head = nv * per;
  }
  for (size_t i = head + tid; i < count; i += stride) ((S *)dst)[i] = reduceOne<T, OP>(s, n, i);
}

template <int T, int OP>
cudaError_t launchTyped(void *dst, const Srcs &s, int n, size_t count, int ctas, cudaStream_t st) {
  typedef typename Ty<T>::S S;
  int vec = ((uintptr_t)dst & 15) == 0;
  for (int k = 0; k < n && vec; k++) vec = ((uintptr_t)s.p[k] & 15) == 0;
  size_t units = vec ? count / (16 / sizeof(S)) + count % (16 / sizeof(S)) : count;
  size_t blocks = (units + 511) / 512;
  if (blocks > (size_t)ctas) blocks = (size_t)ctas;
  if (blocks < 1) blocks = 1;
  dmacclReduceKernel<T, OP><<<(unsigned)blocks, 512, 0, st>>>(dst, s, n, count, vec);
  return cudaGetLastError();
}

template <int T>
cudaError_t launchOp(int op, void *dst, const Srcs &s, int n, size_t count, int ctas,
                     cudaStream_t st) {
  switch (op) {
  case dmacclSum: return launchTyped<T, dmacclSum>(dst, s, n, count, ctas, st);
  case dmacclProd: return launchTyped<T, dmacclProd>(dst, s, n, count, ctas, st);
  case dmacclMax: return launchTyped<T, dmacclMax>(dst, s, n, count, ctas, st);
  case dmacclMin: return launchTyped<T, dmacclMin>(dst, s, n, count, ctas, st);
  case dmacclAvg: return launchTyped<T, dmacclAvg>(dst, s, n, count, ctas, st);
  default: return cudaErrorInvalidValue;
  }
}

} // namespace

extern "C" cudaError_t execCudaReduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                                      dmacclDataType_t t, dmacclRedOp_t op, int ctas,
                                      cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (nsrc < 1 || nsrc > EXEC_REDUCE_MAX_SRCS || ctas < 1) return cudaErrorInvalidValue;
  Srcs s;
  for (int k = 0; k < nsrc; k++) s.p[k] = srcs[k];
  for (int k = nsrc; k < EXEC_REDUCE_MAX_SRCS; k++) s.p[k] = nullptr;
  switch (t) {
#define CASE(id)                                                                                   \
  case id: return launchOp<id>((int)op, dst, s, nsrc, count, ctas, stream);
    CASE(dmacclInt8)
    CASE(dmacclUint8)
    CASE(dmacclInt32)
    CASE(dmacclUint32)
    CASE(dmacclInt64)
    CASE(dmacclUint64)
    CASE(dmacclFloat16)
    CASE(dmacclBfloat16)
    CASE(dmacclFloat32)
    CASE(dmacclFloat64)
    CASE(dmacclFloat8e4m3)
    CASE(dmacclFloat8e5m2)
#undef CASE
  default: return cudaErrorInvalidValue;
  }
}
