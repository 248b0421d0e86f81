/* dmaccl-c3 --traffic: the HBM traffic a collective adds on each GPU,
 * computed from the library's own schedules (planBuild, src/plan), beside
 * the GEMM's own HBM need. Plain C, no GPU: computed bytes, not measured.
 *
 * Every rank's schedule is built as the library builds it (op.c's
 * coreOpArgs, launch.c's coreChooseAlgo) for the scenario's call: bf16,
 * root 0, sum, separate send and receive buffers (dmaccl-c3 issues out of
 * place), DMACCL_SCRATCH_BYTES' and DMACCL_STAGE_BYTES' defaults, staging
 * slot index 1. Then, per GPU g:
 *   COPY    src.rank's HBM is read, dst.rank's HBM written (bytes each; as
 *           lines, a LINES destination, twice the bytes); a STAGE, SCRATCH
 *           or LINES buffer lies on its owner like the user buffers; the
 *           copy runs on the copy engines of the rank whose schedule holds
 *           it (issued), or, inKernel, its reduction kernel's stores (stored)
 *   REDUCE  nsrc * bytes read and bytes written, on the rank's own HBM
 *           (every source and the destination are its own buffers); a
 *           source in LINES is read as lines and cleared (twice the bytes
 *           read and written again)
 */
#include "c3.h"
#include "plan.h"

#include <stdlib.h>
#include <string.h>

int c3PlanArgs(const c3Scenario *s, int nranks, int rank, planArgs *out) {
  memset(out, 0, sizeof(*out));
  const char *sel = c3CollAccepted(s->coll) ? collTable[s->coll].select : "";
  planColl pc;
  if (planCollParse(sel, strlen(sel), &pc) != 0 || planCollOf(pc)->vector) return -1;
  *out = (planArgs){.coll = pc,
                    .rank = rank,
                    .nranks = nranks,
                    .count = c3Count(s, nranks),
                    .elemSize = 2,
                    .dtype = (int)dmacclBfloat16,
                    .redop = (int)dmacclSum,
                    .root = 0,
                    .inPlace = 0,
                    .vec = NULL,
                    .kernelSignals = 1, /* one process per GPU: no GPU shared */
                    .scratchBytes = C3_SCRATCH_BYTES,
                    .stageSlots = 2,
                    .stageIndex = 1,
                    .lineBytes = planLineSlotBytes(nranks, C3_STAGE_BYTES)};
  return 0;
}

/* A staged algorithm whose staging need exceeds a slot runs the fallback
 * (launch.c's coreChooseAlgo). */
static planAlgo runs(const planArgs *a, planAlgo algo) {
  if (planIsStaged(algo) && planStageNeed(a, algo) > C3_STAGE_BYTES)
    return planFallbackAlgo(a->coll);
  return algo;
}

int c3TrafficApplies(const char *envVar) {
  return !strcmp(envVar, "DMACCL_CTA_POLICY") || !strcmp(envVar, "DMACCL_ALGO");
}

int c3AutoAlgo(const c3Scenario *s, int nranks, const c3ContenderSpec *cs, planAlgo *out, char *err,
               size_t errlen) {
  planArgs a;
  if (nranks < 1 || c3PlanArgs(s, nranks, 0, &a) != 0) {
    snprintf(err, errlen, "no collective of the library on %d ranks", nranks);
    return -1;
  }
  planTable t;
  planTableDefaults(&t, nranks);
  /* as coreBuildTable: the policy reshapes the table, DMACCL_ALGO's names
   * run as named */
  if (cs && !strcmp(cs->envVar, "DMACCL_CTA_POLICY")) {
    int p = planCtaPolicyParse(cs->envVal);
    if (p < 0) {
      snprintf(err, errlen, "DMACCL_CTA_POLICY=%s is not default, efficiency or zero", cs->envVal);
      return -1;
    }
    t.ctaPolicy = p;
    if (p == PLAN_CTA_ZERO) planTableNoSmMoves(&t);
  }
  t.origin = PLAN_FROM_ENV;
  if (cs && !strcmp(cs->envVar, "DMACCL_ALGO") &&
      (planTableParse(&t, cs->envVal, err, errlen) || planTableCheckPairs(&t, err, errlen)))
    return -1;
  *out = planSelect(&t, a.coll, planCollOf(a.coll)->size(&a), NULL);
  return 0;
}

size_t c3GemmBytes(const c3Scenario *s) {
  return ((size_t)s->m * (size_t)s->k + (size_t)s->k * (size_t)s->n + (size_t)s->m * (size_t)s->n) *
         2;
}

double c3GemmIntensity(const c3Scenario *s) {
  size_t b = c3GemmBytes(s);
  return b ? 2.0 * (double)s->m * (double)s->n * (double)s->k / (double)b : 0;
}

