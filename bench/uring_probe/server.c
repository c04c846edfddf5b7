/*
 * server.c - the probe's FUSE server: opens /dev/fuse, mounts it with
 * mount(2), answers INIT, and serves the filesystem by read() and writev()
 * on /dev/fuse with one or more threads; with --transport uring it
 * negotiates FUSE_OVER_IO_URING in INIT and hands the requests over to the
 * rings of transport_uring.c, one /dev/fuse thread staying for INIT and
 * what the kernel still sends there (FORGET, INTERRUPT, and everything if
 * the rings' registration fails).
 */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define PROBE_MAX_WRITE (128u * 1024)
#define PROBE_MINOR 42	/* the protocol this program knows: io_uring's */

const char *transport_name(enum transport t)
{
	switch (t) {
	case T_DEV: return "dev";
	case T_URING: return "uring";
	case T_LIBFUSE: return "libfuse";
	}
	return "?";
}

void slog(const struct server *s, const char *fmt, ...)
{
	if (s && s->o->quiet)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fuse_transport_probe[server %d]: %s\n", (int)getpid(), line);
}

static void note(struct server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct server *s, const char *fmt, ...)
{
	if (!s->st)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->st->note, sizeof(s->st->note), fmt, ap);
	va_end(ap);
}

void stats_sum(const struct shared_stats *st, struct stat_sum *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < STAT_SLOTS; i++) {
		const struct stat_slot *sl = &st->slot[i];
		sum->ring += __atomic_load_n(&sl->ring, __ATOMIC_RELAXED);
		sum->dev += __atomic_load_n(&sl->dev, __ATOMIC_RELAXED);
		for (int o = 0; o < STAT_OPS; o++)
			sum->op[o] += __atomic_load_n(&sl->op[o], __ATOMIC_RELAXED);
	}
}

void server_thread_done(struct server *s)
{
	if (__atomic_sub_fetch(&s->running, 1, __ATOMIC_SEQ_CST) == 0)
		pthread_kill(s->main_thread, SIGUSR1);
}

static void set_state(struct server *s, int state)
{
	if (s->st)
		__atomic_store_n(&s->st->state, state, __ATOMIC_SEQ_CST);
}

/* A reply on /dev/fuse.  ENOENT: the request is gone (interrupted or the
 * connection aborted): not an error. */
static int dev_reply(struct server *s, uint64_t unique, int error, const void *arg, size_t len)
{
	struct fuse_out_header oh = {
		.len = (uint32_t)(sizeof(oh) + len),
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &oh, .iov_len = sizeof(oh) },
		{ .iov_base = (void *)arg, .iov_len = len },
	};
	if (writev(s->fd, iov, len ? 2 : 1) < 0) {
		if (errno == ENOENT)
			return 0;
		return -errno;
	}
	return 0;
}

/*
 * INIT.  With --transport uring, FUSE_OVER_IO_URING is asked for only if
 * the kernel offers it and the rings could be made (uring_prepare) before
 * the reply: once the kernel has it, it holds every request until each
 * queue has an entry registered, and registration is refused (EAGAIN)
 * until this reply is in.  A failed REGISTER makes the kernel drop
 * io_uring for the connection and use /dev/fuse again.
 */
