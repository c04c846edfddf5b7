/*
 * mount.c - mount and unmount of one ordfs image.
 *
 * Owns: the mount sequence
 *   1. read and validate the superblock (nothing written yet; a refusal
 *      leaves the image untouched);
 *   2. replay the journal if it is not empty (journal_recover, shared with
 *      fsck), then read block 0 again and run the same validation as in
 *      step 1 on it (read_valid_super: one function for both), plus: the
 *      replay did not change the geometry this mount already uses.  A
 *      refusal here leaves the image replayed (as any mount or fsck would
 *      leave it), so the next mount refuses it at step 1 alike;
 *   3. load the allocator (bitmap checksums verified), check the root;
 *   4. read-write only: refuse an image whose superblock records an error
 *      (fsck.ordfs first), give the log its host space on a sparse image
 *      (host_space.h: refused with ENOSPC when the host has no room),
 *      mark the superblock in use (RECOVER flag set, CLEAN cleared) and
 *      open the journal; warn when the host has less free space than the
 *      sparse image may still take;
 * and the unmount sequence: write back data, close the journal (commit,
 * checkpoint, empty log), then write the superblock clean with fresh free
 * counts.  Block 0 is written directly only while the journal is closed
 * (or aborted: ordfs_record_error).  All image I/O goes through the flush
 * guard (blockdev/guard.h), which carries out flush_error=.  A failed
 * step's reason names the error: a replay that fails for want of host
 * space says where to free it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "ops.h"
#include "host_space.h"
#include "mount_internal.h"
#include "orphan/orphan.h"
#include "writeback/writeback.h"
#include "atime/atime.h"
#include "base/block_pool.h"
#include "inode/inode.h"
#include "alloc/alloc.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "base/log.h"
#include "lock/lock.h"

#define DEFAULT_CACHE_BUFFERS 8192u

/* Reasons that name more than a fixed string: valid until the next mount
 * on the same thread (ordfs_mount's *why). */
static _Thread_local char reason_buf[PATH_MAX + 256];

void ordfs_options_default(struct ordfs_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->data_mode = JOURNAL_DATA_ORDERED;
	opts->commit_interval_ms = 5000;
	opts->barrier = true;
	opts->flush_error = FLUSH_ERROR_REPORT;
	opts->journal_ioprio = JOURNAL_IOPRIO_DEFAULT;
}

static void fs_free(struct ordfs *fs)
{
	inode_cache_destroy(fs->icache);
	block_pool_destroy(fs->page_pool); /* after the inodes: their pages come back */
	alloc_destroy(fs->alloc);
	bcache_destroy(fs->cache);
	if (fs->bd != fs->raw_bd)
		blockdev_destroy(fs->bd);
	ordfs_mutex_destroy(&fs->sb_lock);
	ordfs_mutex_destroy(&fs->orphan_lock);
	ordfs_mutex_destroy(&fs->rename_lock);
	ordfs_mutex_destroy(&fs->remount_lock);
	ordfs_mutex_destroy(&fs->writeback_lock);
	pthread_cond_destroy(&fs->writeback_cond);
	sync_gate_destroy(&fs->sync_gate);
	free(fs);
}

static int check_root(struct ordfs *fs, const char **why)
{
	struct inode *root;
	int err = inode_get(fs, ORDFS_ROOT_INO, &root);
	if (err) {
		*why = "root inode is missing or corrupt";
		return err == -ENOENT ? -EUCLEAN : err;
	}
	bool is_dir = (root->d.mode & 0170000) == 0040000;
	inode_put(fs, root);
	if (!is_dir) {
		*why = "root inode is not a directory";
		return -EUCLEAN;
	}
	return 0;
}

/* The one check of block 0 a mount makes: on the first read (prev NULL)
 * and again after journal replay wrote block 0 (prev: the superblock the
 * mount read first, whose geometry it already uses: the block size and
 * checksum seed the flush guard and the replay worked with, the journal's
 * place).  ordfs_read_super validates every field; what this mount may do
 * with the features found is decided here.  Fills fs->sb. */
