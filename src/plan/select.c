/*
 * Algorithm names and the selection table: size ranges per collective mapped
 * to an algorithm. The built-in defaults are written in the same grammar that
 * DMACCL_ALGO and dmacclConfig_t.algorithm use, and go through the same parser.
 */
#include "plan_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Built-in defaults, as tuning text: the fastest algorithm per size measured
 * by dmaccl-tune on 4 H200s, one process per GPU (docs/latency-notes.md has
 * the run). Staged algorithms (no entry handshake, staged.c) up to 4 MB; the
 * batch of pushes on one lane from 16 MB (one copy engine per rank at
 * NVLink rate; push1 within 1% of it). AlltoAll's rank-ordered staged copy
 * becomes one 2D command across processes, which wins while blocks are small.
 */
const char planDefaultTune[] =
    /* AllGather(V) and AlltoAll below 2 MB: stagell's movement form (the
     * kernel moves lines; where a block's lines do not fit a share of the
     * line slot, 2 MB of data on 2 ranks and 256 KB on 4 with the default
     * 8 MB stage, it runs as stage). dmaccl-perf -A stage,stagell, 1 KB-1 MB,
     * docs/results/stagell-move/: in graphs on 2x H100 2.4-4.1 us up to
     * 256 KB and 8.4 at 1 MB against stage's 16-20 (NCCL 5.1-10.4;
     * AlltoAll 2.7-8.2 against NCCL 6.2-12.5); on 4x H100 6.3-8.7 up to
     * 256 KB and 15 at 1 MB against stage's 26-30 (NCCL 6.4-13.8); eager
     * 14-16 us on 2 ranks against stage's 27-32 (NCCL 16-19), 28-40 on 4
     * against stage's 33-45 (NCCL 16-26). */
    "* allgather:0-2M:stagell,2M-8M:stage,8M-inf:pushb;alltoall:0-2M:stagell,2M-8M:stage,"
    "8M-inf:pushb\n"
    /* Broadcast from 4 MB: chain (4x H200, docs/results/x4-h200/: 4 MB
     * 49 us against relay's 50 and stage's 54, 64 MB 274 against 366, 1 GB
     * 3.3 ms against relay's 4.9 and pushb's 8.1; NCCL 3.0 ms): one inbound
     * stream per copy engine. 8 ranks not measured: chain's pipeline is
     * groups + ranks - 1 rounds deep. 2 ranks keep pushb (below). Not yet
     * measured on GPUs: the other movement collectives as AllGather. */
    "* broadcast:0-4M:stage,4M-inf:chain;gather:0-8M:stage,8M-inf:pushb\n"
    "* scatter:0-8M:stage,8M-inf:pushb;allgatherv:0-2M:stagell,2M-8M:stage,8M-inf:pushb\n"
    /* AlltoAllv: stagell (staged.c, buildPeerArrays) at every size, eager
     * and in graphs (pairs, Send/Recv pairs on the channels, pairs.c, by
     * DMACCL_ALGO only); no size may choose either, as ranks send
     * different amounts. stagell waits for
     * every rank's call as pushb does (in a graph: at the capture), then,
     * where every block fits a line share (256 KB on 4 ranks) and
     * PLAN_V_LINES_MAX, moves them as lines in one kernel, else runs
     * pushb's schedule meeting every peer: pairs' small-block form without
     * a channel post per peer, and no channels. 4x H200 at 5e98e04
     * (docs/results/x4-h200/at-5e98e04/, NCCL in the same run): eager up to
     * 1 MB 13.9-16.9 us against pushb's 29-34 and pairs' 27-32 (NCCL
     * 12.0-17.4); in graphs 4.6-5.7 us up to 256 KB and 10.6-10.7 at 1 MB
     * against pairs' 7.8-8.2 and 12.9-13.2 (NCCL 6.5-8.4, 13.7-13.8);
     * 16-256 MB eager within
     * 2-5% of pushb's time (one run), where pairs took 1.3-1.9x (below); 2
     * ranks eager 10.1-11.4 us up to 1 MB against pairs' 13-15 (NCCL
     * 7-13), 4 MB 20.7-21.0 (pushb) against 27.1-27.8; 2 ranks in graphs
     * 2.7-4.1 us up to 256 KB and 8.3 at 1 MB against pairs' 3.5-4.2 and
     * 8.8 (NCCL 6.1-8.1, 12.4-12.6), 4 MB 19.5-20.4 against 20.6-20.8; 4
     * ranks in graphs 16-256 MB 1.00-1.04x pushb's time. Before: pairs in
     * graphs and on 2 ranks, pushb eager on more. 2x H200
     * (docs/results/pairs-2xh200/, at 8863b31): pairs in graphs 3.5-4.0 us
     * up to 256 KB and 8.6 at 1 MB against pushb's 20.7-23.1 (NCCL's
     * grouped Send/Recv 6.1-12.3); eager 14.4-15.5 against 22.2-24.7 (NCCL
     * 11.1-13.3); 16-256 MB 1.01-1.13x pushb's time. 4x H200
     * (docs/results/x4-h200/pairs-8863b31/, at-8ab9c4f/): pairs from 16 MB
     * 1.3-1.9x pushb's time, eager and in graphs, not explained. */
    "* alltoallv:stagell\n"
    /* Reductions on 3 ranks or more (4x H200, docs/results/x4-h200/,
     * dmaccl-perf -p 4): stagell (AllReduce below 1 MB, ReduceScatter
     * below 8 MB), eager and in graphs. AllReduce in a graph 3.8-5.6 us
     * up to 64 KB against stage's 18-20 and pull1's 41-67; at 1 MB 24 us against
     * pull1's 73 (the old crossover, never measured off 2 ranks); eager
     * 14-15 us up to 256 KB against stage's 25-28. AllReduce from above
     * 1 MB to 16 MB: twoshot, in a graph 2 MB 32 us and 4 MB 43 against
     * the fallback pull1's 82 and 98 (NCCL 26 and 40), 8 MB 66 (NCCL 60),
     * eager 2 MB 33 against stagell's 40, 8 MB 69 against 125 (NCCL 62);
     * at 1 MB itself 26.5 against stagell's 24.6 (the crossover, between
     * the two sizes measured, put at 1152 KB). What does not fit a slot
     * (twoshot over 8 MB) runs pull1, within 3% of every other algorithm
     * there. ReduceScatter up to 16 MB: at 8 MB in a graph 38.6 us
     * against pull1's 87.4 (NCCL 38.6); at 16 MB the one shot needs 12 MB
     * of a slot on 4 ranks and runs pull1 (129.6, NCCL 57.3). ReduceScatterV
     * keeps 8 MB (not measured above). Reduce: stage up to 4 MB, then pull1
     * (docs/results/select-4xh200/, 4x H200; it was stage below 1 MB): on
     * 4 ranks 1 MB 16.6 us eager and 18.8 in a graph against pull1's 31.0
     * and 41.3, 2 MB 24.1 and 26.5 against 48.2 and 63.8 (NCCL 12.9-18.8);
     * on 2 ranks 4 MB 22.2 and 19.2 against 46.2 and 47.0 (NCCL 22.6, 22.1).
     * Its root's slot holds every rank's buffer, so over 8 MB / n (2 MB on 4
     * ranks) stage does not fit the default slot and runs pull1
     * (coreChooseAlgo): the range's top serves 2 ranks. */
    "* allreduce:0-1152K:stagell,1152K-16M:twoshot,16M-inf:pull1\n"
    "* reducescatter:0-16M:stagell,16M-inf:pull1;reducescatterv:0-8M:stagell,8M-inf:pull1\n"
    "* reduce:0-4194305:stage,4194305-inf:pull1\n"
    /* 2 ranks, up to 4 MB: stagell, with line shares of half a staging
     * slot (a block of up to 2 MB fits). 2x H100, 2 MB (dmaccl-perf -p 2,
     * DMACCL_STAGE_BYTES=32M standing in for the larger slots): in graphs
     * AllGather 14.8 us against push1's 16.4 (NCCL 16.3), AlltoAll 14.7
     * against 17.0 (NCCL 15.8); eager AllGather 22.6 against stage's 24.2
     * (NCCL 16.8), AlltoAll 15.8 against 24.7 (NCCL 16.1). From 4 MB in
     * CUDA graphs push1 (20.6 us against stagell's 28.6 and stage's 26.8 at
     * 4 MB): one entry round costs less than the staged form's dependent
     * local copy; from 8 MB the plain pushb runs as plain copies in a graph.
     * Eager, 4 MB itself takes stagell and stage the rest to 8 MB: alone the
     * two are about level at 4 MB (2x H200: AllGather 28.7-28.8 us against
     * stage's 27.9-28.6, AlltoAll 28.5-28.9 against 28.2-28.7, NCCL
     * 19.5-26.2; 2x H100: 1.00-1.07x stage's time), but beside a decode GEMM
     * (dmaccl-c3 8b-decode-mlp, AlltoAll 4 MB) the GEMM runs 1.11-1.15x
     * slower next to stagell and 1.75-1.77x next to stage's copies, for the
     * same overlapped time (docs/results/c3-2xh200-4m/, docs/overlap.md). */
    "2 allgather:0-4194305:stagell;alltoall:0-4194305:stagell;allgatherv:0-4194305:stagell\n"
    "2 allgather@graph:4M-8M:push1;alltoall@graph:4M-8M:push1;allgatherv@graph:4M-8M:stage\n"
    /* Reductions on 2 ranks take stagell (the kernel stores into the peer's
     * line slot, flags in the data: no copy engine, no fence, no flag word
     * on the path), eager and in graphs; where the lines do not fit (an
     * AllReduce over 2 MB, a ReduceScatter over 4 MB with the default 8 MB
     * slots; over 512 KB and 1 MB while line slots were a quarter of that)
     * it runs as stagesm, and what does not fit a staging slot (a one-shot
     * AllReduce over 4 MB) falls back to pull1. 2x H100, in graphs, with
     * the larger line slots: AllReduce 1 MB 13.0 us against stagesm's 17.7
     * (NCCL 13.1), 2 MB 25.3 against 24.3 (NCCL 28.1); ReduceScatter 2 MB
     * 13.5 against 17.7 (NCCL 14.4), 4 MB 25.3 against 24.7 (NCCL 23.0).
     * Earlier (docs/results/stagesm-2xh100/, stagell-2xh200/): stagesm's
     * AllReduce in a graph after a kernel 10.6-13.4 us up to 512 KB
     * against stage's 20.5-22.2; stagell's 3.8-8.9 us against stagesm's
     * 10.0-12.3 (2x H200, NCCL 7.4-11.1); ReduceScatterV 3.0-6.7 us up to
     * 512 KB against stage's 11.4-13.9 (it runs as stagesm where a rank's
     * count is 0).
     * A one-shot AllReduce needs n times its buffer in a slot (4 MB on 2
     * ranks), twoshot and ReduceScatter's one shot the buffer once (8 MB);
     * what does not fit runs pull1 at launch. Above 4 MB AllReduce takes
     * twoshot: at 8 MB (2x H100, eager; graphs alike) 61.3 us against
     * pull1's 93.0 (NCCL 50.5); at 4 MB itself stagesm's form stays (37.4
     * against twoshot's 40.3, NCCL 34.2; 4 MB + 1 byte is the first size of
     * twoshot's range). ReduceScatter at 8 MB: stagesm's form 37.5 against
     * pull1's 59.0 (NCCL 32.9). At 16 MB nothing staged fits: pull1 (115-125
     * us, NCCL 80; 76-80, NCCL 54). Reduce (its non-roots reduce nothing:
     * stagesm's form, level with stage): the range above, for every rank
     * count. From 16 MB and below 64 MB AllReduce takes push1 (every copy
     * a push, the kernel polling the pushed pieces). 2x H200
     * (docs/results/push1-2xh200/, call X), in graphs 16/32 MB 98.7/137.0
     * us against pull1's 108.5/155.4 (NCCL 77.0/137.8), eager 96.1-97.5 /
     * 143.0-146.2 against 116.9-118.9 / 156.3-158.6 in three sweeps; at 64
     * MB level (graphs 256.8 against 260.8, eager 252.8-254.7 against
     * 252.5-255.1), so pull1 stays there; at 8 MB twoshot (graphs 51.5
     * against push1's 80.9, eager 53.0 against 69.4-71.2). Since push1
     * polls PUSH words, reset after its kernel by its stream (call N,
     * docs/results/push1-empty-2xh200/): AllReduce in graphs 89.0-91.0 /
     * 138.0-139.2 us at 16 / 32 MB (NCCL 76.9-80.2 / 138.5-144.6), eager
     * 93.1-94.4 / 142.3-144.1; ReduceScatter takes push1 at 16 MB below 32
     * MB: eager 58.4-59.1 us against pull1's 64.3-64.6 (NCCL 52.4-53.7), in
     * graphs 64.5-65.0 against 65.7-66.3; at 32 MB level (eager 99.1-100.3
     * against 97.2-99.7, graphs 100.7-101.8 against 102.8-103.3). */
    "2 allreduce:0-4194305:stagell,4194305-16M:twoshot,16M-64M:push1,64M-inf:pull1;"
    "reducescatter:0-16M:stagell,16M-32M:push1,32M-inf:pull1;"
    "reducescatterv:0-8M:stagell,8M-inf:pull1\n"
    /* Broadcast and Scatter on 2 ranks from 8 MB: split, both ranks' copy
     * engines on the one link direction in use (one peer, nothing to
     * relay). 2x H100, eager, docs/results/split-2xh100/: Broadcast 8 MB
     * 36.4-37.7 us against pushb's 38.3-40.0 in three runs of call 3 (NCCL
     * 37.6-40.2): 4.5-6% in each (1.8% in call 5), about the spread between
     * two rows of one algorithm there; 16-512 MB 1.04-1.08x pushb's speed and 1.07-1.14x
     * NCCL's (call 1); Scatter 8 MB 24.6 against 28.6 (NCCL 21.9), 16 MB
     * level, 32-512 MB 1.03-1.09x pushb's speed and 1.02-1.09x NCCL's
     * (calls 1 and 3); in graphs (16-256 MB, call 2) the same order; 8 MB in
     * a graph not measured. Gather keeps pushb: split was level from 128 MB
     * and 0.91x or 1.15x at 32 MB in two runs. Send/Recv channels have
     * their own Broadcast ranges on 2 ranks and take pushb for a built-in
     * or tuning-file form that pulls, split among them (planTableForChannel,
     * channelBroadcast below), and ranks that share a GPU run stage where it
     * fits a slot, else pushb (coreChooseAlgo: this table's split only).
     * Broadcast takes split from its lines' end (2 MB), not 8 MB, and a
     * 2-rank Gather of 8 MB itself (its root's slot holds it) stage, not
     * pushb: 2x H200, two runs each (docs/results/rooted-2xh200/):
     * Broadcast 4 MB split 25.6/26.9 us in a graph against stage's
     * 28.6/29.6 (NCCL 24.4/24.3), eager 25.5/25.5 against 30.1/30.4 (NCCL
     * 24.8/25.3); at 2 MB stage and split were level (20.7-21.9 in a
     * graph), lines 15.4; Gather 8 MB stage 18.5/18.6 in a graph against
     * pushb's 26.2/25.9 (NCCL 20.1/19.9), eager 19.2/18.3 against 25.6/24.4
     * (NCCL 21.7/21.0). */
    "2 broadcast:0-2M:stage,2M-inf:split;scatter:8M-inf:split;"
    "gather:0-8388609:stage,8388609-inf:pushb\n"
    /* Broadcast, Gather and Scatter (and so Send/Recv, a channel's 2-rank
     * Broadcast) as lines: stagell's movement form, with a token line where
     * a block is empty (staged.c). Where the lines do not fit a rank's share
     * of the line slot it runs as stage, which the ranges below replace (a
     * 4-rank Broadcast over 256 KB, a Gather or Scatter over 1 MB; a
     * channel has a 2-rank set's line slot, so on 3 ranks or more the
     * parent's Broadcast range serves its Send/Recv up to 2 MB; a 2-rank
     * communicator's channels have their own ranges, channelBroadcast).
     * docs/results/rooted-lines/:
     * 2x H100, in graphs, up to 256 KB: Broadcast 2.3-4.0 us against stage's
     * 15-16 (NCCL 4.8-8.5), Gather 2.7-3.0 against 9.6-10.6 (NCCL 5.5-6.4),
     * Scatter 2.5-3.1 against 15-16 (NCCL 5.4-6.5), Send/Recv 4.9-7.6
     * against 26-44 (NCCL 6.0-9.4); at 2 MB Broadcast 15.7 against stage's
     * 22.0 and pushb's 22.5, Gather 9.2 against 11.4; Scatter at 4 MB 15.6
     * against 21.5; eager up to 1 MB 7.4-15 us against stage's 14-32
     * (NCCL 9.6-23). Gather at 4 MB keeps stage (13.6 against 16.3 in a
     * graph). 4x H200: in graphs up to 64 KB Broadcast 5.1-6.1 against
     * stage's 22-24 (NCCL 4.6-7.4), Scatter up to 1 MB 5.9-9.3 against
     * 23-25 (NCCL 5.4-9.8), Gather 7.0-10.4 against 13.5-14.5 (NCCL
     * 5.4-9.0), Send/Recv up to 1 MB 4.8-14.3 against 37-43 (NCCL
     * 6.3-16.8); eager Broadcast up to 256 KB 19.7-22.9 against 22.0-22.6
     * and Scatter up to 1 MB 18.4-19.4 against 22.4-22.9, but Gather 19-21
     * against stage's 17.4-18.0 at 4 KB-1 MB (pushb 13.5-15.6), so eager
     * Gathers on 3 ranks or more kept stage. Those 4-rank numbers took a
     * kernel launch per peer; with one launch per operation since
     * (docs/results/line-takes-4xh200/, 4x H200) the line form takes 3.8-7.2
     * us in graphs and 7.7-10.7 eager up to 256 KB, and eager Gather takes
     * the line form too (4x H100, docs/results/gather-lines-4xh100/: 8.9-9.5
     * us up to 1 MB against stage's 14.4-20.0 and NCCL's 10.2-12.2).
     * Not changed, though measured (4x H200, docs/results/select-4xh200/):
     * a 4-rank Broadcast over 256 KB (its lines do not fit; stage) is
     * 1.1-1.3x faster as pullb up to 4 MB (1 MB 20.5 us eager and 24.2 in a
     * graph against 27.7 and 31.9), but a Send/Recv channel of a 4-rank
     * communicator takes its parent's Broadcast ranges
     * (planTableForChannel) and its lines fit up to 2 MB. */
    "* broadcast:0-2097153:stagell;scatter:0-1048577:stagell;gather:0-1048577:stagell\n"
    "2 broadcast:0-2097153:stagell;gather:0-2097153:stagell;scatter:0-4194305:stagell\n"
    /* 2 ranks, above 1 MB up to 8 MB, eager and in graphs: stagesm's
     * movement form (staged.c, addSmMove): the kernel stores each block
     * into the peer's staging slot once, signals, polls and takes the
     * peer's block out of its own slot, so no copy engine starts behind a
     * kernel, no dependent copy waits behind a stream wait, and the bytes
     * cross once where lines double them. 2x H200 at 5d90c6b
     * (docs/results/stagesm-move-2xh200/, call A, NCCL in the same run):
     * AllGather 2 / 4 / 8 MB eager 11.1 / 14.8 / 23.6 us against stagell's
     * 15.7 / 29.1 / 34.8, stage's 23.1 / 28.6 / 36.2 and pushb's 16.5 / 20.3
     * / 23.1 (NCCL 16.8 / 26.2 / 36.4); in graphs 10.7 / 14.4 / 22.6
     * against push1's 17.2 / 21.6 / 26.6 (NCCL 16.0 / 25.5 / 35.0);
     * AlltoAll 11.1 / 15.1 / 23.7 eager, 10.7 / 14.6 / 23.0 in graphs
     * (NCCL 15.0 / 19.8 / 30.1 and 14.7 / 19.3 / 29.1; the table's forms
     * before 21.5 / 29.0 / 24.2 and 14.7 / 20.2 / 28.1); AllGatherV as
     * AllGather; Broadcast 13.4 / 20.5 / 34.8 eager against the table's
     * 16.6 / 24.5 / 35.9 (NCCL 19.8 / 25.1 / 37.8), in graphs 13.3 / 20.4 /
     * 34.6 against 15.7 / 25.7 / 36.0; Scatter 4 and 8 MB 13.7 / 20.8
     * against 16.7 / 26.1 (NCCL 15.0 / 20.1), at 2 MB 15.8 against lines'
     * 9.8 (lines keep it); Gather at 4 MB 13.2 against 15.5 eager and 12.7
     * against 13.7 in graphs, level at 2 and 8 MB. At 1 MB the lines and
     * stagesm are level (9.5-9.8 eager, 8.2-9.2 in graphs): the lines keep
     * 1 MB. Over 8 MB the receive buffer does not fit the slot. */
    "2 allgather:1048577-8388609:stagesm;alltoall:1048577-8388609:stagesm;"
    "allgatherv:1048577-8388609:stagesm;broadcast:1048577-8388609:stagesm;"
    "gather:2097153-4194305:stagesm;scatter:4194304-8388609:stagesm\n";

