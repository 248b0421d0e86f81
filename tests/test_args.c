/*
 * Bad input on the host executor (what CI can run): every public call
 * returns a specific code and a message that names the argument, nothing is
 * written, and the communicator still runs a correct collective afterwards.
 * The GPU-only cases (memory of the wrong kind or GPU, a stream of another
 * GPU, a buffer smaller than the count) are in test_gpu_args.c.
 */
#include "collcheck.h"
#include "harness.h"
#include "plan.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* Internal (src/core/param.c): a parameter in seconds, checked. */
double coreParamSeconds(const char *name, double fallback, int zeroMeansOff);
/* Internal (src/core/param.c): DMACCL_KERNEL_WAIT under a CTA policy. */
int coreKernelWaitParam(int ctaPolicy);
/* Internal (src/core/comm.c): the selection table a communicator gets. */
dmacclResult_t coreBuildTable(const dmacclConfig_t *config, planTable *t, const char *call,
                              int nranks, char *note, size_t notelen);

#define N 4
#define COUNT 64
static dmacclComm_t comms[N];
static ccEnv env;
static float *sendb[N], *recvb[N];

static void poison(void) {
  for (int r = 0; r < N; r++) {
    testFillRandom(sendb[r], COUNT * N * sizeof(float), 55 + (uint64_t)r);
    memset(recvb[r], CC_POISON, COUNT * N * sizeof(float));
  }
}

/* Nothing was written and a real collective still works on the same comms. */
static int untouchedAndUsable(void) {
  for (int r = 0; r < N; r++) {
    unsigned char *p = (unsigned char *)recvb[r];
    for (size_t i = 0; i < COUNT * N * sizeof(float); i++)
      if (p[i] != CC_POISON) {
        TEST_FAIL("rank %d recvbuff byte %zu written by a failed call", r, i);
        return 1;
      }
    float check[COUNT * N];
    testFillRandom(check, sizeof(check), 55 + (uint64_t)r);
    ASSERT_TRUE(memcmp(check, sendb[r], sizeof(check)) == 0);
  }
  ASSERT_EQ_INT(ccRun(&env, comms, N, COLL_ALLGATHER, dmacclFloat32, 1001, 0, 31337), 0);
  ASSERT_EQ_INT(ccRun(&env, comms, N, COLL_ALLTOALL, dmacclFloat32, 1001, 0, 31338), 0);
  return 0;
}

static int testNullComm(void) {
  poison();
  EXPECT_ERR(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, NULL, NULL),
             dmacclInvalidArgument, NULL, "comm is NULL");
  EXPECT_ERR(dmacclAlltoAll(sendb[0], recvb[0], COUNT, dmacclFloat32, NULL, NULL),
             dmacclInvalidArgument, NULL, "comm is NULL");
  return untouchedAndUsable();
}

