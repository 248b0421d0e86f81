// reduce_rate.cu: how fast a few thread blocks can reduce two bf16 inputs in
// one GPU's memory (out = a + b), by how they keep loads in flight. The
// reducing collectives' kernel is held to few blocks (DMACCL_REDUCE_CTAS, 8),
// and at 8 blocks it streams about 115 GB/s per block (docs/results/
// kbench-1xh100/). This asks whether that is the SM's limit or the kernel's.
// Plain CUDA, no dmaccl.
//
//   regs U T   the library's form: each thread loads U vectors of both inputs
//              (2U x 16 bytes), then adds and stores them; T threads a block
//   bulk S C   bulk copies (cp.async.bulk, the TMA's 1-D form) of C bytes of
//              each input into S shared-memory stages; one thread issues
//              them S chunks ahead, the block adds from shared memory and
//              stores with ordinary stores (512 threads)
//   copy       cudaMemcpyAsync device to device of the same bytes (the copy
//              engines: read + write, for scale)
//
// GB/s counts 3 x the input size (two reads, one write) per launch.
// build: nvcc -O2 -std=c++17 -arch=sm_90 -o reduce_rate reduce_rate.cu
// run:   ./reduce_rate [MB per input, default 64] [blocks list, default 4,8,16]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));           \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

__device__ __forceinline__ uint4 add8(uint4 x, uint4 y) {
  uint4 r;
  const __nv_bfloat162 *a = (const __nv_bfloat162 *)&x, *b = (const __nv_bfloat162 *)&y;
  __nv_bfloat162 *o = (__nv_bfloat162 *)&r;
#pragma unroll
  for (int i = 0; i < 4; i++) o[i] = __hadd2(a[i], b[i]);
  return r;
}

template <int U> __global__ void regsKernel(uint4 *out, const uint4 *a, const uint4 *b, size_t nv) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; v + (U - 1) * stride < nv; v += U * stride) {
    uint4 x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; u++) x[u] = a[v + u * stride];
#pragma unroll
    for (int u = 0; u < U; u++) y[u] = b[v + u * stride];
#pragma unroll
    for (int u = 0; u < U; u++) out[v + u * stride] = add8(x[u], y[u]);
  }
  for (; v < nv; v += stride) out[v] = add8(a[v], b[v]);
}

__device__ __forceinline__ uint32_t smaddr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void bulkIssue(char *sa, char *sb, const char *ga, const char *gb,
                                          uint32_t bytes, uint64_t *bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smaddr(bar)),
               "r"(2 * bytes)
               : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
               "[%3];" ::"r"(smaddr(sa)),
               "l"(ga), "r"(bytes), "r"(smaddr(bar))
               : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
               "[%3];" ::"r"(smaddr(sb)),
               "l"(gb), "r"(bytes), "r"(smaddr(bar))
               : "memory");
}

__device__ __forceinline__ void barWait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n .reg .pred p;\n W%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra W%=;\n}" ::"r"(smaddr(bar)),
               "r"(parity)
               : "memory");
}

