/*
 * fs.c - mount and unmount of one ordfs image.
 *
 * Owns: the mount sequence
 *   1. read and validate the superblock (nothing written yet; a refusal
 *      leaves the image untouched);
 *   2. replay the journal if it is not empty (journal_recover, shared with
 *      fsck);
 *   3. load the allocator (bitmap checksums verified), check the root;
 *   4. read-write only: refuse an image whose superblock records an error
 *      (fsck.ordfs first), mark the superblock in use (RECOVER flag set,
 *      CLEAN cleared) and open the journal;
 * and the unmount sequence: write back data, close the journal (commit,
 * checkpoint, empty log), then write the superblock clean with fresh free
 * counts.  Block 0 is written directly only while the journal is closed
 * (or aborted: ordfs_record_error).  All image I/O goes through the flush
 * guard (flush/guard.h), which carries out flush_error=.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "ops.h"
#include "file/file.h"
#include "inode/inode.h"
#include "alloc/alloc.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "base/log.h"
#include "lock/lock.h"

#define DEFAULT_CACHE_BUFFERS 8192u

void ordfs_options_default(struct ordfs_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->data_mode = JOURNAL_DATA_ORDERED;
	opts->commit_interval_ms = 5000;
	opts->barrier = true;
	opts->flush_error = FLUSH_ERROR_REPORT;
	opts->journal_ioprio = JOURNAL_IOPRIO_DEFAULT;
}

int ordfs_write_super_journaled(struct ordfs *fs, struct handle *h)
{
	struct buf *b;
	int err = bcache_read(fs->cache, 0, &b);
	if (err)
		return err;
	err = journal_get_write_access(h, b, 0);
	if (!err)
		ordfs_super_encode(&fs->sb, b->data);
	bcache_put(fs->cache, b);
	return err;
}

struct ordfs_timespec ordfs_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct ordfs_timespec t = { ts.tv_sec, (uint32_t)ts.tv_nsec };
	return t;
}

int ordfs_read_super(struct blockdev *bd, bool use_backup, struct ordfs_super *sb,
		     const char **why)
{
	uint8_t raw[ORDFS_SB_SIZE];
	int err;

	if (bd->size < ORDFS_SB_SIZE) {
		*why = "image too small to hold a superblock";
		return -EINVAL;
	}
	err = blockdev_read(bd, raw, sizeof(raw), 0);
	if (err) {
		*why = "cannot read the superblock";
		return err;
	}
	if (use_backup) {
		struct ordfs_super primary;
		const char *ignored;
		/* The backup lives in the last block; its position comes from the
		 * primary's geometry if that decodes, else from the image size
		 * for each possible block size. */
		if (ordfs_super_decode(raw, &primary, &ignored) == 0) {
			uint64_t off = (primary.block_count - 1) << primary.log_block_size;
			err = blockdev_read(bd, raw, sizeof(raw), off);
		} else {
			err = -EUCLEAN;
			for (uint32_t lg = ORDFS_MIN_BLOCK_LOG; lg <= ORDFS_MAX_BLOCK_LOG; lg++) {
				uint64_t bs = 1ull << lg;
				if (bd->size < 2 * bs)
					break;
				uint64_t off = (bd->size / bs - 1) * bs;
				if (blockdev_read(bd, raw, sizeof(raw), off) == 0 &&
				    ordfs_super_decode(raw, sb, &ignored) == 0 &&
				    sb->log_block_size == lg) {
					err = 0;
					break;
				}
			}
			if (err) {
				*why = "no valid backup superblock found";
				return err;
			}
		}
		if (err) {
			*why = "cannot read the backup superblock";
			return err;
		}
	}
	err = ordfs_super_decode(raw, sb, why);
	if (err)
		return err;
	if (bd->size / ordfs_block_size(sb) < sb->block_count) {
		*why = "image is smaller than the filesystem it holds (truncated?)";
		return -EUCLEAN;
	}
	return 0;
}

int ordfs_write_super(struct blockdev *bd, const struct ordfs_super *sb, bool backup)
{
	uint32_t bs = ordfs_block_size(sb);
	uint8_t *blk = calloc(1, bs);
	if (!blk)
		return -ENOMEM;
	ordfs_super_encode(sb, blk);
	/* Block 0 holds only the superblock; the rest of it stays zero. */
	int err = blockdev_write(bd, blk, bs, 0);
	if (!err && backup)
		err = blockdev_write(bd, blk, bs, (sb->block_count - 1) * bs);
	free(blk);
	return err;
}

