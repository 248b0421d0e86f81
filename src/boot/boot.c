#define _GNU_SOURCE /* accept4 */
/* Bootstrap over an abstract UNIX-domain socket; see boot.h. */
#include "boot.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BOOT_MAGIC 0xb0075d3bu /* 3b: the hello and the exchange headers carry `until` */

/* What the unique id holds. The socket name is visible to every user of the
 * host (/proc/net/unix); the secret is not: only holders of the id have it. */
#define BOOT_SECRET_BYTES 16
typedef struct {
  uint32_t magic;
  uint32_t version;
  char name[64]; /* abstract socket name, without the leading NUL */
  unsigned char secret[BOOT_SECRET_BYTES];
} bootId;

_Static_assert(sizeof(bootId) <= sizeof(dmacclUniqueId), "bootId must fit a dmacclUniqueId");

struct bootState {
  unsigned char secret[BOOT_SECRET_BYTES];
  int nranks, rank;
  double timeoutSec;
  int listenFd; /* rank 0 only */
  int *peers;   /* rank 0: connection of every rank (its own is -1) */
  int root;     /* other ranks: connection to rank 0 */
  uint64_t seq; /* exchanges this rank has begun */
};

/* What precedes an exchange's bytes, both ways: the exchange's number on the
 * sender (each rank counts its own), and the byte count (the answer's
 * EX_FAILED when the exchange failed). A message of an exchange the receiver
 * has already given up (seq below its own) is read and dropped, so a rank
 * that came late, or a message rank 0 left unread when it gave up, does not
 * put the ranks' later exchanges out of step.
 * `until`, in a rank's message: the end of its timeout (CLOCK_MONOTONIC
 * seconds: the ranks share the host's clock). Rank 0's answer is the one
 * verdict: it fails the exchange when it is not complete by the earliest
 * `until` of the ranks (its own included), and a rank waits for that
 * answer a timeout past its own `until` (the answer's time to arrive), so
 * no rank gives up on an exchange that rank 0 completes. */
typedef struct {
  uint64_t seq, bytes;
  double until;
} exHeader;
#define EX_FAILED UINT64_MAX

typedef struct {
  uint32_t magic;
  int32_t nranks, rank, pid;
  unsigned char secret[BOOT_SECRET_BYTES];
  double until; /* the end of this rank's timeout (CLOCK_MONOTONIC), as exHeader's */
} bootHello;

