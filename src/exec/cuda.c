/*
 * CUDA executor: runs schedules on the GPUs' copy engines; the only kernel
 * it launches is the reduction kernel of reducing steps (cuda_reduce.cu).
 * A copy between GPUs runs on a copy engine; a copy within one GPU runs as
 * the driver's thread blocks, in every form CUDA offers (docs/overlap.md,
 * finding 8).
 *
 * Streams. An operation is launched once every rank has called it, before
 * its call returns. Lane 0 is the caller's stream itself, so the operation
 * starts after the caller's earlier work and later work waits for it, as
 * with NCCL; only for the legacy default stream (which the batch copy API
 * refuses) lane 0 is an internal stream, forked from the caller's stream by
 * an event and joined back by another. Other lanes are internal
 * non-blocking streams that the schedule's JOIN steps fork and join. Nothing
 * is queued on a stream before the work it waits for is queued: no mapping
 * of streams to hardware queues can deadlock (docs/architecture.md).
 *
 * Steps. COPY is cudaMemcpyAsync between device pointers (peer access is
 * enabled at init), or one cudaMemcpyBatchAsync for a run of batch copies on a
 * lane. SIGNAL writes the epoch into the peer's flag slot with a stream
 * memory operation (which orders it after the lane's earlier copies); WAIT
 * blocks the lane until the rank's own slot reaches the epoch (a cyclic >=
 * comparison, so epochs may wrap). Runs of SIGNALs or WAITs on a lane go out
 * as one cuStreamBatchMemOp. Between ranks of one process on one GPU, SIGNAL
 * records an event and WAIT waits for it instead (the core issues the ranks
 * round by round, so each record is queued before its wait). JOIN is an
 * event record on one lane and a wait on the other. Driver entry points come
 * from cudaGetDriverEntryPointByVersion; nothing links libcuda.
 */
#include "cuda_internal.h"
#include "cuda_reduce.h"
#include "../boot/boot.h"
#include "../base/reduce.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(EXEC_LINE_FLAG == PLAN_LINE_FLAG, "a line's flag is one value everywhere");

#define drv (*cudaDriverGet())

#define stateOf cudaStateOf

dmacclResult_t cudaFail(dmacclComm_t comm, const char *what, cudaError_t e) {
  cudaGetLastError(); /* reset the (non-sticky) error so later calls do not see it */
  return coreError(comm, dmacclUnhandledCudaError, "%s failed: %s (%s)", what, cudaGetErrorName(e),
                   cudaGetErrorString(e));
}

dmacclResult_t cuFail(dmacclComm_t comm, const char *what, CUresult r) {
  const char *msg = "unknown";
  if (drv.getErrorString) drv.getErrorString(r, &msg);
  return coreError(comm, dmacclUnhandledCudaError, "%s failed: CUresult %d (%s)", what, (int)r,
                   msg);
}

/* Makes dev current and remembers the caller's device. */
int cudaEnterDevice(int dev) {
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  if (prev != dev) cudaSetDevice(dev);
  return prev;
}
void cudaLeaveDevice(int prev, int dev) {
  if (prev >= 0 && prev != dev) cudaSetDevice(prev);
}

static void destroyState(dmacclComm_t comm, cudaState *s) {
  if (!s) return;
  int prev = cudaEnterDevice(s->device);
  for (int l = 0; l < s->nlanes; l++) {
    if (s->lanes && s->lanes[l]) {
      cudaStreamSynchronize(s->lanes[l]);
      cudaStreamDestroy(s->lanes[l]);
    }
    if (s->join && s->join[l]) cudaEventDestroy(s->join[l]);
  }
  if (s->aside) cudaStreamDestroy(s->aside);
  if (s->asideHost) cudaFreeHost(s->asideHost);
  for (int k = 0; k < CORE_BOARD_DEPTH; k++) {
    if (s->fork[k]) cudaEventDestroy(s->fork[k]);
    if (s->tail[k]) cudaEventDestroy(s->tail[k]);
    if (s->capTail[k]) cudaEventDestroy(s->capTail[k]);
  }
  if (s->oneTail) cudaEventDestroy(s->oneTail);
  if (s->launched) cudaEventDestroy(s->launched);
  for (int k = 0; s->sigEv && k < PLAN_NUM_PHASES * comm->nranks; k++)
    if (s->sigEv[k]) cudaEventDestroy(s->sigEv[k]);
  if (comm->clique->mp) {
    cudaIpcRelease(comm);
    cudaVmmRelease(&s->flagVmm);
    cudaVmmRelease(&s->stageVmm);
  } else {
    if (s->flags) cudaFree(s->flags);
    if (s->stage) cudaFree(s->stage);
  }
  pthread_mutex_destroy(&s->ipcLock);
  cudaLeaveDevice(prev, s->device);
  free(s->lanes);
  free(s->join);
  free(s->peerFlags);
  free(s->sigEv);
  free(s->peerStage);
  free(s->stageSlot);
  free(s->scratchOf);
  free(s->lineSlot);
  free(s->bdst);
  free(s->bsrc);
  free(s->bsize);
  free(s);
}

static void cudaFini(dmacclComm_t comm) {
  destroyState(comm, stateOf(comm));
  comm->execState = NULL;
}

/* Streams, events and flag words of one rank. Multi-process sets map every
 * rank's flag words through the bootstrap (collective). */
static dmacclResult_t createState(dmacclComm_t comm, const char *call) {
  dmacclResult_t rc = dmacclSuccess;
  int n = comm->nranks, prev = cudaEnterDevice(comm->device);
  cudaState *s = calloc(1, sizeof(*s));
  if (!s) {
    cudaLeaveDevice(prev, comm->device);
    return coreError(NULL, dmacclSystemError, "%s: out of memory", call);
  }
  s->device = comm->device;
  s->nlanes = PLAN_MAX_LANES(n); /* peer lanes, a side lane, the reductions' lanes */
  s->reduceCtas = coreReduceCtasParam();
  /* stagesm's kernel waits for its own blocks' stores: no more blocks than
   * SMs (one 512-thread block fits an SM at its register count), so all
   * can be resident at once (launchReduce). */
  if (cudaDeviceGetAttribute(&s->smCount, cudaDevAttrMultiProcessorCount, comm->device) !=
      cudaSuccess) {
    cudaGetLastError();
    s->smCount = 1;
  }
  s->batchFlags = coreBatchOverlapParam() ? cudaMemcpyFlagPreferOverlapWithCompute : 0;
  pthread_mutex_init(&s->ipcLock, NULL);
  s->lanes = calloc((size_t)s->nlanes, sizeof(*s->lanes));
  s->join = calloc((size_t)s->nlanes, sizeof(*s->join));
  s->peerFlags = calloc((size_t)n, sizeof(*s->peerFlags));
  s->sigEv = calloc((size_t)PLAN_NUM_PHASES * (size_t)n, sizeof(*s->sigEv));
  s->peerStage = calloc((size_t)n, sizeof(*s->peerStage));
  s->stageSlot = calloc((size_t)n, sizeof(*s->stageSlot));
  s->scratchOf = calloc((size_t)n, sizeof(*s->scratchOf));
  s->lineSlot = calloc((size_t)n, sizeof(*s->lineSlot));
  s->bdst = calloc((size_t)n, sizeof(*s->bdst));
  s->bsrc = calloc((size_t)n, sizeof(*s->bsrc));
  s->bsize = calloc((size_t)n, sizeof(*s->bsize));
  comm->execState = s;
  if (!s->lanes || !s->join || !s->peerFlags || !s->sigEv || !s->peerStage || !s->stageSlot ||
      !s->scratchOf || !s->lineSlot || !s->bdst || !s->bsrc || !s->bsize) {
    rc = coreError(NULL, dmacclSystemError, "%s: out of memory", call);
    goto out;
  }
  int least = 0, greatest = 0;
  CUDA_TRY(NULL, cudaDeviceGetStreamPriorityRange(&least, &greatest));
  int prio = coreLanePriorityHigh() ? greatest : least;
  for (int l = 0; l < s->nlanes; l++) {
    CUDA_TRY(NULL, cudaStreamCreateWithPriority(&s->lanes[l], cudaStreamNonBlocking, prio));
    CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->join[l], cudaEventDisableTiming));
  }
  CUDA_TRY(NULL, cudaStreamCreateWithFlags(&s->aside, cudaStreamNonBlocking));
  CUDA_TRY(NULL, cudaHostAlloc((void **)&s->asideHost, FLAG_P * (size_t)n * sizeof(uint32_t),
                               cudaHostAllocDefault));
  for (int k = 0; k < CORE_BOARD_DEPTH; k++) {
    CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->fork[k], cudaEventDisableTiming));
    CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->tail[k], cudaEventDisableTiming));
    CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->capTail[k], cudaEventDisableTiming));
  }
  CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->oneTail, cudaEventDisableTiming));
  CUDA_TRY(NULL, cudaEventCreateWithFlags(&s->launched, cudaEventDisableTiming));
  size_t flagBytes = FLAG_WORDS(n, s->nlanes) * sizeof(uint32_t);
  if (comm->clique->mp) {
    rc = cudaVmmCreate(comm, flagBytes, &s->flagVmm, call);
    if (rc != dmacclSuccess) goto out;
    for (int r = 0; r < n; r++)
      s->peerFlags[r] = (uint32_t *)(uintptr_t)(s->flagVmm.base + (size_t)r * s->flagVmm.stride);
    s->flags = s->peerFlags[comm->rank];
  } else {
    CUDA_TRY(NULL, cudaMalloc((void **)&s->flags, flagBytes));
  }
  CUDA_TRY(NULL, cudaMemset(s->flags, 0, flagBytes));
  /* Staging slots: every rank's, at a fixed stride across processes, so a
   * run of rows to every rank can be one 2D copy. */
  size_t stageBytes = execAreaBytes(comm->clique, 1);
  if (stageBytes && comm->clique->mp) {
    rc = cudaVmmCreate(comm, stageBytes, &s->stageVmm, call);
    if (rc != dmacclSuccess) goto out;
    s->stageStride = s->stageVmm.stride;
    for (int r = 0; r < n; r++)
      s->peerStage[r] = (char *)(uintptr_t)(s->stageVmm.base + (size_t)r * s->stageStride);
    s->stage = s->peerStage[comm->rank];
  } else if (stageBytes) {
    CUDA_TRY(NULL, cudaMalloc((void **)&s->stage, stageBytes));
  }
  /* The line slots start at 0 (plan.h LINES); peers write them only after
   * every rank's init is through. */
  if (stageBytes) CUDA_TRY(NULL, cudaMemset(s->stage, 0, stageBytes));
  uint32_t one = 1;
  CUDA_TRY(NULL, cudaMemcpy(s->flags + FLAG_ONE(n, s->nlanes), &one, sizeof(one),
                            cudaMemcpyHostToDevice));
  CUDA_TRY(NULL, cudaDeviceSynchronize());
out:
  cudaLeaveDevice(prev, s->device);
  return rc;
}

/*
 * Signal path: DMACCL_SIGNAL=memop|copy, or auto: write one peer's probe
 * word with a stream memory operation and keep that path if the driver takes
 * it, else fall back to 4-byte copies (drivers from CUDA 13.1 on reportedly
 * refuse remote memory-op writes). Needs peerFlags filled.
 */
static dmacclResult_t chooseSignal(dmacclComm_t comm, const char *call) {
  cudaState *s = stateOf(comm);
  const char *want = coreParamString("DMACCL_SIGNAL");
  if (strcmp(want, "memop") == 0) {
    s->signal = SIGNAL_MEMOP;
  } else if (strcmp(want, "copy") == 0) {
    s->signal = SIGNAL_COPY;
  } else if (strcmp(want, "auto") == 0 || !want[0]) {
    s->signal = SIGNAL_MEMOP;
    if (comm->nranks > 1) {
      int peer = (comm->rank + 1) % comm->nranks;
      int prev = cudaEnterDevice(s->device);
      CUdeviceptr probe = (CUdeviceptr)(uintptr_t)(s->peerFlags[peer] +
                                                   FLAG_PROBE(comm->nranks, s->nlanes, comm->rank));
      CUresult r = drv.writeValue32((CUstream)s->aside, probe, 1, CU_STREAM_WRITE_VALUE_DEFAULT);
      cudaError_t e = r == CUDA_SUCCESS ? cudaStreamSynchronize(s->aside) : cudaSuccess;
      if (r != CUDA_SUCCESS || e != cudaSuccess) {
        cudaGetLastError();
        s->signal = SIGNAL_COPY;
        CORE_INFO("rank %d: remote stream memory-op write refused (CUresult %d, %s): signals "
                  "by 4-byte copy",
                  comm->rank, (int)r, cudaGetErrorName(e));
      }
      cudaLeaveDevice(prev, s->device);
    }
  } else {
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: DMACCL_SIGNAL='%s' is not memop, copy or auto", call, want);
  }
  CORE_INFO("rank %d: signals by %s", comm->rank, s->signal == SIGNAL_MEMOP ? "memop" : "copy");
  return dmacclSuccess;
}

