/*
 * dmacclSend / dmacclRecv. Random data, poisoned receive buffers with guard
 * bytes after them, every byte checked, on both kinds of set:
 *  - one process driving every rank (dmacclCommInitAll): a ring and all pairs
 *    in one group, several messages to one peer in order, the same as
 *    persistent requests (dmacclSendInit / dmacclRecvInit, started three
 *    times), a count mismatch
 *    (reported, nothing written, the communicator still usable), argument
 *    errors (nothing issued);
 *  - ranks as processes (dmacclCommInitRank): a pipeline outside groups and a
 *    two-way ring in groups, at staged and direct sizes, the ring as started
 *    requests; on GPUs also a ring
 *    captured into a CUDA graph and replayed with fresh data (with 2 ranks,
 *    where the channels move lines, the graph's kernels are counted: a
 *    group's send and receive are one kernel); one group mixing small
 *    AllGathers on two communicators, a small AllReduce, small Send/Recv
 *    both ways around the ring and a large Send/Recv (what the CUDA
 *    executor merges into one kernel and what it cannot), eager and (GPU)
 *    captured twice into one graph, replayed.
 * No argument: the host executor; "gpu": the CUDA executor (skips without a GPU).
 */
#include "harness.h"
#include "mp.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include "../src/core/core.h" /* white box: a channel's selection table */

#define GUARD 64
#define MAXN 4
#define POISON 0xA5

static int gpu; /* the CUDA executor */

/* The bytes rank `from` sends to rank `to` in message k of a case. */
static void payload(unsigned char *p, size_t bytes, uint64_t seed, int from, int to, int k) {
  testFillRandom(p, bytes,
                 seed * 1000003u + (uint64_t)from * 7919u + (uint64_t)to * 131u + (uint64_t)k);
}

/* Buffers: device memory of the rank's GPU, or host memory. */
static void *bufAlloc(int dev, size_t bytes) {
  void *p = NULL;
  if (!gpu) return malloc(bytes);
  if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) return NULL;
  return p;
}
static void bufFree(void *p) {
  if (gpu)
    cudaFree(p);
  else
    free(p);
}
static int bufPut(void *dst, const void *src, size_t bytes) {
  if (!gpu) return memcpy(dst, src, bytes), 0;
  return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
         cudaDeviceSynchronize() != cudaSuccess;
}
static int bufGet(void *dst, const void *src, size_t bytes) {
  if (!gpu) return memcpy(dst, src, bytes), 0;
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess;
}

/* Every Send/Recv channel of comm selects for Broadcast what
 * planTableForChannel makes of comm's own table (test_select checks that
 * table's rows: on 2 ranks with built-in Broadcast rows the channel's own,
 * elsewhere the parent's with split as pushb), eager and captured. 0 when
 * so and comm has a channel. */
static int channelTables(dmacclComm_t comm) {
  int channels = 0;
  planTable want = comm->clique->table;
  planTableForChannel(&want, comm->nranks);
  for (int i = 0; comm->p2p && i < 2 * comm->nranks; i++) {
    dmacclComm_t ch = comm->p2p[i];
    if (!ch) continue;
    channels++;
    if (ch->clique->scratchBytes) { /* a channel only broadcasts (comm.c) */
      fprintf(stderr, "rank %d: channel %d has a scratch buffer of %zu bytes\n", comm->rank, i,
              ch->clique->scratchBytes);
      return 1;
    }
    for (int g = 0; g < 2; g++)
      for (int e = 0; e <= 40; e++) {
        size_t v = (size_t)1 << e;
        planAlgo own = planSelectIn(&want, PLAN_COLL_BROADCAST, v, g, NULL);
        planAlgo got = planSelectIn(&ch->clique->table, PLAN_COLL_BROADCAST, v, g, NULL);
        if (got != own) {
          fprintf(stderr,
                  "rank %d: channel %d selects %s for a Broadcast of %zu bytes (graph %d; "
                  "planTableForChannel: %s)\n",
                  comm->rank, i, planAlgoName(got), v, g, planAlgoName(own));
          return 1;
        }
      }
  }
  if (!channels) {
    fprintf(stderr, "rank %d: no channels\n", comm->rank);
    return 1;
  }
  return 0;
}

/* The built-in table's split (2 ranks: Broadcast and Scatter from 8 MB + 1)
 * runs stage where it fits a slot, else pushb, where ranks share
 * a GPU (coreChooseAlgo: there is no second GPU's copy engine to add); a
 * split from a tuning file (measured there), DMACCL_ALGO or the config runs
 * as named. */
static int testSplitChoice(void) {
  coreClique *c = calloc(1, sizeof(*c));
  ASSERT_TRUE(c != NULL);
  planTableDefaults(&c->table, 2);
  c->nranks = 2;
  c->stageBytes = (size_t)16 << 20; /* slots larger than the default 8 MB */
  planArgs a = {.coll = PLAN_COLL_BROADCAST, .nranks = 2, .count = (size_t)32 << 20, .elemSize = 1};
  planArgs sc = a;
  sc.coll = PLAN_COLL_SCATTER;
  sc.count = (size_t)8 << 20; /* per rank: 16 MB at the root */
  planArgs mid = a;           /* a Broadcast of split's range that fits a staging slot */
  mid.count = (size_t)12 << 20;
  int rc = 0;
  for (int g = 0; g < 2 && !rc; g++) {
    c->gpuShared = 0;
    rc |= coreChooseAlgo(c, &a, g, NULL) != PLAN_ALGO_SPLIT;
    rc |= coreChooseAlgo(c, &sc, g, NULL) != PLAN_ALGO_SPLIT;
    rc |= coreChooseAlgo(c, &mid, g, NULL) != PLAN_ALGO_SPLIT;
    c->gpuShared = 1; /* stage where it fits a slot (16 MB per rank), else pushb */
    rc |= coreChooseAlgo(c, &a, g, NULL) != PLAN_ALGO_PUSHB;
    rc |= coreChooseAlgo(c, &sc, g, NULL) != PLAN_ALGO_STAGE;
    rc |= coreChooseAlgo(c, &mid, g, NULL) != PLAN_ALGO_STAGE;
  }
  char err[128];
  c->table.origin = PLAN_FROM_TUNE_FILE;
  rc |= planTableParse(&c->table, "scatter:split", err, sizeof(err)) != 0;
  rc |= coreChooseAlgo(c, &sc, 0, NULL) != PLAN_ALGO_SPLIT; /* still shared */
  rc |= coreChooseAlgo(c, &a, 0, NULL) != PLAN_ALGO_PUSHB;
  rc |= coreChooseAlgo(c, &mid, 0, NULL) != PLAN_ALGO_STAGE;
  c->table.origin = PLAN_FROM_ENV;
  rc |= planTableParse(&c->table, "broadcast:split", err, sizeof(err)) != 0;
  rc |= coreChooseAlgo(c, &a, 0, NULL) != PLAN_ALGO_SPLIT;
  free(c);
  ASSERT_EQ_INT(rc, 0);
  return 0;
}

/* ---------- one process, every rank ---------- */

typedef struct {
  int n, dev[MAXN];
  dmacclComm_t comm[MAXN];
  cudaStream_t st[MAXN];
} spSet;

/* A set of n ranks (algorithm: the config's table, NULL for none). */
static int spInitAlgo(spSet *s, int n, const char *algorithm) {
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  cfg.algorithm = algorithm;
  int ngpu = 1;
  if (gpu) ASSERT_TRUE(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0);
  s->n = n;
  for (int r = 0; r < n; r++) s->dev[r] = r % ngpu;
  ASSERT_EQ_INT(dmacclCommInitAll(s->comm, n, gpu ? s->dev : NULL, &cfg), dmacclSuccess);
  for (int r = 0; r < n; r++) {
    s->st[r] = NULL;
    if (gpu) {
      ASSERT_TRUE(cudaSetDevice(s->dev[r]) == cudaSuccess);
      ASSERT_TRUE(cudaStreamCreateWithFlags(&s->st[r], cudaStreamNonBlocking) == cudaSuccess);
    }
  }
  return 0;
}

static int spInit(spSet *s, int n) {
  return spInitAlgo(s, n, NULL);
}

static void spFini(spSet *s) {
  for (int r = 0; r < s->n; r++) {
    dmacclCommDestroy(s->comm[r]);
    if (gpu) cudaStreamDestroy(s->st[r]);
  }
}

static int spSync(spSet *s) {
  int bad = 0;
  for (int r = 0; r < s->n; r++) {
    if (gpu && cudaStreamSynchronize(s->st[r]) != cudaSuccess) bad = 1;
    if (dmacclCommSynchronize(s->comm[r]) != dmacclSuccess) {
      fprintf(stderr, "rank %d: %s\n", r, dmacclCommGetLastError(s->comm[r]));
      bad = 1;
    }
  }
  return bad;
}

/* A message of one case: rank `from` sends count floats to rank `to`. */
typedef struct {
  int from, to;
  size_t count;
} msg;

/* Issues msgs (in list order per rank, all in one group), then checks every
 * receive buffer byte by byte (guards included) and that inputs are unchanged.
 * persist: as dmacclSendInit / dmacclRecvInit requests, made once and
 * started in a group three times with fresh data. */
