/*
 * uring_pool.c - FUSE over io_uring: the queues' threads, their rings and
 * entries, and the way requests and replies pass between an entry and
 * libfuse's session (uring_pool.h says how the threads are arranged).
 *
 * An entry's memory is one allocation: URING_PRE bytes, then the payload
 * buffer.  The header buffer the kernel fills (struct
 * fuse_uring_req_header: fuse_in_header, the request's first argument,
 * the ring's words) sits at its start; the request is rebuilt in the form
 * libfuse reads from /dev/fuse (fuse_in_header, first argument, the rest)
 * by copying the two headers into the bytes just before the payload, so
 * write data and names are handed to libfuse where the kernel put them.
 *
 * Rules:
 *  - A ring belongs to its thread: only that thread takes submissions
 *    from it or reaps its completions (the kernel runs the command's
 *    completion work in the task that submitted it).
 *  - Every request taken from an entry gets exactly one reply into that
 *    entry, from the thread that handles it, before the thread commits
 *    it: ordfs's handlers reply before they return (fuse_glue.h).  A
 *    handler that returned without replying is a bug: asserted in debug
 *    builds, answered EIO otherwise so the caller is not left waiting.
 *  - The reply is copied into the payload only after the handler is done
 *    with the request's arguments, which libfuse has read by the time it
 *    writes the reply; a reply whose data lies inside the payload buffer
 *    itself is bounced through a copy.
 *  - p->lock (LOCK_TRANSPORT) guards the thread lists and counters; no
 *    other lock is held when it is taken and it is never held across a
 *    request.
 */

#include "uring_pool.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <unistd.h>

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

#include "fuse_uring_abi.h"
#include "../../base/log.h"
#include "../../base/ordfs_assert.h"
#include "../../lock/lock.h"

/* Bytes before an entry's payload: the kernel's header area at the start,
 * room to rebuild fuse_in_header + the first argument at the end. */
#define URING_PRE 4096u
_Static_assert(sizeof(struct fuse_uring_req_header) + sizeof(struct fuse_in_header) +
		       FUSE_URING_OP_IN_OUT_SZ <= URING_PRE,
	       "the header area and the rebuilt request fit before the payload");

/* user_data of the stop eventfd's poll (entries use their thread's
 * address). */
#define STOP_TAG 1ull

struct uring_queue;

struct ring_thread {
	struct uring_queue *q;
	pthread_t tid;
	bool started;                   /* tid is a thread to join */
	struct io_uring ring;
	bool ring_ok;
	char *mem;                      /* URING_PRE + payload_size bytes */
	struct fuse_uring_req_header *hdr; /* at mem */
	char *payload;                  /* mem + URING_PRE */
	struct iovec iov[2];            /* read by the kernel at REGISTER */
	uint32_t last_cmd;
	uint64_t commit_id;             /* the request in hand's id */
	uint64_t unique;                /* ... and its unique (0: none) */
	bool replied;
	bool stop_seen;                 /* the stop poll completed while registering */
	atomic_uint_fast64_t requests;
};

struct uring_queue {
	struct uring_pool *p;
	unsigned qid;
	unsigned nthreads;              /* under p->lock */
	atomic_int idle;                /* threads whose entry the kernel holds, waiting */
	struct ring_thread *threads[URING_THREADS_MAX];
};

struct uring_pool {
	struct uring_pool_config cfg;
	struct ordfs_mutex lock;
	pthread_cond_t cond;
	struct uring_queue *q;
	int stop_fd;                    /* eventfd, written once by uring_pool_stop */
	int go;                         /* 0: wait, 1: register, -1: leave (lock) */
	unsigned prepared, setup_failed; /* first threads done with their setup (lock) */
	unsigned reported;              /* first threads done registering (lock) */
	int register_err;               /* the first refusal's errno (lock) */
	atomic_bool stopping;
	unsigned threads, peak;         /* lock */
};

/* The ring thread this thread is (NULL in any other thread). */
static _Thread_local struct ring_thread *current_ring_thread;

/* ---- submissions ---------------------------------------------------------- */

static struct io_uring_sqe *get_sqe(struct ring_thread *rt)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rt->ring);
	if (!sqe) {
		/* the ring has room for all this thread ever queues at once;
		 * submit what is there and try again */
		io_uring_submit(&rt->ring);
		sqe = io_uring_get_sqe(&rt->ring);
	}
	if (sqe)
		memset(sqe, 0, 2 * sizeof(*sqe)); /* SQE128: the command area too */
	return sqe;
}

