/*
 * dir_leaf.c - directory leaf blocks: entries and their sorted area.
 *
 * Owns: the byte layout of a leaf's payload (format.h, "directories"):
 *   24 u16 count, 26 u16 used bytes of the entry area, 28 u32 next leaf,
 *   32 entries: 0 u64 hash, 8 u32 inode, 12 u8 file type, 13 u8 name
 *      length, 14 name; each entry padded with zeroes to a multiple of 8.
 *
 * Rules:
 *  - Entries are strictly sorted by (hash, name bytes, name length); so a
 *    name occurs at most once and the entries of one bucket are adjacent.
 *  - Functions that take an area trust it only after darea_problem() (or
 *    dleaf_problem()) said it is sound; those two are the only readers of
 *    untrusted bytes and never read past `used` or the block.
 *  - Nothing here allocates or does I/O: pure byte manipulation.
 */
#include <errno.h>
#include <string.h>

#include "dir_internal.h"

#define DENT_HASH_OFF 0u
#define DENT_INO_OFF 8u
#define DENT_TYPE_OFF 12u
#define DENT_NAMELEN_OFF 13u
#define DENT_NAME_OFF ORDFS_DIR_ENTRY_FIXED

/* ---- single entries ------------------------------------------------------ */

int dent_cmp(uint64_t ha, const char *na, size_t la, uint64_t hb, const char *nb, size_t lb)
{
	if (ha != hb)
		return ha < hb ? -1 : 1;
	int c = memcmp(na, nb, la < lb ? la : lb);
	if (c)
		return c;
	return (la > lb) - (la < lb);
}

uint32_t dent_size(const uint8_t *e)
{
	return ordfs_dir_entry_size(e[DENT_NAMELEN_OFF]);
}

void dent_decode(const uint8_t *e, struct dir_entry *out)
{
	out->hash = le_get64(e + DENT_HASH_OFF);
	out->ino = le_get32(e + DENT_INO_OFF);
	out->dtype = e[DENT_TYPE_OFF];
	out->namelen = e[DENT_NAMELEN_OFF];
	out->name = (const char *)(e + DENT_NAME_OFF);
}

void dent_encode(uint8_t *e, const struct dir_entry *in)
{
	uint32_t size = ordfs_dir_entry_size(in->namelen);

	le_put64(e + DENT_HASH_OFF, in->hash);
	le_put32(e + DENT_INO_OFF, in->ino);
	e[DENT_TYPE_OFF] = in->dtype;
	e[DENT_NAMELEN_OFF] = in->namelen;
	memcpy(e + DENT_NAME_OFF, in->name, in->namelen);
	memset(e + DENT_NAME_OFF + in->namelen, 0, size - DENT_NAME_OFF - in->namelen);
}

/* Compares a key with the entry at e. */
static int dent_cmp_key(uint64_t hash, const char *name, size_t len, const uint8_t *e)
{
	struct dir_entry d;

	dent_decode(e, &d);
	return dent_cmp(hash, name, len, d.hash, d.name, d.namelen);
}

/* ---- entry areas --------------------------------------------------------- */

int darea_find(const uint8_t *area, uint32_t used, uint64_t hash, const char *name,
	       size_t len, uint32_t *off)
{
	uint32_t pos = 0;

	while (pos < used) {
		/* Hashes decide almost always; names only on equal hashes. */
		uint64_t h = le_get64(area + pos + DENT_HASH_OFF);
		if (h > hash)
			break;
		if (h == hash) {
			int c = dent_cmp_key(hash, name, len, area + pos);
			if (c == 0) {
				*off = pos;
				return 1;
			}
			if (c < 0)
				break;
		}
		pos += dent_size(area + pos);
	}
	*off = pos;
	return 0;
}

void darea_insert(uint8_t *area, uint32_t used, uint32_t off, const struct dir_entry *e)
{
	uint32_t size = ordfs_dir_entry_size(e->namelen);

	memmove(area + off + size, area + off, used - off);
	dent_encode(area + off, e);
}

uint32_t darea_remove(uint8_t *area, uint32_t used, uint32_t off)
{
	uint32_t size = dent_size(area + off);

	memmove(area + off, area + off + size, used - off - size);
	memset(area + used - size, 0, size);
	return used - size;
}

uint32_t darea_count(const uint8_t *area, uint32_t used)
{
	uint32_t n = 0;

	for (uint32_t pos = 0; pos < used; pos += dent_size(area + pos))
		n++;
	return n;
}

