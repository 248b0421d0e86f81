// smuse.cu: which CUDA operations need an SM. A "hog" kernel fills every SM
// (2 blocks of 1024 threads per SM: all thread slots) and spins for HOG us;
// once it runs, another stream of the same GPU issues one operation. If the
// operation completes long before the hog ends, it ran without an SM (a copy
// engine, the front end); if it completes only after, the driver ran it as a
// kernel (or behind one). dmaccl claims zero SMs for data movement: its local
// copies (staged algorithms' out copies, one-rank copies) are cudaMemcpyAsync
// device to device on one GPU, which this checks.
//
//   kernel     an empty kernel (control: must wait for the hog)
//   memop      cuStreamWriteValue32 of a local word (control: front end)
//   local      cudaMemcpyAsync device to device on the same GPU
//   memset     cudaMemsetAsync of local memory
//   push       cudaMemcpyAsync into the peer GPU's memory (2 GPUs)
//   pull       cudaMemcpyAsync from the peer GPU's memory into local (2 GPUs)
//   peerset    cudaMemsetAsync of the peer GPU's memory (2 GPUs)
//   batch      local copy as cudaMemcpyBatchAsync with
//              cudaMemcpyFlagPreferOverlapWithCompute (dmaccl's eager batches)
//   batch0     the same without the flag
//   local2d    local copy as cudaMemcpy2DAsync (64 rows)
//   glocal     local copy as a memcpy node of a captured graph, launched
//   gpush      push as a memcpy node of a captured graph (2 GPUs)
//   viapeer    local copy issued on a stream of the peer GPU (its copy engine
//              reads and writes this GPU's memory over the link; 2 GPUs)
//
// With "waves" as the third argument the hog is a GEMM's shape instead: 20
// waves of blocks (every slot, 100 us each, 2 ms in all), launched just
// before the operation; the operation then runs on a stream of default and of
// the greatest priority. A kernel-run copy at default priority waits until
// the hog's last blocks are dispatched (about 1.9 ms); one that the block
// scheduler lets in at the next free slots finishes within about one wave.
//
// With "half" as the third argument the hog takes one block per SM (half the
// thread slots): an operation that then completes while the hog runs was
// waiting for free SM slots, i.e. it runs as thread blocks.
//
// Each row: completion time of the operation after it was issued, and the
// hog's remaining time at that moment (host clock, us). "needs SM" when the
// operation finished within 50 us of the hog's end, which the hog's length
// (default 2000 us) makes unambiguous.
// build: nvcc -O2 -std=c++17 -o smuse smuse.cu -lcuda
// run:   ./smuse [HOG_US] [bytes list, default 65536,8388608] [half|waves] [ops list]
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                            \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

