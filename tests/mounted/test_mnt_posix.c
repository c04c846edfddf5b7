/*
 * test_mnt_posix.c - the POSIX corners beyond plain file I/O, through the
 * system calls that reach them on a live mount.
 *
 * Owns: link (link counts, both names, EPERM on directories, EEXIST),
 * symlink/readlink (short, 3000-byte and too-long targets, following,
 * persistence), mknod (FIFO, character device with its st_rdev, socket),
 * the four xattr calls in user.* and trusted.* with their flags and
 * errors, renameat2 (RENAME_NOREPLACE, RENAME_EXCHANGE of a file and a
 * directory across directories, a directory into its own subdirectory),
 * fallocate (mode 0, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE), SEEK_DATA /
 * SEEK_HOLE and truncate beyond 4 GiB, name length limits, nanosecond
 * timestamps across a remount, the set-user-ID bit on chown and write,
 * and writing until ENOSPC on a small image.
 *
 * Each test mounts a fresh image with the real daemon and ends with
 * mnt_finish(): clean unmount, daemon exit 0, checker finds nothing.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* ---- helpers ------------------------------------------------------------ */

/* Unmount cleanly, check the image, mount again. */
static void remount(struct mnt *m)
{
	mnt_stop(m);
	mnt_check(m);
	mnt_start(m, NULL);
}

static struct stat stat_of(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return st;
}

static struct stat lstat_of(const char *path)
{
	struct stat st;
	MNT_OK(lstat(path, &st));
	return st;
}

/* First nonzero byte of fd in [off, off + len), or -1 if all are zero;
 * also fails if the range reads short. */
static long long first_nonzero(int fd, off_t off, size_t len)
{
	static uint8_t buf[256 * 1024];
	size_t done = 0;
	while (done < len) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);
		ssize_t r = pread(fd, buf, n, off + (off_t)done);
		ck_assert_msg(r == (ssize_t)n, "pread %zu at %lld: %zd (%s)", n,
			      (long long)(off + (off_t)done), r, strerror(errno));
		for (size_t i = 0; i < n; i++)
			if (buf[i])
				return (long long)(off + (off_t)(done + i));
		done += n;
	}
	return -1;
}

/* fd holds pattern seed (at its own offsets) in [off, off + len). */
static void expect_pattern_range(int fd, off_t off, size_t len, uint64_t seed)
{
	uint8_t *buf = malloc(len);
	ck_assert(buf);
	ssize_t r = pread(fd, buf, len, off);
	ck_assert_msg(r == (ssize_t)len, "pread %zu at %lld: %zd (%s)", len, (long long)off, r,
		      strerror(errno));
	size_t bad = mnt_pattern_mismatch(buf, len, seed, (uint64_t)off);
	ck_assert_msg(bad == len, "pattern differs at offset %lld", (long long)(off + (off_t)bad));
	free(buf);
}

static void pwrite_pattern(int fd, size_t len, uint64_t seed, off_t off)
{
	uint8_t *buf = malloc(len);
	ck_assert(buf);
	mnt_pattern_fill(buf, len, seed, (uint64_t)off);
	mnt_pwrite_all(fd, buf, len, off);
	free(buf);
}

/* ---- link ------------------------------------------------------------- */

START_TEST(test_link)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);

	mnt_make_file(mnt_path(&m, "a"), 0644, "shared content");
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	MNT_OK(link(mnt_path(&m, "a"), mnt_path(&m, "d/b")));
	struct stat sa = stat_of(mnt_path(&m, "a"));
	struct stat sb = stat_of(mnt_path(&m, "d/b"));
	ck_assert_uint_eq(sa.st_nlink, 2);
	ck_assert_uint_eq(sb.st_nlink, 2);
	ck_assert_uint_eq(sa.st_ino, sb.st_ino);
	mnt_expect_text(mnt_path(&m, "a"), "shared content");
	mnt_expect_text(mnt_path(&m, "d/b"), "shared content");

	/* a write through one name shows through the other */
	int fd = open(mnt_path(&m, "d/b"), O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open d/b: %s", strerror(errno));
	mnt_write_all(fd, "!", 1);
	MNT_OK(close(fd));
	mnt_expect_text(mnt_path(&m, "a"), "shared content!");

	MNT_FAILS(link(mnt_path(&m, "d"), mnt_path(&m, "dlink")), EPERM);
	MNT_FAILS(link(mnt_path(&m, "a"), mnt_path(&m, "d/b")), EEXIST);
	MNT_FAILS(link(mnt_path(&m, "a"), mnt_path(&m, "d")), EEXIST);
	MNT_FAILS(link(mnt_path(&m, "missing"), mnt_path(&m, "x")), ENOENT);

	remount(&m);
	ck_assert_uint_eq(stat_of(mnt_path(&m, "d/b")).st_nlink, 2);
	MNT_OK(unlink(mnt_path(&m, "a")));
	MNT_FAILS(access(mnt_path(&m, "a"), F_OK), ENOENT);
	ck_assert_uint_eq(stat_of(mnt_path(&m, "d/b")).st_nlink, 1);
	mnt_expect_text(mnt_path(&m, "d/b"), "shared content!");
	remount(&m);
	ck_assert_uint_eq(stat_of(mnt_path(&m, "d/b")).st_nlink, 1);
	mnt_expect_text(mnt_path(&m, "d/b"), "shared content!");
	mnt_finish(&m);
}
END_TEST