int ordfs_clear_error_state(struct blockdev *bd, bool *cleared)
{
	struct ordfs_super sb;
	const char *why;
	bool jcleared = false;
	*cleared = false;
	int err = ordfs_read_super(bd, false, &sb, &why);
	if (!err && journal_needs_recovery(bd, &sb) == 0)
		err = journal_clear_error(bd, &sb, &jcleared);
	if (!err && (sb.state & ORDFS_STATE_ERROR)) {
		sb.state &= ~ORDFS_STATE_ERROR;
		err = ordfs_write_super(bd, &sb, false);
		if (!err)
			err = blockdev_flush(bd);
		*cleared = !err;
	}
	*cleared = *cleared || jcleared;
	return err;
}

/* Writes back delayed data every commit interval, so data written without
 * fsync reaches the image within about two intervals (ext3's ordered mode
 * behaviour; ext4 waits up to 30 s); in between, when kicked (a writer
 * went past file_background_pages), writes back early in slices. */
static void *writeback_main(void *arg)
{
	struct ordfs *fs = arg;
	ordfs_mutex_lock(&fs->writeback_lock);
	struct timespec next; /* the next full pass: kicks do not postpone it */
	clock_gettime(CLOCK_REALTIME, &next);
	while (!fs->writeback_stop) {
		uint64_t ns = (uint64_t)next.tv_nsec +
			      (uint64_t)(fs->opts.commit_interval_ms % 1000) * 1000000u;
		next.tv_sec += fs->opts.commit_interval_ms / 1000 + (time_t)(ns / 1000000000u);
		next.tv_nsec = (long)(ns % 1000000000u);
		int timed_out = 0;
		while (!fs->writeback_stop && !timed_out) {
			if (fs->writeback_kicked) {
				/* A writer went past the background threshold. */
				ordfs_mutex_unlock(&fs->writeback_lock);
				/* Errors stay with the pages (and go to errseq). */
				ordfs_report_error(fs, file_writeback_early(fs),
						   "background writeback");
				ordfs_mutex_lock(&fs->writeback_lock);
				__atomic_store_n(&fs->writeback_kicked, false, __ATOMIC_RELAXED);
				continue;
			}
			timed_out = ordfs_cond_timedwait(&fs->writeback_cond, &fs->writeback_lock,
							   &next) == ETIMEDOUT;
		}
		if (fs->writeback_stop)
			break;
		ordfs_mutex_unlock(&fs->writeback_lock);
		/* Errors stay with the pages (and go to errseq). */
		ordfs_report_error(fs, file_writeback_periodic(fs), "background writeback");
		ordfs_report_error(fs, atime_write_lazy(fs, false), /* lazytime: a day old */
				   "writing lazy access times");
		ordfs_mutex_lock(&fs->writeback_lock);
		clock_gettime(CLOCK_REALTIME, &next);
	}
	ordfs_mutex_unlock(&fs->writeback_lock);
	return NULL;
}

void ordfs_kick_writeback(struct ordfs *fs)
{
	if (!fs->writeback_started || __atomic_load_n(&fs->writeback_kicked, __ATOMIC_RELAXED))
		return;
	ordfs_mutex_lock(&fs->writeback_lock);
	if (!fs->writeback_kicked) {
		__atomic_store_n(&fs->writeback_kicked, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&fs->writeback_cond);
	}
	ordfs_mutex_unlock(&fs->writeback_lock);
}

static void writeback_thread_stop(struct ordfs *fs)
{
	if (!fs->writeback_started)
		return;
	ordfs_mutex_lock(&fs->writeback_lock);
	fs->writeback_stop = true;
	pthread_cond_broadcast(&fs->writeback_cond);
	ordfs_mutex_unlock(&fs->writeback_lock);
	pthread_join(fs->writeback_thread, NULL);
	fs->writeback_started = false;
}

static void fs_free(struct ordfs *fs)
{
	inode_cache_destroy(fs->icache);
	alloc_destroy(fs->alloc);
	bcache_destroy(fs->cache);
	if (fs->bd != fs->raw_bd)
		blockdev_destroy(fs->bd);
	ordfs_mutex_destroy(&fs->sb_lock);
	ordfs_mutex_destroy(&fs->orphan_lock);
	ordfs_mutex_destroy(&fs->rename_lock);
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
	if (err) {
		*why = "journal recovery failed";
		return err;
	}
	/* Replay may have changed block 0 (orphan list): read it again. */
	err = ordfs_read_super(fs->bd, false, &fs->sb, why);
	if (err || fs->recovery.journal_err == 0)
		return err;
	/* The journal stopped on an error it recorded (remount-ro): the
	 * superblock says so from now on, until fsck clears it. */
	fs->sb.state |= ORDFS_STATE_ERROR;
	fs->sb.last_error_code = (uint32_t)-fs->recovery.journal_err;
	err = ordfs_write_super(fs->bd, &fs->sb, false);
	if (!err && fs->opts.barrier)
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
	ordfs_log(LOG_ERR, "journal aborted (%s): the filesystem is read-only from now on",
		  strerror(-err));
	if (internal) {
		ordfs_error_internal(fs, err);
	} else if (fs->opts.flush_error == FLUSH_ERROR_REMOUNT_RO) {
		ordfs_record_error(fs, err);
	} else if (fs->opts.flush_error == FLUSH_ERROR_ABORT && fs->opts.fatal) {
		ordfs_mutex_lock(&fs->sb_lock);
		bool first = !fs->stopped;
		fs->stopped = true;
		ordfs_mutex_unlock(&fs->sb_lock);
		if (first)
			fs->opts.fatal(fs->opts.fatal_ctx, err);
	}
}

