/*
 * fs.h - one mounted ordfs: the object every layer above the block device
 * hangs off (a header shared by all layers; each field says which layer's
 * code owns it), the mount options, and mount/unmount (mount/mount.c).
 *
 * Owns: struct ordfs, the in-memory superblock, the mount sequence
 * (validate superblock -> recover journal -> load allocator -> open journal
 * -> mark the image in use) and the unmount sequence (write back data ->
 * commit -> checkpoint -> mark clean).
 *
 * Rules:
 *  - ordfs_mount validates everything before it writes anything; a refused
 *    mount leaves the image byte-for-byte unchanged.
 *  - Block 0 is written directly only while the journal is closed (before
 *    journal_open, after journal_close); while mounted it changes only
 *    through the journal (orphan list head).
 */
#ifndef ORDFS_FS_H
#define ORDFS_FS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"
#include "journal/journal.h"
#include "blockdev/guard.h"
#include "base/gate.h"
#include "atime/atime.h"
#include "base/latency.h"
#include "lock/lock.h"
#include "super/super.h"

struct blockdev;
struct bcache;
struct block_pool;
struct alloc;
struct inode_cache;

struct ordfs_options {
	enum journal_data_mode data_mode;
	unsigned commit_interval_ms; /* default 5000 */
	bool barrier;                /* default true */
	bool discard;                /* punch freed blocks out of the image */
	bool readonly;
	bool check_mode;             /* the checker's mount: read-only, bad bitmap
					blocks tolerated (alloc.h) */
	bool fsck_repair;            /* fsck's read-write mount: allowed on an
					image that recorded an error */
	uint32_t cache_buffers;      /* metadata buffer cache size; 0 = default */
	uint64_t dirty_limit_bytes;  /* delayed-allocation dirty data bound; 0 = self-tuned */
	unsigned journal_ioprio;     /* 0..7, the commit thread's I/O priority */
	enum flush_error_policy flush_error; /* failing write/flush of the image */
	uint32_t errors;             /* ORDFS_ERRORS_*; 0 = what the superblock says */
	struct atime_policy atime;   /* default relatime */
	/* flush_error=abort / errors=abort: called once when the filesystem
	 * must stop (the daemon unmounts and exits non-zero).  NULL: the
	 * filesystem only goes read-only. */
	void (*fatal)(void *ctx, int err);
	void *fatal_ctx;
	/* The filesystem changed an inode's attributes on its own (not in a
	 * request about them: st_blocks after writeback), so whoever caches
	 * them (the kernel, through the daemon) must forget them.  NULL:
	 * nobody caches.  Called with no handle held, possibly under the
	 * inode's lock: it must not call back into the filesystem. */
	void (*attr_changed)(void *ctx, uint32_t ino);
	void *attr_changed_ctx;
	/* readonly on a device the caller opened read-write: the journal is
	 * opened read-only (nothing is written), so that a remount can make
	 * the filesystem read-write as ext4's does (mount/remount.c). */
	bool rw_capable;
	/* Called by that remount before it writes anything, with remount_lock
	 * held: the daemon claims the image's owner record, as a read-write
	 * mount does at its start.  0, or an error with *why set.  NULL:
	 * nothing to claim. */
	int (*claim_for_write)(void *ctx, const char **why);
	void *claim_ctx;
};

void ordfs_options_default(struct ordfs_options *opts);

/* Options a remount changes while the filesystem runs (mount/remount.c):
 * barrier, discard, errors, flush_error, commit_interval_ms,
 * journal_ioprio and atime.  Other threads read them with FS_OPT (or
 * fs_atime_policy), the remount writes them with FS_OPT_SET: never as
 * plain fields once the filesystem is mounted. */
#define FS_OPT(fs, f) __atomic_load_n(&(fs)->opts.f, __ATOMIC_RELAXED)
#define FS_OPT_SET(fs, f, v) __atomic_store_n(&(fs)->opts.f, (v), __ATOMIC_RELAXED)

struct ordfs {
	/* mount/ sets these up; every layer reads them. */
	struct blockdev *bd;      /* the flush guard over the caller's device */
	struct blockdev *raw_bd;  /* the caller's device (not owned) */
	struct ordfs_options opts;
	uint32_t block_size;
	uint32_t csum_seed;
	struct bcache *cache;
	struct journal *journal; /* NULL when mounted read-only without rw_capable */
	struct alloc *alloc;
	struct inode_cache *icache;
	struct block_pool *page_pool; /* file data pages' memory (base/block_pool.h) */
	struct journal_recovery_info recovery; /* what the mount replayed */

