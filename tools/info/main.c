/*
 * dmaccl-info: the library's version, parameters, and the algorithm
 * selection table a communicator of N ranks would use (built-in defaults,
 * DMACCL_TUNE_FILE, DMACCL_ALGO), with where each range comes from, the
 * Broadcast rows of its Send/Recv channels, and the device memory a rank
 * and a channel end hold; given a collective and a size, which algorithm
 * that call would run and why.
 *
 *   dmaccl-info [-n NRANKS] [-o allgather|alltoall] [-s SIZE]
 */
#include "core/core.h"
#include "exec/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *originName(const planRange *r, char *buf, size_t len) {
  switch (r->origin) {
  case PLAN_FROM_TUNE_FILE: snprintf(buf, len, "DMACCL_TUNE_FILE line %d", r->line); break;
  case PLAN_FROM_ENV: snprintf(buf, len, "DMACCL_ALGO"); break;
  case PLAN_FROM_CONFIG: snprintf(buf, len, "config"); break;
  default: snprintf(buf, len, r->line ? "built-in table line %d" : "built-in table", r->line);
  }
  if (r->noSmMove) {
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, ", as CTA policy zero");
  }
  return buf;
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: dmaccl-info [-n NRANKS] [-o COLLECTIVE] [-s SIZE]\n"
      "  -n N   ranks of the communicator (default: the number of GPUs, else 4)\n"
      "  -o C   with -s: the collective to explain (allgather, allreduce, ...; default allgather)\n"
      "  -s S   a collective size as nccl-tests counts it (AllGather: output bytes; AllReduce: "
      "bytes;\n"
      "         AlltoAll: bytes each rank sends), e.g. 64K: which algorithm runs, and why\n");
}

