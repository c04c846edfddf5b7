/*
 * test_mnt_flags.c - file flags through the real daemon: the ioctls
 * (FS_IOC_GETFLAGS / SETFLAGS, FS_IOC_FSGETXATTR / FSSETXATTR) on files
 * and directories, lsattr and chattr from e2fsprogs, every rule of
 * immutable (i) and append-only (a) files and directories as system
 * calls see them, EPERM for a caller who is not the owner or lacks
 * CAP_LINUX_IMMUTABLE (a child that becomes nobody), EOPNOTSUPP for a
 * flag ordfs does not keep, A under strictatime, S and D durable when
 * the call returns (kill -9 right after, fsck.ordfs -fy, mount again),
 * j putting a file's data in the journal under data=ordered (the log's
 * use in ORDFS_IOC_STATS, what `ordfsctl stats` shows), and flags that
 * survive an unmount and a kill -9 after fsync.
 *
 * The kernel (fs/fuse/ioctl.c, fs/file_attr.c) turns the four ioctls into
 * FUSE_IOCTL requests on a file it opens itself (OPENDIR for a
 * directory); a set is preceded by an FSGETXATTR and checks owner and
 * CAP_LINUX_IMMUTABLE before the daemon does.
 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

#define MiB (1024 * 1024)
#define NOBODY 65534

static const char *bin(const char *name)
{
	const char *p = getenv(name);
	ck_assert_msg(p && *p, "%s is not set", name);
	return p;
}

/* e2fsprogs' lsattr or chattr. */
static const char *e2fs_tool(const char *name)
{
	static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/sbin", "/sbin" };
	static char path[64];
	for (unsigned i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (access(path, X_OK) == 0)
			return path;
	}
	ck_abort_msg("%s not found (Debian package e2fsprogs: scripts/install-deps.sh)", name);
	return NULL;
}

/* chattr ARG PATH: its exit status; its stderr in r. */
static int chattr(const char *arg, const char *path, struct mnt_run_result *r)
{
	char *argv[] = { (char *)e2fs_tool("chattr"), (char *)arg, (char *)path, NULL };
	mnt_run(argv, NULL, r);
	return r->status;
}

static void chattr_ok(const char *arg, const char *path)
{
	struct mnt_run_result r;
	ck_assert_msg(chattr(arg, path, &r) == 0, "chattr %s %s: exit %d: %s", arg, path,
		      r.status, r.err);
}

/* The letters lsattr -d prints for path ("----i---...") */
static void lsattr_of(const char *path, char *out, size_t len)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s -d '%s' 2>&1", e2fs_tool("lsattr"), path);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	char line[1024] = "";
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_int_eq(pclose(p), 0);
	char *sp = strchr(line, ' ');
	ck_assert_msg(sp, "lsattr said: %s", line);
	*sp = '\0';
	snprintf(out, len, "%s", line);
}

/* Does lsattr show the letter?  (Its letters sit at fixed places.) */
static bool lsattr_has(const char *path, char letter)
{
	char attrs[64];
	lsattr_of(path, attrs, sizeof(attrs));
	return strchr(attrs, letter) != NULL;
}

static unsigned getflags(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	MNT_OK(fd);
	unsigned flags = 0;
	MNT_OK(ioctl(fd, FS_IOC_GETFLAGS, &flags));
	close(fd);
	return flags;
}

static int setflags(const char *path, unsigned flags)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	MNT_OK(fd);
	int rc = ioctl(fd, FS_IOC_SETFLAGS, &flags);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

static void get_stats(struct mnt *m, struct ordfs_stats *st)
{
	int fd = open(m->mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(fd);
	memset(st, 0, sizeof(*st));
	MNT_OK(ioctl(fd, ORDFS_IOC_STATS, st));
	close(fd);
}

/* A path under the mount that stays (mnt_path's buffers rotate). */
#define PATH_UNDER(m, var, name)                                                       \
	char var[MNT_FILE_LEN];                                                        \
	snprintf(var, sizeof(var), "%s", mnt_path((m), "%s", (name)))

/* kill -9, fsck.ordfs -fy (0 or 1: the journal replayed), mount again. */
static void crash_check_remount(struct mnt *m, const char *opts)
{
	mnt_kill9(m);
	struct mnt_run_result r;
	char *argv[] = { (char *)bin("FSCK_BIN"), "-fy", m->image, NULL };
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0 || r.status == 1, "fsck.ordfs -fy: exit %d: %s", r.status,
		      r.err);
	mnt_start(m, opts);
}

