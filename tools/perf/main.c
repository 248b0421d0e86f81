/*
 * dmaccl-perf: nccl-tests-style benchmark of every dmaccl collective (the
 * table of tools/common/colls.h, with nccl-tests' sendrecv ring of
 * Send/Recv as one more row), every algorithm each takes, with NCCL's SM
 * path (its call, or vLLM's emulation of the V forms) and NCCL's copy-engine
 * path as baseline rows in the same run, and the kernels each operation
 * launched (CUPTI, a pass before the sweep). With no GPU it runs on the host
 * executor (ranks as threads, or as processes with -p).
 *
 * Timing as nccl-tests: warm-up, then `iters` back-to-back operations issued
 * on all ranks (grouped), or one CUDA graph of them launched -G times; host
 * clock around issue + final synchronization; time per operation = elapsed
 * / operations. With -c N, N more operations per row run on random data into
 * poisoned outputs and every byte is checked.
 *
 * With -p N the tool forks N processes before any CUDA call, one rank (one
 * GPU) each, as PyTorch, vLLM or SGLang run; NCCL's baselines then run one
 * rank per process too. Each process times its own loop after a barrier;
 * rank 0 prints (-a) rank 0's, the average, the fastest or the slowest
 * rank's time, as nccl-tests with MPI.
 *
 * Files: ops.c issues and times, report.c prints and writes JSON, energy.c
 * reads NVML, breakdown.c reads CUPTI, baseline_nccl.c drives NCCL.
 */
#include "bench.h"
#include "common/data.h"
#include "common/ranks.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int setupBuffers(bench *b) {
  size_t maxBytes = b->args.maxBytes;
  int exact = 0;
  for (int c = 0; c < COLL_NUM; c++)
    exact |= (b->args.colls & PERF_COLL(c)) && perfWantsExact(b, c);
  if (b->gpu) b->scratch = malloc(maxBytes);
  if (!(b->want = malloc(maxBytes))) return -1;
  for (int r = 0; r < b->n; r++) {
    b->pool[r] = malloc(maxBytes);
    if (!b->pool[r] || (b->gpu && !b->scratch)) return -1;
    dataFillRandom(b->pool[r], maxBytes, 1234 + (uint64_t)r);
    /* finite, non-zero floats: every reduction's result is defined to the bit */
    collSanitize(b->args.type, b->pool[r], maxBytes / b->tsize);
    if (exact) {
      if (!(b->exact[r] = malloc(maxBytes))) return -1;
      perfExactData(b, b->exact[r], b->pool[r], maxBytes);
    }
  }
  for (int l = 0; l < b->nlocal; l++) {
    int r = b->first + l;
    if (b->mp && !b->gpu) continue; /* shared memory per contender (makeDmaccl) */
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[l]));
      CUDA_CHECK(cudaStreamCreateWithFlags(&b->streams[l], cudaStreamNonBlocking));
      CUDA_CHECK(cudaMalloc(&b->send[l], maxBytes));
      CUDA_CHECK(cudaMalloc(&b->recv[l], maxBytes));
      CUDA_CHECK(cudaMemcpy(b->send[l], b->pool[r], maxBytes, cudaMemcpyHostToDevice));
    } else {
      b->send[l] = b->pool[r]; /* never written by a collective */
      if (!(b->recv[l] = malloc(maxBytes))) return -1;
    }
  }
  return 0;
}

