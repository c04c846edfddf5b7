/*
 * extent_internal.h - what the files of src/extent/ share: the node layout,
 * root-to-leaf paths, the split plan and the rules of the tree.  Not for use
 * outside src/extent/; the API is extent.h.
 *
 * Files:
 *   extent.c         the read side of the API: lookup, walk, credits,
 *                    init, depth
 *   extent_node.c    one node: record edits, verification [E2, E3],
 *                    reading tree blocks
 *   extent_path.c    root-to-leaf paths: search, write access, keys [E1]
 *   extent_insert.c  adding a record (node splits, root growth) and
 *                    extent_insert
 *   extent_remove.c  extent_remove: cutting records, freeing blocks,
 *                    shrinking the tree [E5, E7]
 *   extent_flags.c   extent_set_flags [E8], ext_record_split
 *   extent_shift.c   extent_shift, extent_split_at: moving records along
 *                    the file (collapse and insert range) [E9]
 *
 * Layout (format.h, "extents"):
 *   root:        inode->d.data: node header (8 bytes) + up to
 *                ORDFS_INODE_ROOT_EXTENTS records of 24 bytes;
 *   tree block:  ORDFS_BT_EXTENT: common header (0..23, owner = the inode,
 *                blockno = the block itself), node header at 24, records at
 *                32; max_entries = (block_size - 32) / 24.
 *   node header: 0 magic, 2 entries, 4 max_entries, 6 depth (0 = leaf).
 *   leaf record: 0 logical, 8 physical, 16 len, 20 flags.
 *   index record: 0 first logical block of the child, 8 child, 16 zero.
 *
 * Rules of the tree.  E1, E4 and E6 bind every file; the others are stated
 * in full in the file that keeps them:
 *  E1 Keys are exact: an index record's key is the logical block of the
 *     first record under it, and only the root (as a leaf) may be empty.
 *     So the records under index record i lie in [key i, key i+1), lookups
 *     descend by "last key <= target", and the first mapped block after a
 *     leaf is the next key up the path.  Code that changes a node's first
 *     record fixes the keys above it (ext_keys_fix).
 *  E2 Every node is verified whenever it is read (extent_node.c).
 *  E3 Walks terminate (extent_node.c).
 *  E4 Changes run in two phases: first everything that can fail (reading the
 *     path, allocating blocks, journal_get_write_access, freeing blocks),
 *     then the edit of the nodes in memory, which cannot fail.
 *  E5 extent_remove frees at most one bitmap block's worth of data blocks
 *     per record change (extent_remove.c; extent_credits counts on it).
 *  E6 inode->d.blocks = mapped data blocks + tree blocks.
 *  E7 How mapped blocks are freed (extent_remove.c).
 *  E8 extent_set_flags changes flags only (extent_flags.c).
 *  E9 extent_shift changes logical blocks and keys only, by the same
 *     amount for every record at or after its start, so order, shape,
 *     blocks and flags stay (extent_shift.c).
 *
 * Tree blocks are metadata: alloc_blocks() / alloc_free_blocks(ALLOC_METADATA)
 * and journal_get_write_access(JWA_CSUM_HDR) before any change.  Callers hold
 * inode->lock (shared for lookups and walks); nothing here takes a lock.
 */
#ifndef ORDFS_EXTENT_INTERNAL_H
#define ORDFS_EXTENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"
#include "../fs.h"

struct buf;
struct handle;
struct inode;

#define EXTENT_MAX_DEPTH 16u
#define NODE_OFF ORDFS_BLOCK_HDR_SIZE /* node header inside a tree block */
#define REC ORDFS_EXTENT_REC
#define ROOT_CAP ORDFS_INODE_ROOT_EXTENTS
#define NO_NEXT UINT64_MAX /* no mapped block follows (never a record start) */

/* ---- node layout ---------------------------------------------------------- */

static inline uint8_t *rec_at(uint8_t *node, unsigned i)
{
	return node + ORDFS_EXTENT_NODE_HDR + (size_t)i * REC;
}

static inline const uint8_t *crec_at(const uint8_t *node, unsigned i)
{
	return node + ORDFS_EXTENT_NODE_HDR + (size_t)i * REC;
}

static inline unsigned node_entries(const uint8_t *node)
{
	return le_get16(node + 2);
}

static inline unsigned node_depth(const uint8_t *node)
{
	return le_get16(node + 6);
}

static inline void node_set_entries(uint8_t *node, unsigned n)
{
	le_put16(node + 2, (uint16_t)n);
}

static inline void node_init(uint8_t *node, unsigned cap, unsigned depth)
{
	le_put16(node + 0, ORDFS_EXTENT_MAGIC);
	le_put16(node + 2, 0);
	le_put16(node + 4, (uint16_t)cap);
	le_put16(node + 6, (uint16_t)depth);
}

/* The first field of both record kinds: logical block / first logical. */
static inline uint64_t rec_key(const uint8_t *rec)
{
	return le_get64(rec);
}

static inline uint64_t idx_child(const uint8_t *rec)
{
	return le_get64(rec + 8);
}

static inline void idx_put(uint8_t *rec, uint64_t key, uint64_t child)
{
	le_put64(rec + 0, key);
	le_put64(rec + 8, child);
	le_put64(rec + 16, 0);
}

static inline void ext_get(const uint8_t *rec, struct ordfs_extent *e)
{
	e->logical = le_get64(rec + 0);
	e->physical = le_get64(rec + 8);
	e->len = le_get32(rec + 16);
	e->flags = le_get32(rec + 20);
}

