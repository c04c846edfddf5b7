/*
 * create.c - making names for new inodes: create, mkdir, mknod, symlink
 * (and readlink, the symlink's other half).
 *
 * Rules (namei.c has the namespace's):
 *  - A new inode's mode and ACLs are decided before the handle, under the
 *    directory's lock (acl_inherit_prepare: the directory's default ACL,
 *    or else the caller's umask); its xattr block comes out of a block
 *    reserved beforehand, so only I/O can fail after the name is added.
 *  - A symlink target up to the inode's data area is stored in it (a fast
 *    symlink); a longer one in blocks mapped like a file's.
 *  - A create that finds no space retries after freed blocks commit
 *    (orphan/enospc.h).
 *  - File flags (iflags.h): an immutable directory takes no new name; a
 *    new inode inherits the directory's S, D, A, d and j as far as its
 *    type may carry them (setting the superblock's feature in the same
 *    handle if need be); in a directory flagged D or S the create is
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
#include "base/ordfs_assert.h"
#include "lock/lock.h"

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
static void init_owner(struct inode_init *init, const struct inode *dir,
		       const struct ordfs_cred *cred)
{
	init->uid = cred->uid;
	init->gid = cred->gid;
	if (dir->d.mode & S_ISGID) {
		init->gid = dir->d.gid;
		if (S_ISDIR(init->mode))
			init->mode |= S_ISGID;
	}
}

static int create_once(struct ordfs *fs, struct inode *dir, const char *name,
		       const struct new_inode *ni, const struct ordfs_cred *cred,
		       struct inode **out, bool *dirsync)
{
	size_t len = strlen(name);
	uint32_t existing;
	struct inode *child = NULL;
	struct handle *h;
	struct acl_inherit ai = { 0 };
	struct xattr_ns_value acls[2];
	unsigned nacls = 0;

	int err = namei_check_change_in_dir(fs, dir, name, len);
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
	err = iflags_refuses(dir->d.attr_flags, IFLAGS_DIR_ADD);
	if (err)
		goto out_unlock;
	*dirsync = iflags_dirsync(dir->d.attr_flags);
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
			    dir_credits(fs, dir) + 7 + symlink_credits(fs, ni->target) +
				    (nacls ? xattr_credits(fs) : 0),
			    &h);
	if (err) {
		alloc_unreserve(fs->alloc, reserved);
		goto out_unlock;
	}
	struct inode_init init = { .mode = ai.mode, .rdev = ni->rdev,
				   .attr_flags = iflags_inherited(dir->d.attr_flags, ai.mode) };
	init_owner(&init, dir, cred);
	/* The feature is there already (the directory has flags); nothing
	 * is written then.  First, so a failure changes nothing. */
	if (init.attr_flags)
		err = ordfs_super_require_ro_compat(fs, h, ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS);
	ORDFS_ASSERT(err || !init.attr_flags ||
		     ordfs_super_has_ro_compat(fs, ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS));
	if (err) {
		alloc_unreserve(fs->alloc, reserved);
		goto out_stop;
	}
	if (S_ISDIR(ni->mode)) {
		init.links = 2;
		init.parent = dir->ino;
	} else {
		init.links = 1;
	}
	err = inode_create(fs, h, dir->ino + 1, &init, &child);
	if (err) {
		alloc_unreserve(fs->alloc, reserved);
		goto out_stop;
	}
	err = dir_add(fs, h, dir, name, len, child->ino, namei_dtype_of(ni->mode));
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
			/* the slot zeroed before the number is free again: a
			 * creator that takes it finds its slot free
			 * (inode_create refuses one in use), as eviction does */
			child->d.links = 0;
			child->d.mode = 0;
			int ferr = inode_write(fs, h, child, INODE_WRITE_DATASYNC);
			if (!ferr)
				ferr = alloc_free_inode(fs->alloc, h, child->ino);
			if (ferr)
				journal_abort_half_done(fs->journal, ferr);
		}
		goto out_stop;
	}
	err = inode_write(fs, h, child, INODE_WRITE_DATASYNC);
	if (!err) {
		if (S_ISDIR(ni->mode))
			dir->d.links++;
		namei_touch_dir(dir);
		err = inode_write(fs, h, dir, INODE_WRITE_DATASYNC);
	}
	if (err)
		journal_abort_half_done(fs->journal, err);
out_stop:
	if (child)
		inode_unlock_new(fs, child, err ? -ENOENT : 0);
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
	bool dirsync = false;
	do
		err = create_once(fs, dir, name, ni, cred, out, &dirsync);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	if (err || !dirsync)
		return err;
	err = file_sync_after(fs, dir, true, 0);
	if (err) {
		inode_put(fs, *out); /* made, maybe not durable: the caller sees the error */
		*out = NULL;
	}
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
	const char *why;
	if (ordfs_symlink_check(&link->d, &why) != 0) { /* fsck.ordfs's rule too */
		result = -EUCLEAN;
	} else if (link->d.flags & ORDFS_INODE_FAST_SYMLINK) {
		result = (ssize_t)len;
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
