/*
 * The reduction kernel against the host executor's arithmetic, bit for bit:
 * every type and op it takes, 1-8 inputs, counts from 1 to 1M+3, aligned and
 * misaligned pointers, 1 and 8 CTAs, the output poisoned with a guard after
 * it; and a launch captured into a CUDA graph, replayed on new inputs.
 * Inputs are random bit patterns, except that float and double keep
 * moderate exponents (no NaN: x86 and GPUs make NaNs with different bits)
 * and no small type is NaN. Then the kernel's waits for flags and
 * stagesm's stores and signals before them.
 */
#include "gpu_common.h"
#include "common/colls.h"
#include "../src/base/reduce.h"
#include "../src/base/reduce_math.h"
#include "../src/exec/cuda_reduce.h"

#include <time.h>

#define GUARD 64
#define CUDA_OK(x)                                                                                 \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      TEST_FAIL("%s: %s", #x, cudaGetErrorString(e_));                                             \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* Random elements of type t without NaN (floats: exponents near 0). */
static void fill(void *p, size_t count, dmacclDataType_t t, uint64_t seed) {
  dataFillRandom(p, count * collTypeSize(t), seed);
  unsigned char *b = p;
  for (size_t i = 0; i < count; i++) {
    switch (t) {
    case dmacclFloat32: {
      uint32_t u;
      memcpy(&u, b + 4 * i, 4);
      u = (u & 0x807fffffu) | ((uint32_t)(120 + u % 16) << 23);
      memcpy(b + 4 * i, &u, 4);
    } break;
    case dmacclFloat64: {
      uint64_t u;
      memcpy(&u, b + 8 * i, 8);
      u = (u & 0x800fffffffffffffull) | ((uint64_t)(1016 + u % 16) << 52);
      memcpy(b + 8 * i, &u, 8);
    } break;
    case dmacclFloat16:
    case dmacclBfloat16: {
      uint16_t u;
      memcpy(&u, b + 2 * i, 2);
      float f = t == dmacclFloat16 ? rmHalfToFloat(u) : rmBf16ToFloat(u);
      if (f != f) u &= 0x3fffu; /* NaN pattern: a finite one */
      memcpy(b + 2 * i, &u, 2);
    } break;
    case dmacclFloat8e4m3:
      if ((b[i] & 0x7f) == 0x7f) b[i] &= 0x3f;
      break;
    case dmacclFloat8e5m2:
      if ((b[i] & 0x7c) == 0x7c && (b[i] & 3)) b[i] &= 0x3f;
      break;
    default: break;
    }
  }
}

static int runCase(dmacclDataType_t t, dmacclRedOp_t op, int n, size_t count, size_t mis, int ctas,
                   void *dev[8], void *devDst, unsigned char *host[8], unsigned char *want,
                   unsigned char *got, uint64_t seed) {
  size_t es = collTypeSize(t), bytes = count * es;
  const void *hs[8], *ds[8];
  for (int k = 0; k < n; k++) {
    fill(host[k], count, t, seed + (uint64_t)k);
    CUDA_OK(cudaMemcpy((char *)dev[k] + mis * (k % 2), host[k], bytes, cudaMemcpyHostToDevice));
    hs[k] = host[k];
    ds[k] = (char *)dev[k] + mis * (k % 2);
  }
  memset(want, 0xA5, bytes + GUARD);
  /* a premultiplied sum: a random scalar of the type, in the kernel's
   * parameters (odd seeds) or read from device memory (even) */
  uint64_t scalar = 0;
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  if (op == BASE_PREMULSUM) {
    fill(&scalar, 1, t, seed + 99);
    if (seed & 1) {
      w.scalarBits = scalar;
    } else {
      CUDA_OK(cudaMemcpy((char *)devDst + bytes + GUARD + 16, &scalar, 8, cudaMemcpyHostToDevice));
      w.scalar = (char *)devDst + bytes + GUARD + 16;
    }
  }
  baseReduceHostScaled(want, hs, n, count, t, op, &scalar);
  CUDA_OK(cudaMemset(devDst, 0xA5, bytes + GUARD + 16));
  void *dst = (char *)devDst + mis;
  CUDA_OK(op == BASE_PREMULSUM ? execCudaReduceWait(dst, ds, n, count, t, op, ctas, &w, 0)
                               : execCudaReduce(dst, ds, n, count, t, op, ctas, 0));
  CUDA_OK(cudaMemcpy(got, dst, bytes + GUARD, cudaMemcpyDeviceToHost));
  long long d = testFirstDiff(got, want, bytes + GUARD);
  if (d >= 0) {
    TEST_FAIL("type %d op %s n %d count %zu misalign %zu ctas %d: byte %lld is 0x%02x, host 0x%02x",
              (int)t, baseRedOpName(op), n, count, mis, ctas, d, got[d], want[d]);
    return 1;
  }
  return 0;
}

/* A graph of one bf16 sum of two inputs by the kernel with w (8 CTAs),
 * captured on stream a. */
static cudaError_t captureSum(cudaGraphExec_t *ge, void *dst, const void *const *srcs, size_t count,
                              const execReduceWait *w, cudaStream_t a) {
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) return e;
  cudaError_t launch = execCudaReduceWait(dst, srcs, 2, count, dmacclBfloat16, dmacclSum, 8, w, a);
  e = cudaStreamEndCapture(a, &g);
  if (launch != cudaSuccess) e = launch;
  if (e == cudaSuccess) e = cudaGraphInstantiate(ge, g, 0);
  if (g) cudaGraphDestroy(g);
  return e;
}

