#include <errno.h>
#include "args.h"
#include "plan.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  dmacclDataType_t t;
  size_t size;
} types[] = {
    {"int8", dmacclInt8, 1},      {"uint8", dmacclUint8, 1},       {"int32", dmacclInt32, 4},
    {"uint32", dmacclUint32, 4},  {"int64", dmacclInt64, 8},       {"uint64", dmacclUint64, 8},
    {"half", dmacclFloat16, 2},   {"bfloat16", dmacclBfloat16, 2}, {"float", dmacclFloat32, 4},
    {"double", dmacclFloat64, 8}, {"f8e4m3", dmacclFloat8e4m3, 1}, {"f8e5m2", dmacclFloat8e5m2, 1},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

const char *perfTypeName(dmacclDataType_t t) {
  for (size_t i = 0; i < NTYPES; i++)
    if (types[i].t == t) return types[i].name;
  return "?";
}
size_t perfTypeSize(dmacclDataType_t t) {
  for (size_t i = 0; i < NTYPES; i++)
    if (types[i].t == t) return types[i].size;
  return 0;
}

int perfParseSize(const char *s, size_t *out) {
  char *end;
  if (!s || !isdigit((unsigned char)s[0])) return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno == ERANGE) return -1; /* more digits than any size */
  int shift = 0;
  if (*end) {
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: return -1;
    }
    if (end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2])) return -1;
  }
  if (v > (SIZE_MAX >> shift)) return -1;
  *out = (size_t)v << shift;
  return 0;
}

