/*
 * dmaccl-c3: compute and communication together (C3), with ConCCL's metrics
 * (DESIGN.md). One process per GPU, forked before any CUDA call, as PyTorch,
 * vLLM and SGLang run (-p beyond the GPU count: rank r on GPU r % GPUs, the
 * ranks sharing them, for a functional check). On every GPU a cuBLAS bf16
 * GEMM stream and a collective stream run:
 *   GEMM alone       k GEMMs (one CUDA graph launch)
 *   collective alone m collectives issued one by one on the collective stream
 *   both             the two loops started together; the time until both end
 * k and m come from one GEMM's and one collective's time (the first
 * contender that runs the scenario's collective: report.c's first row; the
 * same counts for every contender: the same work), so the longer side lasts
 * -t ms and communication makes up the scenario's share of the isolated
 * time. Every time is the slowest rank's; each is a median over -r runs, and
 * the runs interleave the contenders so drift hits them alike.
 *
 * The collective is any of the tools' table (common/colls.h) that a scenario
 * may name (c3CollAccepted): bf16, reductions summing, rooted ones at root
 * 0, issued through collIssue (dmaccl) and ncclBaseIssue (NCCL). A
 * contender that lacks it (c3Lacks: an algorithm its selection entry does
 * not take, NCCL's copy-engine path for a reduction) has no row there; the
 * table says why. The send data are small integers (c3ExactBf16), so every
 * order of summing gives the bytes of collReference.
 *
 * Files: scenario.c (inputs), metrics.c (ConCCL's metrics), report.c (table
 * and JSON), traffic.c (--traffic: HBM bytes from the schedules, no GPU), gemm.c
 * (cuBLAS), contender.c (NCCL settings, dmaccl algorithms),
 * perf/energy.c (NVML), perf/baseline_nccl.c (NCCL).
 */
#include "c3_gpu.h"
#include "common/data.h"
#include "common/ranks.h"
#include "perf/energy.h"
#include "plan.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXR 64
#define POISON 0xA5

/* What the rank processes share (mapped before fork). */
typedef struct {
  pthread_barrier_t barrier;
  double vals[MAXR];
  c3Id ids[C3_MAX_CONTENDERS];
  int idOk[C3_MAX_CONTENDERS];
  int ndev;
} c3Shared;

typedef struct {
  c3Args args;
  c3Scenario sc[C3_MAX_SCENARIOS];
  int nsc;
  unsigned colls; /* the scenarios' collectives (bit 1u << collId) */
  int n, rank, print;
  int dev, shared; /* this rank's GPU: rank % GPUs; shared: more ranks than GPUs */
  c3Shared *sh;
  c3Contender cs[C3_MAX_CONTENDERS];
  int live[C3_MAX_CONTENDERS]; /* made on every rank */
  cudaStream_t gemmStream;
  c3Gemm *gemm;
  void *send, *recv;
  size_t sendBytes, recvBytes; /* the largest of any scenario and rank */
  unsigned char *pool[MAXR];   /* every rank's send data (sendBytes), for checking */
  unsigned char *scratch;      /* recvBytes: the receive buffer read back */
  unsigned char *want;         /* recvBytes: the reference of the current scenario */
  int wantOk;                  /* want holds it (collReference succeeded on every rank) */
  cudaEvent_t ev[6];
  uint32_t *words; /* fused scenarios: the arrival words (device), and their last value */
  uint32_t value;
  perfEnergy *energy;
  c3Row *rows;
  int nrows;
  char command[1024];
} c3Rank;

static void barrier(c3Rank *r) {
  pthread_barrier_wait(&r->sh->barrier);
}

/* The largest of one value per rank (sum when sum is set). */
static double combine(c3Rank *r, double mine, int sum) {
  r->sh->vals[r->rank] = mine;
  barrier(r);
  double v = r->sh->vals[0];
  for (int i = 1; i < r->n; i++) v = sum ? v + r->sh->vals[i] : fmax(v, r->sh->vals[i]);
  barrier(r);
  return v;
}

static double elapsedUs(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? 1000.0 * ms : NAN;
}

/* Bytes of rank's send and receive buffers in a scenario (bf16). */
static size_t sendBytesOf(const c3Scenario *s, const collShape *sh, int rank) {
  return collSendCount(s->coll, sh, rank) * 2;
}
static size_t recvBytesOf(const c3Scenario *s, const collShape *sh, int rank) {
  return collRecvCount(s->coll, sh, rank) * 2;
}

