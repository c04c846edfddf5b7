/*
 * test_mnt_collapse_insert.c - FALLOC_FL_COLLAPSE_RANGE and
 * FALLOC_FL_INSERT_RANGE through the kernel and the real daemon.
 *
 * The kernel's FUSE client (fs/fuse/file.c, fuse_file_fallocate, up to at
 * least Linux 6.18) passes only KEEP_SIZE, PUNCH_HOLE and ZERO_RANGE to a
 * daemon and answers every other mode EOPNOTSUPP itself; the daemon never
 * hears of a collapse or an insert (design/write-routes.md, "Collapse and
 * insert range").  So what this test can see depends on the
 * kernel:
 *  - a kernel that refuses: fallocate(2) fails with EOPNOTSUPP and the
 *    file, read through a descriptor that has it in the page cache and
 *    through a new open, and after kill -9 and a remount, is unchanged;
 *  - a kernel that passes the modes: the file, read the same ways, has the
 *    new shape byte for byte, and keeps it across kill -9 after fsync.
 * Either way the image is checked (fsck) at the end.  The rules and the
 * crash atomicity themselves are tested without the kernel in
 * tests/unit/test_shift_range.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define BS 4096u
#define SIZE (64 * BS + 777)

/* The file, read through fd (pages the kernel may have cached) and through
 * a new open of path, is exactly want[0, size). */
static void expect_bytes(int fd, const char *path, const char *want, size_t size)
{
	char *got = malloc(size + 1);
	ck_assert_int_eq(pread(fd, got, size + 1, 0), (ssize_t)size);
	ck_assert_msg(memcmp(got, want, size) == 0, "through the open descriptor");
	ck_assert(mnt_file_equals(path, want, size));
	free(got);
}

static void shift_case(int mode, off_t off, off_t len)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *path = mnt_path(&m, "f");
	char *old = malloc(SIZE), *now = calloc(1, SIZE + len);
	mnt_pattern_fill(old, SIZE, 7, 0);
	int fd = open(path, O_CREAT | O_RDWR, 0644);
	MNT_OK(fd);
	mnt_write_all(fd, old, SIZE);
	MNT_OK(fsync(fd));
	expect_bytes(fd, path, old, SIZE); /* now in the kernel's page cache */

	size_t size;
	if (mode == FALLOC_FL_COLLAPSE_RANGE) {
		memcpy(now, old, (size_t)off);
		memcpy(now + off, old + off + len, SIZE - (size_t)(off + len));
		size = SIZE - (size_t)len;
	} else {
		memcpy(now, old, (size_t)off);
		memcpy(now + off + len, old + off, SIZE - (size_t)off);
		size = SIZE + (size_t)len;
	}
	int ret = fallocate(fd, mode, off, len);
	bool refused = ret != 0;
	if (refused) {
		ck_assert_int_eq(errno, EOPNOTSUPP);
		fprintf(stderr, "NOTE: the kernel refuses fallocate mode %#x before the daemon\n",
			mode);
		memcpy(now, old, SIZE);
		size = SIZE;
	}
	expect_bytes(fd, path, now, size);
	MNT_OK(fsync(fd));
	mnt_kill9(&m);
	close(fd);
	mnt_start(&m, NULL);
	ck_assert(mnt_file_equals(mnt_path(&m, "f"), now, size));
	free(old);
	free(now);
	mnt_finish(&m); /* fsck of the image */
}

START_TEST(test_collapse_through_kernel)
{
	shift_case(FALLOC_FL_COLLAPSE_RANGE, 8 * BS, 20 * BS);
}
END_TEST

START_TEST(test_insert_through_kernel)
{
	shift_case(FALLOC_FL_INSERT_RANGE, 8 * BS, 20 * BS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mnt_collapse_insert");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_collapse_through_kernel);
	tcase_add_test(tc, test_insert_through_kernel);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
