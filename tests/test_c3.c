/* dmaccl-c3's plain-C parts: scenario files, contender names, the command
 * line, the collectives a scenario takes (the tools' table) with their
 * counts, skipped contenders and selection strings, the exact bf16 data,
 * ConCCL's metrics, repetition counts, the JSON writer and --traffic's HBM bytes
 * (hand-computed cases, totals against the schedules).
 *   test_c3 [out.json]   with a path, also writes a JSON of a made-up run
 *                        (tests/c3.sh checks it with tools/c3/plot.py). */
#include "../src/base/reduce_math.h"
#include "c3.h"
#include "harness.h"
#include "plan.h"

/* A check that records a failure and goes on. */
#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) TEST_FAIL(__VA_ARGS__);                                                              \
  } while (0)

static const char *jsonOut; /* argv[1] */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int errNames(const char *text, const char *only, const char *want) {
  c3Scenario sc[8];
  char err[256] = "";
  int n = c3ParseScenarios(text, only, sc, 8, err, sizeof(err));
  if (n != -1 || !strstr(err, want)) {
    fprintf(stderr, "  text %s: got %d, err '%s', wanted an error naming '%s'\n", text, n, err,
            want);
    return 0;
  }
  return 1;
}

static int testScenarios(void) {
  const char *text = "# comment\n"
                     "a  64 6144 4096 allgather 1M   # trailing\n"
                     "\n"
                     "  b 8192 8192 7168 alltoall 32M comm=25%\n";
  c3Scenario sc[8];
  char err[256] = "";
  int n = c3ParseScenarios(text, "", sc, 8, err, sizeof(err));
  CHECK(n == 2, "two scenarios (%d: %s)", n, err);
  CHECK(!strcmp(sc[0].name, "a") && sc[0].m == 64 && sc[0].n == 6144 && sc[0].k == 4096 &&
            sc[0].coll == COLL_ALLGATHER && sc[0].size == (1u << 20) && sc[0].commShare == 0.5 &&
            sc[0].line == 2 && !sc[0].fused,
        "first scenario's fields");
  CHECK(sc[1].coll == COLL_ALLTOALL && sc[1].size == (32u << 20) &&
            fabs(sc[1].commShare - 0.25) < 1e-12 && sc[1].line == 4,
        "second scenario's fields");
  n = c3ParseScenarios(text, "b", sc, 8, err, sizeof(err));
  CHECK(n == 1 && !strcmp(sc[0].name, "b"), "-s keeps one scenario");
  /* the reducing collectives and the rooted ones of the table */
  const char *more = "ar  1024 8192 7168 allreduce 16M\n"
                     "rs  8192 8192 7168 reducescatter 128M comm=30%\n"
                     "bc  64 64 64 broadcast 1M\n"
                     "red 64 64 64 reduce 2M\n"
                     "ga  64 64 64 gather 4M\n"
                     "sc  64 64 64 scatter 8M\n";
  n = c3ParseScenarios(more, "", sc, 8, err, sizeof(err));
  CHECK(n == 6, "six scenarios (%d: %s)", n, err);
  if (n == 6) {
    CHECK(!strcmp(sc[0].name, "ar") && sc[0].m == 1024 && sc[0].n == 8192 && sc[0].k == 7168 &&
              sc[0].coll == COLL_ALLREDUCE && sc[0].size == (16u << 20) && sc[0].commShare == 0.5,
          "allreduce line");
    CHECK(sc[1].coll == COLL_REDUCESCATTER && sc[1].size == (128u << 20) &&
              fabs(sc[1].commShare - 0.3) < 1e-12 && sc[1].line == 2,
          "reducescatter line");
    CHECK(sc[2].coll == COLL_BROADCAST && sc[3].coll == COLL_REDUCE && sc[4].coll == COLL_GATHER &&
              sc[5].coll == COLL_SCATTER,
          "rooted collectives");
  }
  /* fused: an AllGather of the GEMM's A (M*K*2 bytes) */
  n = c3ParseScenarios("f 8192 3072 4096 allgather 64M fused\n", "", sc, 8, err, sizeof(err));
  CHECK(n == 1 && sc[0].fused == 1 && sc[0].commShare == 0.5 && sc[0].size == (64u << 20),
        "fused line (%d: %s)", n, err);
  CHECK(errNames("f 8192 3072 4096 allgather 32M fused\n", "", "M*K*2 = 67108864 bytes"),
        "fused with a size that is not A's");
  CHECK(errNames("f 8192 3072 4096 alltoall 64M fused\n", "", "not alltoall"),
        "fused with another collective");
  CHECK(errNames(text, "a,zz", "'zz'"), "-s with an unknown name");
  CHECK(errNames("a 1 2 3 allgather\n", "", "line 1"), "too few fields");
  CHECK(errNames("\na 1 x 3 allgather 1M\n", "", "line 2: N 'x'"), "bad dimension");
  CHECK(errNames("a 0 2 3 allgather 1M\n", "", "M '0'"), "zero dimension");
  CHECK(errNames("a 1 2 3 frob 1M\n", "",
                 "line 1: collective 'frob' is not one of allgather, "
                 "alltoall, allreduce, reducescatter"),
        "unknown collective, the accepted ones named");
  /* the table's rows with count arrays, and Send/Recv: named, with the reason */
  const char *refused[] = {"alltoallv", "sendrecv", "allgatherv", "reducescatterv"};
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    char line[64], want[64];
    snprintf(line, sizeof(line), "a 1 2 3 %s 1M\n", refused[i]);
    snprintf(want, sizeof(want), "collective '%s' is not one of", refused[i]);
    CHECK(errNames(line, "", want) && errNames(line, "", "(no count arrays, no Send/Recv)"),
          "%s refused with the sentence", refused[i]);
  }
  CHECK(errNames("a 1 2 3 alltoall 1Q\n", "", "size '1Q'"), "bad size");
  CHECK(errNames("a 1 2 3 alltoall 100\n", "", "size '100'"), "size below 1K");
  CHECK(errNames("a 1 2 3 alltoall 1M comm=0%\n", "", "comm=0%"), "share out of range");
  CHECK(errNames("a 1 2 3 alltoall 1M comm=30\n", "", "comm=30"), "share without a percent sign");
  CHECK(errNames("a 1 2 3 alltoall 1M\na 1 2 3 alltoall 2M\n", "", "already defined on line 1"),
        "duplicate name");
  CHECK(errNames("# only a comment\n\n", "", "no scenarios"), "empty file");
  CHECK(errNames("a 1 2 3 alltoall 1M extra x\n", "", "line 1"), "too many fields");
  return 0;
}

