// isolated.cu: what one collective-shaped chain costs inside a CUDA graph when
// it follows a kernel (a decode step's shape), 2 GPUs driven by one process.
// Every op is: a kernel spinning GAP us (the "GEMM"), then the chain below, on
// both GPUs at once; the time per op minus the time of the spins alone is the
// chain's latency. Plain CUDA, no dmaccl: the floor the library is held to.
//
//   k      one empty kernel (what a collective kernel costs as a graph node)
//   c      one copy of the chunk into the peer (copy engine, no signal)
//   cs     copy, then a memop write of the peer's flag (no wait)
//   csw    copy, memop write, memop wait for the own flag and its reset (one batch)
//   csk    dmaccl's kernel-wait form: a second lane forks at the start and runs a
//          kernel that polls the own flag and resets it; lane 0 copies and writes
//          the peer's flag with a memop; join at the end
//   cck    as csk, but the flag travels as a 4-byte copy right behind the data
//   ck1    as csk without the fork: the polling kernel follows the write on lane 0
//   sk     signal only: memop write of the peer's flag, polling kernel (no data)
//   cl     one local copy (device to device on the same GPU)
//   c2     two copies into the peer, one after the other
//   m      a memop write of the peer's flag alone
//   ms     a memset node (cudaMemsetAsync of the chunk into the peer)
//   wc     the copy waits on a lane forked before the spin: a memop wait for a
//          flag that a 1-thread kernel after the spin writes, then the copy and
//          the peer's flag; a polling kernel on lane 0 (copy not behind a kernel)
//   cp     one copy from the peer (pull: the local engine reads remote memory)
//   cpa    c issued as cudaMemcpyPeerAsync (explicit devices) instead; CUDA 13.0
//          refuses it in a capture, so it runs in the eager list only
//   mw     memop ENTRY handshake: write the peer's flag, wait for the own one and reset it
//   mwp    mw, then the pull copy
//   kk     no copy engine: one kernel stores the chunk into the peer, fences,
//          writes the peer's flag and polls its own (an SM library's floor)
//   sm     dmaccl's stagesm kernel in miniature: 512-thread blocks (8 at most), a
//          1.7 KB parameter block, stores into the peer's slot, fence, block count,
//          the last block's flag write, poll of the own flag and the count, the
//          last block's resets, then the reduction (out = send + slot)
//   ll     one kernel, flags inside the data (NCCL's LL form): each 16-byte store
//          carries 8 data bytes and two copies of the op's epoch (a device word
//          the kernel advances); the peer polls the lines themselves and reduces:
//          no fence, no separate flag, no reset (8 blocks at most; ll32: 32)
//   nccl   ncclAllReduce (bf16 sum) of the chunk, captured (with -DWITH_NCCL)
//
// build: nvcc -O2 -std=c++17 -o isolated isolated.cu -lcuda
//        [-DWITH_NCCL -I<nccl>/include -L<nccl>/lib -lnccl]
// run:   ./isolated [GAP_US]       (needs 2 GPUs with peer access)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef WITH_NCCL
#include <nccl.h>
#endif
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

enum { NOPS = 100, LAUNCHES = 5 };
struct Rank {
  cudaStream_t s, l;
  cudaEvent_t fork[NOPS], join[NOPS];
  char *send, *recv, *stage, *out;
  unsigned *flag, *gate, *one, *count, *moveCount, *epoch;
#ifdef WITH_NCCL
  ncclComm_t nccl;
#endif
};
static Rank R[2];

__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
__global__ void empty() {}
__device__ unsigned ldAcquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__global__ void poll(unsigned *flag) {
  if (threadIdx.x == 0) {
    while (ldAcquire(flag) < 1) {
    }
    *flag = 0;
  }
  __syncthreads();
}
__global__ void storeSignalPoll(const int4 *src, int4 *dst, size_t n, unsigned *peerFlag,
                                unsigned *flag) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = src[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    asm volatile("red.release.sys.global.add.u32 [%0], 1;" ::"l"(peerFlag) : "memory");
    if (blockIdx.x == 0) {
      while (ldAcquire(flag) < gridDim.x) {
      }
      *flag = 0;
    }
  }
}

