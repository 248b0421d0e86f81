/* Schedule container: a growable array of steps, and the step constructors
 * that the algorithm builders use. */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

void planScheduleFree(planSchedule *s) {
  free(s->steps);
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
  s->nsteps = 0;
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
