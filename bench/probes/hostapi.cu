// hostapi.cu: what each CUDA call that a collective call makes costs on the
// host, on this machine, without a profiler attached (CUPTI tracing inflates
// every call). Plain CUDA, no dmaccl, one GPU: the floor of an eager call's
// host time, and which calls the library could avoid.
//
// Each row times N calls back to back (the same call, the same arguments)
// with the monotonic clock, then waits for the stream; the median of R
// rounds is printed in microseconds per call. Rows marked sparse time each
// call alone and drain the stream every 8 calls: the call's own host cost,
// where a loop of launches may wait for the GPU.
//
//   nvcc -O2 -o hostapi bench/probes/hostapi.cu && ./hostapi [N] [R]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <vector>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));              \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

struct Big { // the size of the reduction kernel's parameters (a source table)
  void *p[200];
  int n;
};

__global__ void empty() {}
__global__ void bigArgs(Big b) {
  if (threadIdx.x == 1024)
    asm volatile("" ::"l"(b.p[0])); // never runs; the size is the signature's
}

static double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

typedef CUresult (*PtrAttrs)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);
typedef CUresult (*WriteValue)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
typedef CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void **, void **);

int main(int argc, char **argv) {
  int N = argc > 1 ? std::atoi(argv[1]) : 1000, R = argc > 2 ? std::atoi(argv[2]) : 7;
  if (N < 1 || R < 1) {
    std::fprintf(stderr, "usage: hostapi [calls per round >= 1] [rounds >= 1]\n");
    return 2;
  }
  CK(cudaSetDevice(0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  void *buf;
  CK(cudaMalloc(&buf, 1 << 20));
  PtrAttrs ptrAttrs = nullptr;
  WriteValue writeValue = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", (void **)&ptrAttrs, 12000,
                                      cudaEnableDefault, &q));
  CK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", (void **)&writeValue, 12000,
                                      cudaEnableDefault, &q));
  LaunchKernel launchKernel = nullptr;
  CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void **)&launchKernel, 12000,
                                      cudaEnableDefault, &q));
  MemcpyDtoD memcpyDtoD = nullptr;
  CK(cudaGetDriverEntryPointByVersion("cuMemcpyDtoDAsync", (void **)&memcpyDtoD, 12000,
                                      cudaEnableDefault, &q));
  cudaFunction_t fn;
  CK(cudaGetFuncBySymbol(&fn, (const void *)bigArgs));
  Big big{};
  big.n = 1;
  void *kargs[1] = {&big};
  // the driver calls answer once, checked, before they are timed unchecked
  {
    CUpointer_attribute a = CU_POINTER_ATTRIBUTE_RANGE_SIZE;
    size_t size = 0;
    void *v = &size;
    if (ptrAttrs(1, &a, &v, (CUdeviceptr)buf) != CUDA_SUCCESS ||
        writeValue((CUstream)st, (CUdeviceptr)buf, 1, 0) != CUDA_SUCCESS ||
        memcpyDtoD((CUdeviceptr)buf + 4096, (CUdeviceptr)buf, 1024, (CUstream)st) != CUDA_SUCCESS ||
        launchKernel((CUfunction)fn, 32, 1, 1, 512, 1, 1, 0, (CUstream)st, kargs, nullptr) !=
            CUDA_SUCCESS) {
      std::fprintf(stderr, "a driver call failed before timing\n");
      return 1;
    }
    CK(cudaStreamSynchronize(st));
  }
  // the calls of one eager dmaccl call (argument checks, export, launch, tail)
  auto attrs = [&]() {
    CUpointer_attribute a[3] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_BUFFER_ID};
    CUdeviceptr base;
    size_t size;
    unsigned long long id;
    void *v[3] = {&base, &size, &id};
    ptrAttrs(3, a, v, (CUdeviceptr)buf);
  };
  struct Row {
    const char *name;
    std::function<void()> f;
    int sparse = 0; // time each call alone, the stream drained every 8 calls (untimed)
  };
  int dev;
  cudaStreamCaptureStatus cs;
  unsigned long long cid;
  std::vector<Row> rows = {
      {"cudaGetDevice", [&] { cudaGetDevice(&dev); }},
      {"cudaStreamGetCaptureInfo", [&] { cudaStreamGetCaptureInfo(st, &cs, &cid); }},
      {"cudaStreamGetDevice", [&] { cudaStreamGetDevice(st, &dev); }},
      {"cuPointerGetAttributes (3)", [&] { attrs(); }},
      {"cudaEventRecord", [&] { cudaEventRecord(ev, st); }},
      {"cudaStreamWaitEvent", [&] { cudaStreamWaitEvent(st, ev, 0); }},
      {"cuStreamWriteValue32", [&] { writeValue(st, (CUdeviceptr)buf, 1, 0); }},
      {"cudaMemcpyAsync D2D 1 KB",
       [&] { cudaMemcpyAsync((char *)buf + 4096, buf, 1024, cudaMemcpyDeviceToDevice, st); }},
      {"launch, empty kernel", [&] { empty<<<1, 32, 0, st>>>(); }},
      {"launch, 1.6 KB of parameters", [&] { bigArgs<<<1, 32, 0, st>>>(big); }},
      {"launch, 1.6 KB, 32 blocks x 512", [&] { bigArgs<<<32, 512, 0, st>>>(big); }},
      {"dmaccl's set: 2 checks, 4 attrs, launch, record",
       [&] {
         cudaStreamGetCaptureInfo(st, &cs, &cid);
         cudaStreamGetDevice(st, &dev);
         cudaGetDevice(&dev);
         attrs();
         cudaGetDevice(&dev);
         attrs();
         attrs();
         attrs();
         cudaGetDevice(&dev);
         bigArgs<<<32, 512, 0, st>>>(big);
         cudaGetLastError();
         cudaGetDevice(&dev);
         cudaEventRecord(ev, st);
       }},
      {"launch, empty kernel (sparse)", [&] { empty<<<1, 32, 0, st>>>(); }, 1},
      {"launch, 1.6 KB, 32 x 512 (sparse)", [&] { bigArgs<<<32, 512, 0, st>>>(big); }, 1},
      {"cuLaunchKernel, 1.6 KB, 32 x 512 (sparse)",
       [&] { launchKernel((CUfunction)fn, 32, 1, 1, 512, 1, 1, 0, (CUstream)st, kargs, nullptr); },
       1},
      {"cudaEventRecord (sparse)", [&] { cudaEventRecord(ev, st); }, 1},
      {"cudaMemcpyAsync D2D 1 KB (sparse)",
       [&] { cudaMemcpyAsync((char *)buf + 4096, buf, 1024, cudaMemcpyDeviceToDevice, st); }, 1},
      {"cuMemcpyDtoDAsync 1 KB",
       [&] { memcpyDtoD((CUdeviceptr)buf + 4096, (CUdeviceptr)buf, 1024, (CUstream)st); }},
      {"cuMemcpyDtoDAsync 1 KB (sparse)",
       [&] { memcpyDtoD((CUdeviceptr)buf + 4096, (CUdeviceptr)buf, 1024, (CUstream)st); }, 1},
      {"cuLaunchKernel, 1.6 KB, 32 x 512",
       [&] { launchKernel((CUfunction)fn, 32, 1, 1, 512, 1, 1, 0, (CUstream)st, kargs, nullptr); }},
      {"the same without export and record",
       [&] {
         cudaStreamGetCaptureInfo(st, &cs, &cid);
         cudaStreamGetDevice(st, &dev);
         cudaGetDevice(&dev);
         attrs();
         attrs();
         bigArgs<<<32, 512, 0, st>>>(big);
       }},
  };
  std::printf("# host time per call, us (median of %d rounds of %d calls), %s\n", R, N,
              "one GPU, no profiler");
  for (auto &r : rows) {
    std::vector<double> t;
    for (int k = 0; k < R; k++) {
      CK(cudaStreamSynchronize(st));
      double sum = 0;
      if (r.sparse) {
        for (int i = 0; i < N; i++) {
          double a = now();
          r.f();
          sum += now() - a;
          if (i % 8 == 7) CK(cudaStreamSynchronize(st));
        }
      } else {
        double t0 = now();
        for (int i = 0; i < N; i++) r.f();
        sum = now() - t0;
      }
      CK(cudaStreamSynchronize(st));
      t.push_back(sum / N);
    }
    std::sort(t.begin(), t.end());
    std::printf("%-50s %7.2f  (min %.2f max %.2f)\n", r.name, t[t.size() / 2], t[0], t.back());
  }
  CK(cudaGetLastError());
  return 0;
}
