/*
 * dir_ops.c - the entry operations: dir_lookup, dir_add, dir_remove,
 * dir_replace.
 *
 * Owns: finding a name's entry in its leaf (dir.c descends) and changing
 * that leaf: an entry added where it fits, removed, or pointed at another
 * inode.  An entry that does not fit, or the first entry of a directory
 * without blocks, takes new blocks: dir_add_split / dir_add_first
 * (dir_grow.c).
 *
 * Rules kept here:
 *  - Names are checked (dir_check_name) before anything is read; a target
 *    inode number must be in [ORDFS_ROOT_INO, inode_count] and a type fit
 *    DT_* (4 bits): -EINVAL.
 *  - -EEXIST / -ENOENT leave everything as it was.  Write access to the
 *    leaf comes before its change, and the live buffer's checksum is set
 *    again after it (dir.c, "Rules kept").
 */
#include <errno.h>
#include <stdbool.h>

#include "dir.h"
#include "dir_internal.h"
#include "../fs.h"
#include "../cache/bcache.h"
#include "../journal/journal.h"

#define DIR_DTYPE_MAX 15u          /* DT_* fit in 4 bits */

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

/* ---- adding ------------------------------------------------------------- */

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
