/*
 * dmaccl: DMA Collective Communication Library.
 *
 * Collectives run on the GPUs' copy engines. Collectives that only move data
 * (AllGather, AlltoAll, Broadcast, Gather, Scatter and the V forms) launch no
 * kernel and leave every SM to the application; reducing ones (AllReduce,
 * ReduceScatter, Reduce, ReduceScatterV) move data with copy engines and
 * compute with one small reduction kernel of few CTAs (DMACCL_REDUCE_CTAS).
 * The API follows NCCL 2.28's: same argument order, buffer layouts, in-place
 * rules, stream semantics and group rules; counts are in elements. This
 * header is C99 and needs only <stddef.h> and CUDA's
 * runtime type for streams.
 */
#ifndef DMACCL_H_
#define DMACCL_H_

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DMACCL_MAJOR 0
#define DMACCL_MINOR 2
#define DMACCL_PATCH 0
#define DMACCL_VERSION_CODE (DMACCL_MAJOR * 10000 + DMACCL_MINOR * 100 + DMACCL_PATCH)

/*
 * Result codes. One list generates the enum, the names and the messages
 * (dmacclGetErrorString), so they cannot drift apart. Codes 0-7 have NCCL's
 * numbers and meanings.
 */
#define DMACCL_RESULT_LIST(X)                                                                      \
  X(dmacclSuccess, 0, "no error")                                                                  \
  X(dmacclUnhandledCudaError, 1, "unhandled CUDA error (see dmacclCommGetLastError for the call)") \
  X(dmacclSystemError, 2, "system error (out of memory, thread or OS call failed)")                \
  X(dmacclInternalError, 3, "internal error: a dmaccl bug, please report it")                      \
  X(dmacclInvalidArgument, 4, "invalid argument (dmacclCommGetLastError names it)")                \
  X(dmacclInvalidUsage, 5, "invalid usage: the call is not allowed in this state")                 \
  X(dmacclRemoteError, 6, "a peer rank failed or disagreed about the operation")                   \
  X(dmacclInProgress, 7, "operation still in progress")                                            \
  X(dmacclTimeout, 8, "timed out waiting for peers")                                               \
  X(dmacclUnsupported, 9, "not supported on this system or build")

typedef enum {
#define DMACCL_RESULT_ENUM_(name, value, msg) name = value,
  DMACCL_RESULT_LIST(DMACCL_RESULT_ENUM_)
#undef DMACCL_RESULT_ENUM_
      dmacclNumResults
} dmacclResult_t;

/*
 * Element types, with NCCL's numbers (0.2 changed Float32, Float64 and
 * Bfloat16 from 0.1's 8, 9 and 7 so that bindings written for NCCL, such as
 * vLLM's ctypes wrapper, pass the right type). NCCL's alias names are kept.
 * Sizes: 1 byte for int8/uint8/fp8, 2 for fp16/bf16, 4, 8.
 */
typedef enum {
  dmacclInt8 = 0,
  dmacclChar = 0,
  dmacclUint8 = 1,
  dmacclInt32 = 2,
  dmacclInt = 2,
  dmacclUint32 = 3,
  dmacclInt64 = 4,
  dmacclUint64 = 5,
  dmacclFloat16 = 6,
  dmacclHalf = 6,
  dmacclFloat32 = 7,
  dmacclFloat = 7,
  dmacclFloat64 = 8,
  dmacclDouble = 8,
  dmacclBfloat16 = 9,
  dmacclFloat8e4m3 = 10,
  dmacclFloat8e5m2 = 11,
  dmacclNumTypes = 12
} dmacclDataType_t;

/*
 * Reduction operations, with NCCL's numbers. Every type supports Sum, Prod,
 * Max and Min; Avg (the sum divided by the number of ranks) only the
 * floating-point types. How a result is computed, the same on every executor
 * so that results are reproducible bit for bit: the ranks' values are
 * combined in rank order (((x0 op x1) op x2) ...); integers in their own
 * width with wrap-around; float and double in their own precision; fp16,
 * bf16 and fp8 in float, rounded once at the end to nearest even (fp8
 * saturates to its largest finite value); Avg divides the float or double
 * sum by nranks before that rounding. A NaN result of fp16, bf16 or fp8 is
 * the type's positive quiet NaN; float and double NaNs may differ in sign
 * and payload between executors (CPUs and GPUs make different NaNs).
 */
typedef enum {
  dmacclSum = 0,
  dmacclProd = 1,
  dmacclMax = 2,
  dmacclMin = 3,
  dmacclAvg = 4,
  dmacclNumOps = 5,
  /* Operators made by dmacclRedOpCreatePreMulSum take other values: the
   * type holds any int. */
  dmacclMaxRedOp = 0x7fffffff
} dmacclRedOp_t;

/* Where dmacclRedOpCreatePreMulSum's scalar lives (NCCL's numbers). */
typedef enum {
  dmacclScalarDevice = 0,       /* GPU memory, read each time an operation runs */
  dmacclScalarHostImmediate = 1 /* host memory, read once by the create call */
} dmacclScalarResidence_t;

/* Where a communicator's collectives run. */
typedef enum {
  dmacclExecutorDefault = 0, /* CUDA, or DMACCL_EXECUTOR=host|cuda */
  dmacclExecutorCuda = 1,    /* copy engines of the GPUs, buffers in device memory */
  dmacclExecutorHost = 2     /* ranks as host threads, buffers in host memory (tests, no GPU) */
} dmacclExecutor_t;