/* The scenario file that ships: the matrix the issue asks for. */
static int testShippedScenarios(void) {
  char err[256] = "";
  char *text = c3ReadFile(C3_SCENARIO_FILE, err, sizeof(err));
  CHECK(text != NULL, "read %s: %s", C3_SCENARIO_FILE, err);
  if (!text) return 1;
  c3Scenario sc[C3_MAX_SCENARIOS];
  int n = c3ParseScenarios(text, "", sc, C3_MAX_SCENARIOS, err, sizeof(err));
  free(text);
  CHECK(n >= 24, "at least 24 scenarios (%d: %s)", n, err);
  int ag = 0, a2a = 0, ar = 0, rs = 0, membound = 0, small = 0, large = 0;
  for (int i = 0; i < n; i++) {
    CHECK(c3CollAccepted(sc[i].coll), "%s: a collective c3CollAccepted takes", sc[i].name);
    ag += sc[i].coll == COLL_ALLGATHER;
    a2a += sc[i].coll == COLL_ALLTOALL;
    ar += sc[i].coll == COLL_ALLREDUCE;
    rs += sc[i].coll == COLL_REDUCESCATTER;
    double flops = 2.0 * sc[i].m * sc[i].n * sc[i].k;
    double bytes = 2.0 * (sc[i].m * sc[i].k + sc[i].k * sc[i].n + sc[i].m * sc[i].n);
    membound += flops / bytes < 100; /* H200: ~200 flop/byte is the ridge */
    small += sc[i].size <= (1u << 20);
    large += sc[i].size >= (1u << 30);
    CHECK(sc[i].size >= (1u << 20) && sc[i].size <= (1u << 30), "%s: size within 1M-1G",
          sc[i].name);
  }
  CHECK(ag && a2a && membound && small && large,
        "AllGather %d, AlltoAll %d, memory-bound %d, 1M %d, 1G %d: each at least one", ag, a2a,
        membound, small, large);
  CHECK(ar >= 3 && rs >= 2, "AllReduce %d (3 or more), ReduceScatter %d (2 or more)", ar, rs);
  /* the AllGather and AlltoAll matrix of the first results stays */
  CHECK(ag + a2a >= 17, "17 or more AllGather/AlltoAll scenarios: %d + %d", ag, a2a);
  return 0;
}

/* Which collectives a scenario may name, and their counts and shapes. */
static int testCollectives(void) {
  int accepted = 0;
  for (int c = -1; c <= COLL_NUM; c++) {
    int want = c >= 0 && c < COLL_NUM && !(collTable[c].flags & (COLL_VECTOR | COLL_P2P));
    CHECK(c3CollAccepted(c) == want, "c3CollAccepted(%d) is %d", c, want);
    accepted += want;
  }
  CHECK(accepted == 8, "8 collectives accepted (%d)", accepted);
  CHECK(c3CollAccepted(COLL_ALLREDUCE) && c3CollAccepted(COLL_REDUCESCATTER) &&
            !c3CollAccepted(COLL_ALLTOALLV) && !c3CollAccepted(COLL_SENDRECV),
        "allreduce and reducescatter in, alltoallv and sendrecv out");

  /* c3Count: the largest count whose nccl-tests size (collSizeBytes, bf16)
   * is at most the scenario's size, and at least 1 */
  const size_t sizes[] = {1024,         1u << 20,        3u << 20,      (25u << 20),
                          (128u << 20), (size_t)1 << 30, (1u << 20) + 6};
  for (int c = 0; c < COLL_NUM; c++) {
    if (!c3CollAccepted(c)) continue;
    for (int n = 1; n <= 8; n++)
      for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        c3Scenario s = {.coll = (collId)c, .size = sizes[i], .commShare = 0.5};
        collShape sh, one = {.nranks = n, .count = 1};
        c3Shape(&s, n, &sh);
        size_t count = c3Count(&s, n), unit = collSizeBytes((collId)c, &one, 0, 2);
        size_t got = collSizeBytes((collId)c, &sh, 0, 2);
        CHECK(sh.nranks == n && sh.root == 0 && sh.count == count && !sh.counts && !sh.sendcounts,
              "%s on %d: c3Shape", collTable[c].name, n);
        CHECK(count >= 1 && (count == 1 || got <= sizes[i]) && got + unit > sizes[i],
              "%s on %d ranks, size %zu: count %zu gives %zu bytes", collTable[c].name, n, sizes[i],
              count, got);
      }
  }
  /* the shapes of the scenario file's comments */
  c3Scenario ar = {.coll = COLL_ALLREDUCE, .size = 16u << 20};
  c3Scenario rs = {.coll = COLL_REDUCESCATTER, .size = 128u << 20};
  c3Scenario ag = {.coll = COLL_ALLGATHER, .size = 64u << 20};
  c3Scenario a2a = {.coll = COLL_ALLTOALL, .size = 4u << 20};
  CHECK(c3Count(&ar, 4) == (8u << 20), "AllReduce 16M: 8M elements on any ranks (%zu)",
        c3Count(&ar, 4));
  CHECK(c3Count(&rs, 4) == (16u << 20), "ReduceScatter 128M on 4: 16M elements each (%zu)",
        c3Count(&rs, 4));
  CHECK(c3Count(&ag, 8) == (4u << 20), "AllGather 64M on 8: 4M elements each (%zu)",
        c3Count(&ag, 8));
  CHECK(c3Count(&a2a, 2) == (1u << 20), "AlltoAll 4M on 2: 1M elements a block (%zu)",
        c3Count(&a2a, 2));
  return 0;
}

/* A stand-in for the NCCL baseline's ncclBaseLacks: no reductions on the
 * copy-engine path. */
static int fakeCalls;
static const char *fakeLacks(int coll, int ce) {
  fakeCalls++;
  return ce && (collTable[coll].flags & COLL_REDUCES) ? "fake: no reductions on copy engines"
                                                      : NULL;
}

