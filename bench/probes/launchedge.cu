// launchedge.cu: can a copy or a stream memop be ordered after a kernel's
// *launch* (all its blocks running) instead of its end, eagerly and inside a
// CUDA graph? pull1's one-kernel AllReduce needs exactly that: lane C's waits
// for the peers' piece signals must come after the kernel that writes ours
// in every order a graph launch may pick, without waiting for its end.
//
// A kernel K (B blocks) writes SIG at its start, then polls GATE for up to
// 50 ms. A second stream, ordered after K by the event of
// cudaLaunchAttributeLaunchCompletionEvent (or, as the control, by an event
// recorded after K: K's end), then opens the gate:
//   copy   a 4-byte copy of 1 into GATE
//   write  a memop write of GATE
//   wcopy  a memop wait for SIG, then the 4-byte copy (lane C's shape)
//   wbig   a memop wait for SIG, a 2 MB copy, then the memop write of GATE
// K reports whether it saw the gate open and after how long. If the edge
// means "after K's end", K times out (50 ms) every time; the control must.
// Each mode runs eagerly and as a captured graph (the edge type CUDA made of
// the capture is printed), 20 times each.
//
// build: nvcc -O2 -std=c++17 -o launchedge launchedge.cu -lcuda
// run:   ./launchedge [BLOCKS]
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
      const char *s_;                                                                              \
      cuGetErrorString(e_, &s_);                                                                   \
      printf("%s:%d %s\n", __FILE__, __LINE__, s_);                                                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static __device__ unsigned long long nowNs(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every block writes SIG (the last value wins; any block's write opens a
// wait), then polls GATE; block 0 reports.
__global__ void gated(volatile unsigned *sig, volatile unsigned *gate, unsigned long long *out) {
  unsigned long long t0 = nowNs();
  if (threadIdx.x == 0) {
    *sig = 1;
    __threadfence_system();
    while (*gate == 0 && nowNs() - t0 < 50000000ull) {
    }
    if (blockIdx.x == 0) out[0] = *gate ? nowNs() - t0 : ~0ull;
  }
}

enum { MODE_COPY, MODE_WRITE, MODE_WCOPY, MODE_WBIG, NMODES };
static const char *modeName[NMODES] = {"copy", "write", "wcopy", "wbig"};

struct Ctx {
  cudaStream_t s0, s1;
  cudaEvent_t launched, ended;
  unsigned *sig, *gate, *one;
  char *big, *bigDst;
  unsigned long long *out;
  int blocks;
};

static void issue(Ctx &c, int mode, int atLaunch) {
  CK(cudaMemsetAsync(c.sig, 0, 4, c.s0));
  CK(cudaMemsetAsync(c.gate, 0, 4, c.s0));
  CK(cudaEventRecord(c.ended, c.s0)); /* fork s1 after the resets */
  CK(cudaStreamWaitEvent(c.s1, c.ended, 0));
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  cfg.gridDim = dim3(c.blocks);
  cfg.blockDim = dim3(32);
  cfg.stream = c.s0;
  if (atLaunch) {
    at[0].id = cudaLaunchAttributeLaunchCompletionEvent;
    at[0].val.launchCompletionEvent.event = c.launched;
    at[0].val.launchCompletionEvent.flags = 0;
    cfg.attrs = at;
    cfg.numAttrs = 1;
  }
  CK(cudaLaunchKernelEx(&cfg, gated, (volatile unsigned *)c.sig, (volatile unsigned *)c.gate,
                        c.out));
  if (!atLaunch) CK(cudaEventRecord(c.ended, c.s0));
  CK(cudaStreamWaitEvent(c.s1, atLaunch ? c.launched : c.ended, 0));
  switch (mode) {
  case MODE_COPY: CK(cudaMemcpyAsync(c.gate, c.one, 4, cudaMemcpyDeviceToDevice, c.s1)); break;
  case MODE_WRITE: CD(cuStreamWriteValue32((CUstream)c.s1, (CUdeviceptr)c.gate, 1, 0)); break;
  case MODE_WCOPY:
    CD(cuStreamWaitValue32((CUstream)c.s1, (CUdeviceptr)c.sig, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CK(cudaMemcpyAsync(c.gate, c.one, 4, cudaMemcpyDeviceToDevice, c.s1));
    break;
  case MODE_WBIG:
    CD(cuStreamWaitValue32((CUstream)c.s1, (CUdeviceptr)c.sig, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CK(cudaMemcpyAsync(c.bigDst, c.big, 2 << 20, cudaMemcpyDeviceToDevice, c.s1));
    CD(cuStreamWriteValue32((CUstream)c.s1, (CUdeviceptr)c.gate, 1, 0));
    break;
  }
  CK(cudaEventRecord(c.ended, c.s1)); /* join s1 back */
  CK(cudaStreamWaitEvent(c.s0, c.ended, 0));
}

static void report(const char *how, int mode, int atLaunch, unsigned long long *t, int n) {
  int seen = 0;
  unsigned long long lo = ~0ull, hi = 0;
  for (int i = 0; i < n; i++)
    if (t[i] != ~0ull) {
      seen++;
      if (t[i] < lo) lo = t[i];
      if (t[i] > hi) hi = t[i];
    }
  printf("%-6s %-6s %-9s gate seen %2d/%d", how, modeName[mode], atLaunch ? "launched" : "ended",
         seen, n);
  if (seen) printf("  after %.1f-%.1f us", lo / 1e3, hi / 1e3);
  printf("\n");
}

static void edges(cudaGraph_t g) {
  size_t n = 0;
  CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &n));
  cudaGraphNode_t *from = (cudaGraphNode_t *)calloc(n, sizeof(*from));
  cudaGraphNode_t *to = (cudaGraphNode_t *)calloc(n, sizeof(*to));
  cudaGraphEdgeData *ed = (cudaGraphEdgeData *)calloc(n, sizeof(*ed));
  CK(cudaGraphGetEdges(g, from, to, ed, &n));
  for (size_t i = 0; i < n; i++) {
    /* a memop node's type reads as an error in CUDA 13.0: say -1 then */
    cudaGraphNodeType a, b;
    int ta = cudaGraphNodeGetType(from[i], &a) == cudaSuccess ? (int)a : -1;
    int tb = cudaGraphNodeGetType(to[i], &b) == cudaSuccess ? (int)b : -1;
    (void)cudaGetLastError();
    if (ed[i].from_port || ed[i].type)
      printf("         edge node type %d -> %d: from_port %d type %d\n", ta, tb, ed[i].from_port,
             ed[i].type);
  }
  free(from);
  free(to);
  free(ed);
}

int main(int argc, char **argv) {
  enum { REPS = 20 };
  Ctx c;
  c.blocks = argc > 1 ? atoi(argv[1]) : 8;
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&c.s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c.s1, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&c.launched, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&c.ended, cudaEventDisableTiming));
  CK(cudaMalloc(&c.sig, 4));
  CK(cudaMalloc(&c.gate, 4));
  CK(cudaMalloc(&c.one, 4));
  CK(cudaMalloc(&c.out, 8));
  CK(cudaMalloc(&c.big, 2 << 20));
  CK(cudaMalloc(&c.bigDst, 2 << 20));
  unsigned one = 1;
  CK(cudaMemcpy(c.one, &one, 4, cudaMemcpyHostToDevice));
  printf("%d blocks of 32 threads; the control (ended) must time out\n", c.blocks);
  unsigned long long t[REPS];
  for (int atLaunch = 1; atLaunch >= 0; atLaunch--)
    for (int mode = 0; mode < NMODES; mode++) {
      for (int i = 0; i < REPS; i++) {
        issue(c, mode, atLaunch);
        CK(cudaMemcpyAsync(&t[i], c.out, 8, cudaMemcpyDeviceToHost, c.s0));
        CK(cudaStreamSynchronize(c.s0));
      }
      report("eager", mode, atLaunch, t, atLaunch ? REPS : 3);
      cudaGraph_t g;
      cudaGraphExec_t x;
      CK(cudaStreamBeginCapture(c.s0, cudaStreamCaptureModeThreadLocal));
      issue(c, mode, atLaunch);
      CK(cudaStreamEndCapture(c.s0, &g));
      cudaError_t e = cudaGraphInstantiate(&x, g, 0);
      if (e != cudaSuccess) {
        printf("graph  %-6s instantiate: %s\n", modeName[mode], cudaGetErrorString(e));
        CK(cudaGraphDestroy(g));
        continue;
      }
      int reps = atLaunch ? REPS : 3;
      for (int i = 0; i < reps; i++) {
        CK(cudaGraphLaunch(x, c.s0));
        CK(cudaMemcpyAsync(&t[i], c.out, 8, cudaMemcpyDeviceToHost, c.s0));
        CK(cudaStreamSynchronize(c.s0));
      }
      report("graph", mode, atLaunch, t, reps);
      edges(g);
      CK(cudaGraphExecDestroy(x));
      CK(cudaGraphDestroy(g));
    }
  return 0;
}