static int testNullBuffers(void) {
  poison();
  EXPECT_ERR(dmacclAllGather(NULL, recvb[1], COUNT, dmacclFloat32, comms[1], NULL),
             dmacclInvalidArgument, comms[1], "sendbuff is NULL");
  EXPECT_ERR(dmacclAllGather(sendb[1], NULL, COUNT, dmacclFloat32, comms[1], NULL),
             dmacclInvalidArgument, comms[1], "recvbuff is NULL");
  EXPECT_ERR(dmacclAlltoAll(NULL, recvb[1], COUNT, dmacclFloat32, comms[1], NULL),
             dmacclInvalidArgument, comms[1], "sendbuff is NULL");
  if (untouchedAndUsable()) return 1;
  /* NULL is fine with count 0, and nothing is written. */
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++) {
    ASSERT_EQ_INT(dmacclAllGather(NULL, NULL, 0, dmacclFloat32, comms[r], NULL), dmacclSuccess);
    ASSERT_EQ_INT(dmacclAlltoAll(NULL, NULL, 0, dmacclFloat32, comms[r], NULL), dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  poison();
  return untouchedAndUsable();
}

static int testOverflow(void) {
  poison();
  EXPECT_ERR(dmacclAllGather(sendb[2], recvb[2], SIZE_MAX / 2, dmacclInt32, comms[2], NULL),
             dmacclInvalidArgument, comms[2], "sendcount 9223372036854775807 of int32");
  EXPECT_ERR(dmacclAlltoAll(sendb[2], recvb[2], SIZE_MAX / 4, dmacclUint8, comms[2], NULL),
             dmacclInvalidArgument, comms[2], "times 4 ranks overflows");
  return untouchedAndUsable();
}

static int testBadDatatype(void) {
  poison();
  EXPECT_ERR(dmacclAllGather(sendb[0], recvb[0], COUNT, (dmacclDataType_t)12, comms[0], NULL),
             dmacclInvalidArgument, comms[0], "datatype 12");
  EXPECT_ERR(dmacclAlltoAll(sendb[0], recvb[0], COUNT, (dmacclDataType_t)-1, comms[0], NULL),
             dmacclInvalidArgument, comms[0], "datatype -1");
  return untouchedAndUsable();
}

static int testInPlaceOffset(void) {
  poison();
  /* Rank 1's block is at recvb[1] + COUNT; recvb[1] + 3 is not it. */
  EXPECT_ERR(dmacclAllGather(recvb[1] + 3, recvb[1], COUNT, dmacclFloat32, comms[1], NULL),
             dmacclInvalidArgument, comms[1],
             "is not the in-place form, which needs sendbuff == recvbuff + 256 bytes");
  EXPECT_ERR(dmacclAllGather(recvb[1], recvb[1], COUNT, dmacclFloat32, comms[1], NULL),
             dmacclInvalidArgument, comms[1], "(rank 1)");
  EXPECT_ERR(dmacclAlltoAll(recvb[1], recvb[1], COUNT, dmacclFloat32, comms[1], NULL),
             dmacclInvalidArgument, comms[1], "AlltoAll does not run in place");
  return untouchedAndUsable();
}

static int testStreamOnHost(void) {
  poison();
  EXPECT_ERR(
      dmacclAllGather(sendb[3], recvb[3], COUNT, dmacclFloat32, comms[3], (cudaStream_t)0x10),
      dmacclInvalidArgument, comms[3], "stream 0x10");
  return untouchedAndUsable();
}

static int testSeveralRanksOutsideGroup(void) {
  poison();
  /* Rank 0 outside a group is fine; rank 1 from the same thread is not. */
  ASSERT_EQ_INT(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, comms[0], NULL),
                dmacclSuccess);
  EXPECT_ERR(dmacclAllGather(sendb[1], recvb[1], COUNT, dmacclFloat32, comms[1], NULL),
             dmacclInvalidUsage, comms[1], "dmacclGroupStart");
  /* Rank 1 issued nothing; completing the operation in a group works. */
  unsigned char *p = (unsigned char *)recvb[1];
  for (size_t i = 0; i < COUNT * N * sizeof(float); i++) ASSERT_EQ_INT(p[i], CC_POISON);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 1; r < N; r++)
    ASSERT_EQ_INT(dmacclAllGather(sendb[r], recvb[r], COUNT, dmacclFloat32, comms[r], NULL),
                  dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  for (int r = 0; r < N; r++)
    for (int f = 0; f < N; f++)
      ASSERT_TRUE(memcmp(recvb[r] + f * COUNT, sendb[f], COUNT * sizeof(float)) == 0);
  poison();
  return untouchedAndUsable();
}

