/*
 * namei.c - namespace operations: lookup, create, mkdir, unlink, rmdir,
 * rename; the orphan list; freeing unlinked inodes.
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
 *    goes (ordfs_inode_evict), or at the next mount after a crash.
 *  - The orphan list itself is orphan.c's.
 *  - A new inode's mode and ACLs are decided before the handle, under the
 *    directory's lock (acl_inherit_prepare: the directory's default ACL,
 *    or else the caller's umask); its xattr block comes out of a block
 *    reserved beforehand, so only I/O can fail after the name is added.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <stdio.h>
#include <linux/fs.h>

#include "fs.h"
#include "writeback/writeback.h"
#include "inode/pages.h"
#include "orphan/enospc.h"
#include "atime/atime.h"
#include "file/file.h"
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

static uint8_t dtype_of(uint16_t mode)
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

static bool is_dir(const struct inode *inode)
{
	return S_ISDIR(inode->d.mode);
}

static void touch_dir(struct inode *dir)
{
	dir->d.mtime = dir->d.ctime = ordfs_now();
}

/* ---- lookup and create ---------------------------------------------------- */

int ordfs_lookup(struct ordfs *fs, struct inode *dir, const char *name, struct inode **out)
{
	size_t len = strlen(name);
	uint32_t ino;

	if (!is_dir(dir))
		return -ENOTDIR;
	int err = dir_check_name(name, len);
	if (err)
		return err;
	ordfs_rwlock_rdlock(&dir->lock);
	err = dir_lookup(fs, dir, name, len, &ino, NULL);
	ordfs_rwlock_unlock(&dir->lock);
	if (err)
		return err;
	return inode_get(fs, ino, out);
}

/* What every change of a name in dir needs: a writable filesystem, a
 * directory, a valid name. */
static int check_change_in_dir(struct ordfs *fs, struct inode *dir, const char *name,
			       size_t len)
{
	if (!fs->journal)
		return -EROFS;
	if (!is_dir(dir))
		return -ENOTDIR;
	return dir_check_name(name, len);
}

/* What a new inode is made of besides its mode. */
struct new_inode {
	uint16_t mode;
	uint32_t rdev;        /* device nodes */
	const char *target;   /* symlinks */
	uint32_t umask;       /* applied only without a default ACL */
};

/* The ACLs a new inode inherits, as xattr_init_new_locked takes them;
 * returns how many. */
static unsigned inherited_values(const struct acl_inherit *ai, struct xattr_ns_value v[2])
{
	unsigned n = 0;
	if (ai->access)
		v[n++] = (struct xattr_ns_value){ ORDFS_XATTR_NS_POSIX_ACL_ACCESS, ai->access,
						  ai->access_len };
	if (ai->def)
		v[n++] = (struct xattr_ns_value){ ORDFS_XATTR_NS_POSIX_ACL_DEFAULT, ai->def,
						  ai->def_len };
	return n;
}

/* Blocks a symlink target needs outside the inode. */
static uint32_t symlink_blocks(struct ordfs *fs, const char *target)
{
	if (!target || strlen(target) <= ORDFS_FAST_SYMLINK_MAX)
		return 0;
	return (uint32_t)((strlen(target) + fs->block_size - 1) / fs->block_size);
}

/* Stores a symlink's target: in the inode when short, else in blocks of
 * its own, journaled like directory blocks.  Under h. */
static int store_symlink_target(struct ordfs *fs, struct handle *h, struct inode *link,
				const char *target)
{
	size_t len = strlen(target);
	link->d.size = len;
	link->size = len;
	if (len <= ORDFS_FAST_SYMLINK_MAX) {
		memset(link->d.data, 0, sizeof(link->d.data));
		memcpy(link->d.data, target, len);
		link->d.flags |= ORDFS_INODE_FAST_SYMLINK;
		return 0;
	}
	/* The blocks were reserved before the handle (symlink_blocks), so
	 * nothing here runs out of space: at most 4 blocks, which the extent
	 * root in the inode holds without a tree block. */
	uint32_t nblocks = symlink_blocks(fs, target);
	for (uint32_t i = 0; i < nblocks; i++) {
		uint64_t blk;
		uint32_t got;
		int err = alloc_blocks(fs->alloc, h, 0, 1, ALLOC_FROM_RESERVATION, &blk, &got);
		if (err)
			return err;
		struct ordfs_extent e = { i, blk, 1, 0 };
		err = extent_insert(fs, h, link, &e);
		if (err)
			return err;
		struct buf *b;
		err = bcache_get_new(fs->cache, blk, &b);
		if (err)
			return err;
		err = journal_get_write_access(h, b, 0);
		if (!err) {
			size_t off = (size_t)i * fs->block_size;
			size_t n = len - off < fs->block_size ? len - off : fs->block_size;
			memcpy(b->data, target + off, n);
		}
		bcache_put(fs->cache, b);
		if (err)
			return err;
	}
	return 0;
}