/* A device this process may use: not in prohibited compute mode, and its
 * context can be made (exclusive-process mode held by another process fails
 * here). Says which device and why. */
static dmacclResult_t usableDevice(int dev, const char *call, const char *what) {
  int mode = cudaComputeModeDefault;
  if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, dev) == cudaSuccess &&
      mode == cudaComputeModeProhibited)
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: %s is GPU %d, which is in prohibited compute mode: no process may use it",
                     call, what, dev);
  int prev = cudaEnterDevice(dev);
  cudaError_t e = cudaFree(NULL); /* makes the context */
  cudaLeaveDevice(prev, dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return coreError(
        NULL, dmacclInvalidArgument, "%s: %s is GPU %d, which this process cannot use (%s)%s", call,
        what, dev, cudaGetErrorString(e),
        mode == cudaComputeModeExclusiveProcess
            ? ": it is in exclusive-process compute mode, and another process (another "
              "rank?) holds it"
            : "");
  }
  return dmacclSuccess;
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
  if (drv.missing)
    return coreError(NULL, dmacclUnsupported, "%s: driver entry point %s not available (%s)", call,
                     drv.missing, cudaGetErrorString(drv.status));
  if (!devlist && n > ndevs)
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: ndev %d but only %d CUDA devices (to put several ranks on one GPU, "
                     "give a devlist that repeats it)",
                     call, n, ndevs);
  for (int i = 0; i < n; i++)
    if (comms[i]->device >= ndevs)
      return coreError(NULL, dmacclInvalidArgument, "%s: devlist[%d] = %d but only %d CUDA devices",
                       call, i, comms[i]->device, ndevs);
  for (int i = 0; i < n; i++) {
    int first = 1;
    for (int j = 0; j < i; j++) first &= comms[j]->device != comms[i]->device;
    char what[32];
    snprintf(what, sizeof(what), devlist ? "devlist[%d]" : "rank %d", i);
    if (first && (rc = usableDevice(comms[i]->device, call, what)) != dmacclSuccess) return rc;
  }
  /* Ranks on one GPU reach each other without peer access; every pair of
   * different GPUs needs it. */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int a = comms[i]->device, b = comms[j]->device, can = 0;
      if (a == b) continue;
      if (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) {
        cudaGetLastError();
        return coreError(NULL, dmacclUnsupported,
                         "%s: GPU %d (rank %d) cannot access GPU %d (rank %d) peer to peer; copy "
                         "engines need a peer path between every pair",
                         call, a, i, b, j);
      }
    }
  for (int i = 0; i < n && rc == dmacclSuccess; i++) {
    int prev = cudaEnterDevice(comms[i]->device);
    for (int j = 0; j < n; j++) {
      if (comms[i]->device == comms[j]->device) continue;
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
    cudaLeaveDevice(prev, comms[i]->device);
  }
  for (int i = 0; i < n && rc == dmacclSuccess; i++) rc = createState(comms[i], call);
  for (int i = 0; i < n && rc == dmacclSuccess; i++)
    for (int r = 0; r < n; r++) {
      stateOf(comms[i])->peerFlags[r] = stateOf(comms[r])->flags;
      stateOf(comms[i])->peerStage[r] = stateOf(comms[r])->stage;
    }
  /* Ranks that share a GPU signal each other with events (see the top). */
  for (int i = 0; i < n && rc == dmacclSuccess; i++) {
    int prev = cudaEnterDevice(comms[i]->device);
    for (int p = 0; p < n && rc == dmacclSuccess; p++) {
      if (p == i || comms[p]->device != comms[i]->device) continue;
      for (int ph = 0; ph < PLAN_NUM_PHASES && rc == dmacclSuccess; ph++) {
        e = cudaEventCreateWithFlags(&stateOf(comms[i])->sigEv[ph * n + p], cudaEventDisableTiming);
        if (e != cudaSuccess) rc = cudaFail(NULL, "cudaEventCreateWithFlags", e);
      }
    }
    cudaLeaveDevice(prev, comms[i]->device);
  }
  for (int i = 0; i < n && rc == dmacclSuccess; i++) rc = chooseSignal(comms[i], call);
  if (rc != dmacclSuccess)
    for (int i = 0; i < n; i++) cudaFini(comms[i]);
  return rc;
}

static dmacclResult_t cudaIdentify(int *device, char *name, size_t namelen) {
  int ndevs = 0;
  cudaError_t e = cudaGetDeviceCount(&ndevs);
  if (e != cudaSuccess || ndevs == 0) {
    cudaGetLastError();
    return coreError(NULL, dmacclUnsupported,
                     "dmacclCommInitRank: no CUDA device (%s); use the host executor",
                     e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
  }
  if (drv.missing)
    return coreError(NULL, dmacclUnsupported,
                     "dmacclCommInitRank: driver entry point %s not available (%s)", drv.missing,
                     cudaGetErrorString(drv.status));
  int current = *device < 0;
  if ((current && (e = cudaGetDevice(device)) != cudaSuccess) ||
      (e = cudaDeviceGetPCIBusId(name, (int)namelen, *device)) != cudaSuccess)
    return cudaFail(NULL, "dmacclCommInitRank: cudaGetDevice/cudaDeviceGetPCIBusId", e);
  return usableDevice(*device, "dmacclCommInitRank",
                      current ? "the calling thread's current device"
                              : "the communicator's device");
}

static dmacclResult_t cudaInitRank(dmacclComm_t comm, char (*peerNames)[32]) {
  const char *call = "dmacclCommInitRank";
  for (int r = 0; r < comm->nranks; r++) {
    int dev = -1, can = 0;
    if (r == comm->rank) continue;
    /* A rank on this GPU (another process) is reached without peer access. */
    if (cudaDeviceGetByPCIBusId(&dev, peerNames[r]) == cudaSuccess && dev == comm->device) continue;
    if (cudaDeviceGetByPCIBusId(&dev, peerNames[r]) != cudaSuccess ||
        cudaDeviceCanAccessPeer(&can, comm->device, dev) != cudaSuccess || !can) {
      cudaGetLastError();
      return coreError(NULL, dmacclUnsupported,
                       "%s: GPU %d (rank %d) cannot reach GPU %.32s (rank %d) peer to peer (is it "
                       "visible in this process? CUDA_VISIBLE_DEVICES must show every rank's GPU)",
                       call, comm->device, comm->rank, peerNames[r], r);
    }
  }
  dmacclResult_t rc = createState(comm, call);
  if (rc == dmacclSuccess) rc = chooseSignal(comm, call);
  if (rc != dmacclSuccess) cudaFini(comm);
  return rc;
}

/* One driver query answers everything the check needs (type, managed,
 * device, allocation range): about half the host time of the runtime's
 * attribute query plus an address-range query. Pointers CUDA does not know
 * get the attributes' null values (type 0). */
static dmacclResult_t cudaCheckBuffer(dmacclComm_t comm, const void *ptr, size_t bytes,
                                      const char *call, const char *argName) {
  dmacclResult_t rc = dmacclSuccess;
  unsigned int type = 0, managed = 0; /* IS_MANAGED writes a bool: zeroed first */
  int device = -1;
  CUdeviceptr base = 0;
  size_t size = 0;
  CUpointer_attribute at[5] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                               CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                               CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                               CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *data[5] = {&type, &managed, &device, &base, &size};
  int prev = cudaEnterDevice(comm->device);
  CUresult r = drv.pointerGetAttributes(5, at, data, (CUdeviceptr)(uintptr_t)ptr);
  if (r != CUDA_SUCCESS) {
    const char *why = NULL;
    drv.getErrorString(r, &why);
    rc = coreError(comm, dmacclInvalidArgument, "%s: %s %p is not memory CUDA knows (%s)", call,
                   argName, ptr, why ? why : "cuPointerGetAttributes failed");
  } else if (managed || type != CU_MEMORYTYPE_DEVICE) {
    const char *kind = managed                      ? "managed"
                       : type == CU_MEMORYTYPE_HOST ? "page-locked host"
                                                    : "unregistered host";
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: %s %p is %s memory, not device memory of GPU %d", call, argName, ptr, kind,
                   comm->device);
  } else if (device != comm->device) {
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: %s %p is memory of GPU %d, but this communicator (rank %d) uses GPU %d",
                   call, argName, ptr, device, comm->rank, comm->device);
  } else {
    size_t avail = base && size ? (size_t)(base + size - (CUdeviceptr)(uintptr_t)ptr) : bytes;
    if (avail < bytes)
      rc = coreError(comm, dmacclInvalidArgument,
                     "%s: %s %p needs %zu bytes but its allocation ends %zu bytes after it", call,
                     argName, ptr, bytes, avail);
  }
  cudaLeaveDevice(prev, comm->device);
  return rc;
}

static dmacclResult_t cudaCheckStream(dmacclComm_t comm, cudaStream_t stream, const char *call,
                                      int *capturing, unsigned long long *captureId) {
  *capturing = 0;
  *captureId = 0;
  if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return dmacclSuccess; /* the comm's device's own default stream (never captured) */
  /* Capture status first: CUDA refuses most stream queries (the device
   * among them) on a stream that is being captured. */
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  cudaError_t e = cudaStreamGetCaptureInfo(stream, &st, &id, NULL, NULL, NULL, NULL);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return coreError(comm, dmacclInvalidArgument, "%s: stream %p is not a valid CUDA stream (%s)",
                     call, (void *)stream, cudaGetErrorString(e));
  }
  if (st == cudaStreamCaptureStatusInvalidated)
    return coreError(comm, dmacclInvalidUsage,
                     "%s: stream %p's graph capture was invalidated by an earlier error", call,
                     (void *)stream);
  *capturing = st == cudaStreamCaptureStatusActive;
  if (*capturing) {
    *captureId = id ? id : ~0ull;
    return dmacclSuccess; /* its device cannot be asked now */
  }
  int dev = -1;
  e = cudaStreamGetDevice(stream, &dev);
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

/*
 * One process: ranks that share a GPU signal each other with events, and an
 * event recorded in one capture cannot be waited for in another. So when
 * such ranks' calls are captured, their streams must be captured into one
 * graph (the stream of one rank forked from the other's capture by an
 * event); the launch is refused otherwise, before anything is queued.
 * Separate graphs could not be safe anyway: a graph replayed before its
 * peer's would wait, in a hardware queue it may share with that peer, for a
 * signal queued behind it.
 */
static dmacclResult_t cudaCheckLaunch(const dmacclComm_t *comms, const coreOp *ops, int n,
                                      char *why, size_t whylen) {
  unsigned long long id[CORE_MAX_RANKS];
  int capturing = 0;
  for (int r = 0; r < n; r++) capturing |= ops[r].capture;
  if (!capturing) return dmacclSuccess;
  for (int r = 0; r < n; r++) {
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    id[r] = 0;
    if (ops[r].capture && cudaStreamGetCaptureInfo(ops[r].stream, &st, &id[r], NULL, NULL, NULL,
                                                   NULL) != cudaSuccess) {
      cudaGetLastError();
      id[r] = 0;
    }
  }
  /* Captured on some ranks only: their flags and slots would differ. */
  for (int r = 1; r < n; r++)
    if (ops[r].capture != ops[0].capture) {
      int c = ops[r].capture ? r : 0, e = ops[r].capture ? 0 : r;
      snprintf(why, whylen,
               "rank %d's stream is being captured into a CUDA graph but rank %d's is not: "
               "capture every rank's call or none; nothing was issued",
               c, e);
      return dmacclInvalidUsage;
    }
  for (int r = 0; r < n; r++)
    for (int p = 0; p < r; p++) {
      if (comms[p]->device != comms[r]->device || (id[p] == id[r] && id[r] != 0)) continue;
      snprintf(why, whylen,
               "ranks %d and %d share GPU %d, and their streams are %s: capture the streams of "
               "ranks that share a GPU into one graph (fork one stream from the other's capture "
               "with an event); nothing was issued",
               p, r, comms[r]->device,
               !ops[p].capture || !ops[r].capture ? "not both being captured"
                                                  : "captured into different graphs");
      return dmacclInvalidUsage;
    }
  return dmacclSuccess;
}