static int testGroupMisuse(void) {
  EXPECT_ERR(dmacclGroupEnd(), dmacclInvalidUsage, NULL, "no group is open");
  dmacclComm_t more[2];
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  EXPECT_ERR(dmacclCommInitAll(more, 2, NULL, NULL), dmacclInvalidUsage, NULL, "inside a group");
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  /* Nested groups issue at the outermost end only. */
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  /* dmacclGroupDrop: no group, then a nested group of every rank's call
   * dropped at the outermost level (nothing written, no group left open),
   * and the same calls issued afterwards */
  EXPECT_ERR(dmacclGroupDrop(), dmacclInvalidUsage, NULL, "no group is open");
  poison();
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < N; r++)
    ASSERT_EQ_INT(dmacclAllGather(sendb[r], recvb[r], COUNT, dmacclFloat32, comms[r], NULL),
                  dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupDrop(), dmacclSuccess); /* inner: nothing dropped yet */
  ASSERT_EQ_INT(dmacclGroupDrop(), dmacclSuccess);
  EXPECT_ERR(dmacclGroupEnd(), dmacclInvalidUsage, NULL, "no group is open");
  for (int r = 0; r < N; r++) ASSERT_EQ_INT(dmacclCommSynchronize(comms[r]), dmacclSuccess);
  return untouchedAndUsable();
}

static int testInitArgs(void) {
  dmacclComm_t c[2] = {NULL, NULL};
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  EXPECT_ERR(dmacclCommInitAll(NULL, 2, NULL, &cfg), dmacclInvalidArgument, NULL, "comms is NULL");
  EXPECT_ERR(dmacclCommInitAll(c, 0, NULL, &cfg), dmacclInvalidArgument, NULL, "ndev 0");
  dmacclConfig_t raw;
  memset(&raw, 0, sizeof(raw));
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &raw), dmacclInvalidArgument, NULL,
             "DMACCL_CONFIG_INITIALIZER");
  cfg.algorithm = "allgather:push9";
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL,
             "config->algorithm: unknown algorithm 'push9'");
  cfg.algorithm = NULL;
  cfg.executor = (dmacclExecutor_t)7;
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL,
             "config->executor 7");
  dmacclConfig_t cuda = DMACCL_CONFIG_INITIALIZER;
  cuda.executor = dmacclExecutorCuda;
  int neg[2] = {0, -1};
  EXPECT_ERR(dmacclCommInitAll(c, 2, neg, &cuda), dmacclInvalidArgument, NULL,
             "devlist[1] = -1 is negative");
  cfg.executor = dmacclExecutorHost;
  setenv("DMACCL_ALGO", "alltoall:0-1K", 1);
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL, "DMACCL_ALGO");
  unsetenv("DMACCL_ALGO");
  cfg.executor = dmacclExecutorDefault;
  setenv("DMACCL_EXECUTOR", "fpga", 1);
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL,
             "DMACCL_EXECUTOR='fpga'");
  unsetenv("DMACCL_EXECUTOR");
  cfg.executor = dmacclExecutorHost;
  cfg.ctaPolicy = 3;
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL,
             "config->ctaPolicy 3 is not a dmacclCtaPolicy_t");
  cfg.ctaPolicy = -1;
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL,
             "config->ctaPolicy -1");
  cfg.ctaPolicy = DMACCL_CONFIG_UNDEF_INT;
  setenv("DMACCL_CTA_POLICY", "none", 1);
  EXPECT_ERR(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclInvalidArgument, NULL,
             "DMACCL_CTA_POLICY='none' is not default, efficiency or zero");
  unsetenv("DMACCL_CTA_POLICY");
  ASSERT_TRUE(c[0] == NULL && c[1] == NULL); /* nothing written on failure */
  return 0;
}

/* An AllGather and an AllReduce of random data on 2 host ranks made with cfg,
 * every output byte against the reference (collcheck), then destroyed. */
static int runPair(const dmacclConfig_t *cfg) {
  dmacclComm_t c[2] = {NULL, NULL};
  ASSERT_EQ_INT(dmacclCommInitAll(c, 2, NULL, cfg), dmacclSuccess);
  int rc = ccRun(&env, c, 2, COLL_ALLGATHER, dmacclFloat32, 1001, 0, 4242) ||
           ccRun(&env, c, 2, COLL_ALLREDUCE, dmacclBfloat16, 3001, 1, 4243);
  dmacclCommDestroy(c[0]);
  dmacclCommDestroy(c[1]);
  return rc;
}

