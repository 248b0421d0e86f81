/*
 * dmaccl-c3: compute and communication together (C3), with ConCCL's metrics
 * (DESIGN.md). One process per GPU, forked before any CUDA call, as PyTorch,
 * vLLM and SGLang run. On every GPU a cuBLAS bf16 GEMM stream and a
 * collective stream run:
 *   GEMM alone       k GEMMs (one CUDA graph launch)
 *   collective alone m collectives issued one by one on the collective stream
 *   both             the two loops started together; the time until both end
 * k and m come from one GEMM's and one collective's time (the first
 * contender's, the same counts for every contender: the same work), so the
 * longer side lasts -t ms and communication makes up the scenario's share of
 * the isolated time. Every time is the slowest rank's; each is a median over
 * -r runs, and the runs interleave the contenders so drift hits them alike.
 *
 * Files: scenario.c (inputs), metrics.c (ConCCL's metrics), report.c (table
 * and JSON), gemm.c (cuBLAS), contender.c (NCCL settings, dmaccl algorithms),
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
  int n, rank, print;
  c3Shared *sh;
  c3Contender cs[C3_MAX_CONTENDERS];
  int live[C3_MAX_CONTENDERS]; /* made on every rank */
  cudaStream_t gemmStream;
  c3Gemm *gemm;
  void *send, *recv;
  size_t bufBytes;
  unsigned char *pool[MAXR]; /* every rank's send data, for checking */
  unsigned char *scratch;
  cudaEvent_t ev[4];
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

/* Bytes of one rank's send buffer / receive buffer for a scenario. */
static size_t recvBytes(const c3Rank *r, const c3Scenario *s) {
  return c3Count(s, r->n) * 2 * (size_t)r->n;
}

static int setupBuffers(c3Rank *r) {
  r->bufBytes = 0;
  for (int i = 0; i < r->nsc; i++)
    if (recvBytes(r, &r->sc[i]) > r->bufBytes) r->bufBytes = recvBytes(r, &r->sc[i]);
  if (r->args.check) {
    for (int q = 0; q < r->n; q++) {
      if (!(r->pool[q] = malloc(r->bufBytes))) return -1;
      dataFillRandom(r->pool[q], r->bufBytes, 4242 + (uint64_t)q);
    }
    if (!(r->scratch = malloc(r->bufBytes))) return -1;
  }
  unsigned char *mine = r->pool[r->rank];
  if (!mine) {
    if (!(mine = malloc(r->bufBytes))) return -1;
    dataFillRandom(mine, r->bufBytes, 4242 + (uint64_t)r->rank);
  }
  C3_CUDA(cudaMalloc(&r->send, r->bufBytes));
  C3_CUDA(cudaMalloc(&r->recv, r->bufBytes));
  C3_CUDA(cudaMemcpy(r->send, mine, r->bufBytes, cudaMemcpyHostToDevice));
  if (!r->pool[r->rank]) free(mine);
  return 0;
}

/* Every contender on every rank; one that fails anywhere is left out
 * everywhere, with the reason (NCCL missing, an unknown setting). */
static void makeContenders(c3Rank *r) {
  for (int i = 0; i < r->args.ncs; i++) {
    const c3ContenderSpec *s = &r->args.cs[i];
    char err[256] = "";
    if (r->rank == 0) r->sh->idOk[i] = c3ContenderMakeId(s, &r->sh->ids[i], err, sizeof(err)) == 0;
    barrier(r);
    int ok = r->sh->idOk[i] && c3ContenderInit(&r->cs[i], s, r->n, r->rank, &r->sh->ids[i], r->send,
                                               r->recv, r->bufBytes, err, sizeof(err)) == 0;
    if (combine(r, ok ? 0 : 1, 0) > 0) {
      if (r->print) printf("# no %s: %s\n", s->name, err[0] ? err : "a peer failed");
      c3ContenderFini(&r->cs[i]);
      continue;
    }
    r->live[i] = 1;
  }
}

static int issueLoop(c3Contender *c, int coll, size_t count, long m) {
  for (long i = 0; i < m; i++)
    if (c3ContenderIssue(c, coll, count)) return -1;
  return 0;
}

/* Time of one collective: the mean of a few after warm-up, slowest rank. */
static int timeCollective(c3Rank *r, c3Contender *c, const c3Scenario *s, double *us) {
  size_t count = c3Count(s, r->n);
  if (issueLoop(c, s->coll, count, 3)) return -1;
  C3_CUDA(cudaStreamSynchronize(c->stream));
  int reps = s->size >= ((size_t)256 << 20) ? 4 : 20;
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], c->stream));
  if (issueLoop(c, s->coll, count, reps)) return -1;
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

static int commAlone(c3Rank *r, c3Contender *c, const c3Scenario *s, long m, double *us) {
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], c->stream));
  if (issueLoop(c, s->coll, c3Count(s, r->n), m)) return -1;
  C3_CUDA(cudaEventRecord(r->ev[1], c->stream));
  C3_CUDA(cudaStreamSynchronize(c->stream));
  *us = combine(r, elapsedUs(r->ev[0], r->ev[1]), 0);
  return 0;
}

/* Both loops from one start event: the GEMM graph first (one launch), then
 * the collectives; each side's own end and the later of the two. */
