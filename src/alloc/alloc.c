/*
 * alloc.c - block and inode allocation over the on-disk bitmaps.
 *
 * Owns: the in-memory block map (a bit per block: in use, claimed, or freed
 * by an uncommitted transaction), the in-memory inode map, the counters,
 * and the bits of the bitmap blocks.  See alloc.h for the rules; in short:
 * a block is handed out only when it is free on disk and its free has
 * committed [J5]; on-disk bits change only under a handle; a->lock guards
 * all of it and is taken inside a handle, outside the journal state lock.
 * On a sparse image (backing.h) claims prefer blocks the host backs, and
 * nothing is handed out before the host gave it its space: the allocate
 * is made without a->lock, the blocks claimed in memory meanwhile.
 * Bitmap block i of the block bitmap is group i's, found through
 * ordfs_block_bitmap_block (format.h: in the area, or a group bitmap block
 * past it); a group bitmap block is never a data block (in_data_area).
 * The bitmap is not trusted alone (issue 36): a block it calls free that
 * the buffer cache holds as metadata in use (known_used.h) is never handed
 * out; it leaves the map for the rest of the mount, one line names it,
 * and the disk's bit is left for fsck (design/allocation.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "backing.h"
#include "bitmap_chunks.h"
#include "known_used.h"
#include "../blockdev/blockdev.h"
#include "../cache/bcache.h"
#include "../journal/journal.h"
#include "../base/log.h"
#include "../base/ordfs_assert.h"
#include "../lock/lock.h"
#include "../super/grow.h"

struct alloc {
	struct bcache *cache;
	bool tolerant;              /* ALLOC_LOAD_TOLERANT */
	uint32_t bad_bitmap_blocks; /* tolerated checksum failures */
	uint32_t block_size;
	uint32_t csum_seed;
	uint32_t bits_per_block;
	uint64_t block_count;
	uint64_t data_start, data_end; /* allocatable: [data_start, data_end),
					  less the group bitmap blocks */
	struct ordfs_super sb;      /* the geometry: where each group's bitmap
				       block is (the block map's chunks point
				       at it) */
	uint64_t inode_bitmap_start;
	uint64_t inode_table_start;
	uint32_t inode_count;
	struct backing backing;     /* host space of a sparse image (backing.h) */

	struct ordfs_mutex lock;
	struct chunks *map;   /* block map, 1 = unavailable (bitmap_chunks.h) */
	struct chunks *imap;  /* inode map, 1 = in use (bit i = inode i + 1) */
	uint64_t map_free;    /* zero bits of map in the data area */
	uint64_t reserved;    /* delayed-allocation reservations */
	uint64_t pending_free;
	uint32_t free_inodes;
	uint64_t rotor;       /* where the last claim ended */
	uint32_t inode_rotor; /* inode number after the last one handed out */
	uint64_t meta_reserve; /* blocks only metadata may use (see available_for) */
	struct known_used *known; /* metadata the cache holds (known_used.h) */
	uint64_t refused_in_use;  /* blocks free in the bitmap but known in use */
	uint64_t refused_told;    /* ... of which alloc_take_refused told */
};

/* ---- on-disk bitmap blocks -------------------------------------------- */

static int read_bitmap_block(struct alloc *a, uint64_t blockno, enum ordfs_block_type type,
			     struct buf **out)
{
	struct buf *b;
	int err = bcache_read(a->cache, blockno, &b);
	if (err)
		return err;
	/* A buffer the journal holds may carry a stale checksum in memory (set
	 * at commit); verify only the structure of a cached one. */
	if (le_get32(b->data) != ORDFS_BLOCK_MAGIC || le_get16(b->data + 4) != type ||
	    le_get64(b->data + 16) != blockno) {
		bcache_put(a->cache, b);
		return -EUCLEAN;
	}
	*out = b;
	return 0;
}

/* Block number of bitmap block `index` of the block bitmap (group
 * `index`, wherever format.h puts it) or of the inode bitmap. */
static uint64_t bitmap_block_of(const struct alloc *a, enum ordfs_block_type type,
				uint64_t index)
{
	if (type == ORDFS_BT_BLOCK_BITMAP)
		return ordfs_block_bitmap_block(&a->sb, index);
	return a->inode_bitmap_start + index;
}

