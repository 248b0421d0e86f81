#include "mp.h"
#include "common/colls.h"
#include "harness.h"

#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

size_t mpTypeSize(dmacclDataType_t t) {
  return collTypeSize(t);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int mpRun(int n, mpBody body, void *arg, double timeoutSec, unsigned expectKilled) {
  dmacclUniqueId id;
  if (dmacclGetUniqueId(&id) != dmacclSuccess) {
    fprintf(stderr, "dmacclGetUniqueId failed: %s\n", dmacclCommGetLastError(NULL));
    return n;
  }
  pid_t pids[64];
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      int rc = body(r, n, &id, arg);
      fflush(stdout);
      fflush(stderr);
      _exit(rc ? 1 : 0);
    }
  }
  int failed = 0, left = n, done[64] = {0};
  double deadline = now() + timeoutSec;
  while (left > 0) {
    int status = 0;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      for (int r = 0; r < n; r++)
        if (pids[r] == p) {
          done[r] = 1;
          left--;
          int killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
          int ok = (expectKilled >> r) & 1 ? killed : WIFEXITED(status) && WEXITSTATUS(status) == 0;
          if (!ok) {
            fprintf(stderr, "rank %d (pid %d) failed: %s %d\n", r, (int)p,
                    WIFSIGNALED(status) ? "signal" : "exit status",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            failed++;
          }
        }
      continue;
    }
    if (now() > deadline) {
      for (int r = 0; r < n; r++)
        if (!done[r]) {
          fprintf(stderr, "rank %d (pid %d) still running after %.0f s: killed\n", r, (int)pids[r],
                  timeoutSec);
          kill(pids[r], SIGKILL);
          waitpid(pids[r], NULL, 0);
          failed++;
        }
      break;
    }
    usleep(2000);
  }
  return failed;
}

/* Rank src's block for rank dst (AllGather: dst ignored). */
static uint64_t blockSeed(uint64_t seed, int alltoall, int src, int dst) {
  return seed * 1000003u + (uint64_t)src * 1009u + (alltoall ? (uint64_t)dst + 1 : 0);
}

long long mpCheckColl(dmacclComm_t comm, int gpu, cudaStream_t stream, int alltoall,
                      dmacclDataType_t type, size_t count, int inPlace, void *send, void *recv,
                      uint64_t seed) {
  int n = 0, me = 0;
  dmacclCommCount(comm, &n);
  dmacclCommUserRank(comm, &me);
  size_t chunk = count * mpTypeSize(type), total = chunk * (size_t)n;
  size_t sendBytes = alltoall ? total : chunk;
  unsigned char *hsend = malloc(sendBytes + 1), *hrecv = malloc(total + MP_GUARD),
                *want = malloc(total + MP_GUARD);
  if (!hsend || !hrecv || !want) return -1;
  void *sendPtr = inPlace ? (char *)recv + (size_t)me * chunk : send;
  /* Poisoned output and guard, then the input. */
  memset(want, 0xA5, total + MP_GUARD);
  for (int j = 0; j < n; j++)
    dataFillRandom(want + (size_t)j * chunk, chunk, blockSeed(seed, alltoall, j, me));
  memset(hrecv, 0xA5, total + MP_GUARD);
  for (int j = 0; j < (alltoall ? n : 1); j++)
    dataFillRandom(hsend + (size_t)j * chunk, chunk, blockSeed(seed, alltoall, me, j));
  if (inPlace) memcpy(hrecv + (size_t)me * chunk, hsend, chunk);
  if (gpu) {
    /* From pageable memory cudaMemcpy may return before its last staged
     * chunk lands: synchronize before the collective's own stream runs. */
    if (cudaMemcpy(recv, hrecv, total + MP_GUARD, cudaMemcpyHostToDevice) != cudaSuccess ||
        (!inPlace && cudaMemcpy(send, hsend, sendBytes, cudaMemcpyHostToDevice) != cudaSuccess) ||
        cudaDeviceSynchronize() != cudaSuccess)
      return -1;
  } else {
    memcpy(recv, hrecv, total + MP_GUARD);
    if (!inPlace) memcpy(send, hsend, sendBytes);
  }
  dmacclResult_t rc = alltoall ? dmacclAlltoAll(sendPtr, recv, count, type, comm, stream)
                               : dmacclAllGather(sendPtr, recv, count, type, comm, stream);
  if (rc != dmacclSuccess) {
    fprintf(stderr, "rank %d: collective failed: %s\n", me, dmacclCommGetLastError(comm));
    return -1;
  }
  if (gpu) {
    /* Poll, so that a peer's failure ends this rank's wait with its error
     * (and an abort) instead of a hang. */
    cudaError_t q;
    while ((q = cudaStreamQuery(stream)) == cudaErrorNotReady) {
      dmacclResult_t a = dmacclSuccess;
      dmacclCommGetAsyncError(comm, &a);
      if (a == dmacclRemoteError || a == dmacclTimeout) {
        fprintf(stderr, "rank %d: gave up: %s\n", me, dmacclCommGetLastError(comm));
        dmacclCommAbort(comm);
        return -1;
      }
    }
    if (q != cudaSuccess ||
        cudaMemcpy(hrecv, recv, total + MP_GUARD, cudaMemcpyDeviceToHost) != cudaSuccess)
      return -1;
  } else {
    if ((rc = dmacclCommSynchronize(comm)) != dmacclSuccess) {
      fprintf(stderr, "rank %d: synchronize: %s\n", me, dmacclCommGetLastError(comm));
      return -1;
    }
    memcpy(hrecv, recv, total + MP_GUARD);
  }
  dmacclResult_t async = dmacclSuccess;
  dmacclCommGetAsyncError(comm, &async);
  if (async != dmacclSuccess) {
    fprintf(stderr, "rank %d: async error: %s\n", me, dmacclCommGetLastError(comm));
    return -1;
  }
  long long wrong = 0;
  for (size_t i = 0; i < total + MP_GUARD; i++) wrong += hrecv[i] != want[i];
  if (wrong)
    fprintf(stderr, "rank %d: %s count %zu type %d inPlace %d: %lld wrong bytes (first at %lld)\n",
            me, alltoall ? "alltoall" : "allgather", count, (int)type, inPlace, wrong,
            testFirstDiff(hrecv, want, total + MP_GUARD));
  free(hsend);
  free(hrecv);
  free(want);
  return wrong;
}

int mpGpusPresent(void) {
  pid_t pid = fork();
  if (pid == 0) {
    int k = 0;
    _exit(cudaGetDeviceCount(&k) == cudaSuccess && k > 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
