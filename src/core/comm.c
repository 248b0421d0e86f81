/* Communicator lifetime and queries. */
#include "../exec/exec.h"
#include "../boot/boot.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static unsigned long nextCliqueId = 1;

unsigned long coreNewCliqueId(void) {
  return __atomic_fetch_add(&nextCliqueId, 1, __ATOMIC_RELAXED);
}

dmacclResult_t dmacclGetVersion(int *version) {
  if (!version) return coreError(NULL, dmacclInvalidArgument, "dmacclGetVersion: version is NULL");
  *version = DMACCL_VERSION_CODE;
  return dmacclSuccess;
}

static dmacclResult_t coreResolveExecutor(const dmacclConfig_t *config, dmacclExecutor_t *out,
                                          const char *call) {
  dmacclExecutor_t e = CONFIG_HAS(config, executor) ? config->executor : dmacclExecutorDefault;
  if ((unsigned)e > dmacclExecutorHost)
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: config->executor %d is not a dmacclExecutor_t", call, (int)e);
  if (e == dmacclExecutorDefault) {
    const char *env = coreParamString("DMACCL_EXECUTOR");
    if (!env[0] || strcasecmp(env, "cuda") == 0)
      e = dmacclExecutorCuda;
    else if (strcasecmp(env, "host") == 0)
      e = dmacclExecutorHost;
    else
      return coreError(NULL, dmacclInvalidArgument,
                       "%s: DMACCL_EXECUTOR='%s' is neither cuda nor host", call, env);
  }
  *out = e;
  return dmacclSuccess;
}

/* The whole of a small text file, NUL-terminated; NULL with a reason. */
static char *readSmallFile(const char *path, char *why, size_t whylen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(why, whylen, "cannot open it (%s)", strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  if (buf) n = fread(buf, 1, cap + 1, f);
  fclose(f);
  if (!buf) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  if (n > cap) {
    snprintf(why, whylen, "larger than %zu bytes", cap);
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  return buf;
}

_Static_assert((int)PLAN_CTA_DEFAULT == (int)dmacclCtaPolicyDefault &&
                   (int)PLAN_CTA_EFFICIENCY == (int)dmacclCtaPolicyEfficiency &&
                   (int)PLAN_CTA_ZERO == (int)dmacclCtaPolicyZero,
               "the plan layer numbers CTA policies as dmaccl.h does");

/* The communicator's CTA policy: config->ctaPolicy where the caller's
 * config has the field and sets it, else DMACCL_CTA_POLICY, else Default. */
static dmacclResult_t coreResolveCtaPolicy(const dmacclConfig_t *config, const char *call,
                                           int *out) {
  if (CONFIG_HAS(config, ctaPolicy) && config->ctaPolicy != DMACCL_CONFIG_UNDEF_INT) {
    if (config->ctaPolicy < dmacclCtaPolicyDefault || config->ctaPolicy > dmacclCtaPolicyZero)
      return coreError(NULL, dmacclInvalidArgument,
                       "%s: config->ctaPolicy %d is not a dmacclCtaPolicy_t (Default 0, "
                       "Efficiency 1, Zero 2) or DMACCL_CONFIG_UNDEF_INT",
                       call, config->ctaPolicy);
    *out = config->ctaPolicy;
    return dmacclSuccess;
  }
  const char *env = coreParamString("DMACCL_CTA_POLICY");
  *out = dmacclCtaPolicyDefault;
  if (!env[0]) return dmacclSuccess;
  *out = planCtaPolicyParse(env);
  if (*out >= 0) return dmacclSuccess;
  *out = dmacclCtaPolicyDefault;
  return coreError(NULL, dmacclInvalidArgument,
                   "%s: DMACCL_CTA_POLICY='%s' is not default, efficiency or zero (or 0, 1, 2)",
                   call, env);
}

dmacclResult_t coreBuildTable(const dmacclConfig_t *config, planTable *t, const char *call,
                              int nranks, char *note, size_t notelen) {
  char err[256];
  int policy = dmacclCtaPolicyDefault;
  dmacclResult_t rc = coreResolveCtaPolicy(config, call, &policy);
  if (rc != dmacclSuccess) return rc;
  planTableDefaults(t, nranks);
  if (notelen) note[0] = 0;
  /* A tuning file that cannot be used is reported and skipped: the
   * defaults still work, and a stale file should not stop a job. */
  const char *file = coreParamString("DMACCL_TUNE_FILE");
  if (file[0]) {
    char *text = readSmallFile(file, err, sizeof(err));
    t->origin = PLAN_FROM_TUNE_FILE;
    if (text && planTuneParse(t, nranks, text, err, sizeof(err)) == 0) {
      snprintf(note, notelen, "DMACCL_TUNE_FILE %s applied for %d ranks%s%s", file, nranks,
               err[0] ? ": " : "", err);
      if (err[0]) coreLog(CORE_LOG_WARN, "%s: %s", call, note);
    } else {
      snprintf(note, notelen, "DMACCL_TUNE_FILE %s: %s; the built-in table is used", file, err);
      coreLog(CORE_LOG_WARN, "%s: %s", call, note);
    }
    free(text);
  }
  /* The policy reshapes what the library chose (the built-in table and a
   * tuning file); what DMACCL_ALGO and the config name runs as named. */
  t->ctaPolicy = policy;
  if (policy == dmacclCtaPolicyZero) {
    int changed = planTableNoSmMoves(t);
    size_t used = notelen ? strlen(note) : 0;
    if (used + 1 < notelen)
      snprintf(note + used, notelen - used,
               "%sCTA policy zero: %d ranges of SM-moving algorithms take their copy-engine form",
               used ? "; " : "", changed);
  }
  t->origin = PLAN_FROM_ENV;
  const char *env = coreParamString("DMACCL_ALGO");
  if (planTableParse(t, env, err, sizeof(err)))
    return coreError(NULL, dmacclInvalidArgument, "%s: DMACCL_ALGO: %s", call, err);
  t->origin = PLAN_FROM_CONFIG;
  int own = CONFIG_HAS(config, algorithm) && config->algorithm;
  if (own && planTableParse(t, config->algorithm, err, sizeof(err)))
    return coreError(NULL, dmacclInvalidArgument, "%s: config->algorithm: %s", call, err);
  /* the finished table (a tuning file that split pairs kept its old ranges) */
  if (planTableCheckPairs(t, err, sizeof(err)))
    return coreError(NULL, dmacclInvalidArgument, "%s: %s: %s", call,
                     own ? "DMACCL_ALGO and config->algorithm" : "DMACCL_ALGO", err);
  return dmacclSuccess;
}

static dmacclResult_t coreCheckConfig(const dmacclConfig_t *config, const char *call) {
  if (!config) return dmacclSuccess;
  if (config->magic != DMACCL_CONFIG_MAGIC ||
      config->size < sizeof(size_t) + 2 * sizeof(unsigned) || config->size > sizeof(dmacclConfig_t))
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: config was not initialized with DMACCL_CONFIG_INITIALIZER "
                     "(size %zu, magic 0x%x)",
                     call, config->size, config->magic);
  return dmacclSuccess;
}

void coreFreeClique(coreClique *c) {
  if (!c) return;
  free(c->algorithm);
  if (c->mp) {
    coreShmRelease(&c->board);
    bootClose(c->boot);
    free(c->pids);
    free(c->channelRows);
  }
  for (int s = 0; s < CORE_BOARD_DEPTH; s++) {
    free(c->slots[s].ops);
    free(c->slots[s].vec);
  }
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->p2pLock);
  free(c->comms);
  free(c);
}

