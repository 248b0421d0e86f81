/* dmaccl-c3's plain-C parts: scenario files, contender names, the command
 * line, ConCCL's metrics, repetition counts and the JSON writer.
 *   test_c3 [out.json]   with a path, also writes a JSON of a made-up run
 *                        (tests/c3.sh checks it with tools/c3/plot.py). */
#include "c3.h"
#include "harness.h"

/* A check that records a failure and goes on. */
#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) TEST_FAIL(__VA_ARGS__);                                                              \
  } while (0)

static const char *jsonOut; /* argv[1] */

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
            sc[0].coll == C3_ALLGATHER && sc[0].size == (1u << 20) && sc[0].commShare == 0.5 &&
            sc[0].line == 2,
        "first scenario's fields");
  CHECK(sc[1].coll == C3_ALLTOALL && sc[1].size == (32u << 20) &&
            fabs(sc[1].commShare - 0.25) < 1e-12 && sc[1].line == 4,
        "second scenario's fields");
  n = c3ParseScenarios(text, "b", sc, 8, err, sizeof(err));
  CHECK(n == 1 && !strcmp(sc[0].name, "b"), "-s keeps one scenario");
  CHECK(errNames(text, "a,zz", "'zz'"), "-s with an unknown name");
  CHECK(errNames("a 1 2 3 allgather\n", "", "line 1"), "too few fields");
  CHECK(errNames("\na 1 x 3 allgather 1M\n", "", "line 2: N 'x'"), "bad dimension");
  CHECK(errNames("a 0 2 3 allgather 1M\n", "", "M '0'"), "zero dimension");
  CHECK(errNames("a 1 2 3 allreduce 1M\n", "", "'allreduce'"), "unknown collective");
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
  CHECK(n >= 12, "at least 12 scenarios (%d: %s)", n, err);
  int ag = 0, a2a = 0, membound = 0, small = 0, large = 0;
  for (int i = 0; i < n; i++) {
    ag += sc[i].coll == C3_ALLGATHER;
    a2a += sc[i].coll == C3_ALLTOALL;
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
  CHECK(c3ParseContender("pushb/DMACCL_BATCH_OVERLAP=0", &s, err, sizeof(err)) == 0 &&
            !strcmp(s.algo, "pushb") && !strcmp(s.envVar, "DMACCL_BATCH_OVERLAP") &&
            !strcmp(s.envVal, "0") && !s.highPrio,
        "variant with a parameter");
  CHECK(c3ParseContender("auto", &s, err, sizeof(err)) == 0 && !strcmp(s.algo, "auto"), "auto");
  const char *bad[] = {"nccl-cta0",   "nccl-cta",       "nccl-cta65", "nccl-foo", "foo",
                       "push1/FOO=1", "push1/DMACCL_X", "-prio",      ""};
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

/* A made-up run through the table, the summary and the JSON writer. */
static int testReport(void) {
  const char *json = jsonOut;
  c3Args a;
  char err[256];
  CHECK(parse(&a, err, "-A", "nccl,nccl-ce,auto,pushb", NULL) == 0, "contenders");
  c3Scenario sc[2];
  int n = c3ParseScenarios("s1 64 64 64 allgather 1M\ns2 128 128 128 alltoall 64M comm=10%\n", "",
                           sc, 2, err, sizeof(err));
  CHECK(n == 2, "scenarios");
  c3Row rows[8];
  int nr = 0;
  uint64_t seed = 99;
  for (int s = 0; s < 2; s++)
    for (int c = 0; c < 4; c++) {
      c3Row *r = &rows[nr++];
      memset(r, 0, sizeof(*r));
      r->scenario = s, r->contender = c, r->gemms = 10, r->colls = 20;
      double g = 1000 + (double)(dataRand(&seed) % 1000), k = s ? g / 9 : g;
      r->t = (c3Times){.gemm = g, .comm = k, .gemmTogether = g * 1.05, .commTogether = k * 1.5};
      r->t.both = fmax(r->t.gemmTogether, r->t.commTogether) + (double)c * 50;
      c3Compute(&r->t, &r->m);
      r->wrong = 0;
      r->joules = c == 3 ? 0 : 1.5;
    }
  c3Result res = {.args = &a,
                  .sc = sc,
                  .nsc = 2,
                  .cs = a.cs,
                  .ncs = a.ncs,
                  .rows = rows,
                  .nrows = nr,
                  .nranks = 4,
                  .driverVersion = 13000};
  snprintf(res.gpu, sizeof(res.gpu), "test \"GPU\"");
  snprintf(res.ncclVersion, sizeof(res.ncclVersion), "2.28.9");
  snprintf(res.command, sizeof(res.command), "test_c3 made-up");
  FILE *f = tmpfile();
  CHECK(f != NULL, "tmpfile");
  if (!f) return 1;
  c3PrintScenario(f, &res, 0);
  c3PrintSummary(f, &res);
  rewind(f);
  char buf[8192];
  size_t got = fread(buf, 1, sizeof(buf) - 1, f);
  buf[got] = '\0';
  fclose(f);
  CHECK(strstr(buf, "s1: GEMM 64x64x64") && strstr(buf, "<- dmaccl default") &&
            strstr(buf, "pushb"),
        "table and summary text:\n%s", buf);
  if (json) CHECK(c3WriteJson(&res, json) == 0, "JSON written to %s", json);
  return 0;
}

int main(int argc, char **argv) {
  jsonOut = argc > 1 ? argv[1] : NULL;
  RUN(testScenarios);
  RUN(testShippedScenarios);
  RUN(testContenders);
  RUN(testArgs);
  RUN(testMetrics);
  RUN(testReport);
  TEST_EXIT();
}
