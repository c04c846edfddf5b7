/*
 * grow.h - growing a filesystem to a larger block count (resize.ordfs):
 * offline (grow.c) and the pieces a mounted grow uses too
 * (mount/grow_online.c, ordfs_grow_online in ops.h).
 *
 * Owns: the geometry of a grow (which block counts an image's format can
 * take without moving an area), the bitmap blocks of groups a grow adds,
 * and the crash-safe order of the writes (docs/FORMAT.md, "What grows on
 * disk, and in which order").
 *
 * Rules:
 *  - Only block_count, free_blocks, the state bits and the
 *    INCOMPAT_GROUP_BITMAPS feature change in the superblock; no area
 *    moves.  Past the block bitmap area's reach the added space becomes
 *    groups whose bitmap block is their own first block (format.h).
 *  - Every state a crash can leave is an image fsck.ordfs passes at the
 *    old or at the new size: what lies past the old end is written and
 *    flushed first, then the superblock and the existing bitmap blocks
 *    change in one journal transaction.
 */
#ifndef ORDFS_SUPER_GROW_H
#define ORDFS_SUPER_GROW_H

#include <stdint.h>

#include "format/format.h"

struct blockdev;

/* The largest block count a grow of `sb` can reach: the format's limit
 * (groups past the area reach it). */
uint64_t ordfs_grow_max_blocks(const struct ordfs_super *sb);

/* Blocks that have a bitmap block now: the area's reach, or more where
 * groups past it exist (the bits past block_count there are set). */
uint64_t ordfs_grow_existing_bits(const struct ordfs_super *sb);

/* The groups whose bitmap blocks a grow from old to grown writes:
 * [*first, *end) (none when equal). */
void ordfs_grow_new_groups(const struct ordfs_super *old, const struct ordfs_super *grown,
			   uint64_t *first, uint64_t *end);

/* Writes those groups' bitmap blocks directly to bd (past the old
 * filesystem: nothing reads them at the old size), not flushed: their own
 * bit, the new backup superblock's and those past the new end set, the
 * rest free. */
int ordfs_grow_write_group_bitmaps(struct blockdev *bd, const struct ordfs_super *old,
				   const struct ordfs_super *grown);

/* Existing bitmap blocks the grow's transaction changes. */
uint32_t ordfs_grow_bitmap_credits(const struct ordfs_super *old,
				   const struct ordfs_super *grown);

/* The block count a grow of sb to new_count blocks gives: new_count, or
 * one fewer when the last group past the area would hold only its bitmap
 * block.  Callers compare it with block_count for "nothing to do". */
uint64_t ordfs_grow_target(const struct ordfs_super *sb, uint64_t new_count);

/* The superblock after a grow of `sb` to new_count blocks (one block
 * fewer when the last group past the area would hold only its bitmap
 * block: out->block_count says), or -EINVAL (not larger), -EFBIG (past
 * the format's limit) with *why set. */
int ordfs_grow_geometry(const struct ordfs_super *sb, uint64_t new_count,
			struct ordfs_super *out, const char **why);

/* Grows the unmounted filesystem on bd (its journal empty, nobody using
 * it: the caller checked) from *old to *grown (ordfs_grow_geometry's
 * answer; bd at least grown->block_count blocks long).  Writes, in this
 * order: the new groups' bitmap blocks and the new backup superblock (past
 * the old filesystem), the superblock marked in use, one journal transaction with the bitmap
 * block(s) and the grown superblock, its checkpoint, and the grown
 * superblock marked clean to the primary and the new backup. */
int ordfs_grow_offline(struct blockdev *bd, const struct ordfs_super *old,
		       const struct ordfs_super *grown);

#endif
