/* Selection table and its parser: valid strings, overrides, malformed input
 * (clear error naming the text, table unchanged), the built-in defaults. */
#include "harness.h"
#include "plan.h"

#include <stdint.h>

/* Field by field: planRange has padding that memcmp would read. */
static int tableEqual(const planTable *a, const planTable *b) {
  for (int c = 0; c < PLAN_NUM_COLLS; c++) {
    if (a->nranges[c] != b->nranges[c] || a->gnranges[c] != b->gnranges[c]) return 0;
    for (int i = 0; i < a->nranges[c]; i++) {
      const planRange *x = &a->ranges[c][i], *y = &b->ranges[c][i];
      if (x->lo != y->lo || x->hi != y->hi || x->algo != y->algo) return 0;
    }
    for (int i = 0; i < a->gnranges[c]; i++) {
      const planRange *x = &a->granges[c][i], *y = &b->granges[c][i];
      if (x->lo != y->lo || x->hi != y->hi || x->algo != y->algo) return 0;
    }
  }
  return 1;
}

static int testDefaultsParse(void) {
  planTable t;
  char err[256];
  planTableDefaults(&t, 4);
  planTable u = t;
  ASSERT_EQ_INT(planTuneParse(&u, 4, planDefaultTune, err, sizeof(err)), 0);
  ASSERT_TRUE(tableEqual(&t, &u));
  for (int c = 0; c < PLAN_NUM_COLLS; c++) {
    /* Defaults cover every size. */
    size_t sizes[] = {0, 1, 4096, (size_t)1 << 30, SIZE_MAX - 1};
    for (int i = 0; i < 5; i++) {
      const planRange *why = NULL;
      planSelect(&t, (planColl)c, sizes[i], &why);
      ASSERT_TRUE(why != NULL);
    }
  }
  return 0;
}

static int testIssueExample(void) {
  planTable t;
  char err[256];
  planTableDefaults(&t, 4);
  ASSERT_EQ_INT(planTableParse(&t, "allgather:push1;alltoall:batch", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 12345, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLTOALL, 12345, NULL), PLAN_ALGO_PUSHB);
  return 0;
}

static int testRanges(void) {
  planTable t;
  char err[256];
  planTableDefaults(&t, 4);
  ASSERT_EQ_INT(planTableParse(&t, " allgather : pull1 ; allgather:64K-4M:pushn, 4M-inf:pullb ",
                               err, sizeof(err)),
                0);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 0, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 65535, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 65536, NULL), PLAN_ALGO_PUSHN);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, (4u << 20) - 1, NULL), PLAN_ALGO_PUSHN);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 4u << 20, NULL), PLAN_ALGO_PULLB);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, SIZE_MAX - 1, NULL), PLAN_ALGO_PULLB);
  /* A later string overrides only what it names. */
  ASSERT_EQ_INT(planTableParse(&t, "allgather:1K-2K:push1", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1500, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 2048, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1023, NULL), PLAN_ALGO_PULL1);
  /* Names are case-insensitive; empty entries are ignored. */
  ASSERT_EQ_INT(planTableParse(&t, ";;AllToAll:PULLN;", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLTOALL, 7, NULL), PLAN_ALGO_PULLN);
  ASSERT_EQ_INT(planTableParse(&t, "", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planTableParse(&t, NULL, err, sizeof(err)), 0);
  return 0;
}

