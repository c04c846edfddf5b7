/*
 * touch.c - applying the access-time policy: the only place a read turns
 * into a write.
 *
 * Owns: atime_touch (after a read, readdir or readlink), the lazytime
 * bookkeeping (inode->atime_dirty) and writing lazily kept atimes.
 * Rules (atime.h has the policy itself):
 *  - The decision is made again under the inode's write lock, so two
 *    racing readers update once; an inode flagged A (chattr +A) is never
 *    updated (atime_policy_for).
 *  - Without lazytime the update is its own handle, written without
 *    INODE_WRITE_DATASYNC: it rides the running transaction, never forces
 *    a commit, and fdatasync does not wait for it.
 *  - With lazytime the value is kept in memory only: getattr shows it at
 *    once; inode_write (any other change, fsync) takes it along; sync,
 *    unmount and a 24-hour age write it; an inode holding one is not
 *    dropped from the inode cache.
 *  - Nothing happens on a read-only mount or once the journal has aborted
 *    (a read never fails because its atime could not be written).
 */
#include <errno.h>
#include <time.h>

#include "atime.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../journal/journal.h"
#include "../lock/lock.h"

static bool is_dir(const struct inode *inode)
{
	return (inode->d.mode & 0170000) == 0040000;
}

static int write_inode_times(struct ordfs *fs, struct inode *inode)
{
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
	if (err)
		return err;
	err = inode_write(fs, h, inode, 0); /* not a datasync change */
	int serr = journal_stop(h);
	return err ? err : serr;
}

int atime_touch(struct ordfs *fs, struct inode *inode)
{
	const struct atime_policy mount = fs_atime_policy(fs);
	if (mount.mode == ATIME_NOATIME || ordfs_writable(fs) != 0)
		return 0;

	ordfs_rwlock_wrlock(&inode->lock);
	struct atime_policy p; /* the mount's, or noatime for a file flagged A */
	atime_policy_for(&mount, inode->d.attr_flags, &p);
	struct ordfs_timespec now = ordfs_now();
	int err = 0;
	if (inode->d.links > 0 &&
	    atime_needs_update(&p, is_dir(inode), inode->d.atime, inode->d.mtime, inode->d.ctime,
			       now)) {
		inode->d.atime = now;
		if (p.lazytime) {
			if (!inode->atime_dirty)
				inode->atime_dirty_since = now.sec;
			__atomic_store_n(&inode->atime_dirty, true, __ATOMIC_RELAXED);
		} else {
			err = write_inode_times(fs, inode);
			if (err) {
				/* Kept in memory like a lazy one: the next write
				 * of the inode, sync or unmount takes it along. */
				__atomic_store_n(&inode->atime_dirty, true, __ATOMIC_RELAXED);
				inode->atime_dirty_since = now.sec;
			}
		}
	}
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}

int atime_write_pending(struct ordfs *fs, struct inode *inode)
{
	if (!inode->atime_dirty || !fs->journal)
		return 0;
	return write_inode_times(fs, inode);
}

struct lazy_scan {
	bool all;
	int64_t now;
};

static int write_if_due(struct ordfs *fs, struct inode *inode, void *ctx)
{
	const struct lazy_scan *scan = ctx;
	/* A racy peek; the decision is made again under the lock. */
	if (!__atomic_load_n(&inode->atime_dirty, __ATOMIC_RELAXED))
		return 0;
	ordfs_rwlock_wrlock(&inode->lock);
	int err = 0;
	if (inode->atime_dirty && inode->d.links > 0 &&
	    (scan->all || scan->now - inode->atime_dirty_since >= ATIME_RELATIME_MAX_AGE_SEC))
		err = write_inode_times(fs, inode);
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}

int atime_write_lazy(struct ordfs *fs, bool all)
{
	if (!fs->journal)
		return 0;
	struct lazy_scan scan = { all, ordfs_now().sec };
	return inode_cache_for_each(fs, write_if_due, &scan);
}