static int makeDmaccl(bench *b, contender *c, const char *algo) {
  memset(c, 0, sizeof(*c));
  snprintf(c->name, sizeof(c->name), "%s", algo);
  c->kind = KIND_DMACCL;
  char sel[512];
  /* the algorithm for every collective that takes it (perfTakes), in the
   * library's names: a row whose algorithm another row's entry picks
   * (sendrecv: broadcast's, collInfo.select) adds no entry */
  size_t used = 0;
  sel[0] = 0;
  for (int k = 0; k < COLL_NUM; k++) {
    snprintf(c->name, sizeof(c->name), "%s", algo);
    if (strcmp(collTable[k].select, collTable[k].name) == 0 && perfTakes(b, c, k) &&
        used + 40 < sizeof(sel))
      used += (size_t)snprintf(sel + used, sizeof(sel) - used, "%s%s:%s", used ? ";" : "",
                               collTable[k].name, algo);
  }
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = b->gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  cfg.algorithm = strcmp(algo, "auto") == 0 ? NULL : sel;
  dmacclResult_t rc;
  if (!b->mp) {
    rc = dmacclCommInitAll(c->comms, b->n, b->gpu ? b->devs : NULL, &cfg);
  } else {
    static int made = 0; /* contenders made so far: each gets its own id */
    dmacclUniqueId *id = &b->sh->ids[made++];
    if (b->first == 0) dmacclGetUniqueId(id);
    perfBarrier(b);
    rc = dmacclCommInitRank(&c->comms[0], b->n, *id, b->first, &cfg);
  }
  if (rc != dmacclSuccess) {
    fprintf(stderr, "dmaccl-perf: rank %d: init: %s\n", b->first, dmacclCommGetLastError(NULL));
    return -1;
  }
  for (int l = 0; l < b->nlocal; l++) {
    c->send[l] = b->send[l];
    c->recv[l] = b->recv[l];
  }
  if (b->mp && !b->gpu) {
    /* Host executor across processes: buffers must be shared memory. */
    size_t maxBytes = b->args.maxBytes;
    if (dmacclMemAlloc(c->comms[0], maxBytes, &c->send[0]) != dmacclSuccess ||
        dmacclMemAlloc(c->comms[0], maxBytes, &c->recv[0]) != dmacclSuccess) {
      fprintf(stderr, "dmaccl-perf: dmacclMemAlloc: %s\n", dmacclCommGetLastError(c->comms[0]));
      return -1;
    }
    memcpy(c->send[0], perfInput(b, b->first), maxBytes);
    c->ownBuffers = c->ownSend = 1;
  }
  return 0;
}

/* A baseline row set; a missing or failing NCCL is a notice, not an error
 * (every rank agrees, so no rank waits for a peer that gave up). */
static void makeNccl(bench *b, int kind) {
  char err[256] = "";
  int ce = kind == KIND_NCCL_CE;
  ncclBase *nb = NULL;
  if (!b->mp) {
    nb = ncclBaseInit(b->n, b->devs, ce, 0, err, sizeof(err));
  } else {
    if (b->first == 0)
      b->sh->okId[kind] = ncclBaseMakeId(b->sh->ncclId[kind], err, sizeof(err)) == 0;
    perfBarrier(b);
    if (b->sh->okId[kind])
      nb = ncclBaseInitRank(b->n, b->first, b->sh->ncclId[kind], ce, 0, err, sizeof(err));
  }
  contender *c = &b->cs[b->nc];
  memset(c, 0, sizeof(*c));
  snprintf(c->name, sizeof(c->name), "%s", perfKindName[kind]);
  c->kind = kind;
  c->nccl = nb;
  int ok = nb != NULL;
  if (ok && ce) {
    ok = ncclBaseAllocBuffers(nb, b->args.maxBytes, c->send, c->recv, err, sizeof(err)) == 0;
    c->ownSend = 1;
    for (int l = 0; ok && l < b->nlocal; l++)
      ok = cudaSetDevice(b->devs[l]) == cudaSuccess &&
           cudaMemcpy(c->send[l], perfInput(b, b->first + l), b->args.maxBytes,
                      cudaMemcpyHostToDevice) == cudaSuccess;
  } else if (ok) {
    for (int l = 0; l < b->nlocal; l++) {
      c->send[l] = b->send[l];
      c->recv[l] = b->recv[l];
    }
  }
  perfStat s;
  perfShare(b, ok ? 0 : 1, &s);
  if (s.v[PERF_AVG_MAX] > 0) {
    if (b->print)
      printf("# no %s baseline: %s%s\n", c->name, err[0] ? err : "a peer failed",
             b->shared ? " (the ranks share GPUs)" : "");
    ncclBaseFini(nb);
    return;
  }
  b->nc++;
}

