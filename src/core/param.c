/* Environment parameters, one line each, and the debug log. */
#include "core.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

static const struct {
  const char *name, *def, *doc;
} params[] = {
    {"DMACCL_DEBUG", "",
     "log level: WARN (failures, and a call of a direct algorithm between processes that "
     "spends over 20 ms in one phase: which) or INFO (decisions: peer access, algorithm per "
     "call)"},
    {"DMACCL_ALGO", "",
     "algorithm selection, e.g. allgather:push1;alltoall:0-64K:batch,64K-inf:pushn"},
    {"DMACCL_TUNE_FILE", "",
     "tuning file from dmaccl-tune: selection per rank count, applied over the built-in table "
     "(a file that cannot be used is skipped with a warning)"},
    {"DMACCL_EXECUTOR", "", "executor when the config leaves it default: cuda or host"},
    {"DMACCL_CTA_POLICY", "",
     "SMs the library may take when the config leaves ctaPolicy unset (NCCL's CTA policies): "
     "default (the fastest: small messages move with a kernel of up to 32 blocks), efficiency "
     "(the same as default) or zero (no kernel moves data: copy engines at every size; "
     "reductions keep their kernel for the arithmetic)"},
    {"DMACCL_HOST_TIMEOUT", "60", "host executor: seconds a rank waits for a peer before failing"},
    {"DMACCL_INIT_TIMEOUT", "60",
     "dmacclCommInitRank and other bootstrap exchanges: seconds to wait for every rank"},
    {"DMACCL_TIMEOUT", "600",
     "watchdog: seconds an operation may stay pending, or a call may wait for its peers' calls, "
     "before the communicator fails with dmacclTimeout naming the rank (0 = off; 600 as "
     "PyTorch's default process-group timeout)"},
    {"DMACCL_STAGE_BYTES", "8M",
     "bytes of one staging slot (each rank has 2 for eager calls and 2 for captured ones, and "
     "as many line slots, of half this size on 2 ranks and (n-1)/(4n) of it on n > 2; a "
     "Send/Recv channel is a 2-rank set: 4 slots of this size and 4 line slots of half): "
     "collectives up to this size may use the staged algorithms; 0 turns them off"},
    {"DMACCL_SCRATCH_BYTES", "32M",
     "bytes of each rank's scratch buffer for the reductions' direct forms (at the end of the "
     "rank's staging area, which peers map): pull1 pulls the peers' parts into it in pieces, "
     "push1's peers push them (at least 2 KB per peer); ranks of several processes use the "
     "smallest any of them asks for"},
    {"DMACCL_REDUCE_CTAS", "8",
     "thread blocks of the reduction kernel (1 to 1024): the SMs a reducing collective takes "
     "from the application"},
    {"DMACCL_KERNEL_WAIT", "1",
     "staged reductions (small AllReduce and ReduceScatter): 1: inside CUDA graphs the "
     "reduction kernel is launched beside the copies and waits for the peers' data itself; 2: "
     "eager calls too (the host executor then runs the same schedules); 0: never, a stream wait "
     "comes before the kernel (the default under CTA policy zero)"},
    {"DMACCL_BATCH_OVERLAP", "1",
     "1: batch copies carry cudaMemcpyFlagPreferOverlapWithCompute, so the driver keeps them on "
     "copy engines (without it, it may copy with SM kernels); 0: no flag (for measurements)"},
    {"DMACCL_LANE_PRIORITY", "default",
     "priority of the library's internal streams (lanes): default or high (the greatest "
     "stream priority)"},
    {"DMACCL_SIGNAL", "auto",
     "how a signal reaches a peer's flag: memop (stream memory operation write), copy (4-byte "
     "copy from a device value), or auto (probe at init: memop where the driver allows it)"},
};

const char *coreParamString(const char *name) {
  for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
    if (strcmp(params[i].name, name) == 0) {
      const char *v = getenv(name);
      return v ? v : params[i].def;
    }
  return NULL;
}

void coreParamPrintAll(void *file) {
  for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
    fprintf((FILE *)file, "%-20s = %-10s # %s\n", params[i].name, coreParamString(params[i].name),
            params[i].doc);
}

static int logLevel = -1;

void coreLogLevelReload(void) {
  __atomic_store_n(&logLevel, -1, __ATOMIC_RELAXED);
}

coreLogLevel coreLogLevelGet(void) {
  int l = __atomic_load_n(&logLevel, __ATOMIC_RELAXED);
  if (l < 0) {
    const char *v = coreParamString("DMACCL_DEBUG");
    l = CORE_LOG_NONE;
    if (strcasecmp(v, "WARN") == 0) l = CORE_LOG_WARN;
    if (strcasecmp(v, "INFO") == 0) l = CORE_LOG_INFO;
    __atomic_store_n(&logLevel, l, __ATOMIC_RELAXED);
  }
  return (coreLogLevel)l;
}

