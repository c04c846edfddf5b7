/*
 * test_mnt_flush.c - flush semantics through the real daemon: ordfsctl
 * sync, fsync of a file opened read-only, and each flush_error= policy
 * swept over every write and flush of one fsync, with the daemon's fault
 * device (ORDFS_TEST_FAULTS=1, armed by ORDFS_IOC_TEST_FAULT; a failed
 * flush loses what was written since the last good one); errors= on a
 * corrupt inode.
 *
 * What each policy must do, as README and `ordfs --help` say:
 *   report      the fsync that depends on the failure gets EIO, every other
 *               open file description of the file gets it once, the next
 *               fsync succeeds (the fault was transient) and the data is
 *               there after a remount;
 *   ignore      fsync succeeds, the daemon logs one line;
 *   remount-ro  fsync gets EIO, then writes get EROFS and reads work; the
 *               next read-write mount is refused until fsck.ordfs;
 *   abort       fsync gets EIO, the daemon unmounts and exits non-zero, the
 *               next mount replays the journal.
 * In every case what an earlier fsync acknowledged survives, and the
 * checker finds the image clean.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "fs.h"
#include "blockdev/blockdev.h"
#include "ordfs_ioctl.h"

#define FAULTS_ENV "ORDFS_TEST_FAULTS=1"
#define FILE_BYTES (2 * 4096 + 77)
/* The swept fsync's file: more than the 64 KiB an fsync logs in
 * data=ordered, so its data is written in place and ordered by F1, and
 * the sweep hits the data write and F1 as well as the log, the commit
 * record and F2. */
#define VICTIM_BYTES (80 * 1024 + 77)

static const char *bin(const char *name)
{
	const char *p = getenv(name);
	ck_assert_msg(p && *p, "%s is not set", name);
	return p;
}

static int run_fsck(struct mnt *m, struct mnt_run_result *r)
{
	char *argv[] = { (char *)bin("FSCK_BIN"), "-y", m->image, NULL };
	mnt_run(argv, NULL, r);
	return r->status;
}

static void arm_fault(struct mnt *m, uint32_t op, uint64_t nth, bool persistent)
{
	int fd = open(m->mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(fd);
	struct ordfs_test_fault tf = { .op = op, .persistent = persistent, .err = EIO,
				       .nth = nth };
	MNT_OK(ioctl(fd, ORDFS_IOC_TEST_FAULT, &tf));
	close(fd);
}

static unsigned count_in_log(struct mnt *m, const char *needle)
{
	size_t len;
	char *text = mnt_slurp(m->log, &len);
	unsigned n = 0;
	for (char *p = text; p && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

/* ---- ordfsctl sync, fsync of a read-only descriptor ------------------- */

START_TEST(test_ordfsctl_sync_makes_everything_durable)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=3600"); /* no periodic commit during the test */
	mnt_write_pattern(mnt_path(&m, "synced"), FILE_BYTES, 1, 0644);
	char *argv[] = { (char *)bin("ORDFSCTL_BIN"), "sync", m.mountpoint, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0, "ordfsctl sync: %d %s", r.status, r.err);
	mnt_write_pattern(mnt_path(&m, "not-synced"), FILE_BYTES, 2, 0644);

	mnt_kill9(&m);
	ck_assert_int_eq(run_fsck(&m, &r), 1); /* replayed */
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "synced"), FILE_BYTES, 1);
	/* The control: without a sync nothing reached the image. */
	struct stat st;
	ck_assert(stat(mnt_path(&m, "not-synced"), &st) != 0 || st.st_size == 0);

	/* Not an ordfs mount: one line, exit 1. */
	char *other[] = { (char *)bin("ORDFSCTL_BIN"), "sync", m.dir, NULL };
	mnt_run(other, NULL, &r);
	ck_assert_int_eq(r.status, 1);
	ck_assert_uint_eq(r.lines, 1);
	char *bad[] = { (char *)bin("ORDFSCTL_BIN"), "frobnicate", m.mountpoint, NULL };
	mnt_run(bad, NULL, &r);
	ck_assert_int_eq(r.status, 2);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_fsync_of_readonly_descriptor)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=3600");
	const char *path = mnt_path(&m, "f");
	int wfd = open(path, O_CREAT | O_WRONLY, 0644);
	MNT_OK(wfd);
	uint8_t buf[FILE_BYTES];
	mnt_pattern_fill(buf, sizeof(buf), 9, 0);
	mnt_write_all(wfd, buf, sizeof(buf));
	int rfd = open(path, O_RDONLY);
	MNT_OK(rfd);
	MNT_OK(fsync(rfd)); /* the writer never syncs */
	close(rfd);
	close(wfd);
	mnt_kill9(&m);
	struct mnt_run_result r;
	ck_assert_int_eq(run_fsck(&m, &r), 1);
	mnt_start(&m, NULL);
	mnt_expect_pattern(path, FILE_BYTES, 9);
	mnt_finish(&m);
}
END_TEST

