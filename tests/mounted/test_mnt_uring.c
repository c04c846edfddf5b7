/*
 * test_mnt_uring.c - the daemon's FUSE-over-io_uring transport
 * (src/daemon/transport/) through the real daemon and the real kernel:
 * requests come through the rings of both CPUs' queues and their replies
 * get back intact; a handler that blocks (fsyncs held by a stuck flush)
 * does not hold up other requests from its CPU, however many block; and
 * every way the setup can fail falls back to /dev/fuse (io_uring=auto) or
 * refuses the mount with one clear line and the image untouched
 * (io_uring=on): the fuse module's enable_uring off, io_uring disabled by
 * sysctl, a registration the kernel refuses, -s; a locked-memory limit of
 * 0 still mounts; kill -9 with requests in the rings leaves no caller
 * hanging; an unmount before the rings are registered ends the daemon as
 * any unmount does.
 *
 * Owns the kernel switches it turns (/sys/module/fuse/parameters/
 * enable_uring, /proc/sys/kernel/io_uring_disabled): main() notes them and
 * puts them back whatever happened to the tests.  Needs root (the
 * switches) and a kernel with the enable_uring parameter; otherwise it
 * skips, saying which is missing.  ORDFS_TEST_URING (the test tier's
 * "require") is cleared: these tests choose the mode themselves.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

#define ENABLE_URING "/sys/module/fuse/parameters/enable_uring"
#define IO_URING_DISABLED "/proc/sys/kernel/io_uring_disabled"
#define OP_LIMIT_MS 5000u

static char saved_enable[8], saved_disabled[8];

static bool read_switch(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok;
}

static void write_switch(const char *path, const char *value)
{
	FILE *f = fopen(path, "we");
	ck_assert_msg(f, "open %s: %s", path, strerror(errno));
	ck_assert_msg(fputs(value, f) >= 0 && fclose(f) == 0, "write %s to %s", value, path);
}

static bool have_disabled_switch;

/* Also puts io_uring_disabled back as found (a failed test may have left
 * it turned). */
static void set_enable_uring(bool on)
{
	write_switch(ENABLE_URING, on ? "1" : "0");
	if (have_disabled_switch)
		write_switch(IO_URING_DISABLED, saved_disabled);
}

