/*
 * transport.c - the session's I/O (transport.h): libfuse's loop on
 * /dev/fuse, with custom I/O that hands the rings' requests to libfuse and
 * catches their replies, and the INIT exchange that decides whether the
 * rings are used.
 *
 * The INIT exchange (Documentation/filesystems/fuse-io-uring.rst and what
 * bench/uring_probe found on 6.18):
 *  - the kernel offers FUSE_OVER_IO_URING in INIT's flags (flags2 bit 9)
 *    only while the fuse module's enable_uring is on; libfuse 3.14 does
 *    not know the flag, so the daemon sets it in the reply on its way out;
 *  - once the reply says yes, the kernel holds every request until every
 *    possible CPU's queue has an entry: so the rings, threads and buffers
 *    are made before the reply goes, and the daemon says yes only if that
 *    worked; the entries are registered after the kernel has the reply
 *    (earlier is refused with EAGAIN);
 *  - a refused registration turns io_uring off for the connection: the
 *    kernel sends everything to /dev/fuse, which the loop still serves.
 *
 * Rules: one session per process (the custom I/O callbacks get the
 * session's userdata, the daemon's context, so they find the transport
 * in a static); with io_uring=off the session is left exactly as libfuse
 * made it.
 */

#include "transport.h"

#include <errno.h>
#include <stdarg.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

#include "fuse_uring_abi.h"
#include "possible_cpus.h"
#include "uring_pool.h"
#include "../../base/log.h"
#include "../../base/ordfs_assert.h"
#include "../../lock/lock.h"

struct transport {
	struct fuse_session *se;
	enum transport_uring_mode mode;
	bool single_thread;
	/* INIT as the kernel sent it (the read callback, on the thread that
	 * runs transport_start) */
	uint64_t init_unique;
	uint64_t init_flags;  /* flags | flags2 << 32 */
	bool init_refused;    /* io_uring=on and no rings: INIT answered EPROTO */
	bool conn_ended;      /* the connection ended before the rings were
				 registered (an unmount right after the mount) */
	struct uring_pool *pool;
	/* The rings serve the mount: set before the entries are registered
	 * (a ring thread may answer ordfsctl stats before the registering
	 * thread hears back), cleared if the kernel refuses one. */
	atomic_bool uring;
	char why_not[128];    /* under note_lock once the mount is live */
	struct ordfs_mutex note_lock;
	atomic_uint_fast64_t dev_requests;
	unsigned queues;
#ifdef ORDFS_TEST_HOOKS
	size_t test_payload; /* ORDFS_TEST_URING_PAYLOAD: a payload buffer this
				size (one the kernel refuses, for the tests) */
#endif
};

static struct transport *the_transport;

/* Says why the rings do not serve the mount (ordfsctl stats reads it). */
static void set_why_not(struct transport *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_why_not(struct transport *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ordfs_mutex_lock(&t->note_lock);
	vsnprintf(t->why_not, sizeof(t->why_not), fmt, ap);
	ordfs_mutex_unlock(&t->note_lock);
	va_end(ap);
}

/* ---- custom I/O -------------------------------------------------------------- */

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	ssize_t n = read(fd, buf, len);
	struct transport *t = the_transport;
	if (n < (ssize_t)sizeof(struct fuse_in_header))
		return n;
	atomic_fetch_add_explicit(&t->dev_requests, 1, memory_order_relaxed);
	struct fuse_in_header in;
	memcpy(&in, buf, sizeof(in));
	if (in.opcode == FUSE_INIT && (size_t)n >= sizeof(in) + 5 * sizeof(uint32_t)) {
		/* fuse_init_in: major, minor, max_readahead, flags, flags2 */
		uint32_t w[5];
		memcpy(w, (char *)buf + sizeof(in), sizeof(w));
		t->init_flags = w[3];
		if (w[3] & FUSE_INIT_EXT)
			t->init_flags |= (uint64_t)w[4] << 32;
		t->init_unique = in.unique;
	}
	return n;
}

static size_t gather(const struct iovec *iov, int count, char *dst, size_t room)
{
	size_t used = 0;
	for (int i = 0; i < count; i++) {
		if (iov[i].iov_len > room - used)
			return SIZE_MAX;
		memcpy(dst + used, iov[i].iov_base, iov[i].iov_len);
		used += iov[i].iov_len;
	}
	return used;
}

/* The payload buffer the kernel accepts: max(8192, max_write,
 * max_pages pages). */
static size_t payload_size_for(const struct fuse_init_out *io)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = (io->flags & FUSE_MAX_PAGES) && io->max_pages ? io->max_pages : 32;
	size_t size = pages * page;
	if (io->max_write > size)
		size = io->max_write;
	return size < 8192 ? 8192 : size;
}

/* Decides, with the reply libfuse built, whether to say yes to io_uring;
 * makes the rings first.  True: the flag is set in *io. */
