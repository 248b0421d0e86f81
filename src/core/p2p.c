/*
 * Send and Recv. Collectives are sequenced per communicator: every rank
 * calls them in one order. Sends and receives involve two ranks, matched in
 * order per direction (the k-th dmacclSend from a to b meets the k-th
 * dmacclRecv on b from a), so each direction gets a channel of its own: a
 * 2-rank communicator made at first use, whose rank 0 is the sender and rank
 * 1 the receiver, as PyTorch gives NCCL's point-to-point calls a
 * communicator per pair. A Send/Recv is then a 2-rank Broadcast from rank 0
 * on the channel (in place at the sender), and inherits everything a
 * collective has: the staged and direct algorithms, graph capture, both
 * executors, one process or ranks as processes, the watchdog.
 *
 * Making a channel. One process: the first of the two ranks to use it makes
 * both ends (coreMakeSet) under the set's p2pLock. Ranks as processes: both
 * directions between two ranks at once, in one rendezvous: the lower rank
 * makes two unique ids and publishes them in its mailbox on the parent's
 * board (coreBoardMail), the other waits for them, and both join the two
 * 2-rank sets (coreInitRankWith) on the parent's device.
 *
 * Launch. In a group, a rank's sends and receives that move lines
 * (stagell) go out as one kernel on the caller's stream, not one per
 * channel (the CUDA executor's held launches, cuda.c): a Send and a Recv
 * with a peer cost one launch. Not merged: two on one channel, a channel's
 * first operation in a CUDA graph (its entry handshake), calls on the
 * legacy or per-thread stream. The group issues what is held before it
 * waits for a peer, e.g. to make a channel (coreGroupFlush).
 *
 * Order. Channels of one GPU share its queues, so every rank must issue
 * their work in one order (docs/architecture.md, rule 5): a group posts its
 * Send/Recv calls after its collectives, ordered by pair of ranks (the
 * pairs in the rounds of a round-robin schedule, then the lower rank's
 * direction first) and then by call (coreP2pOrderKey, group.c). Outside a group, a
 * call may return only once its peer has made the matching call (always
 * between threads of one process; between processes above the staged
 * sizes): the sends and receives of an exchange belong in one group, as
 * NCCL's documentation also asks.
 */
#include "../exec/exec.h"
#include "../boot/boot.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Copies the calling thread's last sentence onto comm (errors of a channel,
 * or of the parent's memory lookups, are reported on the parent). */
static dmacclResult_t onParent(dmacclComm_t comm, dmacclResult_t rc) {
  if (rc == dmacclSuccess) return rc;
  char why[sizeof(comm->lastError)];
  snprintf(why, sizeof(why), "%s", dmacclCommGetLastError(NULL));
  return coreError(comm, rc, "%s", why);
}

static void linkChannel(dmacclComm_t ch, dmacclComm_t parent, int src, int dst) {
  ch->parent = parent;
  ch->parentRank[0] = src;
  ch->parentRank[1] = dst;
}

/* The channel array of comm (lock held). */
static int ensureArray(dmacclComm_t comm) {
  if (!comm->p2p) comm->p2p = calloc(2 * (size_t)comm->nranks, sizeof(*comm->p2p));
  return comm->p2p != NULL;
}

/* One process: both ends at once. */
static dmacclResult_t makeLocal(dmacclComm_t comm, int src, int dst, const char *call) {
  coreClique *c = comm->clique;
  dmacclComm_t a = c->comms[src], b = c->comms[dst];
  if (!a || !b)
    return coreError(comm, dmacclInvalidUsage, "%s: rank %d's communicator was destroyed", call,
                     a ? dst : src);
  if (!ensureArray(a) || !ensureArray(b))
    return coreError(comm, dmacclSystemError, "%s: out of memory", call);
  int devs[2] = {a->device, b->device};
  dmacclComm_t made[2];
  planTable t = c->table;
  planTableForChannel(&t, c->nranks);
  dmacclResult_t rc = coreMakeSet(made, 2, a->executor == dmacclExecutorCuda ? devs : NULL,
                                  a->executor, &t, 1, call);
  if (rc != dmacclSuccess) {
    char why[sizeof(comm->lastError)];
    snprintf(why, sizeof(why), "%s", dmacclCommGetLastError(NULL));
    return coreError(comm, rc, "%s: making the channel from rank %d to rank %d: %s", call, src, dst,
                     why);
  }
  linkChannel(made[0], a, src, dst);
  linkChannel(made[1], b, src, dst);
  a->p2p[dst] = made[0];
  b->p2p[c->nranks + src] = made[1];
  CORE_INFO("%s: channel from rank %d to rank %d made", call, src, dst);
  return dmacclSuccess;
}