static void pin_to(unsigned cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void unpin(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	for (long i = 0; i < sysconf(_SC_NPROCESSORS_ONLN) && i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* ---- requests and replies through the rings ------------------------------ */

struct cpu_job {
	struct mnt *m;
	unsigned cpu;
	bool failed;
	char why[512];
};

/* Everything a reply can carry, from one CPU: data larger than a request
 * (several WRITEs and READs), names, attributes, directory listings,
 * xattrs, links, statfs, fsync. */
static void *cpu_work(void *arg)
{
	struct cpu_job *j = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(j->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
#define FAIL_IF(cond, ...)                                                              \
	do {                                                                            \
		if (cond) {                                                             \
			j->failed = true;                                               \
			snprintf(j->why, sizeof(j->why), __VA_ARGS__);                  \
			return NULL;                                                    \
		}                                                                       \
	} while (0)
	char dir[MNT_FILE_LEN + 16], path[MNT_FILE_LEN + 48], link[MNT_FILE_LEN + 48];
	snprintf(dir, sizeof(dir), "%s/cpu%u", j->m->mountpoint, j->cpu);
	FAIL_IF(mkdir(dir, 0755) != 0, "mkdir %s: %s", dir, strerror(errno));
	size_t big = 3u << 20; /* three max_write requests and more */
	char *buf = malloc(big), *back = malloc(big);
	FAIL_IF(!buf || !back, "malloc");
	for (unsigned f = 0; f < 40; f++) {
		snprintf(path, sizeof(path), "%s/file-%u", dir, f);
		size_t len = f == 0 ? big : 1 + f * 997;
		mnt_pattern_fill(buf, len, 100 * j->cpu + f, 0);
		int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
		FAIL_IF(fd < 0, "create %s: %s", path, strerror(errno));
		FAIL_IF(pwrite(fd, buf, len, 0) != (ssize_t)len, "write %s", path);
		FAIL_IF(fsync(fd) != 0, "fsync %s: %s", path, strerror(errno));
		close(fd);
		fd = open(path, O_RDONLY | O_DIRECT);
		if (fd < 0)
			fd = open(path, O_RDONLY);
		FAIL_IF(fd < 0, "open %s: %s", path, strerror(errno));
		memset(back, 0, len);
		FAIL_IF(pread(fd, back, len, 0) != (ssize_t)len, "read %s", path);
		close(fd);
		FAIL_IF(mnt_pattern_mismatch(back, len, 100 * j->cpu + f, 0) != len,
			"%s: read back differs", path);
		struct stat st;
		FAIL_IF(stat(path, &st) != 0 || (size_t)st.st_size != len, "stat %s", path);
		FAIL_IF(setxattr(path, "user.cpu", dir, strlen(dir), 0) != 0, "setxattr: %s",
			strerror(errno));
		char x[MNT_FILE_LEN + 16];
		ssize_t xl = getxattr(path, "user.cpu", x, sizeof(x));
		FAIL_IF(xl != (ssize_t)strlen(dir) || memcmp(x, dir, (size_t)xl) != 0, "getxattr");
		snprintf(link, sizeof(link), "%s/link-%u", dir, f);
		FAIL_IF(symlink(path, link) != 0, "symlink: %s", strerror(errno));
		char target[MNT_FILE_LEN + 48];
		ssize_t tl = readlink(link, target, sizeof(target));
		FAIL_IF(tl != (ssize_t)strlen(path) || memcmp(target, path, (size_t)tl) != 0,
			"readlink");
	}
	unsigned entries = 0;
	DIR *d = opendir(dir);
	FAIL_IF(!d, "opendir");
	while (readdir(d))
		entries++;
	closedir(d);
	FAIL_IF(entries != 2 + 80, "%u entries in %s, expected 82", entries, dir);
	struct statvfs sv;
	FAIL_IF(statvfs(dir, &sv) != 0 || sv.f_blocks == 0, "statvfs");
	snprintf(path, sizeof(path), "%s/file-1", dir);
	snprintf(link, sizeof(link), "%s/renamed", dir);
	FAIL_IF(rename(path, link) != 0, "rename: %s", strerror(errno));
	FAIL_IF(unlink(link) != 0, "unlink: %s", strerror(errno));
	FAIL_IF(open(path, O_RDONLY) != -1 || errno != ENOENT, "the renamed name is still there");
	free(buf);
	free(back);
	return NULL;
#undef FAIL_IF
}

START_TEST(test_requests_through_both_queues)
{
	set_enable_uring(true);
	struct mnt m;
	mnt_setup(&m, "128M");
	mnt_start(&m, "io_uring=on");
	struct ordfs_stats st;
	mnt_get_stats(&m, &st);
	ck_assert_str_eq(st.transport, "io_uring");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	ck_assert_uint_ge(st.uring_queues, (unsigned)cpus);
	unsigned n = cpus > 4 ? 4 : (unsigned)cpus;
	struct cpu_job jobs[4];
	pthread_t th[4];
	for (unsigned i = 0; i < n; i++) {
		jobs[i] = (struct cpu_job){ .m = &m, .cpu = i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, cpu_work, &jobs[i]), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(!jobs[i].failed, "CPU %u: %s", i, jobs[i].why);
	}
	uint64_t before = st.uring_requests;
	mnt_get_stats(&m, &st);
	/* 40 files x (create, writes, fsync, reads, getattr, xattrs, links...) */
	ck_assert_uint_gt(st.uring_requests, before + 40 * 8 * n);
	/* What stays on /dev/fuse: INIT, FORGETs, the notifications' replies. */
	ck_assert_uint_lt(st.dev_requests, st.uring_requests / 4);
	mnt_stop(&m);
	mnt_check(&m);
	/* What the rings carried is on the image: mount over /dev/fuse, read. */
	set_enable_uring(false);
	mnt_start(&m, "io_uring=off");
	mnt_get_stats(&m, &st);
	ck_assert_str_eq(st.transport, "/dev/fuse");
	ck_assert_str_eq(st.transport_note, "io_uring=off");
	char path[MNT_FILE_LEN + 32];
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/cpu%u/file-0", m.mountpoint, i);
		mnt_expect_pattern(path, 3u << 20, 100 * i);
		snprintf(path, sizeof(path), "%s/cpu%u/file-39", m.mountpoint, i);
		mnt_expect_pattern(path, 1 + 39 * 997, 100 * i + 39);
	}
	mnt_finish(&m);
}
END_TEST

/* ---- a blocking handler ---------------------------------------------------- */

struct fsync_job {
	int fd;
	atomic_int done;
	int rc;
	pthread_t thread;
};

static void *fsync_on_cpu0(void *arg)
{
	struct fsync_job *job = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	job->rc = fsync(job->fd);
	atomic_store(&job->done, 1);
	return NULL;
}

/* More fsyncs than a queue starts with threads (8 on this size of
 * machine), all from CPU 0 and all held (the image's flush waits on a
 * latch file), arriving 30 ms apart, and still every other call from CPU
 * 0 is answered: the queue grew while it had spare threads.  (A burst of
 * more blocking calls than the spare, all at once, can wait for the first
 * reply: uring_pool.h.) */
START_TEST(test_blocked_handlers_do_not_stall_their_queue)
{
	set_enable_uring(true);
	struct mnt m;
	mnt_setup(&m, "64M");
	char latch[MNT_FILE_LEN + 16], env[MNT_FILE_LEN + 64];
	snprintf(latch, sizeof(latch), "%s", mnt_host_path(&m, "latch"));
	snprintf(env, sizeof(env), "ORDFS_TEST_FLUSH_LATCH=%s", latch);
	mnt_start_env(&m, "io_uring=on", env);
	enum { BLOCKED = 12 };
	struct fsync_job jobs[BLOCKED];
	pin_to(0);
	for (int i = 0; i < BLOCKED; i++) {
		int fd = open(mnt_path(&m, "held-%d", i), O_CREAT | O_RDWR, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "x", 1), 1);
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].fd = fd;
	}
	int lf = open(latch, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(lf, 0);
	close(lf);
	for (int i = 0; i < BLOCKED; i++) {
		ck_assert_int_eq(pthread_create(&jobs[i].thread, NULL, fsync_on_cpu0, &jobs[i]), 0);
		usleep(30 * 1000);
	}
	usleep(200 * 1000);
	for (int i = 0; i < BLOCKED; i++)
		ck_assert_msg(!atomic_load(&jobs[i].done), "fsync %d returned through the latch", i);
	/* From the same CPU: stat, create, write, read, list. */
	uint64_t t0 = mnt_now_ms();
	struct stat st;
	MNT_OK(stat(m.mountpoint, &st));
	int fd = open(mnt_path(&m, "free"), O_CREAT | O_RDWR, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "abc", 3, 0), 3);
	char b[4] = { 0 };
	ck_assert_int_eq(pread(fd, b, 3, 0), 3);
	ck_assert_str_eq(b, "abc");
	close(fd);
	DIR *d = opendir(m.mountpoint);
	ck_assert_ptr_nonnull(d);
	closedir(d);
	uint64_t took = mnt_now_ms() - t0;
	ck_assert_msg(took < OP_LIMIT_MS, "calls from the blocked CPU took %llu ms",
		      (unsigned long long)took);
	for (int i = 0; i < BLOCKED; i++)
		ck_assert_msg(!atomic_load(&jobs[i].done), "fsync %d returned through the latch", i);
	struct ordfs_stats s;
	mnt_get_stats(&m, &s);
	ck_assert_str_eq(s.transport, "io_uring");
	/* the held fsyncs plus one free thread at least, on queue 0 */
	ck_assert_uint_gt(s.uring_threads_peak_queue, BLOCKED);
	unlink(latch);
	for (int i = 0; i < BLOCKED; i++) {
		pthread_join(jobs[i].thread, NULL);
		ck_assert_int_eq(jobs[i].rc, 0);
		close(jobs[i].fd);
	}
	unpin();
	mnt_finish(&m);
}
END_TEST

/* ---- setup failures ---------------------------------------------------------- */

/* Runs the daemon in the foreground expecting it to refuse: non-zero exit,
 * one line naming what, nothing mounted, the image as it was. */
static void expect_refused(struct mnt *m, const char *opts, const char *envvar,
			   const char *must_say)
{
	char *argv[] = { (char *)mnt_ordfs_bin(), m->image, m->mountpoint, "-f", "-o",
			 (char *)opts, NULL };
	struct mnt_run_result r;
	mnt_run(argv, envvar, &r);
	ck_assert_msg(r.status != 0, "ordfs -o %s started", opts);
	ck_assert_msg(strstr(r.err, must_say), "ordfs -o %s said '%s', not '%s'", opts, r.err,
		      must_say);
	ck_assert_msg(!mnt_is_live(m->mountpoint), "%s is mounted", m->mountpoint);
	mnt_check(m);
}

static void expect_dev_fuse(struct mnt *m, const char *opts, const char *envvar,
			    const char *note_says)
{
	mnt_start_env(m, opts, envvar);
	struct ordfs_stats st;
	mnt_get_stats(m, &st);
	ck_assert_str_eq(st.transport, "/dev/fuse");
	ck_assert_msg(strstr(st.transport_note, note_says), "note '%s' lacks '%s'",
		      st.transport_note, note_says);
	mnt_write_pattern(mnt_path(m, "f"), 300000, 7, 0644);
	mnt_expect_pattern(mnt_path(m, "f"), 300000, 7);
	mnt_get_stats(m, &st);
	ck_assert_uint_eq(st.uring_requests, 0);
	ck_assert_uint_gt(st.dev_requests, 10);
	mnt_stop(m);
	mnt_check(m);
}

START_TEST(test_enable_uring_off)
{
	set_enable_uring(false);
	struct mnt m;
	mnt_setup(&m, "64M");
	expect_dev_fuse(&m, "io_uring=auto", NULL, "enable_uring");
	expect_refused(&m, "io_uring=on", NULL, "enable_uring is off");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_io_uring_disabled_by_sysctl)
{
	if (access(IO_URING_DISABLED, W_OK) != 0) {
		mnt_skip_test(__func__, "no " IO_URING_DISABLED " to turn");
		return;
	}
	set_enable_uring(true);
	write_switch(IO_URING_DISABLED, "2");
	struct mnt m;
	mnt_setup(&m, "64M");
	expect_dev_fuse(&m, "io_uring=auto", NULL, "ring");
	expect_refused(&m, "io_uring=on", NULL, "cannot make an io_uring");
	write_switch(IO_URING_DISABLED, saved_disabled);
	mnt_finish(&m);
}
END_TEST

/* A payload buffer below the kernel's minimum: REGISTER is refused, the
 * kernel turns io_uring off for the connection and sends everything to
 * /dev/fuse. */
START_TEST(test_register_refused)
{
	set_enable_uring(true);
	struct mnt m;
	mnt_setup(&m, "64M");
	expect_dev_fuse(&m, "io_uring=auto", "ORDFS_TEST_URING_PAYLOAD=4096", "refused");
	expect_refused(&m, "io_uring=on", "ORDFS_TEST_URING_PAYLOAD=4096", "refused");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_single_thread)
{
	set_enable_uring(true);
	struct mnt m;
	mnt_setup(&m, "64M");
	char *argv[] = { (char *)mnt_ordfs_bin(), m.image, m.mountpoint, "-f", "-s", "-o",
			 "io_uring=on", NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_int_ne(r.status, 0);
	ck_assert_msg(strstr(r.err, "not with -s"), "said '%s'", r.err);
	ck_assert(!mnt_is_live(m.mountpoint));
	mnt_check(&m);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_bad_option)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	expect_refused(&m, "io_uring=maybe", NULL, "bad io_uring 'maybe' (off, auto or on)");
	mnt_finish(&m);
}
END_TEST

/* RLIMIT_MEMLOCK 0: the rings are charged to the memory cgroup on this
 * kernel, not to the limit, so the mount keeps io_uring; either way it
 * must mount and carry data. */
START_TEST(test_memlock_limit)
{
	set_enable_uring(true);
	struct rlimit old, zero = { 0, 0 };
	ck_assert_int_eq(getrlimit(RLIMIT_MEMLOCK, &old), 0);
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &zero), 0);
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "io_uring=auto");
	mnt_write_pattern(mnt_path(&m, "f"), 2000000, 3, 0644);
	mnt_expect_pattern(mnt_path(&m, "f"), 2000000, 3);
	struct ordfs_stats st;
	mnt_get_stats(&m, &st);
	ck_assert_msg(strcmp(st.transport, "io_uring") == 0 || st.transport_note[0],
		      "on /dev/fuse without a reason");
	mnt_finish(&m);
}
END_TEST

