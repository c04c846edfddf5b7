/*
 * extent_node.c - one node of an extent tree: record edits, verification,
 * reading tree blocks (the layout is in extent_internal.h).
 *
 * Owns: the bytes of a single node: inserting and deleting records,
 * splitting a full node, and deciding whether a node (the root in the inode
 * or a tree block) may be trusted.  Nothing here looks past one node and
 * the key range its parent gives it, and nothing here changes the tree.
 *
 * Rules kept here:
 *  E2 Every node is verified whenever it is read, the root included: magic,
 *     max_entries, entries, depth consistent with the parent, records sorted
 *     and non-overlapping, inside the parent's key range, lengths and flags
 *     valid, blocks inside the data area; tree blocks also by block header
 *     (type, blockno, owner == inode) and by checksum when they come from
 *     the device.  Anything wrong is -EUCLEAN and nothing is changed.
 *     A block already cached is not checksummed again: the journal sets
 *     checksums in its commit copies, so a block changed in memory carries
 *     a stale one (design/journal.md, "copy at commit").  So a block that
 *     failed its checksum is refused on that read but, while it stays cached,
 *     only
 *     its structure is checked (fsck reads every block fresh).
 *     Lookups, the hot path, check a cached node's headers and only the
 *     records they use (every cached node was fully checked when read);
 *     walks and changes check every node in full.
 *  E3 Walks terminate: depth strictly decreases downward and is at most
 *     EXTENT_MAX_DEPTH, and a block reached twice fails the key-range check
 *     on one of its paths (the ranges of distinct subtrees are disjoint).
 *  Record edits work on a node the caller has write access to; they cannot
 *  fail [E4].
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "extent_internal.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../cache/bcache.h"

/* ---- record edits ---------------------------------------------------------- */

void ext_recs_insert(uint8_t *node, unsigned pos, const uint8_t *rec)
{
	unsigned n = node_entries(node);
	memmove(rec_at(node, pos + 1), rec_at(node, pos), (size_t)(n - pos) * REC);
	memcpy(rec_at(node, pos), rec, REC);
	node_set_entries(node, n + 1);
}

void ext_recs_delete(uint8_t *node, unsigned pos)
{
	unsigned n = node_entries(node);
	memmove(rec_at(node, pos), rec_at(node, pos + 1), (size_t)(n - pos - 1) * REC);
	memset(rec_at(node, n - 1), 0, REC);
	node_set_entries(node, n - 1);
}

/* Inserts rec at pos into the full node `left` (cap records) and moves the
 * upper part into the empty node `right`.  Appending at the end moves only
 * the new record, so sequential growth leaves full nodes behind. */
void ext_node_split_insert(uint8_t *left, uint8_t *right, unsigned cap, unsigned pos,
			   const uint8_t *rec)
{
	unsigned keep = pos == cap ? cap : (cap + 1) / 2; /* records left keeps */
	unsigned moved;

	if (pos < keep) {
		moved = cap - (keep - 1);
		memcpy(rec_at(right, 0), rec_at(left, keep - 1), (size_t)moved * REC);
		memmove(rec_at(left, pos + 1), rec_at(left, pos), (size_t)(keep - 1 - pos) * REC);
		memcpy(rec_at(left, pos), rec, REC);
	} else {
		unsigned before = pos - keep, after = cap - pos;
		memcpy(rec_at(right, 0), rec_at(left, keep), (size_t)before * REC);
		memcpy(rec_at(right, before), rec, REC);
		memcpy(rec_at(right, before + 1), rec_at(left, pos), (size_t)after * REC);
		moved = before + 1 + after;
	}
	memset(rec_at(left, keep), 0, (size_t)(cap - keep) * REC);
	node_set_entries(left, keep);
	node_set_entries(right, moved);
}

/* ---- verification [E2] ------------------------------------------------------ */

/* A group bitmap block (format.h) is metadata like the area before
 * data_start: an extent or tree block on it is damage, or a file write
 * would overwrite a bitmap. */
static bool in_data_area(const struct ordfs *fs, uint64_t start, uint64_t len)
{
	return ordfs_in_data_area(&fs->sb, fs_block_count(fs), start, len);
}

/* No byte of a file lies at 2^62 or past (FORMAT.md: the largest size):
 * a record mapping one is damage, whatever the size says. */
bool ext_fields_valid(const struct ordfs *fs, const struct ordfs_extent *e)
{
	uint64_t max_lblk = (1ull << 62) / fs->block_size;
	return e->len >= 1 && e->len <= ORDFS_EXT_MAX_LEN &&
	       !(e->flags & ~ORDFS_EXT_UNWRITTEN) && e->logical <= max_lblk - e->len &&
	       in_data_area(fs, e->physical, e->len);
}