/* ---- the ioctls, lsattr and chattr --------------------------------------- */

START_TEST(test_ioctls_and_e2fsprogs_on_files_and_directories)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	PATH_UNDER(&m, f, "f");
	PATH_UNDER(&m, d, "d");
	mnt_make_file(f, 0644, "data\n");
	MNT_OK(mkdir(d, 0755));
	ck_assert_uint_eq(getflags(f), 0);
	ck_assert_uint_eq(getflags(d), 0);
	/* chattr sets, lsattr and the ioctl see it, on both */
	chattr_ok("+A", f);
	chattr_ok("+d", f);
	ck_assert_uint_eq(getflags(f), FS_NOATIME_FL | FS_NODUMP_FL);
	ck_assert(lsattr_has(f, 'A') && lsattr_has(f, 'd'));
	chattr_ok("+D", d);
	chattr_ok("+j", d);
	chattr_ok("+S", d);
	ck_assert_uint_eq(getflags(d), FS_DIRSYNC_FL | FS_JOURNAL_DATA_FL | FS_SYNC_FL);
	ck_assert(lsattr_has(d, 'D') && lsattr_has(d, 'j') && lsattr_has(d, 'S'));
	chattr_ok("=", d);
	ck_assert_uint_eq(getflags(d), 0);
	/* the ioctl itself */
	MNT_OK(setflags(f, FS_SYNC_FL | FS_JOURNAL_DATA_FL));
	ck_assert_uint_eq(getflags(f), FS_SYNC_FL | FS_JOURNAL_DATA_FL);
	ck_assert(lsattr_has(f, 'S') && lsattr_has(f, 'j') && !lsattr_has(f, 'A'));
	/* FSGETXATTR / FSSETXATTR: xflags for S i a d A; D and j have none
	 * and an FSSETXATTR leaves them */
	int fd = open(f, O_RDONLY);
	MNT_OK(fd);
	struct fsxattr fa;
	memset(&fa, 0, sizeof(fa));
	MNT_OK(ioctl(fd, FS_IOC_FSGETXATTR, &fa));
	ck_assert_uint_eq(fa.fsx_xflags, FS_XFLAG_SYNC);
	fa.fsx_xflags = FS_XFLAG_NOATIME | FS_XFLAG_NODUMP;
	MNT_OK(ioctl(fd, FS_IOC_FSSETXATTR, &fa));
	ck_assert_uint_eq(getflags(f), FS_NOATIME_FL | FS_NODUMP_FL | FS_JOURNAL_DATA_FL);
	MNT_OK(ioctl(fd, FS_IOC_FSGETXATTR, &fa));
	ck_assert_uint_eq(fa.fsx_xflags, FS_XFLAG_NOATIME | FS_XFLAG_NODUMP);
	ck_assert_uint_eq(fa.fsx_projid, 0);
	/* what ordfs does not keep */
	struct fsxattr bad = fa;
	bad.fsx_xflags |= FS_XFLAG_NODEFRAG; /* (PREALLOC the kernel strips: read-only) */
	MNT_FAILS(ioctl(fd, FS_IOC_FSSETXATTR, &bad), EOPNOTSUPP);
	bad = fa;
	bad.fsx_projid = 7;
	MNT_FAILS(ioctl(fd, FS_IOC_FSSETXATTR, &bad), EOPNOTSUPP);
	bad = fa;
	bad.fsx_extsize = 4096;
	MNT_FAILS(ioctl(fd, FS_IOC_FSSETXATTR, &bad), EINVAL);
	close(fd);
	unsigned compr = FS_NOATIME_FL | FS_COMPR_FL;
	errno = 0;
	ck_assert_int_eq(setflags(f, compr), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	struct mnt_run_result r;
	ck_assert_int_ne(chattr("+c", f, &r), 0);
	ck_assert_msg(strstr(r.err, "Operation not supported"), "chattr +c said: %s", r.err);
	ck_assert_int_ne(chattr("+e", f, &r), 0);
	ck_assert_uint_eq(getflags(f), FS_NOATIME_FL | FS_NODUMP_FL | FS_JOURNAL_DATA_FL);
	/* D is for directories */
	errno = 0;
	ck_assert_int_eq(setflags(f, FS_DIRSYNC_FL), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	chattr_ok("=", f);
	mnt_finish(&m);
}
END_TEST

/* ---- immutable ------------------------------------------------------------- */

START_TEST(test_immutable_file_and_directory)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	PATH_UNDER(&m, f, "f");
	PATH_UNDER(&m, d, "d");
	mnt_make_file(f, 0644, "frozen\n");
	MNT_OK(mkdir(d, 0755));
	mnt_make_file(mnt_path(&m, "d/in"), 0644, "in\n");
	mnt_make_file(mnt_path(&m, "other"), 0644, "other\n");
	int wfd = open(f, O_WRONLY); /* opened before: its writes are refused too */
	MNT_OK(wfd);
	chattr_ok("+i", f);
	ck_assert(lsattr_has(f, 'i'));
	MNT_FAILS(open(f, O_WRONLY), EPERM);
	MNT_FAILS(open(f, O_RDWR | O_APPEND), EPERM);
	MNT_FAILS(write(wfd, "x", 1), EPERM);
	MNT_FAILS(truncate(f, 0), EPERM);
	MNT_FAILS(unlink(f), EPERM);
	MNT_FAILS(rename(f, mnt_path(&m, "g")), EPERM);
	MNT_FAILS(rename(mnt_path(&m, "other"), f), EPERM); /* as the replaced target */
	MNT_FAILS(link(f, mnt_path(&m, "h")), EPERM);
	MNT_FAILS(chmod(f, 0600), EPERM);
	MNT_FAILS(chown(f, 1, 1), EPERM);
	MNT_FAILS(utimensat(AT_FDCWD, f, NULL, 0), EPERM);
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
	MNT_FAILS(utimensat(AT_FDCWD, f, ts, 0), EPERM);
	MNT_FAILS(setxattr(f, "user.x", "1", 1, 0), EPERM);
	MNT_FAILS(removexattr(f, "user.x"), EPERM);
	close(wfd);
	mnt_expect_text(f, "frozen\n");
	struct stat st;
	MNT_OK(stat(f, &st));
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	/* an immutable directory: no name comes or goes; its files change */
	chattr_ok("+i", d);
	MNT_FAILS(open(mnt_path(&m, "d/new"), O_WRONLY | O_CREAT, 0644), EPERM);
	MNT_FAILS(mkdir(mnt_path(&m, "d/sub"), 0755), EPERM);
	MNT_FAILS(unlink(mnt_path(&m, "d/in")), EPERM);
	MNT_FAILS(rename(mnt_path(&m, "d/in"), mnt_path(&m, "out")), EPERM);
	MNT_FAILS(rmdir(d), EPERM);
	int fd = open(mnt_path(&m, "d/in"), O_WRONLY | O_APPEND);
	MNT_OK(fd);
	mnt_write_all(fd, "more\n", 5);
	close(fd);
	mnt_expect_text(mnt_path(&m, "d/in"), "in\nmore\n");
	chattr_ok("-i", d);
	chattr_ok("-i", f);
	MNT_OK(unlink(f));
	MNT_OK(unlink(mnt_path(&m, "d/in")));
	mnt_finish(&m);
}
END_TEST