/* Rank 0's answer to a hello: 0 and nothing more, or an error code and a sentence. */
typedef struct {
  int32_t code;
  char text[256];
} bootVerdict;

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static dmacclResult_t fail(char *err, size_t errlen, dmacclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static dmacclResult_t fail(char *err, size_t errlen, dmacclResult_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

static socklen_t makeAddr(const bootId *id, struct sockaddr_un *a) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  size_t len = strnlen(id->name, sizeof(id->name));
  memcpy(a->sun_path + 1, id->name, len); /* sun_path[0] = 0: abstract namespace */
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

dmacclResult_t bootIdCreate(dmacclUniqueId *uid, char *err, size_t errlen) {
  unsigned char rnd[8 + BOOT_SECRET_BYTES];
  size_t got = 0;
  while (got < sizeof(rnd)) {
    ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return fail(err, errlen, dmacclSystemError,
                  "no random bytes for the rendezvous secret (getrandom: %s)", strerror(errno));
    got += (size_t)n;
  }
  uint64_t nonce;
  memcpy(&nonce, rnd, sizeof(nonce));
  bootId id;
  memset(&id, 0, sizeof(id));
  id.magic = BOOT_MAGIC;
  id.version = DMACCL_VERSION_CODE;
  snprintf(id.name, sizeof(id.name), "dmaccl-%016llx", (unsigned long long)nonce);
  memcpy(id.secret, rnd + 8, BOOT_SECRET_BYTES);
  memset(uid, 0, sizeof(*uid));
  memcpy(uid->internal, &id, sizeof(id));
  return dmacclSuccess;
}

/* Constant time, so the comparison tells an attacker nothing. */
static int sameSecret(const unsigned char *a, const unsigned char *b) {
  unsigned char d = 0;
  for (int i = 0; i < BOOT_SECRET_BYTES; i++) d |= (unsigned char)(a[i] ^ b[i]);
  return d == 0;
}

/* The process at the other end of a UNIX socket runs as this user. */
static int sameUser(int fd, pid_t *pid) {
  struct ucred cr;
  socklen_t len = sizeof(cr);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof(cr)) return 0;
  if (pid) *pid = cr.pid;
  return cr.uid == geteuid();
}

/* Waits until fd is ready for events or the deadline passes: 1 ready, 0 timeout, -1 error. */
static int waitFd(int fd, short events, double deadline) {
  for (;;) {
    double left = deadline - nowSec();
    if (left <= 0) return 0;
    struct pollfd p = {fd, events, 0};
    int ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
    int r = poll(&p, 1, ms);
    if (r > 0) return (p.revents & (POLLERR | POLLNVAL)) && !(p.revents & events) ? -1 : 1;
    if (r < 0 && errno != EINTR) return -1;
  }
}

/* Sends all of buf, with fds attached to the first byte when nfds > 0. */
static int sendAll(int fd, const void *buf, size_t len, const int *fds, int nfds, double deadline) {
  const char *p = buf;
  size_t done = 0;
  while (done < len) {
    if (waitFd(fd, POLLOUT, deadline) != 1) return -1;
    struct iovec iov = {(void *)(p + done), len - done};
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    char ctl[CMSG_SPACE(sizeof(int) * 256)];
    if (nfds > 0 && done == 0) {
      memset(ctl, 0, sizeof(ctl));
      m.msg_control = ctl;
      m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
      struct cmsghdr *c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
      memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    done += (size_t)n;
  }
  return 0;
}

/* Receives exactly len bytes; collects up to *nfds descriptors (in: capacity,
 * out: received). 0 on success, -1 on error or closed peer, -2 on timeout. */
static int recvAll(int fd, void *buf, size_t len, int *fds, int *nfds, double deadline) {
  char *p = buf;
  size_t done = 0;
  int cap = nfds ? *nfds : 0, got = 0;
  while (done < len) {
    int w = waitFd(fd, POLLIN, deadline);
    if (w == 0) return -2;
    if (w < 0) return -1;
    struct iovec iov = {p + done, len - done};
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    char ctl[CMSG_SPACE(sizeof(int) * 256)];
    m.msg_control = ctl;
    m.msg_controllen = sizeof(ctl);
    ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    if (n == 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      int *in = (int *)CMSG_DATA(c);
      for (int i = 0; i < k; i++) {
        if (got < cap)
          fds[got++] = in[i];
        else
          close(in[i]);
      }
    }
    done += (size_t)n;
  }
  if (nfds) *nfds = got;
  return 0;
}

void bootClose(bootState *b) {
  if (!b) return;
  if (b->listenFd >= 0) close(b->listenFd);
  if (b->root >= 0) close(b->root);
  if (b->peers)
    for (int r = 0; r < b->nranks; r++)
      if (b->peers[r] >= 0) close(b->peers[r]);
  free(b->peers);
  free(b);
}

/* Rank 0: accepts every rank's hello until all joined, a rule is broken, or the deadline. */
static dmacclResult_t rootGather(bootState *b, double deadline, char *err, size_t errlen) {
  dmacclResult_t rc = dmacclSuccess;
  bootVerdict v;
  memset(&v, 0, sizeof(v));
  int joined = 1; /* rank 0 itself */
  int *extra = calloc((size_t)b->nranks + 64, sizeof(int)), nextra = 0;
  if (!extra) return fail(err, errlen, dmacclSystemError, "bootstrap: out of memory");
  /* the join completes by the earliest deadline of the ranks joined so far
   * (whose: `who`), rank 0's included, or fails on every rank (as an
   * exchange: every rank waits for this verdict a timeout past its own) */
  double until = deadline;
  int who = 0;
  while (joined < b->nranks && rc == dmacclSuccess) {
    int w = waitFd(b->listenFd, POLLIN, until);
    if (w == 0) {
      char missing[160] = "";
      size_t used = 0;
      for (int r = 1; r < b->nranks && used + 8 < sizeof(missing); r++)
        if (b->peers[r] < 0)
          used +=
              (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%d", used ? ", " : "", r);
      rc = fail(err, errlen, dmacclTimeout,
                "%d of %d ranks joined within rank %d's %.0f s (DMACCL_INIT_TIMEOUT); missing "
                "rank(s): %s",
                joined, b->nranks, who, b->timeoutSec, missing);
      break;
    }
    int c = accept4(b->listenFd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    /* Only a process of this user that holds the id's secret may join; any
     * other connection is dropped without a word and changes nothing. A
     * hello must arrive quickly: a silent connection cannot stall the join. */
    bootHello h;
    double helloBy = nowSec() + 2 < until ? nowSec() + 2 : until;
    if (!sameUser(c, NULL) || recvAll(c, &h, sizeof(h), NULL, NULL, helloBy) != 0 ||
        h.magic != BOOT_MAGIC || !sameSecret(h.secret, b->secret)) {
      close(c);
      continue;
    }
    if (h.nranks != b->nranks) {
      rc = fail(err, errlen, dmacclInvalidArgument,
                "rank %d was started with nranks %d but rank 0 with nranks %d", h.rank, h.nranks,
                b->nranks);
    } else if (h.rank <= 0 || h.rank >= b->nranks) {
      rc = fail(err, errlen, dmacclInvalidArgument,
                "a process (pid %d) joined as rank %d, which is not in 1..%d (rank 0 is taken)",
                h.pid, h.rank, b->nranks - 1);
    } else if (b->peers[h.rank] >= 0) {
      rc = fail(err, errlen, dmacclInvalidArgument,
                "rank %d joined twice (the second from pid %d): every rank must be unique", h.rank,
                h.pid);
    }
    if (rc == dmacclSuccess && nowSec() > until)
      rc =
          fail(err, errlen, dmacclTimeout,
               "rank %d joined after rank %d's timeout (%.0f s, DMACCL_INIT_TIMEOUT) had ended, so "
               "rank 0 failed the join on every rank",
               h.rank, who, b->timeoutSec);
    if (rc == dmacclSuccess) {
      b->peers[h.rank] = c;
      joined++;
      if (h.until < until) until = h.until, who = h.rank;
    } else if (nextra < b->nranks + 64) {
      extra[nextra++] = c;
    } else {
      close(c);
    }
  }
  /* Ranks already queued on the socket hear a refusal too. */
  if (rc != dmacclSuccess) {
    double until = nowSec() + 0.05;
    while (nextra < b->nranks + 64 && waitFd(b->listenFd, POLLIN, until) == 1) {
      int c = accept4(b->listenFd, NULL, NULL, SOCK_CLOEXEC);
      if (c >= 0) extra[nextra++] = c;
    }
  }
  /* Everyone connected hears the verdict. */
  v.code = (int32_t)rc;
  if (rc != dmacclSuccess) snprintf(v.text, sizeof(v.text), "%s", err);
  double sendBy = nowSec() + 5; /* the join deadline may have passed */
  for (int r = 1; r < b->nranks; r++)
    if (b->peers[r] >= 0) sendAll(b->peers[r], &v, sizeof(v), NULL, 0, sendBy);
  for (int i = 0; i < nextra; i++) {
    sendAll(extra[i], &v, sizeof(v), NULL, 0, sendBy);
    close(extra[i]);
  }
  free(extra);
  return rc;
}

dmacclResult_t bootInit(const dmacclUniqueId *uid, int nranks, int rank, double timeoutSec,
                        bootState **out, char *err, size_t errlen) {
  bootId id;
  memcpy(&id, uid->internal, sizeof(id));
  if (id.magic != BOOT_MAGIC || !memchr(id.name, 0, sizeof(id.name)) || !id.name[0])
    return fail(err, errlen, dmacclInvalidArgument,
                "the unique id was not made by dmacclGetUniqueId (or was corrupted in transit)");
  if (id.version != DMACCL_VERSION_CODE)
    return fail(err, errlen, dmacclInvalidUsage,
                "the unique id comes from dmaccl version %u, this library is %d", id.version,
                DMACCL_VERSION_CODE);
  bootState *b = calloc(1, sizeof(*b));
  if (!b) return fail(err, errlen, dmacclSystemError, "bootstrap: out of memory");
  memcpy(b->secret, id.secret, sizeof(b->secret));
  b->nranks = nranks;
  b->rank = rank;
  b->timeoutSec = timeoutSec;
  b->listenFd = b->root = -1;
  double deadline = nowSec() + timeoutSec;
  struct sockaddr_un addr;
  socklen_t alen = makeAddr(&id, &addr);
  dmacclResult_t rc = dmacclSuccess;

  if (rank == 0) {
    b->peers = malloc((size_t)nranks * sizeof(int));
    if (!b->peers) {
      rc = fail(err, errlen, dmacclSystemError, "bootstrap: out of memory");
      goto out;
    }
    for (int r = 0; r < nranks; r++) b->peers[r] = -1;
    b->listenFd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (b->listenFd < 0 || bind(b->listenFd, (struct sockaddr *)&addr, alen) != 0 ||
        listen(b->listenFd, nranks + 16) != 0) {
      int e = errno;
      rc = fail(err, errlen, e == EADDRINUSE ? dmacclInvalidUsage : dmacclSystemError,
                e == EADDRINUSE ? "rank 0 of this unique id is already running elsewhere (socket "
                                  "@%s in use): a duplicate rank 0, or a reused id"
                                : "bootstrap socket @%s: %s",
                id.name, strerror(e));
      goto out;
    }
    rc = rootGather(b, deadline, err, errlen);
  } else {
    /* Rank 0 may not be listening yet: retry until the deadline. */
    for (;;) {
      b->root = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (b->root < 0) {
        rc = fail(err, errlen, dmacclSystemError, "bootstrap socket: %s", strerror(errno));
        goto out;
      }
      if (connect(b->root, (struct sockaddr *)&addr, alen) == 0) {
        /* Rank 0 runs as this user (someone else may have taken the name). */
        if (sameUser(b->root, NULL)) break;
        rc = fail(err, errlen, dmacclInvalidUsage,
                  "the rendezvous socket @%s belongs to another user: not joining it", id.name);
        goto out;
      }
      close(b->root);
      b->root = -1;
      if (nowSec() > deadline) {
        rc = fail(err, errlen, dmacclTimeout,
                  "rank 0 did not open the rendezvous within %.0f s (DMACCL_INIT_TIMEOUT)",
                  timeoutSec);
        goto out;
      }
      usleep(1000);
    }
    bootHello h = {BOOT_MAGIC, nranks, rank, (int32_t)getpid(), {0}, deadline};
    memcpy(h.secret, id.secret, sizeof(h.secret));
    bootVerdict v;
    if (sendAll(b->root, &h, sizeof(h), NULL, 0, deadline) != 0) {
      rc = fail(err, errlen, dmacclRemoteError, "rank 0 closed the rendezvous during join");
      goto out;
    }
    /* Rank 0 gives its verdict by this rank's deadline (the hello's
     * `until`): wait a timeout longer, the time the verdict takes to come. */
    int r = recvAll(b->root, &v, sizeof(v), NULL, NULL, deadline + timeoutSec);
    if (r == -2)
      rc = fail(err, errlen, dmacclTimeout,
                "rank 0 did not confirm the join within %.0f s (DMACCL_INIT_TIMEOUT): some rank "
                "did not arrive",
                timeoutSec);
    else if (r != 0)
      rc = fail(err, errlen, dmacclRemoteError,
                "rank 0 closed the rendezvous during join (it failed, or refused another rank)");
    else if (v.code <= 0 || v.code >= dmacclNumResults)
      rc = v.code == 0
               ? dmacclSuccess
               : fail(err, errlen, dmacclRemoteError, "rank 0 answered with code %d", (int)v.code);
    else
      rc = fail(err, errlen, (dmacclResult_t)v.code, "rank 0 refused the join: %.*s",
                (int)strnlen(v.text, sizeof(v.text)), v.text);
  }
out:
  if (rc != dmacclSuccess) {
    bootClose(b);
    return rc;
  }
  if (b->listenFd >= 0) { /* everyone joined: nobody else may connect */
    close(b->listenFd);
    b->listenFd = -1;
  }
  *out = b;
  return dmacclSuccess;
}

static dmacclResult_t ioFail(bootState *b, int r, int peer, char *err, size_t errlen) {
  if (r == -2)
    return fail(err, errlen, dmacclTimeout,
                "bootstrap: rank %d did not take part within %.0f s (ranks must make collective "
                "calls in the same order)",
                peer, b->timeoutSec);
  return fail(err, errlen, dmacclRemoteError,
              "bootstrap: the connection to rank %d broke (the process exited?)", peer);
}

/* Reads and drops len bytes on fd, closing any descriptors that came with them. */
static int drain(int fd, uint64_t len, double deadline) {
  char buf[4096];
  while (len > 0) {
    size_t k = len < sizeof(buf) ? (size_t)len : sizeof(buf);
    int r = recvAll(fd, buf, k, NULL, NULL, deadline);
    if (r != 0) return r;
    len -= k;
  }
  return 0;
}

/* Through rank 0: gather every rank's bytes (and fd), then send everything back. */
static dmacclResult_t exchange(bootState *b, const void *mine, void *all, size_t bytes, int fd,
                               int *fds, char *err, size_t errlen) {
  double deadline = nowSec() + b->timeoutSec;
  int withFd = fds != NULL;
  uint64_t seq = ++b->seq;
  exHeader hdr = {seq, bytes, deadline}, got;
  if (b->rank != 0) {
    if (sendAll(b->root, &hdr, sizeof(hdr), NULL, 0, deadline) ||
        sendAll(b->root, mine, bytes, withFd ? &fd : NULL, withFd, deadline))
      return ioFail(b, -1, 0, err, errlen);
    /* rank 0 decides by this rank's deadline (above): its answer is waited
     * for a timeout longer, the time it takes to arrive */
    deadline += b->timeoutSec;
    int n, r;
    for (;;) { /* answers of exchanges this rank gave up on are dropped */
      n = withFd ? b->nranks : 0;
      r = recvAll(b->root, &got, sizeof(got), fds, &n, deadline);
      if (r != 0 || got.seq >= seq) break;
      for (int i = 0; i < n; i++) close(fds[i]), fds[i] = -1;
      if (got.bytes != EX_FAILED &&
          (r = drain(b->root, got.bytes * (uint64_t)b->nranks, deadline)) != 0)
        break;
    }
    /* an answer this rank cannot use: its bytes are dropped too, so the
     * next exchange reads a header */
    if (r == 0 && (got.seq != seq || got.bytes != bytes) && got.bytes != EX_FAILED) {
      for (int i = 0; i < n; i++) close(fds[i]), fds[i] = -1;
      n = 0;
      if (drain(b->root, got.bytes * (uint64_t)b->nranks, deadline) != 0) r = -1;
    }
    if (r == 0 && got.seq != seq) r = -3;
    if (r == 0 && got.bytes == EX_FAILED)
      return fail(err, errlen, dmacclRemoteError,
                  "bootstrap: another rank failed this exchange (see its error)");
    if (r == 0 && got.bytes != bytes)
      return fail(err, errlen, dmacclInvalidUsage,
                  "bootstrap: ranks disagree about an exchange (%zu bytes here, %llu at rank 0): "
                  "collective calls out of order?",
                  bytes, (unsigned long long)got.bytes);
    if (r == 0) r = recvAll(b->root, all, bytes * (size_t)b->nranks, NULL, NULL, deadline);
    if (r == -3)
      return fail(err, errlen, dmacclInvalidUsage,
                  "bootstrap: rank 0 answered exchange %llu, this rank is at exchange %llu: "
                  "collective calls out of order?",
                  (unsigned long long)got.seq, (unsigned long long)seq);
    if (r != 0) return ioFail(b, r, 0, err, errlen);
    if (withFd && n != b->nranks)
      return fail(err, errlen, dmacclSystemError, "bootstrap: received %d of %d descriptors", n,
                  b->nranks);
    return dmacclSuccess;
  }
  memcpy(all, mine, bytes);
  if (withFd) fds[0] = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  dmacclResult_t rc = dmacclSuccess;
  /* the exchange completes by the earliest deadline of its ranks (whose:
   * `who`), or fails on every rank (checked as each rank's part is in:
   * the reads themselves wait up to this rank's deadline, for a message
   * there already must not time out) */
  double until = deadline, latest = deadline;
  int who = 0, last = 0; /* the earliest deadline's rank, and the latest's of those read */
  for (int p = 1; p < b->nranks && rc == dmacclSuccess; p++) {
    int n = withFd ? 1 : 0, r;
    /* a rank's message of an exchange rank 0 gave up on (it came late, or
     * was not read when an earlier rank failed it) is dropped */
    while ((r = recvAll(b->peers[p], &got, sizeof(got), NULL, NULL, deadline)) == 0 &&
           got.seq < seq && (r = drain(b->peers[p], got.bytes, deadline)) == 0) {
    }
    if (r == 0 && got.seq == seq && got.until < until) until = got.until, who = p;
    if (r == 0 && got.seq == seq && got.until > latest) latest = got.until, last = p;
    if (r == 0 && (got.seq != seq || got.bytes != bytes))
      (void)drain(b->peers[p], got.bytes, deadline); /* its bytes, so the next read is a header */
    if (r == 0 && got.seq != seq)
      rc = fail(err, errlen, dmacclInvalidUsage,
                "bootstrap: rank %d is at exchange %llu, rank 0 at %llu: collective calls out of "
                "order?",
                p, (unsigned long long)got.seq, (unsigned long long)seq);
    else if (r == 0 && got.bytes != bytes)
      rc = fail(err, errlen, dmacclInvalidUsage,
                "bootstrap: ranks disagree about an exchange (%zu bytes at rank 0, %llu at rank "
                "%d): collective calls out of order?",
                bytes, (unsigned long long)got.bytes, p);
    else if (r == 0)
      r = recvAll(b->peers[p], (char *)all + (size_t)p * bytes, bytes, withFd ? &fds[p] : NULL,
                  withFd ? &n : NULL, deadline);
    if (rc == dmacclSuccess && r != 0) rc = ioFail(b, r, p, err, errlen);
    if (rc == dmacclSuccess && nowSec() > until)
      rc = fail(err, errlen, dmacclTimeout,
                "bootstrap: rank %d came to this exchange after rank %d's timeout (%.0f s) had "
                "ended, so rank 0 failed it on every rank (ranks must make collective calls in "
                "the same order, within the timeout of each other; a rank read later may have "
                "come later still)",
                last, who, b->timeoutSec);
    if (rc == dmacclSuccess && withFd && n != 1)
      rc = fail(err, errlen, dmacclSystemError, "bootstrap: rank %d sent no descriptor", p);
  }
  /* The answers, success or failure, go out under a deadline of their
   * own: the exchange's may have passed or be about to (a failure may be
   * that deadline passing, and a success checked just before it left no
   * time to send: some peers then had the answer and the others not). */
  int ok = rc == dmacclSuccess; /* one verdict for every peer, whatever a send does */
  exHeader answer = {seq, ok ? bytes : EX_FAILED, 0};
  deadline = nowSec() + b->timeoutSec;
  for (int p = 1; p < b->nranks; p++) {
    if (sendAll(b->peers[p], &answer, sizeof(answer), withFd && ok ? fds : NULL,
                withFd && ok ? b->nranks : 0, deadline) ||
        (ok && sendAll(b->peers[p], all, bytes * (size_t)b->nranks, NULL, 0, deadline))) {
      if (rc == dmacclSuccess) rc = ioFail(b, -1, p, err, errlen);
    }
  }
  if (rc != dmacclSuccess && withFd)
    for (int p = 0; p < b->nranks; p++)
      if (fds[p] >= 0) close(fds[p]), fds[p] = -1;
  return rc;
}

dmacclResult_t bootAllGather(bootState *b, const void *mine, void *all, size_t bytes, char *err,
                             size_t errlen) {
  return exchange(b, mine, all, bytes, -1, NULL, err, errlen);
}

dmacclResult_t bootAllGatherFd(bootState *b, int fd, int *fds, char *err, size_t errlen) {
  for (int r = 0; r < b->nranks; r++) fds[r] = -1;
  int32_t dummy = 0;
  int32_t *all = calloc((size_t)b->nranks, sizeof(int32_t));
  if (!all) return fail(err, errlen, dmacclSystemError, "bootstrap: out of memory");
  dmacclResult_t rc = exchange(b, &dummy, all, sizeof(dummy), fd, fds, err, errlen);
  free(all);
  return rc;
}