static int testMalformed(void) {
  const struct {
    const char *in, *msg;
  } bad[] = {
      {"allgather", "needs the form"},
      {"allreduce:pushb",
       "allreduce does not take algorithm 'pushb' (it takes: push1 pull1 stage stagesm stagell "
       "twoshot)"},
      {"sendrecv:push1", "unknown collective 'sendrecv'"},
      {"alltoallv:stage", "alltoallv does not take algorithm 'stage'"},
      {"allgather:push2", "unknown algorithm 'push2'"},
      {"allgather:", "has no algorithm"},
      {"allgather:push1,", "empty algorithm"},
      {"allgather:64K:push1", "needs the form LO-HI"},
      {"allgather:1X-2M:push1", "bad size '1X'"},
      {"allgather:1K-2Q:push1", "bad size '2Q'"},
      {"allgather:4M-1M:push1", "empty size range"},
      {"allgather:99999999999999999999-inf:push1", "bad size"},
      {"allgather:push1;alltoall:nope", "unknown algorithm 'nope'"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    planTable t, before;
    char err[256];
    planTableDefaults(&t, 4);
    before = t;
    if (planTableParse(&t, bad[i].in, err, sizeof(err)) != -1) {
      TEST_FAIL("'%s' parsed", bad[i].in);
      return 1;
    }
    ASSERT_CONTAINS(err, bad[i].msg);
    ASSERT_TRUE(tableEqual(&t, &before));
  }
  return 0;
}

/* pairs or AlltoAllv's stagell (the default) against another algorithm
 * by size: a
 * finished table is refused (planTableCheckPairs), a table on its way
 * there is not, and a tuning file that ends so keeps the collective's
 * table and applies the rest. */
static int testPairsSplit(void) {
  const struct {
    const char *in, *msg;
  } bad[] = {
      {"alltoallv:1M-inf:pushb", /* eager: stagell below 1 MB */
       "alltoallv: stagell must be its algorithm at every size or at none (stagell at 0 bytes, "
       "pushb at 1M bytes)"},
      {"alltoallv:pushb;alltoallv:64K-1M:stagell", "alltoallv: stagell must be its algorithm"},
      {"alltoallv@graph:pairs;alltoallv@graph:0-64K:pushn",
       "alltoallv@graph: pairs must be its algorithm"},
      {"alltoallv@graph:0-64K:pushn", "alltoallv@graph: stagell must be its algorithm"},
      {"alltoallv:pushb;alltoallv:64K-1M:pairs", "alltoallv: pairs must be its algorithm"},
  };
  char err[256];
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    planTable t;
    planTableDefaults(&t, 4);
    ASSERT_EQ_INT(planTableCheckPairs(&t, err, sizeof(err)), 0);
    ASSERT_EQ_INT(planTableParse(&t, bad[i].in, err, sizeof(err)), 0);
    ASSERT_EQ_INT(planTableCheckPairs(&t, err, sizeof(err)), -1);
    ASSERT_CONTAINS(err, bad[i].msg);
  }
  /* two lines of a file that end whole */
  planTable t, before;
  planTableDefaults(&t, 4);
  ASSERT_EQ_INT(
      planTuneParse(&t, 4, "* alltoallv:0-1M:pushn\n* alltoallv:1M-inf:pushb\n", err, sizeof(err)),
      0);
  ASSERT_EQ_INT(err[0], 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, 64 << 10, 1, NULL), PLAN_ALGO_PUSHN);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, 2 << 20, 1, NULL), PLAN_ALGO_PUSHB);
  /* a file that ends split: AlltoAllv keeps the table before it, the rest applies */
  planTableDefaults(&t, 4);
  before = t;
  ASSERT_EQ_INT(planTuneParse(&t, 4, "4 alltoallv:0-4M:pairs,4M-inf:pushb;allgather:pull1\n", err,
                              sizeof(err)),
                0);
  ASSERT_CONTAINS(err, "alltoallv: pairs must be its algorithm");
  ASSERT_CONTAINS(err, "its alltoallv ranges are not applied");
  for (int g = 0; g < 2; g++)
    for (int e = 0; e <= 40; e++)
      ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, (size_t)1 << e, g, NULL),
                    planSelectIn(&before, PLAN_COLL_ALLTOALLV, (size_t)1 << e, g, NULL));
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1024, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planTableCheckPairs(&t, err, sizeof(err)), 0);
  return 0;
}

static int testTooManyRanges(void) {
  planTable t;
  char err[256], buf[4096];
  planTableDefaults(&t, 4);
  size_t o = (size_t)snprintf(buf, sizeof(buf), "alltoall:");
  for (int i = 0; i < PLAN_MAX_RANGES + 2; i++)
    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%d-%d:pull1", i ? "," : "", 2 * i + 1,
                          2 * i + 2);
  ASSERT_EQ_INT(planTableParse(&t, buf, err, sizeof(err)), -1);
  ASSERT_CONTAINS(err, "too many size ranges");
  return 0;
}

/* Tuning text: '*' lines first, then the rank count's, comments, origins. */
static int testTuneText(void) {
  planTable t;
  char err[256];
  const char *text = "# tuned\n"
                     "4 allgather:0-64K:stage,64K-inf:pushb   # four GPUs\n"
                     "\n"
                     "* allgather:pull1;alltoall:pulln\n"
                     "8 allgather:stage2d\n";
  planTableDefaults(&t, 4);
  t.origin = PLAN_FROM_TUNE_FILE;
  ASSERT_EQ_INT(planTuneParse(&t, 4, text, err, sizeof(err)), 0);
  const planRange *why = NULL;
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1000, &why), PLAN_ALGO_STAGE);
  ASSERT_EQ_INT(why->line, 2);
  ASSERT_EQ_INT(why->origin, PLAN_FROM_TUNE_FILE);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1 << 20, NULL), PLAN_ALGO_PUSHB);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLTOALL, 1 << 20, &why), PLAN_ALGO_PULLN);
  ASSERT_EQ_INT(why->line, 4);
  planTableDefaults(&t, 8);
  ASSERT_EQ_INT(planTuneParse(&t, 8, text, err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1 << 20, NULL), PLAN_ALGO_STAGE2D);
  planTableDefaults(&t, 2); /* only the '*' line applies */
  ASSERT_EQ_INT(planTuneParse(&t, 2, text, err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1000, NULL), PLAN_ALGO_PULL1);
  char buf[32];
  ASSERT_CONTAINS(planSizeString((size_t)64 << 10, buf, sizeof(buf)), "64K");
  ASSERT_CONTAINS(planSizeString(1536, buf, sizeof(buf)), "1536");
  ASSERT_CONTAINS(planSizeString(SIZE_MAX, buf, sizeof(buf)), "inf");
  return 0;
}

/* Malformed tuning text: the line is named, the table is left as it was,
 * even when the bad line is for another rank count. */