/* ---- append-only ----------------------------------------------------------- */

START_TEST(test_append_only_file_and_directory)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	PATH_UNDER(&m, f, "log");
	PATH_UNDER(&m, d, "d");
	mnt_make_file(f, 0644, "one\n");
	MNT_OK(mkdir(d, 0755));
	mnt_make_file(mnt_path(&m, "d/in"), 0644, NULL);
	chattr_ok("+a", f);
	ck_assert(lsattr_has(f, 'a'));
	MNT_FAILS(open(f, O_WRONLY), EPERM);
	MNT_FAILS(open(f, O_RDWR), EPERM);
	MNT_FAILS(open(f, O_WRONLY | O_APPEND | O_TRUNC), EPERM);
	int fd = open(f, O_WRONLY | O_APPEND);
	MNT_OK(fd);
	mnt_write_all(fd, "two\n", 4);
	MNT_OK(pwrite(fd, "three\n", 6, 0)); /* O_APPEND: at the end all the same */
	/* O_APPEND cleared by fcntl (the kernel lets it: it does not know
	 * the flag); the daemon sees the write's flags and refuses */
	MNT_OK(fcntl(fd, F_SETFL, 0));
	MNT_FAILS(pwrite(fd, "X", 1, 0), EPERM);
	MNT_FAILS(ftruncate(fd, 0), EPERM);
	close(fd);
	mnt_expect_text(f, "one\ntwo\nthree\n");
	MNT_FAILS(truncate(f, 2), EPERM);
	MNT_FAILS(unlink(f), EPERM);
	MNT_FAILS(rename(f, mnt_path(&m, "log.1")), EPERM);
	MNT_FAILS(chmod(f, 0600), EPERM);
	MNT_FAILS(setxattr(f, "user.x", "1", 1, 0), EPERM);
	MNT_OK(utimensat(AT_FDCWD, f, NULL, 0)); /* touch: allowed */
	/* an append-only directory: names come, none goes */
	chattr_ok("+a", d);
	mnt_make_file(mnt_path(&m, "d/new"), 0644, "n");
	MNT_FAILS(unlink(mnt_path(&m, "d/new")), EPERM);
	MNT_FAILS(rename(mnt_path(&m, "d/in"), mnt_path(&m, "out")), EPERM);
	mnt_make_file(mnt_path(&m, "x"), 0644, "x");
	MNT_FAILS(rename(mnt_path(&m, "x"), mnt_path(&m, "d/in")), EPERM); /* replaces */
	MNT_OK(rename(mnt_path(&m, "x"), mnt_path(&m, "d/x")));              /* a new name */
	chattr_ok("-a", d);
	chattr_ok("-a", f);
	MNT_OK(unlink(f));
	mnt_finish(&m);
}
END_TEST

