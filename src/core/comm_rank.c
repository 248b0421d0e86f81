/* dmacclGetUniqueId, dmacclCommInitRank and dmacclCommSplit: one rank per process. */
#include "../exec/exec.h"
#include "../boot/boot.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

dmacclResult_t dmacclGetUniqueId(dmacclUniqueId *id) {
  if (!id) return coreError(NULL, dmacclInvalidArgument, "dmacclGetUniqueId: uniqueId is NULL");
  char err[256];
  dmacclResult_t rc = bootIdCreate(id, err, sizeof(err));
  if (rc != dmacclSuccess) return coreError(NULL, rc, "dmacclGetUniqueId: %s", err);
  return dmacclSuccess;
}

/* What each rank tells the others at init. */
typedef struct {
  int32_t pid, executor, device, ctaPolicy; /* ctaPolicy: the table's (all ranks alike) */
  uint64_t stageBytes;                      /* DMACCL_STAGE_BYTES: the set uses the smallest */
  uint64_t scratchBytes; /* DMACCL_SCRATCH_BYTES: the smallest too (pull1's AllReduce
                            takes its form by it: reduce.c) */
  char name[32];         /* executor's name of the device (PCI bus id) */
  uint64_t channelRows;  /* planSelectionDigest of the Broadcast rows of this rank's Send/Recv
                            channels (a channel's set: its own rows; the ends must agree) */
} rankInfo;

/* What a rank's Send/Recv channels select for their messages, as a digest:
 * a channel's set, its own table's Broadcast rows; a communicator, those its
 * channels would take (0 if that cannot be worked out: no memory). */
static uint64_t channelRowsOf(const planTable *table, int nranks, int channel) {
  if (channel) return planSelectionDigest(table, PLAN_COLL_BROADCAST);
  planTable *t = malloc(sizeof(*t));
  if (!t) return 0;
  *t = *table;
  planTableForChannel(t, nranks);
  uint64_t d = planSelectionDigest(t, PLAN_COLL_BROADCAST);
  free(t);
  return d;
}

/* Same verdict on every rank: they all see the same table. Ranks may share
 * a GPU (the executor reaches such a peer without peer access). */
static dmacclResult_t checkInfos(const rankInfo *all, int n, int channel, char *err,
                                 size_t errlen) {
  for (int r = 0; r < n; r++) { /* what a rank says is in range */
    const rankInfo *i = &all[r];
    if (i->pid <= 0 || (i->executor != dmacclExecutorCuda && i->executor != dmacclExecutorHost) ||
        i->device < -1 || !memchr(i->name, 0, sizeof(i->name)) || i->ctaPolicy < 0 ||
        i->ctaPolicy > dmacclCtaPolicyZero || i->stageBytes > ((size_t)1 << 40) ||
        i->scratchBytes > ((size_t)1 << 40)) {
      snprintf(err, errlen, "rank %d sent init data out of range (pid %d, executor %d, device %d)",
               r, i->pid, i->executor, i->device);
      return dmacclInvalidArgument;
    }
  }
  for (int r = 1; r < n; r++)
    if (all[r].executor != all[0].executor) {
      snprintf(err, errlen, "rank 0 uses the %s executor but rank %d the %s executor",
               all[0].executor == dmacclExecutorCuda ? "cuda" : "host", r,
               all[r].executor == dmacclExecutorCuda ? "cuda" : "host");
      return dmacclInvalidArgument;
    }
  for (int r = 1; r < n; r++) /* the policy shapes the table: tables that differ do not pair */
    if (all[r].ctaPolicy != all[0].ctaPolicy) {
      snprintf(err, errlen,
               "rank 0 has CTA policy %s but rank %d %s (config->ctaPolicy or "
               "DMACCL_CTA_POLICY must agree)",
               planCtaPolicyName(all[0].ctaPolicy), r, planCtaPolicyName(all[r].ctaPolicy));
      return dmacclInvalidArgument;
    }
  for (int r = 1; r < n && channel; r++) /* a channel's ends choose alike */
    if (all[r].channelRows != all[0].channelRows) {
      snprintf(err, errlen,
               "the two ends of this Send/Recv channel select different algorithms for its "
               "messages (their communicators' Broadcast rows differ: DMACCL_ALGO, "
               "DMACCL_TUNE_FILE or the config must agree)");
      return dmacclInvalidArgument;
    }
  return dmacclSuccess;
}

