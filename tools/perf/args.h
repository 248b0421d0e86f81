/* dmaccl-perf command line, nccl-tests' flags where they apply. */
#ifndef DMACCL_PERF_ARGS_H_
#define DMACCL_PERF_ARGS_H_

#include "dmaccl.h"

#include <stddef.h>
#include <stdio.h>

#define PERF_MAX_ALGOS 16
enum { PERF_ALLGATHER = 1, PERF_ALLTOALL = 2 };
enum { PERF_EXEC_AUTO = 0, PERF_EXEC_CUDA = 1, PERF_EXEC_HOST = 2 };

typedef struct {
  size_t minBytes, maxBytes, stepBytes; /* stepBytes 0: multiply by stepFactor */
  double stepFactor;
  int nranks; /* -g; 0 = all GPUs (CUDA) or 4 (host) */
  int procs;  /* -p; 0 = one process drives every rank, else forked processes, one rank each */
  int iters, warmup, check;
  dmacclDataType_t type;
  int executor;
  int colls;                      /* PERF_ALLGATHER | PERF_ALLTOALL */
  char algos[PERF_MAX_ALGOS][16]; /* "auto" = the library's own selection */
  int nalgos;
  int baseline; /* --baseline: 1 = NCCL rows when built with NCCL, 0 = none */
} perfArgs;

/* 0: parsed; 1: help was asked; -1: error, with a sentence in err. */
int perfParseArgs(int argc, char **argv, perfArgs *a, char *err, size_t errlen);
void perfUsage(FILE *f);
/* "64", "4K", "1M", "2G" (binary units). 0 on success. */
int perfParseSize(const char *s, size_t *out);
const char *perfTypeName(dmacclDataType_t t);
size_t perfTypeSize(dmacclDataType_t t);
/* Next size of the sweep; 0 when done. */
size_t perfNextSize(const perfArgs *a, size_t cur);
/* Element count for a size (nccl-tests: AllGather size = output bytes,
 * AlltoAll size = bytes each rank sends), and the size actually moved. */
size_t perfCount(size_t bytes, int nranks, size_t typeSize);
/* algbw = bytes / time; busbw = algbw * (n-1)/n (both collectives), GB/s. */
double perfAlgBw(size_t bytes, double us);
double perfBusBw(size_t bytes, double us, int nranks);

#endif