// sm: the shape of dmaccl's stagesm kernel (src/exec/cuda_reduce_kernel.cuh).
struct SmParams {
  const int4 *src, *slot;
  int4 *peerSlot, *out;
  unsigned *peerFlag, *flag, *moveCount, *count;
  size_t n;
  char pad[1600]; // the size of dmaccl's moves, signals and masks
};
__global__ void __launch_bounds__(512) smKernel(SmParams p) {
  size_t tid = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  for (size_t v = tid; v < p.n; v += stride) p.peerSlot[v] = p.src[v];
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    if (atomicAdd(p.moveCount, 1u) == gridDim.x - 1) {
      __threadfence_system();
      asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p.peerFlag), "r"(1u) : "memory");
    }
    while (ldAcquire(p.flag) < 1) {
    }
    while (ldAcquire(p.moveCount) < gridDim.x) {
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned seen = gridDim.x == 1 ? 0 : atomicAdd(p.count, 1u);
    if (seen == gridDim.x - 1) {
      *p.flag = 0;
      *p.moveCount = 0;
      if (gridDim.x > 1) *p.count = 0;
    }
  }
  for (size_t v = tid; v < p.n; v += stride) {
    int4 a = p.src[v], b = p.slot[v];
    p.out[v] = make_int4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
}

// ll: 16-byte lines {data, epoch, data, epoch}; n8 = 8-byte data units.
__global__ void __launch_bounds__(512)
    llKernel(const uint2 *src, uint4 *peerSlot, const uint4 *slot, uint2 *out, size_t n8,
             unsigned *epochWord, unsigned *count) {
  __shared__ unsigned e;
  if (threadIdx.x == 0) e = *(volatile unsigned *)epochWord + 1;
  __syncthreads();
  unsigned ep = e;
  size_t tid = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  for (size_t v = tid; v < n8; v += stride) {
    uint2 d = src[v];
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(peerSlot + v), "r"(d.x),
                 "r"(ep), "r"(d.y), "r"(ep)
                 : "memory");
  }
  for (size_t v = tid; v < n8; v += stride) {
    unsigned x, f1, y, f2;
    do {
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(x), "=r"(f1), "=r"(y), "=r"(f2)
                   : "l"(slot + v)
                   : "memory");
    } while (f1 != ep || f2 != ep);
    uint2 d = src[v];
    out[v] = make_uint2(d.x + x, d.y + y);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    unsigned seen = gridDim.x == 1 ? 0 : atomicAdd(count, 1u);
    if (seen == gridDim.x - 1) {
      *epochWord = ep;
      if (gridDim.x > 1) *count = 0;
    }
  }
}

__global__ void setGate(unsigned *gate) {
  asm volatile("st.release.sys.global.u32 [%0], 1;" ::"l"(gate) : "memory");
}