/* REGISTER (the entry's buffers) or COMMIT_AND_FETCH (the reply in it). */
static int queue_entry_cmd(struct ring_thread *rt, uint32_t cmd)
{
	struct io_uring_sqe *sqe = get_sqe(rt);
	if (!sqe)
		return -EBUSY;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->fd = 0; /* /dev/fuse, the ring's fixed file 0 */
	sqe->cmd_op = cmd;
	sqe->user_data = (uint64_t)(uintptr_t)rt;
	struct fuse_uring_cmd_req *req = (struct fuse_uring_cmd_req *)sqe->cmd;
	req->qid = (uint16_t)rt->q->qid;
	if (cmd == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)rt->iov;
		sqe->len = 2;
	} else {
		req->commit_id = rt->commit_id;
	}
	rt->last_cmd = cmd;
	return 0;
}

static int queue_stop_poll(struct ring_thread *rt)
{
	struct io_uring_sqe *sqe = get_sqe(rt);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, rt->q->p->stop_fd, POLLIN);
	sqe->user_data = STOP_TAG;
	return 0;
}

/* ---- one thread's ring ---------------------------------------------------- */

static int ring_setup(struct ring_thread *rt)
{
	struct uring_pool *p = rt->q->p;
	struct io_uring_params par;
	memset(&par, 0, sizeof(par));
	/* COOP_TASKRUN: completion work runs when this thread enters the
	 * kernel anyway (it always does: it waits in io_uring_enter). */
	par.flags = IORING_SETUP_SQE128 | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	int err = io_uring_queue_init_params(4, &rt->ring, &par);
	if (err < 0)
		return err;
	rt->ring_ok = true;
	err = io_uring_register_files(&rt->ring, &p->cfg.fuse_fd, 1);
	if (err < 0)
		return err;
	if (posix_memalign((void **)&rt->mem, 4096, URING_PRE + p->cfg.payload_size) != 0)
		return -ENOMEM;
	rt->hdr = (struct fuse_uring_req_header *)rt->mem;
	memset(rt->hdr, 0, sizeof(*rt->hdr));
	rt->payload = rt->mem + URING_PRE;
	rt->iov[0] = (struct iovec){ .iov_base = rt->hdr, .iov_len = sizeof(*rt->hdr) };
	rt->iov[1] = (struct iovec){ .iov_base = rt->payload, .iov_len = p->cfg.payload_size };
	return 0;
}

static void ring_free(struct ring_thread *rt)
{
	if (rt->ring_ok)
		io_uring_queue_exit(&rt->ring);
	rt->ring_ok = false;
	free(rt->mem);
	rt->mem = NULL;
}

/* Puts an error reply (no payload) in the entry. */
static void entry_reply_error(struct ring_thread *rt, uint64_t unique, int err)
{
	struct fuse_out_header out = { .len = sizeof(out), .error = err, .unique = unique };
	memcpy(rt->hdr->in_out, &out, sizeof(out));
	rt->hdr->ring_ent_in_out.payload_sz = 0;
	rt->replied = true;
}

bool uring_pool_take_reply(const struct iovec *iov, int count, ssize_t *written)
{
	struct ring_thread *rt = current_ring_thread;
	if (!rt || count < 1 || iov[0].iov_len < sizeof(struct fuse_out_header))
		return false;
	struct fuse_out_header out;
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (rt->unique == 0 || out.unique != rt->unique)
		return false; /* a notification, or another request's reply */
	ORDFS_ASSERT(!rt->replied);
	size_t size = rt->q->p->cfg.payload_size;
	size_t total = 0, used = 0;
	bool overlaps = false;
	for (int i = 0; i < count; i++) {
		total += iov[i].iov_len;
		const char *b = iov[i].iov_base;
		if (b + iov[i].iov_len > rt->payload && b < rt->payload + size)
			overlaps = true;
	}
	if (total - sizeof(out) > size) {
		ordfs_log(LOG_ERR, "io_uring: a reply of %zu bytes does not fit the entry's %zu; "
			  "answered EIO", total - sizeof(out), size);
		entry_reply_error(rt, out.unique, -EIO);
		*written = (ssize_t)total;
		return true;
	}
	char *bounce = NULL;
	char *dst = rt->payload;
	if (overlaps) {
		bounce = malloc(total);
		if (!bounce) {
			entry_reply_error(rt, out.unique, -ENOMEM);
			*written = (ssize_t)total;
			return true;
		}
		dst = bounce;
	}
	/* The out header goes to in_out; every byte after it, whatever
	 * iovec it is in, to the payload. */
	size_t skip = sizeof(out);
	for (int i = 0; i < count; i++) {
		const char *b = iov[i].iov_base;
		size_t n = iov[i].iov_len;
		size_t s = skip < n ? skip : n;
		skip -= s;
		memcpy(dst + used, b + s, n - s);
		used += n - s;
	}
	if (bounce) {
		memcpy(rt->payload, bounce, used);
		free(bounce);
	}
	out.len = (uint32_t)total;
	memcpy(rt->hdr->in_out, &out, sizeof(out));
	/* An error reply carries no payload. */
	rt->hdr->ring_ent_in_out.payload_sz = out.error ? 0 : (uint32_t)used;
	rt->replied = true;
	*written = (ssize_t)total;
	return true;
}