static int together(c3Rank *r, c3Contender *c, const c3Scenario *s, long m, double *gemmUs,
                    double *commUs, double *bothUs) {
  barrier(r);
  C3_CUDA(cudaEventRecord(r->ev[0], r->gemmStream));
  C3_CUDA(cudaStreamWaitEvent(c->stream, r->ev[0], 0));
  if (c3GemmLaunch(r->gemm)) return -1;
  if (issueLoop(c, s->coll, c3Count(s, r->n), m)) return -1;
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

/* Wrong elements of this rank's receive buffer after an overlapped loop
 * into a poisoned buffer, summed over ranks. */
static long long checkRecv(c3Rank *r, c3Contender *c, const c3Scenario *s) {
  size_t blk = c3Count(s, r->n) * 2, bytes = blk * (size_t)r->n;
  long long wrong = 0;
  if (cudaMemcpy(r->scratch, c->recv, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    fprintf(stderr, "dmaccl-c3: reading back the receive buffer failed\n");
    wrong = (long long)bytes;
  } else {
    for (int q = 0; q < r->n; q++) {
      const unsigned char *want =
          r->pool[q] + (s->coll == C3_ALLGATHER ? 0 : (size_t)r->rank * blk);
      wrong += (long long)dataCountWrong(r->scratch + (size_t)q * blk, want, blk, 2);
    }
  }
  return (long long)combine(r, (double)wrong, 1);
}

/* Energy of one overlapped iteration, all GPUs: loops for at least 500 ms
 * (five NVML counter ticks on H200). */
static int energyRow(c3Rank *r, c3Contender *c, const c3Scenario *s, long m, double bothUs,
                     double *joules) {
  long iters = (long)ceil(500000.0 / bothUs);
  if (iters < 1) iters = 1;
  double g, k, b;
  barrier(r);
  double e0 = energyRead(r->energy);
  for (long i = 0; i < iters; i++)
    if (together(r, c, s, m, &g, &k, &b)) return -1;
  double e1 = energyRead(r->energy);
  *joules = combine(r, (e1 - e0) / (double)iters, 1);
  return 0;
}

static int runScenario(c3Rank *r, int si) {
  const c3Scenario *s = &r->sc[si];
  int ref = 0;
  while (ref < r->args.ncs && !r->live[ref]) ref++;
  if (ref == r->args.ncs) return -1;
  double gemmUs, commUs;
  if (c3GemmTime(r->gemm, s, &gemmUs)) return -1;
  gemmUs = combine(r, gemmUs, 0);
  if (timeCollective(r, &r->cs[ref], s, &commUs)) return -1;
  long k, m;
  c3Reps(gemmUs, commUs, r->args.targetMs * 1000.0, s->commShare, &k, &m);
  if (c3GemmCapture(r->gemm, s, k)) return -1;

  int R = r->args.runs, nc = r->args.ncs;
  double *t = calloc((size_t)(R * (1 + 4 * nc)), sizeof(double));
  if (!t) return -1;
  double *g = t, *cm = t + R, *gt = cm + R * nc, *ct = gt + R * nc, *bt = ct + R * nc;
  long long wrong[C3_MAX_CONTENDERS];
  int rc = -1;
  for (int run = 0; run < R; run++) {
    if (gemmAlone(r, &g[run])) goto out;
    for (int i = 0; i < nc; i++) {
      c3Contender *c = &r->cs[i];
      if (!r->live[i]) continue;
      if (run == 0) {
        if (issueLoop(c, s->coll, c3Count(s, r->n), 3)) goto out;
        if (cudaStreamSynchronize(c->stream) != cudaSuccess) goto out;
      }
      if (commAlone(r, c, s, m, &cm[i * R + run])) goto out;
      int check = run == 0 && r->args.check;
      if (check && cudaMemset(c->recv, POISON, recvBytes(r, s)) != cudaSuccess) goto out;
      if (together(r, c, s, m, &gt[i * R + run], &ct[i * R + run], &bt[i * R + run])) goto out;
      if (run == 0) wrong[i] = check ? checkRecv(r, c, s) : -1;
    }
  }
  double gMed = c3Median(g, R);
  for (int i = 0; i < nc; i++) {
    if (!r->live[i]) continue;
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
    if (r->energy && energyRow(r, &r->cs[i], s, m, row->t.both, &row->joules)) goto out;
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
  snprintf(res->command, sizeof(res->command), "%s", r->command);
  struct cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, r->rank) == cudaSuccess)
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
  C3_CUDA(cudaSetDevice(r->rank));
  C3_CUDA(cudaStreamCreateWithFlags(&r->gemmStream, cudaStreamNonBlocking));
  for (int i = 0; i < 4; i++) C3_CUDA(cudaEventCreate(&r->ev[i]));
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
    int dev = r->rank;
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
  energyClose(r->energy);
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

static void listPlan(const c3Args *a, const c3Scenario *sc, int nsc) {
  printf("# %d scenarios from %s\n", nsc, a->file);
  printf("# %-22s %6s %6s %6s %12s %-9s %8s %5s\n", "name", "M", "N", "K", "GFLOP/GEMM", "coll",
         "size", "comm");
  for (int i = 0; i < nsc; i++) {
    char size[32];
    double gf = 2.0 * (double)sc[i].m * (double)sc[i].n * (double)sc[i].k / 1e9;
    planSizeString(sc[i].size, size, sizeof(size));
    printf("  %-22s %6ld %6ld %6ld %12.2f %-9s %8s %4.0f%%\n", sc[i].name, sc[i].m, sc[i].n,
           sc[i].k, gf, c3CollName(sc[i].coll), size, 100 * sc[i].commShare);
  }
  printf("# %d contenders:", a->ncs);
  for (int i = 0; i < a->ncs; i++) printf(" %s", a->cs[i].name);
  printf("\n");
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
  if (proto.args.list) {
    listPlan(&proto.args, proto.sc, proto.nsc);
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
  if (n > ndev || n > MAXR) {
    fprintf(stderr, "dmaccl-c3: -p %d but %d GPUs\n", n, ndev);
    return 2;
  }
  ranksBarrierInit(&sh->barrier, n);
  proto.sh = sh;
  proto.n = n;
  return ranksRun(n, rankEntry, &proto, "dmaccl-c3");
}