static int spRunMode(spSet *s, const msg *m, int k, uint64_t seed, int persist) {
  unsigned char *sbuf[16], *rbuf[16], *host[16], *want[16];
  dmacclRequest_t sreq[16], rreq[16];
  size_t bytes[16];
  ASSERT_TRUE(k <= 16);
  for (int i = 0; i < k; i++) {
    bytes[i] = m[i].count * sizeof(float);
    host[i] = malloc(bytes[i] + GUARD);
    want[i] = malloc(bytes[i] + GUARD);
    sbuf[i] = bufAlloc(s->dev[m[i].from], bytes[i] + GUARD);
    rbuf[i] = bufAlloc(s->dev[m[i].to], bytes[i] + GUARD);
    ASSERT_TRUE(host[i] && want[i] && sbuf[i] && rbuf[i]);
    if (persist) {
      ASSERT_EQ_INT(
          dmacclSendInit(sbuf[i], m[i].count, dmacclFloat32, m[i].to, s->comm[m[i].from], &sreq[i]),
          dmacclSuccess);
      ASSERT_EQ_INT(
          dmacclRecvInit(rbuf[i], m[i].count, dmacclFloat32, m[i].from, s->comm[m[i].to], &rreq[i]),
          dmacclSuccess);
    }
  }
  int bad = 0;
  for (int rep = 0; rep < (persist ? 3 : 1) && !bad; rep++) {
    for (int i = 0; i < k; i++) {
      payload(want[i], bytes[i], seed + 1000u * (uint64_t)rep, m[i].from, m[i].to, i);
      memset(want[i] + bytes[i], POISON, GUARD);
      memset(host[i], POISON, bytes[i] + GUARD);
      ASSERT_EQ_INT(bufPut(rbuf[i], host[i], bytes[i] + GUARD), 0);
      ASSERT_EQ_INT(bufPut(sbuf[i], want[i], bytes[i] + GUARD), 0);
    }
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    for (int i = 0; i < k; i++) {
      if (persist) {
        ASSERT_EQ_INT(dmacclStart(sreq[i], s->st[m[i].from]), dmacclSuccess);
        ASSERT_EQ_INT(dmacclStart(rreq[i], s->st[m[i].to]), dmacclSuccess);
        continue;
      }
      ASSERT_EQ_INT(dmacclSend(sbuf[i], m[i].count, dmacclFloat32, m[i].to, s->comm[m[i].from],
                               s->st[m[i].from]),
                    dmacclSuccess);
      ASSERT_EQ_INT(dmacclRecv(rbuf[i], m[i].count, dmacclFloat32, m[i].from, s->comm[m[i].to],
                               s->st[m[i].to]),
                    dmacclSuccess);
    }
    ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
    ASSERT_EQ_INT(spSync(s), 0);
    for (int i = 0; i < k; i++) {
      ASSERT_EQ_INT(bufGet(host[i], rbuf[i], bytes[i] + GUARD), 0);
      long long d = testFirstDiff(host[i], want[i], bytes[i] + GUARD);
      if (d >= 0) {
        TEST_FAIL("message %d (rank %d -> %d, %zu floats%s): byte %lld is 0x%02x, expected 0x%02x",
                  i, m[i].from, m[i].to, m[i].count, persist ? ", started" : "", d, host[i][d],
                  want[i][d]);
        bad = 1;
      }
      ASSERT_EQ_INT(bufGet(host[i], sbuf[i], bytes[i] + GUARD), 0);
      if (testFirstDiff(host[i], want[i], bytes[i] + GUARD) >= 0) {
        TEST_FAIL("message %d: the send buffer changed", i);
        bad = 1;
      }
    }
  }
  for (int i = 0; i < k; i++) {
    if (persist) {
      ASSERT_EQ_INT(dmacclRequestFree(sreq[i]), dmacclSuccess);
      ASSERT_EQ_INT(dmacclRequestFree(rreq[i]), dmacclSuccess);
    }
    bufFree(sbuf[i]), bufFree(rbuf[i]), free(host[i]), free(want[i]);
  }
  return bad;
}

static int spRun(spSet *s, const msg *m, int k, uint64_t seed) {
  return spRunMode(s, m, k, seed, 0);
}

static int testOneProcess(void) {
  for (int n = 2; n <= MAXN; n++) {
    spSet s;
    if (spInit(&s, n)) return 1;
    msg ring[MAXN], pairs[16];
    for (int r = 0; r < n; r++) ring[r] = (msg){r, (r + 1) % n, 1000 + 37 * (size_t)r};
    int k = 0;
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++)
        if (a != b) pairs[k++] = (msg){a, b, (size_t)(1 + a * 977 + b * 31)};
    /* Several messages one way in one group: matched in call order. */
    msg order[] = {{0, 1, 5}, {0, 1, 70000}, {1, 0, 3}, {0, 1, 0}, {0, 1, 123457}};
    /* Large enough for the direct algorithms (above the 8 MB staging slot). */
    msg big[] = {{0, n - 1, (size_t)3 << 20}, {n - 1, 0, (size_t)5 << 19}};
    int rc = spRun(&s, ring, n, 1) || spRun(&s, pairs, k, 2) || spRun(&s, order, 5, 3) ||
             spRun(&s, big, 2, 4) || spRun(&s, ring, n, 5);
    for (int r = 0; r < n && !rc; r++) rc = channelTables(s.comm[r]);
    spFini(&s);
    if (rc) {
      TEST_FAIL("%d ranks", n);
      return 1;
    }
  }
  return 0;
}

/* The same exchanges as persistent requests. */
static int testPersistent(void) {
  for (int n = 2; n <= MAXN; n++) {
    spSet s;
    if (spInit(&s, n)) return 1;
    msg ring[MAXN], pairs[16];
    for (int r = 0; r < n; r++) ring[r] = (msg){r, (r + 1) % n, 999 + 41 * (size_t)r};
    int k = 0;
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++)
        if (a != b) pairs[k++] = (msg){a, b, (size_t)(3 + a * 1013 + b * 29)};
    msg order[] = {{1, 0, 7}, {1, 0, 65537}, {0, 1, 0}, {1, 0, 12}};
    msg big[] = {{n - 1, 0, (size_t)3 << 20}};
    int rc = spRunMode(&s, ring, n, 31, 1) || spRunMode(&s, pairs, k, 32, 1) ||
             spRunMode(&s, order, 4, 33, 1) || spRunMode(&s, big, 1, 34, 1) ||
             spRun(&s, ring, n, 35); /* eager calls after the requests are freed */
    spFini(&s);
    if (rc) {
      TEST_FAIL("%d ranks", n);
      return 1;
    }
  }
  return 0;
}

/* AlltoAllv and the channels (src/core/pairs.c): with pairs in both modes
 * (the built-in table on 2 ranks) or in graphs only (the built-in one on 3
 * or more), the first uncaptured AlltoAllv makes the channels with every
 * peer (comm->pairsReady), empty blocks included, so a later captured one
 * can run so; with pairs in neither it makes none. Every byte of every
 * rank's result checked, the gaps between blocks still poisoned. */
static int pairsCase(int n, const char *algorithm, int wantChannels) {
  spSet s;
  if (spInitAlgo(&s, n, algorithm)) return 1;
  enum { E = 4 }; /* elements of 4 bytes; rank r sends r + q elements to q, 0 to itself */
  size_t sc[MAXN][MAXN], sd[MAXN][MAXN], rc[MAXN][MAXN], rd[MAXN][MAXN], span = 0;
  for (int r = 0; r < n; r++)
    for (int q = 0; q < n; q++) {
      sc[r][q] = q == r ? 0 : (size_t)(r + q);
      rc[q][r] = sc[r][q];
      sd[r][q] = (size_t)q * 2 * MAXN; /* room for the largest block, and a gap */
      rd[q][r] = (size_t)r * 2 * MAXN;
    }
  span = (size_t)n * 2 * MAXN * E;
  unsigned char in[MAXN][2 * MAXN * MAXN * E], out[2 * MAXN * MAXN * E];
  void *sb[MAXN], *rb[MAXN];
  int bad = 0;
  for (int r = 0; r < n; r++) {
    payload(in[r], span, 77, r, r, 0);
    memset(out, POISON, span);
    sb[r] = bufAlloc(s.dev[r], span);
    rb[r] = bufAlloc(s.dev[r], span);
    ASSERT_TRUE(sb[r] && rb[r]);
    ASSERT_EQ_INT(bufPut(sb[r], in[r], span), 0);
    ASSERT_EQ_INT(bufPut(rb[r], out, span), 0);
  }
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < n; r++)
    ASSERT_EQ_INT(dmacclAlltoAllv(sb[r], sc[r], sd[r], rb[r], rc[r], rd[r], dmacclFloat32,
                                  s.comm[r], s.st[r]),
                  dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < n; r++) ASSERT_EQ_INT(dmacclCommSynchronize(s.comm[r]), dmacclSuccess);
  for (int r = 0; r < n && !bad; r++) {
    unsigned char want[2 * MAXN * MAXN * E];
    memset(want, POISON, span);
    for (int q = 0; q < n; q++) memcpy(want + rd[r][q] * E, in[q] + sd[q][r] * E, rc[r][q] * E);
    ASSERT_EQ_INT(bufGet(out, rb[r], span), 0);
    if (memcmp(out, want, span)) {
      TEST_FAIL("%d ranks, %s: rank %d's result", n, algorithm ? algorithm : "built-in", r);
      bad = 1;
    }
    int made = 0;
    for (int i = 0; s.comm[r]->p2p && i < 2 * n; i++) made += s.comm[r]->p2p[i] != NULL;
    if (made != (wantChannels ? 2 * (n - 1) : 0) || s.comm[r]->pairsReady != wantChannels) {
      TEST_FAIL("%d ranks, %s: rank %d has %d channel ends, pairsReady %d", n,
                algorithm ? algorithm : "built-in", r, made, s.comm[r]->pairsReady);
      bad = 1;
    }
  }
  for (int r = 0; r < n; r++) bufFree(sb[r]), bufFree(rb[r]);
  spFini(&s);
  return bad;
}

/* Order around an AlltoAllv run as pairs, no synchronize between calls:
 * an AllReduce into its send buffer before it (separate groups), an
 * AllReduce of its receive buffer after it, and both in one group with it
 * (then it runs as a collective in its place: expandPairs, which the
 * channels show: made by the three groups' AlltoAllv, not by the one
 * group's). Every rank sends every rank, itself included, a block; every
 * element is an exact sum. */
