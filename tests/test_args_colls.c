/*
 * Bad input to the collectives of 0.2 on the host executor: NULL count and
 * displacement arrays, blocks that overlap or run past the largest buffer,
 * roots out of range, ops out of range or undefined for the type, datatypes
 * out of range, send and receive buffers that overlap other than in the
 * in-place form, counts whose bytes overflow. Each returns
 * dmacclInvalidArgument with a message naming the argument (on the comm and
 * on the thread), writes nothing, and the communicator still runs correct
 * collectives afterwards; the Init forms likewise (no request made). Also
 * AlltoAllv whose counts disagree between ranks (found at launch:
 * synchronize fails once, nothing written), a failing call inside a group
 * (not recorded, the group still runs), algorithms a collective does not
 * take, and the table's sendrecv row refused where it cannot run: on one
 * rank (a Send to oneself) and with a bad datatype (the Send fails, so its
 * Recv is not made and nothing is left recorded), eager and Init forms.
 */
#include "collcheck.h"
#include "harness.h"

#include <stdint.h>

#define N 4
#define COUNT 64
#define BYTES (COUNT * N * 8)
static dmacclComm_t comms[N];
static ccEnv env;
static unsigned char *sendb[N], *recvb[N];
static size_t counts[N], displs[N], zeros[N];

static void poison(void) {
  for (int r = 0; r < N; r++) {
    testFillRandom(sendb[r], BYTES, 55 + (uint64_t)r);
    memset(recvb[r], CC_POISON, BYTES);
  }
}

