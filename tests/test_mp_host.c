/*
 * Ranks as processes on the host executor (CI, no GPU): bootstrap and its
 * errors, collectives over dmacclMemAlloc shared memory for every algorithm,
 * registration bookkeeping, flow control past the board depth, ranks that
 * disagree, the watchdog, a rank killed mid-run, and abort.
 */
#include "harness.h"
#include "mp.h"

#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../src/core/core.h" /* white box: coreLogLevelReload */

static const char *algos[] = {"push1", "pushn", "pushb", "pull1",
                              "pulln", "pullb", "stage", "stage2d"};

/* Host executor; algo (one name for both collectives) or NULL for the defaults. */
static dmacclConfig_t hostConfig(const char *algo) {
  static char table[64];
  dmacclConfig_t c = DMACCL_CONFIG_INITIALIZER;
  c.executor = dmacclExecutorHost;
  if (algo) {
    snprintf(table, sizeof(table), "allgather:%s;alltoall:%s", algo, algo);
    c.algorithm = table;
  }
  return c;
}

/* A rank of a default host communicator with two dmacclMemAlloc buffers. */
static int openRank(int rank, int n, const dmacclUniqueId *id, size_t bytes, dmacclComm_t *comm,
                    char **send, char **recv) {
  dmacclConfig_t cfg = hostConfig(NULL);
  RANK_CHECK(dmacclCommInitRank(comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(*comm, bytes, (void **)send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(*comm, bytes, (void **)recv) == dmacclSuccess);
  return 0;
}

/* openRank's undoing: both buffers freed, the communicator destroyed. */
static int closeRank(int rank, dmacclComm_t comm, char *send, char *recv) {
  RANK_CHECK(dmacclMemFree(comm, send) == dmacclSuccess);
  RANK_CHECK(dmacclMemFree(comm, recv) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

/* --- bootstrap errors --------------------------------------------------- */

typedef struct {
  int nranks[8], rankOf[8], expect;
  const char *needle;
  int lateMayTimeout; /* a rank arriving after rank 0 refused may time out or see it closed */
} initCase;

static int initBody(int r, int n, const dmacclUniqueId *id, void *arg) {
  (void)n;
  initCase *ic = arg;
  int rank = ic->rankOf[r];
  dmacclConfig_t cfg = hostConfig(NULL);
  dmacclComm_t comm = NULL;
  dmacclResult_t rc = dmacclCommInitRank(&comm, ic->nranks[r], *id, rank, &cfg);
  if (ic->lateMayTimeout && (rc == dmacclTimeout || rc == dmacclRemoteError)) return 0;
  if ((int)rc != ic->expect) {
    fprintf(stderr, "process %d (rank %d): got %s, want %s: %s\n", r, rank,
            dmacclGetErrorString(rc), dmacclGetErrorString((dmacclResult_t)ic->expect),
            dmacclCommGetLastError(NULL));
    return 1;
  }
  if (rc == dmacclSuccess) return dmacclCommDestroy(comm) != dmacclSuccess;
  if (ic->needle && !strstr(dmacclCommGetLastError(NULL), ic->needle)) {
    fprintf(stderr, "process %d: '%s' does not mention '%s'\n", r, dmacclCommGetLastError(NULL),
            ic->needle);
    return 1;
  }
  return 0;
}

static int testInitWrongNranks(void) {
  setenv("DMACCL_INIT_TIMEOUT", "3", 1);
  initCase ic = {{3, 2, 3}, {0, 1, 2}, dmacclInvalidArgument, "nranks", 1};
  int failed = mpRun(3, initBody, &ic, 30, 0);
  unsetenv("DMACCL_INIT_TIMEOUT");
  ASSERT_EQ_INT(failed, 0);
  return 0;
}

static int testInitDuplicateRank(void) {
  initCase ic = {{3, 3, 3}, {0, 1, 1}, dmacclInvalidArgument, "twice", 0};
  ASSERT_EQ_INT(mpRun(3, initBody, &ic, 30, 0), 0);
  return 0;
}

static int testInitMissingRank(void) {
  setenv("DMACCL_INIT_TIMEOUT", "1", 1);
  initCase ic = {{3, 3}, {0, 1}, dmacclTimeout, "missing rank(s): 2", 0};
  int failed = mpRun(2, initBody, &ic, 30, 0);
  initCase noRoot = {{2}, {1}, dmacclTimeout, "rank 0 did not open", 0};
  failed += mpRun(1, initBody, &noRoot, 30, 0);
  unsetenv("DMACCL_INIT_TIMEOUT");
  ASSERT_EQ_INT(failed, 0);
  return 0;
}

/* Ranks whose CTA policies differ would build different tables (one a
 * kernel's lines, the other copies): every rank's init refuses it, naming
 * both. */
static int policyBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclConfig_t cfg = hostConfig(NULL);
  cfg.ctaPolicy = rank == 1 ? dmacclCtaPolicyZero : dmacclCtaPolicyDefault;
  dmacclComm_t comm = NULL;
  dmacclResult_t rc = dmacclCommInitRank(&comm, n, *id, rank, &cfg);
  const char *why = dmacclCommGetLastError(NULL);
  if (rc != dmacclInvalidArgument || comm != NULL ||
      !strstr(why, "rank 0 has CTA policy default but rank 1 zero")) {
    fprintf(stderr, "rank %d: init gave %s: %s\n", rank, dmacclGetErrorString(rc), why);
    return 1;
  }
  return 0;
}

static int testInitPolicyDisagree(void) {
  ASSERT_EQ_INT(mpRun(3, policyBody, NULL, 30, 0), 0);
  return 0;
}

static int testInitLocalArgs(void) {
  dmacclUniqueId id;
  dmacclComm_t comm = NULL;
  dmacclConfig_t cfg = hostConfig(NULL);
  ASSERT_EQ_INT(dmacclGetUniqueId(&id), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGetUniqueId(NULL), dmacclInvalidArgument);
  ASSERT_EQ_INT(dmacclCommInitRank(&comm, 2, id, 2, &cfg), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(NULL), "rank 2 is not in 0..1");
  ASSERT_EQ_INT(dmacclCommInitRank(&comm, 0, id, 0, &cfg), dmacclInvalidArgument);
  ASSERT_EQ_INT(dmacclCommInitRank(NULL, 2, id, 0, &cfg), dmacclInvalidArgument);
  dmacclUniqueId junk;
  memset(&junk, 0x5a, sizeof(junk));
  ASSERT_EQ_INT(dmacclCommInitRank(&comm, 2, junk, 1, &cfg), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(NULL), "dmacclGetUniqueId");
  ASSERT_TRUE(comm == NULL);
  /* One rank alone needs nobody. */
  ASSERT_EQ_INT(dmacclCommInitRank(&comm, 1, id, 0, &cfg), dmacclSuccess);
  ASSERT_EQ_INT(dmacclCommDestroy(comm), dmacclSuccess);
  return 0;
}

/* --- collectives -------------------------------------------------------- */

static int collBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  const char *algo = arg;
  size_t counts[] = {0, 1, 7, 1000, 65537};
  dmacclDataType_t types[] = {dmacclUint8, dmacclFloat16, dmacclFloat32, dmacclFloat64};
  dmacclConfig_t cfg = hostConfig(algo);
  dmacclComm_t comm;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  size_t maxBytes = 65537 * 8 * (size_t)n + MP_GUARD;
  void *send = NULL, *recv = NULL;
  RANK_CHECK(dmacclMemAlloc(comm, maxBytes, &send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, maxBytes, &recv) == dmacclSuccess);
  uint64_t seed = 1;
  for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
      for (int mode = 0; mode < 3; mode++) {
        long long w = mpCheckColl(comm, 0, 0, mode == 2, types[t], counts[c], mode == 1, send, recv,
                                  seed++ * 7 + (uint64_t)n);
        if (w != 0) {
          fprintf(stderr, "rank %d of %d, %s: %lld\n", rank, n, algo, w);
          return 1;
        }
      }
  return closeRank(rank, comm, send, recv);
}

static int testCollectives(void) {
  int nr[] = {1, 2, 3, 4, 8};
  for (size_t i = 0; i < sizeof(nr) / sizeof(nr[0]); i++)
    for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
      int failed = mpRun(nr[i], collBody, (void *)algos[a], 120, 0);
      if (failed) {
        TEST_FAIL("%d ranks, %s: %d rank(s) failed", nr[i], algos[a], failed);
        return 1;
      }
    }
  return 0;
}

/* Many operations in flight: more than the board's depth (64) without a
 * wait, each on its own buffers, checked at the end. arg: the algorithm
 * (NULL for the defaults); staged ones reuse their two slots 75 times. */
static int manyBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  dmacclConfig_t cfg = hostConfig(arg);
  dmacclComm_t comm;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  enum { OPS = 150, COUNT = 33 };
  size_t chunk = COUNT * 4, total = chunk * (size_t)n;
  char *send, *recv;
  RANK_CHECK(dmacclMemAlloc(comm, chunk * OPS, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, total * OPS, (void **)&recv) == dmacclSuccess);
  memset(recv, 0xA5, total * OPS);
  for (int k = 0; k < OPS; k++)
    dataFillRandom(send + k * chunk, chunk, 77u * (uint64_t)k + (uint64_t)rank);
  for (int k = 0; k < OPS; k++) {
    if (rank == 1 && k == 10) usleep(20000); /* a slow rank: others run ahead */
    RANK_CHECK(dmacclAllGather(send + k * chunk, recv + k * total, COUNT, dmacclFloat32, comm, 0) ==
               dmacclSuccess);
  }
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
  char *want = malloc(chunk);
  for (int k = 0; k < OPS; k++)
    for (int j = 0; j < n; j++) {
      dataFillRandom(want, chunk, 77u * (uint64_t)k + (uint64_t)j);
      RANK_CHECK(memcmp(recv + k * total + j * chunk, want, chunk) == 0);
    }
  free(want);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess); /* frees the allocations too */
  return 0;
}