void perfUsage(FILE *f) {
  fprintf(
      f,
      "usage: dmaccl-perf [options]   (nccl-tests' flags where they overlap)\n"
      "  -b SIZE   smallest size (default 1K; K, M, G suffixes)\n"
      "  -e SIZE   largest size (default 64M)\n"
      "  -f F      multiply the size by F each step, 1 < F <= 1024 (default 2)\n"
      "  -i BYTES  add BYTES each step instead of multiplying\n"
      "  -g N      ranks of one process: GPUs (CUDA, default all) or threads (host, default 4)\n"
      "  -p N      N processes, one rank (one GPU) each, forked before any CUDA call\n"
      "  -n N      timed iterations per size (default 20)\n"
      "  -w N      warm-up iterations (default 5)\n"
      "  -c N      checked operations per size and contender, every byte (default 1; 0: none)\n"
      "  -d TYPE   int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double f8e4m3 f8e5m2\n"
      "  -G N      capture the -n iterations as one CUDA graph and launch it N times (default 0:\n"
      "            eager calls)\n"
      "  -z 0|1    blocking: wait for each operation before issuing the next (default 0)\n"
      "  -a 0..3   time shown with -p: 0 rank 0's, 1 the average, 2 the fastest, 3 the slowest\n"
      "            rank's (default 1); JSON has all four\n"
      "  -N N      run the sweep N times, printing each (default 1; 0: until interrupted)\n"
      "  -J FILE   also write every row to FILE (JSON; the name must end in .json)\n"
      "  -A LIST   dmaccl algorithms, comma separated: auto push1 pushn pushb pull1 pulln pullb\n"
      "            stage stage2d stagesm stagell relay chain twoshot split, or all (default:\n"
      "            auto,all)\n"
      "  -o LIST   collectives, comma separated: allgather alltoall allreduce reducescatter\n"
      "            broadcast reduce gather scatter allgatherv reducescatterv alltoallv sendrecv,\n"
      "            or all (default allgather,alltoall); a reduction op name (nccl-tests' -o)\n"
      "            sets --op. sendrecv: nccl-tests' ring of Send/Recv (2 ranks or more; skipped\n"
      "            on one rank), its algorithm Broadcast's (-A pull1: broadcast:pull1)\n"
      "  --op OP   sum prod max min avg premulsum: the reducing collectives' op (default sum)\n"
      "  --root R  the rooted collectives' root (default 0)\n"
      "  -B EXEC   executor: cuda or host (default: cuda if a GPU is present)\n"
      "  --baseline LIST  nccl (NCCL's SM kernels), nccl-ce (NCCL's copy-engine path: CTA policy\n"
      "            ZERO, ncclMemAlloc buffers in symmetric windows), comma separated, or none\n"
      "            (default nccl); needs NCCL at build time and GPUs\n"
      "  --in-place 0|1   also time the in-place form of collectives that have one (default 1)\n"
      "  --breakdown      per size, where one operation's time goes: control, schedule, copy,\n"
      "            sync (CUPTI; a second pass after the timed sweep); with -G, of one operation\n"
      "            captured into a graph and launched (control: the launch)\n"
      "  --timeline FILE  with --breakdown (implied): one warm operation per size into\n"
      "            FILE.rankR.txt: the CUDA API calls made during its call (name, thread,\n"
      "            duration, each thread's sum), then every copy and kernel (start, end,\n"
      "            stream), one line each\n"
      "  --energy         energy per operation and average power of all GPUs (NVML)\n"
      "  --persistent     dmaccl rows use persistent collectives: dmaccl<Collective>Init once\n"
      "            per size, then dmacclStart per operation (sendrecv: dmacclSendInit and\n"
      "            dmacclRecvInit, both started in one group)\n"
      "  --notify         dmaccl rows of AllGather and AllGatherV use dmacclAllGatherNotify and\n"
      "            dmacclAllGatherVNotify (arrival words, a new value per call): what the words "
      "cost\n"
      "  --uneven         the V forms' blocks are uneven (default: equal counts, comparable with\n"
      "            the fixed forms): rank r's block of AllGatherV/ReduceScatterV is "
      "(r+1)/(1+..+n)\n"
      "            of the total; AlltoAllv's rank i sends rank j ((i+j) mod n)+1 parts; sizes "
      "unchanged\n"
      "  --kernels 0|1    columns kernels/op, kern_us/op, ctas: the kernels each operation\n"
      "            launched (CUPTI, a traced pass before the sweep; GPUs only; default 1,\n"
      "            dmaccl-tune 0)\n"
      "  --tune-out FILE  write a tuning file (DMACCL_TUNE_FILE): per collective and size, the\n"
      "            fastest dmaccl algorithm measured (dmaccl-tune: default dmaccl-tune.txt);\n"
      "            with -G, coll@graph ranges (captured calls only)\n"
      "  -h        this help\n"
      "Sizes and busbw follow nccl-tests: AllGather(V) = output bytes, ReduceScatter(V) = input\n"
      "bytes, AlltoAll(v) = bytes each rank sends, AllReduce/Broadcast/Reduce/SendRecv = count\n"
      "bytes, Gather/Scatter = the root's buffer; busbw = algbw * 2(n-1)/n (AllReduce), 1\n"
      "(Broadcast, Reduce, SendRecv), (n-1)/n (the others). The V forms run with equal counts\n"
      "unless --uneven. NCCL has no V forms: their baseline is vLLM's emulation (grouped\n"
      "Broadcast / Reduce; grouped Send/Recv for AlltoAllv); sendrecv's is ncclSend/ncclRecv on\n"
      "the same ring. speedup = best baseline's time / dmaccl's.\n");
}

/* Adds one algorithm name unless it is already listed. */
static void addAlgo(perfArgs *a, const char *name) {
  for (int j = 0; j < a->nalgos; j++)
    if (strcmp(a->algos[j], name) == 0) return;
  if (a->nalgos < PERF_MAX_ALGOS) snprintf(a->algos[a->nalgos++], 16, "%s", name);
}

