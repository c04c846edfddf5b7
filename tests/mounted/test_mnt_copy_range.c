/*
 * test_mnt_copy_range.c - copy_file_range(2) inside one ordfs mount through
 * the real daemon: the bytes are copied in the image (the daemon's stats
 * count them as copied, not as written through FUSE), holes stay holes,
 * unaligned ranges and a copy past the source's EOF give the kernel's
 * answers, ranges overlapping in one file are EINVAL, flagged
 * destinations are refused, set-ID bits dropped as by a write, the
 * destination read back through the page
 * cache (writeback cache off and on) shows the copy, a copy made durable
 * by fsync survives kill -9 with fsck.ordfs -fn clean, and a copy across
 * two mounts never reaches a daemon as a copy.
 */
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

/* The bytes copied in the image since the mount, as the daemon counts
 * them (a kernel that fell back to read and write would leave it alone
 * and count written bytes instead). */
static uint64_t copied_so_far(struct mnt *m)
{
	struct ordfs_stats st;
	mnt_get_stats(m, &st);
	return st.copy_range_bytes;
}

/* copy_file_range with explicit offsets (NULL offsets would move the
 * files' positions). */
static ssize_t copy_range(int in, off_t off_in, int out, off_t off_out, size_t len)
{
	loff_t a = off_in, b = off_out;
	return copy_file_range(in, &a, out, &b, len, 0);
}

/* A file of size bytes, pattern seed written at the extents given as
 * [start, end) pairs (ending with a 0, 0 pair); the rest are holes. */
static void make_sparse(const char *path, uint64_t seed, uint64_t size, const uint64_t *ranges)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	MNT_OK(fd);
	MNT_OK(ftruncate(fd, (off_t)size));
	for (; ranges[0] != ranges[1]; ranges += 2) {
		size_t len = (size_t)(ranges[1] - ranges[0]);
		char *buf = malloc(len);
		ck_assert_ptr_nonnull(buf);
		mnt_pattern_fill(buf, len, seed, ranges[0]);
		mnt_pwrite_all(fd, buf, len, (off_t)ranges[0]);
		free(buf);
	}
	MNT_OK(close(fd));
}

/* The whole file, read through a new descriptor (the page cache). */
static char *read_file(const char *path, size_t *len)
{
	char *bytes = mnt_slurp(path, len);
	ck_assert_msg(bytes != NULL, "cannot read %s", path);
	return bytes;
}

static void expect_same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = read_file(a, &la), *y = read_file(b, &lb);
	ck_assert_uint_eq(la, lb);
	ck_assert_msg(memcmp(x, y, la) == 0, "%s and %s differ", a, b);
	free(x);
	free(y);
}

static blkcnt_t blocks_of(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return st.st_blocks;
}

/* ---- holes, unaligned ranges, EOF, and where the bytes went ---------- */

