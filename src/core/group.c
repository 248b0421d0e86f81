/*
 * Groups. Calls inside a group are checked and recorded on the calling
 * thread; the outermost dmacclGroupEnd posts them, interleaved across ranks
 * (first call of every rank, then second, ...), so one thread can issue the
 * calls of every rank of a set without waiting on itself.
 */
#include "../exec/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local int depth;
/* The recorded calls: up to GROUP_INLINE_OPS in the thread's own array (no
 * allocation per group: an eager call in a group of one costs no malloc),
 * more on the heap until the group ends. */
#define GROUP_INLINE_OPS 8
static _Thread_local coreOp inlineOps[GROUP_INLINE_OPS];
static _Thread_local coreOp *ops;
static _Thread_local int nops, capops;
static _Thread_local int posting; /* inside the outermost dmacclGroupEnd's posts */
/* ... and the executors of the calls posted so far (what coreGroupFlush flushes) */
static _Thread_local const struct execOps *used[4];
static _Thread_local int nused;

/* Ranks this thread issued for outside a group, per set. */
#define SOLO_SLOTS 16
static _Thread_local struct {
  unsigned long clique;
  int rank;
} solo[SOLO_SLOTS];
static _Thread_local int nsolo;

/* dmacclCommInitRank calls recorded in the open group (made at its end). */
static _Thread_local coreInitCall **inits;
static _Thread_local int ninits, capinits;

/* The first call that failed inside the open group and its sentence (NCCL's
 * ncclGroupError): the outermost dmacclGroupEnd then issues nothing and
 * returns it. Issuing the others would run a rank's calls without the
 * failed one, so that its peers' calls meet the wrong partners: a retried
 * AllReduce paired with the stale one and returned a wrong sum, a Send went
 * out without the refused Recv and met the next group's Recv. */
static _Thread_local dmacclResult_t failed;
static _Thread_local char failedWhy[400];

int coreGroupActive(void) {
  return depth > 0;
}

void coreGroupFail(dmacclResult_t rc) {
  if (depth == 0 || rc == dmacclSuccess || failed != dmacclSuccess) return;
  failed = rc;
  snprintf(failedWhy, sizeof(failedWhy), "%s", dmacclCommGetLastError(NULL));
}

dmacclResult_t coreGroupRecordInit(coreInitCall *call) {
  if (ninits == capinits) {
    int cap = capinits ? 2 * capinits : 8;
    coreInitCall **n = realloc(inits, (size_t)cap * sizeof(*n));
    if (!n) {
      coreFreeInit(call);
      return coreError(NULL, dmacclSystemError,
                       "dmacclCommInitRank: out of memory recording the call in a group");
    }
    inits = n;
    capinits = cap;
  }
  inits[ninits++] = call;
  return dmacclSuccess;
}

int coreGroupPosting(void) {
  return posting;
}

void coreGroupFlush(dmacclComm_t comm) {
  if (!posting) return;
  int own = 0;
  for (int k = 0; k < nused; k++) {
    own |= used[k] == comm->exec;
    if (used[k]->flush) used[k]->flush(0);
  }
  if (!own && comm->exec->flush) comm->exec->flush(0);
}

int coreGroupHolds(dmacclComm_t comm) {
  for (int i = 0; i < nops; i++)
    if (ops[i].comm == comm) return 1;
  return 0;
}

dmacclResult_t dmacclGroupStart(void) {
  if (depth++ == 0) failed = dmacclSuccess;
  return dmacclSuccess;
}

dmacclResult_t coreGroupRecord(const coreOp *op) {
  if (!ops) {
    ops = inlineOps;
    capops = GROUP_INLINE_OPS;
  }
  if (nops == capops) {
    int cap = 2 * capops;
    coreOp *n = malloc((size_t)cap * sizeof(*n));
    if (!n) return coreError(op->comm, dmacclSystemError, "group: out of memory recording a call");
    memcpy(n, ops, (size_t)nops * sizeof(*n));
    if (ops != inlineOps) free(ops);
    ops = n;
    capops = cap;
  }
  coreOp rec = *op;
  if (op->vec && !(rec.vec = coreVecDup(op)))
    return coreError(op->comm, dmacclSystemError, "group: out of memory recording a call");
  ops[nops++] = rec;
  return dmacclSuccess;
}

