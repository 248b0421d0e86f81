/* dmaccl-perf's command line, size stepping and bandwidth arithmetic. */
#include "harness.h"
#include "perf/args.h"
#include "perf/bench.h"
#include "plan.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

static int parse(perfArgs *a, char *err, const char *line) {
  char buf[512], *argv[32];
  int argc = 0;
  snprintf(buf, sizeof(buf), "dmaccl-perf %s", line);
  for (char *t = strtok(buf, " "); t && argc < 32; t = strtok(NULL, " ")) argv[argc++] = t;
  return perfParseArgs(argc, argv, a, err, 256);
}

static int testDefaults(void) {
  perfArgs a;
  char err[256];
  ASSERT_EQ_INT(parse(&a, err, ""), 0);
  ASSERT_EQ_INT(a.minBytes, 1024);
  ASSERT_EQ_INT(a.maxBytes, 64 << 20);
  ASSERT_EQ_INT(a.iters, 20);
  ASSERT_EQ_INT(a.warmup, 5);
  ASSERT_EQ_INT(a.check, 1);
  ASSERT_EQ_INT(a.type, dmacclFloat32);
  ASSERT_EQ_INT(a.nalgos, 1 + PLAN_NUM_ALGOS); /* auto and every algorithm */
  ASSERT_TRUE(strcmp(a.algos[0], "auto") == 0);
  ASSERT_EQ_INT(a.graphs, 0);
  ASSERT_EQ_INT(a.blocking, 0);
  ASSERT_EQ_INT(a.average, PERF_AVG_MEAN); /* nccl-tests' default */
  ASSERT_EQ_INT(a.cycles, 1);
  ASSERT_EQ_INT(a.inPlace, 1);
  ASSERT_EQ_INT(a.baseline, PERF_BASE_NCCL);
  ASSERT_EQ_INT(a.breakdown, 0);
  ASSERT_TRUE(a.timeline[0] == 0);
  ASSERT_EQ_INT(a.energy, 0);
  ASSERT_TRUE(a.json[0] == 0);
  ASSERT_EQ_INT(a.uneven, 0);
  ASSERT_EQ_INT(a.kernels, 1);
  ASSERT_EQ_INT(a.persistent, 0);
  return 0;
}