/* Sets or clears bits [first, first + n) of the bitmap of the given type,
 * under h.  expect_on: the value every bit must have now; a mismatch is
 * -EUCLEAN with nothing changed.  a->lock held. */
static int update_disk_bits(struct alloc *a, struct handle *h, enum ordfs_block_type type,
			    uint64_t first, uint64_t n, bool on)
{
	/* Check everything first so a mismatch changes nothing. */
	for (uint64_t pass = 0; pass < 2; pass++) {
		uint64_t i = first;
		while (i < first + n) {
			uint64_t blk_idx = i / a->bits_per_block;
			uint32_t bit = (uint32_t)(i % a->bits_per_block);
			uint64_t span = a->bits_per_block - bit;
			if (span > first + n - i)
				span = first + n - i;
			struct buf *b;
			int err = read_bitmap_block(a, bitmap_block_of(a, type, blk_idx), type, &b);
			if (err)
				return err;
			if (pass == 0) {
				for (uint64_t k = 0; k < span; k++) {
					if (ordfs_bitmap_bit(b->data, bit + (uint32_t)k) == on) {
						bcache_put(a->cache, b);
						return -EUCLEAN;
					}
				}
			} else {
				err = journal_get_write_access(h, b, JWA_CSUM_HDR);
				if (err) {
					bcache_put(a->cache, b);
					return err;
				}
				for (uint64_t k = 0; k < span; k++)
					ordfs_bitmap_put(b->data, bit + (uint32_t)k, on);
			}
			bcache_put(a->cache, b);
			i += span;
		}
	}
	return 0;
}

/* Extent-tree blocks the data area could need at worst: every extent one
 * block long, leaves half full; plus slack for directories; at most an
 * eighth of the data area. */
static uint64_t meta_reserve_for(uint64_t data_blocks, uint32_t block_size)
{
	uint64_t per_leaf = (block_size - ORDFS_BLOCK_HDR_SIZE - ORDFS_EXTENT_NODE_HDR) /
			    ORDFS_EXTENT_REC;
	uint64_t r = data_blocks * 2 / per_leaf + 64;
	return r < data_blocks / 8 ? r : data_blocks / 8;
}

/* ---- load ------------------------------------------------------------- */

static int load_map(struct alloc *a, enum ordfs_block_type type, uint64_t nbits,
		    uint64_t count_from, uint64_t count_to, struct chunks **out, uint64_t *free,
		    uint64_t *bad_block)
{
	bool blocks = type == ORDFS_BT_BLOCK_BITMAP;
	struct chunks_config cfg = {
		.cache = a->cache, .type = type,
		.bitmap_start = blocks ? a->sb.block_bitmap_start : a->inode_bitmap_start,
		.sb = blocks ? &a->sb : NULL, /* groups: where their blocks are */
		.block_size = a->block_size, .csum_seed = a->csum_seed, .nbits = nbits,
		.count_from = count_from, .count_to = count_to, .tolerant = a->tolerant,
	};
	/* The block map of a sparse image knows its holes (backing.h). */
	if (blocks && backing_on(&a->backing)) {
		cfg.hint_load = backing_load_holes;
		cfg.hint_ctx = &a->backing;
	}
	return chunks_create(&cfg, out, free, bad_block, &a->bad_bitmap_blocks);
}

int alloc_load(struct bcache *cache, const struct ordfs_super *sb, unsigned flags,
	       struct alloc **out, uint64_t *bad_block)
{
	struct alloc *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->tolerant = flags & ALLOC_LOAD_TOLERANT;
	a->cache = cache;
	a->block_size = ordfs_block_size(sb);
	a->csum_seed = sb->csum_seed;
	a->bits_per_block = ordfs_bits_per_bitmap_block(a->block_size);
	a->block_count = sb->block_count;
	a->data_start = sb->data_start;
	a->data_end = sb->block_count - 1; /* last block: backup superblock */
	a->sb = *sb;
	a->inode_bitmap_start = sb->inode_bitmap_start;
	a->inode_table_start = sb->inode_table_start;
	a->inode_count = sb->inode_count;
	/* Read-only (the checker's view): nothing is allocated, no holes. */
	backing_init(&a->backing, bcache_device(cache), a->block_size, a->block_count);
	if (a->tolerant)
		a->backing.on = false;
	a->rotor = a->data_start;
	a->meta_reserve = meta_reserve_for(a->data_end - a->data_start, a->block_size);
	ordfs_mutex_init(&a->lock, LOCK_ALLOC, "alloc lock");
	if (known_used_create(cache, &a->known) != 0) {
		ordfs_mutex_destroy(&a->lock);
		free(a);
		return -ENOMEM;
	}