/* ---- the policy sweep --------------------------------------------------- */

enum { OP_WRITE = 0, OP_FLUSH = 1 };

/* One case: an acknowledged file, then a second file whose fsync meets the
 * nth write or flush failing.  Returns whether the fault fired (false once
 * nth is past the operations of one fsync). */
static bool policy_case(const char *policy, uint32_t op, uint64_t nth)
{
	struct mnt m;
	char opts[96];
	mnt_setup(&m, "64M");
	snprintf(opts, sizeof(opts), "flush_error=%s,commit=3600", policy);
	mnt_start_env(&m, opts, FAULTS_ENV);
	mnt_write_pattern(mnt_path(&m, "acked"), FILE_BYTES, 1, 0644);
	int afd = open(mnt_path(&m, "acked"), O_RDONLY);
	MNT_OK(afd);
	MNT_OK(fsync(afd));
	close(afd);

	const char *path = mnt_path(&m, "victim");
	int fd1 = open(path, O_CREAT | O_RDWR, 0644);
	MNT_OK(fd1);
	int fd2 = open(path, O_RDONLY);
	MNT_OK(fd2);
	static uint8_t buf[VICTIM_BYTES];
	mnt_pattern_fill(buf, sizeof(buf), 2, 0);
	mnt_write_all(fd1, buf, sizeof(buf));

	arm_fault(&m, op, nth, false);
	errno = 0;
	int r1 = fsync(fd1);
	int e1 = errno;
	if (r1 == 0 && mnt_is_live(m.mountpoint))
		arm_fault(&m, 2, 0, false); /* not hit: disarm before anything else */
	bool fired = !(r1 == 0 && strcmp(policy, "ignore") != 0);
	struct mnt_run_result rr;

	if (strcmp(policy, "report") == 0) {
		if (r1 != 0) {
			ck_assert_msg(e1 == EIO, "fsync: %s", strerror(e1));
			MNT_FAILS(fsync(fd2), EIO); /* the other description: once */
			MNT_OK(fsync(fd2));
			MNT_OK(fsync(fd1)); /* transient: rewritten, durable */
			int fd3 = open(path, O_RDONLY); /* after everyone saw it */
			MNT_OK(fd3);
			MNT_OK(fsync(fd3));
			close(fd3);
		}
		close(fd1);
		close(fd2);
		ck_assert_int_eq(mnt_stop_status(&m), 0);
		mnt_check(&m);
		mnt_start(&m, NULL);
		mnt_expect_pattern(path, VICTIM_BYTES, 2);
	} else if (strcmp(policy, "ignore") == 0) {
		MNT_OK(r1);
		MNT_OK(fsync(fd2));
		close(fd1);
		close(fd2);
		unsigned lines = count_in_log(&m, "flush_error=ignore");
		fired = lines > 0;
		ck_assert_uint_le(lines, 1);
		ck_assert_int_eq(mnt_stop_status(&m), 0);
		mnt_check(&m);
		mnt_start(&m, NULL);
	} else if (strcmp(policy, "remount-ro") == 0) {
		if (r1 != 0) {
			ck_assert_msg(e1 == EIO, "fsync: %s", strerror(e1));
			MNT_FAILS(write(fd1, buf, 10), EROFS);
			MNT_FAILS(mkdir(mnt_path(&m, "d"), 0755), EROFS);
			mnt_expect_pattern(mnt_path(&m, "acked"), FILE_BYTES, 1); /* reads work */
		}
		close(fd1);
		close(fd2);
		if (r1 == 0) {
			ck_assert_int_eq(mnt_stop_status(&m), 0);
		} else {
			ck_assert_int_ne(mnt_stop_status(&m), 0);
			char *argv[] = { (char *)mnt_ordfs_bin(), m.image, m.mountpoint, "-f", NULL };
			mnt_run(argv, NULL, &rr);
			ck_assert_msg(rr.status != 0 && strstr(rr.err, "fsck.ordfs"),
				      "read-write mount after remount-ro: exit %d: %s", rr.status,
				      rr.err);
			ck_assert_int_eq(run_fsck(&m, &rr), 1);
			ck_assert_msg(strstr(rr.err, "problem") == NULL, "%s", rr.err);
		}
		mnt_start(&m, NULL);
	} else { /* abort */
		if (r1 != 0) {
			ck_assert_msg(e1 == EIO, "fsync: %s", strerror(e1));
			close(fd1);
			close(fd2);
			int status;
			ck_assert_int_eq(mnt_wait_pid(m.daemon, 20000, &status), 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status) == 0)
				mnt_dump_file(m.log, "daemon: ");
			ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
				      "daemon status %#x after abort", status);
			m.daemon = 0;
			ck_assert(!mnt_is_live(m.mountpoint));
			ck_assert_uint_eq(count_in_log(&m, "stopping"), 1);
			mnt_start(&m, NULL); /* replays */
		} else {
			close(fd1);
			close(fd2);
			ck_assert_int_eq(mnt_stop_status(&m), 0);
			mnt_start(&m, NULL);
		}
	}
	mnt_expect_pattern(mnt_path(&m, "acked"), FILE_BYTES, 1);
	mnt_finish(&m);
	return fired;
}

