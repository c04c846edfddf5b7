/*
 * attr.c - attributes: stat, setattr (mode, owner, size, times), statfs.
 *
 * Owns: the translation between an inode and struct stat, and attribute
 * changes.  Rules: every change runs in one handle and sets ctime; a size
 * change goes through truncate (truncate.c); UTIME_NOW/UTIME_OMIT semantics
 * are the caller's flags (ORDFS_SET_ATIME_NOW, ...); chown and chmod by
 * anyone but root clear set-user-ID and set-group-ID as Linux does; chmod
 * of an inode with an access ACL rewrites the ACL's USER_OBJ, MASK (or
 * GROUP_OBJ) and OTHER in the same handle (acl.h), decided before it.
 * The file flags are asked first (iflags.h): i refuses every change, a
 * all but times set to now; with S the change is committed before
 * setattr returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "super/super.h"
#include "inode/pages.h"
#include "file.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "ops.h"
#include "xattr/acl.h"
#include "xattr/xattr.h"
#include "alloc/alloc.h"
#include "journal/journal.h"
#include "lock/lock.h"

void ordfs_getattr(struct ordfs *fs, struct inode *inode, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	ordfs_rwlock_rdlock(&inode->lock);
	st->st_ino = inode->ino;
	st->st_mode = inode->d.mode;
	st->st_nlink = inode->d.links;
	st->st_uid = inode->d.uid;
	st->st_gid = inode->d.gid;
	st->st_rdev = inode->d.rdev;
	/* Regular files: the size users see (delayed data included); others:
	 * the size on disk (directories change it themselves). */
	st->st_size = (off_t)(S_ISREG(inode->d.mode) ? inode->size : inode->d.size);
	st->st_blksize = fs->block_size;
	/* st_blocks counts 512-byte units of allocated and delayed blocks. */
	st->st_blocks = (blkcnt_t)(pages_st_blocks(inode) * (fs->block_size / 512));
	st->st_atim.tv_sec = inode->d.atime.sec;
	st->st_atim.tv_nsec = inode->d.atime.nsec;
	st->st_mtim.tv_sec = inode->d.mtime.sec;
	st->st_mtim.tv_nsec = inode->d.mtime.nsec;
	st->st_ctim.tv_sec = inode->d.ctime.sec;
	st->st_ctim.tv_nsec = inode->d.ctime.nsec;
	ordfs_rwlock_unlock(&inode->lock);
}

static bool valid_time(struct ordfs_timespec t)
{
	return t.nsec < 1000000000u;
}

/* May a setattr of these fields change an inode with these file flags?
 * (notify_change, do_truncate: times set to now only need the inode not
 * to be immutable.) */
static int setattr_allowed(uint32_t flags, unsigned valid)
{
	int err = 0;
	if (valid & ORDFS_SET_SIZE)
		err = iflags_refuses(flags, IFLAGS_TRUNCATE);
	bool explicit_times = ((valid & ORDFS_SET_ATIME) && !(valid & ORDFS_SET_ATIME_NOW)) ||
			      ((valid & ORDFS_SET_MTIME) && !(valid & ORDFS_SET_MTIME_NOW));
	if (!err && ((valid & (ORDFS_SET_MODE | ORDFS_SET_UID | ORDFS_SET_GID)) || explicit_times))
		err = iflags_refuses(flags, IFLAGS_ATTR);
	if (!err && (valid & (ORDFS_SET_ATIME | ORDFS_SET_MTIME)))
		err = iflags_refuses(flags, IFLAGS_TOUCH);
	return err;
}

