/* One process per rank for the tools (dmaccl-perf -p, dmaccl-c3): a process
 * barrier in shared memory, and forking the ranks and reaping them. The
 * caller must not touch CUDA before ranksRun (a forked child cannot use the
 * parent's CUDA context). */
#ifndef DMACCL_TOOLS_RANKS_H_
#define DMACCL_TOOLS_RANKS_H_

#include <pthread.h>

/* Makes *b a barrier of n processes (b must lie in MAP_SHARED memory). */
void ranksBarrierInit(pthread_barrier_t *b, int n);

/* Forks n processes; process r runs fn(r, arg) and exits with its result.
 * Returns the worst exit code. When a rank fails, its peers (which would
 * wait for it at a barrier) are terminated; `tool` names the program in the
 * message. */
int ranksRun(int n, int (*fn)(int rank, void *arg), void *arg, const char *tool);

#endif
