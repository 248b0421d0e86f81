/* Issuing operations, timing them (eager, blocking or as CUDA graphs),
 * checking every byte, energy loops and traced operations. */
#include "bench.h"
#include "common/data.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double perfNowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void perfTrace(bench *b, const char *step, const contender *c, size_t count) {
  static int on = -1;
  if (on < 0) on = getenv("DMACCL_PERF_TRACE") && atoi(getenv("DMACCL_PERF_TRACE")) > 0;
  /* the time is CLOCK_MONOTONIC, the clock of the library's DMACCL_DEBUG=WARN
   * lines: a stalled row's trace and those lines can be put side by side */
  if (on)
    fprintf(stderr, "[rank %d] %.6f %s %s count %zu\n", b->first, perfNowSec(), step,
            c ? c->name : "-", count);
}

void perfBarrier(bench *b) {
  if (b->mp) pthread_barrier_wait(&b->sh->barrier);
}

void perfShare(bench *b, double mine, perfStat *out) {
  for (int i = 0; i < 4; i++) out->v[i] = mine;
  if (!b->mp) return;
  b->sh->vals[b->first] = mine;
  perfBarrier(b);
  out->v[PERF_AVG_RANK0] = out->v[PERF_AVG_MIN] = out->v[PERF_AVG_MAX] = b->sh->vals[0];
  out->v[PERF_AVG_MEAN] = 0;
  for (int r = 0; r < b->n; r++) {
    double x = b->sh->vals[r];
    out->v[PERF_AVG_MEAN] += x / b->n;
    if (x < out->v[PERF_AVG_MIN]) out->v[PERF_AVG_MIN] = x;
    if (x > out->v[PERF_AVG_MAX]) out->v[PERF_AVG_MAX] = x;
  }
  perfBarrier(b);
}

double perfSum(bench *b, double mine) {
  perfStat s;
  perfShare(b, mine, &s);
  return s.v[PERF_AVG_MEAN] * (b->mp ? b->n : 1);
}

/* The arguments of coll at count elements per block (the V forms: equal
 * counts, or uneven ones with --uneven). */
static void shapeOf(bench *b, int coll, size_t count, collShape *s, collVArrays *v) {
  perfShapeOf((collId)coll, count, b->n, b->args.root, b->args.uneven, s, v);
}

const unsigned char *perfInput(const bench *b, int rank) {
  return b->useExact ? b->exact[rank] : b->pool[rank];
}

int perfWantsExact(const bench *b, int coll) {
  dmacclRedOp_t op = b->args.op;
  return (collTable[coll].flags & COLL_REDUCES) && collTypeIsFloat(b->args.type) &&
         (op == dmacclSum || op == dmacclProd || op == dmacclAvg || op == COLL_PREMULSUM);
}

/* The bits of the integer v in a binary floating-point format of E exponent
 * and M mantissa bits (v is exact there, or its low bits are dropped). */
static uint64_t encodeInt(int E, int M, long v) {
  uint64_t sign = v < 0, a = (uint64_t)(v < 0 ? -v : v);
  int e = 0;
  while ((a >> (e + 1)) != 0) e++;
  uint64_t frac = a - ((uint64_t)1 << e);
  frac = e <= M ? frac << (M - e) : frac >> (e - M);
  uint64_t bias = ((uint64_t)1 << (E - 1)) - 1;
  return sign << (E + M) | ((uint64_t)e + bias) << M | frac;
}

void perfExactData(const bench *b, unsigned char *out, const unsigned char *random, size_t bytes) {
  static const struct {
    dmacclDataType_t t;
    int E, M;
  } fmt[] = {{dmacclFloat16, 5, 10},  {dmacclBfloat16, 8, 7},   {dmacclFloat32, 8, 23},
             {dmacclFloat64, 11, 52}, {dmacclFloat8e4m3, 4, 3}, {dmacclFloat8e5m2, 5, 2}};
  int E = 8, M = 23;
  for (size_t f = 0; f < sizeof(fmt) / sizeof(fmt[0]); f++)
    if (fmt[f].t == b->args.type) E = fmt[f].E, M = fmt[f].M;
  size_t ts = b->tsize;
  int small = ts == 1; /* fp8: +-1 (x n for avg) keeps every partial sum exact */
  for (size_t i = 0; i + ts <= bytes; i += ts) {
    unsigned u = random[i];
    long mag = b->args.op == dmacclProd ? 1 + (u & 1) : small ? 1 : 1 + (long)(u % 3);
    if (b->args.op == dmacclAvg) mag *= b->n;
    uint64_t bits = encodeInt(E, M, (u & 0x80) ? -mag : mag);
    memcpy(out + i, &bits, ts); /* little endian: the low ts bytes */
  }
}