/* ---- symlink / readlink --------------------------------------------------- */

static void expect_link(const char *path, const char *target)
{
	char buf[8192];
	ssize_t n = readlink(path, buf, sizeof(buf));
	ck_assert_msg(n >= 0, "readlink %s: %s", path, strerror(errno));
	ck_assert_int_eq(n, (ssize_t)strlen(target));
	ck_assert_msg(memcmp(buf, target, (size_t)n) == 0, "readlink %s differs", path);
	struct stat st = lstat_of(path);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_size, (off_t)strlen(target));
}

START_TEST(test_symlink)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);

	mnt_make_file(mnt_path(&m, "target"), 0644, "via link");
	MNT_OK(symlink("target", mnt_path(&m, "short")));
	expect_link(mnt_path(&m, "short"), "target");
	mnt_expect_text(mnt_path(&m, "short"), "via link");
	/* stat follows, lstat does not */
	ck_assert_uint_eq(stat_of(mnt_path(&m, "short")).st_ino,
			  stat_of(mnt_path(&m, "target")).st_ino);

	/* 3000-byte target: a long relative path that still resolves to
	 * "target" ("./" repeated) */
	char *lng = malloc(4200);
	ck_assert(lng);
	size_t pos = 0;
	while (pos + 2 + strlen("target") < 3000) {
		memcpy(lng + pos, "./", 2);
		pos += 2;
	}
	/* pad to exactly 3000 with extra slashes */
	while (pos + strlen("target") < 3000)
		lng[pos++] = '/';
	strcpy(lng + pos, "target");
	ck_assert_uint_eq(strlen(lng), 3000);
	MNT_OK(symlink(lng, mnt_path(&m, "long")));
	expect_link(mnt_path(&m, "long"), lng);
	mnt_expect_text(mnt_path(&m, "long"), "via link");

	/* writing through the link reaches the target */
	int fd = open(mnt_path(&m, "long"), O_WRONLY | O_TRUNC | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open through long link: %s", strerror(errno));
	mnt_write_all(fd, "rewritten", 9);
	MNT_OK(close(fd));
	mnt_expect_text(mnt_path(&m, "target"), "rewritten");

	/* 4096 bytes (PATH_MAX with the NUL) is too long */
	char *too = malloc(4097);
	ck_assert(too);
	memset(too, 'x', 4096);
	too[4096] = '\0';
	MNT_FAILS(symlink(too, mnt_path(&m, "toolong")), ENAMETOOLONG);
	MNT_FAILS(lstat(mnt_path(&m, "toolong"), &(struct stat){0}), ENOENT);

	/* a dangling link is a link; following it fails */
	MNT_OK(symlink("nowhere", mnt_path(&m, "dangling")));
	expect_link(mnt_path(&m, "dangling"), "nowhere");
	MNT_FAILS(open(mnt_path(&m, "dangling"), O_RDONLY), ENOENT);
	MNT_FAILS(symlink("target", mnt_path(&m, "short")), EEXIST);
	MNT_FAILS(readlink(mnt_path(&m, "target"), too, 100), EINVAL);

	remount(&m);
	expect_link(mnt_path(&m, "short"), "target");
	expect_link(mnt_path(&m, "long"), lng);
	expect_link(mnt_path(&m, "dangling"), "nowhere");
	mnt_expect_text(mnt_path(&m, "long"), "rewritten");
	mnt_expect_text(mnt_path(&m, "short"), "rewritten");
	free(lng);
	free(too);
	mnt_finish(&m);
}
END_TEST

/* ---- mknod ---------------------------------------------------------------- */

START_TEST(test_mknod)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);

	MNT_OK(mkfifo(mnt_path(&m, "fifo"), 0640));
	MNT_OK(mknod(mnt_path(&m, "null"), S_IFCHR | 0666, makedev(1, 3)));
	MNT_OK(mknod(mnt_path(&m, "sock"), S_IFSOCK | 0600, 0));
	MNT_OK(mknod(mnt_path(&m, "blk"), S_IFBLK | 0600, makedev(7, 42)));
	MNT_FAILS(mkfifo(mnt_path(&m, "fifo"), 0640), EEXIST);

	for (int round = 0; round < 2; round++) {
		struct stat st = lstat_of(mnt_path(&m, "fifo"));
		ck_assert_msg(S_ISFIFO(st.st_mode), "fifo mode 0%o", st.st_mode);
		ck_assert_uint_eq(st.st_mode & 07777, 0640);
		ck_assert_int_eq(st.st_size, 0);
		st = lstat_of(mnt_path(&m, "null"));
		ck_assert_msg(S_ISCHR(st.st_mode), "null mode 0%o", st.st_mode);
		ck_assert_uint_eq(st.st_mode & 07777, 0666);
		ck_assert_msg(major(st.st_rdev) == 1 && minor(st.st_rdev) == 3,
			      "round %d: st_rdev %u:%u, expected 1:3", round, major(st.st_rdev),
			      minor(st.st_rdev));
		st = lstat_of(mnt_path(&m, "blk"));
		ck_assert_msg(S_ISBLK(st.st_mode), "blk mode 0%o", st.st_mode);
		ck_assert_msg(major(st.st_rdev) == 7 && minor(st.st_rdev) == 42,
			      "round %d: st_rdev %u:%u, expected 7:42", round, major(st.st_rdev),
			      minor(st.st_rdev));
		st = lstat_of(mnt_path(&m, "sock"));
		ck_assert_msg(S_ISSOCK(st.st_mode), "sock mode 0%o", st.st_mode);
		ck_assert_uint_eq(st.st_mode & 07777, 0600);
		if (round == 0)
			remount(&m);
	}

	/* the FIFO works as a FIFO (the kernel serves it, not the daemon) */
	int rfd = open(mnt_path(&m, "fifo"), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ck_assert_msg(rfd >= 0, "open fifo for reading: %s", strerror(errno));
	int wfd = open(mnt_path(&m, "fifo"), O_WRONLY | O_CLOEXEC);
	ck_assert_msg(wfd >= 0, "open fifo for writing: %s", strerror(errno));
	mnt_write_all(wfd, "pipe", 4);
	char buf[8] = {0};
	ck_assert_int_eq(read(rfd, buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "pipe");
	close(wfd);
	close(rfd);

	MNT_OK(unlink(mnt_path(&m, "fifo")));
	MNT_OK(unlink(mnt_path(&m, "null")));
	MNT_OK(unlink(mnt_path(&m, "sock")));
	mnt_finish(&m);
}
END_TEST

/* ---- xattrs --------------------------------------------------------------- */

/* The names in a listxattr buffer, each must be present / absent. */
static bool list_has(const char *list, ssize_t len, const char *name)
{
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1)
		if (strcmp(list + i, name) == 0)
			return true;
	return false;
}