static const char *const algoNames[] = {"push1", "pushn", "pushb",   "pull1",   "pulln",
                                        "pullb", "stage", "stage2d", "stagesm", "stagell",
                                        "relay", "chain", "twoshot", "split",   "pairs"};
_Static_assert(sizeof(algoNames) / sizeof(algoNames[0]) == PLAN_NUM_ALGOS, "a name per algorithm");

const char *planAlgoName(planAlgo a) {
  return (unsigned)a < PLAN_NUM_ALGOS ? algoNames[a] : "unknown";
}
const char *planCollName(planColl c) {
  return (unsigned)c < PLAN_NUM_COLLS ? planCollOf(c)->name : "unknown";
}

planAlgo planFallbackAlgo(planColl c) {
  unsigned m = planCollOf(c)->algos;
  if (planCollOf(c)->reduces) return PLAN_ALGO_PULL1; /* every reduction's direct form */
  for (int a = 0; a < PLAN_NUM_ALGOS; a++)
    if ((m & PLAN_ALGO_BIT(a)) && !planIsStaged((planAlgo)a)) return (planAlgo)a;
  return PLAN_ALGO_PUSH1;
}

int planPullsAcross(const planArgs *args, int n, planAlgo algo, const unsigned char *sep,
                    planSchedule *s, int *who, int *from) {
  for (int r = 0; r < n; r++) {
    int any = 0; /* nothing to build for a rank that may read every rank */
    for (int q = 0; q < n; q++) any |= sep[(size_t)r * (size_t)n + (size_t)q];
    if (!any) continue;
    if (planBuild(&args[r], algo, s)) return -1;
    for (int i = 0; i < s->nsteps; i++) {
      int q = s->steps[i].src.rank;
      if (s->steps[i].kind == PLAN_STEP_COPY && q >= 0 && q < n && q != r &&
          sep[(size_t)r * (size_t)n + (size_t)q]) {
        *who = r, *from = q;
        return 1;
      }
    }
  }
  return 0;
}

