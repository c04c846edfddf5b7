/*
 * super.c - the superblock on the image: reading and validating it (the
 * primary or the backup), writing it directly while the journal is closed,
 * writing the in-memory copy through a handle while mounted, and fsck's
 * clearing of a recorded error.
 *
 * Rules:
 *  - Everything read is validated (ordfs_super_decode) before use, and
 *    the image must hold the filesystem it describes.
 *  - Block 0 is written directly only while the journal is closed;
 *    while mounted, only through a handle (ordfs_write_super_journaled).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "super.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "journal/journal.h"

int ordfs_write_super_journaled_as(struct ordfs *fs, struct handle *h,
				   const struct ordfs_super *sb)
{
	struct buf *b;
	int err = bcache_read(fs->cache, 0, &b);
	if (err)
		return err;
	err = journal_get_write_access(h, b, 0);
	if (!err)
		ordfs_super_encode(sb, b->data);
	bcache_put(fs->cache, b);
	return err;
}

int ordfs_write_super_journaled(struct ordfs *fs, struct handle *h)
{
	return ordfs_write_super_journaled_as(fs, h, &fs->sb);
}

int ordfs_super_require_ro_compat(struct ordfs *fs, struct handle *h, uint32_t feature)
{
	int err = 0;
	ordfs_mutex_lock(&fs->sb_lock);
	uint32_t old = fs->sb.feature_ro_compat;
	if ((old & feature) != feature) {
		fs->sb.feature_ro_compat = old | feature;
		err = ordfs_write_super_journaled(fs, h);
		if (err)
			fs->sb.feature_ro_compat = old;
	}
	ordfs_mutex_unlock(&fs->sb_lock);
	return err;
}

bool ordfs_super_has_ro_compat(struct ordfs *fs, uint32_t feature)
{
	ordfs_mutex_lock(&fs->sb_lock);
	bool has = (fs->sb.feature_ro_compat & feature) == feature;
	ordfs_mutex_unlock(&fs->sb_lock);
	return has;
}

int ordfs_read_super(struct blockdev *bd, bool use_backup, struct ordfs_super *sb,
		     const char **why)
{
	uint8_t raw[ORDFS_SB_SIZE];
	int err;

	if (blockdev_size(bd) < ORDFS_SB_SIZE) {
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
				if (blockdev_size(bd) < 2 * bs)
					break;
				uint64_t off = (blockdev_size(bd) / bs - 1) * bs;
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
	if (blockdev_size(bd) / ordfs_block_size(sb) < sb->block_count) {
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
	/* Block 0 holds only the superblock; the rest of it stays zero.  The
	 * backup is its 1024 bytes only: the end of the last block may hold
	 * the owner record (owner.h). */
	int err = blockdev_write(bd, blk, bs, 0);
	if (!err && backup)
		err = blockdev_write(bd, blk, ORDFS_SB_SIZE, (sb->block_count - 1) * bs);
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