/* A write or flush of the image failed (the guard tells us). */
static void guard_error_cb(void *ctx, int err)
{
	struct ordfs *fs = ctx;
	struct journal *j = __atomic_load_n(&fs->journal, __ATOMIC_ACQUIRE);
	if (j && (fs->opts.flush_error == FLUSH_ERROR_REMOUNT_RO ||
		  fs->opts.flush_error == FLUSH_ERROR_ABORT))
		journal_abort(j, err);
	else if (fs->opts.flush_error == FLUSH_ERROR_REPORT &&
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

static int mark_in_use(struct ordfs *fs)
{
	struct ordfs_timespec now = ordfs_now();
	fs->sb.feature_incompat |= ORDFS_FEATURE_INCOMPAT_RECOVER;
	fs->sb.state &= ~ORDFS_STATE_CLEAN;
	fs->sb.mount_time = (uint64_t)now.sec;
	fs->sb.mount_count++;
	int err = ordfs_write_super(fs->bd, &fs->sb, false);
	if (!err && fs->opts.barrier)
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
	ordfs_mutex_init(&fs->writeback_lock, LOCK_WRITEBACK, "writeback_lock");
	pthread_cond_init(&fs->writeback_cond, NULL);
	sync_gate_init(&fs->sync_gate);

	int err = ordfs_read_super(bd, false, &fs->sb, &reason);
	if (err)
		goto fail;
	if ((fs->sb.feature_ro_compat & ~ORDFS_FEATURE_RO_COMPAT_SUPPORTED) && !opts->readonly) {
		reason = "image has features this ordfs can only mount read-only";
		err = -EROFS;
		goto fail;
	}
	fs->block_size = ordfs_block_size(&fs->sb);
	fs->csum_seed = fs->sb.csum_seed;
	fs->dirty_limit_pages = opts->dirty_limit_bytes / fs->block_size;
	long ram_pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (ram_pages > 0 && page > 0)
		fs->dirty_limit_cap_pages = (uint64_t)ram_pages * (uint64_t)page / 8 / fs->block_size;
	if (!fs->opts.errors)
		fs->opts.errors = fs->sb.errors;
	err = open_guard(fs, &reason);
	if (err)
		goto fail;
	bd = fs->bd;

	err = replay_if_needed(fs, &reason);
	if (err)
		goto fail;

	err = bcache_create(bd, fs->block_size, fs->sb.block_count,
			    opts->cache_buffers ? opts->cache_buffers : DEFAULT_CACHE_BUFFERS,
			    &fs->cache);
	if (!err)
		err = inode_cache_create(fs, &fs->icache);
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
	if (!opts->readonly) {
		err = mark_in_use(fs);
		if (err) {
			reason = "cannot write the superblock";
			goto fail;
		}
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
		};
		err = journal_open(bd, fs->cache, &fs->sb, &jc, &fs->journal);
		if (err) {
			reason = "cannot open the journal";
			goto fail;
		}
		err = ordfs_process_orphans(fs);
		if (err) {
			reason = "cannot free the inodes on the orphan list (run fsck.ordfs)";
			goto fail_journal;
		}
		if (opts->commit_interval_ms &&
		    pthread_create(&fs->writeback_thread, NULL, writeback_main, fs) == 0)
			fs->writeback_started = true;
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

static int write_clean_super(struct ordfs *fs)
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
	if (!err && fs->opts.barrier)
		err = blockdev_flush(fs->bd);
	return err;
}

int ordfs_unmount(struct ordfs *fs)
{
	int err = 0;

	writeback_thread_stop(fs);
	if (fs->journal) {
		err = inode_evict_unlinked(fs);
		if (!err)
			err = file_writeback_all(fs, false);
		if (!err)
			err = atime_write_lazy(fs, true);
		int jerr = journal_close(fs->journal);
		fs->journal = NULL;
		if (!err)
			err = jerr;
		if (!err)
			err = write_clean_super(fs);
	}
	fs_free(fs);
	return err;
}