/* The algorithms planPushAcross tries, in order: stage (its copies write
 * the peers' staging slots; stagesm, stagell and stage2d need the same
 * slot, relay and chain read their peers), then the direct pushes. Copy
 * engines all: CTA policy zero allows each. */
static const planAlgo pushAlgos[] = {PLAN_ALGO_STAGE, PLAN_ALGO_PUSHN, PLAN_ALGO_PUSH1,
                                     PLAN_ALGO_PUSHB};

int planPushAcross(const planArgs *args, int n, planAlgo algo, const unsigned char *sep,
                   size_t stageBytes, planSchedule *s) {
  unsigned mask = planCollOf(args[0].coll)->algos;
  for (size_t k = 0; k < sizeof(pushAlgos) / sizeof(pushAlgos[0]); k++) {
    planAlgo alt = pushAlgos[k];
    if (!(mask & PLAN_ALGO_BIT(alt)) || alt == algo ||
        (planIsStaged(alt) && planStageNeed(&args[0], alt) > stageBytes))
      continue;
    int who = -1, from = -1; /* one that cannot be built does not qualify */
    if (planPullsAcross(args, n, alt, sep, s, &who, &from) == 0) return (int)alt;
  }
  return -1;
}

/* "push1 pushn ..." : the algorithms of mask, for messages. */
static const char *algoList(unsigned mask, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int a = 0; a < PLAN_NUM_ALGOS && used + 1 < len; a++)
    if (mask & PLAN_ALGO_BIT(a))
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "", algoNames[a]);
  return buf;
}