static void keepAlgorithm(dmacclComm_t comm, const dmacclConfig_t *config);
static dmacclResult_t recordInit(dmacclComm_t *out, int nranks, const dmacclUniqueId *id, int rank,
                                 const dmacclConfig_t *config);

static dmacclResult_t initRank(dmacclComm_t *out, int nranks, dmacclUniqueId id, int rank,
                               const dmacclConfig_t *config);

/* Inside a group a refused call fails the group (group.c, coreGroupFail). */
dmacclResult_t dmacclCommInitRank(dmacclComm_t *out, int nranks, dmacclUniqueId id, int rank,
                                  const dmacclConfig_t *config) {
  dmacclResult_t rc = initRank(out, nranks, id, rank, config);
  coreGroupFail(rc);
  return rc;
}

static dmacclResult_t initRank(dmacclComm_t *out, int nranks, dmacclUniqueId id, int rank,
                               const dmacclConfig_t *config) {
  const char *call = "dmacclCommInitRank";
  if (!out) return coreError(NULL, dmacclInvalidArgument, "%s: comm is NULL", call);
  if (nranks < 1 || nranks > CORE_MAX_RANKS)
    return coreError(NULL, dmacclInvalidArgument, "%s: nranks %d is not in 1..%d", call, nranks,
                     CORE_MAX_RANKS);
  if (rank < 0 || rank >= nranks)
    return coreError(NULL, dmacclInvalidArgument, "%s: rank %d is not in 0..%d (nranks %d)", call,
                     rank, nranks - 1, nranks);
  dmacclExecutor_t executor = dmacclExecutorDefault;
  if (coreGroupActive()) return recordInit(out, nranks, &id, rank, config);
  planTable table;
  dmacclResult_t rc = coreInitPrelude(config, call, nranks, &executor, &table);
  if (rc != dmacclSuccess) return rc;
  rc = coreInitRankWith(out, nranks, &id, rank, executor, &table, -1, 0, call);
  if (rc == dmacclSuccess) keepAlgorithm(*out, config);
  return rc;
}

/* A dmacclCommInitRank inside a group (core.h): its arguments checked and
 * its device taken now (the calling thread's current one), the rest at the
 * group's end. */
struct coreInitCall {
  dmacclComm_t *out;
  int nranks, rank, device;
  dmacclUniqueId id;
  dmacclExecutor_t executor;
  char *algorithm; /* the config's (kept on the communicator) */
  dmacclComm_t made;
  dmacclResult_t rc;
  char why[512];
  planTable table;
};

void coreFreeInit(coreInitCall *call) {
  if (!call) return;
  free(call->algorithm);
  free(call);
}

static dmacclResult_t recordInit(dmacclComm_t *out, int nranks, const dmacclUniqueId *id, int rank,
                                 const dmacclConfig_t *config) {
  const char *call = "dmacclCommInitRank";
  coreInitCall *c = calloc(1, sizeof(*c));
  if (!c) return coreError(NULL, dmacclSystemError, "%s: out of memory", call);
  c->out = out;
  c->nranks = nranks;
  c->rank = rank;
  c->id = *id;
  c->device = -1;
  char name[32];
  dmacclResult_t rc = coreInitCheck(config, call, nranks, &c->executor, &c->table);
  if (rc == dmacclSuccess) {
    const execOps *ops = c->executor == dmacclExecutorCuda ? &execCudaOps : &execHostOps;
    rc = ops->identify(&c->device, name, sizeof(name));
  }
  const char *a = CONFIG_HAS(config, algorithm) ? config->algorithm : NULL;
  if (rc == dmacclSuccess && a && !(c->algorithm = strdup(a)))
    rc = coreError(NULL, dmacclSystemError, "%s: out of memory", call);
  if (rc != dmacclSuccess) {
    coreFreeInit(c);
    return rc;
  }
  return coreGroupRecordInit(c);
}

static void makeRecorded(coreInitCall *c) {
  c->rc = coreInitRankWith(&c->made, c->nranks, &c->id, c->rank, c->executor, &c->table, c->device,
                           0, "dmacclCommInitRank");
  if (c->rc != dmacclSuccess)
    snprintf(c->why, sizeof(c->why), "%s", dmacclCommGetLastError(NULL));
  else if (c->algorithm) {
    c->made->clique->algorithm = c->algorithm;
    c->algorithm = NULL;
  }
}

