/*
 * test_mnt_wbcache.c - -o writeback_cache (the kernel holds written pages
 * and sends them later), through the real daemon: what the option keeps
 * and the one thing it gives up.
 *
 * Kept: a file fsync'd before kill -9 of the daemon is there exactly (the
 * kernel sends the file's pages before FSYNC); replace-via-rename after
 * close leaves the new bytes under the name once the rename is committed
 * (close sends the pages: the daemon orders them before the rename); the
 * mutt case (a read after a writer closed still moves atime, and a page
 * the kernel reads to complete a delivery's partial write does not).  Given up:
 * a write past the free space succeeds in write(2) and fails later, so
 * fsync reports ENOSPC (once); the image stays consistent.  design/caches.md,
 * "Writes through the kernel".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define BYTES (1u << 20)

START_TEST(test_fsynced_file_survives_kill9)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "writeback_cache");
	const char *f = mnt_path(&m, "f");
	int fd = open(f, O_CREAT | O_WRONLY, 0644);
	MNT_OK(fd);
	char *buf = malloc(BYTES);
	mnt_pattern_fill(buf, BYTES, 11, 0);
	mnt_write_all(fd, buf, BYTES);
	MNT_OK(fsync(fd));
	/* More, not fsync'd: the kernel may still hold it when the daemon dies. */
	const char *g = mnt_path(&m, "g");
	int gd = open(g, O_CREAT | O_WRONLY, 0644);
	MNT_OK(gd);
	mnt_write_all(gd, buf, BYTES);
	mnt_kill9(&m);
	close(fd);
	close(gd);
	free(buf);
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "f"), BYTES, 11);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_replace_via_rename_after_close)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "writeback_cache");
	const char *target = mnt_path(&m, "config");
	mnt_write_pattern(target, BYTES, 1, 0644);
	int fd = open(target, O_RDONLY);
	MNT_OK(fd);
	MNT_OK(fsync(fd));
	close(fd);
	const char *tmp = mnt_path(&m, "config.tmp");
	mnt_write_pattern(tmp, BYTES, 2, 0644); /* written and closed, no fsync */
	char from[4096], to[4096];
	snprintf(from, sizeof(from), "%s", tmp);
	snprintf(to, sizeof(to), "%s", target);
	MNT_OK(rename(from, to));
	/* fsync of the directory commits the rename, the data ordered before
	 * it (close sent the pages to the daemon). */
	int dfd = open(mnt_path(&m, "."), O_RDONLY | O_DIRECTORY);
	MNT_OK(dfd);
	MNT_OK(fsync(dfd));
	close(dfd);
	mnt_kill9(&m);
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "config"), BYTES, 2);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_mutt_case)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "writeback_cache");
	const char *box = mnt_path(&m, "mbox");
	mnt_write_pattern(box, 65536, 5, 0644);
	char buf[4096];
	int fd = open(box, O_RDONLY);
	MNT_OK(fd);
	ck_assert_uint_eq(mnt_read_full(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
	mnt_expect_mutt_case(box);
	mnt_finish(&m);
}
END_TEST

/* Two deliveries with no read between: at the second one's open the kernel
 * drops the file's pages (atime is not past mtime), so its append makes the
 * kernel read the last page through the write-only open.  That read is not
 * an access: atime must stay behind mtime ("new mail"). */
static void deliver(const char *box)
{
	usleep(20 * 1000);
	int fd = open(box, O_WRONLY | O_APPEND);
	MNT_OK(fd);
	mnt_write_all(fd, "From x@y\n\nnew\n", 14);
	close(fd);
}

START_TEST(test_two_deliveries_keep_new_mail)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "writeback_cache");
	const char *box = mnt_path(&m, "mbox");
	mnt_write_pattern(box, 65536 + 100, 5, 0644);
	char buf[4096];
	int fd = open(box, O_RDONLY);
	MNT_OK(fd);
	ck_assert_uint_eq(mnt_read_full(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
	deliver(box);
	deliver(box);
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(box), mnt_mtime_of(box)) <= 0,
		      "a delivery moved atime past mtime: the new mail looks read");
	mnt_expect_mutt_case(box);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_enospc_reported_at_fsync)
{
	struct mnt m;
	mnt_setup(&m, "16M");
	mnt_start(&m, "writeback_cache");
	const char *f = mnt_path(&m, "f");
	int fd = open(f, O_CREAT | O_WRONLY, 0644);
	MNT_OK(fd);
	char *buf = malloc(BYTES);
	memset(buf, 'x', BYTES);
	int write_errno = 0;
	for (int i = 0; i < 32 && !write_errno; i++)
		if (write(fd, buf, BYTES) < 0)
			write_errno = errno;
	free(buf);
	int r = fsync(fd);
	int fsync_errno = r ? errno : 0;
	/* 32 MiB cannot fit: write(2) or, with the kernel holding the pages,
	 * fsync says so. */
	ck_assert_msg(write_errno == ENOSPC || fsync_errno == ENOSPC,
		      "32 MiB into a 16 MiB image: write %d, fsync %d", write_errno, fsync_errno);
	ck_assert_int_eq(fsync(fd), 0); /* reported once */
	close(fd);
	mnt_finish(&m); /* the checker finds a consistent image */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted writeback_cache");
	TCase *tc = tcase_create("wbcache");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fsynced_file_survives_kill9);
	tcase_add_test(tc, test_replace_via_rename_after_close);
	tcase_add_test(tc, test_mutt_case);
	tcase_add_test(tc, test_two_deliveries_keep_new_mail);
	tcase_add_test(tc, test_enospc_reported_at_fsync);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