/* Rank q's send data: random bits made small integers (c3ExactBf16). */
static void fillSend(unsigned char *p, size_t bytes, int q) {
  dataFillRandom(p, bytes, 4242 + (uint64_t)q);
  c3ExactBf16(p, bytes);
}

/* Buffers for the largest scenario of any rank (the same sizes everywhere:
 * NCCL's copy-engine windows are allocated collectively). */
static int setupBuffers(c3Rank *r) {
  r->sendBytes = r->recvBytes = 0;
  for (int i = 0; i < r->nsc; i++) {
    collShape sh;
    c3Shape(&r->sc[i], r->n, &sh);
    for (int q = 0; q < r->n; q++) {
      size_t sb = sendBytesOf(&r->sc[i], &sh, q), rb = recvBytesOf(&r->sc[i], &sh, q);
      if (sb > r->sendBytes) r->sendBytes = sb;
      if (rb > r->recvBytes) r->recvBytes = rb;
    }
  }
  if (r->args.check) {
    for (int q = 0; q < r->n; q++) {
      if (!(r->pool[q] = malloc(r->sendBytes))) return -1;
      fillSend(r->pool[q], r->sendBytes, q);
    }
    if (!(r->scratch = malloc(r->recvBytes)) || !(r->want = malloc(r->recvBytes))) return -1;
  }
  unsigned char *mine = r->pool[r->rank];
  if (!mine) {
    if (!(mine = malloc(r->sendBytes))) return -1;
    fillSend(mine, r->sendBytes, r->rank);
  }
  C3_CUDA(cudaMalloc(&r->send, r->sendBytes));
  C3_CUDA(cudaMalloc(&r->recv, r->recvBytes));
  C3_CUDA(cudaMemcpy(r->send, mine, r->sendBytes, cudaMemcpyHostToDevice));
  if (!r->pool[r->rank]) free(mine);
  return 0;
}

/* Why contender s has no row for collective c (c3Lacks with the NCCL
 * baseline's ncclBaseLacks), or NULL. */
static const char *lacks(const c3ContenderSpec *s, int c, char *buf, size_t len) {
  return c3Lacks(s, c, ncclBaseLacks, buf, len);
}

/* Every contender on every rank; one that fails anywhere is left out
 * everywhere, with the reason (NCCL missing, an unknown setting). */
static void makeContenders(c3Rank *r) {
  for (int i = 0; i < r->args.ncs; i++) {
    const c3ContenderSpec *s = &r->args.cs[i];
    char err[256] = "";
    /* one that runs none of the scenarios' collectives is not made (the
     * same on every rank: c3Lacks reads only the names) */
    char buf[256];
    const char *why = "no scenarios";
    for (int k = 0; k < r->nsc && why; k++) why = lacks(s, r->sc[k].coll, buf, sizeof(buf));
    if (why) {
      if (r->print) printf("# no %s in this run: %s\n", s->name, why);
      continue;
    }
    if (r->rank == 0) r->sh->idOk[i] = c3ContenderMakeId(s, &r->sh->ids[i], err, sizeof(err)) == 0;
    barrier(r);
    int ok = r->sh->idOk[i] &&
             c3ContenderInit(&r->cs[i], s, r->n, r->rank, &r->sh->ids[i], r->colls, r->send,
                             r->sendBytes, r->recv, r->recvBytes, err, sizeof(err)) == 0;
    if (combine(r, ok ? 0 : 1, 0) > 0) {
      if (r->print)
        printf("# no %s: %s%s\n", s->name, err[0] ? err : "a peer failed",
               r->shared ? " (the ranks share GPUs)" : "");
      c3ContenderFini(&r->cs[i]);
      continue;
    }
    r->live[i] = 1;
  }
}

static int issueLoop(c3Contender *c, const c3Scenario *s, const collShape *sh, long m) {
  for (long i = 0; i < m; i++)
    if (c3ContenderIssue(c, s->coll, sh)) return -1;
  return 0;
}

/* Time of one collective: the mean of a few after warm-up, slowest rank. */
static int timeCollective(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh,
                          double *us) {
  if (issueLoop(c, s, sh, 3)) return -1;
  C3_CUDA(cudaStreamSynchronize(c->stream));
  int reps = s->size >= ((size_t)256 << 20) ? 4 : 20;
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], c->stream));
  if (issueLoop(c, s, sh, reps)) return -1;
  C3_CUDA(cudaEventRecord(r->ev[1], c->stream));
  C3_CUDA(cudaStreamSynchronize(c->stream));
  *us = combine(r, elapsedUs(r->ev[0], r->ev[1]) / reps, 0);
  return 0;
}

