/*
 * grow_online.c - growing a mounted filesystem (ordfs_grow_online, ops.h;
 * the geometry and the new groups' blocks are super/grow.c's):
 * what resize.ordfs asks the daemon for when the image is mounted.
 *
 * Rules kept here (design/grow.md, "Growing a filesystem"):
 *  - One grow or remount at a time (remount_lock); the filesystem must be
 *    writable.  The caller has made the device its new size
 *    (blockdev_refresh_size) before.
 *  - The same order as offline (grow.c): what lies past the old
 *    filesystem (the new groups' bitmap blocks, the new backup superblock)
 *    is written and flushed first, where nothing reads it at the old
 *    size; then one handle changes the
 *    block bitmap and the superblock together, and its transaction is
 *    committed and checkpointed before this returns.  A crash before that
 *    commit leaves the old size, after it recovery gives the new one.
 *  - Block 0 on the image says the new count before any block past the old
 *    end is handed out: recovery checks every logged block against the
 *    count in block 0 on the image (recovery.c), so a later transaction
 *    logging a new block while block 0 there still said the old count
 *    would end the log (found by the crash harness's grow-online
 *    workload).  journal_flush_all writes block 0 home.
 *  - Nothing of the added space is handed out before that commit: the
 *    allocator learns of it only afterwards (alloc_grow).  So no data can
 *    land in the old backup superblock's block while the old size may
 *    still be what a crash leaves.
 *  - The in-memory block count only grows (fs_block_count): readers that
 *    check block numbers against it need no lock.  It changes under
 *    sb_lock once block 0 holds the grown superblock under the handle.
 *  - A failure after the commit (the checkpoint, the block map) leaves the
 *    grow committed and the allocator at the old size; the next call
 *    finishes it before anything else (a retry of resize.ordfs).
 */
#include <errno.h>
#include <string.h>

#include "fs.h"
#include "ops.h"
#include "super/grow.h"
#include "super/super.h"
#include "alloc/alloc.h"
#include "base/ordfs_assert.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "journal/journal.h"

#ifdef ORDFS_DEBUG_CHECKS
/* Does block 0 on the image say count?  (A read that fails says nothing:
 * the rule is checked where it can be.) */
static bool home_super_says(struct ordfs *fs, uint64_t count)
{
	struct ordfs_super home;
	const char *why;
	return ordfs_read_super(fs->bd, false, &home, &why) != 0 || home.block_count == count;
}
#endif

/* Past the old end: the new groups' bitmap blocks and the grown
 * superblock's 1024 bytes at the new last block, flushed. */
static int write_past_old_end(struct ordfs *fs, const struct ordfs_super *now,
			      const struct ordfs_super *grown)
{
	uint8_t raw[ORDFS_SB_SIZE];
	ordfs_super_encode(grown, raw);
	int err = ordfs_grow_write_group_bitmaps(fs->bd, now, grown);
	if (!err)
		err = blockdev_write(fs->bd, raw, sizeof(raw),
				     (grown->block_count - 1) * (uint64_t)fs->block_size);
	return err ? err : blockdev_flush(fs->bd);
}

/* The handle: the bitmap bits of the added blocks and block 0.  fs->sb
 * takes the grown superblock only once block 0 holds it under the handle;
 * a failure after the bitmap changed aborts the journal (half a grow must
 * never commit). */
static int grow_handle(struct ordfs *fs, const struct ordfs_super *now,
		       const struct ordfs_super *grown)
{
	struct handle *h;
	int err = journal_start(fs->journal, ordfs_grow_bitmap_credits(now, grown) + 1, &h);
	if (err)
		return err;
	err = alloc_grow_mark(fs->alloc, h, grown->block_count);
	if (!err) {
		ordfs_mutex_lock(&fs->sb_lock);
		struct ordfs_super next = fs->sb;
		next.free_blocks = grown->free_blocks;
		next.feature_incompat |= grown->feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
		next.block_count = grown->block_count;
		err = ordfs_write_super_journaled_as(fs, h, &next);
		if (!err) {
			fs->sb.free_blocks = next.free_blocks;
			fs->sb.feature_incompat = next.feature_incompat;
			__atomic_store_n(&fs->sb.block_count, next.block_count, __ATOMIC_RELEASE);
		}
		ordfs_mutex_unlock(&fs->sb_lock);
	}
	/* alloc_grow_mark may have changed a bitmap block before it failed */
	if (err)
		err = journal_abort_half_done(fs->journal, err);
	int e2 = journal_stop(h);
	return err ? err : e2;
}

/* The last step, also of a grow that committed and could not finish: the
 * transaction checkpointed (block 0 home with the new count), then the
 * space is the allocator's. */
static int finish_grow(struct ordfs *fs, const char **why)
{
	/* Committed and checkpointed, block 0 home with the new count, before
	 * anything can log a block past the old end: recovery judges every
	 * logged block against the count in block 0 on the image, and would
	 * end the log at a later transaction that logs such a block while
	 * block 0 there still says the old count. */
	int err = journal_flush_all(fs->journal);
	if (err) {
		*why = "the grow is committed, but the journal could not be checkpointed: the new "
		       "space is used after the next mount or a successful retry";
		return err;
	}
	struct ordfs_super grown;
	ordfs_mutex_lock(&fs->sb_lock);
	grown = fs->sb;
	ordfs_mutex_unlock(&fs->sb_lock);
#ifdef ORDFS_DEBUG_CHECKS
	ORDFS_ASSERT(home_super_says(fs, grown.block_count));
#endif
	err = alloc_grow(fs->alloc, &grown);
	if (err)
		*why = "the grow is committed, but the block map could not take the new space: it "
		       "is used after the next mount or a successful retry";
	return err;
}

int ordfs_grow_online(struct ordfs *fs, uint64_t new_count, uint64_t *old_count,
		      const char **why)
{
	*why = NULL;
	ordfs_mutex_lock(&fs->remount_lock);
	*old_count = fs_block_count(fs);
	int err = 0;
	if (fs->opts.readonly || !fs->journal || ordfs_writable(fs) != 0) {
		*why = "the filesystem is mounted read-only";
		err = -EROFS;
		goto out;
	}
	/* A grow that committed but did not finish (its checkpoint or the
	 * block map failed): finish it first. */
	if (alloc_block_count(fs->alloc) < fs_block_count(fs) && (err = finish_grow(fs, why)))
		goto out;
	struct ordfs_super now, grown;
	ordfs_mutex_lock(&fs->sb_lock);
	now = fs->sb;
	ordfs_mutex_unlock(&fs->sb_lock);
	if (ordfs_grow_target(&now, new_count) == now.block_count)
		goto out; /* nothing to do */
	/* free_blocks is advisory while mounted: the grown one counts what
	 * the grow adds to what is free now, as an unmount would write it. */
	struct alloc_counts c;
	alloc_get_counts(fs->alloc, &c);
	now.free_blocks = c.free_blocks + c.reserved_blocks + c.pending_free;
	err = ordfs_grow_geometry(&now, new_count, &grown, why);
	if (err)
		goto out;
	if (blockdev_size(fs->bd) / fs->block_size < grown.block_count) {
		*why = "the device is smaller than the new size";
		err = -EINVAL;
		goto out;
	}
	bcache_grow(fs->cache, grown.block_count);
	err = write_past_old_end(fs, &now, &grown);
	if (!err)
		err = grow_handle(fs, &now, &grown);
	if (err) {
		*why = "the grow could not be written (see the log)";
		goto out;
	}
	err = finish_grow(fs, why);
out:
	ordfs_mutex_unlock(&fs->remount_lock);
	return err;
}