static uint32_t larger(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

int darea_split_point(const uint8_t *area, uint32_t used, uint32_t cap, uint32_t *cut)
{
	uint32_t best = 0, best_score = UINT32_MAX;
	uint32_t prev = 0;

	/* Each boundary lies between the entry at prev and the one at pos. */
	for (uint32_t pos = dent_size(area); pos < used;
	     prev = pos, pos += dent_size(area + pos)) {
		uint64_t left_bucket = dir_bucket(le_get64(area + prev + DENT_HASH_OFF));
		uint64_t right_bucket = dir_bucket(le_get64(area + pos + DENT_HASH_OFF));
		if (left_bucket == right_bucket)
			continue;
		if (pos > cap || used - pos > cap)
			continue;
		uint32_t score = larger(pos, used - pos);
		if (score < best_score) {
			best_score = score;
			best = pos;
		}
	}
	if (best == 0)
		return -ENOSPC;
	*cut = best;
	return 0;
}

const char *darea_problem(const uint8_t *area, uint32_t used, uint32_t count,
			  uint32_t max_ino)
{
	struct dir_entry prev = { 0 }, cur;
	uint32_t pos = 0, n = 0;

	while (pos < used) {
		if (used - pos < ORDFS_DIR_ENTRY_FIXED)
			return "entry header runs past the used bytes";
		dent_decode(area + pos, &cur);
		if (cur.namelen == 0)
			return "entry with an empty name";
		if (ordfs_dir_entry_size(cur.namelen) > used - pos)
			return "entry runs past the used bytes";
		if (cur.ino < ORDFS_ROOT_INO || cur.ino > max_ino)
			return "entry inode number out of range";
		if (n > 0 && dent_cmp(prev.hash, prev.name, prev.namelen, cur.hash, cur.name,
				      cur.namelen) >= 0)
			return "entries out of order or duplicated";
		prev = cur;
		n++;
		pos += ordfs_dir_entry_size(cur.namelen);
	}
	if (n != count)
		return "entry count does not match the entries";
	return NULL;
}

/* ---- leaf blocks ---------------------------------------------------------- */

void dleaf_fill(uint8_t *blk, uint32_t block_size, const uint8_t *area, uint32_t used)
{
	uint8_t *dst = dleaf_area(blk);

	memmove(dst, area, used);
	memset(dst + used, 0, dleaf_capacity(block_size) - used);
	le_put16(blk + DIR_LEAF_USED_OFF, (uint16_t)used);
	le_put16(blk + DIR_LEAF_COUNT_OFF, (uint16_t)darea_count(dst, used));
}

void dleaf_insert(uint8_t *blk, uint32_t off, const struct dir_entry *e)
{
	uint32_t used = dleaf_used(blk);

	darea_insert(dleaf_area(blk), used, off, e);
	le_put16(blk + DIR_LEAF_USED_OFF, (uint16_t)(used + ordfs_dir_entry_size(e->namelen)));
	le_put16(blk + DIR_LEAF_COUNT_OFF, (uint16_t)(dleaf_count(blk) + 1));
}

void dleaf_remove(uint8_t *blk, uint32_t off)
{
	uint32_t used = darea_remove(dleaf_area(blk), dleaf_used(blk), off);

	le_put16(blk + DIR_LEAF_USED_OFF, (uint16_t)used);
	le_put16(blk + DIR_LEAF_COUNT_OFF, (uint16_t)(dleaf_count(blk) - 1));
}

void dleaf_set_target(uint8_t *blk, uint32_t off, uint32_t ino, uint8_t dtype)
{
	uint8_t *e = dleaf_area(blk) + off;

	le_put32(e + DENT_INO_OFF, ino);
	e[DENT_TYPE_OFF] = dtype;
}

const char *dleaf_problem(const uint8_t *blk, uint32_t block_size, uint32_t max_ino)
{
	uint32_t used = dleaf_used(blk);

	if (used > dleaf_capacity(block_size))
		return "leaf used bytes exceed the block";
	if (used % 8u)
		return "leaf used bytes not a multiple of 8";
	return darea_problem(dleaf_area_c(blk), used, dleaf_count(blk), max_ino);
}

bool dleaf_hash_range(const uint8_t *blk, uint64_t *first, uint64_t *last)
{
	const uint8_t *area = dleaf_area_c(blk);
	uint32_t used = dleaf_used(blk), pos = 0, prev = 0;

	if (used == 0)
		return false;
	while (pos < used) {
		prev = pos;
		pos += dent_size(area + pos);
	}
	*first = le_get64(area + DENT_HASH_OFF);
	*last = le_get64(area + prev + DENT_HASH_OFF);
	return true;
}