/* Address of flag word `word` of rank `owner`, as this rank reaches it. */
static CUdeviceptr flagWord(cudaState *s, int owner, size_t word) {
  return (CUdeviceptr)(uintptr_t)(s->peerFlags[owner] + word);
}

/* Rank p of this process shares this rank's GPU: events, not flags (the
 * events exist only for such peers; phase 0's at index p). */
static int colocated(dmacclComm_t comm, int p) {
  return !comm->clique->mp && stateOf(comm)->sigEv[p] != NULL;
}

/*
 * A run of SIGNAL or WAIT steps on one lane.
 * Eager: signals store the epoch in the peer's eager slot; waits wait for
 *   their own slot to reach it (cyclic >=, so epochs may wrap).
 * Graph: signals store 1 in the peer's graph slot; waits wait for 1 and then
 *   reset their slot to 0 (in the same batch), so every replay starts from
 *   0. The reset cannot overtake the peer's next signal: the peer sends it
 *   only after a signal of this rank's issued after the reset (in this
 *   operation, or in the next one's ENTRY for a wait that ends an
 *   operation: a signal that ends one follows its resets, a kernel's polled
 *   words included, but push1's PUSH words, which only the peers' next
 *   push1 signals after this rank's next ENTRY: plan.h; test_plan
 *   testGraphWordsRepeat and testGraphWordsMixed check it in graph-word
 *   simulations). DATA has a word per graph staging slot (gslot), whose next
 *   signal comes after this rank's signal of the staged operation between
 *   (staged.c).
 * Signal path memop: one cuStreamBatchMemOp of remote writes. Path copy: one
 *   local write of the value into the lane's source word (eager), then one
 *   4-byte copy per peer, ordered after the lane's earlier copies.
 * A peer of this process on this GPU: SIGNAL records the event [phase][peer]
 *   of this rank, WAIT waits for the peer's event [phase][me], eager or
 *   captured alike (the record was queued in an earlier round).
 * selfWord (signals, or none): also write this rank's own DATA word, for a
 *   polled JOIN after the signals (staged.c): first in the memop batch where
 *   there is one, else as a write of its own after them.
 */