/* Local rank l's buffers of one operation. Out of place: the contender's
 * send and recv. In place, one buffer: the input lies at the collective's
 * in-place offset from the output (a negative offset puts the input at the
 * buffer's start and the output after it). *base: where the buffer starts. */
static void bufsOf(bench *b, contender *c, int l, int coll, const collShape *s, int inPlace,
                   void **send, void **recv, char **base) {
  long long delta = 0;
  int rank = b->first + l;
  *base = c->recv[l];
  if (!inPlace || !collInPlace((collId)coll, s, rank, &delta)) {
    *send = c->send[l], *recv = c->recv[l];
    return;
  }
  long long off = delta * (long long)b->tsize;
  *recv = *base + (off < 0 ? -off : 0);
  *send = (char *)*recv + off;
}

void perfFreeRequests(bench *b, contender *c) {
  for (int r = 0; r < b->nlocal; r++) collFree((collId)c->reqColl, c->req[r]);
}

int perfTakes(const bench *b, const contender *c, int coll) {
  if (c->kind != KIND_DMACCL) return ncclBaseLacks(coll, c->kind == KIND_NCCL_CE) == NULL;
  if (strcmp(c->name, "auto") == 0) return 1;
  planColl pc;
  planAlgo pa;
  (void)b;
  /* the library's collective whose entry picks the algorithm: sendrecv
   * runs with Broadcast's (collInfo.select) */
  const char *sel = collTable[coll].select;
  return planCollParse(sel, strlen(sel), &pc) == 0 &&
         planAlgoParse(c->name, strlen(c->name), &pa) == 0 &&
         (planCollOf(pc)->algos & PLAN_ALGO_BIT(pa));
}

int perfIssue(bench *b, contender *c, int coll, size_t count, int inPlace) {
  void *send[MAXR], *recv[MAXR];
  char *base;
  collShape s;
  collVArrays v;
  shapeOf(b, coll, count, &s, &v);
  for (int l = 0; l < b->nlocal; l++) bufsOf(b, c, l, coll, &s, inPlace, &send[l], &recv[l], &base);
  if (c->kind != KIND_DMACCL)
    return ncclBaseIssue(c->nccl, coll, &s, send, recv, b->args.type, b->args.op, b->streams);
  dmacclResult_t rc = dmacclSuccess;
  /* --persistent: the requests of this row, made once (Init is local);
   * collRequests(coll) per rank (sendrecv: a Send and a Recv request) */
  if (b->args.persistent &&
      !(c->req[0][0] && c->reqColl == coll && c->reqCount == count && c->reqInPlace == inPlace)) {
    perfFreeRequests(b, c);
    c->reqColl = coll, c->reqCount = count, c->reqInPlace = inPlace;
    for (int l = 0; l < b->nlocal && rc == dmacclSuccess; l++)
      rc = collIssue((collId)coll, &s, b->first + l, send[l], recv[l], b->args.type, b->args.op,
                     c->comms[l], NULL, c->req[l]);
    if (rc != dmacclSuccess) perfFreeRequests(b, c);
  }
  /* --notify: AllGather(V) as its ...Notify call, words made at first use */
  int notify = b->args.notify && (coll == COLL_ALLGATHER || coll == COLL_ALLGATHERV);
  for (int l = 0; notify && l < b->nlocal && rc == dmacclSuccess; l++) {
    if (c->words[l]) continue;
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[l]));
      CUDA_CHECK(cudaMalloc((void **)&c->words[l], MAXR * sizeof(uint32_t)));
    } else if (!(c->words[l] = calloc(MAXR, sizeof(uint32_t)))) {
      rc = dmacclSystemError;
    }
  }
  c->wordValue++;
  dmacclGroupStart();
  for (int l = 0; l < b->nlocal && rc == dmacclSuccess; l++) {
    cudaStream_t st = b->gpu ? b->streams[l] : NULL;
    rc = b->args.persistent ? collStart((collId)coll, c->req[l], st)
         : !notify ? collIssue((collId)coll, &s, b->first + l, send[l], recv[l], b->args.type,
                               b->args.op, c->comms[l], st, NULL)
         : coll == COLL_ALLGATHER
             ? dmacclAllGatherNotify(send[l], recv[l], s.count, b->args.type, c->words[l],
                                     c->wordValue, c->comms[l], st)
             : dmacclAllGatherVNotify(send[l], recv[l], s.counts, s.displs, b->args.type,
                                      c->words[l], c->wordValue, c->comms[l], st);
  }
  dmacclResult_t e = dmacclGroupEnd();
  if (rc == dmacclSuccess) rc = e;
  if (rc != dmacclSuccess)
    fprintf(stderr, "dmaccl-perf: %s: %s\n", dmacclGetErrorString(rc),
            dmacclCommGetLastError(NULL));
  return rc == dmacclSuccess ? 0 : -1;
}