typedef struct dmacclComm *dmacclComm_t;

/* The rendezvous of a one-process-per-GPU communicator: a plain byte blob
 * that one process makes with dmacclGetUniqueId and hands to every rank (by
 * MPI, a file, a TCP store...), as with NCCL. It names a host-local socket:
 * every rank must run on the same host. */
#define DMACCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[DMACCL_UNIQUE_ID_BYTES];
} dmacclUniqueId;

/*
 * Communicator configuration. Always initialize with DMACCL_CONFIG_INITIALIZER
 * so that fields added later get their defaults; the size/magic/version
 * fields let the library tell which fields a caller knows about.
 *
 * algorithm: NULL for the built-in selection table, or a selection string in
 * the grammar of DMACCL_ALGO (docs/algorithms.md), e.g.
 *   "allgather:push1;alltoall:0-64K:batch,64K-inf:pushn".
 * It overrides DMACCL_ALGO for this communicator.
 *
 * ctaPolicy: how many of the GPU's SMs (CTAs, thread blocks) the library may
 * take, with NCCL 2.28's values (NCCL_CTA_POLICY_*). DMACCL_CONFIG_UNDEF_INT
 * (the initializer's) leaves it to DMACCL_CTA_POLICY, else Default.
 *   dmacclCtaPolicyDefault: the fastest algorithm alone. Below a few MB that
 *     is a kernel that moves the data with SM stores (stagell, stagesm,
 *     twoshot; up to 32 blocks, for microseconds), as NCCL's kernels do.
 *   dmacclCtaPolicyEfficiency: accepted, and the same as Default: the
 *     default's kernels already take few blocks briefly, and capping the
 *     line kernel at 8 blocks measured slower alone (1.7-2.7x from 256 KB)
 *     and slowed a decode GEMM beside it more (docs/algorithms.md).
 *   dmacclCtaPolicyZero: no kernel of the library moves data: the built-in
 *     and tuned selection takes copy-engine algorithms at every size
 *     (stagell and stagesm run as stage, twoshot as pull1; small messages
 *     then take 10-22 us). Reductions still launch the reduction kernel
 *     (DMACCL_REDUCE_CTAS blocks) for the arithmetic (pull1's waits for its
 *     pieces with those blocks), and the driver runs a
 *     copy within one GPU (a rank's own block out of place, a staging
 *     slot's copy out) as its own kernel (docs/overlap.md). An algorithm
 *     named in DMACCL_ALGO or config->algorithm runs as named.
 */
typedef enum {
  dmacclCtaPolicyDefault = 0,
  dmacclCtaPolicyEfficiency = 1,
  dmacclCtaPolicyZero = 2
} dmacclCtaPolicy_t;

#define DMACCL_CONFIG_UNDEF_INT (-2147483647 - 1) /* INT_MIN: a field left to its default */

typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  dmacclExecutor_t executor;
  const char *algorithm;
  int ctaPolicy; /* a dmacclCtaPolicy_t, or DMACCL_CONFIG_UNDEF_INT */
} dmacclConfig_t;

#define DMACCL_CONFIG_MAGIC 0xd3acc10fu
#define DMACCL_CONFIG_INITIALIZER                                                                  \
  {                                                                                                \
    sizeof(dmacclConfig_t), DMACCL_CONFIG_MAGIC, DMACCL_VERSION_CODE, dmacclExecutorDefault, NULL, \
        DMACCL_CONFIG_UNDEF_INT                                                                    \
  }

/* Version as DMACCL_VERSION_CODE. Never fails except for a NULL pointer. */
dmacclResult_t dmacclGetVersion(int *version);

/* A static sentence for a result code; never NULL. */
const char *dmacclGetErrorString(dmacclResult_t result);

/*
 * A sentence about the last failure seen on comm: which call, which argument,
 * which value. With comm == NULL, the last failure of a call made by this
 * thread (used when the failing call had no valid communicator). Empty string
 * when nothing failed. The string is the calling thread's copy: it stays
 * valid until this thread's next dmacclCommGetLastError or failing call,
 * whatever other threads of the library write meanwhile.
 */
const char *dmacclCommGetLastError(dmacclComm_t comm);

/*
 * An error found after a call returned (for example ranks that disagree about
 * the operation). Returns dmacclSuccess and stores dmacclSuccess in *asyncError
 * when there is none.
 */
dmacclResult_t dmacclCommGetAsyncError(dmacclComm_t comm, dmacclResult_t *asyncError);

