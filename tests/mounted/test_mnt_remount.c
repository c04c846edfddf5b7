/*
 * test_mnt_remount.c - remounting the real daemon
 * (design/remount-shutdown.md, "Remount"), through `ordfsctl remount` as root
 * (mount(8)'s path, mount.fuse3 -> `ordfs ... -o remount`, is
 * tests/cli/test_mount_integration.sh's):
 *  - ro: writes and creates get EROFS from the kernel and from the
 *    daemon, the kernel shows ro, the image is clean at once (no
 *    RECOVER: a power cut now needs no replay), data written before
 *    (fsync'd or not) reads back; rw again: writes work, the kernel shows
 *    rw, the image is in use again;
 *  - kill -9 right after a remount,ro: fsck.ordfs -fn finds the image
 *    clean with nothing to replay, and every file written before the
 *    remount, fsync'd or not, is intact;
 *  - live options do what they say: commit= (unsynced data durable within
 *    the new interval, through kill -9), nobarrier (fsync flushes
 *    nothing), discard (an unlink gives the image's space back), the
 *    atime modes (strictatime updates atime on every read, noatime
 *    never), errors=, flush_error=, journal_ioprio= in ordfsctl stats;
 *  - a read-only mount after kill -9 replays the journal first (ext4's
 *    way), and fsck.ordfs -fn finds it consistent after;
 *  - a read-only mount becomes read-write by a remount (kernel and
 *    daemon; that it writes nothing before is test_mnt_persist's), frees
 *    the orphans it left alone then, and stays read-only with the reason
 *    where the image cannot be written;
 *  - refusals change nothing: data=, an unknown option, a FUSE option,
 *    a caller who is neither root nor the mount's owner (EPERM); rw is
 *    refused once the journal stopped on a flush error (test hooks).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

static const char *ctl_bin(void)
{
	const char *b = getenv("ORDFSCTL_BIN");
	ck_assert_msg(b, "ORDFSCTL_BIN is not set");
	return b;
}

/* ordfsctl remount MNT opts: its exit status, stderr in r. */
static int remount(struct mnt *m, const char *opts, struct mnt_run_result *r)
{
	char *argv[] = { (char *)ctl_bin(), "remount", m->mountpoint, (char *)opts, NULL };
	mnt_run(argv, NULL, r);
	return r->status;
}

static void remount_ok(struct mnt *m, const char *opts)
{
	struct mnt_run_result r;
	ck_assert_msg(remount(m, opts, &r) == 0, "remount %s: exit %d: %s", opts, r.status,
		      r.err);
}

static struct ordfs_stats stats_of(struct mnt *m)
{
	struct ordfs_stats st;
	int fd = open(m->mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(fd);
	MNT_OK(ioctl(fd, ORDFS_IOC_STATS, &st));
	close(fd);
	return st;
}

/* The options in force, as ordfsctl stats shows them (len <= 256). */
static void options_in_force(struct mnt *m, char *out, size_t len)
{
	struct ordfs_stats st = stats_of(m);
	st.options[sizeof(st.options) - 1] = '\0';
	snprintf(out, len, "%.255s", st.options);
}

/* Is `opt` one of the comma-separated options of list? */
static bool has_opt(const char *list, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		if (l == n && strncmp(p, opt, n) == 0)
			return true;
		p = c ? c + 1 : NULL;
	}
	return false;
}

static void expect_option(struct mnt *m, const char *opt)
{
	char now[256];
	options_in_force(m, now, sizeof(now));
	ck_assert_msg(has_opt(now, opt), "'%s' is not in force: %s", opt, now);
}

