/*
 * dir_internal.h - what the files of src/dir/ share: the payload helpers
 * of dir_leaf.c (leaf blocks) and dir_index.c (index blocks), and the tree
 * access of dir.c used by dir_ops.c, dir_grow.c, dir_readdir.c and
 * dir_verify.c.  Exposed to tests/unit/test_dir.c so the leaf code can be
 * tested on crafted hash collisions.  Not for use outside src/dir/ and its
 * test.
 *
 * Vocabulary:
 *  - entry area: the bytes after a leaf's 32-byte node header: `used` bytes
 *    of entries (format.h), sorted by (hash, name), each 8-byte aligned.
 *  - bucket: the top 56 bits of a hash (hash >> DIR_BUCKET_SHIFT).  Every
 *    entry of one bucket lives in one leaf, index keys are bucket starts
 *    (low 8 bits zero), and a readdir cookie is bucket << 7 | slot
 *    (dir_readdir.c).
 *
 * The *_problem() checkers return NULL for a sound structure or a static
 * one-line description of the first thing wrong; callers on the hot path
 * turn that into -EUCLEAN, the checker (dir_verify) reports the text.
 */
#ifndef ORDFS_DIR_INTERNAL_H
#define ORDFS_DIR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

#define DIR_MAX_LEVEL 8u          /* index levels above the leaves */
#define DIR_BUCKET_SHIFT 8u
#define DIR_BUCKET_MASK 0xffull
#define DIR_MAX_BLOCKS 0xffffffffull /* "next leaf" is a u32 logical block */

/* Leaf node header fields (offsets from the block start). */
#define DIR_LEAF_COUNT_OFF 24u
#define DIR_LEAF_USED_OFF 26u
#define DIR_LEAF_NEXT_OFF 28u
/* Index node header fields. */
#define DIR_INDEX_COUNT_OFF 24u
#define DIR_INDEX_LEVEL_OFF 26u

static inline uint64_t dir_bucket(uint64_t hash)
{
	return hash >> DIR_BUCKET_SHIFT;
}

static inline uint64_t dir_bucket_start(uint64_t hash)
{
	return hash & ~DIR_BUCKET_MASK;
}

/* One decoded leaf entry.  name points into the entry, not NUL-terminated. */
struct dir_entry {
	uint64_t hash;
	uint32_t ino;
	uint8_t dtype;
	uint8_t namelen;
	const char *name;
};

/* ---- entries and entry areas (dir_leaf.c) ------------------------------ */

/* Orders (hash, name) keys: negative, 0 or positive like memcmp. */
int dent_cmp(uint64_t ha, const char *na, size_t la, uint64_t hb, const char *nb,
	     size_t lb);
/* Size of the (already bounds-checked) entry at e. */
uint32_t dent_size(const uint8_t *e);
void dent_decode(const uint8_t *e, struct dir_entry *out);
/* Writes the entry and zeroes its padding: dent_size bytes at e. */
void dent_encode(uint8_t *e, const struct dir_entry *in);

/* Searches a sound, sorted area.  Returns 1 with *off at the entry if
 * (hash, name) is present, else 0 with *off where it would be inserted. */
int darea_find(const uint8_t *area, uint32_t used, uint64_t hash, const char *name,
	       size_t len, uint32_t *off);
/* Inserts e at off (from darea_find); the area must have room for
 * ordfs_dir_entry_size(e->namelen) more bytes after `used`. */
void darea_insert(uint8_t *area, uint32_t used, uint32_t off, const struct dir_entry *e);
/* Removes the entry at off; returns the new used size. */
uint32_t darea_remove(uint8_t *area, uint32_t used, uint32_t off);
/* Number of entries in a sound area. */
uint32_t darea_count(const uint8_t *area, uint32_t used);
/* Where to cut an over-full area into two leaves: a byte offset between two
 * entries of different buckets such that both sides fit in `cap` bytes and
 * the larger side is as small as possible.  0 with *cut, or -ENOSPC when no
 * such boundary exists (one bucket needs more than a leaf). */
int darea_split_point(const uint8_t *area, uint32_t used, uint32_t cap, uint32_t *cut);
/* Structure of an area: every entry inside `used`, names 1..255 bytes,
 * inode numbers in [ORDFS_ROOT_INO, max_ino], strictly sorted, `count`
 * entries. */