static const char *collList(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int c = 0; c < PLAN_NUM_COLLS && used + 1 < len; c++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "",
                             planCollOf((planColl)c)->name);
  return buf;
}

static int matchName(const char *name, size_t len, const char *cand) {
  return strlen(cand) == len && strncasecmp(name, cand, len) == 0;
}

int planAlgoParse(const char *name, size_t len, planAlgo *out) {
  for (int i = 0; i < PLAN_NUM_ALGOS; i++)
    if (matchName(name, len, algoNames[i])) return *out = (planAlgo)i, 0;
  if (matchName(name, len, "batch")) return *out = PLAN_ALGO_PUSHB, 0; /* alias */
  return -1;
}

int planCollParse(const char *name, size_t len, planColl *out) {
  for (int i = 0; i < PLAN_NUM_COLLS; i++)
    if (matchName(name, len, planCollOf((planColl)i)->name)) return *out = (planColl)i, 0;
  return -1;
}

/* Parses "123", "64K", "4M", "1G" or "inf" spanning exactly [p, p+len). */
int planParseSize(const char *p, size_t len, size_t *out) {
  if (matchName(p, len, "inf")) return *out = SIZE_MAX, 0;
  if (len == 0 || !isdigit((unsigned char)p[0])) return -1;
  size_t v = 0, i = 0;
  for (; i < len && isdigit((unsigned char)p[i]); i++) {
    size_t d = (size_t)(p[i] - '0');
    if (v > (SIZE_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  int shift = 0;
  if (i < len) {
    switch (toupper((unsigned char)p[i])) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: return -1;
    }
    if (++i != len) return -1;
  }
  if (shift && v > (SIZE_MAX >> shift)) return -1;
  *out = v << shift;
  return 0;
}

/* Removes [lo,hi) from a sorted list of ranges (into out, at most
 * PLAN_MAX_RANGES - 1 left for an insert); -1 when they would not fit. */
static int cutRange(const planRange *list, int count, size_t lo, size_t hi, planRange *out,
                    int *nout) {
  int n = 0;
  for (int i = 0; i < count; i++) {
    planRange r = list[i];
    if (r.hi <= lo || r.lo >= hi) {
      if (n == PLAN_MAX_RANGES) return -1;
      out[n++] = r;
      continue;
    }
    if (r.lo < lo) {
      if (n == PLAN_MAX_RANGES) return -1;
      out[n++] = (planRange){r.lo, lo, r.algo, r.origin, r.line, r.noSmMove};
    }
    if (r.hi > hi) {
      if (n == PLAN_MAX_RANGES) return -1;
      out[n++] = (planRange){hi, r.hi, r.algo, r.origin, r.line, r.noSmMove};
    }
  }
  *nout = n;
  return 0;
}

/* Inserts [lo,hi)->algo into a collective's list (its graph list when graph
 * is set): the new range overrides the parts of older ranges it overlaps. A
 * plain range also clears the graph ranges it overlaps, so that a later
 * layer (a tuning file, DMACCL_ALGO, the config) decides for captured calls
 * too unless it says @graph itself. */
static int insertRange(planTable *t, planColl c, int graph, planRange nr) {
  planRange out[PLAN_MAX_RANGES], gout[PLAN_MAX_RANGES];
  planRange *list = graph ? t->granges[c] : t->ranges[c];
  int *count = graph ? &t->gnranges[c] : &t->nranges[c];
  int n = 0, gn = 0;
  if (cutRange(list, *count, nr.lo, nr.hi, out, &n) || n == PLAN_MAX_RANGES) return -1;
  if (!graph && cutRange(t->granges[c], t->gnranges[c], nr.lo, nr.hi, gout, &gn)) return -1;
  nr.origin = t->origin;
  nr.line = t->line;
  out[n++] = nr;
  /* Keep ranges sorted by lo for printing and lookup. */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && out[j].lo < out[j - 1].lo; j--) {
      planRange tmp = out[j];
      out[j] = out[j - 1];
      out[j - 1] = tmp;
    }
  memcpy(list, out, (size_t)n * sizeof(out[0]));
  *count = n;
  if (!graph) {
    memcpy(t->granges[c], gout, (size_t)gn * sizeof(gout[0]));
    t->gnranges[c] = gn;
  }
  return 0;
}

/* pairs (plan.h), or AlltoAllv's stagell, against another algorithm by
 * size: ranks that send different amounts would choose differently (the
 * push forms among themselves run the same handshakes). Checks every size
 * where the choice of coll (captured calls: graph) can change. */
static int sizeSplit(const planTable *t, planColl c, int graph, planAlgo alone, char *err,
                     size_t errlen) {
  if (!(planCollOf(c)->algos & PLAN_ALGO_BIT(alone))) return 0;
  int pairs = 0, other = 0;
  size_t pairsAt = 0, otherAt = 0;
  for (int list = 0; list < 2; list++) {
    const planRange *r = list ? t->granges[c] : t->ranges[c];
    int nr = list ? t->gnranges[c] : t->nranges[c];
    for (int i = -1; i < nr; i++) {
      size_t at = i < 0 ? 0 : r[i].lo;
      for (int end = 0; end < 2 && !(i < 0 && end); end++) {
        if (end) {
          if (r[i].hi == SIZE_MAX) break;
          at = r[i].hi;
        }
        planAlgo a = planSelectIn(t, c, at, graph, NULL);
        if (a == alone && !pairs++) pairsAt = at;
        if (a != alone && !other++) otherAt = at;
      }
    }
  }
  if (!pairs || !other) return 0;
  char a[32], b[32];
  snprintf(err, errlen,
           "%s%s: %s must be its algorithm at every size or at none (%s at %s bytes, "
           "%s at %s bytes): ranks send different amounts, so a size cannot choose %s",
           planCollName(c), graph ? "@graph" : "", planAlgoName(alone), planAlgoName(alone),
           planSizeString(pairsAt, a, sizeof(a)),
           planAlgoName(planSelectIn(t, c, otherAt, graph, NULL)),
           planSizeString(otherAt, b, sizeof(b)), planAlgoName(alone));
  return -1;
}

#define PARSE_FAIL(...)                                                                            \
  do {                                                                                             \
    snprintf(err, errlen, __VA_ARGS__);                                                            \
    return -1;                                                                                     \
  } while (0)

static int parseRanged(planTable *t, planColl c, int graph, const char *p, size_t len, char *err,
                       size_t errlen) {
  planRange r = {0, SIZE_MAX, PLAN_ALGO_PUSH1, PLAN_FROM_BUILTIN, 0, 0};
  const char *colon = memchr(p, ':', len);
  const char *name = p;
  size_t nameLen = len;
  if (colon) {
    const char *dash = memchr(p, '-', (size_t)(colon - p));
    if (!dash)
      PARSE_FAIL("size range '%.*s' needs the form LO-HI (e.g. 0-64K or 1M-inf)", (int)(colon - p),
                 p);
    if (planParseSize(p, (size_t)(dash - p), &r.lo))
      PARSE_FAIL("bad size '%.*s' (digits with optional K, M or G)", (int)(dash - p), p);
    if (planParseSize(dash + 1, (size_t)(colon - dash - 1), &r.hi))
      PARSE_FAIL("bad size '%.*s' (digits with optional K, M or G, or inf)",
                 (int)(colon - dash - 1), dash + 1);
    if (r.lo >= r.hi)
      PARSE_FAIL("empty size range '%.*s': LO must be below HI", (int)(colon - p), p);
    name = colon + 1;
    nameLen = len - (size_t)(name - p);
  }
  if (planAlgoParse(name, nameLen, &r.algo)) {
    char known[160];
    PARSE_FAIL("unknown algorithm '%.*s' (known: %s batch)", (int)nameLen, name,
               algoList((1u << PLAN_NUM_ALGOS) - 1, known, sizeof(known)));
  }
  if (!(planCollOf(c)->algos & PLAN_ALGO_BIT(r.algo))) {
    char known[128];
    PARSE_FAIL("%s does not take algorithm '%.*s' (it takes: %s)", planCollName(c), (int)nameLen,
               name, algoList(planCollOf(c)->algos, known, sizeof(known)));
  }
  if (insertRange(t, c, graph, r))
    PARSE_FAIL("too many size ranges for %s%s (at most %d)", planCollName(c), graph ? "@graph" : "",
               PLAN_MAX_RANGES);
  return 0;
}

static const char *trimmed(const char *p, const char *end, size_t *len) {
  while (p < end && isspace((unsigned char)*p)) p++;
  while (end > p && isspace((unsigned char)end[-1])) end--;
  *len = (size_t)(end - p);
  return p;
}

int planTableParse(planTable *t, const char *str, char *err, size_t errlen) {
  planTable work = *t;
  if (errlen) err[0] = '\0';
  if (!str) return 0;
  const char *p = str;
  while (*p) {
    const char *end = strchr(p, ';');
    if (!end) end = p + strlen(p);
    size_t len;
    const char *entry = trimmed(p, end, &len);
    if (len) {
      const char *colon = memchr(entry, ':', len);
      if (!colon) PARSE_FAIL("entry '%.*s' needs the form COLLECTIVE:ALGO", (int)len, entry);
      planColl c;
      size_t clen;
      const char *cname = trimmed(entry, colon, &clen);
      /* coll@graph: the ranges of captured calls */
      const char *at = memchr(cname, '@', clen);
      int graph = at != NULL;
      if (at) {
        size_t qlen;
        const char *qual = trimmed(at + 1, cname + clen, &qlen);
        if (!matchName(qual, qlen, "graph"))
          PARSE_FAIL("unknown qualifier '@%.*s' in '%.*s' (known: @graph)", (int)qlen, qual,
                     (int)clen, cname);
        cname = trimmed(cname, at, &clen);
      }
      if (planCollParse(cname, clen, &c)) {
        char known[256];
        PARSE_FAIL("unknown collective '%.*s' (known: %s)", (int)clen, cname,
                   collList(known, sizeof(known)));
      }
      const char *q = colon + 1, *qend = entry + len;
      if (q == qend)
        PARSE_FAIL("collective '%.*s%s' has no algorithm", (int)clen, cname, graph ? "@graph" : "");
      while (q < qend) {
        const char *comma = memchr(q, ',', (size_t)(qend - q));
        if (!comma) comma = qend;
        size_t rlen;
        const char *rng = trimmed(q, comma, &rlen);
        if (!rlen) PARSE_FAIL("empty algorithm in '%.*s'", (int)len, entry);
        if (parseRanged(&work, c, graph, rng, rlen, err, errlen)) return -1;
        if (comma + 1 == qend) PARSE_FAIL("empty algorithm in '%.*s'", (int)len, entry);
        q = comma < qend ? comma + 1 : qend;
      }
    }
    p = *end ? end + 1 : end;
  }
  *t = work;
  return 0;
}

/* ... either of them. */
static int pairsSplit(const planTable *t, planColl c, int graph, char *err, size_t errlen) {
  return sizeSplit(t, c, graph, PLAN_ALGO_PAIRS, err, errlen) ||
         (planCollOf(c)->peerArrays && sizeSplit(t, c, graph, PLAN_ALGO_STAGELL, err, errlen));
}

int planTableCheckPairs(const planTable *t, char *err, size_t errlen) {
  for (int c = 0; c < PLAN_NUM_COLLS; c++)
    for (int graph = 0; graph < 2; graph++)
      if (pairsSplit(t, (planColl)c, graph, err, errlen)) return -1;
  return 0;
}

const char *planSizeString(size_t v, char *buf, size_t len) {
  if (v == SIZE_MAX)
    snprintf(buf, len, "inf");
  else if (v && v % ((size_t)1 << 30) == 0)
    snprintf(buf, len, "%zuG", v >> 30);
  else if (v && v % ((size_t)1 << 20) == 0)
    snprintf(buf, len, "%zuM", v >> 20);
  else if (v && v % 1024 == 0)
    snprintf(buf, len, "%zuK", v >> 10);
  else
    snprintf(buf, len, "%zu", v);
  return buf;
}

/* One pass over the lines: wild ('*') or exact rank-count lines. */
static int tunePass(planTable *t, int nranks, const char *text, int wild, char *err,
                    size_t errlen) {
  int line = 0;
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    if (!end) end = p + strlen(p);
    line++;
    const char *hash = memchr(p, '#', (size_t)(end - p));
    size_t len;
    const char *q = trimmed(p, hash ? hash : end, &len);
    p = *end ? end + 1 : end;
    if (!len) continue;
    const char *sp = q;
    while (sp < q + len && !isspace((unsigned char)*sp)) sp++;
    size_t tlen;
    const char *table = trimmed(sp, q + len, &tlen);
    int isWild = sp - q == 1 && q[0] == '*', ranks = 0;
    if (!isWild) {
      for (const char *d = q; d < sp; d++) {
        if (!isdigit((unsigned char)*d) || ranks > 100000) {
          snprintf(err, errlen, "line %d: '%.*s' is not a rank count or '*' (form: RANKS TABLE)",
                   line, (int)(sp - q), q);
          return -1;
        }
        ranks = ranks * 10 + (*d - '0');
      }
      if (ranks < 1) {
        snprintf(err, errlen, "line %d: rank count %d must be at least 1", line, ranks);
        return -1;
      }
    }
    if (!tlen) {
      snprintf(err, errlen, "line %d: rank count '%.*s' has no table", line, (int)(sp - q), q);
      return -1;
    }
    char buf[2048];
    if (tlen >= sizeof(buf)) {
      snprintf(err, errlen, "line %d: longer than %zu characters", line, sizeof(buf) - 1);
      return -1;
    }
    memcpy(buf, table, tlen);
    buf[tlen] = 0;
    /* Lines for other rank counts are parsed too, into a scratch table. */
    int applies = wild ? isWild : (!isWild && ranks == nranks);
    planTable scratch = *t, *dst = applies ? t : &scratch;
    dst->line = line;
    char why[256];
    if (planTableParse(dst, buf, why, sizeof(why))) {
      snprintf(err, errlen, "line %d: %s", line, why);
      return -1;
    }
  }
  return 0;
}