static int gemmAlone(c3Rank *r, double *us) {
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], r->gemmStream));
  if (c3GemmLaunch(r->gemm)) return -1;
  C3_CUDA(cudaEventRecord(r->ev[1], r->gemmStream));
  C3_CUDA(cudaStreamSynchronize(r->gemmStream));
  *us = combine(r, elapsedUs(r->ev[0], r->ev[1]), 0);
  return 0;
}

static int commAlone(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh, long m,
                     double *us) {
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], c->stream));
  if (issueLoop(c, s, sh, m)) return -1;
  C3_CUDA(cudaEventRecord(r->ev[1], c->stream));
  C3_CUDA(cudaStreamSynchronize(c->stream));
  *us = combine(r, elapsedUs(r->ev[0], r->ev[1]), 0);
  return 0;
}

/* Both loops from one start event: the GEMM graph first (one launch), then
 * the collectives; each side's own end and the later of the two. */
static int together(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh, long m,
                    double *gemmUs, double *commUs, double *bothUs) {
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], r->gemmStream));
  C3_CUDA(cudaStreamWaitEvent(c->stream, r->ev[0], 0));
  if (c3GemmLaunch(r->gemm)) return -1;
  if (issueLoop(c, s, sh, m)) return -1;
  C3_CUDA(cudaEventRecord(r->ev[1], r->gemmStream));
  C3_CUDA(cudaEventRecord(r->ev[2], c->stream));
  C3_CUDA(cudaStreamSynchronize(r->gemmStream));
  C3_CUDA(cudaStreamSynchronize(c->stream));
  double g = elapsedUs(r->ev[0], r->ev[1]), k = elapsedUs(r->ev[0], r->ev[2]);
  *gemmUs = combine(r, g, 0);
  *commUs = combine(r, k, 0);
  *bothUs = combine(r, fmax(g, k), 0);
  return 0;
}

/* The scenario's reference for this rank (collReference of every rank's
 * send data) into r->want; r->wantOk says whether every rank has it (not
 * beyond COLL_MAX_RANKS ranks). Once per scenario: the same for every
 * contender. */
static void makeReference(c3Rank *r, const c3Scenario *s, const collShape *sh) {
  const void *sends[COLL_MAX_RANKS];
  int ok = r->n <= COLL_MAX_RANKS;
  for (int q = 0; ok && q < r->n; q++) sends[q] = r->pool[q];
  ok = ok && collReference(s->coll, sh, r->rank, dmacclBfloat16, dmacclSum, sends, r->want) == 0;
  r->wantOk = combine(r, ok ? 0 : 1, 0) == 0;
  if (!r->wantOk && r->print)
    printf("# %s: not checked: no reference of %s on %d ranks (collReference takes up to %d)\n",
           s->name, collTable[s->coll].name, r->n, COLL_MAX_RANKS);
}

/* Wrong elements of this rank's receive buffer (every byte of it, against
 * r->want) after an overlapped loop into a poisoned buffer, summed over
 * ranks; -1 when the scenario has no reference. */