static uint32_t symlink_credits(struct ordfs *fs, const char *target)
{
	return symlink_blocks(fs, target) * (2 + 2 * 4 + alloc_credits(fs->alloc, 1));
}

/* Owner, group and set-group-ID of a new inode, as Linux's
 * inode_init_owner(): in a set-group-ID directory the group is the
 * directory's and new directories inherit the bit. */
static void init_owner(struct inode *child, const struct inode *dir, const struct ordfs_cred *cred)
{
	child->d.uid = cred->uid;
	child->d.gid = cred->gid;
	if (dir->d.mode & S_ISGID) {
		child->d.gid = dir->d.gid;
		if (S_ISDIR(child->d.mode))
			child->d.mode |= S_ISGID;
	}
}

static int create_once(struct ordfs *fs, struct inode *dir, const char *name,
		       const struct new_inode *ni, const struct ordfs_cred *cred,
		       struct inode **out)
{
	size_t len = strlen(name);
	uint32_t existing;
	struct inode *child = NULL;
	struct handle *h;
	struct acl_inherit ai = { 0 };
	struct xattr_ns_value acls[2];
	unsigned nacls = 0;

	int err = check_change_in_dir(fs, dir, name, len);
	if (err)
		return err;

	ordfs_rwlock_wrlock(&dir->lock);
	if (dir->d.links == 0) {
		err = -ENOENT; /* the directory was removed */
		goto out_unlock;
	}
	err = dir_lookup(fs, dir, name, len, &existing, NULL);
	if (err != -ENOENT) {
		err = err ? err : -EEXIST;
		goto out_unlock;
	}
	err = acl_inherit_prepare(fs, dir, ni->mode, ni->umask, &ai);
	if (!err) {
		nacls = inherited_values(&ai, acls);
		err = xattr_new_fits(fs, acls, nacls);
	}
	if (err)
		goto out_unlock;
	/* Space for a long symlink's blocks and the inherited ACLs' block is
	 * reserved first, so running out of it is a clean ENOSPC, never a
	 * half-made inode. */
	uint32_t reserved = symlink_blocks(fs, ni->target) + (nacls ? 1u : 0u);
	if (reserved) {
		err = alloc_reserve(fs->alloc, reserved);
		if (err)
			goto out_unlock;
	}
	err = journal_start(fs->journal,
			    dir_credits(fs, dir) + 6 + symlink_credits(fs, ni->target) +
				    (nacls ? xattr_credits(fs) : 0),
			    &h);
	if (err) {
		alloc_unreserve(fs->alloc, reserved);
		goto out_unlock;
	}
	err = inode_create(fs, h, dir->ino + 1, ai.mode, cred->uid, cred->gid, &child);
	if (err) {
		alloc_unreserve(fs->alloc, reserved);
		goto out_stop;
	}
	init_owner(child, dir, cred);
	child->d.rdev = ni->rdev;
	if (S_ISDIR(ni->mode)) {
		child->d.links = 2;
		child->d.parent = dir->ino;
	} else {
		child->d.links = 1;
	}
	err = dir_add(fs, h, dir, name, len, child->ino, dtype_of(ni->mode));
	if (!err && ni->target) {
		err = store_symlink_target(fs, h, child, ni->target);
		reserved = 0; /* consumed (or the journal is aborted below) */
		if (err)
			journal_abort_half_done(fs->journal, err);
	}
	if (!err && nacls) {
		err = xattr_init_new_locked(fs, h, child, acls, nacls);
		if (err)
			journal_abort_half_done(fs->journal, err); /* the name is in the directory */
		else
			reserved--; /* used up (a symlink never inherits ACLs) */
	}
	alloc_unreserve(fs->alloc, reserved);
	if (err) {
		/* Nothing points at the new inode: give it back. */
		if (child->d.blocks) {
			journal_abort_half_done(fs->journal, err);
		} else {
			int ferr = alloc_free_inode(fs->alloc, h, child->ino);
			child->d.links = 0;
			child->d.mode = 0;
			if (!ferr)
				ferr = inode_write(fs, h, child, INODE_WRITE_DATASYNC);
			if (ferr)
				journal_abort_half_done(fs->journal, ferr);
		}
		goto out_stop;
	}
	err = inode_write(fs, h, child, INODE_WRITE_DATASYNC);
	if (!err) {
		if (S_ISDIR(ni->mode))
			dir->d.links++;
		touch_dir(dir);
		err = inode_write(fs, h, dir, INODE_WRITE_DATASYNC);
	}
	if (err)
		journal_abort_half_done(fs->journal, err);
out_stop:;
	int serr = journal_stop(h);
	if (!err)
		err = serr;
out_unlock:
	ordfs_rwlock_unlock(&dir->lock);
	acl_inherit_release(&ai);
	if (err) {
		if (child)
			inode_put(fs, child);
		return err;
	}
	*out = child;
	return 0;
}