__global__ void hog(unsigned long long ns, volatile int *started) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  if (blockIdx.x == 0 && threadIdx.x == 0) *started = 1;
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
__global__ void empty() {}
__global__ void wave(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

static double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int main(int argc, char **argv) {
  double hogUs = argc > 1 ? atof(argv[1]) : 2000.0;
  std::vector<size_t> sizes = {65536, 8 << 20};
  if (argc > 2) {
    sizes.clear();
    char *arg = strdup(argv[2]);
    for (char *t = strtok(arg, ","); t; t = strtok(NULL, ",")) sizes.push_back(strtoull(t, 0, 10));
  }
  bool half = argc > 3 && !strcmp(argv[3], "half");
  bool waves = argc > 3 && !strcmp(argv[3], "waves");
  std::vector<const char *> ops = {"kernel", "memop",   "local",  "memset", "push",
                                   "pull",   "peerset", "batch",  "batch0", "local2d",
                                   "glocal", "gpush",   "viapeer"};
  if (argc > 4) {
    ops.clear();
    char *arg = strdup(argv[4]);
    for (char *t = strtok(arg, ","); t; t = strtok(NULL, ",")) ops.push_back(t);
  }
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  bool two = ndev >= 2;
  if (two) {
    int can = 0;
    CK(cudaDeviceCanAccessPeer(&can, 0, 1));
    two = can;
  }
  size_t maxBytes = 0;
  for (size_t s : sizes) maxBytes = s > maxBytes ? s : maxBytes;
  char *src, *dst, *peer = nullptr;
  unsigned *word;
  int *started;
  cudaStream_t sHog, sOp, sPeer = nullptr;
  if (two) {
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&peer, maxBytes));
    CK(cudaDeviceEnablePeerAccess(0, 0));
    CK(cudaStreamCreateWithFlags(&sPeer, cudaStreamNonBlocking));
    CK(cudaSetDevice(0));
    CK(cudaDeviceEnablePeerAccess(1, 0));
  }
  CK(cudaSetDevice(0));
  CK(cudaMalloc(&src, maxBytes));
  CK(cudaMalloc(&dst, maxBytes));
  CK(cudaMalloc(&word, 4));
  CK(cudaHostAlloc(&started, sizeof(int), cudaHostAllocMapped));
  CK(cudaStreamCreateWithFlags(&sHog, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&sOp, cudaStreamNonBlocking));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  int perSm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, hog, 1024, 0));
  int threadsPerSm = p.maxThreadsPerMultiProcessor;
  int blocksPerSm = half ? 1 : threadsPerSm / 1024;
  printf("# %s, %d SMs, %d threads per SM; hog: %d blocks of 1024 threads (%d per SM fit), %.0f "
         "us\n",
         p.name, p.multiProcessorCount, threadsPerSm, blocksPerSm * p.multiProcessorCount, perSm,
         hogUs);
  if (waves) {
    int least, greatest;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t sHigh;
    CK(cudaStreamCreateWithPriority(&sHigh, cudaStreamNonBlocking, greatest));
    int resident = (threadsPerSm / 1024) * p.multiProcessorCount;
    printf("# waves: 20 x %d blocks of 1024 threads, 100 us each; done = the local copy's "
           "completion after its issue, hog = the hog's\n",
           resident);
    printf("%-8s %10s %12s %12s\n", "stream", "bytes", "done (us)", "hog (us)");
    for (size_t bytes : sizes)
      for (int high = 0; high < 2; high++)
        for (int rep = 0; rep < 2; rep++) {
          cudaEvent_t eHog, eOp;
          CK(cudaEventCreateWithFlags(&eHog, cudaEventDisableTiming));
          CK(cudaEventCreateWithFlags(&eOp, cudaEventDisableTiming));
          cudaStream_t so = high ? sHigh : sOp;
          wave<<<20 * resident, 1024, 0, sHog>>>(100000ull);
          CK(cudaEventRecord(eHog, sHog));
          double t0 = nowUs();
          CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, so));
          CK(cudaEventRecord(eOp, so));
          double tOp = -1, tHog = -1;
          while (tOp < 0 || tHog < 0) {
            double t = nowUs();
            if (tOp < 0 && cudaEventQuery(eOp) == cudaSuccess) tOp = t;
            if (tHog < 0 && cudaEventQuery(eHog) == cudaSuccess) tHog = t;
          }
          CK(cudaDeviceSynchronize());
          if (rep == 1)
            printf("%-8s %10zu %12.1f %12.1f\n", high ? "greatest" : "default", bytes, tOp - t0,
                   tHog - t0);
          CK(cudaEventDestroy(eHog));
          CK(cudaEventDestroy(eOp));
        }
    return 0;
  }
  printf("%-8s %10s %12s %12s %s\n", "op", "bytes", "done (us)", "hog left", "verdict");
  for (size_t bytes : sizes)
    for (const char *op : ops) {
      bool needsPeer = !strcmp(op, "push") || !strcmp(op, "pull") || !strcmp(op, "peerset") ||
                       !strcmp(op, "gpush") || !strcmp(op, "viapeer");
      if (needsPeer && !two) continue;
      cudaGraphExec_t ge = nullptr; // glocal, gpush: the graph, captured before the hog
      if (op[0] == 'g') {
        cudaStream_t sc;
        cudaGraph_t g;
        CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
        CK(cudaStreamBeginCapture(sc, cudaStreamCaptureModeRelaxed));
        CK(cudaMemcpyAsync(!strcmp(op, "gpush") ? peer : dst, src, bytes, cudaMemcpyDeviceToDevice,
                           sc));
        CK(cudaStreamEndCapture(sc, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphUpload(ge, sOp));
        CK(cudaStreamSynchronize(sOp));
        CK(cudaGraphDestroy(g));
        CK(cudaStreamDestroy(sc));
      }
      for (int rep = 0; rep < 2; rep++) { // rep 0 warms up (first-use costs)
        *started = 0;
        cudaEvent_t eHog, eOp;
        CK(cudaEventCreateWithFlags(&eHog, cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&eOp, cudaEventDisableTiming));
        hog<<<blocksPerSm * p.multiProcessorCount, 1024, 0, sHog>>>(
            (unsigned long long)(hogUs * 1000), started);
        CK(cudaGetLastError());
        CK(cudaEventRecord(eHog, sHog));
        while (!*(volatile int *)started) {
        }
        double t0 = nowUs();
        if (!strcmp(op, "kernel"))
          empty<<<1, 32, 0, sOp>>>();
        else if (!strcmp(op, "memop")) {
          if (cuStreamWriteValue32((CUstream)sOp, (CUdeviceptr)word, 1, 0) != CUDA_SUCCESS)
            printf("memop failed\n");
        } else if (!strcmp(op, "local"))
          CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, sOp));
        else if (!strcmp(op, "memset"))
          CK(cudaMemsetAsync(dst, 1, bytes, sOp));
        else if (!strcmp(op, "push"))
          CK(cudaMemcpyAsync(peer, src, bytes, cudaMemcpyDeviceToDevice, sOp));
        else if (!strcmp(op, "pull"))
          CK(cudaMemcpyAsync(dst, peer, bytes, cudaMemcpyDeviceToDevice, sOp));
        else if (!strcmp(op, "peerset"))
          CK(cudaMemsetAsync(peer, 1, bytes, sOp));
        else if (!strncmp(op, "batch", 5)) {
          void *d[1] = {dst};
          const void *sv[1] = {src};
          size_t sz[1] = {bytes}, idx[1] = {0};
          cudaMemcpyAttributes at;
          memset(&at, 0, sizeof at);
          at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
          at.flags = strcmp(op, "batch0") ? cudaMemcpyFlagPreferOverlapWithCompute : 0;
          CK(cudaMemcpyBatchAsync(d, sv, sz, 1, &at, idx, 1, sOp));
        } else if (!strcmp(op, "local2d"))
          CK(cudaMemcpy2DAsync(dst, bytes / 64, src, bytes / 64, bytes / 64, 64,
                               cudaMemcpyDeviceToDevice, sOp));
        else if (op[0] == 'g')
          CK(cudaGraphLaunch(ge, sOp));
        else if (!strcmp(op, "viapeer")) {
          CK(cudaSetDevice(1));
          CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, sPeer));
          CK(cudaStreamSynchronize(sPeer)); // the host waits here: done = this
          CK(cudaSetDevice(0));
        }
        CK(cudaEventRecord(eOp, sOp));
        double tOp = -1, tHog = -1;
        while (tOp < 0 || tHog < 0) {
          double t = nowUs();
          if (tOp < 0 && cudaEventQuery(eOp) == cudaSuccess) tOp = t;
          if (tHog < 0 && cudaEventQuery(eHog) == cudaSuccess) tHog = t;
        }
        CK(cudaDeviceSynchronize());
        if (rep == 1)
          printf("%-8s %10zu %12.1f %12.1f %s\n", op, bytes, tOp - t0, tHog - tOp,
                 tHog - tOp < 50 ? "needs SM (waited for the hog)" : "no SM");
        CK(cudaEventDestroy(eHog));
        CK(cudaEventDestroy(eOp));
      }
      if (ge) CK(cudaGraphExecDestroy(ge));
    }
  return 0;
}
