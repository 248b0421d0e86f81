/* Driver API entry points of the CUDA executor, from
 * cudaGetDriverEntryPointByVersion (nothing links libcuda). */
#ifndef DMACCL_CUDA_DRIVER_H_
#define DMACCL_CUDA_DRIVER_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  CUresult (*waitValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  CUresult (*writeValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  CUresult (*batchMemOp)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*pointerGetAttributes)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
  CUresult (*memCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                        unsigned long long);
  CUresult (*memRelease)(CUmemGenericAllocationHandle);
  CUresult (*memExport)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                        unsigned long long);
  CUresult (*memImport)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
  CUresult (*addressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*addressFree)(CUdeviceptr, size_t);
  CUresult (*memMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*memUnmap)(CUdeviceptr, size_t);
  CUresult (*memSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
  CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
  /* A private context (abort, when the primary context's queue is blocked). */
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*ctxCreate)(CUcontext *, unsigned int, CUdevice);
  CUresult (*ctxDestroy)(CUcontext);
  CUresult (*ctxPush)(CUcontext);
  CUresult (*ctxPop)(CUcontext *);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
  /* The reduction kernel's launch (a CUkernel from cudaGetKernel as f). */
  CUresult (*launchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                           unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
  cudaError_t status;
  const char *missing; /* first entry point not found; NULL when all were */
} cudaDriver;

/* Loads the table once; returns it (check ->missing). */
const cudaDriver *cudaDriverGet(void);

#ifdef __cplusplus
}
#endif

#endif