/* The kernel's per-mount options of the mount ("ro,nosuid,..."). */
static void kernel_options(struct mnt *m, char *out, size_t len)
{
	char *info = mnt_slurp("/proc/self/mountinfo", NULL);
	ck_assert(info);
	out[0] = '\0';
	char *save = NULL;
	for (char *l = strtok_r(info, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char mp[4096], opts[256];
		if (sscanf(l, "%*s %*s %*s %*s %4095s %255s", mp, opts) == 2 &&
		    strcmp(mp, m->mountpoint) == 0)
			snprintf(out, len, "%s", opts);
	}
	free(info);
	ck_assert_msg(out[0], "%s is not in mountinfo", m->mountpoint);
}

static void write_fsync(const char *path, size_t len, uint64_t seed)
{
	uint8_t *buf = malloc(len);
	ck_assert(buf);
	mnt_pattern_fill(buf, len, seed, 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	MNT_OK(fd);
	mnt_write_all(fd, buf, len);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	free(buf);
}

static int create_errno(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

static void expect_fsck_clean(struct mnt *m, const char *when)
{
	char *argv[] = { getenv("FSCK_BIN"), "-fn", m->image, NULL };
	ck_assert(argv[0]);
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0, "fsck.ordfs -fn %s: exit %d: %s", when, r.status, r.err);
}

START_TEST(test_remount_ro_and_rw)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	write_fsync(mnt_path(&m, "synced"), 300000, 1);
	mnt_write_pattern(mnt_path(&m, "unsynced"), 200000, 2, 0644);
	int wfd = open(mnt_path(&m, "unsynced"), O_RDONLY);
	MNT_OK(wfd);
	ck_assert(mnt_image_in_use(&m));

	remount_ok(&m, "ro");
	char k[256];
	kernel_options(&m, k, sizeof(k));
	ck_assert_msg(has_opt(k, "ro"), "the kernel still shows %s", k);
	expect_option(&m, "ro");
	ck_assert_msg(!mnt_image_in_use(&m), "the image is not clean after remount,ro");
	ck_assert_int_eq(create_errno(mnt_path(&m, "new")), EROFS);
	errno = 0;
	ck_assert(open(mnt_path(&m, "synced"), O_WRONLY) < 0 && errno == EROFS);
	mnt_expect_pattern(mnt_path(&m, "synced"), 300000, 1);
	mnt_expect_pattern(mnt_path(&m, "unsynced"), 200000, 2);
	/* ro again is nothing new */
	remount_ok(&m, "ro");

	remount_ok(&m, "rw");
	kernel_options(&m, k, sizeof(k));
	ck_assert_msg(has_opt(k, "rw"), "the kernel still shows %s", k);
	expect_option(&m, "rw");
	ck_assert_msg(mnt_image_in_use(&m), "the image is not marked in use after remount,rw");
	write_fsync(mnt_path(&m, "after"), 100000, 3);
	mnt_expect_pattern(mnt_path(&m, "after"), 100000, 3);
	close(wfd);
	mnt_finish(&m);
}
END_TEST

/* A file open for writing keeps the kernel from going read-only (as for
 * ext4): the remount fails and the mount stays read-write everywhere. */
START_TEST(test_remount_ro_busy)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	int fd = open(mnt_path(&m, "open"), O_WRONLY | O_CREAT, 0644);
	MNT_OK(fd);
	struct mnt_run_result r;
	ck_assert_int_eq(remount(&m, "ro", &r), 1);
	ck_assert_msg(strstr(r.err, "open for writing"), "%s", r.err);
	expect_option(&m, "rw");
	mnt_write_all(fd, "still writable\n", 15);
	MNT_OK(close(fd));
	mnt_finish(&m);
}
END_TEST

START_TEST(test_kill9_after_remount_ro)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	for (unsigned i = 0; i < 6; i++)
		write_fsync(mnt_path(&m, "synced%u", i), 50000 + i * 7777, 10 + i);
	for (unsigned i = 0; i < 6; i++)
		mnt_write_pattern(mnt_path(&m, "unsynced%u", i), 30000 + i * 999, 20 + i, 0644);
	MNT_OK(mkdir(mnt_path(&m, "dir"), 0755));
	remount_ok(&m, "ro");
	mnt_kill9(&m);
	/* Clean: nothing to replay, nothing to repair (fsck -n, exit 0). */
	expect_fsck_clean(&m, "after kill -9 of a ro remount");
	ck_assert(!mnt_image_in_use(&m));
	mnt_start(&m, NULL);
	for (unsigned i = 0; i < 6; i++)
		mnt_expect_pattern(mnt_path(&m, "synced%u", i), 50000 + i * 7777, 10 + i);
	for (unsigned i = 0; i < 6; i++)
		mnt_expect_pattern(mnt_path(&m, "unsynced%u", i), 30000 + i * 999, 20 + i);
	struct stat st;
	MNT_OK(stat(mnt_path(&m, "dir"), &st));
	mnt_finish(&m);
}
END_TEST

