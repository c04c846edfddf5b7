/*
 * rename.c - rename(2), with RENAME_NOREPLACE and RENAME_EXCHANGE.
 *
 * Rules (namei.c has the namespace's):
 *  - Renames across directories take fs->rename_lock first, then the
 *    directories (an ancestor before its descendant, else by inode
 *    number), then the non-directories by inode number.
 *  - Every check (a directory moved under itself, replacing a non-empty
 *    directory, types that do not match) is made before the handle; the
 *    names, link counts and ".." change in one handle.
 *  - A file replaced by a rename over it has its data written back first
 *    when it was written without fsync (the replace-via-rename pattern).
 *  - The entries are untrusted (namei.c): one naming its own directory or
 *    the root is -EUCLEAN before any further lock, a directory whose '..'
 *    is not the directory naming it -EUCLEAN with all locks taken, and
 *    the loop check's walk up '..' is bounded and finds cycles.
 *  - File flags (iflags.h, may_delete and may_create): neither the moved
 *    inode nor the one it replaces may be flagged i or a; the old
 *    directory, and the new one when a name there is replaced, may be
 *    neither; the new one takes a new name unless flagged i.  Asked with
 *    every inode locked.  A rename in a directory flagged D or S is
 *    durable before it returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <stdio.h>
#include <linux/fs.h>

#include "fs.h"
#include "super/super.h"
#include "namei_internal.h"
#include "writeback/writeback.h"
#include "inode/pages.h"
#include "orphan/enospc.h"
#include "atime/atime.h"
#include "file/file.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "ops.h"
#include "alloc/alloc.h"
#include "cache/bcache.h"
#include "dir/dir.h"
#include "extent/extent.h"
#include "journal/journal.h"
#include "xattr/acl.h"
#include "xattr/xattr.h"
#include "orphan/orphan.h"
#include "base/log.h"
#include "lock/lock.h"

/* ---- rename ---------------------------------------------------------------- */

/* -EINVAL if moving src under newdir would put src inside itself.  Walks
 * ".." from newdir to the root; rename_lock keeps the tree still.  The
 * walk trusts no '..': it ends at the root, at src, or at damage
 * (-EUCLEAN: a '..' naming itself, nothing, or a cycle), found with
 * Brent's method, so a cycle costs a few times its length, not a walk over
 * every inode. */
static int check_not_ancestor(struct ordfs *fs, struct inode *src, struct inode *newdir)
{
	uint32_t cur = newdir->ino, mark = cur;
	uint64_t power = 1, run = 0;
	for (uint64_t steps = 0; steps <= fs->sb.inode_count; steps++) {
		if (cur == src->ino)
			return -EINVAL;
		if (cur == ORDFS_ROOT_INO)
			return 0;
		struct inode *p;
		int err = inode_get(fs, cur, &p);
		if (err)
			return err == -ENOENT ? namei_corrupt("directory %u: a '..' on the way to "
							      "the root names free inode %u",
							      newdir->ino, cur)
					      : err;
		uint32_t parent = __atomic_load_n(&p->d.parent, __ATOMIC_RELAXED);
		inode_put(fs, p);
		if (parent == 0 || parent == cur)
			return namei_corrupt("directory %u: its '..' names %s", cur,
					     parent ? "itself" : "nothing");
		cur = parent;
		if (cur == mark)
			return namei_corrupt("directory %u: the '..' chain above it loops through "
					     "directory %u", newdir->ino, cur);
		if (++run == power) { /* Brent: the mark moves on at powers of two */
			mark = cur;
			power *= 2;
			run = 0;
		}
	}
	return namei_corrupt("directory %u: the '..' chain above it does not reach the root",
			     newdir->ino);
}

struct rename_ctx {
	struct inode *olddir, *newdir, *src, *dst;
	const char *oldname, *newname;
	size_t oldlen, newlen;
};

static int rename_checks(struct ordfs *fs, struct rename_ctx *rc)
{
	if (rc->dst == rc->olddir || rc->dst == rc->newdir || rc->src == rc->newdir)
		return -EINVAL;
	if (namei_is_dir(rc->src) && rc->olddir != rc->newdir) {
		int err = check_not_ancestor(fs, rc->src, rc->newdir);
		if (!err)
			err = namei_check_subdir_link(rc->olddir);
		if (err)
			return err;
	}
	if (!rc->dst)
		return 0;
	if (namei_is_dir(rc->src) && !namei_is_dir(rc->dst))
		return -ENOTDIR;
	if (!namei_is_dir(rc->src) && namei_is_dir(rc->dst))
		return -EISDIR;
	if (namei_is_dir(rc->dst)) {
		int empty = dir_is_empty(fs, rc->dst);
		return empty < 0 ? empty : empty ? namei_check_subdir_link(rc->newdir) : -ENOTEMPTY;
	}
	return 0;
}

