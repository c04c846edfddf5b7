/*
 * test_mnt_atime.c - access times through the real daemon: relatime (the
 * mutt and tmp-cleaner cases), strictatime, noatime, nodiratime,
 * lazytime (visible at once, durable only with fsync or unmount: checked
 * by kill -9 before and after fsync) and the image's default mount
 * options (mkfs.ordfs -E mount_opts=) under the command line's.
 *
 * Times are set with utimensat instead of sleeping; every comparison is
 * in nanoseconds (ordfs keeps them).  A read here is open + read + close,
 * and each one that owes an atime reaches the daemon (the kernel drops
 * its cache at such an open: test_mnt_cache.c).
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "fs.h"
#include "blockdev/blockdev.h"

static bool ts_eq(struct timespec a, struct timespec b)
{
	return mnt_ts_cmp(a, b) == 0;
}

static void read_file(const char *path)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	MNT_OK(fd);
	MNT_OK(read(fd, buf, sizeof(buf)));
	close(fd);
}

static void list_dir(const char *path)
{
	DIR *d = opendir(path);
	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		;
	closedir(d);
}

/* Sets atime and mtime to now - ago_a / now - ago_m seconds. */
static void set_times_ago(const char *path, long ago_a, long ago_m)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct timespec ts[2] = { now, now };
	ts[0].tv_sec -= ago_a;
	ts[1].tv_sec -= ago_m;
	MNT_OK(utimensat(AT_FDCWD, path, ts, 0));
}

START_TEST(test_relatime_mutt_case)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL); /* relatime by default */
	const char *box = mnt_path(&m, "mbox");
	mnt_make_file(box, 0600, "From a@b\n\nnew mail\n");
	set_times_ago(box, 100, 100); /* atime == mtime: "new mail" */
	struct timespec before = mnt_atime_of(box);
	read_file(box);
	struct timespec after = mnt_atime_of(box);
	ck_assert_msg(mnt_ts_cmp(after, mnt_mtime_of(box)) > 0, "relatime: atime not past mtime after read");
	ck_assert(mnt_ts_cmp(after, before) > 0);
	read_file(box); /* nothing changed since: no write */
	ck_assert(ts_eq(mnt_atime_of(box), after));
	mnt_finish(&m);
}
END_TEST

START_TEST(test_relatime_tmp_cleaner_case)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "relatime");
	const char *f = mnt_path(&m, "old");
	mnt_make_file(f, 0644, "x");
	set_times_ago(f, 2 * 86400, 3 * 86400);
	read_file(f);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	ck_assert_msg(now.tv_sec - mnt_atime_of(f).tv_sec < 60, "a two-day-old atime was not refreshed");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_strictatime_every_read)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "strictatime");
	const char *f = mnt_path(&m, "f");
	mnt_make_file(f, 0644, "data");
	read_file(f);
	struct timespec first = mnt_atime_of(f);
	usleep(50 * 1000);
	read_file(f);
	struct timespec second = mnt_atime_of(f);
	ck_assert_msg(mnt_ts_cmp(second, first) > 0, "strictatime: the second read left atime");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_noatime_never)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "noatime");
	const char *f = mnt_path(&m, "f");
	mnt_make_file(f, 0644, "data");
	set_times_ago(f, 3 * 86400, 3 * 86400);
	struct timespec before = mnt_atime_of(f);
	read_file(f);
	list_dir(m.mountpoint);
	ck_assert(ts_eq(mnt_atime_of(f), before));
	mnt_finish(&m);
}
END_TEST

START_TEST(test_nodiratime)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "nodiratime");
	const char *d = mnt_path(&m, "dir");
	MNT_OK(mkdir(d, 0755));
	mnt_make_file(mnt_path(&m, "dir/f"), 0644, "data");
	set_times_ago(d, 100, 100);
	struct timespec dir_before = mnt_atime_of(d);
	list_dir(d);
	ck_assert_msg(ts_eq(mnt_atime_of(d), dir_before), "nodiratime: readdir changed the atime");
	const char *f = mnt_path(&m, "dir/f");
	set_times_ago(f, 100, 100);
	struct timespec file_before = mnt_atime_of(f);
	read_file(f); /* files still follow relatime */
	ck_assert(mnt_ts_cmp(mnt_atime_of(f), file_before) > 0);
	mnt_stop(&m);

	/* The control: without nodiratime, readdir updates (relatime). */
	mnt_start(&m, NULL);
	set_times_ago(d, 100, 100);
	dir_before = mnt_atime_of(d);
	list_dir(d);
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(d), dir_before) > 0, "relatime: readdir left the atime");
	mnt_finish(&m);
}
END_TEST

static void kill9_and_recover(struct mnt *m)
{
	mnt_kill9(m);
	mnt_start(m, "lazytime,commit=3600"); /* replays the journal */
}