int c3Traffic(const c3Scenario *s, int nranks, planAlgo algo, c3TrafficResult *t, char *err,
              size_t errlen) {
  memset(t, 0, sizeof(*t));
  planArgs a;
  if (nranks < 1 || nranks > C3_TRAFFIC_MAX_RANKS) {
    snprintf(err, errlen, "%d ranks: from 1 to %d", nranks, C3_TRAFFIC_MAX_RANKS);
    return -1;
  }
  if (c3PlanArgs(s, nranks, 0, &a) != 0) {
    snprintf(err, errlen, "%s: no collective of the library for '%s'", s->name,
             c3CollAccepted(s->coll) ? collTable[s->coll].name : "?");
    return -1;
  }
  const planCollInfo *ci = planCollOf(a.coll);
  if ((unsigned)algo >= PLAN_NUM_ALGOS || !(ci->algos & PLAN_ALGO_BIT(algo))) {
    snprintf(err, errlen, "%s does not take %s", ci->name, planAlgoName(algo));
    return -1;
  }
  if (planIsComposed(algo)) {
    snprintf(err, errlen, "%s's %s is Send/Recv pairs on channels, no schedule of its own to count",
             ci->name, planAlgoName(algo));
    return -1;
  }
  t->coll = a.coll;
  t->asked = algo;
  t->algo = runs(&a, algo);
  t->nranks = nranks;
  t->size = ci->size(&a);
  planSchedule sch;
  memset(&sch, 0, sizeof(sch));
  int *lane = calloc((size_t)PLAN_MAX_LANES(nranks), sizeof(int));
  if (!lane) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int rc = 0;
  for (int r = 0; r < nranks && !rc; r++) {
    a.rank = r;
    if (planBuild(&a, t->algo, &sch) != 0) {
      snprintf(err, errlen, "%s: planBuild(%s, rank %d of %d) failed", s->name,
               planAlgoName(t->algo), r, nranks);
      rc = -1;
      break;
    }
    c3GpuTraffic *me = &t->gpu[r];
    memset(lane, 0, (size_t)PLAN_MAX_LANES(nranks) * sizeof(int));
    for (int i = 0; i < sch.nsteps && !rc; i++) {
      const planStep *st = &sch.steps[i];
      if (st->kind == PLAN_STEP_COPY) {
        if (st->src.rank < 0 || st->src.rank >= nranks || st->dst.rank < 0 ||
            st->dst.rank >= nranks || st->lane < 0 || st->lane >= PLAN_MAX_LANES(nranks)) {
          snprintf(err, errlen, "%s: rank %d step %d names no rank or lane", s->name, r, i);
          rc = -1;
          break;
        }
        size_t w = st->dst.buf == PLAN_BUF_LINES ? planLinesBytes(st->bytes) : st->bytes;
        t->gpu[st->src.rank].read += st->bytes;
        t->gpu[st->src.rank].copyRead += st->bytes;
        t->gpu[st->dst.rank].write += w;
        t->gpu[st->dst.rank].copyWrite += w;
        if (st->inKernel) {
          me->stored += st->bytes;
        } else {
          me->issued += st->bytes;
          me->copies++;
          if (++lane[st->lane] > me->laneCopies) me->laneCopies = lane[st->lane];
        }
        t->copyBytes += st->bytes;
      } else if (st->kind == PLAN_STEP_REDUCE) {
        size_t rd = 0, clear = 0;
        for (int k = 0; k < st->nsrc; k++) {
          int lines = sch.srcs[st->src0 + k].buf == PLAN_BUF_LINES;
          rd += lines ? planLinesBytes(st->bytes) : st->bytes;
          clear += lines ? planLinesBytes(st->bytes) : 0;
        }
        me->read += rd;
        me->reduceRead += rd;
        me->write += st->bytes + clear;
        me->reduceWrite += st->bytes + clear;
        me->reduces++;
        t->reduceRead += rd;
        t->reduceWrite += st->bytes + clear;
      }
    }
  }
  free(lane);
  planScheduleFree(&sch);
  if (rc) return rc;
  for (int g = 0; g < nranks; g++) {
    const c3GpuTraffic *x = &t->gpu[g];
    if (x->read > t->maxRead) t->maxRead = x->read;
    if (x->write > t->maxWrite) t->maxWrite = x->write;
    if (x->read + x->write > t->maxTotal) t->maxTotal = x->read + x->write;
    if (x->copies > t->maxCopies) t->maxCopies = x->copies;
    if (x->stored > t->maxStored) t->maxStored = x->stored;
    if (x->laneCopies > t->maxLaneCopies) t->maxLaneCopies = x->laneCopies;
  }
  return 0;
}