static void sweep(const char *policy)
{
	unsigned fired = 0, cases = 0;
	for (uint32_t op = OP_WRITE; op <= OP_FLUSH; op++) {
		for (uint64_t nth = 1; nth <= 4; nth++) {
			bool f = policy_case(policy, op, nth);
			cases++;
			fired += f;
			if (!f)
				break; /* past the last operation of the fsync */
		}
	}
	printf("  flush_error=%s: %u cases, %u with the fault hit\n", policy, cases, fired);
	ck_assert_uint_ge(fired, 4); /* data, log and commit writes; F1, F2 */
}

START_TEST(test_policy_report)
{
	sweep("report");
}
END_TEST

START_TEST(test_policy_ignore)
{
	sweep("ignore");
}
END_TEST

START_TEST(test_policy_remount_ro)
{
	sweep("remount-ro");
}
END_TEST

START_TEST(test_policy_abort)
{
	sweep("abort");
}
END_TEST

START_TEST(test_report_persistent_then_device_returns)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start_env(&m, "commit=3600", FAULTS_ENV);
	const char *path = mnt_path(&m, "p");
	int fd = open(path, O_CREAT | O_RDWR, 0644);
	MNT_OK(fd);
	uint8_t buf[FILE_BYTES];
	mnt_pattern_fill(buf, sizeof(buf), 5, 0);
	mnt_write_all(fd, buf, sizeof(buf));
	arm_fault(&m, OP_FLUSH, 1, true);
	MNT_FAILS(fsync(fd), EIO);
	MNT_FAILS(fsync(fd), EIO); /* still broken: a new failure each time */
	arm_fault(&m, 2, 0, false);  /* the device comes back */
	MNT_OK(fsync(fd));
	close(fd);
	mnt_kill9(&m);
	struct mnt_run_result r;
	ck_assert_int_eq(run_fsck(&m, &r), 1);
	mnt_start(&m, NULL);
	mnt_expect_pattern(path, FILE_BYTES, 5);
	mnt_finish(&m);
}
END_TEST

/* ---- errors= on metadata corruption -------------------------------------- */

