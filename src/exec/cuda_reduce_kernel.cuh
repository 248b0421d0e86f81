/*
 * The reduction kernel's templates (cuda_reduce.cu has the kernel's
 * description): included by each cuda_reduce_<type>.cu, which instantiates
 * one data type's kernels and its launch (DMACCL_REDUCE_DEFINE), so that the
 * types compile in parallel. Everything here is local to the including
 * file but the launch it defines.
 */
#ifndef DMACCL_CUDA_REDUCE_KERNEL_CUH_
#define DMACCL_CUDA_REDUCE_KERNEL_CUH_

#include "cuda_reduce_launch.h"
#include "cuda_driver.h"
#include "../base/reduce.h"
#include "../base/reduce_math.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>

namespace {

using execReduceK::Srcs;

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
/* fp16 to float: the hardware's conversion is exact, as rmHalfToFloat is
 * (that one's subnormal loop made fp16 five times slower than bf16); NaN
 * payloads may differ, and no result shows them (stores canonicalize NaN). */
static __device__ __forceinline__ float f16Load(uint16_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
  return __half2float(__ushort_as_half(b));
#else
  return rmHalfToFloat(b);
#endif
}
TY(dmacclInt8, int8_t, int8_t, ID, ID)
TY(dmacclUint8, uint8_t, uint8_t, ID, ID)
TY(dmacclInt32, int32_t, int32_t, ID, ID)
TY(dmacclUint32, uint32_t, uint32_t, ID, ID)
TY(dmacclInt64, int64_t, int64_t, ID, ID)
TY(dmacclUint64, uint64_t, uint64_t, ID, ID)
TY(dmacclFloat16, uint16_t, float, f16Load, rmFloatToHalf)
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
    if (op == dmacclSum || op == dmacclAvg || op == BASE_PREMULSUM) return (A)((W)acc + (W)x);     \
    RM_COMBINE(op, acc, x);                                                                        \
    return acc;                                                                                    \
  }
WRAP(int8_t, uint8_t)
WRAP(uint8_t, uint8_t)
WRAP(int32_t, uint32_t)
WRAP(uint32_t, uint32_t)
WRAP(int64_t, uint64_t)
WRAP(uint64_t, uint64_t)

/* The last step before the rounding: Avg divides by the number of inputs,
 * a premultiplied sum multiplies by its scalar (integers wrap). */
template <int OP, typename A> __device__ __forceinline__ A finish(A acc, int n, A scale) {
  if (OP == dmacclAvg) return acc / (A)n;
  if (OP == BASE_PREMULSUM) return combine<A>(dmacclProd, acc, scale);
  return acc;
}

template <int T, int OP>
__device__ __forceinline__ typename Ty<T>::S reduceOne(const Srcs &s, int n, size_t i,
                                                       typename Ty<T>::A scale) {
  typedef Ty<T> Y;
  typename Y::A acc = Y::load(((const typename Y::S *)s.p[0])[i]);
  for (int k = 1; k < n; k++)
    acc = combine<typename Y::A>(OP, acc, Y::load(((const typename Y::S *)s.p[k])[i]));
  return Y::store(finish<OP>(acc, n, scale));
}

/* One 16-byte vector of results from the accumulators. The small float
 * types round with the hardware's paired conversion where the GPU has one
 * (sm_80: one instruction per two elements, against about ten integer
 * operations each in reduce_math.h, which made bf16 instruction-bound at
 * half float's rate). Round to nearest even, overflow to inf and subnormals
 * are the same as reduce_math.h's; NaN is then set to its canonical bits. */