static int pairsOrderCase(int n, int oneGroup) {
  spSet s;
  if (spInitAlgo(&s, n, "alltoallv:pairs")) return 1;
  enum { C = 1 << 16 }; /* elements per block: the host workers take a while */
  size_t cnt[MAXN], dsp[MAXN];
  for (int q = 0; q < n; q++) cnt[q] = C, dsp[q] = (size_t)q * C;
  size_t bytes = (size_t)n * C * sizeof(float);
  static float host[MAXN * C], want[MAXN * C];
  void *x[MAXN], *y[MAXN], *z[MAXN], *w[MAXN];
  for (int r = 0; r < n; r++) {
    x[r] = bufAlloc(s.dev[r], bytes), y[r] = bufAlloc(s.dev[r], bytes);
    z[r] = bufAlloc(s.dev[r], bytes), w[r] = bufAlloc(s.dev[r], bytes);
    ASSERT_TRUE(x[r] && y[r] && z[r] && w[r]);
    for (size_t i = 0; i < (size_t)n * C; i++) host[i] = (float)((r + 1) * (int)(i % 97));
    ASSERT_EQ_INT(bufPut(x[r], host, bytes), 0);
    for (size_t i = 0; i < (size_t)n * C; i++) host[i] = -1.0f;
    ASSERT_EQ_INT(bufPut(y[r], host, bytes), 0);
    ASSERT_EQ_INT(bufPut(z[r], host, bytes), 0);
    ASSERT_EQ_INT(bufPut(w[r], host, bytes), 0);
  }
  /* y = sum of x; z = AlltoAllv of y; w = sum of z */
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < n; r++)
    ASSERT_EQ_INT(
        dmacclAllReduce(x[r], y[r], (size_t)n * C, dmacclFloat32, dmacclSum, s.comm[r], s.st[r]),
        dmacclSuccess);
  if (!oneGroup) ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  if (!oneGroup) ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < n; r++)
    ASSERT_EQ_INT(
        dmacclAlltoAllv(y[r], cnt, dsp, z[r], cnt, dsp, dmacclFloat32, s.comm[r], s.st[r]),
        dmacclSuccess);
  if (!oneGroup) ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  if (!oneGroup) ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < n; r++)
    ASSERT_EQ_INT(
        dmacclAllReduce(z[r], w[r], (size_t)n * C, dmacclFloat32, dmacclSum, s.comm[r], s.st[r]),
        dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  for (int r = 0; r < n; r++) ASSERT_EQ_INT(dmacclCommSynchronize(s.comm[r]), dmacclSuccess);
  /* y[i] = T * (i % 97) on every rank, T = n(n+1)/2; rank p's z has y's
   * block p at every block; so w, the same on every rank, holds at block
   * q's element i T * the sum over p of ((p * C + i) % 97) */
  float t = (float)(n * (n + 1) / 2);
  for (int q = 0; q < n; q++)
    for (size_t i = 0; i < C; i++) {
      size_t sum = 0;
      for (int p = 0; p < n; p++) sum += ((size_t)p * C + i) % 97;
      want[(size_t)q * C + i] = t * (float)sum;
    }
  int bad = 0;
  for (int r = 0; r < n && !bad; r++) {
    int made = 0;
    for (int i = 0; s.comm[r]->p2p && i < 2 * n; i++) made += s.comm[r]->p2p[i] != NULL;
    if (made != (oneGroup ? 0 : 2 * (n - 1)) || s.comm[r]->pairsReady != !oneGroup) {
      TEST_FAIL("%d ranks, %s: rank %d has %d channel ends, pairsReady %d", n,
                oneGroup ? "one group" : "three groups", r, made, s.comm[r]->pairsReady);
      bad = 1;
    }
    ASSERT_EQ_INT(bufGet(host, w[r], bytes), 0);
    if (memcmp(host, want, bytes)) {
      TEST_FAIL("%d ranks, %s: rank %d's AllReduce of the AlltoAllv's result", n,
                oneGroup ? "one group" : "three groups", r);
      bad = 1;
    }
  }
  for (int r = 0; r < n; r++) bufFree(x[r]), bufFree(y[r]), bufFree(z[r]), bufFree(w[r]);
  spFini(&s);
  return bad;
}

/* coreP2pOrderKey: both ends of a direction compute the same key, every
 * direction its own, and the pairs fall into the rounds of a round-robin
 * schedule (n - 1 rounds for even n, n for odd), in each of which a rank has
 * at most one partner: a group's Send/Recv calls, posted in key order, then
 * never have two ranks writing one rank at once in issue order, and every
 * rank posts them in one order (the queue-safety rule). White box: the key
 * is 1 + 2 * ((round * n + lo) * n + hi) + (src > dst). */
static int testOrderKey(void) {
  for (int n = 2; n <= 17; n++) {
    int m = n % 2 ? n : n - 1, bad = 0;
    int *seen = calloc((size_t)m * (size_t)n, sizeof(int));
    uint64_t *keys = calloc((size_t)n * (size_t)n, sizeof(uint64_t));
    ASSERT_TRUE(seen && keys);
    for (int src = 0; src < n && !bad; src++)
      for (int dst = 0; dst < n && !bad; dst++) {
        if (src == dst) continue;
        struct dmacclComm cs = {.rank = src, .nranks = n}, cd = {.rank = dst, .nranks = n};
        coreOp send = {.comm = &cs, .p2p = 1, .peer = dst},
               recv = {.comm = &cd, .p2p = 2, .peer = src};
        uint64_t k = coreP2pOrderKey(&send);
        if (k != coreP2pOrderKey(&recv) || k == 0 || k == UINT64_MAX) {
          TEST_FAIL("%d ranks, %d -> %d: send key %llu, receive key %llu", n, src, dst,
                    (unsigned long long)k, (unsigned long long)coreP2pOrderKey(&recv));
          bad = 1;
        }
        keys[(size_t)src * (size_t)n + (size_t)dst] = k;
        uint64_t round = ((k - 1) / 2) / ((uint64_t)n * (uint64_t)n);
        int lo = src < dst ? src : dst, hi = src ^ dst ^ lo;
        if (round >= (uint64_t)m || (k - 1) % 2 != (uint64_t)(src > dst) ||
            ((k - 1) / 2) % ((uint64_t)n * (uint64_t)n) != (uint64_t)(lo * n + hi)) {
          TEST_FAIL("%d ranks, %d -> %d: key %llu is not (round < %d, %d, %d, direction)", n, src,
                    dst, (unsigned long long)k, m, lo, hi);
          bad = 1;
        }
        /* a rank's partner in this round: one at most */
        for (int x = 0; x < 2 && !bad; x++) {
          int me = x ? hi : lo, other = x ? lo : hi;
          int *slot = &seen[round * (uint64_t)n + (uint64_t)me];
          if (*slot && *slot != other + 1) {
            TEST_FAIL("%d ranks: rank %d meets ranks %d and %d in round %llu", n, me, *slot - 1,
                      other, (unsigned long long)round);
            bad = 1;
          }
          *slot = other + 1;
        }
      }
    for (int a = 0; a < n * n && !bad; a++)
      for (int b = a + 1; b < n * n && !bad; b++)
        if (keys[a] && keys[a] == keys[b]) {
          TEST_FAIL("%d ranks: directions %d -> %d and %d -> %d share key %llu", n, a / n, a % n,
                    b / n, b % n, (unsigned long long)keys[a]);
          bad = 1;
        }
    for (int r = 0; r < m && !bad; r++) { /* every round used: n - 1 or n of them */
      int any = 0;
      for (int q = 0; q < n; q++) any |= seen[r * n + q] != 0;
      if (!any) {
        TEST_FAIL("%d ranks: round %d holds no pair", n, r);
        bad = 1;
      }
    }
    struct dmacclComm c0 = {.rank = 0, .nranks = n};
    coreOp coll = {.comm = &c0}, self = {.comm = &c0, .self = 1};
    if (!bad && (coreP2pOrderKey(&coll) != 0 || coreP2pOrderKey(&self) != UINT64_MAX)) {
      TEST_FAIL("%d ranks: a collective's key is not 0 or a self op's not the last", n);
      bad = 1;
    }
    free(seen);
    free(keys);
    if (bad) return 1;
  }
  return 0;
}

static int testPairsOrder(void) {
  for (int n = 2; n <= MAXN; n++)
    for (int g = 0; g < 2; g++) ASSERT_EQ_INT(pairsOrderCase(n, g), 0);
  return 0;
}

static int testPairs(void) {
  for (int n = 2; n <= MAXN; n++) {
    /* built-in: stagell, eager and in graphs, with no channels */
    ASSERT_EQ_INT(pairsCase(n, NULL, 0), 0);
    ASSERT_EQ_INT(pairsCase(n, "alltoallv:pushb;alltoallv@graph:pairs", 1), 0);
    ASSERT_EQ_INT(pairsCase(n, "alltoallv:pairs", 1), 0);
    ASSERT_EQ_INT(pairsCase(n, "alltoallv:pushn", 0), 0);
  }
  return 0;
}

/* Counts that disagree: nothing lands, Synchronize says so, and the next
 * exchange works. */
static int testMismatch(void) {
  spSet s;
  if (spInit(&s, 2)) return 1;
  size_t bytes = 64 * sizeof(float);
  unsigned char host[64 * sizeof(float)], want[64 * sizeof(float)];
  void *sb = bufAlloc(s.dev[0], bytes), *rb = bufAlloc(s.dev[1], bytes);
  ASSERT_TRUE(sb && rb);
  payload(host, bytes, 9, 0, 1, 0);
  ASSERT_EQ_INT(bufPut(sb, host, bytes), 0);
  memset(want, POISON, bytes);
  ASSERT_EQ_INT(bufPut(rb, want, bytes), 0);
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  ASSERT_EQ_INT(dmacclSend(sb, 10, dmacclFloat32, 1, s.comm[0], s.st[0]), dmacclSuccess);
  ASSERT_EQ_INT(dmacclRecv(rb, 12, dmacclFloat32, 0, s.comm[1], s.st[1]), dmacclSuccess);
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  if (gpu) ASSERT_TRUE(cudaStreamSynchronize(s.st[1]) == cudaSuccess);
  ASSERT_EQ_INT(dmacclCommSynchronize(s.comm[1]), dmacclInvalidUsage);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[1]), "Send/Recv from rank 0 to rank 1");
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[1]), "nothing was copied");
  ASSERT_EQ_INT(dmacclCommSynchronize(s.comm[0]), dmacclInvalidUsage);
  ASSERT_EQ_INT(dmacclCommSynchronize(s.comm[1]), dmacclSuccess); /* reported once */
  ASSERT_EQ_INT(bufGet(host, rb, bytes), 0);
  ASSERT_TRUE(testFirstDiff(host, want, bytes) < 0);
  bufFree(sb), bufFree(rb);
  msg ok[] = {{0, 1, 4096}, {1, 0, 17}};
  int rc = spRun(&s, ok, 2, 11);
  spFini(&s);
  return rc;
}