	/* Each bitmap is read once to count it; its bits are loaded a bitmap
	 * block at a time as allocation needs them (bitmap_chunks.h). */
	uint64_t free_inodes = 0;
	int err = load_map(a, ORDFS_BT_BLOCK_BITMAP, a->block_count, a->data_start, a->data_end,
			   &a->map, &a->map_free, bad_block);
	if (!err)
		err = load_map(a, ORDFS_BT_INODE_BITMAP, a->inode_count, 0, a->inode_count,
			       &a->imap, &free_inodes, bad_block);
	if (err) {
		alloc_destroy(a);
		return err;
	}
	a->free_inodes = (uint32_t)free_inodes;
	*out = a;
	return 0;
}

uint32_t alloc_bad_bitmap_blocks(const struct alloc *a)
{
	return a->bad_bitmap_blocks;
}

void alloc_destroy(struct alloc *a)
{
	if (!a)
		return;
	chunks_destroy(a->map);
	chunks_destroy(a->imap);
	known_used_destroy(a->known);
	ordfs_mutex_destroy(&a->lock);
	free(a);
}

/* ---- blocks ------------------------------------------------------------ */

/* Free blocks not promised to delayed data. */
static uint64_t available(const struct alloc *a)
{
	return a->map_free > a->reserved ? a->map_free - a->reserved : 0;
}

/* What new data may still be promised: the metadata reserve stays back, so
 * writeback of data already accepted by write() can always allocate the
 * extent-tree blocks it needs (ext4 keeps "reserved clusters" for the same
 * reason). */
static uint64_t available_for_data(const struct alloc *a)
{
	uint64_t free = available(a);
	return free > a->meta_reserve ? free - a->meta_reserve : 0;
}


/* The first free block the host backs, from goal on and then from the
 * start (backing.h: reused blocks need no new host space); data_end if
 * none is known.  a->lock held. */
static uint64_t find_backed(struct alloc *a, uint64_t goal)
{
	/* The goal's chunk is loaded (with its hints) if it was not: the
	 * search below sees only loaded chunks. */
	(void)chunks_test(a->map, goal);
	if (chunks_unhinted_free(a->map) == 0)
		return a->data_end; /* costs nothing when there is none */
	uint64_t s = chunks_find_zero_unhinted(a->map, goal, a->data_end);
	if (s == a->data_end)
		s = chunks_find_zero_unhinted(a->map, a->data_start, goal);
	return s;
}

/* Host space for claimed blocks [s, s + n) that may be holes (backing.h),
 * with the window around them while the host has room: 0, or the claim
 * is given back and the error returned.  Called without a->lock;
 * `reserved` is what the claim took from reservations. */
static int give_host_space(struct alloc *a, uint64_t s, uint32_t n, uint64_t reserved)
{
	struct backing *b = &a->backing;
	ordfs_mutex_lock(&a->lock);
	bool holes = backing_on(b) && chunks_any_hinted(a->map, s, n);
	uint64_t gen = b->punch_gen;
	ordfs_mutex_unlock(&a->lock);
	if (!holes)
		return 0;
	uint64_t lo, hi;
	uint64_t ahead = BACKING_AHEAD_BYTES / a->block_size;
	backing_window(b, s, n, ahead, a->data_start,
		       __atomic_load_n(&a->data_end, __ATOMIC_ACQUIRE), &lo, &hi);
	int err = backing_allocate(b, lo, hi - lo);
	if (err == -ENOSPC && (lo != s || hi != s + n)) {
		lo = s; /* the window did not fit: the run alone */
		hi = s + n;
		err = backing_allocate(b, lo, hi - lo);
	}
	ordfs_mutex_lock(&a->lock);
	if (!err) {
		/* Backed now; the rest of the window only if nothing of it was
		 * punched since (it would be a hole again). */
		if (b->punch_gen == gen)
			chunks_set_hints(a->map, lo, hi - lo, false);
		else
			chunks_set_hints(a->map, s, n, false);
	} else {
		for (uint64_t i = s; i < s + n; i++)
			a->map_free += chunks_clear(a->map, i);
		a->reserved += reserved;
	}
	ordfs_mutex_unlock(&a->lock);
	return err;
}

