/* What dmaccl-perf prints (nccl-tests' header and columns, one row per
 * contender and size, out of place and in place side by side) and the JSON
 * file of -J. Only the process of rank 0 calls these. */
#include "bench.h"
#include "common/json.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const perfKindName[3] = {"dmaccl", "nccl", "nccl-ce"};
static const char *avgName[4] = {"rank 0's time", "the mean of the ranks' times",
                                 "the fastest rank's time", "the slowest rank's time"};

static const char *collName(int coll) {
  return collTable[coll].name;
}

/* DMACCL_REDUCE_CTAS as the library reads it (1 to 1024, else its default 8). */
static int reduceCtas(void) {
  const char *v = getenv("DMACCL_REDUCE_CTAS");
  char *end;
  long n = v ? strtol(v, &end, 10) : 0;
  return v && *v && !*end && n >= 1 && n <= 1024 ? (int)n : 8;
}

/* DMACCL_CTA_POLICY as set ("" when unset: the library's default, as
 * dmaccl-perf's communicators leave the config's field unset). */
static const char *ctaPolicy(void) {
  const char *v = getenv("DMACCL_CTA_POLICY");
  return v ? v : "";
}

static int anyColl(const bench *b, unsigned flag) {
  for (int c = 0; c < COLL_NUM; c++)
    if ((b->args.colls & PERF_COLL(c)) && (collTable[c].flags & flag)) return 1;
  return 0;
}

