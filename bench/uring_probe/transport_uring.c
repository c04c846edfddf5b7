/*
 * transport_uring.c - FUSE-over-io_uring (Linux 6.14+): one queue per
 * possible CPU (the kernel queues a request on the queue of the CPU its
 * caller runs on and uses the rings only when every queue has an entry),
 * each with its own thread and ring (IORING_SETUP_SQE128: the command
 * area of an SQE holds struct fuse_uring_cmd_req) and `depth` entries.
 * An entry is a header buffer (struct fuse_uring_req_header) and a
 * payload buffer of at least the kernel's max payload; REGISTER hands it
 * to the kernel, whose completion means a request is in it; the reply is
 * written in place and COMMIT_AND_FETCH returns it and waits for the next.
 * At unmount (or abort) the kernel completes every entry with -ENOTCONN;
 * the thread ends when all of its entries have.
 */
#include "probe.h"

#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct uqueue;

struct uent {
	struct uqueue *q;
	struct fuse_uring_req_header *hdr;
	char *payload;
	struct iovec iov[2];	/* read by the kernel at REGISTER */
	uint32_t last_cmd;
	uint64_t commit_id;
	bool dead;
};

struct uqueue {
	struct uring_pool *p;
	int qid;
	pthread_t tid;
	bool ring_ok;
	struct io_uring ring;
	struct uent *ent;
	int live;
	int reg_errno;
};

struct uring_pool {
	struct server *s;
	int nq, depth;
	size_t payload;
	struct uqueue *q;
	int started;
	pthread_mutex_t m;
	pthread_cond_t c;
	int prepared, prepare_failed;
	int go;			/* 0 wait, 1 register, -1 give up */
	int reported;
	int reg_errno;
	int abandon;		/* uring_join gave up waiting */
};

static void lock(struct uring_pool *p) { pthread_mutex_lock(&p->m); }
static void unlock(struct uring_pool *p) { pthread_mutex_unlock(&p->m); }

static void queue_cmd(struct uqueue *q, struct uent *e, uint32_t cmd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
	if (!sqe) {
		/* cannot happen (as many SQEs as entries); flush and retry */
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
		if (!sqe) {
			slog(q->p->s, "qid %d: no SQE", q->qid);
			e->dead = true;
			q->live--;
			return;
		}
	}
	memset(sqe, 0, 128);	/* SQE128: the command area too */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->fd = 0;		/* /dev/fuse, registered as fixed file 0 */
	sqe->cmd_op = cmd;
	sqe->user_data = (uint64_t)(uintptr_t)e;
	struct fuse_uring_cmd_req *req = (struct fuse_uring_cmd_req *)sqe->cmd;
	req->qid = (uint16_t)q->qid;
	if (cmd == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = 2;
	} else {
		req->commit_id = e->commit_id;
	}
	e->last_cmd = cmd;
}

static void entry_gone(struct uqueue *q, struct uent *e, int res)
{
	e->dead = true;
	q->live--;
	if (res == -ENOTCONN || res == -ECONNABORTED || res == -ECANCELED || res == -ENODEV)
		return;	/* the connection ended: the normal way out */
	if (!q->reg_errno)
		q->reg_errno = -res;
	slog(q->p->s, "qid %d: %s completed with %s", q->qid,
	     e->last_cmd == FUSE_IO_URING_CMD_REGISTER ? "REGISTER" : "COMMIT_AND_FETCH",
	     strerror(-res));
}