/* Puts the input that collective coll is checked on (perfWantsExact) into
 * every send buffer: b->send and the contenders' own send buffers. */
static int useData(bench *b, int coll) {
  int exact = perfWantsExact(b, coll);
  if (exact == b->useExact) return 0;
  b->useExact = exact;
  size_t bytes = b->args.maxBytes;
  for (int l = 0; l < b->nlocal; l++) {
    const unsigned char *in = perfInput(b, b->first + l);
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[l]));
      CUDA_CHECK(cudaMemcpy(b->send[l], in, bytes, cudaMemcpyHostToDevice));
    } else if (!b->mp) {
      b->send[l] = (void *)in; /* never written by a collective */
    }
    for (int i = 0; i < b->nc; i++) {
      contender *c = &b->cs[i];
      if (!c->ownSend)
        c->send[l] = b->send[l];
      else if (b->gpu)
        CUDA_CHECK(cudaMemcpy(c->send[l], in, bytes, cudaMemcpyHostToDevice));
      else
        memcpy(c->send[l], in, bytes);
    }
  }
  for (int i = 0; i < b->nc; i++)
    if (b->cs[i].kind == KIND_DMACCL) perfFreeRequests(b, &b->cs[i]); /* old buffers */
  return 0;
}

static size_t kernIndex(const bench *b, int coll, int k, int contender, int inPlace) {
  return (((size_t)coll * (size_t)b->nsizes + (size_t)k) * (size_t)b->nc + (size_t)contender) * 2 +
         (size_t)inPlace;
}

/* CUPTI detaches (bdFini) once the library's threads are idle. A detach
 * while a dmaccl progress thread made a CUDA call crashed that thread
 * inside libcupti (2x H100, 2026-11-27, from a core: the thread's first
 * cudaThreadExchangeStreamCaptureMode, in cudaComplete as it watched
 * operations, right after the kernel pass; docs/results/split-2xh100/),
 * though bdFini detaches from a CUDA call's exit callsite as CUPTI's
 * documentation says. A progress thread makes CUDA calls only while it
 * watches operations not yet seen complete, at most every 100 ms: after
 * every contender's work is synchronized (dmacclCommSynchronize covers
 * the channels too), three of its periods leave it idle. */
static void detachCupti(bench *b) {
  for (int i = 0; i < b->nc; i++) perfSyncAll(b, &b->cs[i]);
  usleep(300000);
  bdFini();
}

/* --kernels, before the timed sweep: CUPTI slows every call while it
 * records, so the sweep never runs under it. Every row of the sweep (every
 * process runs every one): an operation, then KERNEL_TRACE_REPS traced ones. */
