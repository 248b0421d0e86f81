/*
 * dmaccl-perf: nccl-tests-style benchmark of dmaccl's AllGather and AlltoAll,
 * every algorithm, with NCCL's own collectives as baseline rows in the same
 * run. With no GPU it runs on the host executor (ranks as threads).
 *
 * Timing as nccl-tests: warm-up, then `iters` back-to-back operations issued
 * on all ranks (grouped), host clock around issue + final synchronization,
 * time per operation = elapsed / iters. With -c 1, one more operation per
 * size runs on random data into poisoned outputs and every byte is checked.
 *
 * With -p N the tool forks N processes before any CUDA call, one rank (one
 * GPU) each, as PyTorch, vLLM or SGLang run; NCCL's baseline then runs one
 * rank per process too. Each process times its own loop after a barrier;
 * rank 0 prints the average over ranks (bandwidths and vsNCCL come from it)
 * and rank 0's own, the minimum and the maximum time, as nccl-tests with MPI.
 */
#include "args.h"
#include "baseline_nccl.h"
#include "common/data.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXR 64
#define POISON 0xA5

typedef struct {
  char name[16];
  int isNccl;
  dmacclComm_t comms[MAXR]; /* local ranks */
  void *send[MAXR], *recv[MAXR];
  int ownBuffers; /* send/recv from dmacclMemAlloc on this contender's comm */
  double sumBusBw[3];
  int nrows[3];
} contender;

/* What the processes of -p share (mapped before fork). */
typedef struct {
  pthread_barrier_t barrier;
  double us[MAXR];
  long long wrong[MAXR];
  int okId;
  char ncclId[128];
  dmacclUniqueId ids[PERF_MAX_ALGOS + 1];
} perfShared;

