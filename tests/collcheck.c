#include "collcheck.h"
#include "harness.h"
#include "plan.h"

#include <string.h>

#include <cuda_runtime_api.h>

size_t ccTypeSize(dmacclDataType_t t) {
  return collTypeSize(t);
}
const char *ccCollName(collId coll) {
  return (unsigned)coll < COLL_NUM ? collTable[coll].name : "?";
}

const char *const ccAlgos[CC_NALGOS] = {"push1", "pushn", "pushb",   "pull1",   "pulln",
                                        "pullb", "stage", "stage2d", "stagesm", "stagell",
                                        "relay", "chain", "twoshot", "split",   "pairs"};

int ccAlgoTakes(collId coll, const char *algo) {
  /* the row whose selection entry applies (collInfo.select): sendrecv
   * runs with Broadcast's; what it takes is its row's in src/plan */
  const char *sel = collTable[coll].select;
  planColl pc;
  planAlgo pa;
  if (planCollParse(sel, strlen(sel), &pc) || planAlgoParse(algo, strlen(algo), &pa)) return 0;
  return (planCollOf(pc)->algos & PLAN_ALGO_BIT(pa)) != 0;
}

void ccAlgoTable(const char *algo, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  /* the library's names only: rows that follow another row's entry
   * (sendrecv: broadcast's) add nothing */
  for (int c = 0; c < COLL_NUM; c++)
    if (strcmp(collTable[c].select, collTable[c].name) == 0 && ccAlgoTakes((collId)c, algo) &&
        at < len)
      at += (size_t)snprintf(buf + at, len - at, "%s%s:%s", at ? ";" : "", collTable[c].name, algo);
}

int ccDevices(int n, int *devs) {
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
    cudaGetLastError();
    ngpu = 1;
  }
  for (int r = 0; r < n && r < CC_MAXR; r++) devs[r] = r % ngpu;
  return ngpu;
}

dmacclResult_t ccInitAlgo(dmacclComm_t *comms, int n, int gpu, const char *algo) {
  char sel[512];
  int devs[CC_MAXR];
  if (gpu) ccDevices(n, devs);
  ccAlgoTable(algo, sel, sizeof(sel));
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = gpu ? dmacclExecutorCuda : dmacclExecutorHost;
  cfg.algorithm = strcmp(algo, "auto") == 0 ? NULL : sel;
  dmacclResult_t rc = dmacclCommInitAll(comms, n, gpu ? devs : NULL, &cfg);
  if (rc != dmacclSuccess)
    fprintf(stderr, "dmacclCommInitAll(%d, %s): %s\n", n, algo, dmacclCommGetLastError(NULL));
  return rc;
}

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));       \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

int ccEnvInit(ccEnv *env, int gpu, dmacclComm_t *comms, int n) {
  memset(env, 0, sizeof(*env));
  env->gpu = gpu;
  for (int r = 0; r < n && gpu; r++) {
    dmacclCommCuDevice(comms[r], &env->dev[r]);
    CUDA_OK(cudaSetDevice(env->dev[r]));
    CUDA_OK(cudaStreamCreateWithFlags(&env->stream[r], cudaStreamNonBlocking));
  }
  return 0;
}

void ccEnvFini(ccEnv *env, int n) {
  for (int r = 0; r < n && env->gpu; r++) {
    cudaSetDevice(env->dev[r]);
    cudaStreamDestroy(env->stream[r]);
  }
}

static void *devAlloc(ccEnv *env, int r, size_t bytes) {
  void *p = NULL;
  if (!env->gpu) return malloc(bytes);
  if (cudaSetDevice(env->dev[r]) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess)
    return NULL;
  return p;
}
static void devFree(ccEnv *env, int r, void *p) {
  if (!p) return;
  if (!env->gpu) {
    free(p);
    return;
  }
  cudaSetDevice(env->dev[r]);
  cudaFree(p);
}
static int upload(ccEnv *env, int r, void *dst, const void *src, size_t n) {
  if (!env->gpu) {
    memcpy(dst, src, n);
    return 0;
  }
  CUDA_OK(cudaSetDevice(env->dev[r]));
  CUDA_OK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
  /* from pageable memory the copy may still be landing when cudaMemcpy
   * returns: the collective's stream must not overtake it */
  CUDA_OK(cudaDeviceSynchronize());
  return 0;
}
static int download(ccEnv *env, int r, void *dst, const void *src, size_t n) {
  if (!env->gpu) {
    memcpy(dst, src, n);
    return 0;
  }
  CUDA_OK(cudaSetDevice(env->dev[r]));
  CUDA_OK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
  return 0;
}

