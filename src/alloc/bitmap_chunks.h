/*
 * bitmap_chunks.h - the allocator's in-memory view of one on-disk bitmap,
 * loaded a bitmap block at a time, so that memory follows use and not the
 * size of the image.
 *
 * Owns: one "chunk" per bitmap block: its free count (always in memory,
 * 16 bytes per chunk) and, while loaded, its bits.  A set bit means
 * unavailable: in use on disk, or claimed, or freed by a transaction that
 * has not committed (alloc.c decides; this file only keeps the bits).
 *
 * Rules:
 *  - Every call is made with the allocator's lock held.
 *  - Chunk ci's bitmap block is found through cfg.sb (the block bitmap:
 *    ordfs_block_bitmap_block) or is bitmap_start + ci (the inode
 *    bitmap); nothing else here knows where bitmap blocks are.
 *  - A chunk is loaded from the bitmap block's buffer (through the buffer
 *    cache, so it sees changes made under handles that have not been
 *    written home yet) when a bit of it is first needed.
 *  - At most max_loaded chunks stay loaded (more while held: chunks_hold).
 *    A chunk is dropped only when
 *    its bits equal its bitmap block's current bits (nothing claimed and
 *    not marked, nothing freed and not released): loading it again gives
 *    the same bits.  Chunks that differ stay, however many there are.
 *  - A chunk that cannot be read (I/O error, damaged block after mount)
 *    reads as all in use with no free bits: nothing is handed out of it.
 *    At load time (chunks_create) a damaged block fails, or with
 *    `tolerant` reads as all free, as the whole-map loader did.
 *  - Free counts cover only the bits in [count_from, count_to) (the data
 *    area for blocks).
 *  - Hint bits (optional, cfg.hint_load): a second bit per bit, loaded
 *    with the chunk by the callback and lost when it is dropped (the
 *    callback is the truth; the bits only save asking it).  The block map
 *    uses them for "a hole of the image" (alloc.c).  A chunk's count of
 *    bits clear in both arrays is kept while it is loaded, and their sum
 *    over loaded chunks, so a search for such a bit costs nothing when
 *    there is none.  Loaded chunks then hold both arrays, inside the same
 *    memory bound.
 */
#ifndef ORDFS_ALLOC_BITMAP_CHUNKS_H
#define ORDFS_ALLOC_BITMAP_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../format/format.h"

struct bcache;
struct chunks;

struct chunks_config {
	struct bcache *cache;
	uint64_t bitmap_start;       /* first bitmap block (the inode bitmap) */
	/* The block bitmap: chunk ci is group ci, its block where
	 * ordfs_block_bitmap_block(sb, ci) says (in the area from
	 * block_bitmap_start, or a group bitmap block past it), checked with
	 * ordfs_block_bitmap_verify.  NULL (the inode bitmap): chunk ci's
	 * block is bitmap_start + ci.  Must outlive the chunks. */
	const struct ordfs_super *sb;
	enum ordfs_block_type type;  /* ORDFS_BT_BLOCK_BITMAP or _INODE_BITMAP */
	uint32_t block_size;
	uint32_t csum_seed;
	uint64_t nbits;
	uint64_t count_from, count_to;
	size_t max_loaded;           /* chunks kept loaded (0: a default) */
	bool tolerant;
	/* Optional: fills the hint bits of bits [first, first + n) (words
	 * zeroed before; set a bit for "hinted").  Called with the lock the
	 * callers hold; may do I/O. */
	void (*hint_load)(void *ctx, uint64_t first, uint32_t n, uint64_t *words);
	void *hint_ctx;
};

/* Reads every bitmap block once to count its free bits (keeping none of
 * them loaded).  *bad_block: the first block that failed its checksum;
 * *bad_count: how many (tolerant). */
int chunks_create(const struct chunks_config *cfg, struct chunks **out, uint64_t *free_bits,
		  uint64_t *bad_block, uint32_t *bad_count);
void chunks_destroy(struct chunks *m);

/* The bit's value (loads its chunk; an unreadable chunk reads as set). */
bool chunks_test(struct chunks *m, uint64_t i);
/* Set / clear one bit; returns whether it changed (false also when its
 * chunk cannot be read). */
bool chunks_set(struct chunks *m, uint64_t i);
bool chunks_clear(struct chunks *m, uint64_t i);
/* The first clear bit in [from, to), or `to`.  Skips chunks with no free
 * bit in the counted range without loading them. */
uint64_t chunks_find_zero(struct chunks *m, uint64_t from, uint64_t to);

/* With hints: the first bit in [from, to) clear in the map and not
 * hinted, among loaded chunks (unloaded ones are skipped: their hints are
 * unknown), or `to`.  How many such bits the loaded chunks hold. */
uint64_t chunks_find_zero_unhinted(struct chunks *m, uint64_t from, uint64_t to);
uint64_t chunks_unhinted_free(const struct chunks *m);
/* Is bit i hinted?  Without hints, never; with them, also when its chunk
 * is not loaded (unknown counts as hinted). */
bool chunks_hinted(struct chunks *m, uint64_t i);
/* Is any bit of [first, first + n) hinted (or in an unloaded chunk)? */
bool chunks_any_hinted(struct chunks *m, uint64_t first, uint64_t n);
/* Sets (on) or clears the hint bits of [first, first + n) in loaded
 * chunks; unloaded chunks get theirs from hint_load when loaded. */
void chunks_set_hints(struct chunks *m, uint64_t first, uint64_t n, bool on);

/* Loads the chunks of bits [first, first + n) and keeps every loaded
 * chunk until chunks_unhold: for a change of the on-disk bits that the map
 * must not follow (a freed block stays unavailable until its free
 * commits), the map's chunks must be in memory before the disk's bits
 * change, or a later load would read the new bits.  -EIO if one cannot be
 * read (then nothing is held). */
int chunks_hold(struct chunks *m, uint64_t first, uint64_t n);
void chunks_unhold(struct chunks *m);

/* The bitmap grew (an online grow, src/mount/grow_online.c): it now has
 * nbits bits, counted up to count_to (neither smaller than before).  The
 * bitmap blocks of the new bits already hold their bits on disk (through
 * the buffer cache): a loaded chunk takes the newly counted bits from its
 * block, the others' gains are counted from their blocks, but for new
 * chunks from fresh_from on, blocks the grow wrote whole (their first bit
 * set, the rest of the counted range clear), which are counted without a
 * read.  *added: the clear bits the newly counted range brought.  -ENOMEM
 * with nothing changed, or -EIO/-EUCLEAN from a block (then the map is as
 * before). */
int chunks_grow(struct chunks *m, uint64_t nbits, uint64_t count_to, uint64_t fresh_from,
		uint64_t *added);

/* Sets max_loaded and drops what it can down to it (tests: a small limit
 * makes every path drop and load chunks again). */
void chunks_set_max_loaded(struct chunks *m, size_t n);

/* Chunks loaded now, and the bytes the map uses (for tests and stats). */
size_t chunks_loaded(const struct chunks *m);
size_t chunks_memory(const struct chunks *m);

#endif