static int kernelPass(bench *b) {
  if (!b->args.kernels) return 0;
  if (!b->gpu) {
    snprintf(b->kernWhy, sizeof(b->kernWhy), "they need GPUs (CUPTI)");
    return 0;
  }
  char err[256] = "";
  int bad = bdInit(err, sizeof(err)) != 0;
  perfStat s;
  perfShare(b, bad, &s);
  if (s.v[PERF_AVG_MAX] > 0) {
    snprintf(b->kernWhy, sizeof(b->kernWhy), "%s", err[0] ? err : "a peer has no CUPTI");
    if (!bad) bdFini();
    return 0;
  }
  b->kern = calloc(kernIndex(b, COLL_NUM, 0, 0, 0), sizeof(perfKernels));
  if (!b->kern) return -1;
  int tty = isatty(STDOUT_FILENO);
  for (int coll = 0; coll < COLL_NUM; coll++) {
    if (!(b->args.colls & PERF_COLL(coll))) continue;
    if (useData(b, coll)) return -1;
    int k = 0;
    for (size_t size = b->args.minBytes; size; size = perfNextSize(&b->args, size), k++) {
      if (b->print && !tty)
        fprintf(stderr, "dmaccl-perf: kernels (CUPTI): %s %zu B (%d/%d)\n", collTable[coll].name,
                size, k + 1, b->nsizes);
      collShape sh;
      collVArrays va;
      size_t count =
          perfShape((collId)coll, size, b->n, b->args.root, b->args.uneven, b->tsize, &sh, &va);
      int places = (collTable[coll].flags & COLL_IN_PLACE) && b->args.inPlace ? 2 : 1;
      for (int ip = 0; ip < places; ip++)
        for (int i = 0; i < b->nc; i++) {
          if (!perfTakes(b, &b->cs[i], coll)) continue;
          int rc = perfKernelsRow(b, &b->cs[i], coll, count, ip, KERNEL_TRACE_REPS,
                                  &b->kern[kernIndex(b, coll, k, i, ip)]);
          if (rc < 0) return -1; /* the program ends: no detach while work may still run */
          if (rc > 0) {
            detachCupti(b);
            snprintf(b->kernWhy, sizeof(b->kernWhy), "CUPTI failed while tracing");
            return 0;
          }
        }
    }
  }
  detachCupti(b);
  b->kernOk = 1;
  return 0;
}

static perfRow *newRow(bench *b) {
  if (b->nrows == b->caprows) {
    size_t cap = b->caprows ? 2 * b->caprows : 256;
    perfRow *v = realloc(b->rows, cap * sizeof(perfRow));
    if (!v) return NULL;
    b->rows = v, b->caprows = cap;
  }
  perfRow *r = &b->rows[b->nrows++];
  memset(r, 0, sizeof(*r));
  r->best = -1;
  return r;
}

/* One size: every contender, out of place then in place; -1 on error. */
static int runSize(bench *b, int cycle, int coll, int k, size_t size, int *failures) {
  collShape sh;
  collVArrays va;
  size_t count =
      perfShape((collId)coll, size, b->n, b->args.root, b->args.uneven, b->tsize, &sh, &va);
  size_t bytes = collSizeBytes((collId)coll, &sh, 0, b->tsize);
  size_t first = b->nrows;
  int places = (collTable[coll].flags & COLL_IN_PLACE) && b->args.inPlace ? 2 : 1;
  for (int ip = 0; ip < places; ip++) {
    size_t firstOfPlace = b->nrows;
    for (int i = 0; i < b->nc; i++) {
      contender *c = &b->cs[i];
      if (!perfTakes(b, c, coll)) continue; /* an algorithm this collective does not take */
      cudaGraphExec_t graphs[MAXR] = {0};
      perfRow *r = newRow(b);
      if (!r) return -1;
      r->cycle = cycle, r->coll = coll, r->inPlace = ip, r->contender = i;
      r->bytes = bytes, r->count = count;
      if (b->kernOk) r->hasKernels = 1, r->kern = b->kern[kernIndex(b, coll, k, i, ip)];
      if (perfMeasure(b, c, coll, count, ip, r, graphs)) return -1;
      cudaGraphExec_t *g = b->args.graphs ? graphs : NULL;
      r->wrong = b->args.check ? perfCheck(b, c, coll, count, ip, g) : 0;
      if (r->wrong < 0) return -1;
      *failures += r->wrong > 0;
      if (b->energy && !ip &&
          perfEnergyRow(b, c, coll, count, r->us.v[PERF_AVG_MEAN], g, &r->joules, &r->watts))
        return -1;
      perfFreeGraphs(b, graphs);
    }
    /* speedup of every dmaccl row over the best baseline of this size */
    for (size_t i = firstOfPlace; i < b->nrows; i++) {
      perfRow *r = &b->rows[i];
      if (b->cs[r->contender].kind != KIND_DMACCL) continue;
      for (size_t j = firstOfPlace; j < b->nrows; j++) {
        perfRow *base = &b->rows[j];
        if (b->cs[base->contender].kind == KIND_DMACCL) continue;
        double s = base->us.v[b->args.average] / r->us.v[b->args.average];
        if (r->best < 0 || s < r->speedup) r->speedup = s, r->best = base->contender;
      }
    }
  }
  if (b->print) perfPrintSize(b, first);
  return 0;
}