/* --- one collective on every rank ------------------------------------------- */

typedef struct {
  size_t sendElems, recvElems;
  unsigned char *main; /* receive allocation (in place: the one buffer); device or host */
  unsigned char *aux;  /* out of place: the send allocation */
  size_t mainBytes, auxBytes;
  size_t sendOff, recvOff; /* bytes from the allocation (send: aux, or main in place) */
  int sendNull, recvNull;
  unsigned char *wantMain, *wantAux, *got; /* host: expected contents, a download */
  unsigned char *hostSend;                 /* this rank's input, sendElems elements */
  dmacclRequest_t req[COLL_MAX_REQUESTS];  /* persistent: collRequests(coll) of them */
  /* notify: nranks arrival words between two guard words (device or host) */
  uint32_t *arrived, arrivedWant[CC_MAXR + 2];
} ccRank;

struct ccOp {
  ccEnv *env;
  int n;
  ccCase c;
  collShape shape;
  collVArrays v;
  size_t ts;
  unsigned char poison;
  uint32_t arrivedValue; /* notify: what the words must hold */
  ccRank r[CC_MAXR];
};

/* The ...Notify call applies: AllGather(V), eager. */
static int notifies(const ccCase *c) {
  return c->notify && !c->persistent && (c->coll == COLL_ALLGATHER || c->coll == COLL_ALLGATHERV);
}

const ccCase *ccOpCase(const ccOp *o) {
  return &o->c;
}

void ccDescribe(const ccCase *c, int n, char *buf, size_t len) {
  unsigned f = collTable[c->coll].flags;
  snprintf(buf, len, "%s %s%s%s count %zu%s n=%d%s%s%s seed %llu", ccCollName(c->coll),
           collTypeName(c->type), f & COLL_REDUCES ? " " : "",
           f & COLL_REDUCES ? collOpName(c->op) : "", c->count,
           f & COLL_VECTOR ? " (max block)" : "", n, c->inPlace ? " in place" : " out of place",
           c->persistent ? " persistent"
           : notifies(c) ? " eager with arrival words"
                         : " eager",
           c->nullUnused ? " NULL-unused" : "", (unsigned long long)c->seed);
  if (f & COLL_ROOTED) {
    size_t at = strlen(buf);
    snprintf(buf + at, len - at, " root %d", c->root);
  }
}

static void printArrays(const ccOp *o) {
  int n = o->n;
  if (o->c.coll == COLL_ALLGATHERV || o->c.coll == COLL_REDUCESCATTERV) {
    fprintf(stderr, "    counts/displs:");
    for (int i = 0; i < n; i++) fprintf(stderr, " %zu@%zu", o->v.counts[i], o->v.displs[i]);
    fprintf(stderr, "\n");
  } else if (o->c.coll == COLL_ALLTOALLV) {
    for (int r = 0; r < n; r++) {
      fprintf(stderr, "    rank %d send/recv counts@displs:", r);
      for (int i = 0; i < n; i++)
        fprintf(stderr, " %zu@%zu", o->v.sendcounts[r * n + i], o->v.sdispls[r * n + i]);
      fprintf(stderr, " /");
      for (int i = 0; i < n; i++)
        fprintf(stderr, " %zu@%zu", o->v.recvcounts[r * n + i], o->v.rdispls[r * n + i]);
      fprintf(stderr, "\n");
    }
  }
}

void ccOpFree(ccOp *o) {
  if (!o) return;
  for (int r = 0; r < o->n; r++) {
    ccRank *k = &o->r[r];
    collFree(o->c.coll, k->req);
    devFree(o->env, r, k->main);
    devFree(o->env, r, k->aux);
    devFree(o->env, r, k->arrived);
    free(k->wantMain), free(k->wantAux), free(k->got), free(k->hostSend);
  }
  free(o);
}

