/*
 * The collectives as one table, for the tools and the tests, written against
 * the public header only (include/dmaccl.h): a row per collective (name,
 * flags, nccl-tests' bus-bandwidth factor) and functions that read a
 * collective's arguments on every rank (collShape) to give each rank's
 * buffer sizes, the in-place form, nccl-tests' size, the dmaccl call, and an
 * independent reference of the result in plain C (the arithmetic of
 * dmacclRedOp_t written from the header's comment).
 *
 * One row is not a collective of the library: sendrecv, nccl-tests'
 * sendrecv_perf pattern, in which every rank r sends count elements to rank
 * (r+1)%n and receives count elements from rank (r-1+n)%n (dmacclSend and
 * dmacclRecv in a group). It needs 2 ranks or more (collMinRanks: its
 * persistent form, two requests (collRequests), cannot be to oneself; the
 * eager one on one rank is the library's copy to itself), and its
 * algorithm is the one the selection table gives Broadcast
 * (collInfo.select).
 */
#ifndef DMACCL_TOOLS_COLLS_H_
#define DMACCL_TOOLS_COLLS_H_

#include "dmaccl.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  COLL_ALLGATHER = 0,
  COLL_ALLTOALL,
  COLL_ALLREDUCE,
  COLL_REDUCESCATTER,
  COLL_BROADCAST,
  COLL_REDUCE,
  COLL_GATHER,
  COLL_SCATTER,
  COLL_ALLGATHERV,
  COLL_REDUCESCATTERV,
  COLL_ALLTOALLV,
  COLL_SENDRECV,
  COLL_NUM
} collId;

/* Row flags. */
enum {
  COLL_REDUCES = 1u,  /* takes a dmacclRedOp_t */
  COLL_ROOTED = 2u,   /* takes a root */
  COLL_VECTOR = 4u,   /* takes count and displacement arrays */
  COLL_IN_PLACE = 8u, /* has an in-place form */
  COLL_P2P = 16u,     /* dmacclSend/dmacclRecv, not a collective call: needs 2 ranks or more */
};

/* nccl-tests' bus bandwidth factor: busbw = algbw * factor. */
typedef enum {
  COLL_BW_ONE = 0, /* 1: broadcast, reduce, sendrecv */
  COLL_BW_NM1 = 1, /* (n-1)/n */
  COLL_BW_2NM1 = 2 /* 2(n-1)/n: allreduce */
} collBw;

typedef struct {
  const char *name; /* "allgather": the tools' name (dmaccl-perf -o, the tests) */
  /* The collective of the library's selection grammar (dmacclConfig_t.algorithm,
   * DMACCL_ALGO, tuning files; src/plan) whose entry picks this row's
   * algorithm: name itself, except for sendrecv, which is "broadcast" (each
   * Send/Recv runs as a 2-rank Broadcast on a channel per direction, made
   * with the parent communicator's selection table). "sendrecv" is no name
   * of that grammar: never write it into a selection string. */
  const char *select;
  const char *call; /* "dmacclAllGather"; sendrecv: "dmacclSend/dmacclRecv" */
  unsigned flags;   /* COLL_REDUCES | COLL_ROOTED | COLL_VECTOR | COLL_IN_PLACE | COLL_P2P */
  collBw bw;
} collInfo;

extern const collInfo collTable[COLL_NUM];

/* The id of a name of collTable, or -1. */
int collByName(const char *name);

/* Largest number of ranks the helpers below take (collVArrays). */
#define COLL_MAX_RANKS 16

/* Fewest ranks collective c runs on: 2 for sendrecv (the library refuses a
 * Send/Recv to oneself), 1 for the others. Whatever iterates the table skips
 * a row below it, and says so where it lists or prints the rows. */
int collMinRanks(collId c);

/* Persistent requests one rank's call makes (collIssue with requests): 2 for
 * sendrecv (dmacclSendInit, dmacclRecvInit), 1 for the others. */
#define COLL_MAX_REQUESTS 2
int collRequests(collId c);

/*
 * One collective's arguments on every rank. count: the uniform forms' count
 * argument (sendcount, recvcount or count). counts/displs: AllGatherV and
 * ReduceScatterV (nranks entries, the same on every rank). AlltoAllv: rank
 * r's arrays are sendcounts + r*nranks, sdispls + r*nranks, ... (nranks x
 * nranks each). Counts and displacements are in elements.
 */
typedef struct {
  int nranks;
  size_t count;
  int root;
  const size_t *counts, *displs;
  const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
} collShape;

/* Elements of rank's sendbuff and recvbuff (0: the rank does not use it,
 * e.g. Broadcast's sendbuff off the root). V forms: the end of the last
 * non-empty block. */
size_t collSendCount(collId c, const collShape *s, int rank);
size_t collRecvCount(collId c, const collShape *s, int rank);

/* 1 when rank's call has an in-place form; then *delta is sendbuff -
 * recvbuff in elements in that form. Where the rank uses only one of the two
 * buffers (rooted collectives off the root), the form passes that buffer as
 * both: *delta is 0. */
int collInPlace(collId c, const collShape *s, int rank, long long *delta);

/* nccl-tests' size in bytes (docs/algorithms.md's selection size):
 * allgather(v): total output bytes; reducescatter(v): total input bytes;
 * alltoall(v): the bytes rank sends; allreduce, broadcast, reduce, sendrecv:
 * count bytes; gather, scatter: the root's buffer. */
