/*
 * dir.c - directories as a B+tree of entries keyed by name hash (dir.h):
 * the tree's shape and the way to its blocks.
 *
 * Owns: name rules, one operation's view of a directory (struct dctx),
 * reading and verifying directory blocks, the descent from the root to the
 * leaf of a hash, and dir_credits.  The rest of the tree, each in its file
 * (shared declarations in dir_internal.h):
 *   dir_ops.c      dir_lookup, dir_add, dir_remove, dir_replace
 *   dir_grow.c     new blocks: appending, node splits, the root move;
 *                  dir_free_blocks
 *   dir_readdir.c  readdir cookies, dir_readdir, dir_is_empty
 *   dir_verify.c   the checker, dir_verify
 *   dir_leaf.c, dir_index.c  leaf and index payloads (byte layout in
 *                  format.h)
 *
 * Shape:
 *  - An empty directory has no blocks (d.size 0).  Logical block 0, once it
 *    exists, is the root: a leaf at first.  When the root must split, its
 *    contents move to a new logical block and block 0 becomes an index node
 *    one level higher, so the root never moves.  Index nodes split the same
 *    way; leaves and index nodes are never merged (as in ext4's htree), so
 *    a leaf may become empty; only the root leaf of a tree of height 0 can
 *    make the directory look empty without a walk.
 *  - New blocks are appended: logical block d.size / block_size, allocated
 *    with alloc_blocks near the previous block and mapped with
 *    extent_insert, inside the caller's handle.
 *  - Buckets: every entry of one bucket (hash >> 8) lives in one leaf.
 *    Index keys are bucket starts, leaves split only between buckets, so a
 *    descent by any hash of a bucket reaches that bucket's only leaf.
 *  - Leaves are chained in hash order through `next` (0 ends the chain;
 *    block 0 is never a non-root leaf) for readdir.
 *
 * readdir cookies are derived from buckets: see dir_readdir.c.
 *
 * Rules kept (by every file of the tree):
 *  - Callers hold dir->lock; nothing here takes a lock.
 *  - Every directory block is verified each time it is used, not just when
 *    first read: header, type, owner, checksum, payload structure, and its
 *    place in the tree (level, key range).  To make that possible the live
 *    buffer's checksum is recomputed after every change (the commit
 *    computes it again on its copy; JWA_CSUM_HDR).  A bad block is
 *    -EUCLEAN and nothing is changed.  Every walk is bounded: descents by
 *    strictly decreasing levels, the leaf chain by the number of blocks.
 *  - Changes are prepared first (lookups, write access, new blocks) and
 *    applied only when nothing can fail any more, so an error leaves the
 *    tree as it was.  New blocks are unmapped again on failure; if even
 *    that fails the journal is aborted so no half-done tree can commit.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "dir.h"
#include "dir_internal.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../alloc/alloc.h"
#include "../cache/bcache.h"
#include "../extent/extent.h"

/* ---- names -------------------------------------------------------------- */

int dir_check_name(const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len > ORDFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return -EINVAL;
	return 0;
}

/* ---- context and block access ------------------------------------------ */

int dctx_init(struct dctx *dc, struct ordfs *fs, struct inode *dir)
{
	memset(dc, 0, sizeof(*dc));
	dc->fs = fs;
	dc->dir = dir;
	dc->bs = fs->block_size;
	dc->max_ino = fs->sb.inode_count;
	if (!S_ISDIR(dir->d.mode))
		return -ENOTDIR;
	if (dir->d.size % dc->bs)
		return -EUCLEAN;
	dc->nblocks = dir->d.size / dc->bs;
	if (dc->nblocks > DIR_MAX_BLOCKS)
		return -EUCLEAN;
	return 0;
}

static bool ext_covers(const struct ordfs_extent *e, uint64_t lblk)
{
	return e->len && lblk >= e->logical && lblk - e->logical < e->len;
}

/* Physical block of logical block lblk; a hole or a block outside the data
 * area is -EUCLEAN. */
