/*
 * test_hooks.c - the daemon's test hooks; compiled only with
 * -Dtest_hooks=true (ORDFS_TEST_HOOKS), never into a default build.
 *
 * Owns: the recording device the hooks put under the filesystem, and the
 * ioctls that drive it.  All of them need a variable in the daemon's
 * environment:
 *  - ORDFS_TEST_FLUSH_LATCH=PATH: every flush of the image waits while
 *    PATH exists (tests/mounted/test_mnt_latch, test_mnt_invocation);
 *  - ORDFS_TEST_FAULTS=1: ORDFS_IOC_TEST_FAULT fails writes and flushes
 *    like a disk that loses its cache (tests/mounted/test_mnt_flush);
 *  - ORDFS_TEST_RECORD=PATH: every write, flush and ORDFS_IOC_TEST_MARK
 *    of the image is streamed to PATH (the crash states of a real client:
 *    tests/mounted/test_mnt_sqlite, tests/crash/crash_sqlite);
 *  - ORDFS_TEST_LOG=PATH: a detached daemon's stderr and messages go to
 *    PATH, not to /dev/null and syslog (tests/nbd/lib.sh).
 * Without the variable, the ioctl it enables answers ENOTTY.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_hooks.h"
#include "fuse_ops.h"
#include "../ordfs_ioctl.h"
#include "../blockdev/blockdev.h"

int test_hooks_setup(struct daemon_ctx *dc, struct blockdev *image_bd, struct blockdev **bd)
{
	const char *latch = getenv("ORDFS_TEST_FLUSH_LATCH");
	const char *faults = getenv("ORDFS_TEST_FAULTS");
	const char *record = getenv("ORDFS_TEST_RECORD");
	bool want_faults = faults && strcmp(faults, "1") == 0;
	*bd = image_bd;
	if (!(latch && *latch) && !want_faults && !(record && *record))
		return 0;
	struct blockdev *rec;
	int stream = -1;
	if (record && *record)
		stream = open(record, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if ((record && *record && stream < 0) ||
	    blockdev_record_create(image_bd, false, &rec) != 0 ||
	    (latch && *latch && blockdev_record_latch_file(rec, latch) != 0)) {
		if (stream >= 0)
			close(stream);
		return -1;
	}
	if (stream >= 0) {
		blockdev_record_stream(rec, stream);
		dc->test_record = rec;
	}
	if (want_faults) {
		blockdev_record_drop_unflushed(rec, true);
		dc->test_faults = rec;
	}
	*bd = rec;
	return 0;
}

static int test_fault(struct daemon_ctx *dc, const void *in, size_t in_size)
{
	struct ordfs_test_fault tf;
	if (!dc->test_faults)
		return -ENOTTY;
	if (in_size < sizeof(tf))
		return -EINVAL;
	memcpy(&tf, in, sizeof(tf));
	if (tf.op == 2) {
		blockdev_record_heal(dc->test_faults);
		return 0;
	}
	if (tf.op > 1 || tf.err <= 0 || tf.err > 4095)
		return -EINVAL;
	struct blockdev_fault f = { .nth = tf.nth, .err = -tf.err,
				    .persistent = tf.persistent != 0 };
	blockdev_record_fault(dc->test_faults, tf.op == 0 ? BD_EV_WRITE : BD_EV_FLUSH, &f);
	return 0;
}

static int test_mark(struct daemon_ctx *dc, const void *in, size_t in_size)
{
	struct ordfs_test_mark tm;
	if (!dc->test_record)
		return -ENOTTY;
	if (in_size < sizeof(tm))
		return -EINVAL;
	memcpy(&tm, in, sizeof(tm));
	tm.text[sizeof(tm.text) - 1] = '\0';
	return blockdev_record_mark(dc->test_record, tm.text);
}

int test_hooks_ioctl(struct daemon_ctx *dc, unsigned cmd, const void *in, size_t in_size)
{
	switch (cmd) {
	case ORDFS_IOC_TEST_FAULT:
		return test_fault(dc, in, in_size);
	case ORDFS_IOC_TEST_MARK:
		return test_mark(dc, in, in_size);
	default:
		return -ENOTTY;
	}
}

int test_hooks_detached_log(void)
{
	const char *path = getenv("ORDFS_TEST_LOG");
	if (!path || !*path)
		return -1;
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}