static int addAlgos(perfArgs *a, const char *list, char *err, size_t errlen) {
  /* "auto", then the library's algorithms by their planner names */
  const char *all[1 + PLAN_NUM_ALGOS];
  enum { NALL = 1 + PLAN_NUM_ALGOS };
  all[0] = "auto";
  for (int i = 0; i < PLAN_NUM_ALGOS; i++) all[1 + i] = planAlgoName((planAlgo)i);
  a->nalgos = 0;
  const char *p = list;
  while (*p) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    int known = 0;
    for (int i = 0; i < NALL; i++) {
      int every = len == 3 && strncasecmp(p, "all", 3) == 0;
      if (every || (strlen(all[i]) == len && strncasecmp(p, all[i], len) == 0)) {
        addAlgo(a, all[i]);
        known = 1;
      }
    }
    if (len == 5 && strncasecmp(p, "batch", 5) == 0) {
      addAlgo(a, "pushb");
      known = 1;
    }
    if (!known) {
      char names[160];
      size_t at = 0;
      for (int i = 0; i < NALL && at < sizeof(names); i++)
        at += (size_t)snprintf(names + at, sizeof(names) - at, "%s ", all[i]);
      snprintf(err, errlen, "-A: unknown algorithm '%.*s' (%sall)", (int)len, p, names);
      return -1;
    }
    p = c ? c + 1 : p + len;
  }
  if (a->nalgos == 0) {
    snprintf(err, errlen, "-A: no algorithm given");
    return -1;
  }
  return 0;
}

static int parseInt(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int parseBaselines(perfArgs *a, const char *v, char *err, size_t errlen) {
  a->baseline = 0;
  const char *p = v;
  while (*p) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 4 && strncasecmp(p, "nccl", 4) == 0)
      a->baseline |= PERF_BASE_NCCL;
    else if (len == 7 && strncasecmp(p, "nccl-ce", 7) == 0)
      a->baseline |= PERF_BASE_NCCL_CE;
    else if (len == 4 && strncasecmp(p, "none", 4) == 0 && p == v && !c)
      a->baseline = 0;
    else {
      snprintf(err, errlen,
               "bad value '%s' for --baseline (nccl, nccl-ce, both comma separated, "
               "or none)",
               v);
      return -1;
    }
    p = c ? c + 1 : p + len;
  }
  if (!*v) {
    snprintf(err, errlen, "--baseline needs a value (nccl, nccl-ce or none)");
    return -1;
  }
  return 0;
}

/* A comma list of collective names or "all"; a reduction op name (nccl-tests'
 * -o means the op) sets the op instead. */
static int parseColls(perfArgs *a, const char *v) {
  for (int op = 0; op < COLL_NUM_OPS; op++)
    if (strcasecmp(v, collOpName((dmacclRedOp_t)op)) == 0) return a->op = (dmacclRedOp_t)op, 0;
  unsigned colls = 0;
  for (const char *p = v; *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    char name[32];
    if (len == 0 || len >= sizeof(name)) return -1;
    memcpy(name, p, len);
    name[len] = 0;
    if (strcasecmp(name, "all") == 0) {
      colls |= PERF_ALL_COLLS;
    } else {
      int id = collByName(name);
      if (id < 0) return -1;
      colls |= PERF_COLL(id);
    }
    if (c && !c[1]) return -1; /* a trailing comma */
    p = c ? c + 1 : p + len;
  }
  if (!colls) return -1;
  a->colls = colls;
  return 0;
}