/*
 * Creates ndev communicators, one per device, for one process driving all of
 * them (collective over the ndev devices, not over processes). comms[i] is rank
 * i on device devlist[i] (devlist NULL means devices 0..ndev-1). config may be
 * NULL for defaults; it applies to every communicator.
 *
 * CUDA executor: enables peer access between every pair of different devices
 * and fails with dmacclUnsupported, naming the pair, if two devices cannot
 * reach each other. A device may appear several times: its ranks share it,
 * and copies between them are device-local copies (still copy engines, no
 * kernel). A device that does not exist or that this process cannot use
 * (prohibited or exclusive-process compute mode) fails with
 * dmacclInvalidArgument naming the devlist entry. Must not be called inside
 * a group. Host executor: devlist is ignored; ranks are host threads.
 * On failure nothing is created and comms is left untouched.
 *
 * On the CUDA executor a collective call returns once its operation is
 * queued, which needs every rank's call: a thread that calls for one rank
 * (outside a group) waits for the threads of the other ranks; one thread
 * driving every rank puts the calls in a group, whose end queues them all.
 * Ranks that share a GPU and are captured into CUDA graphs must be captured
 * into one graph (fork one rank's stream from the other's capture with an
 * event), and a call captured on one rank must be captured on every rank;
 * otherwise the call fails with dmacclInvalidUsage and issues nothing.
 * Ranks on different GPUs may be captured into a graph each, but then no
 * copy may read the other graph's GPU (graphs launched one after the other
 * can deadlock on such copies): the table's selection (built in or tuned)
 * takes an algorithm that writes its peers instead, and a call whose
 * algorithm the config or DMACCL_ALGO names, or that no such algorithm fits
 * (an AllReduce or ReduceScatter over the DMACCL_STAGE_BYTES slot), fails
 * with dmacclInvalidUsage and issues nothing. One graph for every rank has
 * no such limit.
 */
dmacclResult_t dmacclCommInitAll(dmacclComm_t *comms, int ndev, const int *devlist,
                                 const dmacclConfig_t *config);

/* Makes a fresh unique id for dmacclCommInitRank. Not collective. */
dmacclResult_t dmacclGetUniqueId(dmacclUniqueId *uniqueId);

/*
 * Creates rank `rank` of an nranks communicator whose ranks are processes on
 * one host, one GPU each: the CUDA device current on the calling thread (as
 * NCCL), or, for the host executor, no device. Several ranks may use one GPU
 * (unlike NCCL). Collective: every rank calls it with the same id and
 * nranks, and it returns when all have joined. Rank 0 hosts the rendezvous.
 * A rank that does not arrive within DMACCL_INIT_TIMEOUT seconds (default
 * 60) of every other rank's arrival makes every rank fail (dmacclTimeout,
 * naming it where it can); different nranks, a
 * rank given twice, a rank out of range or ranks on different executors fail
 * every rank with dmacclInvalidArgument and a sentence naming them; a device
 * this process cannot use fails this rank with dmacclInvalidArgument. On
 * failure nothing is created. config as for dmacclCommInitAll.
 *
 * Inside a group (NCCL's way for one thread to make several ranks, each
 * after cudaSetDevice to its GPU): the call checks its arguments, takes the
 * current device and returns; the outermost dmacclGroupEnd makes every
 * communicator recorded so, all at once, before the group's other calls,
 * and writes *comm only if every one of them succeeded (else it frees those
 * made and returns the first failure, naming the call). So *comm is not set
 * until then (NCCL sets it at the call), and the pointer must stay valid
 * until the outermost dmacclGroupEnd or dmacclGroupDrop (which makes
 * none). On the CUDA executor such ranks are then driven by a thread each:
 * a call of one may wait inside the call for its peers' calls (above the
 * staged sizes), so a group of one thread's calls for two ranks of one set
 * is refused at its end with dmacclInvalidUsage, before anything is made or
 * issued (it would wait on itself); one thread driving several GPUs uses
 * dmacclCommInitAll.
 *
 * Buffers of such a communicator: device memory from cudaMalloc (reached by
 * peers through CUDA IPC, see dmacclCommRegister) or from dmacclMemAlloc. The
 * host executor across processes needs buffers from dmacclMemAlloc (shared
 * memory). A collective call returns once this rank's part is queued on its
 * stream (or captured): at once for the staged algorithms (small sizes, which
 * write only into the library's own staging memory), and for the others once
 * every peer has made the matching call, whose buffers it needs. So nothing
 * is ever queued ahead of the work it waits for, and no mapping of streams
 * to hardware queues (CUDA_DEVICE_MAX_CONNECTIONS=1, stream priorities, ranks
 * sharing a GPU) can deadlock (docs/architecture.md).
 */
dmacclResult_t dmacclCommInitRank(dmacclComm_t *comm, int nranks, dmacclUniqueId uniqueId, int rank,
                                  const dmacclConfig_t *config);

/*
 * Makes new communicators from comm's ranks, as ncclCommSplit: the ranks
 * that pass one color form one communicator, ordered by key (ties by their
 * rank in comm); a rank that passes DMACCL_SPLIT_NOCOLOR joins none and gets
 * *newcomm = NULL. Each new rank uses its comm rank's device and executor.
 * config NULL: comm's configuration (executor, CTA policy, algorithm
 * string; the selection table is made anew for the new size); else config
 * as for dmacclCommInitRank (its executor must be comm's). The new
 * communicator is independent of comm: either may be destroyed first.
 *
 * Collective over comm: every rank calls it, in the same order relative to
 * comm's other collective management calls (dmacclMemAlloc, other splits),
 * not inside a group and not at the same time as those on another thread.
 * A rank's wrong argument (newcomm NULL, a negative color other than
 * DMACCL_SPLIT_NOCOLOR, a bad config, a call inside a group) fails that
 * rank with its own code (dmacclInvalidArgument, dmacclInvalidUsage) and
 * every other rank with dmacclRemoteError naming it; nothing is made,
 * *newcomm is left as it was, comm stays usable (every rank still takes part
 * in the one exchange). A config's dmacclExecutorDefault means comm's
 * executor; another executor than comm's is a wrong argument. Ranks that do
 * not arrive within DMACCL_INIT_TIMEOUT make the others fail with
 * dmacclTimeout or dmacclRemoteError, and fail themselves when they come
 * (dmacclRemoteError, or dmacclTimeout where rank 0 still took their part
 * and the new communicator's ranks then waited for them); comm stays
 * usable and its next split is in step (what a late rank sent is
 * dropped). Rank 0 decides for every rank: ranks that come farther apart
 * than the timeout all fail, an early rank too (rank 0 names a rank that
 * came too late); dmacclCommAbort from another thread waits for the split to
 * return. Communicators of dmacclCommInitRank only: a rank of a
 * dmacclCommInitAll set fails with dmacclInvalidUsage (make the new set with
 * dmacclCommInitAll from its devices).
 */
