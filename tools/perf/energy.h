/* GPU energy from NVML's total-energy counter, NVML loaded at run time
 * (libnvidia-ml.so.1): nothing is linked, and a machine without NVML gets a
 * sentence instead of numbers. */
#ifndef DMACCL_PERF_ENERGY_H_
#define DMACCL_PERF_ENERGY_H_

#include <stddef.h>

typedef struct perfEnergy perfEnergy;

/* Opens the counters of CUDA devices devs[0..n-1] (matched by PCI bus id).
 * NULL with a reason in err when NVML or a counter is missing. */
perfEnergy *energyOpen(const int *devs, int n, char *err, size_t errlen);
/* Sum of the opened GPUs' counters in joules since the driver loaded; -1 on
 * error. */
double energyRead(perfEnergy *e);
/* How often the counter moves, in milliseconds (measured once, at open). */
double energyTickMs(const perfEnergy *e);
void energyClose(perfEnergy *e);

#endif
