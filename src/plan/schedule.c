/* Schedule container: a growable array of steps, the step constructors
 * that the algorithm builders use, and the pieces and groups they share. */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

void planScheduleFree(planSchedule *s) {
  free(s->steps);
  free(s->srcs);
  memset(s, 0, sizeof(*s));
}

void planScheduleReset(planSchedule *s, const planArgs *args, planAlgo algo) {
  s->coll = args->coll;
  s->algo = algo;
  s->rank = args->rank;
  s->nranks = args->nranks;
  s->nlanes = 1;
  s->nrounds = 0;
  s->round = 0;
  s->stageIndex = args->stageIndex;
  s->stageSlots = args->stageSlots;
  s->lineBytes = args->lineBytes;
  s->dtype = args->dtype;
  s->redop = args->redop;
  s->elemSize = args->elemSize;
  s->listOrder = args->listOrder;
  s->nsteps = 0;
  s->nsrcs = 0;
}

static planStep *push(planSchedule *s) {
  if (s->nsteps == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    planStep *steps = realloc(s->steps, (size_t)cap * sizeof(*steps));
    if (!steps) return NULL;
    s->steps = steps;
    s->cap = cap;
  }
  planStep *st = &s->steps[s->nsteps++];
  memset(st, 0, sizeof(*st));
  st->peer = -1;
  st->from = -1;
  st->round = s->round;
  if (s->round + 1 > s->nrounds) s->nrounds = s->round + 1;
  return st;
}

static void useLane(planSchedule *s, int lane) {
  if (lane + 1 > s->nlanes) s->nlanes = lane + 1;
}

void planHandshakesOnly(planSchedule *s) {
  int n = 0;
  s->nrounds = 0;
  for (int j = 0; j < s->nsteps; j++) {
    const planStep *st = &s->steps[j];
    /* a rank's words to itself (push1's kernel to its lane C) order
     * nothing without the kernel and lane C */
    if ((st->kind != PLAN_STEP_SIGNAL && st->kind != PLAN_STEP_WAIT) || st->peer == s->rank)
      continue;
    s->steps[n] = *st;
    s->steps[n].lane = 0;
    s->steps[n].inKernel = 0; /* no kernel runs them now */
    if (st->round + 1 > s->nrounds) s->nrounds = st->round + 1;
    n++;
  }
  s->nsteps = n;
  s->nlanes = 1;
  s->nsrcs = 0; /* no REDUCE is left */
}

int planRunEnd(const planSchedule *s, int i, int most) {
  const planStep *st = &s->steps[i];
  int j = i + 1; /* steps[i] itself: the caller's */
  while (j < s->nsteps && j - i < most && s->steps[j].kind == st->kind &&
         s->steps[j].lane == st->lane && !s->steps[j].inKernel &&
         (st->kind != PLAN_STEP_COPY || s->steps[j].batch))
    j++;
  return j;
}

int planPushResetAt(const planSchedule *s, int red) {
  int last = red, L = s->steps[red].lane, from = -1;
  while (last + 1 < s->nsteps && s->steps[last + 1].lane == L &&
         s->steps[last + 1].kind == PLAN_STEP_SIGNAL && s->steps[last + 1].inKernel)
    last++;
  for (int i = 0; i < s->nsteps && from < 0; i++)
    if (s->steps[i].kind == PLAN_STEP_SIGNAL && s->steps[i].phase >= PLAN_PHASE_PUSH)
      from = s->steps[i].lane;
  for (int j = last + 1; from >= 0 && j < s->nsteps; j++)
    if (s->steps[j].lane == L && s->steps[j].kind == PLAN_STEP_JOIN && s->steps[j].from == from &&
        !s->steps[j].launched && !s->steps[j].inKernel)
      return j;
  return last;
}

int planUsesLines(const planSchedule *s) {
  for (int i = 0; i < s->nsteps; i++)
    if (s->steps[i].kind == PLAN_STEP_COPY && s->steps[i].dst.buf == PLAN_BUF_LINES) return 1;
  for (int k = 0; k < s->nsrcs; k++)
    if (s->srcs[k].buf == PLAN_BUF_LINES) return 1;
  return 0;
}

int planAddCopy(planSchedule *s, int lane, planLoc src, planLoc dst, size_t bytes, int batch) {
  planStep *st = push(s);
  if (!st) return -1;
  st->kind = PLAN_STEP_COPY;
  st->lane = lane;
  st->src = src;
  st->dst = dst;
  st->bytes = bytes;
  st->batch = batch;
  useLane(s, lane);
  return 0;
}

int planAddSync(planSchedule *s, planStepKind kind, int lane, int peer, planPhase phase) {
  planStep *st = push(s);
  if (!st) return -1;
  st->kind = kind;
  st->lane = lane;
  st->peer = peer;
  st->phase = phase;
  useLane(s, lane);
  return 0;
}

int planAddJoin(planSchedule *s, int lane, int from) {
  planStep *st = push(s);
  if (!st) return -1;
  st->kind = PLAN_STEP_JOIN;
  st->lane = lane;
  st->from = from;
  useLane(s, lane);
  useLane(s, from);
  return 0;
}

int planAddLaunchJoin(planSchedule *s, int lane, int from) {
  if (planAddJoin(s, lane, from)) return -1;
  s->steps[s->nsteps - 1].launched = 1;
  return 0;
}

