/*
 * main.c - fuse_transport_probe's command line: serve a mount, run a load
 * against a fresh mount of each transport (bench), or check every
 * transport and its error paths (--selftest).  See README.md.
 */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
"usage: fuse_transport_probe serve MOUNTPOINT [OPTIONS]\n"
"       fuse_transport_probe bench --op OP [--clients N] [--seconds S] [OPTIONS]\n"
"       fuse_transport_probe --selftest\n"
"\n"
"A trivial in-memory filesystem (one directory, files in memory) served by\n"
"this program's own FUSE server, to measure the transport.\n"
"\n"
"  --transport dev|uring|libfuse  read()/writev() on /dev/fuse; FUSE-over-io_uring;\n"
"                           libfuse 3.14's multi-threaded loop (default dev)\n"
"  --threads N              /dev/fuse threads with dev (default: one per CPU)\n"
"  --queues N               ring queues to register (default: one per possible\n"
"                           CPU, which the kernel needs before it uses them)\n"
"  --depth N                entries per queue (default 4)\n"
"  --payload BYTES          payload buffer per entry (default: what the kernel needs)\n"
"  --require-uring          exit 3 if the kernel does not offer io_uring\n"
"                           (default: serve over /dev/fuse instead)\n"
"  --no-pin                 do not pin queue thread q to CPU q\n"
"  --taskrun none|coop|defer  io_uring task-work flags of the rings\n"
"  --no-switch              leave %s as it is (default:\n"
"                           on for the mount's INIT, then back as it was)\n"
"  --quiet                  no server messages\n"
"bench:\n"
"  --op getattr|lookup|create|read|write\n"
"  --clients N              client threads (default 1)\n"
"  --seconds S              measured time (default 2), after --warmup S (0.3)\n",
		ENABLE_URING_PATH);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- a server in a child process ---- */

struct mounted {
	pid_t pid;
	char dir[64];
	char mnt[96];
	struct shared_stats *st;
	int status;	/* the child's wait status, once reaped */
	bool reaped;
	struct rusage ru;
};

static struct mounted *volatile current;	/* for the signal handler */