template <int T> struct VecStore {
  template <typename A, typename V>
  static __device__ __forceinline__ void run(const A *acc, V &out) {
    for (size_t j = 0; j < sizeof(out.e) / sizeof(out.e[0]); j++) out.e[j] = Ty<T>::store(acc[j]);
  }
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> struct VecStore<dmacclBfloat16> {
  template <typename V> static __device__ __forceinline__ void run(const float *acc, V &out) {
    for (int j = 0; j < 8; j += 2) {
      __nv_bfloat162 h = __floats2bfloat162_rn(acc[j], acc[j + 1]);
      uint32_t u;
      memcpy(&u, &h, 4);
      if (acc[j] != acc[j]) u = (u & 0xffff0000u) | 0x7fc0u;
      if (acc[j + 1] != acc[j + 1]) u = (u & 0x0000ffffu) | 0x7fc00000u;
      out.e[j] = (uint16_t)u, out.e[j + 1] = (uint16_t)(u >> 16);
    }
  }
};
template <> struct VecStore<dmacclFloat16> {
  template <typename V> static __device__ __forceinline__ void run(const float *acc, V &out) {
    for (int j = 0; j < 8; j += 2) {
      __half2 h = __floats2half2_rn(acc[j], acc[j + 1]);
      uint32_t u;
      memcpy(&u, &h, 4);
      if (acc[j] != acc[j]) u = (u & 0xffff0000u) | 0x7e00u;
      if (acc[j + 1] != acc[j + 1]) u = (u & 0x0000ffffu) | 0x7e000000u;
      out.e[j] = (uint16_t)u, out.e[j + 1] = (uint16_t)(u >> 16);
    }
  }
};
#endif

template <typename S> union Vec {
  uint4 u;
  S e[16 / sizeof(S)];
};

/* The elements of one 16-byte vector in the accumulation type. bf16 reads
 * two per 32-bit word with one operation each (the element-wise form
 * extracts each half first). */
template <int T> struct VecLoad {
  template <typename A, typename V> static __device__ __forceinline__ void run(const V &in, A *x) {
    for (size_t j = 0; j < sizeof(in.e) / sizeof(in.e[0]); j++) x[j] = Ty<T>::load(in.e[j]);
  }
};
template <> struct VecLoad<dmacclBfloat16> {
  template <typename V> static __device__ __forceinline__ void run(const V &in, float *x) {
    const uint32_t w[4] = {in.u.x, in.u.y, in.u.z, in.u.w};
    for (int i = 0; i < 4; i++) {
      x[2 * i] = __uint_as_float(w[i] << 16);             /* the low half: element 2i */
      x[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u); /* the high half */
    }
  }
};

/* Vector v of the result from the inputs' vectors in[k] (k < n). */
template <int T, int OP>
__device__ __forceinline__ uint4 combineVec(const Vec<typename Ty<T>::S> *in, int n,
                                            typename Ty<T>::A scale) {
  typedef typename Ty<T>::S S;
  typedef typename Ty<T>::A A;
  const int per = 16 / sizeof(S);
  A acc[per];
  A x[per];
  VecLoad<T>::run(in[0], acc);
  for (int k = 1; k < n; k++) {
    VecLoad<T>::run(in[k], x);
    for (int j = 0; j < per; j++) acc[j] = combine<A>(OP, acc[j], x[j]);
  }
  if (OP == dmacclAvg || OP == BASE_PREMULSUM)
    for (int j = 0; j < per; j++) acc[j] = finish<OP>(acc[j], n, scale);
  Vec<S> out;
  VecStore<T>::run(acc, out);
  return out.u;
}

/* N inputs known at compile time: each pass issues the loads of all N
 * inputs' U vectors (16 vectors per thread, 128 KB per CTA of 512 threads)
 * before any arithmetic, so one memory latency serves the whole pass (the
 * loop over any n below waits once per input). Returns the first vector
 * index it did not do. */
template <int T, int OP, int N>
__device__ __forceinline__ size_t vecPassesN(void *dst, const Srcs &s, size_t nv, size_t v,
                                             size_t stride, typename Ty<T>::A scale) {
  typedef typename Ty<T>::S S;
  const int U = N >= 16 ? 1 : 16 / N;
  for (; v + (U - 1) * stride < nv; v += U * stride) {
    Vec<S> in[U][N];
#pragma unroll
    for (int k = 0; k < N; k++)
#pragma unroll
      for (int u = 0; u < U; u++) in[u][k].u = ((const uint4 *)s.p[k])[v + u * stride];
#pragma unroll
    for (int u = 0; u < U; u++) ((uint4 *)dst)[v + u * stride] = combineVec<T, OP>(in[u], N, scale);
  }
  return v;
}

/* Any n: UNROLL vectors per thread and pass (8; 4 for 1-byte types, whose
 * 16 floats per vector fill registers), all loads of one input issued
 * before its arithmetic. */
template <int T, int OP>
__device__ __forceinline__ size_t vecPasses(void *dst, const Srcs &s, int n, size_t nv, size_t v,
                                            size_t stride, typename Ty<T>::A scale) {
  typedef typename Ty<T>::S S;
  typedef typename Ty<T>::A A;
  const size_t per = 16 / sizeof(S);
  const int UNROLL = sizeof(S) == 1 ? 4 : 8;
  for (; v + (UNROLL - 1) * stride < nv; v += UNROLL * stride) {
    A acc[UNROLL][16 / sizeof(S)];
    Vec<S> in[UNROLL];
    for (int u = 0; u < UNROLL; u++) in[u].u = ((const uint4 *)s.p[0])[v + u * stride];
    for (int u = 0; u < UNROLL; u++) VecLoad<T>::run(in[u], acc[u]);
    for (int k = 1; k < n; k++) {
      for (int u = 0; u < UNROLL; u++) in[u].u = ((const uint4 *)s.p[k])[v + u * stride];
      for (int u = 0; u < UNROLL; u++) {
        A x[16 / sizeof(S)];
        VecLoad<T>::run(in[u], x);
        for (size_t j = 0; j < per; j++) acc[u][j] = combine<A>(OP, acc[u][j], x[j]);
      }
    }
    for (int u = 0; u < UNROLL; u++) {
      if (OP == dmacclAvg || OP == BASE_PREMULSUM)
        for (size_t j = 0; j < per; j++) acc[u][j] = finish<OP>(acc[u][j], n, scale);
      Vec<S> out;
      VecStore<T>::run(acc[u], out);
      ((uint4 *)dst)[v + u * stride] = out.u;
    }
  }
  return v;
}

/* The passes for n inputs: 2, 4 and 8 (the input counts of 2, 4 and 8
 * GPUs) with all loads in flight at once for the types models reduce in
 * (bf16, fp16, float); the loop over any n otherwise (fewer kernels to
 * compile). */
template <int T, int OP, bool FAST> struct Passes {
  static __device__ __forceinline__ size_t run(void *dst, const Srcs &s, int n, size_t nv, size_t v,
                                               size_t stride, typename Ty<T>::A scale) {
    return vecPasses<T, OP>(dst, s, n, nv, v, stride, scale);
  }
};
template <int T, int OP> struct Passes<T, OP, true> {
  static __device__ __forceinline__ size_t run(void *dst, const Srcs &s, int n, size_t nv, size_t v,
                                               size_t stride, typename Ty<T>::A scale) {
    if (n == 2) return vecPassesN<T, OP, 2>(dst, s, nv, v, stride, scale);
    if (n == 4) return vecPassesN<T, OP, 4>(dst, s, nv, v, stride, scale);
    if (n == 8) return vecPassesN<T, OP, 8>(dst, s, nv, v, stride, scale);
    return vecPasses<T, OP>(dst, s, n, nv, v, stride, scale);
  }
};

/* Lines (plan.h PLAN_BUF_LINES): one 16-byte store carries 8 data bytes
 * and the flag twice, so a line that lands in two 8-byte halves is taken
 * only once both are there. Volatile: every poll reads memory (the L2,
 * where a peer's stores land). */
static __device__ __forceinline__ void storeLine(void *p, uint32_t lo, uint32_t hi) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(lo),
               "r"(EXEC_LINE_FLAG), "r"(hi), "r"(EXEC_LINE_FLAG)
               : "memory");
}
static __device__ __forceinline__ uint2 takeLine(uint4 *p) {
  uint4 l;
  do {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(l.x), "=r"(l.y), "=r"(l.z), "=r"(l.w)
                 : "l"(p)
                 : "memory");
  } while (l.y != EXEC_LINE_FLAG || l.w != EXEC_LINE_FLAG);
  *p = make_uint4(0, 0, 0, 0); /* read: 0 again until the peer's next use of the slot */
  return make_uint2(l.x, l.z);
}