/* Send/Recv to oneself inside a group, as torch's all_to_all_single with
 * splits and NCCL programs issue them: every rank sends every rank (itself
 * included) a block of its own length, all in one group, plus two more
 * pairs to itself issued Send, Send, Recv, Recv (matched in order: the
 * first Recv gets the first Send's bytes), an empty pair and an in-place
 * one. Every byte checked, guards included. Then the refusals: a Send to
 * itself with no Recv, one whose Recv has another count, one alone (outside
 * a group); nothing written, the ranks' other calls in that group not
 * issued, and the set usable after. */
static int selfCase(int n, uint64_t seed) {
  spSet s;
  if (spInit(&s, n)) return 1;
  enum { B = 4 * 1031 };   /* bytes of block unit (odd element count) */
  size_t lens[MAXN][MAXN]; /* bytes rank r sends to rank q */
  for (int r = 0; r < n; r++)
    for (int q = 0; q < n; q++) lens[r][q] = (size_t)(1 + (r + 2 * q) % 3) * B;
  unsigned char *sb[MAXN], *rb[MAXN], *xa[MAXN], *xb[MAXN], *ra[MAXN], *rbb[MAXN];
  size_t A = 40 * sizeof(float), Bb = 3000 * sizeof(float);
  unsigned char *host = malloc(3 * n * B + 2 * GUARD + Bb),
                *want = malloc(3 * n * B + 2 * GUARD + Bb);
  ASSERT_TRUE(host && want);
  for (int r = 0; r < n; r++) {
    sb[r] = bufAlloc(s.dev[r], 3 * n * B);
    rb[r] = bufAlloc(s.dev[r], 3 * n * B + GUARD);
    xa[r] = bufAlloc(s.dev[r], A), xb[r] = bufAlloc(s.dev[r], Bb);
    ra[r] = bufAlloc(s.dev[r], A + GUARD), rbb[r] = bufAlloc(s.dev[r], Bb + GUARD);
    ASSERT_TRUE(sb[r] && rb[r] && xa[r] && xb[r] && ra[r] && rbb[r]);
    payload(host, 3 * n * B, seed, r, 0, 0);
    ASSERT_EQ_INT(bufPut(sb[r], host, 3 * n * B), 0);
    payload(host, A, seed, r, r, 1);
    ASSERT_EQ_INT(bufPut(xa[r], host, A), 0);
    payload(host, Bb, seed, r, r, 2);
    ASSERT_EQ_INT(bufPut(xb[r], host, Bb), 0);
    memset(host, POISON, 3 * n * B + GUARD + Bb);
    ASSERT_EQ_INT(bufPut(rb[r], host, 3 * n * B + GUARD), 0);
    ASSERT_EQ_INT(bufPut(ra[r], host, A + GUARD), 0);
    ASSERT_EQ_INT(bufPut(rbb[r], host, Bb + GUARD), 0);
  }
  ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
  for (int r = 0; r < n; r++) {
    size_t so = 0, ro = 0;

    for (int q = 0; q < n; q++) {
      ASSERT_EQ_INT(dmacclSend(sb[r] + so, lens[r][q] / 4, dmacclFloat32, q, s.comm[r], s.st[r]),
                    dmacclSuccess);
      ASSERT_EQ_INT(dmacclRecv(rb[r] + ro, lens[q][r] / 4, dmacclFloat32, q, s.comm[r], s.st[r]),
                    dmacclSuccess);
      so += lens[r][q], ro += lens[q][r];
    }
    ASSERT_EQ_INT(dmacclSend(xa[r], A / 4, dmacclFloat32, r, s.comm[r], s.st[r]), dmacclSuccess);
    ASSERT_EQ_INT(dmacclSend(xb[r], Bb / 2, dmacclBfloat16, r, s.comm[r], s.st[r]), dmacclSuccess);
    ASSERT_EQ_INT(dmacclSend(xa[r], 0, dmacclFloat32, r, s.comm[r], s.st[r]), dmacclSuccess);
    ASSERT_EQ_INT(dmacclRecv(ra[r], A / 4, dmacclFloat32, r, s.comm[r], s.st[r]), dmacclSuccess);
    ASSERT_EQ_INT(dmacclRecv(rbb[r], Bb / 2, dmacclBfloat16, r, s.comm[r], s.st[r]), dmacclSuccess);
    ASSERT_EQ_INT(dmacclRecv(ra[r], 0, dmacclFloat32, r, s.comm[r], s.st[r]), dmacclSuccess);
    /* in place: the buffer itself */
    ASSERT_EQ_INT(dmacclSend(xb[r], 16, dmacclFloat32, r, s.comm[r], s.st[r]), dmacclSuccess);
    ASSERT_EQ_INT(dmacclRecv(xb[r], 16, dmacclFloat32, r, s.comm[r], s.st[r]), dmacclSuccess);
  }
  ASSERT_EQ_INT(dmacclGroupEnd(), dmacclSuccess);
  ASSERT_EQ_INT(spSync(&s), 0);
  for (int r = 0; r < n; r++) {
    size_t ro = 0;
    for (int q = 0; q < n; q++) {
      size_t so = 0;
      for (int t = 0; t < r; t++) so += lens[q][t];
      payload(host, 3 * n * B, seed, q, 0, 0);
      memcpy(want + ro, host + so, lens[q][r]);
      ro += lens[q][r];
    }
    memset(want + ro, POISON, GUARD);
    ASSERT_EQ_INT(bufGet(host, rb[r], ro + GUARD), 0);
    long long d = testFirstDiff(host, want, ro + GUARD);
    if (d >= 0) {
      TEST_FAIL("%d ranks: rank %d's exchange, byte %lld", n, r, d);
      return 1;
    }
    payload(want, A, seed, r, r, 1);
    memset(want + A, POISON, GUARD);
    ASSERT_EQ_INT(bufGet(host, ra[r], A + GUARD), 0);
    if ((d = testFirstDiff(host, want, A + GUARD)) >= 0) {
      TEST_FAIL("%d ranks: rank %d's first pair to itself, byte %lld", n, r, d);
      return 1;
    }
    payload(want, Bb, seed, r, r, 2);
    memset(want + Bb, POISON, GUARD);
    ASSERT_EQ_INT(bufGet(host, rbb[r], Bb + GUARD), 0);
    if ((d = testFirstDiff(host, want, Bb + GUARD)) >= 0) {
      TEST_FAIL("%d ranks: rank %d's second pair to itself, byte %lld", n, r, d);
      return 1;
    }
    ASSERT_EQ_INT(bufGet(host, xb[r], Bb), 0); /* the in-place pair left it */
    ASSERT_TRUE(testFirstDiff(host, want, Bb) < 0);
  }
  /* Refusals: a Send to itself without its Recv (rank 0), beside a pair of
   * every other rank; then a Recv of another count. Nothing is issued. */
  for (int bad = 0; bad < 2; bad++) {
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    for (int r = 0; r < n; r++) {
      ASSERT_EQ_INT(dmacclSend(xa[r], A / 4, dmacclFloat32, r, s.comm[r], s.st[r]), dmacclSuccess);
      if (r || bad)
        ASSERT_EQ_INT(dmacclRecv(ra[r], A / 4 - (r == 0), dmacclFloat32, r, s.comm[r], s.st[r]),
                      dmacclSuccess);
      if (n > 1)
        ASSERT_EQ_INT(dmacclSend(xb[r], 64, dmacclFloat32, (r + 1) % n, s.comm[r], s.st[r]),
                      dmacclSuccess);
      if (n > 1)
        ASSERT_EQ_INT(dmacclRecv(rbb[r], 64, dmacclFloat32, (r + n - 1) % n, s.comm[r], s.st[r]),
                      dmacclSuccess);
    }
    memset(host, POISON, Bb + GUARD);
    for (int r = 0; r < n; r++) {
      ASSERT_EQ_INT(bufPut(ra[r], host, A + GUARD), 0);
      ASSERT_EQ_INT(bufPut(rbb[r], host, Bb + GUARD), 0);
    }
    ASSERT_EQ_INT(dmacclGroupEnd(), bad ? dmacclInvalidArgument : dmacclInvalidUsage);
    ASSERT_CONTAINS(dmacclCommGetLastError(NULL),
                    bad ? "rank 0's Send to itself (call 1 of that kind in the group) has 40 "
                          "elements of type 7, its matching Recv 39"
                        : "rank 0's dmacclSend to itself (its call 1 of that kind in the group) "
                          "has no matching dmacclRecv from itself");
    ASSERT_EQ_INT(spSync(&s), 0);
    for (int r = 0; r < n; r++) {
      ASSERT_EQ_INT(bufGet(want, ra[r], A + GUARD), 0);
      ASSERT_TRUE(testFirstDiff(host, want, A + GUARD) < 0);
      ASSERT_EQ_INT(bufGet(want, rbb[r], Bb + GUARD), 0);
      ASSERT_TRUE(testFirstDiff(host, want, Bb + GUARD) < 0);
    }
  }
  ASSERT_EQ_INT(dmacclSend(xa[0], 4, dmacclFloat32, 0, s.comm[0], s.st[0]), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "runs only inside a group");
  if (gpu) { /* a pair split across two streams */
    cudaStream_t other;
    ASSERT_TRUE(cudaSetDevice(s.dev[0]) == cudaSuccess &&
                cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) == cudaSuccess);
    ASSERT_EQ_INT(dmacclGroupStart(), dmacclSuccess);
    ASSERT_EQ_INT(dmacclSend(xa[0], 4, dmacclFloat32, 0, s.comm[0], s.st[0]), dmacclSuccess);
    ASSERT_EQ_INT(dmacclRecv(ra[0], 4, dmacclFloat32, 0, s.comm[0], other), dmacclSuccess);
    ASSERT_EQ_INT(dmacclGroupEnd(), dmacclInvalidUsage);
    ASSERT_CONTAINS(dmacclCommGetLastError(NULL), "different streams");
    cudaStreamDestroy(other);
  }
  for (int r = 0; r < n; r++) {
    bufFree(sb[r]), bufFree(rb[r]), bufFree(xa[r]), bufFree(xb[r]), bufFree(ra[r]);
    bufFree(rbb[r]);
  }
  free(host), free(want);
  /* the set is usable after the refusals */
  int rc = 0;
  if (n > 1) {
    msg ok[] = {{0, n - 1, 333}, {n - 1, 0, 5}};
    rc = spRun(&s, ok, 2, seed + 1);
  }
  spFini(&s);
  return rc;
}