int main(int argc, char **argv) {
  int nranks = 0, haveSize = 0;
  planColl coll = PLAN_COLL_ALLGATHER;
  size_t size = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return usage(stdout), 0;
    if (!v) {
      fprintf(stderr, "dmaccl-info: %s needs a value\n", a);
      return usage(stderr), 2;
    }
    i++;
    if (strcmp(a, "-n") == 0) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*end || n < 1 || n > CORE_MAX_RANKS) {
        fprintf(stderr, "dmaccl-info: -n %s is not a rank count in 1..%d\n", v, CORE_MAX_RANKS);
        return 2;
      }
      nranks = (int)n;
    } else if (strcmp(a, "-o") == 0) {
      if (planCollParse(v, strlen(v), &coll)) {
        fprintf(stderr,
                "dmaccl-info: -o %s is not a collective (allgather, alltoall, allreduce, ...)\n",
                v);
        return 2;
      }
    } else if (strcmp(a, "-s") == 0) {
      if (planParseSize(v, strlen(v), &size) || size == SIZE_MAX) {
        fprintf(stderr, "dmaccl-info: -s %s is not a size (e.g. 4096, 64K, 1M)\n", v);
        return 2;
      }
      haveSize = 1;
    } else {
      fprintf(stderr, "dmaccl-info: unknown option %s\n", a);
      return usage(stderr), 2;
    }
  }
  if (!nranks) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) ndev = 4;
    nranks = ndev;
  }
  int version = 0;
  dmacclGetVersion(&version);
  printf("dmaccl %d.%d.%d\n\n# parameters (environment, else default)\n", version / 10000,
         version / 100 % 100, version % 100);
  coreParamPrintAll(stdout);

  coreClique c;
  memset(&c, 0, sizeof(c));
  c.nranks = nranks;
  c.stageBytes = coreStageBytesParam();
  coreSetLineBytes(&c);
  char note[512];
  if (coreBuildTable(NULL, &c.table, "dmaccl-info", nranks, note, sizeof(note)) != dmacclSuccess) {
    printf("\n# error: %s\n", dmacclCommGetLastError(NULL));
    return 1;
  }
  printf("\n# selection table for %d ranks (sizes as nccl-tests counts them)\n", nranks);
  if (note[0]) printf("# %s\n", note);
  printf("# %-16s %10s %10s  %-8s %s\n", "collective", "from", "below", "algo", "set by");
  for (int k = 0; k < PLAN_NUM_COLLS; k++)
    for (int g = 0; g < 2; g++) /* then its @graph ranges, which win where they cover */
      for (int i = 0; i < (g ? c.table.gnranges[k] : c.table.nranges[k]); i++) {
        const planRange *r = g ? &c.table.granges[k][i] : &c.table.ranges[k][i];
        char lo[32], hi[32], why[64], name[40];
        snprintf(name, sizeof(name), "%s%s", planCollName((planColl)k), g ? "@graph" : "");
        printf("  %-16s %10s %10s  %-8s %s\n", name, planSizeString(r->lo, lo, sizeof(lo)),
               planSizeString(r->hi, hi, sizeof(hi)), planAlgoName(r->algo),
               originName(r, why, sizeof(why)));
      }
  char sb[32];
  char lbuf[32];
  printf(
      "# staged algorithms (stage, stage2d, stagesm, stagell, twoshot) serve collectives up to\n"
      "# DMACCL_STAGE_BYTES = %s, eager and under CUDA graph capture alike; larger\n"
      "# ones run the collective's direct one; stagesm, stagell and twoshot run as stage where\n"
      "# ranks share a GPU; stagell's lines take a slot of %s (a share for each peer: the slot\n"
      "# divided by the ranks but one, 8 data bytes in each 16; a Send/Recv channel has a 2-rank\n"
      "# set's), and what does not fit it runs as stagesm (movement collectives: stage);\n"
      "# split from the built-in table runs as stage where ranks share a GPU (pushb where\n"
      "# the collective does not fit a staging slot)\n",
      planSizeString(c.stageBytes, sb, sizeof(sb)),
      planSizeString(coreLineBytes(&c), lbuf, sizeof(lbuf)));

  /* A Send/Recv channel of this communicator: a 2-rank set with the
   * channel's table (p2p.c), and so AlltoAllv's pairs */
  coreClique ch;
  memset(&ch, 0, sizeof(ch));
  ch.nranks = 2;
  ch.stageBytes = c.stageBytes;
  coreSetLineBytes(&ch);
  ch.table = c.table;
  int own = planTableForChannel(&ch.table, nranks);
  printf("\n# Send/Recv channels (each direction between two ranks; AlltoAllv's pairs): a\n"
         "# Send/Recv is a 2-rank Broadcast, rows %s\n",
         own ? "of their own (the parent's Broadcast rows are the built-in table's)"
             : "of this communicator's Broadcast (a form that pulls, from the built-in table or a\n"
               "# tuning file, as pushb)");
  for (int g = 0; g < 2; g++)
    for (int i = 0;
         i < (g ? ch.table.gnranges[PLAN_COLL_BROADCAST] : ch.table.nranges[PLAN_COLL_BROADCAST]);
         i++) {
      const planRange *r =
          g ? &ch.table.granges[PLAN_COLL_BROADCAST][i] : &ch.table.ranges[PLAN_COLL_BROADCAST][i];
      char lo[32], hi[32], why[64];
      printf("  %-16s %10s %10s  %-8s %s\n", g ? "sendrecv@graph" : "sendrecv",
             planSizeString(r->lo, lo, sizeof(lo)), planSizeString(r->hi, hi, sizeof(hi)),
             planAlgoName(r->algo), originName(r, why, sizeof(why)));
    }

  /* What the CUDA executor allocates per rank (cuda.c createState): the
   * staging area (eager and graph slots with their line slots) and, on 2
   * ranks or more, the scratch buffer at its end (4 KiB-aligned: the total
   * below leaves out up to 4 KiB of padding); a channel end has the area of a
   * 2-rank set and no scratch. Flags and the driver's own come on top: 2-4
   * MB measured on H200 (docs/results/line-shares-2xh200/). */
  size_t area = nranks > 1 ? execSlotsBytes(&c, 1) : 0,
         scratch = nranks > 1 ? coreScratchBytesParam() : 0;
  size_t chEnd = execSlotsBytes(&ch, 1); /* a channel's set has no scratch */
  char ab[32], scb[32], cb[32], pb[32];
  printf("\n# device memory per rank (CUDA executor), not counting flags and the driver's\n"
         "  communicator: %s (staging and line slots %s, scratch %s)\n"
         "  each Send/Recv channel end: %s (made at a direction's first Send/Recv; between\n"
         "  processes both directions between two ranks at once)\n"
         "  AlltoAllv as pairs: %d channel ends, %s\n",
         planSizeString(area + scratch, pb, sizeof(pb)), planSizeString(area, ab, sizeof(ab)),
         planSizeString(scratch, scb, sizeof(scb)), planSizeString(chEnd, cb, sizeof(cb)),
         2 * (nranks - 1), planSizeString(2 * (size_t)(nranks - 1) * chEnd, lbuf, sizeof(lbuf)));
  if (haveSize) {
    const planRange *why = NULL;
    planAlgo table = planSelect(&c.table, coll, size, &why);
    /* Arguments of that size: one-byte elements, equal counts in the V forms. */
    static size_t vec[CORE_MAX_RANKS][PLAN_VEC_ARRAYS * CORE_MAX_RANKS];
    const size_t *rows[CORE_MAX_RANKS];
    planArgs a = {.coll = coll, .nranks = nranks, .count = 1, .elemSize = 1, .vec = rows};
    size_t unit = 0, count = 0;
    for (int pass = 0; pass < 2; pass++) {
      for (int r = 0; r < nranks; r++) {
        rows[r] = vec[r];
        for (int i = 0; i < nranks; i++)
          for (int k = 0; k < PLAN_VEC_ARRAYS; k++)
            vec[r][(size_t)k * nranks + i] = k % 2 ? (size_t)i * a.count : a.count;
      }
      if (pass == 0) unit = planCollOf(coll)->size(&a), count = unit ? size / unit : 0;
      a.count = count;
    }
    planAlgo eager = coreChooseAlgo(&c, &a, 0, NULL);
    planAlgo graph = coreChooseAlgo(&c, &a, 1, NULL);
    char lo[32], hi[32], org[64];
    printf("\n%s of %zu bytes on %d ranks (count %zu bytes): %s\n", planCollName(coll), size,
           nranks, count, planAlgoName(eager));
    if (why)
      printf("  table: %s, from range %s-%s (%s)\n", planAlgoName(table),
             planSizeString(why->lo, lo, sizeof(lo)), planSizeString(why->hi, hi, sizeof(hi)),
             originName(why, org, sizeof(org)));
    if (eager != table)
      printf("  %s needs %zu bytes of staging slot (> DMACCL_STAGE_BYTES): %s instead\n",
             planAlgoName(table), planStageNeed(&a, table), planAlgoName(eager));
    const planRange *gwhy = NULL;
    planAlgo gtable = planSelectIn(&c.table, coll, size, 1, &gwhy);
    if (gwhy && gwhy != why)
      printf("  under CUDA graph capture the table says %s, from range %s@graph %s-%s (%s)\n",
             planAlgoName(gtable), planCollName(coll), planSizeString(gwhy->lo, lo, sizeof(lo)),
             planSizeString(gwhy->hi, hi, sizeof(hi)), originName(gwhy, org, sizeof(org)));
    if (graph != eager || graph != gtable)
      printf("  under CUDA graph capture: %s%s\n", planAlgoName(graph),
             graph != gtable ? " (the graph staging slot, DMACCL_STAGE_BYTES, is too small)" : "");
  }
  return 0;
}
