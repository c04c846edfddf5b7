/*
 * test_mnt_user.c - the rootless tier: everything an ordinary user does
 * with ordfs, done as that user, through fusermount3 (issue 26).
 *
 * Run as root (CI), each step runs as `nobody` (uid and gid 65534, no
 * groups, no capabilities); run as an ordinary user, as that user.  The
 * user's own directory (0755 under /tmp, owned by the user) holds copies
 * of the built programs (the build tree need not be reachable), the image
 * and the mount point.  The steps: mkfs.ordfs without options (the root
 * directory must be the user's), the daemon mounting through fusermount3,
 * create, write, rename, mkdir and fsync in the root directory, ordfsctl
 * stats, sync and trim on the user's own mount, the image extended and
 * grown online by resize.ordfs (the user's daemon), kill -9 of the user's
 * daemon, fusermount3 -u, fsck.ordfs -fy and a remount with every fsync'd
 * file intact, fusermount3 -u followed at once by fsck and by a remount
 * (both wait for the exiting daemon), and -o allow_other refused with
 * fusermount3's message when /etc/fuse.conf does not allow it.
 *
 * Rules: Debian keeps /dev/fuse at 0666, these machines at 0600; as root
 * the program makes it 0666 for its run and puts the mode back at exit,
 * on SIGTERM, SIGINT, SIGHUP and SIGPIPE too.  A step as the user runs in a child that
 * drops to the user and reports by exit status; assertions stay in the
 * test process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define NOBODY 65534u
#define FILES 12
#define FILE_BYTES (300u * 1024u)

/* ---- /dev/fuse for the run ------------------------------------------- */

static mode_t fuse_mode_before;
static bool fuse_mode_changed;

static void restore_dev_fuse(void)
{
	if (fuse_mode_changed && chmod("/dev/fuse", fuse_mode_before) == 0)
		fuse_mode_changed = false;
}

static void on_signal(int sig)
{
	restore_dev_fuse();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- the user ---------------------------------------------------------- */

static uid_t user_uid;
static gid_t user_gid;
static pid_t main_pid;          /* names this run's directories */
static char home[64];           /* the user's directory */
static char bin_dir[96];        /* copies of the programs */

/* In a child: becomes the user (nothing to do when not root). */
static void become_user(void)
{
	if (getuid() != 0)
		return;
	if (setgroups(0, NULL) != 0 || setresgid(user_gid, user_gid, user_gid) != 0 ||
	    setresuid(user_uid, user_uid, user_uid) != 0) {
		fprintf(stderr, "cannot become uid %u: %s\n", (unsigned)user_uid, strerror(errno));
		_exit(125);
	}
}

static const char *user_path(const char *name)
{
	static char path[4][256];
	static unsigned next;
	char *p = path[next++ % 4];
	snprintf(p, sizeof(path[0]), "%s/%s", home, name);
	return p;
}

static const char *bin(const char *name)
{
	static char path[8][256];
	static unsigned next;
	char *p = path[next++ % 8];
	snprintf(p, sizeof(path[0]), "%s/%s", bin_dir, name);
	return p;
}

/* Runs argv as the user, stderr into r (as mnt_run does), in the user's
 * directory. */
static void run_as_user(char *const argv[], struct mnt_run_result *r)
{
	int pipefd[2];
	MNT_OK(pipe(pipefd));
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pipefd[0]);
		dup2(pipefd[1], 2);
		close(pipefd[1]); /* a daemon that detaches must not hold it open */
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		close(null);
		become_user();
		if (chdir(home) != 0)
			_exit(126);
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	memset(r, 0, sizeof(*r));
	ssize_t n;
	char buf[1024];
	while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) {
		size_t room = sizeof(r->err) - 1 - r->err_len;
		size_t take = (size_t)n < room ? (size_t)n : room;
		memcpy(r->err + r->err_len, buf, take);
		r->err_len += take;
	}
	close(pipefd[0]);
	r->err[r->err_len] = 0;
	for (size_t i = 0; i < r->err_len; i++)
		r->lines += r->err[i] == '\n';
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs argv as the user and asserts its exit status is one of ok_a, ok_b. */
static void user_ok(char *const argv[], int ok_a, int ok_b)
{
	struct mnt_run_result r;
	run_as_user(argv, &r);
	ck_assert_msg(r.status == ok_a || r.status == ok_b, "%s %s: exit %d: %s", argv[0],
		      argv[1] ? argv[1] : "", r.status, r.err);
}

