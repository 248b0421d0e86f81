#include "energy.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The few NVML entry points used, declared from NVML's documented ABI. */
typedef struct nvmlDeviceOpaque *nvmlDev;
typedef int (*nvmlInitFn)(void);
typedef int (*nvmlShutdownFn)(void);
typedef int (*nvmlByBusIdFn)(const char *, nvmlDev *);
typedef int (*nvmlEnergyFn)(nvmlDev, unsigned long long *);
typedef const char *(*nvmlErrorStringFn)(int);

#define MAXDEV 64

struct perfEnergy {
  void *lib;
  nvmlShutdownFn shutdown;
  nvmlEnergyFn energy;
  nvmlDev dev[MAXDEV];
  int n;
  double tickMs;
};

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + 1e-6 * (double)ts.tv_nsec;
}

static unsigned long long rawFirst(perfEnergy *e) {
  unsigned long long mj = 0;
  e->energy(e->dev[0], &mj);
  return mj;
}

/* Waits for the first GPU's counter to move twice; the time between is its
 * update period. */
static double measureTick(perfEnergy *e) {
  unsigned long long a = rawFirst(e);
  double t0 = nowMs(), t1 = 0;
  while (rawFirst(e) == a)
    if (nowMs() - t0 > 2000) return -1;
  t1 = nowMs();
  a = rawFirst(e);
  while (rawFirst(e) == a)
    if (nowMs() - t1 > 2000) return -1;
  return nowMs() - t1;
}

perfEnergy *energyOpen(const int *devs, int n, char *err, size_t errlen) {
  if (n > MAXDEV) n = MAXDEV;
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(err, errlen, "NVML (libnvidia-ml.so.1) cannot be loaded: %s", dlerror());
    return NULL;
  }
  nvmlInitFn init = (nvmlInitFn)dlsym(lib, "nvmlInit_v2");
  nvmlByBusIdFn byBus = (nvmlByBusIdFn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  nvmlErrorStringFn errStr = (nvmlErrorStringFn)dlsym(lib, "nvmlErrorString");
  perfEnergy *e = calloc(1, sizeof(*e));
  if (!e) {
    dlclose(lib);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  e->lib = lib;
  e->shutdown = (nvmlShutdownFn)dlsym(lib, "nvmlShutdown");
  e->energy = (nvmlEnergyFn)dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption");
  if (!init || !byBus || !errStr || !e->shutdown || !e->energy) {
    snprintf(err, errlen, "NVML lacks nvmlDeviceGetTotalEnergyConsumption or its helpers");
    dlclose(lib);
    free(e);
    return NULL;
  }
  int rc = init();
  if (rc != 0) {
    snprintf(err, errlen, "nvmlInit: %s", errStr(rc));
    dlclose(lib);
    free(e);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    char bus[32];
    unsigned long long mj;
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), devs[i]) != cudaSuccess) {
      snprintf(err, errlen, "no PCI bus id for CUDA device %d", devs[i]);
      goto fail;
    }
    if ((rc = byBus(bus, &e->dev[i])) != 0) {
      snprintf(err, errlen, "NVML has no device %s: %s", bus, errStr(rc));
      goto fail;
    }
    if ((rc = e->energy(e->dev[i], &mj)) != 0) {
      snprintf(err, errlen, "GPU %s has no energy counter: %s", bus, errStr(rc));
      goto fail;
    }
  }
  e->n = n;
  e->tickMs = measureTick(e);
  return e;
fail:
  e->shutdown();
  dlclose(lib);
  free(e);
  return NULL;
}

double energyRead(perfEnergy *e) {
  double j = 0;
  for (int i = 0; i < e->n; i++) {
    unsigned long long mj = 0;
    if (e->energy(e->dev[i], &mj) != 0) return -1;
    j += (double)mj * 1e-3;
  }
  return j;
}

double energyTickMs(const perfEnergy *e) {
  return e->tickMs;
}

void energyClose(perfEnergy *e) {
  if (!e) return;
  e->shutdown();
  dlclose(e->lib);
  free(e);
}
