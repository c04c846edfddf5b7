/*
 * namei.c - namespace operations: lookup, readdir, link, unlink, rmdir
 * (create.c: create, mkdir, mknod, symlink, readlink; rename.c: rename),
 * and the helpers they share (namei_internal.h).
 *
 * Owns: the rules that keep names, link counts and ".." consistent.
 *  - Each operation validates everything it can before its handle starts,
 *    then makes its changes in one handle (atomic across a crash).  A step
 *    that fails after the first change aborts the journal rather than
 *    commit half an operation.
 *  - Lock order: fs->rename_lock (cross-directory renames only) -> directory
 *    locks (parent before child; two unrelated directories by inode
 *    number) -> non-directory inodes by inode number -> journal_start ->
 *    fs->orphan_lock.
 *  - An inode whose link count drops to 0 goes on the orphan list in the
 *    same handle; its blocks and inode are freed when its last reference
 *    goes (orphan_evict), or at the next mount after a crash.
 *  - The orphan list itself is the orphan layer's (orphan/orphan.h).
 *  - A new inode's mode and ACLs are decided before the handle, under the
 *    directory's lock (acl_inherit_prepare: the directory's default ACL,
 *    or else the caller's umask); its xattr block comes out of a block
 *    reserved beforehand, so only I/O can fail after the name is added.
 *  - An entry is untrusted (design/locking.md): a directory it names
 *    is neither the directory holding it nor the root, and has that
 *    directory as its '..' (namei_check_child).  Checked before any lock
 *    of the named inode is taken under the directory's, so an image whose
 *    entries loop never makes a thread lock an inode twice or out of
 *    order: the request gets -EUCLEAN with a note naming both inodes.
 *  - File flags (iflags.h), asked under the locks before the handle: an
 *    inode flagged i or a loses no name and gets no new one; a directory
 *    flagged i takes no new name and a or i loses none; a change of names
 *    in a directory flagged D or S is durable before it returns
 *    (file_sync_after).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <stdio.h>
#include <linux/fs.h>
#include <stdarg.h>

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

uint8_t namei_dtype_of(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	default: return DT_UNKNOWN;
	}
}

bool namei_is_dir(const struct inode *inode)
{
	return S_ISDIR(inode->d.mode);
}

void namei_touch_dir(struct inode *dir)
{
	dir->d.mtime = dir->d.ctime = ordfs_now();
}

/* ---- entries that name directories ------------------------------------------ */

static __thread char corruption_note[200];
static __thread bool corruption_noted;

const char *ordfs_take_corruption_note(void)
{
	if (!corruption_noted)
		return NULL;
	corruption_noted = false;
	return corruption_note;
}

int namei_corrupt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(corruption_note, sizeof(corruption_note), fmt, ap);
	va_end(ap);
	corruption_noted = true;
	return -EUCLEAN;
}

int namei_check_subdir_link(const struct inode *dir)
{
	if (dir->d.links >= 3)
		return 0;
	return namei_corrupt("directory %u: link count %u, too low for the subdirectory it "
			     "is to lose", dir->ino, dir->d.links);
}

/* The entry name -> ino of dir names dir itself or the root: never right,
 * and known without looking at the inode. */
int namei_check_entry_ino(const struct inode *dir, const char *name, size_t len, uint32_t ino)
{
	if (ino == dir->ino)
		return namei_corrupt("directory %u: entry \"%.*s\" names the directory itself",
				     dir->ino, (int)len, name);
	if (ino == ORDFS_ROOT_INO)
		return namei_corrupt("directory %u: entry \"%.*s\" names the root", dir->ino,
				     (int)len, name);
	return 0;
}

/* A directory named in dir must have dir as its '..'.  child was found
 * under dir's lock, which is no longer held; no lock is held.  Its type
 * and '..' are read under its own lock; a mismatch is confirmed under
 * dir's lock, where the '..' of a directory dir really holds cannot change
 * (a rename that moves it holds dir's lock), so a rename meanwhile is
 * never taken for damage: -EAGAIN if the name has moved on. */