static long long checkRecv(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh) {
  size_t bytes = recvBytesOf(s, sh, r->rank);
  long long wrong = 0;
  if (!r->wantOk) return -1;
  if (bytes && cudaMemcpy(r->scratch, c->recv, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    fprintf(stderr, "dmaccl-c3: reading back the receive buffer failed\n");
    wrong = (long long)(bytes / 2);
  } else if (bytes) {
    wrong = (long long)dataCountWrong(r->scratch, r->want, bytes, 2);
  }
  return (long long)combine(r, (double)wrong, 1);
}

/* Energy of one overlapped iteration, all GPUs: loops for at least 500 ms
 * (five NVML counter ticks on H200). */
static int energyRow(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh, long m,
                     double bothUs, double *joules) {
  long iters = (long)ceil(500000.0 / bothUs);
  if (iters < 1) iters = 1;
  double g, k, b;
  barrier(r);
  double e0 = energyRead(r->energy);
  for (long i = 0; i < iters; i++)
    if (together(r, c, s, sh, m, &g, &k, &b)) return -1;
  double e1 = energyRead(r->energy);
  *joules = combine(r, (e1 - e0) / (double)iters, 1);
  return 0;
}

/* --- Fused scenarios (c3Scenario.fused): the GEMM reads the gathered A --- */

/* One step on this rank: with comm, the gather of A into c->recv (dmaccl:
 * with arrival words), after the last step's GEMMs, which read what it
 * writes; with gemm, C = A B by rank blocks of rows on the GEMM stream: the
 * own rows from c->send at once, then each peer's from c->recv once they
 * have landed (dmaccl: dmacclStreamWaitArrival on its word; NCCL: after the
 * collective). Alone (one flag), each side runs without the other. */
static int fusedStep(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh, int gemm,
                     int comm) {
  long rows = s->m / r->n;
  size_t blk = (size_t)rows * (size_t)s->k * 2;
  int words = c->spec.kind == C3_DMACCL && !c->spec.whole;
  if (comm) {
    if (gemm) {
      C3_CUDA(cudaEventRecord(r->ev[2], r->gemmStream));
      C3_CUDA(cudaStreamWaitEvent(c->stream, r->ev[2], 0));
    }
    if (words) {
      r->value++;
      if (dmacclAllGatherNotify(c->send, c->recv, sh->count, dmacclBfloat16, r->words, r->value,
                                c->comm, c->stream) != dmacclSuccess) {
        fprintf(stderr, "dmaccl-c3: %s: dmacclAllGatherNotify: %s\n", c->spec.name,
                dmacclCommGetLastError(c->comm));
        return -1;
      }
    } else if (c3ContenderIssue(c, COLL_ALLGATHER, sh)) {
      return -1;
    }
  }
  if (!gemm) return 0;
  if (c3GemmRows(r->gemm, s, c->send, (long)r->rank * rows, rows)) return -1;
  if (comm && !words) {
    C3_CUDA(cudaEventRecord(r->ev[3], c->stream));
    C3_CUDA(cudaStreamWaitEvent(r->gemmStream, r->ev[3], 0));
  }
  for (int i = 1; i < r->n; i++) {
    int p = (r->rank + i) % r->n;
    if (comm && words &&
        dmacclStreamWaitArrival(r->words, p, r->value, c->comm, r->gemmStream) != dmacclSuccess) {
      fprintf(stderr, "dmaccl-c3: %s: dmacclStreamWaitArrival: %s\n", c->spec.name,
              dmacclCommGetLastError(c->comm));
      return -1;
    }
    if (c3GemmRows(r->gemm, s, (char *)c->recv + (size_t)p * blk, (long)p * rows, rows)) return -1;
  }
  return 0;
}

/* m steps from one start: each side's end and the later one (slowest rank). */
static int fusedLoop(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh, long m,
                     int gemm, int comm, double *gemmUs, double *commUs, double *bothUs) {
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], r->gemmStream));
  C3_CUDA(cudaStreamWaitEvent(c->stream, r->ev[0], 0));
  for (long i = 0; i < m; i++)
    if (fusedStep(r, c, s, sh, gemm, comm)) return -1;
  C3_CUDA(cudaEventRecord(r->ev[1], r->gemmStream));
  C3_CUDA(cudaEventRecord(r->ev[4], c->stream));
  C3_CUDA(cudaStreamSynchronize(r->gemmStream));
  C3_CUDA(cudaStreamSynchronize(c->stream));
  double g = elapsedUs(r->ev[0], r->ev[1]), k = elapsedUs(r->ev[0], r->ev[4]);
  *gemmUs = combine(r, g, 0);
  *commUs = combine(r, k, 0);
  *bothUs = combine(r, fmax(g, k), 0);
  return 0;
}

/* The reference C of a fused scenario (host, M x N bf16): the GEMM's blocks
 * of rows from the reference of the gather (r->want), as fusedStep issues
 * them; NULL when there is none. */
