/* dmaccl-c3's inputs: the command line, contender names and scenario files.
 * Plain C (no CUDA), so CI tests all of it. */
#include "c3.h"
#include "plan.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Every contender of one run unless -A says otherwise: NCCL's settings, then
 * the library's choice, then every algorithm. */
#define C3_DEFAULT_CONTENDERS                                                                      \
  "nccl,nccl-prio,nccl-cta8,nccl-ce,auto,push1,pushn,pushb,pull1,pulln,pullb,stage,stage2d"
/* --traffic without -A: the dmaccl contenders (NCCL has no schedule). */
#define C3_TRAFFIC_CONTENDERS "auto,push1,pushn,pushb,pull1,pulln,pullb,stage,stage2d"

int c3CollAccepted(int c) {
  return c >= 0 && c < COLL_NUM && !(collTable[c].flags & (COLL_VECTOR | COLL_P2P));
}

size_t c3Count(const c3Scenario *s, int nranks) {
  collShape one = {.nranks = nranks, .count = 1};
  size_t unit = collSizeBytes(s->coll, &one, 0, 2); /* 2-byte bf16 elements */
  size_t count = unit ? s->size / unit : 0;
  return count ? count : 1;
}

void c3Shape(const c3Scenario *s, int nranks, collShape *out) {
  memset(out, 0, sizeof(*out));
  out->nranks = nranks;
  out->count = c3Count(s, nranks);
  out->root = 0;
}

/* The algorithms of mask (bit planAlgo), "a, b and c". */
static void algoList(unsigned mask, char *buf, size_t len) {
  int total = 0, k = 0;
  for (int a = 0; a < PLAN_NUM_ALGOS; a++) total += (mask & PLAN_ALGO_BIT(a)) != 0;
  size_t used = 0;
  buf[0] = '\0';
  for (int a = 0; a < PLAN_NUM_ALGOS && used < len; a++) {
    if (!(mask & PLAN_ALGO_BIT(a))) continue;
    const char *sep = k == 0 ? "" : k == total - 1 ? " and " : ", ";
    used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, planAlgoName((planAlgo)a));
    k++;
  }
}

const char *c3Lacks(const c3ContenderSpec *s, int c, const char *(*ncclLacks)(int coll, int ce),
                    char *buf, size_t len) {
  if (s->kind != C3_DMACCL) return ncclLacks ? ncclLacks(c, s->kind == C3_NCCL_CE) : NULL;
  if (strcmp(s->algo, "auto") == 0) return NULL;
  /* the library's collective whose entry picks the algorithm, as
   * dmaccl-perf's perfTakes decides */
  const char *sel = c >= 0 && c < COLL_NUM ? collTable[c].select : "";
  planColl pc;
  planAlgo pa;
  if (planCollParse(sel, strlen(sel), &pc) != 0 ||
      planAlgoParse(s->algo, strlen(s->algo), &pa) != 0) {
    snprintf(buf, len, "no selection entry '%s' with an algorithm '%s' in the library", sel,
             s->algo);
    return buf;
  }
  unsigned algos = planCollOf(pc)->algos;
  if (algos & PLAN_ALGO_BIT(pa)) return NULL;
  char list[256];
  algoList(algos, list, sizeof(list));
  snprintf(buf, len, "%s takes %s (its algorithms in src/plan), not %s", collTable[c].name, list,
           s->algo);
  return buf;
}

int c3Selection(const c3ContenderSpec *s, unsigned colls, char *out, size_t len) {
  size_t used = 0;
  if (len) out[0] = '\0';
  if (s->kind != C3_DMACCL || strcmp(s->algo, "auto") == 0) return len ? 0 : -1;
  for (int c = 0; c < COLL_NUM; c++) {
    char why[256];
    if (!(colls & (1u << c)) || c3Lacks(s, c, NULL, why, sizeof(why))) continue;
    int dup = 0; /* the entry of an earlier collective of the set (the same select) */
    for (int d = 0; d < c; d++)
      dup |= (colls & (1u << d)) && strcmp(collTable[d].select, collTable[c].select) == 0;
    if (dup) continue;
    int w =
        snprintf(out + used, len - used, "%s%s:%s", used ? ";" : "", collTable[c].select, s->algo);
    if (w < 0 || (size_t)w >= len - used) {
      out[0] = '\0';
      return -1;
    }
    used += (size_t)w;
  }
  return 0;
}

