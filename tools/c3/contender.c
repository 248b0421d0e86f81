/* dmaccl-c3's contenders behind one issue call: NCCL's settings (default,
 * high-priority stream, fewer CTAs, copy-engine mode) through
 * tools/perf/baseline_nccl.c's ncclBaseIssue, and dmaccl's algorithms
 * through the tools' collective table (common/colls.h: collIssue). One rank
 * per process. */
#include "c3_gpu.h"
#include "perf/args.h"

#include <stdlib.h>
#include <string.h>

int c3ContenderMakeId(const c3ContenderSpec *s, c3Id *id, char *err, size_t errlen) {
  memset(id, 0, sizeof(*id));
  if (s->kind == C3_DMACCL) {
    if (dmacclGetUniqueId(&id->dmaccl) != dmacclSuccess) {
      snprintf(err, errlen, "dmacclGetUniqueId: %s", dmacclCommGetLastError(NULL));
      return -1;
    }
    return 0;
  }
  return ncclBaseMakeId(id->nccl, err, errlen);
}

static int makeStream(c3Contender *c, char *err, size_t errlen) {
  int least = 0, greatest = 0;
  cudaError_t e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
  int prio = c->spec.highPrio ? greatest : least;
  if (e == cudaSuccess) e = cudaStreamCreateWithPriority(&c->stream, cudaStreamNonBlocking, prio);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "collective stream: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

static int initDmaccl(c3Contender *c, int nranks, int rank, const c3Id *id, unsigned colls,
                      char *err, size_t errlen) {
  const c3ContenderSpec *s = &c->spec;
  /* the algorithm for every collective of the run that takes it, in the
   * library's selection names (c3Selection) */
  char sel[512];
  if (c3Selection(s, colls, sel, sizeof(sel))) {
    snprintf(err, errlen, "the selection string for %s does not fit in %zu bytes", s->name,
             sizeof(sel));
    return -1;
  }
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  cfg.executor = dmacclExecutorCuda;
  cfg.algorithm = sel[0] ? sel : NULL; /* "": auto */
  /* A variant's parameter holds while its communicator is made (parameters
   * are read at init), and the previous value comes back afterwards. */
  char *old = NULL;
  if (s->envVar[0]) {
    const char *o = getenv(s->envVar);
    old = o ? strdup(o) : NULL;
    setenv(s->envVar, s->envVal, 1);
  }
  dmacclResult_t rc = dmacclCommInitRank(&c->comm, nranks, id->dmaccl, rank, &cfg);
  if (s->envVar[0]) {
    if (old)
      setenv(s->envVar, old, 1);
    else
      unsetenv(s->envVar);
    free(old);
  }
  if (rc != dmacclSuccess) {
    snprintf(err, errlen, "dmacclCommInitRank: %s", dmacclCommGetLastError(NULL));
    c->comm = NULL;
    return -1;
  }
  return 0;
}

int c3ContenderInit(c3Contender *c, const c3ContenderSpec *s, int nranks, int rank, const c3Id *id,
                    unsigned colls, void *send, size_t sendBytes, void *recv, size_t recvBytes,
                    char *err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  c->spec = *s;
  c->rank = rank;
  c->send = send;
  c->recv = recv;
  if (makeStream(c, err, errlen)) return -1;
  if (s->kind == C3_DMACCL) return initDmaccl(c, nranks, rank, id, colls, err, errlen);
  c->nccl = ncclBaseInitRank(nranks, rank, id->nccl, s->kind == C3_NCCL_CE,
                             s->kind == C3_NCCL_CTA ? s->ctas : 0, err, errlen);
  if (!c->nccl) return -1;
  if (s->kind != C3_NCCL_CE) return 0;
  /* The copy-engine path needs ncclMemAlloc'd symmetric windows, one size
   * for both (a collective call: every rank passes the same). */
  void *ws[1], *wr[1];
  if (ncclBaseAllocBuffers(c->nccl, sendBytes > recvBytes ? sendBytes : recvBytes, ws, wr, err,
                           errlen))
    return -1;
  cudaError_t e = cudaMemcpy(ws[0], send, sendBytes, cudaMemcpyDeviceToDevice);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "copying the send data into NCCL's window: %s", cudaGetErrorString(e));
    return -1;
  }
  c->send = ws[0];
  c->recv = wr[0];
  return 0;
}

int c3ContenderIssue(c3Contender *c, collId coll, const collShape *sh) {
  if (c->spec.kind != C3_DMACCL) {
    cudaStream_t s[1] = {c->stream};
    void *send[1] = {c->send}, *recv[1] = {c->recv};
    return ncclBaseIssue(c->nccl, coll, sh, send, recv, dmacclBfloat16, dmacclSum, s);
  }
  dmacclResult_t rc = collIssue(coll, sh, c->rank, c->send, c->recv, dmacclBfloat16, dmacclSum,
                                c->comm, c->stream, NULL);
  if (rc != dmacclSuccess) {
    fprintf(stderr, "dmaccl-c3: %s: %s: %s\n", c->spec.name, collTable[coll].call,
            dmacclCommGetLastError(c->comm));
    return -1;
  }
  return 0;
}

void c3ContenderFini(c3Contender *c) {
  if (c->stream) cudaStreamSynchronize(c->stream);
  if (c->comm) dmacclCommDestroy(c->comm);
  ncclBaseFini(c->nccl);
  if (c->stream) cudaStreamDestroy(c->stream);
  memset(c, 0, sizeof(*c));
}
