/*
 * extent_path.c - root-to-leaf paths through an extent tree.
 *
 * Owns: struct path (extent_internal.h): finding the path to the leaf that
 * covers a logical block, with every node on it verified and referenced;
 * what lies after the path's leaf; write access along the path; and the
 * keys above a node whose first record changes.
 *
 * Rules kept here:
 *  - E1: descents go by "last key <= target"; the first mapped block after
 *    a leaf is the next key up the path; ext_keys_fix() carries a node's
 *    new first key up to the first level where the path is not at index 0.
 *  - Every node on a path is read through ext_tree_block_read() and also
 *    checked against the key the descent used [E2]; a path holds a buffer
 *    reference per tree block until ext_path_release(), also on failure
 *    nothing stays held.
 *  - Write access is taken here but nothing is changed here except keys
 *    (ext_keys_fix, after ext_keys_access) [E4].
 */
#include <errno.h>
#include <stdbool.h>

#include "extent_internal.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../cache/bcache.h"
#include "../journal/journal.h"

/* ---- paths ---------------------------------------------------------------- */

void ext_path_release(struct ordfs *fs, struct path *p)
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
 * target; p holds references until ext_path_release().  Without `full`, cached
 * nodes get the lookup's light check [E2]. */
int ext_path_find(struct ordfs *fs, struct inode *inode, uint64_t target, bool full,
		  struct path *p)
{
	int err = ext_root_check(fs, inode);
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
		err = ext_tree_block_read(fs, inode, idx_child(r), p->depth - l - 1, lo, hi, full,
					  &b);
		if (!err && (lo < lv->lo || lo >= hi)) { /* light check: the key used */
			bcache_put(fs->cache, b);
			err = -EUCLEAN;
		}
		if (err) {
			p->depth = l;
			ext_path_release(fs, p);
			return err;
		}
		p->lv[l + 1] = (struct path_level){ b->data + NODE_OFF, b, idx_child(r),
						    block_cap(fs), lo, hi, -1 };
	}
	p->lv[p->depth].idx = node_search(p->lv[p->depth].node, target);
	return 0;
}

/* The first key after the path's leaf, found up the path [E1], or NO_NEXT. */
uint64_t ext_path_next_key(const struct path *p)
{
	for (unsigned l = p->depth; l-- > 0;) {
		const struct path_level *lv = &p->lv[l];
		if ((unsigned)lv->idx + 1 < node_entries(lv->node))
			return rec_key(crec_at(lv->node, (unsigned)lv->idx + 1));
	}
	return NO_NEXT;
}

/* The first mapped block after the leaf record at idx, or NO_NEXT. */
uint64_t ext_path_next_mapped(const struct path *p)
{
	const struct path_level *leaf = &p->lv[p->depth];
	unsigned next = (unsigned)(leaf->idx + 1);
	if (next < node_entries(leaf->node))
		return rec_key(crec_at(leaf->node, next));
	return ext_path_next_key(p);
}

/* The leaf record at the path's idx (idx >= 0). */
void ext_path_leaf_extent(const struct path *p, struct ordfs_extent *e)
{
	const struct path_level *leaf = &p->lv[p->depth];
	ext_get(crec_at(leaf->node, (unsigned)leaf->idx), e);
}

/* Gets write access to the tree blocks at levels [from, to]; level 0 is the
 * inode, written by inode_write(). */
int ext_path_access(struct handle *h, const struct path *p, unsigned from, unsigned to)
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

int ext_keys_access(struct handle *h, const struct path *p, unsigned level)
{
	if (level == 0)
		return 0;
	return ext_path_access(h, p, keys_top(p, level), level - 1);
}

/* The node at `level` now starts at key: fix the keys above it [E1]. */
void ext_keys_fix(struct path *p, unsigned level, uint64_t key)
{
	while (level > 0) {
		struct path_level *lv = &p->lv[--level];
		le_put64(rec_at(lv->node, (unsigned)lv->idx), key);
		if (lv->idx != 0)
			break;
	}
}