void c3ExactBf16(void *buf, size_t bytes) {
  unsigned char *p = buf;
  for (size_t i = 0; i + 2 <= bytes; i += 2) {
    uint16_t u;
    memcpy(&u, p + i, 2);
    float v = (float)((int)(u % 17) - 8); /* -8..8: exact in bf16 */
    uint32_t bits;
    memcpy(&bits, &v, 4);
    u = (uint16_t)(bits >> 16); /* bf16: the top half of a float (low half 0 here) */
    memcpy(p + i, &u, 2);
  }
}

int c3ParseContender(const char *name, c3ContenderSpec *s, char *err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  size_t len = strlen(name);
  if (len == 0 || len >= C3_NAME) {
    snprintf(err, errlen, "contender '%s': empty or longer than %d characters", name, C3_NAME - 1);
    return -1;
  }
  snprintf(s->name, sizeof(s->name), "%s", name);
  if (strcmp(name, "nccl") == 0) {
    s->kind = C3_NCCL;
    return 0;
  }
  if (strcmp(name, "nccl-prio") == 0) {
    s->kind = C3_NCCL_PRIO;
    s->highPrio = 1;
    return 0;
  }
  if (strcmp(name, "nccl-ce") == 0) {
    s->kind = C3_NCCL_CE;
    return 0;
  }
  if (strncmp(name, "nccl-cta", 8) == 0) {
    char *end = NULL;
    long v = strtol(name + 8, &end, 10);
    if (name[8] == '\0' || *end != '\0' || v < 1 || v > 64) {
      snprintf(err, errlen, "contender '%s': nccl-ctaN needs N from 1 to 64 (e.g. nccl-cta8)",
               name);
      return -1;
    }
    s->kind = C3_NCCL_CTA;
    s->ctas = (int)v;
    return 0;
  }
  if (strncmp(name, "nccl", 4) == 0) {
    snprintf(err, errlen,
             "contender '%s': NCCL settings are nccl, nccl-prio, nccl-ctaN and nccl-ce", name);
    return -1;
  }
  s->kind = C3_DMACCL;
  const char *slash = strchr(name, '/');
  size_t alen = slash ? (size_t)(slash - name) : len;
  for (int more = 1; more;) { /* the suffixes, in any order */
    more = 0;
    if (!s->highPrio && alen > 5 && strncmp(name + alen - 5, "-prio", 5) == 0)
      s->highPrio = 1, alen -= 5, more = 1;
    if (!s->whole && alen > 6 && strncmp(name + alen - 6, "-whole", 6) == 0)
      s->whole = 1, alen -= 6, more = 1;
  }
  planAlgo a;
  if (alen >= sizeof(s->algo) ||
      (!(alen == 4 && strncmp(name, "auto", 4) == 0) && planAlgoParse(name, alen, &a) != 0)) {
    snprintf(err, errlen,
             "contender '%s': '%.*s' is not a dmaccl algorithm, auto, or an NCCL "
             "setting",
             name, (int)alen, name);
    return -1;
  }
  memcpy(s->algo, name, alen);
  s->algo[alen] = '\0';
  if (slash) {
    const char *eq = strchr(slash, '=');
    size_t vlen = eq ? (size_t)(eq - slash - 1) : 0;
    if (!eq || vlen == 0 || vlen >= sizeof(s->envVar) || strncmp(slash + 1, "DMACCL_", 7) != 0) {
      snprintf(err, errlen, "contender '%s': after '/' comes DMACCL_VAR=VALUE (a dmaccl parameter)",
               name);
      return -1;
    }
    memcpy(s->envVar, slash + 1, vlen);
    s->envVar[vlen] = '\0';
    snprintf(s->envVal, sizeof(s->envVal), "%s", eq + 1);
  }
  return 0;
}

