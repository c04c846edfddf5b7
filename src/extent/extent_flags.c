/*
 * extent_flags.c - written/unwritten flags of mapped blocks:
 * extent_set_flags.
 *
 * Owns: giving every mapped block of a range the same leaf flags, one
 * record change at a time, within the caller's record budget.
 *
 * Rules kept here:
 *  E8 extent_set_flags changes flags only (never a block's mapping): it
 *     splits a record at the range edges (costing two record changes: the
 *     split may split every level), moves the boundary to a joining
 *     neighbour instead when it can, and merges within a leaf, so a leaf
 *     never empties and no key above it changes.
 *  - E4: write access (and a split's blocks, ext_split_prepare) before any
 *    node changes; E6: a split's new tree blocks go into d.blocks.
 *  - ext_record_split (also used by extent_shift.c) is the one place a
 *    record is cut in two without unmapping anything.
 */
#include <errno.h>
#include <stdbool.h>

#include "extent.h"
#include "extent_internal.h"
#include "../fs.h"
#include "inode/inode.h"

/* ---- flags ------------------------------------------------------------------ */

/* Finds the first leaf record overlapping [lo, end) whose flags are not
 * `flags`; 1 with the path's leaf idx on it, 0 if there is none. */
static int find_to_change(struct ordfs *fs, struct inode *inode, uint64_t lo, uint64_t end,
			  uint32_t flags, struct path *p, struct ordfs_extent *r)
{
	uint64_t pos = lo;
	while (pos < end) {
		int err = ext_path_find(fs, inode, pos, true, p);
		if (err)
			return err;
		struct path_level *leaf = &p->lv[p->depth];
		for (int i = leaf->idx < 0 ? 0 : leaf->idx; (unsigned)i < node_entries(leaf->node);
		     i++) {
			ext_get(rec_at(leaf->node, (unsigned)i), r);
			if (ext_end(r) <= pos)
				continue;
			if (r->logical >= end) {
				ext_path_release(fs, p);
				return 0;
			}
			if (r->flags != flags) {
				leaf->idx = i;
				return 1;
			}
		}
		pos = ext_path_next_key(p); /* NO_NEXT ends the loop */
		ext_path_release(fs, p);
	}
	return 0;
}

int ext_record_split(struct ordfs *fs, struct handle *h, struct inode *inode, struct path *p,
		     const struct ordfs_extent *r, uint64_t at)
{
	struct split_plan plan;
	int err = ext_split_prepare(fs, h, p, &plan);
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
		ext_root_grow(fs, inode, p, &plan);
	ext_path_add_record(fs, inode, p, &plan, p->depth, pos + 1, rec);
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
	int err = ext_path_access(h, p, p->depth, p->depth);
	if (err)
		return err;

	r.flags = flags;
	struct ordfs_extent nb;
	if (i + 1 < node_entries(leaf->node)) {
		ext_get(rec_at(leaf->node, i + 1), &nb);
		if (ext_extents_join(&r, &nb)) {
			r.len += nb.len;
			ext_recs_delete(leaf->node, i + 1);
		}
	}
	if (i > 0) {
		ext_get(rec_at(leaf->node, i - 1), &nb);
		if (ext_extents_join(&nb, &r)) {
			nb.len += r.len;
			ext_put(rec_at(leaf->node, i - 1), &nb);
			ext_recs_delete(leaf->node, i);
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
	if (at_head ? !ext_extents_join(&nb, &piece) : !ext_extents_join(&piece, &nb))
		return 0;
	int err = ext_path_access(h, p, p->depth, p->depth);
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
			ext_path_release(fs, &p);
			return 2;
		}
		if (moved == 0)
			err = ext_record_split(fs, h, inode, &p, &r, head_stays ? a : b);
		err = moved < 0 ? moved : err;
	}
	ext_path_release(fs, &p);
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
			ext_path_release(fs, &p);
	}
	if (changed) {
		int err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
		if (err && ret >= 0)
			ret = err;
	}
	return ret;
}
