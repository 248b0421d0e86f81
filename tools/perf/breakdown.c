#include "breakdown.h"

#include <stdio.h>
#include <string.h>

#ifdef DMACCL_HAVE_CUPTI
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>

enum { REC_COPY, REC_KERNEL, REC_PROBE, REC_RUNTIME, REC_DRIVER };
typedef struct {
  int kind, dev; /* API calls: dev is the calling thread's id */
  uint64_t start, end;
  long long ctas;  /* kernels: the grid's blocks */
  uint32_t stream; /* copies and kernels: CUPTI's stream id */
  uint64_t bytes;  /* copies */
  uint32_t cbid;   /* API calls: CUPTI's callback id (the function's name) */
} rec;

static struct {
  pthread_mutex_t lock;
  rec *v;
  size_t n, cap;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define BUF_BYTES (8u << 20)

static void CUPTIAPI bufRequested(uint8_t **buf, size_t *size, size_t *maxRecords) {
  *buf = aligned_alloc(8, BUF_BYTES);
  *size = *buf ? BUF_BYTES : 0;
  *maxRecords = 0;
}

static void push(int kind, int dev, uint64_t s, uint64_t e, long long ctas, uint32_t stream,
                 uint64_t bytes, uint32_t cbid) {
  if (T.n == T.cap) {
    size_t cap = T.cap ? 2 * T.cap : 4096;
    rec *v = realloc(T.v, cap * sizeof(rec));
    if (!v) return;
    T.v = v, T.cap = cap;
  }
  T.v[T.n++] = (rec){kind, dev, s, e, ctas, stream, bytes, cbid};
}

static void CUPTIAPI bufCompleted(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                  size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *r = NULL;
  pthread_mutex_lock(&T.lock);
  while (valid && cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)r;
      push(m->bytes == BD_PROBE_BYTES ? REC_PROBE : REC_COPY, (int)m->deviceId, m->start, m->end, 0,
           m->streamId, m->bytes, 0);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      CUpti_ActivityMemcpyPtoP4 *m = (CUpti_ActivityMemcpyPtoP4 *)r;
      push(REC_COPY, (int)m->deviceId, m->start, m->end, 0, m->streamId, m->bytes, 0);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)r;
      push(r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? REC_RUNTIME : REC_DRIVER, (int)a->threadId,
           a->start, a->end, 0, 0, 0, (uint32_t)a->cbid);
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
      push(REC_KERNEL, (int)k->deviceId, k->start, k->end,
           (long long)k->gridX * k->gridY * k->gridZ, k->streamId, 0, 0);
      break;
    }
    default: break;
    }
  }
  pthread_mutex_unlock(&T.lock);
  free(buf);
}

static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
                                           CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                           CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

int bdInit(char *err, size_t errlen) {
  CUptiResult r = cuptiActivityRegisterCallbacks(bufRequested, bufCompleted);
  for (size_t i = 0; i < NKINDS && r == CUPTI_SUCCESS; i++) r = cuptiActivityEnable(kinds[i]);
  if (r != CUPTI_SUCCESS) {
    const char *s = NULL;
    cuptiGetResultString(r, &s);
    snprintf(err, errlen, "CUPTI: %s", s ? s : "error");
    return -1;
  }
  return 0;
}