static int parseContenders(const char *list, c3Args *a, char *err, size_t errlen) {
  a->ncs = 0;
  const char *p = list;
  while (*p) {
    const char *q = strchr(p, ',');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    char name[C3_NAME + 8];
    if (len >= sizeof(name)) {
      snprintf(err, errlen, "-A: contender '%.*s' is too long", (int)len, p);
      return -1;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    if (a->ncs == C3_MAX_CONTENDERS) {
      snprintf(err, errlen, "-A: more than %d contenders", C3_MAX_CONTENDERS);
      return -1;
    }
    if (c3ParseContender(name, &a->cs[a->ncs], err, errlen)) return -1;
    for (int i = 0; i < a->ncs; i++)
      if (strcmp(a->cs[i].name, name) == 0) {
        snprintf(err, errlen, "-A: contender '%s' is named twice", name);
        return -1;
      }
    a->ncs++;
    p += len;
    if (*p == ',') p++;
  }
  if (a->ncs == 0) {
    snprintf(err, errlen, "-A: no contenders");
    return -1;
  }
  return 0;
}

void c3Usage(FILE *f) {
  fprintf(f, "usage: dmaccl-c3 [options]\n"
             "On every GPU, a cuBLAS bf16 GEMM stream and a collective stream run alone and then\n"
             "together; ConCCL's metrics per scenario and contender (one process per GPU).\n"
             "  -p N          ranks, one process each, rank r on GPU r %% GPUs (default: every\n"
             "                GPU; more ranks than GPUs share them: a functional check)\n"
             "  -f FILE       scenario file (default: tools/c3/scenarios.txt beside the source)\n"
             "  -s A,B        only these scenarios\n"
             "  -A LIST       contenders (default: " C3_DEFAULT_CONTENDERS ")\n"
             "                nccl | nccl-prio | nccl-ctaN | nccl-ce | auto | an algorithm,\n"
             "                ALGO-prio: its stream at the highest priority;\n"
             "                ALGO-whole: fused scenarios' rows wait for the whole\n"
             "                collective (no arrival words), as NCCL's do;\n"
             "                ALGO/DMACCL_VAR=VALUE: with that library parameter\n"
             "  -r N          runs; medians over them (default 5)\n"
             "  -t MS         length of the longer isolated loop (default 20)\n"
             "  -c 0|1        check every byte of an overlapped collective per row (default 1)\n"
             "  --energy      NVML energy per overlapped iteration\n"
             "  --list        print scenarios and contenders; measure nothing (no GPU needed)\n"
             "  --traffic     print the HBM bytes each dmaccl contender's collective moves on a\n"
             "                GPU, computed from the library's schedules, beside the GEMM's\n"
             "                (-p ranks, default 2; -A default: auto and every algorithm;\n"
             "                auto/DMACCL_CTA_POLICY=V and auto/DMACCL_ALGO=S reshape auto's\n"
             "                table as the library would); measure nothing (no GPU needed)\n"
             "  -J FILE       JSON output\n"
             "  -h            this text\n");
}

static int parsePositive(const char *flag, const char *v, double lo, double hi, double *out,
                         char *err, size_t errlen) {
  char *end = NULL;
  errno = 0;
  double d = strtod(v, &end);
  if (!v[0] || *end || errno || !(d >= lo && d <= hi)) {
    snprintf(err, errlen, "%s '%s': expected a number from %g to %g", flag, v, lo, hi);
    return -1;
  }
  *out = d;
  return 0;
}

int c3ParseArgs(int argc, char **argv, const char *defaultFile, c3Args *a, char *err,
                size_t errlen) {
  memset(a, 0, sizeof(*a));
  a->runs = 5;
  a->targetMs = 20;
  a->check = 1;
  if (defaultFile) snprintf(a->file, sizeof(a->file), "%s", defaultFile);
  const char *contenders = NULL; /* -A's list */
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (strcmp(f, "-h") == 0 || strcmp(f, "--help") == 0) return 1;
    if (strcmp(f, "--energy") == 0) {
      a->energy = 1;
      continue;
    }
    if (strcmp(f, "--list") == 0) {
      a->list = 1;
      continue;
    }
    if (strcmp(f, "--traffic") == 0) {
      a->traffic = 1;
      continue;
    }
    int known = !strcmp(f, "-p") || !strcmp(f, "-f") || !strcmp(f, "-s") || !strcmp(f, "-A") ||
                !strcmp(f, "-r") || !strcmp(f, "-t") || !strcmp(f, "-c") || !strcmp(f, "-J");
    if (!known) {
      snprintf(err, errlen, "unknown option '%s' (-h lists them)", f);
      return -1;
    }
    if (i + 1 >= argc) {
      snprintf(err, errlen, "%s needs a value", f);
      return -1;
    }
    const char *v = argv[++i];
    double d;
    size_t vlen = strlen(v);
    if (!strcmp(f, "-p")) {
      if (parsePositive(f, v, 1, 64, &d, err, errlen)) return -1;
      if (d != (int)d) {
        snprintf(err, errlen, "-p '%s': expected a whole number of ranks", v);
        return -1;
      }
      a->procs = (int)d;
    } else if (!strcmp(f, "-r")) {
      if (parsePositive(f, v, 1, 1000, &d, err, errlen)) return -1;
      if (d != (int)d) {
        snprintf(err, errlen, "-r '%s': expected a whole number of runs", v);
        return -1;
      }
      a->runs = (int)d;
    } else if (!strcmp(f, "-t")) {
      if (parsePositive(f, v, 0.1, 10000, &d, err, errlen)) return -1;
      a->targetMs = d;
    } else if (!strcmp(f, "-c")) {
      if (strcmp(v, "0") && strcmp(v, "1")) {
        snprintf(err, errlen, "-c '%s': expected 0 or 1", v);
        return -1;
      }
      a->check = v[0] == '1';
    } else {
      char *dst = !strcmp(f, "-f") ? a->file : !strcmp(f, "-s") ? a->only : a->json;
      if (!strcmp(f, "-A")) {
        contenders = v;
        continue;
      }
      if (vlen == 0 || vlen >= sizeof(a->file)) {
        snprintf(err, errlen, "%s: empty or too long", f);
        return -1;
      }
      memcpy(dst, v, vlen + 1);
    }
  }
  if (!a->file[0]) {
    snprintf(err, errlen, "no scenario file: give -f FILE");
    return -1;
  }
  if (!contenders) contenders = a->traffic ? C3_TRAFFIC_CONTENDERS : C3_DEFAULT_CONTENDERS;
  return parseContenders(contenders, a, err, errlen);
}

