/*
 * Bootstrap: the host-local rendezvous of one-process-per-GPU communicators.
 *
 * The unique id names an abstract UNIX-domain socket. Rank 0 listens on it;
 * every other rank connects, says who it is, and keeps its connection for the
 * communicator's lifetime. All exchanges go through rank 0 (a star: ranks
 * on one host are few). The socket also carries file descriptors
 * (SCM_RIGHTS): memory handles and shared-memory segments travel that way.
 *
 * Every call here is collective over the communicator's ranks, in the same
 * order on every rank, and fails with dmacclTimeout when a peer does not take
 * part within the bootstrap's timeout.
 */
#ifndef DMACCL_BOOT_H_
#define DMACCL_BOOT_H_

#include "dmaccl.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bootState bootState;

/* Fills id with a fresh rendezvous name. */
dmacclResult_t bootIdCreate(dmacclUniqueId *id, char *err, size_t errlen);

/* Joins the rendezvous as rank of nranks. Rank 0 checks that every rank
 * agrees on nranks and that each rank joined once; a disagreement fails every
 * rank with dmacclInvalidArgument and a sentence naming it. As an exchange
 * (below): each rank's hello carries the end of its timeout, rank 0 fails
 * the join on every rank when it is not complete by the earliest, and a
 * rank waits for the verdict a timeout past its own. Returns the bootstrap
 * in *out. */
dmacclResult_t bootInit(const dmacclUniqueId *id, int nranks, int rank, double timeoutSec,
                        bootState **out, char *err, size_t errlen);

/* all[r*bytes ...] receives rank r's mine[0..bytes); bytes must agree.
 * Exchanges are numbered on each rank: one a rank gives up on (a timeout, or
 * another rank's failure) leaves nothing behind for the next, since what a
 * late rank sent for it, or rank 0 answered after this rank gave up, is
 * dropped there; a rank ahead of rank 0 is named (out of order). Rank 0's
 * answer is the one verdict: each rank sends the end of its timeout with
 * its part, rank 0 fails the exchange on every rank when it is not
 * complete by the earliest of them, and a rank waits for the answer up to
 * a timeout past its own (then dmacclTimeout: rank 0 hung or gone). So
 * every rank reaches the same verdict. */
dmacclResult_t bootAllGather(bootState *b, const void *mine, void *all, size_t bytes, char *err,
                             size_t errlen);

/* fds[r] receives a descriptor for rank r's fd (this rank's own included, as a
 * new descriptor); the caller closes them. */
dmacclResult_t bootAllGatherFd(bootState *b, int fd, int *fds, char *err, size_t errlen);

void bootClose(bootState *b);

#endif