// A memop wait for *w == 1 and its reset to 0, one batch on stream st.
static void waitReset(cudaStream_t st, unsigned *w) {
  CUstreamBatchMemOpParams p[2];
  memset(p, 0, sizeof p);
  p[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  p[0].waitValue.address = (CUdeviceptr)w;
  p[0].waitValue.value = 1;
  p[0].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  p[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  p[1].writeValue.address = (CUdeviceptr)w;
  p[1].writeValue.value = 0;
  CD(cuStreamBatchMemOp((CUstream)st, 2, p, 0));
}

static void writePeer(int d, int i) {
  CD(cuStreamWriteValue32((CUstream)R[d].s, (CUdeviceptr)(R[1 - d].flag + i), 1, 0));
}

// What goes before the spin: only wc's lane, which must not depend on it.
static void preop(const char *m, int d, int i, size_t chunk) {
  Rank &a = R[d], &b = R[1 - d];
  if (strcmp(m, "wc")) return;
  CK(cudaEventRecord(a.fork[i], a.s));
  CK(cudaStreamWaitEvent(a.l, a.fork[i], 0));
  waitReset(a.l, a.gate + i);
  CK(cudaMemcpyAsync(b.recv + d * chunk, a.send, chunk, cudaMemcpyDeviceToDevice, a.l));
  CD(cuStreamWriteValue32((CUstream)a.l, (CUdeviceptr)(b.flag + i), 1, 0));
}

static void op(const char *m, int d, int i, size_t chunk) {
  Rank &a = R[d], &b = R[1 - d];
  if (!strcmp(m, "wc")) {
    setGate<<<1, 1, 0, a.s>>>(a.gate + i);
    poll<<<1, 32, 0, a.s>>>(a.flag + i);
    CK(cudaEventRecord(a.join[i], a.l));
    CK(cudaStreamWaitEvent(a.s, a.join[i], 0));
    return;
  }
  bool fork = !strcmp(m, "csk") || !strcmp(m, "cck") || !strcmp(m, "sk");
  if (fork) {
    CK(cudaEventRecord(a.fork[i], a.s));
    CK(cudaStreamWaitEvent(a.l, a.fork[i], 0));
    poll<<<1, 32, 0, a.l>>>(a.flag + i);
  }
  if (!strcmp(m, "k")) empty<<<1, 32, 0, a.s>>>();
  if (!strncmp(m, "mw", 2)) { // ENTRY handshake, then (mwp) the pull
    writePeer(d, i);
    waitReset(a.s, a.flag + i);
    if (strcmp(m, "mw")) CK(cudaMemcpyAsync(a.recv, b.send, chunk, cudaMemcpyDeviceToDevice, a.s));
    return;
  }
  if (!strcmp(m, "cp"))
    CK(cudaMemcpyAsync(a.recv, b.send, chunk, cudaMemcpyDeviceToDevice, a.s));
  else if (!strcmp(m, "cl"))
    CK(cudaMemcpyAsync(a.recv, a.send, chunk, cudaMemcpyDeviceToDevice, a.s));
  else if (!strcmp(m, "cpa"))
    CK(cudaMemcpyPeerAsync(b.recv + d * chunk, 1 - d, a.send, d, chunk, a.s));
  else if (!strcmp(m, "c2")) {
    CK(cudaMemcpyAsync(b.recv + d * chunk, a.send, chunk, cudaMemcpyDeviceToDevice, a.s));
    CK(cudaMemcpyAsync(b.recv + (2 + d) * chunk, a.send, chunk, cudaMemcpyDeviceToDevice, a.s));
  } else if (m[0] == 'c')
    CK(cudaMemcpyAsync(b.recv + d * chunk, a.send, chunk, cudaMemcpyDeviceToDevice, a.s));
  if (!strcmp(m, "cs") || !strcmp(m, "csw") || !strcmp(m, "csk") || !strcmp(m, "ck1") ||
      !strcmp(m, "sk"))
    writePeer(d, i);
  if (!strcmp(m, "cck")) CK(cudaMemcpyAsync(b.flag + i, a.one, 4, cudaMemcpyDeviceToDevice, a.s));
  if (!strcmp(m, "csw")) waitReset(a.s, a.flag + i);
  if (!strcmp(m, "m")) writePeer(d, i);
  if (!strcmp(m, "ms")) CK(cudaMemsetAsync(b.recv + d * chunk, 1, chunk, a.s));
  if (!strcmp(m, "ck1")) poll<<<1, 32, 0, a.s>>>(a.flag + i);
  if (!strcmp(m, "kk")) {
    size_t n = chunk / sizeof(int4);
    unsigned blocks = n > 32 * 256 ? 32 : (unsigned)((n + 255) / 256);
    if (blocks == 0) blocks = 1;
    storeSignalPoll<<<blocks, 256, 0, a.s>>>((const int4 *)a.send, (int4 *)(b.recv + d * chunk), n,
                                             b.flag + i, a.flag + i);
  }
  if (!strcmp(m, "sm")) {
    SmParams p;
    memset(&p, 0, sizeof p);
    size_t off = (size_t)(i % 2) << 20;
    p.src = (const int4 *)a.send, p.slot = (const int4 *)(a.stage + off);
    p.peerSlot = (int4 *)(b.stage + off), p.out = (int4 *)a.out;
    p.peerFlag = b.flag + i, p.flag = a.flag + i, p.moveCount = a.moveCount, p.count = a.count;
    p.n = chunk / sizeof(int4);
    unsigned blocks = (unsigned)((p.n + 511) / 512);
    blocks = blocks > 8 ? 8 : blocks < 1 ? 1 : blocks;
    smKernel<<<blocks, 512, 0, a.s>>>(p);
  }
  if (!strncmp(m, "ll", 2)) {
    size_t off = (size_t)(i % 2) << 21, n8 = chunk / 8;
    unsigned cap = strcmp(m, "ll32") ? 8 : 32, blocks = (unsigned)((n8 + 511) / 512);
    blocks = blocks > cap ? cap : blocks < 1 ? 1 : blocks;
    llKernel<<<blocks, 512, 0, a.s>>>((const uint2 *)a.send, (uint4 *)(b.stage + off),
                                      (const uint4 *)(a.stage + off), (uint2 *)a.out, n8, a.epoch,
                                      a.count);
  }
#ifdef WITH_NCCL
  if (!strcmp(m, "nccl"))
    if (ncclAllReduce(a.send, a.out, chunk / 2, ncclBfloat16, ncclSum, a.nccl, a.s) !=
        ncclSuccess) {
      printf("ncclAllReduce failed\n");
      exit(1);
    }
#endif
  if (fork) {
    CK(cudaEventRecord(a.join[i], a.l));
    CK(cudaStreamWaitEvent(a.s, a.join[i], 0));
  }
}

static void issue(const char *m, int d, size_t chunk, unsigned long long gapNs) {
  for (int i = 0; i < NOPS; i++) {
    preop(m, d, i, chunk);
    spin<<<1, 32, 0, R[d].s>>>(gapNs);
    op(m, d, i, chunk);
  }
}

// Time per op in us (max over the GPUs) of NOPS x (spin, op) in one graph per
// GPU, or issued eagerly on the stream.
static double run(const char *m, size_t chunk, unsigned long long gapNs, bool eager = false) {
  cudaGraphExec_t ge[2] = {0, 0};
  for (int d = 0; d < 2 && !eager; d++) {
    CK(cudaSetDevice(d));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(R[d].s, cudaStreamCaptureModeRelaxed));
    issue(m, d, chunk, gapNs);
    CK(cudaStreamEndCapture(R[d].s, &g));
    CK(cudaGraphInstantiate(&ge[d], g, 0));
    CK(cudaGraphDestroy(g));
  }
  double best = 1e30;
  for (int rep = 0; rep < LAUNCHES + 1; rep++) {
    cudaEvent_t e0[2], e1[2];
    for (int d = 0; d < 2; d++) {
      CK(cudaSetDevice(d));
      CK(cudaEventCreate(&e0[d]));
      CK(cudaEventCreate(&e1[d]));
      CK(cudaEventRecord(e0[d], R[d].s));
    }
    if (eager) {
      for (int i = 0; i < NOPS; i++)
        for (int d = 0; d < 2; d++) {
          CK(cudaSetDevice(d));
          preop(m, d, i, chunk);
          spin<<<1, 32, 0, R[d].s>>>(gapNs);
          op(m, d, i, chunk);
        }
    } else
      for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaGraphLaunch(ge[d], R[d].s));
      }
    for (int d = 0; d < 2; d++) {
      CK(cudaSetDevice(d));
      CK(cudaEventRecord(e1[d], R[d].s));
    }
    double t = 0;
    for (int d = 0; d < 2; d++) {
      CK(cudaSetDevice(d));
      CK(cudaStreamSynchronize(R[d].s));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0[d], e1[d]));
      if (ms > t) t = ms;
      CK(cudaEventDestroy(e0[d]));
      CK(cudaEventDestroy(e1[d]));
    }
    if (rep > 0 && t < best) best = t; // rep 0 warms up
  }
  for (int d = 0; d < 2; d++)
    if (ge[d]) {
      CK(cudaSetDevice(d));
      CK(cudaGraphExecDestroy(ge[d]));
    }
  return best * 1000.0 / NOPS;
}