/* ---- who may ----------------------------------------------------------------- */

/* In a child that becomes nobody (no capabilities left), on fds opened
 * before: the exit status's bits: 1 SETFLAGS +A on root's file refused
 * with EPERM, 2 +A on nobody's own file works, 4 +i on it refused with
 * EPERM, 8 -a on nobody's own append-only file refused with EPERM. */
static int flags_as_nobody(const char *roots, const char *mine, const char *mine_a)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fr = open(roots, O_RDONLY), fm = open(mine, O_RDONLY);
		int fa = open(mine_a, O_RDONLY);
		if (fr < 0 || fm < 0 || fa < 0)
			_exit(101);
		if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) != 0)
			_exit(100);
		int bits = 0;
		unsigned fl = FS_NOATIME_FL;
		if (ioctl(fr, FS_IOC_SETFLAGS, &fl) != 0 && errno == EPERM)
			bits |= 1;
		if (ioctl(fm, FS_IOC_SETFLAGS, &fl) == 0)
			bits |= 2;
		fl = FS_NOATIME_FL | FS_IMMUTABLE_FL;
		if (ioctl(fm, FS_IOC_SETFLAGS, &fl) != 0 && errno == EPERM)
			bits |= 4;
		fl = 0;
		if (ioctl(fa, FS_IOC_SETFLAGS, &fl) != 0 && errno == EPERM)
			bits |= 8;
		_exit(bits);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_owner_and_cap_linux_immutable)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "allow_other"); /* nobody may use it */
	PATH_UNDER(&m, roots, "roots");
	PATH_UNDER(&m, mine, "mine");
	PATH_UNDER(&m, mine_a, "mine_a");
	mnt_make_file(roots, 0644, "r");
	mnt_make_file(mine, 0644, "m");
	mnt_make_file(mine_a, 0644, "a");
	MNT_OK(chown(mine, NOBODY, NOBODY));
	MNT_OK(chown(mine_a, NOBODY, NOBODY));
	chattr_ok("+a", mine_a);
	int bits = flags_as_nobody(roots, mine, mine_a);
	ck_assert_msg(bits == 15,
		      "as nobody: +A on root's file %s, +A on its own %s, +i %s, -a %s (status %d)",
		      bits & 1 ? "refused" : "NOT refused with EPERM", bits & 2 ? "ok" : "FAILED",
		      bits & 4 ? "refused" : "NOT refused with EPERM",
		      bits & 8 ? "refused" : "NOT refused with EPERM", bits);
	ck_assert_uint_eq(getflags(roots), 0);
	ck_assert_uint_eq(getflags(mine), FS_NOATIME_FL);
	ck_assert_uint_eq(getflags(mine_a), FS_APPEND_FL);
	chattr_ok("-a", mine_a); /* root may */
	mnt_finish(&m);
}
END_TEST