int perfSyncAll(bench *b, contender *c) {
  for (int r = 0; r < b->nlocal; r++) {
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[r]));
      CUDA_CHECK(cudaStreamSynchronize(b->streams[r]));
    }
    if (c->kind == KIND_DMACCL) {
      dmacclResult_t rc = dmacclCommSynchronize(c->comms[r]);
      if (rc != dmacclSuccess) {
        fprintf(stderr, "dmaccl-perf: rank %d: %s\n", b->first + r,
                dmacclCommGetLastError(c->comms[r]));
        return -1;
      }
    }
  }
  return 0;
}

static int launchGraphs(bench *b, cudaGraphExec_t *graphs) {
  for (int r = 0; r < b->nlocal; r++) {
    if (!graphs[r]) continue; /* one graph for every rank of this process */
    CUDA_CHECK(cudaSetDevice(b->devs[r]));
    CUDA_CHECK(cudaGraphLaunch(graphs[r], b->streams[r]));
  }
  return 0;
}

/* nops operations (eager), or nops launches of the graphs. *slowest (when
 * not NULL): the longest host time one of them took to issue, in us (a
 * call that blocked: what an outlier row's mean hides). */
static int runOps(bench *b, contender *c, int coll, size_t count, int inPlace, long nops,
                  cudaGraphExec_t *graphs, double *slowest) {
  for (long i = 0; i < nops; i++) {
    double t0 = slowest ? perfNowSec() : 0;
    if (graphs ? launchGraphs(b, graphs) : perfIssue(b, c, coll, count, inPlace)) return -1;
    if (slowest) {
      double us = (perfNowSec() - t0) * 1e6;
      if (us > *slowest) *slowest = us;
    }
    if (b->args.blocking && perfSyncAll(b, c)) return -1;
  }
  return 0;
}

void perfFreeGraphs(bench *b, cudaGraphExec_t *graphs) {
  for (int r = 0; r < b->nlocal; r++)
    if (graphs[r]) {
      cudaGraphExecDestroy(graphs[r]);
      graphs[r] = NULL;
    }
}

/* Captures nops operations of every local rank into one graph: rank 0's
 * stream begins the capture and the other streams join it through events;
 * the graph is instantiated after the capture ended. Ranks of this process
 * that share a GPU must be in one graph (dmaccl refuses separate ones), and
 * a graph per GPU launched one after the other may not copy from the other
 * GPU (docs/architecture.md: dmaccl then takes an algorithm that writes its
 * peers, or refuses one that was asked for): one graph measures every
 * algorithm, as one launch drives every GPU. */
