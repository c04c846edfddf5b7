/*
 * test_mnt_stress.c - many threads of mixed operations on shared
 * directories, against the real daemon: it stays consistent under
 * concurrency, and after kill -9 everything fsync'd is there exactly.
 *
 * Owns: the stress workload and its two tiers.
 *  - test_stress_clean: THREADS threads for ORDFS_STRESS_SECONDS (default
 *    8) s, then a clean unmount (the daemon must exit 0: under the
 *    ThreadSanitizer tier a race report makes it exit non-zero) and the
 *    checker; then a second mount verifies every file the threads last
 *    fsync'd.
 *  - test_stress_kill9: ORDFS_STRESS_KILL_ROUNDS (default 3) rounds of the
 *    same workload for 1-3 s (data=ordered, then with commit=1,
 *    data=journal, data=writeback in turn), then SIGKILL of the daemon; fsck.ordfs -f -y
 *    must repair nothing but the journal (exit 0 or 1), a second fsck -f -n
 *    must exit 0, and every fsync'd file must be exact on the next mount.
 *
 * The workload: each thread loops over create + write, write + fsync (of
 * the file and its directory), unlink, rename within and across the shared
 * directories, link, truncate, setxattr, mkdir/rmdir, readdir and read.
 * Names are either shared ("s<n>": any thread may rename, link or remove
 * them, so operations race and ENOENT/EEXIST/ENOTEMPTY are expected) or a
 * thread's own ("t<thread>_<n>": only that thread touches them).  A
 * thread's own file enters its ledger (path, size, pattern seed) after
 * fsync of the file and of its directory returned 0, and leaves it before
 * the thread changes it again.  Any other error fails the test, except
 * once the daemon has been killed on purpose.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define THREADS 8
#define DIRS 4
#define SHARED_NAMES 24
#define OWN_NAMES 6
#define MAX_FILE (48u * 1024u)

struct ledger_entry {
	bool durable;  /* fsync'd and not changed since */
	uint32_t size;
	uint64_t seed;
};

