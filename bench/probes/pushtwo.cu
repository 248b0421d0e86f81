// pushtwo.cu: an AllReduce of two GPUs whose copies are all pushes, before
// it is built into the library (issue 16: AllReduce at 16 MB and up at
// NCCL's time or better with at most 8 CTAs).
//
// pull1 (src/plan/reduce.c) pulls both phases; on 2x H200 its 16 MB
// AllReduce in a graph takes 108-112 us against NCCL's 77, and its six
// pulls run at 250-280 GB/s with 28.7 us of engine idle between them
// (docs/results/pull1-lanes/). A push runs 340-390 GB/s (pushb,
// docs/results/pull1-2xh200/), and a GPU whose copies are all pushes keeps
// one link direction to itself, as pulls do. So, rank g of 2, its part
// [g*N/2, (g+1)*N/2), K pieces:
//
//   lane A  for each piece k: push the peer's piece k of my send buffer into
//           the peer's staging slot; write the peer's word RS[k] (memop)
//   lane 0  one kernel of 8 CTAs: for each piece k, poll RS[k] (the peer's
//           piece in my slot), out = mine + slot, then the last CTA done
//           with the piece writes my own word DONE[k]
//   lane C  for each piece k: WAIT DONE[k] (memop), push my reduced piece
//           into the peer's receive buffer; then write the peer's EXIT
//   lane 0  JOIN A and C; WAIT EXIT (the peer's pushes into my buffer done)
//
// No ENTRY handshake: the staging slot is the library's, and the peer's RS
// word says its stream has reached the operation before I push into its
// receive buffer. One process drives both GPUs; each GPU's OPS operations
// are one CUDA graph with the epoch values baked in, launched REPS + 1 times
// (the first a warm-up), both graphs held behind one host word and released
// together. Between launches (outside the timed span) both GPUs drain, the
// words go back to 0, every output and the slot are poisoned and every
// operation's input is filled anew (operation o has buffers of its own, so
// an operation that read a stale slot or missed a push shows). Every element
// of every operation's output of the last launch is checked (small
// integers: exact).
//
// build: nvcc -O2 -std=c++17 -arch=sm_90 -o pushtwo pushtwo.cu -lcuda
// run:   ./pushtwo [MB list, default 8,16,32,64] [K list, default 1,2,3,4]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                       \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
#define CD(x)                                                                                      \
  do {                                                                                             \
    CUresult e_ = (x);                                                                             \
    if (e_ != CUDA_SUCCESS) {                                                                      \
      std::printf("%s:%d CUresult %d\n", __FILE__, __LINE__, (int)e_);                             \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

enum { REPS = 10, OPS = 10, CTAS = 8, THREADS = 512, MAXK = 8 };
static int dev[2] = {0, 1};
static volatile int *gate; // host memory both GPUs read (hold)
enum { W_RS = 0, W_DONE = 16, W_EXIT = 32, W_COUNT = 48, NWORDS = 64 };

static __device__ __forceinline__ uint32_t loadAcquire(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// out = a + b over K pieces of the part; piece k once RS[k] reached epoch.
__global__ void __launch_bounds__(THREADS)
    reducePieces(float4 *out, const float4 *a, const float4 *b, size_t nv, size_t pieceVec, int K,
                 uint32_t *words, uint32_t epoch) {
  const int U = 8;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (int k = 0; k < K; k++) {
    size_t lo = (size_t)k * pieceVec, hi = lo + pieceVec < nv ? lo + pieceVec : nv;
    if (threadIdx.x == 0)
      while ((int32_t)(loadAcquire(words + W_RS + k) - epoch) < 0) {
      }
    __syncthreads();
    size_t v = lo + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; v + (U - 1) * stride < hi; v += U * stride) {
      float4 x[U], y[U];
#pragma unroll
      for (int u = 0; u < U; u++) x[u] = a[v + u * stride];
#pragma unroll
      for (int u = 0; u < U; u++) y[u] = b[v + u * stride];
#pragma unroll
      for (int u = 0; u < U; u++)
        out[v + u * stride] =
            make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w);
    }
    for (; v < hi; v += stride) {
      float4 x = a[v], y = b[v];
      out[v] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      if (atomicAdd(words + W_COUNT + k, 1u) == gridDim.x - 1) {
        words[W_COUNT + k] = 0;
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(words + W_DONE + k), "r"(epoch)
                     : "memory");
      }
    }
  }
}

// Operation o of a graph reads send[o] and writes recv[o]: every operation's
// own data, filled anew before each launch, and every output checked.
struct Gpu {
  cudaStream_t s0, sA, sC;
  cudaEvent_t fork, joinA, joinC, launched, t0, t1;
  float *send[OPS], *recv[OPS], *slot;
  uint32_t *words;
  cudaGraphExec_t x;
};