/* commit=1 set live: unsynced data is durable within a few seconds. */
START_TEST(test_remount_commit_interval)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=3600");
	remount_ok(&m, "commit=1");
	expect_option(&m, "commit=1");
	struct ordfs_stats st;
	mnt_get_stats(&m, &st);
	uint64_t commits_before = st.commits;
	mnt_write_pattern(mnt_path(&m, "soon"), 123456, 5, 0644);
	sleep(4); /* a commit and the writeback before it, at 1 s */
	/* On a loaded machine the timer's writeback and commit can come
	 * later: wait (60 s at most) until the data is written back and a
	 * commit has happened since the write, before the kill. */
	uint64_t end = mnt_now_ms() + 60000;
	for (mnt_get_stats(&m, &st); (st.dirty_bytes > 0 || st.commits == commits_before) &&
				     mnt_now_ms() < end;
	     mnt_get_stats(&m, &st))
		usleep(50 * 1000);
	mnt_kill9(&m);
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "soon"), 123456, 5);
	mnt_finish(&m);
}
END_TEST

/* nobarrier: an fsync flushes nothing; barrier again: it does. */
START_TEST(test_remount_barrier)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	remount_ok(&m, "nobarrier");
	expect_option(&m, "nobarrier");
	uint64_t before = stats_of(&m).flushes;
	for (unsigned i = 0; i < 5; i++)
		write_fsync(mnt_path(&m, "f%u", i), 4096, i);
	ck_assert_uint_eq(stats_of(&m).flushes, before);
	remount_ok(&m, "barrier");
	expect_option(&m, "barrier");
	before = stats_of(&m).flushes;
	write_fsync(mnt_path(&m, "g"), 4096, 9);
	ck_assert_uint_gt(stats_of(&m).flushes, before);
	mnt_finish(&m);
}
END_TEST

static uint64_t image_bytes(struct mnt *m)
{
	struct stat st;
	MNT_OK(stat(m->image, &st));
	return (uint64_t)st.st_blocks * 512;
}

/* discard set live: deleting a file punches its blocks out of the image. */
START_TEST(test_remount_discard)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	remount_ok(&m, "discard");
	expect_option(&m, "discard");
	write_fsync(mnt_path(&m, "big"), 8u << 20, 7);
	uint64_t full = image_bytes(&m);
	MNT_OK(unlink(mnt_path(&m, "big")));
	char *argv[] = { (char *)ctl_bin(), "sync", m.mountpoint, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_int_eq(r.status, 0);
	uint64_t after = image_bytes(&m);
	ck_assert_msg(after + (6u << 20) <= full, "the image took %llu bytes, %llu after the "
		      "unlink", (unsigned long long)full, (unsigned long long)after);
	mnt_finish(&m);
}
END_TEST

/* The atime modes set live: strictatime updates atime on every read,
 * noatime never. */