#define DMACCL_SPLIT_NOCOLOR (-1)
dmacclResult_t dmacclCommSplit(dmacclComm_t comm, int color, int key, dmacclComm_t *newcomm,
                               const dmacclConfig_t *config);

/*
 * Abandons the communicator: releases every wait it has queued on its
 * streams (so no stream, the caller's included, waits forever; operations
 * not complete are left with undefined buffer contents), then frees it like
 * dmacclCommDestroy. Not collective: use it after an error, for example
 * dmacclRemoteError from dmacclCommGetAsyncError when a peer process died.
 */
dmacclResult_t dmacclCommAbort(dmacclComm_t comm);

/*
 * Memory that every rank of comm can reach with one copy command.
 *
 * Communicators of dmacclCommInitRank: collective (every rank calls with the
 * same size, in the same order). Each rank's part is device memory of its GPU
 * (cuMemCreate; shared memory for the host executor); every rank maps every
 * rank's part into one virtual range at a fixed stride, so that peers' parts
 * lie at *ptr + (peer - rank) * stride. Collectives on such buffers need no
 * registration. Communicators of dmacclCommInitAll: not collective, plain
 * device memory of the rank's GPU (host memory for the host executor).
 * dmacclMemFree is local: a peer that still uses its own part is not
 * disturbed. Free every buffer before destroying comm.
 */
dmacclResult_t dmacclMemAlloc(dmacclComm_t comm, size_t size, void **ptr);
dmacclResult_t dmacclMemFree(dmacclComm_t comm, void *ptr);

/*
 * Registers [buff, buff+size) of cudaMalloc memory for collectives on comm.
 * Not collective. Registration is optional: a collective given a buffer that
 * is neither registered nor from dmacclMemAlloc registers its allocation on
 * first use through a cache keyed by allocation (CUDA's buffer id, so memory
 * freed and reallocated at the same address is never confused with the old
 * one). Cost of a first use: this rank asks CUDA for an IPC handle (a few us),
 * and every peer opens it (cudaIpcOpenMemHandle, typically 0.1-1 ms) when it
 * first launches an operation with it; later operations find it in the cache.
 * Registering ahead moves this rank's part of that cost out of the collective.
 * Single-process communicators need no registration; there the call only
 * checks the buffer. *handle is given to dmacclCommDeregister, once per
 * registration (a buffer registered twice may return the same handle twice);
 * a handle this communicator's dmacclCommRegister did not return, or one
 * deregistered as often as it was registered, is refused with
 * dmacclInvalidArgument.
 */
dmacclResult_t dmacclCommRegister(dmacclComm_t comm, void *buff, size_t size, void **handle);
dmacclResult_t dmacclCommDeregister(dmacclComm_t comm, void *handle);

/*
 * Frees the communicator's resources after waiting for its queued operations
 * to finish. Destroying one rank while peers still run collectives with it is
 * undefined, as with NCCL.
 */
dmacclResult_t dmacclCommDestroy(dmacclComm_t comm);

dmacclResult_t dmacclCommCount(const dmacclComm_t comm, int *count);
dmacclResult_t dmacclCommUserRank(const dmacclComm_t comm, int *rank);
/* CUDA device of the communicator; -1 for the host executor. */
dmacclResult_t dmacclCommCuDevice(const dmacclComm_t comm, int *device);

/*
 * Blocks the calling thread until every collective issued on comm has
 * completed: for the CUDA executor, until its copies and handshakes are done
 * on the device; for the host executor, until this rank's part has run.
 * Waits for peers that have not yet issued the matching call.
 */
dmacclResult_t dmacclCommSynchronize(dmacclComm_t comm);

/*
 * Groups, as in NCCL. Between dmacclGroupStart and dmacclGroupEnd calls are
 * only checked and recorded; dmacclGroupEnd issues them. Groups nest; only the
 * outermost End issues. A thread that issues collectives for several ranks of
 * one dmacclCommInitAll set must put them in one group (the calls of one rank
 * outside a group from that thread are fine). A call that fails inside a group
 * (a collective, Send, Recv, dmacclStart or dmacclCommInitRank refused at the
 * call) fails the group, as in NCCL: the outermost dmacclGroupEnd then issues
 * none of the group's calls, makes none of its communicators and returns
 * the first failure, with its sentence (dmacclCommGetLastError(NULL));
 * nothing is written and every communicator stays usable. (Issuing the
 * others would pair a rank's later calls with its peers' wrong ones.) A
 * rank whose group failed so issues nothing, so its peers' matching calls
 * wait for it, as with NCCL. As with NCCL, every rank
 * makes its calls on communicators that share GPUs in the same order, inside
 * groups too (a group issues them by position on each communicator, then in
 * call order).
 */