static unsigned char *fusedReference(c3Rank *r, const c3Scenario *s) {
  size_t abytes = (size_t)s->m * (size_t)s->k * 2, cbytes = (size_t)s->m * (size_t)s->n * 2;
  long rows = s->m / r->n;
  void *a = NULL;
  unsigned char *want = r->wantOk ? malloc(cbytes) : NULL;
  int ok = want && cudaMalloc(&a, abytes) == cudaSuccess &&
           cudaMemcpy(a, r->want, abytes, cudaMemcpyHostToDevice) == cudaSuccess;
  for (int p = 0; p < r->n && ok; p++)
    ok = c3GemmRows(r->gemm, s, (char *)a + (size_t)p * (size_t)rows * (size_t)s->k * 2,
                    (long)p * rows, rows) == 0;
  ok = ok && cudaStreamSynchronize(r->gemmStream) == cudaSuccess &&
       cudaMemcpy(want, c3GemmOut(r->gemm), cbytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(a);
  if (!ok) free(want);
  return ok ? want : NULL;
}

/* Wrong bytes after one step into a poisoned A and C (every rank's sum):
 * the gathered A against the collective's reference, C against wantC. */
static long long fusedCheck(c3Rank *r, c3Contender *c, const c3Scenario *s, const collShape *sh,
                            const unsigned char *wantC) {
  size_t cbytes = (size_t)s->m * (size_t)s->n * 2;
  long long wrong = 0;
  if (cudaMemset(c->recv, POISON, recvBytesOf(s, sh, r->rank)) != cudaSuccess ||
      cudaMemset(c3GemmOut(r->gemm), POISON, cbytes) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    return -2;
  if (fusedStep(r, c, s, sh, 1, 1) || cudaStreamSynchronize(r->gemmStream) != cudaSuccess ||
      cudaStreamSynchronize(c->stream) != cudaSuccess)
    return -2;
  unsigned char *got = malloc(cbytes);
  if (!got || cudaMemcpy(got, c3GemmOut(r->gemm), cbytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    wrong = (long long)cbytes;
  else
    wrong = (long long)dataCountWrong(got, wantC, cbytes, 2);
  free(got);
  long long a = checkRecv(r, c, s, sh); /* every rank's, summed */
  return a + (long long)combine(r, (double)wrong, 1);
}

/* A fused scenario: per contender, the GEMM's steps alone, the gathers alone
 * and both, m steps each (the longer side about -t ms), medians of -r runs. */
static int runFused(c3Rank *r, int si, const int *runs, int ref) {
  const c3Scenario *s = &r->sc[si];
  if (s->m % r->n) {
    if (r->print)
      printf("# %s: M %ld is not a multiple of the %d ranks: no rows\n", s->name, s->m, r->n);
    return 0;
  }
  collShape sh;
  c3Shape(s, r->n, &sh);
  int nc = r->args.ncs, R = r->args.runs, rc = -1;
  double g1, c1, b1, x;
  /* the step's sides, from the first contender */
  if (fusedLoop(r, &r->cs[ref], s, &sh, 2, 1, 1, &x, &x, &x) ||
      fusedLoop(r, &r->cs[ref], s, &sh, 5, 1, 0, &g1, &x, &x) ||
      fusedLoop(r, &r->cs[ref], s, &sh, 5, 0, 1, &x, &c1, &b1))
    return -1;
  double step = fmax(g1, c1) / 5;
  long m = step > 0 ? (long)ceil(r->args.targetMs * 1000.0 / step) : 5;
  m = m < 5 ? 5 : m > 2000 ? 2000 : m;
  unsigned char *wantC = NULL;
  if (r->args.check) {
    makeReference(r, s, &sh);
    wantC = fusedReference(r, s);
    if (combine(r, wantC ? 0 : 1, 0) > 0) {
      free(wantC);
      wantC = NULL;
    }
  }
  double *t = calloc((size_t)(R * 5 * nc), sizeof(double));
  if (!t) return -1;
  long long wrong[C3_MAX_CONTENDERS];
  for (int run = 0; run < R; run++)
    for (int i = 0; i < nc; i++) {
      c3Contender *c = &r->cs[i];
      if (!runs[i]) continue;
      double *v = t + (size_t)(i * R + run) * 5;
      if (run == 0 && fusedLoop(r, c, s, &sh, 2, 1, 1, &x, &x, &x)) goto out;
      if (fusedLoop(r, c, s, &sh, m, 1, 0, &v[0], &x, &x) ||
          fusedLoop(r, c, s, &sh, m, 0, 1, &x, &v[1], &x) ||
          fusedLoop(r, c, s, &sh, m, 1, 1, &v[2], &v[3], &v[4]))
        goto out;
      if (run == 0) wrong[i] = wantC ? fusedCheck(r, c, s, &sh, wantC) : -1;
      if (run == 0 && wrong[i] == -2) goto out;
    }
  for (int i = 0; i < nc; i++) {
    if (!runs[i]) continue;
    double col[5][64];
    for (int j = 0; j < 5; j++)
      for (int run = 0; run < R && run < 64; run++) col[j][run] = t[(size_t)(i * R + run) * 5 + j];
    int n = R < 64 ? R : 64;
    c3Row *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof(*row));
    row->scenario = si;
    row->contender = i;
    row->gemms = m;
    row->colls = m;
    row->t.gemm = c3Median(col[0], n);
    row->t.comm = c3Median(col[1], n);
    row->t.gemmTogether = c3Median(col[2], n);
    row->t.commTogether = c3Median(col[3], n);
    row->t.both = c3Median(col[4], n);
    c3Compute(&row->t, &row->m);
    row->wrong = wrong[i];
  }
  rc = 0;
out:
  free(t);
  free(wantC);
  return rc;
}

/* One scenario: rows for the live contenders that run its collective, in
 * their order; the first of them sets the repetition counts (report.c's
 * firstRow). None: no rows (the table says why). */
static int runScenario(c3Rank *r, int si) {
  const c3Scenario *s = &r->sc[si];
  int nc = r->args.ncs, runs[C3_MAX_CONTENDERS], ref = -1;
  for (int i = 0; i < nc; i++) {
    char why[256];
    runs[i] = r->live[i] && !lacks(&r->args.cs[i], s->coll, why, sizeof(why));
    if (runs[i] && ref < 0) ref = i;
  }
  if (ref < 0) return 0;
  if (s->fused) return runFused(r, si, runs, ref);
  collShape sh;
  c3Shape(s, r->n, &sh);
  double gemmUs, commUs;
  if (c3GemmTime(r->gemm, s, &gemmUs)) return -1;
  gemmUs = combine(r, gemmUs, 0);
  if (timeCollective(r, &r->cs[ref], s, &sh, &commUs)) return -1;
  long k, m;
  c3Reps(gemmUs, commUs, r->args.targetMs * 1000.0, s->commShare, &k, &m);
  if (c3GemmCapture(r->gemm, s, k)) return -1;
  if (r->args.check) makeReference(r, s, &sh);

  int R = r->args.runs;
  size_t poison = recvBytesOf(s, &sh, r->rank);
  double *t = calloc((size_t)(R * (1 + 4 * nc)), sizeof(double));
  if (!t) return -1;
  double *g = t, *cm = t + R, *gt = cm + R * nc, *ct = gt + R * nc, *bt = ct + R * nc;
  long long wrong[C3_MAX_CONTENDERS];
  int rc = -1;
  for (int run = 0; run < R; run++) {
    if (gemmAlone(r, &g[run])) goto out;
    for (int i = 0; i < nc; i++) {
      c3Contender *c = &r->cs[i];
      if (!runs[i]) continue;
      if (run == 0) {
        if (issueLoop(c, s, &sh, 3)) goto out;
        if (cudaStreamSynchronize(c->stream) != cudaSuccess) goto out;
      }
      if (commAlone(r, c, s, &sh, m, &cm[i * R + run])) goto out;
      int check = run == 0 && r->args.check;
      if (check && poison && cudaMemset(c->recv, POISON, poison) != cudaSuccess) goto out;
      if (together(r, c, s, &sh, m, &gt[i * R + run], &ct[i * R + run], &bt[i * R + run])) goto out;
      if (run == 0) wrong[i] = check ? checkRecv(r, c, s, &sh) : -1;
    }
  }
  double gMed = c3Median(g, R);
  for (int i = 0; i < nc; i++) {
    if (!runs[i]) continue;
    c3Row *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof(*row));
    row->scenario = si;
    row->contender = i;
    row->gemms = k;
    row->colls = m;
    row->t.gemm = gMed;
    row->t.comm = c3Median(cm + i * R, R);
    row->t.gemmTogether = c3Median(gt + i * R, R);
    row->t.commTogether = c3Median(ct + i * R, R);
    row->t.both = c3Median(bt + i * R, R);
    c3Compute(&row->t, &row->m);
    row->wrong = wrong[i];
    if (r->energy && energyRow(r, &r->cs[i], s, &sh, m, row->t.both, &row->joules)) goto out;
  }
  rc = 0;
out:
  free(t);
  return rc;
}

static void fillResult(c3Rank *r, c3Result *res) {
  memset(res, 0, sizeof(*res));
  res->args = &r->args;
  res->sc = r->sc;
  res->nsc = r->nsc;
  res->cs = r->args.cs;
  res->ncs = r->args.ncs;
  res->rows = r->rows;
  res->nrows = r->nrows;
  res->nranks = r->n;
  res->ncclLacks = ncclBaseLacks;
  snprintf(res->command, sizeof(res->command), "%s", r->command);
  struct cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, r->dev) == cudaSuccess)
    snprintf(res->gpu, sizeof(res->gpu), "%.100s", p.name);
  cudaDriverGetVersion(&res->driverVersion);
  snprintf(res->ncclVersion, sizeof(res->ncclVersion), "none");
  for (int i = 0; i < r->args.ncs; i++)
    if (r->live[i] && r->cs[i].nccl) {
      snprintf(res->ncclVersion, sizeof(res->ncclVersion), "%s", ncclBaseVersion(r->cs[i].nccl));
      break;
    }
}