static void handle_request(struct uqueue *q, struct uent *e)
{
	struct uring_pool *p = q->p;
	struct server *s = p->s;
	struct fuse_in_header ih;
	memcpy(&ih, e->hdr->in_out, sizeof(ih));
	uint32_t psz = e->hdr->ring_ent_in_out.payload_sz;
	e->commit_id = e->hdr->ring_ent_in_out.commit_id;
	if (psz > p->payload)
		psz = (uint32_t)p->payload;
	stat_add(s->st, 1 + q->qid, true, ih.opcode);

	size_t hs = probefs_op_in_size(ih.opcode);
	if (hs > FUSE_URING_OP_IN_OUT_SZ)
		hs = FUSE_URING_OP_IN_OUT_SZ;
	/* The reply is built in the payload buffer it came in. */
	int r = probefs_handle(s->fs, &ih, e->hdr->op_in, hs, e->payload, psz, e->payload,
			       p->payload);
	if (r == PROBE_NOREPLY)	/* FORGET and INTERRUPT come on /dev/fuse */
		r = -ENOSYS;
	struct fuse_out_header oh = {
		.len = (uint32_t)(sizeof(oh) + (r > 0 ? (size_t)r : 0)),
		.error = r < 0 ? r : 0,
		.unique = ih.unique,
	};
	memcpy(e->hdr->in_out, &oh, sizeof(oh));
	e->hdr->ring_ent_in_out.payload_sz = r > 0 ? (uint32_t)r : 0;
	queue_cmd(q, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
}

static void handle_cqe(struct uqueue *q, struct io_uring_cqe *cqe)
{
	struct uent *e = (struct uent *)(uintptr_t)cqe->user_data;
	if (!e)
		return;
	int res = cqe->res;
	if (res == 0) {
		handle_request(q, e);
	} else if (res == -EINTR) {
		queue_cmd(q, e, e->last_cmd);
	} else if (res == -EAGAIN && e->last_cmd == FUSE_IO_URING_CMD_REGISTER) {
		/* INIT's reply not processed yet: cannot happen here, as the
		 * REGISTERs go after the reply; try again a little later */
		usleep(1000);
		queue_cmd(q, e, e->last_cmd);
	} else {
		entry_gone(q, e, res);
	}
}

static int ring_setup(struct uqueue *q)
{
	struct uring_pool *p = q->p;
	struct io_uring_params par;
	memset(&par, 0, sizeof(par));
	par.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
	par.cq_entries = 2 * (unsigned)p->depth;
	if (p->s->o->taskrun == 1)
		par.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	else if (p->s->o->taskrun == 2)
		par.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	int r = io_uring_queue_init_params((unsigned)p->depth, &q->ring, &par);
	if (r < 0) {
		slog(p->s, "qid %d: io_uring_setup: %s", q->qid, strerror(-r));
		return r;
	}
	q->ring_ok = true;
	r = io_uring_register_files(&q->ring, &p->s->fd, 1);
	if (r < 0) {
		slog(p->s, "qid %d: io_uring_register_files: %s", q->qid, strerror(-r));
		return r;
	}
	q->ent = calloc((size_t)p->depth, sizeof(*q->ent));
	if (!q->ent)
		return -ENOMEM;
	for (int i = 0; i < p->depth; i++) {
		struct uent *e = &q->ent[i];
		e->q = q;
		e->dead = true;
		if (posix_memalign((void **)&e->hdr, 64, sizeof(*e->hdr)) ||
		    posix_memalign((void **)&e->payload, 4096, p->payload))
			return -ENOMEM;
		memset(e->hdr, 0, sizeof(*e->hdr));
		e->iov[0].iov_base = e->hdr;
		e->iov[0].iov_len = sizeof(*e->hdr);
		e->iov[1].iov_base = e->payload;
		e->iov[1].iov_len = p->payload;
	}
	return 0;
}

static void ring_free(struct uqueue *q)
{
	if (q->ring_ok)
		io_uring_queue_exit(&q->ring);
	q->ring_ok = false;
	if (q->ent) {
		for (int i = 0; i < q->p->depth; i++) {
			free(q->ent[i].hdr);
			free(q->ent[i].payload);
		}
		free(q->ent);
		q->ent = NULL;
	}
}

/* A queue has registered (or failed to): the last one says whether the
 * rings serve the mount. */
static void report_registered(struct uqueue *q)
{
	struct uring_pool *p = q->p;
	struct shared_stats *st = p->s->st;
	lock(p);
	if (q->reg_errno && !p->reg_errno)
		p->reg_errno = q->reg_errno;
	if (++p->reported == p->nq) {
		if (p->reg_errno)
			slog(p->s, "REGISTER failed (%s): the kernel serves this mount over "
			     "/dev/fuse instead", strerror(p->reg_errno));
		if (st) {
			st->uring_register_errno = p->reg_errno;
			st->uring_active = p->reg_errno == 0;
			st->queues = p->nq;
			st->depth = p->depth;
			if (p->reg_errno)
				snprintf(st->note, sizeof(st->note),
					 "REGISTER failed: %s: dev fallback", strerror(p->reg_errno));
			else
				snprintf(st->note, sizeof(st->note), "uring: %d queues x %d entries, "
					 "payload %zu", p->nq, p->depth, p->payload);
			__atomic_store_n(&st->state, ST_READY, __ATOMIC_SEQ_CST);
		}
	}
	unlock(p);
}

static void sigusr2(int sig)
{
	(void)sig;
}

static void *queue_thread(void *arg)
{
	struct uqueue *q = arg;
	struct uring_pool *p = q->p;
	struct server *s = p->s;

	if (s->o->pin) {
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(q->qid, &cs);
		if (sched_setaffinity(0, sizeof(cs), &cs) < 0)
			slog(s, "qid %d: cannot pin to CPU %d: %s", q->qid, q->qid, strerror(errno));
	}
	/* SIGUSR2 only interrupts io_uring_enter (uring_join's last resort). */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	int r = ring_setup(q);
	lock(p);
	p->prepared++;
	if (r < 0)
		p->prepare_failed++;
	pthread_cond_broadcast(&p->c);
	while (p->go == 0)
		pthread_cond_wait(&p->c, &p->m);
	int go = p->go;
	unlock(p);
	if (r < 0 || go < 0)
		goto out;

	for (int i = 0; i < p->depth; i++) {
		q->ent[i].dead = false;
		q->live++;
		queue_cmd(q, &q->ent[i], FUSE_IO_URING_CMD_REGISTER);
	}
	r = io_uring_submit(&q->ring);
	if (r < 0) {
		slog(s, "qid %d: submitting REGISTER: %s", q->qid, strerror(-r));
		q->reg_errno = -r;
		q->live = 0;
		report_registered(q);
		goto out;
	}
	/* A refused REGISTER completes at once (the kernel handles the command
	 * inline); an accepted one completes with the first request. */
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&q->ring, head, cqe) {
		n++;
		if (cqe->res < 0 && cqe->res != -EINTR && cqe->res != -EAGAIN) {
			struct uent *e = (struct uent *)(uintptr_t)cqe->user_data;
			e->dead = true;
			q->live--;
			if (!q->reg_errno)
				q->reg_errno = -cqe->res;
		} else {
			handle_cqe(q, cqe);
		}
	}
	io_uring_cq_advance(&q->ring, n);
	report_registered(q);

	while (q->live > 0 && !__atomic_load_n(&p->abandon, __ATOMIC_RELAXED)) {
		r = io_uring_submit_and_wait(&q->ring, 1);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
			slog(s, "qid %d: io_uring_enter: %s", q->qid, strerror(-r));
			break;
		}
		n = 0;
		io_uring_for_each_cqe(&q->ring, head, cqe) {
			n++;
			handle_cqe(q, cqe);
		}
		io_uring_cq_advance(&q->ring, n);
	}
	if (q->live > 0)
		slog(s, "qid %d: leaving %d entries the kernel did not complete", q->qid, q->live);