static int testTuneErrors(void) {
  const struct {
    const char *in, *msg;
  } bad[] = {
      {"4 allgather:stage\nfour allgather:push1\n", "line 2: 'four' is not a rank count"},
      {"4\n", "line 1: rank count '4' has no table"},
      {"0 allgather:push1", "rank count 0 must be at least 1"},
      {"* allgather:push1\n8 allgather:warp\n", "line 2: unknown algorithm 'warp'"},
      {"\n\n# x\n2 allgather:4M-1M:push1", "line 4: empty size range"},
      {"4 alltoall:1K-2Q:stage", "line 1: bad size '2Q'"},
      {"-3 allgather:push1", "is not a rank count"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    planTable t, before;
    char err[256];
    planTableDefaults(&t, 4);
    before = t;
    if (planTuneParse(&t, 4, bad[i].in, err, sizeof(err)) != -1) {
      TEST_FAIL("'%s' parsed", bad[i].in);
      return 1;
    }
    ASSERT_CONTAINS(err, bad[i].msg);
    ASSERT_TRUE(tableEqual(&t, &before));
  }
  return 0;
}

/* coll@graph ranges: captured calls take them where they cover a size and
 * the plain ranges elsewhere; eager calls never see them; later ranges
 * override earlier ones, and a plain range clears the graph ranges it
 * overlaps (a later layer decides for captured calls too); a bad
 * qualifier is named and changes nothing. Built in: 2 ranks, AllGather(V)
 * and AlltoAll take stagell up to 1 MB and stagesm above it up to 8 MB,
 * eager and captured;
 * AllReduce takes stagell up to 4 MB, twoshot above it, push1 from 16 MB
 * below 64 MB and pull1 from there, ReduceScatterV
 * stagell below 8 MB, ReduceScatter below 16 MB, then push1 below 32 MB,
 * eager and captured (stagesm's
 * form where the lines do not fit; what does not fit a slot falls back to
 * pull1 at launch), Reduce keeps stage; 3 ranks or more: AllReduce stagell
 * below 1152 KB, then twoshot below 16 MB, ReduceScatter stagell below 8 MB,
 * Broadcast chain from 4 MB. */
static int testGraphRanges(void) {
  planTable t, before;
  char err[256];
  const planRange *why = NULL;
  planTableDefaults(&t, 2);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 1 << 20, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 4 << 20, 0, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 4 << 20, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, (4 << 20) + 1, 0, NULL), PLAN_ALGO_TWOSHOT);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 8 << 20, 0, NULL), PLAN_ALGO_TWOSHOT);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 8 << 20, 1, NULL), PLAN_ALGO_TWOSHOT);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 16 << 20, 1, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 16 << 20, 0, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, (64 << 20) - 1, 0, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 64 << 20, 1, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 64 << 20, 0, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, (64 << 20) - 1, 1, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, (64 << 20) - 1, 1, NULL),
                PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 4 << 20, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 8 << 20, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 16 << 20, 0, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 16 << 20, 1, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, (32 << 20) - 1, 0, NULL),
                PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 32 << 20, 0, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 32 << 20, 1, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, (64 << 20) - 1, 0, NULL),
                PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 64 << 20, 0, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 8 << 20, 0, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 512 << 10, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTERV, 64 << 10, 0, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTERV, 16 << 20, 1, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCE, 512 << 10, 1, NULL), PLAN_ALGO_STAGE);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 1 << 20, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 1 << 20, 0, NULL), PLAN_ALGO_STAGELL);
  /* 2 ranks: stagell up to 1 MB, then stagesm through 8 MB (the receive
   * buffer fits a staging slot), eager and in graphs; then pushb */
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, (1 << 20) + 1, 1, &why), PLAN_ALGO_STAGESM);
  ASSERT_EQ_INT(why->origin, PLAN_FROM_BUILTIN);
  const planColl smColls[] = {PLAN_COLL_ALLGATHER, PLAN_COLL_ALLGATHERV, PLAN_COLL_ALLTOALL};
  for (int c = 0; c < 3; c++)
    for (int g = 0; g < 2; g++) {
      ASSERT_EQ_INT(planSelectIn(&t, smColls[c], 1 << 20, g, NULL), PLAN_ALGO_STAGELL);
      ASSERT_EQ_INT(planSelectIn(&t, smColls[c], (1 << 20) + 1, g, NULL), PLAN_ALGO_STAGESM);
      ASSERT_EQ_INT(planSelectIn(&t, smColls[c], 4 << 20, g, NULL), PLAN_ALGO_STAGESM);
      ASSERT_EQ_INT(planSelectIn(&t, smColls[c], 8 << 20, g, NULL), PLAN_ALGO_STAGESM);
      ASSERT_EQ_INT(planSelectIn(&t, smColls[c], (8 << 20) + 1, g, NULL), PLAN_ALGO_PUSHB);
    }
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 16 << 20, 1, NULL), PLAN_ALGO_PUSHB);
  planTableDefaults(&t, 4); /* AllGather's graph ranges were measured on 2 ranks only */
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 4 << 20, 1, NULL), PLAN_ALGO_STAGE);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 64 << 10, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 1 << 20, 0, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 1152 << 10, 1, NULL), PLAN_ALGO_TWOSHOT);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 8 << 20, 0, NULL), PLAN_ALGO_TWOSHOT);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 16 << 20, 0, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCESCATTER, 4 << 20, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCE, 64 << 10, 1, NULL), PLAN_ALGO_STAGE);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, 4 << 20, 0, NULL), PLAN_ALGO_CHAIN);
  /* Reduce: stage through 4 MB, then pull1 */
  for (int g = 0; g < 2; g++) {
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCE, 4 << 20, g, NULL), PLAN_ALGO_STAGE);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCE, (4 << 20) + 1, g, NULL), PLAN_ALGO_PULL1);
  }
  /* AlltoAllv: stagell at every size, eager and in graphs */
  for (int nranks = 1; nranks <= 8; nranks++) {
    planTableDefaults(&t, nranks);
    for (int g = 0; g < 2; g++)
      for (int e = 0; e <= 40; e++)
        ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, ((size_t)1 << e) - 1, g, NULL),
                      PLAN_ALGO_STAGELL);
  }
  planTableDefaults(&t, 2);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, 4 << 20, 0, NULL), PLAN_ALGO_STAGESM);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_REDUCE, 4 << 20, 1, NULL), PLAN_ALGO_STAGE);
  /* ... and a table may leave it at every size, for one mode or both */
  char perr[256];
  ASSERT_EQ_INT(planTableParse(&t, "alltoallv@graph:pushn", perr, sizeof(perr)), 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, 64 << 10, 1, NULL), PLAN_ALGO_PUSHN);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, 64 << 10, 0, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planTableParse(&t, "alltoallv:0-1M:pushn,1M-inf:pushb", perr, sizeof(perr)), 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, 2 << 20, 1, NULL), PLAN_ALGO_PUSHB);
  ASSERT_EQ_INT(planTableParse(&t, "alltoallv:pairs", perr, sizeof(perr)), 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALLV, 2 << 20, 1, NULL), PLAN_ALGO_PAIRS);

  planTableDefaults(&t, 2);
  ASSERT_EQ_INT(planTableParse(&t,
                               "allgather:0-8M:stage,8M-inf:pushb;allgather@graph:0-64K:push1;"
                               " AllReduce@Graph : pull1",
                               err, sizeof(err)),
                0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 1000, 1, &why), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT((int)why->hi, 64 << 10);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 1000, 0, NULL), PLAN_ALGO_STAGE);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 1000, NULL), PLAN_ALGO_STAGE);
  /* the plain allgather entry cleared the built-in 2M-8M graph range */
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 2 << 20, 1, NULL), PLAN_ALGO_STAGE);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 16 << 20, 1, NULL), PLAN_ALGO_PUSHB);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 1000, 1, NULL), PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLREDUCE, 1000, 0, NULL),
                PLAN_ALGO_STAGELL); /* 2 ranks, built in */
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 1000, 1, NULL),
                planSelect(&t, PLAN_COLL_ALLTOALL, 1000, NULL));
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 4 << 20, 1, NULL), PLAN_ALGO_STAGESM);
  ASSERT_EQ_INT(planTableParse(&t, "alltoall@graph:4M-8M:push1", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 4 << 20, 1, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 4 << 20, 0, NULL), PLAN_ALGO_STAGESM);
  ASSERT_EQ_INT(planTableParse(&t, "allgather@graph:16K-32K:stage", err, sizeof(err)), 0);
  ASSERT_EQ_INT(t.gnranges[PLAN_COLL_ALLGATHER], 3); /* 0-16K, 16K-32K, 32K-64K */
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 20000, 1, NULL), PLAN_ALGO_STAGE);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 40000, 1, NULL), PLAN_ALGO_PUSH1);
  /* A later plain entry decides for captured calls too. */
  ASSERT_EQ_INT(planTableParse(&t, "alltoall:pull1", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 4 << 20, 1, NULL), PLAN_ALGO_PULL1);
  /* Spaces around the qualifier; the last range reaches SIZE_MAX itself. */
  ASSERT_EQ_INT(planTableParse(&t, "allgather @ graph : 1M-inf:pull1", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, SIZE_MAX, 1, NULL), PLAN_ALGO_PULL1);
  before = t;
  ASSERT_EQ_INT(planTableParse(&t, "allgather@grph:push1", err, sizeof(err)), -1);
  ASSERT_CONTAINS(err, "@grph");
  ASSERT_CONTAINS(err, "@graph");
  ASSERT_EQ_INT(planTableParse(&t, "allgather@graph:pull9", err, sizeof(err)), -1);
  ASSERT_CONTAINS(err, "pull9");
  ASSERT_EQ_INT(planTableParse(&t, "reduce@graph:stage2d", err, sizeof(err)), -1);
  ASSERT_CONTAINS(err, "stage2d");
  ASSERT_EQ_INT(planTableParse(&t, "allgather@graph:", err, sizeof(err)), -1);
  ASSERT_CONTAINS(err, "allgather@graph");
  ASSERT_TRUE(tableEqual(&before, &t)); /* a failure changes nothing */
  /* Tuning text takes them too. */
  planTableDefaults(&t, 2);
  ASSERT_EQ_INT(planTuneParse(&t, 2, "2 alltoall@graph:0-1M:push1\n", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 1000, 1, NULL), PLAN_ALGO_PUSH1);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 1 << 20, 1, NULL), PLAN_ALGO_STAGELL);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLTOALL, 4 << 20, 1, NULL), PLAN_ALGO_STAGESM);
  return 0;
}