static int testManyInFlight(void) {
  ASSERT_EQ_INT(mpRun(3, manyBody, NULL, 120, 0), 0);
  ASSERT_EQ_INT(mpRun(3, manyBody, "push1", 120, 0), 0);
  ASSERT_EQ_INT(mpRun(4, manyBody, "stage", 120, 0), 0);
  ASSERT_EQ_INT(mpRun(3, manyBody, "stage2d", 120, 0), 0);
  return 0;
}

/* Issue 20, item 1: only a process of this user that holds the id's secret
 * joins. Processes 0 and 1 are the job (2 ranks); 1 comes late, after three
 * intruders: a process with the id's socket name but another secret, one
 * that sends a 16-byte hello with a wrong rank count without any secret (it
 * made 0.1's init fail), and, when the tests run as root, a process running
 * as another user with the right id. The intruders fail; the job runs. The
 * unique id's layout (src/boot/boot.c bootId): magic, version (4 bytes
 * each), the socket name (64), the secret (16). */
enum { ID_NAME = 8, ID_SECRET = 72, ID_SECRET_LEN = 16 };

static int authBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)n, (void)arg;
  setenv("DMACCL_INIT_TIMEOUT", "8", 1);
  dmacclConfig_t cfg = hostConfig(NULL);
  dmacclComm_t comm = NULL;
  if (rank <= 1) {
    if (rank == 1) usleep(700000);
    RANK_CHECK(dmacclCommInitRank(&comm, 2, *id, rank, &cfg) == dmacclSuccess);
    char *send, *recv;
    RANK_CHECK(dmacclMemAlloc(comm, 512 + MP_GUARD, (void **)&send) == dmacclSuccess);
    RANK_CHECK(dmacclMemAlloc(comm, 512 + MP_GUARD, (void **)&recv) == dmacclSuccess);
    RANK_CHECK(mpCheckColl(comm, 0, 0, 1, dmacclUint8, 256, 0, send, recv, 4) == 0);
    RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
    return 0;
  }
  if (rank == 2) { /* another secret */
    dmacclUniqueId forged = *id;
    for (int i = 0; i < ID_SECRET_LEN; i++) forged.internal[ID_SECRET + i] ^= 0x5a;
    dmacclResult_t rc = dmacclCommInitRank(&comm, 2, forged, 1, &cfg);
    RANK_CHECK(rc != dmacclSuccess);
    return 0;
  }
  if (rank == 3) { /* a bare hello: magic, nranks 7, rank 1, pid */
    struct sockaddr_un a;
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    size_t len = strnlen(id->internal + ID_NAME, 64);
    memcpy(a.sun_path + 1, id->internal + ID_NAME, len);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    for (int i = 0; i < 200; i++) {
      if (connect(fd, (struct sockaddr *)&a,
                  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) == 0)
        break;
      usleep(5000);
    }
    uint32_t hello[4];
    memcpy(&hello[0], id->internal, 4); /* the magic */
    hello[1] = 7, hello[2] = 1, hello[3] = (uint32_t)getpid();
    RANK_CHECK(send(fd, hello, sizeof(hello), MSG_NOSIGNAL) == (ssize_t)sizeof(hello));
    char c;
    RANK_CHECK(recv(fd, &c, 1, 0) <= 0); /* closed without an answer */
    close(fd);
    return 0;
  }
  if (geteuid() != 0) return 0; /* cannot become another user */
  RANK_CHECK(setgid(65534) == 0 && setuid(65534) == 0);
  dmacclResult_t rc = dmacclCommInitRank(&comm, 2, *id, 1, &cfg);
  RANK_CHECK(rc != dmacclSuccess);
  RANK_CHECK(strstr(dmacclCommGetLastError(NULL), "another user") != NULL ||
             strstr(dmacclCommGetLastError(NULL), "closed") != NULL);
  return 0;
}

