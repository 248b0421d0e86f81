/*
 * CUDA executor: runs schedules on the GPUs' copy engines and launches no
 * kernel.
 *
 * Streams. Each rank owns nranks internal lanes (non-blocking streams). At
 * the call (post), the caller's stream records a fork event and then waits,
 * with a stream memory operation, for the rank's "done" flag to reach the
 * operation's epoch; so later work on the caller's stream waits for the
 * collective, as with NCCL, and the call never blocks the host. At launch
 * (once every rank has called), the lanes wait for the fork event, run their
 * steps, join into lane 0, and lane 0 writes the done flag.
 *
 * Steps. COPY is cudaMemcpyAsync between device pointers (peer access is
 * enabled at init), or one cudaMemcpyBatchAsync for a run of batch copies on a
 * lane. SIGNAL writes the epoch into the peer's flag slot with a stream
 * memory operation (which orders it after the lane's earlier copies); WAIT
 * blocks the lane until the rank's own slot reaches the epoch (a cyclic >=
 * comparison, so epochs may wrap). Runs of SIGNALs or WAITs on a lane go out
 * as one cuStreamBatchMemOp. Driver entry points come from
 * cudaGetDriverEntryPointByVersion; nothing links libcuda.
 */
#include "exec.h"

#include <cuda.h>
#include <stdlib.h>
#include <string.h>

static struct {
  CUresult (*waitValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  CUresult (*writeValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  CUresult (*batchMemOp)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
  CUresult (*getAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
  CUresult (*getErrorString)(CUresult, const char **);
  cudaError_t status;
  const char *missing;
} drv;
static pthread_once_t drvOnce = PTHREAD_ONCE_INIT;

static void loadDriver(void) {
  struct {
    const char *name;
    void **fn;
  } want[] = {
      {"cuStreamWaitValue32", (void **)&drv.waitValue32},
      {"cuStreamWriteValue32", (void **)&drv.writeValue32},
      {"cuStreamBatchMemOp", (void **)&drv.batchMemOp},
      {"cuMemGetAddressRange", (void **)&drv.getAddressRange},
      {"cuGetErrorString", (void **)&drv.getErrorString},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    enum cudaDriverEntryPointQueryResult q;
    cudaError_t e =
        cudaGetDriverEntryPointByVersion(want[i].name, want[i].fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*want[i].fn) {
      drv.status = e != cudaSuccess ? e : cudaErrorSymbolNotFound;
      drv.missing = want[i].name;
      return;
    }
  }
}

#define MEMOP_CHUNK 128

typedef struct {
  int device;
  int nlanes;
  cudaStream_t *lanes;
  cudaEvent_t fork[CORE_BOARD_DEPTH];
  cudaEvent_t *join;
  uint32_t *flags; /* device: [PLAN_NUM_PHASES][nranks], then the done flag */
  /* Scratch for one batch command, reused under the set's lock. */
  CUstreamBatchMemOpParams memops[MEMOP_CHUNK];
  void **bdst;
  const void **bsrc;
  size_t *bsize;
} cudaState;

static cudaState *stateOf(dmacclComm_t c) {
  return (cudaState *)c->execState;
}
static uint32_t *doneFlag(cudaState *s, int nranks) {
  return s->flags + PLAN_NUM_PHASES * nranks;
}

static dmacclResult_t cudaFail(dmacclComm_t comm, const char *what, cudaError_t e) {
  cudaGetLastError(); /* reset the (non-sticky) error so later calls do not see it */
  return coreError(comm, dmacclUnhandledCudaError, "%s failed: %s (%s)", what, cudaGetErrorName(e),
                   cudaGetErrorString(e));
}

static dmacclResult_t cuFail(dmacclComm_t comm, const char *what, CUresult r) {
  const char *msg = "unknown";
  if (drv.getErrorString) drv.getErrorString(r, &msg);
  return coreError(comm, dmacclUnhandledCudaError, "%s failed: CUresult %d (%s)", what, (int)r,
                   msg);
}

#define CUDA_TRY(comm, call)                                                                       \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      rc = cudaFail(comm, #call, e_);                                                              \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

#define CU_TRY(comm, call)                                                                         \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      rc = cuFail(comm, #call, r_);                                                                \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

/* Makes dev current and remembers the caller's device. */
static int enterDevice(int dev) {
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  if (prev != dev) cudaSetDevice(dev);
  return prev;
}
static void leaveDevice(int prev, int dev) {
  if (prev >= 0 && prev != dev) cudaSetDevice(prev);
}

static void destroyState(cudaState *s) {
  if (!s) return;
  int prev = enterDevice(s->device);
  for (int l = 0; l < s->nlanes; l++) {
    if (s->lanes && s->lanes[l]) {
      cudaStreamSynchronize(s->lanes[l]);
      cudaStreamDestroy(s->lanes[l]);
    }
    if (s->join && s->join[l]) cudaEventDestroy(s->join[l]);
  }
  for (int k = 0; k < CORE_BOARD_DEPTH; k++)
    if (s->fork[k]) cudaEventDestroy(s->fork[k]);
  if (s->flags) cudaFree(s->flags);
  leaveDevice(prev, s->device);
  free(s->lanes);
  free(s->join);
  free(s->bdst);
  free(s->bsrc);
  free(s->bsize);
  free(s);
}

static void cudaFini(dmacclComm_t comm) {
  destroyState(stateOf(comm));
  comm->execState = NULL;
}

static dmacclResult_t createState(dmacclComm_t comm) {
  dmacclResult_t rc = dmacclSuccess;
  int n = comm->nranks, prev = enterDevice(comm->device);
  cudaState *s = calloc(1, sizeof(*s));
  if (!s) {
    leaveDevice(prev, comm->device);
    return coreError(NULL, dmacclSystemError, "dmacclCommInitAll: out of memory");
  }
  s->device = comm->device;
  s->nlanes = n; /* peer lanes plus a side lane for large self copies */
  s->lanes = calloc((size_t)s->nlanes, sizeof(*s->lanes));
  s->join = calloc((size_t)s->nlanes, sizeof(*s->join));
  s->bdst = calloc((size_t)n, sizeof(*s->bdst));
  s->bsrc = calloc((size_t)n, sizeof(*s->bsrc));
  s->bsize = calloc((size_t)n, sizeof(*s->bsize));
  comm->execState = s;
  if (!s->lanes || !s->join || !s->bdst || !s->bsrc || !s->bsize) {
    rc = coreError(NULL, dmacclSystemError, "dmacclCommInitAll: out of memory");
    goto out;
  }
  for (int l = 0; l < s->nlanes; l++) {
    CUDA_TRY(NULL, cudaStreamCreateWithFlags(&s->lanes[l], cudaStreamNonBlocking));
    CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->join[l], cudaEventDisableTiming));
  }
  for (int k = 0; k < CORE_BOARD_DEPTH; k++)
    CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->fork[k], cudaEventDisableTiming));
  size_t flagBytes = (size_t)(PLAN_NUM_PHASES * n + 1) * sizeof(uint32_t);
  CUDA_TRY(NULL, cudaMalloc((void **)&s->flags, flagBytes));
  CUDA_TRY(NULL, cudaMemset(s->flags, 0, flagBytes));
  CUDA_TRY(NULL, cudaDeviceSynchronize());
