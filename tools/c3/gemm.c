/* The compute side of dmaccl-c3: cuBLAS bf16 GEMMs (fp32 accumulation) on
 * one stream, captured as one CUDA graph per scenario. cuBLAS is used only
 * here, in the tool; the library never links it. */
#include "c3_gpu.h"
#include "common/data.h"

#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define C3_CUBLAS(call)                                                                            \
  do {                                                                                             \
    cublasStatus_t s_ = (call);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      fprintf(stderr, "dmaccl-c3: %s: cuBLAS status %d\n", #call, (int)s_);                        \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

struct c3Gemm {
  cublasHandle_t h;
  cudaStream_t stream;
  void *a, *b, *c, *ws;
  cudaGraphExec_t graph;
  cudaEvent_t e0, e1;
};

#define WORKSPACE_BYTES ((size_t)32 << 20)

/* bf16 values in [-1, 1): the top 16 bits of a float. */
static void fillBf16(uint16_t *p, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull | 1;
  for (size_t i = 0; i < n; i++) {
    float f = (float)((double)(dataRand(&s) >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
    uint32_t u;
    memcpy(&u, &f, 4);
    p[i] = (uint16_t)(u >> 16);
  }
}

static int setup(c3Gemm *g, const c3Scenario *sc, int nsc, unsigned seed) {
  size_t ma = 1, mb = 1, mc = 1;
  for (int i = 0; i < nsc; i++) {
    size_t m = (size_t)sc[i].m, n = (size_t)sc[i].n, k = (size_t)sc[i].k;
    if (m * k > ma) ma = m * k;
    if (k * n > mb) mb = k * n;
    if (m * n > mc) mc = m * n;
  }
  size_t most = ma > mb ? ma : mb;
  uint16_t *host = malloc(most * 2);
  if (!host) return -1;
  fillBf16(host, most, seed);
  int rc = -1;
  if (cudaMalloc(&g->a, ma * 2) == cudaSuccess && cudaMalloc(&g->b, mb * 2) == cudaSuccess &&
      cudaMalloc(&g->c, mc * 2) == cudaSuccess &&
      cudaMalloc(&g->ws, WORKSPACE_BYTES) == cudaSuccess &&
      cudaMemcpy(g->a, host, ma * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
      cudaMemcpy(g->b, host + (most - mb), mb * 2, cudaMemcpyHostToDevice) == cudaSuccess)
    rc = 0;
  free(host);
  if (rc) fprintf(stderr, "dmaccl-c3: cannot allocate or fill the GEMM buffers\n");
  return rc;
}

c3Gemm *c3GemmInit(cudaStream_t stream, const c3Scenario *sc, int nsc, unsigned seed) {
  c3Gemm *g = calloc(1, sizeof(*g));
  if (!g) return NULL;
  g->stream = stream;
  if (cublasCreate(&g->h) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "dmaccl-c3: cublasCreate failed\n");
    free(g);
    return NULL;
  }
  /* A fixed workspace: graph capture must not allocate. */
  if (setup(g, sc, nsc, seed) || cublasSetStream(g->h, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(g->h, g->ws, WORKSPACE_BYTES) != CUBLAS_STATUS_SUCCESS ||
      cudaEventCreate(&g->e0) != cudaSuccess || cudaEventCreate(&g->e1) != cudaSuccess) {
    c3GemmFini(g);
    return NULL;
  }
  return g;
}

static int gemmOnce(c3Gemm *g, const c3Scenario *s) {
  const float alpha = 1.0f, beta = 0.0f;
  int m = (int)s->m, n = (int)s->n, k = (int)s->k;
  C3_CUBLAS(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, g->a, CUDA_R_16BF, m,
                         g->b, CUDA_R_16BF, k, &beta, g->c, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
  return 0;
}

int c3GemmRows(c3Gemm *g, const c3Scenario *s, const void *a, long row0, long rows) {
  const float alpha = 1.0f, beta = 0.0f;
  int n = (int)s->n, k = (int)s->k;
  /* row-major C = A B is column-major C^T = B^T A^T: B^T is N x K with
   * leading dimension N, the rows of A are K x rows with leading dimension K */
  void *c = (char *)g->c + (size_t)row0 * (size_t)n * 2;
  C3_CUBLAS(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, n, (int)rows, k, &alpha, g->b, CUDA_R_16BF,
                         n, a, CUDA_R_16BF, k, &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
  return 0;
}

void *c3GemmOut(c3Gemm *g) {
  return g->c;
}

int c3GemmTime(c3Gemm *g, const c3Scenario *s, double *us) {
  for (int i = 0; i < 3; i++)
    if (gemmOnce(g, s)) return -1;
  /* enough GEMMs for a millisecond or so, at least 10 */
  C3_CUDA(cudaEventRecord(g->e0, g->stream));
  if (gemmOnce(g, s)) return -1;
  C3_CUDA(cudaEventRecord(g->e1, g->stream));
  C3_CUDA(cudaEventSynchronize(g->e1));
  float ms = 0;
  C3_CUDA(cudaEventElapsedTime(&ms, g->e0, g->e1));
  int reps = ms > 0 ? (int)(1.0 / ms) : 100;
  if (reps < 10) reps = 10;
  if (reps > 200) reps = 200;
  C3_CUDA(cudaEventRecord(g->e0, g->stream));
  for (int i = 0; i < reps; i++)
    if (gemmOnce(g, s)) return -1;
  C3_CUDA(cudaEventRecord(g->e1, g->stream));
  C3_CUDA(cudaEventSynchronize(g->e1));
  C3_CUDA(cudaEventElapsedTime(&ms, g->e0, g->e1));
  *us = 1000.0 * ms / reps;
  return 0;
}

int c3GemmCapture(c3Gemm *g, const c3Scenario *s, long count) {
  if (g->graph) {
    cudaGraphExecDestroy(g->graph);
    g->graph = NULL;
  }
  cudaGraph_t graph;
  C3_CUDA(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
  int bad = 0;
  for (long i = 0; i < count && !bad; i++) bad = gemmOnce(g, s);
  cudaError_t e = cudaStreamEndCapture(g->stream, &graph);
  if (bad) return -1;
  C3_CUDA(e);
  e = cudaGraphInstantiate(&g->graph, graph, 0);
  cudaGraphDestroy(graph);
  C3_CUDA(e);
  C3_CUDA(cudaGraphUpload(g->graph, g->stream));
  return 0;
}

int c3GemmLaunch(c3Gemm *g) {
  C3_CUDA(cudaGraphLaunch(g->graph, g->stream));
  return 0;
}

void c3GemmFini(c3Gemm *g) {
  if (!g) return;
  if (g->graph) cudaGraphExecDestroy(g->graph);
  if (g->e0) cudaEventDestroy(g->e0);
  if (g->e1) cudaEventDestroy(g->e1);
  if (g->h) cublasDestroy(g->h);
  cudaFree(g->a);
  cudaFree(g->b);
  cudaFree(g->c);
  cudaFree(g->ws);
  free(g);
}