char *c3ReadFile(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open scenario file %s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + len, 1, cap - len - 1, f);
    len += got;
    if (len + 1 < cap) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) free(buf);
    buf = nb;
    cap *= 2;
  }
  fclose(f);
  if (!buf) {
    snprintf(err, errlen, "out of memory reading %s", path);
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

/* Splits a line into whitespace-separated fields; returns their count. */
static int fields(char *line, char **f, int max) {
  int n = 0;
  char *p = line;
  while (*p) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (!*p) break;
    if (n == max) return max + 1;
    f[n++] = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    if (*p) *p++ = '\0';
  }
  return n;
}

static int parseDim(const char *s, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < 1 || v > (1L << 20)) return -1;
  *out = v;
  return 0;
}

static int nameListed(const char *only, const char *name) {
  size_t len = strlen(name);
  for (const char *p = only; *p;) {
    const char *q = strchr(p, ',');
    size_t l = q ? (size_t)(q - p) : strlen(p);
    if (l == len && strncmp(p, name, len) == 0) return 1;
    p += l;
    if (*p == ',') p++;
  }
  return 0;
}

/* The names c3CollAccepted takes, "a, b, ..., c". */
static void acceptedNames(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int c = 0; c < COLL_NUM && used < len; c++)
    if (c3CollAccepted(c))
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", collTable[c].name);
}