/* Breaks the checksum of inode ino on the (unmounted) image. */
static void corrupt_inode(struct mnt *m, uint32_t ino)
{
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_file_open(m->image, 0, &bd), 0);
	struct ordfs_super sb;
	const char *why;
	ck_assert_int_eq(ordfs_read_super(bd, false, &sb, &why), 0);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&sb, ino, &blk, &off);
	uint32_t bs = ordfs_block_size(&sb);
	uint8_t *b = malloc(bs);
	ck_assert_int_eq(blockdev_read(bd, b, bs, blk * bs), 0);
	b[off + 40] ^= 0x5a; /* inside the inode, under its CRC */
	ck_assert_int_eq(blockdev_write(bd, b, bs, blk * bs), 0);
	free(b);
	blockdev_destroy(bd);
}

static void errors_case(const char *policy)
{
	struct mnt m;
	char opts[64];
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	mnt_make_file(mnt_path(&m, "bad"), 0644, "x");
	mnt_make_file(mnt_path(&m, "good"), 0644, "ok");
	struct stat st;
	MNT_OK(stat(mnt_path(&m, "bad"), &st));
	mnt_stop(&m);
	corrupt_inode(&m, (uint32_t)st.st_ino);

	snprintf(opts, sizeof(opts), "errors=%s", policy);
	mnt_start(&m, opts);
	MNT_FAILS(stat(mnt_path(&m, "bad"), &st), EUCLEAN);
	struct mnt_run_result r;
	if (strcmp(policy, "continue") == 0) {
		mnt_make_file(mnt_path(&m, "still-writable"), 0644, "y");
		ck_assert_int_eq(mnt_stop_status(&m), 0);
	} else if (strcmp(policy, "remount-ro") == 0) {
		MNT_FAILS(mkdir(mnt_path(&m, "d"), 0755), EROFS);
		mnt_expect_text(mnt_path(&m, "good"), "ok");
		ck_assert_int_ne(mnt_stop_status(&m), 0);
	} else {
		int status;
		ck_assert_int_eq(mnt_wait_pid(m.daemon, 20000, &status), 0);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
		m.daemon = 0;
		ck_assert(!mnt_is_live(m.mountpoint));
	}
	/* The image knows: fsck -n exits 4 (the inode is bad and, except
	 * after abort, the error is recorded). */
	char *argv[] = { (char *)bin("FSCK_BIN"), "-n", m.image, NULL };
	mnt_run(argv, NULL, &r);
	ck_assert_int_eq(r.status, 4);
	if (strcmp(policy, "abort") != 0) {
		struct blockdev *bd;
		struct ordfs_super sb;
		const char *why;
		ck_assert_int_eq(blockdev_file_open(m.image, BLOCKDEV_READONLY, &bd), 0);
		ck_assert_int_eq(ordfs_read_super(bd, false, &sb, &why), 0);
		ck_assert_msg(sb.state & ORDFS_STATE_ERROR, "errors=%s: no error recorded", policy);
		ck_assert_uint_eq(sb.last_error_code, EUCLEAN);
		blockdev_destroy(bd);
	}
	/* Not mnt_finish: the image stays damaged (fsck repairs are issue 7). */
	mnt_discard(&m);
}

START_TEST(test_errors_continue)
{
	errors_case("continue");
}
END_TEST

START_TEST(test_errors_remount_ro)
{
	errors_case("remount-ro");
}
END_TEST

START_TEST(test_errors_abort)
{
	errors_case("abort");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted flush");
	TCase *tc = tcase_create("flush");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_ordfsctl_sync_makes_everything_durable);
	tcase_add_test(tc, test_fsync_of_readonly_descriptor);
	/* These need the fault device (ORDFS_TEST_FAULTS). */
	MNT_ADD_HOOK_TEST(tc, test_policy_report);
	MNT_ADD_HOOK_TEST(tc, test_policy_ignore);
	MNT_ADD_HOOK_TEST(tc, test_policy_remount_ro);
	MNT_ADD_HOOK_TEST(tc, test_policy_abort);
	MNT_ADD_HOOK_TEST(tc, test_report_persistent_then_device_returns);
	tcase_add_test(tc, test_errors_continue);
	tcase_add_test(tc, test_errors_remount_ro);
	tcase_add_test(tc, test_errors_abort);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