dmacclResult_t dmacclGroupStart(void);
dmacclResult_t dmacclGroupEnd(void);
/* Ends the innermost group as dmacclGroupEnd does, but issues nothing: at the
 * outermost level every call recorded since dmacclGroupStart is dropped and
 * the communicators recorded by dmacclCommInitRank are not made (NCCL's
 * ncclGroupSimulateEnd, without its time estimate). */
dmacclResult_t dmacclGroupDrop(void);

/*
 * AllGather: every rank contributes sendcount elements; rank r's elements end
 * up in every rank's recvbuff at recvbuff + r*sendcount*size(datatype).
 * recvbuff holds nranks*sendcount elements.
 *
 * In place when sendbuff == recvbuff + rank*sendcount*size(datatype); any
 * other overlap of sendbuff and recvbuff is an error.
 *
 * Stream semantics (CUDA executor): the operation starts after the work
 * already queued on stream and later work on stream starts after it; when it
 * completes recvbuff is filled and sendbuff may be reused. Buffers must be
 * device memory of the communicator's GPU; stream must belong to that GPU (0
 * means its legacy default stream). The call returns once the operation is
 * queued (see dmacclCommInitAll and dmacclCommInitRank for when that needs
 * the peers' calls); it never waits for the copies. Host executor: buffers are
 * host memory, stream must be 0, and completion is observed with
 * dmacclCommSynchronize.
 *
 * All ranks must issue the same collectives with the same sendcount and
 * datatype, in the same order. Buffers may be NULL only when sendcount is 0.
 */
dmacclResult_t dmacclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                               dmacclDataType_t datatype, dmacclComm_t comm, cudaStream_t stream);

/*
 * AlltoAll: the count elements that rank r sends to rank j are taken from
 * sendbuff + j*count*size(datatype) and land in rank j's recvbuff at
 * recvbuff + r*count*size(datatype). Both buffers hold nranks*count elements.
 * Not in place: sendbuff and recvbuff must not overlap. Stream semantics and
 * buffer rules as dmacclAllGather.
 */
dmacclResult_t dmacclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                              dmacclDataType_t datatype, dmacclComm_t comm, cudaStream_t stream);

/*
 * The collectives below follow the stream semantics, buffer rules and
 * ordering rules of dmacclAllGather. "In place" names the one overlap of
 * sendbuff and recvbuff each allows; any other overlap is an error.
 * Arguments that only the root uses (Broadcast's sendbuff, Reduce's and
 * Gather's recvbuff, Scatter's sendbuff) are ignored on other ranks and may
 * be NULL there. Every rank passes the same count, datatype, op and root.
 */

/* AllReduce: every rank's recvbuff (count elements) receives the reduction
 * of every rank's sendbuff. In place when sendbuff == recvbuff. */
dmacclResult_t dmacclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                               dmacclDataType_t datatype, dmacclRedOp_t op, dmacclComm_t comm,
                               cudaStream_t stream);

/* ReduceScatter: sendbuff holds nranks*recvcount elements; rank r's recvbuff
 * receives the reduction of block r (sendbuff + r*recvcount*size) of every
 * rank. In place when recvbuff == sendbuff + rank*recvcount*size. */
dmacclResult_t dmacclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                   dmacclDataType_t datatype, dmacclRedOp_t op, dmacclComm_t comm,
                                   cudaStream_t stream);

/* Broadcast: the root's sendbuff (count elements) lands in every rank's
 * recvbuff, the root's included. In place when sendbuff == recvbuff (at the
 * root). */
dmacclResult_t dmacclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                               dmacclDataType_t datatype, int root, dmacclComm_t comm,
                               cudaStream_t stream);

/* Reduce: the root's recvbuff (count elements) receives the reduction of
 * every rank's sendbuff. In place when sendbuff == recvbuff (at the root). */
dmacclResult_t dmacclReduce(const void *sendbuff, void *recvbuff, size_t count,
                            dmacclDataType_t datatype, dmacclRedOp_t op, int root,
                            dmacclComm_t comm, cudaStream_t stream);

/*
 * A premultiplied sum (NCCL's PreMulSum): an operator for comm's
 * reductions (AllReduce, ReduceScatter, Reduce, ReduceScatterV and their
 * ...Init forms) of `datatype` only, whose result is scalar * (x0 + x1 +
 * ... + x(nranks-1)), computed as dmacclAvg is (include/dmaccl.h's rules:
 * rank order, integers wrap in their own width, fp16/bf16/fp8 in float)
 * with the multiplication in place of Avg's division, before the one
 * rounding. `scalar` points to one value of `datatype`:
 *   - dmacclScalarHostImmediate: host memory, read by this call (the
 *     operator keeps the value);
 *   - dmacclScalarDevice: memory of comm's GPU (host memory on the host
 *     executor), read each time an operation with the operator runs (a
 *     CUDA graph's replay reads the value of that moment); it must hold the
 *     value until then.
 * Every rank passes the same scalar to the same operation. NCCL multiplies
 * each rank's input by that rank's own scalar before the sum; with equal
 * scalars the two differ only in rounding (and dmaccl's does not overflow
 * fp16 or bf16 where the scaled sum fits), with unequal ones dmaccl's
 * result is not NCCL's. Immediate scalars are compared with the other
 * arguments: ranks that differ are reported as ranks that pass different
 * counts are (docs/failures.md); a device scalar's value is not known at
 * the call, so it is compared with nothing (ranks may mix the two
 * residences).
 * *op receives the operator: a value that is none of the built-in ones
 * and no other live operator's, valid on comm alone until
 * dmacclRedOpDestroy (another communicator's operator, or a destroyed one,
 * is refused as an op that is not comm's). Operations called with it
 * keep what they need at their call, so it may be destroyed as soon as
 * the last call that names it returns (inside a group too). Errors: NULL op
 * or scalar, a datatype that is not one, a residence that is not one.
 */
