/*
 * mnt_helpers.c - fixtures for the mounted tests (see mnt_helpers.h).
 *
 * Owns: the temporary root and its clean-up, daemon start/stop, command
 * runs with captured stderr, the checker run on images, content patterns.
 * Rules: every wait has a timeout and says what it waited for when it
 * expires; a daemon's log is printed whenever it misbehaves; processes
 * are only ever killed by the pid this program started (or found running
 * our binary on a path under our own root).
 */
#include "mnt_helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blockdev/blockdev.h"
#include "check/check.h"
#include "fs.h"
#include "journal/journal.h"
#include "ordfs_ioctl.h"

#define LIVE_TIMEOUT_MS 30000u
#define EXIT_TIMEOUT_MS 60000u
#define SKIP_EXIT_CODE 77

static char root_dir[MNT_ROOT_LEN];

/* ---- small utilities -------------------------------------------------- */

uint64_t mnt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct timespec mnt_atime_of(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return st.st_atim;
}

struct timespec mnt_mtime_of(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return st.st_mtim;
}

int mnt_ts_cmp(struct timespec a, struct timespec b)
{
	if (a.tv_sec != b.tv_sec)
		return a.tv_sec < b.tv_sec ? -1 : 1;
	if (a.tv_nsec != b.tv_nsec)
		return a.tv_nsec < b.tv_nsec ? -1 : 1;
	return 0;
}

void mnt_expect_mutt_case(const char *path)
{
	usleep(20 * 1000);
	int fd = open(path, O_WRONLY | O_APPEND);
	MNT_OK(fd);
	mnt_write_all(fd, "From x@y\n\nnew\n", 14);
	close(fd);
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(path), mnt_mtime_of(path)) <= 0,
		      "the write left atime past mtime");
	usleep(20 * 1000);
	char buf[4096];
	fd = open(path, O_RDONLY);
	MNT_OK(fd);
	ck_assert_uint_gt(mnt_read_full(fd, buf, sizeof(buf)), 0);
	close(fd);
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(path), mnt_mtime_of(path)) > 0,
		      "relatime: the first read after a write left atime behind mtime");
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static const char *env_path(const char *name)
{
	const char *p = getenv(name);
	ck_assert_msg(p && *p, "%s is not set (meson sets it to the built binary)", name);
	return p;
}

const char *mnt_ordfs_bin(void)
{
	return env_path("ORDFS_BIN");
}

const char *mnt_mkfs_bin(void)
{
	return env_path("MKFS_BIN");
}

const char *mnt_root(void)
{
	return root_dir;
}

bool mnt_file_equals(const char *path, const char *bytes, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	static char chunk[1 << 20];
	size_t at = 0;
	bool same = true;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) { /* the end, as for mnt_slurp (a directory reads as empty) */
			same = at == len;
			break;
		}
		if ((size_t)n > len - at) {
			same = false;
			break;
		}
		if (memcmp(chunk, bytes + at, (size_t)n) != 0) {
			same = false;
			break;
		}
		at += (size_t)n;
	}
	close(fd);
	return same;
}

char *mnt_slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		if (used == cap) {
			char *bigger = realloc(buf, cap * 2 + 1);
			if (!bigger) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = bigger;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[used] = '\0';
	if (len)
		*len = used;
	return buf;
}

void mnt_dump_file(const char *path, const char *prefix)
{
	char *text = mnt_slurp(path, NULL);
	if (!text) {
		fprintf(stderr, "%s(no log at %s)\n", prefix, path);
		return;
	}
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "%s%s\n", prefix, line);
	free(text);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* rm -rf that never crosses into another filesystem (a mount left behind). */
static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* ---- processes -------------------------------------------------------- */

int mnt_wait_pid(pid_t pid, unsigned timeout_ms, int *status)
{
	uint64_t deadline = mnt_now_ms() + timeout_ms;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (mnt_now_ms() >= deadline)
			return -ETIMEDOUT;
		sleep_ms(5);
	}
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