/* Ranks as processes: this rank's ends of both channels between it and
 * `peer`, after a rendezvous through the board: the lower rank makes the two
 * unique ids and publishes them; both join the channel from the lower rank
 * first. Both directions at once, so that two ranks that first send to each
 * other (outside a group) meet in one rendezvous. */
static dmacclResult_t makeRemote(dmacclComm_t comm, int peer, const char *call) {
  coreClique *c = comm->clique;
  int me = comm->rank, n = comm->nranks, lo = me < peer ? me : peer, hi = me ^ peer ^ lo;
  /* Both ranks know both digests (init): they refuse at once, with no
   * rendezvous the peer would never join (comm_rank.c checks again when a
   * channel's set is made) */
  if (c->channelRows && c->channelRows[me] != c->channelRows[peer])
    return coreError(comm, dmacclInvalidArgument,
                     "%s: ranks %d and %d select different algorithms for Send/Recv between "
                     "them (their communicators' Broadcast rows differ: DMACCL_ALGO, "
                     "DMACCL_TUNE_FILE or the config must agree); no channel was made",
                     call, lo, hi);
  if (!ensureArray(comm) ||
      (!comm->p2pSeen && !(comm->p2pSeen = calloc((size_t)n, sizeof(*comm->p2pSeen)))))
    return coreError(comm, dmacclSystemError, "%s: out of memory", call);
  dmacclUniqueId id[2];
  char err[256];
  dmacclResult_t rc;
  coreBoardMail *m = coreBoardMailOf(c, lo, hi);
  if (me == lo) {
    for (int k = 0; k < 2; k++)
      if ((rc = bootIdCreate(&id[k], err, sizeof(err))) != dmacclSuccess)
        return coreError(comm, rc, "%s: channels with rank %d: %s", call, peer, err);
    memcpy(m->id, id, sizeof(id));
    atomic_fetch_add_explicit(&m->gen, 1, memory_order_release);
  } else {
    double start = coreNowSec(), limit = coreParamSeconds("DMACCL_INIT_TIMEOUT", 60, 0);
    uint64_t gen;
    for (int round = 0;
         (gen = atomic_load_explicit(&m->gen, memory_order_acquire)) <= comm->p2pSeen[lo];
         round++) {
      if (__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE))
        return coreError(comm, dmacclInvalidUsage, "%s: the communicator is being aborted", call);
      if (__atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) != dmacclSuccess)
        return coreError(comm, c->broken, "%s: the communicator is broken: %s", call, c->brokenWhy);
      if (coreNowSec() - start > limit)
        return coreError(comm, dmacclTimeout,
                         "%s: rank %d made no Send/Recv call with this rank (%d) within %.0f s "
                         "(DMACCL_INIT_TIMEOUT): their channels were never made",
                         call, lo, me, limit);
      if (round < 1000)
        sched_yield();
      else
        usleep(100);
    }
    memcpy(id, m->id, sizeof(id));
    comm->p2pSeen[lo] = gen;
  }
  planTable t = c->table;
  planTableForChannel(&t, c->nranks);
  for (int k = 0; k < 2; k++) { /* lo -> hi, then hi -> lo */
    int src = k ? hi : lo, dst = k ? lo : hi;
    dmacclComm_t ch = NULL;
    rc = coreInitRankWith(&ch, 2, &id[k], me == src ? 0 : 1, comm->executor, &t, comm->device, 1,
                          call);
    if (rc != dmacclSuccess) {
      char why[sizeof(comm->lastError)];
      snprintf(why, sizeof(why), "%s", dmacclCommGetLastError(NULL));
      return coreError(comm, rc, "%s: making the channel from rank %d to rank %d: %s", call, src,
                       dst, why);
    }
    linkChannel(ch, comm, src, dst);
    comm->p2p[me == src ? dst : n + src] = ch;
  }
  CORE_INFO("%s: channels between ranks %d and %d made (rank %d's ends)", call, lo, hi, me);
  return dmacclSuccess;
}