/* Up to 8 bytes at p as the low bytes of a uint2 (the rest 0). */
static __device__ __forceinline__ uint2 load8(const char *p, size_t k, bool aligned) {
  if (aligned && k == 8) return *(const uint2 *)p;
  union {
    uint2 v;
    char b[8];
  } x;
  x.v = make_uint2(0, 0);
  for (size_t i = 0; i < k; i++) x.b[i] = p[i];
  return x.v;
}

/* One move as lines: unit v's 8 bytes into line v, by the thread that
 * reduces unit v in reduceLines (the same grid stride): a move that starts
 * where the reduction writes (in place) is read before it is written. */
static __device__ void storeLines(const execReduceMove &mv, size_t tid, size_t stride) {
  bool aligned = ((uintptr_t)mv.src & 7) == 0;
  size_t nl = mv.bytes ? (mv.bytes + 7) / 8 : 1; /* 0 bytes: a token line (plan.h planLines) */
  for (size_t v = tid; v < nl; v += stride) {
    size_t k = mv.bytes <= v * 8 ? 0 : mv.bytes - v * 8 < 8 ? mv.bytes - v * 8 : 8;
    uint2 d = k ? load8((const char *)mv.src + v * 8, k, aligned) : make_uint2(0, 0);
    storeLine((uint4 *)mv.dst + v, d.x, d.y);
  }
}