dmacclResult_t dmacclRedOpCreatePreMulSum(dmacclRedOp_t *op, void *scalar,
                                          dmacclDataType_t datatype,
                                          dmacclScalarResidence_t residence, dmacclComm_t comm);
/* Destroys an operator of dmacclRedOpCreatePreMulSum. Errors: a built-in
 * operator, or one that is not comm's (made on another communicator, or
 * destroyed already). */
dmacclResult_t dmacclRedOpDestroy(dmacclRedOp_t op, dmacclComm_t comm);

/* Gather: rank r's sendbuff (count elements) lands at the root's recvbuff +
 * r*count*size; the root's recvbuff holds nranks*count elements. In place
 * when sendbuff == recvbuff + root*count*size (at the root). */
dmacclResult_t dmacclGather(const void *sendbuff, void *recvbuff, size_t count,
                            dmacclDataType_t datatype, int root, dmacclComm_t comm,
                            cudaStream_t stream);

/* Scatter: block r of the root's sendbuff (sendbuff + r*count*size, nranks*count
 * elements in all) lands in rank r's recvbuff (count elements). In place
 * when recvbuff == sendbuff + root*count*size (at the root). */
dmacclResult_t dmacclScatter(const void *sendbuff, void *recvbuff, size_t count,
                             dmacclDataType_t datatype, int root, dmacclComm_t comm,
                             cudaStream_t stream);

/*
 * The V forms take arrays of nranks counts and displacements, in elements;
 * they are read during the call only (copied), never afterwards.
 *
 * AllGatherV: rank r contributes counts[r] elements from sendbuff; they land
 * in every rank's recvbuff at displs[r]. counts and displs are the same on
 * every rank. Blocks must not overlap in recvbuff; gaps between them are left
 * untouched. In place when sendbuff == recvbuff + displs[rank]*size. (vLLM's
 * all_gatherv: counts = sizes, displs = their prefix sums.)
 */
dmacclResult_t dmacclAllGatherV(const void *sendbuff, void *recvbuff, const size_t counts[],
                                const size_t displs[], dmacclDataType_t datatype, dmacclComm_t comm,
                                cudaStream_t stream);

/*
 * AllGather and AllGatherV with arrival words, for consumers that start on
 * the blocks that have landed while the others are still moving (a GEMM
 * over the gathered rows in tiles, as asynchronous tensor parallelism does).
 * `arrived` is an array of nranks 32-bit words, 4-byte aligned, in the
 * memory the buffers are in (CUDA executor: device memory of the
 * communicator's GPU), not overlapping sendbuff or recvbuff. Besides what
 * dmacclAllGather(V) does, the operation stores `value` into arrived[p] once
 * rank p's block of recvbuff holds its data, for every rank p (the own
 * block and empty blocks too). CUDA executor: the store is a stream memory
 * operation on one of the operation's streams, ordered after the copies and
 * signals that complete the block, so work on another stream may wait for
 * it (cuStreamWaitValue32 with CU_STREAM_WAIT_VALUE_EQ) or a kernel may
 * poll it (a volatile or acquire load) and then read the block. When the
 * operation completes on `stream`, every word holds `value`. The words are
 * only written, never reset or read: give each call a new value (e.g. a
 * step counter), or, in a CUDA graph whose replays store the same value,
 * set the words back before the next replay. Host executor: host memory,
 * the stores are release stores made while the operation runs. Not in
 * persistent (Init) form.
 *
 * How early a word comes depends on the algorithm: with the pull forms
 * (pull1, pulln) and the staged ones (stagell below 2 MB and stage to
 * 8 MB by default; stage2d) each block's word follows that block's own copy
 * (stagell: the launch that takes that peer's lines; the own block's after
 * the first launch, which waits for one peer's lines); with the push forms
 * and pullb a peer's word follows that peer's end-of-operation signal,
 * which it raises after all of its copies. So where the built-in table or
 * a tuning file would give a plain call one of those (pushb from 8 MB),
 * the Notify call runs pull1 instead (as fast there: docs/overlap.md; in a
 * graph per GPU of one process, stage or pushn: dmacclCommInitAll); an
 * algorithm set with dmacclConfig_t.algorithm or DMACCL_ALGO is kept. As
 * the algorithm may differ, every rank calls the Notify form or none does
 * (across processes, ranks that mix them break the communicator with an
 * error that says so). Queue a consumer's waits only after the
 * call has returned, as the library queues its own (a wait queued earlier
 * can hold a hardware queue the operation needs). A failed operation (ranks
 * that disagree, an abort) may never store the words; its error comes from
 * dmacclCommSynchronize or dmacclCommGetAsyncError, so a consumer that can
 * meet one should not wait without bound.
 */