START_TEST(test_copy_keeps_holes_and_stops_at_eof)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *src = mnt_path(&m, "src");
	const uint64_t data[] = { 0, 64 * KIB, 512 * KIB, 1 * MIB + 1000, 0, 0 };
	make_sparse(src, 7, 3 * MIB, data); /* a hole from 1 MiB + 1000 to 3 MiB too */

	struct ordfs_stats before, after;
	mnt_get_stats(&m, &before);
	int in = open(src, O_RDONLY);
	int out = open(mnt_path(&m, "dst"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	MNT_OK(in);
	MNT_OK(out);
	/* Past the source's EOF: the count stops there. */
	ck_assert_int_eq(copy_range(in, 0, out, 0, 8 * MIB), 3 * MIB);
	ck_assert_int_eq(copy_range(in, 3 * MIB, out, 0, MIB), 0);
	ck_assert_int_eq(copy_range(in, 3 * MIB - 10, out, 3 * MIB - 10, MIB), 10);
	MNT_OK(fsync(out));
	mnt_get_stats(&m, &after);
	MNT_OK(close(in));
	MNT_OK(close(out));

	/* The bytes were copied in the image, none written through FUSE. */
	ck_assert_uint_eq(after.write_bytes, before.write_bytes);
	ck_assert_uint_eq(after.copy_range_bytes - before.copy_range_bytes, 3 * MIB + 10);
	expect_same_file(src, mnt_path(&m, "dst"));
	/* The holes are holes in the copy: it has the source's blocks. */
	ck_assert_int_eq(blocks_of(mnt_path(&m, "dst")), blocks_of(src));
	ck_assert_int_lt(blocks_of(src), (blkcnt_t)(2 * MIB / 512));
	int fd = open(mnt_path(&m, "dst"), O_RDONLY);
	MNT_OK(fd);
	ck_assert_int_eq(lseek(fd, 64 * KIB, SEEK_HOLE), 64 * KIB);
	ck_assert_int_eq(lseek(fd, 64 * KIB, SEEK_DATA), 512 * KIB);
	MNT_OK(close(fd));
	mnt_finish(&m);
}
END_TEST

START_TEST(test_copy_unaligned_ranges_into_a_file_with_data)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *src = mnt_path(&m, "src");
	const char *dstp = mnt_path(&m, "dst");
	const uint64_t data[] = { 0, 200 * KIB, 300 * KIB, 700 * KIB, 0, 0 };
	make_sparse(src, 3, 800 * KIB, data);
	mnt_write_pattern(dstp, 600 * KIB, 9, 0644);

	/* Expected: dst's pattern, with src[1000, 1000 + 500 KiB) at 5001
	 * (a hole in the source over dst's data is zeros), growing dst. */
	const size_t len = 500 * KIB, at_in = 1000, at_out = 5001;
	size_t size = at_out + len; /* 517 KiB + 5001 < 600 KiB: no growth */
	size = size < 600 * KIB ? 600 * KIB : size;
	char *want = malloc(size);
	ck_assert_ptr_nonnull(want);
	mnt_pattern_fill(want, size, 9, 0);
	for (size_t i = 0; i < len; i++) {
		uint64_t p = at_in + i;
		bool has = p < 200 * KIB || (p >= 300 * KIB && p < 700 * KIB);
		want[at_out + i] = has ? (char)mnt_pattern_byte(3, p) : 0;
	}
	struct timespec mtime = mnt_mtime_of(dstp);
	usleep(20 * 1000);
	int in = open(src, O_RDONLY), out = open(dstp, O_WRONLY);
	MNT_OK(in);
	MNT_OK(out);
	ck_assert_int_eq(copy_range(in, at_in, out, at_out, len), len);
	/* And a copy that grows it, starting past its EOF. */
	ck_assert_int_eq(copy_range(in, 777, out, 900 * KIB + 3, 100 * KIB), 100 * KIB);
	MNT_OK(close(in));
	MNT_OK(close(out));
	ck_assert_uint_eq(copied_so_far(&m), len + 100 * KIB);
	ck_assert_int_gt(mnt_ts_cmp(mnt_mtime_of(dstp), mtime), 0);

	size_t got_len;
	char *got = read_file(dstp, &got_len);
	ck_assert_uint_eq(got_len, 1000 * KIB + 3);
	ck_assert_msg(memcmp(got, want, size) == 0, "the unaligned copy differs");
	for (size_t i = size; i < 900 * KIB + 3; i++)
		ck_assert_msg(got[i] == 0, "byte %zu of the gap is %d", i, got[i]);
	for (size_t i = 0; i < 100 * KIB; i++) {
		uint64_t p = 777 + i;
		char w = p < 200 * KIB ? (char)mnt_pattern_byte(3, p) : 0;
		ck_assert_msg(got[900 * KIB + 3 + i] == w, "byte %zu of the grown part", i);
	}
	free(got);
	free(want);
	mnt_finish(&m);
}
END_TEST

/* ---- one file: overlap refused, disjoint ranges copied --------------- */

START_TEST(test_copy_within_one_file)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *path = mnt_path(&m, "f");
	mnt_write_pattern(path, 256 * KIB, 5, 0644);
	int fd = open(path, O_RDWR);
	MNT_OK(fd);
	/* Overlapping ranges: the kernel says EINVAL, nothing changes. */
	MNT_FAILS(copy_range(fd, 0, fd, 4096, 8192), EINVAL);
	MNT_FAILS(copy_range(fd, 10000, fd, 5000, 8192), EINVAL);
	mnt_expect_pattern(path, 256 * KIB, 5);
	/* Disjoint: copied, also unaligned and growing the file. */
	ck_assert_int_eq(copy_range(fd, 100, fd, 200 * KIB + 7, 100 * KIB), 100 * KIB);
	MNT_OK(close(fd));
	ck_assert_uint_eq(copied_so_far(&m), 100 * KIB);
	size_t len;
	char *got = read_file(path, &len);
	ck_assert_uint_eq(len, 300 * KIB + 7);
	ck_assert_uint_eq(mnt_pattern_mismatch(got, 200 * KIB + 7, 5, 0), 200 * KIB + 7);
	ck_assert_uint_eq(mnt_pattern_mismatch(got + 200 * KIB + 7, 100 * KIB, 5, 100),
			  100 * KIB);
	free(got);
	mnt_finish(&m);
}
END_TEST

