/*
 * test_mnt_ops.c - every FUSE operation ordfs serves, reached through the
 * ordinary system call that makes the kernel send it.
 *
 * Owns: lookup/getattr (stat), setattr (chmod, chown, truncate, utimensat
 * with explicit times, UTIME_NOW and UTIME_OMIT), mkdir, rmdir, create
 * (creat, O_CREAT|O_EXCL), open, read, write (sparse past EOF, 1 MiB and
 * larger), flush/release (close), unlink (also of an open file), rename
 * (plain, over a file, across directories, into its own subdirectory),
 * readdir of a few thousand entries with telldir/seekdir, fsync,
 * fdatasync, fsyncdir and statfs; and creates racing with the eviction of
 * unlinked inodes (inode numbers are reused at once).
 *
 * Each test mounts a fresh image with the real daemon and ends with
 * mnt_finish(): clean unmount, daemon exit 0, checker finds nothing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define MiB (1024u * 1024u)

static struct timespec realtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

static double ts_sec(struct timespec t)
{
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* t lies in [lo - 1 s, hi + 1 s] (the daemon's and our clocks agree, but
 * coarse kernel clocks may lag a tick). */
static void expect_time_between(struct timespec t, struct timespec lo, struct timespec hi,
				const char *what)
{
	ck_assert_msg(ts_sec(t) >= ts_sec(lo) - 1.0 && ts_sec(t) <= ts_sec(hi) + 1.0,
		      "%s %lld.%09ld not within [%lld, %lld]", what, (long long)t.tv_sec,
		      t.tv_nsec, (long long)lo.tv_sec, (long long)hi.tv_sec);
}