const char *darea_problem(const uint8_t *area, uint32_t used, uint32_t count,
			  uint32_t max_ino);

/* ---- leaf blocks (dir_leaf.c) ------------------------------------------ */

static inline uint32_t dleaf_capacity(uint32_t block_size)
{
	return block_size - ORDFS_DIR_NODE_HDR;
}

static inline uint8_t *dleaf_area(uint8_t *blk)
{
	return blk + ORDFS_DIR_NODE_HDR;
}

static inline const uint8_t *dleaf_area_c(const uint8_t *blk)
{
	return blk + ORDFS_DIR_NODE_HDR;
}

static inline uint32_t dleaf_count(const uint8_t *blk)
{
	return le_get16(blk + DIR_LEAF_COUNT_OFF);
}

static inline uint32_t dleaf_used(const uint8_t *blk)
{
	return le_get16(blk + DIR_LEAF_USED_OFF);
}

static inline uint32_t dleaf_next(const uint8_t *blk)
{
	return le_get32(blk + DIR_LEAF_NEXT_OFF);
}

static inline void dleaf_set_next(uint8_t *blk, uint32_t next)
{
	le_put32(blk + DIR_LEAF_NEXT_OFF, next);
}

/* Replaces the leaf's entries with `used` bytes of sound, sorted entries
 * (used <= dleaf_capacity) and zeroes the rest of the area; keeps `next`. */
void dleaf_fill(uint8_t *blk, uint32_t block_size, const uint8_t *area, uint32_t used);
/* Inserts e at off; the leaf must have room. */
void dleaf_insert(uint8_t *blk, uint32_t off, const struct dir_entry *e);
void dleaf_remove(uint8_t *blk, uint32_t off);
/* Points the entry at off at another inode and type. */
void dleaf_set_target(uint8_t *blk, uint32_t off, uint32_t ino, uint8_t dtype);
static inline bool dleaf_has_room(const uint8_t *blk, uint32_t block_size,
				  uint32_t namelen)
{
	return dleaf_used(blk) + ordfs_dir_entry_size(namelen) <= dleaf_capacity(block_size);
}
/* Structure of a leaf (header fields and area). */
const char *dleaf_problem(const uint8_t *blk, uint32_t block_size, uint32_t max_ino);
/* Hashes of the first and last entries; false if the leaf is empty. */
bool dleaf_hash_range(const uint8_t *blk, uint64_t *first, uint64_t *last);

/* ---- index blocks (dir_index.c) ---------------------------------------- */

static inline uint32_t dindex_capacity(uint32_t block_size)
{
	return (block_size - ORDFS_DIR_NODE_HDR) / ORDFS_DIR_INDEX_REC;
}

static inline uint32_t dindex_count(const uint8_t *blk)
{
	return le_get16(blk + DIR_INDEX_COUNT_OFF);
}

static inline uint32_t dindex_level(const uint8_t *blk)
{
	return le_get16(blk + DIR_INDEX_LEVEL_OFF);
}

static inline uint64_t dindex_key(const uint8_t *blk, uint32_t i)
{
	return le_get64(blk + ORDFS_DIR_NODE_HDR + i * ORDFS_DIR_INDEX_REC);
}

static inline uint64_t dindex_child(const uint8_t *blk, uint32_t i)
{
	return le_get64(blk + ORDFS_DIR_NODE_HDR + i * ORDFS_DIR_INDEX_REC + 8);
}

/* Makes blk (header already initialised) an index node of `level` with the
 * single record (key, child). */
void dindex_init(uint8_t *blk, uint32_t block_size, uint32_t level, uint64_t key,
		 uint64_t child);
/* The last record whose key is <= hash (record 0 if none is). */
uint32_t dindex_search(const uint8_t *blk, uint64_t hash);
/* Inserts (key, child) at pos; the node must have room. */
void dindex_insert(uint8_t *blk, uint32_t pos, uint64_t key, uint64_t child);
/* Inserts (key, child) at pos into the full node `left` and moves the upper
 * half of the records into `right` (header initialised, same level).
 * scratch holds (capacity + 1) records.  Returns the key of right's first
 * record. */