START_TEST(test_remount_atime)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL); /* relatime */
	const char *p = mnt_path(&m, "f");
	mnt_make_file(p, 0644, "some text\n");
	mnt_expect_text(p, "some text\n"); /* relatime: the one update after a write */
	struct timespec a1 = mnt_atime_of(p);
	remount_ok(&m, "strictatime");
	expect_option(&m, "strictatime");
	usleep(20 * 1000);
	mnt_expect_text(p, "some text\n");
	struct timespec a2 = mnt_atime_of(p);
	ck_assert_msg(mnt_ts_cmp(a2, a1) > 0, "strictatime: the read did not update atime");
	remount_ok(&m, "noatime");
	expect_option(&m, "noatime");
	usleep(20 * 1000);
	mnt_expect_text(p, "some text\n");
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(p), a2) == 0, "noatime: the read updated atime");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_remount_policies_shown)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	remount_ok(&m, "errors=remount-ro,flush_error=abort,journal_ioprio=6,nodiratime,lazytime");
	expect_option(&m, "errors=remount-ro");
	expect_option(&m, "flush_error=abort");
	expect_option(&m, "journal_ioprio=6");
	expect_option(&m, "nodiratime");
	expect_option(&m, "lazytime");
	remount_ok(&m, "flush_error=report,errors=continue");
	expect_option(&m, "flush_error=report");
	expect_option(&m, "errors=continue");
	write_fsync(mnt_path(&m, "f"), 10000, 4);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_remount_refusals_change_nothing)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=7,allow_other"); /* allow_other: nobody may ask */
	char before[256], after[256];
	options_in_force(&m, before, sizeof(before));
	static const char *const bad[] = {
		"data=journal", "commit=2,data=writeback", "bogus", "ro,allow_other",
		"writeback_cache", "commit=abc", "errors=whatever", "io_uring=off",
		"io_uring=sometimes",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mnt_run_result r;
		ck_assert_msg(remount(&m, bad[i], &r) == 1, "remount %s: exit %d", bad[i], r.status);
		ck_assert_msg(r.lines == 1, "remount %s: not one line: %s", bad[i], r.err);
		options_in_force(&m, after, sizeof(after));
		ck_assert_msg(strcmp(before, after) == 0, "remount %s changed %s into %s", bad[i],
			      before, after);
	}
	char k[256];
	kernel_options(&m, k, sizeof(k));
	ck_assert_msg(has_opt(k, "rw"), "the kernel shows %s", k);
	mnt_make_file(mnt_path(&m, "still"), 0644, "writable\n");

	/* Neither root nor the owner: EPERM, nothing changes. */
	pid_t pid = fork();
	MNT_OK(pid);
	if (pid == 0) {
		int dfd = open(m.mountpoint, O_RDONLY | O_DIRECTORY);
		if (dfd < 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		struct ordfs_remount rq;
		memset(&rq, 0, sizeof(rq));
		strcpy(rq.opts, "ro");
		int rc = ioctl(dfd, ORDFS_IOC_REMOUNT, &rq);
		_exit(rc < 0 && errno == EPERM ? 0 : rc == 0 ? 1 : 2);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "remount as nobody: exit %d (1: it worked, 2: not EPERM)",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	expect_option(&m, "rw");
	mnt_finish(&m);
}
END_TEST

/* A read-only mount after kill -9 replays the journal first, as ext4
 * does: every fsync'd file is there, the kernel shows ro, and the image
 * is checked clean after the unmount. */
START_TEST(test_ro_mount_replays_the_journal)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	for (unsigned i = 0; i < 4; i++)
		write_fsync(mnt_path(&m, "synced%u", i), 70000 + i, 40 + i);
	mnt_kill9(&m);
	ck_assert(mnt_image_in_use(&m));
	mnt_start(&m, "ro");
	char k[256];
	kernel_options(&m, k, sizeof(k));
	ck_assert_msg(has_opt(k, "ro"), "the kernel shows %s", k);
	for (unsigned i = 0; i < 4; i++)
		mnt_expect_pattern(mnt_path(&m, "synced%u", i), 70000 + i, 40 + i);
	ck_assert_int_eq(create_errno(mnt_path(&m, "new")), EROFS);
	mnt_stop(&m);
	/* Consistent, nothing left to replay (the superblock is not marked
	 * clean: a read-only mount writes nothing, the replay only what the
	 * log held, as ext4's). */
	expect_fsck_clean(&m, "after the read-only mount");
	mnt_discard(&m);
}
END_TEST

/* A read-only mount (which writes nothing to the image: test_mnt_persist's
 * test_readonly_mount) becomes read-write by a remount, as ext4's does:
 * the kernel and the daemon both take writes, the image is in use, and
 * what is fsync'd after it survives kill -9. */
START_TEST(test_ro_mount_becomes_rw)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	write_fsync(mnt_path(&m, "before"), 90000, 5);
	mnt_stop(&m);

	mnt_start(&m, "ro");
	remount_ok(&m, "rw");
	char k[256];
	kernel_options(&m, k, sizeof(k));
	ck_assert_msg(has_opt(k, "rw"), "the kernel still shows %s", k);
	expect_option(&m, "rw");
	ck_assert_msg(mnt_image_in_use(&m), "the image is not marked in use after remount,rw");
	write_fsync(mnt_path(&m, "after"), 120000, 6);
	mnt_kill9(&m);
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "before"), 90000, 5);
	mnt_expect_pattern(mnt_path(&m, "after"), 120000, 6);
	mnt_finish(&m);
}
END_TEST

static uint64_t free_blocks(struct mnt *m)
{
	struct statvfs sv;
	MNT_OK(statvfs(m->mountpoint, &sv));
	return sv.f_bfree;
}

/* A file unlinked while open when the daemon was killed stays on the
 * orphan list through a read-only mount (nothing is written), and the
 * remount to read-write frees it, as a read-write mount would. */
START_TEST(test_ro_mount_frees_orphans_at_rw)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const size_t big = 8u << 20;
	write_fsync(mnt_path(&m, "orphan"), big, 7);
	int fd = open(mnt_path(&m, "orphan"), O_RDONLY);
	MNT_OK(fd);
	MNT_OK(unlink(mnt_path(&m, "orphan")));
	write_fsync(mnt_path(&m, "kept"), 1000, 8); /* commits the unlink too */
	mnt_kill9(&m);
	close(fd);

	mnt_start(&m, "ro");
	uint64_t ro_free = free_blocks(&m);
	remount_ok(&m, "rw");
	int dfd = open(m.mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(dfd);
	MNT_OK(syncfs(dfd));
	close(dfd);
	uint64_t rw_free = free_blocks(&m);
	ck_assert_msg(rw_free >= ro_free + big / 4096,
		      "the orphan's blocks were not freed at remount,rw: %llu free before, %llu after",
		      (unsigned long long)ro_free, (unsigned long long)rw_free);
	mnt_expect_pattern(mnt_path(&m, "kept"), 1000, 8);
	mnt_finish(&m);
}
END_TEST

