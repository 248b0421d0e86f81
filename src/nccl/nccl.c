/*
 * libnccl.so.2 from dmaccl: NCCL 2.28's C API over dmaccl's, so that a
 * program or binding that loads NCCL by name (vLLM's and SGLang's ctypes
 * wrappers through VLLM_NCCL_SO_PATH and SGLANG_NCCL_SO_PATH, a C++ runtime
 * through LD_LIBRARY_PATH)
 * runs its collectives on dmaccl without a change (docs/nccl.md).
 *
 * A layer above the public API: it includes dmaccl.h and nothing of src/,
 * and each call is one dmaccl call (ncclMemAlloc and ncclMemFree: the CUDA
 * runtime's; the calls dmaccl does not serve: none). The numbers line up (dmaccl.h gives
 * types, operations and result codes 0-7 NCCL's values, and the unique id
 * NCCL's 128 bytes), so arguments pass through unchanged and dmaccl's own
 * checks name a wrong one; ncclComm_t is the dmacclComm_t. What dmaccl does
 * not do (shrinking, revoking, simulated groups) answers
 * ncclInvalidUsage with a sentence in ncclGetLastError, and changes nothing.
 *
 * Built twice: as the library, against src/nccl/nccl_abi.h; and, where NCCL
 * is installed, against NCCL's own nccl.h (DMACCL_NCCL_REAL_HEADER), so
 * that every prototype and number below is checked against NCCL's.
 */
#ifdef DMACCL_NCCL_REAL_HEADER
#include <nccl.h>
/* nccl_device/core.h's two host calls, its struct pointers as void * (that
 * header needs CUDA's compiler; nccl_abi.h declares the same) */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devComm);
#else
#include "nccl_abi.h"
#endif
#include "dmaccl.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

/* The NCCL API level served: 2.28's calls and structs (the patch level 0:
 * no NCCL release's behaviour is claimed). */
#define API_VERSION NCCL_VERSION(2, 28, 0)

_Static_assert(sizeof(ncclUniqueId) == sizeof(dmacclUniqueId), "unique id size");
_Static_assert(ncclSuccess == (int)dmacclSuccess &&
                   ncclUnhandledCudaError == (int)dmacclUnhandledCudaError &&
                   ncclSystemError == (int)dmacclSystemError &&
                   ncclInternalError == (int)dmacclInternalError &&
                   ncclInvalidArgument == (int)dmacclInvalidArgument &&
                   ncclInvalidUsage == (int)dmacclInvalidUsage &&
                   ncclRemoteError == (int)dmacclRemoteError &&
                   ncclInProgress == (int)dmacclInProgress,
               "result codes 0-7");
_Static_assert(ncclInt8 == (int)dmacclInt8 && ncclUint8 == (int)dmacclUint8 &&
                   ncclInt32 == (int)dmacclInt32 && ncclUint32 == (int)dmacclUint32 &&
                   ncclInt64 == (int)dmacclInt64 && ncclUint64 == (int)dmacclUint64 &&
                   ncclFloat16 == (int)dmacclFloat16 && ncclFloat32 == (int)dmacclFloat32 &&
                   ncclFloat64 == (int)dmacclFloat64 && ncclBfloat16 == (int)dmacclBfloat16 &&
                   ncclFloat8e4m3 == (int)dmacclFloat8e4m3 &&
                   ncclFloat8e5m2 == (int)dmacclFloat8e5m2,
               "data types");
_Static_assert(ncclSum == (int)dmacclSum && ncclProd == (int)dmacclProd &&
                   ncclMax == (int)dmacclMax && ncclMin == (int)dmacclMin &&
                   ncclAvg == (int)dmacclAvg && ncclNumOps == (int)dmacclNumOps,
               "operations");
_Static_assert(NCCL_SPLIT_NOCOLOR == DMACCL_SPLIT_NOCOLOR, "split's no-color");
_Static_assert(ncclScalarDevice == (int)dmacclScalarDevice &&
                   ncclScalarHostImmediate == (int)dmacclScalarHostImmediate,
               "scalar residences");
