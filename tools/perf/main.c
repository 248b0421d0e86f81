/*
 * dmaccl-perf: nccl-tests-style benchmark of dmaccl's AllGather and AlltoAll,
 * every algorithm, with NCCL's own collectives as baseline rows in the same
 * run. With no GPU it runs on the host executor (ranks as threads).
 *
 * Timing as nccl-tests: warm-up, then `iters` back-to-back operations issued
 * on all ranks (grouped), host clock around issue + final synchronization,
 * time per operation = elapsed / iters. With -c 1, one more operation per
 * size runs on random data into poisoned outputs and every byte is checked.
 */
#include "args.h"
#include "baseline_nccl.h"
#include "common/data.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 64
#define POISON 0xA5

typedef struct {
  char name[16];
  int isNccl;
  dmacclComm_t comms[MAXR];
  double sumBusBw[3];
  int nrows[3];
} contender;

typedef struct {
  perfArgs args;
  int gpu, n;
  int devs[MAXR];
  cudaStream_t streams[MAXR];
  void *send[MAXR], *recv[MAXR];
  unsigned char *pool[MAXR]; /* host copy of each rank's send data */
  unsigned char *scratch;    /* host buffer for checking */
  size_t tsize;
  ncclBase *nccl;
} bench;

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "dmaccl-perf: %s: %s\n", #call, cudaGetErrorString(e_));                     \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

static int issue(bench *b, contender *c, int coll, size_t count) {
  if (c->isNccl)
    return ncclBaseIssue(b->nccl, coll, b->send, b->recv, count, b->args.type, b->streams);
  dmacclGroupStart();
  dmacclResult_t rc = dmacclSuccess;
  for (int r = 0; r < b->n && rc == dmacclSuccess; r++) {
    cudaStream_t s = b->gpu ? b->streams[r] : NULL;
    rc = coll == PERF_ALLGATHER
             ? dmacclAllGather(b->send[r], b->recv[r], count, b->args.type, c->comms[r], s)
             : dmacclAlltoAll(b->send[r], b->recv[r], count, b->args.type, c->comms[r], s);
  }
  dmacclResult_t e = dmacclGroupEnd();
  if (rc == dmacclSuccess) rc = e;
  if (rc != dmacclSuccess)
    fprintf(stderr, "dmaccl-perf: %s: %s\n", dmacclGetErrorString(rc),
            dmacclCommGetLastError(NULL));
  return rc == dmacclSuccess ? 0 : -1;
}

static int syncAll(bench *b, contender *c) {
  for (int r = 0; r < b->n; r++) {
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[r]));
      CUDA_CHECK(cudaStreamSynchronize(b->streams[r]));
    }
    if (!c->isNccl) {
      dmacclResult_t rc = dmacclCommSynchronize(c->comms[r]);
      if (rc != dmacclSuccess) {
        fprintf(stderr, "dmaccl-perf: rank %d: %s\n", r, dmacclCommGetLastError(c->comms[r]));
        return -1;
      }
    }
  }
  return 0;
}

/* Runs one operation into poisoned outputs and counts wrong elements. */
static long long checkOnce(bench *b, contender *c, int coll, size_t count) {
  size_t chunk = count * b->tsize, total = chunk * (size_t)b->n;
  for (int r = 0; r < b->n; r++) {
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[r]));
      CUDA_CHECK(cudaMemset(b->recv[r], POISON, total));
      CUDA_CHECK(cudaDeviceSynchronize());
    } else {
      memset(b->recv[r], POISON, total);
    }
  }
  if (issue(b, c, coll, count) || syncAll(b, c)) return -1;
  long long wrong = 0;
  for (int t = 0; t < b->n; t++) {
    const unsigned char *got = b->recv[t];
    if (b->gpu) {
      CUDA_CHECK(cudaMemcpy(b->scratch, b->recv[t], total, cudaMemcpyDeviceToHost));
      got = b->scratch;
    }
    for (int f = 0; f < b->n; f++) {
      const unsigned char *want = b->pool[f] + (coll == PERF_ALLGATHER ? 0 : (size_t)t * chunk);
      wrong += (long long)dataCountWrong(got + (size_t)f * chunk, want, chunk, b->tsize);
    }
  }
  return wrong;
}

