/*
 * extent.c - per-inode extent trees (see extent.h).
 *
 * Owns: the extent tree of one inode, logical block -> physical block.
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
 * Rules kept here:
 *  E1 Keys are exact: an index record's key is the logical block of the
 *     first record under it, and only the root (as a leaf) may be empty.
 *     So the records under index record i lie in [key i, key i+1), lookups
 *     descend by "last key <= target", and the first mapped block after a
 *     leaf is the next key up the path.  Code that changes a node's first
 *     record fixes the keys above it (keys_fix).
 *  E2 Every node is verified whenever it is read, the root included: magic,
 *     max_entries, entries, depth consistent with the parent, records sorted
 *     and non-overlapping, inside the parent's key range, lengths and flags
 *     valid, blocks inside the data area; tree blocks also by block header
 *     (type, blockno, owner == inode) and by checksum when they come from
 *     the device.  Anything wrong is -EUCLEAN and nothing is changed.
 *     A block already cached is not checksummed again: the journal sets
 *     checksums in its commit copies, so a block changed in memory carries
 *     a stale one (DESIGN.md, "copy at commit").  So a block that failed
 *     its checksum is refused on that read but, while it stays cached, only
 *     its structure is checked (fsck reads every block fresh).
 *     Lookups, the hot path, check a cached node's headers and only the
 *     records they use (every cached node was fully checked when read);
 *     walks and changes check every node in full.
 *  E3 Walks terminate: depth strictly decreases downward and is at most
 *     EXTENT_MAX_DEPTH, and a block reached twice fails the key-range check
 *     on one of its paths (the ranges of distinct subtrees are disjoint).
 *  E4 Changes run in two phases: first everything that can fail (reading the
 *     path, allocating blocks, journal_get_write_access, freeing blocks),
 *     then the edit of the nodes in memory, which cannot fail.
 *  E5 extent_remove frees at most one bitmap block's worth of data blocks
 *     per record change, so extent_credits() holds for records of any
 *     length; a longer record is trimmed over several changes.
 *  E6 inode->d.blocks = mapped data blocks + tree blocks.
 *  E7 Mapped blocks of a regular file are data and are freed plainly; those
 *     of directories and symlinks are metadata blocks the log may hold, so
 *     they are freed with ALLOC_METADATA (journal_forget, revoke [J6]).
 *  E8 extent_set_flags changes flags only (never a block's mapping): it
 *     splits a record at the range edges (costing two record changes: the
 *     split may split every level), moves the boundary to a joining
 *     neighbour instead when it can, and merges within a leaf, so a leaf
 *     never empties and no key above it changes.
 *
 * Tree blocks are metadata: alloc_blocks() / alloc_free_blocks(ALLOC_METADATA)
 * and journal_get_write_access(JWA_CSUM_HDR) before any change.  Callers hold
 * inode->lock (shared for lookups and walks); nothing here takes a lock.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "extent.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../alloc/alloc.h"
#include "../cache/bcache.h"
#include "../journal/journal.h"

#define EXTENT_MAX_DEPTH 16u
#define NODE_OFF ORDFS_BLOCK_HDR_SIZE /* node header inside a tree block */
#define REC ORDFS_EXTENT_REC
#define ROOT_CAP ORDFS_INODE_ROOT_EXTENTS
#define NO_NEXT UINT64_MAX /* no mapped block follows (never a record start) */

/* ---- node layout ---------------------------------------------------------- */

static uint8_t *rec_at(uint8_t *node, unsigned i)
{
	return node + ORDFS_EXTENT_NODE_HDR + (size_t)i * REC;
}

static const uint8_t *crec_at(const uint8_t *node, unsigned i)
{
	return node + ORDFS_EXTENT_NODE_HDR + (size_t)i * REC;
}

static unsigned node_entries(const uint8_t *node)
{
	return le_get16(node + 2);
}

static unsigned node_depth(const uint8_t *node)
{
	return le_get16(node + 6);
}

static void node_set_entries(uint8_t *node, unsigned n)
{
	le_put16(node + 2, (uint16_t)n);
}

static void node_init(uint8_t *node, unsigned cap, unsigned depth)
{
	le_put16(node + 0, ORDFS_EXTENT_MAGIC);
	le_put16(node + 2, 0);
	le_put16(node + 4, (uint16_t)cap);
	le_put16(node + 6, (uint16_t)depth);
}

/* The first field of both record kinds: logical block / first logical. */
static uint64_t rec_key(const uint8_t *rec)
{
	return le_get64(rec);
}

static uint64_t idx_child(const uint8_t *rec)
{
	return le_get64(rec + 8);
}

static void idx_put(uint8_t *rec, uint64_t key, uint64_t child)
{
	le_put64(rec + 0, key);
	le_put64(rec + 8, child);
	le_put64(rec + 16, 0);
}

static void ext_get(const uint8_t *rec, struct ordfs_extent *e)
{
	e->logical = le_get64(rec + 0);
	e->physical = le_get64(rec + 8);
	e->len = le_get32(rec + 16);
	e->flags = le_get32(rec + 20);
}

static void ext_put(uint8_t *rec, const struct ordfs_extent *e)
{
	le_put64(rec + 0, e->logical);
	le_put64(rec + 8, e->physical);
	le_put32(rec + 16, e->len);
	le_put32(rec + 20, e->flags);
}

static uint64_t ext_end(const struct ordfs_extent *e)
{
	return e->logical + e->len;
}

static unsigned block_cap(const struct ordfs *fs)
{
	return (fs->block_size - NODE_OFF - ORDFS_EXTENT_NODE_HDR) / REC;
}

static void recs_insert(uint8_t *node, unsigned pos, const uint8_t *rec)
{
	unsigned n = node_entries(node);
	memmove(rec_at(node, pos + 1), rec_at(node, pos), (size_t)(n - pos) * REC);
	memcpy(rec_at(node, pos), rec, REC);
	node_set_entries(node, n + 1);
}

static void recs_delete(uint8_t *node, unsigned pos)
{
	unsigned n = node_entries(node);
	memmove(rec_at(node, pos), rec_at(node, pos + 1), (size_t)(n - pos - 1) * REC);
	memset(rec_at(node, n - 1), 0, REC);
	node_set_entries(node, n - 1);
}

