/*
 * Selection from measurements: per collective and size, the fastest dmaccl
 * algorithm (out of place, the -a time); the "auto vs best" table that shows
 * how far the library's own choice is from it; and the tuning file that
 * dmaccl-tune writes (--tune-out), which DMACCL_TUNE_FILE loads; measured in
 * CUDA graphs (-G), its ranges are coll@graph ones. The file
 * names the library's collectives only: sendrecv's rows (whose algorithm is
 * Broadcast's entry, collInfo.select) are in the table, not in the file.
 */
#include "bench.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

/* Row of contender c at (coll, bytes), out of place, or NULL. Last cycle wins. */
static const perfRow *findRow(const bench *b, int coll, size_t bytes, int c) {
  const perfRow *found = NULL;
  for (size_t i = 0; i < b->nrows; i++) {
    const perfRow *r = &b->rows[i];
    if (r->coll == coll && r->bytes == bytes && r->contender == c && !r->inPlace) found = r;
  }
  return found;
}

static int isAuto(const bench *b, int c) {
  return b->cs[c].kind == KIND_DMACCL && strcmp(b->cs[c].name, "auto") == 0;
}

/* The fastest named dmaccl algorithm at (coll, bytes): contender index or -1. */
static int bestAlgo(const bench *b, int coll, size_t bytes, double *us) {
  int best = -1;
  for (int c = 0; c < b->nc; c++) {
    if (b->cs[c].kind != KIND_DMACCL || isAuto(b, c)) continue;
    const perfRow *r = findRow(b, coll, bytes, c);
    if (!r || r->wrong) continue;
    double t = r->us.v[b->args.average];
    if (best < 0 || t < *us) best = c, *us = t;
  }
  return best;
}

/* The sizes of coll in the order measured, without repeats. */
static size_t sizesOf(const bench *b, int coll, size_t *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < b->nrows && n < cap; i++) {
    const perfRow *r = &b->rows[i];
    if (r->coll != coll || r->inPlace) continue;
    int seen = 0;
    for (size_t k = 0; k < n && !seen; k++) seen = out[k] == r->bytes;
    if (!seen) out[n++] = r->bytes;
  }
  return n;
}

void perfPrintAutoVsBest(bench *b) {
  int haveAuto = -1, others = 0;
  for (int c = 0; c < b->nc; c++) {
    if (isAuto(b, c))
      haveAuto = c;
    else if (b->cs[c].kind == KIND_DMACCL)
      others++;
  }
  if (haveAuto < 0 || !others) return;
  printf(
      "#\n# auto (the library's selection) vs the fastest dmaccl algorithm measured here, out of "
      "place:\n# %-9s %12s %-8s %10s %10s %7s\n",
      "coll", "size(B)", "best", "best(us)", "auto(us)", "ratio");
  double worst = 0;
  size_t worstBytes = 0;
  int worstColl = 0, shown = 0;
  for (int coll = 0; coll < COLL_NUM; coll++) {
    size_t sizes[256];
    size_t ns = sizesOf(b, coll, sizes, 256);
    for (size_t k = 0; k < ns; k++) {
      double best = 0;
      int bc = bestAlgo(b, coll, sizes[k], &best);
      const perfRow *a = findRow(b, coll, sizes[k], haveAuto);
      if (bc < 0 || !a || best <= 0) continue;
      double t = a->us.v[b->args.average], ratio = t / best;
      printf("  %-9s %12zu %-8s %10.2f %10.2f %6.2fx\n", collTable[coll].name, sizes[k],
             b->cs[bc].name, best, t, ratio);
      shown++;
      if (ratio > worst) worst = ratio, worstBytes = sizes[k], worstColl = coll;
    }
  }
  if (!shown) {
    printf("# (no rows)\n");
    return;
  }
  printf("# worst: auto takes %.2fx the best time (%s, %zu bytes)\n", worst,
         collTable[worstColl].name, worstBytes);
}

int perfWriteTune(bench *b, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "dmaccl-perf: cannot write %s\n", path);
    return -1;
  }
  time_t now = time(NULL);
  char when[64];
  strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
  fprintf(f, "# dmaccl tuning file (DMACCL_TUNE_FILE), written by dmaccl-perf --tune-out\n");
  fprintf(f, "# %s, %d ranks on %s (%s), %s\n", when, b->n, b->gpuName[0] ? b->gpuName : "host",
          b->mp ? "one process per rank" : "one process", b->gpu ? "cuda" : "host executor");
  fprintf(f, "# command:");
  for (int i = 0; i < b->argc; i++) fprintf(f, " %s", b->argv[i]);
  /* Measured inside CUDA graphs (-G): ranges for captured calls only. */
  const char *qual = b->args.graphs ? "@graph" : "";
  fprintf(f,
          "\n# form: RANKS TABLE (docs/algorithms.md); each range is the fastest algorithm\n"
          "# measured at its lower size, out of place%s\n%d ",
          b->args.graphs ? "\n# measured in CUDA graphs (-G): coll@graph ranges, for captured calls"
                         : "",
          b->n);
  int firstColl = 1;
  for (int coll = 0; coll < COLL_NUM; coll++) {
    /* not a name of the file's grammar (sendrecv): its algorithm is another
     * row's entry, which that row's own measurements set */
    if (strcmp(collTable[coll].select, collTable[coll].name) != 0) continue;
    size_t sizes[256];
    size_t ns = sizesOf(b, coll, sizes, 256);
    int prevAlgo = -1, wrote = 0;
    size_t lo = 0;
    for (size_t k = 0; k <= ns; k++) {
      double us = 0;
      int bc = k < ns ? bestAlgo(b, coll, sizes[k], &us) : -2;
      if (bc == -1) continue; /* nothing measured right at this size */
      if (bc == prevAlgo) continue;
      if (prevAlgo >= 0) {
        size_t hi = k < ns ? sizes[k] : SIZE_MAX;
        char l[32], h[32];
        fprintf(f, "%s%s%s%s%s-%s:%s", wrote ? "," : (firstColl ? "" : ";"),
                wrote ? "" : collTable[coll].name, wrote ? "" : qual, wrote ? "" : ":",
                planSizeString(lo, l, sizeof(l)), planSizeString(hi, h, sizeof(h)),
                b->cs[prevAlgo].name);
        wrote = 1, firstColl = 0;
        lo = hi;
      }
      prevAlgo = bc;
    }
  }
  fprintf(f, "\n");
  fclose(f);
  return 0;
}
