/*
 * test_mnt_resize.c - resize.ordfs on real images with the real daemon:
 * an image file grown offline (truncate, resize.ordfs, fsck.ordfs -f
 * clean, df shows the new size, nearly all the new free space written,
 * kill -9 of the daemon after that and fsck clean at the new size); the
 * same grown online, in two steps (to SIZE, then to the whole file,
 * named by the mount point) with a file open across them; kill -9 of the
 * daemon at moments during an online grow, fsck clean at the old or the
 * new size; and every refusal (smaller, larger than the file, past the
 * bitmap, unknown option, journal needing recovery, and mounted: smaller,
 * larger) one line with the image unchanged.
 */
#include <check.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
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

/* Fills len bytes of "fill" (fsync'd), kill -9 of the daemon, fsck.ordfs
 * -f -y and -f -n clean, mounts again: "fill" has its size, "keep" (3M,
 * seed 7) its bytes, and the filesystem fs_size bytes. */
static void fill_kill9_check(struct mnt *m, uint64_t len, uint64_t fs_size)
{
	int fd = open(mnt_path(m, "fill"), O_CREAT | O_WRONLY, 0644);
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
	mnt_expect_pattern(mnt_path(m, "keep"), 3 << 20, 7);
	mnt_kill9(m);
	int st_y = fsck_run(m, "-f -y"); /* 1: the journal was replayed */
	ck_assert_msg(st_y == 0 || st_y == 1, "fsck.ordfs -f -y: status %d", st_y);
	ck_assert_int_eq(fsck_run(m, "-f -n"), 0);
	mnt_start(m, NULL);
	struct stat st;
	MNT_OK(stat(mnt_path(m, "fill"), &st));
	ck_assert_uint_eq((uint64_t)st.st_size, len);
	mnt_expect_pattern(mnt_path(m, "keep"), 3 << 20, 7);
	struct statvfs sv;
	MNT_OK(statvfs(m->mountpoint, &sv));
	ck_assert_uint_eq((uint64_t)sv.f_blocks * sv.f_frsize, fs_size);
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

	truncate_to(&m, 180ull << 20); /* past the bitmap area's 127.25M */
	struct mnt_run_result r;
	resize_run(&m, m.image, NULL, &r);
	ck_assert_msg(r.status == 0, "resize.ordfs: %.*s", (int)r.err_len, r.err);
	ck_assert_int_eq(fsck_run(&m, "-f -n"), 0);

	mnt_start(&m, NULL);
	struct statvfs after;
	MNT_OK(statvfs(m.mountpoint, &after));
	/* df: the filesystem is 180M now, and the 116M added are free but
	 * for the new group's bitmap block */
	ck_assert_uint_eq((uint64_t)after.f_blocks * after.f_frsize -
				  (uint64_t)before.f_blocks * before.f_frsize, 116ull << 20);
	ck_assert_uint_eq((uint64_t)(after.f_bfree - before.f_bfree) * after.f_frsize,
			  (116ull << 20) - BS);
	/* nearly all of the free space in one file: more than the old size;
	 * kill -9 after it: fsck clean, the new size */
	uint64_t len = ((uint64_t)after.f_bavail - 64) * after.f_frsize;
	ck_assert_uint_gt(len, 64ull << 20);
	fill_kill9_check(&m, len, 180ull << 20);
	mnt_finish(&m);
}
END_TEST

/* mnt_write_pattern, then fsync: what the kill -9 cases must find. */
static void write_durable(const char *path, size_t len, uint64_t seed)
{
	mnt_write_pattern(path, len, seed, 0644);
	int fd = open(path, O_RDONLY);
	MNT_OK(fd);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
}

static uint64_t fs_bytes(struct mnt *m)
{
	struct statvfs sv;
	MNT_OK(statvfs(m->mountpoint, &sv));
	return (uint64_t)sv.f_blocks * sv.f_frsize;
}

START_TEST(test_online_grow_of_an_image_file)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	write_durable(mnt_path(&m, "keep"), 3 << 20, 7);
	/* open across the grow, with data the daemon has not written back */
	int open_fd = open(mnt_path(&m, "open"), O_CREAT | O_RDWR, 0644);
	MNT_OK(open_fd);
	char *buf = malloc(1 << 20);
	mnt_pattern_fill(buf, 1 << 20, 9, 0);
	mnt_pwrite_all(open_fd, buf, 1 << 20, 0);
	struct statvfs before;
	MNT_OK(statvfs(m.mountpoint, &before));
	ck_assert_uint_eq(fs_bytes(&m), 64ull << 20);

	truncate_to(&m, 200ull << 20);
	struct mnt_run_result r;
	resize_run(&m, m.image, "100M", &r);
	ck_assert_msg(r.status == 0, "resize.ordfs 100M: %.*s", (int)r.err_len, r.err);
	ck_assert_uint_eq(fs_bytes(&m), 100ull << 20);
	/* the rest of the file, past the block bitmap area's reach (127.25M),
	 * named by the mount point */
	resize_run(&m, m.mountpoint, NULL, &r);
	ck_assert_msg(r.status == 0, "resize.ordfs MOUNTPOINT: %.*s", (int)r.err_len, r.err);
	ck_assert_uint_eq(fs_bytes(&m), 200ull << 20);
	resize_run(&m, m.image, NULL, &r); /* nothing left to do: success */
	ck_assert_msg(r.status == 0, "resize.ordfs again: %.*s", (int)r.err_len, r.err);
	struct statvfs after;
	MNT_OK(statvfs(m.mountpoint, &after));
	/* 136M added, less one block for the new group's bitmap */
	ck_assert_uint_eq((uint64_t)(after.f_bfree - before.f_bfree) * after.f_frsize,
			  (136ull << 20) - BS);

	/* the open file goes on, and the new space fills */
	mnt_pattern_fill(buf, 1 << 20, 9, 1 << 20);
	mnt_pwrite_all(open_fd, buf, 1 << 20, 1 << 20);
	MNT_OK(fsync(open_fd));
	free(buf);
	MNT_OK(close(open_fd));
	/* kill -9 after the fill: fsck clean at the new size */
	uint64_t len = ((uint64_t)after.f_bavail - 64 - 256) * after.f_frsize;
	ck_assert_uint_gt(len, 64ull << 20);
	fill_kill9_check(&m, len, 200ull << 20);
	mnt_expect_pattern(mnt_path(&m, "open"), 2 << 20, 9);
	mnt_finish(&m);
}
END_TEST

