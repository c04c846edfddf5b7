/*
 * fuse_ioctl.c - the ioctls the daemon answers (src/ordfs_ioctl.h) on any
 * file or directory of the mount: ORDFS_IOC_SYNC, ORDFS_IOC_STATS,
 * ORDFS_IOC_TRIM, ORDFS_IOC_REMOUNT, ORDFS_IOC_GROW and ORDFS_IOC_SCRUB
 * (fuse_scrub.c) for ordfsctl.  The ORDFS_IOC_TEST_* ioctls go to
 * test_hooks.c, which exists only in a -Dtest_hooks=true build (ENOTTY
 * otherwise, as for any ioctl not listed).
 *
 * Rules: FUSE passes only restricted ioctls (size and direction in the
 * number), so every argument is a fixed struct; 32-bit callers (compat)
 * get ENOSYS.  An ioctl that changes the image or costs I/O for everyone
 * beyond what the caller's own files need (TRIM, REMOUNT, GROW, SCRUB,
 * the test hooks) takes
 * CAP_SYS_ADMIN, as FITRIM does in the kernel, or the mount's owner (the
 * user the daemon runs as: a user's own fusermount3 mount); others get
 * EPERM.  STATS reads, and SYNC is what sync(2) and syncfs(2) are to any
 * user, so both stay open to every caller the kernel lets open a file.
 *
 * FS_IOC_SHUTDOWN (ext4's, XFS's, xfstests' godown) takes CAP_SYS_ADMIN or
 * the mount's owner too.  Its number says _IOR, so FUSE passes no bytes
 * in: the flags are read from the caller's memory at `arg`
 * (process_vm_readv, which the kernel allows a root daemon and a user's
 * daemon for that user's processes); where that fails, LOGFLUSH, the
 * strongest promise no caller can tell from what it asked for.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_glue.h"
#include "test_hooks.h"
#include "../fs.h"
#include "../ops.h"
#include "../ordfs_ioctl.h"
#include "../stats/stats.h"
#include "transport/transport.h"

/* The transport's part of ordfsctl stats. */
static void daemon_transport_stats(struct daemon_ctx *dc, struct ordfs_stats *st)
{
	struct transport_stats ts;
	if (!dc->transport)
		return;
	transport_get_stats(dc->transport, &ts);
	snprintf(st->transport, sizeof(st->transport), "%s", ts.uring ? "io_uring" : "/dev/fuse");
	snprintf(st->transport_note, sizeof(st->transport_note), "%s", ts.why_not);
	st->uring_queues = ts.queues;
	st->uring_threads = ts.threads;
	st->uring_threads_peak_queue = ts.threads_peak_queue;
	st->uring_requests = ts.ring_requests;
	st->dev_requests = ts.dev_requests;
}

/* May the caller run an ioctl that changes the image or costs everyone
 * I/O?  CAP_SYS_ADMIN, or it is the mount's owner. */
static bool caller_may_administer(fuse_req_t req)
{
	const struct fuse_ctx *fc = fuse_req_ctx(req);
	return fc->uid == getuid() || caller_has_cap(fc->pid, fc->uid, CAP_SYS_ADMIN);
}

/* FS_IOC_SHUTDOWN's flags, read from the caller's memory; LOGFLUSH when
 * they cannot be read (design/remount-shutdown.md). */
static uint32_t shutdown_flags(fuse_req_t req, void *arg)
{
	uint32_t flags;
	struct iovec local = { .iov_base = &flags, .iov_len = sizeof(flags) };
	struct iovec remote = { .iov_base = arg, .iov_len = sizeof(flags) };
	if (process_vm_readv(fuse_req_ctx(req)->pid, &local, 1, &remote, 1, 0) != sizeof(flags))
		return FS_SHUTDOWN_FLAGS_LOGFLUSH;
	return flags;
}

static int shutdown_ioctl(fuse_req_t req, void *arg)
{
	uint32_t flags = shutdown_flags(req, arg);
	switch (flags) {
	case FS_SHUTDOWN_FLAGS_DEFAULT:
		return ordfs_shutdown(ctx_of(req)->fs, ORDFS_SHUTDOWN_SYNC);
	case FS_SHUTDOWN_FLAGS_LOGFLUSH:
		return ordfs_shutdown(ctx_of(req)->fs, ORDFS_SHUTDOWN_LOGFLUSH);
	case FS_SHUTDOWN_FLAGS_NOLOGFLUSH:
		return ordfs_shutdown(ctx_of(req)->fs, ORDFS_SHUTDOWN_NOLOGFLUSH);
	default:
		return -EINVAL;
	}
}

void op_ioctl(fuse_req_t req, fuse_ino_t node, int cmd, void *arg, struct fuse_file_info *fi,
	      unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	(void)node;
	(void)fi;
	if (flags & FUSE_IOCTL_COMPAT) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (fileattr_ioctl(req, node, (unsigned)cmd, in_buf, in_bufsz, out_bufsz))
		return; /* lsattr, chattr: fuse_fileattr.c */
	int err;
	bool administers = (unsigned)cmd == ORDFS_IOC_TRIM || (unsigned)cmd == ORDFS_IOC_TEST_MARK ||
			   (unsigned)cmd == ORDFS_IOC_TEST_FAULT || (unsigned)cmd == FS_IOC_SHUTDOWN ||
			   (unsigned)cmd == ORDFS_IOC_REMOUNT || (unsigned)cmd == ORDFS_IOC_GROW ||
			   (unsigned)cmd == ORDFS_IOC_SCRUB;
	if (administers && !caller_may_administer(req)) {
		reply_result(req, -EPERM);
		return;
	}
	switch ((unsigned)cmd) {
	case ORDFS_IOC_SYNC:
		err = ordfs_sync(ctx_of(req)->fs);
		break;
	case FS_IOC_SHUTDOWN:
		err = shutdown_ioctl(req, arg);
		break;
	case ORDFS_IOC_REMOUNT: {
		struct ordfs_remount r;
		if (in_bufsz < sizeof(r.opts) || out_bufsz < sizeof(r)) {
			err = -EINVAL;
			break;
		}
		memcpy(r.opts, in_buf, sizeof(r.opts));
		r.opts[sizeof(r.opts) - 1] = '\0';
		memset(r.reply, 0, sizeof(r.reply));
		/* The reply carries the reason with a failure too: the
		 * ioctl's result is the negative errno, and the kernel copies
		 * the data out before it returns it. */
		int rc = daemon_remount(ctx_of(req), r.opts, r.reply, sizeof(r.reply));
		fuse_reply_ioctl(req, rc, &r, sizeof(r));
		return;
	}
	case ORDFS_IOC_GROW: {
		struct ordfs_grow g;
		if (in_bufsz < sizeof(g.size_bytes) || out_bufsz < sizeof(g)) {
			err = -EINVAL;
			break;
		}
		memset(&g, 0, sizeof(g));
		memcpy(&g.size_bytes, in_buf, sizeof(g.size_bytes));
		/* as for REMOUNT: the reason travels with the error */
		int rc = daemon_grow(ctx_of(req), &g);
		fuse_reply_ioctl(req, rc, &g, sizeof(g));
		return;
	}
	case ORDFS_IOC_SCRUB: {
		struct ordfs_scrub sc;
		if (out_bufsz < sizeof(sc)) {
			err = -EINVAL;
			break;
		}
		err = daemon_scrub(ctx_of(req), &sc);
		if (err)
			break;
		fuse_reply_ioctl(req, 0, &sc, sizeof(sc));
		return;
	}
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
		daemon_transport_stats(ctx_of(req), &st);
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