static int do_init(struct server *s, const struct fuse_in_header *ih, const void *arg, size_t len)
{
	struct fuse_init_in in;
	memset(&in, 0, sizeof(in));
	if (len < 16)
		return dev_reply(s, ih->unique, -EINVAL, NULL, 0);
	memcpy(&in, arg, len < sizeof(in) ? len : sizeof(in));
	uint64_t offered = in.flags;
	if ((in.flags & FUSE_INIT_EXT) && len >= sizeof(in))
		offered |= (uint64_t)in.flags2 << 32;
	if (s->st)
		s->st->proto_minor = in.minor;
	if (in.major != FUSE_KERNEL_VERSION) {
		slog(s, "kernel speaks FUSE %u.%u, this program 7.x only", in.major, in.minor);
		dev_reply(s, ih->unique, -EPROTO, NULL, 0);
		return -EPROTO;
	}

	uint64_t want = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_PARALLEL_DIROPS |
			FUSE_ATOMIC_O_TRUNC | FUSE_INIT_EXT;
	bool offered_uring = (offered & FUSE_OVER_IO_URING) != 0;
	if (s->st)
		s->st->uring_offered = offered_uring;
	uint64_t flags = want & offered;
	s->max_write = PROBE_MAX_WRITE;
	uint32_t max_pages = (flags & FUSE_MAX_PAGES) ? s->max_write / 4096 : 32;
	size_t payload = s->max_write;
	if (payload < (size_t)max_pages * 4096)
		payload = (size_t)max_pages * 4096;
	if (payload < FUSE_MIN_READ_BUFFER)
		payload = FUSE_MIN_READ_BUFFER;
	s->max_payload = payload;

	if (s->o->transport == T_URING) {
		if (!offered_uring) {
			if (s->o->require_uring) {
				slog(s, "the kernel does not offer FUSE_OVER_IO_URING in INIT (is %s "
				     "on? is the kernel 6.14 or later with CONFIG_FUSE_IO_URING?): "
				     "refusing the mount (--require-uring)", ENABLE_URING_PATH);
				note(s, "uring not offered: refused");
				dev_reply(s, ih->unique, -EPROTO, NULL, 0);
				umount2(s->mnt, MNT_DETACH);
				s->exit_status = 3;
				set_state(s, ST_FAILED);
				return -EPROTO;
			}
			slog(s, "the kernel does not offer FUSE_OVER_IO_URING in INIT (is %s on?): "
			     "serving over /dev/fuse", ENABLE_URING_PATH);
			note(s, "uring not offered: dev fallback");
		} else {
			s->pool = uring_prepare(s);
			if (s->pool) {
				flags |= FUSE_OVER_IO_URING;
			} else {
				slog(s, "the rings could not be set up: serving over /dev/fuse");
				note(s, "ring setup failed: dev fallback");
			}
		}
	}

	struct fuse_init_out out;
	memset(&out, 0, sizeof(out));
	out.major = FUSE_KERNEL_VERSION;
	out.minor = in.minor < PROBE_MINOR ? in.minor : PROBE_MINOR;
	out.max_readahead = in.max_readahead;
	out.flags = (uint32_t)flags;
	out.flags2 = (uint32_t)(flags >> 32);
	out.max_write = s->max_write;
	out.time_gran = 1;
	out.max_pages = (uint16_t)max_pages;
	size_t outlen = in.minor >= 23 ? sizeof(out) : 24;
	int r = dev_reply(s, ih->unique, 0, &out, outlen);
	if (s->pool) {
		uring_go(s->pool, r == 0);	/* REGISTER only after the reply */
	} else if (r == 0) {
		if (s->st)
			s->st->uring_active = 0;
		set_state(s, ST_READY);
	}
	return r;
}

struct dev_arg {
	struct server *s;
	int slot;
	pthread_t tid;
};

static void *dev_thread(void *arg)
{
	struct dev_arg *a = arg;
	struct server *s = a->s;
	/* The kernel wants room for a whole WRITE: header, fuse_write_in and
	 * max_write bytes. */
	size_t bufsize = PROBE_MAX_WRITE + 4096;
	size_t outcap = PROBE_MAX_WRITE + 4096;
	char *buf = NULL, *out = malloc(outcap);
	if (posix_memalign((void **)&buf, 4096, bufsize) || !out) {
		slog(s, "out of memory");
		s->exit_status = 1;
		goto done;
	}
	for (;;) {
		ssize_t n = read(s->fd, buf, bufsize);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == ENOENT)
				continue;
			if (errno == ENODEV || errno == ECONNABORTED)
				break;	/* unmounted or aborted: the end */
			slog(s, "read /dev/fuse: %s", strerror(errno));
			s->exit_status = 1;
			break;
		}
		if ((size_t)n < sizeof(struct fuse_in_header)) {
			slog(s, "short request (%zd bytes)", n);
			continue;
		}
		const struct fuse_in_header *ih = (const struct fuse_in_header *)buf;
		stat_add(s->st, a->slot, false, ih->opcode);
		const char *args = buf + sizeof(*ih);
		size_t alen = (size_t)n - sizeof(*ih);
		if (ih->opcode == FUSE_INIT) {
			int r = do_init(s, ih, args, alen);
			if (r < 0 && r != -EPROTO) {
				slog(s, "INIT reply: %s", strerror(-r));
				s->exit_status = 1;
			}
			continue;
		}
		size_t hs = probefs_op_in_size(ih->opcode);
		if (hs > alen)
			hs = alen;
		int r = probefs_handle(s->fs, ih, args, hs, args + hs, alen - hs, out, outcap);
		if (r == PROBE_NOREPLY)
			continue;
		r = dev_reply(s, ih->unique, r < 0 ? r : 0, out, r > 0 ? (size_t)r : 0);
		if (r == -ENODEV)
			break;
		if (r < 0)
			slog(s, "reply on /dev/fuse: %s", strerror(-r));
	}
