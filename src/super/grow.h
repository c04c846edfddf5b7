/*
 * grow.h - growing an unmounted filesystem to a larger block count
 * (resize.ordfs).
 *
 * Owns: the geometry of a grow (which block counts an image's format can
 * take without moving an area) and the crash-safe order of the writes
 * (docs/FORMAT.md, "What grows on disk, and in which order").
 *
 * Rules:
 *  - Only block_count, free_blocks and the state bits change; no area
 *    moves.  A grow is possible while the new count still fits the block
 *    bitmap's existing blocks (the slack of its last block); past that
 *    ordfs_grow_geometry refuses with -EFBIG and a reason.
 *  - Every state a crash can leave is an image fsck.ordfs passes at the
 *    old or at the new size: the superblock and the bitmap bits change in
 *    one journal transaction.
 */
#ifndef ORDFS_SUPER_GROW_H
#define ORDFS_SUPER_GROW_H

#include <stdint.h>

#include "format/format.h"

struct blockdev;

/* The largest block count `sb`'s areas allow (its block bitmap's bits,
 * bounded by the format's limit). */
uint64_t ordfs_grow_max_blocks(const struct ordfs_super *sb);

/* The superblock after a grow of `sb` to new_count blocks, or -EINVAL
 * (not larger), -EFBIG (past ordfs_grow_max_blocks) with *why set. */
int ordfs_grow_geometry(const struct ordfs_super *sb, uint64_t new_count,
			struct ordfs_super *out, const char **why);

/* Grows the unmounted filesystem on bd (its journal empty, nobody using
 * it: the caller checked) from *old to *grown (ordfs_grow_geometry's
 * answer; bd at least grown->block_count blocks long).  Writes, in this
 * order: the new backup superblock (past the old filesystem), the
 * superblock marked in use, one journal transaction with the bitmap
 * block(s) and the grown superblock, its checkpoint, and the grown
 * superblock marked clean to the primary and the new backup. */
int ordfs_grow_offline(struct blockdev *bd, const struct ordfs_super *old,
		       const struct ordfs_super *grown);

struct ordfs;

/* Grows the mounted filesystem fs to new_count blocks (its device made
 * that large by the caller: blockdev_refresh_size) and commits the grow
 * before it returns (grow_online.c).  *old_count: the size before.
 * -EINVAL/-EFBIG (ordfs_grow_geometry's refusals, or a device too small),
 * -EROFS (not writable), or an I/O error; *why says it in one line. */
int ordfs_grow_online(struct ordfs *fs, uint64_t new_count, uint64_t *old_count,
		      const char **why);

#endif