/* planArrivalAlgo: late-word forms become pull1 unless the user chose them. */
static int testArrivalAlgo(void) {
  const planAlgo late[] = {PLAN_ALGO_PUSH1, PLAN_ALGO_PUSHN, PLAN_ALGO_PUSHB, PLAN_ALGO_PULLB};
  const planAlgo early[] = {PLAN_ALGO_PULL1, PLAN_ALGO_PULLN, PLAN_ALGO_STAGE, PLAN_ALGO_STAGE2D};
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ_INT(planArrivalAlgo(PLAN_COLL_ALLGATHER, late[i], PLAN_FROM_BUILTIN),
                  PLAN_ALGO_PULL1);
    ASSERT_EQ_INT(planArrivalAlgo(PLAN_COLL_ALLGATHERV, late[i], PLAN_FROM_TUNE_FILE),
                  PLAN_ALGO_PULL1);
    ASSERT_EQ_INT(planArrivalAlgo(PLAN_COLL_ALLGATHER, late[i], PLAN_FROM_ENV), late[i]);
    ASSERT_EQ_INT(planArrivalAlgo(PLAN_COLL_ALLGATHER, late[i], PLAN_FROM_CONFIG), late[i]);
    ASSERT_EQ_INT(planArrivalAlgo(PLAN_COLL_ALLGATHER, early[i], PLAN_FROM_BUILTIN), early[i]);
  }
  /* the built-in table's large AllGather: a late form, so the Notify call differs */
  planTable t;
  planTableDefaults(&t, 4);
  planAlgo big = planSelect(&t, PLAN_COLL_ALLGATHER, (size_t)64 << 20, NULL);
  ASSERT_TRUE(big == PLAN_ALGO_PUSHB || big == PLAN_ALGO_PUSH1 || big == PLAN_ALGO_PULL1);
  ASSERT_EQ_INT(planArrivalAlgo(PLAN_COLL_ALLGATHER, big, PLAN_FROM_BUILTIN), PLAN_ALGO_PULL1);
  return 0;
}

