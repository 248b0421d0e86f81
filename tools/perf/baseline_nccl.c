#include "baseline_nccl.h"
#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DMACCL_HAVE_NCCL
#include <nccl.h>

struct ncclBase {
  int n;
  ncclComm_t *comms;
  char version[32];
};

static void setVersion(ncclBase *b) {
  int v = 0;
  ncclGetVersion(&v);
  snprintf(b->version, sizeof(b->version), "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

static ncclDataType_t toNccl(dmacclDataType_t t) {
  switch (t) {
  case dmacclInt8: return ncclInt8;
  case dmacclUint8: return ncclUint8;
  case dmacclInt32: return ncclInt32;
  case dmacclUint32: return ncclUint32;
  case dmacclInt64: return ncclInt64;
  case dmacclUint64: return ncclUint64;
  case dmacclFloat16: return ncclFloat16;
  case dmacclBfloat16: return ncclBfloat16;
  case dmacclFloat64: return ncclFloat64;
  case dmacclFloat8e4m3: return ncclFloat8e4m3;
  case dmacclFloat8e5m2: return ncclFloat8e5m2;
  default: return ncclFloat32;
  }
}

ncclBase *ncclBaseInit(int n, const int *devs, char *err, size_t errlen) {
  /* Never NVLink multicast (NVLS): it can take shared GPUs out of service. */
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ncclBase *b = calloc(1, sizeof(*b));
  if (!b || !(b->comms = calloc((size_t)n, sizeof(ncclComm_t)))) {
    snprintf(err, errlen, "out of memory");
    free(b);
    return NULL;
  }
  b->n = n;
  ncclResult_t r = ncclCommInitAll(b->comms, n, devs);
  if (r != ncclSuccess) {
    snprintf(err, errlen, "ncclCommInitAll: %s", ncclGetErrorString(r));
    free(b->comms);
    free(b);
    return NULL;
  }
  setVersion(b);
  return b;
}

int ncclBaseMakeId(void *id128, char *err, size_t errlen) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) {
    snprintf(err, errlen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
    return -1;
  }
  memcpy(id128, &id, sizeof(id));
  return 0;
}

ncclBase *ncclBaseInitRank(int n, int rank, const void *id128, char *err, size_t errlen) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ncclBase *b = calloc(1, sizeof(*b));
  if (!b || !(b->comms = calloc(1, sizeof(ncclComm_t)))) {
    snprintf(err, errlen, "out of memory");
    free(b);
    return NULL;
  }
  b->n = 1;
  ncclUniqueId id;
  memcpy(&id, id128, sizeof(id));
  ncclResult_t r = ncclCommInitRank(&b->comms[0], n, id, rank);
  if (r != ncclSuccess) {
    snprintf(err, errlen, "ncclCommInitRank: %s", ncclGetErrorString(r));
    free(b->comms);
    free(b);
    return NULL;
  }
  setVersion(b);
  return b;
}

int ncclBaseIssue(ncclBase *b, int coll, void *const *send, void *const *recv, size_t count,
                  dmacclDataType_t type, const cudaStream_t *streams) {
  ncclResult_t r = ncclGroupStart();
  for (int i = 0; i < b->n && r == ncclSuccess; i++)
    r = coll == PERF_ALLGATHER
            ? ncclAllGather(send[i], recv[i], count, toNccl(type), b->comms[i], streams[i])
            : ncclAlltoAll(send[i], recv[i], count, toNccl(type), b->comms[i], streams[i]);
  ncclResult_t e = ncclGroupEnd();
  if (r == ncclSuccess) r = e;
  if (r != ncclSuccess) fprintf(stderr, "nccl: %s\n", ncclGetErrorString(r));
  return r == ncclSuccess ? 0 : -1;
}

const char *ncclBaseVersion(ncclBase *b) {
  return b->version;
}

void ncclBaseFini(ncclBase *b) {
  if (!b) return;
  for (int i = 0; i < b->n; i++) ncclCommDestroy(b->comms[i]);
  free(b->comms);
  free(b);
}

#else /* built without NCCL */

struct ncclBase {
  int unused;
};

ncclBase *ncclBaseInit(int n, const int *devs, char *err, size_t errlen) {
  (void)n, (void)devs;
  snprintf(err, errlen, "dmaccl-perf was built without NCCL");
  return NULL;
}
int ncclBaseMakeId(void *id128, char *err, size_t errlen) {
  (void)id128;
  snprintf(err, errlen, "dmaccl-perf was built without NCCL");
  return -1;
}
ncclBase *ncclBaseInitRank(int n, int rank, const void *id128, char *err, size_t errlen) {
  (void)n, (void)rank, (void)id128;
  snprintf(err, errlen, "dmaccl-perf was built without NCCL");
  return NULL;
}
int ncclBaseIssue(ncclBase *b, int coll, void *const *send, void *const *recv, size_t count,
                  dmacclDataType_t type, const cudaStream_t *streams) {
  (void)b, (void)coll, (void)send, (void)recv, (void)count, (void)type, (void)streams;
  return -1;
}
const char *ncclBaseVersion(ncclBase *b) {
  (void)b;
  return "none";
}
void ncclBaseFini(ncclBase *b) {
  (void)b;
}
#endif