static int testLacksAndSelection(void) {
  c3ContenderSpec s;
  char err[256], buf[256];
  /* dmaccl algorithms: exactly what the collective's selection entry takes */
  for (int a = -1; a < PLAN_NUM_ALGOS; a++) {
    const char *name = a < 0 ? "auto" : planAlgoName((planAlgo)a);
    CHECK(c3ParseContender(name, &s, err, sizeof(err)) == 0, "contender %s", name);
    for (int c = 0; c < COLL_NUM; c++) {
      planColl pc;
      const char *sel = collTable[c].select;
      CHECK(planCollParse(sel, strlen(sel), &pc) == 0, "selection entry %s", sel);
      int takes = a < 0 || (planCollOf(pc)->algos & PLAN_ALGO_BIT(a));
      buf[0] = '\0';
      const char *why = c3Lacks(&s, c, fakeLacks, buf, sizeof(buf));
      CHECK(takes ? why == NULL : why == buf && strstr(buf, collTable[c].name) && strstr(buf, name),
            "%s for %s: %s", name, collTable[c].name, why ? why : "(runs it)");
    }
  }
  CHECK(fakeCalls == 0, "ncclLacks is not asked about dmaccl contenders");
  /* the reductions take pull1, stage, stagesm, stagell and twoshot: the sentence names them */
  CHECK(c3ParseContender("pushb", &s, err, sizeof(err)) == 0, "pushb");
  const char *why = c3Lacks(&s, COLL_ALLREDUCE, NULL, buf, sizeof(buf));
  CHECK(why &&
            !strcmp(
                why,
                "allreduce takes push1, pull1, stage, stagesm, stagell and twoshot (its algorithms "
                "in "
                "src/plan), not pushb"),
        "pushb for allreduce: '%s'", why ? why : "(runs it)");
  CHECK(c3Lacks(&s, COLL_ALLGATHER, NULL, buf, sizeof(buf)) == NULL, "pushb runs allgather");
  CHECK(c3ParseContender("stage/DMACCL_X=1", &s, err, sizeof(err)) == 0 &&
            c3Lacks(&s, COLL_REDUCESCATTER, NULL, buf, sizeof(buf)) == NULL,
        "a variant of stage runs reducescatter");
  /* NCCL settings: the baseline's answer, ce only for nccl-ce */
  const char *nccls[] = {"nccl", "nccl-prio", "nccl-cta8", "nccl-ce"};
  for (int i = 0; i < 4; i++) {
    CHECK(c3ParseContender(nccls[i], &s, err, sizeof(err)) == 0, "%s", nccls[i]);
    for (int c = 0; c < COLL_NUM; c++) {
      int lacks = i == 3 && (collTable[c].flags & COLL_REDUCES);
      why = c3Lacks(&s, c, fakeLacks, buf, sizeof(buf));
      CHECK(lacks ? why && !strcmp(why, "fake: no reductions on copy engines") : why == NULL,
            "%s for %s: %s", nccls[i], collTable[c].name, why ? why : "(runs it)");
      CHECK(c3Lacks(&s, c, NULL, buf, sizeof(buf)) == NULL, "%s without a baseline answer",
            nccls[i]);
    }
  }

  /* selection strings over a run's collectives */
  struct {
    const char *algo;
    unsigned colls;
    const char *want;
  } sel[] = {
      {"pushb", 1u << COLL_ALLGATHER | 1u << COLL_ALLTOALL | 1u << COLL_ALLREDUCE,
       "allgather:pushb;alltoall:pushb"},
      {"stage", 1u << COLL_ALLGATHER | 1u << COLL_ALLREDUCE | 1u << COLL_REDUCESCATTER,
       "allgather:stage;allreduce:stage;reducescatter:stage"},
      {"pull1", 1u << COLL_REDUCESCATTER, "reducescatter:pull1"},
      {"pushb", 1u << COLL_ALLREDUCE | 1u << COLL_REDUCESCATTER, ""},
      {"auto", 1u << COLL_ALLGATHER | 1u << COLL_ALLREDUCE, ""},
      {"nccl", 1u << COLL_ALLGATHER, ""},
      /* sendrecv's entry is broadcast's: one entry, not two */
      {"push1", 1u << COLL_BROADCAST | 1u << COLL_SENDRECV, "broadcast:push1"},
  };
  for (size_t i = 0; i < sizeof(sel) / sizeof(sel[0]); i++) {
    char out[256] = "x";
    CHECK(c3ParseContender(sel[i].algo, &s, err, sizeof(err)) == 0, "%s", sel[i].algo);
    int rc = c3Selection(&s, sel[i].colls, out, sizeof(out));
    CHECK(rc == 0 && !strcmp(out, sel[i].want), "%s over %#x: '%s' (%d), wanted '%s'", sel[i].algo,
          sel[i].colls, out, rc, sel[i].want);
  }
  char small[20];
  CHECK(c3ParseContender("stage", &s, err, sizeof(err)) == 0 &&
            c3Selection(&s, 1u << COLL_ALLGATHER | 1u << COLL_ALLREDUCE, small, sizeof(small)) ==
                -1 &&
            small[0] == '\0',
        "a selection string that does not fit: -1 and empty");
  return 0;
}

static int testExactBf16(void) {
  enum { N = 1 << 16 };
  static unsigned char buf[2 * N + 1];
  dataFillRandom(buf, sizeof(buf), 7);
  unsigned char last = buf[2 * N];
  c3ExactBf16(buf, sizeof(buf));
  int seen[17] = {0}, bad = 0;
  for (size_t i = 0; i < N; i++) {
    uint16_t b;
    memcpy(&b, buf + 2 * i, 2);
    float v = rmBf16ToFloat(b);
    int k = (int)v;
    if (!(v >= -8 && v <= 8) || (float)k != v || rmFloatToBf16(v) != b) {
      if (bad++ < 5) TEST_FAIL("element %zu: bits %#x, value %g", i, b, (double)v);
      continue;
    }
    seen[k + 8]++;
  }
  CHECK(bad == 0, "%d elements not an integer from -8 to 8", bad);
  for (int k = 0; k < 17; k++) CHECK(seen[k] > 0, "value %d never made", k - 8);
  CHECK(buf[2 * N] == last, "an odd last byte is left as it is");
  /* the same bits give the same values */
  unsigned char again[64];
  dataFillRandom(again, sizeof(again), 7);
  c3ExactBf16(again, sizeof(again));
  CHECK(memcmp(again, buf, sizeof(again)) == 0, "deterministic");

  /* the point: a bf16 sum over ranks is the reference's bytes in any order
   * of adding with rounding after each step (NCCL's and dmaccl's orders) */
  enum { R = COLL_MAX_RANKS, C = 4096 };
  static uint16_t send[R][C], want[C];
  const void *sends[R];
  for (int r = 0; r < R; r++) {
    dataFillRandom(send[r], sizeof(send[r]), 100 + (uint64_t)r);
    c3ExactBf16(send[r], sizeof(send[r]));
    sends[r] = send[r];
  }
  collShape sh = {.nranks = R, .count = C};
  CHECK(collReference(COLL_ALLREDUCE, &sh, 0, dmacclBfloat16, dmacclSum, sends, want) == 0,
        "reference");
  int differ = 0;
  for (int i = 0; i < C; i++) {
    uint16_t down = send[R - 1][i], pair[R];
    for (int r = R - 2; r >= 0; r--)
      down = rmFloatToBf16(rmBf16ToFloat(down) + rmBf16ToFloat(send[r][i]));
    /* a tree: pairs, then pairs of pairs */
    for (int r = 0; r < R; r++) pair[r] = send[r][i];
    for (int w = R; w > 1; w /= 2)
      for (int r = 0; r < w / 2; r++)
        pair[r] = rmFloatToBf16(rmBf16ToFloat(pair[2 * r]) + rmBf16ToFloat(pair[2 * r + 1]));
    differ += down != want[i] || pair[0] != want[i];
  }
  CHECK(differ == 0, "%d sums depend on the order", differ);
  return 0;
}