static void expect_xattr(const char *path, const char *name, const void *val, size_t len)
{
	char buf[8192];
	ssize_t n = getxattr(path, name, NULL, 0);
	ck_assert_msg(n == (ssize_t)len, "getxattr %s size query: %zd (%s), expected %zu", name, n,
		      strerror(errno), len);
	n = getxattr(path, name, buf, sizeof(buf));
	ck_assert_msg(n == (ssize_t)len, "getxattr %s: %zd (%s), expected %zu", name, n,
		      strerror(errno), len);
	ck_assert_msg(memcmp(buf, val, len) == 0, "value of %s differs", name);
}

START_TEST(test_xattr)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "file");
	mnt_make_file(f, 0644, "data");
	MNT_OK(mkdir(mnt_path(&m, "dir"), 0755));

	char big[2000];
	mnt_pattern_fill(big, sizeof(big), 7, 0);
	MNT_OK(setxattr(f, "user.small", "v1", 2, 0));
	MNT_OK(setxattr(f, "user.big", big, sizeof(big), 0));
	MNT_OK(setxattr(f, "user.empty", "", 0, 0));
	MNT_OK(setxattr(f, "trusted.t", "root-only", 9, 0));
	MNT_OK(setxattr(mnt_path(&m, "dir"), "user.ondir", "d", 1, 0));
	expect_xattr(f, "user.small", "v1", 2);
	expect_xattr(f, "user.big", big, sizeof(big));
	expect_xattr(f, "user.empty", "", 0);
	expect_xattr(f, "trusted.t", "root-only", 9);
	expect_xattr(mnt_path(&m, "dir"), "user.ondir", "d", 1);

	/* flags */
	MNT_FAILS(setxattr(f, "user.small", "v2", 2, XATTR_CREATE), EEXIST);
	expect_xattr(f, "user.small", "v1", 2);
	MNT_FAILS(setxattr(f, "user.nothere", "x", 1, XATTR_REPLACE), ENODATA);
	MNT_FAILS(getxattr(f, "user.nothere", NULL, 0), ENODATA);
	MNT_OK(setxattr(f, "user.small", "replaced", 8, XATTR_REPLACE));
	expect_xattr(f, "user.small", "replaced", 8);
	MNT_OK(setxattr(f, "user.created", "c", 1, XATTR_CREATE));
	expect_xattr(f, "user.created", "c", 1);

	/* too small a buffer */
	char small[4];
	MNT_FAILS(getxattr(f, "user.small", small, sizeof(small)), ERANGE);

	/* listxattr: size query, exact list, ERANGE */
	char list[4096];
	ssize_t need = listxattr(f, NULL, 0);
	ck_assert_msg(need > 0, "listxattr size query: %zd (%s)", need, strerror(errno));
	ssize_t len = listxattr(f, list, sizeof(list));
	ck_assert_int_eq(len, need);
	ck_assert(list_has(list, len, "user.small"));
	ck_assert(list_has(list, len, "user.big"));
	ck_assert(list_has(list, len, "user.empty"));
	ck_assert(list_has(list, len, "user.created"));
	ck_assert(list_has(list, len, "trusted.t"));
	ck_assert_int_eq(len, (ssize_t)(strlen("user.small") + strlen("user.big") +
					strlen("user.empty") + strlen("user.created") +
					strlen("trusted.t") + 5));
	MNT_FAILS(listxattr(f, list, (size_t)need - 1), ERANGE);

	/* remove */
	MNT_OK(removexattr(f, "user.created"));
	MNT_FAILS(getxattr(f, "user.created", NULL, 0), ENODATA);
	MNT_FAILS(removexattr(f, "user.created"), ENODATA);
	MNT_FAILS(removexattr(f, "trusted.missing"), ENODATA);

	remount(&m);
	expect_xattr(f, "user.small", "replaced", 8);
	expect_xattr(f, "user.big", big, sizeof(big));
	expect_xattr(f, "user.empty", "", 0);
	expect_xattr(f, "trusted.t", "root-only", 9);
	expect_xattr(mnt_path(&m, "dir"), "user.ondir", "d", 1);
	MNT_FAILS(getxattr(f, "user.created", NULL, 0), ENODATA);
	len = listxattr(f, list, sizeof(list));
	ck_assert_int_eq(len, (ssize_t)(strlen("user.small") + strlen("user.big") +
					strlen("user.empty") + strlen("trusted.t") + 4));
	mnt_expect_text(f, "data");

	MNT_OK(removexattr(f, "user.big"));
	MNT_OK(removexattr(f, "trusted.t"));
	remount(&m);
	MNT_FAILS(getxattr(f, "user.big", NULL, 0), ENODATA);
	MNT_FAILS(getxattr(f, "trusted.t", NULL, 0), ENODATA);
	expect_xattr(f, "user.small", "replaced", 8);
	/* a file with xattrs is removed cleanly (checker at the end) */
	MNT_OK(unlink(f));
	mnt_finish(&m);
}
END_TEST

