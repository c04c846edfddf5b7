/*
 * ordfs_ioctl.h - the ioctls the ordfs daemon answers on any file or
 * directory of a mounted ordfs (ordfsctl is their user).
 *
 * Linux does not pass sync(2) or syncfs(2) on to a FUSE daemon (only
 * virtiofs gets them), so a plain `sync` makes nothing of ordfs durable
 * sooner: it waits for the next periodic commit.  ORDFS_IOC_SYNC is the
 * way to ask for it now.
 *
 * Rules: FUSE passes only ioctls whose size and direction are encoded in
 * the number (restricted ioctls), so every argument is a fixed struct.
 * The ORDFS_IOC_TEST_* ioctls exist only in a daemon built with
 * -Dtest_hooks=true (src/daemon/test_hooks.c; ENOTTY in any other build):
 * ORDFS_IOC_TEST_FAULT works only in one started with ORDFS_TEST_FAULTS=1
 * in its environment, ORDFS_IOC_TEST_MARK only with ORDFS_TEST_RECORD=PATH
 * (ENOTTY otherwise).
 */
#ifndef ORDFS_IOCTL_H
#define ORDFS_IOCTL_H

#include <linux/ioctl.h>
#include <stdint.h>

/* Writes back all dirty data, commits the journal and flushes the image. */
#define ORDFS_IOC_SYNC _IO('o', 0x01)

/* What `ordfsctl stats` shows (src/stats/stats.c fills it). */
enum ordfs_flush_state {
	ORDFS_FLUSH_OK = 0,        /* flushes work */
	ORDFS_FLUSH_FAILING = 1,   /* the last flush failed; writes are kept and retried */
	ORDFS_FLUSH_UNSUPPORTED = 2, /* the image cannot be flushed; flushes skipped */
	ORDFS_FLUSH_DISABLED = 3,  /* nobarrier */
	ORDFS_FLUSH_READONLY = 4,  /* the journal stopped after an error: read-only */
};

struct ordfs_stats {
	uint32_t version;          /* ORDFS_STATS_VERSION */
	uint32_t block_size;
	char options[512];         /* the mount options in force */
	uint64_t journal_blocks;   /* log size (blocks) */
	uint64_t journal_used;     /* blocks holding transactions not yet home */
	uint64_t commits;          /* transactions committed since mount */
	uint64_t commits_requested; /* ... of which someone waited for (fsync, sync) */
	uint64_t commit_failures;
	uint64_t checkpoints;
	uint64_t flushes;          /* flushes of the image passed to the host */
	uint64_t flushes_skipped;  /* asked for with nothing new to make durable */
	uint64_t flush_errors, write_errors;
	uint32_t flush_state;      /* enum ordfs_flush_state */
	uint32_t reserved;
	uint64_t retained_blocks;  /* copies kept for a retry after a failed flush */
	uint64_t dirty_bytes;      /* file data not yet written back */
	uint64_t dirty_limit_bytes; /* writers past it write back their own data */
	uint64_t fsyncs;           /* fsync/fdatasync calls since mount */
	uint64_t fsync_mean_ns, fsync_p50_ns, fsync_p90_ns, fsync_p99_ns, fsync_p999_ns,
		fsync_max_ns;
	uint64_t write_bytes;      /* file data taken by write requests (through
				      FUSE, from the kernel) since mount */
	uint64_t copy_range_bytes; /* file data copied inside the image by
				      copy_file_range since mount */
	/* Version 2: how requests reach the daemon (-o io_uring). */
	char transport[16];        /* "io_uring" or "/dev/fuse" */
	char transport_note[128];  /* on /dev/fuse: why not io_uring */
	uint32_t uring_queues;     /* the kernel's queues (one per possible CPU) */
	uint32_t uring_threads;    /* threads serving them, all queues */
	uint32_t uring_threads_peak_queue; /* most threads one queue has had */
	uint32_t reserved2;
	uint64_t uring_requests;   /* requests answered through the rings */
	uint64_t dev_requests;     /* requests read from /dev/fuse (not counted
				      with io_uring=off) */
};
#define ORDFS_STATS_VERSION 2
#define ORDFS_IOC_STATS _IOR('o', 0x02, struct ordfs_stats)

/* Discards every free block of the image (fstrim): an image file gets
 * holes and shrinks on the host.  Out: the bytes discarded. */
struct ordfs_trim {
	uint64_t trimmed_bytes;
};
#define ORDFS_IOC_TRIM _IOR('o', 0x03, struct ordfs_trim)