dmacclResult_t coreInitPrelude(const dmacclConfig_t *config, const char *call, int nranks,
                               dmacclExecutor_t *executor, planTable *table) {
  if (coreGroupActive())
    return coreError(NULL, dmacclInvalidUsage, "%s: not allowed inside a group", call);
  return coreInitCheck(config, call, nranks, executor, table);
}

dmacclResult_t coreInitCheck(const dmacclConfig_t *config, const char *call, int nranks,
                             dmacclExecutor_t *executor, planTable *table) {
  dmacclResult_t rc = coreCheckConfig(config, call);
  if (rc == dmacclSuccess) rc = coreResolveExecutor(config, executor, call);
  char note[512];
  if (rc == dmacclSuccess) rc = coreBuildTable(config, table, call, nranks, note, sizeof(note));
  if (rc == dmacclSuccess && note[0]) CORE_INFO("%s: %s", call, note);
  return rc;
}

dmacclComm_t coreNewComm(coreClique *c, int rank, int device, dmacclExecutor_t executor) {
  dmacclComm_t comm = calloc(1, sizeof(struct dmacclComm));
  if (!comm) return NULL;
  comm->rank = rank;
  comm->nranks = c->nranks;
  comm->device = device;
  comm->executor = executor;
  comm->exec = executor == dmacclExecutorCuda ? &execCudaOps : &execHostOps;
  comm->clique = c;
  pthread_mutex_init(&comm->memLock, NULL);
  pthread_mutex_init(&comm->errLock, NULL);
  return comm;
}

