/* Where one collective's time goes (the DMA-Latte split), from CUPTI
 * activity records: host API times and device copy/kernel/event times, all on
 * CUPTI's one clock. The method is in docs/benchmark.md. Built as a stub
 * that says so when CUPTI was not found. */
#ifndef DMACCL_PERF_BREAKDOWN_H_
#define DMACCL_PERF_BREAKDOWN_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  double control;      /* host: the time in the call that issues the operation */
  double schedule;     /* device: submission-to-start latency + idle gaps between commands */
  double copy;         /* device: time some copy (or kernel) of the operation was running */
  double sync;         /* device: waiting for peers before the first copy and after the last */
  double total;        /* from the call until the operation completed on the device */
  int copies, kernels; /* commands seen on this rank's GPU */
  int api;             /* CUDA API calls made during the call (top level: not the driver
                          calls the runtime makes), any thread of the process */
  int hostEnd;         /* 1: completion taken from the host clock (no event timestamp) */
} perfBreakdown;

/* Copies of this many bytes on the caller's stream are the probes before
 * and after the operation; no collective of the sweep moves exactly that. */
#define BD_PROBE_BYTES 24

/* 0 when tracing is available, and records are on from here to bdFini; -1
 * with a reason otherwise. Call after the timed sweep (CUPTI adds host
 * overhead to every copy call while enabled). */
int bdInit(char *err, size_t errlen);
/* CUPTI's clock, in ns (host time, the time base of every record). */
uint64_t bdNow(void);
/* Drops what was recorded so far. */
int bdStart(void);
/* Collects what the operation left. */
int bdStop(void);
/* Splits one operation for device `dev`. tProbe: host time right after the
 * first probe copy was issued on the idle stream (its device start gives the
 * submission latency); t0/t1: host time before and after the call; tDone:
 * host time after the stream was synchronized. The second probe, issued
 * after the call, starts when the operation has completed on the device. */
int bdSplit(int dev, uint64_t tProbe, uint64_t t0, uint64_t t1, uint64_t tDone, perfBreakdown *out);
/* The kernels recorded on device `dev` between bdStart and bdStop: how many,
 * their summed GPU time (us) and the largest grid (CTAs); also the copies. */
void bdKernels(int dev, int *kernels, double *us, int *maxCtas, int *copies);
/* CUDA runtime and driver API calls that started between t0 and t1 on any
 * thread of this process, between bdStart and bdStop, less the driver calls
 * made inside a runtime call (the host commands of one collective call). */
int bdApiCalls(uint64_t t0, uint64_t t1);
/* Writes the CUDA API calls that started between t0 and t1 (the call; any
 * thread, by name, then each thread's sum), and the copies and kernels
 * recorded on device `dev` between bdStart and bdStop, one per line in start
 * order, times relative to t0 (CUPTI's clock), each line starting with
 * `label` (--timeline). */
void bdTimeline(FILE *f, int dev, uint64_t t0, uint64_t t1, const char *label);
void bdFini(void);

#endif