/* ---- renameat2 ------------------------------------------------------------ */

static long renameat2_(const char *from, const char *to, unsigned flags)
{
	return syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
}

START_TEST(test_renameat2)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);

	MNT_OK(mkdir(mnt_path(&m, "p1"), 0755));
	MNT_OK(mkdir(mnt_path(&m, "p2"), 0755));
	mnt_make_file(mnt_path(&m, "p1/f"), 0644, "file one");
	mnt_make_file(mnt_path(&m, "p1/g"), 0644, "file two");

	/* NOREPLACE */
	MNT_FAILS(renameat2_(mnt_path(&m, "p1/f"), mnt_path(&m, "p1/g"), RENAME_NOREPLACE),
		  EEXIST);
	mnt_expect_text(mnt_path(&m, "p1/f"), "file one");
	mnt_expect_text(mnt_path(&m, "p1/g"), "file two");
	MNT_OK(renameat2_(mnt_path(&m, "p1/g"), mnt_path(&m, "p2/g"), RENAME_NOREPLACE));
	mnt_expect_text(mnt_path(&m, "p2/g"), "file two");
	MNT_FAILS(access(mnt_path(&m, "p1/g"), F_OK), ENOENT);

	/* EXCHANGE of a file (p1/f) and a directory (p2/x) */
	MNT_OK(mkdir(mnt_path(&m, "p2/x"), 0755));
	mnt_make_file(mnt_path(&m, "p2/x/inner"), 0644, "inner");
	ino_t fino = stat_of(mnt_path(&m, "p1/f")).st_ino;
	ino_t xino = stat_of(mnt_path(&m, "p2/x")).st_ino;
	ino_t p1ino = stat_of(mnt_path(&m, "p1")).st_ino;
	ino_t p2ino = stat_of(mnt_path(&m, "p2")).st_ino;
	nlink_t p1links = stat_of(mnt_path(&m, "p1")).st_nlink;
	nlink_t p2links = stat_of(mnt_path(&m, "p2")).st_nlink;
	ck_assert_uint_eq(stat_of(mnt_path(&m, "p2/x/..")).st_ino, p2ino);
	MNT_FAILS(renameat2_(mnt_path(&m, "p1/f"), mnt_path(&m, "p2/nothere"), RENAME_EXCHANGE),
		  ENOENT);
	MNT_FAILS(renameat2_(mnt_path(&m, "p1/f"), mnt_path(&m, "p2/x"),
			     RENAME_EXCHANGE | RENAME_NOREPLACE),
		  EINVAL);
	MNT_OK(renameat2_(mnt_path(&m, "p1/f"), mnt_path(&m, "p2/x"), RENAME_EXCHANGE));

	for (int round = 0; round < 2; round++) {
		struct stat sf = lstat_of(mnt_path(&m, "p2/x"));
		struct stat sx = lstat_of(mnt_path(&m, "p1/f"));
		ck_assert_msg(S_ISREG(sf.st_mode) && sf.st_ino == fino,
			      "round %d: p2/x is ino %llu mode 0%o, expected file %llu", round,
			      (unsigned long long)sf.st_ino, sf.st_mode, (unsigned long long)fino);
		ck_assert_msg(S_ISDIR(sx.st_mode) && sx.st_ino == xino,
			      "round %d: p1/f is ino %llu mode 0%o, expected dir %llu", round,
			      (unsigned long long)sx.st_ino, sx.st_mode, (unsigned long long)xino);
		ck_assert_msg(stat_of(mnt_path(&m, "p1/f/..")).st_ino == p1ino,
			      "round %d: p1/f/.. is ino %llu, expected p1 (%llu)", round,
			      (unsigned long long)stat_of(mnt_path(&m, "p1/f/..")).st_ino,
			      (unsigned long long)p1ino);
		/* the directory moved from p2 to p1: link counts follow */
		ck_assert_uint_eq(stat_of(mnt_path(&m, "p1")).st_nlink, p1links + 1);
		ck_assert_uint_eq(stat_of(mnt_path(&m, "p2")).st_nlink, p2links - 1);
		mnt_expect_text(mnt_path(&m, "p2/x"), "file one");
		mnt_expect_text(mnt_path(&m, "p1/f/inner"), "inner");
		if (round == 0)
			remount(&m);
	}

	/* a directory into its own subdirectory */
	MNT_OK(mkdir(mnt_path(&m, "a"), 0755));
	MNT_OK(mkdir(mnt_path(&m, "a/b"), 0755));
	MNT_OK(mkdir(mnt_path(&m, "a/b/c"), 0755));
	MNT_FAILS(renameat2_(mnt_path(&m, "a"), mnt_path(&m, "a/b/c/a"), 0), EINVAL);
	MNT_FAILS(renameat2_(mnt_path(&m, "a"), mnt_path(&m, "a/b/new"), RENAME_NOREPLACE),
		  EINVAL);
	MNT_FAILS(renameat2_(mnt_path(&m, "a"), mnt_path(&m, "a/b/c"), RENAME_EXCHANGE), EINVAL);
	ck_assert(S_ISDIR(stat_of(mnt_path(&m, "a/b/c")).st_mode));
	mnt_finish(&m);
}
END_TEST

