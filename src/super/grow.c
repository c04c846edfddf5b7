/*
 * grow.c - growing a filesystem (grow.h): the geometry, the bitmap blocks
 * of groups a grow adds, and the ordered writes of an offline grow
 * (grow_online.c does the mounted one with the same pieces).
 *
 * Rules kept here (docs/FORMAT.md, "What grows on disk, and in which
 * order"; design/grow.md, "Growing a filesystem"):
 *  - No area moves.  Blocks the block bitmap's area covers take its bits;
 *    past its reach the filesystem gets groups with their bitmap block in
 *    their own first block (INCOMPAT_GROUP_BITMAPS, format.h).
 *  - What lies past the old filesystem is written first and flushed: the
 *    new backup superblock and the new groups' bitmap blocks, where
 *    nothing reads them at the old size.
 *  - The superblock and the existing bitmap blocks change together, in one
 *    journal transaction: the bits of the added blocks they hold (set as
 *    "past block_count" at the old size) and of the old backup block
 *    (always set at the old size) are cleared, the new last block's bit
 *    is set, and block 0 gets the new block_count (and the feature).
 *    Before its commit a crash leaves the old size, after it recovery
 *    replays the new one; fsck passes either.
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
	(void)sb; /* groups past the area reach the format's limit */
	return ORDFS_FORMAT_MAX_BLOCKS;
}

static uint32_t per_group(const struct ordfs_super *sb)
{
	return ordfs_bits_per_bitmap_block(ordfs_block_size(sb));
}

uint64_t ordfs_grow_existing_bits(const struct ordfs_super *sb)
{
	uint64_t groups = ordfs_block_groups(sb);
	if (groups < sb->block_bitmap_blocks)
		groups = sb->block_bitmap_blocks;
	return groups * per_group(sb);
}

uint64_t ordfs_grow_target(const struct ordfs_super *sb, uint64_t new_count)
{
	uint32_t per = per_group(sb);
	/* A last group of one block would be its bitmap block and the backup
	 * superblock at once: that size is one block smaller. */
	if (new_count > 1 && (new_count - 1) % per == 0 &&
	    (new_count - 1) / per >= sb->block_bitmap_blocks)
		new_count--;
	return new_count;
}

int ordfs_grow_geometry(const struct ordfs_super *sb, uint64_t new_count,
			struct ordfs_super *out, const char **why)
{
	new_count = ordfs_grow_target(sb, new_count);
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
	*out = *sb;
	out->block_count = new_count;
	uint64_t first_new, end_new;
	if (new_count > ordfs_grow_existing_bits(sb))
		out->feature_incompat |= ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	ordfs_grow_new_groups(sb, out, &first_new, &end_new);
	/* The added blocks and the old backup block are free but for the new
	 * groups' bitmap blocks; the new last block holds the backup. */
	out->free_blocks = sb->free_blocks + (new_count - sb->block_count) - (end_new - first_new);
	if (ordfs_super_check_geometry(out, why))
		return -EUCLEAN;
	return 0;
}

void ordfs_grow_new_groups(const struct ordfs_super *old, const struct ordfs_super *grown,
			   uint64_t *first, uint64_t *end)
{
	*first = ordfs_grow_existing_bits(old) / per_group(old);
	*end = ordfs_block_groups(grown);
	if (*end < *first)
		*end = *first;
}

int ordfs_grow_write_group_bitmaps(struct blockdev *bd, const struct ordfs_super *old,
				   const struct ordfs_super *grown)
{
	uint32_t bs = ordfs_block_size(old), per = per_group(old);
	uint64_t first, end;
	ordfs_grow_new_groups(old, grown, &first, &end);
	if (first == end)
		return 0;
	uint8_t *blk = malloc(bs);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	uint64_t last = grown->block_count - 1; /* the backup superblock */
	for (uint64_t g = first; g < end && !err; g++) {
		uint64_t lo = g * per;
		ORDFS_ASSERT(ordfs_block_bitmap_block(grown, g) == lo && lo < last);
		memset(blk, 0, bs);
		ordfs_block_hdr_init(blk, ORDFS_BT_BLOCK_BITMAP, 0, lo);
		ordfs_bitmap_put(blk, 0, true); /* the bitmap block itself */
		/* the backup, and the bits past the end, are set */
		for (uint64_t n = last > lo ? last : lo; n < lo + per; n++)
			ordfs_bitmap_put(blk, (uint32_t)(n - lo), true);
		ordfs_block_csum_set(blk, bs, old->csum_seed);
		err = blockdev_write(bd, blk, bs, lo * (uint64_t)bs);
	}
	free(blk);
	return err;
}

uint32_t ordfs_grow_bitmap_credits(const struct ordfs_super *old,
				   const struct ordfs_super *grown)
{
	uint64_t per = per_group(old), first = old->block_count - 1;
	uint64_t end = ordfs_grow_existing_bits(old);
	if (end > grown->block_count)
		end = grown->block_count;
	return (uint32_t)((end - 1) / per - first / per + 1);
}

/* Clears the bits of [old_count - 1, new_count - 1) and sets the bit of
 * new_count - 1 in the existing block-bitmap blocks they fall in (the new
 * groups' blocks were written whole), under h. */
static int grow_bitmap(struct bcache *cache, struct handle *h, const struct ordfs_super *old,
		       const struct ordfs_super *grown)
{
	uint32_t per = per_group(old);
	uint64_t first = old->block_count - 1, last = grown->block_count - 1;
	uint64_t end = ordfs_grow_existing_bits(old); /* blocks with bitmap blocks before */
	for (uint64_t idx = first / per; idx * per < end && idx <= last / per; idx++) {
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
	err = journal_start(j, ordfs_grow_bitmap_credits(in_use_old, in_use_grown) + 1, &h);
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
	in_use_grown.feature_incompat = grown->feature_incompat | ORDFS_FEATURE_INCOMPAT_RECOVER;
	in_use_grown.state = in_use.state;

	/* 1. Past the old filesystem: the new groups' bitmap blocks and the new
	 * backup. */
	uint8_t raw[ORDFS_SB_SIZE];
	ordfs_super_encode(grown, raw);
	int err = ordfs_grow_write_group_bitmaps(bd, old, grown);
	if (!err)
		err = blockdev_write(bd, raw, sizeof(raw), (grown->block_count - 1) * (uint64_t)bs);
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