/* ---- flags ------------------------------------------------------------ */

static void set_flags(const char *path, unsigned flags)
{
	int fd = open(path, O_RDONLY);
	MNT_OK(fd);
	MNT_OK(ioctl(fd, FS_IOC_SETFLAGS, &flags));
	MNT_OK(close(fd));
}

START_TEST(test_copy_into_flagged_files_is_refused)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *src = mnt_path(&m, "src");
	const char *imm = mnt_path(&m, "immutable");
	const char *app = mnt_path(&m, "append");
	mnt_write_pattern(src, 64 * KIB, 1, 0644);
	mnt_write_pattern(imm, 16 * KIB, 2, 0644);
	mnt_write_pattern(app, 16 * KIB, 3, 0644);
	int in = open(src, O_RDONLY);
	MNT_OK(in);
	/* Opened for writing before the flag came. */
	int out_imm = open(imm, O_WRONLY);
	int out_app = open(app, O_WRONLY);
	MNT_OK(out_imm);
	MNT_OK(out_app);
	set_flags(imm, FS_IMMUTABLE_FL);
	set_flags(app, FS_APPEND_FL);
	MNT_FAILS(copy_range(in, 0, out_imm, 0, 8192), EPERM);
	MNT_FAILS(copy_range(in, 0, out_app, 0, 8192), EPERM);
	MNT_FAILS(copy_range(in, 0, out_app, 16 * KIB, 8192), EPERM);
	/* An O_APPEND destination: the kernel's EBADF. */
	int out_append = open(app, O_WRONLY | O_APPEND);
	MNT_OK(out_append);
	MNT_FAILS(copy_range(in, 0, out_append, 16 * KIB, 8192), EBADF);
	MNT_OK(close(out_append));
	MNT_OK(close(out_imm));
	MNT_OK(close(out_app));
	MNT_OK(close(in));
	mnt_expect_pattern(imm, 16 * KIB, 2);
	mnt_expect_pattern(app, 16 * KIB, 3);
	ck_assert_uint_eq(copied_so_far(&m), 0);
	set_flags(imm, 0);
	set_flags(app, 0);
	mnt_finish(&m);
}
END_TEST

/* ---- set-ID bits ------------------------------------------------------- */

/* A copy into a file by a user without CAP_FSETID, not in the file's
 * group, drops set-user-ID and set-group-ID (also without group execute:
 * setattr_should_drop_sgid), as a write does; root keeps them. */
START_TEST(test_copy_drops_set_id_bits_as_a_write)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "allow_other"); /* uid 2000 copies below */
	const char *src = mnt_path(&m, "src");
	const char *o = mnt_path(&m, "other");
	const char *r = mnt_path(&m, "root");
	mnt_write_pattern(src, 64 * KIB, 1, 0644);
	mnt_write_pattern(o, 4 * KIB, 2, 0666);
	mnt_write_pattern(r, 4 * KIB, 2, 0666);
	MNT_OK(chown(o, 1000, 1000));
	MNT_OK(chmod(o, 06666));
	MNT_OK(chmod(r, 06666));
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		/* open as root (the test directory is 0700), copy as 2000 */
		int in = open(src, O_RDONLY | O_CLOEXEC), out = open(o, O_WRONLY | O_CLOEXEC);
		if (in < 0 || out < 0)
			_exit(2);
		if (setgroups(0, NULL) || setresgid(2000, 2000, 2000) ||
		    setresuid(2000, 2000, 2000))
			_exit(3);
		if (copy_range(in, 0, out, 0, 8 * KIB) != 8 * KIB)
			_exit(100 + errno);
		_exit(0);
	}
	int status;
	ck_assert(waitpid(pid, &status, 0) == pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "copier: status 0x%x",
		      status);
	int in = open(src, O_RDONLY), out = open(r, O_WRONLY);
	MNT_OK(in);
	MNT_OK(out);
	ck_assert_int_eq(copy_range(in, 0, out, 0, 8 * KIB), 8 * KIB);
	MNT_OK(close(in));
	MNT_OK(close(out));
	struct stat st;
	MNT_OK(stat(o, &st));
	ck_assert_msg((st.st_mode & 07777) == 0666, "mode 0%o after a copy by uid 2000",
		      st.st_mode & 07777);
	MNT_OK(stat(r, &st));
	ck_assert_msg((st.st_mode & 07777) == 06666, "mode 0%o after a copy by root",
		      st.st_mode & 07777);
	ck_assert_uint_eq(copied_so_far(&m), 16 * KIB);
	mnt_finish(&m);
}
END_TEST