int dctx_map(struct dctx *dc, uint64_t lblk, uint64_t *pblk)
{
	struct ordfs_extent *e = &dc->ext;
	const struct ordfs_super *sb = &dc->fs->sb;

	if (lblk >= dc->nblocks)
		return -EUCLEAN;
	if (!ext_covers(e, lblk)) {
		int r = extent_lookup(dc->fs, dc->dir, lblk, e);
		if (r != 1 || (e->flags & ORDFS_EXT_UNWRITTEN) || !ext_covers(e, lblk)) {
			e->len = 0;
			return r < 0 ? r : -EUCLEAN;
		}
	}
	uint64_t p = e->physical + (lblk - e->logical);
	if (p < sb->data_start || p >= sb->block_count - 1)
		return -EUCLEAN;
	*pblk = p;
	return 0;
}

bool dnode_is_leaf(const uint8_t *blk)
{
	return le_get16(blk + 4) == ORDFS_BT_DIR_LEAF;
}

/* Height of a node above the leaves (0 for a leaf). */
uint32_t dnode_level(const uint8_t *blk)
{
	return dnode_is_leaf(blk) ? 0 : dindex_level(blk);
}

/* Why a directory block is unusable, or NULL.  want 0 accepts either kind. */
static const char *dnode_problem(const struct dctx *dc, const uint8_t *blk, uint64_t pblk,
				 uint16_t want)
{
	uint16_t type = le_get16(blk + 4);

	if (type != ORDFS_BT_DIR_LEAF && type != ORDFS_BT_DIR_INDEX)
		return "not a directory block";
	if (want && type != want)
		return "directory block of the wrong kind (leaf/index)";
	if (ordfs_block_verify(blk, dc->bs, dc->fs->csum_seed, type, pblk))
		return "bad directory block header or checksum";
	if (ordfs_block_owner(blk) != dc->dir->ino)
		return "directory block owned by another inode";
	if (type == ORDFS_BT_DIR_LEAF)
		return dleaf_problem(blk, dc->bs, dc->max_ino);
	return dindex_problem(blk, dc->bs, dc->nblocks);
}

/* Reads and verifies logical block lblk.  On -EUCLEAN, *why (if given)
 * says what is wrong. */
int dnode_get(struct dctx *dc, uint64_t lblk, uint16_t want, struct dnode *out,
	      const char **why)
{
	const char *what = NULL;
	uint64_t pblk;
	struct buf *b;

	int err = dctx_map(dc, lblk, &pblk);
	if (err) {
		what = "directory block not mapped";
		goto fail;
	}
	err = bcache_read(dc->fs->cache, pblk, &b);
	if (err)
		goto fail;
	what = dnode_problem(dc, b->data, pblk, want);
	if (what) {
		bcache_put(dc->fs->cache, b);
		err = -EUCLEAN;
		goto fail;
	}
	out->lblk = lblk;
	out->pblk = pblk;
	out->b = b;
	return 0;
fail:
	if (why)
		*why = what;
	return err;
}

void dnode_put(struct dctx *dc, struct dnode *n)
{
	if (n->b)
		bcache_put(dc->fs->cache, n->b);
	n->b = NULL;
}

/* Keeps the live buffer's checksum valid after a change (see top). */
void dnode_csum(struct dctx *dc, struct dnode *n)
{
	ordfs_block_csum_set(n->b->data, dc->bs, dc->fs->csum_seed);
}

void dpath_put(struct dctx *dc, struct dpath *p)
{
	for (uint32_t i = 0; i <= DIR_MAX_LEVEL; i++)
		dnode_put(dc, &p->node[i]);
}

uint8_t *dpath_leaf(struct dpath *p)
{
	return p->node[p->levels].b->data;
}

/* ---- descent ------------------------------------------------------------ */

static bool in_bounds(const struct dbounds *r, uint64_t hash)
{
	return hash >= r->lo && (!r->has_hi || hash < r->hi);
}