int ordfs_check_entry(struct ordfs *fs, struct inode *dir, const char *name, size_t len,
		      struct inode *child)
{
	int err = namei_check_entry_ino(dir, name, len, child->ino);
	if (err)
		return err;
	ordfs_rwlock_rdlock(&child->lock);
	bool is_dir = namei_is_dir(child);
	uint32_t parent = child->d.parent;
	ordfs_rwlock_unlock(&child->lock);
	if (!is_dir || parent == dir->ino)
		return 0;
	uint32_t now;
	ordfs_rwlock_rdlock(&dir->lock);
	err = dir_lookup(fs, dir, name, len, &now, NULL);
	bool same = !err && now == child->ino;
	/* Without child's lock: if dir holds child, no write of it can run
	 * now; if not, any value says the same. */
	if (same)
		parent = __atomic_load_n(&child->d.parent, __ATOMIC_RELAXED);
	ordfs_rwlock_unlock(&dir->lock);
	if (err && err != -ENOENT)
		return err;
	if (!same)
		return -EAGAIN;
	if (parent == dir->ino)
		return 0;
	return namei_corrupt("directory %u: entry \"%.*s\" names directory %u, whose '..' is %u",
			     dir->ino, (int)len, name, child->ino, parent);
}

/* The same with dir locked (either way) by the caller and child locked
 * too, or known not to be a directory. */
int namei_check_child_locked(const struct inode *dir, const char *name, size_t len,
			     const struct inode *child)
{
	int err = namei_check_entry_ino(dir, name, len, child->ino);
	if (!err && namei_is_dir(child) && child->d.parent != dir->ino)
		err = namei_corrupt("directory %u: entry \"%.*s\" names directory %u, whose "
				    "'..' is %u", dir->ino, (int)len, name, child->ino,
				    child->d.parent);
	return err;
}

int ordfs_lookup(struct ordfs *fs, struct inode *dir, const char *name, struct inode **out)
{
	size_t len = strlen(name);
	uint32_t ino;

	if (!namei_is_dir(dir))
		return -ENOTDIR;
	int err = dir_check_name(name, len);
	if (err)
		return err;
	/* A name that moves on while it is checked is looked up again (a
	 * rename each time: a few tries are plenty). */
	for (unsigned tries = 0;; tries++) {
		ordfs_rwlock_rdlock(&dir->lock);
		err = dir_lookup(fs, dir, name, len, &ino, NULL);
		ordfs_rwlock_unlock(&dir->lock);
		if (!err)
			err = namei_check_entry_ino(dir, name, len, ino);
		if (err)
			return err;
		struct inode *child;
		err = inode_get(fs, ino, &child);
		if (err)
			return err;
		err = ordfs_check_entry(fs, dir, name, len, child);
		if (!err) {
			*out = child;
			return 0;
		}
		inode_put(fs, child);
		if (err != -EAGAIN || tries >= 16)
			return err == -EAGAIN ? -ENOENT : err;
	}
}

int ordfs_lookup_parent(struct ordfs *fs, struct inode *dir, struct inode **out)
{
	ordfs_rwlock_rdlock(&dir->lock);
	bool is_dir = namei_is_dir(dir);
	uint32_t parent = dir->ino == ORDFS_ROOT_INO ? ORDFS_ROOT_INO : dir->d.parent;
	ordfs_rwlock_unlock(&dir->lock);
	if (!is_dir)
		return -ENOTDIR;
	if (parent == dir->ino && dir->ino != ORDFS_ROOT_INO)
		return namei_corrupt("directory %u: its '..' names itself", dir->ino);
	struct inode *p;
	int err = inode_get(fs, parent, &p);
	if (err == -ENOENT || err == -EINVAL)
		return namei_corrupt("directory %u: its '..' names inode %u, which is %s", dir->ino,
				     parent, err == -ENOENT ? "free" : "out of range");
	if (err)
		return err;
	ordfs_rwlock_rdlock(&p->lock);
	is_dir = namei_is_dir(p);
	ordfs_rwlock_unlock(&p->lock);
	if (!is_dir) {
		inode_put(fs, p);
		return namei_corrupt("directory %u: its '..' names inode %u, not a directory",
				     dir->ino, parent);
	}
	*out = p;
	return 0;
}