static int capture(bench *b, contender *c, int coll, size_t count, int inPlace, int nops,
                   cudaGraphExec_t *graphs) {
  cudaGraph_t g[MAXR] = {0};
  cudaEvent_t ev[MAXR] = {0};
  int joint = b->nlocal > 1;
  for (int r = 0; joint && r < b->nlocal; r++) {
    CUDA_CHECK(cudaSetDevice(b->devs[r]));
    CUDA_CHECK(cudaEventCreateWithFlags(&ev[r], cudaEventDisableTiming));
  }
  for (int r = 0; r < b->nlocal; r++) {
    CUDA_CHECK(cudaSetDevice(b->devs[r]));
    if (joint && r > 0) {
      CUDA_CHECK(cudaStreamWaitEvent(b->streams[r], ev[0], 0));
      continue;
    }
    CUDA_CHECK(cudaStreamBeginCapture(b->streams[r], cudaStreamCaptureModeThreadLocal));
    if (joint) CUDA_CHECK(cudaEventRecord(ev[0], b->streams[0]));
  }
  int bad = 0;
  for (int i = 0; i < nops && !bad; i++) bad = perfIssue(b, c, coll, count, inPlace);
  for (int r = b->nlocal - 1; r >= 0; r--) {
    cudaSetDevice(b->devs[r]);
    if (joint && r > 0) {
      if (cudaEventRecord(ev[r], b->streams[r]) != cudaSuccess ||
          cudaStreamWaitEvent(b->streams[0], ev[r], 0) != cudaSuccess)
        bad = 1;
      continue;
    }
    if (cudaStreamEndCapture(b->streams[r], &g[r]) != cudaSuccess) bad = 1;
  }
  const char *dot = getenv("DMACCL_PERF_GRAPH_DOT");
  for (int r = 0; r < b->nlocal && !bad; r++) {
    if (!g[r]) continue;
    cudaSetDevice(b->devs[r]);
    if (dot && dot[0]) { /* the captured graph, for a look at its nodes and edges */
      char path[512];
      snprintf(path, sizeof(path), "%s.%s.%zu.rank%d.dot", dot, c->name, count, b->first + r);
      if (cudaGraphDebugDotPrint(g[r], path, cudaGraphDebugDotFlagsVerbose) != cudaSuccess)
        fprintf(stderr, "dmaccl-perf: DMACCL_PERF_GRAPH_DOT: cannot write %s\n", path);
    }
    if (cudaGraphInstantiate(&graphs[r], g[r], 0) != cudaSuccess) bad = 1;
  }
  for (int r = 0; r < b->nlocal; r++) {
    if (g[r]) cudaGraphDestroy(g[r]);
    if (ev[r]) cudaEventDestroy(ev[r]);
  }
  if (bad) {
    fprintf(stderr, "dmaccl-perf: %s: capturing %d operations into a CUDA graph failed\n", c->name,
            nops);
    perfFreeGraphs(b, graphs);
    return -1;
  }
  return 0;
}

/* ns this thread has waited on a run queue (schedstat's second field); -1
 * where the kernel does not say. */
static double runQueueNs(void) {
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  unsigned long long run = 0, wait = 0;
  int ok = f && fscanf(f, "%llu %llu", &run, &wait) == 2;
  if (f) fclose(f);
  return ok ? (double)wait : -1;
}