static inline void ext_put(uint8_t *rec, const struct ordfs_extent *e)
{
	le_put64(rec + 0, e->logical);
	le_put64(rec + 8, e->physical);
	le_put32(rec + 16, e->len);
	le_put32(rec + 20, e->flags);
}

static inline uint64_t ext_end(const struct ordfs_extent *e)
{
	return e->logical + e->len;
}

static inline unsigned block_cap(const struct ordfs *fs)
{
	return (fs->block_size - NODE_OFF - ORDFS_EXTENT_NODE_HDR) / REC;
}

/* ---- paths ---------------------------------------------------------------- */

struct path_level {
	uint8_t *node;    /* node header: inode->d.data or inside b */
	struct buf *b;    /* the tree block; NULL for the root */
	uint64_t blockno; /* 0 for the root */
	unsigned cap;
	uint64_t lo, hi;  /* the node's records lie in [lo, hi) */
	int idx;          /* index: record followed; leaf: last record <= target or -1 */
};

/* lv[0] is the root, lv[depth] the leaf.  One spare level for ext_root_grow. */
struct path {
	unsigned depth;
	struct path_level lv[EXTENT_MAX_DEPTH + 2];
};

/* ---- adding a record: splits and root growth -------------------------------- */

/* New tree blocks one record addition needs, allocated and journaled before
 * any node changes [E4]. */
struct split_plan {
	unsigned nblocks, used;
	bool grow; /* the root moves into the first block and gains a level */
	uint64_t blockno[EXTENT_MAX_DEPTH + 1];
	struct buf *b[EXTENT_MAX_DEPTH + 1];
};

/* ---- one node (extent_node.c) ------------------------------------------------ */

/* Inserts rec at pos of a node with room; deletes the record at pos. */
void ext_recs_insert(uint8_t *node, unsigned pos, const uint8_t *rec);
void ext_recs_delete(uint8_t *node, unsigned pos);
/* Inserts rec at pos into the full node `left` (cap records) and moves the
 * upper part into the empty node `right`. */
void ext_node_split_insert(uint8_t *left, uint8_t *right, unsigned cap, unsigned pos,
			   const uint8_t *rec);
/* A leaf record's length, flags, range and blocks are valid. */
bool ext_fields_valid(const struct ordfs *fs, const struct ordfs_extent *e);
/* Verifies the root in inode->d.data in full [E2]. */
int ext_root_check(const struct ordfs *fs, const struct inode *inode);
/* Returns tree block blockno, verified as a node of on-disk depth `depth`
 * whose records lie in [lo, hi): in full if it comes from the device or
 * `full` is set, else its headers only [E2]. */
int ext_tree_block_read(struct ordfs *fs, const struct inode *inode, uint64_t blockno,
			unsigned depth, uint64_t lo, uint64_t hi, bool full, struct buf **out);

/* ---- paths (extent_path.c) ------------------------------------------------- */

/* Reads and verifies the path from the root to the leaf that covers
 * target; p holds references until ext_path_release().  Without `full`,
 * cached nodes get the lookup's light check [E2]. */
int ext_path_find(struct ordfs *fs, struct inode *inode, uint64_t target, bool full,
		  struct path *p);
void ext_path_release(struct ordfs *fs, struct path *p);
/* The first key after the path's leaf, found up the path [E1], or NO_NEXT. */
uint64_t ext_path_next_key(const struct path *p);
/* The first mapped block after the leaf record at idx, or NO_NEXT. */
uint64_t ext_path_next_mapped(const struct path *p);
/* The leaf record at the path's idx (idx >= 0). */
void ext_path_leaf_extent(const struct path *p, struct ordfs_extent *e);
/* Gets write access to the tree blocks at levels [from, to]; level 0 is the
 * inode, written by inode_write(). */
int ext_path_access(struct handle *h, const struct path *p, unsigned from, unsigned to);
/* Write access to the nodes whose keys change when the first key of the
 * node at `level` does; then ext_keys_fix() sets them [E1]. */
int ext_keys_access(struct handle *h, const struct path *p, unsigned level);
void ext_keys_fix(struct path *p, unsigned level, uint64_t key);

/* ---- splitting a record (extent_flags.c) ------------------------------------ */

/* Splits the leaf record r at the path's idx into [r.logical, at) and
 * [at, end of r), both with r's flags and blocks; may split nodes upward
 * (E4: everything that can fail comes first). */
int ext_record_split(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
		     const struct ordfs_extent *r, uint64_t at);

/* ---- adding a record (extent_insert.c) --------------------------------------- */

/* a is followed by b, logically and on disk, and one record can hold both. */
bool ext_extents_join(const struct ordfs_extent *a, const struct ordfs_extent *b);
/* Prepares adding one record to the path's leaf: allocates the blocks of
 * the splits (and root growth) it needs and gets write access to every
 * node that changes [E4].  ext_plan_cancel() undoes it. */
int ext_split_prepare(struct ordfs *fs, struct handle *h, struct path *p,
		      struct split_plan *plan);
void ext_plan_cancel(struct ordfs *fs, struct handle *h, struct split_plan *plan);
/* Moves the root's records into the plan's first block; the path gains a
 * level. */
void ext_root_grow(struct ordfs *fs, struct inode *inode, struct path *p,
		   struct split_plan *plan);
/* Adds rec at pos of the node at `level`, splitting full nodes upward with
 * the plan's blocks; cannot fail. */
void ext_path_add_record(struct ordfs *fs, struct inode *inode, struct path *p,
			 struct split_plan *plan, unsigned level, unsigned pos,
			 const uint8_t *rec);

#endif