static int measure(bench *b, contender *c, int coll, size_t count, double *us) {
  for (int i = 0; i < b->args.warmup; i++)
    if (issue(b, c, coll, count)) return -1;
  if (syncAll(b, c)) return -1;
  double t0 = nowSec();
  for (int i = 0; i < b->args.iters; i++)
    if (issue(b, c, coll, count)) return -1;
  if (syncAll(b, c)) return -1;
  *us = (nowSec() - t0) * 1e6 / b->args.iters;
  return 0;
}

static int setupBuffers(bench *b) {
  size_t maxBytes = b->args.maxBytes;
  if (b->gpu) b->scratch = malloc(maxBytes);
  for (int r = 0; r < b->n; r++) {
    b->pool[r] = malloc(maxBytes);
    if (!b->pool[r] || (b->gpu && !b->scratch)) return -1;
    dataFillRandom(b->pool[r], maxBytes, 1234 + (uint64_t)r);
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[r]));
      CUDA_CHECK(cudaStreamCreateWithFlags(&b->streams[r], cudaStreamNonBlocking));
      CUDA_CHECK(cudaMalloc(&b->send[r], maxBytes));
      CUDA_CHECK(cudaMalloc(&b->recv[r], maxBytes));
      CUDA_CHECK(cudaMemcpy(b->send[r], b->pool[r], maxBytes, cudaMemcpyHostToDevice));
    } else {
      b->send[r] = b->pool[r]; /* never written by a collective */
      if (!(b->recv[r] = malloc(maxBytes))) return -1;
    }
  }
  return 0;
}

static int makeContender(bench *b, contender *c, const char *algo) {
  memset(c, 0, sizeof(*c));
  snprintf(c->name, sizeof(c->name), "%s", algo);
  char sel[96];
  snprintf(sel, sizeof(sel), "allgather:%s;alltoall:%s", algo, algo);
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = b->gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  cfg.algorithm = strcmp(algo, "auto") == 0 ? NULL : sel;
  dmacclResult_t rc = dmacclCommInitAll(c->comms, b->n, b->gpu ? b->devs : NULL, &cfg);
  if (rc != dmacclSuccess) {
    fprintf(stderr, "dmaccl-perf: dmacclCommInitAll: %s\n", dmacclCommGetLastError(NULL));
    return -1;
  }
  return 0;
}

static void header(bench *b) {
  char gpus[512] = "";
  if (b->gpu) {
    struct cudaDeviceProp p;
    size_t o = 0;
    for (int r = 0; r < b->n; r++)
      o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, " %d", b->devs[r]);
    if (cudaGetDeviceProperties(&p, b->devs[0]) == cudaSuccess)
      snprintf(gpus + o, sizeof(gpus) - o, " (%s)", p.name);
  }
  int v = 0;
  dmacclGetVersion(&v);
  printf("# dmaccl-perf (dmaccl %d): executor %s%s, %d ranks%s%s, type %s, iters %d, warmup %d, "
         "check %d\n",
         v, b->gpu ? "cuda" : "host", b->gpu ? "" : " (ranks are threads on host memory)", b->n,
         b->gpu ? ", GPUs" : "", gpus, perfTypeName(b->args.type), b->args.iters, b->args.warmup,
         b->args.check);
  printf("# size: AllGather = total output bytes, AlltoAll = bytes each rank sends; busbw = "
         "algbw*(n-1)/n\n");
  if (b->nccl)
    printf("# baseline: NCCL %s, one process driving all GPUs, NCCL_NVLS_ENABLE=0; vsNCCL = NCCL "
           "time / "
           "dmaccl time (above 1: dmaccl faster)\n",
           ncclBaseVersion(b->nccl));
  printf("#\n# %-9s %12s %11s %6s %-6s %10s %9s %9s %7s %7s\n", "coll", "size(B)", "count", "type",
         "algo", "time(us)", "algbw", "busbw", "#wrong", "vsNCCL");
}

