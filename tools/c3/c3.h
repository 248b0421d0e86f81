/* dmaccl-c3: compute and communication together (C3). Shared types of its
 * files:
 *   scenario.c  scenario files and the command line (plain C, tested on CI)
 *   metrics.c   ConCCL's metrics, medians, repetition counts (plain C, CI)
 *   report.c    the table and the JSON (plain C, CI)
 *   traffic.c   --traffic: HBM bytes from the library's schedules (plain C, CI)
 *   gemm.c      the cuBLAS GEMM loop, captured as one CUDA graph
 *   contender.c NCCL settings and dmaccl algorithms behind one issue call
 *   main.c      processes, the measurement loop, checking, energy
 */
#ifndef DMACCL_C3_H_
#define DMACCL_C3_H_

#include "common/colls.h"
#include "plan.h"

#include <stddef.h>
#include <stdio.h>

#define C3_MAX_SCENARIOS 64
#define C3_MAX_CONTENDERS 24
#define C3_NAME 48

/* One line of a scenario file:
 *   name  M N K  COLL  size  [comm=P% | fused]
 * A bf16 GEMM C[MxN] = A[MxK] B[KxN] on every GPU, next to collectives COLL
 * (a name of the tools' collective table, tools/common/colls.h, that
 * c3CollAccepted takes) of `size`: nccl-tests' size (collSizeBytes:
 * AllGather output bytes, AlltoAll bytes each rank sends, AllReduce,
 * Broadcast and Reduce count bytes, ReduceScatter input bytes, Gather and
 * Scatter the root's buffer). Rooted collectives use root 0; reducing ones
 * sum (dmacclSum) bf16. comm= sets the share of communication in the
 * isolated time that the repetition counts aim at (default 50%: both sides
 * equally long). */
typedef struct {
  char name[C3_NAME];
  long m, n, k;
  collId coll;
  size_t size;
  double commShare; /* 0 < share < 1 */
  /* "fused": the GEMM reads what the AllGather gathers (asynchronous tensor
   * parallelism): A (M x K, row-major) is the gathered buffer, size must
   * be its bytes, and each rank's rows are multiplied once they have
   * landed (dmaccl: arrival words; NCCL: the own rows at once, the others
   * after the collective). */
  int fused;
  int line;
} c3Scenario;

/* Contender kinds. NCCL rows are baselines; dmaccl rows are algorithms. */
enum {
  C3_NCCL = 0,      /* NCCL default */
  C3_NCCL_PRIO = 1, /* NCCL, collective stream at the highest priority */
  C3_NCCL_CTA = 2,  /* NCCL with config.maxCTAs = ctas */
  C3_NCCL_CE = 3,   /* NCCL's copy-engine collectives (CTA policy zero, windows) */
  C3_DMACCL = 4
};

/* "nccl", "nccl-prio", "nccl-ctaN", "nccl-ce", or a dmaccl algorithm
 * ("auto" = the library's own choice), "-prio" after it for a collective
 * stream at the highest priority, "-whole" for fused scenarios' GEMM rows
 * that wait for the whole collective as NCCL's do (no arrival words), then
 * optionally "/VAR=VALUE": that
 * environment variable is set while the communicator is created (e.g.
 * pushb/DMACCL_BATCH_OVERLAP=0, stage-prio). */
typedef struct {
  char name[C3_NAME];
  int kind;
  int ctas;        /* C3_NCCL_CTA */
  int highPrio;    /* the collective stream at the highest priority */
  int whole;       /* "-whole": fused scenarios wait for the whole collective, no arrival words */
  char algo[16];   /* C3_DMACCL: "auto" or an algorithm */
  char envVar[32]; /* "" = none */
  char envVal[C3_NAME];
} c3ContenderSpec;

typedef struct {
  int procs;      /* -p: ranks, one process each, on GPU rank % GPUs; 0 = every GPU */
  char file[512]; /* -f: scenario file */
  char only[512]; /* -s: comma-separated scenario names, "" = all */
  c3ContenderSpec cs[C3_MAX_CONTENDERS];
  int ncs;
  int runs;        /* -r: repetitions; medians over them */
  double targetMs; /* -t: length of the longer isolated side */
  int check;       /* -c: check every byte of one overlapped collective per row */
  int energy;      /* --energy */
  int list;        /* --list: print the scenarios and contenders, measure nothing */
  int traffic;     /* --traffic: print the HBM traffic table (traffic.c), measure nothing */
  char json[512];  /* -J */
} c3Args;

/* 0: parsed; 1: help; -1: error with a sentence in err. defaultFile: the
 * scenario file without -f (NULL: -f is required). */
int c3ParseArgs(int argc, char **argv, const char *defaultFile, c3Args *a, char *err,
                size_t errlen);