static void on_signal(int sig)
{
	struct mounted *m = current;
	kswitch_restore();
	if (m && m->pid > 0) {
		umount2(m->mnt, MNT_DETACH);
		kill(m->pid, SIGTERM);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/*
 * Mounts in a child.  switch_on: turn enable_uring on for its INIT (uring
 * only) and back once the rings are registered.  Returns 0 once the server
 * says it is ready, -1 if it failed or took more than 10 s (then it is
 * reaped or killed).
 */
static int server_start(const struct probe_opts *o, bool switch_on, struct mounted *m)
{
	memset(m, 0, sizeof(*m));
	m->st = mmap(NULL, sizeof(*m->st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (m->st == MAP_FAILED) {
		m->st = NULL;
		perror("mmap");
		return -1;
	}
	strcpy(m->dir, "/tmp/fuse_transport_probe.XXXXXX");
	if (!mkdtemp(m->dir)) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(m->mnt, sizeof(m->mnt), "%s/mnt", m->dir);
	if (mkdir(m->mnt, 0755) < 0) {
		perror("mkdir");
		return -1;
	}
	if (o->transport == T_URING && switch_on) {
		int r = kswitch_set(1);
		if (r < 0)
			fprintf(stderr, "fuse_transport_probe: cannot turn %s on: %s\n",
				ENABLE_URING_PATH, strerror(-r));
	}
	fflush(NULL);
	m->pid = fork();
	if (m->pid < 0) {
		perror("fork");
		return -1;
	}
	if (m->pid == 0) {
		kswitch_forget();
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		exit(server_run(o, m->mnt, m->st));
	}
	current = m;
	double t0 = now_s();
	int rc = -1;
	while (now_s() - t0 < 10) {
		int state = __atomic_load_n(&m->st->state, __ATOMIC_SEQ_CST);
		if (state == ST_READY) {
			rc = 0;
			break;
		}
		if (state == ST_FAILED)
			break;
		if (wait4(m->pid, &m->status, WNOHANG, &m->ru) == m->pid) {
			m->reaped = true;
			break;
		}
		sleep_s(0.002);
	}
	if (o->transport == T_URING && switch_on)
		kswitch_restore();	/* the connection keeps io_uring */
	/* No stat of the mount here: with fewer queues than CPUs registered
	 * it would wait for ever (the self-test's case 6). */
	return rc;
}

/* Waits up to `secs` for the child; true if it has ended. */
static bool server_wait(struct mounted *m, double secs)
{
	double t0 = now_s();
	while (!m->reaped) {
		pid_t r = wait4(m->pid, &m->status, WNOHANG, &m->ru);
		if (r == m->pid || (r < 0 && errno == ECHILD)) {
			m->reaped = true;
			break;
		}
		if (now_s() - t0 > secs)
			return false;
		sleep_s(0.002);
	}
	return true;
}

static bool is_mountpoint(const char *dir, const char *mnt)
{
	struct stat a, b;
	if (stat(dir, &a) < 0)
		return false;
	if (stat(mnt, &b) < 0)
		return errno == ENOTCONN;	/* a dead FUSE mount */
	return a.st_dev != b.st_dev;
}

/*
 * Unmounts (if still mounted), waits for the child (15 s, then kill -9)
 * and removes the directories.  Returns the child's exit status, 128+sig
 * if killed by a signal, -1 if it had to be killed here.
 */
static int server_stop(struct mounted *m)
{
	int rc;
	if (!m->reaped && is_mountpoint(m->dir, m->mnt)) {
		int tries = 0;
		while (umount2(m->mnt, 0) < 0) {
			if (errno == EINVAL || errno == ENOENT)
				break;	/* not mounted any more */
			if (errno != EBUSY || ++tries > 50) {
				umount2(m->mnt, MNT_DETACH);
				break;
			}
			sleep_s(0.05);
		}
	} else if (is_mountpoint(m->dir, m->mnt)) {
		umount2(m->mnt, MNT_DETACH);
	}
	if (!server_wait(m, 15)) {
		fprintf(stderr, "fuse_transport_probe: server %d did not end 15 s after the "
			"unmount: killed\n", (int)m->pid);
		kill(m->pid, SIGKILL);
		server_wait(m, 5);
		rc = -1;
	} else if (WIFEXITED(m->status)) {
		rc = WEXITSTATUS(m->status);
	} else {
		rc = 128 + WTERMSIG(m->status);
	}
	current = NULL;
	rmdir(m->mnt);
	rmdir(m->dir);
	if (m->st)
		munmap(m->st, sizeof(*m->st));
	m->st = NULL;
	return rc;
}

/* ---- load ---- */

enum op { OP_GETATTR, OP_LOOKUP, OP_CREATE, OP_READ, OP_WRITE, OP_COUNT };
static const char *const op_names[OP_COUNT] = { "getattr", "lookup", "create", "read", "write" };

#define LOOKUP_NAMES 64
#define RW_BLOCKS 256	/* 1 MiB files */

struct client {
	int id;
	enum op op;
	int dirfd;
	int fd;
	char *buf;
	pthread_t tid;
	uint64_t count;
	int err;
	const char *what;
	char names[LOOKUP_NAMES][32];
} __attribute__((aligned(64)));

static volatile int go_flag, stop_flag;

static int client_setup(struct client *c)
{
	char name[64];
	c->fd = -1;
	if (posix_memalign((void **)&c->buf, 4096, 128 * 1024))
		return -ENOMEM;
	memset(c->buf, 'a' + c->id % 26, 128 * 1024);
	switch (c->op) {
	case OP_GETATTR:
		snprintf(name, sizeof(name), "g%d", c->id);
		c->fd = openat(c->dirfd, name, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
		return c->fd < 0 ? -errno : 0;
	case OP_LOOKUP:
		for (int k = 0; k < LOOKUP_NAMES; k++) {
			snprintf(c->names[k], sizeof(c->names[k]), "l%d_%d", c->id, k);
			int fd = openat(c->dirfd, c->names[k], O_CREAT | O_RDWR | O_CLOEXEC, 0644);
			if (fd < 0)
				return -errno;
			close(fd);
		}
		return 0;
	case OP_CREATE:
		return 0;
	case OP_READ:
	case OP_WRITE:
		snprintf(name, sizeof(name), "%c%d", c->op == OP_READ ? 'r' : 'w', c->id);
		c->fd = openat(c->dirfd, name, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
		if (c->fd < 0)
			return -errno;
		for (int b = 0; b < RW_BLOCKS; b += 32)
			if (pwrite(c->fd, c->buf, 128 * 1024, (off_t)b * 4096) != 128 * 1024)
				return -EIO;
		return 0;
	default:
		return -EINVAL;
	}
}

static void *client_run(void *arg)
{
	struct client *c = arg;
	struct stat sb;
	struct statx sx;
	char name[48];
	uint64_t i = 0;
	while (!__atomic_load_n(&go_flag, __ATOMIC_ACQUIRE))
		;
	while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED)) {
		switch (c->op) {
		case OP_GETATTR:
			if (fstat(c->fd, &sb) < 0) {
				c->what = "fstat";
				goto fail;
			}
			break;
		case OP_LOOKUP:
			if (statx(c->dirfd, c->names[i % LOOKUP_NAMES],
				  AT_STATX_DONT_SYNC | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0) {
				c->what = "statx";
				goto fail;
			}
			break;
		case OP_CREATE: {
			snprintf(name, sizeof(name), "c%d_%llu", c->id, (unsigned long long)i);
			int fd = openat(c->dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0) {
				c->what = "create";
				goto fail;
			}
			close(fd);
			if (unlinkat(c->dirfd, name, 0) < 0) {
				c->what = "unlink";
				goto fail;
			}
			break;
		}
		case OP_READ:
			if (pread(c->fd, c->buf, 4096, (off_t)(i % RW_BLOCKS) * 4096) != 4096) {
				c->what = "pread";
				goto fail;
			}
			break;
		case OP_WRITE:
			if (pwrite(c->fd, c->buf, 4096, (off_t)(i % RW_BLOCKS) * 4096) != 4096) {
				c->what = "pwrite";
				goto fail;
			}
			break;
		default:
			break;
		}
		i++;
		__atomic_store_n(&c->count, i, __ATOMIC_RELAXED);
	}
	return NULL;
fail:
	c->err = errno ? errno : EIO;
	return NULL;
}

static uint64_t total_count(struct client *c, int n)
{
	uint64_t t = 0;
	for (int i = 0; i < n; i++)
		t += __atomic_load_n(&c[i].count, __ATOMIC_RELAXED);
	return t;
}

static double ru_cpu(const struct rusage *r)
{
	return (double)r->ru_utime.tv_sec + (double)r->ru_utime.tv_usec / 1e6 +
	       (double)r->ru_stime.tv_sec + (double)r->ru_stime.tv_usec / 1e6;
}

static int bench(const struct probe_opts *o, bool switch_on, enum op op, int nclients,
		 double seconds, double warmup, bool allow_fallback)
{
	struct mounted m;
	install_signals();
	if (server_start(o, switch_on, &m) < 0) {
		fprintf(stderr, "fuse_transport_probe: the %s server did not start%s%s\n",
			transport_name(o->transport), m.st && m.st->note[0] ? ": " : "",
			m.st ? m.st->note : "");
		server_stop(&m);
		return 1;
	}
	int rc = 1;
	if (o->transport == T_URING && !m.st->uring_active && !allow_fallback) {
		fprintf(stderr, "fuse_transport_probe: the rings do not serve the mount (%s)\n",
			m.st->note);
		server_stop(&m);
		return 1;
	}
	int dirfd = open(m.mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct client *c = NULL;
	if (dirfd < 0 || posix_memalign((void **)&c, 64, (size_t)nclients * sizeof(*c))) {
		perror("fuse_transport_probe: open mount");
		goto out;
	}
	memset(c, 0, (size_t)nclients * sizeof(*c));
	for (int i = 0; i < nclients; i++) {
		c[i].id = i;
		c[i].op = op;
		c[i].dirfd = dirfd;
		int r = client_setup(&c[i]);
		if (r < 0) {
			fprintf(stderr, "fuse_transport_probe: setup: %s\n", strerror(-r));
			nclients = i + 1;
			goto out_clients;
		}
	}
	go_flag = stop_flag = 0;
	int started = 0;
	for (int i = 0; i < nclients; i++) {
		if (pthread_create(&c[i].tid, NULL, client_run, &c[i]) != 0)
			break;
		started++;
	}
	__atomic_store_n(&go_flag, 1, __ATOMIC_RELEASE);
	sleep_s(warmup);
	struct stat_sum s0, s1;
	struct rusage r0, r1;
	stats_sum(m.st, &s0);
	getrusage(RUSAGE_SELF, &r0);
	uint64_t c0 = total_count(c, started);
	double t0 = now_s();
	sleep_s(seconds);
	uint64_t c1 = total_count(c, started);
	double t1 = now_s();
	getrusage(RUSAGE_SELF, &r1);
	stats_sum(m.st, &s1);
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < started; i++)
		pthread_join(c[i].tid, NULL);
	uint64_t call = total_count(c, started);	/* warm-up and window */
	int err = 0;
	for (int i = 0; i < started; i++)
		if (c[i].err && !err) {
			err = c[i].err;
			fprintf(stderr, "fuse_transport_probe: client %d: %s: %s\n", i, c[i].what,
				strerror(err));
		}
	if (!err && started == nclients) {
		double ops = (double)(c1 - c0);
		double reqs = (double)((s1.ring + s1.dev) - (s0.ring + s0.dev));
		double ring = (double)(s1.ring - s0.ring);
		long csw = (r1.ru_nvcsw + r1.ru_nivcsw) - (r0.ru_nvcsw + r0.ru_nivcsw);
		double ccpu = ru_cpu(&r1) - ru_cpu(&r0);
		printf("RESULT transport=%s op=%s clients=%d seconds=%.3f ops=%.0f ops_per_s=%.0f "
		       "reqs_per_op=%.2f ring_share=%.3f client_cpu_us_per_op=%.2f "
		       "client_csw_per_op=%.3f ops_all=%llu",
		       transport_name(o->transport), op_names[op], nclients, t1 - t0, ops,
		       ops / (t1 - t0), ops > 0 ? reqs / ops : 0, reqs > 0 ? ring / reqs : 0,
		       ops > 0 ? ccpu * 1e6 / ops : 0, ops > 0 ? (double)csw / ops : 0,
		       (unsigned long long)call);
		rc = 0;
	}
out_clients:
	for (int i = 0; i < nclients; i++) {
		if (c[i].fd >= 0)
			close(c[i].fd);
		free(c[i].buf);
	}
out:
	free(c);
	if (dirfd >= 0)
		close(dirfd);
	char note[sizeof(m.st->note)];
	snprintf(note, sizeof(note), "%s", m.st->note);
	int st = server_stop(&m);
	if (rc == 0) {
		/* the server's rusage covers its whole life (mount, setup, load) */
		printf(" server_cpu_s=%.3f server_csw=%ld server_exit=%d note=\"%s\"\n",
		       ru_cpu(&m.ru), m.ru.ru_nvcsw + m.ru.ru_nivcsw, st, note);
	}
	if (st != 0) {
		fprintf(stderr, "fuse_transport_probe: the server exited with %d\n", st);
		rc = 1;
	}
	fflush(stdout);
	return rc;
}

/* ---- self-test ---- */

static int failures, checks;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;
	checks++;
	if (!ok)
		failures++;
	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void fill(char *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

static bool dir_has(const char *mnt, const char *name)
{
	DIR *d = opendir(mnt);
	if (!d)
		return false;
	bool found = false;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, name) == 0)
			found = true;
	closedir(d);
	return found;
}

static int dir_count(const char *mnt)
{
	DIR *d = opendir(mnt);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

struct rw_arg {
	const char *mnt;
	int id;
	int blocks;
	bool ok;
	char what[96];
};

/* Writes its own file block by block with its own pattern and reads it
 * back (two of these run at once: no reply may go to the wrong request). */
static void *rw_worker(void *arg)
{
	struct rw_arg *a = arg;
	char path[PATH_MAX], *w = malloc(4096), *r = malloc(4096);
	a->ok = false;
	snprintf(path, sizeof(path), "%s/rw%d", a->mnt, a->id);
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !w || !r) {
		snprintf(a->what, sizeof(a->what), "open rw%d: %s", a->id, strerror(errno));
		goto out;
	}
	for (int b = 0; b < a->blocks; b++) {
		fill(w, 4096, (unsigned)(a->id * 1000 + b));
		if (pwrite(fd, w, 4096, (off_t)b * 4096) != 4096) {
			snprintf(a->what, sizeof(a->what), "pwrite block %d: %s", b, strerror(errno));
			goto out;
		}
	}
	for (int b = 0; b < a->blocks; b++) {
		fill(w, 4096, (unsigned)(a->id * 1000 + b));
		if (pread(fd, r, 4096, (off_t)b * 4096) != 4096 || memcmp(r, w, 4096) != 0) {
			snprintf(a->what, sizeof(a->what), "block %d read back differs", b);
			goto out;
		}
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0 || sb.st_size != (off_t)a->blocks * 4096) {
		snprintf(a->what, sizeof(a->what), "size %lld, not %d", (long long)sb.st_size,
			 a->blocks * 4096);
		goto out;
	}
	if (unlink(path) < 0) {
		snprintf(a->what, sizeof(a->what), "unlink: %s", strerror(errno));
		goto out;
	}
	a->ok = true;
out:
	if (fd >= 0)
		close(fd);
	free(w);
	free(r);
	return NULL;
}

/* Every operation the benchmark uses, with its results checked. */
static void basic_checks(const char *mnt, const char *tag)
{
	char p[PATH_MAX], q[PATH_MAX];
	char *a = malloc(8192), *b = malloc(8192);
	struct stat sb;
	int fd, r;

	check(stat(mnt, &sb) == 0 && S_ISDIR(sb.st_mode), "%s: the mount's root is a directory", tag);
	snprintf(p, sizeof(p), "%s/a", mnt);
	fd = open(p, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0640);
	check(fd >= 0, "%s: create a (%s)", tag, fd < 0 ? strerror(errno) : "ok");
	if (fd < 0)
		goto out;
	check(fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0777) == 0640 &&
	      sb.st_size == 0, "%s: a is a regular file, mode 0640, size 0", tag);
	fill(a, 4096, 1);
	fill(a + 4096, 4096, 2);
	check(pwrite(fd, a, 4096, 0) == 4096 && pwrite(fd, a + 4096, 4096, 4096) == 4096,
	      "%s: two 4 KiB pwrites", tag);
	memset(&sb, 0, sizeof(sb));
	r = fstat(fd, &sb);
	check(r == 0 && sb.st_size == 8192, "%s: fstat size 8192 (%lld)", tag,
	      (long long)sb.st_size);
	check(stat(p, &sb) == 0 && sb.st_size == 8192, "%s: stat by path size 8192", tag);
	memset(b, 0, 8192);
	check(pread(fd, b, 4096, 0) == 4096 && memcmp(a, b, 4096) == 0,
	      "%s: pread 4 KiB at 0 equals what was written", tag);
	check(pread(fd, b, 4096, 4096) == 4096 && memcmp(a + 4096, b, 4096) == 0,
	      "%s: pread 4 KiB at 4096 equals what was written", tag);
	memset(b, 0, 8192);
	check(pread(fd, b, 8192, 0) == 8192 && memcmp(a, b, 8192) == 0,
	      "%s: pread 8 KiB at 0 in one call", tag);
	check(pread(fd, b, 4096, 8192) == 0, "%s: pread at EOF returns 0", tag);
	check(pread(fd, b, 100, 8100) == 92 && memcmp(a + 8100, b, 92) == 0,
	      "%s: pread across EOF returns the 92 bytes left", tag);
	int fd2 = open(p, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0640);
	check(fd2 < 0 && errno == EEXIST, "%s: O_EXCL create of an existing name: EEXIST", tag);
	if (fd2 >= 0)
		close(fd2);
	check(dir_has(mnt, "a"), "%s: readdir lists a", tag);
	snprintf(q, sizeof(q), "%s/b", mnt);
	fd2 = open(q, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	check(fd2 >= 0 && ftruncate(fd2, 10000) == 0 && stat(q, &sb) == 0 && sb.st_size == 10000,
	      "%s: ftruncate b to 10000", tag);
	if (fd2 >= 0)
		close(fd2);
	fd2 = open(q, O_RDWR | O_TRUNC | O_CLOEXEC);
	check(fd2 >= 0 && fstat(fd2, &sb) == 0 && sb.st_size == 0, "%s: O_TRUNC open empties b",
	      tag);
	if (fd2 >= 0)
		close(fd2);
	check(unlink(p) == 0, "%s: unlink a", tag);
	check(stat(p, &sb) < 0 && errno == ENOENT, "%s: a is gone (stat: ENOENT)", tag);
	check(!dir_has(mnt, "a") && dir_has(mnt, "b"), "%s: readdir lists b, not a", tag);
	memset(b, 0, 8192);
	check(pread(fd, b, 8192, 0) == 8192 && memcmp(a, b, 8192) == 0,
	      "%s: the unlinked a still reads through its open file", tag);
	close(fd);
	int bad = 0;
	for (int i = 0; i < 300 && !bad; i++) {
		snprintf(p, sizeof(p), "%s/c%d", mnt, i);
		fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || stat(p, &sb) < 0)
			bad = 1;
		if (fd >= 0)
			close(fd);
		if (unlink(p) < 0 || stat(p, &sb) == 0)
			bad = 2;
	}
	check(!bad && dir_count(mnt) == 1, "%s: 300 create+unlink, visible then gone (%d entries left)",
	      tag, dir_count(mnt));
	snprintf(p, sizeof(p), "%s/b", mnt);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	bad = fd < 0;
	for (int i = 0; i < 300 && !bad; i++)
		if (fstat(fd, &sb) < 0)
			bad = 1;
	check(!bad, "%s: 300 fstat", tag);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 300 && !bad; i++)
		if (stat(p, &sb) < 0)
			bad = 1;
	check(!bad, "%s: 300 lookups of b", tag);
	struct statvfs sv;
	check(statvfs(mnt, &sv) == 0 && sv.f_bsize == 4096, "%s: statfs", tag);

	struct rw_arg ra[2];
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		ra[i] = (struct rw_arg){ .mnt = mnt, .id = i, .blocks = 128 };
		pthread_create(&t[i], NULL, rw_worker, &ra[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		check(ra[i].ok, "%s: client %d of 2 at once: 128 x 4 KiB written and read back%s%s",
		      tag, i, ra[i].ok ? "" : ": ", ra[i].what);
	}
	check(unlink(q) == 0 && dir_count(mnt) == 0, "%s: the directory ends empty", tag);
out:
	free(a);
	free(b);
}

/* Where requests went: with the rings on, everything but INIT and FORGET
 * must have come from them. */
static void check_routes(struct mounted *m, const char *tag, bool want_ring)
{
	struct stat_sum s;
	stats_sum(m->st, &s);
	uint64_t dev_other = s.dev - s.op[FUSE_INIT] - s.op[FUSE_FORGET] - s.op[FUSE_BATCH_FORGET] -
			     s.op[FUSE_INTERRUPT];
	/* op[] counts both routes: FORGETs come on /dev/fuse only */
	if (want_ring)
		check(s.ring > 0 && dev_other == 0,
		      "%s: %llu requests from the rings, %llu on /dev/fuse (INIT and FORGETs: %llu)",
		      tag, (unsigned long long)s.ring, (unsigned long long)s.dev,
		      (unsigned long long)(s.dev - dev_other));
	else
		check(s.ring == 0 && s.dev > 0, "%s: %llu requests on /dev/fuse, none from a ring",
		      tag, (unsigned long long)s.dev);
}

static void check_stop(struct mounted *m, const char *tag, int want)
{
	int st = server_stop(m);
	check(st == want, "%s: unmounted, the server exited with %d (want %d)", tag, st, want);
}

struct blocked {
	char path[PATH_MAX];
	int fd;		/* >= 0: pread it; else stat path */
	int cpu;	/* >= 0: run on this CPU only */
	int done;
	ssize_t ret;
	int err;
	pthread_t tid;
};

static void *blocked_run(void *arg)
{
	struct blocked *b = arg;
	char buf[4096];
	struct stat sb;
	if (b->cpu >= 0) {
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(b->cpu, &cs);
		sched_setaffinity(0, sizeof(cs), &cs);
	}
	errno = 0;
	if (b->fd >= 0)
		b->ret = pread(b->fd, buf, sizeof(buf), 0);
	else
		b->ret = stat(b->path, &sb);
	b->err = errno;
	__atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static bool wait_done(struct blocked *b, double secs)
{
	double t0 = now_s();
	while (!__atomic_load_n(&b->done, __ATOMIC_SEQ_CST)) {
		if (now_s() - t0 > secs)
			return false;
		sleep_s(0.005);
	}
	return true;
}

/* The last resort for a client stuck in a dead mount: a forced unmount
 * aborts the FUSE connection (fusectl is not mounted here). */
static void unstick(struct mounted *m, struct blocked *b, int n)
{
	for (int i = 0; i < n; i++)
		if (!wait_done(&b[i], 0)) {
			umount2(m->mnt, MNT_FORCE);
			break;
		}
	for (int i = 0; i < n; i++)
		if (wait_done(&b[i], 10))
			pthread_join(b[i].tid, NULL);
}

/*
 * kill -9 of the server while clients are inside requests it holds (READs
 * of a "stall" file that it never answers).  The two clients run on CPU 0:
 * with io_uring and depth 1 the first READ is in queue 0's only entry, in
 * the server's hands, and the second waits in the kernel's queue for that
 * entry.  Every client must return with an error at once.
 */
static void kill_test(const struct probe_opts *o, const char *tag, int want_held)
{
	struct mounted m;
	if (server_start(o, true, &m) < 0) {
		check(false, "%s: mount", tag);
		server_stop(&m);
		return;
	}
	struct blocked b[2];
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/stall", m.mnt);
	int fd = open(p, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	check(fd >= 0, "%s: create the stall file", tag);
	for (int i = 0; i < 2; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		b[i].fd = fd;
		b[i].cpu = 0;
		pthread_create(&b[i].tid, NULL, blocked_run, &b[i]);
	}
	double t0 = now_s();
	while (__atomic_load_n(&m.st->stalled, __ATOMIC_SEQ_CST) < 1 && now_s() - t0 < 5)
		sleep_s(0.005);
	sleep_s(0.2);
	int stalled = m.st->stalled;
	check(stalled == want_held && !b[0].done && !b[1].done,
	      "%s: %d READ(s) held by the server (want %d), both clients waiting", tag, stalled,
	      want_held);
	kill(m.pid, SIGKILL);
	double tk = now_s();
	bool all = wait_done(&b[0], 5) && wait_done(&b[1], 5);
	double dt = now_s() - tk;
	check(all, "%s: after kill -9 both clients returned (%.3f s)", tag, dt);
	for (int i = 0; i < 2; i++)
		if (b[i].done)
			check(b[i].ret < 0 && (b[i].err == ENOTCONN || b[i].err == ECONNABORTED),
			      "%s: client %d's pread: %s (%s)", tag, i,
			      b[i].ret < 0 ? strerror(b[i].err) : "no error",
			      b[i].err == ENOTCONN ? "ENOTCONN" :
			      b[i].err == ECONNABORTED ? "ECONNABORTED" : "unexpected");
	unstick(&m, b, 2);
	if (fd >= 0)
		close(fd);
	struct stat sb;
	snprintf(p, sizeof(p), "%s/stall", m.mnt);
	check(stat(p, &sb) < 0 && errno == ENOTCONN, "%s: then stat in the mount: %s", tag,
	      strerror(errno));
	int st = server_stop(&m);
	check(st == 128 + SIGKILL, "%s: the server died of SIGKILL (%d), the dead mount is "
	      "unmounted", tag, st);
}

static int skip(const char *why)
{
	printf("SKIP: %s\n", why);
	return 77;
}

static int selftest(void)
{
	if (geteuid() != 0)
		return skip("needs root (mount(2) of /dev/fuse)");
	if (access("/dev/fuse", R_OK | W_OK) < 0)
		return skip("no usable /dev/fuse");
	int initial = kswitch_get();
	if (initial < 0)
		return skip("the kernel has no " ENABLE_URING_PATH
			    " (FUSE-over-io_uring needs Linux 6.14+ with CONFIG_FUSE_IO_URING)");
	FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
	int disabled = 0;
	if (f) {
		if (fscanf(f, "%d", &disabled) != 1)
			disabled = 0;
		fclose(f);
	}
	if (disabled == 2)
		return skip("io_uring is disabled (/proc/sys/kernel/io_uring_disabled is 2)");
	struct io_uring ring;
	struct io_uring_params par = { .flags = IORING_SETUP_SQE128 };
	int r = io_uring_queue_init_params(4, &ring, &par);
	if (r < 0) {
		static char why[128];
		snprintf(why, sizeof(why), "io_uring_setup with SQE128 fails: %s", strerror(-r));
		return skip(why);
	}
	io_uring_queue_exit(&ring);
	install_signals();

	struct probe_opts o;
	struct mounted m;
	memset(&o, 0, sizeof(o));
	o.quiet = true;
	o.pin = true;
	o.depth = 4;
	o.dev_threads = 2;
	printf("# kernel offers: enable_uring=%s at start, %d possible CPUs\n",
	       initial ? "Y" : "N", (int)possible_cpus());

	/* 1. each transport: every operation, then a clean unmount */
	for (int t = T_DEV; t <= T_LIBFUSE; t++) {
		o.transport = (enum transport)t;
		const char *tag = transport_name(o.transport);
		if (server_start(&o, true, &m) < 0) {
			check(false, "%s: mount (%s)", tag, m.st ? m.st->note : "");
			server_stop(&m);
			continue;
		}
		if (t == T_URING)
			check(m.st->uring_offered && m.st->uring_active,
			      "uring: the kernel offered FUSE_OVER_IO_URING (minor %u) and the rings "
			      "are registered (%s)", m.st->proto_minor, m.st->note);
		check(kswitch_get() == initial, "%s: enable_uring is back to %s once mounted", tag,
		      initial ? "Y" : "N");
		basic_checks(m.mnt, tag);
		if (t != T_LIBFUSE)
			check_routes(&m, tag, t == T_URING);
		check_stop(&m, tag, 0);
	}

	/* 2. one entry per queue, two clients at once */
	o.transport = T_URING;
	o.depth = 1;
	if (server_start(&o, true, &m) == 0 && m.st->uring_active) {
		basic_checks(m.mnt, "uring depth 1");
		check_routes(&m, "uring depth 1", true);
		check_stop(&m, "uring depth 1", 0);
	} else {
		check(false, "uring depth 1: mount");
		server_stop(&m);
	}
	o.depth = 4;

	/* 3. enable_uring off: the kernel does not offer io_uring */
	kswitch_set(0);
	if (server_start(&o, false, &m) == 0) {
		check(!m.st->uring_offered && !m.st->uring_active,
		      "enable_uring=N: not offered, served over /dev/fuse (%s)", m.st->note);
		basic_checks(m.mnt, "uring->dev fallback");
		check_routes(&m, "uring->dev fallback", false);
		check_stop(&m, "uring->dev fallback", 0);
	} else {
		check(false, "enable_uring=N: mount");
		server_stop(&m);
	}
	o.require_uring = true;
	r = server_start(&o, false, &m);
	check(r < 0 && m.st && m.st->state == ST_FAILED,
	      "enable_uring=N with --require-uring: refused (%s)", m.st ? m.st->note : "");
	{
		struct blocked b;
		memset(&b, 0, sizeof(b));
		b.fd = -1;
		b.cpu = -1;
		snprintf(b.path, sizeof(b.path), "%s/x", m.mnt);
		pthread_create(&b.tid, NULL, blocked_run, &b);
		bool done = wait_done(&b, 5);
		check(done, "enable_uring=N with --require-uring: a stat there returns (%s)",
		      done ? (b.ret < 0 ? strerror(b.err) : "ok") : "hangs");
		unstick(&m, &b, 1);
	}
	check_stop(&m, "enable_uring=N with --require-uring", 3);
	o.require_uring = false;
	kswitch_restore();

	/* 4. REGISTER refused (payload buffer smaller than the kernel needs):
	 * the kernel drops io_uring for the connection, /dev/fuse serves */
	o.payload = 4096;
	if (server_start(&o, true, &m) == 0) {
		check(m.st->uring_register_errno == EINVAL && !m.st->uring_active,
		      "payload 4 KiB: REGISTER fails with %s (%s)",
		      strerror(m.st->uring_register_errno), m.st->note);
		basic_checks(m.mnt, "uring refused->dev");
		check_routes(&m, "uring refused->dev", false);
		check_stop(&m, "uring refused->dev", 0);
	} else {
		check(false, "payload 4 KiB: mount (%s)", m.st ? m.st->note : "");
		server_stop(&m);
	}
	o.payload = 0;

	/* 5. kill -9 with clients inside requests */
	o.depth = 1;
	o.transport = T_DEV;
	kill_test(&o, "kill -9 dev", 2);	/* two /dev/fuse threads */
	o.transport = T_URING;
	kill_test(&o, "kill -9 uring depth 1", 1);	/* one held, one queued */
	o.depth = 4;

	/* 6. fewer queues than possible CPUs: the kernel never uses the
	 * rings and holds every request; kill -9 must free the client */
	if (possible_cpus() > 1) {
		o.queues = 1;
		if (server_start(&o, true, &m) == 0) {
			struct blocked b;
			memset(&b, 0, sizeof(b));
			b.fd = -1;
			b.cpu = -1;
			snprintf(b.path, sizeof(b.path), "%s/x", m.mnt);
			pthread_create(&b.tid, NULL, blocked_run, &b);
			bool done = wait_done(&b, 1);
			check(!done, "1 queue of %d: a stat waits in the kernel (%s)", (int)possible_cpus(),
			      done ? "it returned" : "still waiting after 1 s");
			kill(m.pid, SIGKILL);
			done = wait_done(&b, 5);
			check(done && b.ret < 0 && b.err == ENOTCONN,
			      "1 queue: after kill -9 the stat returns %s",
			      done ? (b.ret < 0 ? strerror(b.err) : "0") : "nothing (hangs)");
			unstick(&m, &b, 1);
			int st = server_stop(&m);
			check(st == 128 + SIGKILL, "1 queue: the dead mount is unmounted (%d)", st);
		} else {
			check(false, "1 queue: mount");
			server_stop(&m);
		}
		o.queues = 0;
	}

	/* 7. SIGTERM: the server unmounts and ends cleanly */
	o.transport = T_URING;
	if (server_start(&o, true, &m) == 0) {
		kill(m.pid, SIGTERM);
		bool ended = server_wait(&m, 10);
		check(ended && WIFEXITED(m.status) && WEXITSTATUS(m.status) == 0 &&
		      !is_mountpoint(m.dir, m.mnt), "uring: SIGTERM unmounts and exits 0");
		server_stop(&m);
	} else {
		check(false, "SIGTERM: mount");
		server_stop(&m);
	}

	kswitch_restore();
	check(kswitch_get() == initial, "enable_uring is %s again, as at the start",
	      initial ? "Y" : "N");
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}

/* ---- command line ---- */

static volatile pid_t serve_pid;

static void serve_forward(int sig)
{
	kswitch_restore();
	if (serve_pid > 0)
		kill(serve_pid, sig == SIGHUP ? SIGTERM : sig);
}

int main(int argc, char **argv)
{
	struct probe_opts o;
	memset(&o, 0, sizeof(o));
	o.transport = T_DEV;
	o.pin = true;
	o.dev_threads = (int)possible_cpus();
	bool switch_on = true, allow_fallback = false;
	int nclients = 1;
	double seconds = 2, warmup = 0.3;
	int op = -1;
	enum { O_TRANSPORT = 256, O_THREADS, O_QUEUES, O_DEPTH, O_PAYLOAD, O_REQUIRE, O_NOPIN,
	       O_TASKRUN, O_NOSWITCH, O_QUIET, O_OP, O_CLIENTS, O_SECONDS, O_WARMUP, O_SELFTEST,
	       O_FALLBACK, O_HELP };
	static const struct option lo[] = {
		{ "transport", required_argument, NULL, O_TRANSPORT },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "queues", required_argument, NULL, O_QUEUES },
		{ "depth", required_argument, NULL, O_DEPTH },
		{ "payload", required_argument, NULL, O_PAYLOAD },
		{ "require-uring", no_argument, NULL, O_REQUIRE },
		{ "no-pin", no_argument, NULL, O_NOPIN },
		{ "taskrun", required_argument, NULL, O_TASKRUN },
		{ "no-switch", no_argument, NULL, O_NOSWITCH },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "op", required_argument, NULL, O_OP },
		{ "clients", required_argument, NULL, O_CLIENTS },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "selftest", no_argument, NULL, O_SELFTEST },
		{ "allow-fallback", no_argument, NULL, O_FALLBACK },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_TRANSPORT:
			if (!strcmp(optarg, "dev"))
				o.transport = T_DEV;
			else if (!strcmp(optarg, "uring"))
				o.transport = T_URING;
			else if (!strcmp(optarg, "libfuse"))
				o.transport = T_LIBFUSE;
			else
				goto bad;
			break;
		case O_THREADS: o.dev_threads = atoi(optarg); break;
		case O_QUEUES: o.queues = atoi(optarg); break;
		case O_DEPTH: o.depth = atoi(optarg); break;
		case O_PAYLOAD: o.payload = (size_t)strtoull(optarg, NULL, 0); break;
		case O_REQUIRE: o.require_uring = true; break;
		case O_NOPIN: o.pin = false; break;
		case O_TASKRUN:
			if (!strcmp(optarg, "none"))
				o.taskrun = 0;
			else if (!strcmp(optarg, "coop"))
				o.taskrun = 1;
			else if (!strcmp(optarg, "defer"))
				o.taskrun = 2;
			else
				goto bad;
			break;
		case O_NOSWITCH: switch_on = false; break;
		case O_QUIET: o.quiet = true; break;
		case O_OP:
			for (int i = 0; i < OP_COUNT; i++)
				if (!strcmp(optarg, op_names[i]))
					op = i;
			if (op < 0)
				goto bad;
			break;
		case O_CLIENTS: nclients = atoi(optarg); break;
		case O_SECONDS: seconds = atof(optarg); break;
		case O_WARMUP: warmup = atof(optarg); break;
		case O_SELFTEST: return selftest();
		case O_FALLBACK: allow_fallback = true; break;
		case O_HELP: usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (optind >= argc)
		goto bad;
	if (!strcmp(argv[optind], "serve") && optind + 1 < argc) {
		/* In the foreground until unmounted (or SIGINT/SIGTERM, passed
		 * on to the server, which unmounts).  The server runs in a
		 * child so that this process can put enable_uring back once
		 * the rings are registered, and again whatever happens. */
		struct shared_stats *st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
					       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (st == MAP_FAILED)
			return 1;
		if (o.transport == T_URING && switch_on)
			kswitch_set(1);
		fflush(NULL);
		serve_pid = fork();
		if (serve_pid < 0)
			return 1;
		if (serve_pid == 0) {
			kswitch_forget();
			exit(server_run(&o, argv[optind + 1], st));
		}
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = serve_forward;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		int ws = 0;
		for (;;) {
			pid_t r = waitpid(serve_pid, &ws, WNOHANG);
			if (r == serve_pid || (r < 0 && errno != EINTR))
				break;
			if (__atomic_load_n(&st->state, __ATOMIC_SEQ_CST) != ST_STARTING)
				kswitch_restore();
			sleep_s(0.01);
		}
		kswitch_restore();
		return WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
	}
	if (!strcmp(argv[optind], "bench") && op >= 0 && nclients > 0 && nclients <= 64 &&
	    seconds > 0)
		return bench(&o, switch_on, (enum op)op, nclients, seconds, warmup, allow_fallback);
bad:
	usage(stderr);
	return 2;
}