static int read_valid_super(struct ordfs *fs, const struct ordfs_super *prev, const char **why)
{
	int err = ordfs_read_super(fs->bd, false, &fs->sb, why);
	if (err)
		return err;
	if ((fs->sb.feature_ro_compat & ~ORDFS_FEATURE_RO_COMPAT_SUPPORTED) && !fs->opts.readonly) {
		*why = "image has features this ordfs can only mount read-only";
		return -EROFS;
	}
	if (prev && (fs->sb.log_block_size != prev->log_block_size ||
		     fs->sb.csum_seed != prev->csum_seed ||
		     fs->sb.journal_start != prev->journal_start ||
		     fs->sb.journal_blocks != prev->journal_blocks ||
		     memcmp(fs->sb.uuid, prev->uuid, ORDFS_UUID_LEN) != 0)) {
		*why = "journal replay changed the superblock's block size, checksum seed, "
		       "journal or UUID (run fsck.ordfs)";
		return -EUCLEAN;
	}
	return 0;
}

static int replay_if_needed(struct ordfs *fs, const char **why)
{
	int need = journal_needs_recovery(fs->bd, &fs->sb);
	if (need < 0) {
		*why = "journal superblock is corrupt (run fsck.ordfs)";
		return need;
	}
	if (!need)
		return 0;
	if (fs->opts.readonly) {
		*why = "journal needs recovery; mount read-write or run fsck.ordfs";
		return -EROFS;
	}
	int err = journal_recover(fs->bd, &fs->sb, 0, &fs->recovery);
	if (err == -ENOSPC) {
		/* Replay writes home blocks (some may be holes of the image);
		 * the log is intact, so a mount once there is room replays. */
		*why = ordfs_no_space_reason(fs->bd, "mount again", reason_buf, sizeof(reason_buf));
		return err;
	}
	if (err) {
		snprintf(reason_buf, sizeof(reason_buf), "journal recovery failed: %s",
			 strerror(-err));
		*why = reason_buf;
		return err;
	}
	/* Replay may have changed block 0 (orphan list, features, a grow):
	 * everything the first read checked is checked again. */
	struct ordfs_super before = fs->sb;
	err = read_valid_super(fs, &before, why);
	if (err || fs->recovery.journal_err == 0)
		return err;
	/* The journal stopped on an error it recorded (remount-ro): the
	 * superblock says so from now on, until fsck clears it.  The value
	 * is the image's: journal_recover gives a negative errno, in range. */
	fs->sb.state |= ORDFS_STATE_ERROR;
	fs->sb.last_error_code = (uint32_t)-fs->recovery.journal_err;
	err = ordfs_write_super(fs->bd, &fs->sb, false);
	if (!err && FS_OPT(fs, barrier))
		err = blockdev_flush(fs->bd);
	if (err)
		*why = "cannot write the superblock";
	return err;
}

/* The journal aborted (cfg.aborted): say so, and carry out the policy:
 * errors= when the journal found the error itself, flush_error= else. */
static void journal_aborted_cb(void *ctx, int err, bool internal)
{
	struct ordfs *fs = ctx;
	if (ordfs_is_shut_down(fs))
		return; /* asked for (shutdown.c): no error, no policy */
	ordfs_log(LOG_ERR, "journal aborted (%s): the filesystem is read-only from now on",
		  strerror(-err));
	if (internal) {
		ordfs_error_internal(fs, err);
	} else if (FS_OPT(fs, flush_error) == FLUSH_ERROR_REMOUNT_RO) {
		ordfs_record_error(fs, err);
	} else if (FS_OPT(fs, flush_error) == FLUSH_ERROR_ABORT && fs->opts.fatal) {
		ordfs_mutex_lock(&fs->sb_lock);
		bool first = !fs->stopped;
		fs->stopped = true;
		ordfs_mutex_unlock(&fs->sb_lock);
		if (first)
			fs->opts.fatal(fs->opts.fatal_ctx, err);
	}
}

/* A write or flush of the image failed (the guard tells us).  ENOSPC from
 * the host of a sparse image has its own line, once per episode
 * (blockdev/hostfs.h). */
static void guard_error_cb(void *ctx, int err)
{
	struct ordfs *fs = ctx;
	if (ordfs_is_shut_down(fs))
		return;
	struct journal *j = __atomic_load_n(&fs->journal, __ATOMIC_ACQUIRE);
	enum flush_error_policy policy = FS_OPT(fs, flush_error);
	if (j && (policy == FLUSH_ERROR_REMOUNT_RO || policy == FLUSH_ERROR_ABORT))
		journal_abort(j, err);
	else if (policy == FLUSH_ERROR_REPORT && !(err == -ENOSPC && fs->bd->sparse) &&
		 __atomic_fetch_add(&fs->io_errors_logged, 1, __ATOMIC_RELAXED) < 10)
		ordfs_log(LOG_WARNING, "a write or flush of the image failed (%s); "
			  "flush_error=report: the callers that depend on it get the error",
			  strerror(-err));
}