static void *makeRecordedThread(void *arg) {
  coreInitCall *c = arg;
  const execOps *ops = c->executor == dmacclExecutorCuda ? &execCudaOps : &execHostOps;
  if (ops->bindThread) ops->bindThread(c->device); /* (no context made on GPU 0) */
  makeRecorded(c);
  return NULL;
}

dmacclResult_t coreRunInits(coreInitCall **calls, int n) {
  pthread_t *th = n > 1 ? calloc((size_t)n, sizeof(*th)) : NULL;
  int *started = n > 1 ? calloc((size_t)n, sizeof(*started)) : NULL;
  if (n > 1 && (!th || !started)) {
    for (int i = 0; i < n; i++) {
      calls[i]->rc = dmacclSystemError;
      snprintf(calls[i]->why, sizeof(calls[i]->why), "out of memory");
    }
  } else if (n == 1) {
    makeRecorded(calls[0]);
  } else {
    /* at once: ranks of one set made by this thread meet each other */
    for (int i = 0; i < n; i++) {
      started[i] = pthread_create(&th[i], NULL, makeRecordedThread, calls[i]) == 0;
      if (!started[i]) {
        calls[i]->rc = dmacclSystemError;
        snprintf(calls[i]->why, sizeof(calls[i]->why), "no thread to make it on");
      }
    }
    for (int i = 0; i < n; i++)
      if (started[i]) pthread_join(th[i], NULL);
  }
  free(th);
  free(started);
  int bad = -1;
  for (int i = 0; i < n && bad < 0; i++)
    if (calls[i]->rc != dmacclSuccess) bad = i;
  dmacclResult_t rc = dmacclSuccess;
  if (bad >= 0) /* all or nothing: what was made is freed, no *out written */
    rc = coreError(NULL, calls[bad]->rc,
                   "dmacclGroupEnd: dmacclCommInitRank (rank %d of %d, call %d of the group's %d) "
                   "failed: %s%s",
                   calls[bad]->rank, calls[bad]->nranks, bad + 1, n, calls[bad]->why,
                   n > 1 ? "; the group's other communicators were freed, none was returned" : "");
  for (int i = 0; i < n; i++) {
    if (bad >= 0 && calls[i]->made)
      dmacclCommDestroy(calls[i]->made);
    else if (bad < 0)
      *calls[i]->out = calls[i]->made;
    coreFreeInit(calls[i]);
  }
  free(calls);
  return rc;
}

/* ... the config's algorithm string, for the splits of the communicator
 * (they rebuild its table for their own number of ranks). Without memory a
 * split selects as if the string were not there; init itself succeeded. */
static void keepAlgorithm(dmacclComm_t comm, const dmacclConfig_t *config) {
  const char *a = CONFIG_HAS(config, algorithm) ? config->algorithm : NULL;
  if (a && !(comm->clique->algorithm = strdup(a)))
    coreLog(CORE_LOG_WARN,
            "out of memory keeping config->algorithm; communicators split from "
            "rank %d's communicator select without it",
            comm->rank);
}

/* What each rank of a split tells the others. */
typedef struct {
  int32_t color, key;
  int32_t ok; /* this rank's arguments passed its own checks */
  int32_t pad;
  dmacclUniqueId id; /* the rendezvous of its new communicator, if it leads one */
} splitInfo;

/* The calling thread's last sentence (a failure without a communicator) put
 * on comm. */
static dmacclResult_t onComm(dmacclComm_t comm, dmacclResult_t rc) {
  char why[sizeof(comm->lastError)];
  snprintf(why, sizeof(why), "%s", dmacclCommGetLastError(NULL));
  return coreError(comm, rc, "%s", why);
}

/* The config of a split: the caller's, checked as dmacclCommInitRank checks
 * it, with the fields its version lacks at their defaults and a default
 * executor meaning comm's; or (NULL) one that rebuilds comm's table: its
 * executor, CTA policy and algorithm string. */
