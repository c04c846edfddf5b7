/*
 * grow.c - growing an unmounted filesystem (grow.h): the geometry and the
 * ordered writes.
 *
 * Rules kept here (docs/FORMAT.md, "What grows on disk, and in which
 * order"; docs/DESIGN.md, "Growing a filesystem"):
 *  - No area moves: the new count must fit the bits the block bitmap
 *    already has (ordfs_grow_max_blocks).
 *  - The new backup superblock is written first: it lies past the old
 *    filesystem, where nothing reads it at the old size.
 *  - The superblock and the bitmap change together, in one journal
 *    transaction: the bits of the added blocks (set as "past block_count"
 *    at the old size) and of the old backup block (always set at the old
 *    size) are cleared, the new last block's bit is set, and block 0 gets
 *    the new block_count.  Before its commit a crash leaves the old size,
 *    after it recovery replays the new one; fsck passes either.
 *  - The superblock is marked in use (INCOMPAT_RECOVER) before the
 *    transaction, as a mount marks it, so that a crash leaves an image
 *    that fsck.ordfs and the daemon replay, and marked clean last.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "grow.h"
#include "super.h"
#include "base/ordfs_assert.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "journal/journal.h"

#define ORDFS_FORMAT_MAX_BLOCKS (1ull << 48)
#define GROW_CACHE_BUFFERS 16u

uint64_t ordfs_grow_max_blocks(const struct ordfs_super *sb)
{
	uint64_t bits = (uint64_t)sb->block_bitmap_blocks *
			ordfs_bits_per_bitmap_block(ordfs_block_size(sb));
	return bits < ORDFS_FORMAT_MAX_BLOCKS ? bits : ORDFS_FORMAT_MAX_BLOCKS;
}

int ordfs_grow_geometry(const struct ordfs_super *sb, uint64_t new_count,
			struct ordfs_super *out, const char **why)
{
	if (new_count < sb->block_count) {
		*why = "the new size is smaller than the filesystem (shrinking is not supported)";
		return -EINVAL;
	}
	if (new_count == sb->block_count) {
		*why = "the filesystem already has that size";
		return -EINVAL;
	}
	if (new_count > ORDFS_FORMAT_MAX_BLOCKS) {
		*why = "the new size is past the format's limit of 2^48 blocks";
		return -EFBIG;
	}
	if (new_count > ordfs_grow_max_blocks(sb)) {
		*why = "the new size needs more block-bitmap blocks than the image has "
		       "(a grow keeps the areas where they are)";
		return -EFBIG;
	}
	*out = *sb;
	out->block_count = new_count;
	/* The added blocks and the old backup block are free; the new last
	 * block holds the backup. */
	out->free_blocks = sb->free_blocks + (new_count - sb->block_count);
	if (ordfs_super_check_geometry(out, why))
		return -EUCLEAN;
	return 0;
}

/* Clears the bits of [old_count - 1, new_count - 1) and sets the bit of
 * new_count - 1 in every block-bitmap block they fall in, under h. */
static int grow_bitmap(struct bcache *cache, struct handle *h, const struct ordfs_super *old,
		       const struct ordfs_super *grown)
{
	uint32_t per = ordfs_bits_per_bitmap_block(ordfs_block_size(old));
	uint64_t first = old->block_count - 1, last = grown->block_count - 1;
	for (uint64_t idx = first / per; idx <= last / per; idx++) {
		ORDFS_ASSERT(idx < old->block_bitmap_blocks);
		struct buf *b;
		int err = bcache_read(cache, ordfs_block_bitmap_block(grown, idx), &b);
		if (err)
			return err;
		err = journal_get_write_access(h, b, JWA_CSUM_HDR);
		if (!err) {
			uint64_t lo = idx * per, hi = lo + per;
			for (uint64_t n = first > lo ? first : lo; n <= last && n < hi; n++)
				ordfs_bitmap_put(b->data, (uint32_t)(n - lo), n == last);
		}
		bcache_put(cache, b);
		if (err)
			return err;
	}
	return 0;
}

/* The one transaction: bitmap and block 0 (the new superblock, marked in
 * use), committed and checkpointed by journal_close. */
static int grow_transaction(struct blockdev *bd, const struct ordfs_super *in_use_old,
			    const struct ordfs_super *in_use_grown)
{
	struct bcache *cache;
	int err = bcache_create(bd, ordfs_block_size(in_use_old), in_use_old->block_count,
				GROW_CACHE_BUFFERS, &cache);
	if (err)
		return err;
	struct journal_config jc = { .data_mode = JOURNAL_DATA_ORDERED, .barrier = true };
	struct journal *j;
	err = journal_open(bd, cache, in_use_old, &jc, &j);
	if (err) {
		bcache_destroy(cache);
		return err;
	}
	struct handle *h;
	err = journal_start(j, 3, &h);
	if (!err) {
		err = grow_bitmap(cache, h, in_use_old, in_use_grown);
		struct buf *b;
		if (!err && !(err = bcache_read(cache, 0, &b))) {
			err = journal_get_write_access(h, b, 0);
			if (!err)
				ordfs_super_encode(in_use_grown, b->data);
			bcache_put(cache, b);
		}
		int e2 = journal_stop(h);
		if (!err)
			err = e2;
	}
	if (err)
		journal_abort(j, err); /* nothing of the transaction reaches the image */
	int e3 = journal_close(j);
	if (!err)
		err = e3;
	bcache_destroy(cache);
	return err;
}

int ordfs_grow_offline(struct blockdev *bd, const struct ordfs_super *old,
		       const struct ordfs_super *grown)
{
	uint32_t bs = ordfs_block_size(old);
	ORDFS_ASSERT(grown->block_count > old->block_count);
	ORDFS_ASSERT(blockdev_size(bd) / bs >= grown->block_count);
	ORDFS_ASSERT(!(old->feature_incompat & ORDFS_FEATURE_INCOMPAT_RECOVER));

	struct ordfs_super in_use = *old, in_use_grown = *grown;
	in_use.feature_incompat |= ORDFS_FEATURE_INCOMPAT_RECOVER;
	in_use.state &= ~ORDFS_STATE_CLEAN;
	in_use_grown.feature_incompat = in_use.feature_incompat;
	in_use_grown.state = in_use.state;

	/* 1. The new backup: past the old filesystem. */
	uint8_t raw[ORDFS_SB_SIZE];
	ordfs_super_encode(grown, raw);
	int err = blockdev_write(bd, raw, sizeof(raw), (grown->block_count - 1) * (uint64_t)bs);
	/* 2. In use, as a mount marks it: a crash from here on is replayed. */
	if (!err)
		err = blockdev_flush(bd);
	if (!err)
		err = ordfs_write_super(bd, &in_use, false);
	if (!err)
		err = blockdev_flush(bd);
	/* 3. Bitmap and superblock in one transaction, checkpointed. */
	if (!err)
		err = grow_transaction(bd, &in_use, &in_use_grown);
	/* 4. Clean, at the new size: the primary and the new backup. */
	if (!err)
		err = ordfs_write_super(bd, grown, true);
	if (!err)
		err = blockdev_flush(bd);
	return err;
}