/* Inserts rec at pos into the full node `left` (cap records) and moves the
 * upper part into the empty node `right`.  Appending at the end moves only
 * the new record, so sequential growth leaves full nodes behind. */
static void node_split_insert(uint8_t *left, uint8_t *right, unsigned cap, unsigned pos,
			      const uint8_t *rec)
{
	unsigned keep = pos == cap ? cap : (cap + 1) / 2; /* records left keeps */
	unsigned moved;

	if (pos < keep) {
		moved = cap - (keep - 1);
		memcpy(rec_at(right, 0), rec_at(left, keep - 1), (size_t)moved * REC);
		memmove(rec_at(left, pos + 1), rec_at(left, pos), (size_t)(keep - 1 - pos) * REC);
		memcpy(rec_at(left, pos), rec, REC);
	} else {
		unsigned before = pos - keep, after = cap - pos;
		memcpy(rec_at(right, 0), rec_at(left, keep), (size_t)before * REC);
		memcpy(rec_at(right, before), rec, REC);
		memcpy(rec_at(right, before + 1), rec_at(left, pos), (size_t)after * REC);
		moved = before + 1 + after;
	}
	memset(rec_at(left, keep), 0, (size_t)(cap - keep) * REC);
	node_set_entries(left, keep);
	node_set_entries(right, moved);
}

/* ---- verification [E2] ------------------------------------------------------ */

static bool in_data_area(const struct ordfs *fs, uint64_t start, uint64_t len)
{
	uint64_t end = fs->sb.block_count - 1; /* the backup superblock */
	return start >= fs->sb.data_start && start < end && len <= end - start;
}

static bool extent_fields_valid(const struct ordfs *fs, const struct ordfs_extent *e)
{
	return e->len >= 1 && e->len <= ORDFS_EXT_MAX_LEN &&
	       !(e->flags & ~ORDFS_EXT_UNWRITTEN) && e->logical <= UINT64_MAX - e->len &&
	       in_data_area(fs, e->physical, e->len);
}

/* Leaf records lie in [lo, hi), sorted, not overlapping; a non-root leaf
 * starts exactly at lo [E1]. */
static int leaf_check(const struct ordfs *fs, const uint8_t *node, bool exact_lo,
		      uint64_t lo, uint64_t hi)
{
	uint64_t free_from = lo;
	for (unsigned i = 0; i < node_entries(node); i++) {
		struct ordfs_extent e;
		ext_get(crec_at(node, i), &e);
		if (!extent_fields_valid(fs, &e) || e.logical < free_from || ext_end(&e) > hi)
			return -EUCLEAN;
		if (i == 0 && exact_lo && e.logical != lo)
			return -EUCLEAN;
		free_from = ext_end(&e);
	}
	return 0;
}

static int index_check(const struct ordfs *fs, const uint8_t *node, bool exact_lo,
		       uint64_t lo, uint64_t hi)
{
	uint64_t prev = 0;
	for (unsigned i = 0; i < node_entries(node); i++) {
		const uint8_t *r = crec_at(node, i);
		uint64_t key = rec_key(r);
		if (le_get64(r + 16) != 0 || key >= hi || !in_data_area(fs, idx_child(r), 1))
			return -EUCLEAN;
		if (i == 0 ? key < lo || (exact_lo && key != lo) : key <= prev)
			return -EUCLEAN;
		prev = key;
	}
	return 0;
}

/* The node header of a node holding cap records.  The root's depth is read
 * from it; any other node's must be want_depth. */
static int node_header_check(const uint8_t *node, unsigned cap, bool is_root,
			     unsigned want_depth)
{
	unsigned n = node_entries(node), depth = node_depth(node);

	if (le_get16(node) != ORDFS_EXTENT_MAGIC || le_get16(node + 4) != cap || n > cap)
		return -EUCLEAN;
	if (is_root ? depth > EXTENT_MAX_DEPTH : depth != want_depth)
		return -EUCLEAN;
	if (n == 0 && (!is_root || depth > 0))
		return -EUCLEAN;
	return 0;
}

/* The whole node: header and every record, which must lie in [lo, hi). */
static int node_check(const struct ordfs *fs, const uint8_t *node, unsigned cap, bool is_root,
		      unsigned want_depth, uint64_t lo, uint64_t hi)
{
	int err = node_header_check(node, cap, is_root, want_depth);
	if (err)
		return err;
	if (node_depth(node) == 0)
		return leaf_check(fs, node, !is_root, lo, hi);
	return index_check(fs, node, !is_root, lo, hi);
}

static int root_check(const struct ordfs *fs, const struct inode *inode)
{
	return node_check(fs, inode->d.data, ROOT_CAP, true, 0, 0, UINT64_MAX);
}

/* Block header: checksum only for a block fresh from the device [E2]. */
static int block_header_check(const struct ordfs *fs, const struct inode *inode,
			      const uint8_t *blk, uint64_t blockno, bool fresh)
{
	if (fresh) {
		if (ordfs_block_verify(blk, fs->block_size, fs->csum_seed, ORDFS_BT_EXTENT,
				       blockno))
			return -EUCLEAN;
	} else if (le_get32(blk) != ORDFS_BLOCK_MAGIC || le_get16(blk + 4) != ORDFS_BT_EXTENT ||
		   le_get64(blk + 16) != blockno) {
		return -EUCLEAN;
	}
	return ordfs_block_owner(blk) == inode->ino ? 0 : -EUCLEAN;
}

/* Returns tree block blockno, verified as a node of on-disk depth `depth`
 * whose records lie in [lo, hi): in full if it comes from the device or
 * `full` is set, else its headers only [E2]. */