static void expect_time(struct timespec t, time_t sec, long nsec, const char *what)
{
	ck_assert_msg(t.tv_sec == sec && t.tv_nsec == nsec,
		      "%s is %lld.%09ld, expected %lld.%09ld", what, (long long)t.tv_sec,
		      t.tv_nsec, (long long)sec, nsec);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static uint64_t free_blocks(struct mnt *m)
{
	struct statvfs v;
	MNT_OK(statvfs(m->mountpoint, &v));
	return v.f_bfree;
}

/* Unlinked inodes and their blocks come back asynchronously (the kernel
 * forgets an inode some time after its last close); waits up to 10 s for
 * at least bfree free blocks and ffree free inodes, returns what it saw. */
static struct statvfs wait_free(struct mnt *m, uint64_t bfree, uint64_t ffree)
{
	uint64_t deadline = mnt_now_ms() + 10000;
	struct statvfs v;
	do {
		MNT_OK(statvfs(m->mountpoint, &v));
		if (v.f_bfree >= bfree && v.f_ffree >= ffree)
			break;
		usleep(20000);
	} while (mnt_now_ms() < deadline);
	return v;
}

static unsigned count_names(const char *path)
{
	DIR *d = opendir(path);
	ck_assert_msg(d, "opendir %s: %s", path, strerror(errno));
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static nlink_t links_of(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return st.st_nlink;
}

static ino_t ino_of(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return st.st_ino;
}

/* ---- lookup / getattr ------------------------------------------------ */

START_TEST(test_lookup_getattr)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	struct stat st, fst;

	MNT_OK(stat(m.mountpoint, &st));
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_nlink, 3); /* ".", "..", lost+found's ".." */
	MNT_OK(stat(mnt_path(&m, "lost+found"), &st));
	ck_assert(S_ISDIR(st.st_mode));

	struct timespec t0 = realtime();
	int fd = mnt_create_file(mnt_path(&m, "file"), 0640, "hello");
	struct timespec t1 = realtime();
	MNT_OK(fstat(fd, &fst));
	MNT_OK(close(fd));
	MNT_OK(stat(mnt_path(&m, "file"), &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0640);
	ck_assert_int_eq(st.st_size, 5);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_uint_eq(st.st_gid, getegid());
	ck_assert_uint_eq(st.st_ino, fst.st_ino);
	ck_assert_int_eq(st.st_blksize, 4096);
	expect_time_between(st.st_mtim, t0, t1, "mtime of a new file");
	expect_time_between(st.st_ctim, t0, t1, "ctime of a new file");
	MNT_OK(lstat(mnt_path(&m, "file"), &fst));
	ck_assert_uint_eq(fst.st_ino, st.st_ino);

	MNT_FAILS(stat(mnt_path(&m, "missing"), &st), ENOENT);
	MNT_FAILS(stat(mnt_path(&m, "file/below"), &st), ENOTDIR);
	char name[300];
	memset(name, 'n', 255);
	name[255] = '\0';
	mnt_make_file(mnt_path(&m, "%s", name), 0644, NULL);
	MNT_OK(stat(mnt_path(&m, "%s", name), &st));
	memset(name, 'n', 256);
	name[256] = '\0';
	MNT_FAILS(stat(mnt_path(&m, "%s", name), &st), ENAMETOOLONG);
	MNT_FAILS(open(mnt_path(&m, "%s", name), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);

	MNT_OK(mkdir(mnt_path(&m, "dir"), 0755));
	ck_assert_uint_eq(links_of(m.mountpoint), 4);
	ck_assert_uint_eq(ino_of(mnt_path(&m, "dir/..")), ino_of(m.mountpoint));
	ck_assert_uint_eq(ino_of(mnt_path(&m, "dir/.")), ino_of(mnt_path(&m, "dir")));
	mnt_finish(&m);
}
END_TEST

/* ---- setattr ------------------------------------------------------------ */

START_TEST(test_setattr_mode_owner)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "f");
	struct stat st, before;
	mnt_make_file(f, 0644, "data");
	MNT_OK(stat(f, &before));

	MNT_OK(chmod(f, 0600));
	MNT_OK(stat(f, &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0600);
	ck_assert(ts_sec(st.st_ctim) >= ts_sec(before.st_ctim));
	MNT_OK(chown(f, 1234, 5678));
	MNT_OK(stat(f, &st));
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 5678);

	int fd = open(f, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fchown(fd, (uid_t)-1, 42));
	MNT_OK(fchmod(fd, 04750));
	MNT_OK(fstat(fd, &st));
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 42);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 04750);
	MNT_OK(close(fd));
	MNT_OK(stat(f, &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 04750);
	mnt_expect_text(f, "data");

	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	MNT_OK(chmod(mnt_path(&m, "d"), 01777));
	MNT_OK(chown(mnt_path(&m, "d"), 7, 8));
	MNT_OK(stat(mnt_path(&m, "d"), &st));
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 01777);
	ck_assert_uint_eq(st.st_uid, 7);
	ck_assert_uint_eq(st.st_gid, 8);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_setattr_truncate)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "f");
	const size_t len = 10000;
	uint8_t *buf = calloc(1, 6 * MiB);
	ck_assert(buf);
	mnt_write_pattern(f, len, 11, 0644);

	MNT_OK(truncate(f, 4000));
	mnt_expect_pattern(f, 4000, 11);
	MNT_OK(truncate(f, 20000));
	int fd = open(f, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(mnt_read_full(fd, buf, 6 * MiB), 20000);
	ck_assert_uint_eq(mnt_pattern_mismatch(buf, 4000, 11, 0), 4000);
	ck_assert_msg(all_zero(buf + 4000, 16000), "grown part is not zeros");

	MNT_OK(ftruncate(fd, 0));
	struct stat st;
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_uint_eq(pread(fd, buf, 10, 0), 0);

	/* grow far past EOF: a hole, no blocks */
	MNT_OK(ftruncate(fd, 5 * MiB + 1));
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 5 * MiB + 1);
	ck_assert_int_le(st.st_blocks, 8);
	memset(buf, 0xff, 6 * MiB);
	ck_assert_int_eq(pread(fd, buf, 6 * MiB, 0), 5 * MiB + 1);
	ck_assert_msg(all_zero(buf, 5 * MiB + 1), "truncated-up file is not zeros");
	MNT_OK(close(fd));

	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	MNT_FAILS(truncate(mnt_path(&m, "d"), 0), EISDIR);
	free(buf);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_setattr_times)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "f");
	struct stat st;
	mnt_make_file(f, 0644, "x");

	struct timespec ts[2] = { { 1000000000, 123456789 }, { 1234567890, 987654321 } };
	MNT_OK(utimensat(AT_FDCWD, f, ts, 0));
	MNT_OK(stat(f, &st));
	expect_time(st.st_atim, 1000000000, 123456789, "atime");
	expect_time(st.st_mtim, 1234567890, 987654321, "mtime");

	/* UTIME_OMIT atime, UTIME_NOW mtime */
	struct timespec t0 = realtime();
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_NOW;
	MNT_OK(utimensat(AT_FDCWD, f, ts, 0));
	struct timespec t1 = realtime();
	MNT_OK(stat(f, &st));
	expect_time(st.st_atim, 1000000000, 123456789, "atime after UTIME_OMIT");
	expect_time_between(st.st_mtim, t0, t1, "mtime after UTIME_NOW");
	struct timespec mtime_now = st.st_mtim;

	/* UTIME_NOW atime, UTIME_OMIT mtime */
	ts[0].tv_nsec = UTIME_NOW;
	ts[1].tv_nsec = UTIME_OMIT;
	t0 = realtime();
	MNT_OK(utimensat(AT_FDCWD, f, ts, 0));
	t1 = realtime();
	MNT_OK(stat(f, &st));
	expect_time_between(st.st_atim, t0, t1, "atime after UTIME_NOW");
	expect_time(st.st_mtim, mtime_now.tv_sec, mtime_now.tv_nsec, "mtime after UTIME_OMIT");
	struct timespec atime_now = st.st_atim;

	/* both UTIME_OMIT: nothing changes */
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_OMIT;
	MNT_OK(utimensat(AT_FDCWD, f, ts, 0));
	MNT_OK(stat(f, &st));
	expect_time(st.st_atim, atime_now.tv_sec, atime_now.tv_nsec, "atime after OMIT/OMIT");
	expect_time(st.st_mtim, mtime_now.tv_sec, mtime_now.tv_nsec, "mtime after OMIT/OMIT");

	/* NULL: both now */
	MNT_OK(utimensat(AT_FDCWD, f, ts, 0));
	t0 = realtime();
	MNT_OK(utimensat(AT_FDCWD, f, NULL, 0));
	t1 = realtime();
	MNT_OK(stat(f, &st));
	expect_time_between(st.st_atim, t0, t1, "atime after utimensat(NULL)");
	expect_time_between(st.st_mtim, t0, t1, "mtime after utimensat(NULL)");

	/* futimens on an open file, and times of a directory */
	int fd = open(f, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	struct timespec fts[2] = { { 42, 1 }, { 4242, 999999999 } };
	MNT_OK(futimens(fd, fts));
	MNT_OK(fstat(fd, &st));
	expect_time(st.st_atim, 42, 1, "atime after futimens");
	expect_time(st.st_mtim, 4242, 999999999, "mtime after futimens");
	MNT_OK(close(fd));
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	MNT_OK(utimensat(AT_FDCWD, mnt_path(&m, "d"), fts, 0));
	MNT_OK(stat(mnt_path(&m, "d"), &st));
	expect_time(st.st_mtim, 4242, 999999999, "mtime of a directory");

	/* a write moves mtime and ctime to now */
	t0 = realtime();
	fd = open(f, O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	mnt_write_all(fd, "y", 1);
	MNT_OK(close(fd));
	t1 = realtime();
	MNT_OK(stat(f, &st));
	expect_time_between(st.st_mtim, t0, t1, "mtime after a write");
	expect_time_between(st.st_ctim, t0, t1, "ctime after a write");
	mnt_finish(&m);
}
END_TEST

/* ---- mkdir / rmdir -------------------------------------------------------- */

START_TEST(test_mkdir_rmdir)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	struct stat st;
	nlink_t root_links = links_of(m.mountpoint);

	MNT_OK(mkdir(mnt_path(&m, "a"), 0750));
	MNT_OK(stat(mnt_path(&m, "a"), &st));
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 0750);
	ck_assert_uint_eq(st.st_nlink, 2);
	ck_assert_uint_eq(links_of(m.mountpoint), root_links + 1);
	MNT_FAILS(mkdir(mnt_path(&m, "a"), 0755), EEXIST);
	MNT_FAILS(mkdir(mnt_path(&m, "missing/b"), 0755), ENOENT);

	MNT_OK(mkdir(mnt_path(&m, "a/b"), 0755));
	MNT_OK(mkdir(mnt_path(&m, "a/b/c"), 0755));
	ck_assert_uint_eq(links_of(mnt_path(&m, "a")), 3);
	mnt_make_file(mnt_path(&m, "a/file"), 0644, "x");
	MNT_FAILS(mkdir(mnt_path(&m, "a/file"), 0755), EEXIST);
	MNT_FAILS(mkdir(mnt_path(&m, "a/file/x"), 0755), ENOTDIR);

	MNT_FAILS(rmdir(mnt_path(&m, "a")), ENOTEMPTY);
	MNT_FAILS(rmdir(mnt_path(&m, "a/b")), ENOTEMPTY);
	MNT_FAILS(rmdir(mnt_path(&m, "a/file")), ENOTDIR);
	MNT_FAILS(rmdir(mnt_path(&m, "a/nothing")), ENOENT);
	MNT_OK(rmdir(mnt_path(&m, "a/b/c")));
	ck_assert_uint_eq(links_of(mnt_path(&m, "a/b")), 2);
	MNT_FAILS(stat(mnt_path(&m, "a/b/c"), &st), ENOENT);
	MNT_OK(rmdir(mnt_path(&m, "a/b")));
	ck_assert_uint_eq(links_of(mnt_path(&m, "a")), 2);
	MNT_FAILS(rmdir(mnt_path(&m, "a")), ENOTEMPTY); /* the file is still there */
	MNT_OK(unlink(mnt_path(&m, "a/file")));
	MNT_OK(rmdir(mnt_path(&m, "a")));
	ck_assert_uint_eq(links_of(m.mountpoint), root_links);

	/* a directory removed while open: readdir sees nothing, fstat works */
	struct statvfs v0;
	MNT_OK(statvfs(m.mountpoint, &v0));
	MNT_OK(mkdir(mnt_path(&m, "gone"), 0755));
	int dfd = open(mnt_path(&m, "gone"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	MNT_OK(rmdir(mnt_path(&m, "gone")));
	MNT_OK(fstat(dfd, &st));
	ck_assert(S_ISDIR(st.st_mode));
	MNT_FAILS(openat(dfd, "new", O_CREAT | O_WRONLY, 0644), ENOENT);
	MNT_OK(close(dfd));
	/* freed once the kernel forgets it (an orphan until then) */
	ck_assert_uint_ge(wait_free(&m, 0, v0.f_ffree).f_ffree, v0.f_ffree);
	mnt_finish(&m);
}
END_TEST

/* ---- create / open -------------------------------------------------------- */

START_TEST(test_create_open)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "f");
	struct stat st;

	int fd = creat(f, 0604);
	ck_assert_msg(fd >= 0, "creat: %s", strerror(errno));
	mnt_write_all(fd, "first", 5);
	MNT_OK(close(fd));
	MNT_OK(stat(f, &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0604);

	MNT_FAILS(open(f, O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	mnt_expect_text(f, "first");
	fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0600); /* exists: opened, untouched */
	ck_assert_int_ge(fd, 0);
	MNT_OK(close(fd));
	mnt_expect_text(f, "first");
	MNT_OK(stat(f, &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0604);

	fd = open(f, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, 0);
	mnt_write_all(fd, "second", 6);
	MNT_OK(close(fd));
	mnt_expect_text(f, "second");

	fd = open(mnt_path(&m, "g"), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0640);
	ck_assert_msg(fd >= 0, "O_CREAT|O_EXCL of a new name: %s", strerror(errno));
	MNT_OK(fstat(fd, &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0640);
	ck_assert_int_eq(st.st_size, 0);
	MNT_OK(close(fd));

	MNT_FAILS(open(mnt_path(&m, "nothing"), O_RDONLY), ENOENT);
	MNT_FAILS(open(mnt_path(&m, "nothing/x"), O_CREAT | O_WRONLY, 0644), ENOENT);
	MNT_FAILS(open(mnt_path(&m, "f/x"), O_CREAT | O_WRONLY, 0644), ENOTDIR);
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	MNT_FAILS(open(mnt_path(&m, "d"), O_WRONLY), EISDIR);
	MNT_FAILS(open(mnt_path(&m, "d"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	mnt_finish(&m);
}
END_TEST

/* ---- read / write ----------------------------------------------------------- */

START_TEST(test_read_write_small)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "f");
	char buf[64];

	int fd = open(f, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "hello world", 11), 11);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 11);
	ck_assert(memcmp(buf, "hello world", 11) == 0);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 6), 5);
	ck_assert(memcmp(buf, "world", 5) == 0);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 11), 0);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 1000), 0);
	ck_assert_int_eq(pwrite(fd, "WORLD", 5, 6), 5);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 11);
	ck_assert(memcmp(buf, "hello WORLD", 11) == 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 0);
	ck_assert_int_eq(write(fd, "", 0), 0);
	MNT_OK(close(fd));

	fd = open(f, O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "!", 1), 1);
	ck_assert_int_eq(pwrite(fd, "?", 1, 0), 1); /* O_APPEND: appends on Linux */
	MNT_OK(close(fd));
	mnt_expect_text(f, "hello WORLD!?");

	/* writes straddling block boundaries */
	uint8_t blk[9000];
	mnt_pattern_fill(blk, sizeof(blk), 5, 0);
	fd = open(mnt_path(&m, "g"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	mnt_pwrite_all(fd, blk + 4090, 20, 4090);
	mnt_pwrite_all(fd, blk, 4090, 0);
	mnt_pwrite_all(fd, blk + 4110, sizeof(blk) - 4110, 4110);
	MNT_OK(close(fd));
	mnt_expect_pattern(mnt_path(&m, "g"), sizeof(blk), 5);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_sparse_write_past_eof)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "sparse");
	uint8_t head[4096], *buf = malloc(MiB);
	ck_assert(buf);
	mnt_pattern_fill(head, sizeof(head), 21, 0);

	int fd = open(f, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	mnt_write_all(fd, head, sizeof(head));
	const off_t far = 10 * (off_t)MiB + 123;
	mnt_pwrite_all(fd, "tail", 4, far);
	/* past the size of the whole image: holes take no space */
	const off_t huge = 200 * (off_t)MiB + 5;
	mnt_pwrite_all(fd, "end", 3, huge);
	MNT_OK(fsync(fd));

	struct stat st;
	MNT_OK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, huge + 3);
	ck_assert_msg(st.st_blocks * 512 <= 64 * 1024, "sparse file uses %lld bytes",
		      (long long)st.st_blocks * 512);

	ck_assert_int_eq(pread(fd, buf, sizeof(head), 0), (ssize_t)sizeof(head));
	ck_assert(memcmp(buf, head, sizeof(head)) == 0);
	for (off_t off = sizeof(head); off < far; off += MiB) {
		size_t want = (size_t)(far - off < (off_t)MiB ? far - off : (off_t)MiB);
		memset(buf, 0xaa, want);
		ck_assert_int_eq(pread(fd, buf, want, off), (ssize_t)want);
		ck_assert_msg(all_zero(buf, want), "hole at %lld is not zeros", (long long)off);
	}
	ck_assert_int_eq(pread(fd, buf, 4, far), 4);
	ck_assert(memcmp(buf, "tail", 4) == 0);
	ck_assert_int_eq(pread(fd, buf, 16, huge - 8), 11);
	ck_assert(all_zero(buf, 8));
	ck_assert(memcmp(buf + 8, "end", 3) == 0);
	ck_assert_int_eq(pread(fd, buf, 16, huge + 3), 0);
	MNT_OK(close(fd));

	/* writing into a hole of an existing file */
	fd = open(f, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	mnt_pwrite_all(fd, "mid", 3, 5 * (off_t)MiB);
	MNT_OK(close(fd));
	fd = open(f, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, 5, 5 * (off_t)MiB - 1), 5);
	ck_assert(buf[0] == 0 && memcmp(buf + 1, "mid", 3) == 0 && buf[4] == 0);
	MNT_OK(close(fd));
	free(buf);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_large_writes)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const size_t big = 3 * MiB + 5;
	uint8_t *buf = malloc(big), *back = malloc(big);
	ck_assert(buf && back);

	/* one write() call of 3 MiB + 5, one read() call back */
	mnt_pattern_fill(buf, big, 31, 0);
	int fd = open(mnt_path(&m, "big"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, big), (ssize_t)big);
	ck_assert_int_eq(pread(fd, back, big, 0), (ssize_t)big);
	ck_assert(memcmp(buf, back, big) == 0);
	/* odd-sized reads at odd offsets */
	for (off_t off = 7; off < (off_t)big; off += 12345 * 7) {
		ssize_t n = pread(fd, back, 12345, off);
		ck_assert_int_eq(n, off + 12345 <= (off_t)big ? 12345 : (off_t)big - off);
		ck_assert_uint_eq(mnt_pattern_mismatch(back, (size_t)n, 31, (uint64_t)off),
				  (size_t)n);
	}
	/* overwrite an unaligned stretch in the middle */
	const off_t mid = MiB + 77;
	const size_t midlen = 300000;
	uint8_t *patch = malloc(midlen);
	ck_assert(patch);
	mnt_pattern_fill(patch, midlen, 32, 0);
	mnt_pwrite_all(fd, patch, midlen, mid);
	MNT_OK(fsync(fd));
	ck_assert_int_eq(pread(fd, back, big, 0), (ssize_t)big);
	ck_assert(memcmp(back, buf, (size_t)mid) == 0);
	ck_assert(memcmp(back + mid, patch, midlen) == 0);
	ck_assert(memcmp(back + mid + midlen, buf + mid + midlen, big - (size_t)mid - midlen) == 0);
	MNT_OK(close(fd));

	/* eight 1 MiB writes, then read through a fresh open */
	fd = open(mnt_path(&m, "eight"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	for (unsigned i = 0; i < 8; i++) {
		mnt_pattern_fill(buf, MiB, 33, (uint64_t)i * MiB);
		ck_assert_int_eq(write(fd, buf, MiB), (ssize_t)MiB);
	}
	MNT_OK(fdatasync(fd));
	MNT_OK(close(fd));
	mnt_expect_pattern(mnt_path(&m, "eight"), 8 * MiB, 33);
	free(patch);
	free(buf);
	free(back);
	mnt_finish(&m);
}
END_TEST

/* ---- unlink ------------------------------------------------------------------- */

START_TEST(test_unlink)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	struct stat st;

	mnt_make_file(mnt_path(&m, "a"), 0644, "a");
	MNT_OK(unlink(mnt_path(&m, "a")));
	MNT_FAILS(stat(mnt_path(&m, "a"), &st), ENOENT);
	MNT_FAILS(unlink(mnt_path(&m, "a")), ENOENT);
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	MNT_FAILS(unlink(mnt_path(&m, "d")), EISDIR);
	MNT_FAILS(unlink(mnt_path(&m, "d/x")), ENOENT);

	/* an open file stays readable (and writable) after its unlink */
	uint64_t free_before = free_blocks(&m);
	const size_t len = 2 * MiB + 3;
	mnt_write_pattern(mnt_path(&m, "open"), len, 41, 0644);
	int fd = open(mnt_path(&m, "open"), O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	ck_assert_uint_lt(free_blocks(&m), free_before - 500);
	MNT_OK(unlink(mnt_path(&m, "open")));
	MNT_FAILS(stat(mnt_path(&m, "open"), &st), ENOENT);
	MNT_OK(fstat(fd, &st));
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_int_eq(st.st_size, (off_t)len);
	uint8_t *buf = malloc(len);
	ck_assert(buf);
	ck_assert_int_eq(pread(fd, buf, len, 0), (ssize_t)len);
	ck_assert_uint_eq(mnt_pattern_mismatch(buf, len, 41, 0), len);
	mnt_pwrite_all(fd, "more", 4, (off_t)len);
	ck_assert_int_eq(pread(fd, buf, 4, (off_t)len), 4);
	ck_assert(memcmp(buf, "more", 4) == 0);
	MNT_OK(fsync(fd));
	/* a new file may take the name meanwhile */
	mnt_make_file(mnt_path(&m, "open"), 0644, "new");
	mnt_expect_text(mnt_path(&m, "open"), "new");
	ck_assert_int_eq(pread(fd, buf, 10, 0), 10);
	ck_assert_uint_eq(mnt_pattern_mismatch(buf, 10, 41, 0), 10);
	MNT_OK(close(fd));
	MNT_OK(unlink(mnt_path(&m, "open")));

	uint64_t free_after = wait_free(&m, free_before, 0).f_bfree;
	ck_assert_msg(free_after >= free_before,
		      "blocks of the unlinked file not freed after close: %llu free, %llu before",
		      (unsigned long long)free_after, (unsigned long long)free_before);
	free(buf);
	mnt_finish(&m);
}
END_TEST

/* An unlinked file still open at unmount: the kernel releases it, the
 * daemon frees it, the image is clean. */
/* An unlinked file still open when the mount is detached (umount -l):
 * the kernel never sends the daemon a forget for it, so the daemon must
 * free it itself before it marks the image clean. */
START_TEST(test_unlink_open_at_lazy_unmount)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	mnt_write_pattern(mnt_path(&m, "f"), 100000, 42, 0644);
	int fd = open(mnt_path(&m, "f"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(unlink(mnt_path(&m, "f")));
	ck_assert_int_eq(mnt_fusermount_u(m.mountpoint, true), 0);
	uint8_t buf[100];
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 99950), 50); /* still served */
	ck_assert_uint_eq(mnt_pattern_mismatch(buf, 50, 42, 99950), 50);
	MNT_OK(close(fd));
	int status;
	ck_assert_msg(mnt_wait_pid(m.daemon, 60000, &status) == 0,
		      "daemon still running 60 s after the lazy unmount and the last close");
	m.daemon = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "daemon exit status 0x%x",
		      status);
	mnt_finish(&m);
}
END_TEST