static dmacclResult_t splitConfig(dmacclComm_t comm, const dmacclConfig_t *given,
                                  dmacclConfig_t *out) {
  dmacclConfig_t cfg = DMACCL_CONFIG_INITIALIZER;
  if (given) {
    if (given->magic != DMACCL_CONFIG_MAGIC || given->size < offsetof(dmacclConfig_t, executor) ||
        given->size > sizeof(cfg))
      return coreError(comm, dmacclInvalidArgument,
                       "dmacclCommSplit: config was not initialized with "
                       "DMACCL_CONFIG_INITIALIZER (size %zu, magic 0x%x)",
                       given->size, given->magic);
    /* the fields the caller's version has whole; the rest at their defaults */
    if (CONFIG_HAS(given, executor)) cfg.executor = given->executor;
    if (CONFIG_HAS(given, algorithm)) cfg.algorithm = given->algorithm;
    if (CONFIG_HAS(given, ctaPolicy)) cfg.ctaPolicy = given->ctaPolicy;
    if (cfg.executor == dmacclExecutorDefault) cfg.executor = comm->executor;
    *out = cfg;
    return dmacclSuccess;
  }
  cfg.executor = comm->executor;
  cfg.algorithm = comm->clique->algorithm;
  cfg.ctaPolicy = comm->clique->table.ctaPolicy;
  *out = cfg;
  return dmacclSuccess;
}

dmacclResult_t dmacclCommSplit(dmacclComm_t comm, int color, int key, dmacclComm_t *newcomm,
                               const dmacclConfig_t *config) {
  const char *call = "dmacclCommSplit";
  dmacclResult_t rc = coreEnter(comm, call);
  if (rc != dmacclSuccess) return rc;
  coreClique *c = comm->clique;
  char err[256];
  splitInfo mine, *all = NULL;
  memset(&mine, 0, sizeof(mine));
  dmacclConfig_t cfg;
  planTable table;
  dmacclExecutor_t executor = comm->executor;
  if (!c->mp) { /* (no bootstrap: nothing to meet the peers through) */
    rc = coreError(comm, dmacclInvalidUsage,
                   "%s: comm is a rank of a dmacclCommInitAll set (one process); splitting "
                   "needs communicators of dmacclCommInitRank: make the new set with "
                   "dmacclCommInitAll from its devices",
                   call);
    goto out;
  }
  /* This rank's own checks (inside a group too); the verdict travels with
   * the exchange, so that a rank refused fails every rank, with nothing made,
   * and the bootstrap's exchanges stay in step: every rank takes part. */
  if (!(all = calloc((size_t)comm->nranks, sizeof(*all)))) {
    rc = coreError(comm, dmacclSystemError, "%s: out of memory", call);
    goto out; /* (the one way not to take part: the peers time out, naming this rank) */
  }
  if (!newcomm)
    rc = coreError(comm, dmacclInvalidArgument, "%s: newcomm is NULL", call);
  else if (color < 0 && color != DMACCL_SPLIT_NOCOLOR)
    rc = coreError(comm, dmacclInvalidArgument,
                   "%s: color %d is negative and not DMACCL_SPLIT_NOCOLOR (-1)", call, color);
  else if ((rc = splitConfig(comm, config, &cfg)) == dmacclSuccess) {
    /* the config's checks (the table for comm's size; made again below for the new one) */
    rc = coreInitPrelude(&cfg, call, comm->nranks, &executor, &table);
    if (rc == dmacclSuccess && executor != comm->executor)
      rc = coreError(NULL, dmacclInvalidArgument,
                     "%s: config selects the %s executor but comm runs on the %s executor", call,
                     executor == dmacclExecutorCuda ? "cuda" : "host",
                     comm->executor == dmacclExecutorCuda ? "cuda" : "host");
    if (rc != dmacclSuccess) rc = onComm(comm, rc);
  }
  dmacclResult_t own = rc;
  mine.color = color;
  mine.key = key;
  mine.ok = own == dmacclSuccess;
  if (mine.ok && color != DMACCL_SPLIT_NOCOLOR &&
      (rc = bootIdCreate(&mine.id, err, sizeof(err))) != dmacclSuccess) {
    own = rc = coreError(comm, rc, "%s: %s", call, err);
    mine.ok = 0;
  }
  rc = bootAllGather(c->boot, &mine, all, sizeof(mine), err, sizeof(err));
  if (rc != dmacclSuccess) {
    rc = coreError(comm, rc, "%s (rank %d): %s", call, comm->rank, err);
    goto out;
  }
  if (own != dmacclSuccess) {
    rc = own; /* its sentence is on comm */
    goto out;
  }
  for (int r = 0; r < comm->nranks; r++)
    if (!all[r].ok) {
      rc = coreError(comm, dmacclRemoteError,
                     "%s: rank %d's call was refused (see its error); nothing was made", call, r);
      goto out;
    }
  if (color == DMACCL_SPLIT_NOCOLOR) {
    *newcomm = NULL;
    goto out;
  }
  /* The new set: the ranks of this color by (key, rank in comm); its rank 0,
   * the first, hosts the rendezvous under the id it sent. */
  int n = 0, me = 0, lead = -1;
  for (int r = 0; r < comm->nranks; r++) {
    if (all[r].color != color) continue;
    n++;
    if (all[r].key < key || (all[r].key == key && r < comm->rank)) me++;
    if (lead < 0 || all[r].key < all[lead].key) lead = r;
  }
  rc = coreInitPrelude(&cfg, call, n, &executor, &table);
  dmacclComm_t made = NULL;
  if (rc == dmacclSuccess)
    rc = coreInitRankWith(&made, n, &all[lead].id, me, executor, &table, comm->device, 0, call);
  if (rc != dmacclSuccess) {
    rc = onComm(comm, rc);
    goto out;
  }
  keepAlgorithm(made, &cfg);
  *newcomm = made;
  CORE_INFO("%s: rank %d of %d (color %d, key %d) is rank %d of %d", call, comm->rank, comm->nranks,
            color, key, me, n);
out:
  free(all);
  coreLeave(comm);
  return rc;
}

