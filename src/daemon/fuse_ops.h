/*
 * fuse_ops.h - the FUSE lowlevel operations table of the ordfs daemon, and
 * the context its requests carry (the op files: see fuse_glue.h).
 *
 * Design: docs/design/daemon.md, caches.md.
 */
#ifndef ORDFS_FUSE_OPS_H
#define ORDFS_FUSE_OPS_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

struct ordfs;

#include <pthread.h>
#include "../lock/lock.h"

struct blockdev;
struct open_file;
struct fuse_session;
struct daemon_options;
struct transport;

/* What main.c's device_grew hook says of the image's device. */
struct device_room {
	uint64_t size;      /* bytes, after asking the device */
	bool owner_record;  /* an owner record is kept at its end (owner.h) */
};

struct daemon_ctx {
	struct ordfs *fs;
	/* An online grow asks the device for its size now and moves the owner
	 * record to its new end (main.c); why on failure. */
	int (*device_grew)(struct daemon_ctx *dc, struct device_room *room, char *why,
			   size_t why_len);
	double attr_timeout;  /* seconds the kernel may cache attributes */
	double entry_timeout; /* seconds the kernel may cache names */
	double negative_timeout; /* seconds it may remember that a name is absent */
	bool writeback_cache; /* -o writeback_cache: ask for FUSE's writeback cache */
	unsigned read_ahead_kb; /* -o read_ahead_kb: INIT must not ask for less */
	bool no_copy_range;   /* ORDFS_NO_COPY_FILE_RANGE=1: copy_file_range is
				 answered ENOSYS, so the kernel copies through
				 read and write (fuse_copy_range.c) */
#ifdef ORDFS_TEST_HOOKS /* -Dtest_hooks=true only: test_hooks.c */
	struct blockdev *test_faults; /* the fault device (ORDFS_TEST_FAULTS=1) */
	struct blockdev *test_record; /* the streaming recorder (ORDFS_TEST_RECORD) */
#endif
	struct ordfs_mutex files_lock;   /* open_files */
	struct fuse_session *se;         /* for notifications to the kernel */
	struct transport *transport;     /* how requests come (ordfsctl stats) */
	const struct daemon_options *options; /* as started (a remount's base) */
	struct open_file *open_files; /* every open file's error cursor */
};

/* Frees the error cursors of files still open when the FUSE loop ended
 * (a lazy unmount, an abort): the kernel never sends their release. */
void daemon_release_all_files(struct daemon_ctx *dc);

/* How long the kernel may trust what it caches: ordfs is the only writer
 * of its image and every change but those the filesystem makes on its own
 * reaches it through the kernel, which updates or drops what it holds;
 * the rest the daemon tells it (daemon_attr_changed).  design/caches.md,
 * "What the kernel caches". */
#define DAEMON_ATTR_TIMEOUT 86400.0
#define DAEMON_ENTRY_TIMEOUT 86400.0
#define DAEMON_NEGATIVE_TIMEOUT 86400.0

/* struct ordfs_options.attr_changed: tells the kernel to forget the
 * inode's cached attributes (ctx: the struct daemon_ctx). */
void daemon_attr_changed(void *ctx, uint32_t ino);

/* Does the environment turn copy_file_range off (ORDFS_NO_COPY_FILE_RANGE
 * set to 1: the benchmarks' reference, the kernel's fallback)?
 * (fuse_copy_range.c) */
bool copy_range_disabled(void);

extern const struct fuse_lowlevel_ops ordfs_fuse_ops;

#endif