out:
  leaveDevice(prev, s->device);
  return rc;
}

static dmacclResult_t cudaInit(dmacclComm_t *comms, int n, const int *devlist) {
  dmacclResult_t rc = dmacclSuccess;
  const char *call = "dmacclCommInitAll";
  int ndevs = 0;
  cudaError_t e = cudaGetDeviceCount(&ndevs);
  if (e != cudaSuccess || ndevs == 0) {
    cudaGetLastError();
    return coreError(NULL, dmacclUnsupported, "%s: no CUDA device (%s); use the host executor",
                     call, e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
  }
  pthread_once(&drvOnce, loadDriver);
  if (drv.missing)
    return coreError(NULL, dmacclUnsupported, "%s: driver entry point %s not available (%s)", call,
                     drv.missing, cudaGetErrorString(drv.status));
  if (!devlist && n > ndevs)
    return coreError(NULL, dmacclInvalidArgument, "%s: ndev %d but only %d CUDA devices", call, n,
                     ndevs);
  for (int i = 0; i < n; i++)
    if (comms[i]->device >= ndevs)
      return coreError(NULL, dmacclInvalidArgument, "%s: devlist[%d] = %d but only %d CUDA devices",
                       call, i, comms[i]->device, ndevs);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int a = comms[i]->device, b = comms[j]->device, can = 0;
      if (i == j) continue;
      if (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) {
        cudaGetLastError();
        return coreError(NULL, dmacclUnsupported,
                         "%s: GPU %d (rank %d) cannot access GPU %d (rank %d) peer to peer; copy "
                         "engines need a peer path between every pair",
                         call, a, i, b, j);
      }
    }
  for (int i = 0; i < n && rc == dmacclSuccess; i++) {
    int prev = enterDevice(comms[i]->device);
    for (int j = 0; j < n; j++) {
      if (i == j) continue;
      e = cudaDeviceEnablePeerAccess(comms[j]->device, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
      } else if (e != cudaSuccess) {
        rc = cudaFail(NULL, "cudaDeviceEnablePeerAccess", e);
        break;
      } else {
        CORE_INFO("peer access GPU %d -> GPU %d enabled", comms[i]->device, comms[j]->device);
      }
    }
    leaveDevice(prev, comms[i]->device);
  }
  for (int i = 0; i < n && rc == dmacclSuccess; i++) rc = createState(comms[i]);
  if (rc != dmacclSuccess)
    for (int i = 0; i < n; i++) cudaFini(comms[i]);
  return rc;
}

