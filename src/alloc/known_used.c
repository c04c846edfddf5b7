/*
 * known_used.c - the allocator's check of a block the bitmap calls free
 * against the buffer cache (known_used.h).
 *
 * Owns: the set of blocks freed while their buffer was cached (an open
 * addressing hash set of block numbers, 0 = empty slot; data blocks are
 * never 0).  Rules: see known_used.h; the set is pruned to the blocks
 * still cached whenever it would grow, so it follows the cache's size,
 * not the number of frees.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "known_used.h"
#include "../cache/bcache.h"
#include "../format/format.h"

struct known_used {
	struct bcache *cache;
	uint64_t *slot; /* cap slots, 0 = empty */
	size_t cap, n;
	bool off;       /* a free could not be remembered: answer "no" only */
};

#define KNOWN_USED_MIN_CAP 256u

int known_used_create(struct bcache *cache, struct known_used **out)
{
	struct known_used *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->cache = cache;
	*out = k;
	return 0;
}

void known_used_destroy(struct known_used *k)
{
	if (!k)
		return;
	free(k->slot);
	free(k);
}

static size_t hash_of(uint64_t b, size_t cap)
{
	return (size_t)((b * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static bool set_has(const struct known_used *k, uint64_t b)
{
	if (!k->cap)
		return false;
	for (size_t i = hash_of(b, k->cap);; i = (i + 1) & (k->cap - 1)) {
		if (k->slot[i] == b)
			return true;
		if (k->slot[i] == 0)
			return false;
	}
}

static void set_put(uint64_t *slot, size_t cap, uint64_t b)
{
	size_t i = hash_of(b, cap);
	while (slot[i] != 0 && slot[i] != b)
		i = (i + 1) & (cap - 1);
	slot[i] = b;
}

/* Rebuilds the set with cap slots, keeping only blocks still cached. */
static int rebuild(struct known_used *k, size_t cap)
{
	uint64_t *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < k->cap; i++) {
		if (k->slot[i] && bcache_contains(k->cache, k->slot[i])) {
			set_put(slot, cap, k->slot[i]);
			n++;
		}
	}
	free(k->slot);
	k->slot = slot;
	k->cap = cap;
	k->n = n;
	return 0;
}

/* Room for one more (the set at most half full): at half full it is
 * pruned to what is still cached, and doubled if that is over a quarter
 * (so pruning costs O(1) a free, amortised). */
static int make_room(struct known_used *k)
{
	if (k->cap && (k->n + 1) * 2 <= k->cap)
		return 0;
	size_t cap = k->cap ? k->cap : KNOWN_USED_MIN_CAP;
	int err = rebuild(k, cap);
	if (!err && (k->n + 1) * 4 > cap)
		err = rebuild(k, cap * 2);
	return err;
}

void known_used_note_free(struct known_used *k, uint64_t start, uint64_t len)
{
	for (uint64_t b = start; b < start + len && !k->off; b++) {
		if (b == 0 || !bcache_contains(k->cache, b) || set_has(k, b))
			continue;
		if (make_room(k) != 0) {
			k->off = true; /* never call a freed block in use */
			break;
		}
		set_put(k->slot, k->cap, b);
		k->n++;
	}
}

bool known_used_block(struct known_used *k, uint64_t blockno)
{
	if (k->off || !bcache_contains(k->cache, blockno) || set_has(k, blockno))
		return false;
	struct buf *b = bcache_peek(k->cache, blockno);
	if (!b)
		return false;
	/* Only the header's fixed fields: nobody writes them after the block
	 * is set up (the checksum, bytes 8..11, is not read). */
	uint16_t type = le_get16(b->data + 4);
	bool meta = le_get32(b->data) == ORDFS_BLOCK_MAGIC && le_get64(b->data + 16) == blockno &&
		    (type == ORDFS_BT_EXTENT || type == ORDFS_BT_DIR_LEAF ||
		     type == ORDFS_BT_DIR_INDEX || type == ORDFS_BT_XATTR);
	bcache_put(k->cache, b);
	return meta;
}
