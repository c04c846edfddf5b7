/*
 * shutdown.c - FS_IOC_SHUTDOWN: stopping the filesystem as if the power
 * went, on request (ext4's and XFS's "going down"; xfstests' godown).
 *
 * Owns: ordfs_shutdown and the shut_down flag.  Rules:
 *  - The flag is set first: the daemon refuses every new operation with
 *    EIO from then on (daemon/fuse_ops.c, get_inode), and the journal's
 *    and the guard's error policies stay silent (mount.c): a shutdown is
 *    not an error of the image, records none and starts no remount-ro or
 *    abort.
 *  - What the flags ask to reach the image first reaches it, through the
 *    usual paths: SYNC writes back all data and commits (ordfs_sync);
 *    LOGFLUSH commits the running transaction (ordered data with it, as
 *    in any commit); NOLOGFLUSH nothing.
 *  - Then the flush guard is shut (nothing more reaches the image, whoever
 *    writes) and the journal aborted, so every handle still under way and
 *    every later one fails.  The image is left as a power cut there would
 *    leave it: the next mount replays the journal, and nothing committed
 *    is lost.
 *  - Not undone: the mount stays shut down until it is unmounted.
 */
#include <errno.h>

#include "fs.h"
#include "ops.h"
#include "base/log.h"
#include "blockdev/guard.h"
#include "journal/journal.h"

bool ordfs_is_shut_down(struct ordfs *fs)
{
	return __atomic_load_n(&fs->shut_down, __ATOMIC_ACQUIRE);
}

int ordfs_shutdown(struct ordfs *fs, enum ordfs_shutdown_how how)
{
	if (how != ORDFS_SHUTDOWN_SYNC && how != ORDFS_SHUTDOWN_LOGFLUSH &&
	    how != ORDFS_SHUTDOWN_NOLOGFLUSH)
		return -EINVAL;
	if (ordfs_is_shut_down(fs))
		return 0;
	/* SYNC: everything written so far goes home while operations still
	 * run (a freeze would refuse new writes first; close enough here:
	 * what is written during the sync may or may not make it). */
	int sync_err = how == ORDFS_SHUTDOWN_SYNC ? ordfs_sync(fs) : 0;
	if (__atomic_exchange_n(&fs->shut_down, true, __ATOMIC_ACQ_REL))
		return 0;
	struct journal *j = __atomic_load_n(&fs->journal, __ATOMIC_ACQUIRE);
	int commit_err = 0;
	if (j && how != ORDFS_SHUTDOWN_NOLOGFLUSH)
		commit_err = journal_force_commit(j);
	flush_guard_shut(fs->bd);
	if (j)
		journal_abort(j, -EIO);
	static const char *const what[] = {
		[ORDFS_SHUTDOWN_SYNC] = "after writing back everything",
		[ORDFS_SHUTDOWN_LOGFLUSH] = "after committing the journal",
		[ORDFS_SHUTDOWN_NOLOGFLUSH] = "without committing the journal",
	};
	ordfs_log(LOG_NOTICE, "shut down %s%s: every operation fails with EIO from now on; "
		  "the next mount replays the journal", what[how],
		  sync_err || commit_err ? " (which failed)" : "");
	return 0;
}