/* Nothing was written, and collectives of every kind still work. */
static int untouchedAndUsable(void) {
  unsigned char check[BYTES];
  for (int r = 0; r < N; r++) {
    for (size_t i = 0; i < BYTES; i++)
      if (recvb[r][i] != CC_POISON) {
        TEST_FAIL("rank %d recvbuff byte %zu written by a failed call", r, i);
        return 1;
      }
    testFillRandom(check, sizeof(check), 55 + (uint64_t)r);
    ASSERT_TRUE(memcmp(check, sendb[r], sizeof(check)) == 0);
  }
  const ccCase cases[] = {
      {COLL_ALLREDUCE, dmacclFloat32, dmacclSum, 1001, 0, 0, 0, 0, 31337, NULL, 0},
      {COLL_ALLTOALLV, dmacclInt32, dmacclSum, 100, 0, 0, 0, 0, 31338, NULL, 0},
      {COLL_REDUCE, dmacclBfloat16, dmacclMax, 77, 3, 1, 0, 0, 31339, NULL, 0},
      {COLL_REDUCESCATTERV, dmacclInt8, dmacclProd, 50, 0, 0, 0, 0, 31340, NULL, 0},
      {COLL_SENDRECV, dmacclFloat64, dmacclSum, 93, 0, 0, 1, 0, 31341, NULL, 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ASSERT_EQ_INT(ccRunCase(&env, comms, N, &cases[i]), 0);
  return 0;
}

static void evenLayout(void) {
  for (int r = 0; r < N; r++) counts[r] = 4, displs[r] = 4 * (size_t)r, zeros[r] = 0;
}

static int testNullArrays(void) {
  poison();
  evenLayout();
  float *s = (float *)sendb[1], *d = (float *)recvb[1];
  dmacclComm_t c = comms[1];
  EXPECT_ERR(dmacclAllGatherV(s, d, NULL, displs, dmacclFloat32, c, NULL), dmacclInvalidArgument, c,
             "dmacclAllGatherV: counts is NULL");
  EXPECT_ERR(dmacclAllGatherV(s, d, counts, NULL, dmacclFloat32, c, NULL), dmacclInvalidArgument, c,
             "displs is NULL");
  EXPECT_ERR(dmacclReduceScatterV(s, d, NULL, displs, dmacclFloat32, dmacclSum, c, NULL),
             dmacclInvalidArgument, c, "dmacclReduceScatterV: counts is NULL");
  EXPECT_ERR(dmacclReduceScatterV(s, d, counts, NULL, dmacclFloat32, dmacclSum, c, NULL),
             dmacclInvalidArgument, c, "displs is NULL");
  EXPECT_ERR(dmacclAlltoAllv(s, NULL, displs, d, counts, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "sendcounts is NULL");
  EXPECT_ERR(dmacclAlltoAllv(s, counts, NULL, d, counts, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "sdispls is NULL");
  EXPECT_ERR(dmacclAlltoAllv(s, counts, displs, d, NULL, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "recvcounts is NULL");
  EXPECT_ERR(dmacclAlltoAllv(s, counts, displs, d, counts, NULL, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "rdispls is NULL");
  /* the rank's block to itself with two counts (rank 1: sendcounts[1] 5,
   * recvcounts[1] 4): it would write past the receive block */
  size_t more[N];
  memcpy(more, counts, sizeof(more));
  more[1] = 5;
  EXPECT_ERR(dmacclAlltoAllv(s, more, displs, d, counts, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "sendcounts[1] is 5 but recvcounts[1] is 4");
  /* NULL arrays are wrong even when nothing would move */
  EXPECT_ERR(dmacclAllGatherV(NULL, NULL, NULL, zeros, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "counts is NULL");
  dmacclRequest_t req = NULL;
  EXPECT_ERR(dmacclAllGatherVInit(s, d, NULL, displs, dmacclFloat32, c, &req),
             dmacclInvalidArgument, c, "counts is NULL");
  EXPECT_ERR(dmacclAlltoAllvInit(s, counts, displs, d, counts, NULL, dmacclFloat32, c, &req),
             dmacclInvalidArgument, c, "rdispls is NULL");
  EXPECT_ERR(dmacclReduceScatterVInit(s, d, counts, NULL, dmacclFloat32, dmacclSum, c, &req),
             dmacclInvalidArgument, c, "displs is NULL");
  ASSERT_TRUE(req == NULL);
  return untouchedAndUsable();
}

static int testOverlappingBlocks(void) {
  poison();
  size_t cnt[N] = {4, 4, 4, 4}, dis[N] = {0, 4, 6, 12}; /* blocks 1 and 2 overlap */
  float *s = (float *)sendb[2], *d = (float *)recvb[2];
  dmacclComm_t c = comms[2];
  EXPECT_ERR(dmacclAllGatherV(s, d, cnt, dis, dmacclFloat32, c, NULL), dmacclInvalidArgument, c,
             "blocks 1 ([4, 8)) and 2 ([6, 10)) overlap (displs and counts");
  EXPECT_ERR(dmacclReduceScatterV(s, d, cnt, dis, dmacclFloat32, dmacclMin, c, NULL),
             dmacclInvalidArgument, c, "overlap (displs and counts");
  evenLayout();
  /* receive blocks out of order that still overlap: 3 ([0, 4)) and 0 ([2, 6)) */
  size_t rdis[N] = {2, 8, 12, 0};
  EXPECT_ERR(dmacclAlltoAllv(s, counts, displs, d, counts, rdis, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "overlap (rdispls and recvcounts");
  dmacclRequest_t req = NULL;
  EXPECT_ERR(dmacclAllGatherVInit(s, d, cnt, dis, dmacclFloat32, c, &req), dmacclInvalidArgument, c,
             "overlap");
  ASSERT_TRUE(req == NULL);
  return untouchedAndUsable();
}

static int testBlocksPastTheEnd(void) {
  poison();
  evenLayout();
  float *s = (float *)sendb[0], *d = (float *)recvb[0];
  dmacclComm_t c = comms[0];
  size_t dis[N] = {0, 4, SIZE_MAX - 2, 12};
  EXPECT_ERR(dmacclAllGatherV(s, d, counts, dis, dmacclFloat32, c, NULL), dmacclInvalidArgument, c,
             "displs[2] = 18446744073709551613 with counts[2] = 4 runs past");
  size_t cnt[N] = {4, SIZE_MAX / 2, 4, 4};
  EXPECT_ERR(dmacclReduceScatterV(s, d, cnt, displs, dmacclFloat32, dmacclSum, c, NULL),
             dmacclInvalidArgument, c, "counts[1] = 9223372036854775807 runs past");
  /* fits in elements but not in bytes */
  size_t near[N] = {0, 4, (SIZE_MAX / 8) - 1, 12};
  EXPECT_ERR(dmacclAllGatherV(s, d, counts, near, dmacclFloat64, c, NULL), dmacclInvalidArgument, c,
             "displs[2]");
  size_t sdis[N] = {0, 4, 8, SIZE_MAX};
  EXPECT_ERR(dmacclAlltoAllv(s, counts, sdis, d, counts, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "sdispls[3]");
  EXPECT_ERR(dmacclAlltoAllv(s, counts, displs, d, cnt, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "recvcounts[1]");
  return untouchedAndUsable();
}

static int testRootOutOfRange(void) {
  poison();
  const int roots[] = {-1, N, 1000};
  const char *msg[] = {"root -1 is not a rank (0 to 3)", "root 4 is not a rank", "root 1000"};
  for (int i = 0; i < 3; i++) {
    int root = roots[i];
    dmacclComm_t c = comms[3];
    void *s = sendb[3], *d = recvb[3];
    EXPECT_ERR(dmacclBroadcast(s, d, COUNT, dmacclFloat32, root, c, NULL), dmacclInvalidArgument, c,
               msg[i]);
    EXPECT_ERR(dmacclReduce(s, d, COUNT, dmacclFloat32, dmacclSum, root, c, NULL),
               dmacclInvalidArgument, c, msg[i]);
    EXPECT_ERR(dmacclGather(s, d, COUNT / N, dmacclFloat32, root, c, NULL), dmacclInvalidArgument,
               c, msg[i]);
    EXPECT_ERR(dmacclScatter(s, d, COUNT / N, dmacclFloat32, root, c, NULL), dmacclInvalidArgument,
               c, msg[i]);
    dmacclRequest_t req = NULL;
    EXPECT_ERR(dmacclBroadcastInit(s, d, COUNT, dmacclFloat32, root, c, &req),
               dmacclInvalidArgument, c, msg[i]);
    EXPECT_ERR(dmacclReduceInit(s, d, COUNT, dmacclFloat32, dmacclMax, root, c, &req),
               dmacclInvalidArgument, c, msg[i]);
    EXPECT_ERR(dmacclGatherInit(s, d, 1, dmacclFloat32, root, c, &req), dmacclInvalidArgument, c,
               msg[i]);
    EXPECT_ERR(dmacclScatterInit(s, d, 1, dmacclFloat32, root, c, &req), dmacclInvalidArgument, c,
               msg[i]);
    ASSERT_TRUE(req == NULL);
  }
  return untouchedAndUsable();
}

static int testBadOp(void) {
  poison();
  evenLayout();
  dmacclComm_t c = comms[1];
  void *s = sendb[1], *d = recvb[1];
  EXPECT_ERR(dmacclAllReduce(s, d, COUNT, dmacclFloat32, (dmacclRedOp_t)5, c, NULL),
             dmacclInvalidArgument, c,
             "op 5 is neither a dmacclRedOp_t (0 to 4) nor an operator of this communicator's "
             "dmacclRedOpCreatePreMulSum");
  EXPECT_ERR(dmacclAllReduce(s, d, COUNT, dmacclFloat32, (dmacclRedOp_t)-1, c, NULL),
             dmacclInvalidArgument, c, "op -1");
  EXPECT_ERR(dmacclReduceScatter(s, d, COUNT / N, dmacclInt32, (dmacclRedOp_t)7, c, NULL),
             dmacclInvalidArgument, c, "op 7");
  EXPECT_ERR(dmacclReduce(s, d, COUNT, dmacclInt32, (dmacclRedOp_t)99, 0, c, NULL),
             dmacclInvalidArgument, c, "op 99");
  EXPECT_ERR(dmacclReduceScatterV(s, d, counts, displs, dmacclUint8, dmacclNumOps, c, NULL),
             dmacclInvalidArgument, c, "op 5");
  dmacclRequest_t req = NULL;
  EXPECT_ERR(dmacclAllReduceInit(s, d, COUNT, dmacclFloat32, (dmacclRedOp_t)9, c, &req),
             dmacclInvalidArgument, c, "op 9");
  /* Avg needs a floating-point type */
  const dmacclDataType_t ints[] = {dmacclInt8,   dmacclUint8, dmacclInt32,
                                   dmacclUint32, dmacclInt64, dmacclUint64};
  for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
    char want[96];
    snprintf(want, sizeof(want), "op avg is not defined for datatype %s", collTypeName(ints[i]));
    EXPECT_ERR(dmacclAllReduce(s, d, COUNT, ints[i], dmacclAvg, c, NULL), dmacclInvalidArgument, c,
               want);
    EXPECT_ERR(dmacclReduce(s, d, COUNT, ints[i], dmacclAvg, 2, c, NULL), dmacclInvalidArgument, c,
               want);
    EXPECT_ERR(dmacclReduceScatter(s, d, 2, ints[i], dmacclAvg, c, NULL), dmacclInvalidArgument, c,
               want);
    EXPECT_ERR(dmacclReduceScatterV(s, d, counts, displs, ints[i], dmacclAvg, c, NULL),
               dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclReduceScatterVInit(s, d, counts, displs, ints[i], dmacclAvg, c, &req),
               dmacclInvalidArgument, c, want);
  }
  ASSERT_TRUE(req == NULL);
  return untouchedAndUsable();
}

static int testBadDatatype(void) {
  poison();
  evenLayout();
  dmacclComm_t c = comms[0];
  void *s = sendb[0], *d = recvb[0];
  const int bad[] = {dmacclNumTypes, -1, 200};
  for (int i = 0; i < 3; i++) {
    dmacclDataType_t t = (dmacclDataType_t)bad[i];
    char want[64];
    snprintf(want, sizeof(want), "datatype %d is not a dmacclDataType_t", bad[i]);
    EXPECT_ERR(dmacclAllReduce(s, d, 8, t, dmacclSum, c, NULL), dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclReduceScatter(s, d, 2, t, dmacclSum, c, NULL), dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclBroadcast(s, d, 8, t, 0, c, NULL), dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclReduce(s, d, 8, t, dmacclSum, 0, c, NULL), dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclGather(s, d, 2, t, 0, c, NULL), dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclScatter(s, d, 2, t, 0, c, NULL), dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclAllGatherV(s, d, counts, displs, t, c, NULL), dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclReduceScatterV(s, d, counts, displs, t, dmacclSum, c, NULL),
               dmacclInvalidArgument, c, want);
    EXPECT_ERR(dmacclAlltoAllv(s, counts, displs, d, counts, displs, t, c, NULL),
               dmacclInvalidArgument, c, want);
    dmacclRequest_t req = NULL;
    EXPECT_ERR(dmacclAlltoAllvInit(s, counts, displs, d, counts, displs, t, c, &req),
               dmacclInvalidArgument, c, want);
    ASSERT_TRUE(req == NULL);
  }
  return untouchedAndUsable();
}

/* Overlapping buffers other than the in-place form (each rank's own form). */
static int testNotInPlace(void) {
  poison();
  evenLayout();
  float *s = (float *)sendb[1], *d = (float *)recvb[1];
  dmacclComm_t c = comms[1]; /* rank 1 */
  const char *notForm = "is not the in-place form";
  /* AllReduce: in place is send == recv */
  EXPECT_ERR(dmacclAllReduce(d + 1, d, 8, dmacclFloat32, dmacclSum, c, NULL), dmacclInvalidArgument,
             c, "which needs sendbuff == recvbuff + 0 bytes (rank 1)");
  /* ReduceScatter: recv == send + rank*recvcount; here recv == send */
  EXPECT_ERR(dmacclReduceScatter(d, d, 8, dmacclFloat32, dmacclSum, c, NULL), dmacclInvalidArgument,
             c, "which needs sendbuff == recvbuff - 32 bytes (rank 1)");
  /* Broadcast and Reduce at the root (rank 1): send == recv */
  EXPECT_ERR(dmacclBroadcast(d, d + 4, 8, dmacclFloat32, 1, c, NULL), dmacclInvalidArgument, c,
             notForm);
  EXPECT_ERR(dmacclReduce(d + 4, d, 8, dmacclFloat32, dmacclMax, 1, c, NULL), dmacclInvalidArgument,
             c, notForm);
  /* Gather at the root: send == recv + root*count */
  EXPECT_ERR(dmacclGather(d, d, 8, dmacclFloat32, 1, c, NULL), dmacclInvalidArgument, c,
             "which needs sendbuff == recvbuff + 32 bytes (rank 1)");
  /* Scatter at the root: recv == send + root*count */
  EXPECT_ERR(dmacclScatter(d, d + 1, 8, dmacclFloat32, 1, c, NULL), dmacclInvalidArgument, c,
             "which needs sendbuff == recvbuff - 32 bytes (rank 1)");
  /* AllGatherV: send == recv + displs[rank] (4 elements) */
  EXPECT_ERR(dmacclAllGatherV(d + 5, d, counts, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "which needs sendbuff == recvbuff + 16 bytes (rank 1)");
  /* ReduceScatterV: recv == send + displs[rank] */
  EXPECT_ERR(dmacclReduceScatterV(d, d + 3, counts, displs, dmacclFloat32, dmacclSum, c, NULL),
             dmacclInvalidArgument, c, "which needs sendbuff == recvbuff - 16 bytes (rank 1)");
  /* AlltoAllv has no in-place form */
  EXPECT_ERR(dmacclAlltoAllv(d, counts, displs, d, counts, displs, dmacclFloat32, c, NULL),
             dmacclInvalidArgument, c, "dmacclAlltoAllv does not run in place");
  dmacclRequest_t req = NULL;
  EXPECT_ERR(dmacclAllReduceInit(d + 2, d, 8, dmacclFloat32, dmacclSum, c, &req),
             dmacclInvalidArgument, c, notForm);
  ASSERT_TRUE(req == NULL);
  (void)s;
  return untouchedAndUsable();
}

static int testCountOverflow(void) {
  poison();
  dmacclComm_t c = comms[2];
  void *s = sendb[2], *d = recvb[2];
  size_t half = SIZE_MAX / 2, quarter = SIZE_MAX / 4;
  EXPECT_ERR(dmacclAllReduce(s, d, half, dmacclInt32, dmacclSum, c, NULL), dmacclInvalidArgument, c,
             "count 9223372036854775807 of int32 (4 bytes each) times 4 ranks overflows");
  EXPECT_ERR(dmacclReduceScatter(s, d, quarter, dmacclUint8, dmacclSum, c, NULL),
             dmacclInvalidArgument, c, "recvcount 4611686018427387903 of uint8");
  EXPECT_ERR(dmacclBroadcast(s, d, quarter, dmacclUint8, 0, c, NULL), dmacclInvalidArgument, c,
             "overflows");
  EXPECT_ERR(dmacclReduce(s, d, half, dmacclFloat16, dmacclSum, 1, c, NULL), dmacclInvalidArgument,
             c, "overflows");
  EXPECT_ERR(dmacclGather(s, d, quarter, dmacclInt8, 0, c, NULL), dmacclInvalidArgument, c,
             "overflows");
  EXPECT_ERR(dmacclScatter(s, d, SIZE_MAX / 8, dmacclFloat64, 0, c, NULL), dmacclInvalidArgument, c,
             "overflows");
  dmacclRequest_t req = NULL;
  EXPECT_ERR(dmacclReduceInit(s, d, half, dmacclFloat64, dmacclSum, 0, c, &req),
             dmacclInvalidArgument, c, "overflows");
  ASSERT_TRUE(req == NULL);
  return untouchedAndUsable();
}

/* AlltoAllv whose counts disagree: rank 0 sends 3 elements to rank 1, which
 * expects 2. Every call returns success. As the collective's own form
 * (pushb), the launch finds the disagreement, copies nothing, and each
 * rank's synchronize reports it once. As Send/Recv pairs (the default), the
 * pair's channel refuses its operation at the launch and copies nothing;
 * both ranks of the pair report it at their next synchronize (the host
 * executor's calls return before the launch; the CUDA executor's group end
 * would), naming both counts; the other pairs' blocks arrive. */
static int alltoallvDisagree(dmacclComm_t *cs, int pairs) {
  poison();
  size_t sc[N][N], sd[N][N], rc[N][N], rd[N][N];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      sc[i][j] = rc[i][j] = 2;
      sd[i][j] = rd[i][j] = 2 * (size_t)j;
    }
  sc[0][1] = 3, sd[0][2] = 5, sd[0][3] = 7; /* rank 1's recvcounts[0] stays 2 */
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(
        dmacclAlltoAllv(sendb[r], sc[r], sd[r], recvb[r], rc[r], rd[r], dmacclFloat32, cs[r], NULL),
        dmacclSuccess);
  if (!pairs) {
    ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
    for (int r = 0; r < N; r++) {
      ASSERT_EQ_INT(dmacclCommSynchronize(cs[r]), dmacclInvalidUsage);
      ASSERT_CONTAINS(dmacclCommGetLastError(cs[r]), "rank 0's sendcounts[1] is 3 but rank 1's "
                                                     "recvcounts[0] is 2");
    }
    for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(cs[r]), dmacclSuccess);
    return 0;
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    if (r > 1) {
      ASSERT_EQ_INT(dmacclCommSynchronize(cs[r]), dmacclSuccess);
      continue;
    }
    ASSERT_EQ_INT(dmacclCommSynchronize(cs[r]), dmacclInvalidUsage);
    ASSERT_CONTAINS(dmacclCommGetLastError(cs[r]), "Send/Recv from rank 0 to rank 1: operation ");
    ASSERT_CONTAINS(dmacclCommGetLastError(cs[r]),
                    "ranks disagree: rank 0 sends 3 of float to rank 1, which receives 2 of float; "
                    "nothing was copied");
  }
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(cs[r]), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int q = 0; q < N; q++) {
      const unsigned char *got = recvb[r] + rd[r][q] * 4, *want = sendb[q] + sd[q][r] * 4;
      if (q == 0 && r == 1) {
        for (int i = 0; i < 8; i++) ASSERT_EQ_INT(got[i], CC_POISON);
      } else if (memcmp(got, want, 8)) {
        TEST_FAIL("rank %d's block from rank %d did not arrive", r, q);
        return 1;
      }
    }
  return 0;
}

static int testAlltoallvDisagree(void) {
  dmacclComm_t own[N];
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "alltoallv:pairs";
  ASSERT_EQ_INT(dmacclCommInitAll(own, N, NULL, &cfg), dmacclSuccess);
  int bad = alltoallvDisagree(own, 1);
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommDestroy(own[r]), dmacclSuccess);
  ASSERT_EQ_INT(bad, 0);
  /* 4 ranks, eager: the built-in table's stagell; nothing may be written */
  ASSERT_EQ_INT(alltoallvDisagree(comms, 0), 0);
  return untouchedAndUsable();
}

/* dmacclRedOpCreatePreMulSum and dmacclRedOpDestroy: each bad argument
 * named, nothing made (*op untouched); an operator used with another
 * datatype, on another communicator or after its destroy is refused as a
 * bad op, nothing written; one made and destroyed inside a group before
 * dmacclGroupEnd still runs (what a call needs is kept at the call). */
static int testPremulArgs(void) {
  poison();
  dmacclComm_t c = comms[1];
  float half = 0.5f;
  dmacclRedOp_t op = (dmacclRedOp_t)-7;
  EXPECT_ERR(dmacclRedOpCreatePreMulSum(NULL, &half, dmacclFloat32, dmacclScalarHostImmediate, c),
             dmacclInvalidArgument, c, "op is NULL");
  EXPECT_ERR(dmacclRedOpCreatePreMulSum(&op, NULL, dmacclFloat32, dmacclScalarHostImmediate, c),
             dmacclInvalidArgument, c, "scalar is NULL");
  EXPECT_ERR(
      dmacclRedOpCreatePreMulSum(&op, &half, (dmacclDataType_t)12, dmacclScalarHostImmediate, c),
      dmacclInvalidArgument, c, "datatype 12");
  EXPECT_ERR(dmacclRedOpCreatePreMulSum(&op, &half, dmacclFloat32, (dmacclScalarResidence_t)2, c),
             dmacclInvalidArgument, c, "residence 2");
  ASSERT_EQ_INT(
      dmacclRedOpCreatePreMulSum(&op, &half, dmacclFloat32, dmacclScalarHostImmediate, NULL),
      dmacclInvalidArgument);
  ASSERT_EQ_INT((int)op, -7);
  EXPECT_ERR(dmacclRedOpDestroy(dmacclMax, c), dmacclInvalidArgument, c, "built-in");
  EXPECT_ERR(dmacclRedOpDestroy((dmacclRedOp_t)1000, c), dmacclInvalidArgument, c,
             "op 1000 is not an operator of this communicator");
  ASSERT_EQ_INT(dmacclRedOpCreatePreMulSum(&op, &half, dmacclFloat32, dmacclScalarHostImmediate, c),
                dmacclSuccess);
  ASSERT_TRUE((unsigned)op >= dmacclNumOps);
  void *sb = sendb[1], *rb = recvb[1];
  /* another datatype, another communicator's operator */
  EXPECT_ERR(dmacclAllReduce(sb, rb, COUNT, dmacclBfloat16, op, c, NULL), dmacclInvalidArgument, c,
             "is a premultiplied sum of float, the call's datatype is bfloat16");
  /* comms[2] has an operator of its own (a value of its own too) */
  dmacclRedOp_t other;
  ASSERT_EQ_INT(
      dmacclRedOpCreatePreMulSum(&other, &half, dmacclFloat32, dmacclScalarHostImmediate, comms[2]),
      dmacclSuccess);
  ASSERT_TRUE(other != op);
  EXPECT_ERR(dmacclReduce(sendb[2], recvb[2], COUNT, dmacclFloat32, op, 0, comms[2], NULL),
             dmacclInvalidArgument, comms[2], "nor an operator of this communicator's");
  EXPECT_ERR(dmacclRedOpDestroy(op, comms[2]), dmacclInvalidArgument, comms[2],
             "not an operator of this communicator");
  ASSERT_EQ_INT(dmacclRedOpDestroy(other, comms[2]), dmacclSuccess);
  dmacclRequest_t req = NULL;
  EXPECT_ERR(dmacclReduceScatterInit(sb, rb, COUNT / N, dmacclInt32, op, c, &req),
             dmacclInvalidArgument, c, "premultiplied sum of float,");
  ASSERT_TRUE(req == NULL);
  EXPECT_ERR(dmacclRedOpDestroy(op, comms[0]), dmacclInvalidArgument, comms[0],
             "not an operator of this communicator");
  ASSERT_EQ_INT(dmacclRedOpDestroy(op, c), dmacclSuccess);
  /* destroyed: neither usable nor destroyed twice, also once another
   * operator took its slot */
  float quarter = 0.25f;
  dmacclRedOp_t next;
  ASSERT_EQ_INT(
      dmacclRedOpCreatePreMulSum(&next, &quarter, dmacclFloat32, dmacclScalarHostImmediate, c),
      dmacclSuccess);
  ASSERT_TRUE(next != op);
  EXPECT_ERR(dmacclAllReduce(sb, rb, COUNT, dmacclFloat32, op, c, NULL), dmacclInvalidArgument, c,
             "destroyed?");
  EXPECT_ERR(dmacclRedOpDestroy(op, c), dmacclInvalidArgument, c, "destroyed already");
  ASSERT_EQ_INT(dmacclRedOpDestroy(next, c), dmacclSuccess);
  if (untouchedAndUsable()) return 1;
  /* made and destroyed by each rank inside the group, before its end
   * (collIssue's premultiplied sum): the calls keep the scalar */
  ccCase cs = {COLL_ALLREDUCE, dmacclBfloat16, COLL_PREMULSUM, 333, 0, 0, 0, 0, 4242, NULL, 0};
  ccOp *o = ccOpNew(&env, N, &cs);
  ASSERT_TRUE(o != NULL);
  ASSERT_EQ_INT(ccOpFill(o, 4242), 0);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(ccOpIssue(o, comms, r), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  ASSERT_EQ_INT(ccWait(&env, comms, N), dmacclSuccess);
  long long bad = ccOpCheck(o);
  ccOpFree(o);
  return bad != 0;
}

/* Ranks that pass different immediate scalars disagree about the
 * operation: every rank's next synchronize names both, and the set stays
 * usable. Equal scalars of both residences run. */
static int testPremulDisagree(void) {
  poison();
  float v[N] = {0.5f, 0.5f, 0.25f, 0.5f};
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    dmacclRedOp_t pre;
    ASSERT_EQ_INT(
        dmacclRedOpCreatePreMulSum(&pre, &v[r], dmacclFloat32, dmacclScalarHostImmediate, comms[r]),
        dmacclSuccess);
    ASSERT_EQ_INT(dmacclAllReduce(sendb[r], recvb[r], COUNT, dmacclFloat32, pre, comms[r], NULL),
                  dmacclSuccess);
    ASSERT_EQ_INT(dmacclRedOpDestroy(pre, comms[r]), dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclInvalidUsage);
    ASSERT_CONTAINS(dmacclCommGetLastError(comms[r]),
                    "with a premultiplied sum by 0.5, rank 2 by 0.25 (every rank must pass the "
                    "same scalar)");
  }
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  if (untouchedAndUsable()) return 1;
  /* mixed residences are not compared (a device scalar's value is not
   * known at the call): ranks 0 and 1 pass 0.5 immediately, ranks 2 and 3
   * in memory; the result is the sum times 0.5 */
  float in[N][COUNT], out[N][COUNT], half = 0.5f;
  for (int r = 0; r < N; r++)
    for (int i = 0; i < COUNT; i++) in[r][i] = (float)((r + 1) * (i % 5)), out[r][i] = -1.0f;
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    dmacclRedOp_t pre;
    ASSERT_EQ_INT(dmacclRedOpCreatePreMulSum(&pre, &half, dmacclFloat32,
                                             r < 2 ? dmacclScalarHostImmediate : dmacclScalarDevice,
                                             comms[r]),
                  dmacclSuccess);
    ASSERT_EQ_INT(dmacclAllReduce(in[r], out[r], COUNT, dmacclFloat32, pre, comms[r], NULL),
                  dmacclSuccess);
    ASSERT_EQ_INT(dmacclRedOpDestroy(pre, comms[r]), dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < COUNT; i++) ASSERT_TRUE(out[r][i] == (float)(10 * (i % 5)) * 0.5f);
  return 0;
}

/* A call that fails inside a group is not recorded; the group still issues
 * the others, which run correctly. */
/* A call refused inside a group fails the group, as in NCCL: the outermost
 * dmacclGroupEnd returns the first failure and issues none of the group's
 * calls, so nothing is written and no rank's later calls meet a stale one.
 * Before, the other calls went out: a retried AllReduce met rank 0's stale
 * one (a wrong sum, success returned), and a Send whose Recv was refused met
 * the next group's Recv. */
static int testFailInGroup(void) {
  poison();
  float *in[N], *out[N];
  for (int r = 0; r < N; r++) in[r] = (float *)sendb[r], out[r] = (float *)recvb[r];
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    if (r == 1)
      EXPECT_ERR(dmacclAllReduce(in[r], out[r], 8, dmacclFloat32, (dmacclRedOp_t)9, comms[r], NULL),
                 dmacclInvalidArgument, comms[r], "op 9");
    else
      ASSERT_EQ_INT(dmacclAllReduce(in[r], out[r], 8, dmacclFloat32, dmacclSum, comms[r], NULL),
                    dmacclSuccess);
  }
  EXPECT_ERR(dmacclBroadcast(in[2], out[2], 8, dmacclFloat16, -3, comms[2], NULL),
             dmacclInvalidArgument, comms[2], "root -3");
  EXPECT_ERR(dmacclGroupEnd(), dmacclInvalidArgument, NULL,
             "dmacclGroupEnd: a call inside the group failed, so none of its calls was issued or "
             "made (the first failure: dmacclAllReduce: op 9");
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  ASSERT_EQ_INT(untouchedAndUsable(), 0);
  /* the retry, every rank's call good: every rank's sum of this data */
  poison();
  for (int r = 0; r < N; r++)
    for (int i = 0; i < 8; i++) in[r][i] = (float)(10 * (r + 1) + i);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(dmacclAllReduce(in[r], out[r], 8, dmacclFloat32, dmacclSum, comms[r], NULL),
                  dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  ASSERT_EQ_INT(ccWait(&env, comms, N), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < 8; i++) ASSERT_TRUE(out[r][i] == (float)(100 + 4 * i));
  /* a ring of Send/Recv with one Recv refused: no Send goes out; the next
   * ring's Recvs get the next ring's data */
  poison();
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ_INT(dmacclSend(in[r], 8, dmacclFloat32, (r + 1) % N, comms[r], NULL), dmacclSuccess);
    if (r == 3)
      EXPECT_ERR(dmacclRecv(out[r], 8, (dmacclDataType_t)42, (r + N - 1) % N, comms[r], NULL),
                 dmacclInvalidArgument, comms[r], "datatype 42");
    else
      ASSERT_EQ_INT(dmacclRecv(out[r], 8, dmacclFloat32, (r + N - 1) % N, comms[r], NULL),
                    dmacclSuccess);
  }
  EXPECT_ERR(dmacclGroupEnd(), dmacclInvalidArgument, NULL, "dmacclRecv: datatype 42");
  for (int r = 0; r < N; r++)
    for (int i = 0; i < 8; i++) in[r][i] = (float)(1000 * (r + 1) + i);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ_INT(dmacclSend(in[r], 8, dmacclFloat32, (r + 1) % N, comms[r], NULL), dmacclSuccess);
    ASSERT_EQ_INT(dmacclRecv(out[r], 8, dmacclFloat32, (r + N - 1) % N, comms[r], NULL),
                  dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  ASSERT_EQ_INT(ccWait(&env, comms, N), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int i = 0; i < 8; i++) ASSERT_TRUE(out[r][i] == (float)(1000 * ((r + N - 1) % N + 1) + i));
  /* a nested group fails at its outermost end; a dropped group clears the
   * failure, and the next group issues */
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  EXPECT_ERR(dmacclAllReduce(in[0], out[0], 8, dmacclFloat32, (dmacclRedOp_t)9, comms[0], NULL),
             dmacclInvalidArgument, comms[0], "op 9");
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess); /* inner */
  EXPECT_ERR(dmacclGroupEnd(), dmacclInvalidArgument, NULL, "op 9");
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  EXPECT_ERR(dmacclAllReduce(in[0], out[0], 8, dmacclFloat32, (dmacclRedOp_t)9, comms[0], NULL),
             dmacclInvalidArgument, comms[0], "op 9");
  ASSERT_EQ_INT(dmacclGroupDrop(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  poison();
  return untouchedAndUsable();
}

/* The sendrecv row where the library refuses it: on a set of one rank the
 * ring's peer is the rank itself, which a persistent request cannot be (the
 * eager form, a Send and a Recv to itself in one group, is a copy); with a
 * bad datatype the Send fails. Either way collIssue returns the Send's
 * error, makes no Recv (nothing is left recorded in its group to run
 * later), leaves no request alive and writes nothing; the 4-rank set still
 * runs correct collectives afterwards. */
static int testSendRecvRefused(void) {
  poison();
  dmacclComm_t one;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  ASSERT_EQ_INT(dmacclCommInitAll(&one, 1, NULL, &cfg), dmacclSuccess);
  ASSERT_EQ_INT(collMinRanks(COLL_SENDRECV), 2);
  collShape s1 = {.nranks = 1, .count = COUNT};
  dmacclRequest_t req[COLL_MAX_REQUESTS];
  ASSERT_EQ_INT(collIssue(COLL_SENDRECV, &s1, 0, sendb[0], recvb[0], dmacclFloat32, dmacclSum, one,
                          NULL, NULL),
                dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommSynchronize(one), dmacclSuccess);
  ASSERT_TRUE(memcmp(recvb[0], sendb[0], COUNT * sizeof(float)) == 0);
  ASSERT_TRUE(recvb[0][COUNT * sizeof(float)] == CC_POISON); /* and nothing past it */
  poison();
  req[0] = req[1] = (dmacclRequest_t)&s1; /* garbage: collIssue must clear both */
  EXPECT_ERR(collIssue(COLL_SENDRECV, &s1, 0, sendb[0], recvb[0], dmacclFloat32, dmacclSum, one,
                       NULL, req),
             dmacclInvalidArgument, one, "peer 0 is this rank itself");
  ASSERT_TRUE(req[0] == NULL && req[1] == NULL);
  ASSERT_EQ_INT(dmacclCommSynchronize(one), dmacclSuccess); /* nothing was recorded */
  ASSERT_EQ_INT(dmacclCommDestroy(one), dmacclSuccess);
  /* a bad datatype on every rank of the 4-rank set, in one group */
  collShape s4 = {.nranks = N, .count = COUNT / N};
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++)
    EXPECT_ERR(collIssue(COLL_SENDRECV, &s4, r, sendb[r], recvb[r],
                         (dmacclDataType_t)dmacclNumTypes, dmacclSum, comms[r], NULL, NULL),
               dmacclInvalidArgument, comms[r], "is not a dmacclDataType_t");
  EXPECT_ERR(dmacclGroupEnd(), dmacclInvalidArgument, NULL, "is not a dmacclDataType_t");
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  req[0] = req[1] = NULL;
  EXPECT_ERR(collIssue(COLL_SENDRECV, &s4, 2, sendb[2], recvb[2], (dmacclDataType_t)-1, dmacclSum,
                       comms[2], NULL, req),
             dmacclInvalidArgument, comms[2], "dmacclSendInit: datatype -1");
  ASSERT_TRUE(req[0] == NULL && req[1] == NULL);
  return untouchedAndUsable();
}

/* An algorithm a collective does not take fails the communicator's creation
 * with a message naming it; nothing is created. */
static int testAlgorithmRefused(void) {
  const char *bad[][2] = {
      {"allreduce:pushb", "pushb"},          {"reducescatter:pullb", "pullb"},
      {"alltoallv:stage", "stage"},          {"alltoallv:pull1", "pull1"},
      {"reducescatterv:stage2d", "stage2d"}, {"reduce:0-1K:stage,1K-inf:pushn", "pushn"},
      {"allreducex:stage", "allreducex"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    dmacclComm_t c[2] = {NULL, NULL};
    dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
    cfg.executor = dmacclExecutorHost;
    cfg.algorithm = bad[i][0];
    EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL, bad[i][1]);
    ASSERT_CONTAINS(dmacclCommGetLastError(NULL), "config->algorithm");
    ASSERT_TRUE(c[0] == NULL && c[1] == NULL);
  }
  return 0;
}

/* The ...Notify calls' arrival words: NULL, misaligned, overlapping either
 * buffer; no word and no byte is written, and the communicator works. */
static int testArrivalWords(void) {
  poison();
  evenLayout();
  dmacclComm_t c = comms[1];
  float *s = (float *)sendb[1], *d = (float *)recvb[1];
  uint32_t words[N + 2];
  for (int i = 0; i < N + 2; i++) words[i] = 0xC0FFEE00u + (uint32_t)i;
  EXPECT_ERR(dmacclAllGatherNotify(s, d, 4, dmacclFloat32, NULL, 7, c, NULL), dmacclInvalidArgument,
             c, "dmacclAllGatherNotify: arrived is NULL (it needs 4");
  EXPECT_ERR(dmacclAllGatherVNotify(s, d, counts, displs, dmacclFloat32, NULL, 7, c, NULL),
             dmacclInvalidArgument, c, "dmacclAllGatherVNotify: arrived is NULL");
  EXPECT_ERR(
      dmacclAllGatherNotify(s, d, 4, dmacclFloat32, (uint32_t *)((char *)words + 2), 7, c, NULL),
      dmacclInvalidArgument, c, "is not 4-byte aligned");
  EXPECT_ERR(dmacclAllGatherNotify(s, d, 4, dmacclFloat32, (uint32_t *)(d + 8), 7, c, NULL),
             dmacclInvalidArgument, c, "overlaps recvbuff");
  EXPECT_ERR(dmacclAllGatherNotify(s, d, 4, dmacclFloat32, (uint32_t *)s, 7, c, NULL),
             dmacclInvalidArgument, c, "overlaps sendbuff");
  EXPECT_ERR(dmacclAllGatherVNotify(s, d, NULL, displs, dmacclFloat32, words + 1, 7, c, NULL),
             dmacclInvalidArgument, c, "dmacclAllGatherVNotify: counts is NULL");
  /* the other checks still come first: a bad datatype is named as such */
  EXPECT_ERR(dmacclAllGatherNotify(s, d, 4, (dmacclDataType_t)99, words + 1, 7, c, NULL),
             dmacclInvalidArgument, c, "datatype 99");
  for (int i = 0; i < N + 2; i++) ASSERT_EQ_INT(words[i], 0xC0FFEE00u + (uint32_t)i);
  return untouchedAndUsable();
}

/* dmacclStreamWaitArrival: bad arguments are named and leave the words
 * alone; then every rank's wait for every block returns once that block is
 * there (host executor: the waiting thread reads the block right after). */
static int testWaitArrival(void) {
  poison();
  dmacclComm_t c = comms[1];
  uint32_t words[N + 2];
  for (int i = 0; i < N + 2; i++) words[i] = 0xC0FFEE00u + (uint32_t)i;
  EXPECT_ERR(dmacclStreamWaitArrival(NULL, 0, 7, c, NULL), dmacclInvalidArgument, c,
             "dmacclStreamWaitArrival: arrived is NULL");
  EXPECT_ERR(dmacclStreamWaitArrival((uint32_t *)((char *)words + 2), 0, 7, c, NULL),
             dmacclInvalidArgument, c, "is not 4-byte aligned");
  EXPECT_ERR(dmacclStreamWaitArrival(words, -1, 7, c, NULL), dmacclInvalidArgument, c,
             "rank -1 is not a rank of the communicator (0 to 3)");
  EXPECT_ERR(dmacclStreamWaitArrival(words, N, 7, c, NULL), dmacclInvalidArgument, c,
             "rank 4 is not a rank");
  EXPECT_ERR(dmacclStreamWaitArrival(words, 0, 7, c, (cudaStream_t)0x10), dmacclInvalidArgument, c,
             "stream");
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  EXPECT_ERR(dmacclStreamWaitArrival(words, 0, 7, c, NULL), dmacclInvalidUsage, c,
             "inside a group");
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int i = 0; i < N + 2; i++) ASSERT_EQ_INT(words[i], 0xC0FFEE00u + (uint32_t)i);
  /* a word that holds the value already: returns at once */
  ASSERT_EQ_INT(dmacclStreamWaitArrival(words, 2, 0xC0FFEE02u, c, NULL), dmacclSuccess);

  uint32_t w[N][N];
  memset(w, 0, sizeof(w));
  size_t blk = 16 * sizeof(float);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(
        dmacclAllGatherNotify(sendb[r], recvb[r], 16, dmacclFloat32, w[r], 41, comms[r], NULL),
        dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int p = N - 1; p >= 0; p--) {
      ASSERT_EQ_INT(dmacclStreamWaitArrival(w[r], p, 41, comms[r], NULL), dmacclSuccess);
      ASSERT_TRUE(memcmp(recvb[r] + (size_t)p * blk, sendb[p], blk) == 0);
    }
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  /* ranks that disagree (rank 1's count differs): the operation stores
   * nothing, and the wait says so instead of waiting for ever */
  memset(w, 0, sizeof(w));
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(dmacclAllGatherNotify(sendb[r], recvb[r], r == 1 ? 8 : 16, dmacclFloat32, w[r],
                                        43, comms[r], NULL),
                  dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  dmacclResult_t got = dmacclStreamWaitArrival(w[0], 1, 43, comms[0], NULL);
  ASSERT_TRUE(got != dmacclSuccess);
  ASSERT_CONTAINS(dmacclCommGetLastError(comms[0]), "dmacclStreamWaitArrival");
  for (int r = 0; r < N; r++) (void)dmacclCommSynchronize(comms[r]); /* reports it once */
  poison();
  return untouchedAndUsable();
}

int main(void) {
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  if (dmacclCommInitAll(comms, N, NULL, &cfg) != dmacclSuccess) {
    fprintf(stderr, "init: %s\n", dmacclCommGetLastError(NULL));
    return 1;
  }
  ccEnvInit(&env, 0, comms, N);
  for (int r = 0; r < N; r++) {
    sendb[r] = malloc(BYTES);
    recvb[r] = malloc(BYTES);
  }
  RUN(testNullArrays);
  RUN(testOverlappingBlocks);
  RUN(testBlocksPastTheEnd);
  RUN(testRootOutOfRange);
  RUN(testBadOp);
  RUN(testBadDatatype);
  RUN(testNotInPlace);
  RUN(testCountOverflow);
  RUN(testAlltoallvDisagree);
  RUN(testPremulArgs);
  RUN(testPremulDisagree);
  RUN(testFailInGroup);
  RUN(testSendRecvRefused);
  RUN(testAlgorithmRefused);
  RUN(testArrivalWords);
  RUN(testWaitArrival);
  for (int r = 0; r < N; r++) {
    free(sendb[r]);
    free(recvb[r]);
    dmacclCommDestroy(comms[r]);
  }
  TEST_EXIT();
}