int planAddReduce(planSchedule *s, int lane, const planLoc *srcs, int n, planLoc dst,
                  size_t bytes) {
  if (s->nsrcs + n > s->srcCap) {
    int cap = s->srcCap ? 2 * s->srcCap : 16;
    while (cap < s->nsrcs + n) cap *= 2;
    planLoc *m = realloc(s->srcs, (size_t)cap * sizeof(*m));
    if (!m) return -1;
    s->srcs = m;
    s->srcCap = cap;
  }
  planStep *st = push(s);
  if (!st) return -1;
  st->kind = PLAN_STEP_REDUCE;
  st->lane = lane;
  st->dst = dst;
  st->bytes = bytes;
  st->src0 = s->nsrcs;
  st->nsrc = n;
  memcpy(&s->srcs[s->nsrcs], srcs, (size_t)n * sizeof(*srcs));
  s->nsrcs += n;
  useLane(s, lane);
  return 0;
}

/* Inserts a NOTIFY of block p at index `at`, on `lane`, in `round`. */
static int insertNotify(planSchedule *s, int at, int lane, int round, int p) {
  int keep = s->round;
  s->round = round;
  planStep *st = push(s); /* grows the array (and nrounds); its place comes next */
  s->round = keep;
  if (!st) return -1;
  memmove(&s->steps[at + 1], &s->steps[at], (size_t)(s->nsteps - 1 - at) * sizeof(*st));
  st = &s->steps[at];
  memset(st, 0, sizeof(*st));
  st->kind = PLAN_STEP_NOTIFY;
  st->lane = lane;
  st->round = round;
  st->peer = p;
  st->from = -1;
  return 0;
}

int planAddArrivals(planSchedule *s, const planArgs *a) {
  const planCollInfo *ci = planCollOf(a->coll);
  int n = a->nranks, r = a->rank;
  /* Every place is found first, as an index into the list as built; the
   * insertions then go from the latest place back, so that none moves a
   * place still to be used. */
  int *at = malloc((size_t)n * sizeof(int)), *lane = malloc((size_t)n * sizeof(int));
  int *round = malloc((size_t)n * sizeof(int)), rc = 0;
  if (!at || !lane || !round) rc = -1;
  for (int p = 0; p < n && !rc; p++) {
    planBlock b = ci->block(a, p, r);
    int last = -1, wait = -1;
    for (int i = 0; i < s->nsteps; i++) {
      const planStep *st = &s->steps[i];
      /* a COPY or (stagell's movement form) a REDUCE writes the block */
      if ((st->kind == PLAN_STEP_COPY || st->kind == PLAN_STEP_REDUCE) && st->dst.rank == r &&
          st->dst.buf == PLAN_BUF_RECV && b.bytes && st->dst.off < b.dstOff + b.bytes &&
          b.dstOff < st->dst.off + st->bytes) {
        if (last >= 0 && s->steps[last].lane != st->lane) rc = -1; /* one lane only */
        last = i;
      }
      if (st->kind == PLAN_STEP_WAIT && st->peer == p) wait = i;
    }
    if (last < 0 && b.bytes && p != r) last = wait; /* the sender writes it, then signals */
    if (last < 0 && b.bytes && p != r) rc = -1;
    /* after the rest of a batch the copy is issued with (one command) */
    while (last >= 0 && s->steps[last].kind == PLAN_STEP_COPY && s->steps[last].batch &&
           last + 1 < s->nsteps && s->steps[last + 1].kind == PLAN_STEP_COPY &&
           s->steps[last + 1].batch == s->steps[last].batch &&
           s->steps[last + 1].lane == s->steps[last].lane)
      last++;
    /* a kernel's copy: after the kernel, whose run ends in a REDUCE */
    while (last >= 0 && s->steps[last].inKernel && s->steps[last].kind != PLAN_STEP_REDUCE &&
           last + 1 < s->nsteps && s->steps[last + 1].lane == s->steps[last].lane)
      last++;
    at[p] = last < 0 ? 0 : last + 1;
    lane[p] = last < 0 ? 0 : s->steps[last].lane;
    round[p] = last < 0 ? 0 : s->steps[last].round;
  }
  /* Latest place first; of equal places the highest block first, so that
   * the blocks end up in order there. */
  for (int k = 0; k < n && !rc; k++) {
    int p = -1;
    for (int q = n - 1; q >= 0; q--)
      if (at[q] >= 0 && (p < 0 || at[q] > at[p])) p = q;
    rc = insertNotify(s, at[p], lane[p], round[p], p);
    at[p] = -1;
  }
  free(at), free(lane), free(round);
  return rc;
}

size_t planPieceMin(const planArgs *a) {
  size_t m = a->pieceMin ? a->pieceMin : PLAN_PIECE_MIN;
  return m < PLAN_PIECE_ALIGN ? PLAN_PIECE_ALIGN : m;
}

int planGroups(const planArgs *a, size_t total) {
  if (!total) return 0;
  size_t want = (total + 3) / 4, lo = 2 * planPieceMin(a), hi = 16 * planPieceMin(a);
  want = want < lo ? lo : want > hi ? hi : want;
  size_t g = (total + want - 1) / want;
  return g > PLAN_PIECE_GROUPS ? PLAN_PIECE_GROUPS : (int)g;
}

size_t planCutAt(size_t total, int parts, int i) {
  if (i >= parts) return total;
  return total / PLAN_PIECE_ALIGN * (size_t)i / (size_t)parts * PLAN_PIECE_ALIGN;
}

size_t planGroupAt(const planArgs *a, size_t total, int g) {
  return planCutAt(total, planGroups(a, total), g);
}