ccOp *ccOpNew(ccEnv *env, int n, const ccCase *c) {
  ccOp *o = calloc(1, sizeof(*o));
  if (!o || n < 1 || n > CC_MAXR || (unsigned)c->coll >= COLL_NUM) {
    free(o);
    return NULL;
  }
  if (n < collMinRanks(c->coll)) {
    fprintf(stderr, "  %s needs %d ranks or more, not %d\n", ccCollName(c->coll),
            collMinRanks(c->coll), n);
    free(o);
    return NULL;
  }
  o->env = env, o->n = n, o->c = *c, o->ts = collTypeSize(c->type);
  unsigned flags = collTable[c->coll].flags;
  if (!(flags & COLL_IN_PLACE)) o->c.inPlace = 0;
  o->shape.nranks = n;
  o->shape.count = c->count;
  o->shape.root = c->root;
  if (flags & COLL_VECTOR) {
    collRandomV(&o->shape, &o->v, n, c->count, c->seed); /* points the shape at o->v */
    if (c->arrays) o->v = *c->arrays;
  }
  o->c.arrays = NULL;
  size_t ts = o->ts, G = CC_GUARD;
  for (int r = 0; r < n; r++) {
    ccRank *k = &o->r[r];
    k->sendElems = collSendCount(c->coll, &o->shape, r);
    k->recvElems = collRecvCount(c->coll, &o->shape, r);
    if (o->c.inPlace) {
      long long d = 0;
      collInPlace(c->coll, &o->shape, r, &d);
      size_t ad = (size_t)(d < 0 ? -d : d);
      size_t span = d >= 0 ? (ad + k->sendElems > k->recvElems ? ad + k->sendElems : k->recvElems)
                           : (ad + k->recvElems > k->sendElems ? ad + k->recvElems : k->sendElems);
      k->recvOff = G + (d >= 0 ? 0 : ad) * ts;
      k->sendOff = G + (d >= 0 ? ad : 0) * ts;
      k->mainBytes = 2 * G + span * ts;
    } else {
      /* an unused buffer: NULL, or as large as the root's (poisoned, untouched) */
      size_t se = k->sendElems, re = k->recvElems;
      if (flags & COLL_ROOTED) {
        if (!se) se = collSendCount(c->coll, &o->shape, c->root);
        if (!re) re = collRecvCount(c->coll, &o->shape, c->root);
      }
      k->sendNull = c->nullUnused && !k->sendElems;
      k->recvNull = c->nullUnused && !k->recvElems;
      k->recvOff = k->sendOff = G;
      k->mainBytes = 2 * G + re * ts;
      k->auxBytes = k->sendNull ? 0 : 2 * G + se * ts;
    }
    k->main = devAlloc(env, r, k->mainBytes);
    if (notifies(c) && !(k->arrived = devAlloc(env, r, (size_t)(n + 2) * sizeof(uint32_t)))) {
      ccOpFree(o);
      return NULL;
    }
    k->wantMain = malloc(k->mainBytes);
    k->got = malloc(k->mainBytes > k->auxBytes ? k->mainBytes : k->auxBytes);
    k->hostSend = malloc(k->sendElems * ts + 1);
    if (k->auxBytes) {
      k->aux = devAlloc(env, r, k->auxBytes);
      k->wantAux = malloc(k->auxBytes);
    }
    if (!k->main || !k->wantMain || !k->got || !k->hostSend ||
        (k->auxBytes && (!k->aux || !k->wantAux))) {
      fprintf(stderr, "  rank %d: out of memory (%zu + %zu bytes)\n", r, k->mainBytes, k->auxBytes);
      ccOpFree(o);
      return NULL;
    }
  }
  return o;
}

int ccOpFill(ccOp *o, uint64_t seed) {
  const ccCase *c = &o->c;
  size_t ts = o->ts;
  const void *sends[CC_MAXR];
  o->poison = (unsigned char)(CC_POISON ^ (seed * 0x2Fu & 0x3Cu));
  for (int r = 0; r < o->n; r++) {
    ccRank *k = &o->r[r];
    testFillRandom(k->hostSend, k->sendElems * ts, seed * 1000003u + (uint64_t)r * 7919u + 1);
    if (collTable[c->coll].flags & COLL_REDUCES) collSanitize(c->type, k->hostSend, k->sendElems);
    sends[r] = k->hostSend;
    memset(k->wantMain, o->poison, k->mainBytes);
    if (c->inPlace) {
      if (k->sendElems) memcpy(k->wantMain + k->sendOff, k->hostSend, k->sendElems * ts);
    } else if (k->auxBytes) {
      memset(k->wantAux, o->poison ^ 0xFF, k->auxBytes);
      if (k->sendElems) memcpy(k->wantAux + k->sendOff, k->hostSend, k->sendElems * ts);
    }
    if (upload(o->env, r, k->main, k->wantMain, k->mainBytes)) return -1;
    if (k->auxBytes && upload(o->env, r, k->aux, k->wantAux, k->auxBytes)) return -1;
    if (k->arrived) { /* poisoned words; the guards must stay so */
      o->arrivedValue = (uint32_t)(seed * 2654435761u) | 1u;
      for (int i = 0; i < o->n + 2; i++) k->arrivedWant[i] = 0xA5A5A5A5u ^ (uint32_t)i;
      if (upload(o->env, r, k->arrived, k->arrivedWant, (size_t)(o->n + 2) * sizeof(uint32_t)))
        return -1;
      for (int i = 1; i <= o->n; i++) k->arrivedWant[i] = o->arrivedValue;
    }
  }
  for (int r = 0; r < o->n; r++) {
    ccRank *k = &o->r[r];
    if (collReference(c->coll, &o->shape, r, c->type, c->op, sends, k->wantMain + k->recvOff)) {
      char d[256];
      ccDescribe(c, o->n, d, sizeof(d));
      fprintf(stderr, "  %s: the reference has no defined result for rank %d\n", d, r);
      return -1;
    }
  }
  return 0;
}