void mnt_run(char *const argv[], const char *envvar, struct mnt_run_result *r)
{
	static unsigned runs;
	char errpath[PATH_MAX];
	snprintf(errpath, sizeof(errpath), "%s/run.%d.%u.stderr", root_dir, (int)getpid(),
		 runs++);
	memset(r, 0, sizeof(*r));

	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int null = open("/dev/null", O_RDWR);
		if (err < 0 || null < 0)
			_exit(126);
		dup2(null, 0);
		dup2(null, 1);
		dup2(err, 2);
		if (envvar)
			putenv((char *)envvar);
		execv(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int status;
	int err = mnt_wait_pid(pid, EXIT_TIMEOUT_MS, &status);
	if (err) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ck_abort_msg("%s did not exit within %u s", argv[0], EXIT_TIMEOUT_MS / 1000);
	}
	r->status = exit_code(status);

	char *text = mnt_slurp(errpath, &r->err_len);
	unlink(errpath);
	if (text) {
		snprintf(r->err, sizeof(r->err), "%s", text);
		for (size_t i = 0; i < r->err_len; i++)
			r->lines += text[i] == '\n';
		free(text);
	}
}

/* An unmount that failed because the kernel still holds the mount busy
 * (EBUSY: fusermount3's "Device or resource busy", umount(8)'s "target
 * is busy")? */
static bool says_busy(const struct mnt_run_result *r)
{
	return r->status != 0 && (strstr(r->err, "Device or resource busy") ||
				  strstr(r->err, "target is busy"));
}

static void run_plain(char *const argv[], struct mnt_run_result *r)
{
	mnt_run(argv, NULL, r);
}

void mnt_unmount_retrying(void (*run)(char *const argv[], struct mnt_run_result *r),
			  char *const argv[], struct mnt_run_result *r)
{
	uint64_t deadline = mnt_now_ms() + MNT_BUSY_TIMEOUT_MS;
	unsigned backoff_ms = 10;
	unsigned tries = 1;
	for (run(argv, r); says_busy(r) && mnt_now_ms() < deadline; run(argv, r), tries++) {
		sleep_ms(backoff_ms);
		backoff_ms = backoff_ms * 2 > 500 ? 500 : backoff_ms * 2;
	}
	if (tries > 1)
		fprintf(stderr, "%s %s: %s after %u tries (the mount was busy)\n", argv[0],
			argv[1], r->status == 0 ? "done" : "still busy", tries);
}

int mnt_fusermount_u(const char *mountpoint, bool lazy)
{
	char *argv[5];
	int n = 0;
	argv[n++] = "/bin/fusermount3";
	if (access(argv[0], X_OK) != 0)
		argv[0] = "/usr/bin/fusermount3";
	argv[n++] = lazy ? "-uz" : "-u";
	argv[n++] = (char *)mountpoint;
	argv[n] = NULL;
	struct mnt_run_result r;
	mnt_unmount_retrying(run_plain, argv, &r);
	if (r.status != 0)
		fprintf(stderr, "fusermount3 %s %s: exit %d: %s", argv[1], mountpoint, r.status,
			r.err);
	return r.status;
}

/* ---- mounts ----------------------------------------------------------- */

bool mnt_is_live(const char *mountpoint)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/..", mountpoint);
	struct stat a, b;
	if (stat(mountpoint, &a) != 0 || stat(parent, &b) != 0)
		return false;
	return a.st_dev != b.st_dev;
}

int mnt_wait_live(const char *mountpoint, pid_t daemon, unsigned timeout_ms, int *status)
{
	uint64_t deadline = mnt_now_ms() + timeout_ms;
	for (;;) {
		if (mnt_is_live(mountpoint))
			return 0;
		if (daemon > 0 && waitpid(daemon, status, WNOHANG) == daemon)
			return -ECHILD;
		if (mnt_now_ms() >= deadline)
			return -ETIMEDOUT;
		sleep_ms(5);
	}
}

int mnt_wait_unlocked(const char *image, unsigned timeout_ms)
{
	int fd = open(image, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	uint64_t deadline = mnt_now_ms() + timeout_ms;
	int err = 0;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			err = -errno;
			break;
		}
		if (mnt_now_ms() >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		sleep_ms(5);
	}
	close(fd); /* releases the lock */
	return err;
}

static const char *vpath(const char *base, const char *fmt, va_list ap)
{
	static char bufs[8][PATH_MAX];
	static unsigned next;
	char *buf = bufs[next++ % 8];
	char rel[PATH_MAX - MNT_FILE_LEN - 8];
	vsnprintf(rel, sizeof(rel), fmt, ap);
	snprintf(buf, PATH_MAX, "%s/%s", base, rel);
	return buf;
}