/* ---- an unmount at once ------------------------------------------------------------ */

/* Is there a mount on mountpoint?  From /proc/self/mountinfo: a stat would
 * wait for the daemon's answer to INIT, which this test must not. */
static bool in_mountinfo(const char *mountpoint)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	ck_assert_ptr_nonnull(f);
	char line[4096], point[PATH_MAX];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
			strcmp(point, mountpoint) == 0;
	fclose(f);
	return found;
}

/* An unmount as soon as the mount exists, before the daemon has answered
 * INIT or registered its rings: the daemon ends as at any unmount, exit 0,
 * and the image is clean.  (An unmount that beat the registration made it
 * exit 1, "io_uring=on: the kernel refused a ring entry (REGISTER:
 * Transport endpoint is not connected)"; one that beat INIT's reply, 1
 * with an empty reason: a third of the rounds here.) */
START_TEST(test_unmount_at_once)
{
	set_enable_uring(true);
	struct mnt m;
	mnt_setup(&m, "64M");
	static const char *const modes[] = { "io_uring=on", "io_uring=off" };
	for (int round = 0; round < 24; round++) {
		const char *mode = modes[round % 2];
		snprintf(m.log, sizeof(m.log), "%s/daemon.%d.log", m.dir, round);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			int log = open(m.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (log < 0)
				_exit(126);
			dup2(log, 1);
			dup2(log, 2);
			execl(mnt_ordfs_bin(), mnt_ordfs_bin(), m.image, m.mountpoint, "-f", "-o",
			      mode, (char *)NULL);
			_exit(127);
		}
		uint64_t deadline = mnt_now_ms() + 30000;
		int status = 0;
		while (!in_mountinfo(m.mountpoint)) {
			ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0,
				      "round %d (%s): the daemon exited before mounting", round, mode);
			ck_assert_msg(mnt_now_ms() < deadline, "round %d: no mount in 30 s", round);
			usleep(200);
		}
		ck_assert_int_eq(mnt_fusermount_u(m.mountpoint, false), 0);
		ck_assert_int_eq(mnt_wait_pid(pid, 60000, &status), 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			mnt_dump_file(m.log, "daemon: ");
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "round %d (%s): the daemon ended with status 0x%x after an unmount "
			      "at once", round, mode, status);
	}
	mnt_finish(&m); /* fsck: clean */
}
END_TEST