/* An image the daemon cannot write (here: on a read-only bind mount)
 * still mounts read-only; a remount to read-write is refused with the
 * reason, and the mount stays read-only everywhere. */
START_TEST(test_ro_mount_of_unwritable_image_stays_ro)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	char ro_dir[MNT_DIR_LEN + 16], saved[MNT_FILE_LEN];
	snprintf(ro_dir, sizeof(ro_dir), "%s/ro-view", m.dir);
	MNT_OK(mkdir(ro_dir, 0755));
	MNT_OK(mount(m.dir, ro_dir, NULL, MS_BIND, NULL));
	MNT_OK(mount(NULL, ro_dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL));
	snprintf(saved, sizeof(saved), "%s", m.image);
	snprintf(m.image, sizeof(m.image), "%s/image", ro_dir);

	mnt_start(&m, "ro");
	struct mnt_run_result r;
	ck_assert_int_eq(remount(&m, "rw", &r), 1);
	ck_assert_msg(strstr(r.err, "opened read-only") && r.lines == 1, "%s", r.err);
	char k[256];
	kernel_options(&m, k, sizeof(k));
	ck_assert_msg(has_opt(k, "ro"), "the kernel shows %s", k);
	expect_option(&m, "ro");
	ck_assert_int_eq(create_errno(mnt_path(&m, "new")), EROFS);
	mnt_stop(&m);

	MNT_OK(umount(ro_dir));
	snprintf(m.image, sizeof(m.image), "%s", saved);
	mnt_finish(&m);
}
END_TEST

/* Test hooks: a flush fails under flush_error=remount-ro, the journal
 * stops; remount,ro is accepted (it is read-only already), rw refused. */
START_TEST(test_remount_rw_refused_after_journal_stopped)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start_env(&m, "flush_error=remount-ro,commit=3600", "ORDFS_TEST_FAULTS=1");
	write_fsync(mnt_path(&m, "acked"), 5000, 1);
	struct ordfs_test_fault tf = { .op = 1, .persistent = 0, .err = EIO, .nth = 1 };
	int dfd = open(m.mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(dfd);
	MNT_OK(ioctl(dfd, ORDFS_IOC_TEST_FAULT, &tf));
	close(dfd);
	int fd = open(mnt_path(&m, "victim"), O_WRONLY | O_CREAT, 0644);
	MNT_OK(fd);
	mnt_write_all(fd, "x", 1);
	ck_assert(fsync(fd) != 0);
	close(fd);
	ck_assert_int_eq(create_errno(mnt_path(&m, "more")), EROFS);
	struct mnt_run_result r;
	ck_assert_int_eq(remount(&m, "rw", &r), 1);
	ck_assert_msg(strstr(r.err, "fsck.ordfs"), "%s", r.err);
	ck_assert_int_eq(create_errno(mnt_path(&m, "more")), EROFS);
	remount_ok(&m, "ro");
	mnt_stop_status(&m);
	mnt_discard(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted remount");
	TCase *tc = tcase_create("remount");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_remount_ro_and_rw);
	tcase_add_test(tc, test_remount_ro_busy);
	tcase_add_test(tc, test_kill9_after_remount_ro);
	tcase_add_test(tc, test_remount_commit_interval);
	tcase_add_test(tc, test_remount_barrier);
	tcase_add_test(tc, test_remount_discard);
	tcase_add_test(tc, test_remount_atime);
	tcase_add_test(tc, test_remount_policies_shown);
	tcase_add_test(tc, test_remount_refusals_change_nothing);
	tcase_add_test(tc, test_ro_mount_replays_the_journal);
	tcase_add_test(tc, test_ro_mount_becomes_rw);
	tcase_add_test(tc, test_ro_mount_frees_orphans_at_rw);
	tcase_add_test(tc, test_ro_mount_of_unwritable_image_stays_ro);
	MNT_ADD_HOOK_TEST(tc, test_remount_rw_refused_after_journal_stopped);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
