// threadwatch.c: what every thread of some processes was doing when one of
// them stopped for a long time. Written for the 100-ms-class stall of
// docs/latency-notes.md: a call or a GPU's work ending about 100 ms late
// with no thread waiting for a CPU (dmaccl-perf's run-queue field).
//
// Every PERIOD_US it reads, for each thread of each process whose name
// starts with PATTERN (the process list is read again every 100 ms), the
// thread's state, kernel wait channel and system call (/proc/PID/task/TID/
// stat, wchan, syscall) and its run-queue delay (schedstat). A run of
// samples in which a thread was not running (state other than R) with the
// same wait channel and system call is printed when it ends, if it lasted
// MIN_MS or more (a thread that ran between two samples, by its schedstat
// time on a CPU, ends its run even if it waits again on the same channel);
// so is a run-queue delay of MIN_MS or more between two samples; at exit
// (SIGTERM, SIGINT) and when a thread ends, its wait so far. Lines:
//   <end, CLOCK_MONOTONIC s> <ms> pid <pid> tid <tid> <comm> state <S>
//       wchan <name> syscall <nr and first argument> [runqueue]
// At start it prints both clocks (CLOCK_REALTIME and CLOCK_MONOTONIC), to
// place nvidia-smi's wall-clock samples on the same line.
//
// build: cc -O2 -o threadwatch threadwatch.c
// run:   ./threadwatch dmaccl-perf 20 2000 & <the benchmark>; kill %1
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXT 512

typedef struct {
  int pid, tid, live;
  char comm[32];
  char state;
  char wchan[64], sys[64];
  double since;           /* start of the current not-running run */
  unsigned long long rq;  /* schedstat run-queue delay, ns */
  unsigned long long run; /* schedstat time on a CPU, ns: a change ends a run */
} thr;

static thr t[MAXT];
static int nt;
static volatile sig_atomic_t stop;

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int readSmall(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = 0;
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
  return (int)n;
}

static thr *find(int pid, int tid) {
  for (int i = 0; i < nt; i++)
    if (t[i].pid == pid && t[i].tid == tid) return &t[i];
  if (nt == MAXT) return NULL;
  thr *x = &t[nt++];
  memset(x, 0, sizeof(*x));
  x->pid = pid, x->tid = tid, x->state = 'R';
  return x;
}

static void report(const thr *x, double end, const char *what) {
  printf("%.6f %.1f pid %d tid %d %s state %c wchan %s syscall %s%s\n", end, 1e3 * (end - x->since),
         x->pid, x->tid, x->comm, x->state, x->wchan, x->sys, what);
}

static void sampleThread(int pid, int tid, double now, double minSec) {
  char path[96], buf[1024], wchan[64] = "?", sys[64] = "?", comm[32] = "?";
  snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
  if (readSmall(path, buf, sizeof(buf)) <= 0) return;
  char *open = strchr(buf, '('), *close = strrchr(buf, ')');
  if (!open || !close || close[1] != ' ') return;
  size_t cl =
      (size_t)(close - open - 1) < sizeof(comm) - 1 ? (size_t)(close - open - 1) : sizeof(comm) - 1;
  memcpy(comm, open + 1, cl);
  comm[cl] = 0;
  char state = close[2];
  if (state == 'Z' || state == 'X') return; /* exited, not waiting: dropped as ended */
  snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", pid, tid);
  if (readSmall(path, wchan, sizeof(wchan)) <= 0) strcpy(wchan, "-");
  snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
  if (readSmall(path, buf, sizeof(buf)) > 0) {
    /* "nr arg1 arg2 ...": keep the number and the first argument */
    char *sp = strchr(buf, ' ');
    if (sp) sp = strchr(sp + 1, ' ');
    if (sp) *sp = 0;
    snprintf(sys, sizeof(sys), "%.63s", buf);
  }
  unsigned long long run = 0, rq = 0;
  snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
  if (readSmall(path, buf, sizeof(buf)) > 0) sscanf(buf, "%llu %llu", &run, &rq);
  thr *x = find(pid, tid);
  if (!x) return;
  x->live = 1;
  snprintf(x->comm, sizeof(x->comm), "%s", comm);
  if (x->rq && rq - x->rq >= (unsigned long long)(minSec * 1e9)) {
    printf("%.6f %.1f pid %d tid %d %s runqueue\n", now, (double)(rq - x->rq) / 1e6, pid, tid,
           comm);
  }
  x->rq = rq;
  /* A thread that ran between two samples (however briefly: a wake and a
   * new wait on the same futex) ended its wait even if it looks the same. */
  int ran = x->run && run != x->run;
  x->run = run;
  int same = !ran && state == x->state && !strcmp(wchan, x->wchan) && !strcmp(sys, x->sys);
  if (same) return;
  if (x->state != 'R' && now - x->since >= minSec) report(x, now, "");
  x->state = state;
  snprintf(x->wchan, sizeof(x->wchan), "%s", wchan);
  snprintf(x->sys, sizeof(x->sys), "%s", sys);
  x->since = now;
}

static void onSignal(int sig) {
  (void)sig;
  stop = 1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s PATTERN MIN_MS PERIOD_US\n", argv[0]);
    return 2;
  }
  const char *pattern = argv[1];
  double minSec = atof(argv[2]) / 1e3;
  long period = atol(argv[3]);
  if (!pattern[0] || !(minSec > 0 && minSec < 1e3) || period < 100 || period > 10000000) {
    fprintf(stderr,
            "%s: PATTERN non-empty, MIN_MS over 0 and below 1000, PERIOD_US from 100 to 10000000\n",
            argv[0]);
    return 2;
  }
  signal(SIGTERM, onSignal);
  signal(SIGINT, onSignal);
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  printf("# clocks: realtime %.6f monotonic %.6f\n", (double)rt.tv_sec + 1e-9 * rt.tv_nsec, mono());
  int pids[64], np = 0;
  double lastScan = 0;
  while (!stop) {
    double now = mono();
    if (now - lastScan > 0.1) {
      np = 0;
      DIR *d = opendir("/proc");
      struct dirent *e;
      while (d && (e = readdir(d)) && np < 64) {
        int pid = atoi(e->d_name);
        if (pid <= 0) continue;
        char path[64], comm[64];
        snprintf(path, sizeof(path), "/proc/%d/comm", pid);
        if (readSmall(path, comm, sizeof(comm)) > 0 && !strncmp(comm, pattern, strlen(pattern)))
          pids[np++] = pid;
      }
      if (d) closedir(d);
      lastScan = now;
    }
    for (int i = 0; i < nt; i++) t[i].live = 0;
    for (int p = 0; p < np; p++) {
      char path[64];
      snprintf(path, sizeof(path), "/proc/%d/task", pids[p]);
      DIR *d = opendir(path);
      struct dirent *e;
      while (d && (e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid > 0) sampleThread(pids[p], tid, now, minSec);
      }
      if (d) closedir(d);
    }
    /* threads that ended: their wait, if long, then forget them (a new
     * process may reuse the slot) */
    for (int i = 0; i < nt;)
      if (!t[i].live) {
        if (t[i].state != 'R' && now - t[i].since >= minSec) report(&t[i], now, " (thread ended)");
        t[i] = t[--nt];
      } else {
        i++;
      }
    struct timespec ts = {period / 1000000, period % 1000000 * 1000};
    nanosleep(&ts, NULL);
  }
  /* stopped: the waits still going on (a hung run's are the point) */
  double now = mono();
  for (int i = 0; i < nt; i++)
    if (t[i].state != 'R' && now - t[i].since >= minSec) report(&t[i], now, " (ongoing)");
  return 0;
}
