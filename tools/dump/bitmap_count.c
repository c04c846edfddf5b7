/*
 * bitmap_count.c - set and clear bits of a bitmap range (see
 * bitmap_count.h for the rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap_count.h"
#include "blockdev/blockdev.h"

/* Set bits among bits [from, to) of the payload p (bit i is bit i % 8 of
 * byte i / 8, least significant first). */
static uint64_t count_set(const uint8_t *p, uint64_t from, uint64_t to)
{
	uint64_t n = 0, i = from;
	while (i < to && (i % 8) != 0) {
		n += (p[i / 8] >> (i % 8)) & 1u;
		i++;
	}
	while (i + 8 <= to) {
		n += (uint64_t)__builtin_popcount(p[i / 8]);
		i += 8;
	}
	while (i < to) {
		n += (p[i / 8] >> (i % 8)) & 1u;
		i++;
	}
	return n;
}

int bitmap_count(struct blockdev *bd, const struct ordfs_super *sb, enum ordfs_block_type type,
		 uint64_t lo, uint64_t hi, struct bitmap_count *out)
{
	uint32_t bs = ordfs_block_size(sb);
	uint64_t per_block = ordfs_bits_per_bitmap_block(bs);
	bool blocks = type == ORDFS_BT_BLOCK_BITMAP;
	uint64_t nblocks = blocks ? ordfs_block_groups(sb) : sb->inode_bitmap_blocks;
	memset(out, 0, sizeof(*out));
	if (hi > nblocks * per_block)
		hi = nblocks * per_block;
	if (lo >= hi)
		return 0;
	uint8_t *blk = malloc(bs);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	for (uint64_t i = lo / per_block; i < nblocks && i * per_block < hi && !err; i++) {
		uint64_t first = i * per_block;
		uint64_t from = lo > first ? lo - first : 0;
		uint64_t to = hi - first < per_block ? hi - first : per_block;
		uint64_t blockno = blocks ? ordfs_block_bitmap_block(sb, i) : sb->inode_bitmap_start + i;
		err = blockdev_read(bd, blk, bs, blockno * bs);
		if (err)
			break;
		int bad = blocks ? ordfs_block_bitmap_verify(sb, i, blk)
				 : ordfs_block_verify(blk, bs, sb->csum_seed, type, blockno);
		if (bad != 0) {
			if (out->bad_blocks++ == 0)
				out->first_bad = blockno;
			out->unknown += to - from;
			continue;
		}
		uint64_t set = count_set(blk + ORDFS_BLOCK_HDR_SIZE, from, to);
		out->set += set;
		out->clear += (to - from) - set;
		/* A group bitmap block's bit is set (verified above). */
		if (blocks && from == 0 && ordfs_is_group_bitmap_block(sb, blockno))
			out->group_bitmaps++;
	}
	free(blk);
	return err;
}
