/*
 * dir.c - directories as a B+tree of entries keyed by name hash (dir.h).
 *
 * Owns: the tree over a directory's logical blocks (leaf and index
 * payloads are in dir_leaf.c and dir_index.c; byte layout in format.h).
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
 * readdir cookies: cookie(E) = bucket(E) << 7 | slot, slot = 1 + E's rank
 * among the entries of its bucket in (hash, name) order, plus 2 in bucket 0,
 * capped at 127.
 *  - non-zero (slot >= 1) and < 2^63 (56 + 7 bits); never 1 or 2, which
 *    the FUSE glue may give to "." and "..";
 *  - strictly increasing along a pass: entries come in (hash, name) order,
 *    so buckets ascend and ranks within a bucket ascend;
 *  - resuming after c descends once, by hash, to the leaf of bucket c >> 7
 *    and emits the first entry whose cookie exceeds c: O(log n) blocks;
 *  - stable: an entry's cookie changes only if an entry of the *same
 *    bucket* (same top 56 hash bits, 2^-56 per pair of names with a keyed
 *    hash) is added or removed before it.  Only then can a concurrent
 *    change make a pass repeat or skip an entry; a bucket of more than 127
 *    entries (never, short of a broken hash) would share cookie slot 127.
 *
 * Rules kept:
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
 *  - dir_free_blocks relies on extent_remove freeing the blocks of a
 *    directory inode (S_ISDIR) with ALLOC_METADATA, so each block is also
 *    journal_forget()-ed [J6]; extent.c keeps that for directories and
 *    symlinks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dir.h"
#include "dir_internal.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../alloc/alloc.h"
#include "../cache/bcache.h"
#include "../extent/extent.h"
#include "../journal/journal.h"

#define DIR_COOKIE_SLOT_BITS 7u
#define DIR_COOKIE_SLOT_MAX 127u
#define DIR_COOKIE_RESERVED 2u     /* cookies 1 and 2 never name an entry */
#define DIR_DTYPE_MAX 15u          /* DT_* fit in 4 bits */
#define DIR_UNMAP_RECORDS 64u      /* extent records per extent_remove call */

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

static int dctx_init(struct dctx *dc, struct ordfs *fs, struct inode *dir)
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
static int dctx_map(struct dctx *dc, uint64_t lblk, uint64_t *pblk)
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

static bool dnode_is_leaf(const uint8_t *blk)
{
	return le_get16(blk + 4) == ORDFS_BT_DIR_LEAF;
}