static int testFlags(void) {
  perfArgs a;
  char err[256];
  ASSERT_EQ_INT(parse(&a, err,
                      "-b 8 -e 1G -f 4 -g 3 -n 7 -w 0 -c 0 -d bfloat16 -A push1,pulln -B host -o "
                      "alltoall --baseline none"),
                0);
  ASSERT_EQ_INT(a.minBytes, 8);
  ASSERT_EQ_INT(a.maxBytes, 1u << 30);
  ASSERT_TRUE(a.stepFactor == 4.0);
  ASSERT_EQ_INT(a.nranks, 3);
  ASSERT_EQ_INT(a.iters, 7);
  ASSERT_EQ_INT(a.warmup, 0);
  ASSERT_EQ_INT(a.check, 0);
  ASSERT_EQ_INT(a.type, dmacclBfloat16);
  ASSERT_EQ_INT(a.nalgos, 2);
  ASSERT_TRUE(strcmp(a.algos[1], "pulln") == 0);
  ASSERT_EQ_INT(a.executor, PERF_EXEC_HOST);
  ASSERT_EQ_INT(a.colls, PERF_COLL(COLL_ALLTOALL));
  ASSERT_EQ_INT(a.baseline, 0);
  ASSERT_EQ_INT(parse(&a, err, "-p 4 -b 1K"), 0);
  ASSERT_EQ_INT(a.procs, 4);
  ASSERT_EQ_INT(a.nranks, 0);
  ASSERT_EQ_INT(parse(&a, err, "-h"), 1);
  /* nccl-tests' flags */
  ASSERT_EQ_INT(parse(&a, err, "-G 10 -n 5 -a 3 -N 2 -c 4 -J out.json"), 0);
  ASSERT_EQ_INT(a.graphs, 10);
  ASSERT_EQ_INT(a.average, PERF_AVG_MAX);
  ASSERT_EQ_INT(a.cycles, 2);
  ASSERT_EQ_INT(a.check, 4);
  ASSERT_TRUE(strcmp(a.json, "out.json") == 0);
  ASSERT_EQ_INT(parse(&a, err, "-z 1 -a 0 -N 0 -o sum"), 0);
  ASSERT_EQ_INT(a.blocking, 1);
  ASSERT_EQ_INT(a.average, PERF_AVG_RANK0);
  ASSERT_EQ_INT(a.cycles, 0);
  /* nccl-tests' -o is the op: it sets the op, not the collectives */
  ASSERT_EQ_INT(a.colls, PERF_COLL(COLL_ALLGATHER) | PERF_COLL(COLL_ALLTOALL));
  ASSERT_EQ_INT(a.op, dmacclSum);
  ASSERT_EQ_INT(parse(&a, err, "-o max"), 0);
  ASSERT_EQ_INT(a.op, dmacclMax);
  /* every collective by name, lists, all; --op and --root */
  ASSERT_EQ_INT(parse(&a, err, "-o allreduce,reducescatterv,alltoallv --op avg --root 3"), 0);
  ASSERT_EQ_INT(a.colls, PERF_COLL(COLL_ALLREDUCE) | PERF_COLL(COLL_REDUCESCATTERV) |
                             PERF_COLL(COLL_ALLTOALLV));
  ASSERT_EQ_INT(a.op, dmacclAvg);
  ASSERT_EQ_INT(a.root, 3);
  ASSERT_EQ_INT(parse(&a, err, "-o all"), 0);
  ASSERT_EQ_INT(a.colls, PERF_ALL_COLLS);
  ASSERT_TRUE(a.colls & PERF_COLL(COLL_SENDRECV));
  /* nccl-tests' sendrecv_perf: a row of the tools' table, not a library collective */
  ASSERT_EQ_INT(parse(&a, err, "-o allreduce,sendrecv"), 0);
  ASSERT_EQ_INT(a.colls, PERF_COLL(COLL_ALLREDUCE) | PERF_COLL(COLL_SENDRECV));
  ASSERT_EQ_INT(parse(&a, err, "-o sendrecv --op avg -d int32"), 0); /* it takes no op */
  ASSERT_EQ_INT(a.colls, PERF_COLL(COLL_SENDRECV));
  ASSERT_EQ_INT(parse(&a, err, "-o allreduce,sendrecvx"), -1);
  ASSERT_EQ_INT(parse(&a, err, "-o send"), -1);
  ASSERT_EQ_INT(parse(&a, err, "-o allreduce,"), -1);
  ASSERT_EQ_INT(parse(&a, err, "--op premulsum -d int32"), 0); /* every type */
  ASSERT_EQ_INT(a.op, COLL_PREMULSUM);
  ASSERT_EQ_INT(parse(&a, err, "-o premulsum"), 0);
  ASSERT_EQ_INT(a.op, COLL_PREMULSUM);
  ASSERT_EQ_INT(parse(&a, err, "--op xor"), -1);
  ASSERT_CONTAINS(err, "--op");
  ASSERT_CONTAINS(err, "premulsum");
  ASSERT_EQ_INT(parse(&a, err, "--root -1"), -1);
  /* baselines and extra measurements */
  ASSERT_EQ_INT(parse(&a, err, "--baseline nccl,nccl-ce --breakdown --energy --in-place 0"), 0);
  ASSERT_EQ_INT(a.baseline, PERF_BASE_NCCL | PERF_BASE_NCCL_CE);
  ASSERT_EQ_INT(a.breakdown, 1);
  ASSERT_EQ_INT(a.energy, 1);
  ASSERT_EQ_INT(a.inPlace, 0);
  ASSERT_EQ_INT(parse(&a, err, "--baseline nccl-ce"), 0);
  ASSERT_EQ_INT(a.baseline, PERF_BASE_NCCL_CE);
  ASSERT_EQ_INT(parse(&a, err, "--baseline none"), 0);
  ASSERT_EQ_INT(a.baseline, 0);
  ASSERT_EQ_INT(parse(&a, err, "--timeline /tmp/tl"), 0); /* implies --breakdown */
  ASSERT_EQ_INT(a.breakdown, 1);
  ASSERT_TRUE(strcmp(a.timeline, "/tmp/tl") == 0);
  ASSERT_EQ_INT(parse(&a, err, "--timeline"), -1);
  ASSERT_CONTAINS(err, "--timeline needs a value");
  ASSERT_EQ_INT(parse(&a, err, "--uneven --kernels 0 --persistent"), 0);
  ASSERT_EQ_INT(a.uneven, 1);
  ASSERT_EQ_INT(a.kernels, 0);
  ASSERT_EQ_INT(a.persistent, 1);
  ASSERT_EQ_INT(parse(&a, err, "--notify -o allgather,allgatherv"), 0);
  ASSERT_EQ_INT(a.notify, 1);
  ASSERT_EQ_INT(parse(&a, err, "--notify --persistent"), -1);
  ASSERT_CONTAINS(err, "no persistent form");
  /* avg on an integer type: refused only when a reducing collective runs */
  ASSERT_EQ_INT(parse(&a, err, "--op avg -d int32"), 0);
  ASSERT_EQ_INT(parse(&a, err, "--op avg -d int32 -o allgather,reducescatterv"), -1);
  ASSERT_CONTAINS(err, "avg needs a floating-point type");
  ASSERT_CONTAINS(err, "reducescatterv");
  ASSERT_EQ_INT(parse(&a, err, "--op avg -d half -o all"), 0);
  ASSERT_EQ_INT(parse(&a, err, "-A all,batch"), 0);
  ASSERT_EQ_INT(a.nalgos, 1 + PLAN_NUM_ALGOS); /* batch = pushb, already there */
  return 0;
}