/* ---- the kernel's page cache ------------------------------------------ */

/* The destination's pages are cached (read, and mapped) before the copy;
 * after it a read and the mapping show the copied bytes.  With the
 * writeback cache the source's newest bytes are still in the kernel when
 * the copy starts. */
static void copy_over_cached_pages(const char *opts)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, opts);
	const char *src = mnt_path(&m, "src");
	const char *dstp = mnt_path(&m, "dst");
	mnt_write_pattern(dstp, 256 * KIB, 4, 0644);
	int in = open(src, O_RDWR | O_CREAT | O_TRUNC, 0644);
	MNT_OK(in);
	char *buf = malloc(256 * KIB);
	ck_assert_ptr_nonnull(buf);
	mnt_pattern_fill(buf, 256 * KIB, 6, 0);
	mnt_pwrite_all(in, buf, 256 * KIB, 0); /* no fsync: maybe only in the kernel */

	int out = open(dstp, O_RDWR);
	MNT_OK(out);
	ck_assert_uint_eq(mnt_read_full(out, buf, 256 * KIB), 256 * KIB); /* cached now */
	char *map = mmap(NULL, 256 * KIB, PROT_READ, MAP_SHARED, out, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq((unsigned char)map[100 * KIB], mnt_pattern_byte(4, 100 * KIB));

	ck_assert_int_eq(copy_range(in, 0, out, 0, 256 * KIB), 256 * KIB);
	ck_assert_uint_eq(copied_so_far(&m), 256 * KIB); /* behind the kernel's back */
	ck_assert_uint_eq(mnt_pattern_mismatch(map, 256 * KIB, 6, 0), 256 * KIB);
	ck_assert_int_eq(pread(out, buf, 256 * KIB, 0), 256 * KIB);
	ck_assert_uint_eq(mnt_pattern_mismatch(buf, 256 * KIB, 6, 0), 256 * KIB);
	MNT_OK(munmap(map, 256 * KIB));
	MNT_OK(close(out));
	MNT_OK(close(in));
	mnt_expect_pattern(dstp, 256 * KIB, 6);
	free(buf);
	mnt_finish(&m);
}

START_TEST(test_copy_over_cached_pages)
{
	copy_over_cached_pages(NULL);
}
END_TEST

START_TEST(test_copy_over_cached_pages_writeback_cache)
{
	copy_over_cached_pages("writeback_cache");
}
END_TEST

/* ---- crash ------------------------------------------------------------ */

/* A 4 MiB copy, fsync'd, then kill -9: fsck.ordfs -fn finds nothing, and
 * the next mount has the copy. */
static void copy_fsync_kill9(const char *opts)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, opts);
	const char *src = mnt_path(&m, "src");
	mnt_write_pattern(src, 4 * MIB + 123, 8, 0644);
	int in = open(src, O_RDONLY);
	int out = open(mnt_path(&m, "dst"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	MNT_OK(in);
	MNT_OK(out);
	ck_assert_int_eq(copy_range(in, 0, out, 0, 8 * MIB), 4 * MIB + 123);
	MNT_OK(fsync(out));
	MNT_OK(close(in));
	MNT_OK(close(out));
	ck_assert_uint_eq(copied_so_far(&m), 4 * MIB + 123);
	mnt_kill9(&m);

	char *argv[] = { getenv("FSCK_BIN"), "-fn", m.image, NULL };
	ck_assert(argv[0]);
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0, "fsck.ordfs -fn after kill -9: exit %d: %s", r.status, r.err);
	mnt_start(&m, opts);
	mnt_expect_pattern(mnt_path(&m, "dst"), 4 * MIB + 123, 8);
	mnt_finish(&m);
}