/* The CTA policy's sources: the config where the caller's struct has the
 * field and sets it, else DMACCL_CTA_POLICY by name or number (any case),
 * else Default. Communicators of every policy run correct collectives (the
 * selection each makes is test_select's). */
static int testCtaPolicy(void) {
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  ASSERT_EQ_INT(cfg.ctaPolicy, DMACCL_CONFIG_UNDEF_INT);
  const char *names[] = {"zero", "Efficiency", "DEFAULT", "0", "1", "2"};
  for (int i = 0; i < 6; i++) {
    setenv("DMACCL_CTA_POLICY", names[i], 1);
    ASSERT_EQ_INT(runPair(&cfg), 0);
  }
  /* The config's value wins: the environment is not read. */
  setenv("DMACCL_CTA_POLICY", "none", 1);
  for (int p = dmacclCtaPolicyDefault; p <= dmacclCtaPolicyZero; p++) {
    cfg.ctaPolicy = p;
    ASSERT_EQ_INT(runPair(&cfg), 0);
  }
  /* What each policy makes of the table a communicator gets: zero moves a
   * 1 KB AllGather with copy engines and says so. */
  unsetenv("DMACCL_CTA_POLICY");
  const planAlgo ag1k[] = {PLAN_ALGO_STAGELL, PLAN_ALGO_STAGELL, PLAN_ALGO_STAGE};
  for (int p = dmacclCtaPolicyDefault; p <= dmacclCtaPolicyZero; p++) {
    planTable t;
    char note[256];
    cfg.ctaPolicy = p;
    ASSERT_EQ_INT(coreBuildTable(&cfg, &t, "test", 2, note, sizeof(note)), dmacclSuccess);
    ASSERT_EQ_INT(t.ctaPolicy, p);
    ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1024, NULL), ag1k[p]);
    ASSERT_TRUE((strstr(note, "CTA policy zero") != NULL) == (p == dmacclCtaPolicyZero));
  }
  /* Under zero a staged reduction's kernel waits on the stream, not by
   * polling with its blocks, unless DMACCL_KERNEL_WAIT is set. */
  unsetenv("DMACCL_KERNEL_WAIT");
  ASSERT_EQ_INT(coreKernelWaitParam(dmacclCtaPolicyDefault), 1);
  ASSERT_EQ_INT(coreKernelWaitParam(dmacclCtaPolicyEfficiency), 1);
  ASSERT_EQ_INT(coreKernelWaitParam(dmacclCtaPolicyZero), 0);
  setenv("DMACCL_KERNEL_WAIT", "1", 1);
  ASSERT_EQ_INT(coreKernelWaitParam(dmacclCtaPolicyZero), 1);
  unsetenv("DMACCL_KERNEL_WAIT");
  /* DMACCL_ALGO's stagell runs as named under zero. */
  setenv("DMACCL_ALGO", "allgather:stagell", 1);
  planTable t;
  char note[256];
  ASSERT_EQ_INT(coreBuildTable(&cfg, &t, "test", 2, note, sizeof(note)), dmacclSuccess);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1024, NULL), PLAN_ALGO_STAGELL);
  unsetenv("DMACCL_ALGO");
  /* A caller built against a header without the field: its struct ends
   * before ctaPolicy, so whatever lies there is not read. */
  cfg.ctaPolicy = 99;
  cfg.size = offsetof(dmacclConfig_t, ctaPolicy);
  unsetenv("DMACCL_CTA_POLICY");
  ASSERT_EQ_INT(runPair(&cfg), 0);
  return 0;
}