/* ---- fallocate ------------------------------------------------------------ */

/* Half the image preallocated, removed, preallocated again, a few times in
 * a row: the space an unlink frees waits for a commit [J5], and the
 * allocation forces that commit instead of failing (xfstests generic/213). */
START_TEST(test_fallocate_after_rm)
{
	struct mnt m;
	mnt_setup(&m, "512M");
	mnt_start(&m, "commit=60");
	struct statvfs sv;
	MNT_OK(statvfs(m.mountpoint, &sv));
	off_t half = (off_t)(sv.f_bavail * sv.f_frsize * 3 / 4);
	for (int round = 0; round < 5; round++) {
		int fd = open(mnt_path(&m, "f"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		ck_assert_msg(fd >= 0, "create: %s", strerror(errno));
		ck_assert_msg(fallocate(fd, 0, 0, half) == 0, "round %d: fallocate %lld: %s",
			      round, (long long)half, strerror(errno));
		MNT_OK(close(fd));
		MNT_OK(unlink(mnt_path(&m, "f")));
	}
	mnt_finish(&m);
}
END_TEST

START_TEST(test_fallocate)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	int fd = open(mnt_path(&m, "f"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "create: %s", strerror(errno));
	struct stat st;

	/* mode 0 extends the size and allocates */
	MNT_OK(fallocate(fd, 0, 0, 1 * MiB));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 * MiB);
	ck_assert_msg(st.st_blocks >= (blkcnt_t)(1 * MiB / 512), "st_blocks %lld after 1 MiB",
		      (long long)st.st_blocks);
	ck_assert_int_eq(first_nonzero(fd, 0, 1 * MiB), -1);

	/* KEEP_SIZE allocates beyond EOF without changing the size */
	blkcnt_t before = st.st_blocks;
	MNT_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 * MiB, 1 * MiB));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 * MiB);
	ck_assert_msg(st.st_blocks >= before + (blkcnt_t)(1 * MiB / 512),
		      "st_blocks %lld after KEEP_SIZE (was %lld)", (long long)st.st_blocks,
		      (long long)before);
	MNT_OK(ftruncate(fd, 0));

	/* punch a hole in the middle of written data */
	pwrite_pattern(fd, 1 * MiB, 11, 0);
	MNT_OK(fsync(fd));
	MNT_OK(fstat(fd, &st));
	before = st.st_blocks;
	MNT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 256 * KiB, 256 * KiB));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 * MiB);
	ck_assert_msg(st.st_blocks <= before - (blkcnt_t)(256 * KiB / 512),
		      "st_blocks %lld after punching 256 KiB (was %lld)", (long long)st.st_blocks,
		      (long long)before);
	expect_pattern_range(fd, 0, 256 * KiB, 11);
	ck_assert_int_eq(first_nonzero(fd, 256 * KiB, 256 * KiB), -1);
	expect_pattern_range(fd, 512 * KiB, 512 * KiB, 11);

	/* an unaligned punch zeroes exactly its bytes */
	MNT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 600 * KiB + 100, 5000));
	expect_pattern_range(fd, 512 * KiB, 88 * KiB + 100, 11);
	ck_assert_int_eq(first_nonzero(fd, 600 * KiB + 100, 5000), -1);
	expect_pattern_range(fd, 600 * KiB + 5100, 424 * KiB - 5100, 11);

	/* ZERO_RANGE */
	MNT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE, 700 * KiB + 7, 100 * KiB));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 * MiB);
	ck_assert_int_eq(first_nonzero(fd, 700 * KiB + 7, 100 * KiB), -1);
	expect_pattern_range(fd, 700 * KiB - 1000, 1007, 11);
	expect_pattern_range(fd, 800 * KiB + 7, 224 * KiB - 7, 11);
	/* ZERO_RANGE past EOF extends the size */
	MNT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE, 1 * MiB, 64 * KiB));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 * MiB + 64 * KiB);
	MNT_OK(close(fd));

	remount(&m);
	fd = open(mnt_path(&m, "f"), O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open: %s", strerror(errno));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 1 * MiB + 64 * KiB);
	expect_pattern_range(fd, 0, 256 * KiB, 11);
	ck_assert_int_eq(first_nonzero(fd, 256 * KiB, 256 * KiB), -1);
	ck_assert_int_eq(first_nonzero(fd, 600 * KiB + 100, 5000), -1);
	ck_assert_int_eq(first_nonzero(fd, 700 * KiB + 7, 100 * KiB), -1);
	ck_assert_int_eq(first_nonzero(fd, 1 * MiB, 64 * KiB), -1);
	expect_pattern_range(fd, 800 * KiB + 7, 224 * KiB - 7, 11);
	MNT_OK(close(fd));
	mnt_finish(&m);
}
END_TEST