/* ---- rename ---------------------------------------------------------------------- */

START_TEST(test_rename)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	struct stat st;

	/* plain */
	mnt_make_file(mnt_path(&m, "a"), 0644, "A");
	ino_t a_ino = ino_of(mnt_path(&m, "a"));
	MNT_OK(rename(mnt_path(&m, "a"), mnt_path(&m, "b")));
	MNT_FAILS(stat(mnt_path(&m, "a"), &st), ENOENT);
	ck_assert_uint_eq(ino_of(mnt_path(&m, "b")), a_ino);
	mnt_expect_text(mnt_path(&m, "b"), "A");
	MNT_FAILS(rename(mnt_path(&m, "a"), mnt_path(&m, "c")), ENOENT);
	MNT_OK(rename(mnt_path(&m, "b"), mnt_path(&m, "b"))); /* same name: nothing */
	mnt_expect_text(mnt_path(&m, "b"), "A");

	/* over an existing file; an open fd keeps the old target readable */
	mnt_make_file(mnt_path(&m, "target"), 0644, "old target");
	int fd = open(mnt_path(&m, "target"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(rename(mnt_path(&m, "b"), mnt_path(&m, "target")));
	MNT_FAILS(stat(mnt_path(&m, "b"), &st), ENOENT);
	ck_assert_uint_eq(ino_of(mnt_path(&m, "target")), a_ino);
	mnt_expect_text(mnt_path(&m, "target"), "A");
	char buf[32] = { 0 };
	ck_assert_int_eq(pread(fd, buf, sizeof(buf) - 1, 0), 10);
	ck_assert_str_eq(buf, "old target");
	MNT_OK(fstat(fd, &st));
	ck_assert_uint_eq(st.st_nlink, 0);
	MNT_OK(close(fd));

	/* across directories: a file and a directory (its ".." and the link
	 * counts of both parents follow) */
	MNT_OK(mkdir(mnt_path(&m, "d1"), 0755));
	MNT_OK(mkdir(mnt_path(&m, "d2"), 0755));
	MNT_OK(rename(mnt_path(&m, "target"), mnt_path(&m, "d1/moved")));
	mnt_expect_text(mnt_path(&m, "d1/moved"), "A");
	MNT_OK(mkdir(mnt_path(&m, "d1/sub"), 0755));
	mnt_make_file(mnt_path(&m, "d1/sub/inner"), 0644, "inner");
	ck_assert_uint_eq(links_of(mnt_path(&m, "d1")), 3);
	MNT_OK(rename(mnt_path(&m, "d1/sub"), mnt_path(&m, "d2/sub")));
	ck_assert_uint_eq(links_of(mnt_path(&m, "d1")), 2);
	ck_assert_uint_eq(links_of(mnt_path(&m, "d2")), 3);
	ck_assert_uint_eq(ino_of(mnt_path(&m, "d2/sub/..")), ino_of(mnt_path(&m, "d2")));
	mnt_expect_text(mnt_path(&m, "d2/sub/inner"), "inner");
	MNT_FAILS(stat(mnt_path(&m, "d1/sub"), &st), ENOENT);
	/* over an existing file in another directory */
	mnt_make_file(mnt_path(&m, "d2/victim"), 0644, "victim");
	MNT_OK(rename(mnt_path(&m, "d1/moved"), mnt_path(&m, "d2/victim")));
	mnt_expect_text(mnt_path(&m, "d2/victim"), "A");

	/* a directory into its own subdirectory */
	MNT_OK(mkdir(mnt_path(&m, "d2/sub/deeper"), 0755));
	MNT_FAILS(rename(mnt_path(&m, "d2"), mnt_path(&m, "d2/sub/deeper/d2")), EINVAL);
	MNT_FAILS(rename(mnt_path(&m, "d2/sub"), mnt_path(&m, "d2/sub/x")), EINVAL);
	MNT_OK(stat(mnt_path(&m, "d2/sub/deeper"), &st));

	/* directory over directory, file over directory and back */
	MNT_OK(mkdir(mnt_path(&m, "empty"), 0755));
	MNT_FAILS(rename(mnt_path(&m, "empty"), mnt_path(&m, "d2")), ENOTEMPTY);
	MNT_FAILS(rename(mnt_path(&m, "d2/victim"), mnt_path(&m, "empty")), EISDIR);
	MNT_FAILS(rename(mnt_path(&m, "empty"), mnt_path(&m, "d2/victim")), ENOTDIR);
	nlink_t root_links = links_of(m.mountpoint);
	MNT_OK(rename(mnt_path(&m, "d1"), mnt_path(&m, "empty")));
	ck_assert_uint_eq(links_of(m.mountpoint), root_links - 1);
	MNT_FAILS(stat(mnt_path(&m, "d1"), &st), ENOENT);
	ck_assert_uint_eq(ino_of(mnt_path(&m, "empty/..")), ino_of(m.mountpoint));
	mnt_finish(&m);
}
END_TEST

/* ---- readdir --------------------------------------------------------------------- */

#define MANY 3000

static void entry_name(char *buf, size_t len, unsigned i)
{
	/* every seventh name is long, so blocks hold few of them */
	if (i % 7 == 0)
		snprintf(buf, len, "entry-%05u-%0200u", i, i);
	else
		snprintf(buf, len, "entry-%05u", i);
}

/* Index of a name made by entry_name, or -1. */
static int entry_index(const char *name)
{
	unsigned i;
	int used = 0;
	if (sscanf(name, "entry-%5u%n", &i, &used) != 1 || i >= MANY || used != 11)
		return -1;
	char expect[256];
	entry_name(expect, sizeof(expect), i);
	return strcmp(expect, name) == 0 ? (int)i : -1;
}

/* Reads dir to the end, counting every name; asserts no unknown name and
 * no name twice.  Returns the number of names seen. */
static unsigned read_all(DIR *d, unsigned char *seen, unsigned *dots)
{
	unsigned n = 0;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
			(*dots)++;
			ck_assert_uint_eq(e->d_type, DT_DIR);
			continue;
		}
		int i = entry_index(e->d_name);
		ck_assert_msg(i >= 0, "readdir returned an unknown name '%s'", e->d_name);
		ck_assert_msg(!seen[i], "readdir returned '%s' twice", e->d_name);
		ck_assert_uint_eq(e->d_type, DT_REG);
		seen[i] = 1;
		n++;
	}
	ck_assert_msg(errno == 0, "readdir: %s", strerror(errno));
	return n;
}

