/* dmaccl-c3's table and JSON. Plain C. */
#include "c3.h"
#include "common/json.h"
#include "plan.h"

#include <math.h>
#include <string.h>

static const char *const kindName[] = {"nccl", "nccl", "nccl", "nccl", "dmaccl"};

/* The contender whose realized fraction the bar compares: the library's own
 * choice when it runs, else the first dmaccl contender. */
static int defaultDmaccl(const c3Result *r) {
  int first = -1;
  for (int c = 0; c < r->ncs; c++) {
    if (r->cs[c].kind != C3_DMACCL || r->cs[c].envVar[0]) continue;
    if (strcmp(r->cs[c].algo, "auto") == 0) return c;
    if (first < 0) first = c;
  }
  return first;
}

static const c3Row *rowOf(const c3Result *r, int scenario, int contender) {
  for (int i = 0; i < r->nrows; i++)
    if (r->rows[i].scenario == scenario && r->rows[i].contender == contender) return &r->rows[i];
  return NULL;
}

/* The scenario's row of its first contender with a row: the one whose
 * single-collective time set the repetition counts (main.c). */
static const c3Row *firstRow(const c3Result *r, int scenario) {
  for (int c = 0; c < r->ncs; c++) {
    const c3Row *row = rowOf(r, scenario, c);
    if (row) return row;
  }
  return NULL;
}

/* Communication share of the isolated time, from that first row. */
static double scenarioShare(const c3Result *r, int scenario) {
  const c3Row *row = firstRow(r, scenario);
  return row ? row->m.commShare : NAN;
}

/* Why contender c has no row in the scenario (c3Lacks), or NULL. */
static const char *skipped(const c3Result *r, int scenario, int c, char *buf, size_t len) {
  if (rowOf(r, scenario, c)) return NULL;
  return c3Lacks(&r->cs[c], r->sc[scenario].coll, r->ncclLacks, buf, len);
}

static void num(FILE *f, double v, int width, int prec) {
  if (isnan(v))
    fprintf(f, " %*s", width, "-");
  else
    fprintf(f, " %*.*f", width, prec, v);
}

void c3PrintScenario(FILE *f, const c3Result *r, int scenario) {
  const c3Scenario *s = &r->sc[scenario];
  const c3Row *first = firstRow(r, scenario);
  char size[32];
  planSizeString(s->size, size, sizeof(size));
  if (!first) /* no contender ran it: the lines below say why */
    fprintf(f, "#\n# %s: GEMM %ldx%ldx%ld bf16, %s %s: no rows\n", s->name, s->m, s->n, s->k,
            collTable[s->coll].name, size);
  else
    fprintf(f,
            "#\n# %s: GEMM %ldx%ldx%ld bf16 x%ld, %s %s x%ld, communication %.0f%% of the "
            "isolated time%s\n",
            s->name, s->m, s->n, s->k, first->gemms, collTable[s->coll].name, size, first->colls,
            100 * scenarioShare(r, scenario),
            s->fused ? "\n#   fused: each step gathers A and multiplies its rows as they land "
                       "(dmaccl: arrival words; NCCL: own rows first, the rest after the "
                       "collective); gemm_us and comm_us alone, both_us the steps, gemm_slow "
                       "and comm_slow: each side's end in them"
                     : "");
  fprintf(f, "# %-26s %9s %9s %9s %6s %8s %8s %9s %9s %9s %7s\n", "contender", "gemm_us", "comm_us",
          "both_us", "ideal", "realized", "fraction", "gemm_slow", "comm_slow", "J/iter", "#wrong");
  for (int c = 0; c < r->ncs; c++) {
    const c3Row *row = rowOf(r, scenario, c);
    if (!row) continue;
    fprintf(f, "  %-26s", r->cs[c].name);
    num(f, row->t.gemm, 9, 0);
    num(f, row->t.comm, 9, 0);
    num(f, row->t.both, 9, 0);
    num(f, row->m.ideal, 6, 2);
    num(f, row->m.realized, 8, 2);
    if (isnan(row->m.fraction))
      fprintf(f, " %8s", "-");
    else
      fprintf(f, " %7.0f%%", 100 * row->m.fraction);
    num(f, row->m.gemmSlowdown, 9, 2);
    num(f, row->m.commSlowdown, 9, 2);
    num(f, row->joules > 0 ? row->joules : NAN, 9, 3);
    if (row->wrong < 0)
      fprintf(f, " %7s\n", "-");
    else
      fprintf(f, " %7lld\n", row->wrong);
  }
  for (int c = 0; c < r->ncs; c++) {
    char buf[256];
    const char *why = skipped(r, scenario, c, buf, sizeof(buf));
    if (why) fprintf(f, "# no %s row: %s\n", r->cs[c].name, why);
  }
  fflush(f);
}

