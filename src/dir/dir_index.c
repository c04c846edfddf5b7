/*
 * dir_index.c - directory index blocks.
 *
 * Owns: the byte layout of an index node's payload (format.h):
 *   24 u16 count, 26 u16 level (1 = children are leaves), 28 u32 reserved,
 *   32 records of 16 bytes: u64 key, u64 child logical block.
 *
 * Rules:
 *  - A record's key is the lowest hash its child may hold; keys are bucket
 *    starts (low DIR_BUCKET_SHIFT bits zero) and strictly increasing, and
 *    record 0's key equals the key the parent holds for this node (0 in the
 *    root).  So a hash is in child i iff key[i] <= hash < key[i + 1].
 *  - An index node has 1..capacity records; children are logical blocks
 *    1..nblocks-1 (block 0 is always the root).
 *  - dindex_problem() is the only reader of untrusted index bytes; the
 *    other functions assume a node it accepted.
 */
#include <string.h>

#include "dir_internal.h"

static uint8_t *rec_at(uint8_t *blk, uint32_t i)
{
	return blk + ORDFS_DIR_NODE_HDR + i * ORDFS_DIR_INDEX_REC;
}

static void rec_put(uint8_t *rec, uint64_t key, uint64_t child)
{
	le_put64(rec, key);
	le_put64(rec + 8, child);
}

static void set_count(uint8_t *blk, uint32_t count)
{
	le_put16(blk + DIR_INDEX_COUNT_OFF, (uint16_t)count);
}

void dindex_init(uint8_t *blk, uint32_t block_size, uint32_t level, uint64_t key,
		 uint64_t child)
{
	memset(blk + DIR_INDEX_COUNT_OFF, 0, block_size - DIR_INDEX_COUNT_OFF);
	le_put16(blk + DIR_INDEX_LEVEL_OFF, (uint16_t)level);
	rec_put(rec_at(blk, 0), key, child);
	set_count(blk, 1);
}

uint32_t dindex_search(const uint8_t *blk, uint64_t hash)
{
	uint32_t lo = 0, hi = dindex_count(blk);

	/* Invariant: key[lo] <= hash (or lo == 0), key[hi] > hash (or hi == count). */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (dindex_key(blk, mid) <= hash)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void dindex_insert(uint8_t *blk, uint32_t pos, uint64_t key, uint64_t child)
{
	uint32_t count = dindex_count(blk);
	uint8_t *at = rec_at(blk, pos);

	memmove(at + ORDFS_DIR_INDEX_REC, at, (size_t)(count - pos) * ORDFS_DIR_INDEX_REC);
	rec_put(at, key, child);
	set_count(blk, count + 1);
}

uint64_t dindex_split_insert(uint8_t *left, uint8_t *right, uint32_t block_size,
			     uint32_t pos, uint64_t key, uint64_t child, uint8_t *scratch)
{
	const uint32_t rec = ORDFS_DIR_INDEX_REC;
	uint32_t count = dindex_count(left);
	uint32_t total = count + 1;
	uint32_t nleft = (total + 1) / 2, nright = total - nleft;

	memcpy(scratch, rec_at(left, 0), (size_t)pos * rec);
	rec_put(scratch + (size_t)pos * rec, key, child);
	memcpy(scratch + (size_t)(pos + 1) * rec, rec_at(left, pos), (size_t)(count - pos) * rec);

	uint32_t level = dindex_level(left);
	memset(right + DIR_INDEX_COUNT_OFF, 0, block_size - DIR_INDEX_COUNT_OFF);
	le_put16(right + DIR_INDEX_LEVEL_OFF, (uint16_t)level);
	memcpy(rec_at(right, 0), scratch + (size_t)nleft * rec, (size_t)nright * rec);
	set_count(right, nright);

	memcpy(rec_at(left, 0), scratch, (size_t)nleft * rec);
	memset(rec_at(left, nleft), 0, block_size - ORDFS_DIR_NODE_HDR - (size_t)nleft * rec);
	set_count(left, nleft);
	return dindex_key(right, 0);
}

const char *dindex_problem(const uint8_t *blk, uint32_t block_size, uint64_t nblocks)
{
	uint32_t count = dindex_count(blk), level = dindex_level(blk);

	if (count == 0 || count > dindex_capacity(block_size))
		return "index record count out of range";
	if (level == 0 || level > DIR_MAX_LEVEL)
		return "index level out of range";
	if (le_get32(blk + DIR_INDEX_LEVEL_OFF + 2) != 0)
		return "index reserved field not zero";
	for (uint32_t i = 0; i < count; i++) {
		uint64_t key = dindex_key(blk, i), child = dindex_child(blk, i);
		if (key & DIR_BUCKET_MASK)
			return "index key is not a bucket start";
		if (i > 0 && key <= dindex_key(blk, i - 1))
			return "index keys not strictly increasing";
		if (child == 0 || child >= nblocks)
			return "index child block out of range";
	}
	return NULL;
}