static int testContenders(void) {
  c3ContenderSpec s;
  char err[256];
  CHECK(c3ParseContender("nccl-cta8", &s, err, sizeof(err)) == 0 && s.kind == C3_NCCL_CTA &&
            s.ctas == 8,
        "nccl-cta8");
  CHECK(c3ParseContender("nccl-prio", &s, err, sizeof(err)) == 0 && s.kind == C3_NCCL_PRIO &&
            s.highPrio,
        "nccl-prio");
  CHECK(c3ParseContender("stage-prio", &s, err, sizeof(err)) == 0 && s.kind == C3_DMACCL &&
            s.highPrio && !strcmp(s.algo, "stage"),
        "stage-prio");
  CHECK(c3ParseContender("pull1-whole-prio", &s, err, sizeof(err)) == 0 && s.kind == C3_DMACCL &&
            s.highPrio && s.whole && !strcmp(s.algo, "pull1"),
        "pull1-whole-prio");
  CHECK(c3ParseContender("pull1-prio-whole", &s, err, sizeof(err)) == 0 && s.highPrio && s.whole &&
            !strcmp(s.algo, "pull1"),
        "suffixes in the other order");
  CHECK(c3ParseContender("pushb/DMACCL_BATCH_OVERLAP=0", &s, err, sizeof(err)) == 0 &&
            !strcmp(s.algo, "pushb") && !strcmp(s.envVar, "DMACCL_BATCH_OVERLAP") &&
            !strcmp(s.envVal, "0") && !s.highPrio,
        "variant with a parameter");
  CHECK(c3ParseContender("auto", &s, err, sizeof(err)) == 0 && !strcmp(s.algo, "auto"), "auto");
  const char *bad[] = {"nccl-cta0", "nccl-cta",    "nccl-cta65",       "nccl-foo",
                       "foo",       "push1/FOO=1", "push1/DMACCL_X",   "-prio",
                       "",          "-whole",      "pull1-whole-whole"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    CHECK(c3ParseContender(bad[i], &s, err, sizeof(err)) == -1 && strstr(err, bad[i]),
          "'%s' is refused with its name in the message ('%s')", bad[i], err);
  }
  return 0;
}

static int parse(c3Args *a, char *err, const char *a1, const char *a2, const char *a3) {
  char *argv[5] = {"dmaccl-c3", (char *)a1, (char *)a2, (char *)a3, NULL};
  int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);
  return c3ParseArgs(argc, argv, "scen.txt", a, err, 256);
}

