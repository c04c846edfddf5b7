/*
 * xattr.c - the extended attribute calls: setxattr, getxattr, listxattr,
 * removexattr (ops.h), over the attribute block's steps (xattr/xattr.h).
 *
 * Rules:
 *  - The calls take inode->lock (shared for get and list, exclusive for
 *    set and remove), then the steps start their handles; nothing here
 *    waits for a commit while holding a handle [J8].
 *  - A set that needs a new block and finds none retries the whole step
 *    after freed blocks commit (orphan/enospc.h).
 *  - The two ACL namespaces: the Linux xattr form is translated (acl.c
 *    decides what to store and the new mode) and the value and the mode
 *    change in one handle; removing an absent ACL succeeds, as on ext4,
 *    and XATTR_CREATE/XATTR_REPLACE do not apply to them (Linux ignores
 *    the flags for ACLs).  Setting an access ACL clears set-group-ID
 *    unless the caller is in the file's group or holds CAP_FSETID.
 *  - A file flagged i or a refuses set and remove (xattr_permission); with
 *    S they are durable before they return.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fs.h"
#include "super/super.h"
#include "ops.h"
#include "file.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "lock/lock.h"
#include "orphan/enospc.h"
#include "xattr/acl.h"
#include "xattr/xattr.h"

/* setxattr/removexattr of an ACL (value NULL: remove): the stored value
 * and the mode change together.  inode->lock held exclusively. */
static int xattr_acl_change_locked(struct ordfs *fs, struct inode *inode, const struct xname *k,
				   const void *value, size_t size,
				   const struct ordfs_caller *caller)
{
	struct acl_set_plan ap;
	int err = acl_plan_set(k->ns, inode->d.mode, value, size, &ap);
	if (err)
		return err;
	/* posix_acl_update_mode: setting an access ACL clears set-group-ID
	 * unless the caller is in the file's group or holds CAP_FSETID. */
	if (value && caller && k->ns == ORDFS_XATTR_NS_POSIX_ACL_ACCESS &&
	    !acl_keeps_setgid(caller, inode->d.gid))
		ap.mode &= (uint16_t)~S_ISGID;
	struct xchange c = { .key = *k, .remove = ap.remove, .absent_ok = true,
			     .value = ap.disk, .vlen = ap.disk_len,
			     .set_mode = true, .mode = ap.mode };
	err = xattr_change_locked(fs, inode, &c);
	acl_plan_release(&ap);
	return err;
}

int ordfs_setxattr(struct ordfs *fs, struct inode *inode, const char *name, const void *value,
		   size_t size, int flags)
{
	return ordfs_setxattr_by(fs, inode, name, value, size, flags, NULL);
}

int ordfs_setxattr_by(struct ordfs *fs, struct inode *inode, const char *name,
		      const void *value, size_t size, int flags, const struct ordfs_caller *caller)
{
	struct xchange c = { .value = value, .flags = flags };

	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	int err = xattr_name_parse(name, &c.key);
	if (err)
		return err;
	if (size > ORDFS_XATTR_SIZE_MAX)
		return -E2BIG;
	if (size && !value)
		return -EINVAL;
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro or aborted */
		return -EROFS;
	c.vlen = (uint32_t)size;
	unsigned retries = 0;
	bool sync = false;
	do { /* a new attribute block may wait for freed blocks to commit */
		ordfs_rwlock_wrlock(&inode->lock);
		sync = iflags_sync(inode->d.attr_flags);
		err = iflags_refuses(inode->d.attr_flags, IFLAGS_XATTR);
		if (!err && !xattr_ns_has_name(c.key.ns))
			err = xattr_acl_change_locked(fs, inode, &c.key, size ? value : NULL,
						      size, caller);
		else if (!err)
			err = xattr_change_locked(fs, inode, &c);
		ordfs_rwlock_unlock(&inode->lock);
	} while (ordfs_should_retry_alloc(fs, err, &retries));
	return file_sync_after(fs, inode, sync, err);
}

int ordfs_removexattr(struct ordfs *fs, struct inode *inode, const char *name)
{
	struct xchange c = { .remove = true };

	int err = xattr_name_parse(name, &c.key);
	if (err)
		return err;
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro or aborted */
		return -EROFS;
	ordfs_rwlock_wrlock(&inode->lock);
	bool sync = iflags_sync(inode->d.attr_flags);
	err = iflags_refuses(inode->d.attr_flags, IFLAGS_XATTR);
	if (!err && !xattr_ns_has_name(c.key.ns))
		err = xattr_acl_change_locked(fs, inode, &c.key, NULL, 0, NULL);
	else if (!err)
		err = xattr_change_locked(fs, inode, &c);
	ordfs_rwlock_unlock(&inode->lock);
	return file_sync_after(fs, inode, sync, err);
}

ssize_t ordfs_getxattr(struct ordfs *fs, struct inode *inode, const char *name, void *value,
		       size_t size)
{
	struct xname k;

	int err = xattr_name_parse(name, &k);
	if (err)
		return err;
	if (size && !value)
		return -EINVAL;
	if (!xattr_ns_has_name(k.ns) && S_ISLNK(inode->d.mode))
		return -EOPNOTSUPP; /* as Linux: symlinks have no ACLs */
	ordfs_rwlock_rdlock(&inode->lock);
	ssize_t r = xattr_get_locked(fs, inode, &k, value, size);
	ordfs_rwlock_unlock(&inode->lock);
	return r;
}

ssize_t ordfs_listxattr(struct ordfs *fs, struct inode *inode, char *list, size_t size)
{
	if (size && !list)
		return -EINVAL;
	ordfs_rwlock_rdlock(&inode->lock);
	ssize_t r = xattr_list_locked(fs, inode, list, size);
	ordfs_rwlock_unlock(&inode->lock);
	return r;
}