/* Does the node respect the key range its parent gives it? */
const char *dnode_range_problem(const uint8_t *blk, const struct dbounds *r)
{
	if (!dnode_is_leaf(blk)) {
		if (dindex_key(blk, 0) != r->lo)
			return "index node's first key differs from its parent's key";
		if (r->has_hi && dindex_key(blk, dindex_count(blk) - 1) >= r->hi)
			return "index key beyond its parent's range";
		return NULL;
	}
	uint64_t first, last;
	if (dleaf_hash_range(blk, &first, &last) && (!in_bounds(r, first) || !in_bounds(r, last)))
		return "leaf entries outside their parent's key range";
	return NULL;
}

struct dbounds dbounds_child(const uint8_t *blk, uint32_t pos, const struct dbounds *r)
{
	struct dbounds c = *r;

	c.lo = dindex_key(blk, pos);
	if (pos + 1 < dindex_count(blk)) {
		c.hi = dindex_key(blk, pos + 1);
		c.has_hi = true;
	}
	return c;
}

/* Fills p with the path from the root to the leaf that holds (or would
 * hold) hash.  The directory has at least one block. */
int dir_descend(struct dctx *dc, uint64_t hash, struct dpath *p)
{
	struct dbounds r = { 0, 0, false };

	memset(p, 0, sizeof(*p));
	int err = dnode_get(dc, 0, 0, &p->node[0], NULL);
	if (err)
		return err;
	p->levels = dnode_level(p->node[0].b->data);
	for (uint32_t i = 0;; i++) {
		const uint8_t *blk = p->node[i].b->data;
		if (dnode_level(blk) != p->levels - i || dnode_range_problem(blk, &r)) {
			err = -EUCLEAN;
			goto fail;
		}
		if (i == p->levels)
			return 0;
		uint32_t pos = dindex_search(blk, hash);
		uint16_t want = i + 1 == p->levels ? ORDFS_BT_DIR_LEAF : ORDFS_BT_DIR_INDEX;
		p->pos[i] = pos;
		r = dbounds_child(blk, pos, &r);
		err = dnode_get(dc, dindex_child(blk, pos), want, &p->node[i + 1], NULL);
		if (err)
			goto fail;
	}
fail:
	dpath_put(dc, p);
	return err;
}

/* Descends to name's leaf.  1 if present (*off at it), 0 if absent (*off
 * where it would go), the path held either way; or a negative errno. */
int dir_find(struct dctx *dc, const char *name, size_t len, struct dpath *p,
	     uint32_t *off)
{
	uint64_t hash = ordfs_name_hash(dc->fs->sb.hash_seed, name, len);

	int err = dir_descend(dc, hash, p);
	if (err)
		return err;
	const uint8_t *leaf = dpath_leaf(p);
	return darea_find(dleaf_area_c(leaf), dleaf_used(leaf), hash, name, len, off);
}

/* Name checks plus the directory's context; 1 if the directory has blocks. */
int dir_begin(struct dctx *dc, struct ordfs *fs, struct inode *dir, const char *name,
	      size_t len)
{
	int err = dir_check_name(name, len);
	if (err)
		return err;
	err = dctx_init(dc, fs, dir);
	if (err)
		return err;
	return dc->nblocks > 0;
}

/* ---- credits ------------------------------------------------------------ */

uint32_t dir_credits(struct ordfs *fs, struct inode *dir)
{
	uint32_t levels = DIR_MAX_LEVEL; /* if the root cannot be read */
	struct dctx dc;
	struct dnode root = { 0 };

	if (dctx_init(&dc, fs, dir) == 0) {
		if (dc.nblocks == 0) {
			levels = 0;
		} else if (dnode_get(&dc, 0, 0, &root, NULL) == 0) {
			levels = dnode_level(root.b->data);
			dnode_put(&dc, &root);
		}
	}
	/* Each new block: itself, its bitmap block(s), the extent tree. */
	uint32_t per_new = 1 + alloc_credits(fs->alloc, 1) + extent_credits(fs, dir, 1);
	/* The path (levels + 1 nodes), a split at every level plus the moved
	 * root (levels + 2 new blocks), the inode. */
	return (levels + 1) + (levels + 2) * per_new + INODE_WRITE_CREDITS;
}