static int testArgs(void) {
  c3Args a;
  char err[256];
  CHECK(parse(&a, err, NULL, NULL, NULL) == 0 && a.runs == 5 && a.targetMs == 20 && a.check &&
            a.ncs >= 13 && !strcmp(a.file, "scen.txt"),
        "defaults (%s)", err);
  int nccl = 0;
  for (int i = 0; i < a.ncs; i++) nccl |= 1 << a.cs[i].kind;
  CHECK(nccl == 0x1f, "the default contenders hold every NCCL setting and dmaccl (%x)", nccl);
  CHECK(parse(&a, err, "-r", "3", "--energy") == 0 && a.runs == 3 && a.energy, "-r, --energy");
  CHECK(parse(&a, err, "-A", "nccl,auto", "--list") == 0 && a.ncs == 2 && a.list, "-A");
  struct {
    const char *a1, *a2, *want;
  } bad[] = {{"-r", "0", "-r '0'"},      {"-r", "2.5", "-r '2.5'"},  {"-t", "x", "-t 'x'"},
             {"-c", "2", "-c '2'"},      {"-p", "65", "-p '65'"},    {"-A", "auto,auto", "twice"},
             {"-A", "bogus", "'bogus'"}, {"--frob", NULL, "--frob"}, {"-J", NULL, "needs a value"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    CHECK(parse(&a, err, bad[i].a1, bad[i].a2, NULL) == -1 && strstr(err, bad[i].want),
          "%s %s refused naming '%s' ('%s')", bad[i].a1, bad[i].a2 ? bad[i].a2 : "", bad[i].want,
          err);
  }
  char *argv[2] = {"dmaccl-c3", NULL};
  CHECK(c3ParseArgs(1, argv, NULL, &a, err, sizeof(err)) == -1 && strstr(err, "-f"),
        "no scenario file at all");
  return 0;
}

static int testMetrics(void) {
  c3Times t = {.gemm = 10, .comm = 10, .both = 10, .gemmTogether = 10, .commTogether = 10};
  c3Metrics m;
  c3Compute(&t, &m);
  CHECK(m.ideal == 2 && m.realized == 2 && m.fraction == 1 && m.commShare == 0.5,
        "perfect overlap");
  t.both = 20, t.gemmTogether = 12, t.commTogether = 20;
  c3Compute(&t, &m);
  CHECK(m.realized == 1 && m.fraction == 0 && m.gemmSlowdown == 1.2 && m.commSlowdown == 2,
        "no overlap: fraction 0, slowdowns");
  t = (c3Times){.gemm = 30, .comm = 10, .both = 36, .gemmTogether = 36, .commTogether = 12};
  c3Compute(&t, &m);
  CHECK(fabs(m.ideal - 4.0 / 3) < 1e-12 && fabs(m.fraction - (40.0 / 36 - 1) / (1.0 / 3)) < 1e-12,
        "unbalanced: fraction %g", m.fraction);
  t = (c3Times){.gemm = 1000, .comm = 5, .both = 1000, .gemmTogether = 1000, .commTogether = 5};
  c3Compute(&t, &m);
  CHECK(isnan(m.fraction), "no gain to realize: no fraction");
  t.both = 2000;
  c3Compute(&t, &m);
  CHECK(isnan(m.fraction) && m.realized < 1, "slower than serial: realized below 1");

  double v[] = {5, 1, 4, 2, 3};
  CHECK(c3Median(v, 5) == 3, "odd median");
  double w[] = {4, 1, 3, 2};
  CHECK(c3Median(w, 4) == 2.5, "even median");
  CHECK(isnan(c3Median(w, 0)), "empty median");

  long k, c;
  c3Reps(10, 100, 20000, 0.5, &k, &c);
  CHECK(k == 2000 && c == 200, "balanced counts %ld %ld", k, c);
  c3Reps(10, 100, 20000, 0.2, &k, &c);
  CHECK(k == 2000 && c == 50, "comm 20%%: %ld %ld", k, c);
  c3Reps(10, 100, 20000, 0.8, &k, &c);
  CHECK(k == 500 && c == 200, "comm 80%%: %ld %ld", k, c);
  c3Reps(50000, 90000, 20000, 0.5, &k, &c);
  CHECK(k == 1 && c == 1, "at least one of each");
  return 0;
}

/* A made-up run through the table, the summary and the JSON writer: three
 * scenarios, the third an AllReduce that pushb (an algorithm the reductions
 * do not take) and nccl-ce (fakeLacks) have no row in. */
static int testReport(void) {
  c3Args a;
  char err[256];
  CHECK(parse(&a, err, "-A", "nccl,nccl-ce,auto,pushb", NULL) == 0, "contenders");
  c3Scenario sc[3];
  int n = c3ParseScenarios("s1 64 64 64 allgather 1M\ns2 128 128 128 alltoall 64M comm=10%\n"
                           "s3 512 8192 2048 allreduce 8M\n",
                           "", sc, 3, err, sizeof(err));
  CHECK(n == 3, "scenarios");
  c3Row rows[12];
  int nr = 0;
  uint64_t seed = 99;
  for (int s = 0; s < 3; s++)
    for (int c = 0; c < 4; c++) {
      char buf[256];
      if (c3Lacks(&a.cs[c], sc[s].coll, fakeLacks, buf, sizeof(buf))) continue;
      c3Row *r = &rows[nr++];
      memset(r, 0, sizeof(*r));
      r->scenario = s, r->contender = c, r->gemms = 10, r->colls = 20;
      double g = 1000 + (double)(dataRand(&seed) % 1000), k = s == 1 ? g / 9 : g;
      r->t = (c3Times){.gemm = g, .comm = k, .gemmTogether = g * 1.05, .commTogether = k * 1.5};
      r->t.both = fmax(r->t.gemmTogether, r->t.commTogether) + (double)c * 50;
      c3Compute(&r->t, &r->m);
      r->wrong = 0;
      r->joules = c == 3 ? 0 : 1.5;
    }
  CHECK(nr == 10, "rows: every contender in s1 and s2, nccl and auto in s3 (%d)", nr);
  c3Result res = {.args = &a,
                  .sc = sc,
                  .nsc = 3,
                  .cs = a.cs,
                  .ncs = a.ncs,
                  .rows = rows,
                  .nrows = nr,
                  .nranks = 4,
                  .ncclLacks = fakeLacks,
                  .driverVersion = 13000};
  snprintf(res.gpu, sizeof(res.gpu), "test \"GPU\"");
  snprintf(res.ncclVersion, sizeof(res.ncclVersion), "2.28.9");
  snprintf(res.command, sizeof(res.command), "test_c3 made-up");
  FILE *f = tmpfile();
  CHECK(f != NULL, "tmpfile");
  if (!f) return 1;
  c3PrintScenario(f, &res, 0);
  c3PrintScenario(f, &res, 2);
  c3PrintSummary(f, &res);
  rewind(f);
  char buf[16384];
  size_t got = fread(buf, 1, sizeof(buf) - 1, f);
  buf[got] = '\0';
  fclose(f);
  CHECK(strstr(buf, "s1: GEMM 64x64x64") && strstr(buf, "<- dmaccl default") &&
            strstr(buf, "pushb"),
        "table and summary text:\n%s", buf);
  CHECK(strstr(buf, "s3: GEMM 512x8192x2048 bf16 x10, allreduce 8M x20") &&
            strstr(buf, "# no nccl-ce row: fake: no reductions on copy engines\n") &&
            strstr(
                buf,
                "# no pushb row: allreduce takes push1, pull1, stage, stagesm, stagell and twoshot "
                "(its algorithms in src/plan), not pushb\n"),
        "the AllReduce table and why two contenders have no row:\n%s", buf);
  char *s1 = strstr(buf, "s1: GEMM"), *s3 = strstr(buf, "s3: GEMM");
  CHECK(s1 && s3, "both tables");
  if (s1 && s3) {
    *s3 = '\0'; /* s1's table alone */
    CHECK(!strstr(s1, "# no "), "s1 leaves nobody out:\n%s", s1);
    *s3 = 's';
  }
  /* the summary's rows column: pushb and nccl-ce ran 2 of 3 */
  CHECK(strstr(buf, "  pushb                         2") &&
            strstr(buf, "  nccl-ce                       2") &&
            strstr(buf, "  nccl                          3"),
        "rows per contender:\n%s", buf);

  /* the JSON: the collective's table name and the skipped contenders */
  char tmp[] = "/tmp/test_c3_XXXXXX";
  const char *json = jsonOut;
  if (!json) {
    int fd = mkstemp(tmp);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return 1;
    close(fd);
    json = tmp;
  }
  CHECK(c3WriteJson(&res, json) == 0, "JSON written to %s", json);
  f = fopen(json, "r");
  got = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
  buf[got] = '\0';
  if (f) fclose(f);
  if (json == tmp) unlink(tmp);
  CHECK(
      strstr(buf, "\"coll\": \"allreduce\"") && strstr(buf, "\"coll\": \"allgather\"") &&
          strstr(
              buf,
              "\"skipped\": [{\"contender\": \"nccl-ce\", \"why\": \"fake: no "
              "reductions on copy engines\"}, {\"contender\": \"pushb\", \"why\": "
              "\"allreduce takes push1, pull1, stage, stagesm, stagell and twoshot (its algorithms "
              "in "
              "src/plan), not pushb\"}]") &&
          strstr(buf, "\"skipped\": []"),
      "JSON names the collective and the skipped contenders:\n%s", buf);
  return 0;
}

/* A scenario of collective c and size (its GEMM is 64 x 6144 x 4096). */
static c3Scenario scen(collId c, size_t size) {
  c3Scenario s = {.m = 64, .n = 6144, .k = 4096, .coll = c, .size = size, .commShare = 0.5};
  snprintf(s.name, sizeof(s.name), "t");
  return s;
}

/* c3Traffic of one case, checked against hand-computed per-GPU bytes (the
 * same on every GPU in these symmetric cases). */
static int trafficCase(const char *what, collId c, size_t size, int n, planAlgo algo,
                       planAlgo wantRuns, size_t read, size_t write, int copies, int lane) {
  c3Scenario s = scen(c, size);
  c3TrafficResult t;
  char err[256] = "";
  if (c3Traffic(&s, n, algo, &t, err, sizeof(err)) != 0) {
    TEST_FAIL("%s: c3Traffic failed: %s", what, err);
    return 0;
  }
  int ok = t.algo == wantRuns && t.asked == algo && t.nranks == n && t.size == size &&
           t.maxRead == read && t.maxWrite == write && t.maxTotal == read + write &&
           t.maxCopies == copies && t.maxLaneCopies == lane;
  for (int g = 0; g < n; g++)
    ok &= t.gpu[g].read == read && t.gpu[g].write == write && t.gpu[g].copies == copies;
  CHECK(ok,
        "%s: runs %s (want %s), read %zu (want %zu), write %zu (want %zu), copies %d (want %d), "
        "lane %d (want %d)",
        what, planAlgoName(t.algo), planAlgoName(wantRuns), t.maxRead, read, t.maxWrite, write,
        t.maxCopies, copies, t.maxLaneCopies, lane);
  return ok;
}

static int testTrafficCases(void) {
  const size_t M = (size_t)1 << 20;
  /* AllGather push1, 2 ranks, 4M (2M blocks): each GPU reads its own block
   * twice (the self copy, on a side lane from 1M, and the push to its peer)
   * and writes 2 blocks (its self copy, the peer's push): 2 x the size. */
  trafficCase("allgather push1 4M/2", COLL_ALLGATHER, 4 * M, 2, PLAN_ALGO_PUSH1, PLAN_ALGO_PUSH1,
              4 * M, 4 * M, 2, 1);
  /* 1M: 512K blocks, the self copy on lane 0 with the peer copy. */
  trafficCase("allgather push1 1M/2", COLL_ALLGATHER, M, 2, PLAN_ALGO_PUSH1, PLAN_ALGO_PUSH1, M, M,
              2, 2);
  /* pull1: the peer reads my block; the same bytes per GPU. */
  trafficCase("allgather pull1 1M/2", COLL_ALLGATHER, M, 2, PLAN_ALGO_PULL1, PLAN_ALGO_PULL1, M, M,
              2, 2);
  /* 3 ranks, 3M (1M blocks): my block is read 3 times, 3 blocks written. */
  trafficCase("allgather push1 3M/3", COLL_ALLGATHER, 3 * M, 3, PLAN_ALGO_PUSH1, PLAN_ALGO_PUSH1,
              3 * M, 3 * M, 3, 2);
  /* stage, 1M on 2: my block into both slots (read twice, 512K into my slot,
   * 512K from the peer into my slot), then one out copy slot -> receive
   * buffer of the whole 1M (read and write on my HBM): 2M + 2M. */
  trafficCase("allgather stage 1M/2", COLL_ALLGATHER, M, 2, PLAN_ALGO_STAGE, PLAN_ALGO_STAGE, 2 * M,
              2 * M, 3, 3);
  /* stage beyond DMACCL_STAGE_BYTES (8M of receive buffer): push1 runs. */
  trafficCase("allgather stage 64M/2 falls back", COLL_ALLGATHER, 64 * M, 2, PLAN_ALGO_STAGE,
              PLAN_ALGO_PUSH1, 64 * M, 64 * M, 2, 1);
  /* AlltoAll push1 4M on 2 (the size is what each rank sends): 2 x 2M
   * blocks read from my send buffer, 2 written into my receive buffer. */
  trafficCase("alltoall push1 4M/2", COLL_ALLTOALL, 4 * M, 2, PLAN_ALGO_PUSH1, PLAN_ALGO_PUSH1,
              4 * M, 4 * M, 2, 1);
  /* AllReduce pull1 16M on 2, T = 8M per rank in thirds (32M scratch;
   * one process per GPU, as dmaccl-c3 runs, and not in list order: the
   * one kernel of reduce.c's buildPieced):
   *   read:  the peer pulls my T (8M) + REDUCE reads 2 x 8M + the peer
   *          pulls my reduced T (8M) = 32M
   *   write: the pulled T into scratch (8M) + REDUCE's output (8M) + the
   *          peer's reduced T into my receive buffer (8M) = 24M
   *   copies: 3 pulls (lane A) + 3 pulls of the peer's result (lane C). */
  trafficCase("allreduce pull1 16M/2", COLL_ALLREDUCE, 16 * M, 2, PLAN_ALGO_PULL1, PLAN_ALGO_PULL1,
              32 * M, 24 * M, 6, 3);
  /* AllReduce stage 1M on 2 (one shot): my whole buffer into the peer's
   * slot (read 1M here, write 1M there), REDUCE of 2 x 1M into 1M. */
  trafficCase("allreduce stage 1M/2", COLL_ALLREDUCE, M, 2, PLAN_ALGO_STAGE, PLAN_ALGO_STAGE, 3 * M,
              2 * M, 1, 1);
  /* stage needs n x count bytes of slot: 8M on 2 is 16M, so pull1 runs:
   * T = 4M in 4 pieces of 1M (lanes A, B), the peer's result in 2 groups of
   * 2M (lane C). */
  trafficCase("allreduce stage 8M/2 falls back", COLL_ALLREDUCE, 8 * M, 2, PLAN_ALGO_STAGE,
              PLAN_ALGO_PULL1, 16 * M, 12 * M, 6, 2);
  /* ReduceScatter pull1 128M on 2 (64M per rank): the peer pulls my 64M,
   * REDUCE reads 2 x 64M; writes scratch 64M + result 64M. 4 pieces of 16M
   * (scratch 32M / 2 halves / 1 peer = 16M cap, 64M / 4 = 16M wanted). */
  /* AllReduce push1 8M/2 (bf16), two pieces of each 4M half: every GPU
   * reads its half twice by copy (out to the peer's scratch, its result
   * out to the peer's receive buffer) and 8M in the kernel; it is written
   * 4M by each of the peer's pushes and 4M by its kernel: pull1's traffic,
   * in four copies (two a lane). */
  trafficCase("allreduce push1 8M/2", COLL_ALLREDUCE, 8 * M, 2, PLAN_ALGO_PUSH1, PLAN_ALGO_PUSH1,
              16 * M, 12 * M, 4, 2);
  trafficCase("reducescatter pull1 128M/2", COLL_REDUCESCATTER, 128 * M, 2, PLAN_ALGO_PULL1,
              PLAN_ALGO_PULL1, 192 * M, 128 * M, 4, 2);
  /* Broadcast push1 from root 0, 2 ranks, 4M: the root reads its buffer
   * twice (self copy, push) and writes its own receive buffer; rank 1 is
   * written once. The busiest GPU is the root: read 8M, write 4M. */
  c3Scenario bc = scen(COLL_BROADCAST, 4 * M);
  c3TrafficResult t;
  char err[256] = "";
  CHECK(c3Traffic(&bc, 2, PLAN_ALGO_PUSH1, &t, err, sizeof(err)) == 0 && t.gpu[0].read == 8 * M &&
            t.gpu[0].write == 4 * M && t.gpu[1].read == 0 && t.gpu[1].write == 4 * M &&
            t.gpu[0].issued == 8 * M && t.gpu[1].issued == 0 && t.gpu[1].copies == 0 &&
            t.maxTotal == 12 * M,
        "broadcast push1 4M/2: root r %zu w %zu, rank 1 r %zu w %zu (%s)", t.gpu[0].read,
        t.gpu[0].write, t.gpu[1].read, t.gpu[1].write, err);
  /* pull1: rank 1 issues the copy that reads the root's HBM. */
  CHECK(c3Traffic(&bc, 2, PLAN_ALGO_PULL1, &t, err, sizeof(err)) == 0 && t.gpu[0].read == 8 * M &&
            t.gpu[1].write == 4 * M && t.gpu[0].issued == 4 * M && t.gpu[1].issued == 4 * M,
        "broadcast pull1 4M/2: the receiver issues the peer copy");
  /* Refusals. */
  c3Scenario ar = scen(COLL_ALLREDUCE, M);
  CHECK(c3Traffic(&ar, 2, PLAN_ALGO_PUSHB, &t, err, sizeof(err)) == -1 && strstr(err, "pushb"),
        "allreduce pushb refused ('%s')", err);
  CHECK(c3Traffic(&ar, C3_TRAFFIC_MAX_RANKS + 1, PLAN_ALGO_PULL1, &t, err, sizeof(err)) == -1,
        "too many ranks refused");
  /* GEMM: 64 x 6144 x 4096 bf16. */
  size_t gb = ((size_t)64 * 4096 + (size_t)4096 * 6144 + (size_t)64 * 6144) * 2;
  CHECK(c3GemmBytes(&ar) == gb && fabs(c3GemmIntensity(&ar) - 2.0 * 64 * 6144 * 4096 / gb) < 1e-9 &&
            c3GemmIntensity(&ar) < C3_RIDGE_FLOP_PER_BYTE,
        "GEMM bytes %zu (want %zu), intensity %g: memory-bound", c3GemmBytes(&ar), gb,
        c3GemmIntensity(&ar));
  return 0;
}

/* Every shipped scenario, rank count and algorithm: the per-GPU sums match
 * sums over every rank's schedule built here independently (reads = copy
 * bytes + REDUCE sources, writes = copy bytes + REDUCE outputs; lines, as
 * a copy's destination or a REDUCE's source, twice, and a source's again
 * as written when cleared; issued = the copy engines' copy bytes, stored =
 * the kernels'), and auto picks an algorithm the collective takes. */
static int testTrafficTotals(void) {
  char err[256] = "";
  char *text = c3ReadFile(C3_SCENARIO_FILE, err, sizeof(err));
  CHECK(text != NULL, "read %s: %s", C3_SCENARIO_FILE, err);
  if (!text) return 0;
  static c3Scenario sc[C3_MAX_SCENARIOS];
  int nsc = c3ParseScenarios(text, "", sc, C3_MAX_SCENARIOS, err, sizeof(err));
  free(text);
  CHECK(nsc > 0, "scenarios: %s", err);
  const int ranks[] = {1, 2, 3, 4, 8};
  int cases = 0;
  static c3TrafficResult t;
  for (int i = 0; i < nsc; i++)
    for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++) {
      int n = ranks[k];
      planArgs a;
      CHECK(c3PlanArgs(&sc[i], n, 0, &a) == 0, "%s: plan arguments", sc[i].name);
      planAlgo au;
      CHECK(c3AutoAlgo(&sc[i], n, NULL, &au, err, sizeof(err)) == 0 &&
                (planCollOf(a.coll)->algos & PLAN_ALGO_BIT(au)),
            "%s on %d: auto picks an algorithm the collective takes", sc[i].name, n);
      for (int al = 0; al < PLAN_NUM_ALGOS; al++) {
        if (!(planCollOf(a.coll)->algos & PLAN_ALGO_BIT(al))) continue;
        if (c3Traffic(&sc[i], n, (planAlgo)al, &t, err, sizeof(err)) != 0) {
          TEST_FAIL("%s on %d, %s: %s", sc[i].name, n, planAlgoName((planAlgo)al), err);
          continue;
        }
        size_t copy = 0, cw = 0, kern = 0, rsrc = 0, rdst = 0, read = 0, write = 0, issued = 0,
               stored = 0;
        planSchedule s;
        memset(&s, 0, sizeof(s));
        for (int r = 0; r < n; r++) {
          c3PlanArgs(&sc[i], n, r, &a);
          CHECK(planBuild(&a, t.algo, &s) == 0, "%s: build rank %d", sc[i].name, r);
          for (int j = 0; j < s.nsteps; j++) {
            const planStep *st = &s.steps[j];
            /* its lines (no data: a token, one line) */
            size_t twice = st->bytes ? 2 * ((st->bytes + 7) / 8 * 8) : 16;
            if (st->kind == PLAN_STEP_COPY) {
              copy += st->bytes;
              cw += st->dst.buf == PLAN_BUF_LINES ? twice : st->bytes;
              kern += st->inKernel ? st->bytes : 0;
            }
            if (st->kind == PLAN_STEP_REDUCE) {
              rdst += st->bytes;
              for (int k = 0; k < st->nsrc; k++) {
                int lines = s.srcs[st->src0 + k].buf == PLAN_BUF_LINES;
                rsrc += lines ? twice : st->bytes;
                rdst += lines ? twice : 0;
              }
            }
          }
        }
        planScheduleFree(&s);
        for (int g = 0; g < n; g++) {
          read += t.gpu[g].read;
          write += t.gpu[g].write;
          issued += t.gpu[g].issued;
          stored += t.gpu[g].stored;
          CHECK(t.gpu[g].read == t.gpu[g].copyRead + t.gpu[g].reduceRead &&
                    t.gpu[g].write == t.gpu[g].copyWrite + t.gpu[g].reduceWrite &&
                    t.gpu[g].read + t.gpu[g].write <= t.maxTotal,
                "%s on %d, %s: GPU %d's parts", sc[i].name, n, planAlgoName((planAlgo)al), g);
        }
        CHECK(copy > 0 && read == copy + rsrc && write == cw + rdst && issued == copy - kern &&
                  stored == kern && t.copyBytes == copy && t.reduceRead == rsrc &&
                  t.reduceWrite == rdst,
              "%s on %d, %s: reads %zu = copies %zu + reduce %zu, writes %zu = %zu + %zu",
              sc[i].name, n, planAlgoName((planAlgo)al), read, copy, rsrc, write, cw, rdst);
        /* Every collective moves at least its size through some GPU's HBM:
         * the busiest GPU carries at least size / n, read and written. */
        CHECK(t.maxTotal * (size_t)n >= t.size, "%s on %d, %s: total %zu below size %zu / n",
              sc[i].name, n, planAlgoName((planAlgo)al), t.maxTotal, t.size);
        cases++;
      }
    }
  CHECK(cases > 400, "%d cases", cases);
  return 0;
}