/* Drops the recorded calls and their arrays. */
static void dropAll(void) {
  for (int i = 0; i < nops; i++) free((void *)ops[i].vec);
  if (ops != inlineOps) free(ops);
  ops = NULL;
  nops = capops = 0;
}

/* Whether a and b run on different communicators: a Send/Recv, still named
 * by its parent, runs on the channel of its direction and peer. */
static int otherChannel(const coreOp *a, const coreOp *b) {
  return a->comm != b->comm || a->p2p != b->p2p || (a->p2p && a->peer != b->peer);
}

/* Calls that share a stream with a call on another communicator (a send and
 * a receive of one exchange, collectives of several communicators) run side
 * by side, as NCCL runs a group's calls, instead of one after the other on
 * the stream. Calls of one communicator run in its sequence anyway. */
static void markDetached(void) {
  for (int i = 0; i < nops; i++)
    for (int j = 0; j < nops && !ops[i].detach; j++)
      if (j != i && ops[j].stream == ops[i].stream && otherChannel(&ops[i], &ops[j]))
        ops[i].detach = 1;
}

/* Whether comm is a communicator of set c (pointers only: comm may have
 * been destroyed since it was recorded). */
static int ofSet(const coreClique *c, dmacclComm_t comm) {
  for (int r = 0; r < c->nranks; r++)
    if (c->comms[r] && c->comms[r] == comm) return 1;
  return 0;
}

/* AlltoAllv calls recorded to run as Send/Recv pairs (pairs.c). A set whose
 * calls in the group are all such calls, one per communicator, has each
 * replaced by its pieces; any other call of the set in the group would run
 * beside them, though it must follow (or precede) the AlltoAllv on its
 * communicator, so then they run as collectives in their places. Every
 * call of a set gets the same verdict. The communicators whose pieces are
 * issued go to done[] (*ndone; nops entries), each flagged in host[] when
 * its executor has no stream order (waited for before the posts and after
 * them) and in uncaptured[] (its channels are ready once the posts
 * succeed). */
static dmacclResult_t expandPairs(dmacclComm_t *done, unsigned char *host,
                                  unsigned char *uncaptured, int *ndone) {
  *ndone = 0;
  int any = 0, extra = 0;
  for (int i = 0; i < nops; i++) any |= ops[i].pairs;
  if (!any) return dmacclSuccess;
  unsigned char *take = calloc((size_t)nops, 1);
  if (!take) return coreError(NULL, dmacclSystemError, "dmacclGroupEnd: out of memory");
  for (int i = 0; i < nops; i++) {
    if (!ops[i].pairs || take[i]) continue;
    if (coreEnter(ops[i].comm, "dmacclGroupEnd (a recorded call)") != dmacclSuccess) {
      ops[i].pairs = 0; /* destroyed: its post fails */
      continue;
    }
    const coreClique *c = ops[i].comm->clique;
    /* (a self op, a rank's pair of calls to itself, needs no peer's call
     * and is left out: ranks may hold different ones) */
    int alone = 1;
    for (int j = 0; j < nops && alone; j++)
      for (int k = 0; k < j && alone && !ops[j].self && ofSet(c, ops[j].comm); k++)
        alone = ops[k].self || !(ops[k].comm == ops[j].comm && ofSet(c, ops[k].comm));
    for (int j = 0; j < nops && alone; j++)
      alone = !ofSet(c, ops[j].comm) || ops[j].pairs || ops[j].self;
    for (int j = 0; j < nops; j++)
      if (!ops[j].self && ofSet(c, ops[j].comm)) {
        if (alone)
          take[j] = 1, extra += 2 * c->nranks - 2;
        else
          ops[j].pairs = 0;
      }
    coreLeave(ops[i].comm);
  }
  coreOp *out = extra ? malloc((size_t)(nops + extra) * sizeof(*out)) : NULL;
  if (extra && !out) {
    free(take);
    return coreError(NULL, dmacclSystemError, "dmacclGroupEnd: out of memory");
  }
  int m = 0;
  for (int i = 0; i < nops && extra; i++) {
    /* entered while its pieces are made (another thread may destroy it) */
    if (take[i] && coreEnter(ops[i].comm, "dmacclGroupEnd (a recorded call)") != dmacclSuccess)
      take[i] = 0, ops[i].pairs = 0; /* posted whole: its post fails */
    if (!take[i]) {
      out[m++] = ops[i];
      continue;
    }
    m += corePairsPieces(&ops[i], out + m);
    done[*ndone] = ops[i].comm;
    host[*ndone] = !ops[i].comm->exec->launchBeforeReturn;
    uncaptured[(*ndone)++] = !ops[i].capture;
    coreLeave(ops[i].comm);
    free((void *)ops[i].vec);
  }
  free(take);
  if (extra) {
    if (ops != inlineOps) free(ops);
    ops = out;
    nops = capops = m;
  }
  return dmacclSuccess;
}

