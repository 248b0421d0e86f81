/* Internal to the planning layer: step constructors and per-collective
 * block layouts. */
#ifndef DMACCL_PLAN_INTERNAL_H_
#define DMACCL_PLAN_INTERNAL_H_

#include "plan.h"

void planScheduleReset(planSchedule *s, const planArgs *args, planAlgo algo);
int planAddCopy(planSchedule *s, int lane, planLoc src, planLoc dst, size_t bytes, int batch);
int planAddSync(planSchedule *s, planStepKind kind, int lane, int peer, planPhase phase);
/* Lane `lane` waits for every step of lane `from` added so far. */
int planAddJoin(planSchedule *s, int lane, int from);

/*
 * Block layout of a collective: where the block that travels from rank
 * `from` to rank `to` is read and where it is written. A direct algorithm
 * (direct.c) is the same for every collective given these two hooks.
 */
typedef struct {
  planLoc (*src)(const planArgs *a, int from, int to);
  planLoc (*dst)(const planArgs *a, int from, int to);
} planLayout;

extern const planLayout planAllGatherLayout;
extern const planLayout planAlltoAllLayout;

int planBuildDirect(const planArgs *args, const planLayout *layout, planAlgo algo, planSchedule *s);
int planBuildStaged(const planArgs *args, const planLayout *layout, planAlgo algo, planSchedule *s);

#endif