static int testRendezvousAuth(void) {
  ASSERT_EQ_INT(mpRun(5, authBody, NULL, 60, 0), 0);
  return 0;
}

/* Issue 20, items 2 and 9: a size that wraps when rounded is refused, and a
 * count past a dmacclMemAlloc part (the next rank's part follows it) too;
 * the communicator goes on. */
static int hugeBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  char *send, *recv, *p = NULL;
  if (openRank(rank, n, id, 256 * (size_t)n + MP_GUARD, &comm, &send, &recv)) return 1;
  RANK_CHECK(dmacclMemAlloc(comm, SIZE_MAX - 100, (void **)&p) == dmacclInvalidArgument);
  RANK_CHECK(p == NULL && strstr(dmacclCommGetLastError(comm), "too large") != NULL);
  memset(recv, 0xA5, 256 * (size_t)n + MP_GUARD);
  RANK_CHECK(dmacclAllGather(send, recv, 256 + MP_GUARD, dmacclUint8, comm, 0) ==
             dmacclInvalidArgument);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "allocation ends") != NULL);
  for (size_t i = 0; i < 256 * (size_t)n + MP_GUARD; i++)
    RANK_CHECK((unsigned char)recv[i] == 0xA5);
  RANK_CHECK(mpCheckColl(comm, 0, 0, 0, dmacclUint8, 256, 0, send, recv, 8) == 0);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testHugeSizes(void) {
  ASSERT_EQ_INT(mpRun(3, hugeBody, NULL, 60, 0), 0);
  return 0;
}

/* --- buffers and registration -------------------------------------------- */

static int bufBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  /* AllGather: staged below 1 KB, direct (peers read the buffers) above. */
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "allgather:0-1K:stage,1K-inf:pull1";
  dmacclComm_t comm;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  size_t bytes = 4096 * (size_t)n + MP_GUARD;
  /* Not shared memory: refused with a sentence where a peer would reach
   * into it, nothing posted; where the operation is staged (no peer reads
   * this rank's buffers) it is used as it is. */
  char *priv = malloc(bytes), *send = NULL, *recv = NULL;
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  memset(send, 0x5A, bytes);
  RANK_CHECK(dmacclAllGather(priv, send, 2048, dmacclUint8, comm, 0) == dmacclInvalidArgument);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "dmacclMemAlloc") != NULL);
  for (size_t i = 0; i < bytes; i++) RANK_CHECK((unsigned char)send[i] == 0x5A);
  for (int i = 0; i < 16; i++) priv[i] = (char)(rank * 16 + i);
  RANK_CHECK(dmacclAllGather(priv, send, 16, dmacclUint8, comm, 0) == dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
  for (int r = 0; r < n; r++)
    for (int i = 0; i < 16; i++) RANK_CHECK(send[r * 16 + i] == (char)(r * 16 + i));
  for (size_t i = 16 * (size_t)n; i < bytes; i++) RANK_CHECK((unsigned char)send[i] == 0x5A);
  void *h = NULL;
  RANK_CHECK(dmacclCommRegister(comm, priv, bytes, &h) == dmacclInvalidArgument);
  RANK_CHECK(dmacclCommRegister(comm, send, bytes, &h) == dmacclSuccess);
  void *h2 = NULL; /* the same buffer twice: deregistered twice */
  RANK_CHECK(dmacclCommRegister(comm, send, bytes, &h2) == dmacclSuccess);
  RANK_CHECK(dmacclCommDeregister(comm, h) == dmacclSuccess);
  RANK_CHECK(dmacclCommDeregister(comm, h2) == dmacclSuccess);
  RANK_CHECK(dmacclCommDeregister(comm, h) == dmacclInvalidArgument); /* once more */
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "was not returned by dmacclCommRegister") !=
             NULL);
  RANK_CHECK(dmacclCommDeregister(comm, (void *)(uintptr_t)0x999) == dmacclInvalidArgument);
  RANK_CHECK(dmacclCommDeregister(comm, NULL) == dmacclInvalidArgument);
  RANK_CHECK(dmacclMemFree(comm, priv) == dmacclInvalidArgument);
  RANK_CHECK(dmacclMemAlloc(comm, 0, (void **)&recv) == dmacclInvalidArgument);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, NULL) == dmacclInvalidArgument);
  /* Free and allocate again, several times: the new allocation may land at
   * the old address; peers must resolve the new one, never the old. */
  for (int round = 0; round < 4; round++) {
    RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
    RANK_CHECK(mpCheckColl(comm, 0, 0, round & 1, dmacclUint8, 4096, 0, send, recv,
                           100u + (uint64_t)round) == 0);
    RANK_CHECK(dmacclMemFree(comm, recv) == dmacclSuccess);
  }
  /* Sizes must agree. */
  RANK_CHECK(dmacclMemAlloc(comm, rank == 0 ? 4096 : 8192, (void **)&recv) ==
             dmacclInvalidArgument);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "sizes must agree") != NULL);
  /* The communicator still works. */
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  RANK_CHECK(mpCheckColl(comm, 0, 0, 0, dmacclInt32, 1000, 0, send, recv, 5) == 0);
  RANK_CHECK(dmacclMemFree(comm, send) == dmacclSuccess);
  RANK_CHECK(dmacclMemFree(comm, recv) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  free(priv);
  return 0;
}

static int testBuffers(void) {
  ASSERT_EQ_INT(mpRun(3, bufBody, NULL, 60, 0), 0);
  return 0;
}

/* Each communicator runs its own algorithms: a thread's calls on two sets
 * whose tables differ (A stages AllGather, B runs pull1) alternate, and a
 * private buffer shows which ran (refused where a peer reaches into it,
 * used as it is where the call is staged). The process's first call is a
 * count-0 AllGather of int8 on rank 0, the arguments of an empty choice. */