static dmacclResult_t cudaCheckBuffer(dmacclComm_t comm, const void *ptr, size_t bytes,
                                      const char *call, const char *argName) {
  dmacclResult_t rc = dmacclSuccess;
  struct cudaPointerAttributes a;
  int prev = enterDevice(comm->device);
  cudaError_t e = cudaPointerGetAttributes(&a, ptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    rc = coreError(comm, dmacclInvalidArgument, "%s: %s %p is not memory CUDA knows (%s)", call,
                   argName, ptr, cudaGetErrorString(e));
  } else if (a.type != cudaMemoryTypeDevice) {
    const char *kind = a.type == cudaMemoryTypeHost      ? "page-locked host"
                       : a.type == cudaMemoryTypeManaged ? "managed"
                                                         : "unregistered host";
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: %s %p is %s memory, not device memory of GPU %d", call, argName, ptr, kind,
                   comm->device);
  } else if (a.device != comm->device) {
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: %s %p is memory of GPU %d, but this communicator (rank %d) uses GPU %d",
                   call, argName, ptr, a.device, comm->rank, comm->device);
  } else {
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = drv.getAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)ptr);
    size_t avail = r == CUDA_SUCCESS ? (size_t)(base + size - (CUdeviceptr)(uintptr_t)ptr) : bytes;
    if (avail < bytes)
      rc = coreError(comm, dmacclInvalidArgument,
                     "%s: %s %p needs %zu bytes but its allocation ends %zu bytes after it", call,
                     argName, ptr, bytes, avail);
  }
  leaveDevice(prev, comm->device);
  return rc;
}

static dmacclResult_t cudaCheckStream(dmacclComm_t comm, cudaStream_t stream, const char *call) {
  if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return dmacclSuccess; /* the comm's device's own default stream */
  int dev = -1;
  cudaError_t e = cudaStreamGetDevice(stream, &dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return coreError(comm, dmacclInvalidArgument, "%s: stream %p is not a valid CUDA stream (%s)",
                     call, (void *)stream, cudaGetErrorString(e));
  }
  if (dev != comm->device)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: stream %p belongs to GPU %d, but this communicator (rank %d) uses GPU %d",
                     call, (void *)stream, dev, comm->rank, comm->device);
  return dmacclSuccess;
}

static dmacclResult_t cudaPost(dmacclComm_t comm, const coreOp *op) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  int prev = enterDevice(s->device);
  CUDA_TRY(comm, cudaEventRecord(s->fork[op->seq % CORE_BOARD_DEPTH], op->stream));
  CU_TRY(comm,
         drv.waitValue32((CUstream)op->stream, (CUdeviceptr)(uintptr_t)doneFlag(s, comm->nranks),
                         (cuuint32_t)op->seq, CU_STREAM_WAIT_VALUE_GEQ));
out:
  leaveDevice(prev, s->device);
  return rc;
}

static CUdeviceptr flagAddr(dmacclComm_t owner, planPhase ph, int slotRank) {
  cudaState *s = stateOf(owner);
  return (CUdeviceptr)(uintptr_t)(s->flags + ph * owner->nranks + slotRank);
}