/* What every change of a name in dir needs: a writable filesystem, a
 * directory, a valid name. */
int namei_check_change_in_dir(struct ordfs *fs, struct inode *dir, const char *name,
			      size_t len)
{
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro or aborted */
		return -EROFS;
	if (!namei_is_dir(dir))
		return -ENOTDIR;
	return dir_check_name(name, len);
}

int ordfs_lookup_path(struct ordfs *fs, const char *path, struct inode **out)
{
	char copy[4096];
	if (strlen(path) >= sizeof(copy))
		return -ENAMETOOLONG;
	strcpy(copy, path);
	struct inode *cur;
	int err = inode_get(fs, ORDFS_ROOT_INO, &cur);
	char *save = NULL;
	for (char *part = strtok_r(copy, "/", &save); part && !err;
	     part = strtok_r(NULL, "/", &save)) {
		struct inode *next;
		err = ordfs_lookup(fs, cur, part, &next);
		inode_put(fs, cur);
		cur = err ? NULL : next;
	}
	if (!err)
		*out = cur;
	return err;
}

int ordfs_readdir(struct ordfs *fs, struct inode *dir, uint64_t cookie, ordfs_emit_fn emit,
		  void *ctx)
{
	if (!namei_is_dir(dir))
		return -ENOTDIR;
	ordfs_rwlock_rdlock(&dir->lock);
	int err = dir_readdir(fs, dir, cookie, emit, ctx);
	ordfs_rwlock_unlock(&dir->lock);
	if (err >= 0)
		(void)atime_touch(fs, dir); /* a listing never fails for its atime */
	return err;
}

/* ---- link -------------------------------------------------------------------- */