static int testErrors(void) {
  perfArgs a;
  char err[256];
  const struct {
    const char *line, *msg;
  } bad[] = {
      {"-b 1X", "bad value '1X' for -b"},
      {"-e", "-e needs a value"},
      {"-f 1", "bad value '1' for -f"},
      {"-g 0", "bad value '0' for -g"},
      {"-p 0", "bad value '0' for -p"},
      {"-p 4 -g 2", "with -p every process drives one GPU"},
      {"-d float7", "bad value 'float7'"},
      {"-A push9", "unknown algorithm 'push9'"},
      {"-a 4", "bad value '4' for -a"},
      {"-a push1", "bad value 'push1' for -a"},
      {"-G -1", "bad value '-1' for -G"},
      {"-G 2 -B host", "CUDA graphs need the cuda executor"},
      {"-G 2 -z 1", "cannot be waited for one by one"},
      {"-z 2", "bad value '2' for -z"},
      {"-N x", "bad value 'x' for -N"},
      {"-J out.txt", "only JSON output"},
      {"-J", "-J needs a value"},
      {"-c -1", "bad value '-1' for -c"},
      {"--baseline nccl,foo", "bad value 'nccl,foo' for --baseline"},
      {"--baseline none,nccl", "bad value 'none,nccl' for --baseline"},
      {"--in-place 2", "bad value '2' for --in-place"},
      {"--kernels 2", "bad value '2' for --kernels"},
      {"--kernels", "--kernels needs a value"},
      {"--uneven=1", "unknown option '--uneven=1'"},
      {"-o all -d uint8 --op avg", "avg needs a floating-point type"},
      {"--energy-now", "unknown option '--energy-now'"},
      {"-o max2", "bad value 'max2' for -o"},
      {"-B gpu", "bad value 'gpu'"},
      {"-q 1", "unknown option '-q'"},
      {"-b 1M -e 1K", "larger than -e"},
      {"foo", "unknown argument 'foo'"},
      /* issue 20, item 7: no silent saturation, no float-to-size overflow */
      {"-e 99999999999999999999", "bad value '99999999999999999999' for -e"},
      {"-b 18446744073709551616", "bad value '18446744073709551616' for -b"},
      {"-f 1e308", "bad value '1e308' for -f"},
      {"-f nan", "bad value 'nan' for -f"},
      {"-f inf", "bad value 'inf' for -f"},
      {"-e 17179869184G", "bad value '17179869184G' for -e"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    if (parse(&a, err, bad[i].line) != -1) {
      TEST_FAIL("'%s' was accepted", bad[i].line);
      return 1;
    }
    ASSERT_CONTAINS(err, bad[i].msg);
  }
  return 0;
}

static int testStepping(void) {
  perfArgs a;
  char err[256];
  ASSERT_EQ_INT(parse(&a, err, "-b 1K -e 8K"), 0);
  size_t want[] = {1024, 2048, 4096, 8192}, k = 0;
  for (size_t s = a.minBytes; s; s = perfNextSize(&a, s)) {
    ASSERT_TRUE(k < 4);
    ASSERT_EQ_INT(s, want[k++]);
  }
  ASSERT_EQ_INT(k, 4);
  ASSERT_EQ_INT(parse(&a, err, "-b 100 -e 400 -i 150"), 0);
  ASSERT_EQ_INT(perfNextSize(&a, 100), 250);
  ASSERT_EQ_INT(perfNextSize(&a, 250), 400);
  ASSERT_EQ_INT(perfNextSize(&a, 400), 0);
  ASSERT_EQ_INT(perfNumSizes(&a), 3);
  ASSERT_EQ_INT(parse(&a, err, "-b 1K -e 1G -f 4"), 0);
  ASSERT_EQ_INT(perfNumSizes(&a), 11); /* 1K 4K ... 1G */
  ASSERT_EQ_INT(parse(&a, err, "-b 1K -e 1K"), 0);
  ASSERT_EQ_INT(perfNumSizes(&a), 1);
  ASSERT_EQ_INT(parse(&a, err, "-b 1000 -e 5000 -f 1.5"), 0);
  size_t want2[] = {1000, 1500, 2250, 3375}, k2 = 0;
  for (size_t s = a.minBytes; s; s = perfNextSize(&a, s)) {
    ASSERT_TRUE(k2 < 4);
    ASSERT_EQ_INT(s, want2[k2++]);
  }
  ASSERT_EQ_INT(k2, 4);
  /* The largest sizes and steps end the sweep instead of wrapping. */
  ASSERT_EQ_INT(parse(&a, err, "-b 1G -e 17179869183G -f 1024"), 0);
  ASSERT_TRUE(perfNumSizes(&a) > 0 && perfNumSizes(&a) < 10);
  ASSERT_EQ_INT(parse(&a, err, "-b 1 -e 17179869183G -i 17179869183G"), 0);
  ASSERT_EQ_INT(perfNumSizes(&a), 1);
  return 0;
}

static int testArithmetic(void) {
  /* 1 GB in 2473 us on 4 ranks: NCCL's row in BASELINE.md, 326 GB/s busbw. */
  double bus = perfBusBw(COLL_ALLGATHER, (size_t)1 << 30, 2473.0, 4);
  ASSERT_TRUE(bus > 325.0 && bus < 326.0);
  ASSERT_TRUE(perfAlgBw(1000, 1.0) == 1.0); /* 1000 B in 1 us = 1 GB/s */
  collShape sh;
  collVArrays va;
  ASSERT_EQ_INT(perfShape(COLL_ALLGATHER, 1024, 4, 0, 0, 4, &sh, &va), 64);
  ASSERT_EQ_INT(perfShape(COLL_ALLGATHER, 1000, 3, 0, 0, 4, &sh, &va), 83);
  ASSERT_EQ_INT(perfShape(COLL_ALLREDUCE, 1000, 3, 0, 0, 4, &sh, &va), 250);
  ASSERT_EQ_INT(perfShape(COLL_REDUCESCATTER, 1024, 4, 0, 0, 4, &sh, &va), 64);
  ASSERT_EQ_INT(perfShape(COLL_ALLGATHERV, 1024, 4, 0, 0, 4, &sh, &va), 64);
  ASSERT_EQ_INT(sh.counts[3], 64);
  ASSERT_EQ_INT(sh.displs[3], 192);
  size_t v;
  ASSERT_EQ_INT(perfParseSize("64MB", &v), 0);
  ASSERT_EQ_INT(v, 64 << 20);
  /* 8 ranks: busbw = algbw * 7/8 */
  ASSERT_TRUE(fabs(perfBusBw(COLL_ALLTOALL, 8000, 1.0, 8) - 7.0) < 1e-12);
  /* AllReduce: 2(n-1)/n; Broadcast: 1 */
  ASSERT_TRUE(fabs(perfBusBw(COLL_ALLREDUCE, 8000, 1.0, 8) - 14.0) < 1e-12);
  ASSERT_TRUE(fabs(perfBusBw(COLL_BROADCAST, 8000, 1.0, 8) - 8.0) < 1e-12);
  /* sendrecv (nccl-tests): size = count bytes, busbw = algbw */
  ASSERT_EQ_INT(perfShape(COLL_SENDRECV, 1000, 3, 0, 0, 4, &sh, &va), 250);
  ASSERT_EQ_INT(collSizeBytes(COLL_SENDRECV, &sh, 2, 4), 1000);
  ASSERT_TRUE(fabs(perfBusBw(COLL_SENDRECV, 8000, 1.0, 8) - 8.0) < 1e-12);
  ASSERT_TRUE(fabs(perfBusBw(COLL_SENDRECV, 8000, 2.0, 2) - 4.0) < 1e-12);
  ASSERT_TRUE(perfBusBw(COLL_ALLGATHER, 1024, 0.0, 4) == 0.0); /* no division by zero */
  ASSERT_TRUE(perfBusBw(COLL_ALLGATHER, 1024, 1.0, 1) == 0.0); /* one rank moves nothing */
  return 0;
}

/* --uneven: blocks in proportion 1..n that add up to the equal split's total;
 * AlltoAllv's matrices consistent, every rank sending and receiving n*count. */
static int testUneven(void) {
  for (int n = 1; n <= COLL_MAX_RANKS; n++)
    for (size_t total = 0; total < 200; total += 1 + total / 3) {
      size_t sum = 0, prev = 0;
      for (int w = 1; w <= n; w++) {
        size_t blk = perfUnevenBlock(total, n, w);
        if (w > 1) ASSERT_TRUE(blk + 1 >= prev); /* non-decreasing, up to rounding */
        sum += blk, prev = blk;
      }
      ASSERT_EQ_INT(sum, total);
    }
  /* big totals do not overflow */
  size_t big = (size_t)1 << 40, sum = 0;
  for (int w = 1; w <= 16; w++) sum += perfUnevenBlock(big, 16, w);
  ASSERT_EQ_INT(sum, big);
  ASSERT_EQ_INT(perfUnevenBlock(100, 4, 1), 10);
  ASSERT_EQ_INT(perfUnevenBlock(100, 4, 4), 40);
  collShape sh, eq;
  collVArrays va, ve;
  for (int n = 1; n <= 6; n++) {
    size_t count = 1000;
    perfShapeOf(COLL_ALLGATHERV, count, n, 0, 1, &sh, &va);
    size_t off = 0;
    for (int r = 0; r < n; r++) {
      ASSERT_EQ_INT(sh.displs[r], off);
      off += sh.counts[r];
      if (r) ASSERT_TRUE(sh.counts[r] > sh.counts[r - 1]);
    }
    ASSERT_EQ_INT(off, (size_t)n * count);
    /* the same nccl-tests size as the equal split, so rows compare */
    perfShapeOf(COLL_ALLGATHERV, count, n, 0, 0, &eq, &ve);
    ASSERT_EQ_INT(collSizeBytes(COLL_ALLGATHERV, &sh, 0, 4),
                  collSizeBytes(COLL_ALLGATHERV, &eq, 0, 4));
    ASSERT_EQ_INT(perfShape(COLL_REDUCESCATTERV, 4096 * n, n, 0, 1, 4, &sh, &va), 1024);
    ASSERT_EQ_INT(collSizeBytes(COLL_REDUCESCATTERV, &sh, 0, 4), 4096 * n);
    perfShapeOf(COLL_ALLTOALLV, count, n, 0, 1, &sh, &va);
    for (int i = 0; i < n; i++) {
      size_t sent = 0, got = 0;
      for (int j = 0; j < n; j++) {
        size_t ij = (size_t)i * (size_t)n + (size_t)j, ji = (size_t)j * (size_t)n + (size_t)i;
        ASSERT_EQ_INT(sh.recvcounts[ij], sh.sendcounts[ji]);
        ASSERT_EQ_INT(sh.sdispls[ij], sent);
        ASSERT_EQ_INT(sh.rdispls[ij], got);
        sent += sh.sendcounts[ij], got += sh.recvcounts[ij];
      }
      ASSERT_EQ_INT(sent, (size_t)n * count);
      ASSERT_EQ_INT(got, (size_t)n * count);
      ASSERT_EQ_INT(collSizeBytes(COLL_ALLTOALLV, &sh, i, 4), (size_t)n * count * 4);
    }
    if (n > 2) ASSERT_TRUE(sh.sendcounts[0] != sh.sendcounts[1]); /* uneven indeed */
  }
  return 0;
}

/* The tuning file's table line (the first line not a comment), or "". */
static void tuneLine(bench *b, char *line, size_t cap, char *text, size_t textCap) {
  char path[] = "/tmp/dmaccl-tune-test-XXXXXX";
  int fd = mkstemp(path);
  line[0] = text[0] = 0;
  if (fd < 0) return;
  close(fd);
  if (perfWriteTune(b, path) == 0) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, textCap - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    for (char *p = text; *p;) {
      char *end = strchr(p, '\n');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      if (*p != '#' && len && len < cap) {
        memcpy(line, p, len);
        line[len] = 0;
        break;
      }
      p += len + (end != NULL);
    }
  }
  unlink(path);
}