int planTuneParse(planTable *t, int nranks, const char *text, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  if (!text) return 0;
  planTable work = *t;
  if (tunePass(&work, nranks, text, 1, err, errlen) ||
      tunePass(&work, nranks, text, 0, err, errlen))
    return -1;
  work.line = 0;
  /* A file that leaves pairs at some sizes only (dmaccl-perf --tune-out
   * picks the fastest algorithm per size): that collective keeps the
   * table it had, the rest of the file applies, and err says so. */
  char why[256];
  for (int c = 0; c < PLAN_NUM_COLLS; c++)
    for (int graph = 0; graph < 2; graph++)
      if (pairsSplit(&work, (planColl)c, graph, why, sizeof(why))) {
        memcpy(work.ranges[c], t->ranges[c], sizeof(work.ranges[c]));
        memcpy(work.granges[c], t->granges[c], sizeof(work.granges[c]));
        work.nranges[c] = t->nranges[c];
        work.gnranges[c] = t->gnranges[c];
        if (errlen)
          snprintf(err, errlen, "%s; its %s ranges are not applied", why,
                   planCollName((planColl)c));
      }
  *t = work;
  return 0;
}

void planTableDefaults(planTable *t, int nranks) {
  char err[256];
  memset(t, 0, sizeof(*t));
  for (int c = 0; c < PLAN_NUM_COLLS; c++) {
    t->nranges[c] = 1;
    t->ranges[c][0] =
        (planRange){0, SIZE_MAX, planFallbackAlgo((planColl)c), PLAN_FROM_BUILTIN, 0, 0};
  }
  t->origin = PLAN_FROM_BUILTIN;
  /* The built-in text is tested to parse (test_select). */
  (void)planTuneParse(t, nranks, planDefaultTune, err, sizeof(err));
}