/* The call (eager, or the Init form when init), on copies of the arrays. */
static dmacclResult_t issueCall(ccOp *o, dmacclComm_t *comms, int r, int init) {
  ccRank *k = &o->r[r];
  const ccCase *c = &o->c;
  unsigned char *sendBase = c->inPlace ? k->main : k->aux;
  const void *send = k->sendNull ? NULL : sendBase + k->sendOff;
  void *recv = k->recvNull ? NULL : k->main + k->recvOff;
  cudaStream_t st = o->env->gpu ? o->env->stream[r] : NULL;
  /* the arrays as copies that are garbage once the call returns */
  collVArrays *tmp = malloc(sizeof(*tmp));
  if (!tmp) return dmacclSystemError;
  memcpy(tmp, &o->v, sizeof(*tmp));
  collShape s = o->shape;
  s.counts = tmp->counts, s.displs = tmp->displs;
  s.sendcounts = tmp->sendcounts, s.sdispls = tmp->sdispls;
  s.recvcounts = tmp->recvcounts, s.rdispls = tmp->rdispls;
  dmacclResult_t rc = !k->arrived || init ? collIssue(c->coll, &s, r, send, recv, c->type, c->op,
                                                      comms[r], st, init ? k->req : NULL)
                      : c->coll == COLL_ALLGATHER
                          ? dmacclAllGatherNotify(send, recv, c->count, c->type, k->arrived + 1,
                                                  o->arrivedValue, comms[r], st)
                          : dmacclAllGatherVNotify(send, recv, s.counts, s.displs, c->type,
                                                   k->arrived + 1, o->arrivedValue, comms[r], st);
  memset(tmp, 0xEE, sizeof(*tmp));
  free(tmp);
  if (rc != dmacclSuccess) {
    char d[256];
    ccDescribe(c, o->n, d, sizeof(d));
    fprintf(stderr, "  %s: rank %d: %s: %s\n", d, r, dmacclGetErrorString(rc),
            dmacclCommGetLastError(comms[r]));
  }
  return rc;
}

dmacclResult_t ccOpInit(ccOp *o, dmacclComm_t *comms, int r) {
  if (!o->c.persistent || o->r[r].req[0]) return dmacclSuccess;
  return issueCall(o, comms, r, 1);
}

dmacclResult_t ccOpIssue(ccOp *o, dmacclComm_t *comms, int r) {
  if (!o->c.persistent) return issueCall(o, comms, r, 0);
  dmacclResult_t rc = ccOpInit(o, comms, r);
  if (rc == dmacclSuccess)
    rc = collStart(o->c.coll, o->r[r].req, o->env->gpu ? o->env->stream[r] : NULL);
  if (rc != dmacclSuccess)
    fprintf(stderr, "  rank %d: dmacclStart: %s\n", r, dmacclCommGetLastError(comms[r]));
  return rc;
}

/* Wrong bytes of one buffer; the first printed with its place. */
static long long compare(const ccOp *o, int r, const unsigned char *got, const unsigned char *want,
                         size_t n, size_t userOff, const char *what) {
  if (memcmp(got, want, n) == 0) return 0;
  long long bad = 0;
  size_t first = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i] && bad++ == 0) first = i;
  long long rel = (long long)first - (long long)userOff;
  char d[256];
  ccDescribe(&o->c, o->n, d, sizeof(d));
  fprintf(stderr,
          "  %s: rank %d %s: %lld wrong bytes; first at byte %lld of the buffer (element %lld%s): "
          "0x%02x, expected 0x%02x (poison 0x%02x)\n",
          d, r, what, bad, rel, rel >= 0 ? rel / (long long)o->ts : -1,
          rel < 0 ? ", guard before it" : "", got[first], want[first], o->poison);
  printArrays(o);
  return bad;
}