static dmacclResult_t issueSync(dmacclComm_t comm, const planStep *all, int k, cudaStream_t lane,
                                uint32_t epoch, int graph, int gslot, int selfPhase) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  int n = comm->nranks, me = comm->rank, selfWord = selfPhase >= 0;
  int sp = selfWord ? selfPhase : PLAN_PHASE_DATA;
  CUdeviceptr self =
      flagWord(s, me, graph ? flagGraphWord(n, sp, me, gslot) : FLAG_EAGER(n, sp, me));
  const planStep *st[MEMOP_CHUNK];
  int m = 0;
  for (int i = 0; i < k; i++) {
    int p = all[i].peer, ev = (int)all[i].phase * n + p;
    if (!colocated(comm, p)) {
      st[m++] = &all[i];
    } else if (all[i].kind == PLAN_STEP_SIGNAL) {
      CUDA_TRY(comm, cudaEventRecord(s->sigEv[ev], lane));
    } else {
      cudaState *ps = stateOf(comm->clique->comms[p]);
      CUDA_TRY(comm, cudaStreamWaitEvent(lane, ps->sigEv[(int)all[i].phase * n + me], 0));
    }
  }
  k = m;
  if (k == 0) goto out;
  CUstreamBatchMemOpParams *prm = s->memops;
  memset(prm, 0, sizeof(*prm) * (size_t)(graph ? 2 * k : k));
  if (st[0]->kind == PLAN_STEP_WAIT) {
    for (int i = 0; i < k; i++) {
      prm[i].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
      prm[i].waitValue.address =
          flagWord(s, me,
                   graph ? flagGraphWord(n, (int)st[i]->phase, st[i]->peer, gslot)
                         : FLAG_EAGER(n, st[i]->phase, st[i]->peer));
      prm[i].waitValue.value = graph ? 1 : epoch;
      prm[i].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    }
    /* Graph: the resets follow the waits in the same batch (its operations
     * run in array order), one command and one graph node instead of two. */
    int m2 = k;
    if (graph)
      for (int i = 0; i < k; i++, m2++) {
        prm[m2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        prm[m2].writeValue.address =
            flagWord(s, me, flagGraphWord(n, (int)st[i]->phase, st[i]->peer, gslot));
        prm[m2].writeValue.value = 0;
      }
    CU_TRY(comm, drv.batchMemOp((CUstream)lane, (unsigned)m2, prm, 0));
  } else if (s->signal == SIGNAL_MEMOP) {
    /* The own word first (a local write; signal runs leave the batch room
     * for it), then the peers'. */
    int m2 = 0;
    if (selfWord) {
      memset(&prm[k], 0, sizeof(*prm));
      prm[m2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
      prm[m2].writeValue.address = self;
      prm[m2].writeValue.value = graph ? 1 : epoch;
      prm[m2++].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      selfWord = 0;
    }
    for (int i = 0; i < k; i++, m2++) {
      prm[m2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
      prm[m2].writeValue.address = flagWord(s, st[i]->peer,
                                            graph ? flagGraphWord(n, (int)st[i]->phase, me, gslot)
                                                  : FLAG_EAGER(n, st[i]->phase, me));
      prm[m2].writeValue.value = graph ? 1 : epoch;
      prm[m2].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
    }
    CU_TRY(comm, drv.batchMemOp((CUstream)lane, (unsigned)m2, prm, 0));
  } else {
    size_t srcWord = graph ? FLAG_ONE(n, s->nlanes) : FLAG_SRC(n, st[0]->lane);
    if (!graph)
      CU_TRY(comm, drv.writeValue32((CUstream)lane, flagWord(s, me, srcWord), epoch,
                                    CU_STREAM_WRITE_VALUE_DEFAULT));
    for (int i = 0; i < k; i++) {
      void *dst = (void *)(uintptr_t)flagWord(s, st[i]->peer,
                                              graph ? flagGraphWord(n, (int)st[i]->phase, me, gslot)
                                                    : FLAG_EAGER(n, st[i]->phase, me));
      CUDA_TRY(comm, cudaMemcpyAsync(dst, (const void *)(uintptr_t)flagWord(s, me, srcWord),
                                     sizeof(uint32_t), cudaMemcpyDeviceToDevice, lane));
    }
  }
out:
  if (selfWord && rc == dmacclSuccess) {
    CUresult e =
        drv.writeValue32((CUstream)lane, self, graph ? 1 : epoch, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (e != CUDA_SUCCESS) rc = cuFail(comm, "cuStreamWriteValue32 (own word of a polled JOIN)", e);
  }
  return rc;
}

/*
 * A run of rank-ordered batch copies (batch == 2) whose rows go to every
 * rank's staging slot in order, from equally spaced sources, as one
 * cudaMemcpy2DAsync: row r lands at peerStage[r] + const, so the destination
 * pitch is the staging stride. Returns the index after the run, or i when the
 * run does not have that shape (single process: no stride; AllGather: every
 * row reads the same block, a source pitch of 0, which CUDA refuses).
 */
static int issue2D(dmacclComm_t comm, const planSchedule *sch, int i, const execBuffers *b,
                   cudaStream_t lane, dmacclResult_t *rc) {
  cudaState *s = stateOf(comm);
  int n = comm->nranks;
  if (!s->stageStride || i + n > sch->nsteps || s->stageStride > (size_t)INT32_MAX) return i;
  const planStep *st = &sch->steps[i];
  char *src0 = execLocate(b, st->src), *dst0 = execLocate(b, st->dst);
  size_t width = st->bytes;
  ptrdiff_t spitch = n > 1 ? (char *)execLocate(b, sch->steps[i + 1].src) - src0 : (ptrdiff_t)width;
  if (spitch < (ptrdiff_t)width || planRunEnd(sch, i, n) != i + n) return i;
  for (int r = 0; r < n; r++) {
    const planStep *q = &sch->steps[i + r];
    if (q->batch != 2 || q->bytes != width || q->dst.buf != PLAN_BUF_STAGE || q->dst.rank != r ||
        (char *)execLocate(b, q->dst) != dst0 + (size_t)r * s->stageStride ||
        (char *)execLocate(b, q->src) != src0 + (ptrdiff_t)r * spitch)
      return i;
  }
  cudaError_t e = cudaMemcpy2DAsync(dst0, s->stageStride, src0, (size_t)spitch, width, (size_t)n,
                                    cudaMemcpyDeviceToDevice, lane);
  if (e != cudaSuccess) *rc = cudaFail(comm, "cudaMemcpy2DAsync", e);
  return i + n;
}

/* A REDUCE step's reduction as the kernel takes it. */
typedef struct {
  void *dst;
  const void *srcs[EXEC_REDUCE_MAX_SRCS];
  int nsrc;
  size_t count, bytes;
  dmacclDataType_t dtype;
  dmacclRedOp_t op;
  const void *scalar; /* BASE_PREMULSUM: execBuffers' */
  uint64_t scalarBits;
} kernelReduce;

static void reduceOf(const planSchedule *sch, const planStep *st, const execBuffers *b,
                     kernelReduce *r) {
  for (int k = 0; k < st->nsrc; k++) r->srcs[k] = execLocate(b, sch->srcs[st->src0 + k]);
  r->nsrc = st->nsrc;
  r->dst = execLocate(b, st->dst);
  r->bytes = st->bytes;
  /* one source: a copy of bytes (plan.h), e.g. stagell's movement form */
  int bytes = st->nsrc == 1;
  r->count = bytes ? st->bytes : st->bytes / sch->elemSize;
  r->dtype = bytes ? dmacclUint8 : (dmacclDataType_t)sch->dtype;
  r->op = bytes ? dmacclSum : (dmacclRedOp_t)sch->redop;
  r->scalar = b->scalar;
  r->scalarBits = b->scalarBits;
}

/* w for r's launch: a premultiplied sum's carries its scalar (`own`, a
 * copy of w or empty). */
static const execReduceWait *withScalar(const kernelReduce *r, const execReduceWait *w,
                                        execReduceWait *own) {
  if (r->op != BASE_PREMULSUM) return w;
  if (w)
    *own = *w;
  else
    memset(own, 0, sizeof(*own));
  own->scalar = r->scalar;
  own->scalarBits = r->scalarBits;
  return own;
}

/* The blocks of a kernel of s's GPU doing w; `moves`: a movement
 * collective's (no arithmetic: every block streams bytes). */
static int kernelCtas(const cudaState *s, const execReduceWait *w, int moves) {
  int ctas = s->reduceCtas;
  /* Lines double the bytes each thread stores and the kernel polls each:
   * more blocks (the probe's 512 KB line AllReduce: 6.9 us with 32, 12.0
   * with 8; docs/latency-notes.md). A movement collective's kernel (stagesm's
   * and stagell's forms) streams its bytes to and from the peers with its
   * stores and loads alone: as many. */
  if ((moves || (w && (w->lineSrcs || w->ntakes))) && ctas < EXEC_LINE_CTAS) ctas = EXEC_LINE_CTAS;
  if (w && (w->nmoves || w->nsignals) && ctas > s->smCount) ctas = s->smCount;
  return ctas;
}

/* The launch of a REDUCE step (with w: waiting for w's flags first). */
static dmacclResult_t launchReduce(dmacclComm_t comm, const planSchedule *sch, const planStep *st,
                                   const execBuffers *b, const execReduceWait *w, cudaStream_t lane,
                                   cudaEvent_t launched) {
  dmacclResult_t rc = dmacclSuccess;
  kernelReduce r;
  execReduceWait own;
  reduceOf(sch, st, b, &r);
  CUDA_TRY(comm,
           execCudaReduceLaunched(r.dst, r.srcs, r.nsrc, r.count, r.dtype, r.op,
                                  kernelCtas(stateOf(comm), w, !planCollOf(sch->coll)->reduces),
                                  withScalar(&r, w, &own), lane, launched));
out:
  return rc;
}

/* Whether every block's stores must be done before any block reduces or
 * takes (moveCount): a move reads what the reduction (r) or a take writes.
 * The first `own` moves are the reduction's own operation's: a line move of
 * those that starts where it writes (an in-place AllReduce) needs no
 * barrier, since the thread that stores unit u's line is the one that
 * reduces unit u, after it (cuda_reduce_kernel.cuh, storeLines and reduceLines). */
static int movesNeedBarrier(const execReduceWait *w, const kernelReduce *r, int own) {
  const char *d = r->dst;
  for (int m = 0; m < w->nmoves; m++) {
    const char *src = w->moves[m].src;
    size_t mb = w->moves[m].bytes;
    if (!mb) continue; /* a token reads nothing (its buffer may be NULL) */
    if (r->bytes && src < d + r->bytes && d < src + mb &&
        !(m < own && w->moves[m].lines && w->lineSrcs && src == d))
      return 1;
    for (int t = 0; t < w->ntakes; t++) { /* a take writes what a move reads */
      const char *td = w->takes[t].dst;
      if (w->takes[t].bytes && src < td + w->takes[t].bytes && td < src + mb) return 1;
    }
  }
  return 0;
}

/*
 * A run of inKernel steps and the REDUCE after them: one kernel launch.
 * Its SIGNALs and WAITs are of one phase: DATA, or EXIT (twoshot's second
 * kernel, whose REDUCE is empty). WAITs (staged.c, kernelWait and
 * stagesm): the kernel polls the words of that phase they name (eager:
 * until they reach the epoch; graph: until 1, then resets them to 0, as
 * the memop batch would) before it reduces; after a polled JOIN, also the
 * rank's own DATA word, which the JOIN's lane wrote (no peer signals it).
 * A peer of this process on this GPU signals by event: that wait stays a
 * stream wait before the kernel (its record was issued in an earlier
 * round). COPYs and SIGNALs (stagesm, twoshot): the kernel stores the
 * bytes into the peers' slots (twoshot's second kernel: their receive
 * buffers) and then writes their words of the phase (graph: 1; eager: the
 * epoch), as issueSync's memops would; a kernel cannot record an event, so
 * a peer on this GPU is refused (the core runs stage there). The REDUCEs
 * of one line source right after the REDUCE on its lane go into the same
 * launch as takes (execReduceTake). Returns the index after the last step
 * the launch took.
 */
static int buildKernelRun(dmacclComm_t comm, const planSchedule *sch, int i, const execBuffers *b,
                          cudaStream_t lane, uint32_t epoch, int graph, int gslot,
                          execReduceWait *wOut, int *redAt, dmacclResult_t *rcOut) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  int n = comm->nranks, me = comm->rank, j = i;
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  const planStep *st = &sch->steps[i];
  planPhase ph = PLAN_PHASE_DATA;
  for (int k = i; k < sch->nsteps && sch->steps[k].inKernel && sch->steps[k].lane == st->lane; k++)
    if (sch->steps[k].kind == PLAN_STEP_SIGNAL || sch->steps[k].kind == PLAN_STEP_WAIT) {
      ph = sch->steps[k].phase;
      break;
    }
  w.flags = s->flags + (graph ? flagGraphWord(n, (int)ph, 0, gslot) : FLAG_EAGER(n, ph, 0));
  w.value = graph ? 1 : epoch;
  w.reset = graph;
  w.count = s->flags + FLAG_KCOUNT(n, s->nlanes);
  w.signalValue = graph ? 1 : epoch;
  /* A polled JOIN before the waits on this lane: its word is this rank's
   * DATA word. */
  for (int k = i - 1; k >= 0; k--) {
    if (sch->steps[k].lane != st->lane) continue;
    if (sch->steps[k].kind != PLAN_STEP_JOIN || !sch->steps[k].inKernel) break;
    w.mask[me / 64] |= 1ull << (me % 64);
  }
  if ((w.mask[me / 64] >> (me % 64) & 1) && ph != PLAN_PHASE_DATA) {
    rc = coreError(comm, dmacclInternalError, "a polled JOIN before a kernel of phase %d", (int)ph);
    goto out;
  }
  for (; j < sch->nsteps && sch->steps[j].inKernel && sch->steps[j].lane == st->lane; j++) {
    const planStep *q = &sch->steps[j];
    int p = q->peer;
    if (q->kind == PLAN_STEP_COPY) {
      if (w.nmoves == EXEC_REDUCE_MAX_MOVES) break;
      w.moves[w.nmoves++] = (execReduceMove){execLocate(b, q->src), execLocate(b, q->dst), q->bytes,
                                             q->dst.buf == PLAN_BUF_LINES};
      continue;
    }
    if ((q->kind != PLAN_STEP_WAIT && q->kind != PLAN_STEP_SIGNAL) || q->phase != ph ||
        (ph != PLAN_PHASE_DATA && ph != PLAN_PHASE_EXIT)) {
      rc = coreError(comm, dmacclInternalError, "a kernel step of kind %d, phase %d", (int)q->kind,
                     (int)q->phase);
      goto out;
    }
    if (q->kind == PLAN_STEP_SIGNAL) {
      if (colocated(comm, p) || w.nsignals == EXEC_REDUCE_MAX_MOVES) {
        rc = coreError(comm, dmacclInternalError,
                       "a kernel cannot signal rank %d (it shares this GPU, or too many peers)", p);
        goto out;
      }
      w.signals[w.nsignals++] = (uint32_t *)(uintptr_t)flagWord(
          s, p, graph ? flagGraphWord(n, (int)ph, me, gslot) : FLAG_EAGER(n, ph, me));
    } else if (colocated(comm, p)) {
      cudaState *ps = stateOf(comm->clique->comms[p]);
      CUDA_TRY(comm, cudaStreamWaitEvent(lane, ps->sigEv[(int)ph * n + me], 0));
    } else {
      w.mask[p / 64] |= 1ull << (p % 64);
    }
  }
  if (j >= sch->nsteps || sch->steps[j].kind != PLAN_STEP_REDUCE ||
      sch->steps[j].lane != st->lane) {
    rc = coreError(comm, dmacclInternalError, "kernel steps not followed by their REDUCE");
    goto out;
  }
  /* Every block's stores before any block reduces (moveCount): for the
   * signals after them, and where a move reads what the REDUCE or a take
   * writes (in place; movesNeedBarrier). Lines are their own signals. */
  const planStep *red = &sch->steps[j];
  for (int k = 0; k < red->nsrc; k++) {
    if (sch->srcs[red->src0 + k].buf != PLAN_BUF_LINES) continue;
    if (k >= 32) {
      rc = coreError(comm, dmacclInternalError, "a REDUCE reads lines as its source %d (0-31 only)",
                     k);
      goto out;
    }
    w.lineSrcs |= 1u << k;
  }
  /* The REDUCEs of one line source right after it on its lane (stagell's
   * movement form: one per peer, staged.c) ride in the same launch as takes:
   * one kernel per operation instead of one per peer; so do those of one
   * staging slot source after a REDUCE that reads the slot too (stagesm's
   * movement form: this kernel polled the DATA words that say the bytes are
   * there). */
  int k = j + 1, slot = red->nsrc == 1 && sch->srcs[red->src0].buf == PLAN_BUF_STAGE;
  for (; k < sch->nsteps && w.ntakes < EXEC_REDUCE_MAX_MOVES; k++) {
    const planStep *q = &sch->steps[k];
    planBuf from = q->nsrc == 1 ? sch->srcs[q->src0].buf : PLAN_BUF_SEND;
    if (q->kind != PLAN_STEP_REDUCE || q->lane != st->lane || q->nsrc != 1 || q->pieceBytes ||
        q->inKernel || !(from == PLAN_BUF_LINES || (slot && from == PLAN_BUF_STAGE)))
      break;
    w.takes[w.ntakes++] = (execReduceTake){execLocate(b, sch->srcs[q->src0]), execLocate(b, q->dst),
                                           q->bytes, from == PLAN_BUF_STAGE};
  }
  kernelReduce r;
  reduceOf(sch, red, b, &r);
  if (w.nsignals || (w.nmoves && movesNeedBarrier(&w, &r, w.nmoves)))
    w.moveCount = s->flags + FLAG_KMOVE(n, s->nlanes);
  *redAt = j;
  j = k;
out:
  *wOut = w;
  *rcOut = rc;
  return j;
}

static int issueKernelRun(dmacclComm_t comm, const planSchedule *sch, int i, const execBuffers *b,
                          cudaStream_t lane, uint32_t epoch, int graph, int gslot,
                          dmacclResult_t *rcOut) {
  execReduceWait w;
  int red = -1;
  int j = buildKernelRun(comm, sch, i, b, lane, epoch, graph, gslot, &w, &red, rcOut);
  if (*rcOut == dmacclSuccess)
    *rcOut = launchReduce(comm, sch, &sch->steps[red], b, &w, lane, NULL);
  return j;
}

/* The own word a polled JOIN's lane writes (and its kernel polls): its
 * phase for a piece of a REDUCE in pieces (PIECE+k), DATA otherwise. */
static int polledPhase(const planStep *join) {
  return join->phase >= PLAN_PHASE_PIECE ? (int)join->phase : PLAN_PHASE_DATA;
}

/* Whether a JOIN from the lane of the REDUCE steps[i], at steps[j] or
 * later (its kernel's SIGNALs end before j) and before any other step of
 * that lane, is marked launched (plan.h). */
static int launchJoined(const planSchedule *sch, int i, int j) {
  int lane = sch->steps[i].lane;
  for (; j < sch->nsteps && sch->steps[j].lane != lane; j++)
    if (sch->steps[j].kind == PLAN_STEP_JOIN && sch->steps[j].from == lane &&
        sch->steps[j].launched)
      return 1;
  return 0;
}

/* push1's pending reset (cudaState.pushResetAt): the polled PUSH words
 * back to 0 on `lane`, one batch of memory operations (a graph's resets;
 * plan.h says why no other operation's signal can land on them first). */
static dmacclResult_t issuePushReset(dmacclComm_t comm, cudaStream_t lane) {
  cudaState *s = stateOf(comm);
  CUstreamBatchMemOpParams *prm = s->memops;
  unsigned m = 0;
  int n = comm->nranks;
  s->pushResetAt = -1;
  for (int k = 0; k < s->pushResetPieces; k++)
    for (int q = 0; q < n && q < 256; q++)
      if (s->pushResetMask[q / 64] >> (q % 64) & 1) {
        if (m == MEMOP_CHUNK) return coreError(comm, dmacclInternalError, "too many PUSH words");
        memset(&prm[m], 0, sizeof(*prm));
        prm[m].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        prm[m].writeValue.address =
            (CUdeviceptr)(uintptr_t)(s->pushResetWords + (size_t)k * (size_t)n + (size_t)q);
        prm[m++].writeValue.value = 0;
      }
  CUresult e = m ? drv.batchMemOp((CUstream)lane, m, prm, 0) : CUDA_SUCCESS;
  return e == CUDA_SUCCESS ? dmacclSuccess
                           : cuFail(comm, "cuStreamBatchMemOp (the PUSH words' reset)", e);
}

/* A REDUCE in pieces (plan.h pieceBytes), steps[i]: one kernel that polls
 * the own word of piece k (written by its polled JOIN's lane; pull1) or
 * the PUSH+k words of the peers its inKernel WAITs name (push1) before
 * piece k, and after it writes the PIECE+k words of the ranks that the
 * inKernel SIGNALs after the REDUCE name (the same ranks for every piece:
 * pull1's AllReduce its peers, push1 the rank itself, for its lane C). Those SIGNALs are written
 * while the kernel runs; the WAITs that need them are ordered by list order or by a JOIN marked
 * launched (plan.h, rule 2; planCheck), and for such a JOIN the launch records s->launched
 * (s->launchedAt: this REDUCE). Returns the index after those SIGNALs. */
static int launchPieced(dmacclComm_t comm, const planSchedule *sch, int i, const execBuffers *b,
                        cudaStream_t lane, uint32_t epoch, int graph, int gslot,
                        dmacclResult_t *rcOut) {
  cudaState *s = stateOf(comm);
  const planStep *st = &sch->steps[i];
  int n = comm->nranks, me = comm->rank;
  execReduceWait w;
  memset(&w, 0, sizeof(w));
  w.pieces = (int)((st->bytes + st->pieceBytes - 1) / st->pieceBytes);
  w.pieceCount = st->pieceBytes / sch->elemSize;
  w.pieceFlags = s->flags + (graph ? flagGraphWord(n, PLAN_PHASE_PIECE, me, gslot)
                                   : FLAG_EAGER(n, PLAN_PHASE_PIECE, me));
  w.pieceStride = n; /* the words of phases PIECE+k, k = 0, 1, ... */
  /* push1: the peers' words of piece 0 that the WAITs before it name (the
   * same peers every piece: planCheck) */
  int polled = 0;
  for (int k = i - 1; k >= 0; k--) {
    const planStep *q = &sch->steps[k];
    if (q->lane != st->lane) continue;
    if (q->kind != PLAN_STEP_WAIT || !q->inKernel || q->phase < PLAN_PHASE_PIECE) break;
    if (q->phase != PLAN_PHASE_PUSH) continue;
    if (colocated(comm, q->peer) || q->peer >= 256) {
      *rcOut = coreError(comm, dmacclInternalError,
                         "the kernel of a REDUCE in pieces cannot poll rank %d's words (it shares "
                         "this GPU)",
                         q->peer);
      return i + 1;
    }
    w.pieceMask[q->peer / 64] |= 1ull << (q->peer % 64);
    polled = 1;
  }
  if (polled)
    w.pieceFlags = s->flags + (graph ? flagGraphWord(n, PLAN_PHASE_PUSH, 0, gslot)
                                     : FLAG_EAGER(n, PLAN_PHASE_PUSH, 0));
  w.value = graph ? 1 : epoch;
  /* push1's polled words are reset after the kernel by its stream (below):
   * a kernel's stores to words its peers wrote seemed to hold it 15-25 us
   * (docs/results/push1-empty-2xh200/, calls Q and P) */
  w.reset = graph && !polled;
  w.count = s->flags + FLAG_KCOUNT(n, s->nlanes);
  w.signalValue = graph ? 1 : epoch;
  /* the SIGNALs of piece 0 name the peers, every later piece's the same
   * (planPieceSignals) */
  int P0 = 0, m = planPieceSignals(sch, i, &P0), j = i + 1 + (m > 0 ? m : 0);
  int joined = m > 0 && launchJoined(sch, i, j);
  int ok = m >= 0 && P0 <= EXEC_REDUCE_MAX_MOVES;
  for (int t = 0; t < P0 && ok; t++) ok = !colocated(comm, sch->steps[i + 1 + t].peer);
  if (!ok) {
    *rcOut = coreError(comm, dmacclInternalError,
                       "the kernel of a REDUCE in pieces cannot do the SIGNALs after it (every "
                       "piece to the same peers, none on this GPU)");
    return j;
  }
  for (int t = 0; t < P0; t++)
    w.pieceSignals[w.npieceSignals++] =
        (uint32_t *)(uintptr_t)flagWord(s, sch->steps[i + 1 + t].peer,
                                        graph ? flagGraphWord(n, PLAN_PHASE_PIECE, me, gslot)
                                              : FLAG_EAGER(n, PLAN_PHASE_PIECE, me));
  if (w.npieceSignals) w.pieceCounts = s->flags + FLAG_KPIECE(n, s->nlanes);
  *rcOut = launchReduce(comm, sch, st, b, &w, lane, joined ? s->launched : NULL);
  if (joined && *rcOut == dmacclSuccess) s->launchedAt = i;
  if (graph && polled && *rcOut == dmacclSuccess) {
    /* the polled PUSH words back to 0 for the next replay, by this lane
     * after the kernel and after its JOIN of the pushing lane (plan.h
     * planPushResetAt; issuePushReset) */
    s->pushResetAt = planPushResetAt(sch, i);
    s->pushResetWords = w.pieceFlags;
    s->pushResetPieces = w.pieces;
    memcpy(s->pushResetMask, w.pieceMask, sizeof(s->pushResetMask));
    if (s->pushResetAt < j) *rcOut = issuePushReset(comm, lane);
  }
  return j;
}

/* A REDUCE with a source in a line slot (stagell). */
static int readsLines(const planSchedule *sch, const planStep *st) {
  for (int k = 0; k < st->nsrc; k++)
    if (sch->srcs[st->src0 + k].buf == PLAN_BUF_LINES) return 1;
  return 0;
}

/* Issues steps[i..] that form one command; returns the index after them. */
static int issueRun(dmacclComm_t comm, const planSchedule *sch, int i, const execBuffers *b,
                    const cudaStream_t *streams, uint32_t epoch, int graph, int gslot,
                    dmacclResult_t *rcOut) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  const planStep *st = &sch->steps[i];
  cudaStream_t lane = streams[st->lane];
  int j = i;
  if (st->kind == PLAN_STEP_WAIT && st->inKernel && st->phase >= PLAN_PHASE_PIECE) {
    /* push1: the kernel of the REDUCE in pieces after it polls the peer's
     * word itself (launchPieced) */
    j = i + 1;
  } else if (st->inKernel && st->kind != PLAN_STEP_JOIN) {
    j = issueKernelRun(comm, sch, i, b, lane, epoch, graph, gslot, &rc);
  } else if (st->kind == PLAN_STEP_JOIN && st->inKernel) {
    /* Polled by the kernel: lane `from` writes this rank's own DATA word
     * (with the signals just before it where there are some: issueSync). */
    rc = issueSync(comm, st, 0, streams[st->from], epoch, graph, gslot, polledPhase(st));
    j = i + 1;
  } else if (st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) {
    /* a graph's waits take two entries each (wait, reset); a signal run
     * leaves one entry for the own word of a polled JOIN after it */
    int most = graph && st->kind == PLAN_STEP_WAIT ? MEMOP_CHUNK / 2
               : st->kind == PLAN_STEP_SIGNAL      ? MEMOP_CHUNK - 1
                                                   : MEMOP_CHUNK;
    j = planRunEnd(sch, i, most); /* (never a kernel's WAIT: planRunEnd) */
    const planStep *nx = j < sch->nsteps ? &sch->steps[j] : NULL;
    int self = st->kind == PLAN_STEP_SIGNAL && nx && nx->kind == PLAN_STEP_JOIN && nx->inKernel &&
               nx->from == st->lane;
    rc = issueSync(comm, st, j - i, lane, epoch, graph, gslot, self ? polledPhase(nx) : -1);
    if (self) j++;
  } else if (st->kind == PLAN_STEP_REDUCE && readsLines(sch, st)) {
    j = issueKernelRun(comm, sch, i, b, lane, epoch, graph, gslot, &rc); /* the lines' waits */
  } else if (st->kind == PLAN_STEP_REDUCE && st->pieceBytes) {
    j = launchPieced(comm, sch, i, b, lane, epoch, graph, gslot, &rc);
  } else if (st->kind == PLAN_STEP_REDUCE) {
    rc = launchReduce(comm, sch, st, b, NULL, lane, NULL);
    j = i + 1;
  } else if (st->kind == PLAN_STEP_NOTIFY) {
    /* a stream memory operation: ordered after the lane's earlier copies
     * and waits, as a SIGNAL is */
    if (b->arrived)
      CU_TRY(comm, drv.writeValue32((CUstream)lane, (CUdeviceptr)(uintptr_t)(b->arrived + st->peer),
                                    b->arrivedValue, CU_STREAM_WRITE_VALUE_DEFAULT));
    j = i + 1;
  } else if (st->kind == PLAN_STEP_JOIN && st->launched) {
    /* the launch of lane `from`'s last REDUCE recorded it (launchPieced) */
    int red = i - 1;
    while (red >= 0 &&
           !(sch->steps[red].lane == st->from && sch->steps[red].kind == PLAN_STEP_REDUCE))
      red--;
    if (red < 0 || s->launchedAt != red) {
      rc = coreError(comm, dmacclInternalError,
                     "a JOIN marked launched (step %d) follows no REDUCE launched with its event",
                     i);
      goto out;
    }
    CUDA_TRY(comm, cudaStreamWaitEvent(lane, s->launched, 0));
    j = i + 1;
  } else if (st->kind == PLAN_STEP_JOIN) {
    /* One record serves a run of lanes joining the same lane. */
    CUDA_TRY(comm, cudaEventRecord(s->join[st->from], streams[st->from]));
    for (j = i; j < sch->nsteps && sch->steps[j].kind == PLAN_STEP_JOIN &&
                sch->steps[j].from == st->from && !sch->steps[j].launched;
         j++)
      CUDA_TRY(comm, cudaStreamWaitEvent(streams[sch->steps[j].lane], s->join[st->from], 0));
  } else if (st->batch == 2 && !graph && (j = issue2D(comm, sch, i, b, lane, &rc)) > i) {
    /* rows to every rank at the staging stride: one 2D copy */
  } else if (st->batch && !graph) { /* the batch API cannot be captured into a graph */
    size_t k = 0;
    int end = planRunEnd(sch, i, comm->nranks);
    for (j = i; j < end; j++, k++) {
      s->bdst[k] = execLocate(b, sch->steps[j].dst);
      s->bsrc[k] = execLocate(b, sch->steps[j].src);
      s->bsize[k] = sch->steps[j].bytes;
    }
    struct cudaMemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.flags = s->batchFlags; /* copy engines, not SM copy kernels (docs/overlap.md) */
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
  /* push1's PUSH words' reset, after the step planPushResetAt names */
  if (rc == dmacclSuccess && s->pushResetAt >= i && s->pushResetAt < j)
    rc = issuePushReset(comm, streams[sch->steps[s->pushResetAt].lane]);
out:
  *rcOut = rc;
  return j;
}

/*
 * Queues steps [from, to) of one operation. Lane l runs on stream L[l]: lane
 * 0 is the caller's stream, or for the legacy default stream an internal
 * stream forked from it (from == 0) and joined back (to == nsteps); the
 * other lanes are internal streams. Operations of a rank run in sequence
 * order (flags count epochs): the internal lanes are in order among
 * themselves, so only a change of lane 0's stream between two operations
 * needs the previous operation's tail event. Streams are told apart by
 * handle: a stream destroyed and re-created with the same handle between two
 * calls skips that wait.
 */
/* cudaStreamPerThread names the calling thread's stream, and the launch may
 * run on another thread (one process: the last rank's caller): the fork is
 * recorded here, on the caller's thread, and the caller's stream waits for
 * the tail in attach. */
static cudaEvent_t tailOf(cudaState *s, const coreOp *op) {
  int slot = (int)(op->seq % CORE_BOARD_DEPTH);
  return op->capture ? s->capTail[slot] : s->tail[slot];
}

/* Whether the fork is recorded at the post and the join at the attach: the
 * per-thread stream, and a group's detached calls (which must all fork from
 * the stream as it was before any of them). */
static int forkAtPost(const coreOp *op) {
  return op->stream == cudaStreamPerThread || op->detach;
}

static dmacclResult_t cudaPost(dmacclComm_t comm, const coreOp *op) {
  dmacclResult_t rc = dmacclSuccess;
  if (!forkAtPost(op)) return rc;
  cudaState *s = stateOf(comm);
  int prev = cudaEnterDevice(s->device);
  CUDA_TRY(comm, cudaEventRecord(s->fork[op->seq % CORE_BOARD_DEPTH], op->stream));
out:
  cudaLeaveDevice(prev, s->device);
  return rc;
}

static dmacclResult_t cudaAttach(dmacclComm_t comm, const coreOp *op) {
  dmacclResult_t rc = dmacclSuccess;
  if (!forkAtPost(op)) return rc;
  cudaState *s = stateOf(comm);
  int prev = cudaEnterDevice(s->device);
  CUDA_TRY(comm, cudaStreamWaitEvent(op->stream, tailOf(s, op), 0));
out:
  cudaLeaveDevice(prev, s->device);
  return rc;
}

/*
 * Held launches. While a thread posts a group (coreGroupPosting), an
 * operation of that group whose whole schedule is one kernel of lines
 * (stagell: stores into the peers' line slots, a REDUCE that reads lines,
 * its takes; no flag, no other lane) on a stream of the caller's is not
 * launched at once: its kernel is merged into the one kernel held for its
 * device (if that is on the same stream), and its tail event is recorded
 * after that kernel when it is issued: before anything else this thread
 * queues or waits for (coreGroupFlush), or at the end of the group's posts
 * (cudaFlush). A group's Send and Recv with a peer, two operations on two
 * channels, so become one launch instead of two, on the caller's stream
 * instead of lanes forked from it.
 *
 * The merged kernel stores every operation's lines first, then waits for
 * and reads each one's: the first operation's REDUCE is its reduction, the
 * others' (one line source each: a copy of bytes) ride as takes. A kernel
 * that waits for several operations so ends once the peers' kernels holding
 * them have started (each stores its lines before it waits for anything).
 * One kernel is held per device, and anything else this thread queues
 * issues it first (another launch: every device's; an operation to hold
 * that cannot join it: its device's), so each GPU runs its operations in order
 * (rule 5 of docs/architecture.md), a held kernel being a run of
 * consecutive ones. No cycle of waits: a kernel that has started and not
 * ended waits for a kernel holding one of its operations, o, that has not
 * started; that one waits behind a kernel of its GPU that has started and
 * holds only operations before o; and so on, the operation falling at each
 * step, which cannot go on forever. Two operations of one communicator never
 * share a kernel (the second's stores could reach a line slot whose reader
 * is still on the operation two before it: staged.c's slot argument orders
 * them through the first one's waits).
 */
#define HELD_KERNELS 8 /* devices */
typedef struct {
  int device;
  cudaStream_t stream;
  dmacclComm_t first; /* its count words and reduceCtas serve the kernel */
  int nops;
  dmacclComm_t comms[EXEC_REDUCE_MAX_MOVES + 1];
  uint64_t seqs[EXEC_REDUCE_MAX_MOVES + 1];
  cudaEvent_t tails[EXEC_REDUCE_MAX_MOVES + 1];
  int own; /* w.moves[0, own) are the first operation's */
  execReduceWait w;
  kernelReduce r;
} heldKernel;
static _Thread_local heldKernel held[HELD_KERNELS];
static _Thread_local int nheld;
static _Thread_local dmacclResult_t heldError; /* the first failed flush's, for cudaFlush */

/* What a held kernel takes from one operation: its moves, its REDUCE's
 * sources and its takes. */
typedef struct {
  int moves, nsrc, takes;
} heldShape;

/* Whether op's whole schedule is one kernel of lines, as buildKernelRun
 * takes it from step 0 (no step of another lane, no flag, takes that fit),
 * on a stream of the caller's; *shape: what the kernel takes from it. */
static int linesOnly(const coreOp *op, const planSchedule *sch, heldShape *shape) {
  if (op->stream == NULL || op->stream == cudaStreamLegacy || op->stream == cudaStreamPerThread)
    return 0;
  int i = 0, moves = 0;
  for (; i < sch->nsteps && sch->steps[i].kind == PLAN_STEP_COPY && sch->steps[i].inKernel &&
         sch->steps[i].lane == 0;
       i++)
    moves++;
  const planStep *red = i < sch->nsteps ? &sch->steps[i] : NULL;
  if (!red || moves > EXEC_REDUCE_MAX_MOVES || red->kind != PLAN_STEP_REDUCE || red->lane != 0 ||
      red->inKernel || red->pieceBytes || red->nsrc > 32 || !readsLines(sch, red))
    return 0;
  int takes = 0;
  for (i++; i < sch->nsteps; i++, takes++) {
    const planStep *q = &sch->steps[i];
    if (q->kind != PLAN_STEP_REDUCE || q->lane != 0 || q->nsrc != 1 || q->pieceBytes ||
        q->inKernel || sch->srcs[q->src0].buf != PLAN_BUF_LINES)
      return 0;
  }
  *shape = (heldShape){moves, red->nsrc, takes};
  return takes <= EXEC_REDUCE_MAX_MOVES;
}

/* The kernel held for s's device that an operation of that shape on
 * `stream` joins, or NULL where it starts one of its own: the held kernel
 * is on another stream, holds an operation of s's communicator (one at a
 * time), or has no room; or the operation's REDUCE is a reduction (a
 * kernel has one). */
static heldKernel *heldInto(const cudaState *s, cudaStream_t stream, const heldShape *shape) {
  for (int h = 0; h < nheld; h++) {
    heldKernel *k = &held[h];
    if (k->device != s->device) continue;
    int fits = k->stream == stream && !s->heldPending && shape->nsrc == 1 &&
               k->w.nmoves + shape->moves <= EXEC_REDUCE_MAX_MOVES &&
               k->w.ntakes + 1 + shape->takes <= EXEC_REDUCE_MAX_MOVES;
    return fits ? k : NULL;
  }
  return NULL;
}

/* Whether this thread's group holds the calls of op's every rank on this
 * process: ranks as processes, its own; one process, every rank's, since
 * the thread that posts last launches them all (another thread could
 * otherwise queue a later operation of the set on a stream ahead of what
 * this one holds). */
static int groupHoldsSet(dmacclComm_t comm) {
  coreClique *c = comm->clique;
  if (c->mp) return coreGroupHolds(comm);
  for (int r = 0; r < c->nranks; r++)
    if (!c->comms[r] || !coreGroupHolds(c->comms[r])) return 0;
  return 1;
}

/* Launches what is held for `device` (-1: every device), then records each
 * operation's tail after it. */
static dmacclResult_t flushHeld(int device) {
  dmacclResult_t first = dmacclSuccess;
  int kept = 0;
  for (int h = 0; h < nheld; h++) {
    heldKernel *k = &held[h];
    if (device >= 0 && k->device != device) {
      if (kept != h) held[kept] = *k;
      kept++;
      continue;
    }
    cudaState *s = stateOf(k->first);
    int n = k->first->nranks, prev = cudaEnterDevice(k->device);
    if (k->w.nmoves && movesNeedBarrier(&k->w, &k->r, k->own))
      k->w.moveCount = s->flags + FLAG_KMOVE(n, s->nlanes);
    cudaError_t e =
        execCudaReduceLaunched(k->r.dst, k->r.srcs, k->r.nsrc, k->r.count, k->r.dtype, k->r.op,
                               kernelCtas(s, &k->w, 1), &k->w, k->stream, NULL);
    for (int o = 0; o < k->nops; o++) {
      cudaError_t te = cudaEventRecord(k->tails[o], k->stream);
      if (e == cudaSuccess) e = te;
      stateOf(k->comms[o])->heldPending = 0;
    }
    if (e != cudaSuccess)
      for (int o = 0; o < k->nops; o++) {
        dmacclResult_t rc = cudaFail(k->comms[o], "a group's kernel of lines", e);
        coreSetAsyncError(k->comms[o], rc, "operation %llu: launch failed: %s",
                          (unsigned long long)k->seqs[o], coreLastError(k->comms[o]));
        if (first == dmacclSuccess) first = rc;
      }
    cudaLeaveDevice(prev, k->device);
  }
  nheld = kept;
  if (first != dmacclSuccess && heldError == dmacclSuccess) heldError = first;
  return first;
}

static dmacclResult_t cudaFlush(int end) {
  if (nheld) flushHeld(-1);
  dmacclResult_t rc = end ? heldError : dmacclSuccess;
  if (end) heldError = dmacclSuccess;
  return rc;
}

/* Holds op's kernel (linesOnly) on `stream`: merged into `into`
 * (heldInto), or a held kernel of its own (nothing is held for its device
 * then: the caller issued it). */
static dmacclResult_t holdKernel(dmacclComm_t comm, const coreOp *op, const planSchedule *sch,
                                 const execBuffers *b, heldKernel *into, cudaStream_t stream,
                                 uint32_t epoch, int gslot) {
  cudaState *s = stateOf(comm);
  execReduceWait w;
  int red = -1;
  dmacclResult_t rc = dmacclSuccess;
  buildKernelRun(comm, sch, 0, b, stream, epoch, op->capture, gslot, &w, &red, &rc);
  if (rc != dmacclSuccess) return rc;
  const planStep *st = &sch->steps[red];
  heldKernel *k = into;
  if (!k) { /* a new held kernel: op's REDUCE is its reduction */
    k = &held[nheld++];
    k->device = s->device;
    k->stream = stream;
    k->first = comm;
    k->nops = 0;
    k->w = w;
    k->w.moveCount = NULL; /* decided at the flush, over every operation's moves */
    k->own = w.nmoves;
    reduceOf(sch, st, b, &k->r);
    k->w.scalar = k->r.scalar;
    k->w.scalarBits = k->r.scalarBits;
  } else { /* op's REDUCE (one line source) and takes ride as takes */
    for (int m = 0; m < w.nmoves; m++) k->w.moves[k->w.nmoves++] = w.moves[m];
    k->w.takes[k->w.ntakes++] =
        (execReduceTake){execLocate(b, sch->srcs[st->src0]), execLocate(b, st->dst), st->bytes, 0};
    for (int t = 0; t < w.ntakes; t++) k->w.takes[k->w.ntakes++] = w.takes[t];
  }
  k->comms[k->nops] = comm;
  k->seqs[k->nops] = op->seq;
  k->tails[k->nops++] = tailOf(s, op);
  s->heldSeq = op->seq;
  s->heldPending = 1;
  return dmacclSuccess;
}

static dmacclResult_t cudaLaunch(dmacclComm_t comm, const coreOp *op, const planSchedule *sch,
                                 const execBuffers *b, int from, int to) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  uint32_t epoch = (uint32_t)op->seq;
  int slot = (int)(op->seq % CORE_BOARD_DEPTH);
  int nl = sch->nlanes < 1 ? 1 : sch->nlanes;
  /* Not the legacy default stream as a lane: the batch copy API refuses it;
   * nor the per-thread stream, which names the launching thread's own. */
  /* a later round of an operation launched in a held kernel (one process
   * issues round by round; the kernel took every step) */
  int rest = from > 0 && s->heldSeq == op->seq;
  heldShape shape;
  int hold = from == 0 && coreGroupPosting() && groupHoldsSet(comm) && linesOnly(op, sch, &shape);
  heldKernel *into = hold ? heldInto(s, op->stream, &shape) : NULL;
  /* What is held is issued in the order of the launches, and before this
   * operation's waits below (for its communicator's last operation, whose
   * tail a held kernel records when issued) unless it joins it. */
  if (nheld && !rest && !hold)
    flushHeld(-1);
  else if (nheld && hold && !into)
    flushHeld(nheld == HELD_KERNELS ? -1 : s->device); /* (another GPU keeps its own) */
  /* A held kernel runs on the caller's stream itself (linesOnly). */
  int atPost = !hold && !rest && forkAtPost(op);
  int onCaller = op->stream != NULL && op->stream != cudaStreamLegacy && !atPost;
  cudaStream_t L[CORE_MAX_RANKS];
  for (int l = 0; l < nl; l++) L[l] = s->lanes[l];
  if (onCaller) L[0] = op->stream;
  /* Graph staging slot 0 or 1 of a captured staged operation (its DATA
   * words are the slot's own). */
  int gslot = 0;
  if (planIsStaged(sch->algo) && sch->stageSlots > 0) {
    size_t off = execStageOffset(comm, sch, op->capture);
    for (int r = 0; r < comm->nranks; r++) s->stageSlot[r] = s->peerStage[r] + off;
    gslot = (int)(sch->stageIndex % (unsigned long long)sch->stageSlots);
    size_t loff = execLineOffset(comm, sch, op->capture);
    for (int r = 0; r < comm->nranks; r++) s->lineSlot[r] = s->peerStage[r] + loff;
  }
  if (execScratchBytes(comm->clique)) { /* every rank's, in its area (exec.h) */
    size_t soff = execScratchOffset(comm->clique, 1);
    for (int r = 0; r < comm->nranks; r++) s->scratchOf[r] = s->peerStage[r] + soff;
  }
  execBuffers bb = {b->send,    b->recv,         s->stageSlot, s->scratchOf, s->lineSlot,
                    b->arrived, b->arrivedValue, b->scalar,    b->scalarBits};
  int prev = cudaEnterDevice(s->device);
  if (from == 0) {
    /* The last eager operation's tail; a graph capture must not wait for
     * work outside it (nor is a captured tail a real event to wait for). */
    s->captured[slot] = op->capture;
    if (!onCaller) { /* (a fork at the post was recorded at the call) */
      if (!atPost) CUDA_TRY(comm, cudaEventRecord(s->fork[slot], op->stream));
      CUDA_TRY(comm, cudaStreamWaitEvent(L[0], s->fork[slot], 0));
    }
    if (!op->capture && s->lastSeq && s->lastStream != L[0])
      CUDA_TRY(comm, cudaStreamWaitEvent(L[0], s->tail[s->lastSeq % CORE_BOARD_DEPTH], 0));
    /* ... and inside one capture, the last captured operation's (an edge of
     * the graph: parallel branches would otherwise let a later operation
     * run before an earlier one). */
    if (op->capture && s->lastCapSeq && s->lastCapId == op->captureId && s->lastCapStream != L[0])
      CUDA_TRY(comm, cudaStreamWaitEvent(L[0], s->capTail[s->lastCapSeq % CORE_BOARD_DEPTH], 0));
  }
  /* A kernel run (issueKernelRun) may take steps of later rounds with it:
   * they are not issued again. */
  if (from == 0) s->issuedTo = 0, s->launchedAt = -1, s->pushResetAt = -1;
  if (hold) {
    rc = holdKernel(comm, op, sch, &bb, into, L[0], epoch, gslot);
    if (rc != dmacclSuccess) goto out;
    s->issuedTo = sch->nsteps; /* every step is in the held kernel */
  }
  for (int i = from < s->issuedTo ? s->issuedTo : from; i < to;) {
    i = issueRun(comm, sch, i, &bb, L, epoch, op->capture, gslot, &rc);
    s->issuedTo = i;
    if (rc != dmacclSuccess) goto out;
  }
out:
  /* The end is issued even after a failure: the caller's stream is joined. */
  if (to == sch->nsteps) {
    /* (still held: the flush records the tail after the kernel) */
    int pending = s->heldPending && s->heldSeq == op->seq;
    if (s->heldSeq == op->seq) s->heldSeq = 0;
    cudaError_t e = pending ? cudaSuccess : cudaEventRecord(tailOf(s, op), L[0]);
    if (e == cudaSuccess && !onCaller && !atPost)
      e = cudaStreamWaitEvent(op->stream, tailOf(s, op), 0);
    if (e != cudaSuccess && rc == dmacclSuccess)
      rc = cudaFail(comm, "joining the caller's stream", e);
    if (!op->capture) {
      s->lastSeq = op->seq;
      s->lastStream = L[0];
    } else {
      s->lastCapSeq = op->seq;
      s->lastCapStream = L[0];
      s->lastCapId = op->captureId;
    }
  }
  cudaLeaveDevice(prev, s->device);
  return rc;
}

/* Polls a stream (or, when ev is set, an event) until its work is done, so
 * that a broken communicator (dead peer, watchdog) returns its error instead
 * of hanging. *stop: the communicator is being aborted. */
static dmacclResult_t pollDone(dmacclComm_t comm, cudaStream_t st, cudaEvent_t ev, int *stop) {
  coreClique *c = comm->clique;
  for (int round = 0;; round++) {
    cudaError_t e = ev ? cudaEventQuery(ev) : cudaStreamQuery(st);
    if (e == cudaSuccess) return dmacclSuccess;
    if (e != cudaErrorNotReady) return cudaFail(comm, "dmacclCommSynchronize: stream query", e);
    dmacclResult_t broken = __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE);
    if (broken != dmacclSuccess)
      return coreError(comm, broken, "dmacclCommSynchronize: %s", c->brokenWhy);
    if (__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE)) {
      *stop = 1; /* the work may never have run: say so, not success */
      return coreError(comm, dmacclInvalidUsage,
                       "dmacclCommSynchronize: the communicator was aborted while this waited");
    }
    if (round > 1000) sched_yield();
  }
}