START_TEST(test_readdir_many)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	char name[256];
	MNT_OK(mkdir(mnt_path(&m, "big"), 0755));
	int dfd = open(mnt_path(&m, "big"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	for (unsigned i = 0; i < MANY; i++) {
		entry_name(name, sizeof(name), i);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		ck_assert_msg(fd >= 0, "create %s: %s", name, strerror(errno));
		MNT_OK(close(fd));
	}
	MNT_OK(close(dfd));

	/* every name exactly once */
	unsigned char seen[MANY];
	unsigned dots = 0;
	memset(seen, 0, sizeof(seen));
	DIR *d = opendir(mnt_path(&m, "big"));
	ck_assert(d);
	ck_assert_uint_eq(read_all(d, seen, &dots), MANY);
	ck_assert_uint_eq(dots, 2);

	/* telldir/seekdir: remember positions, read on, come back */
	rewinddir(d);
	long pos[4];
	char after[4][256];
	unsigned taken = 0, count = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && taken < 4) {
		if (++count % 700 == 0) {
			pos[taken] = telldir(d);
			e = readdir(d);
			ck_assert(e);
			snprintf(after[taken], sizeof(after[taken]), "%s", e->d_name);
			taken++;
		}
	}
	ck_assert_uint_eq(taken, 4);
	for (unsigned k = 4; k-- > 0;) {
		seekdir(d, pos[k]);
		e = readdir(d);
		ck_assert_msg(e, "readdir after seekdir to position %u returned nothing", k);
		ck_assert_str_eq(e->d_name, after[k]);
	}
	/* resume from the second mark: the rest is exactly what follows it */
	memset(seen, 0, sizeof(seen));
	rewinddir(d);
	unsigned first_part = 0;
	while (telldir(d) != pos[1]) {
		e = readdir(d);
		ck_assert(e);
		int i = entry_index(e->d_name);
		if (i >= 0) {
			seen[i] = 1;
			first_part++;
		}
	}
	dots = 0;
	seekdir(d, pos[1]);
	ck_assert_uint_eq(first_part + read_all(d, seen, &dots), MANY);
	MNT_OK(closedir(d));

	/* after removing every third name, exactly the rest remains */
	for (unsigned i = 0; i < MANY; i += 3) {
		entry_name(name, sizeof(name), i);
		MNT_OK(unlink(mnt_path(&m, "big/%s", name)));
	}
	memset(seen, 0, sizeof(seen));
	dots = 0;
	d = opendir(mnt_path(&m, "big"));
	ck_assert(d);
	ck_assert_uint_eq(read_all(d, seen, &dots), MANY - (MANY + 2) / 3);
	for (unsigned i = 0; i < MANY; i++)
		ck_assert_msg(seen[i] == (i % 3 != 0), "entry %u %s", i,
			      seen[i] ? "seen after unlink" : "missing");
	MNT_OK(closedir(d));

	/* d_ino matches stat for a few names */
	d = opendir(mnt_path(&m, "big"));
	ck_assert(d);
	unsigned checked = 0;
	while ((e = readdir(d)) != NULL && checked < 20) {
		if (entry_index(e->d_name) < 0)
			continue;
		ck_assert_uint_eq(e->d_ino, ino_of(mnt_path(&m, "big/%s", e->d_name)));
		checked++;
	}
	MNT_OK(closedir(d));
	mnt_finish(&m);
}
END_TEST