START_TEST(test_copy_fsync_kill9_ordered)
{
	copy_fsync_kill9(NULL);
}
END_TEST

START_TEST(test_copy_fsync_kill9_journal)
{
	copy_fsync_kill9("data=journal");
}
END_TEST

/* ---- two mounts --------------------------------------------------------- */

/* Across two ordfs mounts the kernel never hands one daemon the other's
 * file (FUSE answers EXDEV itself and copies through read and write):
 * the data arrives, and neither daemon counts a copy in its image. */
START_TEST(test_copy_across_two_mounts_goes_through_the_kernel)
{
	struct mnt a, b;
	mnt_setup(&a, "64M");
	mnt_setup(&b, "64M");
	mnt_start(&a, NULL);
	mnt_start(&b, NULL);
	mnt_write_pattern(mnt_path(&a, "src"), 300 * KIB, 4, 0644);
	struct ordfs_stats before;
	mnt_get_stats(&b, &before);
	int in = open(mnt_path(&a, "src"), O_RDONLY);
	int out = open(mnt_path(&b, "dst"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	MNT_OK(in);
	MNT_OK(out);
	ssize_t n = copy_range(in, 0, out, 0, 300 * KIB);
	int e = errno;
	MNT_OK(close(in));
	MNT_OK(close(out));
	/* The kernel refuses (EXDEV) or copies through read and write itself. */
	if (n == -1) {
		ck_assert_int_eq(e, EXDEV);
	} else {
		ck_assert_int_eq(n, 300 * KIB);
		mnt_expect_pattern(mnt_path(&b, "dst"), 300 * KIB, 4);
		struct ordfs_stats after;
		mnt_get_stats(&b, &after);
		ck_assert_uint_ge(after.write_bytes - before.write_bytes, 300 * KIB);
	}
	ck_assert_uint_eq(copied_so_far(&a), 0);
	ck_assert_uint_eq(copied_so_far(&b), 0);
	mnt_finish(&b);
	mnt_finish(&a);
}
END_TEST

/* ---- the switch the benchmark uses ------------------------------------ */

/* ORDFS_NO_COPY_FILE_RANGE=1: the kernel copies through read and write,
 * which the stats see as bytes written and nothing copied. */
START_TEST(test_copy_without_the_op_goes_through_fuse)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start_env(&m, NULL, "ORDFS_NO_COPY_FILE_RANGE=1");
	const char *src = mnt_path(&m, "src");
	mnt_write_pattern(src, MIB, 2, 0644);
	struct ordfs_stats before, after;
	mnt_get_stats(&m, &before);
	int in = open(src, O_RDONLY);
	int out = open(mnt_path(&m, "dst"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	MNT_OK(in);
	MNT_OK(out);
	ck_assert_int_eq(copy_range(in, 0, out, 0, MIB), MIB);
	MNT_OK(close(in));
	MNT_OK(close(out));
	mnt_get_stats(&m, &after);
	mnt_expect_pattern(mnt_path(&m, "dst"), MIB, 2);
	ck_assert_uint_eq(after.copy_range_bytes, 0);
	ck_assert_uint_ge(after.write_bytes - before.write_bytes, MIB);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted copy_file_range");
	TCase *tc = tcase_create("copy_range");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_copy_keeps_holes_and_stops_at_eof);
	tcase_add_test(tc, test_copy_unaligned_ranges_into_a_file_with_data);
	tcase_add_test(tc, test_copy_within_one_file);
	tcase_add_test(tc, test_copy_into_flagged_files_is_refused);
	tcase_add_test(tc, test_copy_drops_set_id_bits_as_a_write);
	tcase_add_test(tc, test_copy_over_cached_pages);
	tcase_add_test(tc, test_copy_over_cached_pages_writeback_cache);
	tcase_add_test(tc, test_copy_fsync_kill9_ordered);
	tcase_add_test(tc, test_copy_fsync_kill9_journal);
	tcase_add_test(tc, test_copy_across_two_mounts_goes_through_the_kernel);
	tcase_add_test(tc, test_copy_without_the_op_goes_through_fuse);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