// The value of element i of rank g's input to operation o of launch r.
__host__ __device__ static inline float valueOf(size_t i, int g, int o, int r) {
  return (float)((i * 7 + (size_t)g * 13 + (size_t)o * 31 + (size_t)r * 5) % 1001);
}

__global__ void fill(float *p, size_t n, int g, int o, int r) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = valueOf(i, g, o, r);
}

// Holds a stream until the host writes *gate (both GPUs then start together).
__global__ void hold(volatile int *gate) {
  while (*gate == 0) {
  }
}

static void op(Gpu *G, int g, size_t N, int K, int o) {
  Gpu &m = G[g], &p = G[1 - g];
  uint32_t epoch = (uint32_t)(o + 1);
  size_t part = N / 2, nv = part / 16, pieceVec = (nv + K - 1) / K, pb = pieceVec * 16;
  size_t mine = (size_t)g * part, theirs = (size_t)(1 - g) * part;
  CK(cudaEventRecord(m.fork, m.s0));
  CK(cudaStreamWaitEvent(m.sA, m.fork, 0));
  CK(cudaStreamWaitEvent(m.sC, m.fork, 0));
  for (int k = 0; k < K; k++) { // lane A: the peer's pieces of my input into its slot
    size_t off = k * pb, n = off + pb < part ? pb : part - off;
    CK(cudaMemcpyAsync((char *)p.slot + off, (char *)m.send[o] + theirs + off, n, cudaMemcpyDefault,
                       m.sA));
    CD(cuStreamWriteValue32((CUstream)m.sA, (CUdeviceptr)(p.words + W_RS + k), epoch, 0));
  }
  // the kernel, with an event that fires once every CTA has started
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeLaunchCompletionEvent;
  at[0].val.launchCompletionEvent.event = m.launched;
  at[0].val.launchCompletionEvent.flags = 0;
  cfg.gridDim = dim3(CTAS);
  cfg.blockDim = dim3(THREADS);
  cfg.stream = m.s0;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, reducePieces, (float4 *)((char *)m.recv[o] + mine),
                        (const float4 *)((char *)m.send[o] + mine), (const float4 *)m.slot, nv,
                        pieceVec, K, m.words, epoch));
  // Queue safety: lane C's WAITs hold a hardware queue, so they follow what
  // releases them: the kernel's launch (not its end) and lane A's copies
  // (which the peer's kernel, and so the peer's words, need).
  CK(cudaEventRecord(m.joinA, m.sA));
  CK(cudaStreamWaitEvent(m.sC, m.joinA, 0));
  CK(cudaStreamWaitEvent(m.sC, m.launched, 0));
  for (int k = 0; k < K; k++) { // lane C: my reduced pieces into the peer's receive buffer
    size_t off = k * pb, n = off + pb < part ? pb : part - off;
    CD(cuStreamWaitValue32((CUstream)m.sC, (CUdeviceptr)(m.words + W_DONE + k), epoch,
                           CU_STREAM_WAIT_VALUE_GEQ));
    CK(cudaMemcpyAsync((char *)p.recv[o] + mine + off, (char *)m.recv[o] + mine + off, n,
                       cudaMemcpyDefault, m.sC));
  }
  CD(cuStreamWriteValue32((CUstream)m.sC, (CUdeviceptr)(p.words + W_EXIT), epoch, 0));
  CK(cudaEventRecord(m.joinC, m.sC)); // (lane C joined lane A)
  CK(cudaStreamWaitEvent(m.s0, m.joinC, 0));
  CD(cuStreamWaitValue32((CUstream)m.s0, (CUdeviceptr)(m.words + W_EXIT), epoch,
                         CU_STREAM_WAIT_VALUE_GEQ));
}

// Between launches (untimed): both GPUs idle, the words 0, every output and
// the slot poisoned (NaN), every input filled for launch r.
static void drain(Gpu *G, size_t N, int r) {
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(dev[g]));
    CK(cudaDeviceSynchronize());
    CK(cudaMemset(G[g].words, 0, NWORDS * sizeof(uint32_t)));
    CK(cudaMemset(G[g].slot, 0xff, N / 2));
    for (int o = 0; o < OPS; o++) {
      CK(cudaMemset(G[g].recv[o], 0xff, N));
      fill<<<264, 512>>>(G[g].send[o], N / 4, g, o, r);
      CK(cudaGetLastError());
    }
    CK(cudaDeviceSynchronize());
  }
}