/* A new inode's directory entry may need a new directory block (and a
 * symlink or inherited ACLs blocks of their own): on ENOSPC, once freed
 * blocks have committed, the whole creation is tried again. */
static int create_common(struct ordfs *fs, struct inode *dir, const char *name,
			 const struct new_inode *ni, const struct ordfs_cred *cred,
			 struct inode **out)
{
	int err;
	unsigned retries = 0;
	do
		err = create_once(fs, dir, name, ni, cred, out);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	return err;
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

int ordfs_mkdir_umask(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		      uint32_t umask, const struct ordfs_cred *cred, struct inode **out)
{
	struct new_inode ni = { (uint16_t)(S_IFDIR | (mode & 07777)), 0, NULL, umask };
	return create_common(fs, dir, name, &ni, cred, out);
}

int ordfs_mkdir(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		const struct ordfs_cred *cred, struct inode **out)
{
	return ordfs_mkdir_umask(fs, dir, name, mode, 0, cred, out);
}

int ordfs_create_umask(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		       uint32_t umask, const struct ordfs_cred *cred, struct inode **out)
{
	if (S_ISDIR(mode) || S_ISLNK(mode))
		return -EINVAL;
	if ((mode & S_IFMT) == 0)
		mode |= S_IFREG;
	struct new_inode ni = { mode, 0, NULL, umask };
	return create_common(fs, dir, name, &ni, cred, out);
}

int ordfs_create(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		 const struct ordfs_cred *cred, struct inode **out)
{
	return ordfs_create_umask(fs, dir, name, mode, 0, cred, out);
}

int ordfs_mknod_umask(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		      uint32_t rdev, uint32_t umask, const struct ordfs_cred *cred,
		      struct inode **out)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
		break;
	case 0:
		mode |= S_IFREG;
		break;
	default:
		return -EINVAL;
	}
	struct new_inode ni = { mode, (S_ISCHR(mode) || S_ISBLK(mode)) ? rdev : 0, NULL, umask };
	return create_common(fs, dir, name, &ni, cred, out);
}

int ordfs_mknod(struct ordfs *fs, struct inode *dir, const char *name, uint16_t mode,
		uint32_t rdev, const struct ordfs_cred *cred, struct inode **out)
{
	return ordfs_mknod_umask(fs, dir, name, mode, rdev, 0, cred, out);
}