static int open_guard(struct ordfs *fs, const char **why)
{
	struct flush_guard_config gc = {
		.policy = fs->opts.flush_error,
		.retain = fs->opts.flush_error == FLUSH_ERROR_REPORT && fs->opts.barrier,
		.block_size = fs->block_size,
		.on_error = guard_error_cb,
		.on_error_ctx = fs,
	};
	int err = flush_guard_create(fs->raw_bd, &gc, &fs->bd);
	if (err)
		*why = "out of memory";
	return err;
}

static int open_journal(struct ordfs *fs, bool readonly, const char **why)
{
	const struct ordfs_options *opts = &fs->opts;
	struct journal_config jc = {
		.data_mode = opts->data_mode,
		.commit_interval_ms = opts->commit_interval_ms,
		.barrier = opts->barrier,
		.ioprio_plus1 = opts->journal_ioprio + 1,
		.release_freed = ordfs_release_freed,
		.release_ctx = fs,
		.retry_failed_commits = opts->flush_error == FLUSH_ERROR_REPORT,
		.aborted = journal_aborted_cb,
		.aborted_ctx = fs,
		.start_readonly = readonly,
	};
	int err = journal_open(fs->bd, fs->cache, &fs->sb, &jc, &fs->journal);
	if (err)
		*why = "cannot open the journal";
	return err;
}

int ordfs_mount_mark_in_use(struct ordfs *fs)
{
	struct ordfs_timespec now = ordfs_now();
	fs->sb.feature_incompat |= ORDFS_FEATURE_INCOMPAT_RECOVER;
	fs->sb.state &= ~ORDFS_STATE_CLEAN;
	fs->sb.mount_time = (uint64_t)now.sec;
	fs->sb.mount_count++;
	int err = ordfs_write_super(fs->bd, &fs->sb, false);
	if (!err && FS_OPT(fs, barrier))
		err = blockdev_flush(fs->bd);
	return err;
}

