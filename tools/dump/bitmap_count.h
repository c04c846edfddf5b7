/*
 * bitmap_count.h - counting the set and clear bits of a range of one of
 * the on-disk bitmaps (the block bitmap or the inode bitmap), for
 * dump.ordfs.
 *
 * Owns: reading a bitmap area block by block and counting bits.
 *
 * Rules: read-only.  Each bitmap block is verified (magic, type, its own
 * block number, checksum) before its bits are believed; the bits of a
 * block that fails are counted as unknown, not as used or free.  The range
 * asked for is clipped to the bits the area holds, so a caller's mistake
 * cannot read past the area.
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
};

/* Counts bits [lo, hi) of the bitmap whose nblocks blocks start at block
 * `start`, with blocks of the given type.  0, or a negative errno if a
 * block could not be read (out is then incomplete). */
int bitmap_count(struct blockdev *bd, const struct ordfs_super *sb, uint64_t start,
		 uint32_t nblocks, enum ordfs_block_type type, uint64_t lo, uint64_t hi,
		 struct bitmap_count *out);

#endif
