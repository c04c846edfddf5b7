/*
 * pass_bitmaps.c - pass 5: the block bitmap against the blocks found (and
 * bitmap blocks failing their checksum; a group bitmap block is metadata
 * in use, its own bit set); on a clean image the summary
 * counts and an empty orphan list; the two sector copies of the superblock
 * and of the journal superblock agree.
 * Findings: the bitmaps and counts to rebuild (with what was found), the
 * superblocks to write again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"
#include "../cache/bcache.h"

/* A torn superblock write leaves its copies different (one old, or one
 * garbage); the filesystem reads the good one, the next write of that
 * superblock heals it, and until then the image has one copy less. */
static void check_super_copies(struct checker *c)
{
	const struct ordfs_super *sb = &c->fs->sb;
	uint32_t bs = ordfs_block_size(sb);
	uint8_t *raw = malloc(bs);
	if (!raw)
		return;
	if (blockdev_read(c->fs->raw_bd, raw, ORDFS_SB_SIZE, 0) == 0 &&
	    !ordfs_super_copies_agree(raw)) {
		problem(c, CHK_SUPER_COPY, "the two copies of the superblock differ");
		if (c->fx)
			c->fx->super_copy_stale = true;
	}
	if (blockdev_read(c->fs->raw_bd, raw, bs, sb->journal_start * bs) == 0 &&
	    !ordfs_super_copies_agree(raw)) {
		problem(c, CHK_SUPER_COPY, "the two copies of the journal superblock differ");
		if (c->fx)
			c->fx->journal_super_copy_stale = true;
	}
	free(raw);
}

/* Does a whole bitmap block agree with what the walk found, byte for
 * byte?  Then its blocks are counted and recorded a word at a time (a
 * 16 TiB image has 2^32 bits to compare).  Only for ranges without
 * metadata blocks the walk does not mark (it marks the group bitmap
 * blocks: pass_blocks). */
static bool bitmap_block_agrees(struct checker *c, struct bitmap_cursor *bitmap,
				uint64_t first, uint32_t bytes, uint64_t *used)
{
	bitmap_cursor_bit(c, bitmap, first); /* loads the block */
	if (!bitmap->held)
		return false;
	const uint8_t *found = c->blocks + first / 8;
	if (memcmp(found, bitmap->held->data + ORDFS_BLOCK_HDR_SIZE, bytes) != 0)
		return false;
	uint32_t i = 0;
	for (; i + 8 <= bytes; i += 8) {
		uint64_t w;
		memcpy(&w, found + i, 8);
		*used += (uint64_t)__builtin_popcountll(w);
	}
	for (; i < bytes; i++)
		*used += (uint64_t)__builtin_popcount(found[i]);
	if (c->fx && c->fx->blocks_found)
		for (i = 0; i < bytes; i++)
			c->fx->blocks_found[first / 8 + i] |= found[i];
	return true;
}

void pass_bitmap(struct checker *c)
{
	const struct ordfs_super *sb = &c->fs->sb;
	uint64_t used = 0, mismatches = 0;
	uint32_t per = ordfs_bits_per_bitmap_block(ordfs_block_size(sb));
	struct bitmap_cursor bitmap = { .start = sb->block_bitmap_start,
					.blocks = sb->block_bitmap_blocks, .block_bitmap = true };
	for (uint64_t first = 0; first < sb->block_count; first += per) {
		uint64_t end = sb->block_count - first < per ? sb->block_count : first + per;
		if (first >= sb->data_start && end < sb->block_count && per % 8 == 0 &&
		    bitmap_block_agrees(c, &bitmap, first, per / 8, &used))
			continue;
		for (uint64_t b = first; b < end; b++) {
			/* (group bitmap blocks: marked found by pass_blocks) */
			bool meta = b < sb->data_start || b == sb->block_count - 1;
			bool found = meta || (c->blocks[b / 8] >> (b % 8)) & 1;
			/* (a damaged bitmap block also fails its checksum below) */
			bool marked = bitmap_cursor_bit(c, &bitmap, b);
			used += found;
			if (found != marked && mismatches++ < 20)
				problem(c, CHK_BLOCK_BITMAP, "block %llu is %s but the bitmap says %s",
					(unsigned long long)b, found ? "in use" : "free",
					marked ? "in use" : "free");
			if (found && c->fx && c->fx->blocks_found)
				c->fx->blocks_found[b / 8] |= (uint8_t)(1u << (b % 8));
		}
	}
	bitmap_cursor_done(c, &bitmap);
	if (mismatches && c->fx)
		c->fx->bitmaps_wrong = true;
	uint32_t bad = alloc_bad_bitmap_blocks(c->fs->alloc);
	if (bad) {
		problem(c, CHK_BLOCK_BITMAP, "%u bitmap blocks fail their checksum", bad);
		if (c->fx)
			c->fx->bitmaps_wrong = true;
	}
	if (mismatches > 20)
		problem(c, CHK_BLOCK_BITMAP, "%llu more block bitmap differences",
			(unsigned long long)(mismatches - 20));
	c->res->blocks_used = used;

	if (sb->state & ORDFS_STATE_CLEAN) {
		uint64_t free_blocks = sb->block_count - used;
		uint32_t free_inodes = sb->inode_count - (uint32_t)c->res->inodes_used - 1;
		bool wrong = false;
		if (sb->free_blocks != free_blocks) {
			problem(c, CHK_SUMMARY, "free blocks count %llu, should be %llu",
				(unsigned long long)sb->free_blocks, (unsigned long long)free_blocks);
			wrong = true;
		}
		if (sb->free_inodes != free_inodes) {
			problem(c, CHK_SUMMARY, "free inodes count %u, should be %u",
				sb->free_inodes, free_inodes);
			wrong = true;
		}
		if (wrong && c->fx)
			c->fx->summary_wrong = true;
		if (sb->orphan_head) {
			problem(c, CHK_ORPHAN, "clean image with a non-empty orphan list");
			if (c->fx)
				c->fx->clean_with_orphans = true;
		}
	}
	check_super_copies(c);
}
