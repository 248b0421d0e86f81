// pullgap.cu: what pulling a buffer from the peer in pieces costs against one
// copy, and whether pieces spread over streams close the gap between them.
// pull1's one-kernel ReduceScatter pulls its target in pieces of 2 MB on one
// stream, a memop write of the piece's word after each, and on 2x H100 each
// piece's copy started 4.6-5.4 us after the one before ended
// (docs/results/pull1-exit-4xh200/pieced/).
//
// Both GPUs pull from each other at once (one process drives both), every
// op captured in one CUDA graph per GPU and launched REPS times; time per op.
//   one    one copy of the whole buffer
//   seq    K pieces on one stream
//   seqw   K pieces on one stream, a memop write of a local word after each
//          (CU_STREAM_WRITE_VALUE_DEFAULT: with its memory barrier, as dmaccl)
//          (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER is refused on H100: CUDA 13.0
//          returns CUDA_ERROR_INVALID_VALUE)
//   seqc   seqw with a 4-byte copy of a local 1 instead of the write
//   altN   seqw with piece k on stream k % N (N = 2, 4), joined at the end
// Each table twice: in graphs, then eager (the same calls, not captured).
// build: nvcc -O2 -std=c++17 -o pullgap pullgap.cu -lcuda
// run:   ./pullgap            (2 GPUs with peer access)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                            \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CD(x)                                                                                      \
  do {                                                                                             \
    CUresult e_ = (x);                                                                             \
    if (e_ != CUDA_SUCCESS) {                                                                      \
      printf("%s:%d CUresult %d\n", __FILE__, __LINE__, (int)e_);                                  \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { REPS = 20, NS = 4, OPS = 10 };
struct Gpu {
  cudaStream_t s[NS];
  cudaEvent_t ev[NS], t0, t1;
  char *src, *dst;
  unsigned *word;
  cudaGraphExec_t x;
};

/* One op on GPU g: pull `bytes` from the peer's src in K pieces. */
enum { W_NONE, W_MEMOP, W_COPY };
static void op(Gpu *G, int g, size_t bytes, int K, int streams, int writes) {
  Gpu &a = G[g], &b = G[1 - g];
  size_t P = bytes / K;
  for (int i = 1; i < streams; i++) { /* fork */
    CK(cudaEventRecord(a.ev[0], a.s[0]));
    CK(cudaStreamWaitEvent(a.s[i], a.ev[0], 0));
  }
  for (int k = 0; k < K; k++) {
    cudaStream_t s = a.s[k % streams];
    CK(cudaMemcpyAsync(a.dst + k * P, b.src + k * P, P, cudaMemcpyDeviceToDevice, s));
    if (writes == W_MEMOP) CD(cuStreamWriteValue32((CUstream)s, (CUdeviceptr)(a.word + k), 1, 0));
    if (writes == W_COPY)
      CK(cudaMemcpyAsync(a.word + k, a.word + 63, 4, cudaMemcpyDeviceToDevice, s));
  }
  for (int i = 1; i < streams; i++) { /* join */
    CK(cudaEventRecord(a.ev[i], a.s[i]));
    CK(cudaStreamWaitEvent(a.s[0], a.ev[i], 0));
  }
}

static int eager;
static double run(Gpu *G, size_t bytes, int K, int streams, int writes) {
  if (eager) {
    float worst = 0;
    for (int w = 0; w < 2; w++) {
      for (int g = 0; g < 2; g++) {
        CK(cudaSetDevice(g));
        CK(cudaEventRecord(G[g].t0, G[g].s[0]));
        for (int i = 0; i < (w ? REPS : 1); i++)
          for (int o = 0; o < OPS; o++) op(G, g, bytes, K, streams, writes);
        CK(cudaEventRecord(G[g].t1, G[g].s[0]));
      }
      for (int g = 0; g < 2; g++) {
        CK(cudaSetDevice(g));
        CK(cudaEventSynchronize(G[g].t1));
        float ms;
        CK(cudaEventElapsedTime(&ms, G[g].t0, G[g].t1));
        if (w && ms > worst) worst = ms;
      }
    }
    return worst * 1e3 / (REPS * OPS);
  }
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    cudaGraph_t gr;
    CK(cudaStreamBeginCapture(G[g].s[0], cudaStreamCaptureModeThreadLocal));
    for (int o = 0; o < OPS; o++) op(G, g, bytes, K, streams, writes);
    CK(cudaStreamEndCapture(G[g].s[0], &gr));
    CK(cudaGraphInstantiate(&G[g].x, gr, 0));
    CK(cudaGraphDestroy(gr));
    CK(cudaGraphLaunch(G[g].x, G[g].s[0])); /* warm-up */
    CK(cudaStreamSynchronize(G[g].s[0]));
  }
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaEventRecord(G[g].t0, G[g].s[0]));
    for (int i = 0; i < REPS; i++) CK(cudaGraphLaunch(G[g].x, G[g].s[0]));
    CK(cudaEventRecord(G[g].t1, G[g].s[0]));
  }
  float worst = 0;
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaEventSynchronize(G[g].t1));
    float ms;
    CK(cudaEventElapsedTime(&ms, G[g].t0, G[g].t1));
    if (ms > worst) worst = ms;
    CK(cudaGraphExecDestroy(G[g].x));
  }
  return worst * 1e3 / (REPS * OPS);
}

int main() {
  Gpu G[2];
  size_t maxBytes = 32 << 20;
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    for (int i = 0; i < NS; i++) {
      CK(cudaStreamCreateWithFlags(&G[g].s[i], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&G[g].ev[i], cudaEventDisableTiming));
    }
    CK(cudaEventCreate(&G[g].t0));
    CK(cudaEventCreate(&G[g].t1));
    CK(cudaMalloc(&G[g].src, maxBytes));
    CK(cudaMalloc(&G[g].dst, maxBytes));
    CK(cudaMalloc(&G[g].word, 64 * sizeof(unsigned)));
  }
  size_t sizes[] = {4 << 20, 8 << 20, 16 << 20, 32 << 20};
  int ks[] = {2, 4, 8};
  unsigned one = 1;
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaMemcpy(G[g].word + 63, &one, 4, cudaMemcpyHostToDevice));
  }
  for (eager = 0; eager < 2; eager++) {
    printf("%s: time per op (us), both GPUs pulling from each other at once\n",
           eager ? "eager" : "graphs");
    printf("%10s %3s %8s %8s %8s %8s %8s %8s\n", "bytes", "K", "one", "seq", "seqw", "seqc", "alt2",
           "alt4");
    for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++)
      for (int ki = 0; ki < 3; ki++) {
        size_t b = sizes[si];
        int K = ks[ki];
        printf("%10zu %3d %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f\n", b, K, run(G, b, 1, 1, W_NONE),
               run(G, b, K, 1, W_NONE), run(G, b, K, 1, W_MEMOP), run(G, b, K, 1, W_COPY),
               run(G, b, K, 2, W_MEMOP), run(G, b, K, 4, W_MEMOP));
        fflush(stdout);
      }
  }
  return 0;
}