/* The host executor's order around issued pieces (expandPairs). */
static void drainHost(dmacclComm_t *done, const unsigned char *host, int n) {
  for (int i = 0; i < n; i++)
    if (host[i] && coreEnter(done[i], "dmacclGroupEnd") == dmacclSuccess) {
      coreDrainRank(done[i]);
      coreLeave(done[i]);
    }
}

/* A self op runs on the calling thread where the executor has no stream
 * order (the host executor's copy at the post): the rank's earlier work,
 * which may still read or write its buffers, is waited for first, as
 * around an AlltoAllv's pieces (drainHost). */
static void drainForSelf(void) {
  for (int i = 0; i < nops; i++) {
    if (!ops[i].self || coreEnter(ops[i].comm, "dmacclGroupEnd") != dmacclSuccess) continue;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = ops[j].self && ops[j].comm == ops[i].comm;
    if (!seen && !ops[i].comm->exec->launchBeforeReturn) coreDrainRank(ops[i].comm);
    coreLeave(ops[i].comm);
  }
}

/* A group's end's scratch array of n zeroed bytes: buf (cap bytes, on
 * the caller's stack) when it fits, else the heap (unscratch frees it). */
#define GROUP_STACK_OPS 16
static void *scratch(void *buf, size_t cap, size_t n) {
  if (n > cap) return calloc(1, n);
  memset(buf, 0, n);
  return buf;
}
static void unscratch(void *p, const void *buf) {
  if (p != buf) free(p);
}

static void dropInits(void) {
  for (int i = 0; i < ninits; i++) coreFreeInit(inits[i]);
  free(inits);
  inits = NULL, ninits = capinits = 0;
}

dmacclResult_t dmacclGroupDrop(void) {
  if (depth == 0)
    return coreError(NULL, dmacclInvalidUsage,
                     "dmacclGroupDrop: no group is open (call dmacclGroupStart first)");
  if (--depth > 0) return dmacclSuccess;
  dropInits();
  dropAll();
  failed = dmacclSuccess;
  return dmacclSuccess;
}

