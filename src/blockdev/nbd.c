/*
 * nbd.c - block device backend over an NBD export, through libnbd.
 *
 * Owns: the connection to the NBD server (one libnbd handle at a time), the
 * thread that drives it, and what the filesystem must be told when the
 * connection is lost.
 *
 * How requests run: any thread submits with libnbd's asynchronous calls
 * (nbd_aio_pread/pwrite/flush/trim, which are thread-safe) and waits on a
 * condition variable for its completion callback.  One poller thread per
 * device waits on the socket and feeds libnbd (nbd_aio_notify_read/write);
 * the completion callbacks run on it.  So every thread's requests are in
 * flight on the one connection at once: a commit's log writes, writeback
 * and readers overlap the network's latency instead of queueing behind
 * each other.
 *
 * Rules:
 *  - Lock order: refresh_mu, then libnbd's handle lock, then dev->mu (the
 *    completion callback takes mu inside libnbd).  So no libnbd call is
 *    ever made with mu held.
 *  - A connection is freed (nbd_close) only by the poller, once it is
 *    dead (or retired by a refresh) and no request holds a reference to
 *    it; the poller drives at most two, the live one and a refresh's old
 *    one.
 *  - A lost connection (EOF, reset, a timed-out request) is replaced: the
 *    poller reconnects with a growing pause, and requests wait for it up to
 *    the timeout, then fail with EIO.  A request that failed only because
 *    its connection died is sent again on the next one (reads and writes
 *    of whole ranges are idempotent).  An error reply from the server is
 *    final and goes to the caller.
 *  - The lost-writes rule: a server that lost the connection may also have
 *    lost every write it acknowledged since the last flush that worked (a
 *    crashed server's cache).  So when a connection dies with such writes
 *    (or any write in flight), the next flush fails with EIO once, as a
 *    failing disk's flush would: the flush guard then writes its copies
 *    again, and nothing a later flush claims durable is missing.
 *  - Flushes are NBD_CMD_FLUSH; a server that cannot flush was refused at
 *    open unless BLOCKDEV_NO_FLUSH_OK (nobarrier), and then flush is a
 *    no-op.  write_fua is NBD_CMD_WRITE with FUA where the server offers it.
 *  - Requests larger than the server's maximum are split.
 *  - Holes: where the server answers NBD_CMD_BLOCK_STATUS for
 *    base:allocation, next_data skips the ranges it reports as reading
 *    zeros (NBD_STATE_ZERO; "unallocated" alone says nothing of the
 *    bytes), so fsck does not read a big image's untouched inode table
 *    over the network.  Any failure answers "may hold data".
 *  - The size: a server tells it at the handshake only, and checks every
 *    request of a connection against what it told that one (so does
 *    libnbd).  Every connection must have the export's size (export_size,
 *    under mu): a reconnect that finds another is refused and tried again.
 *    A refresh (one at a time: refresh_mu, taken before libnbd's handle
 *    lock and mu) opens a new connection; if the export grew, that one
 *    becomes the live connection and export_size the new size, under mu,
 *    and only then does bd.size grow (blockdev_grow_size): a request
 *    checked against the new size can only go to a connection that
 *    serves it.  The replaced connection (old) takes no new request; the
 *    poller drives it until its requests are answered, then the refresh
 *    flushes it if it acknowledged writes since its last good flush (a
 *    flush on another connection covers them only on a multi-conn
 *    server), and hands it to the poller to close (retired).  No request
 *    fails for the swap.  A flush waits until the old connection is done,
 *    so it never claims durable a write the old one may still lose; a
 *    failed flush there, or the old connection dying with such writes,
 *    is the lost-writes rule's case.  While reconnecting, a refresh only
 *    raises export_size: the poller's next connection must have it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "blockdev.h"
#include "../base/ordfs_assert.h"
#include "../lock/lock.h"

/* libnbd refuses requests over 64 MiB; most servers take 32 MiB. */
#define NBD_MAX_REQUEST (32u << 20)
#define RECONNECT_PAUSE_MIN_MS 50u
#define RECONNECT_PAUSE_MAX_MS 1000u

