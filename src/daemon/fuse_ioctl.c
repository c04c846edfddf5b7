/*
 * fuse_ioctl.c - the ioctls the daemon answers (src/ordfs_ioctl.h) on any
 * file or directory of the mount: ORDFS_IOC_SYNC, ORDFS_IOC_STATS and
 * ORDFS_IOC_TRIM for ordfsctl.  The ORDFS_IOC_TEST_* ioctls go to
 * test_hooks.c, which exists only in a -Dtest_hooks=true build (ENOTTY
 * otherwise, as for any ioctl not listed).
 *
 * Rules: FUSE passes only restricted ioctls (size and direction in the
 * number), so every argument is a fixed struct; 32-bit callers (compat)
 * get ENOSYS.
 */
#include <errno.h>

#include "fuse_glue.h"
#include "test_hooks.h"
#include "../fs.h"
#include "../ops.h"
#include "../ordfs_ioctl.h"
#include "../stats/stats.h"

void op_ioctl(fuse_req_t req, fuse_ino_t node, int cmd, void *arg, struct fuse_file_info *fi,
	      unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	(void)node;
	(void)arg;
	(void)fi;
	if (flags & FUSE_IOCTL_COMPAT) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	int err;
	switch ((unsigned)cmd) {
	case ORDFS_IOC_SYNC:
		err = ordfs_sync(ctx_of(req)->fs);
		break;
	case ORDFS_IOC_TRIM: {
		struct ordfs_trim t;
		if (out_bufsz < sizeof(t)) {
			err = -EINVAL;
			break;
		}
		err = ordfs_trim(ctx_of(req)->fs, &t.trimmed_bytes);
		if (err)
			break;
		fuse_reply_ioctl(req, 0, &t, sizeof(t));
		return;
	}
	case ORDFS_IOC_STATS: {
		struct ordfs_stats st;
		if (out_bufsz < sizeof(st)) {
			err = -EINVAL;
			break;
		}
		ordfs_stats_fill(ctx_of(req)->fs, &st);
		fuse_reply_ioctl(req, 0, &st, sizeof(st));
		return;
	}
	default: /* ORDFS_IOC_TEST_*, or ENOTTY */
		err = test_hooks_ioctl(ctx_of(req), (unsigned)cmd, in_buf, in_bufsz);
		break;
	}
	if (err)
		reply_result(req, err);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}
