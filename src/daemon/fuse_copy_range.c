/*
 * fuse_copy_range.c - the copy_file_range request: one ordfs_copy_range
 * call (file/copy_range.c), so the bytes are copied inside the image and
 * never cross /dev/fuse.
 *
 * Rules:
 *  - The kernel has done its generic checks before it asks
 *    (generic_copy_file_checks, and FUSE's own: two superblocks never
 *    reach a daemon, the kernel copies through read and write; overlap
 *    in one file, EINVAL; an O_APPEND destination,
 *    EBADF; the length cut at the source's EOF); the core checks again
 *    what it must not trust.
 *  - Set-ID bits of the destination are dropped as for fallocate
 *    (ordfs_drop_privs, the caller's groups and CAP_FSETID), and the
 *    kernel told that the mode it cached changed.
 *  - The kernel's page cache: it writes back the source's and the
 *    destination's dirty pages in the ranges before it asks, and drops
 *    the destination range's pages and attributes after our reply
 *    (fs/fuse/file.c); the daemon does not invalidate from here (a worker
 *    blocked on page locks, fuse_ops.c's caching rules).
 *  - ORDFS_NO_COPY_FILE_RANGE=1 in the daemon's environment answers
 *    ENOSYS: the kernel stops asking and copies through read and write,
 *    the reference the benchmark measures against (bench/copy_range.sh).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_glue.h"
#include "../fs.h"
#include "inode/inode.h"

bool copy_range_disabled(void)
{
	const char *v = getenv("ORDFS_NO_COPY_FILE_RANGE");
	return v && strcmp(v, "1") == 0;
}

/* Drops the destination's set-ID bits as a write by this caller would. */
static int drop_privs_for(fuse_req_t req, fuse_ino_t node, struct inode *inode)
{
	struct stat st;
	ordfs_getattr(ctx_of(req)->fs, inode, &st);
	if (!(st.st_mode & (S_ISUID | S_ISGID)))
		return 0;
	struct ordfs_caller caller;
	uint32_t groups[CALLER_GROUPS_MAX];
	caller_of(req, &caller, groups);
	int err = ordfs_drop_privs(ctx_of(req)->fs, inode, &caller);
	if (err == 1) {
		/* The kernel cached the mode it sent us a moment ago. */
		fuse_lowlevel_notify_inval_inode(ctx_of(req)->se, node, -1, 0);
		err = 0;
	}
	return err;
}

void op_copy_file_range(fuse_req_t req, fuse_ino_t node_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t node_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags)
{
	(void)fi_in;
	(void)fi_out;
	if (ctx_of(req)->no_copy_range) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (flags != 0 || off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	struct inode *src = get_inode(req, node_in);
	if (!src)
		return;
	struct inode *dst = get_inode(req, node_out);
	if (!dst) {
		inode_put(ctx_of(req)->fs, src);
		return;
	}
	ssize_t n = drop_privs_for(req, node_out, dst);
	if (n == 0)
		n = ordfs_copy_range(ctx_of(req)->fs, src, (uint64_t)off_in, dst,
				     (uint64_t)off_out, len);
	inode_put(ctx_of(req)->fs, dst);
	inode_put(ctx_of(req)->fs, src);
	if (n < 0)
		reply_result(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}