static int testNames(void) {
  for (int a = 0; a < PLAN_NUM_ALGOS; a++) {
    planAlgo got;
    const char *name = planAlgoName((planAlgo)a);
    ASSERT_EQ_INT(planAlgoParse(name, strlen(name), &got), 0);
    ASSERT_EQ_INT(got, a);
  }
  planAlgo got;
  ASSERT_EQ_INT(planAlgoParse("batch", 5, &got), 0);
  ASSERT_EQ_INT(got, PLAN_ALGO_PUSHB);
  ASSERT_EQ_INT(planAlgoParse("pus", 3, &got), -1);
  return 0;
}

/* The SM-moving algorithm that size would run (eager or captured), or -1. */
static int smMoveAt(const planTable *t, planColl c, size_t size, int graph) {
  planAlgo a = planSelectIn(t, c, size, graph, NULL);
  return (PLAN_ALGOS_SM_MOVE & PLAN_ALGO_BIT(a)) ? (int)a : -1;
}

/* CTA policy zero (planTableNoSmMoves): at no size, rank count or capture
 * does the built-in table, or a tuning file over it, select an algorithm
 * whose kernel moves data; each such range takes stage (stagesm, stagell;
 * AlltoAllv's stagell pushb) or pull1 (twoshot) over the same sizes; what DMACCL_ALGO or the config
 * names still runs as named. */
static int testNoSmMoves(void) {
  size_t sizes[64];
  int ns = 0;
  for (int e = 0; e <= 31; e++) {
    size_t v = (size_t)1 << e;
    sizes[ns++] = v;
    sizes[ns++] = v + 1;
  }
  for (int nranks = 1; nranks <= 8; nranks++) {
    planTable t, z;
    planTableDefaults(&t, nranks);
    z = t;
    int changed = planTableNoSmMoves(&z), before = 0;
    for (int c = 0; c < PLAN_NUM_COLLS; c++)
      for (int g = 0; g < 2; g++)
        for (int i = 0; i < ns; i++) {
          int was = smMoveAt(&t, (planColl)c, sizes[i], g);
          before += was >= 0;
          if (smMoveAt(&z, (planColl)c, sizes[i], g) >= 0) {
            TEST_FAIL("%d ranks: %s of %zu bytes (graph %d) still selects %s", nranks,
                      planCollName((planColl)c), sizes[i], g,
                      planAlgoName(planSelectIn(&z, (planColl)c, sizes[i], g, NULL)));
            return 1;
          }
          planAlgo now = planSelectIn(&z, (planColl)c, sizes[i], g, NULL);
          if (was >= 0) /* AlltoAllv is never staged: pushb */
            ASSERT_EQ_INT(now, was == PLAN_ALGO_TWOSHOT              ? PLAN_ALGO_PULL1
                               : planCollOf((planColl)c)->peerArrays ? PLAN_ALGO_PUSHB
                                                                     : PLAN_ALGO_STAGE);
          else /* nothing else changes */
            ASSERT_EQ_INT(now, planSelectIn(&t, (planColl)c, sizes[i], g, NULL));
          /* what it runs is one the collective takes */
          ASSERT_TRUE(planCollOf((planColl)c)->algos & PLAN_ALGO_BIT(now));
        }
    /* The control: the built-in table does move data with SMs on 2-8 ranks
     * (stagell and twoshot), so the loop above checked something. */
    if (nranks >= 2) ASSERT_TRUE(before > 0 && changed > 0);
  }
  /* A tuning file's stagell is reshaped too; DMACCL_ALGO's and the config's are not. */
  planTable t;
  char err[256];
  planTableDefaults(&t, 2);
  t.origin = PLAN_FROM_TUNE_FILE;
  ASSERT_EQ_INT(planTableParse(&t,
                               "broadcast:push1;allgather:0-64K:stagell;"
                               "allgather@graph:4M-8M:stagell",
                               err, sizeof(err)),
                0);
  ASSERT_TRUE(planTableNoSmMoves(&t) > 0);
  const planRange *why = NULL;
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 4096, &why), PLAN_ALGO_STAGE);
  ASSERT_TRUE(why && why->noSmMove && why->origin == PLAN_FROM_TUNE_FILE);
  ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 5 << 20, 1, &why), PLAN_ALGO_STAGE);
  ASSERT_TRUE(why && why->noSmMove && why->lo == (4u << 20) && why->hi == (8u << 20));
  t.origin = PLAN_FROM_ENV;
  ASSERT_EQ_INT(planTableParse(&t, "allgather:0-64K:stagell", err, sizeof(err)), 0);
  t.origin = PLAN_FROM_CONFIG;
  ASSERT_EQ_INT(planTableParse(&t, "allreduce:0-1M:twoshot", err, sizeof(err)), 0);
  ASSERT_EQ_INT(planTableNoSmMoves(&t), 0);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLGATHER, 4096, &why), PLAN_ALGO_STAGELL);
  ASSERT_TRUE(!why->noSmMove);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_ALLREDUCE, 4096, NULL), PLAN_ALGO_TWOSHOT);
  ASSERT_EQ_INT(planSelect(&t, PLAN_COLL_BROADCAST, 4096, NULL), PLAN_ALGO_PUSH1);
  return 0;
}

