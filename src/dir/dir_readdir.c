/*
 * dir_readdir.c - listing a directory: dir_readdir and dir_is_empty.
 *
 * Owns: readdir cookies and the walk along the leaf chain from the leaf of
 * the bucket a cookie names.
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
 * Rules kept here:
 *  - The walk is bounded by the number of blocks (a cycle in the chain is
 *    -EUCLEAN), and buckets must ascend from leaf to leaf or the chain is
 *    corrupt (-EUCLEAN, no entry emitted twice).
 *  - Nothing here changes the directory.
 */
#include <errno.h>
#include <stdbool.h>

#include "dir.h"
#include "dir_internal.h"
#include "../fs.h"
#include "../cache/bcache.h"

#define DIR_COOKIE_SLOT_BITS 7u
#define DIR_COOKIE_SLOT_MAX 127u
#define DIR_COOKIE_RESERVED 2u     /* cookies 1 and 2 never name an entry */

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
