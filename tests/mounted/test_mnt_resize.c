/*
 * test_mnt_resize.c - resize.ordfs on real images with the real daemon:
 * an image file grown offline (truncate, resize.ordfs, fsck.ordfs -f
 * clean, df shows the new size, nearly all the new free space written,
 * kill -9 of the daemon after that and fsck clean at the new size), and
 * every refusal (smaller, larger than the file, past the bitmap, unknown
 * option, mounted, journal needing recovery) one line with the image
 * unchanged byte for byte.
 */
#include <check.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define BS 4096ull

static uint64_t hash_file(const char *path)
{
	size_t len;
	char *bytes = mnt_slurp(path, &len);
	ck_assert_ptr_nonnull(bytes);
	uint64_t h = 1469598103934665603ull ^ len;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)bytes[i]) * 1099511628211ull;
	free(bytes);
	return h;
}

static void truncate_to(struct mnt *m, uint64_t bytes)
{
	MNT_OK(truncate(m->image, (off_t)bytes));
}

/* resize.ordfs ARGS... (NULL-ended after the image) */
static void resize_run(struct mnt *m, const char *a1, const char *a2,
		       struct mnt_run_result *r)
{
	const char *bin = getenv("RESIZE_BIN");
	ck_assert_msg(bin, "RESIZE_BIN is not set");
	char *argv[] = { (char *)bin, (char *)a1, (char *)a2, NULL, NULL };
	if (!a1)
		argv[1] = m->image;
	mnt_run(argv, NULL, r);
}

static int fsck_run(struct mnt *m, const char *args)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' %s '%s' >&2", getenv("FSCK_BIN"), args, m->image);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	if (r.status)
		fprintf(stderr, "fsck.ordfs %s: %.*s\n", args, (int)r.err_len, r.err);
	return r.status;
}

START_TEST(test_offline_grow_of_an_image_file)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	mnt_write_pattern(mnt_path(&m, "keep"), 3 << 20, 7, 0644);
	struct statvfs before;
	MNT_OK(statvfs(m.mountpoint, &before));
	mnt_stop(&m);

	truncate_to(&m, 120ull << 20);
	struct mnt_run_result r;
	resize_run(&m, m.image, NULL, &r);
	ck_assert_msg(r.status == 0, "resize.ordfs: %.*s", (int)r.err_len, r.err);
	ck_assert_int_eq(fsck_run(&m, "-f -n"), 0);

	mnt_start(&m, NULL);
	struct statvfs after;
	MNT_OK(statvfs(m.mountpoint, &after));
	/* df: the filesystem is 120M now, and the 56M added are free */
	ck_assert_uint_eq((uint64_t)after.f_blocks * after.f_frsize -
				  (uint64_t)before.f_blocks * before.f_frsize, 56ull << 20);
	ck_assert_uint_eq((uint64_t)(after.f_bfree - before.f_bfree) * after.f_frsize,
			  56ull << 20);
	/* nearly all of the free space in one file: more than the old size */
	uint64_t len = ((uint64_t)after.f_bavail - 64) * after.f_frsize;
	ck_assert_uint_gt(len, 64ull << 20);
	int fd = open(mnt_path(&m, "fill"), O_CREAT | O_WRONLY, 0644);
	MNT_OK(fd);
	char *buf = malloc(1 << 20);
	memset(buf, 0x5a, 1 << 20);
	for (uint64_t off = 0; off < len; off += 1 << 20) {
		size_t n = len - off < (1u << 20) ? (size_t)(len - off) : (1u << 20);
		mnt_pwrite_all(fd, buf, n, (off_t)off);
	}
	free(buf);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	mnt_expect_pattern(mnt_path(&m, "keep"), 3 << 20, 7);
	/* kill -9 after the grown filesystem's fill: fsck clean, new size */
	mnt_kill9(&m);
	int st_y = fsck_run(&m, "-f -y"); /* 1: the journal was replayed */
	ck_assert_msg(st_y == 0 || st_y == 1, "fsck.ordfs -f -y: status %d", st_y);
	ck_assert_int_eq(fsck_run(&m, "-f -n"), 0);
	mnt_start(&m, NULL);
	struct stat st;
	MNT_OK(stat(mnt_path(&m, "fill"), &st));
	ck_assert_uint_eq((uint64_t)st.st_size, len);
	mnt_expect_pattern(mnt_path(&m, "keep"), 3 << 20, 7);
	MNT_OK(statvfs(m.mountpoint, &after));
	ck_assert_uint_eq((uint64_t)after.f_blocks * after.f_frsize, 120ull << 20);
	mnt_finish(&m);
}
END_TEST

/* A refused run: exit 1, one line naming the reason, image unchanged. */
static void expect_refused_in(struct mnt *m, const char *a1, const char *a2, const char *words,
			      bool compare_bytes)
{
	uint64_t h = compare_bytes ? hash_file(m->image) : 0;
	struct mnt_run_result r;
	resize_run(m, a1, a2, &r);
	ck_assert_msg(r.status == 1, "resize.ordfs %s %s: status %d", a1 ? a1 : "",
		      a2 ? a2 : "", r.status);
	ck_assert_msg(r.lines == 1, "not one line: %.*s", (int)r.err_len, r.err);
	ck_assert_msg(strstr(r.err, words), "'%s' not in: %.*s", words, (int)r.err_len, r.err);
	if (compare_bytes)
		ck_assert_msg(hash_file(m->image) == h, "the image changed: %.*s",
			      (int)r.err_len, r.err);
}

static void expect_refused(struct mnt *m, const char *a1, const char *a2, const char *words)
{
	expect_refused_in(m, a1, a2, words, true);
}

START_TEST(test_refusals_leave_the_image_unchanged)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	truncate_to(&m, 140ull << 20); /* the bitmap reaches 127.25M */
	expect_refused(&m, m.image, "32M", "smaller than the filesystem");
	expect_refused(&m, m.image, "1G", "larger than the device");
	expect_refused(&m, m.image, "130M", "more block-bitmap blocks");
	expect_refused(&m, m.image, NULL, "more block-bitmap blocks");
	expect_refused(&m, m.image, "12Q", "invalid size");
	expect_refused(&m, "-x", m.image, "unknown option");

	/* mounted: the daemon writes the image, so the size is compared */
	mnt_start(&m, NULL);
	struct statvfs before, after;
	MNT_OK(statvfs(m.mountpoint, &before));
	expect_refused_in(&m, m.image, "100M", "in use", false);
	MNT_OK(statvfs(m.mountpoint, &after));
	ck_assert_uint_eq(after.f_blocks, before.f_blocks);
	mnt_kill9(&m);
	expect_refused(&m, m.image, "100M", "run fsck.ordfs first");
	int st_y = fsck_run(&m, "-y");
	ck_assert_msg(st_y == 0 || st_y == 1, "fsck.ordfs -y: status %d", st_y);
	/* after fsck, the grow goes */
	struct mnt_run_result r;
	resize_run(&m, m.image, "100M", &r);
	ck_assert_msg(r.status == 0, "resize.ordfs: %.*s", (int)r.err_len, r.err);
	ck_assert_int_eq(fsck_run(&m, "-f -n"), 0);
	mnt_finish(&m);
}
END_TEST

static Suite *resize_suite(void)
{
	Suite *s = suite_create("mnt_resize");
	TCase *tc = tcase_create("resize");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_offline_grow_of_an_image_file);
	tcase_add_test(tc, test_refusals_leave_the_image_unchanged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(resize_suite());
}