uint64_t bdNow(void) {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

/* Records stay enabled for the whole pass (enabling costs milliseconds);
 * an operation's records are those flushed between bdStart and bdStop. */
int bdStart(void) {
  if (cuptiActivityFlushAll(1) != CUPTI_SUCCESS) return -1;
  pthread_mutex_lock(&T.lock);
  T.n = 0;
  pthread_mutex_unlock(&T.lock);
  return 0;
}

int bdStop(void) {
  return cuptiActivityFlushAll(1) == CUPTI_SUCCESS ? 0 : -1;
}

static int byStart(const void *a, const void *b) {
  const rec *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

int bdSplit(int dev, uint64_t tProbe, uint64_t t0, uint64_t t1, uint64_t tDone,
            perfBreakdown *out) {
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&T.lock);
  qsort(T.v, T.n, sizeof(rec), byStart);
  uint64_t probe = 0, endProbe = 0, first = 0, last = 0, busy = 0, curEnd = 0;
  for (size_t i = 0; i < T.n; i++) {
    rec *r = &T.v[i];
    if (r->dev != dev || r->start < tProbe || r->end > tDone) continue;
    if (r->kind == REC_PROBE) {
      /* the probe copies on the caller's stream: first before, last after */
      if (!probe) probe = r->start;
      endProbe = r->start;
      continue;
    }
    if (r->kind == REC_COPY)
      out->copies++;
    else
      out->kernels++;
    if (!first) first = r->start;
    if (r->end > last) last = r->end;
    /* union of the busy intervals (records sorted by start) */
    if (r->start >= curEnd) {
      busy += r->end - r->start;
      curEnd = r->end;
    } else if (r->end > curEnd) {
      busy += r->end - curEnd;
      curEnd = r->end;
    }
  }
  pthread_mutex_unlock(&T.lock);
  if (!first) return -1; /* no device work seen */
  if (!probe || endProbe < last) {
    /* no usable probes: the host's return from synchronization ends it */
    out->hostEnd = 1;
    probe = tProbe;
    endProbe = tDone;
  }
  double latency = probe > tProbe ? (double)(probe - tProbe) : 0;
  double pre = first > t1 ? (double)(first - t1) : 0;
  double sched = latency < pre ? latency : pre;
  double gaps = (double)(last - first) - (double)busy;
  out->control = (double)(t1 - t0) * 1e-3;
  out->schedule = (sched + gaps) * 1e-3;
  out->copy = (double)busy * 1e-3;
  out->sync = ((pre - sched) + (double)(endProbe > last ? endProbe - last : 0)) * 1e-3;
  out->total = (double)(endProbe - t0) * 1e-3;
  return 0;
}

/* Record i is a driver call the runtime made inside one of its calls on the
 * same thread (not a call of the caller's). T.lock held. */
static int nestedCall(size_t i) {
  const rec *r = &T.v[i];
  if (r->kind != REC_DRIVER) return 0;
  for (size_t j = 0; j < T.n; j++)
    if (T.v[j].kind == REC_RUNTIME && T.v[j].dev == r->dev && T.v[j].start <= r->start &&
        r->end <= T.v[j].end)
      return 1;
  return 0;
}

int bdApiCalls(uint64_t t0, uint64_t t1) {
  int calls = 0;
  pthread_mutex_lock(&T.lock);
  for (size_t i = 0; i < T.n; i++) {
    const rec *r = &T.v[i];
    if ((r->kind != REC_RUNTIME && r->kind != REC_DRIVER) || r->start < t0 || r->start > t1)
      continue;
    calls += !nestedCall(i);
  }
  pthread_mutex_unlock(&T.lock);
  return calls;
}

void bdKernels(int dev, int *kernels, double *us, int *maxCtas, int *copies) {
  *kernels = *maxCtas = *copies = 0;
  *us = 0;
  pthread_mutex_lock(&T.lock);
  for (size_t i = 0; i < T.n; i++) {
    const rec *r = &T.v[i];
    if (r->dev != dev) continue;
    if (r->kind == REC_COPY) ++*copies;
    if (r->kind != REC_KERNEL) continue;
    ++*kernels;
    *us += (double)(r->end - r->start) * 1e-3;
    if (r->ctas > *maxCtas) *maxCtas = (int)r->ctas;
  }
  pthread_mutex_unlock(&T.lock);
}

/* The API calls that started inside the call [t0, t1], any thread, with
 * their names; then each thread's sum against the call's host time. */
static void apiLines(FILE *f, uint64_t t0, uint64_t t1, const char *label) {
  enum { MAXT = 8 };
  uint32_t tid[MAXT];
  double sum[MAXT];
  int calls[MAXT], nt = 0, more = 0;
  for (size_t i = 0; i < T.n; i++) {
    const rec *r = &T.v[i];
    if ((r->kind != REC_RUNTIME && r->kind != REC_DRIVER) || r->start < t0 || r->start > t1)
      continue;
    const char *name = NULL;
    cuptiGetCallbackName(r->kind == REC_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                : CUPTI_CB_DOMAIN_DRIVER_API,
                         r->cbid, &name);
    double us = (double)(r->end - r->start) * 1e-3;
    fprintf(f, "%s api thread %u %-34s start %9.2f us dur %8.2f us\n", label, (unsigned)r->dev,
            name ? name : "?", ((double)r->start - (double)t0) * 1e-3, us);
    if (nestedCall(i)) continue;
    int k = 0;
    while (k < nt && tid[k] != (uint32_t)r->dev) k++;
    if (k == nt && nt < MAXT) tid[nt] = (uint32_t)r->dev, sum[nt] = 0, calls[nt++] = 0;
    more |= k == MAXT;
    if (k < nt) sum[k] += us, calls[k]++;
  }
  for (int k = 0; k < nt; k++)
    fprintf(f, "%s api thread %u: %d top-level calls, %.2f us of the call's %.2f us\n", label,
            (unsigned)tid[k], calls[k], sum[k], (double)(t1 - t0) * 1e-3);
  if (more) fprintf(f, "%s api: calls of more than %d threads, the rest not summed\n", label, MAXT);
}

void bdTimeline(FILE *f, int dev, uint64_t t0, uint64_t t1, const char *label) {
  pthread_mutex_lock(&T.lock);
  qsort(T.v, T.n, sizeof(rec), byStart);
  apiLines(f, t0, t1, label);
  for (size_t i = 0; i < T.n; i++) {
    const rec *r = &T.v[i];
    if (r->kind == REC_RUNTIME || r->kind == REC_DRIVER || r->dev != dev) continue;
    static const char *names[] = {"copy", "kernel", "probe"};
    fprintf(f, "%s dev %d %-6s stream %3u start %9.2f us end %9.2f us dur %8.2f us", label, dev,
            names[r->kind], r->stream, ((double)r->start - (double)t0) * 1e-3,
            ((double)r->end - (double)t0) * 1e-3, (double)(r->end - r->start) * 1e-3);
    if (r->kind == REC_KERNEL)
      fprintf(f, " ctas %lld\n", r->ctas);
    else
      fprintf(f, " bytes %llu GB/s %.1f\n", (unsigned long long)r->bytes,
              r->end > r->start ? (double)r->bytes / (double)(r->end - r->start) : 0.0);
  }
  pthread_mutex_unlock(&T.lock);
}

/* CUPTI detaches safely only from a CUDA call's exit callsite (its
 * documentation; other threads, dmaccl's progress thread or NCCL's, may be
 * inside CUDA calls meanwhile): bdFini subscribes to cudaGetDevice, makes
 * that call, and the callback detaches on its way out (the direct call,
 * which the 2026-11-26 runs made, if no callback comes). */
static int detachNow;
static pthread_t detacher; /* the thread in bdFini: a library thread's cudaGetDevice is not it */
static void CUPTIAPI detachAtExit(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                  const void *data) {
  (void)user, (void)cbid;
  const CUpti_CallbackData *cb = data;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cb->callbackSite == CUPTI_API_EXIT &&
      pthread_equal(pthread_self(), detacher) &&
      __atomic_exchange_n(&detachNow, 0, __ATOMIC_ACQ_REL))
    cuptiFinalize();
}