/* comm's end of the channel src -> dst (comm's rank is one of them), made
 * if it does not exist yet. */
static dmacclResult_t channel(dmacclComm_t comm, int src, int dst, int capture, const char *call,
                              dmacclComm_t *out) {
  coreClique *c = comm->clique;
  int slot = comm->rank == src ? dst : comm->nranks + src;
  pthread_mutex_lock(&c->p2pLock);
  dmacclResult_t rc = dmacclSuccess;
  if ((!comm->p2p || !comm->p2p[slot]) && capture)
    /* Making a channel allocates and (between processes) meets the peer:
     * not work a graph capture may contain. */
    rc = coreError(comm, dmacclInvalidUsage,
                   "%s: the first Send/Recv between ranks %d and %d is being captured into a "
                   "CUDA graph; make one outside the capture first (a warm-up, as before any "
                   "capture), which sets up their channel",
                   call, src, dst);
  else if (!comm->p2p || !comm->p2p[slot]) {
    coreGroupFlush(comm); /* making a channel meets the peer and allocates */
    rc = c->mp ? makeRemote(comm, comm->rank == src ? dst : src, call)
               : makeLocal(comm, src, dst, call);
  }
  *out = rc == dmacclSuccess ? comm->p2p[slot] : NULL;
  pthread_mutex_unlock(&c->p2pLock);
  return rc;
}

dmacclResult_t coreP2pMake(dmacclComm_t comm, int peer, const char *call) {
  dmacclComm_t ch;
  dmacclResult_t rc = channel(comm, comm->rank, peer, 0, call, &ch);
  if (rc == dmacclSuccess) rc = channel(comm, peer, comm->rank, 0, call, &ch);
  return rc;
}

dmacclResult_t coreP2pBind(coreOp *op) {
  dmacclComm_t comm = op->comm, ch = NULL;
  int me = comm->rank, send = op->p2p == 1;
  dmacclResult_t rc =
      channel(comm, send ? me : op->peer, send ? op->peer : me, op->capture, op->call, &ch);
  if (rc == dmacclSuccess) rc = coreEnter(ch, op->call);
  if (rc != dmacclSuccess) return onParent(comm, rc);
  op->comm = ch;
  op->root = 0;
  coreLeave(comm);
  return dmacclSuccess;
}

dmacclResult_t coreP2pCheck(coreOp *op, const char *call) {
  dmacclComm_t comm = op->comm;
  int peer = op->peer;
  if (comm->parent)
    return coreError(comm, dmacclInvalidUsage, "%s: comm is a Send/Recv channel", call);
  if (peer < 0 || peer >= comm->nranks)
    return coreError(comm, dmacclInvalidArgument, "%s: peer %d is not a rank (0 to %d)", call, peer,
                     comm->nranks - 1);
  if (peer == comm->rank && !op->selfP2p)
    return coreError(comm, dmacclInvalidArgument,
                     "%s: peer %d is this rank itself; a Send/Recv to oneself runs only inside a "
                     "group that holds its matching Recv/Send (not alone, nor as a persistent "
                     "request)",
                     call, peer);
  op->root = op->p2p == 1 ? comm->rank : peer;
  return coreCheckCollArgs(op, call);
}