static int rankMain(c3Rank *r) {
  r->print = r->rank == 0;
  r->dev = r->rank % r->sh->ndev;
  r->shared = r->n > r->sh->ndev;
  C3_CUDA(cudaSetDevice(r->dev));
  C3_CUDA(cudaStreamCreateWithFlags(&r->gemmStream, cudaStreamNonBlocking));
  for (int i = 0; i < 6; i++) C3_CUDA(cudaEventCreate(&r->ev[i]));
  C3_CUDA(cudaMalloc((void **)&r->words, MAXR * sizeof(uint32_t)));
  C3_CUDA(cudaMemset(r->words, 0, MAXR * sizeof(uint32_t)));
  int ok = setupBuffers(r) == 0 &&
           (r->gemm = c3GemmInit(r->gemmStream, r->sc, r->nsc, 77 + (unsigned)r->rank));
  if (combine(r, ok ? 0 : 1, 0) > 0) {
    fprintf(stderr, "dmaccl-c3: rank %d: %s\n", r->rank,
            ok ? "a peer failed to set up" : "cannot set up buffers or cuBLAS");
    return 1;
  }
  makeContenders(r);
  if (r->args.energy) {
    char err[256] = "";
    int dev = r->dev;
    if (r->shared)
      snprintf(err, sizeof(err), "ranks share GPUs (a GPU's counter would count once per rank)");
    else
      r->energy = energyOpen(&dev, 1, err, sizeof(err));
    if (combine(r, r->energy ? 0 : 1, 0) > 0) {
      if (r->print) printf("# no energy figures: %s\n", err[0] ? err : "a peer has no NVML");
      energyClose(r->energy);
      r->energy = NULL;
    }
  }
  c3Result res;
  r->rows = calloc((size_t)(r->nsc * r->args.ncs), sizeof(c3Row));
  if (!r->rows) return 1;
  fillResult(r, &res);
  if (r->print) {
    printf("# dmaccl-c3: %d ranks (one process each), %s, driver %d, NCCL %s\n", r->n, res.gpu,
           res.driverVersion, res.ncclVersion);
    if (r->shared)
      printf("# the ranks share %d GPUs (rank r on GPU r %% %d): a functional check; the times "
             "are not those of one GPU per rank\n",
             r->sh->ndev, r->sh->ndev);
    printf("# %s\n# medians of %d runs; times are the slowest rank's; the longer isolated loop "
           "lasts about %.1f ms\n",
           r->command, r->args.runs, r->args.targetMs);
    printf("# fraction = (realized - 1) / (ideal - 1), ideal = (gemm + comm) / max(gemm, comm), "
           "realized = (gemm + comm) / both\n");
  }
  int rc = 0;
  for (int si = 0; si < r->nsc && rc == 0; si++) {
    if (r->print)
      fprintf(stderr, "dmaccl-c3: scenario %s (%d/%d)\n", r->sc[si].name, si + 1, r->nsc);
    if (runScenario(r, si)) {
      fprintf(stderr, "dmaccl-c3: rank %d: scenario %s failed\n", r->rank, r->sc[si].name);
      rc = 1;
      break;
    }
    if (r->print) {
      res.rows = r->rows;
      res.nrows = r->nrows;
      c3PrintScenario(stdout, &res, si);
    }
  }
  long long wrongRows = 0;
  for (int i = 0; i < r->nrows; i++) wrongRows += r->rows[i].wrong > 0;
  if (r->print && rc == 0) {
    res.nrows = r->nrows;
    c3PrintSummary(stdout, &res);
    printf("# %s\n", wrongRows
                         ? "WRONG DATA in some rows (#wrong > 0)"
                         : (r->args.check ? "every checked row: #wrong 0" : "not checked (-c 0)"));
    if (r->args.json[0] && c3WriteJson(&res, r->args.json) == 0)
      printf("# wrote %s\n", r->args.json);
  }
  for (int i = 0; i < r->args.ncs; i++)
    if (r->live[i]) c3ContenderFini(&r->cs[i]);
  c3GemmFini(r->gemm);
  cudaFree(r->words);
  energyClose(r->energy);
  for (int q = 0; q < r->n; q++) free(r->pool[q]);
  free(r->scratch);
  free(r->want);
  return rc ? rc : wrongRows ? 1 : 0;
}