/* One rank: one copy on the caller's stream (no lanes, flags or events but
 * one; the driver runs a copy within one GPU as thread blocks:
 * bench/probes/smuse.cu, and up to 1 MB it is the reduction kernel's byte
 * copy, below). Calls on another stream than the last
 * eager one's wait for it, so that a rank's calls run in order; a capture
 * neither waits for work outside it nor records the tail Synchronize reads. */
#define ONE_RANK_KERNEL_MAX ((size_t)1 << 20)

/* A group's self op (an AlltoAllv's own block as Send/Recv pairs, pairs.c)
 * rides as a move in the kernel held for its device on its stream, posted
 * just before it (its channels' lines), instead of a launch of its own: in
 * the kernel's order on the stream, its tail recorded after the kernel. At
 * any size: held, it costs no launch, and a copy within one GPU runs on SMs
 * either way (ONE_RANK_KERNEL_MAX); beside the peers' blocks rather than
 * after them (2x H200, AlltoAllv of 4 MB as pairs: a 2 MB self copy after
 * the kernel added to the operation's time). Not under CTA policy zero, with
 * an arrival word, or on a stream other than the last one-rank copy's (that
 * copy's tail is waited for first). */
static int holdOneRank(dmacclComm_t comm, const coreOp *op, const void *src, void *dst,
                       size_t bytes, int moved) {
  cudaState *s = stateOf(comm);
  if (!op->self || !coreGroupPosting() || !bytes || src == dst || op->arrived ||
      comm->clique->table.ctaPolicy == dmacclCtaPolicyZero || (!op->capture && s->oneSeen && moved))
    return 0;
  for (int h = 0; h < nheld; h++) {
    heldKernel *k = &held[h];
    if (k->device != s->device) continue;
    if (k->stream != op->stream || k->w.nmoves >= EXEC_REDUCE_MAX_MOVES ||
        (!op->capture && k->nops > EXEC_REDUCE_MAX_MOVES))
      return 0;
    k->w.moves[k->w.nmoves++] = (execReduceMove){src, dst, bytes, 0};
    if (!op->capture) { /* recorded after the kernel at its flush */
      k->comms[k->nops] = comm;
      k->seqs[k->nops] = 0;
      k->tails[k->nops++] = s->oneTail;
      s->oneSeen = 1;
      s->oneStream = op->stream;
    }
    return 1;
  }
  return 0;
}