static int perCommBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  const dmacclUniqueId *ids = arg;
  (void)id;
  dmacclConfig_t ca = DMACCL_CONFIG_INITIALIZER, cb = DMACCL_CONFIG_INITIALIZER;
  ca.executor = cb.executor = dmacclExecutorHost;
  ca.algorithm = "allgather:stage";
  cb.algorithm = "allgather:pull1";
  dmacclComm_t a, b;
  RANK_CHECK(dmacclCommInitRank(&a, n, ids[0], rank, &ca) == dmacclSuccess);
  RANK_CHECK(dmacclCommInitRank(&b, n, ids[1], rank, &cb) == dmacclSuccess);
  char *ra = NULL, *rb = NULL, priv[16];
  RANK_CHECK(dmacclMemAlloc(a, 16 * (size_t)n, (void **)&ra) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(b, 16 * (size_t)n, (void **)&rb) == dmacclSuccess);
  RANK_CHECK(dmacclAllGather(ra, ra, 0, dmacclInt8, a, 0) == dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(a) == dmacclSuccess);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 16; i++) priv[i] = (char)(rank * 16 + i + round);
    RANK_CHECK(dmacclAllGather(priv, ra, 16, dmacclUint8, a, 0) == dmacclSuccess);
    RANK_CHECK(dmacclCommSynchronize(a) == dmacclSuccess);
    for (int r = 0; r < n; r++)
      for (int i = 0; i < 16; i++) RANK_CHECK(ra[r * 16 + i] == (char)(r * 16 + i + round));
    RANK_CHECK(dmacclAllGather(priv, rb, 16, dmacclUint8, b, 0) == dmacclInvalidArgument);
    RANK_CHECK(strstr(dmacclCommGetLastError(b), "dmacclMemAlloc") != NULL);
  }
  dmacclResult_t async = dmacclSuccess;
  RANK_CHECK(dmacclCommGetAsyncError(a, &async) == dmacclSuccess && async == dmacclSuccess);
  RANK_CHECK(dmacclMemFree(a, ra) == dmacclSuccess && dmacclMemFree(b, rb) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(a) == dmacclSuccess && dmacclCommDestroy(b) == dmacclSuccess);
  return 0;
}

static int testAlgoPerComm(void) {
  dmacclUniqueId ids[2];
  ASSERT_EQ_INT(dmacclGetUniqueId(&ids[0]), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGetUniqueId(&ids[1]), dmacclSuccess);
  ASSERT_EQ_INT(mpRun(2, perCommBody, ids, 60, 0), 0);
  return 0;
}

/* Ranks that disagree about the count: every rank's next synchronize
 * reports it (once), nothing is copied, and the communicator goes on: the
 * next collective is correct and synchronizes cleanly. A direct algorithm
 * compares the calls before it copies anything. */
static int disagreeBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  char *send, *recv;
  size_t bytes = 1024 * (size_t)n + MP_GUARD;
  dmacclConfig_t cfg = hostConfig("push1");
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  memset(recv, 0xA5, bytes);
  memset(send, 0x11, 1024);
  RANK_CHECK(dmacclAllGather(send, recv, rank == 1 ? 512 : 1024, dmacclUint8, comm, 0) ==
             dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclInvalidUsage);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "disagree") != NULL);
  for (size_t i = 0; i < bytes; i++) RANK_CHECK((unsigned char)recv[i] == 0xA5);
  dmacclResult_t async = dmacclInvalidArgument;
  RANK_CHECK(dmacclCommGetAsyncError(comm, &async) == dmacclSuccess);
  RANK_CHECK(async == dmacclSuccess); /* reported once */
  RANK_CHECK(mpCheckColl(comm, 0, 0, 0, dmacclUint8, 1024, 0, send, recv, 31) == 0);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

/* A staged operation runs before the peers have called, so a disagreement
 * is found afterwards: every rank gets an async error that says the receive
 * buffer is undefined. */
static int disagreeStagedBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  char *send, *recv;
  size_t bytes = 1024 * (size_t)n + MP_GUARD;
  dmacclConfig_t cfg = hostConfig("stage");
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  memset(send, 0x11, 1024);
  RANK_CHECK(dmacclAllGather(send, recv, rank == 1 ? 512 : 1024, dmacclUint8, comm, 0) ==
             dmacclSuccess);
  /* Synchronize waits for the comparison (every rank's call): this one
   * reports it, not a later one. */
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclInvalidUsage);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "disagree") != NULL);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "undefined") != NULL);
  RANK_CHECK(mpCheckColl(comm, 0, 0, 1, dmacclUint8, 512, 0, send, recv, 32) == 0);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

/* twoshot stores into the peers' receive buffers, so it waits for their
 * calls and compares them first, like a direct algorithm; but it took a
 * staged number at the call, so the ranks still exchange its handshakes
 * (launch_mp.c). Every rank gets the error, nothing is written, and the
 * staged AllReduces after it, in and out of place, are right. */
static int disagreeTwoShotBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  unsigned char *send, *recv;
  const size_t count = 4096, bytes = count + MP_GUARD;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "allreduce:twoshot";
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  memset(send, 0x11, count);
  memset(recv, 0xA5, bytes);
  RANK_CHECK(dmacclAllReduce(send, recv, rank == 1 ? count / 2 : count, dmacclUint8, dmacclSum,
                             comm, 0) == dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclInvalidUsage);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "disagree") != NULL);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "nothing was copied") != NULL);
  for (size_t i = 0; i < bytes; i++) RANK_CHECK(recv[i] == 0xA5);
  for (int k = 0; k < 6; k++) { /* both slots, three times */
    int inPlace = k & 1;
    unsigned char *out = inPlace ? send : recv;
    for (size_t i = 0; i < count; i++) send[i] = (unsigned char)(i * 7 + (size_t)rank * 13 + k);
    memset(recv, 0xA5, bytes);
    RANK_CHECK(dmacclAllReduce(send, out, count, dmacclUint8, dmacclSum, comm, 0) == dmacclSuccess);
    RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
    for (size_t i = 0; i < count; i++) {
      unsigned sum = 0;
      for (int r = 0; r < n; r++) sum += (unsigned)(i * 7 + (size_t)r * 13 + k);
      RANK_CHECK(out[i] == (unsigned char)sum);
    }
    for (size_t i = count; i < bytes && !inPlace; i++) RANK_CHECK(recv[i] == 0xA5);
  }
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

/* The same under stagell (the AllReduce's line form): rank 0 waits for
 * lines rank 1 wrote elsewhere, and lines may be left in a slot for a
 * later operation to take. Every rank breaks the communicator instead of
 * going on, says so, runs nothing more, and abort releases it. */