int perfMeasure(bench *b, contender *c, int coll, size_t count, int inPlace, perfRow *r,
                cudaGraphExec_t *graphs) {
  perfTrace(b, inPlace ? "measure in-place" : "measure", c, count);
  /* A Send/Recv channel is made at the first operation between two ranks,
   * which cannot be captured: with -G, sendrecv warms up once even at -w 0,
   * and so does AlltoAllv, which may run as Send/Recv pairs (a captured one
   * runs so only after an uncaptured one: src/core/pairs.c). */
  long warmup = b->args.warmup;
  if (b->args.graphs && ((collTable[coll].flags & COLL_P2P) || coll == COLL_ALLTOALLV) &&
      warmup < 1)
    warmup = 1;
  /* refOp: the time per operation before the timed loop (perfStalled) */
  double w0 = perfNowSec(), refOp = 0;
  if (runOps(b, c, coll, count, inPlace, warmup, NULL, NULL) || perfSyncAll(b, c)) return -1;
  if (warmup > 0) refOp = (perfNowSec() - w0) * 1e6 / (double)warmup;
  long ops = b->args.iters;
  cudaGraphExec_t *g = NULL;
  if (b->args.graphs) {
    if (capture(b, c, coll, count, inPlace, b->args.iters, graphs)) return -1;
    g = graphs;
    /* one untimed launch uploads the graphs */
    perfTrace(b, "upload graphs", c, count);
    double u0 = perfNowSec();
    if (launchGraphs(b, g) || perfSyncAll(b, c)) return -1;
    double up = (perfNowSec() - u0) * 1e6 / (double)b->args.iters;
    if (refOp <= 0 || up < refOp) refOp = up;
    ops = (long)b->args.graphs * b->args.iters;
  }
  r->ops = ops;
  r->callOps = g ? b->args.iters : 1;
  perfBarrier(b);
  perfTrace(b, g ? "timed graph launches" : "timed operations", c, count);
  double q0 = runQueueNs(), slow = 0, t0 = perfNowSec();
  if (runOps(b, c, coll, count, inPlace, g ? b->args.graphs : b->args.iters, g, &slow)) return -1;
  double tIssued = perfNowSec();
  if (perfSyncAll(b, c)) return -1;
  double t1 = perfNowSec(), q1 = runQueueNs();
  /* Every rank's clock starts at the last rank's start (CLOCK_MONOTONIC is
   * one clock for the processes of a host): a process that leaves the
   * barrier late is waited for by its peers' first operations, which would
   * count its lateness as their time. The lateness goes to r->skew. */
  perfStat st;
  perfShare(b, t0, &st);
  r->skew = (st.v[PERF_AVG_MAX] - st.v[PERF_AVG_MIN]) * 1e6;
  perfShare(b, (t1 - st.v[PERF_AVG_MAX]) * 1e6 / (double)ops, &r->us);
  perfStat s;
  perfShare(b, slow, &s);
  r->slowest = s.v[PERF_AVG_MAX];
  /* Where a 100-ms-class stall goes (docs/latency-notes.md): the wait for
   * completion, and whether the thread was kept off a CPU. */
  perfShare(b, (t1 - tIssued) * 1e6, &s);
  r->completion = s.v[PERF_AVG_MAX];
  perfShare(b, q0 < 0 || q1 < 0 ? -1 : (q1 - q0) / 1e3, &s);
  r->runqueue = s.v[PERF_AVG_MIN] < 0 ? -1 : s.v[PERF_AVG_MAX];
  perfShare(b, refOp, &s);
  r->refOp = s.v[PERF_AVG_MIN];
  return 0;
}