static int noSmMoves(planColl c, planRange *r, int n) {
  int changed = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].origin != PLAN_FROM_BUILTIN && r[i].origin != PLAN_FROM_TUNE_FILE) continue;
    if (!(PLAN_ALGOS_SM_MOVE & PLAN_ALGO_BIT(r[i].algo))) continue;
    r[i].algo = r[i].algo == PLAN_ALGO_TWOSHOT ? PLAN_ALGO_PULL1
                : planCollOf(c)->peerArrays    ? PLAN_ALGO_PUSHB /* never stage */
                                               : PLAN_ALGO_STAGE;
    r[i].noSmMove = 1;
    changed++;
  }
  return changed;
}

static const char *const ctaPolicyNames[] = {"default", "efficiency", "zero"};

const char *planCtaPolicyName(int policy) {
  return policy >= PLAN_CTA_DEFAULT && policy <= PLAN_CTA_ZERO ? ctaPolicyNames[policy] : "unknown";
}

int planCtaPolicyParse(const char *s) {
  for (int p = PLAN_CTA_DEFAULT; s && p <= PLAN_CTA_ZERO; p++)
    if (strcasecmp(s, ctaPolicyNames[p]) == 0 || (s[0] == '0' + p && !s[1])) return p;
  return -1;
}

int planTableNoSmMoves(planTable *t) {
  int changed = 0;
  for (int c = 0; c < PLAN_NUM_COLLS; c++)
    changed += noSmMoves((planColl)c, t->ranges[c], t->nranges[c]) +
               noSmMoves((planColl)c, t->granges[c], t->gnranges[c]);
  return changed;
}

/* A channel's receiver never pulls where the library chose (planTableForChannel). */
static int pulls(planAlgo a) {
  return a == PLAN_ALGO_PULL1 || a == PLAN_ALGO_PULLN || a == PLAN_ALGO_PULLB ||
         a == PLAN_ALGO_SPLIT || a == PLAN_ALGO_CHAIN || a == PLAN_ALGO_RELAY;
}

static int noPull(planRange *r, int n) {
  int changed = 0;
  for (int i = 0; i < n; i++)
    if ((r[i].origin == PLAN_FROM_BUILTIN || r[i].origin == PLAN_FROM_TUNE_FILE) &&
        pulls(r[i].algo))
      r[i].algo = PLAN_ALGO_PUSHB, changed++;
  return changed;
}

/* The Broadcast ranges of a 2-rank communicator's Send/Recv channels
 * (planTableForChannel). A channel's Broadcast is one direction of an
 * exchange whose other direction usually runs at the same time (a group's
 * Send and Recv, AlltoAllv's pairs), where a 2-rank Broadcast moves one
 * way: its lines cost more there. 2x H200 (docs/results/channel-rows-2xh200/),
 * dmaccl-perf's sendrecv (both directions at once) and AlltoAllv as pairs
 * (blocks of half the size), us, with the parent's ranges (stagell up to
 * 2 MB, stage to 8 MB, then pushb): at 2 MB a pair in a graph took 26.9
 * with lines, 25.4 stage, 23.6 pushb (NCCL 19.3), an AlltoAllv of 2 MB
 * blocks 28.0 with lines, 20.8 stage, 22.6 pushb (NCCL 19.3); eager a pair
 * 28.2 with lines, 36.0 stage, 23.2 pushb (NCCL 19.9), AlltoAllv 29.6, 45.0,
 * 26.9 (NCCL 20.1), and at 4 MB blocks AlltoAllv 45.2 stage, 27.6 pushb
 * (NCCL 29.7). At 1 MB lines still win (a pair 14.3 in a graph and 15.6
 * eager against pushb's 21.2 and 22.3; NCCL 14.7 and 15.3). With these
 * ranges, before and after alternated on one machine, time against NCCL's:
 * AlltoAllv 4 MB 1.45x -> 1.06x in graphs and 1.48x -> 1.13x eager, 8 MB
 * eager 1.11x -> 0.99x; a pair of 2 MB 1.38x -> 1.19x in graphs and 1.42x
 * -> 1.21x eager, of 4 MB eager 1.18x -> 1.01x. */