/* ---- SEEK_DATA / SEEK_HOLE ------------------------------------------------ */

START_TEST(test_seek_data_hole)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	int fd = open(mnt_path(&m, "sparse"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "create: %s", strerror(errno));
	const off_t far = (off_t)(5 * GiB);
	pwrite_pattern(fd, 8192, 21, 0);
	pwrite_pattern(fd, 4096, 22, far);

	for (int round = 0; round < 2; round++) {
		struct stat st;
		MNT_OK(fstat(fd, &st));
		ck_assert_int_eq(st.st_size, far + 4096);
		off_t hole = lseek(fd, 0, SEEK_HOLE);
		ck_assert_msg(hole >= 8192 && hole < far,
			      "round %d: SEEK_HOLE from 0 = %lld (%s), expected in [8192, %lld)",
			      round, (long long)hole, strerror(errno), (long long)far);
		off_t data = lseek(fd, hole, SEEK_DATA);
		ck_assert_msg(data == far, "round %d: SEEK_DATA from %lld = %lld (%s), expected %lld",
			      round, (long long)hole, (long long)data, strerror(errno),
			      (long long)far);
		ck_assert_int_eq(lseek(fd, 0, SEEK_DATA), 0);
		ck_assert_int_eq(lseek(fd, 100, SEEK_DATA), 100);
		ck_assert_int_eq(lseek(fd, far + 10, SEEK_DATA), far + 10);
		ck_assert_int_eq(lseek(fd, far - 4096, SEEK_DATA), far);
		/* the only hole after the last data is the one at EOF */
		ck_assert_int_eq(lseek(fd, far, SEEK_HOLE), far + 4096);
		MNT_FAILS(lseek(fd, far + 4096, SEEK_DATA), ENXIO);
		MNT_FAILS(lseek(fd, far + 1 * GiB, SEEK_DATA), ENXIO);
		MNT_FAILS(lseek(fd, far + 4096, SEEK_HOLE), ENXIO);
		expect_pattern_range(fd, 0, 8192, 21);
		expect_pattern_range(fd, far, 4096, 22);
		ck_assert_int_eq(first_nonzero(fd, far - 64 * KiB, 64 * KiB), -1);
		if (round == 0) {
			MNT_OK(close(fd));
			remount(&m);
			fd = open(mnt_path(&m, "sparse"), O_RDONLY | O_CLOEXEC);
			ck_assert_msg(fd >= 0, "open: %s", strerror(errno));
		}
	}
	MNT_OK(close(fd));
	mnt_finish(&m);
}
END_TEST

/* ---- truncate beyond 4 GiB ------------------------------------------------ */

START_TEST(test_truncate_large)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *p = mnt_path(&m, "big");
	int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "create: %s", strerror(errno));
	const off_t base = (off_t)(4 * GiB + 12345);
	pwrite_pattern(fd, 64 * KiB, 31, base);
	pwrite_pattern(fd, 4096, 32, 0);
	struct stat st;
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, base + 64 * KiB);

	/* up */
	MNT_OK(ftruncate(fd, (off_t)(6 * GiB)));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, (off_t)(6 * GiB));
	expect_pattern_range(fd, base, 64 * KiB, 31);
	ck_assert_int_eq(first_nonzero(fd, base + 64 * KiB, 64 * KiB), -1);

	/* down into the middle of the data (not block aligned) */
	const off_t cut = base + 10000;
	MNT_OK(truncate(p, cut));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, cut);
	expect_pattern_range(fd, base, 10000, 31);
	char c;
	ck_assert_int_eq(pread(fd, &c, 1, cut), 0);

	/* grow again: the cut-off tail reads zeros */
	MNT_OK(ftruncate(fd, base + 64 * KiB));
	ck_assert_int_eq(first_nonzero(fd, cut, (size_t)(base + 64 * KiB - cut)), -1);
	expect_pattern_range(fd, base, 10000, 31);
	MNT_OK(close(fd));

	remount(&m);
	fd = open(p, O_RDWR | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open: %s", strerror(errno));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, base + 64 * KiB);
	expect_pattern_range(fd, 0, 4096, 32);
	expect_pattern_range(fd, base, 10000, 31);
	ck_assert_int_eq(first_nonzero(fd, cut, (size_t)(base + 64 * KiB - cut)), -1);

	/* down below 4 GiB, then up past it again */
	MNT_OK(ftruncate(fd, 2048));
	MNT_OK(ftruncate(fd, (off_t)(5 * GiB)));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, (off_t)(5 * GiB));
	expect_pattern_range(fd, 0, 2048, 32);
	ck_assert_int_eq(first_nonzero(fd, 2048, 2048), -1);
	ck_assert_int_eq(first_nonzero(fd, base, 64 * KiB), -1);
	MNT_OK(close(fd));
	remount(&m);
	ck_assert_int_eq(stat_of(p).st_size, (off_t)(5 * GiB));
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open: %s", strerror(errno));
	ck_assert_int_eq(first_nonzero(fd, base, 64 * KiB), -1);
	expect_pattern_range(fd, 0, 2048, 32);
	MNT_OK(close(fd));
	mnt_finish(&m);
}
END_TEST