static void maybe_add_thread(struct uring_queue *q);

/* The entry holds a request: rebuild it as /dev/fuse would have given it,
 * hand it to libfuse, and queue its reply. */
static void handle_request(struct ring_thread *rt)
{
	struct uring_pool *p = rt->q->p;
	struct fuse_in_header in;
	memcpy(&in, rt->hdr->in_out, sizeof(in));
	rt->commit_id = rt->hdr->ring_ent_in_out.commit_id;
	uint32_t psz = rt->hdr->ring_ent_in_out.payload_sz;
	rt->replied = false;
	/* in.len counts every argument; the first is in op_in, the rest in
	 * the payload. */
	size_t first = in.len >= sizeof(in) + (size_t)psz ? in.len - sizeof(in) - psz : SIZE_MAX;
	if (psz > p->cfg.payload_size || first > FUSE_URING_OP_IN_OUT_SZ) {
		ordfs_log(LOG_ERR, "io_uring: a request (opcode %u) with lengths %u/%u that do not "
			  "add up; answered EIO", in.opcode, in.len, psz);
		entry_reply_error(rt, in.unique, -EIO);
	} else {
		char *start = rt->payload - sizeof(in) - first;
		memcpy(start, &in, sizeof(in));
		memcpy(start + sizeof(in), rt->hdr->op_in, first);
		struct fuse_buf buf = { .size = sizeof(in) + first + psz, .mem = start };
		rt->unique = in.unique;
		current_ring_thread = rt;
		fuse_session_process_buf(p->cfg.se, &buf);
		current_ring_thread = NULL;
		rt->unique = 0;
		atomic_fetch_add_explicit(&rt->requests, 1, memory_order_relaxed);
		ORDFS_ASSERT(rt->replied); /* every handler replies before returning */
		if (!rt->replied) {
			ordfs_log(LOG_ERR, "io_uring: request %llu (opcode %u) got no reply; "
				  "answered EIO", (unsigned long long)in.unique, in.opcode);
			entry_reply_error(rt, in.unique, -EIO);
		}
	}
	if (queue_entry_cmd(rt, FUSE_IO_URING_CMD_COMMIT_AND_FETCH) != 0)
		ordfs_log(LOG_ERR, "io_uring: no submission slot for a reply");
}

/* The end of an entry's command that was not a request: the connection
 * ended (ENOTCONN at unmount or abort, ECANCELED when the ring goes) or
 * the kernel refused it.  Returns true when the thread should go on. */
static bool entry_failed(struct ring_thread *rt, int res)
{
	if (res == -EINTR || res == -EAGAIN) {
		/* not taken; again (EAGAIN: INIT's reply not seen yet) */
		if (res == -EAGAIN)
			usleep(1000);
		return queue_entry_cmd(rt, rt->last_cmd) == 0;
	}
	if (!uring_conn_ended(-res) && res != -ECANCELED)
		ordfs_log(LOG_ERR, "io_uring: queue %u: %s ended with %s", rt->q->qid,
			  rt->last_cmd == FUSE_IO_URING_CMD_REGISTER ? "REGISTER" : "COMMIT_AND_FETCH",
			  strerror(-res));
	return false;
}

/* Submits the REGISTER and the stop poll; a refused REGISTER completes at
 * once.  0, or the refusal (a negative errno). */
static int register_entry(struct ring_thread *rt)
{
	int err = queue_stop_poll(rt);
	for (int attempt = 0; !err && attempt < 1000; attempt++) {
		err = queue_entry_cmd(rt, FUSE_IO_URING_CMD_REGISTER);
		if (!err) {
			err = io_uring_submit(&rt->ring);
			err = err < 0 ? err : 0;
		}
		if (err)
			return err;
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		int res = 0;
		io_uring_for_each_cqe(&rt->ring, head, cqe) {
			if (cqe->user_data != STOP_TAG && cqe->res == 0)
				break; /* already a request: serve() takes it */
			if (cqe->user_data == STOP_TAG)
				rt->stop_seen = true;
			else
				res = cqe->res;
			n++;
		}
		io_uring_cq_advance(&rt->ring, n);
		if (res != -EAGAIN && res != -EINTR)
			return res;
		/* EAGAIN: the kernel has not taken INIT's reply in yet */
		usleep(1000);
	}
	return err ? err : -EAGAIN;
}