struct worker {
	struct mnt *m;
	unsigned id;
	uint64_t rng;
	bool *stop;             /* atomic */
	bool *killed;           /* atomic: errors after this are expected */
	struct ledger_entry own[DIRS][OWN_NAMES];
	uint64_t ops, fsyncs;
	char failure[256];      /* the first unexpected error, "" if none */
	uint8_t buf[MAX_FILE];
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static unsigned pick(struct worker *w, unsigned n)
{
	return (unsigned)(rng_next(&w->rng) % n);
}

static unsigned env_unsigned(const char *name, unsigned dflt)
{
	const char *v = getenv(name);
	return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

/* Records the first error that no race explains.  Returns false so callers
 * can `return note_failure(...)`. */
static bool note_failure(struct worker *w, const char *what, const char *path)
{
	int e = errno;
	if (__atomic_load_n(w->killed, __ATOMIC_ACQUIRE) || w->failure[0])
		return false;
	snprintf(w->failure, sizeof(w->failure), "thread %u: %s %s: %s", w->id, what, path,
		 strerror(e));
	return false;
}

/* Errors that racing threads cause each other on shared names. */
static bool race_errno(int e)
{
	return e == ENOENT || e == EEXIST || e == ENOTEMPTY || e == EISDIR || e == ENOTDIR ||
	       e == EINVAL || e == ENODATA;
}

static bool ok_or_race(struct worker *w, long rc, const char *what, const char *path)
{
	if (rc != -1 || race_errno(errno))
		return true;
	return note_failure(w, what, path);
}

/* Paths are made in the caller's buffer: mnt_path's buffers are shared by
 * every thread. */
struct path {
	char s[MNT_FILE_LEN + 32];
};

static const char *shared_path(struct worker *w, struct path *p, unsigned dir, unsigned n)
{
	snprintf(p->s, sizeof(p->s), "%s/d%u/s%u", w->m->mountpoint, dir, n);
	return p->s;
}

static const char *own_path(struct worker *w, struct path *p, unsigned dir, unsigned n)
{
	snprintf(p->s, sizeof(p->s), "%s/d%u/t%u_%u", w->m->mountpoint, dir, w->id, n);
	return p->s;
}

static const char *dir_path(struct worker *w, struct path *p, unsigned dir)
{
	snprintf(p->s, sizeof(p->s), "%s/d%u", w->m->mountpoint, dir);
	return p->s;
}

static bool fsync_path(struct worker *w, const char *path, bool dir)
{
	int fd = open(path, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
	if (fd < 0)
		return note_failure(w, "open for fsync", path);
	int rc = fsync(fd);
	if (rc)
		note_failure(w, "fsync", path);
	close(fd);
	return rc == 0;
}

/* Writes a thread-own file with a fresh pattern and makes it durable. */
static bool op_own_write_fsync(struct worker *w)
{
	unsigned dir = pick(w, DIRS), n = pick(w, OWN_NAMES);
	struct ledger_entry *e = &w->own[dir][n];
	struct path p, dp;
	const char *path = own_path(w, &p, dir, n);
	e->durable = false;
	uint32_t size = 1 + pick(w, MAX_FILE);
	uint64_t seed = rng_next(&w->rng);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return note_failure(w, "create", path);
	mnt_pattern_fill(w->buf, size, seed, 0);
	bool ok = write(fd, w->buf, size) == (ssize_t)size;
	if (!ok)
		note_failure(w, "write", path);
	if (ok && fsync(fd) != 0)
		ok = note_failure(w, "fsync", path);
	close(fd);
	if (ok)
		ok = fsync_path(w, dir_path(w, &dp, dir), true);
	if (ok) {
		e->durable = true;
		e->size = size;
		e->seed = seed;
		w->fsyncs++;
	}
	return ok;
}

/* Reads a thread-own file back: it must hold what the ledger says. */
static bool op_own_read(struct worker *w)
{
	unsigned dir = pick(w, DIRS), n = pick(w, OWN_NAMES);
	struct ledger_entry *e = &w->own[dir][n];
	if (!e->durable)
		return true;
	struct path p;
	const char *path = own_path(w, &p, dir, n);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return note_failure(w, "open", path);
	ssize_t got = read(fd, w->buf, MAX_FILE);
	close(fd);
	if (got < 0)
		return note_failure(w, "read", path);
	if ((uint32_t)got != e->size ||
	    mnt_pattern_mismatch(w->buf, e->size, e->seed, 0) != e->size) {
		errno = EIO;
		return note_failure(w, "read back different bytes from", path);
	}
	return true;
}

static bool op_own_unlink(struct worker *w)
{
	unsigned dir = pick(w, DIRS), n = pick(w, OWN_NAMES);
	w->own[dir][n].durable = false;
	struct path p;
	const char *path = own_path(w, &p, dir, n);
	return ok_or_race(w, unlink(path), "unlink", path);
}

static bool op_shared_create(struct worker *w)
{
	struct path p;
	const char *path = shared_path(w, &p, pick(w, DIRS), pick(w, SHARED_NAMES));
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		return ok_or_race(w, -1, "create", path);
	uint32_t len = 1 + pick(w, 8192);
	mnt_pattern_fill(w->buf, len, w->id, 0);
	bool ok = write(fd, w->buf, len) == (ssize_t)len || note_failure(w, "write", path);
	if (ok && pick(w, 4) == 0 && fsync(fd) != 0)
		ok = note_failure(w, "fsync", path);
	close(fd);
	return ok;
}

static bool op_shared_unlink(struct worker *w)
{
	struct path p;
	const char *path = shared_path(w, &p, pick(w, DIRS), pick(w, SHARED_NAMES));
	return ok_or_race(w, unlink(path), "unlink", path);
}

static bool op_shared_rename(struct worker *w)
{
	struct path pf, pt;
	const char *from = shared_path(w, &pf, pick(w, DIRS), pick(w, SHARED_NAMES));
	const char *to = shared_path(w, &pt, pick(w, DIRS), pick(w, SHARED_NAMES));
	return ok_or_race(w, rename(from, to), "rename", from);
}

static bool op_shared_link(struct worker *w)
{
	struct path pf, pt;
	const char *from = shared_path(w, &pf, pick(w, DIRS), pick(w, SHARED_NAMES));
	const char *to = shared_path(w, &pt, pick(w, DIRS), pick(w, SHARED_NAMES));
	long rc = link(from, to);
	if (rc == -1 && errno == EPERM) /* from is a directory */
		return true;
	return ok_or_race(w, rc, "link", from);
}

static bool op_shared_truncate(struct worker *w)
{
	struct path p;
	const char *path = shared_path(w, &p, pick(w, DIRS), pick(w, SHARED_NAMES));
	return ok_or_race(w, truncate(path, pick(w, 3 * 4096)), "truncate", path);
}

static bool op_shared_setxattr(struct worker *w)
{
	struct path p;
	const char *path = shared_path(w, &p, pick(w, DIRS), pick(w, SHARED_NAMES));
	char name[32], value[128];
	snprintf(name, sizeof(name), "user.t%u", pick(w, 4));
	size_t len = 1 + pick(w, sizeof(value));
	memset(value, 'a' + (int)w->id, len);
	return ok_or_race(w, setxattr(path, name, value, len, 0), "setxattr", path);
}

static bool op_shared_mkdir_rmdir(struct worker *w)
{
	struct path p;
	const char *path = shared_path(w, &p, pick(w, DIRS), pick(w, SHARED_NAMES));
	long rc = pick(w, 2) ? mkdir(path, 0755) : rmdir(path);
	return ok_or_race(w, rc, "mkdir/rmdir", path);
}

static bool op_readdir(struct worker *w)
{
	struct path p;
	const char *path = dir_path(w, &p, pick(w, DIRS));
	DIR *d = opendir(path);
	if (!d)
		return note_failure(w, "opendir", path);
	errno = 0;
	while (readdir(d))
		;
	bool ok = errno == 0 || note_failure(w, "readdir", path);
	closedir(d);
	return ok;
}

static bool op_shared_read(struct worker *w)
{
	struct path p;
	const char *path = shared_path(w, &p, pick(w, DIRS), pick(w, SHARED_NAMES));
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return ok_or_race(w, -1, "open", path);
	ssize_t got = read(fd, w->buf, MAX_FILE);
	close(fd);
	return got >= 0 || ok_or_race(w, -1, "read", path);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	static bool (*const ops[])(struct worker *) = {
		op_own_write_fsync, op_own_read,      op_own_unlink,         op_shared_create,
		op_shared_create,   op_shared_unlink, op_shared_rename,      op_shared_rename,
		op_shared_link,     op_shared_truncate, op_shared_setxattr,  op_shared_mkdir_rmdir,
		op_readdir,         op_shared_read,
	};
	while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) && !w->failure[0]) {
		if (!ops[pick(w, sizeof(ops) / sizeof(ops[0]))](w) &&
		    __atomic_load_n(w->killed, __ATOMIC_ACQUIRE))
			break;
		w->ops++;
	}
	return NULL;
}

/* Every thread's durable files hold exactly what was fsync'd. */
static unsigned verify_ledgers(struct mnt *m, struct worker *ws)
{
	unsigned checked = 0;
	for (unsigned t = 0; t < THREADS; t++)
		for (unsigned d = 0; d < DIRS; d++)
			for (unsigned n = 0; n < OWN_NAMES; n++) {
				const struct ledger_entry *e = &ws[t].own[d][n];
				if (!e->durable)
					continue;
				mnt_expect_pattern(mnt_path(m, "d%u/t%u_%u", d, t, n), e->size,
						   e->seed);
				checked++;
			}
	return checked;
}

/* Runs the workload for ms milliseconds, then stops it, or kills the
 * daemon first when kill_at_end. */
static void run_workload(struct mnt *m, struct worker *ws, uint64_t seed, unsigned ms,
			 bool kill_at_end)
{
	bool stop = false, killed = false;
	pthread_t tids[THREADS];
	for (unsigned t = 0; t < THREADS; t++) {
		ws[t].m = m;
		ws[t].id = t;
		ws[t].rng = seed * 2654435761u + t + 1;
		ws[t].stop = &stop;
		ws[t].killed = &killed;
		ws[t].failure[0] = '\0';
		ws[t].ops = ws[t].fsyncs = 0;
		ck_assert_int_eq(pthread_create(&tids[t], NULL, worker_main, &ws[t]), 0);
	}
	usleep(ms * 1000u);
	if (kill_at_end) {
		__atomic_store_n(&killed, true, __ATOMIC_RELEASE);
		mnt_kill9(m);
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	uint64_t ops = 0, fsyncs = 0;
	for (unsigned t = 0; t < THREADS; t++) {
		pthread_join(tids[t], NULL);
		ck_assert_msg(ws[t].failure[0] == '\0', "%s", ws[t].failure);
		ops += ws[t].ops;
		fsyncs += ws[t].fsyncs;
	}
	printf("stress: %u threads, %u ms: %" PRIu64 " operations, %" PRIu64
	       " durable writes%s\n",
	       THREADS, ms, ops, fsyncs, kill_at_end ? ", then kill -9" : "");
	fflush(stdout);
}

static void make_dirs(struct mnt *m)
{
	for (unsigned d = 0; d < DIRS; d++)
		MNT_OK(mkdir(mnt_path(m, "d%u", d), 0755));
}

START_TEST(test_stress_clean)
{
	struct mnt m;
	mnt_setup(&m, "256M");
	mnt_start(&m, NULL);
	make_dirs(&m);
	struct worker *ws = calloc(THREADS, sizeof(*ws));
	ck_assert_ptr_nonnull(ws);
	unsigned seconds = env_unsigned("ORDFS_STRESS_SECONDS", 8);
	run_workload(&m, ws, (uint64_t)time(NULL), seconds * 1000u, false);
	mnt_stop(&m);  /* exit 0: no sanitizer report either */
	mnt_check(&m);
	mnt_start(&m, NULL);
	printf("stress: %u durable files verified after remount\n", verify_ledgers(&m, ws));
	free(ws);
	mnt_finish(&m);
}
END_TEST

static int run_fsck(struct mnt *m, const char *flags)
{
	const char *fsck = getenv("FSCK_BIN");
	ck_assert_msg(fsck != NULL, "FSCK_BIN is not set");
	char *argv[] = { (char *)fsck, (char *)flags, m->image, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	if (r.status > 1)
		fprintf(stderr, "fsck.ordfs %s: exit %d: %s\n", flags, r.status, r.err);
	return r.status;
}

START_TEST(test_stress_kill9)
{
	unsigned rounds = env_unsigned("ORDFS_STRESS_KILL_ROUNDS", 3);
	uint64_t seed = (uint64_t)time(NULL), rng = seed | 1;
	printf("stress kill -9: %u rounds, seed %" PRIu64 "\n", rounds, seed);
	struct mnt m;
	mnt_setup(&m, "256M");
	struct worker *ws = calloc(THREADS, sizeof(*ws));
	ck_assert_ptr_nonnull(ws);
	for (unsigned r = 0; r < rounds; r++) {
		static const char *const modes[] = { NULL, "commit=1", "data=journal",
						     "data=writeback" };
		mnt_start(&m, modes[r % 4]);
		if (r == 0)
			make_dirs(&m);
		else
			printf("stress: %u durable files verified before round %u\n",
			       verify_ledgers(&m, ws), r);
		run_workload(&m, ws, seed + r, 1000u + (unsigned)(rng_next(&rng) % 2000u), true);
		int first = run_fsck(&m, "-fy");
		ck_assert_msg(first == 0 || first == 1, "fsck -f -y after kill -9 exited %d",
			      first);
		ck_assert_int_eq(run_fsck(&m, "-fn"), 0);
	}
	mnt_start(&m, NULL);
	printf("stress: %u durable files verified after the last kill\n", verify_ledgers(&m, ws));
	free(ws);
	mnt_finish(&m);
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("mounted_stress");
	TCase *tc = tcase_create("stress");
	tcase_set_timeout(tc, 0);
	tcase_add_test(tc, test_stress_clean);
	tcase_add_test(tc, test_stress_kill9);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(stress_suite());
}