/* The forms in which a Broadcast's receiver pulls: a channel's table never
 * takes them from the built-in table or a tuning file (planTableForChannel). */
static int pullForm(planAlgo a) {
  return a == PLAN_ALGO_PULL1 || a == PLAN_ALGO_PULLN || a == PLAN_ALGO_PULLB ||
         a == PLAN_ALGO_SPLIT || a == PLAN_ALGO_CHAIN || a == PLAN_ALGO_RELAY;
}

/* split in the built-in table: 2-rank Broadcast and Scatter from 8 MB + 1
 * (stagesm below), eager and captured; other
 * rank counts and Gather never (a 2-rank Gather of 8 MB itself: stage). A
 * Send/Recv channel's table (planTableForChannel) of a parent whose
 * Broadcast ranges are not all built in takes pushb for a tuning file's
 * split and nothing else; DMACCL_ALGO's split stays. */
static int testSplitRows(void) {
  const size_t M = (size_t)1 << 20;
  planTable t;
  planTableDefaults(&t, 2);
  for (int g = 0; g < 2; g++) {
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, 8 * M, g, NULL), PLAN_ALGO_STAGESM);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, 8 * M + 1, g, NULL), PLAN_ALGO_SPLIT);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_GATHER, 8 * M, g, NULL), PLAN_ALGO_STAGE);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_GATHER, 8 * M + 1, g, NULL), PLAN_ALGO_PUSHB);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, SIZE_MAX - 1, g, NULL), PLAN_ALGO_SPLIT);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_SCATTER, 8 * M, g, NULL), PLAN_ALGO_STAGESM);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_SCATTER, 8 * M + 1, g, NULL), PLAN_ALGO_SPLIT);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_SCATTER, 512 * M, g, NULL), PLAN_ALGO_SPLIT);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_GATHER, 512 * M, g, NULL), PLAN_ALGO_PUSHB);
  }
  for (int nranks = 3; nranks <= 8; nranks++) {
    planTable u;
    planTableDefaults(&u, nranks);
    for (int c = 0; c < PLAN_NUM_COLLS; c++)
      for (int e = 0; e <= 40; e++)
        ASSERT_TRUE(planSelect(&u, (planColl)c, (size_t)1 << e, NULL) != PLAN_ALGO_SPLIT);
  }
  char err[256];
  t.origin = PLAN_FROM_TUNE_FILE;
  ASSERT_EQ_INT(planTableParse(&t, "broadcast@graph:1M-2M:split", err, sizeof(err)), 0);
  t.origin = PLAN_FROM_ENV;
  ASSERT_EQ_INT(planTableParse(&t, "broadcast:0-1M:split", err, sizeof(err)), 0);
  planTable ch = t;
  ASSERT_EQ_INT(planTableForChannel(&ch, 2), 0); /* not all built in: the parent's */
  for (int c = 0; c < PLAN_NUM_COLLS; c++)
    for (int g = 0; g < 2; g++)
      for (int e = 0; e <= 40; e++) {
        size_t v = (size_t)1 << e;
        const planRange *why = NULL;
        planAlgo was = planSelectIn(&t, (planColl)c, v, g, &why),
                 now = planSelectIn(&ch, (planColl)c, v, g, NULL);
        int library = why && why->origin != PLAN_FROM_ENV;
        ASSERT_EQ_INT(now,
                      c == PLAN_COLL_BROADCAST && pullForm(was) && library ? PLAN_ALGO_PUSHB : was);
      }
  ASSERT_EQ_INT(planSelectIn(&ch, PLAN_COLL_BROADCAST, M, 1, NULL), PLAN_ALGO_PUSHB);
  ASSERT_EQ_INT(planSelect(&ch, PLAN_COLL_BROADCAST, 4096, NULL), PLAN_ALGO_SPLIT);
  ASSERT_EQ_INT(planSelect(&ch, PLAN_COLL_BROADCAST, 64 * M, NULL), PLAN_ALGO_PUSHB);
  ASSERT_EQ_INT(planSelect(&ch, PLAN_COLL_SCATTER, 64 * M, NULL), PLAN_ALGO_SPLIT);
  return 0;
}