dmacclResult_t coreP2pPairSelf(coreOp *ops, int *n, char *err, size_t errLen) {
  int any = 0;
  for (int i = 0; i < *n; i++) any |= ops[i].selfP2p;
  if (!any) return dmacclSuccess;
  /* match[i]: for a Send, the index of its Recv; -1 unmatched */
  int stackMatch[64];
  int *match = *n <= 64 ? stackMatch : malloc((size_t)*n * sizeof(int));
  if (!match) {
    snprintf(err, errLen, "dmacclGroupEnd: out of memory pairing Send/Recv calls to oneself");
    return dmacclSystemError;
  }
  dmacclResult_t rc = dmacclSuccess;
  for (int i = 0; i < *n; i++) match[i] = -1;
  for (int side = 1; side <= 2 && rc == dmacclSuccess; side++)
    for (int i = 0, k; i < *n && rc == dmacclSuccess; i++) {
      if (!ops[i].selfP2p || ops[i].p2p != side) continue;
      /* its place among this communicator's calls to itself of its kind,
       * and the call of the other kind in the same place */
      k = 0;
      for (int j = 0; j < i; j++)
        k += ops[j].selfP2p && ops[j].p2p == side && ops[j].comm == ops[i].comm;
      int m = -1;
      for (int j = 0, seen = 0; j < *n && m < 0; j++)
        if (ops[j].selfP2p && ops[j].p2p == 3 - side && ops[j].comm == ops[i].comm && seen++ == k)
          m = j;
      const coreOp *s = side == 1 ? &ops[i] : m >= 0 ? &ops[m] : NULL;
      const coreOp *r = side == 2 ? &ops[i] : m >= 0 ? &ops[m] : NULL;
      if (m < 0) {
        snprintf(err, errLen,
                 "dmacclGroupEnd: rank %d's %s %s itself (its call %d of that kind in the group) "
                 "has no matching %s %s itself in the group; nothing was made or issued",
                 ops[i].peer, side == 1 ? "dmacclSend" : "dmacclRecv", side == 1 ? "to" : "from",
                 k + 1, side == 1 ? "dmacclRecv" : "dmacclSend", side == 1 ? "from" : "to");
        rc = dmacclInvalidUsage;
      } else if (side == 1 && (s->count != r->count || s->datatype != r->datatype)) {
        snprintf(err, errLen,
                 "dmacclGroupEnd: rank %d's Send to itself (call %d of that kind in the group) "
                 "has %zu elements of type %d, its matching Recv %zu of type %d; nothing was made "
                 "or issued",
                 ops[i].peer, k + 1, s->count, (int)s->datatype, r->count, (int)r->datatype);
        rc = dmacclInvalidArgument;
      } else if (side == 1 && s->stream != r->stream) {
        snprintf(err, errLen,
                 "dmacclGroupEnd: rank %d's Send to itself (call %d of that kind in the group) "
                 "and its matching Recv are on different streams; dmaccl copies a pair to "
                 "oneself on one stream: issue both on it (nothing was made or issued)",
                 ops[i].peer, k + 1);
        rc = dmacclInvalidUsage;
      } else if (side == 1) {
        match[i] = m;
      }
    }
  if (rc == dmacclSuccess) {
    /* each Recv becomes its pair's copy, in its place */
    for (int i = 0; i < *n; i++) {
      if (!ops[i].selfP2p || ops[i].p2p != 1) continue;
      coreOp *r = &ops[match[i]];
      size_t bytes = r->count * coreTypeSize(r->datatype);
      int none = !bytes || ops[i].sendbuff == r->recvbuff; /* nothing to copy */
      *r = (coreOp){.comm = r->comm,
                    .coll = r->coll,
                    .call = r->call,
                    .sendbuff = ops[i].sendbuff,
                    .recvbuff = r->recvbuff,
                    .count = none ? 0 : bytes,
                    .datatype = dmacclUint8,
                    .stream = r->stream,
                    .capture = r->capture,
                    .captureId = r->captureId,
                    .self = 1};
    }
    int out = 0;
    for (int i = 0; i < *n; i++)
      if (!(ops[i].selfP2p && ops[i].p2p == 1) && !(ops[i].self && !ops[i].count))
        ops[out++] = ops[i];
    *n = out;
  }
  if (match != stackMatch) free(match);
  return rc;
}