/* After the sweep: traced operations (CUPTI), for --breakdown on every
 * contender; and the check of which path NCCL's copy-engine baseline took,
 * from the kernel pass when it ran, else from one traced operation per size. */
static void tracePass(bench *b) {
  int ce = 0;
  for (int i = 0; i < b->nc; i++) ce |= b->cs[i].kind == KIND_NCCL_CE;
  int ceTrace = ce && !b->kernOk;
  int want = b->args.breakdown || ceTrace;
  double ceSeen = 0, ceKernels = 0, ceCopies = 0;
  if (!b->gpu) {
    if (b->args.breakdown && b->print) printf("# --breakdown needs the cuda executor\n");
    want = 0;
  }
  char err[256];
  if (want && bdInit(err, sizeof(err))) {
    if (b->print)
      printf("# no breakdown%s: %s\n", b->args.breakdown ? "" : " or nccl-ce path check", err);
    return;
  }
  for (size_t i = 0; want && i < b->nrows; i++) {
    perfRow *r = &b->rows[i];
    int isCe = b->cs[r->contender].kind == KIND_NCCL_CE;
    if (r->cycle != 0 || r->inPlace || !(b->args.breakdown || (isCe && ceTrace))) continue;
    if (perfBreakdownRow(b, &b->cs[r->contender], r->coll, r->count, b->args.breakdown ? 7 : 1,
                         &r->bd) == 0) {
      r->hasBreakdown = b->args.breakdown;
      if (isCe) ceSeen++, ceKernels += r->bd.kernels, ceCopies += r->bd.copies;
    }
  }
  if (want) detachCupti(b);
  for (size_t i = 0; !ceTrace && i < b->nrows; i++) {
    const perfRow *r = &b->rows[i];
    if (r->cycle != 0 || r->inPlace || !r->hasKernels) continue;
    if (b->cs[r->contender].kind != KIND_NCCL_CE) continue;
    /* per rank -> all ranks, as the breakdown's counts */
    ceSeen++, ceKernels += r->kern.kernels * b->n, ceCopies += r->kern.copies * b->n;
  }
  if (!b->print) return;
  if (b->args.breakdown && b->gpu) perfPrintBreakdown(b);
  if (ceSeen > 0)
    printf("# nccl-ce path check (CUPTI, %s): %.0f kernels and %.0f copies over %.0f sizes: %s\n",
           ceTrace ? "one operation per size" : "the kernel pass, per operation", ceKernels,
           ceCopies, ceSeen,
           ceKernels == 0 ? "copy-engine path at every size"
                          : "NCCL launched kernels: not (only) the copy-engine path");
}