/* The --traffic table through its printer: a row per dmaccl contender that
 * takes the collective, none for NCCL. */
static int testTrafficTable(void) {
  c3Args a;
  char err[256] = "";
  char *argv[] = {"dmaccl-c3", "--traffic", NULL};
  CHECK(c3ParseArgs(2, argv, "scen.txt", &a, err, sizeof(err)) == 0 && a.traffic && a.ncs == 9 &&
            !strcmp(a.cs[0].name, "auto"),
        "--traffic without -A: auto and the 8 algorithms (%d; %s)", a.ncs, err);
  for (int i = 0; i < a.ncs; i++) CHECK(a.cs[i].kind == C3_DMACCL, "%s is dmaccl", a.cs[i].name);
  char *argv2[] = {"dmaccl-c3", "--traffic", "-A", "nccl,push1,pull1", "-p", "4", NULL};
  CHECK(c3ParseArgs(6, argv2, "scen.txt", &a, err, sizeof(err)) == 0 && a.ncs == 3 && a.procs == 4,
        "--traffic -A -p (%s)", err);
  c3Scenario sc[2] = {scen(COLL_ALLGATHER, 4 << 20), scen(COLL_ALLREDUCE, 16 << 20)};
  snprintf(sc[1].name, sizeof(sc[1].name), "u");
  char buf[8192] = "";
  FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
  CHECK(f != NULL, "fmemopen");
  if (!f) return 0;
  c3PrintTraffic(f, &a, sc, 2, 2);
  fclose(f);
  /* AllGather 4M: 4M read + 4M written per GPU with push1 and pull1. */
  CHECK(strstr(buf, "push1    push1        4.00      4.00      8.00   2.00") &&
            strstr(buf, "pull1    pull1        4.00      4.00      8.00   2.00") &&
            strstr(buf, "pull1    pull1       32.00     24.00     56.00   3.50") &&
            strstr(buf, "push1    push1       32.00     24.00     56.00   3.50") &&
            strstr(buf, "# no nccl rows") && !strstr(buf, "# no push1 rows") &&
            strstr(buf, "not measured") && strstr(buf, " yes "),
        "table:\n%s", buf);
  /* auto under a contender's DMACCL_CTA_POLICY or DMACCL_ALGO: the table
   * reshaped as the library would (AllGather 1M on 2 ranks: the line
   * kernel by default, its copy-engine form under zero, pull1 as named);
   * other NAME=VALUEs, and any on a named algorithm, are said not applied */
  char *argv3[] = {"dmaccl-c3", "--traffic", "-A",
                   "auto,auto/DMACCL_CTA_POLICY=zero,auto/DMACCL_ALGO=allgather:pull1,"
                   "auto/DMACCL_CTA_POLICY=bogus,push1/DMACCL_CTA_POLICY=zero,"
                   "auto/DMACCL_STAGE_BYTES=1M",
                   NULL};
  CHECK(c3ParseArgs(4, argv3, "scen.txt", &a, err, sizeof(err)) == 0 && a.ncs == 6,
        "--traffic -A with NAME=VALUEs (%s)", err);
  c3Scenario one = scen(COLL_ALLGATHER, 1 << 20);
  snprintf(one.name, sizeof(one.name), "g");
  memset(buf, 0, sizeof(buf));
  f = fmemopen(buf, sizeof(buf) - 1, "w");
  CHECK(f != NULL, "fmemopen");
  if (!f) return 0;
  c3PrintTraffic(f, &a, &one, 1, 2);
  fclose(f);
  CHECK(strstr(buf, "auto     stagell      2.00      3.00      5.00   5.00      0    0     1.00") &&
            strstr(buf, "auto/DMACCL_CTA_POLICY=zero stage        2.00      2.00      4.00") &&
            strstr(buf, "auto/DMACCL_ALGO=allgather:pull1 pull1        1.00") &&
            strstr(buf, "g auto/DMACCL_CTA_POLICY=bogus: DMACCL_CTA_POLICY=bogus is not default") &&
            strstr(buf, "# push1/DMACCL_CTA_POLICY=zero: DMACCL_CTA_POLICY=zero is not applied") &&
            strstr(buf, "# auto/DMACCL_STAGE_BYTES=1M: DMACCL_STAGE_BYTES=1M is not applied") &&
            !strstr(buf, "# auto/DMACCL_CTA_POLICY=zero: DMACCL_CTA_POLICY=zero is not applied"),
        "table with NAME=VALUEs:\n%s", buf);
  return 0;
}

int main(int argc, char **argv) {
  jsonOut = argc > 1 ? argv[1] : NULL;
  RUN(testScenarios);
  RUN(testShippedScenarios);
  RUN(testCollectives);
  RUN(testLacksAndSelection);
  RUN(testExactBf16);
  RUN(testContenders);
  RUN(testArgs);
  RUN(testMetrics);
  RUN(testReport);
  RUN(testTrafficCases);
  RUN(testTrafficTotals);
  RUN(testTrafficTable);
  TEST_EXIT();
}
