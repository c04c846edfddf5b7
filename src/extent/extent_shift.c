/*
 * extent_shift.c - moving records along the file: extent_shift and
 * extent_split_at, what FALLOC_FL_COLLAPSE_RANGE and FALLOC_FL_INSERT_RANGE
 * (file/shift_range.c) are made of.
 *
 * Owns: changing the logical block of every record at or after a start by
 * one signed amount, with the index keys above them, in one handle; and
 * cutting the record that crosses a block in two, so that a shift can
 * start there.
 *
 * Rules kept here:
 *  E9 extent_shift changes logical blocks and keys only.  Every record at
 *     or after `start` moves by the same delta and none before it does, so
 *     the order of records (and of keys, E1) stays, the tree keeps its
 *     shape, and blocks, lengths and flags (UNWRITTEN included) stay.  It
 *     refuses (-EINVAL, nothing changed) a shift that would break the
 *     order: a record crossing `start`, or, moving left, a record in the
 *     blocks the shift moves over.  Moving right it refuses one past the
 *     last logical block a record may have (-EFBIG).
 *  - E4: every tree block that changes is read, verified in full and given
 *    write access before the first edit; the edits cannot fail.
 *  - The handle needs extent_shift_credits(): the tree blocks holding a
 *    key at or after `start` (counted when asked, with room for one split
 *    made earlier in the same handle) and the inode.  A shift is never
 *    split over handles: the caller asks for the credits and refuses what
 *    the journal cannot hold (design/write-routes.md, "Collapse and insert
 *    range").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "extent.h"
#include "extent_internal.h"
#include "../fs.h"
#include "base/ordfs_assert.h"
#include "inode/inode.h"
#include "../cache/bcache.h"
#include "../journal/journal.h"

/* The tree blocks a shift changes, referenced until shift_set_release. */
struct shift_set {
	struct buf **b;
	size_t n, cap;
};

static void shift_set_release(struct ordfs *fs, struct shift_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		bcache_put(fs->cache, s->b[i]);
	free(s->b);
	s->b = NULL;
	s->n = s->cap = 0;
}

static int shift_set_push(struct shift_set *s, struct buf *b)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct buf **v = realloc(s->b, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->b = v;
		s->cap = cap;
	}
	s->b[s->n++] = b;
	return 0;
}

static uint64_t last_key(const uint8_t *node)
{
	unsigned n = node_entries(node);
	return n ? rec_key(crec_at(node, n - 1)) : 0;
}

/* Collects the tree blocks below `node` (its records lie below hi) that
 * hold a key at or after start: the children whose range reaches start,
 * and theirs. */
static int collect(struct ordfs *fs, struct inode *inode, const uint8_t *node, uint64_t hi,
		   uint64_t start, struct shift_set *s)
{
	unsigned n = node_entries(node);
	for (unsigned i = 0; node_depth(node) > 0 && i < n; i++) {
		const uint8_t *r = crec_at(node, i);
		uint64_t child_hi = i + 1 < n ? rec_key(crec_at(node, i + 1)) : hi;
		if (child_hi <= start)
			continue;
		struct buf *b;
		int err = ext_tree_block_read(fs, inode, idx_child(r), node_depth(node) - 1,
					      rec_key(r), child_hi, true, &b);
		if (err)
			return err;
		const uint8_t *child = b->data + NODE_OFF;
		err = collect(fs, inode, child, child_hi, start, s);
		if (!err && last_key(child) >= start)
			err = shift_set_push(s, b);
		else
			bcache_put(fs->cache, b);
		if (err)
			return err;
	}
	return 0;
}

static int collect_from_root(struct ordfs *fs, struct inode *inode, uint64_t start,
			     struct shift_set *s)
{
	int err = ext_root_check(fs, inode);
	if (!err)
		err = collect(fs, inode, inode->d.data, UINT64_MAX, start, s);
	if (err)
		shift_set_release(fs, s);
	return err;
}

int extent_shift_credits(struct ordfs *fs, struct inode *inode, uint64_t start,
			 uint32_t *credits)
{
	struct shift_set s = { 0 };
	int err = collect_from_root(fs, inode, start, &s);
	if (err)
		return err;
	/* A split earlier in the same handle may add a block per level and
	 * grow the root. */
	uint64_t total = s.n + extent_depth(inode) + 2 + INODE_WRITE_CREDITS;
	shift_set_release(fs, &s);
	*credits = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
	return 0;
}

/* The last record before start (if any) and the last record of the file
 * allow the shift [E9]. */
static int shift_allowed(struct ordfs *fs, struct inode *inode, uint64_t start, int64_t delta)
{
	uint64_t left = delta < 0 ? (uint64_t)-(delta + 1) + 1 : 0;
	if (delta < 0 && start < left)
		return -EINVAL;
	struct path p;
	struct ordfs_extent r;
	int err = 0;
	if (start > 0) {
		err = ext_path_find(fs, inode, start - 1, true, &p);
		if (err)
			return err;
		if (p.lv[p.depth].idx >= 0) {
			ext_path_leaf_extent(&p, &r);
			if (ext_end(&r) > start - left)
				err = -EINVAL; /* crosses start, or lies in the way */
		}
		ext_path_release(fs, &p);
	}
	if (err || delta <= 0)
		return err;
	err = ext_path_find(fs, inode, UINT64_MAX, true, &p);
	if (err)
		return err;
	if (p.lv[p.depth].idx >= 0) {
		ext_path_leaf_extent(&p, &r);
		if (r.logical >= start && ext_end(&r) > UINT64_MAX - (uint64_t)delta)
			err = -EFBIG;
	}
	ext_path_release(fs, &p);
	return err;
}

/* Moves every key of the node at or after start by delta. */
static void node_shift(uint8_t *node, uint64_t start, int64_t delta)
{
	for (unsigned i = 0; i < node_entries(node); i++) {
		uint8_t *r = rec_at(node, i);
		uint64_t key = rec_key(r);
		if (key >= start)
			le_put64(r, key + (uint64_t)delta);
	}
}

int extent_shift(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t start,
		 int64_t delta)
{
	if (delta == 0)
		return 0;
	int err = shift_allowed(fs, inode, start, delta);
	if (err)
		return err;
	struct shift_set s = { 0 };
	err = collect_from_root(fs, inode, start, &s);
	for (size_t i = 0; i < s.n && !err; i++)
		err = journal_get_write_access(h, s.b[i], JWA_CSUM_HDR);
	if (!err) { /* E4: nothing below can fail */
		for (size_t i = 0; i < s.n; i++)
			node_shift(s.b[i]->data + NODE_OFF, start, delta);
		node_shift(inode->d.data, start, delta);
	}
	shift_set_release(fs, &s);
	if (err)
		return err;
	/* E9: the order of the root's records survived the shift. */
	ORDFS_ASSERT(ext_root_check(fs, inode) == 0);
	return inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
}

int extent_split_at(struct ordfs *fs, struct handle *h, struct inode *inode, uint64_t lblk)
{
	struct path p;
	int err = ext_path_find(fs, inode, lblk, true, &p);
	if (err)
		return err;
	struct ordfs_extent r;
	bool crosses = false;
	if (p.lv[p.depth].idx >= 0) {
		ext_path_leaf_extent(&p, &r);
		crosses = r.logical < lblk && lblk < ext_end(&r);
	}
	if (crosses)
		err = ext_record_split(fs, h, inode, &p, &r, lblk);
	ext_path_release(fs, &p);
	if (!err && crosses)
		err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	return err;
}