/* Is block b, free in the map, in use all the same (known_used.h)?  Then
 * it leaves the map for the rest of the mount (its chunk stays loaded: its
 * bits differ from the disk's) and one line names it.  a->lock held. */
static bool refuse_known_used(struct alloc *a, uint64_t b)
{
	if (!known_used_block(a->known, b))
		return false;
	if (chunks_set(a->map, b))
		a->map_free--;
	a->refused_in_use++;
	ordfs_log(LOG_ERR, "block %llu is in use (cached metadata) but free in the block "
		  "bitmap: not allocated (run fsck.ordfs)", (unsigned long long)b);
	return true;
}

int alloc_claim_blocks(struct alloc *a, uint64_t goal, uint32_t want, unsigned flags,
		       uint64_t *start, uint32_t *got)
{
	if (want == 0)
		return -EINVAL;
	ordfs_mutex_lock(&a->lock);
	uint64_t limit = (flags & ALLOC_FROM_RESERVATION) ? a->map_free : available(a);
	if (limit == 0) {
		ordfs_mutex_unlock(&a->lock);
		return -ENOSPC;
	}
	if (want > limit)
		want = (uint32_t)limit;
	if (goal < a->data_start || goal >= a->data_end)
		goal = a->rotor;

	/* A block the host backs first: the run then stops at a hole. */
	uint64_t s;
	bool backed;
	do {
		s = find_backed(a, goal);
		backed = s < a->data_end;
		if (!backed)
			s = chunks_find_zero(a->map, goal, a->data_end);
		if (s == a->data_end)
			s = chunks_find_zero(a->map, a->data_start, goal);
		if (s >= a->data_end || chunks_test(a->map, s)) {
			ordfs_mutex_unlock(&a->lock);
			return -ENOSPC; /* counters said free: only if they are wrong */
		}
	} while (refuse_known_used(a, s));
	/* chunks_set is false for a bit already set: the run ends; it also
	 * ends before a block known in use (the next claim refuses it). */
	uint32_t n = 0;
	while (n < want && s + n < a->data_end && !(backed && chunks_hinted(a->map, s + n)) &&
	       (n == 0 || !known_used_block(a->known, s + n)) && chunks_set(a->map, s + n))
		n++;
	ORDFS_ASSERT(n > 0);
	a->map_free -= n;
	uint64_t took = 0;
	if (flags & ALLOC_FROM_RESERVATION) {
		took = n < a->reserved ? n : a->reserved;
		a->reserved -= took;
	}
	a->rotor = s + n < a->data_end ? s + n : a->data_start;
	ordfs_mutex_unlock(&a->lock);
	int err = give_host_space(a, s, n, took);
	if (err)
		return err;
	*start = s;
	*got = n;
	return 0;
}

void alloc_claim_free_run(struct alloc *a, uint64_t from, uint32_t max, uint64_t *start,
			  uint32_t *len)
{
	ordfs_mutex_lock(&a->lock);
	if (from < a->data_start)
		from = a->data_start;
	uint64_t s = from < a->data_end ? chunks_find_zero(a->map, from, a->data_end) : a->data_end;
	/* A discard of a block in use would lose it. */
	while (s < a->data_end && refuse_known_used(a, s))
		s = chunks_find_zero(a->map, s + 1, a->data_end);
	uint64_t spare = available(a);
	uint32_t n = 0;
	while (n < max && n < spare && s + n < a->data_end &&
	       (n == 0 || !known_used_block(a->known, s + n)) && chunks_set(a->map, s + n))
		n++;
	a->map_free -= n;
	ordfs_mutex_unlock(&a->lock);
	*start = s;
	*len = n;
}

