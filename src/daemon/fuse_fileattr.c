/*
 * fuse_fileattr.c - file flags through FUSE: the four ioctls lsattr,
 * chattr and xfs_io's chattr end up as (fuse_ioctl.c hands them here).
 *
 * The kernel path (fs/fuse/ioctl.c, fs/file_attr.c): FS_IOC_GETFLAGS and
 * SETFLAGS, FS_IOC_FSGETXATTR and FSSETXATTR on a FUSE file are the VFS's
 * (vfs_fileattr_get/set), which asks fuse_fileattr_get/set, which opens
 * the file or directory (OPEN or OPENDIR, read-only) and sends FUSE_IOCTL
 * with one of the four numbers: GETFLAGS and SETFLAGS with an unsigned
 * int (4 bytes, although the number says long), the other two with a
 * struct fsxattr.  A set is preceded by an FSGETXATTR (the VFS reads the
 * old flags from it: it checks owner or CAP_FOWNER and
 * CAP_LINUX_IMMUTABLE itself before sending the set).  FSSETXATTR carries
 * only xflags, so D and j, which have none, must stay as they are.
 * Symlinks and device nodes never get here (the kernel answers ENOTTY).
 *
 * Rules: the library decides (ordfs_set_flags, inode/iflags.h) with the
 * caller's uid and its effective CAP_FOWNER and CAP_LINUX_IMMUTABLE
 * (read from /proc, caller_has_cap): the kernel's checks are not
 * trusted alone.  FSSETXATTR: an xflag ordfs does not
 * keep is EOPNOTSUPP, a project id other than 0 EOPNOTSUPP (ext4 without
 * its project feature), an extent size hint EINVAL (ordfs keeps none).
 * A change moves ctime, which the kernel caches: its attributes are
 * dropped (daemon_attr_changed).
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <string.h>

#include "fuse_glue.h"
#include "../fs.h"
#include "../ops.h"
#include "inode/iflags.h"
#include "inode/inode.h"

#ifndef FS_IOC32_GETFLAGS
#define FS_IOC32_GETFLAGS _IOR('f', 1, int)
#define FS_IOC32_SETFLAGS _IOW('f', 2, int)
#endif

static struct ordfs_flags_caller flags_caller_of(fuse_req_t req)
{
	const struct fuse_ctx *fc = fuse_req_ctx(req);
	uint64_t caps = caller_caps(fc->pid, fc->uid);
	struct ordfs_flags_caller c = {
		.uid = fc->uid,
		.cap_fowner = (caps >> CAP_FOWNER) & 1,
		.cap_linux_immutable = (caps >> CAP_LINUX_IMMUTABLE) & 1,
		/* j: CAP_SYS_RESOURCE as on ext4, or CAP_SYS_ADMIN (root in a
		 * container without CAP_SYS_RESOURCE: design/flags.md, "File
		 * flags") */
		.cap_sys_resource = ((caps >> CAP_SYS_RESOURCE) & 1) || ((caps >> CAP_SYS_ADMIN) & 1),
	};
	return c;
}

/* SETFLAGS and FSSETXATTR: flags in mask to their values in flags. */
static int set_flags(fuse_req_t req, struct inode *inode, uint32_t flags, uint32_t mask)
{
	struct ordfs_flags_caller caller = flags_caller_of(req);
	int err = ordfs_set_flags(ctx_of(req)->fs, inode, flags, mask, &caller);
	if (!err)
		daemon_attr_changed(ctx_of(req), inode->ino); /* ctime moved */
	return err;
}

/* FSSETXATTR's fields other than the xflags: nothing ordfs keeps. */
static int fsxattr_flags(const struct fsxattr *fa, uint32_t *flags)
{
	int err = iflags_from_xflags(fa->fsx_xflags, flags);
	if (!err && fa->fsx_projid != 0)
		err = -EOPNOTSUPP;
	if (!err && (fa->fsx_extsize != 0 || fa->fsx_cowextsize != 0))
		err = -EINVAL;
	return err;
}

/* One of the four for inode: replies and returns 0, or returns the
 * error for the caller to reply. */
static int fileattr_serve(fuse_req_t req, struct inode *inode, unsigned cmd,
			  const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct ordfs *fs = ctx_of(req)->fs;
	uint32_t flags;
	struct fsxattr fa;
	switch (cmd) {
	case FS_IOC_GETFLAGS:
	case FS_IOC32_GETFLAGS:
		if (out_bufsz < sizeof(flags))
			return -EINVAL;
		flags = ordfs_get_flags(fs, inode);
		fuse_reply_ioctl(req, 0, &flags, sizeof(flags));
		return 0;
	case FS_IOC_SETFLAGS:
	case FS_IOC32_SETFLAGS:
		if (in_bufsz < sizeof(flags))
			return -EINVAL;
		memcpy(&flags, in_buf, sizeof(flags)); /* an unsigned int: the low half */
		return set_flags(req, inode, flags, ~0u);
	case FS_IOC_FSGETXATTR:
		if (out_bufsz < sizeof(fa))
			return -EINVAL;
		memset(&fa, 0, sizeof(fa));
		fa.fsx_xflags = iflags_to_xflags(ordfs_get_flags(fs, inode));
		fuse_reply_ioctl(req, 0, &fa, sizeof(fa));
		return 0;
	case FS_IOC_FSSETXATTR: {
		if (in_bufsz < sizeof(fa))
			return -EINVAL;
		memcpy(&fa, in_buf, sizeof(fa));
		int err = fsxattr_flags(&fa, &flags);
		return err ? err : set_flags(req, inode, flags, IFLAGS_XFLAG_MASK);
	}
	}
	return -ENOTTY;
}

bool fileattr_ioctl(fuse_req_t req, fuse_ino_t node, unsigned cmd, const void *in_buf,
		    size_t in_bufsz, size_t out_bufsz)
{
	switch (cmd) {
	case FS_IOC_GETFLAGS: case FS_IOC32_GETFLAGS:
	case FS_IOC_SETFLAGS: case FS_IOC32_SETFLAGS:
	case FS_IOC_FSGETXATTR: case FS_IOC_FSSETXATTR:
		break;
	default:
		return false;
	}
	struct ordfs *fs = ctx_of(req)->fs; /* req is gone once replied */
	struct inode *inode = get_inode(req, node);
	if (!inode)
		return true; /* replied */
	int err = fileattr_serve(req, inode, cmd, in_buf, in_bufsz, out_bufsz);
	inode_put(fs, inode);
	if (err)
		reply_result(req, err);
	else if (cmd == FS_IOC_SETFLAGS || cmd == FS_IOC32_SETFLAGS || cmd == FS_IOC_FSSETXATTR)
		fuse_reply_ioctl(req, 0, NULL, 0);
	return true;
}
