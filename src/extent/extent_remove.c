/*
 * extent_remove.c - unmapping blocks: extent_remove.
 *
 * Owns: removing the mapped blocks of a range, last record first, one cut
 * per step: a whole record goes (and the nodes it empties), or its head or
 * tail stays, or both stay and the record becomes two (a record addition,
 * extent_insert.c); then the tree shrinks back into the root when it can.
 *
 * Rules kept here:
 *  E5 extent_remove frees at most one bitmap block's worth of data blocks
 *     per record change, so extent_credits() holds for records of any
 *     length; a longer record is trimmed over several changes.
 *  E7 Mapped blocks of a regular file are data and are freed plainly; those
 *     of directories and symlinks are metadata blocks the log may hold, so
 *     they are freed with ALLOC_METADATA (journal_forget, revoke [J6]).
 *  - E4: each cut frees blocks and takes write access before it edits a
 *    node; E1: a cut that changes a node's first record fixes the keys
 *    above it; E6: d.blocks loses the unmapped and the freed tree blocks.
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

	int err = ext_path_access(h, p, u, u);
	if (!err && first_moves)
		err = ext_keys_access(h, p, u);
	if (!err)
		err = free_mapped(fs, h, cut_physical(c), cut_len(c));
	for (unsigned l = depth; l > u && !err; l--)
		err = alloc_free_blocks(fs->alloc, h, p->lv[l].blockno, 1, ALLOC_METADATA);
	if (err)
		return err;

	if (tree_empties) {
		extent_tree_init(inode);
	} else {
		ext_recs_delete(p->lv[u].node, pos);
		if (first_moves)
			ext_keys_fix(p, u, rec_key(rec_at(p->lv[u].node, 0)));
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

	int err = ext_path_access(h, p, depth, depth);
	if (!err && first_moves)
		err = ext_keys_access(h, p, depth);
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
		ext_keys_fix(p, depth, r.logical);
	blocks_sub(inode, cut_len(c));
	return 0;
}

/* Both ends stay: the record becomes two, which may split nodes. */
static int cut_middle(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
		      const struct cut *c)
{
	struct split_plan plan;
	int err = ext_split_prepare(fs, h, p, &plan);
	if (err)
		return err;
	err = free_mapped(fs, h, cut_physical(c), cut_len(c));
	if (err) {
		ext_plan_cancel(fs, h, &plan);
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
		ext_root_grow(fs, inode, p, &plan);
	ext_path_add_record(fs, inode, p, &plan, p->depth, pos + 1, rec);
	inode->d.blocks += plan.nblocks;
	blocks_sub(inode, cut_len(c));
	return 0;
}

/* Finds the last mapped record overlapping [lblk, end), if any. */
static int find_last_in_range(struct ordfs *fs, struct inode *inode, uint64_t lblk,
			      uint64_t end, struct path *p, struct ordfs_extent *r)
{
	int err = ext_path_find(fs, inode, end - 1, true, p);
	if (err)
		return err;
	if (p->lv[p->depth].idx >= 0) {
		ext_path_leaf_extent(p, r);
		if (ext_end(r) > lblk)
			return 1;
	}
	ext_path_release(fs, p);
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
	ext_path_release(fs, &p);
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
		int err = ext_tree_block_read(fs, inode, blockno, node_depth(root) - 1, rec_key(r),
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

/* Counts the steps remove_step takes over [lblk, end): one per bitmap
 * block's worth of each mapped record's overlap [E5]. */
struct steps {
	uint64_t lblk, end, chunk, n;
};

static int count_steps(void *ctx, const struct ordfs_extent *e)
{
	struct steps *st = ctx;
	uint64_t lo = e->logical > st->lblk ? e->logical : st->lblk;
	uint64_t hi = ext_end(e) < st->end ? ext_end(e) : st->end;
	if (e->logical >= st->end)
		return 1; /* past the range: stop the walk */
	if (hi > lo)
		st->n += (hi - lo + st->chunk - 1) / st->chunk;
	return 0;
}

int extent_remove_steps(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint64_t count,
			uint32_t *steps)
{
	uint64_t end = count > UINT64_MAX - lblk ? UINT64_MAX : lblk + count;
	struct steps st = { lblk, end, ordfs_bits_per_bitmap_block(fs->block_size), 0 };
	struct extent_walk_ops ops = { NULL, count_steps, &st };
	int ret = extent_walk(fs, inode, &ops);
	if (ret < 0)
		return ret;
	*steps = st.n > UINT32_MAX ? UINT32_MAX : (uint32_t)st.n;
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
			ext_path_release(fs, &p);
	}
	if (changed) {
		int err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
		if (err && ret >= 0)
			ret = err;
	}
	return ret;
}