static int link_once(struct ordfs *fs, struct inode *inode, struct inode *newdir,
		     const char *newname, bool *dirsync)
{
	size_t len = strlen(newname);
	uint32_t existing;
	int err = namei_check_change_in_dir(fs, newdir, newname, len);
	if (err)
		return err;
	if (namei_is_dir(inode))
		return -EPERM;

	ordfs_rwlock_wrlock(&newdir->lock);
	ordfs_rwlock_wrlock(&inode->lock);
	if (newdir->d.links == 0 || inode->d.links == 0) {
		err = -ENOENT; /* the directory or the file was removed */
	} else if (inode->d.links >= ORDFS_LINK_MAX) {
		err = -EMLINK;
	} else if ((err = iflags_refuses(inode->d.attr_flags, IFLAGS_LINK)) ||
		   (err = iflags_refuses(newdir->d.attr_flags, IFLAGS_DIR_ADD))) {
		; /* vfs_link, may_create */
	} else {
		*dirsync = iflags_dirsync(newdir->d.attr_flags);
		err = dir_lookup(fs, newdir, newname, len, &existing, NULL);
		err = err == -ENOENT ? 0 : err ? err : -EEXIST;
	}
	if (!err) {
		struct handle *h;
		err = journal_start(fs->journal, dir_credits(fs, newdir) + 4, &h);
		if (!err) {
			err = dir_add(fs, h, newdir, newname, len, inode->ino,
				      namei_dtype_of(inode->d.mode));
			if (!err) {
				inode->d.links++;
				inode->d.ctime = ordfs_now();
				namei_touch_dir(newdir);
				err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
				if (!err)
					err = inode_write(fs, h, newdir, INODE_WRITE_DATASYNC);
				if (err)
					journal_abort_half_done(fs->journal, err);
			}
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
	}
	ordfs_rwlock_unlock(&inode->lock);
	ordfs_rwlock_unlock(&newdir->lock);
	return err;
}

int ordfs_link(struct ordfs *fs, struct inode *inode, struct inode *newdir, const char *newname)
{
	int err;
	unsigned retries = 0;
	bool dirsync = false;
	do /* the new name may need a new directory block */
		err = link_once(fs, inode, newdir, newname, &dirsync);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	return file_sync_after(fs, newdir, dirsync, err);
}

/* ---- unlink and rmdir ------------------------------------------------------ */

/* Drops one link (two for a directory) of child, orphaning it at zero. */
int namei_drop_link(struct ordfs *fs, struct handle *h, struct inode *child)
{
	child->d.ctime = ordfs_now();
	if (namei_is_dir(child))
		child->d.links = 0;
	else if (child->d.links > 0)
		child->d.links--;
	if (child->d.links == 0)
		return orphan_add(fs, h, child);
	return inode_write(fs, h, child, INODE_WRITE_DATASYNC);
}

static int remove_common(struct ordfs *fs, struct inode *dir, const char *name, bool want_dir)
{
	size_t len = strlen(name);
	uint32_t ino;
	struct inode *child = NULL;
	struct handle *h;
	bool dirsync = false;

	int err = namei_check_change_in_dir(fs, dir, name, len);
	if (err)
		return err;

	ordfs_rwlock_wrlock(&dir->lock);
	err = dir_lookup(fs, dir, name, len, &ino, NULL);
	if (!err) /* never a second lock of dir, nor of the root under it */
		err = namei_check_entry_ino(dir, name, len, ino);
	if (!err)
		err = inode_get(fs, ino, &child);
	if (err)
		goto out_unlock;
	ordfs_rwlock_wrlock(&child->lock);
	if ((err = namei_check_child_locked(dir, name, len, child)))
		;
	else if ((err = iflags_refuses(dir->d.attr_flags, IFLAGS_DIR_REMOVE)) ||
	    (err = iflags_refuses(child->d.attr_flags, IFLAGS_UNLINK)))
		; /* may_delete asks before it looks at the types */
	else if (want_dir && !namei_is_dir(child))
		err = -ENOTDIR;
	else if (!want_dir && namei_is_dir(child))
		err = -EISDIR;
	else if (want_dir) {
		int empty = dir_is_empty(fs, child);
		err = empty < 0 ? empty : empty ? 0 : -ENOTEMPTY;
		if (!err)
			err = namei_check_subdir_link(dir);
	}
	dirsync = iflags_dirsync(dir->d.attr_flags);
	if (err)
		goto out_unlock_child;

	err = journal_start(fs->journal, dir_credits(fs, dir) + 6, &h);
	if (err)
		goto out_unlock_child;
	err = dir_remove(fs, h, dir, name, len, NULL);
	if (!err) {
		err = namei_drop_link(fs, h, child);
		if (!err && want_dir)
			dir->d.links--;
		namei_touch_dir(dir);
		if (!err)
			err = inode_write(fs, h, dir, INODE_WRITE_DATASYNC);
		if (err)
			journal_abort_half_done(fs->journal, err);
	}
	int serr = journal_stop(h);
	if (!err)
		err = serr;
out_unlock_child:
	ordfs_rwlock_unlock(&child->lock);
out_unlock:
	ordfs_rwlock_unlock(&dir->lock);
	if (child)
		inode_put(fs, child); /* the last reference frees an unlinked inode */
	return file_sync_after(fs, dir, dirsync, err);
}

int ordfs_unlink(struct ordfs *fs, struct inode *dir, const char *name)
{
	return remove_common(fs, dir, name, false);
}

int ordfs_rmdir(struct ordfs *fs, struct inode *dir, const char *name)
{
	return remove_common(fs, dir, name, true);
}