int main(int argc, char **argv) {
  bench b;
  memset(&b, 0, sizeof(b));
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
  b.tsize = perfTypeSize(b.args.type);
  int ndev = 0;
  if (b.args.executor != PERF_EXEC_HOST &&
      (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)) {
    if (b.args.executor == PERF_EXEC_CUDA) {
      fprintf(stderr, "dmaccl-perf: -B cuda but no CUDA device is present\n");
      return 2;
    }
    ndev = 0;
    printf("# no GPU found: running on the host executor\n");
  }
  b.gpu = ndev > 0 && b.args.executor != PERF_EXEC_HOST;
  b.n = b.args.nranks ? b.args.nranks : (b.gpu ? ndev : 4);
  if (b.n > MAXR || (b.gpu && b.n > ndev)) {
    fprintf(stderr, "dmaccl-perf: -g %d but %s\n", b.n,
            b.gpu ? "not that many GPUs" : "too many ranks");
    return 2;
  }
  for (int r = 0; r < b.n; r++) b.devs[r] = r;
  if (setupBuffers(&b)) {
    fprintf(stderr, "dmaccl-perf: cannot allocate buffers of %zu bytes per rank\n",
            b.args.maxBytes);
    return 1;
  }
  contender cs[PERF_MAX_ALGOS + 1];
  int nc = 0;
  if (b.gpu && b.args.baseline) {
    b.nccl = ncclBaseInit(b.n, b.devs, err, sizeof(err));
    if (b.nccl)
      cs[nc++] = (contender){.name = "nccl", .isNccl = 1};
    else
      printf("# no NCCL baseline: %s\n", err);
  }
  for (int i = 0; i < b.args.nalgos; i++)
    if (makeContender(&b, &cs[nc++], b.args.algos[i])) return 1;
  header(&b);

  int failures = 0;
  for (int coll = PERF_ALLGATHER; coll <= PERF_ALLTOALL; coll <<= 1) {
    if (!(b.args.colls & coll)) continue;
    for (size_t size = b.args.minBytes; size; size = perfNextSize(&b.args, size)) {
      size_t count = perfCount(size, b.n, b.tsize);
      size_t bytes = count * b.tsize * (size_t)b.n;
      double ncclUs = 0;
      for (int i = 0; i < nc; i++) {
        double us = 0;
        if (measure(&b, &cs[i], coll, count, &us)) return 1;
        long long wrong = b.args.check ? checkOnce(&b, &cs[i], coll, count) : 0;
        if (wrong < 0) return 1;
        failures += wrong > 0;
        char vs[16] = "-";
        if (cs[i].isNccl)
          ncclUs = us;
        else if (ncclUs > 0)
          snprintf(vs, sizeof(vs), "%.2fx", ncclUs / us);
        double bus = perfBusBw(bytes, us, b.n);
        cs[i].sumBusBw[coll] += bus;
        cs[i].nrows[coll]++;
        printf("  %-9s %12zu %11zu %6s %-6s %10.2f %9.2f %9.2f %7lld %7s\n",
               coll == PERF_ALLGATHER ? "allgather" : "alltoall", bytes, count,
               perfTypeName(b.args.type), cs[i].name, us, perfAlgBw(bytes, us), bus, wrong, vs);
        fflush(stdout);
      }
    }
  }
  printf("#\n# Avg bus bandwidth (GB/s) over the sizes above:\n");
  for (int coll = PERF_ALLGATHER; coll <= PERF_ALLTOALL; coll <<= 1)
    for (int i = 0; i < nc; i++)
      if (cs[i].nrows[coll])
        printf("#   %-9s %-6s %9.2f\n", coll == PERF_ALLGATHER ? "allgather" : "alltoall",
               cs[i].name, cs[i].sumBusBw[coll] / cs[i].nrows[coll]);
  printf("# %s\n",
         failures ? "WRONG RESULTS in some rows (#wrong > 0)" : "all results checked correct");
  for (int i = 0; i < nc; i++)
    if (!cs[i].isNccl)
      for (int r = 0; r < b.n; r++) dmacclCommDestroy(cs[i].comms[r]);
  ncclBaseFini(b.nccl);
  return failures ? 1 : 0;
}
