#include "args.h"

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
  unsigned long long v = strtoull(s, &end, 10);
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
      "usage: dmaccl-perf [options]\n"
      "  -b SIZE   smallest size (default 1K; K, M, G suffixes)\n"
      "  -e SIZE   largest size (default 64M)\n"
      "  -f F      multiply the size by F each step (default 2)\n"
      "  -i BYTES  add BYTES each step instead of multiplying\n"
      "  -g N      ranks of one process: GPUs (CUDA, default all) or threads (host, default 4)\n"
      "  -p N      N processes, one rank (one GPU) each, forked before any CUDA call;\n"
      "            times are reported as rank 0's, and avg/min/max over ranks\n"
      "  -n N      timed iterations per size (default 20)\n"
      "  -w N      warm-up iterations (default 5)\n"
      "  -c 0|1    check every byte of one result per size (default 1)\n"
      "  -d TYPE   int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double f8e4m3 f8e5m2\n"
      "  -a LIST   algorithms, comma separated: auto push1 pushn pushb pull1 pulln pullb, or all\n"
      "            (default: auto,all)\n"
      "  -B EXEC   executor: cuda or host (default: cuda if a GPU is present)\n"
      "  -o LIST   collectives: allgather, alltoall or all (default all)\n"
      "  --baseline nccl|none  NCCL baseline rows when built with NCCL (default nccl)\n"
      "  -h        this help\n"
      "Sizes follow nccl-tests: AllGather = total output bytes, AlltoAll = bytes each\n"
      "rank sends. busbw = algbw * (n-1)/n.\n");
}

static int addAlgos(perfArgs *a, const char *list, char *err, size_t errlen) {
  static const char *all[] = {"auto", "push1", "pushn", "pushb", "pull1", "pulln", "pullb"};
  a->nalgos = 0;
  const char *p = list;
  while (*p) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    int known = 0;
    if (len == 3 && strncasecmp(p, "all", 3) == 0) {
      for (int i = 0; i < 7; i++) {
        int dup = 0;
        for (int j = 0; j < a->nalgos; j++) dup |= strcmp(a->algos[j], all[i]) == 0;
        if (!dup && a->nalgos < PERF_MAX_ALGOS) snprintf(a->algos[a->nalgos++], 16, "%s", all[i]);
      }
      known = 1;
    } else {
      for (int i = 0; i < 7; i++)
        if (strlen(all[i]) == len && strncasecmp(p, all[i], len) == 0) {
          if (a->nalgos == PERF_MAX_ALGOS) break;
          snprintf(a->algos[a->nalgos++], 16, "%s", all[i]);
          known = 1;
        }
      if (len == 5 && strncasecmp(p, "batch", 5) == 0 && a->nalgos < PERF_MAX_ALGOS) {
        snprintf(a->algos[a->nalgos++], 16, "pushb");
        known = 1;
      }
    }
    if (!known) {
      snprintf(err, errlen,
               "-a: unknown algorithm '%.*s' (auto push1 pushn pushb pull1 pulln pullb all)",
               (int)len, p);
      return -1;
    }
    p = c ? c + 1 : p + len;
  }
  if (a->nalgos == 0) {
    snprintf(err, errlen, "-a: no algorithm given");
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

int perfParseArgs(int argc, char **argv, perfArgs *a, char *err, size_t errlen) {
  memset(a, 0, sizeof(*a));
  a->minBytes = 1024;
  a->maxBytes = 64u << 20;
  a->stepFactor = 2;
  a->iters = 20;
  a->warmup = 5;
  a->check = 1;
  a->type = dmacclFloat32;
  a->colls = PERF_ALLGATHER | PERF_ALLTOALL;
  a->baseline = 1;
  addAlgos(a, "auto,all", err, errlen);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) return 1;
    if (strcmp(o, "--baseline") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      if (strcasecmp(v, "nccl") == 0)
        a->baseline = 1;
      else if (strcasecmp(v, "none") == 0)
        a->baseline = 0;
      else {
        snprintf(err, errlen, "bad value '%s' for --baseline (nccl or none)", v);
        return -1;
      }
      continue;
    }
    if (o[0] != '-' || !o[1] || o[2]) {
      snprintf(err, errlen, "unknown argument '%s' (see -h)", o);
      return -1;
    }
    if (i + 1 >= argc) {
      snprintf(err, errlen, "%s needs a value", o);
      return -1;
    }
    const char *v = argv[++i];
    int bad = 0;
    switch (o[1]) {
    case 'b': bad = perfParseSize(v, &a->minBytes); break;
    case 'e': bad = perfParseSize(v, &a->maxBytes); break;
    case 'i': bad = perfParseSize(v, &a->stepBytes) || a->stepBytes == 0; break;
    case 'f': {
      char *end;
      a->stepFactor = strtod(v, &end);
      bad = *end || !(a->stepFactor > 1.0);
      break;
    }
    case 'g': bad = parseInt(v, 1, 256, &a->nranks); break;
    case 'p': bad = parseInt(v, 1, 64, &a->procs); break;
    case 'n': bad = parseInt(v, 1, 1000000, &a->iters); break;
    case 'w': bad = parseInt(v, 0, 1000000, &a->warmup); break;
    case 'c': bad = parseInt(v, 0, 1, &a->check); break;
    case 'd': {
      bad = 1;
      for (size_t t = 0; t < NTYPES; t++)
        if (strcasecmp(v, types[t].name) == 0) a->type = types[t].t, bad = 0;
      break;
    }
    case 'a':
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
    case 'o':
      if (strcasecmp(v, "allgather") == 0)
        a->colls = PERF_ALLGATHER;
      else if (strcasecmp(v, "alltoall") == 0)
        a->colls = PERF_ALLTOALL;
      else if (strcasecmp(v, "all") == 0)
        a->colls = PERF_ALLGATHER | PERF_ALLTOALL;
      else
        bad = 1;
      break;
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
  return 0;
}

size_t perfNextSize(const perfArgs *a, size_t cur) {
  size_t next = a->stepBytes ? cur + a->stepBytes : (size_t)((double)cur * a->stepFactor);
  if (next <= cur) next = cur + 1;
  return next > a->maxBytes ? 0 : next;
}

size_t perfCount(size_t bytes, int nranks, size_t typeSize) {
  return bytes / typeSize / (size_t)nranks;
}

double perfAlgBw(size_t bytes, double us) {
  return us > 0 ? (double)bytes / us / 1e3 : 0;
}

double perfBusBw(size_t bytes, double us, int nranks) {
  return perfAlgBw(bytes, us) * (double)(nranks - 1) / (double)nranks;
}