/* ---- names ---------------------------------------------------------------- */

START_TEST(test_name_length)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	char name[300];
	memset(name, 'a', 255);
	name[255] = '\0';
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	mnt_make_file(mnt_path(&m, "d/%s", name), 0644, "max");
	mnt_expect_text(mnt_path(&m, "d/%s", name), "max");
	name[0] = 'b';
	MNT_OK(mkdir(mnt_path(&m, "d/%s", name), 0755));
	name[0] = 'c';
	MNT_OK(symlink("x", mnt_path(&m, "d/%s", name)));
	name[0] = 'a';

	char lng[300];
	memset(lng, 'z', 256);
	lng[256] = '\0';
	MNT_FAILS(open(mnt_path(&m, "d/%s", lng), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
	MNT_FAILS(mkdir(mnt_path(&m, "d/%s", lng), 0755), ENAMETOOLONG);
	MNT_FAILS(symlink("x", mnt_path(&m, "d/%s", lng)), ENAMETOOLONG);
	MNT_FAILS(link(mnt_path(&m, "d/%s", name), mnt_path(&m, "d/%s", lng)), ENAMETOOLONG);
	MNT_FAILS(rename(mnt_path(&m, "d/%s", name), mnt_path(&m, "d/%s", lng)), ENAMETOOLONG);

	remount(&m);
	mnt_expect_text(mnt_path(&m, "d/%s", name), "max");
	name[0] = 'b';
	ck_assert(S_ISDIR(stat_of(mnt_path(&m, "d/%s", name)).st_mode));
	name[0] = 'c';
	ck_assert(S_ISLNK(lstat_of(mnt_path(&m, "d/%s", name)).st_mode));
	name[0] = 'a';
	MNT_OK(rename(mnt_path(&m, "d/%s", name), mnt_path(&m, "short")));
	mnt_expect_text(mnt_path(&m, "short"), "max");
	mnt_finish(&m);
}
END_TEST

/* ---- nanosecond timestamps ------------------------------------------------ */

START_TEST(test_nsec_times)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	mnt_make_file(mnt_path(&m, "f"), 0644, "t");
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	struct timespec ts[2] = {
		{ .tv_sec = 1234567890, .tv_nsec = 123456789 },
		{ .tv_sec = 1700000000, .tv_nsec = 987654321 },
	};
	struct timespec tsd[2] = {
		{ .tv_sec = 1000000001, .tv_nsec = 1 },
		{ .tv_sec = 4102444800LL, .tv_nsec = 999999999 }, /* 2100 */
	};
	MNT_OK(utimensat(AT_FDCWD, mnt_path(&m, "f"), ts, 0));
	MNT_OK(utimensat(AT_FDCWD, mnt_path(&m, "d"), tsd, 0));
	for (int round = 0; round < 2; round++) {
		struct stat st = stat_of(mnt_path(&m, "f"));
		ck_assert_msg(st.st_atim.tv_sec == ts[0].tv_sec && st.st_atim.tv_nsec == ts[0].tv_nsec,
			      "round %d: atime %lld.%09ld", round, (long long)st.st_atim.tv_sec,
			      st.st_atim.tv_nsec);
		ck_assert_msg(st.st_mtim.tv_sec == ts[1].tv_sec && st.st_mtim.tv_nsec == ts[1].tv_nsec,
			      "round %d: mtime %lld.%09ld", round, (long long)st.st_mtim.tv_sec,
			      st.st_mtim.tv_nsec);
		st = stat_of(mnt_path(&m, "d"));
		ck_assert_msg(st.st_atim.tv_sec == tsd[0].tv_sec &&
				      st.st_atim.tv_nsec == tsd[0].tv_nsec,
			      "round %d: dir atime %lld.%09ld", round,
			      (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec);
		ck_assert_msg(st.st_mtim.tv_sec == tsd[1].tv_sec &&
				      st.st_mtim.tv_nsec == tsd[1].tv_nsec,
			      "round %d: dir mtime %lld.%09ld", round,
			      (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		if (round == 0)
			remount(&m);
	}
	mnt_finish(&m);
}
END_TEST

/* ---- set-user-ID ------------------------------------------------------------ */

START_TEST(test_setuid_bits)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "allow_other"); /* uid 1000 writes below */
	ck_assert_msg(geteuid() == 0, "the mounted tests run as root");
	const char *f = mnt_path(&m, "suid");
	mnt_make_file(f, 04755, NULL);
	ck_assert_uint_eq(stat_of(f).st_mode & 07777, 04755);

	/* chown clears S_ISUID, even for root */
	MNT_OK(chown(f, 1000, 1000));
	struct stat st = stat_of(f);
	ck_assert_uint_eq(st.st_uid, 1000);
	ck_assert_msg((st.st_mode & 07777) == 0755, "mode 0%o after chown, expected 0755",
		      st.st_mode & 07777);

	/* a write by someone without CAP_FSETID clears it */
	const char *o = mnt_path(&m, "other");
	mnt_make_file(o, 04777, NULL);
	MNT_OK(chown(o, 1000, 1000));
	MNT_OK(chmod(o, 04777));
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		/* open as root (the test directory is 0700), write as 1000 */
		int cfd = open(o, O_WRONLY | O_CLOEXEC);
		if (cfd < 0)
			_exit(2);
		if (setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
			_exit(3);
		if (write(cfd, "u", 1) != 1)
			_exit(100 + errno);
		_exit(close(cfd) ? 4 : 0);
	}
	int status;
	ck_assert(waitpid(pid, &status, 0) == pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "unprivileged writer failed, status 0x%x (exit >= 100: write errno %d)",
		      status, WIFEXITED(status) ? WEXITSTATUS(status) - 100 : -1);
	st = stat_of(o);
	ck_assert_int_eq(st.st_size, 1);
	ck_assert_msg((st.st_mode & 07777) == 0777,
		      "mode 0%o after an unprivileged write, expected 0777", st.st_mode & 07777);

	/* a write and a fallocate by root (CAP_FSETID) keep it */
	MNT_OK(chmod(f, 04755));
	ck_assert_uint_eq(stat_of(f).st_mode & 07777, 04755);
	int fd = open(f, O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open: %s", strerror(errno));
	mnt_write_all(fd, "more", 4);
	MNT_OK(close(fd));
	const char *g = mnt_path(&m, "suid2");
	mnt_make_file(g, 04755, NULL);
	fd = open(g, O_WRONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open: %s", strerror(errno));
	MNT_OK(fallocate(fd, 0, 0, 8192));
	MNT_OK(close(fd));
	st = stat_of(f);
	ck_assert_int_eq(st.st_size, 4);
	struct stat sg = stat_of(g);
	ck_assert_int_eq(sg.st_size, 8192);
	ck_assert_msg((st.st_mode & 07777) == 04755 && (sg.st_mode & 07777) == 04755,
		      "root (CAP_FSETID) lost set-user-ID: mode 0%o after write() (expected 04755), "
		      "mode 0%o after fallocate() (expected 04755)",
		      st.st_mode & 07777, sg.st_mode & 07777);
	remount(&m);
	ck_assert_uint_eq(stat_of(f).st_mode & 07777, 04755);
	mnt_expect_text(f, "more");
	mnt_finish(&m);
}
END_TEST

/* ---- ENOSPC ----------------------------------------------------------------- */

START_TEST(test_enospc)
{
	struct mnt m;
	mnt_setup(&m, "16M");
	mnt_start(&m, NULL);
	const char *p = mnt_path(&m, "fill");
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "create: %s", strerror(errno));
	enum { CHUNK = 128 * 1024 };
	static uint8_t buf[CHUNK];
	uint64_t total = 0;
	int err = 0;
	for (;;) {
		mnt_pattern_fill(buf, CHUNK, 41, total);
		ssize_t n = write(fd, buf, CHUNK);
		if (n < 0) {
			err = errno;
			break;
		}
		ck_assert_msg(n > 0, "write returned 0 at %llu", (unsigned long long)total);
		total += (uint64_t)n;
		ck_assert_msg(total < 64 * MiB, "wrote %llu bytes to a 16M image",
			      (unsigned long long)total);
		/* a short write: the next (rest of the pattern) must fail */
		if (n < CHUNK) {
			mnt_pattern_fill(buf, 4096, 41, total);
			ssize_t n2 = write(fd, buf, 4096);
			if (n2 > 0) {
				total += (uint64_t)n2;
				continue;
			}
			err = n2 < 0 ? errno : 0;
			break;
		}
	}
	ck_assert_msg(err == ENOSPC, "writing stopped with %s after %llu bytes, expected ENOSPC",
		      strerror(err), (unsigned long long)total);
	printf("ENOSPC after %llu bytes on a 16M image\n", (unsigned long long)total);
	ck_assert_msg(total > 8 * MiB, "only %llu bytes fit in a 16M image",
		      (unsigned long long)total);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	struct stat st = stat_of(p);
	ck_assert_int_eq(st.st_size, (off_t)total);

	/* other operations fail cleanly or succeed, but do not hurt the image */
	int fd2 = open(mnt_path(&m, "another"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd2 >= 0) {
		ssize_t n = write(fd2, buf, 4096);
		ck_assert_msg(n == 4096 || (n < 0 && errno == ENOSPC), "write on a full fs: %zd (%s)",
			      n, strerror(errno));
		MNT_OK(close(fd2));
		MNT_OK(unlink(mnt_path(&m, "another")));
	} else {
		ck_assert_msg(errno == ENOSPC, "create on a full fs: %s", strerror(errno));
	}

	mnt_stop(&m);
	mnt_check(&m);
	mnt_start(&m, NULL);
	ck_assert_int_eq(stat_of(p).st_size, (off_t)total);
	mnt_expect_pattern(p, total, 41);
	/* freeing the space makes it usable again */
	MNT_OK(unlink(p));
	mnt_finish(&m);
}
END_TEST

static Suite *posix_suite(void)
{
	Suite *s = suite_create("mounted_posix");
	TCase *tc = tcase_create("posix");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_link);
	tcase_add_test(tc, test_symlink);
	tcase_add_test(tc, test_mknod);
	tcase_add_test(tc, test_xattr);
	tcase_add_test(tc, test_renameat2);
	tcase_add_test(tc, test_fallocate);
	tcase_add_test(tc, test_fallocate_after_rm);
	tcase_add_test(tc, test_seek_data_hole);
	tcase_add_test(tc, test_truncate_large);
	tcase_add_test(tc, test_name_length);
	tcase_add_test(tc, test_nsec_times);
	tcase_add_test(tc, test_setuid_bits);
	tcase_add_test(tc, test_enospc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(posix_suite());
}