/* Remount (mount -o remount through the fuse.ordfs helper, ordfsctl
 * remount): in, ordfs's options to change, comma-separated ("ro",
 * "commit=10", "strictatime", ...; not the kernel's nosuid and the like);
 * out, on success the options in force afterwards, on failure why (both
 * NUL-terminated).  CAP_SYS_ADMIN or the mount's owner. */
struct ordfs_remount {
	char opts[1024];
	char reply[1024];
};
#define ORDFS_IOC_REMOUNT _IOWR('o', 0x04, struct ordfs_remount)

/* Grow the mounted filesystem (resize.ordfs on a mounted image): the
 * daemon asks its device for its size now (an image file extended, an NBD
 * export resized) and grows to size_bytes (whole blocks), or with 0 to
 * the whole device.  The grow is committed when the ioctl returns.  In:
 * size_bytes; out: the block counts before and after and the block size,
 * and on failure why (NUL-terminated).  CAP_SYS_ADMIN or the mount's
 * owner. */
struct ordfs_grow {
	uint64_t size_bytes;
	uint64_t old_blocks;
	uint64_t new_blocks;
	uint32_t block_size;
	uint32_t reserved;
	char reply[512];
};
#define ORDFS_IOC_GROW _IOWR('o', 0x05, struct ordfs_grow)

/* The online scrub (ordfsctl scrub, check/scrub.h): checks the mounted
 * filesystem's metadata and cross-references (bitmaps against extent
 * trees and inode slots, blocks mapped twice) while it stays in use, at
 * low priority; what it finds is logged, recorded as the error state
 * (the errors= policy applies; the next read-write mount asks for fsck)
 * and returned: the counts and the first lines.  CAP_SYS_ADMIN or the
 * mount's owner. */
#define ORDFS_SCRUB_LINES 16
#define ORDFS_SCRUB_LINE_LEN 192
struct ordfs_scrub {
	uint64_t inodes;           /* inodes in use checked */
	uint64_t dirs;             /* of which directories */
	uint64_t blocks;           /* blocks they map */
	uint64_t elapsed_ns;       /* how long the scrub took */
	uint32_t problems;         /* found (0: clean) */
	uint32_t lines;            /* how many of them are in line[] */
	char line[ORDFS_SCRUB_LINES][ORDFS_SCRUB_LINE_LEN];
};
#define ORDFS_IOC_SCRUB _IOR('o', 0x06, struct ordfs_scrub)

/* The kernel's shutdown ioctl (ext4's EXT4_IOC_SHUTDOWN, XFS's
 * XFS_IOC_GOINGDOWN, xfstests' godown), in linux/fs.h only since Linux
 * 6.x headers.  Its u32 argument is the flags below; the number says
 * _IOR, so FUSE carries nothing in and the daemon reads the flags from
 * the caller's memory where it can (design/remount-shutdown.md). */
#ifndef FS_IOC_SHUTDOWN
#define FS_IOC_SHUTDOWN _IOR('X', 125, uint32_t)
#endif
#ifndef FS_SHUTDOWN_FLAGS_DEFAULT
#define FS_SHUTDOWN_FLAGS_DEFAULT 0x0    /* write back everything first */
#define FS_SHUTDOWN_FLAGS_LOGFLUSH 0x1   /* commit the journal first */
#define FS_SHUTDOWN_FLAGS_NOLOGFLUSH 0x2 /* nothing first */
#endif

/* Test only: a mark in the log of the recording device under the image (a
 * daemon started with ORDFS_TEST_RECORD=PATH streams every write and flush
 * of the image to PATH; tests/crash/crash_sqlite replays it).  text is
 * NUL-terminated. */
struct ordfs_test_mark {
	char text[248];
};
#define ORDFS_IOC_TEST_MARK _IOW('o', 0x7e, struct ordfs_test_mark)

/* Test only: arm the fault device under the image (see blockdev.h). */
struct ordfs_test_fault {
	uint32_t op;         /* 0 write, 1 flush, 2 heal (disarm and repair) */
	uint32_t persistent; /* nonzero: the device stays broken */
	int32_t err;         /* positive errno, e.g. EIO */
	uint32_t reserved;
	uint64_t nth;        /* 1 = the next operation */
};
#define ORDFS_IOC_TEST_FAULT _IOW('o', 0x7f, struct ordfs_test_fault)

#endif
