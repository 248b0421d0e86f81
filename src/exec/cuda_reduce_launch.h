/*
 * Between cuda_reduce.cu (the C entry points, which check the arguments and
 * dispatch on the type) and cuda_reduce_<type>.cu (one type's kernels and
 * launch each, compiled in parallel: cuda_reduce_kernel.cuh). C++.
 */
#ifndef DMACCL_CUDA_REDUCE_LAUNCH_H_
#define DMACCL_CUDA_REDUCE_LAUNCH_H_

#include "cuda_reduce.h"

#include <cuda_runtime.h>
#include <stddef.h>

/* The types the kernel takes: X(dmaccl type id, name) */
#define DMACCL_REDUCE_TYPES(X)                                                                     \
  X(dmacclInt8, int8)                                                                              \
  X(dmacclUint8, uint8)                                                                            \
  X(dmacclInt32, int32)                                                                            \
  X(dmacclUint32, uint32)                                                                          \
  X(dmacclInt64, int64)                                                                            \
  X(dmacclUint64, uint64)                                                                          \
  X(dmacclFloat16, float16)                                                                        \
  X(dmacclBfloat16, bfloat16)                                                                      \
  X(dmacclFloat32, float32)                                                                        \
  X(dmacclFloat64, float64)                                                                        \
  X(dmacclFloat8e4m3, float8e4m3)                                                                  \
  X(dmacclFloat8e5m2, float8e5m2)

namespace execReduceK {
/* The kernel's inputs (its parameters carry the pointers by value). */
struct Srcs {
  const void *p[EXEC_REDUCE_MAX_SRCS];
};
/* One type's launch: op's kernel over srcs into dst (arguments checked by
 * the caller); an unknown op is cudaErrorInvalidValue. */
#define DMACCL_REDUCE_DECLARE(id, name)                                                            \
  cudaError_t launch_##name(int op, void *dst, const Srcs &s, int n, size_t count, int ctas,       \
                            const execReduceWait &w, cudaStream_t st, cudaEvent_t ev);
DMACCL_REDUCE_TYPES(DMACCL_REDUCE_DECLARE)
#undef DMACCL_REDUCE_DECLARE
} // namespace execReduceK

#endif