// Chunk c of C bytes (per input) goes to block c % gridDim.x; stage i % S.
__global__ void __launch_bounds__(512)
    bulkKernel(uint4 *out, const char *a, const char *b, size_t bytes, int S, uint32_t C) {
  extern __shared__ __align__(128) char sm[];
  __shared__ uint64_t full[16];
  size_t nch = bytes / C;
  size_t mine = nch > blockIdx.x ? (nch - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; s++)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smaddr(&full[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (size_t i = 0; i < (size_t)S && i < mine; i++) {
      size_t c = blockIdx.x + i * gridDim.x;
      bulkIssue(sm + (2 * i) * C, sm + (2 * i + 1) * C, a + c * C, b + c * C, C, &full[i]);
    }
  for (size_t i = 0; i < mine; i++) {
    int s = (int)(i % S);
    barWait(&full[s], (uint32_t)((i / S) & 1));
    const uint4 *x = (const uint4 *)(sm + 2 * s * C), *y = (const uint4 *)(sm + (2 * s + 1) * C);
    uint4 *o = out + (blockIdx.x + i * gridDim.x) * (C / 16);
    for (uint32_t v = threadIdx.x; v < C / 16; v += blockDim.x) o[v] = add8(x[v], y[v]);
    __syncthreads();
    if (threadIdx.x == 0 && i + S < mine) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      size_t c = blockIdx.x + (i + S) * gridDim.x;
      bulkIssue(sm + 2 * s * C, sm + (2 * s + 1) * C, a + c * C, b + c * C, C, &full[s]);
    }
  }
}

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoul(argv[1], 0, 10) : 64;
  std::vector<int> ctas;
  const char *cl = argc > 2 ? argv[2] : "4,8,16";
  for (const char *p = cl; *p;) {
    ctas.push_back(atoi(p));
    while (*p && *p != ',') p++;
    if (*p) p++;
  }
  size_t bytes = mb << 20, nv = bytes / 16;
  char *a, *b, *o;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&o, bytes));
  std::vector<uint16_t> h(bytes / 2);
  for (size_t i = 0; i < h.size(); i++) h[i] = (uint16_t)(0x3f80 + (i * 7919 % 97)); // ~1.0-1.7
  CK(cudaMemcpy(a, h.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, h.data(), bytes, cudaMemcpyHostToDevice));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaFuncSetAttribute(bulkKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  const int reps = 20;
  auto timeIt = [&](auto launch) {
    launch();
    CK(cudaStreamSynchronize(st));
    CK(cudaEventRecord(e0, st));
    for (int r = 0; r < reps; r++) launch();
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return 3.0 * bytes * reps / (ms * 1e-3) / 1e9;
  };
  // every output is checked against a + b (computed in float, rounded)
  auto check = [&](const char *name) {
    std::vector<uint16_t> r(bytes / 2);
    CK(cudaMemcpy(r.data(), o, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < r.size(); i++) {
      float x;
      uint32_t w = (uint32_t)h[i] << 16;
      memcpy(&x, &w, 4);
      __nv_bfloat16 s = __float2bfloat16(x + x);
      uint16_t e;
      memcpy(&e, &s, 2);
      if (r[i] != e) {
        printf("%s: WRONG at %zu: %04x, expected %04x\n", name, i, r[i], e);
        exit(1);
      }
    }
    CK(cudaMemset(o, 0xff, bytes));
  };
  printf("# reduce_rate: bf16 a + b, %zu MB per input, GB/s = 3 x %zu MB / time\n", mb, mb);
  double cp = timeIt([&] { CK(cudaMemcpyAsync(o, a, bytes, cudaMemcpyDeviceToDevice, st)); });
  printf("copy (read+write, 2 x bytes) %8.0f GB/s\n", cp * 2 / 3);
  for (int c : ctas) {
    struct {
      const char *name;
      int U, T;
    } rv[] = {{"regs 8 512", 8, 512}, {"regs 4 1024", 4, 1024}, {"regs 16 512", 16, 512}};
    for (auto &v : rv) {
      CK(cudaMemset(o, 0xff, bytes));
      double g = timeIt([&] {
        if (v.U == 8) regsKernel<8><<<c, v.T, 0, st>>>((uint4 *)o, (uint4 *)a, (uint4 *)b, nv);
        if (v.U == 4) regsKernel<4><<<c, v.T, 0, st>>>((uint4 *)o, (uint4 *)a, (uint4 *)b, nv);
        if (v.U == 16) regsKernel<16><<<c, v.T, 0, st>>>((uint4 *)o, (uint4 *)a, (uint4 *)b, nv);
        CK(cudaGetLastError());
      });
      check(v.name);
      printf("blocks %3d %-16s %8.0f GB/s %7.1f per block\n", c, v.name, g, g / c);
    }
    int bs[][2] = {{2, 32768}, {3, 16384}, {4, 16384}, {6, 16384}, {3, 32768}, {8, 8192}};
    for (auto &p : bs) {
      char name[32];
      snprintf(name, sizeof(name), "bulk %d %dK", p[0], p[1] / 1024);
      CK(cudaMemset(o, 0xff, bytes));
      double g = timeIt([&] {
        bulkKernel<<<c, 512, 2 * p[0] * p[1], st>>>((uint4 *)o, a, b, bytes, p[0], (uint32_t)p[1]);
        CK(cudaGetLastError());
      });
      check(name);
      printf("blocks %3d %-16s %8.0f GB/s %7.1f per block\n", c, name, g, g / c);
    }
  }
  return 0;
}
