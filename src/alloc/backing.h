/*
 * backing.h - the allocator and the host space of a sparse image
 * (struct blockdev.sparse: an image file on a host filesystem).
 *
 * Owns: how the allocator learns which blocks are holes of the image (the
 * block map's hint bits, bitmap_chunks.h, filled from SEEK_DATA/SEEK_HOLE
 * when a chunk is loaded) and the host space given to blocks before they
 * are handed out (blockdev_allocate).
 *
 * Rules (alloc.c keeps them; design/allocation.md, "When the host fills up"):
 *  - A hint bit set means "may be a hole" and is never wrong the other
 *    way: a clear bit means the host backs the block.  Unknown (a walk cut
 *    short, an allocated-but-unwritten range, which SEEK_HOLE reports as a
 *    hole) counts as a hole: it costs an allocate, never a write into a
 *    hole.  Punches (discard.c) set the bits before the blocks can be
 *    allocated again; a successful allocate clears them.
 *  - Allocation prefers free blocks that are not holes: reused, they need
 *    no new host space.  Only when none is known does it take holes.
 *  - No block is handed out (data, metadata, preallocated file space) and
 *    no inode-table block gets a new inode before the host has given it
 *    its space.  So a write of the image never needs new host space (the
 *    log was given its own at mount), a full host is an ENOSPC of the
 *    operation that wanted the space, before anything is written or
 *    committed, and commits, checkpoints and replays never meet one.
 *  - While the host has room, space is asked for a window at a time
 *    (BACKING_AHEAD_BYTES of blocks around the run, BACKING_ITABLE_AHEAD
 *    inode-table blocks), so creating small files asks the host once per
 *    window, not once per file; the blocks of the window that are still
 *    free are backed then, and preferred.  While it is full, exactly what
 *    is handed out.  Hints of a window are cleared only if no punch came
 *    between the allocate and the clearing (a generation count): a block
 *    punched meanwhile is a hole again.
 *  - A device that cannot allocate (-EOPNOTSUPP) turns all of it off.
 */
#ifndef ORDFS_ALLOC_BACKING_H
#define ORDFS_ALLOC_BACKING_H

#include <stdbool.h>
#include <stdint.h>

struct blockdev;

/* SEEK_DATA/SEEK_HOLE calls one chunk's hint load may make; past them the
 * rest of the chunk counts as holes. */
#define BACKING_WALK_MAX 512u
#define BACKING_AHEAD_BYTES (256u << 10)
#define BACKING_ITABLE_AHEAD 16u
#define BACKING_ITABLE_RECENT 8u

struct backing {
	struct blockdev *bd;
	uint32_t block_size;
	uint64_t block_count;
	bool on;                 /* the device is sparse and can allocate (atomic) */
	/* alloc->lock: */
	uint64_t punch_gen;      /* moves at every punch told (alloc_note_holes) */
	struct { uint64_t first, n; } itable_recent[BACKING_ITABLE_RECENT];
	unsigned itable_next;    /* inode-table ranges given their space lately */
};

void backing_init(struct backing *b, struct blockdev *bd, uint32_t block_size,
		  uint64_t block_count);
bool backing_on(const struct backing *b);

/* chunks_config.hint_load: sets the bits of blocks [first, first + n)
 * that may be holes (ctx: the struct backing). */
void backing_load_holes(void *ctx, uint64_t first, uint32_t n, uint64_t *words);

/* Host space for blocks [start, start + n): 0 (also when the device turns
 * out not to allocate: backing goes off), -ENOSPC, or another -errno. */
int backing_allocate(struct backing *b, uint64_t start, uint64_t n);

/* The blocks to ask host space for, for the run [s, s + n): the run while
 * the host is full, else the aligned window of `ahead` blocks around it,
 * clipped to [min, max). */
void backing_window(struct backing *b, uint64_t s, uint64_t n, uint64_t ahead, uint64_t min,
		    uint64_t max, uint64_t *lo, uint64_t *hi);

/* Inode-table blocks (alloc->lock held): was blk given its space lately;
 * remember [first, first + n) as given. */
bool backing_itable_known(const struct backing *b, uint64_t blk);
void backing_itable_note(struct backing *b, uint64_t first, uint64_t n);

#endif