/*
 * The kernel that waits for flags itself (execReduceWait, a staged
 * reduction's DATA words): launched before its inputs exist, it must not
 * finish while a flag it waits for is below its value (cyclic >=), must read
 * the inputs written before the flags, and with reset must set exactly its
 * flags back to 0 and its block count to 0, every replay of a graph.
 */
static int kernelWaitCase(int reset, int graph, void *dev[8], void *devDst, unsigned char *host[8],
                          unsigned char *want, unsigned char *got, uint64_t seed) {
  const size_t count = 65537; /* bf16: 8 blocks */
  const int replays = graph ? 3 : 1;
  uint32_t *flags = NULL, *kcount = NULL;
  cudaStream_t a, b;
  CUDA_OK(cudaMalloc((void **)&flags, 8 * sizeof(uint32_t)));
  CUDA_OK(cudaMalloc((void **)&kcount, sizeof(uint32_t)));
  CUDA_OK(cudaMemset(kcount, 0, sizeof(uint32_t)));
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  const uint32_t value = reset ? 1 : 0xfffffffeu; /* eager epochs wrap: 3 comes after it */
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  w.flags = flags;
  w.mask[0] = (1ull << 1) | (1ull << 3);
  w.value = value;
  w.reset = reset;
  w.count = kcount;
  const void *ds[2] = {dev[0], dev[1]};
  cudaGraphExec_t ge = NULL;
  if (graph) CUDA_OK(captureSum(&ge, devDst, ds, count, &w, a));
  int rc = 0;
  for (int rep = 0; rep < replays && !rc; rep++) {
    uint32_t before[8];
    for (int k = 0; k < 8; k++) before[k] = 0x55u + (uint32_t)k;
    before[1] = value - 1, before[3] = reset ? 0 : value - 1;
    CUDA_OK(cudaMemcpy(flags, before, sizeof(before), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dev[0], 0xEE, count * 2));
    CUDA_OK(cudaMemset(dev[1], 0xEE, count * 2));
    CUDA_OK(cudaMemset(devDst, 0xA5, count * 2 + GUARD));
    CUDA_OK(cudaDeviceSynchronize());
    if (graph)
      CUDA_OK(cudaGraphLaunch(ge, a));
    else
      CUDA_OK(execCudaReduceWait(devDst, ds, 2, count, dmacclBfloat16, dmacclSum, 8, &w, a));
    /* One flag raised, the other still below: the kernel keeps waiting. */
    uint32_t one = value;
    CUDA_OK(cudaMemcpyAsync(flags + 1, &one, 4, cudaMemcpyHostToDevice, b));
    CUDA_OK(cudaStreamSynchronize(b));
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (cudaStreamQuery(a) != cudaErrorNotReady) {
      TEST_FAIL("reset %d graph %d: the kernel finished with a flag below its value", reset, graph);
      rc = 1;
      break;
    }
    /* The inputs, then the last flag (past the value: >= holds). */
    const void *hs[2] = {host[0], host[1]};
    for (int k = 0; k < 2; k++) {
      fill(host[k], count, dmacclBfloat16, seed + (uint64_t)(rep * 2 + k));
      CUDA_OK(cudaMemcpyAsync(dev[k], host[k], count * 2, cudaMemcpyHostToDevice, b));
    }
    uint32_t last = value + 5;
    CUDA_OK(cudaMemcpyAsync(flags + 3, &last, 4, cudaMemcpyHostToDevice, b));
    CUDA_OK(cudaStreamSynchronize(b));
    CUDA_OK(cudaStreamSynchronize(a));
    memset(want, 0xA5, count * 2 + GUARD);
    baseReduceHost(want, hs, 2, count, dmacclBfloat16, dmacclSum);
    CUDA_OK(cudaMemcpy(got, devDst, count * 2 + GUARD, cudaMemcpyDeviceToHost));
    long long d = testFirstDiff(got, want, count * 2 + GUARD);
    if (d >= 0) {
      TEST_FAIL("reset %d graph %d replay %d: byte %lld is 0x%02x, host 0x%02x", reset, graph, rep,
                d, got[d], want[d]);
      rc = 1;
      break;
    }
    uint32_t after[8], kc;
    CUDA_OK(cudaMemcpy(after, flags, sizeof(after), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&kc, kcount, sizeof(kc), cudaMemcpyDeviceToHost));
    for (int k = 0; k < 8 && !rc; k++) {
      uint32_t expect = k == 1 ? (reset ? 0 : value) : k == 3 ? (reset ? 0 : last) : before[k];
      if (after[k] != expect) {
        TEST_FAIL("reset %d graph %d replay %d: flag %d is %u, expected %u", reset, graph, rep, k,
                  after[k], expect);
        rc = 1;
      }
    }
    if (!rc && kc != 0) {
      TEST_FAIL("reset %d graph %d: the block count is %u after the kernel", reset, graph, kc);
      rc = 1;
    }
  }
  if (rc) cudaDeviceSynchronize();
  if (ge) cudaGraphExecDestroy(ge);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaFree(flags);
  cudaFree(kcount);
  return rc;
}

/*
 * push1's kernel (execReduceWait pieces with pieceMask): three pieces, each
 * gated by the words of ranks 1 and 3 of a 4-rank row (pieceFlags[k*4 +
 * q]), and the word of rank 2 (itself) in the same row written after each
 * piece (pieceSignals, as push1's AllReduce signals its lane C). The words
 * of ranks 0 and 2 start below the value, so a kernel that polled them
 * would hang. With one rank's word of piece 0 raised the kernel must not
 * signal piece 0; with both, it must signal piece 0 (whose bytes are then
 * final) and nothing of pieces 1 and 2 (bytes still poisoned); then piece
 * 1 alone, then 2. Eager (values past a wrap) and graph replays (value 1,
 * the polled words reset to 0, its own words left holding the signal, the
 * others untouched, the counts 0 again).
 */