_Static_assert(sizeof(ncclRedOp_t) == sizeof(int) && sizeof(ncclDataType_t) == sizeof(int),
               "enum sizes");
/* the fields read, where NCCL 2.28's struct has them (a later NCCL's struct
 * may be longer, never shorter) */
_Static_assert(offsetof(ncclConfig_t, magic) == 8 && offsetof(ncclConfig_t, blocking) == 16 &&
                   offsetof(ncclConfig_t, CTAPolicy) == 60 && sizeof(ncclConfig_t) >= 80,
               "config layout");

/* The last failure this layer found itself (not dmaccl), per thread; a later
 * dmaccl call from this layer on the thread clears it. */
static _Thread_local char ownError[320];
static _Thread_local int ownErrorSet;

/* The depth of this thread's groups opened through these names: whether
 * ncclGroupSimulateEnd ends the outermost one (dmaccl's own count also
 * holds groups opened through dmaccl's names on the thread, which a
 * program using NCCL's names does not open). */
static _Thread_local int groupDepth;
/* A call this file refused itself inside such a group (dmaccl records its
 * own refusals): the outermost ncclGroupEnd then drops the group and
 * returns it, as dmaccl and NCCL do. */
static _Thread_local ncclResult_t groupFailed;
static _Thread_local char groupWhy[320];

static ncclResult_t fail(ncclResult_t rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ownError, sizeof(ownError), fmt, ap);
  va_end(ap);
  ownErrorSet = 1;
  return rc;
}

/* dmaccl's result as NCCL's: 0-7 are the same; a peer that did not come in
 * time is NCCL's remote error, something this system cannot do its invalid
 * usage. */
static ncclResult_t of(dmacclResult_t r) {
  ownErrorSet = 0;
  switch (r) {
  case dmacclSuccess:
  case dmacclUnhandledCudaError:
  case dmacclSystemError:
  case dmacclInternalError:
  case dmacclInvalidArgument:
  case dmacclInvalidUsage:
  case dmacclRemoteError:
  case dmacclInProgress: return (ncclResult_t)r;
  case dmacclTimeout: return ncclRemoteError;
  case dmacclUnsupported: return ncclInvalidUsage;
  default: return ncclInternalError;
  }
}

static dmacclComm_t C(ncclComm_t comm) {
  return (dmacclComm_t)(void *)comm;
}

static ncclResult_t unsupported(const char *call, const char *why) {
  return fail(ncclInvalidUsage, "%s: not supported by dmaccl's NCCL API (%s); nothing was done",
              call, why);
}

/* An NCCL config as dmaccl's: NULL for none; the fields dmaccl has a use for
 * (CTAPolicy, when the caller's struct is new enough to hold it) copied;
 * blocking, CTA counts, names and the rest accepted and left (a dmaccl
 * communicator is ready when its init returns, which a non-blocking caller's
 * poll of ncclCommGetAsyncError sees at once). */
static ncclResult_t configOf(const char *call, const ncclConfig_t *in, dmacclConfig_t *out) {
  dmacclConfig_t d = DMACCL_CONFIG_INITIALIZER;
  *out = d;
  if (!in) return ncclSuccess;
  if (in->magic != 0xcafebeefu)
    return fail(ncclInvalidArgument,
                "%s: config's magic is 0x%x, not NCCL's 0xcafebeef (initialize it with "
                "NCCL_CONFIG_INITIALIZER)",
                call, in->magic);
  if (in->size < offsetof(ncclConfig_t, blocking) + sizeof(int) || in->size > ((size_t)1 << 20))
    return fail(ncclInvalidArgument, "%s: config's size %zu is not that of an NCCL config", call,
                in->size);
  if (in->size >= offsetof(ncclConfig_t, CTAPolicy) + sizeof(int) &&
      in->CTAPolicy != NCCL_CONFIG_UNDEF_INT)
    out->ctaPolicy = in->CTAPolicy; /* NCCL's numbers; dmaccl checks the value */
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGetVersion(int *version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = API_VERSION;
  ownErrorSet = 0;
  return ncclSuccess;
}

EXPORT const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
  case ncclSystemError:
  case ncclInternalError:
  case ncclInvalidUsage:
  case ncclRemoteError:
  case ncclInProgress: return dmacclGetErrorString((dmacclResult_t)result);
  /* dmaccl's strings point at dmacclCommGetLastError; this API's caller has
   * ncclGetLastError (the same sentence) */
  case ncclInvalidArgument: return "invalid argument (ncclGetLastError names it)";
  case ncclUnhandledCudaError: return "unhandled CUDA error (see ncclGetLastError for the call)";
  default: return "unknown result code";
  }
}