/* A group bitmap block is metadata, never a data block: a range holding
 * one is outside the data area, as an area bitmap block is.  Called
 * without a->lock: data_end only grows (alloc_grow stores it atomically
 * under the lock), and where groups start depends only on fields a grow
 * never changes. */
static bool in_data_area(const struct alloc *a, uint64_t start, uint64_t len)
{
	uint64_t end = __atomic_load_n(&a->data_end, __ATOMIC_ACQUIRE);
	return len > 0 && start >= a->data_start && start < end && len <= end - start &&
	       !ordfs_range_has_group_start(&a->sb, start, len);
}

void alloc_unclaim_blocks(struct alloc *a, uint64_t start, uint32_t len, unsigned flags)
{
	if (!in_data_area(a, start, len))
		return;
	ordfs_mutex_lock(&a->lock);
	for (uint64_t i = start; i < start + len; i++)
		a->map_free += chunks_clear(a->map, i);
	if (flags & ALLOC_FROM_RESERVATION)
		a->reserved += len;
	known_used_note_free(a->known, start, len); /* a copy cached meanwhile is stale */
	ordfs_mutex_unlock(&a->lock);
}

int alloc_mark_blocks(struct alloc *a, struct handle *h, uint64_t start, uint32_t len)
{
	if (!in_data_area(a, start, len))
		return -EINVAL;
	ordfs_mutex_lock(&a->lock);
	int err = update_disk_bits(a, h, ORDFS_BT_BLOCK_BITMAP, start, len, true);
	ordfs_mutex_unlock(&a->lock);
	return err;
}

int alloc_unmark_blocks(struct alloc *a, struct handle *h, uint64_t start, uint32_t len)
{
	if (!in_data_area(a, start, len))
		return -EINVAL;
	ordfs_mutex_lock(&a->lock);
	int err = update_disk_bits(a, h, ORDFS_BT_BLOCK_BITMAP, start, len, false);
	ordfs_mutex_unlock(&a->lock);
	return err;
}

int alloc_blocks(struct alloc *a, struct handle *h, uint64_t goal, uint32_t want,
		 unsigned flags, uint64_t *start, uint32_t *got)
{
	int err = alloc_claim_blocks(a, goal, want, flags, start, got);
	if (err)
		return err;
	err = alloc_mark_blocks(a, h, *start, *got);
	if (err)
		alloc_unclaim_blocks(a, *start, *got, flags);
	return err;
}

int alloc_free_blocks(struct alloc *a, struct handle *h, uint64_t start, uint32_t len,
		      unsigned flags)
{
	if (!in_data_area(a, start, len))
		return -EUCLEAN;
	ordfs_mutex_lock(&a->lock);
	/* The map keeps the blocks unavailable until the free commits [J5]:
	 * its chunks are loaded before the disk's bits change. */
	int err = chunks_hold(a->map, start, len);
	if (!err) {
		err = update_disk_bits(a, h, ORDFS_BT_BLOCK_BITMAP, start, len, false);
		chunks_unhold(a->map);
	}
	if (!err)
		err = journal_add_freed(h, start, len);
	if (!err) {
		a->pending_free += len;
		known_used_note_free(a->known, start, len); /* cached copies are stale now */
	}
	ordfs_mutex_unlock(&a->lock);
	if (!err && (flags & ALLOC_METADATA)) {
		for (uint64_t i = start; i < start + len && !err; i++)
			err = journal_forget(h, i); /* [J6] */
	}
	return err;
}

void alloc_note_holes(struct alloc *a, uint64_t start, uint64_t len)
{
	if (!in_data_area(a, start, len))
		return;
	ordfs_mutex_lock(&a->lock);
	chunks_set_hints(a->map, start, len, true);
	a->backing.punch_gen++;
	ordfs_mutex_unlock(&a->lock);
}

bool alloc_sparse(struct alloc *a)
{
	return backing_on(&a->backing);
}

void alloc_release_freed(void *ctx, uint64_t start, uint32_t len)
{
	struct alloc *a = ctx;
	if (!in_data_area(a, start, len))
		return;
	ordfs_mutex_lock(&a->lock);
	for (uint64_t i = start; i < start + len; i++)
		a->map_free += chunks_clear(a->map, i);
	a->pending_free -= len < a->pending_free ? len : a->pending_free;
	ordfs_mutex_unlock(&a->lock);
}

/* While the host of a sparse image is full, can it still take nblocks
 * more of delayed data (with what is reserved already)?  Each will need a
 * free block the host backs or new host space.  The cached numbers first,
 * fresh ones before saying no (space given back a moment ago).  a->lock
 * held (the host's state takes no lock of ours). */
static bool host_takes(struct alloc *a, uint64_t nblocks)
{
	struct blockdev_host h;
	struct blockdev *bd = a->backing.bd;
	if (!backing_on(&a->backing) || blockdev_host(bd, &h, false) != 0 || !h.full)
		return true;
	for (int fresh = 0; fresh < 2; fresh++) {
		if (fresh && blockdev_host(bd, &h, true) != 0)
			return true;
		uint64_t room = h.host_free / a->block_size + chunks_unhinted_free(a->map);
		if (a->reserved + nblocks <= room)
			return true;
	}
	return false;
}

int alloc_reserve(struct alloc *a, uint64_t nblocks)
{
	int err = 0;
	bool host_refused = false;
	ordfs_mutex_lock(&a->lock);
	if (available_for_data(a) < nblocks)
		err = -ENOSPC;
	else if (!host_takes(a, nblocks))
		err = -ENOSPC, host_refused = true;
	else
		a->reserved += nblocks;
	ordfs_mutex_unlock(&a->lock);
	if (host_refused) /* as if the host said it: logged, remembered */
		blockdev_host_refused(a->backing.bd);
	return err;
}

void alloc_unreserve(struct alloc *a, uint64_t nblocks)
{
	ordfs_mutex_lock(&a->lock);
	a->reserved -= nblocks < a->reserved ? nblocks : a->reserved;
	ordfs_mutex_unlock(&a->lock);
}

uint32_t alloc_credits(const struct alloc *a, uint32_t nblocks)
{
	return nblocks / a->bits_per_block + 2;
}

/* ---- inodes ------------------------------------------------------------ */

/* Host space for the inode-table block of inode index i (inode i + 1)
 * before an inode is put there (backing.h): the checkpoint writes it home
 * later, when the host may be full.  A few blocks given their space
 * lately are remembered, so creates in a row ask once per table block.
 * Called without a->lock. */
static int give_itable_space(struct alloc *a, uint64_t i)
{
	struct backing *b = &a->backing;
	if (!backing_on(b))
		return 0;
	uint64_t blk = a->inode_table_start + i * ORDFS_INODE_SIZE / a->block_size;
	ordfs_mutex_lock(&a->lock);
	bool known = backing_itable_known(b, blk);
	ordfs_mutex_unlock(&a->lock);
	if (known)
		return 0;
	uint64_t table_end = a->inode_table_start +
			     ((uint64_t)a->inode_count * ORDFS_INODE_SIZE + a->block_size - 1) /
				     a->block_size;
	uint64_t lo, hi;
	backing_window(b, blk, 1, BACKING_ITABLE_AHEAD, a->inode_table_start, table_end, &lo,
		       &hi);
	int err = backing_allocate(b, lo, hi - lo);
	if (err == -ENOSPC && hi - lo > 1) {
		lo = blk;
		hi = blk + 1;
		err = backing_allocate(b, lo, 1);
	}
	if (!err) {
		ordfs_mutex_lock(&a->lock);
		backing_itable_note(b, lo, hi - lo);
		ordfs_mutex_unlock(&a->lock);
	}
	return err;
}

int alloc_inode(struct alloc *a, struct handle *h, uint32_t goal, uint32_t *ino)
{
	ordfs_mutex_lock(&a->lock);
	if (a->free_inodes == 0) {
		ordfs_mutex_unlock(&a->lock);
		return -ENOSPC;
	}
	if (goal < ORDFS_FIRST_INO || goal > a->inode_count)
		goal = ORDFS_FIRST_INO;
	/* The goal itself if free (keeps a directory's files together),
	 * else onwards from where the last allocation ended: scanning from
	 * the goal every time made creates O(inodes in use). */
	uint64_t from = chunks_test(a->imap, goal - 1) && a->inode_rotor > goal ? a->inode_rotor - 1
									  : goal - 1;
	uint64_t i = chunks_find_zero(a->imap, from, a->inode_count);
	if (i == a->inode_count)
		i = chunks_find_zero(a->imap, ORDFS_FIRST_INO - 1, from);
	if (i >= a->inode_count || i < ORDFS_FIRST_INO - 1 || chunks_test(a->imap, i)) {
		ordfs_mutex_unlock(&a->lock);
		return -ENOSPC;
	}
	/* Taken in memory while the host gives its table block space. */
	chunks_set(a->imap, i);
	a->free_inodes--;
	a->inode_rotor = (uint32_t)i + 2;
	ordfs_mutex_unlock(&a->lock);
	int err = give_itable_space(a, i);
	ordfs_mutex_lock(&a->lock);
	if (!err)
		err = update_disk_bits(a, h, ORDFS_BT_INODE_BITMAP, i, 1, true);
	if (err) {
		chunks_clear(a->imap, i);
		a->free_inodes++;
	} else {
		*ino = (uint32_t)i + 1;
	}
	ordfs_mutex_unlock(&a->lock);
	return err;
}

int alloc_free_inode(struct alloc *a, struct handle *h, uint32_t ino)
{
	if (ino < ORDFS_FIRST_INO || ino > a->inode_count)
		return -EUCLEAN;
	ordfs_mutex_lock(&a->lock);
	int err = update_disk_bits(a, h, ORDFS_BT_INODE_BITMAP, ino - 1, 1, false);
	if (!err) {
		chunks_clear(a->imap, ino - 1);
		a->free_inodes++;
	}
	ordfs_mutex_unlock(&a->lock);
	return err;
}

/* ---- queries ------------------------------------------------------------ */

void alloc_get_counts(struct alloc *a, struct alloc_counts *out)
{
	ordfs_mutex_lock(&a->lock);
	out->free_blocks = available(a);
	out->data_blocks = available_for_data(a);
	out->reserved_blocks = a->reserved;
	out->pending_free = a->pending_free;
	out->free_inodes = a->free_inodes;
	out->refused_in_use = a->refused_in_use;
	ordfs_mutex_unlock(&a->lock);
}

static bool disk_bit_of(struct alloc *a, enum ordfs_block_type type, uint64_t i)
{
	struct buf *b;
	if (read_bitmap_block(a, bitmap_block_of(a, type, i / a->bits_per_block), type, &b))
		return true; /* unreadable: treat as in use, never hand it out */
	bool on = ordfs_bitmap_bit(b->data, (uint32_t)(i % a->bits_per_block));
	bcache_put(a->cache, b);
	return on;
}

bool alloc_block_in_use(struct alloc *a, uint64_t blockno)
{
	ordfs_mutex_lock(&a->lock);
	if (blockno >= a->block_count) {
		ordfs_mutex_unlock(&a->lock);
		return false;
	}
	bool on = disk_bit_of(a, ORDFS_BT_BLOCK_BITMAP, blockno);
	ordfs_mutex_unlock(&a->lock);
	return on;
}

uint64_t alloc_first_unmarked(struct alloc *a, uint64_t start, uint64_t len)
{
	ordfs_mutex_lock(&a->lock);
	uint64_t found = UINT64_MAX;
	uint64_t end = start + len <= a->block_count ? start + len : a->block_count;
	for (uint64_t i = start; i < end && found == UINT64_MAX;) {
		uint64_t idx = i / a->bits_per_block;
		uint64_t stop = (idx + 1) * a->bits_per_block < end ? (idx + 1) * a->bits_per_block
								    : end;
		struct buf *b;
		if (read_bitmap_block(a, bitmap_block_of(a, ORDFS_BT_BLOCK_BITMAP, idx),
				      ORDFS_BT_BLOCK_BITMAP, &b) == 0) {
			for (; i < stop; i++)
				if (!ordfs_bitmap_bit(b->data, (uint32_t)(i % a->bits_per_block))) {
					found = i;
					break;
				}
			bcache_put(a->cache, b);
		}
		i = stop; /* an unreadable bitmap block counts as marked */
	}
	ordfs_mutex_unlock(&a->lock);
	return found;
}

