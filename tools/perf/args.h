/* dmaccl-perf command line: nccl-tests' flags where they overlap, plus the
 * contenders (-A, --baseline) and the extra measurements (--breakdown,
 * --energy). */
#ifndef DMACCL_PERF_ARGS_H_
#define DMACCL_PERF_ARGS_H_

#include "dmaccl.h"
#include "common/colls.h"

#include <stddef.h>
#include <stdio.h>

#define PERF_MAX_ALGOS 16
/* -o bits: 1u << collId (tools/common/colls.h) */
#define PERF_COLL(c) (1u << (c))
#define PERF_ALL_COLLS ((1u << COLL_NUM) - 1u)
enum { PERF_EXEC_AUTO = 0, PERF_EXEC_CUDA = 1, PERF_EXEC_HOST = 2 };
/* --baseline bits */
enum { PERF_BASE_NCCL = 1, PERF_BASE_NCCL_CE = 2 };
/* -a: which rank's time the table shows (nccl-tests' numbering) */
enum { PERF_AVG_RANK0 = 0, PERF_AVG_MEAN = 1, PERF_AVG_MIN = 2, PERF_AVG_MAX = 3 };

typedef struct {
  size_t minBytes, maxBytes, stepBytes; /* stepBytes 0: multiply by stepFactor */
  double stepFactor;
  int nranks; /* -g; 0 = all GPUs (CUDA) or 4 (host) */
  int procs;  /* -p; 0 = one process drives every rank, else forked processes, one rank each */
  int iters, warmup;
  int check;  /* -c: checked operations per size and contender; 0 = none */
  int graphs; /* -G: capture `iters` operations as a CUDA graph, launch it this often; 0 = eager */
  int blocking;   /* -z: wait for each operation before issuing the next */
  int average;    /* -a: PERF_AVG_* */
  int cycles;     /* -N: sweeps; 0 = until interrupted */
  char json[512]; /* -J: JSON output file, "" = none */
  int inPlace;    /* --in-place: also time the in-place form (collectives that have one) */
  int breakdown;  /* --breakdown */
  int energy;     /* --energy */
  dmacclDataType_t type;
  int executor;
  unsigned colls;                 /* PERF_COLL(collId) bits */
  dmacclRedOp_t op;               /* --op: the reducing collectives' op */
  int root;                       /* --root: the rooted collectives' root */
  char algos[PERF_MAX_ALGOS][16]; /* "auto" = the library's own selection */
  int nalgos;
  int baseline;       /* PERF_BASE_* bits; only used when built with NCCL and on GPUs */
  int persistent;     /* --persistent: dmaccl rows use dmaccl*Init + dmacclStart */
  int notify;         /* --notify: dmaccl AllGather(V) rows use the ...Notify calls */
  int uneven;         /* --uneven: the V forms' blocks are uneven (perfShapeOf) */
  int kernels;        /* --kernels: the kernel columns (CUPTI traced pass before the sweep) */
  char tuneOut[512];  /* --tune-out: tuning file to write, "" = none */
  char timeline[512]; /* --timeline: prefix of the per-rank timeline files, "" = none */
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
/* Number of sizes the sweep visits. */
int perfNumSizes(const perfArgs *a);
/* Elements of block w (1..n) of a total of `total` split in proportion to
 * the weights 1, 2, ..., n: block w gets total*w/(n(n+1)/2), rounded so that
 * the n blocks add up to total exactly. */
size_t perfUnevenBlock(size_t total, int n, int w);
/* The arguments of collective c with count elements per block; arrays in v.
 * The V forms: blocks in rank order, equal counts, or with uneven != 0 the
 * same total (n*count elements per rank) split unevenly: AllGatherV and
 * ReduceScatterV give rank r the block of weight r+1 (perfUnevenBlock), and
 * AlltoAllv's rank i sends rank j the block of weight ((i+j) mod n)+1, so
 * every rank still sends and receives n*count elements. */
void perfShapeOf(collId c, size_t count, int nranks, int root, int uneven, collShape *s,
                 collVArrays *v);
/* The arguments of collective c at nccl-tests' size `bytes` (rounded down
 * to whole elements; the V forms as perfShapeOf, with the size of the equal
 * split): fills s (arrays in v) and returns the count. */
size_t perfShape(collId c, size_t bytes, int nranks, int root, int uneven, size_t typeSize,
                 collShape *s, collVArrays *v);
/* algbw = bytes / time; busbw = algbw * nccl-tests' factor of c, GB/s. */
double perfAlgBw(size_t bytes, double us);
double perfBusBw(collId c, size_t bytes, double us, int nranks);

#endif