static int benchMain(bench *b) {
  int ndev = 0;
  if (b->args.executor != PERF_EXEC_HOST &&
      (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)) {
    if (b->args.executor == PERF_EXEC_CUDA || b->args.graphs) {
      fprintf(stderr, "dmaccl-perf: %s but no CUDA device is present\n",
              b->args.graphs ? "-G (CUDA graphs)" : "-B cuda");
      return 2;
    }
    ndev = 0;
    if (b->first == 0) printf("# no GPU found: running on the host executor\n");
  }
  b->gpu = ndev > 0 && b->args.executor != PERF_EXEC_HOST;
  b->print = b->first == 0;
  if (!b->mp) b->n = b->nlocal = b->args.nranks ? b->args.nranks : (b->gpu ? ndev : 4);
  if (b->args.root >= b->n) {
    fprintf(stderr, "dmaccl-perf: --root %d but only %d ranks\n", b->args.root, b->n);
    return 2;
  }
  if (b->n > MAXR) {
    fprintf(stderr, "dmaccl-perf: %d ranks but at most %d\n", b->n, MAXR);
    return 2;
  }
  for (int c = 0; c < COLL_NUM; c++)
    if ((b->args.colls & PERF_COLL(c)) && (collTable[c].flags & COLL_VECTOR) &&
        b->n > COLL_MAX_RANKS) {
      fprintf(stderr, "dmaccl-perf: %s with %d ranks: the V forms' layouts take at most %d\n",
              collTable[c].name, b->n, COLL_MAX_RANKS);
      return 2;
    }
  /* sendrecv on one rank would be a Send to oneself, which the library
   * refuses: its rows are skipped, and the header says why */
  for (int c = 0; c < COLL_NUM; c++)
    if ((b->args.colls & PERF_COLL(c)) && b->n < collMinRanks((collId)c)) {
      b->args.colls &= ~PERF_COLL(c);
      b->tooFew |= PERF_COLL(c);
    }
  b->nsizes = perfNumSizes(&b->args);
  /* More ranks than GPUs: rank r runs on GPU r % GPUs (the ranks share them). */
  b->ngpu = ndev;
  b->shared = b->gpu && b->n > ndev;
  for (int l = 0; l < b->nlocal; l++) b->devs[l] = b->gpu ? (b->first + l) % ndev : -1;
  if (b->gpu && b->mp && cudaSetDevice(b->devs[0]) != cudaSuccess) return 1;
  if (b->gpu) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, b->devs[0]) == cudaSuccess)
      snprintf(b->gpuName, sizeof(b->gpuName), "%.100s", p.name);
  }
  if (setupBuffers(b)) {
    fprintf(stderr, "dmaccl-perf: cannot allocate buffers of %zu bytes per rank\n",
            b->args.maxBytes);
    return 1;
  }
  if (b->gpu && (b->args.baseline & PERF_BASE_NCCL)) makeNccl(b, KIND_NCCL);
  if (b->gpu && (b->args.baseline & PERF_BASE_NCCL_CE)) makeNccl(b, KIND_NCCL_CE);
  for (int i = 0; i < b->args.nalgos; i++)
    if (makeDmaccl(b, &b->cs[b->nc++], b->args.algos[i])) return 1;

  if (b->args.energy) {
    char err[256] = "";
    if (b->shared)
      snprintf(err, sizeof(err), "ranks share GPUs (a GPU's counter would count once per rank)");
    else if (b->gpu)
      b->energy = energyOpen(b->devs, b->nlocal, err, sizeof(err));
    perfStat s;
    perfShare(b, b->energy ? 0 : 1, &s);
    if (s.v[PERF_AVG_MAX] > 0) {
      if (b->print)
        printf("# no energy figures: %s\n", !b->gpu  ? "--energy needs GPUs (NVML counters)"
                                            : err[0] ? err
                                                     : "a peer has no NVML");
      energyClose(b->energy);
      b->energy = NULL;
    } else {
      /* Loops of >= 5 counter ticks (NVML: ~100 ms on H200), 500 ms at least;
       * DMACCL_PERF_ENERGY_MS sets longer ones. One number for all ranks. */
      perfShare(b, energyTickMs(b->energy), &s);
      const char *env = getenv("DMACCL_PERF_ENERGY_MS");
      b->energyMs = env && atof(env) > 0 ? atof(env) : 500.0;
      if (5 * s.v[PERF_AVG_MAX] > b->energyMs) b->energyMs = 5 * s.v[PERF_AVG_MAX];
      perfBarrier(b);
      double e0 = energyRead(b->energy), t0 = perfNowSec();
      usleep(300000);
      b->idleWatts = perfSum(b, (energyRead(b->energy) - e0) / (perfNowSec() - t0));
    }
  }
  if (kernelPass(b)) return 1;
  if (b->print) perfHeader(b);

  int failures = 0, nsizes = b->nsizes;
  int tty = isatty(STDOUT_FILENO);
  for (int cycle = 0; b->args.cycles == 0 || cycle < b->args.cycles; cycle++) {
    size_t cycleFirst = b->nrows;
    if (b->print && b->args.cycles != 1) printf("# cycle %d\n", cycle);
    for (int coll = 0; coll < COLL_NUM; coll++) {
      if (!(b->args.colls & PERF_COLL(coll))) continue;
      if (useData(b, coll)) return 1;
      int k = 0;
      for (size_t size = b->args.minBytes; size; size = perfNextSize(&b->args, size), k++) {
        if (b->print && !tty)
          fprintf(stderr, "dmaccl-perf: %s %zu B (%d/%d)\n", collTable[coll].name, size, k + 1,
                  nsizes);
        if (runSize(b, cycle, coll, k, size, &failures)) return 1;
        if (b->print && b->args.json[0]) perfWriteJson(b, b->args.json, 0);
      }
    }
    if (b->args.cycles == 0 && cycle > 0) {
      /* endless: keep only this cycle's rows */
      memmove(b->rows, b->rows + cycleFirst, (b->nrows - cycleFirst) * sizeof(perfRow));
      b->nrows -= cycleFirst;
    }
  }
  tracePass(b);
  if (b->print) {
    perfSummary(b, failures);
    perfPrintAutoVsBest(b);
    if (b->args.json[0] && perfWriteJson(b, b->args.json, 1) == 0)
      printf("# wrote %zu rows to %s\n", b->nrows, b->args.json);
    if (b->args.tuneOut[0] && perfWriteTune(b, b->args.tuneOut) == 0)
      printf("# wrote the tuning file %s (use: DMACCL_TUNE_FILE=%s)\n", b->args.tuneOut,
             b->args.tuneOut);
  }
  for (int i = 0; i < b->nc; i++) {
    contender *c = &b->cs[i];
    if (c->kind != KIND_DMACCL) {
      ncclBaseFini(c->nccl);
      continue;
    }
    perfFreeRequests(b, c);
    for (int r = 0; r < b->nlocal; r++) {
      if (c->ownBuffers) {
        dmacclMemFree(c->comms[r], c->send[r]);
        dmacclMemFree(c->comms[r], c->recv[r]);
      }
      dmacclCommDestroy(c->comms[r]);
      if (b->gpu && c->words[r]) {
        cudaSetDevice(b->devs[r]);
        cudaFree(c->words[r]);
      } else {
        free(c->words[r]);
      }
    }
  }
  energyClose(b->energy);
  free(b->rows);
  free(b->kern);
  return failures ? 1 : 0;
}

/* -p: one process per rank (forked by ranksRun). */
static int rankMain(int rank, void *arg) {
  bench *b = arg; /* the child's own copy */
  b->mp = 1;
  b->n = b->args.procs;
  b->nlocal = 1;
  b->first = rank;
  return benchMain(b);
}

int main(int argc, char **argv) {
  static bench b;
  char err[256];
  int pr = perfParseArgs(argc, argv, &b.args, err, sizeof(err));
  if (pr == 1) {
    perfUsage(stdout);
    return 0;
  }
  if (pr < 0) {
    fprintf(stderr, "dmaccl-perf: %s\n", err);
    return 2;
  }
  b.argc = argc;
  b.argv = argv;
  b.tsize = perfTypeSize(b.args.type);
  if (!b.args.procs) return benchMain(&b);

  /* -p N: no CUDA call before the fork. */
  int n = b.args.procs;
  perfShared *sh =
      mmap(NULL, sizeof(perfShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    perror("dmaccl-perf: mmap");
    return 1;
  }
  memset(sh, 0, sizeof(*sh));
  b.sh = sh;
  ranksBarrierInit(&sh->barrier, n);
  return ranksRun(n, rankMain, &b, "dmaccl-perf");
}