dmacclResult_t coreP2pPost(coreOp *op, const char *call) {
  dmacclComm_t parent = op->comm;
  dmacclResult_t rc = coreP2pBind(op);
  if (rc != dmacclSuccess) {
    coreLeave(parent);
    return rc;
  }
  /* op->comm is the channel's end now, entered; the parent was left. */
  rc = coreCheckSoloUse(op->comm, call);
  if (rc == dmacclSuccess) rc = corePost(op);
  coreLeave(op->comm);
  return onParent(parent, rc);
}

/* A Broadcast from the sender, in place there; the receiver's send buffer is
 * unused. Checked on the parent (same device, executor and stream rules),
 * then bound to the channel: at once, or at the group's end in channel order
 * (making a channel between processes is a rendezvous). */
coreOp coreP2pOp(int send, void *buf, size_t count, dmacclDataType_t datatype, int peer,
                 dmacclComm_t comm) {
  return (coreOp){.comm = comm,
                  .coll = PLAN_COLL_BROADCAST,
                  .call = send ? "dmacclSend" : "dmacclRecv",
                  .sendbuff = send ? buf : NULL,
                  .recvbuff = buf,
                  .count = count,
                  .datatype = datatype,
                  .p2p = send ? 1 : 2,
                  .peer = peer};
}

static dmacclResult_t p2pIn(int send, void *buf, size_t count, dmacclDataType_t datatype, int peer,
                            dmacclComm_t comm, cudaStream_t stream) {
  const char *call = send ? "dmacclSend" : "dmacclRecv";
  dmacclResult_t rc = coreEnter(comm, call);
  if (rc != dmacclSuccess) return rc;
  coreOp op = coreP2pOp(send, buf, count, datatype, peer, comm);
  op.stream = stream;
  op.selfP2p = peer == comm->rank && coreGroupActive();
  if (op.selfP2p) op.sendbuff = buf; /* a Recv from itself is checked as the root's, in place */
  rc = coreP2pCheck(&op, call);
  if (rc == dmacclSuccess && coreGroupActive())
    rc = coreGroupRecord(&op);
  else if (rc == dmacclSuccess)
    return coreP2pPost(&op, call); /* leaves comm */
  coreLeave(comm);
  return rc;
}

/* Inside a group a refused call fails the group (group.c, coreGroupFail). */
static dmacclResult_t p2p(int send, void *buf, size_t count, dmacclDataType_t datatype, int peer,
                          dmacclComm_t comm, cudaStream_t stream) {
  dmacclResult_t rc = p2pIn(send, buf, count, datatype, peer, comm, stream);
  coreGroupFail(rc);
  return rc;
}

dmacclResult_t dmacclSend(const void *sendbuff, size_t count, dmacclDataType_t datatype, int peer,
                          dmacclComm_t comm, cudaStream_t stream) {
  return p2p(1, (void *)sendbuff, count, datatype, peer, comm, stream);
}

dmacclResult_t dmacclRecv(void *recvbuff, size_t count, dmacclDataType_t datatype, int peer,
                          dmacclComm_t comm, cudaStream_t stream) {
  return p2p(0, recvbuff, count, datatype, peer, comm, stream);
}

/* The channels of comm that exist now (the array only grows under the lock). */
static int channels(dmacclComm_t comm, dmacclComm_t *out) {
  int k = 0;
  pthread_mutex_lock(&comm->clique->p2pLock);
  for (int i = 0; comm->p2p && i < 2 * comm->nranks; i++)
    if (comm->p2p[i]) out[k++] = comm->p2p[i];
  pthread_mutex_unlock(&comm->clique->p2pLock);
  return k;
}

/* Names the channel in an error carried to its parent. */
static dmacclResult_t channelError(dmacclComm_t comm, dmacclComm_t ch, dmacclResult_t rc,
                                   const char *call) {
  const char *why = coreLastError(ch), *prefix = "dmacclCommSynchronize: ";
  if (!strncmp(why, prefix, strlen(prefix))) why += strlen(prefix);
  return coreError(comm, rc, "%s: Send/Recv from rank %d to rank %d: %s", call, ch->parentRank[0],
                   ch->parentRank[1], why);
}