size_t collSizeBytes(collId c, const collShape *s, int rank, size_t typeSize);

/* busbw / algbw for nranks (0 for one rank where the factor is (n-1)/n). */
double collBusBwFactor(collId c, int nranks);

/*
 * Issues rank's call: the eager call when requests is NULL, else the Init
 * form, which stores collRequests(c) requests in requests[0..) (start them
 * with collStart, free them with collFree; on failure no request is left
 * alive). op is
 * ignored by collectives that do not reduce.
 *
 * sendrecv: dmacclSend of count elements of sendbuff to rank (rank+1)%n,
 * then dmacclRecv of count elements into recvbuff from rank (rank-1+n)%n,
 * inside a dmacclGroupStart/End of their own (groups nest: inside the
 * caller's group they are recorded with its calls; outside any group the
 * group makes the exchange, where two calls one after the other would wait
 * for each other between processes). A Send that fails is not recorded and
 * the Recv is not made; a Recv that fails leaves the Send recorded (a group
 * cannot drop a recorded call), so the caller must treat the set as broken.
 * Its Init form: requests[0] from dmacclSendInit, requests[1] from
 * dmacclRecvInit.
 */
dmacclResult_t collIssue(collId c, const collShape *s, int rank, const void *sendbuff,
                         void *recvbuff, dmacclDataType_t type, dmacclRedOp_t op, dmacclComm_t comm,
                         cudaStream_t stream, dmacclRequest_t *requests);
/* Starts the collRequests(c) requests of one rank's Init form on stream:
 * dmacclStart of each in order; more than one (sendrecv) inside one
 * dmacclGroupStart/End, as collIssue's eager call. */
dmacclResult_t collStart(collId c, dmacclRequest_t *requests, cudaStream_t stream);
/* Frees the collRequests(c) requests that are not NULL and sets them NULL. */
void collFree(collId c, dmacclRequest_t *requests);

/*
 * The reference: writes into recv (rank's receive buffer, collRecvCount
 * elements) what the collective defines there, from every rank's send
 * buffer (sends[r]: collSendCount(c, s, r) elements; NULL where that is 0),
 * and leaves every other byte (gaps of V layouts, a non-root's buffer)
 * untouched. sendrecv: recv = sends[(rank-1+n)%n]. Returns 0; -1 for an op
 * the type does not take, AlltoAllv arrays that disagree between ranks, a
 * reduction whose floating-point result is NaN (the header leaves NaN's
 * bits open: collSanitize avoids it), or fewer ranks than collMinRanks.
 */
int collReference(collId c, const collShape *s, int rank, dmacclDataType_t type, dmacclRedOp_t op,
                  const void *const *sends, void *recv);

/* Makes count elements of random bits valid inputs of every reduction with
 * results that the header defines bit for bit: floating-point values finite
 * and non-zero (no NaN, no Inf - Inf or 0 * Inf, no +0/-0 ties of Max and
 * Min). Integer types are left as they are. */
void collSanitize(dmacclDataType_t type, void *buf, size_t count);

/* Element types and ops. */
size_t collTypeSize(dmacclDataType_t t);                   /* 0 for a value out of range */
const char *collTypeName(dmacclDataType_t t);              /* "float32", "?" out of range */
const char *collOpName(dmacclRedOp_t op);                  /* "sum", "?" out of range */
int collOpSupported(dmacclDataType_t t, dmacclRedOp_t op); /* Avg: floating types only */
/* The table's premultiplied sum, an op after the built-in ones: collIssue
 * calls with an operator of dmacclRedOpCreatePreMulSum (collPremulScalar,
 * dmacclScalarHostImmediate) and destroys it as soon as the call returns;
 * collReference multiplies the sum by the scalar before the rounding. */
#define COLL_PREMULSUM ((dmacclRedOp_t)dmacclNumOps)
#define COLL_NUM_OPS (dmacclNumOps + 1)
/* Writes COLL_PREMULSUM's scalar for t (one value of t): 0.3 rounded to
 * the type, or -3 in the integer's width (wrapping for unsigned ones). */
void collPremulScalar(dmacclDataType_t t, void *out);
int collTypeIsFloat(dmacclDataType_t t);

/* Storage for the arrays of collShape. */
typedef struct {
  size_t counts[COLL_MAX_RANKS], displs[COLL_MAX_RANKS];
  size_t sendcounts[COLL_MAX_RANKS * COLL_MAX_RANKS], sdispls[COLL_MAX_RANKS * COLL_MAX_RANKS];
  size_t recvcounts[COLL_MAX_RANKS * COLL_MAX_RANKS], rdispls[COLL_MAX_RANKS * COLL_MAX_RANKS];
} collVArrays;

/* Random V-form layouts for nranks (<= COLL_MAX_RANKS) ranks from seed:
 * blocks of 0 to maxCount elements, uneven, some empty (often every block of
 * one rank, so that it sends or receives nothing), gaps between blocks, and
 * displacements in a permuted order (empty blocks anywhere). Fills v and
 * points s's arrays at it: counts/displs and the AlltoAllv matrices
 * (consistent: recvcounts of rank j at i == sendcounts of rank i at j). */
void collRandomV(collShape *s, collVArrays *v, int nranks, size_t maxCount, uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif
