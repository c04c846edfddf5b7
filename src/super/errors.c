/*
 * errors.c - what the filesystem does when it finds an error at run time:
 * errors= for metadata corruption, and recording an error in the
 * superblock so it survives the mount.
 *
 * Owns: ordfs_report_error (the one door every layer's errors go through
 * to errors=), ordfs_error_corruption, ordfs_error_internal,
 * ordfs_record_error, ordfs_writable and the writers' gate for a
 * remount,ro (ordfs_write_enter/exit).  (The
 * flush_error= policy for failing writes and flushes lives in guard.c and
 * in the journal's retry/abort choice; mount.c wires them.)
 *
 * Rules:
 *  - The error is recorded where it still can be: through the journal
 *    while it runs (so it commits like any other change of block 0);
 *    once the journal has aborted, directly into block 0 (only the error
 *    fields change: the rest of the on-disk superblock is kept) and into
 *    the journal superblock's errno, which the next mount's replay turns
 *    into the superblock's ERROR state again (replay may rewrite block 0).
 *  - Never called with a handle open [J8]: it may start one.
 */
#include <errno.h>
#include <string.h>

#include "fs.h"
#include "base/log.h"
#include "blockdev/blockdev.h"
#include "journal/journal.h"
#include "lock/lock.h"
#include "base/ordfs_assert.h"

int ordfs_writable(struct ordfs *fs)
{
	if (!fs->journal || __atomic_load_n(&fs->remounted_ro, __ATOMIC_SEQ_CST) ||
	    journal_aborted(fs->journal))
		return -EROFS;
	return 0;
}

/* The counter goes up before the check, and a remount,ro sets its flag
 * before it reads the counter (both sequentially consistent): either the
 * writer sees the flag, or the remount sees the writer and waits. */
int ordfs_write_enter(struct ordfs *fs)
{
	__atomic_add_fetch(&fs->writers_in, 1, __ATOMIC_SEQ_CST);
	int err = ordfs_writable(fs);
	if (err)
		ordfs_write_exit(fs);
	return err;
}

void ordfs_write_exit(struct ordfs *fs)
{
	uint32_t before = __atomic_fetch_sub(&fs->writers_in, 1, __ATOMIC_SEQ_CST);
	ORDFS_ASSERT(before > 0);
}

/* Directly into block 0, keeping what is on disk but the error fields. */
static int record_in_block0(struct ordfs *fs, int err)
{
	struct ordfs_super sb;
	const char *why;
	int rc = ordfs_read_super(fs->bd, false, &sb, &why);
	if (rc)
		return rc;
	sb.state |= ORDFS_STATE_ERROR;
	sb.last_error_code = (uint32_t)-err;
	sb.last_error_time = (uint64_t)ordfs_now().sec;
	rc = ordfs_write_super(fs->bd, &sb, false);
	if (!rc && FS_OPT(fs, barrier))
		rc = blockdev_flush(fs->bd);
	return rc;
}

void ordfs_record_error(struct ordfs *fs, int err)
{
	if (!fs->journal || __atomic_load_n(&fs->shut_down, __ATOMIC_ACQUIRE))
		return; /* read-only mount, or shut down: nothing may be written */
	ordfs_mutex_lock(&fs->sb_lock);
	bool first = !fs->error_recorded;
	fs->error_recorded = true;
	fs->sb.state |= ORDFS_STATE_ERROR;
	fs->sb.last_error_code = (uint32_t)-err;
	fs->sb.last_error_time = (uint64_t)ordfs_now().sec;
	ordfs_mutex_unlock(&fs->sb_lock);
	if (!first)
		return;

	int rc;
	if (!journal_aborted(fs->journal)) {
		struct handle *h;
		rc = journal_start(fs->journal, 1, &h);
		if (!rc) {
			ordfs_mutex_lock(&fs->sb_lock);
			rc = ordfs_write_super_journaled(fs, h);
			ordfs_mutex_unlock(&fs->sb_lock);
			int serr = journal_stop(h);
			if (!rc)
				rc = serr;
		}
		if (!rc)
			rc = journal_force_commit(fs->journal);
	} else {
		rc = record_in_block0(fs, err);
		int jrc = journal_record_error(fs->journal);
		if (!rc)
			rc = jrc;
	}
	if (rc)
		ordfs_log(LOG_ERR, "could not record the error in the superblock (%s)",
			  strerror(-rc));
}

/* errors=: what to do about an error that is not the device's. */
static void apply_errors_policy(struct ordfs *fs, int err)
{
	switch (FS_OPT(fs, errors)) {
	case ORDFS_ERRORS_RO:
		journal_abort(fs->journal, err);
		ordfs_record_error(fs, err);
		break;
	case ORDFS_ERRORS_ABORT:
		journal_abort(fs->journal, err);
		ordfs_mutex_lock(&fs->sb_lock);
		bool first = !fs->stopped;
		fs->stopped = true;
		ordfs_mutex_unlock(&fs->sb_lock);
		if (first && fs->opts.fatal)
			fs->opts.fatal(fs->opts.fatal_ctx, err);
		break;
	default: /* continue */
		ordfs_record_error(fs, err);
		break;
	}
}

int ordfs_error_corruption(struct ordfs *fs, int err, const char *what)
{
	ordfs_log(LOG_ERR, "metadata corruption: %s (%s)", what, strerror(-err));
	if (fs->journal)
		apply_errors_policy(fs, err);
	return err;
}

int ordfs_report_error(struct ordfs *fs, int err, const char *what)
{
	if (err == -EUCLEAN)
		return ordfs_error_corruption(fs, err, what);
	return err;
}

void ordfs_error_internal(struct ordfs *fs, int err)
{
	/* The journal has aborted already: errors=continue cannot continue,
	 * but the error is recorded so the next mount asks for fsck. */
	apply_errors_policy(fs, err);
}