struct nbd_conn {
	struct nbd_handle *h;
	struct nbd_conn *next;  /* in dev->retired */
	uint64_t serial;        /* which connection of the device it is */
	unsigned refs;          /* requests using it (under dev->mu) */
	bool dead;              /* no new request may use it */
	uint64_t writes_acked;  /* writes completed on it since the last good flush began */
	uint64_t writes_active; /* writes submitted, not completed */
};

struct nbd_dev {
	struct blockdev bd;
	char *uri;
	unsigned flags;
	unsigned timeout_ms;
	uint64_t max_request;
	bool can_flush, can_fua, can_trim, can_zero;
	bool can_block_status;  /* base:allocation was negotiated */

	struct ordfs_mutex refresh_mu; /* LOCK_BLOCKDEV_REFRESH: one refresh at a time */
	struct ordfs_mutex mu;  /* LOCK_BLOCKDEV_NBD */
	pthread_cond_t cv;      /* a completion, a new connection, an old one
				   done, stop */
	uint64_t export_size;   /* the size every connection must have */
	uint64_t serials;       /* connections made so far */
	struct nbd_conn *conn;  /* the live connection; NULL while reconnecting */
	struct nbd_conn *dying; /* dead, waiting for its last reference */
	struct nbd_conn *old;   /* replaced by a refresh, finishing its requests */
	struct nbd_conn *retired; /* done with by a refresh: the poller closes them */
	bool lost_writes;       /* the next flush fails (the lost-writes rule) */
	bool stopping;
	uint64_t reconnects;
	int wake_fd;            /* eventfd: wakes the poller */
	pthread_t poller;
};

/* One request's wait for its completion. */
struct nbd_wait {
	struct nbd_dev *dev;
	struct nbd_conn *conn;
	bool done;
	bool is_write;
	int err;                /* positive errno from the server or libnbd */
};

static struct nbd_dev *to_nbd(struct blockdev *bd)
{
	return (struct nbd_dev *)bd;
}

/* The lock order (libnbd's handle lock, then mu) is checked: no libnbd
 * call is made by a thread that holds mu (nbd_call_ok). */
static __thread unsigned mu_held;

static void mu_lock(struct nbd_dev *d)
{
	ordfs_mutex_lock(&d->mu);
	mu_held++;
}

static void mu_unlock(struct nbd_dev *d)
{
	ORDFS_ASSERT(mu_held > 0);
	mu_held--;
	ordfs_mutex_unlock(&d->mu);
}