const char *mnt_path(struct mnt *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *p = vpath(m->mountpoint, fmt, ap);
	va_end(ap);
	return p;
}

const char *mnt_host_path(struct mnt *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *p = vpath(m->dir, fmt, ap);
	va_end(ap);
	return p;
}

void mnt_setup_named(struct mnt *m, const char *size, const char *test)
{
	memset(m, 0, sizeof(*m));
	m->test = test;
	m->started_ms = mnt_now_ms();
	ck_assert_msg(root_dir[0], "mnt_setup outside mnt_run_suite");
	snprintf(m->dir, sizeof(m->dir), "%s/t.XXXXXX", root_dir);
	ck_assert_msg(mkdtemp(m->dir), "mkdtemp: %s", strerror(errno));
	snprintf(m->image, sizeof(m->image), "%s/image", m->dir);
	snprintf(m->mountpoint, sizeof(m->mountpoint), "%s/mnt", m->dir);
	MNT_OK(mkdir(m->mountpoint, 0755));

	char *argv[] = { (char *)mnt_mkfs_bin(), "-q", m->image, (char *)size, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0, "mkfs.ordfs -q %s %s: exit %d: %s", m->image, size,
		      r.status, r.err);
}

void mnt_start_env(struct mnt *m, const char *opts, const char *envvar)
{
	ck_assert_msg(m->daemon == 0, "a daemon already runs on %s", m->mountpoint);
	snprintf(m->log, sizeof(m->log), "%s/daemon.%u.log", m->dir, ++m->starts);
	char *argv[7];
	int n = 0;
	argv[n++] = (char *)mnt_ordfs_bin();
	argv[n++] = m->image;
	argv[n++] = m->mountpoint;
	argv[n++] = "-f";
	if (opts) {
		argv[n++] = "-o";
		argv[n++] = (char *)opts;
	}
	argv[n] = NULL;

	pid_t parent = getpid();
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* If the test dies at an assertion, the daemon unmounts. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		int log = open(m->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int null = open("/dev/null", O_RDWR);
		if (log < 0 || null < 0)
			_exit(126);
		dup2(null, 0);
		dup2(log, 1);
		dup2(log, 2);
		if (envvar)
			putenv((char *)envvar);
		execv(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	m->daemon = pid;
	int status = 0;
	int err = mnt_wait_live(m->mountpoint, pid, LIVE_TIMEOUT_MS, &status);
	if (err) {
		mnt_dump_file(m->log, "daemon: ");
		if (err == -ECHILD) {
			m->daemon = 0;
			ck_abort_msg("daemon exited (status %d) before %s was live",
				     exit_code(status), m->mountpoint);
		}
		ck_abort_msg("%s not live after %u s", m->mountpoint, LIVE_TIMEOUT_MS / 1000);
	}
}

void mnt_start(struct mnt *m, const char *opts)
{
	mnt_start_env(m, opts, NULL);
}

void mnt_stop(struct mnt *m)
{
	ck_assert_msg(m->daemon > 0, "no daemon runs on %s", m->mountpoint);
	int rc = mnt_fusermount_u(m->mountpoint, false);
	if (rc != 0)
		mnt_dump_file(m->log, "daemon: ");
	ck_assert_msg(rc == 0, "fusermount3 -u %s failed (exit %d)", m->mountpoint, rc);

	int status;
	int err = mnt_wait_pid(m->daemon, EXIT_TIMEOUT_MS, &status);
	if (err) {
		mnt_dump_file(m->log, "daemon: ");
		ck_abort_msg("daemon %d did not exit within %u s of fusermount3 -u", (int)m->daemon,
			     EXIT_TIMEOUT_MS / 1000);
	}
	m->daemon = 0;
	if (exit_code(status) != 0)
		mnt_dump_file(m->log, "daemon: ");
	ck_assert_msg(exit_code(status) == 0, "daemon exited with %d after fusermount3 -u",
		      exit_code(status));
	ck_assert_msg(!mnt_is_live(m->mountpoint), "%s still mounted", m->mountpoint);
}

int mnt_stop_status(struct mnt *m)
{
	ck_assert_msg(m->daemon > 0, "no daemon runs on %s", m->mountpoint);
	ck_assert_int_eq(mnt_fusermount_u(m->mountpoint, false), 0);
	int status;
	ck_assert_int_eq(mnt_wait_pid(m->daemon, EXIT_TIMEOUT_MS, &status), 0);
	m->daemon = 0;
	ck_assert_msg(!mnt_is_live(m->mountpoint), "%s still mounted", m->mountpoint);
	return exit_code(status);
}

void mnt_kill9(struct mnt *m)
{
	ck_assert_msg(m->daemon > 0, "no daemon runs on %s", m->mountpoint);
	MNT_OK(kill(m->daemon, SIGKILL));
	int status;
	ck_assert_int_eq(mnt_wait_pid(m->daemon, EXIT_TIMEOUT_MS, &status), 0);
	m->daemon = 0;
	ck_assert_int_eq(mnt_fusermount_u(m->mountpoint, true), 0);
}

void mnt_discard(struct mnt *m)
{
	char cmd[MNT_DIR_LEN + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", m->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void print_problem(void *ctx, enum check_problem code, const char *msg)
{
	fprintf(stderr, "checker (%s): [%d] %s\n", (const char *)ctx, (int)code, msg);
}

/* The image's primary superblock (asserts it reads). */
static struct ordfs_super read_image_super(struct mnt *m)
{
	struct blockdev *bd;
	int err = blockdev_file_open(m->image, BLOCKDEV_READONLY, &bd);
	ck_assert_msg(err == 0, "open %s: %s", m->image, strerror(-err));
	struct ordfs_super sb;
	const char *why = "";
	err = ordfs_read_super(bd, false, &sb, &why);
	blockdev_destroy(bd);
	ck_assert_msg(err == 0, "superblock: %s", why);
	return sb;
}

bool mnt_image_in_use(struct mnt *m)
{
	struct ordfs_super sb = read_image_super(m);
	return (sb.feature_incompat & ORDFS_FEATURE_INCOMPAT_RECOVER) &&
	       !(sb.state & ORDFS_STATE_CLEAN);
}

bool mnt_image_error_recorded(struct mnt *m)
{
	return read_image_super(m).state & ORDFS_STATE_ERROR;
}

void mnt_check(struct mnt *m)
{
	struct blockdev *bd;
	int err = blockdev_file_open(m->image, BLOCKDEV_READONLY, &bd);
	ck_assert_msg(err == 0, "open %s: %s", m->image, strerror(-err));

	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = print_problem;
	res.ctx = m->image;
	err = ordfs_check(bd, &res);

	struct ordfs_super sb;
	const char *why = "";
	int sb_err = ordfs_read_super(bd, false, &sb, &why);
	int need = sb_err ? -1 : journal_needs_recovery(bd, &sb);
	blockdev_destroy(bd);

	ck_assert_msg(err == 0, "checker could not run: %s", strerror(-err));
	ck_assert_msg(res.problems == 0, "checker found %u problems in %s", res.problems,
		      m->image);
	ck_assert_msg(sb_err == 0, "superblock: %s", why);
	ck_assert_msg(sb.state & ORDFS_STATE_CLEAN, "image not marked clean after unmount");
	ck_assert_msg(need == 0, "journal not empty after a clean unmount (%d)", need);
}

void mnt_finish(struct mnt *m)
{
	if (m->daemon > 0)
		mnt_stop(m);
	mnt_check(m);
	if (!getenv("ORDFS_MNT_KEEP"))
		remove_tree(m->dir);
	printf("%s: %.2f s\n", m->test, (double)(mnt_now_ms() - m->started_ms) / 1000.0);
	fflush(stdout);
}

/* ---- content patterns ------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t pattern_word(uint64_t seed, uint64_t word)
{
	return mix64(seed ^ mix64(word));
}

uint8_t mnt_pattern_byte(uint64_t seed, uint64_t off)
{
	return (uint8_t)(pattern_word(seed, off >> 3) >> ((off & 7) * 8));
}

void mnt_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t off)
{
	uint8_t *p = buf;
	size_t i = 0;
	while (i < len) {
		uint64_t pos = off + i;
		uint64_t w = pattern_word(seed, pos >> 3);
		for (unsigned b = (unsigned)(pos & 7); b < 8 && i < len; b++, i++)
			p[i] = (uint8_t)(w >> (b * 8));
	}
}

size_t mnt_pattern_mismatch(const void *buf, size_t len, uint64_t seed, uint64_t off)
{
	const uint8_t *p = buf;
	size_t i = 0;
	while (i < len) {
		uint64_t pos = off + i;
		uint64_t w = pattern_word(seed, pos >> 3);
		for (unsigned b = (unsigned)(pos & 7); b < 8 && i < len; b++, i++)
			if (p[i] != (uint8_t)(w >> (b * 8)))
				return i;
	}
	return len;
}

void mnt_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		ck_assert_msg(n > 0, "write of %zu bytes: %s", len, n < 0 ? strerror(errno) : "0");
		p += n;
		len -= (size_t)n;
	}
}

void mnt_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		ck_assert_msg(n > 0, "pwrite of %zu bytes at %lld: %s", len, (long long)off,
			      n < 0 ? strerror(errno) : "0");
		p += n;
		off += n;
		len -= (size_t)n;
	}
}

size_t mnt_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		ck_assert_msg(n >= 0, "read: %s", strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return got;
}

void mnt_write_pattern(const char *path, size_t len, uint64_t seed, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	size_t chunk = 256 * 1024;
	uint8_t *buf = malloc(chunk);
	ck_assert(buf);
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		mnt_pattern_fill(buf, n, seed, off);
		mnt_write_all(fd, buf, n);
	}
	free(buf);
	ck_assert_msg(close(fd) == 0, "close %s: %s", path, strerror(errno));
}

void mnt_expect_pattern(const char *path, size_t len, uint64_t seed)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	struct stat st;
	MNT_OK(fstat(fd, &st));
	ck_assert_msg((size_t)st.st_size == len, "%s: size %lld, expected %zu", path,
		      (long long)st.st_size, len);
	size_t chunk = 256 * 1024;
	uint8_t *buf = malloc(chunk + 1);
	ck_assert(buf);
	for (size_t off = 0; off < len; off += chunk) {
		size_t want = len - off < chunk ? len - off : chunk;
		size_t got = mnt_read_full(fd, buf, want);
		ck_assert_msg(got == want, "%s: short read at %zu (%zu of %zu)", path, off, got,
			      want);
		size_t bad = mnt_pattern_mismatch(buf, want, seed, off);
		ck_assert_msg(bad == want, "%s: wrong byte at offset %zu", path, off + bad);
	}
	ck_assert_msg(mnt_read_full(fd, buf, 1) == 0, "%s: data past its size", path);
	free(buf);
	close(fd);
}

/* ---- the program's root and its clean-up ------------------------------- */

static bool under_root(const char *path)
{
	size_t n = strlen(root_dir);
	return strncmp(path, root_dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* fusermount3 -uz for the clean-up, which runs outside any test and so
 * must not use Check's assertions. */
static void lazy_unmount_quietly(const char *mountpoint)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/fusermount3", "fusermount3", "-uz", mountpoint, (char *)NULL);
		execl("/usr/bin/fusermount3", "fusermount3", "-uz", mountpoint, (char *)NULL);
		_exit(127);
	}
	int status;
	if (pid > 0 && mnt_wait_pid(pid, EXIT_TIMEOUT_MS, &status) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
}

/* Prints the daemon logs of the test directory that holds mountpoint mp
 * (a mount left behind means a test failed half-way: its daemon's view
 * of why belongs in the test's output). */
static void dump_daemon_logs_near(const char *mp)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", mp);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "daemon.", 7) != 0 || len < 4 ||
		    strcmp(e->d_name + len - 4, ".log") != 0)
			continue;
		char path[PATH_MAX + 256];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fprintf(stderr, "cleanup: %s:\n", path);
		mnt_dump_file(path, "daemon: ");
	}
	closedir(d);
}

/* Lazily unmounts every mount under the root, deepest first, and shows
 * the logs of their daemons. */
static unsigned unmount_leftovers(void)
{
	char *info = mnt_slurp("/proc/self/mountinfo", NULL);
	if (!info)
		return 0;
	char *points[64];
	unsigned n = 0;
	char *save = NULL;
	for (char *line = strtok_r(info, "\n", &save); line && n < 64;
	     line = strtok_r(NULL, "\n", &save)) {
		char mp[PATH_MAX];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && under_root(mp))
			points[n++] = strdup(mp);
	}
	free(info);
	for (unsigned i = n; i-- > 0;) {
		if (points[i]) {
			fprintf(stderr, "cleanup: lazily unmounting %s\n", points[i]);
			lazy_unmount_quietly(points[i]);
			dump_daemon_logs_near(points[i]);
		}
		free(points[i]);
	}
	return n;
}

/* Is pid one of our daemons: argv[0] is our binary, an argument is under
 * the root? */
static bool is_our_daemon(pid_t pid, const char *bin)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	size_t len;
	char *cmd = mnt_slurp(path, &len);
	if (!cmd)
		return false;
	bool ours = len > 0 && strcmp(cmd, bin) == 0;
	bool under = false;
	for (size_t i = 0; ours && i < len; i += strlen(cmd + i) + 1)
		under = under || under_root(cmd + i);
	free(cmd);
	return ours && under;
}