/* perfWriteTune: per size the fastest algorithm measured, as ranges; measured
 * in CUDA graphs (-G) they are coll@graph ranges, which the library's
 * tuning parser takes and applies to captured calls only. */
static int testTuneFile(void) {
  static bench b;
  memset(&b, 0, sizeof(b));
  b.n = 2;
  b.args.average = PERF_AVG_MEAN;
  b.nc = 2;
  snprintf(b.cs[0].name, sizeof(b.cs[0].name), "push1");
  snprintf(b.cs[1].name, sizeof(b.cs[1].name), "stage");
  b.cs[0].kind = b.cs[1].kind = KIND_DMACCL;
  /* stage is faster at 1 KB, push1 from 1 MB on */
  perfRow rows[4] = {
      {.coll = COLL_ALLGATHER, .bytes = 1024, .contender = 0, .us = {{9, 9, 9, 9}}},
      {.coll = COLL_ALLGATHER, .bytes = 1024, .contender = 1, .us = {{5, 5, 5, 5}}},
      {.coll = COLL_ALLGATHER, .bytes = 1 << 20, .contender = 0, .us = {{20, 20, 20, 20}}},
      {.coll = COLL_ALLGATHER, .bytes = 1 << 20, .contender = 1, .us = {{30, 30, 30, 30}}},
  };
  b.rows = rows;
  b.nrows = 4;
  char line[256], text[4096], err[256];
  for (int graphs = 0; graphs <= 1; graphs++) {
    b.args.graphs = graphs;
    tuneLine(&b, line, sizeof(line), text, sizeof(text));
    const char *want = graphs ? "2 allgather@graph:0-1M:stage,1M-inf:push1"
                              : "2 allgather:0-1M:stage,1M-inf:push1";
    if (strcmp(line, want) != 0) {
      TEST_FAIL("-G %d: tuning line '%s', want '%s'", graphs, line, want);
      return 1;
    }
    planTable t;
    planTableDefaults(&t, 2);
    if (planTuneParse(&t, 2, text, err, sizeof(err)) != 0) {
      TEST_FAIL("-G %d: the library refuses the file: %s", graphs, err);
      return 1;
    }
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 4096, 1, NULL), PLAN_ALGO_STAGE);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 2 << 20, 1, NULL), PLAN_ALGO_PUSH1);
    /* eager calls: the file's plain ranges, or (for @graph ones) the built-in table's */
    planTable builtin;
    planTableDefaults(&builtin, 2);
    ASSERT_EQ_INT(planSelectIn(&t, PLAN_COLL_ALLGATHER, 2 << 20, 0, NULL),
                  graphs ? planSelectIn(&builtin, PLAN_COLL_ALLGATHER, 2 << 20, 0, NULL)
                         : PLAN_ALGO_PUSH1);
  }
  return 0;
}

