/*
 * Every collective of the table (tools/common/colls.h) on the host executor
 * against the table's reference, written from the header alone: every
 * collective (and the sendrecv row: a ring of dmacclSend/dmacclRecv, from 2
 * ranks on) x type x op it takes x in place / out of place x 1-4 ranks x
 * counts 0, 1, odd and a few KB, roots 0 and last, random V layouts (uneven,
 * empty blocks, a rank with nothing, gaps, permuted order), eager and
 * persistent (Init, then dmacclStart twice with new data), NULL for the
 * buffers a rank does not use, random data, poisoned outputs and guards,
 * every byte compared. Also: the reference's own arithmetic on known cases,
 * several collectives of different kinds in one group, every algorithm
 * forced through dmacclConfig_t.algorithm (with small scratch and staging
 * buffers too, so reductions run in many pieces), and layouts the header
 * allows that random ones rarely make. AllGather and AllGatherV also run as
 * their ...Notify calls in about half the eager cases, every arrival word
 * (and a guard word on each side) checked. Arg: a test name fragment.
 */
#include "collcheck.h"
#include "harness.h"

#include <math.h>

static int failuresShown;

/* --- the reference itself ------------------------------------------------------ */

/* recv of a one-element AllReduce of n ranks' values (bit patterns). */
static uint64_t ref1(dmacclDataType_t t, dmacclRedOp_t op, int n, const uint64_t *vals, int *rc) {
  unsigned char in[8][8], out[8] = {0};
  const void *sends[8];
  size_t ts = collTypeSize(t);
  for (int r = 0; r < n; r++) {
    uint64_t v = vals[r];
    for (size_t b = 0; b < ts; b++) in[r][b] = (unsigned char)(v >> (8 * b)); /* little endian */
    sends[r] = in[r];
  }
  collShape s = {.nranks = n, .count = 1};
  *rc = collReference(COLL_ALLREDUCE, &s, 0, t, op, sends, out);
  uint64_t v = 0;
  for (size_t b = 0; b < ts; b++) v |= (uint64_t)out[b] << (8 * b);
  return v;
}