/* ---- A ------------------------------------------------------------------------ */

static void read_file(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY);
	MNT_OK(fd);
	MNT_OK(read(fd, buf, sizeof(buf)));
	close(fd);
}

START_TEST(test_noatime_flag_under_strictatime)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "strictatime");
	PATH_UNDER(&m, a, "a");
	PATH_UNDER(&m, p, "p");
	mnt_make_file(a, 0644, "read me\n");
	mnt_make_file(p, 0644, "read me\n");
	chattr_ok("+A", a);
	struct timespec past[2] = { { 1000000, 0 }, { 1000000, 0 } };
	MNT_OK(utimensat(AT_FDCWD, a, past, 0));
	MNT_OK(utimensat(AT_FDCWD, p, past, 0));
	for (int i = 0; i < 3; i++) {
		read_file(a);
		read_file(p);
	}
	ck_assert_int_eq(mnt_atime_of(a).tv_sec, 1000000);
	ck_assert_int_gt(mnt_atime_of(p).tv_sec, 1000000); /* the control */
	/* and a directory flagged A lists without moving its atime */
	PATH_UNDER(&m, d, "d");
	MNT_OK(mkdir(d, 0755));
	chattr_ok("+A", d);
	MNT_OK(utimensat(AT_FDCWD, d, past, 0));
	DIR *dir = opendir(d);
	ck_assert_ptr_nonnull(dir);
	while (readdir(dir))
		;
	closedir(dir);
	ck_assert_int_eq(mnt_atime_of(d).tv_sec, 1000000);
	mnt_finish(&m);
}
END_TEST

/* ---- S and D: durable when the call returns --------------------------------- */

START_TEST(test_sync_flag_survives_kill9_right_after_write)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL); /* data=ordered */
	PATH_UNDER(&m, s, "s");
	PATH_UNDER(&m, p, "p");
	mnt_make_file(s, 0644, NULL);
	mnt_make_file(p, 0644, NULL);
	chattr_ok("+S", s);
	int fd = open(mnt_path(&m, "."), O_RDONLY | O_DIRECTORY); /* the names durable */
	MNT_OK(fd);
	MNT_OK(fsync(fd));
	close(fd);
	static char buf[1 * MiB];
	mnt_pattern_fill(buf, sizeof(buf), 27, 0);
	int fs_ = open(s, O_WRONLY), fp = open(p, O_WRONLY);
	MNT_OK(fs_);
	MNT_OK(fp);
	mnt_write_all(fp, buf, sizeof(buf));
	mnt_write_all(fs_, buf, sizeof(buf));
	crash_check_remount(&m, NULL); /* right after the write returned */
	close(fs_);
	close(fp);
	mnt_expect_pattern(s, sizeof(buf), 27);
	ck_assert(lsattr_has(s, 'S'));
	struct stat st;
	MNT_OK(stat(p, &st));
	fprintf(stderr, "without S, the file written just before has %lld of %zu bytes after "
		"kill -9 (not asserted)\n", (long long)st.st_size, sizeof(buf));
	mnt_finish(&m);
}
END_TEST

START_TEST(test_dirsync_flag_survives_kill9_right_after_create)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=60");
	PATH_UNDER(&m, d, "d");
	MNT_OK(mkdir(d, 0755));
	chattr_ok("+D", d);
	int fd = open(mnt_path(&m, "."), O_RDONLY | O_DIRECTORY);
	MNT_OK(fd);
	MNT_OK(fsync(fd));
	close(fd);
	mnt_make_file(mnt_path(&m, "d/made"), 0644, NULL);
	MNT_OK(mkdir(mnt_path(&m, "d/sub"), 0755));
	mnt_make_file(mnt_path(&m, "plain"), 0644, NULL);
	crash_check_remount(&m, NULL);
	struct stat st;
	MNT_OK(stat(mnt_path(&m, "d/made"), &st));
	MNT_OK(stat(mnt_path(&m, "d/sub"), &st));
	ck_assert(lsattr_has(mnt_path(&m, "d/sub"), 'D')); /* inherited */
	fprintf(stderr, "without D, a name made just before is %s after kill -9 (not "
		"asserted)\n", stat(mnt_path(&m, "plain"), &st) == 0 ? "there" : "gone");
	mnt_finish(&m);
}
END_TEST