/* A 2-rank communicator's Send/Recv channels take their own built-in
 * Broadcast ranges (select.c, channelBroadcast): lines up to 1 MB, then
 * pushb eager, stage in graphs below 8 MB and pushb from there; under CTA
 * policy zero no lines; other collectives' ranges are the parent's. The
 * test is what the parent's Broadcast ranges select, not where they came
 * from: a tuning file or DMACCL_ALGO that restates the built-in rows keeps
 * the channel's own (its peer may have read no file), one that changes an
 * eager or a captured row gives the parent's. On 3 ranks or more the
 * parent's Broadcast ranges (split as pushb). */
static int testChannelRows(void) {
  const size_t M = (size_t)1 << 20;
  planTable t;
  planTableDefaults(&t, 2);
  planTable ch = t;
  ASSERT_EQ_INT(planTableForChannel(&ch, 2), 1);
  const size_t sizes[] = {0, 1024, M, M + 1, 2 * M, 8 * M - 1, 8 * M, 512 * M, SIZE_MAX - 1};
  for (int g = 0; g < 2; g++)
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
      size_t v = sizes[i];
      planAlgo want = v <= M           ? PLAN_ALGO_STAGELL
                      : g && v < 8 * M ? PLAN_ALGO_STAGE
                                       : PLAN_ALGO_PUSHB;
      ASSERT_EQ_INT(planSelectIn(&ch, PLAN_COLL_BROADCAST, v, g, NULL), want);
    }
  for (int c = 0; c < PLAN_NUM_COLLS; c++)
    for (int g = 0; g < 2 && c != PLAN_COLL_BROADCAST; g++)
      for (int e = 0; e <= 40; e++)
        ASSERT_EQ_INT(planSelectIn(&ch, (planColl)c, (size_t)1 << e, g, NULL),
                      planSelectIn(&t, (planColl)c, (size_t)1 << e, g, NULL));
  planTable z = t;
  z.ctaPolicy = PLAN_CTA_ZERO;
  planTableNoSmMoves(&z);
  ASSERT_EQ_INT(planTableForChannel(&z, 2), 1);
  for (int g = 0; g < 2; g++) {
    ASSERT_EQ_INT(planSelectIn(&z, PLAN_COLL_BROADCAST, 1024, g, NULL), PLAN_ALGO_STAGE);
    ASSERT_EQ_INT(planSelectIn(&z, PLAN_COLL_BROADCAST, 2 * M, g, NULL),
                  g ? PLAN_ALGO_STAGE : PLAN_ALGO_PUSHB);
  }
  char err[256];
  const struct {
    planOrigin origin;
    const char *text;
    int own;
  } layers[] = {
      {PLAN_FROM_TUNE_FILE, "broadcast:0-1048577:stagell,1048577-8388609:stagesm,8388609-inf:split",
       1},
      {PLAN_FROM_ENV, "broadcast:0-1048577:stagell,1048577-8388609:stagesm,8388609-inf:split", 1},
      {PLAN_FROM_ENV, "allreduce:0-1M:stage;broadcast@graph:8388609-16M:split", 1},
      {PLAN_FROM_ENV, "broadcast:0-1M:stage", 0},
      {PLAN_FROM_TUNE_FILE, "broadcast:2097153-4M:pushb", 0},
      {PLAN_FROM_CONFIG, "broadcast@graph:4M-8M:stage", 0},
  };
  for (size_t i = 0; i < sizeof(layers) / sizeof(layers[0]); i++) {
    planTable p;
    planTableDefaults(&p, 2);
    p.origin = layers[i].origin;
    ASSERT_EQ_INT(planTableParse(&p, layers[i].text, err, sizeof(err)), 0);
    planTable pc = p;
    ASSERT_EQ_INT(planTableForChannel(&pc, 2), layers[i].own);
    if (layers[i].own) continue;
    for (int g = 0; g < 2; g++) /* the parent's, pulls as pushb where a file said them */
      for (int e = 0; e <= 40; e++) {
        const planRange *why = NULL;
        planAlgo was = planSelectIn(&p, PLAN_COLL_BROADCAST, (size_t)1 << e, g, &why);
        ASSERT_EQ_INT(planSelectIn(&pc, PLAN_COLL_BROADCAST, (size_t)1 << e, g, NULL),
                      pullForm(was) && why && why->origin != PLAN_FROM_ENV &&
                              why->origin != PLAN_FROM_CONFIG
                          ? PLAN_ALGO_PUSHB
                          : was);
      }
  }
  for (int nranks = 3; nranks <= 8; nranks++) {
    planTable u;
    planTableDefaults(&u, nranks);
    planTable uc = u;
    ASSERT_EQ_INT(planTableForChannel(&uc, nranks), 0);
    for (int g = 0; g < 2; g++)
      for (int e = 0; e <= 40; e++) {
        planAlgo was = planSelectIn(&u, PLAN_COLL_BROADCAST, (size_t)1 << e, g, NULL);
        ASSERT_EQ_INT(planSelectIn(&uc, PLAN_COLL_BROADCAST, (size_t)1 << e, g, NULL),
                      pullForm(was) ? PLAN_ALGO_PUSHB : was);
      }
    /* the parent's Broadcast takes chain from 4 MB: the channel pushb */
    ASSERT_EQ_INT(planSelectIn(&u, PLAN_COLL_BROADCAST, (size_t)64 << 20, 0, NULL),
                  PLAN_ALGO_CHAIN);
    for (int g = 0; g < 2; g++)
      ASSERT_EQ_INT(planSelectIn(&uc, PLAN_COLL_BROADCAST, (size_t)64 << 20, g, NULL),
                    PLAN_ALGO_PUSHB);
  }
  return 0;
}

