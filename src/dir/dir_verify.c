/*
 * dir_verify.c - the directory checker: dir_verify (fsck).
 *
 * Owns: walking the whole tree from the root and reporting every problem
 * found, not just the first: blocks unreadable, of the wrong kind or level,
 * outside their parent's key range or referenced twice; entries whose name
 * is invalid or whose hash does not match; a leaf chain out of hash order;
 * blocks not reachable from the root.
 *
 * Rules kept here:
 *  - Every block is read and verified the way the tree reads it (dnode_get,
 *    dnode_range_problem, dir.c); a bad subtree is reported and skipped so
 *    the rest is still seen, and every entry of every leaf that could be
 *    read is reported through entry_cb.
 *  - The walk is bounded: each logical block is visited at most once (a
 *    bitmap of the blocks seen), levels strictly decrease downward.
 *  - Nothing here changes the directory.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "dir.h"
#include "dir_internal.h"
#include "../fs.h"
#include "../cache/bcache.h"

/* ---- checker -------------------------------------------------------------- */

struct vleaf {
	uint64_t lblk;
	uint32_t next;
	bool sound; /* read and verified; next is meaningful */
};

struct verifier {
	struct dctx dc;
	const struct dir_verify_ops *ops;
	uint8_t *seen; /* one bit per logical block */
	struct vleaf *leaves; /* in index (hash) order */
	uint64_t nleaves, cap_leaves;
	uint32_t problems;
	int stop; /* an entry_cb's non-zero return or an I/O error */
};

static void v_problem(struct verifier *v, uint64_t lblk, const char *what)
{
	v->problems++;
	if (v->ops && v->ops->problem_cb)
		v->ops->problem_cb(v->ops->ctx, lblk, what);
}

static void v_add_leaf(struct verifier *v, uint64_t lblk, uint32_t next, bool sound)
{
	if (v->nleaves == v->cap_leaves) {
		uint64_t cap = v->cap_leaves ? v->cap_leaves * 2 : 64;
		struct vleaf *grown = realloc(v->leaves, cap * sizeof(*grown));
		if (!grown) {
			v->stop = -ENOMEM;
			return;
		}
		v->leaves = grown;
		v->cap_leaves = cap;
	}
	v->leaves[v->nleaves++] = (struct vleaf){ lblk, next, sound };
}

static void v_entries(struct verifier *v, uint64_t lblk, const uint8_t *blk)
{
	const uint8_t *area = dleaf_area_c(blk);
	uint32_t used = dleaf_used(blk);
	uint32_t seed = v->dc.fs->sb.hash_seed;

	for (uint32_t pos = 0; pos < used && !v->stop; pos += dent_size(area + pos)) {
		struct dir_entry e;
		dent_decode(area + pos, &e);
		if (dir_check_name(e.name, e.namelen))
			v_problem(v, lblk, "entry name is not a valid name");
		else if (ordfs_name_hash(seed, e.name, e.namelen) != e.hash)
			v_problem(v, lblk, DIR_VERIFY_BAD_HASH);
		if (v->ops && v->ops->entry_cb)
			v->stop = v->ops->entry_cb(v->ops->ctx, e.name, e.namelen, e.ino, e.dtype);
	}
}

static void v_node(struct verifier *v, uint64_t lblk, uint16_t want, uint32_t level,
		   const struct dbounds *r);

static void v_children(struct verifier *v, const uint8_t *blk, const struct dbounds *r)
{
	uint32_t level = dindex_level(blk);
	uint16_t want = level == 1 ? ORDFS_BT_DIR_LEAF : ORDFS_BT_DIR_INDEX;

	for (uint32_t i = 0; i < dindex_count(blk) && !v->stop; i++) {
		struct dbounds c = dbounds_child(blk, i, r);
		v_node(v, dindex_child(blk, i), want, level - 1, &c);
	}
}

/* Verifies the subtree at lblk; level UINT32_MAX accepts any (the root). */
static void v_node(struct verifier *v, uint64_t lblk, uint16_t want, uint32_t level,
		   const struct dbounds *r)
{
	struct dnode n;
	const char *why = NULL;

	if (v->stop)
		return;
	if (v->seen[lblk / 8] & (1u << (lblk % 8))) {
		v_problem(v, lblk, "directory block referenced twice");
		return;
	}
	v->seen[lblk / 8] |= (uint8_t)(1u << (lblk % 8));
	int err = dnode_get(&v->dc, lblk, want, &n, &why);
	if (err == -EUCLEAN) {
		v_problem(v, lblk, why ? why : "directory block unreadable");
		if (want == ORDFS_BT_DIR_LEAF)
			v_add_leaf(v, lblk, 0, false);
		return;
	}
	if (err) {
		v->stop = err;
		return;
	}
	const uint8_t *blk = n.b->data;
	const char *bad = NULL;
	if (level != UINT32_MAX && dnode_level(blk) != level)
		bad = "index level does not match the depth";
	if (!bad)
		bad = dnode_range_problem(blk, r);
	if (bad)
		v_problem(v, lblk, bad);
	if (dnode_is_leaf(blk)) {
		v_add_leaf(v, lblk, dleaf_next(blk), !bad);
		v_entries(v, lblk, blk);
	} else if (!bad) {
		v_children(v, blk, r);
	}
	dnode_put(&v->dc, &n);
}

/* The leaf chain must visit the leaves in index order, then end. */
static void v_chain(struct verifier *v)
{
	for (uint64_t i = 0; i < v->nleaves; i++) {
		uint64_t expect = i + 1 < v->nleaves ? v->leaves[i + 1].lblk : 0;
		if (v->leaves[i].sound && v->leaves[i].next != expect)
			v_problem(v, v->leaves[i].lblk, "leaf chain out of hash order");
	}
}

static void v_unreached(struct verifier *v)
{
	for (uint64_t lblk = 0; lblk < v->dc.nblocks; lblk++)
		if (!(v->seen[lblk / 8] & (1u << (lblk % 8))))
			v_problem(v, lblk, "directory block not reachable from the root");
}

int dir_verify(struct ordfs *fs, struct inode *dir, const struct dir_verify_ops *ops)
{
	struct verifier v = { .ops = ops };
	const struct dbounds all = { 0, 0, false };

	int err = dctx_init(&v.dc, fs, dir);
	if (err == -EUCLEAN) {
		v_problem(&v, 0, "directory size is not a whole number of blocks or too large");
		return -EUCLEAN;
	}
	if (err)
		return err;
	if (v.dc.nblocks == 0)
		return 0;
	if (v.dc.nblocks >= fs_block_count(fs)) {
		v_problem(&v, 0, "directory size exceeds the filesystem");
		return -EUCLEAN;
	}
	v.seen = calloc(v.dc.nblocks / 8 + 1, 1);
	if (!v.seen)
		return -ENOMEM;
	v_node(&v, 0, 0, UINT32_MAX, &all);
	if (!v.stop)
		v_chain(&v);
	if (!v.stop && v.problems == 0)
		v_unreached(&v);
	free(v.seen);
	free(v.leaves);
	if (v.stop)
		return v.stop;
	return v.problems ? -EUCLEAN : 0;
}
