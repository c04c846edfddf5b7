/*
 * writeback.c - writing a file's dirty pages to the image, by the routes
 * route.h chooses (writeback.h).
 *
 * Rules:
 *  - ALLOC: the data is written in place first and only then does a
 *    handle mark the bitmap and map the extent [J1]; logged, the data goes
 *    into that same handle.  A failure before anything was recorded gives
 *    the blocks back and leaves the pages delayed.
 *  - OVERWRITE in place is not ordered (as in jbd2): it is written before
 *    the commit fsync waits for.  CONVERT: the data goes first, then a
 *    handle marks the blocks written, raising d.size past them: the
 *    conversion makes the data reachable, so it is ordered like an
 *    allocation [J1].  EXTEND (a written block holding bytes at or past
 *    d.size: the partly filled last block of a growing file): the data
 *    goes first, then a handle raises d.size over it; in data=ordered that
 *    handle is ordered like an allocation, since the size makes those
 *    bytes reachable exactly as a mapping would.  Logged, EXTEND raises
 *    d.size in the handle that logs the data.
 *  - inode->size is the size users see; d.size (on disk) becomes
 *    inode->size once the data below it is written back, and never covers
 *    bytes written in place that are not yet ordered (route.h).
 *  - The data mode is the mount's, or data=journal for a file flagged j
 *    (chattr +j, iflags.h), whatever the mount says: ext4's per-file data
 *    journaling.  The routes need nothing else per file: coherence and
 *    revokes of freed data blocks hold in every mode.
 *  - data=journal: each page is copied into the block's cache buffer under
 *    the handle that maps it (or, for mapped blocks, a handle of its own),
 *    logged and committed with its metadata, home only at checkpoint.  A
 *    run is cut to what one handle may log.
 *  - Background writeback (paced) goes in chunks and lets waited-on syncs
 *    go first (base/gate.h), and flushes its own in-place data before the
 *    handle that makes it reachable, so no commit someone waits for pays
 *    F1 for another file's data.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "orphan/enospc.h"
#include "route.h"
#include "writeback.h"
#include "alloc/alloc.h"
#include "base/latency.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "extent/extent.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "journal/journal.h"
#include "lock/lock.h"
#include "base/ordfs_assert.h"

/* Background writeback goes to the disk in chunks of this size, letting
 * waited-on syncs go first before each (base/gate.h), but never waiting
 * longer than WB_YIELD_MAX_US per chunk.  bench B2: see
 * design/write-routes.md. */
#define WB_CHUNK_BYTES (128u << 10)
#define WB_YIELD_MAX_US 2000u
#define WB_BUFFER_BYTES (1u << 20) /* a sync's own writeback, per device write */

/* Writes pages v[0..n) (consecutive logical blocks) to physical blocks
 * starting at phys, through one aligned buffer of at most WB_BUFFER_BYTES
 * (reused, so a large run does not fault in fresh memory; aligned, so a
 * bulk write can go to the disk directly, BLOCKDEV_DIRECT_BULK).
 * Background writeback (`paced`) goes in chunks of WB_CHUNK_BYTES and lets
 * waited-on syncs go first before each (base/gate.h); a sync's own
 * writeback goes in chunks as large as the buffer. */
static int write_run(struct ordfs *fs, struct page **v, uint32_t n, uint64_t phys, bool paced)
{
	uint32_t bs = fs->block_size;
	uint32_t per_chunk = (paced ? WB_CHUNK_BYTES : WB_BUFFER_BYTES) / bs;
	if (per_chunk == 0)
		per_chunk = 1;
	if (per_chunk > n)
		per_chunk = n;
	uint8_t *buf;
	if (posix_memalign((void **)&buf, BLOCKDEV_DIRECT_ALIGN, (size_t)per_chunk * bs) != 0)
		return -ENOMEM;
	int err = 0;
	for (uint32_t at = 0; at < n && !err; at += per_chunk) {
		uint32_t k = n - at < per_chunk ? n - at : per_chunk;
		for (uint32_t i = 0; i < k; i++)
			memcpy(buf + (size_t)i * bs, v[at + i]->data, bs);
		if (paced)
			sync_gate_yield(&fs->sync_gate, WB_YIELD_MAX_US);
		size_t len = (size_t)k * bs;
		uint64_t t0 = latency_now_ns();
		err = blockdev_write(fs->bd, buf, len, (phys + at) * bs);
		if (!err && len >= BLOCKDEV_DIRECT_MIN)
			writeback_note_bandwidth(fs, len, latency_now_ns() - t0);
	}
	free(buf);
	return err;
}