/* One rank process (forked by ranksRun). */
static int rankEntry(int rank, void *arg) {
  c3Rank *r = arg; /* the child's own copy */
  r->rank = rank;
  return rankMain(r);
}

/* The GPU count, from a child process: the parent must not touch CUDA
 * before it forks the ranks. */
static int countGpus(c3Shared *sh) {
  fflush(stdout);
  pid_t p = fork();
  if (p == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    sh->ndev = n;
    _exit(0);
  }
  int st = 0;
  if (p < 0 || waitpid(p, &st, 0) < 0) return 0;
  return sh->ndev;
}

static void listPlan(const c3Args *a, const c3Scenario *sc, int nsc, unsigned colls) {
  printf("# %d scenarios from %s\n", nsc, a->file);
  printf("# %-22s %6s %6s %6s %12s %-13s %8s %5s\n", "name", "M", "N", "K", "GFLOP/GEMM", "coll",
         "size", "comm");
  for (int i = 0; i < nsc; i++) {
    char size[32];
    double gf = 2.0 * (double)sc[i].m * (double)sc[i].n * (double)sc[i].k / 1e9;
    planSizeString(sc[i].size, size, sizeof(size));
    char share[16];
    snprintf(share, sizeof(share), "%.0f%%", 100 * sc[i].commShare);
    printf("  %-22s %6ld %6ld %6ld %12.2f %-13s %8s %5s\n", sc[i].name, sc[i].m, sc[i].n, sc[i].k,
           gf, collTable[sc[i].coll].name, size, sc[i].fused ? "fused" : share);
  }
  printf("# %d contenders:", a->ncs);
  for (int i = 0; i < a->ncs; i++) printf(" %s", a->cs[i].name);
  printf("\n");
  /* what each contender leaves out, and the selection strings */
  for (int i = 0; i < a->ncs; i++) {
    const c3ContenderSpec *s = &a->cs[i];
    for (int c = 0; c < COLL_NUM; c++) {
      char buf[256];
      const char *why = colls & (1u << c) ? lacks(s, c, buf, sizeof(buf)) : NULL;
      if (why) printf("# no %s rows for %s: %s\n", s->name, collTable[c].name, why);
    }
    char sel[512];
    if (s->kind == C3_DMACCL && c3Selection(s, colls, sel, sizeof(sel)) == 0 && sel[0])
      printf("# %s: selection '%s'\n", s->name, sel);
  }
}