int perfParseArgs(int argc, char **argv, perfArgs *a, char *err, size_t errlen) {
  memset(a, 0, sizeof(*a));
  a->minBytes = 1024;
  a->maxBytes = 64u << 20;
  a->stepFactor = 2;
  a->iters = 20;
  a->warmup = 5;
  a->check = 1;
  a->average = PERF_AVG_MEAN;
  a->cycles = 1;
  a->inPlace = 1;
  a->type = dmacclFloat32;
  a->colls = PERF_COLL(COLL_ALLGATHER) | PERF_COLL(COLL_ALLTOALL);
  a->op = dmacclSum;
  a->baseline = PERF_BASE_NCCL;
  a->kernels = 1;
  addAlgos(a, "auto,all", err, errlen);
#ifdef PERF_TUNE_TOOL
  /* dmaccl-tune: every algorithm (auto too, for the comparison), no
   * baseline, out of place, 1 KB - 1 GB in factors of 2, a tuning file. */
  a->maxBytes = (size_t)1 << 30;
  a->baseline = 0;
  a->inPlace = 0;
  a->kernels = 0;
  snprintf(a->tuneOut, sizeof(a->tuneOut), "dmaccl-tune.txt");
#endif
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) return 1;
    if (strcmp(o, "--breakdown") == 0) {
      a->breakdown = 1;
      continue;
    }
    if (strcmp(o, "--energy") == 0) {
      a->energy = 1;
      continue;
    }
    if (strcmp(o, "--persistent") == 0) {
      a->persistent = 1;
      continue;
    }
    if (strcmp(o, "--uneven") == 0) {
      a->uneven = 1;
      continue;
    }
    if (strcmp(o, "--notify") == 0) {
      a->notify = 1;
      continue;
    }
    int isLong = strncmp(o, "--", 2) == 0;
    if (isLong && strcmp(o, "--baseline") && strcmp(o, "--in-place") && strcmp(o, "--tune-out") &&
        strcmp(o, "--timeline") && strcmp(o, "--op") && strcmp(o, "--root") &&
        strcmp(o, "--kernels")) {
      snprintf(err, errlen, "unknown option '%s' (see -h)", o);
      return -1;
    }
    if (!isLong && (o[0] != '-' || !o[1] || o[2])) {
      snprintf(err, errlen, "unknown argument '%s' (see -h)", o);
      return -1;
    }
    if (i + 1 >= argc) {
      snprintf(err, errlen, "%s needs a value", o);
      return -1;
    }
    const char *v = argv[++i];
    int bad = 0;
    if (strcmp(o, "--baseline") == 0) {
      if (parseBaselines(a, v, err, errlen)) return -1;
      continue;
    }
    if (strcmp(o, "--tune-out") == 0) {
      if (!*v || strlen(v) >= sizeof(a->tuneOut)) {
        snprintf(err, errlen, "bad file name '%s' for --tune-out", v);
        return -1;
      }
      snprintf(a->tuneOut, sizeof(a->tuneOut), "%s", v);
      continue;
    }
    if (strcmp(o, "--timeline") == 0) {
      if (!*v || strlen(v) >= sizeof(a->timeline) - 16) {
        snprintf(err, errlen, "bad file name '%s' for --timeline", v);
        return -1;
      }
      snprintf(a->timeline, sizeof(a->timeline), "%s", v);
      a->breakdown = 1;
      continue;
    }
    if (strcmp(o, "--op") == 0) {
      bad = 1;
      for (int op = 0; op < COLL_NUM_OPS; op++)
        if (strcasecmp(v, collOpName((dmacclRedOp_t)op)) == 0) a->op = (dmacclRedOp_t)op, bad = 0;
      if (bad) {
        snprintf(err, errlen, "bad value '%s' for --op (sum prod max min avg premulsum)", v);
        return -1;
      }
      continue;
    }
    if (strcmp(o, "--root") == 0) {
      if (parseInt(v, 0, 255, &a->root)) {
        snprintf(err, errlen, "bad value '%s' for --root (a rank)", v);
        return -1;
      }
      continue;
    }
    if (strcmp(o, "--kernels") == 0) {
      if (parseInt(v, 0, 1, &a->kernels)) {
        snprintf(err, errlen, "bad value '%s' for --kernels (0 or 1)", v);
        return -1;
      }
      continue;
    }
    if (strcmp(o, "--in-place") == 0) {
      bad = parseInt(v, 0, 1, &a->inPlace);
      if (bad) {
        snprintf(err, errlen, "bad value '%s' for --in-place (0 or 1)", v);
        return -1;
      }
      continue;
    }
    switch (o[1]) {
    case 'b': bad = perfParseSize(v, &a->minBytes); break;
    case 'e': bad = perfParseSize(v, &a->maxBytes); break;
    case 'i': bad = perfParseSize(v, &a->stepBytes) || a->stepBytes == 0; break;
    case 'f': {
      char *end;
      a->stepFactor = strtod(v, &end);
      /* finite and sane: sizes times it stay far inside size_t */
      bad = *end || !(a->stepFactor > 1.0 && a->stepFactor <= 1024.0);
      break;
    }
    case 'g': bad = parseInt(v, 1, 256, &a->nranks); break;
    case 'p': bad = parseInt(v, 1, 64, &a->procs); break;
    case 'n': bad = parseInt(v, 1, 1000000, &a->iters); break;
    case 'w': bad = parseInt(v, 0, 1000000, &a->warmup); break;
    case 'c': bad = parseInt(v, 0, 1000, &a->check); break;
    case 'G': bad = parseInt(v, 0, 1000000, &a->graphs); break;
    case 'z': bad = parseInt(v, 0, 1, &a->blocking); break;
    case 'a': bad = parseInt(v, 0, 3, &a->average); break;
    case 'N': bad = parseInt(v, 0, 1000000, &a->cycles); break;
    case 'J': {
      size_t len = strlen(v);
      if (len == 0 || len >= sizeof(a->json)) {
        bad = 1;
        break;
      }
      if (len < 6 || strcasecmp(v + len - 5, ".json") != 0) {
        snprintf(err, errlen, "-J %s: only JSON output is written; name the file *.json", v);
        return -1;
      }
      memcpy(a->json, v, len + 1);
      break;
    }
    case 'd': {
      bad = 1;
      for (size_t t = 0; t < NTYPES; t++)
        if (strcasecmp(v, types[t].name) == 0) a->type = types[t].t, bad = 0;
      break;
    }
    case 'A':
      if (addAlgos(a, v, err, errlen)) return -1;
      break;
    case 'B':
      if (strcasecmp(v, "cuda") == 0)
        a->executor = PERF_EXEC_CUDA;
      else if (strcasecmp(v, "host") == 0)
        a->executor = PERF_EXEC_HOST;
      else
        bad = 1;
      break;
    case 'o': bad = parseColls(a, v); break;
    default: snprintf(err, errlen, "unknown option '%s' (see -h)", o); return -1;
    }
    if (bad) {
      snprintf(err, errlen, "bad value '%s' for %s (see -h)", v, o);
      return -1;
    }
  }
  if (a->procs && a->nranks > 1) {
    snprintf(err, errlen, "-p %d with -g %d: with -p every process drives one GPU", a->procs,
             a->nranks);
    return -1;
  }
  if (a->minBytes > a->maxBytes) {
    snprintf(err, errlen, "-b %zu is larger than -e %zu", a->minBytes, a->maxBytes);
    return -1;
  }
  if (a->graphs && a->executor == PERF_EXEC_HOST) {
    snprintf(err, errlen, "-G %d: CUDA graphs need the cuda executor, not -B host", a->graphs);
    return -1;
  }
  for (int c = 0; c < COLL_NUM; c++)
    if ((a->colls & PERF_COLL(c)) && (collTable[c].flags & COLL_REDUCES) &&
        !collOpSupported(a->type, a->op)) {
      snprintf(err, errlen, "--op %s with -d %s (for %s): avg needs a floating-point type",
               collOpName(a->op), perfTypeName(a->type), collTable[c].name);
      return -1;
    }
  if (a->notify && a->persistent) {
    snprintf(err, errlen,
             "--notify with --persistent: the ...Notify calls have no persistent form");
    return -1;
  }
  if (a->graphs && a->blocking) {
    snprintf(err, errlen, "-G with -z 1: a graph's operations cannot be waited for one by one");
    return -1;
  }
  return 0;
}