/* Pages v[0..n) become the contents of blocks phys.. in handle h (logged
 * with it, written home at checkpoint). */
static int log_run(struct handle *h, struct page **v, uint32_t n, uint64_t phys)
{
	int err = 0;
	for (uint32_t i = 0; i < n && !err; i++)
		err = journal_log_block(h, phys + i, v[i]->data);
	return err;
}

/* Number of blocks from phys on, at most n, whose cached state (route.h: a
 * cached block is written through the log) is `cached`. */
static uint32_t cached_run(struct ordfs *fs, uint64_t phys, uint32_t n, bool cached)
{
	uint32_t k = 0;
	while (k < n && bcache_contains(fs->cache, phys + k) == cached)
		k++;
	return k;
}

/* The longest run one handle may log beside `overhead` other credits. */
static uint32_t loggable(struct ordfs *fs, uint32_t n, uint32_t overhead)
{
	uint32_t max = journal_max_credits(fs->journal);
	uint32_t room = max > overhead + 1 ? max - overhead - 1 : 1;
	return n < room ? n : room;
}

/* After writeback wrote new data in place by a route that orders it
 * (`ordered`, wb_route_ordered): background writeback (`paced`) makes it
 * durable itself, before the handle that makes it reachable, so no commit
 * someone waits for needs F1 for another file's data (the flush is the
 * heavy writer's to pay).  A sync's own data is left to its commit's F1
 * (one flush, not two).  Returns, in *needs_f1, whether the handle must
 * still order the data (journal_ordered_data). */
static int flush_own_data(struct ordfs *fs, bool paced, bool ordered, bool *needs_f1)
{
	*needs_f1 = ordered;
	if (!paced || !ordered || !FS_OPT(fs, barrier))
		return 0;
	int err = flush_guard_flush_since(fs->bd, flush_guard_mark(fs->bd));
	if (!err)
		*needs_f1 = false;
	return err;
}

/* Raises d.size to `size` in a handle of its own (EXTEND in place: the data
 * below it is written); `needs_f1`: that data is not durable yet and this
 * handle makes it reachable (data=ordered). */
static int publish_size(struct ordfs *fs, struct inode *inode, uint64_t size, bool needs_f1)
{
	if (size <= inode->d.size)
		return 0;
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
	if (err)
		return err;
	if (needs_f1)
		journal_ordered_data(h);
	inode->d.size = size;
	err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	int serr = journal_stop(h);
	return err ? err : serr;
}

/* Allocates, writes [J1] and maps a run of delayed pages (consecutive
 * logical blocks, all reserved) by route WB_ALLOC_IN_PLACE or
 * WB_ALLOC_LOGGED (the data goes into the log with the mapping).  `facts`
 * are the run's, but for the blocks' cached state, known once they are
 * claimed.  Returns the number of pages done. */
static int64_t writeback_delayed(struct ordfs *fs, struct inode *inode, struct page **v,
				 uint32_t n, uint64_t goal, struct wb_route_facts facts)
{
	uint64_t start;
	uint32_t got;
	uint32_t meta = extent_credits(fs, inode, 1) + 1;
	bool paced = !facts.waited;
	facts.cached = false;
	enum wb_route route = wb_route_choose(&facts);
	bool log = wb_route_logged(route);
	if (log)
		n = loggable(fs, n, meta + alloc_credits(fs->alloc, n));
	int err = alloc_claim_blocks(fs->alloc, goal, n, ALLOC_FROM_RESERVATION, &start, &got);
	if (err)
		return err;
	if (!log) {
		/* A reused block whose old contents are still cached. */
		uint32_t keep = cached_run(fs, start, got, false);
		if (keep == 0) {
			facts.cached = true;
			route = wb_route_choose(&facts);
			log = wb_route_logged(route);
			ORDFS_ASSERT(log);
			keep = loggable(fs, got, meta + alloc_credits(fs->alloc, got));
		}
		if (keep < got) {
			alloc_unclaim_blocks(fs->alloc, start + keep, got - keep,
					     ALLOC_FROM_RESERVATION);
			got = keep;
		}
	}
	if (!log)
		err = write_run(fs, v, got, start, paced);
	bool needs_f1 = false;
	if (!err && !log)
		err = flush_own_data(fs, paced, wb_route_ordered(route, facts.mode), &needs_f1);
	if (err)
		goto unclaim;

	struct handle *h;
	err = journal_start(fs->journal, meta + alloc_credits(fs->alloc, got) + (log ? got : 0),
			    &h);
	if (err)
		goto unclaim;
	if (needs_f1)
		journal_ordered_data(h); /* the data written above becomes reachable */
	bool undo = false; /* nothing recorded: the claim can go back */
	err = alloc_mark_blocks(fs->alloc, h, start, got);
	if (err) {
		undo = true;
	} else {
		struct ordfs_extent e = { v[0]->lblk, start, got, 0 };
		err = extent_insert(fs, h, inode, &e); /* changes nothing if it fails */
		undo = err && alloc_unmark_blocks(fs->alloc, h, start, got) == 0;
	}
	if (!err && log)
		err = log_run(h, v, got, start); /* fails only if the journal aborted */
	if (!err) {
		uint64_t end = (v[0]->lblk + got) * fs->block_size;
		uint64_t disk = end < inode->size ? end : inode->size;
		if (disk > inode->d.size)
			inode->d.size = disk;
		err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	}
	int serr = journal_stop(h);
	if (undo)
		goto unclaim; /* the pages stay delayed, their reservations back */
	if (!err)
		err = serr;
	if (err)
		return err; /* the journal has aborted: nothing to undo safely */
	for (uint32_t i = 0; i < got; i++)
		pages_reservation_used(inode, v[i]); /* it became the block */
	return got;
unclaim:
	alloc_unclaim_blocks(fs->alloc, start, got, ALLOC_FROM_RESERVATION);
	return err;
}