/* ---- fsync, fdatasync, fsyncdir, statfs ---------------------------------------- */

START_TEST(test_fsync_family)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	int fd = open(mnt_path(&m, "f"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd)); /* nothing written yet */
	uint8_t buf[20000];
	mnt_pattern_fill(buf, sizeof(buf), 51, 0);
	mnt_write_all(fd, buf, sizeof(buf));
	MNT_OK(fsync(fd));
	MNT_OK(fsync(fd)); /* nothing new */
	mnt_pwrite_all(fd, buf, 100, 50000);
	MNT_OK(fdatasync(fd));
	MNT_OK(fchmod(fd, 0600));
	MNT_OK(fdatasync(fd)); /* metadata-only change */
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));

	fd = open(mnt_path(&m, "f"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd)); /* read-only descriptor */
	MNT_OK(fdatasync(fd));
	MNT_OK(close(fd));

	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	mnt_make_file(mnt_path(&m, "d/x"), 0644, "x");
	int dfd = open(mnt_path(&m, "d"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	MNT_OK(fsync(dfd));
	MNT_OK(rename(mnt_path(&m, "d/x"), mnt_path(&m, "d/y")));
	MNT_OK(fsync(dfd));
	MNT_OK(fdatasync(dfd));
	MNT_OK(close(dfd));
	int rfd = open(m.mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(rfd, 0);
	MNT_OK(fsync(rfd));
	MNT_OK(close(rfd));

	/* fsync after the file's unlink */
	fd = open(mnt_path(&m, "d/y"), O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(unlink(mnt_path(&m, "d/y")));
	mnt_write_all(fd, "z", 1);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	mnt_finish(&m);
}
END_TEST

START_TEST(test_statfs)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	struct statvfs v, v2;
	MNT_OK(statvfs(m.mountpoint, &v));
	ck_assert_uint_eq(v.f_bsize, 4096);
	ck_assert_uint_eq(v.f_frsize, 4096);
	ck_assert_uint_eq(v.f_blocks, 64 * MiB / 4096);
	ck_assert_uint_gt(v.f_bfree, v.f_blocks / 2);
	ck_assert_uint_le(v.f_bfree, v.f_blocks);
	ck_assert_uint_le(v.f_bavail, v.f_bfree);
	ck_assert_uint_gt(v.f_files, 0);
	ck_assert_uint_le(v.f_ffree, v.f_files);
	ck_assert_uint_eq(v.f_namemax, 255);

	mnt_make_file(mnt_path(&m, "one"), 0644, NULL);
	MNT_OK(mkdir(mnt_path(&m, "two"), 0755));
	MNT_OK(statvfs(m.mountpoint, &v2));
	ck_assert_uint_eq(v2.f_ffree, v.f_ffree - 2);

	mnt_write_pattern(mnt_path(&m, "four-mib"), 4 * MiB, 61, 0644);
	int fd = open(mnt_path(&m, "four-mib"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	MNT_OK(statvfs(m.mountpoint, &v2));
	ck_assert_msg(v2.f_bfree + 1024 <= v.f_bfree, "4 MiB written, f_bfree %llu -> %llu",
		      (unsigned long long)v.f_bfree, (unsigned long long)v2.f_bfree);
	struct statvfs f;
	fd = open(mnt_path(&m, "one"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fstatvfs(fd, &f));
	ck_assert_uint_eq(f.f_blocks, v2.f_blocks);
	MNT_OK(close(fd));

	MNT_OK(unlink(mnt_path(&m, "four-mib")));
	MNT_OK(unlink(mnt_path(&m, "one")));
	MNT_OK(rmdir(mnt_path(&m, "two")));
	v2 = wait_free(&m, v.f_bfree, v.f_ffree);
	ck_assert_msg(v2.f_bfree >= v.f_bfree, "f_bfree %llu after unlink, %llu before",
		      (unsigned long long)v2.f_bfree, (unsigned long long)v.f_bfree);
	ck_assert_uint_eq(v2.f_ffree, v.f_ffree);
	mnt_finish(&m);
}
END_TEST

/* ---- inode reuse under concurrency ------------------------------------------ */

#define RACE_THREADS 4
#define RACE_MS 6000u

struct race_thread {
	struct mnt *m;
	unsigned id;
	pthread_t thread;
	unsigned done; /* create/write/close/unlink cycles */
	int err;       /* first failure */
	char what[300];
};

static atomic_int race_stop;
static uint64_t race_deadline;

static void *race_loop(void *arg)
{
	struct race_thread *t = arg;
	char path[PATH_MAX];
	while (!atomic_load(&race_stop) && mnt_now_ms() < race_deadline) {
		snprintf(path, sizeof(path), "%s/race/t%u-%u", t->m->mountpoint, t->id, t->done);
		const char *step = "open(O_CREAT|O_EXCL)";
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd >= 0) {
			step = "write";
			if (write(fd, "x", 1) == 1) {
				step = "close";
				if (close(fd) == 0) {
					step = "unlink";
					if (unlink(path) == 0) {
						t->done++;
						continue;
					}
				}
			} else {
				close(fd);
			}
		}
		t->err = errno;
		snprintf(t->what, sizeof(t->what), "%s of %s", step, path + strlen(t->m->mountpoint));
		atomic_store(&race_stop, 1);
	}
	return NULL;
}

/* Unlinked inodes are evicted (and their numbers freed) when the kernel
 * forgets them, concurrently with creates that reuse the numbers. */
START_TEST(test_create_unlink_race)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	MNT_OK(mkdir(mnt_path(&m, "race"), 0755));
	struct race_thread t[RACE_THREADS];
	atomic_store(&race_stop, 0);
	race_deadline = mnt_now_ms() + RACE_MS;
	for (unsigned i = 0; i < RACE_THREADS; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].m = &m;
		t[i].id = i;
		ck_assert_int_eq(pthread_create(&t[i].thread, NULL, race_loop, &t[i]), 0);
	}
	unsigned total = 0;
	for (unsigned i = 0; i < RACE_THREADS; i++) {
		pthread_join(t[i].thread, NULL);
		total += t[i].done;
	}
	printf("create/unlink race: %u cycles in %u threads\n", total, RACE_THREADS);
	for (unsigned i = 0; i < RACE_THREADS; i++)
		ck_assert_msg(t[i].err == 0, "%s failed after %u cycles in all: %s", t[i].what,
			      total, strerror(t[i].err));
	ck_assert_uint_eq(count_names(mnt_path(&m, "race")), 0);
	mnt_finish(&m);
}
END_TEST

static Suite *ops_suite(void)
{
	Suite *s = suite_create("mounted_ops");
	TCase *tc = tcase_create("ops");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_lookup_getattr);
	tcase_add_test(tc, test_setattr_mode_owner);
	tcase_add_test(tc, test_setattr_truncate);
	tcase_add_test(tc, test_setattr_times);
	tcase_add_test(tc, test_mkdir_rmdir);
	tcase_add_test(tc, test_create_open);
	tcase_add_test(tc, test_read_write_small);
	tcase_add_test(tc, test_sparse_write_past_eof);
	tcase_add_test(tc, test_large_writes);
	tcase_add_test(tc, test_unlink);
	tcase_add_test(tc, test_unlink_open_at_lazy_unmount);
	tcase_add_test(tc, test_rename);
	tcase_add_test(tc, test_readdir_many);
	tcase_add_test(tc, test_fsync_family);
	tcase_add_test(tc, test_statfs);
	tcase_add_test(tc, test_create_unlink_race);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(ops_suite());
}
