/*
 * extent_insert.c - adding records to an extent tree: extent_insert, and
 * the node splits and root growth every record addition may need.
 *
 * Owns: the split plan (the new tree blocks one record addition needs),
 * splitting full nodes upward, moving the root's records into a block when
 * the root is full, and extent_insert: checking that the range is a hole,
 * merging with a neighbour record that joins, else adding a record.
 * extent_remove.c (a record cut in the middle) and extent_flags.c (a record
 * split at a range edge) add records through the same plan.
 *
 * Rules kept here:
 *  - E4: ext_split_prepare() allocates and journals every block a record
 *    addition may need, and takes write access to every node that changes,
 *    before anything changes; ext_root_grow() and ext_path_add_record()
 *    cannot fail.  ext_plan_cancel() frees what was not used.
 *  - E1: a record added or merged at index 0 of a leaf fixes the keys above.
 *  - E6: new tree blocks and newly mapped blocks are added to d.blocks.
 *  - Sequential growth leaves full nodes behind (an append to a full node
 *    moves only the new record), and new tree blocks go next to the tree's
 *    deepest block (or its data while it has none).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "extent.h"
#include "extent_internal.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../alloc/alloc.h"
#include "../cache/bcache.h"
#include "../journal/journal.h"

/* ---- adding a record: splits and root growth -------------------------------- */

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

void ext_plan_cancel(struct ordfs *fs, struct handle *h, struct split_plan *plan)
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
int ext_split_prepare(struct ordfs *fs, struct handle *h, struct path *p,
		      struct split_plan *plan)
{
	int recv = (int)p->depth; /* the level that takes a record without splitting */
	while (recv >= 0 && node_entries(p->lv[recv].node) >= p->lv[recv].cap)
		recv--;

	memset(plan, 0, sizeof(*plan));
	plan->grow = recv < 0;
	if (plan->grow && p->depth >= EXTENT_MAX_DEPTH)
		return -EFBIG;
	int err = ext_path_access(h, p, recv < 0 ? 1 : (unsigned)recv, p->depth);
	unsigned need = (unsigned)((int)p->depth - recv);
	uint64_t goal = tree_goal(p);
	for (unsigned i = 0; i < need && !err; i++)
		err = plan_alloc_block(fs, h, goal, plan);
	if (err)
		ext_plan_cancel(fs, h, plan);
	return err;
}

/* Moves the root's records into a new block one level down; the root becomes
 * an index node with one record and the path gains a level. */
void ext_root_grow(struct ordfs *fs, struct inode *inode, struct path *p,
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
 * the plan's blocks.  Cannot fail: ext_split_prepare() counted the blocks and the
 * root has room (it grew first if it was full). */
void ext_path_add_record(struct ordfs *fs, struct inode *inode, struct path *p,
			 struct split_plan *plan, unsigned level, unsigned pos,
			 const uint8_t *rec)
{
	uint8_t up[REC];
	for (;;) {
		struct path_level *lv = &p->lv[level];
		if (node_entries(lv->node) < lv->cap) {
			ext_recs_insert(lv->node, pos, rec);
			return;
		}
		uint64_t blockno;
		struct buf *b = plan_take(plan, &blockno);
		uint8_t *right = b->data + NODE_OFF;
		ordfs_block_hdr_init(b->data, ORDFS_BT_EXTENT, inode->ino, blockno);
		node_init(right, lv->cap, node_depth(lv->node));
		ext_node_split_insert(lv->node, right, lv->cap, pos, rec);
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
	int err = ext_split_prepare(fs, h, p, &plan);
	if (err)
		return err;
	if (pos == 0)
		err = ext_keys_access(h, p, p->depth);
	if (err) {
		ext_plan_cancel(fs, h, &plan);
		return err;
	}

	uint8_t rec[REC];
	ext_put(rec, e);
	if (plan.grow)
		ext_root_grow(fs, inode, p, &plan);
	if (pos == 0) /* a new first record: every key on the path is at index 0 */
		ext_keys_fix(p, p->depth, e->logical);
	ext_path_add_record(fs, inode, p, &plan, p->depth, pos, rec);
	inode->d.blocks += plan.nblocks;
	return 0;
}

/* ---- insert ---------------------------------------------------------------- */

/* a is followed by b, logically and on disk, and one record can hold both. */
bool ext_extents_join(const struct ordfs_extent *a, const struct ordfs_extent *b)
{
	return ext_end(a) == b->logical && a->physical + a->len == b->physical &&
	       a->flags == b->flags && (uint64_t)a->len + b->len <= ORDFS_EXT_MAX_LEN;
}

static int check_hole(const struct path *p, const struct ordfs_extent *e)
{
	if (p->lv[p->depth].idx >= 0) {
		struct ordfs_extent prev;
		ext_path_leaf_extent(p, &prev);
		if (ext_end(&prev) > e->logical)
			return -EEXIST;
	}
	uint64_t next = ext_path_next_mapped(p);
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
		join_left = ext_extents_join(&left, e);
	}
	if ((unsigned)(i + 1) < node_entries(leaf->node)) {
		ext_get(rec_at(leaf->node, (unsigned)(i + 1)), &right);
		join_right = ext_extents_join(e, &right);
	}
	if (!join_left && !join_right)
		return 0;

	int err = ext_path_access(h, p, p->depth, p->depth);
	if (!err && !join_left && i + 1 == 0)
		err = ext_keys_access(h, p, p->depth);
	if (err)
		return err;
	if (join_left) {
		left.len += e->len;
		if (join_right && (uint64_t)left.len + right.len <= ORDFS_EXT_MAX_LEN) {
			left.len += right.len;
			ext_recs_delete(leaf->node, (unsigned)(i + 1));
		}
		ext_put(rec_at(leaf->node, (unsigned)i), &left);
	} else {
		right.logical = e->logical;
		right.physical = e->physical;
		right.len += e->len;
		ext_put(rec_at(leaf->node, (unsigned)(i + 1)), &right);
		if (i + 1 == 0)
			ext_keys_fix(p, p->depth, e->logical);
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
	    ext_path_next_key(p) != ext_end(e))
		return 0;

	struct path q;
	int err = ext_path_find(fs, inode, ext_end(e), true, &q);
	if (err)
		return err;
	struct ordfs_extent right;
	int merged = 0;
	if (q.lv[q.depth].idx == 0) {
		ext_path_leaf_extent(&q, &right);
		merged = ext_extents_join(e, &right);
	}
	if (merged) {
		err = ext_path_access(h, &q, q.depth, q.depth);
		if (!err)
			err = ext_keys_access(h, &q, q.depth);
	}
	if (merged && !err) {
		right.logical = e->logical;
		right.physical = e->physical;
		right.len += e->len;
		ext_put(rec_at(q.lv[q.depth].node, 0), &right);
		ext_keys_fix(&q, q.depth, e->logical);
	}
	ext_path_release(fs, &q);
	return err ? err : merged;
}

int extent_insert(struct ordfs *fs, struct handle *h, struct inode *inode,
		  const struct ordfs_extent *e)
{
	if (!ext_fields_valid(fs, e))
		return -EINVAL;
	struct path p;
	int err = ext_path_find(fs, inode, e->logical, true, &p);
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
	ext_path_release(fs, &p);
	if (err)
		return err;
	inode->d.blocks += e->len;
	return inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
}