static int testQueries(void) {
  int v = -1;
  ASSERT_EQ_INT(dmacclCommCount(comms[2], &v), dmacclSuccess);
  ASSERT_EQ_INT(v, N);
  ASSERT_EQ_INT(dmacclCommUserRank(comms[2], &v), dmacclSuccess);
  ASSERT_EQ_INT(v, 2);
  ASSERT_EQ_INT(dmacclCommCuDevice(comms[2], &v), dmacclSuccess);
  ASSERT_EQ_INT(v, -1);
  ASSERT_EQ_INT(dmacclGetVersion(&v), dmacclSuccess);
  ASSERT_EQ_INT(v, DMACCL_VERSION_CODE);
  EXPECT_ERR(dmacclCommCount(comms[2], NULL), dmacclInvalidArgument, comms[2], "count is NULL");
  EXPECT_ERR(dmacclCommUserRank(NULL, &v), dmacclInvalidArgument, NULL, "comm is NULL");
  EXPECT_ERR(dmacclGetVersion(NULL), dmacclInvalidArgument, NULL, "version is NULL");
  ASSERT_CONTAINS(dmacclGetErrorString(dmacclInvalidArgument), "invalid argument");
  ASSERT_CONTAINS(dmacclGetErrorString((dmacclResult_t)99), "unknown");
  return 0;
}

static int testRanksDisagree(void) {
  dmacclComm_t c[2];
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  ASSERT_EQ_INT(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclSuccess);
  poison();
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], NULL),
                dmacclSuccess);
  ASSERT_EQ_INT(dmacclAllGather(sendb[1], recvb[1], COUNT + 1, dmacclFloat32, c[1], NULL),
                dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommSynchronize(c[0]), dmacclInvalidUsage);
  dmacclResult_t async;
  ASSERT_EQ_INT(dmacclCommGetAsyncError(c[1], &async), dmacclSuccess);
  ASSERT_EQ_INT(async, dmacclInvalidUsage);
  ASSERT_CONTAINS(dmacclCommGetLastError(c[1]), "ranks disagree");
  for (int r = 0; r < 2; r++) {
    unsigned char *p = (unsigned char *)recvb[r];
    for (size_t i = 0; i < COUNT * N * sizeof(float); i++) ASSERT_EQ_INT(p[i], CC_POISON);
  }
  dmacclCommDestroy(c[0]);
  dmacclCommDestroy(c[1]);
  return 0;
}

/* Two host communicators for the lifetime tests. */
static int pair(dmacclComm_t *c) {
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  ASSERT_EQ_INT(dmacclCommInitAll(c, 2, NULL, &cfg), dmacclSuccess);
  return 0;
}

static void *destroyOther(void *comm) {
  dmacclCommDestroy((dmacclComm_t)comm);
  return NULL;
}

/* Issue 20, item 3: destroyed handles are refused, never dereferenced (run
 * under ASan in CI: a use after free would fail there). */