/* Both directories of a rename changed: times and inodes (once if same). */
static int write_rename_dirs(struct ordfs *fs, struct handle *h, struct rename_ctx *rc)
{
	namei_touch_dir(rc->olddir);
	namei_touch_dir(rc->newdir);
	int err = inode_write(fs, h, rc->olddir, INODE_WRITE_DATASYNC);
	if (!err && rc->newdir != rc->olddir)
		err = inode_write(fs, h, rc->newdir, INODE_WRITE_DATASYNC);
	return err;
}

/* The changes of a rename, in one handle.  The only step that can fail
 * for lack of space (adding the new name) comes first. */
static int rename_apply(struct ordfs *fs, struct handle *h, struct rename_ctx *rc)
{
	uint8_t type = namei_dtype_of(rc->src->d.mode);
	int err;

	if (rc->dst)
		err = dir_replace(fs, h, rc->newdir, rc->newname, rc->newlen, rc->src->ino, type);
	else
		err = dir_add(fs, h, rc->newdir, rc->newname, rc->newlen, rc->src->ino, type);
	if (err)
		return err;

	err = dir_remove(fs, h, rc->olddir, rc->oldname, rc->oldlen, NULL);
	if (!err && rc->dst) {
		if (namei_is_dir(rc->dst))
			rc->newdir->d.links--;
		err = namei_drop_link(fs, h, rc->dst);
	}
	if (!err && namei_is_dir(rc->src) && rc->olddir != rc->newdir) {
		rc->src->d.parent = rc->newdir->ino;
		rc->olddir->d.links--;
		rc->newdir->d.links++;
	}
	if (!err) {
		rc->src->d.ctime = ordfs_now();
		err = inode_write(fs, h, rc->src, INODE_WRITE_DATASYNC);
	}
	if (!err)
		err = write_rename_dirs(fs, h, rc);
	if (err)
		journal_abort_half_done(fs->journal, err);
	return err;
}

/* RENAME_EXCHANGE: both names exist; neither directory may end up inside
 * itself. */
static int exchange_checks(struct ordfs *fs, struct rename_ctx *rc)
{
	if (rc->dst == rc->olddir || rc->dst == rc->newdir || rc->src == rc->newdir ||
	    rc->src == rc->olddir)
		return -EINVAL;
	if (rc->olddir == rc->newdir)
		return 0;
	int err = 0;
	if (namei_is_dir(rc->src))
		err = check_not_ancestor(fs, rc->src, rc->newdir);
	if (!err && namei_is_dir(rc->dst))
		err = check_not_ancestor(fs, rc->dst, rc->olddir);
	/* each directory moved out takes a link from its old parent */
	if (!err && namei_is_dir(rc->src))
		err = namei_check_subdir_link(rc->olddir);
	if (!err && namei_is_dir(rc->dst))
		err = namei_check_subdir_link(rc->newdir);
	return err;
}

/* Swaps two names atomically: each entry now points at the other inode;
 * directories moved across parents take their ".." and link counts along. */
static int exchange_apply(struct ordfs *fs, struct handle *h, struct rename_ctx *rc)
{
	int err = dir_replace(fs, h, rc->olddir, rc->oldname, rc->oldlen, rc->dst->ino,
			      namei_dtype_of(rc->dst->d.mode));
	if (err)
		return err; /* nothing changed yet */
	err = dir_replace(fs, h, rc->newdir, rc->newname, rc->newlen, rc->src->ino,
			  namei_dtype_of(rc->src->d.mode));
	if (!err && rc->olddir != rc->newdir) {
		if (namei_is_dir(rc->src)) {
			rc->src->d.parent = rc->newdir->ino;
			rc->olddir->d.links--;
			rc->newdir->d.links++;
		}
		if (namei_is_dir(rc->dst)) {
			rc->dst->d.parent = rc->olddir->ino;
			rc->newdir->d.links--;
			rc->olddir->d.links++;
		}
	}
	struct ordfs_timespec now = ordfs_now();
	rc->src->d.ctime = rc->dst->d.ctime = now;
	if (!err)
		err = inode_write(fs, h, rc->src, INODE_WRITE_DATASYNC);
	if (!err)
		err = inode_write(fs, h, rc->dst, INODE_WRITE_DATASYNC);
	if (!err)
		err = write_rename_dirs(fs, h, rc);
	if (err)
		journal_abort_half_done(fs->journal, err);
	return err;
}

/* May the file flags of the four inodes have this rename (an exchange
 * has a dst)?  Every one of them locked. */
static int rename_flags_allow(const struct rename_ctx *rc)
{
	int err = iflags_refuses(rc->olddir->d.attr_flags, IFLAGS_DIR_REMOVE);
	if (!err)
		err = iflags_refuses(rc->src->d.attr_flags, IFLAGS_UNLINK);
	if (!err && rc->dst)
		err = iflags_refuses(rc->newdir->d.attr_flags, IFLAGS_DIR_REMOVE);
	if (!err && rc->dst)
		err = iflags_refuses(rc->dst->d.attr_flags, IFLAGS_UNLINK);
	if (!err && !rc->dst)
		err = iflags_refuses(rc->newdir->d.attr_flags, IFLAGS_DIR_ADD);
	return err;
}