/* planSelectionDigest: tables that select alike give one digest whatever
 * their ranges (split, restated, from other origins), and a change of one
 * algorithm over any stretch, eager or captured, another. */
static int testSelectionDigest(void) {
  char err[256];
  planTable a, b;
  planTableDefaults(&a, 2);
  uint64_t d0 = planSelectionDigest(&a, PLAN_COLL_BROADCAST);
  const char *same[] = {"broadcast:0-1048577:stagell,1048577-8388609:stagesm,8388609-inf:split",
                        "broadcast:0-1K:stagell,1K-1048577:stagell;broadcast@graph:4M-8M:stagesm",
                        "allreduce:pull1"};
  for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
    planTableDefaults(&b, 2);
    b.origin = PLAN_FROM_ENV;
    ASSERT_EQ_INT(planTableParse(&b, same[i], err, sizeof(err)), 0);
    ASSERT_TRUE(planSelectionDigest(&b, PLAN_COLL_BROADCAST) == d0);
  }
  const char *other[] = {"broadcast:0-1K:stage", "broadcast@graph:4M-5M:pushb",
                         "broadcast:2097153-inf:pushb", "broadcast@graph:0-1:stage"};
  for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
    planTableDefaults(&b, 2);
    ASSERT_EQ_INT(planTableParse(&b, other[i], err, sizeof(err)), 0);
    ASSERT_TRUE(planSelectionDigest(&b, PLAN_COLL_BROADCAST) != d0);
  }
  planTableDefaults(&b, 4); /* another rank count's rows */
  ASSERT_TRUE(planSelectionDigest(&b, PLAN_COLL_BROADCAST) != d0);
  return 0;
}

/* The rooted collectives' line ranges (select.c): on 2 ranks Broadcast
 * through 1 MB (stagesm above), Gather through 2 MB (stagesm above, to 4
 * MB) and Scatter below 4 MB (stagesm from there), eager and in graphs; on 3
 * ranks or more Broadcast through 2 MB (a Send/Recv channel takes its
 * parent's Broadcast ranges and has a 2-rank line slot), Scatter through
 * 1 MB, Gather through 1 MB; a channel's table keeps them. */
static int testLineRows(void) {
  const size_t M = (size_t)1 << 20;
  planTable t;
  planTableDefaults(&t, 2);
  for (int g = 0; g < 2; g++) {
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, 1024, g, NULL), PLAN_ALGO_STAGELL);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, M, g, NULL), PLAN_ALGO_STAGELL);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_BROADCAST, M + 1, g, NULL), PLAN_ALGO_STAGESM);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_GATHER, 2 * M, g, NULL), PLAN_ALGO_STAGELL);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_GATHER, 2 * M + 1, g, NULL), PLAN_ALGO_STAGESM);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_GATHER, 4 * M, g, NULL), PLAN_ALGO_STAGESM);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_GATHER, 4 * M + 1, g, NULL), PLAN_ALGO_STAGE);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_SCATTER, 4 * M - 1, g, NULL), PLAN_ALGO_STAGELL);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_SCATTER, 4 * M, g, NULL), PLAN_ALGO_STAGESM);
  }
  for (int nranks = 3; nranks <= 8; nranks++) {
    planTable u;
    planTableDefaults(&u, nranks);
    for (int g = 0; g < 2; g++) {
      ASSERT_EQ_INT(planSelectIn(&u, PLAN_COLL_BROADCAST, 2 * M, g, NULL), PLAN_ALGO_STAGELL);
      ASSERT_EQ_INT(planSelectIn(&u, PLAN_COLL_BROADCAST, 2 * M + 1, g, NULL), PLAN_ALGO_STAGE);
      ASSERT_EQ_INT(planSelectIn(&u, PLAN_COLL_SCATTER, M, g, NULL), PLAN_ALGO_STAGELL);
      ASSERT_EQ_INT(planSelectIn(&u, PLAN_COLL_SCATTER, M + 1, g, NULL), PLAN_ALGO_STAGE);
      ASSERT_EQ_INT(planSelectIn(&u, PLAN_COLL_GATHER, M, g, NULL), PLAN_ALGO_STAGELL);
      ASSERT_EQ_INT(planSelectIn(&u, PLAN_COLL_GATHER, M + 1, g, NULL), PLAN_ALGO_STAGE);
    }
    planTableForChannel(&u, nranks);
    ASSERT_EQ_INT(planSelect(&u, PLAN_COLL_BROADCAST, 2 * M, NULL), PLAN_ALGO_STAGELL);
  }
  return 0;
}

int main(void) {
  RUN(testDefaultsParse);
  RUN(testSplitRows);
  RUN(testChannelRows);
  RUN(testSelectionDigest);
  RUN(testLineRows);
  RUN(testNoSmMoves);
  RUN(testIssueExample);
  RUN(testRanges);
  RUN(testMalformed);
  RUN(testTooManyRanges);
  RUN(testPairsSplit);
  RUN(testTuneText);
  RUN(testTuneErrors);
  RUN(testNames);
  RUN(testGraphRanges);
  RUN(testArrivalAlgo);
  TEST_EXIT();
}