static int disagreeLinesBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  char *send, *recv;
  size_t bytes = 1024 + MP_GUARD;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "allreduce:stagell";
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  memset(send, 0x11, 1024);
  RANK_CHECK(dmacclAllReduce(send, recv, rank == 1 ? 512 : 1024, dmacclUint8, dmacclSum, comm, 0) ==
             dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclInvalidUsage);
  const char *err = dmacclCommGetLastError(comm);
  RANK_CHECK(strstr(err, "stagell") != NULL && strstr(err, "disagree") != NULL);
  RANK_CHECK(strstr(err, "dmacclCommAbort") != NULL);
  /* a later call does not run: its synchronize says why */
  memset(recv, 0xA5, bytes);
  dmacclAllReduce(send, recv, 1024, dmacclUint8, dmacclSum, comm, 0);
  RANK_CHECK(dmacclCommSynchronize(comm) != dmacclSuccess);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "broken") != NULL);
  for (size_t i = 0; i < bytes; i++) RANK_CHECK((unsigned char)recv[i] == 0xA5);
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  return 0;
}

/* AlltoAllv's stagell compares every rank's arrays before it runs (a
 * direct operation), but took a staged number at the call: where rank 1's
 * recvcounts[0] disagrees with rank 0's sendcounts[1], every rank gets the
 * error, nothing is written, the ranks still meet (its push form's
 * handshakes), and the AlltoAllvs after it, as lines and as the push form
 * (blocks over a share: 4 KB slots), in both slots, are right. */
static int disagreeAlltoallvBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  unsigned char *send, *recv;
  const size_t big = 3000, bytes = big * (size_t)n + MP_GUARD;
  setenv("DMACCL_STAGE_BYTES", "4K", 1); /* a 3-rank share: 256 bytes of lines */
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "alltoallv:stagell";
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  size_t counts[8], displs[8], rcounts[8];
  for (int k = 0; k < 7; k++) {
    size_t c = k == 0 ? 64 : k % 2 ? 16 : big; /* 16: lines; 3000: the push form */
    for (int r = 0; r < n; r++) counts[r] = c, displs[r] = (size_t)r * c, rcounts[r] = c;
    if (k == 0 && rank == 1) rcounts[0] = c / 2;
    for (size_t i = 0; i < bytes; i++) send[i] = (unsigned char)(i * 7 + (size_t)rank * 13 + k);
    memset(recv, 0xA5, bytes);
    RANK_CHECK(dmacclAlltoAllv(send, counts, displs, recv, rcounts, displs, dmacclUint8, comm, 0) ==
               dmacclSuccess);
    if (k == 0) {
      RANK_CHECK(dmacclCommSynchronize(comm) == dmacclInvalidUsage);
      RANK_CHECK(strstr(dmacclCommGetLastError(comm), "disagree") != NULL);
      RANK_CHECK(strstr(dmacclCommGetLastError(comm), "nothing was copied") != NULL);
      for (size_t i = 0; i < bytes; i++) RANK_CHECK(recv[i] == 0xA5);
      /* white box: what ran (64-byte blocks fit as lines, but a form of
       * lines without its copies would meet no peer) met every peer, ENTRY
       * and EXIT both ways, and moved nothing */
      int met[4][8] = {{0}};
      const planSchedule *sc = &comm->sched;
      for (int i = 0; i < sc->nsteps; i++) {
        const planStep *st = &sc->steps[i];
        RANK_CHECK(st->kind != PLAN_STEP_COPY && st->kind != PLAN_STEP_REDUCE);
        if ((st->kind == PLAN_STEP_SIGNAL || st->kind == PLAN_STEP_WAIT) && st->peer < 8 &&
            (st->phase == PLAN_PHASE_ENTRY || st->phase == PLAN_PHASE_EXIT))
          met[(st->kind == PLAN_STEP_WAIT) * 2 + (st->phase == PLAN_PHASE_EXIT)][st->peer]++;
      }
      for (int p = 0; p < n; p++)
        for (int m = 0; m < 4 && p != rank; m++) RANK_CHECK(met[m][p] == 1);
      continue;
    }
    RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
    for (int q = 0; q < n; q++) /* q's block for me: at my place in q's buffer */
      for (size_t i = 0; i < c; i++) {
        size_t at = (size_t)rank * c + i;
        RANK_CHECK(recv[(size_t)q * c + i] == (unsigned char)(at * 7 + (size_t)q * 13 + k));
      }
    for (size_t i = (size_t)n * c; i < bytes; i++) RANK_CHECK(recv[i] == 0xA5);
  }
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

/* Rank 0 calls AllGatherV and rank 1 AlltoAllv, both under stagell: the
 * AllGatherV runs at its call, the AlltoAllv after every rank's call, and
 * their staged numbers agree. Both ranks break the communicator at once,
 * naming the two collectives (not a wait that times out), and abort
 * releases it. */
static int protocolsCollBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  unsigned char *send, *recv;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "allgatherv:stagell;alltoallv:stagell";
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 4096, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 4096, (void **)&recv) == dmacclSuccess);
  size_t counts[8], displs[8];
  for (int r = 0; r < n; r++) counts[r] = 16, displs[r] = (size_t)r * 16;
  if (rank == 0)
    RANK_CHECK(dmacclAllGatherV(send, recv, counts, displs, dmacclUint8, comm, 0) == dmacclSuccess);
  else
    RANK_CHECK(dmacclAlltoAllv(send, counts, displs, recv, counts, displs, dmacclUint8, comm, 0) ==
               dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) != dmacclSuccess);
  const char *err = dmacclCommGetLastError(comm);
  RANK_CHECK(strstr(err, "different protocols") != NULL);
  RANK_CHECK(strstr(err, "allgatherv") != NULL && strstr(err, "alltoallv") != NULL);
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  return 0;
}

/* Ranks whose algorithm tables differ (rank 0 stages, the others push)
 * run different protocols for the same call: every rank breaks the
 * communicator, names the likely causes, and abort releases it. */
static int protocolsBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  char *send, *recv;
  size_t bytes = 1024 * (size_t)n + MP_GUARD;
  dmacclConfig_t cfg = hostConfig(rank == 0 ? "stage" : "push1");
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  memset(send, 0x11, 1024);
  RANK_CHECK(dmacclAllGather(send, recv, 1024, dmacclUint8, comm, 0) == dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclInvalidUsage);
  const char *err = dmacclCommGetLastError(comm);
  RANK_CHECK(strstr(err, "different protocols") != NULL);
  RANK_CHECK(strstr(err, "stage") != NULL && strstr(err, "push1") != NULL);
  RANK_CHECK(strstr(err, "DMACCL_ALGO") != NULL);
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  return 0;
}

/* Ranks as processes that pass different immediate PreMulSum scalars
 * (rank 1 0.25, the others 0.5) disagree, compared on the board: with the
 * direct pull1 nothing is written; every rank's synchronize names both
 * scalars; then a premultiplied sum with the same scalar everywhere (one
 * operator made on the device side: a scalar in host memory, read when the
 * operation runs, changed between two calls) is right. */