/* A pair to itself beside an AlltoAllv in one group, each rank its own
 * thread and group, the pairs' sizes differing between ranks (rank 0's
 * empty): every rank must still choose the same form for the AlltoAllv (a
 * self op needs no peer's call; the review found ranks choosing
 * differently and the set hanging). Then, on the same buffers, an
 * AllReduce in place and a pair to itself copying its result in the next
 * group: the copy must see the AllReduce's result (the host executor copies
 * on the calling thread, so the rank's earlier work is waited for first). */
typedef struct {
  spSet *s;
  int r, bad;
  float *sb, *rb, *own, *got, *x, *z;
  dmacclResult_t end, sync;
} selfArg;
enum { SA_N = 1024, SA_X = 1 << 16 };

static void *selfThread(void *p) {
  selfArg *a = p;
  spSet *s = a->s;
  int r = a->r;
  if (gpu && cudaSetDevice(s->dev[r]) != cudaSuccess) return a->bad = 1, NULL;
  size_t cnt[2] = {SA_N, SA_N}, dis[2] = {0, SA_N}, own = r ? 4 : 0;
  dmacclGroupStart();
  dmacclResult_t rc =
      dmacclAlltoAllv(a->sb, cnt, dis, a->rb, cnt, dis, dmacclFloat32, s->comm[r], s->st[r]);
  rc |= dmacclSend(a->own, own, dmacclFloat32, r, s->comm[r], s->st[r]);
  rc |= dmacclRecv(a->got, own, dmacclFloat32, r, s->comm[r], s->st[r]);
  a->end = dmacclGroupEnd();
  if (rc != dmacclSuccess) a->bad = 1;
  dmacclGroupStart();
  rc = dmacclAllReduce(a->x, a->x, SA_X, dmacclFloat32, dmacclSum, s->comm[r], s->st[r]);
  a->end |= dmacclGroupEnd();
  dmacclGroupStart();
  rc |= dmacclSend(a->x, SA_X, dmacclFloat32, r, s->comm[r], s->st[r]);
  rc |= dmacclRecv(a->z, SA_X, dmacclFloat32, r, s->comm[r], s->st[r]);
  a->end |= dmacclGroupEnd();
  if (rc != dmacclSuccess) a->bad = 1;
  if (gpu && cudaStreamSynchronize(s->st[r]) != cudaSuccess) a->bad = 1;
  a->sync = dmacclCommSynchronize(s->comm[r]);
  return NULL;
}

static int selfBesideCollectives(const char *algorithm) {
  spSet s;
  if (spInitAlgo(&s, 2, algorithm)) return 1;
  selfArg a[2];
  float host[2 * SA_N], want[2 * SA_N];
  float *xs = malloc(SA_X * sizeof(float) * 3);
  ASSERT_TRUE(xs);
  for (int r = 0; r < 2; r++) {
    a[r] = (selfArg){.s = &s, .r = r};
    a[r].sb = bufAlloc(s.dev[r], sizeof(host)), a[r].rb = bufAlloc(s.dev[r], sizeof(host));
    a[r].own = bufAlloc(s.dev[r], 16), a[r].got = bufAlloc(s.dev[r], 16);
    a[r].x = bufAlloc(s.dev[r], SA_X * 4), a[r].z = bufAlloc(s.dev[r], SA_X * 4);
    ASSERT_TRUE(a[r].sb && a[r].rb && a[r].own && a[r].got && a[r].x && a[r].z);
    for (int i = 0; i < 2 * SA_N; i++) host[i] = (float)(100 * r + i % 97);
    ASSERT_EQ_INT(bufPut(a[r].sb, host, sizeof(host)), 0);
    memset(host, POISON, sizeof(host));
    ASSERT_EQ_INT(bufPut(a[r].rb, host, sizeof(host)), 0);
    ASSERT_EQ_INT(bufPut(a[r].got, host, 16), 0);
    for (int i = 0; i < 4; i++) want[i] = (float)(7 * r + i);
    ASSERT_EQ_INT(bufPut(a[r].own, want, 16), 0);
    for (int i = 0; i < SA_X; i++) xs[i] = (float)((i * 7 + r) % 19);
    ASSERT_EQ_INT(bufPut(a[r].x, xs, SA_X * 4), 0);
    ASSERT_EQ_INT(bufPut(a[r].z, host, 16), 0);
  }
  pthread_t t[2];
  for (int r = 0; r < 2; r++) ASSERT_EQ_INT(pthread_create(&t[r], NULL, selfThread, &a[r]), 0);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < 2; r++) {
    if (a[r].bad || a[r].end != dmacclSuccess || a[r].sync != dmacclSuccess) {
      TEST_FAIL("%s: rank %d: a call failed (%s)", algorithm, r, dmacclCommGetLastError(s.comm[r]));
      return 1;
    }
    ASSERT_EQ_INT(bufGet(host, a[r].rb, sizeof(host)), 0);
    for (int q = 0; q < 2; q++)
      for (int i = 0; i < SA_N; i++) want[q * SA_N + i] = (float)(100 * q + (r * SA_N + i) % 97);
    long long d = testFirstDiff(host, want, sizeof(host));
    if (d >= 0) {
      TEST_FAIL("%s: rank %d's AlltoAllv, byte %lld", algorithm, r, d);
      return 1;
    }
    unsigned char g[16], w[16];
    ASSERT_EQ_INT(bufGet(g, a[r].got, 16), 0);
    for (int i = 0; i < 4; i++) ((float *)w)[i] = (float)(7 * r + i);
    if (!r) memset(w, POISON, 16); /* rank 0's pair was empty */
    ASSERT_TRUE(memcmp(g, w, 16) == 0);
    ASSERT_EQ_INT(bufGet(xs + SA_X, a[r].z, SA_X * 4), 0);
    for (int i = 0; i < SA_X; i++)
      if (xs[SA_X + i] != (float)((i * 7) % 19 + (i * 7 + 1) % 19)) {
        TEST_FAIL("%s: rank %d's copy to itself after the AllReduce: element %d is %g", algorithm,
                  r, i, (double)xs[SA_X + i]);
        return 1;
      }
  }
  for (int r = 0; r < 2; r++) {
    bufFree(a[r].sb), bufFree(a[r].rb), bufFree(a[r].own), bufFree(a[r].got);
    bufFree(a[r].x), bufFree(a[r].z);
  }
  free(xs);
  spFini(&s);
  return 0;
}

static int testSelf(void) {
  for (int n = 1; n <= 3; n++)
    if (selfCase(n, 40 + (uint64_t)n)) {
      TEST_FAIL("%d ranks", n);
      return 1;
    }
  /* AlltoAllv as Send/Recv pairs, and as the table chooses */
  return selfBesideCollectives("alltoallv:pairs") || selfBesideCollectives(NULL);
}

static int testArgs(void) {
  spSet s;
  if (spInit(&s, 2)) return 1;
  void *b = bufAlloc(s.dev[0], 64);
  ASSERT_TRUE(b);
  ASSERT_EQ_INT(dmacclSend(b, 4, dmacclFloat32, 2, s.comm[0], s.st[0]), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclSend: peer 2 is not a rank (0 to 1)");
  ASSERT_EQ_INT(dmacclRecv(b, 4, dmacclFloat32, -1, s.comm[0], s.st[0]), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclRecv: peer -1");
  ASSERT_EQ_INT(dmacclSend(b, 4, dmacclFloat32, 0, s.comm[0], s.st[0]), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "this rank itself");
  ASSERT_EQ_INT(dmacclSend(b, 4, (dmacclDataType_t)99, 1, s.comm[0], s.st[0]),
                dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclSend: datatype 99");
  ASSERT_EQ_INT(dmacclSend(b, (size_t)1 << 62, dmacclFloat32, 1, s.comm[0], s.st[0]),
                dmacclInvalidArgument); /* (a Send's buffer is its count, not times the ranks) */
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]),
                  "dmacclSend: count 4611686018427387904 of float (4 bytes each) overflows");
  ASSERT_EQ_INT(dmacclSend(NULL, 4, dmacclFloat32, 1, s.comm[0], s.st[0]), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclSend: sendbuff is NULL");
  ASSERT_EQ_INT(dmacclRecv(NULL, 4, dmacclFloat32, 1, s.comm[0], s.st[0]), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclRecv: recvbuff is NULL");
  ASSERT_EQ_INT(dmacclSend(b, 4, dmacclFloat32, 1, NULL, s.st[0]), dmacclInvalidArgument);
  if (!gpu) {
    ASSERT_EQ_INT(dmacclSend(b, 4, dmacclFloat32, 1, s.comm[0], (cudaStream_t)0x10),
                  dmacclInvalidArgument);
    ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclSend: stream");
  }
  dmacclRequest_t req = (dmacclRequest_t)0x1;
  ASSERT_EQ_INT(dmacclSendInit(b, 4, dmacclFloat32, 2, s.comm[0], &req), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]),
                  "dmacclSendInit: peer 2 is not a rank (0 to 1)");
  ASSERT_EQ_INT(dmacclRecvInit(b, 4, dmacclFloat32, 1, s.comm[1], &req), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[1]), "dmacclRecvInit: peer 1 is this rank itself");
  ASSERT_EQ_INT(dmacclRecvInit(NULL, 4, dmacclFloat32, 1, s.comm[0], &req), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclRecvInit: recvbuff is NULL");
  ASSERT_EQ_INT(dmacclSendInit(b, 4, dmacclFloat32, 1, s.comm[0], NULL), dmacclInvalidArgument);
  ASSERT_CONTAINS(dmacclCommGetLastError(s.comm[0]), "dmacclSendInit: request is NULL");
  ASSERT_EQ_INT(dmacclSendInit(b, 4, dmacclFloat32, 1, NULL, &req), dmacclInvalidArgument);
  ASSERT_TRUE(req == (dmacclRequest_t)0x1); /* nothing made */
  bufFree(b);
  /* Nothing was issued: a matched exchange works. */
  msg ok[] = {{1, 0, 300}, {0, 1, 3}};
  int rc = spRun(&s, ok, 2, 21);
  spFini(&s);
  return rc;
}