static void splitList(char *arg, const char **out, int *n) {
  *n = 0;
  for (char *t = strtok(arg, ","); t && *n < 64; t = strtok(NULL, ",")) out[(*n)++] = t;
}

int main(int argc, char **argv) {
  double gapUs = argc > 1 ? atof(argv[1]) : 20.0;
  unsigned long long gapNs = (unsigned long long)(gapUs * 1000);
  const char *modes[64] = {"k",   "c",   "cl", "cp", "c2", "m",   "ms", "cs", "csw", "csk",
                           "cck", "ck1", "wc", "sk", "mw", "mwp", "kk", "sm", "ll"};
  int nmodes = 19;
  const char *eagerModes[64] = {"k", "c", "cl", "cp", "cs", "csw", "mwp", "wc"};
  int neager = 8;
  // ./isolated GAP [graph modes] [eager modes] ("-" for none)
  if (argc > 2) splitList(argv[2], modes, &nmodes);
  if (argc > 3) splitList(argv[3], eagerModes, &neager);
  if (nmodes == 1 && !strcmp(modes[0], "-")) nmodes = 0;
  if (neager == 1 && !strcmp(eagerModes[0], "-")) neager = 0;
  size_t chunks[] = {8 << 10, 64 << 10, 512 << 10};
  CD(cuInit(0));
  for (int d = 0; d < 2; d++) {
    CK(cudaSetDevice(d));
    CK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CK(cudaStreamCreateWithFlags(&R[d].s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&R[d].l, cudaStreamNonBlocking));
    for (int i = 0; i < NOPS; i++) {
      CK(cudaEventCreateWithFlags(&R[d].fork[i], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&R[d].join[i], cudaEventDisableTiming));
    }
    CK(cudaMalloc(&R[d].send, 1 << 21));
    CK(cudaMemset(R[d].send, 1, 1 << 21));
    CK(cudaMalloc(&R[d].recv, 1 << 21));
    CK(cudaMalloc(&R[d].stage, 4 << 20));
    CK(cudaMemset(R[d].stage, 0, 4 << 20));
    CK(cudaMalloc(&R[d].out, 1 << 21));
    CK(cudaMalloc(&R[d].flag, NOPS * 4));
    CK(cudaMemset(R[d].flag, 0, NOPS * 4));
    CK(cudaMalloc(&R[d].gate, NOPS * 4));
    CK(cudaMemset(R[d].gate, 0, NOPS * 4));
    CK(cudaMalloc(&R[d].count, 12));
    CK(cudaMemset(R[d].count, 0, 12));
    R[d].moveCount = R[d].count + 1;
    R[d].epoch = R[d].count + 2;
    CK(cudaMalloc(&R[d].one, 4));
    unsigned one = 1;
    CK(cudaMemcpy(R[d].one, &one, 4, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
  }
#ifdef WITH_NCCL
  {
    ncclComm_t c[2];
    int devs[2] = {0, 1};
    if (ncclCommInitAll(c, 2, devs) != ncclSuccess) return printf("ncclCommInitAll failed\n"), 1;
    ncclGroupStart();
    for (int d = 0; d < 2; d++) {
      R[d].nccl = c[d];
      CK(cudaSetDevice(d));
      ncclAllReduce(R[d].send, R[d].out, 4096, ncclBfloat16, ncclSum, c[d], R[d].s);
    }
    ncclGroupEnd();
    for (int d = 0; d < 2; d++) {
      CK(cudaSetDevice(d));
      CK(cudaStreamSynchronize(R[d].s));
    }
  }
#endif
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  double base = run("none", 1024, gapNs);
  printf("# 2x %s, one process; graph of %d x (spin %.0f us, chain) per GPU, best of %d launches\n",
         p.name, NOPS, gapUs, LAUNCHES);
  printf("# spin alone: %.2f us per op; below: us per op minus that\n", base);
  printf("%-5s", "chain");
  for (size_t c : chunks) printf(" %9zuB", c);
  printf("\n");
  for (int k = 0; k < nmodes; k++) {
    printf("%-5s", modes[k]);
    for (size_t c : chunks) printf(" %10.2f", run(modes[k], c, gapNs) - base);
    printf("\n");
    fflush(stdout);
  }
  if (!neager) return 0;
  base = run("none", 1024, gapNs, true);
  printf("# eager, the same ops issued one by one on the streams: spin alone %.2f us per op\n",
         base);
  for (int k = 0; k < neager; k++) {
    printf("%-5s", eagerModes[k]);
    for (size_t c : chunks) printf(" %10.2f", run(eagerModes[k], c, gapNs, true) - base);
    printf("\n");
    fflush(stdout);
  }
  return 0;
}