static const char channelBroadcast[] =
    "broadcast:0-1048577:stagell,1048577-inf:pushb;broadcast@graph:1048577-8M:stage";

int planTableForChannel(planTable *t, int parentRanks) {
  const planColl b = PLAN_COLL_BROADCAST;
  int own = 0;
  planTable *d = parentRanks == 2 ? malloc(sizeof(*d)) : NULL; /* 23 KB: not on the stack */
  if (d) {
    /* The built-in Broadcast rows by what they select, not by where they
     * came from: the two ends of a channel must agree, and a rank whose
     * tuning file restates them (or could not be read) selects as one
     * without (the ends' channel tables are compared when the channel is
     * made between processes: planSelectionDigest) */
    planTableDefaults(d, 2);
    if (t->ctaPolicy == PLAN_CTA_ZERO) planTableNoSmMoves(d);
    own = planSelectionDigest(t, b) == planSelectionDigest(d, b);
    free(d);
  }
  if (own) {
    planOrigin origin = t->origin;
    int line = t->line;
    char err[160];
    t->origin = PLAN_FROM_BUILTIN;
    t->line = 0;
    own = planTableParse(t, channelBroadcast, err, sizeof(err)) == 0;
    t->origin = origin;
    t->line = line;
    /* the copy-engine forms under CTA policy zero, as for every table */
    if (own && t->ctaPolicy == PLAN_CTA_ZERO) planTableNoSmMoves(t);
  }
  noPull(t->ranges[b], t->nranges[b]);
  noPull(t->granges[b], t->gnranges[b]);
  return own;
}

static int cmpSize(const void *x, const void *y) {
  size_t a = *(const size_t *)x, c = *(const size_t *)y;
  return a < c ? -1 : a > c;
}

static uint64_t fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; i++) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h;
}

uint64_t planSelectionDigest(const planTable *t, planColl coll) {
  uint64_t h = 1469598103934665603ull;
  size_t pts[4 * PLAN_MAX_RANGES + 2];
  for (int g = 0; g < 2; g++) {
    int k = 0;
    pts[k++] = 0;
    pts[k++] = SIZE_MAX;
    for (int l = 0; l < (g ? 2 : 1); l++) {
      const planRange *r = l ? t->granges[coll] : t->ranges[coll];
      int n = l ? t->gnranges[coll] : t->nranges[coll];
      for (int i = 0; i < n; i++) pts[k++] = r[i].lo, pts[k++] = r[i].hi;
    }
    qsort(pts, (size_t)k, sizeof(pts[0]), cmpSize);
    int prev = -1;
    for (int i = 0; i < k; i++) {
      int a = (int)planSelectIn(t, coll, pts[i], g, NULL);
      if (i && pts[i] == pts[i - 1]) continue;
      if (a != prev) h = fnv(fnv(h, pts[i]), (uint64_t)a), prev = a; /* where it changes */
    }
    h = fnv(h, UINT64_MAX); /* eager, then captured */
  }
  return h;
}

planAlgo planSelect(const planTable *t, planColl coll, size_t size, const planRange **why) {
  for (int i = 0; i < t->nranges[coll]; i++) {
    const planRange *r = &t->ranges[coll][i];
    if (size >= r->lo && size < r->hi) {
      if (why) *why = r;
      return r->algo;
    }
  }
  /* Only SIZE_MAX itself can miss a [lo, inf) range. */
  if (why) *why = NULL;
  return t->nranges[coll] ? t->ranges[coll][t->nranges[coll] - 1].algo : planFallbackAlgo(coll);
}

planAlgo planSelectIn(const planTable *t, planColl coll, size_t size, int graph,
                      const planRange **why) {
  for (int i = 0; graph && i < t->gnranges[coll]; i++) {
    const planRange *r = &t->granges[coll][i];
    if (size >= r->lo && (size < r->hi || r->hi == SIZE_MAX)) {
      if (why) *why = r;
      return r->algo;
    }
  }
  return planSelect(t, coll, size, why);
}

planAlgo planArrivalAlgo(planColl coll, planAlgo algo, planOrigin origin) {
  int late = algo == PLAN_ALGO_PUSH1 || algo == PLAN_ALGO_PUSHN || algo == PLAN_ALGO_PUSHB ||
             algo == PLAN_ALGO_PULLB;
  if (!late || origin == PLAN_FROM_ENV || origin == PLAN_FROM_CONFIG ||
      !(planCollOf(coll)->algos & PLAN_ALGO_BIT(PLAN_ALGO_PULL1)))
    return algo;
  return PLAN_ALGO_PULL1;
}