static dmacclResult_t cudaOneRank(dmacclComm_t comm, const coreOp *op, const void *src, void *dst,
                                  size_t bytes) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  /* (the per-thread stream names a different stream on each thread) */
  int moved = s->oneStream != op->stream || op->stream == cudaStreamPerThread;
  if (holdOneRank(comm, op, src, dst, bytes, moved)) return dmacclSuccess;
  if (nheld) flushHeld(-1); /* issued in the order of the calls */
  int prev = cudaEnterDevice(s->device);
  if (!op->capture && s->oneSeen && moved)
    CUDA_TRY(comm, cudaStreamWaitEvent(op->stream, s->oneTail, 0));
  /* Up to 1 MB the reduction kernel's byte copy (one source: plan.h), whose
   * launch costs the host less than the runtime's copy (2.9 us against 3.6
   * on H100, bench/probes/hostapi.cu); a copy within one GPU runs on SMs
   * either way (docs/overlap.md). Larger, or under CTA policy zero (no
   * kernel of the library moves data): the runtime's copy. */
  if (op->redop == BASE_PREMULSUM && planCollOf(op->coll)->reduces) {
    /* a premultiplied sum: the kernel scales (in place too) with the byte
     * copy's blocks, not the reductions' DMACCL_REDUCE_CTAS: one rank has no
     * transfer to run beside. With 8 blocks the scaling streamed 0.7 TB/s,
     * 2.5-3.3x NCCL's time from 4 MB; with 32 it takes NCCL's time (one
     * H200, 16 MB: 13.6-14.1 us against 46.7; docs/results/scale-h200/) */
    kernelReduce r = {.op = BASE_PREMULSUM, .scalar = op->premulPtr, .scalarBits = op->premulBits};
    execReduceWait own;
    int ctas = s->reduceCtas > EXEC_LINE_CTAS ? s->reduceCtas : EXEC_LINE_CTAS;
    CUDA_TRY(comm,
             execCudaReduceWait(dst, &src, 1, bytes / coreTypeSize(op->datatype), op->datatype,
                                BASE_PREMULSUM, ctas < s->smCount ? ctas : s->smCount,
                                withScalar(&r, NULL, &own), op->stream));
  } else if (bytes && src != dst && bytes <= ONE_RANK_KERNEL_MAX &&
             comm->clique->table.ctaPolicy != dmacclCtaPolicyZero)
    CUDA_TRY(comm, execCudaReduceWait(dst, &src, 1, bytes, dmacclUint8, dmacclSum, EXEC_LINE_CTAS,
                                      NULL, op->stream));
  else if (bytes && src != dst)
    CUDA_TRY(comm, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, op->stream));
  if (op->arrived) /* the one block has arrived */
    CU_TRY(comm, drv.writeValue32((CUstream)op->stream, (CUdeviceptr)(uintptr_t)op->arrived,
                                  op->arrivedValue, CU_STREAM_WRITE_VALUE_DEFAULT));
  if (!op->capture) {
    CUDA_TRY(comm, cudaEventRecord(s->oneTail, op->stream));
    s->oneSeen = 1;
    s->oneStream = op->stream;
  }