/* ---------- ranks as processes ---------- */

typedef struct {
  size_t count; /* floats per message */
  int graph;    /* capture the ring into a CUDA graph and replay it */
} mpArg;

/* The whole span of one receive (count floats + guard), checked. */
static int checkRecv(int rank, const unsigned char *dev, size_t bytes, uint64_t seed, int from,
                     int k) {
  unsigned char *got = malloc(bytes + GUARD), *want = malloc(bytes + GUARD);
  RANK_CHECK(got && want);
  payload(want, bytes, seed, from, rank, k);
  memset(want + bytes, POISON, GUARD);
  RANK_CHECK(bufGet(got, dev, bytes + GUARD) == 0);
  long long d = testFirstDiff(got, want, bytes + GUARD);
  if (d >= 0)
    fprintf(stderr,
            "rank %d: message %d from rank %d (%zu bytes): byte %lld is 0x%02x, not 0x%02x\n", rank,
            k, from, bytes, d, got[d], want[d]);
  free(got), free(want);
  return d >= 0;
}

static int prime(int rank, unsigned char *sb, unsigned char *rb, size_t bytes, uint64_t seed,
                 int to, int k) {
  unsigned char *h = malloc(bytes + GUARD);
  RANK_CHECK(h);
  payload(h, bytes, seed, rank, to, k);
  memset(h + bytes, POISON, GUARD);
  RANK_CHECK(bufPut(sb, h, bytes + GUARD) == 0);
  memset(h, POISON, bytes + GUARD);
  RANK_CHECK(bufPut(rb, h, bytes + GUARD) == 0);
  free(h);
  return 0;
}

/* 1 when two nodes of g are unordered (neither reaches the other): the
 * graph has branches that may run side by side. -1 on a CUDA error. */
static int graphHasParallel(cudaGraph_t g) {
  size_t nn = 0, ne = 0;
  if (cudaGraphGetNodes(g, NULL, &nn) != cudaSuccess ||
      cudaGraphGetEdges(g, NULL, NULL, NULL, &ne) != cudaSuccess)
    return -1;
  cudaGraphNode_t *nodes = calloc(nn + 1, sizeof(*nodes)), *from = calloc(ne + 1, sizeof(*from)),
                  *to = calloc(ne + 1, sizeof(*to));
  unsigned char *reach = calloc(nn * nn + 1, 1);
  int rc = -1;
  if (!nodes || !from || !to || !reach || cudaGraphGetNodes(g, nodes, &nn) != cudaSuccess ||
      cudaGraphGetEdges(g, from, to, NULL, &ne) != cudaSuccess)
    goto out;
  for (size_t e = 0; e < ne; e++) {
    size_t a = nn, b = nn;
    for (size_t i = 0; i < nn; i++) {
      if (nodes[i] == from[e]) a = i;
      if (nodes[i] == to[e]) b = i;
    }
    if (a < nn && b < nn) reach[a * nn + b] = 1;
  }
  for (size_t k = 0; k < nn; k++) /* transitive closure */
    for (size_t i = 0; i < nn; i++)
      if (reach[i * nn + k])
        for (size_t j = 0; j < nn; j++) reach[i * nn + j] |= reach[k * nn + j];
  rc = 0;
  for (size_t i = 0; i < nn && !rc; i++)
    for (size_t j = i + 1; j < nn && !rc; j++) rc = !reach[i * nn + j] && !reach[j * nn + i];
out:
  free(nodes), free(from), free(to), free(reach);
  return rc;
}

/* The kernel nodes of g, or -1 on a CUDA error. A node whose type the
 * runtime cannot name (a driver's batch of stream memory operations) is
 * not a kernel. */
static int graphKernels(cudaGraph_t g, int rank) {
  size_t nn = 0;
  cudaError_t e = cudaGraphGetNodes(g, NULL, &nn);
  cudaGraphNode_t *nodes = e == cudaSuccess ? calloc(nn + 1, sizeof(*nodes)) : NULL;
  if (nodes) e = cudaGraphGetNodes(g, nodes, &nn);
  int k = nodes && e == cudaSuccess ? 0 : -1;
  if (k < 0) fprintf(stderr, "rank %d: the graph's nodes: %s\n", rank, cudaGetErrorString(e));
  for (size_t i = 0; i < nn && k >= 0; i++) {
    enum cudaGraphNodeType t;
    e = cudaGraphNodeGetType(nodes[i], &t);
    if (e != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    k += t == cudaGraphNodeTypeKernel;
  }
  free(nodes);
  return k;
}

/* A rank's executor and, on GPUs, its device (rank r on GPU r % GPUs) and
 * a non-blocking stream of it. */
static int rankSetup(int rank, dmacclConfig_t *cfg, int *dev, cudaStream_t *st) {
  cfg->executor = gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  if (!gpu) return 0;
  int ngpu = 0;
  RANK_CHECK(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0);
  *dev = rank % ngpu;
  RANK_CHECK(cudaSetDevice(*dev) == cudaSuccess);
  RANK_CHECK(cudaStreamCreateWithFlags(st, cudaStreamNonBlocking) == cudaSuccess);
  return 0;
}

static int mpBodyFn(int rank, int n, const dmacclUniqueId *id, void *argp) {
  const mpArg *a = argp;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cudaStream_t st = NULL;
  int dev = 0;
  RANK_CHECK(rankSetup(rank, &cfg, &dev, &st) == 0);
  dmacclComm_t comm;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  size_t bytes = a->count * sizeof(float), span = bytes + GUARD;
  unsigned char *sb, *rb, *rb2;
  if (gpu) {
    RANK_CHECK((sb = bufAlloc(dev, span)) && (rb = bufAlloc(dev, span)) &&
               (rb2 = bufAlloc(dev, span)));
  } else { /* the host executor reaches peers only through dmacclMemAlloc memory */
    RANK_CHECK(dmacclMemAlloc(comm, 3 * span, (void **)&sb) == dmacclSuccess);
    rb = sb + span, rb2 = rb + span;
  }
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  uint64_t seed = 100 + a->count;
  if (!a->graph) {
    /* A pipeline outside groups: receive from the previous rank, then send on. */
    RANK_CHECK(prime(rank, sb, rb, bytes, seed, next, 0) == 0);
    dmacclResult_t r1 = rank > 0 ? dmacclRecv(rb, a->count, dmacclFloat32, prev, comm, st) : 0;
    dmacclResult_t r2 =
        rank < n - 1 && !r1 ? dmacclSend(sb, a->count, dmacclFloat32, next, comm, st) : 0;
    if (r1 || r2) fprintf(stderr, "rank %d: %s\n", rank, dmacclCommGetLastError(comm));
    RANK_CHECK(!r1 && !r2);
    if (gpu) RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
    RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
    if (rank > 0 && checkRecv(rank, rb, bytes, seed, prev, 0)) return 1;
  }
  /* Both ways around the ring in one group (the graph replays it). */
  cudaGraphExec_t exec = NULL;
  for (int it = 0; it < (a->graph ? 3 : 1); it++) {
    uint64_t s = seed + 10 + (uint64_t)it;
    RANK_CHECK(prime(rank, sb, rb, bytes, s, next, 1) == 0);
    /* rb2 receives from next; what next sends it is next's message to prev... */
    unsigned char *h = malloc(span);
    RANK_CHECK(h);
    memset(h, POISON, span);
    RANK_CHECK(bufPut(rb2, h, span) == 0);
    free(h);
    if (it == 0) {
      if (a->graph) {
        /* The first Send/Recv with a peer makes the channels: never in a
         * capture (refused, saying so), so warm up first. */
        RANK_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == 0);
        dmacclResult_t r = dmacclSend(sb, a->count, dmacclFloat32, next, comm, st);
        cudaGraph_t g0;
        RANK_CHECK(cudaStreamEndCapture(st, &g0) == cudaSuccess);
        cudaGraphDestroy(g0);
        RANK_CHECK(r == dmacclInvalidUsage);
        RANK_CHECK(strstr(dmacclCommGetLastError(comm), "warm-up") != NULL);
        RANK_CHECK(dmacclGroupStart() == dmacclSuccess);
        RANK_CHECK(dmacclSend(sb, a->count, dmacclFloat32, next, comm, st) == dmacclSuccess);
        RANK_CHECK(dmacclRecv(rb, a->count, dmacclFloat32, prev, comm, st) == dmacclSuccess);
        if (n > 2) {
          RANK_CHECK(dmacclSend(sb, a->count, dmacclFloat32, prev, comm, st) == dmacclSuccess);
          RANK_CHECK(dmacclRecv(rb2, a->count, dmacclFloat32, next, comm, st) == dmacclSuccess);
        }
        RANK_CHECK(dmacclGroupEnd() == dmacclSuccess);
        RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
        RANK_CHECK(prime(rank, sb, rb, bytes, s, next, 1) == 0); /* rb poisoned again */
        unsigned char *p = malloc(span);
        RANK_CHECK(p);
        memset(p, POISON, span);
        RANK_CHECK(bufPut(rb2, p, span) == 0);
        free(p);
        RANK_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == 0);
      }
      /* With 2 ranks a graph holds the exchange twice (the second moves
       * the same bytes again): the first staged operation of a graph on
       * each channel opens with an entry handshake (staged.c), the second
       * is the graph's steady form. */
      for (int twice = a->graph && n == 2; n == 2 && twice >= 0; twice--) {
        RANK_CHECK(dmacclGroupStart() == dmacclSuccess);
        /* next == prev: one message each way */
        RANK_CHECK(dmacclSend(sb, a->count, dmacclFloat32, next, comm, st) == dmacclSuccess);
        RANK_CHECK(dmacclRecv(rb, a->count, dmacclFloat32, prev, comm, st) == dmacclSuccess);
        RANK_CHECK(dmacclGroupEnd() == dmacclSuccess);
      }
      RANK_CHECK(dmacclGroupStart() == dmacclSuccess);
      if (n > 2) {
        RANK_CHECK(dmacclRecv(rb, a->count, dmacclFloat32, prev, comm, st) == dmacclSuccess);
        RANK_CHECK(dmacclSend(sb, a->count, dmacclFloat32, next, comm, st) == dmacclSuccess);
        dmacclResult_t r = dmacclSend(sb, a->count, dmacclFloat32, prev, comm, st);
        if (r) fprintf(stderr, "rank %d: %s\n", rank, dmacclCommGetLastError(comm));
        RANK_CHECK(r == dmacclSuccess);
        RANK_CHECK(dmacclRecv(rb2, a->count, dmacclFloat32, next, comm, st) == dmacclSuccess);
      }
      dmacclResult_t ge = dmacclGroupEnd();
      if (ge) fprintf(stderr, "rank %d: %s\n", rank, dmacclCommGetLastError(comm));
      RANK_CHECK(ge == dmacclSuccess);
      if (a->graph) {
        cudaGraph_t g;
        RANK_CHECK(cudaStreamEndCapture(st, &g) == cudaSuccess);
        /* The send and the receive run on two channels, side by side, not
         * one after the other on the stream: with 2 ranks each is one
         * chain of nodes, so the graph has unordered nodes only if they do.
         * Where the channels move lines (stagell), the second exchange's
         * send and receive are one kernel (cuda.c, held launches), the
         * first's two (an entry handshake each, stream memory operations
         * between its kernels): 3 kernels, not 4. */
        if (n == 2) {
          int kn = graphKernels(g, rank);
          if (kn != 0 && kn != 3) fprintf(stderr, "rank %d: %d kernels in the graph\n", rank, kn);
          RANK_CHECK(kn == 0 || kn == 3);
          int par = graphHasParallel(g);
          if (par != 1) fprintf(stderr, "rank %d: the group's calls are chained (%d)\n", rank, par);
          RANK_CHECK(par == 1);
        }
        RANK_CHECK(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
        cudaGraphDestroy(g);
      }
    }
    if (a->graph) RANK_CHECK(cudaGraphLaunch(exec, st) == cudaSuccess);
    if (gpu) RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
    RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
    if (checkRecv(rank, rb, bytes, s, prev, 1)) return 1;
    /* next sent this rank the payload it made for its own "next" (k = 1):
     * the same sendbuff goes both ways. */
    if (n > 2) {
      unsigned char *got = malloc(span), *want = malloc(span);
      RANK_CHECK(got && want);
      payload(want, bytes, s, next, (next + 1) % n, 1);
      memset(want + bytes, POISON, GUARD);
      RANK_CHECK(bufGet(got, rb2, span) == 0);
      long long d = testFirstDiff(got, want, span);
      if (d >= 0) fprintf(stderr, "rank %d: from next, byte %lld wrong\n", rank, d);
      free(got), free(want);
      RANK_CHECK(d < 0);
    }
  }
  if (exec) cudaGraphExecDestroy(exec);
  /* The ring as persistent requests, started twice (their channels exist). */
  if (!a->graph) {
    dmacclRequest_t sr, rr;
    RANK_CHECK(dmacclSendInit(sb, a->count, dmacclFloat32, next, comm, &sr) == dmacclSuccess);
    RANK_CHECK(dmacclRecvInit(rb, a->count, dmacclFloat32, prev, comm, &rr) == dmacclSuccess);
    for (int it = 0; it < 2; it++) {
      uint64_t s = seed + 50 + (uint64_t)it;
      RANK_CHECK(prime(rank, sb, rb, bytes, s, next, 2) == 0);
      RANK_CHECK(dmacclGroupStart() == dmacclSuccess);
      RANK_CHECK(dmacclStart(sr, st) == dmacclSuccess);
      RANK_CHECK(dmacclStart(rr, st) == dmacclSuccess);
      dmacclResult_t ge = dmacclGroupEnd();
      if (ge) fprintf(stderr, "rank %d: %s\n", rank, dmacclCommGetLastError(comm));
      RANK_CHECK(ge == dmacclSuccess);
      if (gpu) RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
      RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
      if (checkRecv(rank, rb, bytes, s, prev, 2)) return 1;
    }
    RANK_CHECK(dmacclRequestFree(sr) == dmacclSuccess);
    RANK_CHECK(dmacclRequestFree(rr) == dmacclSuccess);
  }
  if (gpu) {
    bufFree(sb), bufFree(rb), bufFree(rb2);
    cudaStreamDestroy(st);
  } else {
    RANK_CHECK(dmacclMemFree(comm, sb) == dmacclSuccess);
  }
  RANK_CHECK(channelTables(comm) == 0);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

/* One group that mixes what the CUDA executor merges into one kernel (a
 * small AllGather and AllReduce on the communicator, small Sends and Recvs
 * both ways around the ring) with what it cannot merge (a large Send/Recv;
 * with 2 ranks, two sends on one channel; the AllReduce's own reduction
 * after the AllGather's): eager twice, then captured and replayed twice,
 * every byte of every receive buffer (guards included) checked. */
enum {
  MIX_AG,
  MIX_AGR,
  MIX_AG2,
  MIX_AG2R,
  MIX_AR,
  MIX_ARR,
  MIX_S1,
  MIX_S2,
  MIX_R1,
  MIX_R2,
  MIX_LS,
  MIX_LR,
  MIX_N
};
static const size_t mixBytes[MIX_N] = {
    700 * 4,  0 /* n * AG */, 300 * 4,  0 /* n * AG2 */, 513 * 4,          513 * 4,
    3000 * 4, 3000 * 4,       3000 * 4, 3000 * 4,        (size_t)12 << 20, (size_t)12 << 20};
typedef struct {
  int graph;
  dmacclUniqueId id2; /* a second communicator's */
} mixArg;

/* Bytes of buffer k. */
static size_t mixLen(int k, int n) {
  return k == MIX_AGR ? n * mixBytes[MIX_AG] : k == MIX_AG2R ? n * mixBytes[MIX_AG2] : mixBytes[k];
}

/* Rank r's AllReduce input element i (small: the sum is exact). */
static int32_t mixArIn(uint64_t seed, int r, size_t i) {
  uint64_t x = (seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)r << 40) ^ i;
  x ^= x >> 29, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 32;
  return (int32_t)(x & 0xFFFF) - 0x8000;
}

