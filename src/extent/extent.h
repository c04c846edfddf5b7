/*
 * extent.h - per-inode extent trees: logical block -> physical block.
 *
 * Owns: the extent tree of a regular file, directory or long symlink: the
 * root node in inode->d.data (up to ORDFS_INODE_ROOT_EXTENTS records) and
 * ORDFS_BT_EXTENT blocks below it (format.h).  Sparse files are holes in
 * the map; files may reach any offset the image can address.
 *
 * Rules:
 *  - Callers hold inode->lock: shared for lookups and walks, exclusive for
 *    insert/remove, and a handle with extent_credits() for changes.
 *  - Records in a node are sorted by logical block and never overlap;
 *    adjacent records that are contiguous on disk with equal flags are
 *    merged on insert.  An index record holds the lowest logical block of
 *    its child.
 *  - Tree blocks are metadata: allocated with alloc_blocks() and freed with
 *    ALLOC_METADATA, journaled with JWA_CSUM_HDR, verified on read
 *    (-EUCLEAN on a bad block, and nothing is changed).
 *  - On success the functions have updated inode->d (root, blocks count) and
 *    written it with inode_write(); on failure nothing is half-done in
 *    memory that the next call could trip over.
 *
 * Design: docs/design/allocation.md (rules E1-E9), write-routes.md (shifts).
 */
#ifndef ORDFS_EXTENT_H
#define ORDFS_EXTENT_H

#include <stdint.h>

#include "format/format.h"

struct ordfs;
struct handle;
struct inode;

/* Initialises an empty tree in inode->d.data (new inodes). */
void extent_tree_init(struct inode *inode);

/* Finds the mapping of logical block lblk.  Returns 1 with *ext = the whole
 * extent containing lblk; 0 if lblk is in a hole, with *ext = {lblk, 0, n, 0}
 * where n is the number of blocks to the next mapped block (capped at
 * ORDFS_EXT_MAX_LEN); or a negative errno. */
int extent_lookup(struct ordfs *fs, struct inode *inode, uint64_t lblk,
		  struct ordfs_extent *ext);

/* Maps [e->logical, e->logical + e->len) to e->physical.  The range must be
 * a hole (-EEXIST otherwise, nothing changed). */
int extent_insert(struct ordfs *fs, struct handle *h, struct inode *inode,
		  const struct ordfs_extent *e);

/* Unmaps blocks in [lblk, lblk + count), last extent first, freeing the data
 * blocks (alloc_free_blocks) and emptied tree blocks.  Stops after changing
 * at most max_records records so the work fits one handle's credits.
 * Returns 1 if mapped blocks remain in the range (call again, in a new
 * handle if needed), 0 when the range is a hole, or a negative errno. */
int extent_remove(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lblk,
		  uint64_t count, uint32_t max_records);
/* The record changes extent_remove needs to unmap all of [lblk, lblk +
 * count) in one call (its max_records; 0 for a hole). */
int extent_remove_steps(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint64_t count,
			uint32_t *steps);

/* Gives every mapped block in [lblk, lblk + count) the leaf flags `flags`
 * (0 = written, or ORDFS_EXT_UNWRITTEN), splitting records at the range
 * edges and merging records that come to join; holes stay holes.  Changes
 * at most max_records records (at least 2), a split counting as two, so
 * the work fits extent_credits(fs, inode, max_records).  A range inside
 * one record takes at most 5.  Returns 1 if blocks in the range still have
 * other flags (call again, in a new handle if needed), 0 when done, or a
 * negative errno. */
int extent_set_flags(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lblk,
		     uint64_t count, uint32_t flags, uint32_t max_records);

/* Moves every record at or after logical block `start` by `delta` blocks
 * (negative: toward the start of the file), index keys included; blocks,
 * lengths and flags stay, and so does every record before start.  Refused
 * with nothing changed: a record crossing start, or one in
 * [start + delta, start) for a move left (-EINVAL); a record moved past
 * the last logical block (-EFBIG).  The handle needs
 * extent_shift_credits(fs, inode, start). */
int extent_shift(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t start,
		 int64_t delta);
/* The credits extent_shift(start) needs: the tree blocks holding a key at
 * or after start, the inode, and room for one record split made before it
 * in the same handle. */
int extent_shift_credits(struct ordfs *fs, struct inode *inode, uint64_t start,
			 uint32_t *credits);
/* Cuts the record that crosses lblk (starts before it, ends after it) in
 * two at lblk; nothing if none does.  Needs extent_credits(fs, inode, 2). */
int extent_split_at(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lblk);

/* Worst-case metadata blocks one insert or remove (of up to max_records)
 * can dirty: tree path splits, bitmap blocks, the inode. */
uint32_t extent_credits(struct ordfs *fs, struct inode *inode, uint32_t max_records);
/* How many records one handle may change: `most`, halved (not below
 * `least`; both powers of two) until extent_credits fits the journal's
 * largest handle. */
uint32_t extent_records_per_handle(struct ordfs *fs, struct inode *inode, uint32_t most,
				   uint32_t least);

/* Visits every tree block (node_cb, depth 1 = just under the root) and
 * every leaf record (ext_cb) in logical order.  A callback returning
 * non-zero stops the walk and that value is returned.  Tree blocks are
 * verified; a bad one is -EUCLEAN, reported through node_cb first with
 * bad = 1 if node_cb is given. */
struct extent_walk_ops {
	int (*node_cb)(void *ctx, uint64_t blockno, unsigned depth, int bad);
	int (*ext_cb)(void *ctx, const struct ordfs_extent *ext);
	void *ctx;
};
int extent_walk(struct ordfs *fs, struct inode *inode, const struct extent_walk_ops *ops);

/* Tree depth (0 = all records in the inode). */
unsigned extent_depth(const struct inode *inode);

#endif