done:
	free(buf);
	free(out);
	server_thread_done(s);
	return NULL;
}

int server_run(const struct probe_opts *o, const char *mnt, struct shared_stats *st)
{
	if (o->transport == T_LIBFUSE)
		return server_run_libfuse(o, mnt, st);

	struct server s;
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.mnt = mnt;
	s.st = st;
	s.main_thread = pthread_self();
	s.fd = -1;

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	s.fs = probefs_new(st);
	if (!s.fs) {
		slog(&s, "out of memory");
		return 1;
	}
	s.fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s.fd < 0) {
		slog(&s, "open /dev/fuse: %s", strerror(errno));
		probefs_free(s.fs);
		set_state(&s, ST_FAILED);
		return 1;
	}
	struct stat mst;
	if (stat(mnt, &mst) < 0) {
		slog(&s, "%s: %s", mnt, strerror(errno));
		goto fail;
	}
	char opts[128];
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=%o,user_id=%u,group_id=%u", s.fd,
		 (unsigned)(S_IFDIR | 0755), (unsigned)getuid(), (unsigned)getgid());
	if (mount("fuse_transport_probe", mnt, "fuse.fuse_transport_probe",
		  MS_NOSUID | MS_NODEV | MS_NOATIME, opts) < 0) {
		slog(&s, "mount %s: %s", mnt, strerror(errno));
		goto fail;
	}

	int nthreads = o->transport == T_DEV ? (o->dev_threads > 0 ? o->dev_threads : 1) : 1;
	struct dev_arg *a = calloc((size_t)nthreads, sizeof(*a));
	if (!a) {
		umount2(mnt, MNT_DETACH);
		goto fail;
	}
	s.running = nthreads;
	int started = 0;
	for (int i = 0; i < nthreads; i++) {
		a[i].s = &s;
		a[i].slot = i;
		if (pthread_create(&a[i].tid, NULL, dev_thread, &a[i]) != 0) {
			slog(&s, "pthread_create failed");
			umount2(mnt, MNT_DETACH);
			s.exit_status = 1;
			__atomic_sub_fetch(&s.running, nthreads - i, __ATOMIC_SEQ_CST);
			break;
		}
		started++;
	}

	/* Until every thread has ended: SIGINT/SIGTERM unmount (lazily: open
	 * files keep the connection until closed); the threads end when the
	 * kernel ends the connection. */
	bool unmounted = false;
	while (__atomic_load_n(&s.running, __ATOMIC_SEQ_CST) > 0) {
		int sig = 0;
		sigwait(&set, &sig);
		if ((sig == SIGINT || sig == SIGTERM) && !unmounted) {
			slog(&s, "signal %d: unmounting %s", sig, mnt);
			if (umount2(mnt, MNT_DETACH) < 0)
				slog(&s, "umount %s: %s", mnt, strerror(errno));
			unmounted = true;
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(a[i].tid, NULL);
	free(a);
	if (s.pool)
		uring_join(s.pool);
	close(s.fd);
	probefs_free(s.fs);
	return s.exit_status;

fail:
	close(s.fd);
	probefs_free(s.fs);
	set_state(&s, ST_FAILED);
	return 1;
}
