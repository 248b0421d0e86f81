/*
 * dmaccl-kbench: the reduction kernel alone on one GPU. The reducing
 * collectives' large sizes are bound by how fast a few CTAs stream their
 * inputs through HBM (docs/results/collectives-2xh200/README.md); this
 * times exactly that, without copies or peers, so a kernel change can be
 * measured on any one GPU.
 *
 *   dmaccl-kbench [-d LIST] [-s LIST] [-c LIST] [-b SIZE] [-e SIZE] [-f F] [-n N] [-g DEV]
 *
 * For each type, source count, CTA count and output size: the median of N
 * timed launches (CUDA events around each), and the HBM rate it implies
 * ((sources + 1) x output bytes per launch). The first row of each size is a
 * device-to-device cudaMemcpyAsync of the output size (copy engines: 2 x
 * bytes moved), the rate a copy engine reaches on this GPU.
 */
#include "exec/cuda_reduce.h"
#include "plan/plan.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 16

static void usage(FILE *f) {
  fprintf(f, "usage: dmaccl-kbench [-d LIST] [-s LIST] [-c LIST] [-b SIZE] [-e SIZE] [-f F] [-n N] "
             "[-g DEV]\n"
             "  -d LIST  types: bfloat16 half float double int32 f8e4m3 (default bfloat16,float)\n"
             "  -s LIST  sources per reduction (default 2,4,8; at most 128)\n"
             "  -c LIST  CTAs (default 4,8,16,32)\n"
             "  -b, -e   smallest and largest output size (default 1M and 64M)\n"
             "  -f F     multiply the size by F each step (default 4)\n"
             "  -n N     timed launches per row, median shown (default 20)\n"
             "  -g DEV   the GPU (default 0)\n");
}

static const struct {
  const char *name;
  dmacclDataType_t t;
  size_t size;
} types[] = {{"bfloat16", dmacclBfloat16, 2}, {"half", dmacclFloat16, 2},
             {"float", dmacclFloat32, 4},     {"double", dmacclFloat64, 8},
             {"int32", dmacclInt32, 4},       {"f8e4m3", dmacclFloat8e4m3, 1}};
enum { NTYPES = sizeof(types) / sizeof(types[0]) };

/* A comma list of integers in [lo, hi]: its count, or -1. */
static int parseInts(const char *s, int lo, int hi, int *out) {
  int n = 0;
  while (*s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < lo || v > hi || n == MAX_LIST || (*end && *end != ',')) return -1;
    out[n++] = (int)v;
    s = *end ? end + 1 : end;
  }
  return n;
}

static int parseTypes(const char *s, int *out) {
  int n = 0;
  while (*s) {
    size_t len = strcspn(s, ",");
    int found = -1;
    for (int t = 0; t < NTYPES; t++)
      if (strlen(types[t].name) == len && strncmp(types[t].name, s, len) == 0) found = t;
    if (found < 0 || n == MAX_LIST) return -1;
    out[n++] = found;
    s += len + (s[len] == ',');
  }
  return n;
}