dmacclResult_t dmacclAllGatherNotify(const void *sendbuff, void *recvbuff, size_t sendcount,
                                     dmacclDataType_t datatype, uint32_t *arrived, uint32_t value,
                                     dmacclComm_t comm, cudaStream_t stream);
dmacclResult_t dmacclAllGatherVNotify(const void *sendbuff, void *recvbuff, const size_t counts[],
                                      const size_t displs[], dmacclDataType_t datatype,
                                      uint32_t *arrived, uint32_t value, dmacclComm_t comm,
                                      cudaStream_t stream);

/*
 * The consumer's side of the arrival words: work queued on `stream` after
 * this call waits until arrived[rank] holds `value` (arrived: the words
 * given to a dmacclAllGatherNotify or dmacclAllGatherVNotify of comm; rank:
 * whose block). CUDA executor: one stream memory wait (cuStreamWaitValue32,
 * equal), on the stream as given, capturable into a CUDA graph; nothing
 * else is queued and no SM is used. Queue it after the Notify call has
 * returned and outside a group (the call refuses to run inside one: the
 * group's operations are queued at dmacclGroupEnd). If the operation fails
 * the word may never be stored and the stream waits until something stores
 * it (the caller may, e.g. with cudaMemcpy). Host executor: stream must be
 * 0; the call blocks the calling thread until the word holds value, or
 * returns an error if the communicator fails or is aborted meanwhile, if
 * an operation of it failed (the error dmacclCommSynchronize then reports),
 * or if every operation the rank had posted completed without storing the
 * value.
 * Call it once every rank's call has been issued (after dmacclGroupEnd
 * where one thread issues all of them).
 */
dmacclResult_t dmacclStreamWaitArrival(const uint32_t *arrived, int rank, uint32_t value,
                                       dmacclComm_t comm, cudaStream_t stream);

/*
 * ReduceScatterV: rank r's recvbuff (counts[r] elements) receives the
 * reduction of the elements [displs[r], displs[r] + counts[r]) of every
 * rank's sendbuff. counts and displs are the same on every rank; the
 * ranges must not overlap. In place when recvbuff == sendbuff +
 * displs[rank]*size.
 */
dmacclResult_t dmacclReduceScatterV(const void *sendbuff, void *recvbuff, const size_t counts[],
                                    const size_t displs[], dmacclDataType_t datatype,
                                    dmacclRedOp_t op, dmacclComm_t comm, cudaStream_t stream);

/*
 * AlltoAllv (RCCL's argument list): this rank sends sendcounts[j] elements
 * from sendbuff + sdispls[j]*size to rank j, and receives recvcounts[j]
 * elements from rank j at recvbuff + rdispls[j]*size. sendcounts[j] on rank
 * i must equal recvcounts[i] on rank j (checked when the operation is
 * launched: a mismatch is reported by dmacclCommSynchronize; as the
 * collective's own form nothing is copied, as Send/Recv pairs, the default
 * in CUDA graphs and on 2 ranks, that pair copies nothing and the others'
 * blocks arrive; docs/failures.md), and sendcounts[rank] must equal
 * recvcounts[rank] (checked at the call). The receive blocks must not
 * overlap; send blocks may (one block sent to several ranks). Not in place.
 * Inside a group that holds other calls of its set it runs its collective
 * form.
 */
dmacclResult_t dmacclAlltoAllv(const void *sendbuff, const size_t sendcounts[],
                               const size_t sdispls[], void *recvbuff, const size_t recvcounts[],
                               const size_t rdispls[], dmacclDataType_t datatype, dmacclComm_t comm,
                               cudaStream_t stream);

/*
 * Send and Recv (NCCL's signatures): count elements from sendbuff to rank
 * peer's recvbuff. The k-th dmacclSend from rank a to rank b is matched with
 * the k-th dmacclRecv on b from a, with the same count and datatype (checked
 * when the pair is launched: a mismatch copies nothing and
 * dmacclCommSynchronize reports it). Sends and receives need not be called by
 * the other ranks. Stream and buffer rules as dmacclAllGather; they can be
 * captured into CUDA graphs.
 *
 * peer may be the calling rank itself inside a group, as in NCCL (torch's
 * all_to_all_single with splits sends each rank its own block so): the
 * group's k-th dmacclSend to itself is matched with its k-th dmacclRecv from
 * itself on that communicator, and the pair is one local copy on their
 * stream (nothing when empty or in place). The pair must agree in count and
 * datatype and be on one stream; a call to itself without its match, or a
 * pair that disagrees, fails the whole group at dmacclGroupEnd
 * (dmacclInvalidUsage, or dmacclInvalidArgument for the counts or types)
 * with nothing made or issued (its recorded dmacclCommInitRank calls are
 * dropped too). A pair needs no call of the peers and has no order with
 * the group's other calls (as in NCCL); it runs after the rank's earlier
 * work on its stream. Outside a group, and as a persistent request, a
 * Send/Recv to oneself is refused (dmacclInvalidArgument).
 *
 * Inside a group, as in NCCL, a rank's sends and receives (to several peers,
 * both ways) are issued together at dmacclGroupEnd, after the group's
 * collectives. Outside a group a call may return only once the peer has made
 * the matching call (always between threads of one process; between
 * processes for messages above the staged sizes), so the sends and receives
 * of an exchange belong in one group.
 *
 * The first Send/Recv between two ranks (either way) sets up their channels
 * and cannot be captured into a CUDA graph (dmacclInvalidUsage): make one
 * before capturing, as a warm-up.
 *
 * Each direction between two ranks gets a channel at its first use: a
 * 2-rank set of its own (flags, lanes and staging slots on the CUDA
 * executor; between processes a rendezvous of the two ranks and, for
 * messages up to the staged sizes, 6 x DMACCL_STAGE_BYTES of device memory on
 * each side: two eager staging slots, two graph slots and as many line slots
 * of half that size for the small messages' kernel, stagell; no scratch
 * buffer, as a channel never reduces). Channels are destroyed
 * with comm; dmacclCommSynchronize, dmacclCommGetAsyncError and dmacclCommAbort cover them.
 */
