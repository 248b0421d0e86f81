/* GPU memory a rank's Send/Recv channels take: one process, N ranks on GPU 0,
 * cudaMemGetInfo after init and after every rank sent to and received from
 * every peer once (2(N-1) channel ends per rank). */
#include <dmaccl.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
static size_t used(void) {
  size_t f, t;
  cudaMemGetInfo(&f, &t);
  return t - f;
}
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2;
  int dev[8] = {0};
  dmacclComm_t c[8];
  cudaSetDevice(0);
  cudaFree(0);
  size_t u0 = used();
  if (dmacclCommInitAll(c, n, dev, NULL) != dmacclSuccess) {
    printf("init: %s\n", dmacclCommGetLastError(NULL));
    return 1;
  }
  size_t u1 = used();
  float *b[8];
  for (int r = 0; r < n; r++) cudaMalloc((void **)&b[r], 4096 * n);
  size_t u2 = used();
  dmacclGroupStart();
  for (int r = 0; r < n; r++)
    for (int p = 0; p < n; p++)
      if (p != r) {
        dmacclSend(b[r] + 512 * p, 256, dmacclFloat32, p, c[r], 0);
        dmacclRecv(b[r] + 512 * p + 256, 256, dmacclFloat32, p, c[r], 0);
      }
  if (dmacclGroupEnd() != dmacclSuccess) {
    printf("group: %s\n", dmacclCommGetLastError(NULL));
    return 1;
  }
  for (int r = 0; r < n; r++) dmacclCommSynchronize(c[r]);
  size_t u3 = used();
  printf("ranks %d: init %.1f MB (%.1f per rank); channels %.1f MB (%d ends, %.1f MB each)\n", n,
         (u1 - u0) / 1048576.0, (u1 - u0) / 1048576.0 / n, (u3 - u2) / 1048576.0, 2 * n * (n - 1),
         (u3 - u2) / 1048576.0 / (2 * n * (n - 1)));
  for (int r = 0; r < n; r++) dmacclCommDestroy(c[r]);
  return 0;
}
