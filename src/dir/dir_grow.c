/*
 * dir_grow.c - a directory's blocks: growing the tree, and freeing it.
 *
 * Owns: appending blocks (allocated near the previous block, mapped with
 * extent_insert) and unmapping them again on failure; the first entry of a
 * directory without blocks (block 0 becomes the root leaf); the split of a
 * full leaf, of the full index nodes above it and of a full root, whose
 * contents move to a new block so the root stays at block 0; and
 * dir_free_blocks at rmdir.
 *
 * Rules kept here:
 *  - A split is planned first (which nodes split, where the leaf's entries
 *    are cut: only between buckets), then write access and new blocks are
 *    got, and only then is anything changed (split_apply cannot fail).
 *  - New blocks are all or nothing (dir_grow): on failure they are unmapped
 *    again; if even that fails the journal is aborted, so no directory with
 *    stray blocks can commit.
 *  - dir_free_blocks relies on extent_remove freeing the blocks of a
 *    directory inode (S_ISDIR) with ALLOC_METADATA, so each block is also
 *    journal_forget()-ed [J6]; extent_remove.c keeps that for directories
 *    and symlinks [E7].
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dir.h"
#include "dir_internal.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../alloc/alloc.h"
#include "../cache/bcache.h"
#include "../extent/extent.h"
#include "../journal/journal.h"

#define DIR_UNMAP_RECORDS 64u      /* extent records per extent_remove call */

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

/* ---- adding entries that need new blocks -------------------------------- */

/* First entry of a directory without blocks: block 0 becomes a leaf. */
int dir_add_first(struct dctx *dc, struct handle *h, const struct dir_entry *e)
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
int dir_add_split(struct dctx *dc, struct handle *h, struct dpath *p,
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

/* ---- freeing ------------------------------------------------------------- */

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