void perfHeader(bench *b) {
  const perfArgs *a = &b->args;
  char gpus[512] = "";
  size_t o = 0;
  for (int r = 0; b->gpu && r < b->n; r++)
    o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, " %d", b->mp ? r % b->ngpu : b->devs[r]);
  if (b->gpu && b->gpuName[0]) snprintf(gpus + o, sizeof(gpus) - o, " (%s)", b->gpuName);
  int v = 0;
  dmacclGetVersion(&v);
  printf("# dmaccl-perf (dmaccl %d): executor %s%s, %d ranks%s%s\n", v, b->gpu ? "cuda" : "host",
         b->mp    ? " (one process per rank)"
         : b->gpu ? " (one process drives every GPU)"
                  : " (ranks are threads on host memory)",
         b->n, b->gpu ? ", GPUs" : "", gpus);
  if (b->shared)
    printf("# ranks share GPUs: %d ranks on %d GPU(s), rank r on GPU r %% %d; copies between ranks "
           "of one GPU are device-local, so these are not NVLink figures\n",
           b->n, b->ngpu, b->ngpu);
  printf("# minBytes %zu maxBytes %zu step: %g(%s) type %s warmup iters: %d iters: %d validation: "
         "%d graph: %d blocking: %d cycles: %d\n",
         a->minBytes, a->maxBytes, a->stepBytes ? (double)a->stepBytes : a->stepFactor,
         a->stepBytes ? "bytes" : "factor", perfTypeName(a->type), a->warmup, a->iters, a->check,
         a->graphs, a->blocking, a->cycles);
  if (a->graphs)
    printf("# graph mode: %d operations captured as one CUDA graph per %s, launched %d times; "
           "time = elapsed / %d\n",
           a->iters, b->mp ? "rank" : "process (every rank's stream)", a->graphs,
           a->iters * a->graphs);
  if (b->mp)
    printf("# time = %s per operation (-a %d); bandwidths and speedup use it\n",
           avgName[a->average], a->average);
  printf("# size (nccl-tests): AllGather(V) = output bytes, ReduceScatter(V) = input bytes, "
         "AlltoAll(v) = bytes each rank sends,\n#   AllReduce/Broadcast/Reduce/SendRecv = count "
         "bytes, Gather/Scatter = the root's buffer; busbw = algbw * 2(n-1)/n (AllReduce),\n#   1 "
         "(Broadcast, Reduce, SendRecv), (n-1)/n (the others); op %s, root %d; "
         "DMACCL_REDUCE_CTAS=%d%s; DMACCL_CTA_POLICY=%s\n",
         collOpName(a->op), a->root, reduceCtas(), getenv("DMACCL_REDUCE_CTAS") ? "" : " (default)",
         ctaPolicy()[0] ? ctaPolicy() : "default (unset)");
  for (int c = 0; c < COLL_NUM; c++)
    if (b->tooFew & PERF_COLL(c))
      printf("# no %s rows: it needs %d ranks or more (a Send/Recv to oneself is refused by the "
             "library); this run has %d\n",
             collName(c), collMinRanks((collId)c), b->n);
  if (anyColl(b, COLL_VECTOR))
    printf("# V forms: %s; count = the mean block\n",
           a->uneven ? "--uneven: rank r's block of AllGatherV/ReduceScatterV is (r+1)/(1+..+n) "
                       "of the total, AlltoAllv's rank i sends rank j ((i+j) mod n)+1 parts"
                     : "equal counts, blocks in rank order (--uneven: uneven blocks)");
  int exact = 0;
  for (int c = 0; c < COLL_NUM; c++) exact |= (a->colls & PERF_COLL(c)) && perfWantsExact(b, c);
  if (exact)
    printf("# the %s rows are checked on small integers (exact in any order of combining, so "
           "NCCL's order too); the others on random bits\n",
           collOpName(a->op));
  if (a->op == COLL_PREMULSUM)
    printf("# premulsum: the sum times 0.3 in the type (integers: -3), an operator made and "
           "destroyed around each call;\n#   NCCL scales each rank's input, dmaccl the sum: "
           "NCCL's rows are not checked on 2 ranks or more\n");
  int base = 0;
  for (int i = 0; i < b->nc; i++) base |= b->cs[i].kind != KIND_DMACCL;
  if (anyColl(b, COLL_P2P))
    printf("# sendrecv (nccl-tests' sendrecv_perf): rank r sends count elements to rank (r+1)%%n "
           "and receives count from rank (r-1+n)%%n,\n#   dmacclSend then dmacclRecv in a group "
           "per rank%s%s; no in-place form. Each Send/Recv is a\n#   2-rank Broadcast on a "
           "channel per direction: a named algorithm reaches it as broadcast:ALGO\n",
           a->persistent ? " (persistent: dmacclSendInit + dmacclRecvInit, both started in a group)"
                         : "",
           base ? "; nccl: ncclSend/ncclRecv, the same ring, one group" : "");
  if (base && anyColl(b, COLL_VECTOR))
    printf("# NCCL has no V forms: their nccl rows are vLLM's emulation (AllGatherV: grouped "
           "Broadcast; ReduceScatterV: grouped Reduce; AlltoAllv: grouped Send/Recv)\n");
  for (int i = 0; i < b->nc; i++) {
    if (b->cs[i].kind == KIND_DMACCL) continue;
    for (int c = 0; c < COLL_NUM; c++) {
      const char *why = ncclBaseLacks(c, b->cs[i].kind == KIND_NCCL_CE);
      if ((a->colls & PERF_COLL(c)) && why)
        printf("# no %s row for %s: %s\n", b->cs[i].name, collName(c), why);
    }
  }
  for (int i = 0; i < b->nc; i++)
    if (b->cs[i].kind != KIND_DMACCL)
      printf("# baseline %-7s NCCL %s, %s, %s, NCCL_NVLS_ENABLE=0\n", b->cs[i].name,
             ncclBaseVersion(b->cs[i].nccl),
             b->cs[i].kind == KIND_NCCL ? "SM kernels (default config)"
                                        : "copy engines (CTA policy ZERO, ncclMemAlloc buffers in "
                                          "symmetric windows)",
             b->mp ? "one rank per process" : "one process driving all GPUs");
  if (b->args.persistent)
    printf("# dmaccl rows: persistent collectives (dmaccl*Init once per size, dmacclStart per "
           "operation)\n");
  if (base)
    printf("# speedup = best baseline's time / dmaccl's time, out of place (above 1: dmaccl "
           "faster)\n");
  if (b->energy)
    printf("# energy: NVML total-energy counters of all %d GPUs, loops of %.0f ms (counter tick "
           "%.1f ms: +-1 tick at each end); idle: %.1f W\n",
           b->n, b->energyMs, energyTickMs(b->energy), b->idleWatts);
  if (b->kernOk)
    printf("# kernels/op, kern_us/op: kernel launches and their GPU time per operation and rank "
           "(mean over ranks), ctas: the largest grid;\n#   out of place; CUPTI, %d eager "
           "operations per row in a pass before the sweep\n",
           KERNEL_TRACE_REPS);
  else if (b->args.kernels)
    printf("# no kernel columns: %s\n", b->kernWhy);
  printf("#\n# %-14s %12s %11s %6s %-7s %36s %36s\n", "", "", "", "", "", "out-of-place",
         "in-place");
  printf("# %-14s %12s %11s %6s %-7s %9s %8s %8s %8s %9s %8s %8s %8s %8s", "coll", "size(B)",
         "count", "type", "algo", "time(us)", "algbw", "busbw", "#wrong", "time(us)", "algbw",
         "busbw", "#wrong", "speedup");
  if (b->kernOk) printf(" %10s %10s %5s", "kernels/op", "kern_us/op", "ctas");
  if (b->energy) printf(" %9s %7s", "mJ/op", "W");
  printf("\n");
  fflush(stdout);
}