static int mixPrime(int rank, int n, unsigned char **b, uint64_t seed) {
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  size_t most = (size_t)12 << 20;
  unsigned char *h = malloc(most + GUARD);
  RANK_CHECK(h);
  for (int k = 0; k < MIX_N; k++) {
    size_t bytes = mixLen(k, n);
    memset(h, POISON, bytes + GUARD);
    if (k == MIX_AG) payload(h, bytes, seed, rank, -1, 4);
    if (k == MIX_AG2) payload(h, bytes, seed, rank, -1, 5);
    if (k == MIX_S1) payload(h, bytes, seed, rank, next, 1);
    if (k == MIX_S2) payload(h, bytes, seed, rank, prev, 2);
    if (k == MIX_LS) payload(h, bytes, seed, rank, next, 3);
    if (k == MIX_AR)
      for (size_t i = 0; i < bytes / 4; i++) ((int32_t *)h)[i] = mixArIn(seed, rank, i);
    RANK_CHECK(bufPut(b[k], h, bytes + GUARD) == 0);
  }
  free(h);
  return 0;
}

static int mixCheck(int rank, int n, unsigned char **b, uint64_t seed, const char *how) {
  int next = (rank + 1) % n, prev = (rank + n - 1) % n, bad = 0;
  size_t most = (size_t)12 << 20;
  unsigned char *got = malloc(most + GUARD), *want = malloc(most + GUARD);
  RANK_CHECK(got && want);
  for (int k = 0; k < MIX_N; k++) {
    size_t bytes = mixLen(k, n);
    if (k != MIX_AGR && k != MIX_AG2R && k != MIX_ARR && k != MIX_R1 && k != MIX_R2 && k != MIX_LR)
      continue;
    memset(want, POISON, bytes + GUARD);
    if (k == MIX_AGR)
      for (int r = 0; r < n; r++)
        payload(want + r * mixBytes[MIX_AG], mixBytes[MIX_AG], seed, r, -1, 4);
    if (k == MIX_AG2R)
      for (int r = 0; r < n; r++)
        payload(want + r * mixBytes[MIX_AG2], mixBytes[MIX_AG2], seed, r, -1, 5);
    if (k == MIX_ARR)
      for (size_t i = 0; i < bytes / 4; i++) {
        int32_t sum = 0;
        for (int r = 0; r < n; r++) sum += mixArIn(seed, r, i);
        memcpy(want + 4 * i, &sum, 4);
      }
    /* the k-th send to a peer meets the k-th receive from it: with 2
     * ranks the receive from prev gets the send to next (the first) */
    if (k == MIX_R1) payload(want, bytes, seed, prev, rank, 1);
    if (k == MIX_R2) payload(want, bytes, seed, next, rank, 2);
    if (k == MIX_LR) payload(want, bytes, seed, prev, rank, 3);
    RANK_CHECK(bufGet(got, b[k], bytes + GUARD) == 0);
    long long d = testFirstDiff(got, want, bytes + GUARD);
    if (d >= 0)
      fprintf(stderr, "rank %d, %s: buffer %d (%zu bytes): byte %lld is 0x%02x, not 0x%02x\n", rank,
              how, k, bytes, d, got[d], want[d]);
    bad |= d >= 0;
  }
  free(got), free(want);
  return bad;
}

static dmacclResult_t mixIssue(int rank, int n, unsigned char **b, dmacclComm_t comm,
                               dmacclComm_t comm2, cudaStream_t st) {
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  dmacclResult_t r = dmacclGroupStart();
  if (!r) r = dmacclAllGather(b[MIX_AG], b[MIX_AGR], 700, dmacclFloat32, comm, st);
  if (!r) r = dmacclAllGather(b[MIX_AG2], b[MIX_AG2R], 300, dmacclFloat32, comm2, st);
  if (!r) r = dmacclAllReduce(b[MIX_AR], b[MIX_ARR], 513, dmacclInt32, dmacclSum, comm, st);
  if (!r) r = dmacclSend(b[MIX_S1], 3000, dmacclFloat32, next, comm, st);
  if (!r) r = dmacclRecv(b[MIX_R1], 3000, dmacclFloat32, prev, comm, st);
  if (!r) r = dmacclSend(b[MIX_S2], 3000, dmacclFloat32, prev, comm, st);
  if (!r) r = dmacclRecv(b[MIX_R2], 3000, dmacclFloat32, next, comm, st);
  if (!r) r = dmacclSend(b[MIX_LS], (size_t)3 << 20, dmacclFloat32, next, comm, st);
  if (!r) r = dmacclRecv(b[MIX_LR], (size_t)3 << 20, dmacclFloat32, prev, comm, st);
  dmacclResult_t e = dmacclGroupEnd();
  if (r || e) fprintf(stderr, "rank %d: %s\n", rank, dmacclCommGetLastError(comm));
  return r ? r : e;
}