static int testDestroyedHandles(void) {
  dmacclComm_t c[2];
  if (pair(c)) return 1;
  dmacclRequest_t req = NULL, req2 = NULL;
  ASSERT_EQ_INT(dmacclAllGatherInit(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], &req),
                dmacclSuccess);
  ASSERT_EQ_INT(dmacclAllGatherInit(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], &req2),
                dmacclSuccess);
  /* Destroy inside this thread's group that holds a call on the comm: refused. */
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], NULL),
                dmacclSuccess);
  ASSERT_EQ_INT(dmacclAllGather(sendb[1], recvb[1], COUNT, dmacclFloat32, c[1], NULL),
                dmacclSuccess);
  EXPECT_ERR(dmacclCommDestroy(c[0]), dmacclInvalidUsage, c[0], "end the group first");
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < 2; r++) ASSERT_EQ_INT(dmacclCommSynchronize(c[r]), dmacclSuccess);
  for (int r = 0; r < 2; r++) ASSERT_EQ_INT(dmacclCommDestroy(c[r]), dmacclSuccess);
  /* Every call on a destroyed comm: InvalidArgument naming it. */
  EXPECT_ERR(dmacclCommDestroy(c[0]), dmacclInvalidArgument, NULL, "not a live communicator");
  EXPECT_ERR(dmacclCommAbort(c[1]), dmacclInvalidArgument, NULL, "not a live communicator");
  EXPECT_ERR(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], NULL),
             dmacclInvalidArgument, NULL, "not a live communicator");
  EXPECT_ERR(dmacclCommSynchronize(c[1]), dmacclInvalidArgument, NULL, "not a live communicator");
  int v = 0;
  EXPECT_ERR(dmacclCommCount(c[0], &v), dmacclInvalidArgument, NULL, "not a live communicator");
  void *p = NULL;
  EXPECT_ERR(dmacclMemAlloc(c[0], 64, &p), dmacclInvalidArgument, NULL, "not a live communicator");
  dmacclResult_t a;
  EXPECT_ERR(dmacclCommGetAsyncError(c[0], &a), dmacclInvalidArgument, NULL, "not a live");
  ASSERT_CONTAINS(dmacclCommGetLastError(c[0]), "not a live communicator");
  /* A request whose comm is gone: start refused, free still works, once. */
  EXPECT_ERR(dmacclStart(req, NULL), dmacclInvalidUsage, NULL, "was destroyed");
  ASSERT_EQ_INT(dmacclRequestFree(req), dmacclSuccess);
  EXPECT_ERR(dmacclRequestFree(req), dmacclInvalidArgument, NULL, "not a live request");
  EXPECT_ERR(dmacclStart(req, NULL), dmacclInvalidArgument, NULL, "not a live request");
  ASSERT_EQ_INT(dmacclRequestFree(req2), dmacclSuccess);
  /* A group recorded on a comm that another thread destroys before the end:
   * that call fails, the others are issued, the group's end returns. */
  if (pair(c)) return 1;
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], NULL),
                dmacclSuccess);
  ASSERT_EQ_INT(dmacclAllGather(sendb[1], recvb[1], COUNT, dmacclFloat32, c[1], NULL),
                dmacclSuccess);
  pthread_t t;
  ASSERT_EQ_INT(pthread_create(&t, NULL, destroyOther, c[0]), 0);
  pthread_join(t, NULL);
  EXPECT_ERR(dmacclGroupEnd(), dmacclInvalidArgument, NULL, "not a live communicator");
  ASSERT_EQ_INT(dmacclCommAbort(c[1]), dmacclSuccess); /* its peer is gone */
  return 0;
}

typedef struct {
  dmacclComm_t comm;
  useconds_t after;
} abortArg;

static void *abortLater(void *arg) {
  abortArg *a = arg;
  usleep(a->after);
  dmacclCommAbort(a->comm);
  return NULL;
}

/* Issue 20, item 4: abort from another thread while a synchronize waits for
 * a rank that never calls: the synchronize returns an error, not success,
 * and nothing is freed under it (ASan in CI). */
static int testAbortWhileWaiting(void) {
  dmacclComm_t c[2];
  if (pair(c)) return 1;
  ASSERT_EQ_INT(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], NULL),
                dmacclSuccess);
  pthread_t t;
  abortArg a = {c[0], 200000};
  ASSERT_EQ_INT(pthread_create(&t, NULL, abortLater, &a), 0);
  dmacclResult_t rc = dmacclCommSynchronize(c[0]); /* rank 1 never calls */
  pthread_join(t, NULL);
  ASSERT_EQ_INT(rc, dmacclInvalidUsage);
  ASSERT_CONTAINS(dmacclCommGetLastError(NULL), "aborted");
  EXPECT_ERR(dmacclCommSynchronize(c[0]), dmacclInvalidArgument, NULL, "not a live");
  ASSERT_EQ_INT(dmacclCommAbort(c[1]), dmacclSuccess);
  return 0;
}

/* Issue 20, item 5: a one-process set has a watchdog too: with rank 1 never
 * calling, rank 0's synchronize returns dmacclTimeout naming rank 1 after
 * DMACCL_TIMEOUT, and destroy returns. */