/* Runs fn(arg) as the user in a child; its exit status. */
static int as_user(int (*fn)(const void *arg), const void *arg)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		become_user();
		_exit(fn(arg));
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- the steps the user takes ---------------------------------------------- */

/* The user's mount is live (asked as the user: FUSE refuses other users,
 * root included, on a mount without allow_other). */
static int live_fn(const void *arg)
{
	(void)arg;
	return mnt_is_live(user_path("mnt")) ? 0 : 1;
}

static bool user_mount_live(void)
{
	return as_user(live_fn, NULL) == 0;
}

/* Waits until process pid is gone (not our child: the daemon detached). */
static bool wait_gone(pid_t pid, unsigned timeout_ms)
{
	uint64_t deadline = mnt_now_ms() + timeout_ms;
	while (kill(pid, 0) == 0 || errno != ESRCH) {
		if (mnt_now_ms() >= deadline)
			return false;
		usleep(5000);
	}
	return true;
}

/* Mounts as the user; the daemon must say nothing until it detaches: in
 * particular nothing about utab, which is root's (src/daemon/utab.c, U1). */
static void mount_as_user(const char *opts)
{
	char *argv[] = { (char *)bin("ordfs"), (char *)user_path("image"),
			 (char *)user_path("mnt"), opts ? "-o" : NULL, (char *)opts, NULL };
	struct mnt_run_result r;
	run_as_user(argv, &r);
	ck_assert_msg(r.status == 0, "ordfs as the user: exit %d: %s", r.status, r.err);
	ck_assert_msg(r.err_len == 0, "ordfs as the user said: %s", r.err);
	ck_assert_msg(user_mount_live(), "the user's mount is not live");
}

/* fusermount3 -u as the user, tried again while the mount is busy
 * (mnt_unmount_retrying). */
static int umount_as_user_rc(void)
{
	struct mnt_run_result r;
	char *argv[] = { "/bin/fusermount3", "-u", (char *)user_path("mnt"), NULL };
	mnt_unmount_retrying(run_as_user, argv, &r);
	if (r.status != 0)
		fprintf(stderr, "fusermount3 -u as the user: exit %d: %s", r.status, r.err);
	return r.status;
}

/* df of the user's mount says 100M. */
static int size_is_100m(const void *arg)
{
	(void)arg;
	struct statvfs sv;
	if (statvfs(user_path("mnt"), &sv) != 0)
		return 2;
	return (uint64_t)sv.f_blocks * sv.f_frsize == 100ull << 20 ? 0 : 1;
}

/* The files the user writes and fsyncs: name i holds pattern seed 500 + i. */
static int write_files(const void *arg)
{
	(void)arg;
	static uint8_t buf[FILE_BYTES];
	for (int i = 0; i < FILES; i++) {
		char path[300], tmp[300];
		snprintf(path, sizeof(path), "%s/mnt/f%02d", home, i);
		snprintf(tmp, sizeof(tmp), "%s/mnt/f%02d.tmp", home, i);
		mnt_pattern_fill(buf, FILE_BYTES - (size_t)i * 1000, 500 + (uint64_t)i, 0);
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			fprintf(stderr, "create %s: %s\n", tmp, strerror(errno));
			return 10;
		}
		size_t len = FILE_BYTES - (size_t)i * 1000;
		if (write(fd, buf, len) != (ssize_t)len || fsync(fd) != 0 || close(fd) != 0)
			return 11;
		if (rename(tmp, path) != 0) /* in the root directory: the user's */
			return 12;
	}
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/mnt", home);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fsync(dfd) != 0) /* the renames durable */
		return 13;
	close(dfd);
	snprintf(dir, sizeof(dir), "%s/mnt/sub", home);
	if (mkdir(dir, 0755) != 0)
		return 14;
	struct stat st;
	if (stat(dir, &st) != 0 || st.st_uid != getuid())
		return 15;
	return 0;
}