int ordfs_mount(struct blockdev *bd, const struct ordfs_options *opts, struct ordfs **out,
		const char **why)
{
	static const char *no_reason = "mount failed";
	const char *reason = no_reason;
	struct ordfs *fs = calloc(1, sizeof(*fs));
	if (!fs) {
		*why = "out of memory";
		return -ENOMEM;
	}
	fs->bd = fs->raw_bd = bd;
	fs->opts = *opts;
	ordfs_mutex_init(&fs->sb_lock, LOCK_SB, "sb_lock");
	ordfs_mutex_init(&fs->orphan_lock, LOCK_ORPHAN, "orphan_lock");
	ordfs_mutex_init(&fs->rename_lock, LOCK_RENAME, "rename_lock");
	ordfs_mutex_init(&fs->remount_lock, LOCK_REMOUNT, "remount_lock");
	ordfs_mutex_init(&fs->writeback_lock, LOCK_WRITEBACK, "writeback_lock");
	pthread_cond_init(&fs->writeback_cond, NULL);
	sync_gate_init(&fs->sync_gate);

	int err = read_valid_super(fs, NULL, &reason);
	if (err)
		goto fail;
	fs->block_size = ordfs_block_size(&fs->sb);
	fs->csum_seed = fs->sb.csum_seed;
	fs->dirty_limit_pages = opts->dirty_limit_bytes / fs->block_size;
	long ram_pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (ram_pages > 0 && page > 0)
		fs->dirty_limit_cap_pages = (uint64_t)ram_pages * (uint64_t)page / 8 / fs->block_size;
	err = open_guard(fs, &reason);
	if (err)
		goto fail;
	bd = fs->bd;

	err = replay_if_needed(fs, &reason);
	if (err)
		goto fail;
	if (!fs->opts.errors) /* from block 0 as replay left it */
		fs->opts.errors = fs->sb.errors;

	err = bcache_create(bd, fs->block_size, fs->sb.block_count,
			    opts->cache_buffers ? opts->cache_buffers : DEFAULT_CACHE_BUFFERS,
			    &fs->cache);
	if (!err)
		err = block_pool_new(fs->block_size, &fs->page_pool);
	if (!err)
		err = inode_cache_create(fs, orphan_evict, &fs->icache);
	if (err) {
		reason = "out of memory";
		goto fail;
	}
	uint64_t bad_block = 0;
	err = alloc_load(fs->cache, &fs->sb, opts->check_mode ? ALLOC_LOAD_TOLERANT : 0,
			 &fs->alloc, &bad_block);
	if (err) {
		reason = err == -EUCLEAN ? "bad bitmap block checksum (run fsck.ordfs)"
					 : "cannot read the bitmaps";
		goto fail;
	}
	err = check_root(fs, &reason);
	if (err)
		goto fail;

	if (!opts->readonly && (fs->sb.state & ORDFS_STATE_ERROR) && !opts->fsck_repair) {
		reason = "the filesystem recorded an error; run fsck.ordfs before mounting "
			 "it read-write";
		err = -EUCLEAN;
		goto fail;
	}
	if (opts->readonly && opts->rw_capable && !opts->check_mode &&
	    !(fs->sb.feature_ro_compat & ~ORDFS_FEATURE_RO_COMPAT_SUPPORTED)) {
		/* As if mounted read-write and remounted read-only, except
		 * that nothing is written: the image stays clean. */
		err = open_journal(fs, true, &reason);
		if (err)
			goto fail;
		fs->opts.readonly = false;
		fs->remounted_ro = true;
		fs->rw_start_pending = true;
		writeback_thread_start(fs);
	} else if (!opts->readonly) {
		err = ordfs_host_space_for_log(bd, &fs->sb);
		if (err) {
			reason = err == -ENOSPC ? ordfs_no_space_reason(bd, "mount again", reason_buf,
									 sizeof(reason_buf))
						: "cannot give the journal its host space";
			goto fail;
		}
		err = ordfs_mount_mark_in_use(fs);
		if (err) {
			reason = "cannot write the superblock";
			goto fail;
		}
		err = open_journal(fs, false, &reason);
		if (err)
			goto fail;
		err = orphan_process_list(fs);
		if (err) {
			reason = "cannot free the inodes on the orphan list (run fsck.ordfs)";
			goto fail_journal;
		}
		writeback_thread_start(fs);
		if (!opts->check_mode && !opts->fsck_repair)
			ordfs_warn_host_space(bd);
	}
	*out = fs;
	return 0;
fail_journal:
	journal_close(fs->journal);
	fs->journal = NULL;
fail:
	*why = reason;
	fs_free(fs);
	return err;
}

int ordfs_mount_write_clean(struct ordfs *fs)
{
	struct ordfs_super sb;
	const char *why;
	/* Block 0 on disk now holds everything the journal checkpointed. */
	int err = ordfs_read_super(fs->bd, false, &sb, &why);
	if (err)
		return err;
	struct alloc_counts counts;
	alloc_get_counts(fs->alloc, &counts);
	sb.free_blocks = counts.free_blocks + counts.reserved_blocks + counts.pending_free;
	sb.free_inodes = counts.free_inodes;
	sb.feature_incompat &= ~ORDFS_FEATURE_INCOMPAT_RECOVER;
	sb.state |= ORDFS_STATE_CLEAN;
	sb.write_time = (uint64_t)ordfs_now().sec;
	err = ordfs_write_super(fs->bd, &sb, true);
	if (!err && FS_OPT(fs, barrier))
		err = blockdev_flush(fs->bd);
	return err;
}

int ordfs_unmount(struct ordfs *fs)
{
	int err = 0;

	writeback_thread_stop(fs);
	if (ordfs_is_shut_down(fs)) {
		/* Nothing reaches the image any more (shutdown.c): it stays as
		 * the shutdown left it, for the next mount to replay. */
		if (fs->journal)
			(void)journal_close(fs->journal);
		fs->journal = NULL;
	} else if (fs->journal && journal_is_readonly(fs->journal)) {
		/* Mounted or remounted read-only: the image was left clean
		 * then (remount.c), or never written. */
		err = journal_close(fs->journal);
		fs->journal = NULL;
	} else if (fs->journal) {
		err = inode_evict_unlinked(fs);
		if (!err)
			err = writeback_all(fs, false);
		if (!err)
			err = atime_write_lazy(fs, true);
		/* what the allocator refused reaches errors= before the
		 * image can be marked clean */
		(void)writeback_report_refused(fs);
		int jerr = journal_close(fs->journal);
		fs->journal = NULL;
		if (!err)
			err = jerr;
		if (!err)
			err = ordfs_mount_write_clean(fs);
	}
	fs_free(fs);
	return err;
}