static int disagreePremulBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  const size_t count = 1000, bytes = count * sizeof(float) + MP_GUARD;
  float *send, *recv;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "allreduce:pull1";
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, bytes, (void **)&recv) == dmacclSuccess);
  for (size_t i = 0; i < count; i++) send[i] = (float)(rank + 1) * (float)(i % 7);
  memset(recv, 0xA5, bytes);
  float mine = rank == 1 ? 0.25f : 0.5f;
  dmacclRedOp_t pre;
  RANK_CHECK(dmacclRedOpCreatePreMulSum(&pre, &mine, dmacclFloat32, dmacclScalarHostImmediate,
                                        comm) == dmacclSuccess);
  RANK_CHECK(dmacclAllReduce(send, recv, count, dmacclFloat32, pre, comm, 0) == dmacclSuccess);
  RANK_CHECK(dmacclRedOpDestroy(pre, comm) == dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclInvalidUsage);
  const char *err = dmacclCommGetLastError(comm);
  if (!strstr(err, "premultiplied sum by 0.5, rank 1 by 0.25"))
    fprintf(stderr, "rank %d: %s\n", rank, err);
  RANK_CHECK(strstr(err, "premultiplied sum by 0.5, rank 1 by 0.25") != NULL);
  for (size_t i = 0; i < bytes; i++) RANK_CHECK(((unsigned char *)recv)[i] == 0xA5);
  float scale = 0.5f;
  RANK_CHECK(dmacclRedOpCreatePreMulSum(&pre, &scale, dmacclFloat32, dmacclScalarDevice, comm) ==
             dmacclSuccess);
  float ranks = (float)(n * (n + 1) / 2);
  for (int k = 0; k < 2; k++) {
    scale = k ? -3.0f : 0.5f;
    RANK_CHECK(dmacclAllReduce(send, recv, count, dmacclFloat32, pre, comm, 0) == dmacclSuccess);
    RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
    for (size_t i = 0; i < count; i++) RANK_CHECK(recv[i] == ranks * (float)(i % 7) * scale);
  }
  RANK_CHECK(dmacclRedOpDestroy(pre, comm) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testDisagree(void) {
  ASSERT_EQ_INT(mpRun(2, disagreePremulBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, disagreePremulBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, disagreeBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, disagreeStagedBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(2, disagreeTwoShotBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, disagreeTwoShotBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(2, disagreeLinesBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, disagreeLinesBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(2, disagreeAlltoallvBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, disagreeAlltoallvBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(2, protocolsBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(2, protocolsCollBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, protocolsBody, NULL, 60, 0), 0);
  return 0;
}

/* --- faults --------------------------------------------------------------- */

/* Waits up to 20 s for an async error; returns it. */
static dmacclResult_t awaitAsync(dmacclComm_t comm) {
  dmacclResult_t a = dmacclSuccess;
  for (int i = 0; i < 2000 && a == dmacclSuccess; i++) {
    dmacclCommGetAsyncError(comm, &a);
    if (a == dmacclSuccess) usleep(10000);
  }
  return a;
}

/* Rank 1 never calls the collective: with DMACCL_TIMEOUT the others learn
 * which rank they wait for, and abort releases them. */
static int watchdogBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  setenv("DMACCL_TIMEOUT", "1", 1);
  dmacclComm_t comm;
  char *send, *recv;
  if (openRank(rank, n, id, 64 * (size_t)n, &comm, &send, &recv)) return 1;
  if (rank == 1) {
    usleep(4000000); /* long past the others' timeout */
    RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
    return 0;
  }
  RANK_CHECK(dmacclAllGather(send, recv, 64, dmacclUint8, comm, 0) == dmacclSuccess);
  dmacclResult_t got = awaitAsync(comm);
  if (got != dmacclTimeout) {
    fprintf(stderr, "rank %d: got %s: %s\n", rank, dmacclGetErrorString(got),
            dmacclCommGetLastError(comm));
    return 1;
  }
  const char *why = dmacclCommGetLastError(comm);
  if (!strstr(why, "rank 1")) {
    fprintf(stderr, "rank %d: '%s' does not name rank 1\n", rank, why);
    return 1;
  }
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclTimeout); /* returns, does not hang */
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  return 0;
}

/* Rank 1 never calls a stagell AllReduce and the host executor's own wait
 * gives up first (DMACCL_HOST_TIMEOUT, the watchdog off): rank 0's lines
 * may lie in rank 1's slot, where a later operation would take them, so
 * the set breaks instead of going on, and says to abort. The timeout's
 * error names the step the job stood at and the first line missing. */
static int hostTimeoutLinesBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  setenv("DMACCL_TIMEOUT", "0", 1);
  setenv("DMACCL_HOST_TIMEOUT", "1", 1);
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorHost;
  cfg.algorithm = "allreduce:stagell";
  dmacclComm_t comm;
  char *send, *recv;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 256, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 256, (void **)&recv) == dmacclSuccess);
  memset(send, 0x11, 256);
  if (rank == 1) {
    usleep(3000000); /* past rank 0's host timeout */
    RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
    return 0;
  }
  RANK_CHECK(dmacclAllReduce(send, recv, 256, dmacclUint8, dmacclSum, comm, 0) == dmacclSuccess);
  RANK_CHECK(awaitAsync(comm) == dmacclTimeout);
  /* ... and the timeout says where the job stood: no line of rank 1's */
  const char *stood = dmacclCommGetLastError(comm);
  if (!strstr(stood, "for rank 1") ||
      !strstr(stood, "REDUCE of 256 bytes, line source 1: line 0 of 32 not there")) {
    fprintf(stderr, "rank 0: the timeout does not say where it stood: %s\n", stood);
    return 1;
  }
  dmacclAllReduce(send, recv, 256, dmacclUint8, dmacclSum, comm, 0);
  RANK_CHECK(dmacclCommSynchronize(comm) != dmacclSuccess);
  const char *why = dmacclCommGetLastError(comm);
  RANK_CHECK(strstr(why, "broken") != NULL && strstr(why, "stagell") != NULL);
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  return 0;
}

/* A direct algorithm needs its peers' buffers, so the call itself waits for
 * their calls: with rank 1 absent it returns the watchdog's dmacclTimeout,
 * naming rank 1, instead of hanging; nothing was written. */
static int watchdogDirectBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  setenv("DMACCL_TIMEOUT", "1", 1);
  dmacclConfig_t cfg = hostConfig("push1");
  dmacclComm_t comm;
  char *send, *recv;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 64 * (size_t)n, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 64 * (size_t)n, (void **)&recv) == dmacclSuccess);
  memset(recv, 0xA5, 64 * (size_t)n);
  if (rank == 1) {
    usleep(4000000);
    RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
    return 0;
  }
  dmacclResult_t rc = dmacclAllGather(send, recv, 64, dmacclUint8, comm, 0);
  if (rc != dmacclTimeout || !strstr(dmacclCommGetLastError(comm), "rank 1")) {
    fprintf(stderr, "rank %d: got %s: %s\n", rank, dmacclGetErrorString(rc),
            dmacclCommGetLastError(comm));
    return 1;
  }
  for (size_t i = 0; i < 64 * (size_t)n; i++) RANK_CHECK((unsigned char)recv[i] == 0xA5);
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  return 0;
}