out:
  cudaLeaveDevice(prev, s->device);
  return rc;
}

/* One stream memory wait on the caller's stream (dmacclStreamWaitArrival). */
static dmacclResult_t cudaWaitWord(dmacclComm_t comm, const uint32_t *word, uint32_t value,
                                   cudaStream_t stream) {
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  int prev = cudaEnterDevice(s->device);
  CU_TRY(comm, drv.waitValue32((CUstream)stream, (CUdeviceptr)(uintptr_t)word, value,
                               CU_STREAM_WAIT_VALUE_EQ));
out:
  cudaLeaveDevice(prev, s->device);
  return rc;
}

/* The progress thread's device: the rank's. Its watchdog queries events
 * (cudaComplete); on a thread left on device 0 each query switched to the
 * rank's device and back, and the first switch back made a primary context
 * on GPU 0 (100-130 ms under the set's lock, and that context's memory on
 * GPU 0 for the process's life: docs/latency-notes.md, "The 100-ms-class
 * stall, found"). The rank's context exists already (initRank). */
static void relaxCaptureMode(void);
static void cudaBindThread(int device) {
  /* cudaSetDevice first: a runtime call that needs a context, made on a
   * new thread, binds it to device 0 and initializes that device's context
   * (relaxing the capture mode first did: 2x H200, testOwnGpuOnly "after
   * init") */
  if (cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
  relaxCaptureMode(); /* before its queries, as on every call of this thread */
}

static dmacclResult_t cudaSync(dmacclComm_t comm, uint64_t seq) {
  (void)seq;
  dmacclResult_t rc = dmacclSuccess;
  cudaState *s = stateOf(comm);
  coreClique *c = comm->clique;
  int prev = cudaEnterDevice(s->device), stop = 0;
  /* Operations of a rank run in order: the last eager one's tail is the end
   * of all of them (captured ones run when their graphs do). */
  if (s->lastSeq) rc = pollDone(comm, NULL, s->tail[s->lastSeq % CORE_BOARD_DEPTH], &stop);
  if (s->oneSeen && rc == dmacclSuccess) rc = pollDone(comm, NULL, s->oneTail, &stop);
  for (int l = 0; l < s->nlanes && rc == dmacclSuccess && !stop; l++)
    rc = pollDone(comm, s->lanes[l], NULL, &stop);
  cudaLeaveDevice(prev, s->device);
  if (rc != dmacclSuccess) return rc;
  /* Every posted operation is launched (the core waited) and complete. */
  if (c->mp && !__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE)) cudaIpcCloseStale(comm);
  return dmacclSuccess; /* the core reports the errors of the operations */
}

/* Waits up to `sec` seconds for the aside stream: it shares hardware queues
 * with the lanes, and a WAIT at a queue's head can hold it back. */
static int asideDone(cudaState *s, double sec) {
  double end = coreNowSec() + sec;
  for (;;) {
    cudaError_t e = cudaStreamQuery(s->aside);
    if (e == cudaSuccess) return 1;
    if (e != cudaErrorNotReady) {
      cudaGetLastError();
      return 0;
    }
    if (coreNowSec() > end) return 0;
    sched_yield();
  }
}

static void sleepMs(void) {
  struct timespec ts = {0, 1000000};
  nanosleep(&ts, NULL);
}