size_t perfNextSize(const perfArgs *a, size_t cur) {
  size_t next;
  if (a->stepBytes) {
    if (cur > a->maxBytes || a->stepBytes > a->maxBytes - cur) return 0;
    next = cur + a->stepBytes;
  } else {
    double d = (double)cur * a->stepFactor;
    if (!(d <= (double)a->maxBytes)) return 0; /* also before a size_t conversion overflows */
    next = (size_t)d;
  }
  if (next <= cur) next = cur + 1;
  return next > a->maxBytes ? 0 : next;
}

int perfNumSizes(const perfArgs *a) {
  int n = 0;
  for (size_t s = a->minBytes; s; s = perfNextSize(a, s)) n++;
  return n;
}

size_t perfUnevenBlock(size_t total, int n, int w) {
  /* prefix(w) = floor(total * (1+..+w) / (1+..+n)); blocks are differences */
  unsigned long long t = total, all = (unsigned long long)n * (unsigned long long)(n + 1) / 2;
  unsigned long long hi = (unsigned long long)w * (unsigned long long)(w + 1) / 2;
  unsigned long long lo = (unsigned long long)(w - 1) * (unsigned long long)w / 2;
  /* t * hi may exceed 64 bits only beyond any buffer size: split t */
  unsigned long long q = t / all, r = t % all;
  return (size_t)((q * hi + r * hi / all) - (q * lo + r * lo / all));
}