void c3PrintSummary(FILE *f, const c3Result *r) {
  int def = defaultDmaccl(r);
  fprintf(f, "#\n# Realized fraction of the ideal gain, mean over scenarios (ConCCL).\n");
  fprintf(f, "# 'comm>=20%%': scenarios where communication is at least 20%% of the isolated\n");
  fprintf(f, "# time (their count in brackets); 'beats NCCL': such scenarios where the\n");
  fprintf(f, "# contender's fraction is higher than every NCCL setting's in the same run;\n");
  fprintf(f, "# 'mean both_us': the mean overlapped time (the same work for every contender).\n");
  fprintf(f, "# Each contender's figures cover the scenarios it has rows in ('rows'; the tables\n");
  fprintf(f, "# say why a row is missing); NCCL settings without a row there are not compared.\n");
  fprintf(f, "# %-26s %4s %10s %12s %12s %14s\n", "contender", "rows", "all", "comm>=20%",
          "beats NCCL", "mean both_us");
  for (int c = 0; c < r->ncs; c++) {
    double sumAll = 0, sum20 = 0, both = 0;
    int nAll = 0, n20 = 0, wins = 0, nboth = 0, nrows = 0;
    for (int s = 0; s < r->nsc; s++) {
      const c3Row *row = rowOf(r, s, c);
      if (!row) continue;
      nrows++;
      if (!isnan(row->t.both)) both += row->t.both / 1000, nboth++;
      if (isnan(row->m.fraction)) continue;
      sumAll += row->m.fraction, nAll++;
      if (!(scenarioShare(r, s) >= 0.2)) continue;
      sum20 += row->m.fraction, n20++;
      int beats = 1, anyNccl = 0;
      for (int o = 0; o < r->ncs; o++) {
        const c3Row *other = rowOf(r, s, o);
        if (r->cs[o].kind == C3_DMACCL || !other || isnan(other->m.fraction)) continue;
        anyNccl = 1;
        beats &= row->m.fraction > other->m.fraction;
      }
      wins += beats && anyNccl && r->cs[c].kind == C3_DMACCL;
    }
    fprintf(f, "  %-26s %4d", r->cs[c].name, nrows);
    if (nAll)
      fprintf(f, " %9.0f%%", 100 * sumAll / nAll);
    else
      fprintf(f, " %10s", "-");
    if (n20)
      fprintf(f, " %6.0f%% (%2d)", 100 * sum20 / n20, n20);
    else
      fprintf(f, " %12s", "-");
    if (r->cs[c].kind == C3_DMACCL)
      fprintf(f, " %9d/%-2d", wins, n20);
    else
      fprintf(f, " %12s", "");
    if (nboth)
      fprintf(f, " %11.2f ms", both / nboth);
    else
      fprintf(f, " %14s", "-");
    fprintf(f, "%s\n", c == def ? "  <- dmaccl default" : "");
  }
}

static void jnum(FILE *f, const char *key, double v, const char *sep) {
  if (isnan(v) || isinf(v))
    fprintf(f, "\"%s\": null%s", key, sep);
  else
    fprintf(f, "\"%s\": %.6g%s", key, v, sep);
}