static bool accept_uring(struct transport *t, struct fuse_init_out *io)
{
	if (!(t->init_flags & FUSE_OVER_IO_URING)) {
		set_why_not(t, "the kernel does not offer FUSE over io_uring (Linux 6.14+, with "
			 "/sys/module/fuse/parameters/enable_uring on)");
		return false;
	}
	if (!(io->flags & FUSE_INIT_EXT)) {
		set_why_not(t, "INIT's reply has no flags2");
		return false;
	}
	struct uring_pool_config cfg = {
		.se = t->se,
		.fuse_fd = fuse_session_fd(t->se),
		.queues = t->queues,
		.threads_initial = uring_threads_initial(t->queues),
		.threads_max = URING_THREADS_MAX,
		.payload_size = payload_size_for(io),
	};
#ifdef ORDFS_TEST_HOOKS
	if (t->test_payload)
		cfg.payload_size = t->test_payload;
#endif
	char why[96];
	if (uring_pool_prepare(&cfg, &t->pool, why, sizeof(why)) != 0) {
		set_why_not(t, "%s", why);
		return false;
	}
	io->flags2 |= (uint32_t)(FUSE_OVER_IO_URING >> 32);
	return true;
}

/* INIT's reply on its way out. */
static ssize_t init_reply(struct transport *t, int fd, const struct iovec *iov, int count)
{
	char msg[sizeof(struct fuse_out_header) + sizeof(struct fuse_init_out)] = { 0 };
	size_t len = gather(iov, count, msg, sizeof(msg));
	t->init_unique = 0;
	if (len == SIZE_MAX || len < sizeof(struct fuse_out_header))
		return writev(fd, iov, count); /* not a reply this code knows */
	struct fuse_out_header out;
	memcpy(&out, msg, sizeof(out));
	bool yes = false;
	if (out.error == 0 && len == sizeof(msg)) {
		struct fuse_init_out io;
		memcpy(&io, msg + sizeof(out), sizeof(io));
		yes = accept_uring(t, &io);
		memcpy(msg + sizeof(out), &io, sizeof(io));
	} else if (out.error == 0) {
		set_why_not(t, "the kernel's FUSE protocol is too old");
	}
	if (!yes && out.error == 0 && t->mode == TRANSPORT_URING_ON) {
		/* io_uring=on: no mount without the rings */
		out.error = -EPROTO;
		out.len = sizeof(out);
		memcpy(msg, &out, sizeof(out));
		len = sizeof(out);
		t->init_refused = true;
	}
	ssize_t n = write(fd, msg, len);
	if (n < 0) {
		int e = errno;
		/* ENOENT: INIT is no longer waiting (the mount was aborted) */
		if (e == ENOENT || uring_conn_ended(e))
			t->conn_ended = true;
		uring_pool_stop(t->pool);
		uring_pool_free(t->pool);
		t->pool = NULL;
		errno = e;
		return n;
	}
	if (yes) {
		char why[96];
		atomic_store(&t->uring, true);
		int err = uring_pool_register(t->pool, why, sizeof(why));
		if (uring_conn_ended(-err)) {
			/* The connection ended first: unmounted (or aborted) as
			 * soon as it was mounted.  Not a refusal: the loop finds
			 * the connection gone and the daemon ends as at any
			 * unmount. */
			t->conn_ended = true;
		} else if (err) {
			atomic_store(&t->uring, false);
			set_why_not(t, "%s", why);
			ordfs_log(LOG_WARNING, "io_uring: %s: the kernel serves this mount over "
				  "/dev/fuse", why);
		}
	}
	return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	ssize_t n;
	if (uring_pool_take_reply(iov, count, &n))
		return n;
	struct transport *t = the_transport;
	if (t->init_unique && count >= 1 && iov[0].iov_len >= sizeof(struct fuse_out_header)) {
		struct fuse_out_header out;
		memcpy(&out, iov[0].iov_base, sizeof(out));
		if (out.unique == t->init_unique)
			return init_reply(t, fd, iov, count);
	}
	return writev(fd, iov, count);
}

static const struct fuse_custom_io custom_io = {
	.read = io_read,
	.writev = io_writev,
	/* no splice: libfuse then neither splices requests in nor replies out */
};

/* ---- the seam ------------------------------------------------------------------- */

/* What can be known before mounting: the switch and a ring. */
static int check_uring_possible(char *why, size_t why_len)
{
	FILE *f = fopen("/sys/module/fuse/parameters/enable_uring", "re");
	if (!f) {
		snprintf(why, why_len, "this kernel has no FUSE over io_uring (Linux 6.14+, "
			 "CONFIG_FUSE_IO_URING)");
		return -1;
	}
	int c = fgetc(f);
	fclose(f);
	if (c != 'Y' && c != '1') {
		snprintf(why, why_len, "the fuse module's enable_uring is off (as root: echo 1 > "
			 "/sys/module/fuse/parameters/enable_uring)");
		return -1;
	}
	struct io_uring ring;
	struct io_uring_params par;
	memset(&par, 0, sizeof(par));
	par.flags = IORING_SETUP_SQE128;
	int err = io_uring_queue_init_params(4, &ring, &par);
	if (err < 0) {
		snprintf(why, why_len, "cannot make an io_uring: %s (kernel.io_uring_disabled, "
			 "or the locked-memory limit?)", strerror(-err));
		return -1;
	}
	io_uring_queue_exit(&ring);
	return 0;
}