/* One region of this rank's VMM memory (flag words, a line slot) that
 * releaseInOwnContext writes. */
typedef struct {
  const cudaVmm *vmm;
  const char *base; /* this rank's part as the communicator's context maps it */
  size_t off;
  const void *src;
  size_t bytes;
  CUdeviceptr va, dst; /* va: the part mapped anew in the own context (0: not) */
} ownWrite;

/* Writes o once from the current (own) context: at its address if that
 * context reaches it, else through the part mapped anew. */
static CUresult ownFirstWrite(ownWrite *o, int rank, int device) {
  o->dst = (CUdeviceptr)(uintptr_t)(o->base + o->off);
  CUresult r = drv.memcpyHtoD(o->dst, o->src, o->bytes);
  if (r == CUDA_SUCCESS || !o->vmm->handles) return r;
  CUmemAccessDesc acc;
  memset(&acc, 0, sizeof(acc));
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = device;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = drv.addressReserve(&o->va, o->vmm->part, 0, 0, 0);
  if (r != CUDA_SUCCESS) {
    o->va = 0;
    return r;
  }
  r = drv.memMap(o->va, o->vmm->part, 0, o->vmm->handles[rank], 0);
  if (r == CUDA_SUCCESS) r = drv.memSetAccess(o->va, o->vmm->part, &acc, 1);
  if (r == CUDA_SUCCESS) r = drv.memcpyHtoD(o->dst = o->va + o->off, o->src, o->bytes);
  return r;
}

/* Writes the regions o[0..n) through a context of its own: its queues are
 * not the ones a blocked WAIT holds (the GPU time-slices contexts). The
 * memory is VMM memory, which every context on the device reaches at the
 * same address (else the part is mapped anew). Ranks as processes only.
 * Then writes them again every millisecond for `again` seconds. */
static int releaseInOwnContext(cudaState *s, int rank, ownWrite *o, int n, double again) {
  CUdevice dev;
  CUcontext ctx = NULL, old = NULL;
  if (drv.deviceGet(&dev, s->device) != CUDA_SUCCESS || drv.ctxCreate(&ctx, 0, dev) != CUDA_SUCCESS)
    return 0;
  /* ctxCreate made it current; the copies are synchronous in it. */
  /* o[0] (the flag words) decides; the others are written where they can be. */
  int ok[8] = {0};
  if (n > 8) n = 8;
  for (int i = 0; i < n; i++) ok[i] = ownFirstWrite(&o[i], rank, s->device) == CUDA_SUCCESS;
  CUresult r = ok[0] ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
  for (double until = coreNowSec() + again; r == CUDA_SUCCESS && coreNowSec() < until;) {
    sleepMs();
    r = drv.memcpyHtoD(o[0].dst, o[0].src, o[0].bytes);
    for (int i = 1; i < n; i++)
      if (ok[i]) ok[i] = drv.memcpyHtoD(o[i].dst, o[i].src, o[i].bytes) == CUDA_SUCCESS;
  }
  for (int i = 0; i < n; i++)
    if (o[i].va) {
      drv.memUnmap(o[i].va, o[i].vmm->part);
      drv.addressFree(o[i].va, o[i].vmm->part);
    }
  drv.ctxPop(&old);
  drv.ctxDestroy(ctx);
  return r == CUDA_SUCCESS;
}

/* How long abort keeps releasing graph waits (seconds; captured work only). */
#ifndef ABORT_GRAPH_SEC
#define ABORT_GRAPH_SEC 0.5
#endif

/* Releases every wait of this rank: eager slots far ahead of any epoch
 * posted, graph slots at 1 (again and again for ABORT_GRAPH_SEC when the
 * communicator has captured operations), and every line of its line slots
 * set to the flag (a stagell kernel polls them). Written by a stream the
 * lanes never wait for; if a blocked hardware queue holds that stream back
 * too (one queue: CUDA_DEVICE_MAX_CONNECTIONS=1: a wait behind a polling
 * kernel of the same replay holds it), through a context of its own. */
static void cudaAbort(dmacclComm_t comm) {
  cudaState *s = stateOf(comm);
  int n = comm->nranks;
  size_t bytes = FLAG_Q(n) * sizeof(uint32_t); /* eager and graph words */
  uint32_t *w = calloc(FLAG_WORDS(n, s->nlanes), sizeof(uint32_t));
  if (!w) return;
  uint32_t far = (uint32_t)comm->posted + (1u << 24);
  for (int ph = 0; ph < PLAN_NUM_PHASES; ph++)
    for (int p = 0; p < n; p++) {
      w[FLAG_EAGER(n, ph, p)] = far;
      w[FLAG_GRAPH(n, ph, p)] = 1;
      w[FLAG_GDATA1(n, p)] = 1;
    }
  /* A graph word released once is reset by the first wait it lets pass, and
   * a replay in flight may wait on the same word again a few operations
   * later: for a while, write the words again and again, so that such a
   * replay drains (the stray 1s left behind matter to no one: the
   * communicator is going away). */
  size_t lb = s->stage ? coreLineBytes(comm->clique) : 0;
  uint32_t *lines = lb ? malloc(lb) : NULL;
  /* Lines too: a stagell kernel clears what it reads, and the next one
   * queued behind it (eager, several may be) finds 0 again. */
  double until = coreNowSec() + (s->lastCapSeq || (lines && s->lastSeq) ? ABORT_GRAPH_SEC : 0);
  for (size_t i = 0; lines && i < lb / sizeof(uint32_t); i++) lines[i] = PLAN_LINE_FLAG;
  int prev = cudaEnterDevice(s->device), done = 1;
  /* Memsets, not copies from host memory: a copy from pageable memory may
   * wait for the stream first, and a blocked hardware queue holds it. */
  CUstream as = (CUstream)s->aside;
  do {
    done = drv.memsetD32Async((CUdeviceptr)s->flags, far, FLAG_P * (size_t)n, as) == CUDA_SUCCESS &&
           drv.memsetD32Async((CUdeviceptr)(s->flags + FLAG_P * (size_t)n), 1,
                              FLAG_Q(n) - FLAG_P * (size_t)n, as) == CUDA_SUCCESS;
    for (int g = 0; g < 2 && lines; g++)
      for (int k = 0; k < (g ? CORE_GRAPH_STAGE_SLOTS : CORE_STAGE_SLOTS) && done; k++)
        done = drv.memsetD32Async(
                   (CUdeviceptr)(s->stage + execLineSlotOffset(comm->clique, g, (size_t)k)),
                   PLAN_LINE_FLAG, lb / sizeof(uint32_t), as) == CUDA_SUCCESS;
    done = done && asideDone(s, 0.2);
    if (done && coreNowSec() < until) sleepMs();
  } while (done && coreNowSec() < until);
  if (!done && comm->clique->mp) {
    double left = until - coreNowSec();
    ownWrite o[1 + CORE_STAGE_SLOTS + CORE_GRAPH_STAGE_SLOTS];
    int no = 0;
    memset(o, 0, sizeof(o));
    o[no++] =
        (ownWrite){.vmm = &s->flagVmm, .base = (const char *)s->flags, .src = w, .bytes = bytes};
    for (int g = 0; g < 2 && lines; g++)
      for (int k = 0; k < (g ? CORE_GRAPH_STAGE_SLOTS : CORE_STAGE_SLOTS); k++)
        o[no++] = (ownWrite){.vmm = &s->stageVmm,
                             .base = s->stage,
                             .off = execLineSlotOffset(comm->clique, g, (size_t)k),
                             .src = lines,
                             .bytes = lb};
    done = releaseInOwnContext(s, comm->rank, o, no, left > 0 ? left : 0);
    CORE_INFO("rank %d: abort: the aside stream is held back (a shared hardware queue); "
              "released the waits through a context of its own: %s",
              comm->rank, done ? "done" : "failed");
  }
  cudaGetLastError();
  CORE_INFO("rank %d: abort released the waits of operations up to %llu", comm->rank,
            (unsigned long long)comm->posted);
  cudaLeaveDevice(prev, s->device);
  free(lines);
  free(w);
}

/* The progress thread's queries run while the caller's threads may be
 * capturing a CUDA graph in cudaStreamCaptureModeGlobal (torch.cuda.graph's
 * default), which prohibits "unsafe" calls on every other thread of the
 * process that is in global mode and invalidates the capture if one is made.
 * Library threads switch themselves to relaxed mode: their queries touch
 * no captured work. */
static void relaxCaptureMode(void) {
  static _Thread_local int relaxed;
  if (relaxed) return;
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  relaxed = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
}

static int cudaComplete(dmacclComm_t comm, uint64_t seq) {
  cudaState *s = stateOf(comm);
  int slot = (int)(seq % CORE_BOARD_DEPTH);
  if (s->captured[slot]) return 1; /* runs when the graph does */
  relaxCaptureMode();
  int prev = cudaEnterDevice(s->device);
  cudaError_t e = cudaEventQuery(s->tail[slot]);
  if (e != cudaSuccess && e != cudaErrorNotReady) cudaGetLastError();
  cudaLeaveDevice(prev, s->device);
  return e == cudaSuccess;
}

static int cudaStuck(dmacclComm_t comm, uint64_t seq, char *why, size_t whylen) {
  cudaState *s = stateOf(comm);
  int n = comm->nranks, found = 0;
  const uint32_t *w = s->asideHost;
  static const char *const phaseName[PLAN_PHASE_PIECE] = {"entry", "exit", "data"};
  relaxCaptureMode();
  int prev = cudaEnterDevice(s->device);
  /* Bounded: a WAIT at the head of a shared hardware queue may hold the
   * read back; the watchdog must not hang on it (pinned memory, so the copy
   * may land later without harm). */
  if (cudaStreamQuery(s->aside) != cudaSuccess) {
    snprintf(why, whylen, "the flags cannot be read now (a hardware queue is held by a wait)");
    found = 1;
  } else if (cudaMemcpyAsync(s->asideHost, s->flags, FLAG_P * (size_t)n * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, s->aside) == cudaSuccess &&
             asideDone(s, 0.2)) {
    for (int ph = 0; ph < PLAN_NUM_PHASES && !found; ph++)
      for (int p = 0; p < n && !found; p++)
        if (p != comm->rank && (int32_t)(w[FLAG_EAGER(n, ph, p)] - (uint32_t)seq) < 0) {
          char name[16];
          if (ph < PLAN_PHASE_PIECE)
            snprintf(name, sizeof(name), "%s", phaseName[ph]);
          else if (ph < PLAN_PHASE_PUSH)
            snprintf(name, sizeof(name), "piece %d", ph - PLAN_PHASE_PIECE);
          else
            snprintf(name, sizeof(name), "push %d", ph - PLAN_PHASE_PUSH);
          snprintf(why, whylen, "waiting for rank %d's %s signal (flag holds %u, needs %u)", p,
                   name, w[FLAG_EAGER(n, ph, p)], (uint32_t)seq);
          found = 1;
        }
  } else {
    cudaGetLastError();
    snprintf(why, whylen, "the flags cannot be read now (a hardware queue is held by a wait)");
    found = 1;
  }
  cudaLeaveDevice(prev, s->device);
  return found;
}

static dmacclResult_t cudaMemAllocOp(dmacclComm_t comm, size_t size, coreMem *m) {
  return cudaMemAllocImpl(comm, size, m);
}

const execOps execCudaOps = {
    .name = "cuda",
    .launchBeforeReturn = 1,
    .init = cudaInit,
    .fini = cudaFini,
    .checkBuffer = cudaCheckBuffer,
    .checkStream = cudaCheckStream,
    .checkLaunch = cudaCheckLaunch,
    .post = cudaPost,
    .attach = cudaAttach,
    .launch = cudaLaunch,
    .flush = cudaFlush,
    .sync = cudaSync,
    .oneRank = cudaOneRank,
    .waitWord = cudaWaitWord,
    .identify = cudaIdentify,
    .initRank = cudaInitRank,
    .memAlloc = cudaMemAllocOp,
    .memFree = cudaMemFreeImpl,
    .exportBuf = cudaExportBuf,
    .importBuf = cudaImportBuf,
    .registerBuf = cudaRegisterBuf,
    .deregisterBuf = cudaDeregisterBuf,
    .bindThread = cudaBindThread,
    .abort = cudaAbort,
    .complete = cudaComplete,
    .stuck = cudaStuck,
};