static int setattr_writable(struct ordfs *fs, struct inode *inode,
			    const struct ordfs_setattr *sa)
{
	if (((sa->valid & ORDFS_SET_ATIME) && !valid_time(sa->atime)) ||
	    ((sa->valid & ORDFS_SET_MTIME) && !valid_time(sa->mtime)))
		return -EINVAL;

	ordfs_rwlock_wrlock(&inode->lock);
	uint8_t *acl = NULL; /* chmod: the access ACL's new value, if it has one */
	uint32_t acl_len = 0;
	bool sync = iflags_sync(inode->d.attr_flags);
	int err = setattr_allowed(inode->d.attr_flags, sa->valid);
	if (!err && (sa->valid & ORDFS_SET_MODE))
		err = acl_chmod_prepare(fs, inode,
					(uint16_t)((inode->d.mode & S_IFMT) | (sa->mode & 07777)),
					&acl, &acl_len);
	if (err)
		goto out;
	if (sa->valid & ORDFS_SET_SIZE) {
		if (S_ISDIR(inode->d.mode))
			err = -EISDIR;
		else if (!S_ISREG(inode->d.mode))
			err = -EINVAL;
		else
			err = ordfs_truncate_locked(fs, inode, sa->size);
	}
	if (err)
		goto out;

	struct handle *h;
	err = journal_start(fs->journal, INODE_WRITE_CREDITS + (acl ? xattr_credits(fs) : 0), &h);
	if (err)
		goto out;
	if (acl) {
		/* First, so a failure before its first change leaves all as it was. */
		err = xattr_set_ns_handle(fs, h, inode, ORDFS_XATTR_NS_POSIX_ACL_ACCESS, acl, acl_len);
		if (err) {
			journal_stop(h);
			goto out;
		}
	}
	struct ordfs_timespec now = ordfs_now();
	if (sa->valid & ORDFS_SET_MODE)
		inode->d.mode = (uint16_t)((inode->d.mode & S_IFMT) | (sa->mode & 07777));
	if (sa->valid & (ORDFS_SET_UID | ORDFS_SET_GID)) {
		if (sa->valid & ORDFS_SET_UID)
			inode->d.uid = sa->uid;
		if (sa->valid & ORDFS_SET_GID)
			inode->d.gid = sa->gid;
		/* chown clears set-user-ID, and set-group-ID when group-executable
		 * (a non-group-executable SGID marks mandatory locking). */
		if (!S_ISDIR(inode->d.mode)) {
			inode->d.mode &= (uint16_t)~S_ISUID;
			if (inode->d.mode & S_IXGRP)
				inode->d.mode &= (uint16_t)~S_ISGID;
		}
	}
	if (sa->valid & ORDFS_SET_ATIME)
		inode->d.atime = (sa->valid & ORDFS_SET_ATIME_NOW) ? now : sa->atime;
	if (sa->valid & ORDFS_SET_MTIME)
		inode->d.mtime = (sa->valid & ORDFS_SET_MTIME_NOW) ? now : sa->mtime;
	inode->d.ctime = now;
	err = inode_write(fs, h, inode, (sa->valid & ~(ORDFS_SET_ATIME | ORDFS_SET_MTIME |
						      ORDFS_SET_ATIME_NOW |
						      ORDFS_SET_MTIME_NOW))
						? INODE_WRITE_DATASYNC
						: 0);
	if (err && acl)
		journal_abort(fs->journal, err); /* never the ACL without the mode */
	int serr = journal_stop(h);
	if (!err)
		err = serr;
out:
	ordfs_rwlock_unlock(&inode->lock);
	free(acl);
	return file_sync_after(fs, inode, sync, err);
}

/* A size change may dirty the EOF page: a writer for a remount,ro. */
int ordfs_setattr(struct ordfs *fs, struct inode *inode, const struct ordfs_setattr *sa)
{
	int err = ordfs_write_enter(fs);
	if (err)
		return err;
	err = setattr_writable(fs, inode, sa);
	ordfs_write_exit(fs);
	return err;
}

void ordfs_statfs(struct ordfs *fs, struct ordfs_statfs *out)
{
	struct alloc_counts c;
	alloc_get_counts(fs->alloc, &c);
	out->block_size = fs->block_size;
	out->blocks = fs_block_count(fs);
	out->blocks_free = c.free_blocks + c.pending_free;
	out->blocks_avail = c.data_blocks;
	out->inodes = fs->sb.inode_count;
	out->inodes_free = c.free_inodes;
	out->name_max = ORDFS_NAME_MAX;
}

int ordfs_drop_privs(struct ordfs *fs, struct inode *inode, const struct ordfs_caller *caller)
{
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro or aborted */
		return -EROFS;
	ordfs_rwlock_wrlock(&inode->lock);
	uint16_t mode = inode->d.mode;
	/* Dropping set-ID bits is notify_change's ATTR_KILL_*: only an
	 * immutable inode refuses it. */
	if (iflags_refuses(inode->d.attr_flags, IFLAGS_TOUCH) != 0) {
		ordfs_rwlock_unlock(&inode->lock);
		return -EPERM;
	}
	if (!caller->cap_fsetid) {
		mode &= (uint16_t)~S_ISUID;
		if ((mode & S_IXGRP) || !acl_keeps_setgid(caller, inode->d.gid))
			mode &= (uint16_t)~S_ISGID;
	}
	int err = 0;
	if (mode != inode->d.mode) {
		struct handle *h;
		err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
		if (!err) {
			inode->d.mode = mode;
			inode->d.ctime = ordfs_now();
			err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
		if (!err)
			err = 1;
	}
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}