int ordfs_symlink(struct ordfs *fs, struct inode *dir, const char *name, const char *target,
		  const struct ordfs_cred *cred, struct inode **out)
{
	size_t len = strlen(target);
	if (len == 0)
		return -ENOENT; /* as Linux: an empty target is refused */
	if (len > ORDFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	struct new_inode ni = { S_IFLNK | 0777, 0, target, 0 };
	return create_common(fs, dir, name, &ni, cred, out);
}

ssize_t ordfs_readlink(struct ordfs *fs, struct inode *link, char *buf, size_t size)
{
	if (!S_ISLNK(link->d.mode))
		return -EINVAL;
	ordfs_rwlock_rdlock(&link->lock);
	uint64_t len = link->d.size;
	ssize_t result;
	if (len == 0 || len > ORDFS_SYMLINK_MAX) {
		result = -EUCLEAN;
	} else if (link->d.flags & ORDFS_INODE_FAST_SYMLINK) {
		result = len > ORDFS_FAST_SYMLINK_MAX ? -EUCLEAN : (ssize_t)len;
		if (result > 0)
			memcpy(buf, link->d.data, len < size ? len : size);
	} else {
		result = (ssize_t)len;
		for (uint64_t off = 0; off < len && off < size && result > 0; off += fs->block_size) {
			struct ordfs_extent e;
			int found = extent_lookup(fs, link, off / fs->block_size, &e);
			if (found != 1) {
				result = found < 0 ? found : -EUCLEAN;
				break;
			}
			struct buf *b;
			int err = bcache_read(fs->cache, e.physical + (off / fs->block_size - e.logical),
					      &b);
			if (err) {
				result = err;
				break;
			}
			size_t n = len - off < fs->block_size ? (size_t)(len - off) : fs->block_size;
			if (off + n > size)
				n = size - (size_t)off;
			memcpy(buf + off, b->data, n);
			bcache_put(fs->cache, b);
		}
	}
	ordfs_rwlock_unlock(&link->lock);
	if (result > 0)
		(void)atime_touch(fs, link);
	if (result > (ssize_t)size)
		result = (ssize_t)size; /* truncated, as readlink(2) */
	return result;
}

int ordfs_readdir(struct ordfs *fs, struct inode *dir, uint64_t cookie, ordfs_emit_fn emit,
		  void *ctx)
{
	if (!is_dir(dir))
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
		     const char *newname)
{
	size_t len = strlen(newname);
	uint32_t existing;
	int err = check_change_in_dir(fs, newdir, newname, len);
	if (err)
		return err;
	if (is_dir(inode))
		return -EPERM;

	ordfs_rwlock_wrlock(&newdir->lock);
	ordfs_rwlock_wrlock(&inode->lock);
	if (newdir->d.links == 0 || inode->d.links == 0) {
		err = -ENOENT; /* the directory or the file was removed */
	} else if (inode->d.links >= ORDFS_LINK_MAX) {
		err = -EMLINK;
	} else {
		err = dir_lookup(fs, newdir, newname, len, &existing, NULL);
		err = err == -ENOENT ? 0 : err ? err : -EEXIST;
	}
	if (!err) {
		struct handle *h;
		err = journal_start(fs->journal, dir_credits(fs, newdir) + 4, &h);
		if (!err) {
			err = dir_add(fs, h, newdir, newname, len, inode->ino,
				      dtype_of(inode->d.mode));
			if (!err) {
				inode->d.links++;
				inode->d.ctime = ordfs_now();
				touch_dir(newdir);
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
	do /* the new name may need a new directory block */
		err = link_once(fs, inode, newdir, newname);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	return err;
}

/* ---- unlink and rmdir ------------------------------------------------------ */

/* Drops one link (two for a directory) of child, orphaning it at zero. */
static int drop_link(struct ordfs *fs, struct handle *h, struct inode *child)
{
	child->d.ctime = ordfs_now();
	if (is_dir(child))
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

	int err = check_change_in_dir(fs, dir, name, len);
	if (err)
		return err;

	ordfs_rwlock_wrlock(&dir->lock);
	err = dir_lookup(fs, dir, name, len, &ino, NULL);
	if (!err)
		err = inode_get(fs, ino, &child);
	if (err)
		goto out_unlock;
	ordfs_rwlock_wrlock(&child->lock);
	if (want_dir && !is_dir(child))
		err = -ENOTDIR;
	else if (!want_dir && is_dir(child))
		err = -EISDIR;
	else if (want_dir) {
		int empty = dir_is_empty(fs, child);
		err = empty < 0 ? empty : empty ? 0 : -ENOTEMPTY;
	}
	if (err)
		goto out_unlock_child;

	err = journal_start(fs->journal, dir_credits(fs, dir) + 6, &h);
	if (err)
		goto out_unlock_child;
	err = dir_remove(fs, h, dir, name, len, NULL);
	if (!err) {
		err = drop_link(fs, h, child);
		if (!err && want_dir)
			dir->d.links--;
		touch_dir(dir);
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
	return err;
}

int ordfs_unlink(struct ordfs *fs, struct inode *dir, const char *name)
{
	return remove_common(fs, dir, name, false);
}

int ordfs_rmdir(struct ordfs *fs, struct inode *dir, const char *name)
{
	return remove_common(fs, dir, name, true);
}

/* ---- rename ---------------------------------------------------------------- */

/* -EINVAL if moving src under newdir would put src inside itself.  Walks
 * ".." from newdir to the root; rename_lock keeps the tree still. */
static int check_not_ancestor(struct ordfs *fs, struct inode *src, struct inode *newdir)
{
	uint32_t cur = newdir->ino;
	for (uint32_t steps = 0; steps < fs->sb.inode_count; steps++) {
		if (cur == src->ino)
			return -EINVAL;
		if (cur == ORDFS_ROOT_INO)
			return 0;
		struct inode *p;
		int err = inode_get(fs, cur, &p);
		if (err)
			return err;
		uint32_t parent = p->d.parent;
		inode_put(fs, p);
		if (parent == 0 || parent == cur)
			return -EUCLEAN;
		cur = parent;
	}
	return -EUCLEAN;
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
	if (is_dir(rc->src) && rc->olddir != rc->newdir) {
		int err = check_not_ancestor(fs, rc->src, rc->newdir);
		if (err)
			return err;
	}
	if (!rc->dst)
		return 0;
	if (is_dir(rc->src) && !is_dir(rc->dst))
		return -ENOTDIR;
	if (!is_dir(rc->src) && is_dir(rc->dst))
		return -EISDIR;
	if (is_dir(rc->dst)) {
		int empty = dir_is_empty(fs, rc->dst);
		return empty < 0 ? empty : empty ? 0 : -ENOTEMPTY;
	}
	return 0;
}

/* Both directories of a rename changed: times and inodes (once if same). */
static int write_rename_dirs(struct ordfs *fs, struct handle *h, struct rename_ctx *rc)
{
	touch_dir(rc->olddir);
	touch_dir(rc->newdir);
	int err = inode_write(fs, h, rc->olddir, INODE_WRITE_DATASYNC);
	if (!err && rc->newdir != rc->olddir)
		err = inode_write(fs, h, rc->newdir, INODE_WRITE_DATASYNC);
	return err;
}

/* The changes of a rename, in one handle.  The only step that can fail
 * for lack of space (adding the new name) comes first. */
static int rename_apply(struct ordfs *fs, struct handle *h, struct rename_ctx *rc)
{
	uint8_t type = dtype_of(rc->src->d.mode);
	int err;

	if (rc->dst)
		err = dir_replace(fs, h, rc->newdir, rc->newname, rc->newlen, rc->src->ino, type);
	else
		err = dir_add(fs, h, rc->newdir, rc->newname, rc->newlen, rc->src->ino, type);
	if (err)
		return err;

	err = dir_remove(fs, h, rc->olddir, rc->oldname, rc->oldlen, NULL);
	if (!err && rc->dst) {
		if (is_dir(rc->dst))
			rc->newdir->d.links--;
		err = drop_link(fs, h, rc->dst);
	}
	if (!err && is_dir(rc->src) && rc->olddir != rc->newdir) {
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
	if (is_dir(rc->src))
		err = check_not_ancestor(fs, rc->src, rc->newdir);
	if (!err && is_dir(rc->dst))
		err = check_not_ancestor(fs, rc->dst, rc->olddir);
	return err;
}

/* Swaps two names atomically: each entry now points at the other inode;
 * directories moved across parents take their ".." and link counts along. */
static int exchange_apply(struct ordfs *fs, struct handle *h, struct rename_ctx *rc)
{
	int err = dir_replace(fs, h, rc->olddir, rc->oldname, rc->oldlen, rc->dst->ino,
			      dtype_of(rc->dst->d.mode));
	if (err)
		return err; /* nothing changed yet */
	err = dir_replace(fs, h, rc->newdir, rc->newname, rc->newlen, rc->src->ino,
			  dtype_of(rc->src->d.mode));
	if (!err && rc->olddir != rc->newdir) {
		if (is_dir(rc->src)) {
			rc->src->d.parent = rc->newdir->ino;
			rc->olddir->d.links--;
			rc->newdir->d.links++;
		}
		if (is_dir(rc->dst)) {
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
		       struct inode *newdir, const char *newname, unsigned flags)
{
	struct rename_ctx rc = { olddir, newdir, NULL, NULL, oldname, newname,
				 strlen(oldname), strlen(newname) };
	uint32_t ino;
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL; /* RENAME_WHITEOUT is for overlay filesystems */
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (!fs->journal)
		return -EROFS;
	if (!is_dir(olddir) || !is_dir(newdir))
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
	do /* the new name may need a new directory block */
		err = rename_once(fs, olddir, oldname, newdir, newname, flags);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	return err;
}