/* ---- kill -9 with requests in the rings ---------------------------------------- */

struct looper {
	struct mnt *m;
	unsigned cpu, id;
	atomic_int *stop;
	atomic_int done;
	int last_errno;
	pthread_t thread;
};

static void *loop_calls(void *arg)
{
	struct looper *l = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(l->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	char buf[8192];
	memset(buf, 'k', sizeof(buf));
	char path[MNT_FILE_LEN + 32];
	snprintf(path, sizeof(path), "%s/loop-%u", l->m->mountpoint, l->id);
	while (!atomic_load(l->stop)) {
		int fd = open(path, O_CREAT | O_RDWR, 0644);
		if (fd < 0) {
			l->last_errno = errno;
			break;
		}
		if (pwrite(fd, buf, sizeof(buf), 0) < 0 || fsync(fd) < 0 ||
		    pread(fd, buf, sizeof(buf), 0) < 0)
			l->last_errno = errno;
		close(fd);
		if (l->last_errno)
			break;
	}
	atomic_store(&l->done, 1);
	return NULL;
}

START_TEST(test_kill9_with_requests_in_the_rings)
{
	set_enable_uring(true);
	struct mnt m;
	mnt_setup(&m, "64M");
	for (int round = 0; round < 3; round++) {
		mnt_start(&m, "io_uring=on");
		atomic_int stop = 0;
		struct looper l[4];
		for (unsigned i = 0; i < 4; i++) {
			l[i] = (struct looper){ .m = &m, .cpu = i % 2, .id = i, .stop = &stop };
			ck_assert_int_eq(pthread_create(&l[i].thread, NULL, loop_calls, &l[i]), 0);
		}
		usleep((useconds_t)(100 + 150 * round) * 1000);
		MNT_OK(kill(m.daemon, SIGKILL));
		uint64_t deadline = mnt_now_ms() + OP_LIMIT_MS;
		for (unsigned i = 0; i < 4; i++) {
			while (!atomic_load(&l[i].done) && mnt_now_ms() < deadline)
				usleep(2000);
			ck_assert_msg(atomic_load(&l[i].done), "a caller still waits %u ms after "
				      "kill -9", OP_LIMIT_MS);
			pthread_join(l[i].thread, NULL);
			/* ENOTCONN after the connection ended; inside a request
			 * ECONNABORTED (the abort), or ECANCELED when the
			 * request sat in an entry of the dead process's rings
			 * (io_uring cancels their commands as it exits) */
			int e = l[i].last_errno;
			ck_assert_msg(e == ENOTCONN || e == ECONNABORTED || e == ECANCELED,
				      "caller %u ended with %s", i, strerror(e));
		}
		int status;
		ck_assert_int_eq(mnt_wait_pid(m.daemon, 10000, &status), 0);
		m.daemon = 0;
		ck_assert_int_eq(mnt_fusermount_u(m.mountpoint, true), 0);
	}
	/* The next mount replays the journal and serves. */
	mnt_start(&m, "io_uring=on");
	mnt_write_pattern(mnt_path(&m, "after"), 100000, 5, 0644);
	mnt_expect_pattern(mnt_path(&m, "after"), 100000, 5);
	mnt_finish(&m);
}
END_TEST

static Suite *uring_suite(void)
{
	Suite *s = suite_create("mnt_uring");
	TCase *tc = tcase_create("uring");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_requests_through_both_queues);
	MNT_ADD_HOOK_TEST(tc, test_blocked_handlers_do_not_stall_their_queue);
	tcase_add_test(tc, test_enable_uring_off);
	tcase_add_test(tc, test_io_uring_disabled_by_sysctl);
	MNT_ADD_HOOK_TEST(tc, test_register_refused);
	tcase_add_test(tc, test_single_thread);
	tcase_add_test(tc, test_bad_option);
	tcase_add_test(tc, test_memlock_limit);
	tcase_add_test(tc, test_kill9_with_requests_in_the_rings);
	tcase_add_test(tc, test_unmount_at_once);
	suite_add_tcase(s, tc);
	return s;
}

