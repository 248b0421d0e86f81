/*
 * Fuzzing of the text that users hand the library and its tools: the
 * selection grammar (DMACCL_ALGO, dmacclConfig_t.algorithm), tuning files
 * (DMACCL_TUNE_FILE) and dmaccl-perf's command line. One input is tried as
 * all three. Besides "no crash" (the sanitizer builds catch memory errors),
 * each parser's contract is asserted:
 *   - a refused table or tuning text leaves the table unchanged and says why;
 *   - an accepted table selects, for every collective and any size, an
 *     algorithm that exists, from a range that holds the size;
 *   - accepted perf arguments are in their documented ranges, and the size
 *     sweep ends within a bounded number of steps.
 *
 * Built two ways: with libFuzzer (clang -fsanitize=fuzzer; scripts/test runs
 * it for a bounded time when clang has it), and as test_fuzz, a plain
 * program that mutates a seed corpus with a fixed random sequence for a
 * bounded number of runs, so every build (CI's included) fuzzes the same way.
 */
#include "harness.h"
#include "perf/args.h"
#include "plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char *what, const char *input) {
  if (ok) return;
  fprintf(stderr, "fuzz_parse: %s, for input:\n%s\n", what, input);
  abort();
}

static void tableHolds(const planTable *t, const char *input) {
  static const size_t sizes[] = {0, 1, 1023, 1024, 65536, (size_t)1 << 30, SIZE_MAX - 1};
  for (int c = 0; c < PLAN_NUM_COLLS; c++) {
    check(t->nranges[c] >= 0 && t->nranges[c] <= PLAN_MAX_RANGES, "range count", input);
    check(t->gnranges[c] >= 0 && t->gnranges[c] <= PLAN_MAX_RANGES, "graph range count", input);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
      for (int graph = 0; graph < 2; graph++) {
        const planRange *why = NULL;
        planAlgo a = planSelectIn(t, (planColl)c, sizes[k], graph, &why);
        check((unsigned)a < PLAN_NUM_ALGOS, "selected algorithm out of range", input);
        check(!why || (why->lo <= sizes[k] && (sizes[k] < why->hi || why->hi == SIZE_MAX)),
              "the chosen range does not hold the size", input);
      }
  }
}

static void fuzzGrammar(const char *text) {
  char err[256];
  planTable t, before;
  planTableDefaults(&t, 4);
  before = t;
  if (planTableParse(&t, text, err, sizeof(err)) != 0) {
    check(memcmp(&t, &before, sizeof(t)) == 0, "a refused table changed the table", text);
    check(err[0] != 0, "a refused table without a reason", text);
  }
  tableHolds(&t, text);
  for (int n = 0; n <= 9; n += 3) {
    planTableDefaults(&t, n);
    before = t;
    if (planTuneParse(&t, n, text, err, sizeof(err)) != 0) {
      check(memcmp(&t, &before, sizeof(t)) == 0, "a refused tuning text changed the table", text);
      check(err[0] != 0, "a refused tuning text without a reason", text);
    }
    tableHolds(&t, text);
  }
}