out:
	ring_free(q);
	return NULL;
}

struct uring_pool *uring_prepare(struct server *s)
{
	const struct probe_opts *o = s->o;
	struct uring_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->s = s;
	int ncpu = (int)possible_cpus();
	p->nq = o->queues > 0 ? o->queues : ncpu;
	if (p->nq > ncpu)
		p->nq = ncpu;
	p->depth = o->depth > 0 ? o->depth : 4;
	p->payload = o->payload ? o->payload : s->max_payload;
	pthread_mutex_init(&p->m, NULL);
	pthread_cond_init(&p->c, NULL);
	p->q = calloc((size_t)p->nq, sizeof(*p->q));
	if (!p->q)
		goto fail;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sigusr2;	/* no SA_RESTART: io_uring_enter returns EINTR */
	sigaction(SIGUSR2, &sa, NULL);

	for (int i = 0; i < p->nq; i++) {
		p->q[i].p = p;
		p->q[i].qid = i;
		if (pthread_create(&p->q[i].tid, NULL, queue_thread, &p->q[i]) != 0)
			break;
		p->started++;
	}
	lock(p);
	while (p->prepared < p->started)
		pthread_cond_wait(&p->c, &p->m);
	bool ok = p->started == p->nq && p->prepare_failed == 0;
	unlock(p);
	if (!ok) {
		uring_go(p, false);
		uring_join(p);
		return NULL;
	}
	return p;
fail:
	free(p->q);
	pthread_cond_destroy(&p->c);
	pthread_mutex_destroy(&p->m);
	free(p);
	return NULL;
}

void uring_go(struct uring_pool *p, bool go)
{
	lock(p);
	p->go = go ? 1 : -1;
	pthread_cond_broadcast(&p->c);
	unlock(p);
}

void uring_join(struct uring_pool *p)
{
	for (int i = 0; i < p->started; i++) {
		/* The connection is gone when this is called (the /dev/fuse
		 * thread has seen ENODEV): every entry should complete soon.
		 * If one does not in 10 s, say so and leave. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		if (pthread_timedjoin_np(p->q[i].tid, NULL, &ts) != 0) {
			slog(p->s, "qid %d: entries still in the kernel 10 s after the connection "
			     "ended", i);
			__atomic_store_n(&p->abandon, 1, __ATOMIC_RELAXED);
			pthread_kill(p->q[i].tid, SIGUSR2);
			pthread_join(p->q[i].tid, NULL);
			p->s->exit_status = 1;
		}
	}
	free(p->q);
	pthread_cond_destroy(&p->c);
	pthread_mutex_destroy(&p->m);
	free(p);
}