/* Gives the mapped blocks [lblk, lblk + count) the extent flags `flags`,
 * in as few handles as the journal allows.  Each handle also raises d.size
 * to disk_size (if larger), so no written block is ever past d.size.
 * `orders_data`: the change makes data written in place and not yet
 * durable visible (an unwritten extent becomes written), so its commit
 * needs F1 first. */
int writeback_set_extent_flags(struct ordfs *fs, struct inode *inode, uint64_t lblk,
			       uint64_t count, uint32_t flags, uint64_t disk_size,
			       bool orders_data)
{
	/* record changes; a range inside one record needs 5 */
	uint32_t per_handle = extent_records_per_handle(fs, inode, 8, 2);
	for (;;) {
		struct handle *h;
		int err = journal_start(fs->journal, extent_credits(fs, inode, per_handle), &h);
		if (err)
			return err;
		if (orders_data)
			journal_ordered_data(h);
		int more = extent_set_flags(fs, h, inode, lblk, count, flags, per_handle);
		if (more >= 0 && disk_size > inode->d.size) {
			inode->d.size = disk_size;
			err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
		}
		int serr = journal_stop(h);
		if (more < 0)
			return more;
		if (err || serr)
			return err ? err : serr;
		if (more == 0)
			return 0;
	}
}

/* Writes a run of pages over mapped blocks by route WB_OVERWRITE_*,
 * WB_CONVERT_* or WB_EXTEND_*: in place or through the log.  Over an
 * unwritten extent the data goes first, then a handle marks the blocks
 * written (and moves d.size past them); pages at or past d.size on written
 * blocks go first, then a handle raises d.size over them.  Either handle
 * makes the data reachable, so like an allocation it must not commit
 * before the data is written [J1] (or logged), where the route orders it.
 * The run is cut where pages start to extend the file and where the
 * blocks' cached state changes.  Returns pages done. */