uint64_t alloc_take_refused(struct alloc *a)
{
	ordfs_mutex_lock(&a->lock);
	uint64_t n = a->refused_in_use - a->refused_told;
	a->refused_told = a->refused_in_use;
	ordfs_mutex_unlock(&a->lock);
	return n;
}

bool alloc_inode_in_use(struct alloc *a, uint32_t ino)
{
	if (ino == 0 || ino > a->inode_count)
		return false;
	ordfs_mutex_lock(&a->lock);
	bool on = disk_bit_of(a, ORDFS_BT_INODE_BITMAP, ino - 1);
	ordfs_mutex_unlock(&a->lock);
	return on;
}

void alloc_set_map_limit(struct alloc *a, size_t chunks)
{
	ordfs_mutex_lock(&a->lock);
	chunks_set_max_loaded(a->map, chunks);
	chunks_set_max_loaded(a->imap, chunks);
	ordfs_mutex_unlock(&a->lock);
}

uint64_t alloc_block_count(struct alloc *a)
{
	ordfs_mutex_lock(&a->lock);
	uint64_t n = a->block_count;
	ordfs_mutex_unlock(&a->lock);
	return n;
}

int alloc_grow_mark(struct alloc *a, struct handle *h, uint64_t block_count)
{
	ordfs_mutex_lock(&a->lock);
	ORDFS_ASSERT(block_count > a->block_count);
	/* Only the bitmap blocks there are now: new groups' blocks were
	 * written whole (grow.c), with their bits as they must be. */
	uint64_t first = a->block_count - 1, end = block_count - 1;
	uint64_t existing = ordfs_grow_existing_bits(&a->sb);
	if (end > existing)
		end = existing;
	int err = update_disk_bits(a, h, ORDFS_BT_BLOCK_BITMAP, first, end - first, false);
	ordfs_mutex_unlock(&a->lock);
	return err;
}

int alloc_grow(struct alloc *a, const struct ordfs_super *grown)
{
	ordfs_mutex_lock(&a->lock);
	uint64_t block_count = grown->block_count;
	ORDFS_ASSERT(block_count > a->block_count);
	ORDFS_ASSERT(grown->block_bitmap_blocks == a->sb.block_bitmap_blocks);
	struct ordfs_super old_sb = a->sb;
	uint64_t old_count = a->block_count, old_end = a->data_end;
	/* The geometry the chunks find new groups' blocks by, and the holes
	 * the block map learns of, reach the new end. */
	a->sb.block_count = block_count;
	a->sb.feature_incompat = grown->feature_incompat;
	a->backing.block_count = block_count;
	uint64_t added;
	/* groups past what had bitmap blocks were written whole by the grow */
	uint64_t fresh_from = ordfs_grow_existing_bits(&old_sb) / a->bits_per_block;
	int err = chunks_grow(a->map, block_count, block_count - 1, fresh_from, &added);
	if (err) { /* only what changed: in_data_area reads the rest unlocked */
		a->sb.block_count = old_sb.block_count;
		a->sb.feature_incompat = old_sb.feature_incompat;
		a->backing.block_count = old_count;
	} else {
		a->block_count = block_count;
		/* The new backup superblock's block ends the data area. */
		__atomic_store_n(&a->data_end, block_count - 1, __ATOMIC_RELEASE);
		a->map_free += added;
		a->meta_reserve = meta_reserve_for(a->data_end - a->data_start, a->block_size);
		ORDFS_ASSERT(a->data_end > old_end);
	}
	ordfs_mutex_unlock(&a->lock);
	return err;
}

void alloc_get_map_use(struct alloc *a, struct alloc_map_use *out)
{
	ordfs_mutex_lock(&a->lock);
	out->block_chunks_loaded = chunks_loaded(a->map);
	out->inode_chunks_loaded = chunks_loaded(a->imap);
	out->bytes = chunks_memory(a->map) + chunks_memory(a->imap);
	ordfs_mutex_unlock(&a->lock);
}