/* Copies bytes from `from` to `to` with the threads of one grid stride:
 * 16-byte vectors where both addresses allow, four loads in flight per
 * thread, bytes otherwise. */
static __device__ void copyPlain(const void *from, void *to, size_t bytes, size_t tid,
                                 size_t stride) {
  size_t head = 0;
  if ((((uintptr_t)from | (uintptr_t)to) & 15) == 0) {
    const uint4 *src = (const uint4 *)from;
    uint4 *dst = (uint4 *)to;
    size_t nv = bytes / 16, v = tid;
    for (; v + 3 * stride < nv; v += 4 * stride) {
      uint4 x0 = src[v], x1 = src[v + stride], x2 = src[v + 2 * stride], x3 = src[v + 3 * stride];
      dst[v] = x0, dst[v + stride] = x1, dst[v + 2 * stride] = x2, dst[v + 3 * stride] = x3;
    }
    for (; v < nv; v += stride) dst[v] = src[v];
    head = nv * 16;
  }
  for (size_t i = head + tid; i < bytes; i += stride) ((char *)to)[i] = ((const char *)from)[i];
}

/* stagesm: the blocks together copy every move (copyPlain; stagell:
 * lines); countAndSignal then has the last block
 * to finish its stores write the signals. Each block's stores are ordered
 * before its count by the system fence, and the count before the signals
 * (the last block fences again), so a peer that sees a signal sees every
 * block's bytes. */
static __device__ void storeMoves(const execReduceWait &w) {
  size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
         stride = (size_t)gridDim.x * blockDim.x;
  for (int m = 0; m < w.nmoves; m++) {
    const execReduceMove &mv = w.moves[m];
    if (mv.lines) {
      storeLines(mv, tid, stride);
      continue;
    }
    copyPlain(mv.src, mv.dst, mv.bytes, tid, stride);
  }
}
static __device__ void countAndSignal(const execReduceWait &w) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    if (atomicAdd(w.moveCount, 1u) == gridDim.x - 1) {
      __threadfence_system();
      for (int k = 0; k < w.nsignals; k++)
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(w.signals[k]), "r"(w.signalValue)
                     : "memory");
    }
  }
}