/* One write(2) per line: the ranks' processes share their stderr, and a
 * line written in pieces came out cut by another process's line (two ranks'
 * slow-phase lines, 2x H200). */
void coreLog(coreLogLevel level, const char *fmt, ...) {
  char buf[800];
  int head = snprintf(buf, sizeof(buf), "dmaccl %s: ", level == CORE_LOG_WARN ? "WARN" : "INFO");
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(buf + head, sizeof(buf) - (size_t)head - 1, fmt, ap);
  va_end(ap);
  if (len < 0) len = 0;
  size_t n =
      (size_t)head +
      ((size_t)len < sizeof(buf) - (size_t)head - 1 ? (size_t)len : sizeof(buf) - (size_t)head - 2);
  buf[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, buf, n);
  (void)w;
}

size_t coreStageBytesParam(void) {
  const char *v = coreParamString("DMACCL_STAGE_BYTES");
  size_t b = 0;
  if (planParseSize(v, strlen(v), &b) || b == SIZE_MAX) {
    coreLog(CORE_LOG_WARN, "DMACCL_STAGE_BYTES='%s' is not a size (e.g. 8M): using 8M", v);
    b = (size_t)8 << 20;
  }
  return b / 64 * 64; /* every slot (eager, graph, lines) 16-byte aligned */
}

size_t coreScratchBytesParam(void) {
  const char *v = coreParamString("DMACCL_SCRATCH_BYTES");
  size_t b = 0;
  if (planParseSize(v, strlen(v), &b) || b < 4096 || b > ((size_t)1 << 40)) {
    coreLog(CORE_LOG_WARN, "DMACCL_SCRATCH_BYTES='%s' is not a size from 4K to 1T: using 32M", v);
    b = (size_t)32 << 20;
  }
  return b;
}

int coreReduceCtasParam(void) {
  const char *v = coreParamString("DMACCL_REDUCE_CTAS");
  char *end = NULL;
  long n = strtol(v, &end, 10);
  if (!end || *end || end == v || n < 1 || n > 1024) {
    coreLog(CORE_LOG_WARN, "DMACCL_REDUCE_CTAS='%s' is not a number from 1 to 1024: using 8", v);
    n = 8;
  }
  return (int)n;
}

int coreBatchOverlapParam(void) {
  const char *v = coreParamString("DMACCL_BATCH_OVERLAP");
  if (strcmp(v, "0") == 0) return 0;
  if (strcmp(v, "1") != 0)
    coreLog(CORE_LOG_WARN, "DMACCL_BATCH_OVERLAP='%s' is not 0 or 1: using 1", v);
  return 1;
}

int coreKernelWaitParam(int ctaPolicy) {
  /* CTA policy zero: a reduction kernel launched early would hold its
   * blocks while it polls for the peers' copies; it waits on the stream
   * instead unless DMACCL_KERNEL_WAIT says otherwise. */
  if (ctaPolicy == dmacclCtaPolicyZero && !getenv("DMACCL_KERNEL_WAIT")) return 0;
  const char *v = coreParamString("DMACCL_KERNEL_WAIT");
  if (strcmp(v, "0") == 0 || strcmp(v, "2") == 0) return v[0] - '0';
  if (strcmp(v, "1") != 0)
    coreLog(CORE_LOG_WARN, "DMACCL_KERNEL_WAIT='%s' is not 0, 1 or 2: using 1", v);
  return 1;
}

int coreLanePriorityHigh(void) {
  const char *v = coreParamString("DMACCL_LANE_PRIORITY");
  if (strcmp(v, "high") == 0) return 1;
  if (strcmp(v, "default") != 0)
    coreLog(CORE_LOG_WARN, "DMACCL_LANE_PRIORITY='%s' is not default or high: using default", v);
  return 0;
}

double coreParamSeconds(const char *name, double fallback, int zeroMeansOff) {
  const char *v = coreParamString(name);
  char *end = NULL;
  double d = strtod(v, &end);
  int ok = v[0] && end && !*end && isfinite(d) && (d > 0 || (zeroMeansOff && d == 0)) && d < 1e9;
  if (!ok) {
    coreLog(CORE_LOG_WARN, "%s='%s' is not a number of seconds%s: using %g", name, v,
            zeroMeansOff ? " (0 = off)" : " above 0", fallback);
    return fallback;
  }
  return d;
}