/* Every file write_files made is there, exactly. */
static int check_files(const void *arg)
{
	(void)arg;
	static uint8_t buf[FILE_BYTES + 1];
	for (int i = 0; i < FILES; i++) {
		char path[300];
		snprintf(path, sizeof(path), "%s/mnt/f%02d", home, i);
		int fd = open(path, O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
			return 20;
		}
		size_t len = FILE_BYTES - (size_t)i * 1000;
		ssize_t n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n != (ssize_t)len || mnt_pattern_mismatch(buf, len, 500 + (uint64_t)i, 0) != len) {
			fprintf(stderr, "%s: %zd bytes, wrong content\n", path, n);
			return 21;
		}
	}
	return 0;
}

/* 24 MiB written and not synced: the daemon writes them back at unmount,
 * after fusermount3 -u has returned. */
#define UNSYNCED_BYTES (24u << 20)
static int write_unsynced(const void *arg)
{
	(void)arg;
	static uint8_t buf[1 << 20];
	char path[300];
	snprintf(path, sizeof(path), "%s/mnt/unsynced", home);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 30;
	for (uint64_t off = 0; off < UNSYNCED_BYTES; off += sizeof(buf)) {
		mnt_pattern_fill(buf, sizeof(buf), 77, off);
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 31;
	}
	return close(fd) == 0 ? 0 : 32;
}

static int check_unsynced(const void *arg)
{
	(void)arg;
	static uint8_t buf[1 << 20];
	char path[300];
	snprintf(path, sizeof(path), "%s/mnt/unsynced", home);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 40;
	for (uint64_t off = 0; off < UNSYNCED_BYTES; off += sizeof(buf))
		if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    mnt_pattern_mismatch(buf, sizeof(buf), 77, off) != sizeof(buf))
			return 41;
	close(fd);
	return 0;
}

/* The pid of the user's daemon serving image (scanning /proc). */
static pid_t daemon_of(const char *image)
{
	DIR *d = opendir("/proc");
	ck_assert_ptr_nonnull(d);
	pid_t found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char path[300], cmd[4096];
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		cmd[n] = 0;
		const char *arg1 = cmd + strlen(cmd) + 1;
		if (strcmp(cmd, bin("ordfs")) == 0 && arg1 < cmd + n && strcmp(arg1, image) == 0)
			found = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return found;
}

/* ---- the tests -------------------------------------------------------------- */

static void make_home(void)
{
	snprintf(home, sizeof(home), "/tmp/ordfs-user.%d.XXXXXX", (int)main_pid);
	ck_assert_ptr_nonnull(mkdtemp(home));
	MNT_OK(chmod(home, 0755));
	snprintf(bin_dir, sizeof(bin_dir), "%s/bin", home);
	MNT_OK(mkdir(bin_dir, 0755));
	static const char *const env[][2] = {
		{ "ORDFS_BIN", "ordfs" }, { "MKFS_BIN", "mkfs.ordfs" },
		{ "FSCK_BIN", "fsck.ordfs" }, { "ORDFSCTL_BIN", "ordfsctl" },
		{ "RESIZE_BIN", "resize.ordfs" },
	};
	for (unsigned i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		const char *from = getenv(env[i][0]);
		ck_assert_msg(from, "%s is not set", env[i][0]);
		char *argv[] = { "/bin/cp", (char *)from, (char *)bin(env[i][1]), NULL };
		struct mnt_run_result r;
		mnt_run(argv, NULL, &r);
		ck_assert_msg(r.status == 0, "cp %s: %s", from, r.err);
		MNT_OK(chmod(bin(env[i][1]), 0755));
	}
	MNT_OK(mkdir(user_path("mnt"), 0755));
	MNT_OK(chown(home, user_uid, user_gid));
	MNT_OK(chown(user_path("mnt"), user_uid, user_gid));
}