void coreFreeComm(dmacclComm_t comm) {
  if (!comm) return;
  planScheduleFree(&comm->sched);
  pthread_mutex_destroy(&comm->memLock);
  pthread_mutex_destroy(&comm->errLock);
  free(comm->p2p);
  free(comm->p2pSeen);
  free(comm->redOps);
  free(comm->regs);
  free(comm);
}

dmacclResult_t dmacclCommInitAll(dmacclComm_t *comms, int ndev, const int *devlist,
                                 const dmacclConfig_t *config) {
  const char *call = "dmacclCommInitAll";
  if (!comms) return coreError(NULL, dmacclInvalidArgument, "%s: comms is NULL", call);
  if (ndev < 1 || ndev > CORE_MAX_RANKS)
    return coreError(NULL, dmacclInvalidArgument, "%s: ndev %d is not in 1..%d", call, ndev,
                     CORE_MAX_RANKS);
  dmacclExecutor_t executor = dmacclExecutorDefault;
  planTable table;
  dmacclResult_t rc = coreInitPrelude(config, call, ndev, &executor, &table);
  if (rc != dmacclSuccess) return rc;
  if (devlist && executor == dmacclExecutorCuda) {
    /* A device may repeat: its ranks share it (the executor checks that it exists). */
    for (int i = 0; i < ndev; i++)
      if (devlist[i] < 0)
        return coreError(NULL, dmacclInvalidArgument, "%s: devlist[%d] = %d is negative", call, i,
                         devlist[i]);
  }
  return coreMakeSet(comms, ndev, devlist, executor, &table, 0, call);
}

dmacclResult_t coreMakeSet(dmacclComm_t *comms, int ndev, const int *devlist,
                           dmacclExecutor_t executor, const planTable *table, int channel,
                           const char *call) {
  dmacclResult_t rc;
  coreClique *c = calloc(1, sizeof(*c));
  dmacclComm_t *made = calloc((size_t)ndev, sizeof(*made));
  if (!c || !made) goto nomem;
  c->comms = made;
  c->nranks = ndev;
  c->alive = ndev;
  c->nextLaunch = 1;
  c->table = *table;
  c->stageBytes = coreStageBytesParam();
  coreSetLineBytes(c);
  c->scratchBytes = channel ? 0 : coreScratchBytesParam();
  c->kernelWait = coreKernelWaitParam(c->table.ctaPolicy);
  for (int i = 0; i < ndev && executor == dmacclExecutorCuda; i++)
    for (int j = i + 1; j < ndev; j++)
      if ((devlist ? devlist[i] : i) == (devlist ? devlist[j] : j)) c->gpuShared = 1;
  c->timeoutSec = coreParamSeconds("DMACCL_TIMEOUT", 600, 1);
  c->id = coreNewCliqueId();
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  pthread_mutex_init(&c->p2pLock, NULL);
  for (int s = 0; s < CORE_BOARD_DEPTH; s++)
    if (!(c->slots[s].ops = calloc((size_t)ndev, sizeof(coreOp)))) goto nomem;
  for (int i = 0; i < ndev; i++) {
    if (!(made[i] = coreNewComm(
              c, i, executor == dmacclExecutorCuda ? (devlist ? devlist[i] : i) : -1, executor)))
      goto nomem;
  }
  rc = made[0]->exec->init(made, ndev, devlist);
  if (rc != dmacclSuccess) goto fail;
  for (int i = 0; i < ndev; i++)
    if ((rc = coreRegisterComm(made[i])) != dmacclSuccess) {
      for (int j = 0; j < i; j++) coreUnregisterComm(made[j]);
      for (int j = 0; j < ndev; j++) made[j]->exec->fini(made[j]);
      goto fail;
    }
  memcpy(comms, made, (size_t)ndev * sizeof(*made));
  CORE_INFO("%s: %d ranks on the %s executor", call, ndev, made[0]->exec->name);
  return dmacclSuccess;

nomem:
  rc = coreError(NULL, dmacclSystemError, "%s: out of memory", call);
fail:
  if (made)
    for (int i = 0; i < ndev; i++) {
      coreFreeComm(made[i]);
    }
  if (c) {
    c->comms = NULL;
    coreFreeClique(c);
  }
  free(made);
  return rc;
}