typedef struct {
  perfArgs args;
  int gpu, n;        /* n: ranks in all */
  int nlocal, first; /* ranks of this process: first .. first+nlocal-1 */
  int mp;            /* one rank per process (-p) */
  perfShared *sh;
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

static void barrier(bench *b) {
  if (b->mp) pthread_barrier_wait(&b->sh->barrier);
}

static int issue(bench *b, contender *c, int coll, size_t count) {
  if (c->isNccl)
    return ncclBaseIssue(b->nccl, coll, b->send, b->recv, count, b->args.type, b->streams);
  dmacclGroupStart();
  dmacclResult_t rc = dmacclSuccess;
  for (int r = 0; r < b->nlocal && rc == dmacclSuccess; r++) {
    cudaStream_t s = b->gpu ? b->streams[r] : NULL;
    rc = coll == PERF_ALLGATHER
             ? dmacclAllGather(c->send[r], c->recv[r], count, b->args.type, c->comms[r], s)
             : dmacclAlltoAll(c->send[r], c->recv[r], count, b->args.type, c->comms[r], s);
  }
  dmacclResult_t e = dmacclGroupEnd();
  if (rc == dmacclSuccess) rc = e;
  if (rc != dmacclSuccess)
    fprintf(stderr, "dmaccl-perf: %s: %s\n", dmacclGetErrorString(rc),
            dmacclCommGetLastError(NULL));
  return rc == dmacclSuccess ? 0 : -1;
}

static int syncAll(bench *b, contender *c) {
  for (int r = 0; r < b->nlocal; r++) {
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

/* Runs one operation into poisoned outputs and counts wrong elements (of
 * every process's ranks). */
static long long checkOnce(bench *b, contender *c, int coll, size_t count) {
  size_t chunk = count * b->tsize, total = chunk * (size_t)b->n;
  void **recv = c->recv;
  for (int r = 0; r < b->nlocal; r++) {
    if (b->gpu) {
      CUDA_CHECK(cudaSetDevice(b->devs[r]));
      CUDA_CHECK(cudaMemset(recv[r], POISON, total));
      CUDA_CHECK(cudaDeviceSynchronize());
    } else {
      memset(recv[r], POISON, total);
    }
  }
  barrier(b); /* nobody writes into a peer still poisoning */
  if (issue(b, c, coll, count) || syncAll(b, c)) return -1;
  long long wrong = 0;
  for (int t = 0; t < b->nlocal; t++) {
    int gt = b->first + t;
    const unsigned char *got = recv[t];
    if (b->gpu) {
      CUDA_CHECK(cudaMemcpy(b->scratch, recv[t], total, cudaMemcpyDeviceToHost));
      got = b->scratch;
    }
    for (int f = 0; f < b->n; f++) {
      const unsigned char *want = b->pool[f] + (coll == PERF_ALLGATHER ? 0 : (size_t)gt * chunk);
      wrong += (long long)dataCountWrong(got + (size_t)f * chunk, want, chunk, b->tsize);
    }
  }
  if (b->mp) {
    b->sh->wrong[b->first] = wrong;
    barrier(b);
    wrong = 0;
    for (int r = 0; r < b->n; r++) wrong += b->sh->wrong[r];
    barrier(b);
  }
  return wrong;
}

typedef struct {
  double avg, rank0, min, max;
} perfTime;

static int measure(bench *b, contender *c, int coll, size_t count, perfTime *t) {
  for (int i = 0; i < b->args.warmup; i++)
    if (issue(b, c, coll, count)) return -1;
  if (syncAll(b, c)) return -1;
  barrier(b);
  double t0 = nowSec();
  for (int i = 0; i < b->args.iters; i++)
    if (issue(b, c, coll, count)) return -1;
  if (syncAll(b, c)) return -1;
  double us = (nowSec() - t0) * 1e6 / b->args.iters;
  t->avg = t->rank0 = t->min = t->max = us;
  if (b->mp) {
    b->sh->us[b->first] = us;
    barrier(b);
    t->avg = 0;
    t->rank0 = t->min = t->max = b->sh->us[0];
    for (int r = 0; r < b->n; r++) {
      double x = b->sh->us[r];
      t->avg += x / b->n;
      if (x < t->min) t->min = x;
      if (x > t->max) t->max = x;
    }
    barrier(b);
  }
  return 0;
}

static int setupBuffers(bench *b) {
  size_t maxBytes = b->args.maxBytes;
  if (b->gpu) b->scratch = malloc(maxBytes);
  for (int r = 0; r < b->n; r++) {
    b->pool[r] = malloc(maxBytes);
    if (!b->pool[r] || (b->gpu && !b->scratch)) return -1;
    dataFillRandom(b->pool[r], maxBytes, 1234 + (uint64_t)r);
  }
  for (int l = 0; l < b->nlocal; l++) {
    int r = b->first + l;
    if (b->mp && !b->gpu) continue; /* shared memory per contender (makeContender) */
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

static int makeContender(bench *b, contender *c, const char *algo) {
  memset(c, 0, sizeof(*c));
  snprintf(c->name, sizeof(c->name), "%s", algo);
  char sel[96];
  snprintf(sel, sizeof(sel), "allgather:%s;alltoall:%s", algo, algo);
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
    barrier(b);
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
    memcpy(c->send[0], b->pool[b->first], maxBytes);
    c->ownBuffers = 1;
  }
  return 0;
}

static void header(bench *b) {
  char gpus[512] = "";
  if (b->gpu) {
    struct cudaDeviceProp p;
    size_t o = 0;
    for (int r = 0; r < b->n; r++)
      o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, " %d", b->mp ? r : b->devs[r]);
    if (cudaGetDeviceProperties(&p, b->devs[0]) == cudaSuccess)
      snprintf(gpus + o, sizeof(gpus) - o, " (%s)", p.name);
  }
  int v = 0;
  dmacclGetVersion(&v);
  printf("# dmaccl-perf (dmaccl %d): executor %s%s, %d ranks%s%s, type %s, iters %d, warmup %d, "
         "check %d\n",
         v, b->gpu ? "cuda" : "host",
         b->mp    ? " (one process per rank)"
         : b->gpu ? " (one process drives every GPU)"
                  : " (ranks are threads on host memory)",
         b->n, b->gpu ? ", GPUs" : "", gpus, perfTypeName(b->args.type), b->args.iters,
         b->args.warmup, b->args.check);
  if (b->mp)
    printf("# time = average over ranks of each rank's time per operation; bandwidths and vsNCCL "
           "use it; r0/min/max: rank 0's, the fastest and the slowest rank's time\n");
  printf("# size: AllGather = total output bytes, AlltoAll = bytes each rank sends; busbw = "
         "algbw*(n-1)/n\n");
  if (b->nccl)
    printf("# baseline: NCCL %s, %s, NCCL_NVLS_ENABLE=0; vsNCCL = NCCL time / dmaccl time (above "
           "1: dmaccl faster)\n",
           ncclBaseVersion(b->nccl),
           b->mp ? "one rank per process" : "one process driving all GPUs");
  printf("#\n# %-9s %12s %11s %6s %-6s %10s %9s %9s %7s %7s", "coll", "size(B)", "count", "type",
         "algo", "time(us)", "algbw", "busbw", "#wrong", "vsNCCL");
  if (b->mp) printf(" %9s %9s %9s", "r0(us)", "min(us)", "max(us)");
  printf("\n");
}

static int benchMain(bench *b) {
  char err[256];
  int ndev = 0;
  if (b->args.executor != PERF_EXEC_HOST &&
      (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)) {
    if (b->args.executor == PERF_EXEC_CUDA) {
      fprintf(stderr, "dmaccl-perf: -B cuda but no CUDA device is present\n");
      return 2;
    }
    ndev = 0;
    if (b->first == 0) printf("# no GPU found: running on the host executor\n");
  }
  b->gpu = ndev > 0 && b->args.executor != PERF_EXEC_HOST;
  if (!b->mp) b->n = b->nlocal = b->args.nranks ? b->args.nranks : (b->gpu ? ndev : 4);
  if (b->n > MAXR || (b->gpu && b->n > ndev)) {
    fprintf(stderr, "dmaccl-perf: %d ranks but %s\n", b->n,
            b->gpu ? "not that many GPUs" : "too many ranks");
    return 2;
  }
  for (int l = 0; l < b->nlocal; l++) b->devs[l] = b->first + l;
  if (b->gpu && b->mp && cudaSetDevice(b->first) != cudaSuccess) return 1;
  if (setupBuffers(b)) {
    fprintf(stderr, "dmaccl-perf: cannot allocate buffers of %zu bytes per rank\n",
            b->args.maxBytes);
    return 1;
  }
  contender cs[PERF_MAX_ALGOS + 1];
  int nc = 0;
  if (b->gpu && b->args.baseline) {
    if (!b->mp) {
      b->nccl = ncclBaseInit(b->n, b->devs, err, sizeof(err));
    } else {
      if (b->first == 0) b->sh->okId = ncclBaseMakeId(b->sh->ncclId, err, sizeof(err)) == 0;
      barrier(b);
      b->nccl =
          b->sh->okId ? ncclBaseInitRank(b->n, b->first, b->sh->ncclId, err, sizeof(err)) : NULL;
    }
    if (b->nccl) {
      cs[nc] = (contender){.name = "nccl", .isNccl = 1};
      for (int l = 0; l < b->nlocal; l++) {
        cs[nc].send[l] = b->send[l];
        cs[nc].recv[l] = b->recv[l];
      }
      nc++;
    } else if (b->first == 0)
      printf("# no NCCL baseline: %s\n", err);
  }
  for (int i = 0; i < b->args.nalgos; i++)
    if (makeContender(b, &cs[nc++], b->args.algos[i])) return 1;
  int print = b->first == 0;
  if (print) header(b);

  int failures = 0;
  for (int coll = PERF_ALLGATHER; coll <= PERF_ALLTOALL; coll <<= 1) {
    if (!(b->args.colls & coll)) continue;
    for (size_t size = b->args.minBytes; size; size = perfNextSize(&b->args, size)) {
      size_t count = perfCount(size, b->n, b->tsize);
      size_t bytes = count * b->tsize * (size_t)b->n;
      double ncclUs = 0;
      for (int i = 0; i < nc; i++) {
        perfTime t;
        if (measure(b, &cs[i], coll, count, &t)) return 1;
        double us = t.avg;
        long long wrong = b->args.check ? checkOnce(b, &cs[i], coll, count) : 0;
        if (wrong < 0) return 1;
        failures += wrong > 0;
        char vs[16] = "-";
        if (cs[i].isNccl)
          ncclUs = us;
        else if (ncclUs > 0)
          snprintf(vs, sizeof(vs), "%.2fx", ncclUs / us);
        double bus = perfBusBw(bytes, us, b->n);
        cs[i].sumBusBw[coll] += bus;
        cs[i].nrows[coll]++;
        if (!print) continue;
        printf("  %-9s %12zu %11zu %6s %-6s %10.2f %9.2f %9.2f %7lld %7s",
               coll == PERF_ALLGATHER ? "allgather" : "alltoall", bytes, count,
               perfTypeName(b->args.type), cs[i].name, us, perfAlgBw(bytes, us), bus, wrong, vs);
        if (b->mp) printf(" %9.2f %9.2f %9.2f", t.rank0, t.min, t.max);
        printf("\n");
        fflush(stdout);
      }
    }
  }
  if (print) {
    printf("#\n# Avg bus bandwidth (GB/s) over the sizes above:\n");
    for (int coll = PERF_ALLGATHER; coll <= PERF_ALLTOALL; coll <<= 1)
      for (int i = 0; i < nc; i++)
        if (cs[i].nrows[coll])
          printf("#   %-9s %-6s %9.2f\n", coll == PERF_ALLGATHER ? "allgather" : "alltoall",
                 cs[i].name, cs[i].sumBusBw[coll] / cs[i].nrows[coll]);
    printf("# %s\n",
           failures ? "WRONG RESULTS in some rows (#wrong > 0)" : "all results checked correct");
  }
  for (int i = 0; i < nc; i++)
    if (!cs[i].isNccl)
      for (int r = 0; r < b->nlocal; r++) {
        if (cs[i].ownBuffers) {
          dmacclMemFree(cs[i].comms[r], cs[i].send[r]);
          dmacclMemFree(cs[i].comms[r], cs[i].recv[r]);
        }
        dmacclCommDestroy(cs[i].comms[r]);
      }
  ncclBaseFini(b->nccl);
  return failures ? 1 : 0;
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
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&sh->barrier, &ba, (unsigned)n);
  fflush(stdout);
  pid_t pids[MAXR];
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      b.mp = 1;
      b.sh = sh;
      b.n = n;
      b.nlocal = 1;
      b.first = r;
      int rc = benchMain(&b);
      fflush(stdout);
      _exit(rc);
    }
  }
  int worst = 0;
  for (int r = 0; r < n; r++) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    if (rc) fprintf(stderr, "dmaccl-perf: rank %d exited with %d\n", r, rc);
    if (rc > worst) worst = rc;
  }
  return worst;
}