void perfShapeOf(collId c, size_t count, int nranks, int root, int uneven, collShape *s,
                 collVArrays *v) {
  *s = (collShape){.nranks = nranks, .count = count, .root = root};
  if (!(collTable[c].flags & COLL_VECTOR)) return;
  size_t n = (size_t)nranks, total = n * count, off = 0;
  for (int i = 0; i < nranks; i++) {
    v->counts[i] = uneven ? perfUnevenBlock(total, nranks, i + 1) : count;
    v->displs[i] = off;
    off += v->counts[i];
  }
  for (int i = 0; i < nranks; i++) /* sendcounts: row i is what rank i sends */
    for (int j = 0; j < nranks; j++)
      v->sendcounts[(size_t)i * n + (size_t)j] =
          uneven ? perfUnevenBlock(total, nranks, (i + j) % nranks + 1) : count;
  for (int i = 0; i < nranks; i++) {
    size_t so = 0, ro = 0;
    for (int j = 0; j < nranks; j++) {
      size_t k = (size_t)i * n + (size_t)j;
      v->recvcounts[k] = v->sendcounts[(size_t)j * n + (size_t)i]; /* what j sends to i */
      v->sdispls[k] = so, v->rdispls[k] = ro;
      so += v->sendcounts[k], ro += v->recvcounts[k];
    }
  }
  s->counts = v->counts, s->displs = v->displs;
  s->sendcounts = v->sendcounts, s->sdispls = v->sdispls;
  s->recvcounts = v->recvcounts, s->rdispls = v->rdispls;
}

size_t perfShape(collId c, size_t bytes, int nranks, int root, int uneven, size_t typeSize,
                 collShape *s, collVArrays *v) {
  perfShapeOf(c, 1, nranks, root, 0, s, v); /* the size of one element per block */
  size_t unit = collSizeBytes(c, s, 0, typeSize), count = unit ? bytes / unit : 0;
  perfShapeOf(c, count, nranks, root, uneven, s, v);
  return count;
}

double perfAlgBw(size_t bytes, double us) {
  return us > 0 ? (double)bytes / us / 1e3 : 0;
}

double perfBusBw(collId c, size_t bytes, double us, int nranks) {
  return perfAlgBw(bytes, us) * collBusBwFactor(c, nranks);
}