static void half(bench *b, const perfRow *r) {
  if (!r) {
    printf(" %9s %8s %8s %8s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  double us = r->us.v[b->args.average];
  printf(" %9.2f %8.2f %8.2f %8lld", us, perfAlgBw(r->bytes, us),
         perfBusBw((collId)r->coll, r->bytes, us, b->n), r->wrong);
}

/* A row that stalled (perfStalled): where its time went. */
static void stallNote(const perfRow *r) {
  if (!r || !perfStalled(r)) return;
  printf("#   ^ %s: slowest call %.1f ms, completion wait %.1f ms, ",
         r->inPlace ? "in place" : "out of place", r->slowest / 1e3, r->completion / 1e3);
  if (r->runqueue >= 0)
    printf("off a CPU while runnable %.1f ms (the most of any process)\n", r->runqueue / 1e3);
  else
    printf("run-queue wait unknown\n");
}

void perfPrintSize(bench *b, size_t firstRow) {
  for (int c = 0; c < b->nc; c++) {
    const perfRow *out = NULL, *in = NULL;
    for (size_t i = firstRow; i < b->nrows; i++)
      if (b->rows[i].contender == c) *(b->rows[i].inPlace ? &in : &out) = &b->rows[i];
    if (!out) continue;
    printf("  %-14s %12zu %11zu %6s %-7s", collName(out->coll), out->bytes, out->count,
           perfTypeName(b->args.type), b->cs[c].name);
    half(b, out);
    half(b, in);
    if (out->speedup > 0)
      printf(" %7.2fx", out->speedup);
    else
      printf(" %8s", "-");
    if (b->kernOk) printf(" %10.2f %10.2f %5d", out->kern.kernels, out->kern.us, out->kern.ctas);
    if (b->energy) printf(" %9.3f %7.1f", out->joules * 1e3, out->watts);
    printf("\n");
    stallNote(out);
    stallNote(in);
  }
  fflush(stdout);
}

void perfSummary(bench *b, int failures) {
  printf("#\n# Avg bus bandwidth (GB/s), out of place, over the sizes above:\n");
  double headline = -1;
  for (int coll = 0; coll < COLL_NUM; coll++)
    for (int c = 0; c < b->nc; c++) {
      double sum = 0;
      int n = 0;
      for (size_t i = 0; i < b->nrows; i++) {
        const perfRow *r = &b->rows[i];
        if (r->coll != coll || r->contender != c || r->inPlace) continue;
        sum += perfBusBw((collId)r->coll, r->bytes, r->us.v[b->args.average], b->n);
        n++;
      }
      if (!n) continue;
      printf("#   %-14s %-7s %9.2f\n", collName(coll), b->cs[c].name, sum / n);
      if (headline < 0 && b->cs[c].kind == KIND_DMACCL) headline = sum / n;
    }
  long long wrong = 0;
  for (size_t i = 0; i < b->nrows; i++) wrong += b->rows[i].wrong;
  printf("# Out of bounds values : %lld %s\n", wrong, failures ? "FAILED" : "OK");
  if (headline >= 0)
    printf("# Avg bus bandwidth    : %g (dmaccl, first algorithm, first collective)\n", headline);
  printf("# %s\n",
         failures ? "WRONG RESULTS in some rows (#wrong > 0)" : "all results checked correct");
  fflush(stdout);
}

void perfPrintBreakdown(bench *b) {
  printf("#\n# Breakdown of one operation (out of place; median of repetitions, mean over ranks), "
         "us:\n");
  printf("#   control: host issuing; schedule: command latency + idle gaps between copies; copy: "
         "a copy (or kernel) running; sync: waiting for peers. Method: docs/benchmark.md\n");
  printf("#   api: CUDA API calls in the call (all ranks; the driver calls the runtime makes "
         "not counted)\n");
  printf("# %-14s %12s %-7s %9s %9s %9s %9s %9s %7s %8s %5s\n", "coll", "size(B)", "algo",
         "control", "schedule", "copy", "sync", "total", "copies", "kernels", "api");
  for (size_t i = 0; i < b->nrows; i++) {
    const perfRow *r = &b->rows[i];
    if (!r->hasBreakdown) continue;
    printf("  %-14s %12zu %-7s %9.2f %9.2f %9.2f %9.2f %9.2f %7d %8d %5d%s\n", collName(r->coll),
           r->bytes, b->cs[r->contender].name, r->bd.control, r->bd.schedule, r->bd.copy,
           r->bd.sync, r->bd.total, r->bd.copies, r->bd.kernels, r->bd.api,
           r->bd.hostEnd ? "  (end: host clock)" : "");
  }
  fflush(stdout);
}

int perfWriteJson(bench *b, const char *path, int complete) {
  /* written beside the file and renamed over it: a reader (or a run killed
   * at a time limit) finds the previous complete write, never half a file */
  char tmp[sizeof(b->args.json) + 8];
  snprintf(tmp, sizeof(tmp), "%s.part", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    perror(tmp);
    return -1;
  }
  const perfArgs *a = &b->args;
  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  int v = 0;
  dmacclGetVersion(&v);
  fprintf(f,
          "{\n  \"schema\": \"dmaccl-perf/1\",\n  \"complete\": %s,\n  \"dmaccl_version\": %d,"
          "\n  \"date\": ",
          complete ? "true" : "false", v);
  jsonString(f, date);
  fprintf(f, ",\n  \"command\": [");
  for (int i = 0; i < b->argc; i++) {
    if (i) fputs(", ", f);
    jsonString(f, b->argv[i]);
  }
  fprintf(f,
          "],\n  \"config\": {\"executor\": \"%s\", \"ranks\": %d, \"processes\": %d, "
          "\"gpu\": ",
          b->gpu ? "cuda" : "host", b->n, b->mp ? b->n : 1);
  jsonString(f, b->gpuName);
  fprintf(f,
          ", \"type\": \"%s\", \"type_bytes\": %zu, \"iters\": %d, \"warmup\": %d, "
          "\"check\": %d, \"graph_launches\": %d, \"blocking\": %d, \"average\": %d, "
          "\"cycles\": %d, \"idle_watts\": %.3f, \"op\": \"%s\", \"root\": %d, "
          "\"uneven\": %s, \"persistent\": %s, \"reduce_ctas\": %d, \"kernels\": %s, "
          "\"cta_policy\": ",
          perfTypeName(a->type), b->tsize, a->iters, a->warmup, a->check, a->graphs, a->blocking,
          a->average, a->cycles, b->idleWatts, collOpName(a->op), a->root,
          a->uneven ? "true" : "false", a->persistent ? "true" : "false", reduceCtas(),
          b->kernOk ? "true" : "false");
  jsonString(f, ctaPolicy());
  fprintf(f, "},\n");
  fprintf(f, "  \"contenders\": [");
  for (int c = 0; c < b->nc; c++) {
    fprintf(f, "%s{\"name\": ", c ? ", " : "");
    jsonString(f, b->cs[c].name);
    fprintf(f, ", \"kind\": \"%s\", \"version\": ", perfKindName[b->cs[c].kind]);
    jsonString(f, b->cs[c].kind == KIND_DMACCL ? "" : ncclBaseVersion(b->cs[c].nccl));
    fputc('}', f);
  }
  fprintf(f, "],\n  \"rows\": [\n");
  for (size_t i = 0; i < b->nrows; i++) {
    const perfRow *r = &b->rows[i];
    double us = r->us.v[a->average];
    fprintf(f,
            "    {\"cycle\": %d, \"coll\": \"%s\", \"in_place\": %s, \"contender\": \"%s\", "
            "\"kind\": \"%s\", \"size\": %zu, \"count\": %zu, \"time_us\": %.4f, "
            "\"time_us_rank0\": %.4f, \"time_us_mean\": %.4f, \"time_us_min\": %.4f, "
            "\"time_us_max\": %.4f, \"slowest_call_us\": %.2f, \"start_skew_us\": %.2f, "
            "\"completion_wait_us\": %.2f, \"algbw\": %.4f, "
            "\"busbw\": %.4f, \"wrong\": %lld, \"speedup\": ",
            r->cycle, collName(r->coll), r->inPlace ? "true" : "false", b->cs[r->contender].name,
            perfKindName[b->cs[r->contender].kind], r->bytes, r->count, us, r->us.v[PERF_AVG_RANK0],
            r->us.v[PERF_AVG_MEAN], r->us.v[PERF_AVG_MIN], r->us.v[PERF_AVG_MAX], r->slowest,
            r->skew, r->completion, perfAlgBw(r->bytes, us),
            perfBusBw((collId)r->coll, r->bytes, us, b->n), r->wrong);
    if (r->speedup > 0)
      fprintf(f, "%.4f, \"best_baseline\": \"%s\"", r->speedup, b->cs[r->best].name);
    else
      fprintf(f, "null, \"best_baseline\": null");
    if (r->runqueue >= 0) fprintf(f, ", \"runqueue_us\": %.2f", r->runqueue);
    if (r->joules > 0)
      fprintf(f, ", \"energy_j_per_op\": %.6g, \"watts\": %.3f", r->joules, r->watts);
    else
      fprintf(f, ", \"energy_j_per_op\": null, \"watts\": null");
    if (r->hasBreakdown)
      fprintf(f,
              ", \"breakdown\": {\"control_us\": %.3f, \"schedule_us\": %.3f, \"copy_us\": %.3f, "
              "\"sync_us\": %.3f, \"total_us\": %.3f, \"copies\": %d, \"kernels\": %d, "
              "\"api_calls\": %d, \"end_from_host_clock\": %s}",
              r->bd.control, r->bd.schedule, r->bd.copy, r->bd.sync, r->bd.total, r->bd.copies,
              r->bd.kernels, r->bd.api, r->bd.hostEnd ? "true" : "false");
    else
      fprintf(f, ", \"breakdown\": null");
    if (r->hasKernels)
      fprintf(f, ", \"kernels_per_op\": %.4f, \"kernel_us_per_op\": %.4f, \"kernel_ctas\": %d",
              r->kern.kernels, r->kern.us, r->kern.ctas);
    else
      fprintf(f, ", \"kernels_per_op\": null, \"kernel_us_per_op\": null, \"kernel_ctas\": null");
    fprintf(f, "}%s\n", i + 1 < b->nrows ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  int bad = ferror(f);
  if (fclose(f) || bad || rename(tmp, path)) {
    fprintf(stderr, "dmaccl-perf: writing %s failed\n", path);
    remove(tmp);
    return -1;
  }
  return 0;
}