/* Height of a node above the leaves (0 for a leaf). */
static uint32_t dnode_level(const uint8_t *blk)
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
static int dnode_get(struct dctx *dc, uint64_t lblk, uint16_t want, struct dnode *out,
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

static void dnode_put(struct dctx *dc, struct dnode *n)
{
	if (n->b)
		bcache_put(dc->fs->cache, n->b);
	n->b = NULL;
}

/* Keeps the live buffer's checksum valid after a change (see top). */
static void dnode_csum(struct dctx *dc, struct dnode *n)
{
	ordfs_block_csum_set(n->b->data, dc->bs, dc->fs->csum_seed);
}

static void dpath_put(struct dctx *dc, struct dpath *p)
{
	for (uint32_t i = 0; i <= DIR_MAX_LEVEL; i++)
		dnode_put(dc, &p->node[i]);
}

static uint8_t *dpath_leaf(struct dpath *p)
{
	return p->node[p->levels].b->data;
}

/* ---- descent ------------------------------------------------------------ */

static bool in_bounds(const struct dbounds *r, uint64_t hash)
{
	return hash >= r->lo && (!r->has_hi || hash < r->hi);
}

/* Does the node respect the key range its parent gives it? */
static const char *dnode_range_problem(const uint8_t *blk, const struct dbounds *r)
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

static struct dbounds child_bounds(const uint8_t *blk, uint32_t pos, const struct dbounds *r)
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
static int dir_descend(struct dctx *dc, uint64_t hash, struct dpath *p)
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
		r = child_bounds(blk, pos, &r);
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
static int dir_find(struct dctx *dc, const char *name, size_t len, struct dpath *p,
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
static int dir_begin(struct dctx *dc, struct ordfs *fs, struct inode *dir, const char *name,
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

/* ---- lookup, replace, remove ------------------------------------------- */

int dir_lookup(struct ordfs *fs, struct inode *dir, const char *name, size_t len,
	       uint32_t *ino, uint8_t *dtype)
{
	struct dctx dc;
	struct dpath p;
	uint32_t off;

	int err = dir_begin(&dc, fs, dir, name, len);
	if (err <= 0)
		return err ? err : -ENOENT;
	err = dir_find(&dc, name, len, &p, &off);
	if (err < 0)
		return err;
	if (err == 1) {
		struct dir_entry e;
		dent_decode(dleaf_area(dpath_leaf(&p)) + off, &e);
		*ino = e.ino;
		if (dtype)
			*dtype = e.dtype;
		err = 0;
	} else {
		err = -ENOENT;
	}
	dpath_put(&dc, &p);
	return err;
}

static int check_target(const struct dctx *dc, uint32_t ino, uint8_t dtype)
{
	if (ino < ORDFS_ROOT_INO || ino > dc->max_ino || dtype > DIR_DTYPE_MAX)
		return -EINVAL;
	return 0;
}

/* Finds name for a change: 0 with the path held and write access to the
 * leaf, or -ENOENT / a negative errno with nothing held. */
static int dir_find_for_change(struct dctx *dc, struct handle *h, const char *name,
			       size_t len, struct dpath *p, uint32_t *off)
{
	int err = dir_find(dc, name, len, p, off);
	if (err < 0)
		return err;
	if (err == 0)
		err = -ENOENT;
	else
		err = journal_get_write_access(h, p->node[p->levels].b, JWA_CSUM_HDR);
	if (err)
		dpath_put(dc, p);
	return err;
}

int dir_replace(struct ordfs *fs, struct handle *h, struct inode *dir, const char *name,
		size_t len, uint32_t ino, uint8_t dtype)
{
	struct dctx dc;
	struct dpath p;
	uint32_t off;

	int err = dir_begin(&dc, fs, dir, name, len);
	if (err <= 0)
		return err ? err : -ENOENT;
	err = check_target(&dc, ino, dtype);
	if (err)
		return err;
	err = dir_find_for_change(&dc, h, name, len, &p, &off);
	if (err)
		return err;
	dleaf_set_target(dpath_leaf(&p), off, ino, dtype);
	dnode_csum(&dc, &p.node[p.levels]);
	dpath_put(&dc, &p);
	return 0;
}

int dir_remove(struct ordfs *fs, struct handle *h, struct inode *dir, const char *name,
	       size_t len, uint32_t *ino)
{
	struct dctx dc;
	struct dpath p;
	uint32_t off;

	int err = dir_begin(&dc, fs, dir, name, len);
	if (err <= 0)
		return err ? err : -ENOENT;
	err = dir_find_for_change(&dc, h, name, len, &p, &off);
	if (err)
		return err;
	uint8_t *leaf = dpath_leaf(&p);
	if (ino) {
		struct dir_entry e;
		dent_decode(dleaf_area(leaf) + off, &e);
		*ino = e.ino;
	}
	dleaf_remove(leaf, off);
	dnode_csum(&dc, &p.node[p.levels]);
	dpath_put(&dc, &p);
	return 0;
}

/* ---- growing the directory ---------------------------------------------- */

/* Appends one block at logical block nblocks: allocated near the previous
 * block, mapped, zeroed, header set, joined to h.  A block that got mapped
 * stays counted in nblocks even on failure, for dir_shrink_to. */
static int dir_append_block(struct dctx *dc, struct handle *h, uint16_t type,
			    struct dnode *out)
{
	struct ordfs *fs = dc->fs;
	uint64_t lblk = dc->nblocks, goal = 0, pblk;
	uint32_t got;
	struct buf *b;

	if (lblk >= DIR_MAX_BLOCKS)
		return -ENOSPC;
	if (lblk > 0 && dctx_map(dc, lblk - 1, &goal) == 0)
		goal++;
	int err = alloc_blocks(fs->alloc, h, goal, 1, 0, &pblk, &got);
	if (err)
		return err;
	struct ordfs_extent e = { .logical = lblk, .physical = pblk, .len = 1, .flags = 0 };
	err = extent_insert(fs, h, dc->dir, &e);
	if (err) {
		alloc_free_blocks(fs->alloc, h, pblk, 1, ALLOC_METADATA);
		return err;
	}
	dc->ext.len = 0; /* the map changed */
	dc->nblocks++;
	dc->dir->d.size += dc->bs;

	err = bcache_get_new(fs->cache, pblk, &b);
	if (err)
		return err;
	err = journal_get_write_access(h, b, JWA_CSUM_HDR);
	if (err) {
		bcache_put(fs->cache, b);
		return err;
	}
	ordfs_block_hdr_init(b->data, type, dc->dir->ino, pblk);
	out->lblk = lblk;
	out->pblk = pblk;
	out->b = b;
	return 0;
}

/* Unmaps and frees the blocks from logical block `first` on (undoes
 * dir_append_block).  If that fails, the journal is aborted: the handle's
 * transaction must not commit a directory with stray blocks. */
static void dir_shrink_to(struct dctx *dc, struct handle *h, uint64_t first)
{
	uint64_t end = dc->nblocks;
	int r;

	dc->nblocks = first;
	dc->dir->d.size = first * dc->bs;
	dc->ext.len = 0;
	do {
		r = extent_remove(dc->fs, h, dc->dir, first, end - first, DIR_UNMAP_RECORDS);
	} while (r == 1);
	if (r == 0)
		r = inode_write(dc->fs, h, dc->dir, INODE_WRITE_DATASYNC);
	if (r < 0 && dc->fs->journal)
		journal_abort(dc->fs->journal, r);
}

/* Appends n blocks of the given types.  All or nothing. */
static int dir_grow(struct dctx *dc, struct handle *h, const uint16_t *types, uint32_t n,
		    struct dnode *out)
{
	uint64_t first = dc->nblocks;
	uint32_t done;
	int err = 0;

	for (done = 0; done < n; done++) {
		err = dir_append_block(dc, h, types[done], &out[done]);
		if (err)
			break;
	}
	if (!err)
		return 0;
	for (uint32_t i = 0; i < done; i++)
		dnode_put(dc, &out[i]);
	if (dc->nblocks > first)
		dir_shrink_to(dc, h, first);
	return err;
}

/* ---- adding entries ----------------------------------------------------- */

/* First entry of a directory without blocks: block 0 becomes a leaf. */
static int dir_add_first(struct dctx *dc, struct handle *h, const struct dir_entry *e)
{
	const uint16_t type = ORDFS_BT_DIR_LEAF;
	struct dnode root;

	int err = dir_grow(dc, h, &type, 1, &root);
	if (err)
		return err;
	dleaf_insert(root.b->data, 0, e);
	dnode_csum(dc, &root);
	dnode_put(dc, &root);
	return inode_write(dc->fs, h, dc->dir, INODE_WRITE_DATASYNC);
}

static int dir_add_in_place(struct dctx *dc, struct handle *h, struct dpath *p,
			    const struct dir_entry *e, uint32_t off)
{
	struct dnode *leaf = &p->node[p->levels];

	int err = journal_get_write_access(h, leaf->b, JWA_CSUM_HDR);
	if (err)
		return err;
	dleaf_insert(leaf->b->data, off, e);
	dnode_csum(dc, leaf);
	return 0;
}

/* Which nodes a split touches: the leaf and the `splits - 1` full index
 * nodes above it split; the node above those receives one record.  If the
 * root splits too (grow), its contents first move to a new block. */
struct split_plan {
	uint32_t splits;
	bool grow;
	uint32_t new_blocks;
	uint16_t types[DIR_MAX_LEVEL + 2]; /* of the new blocks, in order */
	uint8_t *scratch;                  /* merged leaf area, then index records */
	uint32_t used;                     /* bytes of the merged area */
	uint32_t cut;                      /* where the merged area splits */
};

static int plan_split(const struct dctx *dc, const struct dpath *p, struct split_plan *sp)
{
	uint32_t cap = dindex_capacity(dc->bs);

	sp->splits = 1;
	while (sp->splits <= p->levels &&
	       dindex_count(p->node[p->levels - sp->splits].b->data) >= cap)
		sp->splits++;
	sp->grow = sp->splits > p->levels;
	if (sp->grow && p->levels >= DIR_MAX_LEVEL)
		return -ENOSPC;
	sp->new_blocks = sp->splits + (sp->grow ? 1u : 0u);
	if (dc->nblocks + sp->new_blocks > DIR_MAX_BLOCKS)
		return -ENOSPC;
	sp->types[0] = ORDFS_BT_DIR_LEAF;
	for (uint32_t i = 1; i < sp->splits; i++)
		sp->types[i] = ORDFS_BT_DIR_INDEX;
	if (sp->grow)
		sp->types[sp->splits] = p->levels ? ORDFS_BT_DIR_INDEX : ORDFS_BT_DIR_LEAF;
	return 0;
}

/* Merges the leaf's entries and e into scratch and finds the cut. */
static int plan_leaf_cut(const struct dctx *dc, struct dpath *p, const struct dir_entry *e,
			 uint32_t off, struct split_plan *sp)
{
	const uint8_t *leaf = dpath_leaf(p);
	uint32_t used = dleaf_used(leaf);

	sp->scratch = malloc(2 * (size_t)dc->bs);
	if (!sp->scratch)
		return -ENOMEM;
	memcpy(sp->scratch, dleaf_area_c(leaf), used);
	darea_insert(sp->scratch, used, off, e);
	sp->used = used + ordfs_dir_entry_size(e->namelen);
	return darea_split_point(sp->scratch, sp->used, dleaf_capacity(dc->bs), &sp->cut);
}

/* Write access to every existing node the split changes. */
static int split_get_write_access(struct handle *h, struct dpath *p,
				  const struct split_plan *sp)
{
	for (uint32_t k = 0; k <= sp->splits && k <= p->levels; k++) {
		int err = journal_get_write_access(h, p->node[p->levels - k].b, JWA_CSUM_HDR);
		if (err)
			return err;
	}
	return 0;
}

/* Moves the root's contents into the new block x and makes the root an
 * index node one level higher whose only child is x; the path then runs
 * root -> x -> (the old path below the root). */
static void root_move(struct dctx *dc, struct dpath *p, struct dnode *x)
{
	uint8_t *root = p->node[0].b->data;

	memcpy(x->b->data + ORDFS_BLOCK_HDR_SIZE, root + ORDFS_BLOCK_HDR_SIZE,
	       dc->bs - ORDFS_BLOCK_HDR_SIZE);
	ordfs_block_hdr_init(root, ORDFS_BT_DIR_INDEX, dc->dir->ino, p->node[0].pblk);
	dindex_init(root, dc->bs, p->levels + 1, 0, x->lblk);

	memmove(&p->node[2], &p->node[1], p->levels * sizeof(p->node[0]));
	memmove(&p->pos[1], &p->pos[0], p->levels * sizeof(p->pos[0]));
	bcache_hold(dc->fs->cache, x->b);
	p->node[1] = *x;
	p->pos[0] = 0;
	p->levels++;
}

/* Applies a prepared split; cannot fail. */
static void split_apply(struct dctx *dc, struct dpath *p, const struct split_plan *sp,
			struct dnode *fresh)
{
	uint32_t top = p->levels;
	uint8_t *left = p->node[top].b->data, *right = fresh[0].b->data;

	dleaf_fill(right, dc->bs, sp->scratch + sp->cut, sp->used - sp->cut);
	dleaf_set_next(right, dleaf_next(left));
	dleaf_fill(left, dc->bs, sp->scratch, sp->cut);
	dleaf_set_next(left, (uint32_t)fresh[0].lblk);

	uint64_t key = dir_bucket_start(le_get64(dleaf_area(right)));
	uint64_t child = fresh[0].lblk;
	for (uint32_t k = 1; k < sp->splits; k++) {
		uint32_t i = top - k;
		key = dindex_split_insert(p->node[i].b->data, fresh[k].b->data, dc->bs,
					  p->pos[i] + 1, key, child, sp->scratch);
		child = fresh[k].lblk;
	}
	uint32_t recv = top - sp->splits;
	dindex_insert(p->node[recv].b->data, p->pos[recv] + 1, key, child);

	for (uint32_t k = 0; k <= sp->splits; k++)
		dnode_csum(dc, &p->node[top - k]);
	for (uint32_t k = 0; k < sp->new_blocks; k++)
		dnode_csum(dc, &fresh[k]);
}

/* The leaf has no room for e: split the leaf (and full index nodes above
 * it, and the root if it is full) and insert e. */
static int dir_add_split(struct dctx *dc, struct handle *h, struct dpath *p,
			 const struct dir_entry *e, uint32_t off)
{
	struct split_plan sp = { 0 };
	struct dnode fresh[DIR_MAX_LEVEL + 2];

	memset(fresh, 0, sizeof(fresh));
	int err = plan_split(dc, p, &sp);
	if (!err)
		err = plan_leaf_cut(dc, p, e, off, &sp);
	if (!err)
		err = split_get_write_access(h, p, &sp);
	if (!err)
		err = dir_grow(dc, h, sp.types, sp.new_blocks, fresh);
	if (err)
		goto out;

	if (sp.grow)
		root_move(dc, p, &fresh[sp.splits]);
	split_apply(dc, p, &sp, fresh);
	for (uint32_t k = 0; k < sp.new_blocks; k++)
		dnode_put(dc, &fresh[k]);
	err = inode_write(dc->fs, h, dc->dir, INODE_WRITE_DATASYNC);
out:
	free(sp.scratch);
	return err;
}

int dir_add(struct ordfs *fs, struct handle *h, struct inode *dir, const char *name,
	    size_t len, uint32_t ino, uint8_t dtype)
{
	struct dctx dc;
	struct dpath p;
	uint32_t off;

	int err = dir_begin(&dc, fs, dir, name, len);
	if (err < 0)
		return err;
	bool has_blocks = err;
	err = check_target(&dc, ino, dtype);
	if (err)
		return err;
	struct dir_entry e = {
		.hash = ordfs_name_hash(fs->sb.hash_seed, name, len),
		.ino = ino,
		.dtype = dtype,
		.namelen = (uint8_t)len,
		.name = name,
	};
	if (!has_blocks)
		return dir_add_first(&dc, h, &e);

	err = dir_find(&dc, name, len, &p, &off);
	if (err < 0)
		return err;
	if (err == 1)
		err = -EEXIST;
	else if (dleaf_has_room(dpath_leaf(&p), dc.bs, e.namelen))
		err = dir_add_in_place(&dc, h, &p, &e, off);
	else
		err = dir_add_split(&dc, h, &p, &e, off);
	dpath_put(&dc, &p);
	return err;
}

/* ---- readdir ------------------------------------------------------------ */

static uint64_t cookie_of(uint64_t hash, uint32_t rank)
{
	uint64_t bucket = dir_bucket(hash);
	uint64_t slot = (uint64_t)rank + 1 + (bucket == 0 ? DIR_COOKIE_RESERVED : 0);

	if (slot > DIR_COOKIE_SLOT_MAX)
		slot = DIR_COOKIE_SLOT_MAX;
	return (bucket << DIR_COOKIE_SLOT_BITS) | slot;
}

/* Where a walk through the leaf chain stands. */
struct readdir_walk {
	uint64_t after;       /* emit entries whose cookie exceeds this */
	uint64_t last_bucket; /* bucket of the last entry seen */
	bool seen_any;
	dir_emit_fn emit;
	void *ctx;
};

/* Emits one leaf's entries past w->after.  Buckets must ascend from leaf to
 * leaf, or the chain is corrupt (and could repeat entries). */
static int readdir_leaf(const uint8_t *blk, struct readdir_walk *w)
{
	const uint8_t *area = dleaf_area_c(blk);
	uint32_t used = dleaf_used(blk), rank = 0;
	uint64_t bucket = 0;

	for (uint32_t pos = 0; pos < used; pos += dent_size(area + pos)) {
		struct dir_entry e;
		dent_decode(area + pos, &e);
		uint64_t b = dir_bucket(e.hash);
		if (pos == 0 && w->seen_any && b <= w->last_bucket)
			return -EUCLEAN;
		rank = (pos > 0 && b == bucket) ? rank + 1 : 0;
		bucket = b;
		uint64_t cookie = cookie_of(e.hash, rank);
		if (cookie <= w->after)
			continue;
		int r = w->emit(w->ctx, e.name, e.namelen, e.ino, e.dtype, cookie);
		if (r)
			return r;
	}
	if (used) {
		w->last_bucket = bucket;
		w->seen_any = true;
	}
	return 0;
}

/* The leaf holding the bucket a cookie names. */
static int readdir_first_leaf(struct dctx *dc, uint64_t cookie, struct dnode *leaf)
{
	struct dpath p;
	uint64_t hash = (cookie >> DIR_COOKIE_SLOT_BITS) << DIR_BUCKET_SHIFT;

	int err = dir_descend(dc, hash, &p);
	if (err)
		return err;
	*leaf = p.node[p.levels];
	p.node[p.levels].b = NULL;
	dpath_put(dc, &p);
	return 0;
}

int dir_readdir(struct ordfs *fs, struct inode *dir, uint64_t cookie, dir_emit_fn emit,
		void *ctx)
{
	struct readdir_walk w = { .after = cookie, .emit = emit, .ctx = ctx };
	struct dctx dc;
	struct dnode leaf = { 0 };

	int err = dctx_init(&dc, fs, dir);
	if (err)
		return err;
	if (dc.nblocks == 0 || cookie >= (1ull << 63))
		return 0;
	err = readdir_first_leaf(&dc, cookie, &leaf);
	for (uint64_t steps = 0; !err; steps++) {
		err = readdir_leaf(leaf.b->data, &w);
		uint32_t next = dleaf_next(leaf.b->data);
		dnode_put(&dc, &leaf);
		if (err || next == 0)
			break;
		if (steps >= dc.nblocks)
			return -EUCLEAN; /* a cycle in the chain */
		err = dnode_get(&dc, next, ORDFS_BT_DIR_LEAF, &leaf, NULL);
	}
	return err;
}

static int stop_at_first(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
			 uint64_t next_cookie)
{
	(void)ctx;
	(void)name;
	(void)len;
	(void)ino;
	(void)dtype;
	(void)next_cookie;
	return 1;
}

int dir_is_empty(struct ordfs *fs, struct inode *dir)
{
	int r = dir_readdir(fs, dir, 0, stop_at_first, NULL);

	if (r < 0)
		return r;
	return r == 0;
}

/* ---- freeing, credits ----------------------------------------------------- */

int dir_free_blocks(struct ordfs *fs, struct handle *h, struct inode *dir)
{
	struct dctx dc;
	int r;

	int err = dctx_init(&dc, fs, dir);
	if (err)
		return err;
	if (dc.nblocks == 0)
		return 0;
	/* An empty directory first: a failure below leaks blocks, never
	 * leaves entries a lookup could reach through a hole. */
	dir->d.size = 0;
	do {
		r = extent_remove(fs, h, dir, 0, dc.nblocks, DIR_UNMAP_RECORDS);
	} while (r == 1);
	if (r < 0)
		return r;
	return inode_write(fs, h, dir, INODE_WRITE_DATASYNC);
}

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
			v_problem(v, lblk, "entry hash does not match its name");
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
		struct dbounds c = child_bounds(blk, i, r);
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
	if (v.dc.nblocks >= fs->sb.block_count) {
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