static void serve(struct ring_thread *rt)
{
	struct uring_queue *q = rt->q;
	bool live = true, stop = rt->stop_seen;
	while (live && !stop) {
		atomic_fetch_add(&q->idle, 1);
		int r = io_uring_submit_and_wait(&rt->ring, 1);
		bool request = false;
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
			ordfs_log(LOG_ERR, "io_uring: queue %u: io_uring_enter: %s", q->qid,
				  strerror(-r));
			atomic_fetch_sub(&q->idle, 1);
			break;
		}
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(&rt->ring, head, cqe) {
			n++;
			if (cqe->user_data == STOP_TAG)
				stop = true;
			else if (cqe->res == 0)
				request = true;
			else
				live = entry_failed(rt, cqe->res);
		}
		io_uring_cq_advance(&rt->ring, n);
		/* the entry is ours again (a request, or the end): off the
		 * idle count; too few spares left, and the queue grows */
		int left = atomic_fetch_sub(&q->idle, 1) - 1;
		if (request && !stop && left < (int)URING_THREADS_SPARE)
			maybe_add_thread(q);
		if (request)
			handle_request(rt);
	}
	if (live && io_uring_sq_ready(&rt->ring))
		io_uring_submit(&rt->ring); /* the last reply */
}

static void *ring_thread_main(void *arg)
{
	struct ring_thread *rt = arg;
	struct uring_queue *q = rt->q;
	struct uring_pool *p = q->p;
	/* The kernel picks the queue by the caller's CPU: a thread on its
	 * queue's CPU answers without a migration (the probe's figures:
	 * unpinned threads lost the gain at one client). */
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		ordfs_log(LOG_DEBUG, "io_uring: cannot pin queue %u's thread: %s", q->qid,
			  strerror(errno));

	int err = ring_setup(rt);
	ordfs_mutex_lock(&p->lock);
	bool first = p->go == 0;
	if (first) {
		p->prepared++;
		if (err)
			p->setup_failed++;
		pthread_cond_broadcast(&p->cond);
		while (p->go == 0)
			ordfs_cond_wait(&p->cond, &p->lock);
	}
	bool go = p->go > 0 && !atomic_load(&p->stopping);
	ordfs_mutex_unlock(&p->lock);
	if (err || !go) {
		if (err && !first)
			ordfs_log(LOG_WARNING, "io_uring: queue %u: another thread: %s", q->qid,
				  strerror(-err));
		return NULL;
	}
	err = register_entry(rt);
	if (first) {
		ordfs_mutex_lock(&p->lock);
		p->reported++;
		if (err && !p->register_err)
			p->register_err = -err;
		pthread_cond_broadcast(&p->cond);
		ordfs_mutex_unlock(&p->lock);
	} else if (err && !uring_conn_ended(-err)) {
		/* (those say the connection ended while the thread started:
		 * a queue that grew during an unmount) */
		ordfs_log(LOG_WARNING, "io_uring: queue %u: REGISTER of another entry: %s",
			  q->qid, strerror(-err));
	}
	if (!err)
		serve(rt);
	return NULL;
}

/* Starts a thread for queue q (lock held).  0 or a negative errno. */
static int start_thread(struct uring_queue *q)
{
	struct uring_pool *p = q->p;
	if (q->nthreads >= p->cfg.threads_max)
		return -EAGAIN;
	struct ring_thread *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->q = q;
	/* Signals go to the other threads (libfuse's handlers end the loop). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&rt->tid, NULL, ring_thread_main, rt);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		free(rt);
		return -err;
	}
	rt->started = true;
	q->threads[q->nthreads++] = rt;
	p->threads++;
	if (q->nthreads > p->peak)
		p->peak = q->nthreads;
	return 0;
}

static void maybe_add_thread(struct uring_queue *q)
{
	struct uring_pool *p = q->p;
	ordfs_mutex_lock(&p->lock);
	if (!atomic_load(&p->stopping) && q->nthreads < p->cfg.threads_max)
		start_thread(q); /* if it cannot start, the queue's threads stay as many */
	ordfs_mutex_unlock(&p->lock);
}

/* ---- the pool ------------------------------------------------------------- */