// Time per operation (us): the larger GPU's graph time / OPS, the median of REPS launches.
static double run(Gpu *G, size_t N, int K, int *wrong) {
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(dev[g]));
    cudaGraph_t gr;
    CK(cudaStreamBeginCapture(G[g].s0, cudaStreamCaptureModeThreadLocal));
    for (int o = 0; o < OPS; o++) op(G, g, N, K, o);
    CK(cudaStreamEndCapture(G[g].s0, &gr));
    CK(cudaGraphInstantiate(&G[g].x, gr, 0));
    CK(cudaGraphDestroy(gr));
  }
  std::vector<double> t;
  for (int r = 0; r < REPS + 1; r++) {
    drain(G, N, r);
    *gate = 0;
    for (int g = 0; g < 2; g++) { // both graphs queued behind the gate, then released together
      CK(cudaSetDevice(dev[g]));
      hold<<<1, 1, 0, G[g].s0>>>(gate);
      CK(cudaGetLastError());
      CK(cudaEventRecord(G[g].t0, G[g].s0));
      CK(cudaGraphLaunch(G[g].x, G[g].s0));
      CK(cudaEventRecord(G[g].t1, G[g].s0));
    }
    *gate = 1;
    float worst = 0;
    for (int g = 0; g < 2; g++) {
      CK(cudaSetDevice(dev[g]));
      CK(cudaEventSynchronize(G[g].t1));
      float ms;
      CK(cudaEventElapsedTime(&ms, G[g].t0, G[g].t1));
      if (ms > worst) worst = ms;
    }
    if (r) t.push_back(worst * 1e3 / OPS); // the first launch warms up
  }
  // every element of every operation's output on both GPUs, from the last
  // launch (r = REPS): the two ranks' inputs to that operation, summed
  size_t n = N / 4;
  std::vector<float> out(n);
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(dev[g]));
    for (int o = 0; o < OPS; o++) {
      CK(cudaMemcpy(out.data(), G[g].recv[o], N, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < n; i++) {
        float want = valueOf(i, 0, o, REPS) + valueOf(i, 1, o, REPS);
        if (out[i] != want) {
          if (!*wrong)
            std::printf("WRONG: GPU %d operation %d element %zu: %g, expected %g\n", g, o, i,
                        out[i], want);
          ++*wrong;
        }
      }
    }
    CK(cudaGraphExecDestroy(G[g].x));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static std::vector<long> list(const char *s, const char *dflt) {
  std::vector<long> v;
  for (const char *p = s ? s : dflt; *p;) {
    v.push_back(std::strtol(p, nullptr, 10));
    while (*p && *p != ',') p++;
    if (*p) p++;
  }
  return v;
}

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<long> mbs = list(argc > 1 ? argv[1] : nullptr, "8,16,32,64");
  std::vector<long> ks = list(argc > 2 ? argv[2] : nullptr, "1,2,3,4");
  size_t maxN = 0;
  for (long mb : mbs) maxN = std::max(maxN, (size_t)mb << 20);
  int ngpu = 0;
  CK(cudaGetDeviceCount(&ngpu));
  if (ngpu < 2) {
    // Two ranks' graphs on one GPU share its hardware queues, and a WAIT of
    // one could stand ahead of the work of the other that releases it.
    std::printf("pushtwo: needs 2 GPUs with peer access (this machine has %d)\n", ngpu);
    return 2;
  }
  CK(cudaHostAlloc((void **)&gate, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  Gpu G[2];
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(dev[g]));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaStreamCreateWithFlags(&G[g].s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&G[g].sA, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&G[g].sC, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&G[g].fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&G[g].joinA, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&G[g].joinC, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&G[g].launched, cudaEventDisableTiming));
    CK(cudaEventCreate(&G[g].t0));
    CK(cudaEventCreate(&G[g].t1));
    for (int o = 0; o < OPS; o++) {
      CK(cudaMalloc(&G[g].send[o], maxN));
      CK(cudaMalloc(&G[g].recv[o], maxN));
    }
    CK(cudaMalloc(&G[g].slot, maxN / 2));
    CK(cudaMalloc(&G[g].words, NWORDS * sizeof(uint32_t)));
  }
  std::printf("# pushtwo: AllReduce of 2 GPUs, float, pushes only, %d CTAs; CUDA graphs of %d "
              "operations, median of %d launches; time per operation, us\n",
              CTAS, OPS, REPS);
  std::printf("%10s %3s %10s %10s\n", "bytes", "K", "time(us)", "busbw");
  int wrong = 0;
  for (long mb : mbs)
    for (long K : ks) {
      if (K < 1 || K > MAXK) continue;
      size_t N = (size_t)mb << 20;
      double us = run(G, N, (int)K, &wrong);
      std::printf("%10zu %3ld %10.1f %10.1f\n", N, K, us, N / us / 1e3);
      std::fflush(stdout);
    }
  std::printf(wrong ? "# %d elements WRONG\n" : "# every element checked: all correct\n", wrong);
  return wrong ? 1 : 0;
}