/* Before every libnbd call on a live handle. */
static void nbd_call_ok(void)
{
	ORDFS_ASSERT(mu_held == 0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void wake_poller(struct nbd_dev *d)
{
	uint64_t one = 1;
	ssize_t n = write(d->wake_fd, &one, sizeof(one));
	(void)n; /* a full counter already wakes it */
}

/* Waits on dev->cv until deadline_ms (CLOCK_MONOTONIC); false on timeout. */
static bool wait_until(struct nbd_dev *d, uint64_t deadline_ms)
{
	uint64_t now = now_ms();
	if (now >= deadline_ms)
		return false;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t left = deadline_ms - now;
	ts.tv_sec += (time_t)(left / 1000u);
	ts.tv_nsec += (long)(left % 1000u) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	ordfs_cond_timedwait(&d->cv, &d->mu, &ts);
	return true;
}

/* ---- connections -------------------------------------------------------- */

/* Opens a connection; on failure *why says why (one line). */
static int conn_open(const char *uri, struct nbd_conn **out, char *why, size_t why_len)
{
	struct nbd_handle *h = nbd_create();
	if (!h) {
		snprintf(why, why_len, "libnbd: %s", nbd_get_error());
		return -ENOMEM;
	}
	nbd_set_handle_name(h, "ordfs");
	/* Asked for on every connection; a server without it just does not
	 * agree (nbd_can_meta_context says which). */
	if (nbd_add_meta_context(h, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1) {
		snprintf(why, why_len, "libnbd: %s", nbd_get_error());
		nbd_close(h);
		return -EIO;
	}
	if (nbd_connect_uri(h, uri) == -1) {
		int err = nbd_get_errno() ? nbd_get_errno() : EIO;
		snprintf(why, why_len, "%s", nbd_get_error());
		nbd_close(h);
		return -err;
	}
	struct nbd_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		nbd_close(h);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	c->h = h;
	*out = c;
	return 0;
}

/* Closes a connection nothing uses (no libnbd call waits on it: no
 * NBD_CMD_DISC, whose nbd_shutdown could wait for a server that does not
 * answer). */
static void conn_close(struct nbd_conn *c)
{
	nbd_call_ok();
	nbd_close(c->h);
	free(c);
}

/* Does connection c serve what the device was opened with (a refresh's
 * new connection)?  A server restarted with less would fail requests the
 * device sends, not the refresh. */
static bool conn_serves(const struct nbd_dev *d, struct nbd_conn *c)
{
	struct nbd_handle *h = c->h;
	nbd_call_ok();
	int64_t max = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
	return ((d->flags & BLOCKDEV_READONLY) || nbd_is_read_only(h) != 1) &&
	       (!d->can_flush || nbd_can_flush(h) == 1) && (!d->can_fua || nbd_can_fua(h) == 1) &&
	       (!d->can_trim || nbd_can_trim(h) == 1) && (!d->can_zero || nbd_can_zero(h) == 1) &&
	       (max <= 0 || (uint64_t)max >= d->max_request);
}

/* Marks a connection dead (under mu): no new request uses it, the poller
 * closes it once its requests are gone (the live one; a refresh hands
 * over its old one), and writes it may have lost make the next flush
 * fail. */
static void conn_kill_locked(struct nbd_dev *d, struct nbd_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	if (c->writes_acked || c->writes_active)
		d->lost_writes = true;
	if (d->conn == c) {
		d->conn = NULL;
		ORDFS_ASSERT(!d->dying);
		d->dying = c;
	}
	pthread_cond_broadcast(&d->cv);
}

static bool is_connection_loss(int err)
{
	return err == ENOTCONN || err == ESHUTDOWN || err == ECONNRESET || err == EPIPE ||
	       err == ECONNABORTED;
}

static int on_complete(void *user_data, int *error)
{
	struct nbd_wait *w = user_data;
	struct nbd_dev *d = w->dev;
	mu_lock(d);
	w->err = *error;
	if (w->is_write) {
		w->conn->writes_active--;
		if (!*error)
			w->conn->writes_acked++;
		else if (is_connection_loss(*error))
			d->lost_writes = true; /* it may have landed, in part, unflushed */
	}
	w->done = true;
	pthread_cond_broadcast(&d->cv);
	mu_unlock(d);
	return 1; /* retire the command */
}

/* One wait on the wake-up eventfd and the sockets of conns[0..1] (either
 * NULL), then libnbd is fed what each is ready for.  dead[i]: that
 * connection is gone.  Without mu. */
static void poll_conns(struct nbd_dev *d, struct nbd_conn *conns[2], bool dead[2])
{
	struct pollfd p[3] = { { .fd = d->wake_fd, .events = POLLIN } };
	bool any = false;
	for (int i = 0; i < 2; i++) {
		p[i + 1].fd = -1; /* poll skips it */
		dead[i] = false;
		if (!conns[i])
			continue;
		struct nbd_handle *h = conns[i]->h;
		nbd_call_ok();
		int fd = nbd_aio_get_fd(h);
		unsigned dir = fd >= 0 ? nbd_aio_get_direction(h) : 0;
		dead[i] = fd < 0 || nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1;
		if (dead[i])
			continue;
		p[i + 1].fd = fd;
		p[i + 1].events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
					  ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0));
		any = true;
	}
	if (!any)
		return;
	int n = poll(p, 3, 1000);
	if (n > 0 && (p[0].revents & POLLIN)) {
		uint64_t v;
		ssize_t r = read(d->wake_fd, &v, sizeof(v));
		(void)r;
	}
	for (int i = 0; i < 2; i++) {
		if (p[i + 1].fd < 0)
			continue;
		struct nbd_handle *h = conns[i]->h;
		if (n > 0 && (p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
			nbd_aio_notify_read(h);
		if (n > 0 && (p[i + 1].revents & POLLOUT))
			nbd_aio_notify_write(h);
		dead[i] = nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1;
	}
}

/* The poller: drives the live connection and a refresh's old one,
 * reconnects a dead one, closes those nobody uses any more. */
static void *poller_main(void *arg)
{
	struct nbd_dev *d = arg;
	unsigned pause_ms = RECONNECT_PAUSE_MIN_MS;

	mu_lock(d);
	while (!d->stopping) {
		/* Close what a refresh retired, and a dead connection once
		 * nobody uses it. */
		struct nbd_conn *gone = NULL;
		if (d->retired) {
			gone = d->retired;
			d->retired = gone->next;
		} else if (d->dying && d->dying->refs == 0) {
			gone = d->dying;
			d->dying = NULL;
		}
		if (gone) {
			ORDFS_ASSERT(gone->refs == 0);
			mu_unlock(d);
			conn_close(gone);
			mu_lock(d);
			continue;
		}
		/* Reconnect, unless a refresh's old connection still needs
		 * driving (its requests then go to the next connection). */
		if (!d->conn && !d->old) {
			if (d->dying) {
				/* Wait for its requests to see the death. */
				wait_until(d, now_ms() + 10);
				continue;
			}
			mu_unlock(d);
			struct nbd_conn *c = NULL;
			char why[256];
			int err = conn_open(d->uri, &c, why, sizeof(why));
			int64_t size = err ? -1 : nbd_get_size(c->h);
			mu_lock(d);
			/* The size the export had at open, or what a refresh
			 * found since (read under mu: it may have moved). */
			if (!err && size != (int64_t)d->export_size) {
				mu_unlock(d);
				conn_close(c);
				mu_lock(d);
				err = -EIO;
			}
			if (err) {
				wait_until(d, now_ms() + pause_ms);
				pause_ms = pause_ms * 2 > RECONNECT_PAUSE_MAX_MS ? RECONNECT_PAUSE_MAX_MS
										  : pause_ms * 2;
				continue;
			}
			ORDFS_ASSERT(!d->conn);
			pause_ms = RECONNECT_PAUSE_MIN_MS;
			c->serial = ++d->serials;
			d->conn = c;
			d->reconnects++;
			pthread_cond_broadcast(&d->cv);
			continue;
		}

		/* The old connection is polled without a reference: only this
		 * thread closes connections, and its refresh waits for its
		 * requests' references alone. */
		struct nbd_conn *conns[2] = { d->conn, d->old && !d->old->dead ? d->old : NULL };
		if (!conns[0] && !conns[1]) {
			/* A dead old connection: its refresh is finishing. */
			wait_until(d, now_ms() + 10);
			continue;
		}
		if (conns[0])
			conns[0]->refs++;
		mu_unlock(d);

		bool dead[2];
		poll_conns(d, conns, dead);

		mu_lock(d);
		if (conns[0]) {
			conns[0]->refs--;
			if (conns[0]->refs == 0 && conns[0] == d->old)
				pthread_cond_broadcast(&d->cv); /* replaced meanwhile */
		}
		for (int i = 0; i < 2; i++)
			if (conns[i] && dead[i])
				conn_kill_locked(d, conns[i]);
	}
	mu_unlock(d);
	return NULL;
}

/* ---- requests ---------------------------------------------------------- */

enum nbd_op { OP_READ, OP_WRITE, OP_FLUSH, OP_TRIM, OP_ZERO, OP_BLOCK_STATUS };

/* What a block-status reply says from the offset asked: how many bytes
 * read as zeros there, and whether an extent that may hold data follows.
 * Filled on the poller thread before the completion callback runs. */
struct zero_run {
	uint64_t zeros;
	bool data_follows;
	bool answered;
};

static int on_extents(void *user_data, const char *metacontext, uint64_t offset,
		      uint32_t *entries, size_t nr_entries, int *error)
{
	struct zero_run *run = user_data;
	(void)offset;
	(void)error;
	if (strcmp(metacontext, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0 || run->answered)
		return 0;
	run->answered = true;
	for (size_t i = 0; i + 1 < nr_entries; i += 2) {
		if (!(entries[i + 1] & LIBNBD_STATE_ZERO)) {
			run->data_follows = true;
			break;
		}
		run->zeros += entries[i];
	}
	return 0;
}


static int64_t submit(struct nbd_conn *c, enum nbd_op op, void *buf, size_t len, uint64_t off,
		      uint32_t cmd_flags, struct nbd_wait *w)
{
	nbd_completion_callback cb = { .callback = on_complete, .user_data = w };
	nbd_call_ok();
	switch (op) {
	case OP_READ:
		return nbd_aio_pread(c->h, buf, len, off, cb, 0);
	case OP_WRITE:
		return nbd_aio_pwrite(c->h, buf, len, off, cb, cmd_flags);
	case OP_FLUSH:
		return nbd_aio_flush(c->h, cb, 0);
	case OP_TRIM:
		return nbd_aio_trim(c->h, len, off, cb, 0);
	case OP_ZERO:
		return nbd_aio_zero(c->h, len, off, cb, 0);
	case OP_BLOCK_STATUS: {
		nbd_extent_callback ecb = { .callback = on_extents, .user_data = buf };
		return nbd_aio_block_status(c->h, len, off, ecb, cb, 0);
	}
	}
	return -1;
}

/* One try of a request on connection c, under mu (given back while it
 * runs): holds a reference to c, submits, waits for the answer or, past
 * deadline, drops the connection (*timed_out).  Returns 0 or the positive
 * errno of the answer or of the submission. */
static int send_on(struct nbd_dev *d, struct nbd_conn *c, enum nbd_op op, void *buf,
		   size_t len, uint64_t off, uint32_t cmd_flags, uint64_t deadline,
		   bool *timed_out)
{
	bool is_write = op == OP_WRITE || op == OP_ZERO || op == OP_TRIM;
	struct nbd_wait w = { .dev = d, .conn = c, .is_write = is_write };
	c->refs++;
	if (w.is_write)
		c->writes_active++;
	mu_unlock(d);

	int64_t cookie = submit(c, op, buf, len, off, cmd_flags, &w);
	int submit_err = cookie == -1 ? (nbd_get_errno() ? nbd_get_errno() : EIO) : 0;
	bool submit_dead = cookie == -1 &&
			   (nbd_aio_is_dead(c->h) == 1 || nbd_aio_is_closed(c->h) == 1);
	int fd = nbd_aio_get_fd(c->h); /* for a timeout, taken without mu */
	wake_poller(d);

	mu_lock(d);
	if (cookie == -1) {
		/* Not queued: the callback was not and will not be called. */
		if (w.is_write)
			c->writes_active--;
		w.done = true;
		w.err = submit_err;
		if (submit_dead)
			conn_kill_locked(d, c);
	}
	*timed_out = false;
	while (!w.done) {
		if (!*timed_out && !wait_until(d, deadline)) {
			/* The server does not answer: drop the connection;
			 * libnbd then fails every request on it.  (The
			 * descriptor stays open until the poller closes the
			 * handle, which waits for our reference.) */
			*timed_out = true;
			if (fd >= 0)
				shutdown(fd, SHUT_RDWR);
			wake_poller(d);
		} else if (*timed_out) {
			ordfs_cond_wait(&d->cv, &d->mu);
		}
	}
	ORDFS_ASSERT(c->refs > 0);
	if (--c->refs == 0 && c == d->old)
		pthread_cond_broadcast(&d->cv); /* its refresh waits for this */
	return w.err;
}

/* One request, sent again on a new connection if its connection dies,
 * until the device's timeout.  Returns 0 or a negative errno. */
static int request(struct nbd_dev *d, enum nbd_op op, void *buf, size_t len, uint64_t off,
		   uint32_t cmd_flags)
{
	uint64_t deadline = now_ms() + d->timeout_ms;

	mu_lock(d);
	for (;;) {
		while (!d->conn && !d->stopping)
			if (!wait_until(d, deadline))
				goto timed_out;
		if (d->stopping)
			break;

		struct nbd_conn *c = d->conn;
		bool timed_out;
		int err = send_on(d, c, op, buf, len, off, cmd_flags, deadline, &timed_out);
		if (err == 0) {
			mu_unlock(d);
			return 0;
		}
		if (!is_connection_loss(err) && !c->dead) {
			mu_unlock(d);
			return -err;
		}
		conn_kill_locked(d, c);
		if (timed_out || now_ms() >= deadline)
			goto timed_out;
	}
	mu_unlock(d);
	return -EIO;
timed_out:
	mu_unlock(d);
	return -EIO;
}

/* Splits a transfer into requests the server takes. */
static int transfer(struct nbd_dev *d, enum nbd_op op, void *buf, size_t len, uint64_t off,
		    uint32_t cmd_flags)
{
	uint64_t size = blockdev_size(&d->bd);
	if (off > size || len > size - off)
		return -EIO;
	uint8_t *p = buf;
	while (len > 0) {
		size_t n = len > d->max_request ? (size_t)d->max_request : len;
		int err = request(d, op, p, n, off, cmd_flags);
		if (err)
			return err;
		if (p)
			p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int nbdev_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	return transfer(to_nbd(bd), OP_READ, buf, len, off, 0);
}

static int nbdev_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	return transfer(to_nbd(bd), OP_WRITE, (void *)buf, len, off, 0);
}

static int nbdev_flush(struct blockdev *bd);

static int nbdev_write_fua(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct nbd_dev *d = to_nbd(bd);
	if (!d->can_fua) {
		int err = nbdev_write(bd, buf, len, off);
		return err ? err : nbdev_flush(bd);
	}
	return transfer(d, OP_WRITE, (void *)buf, len, off, LIBNBD_CMD_FLAG_FUA);
}

static int nbdev_flush(struct blockdev *bd)
{
	struct nbd_dev *d = to_nbd(bd);
	if (!d->can_flush)
		return 0; /* accepted at open: nobarrier */

	/* Writes acknowledged from here on are not covered by this flush.
	 * The connection is known by its serial number afterwards: c may be
	 * closed meanwhile, and its memory become another connection's. */
	mu_lock(d);
	struct nbd_conn *c = d->conn;
	uint64_t serial = c ? c->serial : 0;
	uint64_t acked_before = c ? c->writes_acked : 0;
	mu_unlock(d);

	int err = request(d, OP_FLUSH, NULL, 0, 0, 0);

	mu_lock(d);
	/* A refresh's old connection may hold writes acknowledged before
	 * this flush that it alone can make durable: wait until it has. */
	while (d->old && !d->stopping)
		ordfs_cond_wait(&d->cv, &d->mu);
	if (d->lost_writes) {
		/* The connection died since the last good flush with writes the
		 * server may have lost: this flush cannot vouch for them. */
		d->lost_writes = false;
		if (!err)
			err = -EIO;
	} else if (!err && c && d->conn && d->conn->serial == serial) {
		d->conn->writes_acked -= acked_before;
	}
	mu_unlock(d);
	return err;
}

/* Trim and zero carry no data: split only by the protocol's 32-bit
 * length. */
static int no_data_range(struct nbd_dev *d, enum nbd_op op, uint64_t off, uint64_t len)
{
	uint64_t size = blockdev_size(&d->bd);
	if (off > size || len > size - off)
		return -EIO;
	while (len > 0) {
		uint64_t n = len > (1ull << 30) ? (1ull << 30) : len;
		int err = request(d, op, NULL, (size_t)n, off, 0);
		if (err)
			return err;
		off += n;
		len -= n;
	}
	return 0;
}

static int nbdev_discard(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct nbd_dev *d = to_nbd(bd);
	return d->can_trim ? no_data_range(d, OP_TRIM, off, len) : -EOPNOTSUPP;
}

static int nbdev_write_zeroes(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct nbd_dev *d = to_nbd(bd);
	return d->can_zero ? no_data_range(d, OP_ZERO, off, len) : -EOPNOTSUPP;
}

/* The first offset >= off that may hold data, asking the server a range
 * of up to 2 GiB at a time until one of its answers ends in data. */
static uint64_t nbdev_next_data(struct blockdev *bd, uint64_t off)
{
	struct nbd_dev *d = to_nbd(bd);
	if (!d->can_block_status)
		return off;
	uint64_t at = off, size = blockdev_size(bd);
	while (at < size) {
		uint64_t len = size - at < (1ull << 31) ? size - at : (1ull << 31);
		struct zero_run run = { 0 };
		if (request(d, OP_BLOCK_STATUS, &run, (size_t)len, at, 0) != 0 || !run.answered ||
		    run.zeros == 0)
			return at;
		at = run.zeros < size - at ? at + run.zeros : size;
		if (run.data_follows)
			break;
	}
	return at;
}

/* The connection a refresh replaced (d->old): waits until no request
 * uses it (the poller drives it meanwhile), flushes it if it acknowledged
 * writes since its last good flush, and hands it to the poller to close.
 * A failed flush, or the connection dead with such writes
 * (conn_kill_locked), makes the next flush fail: the lost-writes rule. */
static void retire_old(struct nbd_dev *d, struct nbd_conn *c)
{
	mu_lock(d);
	ORDFS_ASSERT(d->old == c && d->conn != c);
	/* Each request ends by its deadline, when the poller drops its
	 * connection. */
	while (c->refs > 0)
		ordfs_cond_wait(&d->cv, &d->mu);
	if (!c->dead && d->can_flush && c->writes_acked > 0) {
		bool timed_out;
		int err = send_on(d, c, OP_FLUSH, NULL, 0, 0, 0, now_ms() + d->timeout_ms,
				  &timed_out);
		if (err)
			d->lost_writes = true;
		else
			c->writes_acked = 0;
	}
	ORDFS_ASSERT(c->refs == 0);
	c->dead = true;
	d->old = NULL;
	c->next = d->retired;
	d->retired = c;
	pthread_cond_broadcast(&d->cv);
	mu_unlock(d);
	wake_poller(d);
}

/* See "The size" at the top.  -EUCLEAN: the export is smaller than the
 * device; -EIO: no connection, or one that would not serve the device's
 * requests (conn_serves). */
static int nbdev_refresh_size(struct blockdev *bd, uint64_t *size)
{
	struct nbd_dev *d = to_nbd(bd);
	ordfs_mutex_lock(&d->refresh_mu);
	struct nbd_conn *c = NULL;
	char why[256];
	int err = conn_open(d->uri, &c, why, sizeof(why));
	int64_t found = err ? -1 : nbd_get_size(c->h);
	uint64_t cur = blockdev_size(bd);
	if (!err && found < 0)
		err = -EIO;
	else if (!err && (uint64_t)found < cur)
		err = -EUCLEAN;
	else if (!err && (uint64_t)found > cur && !conn_serves(d, c))
		err = -EIO;
	if (err || (uint64_t)found == cur) {
		if (c)
			conn_close(c);
		if (!err)
			*size = cur;
		ordfs_mutex_unlock(&d->refresh_mu);
		return err;
	}

	/* The new connection goes live before the size grows. */
	mu_lock(d);
	ORDFS_ASSERT(!d->old);
	d->export_size = (uint64_t)found;
	struct nbd_conn *old = d->conn;
	if (old) {
		c->serial = ++d->serials;
		d->conn = c;
		d->old = old;
		c = NULL;
		pthread_cond_broadcast(&d->cv);
	}
	mu_unlock(d);
	/* Reconnecting: the poller's next connection has the new size. */
	if (c)
		conn_close(c);
	wake_poller(d);
	*size = blockdev_grow_size(bd, (uint64_t)found);
	if (old)
		retire_old(d, old);
	ordfs_mutex_unlock(&d->refresh_mu);
	return 0;
}

static void nbdev_destroy(struct blockdev *bd)
{
	struct nbd_dev *d = to_nbd(bd);
	mu_lock(d);
	d->stopping = true;
	pthread_cond_broadcast(&d->cv);
	mu_unlock(d);
	wake_poller(d);
	pthread_join(d->poller, NULL);
	/* Every request and refresh has returned: the caller destroys an
	 * idle device. */
	ORDFS_ASSERT(!d->old);
	while (d->retired) {
		struct nbd_conn *c = d->retired;
		d->retired = c->next;
		conn_close(c);
	}
	struct nbd_conn *conns[2] = { d->conn, d->dying };
	for (int i = 0; i < 2; i++) {
		if (!conns[i])
			continue;
		ORDFS_ASSERT(conns[i]->refs == 0);
		if (!conns[i]->dead)
			nbd_shutdown(conns[i]->h, 0);
		nbd_close(conns[i]->h);
		free(conns[i]);
	}
	close(d->wake_fd);
	pthread_cond_destroy(&d->cv);
	ordfs_mutex_destroy(&d->mu);
	ordfs_mutex_destroy(&d->refresh_mu);
	free(d->uri);
	free(d);
}

static const struct blockdev_ops nbd_ops = {
	.read = nbdev_read,
	.write = nbdev_write,
	.flush = nbdev_flush,
	.destroy = nbdev_destroy,
	.discard = nbdev_discard,
	.write_fua = nbdev_write_fua,
	.write_zeroes = nbdev_write_zeroes,
	.next_data = nbdev_next_data,
	.refresh_size = nbdev_refresh_size,
};

/* ---- opening ------------------------------------------------------------ */

bool blockdev_is_nbd_uri(const char *name)
{
	return strncmp(name, "nbd://", 6) == 0 || strncmp(name, "nbds://", 7) == 0 ||
	       strncmp(name, "nbd+unix://", 11) == 0 || strncmp(name, "nbds+unix://", 12) == 0 ||
	       strncmp(name, "nbd+vsock://", 12) == 0 || strncmp(name, "nbds+vsock://", 13) == 0;
}

int blockdev_nbd_open(const char *uri, unsigned flags, unsigned timeout_ms,
		      struct blockdev **out, char *why, size_t why_len)
{
	struct nbd_conn *c = NULL;
	int err = conn_open(uri, &c, why, why_len);
	if (err)
		return err;

	struct nbd_handle *h = c->h;
	int64_t size = nbd_get_size(h);
	if (size < 0) {
		snprintf(why, why_len, "cannot get the export's size: %s", nbd_get_error());
		err = -EIO;
	} else if (!(flags & BLOCKDEV_READONLY) && nbd_is_read_only(h) == 1) {
		snprintf(why, why_len, "the NBD export is read-only");
		err = -EROFS;
	} else if (!(flags & BLOCKDEV_READONLY) && nbd_can_flush(h) != 1 &&
		   !(flags & BLOCKDEV_NO_FLUSH_OK)) {
		snprintf(why, why_len, "the NBD server cannot flush (no NBD_CMD_FLUSH): nothing "
			 "written could be made durable (a mount with -o nobarrier accepts that)");
		err = -EOPNOTSUPP;
	}
	struct nbd_dev *d = err ? NULL : calloc(1, sizeof(*d));
	if (!err && !d) {
		snprintf(why, why_len, "out of memory");
		err = -ENOMEM;
	}
	if (err) {
		nbd_close(h);
		free(c);
		return err;
	}

	d->bd.ops = &nbd_ops;
	d->bd.size = (uint64_t)size;
	d->export_size = (uint64_t)size;
	d->flags = flags;
	d->timeout_ms = timeout_ms ? timeout_ms : BLOCKDEV_NBD_DEFAULT_TIMEOUT_MS;
	d->can_flush = nbd_can_flush(h) == 1;
	d->can_fua = d->can_flush && nbd_can_fua(h) == 1 && !(flags & BLOCKDEV_NO_FUA);
	d->can_trim = nbd_can_trim(h) == 1;
	d->can_zero = nbd_can_zero(h) == 1;
	d->can_block_status = nbd_can_meta_context(h, LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
	d->bd.fua = d->can_fua;
	int64_t max = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
	d->max_request = max > 0 && max < NBD_MAX_REQUEST ? (uint64_t)max : NBD_MAX_REQUEST;
	c->serial = ++d->serials;
	d->conn = c;
	d->uri = strdup(uri);
	d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ordfs_mutex_init(&d->mu, LOCK_BLOCKDEV_NBD, "NBD device mutex");
	ordfs_mutex_init(&d->refresh_mu, LOCK_BLOCKDEV_REFRESH, "NBD size refresh mutex");
	pthread_cond_init(&d->cv, NULL);
	if (!d->uri || d->wake_fd < 0 || pthread_create(&d->poller, NULL, poller_main, d) != 0) {
		snprintf(why, why_len, "cannot start the NBD connection's thread");
		if (d->wake_fd >= 0)
			close(d->wake_fd);
		pthread_cond_destroy(&d->cv);
		ordfs_mutex_destroy(&d->mu);
		ordfs_mutex_destroy(&d->refresh_mu);
		free(d->uri);
		free(d);
		nbd_close(h);
		free(c);
		return -ENOMEM;
	}
	*out = &d->bd;
	return 0;
}

void blockdev_nbd_info(struct blockdev *bd, struct blockdev_nbd_info *out)
{
	struct nbd_dev *d = to_nbd(bd);
	mu_lock(d);
	out->can_flush = d->can_flush;
	out->can_fua = d->can_fua;
	out->can_trim = d->can_trim;
	out->reconnects = d->reconnects;
	out->connected = d->conn != NULL;
	mu_unlock(d);
}

bool blockdev_is_nbd(const struct blockdev *bd)
{
	return bd->ops == &nbd_ops;
}