dmacclResult_t coreInitRankWith(dmacclComm_t *out, int nranks, const dmacclUniqueId *id, int rank,
                                dmacclExecutor_t executor, const planTable *table, int device,
                                int channel, const char *call) {
  char err[512];
  dmacclResult_t rc;
  const execOps *ops = executor == dmacclExecutorCuda ? &execCudaOps : &execHostOps;
  rankInfo mine;
  memset(&mine, 0, sizeof(mine));
  mine.pid = (int32_t)getpid();
  mine.executor = (int32_t)executor;
  if ((rc = ops->identify(&device, mine.name, sizeof(mine.name))) != dmacclSuccess) return rc;
  mine.device = device;
  mine.stageBytes = coreStageBytesParam();
  mine.scratchBytes = channel ? 0 : coreScratchBytesParam();
  mine.ctaPolicy = table->ctaPolicy;
  mine.channelRows = channelRowsOf(table, nranks, channel);
  double timeout = coreParamSeconds("DMACCL_INIT_TIMEOUT", 60, 0);

  coreClique *c = calloc(1, sizeof(*c));
  rankInfo *all = calloc((size_t)nranks, sizeof(*all));
  char(*names)[32] = calloc((size_t)nranks, sizeof(*names));
  dmacclComm_t comm = NULL;
  if (!c || !all || !names) {
    free(c), free(all), free(names);
    return coreError(NULL, dmacclSystemError, "%s: out of memory", call);
  }
  c->mp = 1;
  c->id = coreNewCliqueId();
  uint64_t h = 1469598103934665603ull; /* FNV-1a over the id's bytes */
  for (size_t i = 0; i < sizeof(id->internal); i++)
    h = (h ^ (unsigned char)id->internal[i]) * 1099511628211ull;
  c->setKey = h | 1;
  c->localRank = rank;
  c->nranks = nranks;
  c->alive = 1;
  c->nextLaunch = 1;
  c->table = *table;
  c->timeoutSec = coreParamSeconds("DMACCL_TIMEOUT", 600, 1);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  pthread_mutex_init(&c->p2pLock, NULL);
  if (!(c->comms = calloc((size_t)nranks, sizeof(*c->comms))) ||
      !(c->pids = calloc((size_t)nranks, sizeof(int))) ||
      !(c->channelRows = calloc((size_t)nranks, sizeof(uint64_t)))) {
    rc = coreError(NULL, dmacclSystemError, "%s: out of memory", call);
    goto fail;
  }
  rc = bootInit(id, nranks, rank, timeout, &c->boot, err, sizeof(err));
  if (rc != dmacclSuccess) {
    rc = coreError(NULL, rc, "%s (rank %d of %d): %s", call, rank, nranks, err);
    goto fail;
  }
  if ((rc = bootAllGather(c->boot, &mine, all, sizeof(mine), err, sizeof(err))) != dmacclSuccess ||
      (rc = checkInfos(all, nranks, channel, err, sizeof(err))) != dmacclSuccess) {
    rc = coreError(NULL, rc, "%s (rank %d of %d): %s", call, rank, nranks, err);
    goto fail;
  }
  c->stageBytes = mine.stageBytes;
  c->scratchBytes = mine.scratchBytes;
  c->kernelWait = coreKernelWaitParam(c->table.ctaPolicy);
  for (int r = 0; r < nranks; r++) {
    if (all[r].stageBytes < c->stageBytes) c->stageBytes = all[r].stageBytes;
    if (all[r].scratchBytes < c->scratchBytes) c->scratchBytes = all[r].scratchBytes;
    c->pids[r] = all[r].pid;
    c->channelRows[r] = all[r].channelRows;
    memcpy(names[r], all[r].name, sizeof(names[r]));
  }
  coreSetLineBytes(c);
  for (int r = 0; r < nranks && executor == dmacclExecutorCuda; r++)
    for (int q = r + 1; q < nranks; q++)
      if (!strncmp(names[r], names[q], sizeof(names[r]))) c->gpuShared = 1;
  /* A rank's part: its calls, the host executor's flags, the V forms' arrays. */
  c->boardVecOffset =
      (sizeof(coreSharedRank) + (size_t)PLAN_NUM_PHASES * (size_t)nranks * sizeof(uint32_t) + 63) /
      64 * 64;
  c->boardMailOffset = c->boardVecOffset + (size_t)CORE_BOARD_DEPTH * PLAN_VEC_ARRAYS *
                                               (size_t)nranks * sizeof(uint64_t);
  c->boardRankBytes = c->boardMailOffset + (size_t)nranks * sizeof(coreBoardMail);
  rc = coreShmCreate(c->boot, nranks, c->boardRankBytes, &c->board, err, sizeof(err));
  if (rc != dmacclSuccess) {
    rc = coreError(NULL, rc, "%s (rank %d): shared board: %s", call, rank, err);
    goto fail;
  }
  coreBoardRank(c, rank)->rank = rank;
  coreBoardRank(c, rank)->pid = mine.pid;
  if (!(comm = coreNewComm(c, rank, device, executor))) {
    rc = coreError(NULL, dmacclSystemError, "%s: out of memory", call);
    goto fail;
  }
  c->comms[rank] = comm;
  rc = ops->initRank(comm, names);
  if (rc == dmacclSuccess) rc = coreProgressStart(c);
  /* All or nothing: every rank learns whether every other rank got here. */
  {
    int32_t ok = rc == dmacclSuccess, *oks = calloc((size_t)nranks, sizeof(int32_t));
    dmacclResult_t arc =
        oks ? bootAllGather(c->boot, &ok, oks, sizeof(ok), err, sizeof(err)) : dmacclSystemError;
    int bad = -1;
    for (int r = 0; oks && arc == dmacclSuccess && r < nranks && bad < 0; r++)
      if (!oks[r]) bad = r;
    free(oks);
    if (rc == dmacclSuccess && (arc != dmacclSuccess || bad >= 0)) {
      rc = coreError(
          NULL, arc != dmacclSuccess ? arc : dmacclRemoteError, "%s (rank %d): %s", call, rank,
          arc != dmacclSuccess ? err : "another rank failed to initialize (see its error)");
      coreProgressStop(c);
      ops->fini(comm);
    } else if (rc != dmacclSuccess) {
      coreProgressStop(c);
    }
  }
  if (rc == dmacclSuccess && (rc = coreRegisterComm(comm)) != dmacclSuccess) {
    coreProgressStop(c);
    ops->fini(comm);
  }
  if (rc != dmacclSuccess) goto fail;
  free(all);
  free(names);
  *out = comm;
  CORE_INFO("%s: rank %d of %d (pid %d) on the %s executor, device %d", call, rank, nranks,
            mine.pid, ops->name, device);
  return dmacclSuccess;
fail:
  coreFreeComm(comm);
  coreFreeClique(c);
  free(all);
  free(names);
  return rc;
}