void c3Usage(FILE *f);
/* Parses one contender name into *s: 0, or -1 with a sentence in err. */
int c3ParseContender(const char *name, c3ContenderSpec *s, char *err, size_t errlen);
/* Parses scenario text. Returns the number of scenarios (>= 1) or -1 with
 * the offending line named in err. `only` (comma-separated names, "" = all)
 * keeps those scenarios; a name that matches none is an error. */
int c3ParseScenarios(const char *text, const char *only, c3Scenario *out, int max, char *err,
                     size_t errlen);
/* Reads a whole file into a malloc'd string; NULL with a sentence in err. */
char *c3ReadFile(const char *path, char *err, size_t errlen);
/* 1 when a scenario may name collective c: a row of collTable that takes
 * no count arrays (COLL_VECTOR) and is no Send/Recv (COLL_P2P). */
int c3CollAccepted(int c);
/* The count argument of a scenario's collective on nranks ranks: its size
 * divided by the bytes one count unit adds to nccl-tests' size
 * (collSizeBytes of a count-1 shape, 2-byte bf16 elements); at least 1. */
size_t c3Count(const c3Scenario *s, int nranks);
/* The scenario's collShape on nranks ranks: c3Count, root 0. */
void c3Shape(const c3Scenario *s, int nranks, collShape *out);
/* Why contender s has no row for collective c, or NULL when it runs it.
 * dmaccl: "auto" runs everything; an algorithm runs c when c's selection
 * entry (collTable[c].select) takes it (planCollInfo.algos: the test of
 * dmaccl-perf's perfTakes); else the sentence, written into buf, names the
 * algorithms c takes. NCCL settings: ncclLacks(c, ce) (the baseline's
 * ncclBaseLacks; ce for nccl-ce), or NULL where ncclLacks is NULL. */
const char *c3Lacks(const c3ContenderSpec *s, int c, const char *(*ncclLacks)(int coll, int ce),
                    char *buf, size_t len);
/* The selection string (dmacclConfig_t.algorithm) of dmaccl contender s for
 * the collectives of `colls` (bit 1u << c per collId): "SELECT:ALGO" joined
 * by ';' for every such collective that takes the algorithm (c3Lacks),
 * SELECT being collTable[c].select, each entry once. "" for auto or when
 * none takes it. 0, or -1 when it does not fit in len. */
int c3Selection(const c3ContenderSpec *s, unsigned colls, char *out, size_t len);
/* Turns bytes/2 bf16 elements of random bits into small integers, -8 to 8,
 * each from its element's bits: sums of up to 32 ranks' values stay
 * integers of at most 256 in magnitude, exact in bf16 whatever the order of
 * adding and rounding (NCCL's and dmaccl's orders differ), so the
 * reference (collReference) is exact for every contender. */
void c3ExactBf16(void *buf, size_t bytes);

/* Medians of one contender in one scenario, microseconds. */
typedef struct {
  double gemm;         /* the GEMM loop alone */
  double comm;         /* the collective loop alone */
  double both;         /* both started together, until both are done */
  double gemmTogether; /* the GEMM loop's own time when together */
  double commTogether; /* the collective loop's own time when together */
} c3Times;

/* ConCCL's metrics from isolated and overlapped times. */
typedef struct {
  double ideal;        /* (gemm + comm) / max(gemm, comm) */
  double realized;     /* (gemm + comm) / both */
  double fraction;     /* (realized - 1) / (ideal - 1); NAN when ideal - 1 < 0.01 */
  double gemmSlowdown; /* gemmTogether / gemm */
  double commSlowdown; /* commTogether / comm */
  double commShare;    /* comm / (gemm + comm) */
} c3Metrics;

void c3Compute(const c3Times *t, c3Metrics *m);
/* Median of v[0..n-1] (sorts v); NAN for n == 0. */
double c3Median(double *v, int n);
/* Repetition counts: the longer isolated side lasts about targetUs and
 * communication makes up `share` of the isolated total. gemmUs and commUs
 * are one GEMM and one collective. */
void c3Reps(double gemmUs, double commUs, double targetUs, double share, long *gemms, long *colls);

/* One row of the result: a contender in a scenario. */
typedef struct {
  int scenario, contender;
  long gemms, colls;
  c3Times t;
  c3Metrics m;
  double joules;   /* per overlapped iteration, all GPUs; 0 = not measured */
  long long wrong; /* -1 = not checked */
} c3Row;

typedef struct {
  const c3Args *args;
  const c3Scenario *sc;
  int nsc;
  const c3ContenderSpec *cs;
  int ncs;
  const c3Row *rows;
  int nrows;
  int nranks;
  /* The NCCL baseline's ncclBaseLacks (c3Lacks): the tables and the JSON
   * say why a contender has no row for a scenario's collective. NULL: NCCL
   * settings lack nothing. */
  const char *(*ncclLacks)(int coll, int ce);
  char gpu[128];
  char ncclVersion[32];
  int driverVersion;
  char command[1024];
} c3Result;

