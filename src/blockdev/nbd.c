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
 *  - Lock order: libnbd's handle lock, then dev->mu (the completion
 *    callback takes mu inside libnbd).  So no libnbd call is ever made
 *    with mu held.
 *  - A connection is freed (nbd_close) only by the poller, once it is
 *    dead and no request holds a reference to it.
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

	struct ordfs_mutex mu;  /* LOCK_BLOCKDEV_NBD */
	pthread_cond_t cv;      /* a completion, a new connection, stop */
	struct nbd_conn *conn;  /* the live connection; NULL while reconnecting */
	struct nbd_conn *dying; /* dead, waiting for its last reference */
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

/* Marks the live connection dead (under mu): no new request uses it, the
 * poller closes it once its requests are gone, and writes it may have
 * lost make the next flush fail. */
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

/* The poller: drives the live connection, reconnects a dead one. */
static void *poller_main(void *arg)
{
	struct nbd_dev *d = arg;
	unsigned pause_ms = RECONNECT_PAUSE_MIN_MS;

	mu_lock(d);
	while (!d->stopping) {
		/* Close a dead connection once nobody uses it. */
		if (d->dying && d->dying->refs == 0) {
			struct nbd_conn *c = d->dying;
			d->dying = NULL;
			mu_unlock(d);
			nbd_close(c->h);
			free(c);
			mu_lock(d);
			continue;
		}
		if (!d->conn) {
			if (d->dying) {
				/* Wait for its requests to see the death. */
				wait_until(d, now_ms() + 10);
				continue;
			}
			mu_unlock(d);
			struct nbd_conn *c = NULL;
			char why[256];
			int err = conn_open(d->uri, &c, why, sizeof(why));
			if (!err && nbd_get_size(c->h) != (int64_t)d->bd.size) {
				nbd_close(c->h);
				free(c);
				err = -EIO;
			}
			mu_lock(d);
			if (err) {
				wait_until(d, now_ms() + pause_ms);
				pause_ms = pause_ms * 2 > RECONNECT_PAUSE_MAX_MS ? RECONNECT_PAUSE_MAX_MS
										  : pause_ms * 2;
				continue;
			}
			pause_ms = RECONNECT_PAUSE_MIN_MS;
			d->conn = c;
			d->reconnects++;
			pthread_cond_broadcast(&d->cv);
			continue;
		}

		struct nbd_conn *c = d->conn;
		c->refs++;
		mu_unlock(d);

		nbd_call_ok();
		int fd = nbd_aio_get_fd(c->h);
		unsigned dir = fd >= 0 ? nbd_aio_get_direction(c->h) : 0;
		bool dead = fd < 0 || nbd_aio_is_dead(c->h) == 1 || nbd_aio_is_closed(c->h) == 1;
		if (!dead) {
			struct pollfd p[2] = {
				{ .fd = d->wake_fd, .events = POLLIN },
				{ .fd = fd, .events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
							     ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0)) },
			};
			int n = poll(p, 2, 1000);
			if (n > 0 && (p[0].revents & POLLIN)) {
				uint64_t v;
				ssize_t r = read(d->wake_fd, &v, sizeof(v));
				(void)r;
			}
			if (n > 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
				nbd_aio_notify_read(c->h);
			if (n > 0 && (p[1].revents & POLLOUT))
				nbd_aio_notify_write(c->h);
			dead = nbd_aio_is_dead(c->h) == 1 || nbd_aio_is_closed(c->h) == 1;
		}

		mu_lock(d);
		c->refs--;
		if (dead)
			conn_kill_locked(d, c);
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

/* One request, sent again on a new connection if its connection dies,
 * until the device's timeout.  Returns 0 or a negative errno. */
static int request(struct nbd_dev *d, enum nbd_op op, void *buf, size_t len, uint64_t off,
		   uint32_t cmd_flags)
{
	uint64_t deadline = now_ms() + d->timeout_ms;
	bool is_write = op == OP_WRITE || op == OP_ZERO || op == OP_TRIM;

	mu_lock(d);
	for (;;) {
		while (!d->conn && !d->stopping)
			if (!wait_until(d, deadline))
				goto timed_out;
		if (d->stopping)
			break;

		struct nbd_conn *c = d->conn;
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
		bool timed_out = false;
		while (!w.done) {
			if (!timed_out && !wait_until(d, deadline)) {
				/* The server does not answer: drop the connection;
				 * libnbd then fails every request on it.  (The
				 * descriptor stays open until the poller closes the
				 * handle, which waits for our reference.) */
				timed_out = true;
				if (fd >= 0)
					shutdown(fd, SHUT_RDWR);
				wake_poller(d);
			} else if (timed_out) {
				ordfs_cond_wait(&d->cv, &d->mu);
			}
		}
		c->refs--;
		if (w.err == 0) {
			mu_unlock(d);
			return 0;
		}
		if (!is_connection_loss(w.err) && !c->dead) {
			mu_unlock(d);
			return -w.err;
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
	if (off > d->bd.size || len > d->bd.size - off)
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

	/* Writes acknowledged from here on are not covered by this flush. */
	mu_lock(d);
	struct nbd_conn *c = d->conn;
	uint64_t acked_before = c ? c->writes_acked : 0;
	mu_unlock(d);

	int err = request(d, OP_FLUSH, NULL, 0, 0, 0);

	mu_lock(d);
	if (d->lost_writes) {
		/* The connection died since the last good flush with writes the
		 * server may have lost: this flush cannot vouch for them. */
		d->lost_writes = false;
		if (!err)
			err = -EIO;
	} else if (!err && c && d->conn == c) {
		c->writes_acked -= acked_before;
	}
	mu_unlock(d);
	return err;
}

/* Trim and zero carry no data: split only by the protocol's 32-bit
 * length. */
static int no_data_range(struct nbd_dev *d, enum nbd_op op, uint64_t off, uint64_t len)
{
	if (off > d->bd.size || len > d->bd.size - off)
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
	uint64_t at = off;
	while (at < bd->size) {
		uint64_t len = bd->size - at < (1ull << 31) ? bd->size - at : (1ull << 31);
		struct zero_run run = { 0 };
		if (request(d, OP_BLOCK_STATUS, &run, (size_t)len, at, 0) != 0 || !run.answered ||
		    run.zeros == 0)
			return at;
		at = run.zeros < bd->size - at ? at + run.zeros : bd->size;
		if (run.data_follows)
			break;
	}
	return at;
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
	/* Every request has returned: the caller destroys an idle device. */
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
	d->conn = c;
	d->uri = strdup(uri);
	d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ordfs_mutex_init(&d->mu, LOCK_BLOCKDEV_NBD, "NBD device mutex");
	pthread_cond_init(&d->cv, NULL);
	if (!d->uri || d->wake_fd < 0 || pthread_create(&d->poller, NULL, poller_main, d) != 0) {
		snprintf(why, why_len, "cannot start the NBD connection's thread");
		if (d->wake_fd >= 0)
			close(d->wake_fd);
		pthread_cond_destroy(&d->cv);
		ordfs_mutex_destroy(&d->mu);
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