static int mpMixFn(int rank, int n, const dmacclUniqueId *id, void *argp) {
  const mixArg *a = argp;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cudaStream_t st = NULL;
  int dev = 0;
  RANK_CHECK(rankSetup(rank, &cfg, &dev, &st) == 0);
  dmacclComm_t comm, comm2;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  RANK_CHECK(dmacclCommInitRank(&comm2, n, a->id2, rank, &cfg) == dmacclSuccess);
  unsigned char *b[MIX_N], *all = NULL, *all2 = NULL;
  size_t total = 0, ag2 = mixLen(MIX_AG2, n) + mixLen(MIX_AG2R, n) + 2 * GUARD;
  for (int k = 0; k < MIX_N; k++) total += mixLen(k, n) + GUARD;
  /* (host: comm2's buffers are comm2's memory) */
  if (!gpu) RANK_CHECK(dmacclMemAlloc(comm, total - ag2, (void **)&all) == dmacclSuccess);
  if (!gpu) RANK_CHECK(dmacclMemAlloc(comm2, ag2, (void **)&all2) == dmacclSuccess);
  for (int k = 0, at = 0, at2 = 0; k < MIX_N; k++) {
    size_t span = mixLen(k, n) + GUARD;
    int two = k == MIX_AG2 || k == MIX_AG2R;
    b[k] = gpu ? bufAlloc(dev, span) : two ? all2 + at2 : all + at;
    RANK_CHECK(b[k]);
    if (two)
      at2 += (int)span;
    else
      at += (int)span;
  }
  uint64_t seed = 7000;
  for (int it = 0; it < 2; it++, seed++) { /* eager (and the channels made) */
    RANK_CHECK(mixPrime(rank, n, b, seed) == 0);
    RANK_CHECK(mixIssue(rank, n, b, comm, comm2, st) == dmacclSuccess);
    /* (the library's own waits, not the stream's: they return once the
     * operations' tails, recorded after a held kernel, have completed) */
    RANK_CHECK(dmacclCommSynchronize(comm) == dmacclSuccess);
    RANK_CHECK(dmacclCommSynchronize(comm2) == dmacclSuccess);
    if (mixCheck(rank, n, b, seed, "eager")) return 1;
  }
  if (a->graph) {
    cudaGraph_t g;
    cudaGraphExec_t exec;
    RANK_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    /* twice: the first staged operation of each communicator in a graph
     * opens with an entry handshake and is not merged; the second group's
     * are, and their results are the ones checked */
    dmacclResult_t r = mixIssue(rank, n, b, comm, comm2, st);
    /* the first group's results poisoned again in the graph (the group's
     * end joined the stream): what the replay checks is the second's */
    static const int outs[] = {MIX_AGR, MIX_AG2R, MIX_ARR, MIX_R1, MIX_R2, MIX_LR};
    for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]) && !r; o++)
      if (cudaMemsetAsync(b[outs[o]], POISON, mixLen(outs[o], n) + GUARD, st) != cudaSuccess)
        r = dmacclUnhandledCudaError;
    if (!r) r = mixIssue(rank, n, b, comm, comm2, st);
    RANK_CHECK(cudaStreamEndCapture(st, &g) == cudaSuccess);
    RANK_CHECK(r == dmacclSuccess);
    RANK_CHECK(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    cudaGraphDestroy(g);
    for (int rep = 0; rep < 2; rep++, seed++) {
      RANK_CHECK(mixPrime(rank, n, b, seed) == 0);
      RANK_CHECK(cudaGraphLaunch(exec, st) == cudaSuccess);
      RANK_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
      if (mixCheck(rank, n, b, seed, "graph replay")) return 1;
    }
    cudaGraphExecDestroy(exec);
  }
  for (int k = 0; k < MIX_N && gpu; k++) bufFree(b[k]);
  if (!gpu) RANK_CHECK(dmacclMemFree(comm, all) == dmacclSuccess);
  if (!gpu) RANK_CHECK(dmacclMemFree(comm2, all2) == dmacclSuccess);
  if (gpu) cudaStreamDestroy(st);
  RANK_CHECK(dmacclCommDestroy(comm2) == dmacclSuccess);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testGroupMix(void) {
  for (int n = 2; n <= 3; n++) {
    mixArg a = {.graph = gpu};
    if (dmacclGetUniqueId(&a.id2) != dmacclSuccess) {
      TEST_FAIL("dmacclGetUniqueId: %s", dmacclCommGetLastError(NULL));
      return 1;
    }
    int failed = mpRun(n, mpMixFn, &a, 300, 0);
    if (failed) {
      TEST_FAIL("a mixed group on %d ranks: %d rank(s) failed", n, failed);
      return 1;
    }
  }
  return 0;
}

/* Ranks whose communicators select differently for Broadcast (rank 0's
 * config names pushb, the others have the built-in rows) would make
 * channels whose ends choose different algorithms for one message: on 2
 * ranks a Send/Recv group, on 3 an AlltoAllv (whose first call makes the
 * channels for captured ones, or runs as pairs) fails at once on every
 * rank with a sentence naming the cause (p2p.c: no rendezvous a peer
 * would never join; the test's time limit is below DMACCL_INIT_TIMEOUT),
 * and the communicator stays usable (an AllGather after it is checked). */
static int mpRowsFn(int rank, int n, const dmacclUniqueId *id, void *argp) {
  (void)argp;
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cudaStream_t st = NULL;
  int dev = 0;
  RANK_CHECK(rankSetup(rank, &cfg, &dev, &st) == 0);
  /* AlltoAllv makes the channels where graphs take pairs (not built in) */
  cfg.algorithm = rank == 0 ? "broadcast:pushb;alltoallv:pushb;alltoallv@graph:pairs"
                            : "alltoallv:pushb;alltoallv@graph:pairs";
  dmacclComm_t comm;
  RANK_CHECK(dmacclCommInitRank(&comm, n, *id, rank, &cfg) == dmacclSuccess);
  /* mpCheckColl poisons and reads MP_GUARD bytes past the output */
  size_t count = 1000, bytes = count * sizeof(float), span = n * bytes + MP_GUARD;
  unsigned char *sb, *rb;
  if (gpu) {
    RANK_CHECK((sb = bufAlloc(dev, span)) && (rb = bufAlloc(dev, span)));
  } else {
    RANK_CHECK(dmacclMemAlloc(comm, 2 * span, (void **)&sb) == dmacclSuccess);
    rb = sb + span;
  }
  dmacclResult_t r1 = 0, r2 = 0, r3;
  if (n == 2) {
    int peer = 1 - rank;
    RANK_CHECK(dmacclGroupStart() == dmacclSuccess);
    r1 = dmacclSend(sb, count, dmacclFloat32, peer, comm, st);
    r2 = dmacclRecv(rb, count, dmacclFloat32, peer, comm, st);
    r3 = dmacclGroupEnd();
  } else {
    size_t counts[MAXN], displs[MAXN];
    for (int r = 0; r < n; r++) counts[r] = count / (size_t)n, displs[r] = (size_t)r * counts[r];
    r3 = dmacclAlltoAllv(sb, counts, displs, rb, counts, displs, dmacclFloat32, comm, st);
  }
  const char *why = dmacclCommGetLastError(comm);
  if (r1 || r2 || r3 != dmacclInvalidArgument || !strstr(why, "select different algorithms")) {
    fprintf(stderr, "rank %d: %d %d %d: %s\n", rank, r1, r2, r3, why);
    return 1;
  }
  long long w = mpCheckColl(comm, gpu, st, 0, dmacclFloat32, count, 0, sb, rb, 7);
  RANK_CHECK(w == 0);
  if (gpu) cudaStreamDestroy(st);
  RANK_CHECK(dmacclCommDestroy(comm) == dmacclSuccess);
  return 0;
}

static int testChannelRowsDisagree(void) {
  for (int n = 2; n <= 3; n++) {
    int failed = mpRun(n, mpRowsFn, NULL, 40, 0);
    if (failed) {
      TEST_FAIL("channel rows that differ, %d ranks: %d rank(s) failed", n, failed);
      return 1;
    }
  }
  return 0;
}

static int testProcesses(void) {
  /* Staged sizes, and direct ones (above the 8 MB staging slot). */
  const size_t counts[] = {1, 3000, (size_t)3 << 20};
  for (int n = 2; n <= 3; n++)
    for (int i = 0; i < 3; i++)
      for (int g = 0; g <= gpu; g++) {
        mpArg a = {counts[i], g};
        int failed = mpRun(n, mpBodyFn, &a, 300, 0);
        if (failed) {
          TEST_FAIL("%d ranks, %zu floats%s: %d rank(s) failed", n, counts[i],
                    g ? ", CUDA graph" : "", failed);
          return 1;
        }
      }
  return 0;
}

int main(int argc, char **argv) {
  gpu = argc > 1 && !strcmp(argv[1], "gpu");
  const char *only = argc > 2 ? argv[2] : NULL;
  if (gpu && !mpGpusPresent()) {
    printf("test_p2p gpu: SKIPPED: no GPU\n");
    return TEST_SKIP_CODE;
  }
  /* Processes first: the one-process tests touch CUDA. */
  RUN_IF(testProcesses);
  RUN_IF(testGroupMix);
  RUN_IF(testChannelRowsDisagree);
  RUN_IF(testOneProcess);
  RUN_IF(testPersistent);
  RUN_IF(testMismatch);
  RUN_IF(testSelf);
  RUN_IF(testArgs);
  RUN_IF(testSplitChoice);
  RUN_IF(testPairs);
  RUN_IF(testPairsOrder);
  RUN_IF(testOrderKey);
  TEST_EXIT();
}