/* Issues steps[i..] that form one command; returns the index after them. */
static int issueRun(dmacclComm_t comm, const planSchedule *sch, int i, const execBuffers *b,
                    uint32_t epoch, dmacclResult_t *rcOut) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  const planStep *st = &sch->steps[i];
  cudaStream_t lane = s->lanes[st->lane];
  int j = i;
  if (st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) {
    int k = 0;
    for (; j < sch->nsteps && k < MEMOP_CHUNK && sch->steps[j].kind == st->kind &&
           sch->steps[j].lane == st->lane;
         j++, k++) {
      const planStep *x = &sch->steps[j];
      CUstreamBatchMemOpParams *p = &s->memops[k];
      memset(p, 0, sizeof(*p));
      if (x->kind == PLAN_STEP_SIGNAL) {
        p->writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        p->writeValue.address = flagAddr(comm->clique->comms[x->peer], x->phase, comm->rank);
        p->writeValue.value = epoch;
        p->writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      } else {
        p->waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        p->waitValue.address = flagAddr(comm, x->phase, x->peer);
        p->waitValue.value = epoch;
        p->waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
      }
    }
    CU_TRY(comm, drv.batchMemOp((CUstream)lane, (unsigned)k, s->memops, 0));
  } else if (st->batch) {
    size_t k = 0;
    for (; j < sch->nsteps && sch->steps[j].kind == PLAN_STEP_COPY && sch->steps[j].batch &&
           sch->steps[j].lane == st->lane && k < (size_t)comm->nranks;
         j++, k++) {
      s->bdst[k] = execLocate(b, sch->steps[j].dst);
      s->bsrc[k] = execLocate(b, sch->steps[j].src);
      s->bsize[k] = sch->steps[j].bytes;
    }
    struct cudaMemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.srcLocHint.type = cudaMemLocationTypeDevice;
    attr.dstLocHint.type = cudaMemLocationTypeDevice;
    size_t attrIdx = 0;
    CUDA_TRY(comm, cudaMemcpyBatchAsync((void *const *)s->bdst, (const void *const *)s->bsrc,
                                        s->bsize, k, &attr, &attrIdx, 1, lane));
  } else {
    CUDA_TRY(comm, cudaMemcpyAsync(execLocate(b, st->dst), execLocate(b, st->src), st->bytes,
                                   cudaMemcpyDefault, lane));
    j = i + 1;
  }
out:
  *rcOut = rc;
  return j;
}

static dmacclResult_t cudaLaunch(dmacclComm_t comm, const coreOp *op, const planSchedule *sch,
                                 const execBuffers *b) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  uint32_t epoch = (uint32_t)op->seq;
  int nl = sch->nlanes < 1 ? 1 : sch->nlanes;
  int prev = enterDevice(s->device);
  for (int l = 0; l < nl; l++)
    CUDA_TRY(comm, cudaStreamWaitEvent(s->lanes[l], s->fork[op->seq % CORE_BOARD_DEPTH], 0));
  for (int i = 0; i < sch->nsteps;) {
    i = issueRun(comm, sch, i, b, epoch, &rc);
    if (rc != dmacclSuccess) goto out;
  }
  for (int l = 1; l < nl; l++) {
    CUDA_TRY(comm, cudaEventRecord(s->join[l], s->lanes[l]));
    CUDA_TRY(comm, cudaStreamWaitEvent(s->lanes[0], s->join[l], 0));
  }
out:
  /* The done flag is written even after a failure, so the caller's stream
   * is not left waiting forever. */
  {
    CUresult r =
        drv.writeValue32((CUstream)s->lanes[0], (CUdeviceptr)(uintptr_t)doneFlag(s, comm->nranks),
                         epoch, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS && rc == dmacclSuccess)
      rc = cuFail(comm, "cuStreamWriteValue32(done)", r);
  }
  leaveDevice(prev, s->device);
  return rc;
}

static dmacclResult_t cudaSync(dmacclComm_t comm, uint64_t seq) {
  (void)seq;
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  int prev = enterDevice(s->device);
  for (int l = 0; l < s->nlanes; l++) CUDA_TRY(comm, cudaStreamSynchronize(s->lanes[l]));
out:
  leaveDevice(prev, s->device);
  if (rc != dmacclSuccess) return rc;
  return __atomic_load_n(&comm->asyncError, __ATOMIC_ACQUIRE);
}

const execOps execCudaOps = {
    "cuda", cudaInit, cudaFini, cudaCheckBuffer, cudaCheckStream, cudaPost, cudaLaunch, cudaSync,
};
