/*
 * extent.c - per-inode extent trees (see extent.h): the read side of the
 * API and the small things.
 *
 * Owns: the extent tree of one inode, logical block -> physical block: the
 * layout and the rules E1..E8 are in extent_internal.h, which also says
 * which file keeps which.  Here: extent_lookup (the hot path), extent_walk
 * (fsck and the checker), extent_credits, extent_tree_init and
 * extent_depth.
 *
 * Rules kept here:
 *  - Nothing here changes the tree.
 *  - A lookup checks a cached node's headers and only the records it uses
 *    [E2]; a walk checks every node in full, and reports a bad tree block
 *    and goes on with the rest of the tree (fsck claims its blocks), then
 *    returns -EUCLEAN.
 *  - extent_credits() is the worst case of any change of up to max_records
 *    records: one path per record change, a split of every level and a
 *    root growth once, the bitmap blocks of E5's bounded frees, the inode.
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
#include "journal/journal.h"

/* ---- lookup ---------------------------------------------------------------- */

/* The lookup's light check of the leaf records it uses [E2]. */
static bool leaf_record_sane(const struct ordfs *fs, const struct path *p,
			     const struct ordfs_extent *e)
{
	const struct path_level *leaf = &p->lv[p->depth];
	return ext_fields_valid(fs, e) && e->logical >= leaf->lo && ext_end(e) <= leaf->hi;
}

int extent_lookup(struct ordfs *fs, struct inode *inode, uint64_t lblk,
		  struct ordfs_extent *ext)
{
	struct path p;
	int err = ext_path_find(fs, inode, lblk, false, &p);
	if (err)
		return err;
	int found = 0;
	if (p.lv[p.depth].idx >= 0) {
		ext_path_leaf_extent(&p, ext);
		if (!leaf_record_sane(fs, &p, ext))
			found = -EUCLEAN;
		else
			found = lblk - ext->logical < ext->len;
	}
	if (found == 0) {
		uint64_t next = ext_path_next_mapped(&p);
		uint64_t gap = next == NO_NEXT ? UINT64_MAX - lblk : next - lblk;
		if (next <= lblk)
			found = -EUCLEAN;
		if (gap > ORDFS_EXT_MAX_LEN)
			gap = ORDFS_EXT_MAX_LEN;
		*ext = (struct ordfs_extent){ lblk, 0, gap ? (uint32_t)gap : 1, 0 };
	}
	ext_path_release(fs, &p);
	return found;
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
	/* bitmap blocks, area and past it (the count read as a grow stores it) */
	uint32_t per = ordfs_bits_per_bitmap_block(fs->block_size);
	uint64_t groups = (fs_block_count(fs) + per - 1) / per;
	if (bitmaps > groups)
		bitmaps = groups;
	uint64_t total = nodes + bitmaps + INODE_WRITE_CREDITS;
	return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

uint32_t extent_records_per_handle(struct ordfs *fs, struct inode *inode, uint32_t most,
				   uint32_t least)
{
	uint32_t n = most;
	while (n > least && extent_credits(fs, inode, n) > journal_max_credits(fs->journal))
		n /= 2;
	return n;
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
	int err = ext_tree_block_read(w->fs, w->inode, blockno, node_depth(node) - 1, rec_key(r),
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
	int err = ext_root_check(fs, inode);
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