static void fuzzArgs(char *text) {
  char *argv[64], err[256];
  int argc = 0;
  argv[argc++] = "dmaccl-perf";
  for (char *tok = strtok(text, " \t\n"); tok && argc < 64; tok = strtok(NULL, " \t\n"))
    argv[argc++] = tok;
  perfArgs a;
  int r = perfParseArgs(argc, argv, &a, err, sizeof(err));
  if (r != 0) return; /* refused (or -h): nothing to hold */
  check(a.minBytes <= a.maxBytes, "-b above -e accepted", text);
  check(a.stepBytes || (a.stepFactor > 1.0 && a.stepFactor <= 1024.0), "bad -f accepted", text);
  check(a.nalgos >= 1 && a.nalgos <= PERF_MAX_ALGOS, "algorithm count", text);
  check(a.iters >= 1 && a.warmup >= 0 && a.check >= 0 && a.graphs >= 0, "counts", text);
  int steps = 0;
  for (size_t s = a.minBytes; s && steps <= 200000; s = perfNextSize(&a, s)) {
    check(s >= a.minBytes && s <= a.maxBytes, "a size outside [-b, -e]", text);
    steps++;
    if (a.stepBytes) break; /* additive sweeps may be long: one step shows the arithmetic */
  }
  check(steps <= 200000, "the sweep does not end", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  fuzzGrammar(text);
  fuzzArgs(text); /* (tokenizes text in place) */
  free(text);
  return 0;
}

#ifndef DMACCL_LIBFUZZER
/* --- the bounded random-mutation driver (test_fuzz) ------------------------ */
static const char *const seeds[] = {
    "allgather:push1;alltoall:batch",
    "alltoall:0-64K:pushb,64K-inf:push1",
    "allgather:0-8M:stage,8M-inf:pushb;alltoall:0-1K:stage2d",
    "# tuning\n* allgather:stage\n4 alltoall:0-1M:stage2d,1M-inf:pushn\n2 allgather:1K-2K:pull1\n",
    "-b 1K -e 1G -f 4 -n 20 -w 5 -A auto,push1 -o allgather",
    "-b 100 -e 400 -i 150 -g 3 -c 2 -N 2 -J out.json",
    "-p 4 -G 10 -z 0 -a 3 --baseline nccl,nccl-ce --in-place 0 -d bfloat16",
    "allgather:inf-1K:push1",
    "allgather@graph:0-64K:push1;alltoall@Graph:stage2d;reduce@gr:pull1",
    "-e 17179869183G -f 1024",
};
static const char alphabet[] = "allgatheroptsuhbn0123456789KMGinf-:;,# *\n \t.eEx@";

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

int main(int argc, char **argv) {
  long runs = argc > 1 ? atol(argv[1]) : 200000;
  unsigned char buf[512];
  const size_t nseeds = sizeof(seeds) / sizeof(seeds[0]);
  for (size_t i = 0; i < nseeds; i++)
    LLVMFuzzerTestOneInput((const uint8_t *)seeds[i], strlen(seeds[i]));
  for (long r = 0; r < runs; r++) {
    /* A seed, or two spliced, then up to 8 byte edits. */
    const char *s = seeds[next() % nseeds];
    size_t n = strlen(s);
    memcpy(buf, s, n);
    if (next() % 4 == 0) {
      const char *t = seeds[next() % nseeds];
      size_t cut = n ? next() % n : 0, m = strlen(t), from = m ? next() % m : 0;
      size_t take = m - from < sizeof(buf) - cut ? m - from : sizeof(buf) - cut;
      memcpy(buf + cut, t + from, take);
      n = cut + take;
    }
    for (int e = (int)(next() % 9); e > 0; e--) {
      size_t at = n ? next() % n : 0;
      switch (next() % 4) {
      case 0: /* replace */
        if (n)
          buf[at] = (unsigned char)(next() % 3 ? alphabet[next() % (sizeof(alphabet) - 1)]
                                               : (unsigned char)next());
        break;
      case 1: /* insert */
        if (n < sizeof(buf)) {
          memmove(buf + at + 1, buf + at, n - at);
          buf[at] = (unsigned char)alphabet[next() % (sizeof(alphabet) - 1)];
          n++;
        }
        break;
      case 2: /* delete */
        if (n) {
          memmove(buf + at, buf + at + 1, n - at - 1);
          n--;
        }
        break;
      default: /* duplicate a digit run: large numbers */
        if (n < sizeof(buf) - 8) {
          memmove(buf + at + 8, buf + at, n - at);
          memset(buf + at, '9', 8);
          n += 8;
        }
      }
    }
    LLVMFuzzerTestOneInput(buf, n);
  }
  printf("test_fuzz: %ld mutated inputs, every parser contract held\n", runs);
  return 0;
}
#endif