int c3WriteJson(const c3Result *r, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return -1;
  }
  fprintf(f, "{\n  \"schema\": \"dmaccl-c3/1\",\n  \"command\": ");
  jsonString(f, r->command);
  fprintf(f, ",\n  \"gpu\": ");
  jsonString(f, r->gpu);
  fprintf(f, ",\n  \"nccl_version\": ");
  jsonString(f, r->ncclVersion);
  fprintf(f, ",\n  \"driver_version\": %d,\n  \"nranks\": %d,\n  \"runs\": %d,\n", r->driverVersion,
          r->nranks, r->args->runs);
  jnum(f, "target_ms", r->args->targetMs, ",\n");
  int def = defaultDmaccl(r);
  fprintf(f, "  \"default_contender\": ");
  jsonString(f, def >= 0 ? r->cs[def].name : "");
  fprintf(f, ",\n  \"contenders\": [");
  for (int c = 0; c < r->ncs; c++) {
    fprintf(f, "%s{\"name\": ", c ? ", " : "");
    jsonString(f, r->cs[c].name);
    fprintf(f, ", \"kind\": \"%s\"}", kindName[r->cs[c].kind]);
  }
  fprintf(f, "],\n  \"scenarios\": [\n");
  for (int s = 0; s < r->nsc; s++) {
    const c3Scenario *sc = &r->sc[s];
    const c3Row *first = firstRow(r, s);
    fprintf(f, "    {\"name\": ");
    jsonString(f, sc->name);
    fprintf(f, ", \"m\": %ld, \"n\": %ld, \"k\": %ld, \"coll\": \"%s\", \"size\": %zu, ", sc->m,
            sc->n, sc->k, collTable[sc->coll].name, sc->size);
    jnum(f, "comm_share_target", sc->commShare, ", ");
    fprintf(f, "\"fused\": %s, ", sc->fused ? "true" : "false");
    jnum(f, "comm_share", scenarioShare(r, s), ", ");
    fprintf(f, "\"gemms\": %ld, \"colls\": %ld,\n     \"rows\": [\n", first ? first->gemms : 0L,
            first ? first->colls : 0L);
    int k = 0;
    for (int c = 0; c < r->ncs; c++) {
      const c3Row *row = rowOf(r, s, c);
      if (!row) continue;
      fprintf(f, "%s      {\"contender\": ", k++ ? ",\n" : "");
      jsonString(f, r->cs[c].name);
      fprintf(f, ", \"kind\": \"%s\", ", kindName[r->cs[c].kind]);
      jnum(f, "gemm_us", row->t.gemm, ", ");
      jnum(f, "comm_us", row->t.comm, ", ");
      jnum(f, "both_us", row->t.both, ", ");
      jnum(f, "gemm_together_us", row->t.gemmTogether, ", ");
      jnum(f, "comm_together_us", row->t.commTogether, ", ");
      jnum(f, "ideal", row->m.ideal, ", ");
      jnum(f, "realized", row->m.realized, ", ");
      jnum(f, "fraction", row->m.fraction, ", ");
      jnum(f, "gemm_slowdown", row->m.gemmSlowdown, ", ");
      jnum(f, "comm_slowdown", row->m.commSlowdown, ", ");
      jnum(f, "joules", row->joules > 0 ? row->joules : NAN, ", ");
      fprintf(f, "\"wrong\": %lld}", row->wrong);
    }
    fprintf(f, "],\n     \"skipped\": [");
    k = 0;
    for (int c = 0; c < r->ncs; c++) {
      char buf[256];
      const char *why = skipped(r, s, c, buf, sizeof(buf));
      if (!why) continue;
      fprintf(f, "%s{\"contender\": ", k++ ? ", " : "");
      jsonString(f, r->cs[c].name);
      fprintf(f, ", \"why\": ");
      jsonString(f, why);
      fprintf(f, "}");
    }
    fprintf(f, "]}%s\n", s + 1 < r->nsc ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  int bad = ferror(f);
  if (fclose(f) || bad) {
    fprintf(stderr, "dmaccl-c3: error writing %s\n", path);
    return -1;
  }
  return 0;
}