dmacclResult_t dmacclGroupEnd(void) {
  if (depth == 0)
    return coreError(NULL, dmacclInvalidUsage,
                     "dmacclGroupEnd: no group is open (call dmacclGroupStart first)");
  if (--depth > 0) return dmacclSuccess;
  if (failed != dmacclSuccess) {
    dmacclResult_t rc = failed;
    failed = dmacclSuccess;
    dropAll();
    dropInits();
    return coreError(NULL, rc,
                     "dmacclGroupEnd: a call inside the group failed, so none of its calls was "
                     "issued or made (the first failure: %s)",
                     failedWhy);
  }
  /* Two ranks of one set of processes on the CUDA executor cannot be driven
   * by one thread: a call of one may wait inside for its peers' calls
   * (launch_mp.c), the other's among them. Refused before anything is made
   * or issued (it would wait on itself). */
  int several = 0; /* (calls on one communicator, the common group, lock nothing here) */
  for (int i = 1; i < nops && !several; i++) several = ops[i].comm != ops[0].comm;
  for (int i = 0, same = -1, ri = 0, rj = 0; several && i < nops && same < 0; i++) {
    /* (a communicator destroyed since its call was recorded is left to the posts below) */
    if (coreEnter(ops[i].comm, "dmacclGroupEnd") != dmacclSuccess) continue;
    const coreClique *a = ops[i].comm->clique;
    for (int j = i + 1; a->mp && ops[i].comm->executor == dmacclExecutorCuda && j < nops; j++) {
      if (ops[j].comm == ops[i].comm || coreEnter(ops[j].comm, "dmacclGroupEnd") != dmacclSuccess)
        continue;
      if (ops[j].comm->clique->setKey == a->setKey && ops[j].comm->rank != ops[i].comm->rank)
        same = j, ri = ops[i].comm->rank, rj = ops[j].comm->rank;
      coreLeave(ops[j].comm);
      if (same >= 0) break;
    }
    coreLeave(ops[i].comm);
    if (same >= 0) {
      dropAll();
      dropInits();
      return coreError(NULL, dmacclInvalidUsage,
                       "dmacclGroupEnd: this thread's group issues for ranks %d and %d of one "
                       "dmacclCommInitRank set on the CUDA executor; a call of such a rank may "
                       "wait for its peers' calls, so one thread cannot drive two of them: use "
                       "a thread per rank, or dmacclCommInitAll (nothing was made or issued)",
                       ri, rj);
    }
  }
  /* Send/Recv calls to oneself become copies; one without its match (or a
   * pair that disagrees) refuses the group before anything is made. */
  char why[320];
  dmacclResult_t paired = coreP2pPairSelf(ops, &nops, why, sizeof(why));
  if (paired != dmacclSuccess) {
    dropAll();
    dropInits();
    return coreError(NULL, paired, "%s", why);
  }
  /* Communicators first (the group's calls cannot use them: they did not
   * exist when the calls were checked); the calls go on whatever became of
   * them, as after a call refused inside a group. */
  dmacclResult_t made = dmacclSuccess;
  if (ninits) {
    coreInitCall **list = inits;
    int n = ninits;
    inits = NULL, ninits = capinits = 0;
    made = coreRunInits(list, n);
    if (!nops) return made;
  }
  /* nops grows with expansion, but only AlltoAllv calls (one each) are listed */
  dmacclComm_t doneBuf[GROUP_STACK_OPS + 1];
  unsigned char hostBuf[2 * (GROUP_STACK_OPS + 1)];
  uint64_t keyBuf[2 * GROUP_STACK_OPS + 1];
  int postedBuf[GROUP_STACK_OPS + 1];
  dmacclComm_t *done = scratch(doneBuf, sizeof(doneBuf), ((size_t)nops + 1) * sizeof(*done));
  unsigned char *host = scratch(hostBuf, sizeof(hostBuf), 2 * ((size_t)nops + 1));
  unsigned char *uncaptured = host ? host + nops + 1 : NULL;
  int ndone = 0;
  dmacclResult_t expanded =
      done && host ? expandPairs(done, host, uncaptured, &ndone)
                   : coreError(NULL, dmacclSystemError, "dmacclGroupEnd: out of memory");
  if (expanded != dmacclSuccess) {
    unscratch(done, doneBuf), unscratch(host, hostBuf);
    dropAll();
    return expanded;
  }
  drainHost(done, host, ndone);
  drainForSelf();
  /* Order: collectives first, by position among the same communicator's
   * calls, then call order (one thread may post for every rank of a set
   * without waiting on itself); then Send/Recv, by channel, position and
   * call order, so that every rank posts them in one order (p2p.c). */
  uint64_t *key = scratch(keyBuf, sizeof(keyBuf), (2 * (size_t)nops + 1) * sizeof(uint64_t));
  if (!key) {
    unscratch(done, doneBuf), unscratch(host, hostBuf);
    dropAll(); /* the group is dropped, not left for the next one */
    return coreError(NULL, dmacclSystemError, "dmacclGroupEnd: out of memory");
  }
  uint64_t *rankIdx = key + nops;
  for (int i = 0; i < nops; i++) {
    key[i] = coreP2pOrderKey(&ops[i]);
    for (int j = 0; j < i; j++)
      if (ops[j].comm == ops[i].comm) rankIdx[i]++;
  }
  for (int i = 1; i < nops; i++)
    for (int j = i;
         j > 0 && (key[j] < key[j - 1] || (key[j] == key[j - 1] && rankIdx[j] < rankIdx[j - 1]));
         j--) {
      coreOp t = ops[j];
      ops[j] = ops[j - 1];
      ops[j - 1] = t;
      uint64_t tk = key[j], ti = rankIdx[j];
      key[j] = key[j - 1], rankIdx[j] = rankIdx[j - 1];
      key[j - 1] = tk, rankIdx[j - 1] = ti;
    }
  unscratch(key, keyBuf);
  markDetached();
  dmacclResult_t first = dmacclSuccess;
  int *posted = scratch(postedBuf, sizeof(postedBuf), ((size_t)nops + 1) * sizeof(int));
  if (!posted) {
    unscratch(done, doneBuf), unscratch(host, hostBuf);
    dropAll();
    return coreError(NULL, dmacclSystemError, "dmacclGroupEnd: out of memory");
  }
  /* A communicator destroyed (by another thread) since a call was recorded
   * fails that call; the others go on. While posting, an executor may hold
   * the launches of the group's calls and merge them (execOps.flush). */
  nused = 0;
  posting = 1;
  for (int i = 0; i < nops; i++) {
    dmacclResult_t rc = coreEnter(ops[i].comm, "dmacclGroupEnd (a recorded call)");
    /* A Send/Recv joins its channel now (made in channel order). */
    if (rc == dmacclSuccess && ops[i].p2p && (rc = coreP2pBind(&ops[i])) != dmacclSuccess)
      coreLeave(ops[i].comm);
    if (rc == dmacclSuccess) {
      const execOps *x = ops[i].comm->exec;
      int k = 0;
      while (k < nused && used[k] != x) k++;
      if (k == nused && nused < (int)(sizeof(used) / sizeof(used[0]))) used[nused++] = x;
      rc = corePostNoAttach(&ops[i]);
      posted[i] = rc == dmacclSuccess ? 1 : -1; /* -1: entered, not posted */
    }
    if (rc != dmacclSuccess && first == dmacclSuccess) first = rc;
  }
  posting = 0;
  /* What an executor held is issued before any call joins its stream. */
  for (int k = 0; k < nused; k++) {
    dmacclResult_t rc = used[k]->flush ? used[k]->flush(1) : dmacclSuccess;
    if (rc != dmacclSuccess && first == dmacclSuccess) first = rc;
  }
  /* Calls join their streams once every call of the group is in. */
  for (int i = 0; i < nops; i++) {
    dmacclResult_t rc = posted[i] == 1 ? coreAttach(&ops[i]) : dmacclSuccess;
    if (rc != dmacclSuccess && first == dmacclSuccess) first = rc;
    if (posted[i]) coreLeave(ops[i].comm);
  }
  unscratch(posted, postedBuf);
  /* After a failed post a peer's matching piece may never launch: no wait
   * then, and the channels are not taken as ready. */
  if (first == dmacclSuccess) {
    drainHost(done, host, ndone);
    for (int i = 0; i < ndone; i++)
      if (uncaptured[i] && coreEnter(done[i], "dmacclGroupEnd") == dmacclSuccess) {
        done[i]->pairsReady = 1;
        coreLeave(done[i]);
      }
  }
  unscratch(done, doneBuf), unscratch(host, hostBuf);
  /* The list's heap lives only while a group is open: a thread that ends leaves nothing. */
  dropAll();
  return first != dmacclSuccess ? first : made;
}

dmacclResult_t coreCheckSoloUse(dmacclComm_t comm, const char *call) {
  /* A set of processes has one rank here: nothing to confuse. */
  if (comm->nranks == 1 || comm->clique->mp) return dmacclSuccess;
  for (int i = 0; i < nsolo && i < SOLO_SLOTS; i++) {
    if (solo[i].clique != comm->clique->id) continue;
    if (solo[i].rank == comm->rank) return dmacclSuccess;
    return coreError(comm, dmacclInvalidUsage,
                     "%s: this thread already issued a call for rank %d outside a group and now "
                     "issues one for rank %d of the same dmacclCommInitAll set; one thread driving "
                     "several GPUs must put their calls inside dmacclGroupStart/dmacclGroupEnd "
                     "(nothing was issued)",
                     call, solo[i].rank, comm->rank);
  }
  int slot = nsolo++ % SOLO_SLOTS;
  solo[slot].clique = comm->clique->id;
  solo[slot].rank = comm->rank;
  return dmacclSuccess;
}