/* As NCCL: the calling thread's last failure, whatever comm is (NCCL leaves
 * it unused; dmaccl's sentence for a failure on a communicator is the
 * thread's too, and asking a destroyed one would record a new failure). */
EXPORT const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  if (ownErrorSet) return ownError;
  return dmacclCommGetLastError(NULL);
}

#ifdef ncclResetDebugInit /* NCCL 2.30's header makes it an empty macro; 2.28 still exports it */
#undef ncclResetDebugInit
#endif
EXPORT void ncclResetDebugInit(void) {}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  return of(dmacclGetUniqueId((dmacclUniqueId *)(void *)uniqueId));
}

/* rc, the refusal just made (its sentence in ownError), failing the open group. */
static ncclResult_t refuseInGroup(ncclResult_t rc) {
  if (groupDepth > 0 && groupFailed == ncclSuccess) {
    groupFailed = rc;
    snprintf(groupWhy, sizeof(groupWhy), "%s", ownError);
  }
  return rc;
}

static ncclResult_t initRank(const char *call, ncclComm_t *comm, int nranks, const ncclUniqueId *id,
                             int rank, const ncclConfig_t *config) {
  dmacclConfig_t cfg;
  ncclResult_t rc = configOf(call, config, &cfg);
  if (rc != ncclSuccess) return refuseInGroup(rc);
  dmacclUniqueId did;
  for (size_t i = 0; i < sizeof(did.internal); i++) did.internal[i] = id->internal[i];
  return of(dmacclCommInitRank((dmacclComm_t *)(void *)comm, nranks, did, rank, &cfg));
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank("ncclCommInitRank", comm, nranks, &commId, rank, NULL);
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                           int rank, ncclConfig_t *config) {
  return initRank("ncclCommInitRankConfig", comm, nranks, &commId, rank, config);
}

/* Every rank passes the same ids; one rendezvous is enough on one host. */
EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                             ncclUniqueId *commIds, ncclConfig_t *config) {
  const char *call = "ncclCommInitRankScalable";
  if (nId < 1)
    return refuseInGroup(fail(ncclInvalidArgument, "%s: nId %d is not at least 1", call, nId));
  if (!commIds) return refuseInGroup(fail(ncclInvalidArgument, "%s: commIds is NULL", call));
  return initRank(call, newcomm, nranks, &commIds[0], myrank, config);
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  return of(dmacclCommInitAll((dmacclComm_t *)(void *)comm, ndev, devlist, NULL));
}

/* Blocking: returns once every operation issued on comm has completed. */
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return of(dmacclCommSynchronize(C(comm)));
}

/* NULL (a rank split into no communicator) is nothing to free, as NCCL. */
EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return comm ? of(dmacclCommDestroy(C(comm))) : of(dmacclSuccess);
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return comm ? of(dmacclCommAbort(C(comm))) : of(dmacclSuccess);
}

EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  (void)comm, (void)revokeFlags;
  return unsupported("ncclCommRevoke", "use ncclCommAbort");
}

/* config NULL: comm's configuration (dmaccl's rule and NCCL's); else the
 * config's CTA policy, on comm's executor. */
EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config) {
  dmacclConfig_t cfg;
  ncclResult_t bad = configOf("ncclCommSplit", config, &cfg);
  if (bad != ncclSuccess) { /* still take part, so that the peers fail too */
    char why[sizeof(ownError)];
    snprintf(why, sizeof(why), "%s", ownError);
    cfg.magic = 0; /* refused by dmaccl: this rank's verdict goes to the peers */
    dmacclCommSplit(C(comm), color, key, (dmacclComm_t *)(void *)newcomm, &cfg);
    return fail(bad, "%s", why);
  }
  return of(
      dmacclCommSplit(C(comm), color, key, (dmacclComm_t *)(void *)newcomm, config ? &cfg : NULL));
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                   ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  (void)comm, (void)excludeRanksList, (void)excludeRanksCount, (void)newcomm, (void)config;
  (void)shrinkFlags;
  return unsupported("ncclCommShrink",
                     "make the new communicator with ncclGetUniqueId and ncclCommInitRank");
}

/* NCCL's device API (nccl_device/core.h: kernels that communicate through a
 * device communicator) is not offered. Exported so that a program that also
 * links it, as torch's libtorch_cuda does, gets an answer from this library
 * for its communicators instead of NCCL's own function; the argument types
 * are that header's, passed through untouched. */
EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm) {
  (void)comm, (void)reqs, (void)outDevComm;
  return unsupported("ncclDevCommCreate",
                     "dmaccl has no device API; use the host calls (collectives, Send/Recv)");
}

EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devComm) {
  (void)comm, (void)devComm;
  return unsupported("ncclDevCommDestroy", "dmaccl has no device API (ncclDevCommCreate)");
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  if (!asyncError) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  dmacclResult_t a = dmacclSuccess;
  ncclResult_t rc = of(dmacclCommGetAsyncError(C(comm), &a));
  if (rc == ncclSuccess) {
    *asyncError = of(a);
    /* the sentence for the caller's next ncclGetLastError: the error may have
     * been found on another thread (a peer rank's, the progress thread), and
     * NCCL's last error is the process's, not the thread's */
    if (a != dmacclSuccess) fail(*asyncError, "%s", dmacclCommGetLastError(C(comm)));
  }
  return rc;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  return of(dmacclCommCount(C(comm), count));
}

EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  return of(dmacclCommCuDevice(C(comm), device));
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  return of(dmacclCommUserRank(C(comm), rank));
}

EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size,
                                     void **handle) {
  return of(dmacclCommRegister(C(comm), buff, size, handle));
}

EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
  return of(dmacclCommDeregister(C(comm), handle));
}

/* A window is a registration: dmaccl's collectives reach any registered or
 * cached buffer with copy commands, symmetric or not. Not collective here
 * (NCCL's is): nothing waits for the peers. */
EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                           ncclWindow_t *win, int winFlags) {
  const char *call = "ncclCommWindowRegister";
  if (!win) return fail(ncclInvalidArgument, "%s: win is NULL", call);
  if (winFlags & ~(NCCL_WIN_DEFAULT | NCCL_WIN_COLL_SYMMETRIC))
    return fail(ncclInvalidArgument, "%s: winFlags 0x%x has bits NCCL does not define", call,
                (unsigned)winFlags);
  void *handle = NULL;
  ncclResult_t rc = of(dmacclCommRegister(C(comm), buff, size, &handle));
  if (rc == ncclSuccess) *win = (ncclWindow_t)handle;
  return rc;
}

EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return of(dmacclCommDeregister(C(comm), (void *)win));
}

/* NCCL's allocation for registration: plain device memory of the current
 * device here (dmaccl reaches it through its IPC cache). */
EXPORT ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  if (!ptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, size);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(e == cudaErrorMemoryAllocation ? ncclSystemError : ncclUnhandledCudaError,
                "ncclMemAlloc: cudaMalloc of %zu bytes failed: %s", size, cudaGetErrorString(e));
  }
  *ptr = p;
  ownErrorSet = 0;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclMemFree(void *ptr) {
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(ncclUnhandledCudaError, "ncclMemFree: cudaFree(%p) failed: %s", ptr,
                cudaGetErrorString(e));
  }
  ownErrorSet = 0;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                             ncclScalarResidence_t residence, ncclComm_t comm) {
  dmacclRedOp_t made;
  ncclResult_t r =
      of(dmacclRedOpCreatePreMulSum(op ? &made : NULL, scalar, (dmacclDataType_t)datatype,
                                    (dmacclScalarResidence_t)residence, C(comm)));
  if (r == ncclSuccess && op) *op = (ncclRedOp_t)made;
  return r;
}

EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return of(dmacclRedOpDestroy((dmacclRedOp_t)op, C(comm)));
}

EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                               cudaStream_t stream) {
  return of(dmacclReduce(sendbuff, recvbuff, count, (dmacclDataType_t)datatype, (dmacclRedOp_t)op,
                         root, C(comm), stream));
}

/* In place: the root's buff is sent, every rank's buff receives. */
EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream) {
  return of(dmacclBroadcast(buff, buff, count, (dmacclDataType_t)datatype, root, C(comm), stream));
}

EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream) {
  return of(dmacclBroadcast(sendbuff, recvbuff, count, (dmacclDataType_t)datatype, root, C(comm),
                            stream));
}

EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream) {
  return of(dmacclAllReduce(sendbuff, recvbuff, count, (dmacclDataType_t)datatype,
                            (dmacclRedOp_t)op, C(comm), stream));
}

EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) {
  return of(dmacclReduceScatter(sendbuff, recvbuff, recvcount, (dmacclDataType_t)datatype,
                                (dmacclRedOp_t)op, C(comm), stream));
}

EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return of(
      dmacclAllGather(sendbuff, recvbuff, sendcount, (dmacclDataType_t)datatype, C(comm), stream));
}

EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return of(dmacclAlltoAll(sendbuff, recvbuff, count, (dmacclDataType_t)datatype, C(comm), stream));
}

EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream) {
  return of(
      dmacclGather(sendbuff, recvbuff, count, (dmacclDataType_t)datatype, root, C(comm), stream));
}

EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream) {
  return of(
      dmacclScatter(sendbuff, recvbuff, count, (dmacclDataType_t)datatype, root, C(comm), stream));
}

EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclComm_t comm, cudaStream_t stream) {
  return of(dmacclSend(sendbuff, count, (dmacclDataType_t)datatype, peer, C(comm), stream));
}

EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclComm_t comm, cudaStream_t stream) {
  return of(dmacclRecv(recvbuff, count, (dmacclDataType_t)datatype, peer, C(comm), stream));
}

EXPORT ncclResult_t ncclGroupStart(void) {
  ncclResult_t rc = of(dmacclGroupStart());
  if (rc == ncclSuccess && groupDepth++ == 0) groupFailed = ncclSuccess;
  return rc;
}

EXPORT ncclResult_t ncclGroupEnd(void) {
  if (groupDepth > 0 && --groupDepth == 0 && groupFailed != ncclSuccess) {
    ncclResult_t rc = groupFailed;
    groupFailed = ncclSuccess;
    dmacclGroupDrop();
    return fail(rc,
                "ncclGroupEnd: a call inside the group failed, so none of its calls was issued or "
                "made (the first failure: %s)",
                groupWhy);
  }
  return of(dmacclGroupEnd());
}

/* As NCCL: with no simInfo an ordinary group end; else the group ends
 * without launching. With no time to estimate it says so (the group's calls
 * are dropped, nothing was issued). */
EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  if (!simInfo) return ncclGroupEnd();
  if (simInfo->magic != 0x74685283u)
    return fail(ncclInvalidArgument,
                "ncclGroupSimulateEnd: simInfo's magic is 0x%x, not NCCL's 0x74685283 "
                "(initialize it with NCCL_SIM_INFO_INITIALIZER); the group is still open",
                simInfo->magic);
  int inner = groupDepth > 1;
  dmacclResult_t r = dmacclGroupDrop();
  if (r != dmacclSuccess)
    return fail(of(r), "ncclGroupSimulateEnd: no group is open (call ncclGroupStart first)");
  if (groupDepth > 0 && --groupDepth == 0) groupFailed = ncclSuccess;
  if (inner) return ncclSuccess; /* as NCCL: an inner end only closes its level */
  return fail(ncclInvalidUsage,
              "ncclGroupSimulateEnd: not supported by dmaccl's NCCL API (no time model): the "
              "group was ended and its calls dropped, nothing issued");
}