static int testWatchdog(void) {
  ASSERT_EQ_INT(mpRun(3, watchdogBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(3, watchdogDirectBody, NULL, 60, 0), 0);
  ASSERT_EQ_INT(mpRun(2, hostTimeoutLinesBody, NULL, 60, 0), 0);
  return 0;
}

/* Rank 2 is killed after the first collective; the survivors' next one
 * reports it (no watchdog needed) and abort returns. */
static int deathBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  char *send, *recv;
  size_t bytes = 256 * (size_t)n + MP_GUARD;
  if (openRank(rank, n, id, bytes, &comm, &send, &recv)) return 1;
  RANK_CHECK(mpCheckColl(comm, 0, 0, 1, dmacclUint8, 256, 0, send, recv, 9) == 0);
  if (rank == 2) raise(SIGKILL);
  RANK_CHECK(dmacclAlltoAll(send, recv, 256, dmacclUint8, comm, 0) == dmacclSuccess);
  RANK_CHECK(awaitAsync(comm) == dmacclRemoteError);
  const char *why = dmacclCommGetLastError(comm);
  if (!strstr(why, "rank 2")) {
    fprintf(stderr, "rank %d: '%s' does not name rank 2\n", rank, why);
    return 1;
  }
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclRemoteError);
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  return 0;
}

static int testPeerDeath(void) {
  ASSERT_EQ_INT(mpRun(3, deathBody, NULL, 60, 1u << 2), 0);
  return 0;
}

/* Abort with an operation whose peer never comes: returns at once. */
static int abortBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  dmacclComm_t comm;
  char *send, *recv;
  if (openRank(rank, n, id, 64 * (size_t)n, &comm, &send, &recv)) return 1;
  if (rank == 0) {
    for (int k = 0; k < 3; k++)
      RANK_CHECK(dmacclAllGather(send, recv, 64, dmacclUint8, comm, 0) == dmacclSuccess);
    usleep(100000);
  }
  RANK_CHECK(dmacclCommAbort(comm) == dmacclSuccess);
  RANK_CHECK(dmacclCommAbort(NULL) == dmacclInvalidArgument);
  return 0;
}

/* Persistent requests: Init once, Start many times on fresh random data into
 * poisoned outputs, AllGather (in and out of place) and AlltoAll, between
 * eager calls; bad requests refused with a sentence. arg: algorithm. */
static int persistBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  dmacclConfig_t cfg = hostConfig(arg);
  dmacclComm_t comm;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  enum { COUNT = 1001, STARTS = 12 };
  size_t chunk = COUNT * 4, total = chunk * (size_t)n;
  char *agSend, *agRecv, *aaSend, *aaRecv, *want = malloc(total);
  RANK_CHECK(dmacclMemAlloc(comm, chunk, (void **)&agSend) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, total, (void **)&agRecv) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, total, (void **)&aaSend) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, total, (void **)&aaRecv) == dmacclSuccess);
  char *eSend, *eRecv;
  RANK_CHECK(dmacclMemAlloc(comm, 4096 + MP_GUARD, (void **)&eSend) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 4096 + MP_GUARD, (void **)&eRecv) == dmacclSuccess);
  dmacclRequest_t ag, agIn, aa, bad = NULL;
  RANK_CHECK(dmacclAllGatherInit(agSend, agRecv, COUNT, dmacclFloat32, comm, NULL) ==
             dmacclInvalidArgument);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "request is NULL") != NULL);
  RANK_CHECK(dmacclAlltoAllInit(aaSend, aaRecv, COUNT, (dmacclDataType_t)99, comm, &bad) ==
             dmacclInvalidArgument);
  RANK_CHECK(bad == NULL);
  RANK_CHECK(dmacclAlltoAllInit(aaSend, aaSend + 4, COUNT / 2, dmacclFloat32, comm, &bad) ==
             dmacclInvalidArgument);
  RANK_CHECK(strstr(dmacclCommGetLastError(comm), "overlaps") != NULL && bad == NULL);
  RANK_CHECK(dmacclStart(NULL, 0) == dmacclInvalidArgument);
  RANK_CHECK(dmacclAllGatherInit(agSend, agRecv, COUNT, dmacclFloat32, comm, &ag) == dmacclSuccess);
  RANK_CHECK(dmacclAllGatherInit(agRecv + (size_t)rank * chunk, agRecv, COUNT, dmacclFloat32, comm,
                                 &agIn) == dmacclSuccess);
  RANK_CHECK(dmacclAlltoAllInit(aaSend, aaRecv, COUNT, dmacclFloat32, comm, &aa) == dmacclSuccess);
  for (int k = 0; k < STARTS; k++) {
    uint64_t seed = 1000u * (uint64_t)k;
    int inPlace = k % 3 == 2;
    memset(agRecv, 0xA5, total);
    memset(aaRecv, 0xA5, total);
    if (inPlace)
      dataFillRandom(agRecv + (size_t)rank * chunk, chunk, seed + (uint64_t)rank);
    else
      dataFillRandom(agSend, chunk, seed + (uint64_t)rank);
    for (int j = 0; j < n; j++)
      dataFillRandom(aaSend + (size_t)j * chunk, chunk, seed + 500 + 16 * (uint64_t)rank + j);
    RANK_CHECK(dmacclStart(inPlace ? agIn : ag, 0) == dmacclSuccess);
    RANK_CHECK(dmacclStart(aa, 0) == dmacclSuccess);
    if (k % 4 == 1) /* an eager call between starts (checked, and synchronizes) */
      RANK_CHECK(mpCheckColl(comm, 0, 0, 0, dmacclUint8, 77, 0, eSend, eRecv, seed + 3) == 0);
    RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
    for (int j = 0; j < n; j++) dataFillRandom(want + (size_t)j * chunk, chunk, seed + j);
    if (memcmp(agRecv, want, total) != 0) {
      fprintf(stderr, "rank %d start %d: allgather wrong\n", rank, k);
      return 1;
    }
    for (int j = 0; j < n; j++)
      dataFillRandom(want + (size_t)j * chunk, chunk, seed + 500 + 16 * (uint64_t)j + rank);
    if (memcmp(aaRecv, want, total) != 0) {
      fprintf(stderr, "rank %d start %d: alltoall wrong\n", rank, k);
      return 1;
    }
  }
  RANK_CHECK(dmacclRequestFree(ag) == dmacclSuccess);
  RANK_CHECK(dmacclRequestFree(agIn) == dmacclSuccess);
  RANK_CHECK(dmacclRequestFree(NULL) == dmacclInvalidArgument);
  RANK_CHECK(dmacclRequestFree(aa) == dmacclSuccess);
  free(want);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testPersistent(void) {
  const char *algos2[] = {"stage", "stage2d", "push1", "pullb"};
  for (int a = 0; a < 4; a++) {
    int failed = mpRun(3, persistBody, (void *)algos2[a], 120, 0);
    if (failed) {
      TEST_FAIL("persistent, 3 ranks, %s: %d rank(s) failed", algos2[a], failed);
      return 1;
    }
  }
  return 0;
}