START_TEST(test_lazytime)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "lazytime,commit=3600");
	const char *f = mnt_path(&m, "f");
	int fd = mnt_create_file(f, 0644, "lazy");
	MNT_OK(fsync(fd));
	close(fd);
	set_times_ago(f, 100, 100);
	int dfd = open(m.mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(dfd);
	MNT_OK(fsync(dfd)); /* the old times are durable */
	close(dfd);
	struct timespec old = mnt_atime_of(f);

	/* A read: the new atime is visible at once, but kept in memory. */
	read_file(f);
	struct timespec fresh = mnt_atime_of(f);
	ck_assert(mnt_ts_cmp(fresh, old) > 0);
	/* Another file's fsync commits the running transaction: a
	 * non-lazy atime would be in it, a lazy one is not. */
	int other = mnt_create_file(mnt_path(&m, "other"), 0644, "o");
	MNT_OK(fsync(other));
	close(other);
	kill9_and_recover(&m);
	mnt_expect_text(mnt_path(&m, "other"), "o");
	ck_assert_msg(ts_eq(mnt_atime_of(f), old), "lazytime: the atime reached the disk without fsync");

	/* Now with fsync: it is durable. */
	read_file(f);
	fresh = mnt_atime_of(f);
	ck_assert(mnt_ts_cmp(fresh, old) > 0);
	fd = open(f, O_RDONLY);
	MNT_OK(fd);
	MNT_OK(fsync(fd));
	close(fd);
	kill9_and_recover(&m);
	ck_assert_msg(ts_eq(mnt_atime_of(f), fresh), "lazytime: fsync did not write the atime");

	/* And with a clean unmount. */
	set_times_ago(f, 100, 100);
	read_file(f);
	fresh = mnt_atime_of(f);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_start(&m, NULL);
	ck_assert_msg(ts_eq(mnt_atime_of(f), fresh), "lazytime: unmount did not write the atime");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_image_default_mount_options)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	char *mkfs[] = { (char *)mnt_mkfs_bin(), "-q", "-F", "-E", "mount_opts=noatime", m.image,
			 "64M", NULL };
	struct mnt_run_result r;
	mnt_run(mkfs, NULL, &r);
	ck_assert_msg(r.status == 0, "mkfs -E mount_opts=noatime: %s", r.err);

	mnt_start(&m, NULL); /* the image says noatime */
	const char *f = mnt_path(&m, "f");
	mnt_make_file(f, 0644, "x");
	set_times_ago(f, 100, 100);
	struct timespec before = mnt_atime_of(f);
	read_file(f);
	ck_assert_msg(ts_eq(mnt_atime_of(f), before), "the image's noatime default was not applied");
	mnt_stop(&m);

	mnt_start(&m, "relatime"); /* the command line wins */
	read_file(f);
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(f), before) > 0, "-o relatime did not override the image");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_image_default_must_be_ordfs_options)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	/* mkfs.ordfs and tune.ordfs refuse to store it, so write it directly,
	 * as a hand-edited or foreign image might have it. */
	char *mkfs[] = { (char *)mnt_mkfs_bin(), "-q", "-F", "-E", "mount_opts=allow_other",
			 m.image, "64M", NULL };
	struct mnt_run_result r;
	mnt_run(mkfs, NULL, &r);
	ck_assert_int_ne(r.status, 0);
	ck_assert_msg(strstr(r.err, "allow_other") != NULL, "%s", r.err);
	struct blockdev *bd;
	struct ordfs_super sb;
	const char *why;
	ck_assert_int_eq(blockdev_file_open(m.image, 0, &bd), 0);
	ck_assert_int_eq(ordfs_read_super(bd, false, &sb, &why), 0);
	snprintf(sb.mount_opts, sizeof(sb.mount_opts), "allow_other");
	ck_assert_int_eq(ordfs_write_super(bd, &sb, true), 0);
	ck_assert_int_eq(blockdev_flush(bd), 0);
	blockdev_destroy(bd);
	char *ordfs[] = { (char *)mnt_ordfs_bin(), m.image, m.mountpoint, NULL };
	mnt_run(ordfs, NULL, &r);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "allow_other") != NULL, "%s", r.err);
	ck_assert(!mnt_is_live(m.mountpoint));
	mnt_check(&m);
	mnt_discard(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted atime");
	TCase *tc = tcase_create("atime");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_relatime_mutt_case);
	tcase_add_test(tc, test_relatime_tmp_cleaner_case);
	tcase_add_test(tc, test_strictatime_every_read);
	tcase_add_test(tc, test_noatime_never);
	tcase_add_test(tc, test_nodiratime);
	tcase_add_test(tc, test_lazytime);
	tcase_add_test(tc, test_image_default_mount_options);
	tcase_add_test(tc, test_image_default_must_be_ordfs_options);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
