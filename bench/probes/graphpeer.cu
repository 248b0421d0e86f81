// graphpeer.cu: one process, two GPUs, a CUDA graph per GPU launched one
// after the other (as dmaccl-perf -g -G does): does a graph whose copies
// read the peer's memory (pull) finish, and one whose copies write it
// (push)? Plain CUDA, no dmaccl.
//
// Each GPU's graph holds N operations of one stream: write the peer's ENTRY
// word, wait for its own and reset it (stream memory operations, as
// dmaccl's graphs do), one copy of B bytes (pull: from the peer's buffer
// into its own; push: from its own into the peer's), then the same
// handshake on the EXIT word. With L = 2 the copy runs on a second stream
// forked from the first and joined back (a lane). The graphs are launched
// on GPU 0, then GPU 1; the program waits up to 5 s for both and prints
// the time or HUNG (then exits without cleaning up).
//
//   nvcc -O2 -o graphpeer bench/probes/graphpeer.cu
//   ./graphpeer pull|push N B [L]
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));              \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
#define CU(x)                                                                                      \
  do {                                                                                             \
    CUresult r_ = (x);                                                                             \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      std::fprintf(stderr, "%s:%d CUresult %d\n", __FILE__, __LINE__, (int)r_);                    \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

typedef CUresult (*WriteValue)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
typedef CUresult (*WaitValue)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
static WriteValue writeValue;
static WaitValue waitValue;

static double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

enum { ENTRY = 0, EXIT = 1 };

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s pull|push N B [L]\n", argv[0]);
    return 2;
  }
  int pull = std::strcmp(argv[1], "pull") == 0, n = std::atoi(argv[2]);
  size_t bytes = std::strtoull(argv[3], nullptr, 0);
  int lanes = argc > 4 ? std::atoi(argv[4]) : 1;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", (void **)&writeValue, 12000,
                                      cudaEnableDefault, &q));
  CK(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", (void **)&waitValue, 12000,
                                      cudaEnableDefault, &q));
  uint32_t *flags[2];
  char *buf[2][2]; // [gpu][0: source, 1: destination]
  cudaStream_t st[2][2];
  cudaEvent_t ev[2][2];
  cudaGraphExec_t exec[2];
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaMalloc(&flags[g], 64));
    CK(cudaMemset(flags[g], 0, 64));
    for (int k = 0; k < 2; k++) {
      CK(cudaMalloc(&buf[g][k], bytes));
      CK(cudaMemset(buf[g][k], g + 1, bytes));
      CK(cudaStreamCreateWithFlags(&st[g][k], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&ev[g][k], cudaEventDisableTiming));
    }
  }
  for (int g = 0; g < 2; g++) {
    int p = 1 - g;
    CK(cudaSetDevice(g));
    cudaStream_t s = st[g][0];
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; i++) {
      for (int ph = ENTRY; ph <= EXIT; ph++) {
        if (ph == EXIT) { // the copy, between the handshakes
          cudaStream_t c = s;
          if (lanes > 1) {
            c = st[g][1];
            CK(cudaEventRecord(ev[g][0], s));
            CK(cudaStreamWaitEvent(c, ev[g][0], 0));
          }
          if (pull)
            CK(cudaMemcpyAsync(buf[g][1], buf[p][0], bytes, cudaMemcpyDefault, c));
          else
            CK(cudaMemcpyAsync(buf[p][1], buf[g][0], bytes, cudaMemcpyDefault, c));
          if (lanes > 1) {
            CK(cudaEventRecord(ev[g][1], c));
            CK(cudaStreamWaitEvent(s, ev[g][1], 0));
          }
        }
        CU(writeValue((CUstream)s, (CUdeviceptr)(flags[p] + 2 * ph + g), 1, 0));
        CU(waitValue((CUstream)s, (CUdeviceptr)(flags[g] + 2 * ph + p), 1,
                     CU_STREAM_WAIT_VALUE_GEQ));
        CU(writeValue((CUstream)s, (CUdeviceptr)(flags[g] + 2 * ph + p), 0, 0));
      }
    }
    cudaGraph_t graph;
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec[g], graph, 0));
  }
  double t0 = now();
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaGraphLaunch(exec[g], st[g][0]));
  }
  int done[2] = {0, 0};
  while (!(done[0] && done[1]) && now() - t0 < 5e6) {
    for (int g = 0; g < 2; g++) {
      CK(cudaSetDevice(g));
      cudaError_t e = cudaStreamQuery(st[g][0]);
      if (e == cudaSuccess)
        done[g] = 1;
      else if (e != cudaErrorNotReady)
        CK(e);
    }
  }
  if (done[0] && done[1]) {
    std::printf("%s n=%d bytes=%zu lanes=%d: finished in %.1f us\n", argv[1], n, bytes, lanes,
                now() - t0);
    return 0;
  }
  std::printf("%s n=%d bytes=%zu lanes=%d: HUNG (GPU 0 %s, GPU 1 %s)\n", argv[1], n, bytes, lanes,
              done[0] ? "done" : "not done", done[1] ? "done" : "not done");
  std::fflush(stdout);
  _exit(3);
}