static int tree_block_read(struct ordfs *fs, const struct inode *inode, uint64_t blockno,
			   unsigned depth, uint64_t lo, uint64_t hi, bool full,
			   struct buf **out)
{
	if (!in_data_area(fs, blockno, 1))
		return -EUCLEAN;
	struct buf *b = bcache_peek(fs->cache, blockno);
	bool fresh = b == NULL;
	if (fresh) {
		int err = bcache_read(fs->cache, blockno, &b);
		if (err)
			return err;
	}
	int err = block_header_check(fs, inode, b->data, blockno, fresh);
	if (!err && (fresh || full))
		err = node_check(fs, b->data + NODE_OFF, block_cap(fs), false, depth, lo, hi);
	else if (!err)
		err = node_header_check(b->data + NODE_OFF, block_cap(fs), false, depth);
	if (err) {
		bcache_put(fs->cache, b);
		return err;
	}
	*out = b;
	return 0;
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

/* lv[0] is the root, lv[depth] the leaf.  One spare level for root_grow. */
struct path {
	unsigned depth;
	struct path_level lv[EXTENT_MAX_DEPTH + 2];
};

static void path_release(struct ordfs *fs, struct path *p)
{
	for (unsigned l = 1; l <= p->depth; l++) {
		if (p->lv[l].b)
			bcache_put(fs->cache, p->lv[l].b);
		p->lv[l].b = NULL;
	}
	p->depth = 0;
}

/* Last record whose key is <= target, or -1.  Records are verified sorted. */
static int node_search(const uint8_t *node, uint64_t target)
{
	int lo = 0, hi = (int)node_entries(node) - 1, found = -1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (rec_key(crec_at(node, (unsigned)mid)) <= target) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

/* Reads and verifies the path from the root to the leaf that covers
 * target; p holds references until path_release().  Without `full`, cached
 * nodes get the lookup's light check [E2]. */
static int path_find(struct ordfs *fs, struct inode *inode, uint64_t target, bool full,
		     struct path *p)
{
	int err = root_check(fs, inode);
	if (err)
		return err;
	p->depth = node_depth(inode->d.data);
	p->lv[0] = (struct path_level){ inode->d.data, NULL, 0, ROOT_CAP, 0, UINT64_MAX, -1 };

	for (unsigned l = 0; l < p->depth; l++) {
		struct path_level *lv = &p->lv[l];
		int i = node_search(lv->node, target);
		lv->idx = i < 0 ? 0 : i; /* before every key: the leftmost child */
		const uint8_t *r = crec_at(lv->node, (unsigned)lv->idx);
		uint64_t lo = rec_key(r), hi = lv->hi;
		if ((unsigned)lv->idx + 1 < node_entries(lv->node))
			hi = rec_key(crec_at(lv->node, (unsigned)lv->idx + 1));

		struct buf *b;
		err = tree_block_read(fs, inode, idx_child(r), p->depth - l - 1, lo, hi, full, &b);
		if (!err && (lo < lv->lo || lo >= hi)) { /* light check: the key used */
			bcache_put(fs->cache, b);
			err = -EUCLEAN;
		}
		if (err) {
			p->depth = l;
			path_release(fs, p);
			return err;
		}
		p->lv[l + 1] = (struct path_level){ b->data + NODE_OFF, b, idx_child(r),
						    block_cap(fs), lo, hi, -1 };
	}
	p->lv[p->depth].idx = node_search(p->lv[p->depth].node, target);
	return 0;
}

/* The first key after the path's leaf, found up the path [E1], or NO_NEXT. */
static uint64_t path_next_key(const struct path *p)
{
	for (unsigned l = p->depth; l-- > 0;) {
		const struct path_level *lv = &p->lv[l];
		if ((unsigned)lv->idx + 1 < node_entries(lv->node))
			return rec_key(crec_at(lv->node, (unsigned)lv->idx + 1));
	}
	return NO_NEXT;
}

/* The first mapped block after the leaf record at idx, or NO_NEXT. */
static uint64_t path_next_mapped(const struct path *p)
{
	const struct path_level *leaf = &p->lv[p->depth];
	unsigned next = (unsigned)(leaf->idx + 1);
	if (next < node_entries(leaf->node))
		return rec_key(crec_at(leaf->node, next));
	return path_next_key(p);
}

/* The leaf record at the path's idx (idx >= 0). */
static void path_leaf_extent(const struct path *p, struct ordfs_extent *e)
{
	const struct path_level *leaf = &p->lv[p->depth];
	ext_get(crec_at(leaf->node, (unsigned)leaf->idx), e);
}

/* Gets write access to the tree blocks at levels [from, to]; level 0 is the
 * inode, written by inode_write(). */
static int path_access(struct handle *h, const struct path *p, unsigned from, unsigned to)
{
	for (unsigned l = from ? from : 1; l <= to; l++) {
		int err = journal_get_write_access(h, p->lv[l].b, JWA_CSUM_HDR);
		if (err)
			return err;
	}
	return 0;
}

/* When the first key of the node at `level` changes, the keys above it
 * change up to the first level where the path is not at index 0. */
static unsigned keys_top(const struct path *p, unsigned level)
{
	unsigned l = level;
	while (l > 0) {
		l--;
		if (p->lv[l].idx != 0)
			break;
	}
	return l;
}

static int keys_access(struct handle *h, const struct path *p, unsigned level)
{
	if (level == 0)
		return 0;
	return path_access(h, p, keys_top(p, level), level - 1);
}

/* The node at `level` now starts at key: fix the keys above it [E1]. */
static void keys_fix(struct path *p, unsigned level, uint64_t key)
{
	while (level > 0) {
		struct path_level *lv = &p->lv[--level];
		le_put64(rec_at(lv->node, (unsigned)lv->idx), key);
		if (lv->idx != 0)
			break;
	}
}

/* Frees mapped blocks [E7].  Every freed block is forgotten by the
 * journal and revoked if the live log holds a copy [J6]: directories and
 * symlinks go through the log, and so may file data (data=journal, and
 * small fsync'd runs in data=ordered, writeback/).  A block never logged has
 * no cached buffer, so forgetting it costs one cache lookup. */
static int free_mapped(struct ordfs *fs, struct handle *h, uint64_t start, uint32_t len)
{
	return alloc_free_blocks(fs->alloc, h, start, len, ALLOC_METADATA);
}

static void blocks_sub(struct inode *inode, uint64_t n)
{
	inode->d.blocks = inode->d.blocks >= n ? inode->d.blocks - n : 0;
}

/* ---- adding a record: splits and root growth -------------------------------- */

/* New tree blocks one record addition needs, allocated and journaled before
 * any node changes [E4]. */
struct split_plan {
	unsigned nblocks, used;
	bool grow; /* the root moves into the first block and gains a level */
	uint64_t blockno[EXTENT_MAX_DEPTH + 1];
	struct buf *b[EXTENT_MAX_DEPTH + 1];
};

/* Where the tree's new blocks should go: next to its deepest block, or
 * next to its data while it has no blocks. */
static uint64_t tree_goal(const struct path *p)
{
	if (p->depth > 0)
		return p->lv[p->depth].blockno;
	if (node_entries(p->lv[0].node) > 0)
		return le_get64(crec_at(p->lv[0].node, 0) + 8);
	return 0;
}

static void plan_cancel(struct ordfs *fs, struct handle *h, struct split_plan *plan)
{
	for (unsigned i = plan->used; i < plan->nblocks; i++) {
		(void)alloc_free_blocks(fs->alloc, h, plan->blockno[i], 1, ALLOC_METADATA);
		bcache_put(fs->cache, plan->b[i]);
	}
	plan->nblocks = plan->used = 0;
}

static int plan_alloc_block(struct ordfs *fs, struct handle *h, uint64_t goal,
			    struct split_plan *plan)
{
	uint64_t blockno;
	uint32_t got;
	struct buf *b;
	int err = alloc_blocks(fs->alloc, h, goal, 1, 0, &blockno, &got);
	if (err)
		return err;
	err = bcache_get_new(fs->cache, blockno, &b);
	if (err)
		goto free_block;
	err = journal_get_write_access(h, b, JWA_CSUM_HDR);
	if (err)
		goto put;
	plan->blockno[plan->nblocks] = blockno;
	plan->b[plan->nblocks++] = b;
	return 0;
put:
	bcache_put(fs->cache, b);
free_block:
	(void)alloc_free_blocks(fs->alloc, h, blockno, 1, ALLOC_METADATA);
	return err;
}

static struct buf *plan_take(struct split_plan *plan, uint64_t *blockno)
{
	*blockno = plan->blockno[plan->used];
	return plan->b[plan->used++];
}

/* Prepares adding one record to the path's leaf: the full levels from the
 * leaf up are split, each into a new block; if the root is full too, it
 * grows (one more block).  Gets write access to every node that changes. */
static int split_prepare(struct ordfs *fs, struct handle *h, struct path *p,
			 struct split_plan *plan)
{
	int recv = (int)p->depth; /* the level that takes a record without splitting */
	while (recv >= 0 && node_entries(p->lv[recv].node) >= p->lv[recv].cap)
		recv--;

	memset(plan, 0, sizeof(*plan));
	plan->grow = recv < 0;
	if (plan->grow && p->depth >= EXTENT_MAX_DEPTH)
		return -EFBIG;
	int err = path_access(h, p, recv < 0 ? 1 : (unsigned)recv, p->depth);
	unsigned need = (unsigned)((int)p->depth - recv);
	uint64_t goal = tree_goal(p);
	for (unsigned i = 0; i < need && !err; i++)
		err = plan_alloc_block(fs, h, goal, plan);
	if (err)
		plan_cancel(fs, h, plan);
	return err;
}

/* Moves the root's records into a new block one level down; the root becomes
 * an index node with one record and the path gains a level. */
static void root_grow(struct ordfs *fs, struct inode *inode, struct path *p,
		      struct split_plan *plan)
{
	uint64_t blockno;
	struct buf *b = plan_take(plan, &blockno);
	uint8_t *root = inode->d.data, *child = b->data + NODE_OFF;
	unsigned n = node_entries(root), depth = node_depth(root);

	ordfs_block_hdr_init(b->data, ORDFS_BT_EXTENT, inode->ino, blockno);
	node_init(child, block_cap(fs), depth);
	memcpy(rec_at(child, 0), rec_at(root, 0), (size_t)n * REC);
	node_set_entries(child, n);

	memset(root, 0, ORDFS_INODE_DATA_LEN);
	node_init(root, ROOT_CAP, depth + 1);
	idx_put(rec_at(root, 0), rec_key(rec_at(child, 0)), blockno);
	node_set_entries(root, 1);

	memmove(&p->lv[2], &p->lv[1], p->depth * sizeof(p->lv[0]));
	p->lv[1] = (struct path_level){ child, b, blockno, block_cap(fs), 0, UINT64_MAX,
					p->lv[0].idx };
	p->lv[0].idx = 0;
	p->depth++;
}

/* Adds rec at pos of the node at `level`, splitting full nodes upward with
 * the plan's blocks.  Cannot fail: split_prepare() counted the blocks and the
 * root has room (it grew first if it was full). */
static void path_add_record(struct ordfs *fs, struct inode *inode, struct path *p,
			    struct split_plan *plan, unsigned level, unsigned pos,
			    const uint8_t *rec)
{
	uint8_t up[REC];
	for (;;) {
		struct path_level *lv = &p->lv[level];
		if (node_entries(lv->node) < lv->cap) {
			recs_insert(lv->node, pos, rec);
			return;
		}
		uint64_t blockno;
		struct buf *b = plan_take(plan, &blockno);
		uint8_t *right = b->data + NODE_OFF;
		ordfs_block_hdr_init(b->data, ORDFS_BT_EXTENT, inode->ino, blockno);
		node_init(right, lv->cap, node_depth(lv->node));
		node_split_insert(lv->node, right, lv->cap, pos, rec);
		idx_put(up, rec_key(rec_at(right, 0)), blockno);
		bcache_put(fs->cache, b);
		rec = up;
		pos = (unsigned)p->lv[level - 1].idx + 1;
		level--;
	}
}

/* Adds leaf record e at position pos of the path's leaf (e is a hole).  Adds
 * the new tree blocks to inode->d.blocks. */
static int leaf_add(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
		    unsigned pos, const struct ordfs_extent *e)
{
	struct split_plan plan;
	int err = split_prepare(fs, h, p, &plan);
	if (err)
		return err;
	if (pos == 0)
		err = keys_access(h, p, p->depth);
	if (err) {
		plan_cancel(fs, h, &plan);
		return err;
	}

	uint8_t rec[REC];
	ext_put(rec, e);
	if (plan.grow)
		root_grow(fs, inode, p, &plan);
	if (pos == 0) /* a new first record: every key on the path is at index 0 */
		keys_fix(p, p->depth, e->logical);
	path_add_record(fs, inode, p, &plan, p->depth, pos, rec);
	inode->d.blocks += plan.nblocks;
	return 0;
}

/* ---- insert ---------------------------------------------------------------- */

/* a is followed by b, logically and on disk, and one record can hold both. */
static bool extents_join(const struct ordfs_extent *a, const struct ordfs_extent *b)
{
	return ext_end(a) == b->logical && a->physical + a->len == b->physical &&
	       a->flags == b->flags && (uint64_t)a->len + b->len <= ORDFS_EXT_MAX_LEN;
}

static int check_hole(const struct path *p, const struct ordfs_extent *e)
{
	if (p->lv[p->depth].idx >= 0) {
		struct ordfs_extent prev;
		path_leaf_extent(p, &prev);
		if (ext_end(&prev) > e->logical)
			return -EEXIST;
	}
	uint64_t next = path_next_mapped(p);
	return next != NO_NEXT && next < ext_end(e) ? -EEXIST : 0;
}

/* Merges e into its neighbours in the path's leaf.  1 if merged, 0 if not. */
static int merge_in_leaf(struct handle *h, struct path *p, const struct ordfs_extent *e)
{
	struct path_level *leaf = &p->lv[p->depth];
	int i = leaf->idx;
	struct ordfs_extent left = { 0 }, right = { 0 };
	bool join_left = false, join_right = false;

	if (i >= 0) {
		ext_get(rec_at(leaf->node, (unsigned)i), &left);
		join_left = extents_join(&left, e);
	}
	if ((unsigned)(i + 1) < node_entries(leaf->node)) {
		ext_get(rec_at(leaf->node, (unsigned)(i + 1)), &right);
		join_right = extents_join(e, &right);
	}
	if (!join_left && !join_right)
		return 0;

	int err = path_access(h, p, p->depth, p->depth);
	if (!err && !join_left && i + 1 == 0)
		err = keys_access(h, p, p->depth);
	if (err)
		return err;
	if (join_left) {
		left.len += e->len;
		if (join_right && (uint64_t)left.len + right.len <= ORDFS_EXT_MAX_LEN) {
			left.len += right.len;
			recs_delete(leaf->node, (unsigned)(i + 1));
		}
		ext_put(rec_at(leaf->node, (unsigned)i), &left);
	} else {
		right.logical = e->logical;
		right.physical = e->physical;
		right.len += e->len;
		ext_put(rec_at(leaf->node, (unsigned)(i + 1)), &right);
		if (i + 1 == 0)
			keys_fix(p, p->depth, e->logical);
	}
	return 1;
}

/* e ends where the next leaf begins: merges it into that leaf's first
 * record if they join.  1 if merged, 0 if not. */
static int merge_into_next_leaf(struct ordfs *fs, struct handle *h, struct inode *inode,
				const struct path *p, const struct ordfs_extent *e)
{
	const struct path_level *leaf = &p->lv[p->depth];
	if (p->depth == 0 || (unsigned)(leaf->idx + 1) < node_entries(leaf->node) ||
	    path_next_key(p) != ext_end(e))
		return 0;

	struct path q;
	int err = path_find(fs, inode, ext_end(e), true, &q);
	if (err)
		return err;
	struct ordfs_extent right;
	int merged = 0;
	if (q.lv[q.depth].idx == 0) {
		path_leaf_extent(&q, &right);
		merged = extents_join(e, &right);
	}
	if (merged) {
		err = path_access(h, &q, q.depth, q.depth);
		if (!err)
			err = keys_access(h, &q, q.depth);
	}
	if (merged && !err) {
		right.logical = e->logical;
		right.physical = e->physical;
		right.len += e->len;
		ext_put(rec_at(q.lv[q.depth].node, 0), &right);
		keys_fix(&q, q.depth, e->logical);
	}
	path_release(fs, &q);
	return err ? err : merged;
}

int extent_insert(struct ordfs *fs, struct handle *h, struct inode *inode,
		  const struct ordfs_extent *e)
{
	if (!extent_fields_valid(fs, e))
		return -EINVAL;
	struct path p;
	int err = path_find(fs, inode, e->logical, true, &p);
	if (err)
		return err;
	err = check_hole(&p, e);
	int merged = 0;
	if (!err)
		merged = merge_in_leaf(h, &p, e);
	if (merged == 0 && !err)
		merged = merge_into_next_leaf(fs, h, inode, &p, e);
	if (merged < 0)
		err = merged;
	else if (merged == 0 && !err)
		err = leaf_add(fs, h, inode, &p, (unsigned)(p.lv[p.depth].idx + 1), e);
	path_release(fs, &p);
	if (err)
		return err;
	inode->d.blocks += e->len;
	return inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
}

/* ---- lookup ---------------------------------------------------------------- */

/* The lookup's light check of the leaf records it uses [E2]. */
static bool leaf_record_sane(const struct ordfs *fs, const struct path *p,
			     const struct ordfs_extent *e)
{
	const struct path_level *leaf = &p->lv[p->depth];
	return extent_fields_valid(fs, e) && e->logical >= leaf->lo && ext_end(e) <= leaf->hi;
}

int extent_lookup(struct ordfs *fs, struct inode *inode, uint64_t lblk,
		  struct ordfs_extent *ext)
{
	struct path p;
	int err = path_find(fs, inode, lblk, false, &p);
	if (err)
		return err;
	int found = 0;
	if (p.lv[p.depth].idx >= 0) {
		path_leaf_extent(&p, ext);
		if (!leaf_record_sane(fs, &p, ext))
			found = -EUCLEAN;
		else
			found = lblk - ext->logical < ext->len;
	}
	if (found == 0) {
		uint64_t next = path_next_mapped(&p);
		uint64_t gap = next == NO_NEXT ? UINT64_MAX - lblk : next - lblk;
		if (next <= lblk)
			found = -EUCLEAN;
		if (gap > ORDFS_EXT_MAX_LEN)
			gap = ORDFS_EXT_MAX_LEN;
		*ext = (struct ordfs_extent){ lblk, 0, gap ? (uint32_t)gap : 1, 0 };
	}
	path_release(fs, &p);
	return found;
}

/* ---- remove ---------------------------------------------------------------- */

/* The part of leaf record r that one step unmaps: [lo, hi) [E5]. */
struct cut {
	struct ordfs_extent r;
	uint64_t lo, hi;
};

static uint64_t cut_physical(const struct cut *c)
{
	return c->r.physical + (c->lo - c->r.logical);
}

static uint32_t cut_len(const struct cut *c)
{
	return (uint32_t)(c->hi - c->lo);
}

/* The whole record goes: delete it, and free the nodes that become empty. */
static int cut_whole(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
		     const struct cut *c)
{
	unsigned depth = p->depth, u = depth; /* u: the level that keeps records */
	while (u > 0 && node_entries(p->lv[u].node) == 1)
		u--;
	unsigned pos = u == depth ? (unsigned)p->lv[depth].idx : (unsigned)p->lv[u].idx;
	bool tree_empties = u == 0 && depth > 0 && node_entries(p->lv[0].node) == 1;
	bool first_moves = !tree_empties && pos == 0 && node_entries(p->lv[u].node) > 1;

	int err = path_access(h, p, u, u);
	if (!err && first_moves)
		err = keys_access(h, p, u);
	if (!err)
		err = free_mapped(fs, h, cut_physical(c), cut_len(c));
	for (unsigned l = depth; l > u && !err; l--)
		err = alloc_free_blocks(fs->alloc, h, p->lv[l].blockno, 1, ALLOC_METADATA);
	if (err)
		return err;

	if (tree_empties) {
		extent_tree_init(inode);
	} else {
		recs_delete(p->lv[u].node, pos);
		if (first_moves)
			keys_fix(p, u, rec_key(rec_at(p->lv[u].node, 0)));
	}
	blocks_sub(inode, (uint64_t)cut_len(c) + (depth - u));
	return 0;
}

/* The head or the tail of the record stays. */
static int cut_edge(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
		    const struct cut *c)
{
	unsigned depth = p->depth;
	bool head_stays = c->lo > c->r.logical;
	bool first_moves = !head_stays && p->lv[depth].idx == 0;

	int err = path_access(h, p, depth, depth);
	if (!err && first_moves)
		err = keys_access(h, p, depth);
	if (!err)
		err = free_mapped(fs, h, cut_physical(c), cut_len(c));
	if (err)
		return err;

	struct ordfs_extent r = c->r;
	if (head_stays) {
		r.len = (uint32_t)(c->lo - r.logical);
	} else {
		r.physical += c->hi - r.logical;
		r.len = (uint32_t)(ext_end(&r) - c->hi);
		r.logical = c->hi;
	}
	ext_put(rec_at(p->lv[depth].node, (unsigned)p->lv[depth].idx), &r);
	if (first_moves)
		keys_fix(p, depth, r.logical);
	blocks_sub(inode, cut_len(c));
	return 0;
}

/* Both ends stay: the record becomes two, which may split nodes. */
static int cut_middle(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
		      const struct cut *c)
{
	struct split_plan plan;
	int err = split_prepare(fs, h, p, &plan);
	if (err)
		return err;
	err = free_mapped(fs, h, cut_physical(c), cut_len(c));
	if (err) {
		plan_cancel(fs, h, &plan);
		return err;
	}

	struct ordfs_extent head = c->r, tail = c->r;
	head.len = (uint32_t)(c->lo - head.logical);
	tail.logical = c->hi;
	tail.physical += c->hi - c->r.logical;
	tail.len = (uint32_t)(ext_end(&c->r) - c->hi);
	unsigned pos = (unsigned)p->lv[p->depth].idx;
	ext_put(rec_at(p->lv[p->depth].node, pos), &head);

	uint8_t rec[REC];
	ext_put(rec, &tail);
	if (plan.grow)
		root_grow(fs, inode, p, &plan);
	path_add_record(fs, inode, p, &plan, p->depth, pos + 1, rec);
	inode->d.blocks += plan.nblocks;
	blocks_sub(inode, cut_len(c));
	return 0;
}

/* Finds the last mapped record overlapping [lblk, end), if any. */
static int find_last_in_range(struct ordfs *fs, struct inode *inode, uint64_t lblk,
			      uint64_t end, struct path *p, struct ordfs_extent *r)
{
	int err = path_find(fs, inode, end - 1, true, p);
	if (err)
		return err;
	if (p->lv[p->depth].idx >= 0) {
		path_leaf_extent(p, r);
		if (ext_end(r) > lblk)
			return 1;
	}
	path_release(fs, p);
	return 0;
}

/* Unmaps the tail end of the last mapped record in [lblk, end): at most one
 * bitmap block's worth of blocks [E5].  1 after a change, 0 if the range is
 * a hole, or a negative errno. */
static int remove_step(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lblk,
		       uint64_t end)
{
	struct path p;
	struct cut c = { 0 }; /* c.r is set when found == 1; gcc -O2 cannot tell */
	int found = find_last_in_range(fs, inode, lblk, end, &p, &c.r);
	if (found <= 0)
		return found;

	uint64_t chunk = ordfs_bits_per_bitmap_block(fs->block_size);
	c.hi = ext_end(&c.r) < end ? ext_end(&c.r) : end;
	c.lo = c.r.logical > lblk ? c.r.logical : lblk;
	if (c.hi - c.lo > chunk)
		c.lo = c.hi - chunk;
	bool head_stays = c.lo > c.r.logical, tail_stays = c.hi < ext_end(&c.r);

	int err;
	if (head_stays && tail_stays)
		err = cut_middle(fs, h, inode, &p, &c);
	else if (head_stays || tail_stays)
		err = cut_edge(fs, h, inode, &p, &c);
	else
		err = cut_whole(fs, h, inode, &p, &c);
	path_release(fs, &p);
	return err ? err : 1;
}

/* While the root has a single child small enough, pulls the child's records
 * into the root and frees the child. */
static int tree_shrink(struct ordfs *fs, struct handle *h, struct inode *inode)
{
	uint8_t *root = inode->d.data;
	while (node_depth(root) > 0 && node_entries(root) == 1) {
		const uint8_t *r = rec_at(root, 0);
		uint64_t blockno = idx_child(r);
		struct buf *b;
		int err = tree_block_read(fs, inode, blockno, node_depth(root) - 1, rec_key(r),
					  UINT64_MAX, true, &b);
		if (err)
			return err;
		const uint8_t *child = b->data + NODE_OFF;
		unsigned n = node_entries(child), depth = node_depth(child);
		if (n <= ROOT_CAP)
			err = alloc_free_blocks(fs->alloc, h, blockno, 1, ALLOC_METADATA);
		if (n <= ROOT_CAP && !err) {
			memset(root, 0, ORDFS_INODE_DATA_LEN);
			node_init(root, ROOT_CAP, depth);
			memcpy(rec_at(root, 0), crec_at(child, 0), (size_t)n * REC);
			node_set_entries(root, n);
			blocks_sub(inode, 1);
		}
		bcache_put(fs->cache, b);
		if (err || n > ROOT_CAP)
			return err;
	}
	return 0;
}

int extent_remove(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lblk,
		  uint64_t count, uint32_t max_records)
{
	uint64_t end = count > UINT64_MAX - lblk ? UINT64_MAX : lblk + count;
	uint32_t budget = max_records ? max_records : 1;
	bool changed = false;
	int ret = end > lblk;

	for (uint32_t done = 0; done < budget && ret == 1; done++) {
		ret = remove_step(fs, h, inode, lblk, end);
		if (ret == 1) {
			changed = true;
			int err = tree_shrink(fs, h, inode);
			if (err)
				ret = err;
		}
	}
	if (ret == 1) {
		struct path p;
		struct ordfs_extent r;
		ret = find_last_in_range(fs, inode, lblk, end, &p, &r);
		if (ret == 1)
			path_release(fs, &p);
	}
	if (changed) {
		int err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
		if (err && ret >= 0)
			ret = err;
	}
	return ret;
}

/* ---- flags ------------------------------------------------------------------ */

/* Finds the first leaf record overlapping [lo, end) whose flags are not
 * `flags`; 1 with the path's leaf idx on it, 0 if there is none. */
static int find_to_change(struct ordfs *fs, struct inode *inode, uint64_t lo, uint64_t end,
			  uint32_t flags, struct path *p, struct ordfs_extent *r)
{
	uint64_t pos = lo;
	while (pos < end) {
		int err = path_find(fs, inode, pos, true, p);
		if (err)
			return err;
		struct path_level *leaf = &p->lv[p->depth];
		for (int i = leaf->idx < 0 ? 0 : leaf->idx; (unsigned)i < node_entries(leaf->node);
		     i++) {
			ext_get(rec_at(leaf->node, (unsigned)i), r);
			if (ext_end(r) <= pos)
				continue;
			if (r->logical >= end) {
				path_release(fs, p);
				return 0;
			}
			if (r->flags != flags) {
				leaf->idx = i;
				return 1;
			}
		}
		pos = path_next_key(p); /* NO_NEXT ends the loop */
		path_release(fs, p);
	}
	return 0;
}

/* Splits the leaf record r at the path's idx into [r.logical, at) and
 * [at, end of r), both with r's flags; may split nodes upward. */
static int split_record(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
			const struct ordfs_extent *r, uint64_t at)
{
	struct split_plan plan;
	int err = split_prepare(fs, h, p, &plan);
	if (err)
		return err;

	struct ordfs_extent head = *r, tail = *r;
	head.len = (uint32_t)(at - r->logical);
	tail.logical = at;
	tail.physical += at - r->logical;
	tail.len = (uint32_t)(ext_end(r) - at);
	unsigned pos = (unsigned)p->lv[p->depth].idx;
	ext_put(rec_at(p->lv[p->depth].node, pos), &head);

	uint8_t rec[REC];
	ext_put(rec, &tail);
	if (plan.grow)
		root_grow(fs, inode, p, &plan);
	path_add_record(fs, inode, p, &plan, p->depth, pos + 1, rec);
	inode->d.blocks += plan.nblocks;
	return 0;
}

/* The whole record at the path's idx takes `flags` and merges with the
 * neighbours it now joins in the same leaf (never the first record of a
 * leaf goes, so no key changes [E1]). */
static int set_record_flags(struct handle *h, struct path *p, struct ordfs_extent r,
			    uint32_t flags)
{
	struct path_level *leaf = &p->lv[p->depth];
	unsigned i = (unsigned)leaf->idx;
	int err = path_access(h, p, p->depth, p->depth);
	if (err)
		return err;

	r.flags = flags;
	struct ordfs_extent nb;
	if (i + 1 < node_entries(leaf->node)) {
		ext_get(rec_at(leaf->node, i + 1), &nb);
		if (extents_join(&r, &nb)) {
			r.len += nb.len;
			recs_delete(leaf->node, i + 1);
		}
	}
	if (i > 0) {
		ext_get(rec_at(leaf->node, i - 1), &nb);
		if (extents_join(&nb, &r)) {
			nb.len += r.len;
			ext_put(rec_at(leaf->node, i - 1), &nb);
			recs_delete(leaf->node, i);
			return 0;
		}
	}
	ext_put(rec_at(leaf->node, i), &r);
	return 0;
}

/* The piece [a, b) at one end of record r takes `flags` by moving the
 * boundary between r and its neighbour in the same leaf, if the piece joins
 * that neighbour (the common case of writing a preallocated file in
 * order).  1 if done, 0 if the neighbour does not join.  r is never the
 * first record of its leaf when its start moves, so keys stay [E1]. */
static int move_boundary(struct handle *h, struct path *p, const struct ordfs_extent *r,
			 uint64_t a, uint64_t b, uint32_t flags)
{
	struct path_level *leaf = &p->lv[p->depth];
	unsigned i = (unsigned)leaf->idx;
	bool at_head = a == r->logical;
	if (at_head ? i == 0 : i + 1 >= node_entries(leaf->node))
		return 0;
	unsigned j = at_head ? i - 1 : i + 1;
	struct ordfs_extent nb, piece = { a, r->physical + (a - r->logical), (uint32_t)(b - a),
					  flags };
	ext_get(rec_at(leaf->node, j), &nb);
	if (at_head ? !extents_join(&nb, &piece) : !extents_join(&piece, &nb))
		return 0;
	int err = path_access(h, p, p->depth, p->depth);
	if (err)
		return err;

	struct ordfs_extent rest = *r;
	rest.len -= piece.len;
	if (at_head) {
		nb.len += piece.len;
		rest.logical = b;
		rest.physical += piece.len;
	} else {
		nb.logical = a;
		nb.physical = piece.physical;
		nb.len += piece.len;
	}
	ext_put(rec_at(leaf->node, j), &nb);
	ext_put(rec_at(leaf->node, i), &rest);
	return 1;
}

/* One change toward "every mapped block of [lo, end) has `flags`": a split
 * costs 2 of *budget, any other change 1.  1 after a change, 0 when nothing
 * is left to change, 2 when the next change does not fit the budget. */
static int flags_step(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lo,
		      uint64_t end, uint32_t flags, uint32_t *budget)
{
	struct path p;
	struct ordfs_extent r;
	int found = find_to_change(fs, inode, lo, end, flags, &p, &r);
	if (found <= 0)
		return found;

	uint64_t a = r.logical > lo ? r.logical : lo;
	uint64_t b = ext_end(&r) < end ? ext_end(&r) : end;
	bool head_stays = a > r.logical, tail_stays = b < ext_end(&r);
	int err = 0, moved = 0;
	if (!head_stays && !tail_stays) {
		err = set_record_flags(h, &p, r, flags);
	} else {
		if (head_stays != tail_stays)
			moved = move_boundary(h, &p, &r, a, b, flags);
		if (moved == 0 && *budget < 2) {
			path_release(fs, &p);
			return 2;
		}
		if (moved == 0)
			err = split_record(fs, h, inode, &p, &r, head_stays ? a : b);
		err = moved < 0 ? moved : err;
	}
	path_release(fs, &p);
	if (err)
		return err;
	*budget -= (!head_stays && !tail_stays) || moved ? 1 : 2;
	return 1;
}

int extent_set_flags(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lblk,
		     uint64_t count, uint32_t flags, uint32_t max_records)
{
	if (flags & ~ORDFS_EXT_UNWRITTEN)
		return -EINVAL;
	uint64_t end = count > UINT64_MAX - lblk ? UINT64_MAX : lblk + count;
	uint32_t budget = max_records < 2 ? 2 : max_records;
	bool changed = false;
	int ret = end > lblk;

	while (budget > 0 && ret == 1) {
		ret = flags_step(fs, h, inode, lblk, end, flags, &budget);
		changed |= ret == 1;
	}
	if (ret == 1 || ret == 2) {
		struct path p;
		struct ordfs_extent r;
		ret = find_to_change(fs, inode, lblk, end, flags, &p, &r);
		if (ret == 1)
			path_release(fs, &p);
	}
	if (changed) {
		int err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
		if (err && ret >= 0)
			ret = err;
	}
	return ret;
}

/* ---- credits, walk, small things -------------------------------------------- */

uint32_t extent_credits(struct ordfs *fs, struct inode *inode, uint32_t max_records)
{
	uint64_t records = max_records ? max_records : 1;
	uint64_t levels = (uint64_t)extent_depth(inode) + 1; /* the tree may grow once */
	/* Each record change dirties one path; one change per call may split
	 * every level and grow the root. */
	uint64_t nodes = (records + 1) * levels;
	/* Data blocks freed per change fit in one bitmap block's bits [E5]
	 * (alloc_credits counts a run's bitmap blocks), plus one bitmap block
	 * per tree block allocated or freed; never more than the bitmap has. */
	uint64_t bitmaps = records * alloc_credits(fs->alloc,
						   ordfs_bits_per_bitmap_block(fs->block_size)) +
			   nodes;
	if (bitmaps > fs->sb.block_bitmap_blocks)
		bitmaps = fs->sb.block_bitmap_blocks;
	uint64_t total = nodes + bitmaps + INODE_WRITE_CREDITS;
	return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

struct walk {
	struct ordfs *fs;
	struct inode *inode;
	const struct extent_walk_ops *ops;
	bool bad;
};

static int walk_node(struct walk *w, const uint8_t *node, unsigned level, uint64_t hi);

/* Visits child i of an index node; a bad child is reported and skipped so
 * the rest of the tree is still seen (fsck claims its blocks). */
static int walk_child(struct walk *w, const uint8_t *node, unsigned i, unsigned level,
		      uint64_t hi)
{
	const uint8_t *r = crec_at(node, i);
	uint64_t child_hi = i + 1 < node_entries(node) ? rec_key(crec_at(node, i + 1)) : hi;
	uint64_t blockno = idx_child(r);
	struct buf *b;
	int err = tree_block_read(w->fs, w->inode, blockno, node_depth(node) - 1, rec_key(r),
				  child_hi, true, &b);
	if (err == -EUCLEAN) {
		w->bad = true;
		return w->ops->node_cb ? w->ops->node_cb(w->ops->ctx, blockno, level + 1, 1) : 0;
	}
	if (err)
		return err;
	int ret = w->ops->node_cb ? w->ops->node_cb(w->ops->ctx, blockno, level + 1, 0) : 0;
	if (!ret)
		ret = walk_node(w, b->data + NODE_OFF, level + 1, child_hi);
	bcache_put(w->fs->cache, b);
	return ret;
}

static int walk_node(struct walk *w, const uint8_t *node, unsigned level, uint64_t hi)
{
	for (unsigned i = 0; i < node_entries(node); i++) {
		int ret;
		if (node_depth(node) > 0) {
			ret = walk_child(w, node, i, level, hi);
		} else {
			struct ordfs_extent e;
			ext_get(crec_at(node, i), &e);
			ret = w->ops->ext_cb ? w->ops->ext_cb(w->ops->ctx, &e) : 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

int extent_walk(struct ordfs *fs, struct inode *inode, const struct extent_walk_ops *ops)
{
	int err = root_check(fs, inode);
	if (err)
		return err;
	struct walk w = { fs, inode, ops, false };
	int ret = walk_node(&w, inode->d.data, 0, UINT64_MAX);
	if (ret)
		return ret;
	return w.bad ? -EUCLEAN : 0;
}

void extent_tree_init(struct inode *inode)
{
	memset(inode->d.data, 0, ORDFS_INODE_DATA_LEN);
	node_init(inode->d.data, ROOT_CAP, 0);
}

unsigned extent_depth(const struct inode *inode)
{
	unsigned depth = node_depth(inode->d.data);
	return depth > EXTENT_MAX_DEPTH ? EXTENT_MAX_DEPTH : depth;
}