/* Detaches CUPTI too: disabled activity kinds still leave it attached, and
 * an attached CUPTI slowed every CUDA call of the process afterwards (a
 * 2-rank eager AllGather loop read 12.2-13.7 us per operation for dmaccl
 * and NCCL alike after the --kernels pass, 8.1-10.5 without it, 2x H100,
 * 2026-11-26). The callers synchronized their streams before. */
void bdFini(void) {
  for (size_t i = 0; i < NKINDS; i++) cuptiActivityDisable(kinds[i]);
  cuptiActivityFlushAll(1);
  CUpti_SubscriberHandle sub;
  int detached = 0;
  detacher = pthread_self(); /* before the callback can run on any thread */
  if (cuptiSubscribe(&sub, (CUpti_CallbackFunc)detachAtExit, NULL) == CUPTI_SUCCESS) {
    if (cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) == CUPTI_SUCCESS) {
      int dev;
      __atomic_store_n(&detachNow, 1, __ATOMIC_RELEASE);
      cudaGetDevice(&dev);
      detached = !__atomic_exchange_n(&detachNow, 0, __ATOMIC_ACQ_REL); /* the callback took it */
    }
    if (!detached) cuptiUnsubscribe(sub);
  }
  if (!detached) cuptiFinalize();
  pthread_mutex_lock(&T.lock);
  free(T.v);
  T.v = NULL;
  T.n = T.cap = 0;
  pthread_mutex_unlock(&T.lock);
}

#else /* built without CUPTI */

int bdInit(char *err, size_t errlen) {
  snprintf(err, errlen, "dmaccl-perf was built without CUPTI");
  return -1;
}
uint64_t bdNow(void) {
  return 0;
}
int bdStart(void) {
  return -1;
}
int bdStop(void) {
  return -1;
}
int bdSplit(int dev, uint64_t tProbe, uint64_t t0, uint64_t t1, uint64_t tDone,
            perfBreakdown *out) {
  (void)dev, (void)tProbe, (void)t0, (void)t1, (void)tDone;
  memset(out, 0, sizeof(*out));
  return -1;
}
int bdApiCalls(uint64_t t0, uint64_t t1) {
  (void)t0, (void)t1;
  return 0;
}
void bdKernels(int dev, int *kernels, double *us, int *maxCtas, int *copies) {
  (void)dev;
  *kernels = *maxCtas = *copies = 0;
  *us = 0;
}
void bdTimeline(FILE *f, int dev, uint64_t t0, uint64_t t1, const char *label) {
  (void)t1, (void)f, (void)dev, (void)t0, (void)label;
}
void bdFini(void) {}
#endif