	/* super/ */
	struct ordfs_mutex sb_lock; /* guards sb */
	struct ordfs_super sb;
	bool stopped;                 /* fatal() was called (sb_lock) */
	bool error_recorded;          /* sb_lock */
	uint32_t io_errors_logged;    /* flush_error=report logs the first few */
	bool shut_down;               /* FS_IOC_SHUTDOWN (mount/shutdown.c; atomic) */
	/* mount/remount.c: a remount,ro in force or under way (atomic), and
	 * the writes that passed the gate (ordfs_write_enter) and are not
	 * done yet (atomic). */
	bool remounted_ro;
	uint32_t writers_in;
	struct ordfs_mutex remount_lock; /* one remount at a time */
	/* Mounted read-only with opts.rw_capable and not read-write since:
	 * what a read-write mount does at its start (the orphan list, the
	 * log's host space, the owner record) is still to do (remount_lock). */
	bool rw_start_pending;

	/* alloc/ (discard.c) */
	bool discard_off;             /* the backend refused a discard (atomic) */

	/* inode/ (pages.c) */
	uint64_t dirty_pages;         /* delayed pages fs-wide (atomic) */

	/* file/: file data taken in since mount, for ordfsctl stats */
	uint64_t write_bytes;         /* by write requests (read_write.c, atomic) */
	uint64_t copy_range_bytes;    /* copied in the image (copy_range.c, atomic) */

	/* orphan/ */
	struct ordfs_mutex orphan_lock;  /* orphan list (orphan.h): sb.orphan_head,
					 next_orphan, the in-memory links */
	struct inode *orphan_first;   /* orphan_lock: the list in memory */
	uint32_t orphan_count;        /* orphan_lock (atomic reads): its length */

	/* writeback/: the thread, the dirty limit */
	pthread_t writeback_thread;
	bool writeback_started;
	bool writeback_stop;          /* writeback_lock */
	bool writeback_kicked;        /* writeback_lock: early writeback asked for */
	bool writeback_rearm;         /* writeback_lock: the interval changed */
	struct ordfs_mutex writeback_lock;
	pthread_cond_t writeback_cond;
	uint64_t dirty_limit_pages;   /* set by dirty_limit=; 0: self-tuned */
	uint64_t dirty_limit_cap_pages; /* the self-tuned limit stays below (RAM/8) */
	uint64_t write_bandwidth;     /* bulk writes, bytes/s, running average (atomic) */

	/* base/gate.c, shared by writeback/ (yields) and flush/ (enters) */
	struct sync_gate sync_gate;   /* waited-on syncs before background writeback */

	/* namei/ */
	struct ordfs_mutex rename_lock;  /* directory renames across parents */

	/* flush/ */
	struct latency_hist fsync_latency; /* ordfs_fsync since mount (atomic) */
};

/* The filesystem's size in blocks.  It only grows while mounted (an online
 * grow, mount/grow_online.c, stores it under sb_lock with a release), so
 * any layer reads it here without sb_lock. */
static inline uint64_t fs_block_count(const struct ordfs *fs)
{
	return __atomic_load_n(&fs->sb.block_count, __ATOMIC_ACQUIRE);
}

/* The atime policy in force (a remount may change it at any time). */
static inline struct atime_policy fs_atime_policy(const struct ordfs *fs)
{
	struct atime_policy p = {
		.mode = FS_OPT(fs, atime.mode),
		.nodiratime = FS_OPT(fs, atime.nodiratime),
		.lazytime = FS_OPT(fs, atime.lazytime),
	};
	return p;
}

/* Mounts the image on bd (not owned).  On failure returns a negative errno
 * and a one-line reason in *why; nothing has been written. */
int ordfs_mount(struct blockdev *bd, const struct ordfs_options *opts, struct ordfs **out,
		const char **why);
/* Writes back all data, commits, checkpoints, marks the image clean and
 * frees fs.  Returns the first error (fs is freed either way). */
int ordfs_unmount(struct ordfs *fs);


#endif