dmacclResult_t coreP2pSync(dmacclComm_t comm, const char *call) {
  if (!comm->p2p) return dmacclSuccess;
  dmacclComm_t *ch = malloc(2 * (size_t)comm->nranks * sizeof(*ch));
  if (!ch) return coreError(comm, dmacclSystemError, "%s: out of memory", call);
  int k = channels(comm, ch);
  dmacclResult_t first = dmacclSuccess;
  for (int i = 0; i < k; i++) {
    dmacclResult_t rc = dmacclCommSynchronize(ch[i]);
    if (rc != dmacclSuccess && first == dmacclSuccess) first = channelError(comm, ch[i], rc, call);
  }
  free(ch);
  return first;
}

/* Waits for what comm's rank has posted so far, on comm and its channels,
 * leaving any error for the rank's next synchronize. */
static void drainOne(dmacclComm_t comm) {
  uint64_t posted = comm->posted;
  if (coreWaitLaunched(comm, posted) == dmacclSuccess) (void)comm->exec->sync(comm, posted);
}

void coreDrainRank(dmacclComm_t comm) {
  drainOne(comm);
  if (!comm->p2p) return;
  dmacclComm_t *ch = malloc(2 * (size_t)comm->nranks * sizeof(*ch));
  int k = ch ? channels(comm, ch) : 0;
  for (int i = 0; i < k; i++) drainOne(ch[i]);
  free(ch);
}

dmacclResult_t coreP2pAsyncError(dmacclComm_t comm) {
  if (!comm->p2p) return dmacclSuccess;
  dmacclResult_t e = dmacclSuccess;
  pthread_mutex_lock(&comm->clique->p2pLock);
  for (int i = 0; i < 2 * comm->nranks && e == dmacclSuccess; i++) {
    dmacclComm_t ch = comm->p2p[i];
    if (!ch) continue;
    e = __atomic_load_n(&ch->asyncError, __ATOMIC_ACQUIRE);
    if (e == dmacclSuccess) e = __atomic_load_n(&ch->opError, __ATOMIC_ACQUIRE);
  }
  pthread_mutex_unlock(&comm->clique->p2pLock);
  return e;
}

void coreP2pTeardown(dmacclComm_t comm, int abort) {
  if (!comm->p2p) return;
  for (int i = 0; i < 2 * comm->nranks; i++) {
    dmacclComm_t ch = comm->p2p[i];
    if (!ch || coreUnregisterComm(ch) != 0) continue;
    pthread_mutex_lock(&comm->clique->p2pLock);
    comm->p2p[i] = NULL;
    pthread_mutex_unlock(&comm->clique->p2pLock);
    coreTeardown(ch, abort);
  }
}

/* The round of the pair lo < hi in a round-robin schedule of n ranks (the
 * circle method): in each round every rank has one partner (or none where
 * n is odd), so a group whose Send/Recv calls follow the rounds, as an
 * AlltoAllv's pairs do, never has two ranks writing one rank at once.
 * With m = n where n is odd, n - 1 where it is even (m is odd): rank m
 * (the last, where n is even) meets rank a in round a; ranks a, b < m meet
 * in the round r with 2r = a + b (mod m). */
static uint64_t pairRound(int lo, int hi, int n) {
  int m = n % 2 ? n : n - 1;
  if (hi == m) return (uint64_t)lo;
  return (uint64_t)(((lo + hi) % m) * ((m + 1) / 2) % m);
}

uint64_t coreP2pOrderKey(const coreOp *op) {
  if (op->self) return UINT64_MAX; /* after its Send/Recv calls (pairs.c) */
  if (!op->p2p) return 0;
  int n = op->comm->nranks, me = op->comm->rank;
  int src = op->p2p == 1 ? me : op->peer, dst = op->p2p == 1 ? op->peer : me;
  int lo = src < dst ? src : dst, hi = src ^ dst ^ lo;
  uint64_t pair = (pairRound(lo, hi, n) * (uint64_t)n + (uint64_t)lo) * (uint64_t)n + (uint64_t)hi;
  return 1 + 2 * pair + (uint64_t)(src > dst);
}