static unsigned signal_our_daemons(int sig)
{
	const char *bin = getenv("ORDFS_BIN");
	DIR *d = opendir("/proc");
	unsigned found = 0;
	if (!bin || !d) {
		if (d)
			closedir(d);
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1 || pid == getpid())
			continue;
		if (is_our_daemon((pid_t)pid, bin)) {
			found++;
			if (sig)
				kill((pid_t)pid, sig);
		}
	}
	closedir(d);
	return found;
}

static void cleanup_root(void)
{
	if (unmount_leftovers() > 0) {
		for (int i = 0; i < 300 && signal_our_daemons(0) > 0; i++)
			sleep_ms(10);
	}
	unsigned left = signal_our_daemons(SIGKILL);
	if (left)
		fprintf(stderr, "cleanup: killed %u leftover daemons\n", left);
	if (getenv("ORDFS_MNT_KEEP"))
		fprintf(stderr, "kept %s (ORDFS_MNT_KEEP)\n", root_dir);
	else
		remove_tree(root_dir);
}

/* The one reason to skip: no usable /dev/fuse. */
static bool fuse_usable(void)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("SKIP: cannot open /dev/fuse: %s (the mounted tests need FUSE)\n",
		       strerror(errno));
		return false;
	}
	close(fd);
	return true;
}

