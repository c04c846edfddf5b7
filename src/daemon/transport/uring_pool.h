/*
 * uring_pool.h - the rings of FUSE over io_uring (transport.c's helper).
 *
 * The kernel keeps one queue of requests per possible CPU and gives a
 * request to the queue of the CPU its caller runs on.  Each queue is
 * served by threads pinned to that CPU; each thread has its own ring and
 * exactly one entry (a header buffer and a payload buffer registered with
 * the kernel).  One entry per thread is what keeps a blocking handler (an
 * fsync waiting for its commit) from stalling others: while a thread
 * handles a request its entry is not available, so the kernel gives the
 * queue's next request to another thread's entry, or holds it until one
 * is free; it never queues it behind the busy thread.  A queue starts
 * with a few threads (uring_pool_config); when a thread takes a request
 * and fewer than URING_THREADS_SPARE others of its queue are left
 * waiting, it starts another (up to threads_max).  Threads never leave
 * before the pool stops (an entry cannot be taken back from the kernel).
 *
 * The spare matters because the kernel hands a request that found no free
 * entry to the next entry that *commits* a reply, not to one registered
 * later (fs/fuse/dev_uring.c on 6.18): a request that arrives while every
 * entry of its queue is busy waits for the first of those requests to be
 * answered.  Growing while spares are left keeps that from happening
 * unless more requests than the spare arrive at once, all to block.
 */
#ifndef ORDFS_DAEMON_URING_POOL_H
#define ORDFS_DAEMON_URING_POOL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fuse_session;
struct uring_pool;

#define URING_THREADS_SPARE 2u
#define URING_THREADS_MAX 32u

/* Threads a queue starts with: 8 on up to 4 CPUs (a handful of blocking
 * handlers per CPU costs nothing but a sleeping thread and its buffer),
 * fewer on big machines, at least the spare + 1. */
static inline unsigned uring_threads_initial(unsigned queues)
{
	return queues <= 4 ? 8u : queues <= 16 ? 4u : URING_THREADS_SPARE + 1;
}

struct uring_pool_config {
	struct fuse_session *se;
	int fuse_fd;          /* the session's /dev/fuse file */
	unsigned queues;      /* possible CPUs: the kernel's queue count */
	unsigned threads_initial, threads_max; /* per queue */
	size_t payload_size;  /* an entry's payload buffer (the kernel's minimum
				 is max(8192, max_write, max_pages * 4096)) */
};

/* Makes each queue's first threads with their rings and buffers; they
 * wait for uring_pool_register.  0, or a negative errno with the reason
 * in why (nothing is left then). */
int uring_pool_prepare(const struct uring_pool_config *cfg, struct uring_pool **out, char *why,
		       size_t why_len);

/* Does errno e (positive) say the FUSE connection has ended (unmounted or
 * aborted), not that something was refused? */
static inline bool uring_conn_ended(int e)
{
	return e == ENOTCONN || e == ECONNABORTED || e == ENODEV;
}

/* The kernel has INIT's reply saying yes to io_uring: every thread
 * registers its entry.  0 when the kernel took every entry; otherwise a
 * negative errno and why (the kernel then serves over /dev/fuse; the
 * threads stay until uring_pool_stop). */
int uring_pool_register(struct uring_pool *p, char *why, size_t why_len);

/* Stops the threads, each after the request it is handling, and joins
 * them.  Entries the kernel still holds are cancelled as their threads
 * exit. */
void uring_pool_stop(struct uring_pool *p);

/* Closes the rings and frees everything (after uring_pool_stop). */
void uring_pool_free(struct uring_pool *p);

/* Called with every reply the session writes: if the calling thread is a
 * ring thread handling that request, the reply goes into its entry,
 * *written is what writev would have returned, and the result is true;
 * false: not a ring request's reply (it goes to /dev/fuse). */
bool uring_pool_take_reply(const struct iovec *iov, int count, ssize_t *written);

struct uring_pool_stats {
	uint32_t threads, threads_peak_queue;
	uint64_t requests;
};
void uring_pool_get_stats(struct uring_pool *p, struct uring_pool_stats *out);

#endif