/* resize.ordfs IMAGE in the background (stdout and stderr to /dev/null). */
static pid_t resize_spawn(struct mnt *m)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1), dup2(null, 2);
		execl(getenv("RESIZE_BIN"), "resize.ordfs", m->image, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* kill -9 of the daemon while resize.ordfs asks it to grow, at moments
 * spread over how long a grow takes here (measured first): fsck.ordfs -f
 * clean at the old or the new size, every fsync'd file intact, and the
 * next mount grows to the end. */
START_TEST(test_kill9_during_online_grow)
{
	struct mnt m;
	/* grows of 8M from 100M: the fourth crosses the bitmap area's reach */
	mnt_setup(&m, "100M");
	uint64_t size = 100ull << 20;
	/* how long an online grow takes, start to exit */
	mnt_start(&m, NULL);
	size += 8ull << 20;
	truncate_to(&m, size);
	uint64_t t0 = mnt_now_ms();
	int status;
	pid_t pid = resize_spawn(&m);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(status, 0);
	uint64_t took_ms = mnt_now_ms() - t0 + 1;
	ck_assert_uint_eq(fs_bytes(&m), size);
	mnt_stop(&m);

	enum { ROUNDS = 7 };
	unsigned old_seen = 0, new_seen = 0;
	for (unsigned round = 0; round < ROUNDS; round++) {
		mnt_start(&m, NULL);
		write_durable(mnt_path(&m, "keep%u", round), 256 << 10, round);
		size += 8ull << 20;
		truncate_to(&m, size);
		pid = resize_spawn(&m);
		if (round < ROUNDS - 1) {
			/* 0 to 1.2 times the measured time into the grow */
			usleep((useconds_t)(took_ms * 1000 * round / (ROUNDS - 2) * 6 / 5));
			mnt_kill9(&m);
			ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		} else { /* the last round: after the grow returned */
			ck_assert_int_eq(waitpid(pid, &status, 0), pid);
			ck_assert_int_eq(status, 0);
			mnt_kill9(&m);
		}
		int st_y = fsck_run(&m, "-f -y");
		ck_assert_msg(st_y == 0 || st_y == 1, "round %u: fsck.ordfs -f -y: status %d", round,
			      st_y);
		ck_assert_int_eq(fsck_run(&m, "-f -n"), 0);
		mnt_start(&m, NULL);
		uint64_t now = fs_bytes(&m);
		ck_assert_msg(now == size || now == size - (8ull << 20), "round %u: %llu bytes",
			      round, (unsigned long long)now);
		/* a grow that returned success is there */
		ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || now == size,
			      "round %u: resize.ordfs succeeded but the old size came back", round);
		if (now == size)
			new_seen++;
		else
			old_seen++;
		for (unsigned k = 0; k <= round; k++)
			mnt_expect_pattern(mnt_path(&m, "keep%u", k), 256 << 10, k);
		/* whatever the kill left, a grow now reaches the end */
		struct mnt_run_result r;
		resize_run(&m, m.image, NULL, &r);
		ck_assert_msg(r.status == 0, "round %u: resize.ordfs: %.*s", round, (int)r.err_len,
			      r.err);
		ck_assert_uint_eq(fs_bytes(&m), size);
		mnt_stop(&m);
	}
	fprintf(stderr, "kill -9 during online grows of %llu ms: %u at the old size, %u at the "
		"new\n", (unsigned long long)took_ms, old_seen, new_seen);
	/* round 0 kills before the ioctl can have started; the last after it
	 * returned */
	ck_assert_uint_ge(old_seen, 1);
	ck_assert_uint_ge(new_seen, 1);
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
	truncate_to(&m, 140ull << 20);
	expect_refused(&m, m.image, "32M", "smaller than the filesystem");
	expect_refused(&m, m.image, "1G", "larger than the device");
	expect_refused(&m, m.image, "12Q", "invalid size");
	expect_refused(&m, "-x", m.image, "unknown option");

	/* mounted: the daemon writes the image, so the size is compared */
	mnt_start(&m, NULL);
	struct statvfs before, after;
	MNT_OK(statvfs(m.mountpoint, &before));
	expect_refused_in(&m, m.image, "32M", "smaller than the filesystem", false);
	expect_refused_in(&m, m.image, "1G", "larger than the device", false);
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
	tcase_add_test(tc, test_online_grow_of_an_image_file);
	tcase_add_test(tc, test_kill9_during_online_grow);
	tcase_add_test(tc, test_refusals_leave_the_image_unchanged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(resize_suite());
}