int transport_new(struct fuse_session *se, enum transport_uring_mode mode, bool single_thread,
		  struct transport **out, char *why, size_t why_len)
{
	*out = NULL;
	ORDFS_ASSERT(!the_transport);
	struct transport *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	t->se = se;
	ordfs_mutex_init(&t->note_lock, LOCK_TRANSPORT, "transport_note");
	t->mode = mode;
	t->single_thread = single_thread;
	t->queues = possible_cpus();
#ifdef ORDFS_TEST_HOOKS
	/* ORDFS_TEST_URING=require: auto behaves as on, so a test tier over
	 * io_uring cannot pass over /dev/fuse unnoticed. */
	const char *req = getenv("ORDFS_TEST_URING");
	if (t->mode == TRANSPORT_URING_AUTO && req && strcmp(req, "require") == 0)
		t->mode = TRANSPORT_URING_ON;
	const char *pl = getenv("ORDFS_TEST_URING_PAYLOAD");
	if (pl)
		t->test_payload = strtoul(pl, NULL, 10);
#endif
	if (t->mode != TRANSPORT_URING_OFF && single_thread) {
		if (t->mode == TRANSPORT_URING_ON) {
			snprintf(why, why_len, "io_uring=on needs threads: not with -s");
			transport_destroy(t);
			return -1;
		}
		t->mode = TRANSPORT_URING_OFF;
		set_why_not(t, "-s: one thread serves /dev/fuse");
	}
	if (t->mode == TRANSPORT_URING_ON && check_uring_possible(why, why_len) != 0) {
		transport_destroy(t);
		return -1;
	}
	the_transport = t;
	*out = t;
	return 0;
}

int transport_start(struct transport *t, char *why, size_t why_len)
{
	if (t->mode == TRANSPORT_URING_OFF)
		return 0;
	int err = fuse_session_custom_io(t->se, &custom_io, fuse_session_fd(t->se));
	if (err) {
		set_why_not(t, "libfuse refused custom I/O (%s)",
			 strerror(-err));
		if (t->mode == TRANSPORT_URING_ON) {
			snprintf(why, why_len, "io_uring=on: %s", t->why_not);
			return -1;
		}
		t->mode = TRANSPORT_URING_OFF;
		return 0;
	}
	/* INIT now, before the parent hears the mount is live. */
	struct fuse_buf buf = { 0 };
	int n = fuse_session_receive_buf(t->se, &buf);
	if (n > 0)
		fuse_session_process_buf(t->se, &buf);
	free(buf.mem);
	if (t->init_refused) {
		snprintf(why, why_len, "io_uring=on: %s", t->why_not);
		return -1;
	}
	if (n == 0 || t->conn_ended) {
		/* The connection ended while the mount was set up (unmounted,
		 * or aborted, at once): no error of ours.  The loop finds it
		 * gone and the daemon ends as at any unmount. */
		return 0;
	}
	if (n < 0 || fuse_session_exited(t->se)) {
		snprintf(why, why_len, "the kernel's INIT could not be answered (%s)",
			 n < 0 ? strerror(-n) : "the connection ended");
		return -1;
	}
	if (t->mode == TRANSPORT_URING_ON && !atomic_load(&t->uring)) {
		/* accepted in INIT but the registration was refused: the mount
		 * works over /dev/fuse, which is not what was asked */
		snprintf(why, why_len, "io_uring=on: %s", t->why_not);
		return -1;
	}
	return 0;
}

int transport_serve(struct transport *t)
{
	if (t->single_thread)
		return fuse_session_loop(t->se);
	struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 16 };
	return fuse_session_loop_mt(t->se, &cfg);
}

void transport_stop(struct transport *t)
{
	if (t)
		uring_pool_stop(t->pool);
}

void transport_destroy(struct transport *t)
{
	if (!t)
		return;
	uring_pool_free(t->pool);
	if (the_transport == t)
		the_transport = NULL;
	ordfs_mutex_destroy(&t->note_lock);
	free(t);
}

void transport_get_stats(struct transport *t, struct transport_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->uring = atomic_load(&t->uring);
	ordfs_mutex_lock(&t->note_lock);
	if (!out->uring)
		snprintf(out->why_not, sizeof(out->why_not), "%s",
			 t->mode == TRANSPORT_URING_OFF && !t->why_not[0] ? "io_uring=off"
									 : t->why_not);
	ordfs_mutex_unlock(&t->note_lock);
	out->queues = out->uring ? t->queues : 0;
	struct uring_pool_stats ps;
	uring_pool_get_stats(t->pool, &ps);
	out->threads = ps.threads;
	out->threads_peak_queue = ps.threads_peak_queue;
	out->ring_requests = ps.requests;
	out->dev_requests = atomic_load_explicit(&t->dev_requests, memory_order_relaxed);
}