static void join_all(struct uring_pool *p)
{
	for (unsigned i = 0; i < p->cfg.queues; i++) {
		for (unsigned t = 0;; t++) {
			/* a thread may still add one: read the count each time */
			ordfs_mutex_lock(&p->lock);
			struct ring_thread *rt = t < p->q[i].nthreads ? p->q[i].threads[t] : NULL;
			ordfs_mutex_unlock(&p->lock);
			if (!rt)
				break;
			if (rt->started) {
				pthread_join(rt->tid, NULL);
				rt->started = false;
			}
		}
	}
}

int uring_pool_prepare(const struct uring_pool_config *cfg, struct uring_pool **out, char *why,
		       size_t why_len)
{
	*out = NULL;
	struct uring_pool *p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	p->cfg = *cfg;
	ordfs_mutex_init(&p->lock, LOCK_TRANSPORT, "uring_pool");
	pthread_cond_init(&p->cond, NULL);
	p->stop_fd = eventfd(0, EFD_CLOEXEC);
	p->q = calloc(cfg->queues, sizeof(*p->q));
	if (p->stop_fd < 0 || !p->q) {
		snprintf(why, why_len, "cannot make the pool: %s", strerror(errno));
		goto fail;
	}
	unsigned wanted = 0;
	ordfs_mutex_lock(&p->lock);
	int err = 0;
	for (unsigned i = 0; i < cfg->queues && !err; i++) {
		p->q[i].p = p;
		p->q[i].qid = i;
		for (unsigned t = 0; t < cfg->threads_initial && !err; t++) {
			err = start_thread(&p->q[i]);
			if (!err)
				wanted++;
		}
	}
	while (p->prepared < wanted)
		ordfs_cond_wait(&p->cond, &p->lock);
	bool ok = !err && p->setup_failed == 0;
	if (!ok) {
		p->go = -1;
		pthread_cond_broadcast(&p->cond);
	}
	ordfs_mutex_unlock(&p->lock);
	if (!ok) {
		if (err)
			snprintf(why, why_len, "cannot start a ring thread: %s", strerror(-err));
		else
			snprintf(why, why_len, "cannot set up a ring (%u of %u threads failed; "
				 "io_uring disabled by kernel.io_uring_disabled, or memory?)",
				 p->setup_failed, wanted);
		join_all(p);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	uring_pool_free(p);
	return -EIO;
}

int uring_pool_register(struct uring_pool *p, char *why, size_t why_len)
{
	ordfs_mutex_lock(&p->lock);
	unsigned first = p->threads;
	p->go = 1;
	pthread_cond_broadcast(&p->cond);
	while (p->reported < first)
		ordfs_cond_wait(&p->cond, &p->lock);
	int err = p->register_err;
	ordfs_mutex_unlock(&p->lock);
	if (err) {
		snprintf(why, why_len, "the kernel refused a ring entry (REGISTER: %s)",
			 strerror(err));
		return -err;
	}
	return 0;
}

void uring_pool_stop(struct uring_pool *p)
{
	if (!p)
		return;
	ordfs_mutex_lock(&p->lock);
	atomic_store(&p->stopping, true);
	if (p->go == 0)
		p->go = -1;
	pthread_cond_broadcast(&p->cond);
	ordfs_mutex_unlock(&p->lock);
	uint64_t one = 1;
	if (write(p->stop_fd, &one, sizeof(one)) != sizeof(one))
		ordfs_log(LOG_ERR, "io_uring: cannot wake the ring threads: %s", strerror(errno));
	join_all(p);
}

void uring_pool_free(struct uring_pool *p)
{
	if (!p)
		return;
	if (p->q) {
		for (unsigned i = 0; i < p->cfg.queues; i++) {
			for (unsigned t = 0; t < p->q[i].nthreads; t++) {
				struct ring_thread *rt = p->q[i].threads[t];
				ORDFS_ASSERT(!rt->started); /* joined */
				ring_free(rt);
				free(rt);
			}
		}
		free(p->q);
	}
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	pthread_cond_destroy(&p->cond);
	ordfs_mutex_destroy(&p->lock);
	free(p);
}

void uring_pool_get_stats(struct uring_pool *p, struct uring_pool_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	ordfs_mutex_lock(&p->lock);
	out->threads = p->threads;
	out->threads_peak_queue = p->peak;
	for (unsigned i = 0; i < p->cfg.queues; i++)
		for (unsigned t = 0; t < p->q[i].nthreads; t++)
			out->requests += atomic_load_explicit(&p->q[i].threads[t]->requests,
							      memory_order_relaxed);
	ordfs_mutex_unlock(&p->lock);
}