/* Leaf records lie in [lo, hi), sorted, not overlapping; a non-root leaf
 * starts exactly at lo [E1]. */
static int leaf_check(const struct ordfs *fs, const uint8_t *node, bool exact_lo,
		      uint64_t lo, uint64_t hi)
{
	uint64_t free_from = lo;
	for (unsigned i = 0; i < node_entries(node); i++) {
		struct ordfs_extent e;
		ext_get(crec_at(node, i), &e);
		if (!ext_fields_valid(fs, &e) || e.logical < free_from || ext_end(&e) > hi)
			return -EUCLEAN;
		if (i == 0 && exact_lo && e.logical != lo)
			return -EUCLEAN;
		free_from = ext_end(&e);
	}
	return 0;
}

static int index_check(const struct ordfs *fs, const uint8_t *node, bool exact_lo,
		       uint64_t lo, uint64_t hi)
{
	uint64_t prev = 0;
	for (unsigned i = 0; i < node_entries(node); i++) {
		const uint8_t *r = crec_at(node, i);
		uint64_t key = rec_key(r);
		if (le_get64(r + 16) != 0 || key >= hi || !in_data_area(fs, idx_child(r), 1))
			return -EUCLEAN;
		if (i == 0 ? key < lo || (exact_lo && key != lo) : key <= prev)
			return -EUCLEAN;
		prev = key;
	}
	return 0;
}

/* The node header of a node holding cap records.  The root's depth is read
 * from it; any other node's must be want_depth. */
static int node_header_check(const uint8_t *node, unsigned cap, bool is_root,
			     unsigned want_depth)
{
	unsigned n = node_entries(node), depth = node_depth(node);

	if (le_get16(node) != ORDFS_EXTENT_MAGIC || le_get16(node + 4) != cap || n > cap)
		return -EUCLEAN;
	if (is_root ? depth > EXTENT_MAX_DEPTH : depth != want_depth)
		return -EUCLEAN;
	if (n == 0 && (!is_root || depth > 0))
		return -EUCLEAN;
	return 0;
}

/* The whole node: header and every record, which must lie in [lo, hi). */
static int node_check(const struct ordfs *fs, const uint8_t *node, unsigned cap, bool is_root,
		      unsigned want_depth, uint64_t lo, uint64_t hi)
{
	int err = node_header_check(node, cap, is_root, want_depth);
	if (err)
		return err;
	if (node_depth(node) == 0)
		return leaf_check(fs, node, !is_root, lo, hi);
	return index_check(fs, node, !is_root, lo, hi);
}

int ext_root_check(const struct ordfs *fs, const struct inode *inode)
{
	return node_check(fs, inode->d.data, ROOT_CAP, true, 0, 0, UINT64_MAX);
}

/* Block header: checksum only for a block fresh from the device [E2]. */
static int block_header_check(const struct ordfs *fs, const struct inode *inode,
			      const uint8_t *blk, uint64_t blockno, bool fresh)
{
	if (fresh) {
		if (ordfs_block_verify(blk, fs->block_size, fs->csum_seed, ORDFS_BT_EXTENT,
				       blockno))
			return -EUCLEAN;
	} else if (le_get32(blk) != ORDFS_BLOCK_MAGIC || le_get16(blk + 4) != ORDFS_BT_EXTENT ||
		   le_get64(blk + 16) != blockno) {
		return -EUCLEAN;
	}
	return ordfs_block_owner(blk) == inode->ino ? 0 : -EUCLEAN;
}

/* Returns tree block blockno, verified as a node of on-disk depth `depth`
 * whose records lie in [lo, hi): in full if it comes from the device or
 * `full` is set, else its headers only [E2]. */
int ext_tree_block_read(struct ordfs *fs, const struct inode *inode, uint64_t blockno,
			unsigned depth, uint64_t lo, uint64_t hi, bool full,
			struct buf **out)
{
	if (!in_data_area(fs, blockno, 1))
		return -EUCLEAN;
	struct buf *b = bcache_peek(fs->cache, blockno);
	bool fresh = b == NULL;
	if (fresh) {
		int err = bcache_read(fs->cache, blockno, &b);
		if (err)
			return err;
	}
	int err = block_header_check(fs, inode, b->data, blockno, fresh);
	if (!err && (fresh || full))
		err = node_check(fs, b->data + NODE_OFF, block_cap(fs), false, depth, lo, hi);
	else if (!err)
		err = node_header_check(b->data + NODE_OFF, block_cap(fs), false, depth);
	if (err) {
		bcache_put(fs->cache, b);
		return err;
	}
	*out = b;
	return 0;
}