/* report.c */
/* One scenario's table; after it, "# no CONTENDER row: why" for every
 * contender that c3Lacks leaves out of the scenario's collective. */
void c3PrintScenario(FILE *f, const c3Result *r, int scenario);
/* Per contender: mean realized fraction over the matrix and over the
 * scenarios where communication is at least 20% of the isolated time, and
 * whether dmaccl's default beats every NCCL setting there. */
void c3PrintSummary(FILE *f, const c3Result *r);
int c3WriteJson(const c3Result *r, const char *path);

/* traffic.c: the HBM traffic a scenario's collective adds on each GPU,
 * computed from every rank's schedule (planBuild) as the library builds it
 * for dmaccl-c3's call (bf16, root 0, sum, out of place, the parameters'
 * defaults below), and the GEMM's own HBM need. Computed bytes, not
 * measurements. */
#define C3_TRAFFIC_MAX_RANKS 64
#define C3_STAGE_BYTES ((size_t)8 << 20)    /* DMACCL_STAGE_BYTES' default (param.c) */
#define C3_SCRATCH_BYTES ((size_t)32 << 20) /* DMACCL_SCRATCH_BYTES' default (param.c) */
/* The H200's ridge point: 989 TFLOP/s dense bf16 / 4.8 TB/s HBM. A GEMM of
 * lower arithmetic intensity is memory-bound. */
#define C3_RIDGE_FLOP_PER_BYTE 206.0

typedef struct {
  size_t read, write;             /* bytes read from and written to this GPU's HBM */
  size_t copyRead, copyWrite;     /* of which by COPY steps (any rank's) */
  size_t reduceRead, reduceWrite; /* of which by its own REDUCE steps */
  size_t issued;                  /* bytes of the copies its copy engines run (its schedule's) */
  size_t stored;                  /* bytes its kernel stores (its schedule's inKernel COPYs) */
  int copies;                     /* COPY steps of its schedule on copy engines */
  int laneCopies;                 /* the most such COPY steps on one of its lanes */
  int reduces;                    /* REDUCE steps of its schedule */
} c3GpuTraffic;

typedef struct {
  planColl coll;
  planAlgo asked, algo; /* algo: what runs (a staged one beyond C3_STAGE_BYTES falls back) */
  int nranks;
  size_t size;                    /* the collective's size (nccl-tests'), the ratio's base */
  size_t copyBytes;               /* every rank's COPY steps, summed */
  size_t reduceRead, reduceWrite; /* every rank's REDUCE steps, summed */
  c3GpuTraffic gpu[C3_TRAFFIC_MAX_RANKS];
  size_t maxRead, maxWrite, maxTotal; /* the most on any GPU (total: read + write) */
  int maxCopies, maxLaneCopies;       /* the most of any rank */
  size_t maxStored;                   /* the most any rank's kernel stores */
} c3TrafficResult;

/* Rank's planArgs for scenario s on nranks ranks, as op.c's coreOpArgs
 * fills them for dmaccl-c3's call (staging slot index 1): 0, or -1 when
 * the scenario's collective is none of the library's uniform ones. */
int c3PlanArgs(const c3Scenario *s, int nranks, int rank, planArgs *out);
/* The algorithm the built-in selection table (planTableDefaults for
 * nranks) picks for the scenario, reshaped as the library would by the
 * contender's DMACCL_CTA_POLICY or DMACCL_ALGO (cs may be NULL): 0, or -1
 * with a sentence in err. A staged pick may still fall back
 * (c3TrafficResult.algo). */
int c3AutoAlgo(const c3Scenario *s, int nranks, const c3ContenderSpec *cs, planAlgo *out, char *err,
               size_t errlen);
/* Whether --traffic applies a contender's NAME=VALUE to the selection
 * (DMACCL_CTA_POLICY and DMACCL_ALGO reshape the table auto reads). */
int c3TrafficApplies(const char *envVar);
/* Every rank's schedule of the scenario's collective with algo, summed per
 * GPU into *t: 0, or -1 with a sentence in err (an algorithm the collective
 * does not take, more than C3_TRAFFIC_MAX_RANKS ranks). */
int c3Traffic(const c3Scenario *s, int nranks, planAlgo algo, c3TrafficResult *t, char *err,
              size_t errlen);
/* One GEMM's HBM bytes, (M*K + K*N + M*N) * 2, and its FLOP per byte. */
size_t c3GemmBytes(const c3Scenario *s);
double c3GemmIntensity(const c3Scenario *s);
/* The --traffic table: a row per scenario and dmaccl contender of a that
 * runs its collective ("auto": the built-in table's choice). */
void c3PrintTraffic(FILE *f, const c3Args *a, const c3Scenario *sc, int nsc, int nranks);

#endif