/* Writes value to a switch with system calls only (also from a signal
 * handler). */
static void put_switch(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, value, strlen(value)) < 0) {
		/* nothing more to do: the run says what it found */
	}
	close(fd);
}

/* Puts back what the tests turned, whatever happened to them. */
static void restore_switches(void)
{
	put_switch(ENABLE_URING, saved_enable[0] == 'Y' || saved_enable[0] == '1' ? "1" : "0");
	if (have_disabled_switch)
		put_switch(IO_URING_DISABLED, saved_disabled);
}

/* meson's timeout (SIGTERM), ^C, a lost terminal: put them back, then die
 * of the signal as before. */
static void on_signal(int sig)
{
	restore_switches();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	if (geteuid() != 0)
		return mnt_skip_program("the io_uring tests turn " ENABLE_URING ": root only");
	if (!read_switch(ENABLE_URING, saved_enable, sizeof(saved_enable)))
		return mnt_skip_program("this kernel has no FUSE over io_uring (" ENABLE_URING
					" is missing: Linux 6.14+ with CONFIG_FUSE_IO_URING)");
	have_disabled_switch = read_switch(IO_URING_DISABLED, saved_disabled,
					   sizeof(saved_disabled));
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	unsetenv("ORDFS_TEST_URING");
	int rc = mnt_run_suite(uring_suite());
	restore_switches();
	return rc;
}