static void remove_home(void)
{
	if (user_mount_live())
		(void)mnt_fusermount_u(user_path("mnt"), true);
	(void)mnt_wait_unlocked(user_path("image"), 10000);
	char *argv[] = { "/bin/rm", "-rf", home, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
}

START_TEST(test_user_from_mkfs_to_fsck)
{
	make_home();
	/* mkfs as the user, no options: the root directory is the user's */
	char *mkfs[] = { (char *)bin("mkfs.ordfs"), "-q", (char *)user_path("image"), "64M",
			 NULL };
	user_ok(mkfs, 0, 0);
	mount_as_user(NULL);
	struct stat st;
	MNT_OK(stat(user_path("image"), &st));
	ck_assert_uint_eq(st.st_uid, user_uid);
	ck_assert_msg(as_user(write_files, NULL) == 0,
		      "create/write/rename/fsync in the root directory failed as the user");

	/* ordfsctl on the user's own mount */
	const char *verbs[] = { "stats", "sync", "trim" };
	for (unsigned i = 0; i < 3; i++) {
		char *argv[] = { (char *)bin("ordfsctl"), (char *)verbs[i],
				 (char *)user_path("mnt"), NULL };
		user_ok(argv, 0, 0);
	}

	/* the user's image grows under the user's mount: resize.ordfs asks the
	 * user's daemon (online) */
	char *extend[] = { "/usr/bin/truncate", "-s", "100M", (char *)user_path("image"), NULL };
	user_ok(extend, 0, 0);
	char *resize[] = { (char *)bin("resize.ordfs"), (char *)user_path("image"), NULL };
	user_ok(resize, 0, 0);
	ck_assert_msg(as_user(size_is_100m, NULL) == 0, "df does not show the grown size");

	/* kill -9 of the user's daemon (by the user), then the user's
	 * recovery: fusermount3 -u of the dead mount, fsck, remount */
	pid_t d = daemon_of(user_path("image"));
	ck_assert_msg(d > 0, "the user's daemon was not found");
	char pidtext[32];
	snprintf(pidtext, sizeof(pidtext), "%d", (int)d);
	char *kill9[] = { "/bin/kill", "-9", pidtext, NULL };
	user_ok(kill9, 0, 0);
	ck_assert_msg(wait_gone(d, 10000), "the killed daemon is still there");
	ck_assert_int_eq(umount_as_user_rc(), 0);
	char *fsck_fy[] = { (char *)bin("fsck.ordfs"), "-fy", (char *)user_path("image"), NULL };
	user_ok(fsck_fy, 0, 1); /* 1: the journal replayed, errors corrected */
	mount_as_user(NULL);
	ck_assert_msg(as_user(check_files, NULL) == 0, "fsync'd files lost after kill -9");

	/* fusermount3 -u, then fsck at once: it waits for the exiting daemon,
	 * which still writes back what nobody synced */
	ck_assert_int_eq(as_user(write_unsynced, NULL), 0);
	ck_assert_int_eq(umount_as_user_rc(), 0);
	char *fsck_f[] = { (char *)bin("fsck.ordfs"), "-f", (char *)user_path("image"), NULL };
	user_ok(fsck_f, 0, 0);
	/* and a remount at once after an unmount */
	mount_as_user(NULL);
	ck_assert_int_eq(umount_as_user_rc(), 0);
	mount_as_user(NULL);
	ck_assert_msg(as_user(check_files, NULL) == 0, "files lost across unmounts");
	ck_assert_msg(as_user(check_unsynced, NULL) == 0, "data written back at unmount lost");
	ck_assert_int_eq(umount_as_user_rc(), 0);
	ck_assert_int_eq(mnt_wait_unlocked(user_path("image"), 10000), 0);
	char *fsck_n[] = { (char *)bin("fsck.ordfs"), "-fn", (char *)user_path("image"), NULL };
	struct mnt_run_result r;
	mnt_run(fsck_n, NULL, &r);
	ck_assert_msg(r.status == 0, "fsck -fn after the user's work: %d %s", r.status, r.err);
	remove_home();
}
END_TEST

/* Is user_allow_other set (uncommented) in /etc/fuse.conf? */
static bool fuse_conf_allows_other(void)
{
	FILE *f = fopen("/etc/fuse.conf", "r");
	char line[256];
	bool allowed = false;
	while (f && fgets(line, sizeof(line), f)) {
		char word[64];
		allowed |= sscanf(line, " %63s", word) == 1 && strcmp(word, "user_allow_other") == 0;
	}
	if (f)
		fclose(f);
	return allowed;
}

START_TEST(test_user_allow_other_refused)
{
	if (fuse_conf_allows_other()) {
		mnt_skip_test(__func__, "/etc/fuse.conf sets user_allow_other");
		return;
	}
	make_home();
	char *mkfs[] = { (char *)bin("mkfs.ordfs"), "-q", (char *)user_path("image"), "32M",
			 NULL };
	user_ok(mkfs, 0, 0);
	char *argv[] = { (char *)bin("ordfs"), (char *)user_path("image"), (char *)user_path("mnt"),
			 "-o", "allow_other", NULL };
	struct mnt_run_result r;
	run_as_user(argv, &r);
	ck_assert_msg(r.status != 0, "-o allow_other was accepted for a user");
	ck_assert_msg(strstr(r.err, "user_allow_other"), "no clear message: %s", r.err);
	ck_assert(!user_mount_live());
	/* nothing happened to the image: it mounts and checks */
	mount_as_user(NULL);
	ck_assert_int_eq(umount_as_user_rc(), 0);
	remove_home();
}
END_TEST

/* After the suite: a test that failed left its mount, daemon and
 * directory behind (its process ended at the assertion); remove them.
 * Outside the tests: no ck_assert here (nor the helpers that use it). */
static void cleanup_leftovers(void)
{
	char prefix[64], line[1024], cmd[700];
	snprintf(prefix, sizeof(prefix), "/tmp/ordfs-user.%d.", (int)main_pid);
	FILE *f = fopen("/proc/self/mounts", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char source[512], target[512];
		if (sscanf(line, "%511s %511s", source, target) != 2 ||
		    strncmp(target, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(cmd, sizeof(cmd), "fusermount3 -uz '%s'", target);
		if (system(cmd) != 0)
			fprintf(stderr, "could not unmount %s\n", target);
		int fd = open(source, O_RDONLY); /* the daemon's lock: it has gone */
		for (int i = 0; fd >= 0 && i < 1000 && flock(fd, LOCK_EX | LOCK_NB) != 0; i++)
			usleep(10000);
		if (fd >= 0)
			close(fd);
	}
	if (f)
		fclose(f);
	snprintf(cmd, sizeof(cmd), "rm -rf %s*", prefix);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s*\n", prefix);
}

int main(void)
{
	main_pid = getpid();
	user_uid = getuid() == 0 ? NOBODY : getuid();
	user_gid = getuid() == 0 ? NOBODY : getgid();
	struct stat st;
	if (getuid() == 0 && stat("/dev/fuse", &st) == 0 && (st.st_mode & 0666) != 0666) {
		fuse_mode_before = st.st_mode & 07777;
		signal(SIGTERM, on_signal);
		signal(SIGINT, on_signal);
		signal(SIGHUP, on_signal);
		signal(SIGPIPE, on_signal);
		if (chmod("/dev/fuse", 0666) == 0)
			fuse_mode_changed = true;
		printf("/dev/fuse was %04o: 0666 for this run, as Debian has it\n",
		       (unsigned)fuse_mode_before);
	}
	Suite *s = suite_create("mounted as a user");
	TCase *tc = tcase_create("user");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_user_from_mkfs_to_fsck);
	tcase_add_test(tc, test_user_allow_other_refused);
	suite_add_tcase(s, tc);
	int rc = mnt_run_suite(s);
	cleanup_leftovers();
	restore_dev_fuse();
	return rc;
}