static int cmpFloat(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "dmaccl-kbench: %s: %s\n", #call, cudaGetErrorString(e_));                   \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* Median microseconds of n launches of one row (ctas 0: the memcpy row). */
static double timeRow(void *dst, void *const *srcs, int nsrc, size_t bytes, int type, int ctas,
                      int n, cudaStream_t st, cudaEvent_t *ev, float *ms) {
  size_t count = bytes / types[type].size;
  for (int i = -2; i < n; i++) { /* two warm-up launches */
    if (i >= 0) CK(cudaEventRecord(ev[2 * i], st));
    if (ctas)
      CK(execCudaReduce(dst, (const void *const *)srcs, nsrc, count, types[type].t, dmacclSum, ctas,
                        st));
    else
      CK(cudaMemcpyAsync(dst, srcs[0], bytes, cudaMemcpyDeviceToDevice, st));
    if (i >= 0) CK(cudaEventRecord(ev[2 * i + 1], st));
  }
  CK(cudaStreamSynchronize(st));
  for (int i = 0; i < n; i++) CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  qsort(ms, (size_t)n, sizeof(float), cmpFloat);
  return 1000.0 * ms[n / 2];
}

int main(int argc, char **argv) {
  int tlist[MAX_LIST], slist[MAX_LIST] = {2, 4, 8}, clist[MAX_LIST] = {4, 8, 16, 32};
  int nt = 2, ns = 3, nc = 4, iters = 20, dev = 0;
  tlist[0] = 0, tlist[1] = 2;
  size_t lo = (size_t)1 << 20, hi = (size_t)64 << 20;
  long factor = 4;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(o, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (!v) {
      fprintf(stderr, "dmaccl-kbench: option '%s' needs a value\n", o);
      usage(stderr);
      return 2;
    }
    i++;
    int bad = 0;
    if (strcmp(o, "-d") == 0)
      bad = (nt = parseTypes(v, tlist)) < 1;
    else if (strcmp(o, "-s") == 0)
      bad = (ns = parseInts(v, 1, EXEC_REDUCE_MAX_SRCS, slist)) < 1;
    else if (strcmp(o, "-c") == 0)
      bad = (nc = parseInts(v, 1, 1024, clist)) < 1;
    else if (strcmp(o, "-b") == 0)
      bad = planParseSize(v, strlen(v), &lo) || lo == 0 || lo == SIZE_MAX;
    else if (strcmp(o, "-e") == 0)
      bad = planParseSize(v, strlen(v), &hi) || hi == 0 || hi == SIZE_MAX;
    else if (strcmp(o, "-f") == 0)
      bad = (factor = strtol(v, NULL, 10)) < 2 || factor > 1024;
    else if (strcmp(o, "-n") == 0)
      bad = (iters = (int)strtol(v, NULL, 10)) < 1 || iters > 10000;
    else if (strcmp(o, "-g") == 0)
      bad = (dev = (int)strtol(v, NULL, 10)) < 0;
    else {
      fprintf(stderr, "dmaccl-kbench: unknown option '%s'\n", o);
      usage(stderr);
      return 2;
    }
    if (bad) {
      fprintf(stderr, "dmaccl-kbench: bad value '%s' for %s\n", v, o);
      usage(stderr);
      return 2;
    }
  }
  if (hi < lo) {
    fprintf(stderr, "dmaccl-kbench: -e %zu is smaller than -b %zu\n", hi, lo);
    return 2;
  }
  int ngpus = 0;
  if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus == 0) {
    fprintf(stderr, "dmaccl-kbench: no GPU\n");
    return 1;
  }
  if (dev >= ngpus) {
    fprintf(stderr, "dmaccl-kbench: -g %d: this machine has %d GPUs\n", dev, ngpus);
    return 2;
  }
  CK(cudaSetDevice(dev));
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  int maxSrc = 0;
  for (int i = 0; i < ns; i++) maxSrc = slist[i] > maxSrc ? slist[i] : maxSrc;
  void *dst, **srcs = calloc((size_t)maxSrc, sizeof(void *));
  float *ms = malloc((size_t)iters * sizeof(float));
  cudaEvent_t *ev = malloc(2 * (size_t)iters * sizeof(cudaEvent_t));
  if (!srcs || !ms || !ev) return 1;
  CK(cudaMalloc(&dst, hi));
  for (int k = 0; k < maxSrc; k++) {
    CK(cudaMalloc(&srcs[k], hi));
    CK(cudaMemset(srcs[k], 0x11 * (k + 1), hi)); /* finite values in every type */
  }
  for (int i = 0; i < 2 * iters; i++) CK(cudaEventCreate(&ev[i]));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  printf("# dmaccl-kbench: %s, %d SMs; median of %d launches; GB/s = (sources+1) x bytes / time\n",
         prop.name, prop.multiProcessorCount, iters);
  printf("# %-9s %8s %4s %5s %10s %9s\n", "type", "bytes", "srcs", "ctas", "us", "GB/s");
  for (size_t bytes = lo; bytes <= hi; bytes = bytes * (size_t)factor) {
    char sz[32];
    planSizeString(bytes, sz, sizeof(sz));
    double us = timeRow(dst, srcs, 1, bytes, 0, 0, iters, st, ev, ms);
    printf("  %-9s %8s %4s %5s %10.1f %9.1f\n", "memcpy", sz, "1", "ce", us,
           2.0 * bytes / us / 1e3);
    for (int t = 0; t < nt; t++)
      for (int s = 0; s < ns; s++)
        for (int c = 0; c < nc; c++) {
          us = timeRow(dst, srcs, slist[s], bytes, tlist[t], clist[c], iters, st, ev, ms);
          printf("  %-9s %8s %4d %5d %10.1f %9.1f\n", types[tlist[t]].name, sz, slist[s], clist[c],
                 us, (double)(slist[s] + 1) * bytes / us / 1e3);
        }
    fflush(stdout);
    if (bytes > hi / (size_t)factor) break;
  }
  return 0;
}