/* Waits until every flag of w has reached its value (warp 0 polls, each
 * lane a share of the ranks) and, after moves, until every block's stores
 * are done, then lets the block go on; the last block to get here sets the
 * flags back to 0 (reset) and the move count. The acquire loads order the
 * block's later reads of the inputs after the peers' copies, which their
 * signals follow. */
static __device__ __forceinline__ uint32_t loadAcquire(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
static __device__ void waitFlags(const execReduceWait &w, bool moved) {
  if (threadIdx.x < 32) {
    for (int p = (int)threadIdx.x; p < 256; p += 32)
      if (w.mask[p / 64] >> (p % 64) & 1)
        while ((int32_t)(loadAcquire(&w.flags[p]) - w.value) < 0) {
        }
    if (moved && threadIdx.x == 0)
      while (loadAcquire(w.moveCount) < gridDim.x) {
      }
  }
  __syncthreads();
  if ((w.reset || moved) && threadIdx.x == 0) {
    unsigned seen = gridDim.x == 1 ? 0 : atomicAdd(w.count, 1u);
    if (seen == gridDim.x - 1) {
      if (w.reset)
        for (int p = 0; p < 256; p++)
          if (w.mask[p / 64] >> (p % 64) & 1) w.flags[p] = 0;
      if (moved) *w.moveCount = 0;
      if (gridDim.x > 1) *w.count = 0;
    }
  }
}

/* stagell's reduction: unit u is 8 bytes of the result (8 / sizeof(S)
 * elements, fewer in the last); a line source gives unit u as line u, the
 * others from memory (8-byte loads and stores where `aligned`: every
 * pointer but the lines' is). Elements are combined in source order, as
 * reduceOne does. */
template <int T, int OP>
__device__ void reduceLines(void *dst, const Srcs &s, int n, size_t count, uint32_t lineSrcs,
                            bool aligned, typename Ty<T>::A scale) {
  typedef typename Ty<T>::S S;
  typedef typename Ty<T>::A A;
  const int per = 8 / sizeof(S);
  size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
         stride = (size_t)gridDim.x * blockDim.x, nu = (count + per - 1) / per;
  for (size_t u = tid; u < nu; u += stride) {
    int m = count - u * per < (size_t)per ? (int)(count - u * per) : per;
    A acc[per];
    for (int k = 0; k < n; k++) {
      union {
        uint2 v;
        S e[per];
      } x;
      if (lineSrcs >> k & 1)
        x.v = takeLine((uint4 *)s.p[k] + u);
      else
        x.v = load8((const char *)s.p[k] + u * 8, (size_t)m * sizeof(S), aligned);
      for (int j = 0; j < m; j++) {
        A a = Ty<T>::load(x.e[j]);
        acc[j] = k == 0 ? a : combine<A>(OP, acc[j], a);
      }
    }
    union {
      uint2 v;
      S e[per];
    } out;
    for (int j = 0; j < m; j++) {
      out.e[j] = Ty<T>::store(finish<OP>(acc[j], n, scale));
    }
    if (aligned && m == per)
      *((uint2 *)dst + u) = out.v;
    else
      for (int j = 0; j < m; j++) ((S *)dst)[u * per + j] = out.e[j];
  }
}

/* Elements [lo, hi) of the result, the grid's threads striding through
 * them (vectors of 16 bytes where `vec`: lo is then a whole number of
 * vectors, and so is hi but at the end of the data). */
template <int T, int OP>
__device__ __forceinline__ void reduceSpan(void *dst, const Srcs &s, int n, size_t lo, size_t hi,
                                           int vec, typename Ty<T>::A scale) {
  typedef typename Ty<T>::S S;
  const size_t per = 16 / sizeof(S); /* elements per vector */
  size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
         stride = (size_t)gridDim.x * blockDim.x;
  size_t head = lo;
  if (vec) {
    size_t nv = hi / per;
    size_t v = Passes < T, OP,
           T == dmacclBfloat16 || T == dmacclFloat16 ||
               T == dmacclFloat32 > ::run(dst, s, n, nv, lo / per + tid, stride, scale);
    for (; v < nv; v += stride) {
      typedef typename Ty<T>::A A;
      A acc[16 / sizeof(S)];
      Vec<S> x;
      x.u = ((const uint4 *)s.p[0])[v];
      VecLoad<T>::run(x, acc);
      for (int k = 1; k < n; k++) {
        x.u = ((const uint4 *)s.p[k])[v];
        A y[16 / sizeof(S)];
        VecLoad<T>::run(x, y);
        for (size_t j = 0; j < per; j++) acc[j] = combine<A>(OP, acc[j], y[j]);
      }
      if (OP == dmacclAvg || OP == BASE_PREMULSUM)
        for (size_t j = 0; j < per; j++) acc[j] = finish<OP>(acc[j], n, scale);
      Vec<S> out;
      VecStore<T>::run(acc, out);
      ((uint4 *)dst)[v] = out.u;
    }
    head = nv * per;
  }
  for (size_t i = head + tid; i < hi; i += stride) ((S *)dst)[i] = reduceOne<T, OP>(s, n, i, scale);
}

/* After piece k (execReduceWait.pieceSignals): the last block done with it
 * writes the peers' words, after every block's stores (as countAndSignal). */
static __device__ void signalPiece(const execReduceWait &w, int k) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    if (atomicAdd(&w.pieceCounts[k], 1u) == gridDim.x - 1) {
      __threadfence_system();
      for (int m = 0; m < w.npieceSignals; m++)
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(w.pieceSignals[m] +
                                                                 (size_t)k * w.pieceStride),
                     "r"(w.signalValue)
                     : "memory");
      w.pieceCounts[k] = 0; /* every block has counted: the next launch's */
    }
  }
}