static int testOneProcessTimeout(void) {
  setenv("DMACCL_TIMEOUT", "1", 1);
  dmacclComm_t c[2];
  int bad = pair(c);
  unsetenv("DMACCL_TIMEOUT");
  if (bad) return 1;
  ASSERT_EQ_INT(dmacclAllGather(sendb[0], recvb[0], COUNT, dmacclFloat32, c[0], NULL),
                dmacclSuccess);
  EXPECT_ERR(dmacclCommSynchronize(c[0]), dmacclTimeout, c[0], "rank(s) 1 to call it");
  dmacclResult_t async = dmacclSuccess;
  ASSERT_EQ_INT(dmacclCommGetAsyncError(c[1], &async), dmacclSuccess);
  ASSERT_EQ_INT(async, dmacclTimeout); /* the whole set is broken */
  ASSERT_EQ_INT(dmacclCommDestroy(c[0]), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommDestroy(c[1]), dmacclSuccess);
  return 0;
}

/* Issue 20, item 7: timeouts that are not numbers are refused. */
static int testSecondsParams(void) {
  const char *bad[] = {"nan", "inf", "-1", "abc", "", "1e300", "3x"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("DMACCL_INIT_TIMEOUT", bad[i], 1);
    ASSERT_TRUE(coreParamSeconds("DMACCL_INIT_TIMEOUT", 60, 0) == 60);
  }
  setenv("DMACCL_INIT_TIMEOUT", "0", 1);
  ASSERT_TRUE(coreParamSeconds("DMACCL_INIT_TIMEOUT", 60, 0) == 60);
  ASSERT_TRUE(coreParamSeconds("DMACCL_INIT_TIMEOUT", 60, 1) == 0);
  setenv("DMACCL_INIT_TIMEOUT", "2.5", 1);
  ASSERT_TRUE(coreParamSeconds("DMACCL_INIT_TIMEOUT", 60, 0) == 2.5);
  unsetenv("DMACCL_INIT_TIMEOUT");
  return 0;
}

/* Issue 20, item 9: a count past the end of a dmacclMemAlloc allocation is
 * refused before anything is written. */
static int testCountPastAllocation(void) {
  poison();
  char *a = NULL, *b = NULL;
  ASSERT_EQ_INT(dmacclMemAlloc(comms[0], 1000, (void **)&a), dmacclSuccess);
  ASSERT_EQ_INT(dmacclMemAlloc(comms[0], 4000 * N, (void **)&b), dmacclSuccess);
  EXPECT_ERR(dmacclAllGather(a, b, 1001, dmacclUint8, comms[0], NULL), dmacclInvalidArgument,
             comms[0], "allocation ends 1000 bytes after it");
  EXPECT_ERR(dmacclAllGather(b, a + 10, 250, dmacclUint8, comms[0], NULL), dmacclInvalidArgument,
             comms[0], "recvbuff");
  ASSERT_EQ_INT(dmacclMemFree(comms[0], a), dmacclSuccess);
  ASSERT_EQ_INT(dmacclMemFree(comms[0], b), dmacclSuccess);
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
    sendb[r] = malloc(COUNT * N * sizeof(float));
    recvb[r] = malloc(COUNT * N * sizeof(float));
  }
  RUN(testNullComm);
  RUN(testNullBuffers);
  RUN(testOverflow);
  RUN(testBadDatatype);
  RUN(testInPlaceOffset);
  RUN(testStreamOnHost);
  RUN(testSeveralRanksOutsideGroup);
  RUN(testGroupMisuse);
  RUN(testInitArgs);
  RUN(testCtaPolicy);
  RUN(testQueries);
  RUN(testRanksDisagree);
  RUN(testDestroyedHandles);
  RUN(testAbortWhileWaiting);
  RUN(testOneProcessTimeout);
  RUN(testSecondsParams);
  RUN(testCountPastAllocation);
  for (int r = 0; r < N; r++) {
    dmacclCommDestroy(comms[r]);
    free(sendb[r]);
    free(recvb[r]);
  }
  TEST_EXIT();
}