/* perfStalled on the rows seen so far (docs/latency-notes.md, with each
 * row's processes as recorded there): a graph of 50 AllReduces of 64 MB
 * waits 12.4 ms for completion with no stall (a rule against one
 * operation's time flagged every such row, NCCL's too); one process ending
 * 114 ms late (AllReduce 16 MB, -G 5 -n 10), or 135 ms late (ReduceScatter
 * 16 MB eager, -n 20), stalled; so did a call of 174 ms, and a 150 ms wait
 * that every process (or the one process of -g) sat through, which only
 * the time per operation before the loop can show; a graph launch as long
 * as its operations is no stall; the limits. */
static perfRow stallRow(long ops, long callOps, double usMin, double usMax, double slowest,
                        double completion, double refOp) {
  perfRow r;
  memset(&r, 0, sizeof(r));
  r.ops = ops, r.callOps = callOps, r.refOp = refOp;
  r.us.v[PERF_AVG_MIN] = usMin, r.us.v[PERF_AVG_MAX] = usMax;
  r.slowest = slowest, r.completion = completion;
  return r;
}

static int testStalled(void) {
  perfRow r = stallRow(50, 10, 248, 262, 500, 12400, 260); /* 64 MB, -G 5 -n 10 */
  ASSERT_EQ_INT(perfStalled(&r), 0);
  r = stallRow(50, 10, 118, 2300, 300, 114500, 108); /* 16 MB, one process late */
  ASSERT_EQ_INT(perfStalled(&r), 1);
  r.refOp = 0; /* the spread alone says it */
  ASSERT_EQ_INT(perfStalled(&r), 1);
  r = stallRow(20, 1, 75, 6800, 300, 135000, 90); /* ReduceScatter 16 MB eager */
  ASSERT_EQ_INT(perfStalled(&r), 1);
  r = stallRow(20, 1, 8700, 8700, 174000, 50, 9000); /* a call of 174 ms, in lockstep */
  ASSERT_EQ_INT(perfStalled(&r), 1);
  r = stallRow(20, 1, 7502, 7502, 30, 150000, 8); /* 150 ms every process waited */
  ASSERT_EQ_INT(perfStalled(&r), 1);
  r.refOp = 0; /* -w 0: nothing to hold it against */
  ASSERT_EQ_INT(perfStalled(&r), 0);
  r = stallRow(50, 10, 1000, 1000, 12000, 100, 1000); /* a launch of 10 ops of 1 ms */
  ASSERT_EQ_INT(perfStalled(&r), 0);
  r = stallRow(20, 1, 2000, 2000, 19999, 9999, 10); /* a call under 10x, a wait under 10 ms */
  ASSERT_EQ_INT(perfStalled(&r), 0);
  r = stallRow(20, 1, 100, 600, 0, 0, 100); /* 20 x 500 us of spread: 10 ms */
  ASSERT_EQ_INT(perfStalled(&r), 1);
  r = stallRow(20, 1, 100, 599, 0, 0, 100);
  ASSERT_EQ_INT(perfStalled(&r), 0);
  r = stallRow(20, 1, 300, 300, 0, 11999, 300); /* under 2 x 20 x 300 us */
  ASSERT_EQ_INT(perfStalled(&r), 0);
  r.refOp = 299; /* over twice the time before the loop */
  ASSERT_EQ_INT(perfStalled(&r), 1);
  return 0;
}

int main(void) {
  RUN(testStalled);
  RUN(testDefaults);
  RUN(testFlags);
  RUN(testErrors);
  RUN(testStepping);
  RUN(testArithmetic);
  RUN(testUneven);
  RUN(testTuneFile);
  TEST_EXIT();
}