static int64_t writeback_mapped(struct ordfs *fs, struct inode *inode, struct page **v,
				uint32_t n, const struct ordfs_extent *ext,
				struct wb_route_facts facts)
{
	uint32_t bs = fs->block_size;
	uint64_t off_in_ext = v[0]->lblk - ext->logical;
	uint64_t room = ext->len - off_in_ext;
	uint32_t len = n < room ? n : (uint32_t)room;
	uint64_t phys = ext->physical + off_in_ext;
	bool paced = !facts.waited;
	facts.unwritten = ext->flags & ORDFS_EXT_UNWRITTEN;
	facts.extends = false;
	if (!facts.unwritten) {
		/* The first block holding bytes at or past d.size. */
		uint64_t first_new = inode->d.size / bs;
		facts.extends = v[0]->lblk >= first_new;
		if (!facts.extends && v[0]->lblk + len > first_new)
			len = (uint32_t)(first_new - v[0]->lblk);
	}
	facts.cached = false;
	enum wb_route route = wb_route_choose(&facts);
	if (!wb_route_logged(route)) { /* then the cached state decides */
		facts.cached = bcache_contains(fs->cache, phys);
		len = cached_run(fs, phys, len, facts.cached);
		route = wb_route_choose(&facts);
	}
	bool log = wb_route_logged(route);
	uint64_t end = (v[0]->lblk + len) * bs;
	uint64_t new_dsize = end < inode->size ? end : inode->size;
	int err;
	if (log) {
		uint32_t size_credits = facts.extends ? INODE_WRITE_CREDITS : 0;
		len = loggable(fs, len, size_credits);
		end = (v[0]->lblk + len) * bs;
		new_dsize = end < inode->size ? end : inode->size;
		struct handle *h;
		err = journal_start(fs->journal, len + size_credits, &h);
		if (!err) {
			err = log_run(h, v, len, phys);
			if (!err && facts.extends && new_dsize > inode->d.size) {
				/* The logged bytes and the size that exposes them
				 * commit together. */
				inode->d.size = new_dsize;
				err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
			}
			/* fsync and fdatasync must wait for this transaction. */
			uint64_t tid = journal_handle_tid(h);
			if (tid > inode->sync_tid)
				inode->sync_tid = tid;
			if (tid > inode->datasync_tid)
				inode->datasync_tid = tid;
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
	} else {
		err = write_run(fs, v, len, phys, paced);
	}
	bool needs_f1 = false;
	if (!err && !log)
		err = flush_own_data(fs, paced, wb_route_ordered(route, facts.mode), &needs_f1);
	if (!err && facts.unwritten)
		err = writeback_set_extent_flags(fs, inode, v[0]->lblk, len, 0, new_dsize, needs_f1);
	else if (!err && facts.extends && !log)
		err = publish_size(fs, inode, new_dsize, needs_f1);
	return err ? (int64_t)err : (int64_t)len;
}

/* Length of the run of pages starting at v[0] with consecutive blocks and
 * the same reserved state. */
static uint32_t run_length(struct page **v, uint64_t n)
{
	uint32_t len = 1;
	while (len < n && len < ORDFS_EXT_MAX_LEN && v[len]->lblk == v[0]->lblk + len &&
	       v[len]->reserved == v[0]->reserved)
		len++;
	return len;
}

/* Writes the inode with d.size = inode->size; a datasync change only if
 * the size moved (fdatasync skips timestamp-only changes). */
static int update_disk_size(struct ordfs *fs, struct inode *inode)
{
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
	if (err)
		return err;
	unsigned flags = inode->d.size != inode->size ? INODE_WRITE_DATASYNC : 0;
	inode->d.size = inode->size;
	err = inode_write(fs, h, inode, flags);
	int serr = journal_stop(h);
	return err ? err : serr;
}

/* The data mode the inode's pages are written back by: the mount's, or
 * data=journal for a file flagged j. */
static enum journal_data_mode data_mode_of(const struct ordfs *fs, const struct inode *inode)
{
	return iflags_journals_data(inode->d.attr_flags) ? JOURNAL_DATA_JOURNAL
							 : fs->opts.data_mode;
}

/* Writes back the inode's pages, lowest first, at most max_pages of them;
 * see writeback_file_locked. */
static int writeback_pages(struct ordfs *fs, struct inode *inode, bool waited,
			   uint64_t max_pages)
{
	struct page **v;
	uint64_t n;
	int err = pages_collect(inode, &v, &n, max_pages);
	if (err)
		return err;
	if (n > max_pages)
		n = max_pages;
	/* What st_blocks counts (allocated + delayed): a reservation becoming
	 * its block leaves it alone, extent-tree blocks do not. */
	uint64_t st_blocks = pages_st_blocks(inode);

	struct wb_route_facts facts = {
		.mode = data_mode_of(fs, inode),
		.waited = waited,
		.small = n * fs->block_size <= LOG_SMALL_BYTES,
	};

	uint64_t goal = 0;
	uint64_t i = 0;
	while (i < n && !err) {
		uint32_t len = run_length(v + i, n - i);
		int64_t done;
		if (v[i]->reserved) {
			facts.delayed = true;
			done = writeback_delayed(fs, inode, v + i, len, goal, facts);
		} else {
			struct ordfs_extent ext;
			int found = extent_lookup(fs, inode, v[i]->lblk, &ext);
			facts.delayed = false;
			if (found == 1)
				done = writeback_mapped(fs, inode, v + i, len, &ext, facts);
			else
				done = found < 0 ? found : -EUCLEAN;
			if (found == 1)
				goal = ext.physical + ext.len;
		}
		if (done < 0) {
			err = (int)done;
			break;
		}
		for (int64_t k = 0; k < done; k++)
			pages_remove(fs, inode, v[i + (uint64_t)k]);
		i += (uint64_t)done;
	}
	free(v);
	/* d.size moves to the size only once no page below it is left. */
	if (!err && !pages_has_dirty(inode) &&
	    (inode->d.size != inode->size || inode->times_dirty || inode->atime_dirty))
		err = update_disk_size(fs, inode);
	if (fs->opts.attr_changed && pages_st_blocks(inode) != st_blocks)
		fs->opts.attr_changed(fs->opts.attr_changed_ctx, inode->ino);
	return err;
}

/* Writes back up to max_pages pages; errors as writeback_file_locked. */
int writeback_some_locked(struct ordfs *fs, struct inode *inode, bool waited,
			  uint64_t max_pages)
{
	int err;
	unsigned retries = 0;
	do /* metadata (extent blocks) may wait for freed blocks to commit */
		err = writeback_pages(fs, inode, waited, max_pages);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	if (err && err != -EROFS && err != -ENOMEM)
		errseq_set(&inode->wb_err, err);
	return err;
}

int writeback_file_locked(struct ordfs *fs, struct inode *inode, bool waited)
{
	int err;
	unsigned retries = 0;
	do /* metadata (extent blocks) may wait for freed blocks to commit */
		err = writeback_pages(fs, inode, waited, UINT64_MAX);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	/* Pages that failed stay dirty (written again next time); every open
	 * file description of the file hears about it once. */
	if (err && err != -EROFS && err != -ENOMEM)
		errseq_set(&inode->wb_err, err);
	return err;
}

struct writeback_pass {
	bool waited;
	uint64_t max_pages; /* per file, per hold of its lock */
	bool sliced;        /* slice after slice, the file's pages at the start */
};

static bool has_writeback_work(const struct inode *inode)
{
	return pages_has_dirty(inode) || inode->d.size != inode->size || inode->times_dirty;
}

static int writeback_one(struct ordfs *fs, struct inode *inode, void *ctx)
{
	const struct writeback_pass *pass = ctx;
	ordfs_rwlock_wrlock(&inode->lock);
	if ((inode->d.mode & 0170000) != 0100000 || inode->d.links == 0) {
		ordfs_rwlock_unlock(&inode->lock);
		return 0; /* an unlinked file's data dies with it */
	}
	int err = 0;
	if (has_writeback_work(inode))
		err = writeback_some_locked(fs, inode, pass->waited, pass->max_pages);
	if (pass->sliced && !err && pages_has_dirty(inode)) {
		/* As many more slices as the file had pages when the pass came
		 * to it, the lock let go between them so its writer goes on;
		 * pages dirtied meanwhile may wait for the next pass. */
		uint64_t slices = pages_count(inode) / pass->max_pages + 1;
		while (!err && slices-- > 0 && has_writeback_work(inode)) {
			ordfs_rwlock_unlock(&inode->lock);
			ordfs_rwlock_wrlock(&inode->lock);
			if (inode->d.links == 0)
				break;
			err = writeback_some_locked(fs, inode, false, pass->max_pages);
		}
	}
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}

int writeback_all(struct ordfs *fs, bool waited)
{
	struct writeback_pass pass = { waited, UINT64_MAX, false };
	return inode_cache_for_each(fs, writeback_one, &pass);
}

int writeback_periodic(struct ordfs *fs)
{
	struct writeback_pass pass = { false, BG_SLICE_BYTES / fs->block_size, true };
	return inode_cache_for_each(fs, writeback_one, &pass);
}

int writeback_slices(struct ordfs *fs, uint64_t max_pages)
{
	struct writeback_pass pass = { false, max_pages, false };
	return inode_cache_for_each(fs, writeback_one, &pass);
}

int writeback_early(struct ordfs *fs)
{
	int err = 0;
	/* Slices of every dirty file, round after round, down to half the
	 * threshold (or until a round changes nothing). */
	for (;;) {
		uint64_t before = __atomic_load_n(&fs->dirty_pages, __ATOMIC_RELAXED);
		if (before <= writeback_background_pages(fs) / 2)
			break;
		err = writeback_slices(fs, BG_SLICE_BYTES / fs->block_size);
		if (err || __atomic_load_n(&fs->dirty_pages, __ATOMIC_RELAXED) >= before)
			break;
	}
	return err;
}