dmacclResult_t dmacclCommSynchronize(dmacclComm_t comm) {
  const char *call = "dmacclCommSynchronize";
  dmacclResult_t rc = coreEnter(comm, call);
  if (rc != dmacclSuccess) return rc;
  uint64_t posted = comm->posted;
  /* The Send/Recv channels' work too (their error is reported after this
   * communicator's own work is done). */
  char p2pWhy[sizeof(comm->lastError)];
  dmacclResult_t p2pRc = coreP2pSync(comm, call);
  if (p2pRc != dmacclSuccess) snprintf(p2pWhy, sizeof(p2pWhy), "%s", coreLastError(comm));
  rc = coreWaitLaunched(comm, posted);
  if (rc == dmacclSuccess) rc = comm->exec->sync(comm, posted);
  /* Ranks as processes: a staged operation is compared with the peers'
   * calls after it ran; its verdict belongs to this wait. */
  if (rc == dmacclSuccess && comm->clique->mp) rc = coreMpWaitChecked(comm, posted);
  if (rc == dmacclSuccess) {
    rc = coreTakeErrors(comm);
    if (rc != dmacclSuccess) coreError(comm, rc, "%s: %s", call, coreLastError(comm));
  }
  if (rc == dmacclSuccess && p2pRc != dmacclSuccess) rc = coreError(comm, p2pRc, "%s", p2pWhy);
  coreLeave(comm);
  return rc;
}

/* Destroy and Abort: wait (or release the waits), then free. Errors of
 * earlier operations were reported through dmacclCommGetAsyncError. The
 * comm leaves the registry first, so later calls with it fail cleanly, and
 * it is freed only once the calls inside the library have returned (an
 * abort makes them return). */
void coreTeardown(dmacclComm_t comm, int abort) {
  coreClique *c = comm->clique;
  coreP2pTeardown(comm, abort);
  if (!abort) {
    if (coreWaitLaunched(comm, comm->posted) == dmacclSuccess) comm->exec->sync(comm, comm->posted);
    /* A broken communicator cannot drain: release its waits instead. */
    abort = __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) != dmacclSuccess;
  }
  if (abort) {
    pthread_mutex_lock(&c->lock);
    __atomic_store_n(&c->aborting, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    comm->exec->abort(comm);
  }
  coreWaitUsers(comm);
  if (c->mp) coreProgressStop(c);
  coreMemReleaseAll(comm);
  comm->exec->fini(comm);
  pthread_mutex_lock(&c->lock);
  c->comms[comm->rank] = NULL;
  int last = --c->alive == 0;
  pthread_mutex_unlock(&c->lock);
  coreFreeComm(comm);
  if (last) coreFreeClique(c);
}

static dmacclResult_t destroyOrAbort(dmacclComm_t comm, int abort) {
  const char *call = abort ? "dmacclCommAbort" : "dmacclCommDestroy";
  dmacclResult_t rc = coreCheckComm(comm, call);
  if (rc != dmacclSuccess) return rc;
  if (coreGroupHolds(comm))
    return coreError(comm, dmacclInvalidUsage,
                     "%s: this thread's open group holds calls on this communicator; end the "
                     "group first (dmacclGroupEnd)",
                     call);
  if (coreUnregisterComm(comm) != 0) /* another thread got here first */
    return coreError(NULL, dmacclInvalidArgument,
                     "%s: comm %p is not a live communicator (destroyed, or never created)", call,
                     (void *)comm);
  coreTeardown(comm, abort);
  return dmacclSuccess;
}

dmacclResult_t dmacclCommDestroy(dmacclComm_t comm) {
  return destroyOrAbort(comm, 0);
}

dmacclResult_t dmacclCommAbort(dmacclComm_t comm) {
  return destroyOrAbort(comm, 1);
}

dmacclResult_t dmacclCommCount(const dmacclComm_t comm, int *count) {
  dmacclResult_t rc = coreCheckComm(comm, "dmacclCommCount");
  if (rc != dmacclSuccess) return rc;
  if (!count) return coreError(comm, dmacclInvalidArgument, "dmacclCommCount: count is NULL");
  *count = comm->nranks;
  return dmacclSuccess;
}

dmacclResult_t dmacclCommUserRank(const dmacclComm_t comm, int *rank) {
  dmacclResult_t rc = coreCheckComm(comm, "dmacclCommUserRank");
  if (rc != dmacclSuccess) return rc;
  if (!rank) return coreError(comm, dmacclInvalidArgument, "dmacclCommUserRank: rank is NULL");
  *rank = comm->rank;
  return dmacclSuccess;
}

dmacclResult_t dmacclCommCuDevice(const dmacclComm_t comm, int *device) {
  dmacclResult_t rc = coreCheckComm(comm, "dmacclCommCuDevice");
  if (rc != dmacclSuccess) return rc;
  if (!device) return coreError(comm, dmacclInvalidArgument, "dmacclCommCuDevice: device is NULL");
  *device = comm->device;
  return dmacclSuccess;
}