long long ccOpCheck(ccOp *o) {
  long long wrong = 0;
  for (int r = 0; r < o->n; r++) {
    ccRank *k = &o->r[r];
    if (download(o->env, r, k->got, k->main, k->mainBytes)) return -1;
    wrong += compare(o, r, k->got, k->wantMain, k->mainBytes, k->recvOff,
                     o->c.inPlace ? "buffer (in place, with guards)" : "recvbuff (with guards)");
    if (k->auxBytes) {
      if (download(o->env, r, k->got, k->aux, k->auxBytes)) return -1;
      wrong += compare(o, r, k->got, k->wantAux, k->auxBytes, k->sendOff,
                       "sendbuff (must be unchanged)");
    }
    if (k->arrived) {
      size_t ab = (size_t)(o->n + 2) * sizeof(uint32_t);
      if (download(o->env, r, k->got, k->arrived, ab)) return -1;
      wrong += compare(o, r, k->got, (const unsigned char *)k->arrivedWant, ab, sizeof(uint32_t),
                       "arrival words (with guards)");
    }
  }
  return wrong;
}

dmacclResult_t ccWait(ccEnv *env, dmacclComm_t *comms, int n) {
  dmacclResult_t first = dmacclSuccess;
  for (int r = 0; r < n; r++) {
    if (env->gpu) {
      cudaSetDevice(env->dev[r]);
      cudaError_t e = cudaStreamSynchronize(env->stream[r]);
      if (e != cudaSuccess) {
        fprintf(stderr, "  rank %d: stream: %s\n", r, cudaGetErrorString(e));
        if (first == dmacclSuccess) first = dmacclUnhandledCudaError;
      }
    }
    dmacclResult_t rc = dmacclCommSynchronize(comms[r]);
    if (rc != dmacclSuccess) {
      fprintf(stderr, "  rank %d: synchronize: %s: %s\n", r, dmacclGetErrorString(rc),
              dmacclCommGetLastError(comms[r]));
      if (first == dmacclSuccess) first = rc;
    }
  }
  return first;
}

/* One round: issue ops[i] (those with want[i]) in a group, wait, check. */
static long long round1(ccEnv *env, dmacclComm_t *comms, int n, ccOp **ops, int k, int onlyPers) {
  int failed = dmacclGroupStart() != dmacclSuccess;
  for (int i = 0; i < k && !failed; i++)
    if (!onlyPers || ops[i]->c.persistent)
      for (int r = 0; r < n && !failed; r++) failed = ccOpIssue(ops[i], comms, r) != dmacclSuccess;
  if (dmacclGroupEnd() != dmacclSuccess) {
    fprintf(stderr, "  group end: %s\n", dmacclCommGetLastError(NULL));
    failed = 1;
  }
  if (failed) {
    ccWait(env, comms, n);
    return -1;
  }
  if (ccWait(env, comms, n) != dmacclSuccess) return -1;
  long long wrong = 0;
  for (int i = 0; i < k; i++)
    if (!onlyPers || ops[i]->c.persistent) {
      long long w = ccOpCheck(ops[i]);
      if (w < 0) return -1;
      wrong += w;
    }
  return wrong;
}

long long ccRunGroup(ccEnv *env, dmacclComm_t *comms, int n, const ccCase *cases, int k) {
  ccOp *ops[64] = {0};
  long long wrong = -1;
  int pers = 0;
  if (k < 1 || k > 64) return -1;
  for (int i = 0; i < k; i++) {
    if (!(ops[i] = ccOpNew(env, n, &cases[i])) || ccOpFill(ops[i], cases[i].seed)) goto out;
    pers |= cases[i].persistent;
  }
  wrong = round1(env, comms, n, ops, k, 0);
  if (wrong == 0 && pers) { /* the requests again, on new data */
    for (int i = 0; i < k; i++)
      if (cases[i].persistent && ccOpFill(ops[i], cases[i].seed + 0x5EED)) {
        wrong = -1;
        goto out;
      }
    wrong = round1(env, comms, n, ops, k, 1);
  }
out:
  for (int i = 0; i < k; i++) ccOpFree(ops[i]);
  return wrong;
}

long long ccRunCase(ccEnv *env, dmacclComm_t *comms, int n, const ccCase *c) {
  return ccRunGroup(env, comms, n, c, 1);
}

long long ccRun(ccEnv *env, dmacclComm_t *comms, int n, collId coll, dmacclDataType_t type,
                size_t count, int inPlace, uint64_t seed) {
  ccCase c = {.coll = coll,
              .type = type,
              .op = dmacclSum,
              .count = count,
              .inPlace = inPlace,
              .seed = seed};
  return ccRunCase(env, comms, n, &c);
}