#define REF(t, op, want, ...)                                                                      \
  do {                                                                                             \
    uint64_t v_[] = {__VA_ARGS__};                                                                 \
    int rc_ = 0;                                                                                   \
    uint64_t got_ = ref1(t, op, (int)(sizeof(v_) / sizeof(v_[0])), v_, &rc_);                      \
    ASSERT_EQ_INT(rc_, 0);                                                                         \
    if (got_ != (uint64_t)(want)) {                                                                \
      TEST_FAIL("%s %s of %s: 0x%llx, expected 0x%llx", collTypeName(t), collOpName(op),           \
                #__VA_ARGS__, (unsigned long long)got_, (unsigned long long)(want));               \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static int isNanBits(dmacclDataType_t t, uint64_t b) {
  switch (t) {
  case dmacclFloat16: return (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
  case dmacclBfloat16: return (b & 0x7f80) == 0x7f80 && (b & 0x7f);
  case dmacclFloat8e4m3: return (b & 0x7f) == 0x7f;
  default: return (b & 0x7c) == 0x7c && (b & 3); /* e5m2 */
  }
}
static int isInfBits(dmacclDataType_t t, uint64_t b) {
  switch (t) {
  case dmacclFloat16: return (b & 0x7fff) == 0x7c00;
  case dmacclBfloat16: return (b & 0x7fff) == 0x7f80;
  case dmacclFloat8e4m3: return 0;
  default: return (b & 0x7f) == 0x7c;
  }
}

/* Known results, and for the small types every pattern: x alone is x, and
 * the average of two neighbours (their midpoint, exact in float) rounds to
 * the one with an even last bit. */
static int testReference(void) {
  /* integers: wrap-around in the width, comparisons as the type */
  REF(dmacclInt8, dmacclSum, 0x80, 0x7f, 0x01);
  REF(dmacclUint8, dmacclProd, 0x00, 0x10, 0x10);
  REF(dmacclUint8, dmacclProd, 0x90, 0x0c, 0x0c); /* 144 */
  REF(dmacclInt8, dmacclMax, 0x01, 0xff, 0x01, 0x80);
  REF(dmacclInt8, dmacclMin, 0x80, 0xff, 0x01, 0x80);
  REF(dmacclUint8, dmacclMax, 0xff, 0xff, 0x01);
  REF(dmacclInt32, dmacclSum, 0x80000000u, 0x7fffffffu, 1);
  REF(dmacclUint32, dmacclProd, 0xfffffffeu, 0xffffffffu, 2);
  REF(dmacclUint32, dmacclMin, 1, 0xffffffffu, 1);
  REF(dmacclInt32, dmacclMin, 0xffffffffu, 0xffffffffu, 1);
  REF(dmacclInt64, dmacclProd, 0x8000000000000000ull, 0x4000000000000000ull, 2);
  REF(dmacclUint64, dmacclSum, 1, 0xffffffffffffffffull, 2);
  REF(dmacclInt64, dmacclMax, 5, 0x8000000000000000ull, 5, 0xffffffffffffffffull);
  /* float and double in their own precision; rank order */
  REF(dmacclFloat32, dmacclSum, 0x4b800000u, 0x4b800000u, 0x3f800000u); /* 2^24 + 1 = 2^24 */
  REF(dmacclFloat32, dmacclSum, 0x4b800000u, 0x4b800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u);
  REF(dmacclFloat32, dmacclSum, 0x4b800001u, 0x3f800000u, 0x3f800000u, 0x4b800000u); /* 2+2^24 */
  REF(dmacclFloat64, dmacclSum, 0x4340000000000000ull, 0x4340000000000000ull,
      0x3ff0000000000000ull);                                           /* 2^53 + 1 */
  REF(dmacclFloat32, dmacclAvg, 0x3fc00000u, 0x3f800000u, 0x40000000u); /* (1+2)/2 */
  /* the premultiplied sum: (1+2) times the table's 0.3, one rounding;
   * bf16's 0.3 is 0x3e9a (0.30078125), 3 of it 0.90234375 exactly; int8's
   * -3: 100+100 wraps to -56, times -3 wraps to -88 */
  REF(dmacclFloat32, COLL_PREMULSUM, 0x3f666667u, 0x3f800000u, 0x40000000u);
  REF(dmacclBfloat16, COLL_PREMULSUM, 0x3f67, 0x3f80, 0x4000);
  REF(dmacclInt8, COLL_PREMULSUM, 0xa8, 100, 100);
  REF(dmacclFloat64, dmacclAvg, 0x3ff5555555555555ull, 0x3ff0000000000000ull, 0x3ff0000000000000ull,
      0x4000000000000000ull); /* 4/3 in double */
  REF(dmacclFloat32, dmacclAvg, 0x3faaaaabu, 0x3f800000u, 0x3f800000u, 0x40000000u); /* 4/3 */
  REF(dmacclFloat32, dmacclMax, 0xbf800000u, 0xc0000000u, 0xbf800000u);
  REF(dmacclFloat32, dmacclProd, 0x7f800000u, 0x7f000000u, 0x7f000000u, 0x3f000000u); /* inf */
  /* small types: in float, one rounding at the end */
  REF(dmacclFloat16, dmacclSum, 0x6801, 0x6800, 0x3c00, 0x3c00); /* 2048+1+1 = 2050 */
  REF(dmacclFloat16, dmacclSum, 0x6800, 0x6800, 0x3c00);         /* 2049: tie to even 2048 */
  REF(dmacclFloat16, dmacclSum, 0x6801, 0x6800, 0x3e00);         /* 2049.5 -> 2050 */
  REF(dmacclFloat16, dmacclSum, 0x7c00, 0x7bff, 0x7bff);         /* overflow: inf */
  REF(dmacclFloat16, dmacclSum, 0xfc00, 0xfbff, 0xfbff);
  REF(dmacclFloat16, dmacclAvg, 0x7bff, 0x7bff, 0x7bff); /* the sum in float, then /2 */
  REF(dmacclFloat16, dmacclAvg, 0x3e00, 0x3c00, 0x4000);
  REF(dmacclBfloat16, dmacclSum, 0x7f80, 0x7f7f, 0x7f7f);
  REF(dmacclBfloat16, dmacclSum, 0x4380, 0x4380, 0x3f80); /* 256 + 1: tie to even 256 */
  REF(dmacclBfloat16, dmacclSum, 0x4382, 0x4380, 0x3f80, 0x3f80, 0x3f80); /* 259 -> 260 */
  REF(dmacclFloat8e4m3, dmacclSum, 0x7e, 0x7e, 0x7e);                     /* 448+448 saturates */
  REF(dmacclFloat8e4m3, dmacclSum, 0xfe, 0xfe, 0xfe);
  REF(dmacclFloat8e4m3, dmacclProd, 0x7e, 0x7e, 0x7e);
  REF(dmacclFloat8e5m2, dmacclSum, 0x7b, 0x7b, 0x7b); /* 57344+57344 saturates, not inf */
  REF(dmacclFloat8e5m2, dmacclSum, 0xfb, 0xfb, 0xfb);
  REF(dmacclFloat8e4m3, dmacclSum, 0x01, 0x01, 0x00);       /* subnormals: 2^-9 + 0 */
  REF(dmacclFloat8e4m3, dmacclSum, 0x08, 0x07, 0x01);       /* 7*2^-9 + 2^-9 = 2^-6, normal */
  REF(dmacclFloat8e4m3, dmacclAvg, 0x00, 0x01, 0x81);       /* +min + -min = +0 */
  REF(dmacclFloat8e5m2, dmacclAvg, 0x3c, 0x3c, 0x3c, 0x3c); /* 1 */
  REF(dmacclFloat8e4m3, dmacclMax, 0x38, 0xb8, 0x38, 0x30);
  /* every pattern of the small types */
  const dmacclDataType_t small[] = {dmacclFloat16, dmacclBfloat16, dmacclFloat8e4m3,
                                    dmacclFloat8e5m2};
  for (size_t k = 0; k < 4; k++) {
    dmacclDataType_t t = small[k];
    uint64_t top = collTypeSize(t) == 2 ? 0x10000 : 0x100, signBit = top >> 1;
    for (uint64_t b = 0; b < top; b++) {
      if (isNanBits(t, b) || isInfBits(t, b)) continue;
      uint64_t one[] = {b}, pair[] = {b, b + 1};
      int rc = 0;
      uint64_t got = ref1(t, dmacclSum, 1, one, &rc);
      if (rc || got != b) {
        TEST_FAIL("%s: 0x%llx alone gives 0x%llx", collTypeName(t), (unsigned long long)b,
                  (unsigned long long)got);
        return 1;
      }
      if ((b + 1) % signBit == 0 || isNanBits(t, b + 1) || isInfBits(t, b + 1)) continue;
      if (t == dmacclBfloat16 && (b & 0x7f80) == 0x7f00) continue; /* the sum overflows float */
      got = ref1(t, dmacclAvg, 2, pair, &rc);
      uint64_t even = (b & 1) ? b + 1 : b;
      if (rc || got != even) {
        TEST_FAIL("%s: average of 0x%llx and its neighbour gives 0x%llx, expected 0x%llx",
                  collTypeName(t), (unsigned long long)b, (unsigned long long)got,
                  (unsigned long long)even);
        return 1;
      }
    }
  }
  /* Sanitized random data is finite and non-zero. */
  for (int t = 0; t < dmacclNumTypes; t++) {
    unsigned char buf[4096];
    testFillRandom(buf, sizeof(buf), 99 + (uint64_t)t);
    size_t ts = collTypeSize((dmacclDataType_t)t), n = sizeof(buf) / ts;
    collSanitize((dmacclDataType_t)t, buf, n);
    for (size_t i = 0; collTypeIsFloat((dmacclDataType_t)t) && i < n; i++) {
      uint64_t b = 0;
      for (size_t j = 0; j < ts; j++) b |= (uint64_t)buf[i * ts + j] << (8 * j);
      int bad;
      if (t == dmacclFloat32)
        bad = (b & 0x7f800000u) == 0x7f800000u || (b & 0x7fffffffu) == 0;
      else if (t == dmacclFloat64)
        bad = (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull ||
              (b & 0x7fffffffffffffffull) == 0;
      else
        bad = isNanBits((dmacclDataType_t)t, b) || isInfBits((dmacclDataType_t)t, b) ||
              (b & ((1ull << (8 * ts - 1)) - 1)) == 0;
      if (bad) {
        TEST_FAIL("%s: sanitized 0x%llx", collTypeName((dmacclDataType_t)t), (unsigned long long)b);
        return 1;
      }
    }
  }
  return 0;
}

/* The rows: names, flags, nccl-tests' sizes and bus-bandwidth factors, and
 * buffer sizes for 4 ranks, count 10, float32 (40 bytes a block). */
static int testTable(void) {
  for (int c = 0; c < COLL_NUM; c++) ASSERT_EQ_INT(collByName(collTable[c].name), c);
  ASSERT_EQ_INT(collByName("allgatherx"), -1);
  ASSERT_EQ_INT(collByName(NULL), -1);
  collVArrays v;
  memset(&v, 0, sizeof(v));
  collShape s = {.nranks = 4, .count = 10, .root = 2};
  size_t cnt[4] = {3, 0, 5, 2}, dis[4] = {7, 0, 0, 5}; /* blocks [7,10) [0,5) [5,7) */
  memcpy(v.counts, cnt, sizeof(cnt)), memcpy(v.displs, dis, sizeof(dis));
  v.sendcounts[1 * 4 + 0] = 6, v.sendcounts[1 * 4 + 3] = 1, v.sdispls[1 * 4 + 3] = 9;
  v.recvcounts[0 * 4 + 1] = 6, v.recvcounts[3 * 4 + 1] = 1, v.rdispls[3 * 4 + 1] = 4;
  s.counts = v.counts, s.displs = v.displs, s.sendcounts = v.sendcounts, s.sdispls = v.sdispls;
  s.recvcounts = v.recvcounts, s.rdispls = v.rdispls;
  /* {coll, size bytes (rank 1), send elems rank 1, recv elems rank 1, recv elems root} */
  const size_t want[COLL_NUM][5] = {
      [COLL_ALLGATHER] = {160, 10, 40, 40}, [COLL_ALLTOALL] = {160, 40, 40, 40},
      [COLL_ALLREDUCE] = {40, 10, 10, 10},  [COLL_REDUCESCATTER] = {160, 40, 10, 10},
      [COLL_BROADCAST] = {40, 0, 10, 10},   [COLL_REDUCE] = {40, 10, 0, 10},
      [COLL_GATHER] = {160, 10, 0, 40},     [COLL_SCATTER] = {160, 0, 10, 10},
      [COLL_ALLGATHERV] = {40, 0, 10, 10},  [COLL_REDUCESCATTERV] = {40, 10, 0, 5},
      [COLL_ALLTOALLV] = {28, 10, 0, 0},    [COLL_SENDRECV] = {40, 10, 10, 10},
  };
  for (int c = 0; c < COLL_NUM; c++) {
    ASSERT_EQ_INT(collSizeBytes((collId)c, &s, 1, 4), want[c][0]);
    ASSERT_EQ_INT(collSendCount((collId)c, &s, 1), want[c][1]);
    ASSERT_EQ_INT(collRecvCount((collId)c, &s, 1), want[c][2]);
    ASSERT_EQ_INT(collRecvCount((collId)c, &s, 2), want[c][3]);
  }
  ASSERT_EQ_INT(collRecvCount(COLL_ALLTOALLV, &s, 3), 5);
  long long d = -1;
  ASSERT_TRUE(collInPlace(COLL_ALLGATHER, &s, 1, &d) && d == 10);
  ASSERT_TRUE(collInPlace(COLL_REDUCESCATTER, &s, 3, &d) && d == -30);
  ASSERT_TRUE(collInPlace(COLL_GATHER, &s, 2, &d) && d == 20);
  ASSERT_TRUE(collInPlace(COLL_GATHER, &s, 1, &d) && d == 0);
  ASSERT_TRUE(collInPlace(COLL_SCATTER, &s, 2, &d) && d == -20);
  ASSERT_TRUE(collInPlace(COLL_ALLGATHERV, &s, 0, &d) && d == 7);
  ASSERT_TRUE(collInPlace(COLL_REDUCESCATTERV, &s, 3, &d) && d == -5);
  ASSERT_TRUE(!collInPlace(COLL_ALLTOALL, &s, 0, &d) && !collInPlace(COLL_ALLTOALLV, &s, 0, &d));
  ASSERT_TRUE(!collInPlace(COLL_SENDRECV, &s, 1, &d));
  ASSERT_TRUE(!(collTable[COLL_SENDRECV].flags & COLL_IN_PLACE));
  ASSERT_TRUE(collBusBwFactor(COLL_ALLREDUCE, 4) == 1.5);
  ASSERT_TRUE(collBusBwFactor(COLL_ALLGATHER, 4) == 0.75);
  ASSERT_TRUE(collBusBwFactor(COLL_ALLTOALLV, 4) == 0.75);
  ASSERT_TRUE(collBusBwFactor(COLL_BROADCAST, 4) == 1 && collBusBwFactor(COLL_REDUCE, 4) == 1);
  ASSERT_TRUE(collBusBwFactor(COLL_GATHER, 1) == 0);
  ASSERT_TRUE(collBusBwFactor(COLL_SENDRECV, 4) == 1 && collBusBwFactor(COLL_SENDRECV, 2) == 1);
  /* sendrecv: 2 ranks or more, two requests, Broadcast's selection entry;
   * every other row its own, one request, any number of ranks */
  for (int c = 0; c < COLL_NUM; c++) {
    int p2p = c == COLL_SENDRECV;
    ASSERT_EQ_INT(collMinRanks((collId)c), p2p ? 2 : 1);
    ASSERT_EQ_INT(collRequests((collId)c), p2p ? 2 : 1);
    ASSERT_TRUE(collRequests((collId)c) <= COLL_MAX_REQUESTS);
    ASSERT_TRUE(strcmp(collTable[c].select, p2p ? "broadcast" : collTable[c].name) == 0);
    ASSERT_EQ_INT(!!(collTable[c].flags & COLL_P2P), p2p);
  }
  for (int a = 0; a < CC_NALGOS; a++) {
    char sel[512];
    ccAlgoTable(ccAlgos[a], sel, sizeof(sel));
    ASSERT_TRUE(strstr(sel, "sendrecv") == NULL);
    ASSERT_EQ_INT(ccAlgoTakes(COLL_SENDRECV, ccAlgos[a]), ccAlgoTakes(COLL_BROADCAST, ccAlgos[a]));
  }
  /* the reference: each rank's receive buffer is the previous rank's send
   * buffer, nothing else written; no result for one rank */
  for (int n = 1; n <= 5; n++) {
    unsigned char in[5][24], out[30];
    const void *sends[5];
    collShape r = {.nranks = n, .count = 6};
    for (int k = 0; k < n; k++) {
      testFillRandom(in[k], sizeof(in[k]), 4242 + (uint64_t)k);
      sends[k] = in[k];
    }
    for (int me = 0; me < n; me++) {
      memset(out, 0x5A, sizeof(out));
      int rc = collReference(COLL_SENDRECV, &r, me, dmacclFloat32, dmacclSum, sends, out);
      if (n == 1) {
        ASSERT_EQ_INT(rc, -1);
        continue;
      }
      ASSERT_EQ_INT(rc, 0);
      ASSERT_TRUE(memcmp(out, in[(me + n - 1) % n], 24) == 0);
      for (size_t i = 24; i < sizeof(out); i++) ASSERT_EQ_INT(out[i], 0x5A);
    }
  }
  for (int t = 0; t < dmacclNumTypes; t++)
    ASSERT_EQ_INT(collOpSupported((dmacclDataType_t)t, dmacclAvg),
                  collTypeIsFloat((dmacclDataType_t)t));
  ASSERT_TRUE(!collOpSupported(dmacclFloat32, COLL_NUM_OPS) && collTypeSize(dmacclNumTypes) == 0);
  /* random layouts: blocks in range, no overlap, the AlltoAllv matrices agree */
  for (uint64_t seed = 1; seed < 200; seed++) {
    int n = 1 + (int)(seed % 6);
    collRandomV(&s, &v, n, seed % 9, seed);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        ASSERT_EQ_INT(v.sendcounts[i * n + j], v.recvcounts[j * n + i]);
        if (i != j && v.counts[i] && v.counts[j])
          ASSERT_TRUE(v.displs[i] + v.counts[i] <= v.displs[j] ||
                      v.displs[j] + v.counts[j] <= v.displs[i]);
      }
  }
  return 0;
}

/* --- running cases ------------------------------------------------------------ */

/* Host communicators of n ranks with algo ("auto": the built-in selection). */
static int openComms(dmacclComm_t *comms, int n, const char *algo) {
  return ccInitAlgo(comms, n, 0, algo) == dmacclSuccess ? 0 : -1;
}
static void closeComms(dmacclComm_t *comms, int n, int broken) {
  for (int r = 0; r < n; r++) broken ? dmacclCommAbort(comms[r]) : dmacclCommDestroy(comms[r]);
}

/* Runs cases in one group; on failure says which and, when a call failed
 * (ranks may be left waiting for each other), replaces the communicators. */
static int runCases(dmacclComm_t *comms, int n, const char *algo, const ccCase *cases, int k) {
  ccEnv env;
  ccEnvInit(&env, 0, comms, n);
  long long w = ccRunGroup(&env, comms, n, cases, k);
  if (w == 0) return 0;
  if (failuresShown++ < 30)
    for (int i = 0; i < k; i++) {
      char d[256];
      ccDescribe(&cases[i], n, d, sizeof(d));
      TEST_FAIL("%s (algorithm %s)%s: %s", d, algo, k > 1 ? " in a group" : "",
                w < 0 ? "a call failed" : "wrong bytes");
    }
  else
    testFailures++;
  if (w < 0) {
    closeComms(comms, n, 1);
    if (openComms(comms, n, algo)) return -1;
  }
  return 1;
}

static size_t kbCount(dmacclDataType_t t) {
  return (3072 / collTypeSize(t)) | 1; /* a few KB, odd */
}

/* Ops a collective runs with on type t: Sum..Avg where defined; movement
 * ones take none (one pass). */
static int opsOf(collId c, dmacclDataType_t t, dmacclRedOp_t *ops) {
  int k = 0;
  if (!(collTable[c].flags & COLL_REDUCES)) {
    ops[k++] = dmacclSum;
    return k;
  }
  for (int op = 0; op < COLL_NUM_OPS; op++)
    if (collOpSupported(t, (dmacclRedOp_t)op)) ops[k++] = (dmacclRedOp_t)op;
  return k;
}

/* Every collective x type x op x count x in place x root (0, last) x 1..4
 * ranks; eager/persistent and NULL for unused buffers drawn with a fixed
 * seed. */
static int testMatrix(void) {
  uint64_t rng = 20261123, seed = 1;
  int runs = 0, bad = 0;
  int skipped = 0;
  for (int n = 1; n <= 4; n++) {
    dmacclComm_t comms[CC_MAXR];
    ASSERT_EQ_INT(openComms(comms, n, "auto"), 0);
    for (int c = 0; c < COLL_NUM; c++)
      for (int t = 0; t < dmacclNumTypes; t++) {
        if (n < collMinRanks((collId)c)) { /* sendrecv on one rank: refused by the library */
          skipped += t == 0;
          continue;
        }
        dmacclRedOp_t ops[COLL_NUM_OPS];
        int nops = opsOf((collId)c, (dmacclDataType_t)t, ops);
        const size_t counts[] = {0, 1, 37, kbCount((dmacclDataType_t)t)};
        int roots = (collTable[c].flags & COLL_ROOTED) && n > 1 ? 2 : 1;
        for (int o = 0; o < nops; o++)
          for (size_t ci = 0; ci < 4; ci++)
            for (int ip = 0; ip <= !!(collTable[c].flags & COLL_IN_PLACE); ip++)
              for (int ro = 0; ro < roots; ro++) {
                uint64_t x = dataRand(&rng);
                ccCase cs = {.coll = (collId)c,
                             .type = (dmacclDataType_t)t,
                             .op = ops[o],
                             .count = counts[ci],
                             .root = ro ? n - 1 : 0,
                             .inPlace = ip,
                             .persistent = (x >> 1 & 3) == 0,
                             .nullUnused = (x >> 3 & 1),
                             .seed = seed++,
                             .notify = (int)(x >> 4 & 1)}; /* AllGather(V)Notify */
                int rc = runCases(comms, n, "auto", &cs, 1);
                if (rc < 0) return 1;
                bad += rc;
                runs++;
              }
      }
    closeComms(comms, n, 0);
  }
  printf("  %d collectives checked, %d wrong (%d row(s) skipped for too few ranks)\n", runs, bad,
         skipped);
  ASSERT_EQ_INT(skipped, 1); /* sendrecv at n = 1 */
  return bad ? 1 : 0;
}

/* Several kinds in one group, eager and persistent mixed, twice. */
static int testMixedGroup(void) {
  int bad = 0;
  for (int n = 2; n <= 4; n++) {
    dmacclComm_t comms[CC_MAXR];
    ASSERT_EQ_INT(openComms(comms, n, "auto"), 0);
    for (int rep = 0; rep < 2; rep++) {
      uint64_t s = 5000u + 100u * (uint64_t)n + 50u * (uint64_t)rep;
      int last = n - 1;
      const ccCase cases[] = {
          {COLL_ALLREDUCE, dmacclFloat32, dmacclSum, 1001, 0, 1, 0, 0, s + 1, NULL, 0},
          {COLL_BROADCAST, dmacclBfloat16, dmacclSum, 333, 1, 0, 0, 1, s + 2, NULL, 0},
          {COLL_ALLTOALLV, dmacclInt32, dmacclSum, 77, 0, 0, 0, 0, s + 3, NULL, 0},
          {COLL_REDUCESCATTERV, dmacclFloat16, dmacclMax, 99, 0, 0, 1, 0, s + 4, NULL, 0},
          {COLL_GATHER, dmacclUint8, dmacclSum, 513, last, 0, 0, 1, s + 5, NULL, 0},
          {COLL_ALLGATHER, dmacclFloat64, dmacclSum, 65, 0, 1, 0, 0, s + 6, NULL, 0},
          {COLL_REDUCE, dmacclFloat8e5m2, dmacclAvg, 300, 0, 0, 1, 0, s + 7, NULL, 0},
          {COLL_SCATTER, dmacclInt64, dmacclSum, 31, last, 1, 0, 0, s + 8, NULL, 0},
          {COLL_ALLTOALL, dmacclFloat8e4m3, dmacclSum, 129, 0, 0, 0, 0, s + 9, NULL, 0},
          {COLL_REDUCESCATTER, dmacclInt8, dmacclProd, 250, 0, 1, 0, 0, s + 10, NULL, 0},
          {COLL_ALLGATHERV, dmacclUint64, dmacclSum, 40, 0, 0, 1, 0, s + 11, NULL, 0},
          {COLL_ALLREDUCE, dmacclUint32, dmacclMin, 7, 0, 0, 1, 0, s + 12, NULL, 0},
          {COLL_SENDRECV, dmacclFloat16, dmacclSum, 777, 0, 0, 0, 0, s + 13, NULL, 0},
          {COLL_SENDRECV, dmacclUint8, dmacclSum, 4097, 0, 0, 1, 1, s + 14, NULL, 0},
      };
      int rc = runCases(comms, n, "auto", cases, (int)(sizeof(cases) / sizeof(cases[0])));
      if (rc < 0) return 1;
      bad += rc;
    }
    closeComms(comms, n, 0);
  }
  return bad ? 1 : 0;
}

/* One algorithm for every collective that takes it (the others keep their
 * defaults): every collective, three types, the ops in turn (the
 * premultiplied sum among them), counts 1 and odd, in
 * and out of place, 2-4 ranks. sendrecv runs with the broadcast entry's
 * algorithm (its channels are made with the parent's selection table). */
static int runAlgo(const char *algo, const char *label, const size_t *counts, int ncounts) {
  const dmacclDataType_t types[] = {dmacclFloat32, dmacclBfloat16, dmacclInt32};
  const dmacclRedOp_t ops[] = {dmacclSum, dmacclMax, dmacclProd, dmacclMin, COLL_PREMULSUM};
  int bad = 0;
  uint64_t seed = 77000;
  for (int n = 2; n <= 4; n++) {
    dmacclComm_t comms[CC_MAXR];
    if (openComms(comms, n, algo)) {
      TEST_FAIL("algorithm %s (%s) refused for %d ranks", algo, label, n);
      return 1;
    }
    for (int c = 0; c < COLL_NUM; c++)
      for (size_t t = 0; t < 3; t++)
        for (int k = 0; k < ncounts; k++)
          for (int ip = 0; ip <= !!(collTable[c].flags & COLL_IN_PLACE); ip++) {
            ccCase cs = {.coll = (collId)c,
                         .type = types[t],
                         .op = ops[(t + (size_t)k + (size_t)ip + (size_t)n) % 5],
                         .count = counts[k],
                         .root = (k + ip) % 2 ? n - 1 : 0,
                         .inPlace = ip,
                         .persistent = (k + c) % 3 == 0,
                         .seed = seed++,
                         .notify = (k + ip + n) % 2}; /* AllGather(V)Notify */
            int rc = runCases(comms, n, algo, &cs, 1);
            if (rc < 0) return 1;
            bad += rc;
          }
    closeComms(comms, n, 0);
  }
  return bad;
}

static int testAlgorithms(void) {
  const size_t counts[] = {1, 1001};
  int bad = 0;
  for (int a = 0; a < CC_NALGOS; a++) {
    char table[512];
    ccAlgoTable(ccAlgos[a], table, sizeof(table));
    printf("  %s\n", table);
    bad += runAlgo(ccAlgos[a], "default buffers", counts, 2);
  }
  /* split's blocks with a pushed half (PLAN_SPLIT_ALIGN or more) and a
   * pulled rest. Reductions in many pieces (scratch of 4 KB: a few hundred
   * bytes per peer and piece) and the staged forms past their slot (4 KB). */
  const size_t big[] = {5003};
  bad += runAlgo("split", "pushed and pulled halves", big, 1);
  setenv("DMACCL_SCRATCH_BYTES", "4K", 1);
  setenv("DMACCL_STAGE_BYTES", "4K", 1);
  bad += runAlgo("pull1", "4 KB scratch", big, 1);
  bad += runAlgo("stage", "4 KB staging slots", big, 1);
  /* lines that do not fit a share: the staged forms' own fallbacks
   * (AlltoAllv's: a push that meets every peer) */
  bad += runAlgo("stagell", "4 KB staging slots", big, 1);
  bad += runAlgo("auto", "4 KB scratch and slots", big, 1);
  unsetenv("DMACCL_SCRATCH_BYTES");
  unsetenv("DMACCL_STAGE_BYTES");
  return bad ? 1 : 0;
}

/* push1 at the sizes where it pushes in pieces (the library's
 * pieces are 1 MB or more): 2-4 ranks, 3 MB (one piece of each part on 4
 * ranks, two on 2), 24 MB (two pieces) and 56 MB (three on 2 ranks; on 3
 * and 4 the pieces overflow the 32 MB scratch buffer and it runs as pull1),
 * in and out of place, float and bf16, sum, max and the premultiplied
 * sum; ReduceScatter and Reduce in and out of place; in a group of two on
 * 2 ranks (two operations' pushes into the same scratch buffers, one after
 * the other). */
static int testPushAllReduce(void) {
  const size_t counts[] = {(3u << 20) / 4 + 5, (24u << 20) / 4 + 3, (56u << 20) / 4 + 1};
  const dmacclRedOp_t ops[] = {dmacclSum, dmacclMax, COLL_PREMULSUM};
  int bad = 0;
  uint64_t seed = 91000;
  for (int n = 2; n <= 4; n++) {
    dmacclComm_t comms[CC_MAXR];
    ASSERT_EQ_INT(openComms(comms, n, "push1"), 0);
    for (size_t k = 0; k < 3; k++)
      for (int ip = 0; ip <= 1; ip++) {
        ccCase cs = {.coll = COLL_ALLREDUCE,
                     .type = (k + (size_t)ip) % 2 ? dmacclBfloat16 : dmacclFloat32,
                     .op = ops[(k + (size_t)ip + (size_t)n) % 3],
                     .count = counts[k],
                     .inPlace = ip,
                     .seed = seed++};
        int rc = runCases(comms, n, "push1", &cs, 1);
        if (rc < 0) return 1;
        bad += rc;
      }
    /* the other reductions' push1: ReduceScatter (24 MB of parts), Reduce
     * to the last rank (3 MB; as pull1: its non-roots' parts are empty) */
    for (int ip = 0; ip <= 1; ip++) {
      ccCase rs = {.coll = COLL_REDUCESCATTER,
                   .type = dmacclFloat32,
                   .op = ops[ip],
                   .count = counts[1] / (size_t)n,
                   .inPlace = ip,
                   .seed = seed++};
      ccCase re = {.coll = COLL_REDUCE,
                   .type = dmacclBfloat16,
                   .op = ops[2 - ip],
                   .count = counts[0],
                   .root = n - 1,
                   .inPlace = ip,
                   .seed = seed++};
      int rc = runCases(comms, n, "push1", &rs, 1);
      if (rc >= 0) bad += rc, rc = runCases(comms, n, "push1", &re, 1);
      if (rc < 0) return 1;
      bad += rc;
    }
    if (n == 2) {
      ccCase two[2] = {{.coll = COLL_ALLREDUCE,
                        .type = dmacclFloat32,
                        .op = dmacclSum,
                        .count = counts[1],
                        .seed = seed++},
                       {.coll = COLL_ALLREDUCE,
                        .type = dmacclFloat32,
                        .op = dmacclSum,
                        .count = counts[0],
                        .inPlace = 1,
                        .seed = seed++}};
      int rc = runCases(comms, n, "push1", two, 2);
      if (rc < 0) return 1;
      bad += rc;
    }
    closeComms(comms, n, 0);
  }
  return bad ? 1 : 0;
}

/* Layouts the header allows that random ones rarely make. */
static int testLayouts(void) {
  enum { N = 3 };
  dmacclComm_t comms[CC_MAXR];
  ASSERT_EQ_INT(openComms(comms, N, "auto"), 0);
  collVArrays v;
  int bad = 0;
  /* vLLM's all_gatherv: counts = sizes, displs = their prefix sums */
  memset(&v, 0, sizeof(v));
  size_t sizes[N] = {5, 0, 9};
  for (int r = 0, at = 0; r < N; at += (int)sizes[r], r++)
    v.counts[r] = sizes[r], v.displs[r] = (size_t)at;
  for (int ip = 0; ip < 2; ip++) {
    ccCase ag = {
        COLL_ALLGATHERV, dmacclBfloat16, dmacclSum, 9, 0, ip, 0, 0, 31 + (uint64_t)ip, &v, 0};
    ccCase rs = {
        COLL_REDUCESCATTERV, dmacclFloat32, dmacclSum, 9, 0, ip, 1, 0, 41 + (uint64_t)ip, &v, 0};
    bad += runCases(comms, N, "auto", &ag, 1) != 0;
    bad += runCases(comms, N, "auto", &rs, 1) != 0;
  }
  /* every block empty: nothing to do, nothing written */
  memset(&v, 0, sizeof(v));
  for (int k = 0; k < 3; k++) {
    const collId cs[] = {COLL_ALLGATHERV, COLL_REDUCESCATTERV, COLL_ALLTOALLV};
    ccCase c = {cs[k], dmacclInt32, dmacclSum, 0, 0, 0, 0, 1, 50 + (uint64_t)k, &v, 0};
    bad += runCases(comms, N, "auto", &c, 1) != 0;
  }
  /* AlltoAllv: every rank sends one rank only, blocks in reverse order */
  memset(&v, 0, sizeof(v));
  for (int i = 0; i < N; i++) {
    int j = (i + 1) % N;
    v.sendcounts[i * N + j] = 11 + (size_t)i;
    v.recvcounts[j * N + i] = 11 + (size_t)i;
    v.sdispls[i * N + j] = 3;
    v.rdispls[j * N + i] = 5;
  }
  ccCase a2av = {COLL_ALLTOALLV, dmacclFloat64, dmacclSum, 0, 0, 0, 1, 0, 60, &v, 0};
  bad += runCases(comms, N, "auto", &a2av, 1) != 0;
  closeComms(comms, N, 0);
  return bad ? 1 : 0;
}

/* AlltoAllv's send blocks may overlap (the header asks only the receive
 * blocks not to): every rank sends the same elements to every peer. */
static int testAlltoallvSharedSendBlock(void) {
  enum { N = 3 };
  dmacclComm_t comms[CC_MAXR];
  ASSERT_EQ_INT(openComms(comms, N, "auto"), 0);
  collVArrays v;
  memset(&v, 0, sizeof(v));
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      v.sendcounts[i * N + j] = v.recvcounts[i * N + j] = 6;
      v.sdispls[i * N + j] = 2;
      v.rdispls[i * N + j] = 6 * (size_t)j;
    }
  ccCase c = {COLL_ALLTOALLV, dmacclUint8, dmacclSum, 0, 0, 0, 0, 0, 70, &v, 0};
  int bad = runCases(comms, N, "auto", &c, 1) != 0;
  closeComms(comms, N, 0);
  return bad;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  RUN_IF(testTable);
  RUN_IF(testReference);
  RUN_IF(testMatrix);
  RUN_IF(testMixedGroup);
  RUN_IF(testAlgorithms);
  RUN_IF(testPushAllReduce);
  RUN_IF(testLayouts);
  RUN_IF(testAlltoallvSharedSendBlock);
  TEST_EXIT();
}