int main(int argc, char **argv) {
  static c3Rank proto;
  char err[512];
#ifdef DMACCL_C3_SCENARIOS
  const char *defaultFile = DMACCL_C3_SCENARIOS;
#else
  const char *defaultFile = NULL;
#endif
  int pr = c3ParseArgs(argc, argv, defaultFile, &proto.args, err, sizeof(err));
  if (pr == 1) {
    c3Usage(stdout);
    return 0;
  }
  if (pr < 0) {
    fprintf(stderr, "dmaccl-c3: %s\n", err);
    return 2;
  }
  char *text = c3ReadFile(proto.args.file, err, sizeof(err));
  if (!text) {
    fprintf(stderr, "dmaccl-c3: %s\n", err);
    return 2;
  }
  proto.nsc = c3ParseScenarios(text, proto.args.only, proto.sc, C3_MAX_SCENARIOS, err, sizeof(err));
  free(text);
  if (proto.nsc < 0) {
    fprintf(stderr, "dmaccl-c3: %s: %s\n", proto.args.file, err);
    return 2;
  }
  size_t off = 0;
  for (int i = 0; i < argc && off + 2 < sizeof(proto.command); i++)
    off += (size_t)snprintf(proto.command + off, sizeof(proto.command) - off, "%s%s", i ? " " : "",
                            argv[i]);
  for (int i = 0; i < proto.nsc; i++) proto.colls |= 1u << proto.sc[i].coll;
  if (proto.args.list) {
    listPlan(&proto.args, proto.sc, proto.nsc, proto.colls);
    return 0;
  }
  if (proto.args.traffic) { /* computed from the schedules: no CUDA call */
    c3PrintTraffic(stdout, &proto.args, proto.sc, proto.nsc,
                   proto.args.procs ? proto.args.procs : 2);
    return 0;
  }

  c3Shared *sh =
      mmap(NULL, sizeof(c3Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    perror("dmaccl-c3: mmap");
    return 1;
  }
  memset(sh, 0, sizeof(*sh));
  int ndev = countGpus(sh);
  int n = proto.args.procs ? proto.args.procs : ndev;
  if (ndev == 0) {
    fprintf(stderr, "dmaccl-c3: no CUDA device: the GEMMs and collectives need GPUs "
                    "(--list shows the plan without one)\n");
    return 2;
  }
  if (n > MAXR) { /* more ranks than GPUs share them (rankMain) */
    fprintf(stderr, "dmaccl-c3: -p %d: at most %d ranks\n", n, MAXR);
    return 2;
  }
  ranksBarrierInit(&sh->barrier, n);
  proto.sh = sh;
  proto.n = n;
  return ranksRun(n, rankEntry, &proto, "dmaccl-c3");
}
