/* ConCCL's metrics (arXiv 2412.14335) and the repetition counts. Plain C. */
#include "c3.h"

#include <math.h>
#include <stdlib.h>

void c3Compute(const c3Times *t, c3Metrics *m) {
  double sum = t->gemm + t->comm;
  double longer = t->gemm > t->comm ? t->gemm : t->comm;
  m->ideal = longer > 0 ? sum / longer : NAN;
  m->realized = t->both > 0 ? sum / t->both : NAN;
  /* With one side negligible there is no gain to realize: no fraction. */
  m->fraction = m->ideal - 1 >= 0.01 ? (m->realized - 1) / (m->ideal - 1) : NAN;
  m->gemmSlowdown = t->gemm > 0 ? t->gemmTogether / t->gemm : NAN;
  m->commSlowdown = t->comm > 0 ? t->commTogether / t->comm : NAN;
  m->commShare = sum > 0 ? t->comm / sum : NAN;
}

static int cmpDouble(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double c3Median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof(double), cmpDouble);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static long roundCount(double v) {
  long r = lround(v);
  return r < 1 ? 1 : r;
}

void c3Reps(double gemmUs, double commUs, double targetUs, double share, long *gemms, long *colls) {
  /* The longer side lasts targetUs; the other makes the shares come out. */
  double gemmTotal = targetUs, commTotal = targetUs;
  if (share < 0.5)
    commTotal = targetUs * share / (1 - share);
  else
    gemmTotal = targetUs * (1 - share) / share;
  *gemms = roundCount(gemmTotal / gemmUs);
  *colls = roundCount(commTotal / commUs);
}