uint64_t dindex_split_insert(uint8_t *left, uint8_t *right, uint32_t block_size,
			     uint32_t pos, uint64_t key, uint64_t child, uint8_t *scratch);
/* Structure of an index node: count 1..capacity, level 1..DIR_MAX_LEVEL,
 * keys bucket-aligned and strictly increasing, children in [1, nblocks). */
const char *dindex_problem(const uint8_t *blk, uint32_t block_size, uint64_t nblocks);

/* ---- the tree (dir.c) ---------------------------------------------------- */

struct buf;
struct handle;
struct inode;
struct ordfs;

/* One directory operation's view of the directory. */
struct dctx {
	struct ordfs *fs;
	struct inode *dir;
	uint32_t bs;
	uint64_t nblocks;
	uint32_t max_ino;
	struct ordfs_extent ext; /* last mapping found; len 0 = none */
};

/* A directory block in use: its buffer holds a reference. */
struct dnode {
	uint64_t lblk;
	uint64_t pblk;
	struct buf *b;
};

/* Root-to-leaf path: node[0] is the root, node[levels] the leaf, pos[i] the
 * record followed in index node i. */
struct dpath {
	uint32_t levels;
	struct dnode node[DIR_MAX_LEVEL + 1];
	uint32_t pos[DIR_MAX_LEVEL + 1];
};

/* Key range a node must respect: [lo, hi), or [lo, 2^64) without hi. */
struct dbounds {
	uint64_t lo, hi;
	bool has_hi;
};

/* Sets up dc for one operation on dir: -ENOTDIR, or -EUCLEAN if the size is
 * not a whole number of blocks or too large. */
int dctx_init(struct dctx *dc, struct ordfs *fs, struct inode *dir);
/* Physical block of logical block lblk; a hole or a block outside the data
 * area is -EUCLEAN. */
int dctx_map(struct dctx *dc, uint64_t lblk, uint64_t *pblk);
bool dnode_is_leaf(const uint8_t *blk);
/* Height of a node above the leaves (0 for a leaf). */
uint32_t dnode_level(const uint8_t *blk);
/* Reads and verifies logical block lblk (want: ORDFS_BT_DIR_LEAF or
 * _INDEX, 0 for either).  On -EUCLEAN, *why (if given) says what is wrong. */
int dnode_get(struct dctx *dc, uint64_t lblk, uint16_t want, struct dnode *out,
	      const char **why);
void dnode_put(struct dctx *dc, struct dnode *n);
/* Keeps the live buffer's checksum valid after a change (dir.c). */
void dnode_csum(struct dctx *dc, struct dnode *n);
void dpath_put(struct dctx *dc, struct dpath *p);
uint8_t *dpath_leaf(struct dpath *p);
/* Does the node respect the key range its parent gives it? */
const char *dnode_range_problem(const uint8_t *blk, const struct dbounds *r);
/* The key range of child pos of an index node whose range is r. */
struct dbounds dbounds_child(const uint8_t *blk, uint32_t pos, const struct dbounds *r);
/* Fills p with the path from the root to the leaf that holds (or would
 * hold) hash.  The directory has at least one block. */
int dir_descend(struct dctx *dc, uint64_t hash, struct dpath *p);
/* Descends to name's leaf.  1 if present (*off at it), 0 if absent (*off
 * where it would go), the path held either way; or a negative errno. */
int dir_find(struct dctx *dc, const char *name, size_t len, struct dpath *p,
	     uint32_t *off);
/* Name checks plus the directory's context; 1 if the directory has blocks. */
int dir_begin(struct dctx *dc, struct ordfs *fs, struct inode *dir, const char *name,
	      size_t len);

/* ---- adding entries that need new blocks (dir_grow.c) --------------------- */

/* First entry of a directory without blocks: block 0 becomes a leaf. */
int dir_add_first(struct dctx *dc, struct handle *h, const struct dir_entry *e);
/* The leaf has no room for e (to go at off): split the leaf (and full index
 * nodes above it, and the root if it is full) and insert e. */
int dir_add_split(struct dctx *dc, struct handle *h, struct dpath *p,
		  const struct dir_entry *e, uint32_t off);

#endif