/* Whether rank q's word is polled (execReduceWait.pieceMask). */
static __device__ __forceinline__ bool pieceRank(const execReduceWait &w, unsigned q) {
  return q < 256 && (w.pieceMask[q / 64] >> (q % 64) & 1);
}

/* Pieces (execReduceWait.pieces): piece k once its word (pieceMask: each
 * rank's word) has reached the value. Thread 0 polls its word, or thread q
 * rank q's; the barrier then orders the block's reads of the piece after
 * the copies the words follow (as waitFlags does). */
template <int T, int OP>
__device__ void reducePieces(void *dst, const Srcs &s, int n, size_t count, int vec,
                             const execReduceWait &w, typename Ty<T>::A scale) {
  bool masked = w.pieceMask[0] | w.pieceMask[1] | w.pieceMask[2] | w.pieceMask[3];
  for (int k = 0; k < w.pieces; k++) {
    size_t lo = (size_t)k * w.pieceCount,
           hi = lo + w.pieceCount < count ? lo + w.pieceCount : count;
    if (masked ? pieceRank(w, threadIdx.x) : threadIdx.x == 0) {
      const uint32_t *word = &w.pieceFlags[(size_t)k * w.pieceStride + (masked ? threadIdx.x : 0)];
      while ((int32_t)(loadAcquire(word) - w.value) < 0) {
      }
    }
    __syncthreads();
    if (lo < hi) reduceSpan<T, OP>(dst, s, n, lo, hi, vec, scale);
    if (w.npieceSignals) signalPiece(w, k);
  }
  if (w.reset) {
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned seen = gridDim.x == 1 ? 0 : atomicAdd(w.count, 1u);
      if (seen == gridDim.x - 1) {
        for (int k = 0; k < w.pieces; k++)
          for (unsigned q = 0; q < (masked ? 256u : 1u); q++)
            if (!masked || pieceRank(w, q)) w.pieceFlags[(size_t)k * w.pieceStride + q] = 0;
        if (gridDim.x > 1) *w.count = 0;
      }
    }
  }
}

/* The takes (execReduceTake), after the reduction: unit v of every take by
 * the thread of that grid stride, each line waited for, read and cleared;
 * a plain take as storeMoves copies a move. */