/* Poisons local rank l's buffer and puts its input in place (in place). */
static int poison(bench *b, contender *c, int l, int coll, const collShape *s, int inPlace,
                  size_t span) {
  void *send, *recv;
  char *base;
  int rank = b->first + l;
  bufsOf(b, c, l, coll, s, inPlace, &send, &recv, &base);
  size_t in = collSendCount((collId)coll, s, rank) * b->tsize;
  int same = send != c->send[l];
  const unsigned char *input = perfInput(b, rank);
  if (b->gpu) {
    CUDA_CHECK(cudaSetDevice(b->devs[l]));
    CUDA_CHECK(cudaMemset(base, POISON, span));
    if (same && in) CUDA_CHECK(cudaMemcpy(send, input, in, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());
  } else {
    memset(base, POISON, span);
    if (same && in) memcpy(send, input, in);
  }
  return 0;
}

long long perfCheck(bench *b, contender *c, int coll, size_t count, int inPlace,
                    cudaGraphExec_t *graphs) {
  collShape s;
  collVArrays v;
  shapeOf(b, coll, count, &s, &v);
  long long wrong = 0;
  const void *sends[MAXR];
  for (int r = 0; r < b->n; r++) sends[r] = perfInput(b, r);
  perfTrace(b, "check", c, count);
  cudaGraphExec_t one[MAXR] = {0};
  if (graphs && inPlace && (collTable[coll].flags & COLL_REDUCES)) {
    /* the timed graph's operations run one after the other, and in place a
     * reduction's output is the next one's input: check a graph of one */
    if (capture(b, c, coll, count, inPlace, 1, one)) return -1;
    graphs = one;
  }
  /* NCCL's PreMulSum scales each rank's input, dmaccl (the reference) the
   * sum: one rounding apart on 2 ranks or more, so those rows go unchecked */
  if (c->kind != KIND_DMACCL && b->args.op == COLL_PREMULSUM &&
      (collTable[coll].flags & COLL_REDUCES) && b->n > 1)
    return 0;
  for (int k = 0; k < b->args.check; k++) {
    size_t span[MAXR];
    for (int l = 0; l < b->nlocal; l++) {
      int rank = b->first + l;
      void *send, *recv;
      char *base;
      bufsOf(b, c, l, coll, &s, inPlace, &send, &recv, &base);
      size_t in = send != c->send[l] ? (size_t)((char *)send - base) +
                                           collSendCount((collId)coll, &s, rank) * b->tsize
                                     : 0;
      size_t out = (size_t)((char *)recv - base) + collRecvCount((collId)coll, &s, rank) * b->tsize;
      span[l] = in > out ? in : out;
      if (poison(b, c, l, coll, &s, inPlace, span[l])) return -1;
    }
    perfBarrier(b); /* nobody writes into a peer still poisoning */
    if ((graphs ? launchGraphs(b, graphs) : perfIssue(b, c, coll, count, inPlace)) ||
        perfSyncAll(b, c))
      return -1;
    for (int l = 0; l < b->nlocal; l++) {
      int rank = b->first + l;
      void *send, *recv;
      char *base;
      bufsOf(b, c, l, coll, &s, inPlace, &send, &recv, &base);
      size_t outBytes = collRecvCount((collId)coll, &s, rank) * b->tsize;
      if (!outBytes) continue;
      const unsigned char *got = recv;
      if (b->gpu) {
        CUDA_CHECK(cudaMemcpy(b->scratch, recv, outBytes, cudaMemcpyDeviceToHost));
        got = b->scratch;
      }
      /* the expected output: the reference over a poisoned buffer */
      memset(b->want, POISON, outBytes);
      if (collReference((collId)coll, &s, rank, b->args.type, b->args.op, sends, b->want) != 0) {
        fprintf(stderr, "dmaccl-perf: no reference for %s %s\n", collTable[coll].name,
                collOpName(b->args.op));
        return -1;
      }
      wrong += (long long)dataCountWrong(got, b->want, outBytes, b->tsize);
    }
    perfBarrier(b); /* nobody poisons what a peer may still read */
  }
  perfFreeGraphs(b, one);
  return llround(perfSum(b, (double)wrong));
}

int perfEnergyRow(bench *b, contender *c, int coll, size_t count, double usPerOp,
                  cudaGraphExec_t *graphs, double *joules, double *watts) {
  *joules = *watts = 0;
  if (!b->energy) return 0;
  perfTrace(b, "energy", c, count);
  /* Every rank must run the same number of operations: usPerOp and
   * energyMs are the same shared numbers everywhere. */
  long perLaunch = graphs ? b->args.iters : 1;
  long launches = (long)ceil(b->energyMs * 1e3 / (usPerOp * (double)perLaunch));
  if (launches < 1) launches = 1;
  perfBarrier(b);
  double e0 = energyRead(b->energy), t0 = perfNowSec();
  /* in rounds as long as the timed loop, each waited for */
  long round = graphs ? 1 : b->args.iters;
  for (long done = 0; done < launches; done += round) {
    long k = launches - done < round ? launches - done : round;
    if (runOps(b, c, coll, count, 0, k, graphs, NULL) || perfSyncAll(b, c)) return -1;
  }
  double e1 = energyRead(b->energy), t1 = perfNowSec();
  perfStat dt;
  double sumJ = perfSum(b, e1 - e0);
  perfShare(b, t1 - t0, &dt);
  *joules = sumJ / (double)(launches * perLaunch);
  *watts = sumJ / dt.v[PERF_AVG_MAX];
  return 0;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The graph of every local rank runs on rank 0's stream (capture): the
 * other ranks' streams are ordered around its launch with events (into:
 * before it, else after it), so that their probe copies bracket it. */
static void orderAroundGraph(bench *b, cudaEvent_t *ev, int into) {
  if (into) {
    for (int r = 1; r < b->nlocal; r++) {
      cudaSetDevice(b->devs[r]);
      cudaEventRecord(ev[r], b->streams[r]);
      cudaSetDevice(b->devs[0]);
      cudaStreamWaitEvent(b->streams[0], ev[r], 0);
    }
    return;
  }
  cudaSetDevice(b->devs[0]);
  cudaEventRecord(ev[0], b->streams[0]);
  for (int r = 1; r < b->nlocal; r++) {
    cudaSetDevice(b->devs[r]);
    cudaStreamWaitEvent(b->streams[r], ev[0], 0);
  }
}

int perfBreakdownRow(bench *b, contender *c, int coll, size_t count, int reps, perfBreakdown *out) {
  enum { NP = 5 };
  double parts[NP][32];
  int copies = 0, kernels = 0, api = 0, hostEnd = 0, got = 0;
  void *probeBuf[MAXR];
  if (reps > 32) reps = 32;
  for (int r = 0; r < b->nlocal; r++) {
    CUDA_CHECK(cudaSetDevice(b->devs[r]));
    CUDA_CHECK(cudaMalloc(&probeBuf[r], 2 * BD_PROBE_BYTES));
  }
  perfTrace(b, "trace", c, count);
  /* With -G: one operation captured into a graph, and each repetition
   * launches it (the command latencies and gaps of the graph form). */
  cudaGraphExec_t graphs[MAXR] = {0}, *g = b->args.graphs > 0 ? graphs : NULL;
  int failed = g && capture(b, c, coll, count, 0, 1, graphs);
  cudaEvent_t ev[MAXR] = {0};
  int joint = g && b->nlocal > 1;
  for (int r = 0; joint && r < b->nlocal; r++) {
    CUDA_CHECK(cudaSetDevice(b->devs[r]));
    CUDA_CHECK(cudaEventCreateWithFlags(&ev[r], cudaEventDisableTiming));
  }
  /* warm: first use of buffers and handles is not what is measured */
  if (!failed && (runOps(b, c, coll, count, 0, 1, g, NULL) || perfSyncAll(b, c))) failed = 1;
  perfStat warm; /* every rank leaves together (the barriers and shares below) */
  perfShare(b, failed, &warm);
  if (warm.v[PERF_AVG_MAX] > 0) {
    for (int r = 0; r < b->nlocal; r++) {
      cudaFree(probeBuf[r]);
      if (ev[r]) cudaEventDestroy(ev[r]);
    }
    perfFreeGraphs(b, graphs);
    return -1;
  }
  for (int k = 0; k < reps; k++) { /* every rank runs every repetition: barriers inside */
    uint64_t tProbe[MAXR];
    perfBarrier(b);
    if (bdStart()) failed = 1;
    for (int r = 0; r < b->nlocal; r++) {
      cudaSetDevice(b->devs[r]);
      cudaMemcpyAsync((char *)probeBuf[r] + BD_PROBE_BYTES, probeBuf[r], BD_PROBE_BYTES,
                      cudaMemcpyDeviceToDevice, b->streams[r]);
      tProbe[r] = bdNow();
    }
    if (joint) orderAroundGraph(b, ev, 1);
    uint64_t t0 = bdNow();
    if (runOps(b, c, coll, count, 0, 1, g, NULL)) failed = 1;
    uint64_t t1 = bdNow();
    if (joint) orderAroundGraph(b, ev, 0);
    for (int r = 0; r < b->nlocal; r++) {
      cudaSetDevice(b->devs[r]);
      cudaMemcpyAsync((char *)probeBuf[r] + BD_PROBE_BYTES, probeBuf[r], BD_PROBE_BYTES,
                      cudaMemcpyDeviceToDevice, b->streams[r]);
    }
    if (perfSyncAll(b, c)) failed = 1;
    uint64_t tDone = bdNow();
    if (bdStop()) failed = 1;
    if (k == 0) api = bdApiCalls(t0, t1);
    if (b->args.timeline[0] && k == (reps > 1 ? 1 : 0) && !failed) { /* one warm operation */
      for (int r = 0; r < b->nlocal; r++) {
        char path[600], label[96];
        snprintf(path, sizeof(path), "%s.rank%d.txt", b->args.timeline, b->first + r);
        FILE *f = fopen(path, "a");
        if (!f) continue;
        snprintf(label, sizeof(label), "%s %zu %s", collTable[coll].name,
                 count * perfTypeSize(b->args.type), c->name);
        bdTimeline(f, b->devs[r], t0, t1, label);
        fclose(f);
      }
    }
    double sum[NP] = {0};
    int ok = 1;
    for (int r = 0; r < b->nlocal && !failed; r++) {
      perfBreakdown part;
      if (bdSplit(b->devs[r], tProbe[r], t0, t1, tDone, &part)) {
        ok = 0;
        continue;
      }
      sum[0] += part.control / b->nlocal;
      sum[1] += part.schedule / b->nlocal;
      sum[2] += part.copy / b->nlocal;
      sum[3] += part.sync / b->nlocal;
      sum[4] += part.total / b->nlocal;
      if (k == 0) copies += part.copies, kernels += part.kernels;
      hostEnd |= part.hostEnd;
    }
    /* average over ranks (processes) */
    perfStat s;
    perfShare(b, ok ? 0 : 1, &s);
    if (s.v[PERF_AVG_MAX] > 0) ok = 0;
    for (int p = 0; p < NP; p++) {
      perfShare(b, sum[p], &s);
      parts[p][got] = s.v[PERF_AVG_MEAN];
    }
    if (ok) got++;
  }
  for (int r = 0; r < b->nlocal; r++) {
    cudaFree(probeBuf[r]);
    if (ev[r]) cudaEventDestroy(ev[r]);
  }
  perfFreeGraphs(b, graphs);
  perfStat s;
  perfShare(b, failed, &s);
  if (s.v[PERF_AVG_MAX] > 0 || got == 0) return -1;
  double med[NP];
  for (int p = 0; p < NP; p++) {
    qsort(parts[p], (size_t)got, sizeof(double), cmpd);
    med[p] = parts[p][got / 2];
  }
  memset(out, 0, sizeof(*out));
  out->control = med[0], out->schedule = med[1], out->copy = med[2], out->sync = med[3];
  out->total = med[4];
  /* commands on this process's GPUs for one operation, summed over ranks */
  out->copies = (int)lround(perfSum(b, copies));
  out->kernels = (int)lround(perfSum(b, kernels));
  out->api = (int)lround(perfSum(b, api)); /* every process's calls for its ranks */
  perfShare(b, hostEnd, &s);
  out->hostEnd = s.v[PERF_AVG_MAX] > 0;
  return 0;
}

int perfKernelsRow(bench *b, contender *c, int coll, size_t count, int inPlace, int reps,
                   perfKernels *out) {
  perfTrace(b, inPlace ? "kernels in-place" : "kernels", c, count);
  /* one operation first, not counted: first uses of buffers and handles */
  if (perfIssue(b, c, coll, count, inPlace) || perfSyncAll(b, c)) return -1;
  perfBarrier(b);
  int failed = bdStart() != 0;
  for (int k = 0; k < reps; k++)
    if (perfIssue(b, c, coll, count, inPlace)) return -1;
  if (perfSyncAll(b, c)) return -1;
  failed |= bdStop() != 0;
  /* every GPU of this process once (ranks may share one) */
  int kernels = 0, ctas = 0, copies = 0;
  double us = 0;
  for (int l = 0; l < b->nlocal; l++) {
    int seen = 0;
    for (int m = 0; m < l; m++) seen |= b->devs[m] == b->devs[l];
    if (seen) continue;
    int k, x, cp;
    double u;
    bdKernels(b->devs[l], &k, &u, &x, &cp);
    kernels += k, us += u, copies += cp;
    if (x > ctas) ctas = x;
  }
  perfStat s;
  perfShare(b, failed, &s);
  if (s.v[PERF_AVG_MAX] > 0) return 1;
  double per = (double)b->n * (double)reps; /* per rank and operation */
  out->kernels = perfSum(b, kernels) / per;
  out->us = perfSum(b, us) / per;
  out->copies = perfSum(b, copies) / per;
  perfShare(b, ctas, &s);
  out->ctas = (int)s.v[PERF_AVG_MAX];
  return 0;
}