/* Ranks asking for different DMACCL_SCRATCH_BYTES use the smallest (pull1's
 * AllReduce takes its form by it, and forms that differ do not pair): with
 * one rank of 10 asking for 4K, too small for 10 ranks, every rank's
 * AllReduce is refused with that size in its message (had the others kept
 * 32M, they would go on and wait for the refused rank). */
static int scratchBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  (void)arg;
  setenv("DMACCL_SCRATCH_BYTES", rank == 3 ? "4K" : "32M", 1);
  dmacclComm_t comm;
  char *send, *recv;
  if (openRank(rank, n, id, 4096, &comm, &send, &recv)) return 1;
  memset(send, 1, 4096);
  dmacclResult_t rc = dmacclAllReduce(send, recv, 1000, dmacclUint8, dmacclSum, comm, NULL);
  const char *why = dmacclCommGetLastError(comm);
  if (rc != dmacclInvalidUsage || !strstr(why, "scratch buffer (4096 bytes")) {
    fprintf(stderr, "rank %d: AllReduce gave %s: %s\n", rank, dmacclGetErrorString(rc), why);
    return 1;
  }
  return closeRank(rank, comm, send, recv);
}

static int testScratchAgreed(void) {
  ASSERT_EQ_INT(mpRun(10, scratchBody, NULL, 30, 0), 0);
  return 0;
}

static int testAbort(void) {
  ASSERT_EQ_INT(mpRun(2, abortBody, NULL, 30, 0), 0);
  return 0;
}

/* --- a call that blocks says where -------------------------------------- */

/* The text of a file (at most cap - 1 bytes), or "" */
static void readText(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t k = f ? fread(out, 1, cap - 1, f) : 0;
  out[k] = 0;
  if (f) fclose(f);
}

/* With DMACCL_DEBUG=WARN a direct operation's call that spends over 20 ms
 * in one phase logs which (launch_mp.c): rank 1 calls 150 ms late, so rank
 * 0's push1 AllGather waits for its call and says so, naming the call, the
 * algorithm and the phase; with the level unset it logs nothing. Each
 * rank's stderr goes to a file in arg (a directory) while it calls. */
static int slowBody(int rank, int n, const dmacclUniqueId *id, void *arg) {
  char path[512], text[4096];
  snprintf(path, sizeof(path), "%s/rank%d.log", (const char *)arg, rank);
  dmacclConfig_t cfg = hostConfig("push1");
  dmacclComm_t comm;
  char *send, *recv;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 4096, (void **)&send) == dmacclSuccess);
  RANK_CHECK(dmacclMemAlloc(comm, 4096 * (size_t)n, (void **)&recv) == dmacclSuccess);
  /* a first operation, so that both ranks start the timed one together
   * but for the sleep (its buffers exported, the peers' imported) */
  RANK_CHECK(dmacclAllGather(send, recv, 4096, dmacclUint8, comm, 0) == dmacclSuccess);
  RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
  int bad = 0;
  for (int quiet = 0; quiet < 2 && !bad; quiet++) {
    setenv("DMACCL_DEBUG", quiet ? "" : "WARN", 1);
    coreLogLevelReload();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), saved = dup(2);
    if (fd < 0 || saved < 0 || dup2(fd, 2) != 2) {
      fprintf(stderr, "rank %d: cannot send stderr to %s\n", rank, path);
      bad = 1;
      break;
    }
    close(fd);
    if (rank == 1) usleep(150000);
    dmacclResult_t rc = dmacclAllGather(send, recv, 4096, dmacclUint8, comm, 0);
    if (rc == dmacclSuccess) rc = dmacclCommSynchronize(comm);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    readText(path, text, sizeof(text));
    if (rc != dmacclSuccess) {
      fprintf(stderr, "rank %d: the AllGather failed: %s; its log: '%s'\n", rank,
              dmacclCommGetLastError(comm), text);
      bad = 1;
    } else if (rank == 0 && !quiet &&
               (!strstr(text, "rank 0: dmacclAllGather (operation 2, push1, 4096 of uint8): "
                              "waiting for the peers' calls took") ||
                !strstr(text, " ms, ending at "))) {
      fprintf(stderr, "rank 0's log: '%s'\n", text);
      bad = 1;
    } else if (quiet && text[0]) {
      fprintf(stderr, "rank %d logged with DMACCL_DEBUG unset: '%s'\n", rank, text);
      bad = 1;
    }
  }
  unlink(path);
  if (bad) {
    dmacclCommAbort(comm);
    return 1;
  }
  return closeRank(rank, comm, send, recv);
}

static int testSlowCallSaysWhere(void) {
  char dir[] = "/tmp/dmaccl-slow-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir) != NULL);
  int failed = mpRun(2, slowBody, dir, 60, 0);
  rmdir(dir);
  ASSERT_EQ_INT(failed, 0);
  return 0;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  RUN_IF(testInitLocalArgs);
  RUN_IF(testInitWrongNranks);
  RUN_IF(testInitDuplicateRank);
  RUN_IF(testInitPolicyDisagree);
  RUN_IF(testInitMissingRank);
  RUN_IF(testRendezvousAuth);
  RUN_IF(testHugeSizes);
  RUN_IF(testCollectives);
  RUN_IF(testManyInFlight);
  RUN_IF(testBuffers);
  RUN_IF(testAlgoPerComm);
  RUN_IF(testDisagree);
  RUN_IF(testWatchdog);
  RUN_IF(testPeerDeath);
  RUN_IF(testScratchAgreed);
  RUN_IF(testAbort);
  RUN_IF(testPersistent);
  RUN_IF(testSlowCallSaysWhere);
  TEST_EXIT();
}
