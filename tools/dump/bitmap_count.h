/*
 * bitmap_count.h - counting the set and clear bits of a range of one of
 * the on-disk bitmaps (the block bitmap or the inode bitmap), for
 * dump.ordfs.
 *
 * Owns: reading a bitmap block by block and counting bits.
 *
 * Rules: read-only.  Each bitmap block is verified (magic, type, its own
 * block number, checksum; a group bitmap block's own bit) before its bits
 * are believed; the bits of a block that fails are counted as unknown,
 * not as used or free.  The block bitmap's blocks are found through
 * ordfs_block_bitmap_block (the area, and the group bitmap blocks past
 * it); the inode bitmap is its area.  The range asked for is clipped to
 * the bits the bitmap holds, so a caller's mistake cannot read past it.
 */
#ifndef ORDFS_TOOLS_BITMAP_COUNT_H
#define ORDFS_TOOLS_BITMAP_COUNT_H

#include <stdint.h>

#include "format/format.h"

struct blockdev;

struct bitmap_count {
	uint64_t set;            /* bits set (in use) */
	uint64_t clear;          /* bits clear (free) */
	uint64_t unknown;        /* bits in blocks that failed verification */
	uint32_t bad_blocks;     /* bitmap blocks that failed verification */
	uint64_t first_bad;      /* block number of the first of them */
	uint64_t group_bitmaps;  /* of `set`: the group bitmap blocks' own bits */
};

/* Counts bits [lo, hi) of the block bitmap (type ORDFS_BT_BLOCK_BITMAP)
 * or of the inode bitmap.  0, or a negative errno if a block could not be
 * read (out is then incomplete). */
int bitmap_count(struct blockdev *bd, const struct ordfs_super *sb, enum ordfs_block_type type,
		 uint64_t lo, uint64_t hi, struct bitmap_count *out);

#endif