/* ---- j ------------------------------------------------------------------------- */

START_TEST(test_journal_data_flag_under_data_ordered)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=60");
	struct ordfs_stats st;
	get_stats(&m, &st);
	ck_assert_msg(strstr(st.options, "data=ordered"), "options: %s", st.options);
	static char buf[512 * 1024];
	mnt_pattern_fill(buf, sizeof(buf), 5, 0);
	/* without j: the 512 KiB go in place, the log holds metadata only */
	PATH_UNDER(&m, p, "p");
	PATH_UNDER(&m, j, "j");
	uint64_t used0 = st.journal_used;
	int fd = mnt_create_file(p, 0644, NULL);
	mnt_write_all(fd, buf, sizeof(buf));
	MNT_OK(fsync(fd));
	close(fd);
	get_stats(&m, &st);
	uint64_t plain = st.journal_used - used0;
	/* with j: they go through the log */
	mnt_make_file(j, 0644, NULL);
	chattr_ok("+j", j);
	ck_assert(lsattr_has(j, 'j'));
	get_stats(&m, &st);
	uint64_t used1 = st.journal_used;
	fd = open(j, O_WRONLY);
	MNT_OK(fd);
	mnt_write_all(fd, buf, sizeof(buf));
	MNT_OK(fsync(fd));
	close(fd);
	get_stats(&m, &st);
	uint64_t journaled = st.journal_used - used1;
	uint64_t blocks = sizeof(buf) / st.block_size;
	ck_assert_msg(plain < blocks / 4 && journaled >= blocks,
		      "log blocks used by 512 KiB + fsync: %llu without j, %llu with j (%llu "
		      "blocks of data)", (unsigned long long)plain, (unsigned long long)journaled,
		      (unsigned long long)blocks);
	/* the data is home only at checkpoint: kill -9 now, replay, intact */
	crash_check_remount(&m, NULL);
	mnt_expect_pattern(j, sizeof(buf), 5);
	mnt_expect_pattern(p, sizeof(buf), 5);
	mnt_finish(&m);
}
END_TEST

/* ---- persistence ---------------------------------------------------------------- */

START_TEST(test_flags_survive_remount_and_kill9_after_fsync)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=60");
	PATH_UNDER(&m, f, "f");
	PATH_UNDER(&m, d, "d");
	PATH_UNDER(&m, g, "g");
	mnt_make_file(f, 0644, "f\n");
	mnt_make_file(g, 0644, "g\n");
	MNT_OK(mkdir(d, 0755));
	chattr_ok("+iA", f);
	chattr_ok("+Dj", d);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_start(&m, NULL);
	ck_assert_uint_eq(getflags(f), FS_IMMUTABLE_FL | FS_NOATIME_FL);
	ck_assert_uint_eq(getflags(d), FS_DIRSYNC_FL | FS_JOURNAL_DATA_FL);
	MNT_FAILS(unlink(f), EPERM);
	/* a change made durable by fsync survives kill -9 */
	chattr_ok("+ad", g);
	int fd = open(g, O_RDONLY);
	MNT_OK(fd);
	MNT_OK(fsync(fd));
	close(fd);
	crash_check_remount(&m, NULL);
	ck_assert_uint_eq(getflags(g), FS_APPEND_FL | FS_NODUMP_FL);
	ck_assert(lsattr_has(g, 'a') && lsattr_has(g, 'd'));
	MNT_FAILS(open(g, O_WRONLY), EPERM);
	ck_assert_uint_eq(getflags(f), FS_IMMUTABLE_FL | FS_NOATIME_FL);
	chattr_ok("-i", f);
	chattr_ok("-a", g);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted flags");
	TCase *tc = tcase_create("flags");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_ioctls_and_e2fsprogs_on_files_and_directories);
	tcase_add_test(tc, test_immutable_file_and_directory);
	tcase_add_test(tc, test_append_only_file_and_directory);
	tcase_add_test(tc, test_owner_and_cap_linux_immutable);
	tcase_add_test(tc, test_noatime_flag_under_strictatime);
	tcase_add_test(tc, test_sync_flag_survives_kill9_right_after_write);
	tcase_add_test(tc, test_dirsync_flag_survives_kill9_right_after_create);
	tcase_add_test(tc, test_journal_data_flag_under_data_ordered);
	tcase_add_test(tc, test_flags_survive_remount_and_kill9_after_fsync);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