static int pieceMaskCase(int graph, void *dev[8], void *devDst, unsigned char *host[8],
                         unsigned char *want, unsigned char *got, uint64_t seed) {
  const size_t count = 2 * 4096 + 2000; /* bf16: three pieces of 4096, the last short */
  const int replays = graph ? 3 : 1;
  uint32_t *flags = NULL, *kcount = NULL, *pcount = NULL;
  cudaStream_t a, b;
  CUDA_OK(cudaMalloc((void **)&flags, 12 * sizeof(uint32_t)));
  CUDA_OK(cudaMalloc((void **)&kcount, sizeof(uint32_t)));
  CUDA_OK(cudaMalloc((void **)&pcount, 8 * sizeof(uint32_t)));
  CUDA_OK(cudaMemset(kcount, 0, sizeof(uint32_t)));
  CUDA_OK(cudaMemset(pcount, 0, 8 * sizeof(uint32_t)));
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  const uint32_t value = graph ? 1 : 0xfffffffeu;
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  w.pieces = 3;
  w.pieceCount = 4096;
  w.pieceFlags = flags;
  w.pieceStride = 4;
  w.pieceMask[0] = (1ull << 1) | (1ull << 3);
  w.value = value;
  w.reset = graph;
  w.count = kcount;
  w.signalValue = value;
  w.npieceSignals = 1;
  w.pieceSignals[0] = flags + 2; /* rank 2's own word of each piece, in the polled row */
  w.pieceCounts = pcount;
  const void *ds[2] = {dev[0], dev[1]};
  cudaGraphExec_t ge = NULL;
  if (graph) CUDA_OK(captureSum(&ge, devDst, ds, count, &w, a));
  int rc = 0;
  for (int rep = 0; rep < replays && !rc; rep++) {
    /* every word below the value (cyclically, for both values) */
    uint32_t before[12];
    for (int k = 0; k < 12; k++) before[k] = 0x80000001u + (uint32_t)k;
    for (int k = 0; k < 3; k++) before[k * 4 + 1] = before[k * 4 + 3] = graph ? 0 : value - 1;
    for (int k = 0; k < 3; k++) before[k * 4 + 2] = graph ? 0 : value - 1;
    CUDA_OK(cudaMemcpy(flags, before, sizeof(before), cudaMemcpyHostToDevice));
    const void *hs[2] = {host[0], host[1]};
    for (int k = 0; k < 2; k++) {
      fill(host[k], count, dmacclBfloat16, seed + (uint64_t)(rep * 2 + k));
      CUDA_OK(cudaMemcpy(dev[k], host[k], count * 2, cudaMemcpyHostToDevice));
    }
    CUDA_OK(cudaMemset(devDst, 0xA5, count * 2 + GUARD));
    memset(want, 0xA5, count * 2 + GUARD);
    baseReduceHost(want, hs, 2, count, dmacclBfloat16, dmacclSum);
    CUDA_OK(cudaDeviceSynchronize());
    if (graph)
      CUDA_OK(cudaGraphLaunch(ge, a));
    else
      CUDA_OK(execCudaReduceWait(devDst, ds, 2, count, dmacclBfloat16, dmacclSum, 8, &w, a));
    struct timespec ts = {0, 20 * 1000 * 1000};
    uint32_t one = value, past = value + 3, now[12];
    /* piece 0, rank 1's word only: no piece done */
    CUDA_OK(cudaMemcpyAsync(flags + 1, &one, 4, cudaMemcpyHostToDevice, b));
    CUDA_OK(cudaStreamSynchronize(b));
    nanosleep(&ts, NULL);
    CUDA_OK(cudaMemcpyAsync(now, flags, sizeof(now), cudaMemcpyDeviceToHost, b));
    CUDA_OK(cudaStreamSynchronize(b));
    if (now[2] == value || cudaStreamQuery(a) != cudaErrorNotReady) {
      TEST_FAIL("graph %d: piece 0 signalled with one of its two words", graph);
      rc = 1;
      break;
    }
    /* ... and rank 3's (past the value: >= holds): piece 0 signalled, its
     * bytes final, nothing of pieces 1 and 2; then piece 1, then 2 */
    for (int k = 0; k < 3 && !rc; k++) {
      if (k) CUDA_OK(cudaMemcpyAsync(flags + k * 4 + 1, &past, 4, cudaMemcpyHostToDevice, b));
      CUDA_OK(cudaMemcpyAsync(flags + k * 4 + 3, k ? &one : &past, 4, cudaMemcpyHostToDevice, b));
      CUDA_OK(cudaStreamSynchronize(b));
      for (int tries = 0; tries < 500; tries++) {
        CUDA_OK(cudaMemcpyAsync(now, flags, sizeof(now), cudaMemcpyDeviceToHost, b));
        CUDA_OK(cudaStreamSynchronize(b));
        if (now[k * 4 + 2] == value || (k == 2 && graph && cudaStreamQuery(a) == cudaSuccess))
          break;
        nanosleep(&ts, NULL);
      }
      if (k == 2) break; /* the graph's reset may already have run: checked below */
      CUDA_OK(cudaMemcpyAsync(got, devDst, count * 2, cudaMemcpyDeviceToHost, b));
      CUDA_OK(cudaStreamSynchronize(b));
      size_t done = (size_t)(k + 1) * 4096 * 2;
      int early = 0;
      for (size_t i = done; i < count * 2 && !early; i++) early = got[i] != 0xA5;
      for (int q = k + 1; q < 3; q++) early |= now[q * 4 + 2] == value;
      if (now[k * 4 + 2] != value || memcmp(got, want, done) || early ||
          cudaStreamQuery(a) != cudaErrorNotReady) {
        TEST_FAIL("graph %d: piece %d not signalled (%u), not final, or a later piece done early",
                  graph, k, now[k * 4 + 2]);
        rc = 1;
      }
    }
    if (rc) break;
    CUDA_OK(cudaStreamSynchronize(a));
    CUDA_OK(cudaMemcpy(got, devDst, count * 2 + GUARD, cudaMemcpyDeviceToHost));
    long long d = testFirstDiff(got, want, count * 2 + GUARD);
    if (d >= 0) {
      TEST_FAIL("graph %d replay %d: byte %lld is 0x%02x, host 0x%02x", graph, rep, d, got[d],
                want[d]);
      rc = 1;
      break;
    }
    uint32_t after[12], pc[8], kc;
    CUDA_OK(cudaMemcpy(after, flags, sizeof(after), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(pc, pcount, sizeof(pc), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&kc, kcount, sizeof(kc), cudaMemcpyDeviceToHost));
    for (int k = 0; k < 12 && !rc; k++) {
      /* polled: 0 after a graph's reset, else as written (rank 1's of
       * piece 0 and rank 3's of pieces 1-2 the value, the others past it);
       * its own: the signal; rank 0's: untouched */
      uint32_t written = k % 4 == 1 ? (k == 1 ? value : past) : (k == 3 ? past : value);
      uint32_t expect = k % 4 == 2 ? value : k % 4 == 0 ? before[k] : graph ? 0 : written;
      if (after[k] != expect) {
        TEST_FAIL("graph %d replay %d: word %d is %u, expected %u", graph, rep, k, after[k],
                  expect);
        rc = 1;
      }
    }
    for (int k = 0; k < 8 && !rc; k++)
      if (pc[k] || (graph && kc)) {
        TEST_FAIL("graph %d: piece count %d is %u, block count %u after the kernel", graph, k,
                  pc[k], kc);
        rc = 1;
      }
  }
  if (rc) cudaDeviceSynchronize();
  if (ge) cudaGraphExecDestroy(ge);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaFree(flags);
  cudaFree(kcount);
  cudaFree(pcount);
  return rc;
}

/*
 * stagesm's kernel (execReduceWait moves and signals), in place as an
 * AllReduce runs it: it must store its input X into the "peer's slot" P
 * and raise the signal word while it still waits for its own flag (so the
 * signal comes before the wait, with P complete when the signal is seen),
 * then reduce X + Y into X. P must hold the original X (every block's
 * stores done before any block overwrites X), and the move and block
 * counts must be 0 again, eagerly and over graph replays.
 */
static int moveCase(int graph, void *dev[8], unsigned char *host[8], unsigned char *want,
                    unsigned char *got, uint64_t seed) {
  const size_t count = (1u << 20) + 5, bytes = count * 2; /* bf16: 8 blocks of 512 threads */
  const int replays = graph ? 3 : 1;
  void *X = dev[2], *Y = dev[3], *P = dev[4];
  uint32_t *words = NULL; /* [0] the flag waited for, [1] the signal, [2] moves, [3] blocks */
  cudaStream_t a, b;
  CUDA_OK(cudaMalloc((void **)&words, 4 * sizeof(uint32_t)));
  CUDA_OK(cudaMemset(words, 0, 4 * sizeof(uint32_t)));
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  const uint32_t value = graph ? 1 : 0xfffffffeu;
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  w.flags = words;
  w.mask[0] = 1;
  w.value = value;
  w.reset = graph;
  w.count = words + 3;
  w.nmoves = 1;
  w.moves[0] = (execReduceMove){X, P, bytes, 0};
  w.nsignals = 1;
  w.signals[0] = words + 1;
  w.signalValue = value;
  w.moveCount = words + 2;
  const void *ds[2] = {X, Y};
  cudaGraphExec_t ge = NULL;
  if (graph) CUDA_OK(captureSum(&ge, X, ds, count, &w, a));
  int rc = 0;
  for (int rep = 0; rep < replays && !rc; rep++) {
    const void *hs[2] = {host[0], host[1]};
    fill(host[0], count, dmacclBfloat16, seed + (uint64_t)rep * 2);
    fill(host[1], count, dmacclBfloat16, seed + (uint64_t)rep * 2 + 1);
    uint32_t start[2] = {value - 1, 0x77u};
    CUDA_OK(cudaMemcpy(words, start, sizeof(start), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(X, host[0], bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(Y, host[1], bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(P, 0xEE, bytes + GUARD));
    CUDA_OK(cudaDeviceSynchronize());
    if (graph)
      CUDA_OK(cudaGraphLaunch(ge, a));
    else
      CUDA_OK(execCudaReduceWait(X, ds, 2, count, dmacclBfloat16, dmacclSum, 8, &w, a));
    /* The signal comes while the kernel waits; P is complete by then. */
    uint32_t sig = 0;
    for (int tries = 0; tries < 5000 && sig != value; tries++) {
      CUDA_OK(cudaMemcpyAsync(&sig, words + 1, 4, cudaMemcpyDeviceToHost, b));
      CUDA_OK(cudaStreamSynchronize(b));
    }
    if (sig != value) {
      TEST_FAIL("graph %d replay %d: the signal word is %u, not %u", graph, rep, sig, value);
      rc = 1;
      break;
    }
    CUDA_OK(cudaMemcpyAsync(got, P, bytes + GUARD, cudaMemcpyDeviceToHost, b));
    CUDA_OK(cudaStreamSynchronize(b));
    memcpy(want, host[0], bytes);
    memset(want + bytes, 0xEE, GUARD);
    long long d = testFirstDiff(got, want, bytes + GUARD);
    if (d >= 0 || cudaStreamQuery(a) != cudaErrorNotReady) {
      TEST_FAIL("graph %d replay %d: after the signal, P byte %lld differs or the kernel did not "
                "wait for its flag",
                graph, rep, d);
      rc = 1;
      break;
    }
    uint32_t last = value + 5; /* past the value (cyclic >=) */
    CUDA_OK(cudaMemcpyAsync(words, &last, 4, cudaMemcpyHostToDevice, b));
    CUDA_OK(cudaStreamSynchronize(b));
    CUDA_OK(cudaStreamSynchronize(a));
    baseReduceHost(want, hs, 2, count, dmacclBfloat16, dmacclSum);
    CUDA_OK(cudaMemcpy(got, X, bytes, cudaMemcpyDeviceToHost));
    d = testFirstDiff(got, want, bytes);
    if (d >= 0) {
      TEST_FAIL("graph %d replay %d: result byte %lld is 0x%02x, host 0x%02x", graph, rep, d,
                got[d], want[d]);
      rc = 1;
      break;
    }
    CUDA_OK(cudaMemcpy(got, P, bytes, cudaMemcpyDeviceToHost));
    if ((d = testFirstDiff(got, host[0], bytes)) >= 0) {
      TEST_FAIL("graph %d replay %d: P byte %lld was overwritten by the result", graph, rep, d);
      rc = 1;
      break;
    }
    uint32_t after[4];
    CUDA_OK(cudaMemcpy(after, words, sizeof(after), cudaMemcpyDeviceToHost));
    if (after[0] != (graph ? 0 : last) || after[2] != 0 || after[3] != 0) {
      TEST_FAIL("graph %d replay %d: flag %u (expected %u), move count %u, block count %u", graph,
                rep, after[0], graph ? 0 : last, after[2], after[3]);
      rc = 1;
    }
  }
  if (rc) cudaDeviceSynchronize();
  if (ge) cudaGraphExecDestroy(ge);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaFree(words);
  return rc;
}

/*
 * stagell's kernel (lines, plan.h PLAN_BUF_LINES), two ranks on one GPU:
 * rank 1's kernel is launched first and must still be waiting for rank 0's
 * lines after 20 ms; rank 0's kernel then writes its input as lines into
 * rank 1's slot and reads rank 1's from its own. Both results must equal
 * the host's reduction in rank order, and both line slots must be all 0
 * again (every line read is cleared). In place, the kernel's moves read
 * what its reduction writes: each unit's thread reads it before it writes
 * it, or (odd seeds) the block barrier (moveCount) keeps all moves before
 * any write, and its words must be 0 again. `mis`: inputs off 8-byte alignment
 * (the element-wise path); graphs: each rank's kernel captured, replayed
 * twice on new data.
 */
static int lineCase(dmacclDataType_t t, dmacclRedOp_t op, size_t count, size_t mis, int inPlace,
                    int graph, void *dev[8], unsigned char *host[8], unsigned char *want,
                    unsigned char *got, uint64_t seed) {
  const size_t es = collTypeSize(t), bytes = count * es, lb = 2 * ((bytes + 7) / 8 * 8);
  char *X[2] = {(char *)dev[0] + mis, (char *)dev[1] + mis}, *D[2], *L[2] = {dev[4], dev[5]};
  for (int r = 0; r < 2; r++) D[r] = inPlace ? X[r] : (char *)dev[2 + r] + mis;
  uint32_t *words = NULL; /* per rank: [0] moves, [1] blocks */
  cudaStream_t st[2];
  CUDA_OK(cudaMalloc((void **)&words, 4 * sizeof(uint32_t)));
  CUDA_OK(cudaMemset(words, 0, 4 * sizeof(uint32_t)));
  CUDA_OK(cudaMemset(L[0], 0, lb + GUARD));
  CUDA_OK(cudaMemset(L[1], 0, lb + GUARD));
  execReduceWait w[2];
  const void *src[2][2];
  uint64_t scalar = 0; /* a premultiplied sum's, in the kernels' parameters */
  if (op == BASE_PREMULSUM) fill(&scalar, 1, t, seed + 77);
  for (int r = 0; r < 2; r++) {
    CUDA_OK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    memset(&w[r], 0, sizeof(w[r]));
    w[r].scalarBits = scalar;
    w[r].nmoves = 1;
    w[r].moves[0] = (execReduceMove){X[r], L[1 - r], bytes, 1};
    w[r].lineSrcs = 1u << (1 - r); /* the peer's contribution, in rank order */
    /* in place: the executor's form (the thread that stores a unit's line
     * reduces it: no barrier), or the block barrier (other shapes of
     * overlap), by the seed */
    if (inPlace && (seed & 1)) w[r].moveCount = words + 2 * r, w[r].count = words + 2 * r + 1;
    src[r][r] = X[r];
    src[r][1 - r] = L[r];
  }
  cudaGraphExec_t ge[2] = {NULL, NULL};
  for (int r = 0; r < 2 && graph; r++) {
    cudaGraph_t g = NULL;
    CUDA_OK(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeThreadLocal));
    cudaError_t e = execCudaReduceWait(D[r], src[r], 2, count, t, op, 32, &w[r], st[r]);
    CUDA_OK(cudaStreamEndCapture(st[r], &g));
    CUDA_OK(e);
    CUDA_OK(cudaGraphInstantiate(&ge[r], g, 0));
    cudaGraphDestroy(g);
  }
  int rc = 0;
  for (int rep = 0; rep < (graph ? 2 : 1) && !rc; rep++) {
    for (int r = 0; r < 2; r++) {
      fill(host[r], count, t, seed + (uint64_t)rep * 2 + (uint64_t)r);
      CUDA_OK(cudaMemcpy(X[r], host[r], bytes, cudaMemcpyHostToDevice));
      if (!inPlace) CUDA_OK(cudaMemset(D[r], 0xEE, bytes + GUARD));
    }
    CUDA_OK(cudaDeviceSynchronize());
    for (int r = 1; r >= 0; r--) {
      if (graph)
        CUDA_OK(cudaGraphLaunch(ge[r], st[r]));
      else
        CUDA_OK(execCudaReduceWait(D[r], src[r], 2, count, t, op, 32, &w[r], st[r]));
      if (r == 1) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (cudaStreamQuery(st[1]) != cudaErrorNotReady) {
          TEST_FAIL("lines %s count %zu: rank 1's kernel did not wait for rank 0's lines",
                    collTypeName(t), count);
          rc = 1;
        }
      }
    }
    CUDA_OK(cudaDeviceSynchronize());
    const void *hs[2] = {host[0], host[1]};
    baseReduceHostScaled(want, hs, 2, count, t, op, &scalar);
    memset(want + bytes, 0xEE, GUARD);
    for (int r = 0; r < 2 && !rc; r++) {
      CUDA_OK(cudaMemcpy(got, D[r], bytes + (inPlace ? 0 : GUARD), cudaMemcpyDeviceToHost));
      long long d = testFirstDiff(got, want, bytes + (inPlace ? 0 : GUARD));
      if (d >= 0) {
        TEST_FAIL("lines %s op %d count %zu mis %zu in place %d graph %d replay %d: rank %d byte "
                  "%lld is 0x%02x, host 0x%02x",
                  collTypeName(t), (int)op, count, mis, inPlace, graph, rep, r, d, got[d], want[d]);
        rc = 1;
      }
      CUDA_OK(cudaMemcpy(got, L[r], lb + GUARD, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < lb + GUARD && !rc; i++)
        if (got[i]) {
          TEST_FAIL("lines %s count %zu: rank %d's line slot byte %zu is %d after the kernel",
                    collTypeName(t), count, r, i, got[i]);
          rc = 1;
        }
    }
    uint32_t after[4];
    CUDA_OK(cudaMemcpy(after, words, sizeof(after), cudaMemcpyDeviceToHost));
    if (!rc && (after[0] | after[1] | after[2] | after[3])) {
      TEST_FAIL("lines in place: move and block counts %u %u %u %u after the kernels", after[0],
                after[1], after[2], after[3]);
      rc = 1;
    }
  }
  if (rc) cudaDeviceSynchronize();
  for (int r = 0; r < 2; r++) {
    if (ge[r]) cudaGraphExecDestroy(ge[r]);
    cudaStreamDestroy(st[r]);
  }
  cudaFree(words);
  return rc;
}

/*
 * stagell's movement form among three ranks on one GPU, one kernel each:
 * rank r stores its block for each peer p as lines into p's line slot (at
 * r's share), takes the lines of peer r-1 as its reduction of one source
 * (a copy of bytes) and those of peer r+1 as a take (execReduceTake: the
 * executor's merged launch). Block sizes random, unaligned, and one empty
 * (0 -> 2: a token line, and rank 2 takes a token). Kernels launched in the
 * order 2, 1, 0; eager or (graph) each captured and replayed twice. Every
 * block must land, nothing past it, and every line slot must be 0 again.
 */
static int takeCase(int graph, void *dev[8], unsigned char *host[8], unsigned char *got,
                    uint64_t seed) {
  enum { N = 3, MAXB = 70000 };
  const size_t share = 2 * (MAXB + 8) / 16 * 16 + 16;
  char *S[N], *R[N], *L[N];
  for (int r = 0; r < N; r++)
    S[r] = (char *)dev[r], R[r] = (char *)dev[3 + r], L[r] = (char *)dev[6] + r * N * share;
  size_t b[N][N];
  uint64_t x = seed;
  for (int f = 0; f < N; f++)
    for (int t = 0; t < N; t++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      b[f][t] = f == t ? 0 : (x >> 33) % MAXB;
    }
  b[0][2] = 0;
  cudaStream_t st[N];
  execReduceWait w[N];
  const void *src[N];
  void *dst[N];
  size_t cnt[N];
  for (int r = 0; r < N; r++) {
    CUDA_OK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    CUDA_OK(cudaMemset(L[r], 0, N * share));
    memset(&w[r], 0, sizeof(w[r]));
    for (int d = 1; d < N; d++) {
      int p = (r + d) % N;
      w[r].moves[w[r].nmoves++] =
          (execReduceMove){S[r] + p * MAXB + 1, L[p] + r * share, b[r][p], 1};
    }
    int p1 = (r + N - 1) % N, p2 = (r + 1) % N;
    src[r] = L[r] + p1 * share, dst[r] = R[r] + p1 * MAXB + 3, cnt[r] = b[p1][r];
    w[r].lineSrcs = 1;
    w[r].ntakes = 1;
    w[r].takes[0] = (execReduceTake){L[r] + p2 * share, R[r] + p2 * MAXB + 3, b[p2][r], 0};
  }
  cudaGraphExec_t ge[N] = {NULL, NULL, NULL};
  for (int r = 0; r < N && graph; r++) {
    cudaGraph_t g = NULL;
    CUDA_OK(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeThreadLocal));
    cudaError_t e =
        execCudaReduceWait(dst[r], &src[r], 1, cnt[r], dmacclUint8, dmacclSum, 32, &w[r], st[r]);
    CUDA_OK(cudaStreamEndCapture(st[r], &g));
    CUDA_OK(e);
    CUDA_OK(cudaGraphInstantiate(&ge[r], g, 0));
    cudaGraphDestroy(g);
  }
  int rc = 0;
  for (int rep = 0; rep < (graph ? 2 : 1) && !rc; rep++) {
    for (int r = 0; r < N; r++) {
      dataFillRandom(host[r], N * MAXB + 16, seed + 10u * (uint64_t)rep + (uint64_t)r);
      CUDA_OK(cudaMemcpy(S[r], host[r], N * MAXB + 16, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(R[r], 0xEE, N * MAXB + 16));
    }
    CUDA_OK(cudaDeviceSynchronize());
    for (int r = N - 1; r >= 0; r--) {
      if (graph)
        CUDA_OK(cudaGraphLaunch(ge[r], st[r]));
      else
        CUDA_OK(execCudaReduceWait(dst[r], &src[r], 1, cnt[r], dmacclUint8, dmacclSum, 32, &w[r],
                                   st[r]));
    }
    CUDA_OK(cudaDeviceSynchronize());
    for (int r = 0; r < N && !rc; r++) {
      CUDA_OK(cudaMemcpy(got, R[r], N * MAXB + 16, cudaMemcpyDeviceToHost));
      for (int p = 0; p < N && !rc; p++) {
        if (p == r) continue;
        const unsigned char *want = host[p] + r * MAXB + 1, *at = got + p * MAXB + 3;
        long long d = testFirstDiff(at, want, b[p][r]);
        if (d < 0 && at[b[p][r]] != 0xEE) d = (long long)b[p][r]; /* nothing past the block */
        if (d >= 0) {
          TEST_FAIL("takes graph %d replay %d: rank %d's block from %d (%zu bytes) wrong at %lld",
                    graph, rep, r, p, b[p][r], d);
          rc = 1;
        }
      }
      CUDA_OK(cudaMemcpy(got, L[r], N * share, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < N * share && !rc; i++)
        if (got[i]) {
          TEST_FAIL("takes: rank %d's line slot byte %zu is %d after the kernels", r, i, got[i]);
          rc = 1;
        }
    }
  }
  if (rc) cudaDeviceSynchronize();
  for (int r = 0; r < N; r++) {
    if (ge[r]) cudaGraphExecDestroy(ge[r]);
    cudaStreamDestroy(st[r]);
  }
  return rc;
}

/*
 * Plain takes (stagesm's movement form, execReduceTake.plain): one kernel
 * copies a block as its reduction of one source and three more as plain
 * takes, sizes random, offsets unaligned for some (bytes) and 16-byte
 * aligned for others (vectors), one of 0 bytes. Every block must land,
 * nothing past it.
 */
static int plainTakeCase(void *dev[8], unsigned char *host[8], unsigned char *got, uint64_t seed) {
  enum { K = 4, MAXB = 300000 };
  char *S = (char *)dev[0], *R = (char *)dev[1];
  size_t b[K], so[K], ro[K];
  uint64_t x = seed;
  for (int k = 0; k < K; k++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    b[k] = k == 2 ? 0 : (x >> 33) % MAXB;
    size_t mis = (size_t)(k & 1) * (1 + (x >> 20) % 15); /* odd k: unaligned */
    so[k] = (size_t)k * (MAXB + 64) + mis, ro[k] = (size_t)k * (MAXB + 64) + 16 * (size_t)k + mis;
  }
  size_t span = K * (MAXB + 64) + 64;
  dataFillRandom(host[0], span, seed);
  CUDA_OK(cudaMemcpy(S, host[0], span, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(R, 0xEE, span));
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  for (int k = 1; k < K; k++) w.takes[w.ntakes++] = (execReduceTake){S + so[k], R + ro[k], b[k], 1};
  const void *src = S + so[0];
  CUDA_OK(execCudaReduceWait(R + ro[0], &src, 1, b[0], dmacclUint8, dmacclSum, 32, &w, 0));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got, R, span, cudaMemcpyDeviceToHost));
  for (int k = 0; k < K; k++) {
    long long d = testFirstDiff(got + ro[k], host[0] + so[k], b[k]);
    if (d < 0 && got[ro[k] + b[k]] != 0xEE) d = (long long)b[k]; /* nothing past the block */
    if (d < 0 && ro[k] && got[ro[k] - 1] != 0xEE) d = -2;        /* nor before it */
    if (d != -1) {
      TEST_FAIL("plain take %d (%zu bytes, source offset %zu, destination %zu) wrong at %lld", k,
                b[k], so[k], ro[k], d);
      return 1;
    }
  }
  return 0;
}

int main(void) {
  gpuCountOrSkip(1, "test_gpu_reduce");
  const size_t counts[] = {1, 7, 1000, 65537, (1u << 20) + 3};
  const size_t maxBytes = ((1u << 20) + 3) * 8 + 256 + 16 + 8; /* + a scalar */
  void *dev[8], *devDst;
  unsigned char *host[8], *want = malloc(maxBytes), *got = malloc(maxBytes);
  for (int k = 0; k < 8; k++) {
    if (cudaMalloc(&dev[k], maxBytes) != cudaSuccess) return 1;
    host[k] = malloc(maxBytes);
  }
  if (cudaMalloc(&devDst, maxBytes) != cudaSuccess) return 1;
  int cases = 0, rc = 0;
  uint64_t seed = 1;
  for (int t = 0; t < dmacclNumTypes && !rc; t++)
    for (int op = 0; op <= (int)BASE_PREMULSUM && !rc; op++) { /* the built-in ops, premul */
      if (!baseRedOpSupported((dmacclDataType_t)t, (dmacclRedOp_t)op)) continue;
      const int ns[] = {1, 2, 3, 8};
      for (int ni = 0; ni < 4 && !rc; ni++)
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]) && !rc; ci++) {
          if (counts[ci] > 70000 && ni != 1) continue; /* the large count with 2 inputs */
          size_t mis = (ci + (size_t)ni) % 3 == 0 ? collTypeSize((dmacclDataType_t)t) : 0;
          if (collTypeSize((dmacclDataType_t)t) == 1 && ci == 2) mis = 3;
          rc = runCase((dmacclDataType_t)t, (dmacclRedOp_t)op, ns[ni], counts[ci], mis,
                       ci % 2 ? 1 : 8, dev, devDst, host, want, got, seed++);
          cases++;
        }
    }
  printf("  %d kernel cases compared with the host\n", cases);
  /* Graph capture: the pointers travel in the parameters; replay twice on new data. */
  if (!rc) {
    cudaStream_t st;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    size_t count = 4099;
    const void *ds[3] = {dev[0], dev[1], dev[2]};
    if (cudaStreamCreate(&st) != cudaSuccess ||
        cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal) != cudaSuccess ||
        execCudaReduce(devDst, ds, 3, count, dmacclBfloat16, dmacclSum, 4, st) != cudaSuccess ||
        cudaStreamEndCapture(st, &g) != cudaSuccess ||
        cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
      TEST_FAIL("graph capture of the reduction failed");
      rc = 1;
    }
    for (int rep = 0; rep < 2 && !rc; rep++) {
      const void *hs[3] = {host[0], host[1], host[2]};
      for (int k = 0; k < 3; k++) {
        fill(host[k], count, dmacclBfloat16, 1000u + (uint64_t)(rep * 3 + k));
        cudaMemcpy(dev[k], host[k], count * 2, cudaMemcpyHostToDevice);
      }
      baseReduceHost(want, hs, 3, count, dmacclBfloat16, dmacclSum);
      cudaGraphLaunch(ge, st);
      cudaStreamSynchronize(st);
      cudaMemcpy(got, devDst, count * 2, cudaMemcpyDeviceToHost);
      if (memcmp(got, want, count * 2)) {
        TEST_FAIL("graph replay %d differs from the host", rep);
        rc = 1;
      }
    }
    if (!rc) printf("  graph replays match\n");
  }
  for (int v = 0; v < 3 && !rc; v++) /* eager; reset; reset in a graph */
    rc = kernelWaitCase(v > 0, v == 2, dev, devDst, host, want, got, 5000u + (uint64_t)v * 10);
  if (!rc) printf("  kernels waiting for their flags: eager, with reset, graph replays\n");
  for (int v = 0; v < 2 && !rc; v++) /* eager; graph replays */
    rc = pieceMaskCase(v, dev, devDst, host, want, got, 6000u + (uint64_t)v * 10);
  if (!rc) printf("  push1's kernel: pieces gated by two ranks' words, its own word per piece\n");
  for (int v = 0; v < 2 && !rc; v++) /* eager; graph replays */
    rc = moveCase(v, dev, host, want, got, 7000u + (uint64_t)v * 10);
  if (!rc) printf("  kernels storing into a slot and signalling first, in place\n");
  {
    const dmacclDataType_t lt[] = {dmacclBfloat16, dmacclFloat32, dmacclInt8, dmacclFloat64,
                                   dmacclFloat16};
    const size_t lc[] = {1, 5, 1000, 65537};
    int lines = 0;
    for (int ti = 0; ti < 5 && !rc; ti++)
      for (int ci = 0; ci < 4 && !rc; ci++)
        for (int v = 0; v < 4 && !rc; v++) { /* in place, graph */
          size_t mis = (ci + ti) % 2 ? collTypeSize(lt[ti]) : 0;
          dmacclRedOp_t op = ti == 2   ? dmacclMax
                             : ci == 3 ? dmacclAvg
                             : ci == 1 ? BASE_PREMULSUM
                                       : dmacclSum;
          if (op == dmacclAvg && !baseRedOpSupported(lt[ti], op)) op = dmacclSum;
          rc = lineCase(lt[ti], op, lc[ci], mis, v & 1, v >> 1, dev, host, want, got, seed++);
          lines++;
        }
    if (!rc) printf("  %d line kernel pairs (stagell): results, waits, slots cleared\n", lines);
  }
  for (int v = 0; v < 4 && !rc; v++) /* eager, graph; two seeds each */
    rc = takeCase(v & 1, dev, host, got, 9000u + (uint64_t)v);
  if (!rc) printf("  three line kernels with a take each (one a token): blocks and slots\n");
  for (int v = 0; v < 4 && !rc; v++) rc = plainTakeCase(dev, host, got, 11000u + (uint64_t)v);
  if (!rc) printf("  plain takes (stagesm's movement form): aligned, unaligned, empty\n");
  printf(rc ? "FAILED\n" : "all passed\n");
  return rc;
}