int mnt_skip_program(const char *why)
{
	printf("SKIP: %s\n", why);
	fflush(stdout);
	return SKIP_EXIT_CODE;
}

void mnt_skip_test(const char *test, const char *why)
{
	printf("SKIP  %s: %s\n", test, why);
	fflush(stdout);
}

int mnt_run_suite(Suite *s)
{
	if (!fuse_usable()) {
		fflush(stdout);
		return SKIP_EXIT_CODE;
	}
	if (!getenv("ORDFS_BIN") || !getenv("MKFS_BIN")) {
		fprintf(stderr, "ORDFS_BIN and MKFS_BIN must name the built binaries\n");
		return EXIT_FAILURE;
	}
	umask(0);
	snprintf(root_dir, sizeof(root_dir), "/tmp/ordfs-mnt.XXXXXX");
	if (!mkdtemp(root_dir)) {
		fprintf(stderr, "mkdtemp %s: %s\n", root_dir, strerror(errno));
		return EXIT_FAILURE;
	}
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_VERBOSE);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	cleanup_root();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int mnt_create_file(const char *path, mode_t mode, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	if (text)
		mnt_write_all(fd, text, strlen(text));
	return fd;
}

void mnt_make_file(const char *path, mode_t mode, const char *text)
{
	int fd = mnt_create_file(path, mode, text);
	MNT_OK(close(fd));
}

void mnt_expect_text(const char *path, const char *text)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	size_t n = mnt_read_full(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n] = '\0';
	ck_assert_msg(strcmp(buf, text) == 0, "%s holds '%s', expected '%s'", path, buf, text);
}

void mnt_get_stats(struct mnt *m, struct ordfs_stats *st)
{
	int fd = open(m->mountpoint, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	memset(st, 0, sizeof(*st));
	MNT_OK(ioctl(fd, ORDFS_IOC_STATS, st));
	close(fd);
	ck_assert_uint_eq(st->version, ORDFS_STATS_VERSION);
}