static int parseLine(char *line, int lineNo, c3Scenario *s, char *err, size_t errlen) {
  char *f[8];
  int nf = fields(line, f, 7);
  if (nf < 6 || nf > 7) {
    snprintf(err, errlen,
             "line %d: expected 'name M N K COLL size [comm=P%% | fused]', got %d fields", lineNo,
             nf);
    return -1;
  }
  memset(s, 0, sizeof(*s));
  s->line = lineNo;
  if (strlen(f[0]) >= sizeof(s->name)) {
    snprintf(err, errlen, "line %d: name '%s' is longer than %d characters", lineNo, f[0],
             C3_NAME - 1);
    return -1;
  }
  snprintf(s->name, sizeof(s->name), "%s", f[0]);
  long *dims[3] = {&s->m, &s->n, &s->k};
  const char *dn[3] = {"M", "N", "K"};
  for (int d = 0; d < 3; d++)
    if (parseDim(f[1 + d], dims[d])) {
      snprintf(err, errlen, "line %d: %s '%s' is not a GEMM dimension from 1 to 1048576", lineNo,
               dn[d], f[1 + d]);
      return -1;
    }
  int c = collByName(f[4]);
  if (!c3CollAccepted(c)) {
    char names[256];
    acceptedNames(names, sizeof(names));
    snprintf(err, errlen, "line %d: collective '%s' is not one of %s%s", lineNo, f[4], names,
             c >= 0 ? " (no count arrays, no Send/Recv)" : "");
    return -1;
  }
  s->coll = (collId)c;
  if (planParseSize(f[5], strlen(f[5]), &s->size) || s->size == SIZE_MAX || s->size < 1024 ||
      s->size > ((size_t)16 << 30)) {
    snprintf(err, errlen, "line %d: size '%s' is not a size from 1K to 16G (e.g. 64M)", lineNo,
             f[5]);
    return -1;
  }
  s->commShare = 0.5;
  if (nf == 7 && strcmp(f[6], "fused") == 0) {
    size_t want = (size_t)s->m * (size_t)s->k * 2;
    if (s->coll != COLL_ALLGATHER || s->size != want) {
      snprintf(err, errlen,
               "line %d: a fused scenario gathers the GEMM's A: allgather of M*K*2 = %zu bytes, "
               "not %s of %zu",
               lineNo, want, collTable[s->coll].name, s->size);
      return -1;
    }
    s->fused = 1;
  } else if (nf == 7) {
    char *end = NULL;
    double p = strncmp(f[6], "comm=", 5) == 0 ? strtod(f[6] + 5, &end) : -1;
    if (!end || strcmp(end, "%") != 0 || !(p >= 1 && p <= 99)) {
      snprintf(err, errlen, "line %d: '%s' is not comm=P%% with P from 1 to 99", lineNo, f[6]);
      return -1;
    }
    s->commShare = p / 100.0;
  }
  return 0;
}

int c3ParseScenarios(const char *text, const char *only, c3Scenario *out, int max, char *err,
                     size_t errlen) {
  int n = 0, lineNo = 0;
  const char *p = text;
  while (*p) {
    lineNo++;
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char line[512];
    if (len >= sizeof(line)) {
      snprintf(err, errlen, "line %d: longer than %zu characters", lineNo, sizeof(line) - 1);
      return -1;
    }
    memcpy(line, p, len);
    line[len] = '\0';
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *q = line;
    while (isspace((unsigned char)*q)) q++;
    if (*q) {
      c3Scenario s;
      if (parseLine(q, lineNo, &s, err, errlen)) return -1;
      for (int i = 0; i < n; i++)
        if (strcmp(out[i].name, s.name) == 0) {
          snprintf(err, errlen, "line %d: scenario '%s' was already defined on line %d", lineNo,
                   s.name, out[i].line);
          return -1;
        }
      if (!only[0] || nameListed(only, s.name)) {
        if (n == max) {
          snprintf(err, errlen, "line %d: more than %d scenarios", lineNo, max);
          return -1;
        }
        out[n++] = s;
      }
    }
    p += len;
    if (*p == '\n') p++;
  }
  /* every name in `only` must exist */
  for (const char *o = only; *o;) {
    const char *c = strchr(o, ',');
    size_t l = c ? (size_t)(c - o) : strlen(o);
    int found = 0;
    for (int i = 0; i < n; i++) found |= strlen(out[i].name) == l && !strncmp(out[i].name, o, l);
    if (!found) {
      snprintf(err, errlen, "-s: no scenario named '%.*s'", (int)l, o);
      return -1;
    }
    o += l;
    if (*o == ',') o++;
  }
  if (n == 0) {
    snprintf(err, errlen, "no scenarios (every line is empty or a comment)");
    return -1;
  }
  return n;
}
