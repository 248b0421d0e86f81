#include "ranks.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void ranksBarrierInit(pthread_barrier_t *b, int n) {
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(b, &ba, (unsigned)n);
  pthread_barrierattr_destroy(&ba);
}

int ranksRun(int n, int (*fn)(int rank, void *arg), void *arg, const char *tool) {
  pid_t *pids = calloc((size_t)n, sizeof(pid_t));
  int *reaped = calloc((size_t)n, sizeof(int));
  if (!pids || !reaped) {
    free(pids);
    free(reaped);
    fprintf(stderr, "%s: out of memory\n", tool);
    return 1;
  }
  fflush(stdout);
  fflush(stderr);
  int started = 0, worst = 0;
  for (; started < n; started++) {
    pids[started] = fork();
    if (pids[started] < 0) {
      perror(tool);
      worst = 1;
      break;
    }
    if (pids[started] == 0) {
      int rc = fn(started, arg);
      fflush(stdout);
      _exit(rc);
    }
  }
  if (worst) /* peers of a rank that never started would wait forever */
    for (int q = 0; q < started; q++) kill(pids[q], SIGTERM);
  int left = started, stopped = 0; /* stopped: the peers were sent SIGTERM */
  while (left > 0) {
    int st = 0;
    pid_t p = wait(&st);
    if (p < 0) break;
    int r = 0;
    while (r < started && pids[r] != p) r++;
    if (r == started) continue;
    reaped[r] = 1;
    left--;
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    if (WIFSIGNALED(st) && stopped && WTERMSIG(st) == SIGTERM)
      fprintf(stderr, "%s: rank %d stopped (a peer had failed)\n", tool, r);
    else if (WIFSIGNALED(st)) /* a crash loses the rank's buffered output: say what ended it */
      fprintf(stderr, "%s: rank %d was killed by signal %d (%s)%s\n", tool, r, WTERMSIG(st),
              strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
    else if (rc)
      fprintf(stderr, "%s: rank %d exited with %d\n", tool, r, rc);
    if (rc && !stopped) {
      /* a rank that failed leaves its peers waiting at a barrier */
      for (int q = 0; q < started; q++)
        if (!reaped[q]) kill(pids[q], SIGTERM);
      stopped = 1;
    }
    if (rc > worst) worst = rc;
  }
  free(pids);
  free(reaped);
  return worst;
}