#define MB(x) ((double)(x) / (double)(1 << 20))

void c3PrintTraffic(FILE *f, const c3Args *a, const c3Scenario *sc, int nsc, int nranks) {
  fprintf(f,
          "# HBM traffic per GPU, computed from the library's schedules (planBuild) on %d ranks:\n"
          "# bytes the schedules name, not measured. bf16, root 0, sum, out of place, default\n"
          "# DMACCL_STAGE_BYTES (%zu MB: larger staged calls run the fallback) and\n"
          "# DMACCL_SCRATCH_BYTES (%zu MB).\n"
          "# read, write, total: the most on any GPU, MB (2^20 bytes); xsize: total / the\n"
          "# collective's size; copies: copy-engine COPY steps of the busiest rank's schedule;\n"
          "# lane: the most on one of its lanes; kern_MB: the most one rank's reduction kernel\n"
          "# stores (stagesm, stagell, twoshot: SMs move those bytes). GEMM MB: (M*K + K*N + M*N) "
          "* 2 bytes per GEMM; FLOP/B:\n"
          "# 2*M*N*K / those bytes; mem: below the H200's ridge, %.0f FLOP/B (989 TFLOP/s dense\n"
          "# bf16 / 4.8 TB/s), so the GEMM is memory-bound.\n",
          nranks, C3_STAGE_BYTES >> 20, C3_SCRATCH_BYTES >> 20, C3_RIDGE_FLOP_PER_BYTE);
  fprintf(f, "%-20s %-13s %6s %9s %7s %-4s %-8s %-7s %9s %9s %9s %6s %6s %4s %8s\n", "scenario",
          "coll", "size", "GEMM_MB", "FLOP/B", "mem", "algo", "runs", "read_MB", "write_MB",
          "total_MB", "xsize", "copies", "lane", "kern_MB");
  unsigned colls = 0;
  for (int i = 0; i < nsc; i++) {
    const c3Scenario *s = &sc[i];
    colls |= 1u << s->coll;
    char size[32];
    planSizeString(s->size, size, sizeof(size));
    double in = c3GemmIntensity(s);
    for (int c = 0; c < a->ncs; c++) {
      const c3ContenderSpec *cs = &a->cs[c];
      char why[256];
      if (cs->kind != C3_DMACCL || c3Lacks(cs, s->coll, NULL, why, sizeof(why))) continue;
      planAlgo algo;
      int isAuto = strcmp(cs->algo, "auto") == 0;
      if (isAuto && c3AutoAlgo(s, nranks, cs, &algo, why, sizeof(why)) != 0) {
        fprintf(f, "# %s %s: %s\n", s->name, cs->name, why);
        continue;
      }
      if (!isAuto && planAlgoParse(cs->algo, strlen(cs->algo), &algo) != 0) continue;
      c3TrafficResult t;
      if (c3Traffic(s, nranks, algo, &t, why, sizeof(why)) != 0) {
        fprintf(f, "# %s %s: %s\n", s->name, cs->name, why);
        continue;
      }
      fprintf(
          f, "%-20s %-13s %6s %9.1f %7.1f %-4s %-8s %-7s %9.2f %9.2f %9.2f %6.2f %6d %4d %8.2f\n",
          s->name, collTable[s->coll].name, size, MB(c3GemmBytes(s)), in,
          in < C3_RIDGE_FLOP_PER_BYTE ? "yes" : "no", cs->name, planAlgoName(t.algo), MB(t.maxRead),
          MB(t.maxWrite), MB(t.maxTotal), t.size ? (double)t.maxTotal / (double)t.size : 0,
          t.maxCopies, t.maxLaneCopies, MB(t.maxStored));
    }
  }
  /* what each contender leaves out */
  for (int c = 0; c < a->ncs; c++) {
    const c3ContenderSpec *cs = &a->cs[c];
    if (cs->kind != C3_DMACCL) {
      fprintf(f, "# no %s rows: not a dmaccl algorithm (no schedule)\n", cs->name);
      continue;
    }
    if (cs->envVar[0] && !(c3TrafficApplies(cs->envVar) && !strcmp(cs->algo, "auto")))
      fprintf(f, "# %s: %s=%s is not applied here (the defaults are)\n", cs->name, cs->envVar,
              cs->envVal);
    for (int k = 0; k < COLL_NUM; k++) {
      char buf[256];
      const char *why = colls & (1u << k) ? c3Lacks(cs, k, NULL, buf, sizeof(buf)) : NULL;
      if (why) fprintf(f, "# no %s rows for %s: %s\n", cs->name, collTable[k].name, why);
    }
  }
}