dmacclResult_t dmacclSend(const void *sendbuff, size_t count, dmacclDataType_t datatype, int peer,
                          dmacclComm_t comm, cudaStream_t stream);
dmacclResult_t dmacclRecv(void *recvbuff, size_t count, dmacclDataType_t datatype, int peer,
                          dmacclComm_t comm, cudaStream_t stream);

/*
 * Persistent collectives, as MPI's: Init fixes the buffers, the count and the
 * type once and checks them; dmacclStart issues the collective on a stream,
 * with the stream semantics and ordering rules of the eager call (every rank
 * starts its requests in the same order as its other collectives on comm);
 * dmacclRequestFree releases the request. Init is local (not collective) and
 * may be called anywhere; Start may be called inside a group and under CUDA
 * graph capture. A start costs less host time than an eager call: the
 * argument checks and buffer lookups happened at Init. The buffers must stay
 * allocated until the request is freed, and every request of comm must be
 * freed before comm is destroyed.
 */
typedef struct dmacclRequest *dmacclRequest_t;
dmacclResult_t dmacclAllGatherInit(const void *sendbuff, void *recvbuff, size_t sendcount,
                                   dmacclDataType_t datatype, dmacclComm_t comm,
                                   dmacclRequest_t *request);
dmacclResult_t dmacclAlltoAllInit(const void *sendbuff, void *recvbuff, size_t count,
                                  dmacclDataType_t datatype, dmacclComm_t comm,
                                  dmacclRequest_t *request);
dmacclResult_t dmacclAllReduceInit(const void *sendbuff, void *recvbuff, size_t count,
                                   dmacclDataType_t datatype, dmacclRedOp_t op, dmacclComm_t comm,
                                   dmacclRequest_t *request);
dmacclResult_t dmacclReduceScatterInit(const void *sendbuff, void *recvbuff, size_t recvcount,
                                       dmacclDataType_t datatype, dmacclRedOp_t op,
                                       dmacclComm_t comm, dmacclRequest_t *request);
dmacclResult_t dmacclBroadcastInit(const void *sendbuff, void *recvbuff, size_t count,
                                   dmacclDataType_t datatype, int root, dmacclComm_t comm,
                                   dmacclRequest_t *request);
dmacclResult_t dmacclReduceInit(const void *sendbuff, void *recvbuff, size_t count,
                                dmacclDataType_t datatype, dmacclRedOp_t op, int root,
                                dmacclComm_t comm, dmacclRequest_t *request);
dmacclResult_t dmacclGatherInit(const void *sendbuff, void *recvbuff, size_t count,
                                dmacclDataType_t datatype, int root, dmacclComm_t comm,
                                dmacclRequest_t *request);
dmacclResult_t dmacclScatterInit(const void *sendbuff, void *recvbuff, size_t count,
                                 dmacclDataType_t datatype, int root, dmacclComm_t comm,
                                 dmacclRequest_t *request);
dmacclResult_t dmacclAllGatherVInit(const void *sendbuff, void *recvbuff, const size_t counts[],
                                    const size_t displs[], dmacclDataType_t datatype,
                                    dmacclComm_t comm, dmacclRequest_t *request);
dmacclResult_t dmacclReduceScatterVInit(const void *sendbuff, void *recvbuff, const size_t counts[],
                                        const size_t displs[], dmacclDataType_t datatype,
                                        dmacclRedOp_t op, dmacclComm_t comm,
                                        dmacclRequest_t *request);
dmacclResult_t dmacclAlltoAllvInit(const void *sendbuff, const size_t sendcounts[],
                                   const size_t sdispls[], void *recvbuff,
                                   const size_t recvcounts[], const size_t rdispls[],
                                   dmacclDataType_t datatype, dmacclComm_t comm,
                                   dmacclRequest_t *request);
/* Send and Recv (not in NCCL): the arguments of dmacclSend / dmacclRecv
 * without the stream. A start is matched as the eager call is (the k-th
 * send from a to b, started or called, meets the k-th receive on b from a).
 * The first start with a peer makes their channel: not inside a capture. */
dmacclResult_t dmacclSendInit(const void *sendbuff, size_t count, dmacclDataType_t datatype,
                              int peer, dmacclComm_t comm, dmacclRequest_t *request);
dmacclResult_t dmacclRecvInit(void *recvbuff, size_t count, dmacclDataType_t datatype, int peer,
                              dmacclComm_t comm, dmacclRequest_t *request);
dmacclResult_t dmacclStart(dmacclRequest_t request, cudaStream_t stream);
dmacclResult_t dmacclRequestFree(dmacclRequest_t request);

#ifdef __cplusplus
}
#endif

#endif /* DMACCL_H_ */