static __device__ void takeAll(const execReduceWait &w) {
  size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x,
         stride = (size_t)gridDim.x * blockDim.x;
  for (int t = 0; t < w.ntakes; t++) {
    const execReduceTake &tk = w.takes[t];
    if (tk.plain) {
      copyPlain(tk.src, tk.dst, tk.bytes, tid, stride);
      continue;
    }
    size_t nl = tk.bytes ? (tk.bytes + 7) / 8 : 1;
    bool aligned = ((uintptr_t)tk.dst & 7) == 0;
    for (size_t v = tid; v < nl; v += stride) {
      uint2 d = takeLine((uint4 *)tk.src + v);
      size_t k = tk.bytes <= v * 8 ? 0 : tk.bytes - v * 8 < 8 ? tk.bytes - v * 8 : 8;
      if (aligned && k == 8) {
        *((uint2 *)tk.dst + v) = d;
      } else {
        const char *b = (const char *)&d;
        for (size_t i = 0; i < k; i++) ((char *)tk.dst)[v * 8 + i] = b[i];
      }
    }
  }
}

template <int T, int OP>
__global__ void __launch_bounds__(512)
    dmacclReduceKernel(void *dst, Srcs s, int n, size_t count, int vec, execReduceWait w) {
  typedef typename Ty<T>::S S;
  typename Ty<T>::A scale = 0;
  if (OP == BASE_PREMULSUM) { /* the scalar in the op's type: read at the kernel's start */
    S raw;
    if (w.scalar)
      memcpy(&raw, w.scalar, sizeof(S));
    else
      memcpy(&raw, &w.scalarBits, sizeof(S)); /* little-endian: the value's bytes come first */
    scale = Ty<T>::load(raw);
  }
  if (w.pieces) {
    reducePieces<T, OP>(dst, s, n, count, vec, w, scale);
    return;
  }
  if (w.nmoves) storeMoves(w);
  /* One block and nothing to signal: the barrier is the block's own. */
  bool moved = w.moveCount && (gridDim.x > 1 || w.nsignals);
  if (moved)
    countAndSignal(w);
  else if (w.moveCount)
    __syncthreads();
  if (w.flags || moved) waitFlags(w, moved);
  if (w.lineSrcs && !count) { /* tokens (plan.h planLines): each line waited for and cleared */
    if (blockIdx.x == 0 && threadIdx.x < (unsigned)n && (w.lineSrcs >> threadIdx.x & 1))
      takeLine((uint4 *)s.p[threadIdx.x]);
  } else if (w.lineSrcs) {
    reduceLines<T, OP>(dst, s, n, count, w.lineSrcs, vec, scale);
  } else {
    reduceSpan<T, OP>(dst, s, n, 0, count, vec, scale);
  }
  if (w.ntakes) takeAll(w);
}

/* The handle of one instantiation of the kernel, asked for once and kept in
 * *slot (no guarded static: the build has none); NULL: launch it through
 * the runtime. Two threads may both ask: they get the same handle. */
#define KERNEL_NONE ((cudaKernel_t)(uintptr_t)1)
cudaKernel_t kernelOf(cudaKernel_t *slot, const void *fn) {
  cudaKernel_t k = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!k) {
    if (cudaGetKernel(&k, fn) != cudaSuccess || !k) {
      cudaGetLastError();
      k = KERNEL_NONE;
    }
    __atomic_store_n(slot, k, __ATOMIC_RELEASE);
  }
  return k == KERNEL_NONE ? NULL : k;
}

