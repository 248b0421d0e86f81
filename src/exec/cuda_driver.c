#include "cuda_driver.h"

#include <pthread.h>
#include <stddef.h>

static cudaDriver drv;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  struct {
    const char *name;
    void **fn;
  } want[] = {
      {"cuStreamWaitValue32", (void **)&drv.waitValue32},
      {"cuStreamWriteValue32", (void **)&drv.writeValue32},
      {"cuStreamBatchMemOp", (void **)&drv.batchMemOp},
      {"cuGetErrorString", (void **)&drv.getErrorString},
      {"cuPointerGetAttributes", (void **)&drv.pointerGetAttributes},
      {"cuMemCreate", (void **)&drv.memCreate},
      {"cuMemRelease", (void **)&drv.memRelease},
      {"cuMemExportToShareableHandle", (void **)&drv.memExport},
      {"cuMemImportFromShareableHandle", (void **)&drv.memImport},
      {"cuMemAddressReserve", (void **)&drv.addressReserve},
      {"cuMemAddressFree", (void **)&drv.addressFree},
      {"cuMemMap", (void **)&drv.memMap},
      {"cuMemUnmap", (void **)&drv.memUnmap},
      {"cuMemSetAccess", (void **)&drv.memSetAccess},
      {"cuMemGetAllocationGranularity", (void **)&drv.granularity},
      {"cuDeviceGet", (void **)&drv.deviceGet},
      {"cuCtxCreate", (void **)&drv.ctxCreate}, /* the 12.0 form: (ctx, flags, device) */
      {"cuCtxDestroy", (void **)&drv.ctxDestroy},
      {"cuCtxPushCurrent", (void **)&drv.ctxPush},
      {"cuCtxPopCurrent", (void **)&drv.ctxPop},
      {"cuMemcpyHtoD", (void **)&drv.memcpyHtoD},
      {"cuMemsetD32Async", (void **)&drv.memsetD32Async},
      {"cuLaunchKernel", (void **)&drv.launchKernel},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    enum cudaDriverEntryPointQueryResult q;
    cudaError_t e =
        cudaGetDriverEntryPointByVersion(want[i].name, want[i].fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*want[i].fn) {
      drv.status = e != cudaSuccess ? e : cudaErrorSymbolNotFound;
      drv.missing = want[i].name;
      return;
    }
  }
}

const cudaDriver *cudaDriverGet(void) {
  pthread_once(&once, load);
  return &drv;
}
