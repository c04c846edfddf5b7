/*
 * sync.c - fsync, fdatasync, fsyncdir and sync: making things durable, and
 * telling each open file description about write errors exactly once.
 *
 * Owns: ordfs_fsync, ordfs_sync and the per-open-file error cursor
 * (struct ordfs_file).  Rules:
 *  - fsync writes back the file's own pages (never another file's), then
 *    waits for the commit of the last transaction that changed the inode;
 *    fdatasync waits only for the last one that changed more than its
 *    timestamps.  Then it flushes the image, so in-place overwrites reach
 *    stable storage even when the commit's flushes were issued before
 *    they were written (the flush guard skips a flush when nothing was
 *    written since the last good one).
 *  - A write-back or commit failure is recorded in the inode's errseq
 *    before fsync returns it, so every other open file description of the
 *    file sees it once, and a file opened later sees an error nobody has
 *    seen yet (Linux errseq semantics).
 *  - Once the journal has aborted nothing more becomes durable: fsync of
 *    a file with anything still to write returns -EIO.
 *  - fsync writes a lazily kept atime (lazytime) with the inode; sync
 *    writes every one.
 *
 * Design: docs/design/journal.md (fsync = durable), flush.md.
 */
#include <errno.h>

#include "fs.h"
#include "writeback/writeback.h"
#include "inode/pages.h"
#include "inode/inode.h"
#include "../ops.h"
#include "../blockdev/blockdev.h"
#include "../journal/journal.h"
#include "../atime/atime.h"
#include "blockdev/guard.h"
#include "../lock/lock.h"

static bool is_regular(const struct inode *inode)
{
	return (inode->d.mode & 0170000) == 0100000;
}

/* The commit wait and the flush of an fsync or sync, with the sync gate
 * held: background writeback holds back meanwhile (gate.h).  The gate is
 * taken only now, after the caller's own writeback, so a sync blocked
 * behind a background writer's inode lock never holds that writer up. */
static int commit_and_flush(struct ordfs *fs, uint64_t tid, uint64_t mark)
{
	sync_gate_enter(&fs->sync_gate);
	struct journal_stats st;
	journal_get_stats(fs->journal, &st);
	int err = 0;
	if (tid > st.committed_tid)
		err = journal_commit_wait(fs->journal, tid);
	/* Then a flush for data written in place: the commit's own flushes
	 * may have been issued before that data was written (it was already
	 * committing).  Skipped when a flush that began after those writes
	 * has completed (usually the commit's own F2, or a concurrent
	 * fsync's flush). */
	if (!err && FS_OPT(fs, barrier))
		err = flush_guard_flush_since(fs->bd, mark);
	sync_gate_leave(&fs->sync_gate);
	return err;
}

static int fsync_timed(struct ordfs *fs, struct inode *inode, bool datasync);

int ordfs_fsync(struct ordfs *fs, struct inode *inode, bool datasync)
{
	uint64_t t0 = latency_now_ns();
	int err = fsync_timed(fs, inode, datasync);
	latency_record(&fs->fsync_latency, latency_now_ns() - t0);
	return err;
}

static int fsync_timed(struct ordfs *fs, struct inode *inode, bool datasync)
{
	if (!fs->journal)
		return 0;

	ordfs_rwlock_wrlock(&inode->lock);
	int err = 0;
	if (is_regular(inode) && pages_has_dirty(inode) && journal_aborted(fs->journal))
		err = -EIO; /* those pages can never be written now */
	else if (is_regular(inode))
		err = writeback_file_locked(fs, inode, true); /* takes a lazy atime along */
	else
		err = atime_write_pending(fs, inode);
	uint64_t tid = datasync ? inode->datasync_tid : inode->sync_tid;
	/* Every write of this file's data has completed by now. */
	uint64_t mark = flush_guard_mark(fs->bd);
	ordfs_rwlock_unlock(&inode->lock);

	if (!err)
		err = commit_and_flush(fs, tid, mark);
	if (err == -EROFS)
		err = -EIO; /* aborted with changes not yet durable */
	if (err && err != -ENOMEM)
		errseq_set(&inode->wb_err, err);
	return err;
}

int ordfs_sync(struct ordfs *fs)
{
	if (!fs->journal)
		return 0;
	int err = writeback_all(fs, true);
	int aerr = atime_write_lazy(fs, true);
	if (!err)
		err = aerr;
	uint64_t mark = flush_guard_mark(fs->bd);
	int cerr = commit_and_flush(fs, journal_running_tid(fs->journal), mark);
	return err ? err : cerr;
}

void ordfs_file_open(struct inode *inode, struct ordfs_file *f)
{
	f->wb_since = errseq_sample(&inode->wb_err);
}

int ordfs_file_fsync(struct ordfs *fs, struct inode *inode, struct ordfs_file *f,
		     bool datasync)
{
	int err = ordfs_fsync(fs, inode, datasync);
	int unseen = errseq_check_and_advance(&inode->wb_err, &f->wb_since);
	return unseen ? unseen : err;
}