static void lock_pair(struct inode *a, struct inode *b)
{
	if (!b || a == b) {
		ordfs_rwlock_wrlock(&a->lock);
		return;
	}
	struct inode *first = a->ino < b->ino ? a : b;
	ordfs_rwlock_wrlock(&first->lock);
	ordfs_rwlock_wrlock(&(first == a ? b : a)->lock);
}

static void unlock_pair(struct inode *a, struct inode *b)
{
	ordfs_rwlock_unlock(&a->lock);
	if (b && b != a)
		ordfs_rwlock_unlock(&b->lock);
}

static int rename_once(struct ordfs *fs, struct inode *olddir, const char *oldname,
		       struct inode *newdir, const char *newname, unsigned flags,
		       struct inode **sync_dir)
{
	struct rename_ctx rc = { olddir, newdir, NULL, NULL, oldname, newname,
				 strlen(oldname), strlen(newname) };
	uint32_t ino;
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL; /* RENAME_WHITEOUT is for overlay filesystems */
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro or aborted */
		return -EROFS;
	if (!namei_is_dir(olddir) || !namei_is_dir(newdir))
		return -ENOTDIR;
	if ((err = dir_check_name(oldname, rc.oldlen)) || (err = dir_check_name(newname, rc.newlen)))
		return err;

	bool cross = olddir != newdir;
	if (cross)
		ordfs_mutex_lock(&fs->rename_lock);
	lock_pair(olddir, cross ? newdir : NULL);

	err = dir_lookup(fs, olddir, oldname, rc.oldlen, &ino, NULL);
	if (!err)
		err = inode_get(fs, ino, &rc.src);
	if (!err) {
		err = dir_lookup(fs, newdir, newname, rc.newlen, &ino, NULL);
		if (!err)
			err = inode_get(fs, ino, &rc.dst);
		else if (err == -ENOENT)
			err = 0;
	}
	/* Never a second lock of a directory, nor the root under one. */
	if (!err)
		err = namei_check_entry_ino(olddir, oldname, rc.oldlen, rc.src->ino);
	if (!err && rc.dst)
		err = namei_check_entry_ino(newdir, newname, rc.newlen, rc.dst->ino);
	if (!err && rc.dst && (flags & RENAME_NOREPLACE))
		err = -EEXIST;
	if (!err && !rc.dst && (flags & RENAME_EXCHANGE))
		err = -ENOENT;
	if (!err && rc.dst == rc.src)
		goto out; /* same inode: nothing to do, as POSIX says */
	if (!err)
		err = (flags & RENAME_EXCHANGE) ? exchange_checks(fs, &rc) : rename_checks(fs, &rc);
	if (err)
		goto out;

	lock_pair(rc.src, rc.dst);
	err = namei_check_child_locked(olddir, oldname, rc.oldlen, rc.src);
	if (!err && rc.dst)
		err = namei_check_child_locked(newdir, newname, rc.newlen, rc.dst);
	if (!err)
		err = rename_flags_allow(&rc);
	if (err) {
		unlock_pair(rc.src, rc.dst);
		goto out;
	}
	*sync_dir = iflags_dirsync(olddir->d.attr_flags)   ? olddir
		    : iflags_dirsync(newdir->d.attr_flags) ? newdir
							   : NULL;
	if (rc.dst && S_ISREG(rc.src->d.mode) && pages_has_dirty(rc.src)) {
		/* auto_da_alloc, as ext4: "write a new file, rename it over the
		 * old one" without fsync must never leave an empty file.  The
		 * new file's data is written (and its allocation recorded) before
		 * the rename's handle, so the rename commits after it [J1]. */
		err = writeback_file_locked(fs, rc.src, false);
		if (err) {
			unlock_pair(rc.src, rc.dst);
			goto out;
		}
	}
	struct handle *h;
	err = journal_start(fs->journal, 2 * dir_credits(fs, newdir) + 12, &h);
	if (!err) {
		err = (flags & RENAME_EXCHANGE) ? exchange_apply(fs, h, &rc) : rename_apply(fs, h, &rc);
		int serr = journal_stop(h);
		if (!err)
			err = serr;
	}
	unlock_pair(rc.src, rc.dst);
out:
	unlock_pair(olddir, cross ? newdir : NULL);
	if (cross)
		ordfs_mutex_unlock(&fs->rename_lock);
	if (rc.src)
		inode_put(fs, rc.src);
	if (rc.dst)
		inode_put(fs, rc.dst);
	return err;
}

int ordfs_rename(struct ordfs *fs, struct inode *olddir, const char *oldname,
		 struct inode *newdir, const char *newname, unsigned flags)
{
	int err;
	unsigned retries = 0;
	struct inode *sync_dir = NULL; /* a directory flagged D or S */
	do /* the new name may need a new directory block */
		err = rename_once(fs, olddir, oldname, newdir, newname, flags, &sync_dir);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	/* Both directories changed in one handle: either one's fsync waits
	 * for it. */
	return file_sync_after(fs, sync_dir, sync_dir != NULL, err);
}