template <int T, int OP>
cudaError_t launchTyped(void *dst, const Srcs &s, int n, size_t count, int ctas,
                        const execReduceWait &w, cudaStream_t st, cudaEvent_t launched) {
  typedef typename Ty<T>::S S;
  int vec = ((uintptr_t)dst & 15) == 0;
  for (int k = 0; k < n && vec; k++) vec = ((uintptr_t)s.p[k] & 15) == 0;
  size_t units = vec ? count / (16 / sizeof(S)) + count % (16 / sizeof(S)) : count;
  if (w.lineSrcs) { /* 8-byte units; `vec`: every pointer but the lines' is 8-byte aligned */
    units = (count * sizeof(S) + 7) / 8;
    vec = ((uintptr_t)dst & 7) == 0;
    for (int k = 0; k < n && vec; k++) vec = (w.lineSrcs >> k & 1) || ((uintptr_t)s.p[k] & 7) == 0;
  }
  for (int m = 0; m < w.nmoves; m++) {
    size_t u = w.moves[m].lines ? (w.moves[m].bytes + 7) / 8 : (w.moves[m].bytes + 15) / 16;
    if (u > units) units = u;
  }
  for (int t = 0; t < w.ntakes; t++) {
    size_t u = w.takes[t].plain ? (w.takes[t].bytes + 15) / 16 : (w.takes[t].bytes + 7) / 8;
    if (u > units) units = u;
  }
  size_t blocks = (units + 511) / 512;
  if (blocks > (size_t)ctas) blocks = (size_t)ctas;
  if (blocks < 1) blocks = 1;
  if (launched) { /* the runtime's launch with a launch-completion event */
    cudaLaunchAttribute at[1];
    memset(at, 0, sizeof(at));
    at[0].id = cudaLaunchAttributeLaunchCompletionEvent;
    at[0].val.launchCompletionEvent.event = launched;
    at[0].val.launchCompletionEvent.flags = 0;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3(512);
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, dmacclReduceKernel<T, OP>, dst, s, n, count, vec, w);
  }
  /* Through the driver: 0.2 us less host time per launch than the
   * runtime's (bench/probes/hostapi.cu). The runtime's launch where the
   * driver's is unavailable or fails (it names the error). */
  static cudaKernel_t slot; /* zero before any launch */
  cudaKernel_t kernel = kernelOf(&slot, (const void *)dmacclReduceKernel<T, OP>);
  const cudaDriver *d = cudaDriverGet();
  if (kernel && d->launchKernel) {
    void *args[] = {&dst, (void *)&s, &n, &count, &vec, (void *)&w};
    if (d->launchKernel((CUfunction)(void *)kernel, (unsigned)blocks, 1, 1, 512, 1, 1, 0,
                        (CUstream)st, args, NULL) == CUDA_SUCCESS)
      return cudaSuccess;
  }
  dmacclReduceKernel<T, OP><<<(unsigned)blocks, 512, 0, st>>>(dst, s, n, count, vec, w);
  return cudaGetLastError();
}

template <int T>
cudaError_t launchOp(int op, void *dst, const Srcs &s, int n, size_t count, int ctas,
                     const execReduceWait &w, cudaStream_t st, cudaEvent_t ev) {
  switch (op) {
  case dmacclSum: return launchTyped<T, dmacclSum>(dst, s, n, count, ctas, w, st, ev);
  case dmacclProd: return launchTyped<T, dmacclProd>(dst, s, n, count, ctas, w, st, ev);
  case dmacclMax: return launchTyped<T, dmacclMax>(dst, s, n, count, ctas, w, st, ev);
  case dmacclMin: return launchTyped<T, dmacclMin>(dst, s, n, count, ctas, w, st, ev);
  case dmacclAvg: return launchTyped<T, dmacclAvg>(dst, s, n, count, ctas, w, st, ev);
  case BASE_PREMULSUM: return launchTyped<T, BASE_PREMULSUM>(dst, s, n, count, ctas, w, st, ev);
  default: return cudaErrorInvalidValue;
  }
}

} // namespace

/* Type id's launch, named execReduceK::launch_<name> (cuda_reduce_launch.h). */
#define DMACCL_REDUCE_DEFINE(id, name)                                                             \
  cudaError_t execReduceK::launch_##name(int op, void *dst, const Srcs &s, int n, size_t count,    \
                                         int ctas, const execReduceWait &w, cudaStream_t st,       \
                                         cudaEvent_t ev) {                                         \
    return launchOp<id>(op, dst, s, n, count, ctas, w, st, ev);                                    \
  }

#endif
