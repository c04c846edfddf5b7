/*
 * flags.c - file flags as operations (ops.h): reading and changing an
 * inode's flags (FS_IOC_GETFLAGS / SETFLAGS, FSGETXATTR / FSSETXATTR in
 * the daemon), the open check, and "durable before it returns" for S and
 * D (file.h).  What each flag means is src/inode/iflags.h's; this file
 * applies it.
 *
 * Rules:
 *  - A change of flags is a journaled inode update like any setattr: one
 *    handle, ctime set, decided (iflags_may_set) under the inode's lock
 *    before the handle starts.  The first flag stored on an image sets the
 *    superblock's FILE_FLAGS ro_compat feature in the same handle, so no
 *    image holds a flag without it.
 *  - Changing j writes the file's dirty pages back first, by the route of
 *    the data mode they were written under, as ext4 writes a file back
 *    before it switches its journaling mode.  ext4 also empties the
 *    journal when j goes; ordfs needs not: a block with a logged copy has
 *    a cached buffer and is written through the log in every mode
 *    (design/write-routes.md, "coherence"), and freed data blocks are
 *    revoked in every mode
 *    [J6].
 *  - j changes only for a caller with cap_sys_resource (ext4's
 *    CAP_SYS_RESOURCE; the daemon also counts CAP_SYS_ADMIN), after the
 *    owner and CAP_LINUX_IMMUTABLE rules (iflags_may_set).
 *  - With S set before or after the change, the change is committed before
 *    the call returns (ext4's IS_SYNC handles).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "fs.h"
#include "file.h"
#include "ops.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "journal/journal.h"
#include "base/ordfs_assert.h"
#include "lock/lock.h"
#include "super/super.h"
#include "writeback/writeback.h"

uint32_t ordfs_get_flags(struct ordfs *fs, struct inode *inode)
{
	(void)fs;
	ordfs_rwlock_rdlock(&inode->lock);
	uint32_t flags = inode->d.attr_flags;
	ordfs_rwlock_unlock(&inode->lock);
	return flags;
}

int ordfs_open_check(struct ordfs *fs, struct inode *inode, int open_flags)
{
	(void)fs;
	bool writes = (open_flags & O_ACCMODE) != O_RDONLY;
	ordfs_rwlock_rdlock(&inode->lock);
	uint32_t flags = inode->d.attr_flags;
	ordfs_rwlock_unlock(&inode->lock);
	int err = 0;
	/* may_open: O_TRUNC with any access mode truncates */
	if (open_flags & O_TRUNC)
		err = iflags_refuses(flags, IFLAGS_TRUNCATE);
	if (!err && writes)
		err = iflags_refuses(flags, (open_flags & O_APPEND) ? IFLAGS_APPEND : IFLAGS_WRITE);
	return err;
}

int file_sync_after(struct ordfs *fs, struct inode *inode, bool sync, int err)
{
	if (err || !sync)
		return err;
	return ordfs_fsync(fs, inode, false);
}

/* The new flags into the inode, in one handle (and the feature into the
 * superblock with the first flag).  inode->lock held exclusively. */
static int write_flags(struct ordfs *fs, struct inode *inode, uint32_t flags)
{
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS + 1, &h);
	if (err)
		return err;
	if (flags)
		err = ordfs_super_require_ro_compat(fs, h, ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS);
	if (!err) {
		/* Never a flag the type may not carry, never one without the
		 * superblock's feature (FORMAT.md, "File flags"). */
		ORDFS_ASSERT(!(flags & ~iflags_allowed(inode->d.mode)));
		ORDFS_ASSERT(!flags ||
			     ordfs_super_has_ro_compat(fs, ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS));
		uint32_t old = inode->d.attr_flags;
		inode->d.attr_flags = flags;
		inode->d.ctime = ordfs_now();
		err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
		if (err)
			inode->d.attr_flags = old; /* the slot was not written */
	}
	int serr = journal_stop(h);
	return err ? err : serr;
}

int ordfs_set_flags(struct ordfs *fs, struct inode *inode, uint32_t flags, uint32_t mask,
		    const struct ordfs_flags_caller *caller)
{
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro, shut down or aborted */
		return -EROFS;
	ordfs_rwlock_wrlock(&inode->lock);
	uint32_t old = inode->d.attr_flags;
	uint32_t new_flags = (old & ~mask) | (flags & mask);
	struct iflags_who who = { true, true, true };
	if (caller) {
		who.owner = caller->uid == inode->d.uid;
		who.cap_fowner = caller->cap_fowner;
		who.cap_linux_immutable = caller->cap_linux_immutable;
	}
	int err = iflags_may_set(inode->d.mode, old, new_flags, &who);
	/* ext4_ioctl_setflags: j costs log room and every write twice */
	if (!err && caller && ((old ^ new_flags) & ORDFS_FL_JOURNAL_DATA) && !caller->cap_sys_resource)
		err = -EPERM;
	/* Pages written under one data mode go out by its routes. */
	if (!err && ((old ^ new_flags) & ORDFS_FL_JOURNAL_DATA) && S_ISREG(inode->d.mode) &&
	    pages_has_dirty(inode))
		err = writeback_file_locked(fs, inode, false);
	if (!err)
		err = write_flags(fs, inode, new_flags);
	ordfs_rwlock_unlock(&inode->lock);
	return file_sync_after(fs, inode, iflags_sync(old | new_flags), err);
}
