/*
 * alloc.h - block and inode allocation.
 *
 * Owns: the in-memory allocation maps and the on-disk block and inode
 * bitmaps.  The on-disk bitmaps are authoritative and change only inside
 * journal handles; the superblock's free counts are advisory (recomputed
 * from the bitmaps at load, written at clean unmount).
 *
 * The in-memory block map has a bit set for every block that is in use on
 * disk, *claimed* (chosen for data that is being written but whose
 * allocation is not yet recorded, see delayed allocation in
 * design/write-routes.md), or freed by a transaction that has not committed
 * yet [J5].  So a block is handed out only if it is free on disk *and* its
 * free is durable.
 *
 * Delayed allocation: a write reserves a count of blocks (alloc_reserve),
 * so ENOSPC is reported by write(); writeback later claims concrete blocks
 * against that reservation (ALLOC_FROM_RESERVATION), writes the data [J1],
 * then records the allocation in a handle (alloc_mark_blocks).
 *
 * Locking: one mutex (alloc->lock) guards the maps, the counters and the
 * contents of the bitmap buffers.  It is taken inside a handle and outside
 * the journal's state lock.
 *
 * A sparse image (backing.h): claims prefer free blocks the host backs
 * (reused, they need no new host space), and no block or inode is handed
 * out before the host has given its space (fallocate): a full host is
 * -ENOSPC from these calls, never a failed write later.
 *
 * Design: docs/design/allocation.md.
 */
#ifndef ORDFS_ALLOC_H
#define ORDFS_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"

struct bcache;
struct handle;
struct alloc;

/* Reads both bitmaps (verifying their checksums: -EUCLEAN with the block
 * number in *bad_block on a mismatch), builds the maps and the free counts.
 * With ALLOC_LOAD_TOLERANT (the checker's read-only mount) a bitmap block
 * that fails its checksum reads as all free and is counted in
 * alloc_bad_bitmap_blocks() instead. */
#define ALLOC_LOAD_TOLERANT 0x1u
int alloc_load(struct bcache *cache, const struct ordfs_super *sb, unsigned flags,
	       struct alloc **out, uint64_t *bad_block);
uint32_t alloc_bad_bitmap_blocks(const struct alloc *a);
void alloc_destroy(struct alloc *a);

#define ALLOC_FROM_RESERVATION 0x1u /* consume blocks reserved earlier */
#define ALLOC_METADATA 0x2u         /* free: blocks held metadata (journal_forget) */

/* Claims up to `want` contiguous free blocks (at least 1), preferring the
 * first free block at or after `goal` (0 = anywhere in the data area); on
 * a sparse image the first the host backs, if one is known (the run then
 * stops at a hole), and blocks that may be holes are given host space
 * before they are returned.  The claim is in memory only: nothing on disk
 * changes.  -ENOSPC if none (or if the host has no room for them). */
int alloc_claim_blocks(struct alloc *a, uint64_t goal, uint32_t want, unsigned flags,
		       uint64_t *start, uint32_t *got);
/* For trim: claims the first free run at or after `from` (at most `max`
 * blocks, and never what reservations still need), in memory only, so
 * nothing is allocated there while it is discarded; give it back with
 * alloc_unclaim_blocks(.., 0).  *len 0: nothing (more) to claim. */
void alloc_claim_free_run(struct alloc *a, uint64_t from, uint32_t max, uint64_t *start,
			  uint32_t *len);
/* Gives back a claim that was never marked (e.g. the data write failed). */
void alloc_unclaim_blocks(struct alloc *a, uint64_t start, uint32_t len, unsigned flags);
/* Records claimed blocks as in use in the on-disk bitmap, under h. */
int alloc_mark_blocks(struct alloc *a, struct handle *h, uint64_t start, uint32_t len);
/* Undoes alloc_mark_blocks of blocks marked earlier in the SAME handle
 * (their allocation never committed): the blocks are claimed again, ready
 * for alloc_unclaim_blocks. */
int alloc_unmark_blocks(struct alloc *a, struct handle *h, uint64_t start, uint32_t len);
/* claim + mark: for metadata blocks, allocated and used inside one handle.
 * Metadata may use the metadata reserve that delayed data may not. */
int alloc_blocks(struct alloc *a, struct handle *h, uint64_t goal, uint32_t want,
		 unsigned flags, uint64_t *start, uint32_t *got);
/* Clears the blocks in the on-disk bitmap under h.  They become allocatable
 * when h's transaction commits [J5].  With ALLOC_METADATA each block is also
 * journal_forget()-ed [J6].  -EUCLEAN if a block is already free or outside
 * the data area (a group bitmap block is outside it; nothing is changed
 * then). */
int alloc_free_blocks(struct alloc *a, struct handle *h, uint64_t start, uint32_t len,
		      unsigned flags);
/* Called by the journal after a transaction commits (journal_config.release_freed). */
void alloc_release_freed(void *alloc, uint64_t start, uint32_t len);
/* The blocks [start, start + len) were punched out of the image (discard):
 * holes now, needing host space when they are handed out again.  Called
 * while nothing can allocate them (before alloc_release_freed, or while
 * trim holds them claimed). */
void alloc_note_holes(struct alloc *a, uint64_t start, uint64_t len);
/* Does the allocator look after host space (a sparse image that can
 * allocate, backing.h)? */
bool alloc_sparse(struct alloc *a);

/* Reservations for delayed allocation (counts only).  They never reach
 * into the metadata reserve: -ENOSPC first.  While the host of a sparse
 * image is full, -ENOSPC also when the host could not take the reserved
 * blocks (its free space plus the free blocks it backs), so write()
 * reports a full host as it reports a full ordfs. */
int alloc_reserve(struct alloc *a, uint64_t nblocks);
void alloc_unreserve(struct alloc *a, uint64_t nblocks);

/* Allocates a free inode number under h (marks the inode bitmap).  Prefers
 * numbers at or after goal.  -ENOSPC if none, or if the host has no room
 * for its inode-table block (a sparse image). */
int alloc_inode(struct alloc *a, struct handle *h, uint32_t goal, uint32_t *ino);
int alloc_free_inode(struct alloc *a, struct handle *h, uint32_t ino);

struct alloc_counts {
	uint64_t free_blocks;     /* free on disk and not claimed, minus reservations */
	uint64_t data_blocks;     /* what write() may still reserve (free minus the
				     metadata reserve) */
	uint64_t reserved_blocks; /* delayed-allocation reservations outstanding */
	uint64_t pending_free;    /* freed by transactions not yet committed */
	uint32_t free_inodes;
	uint64_t refused_in_use;  /* blocks free in the bitmap but known in use
				     (cached metadata), kept out since the mount */
};
void alloc_get_counts(struct alloc *a, struct alloc_counts *out);
/* Blocks refused as in use (refused_in_use) since the last call: the
 * refusal happens under a handle, where errors= cannot run, so the
 * writeback thread and unmount ask afterwards (writeback.h). */
uint64_t alloc_take_refused(struct alloc *a);

/* The bitmaps' memory (bitmap_chunks.h): chunks kept loaded at most, for
 * both maps (tests); and what the maps use now. */
void alloc_set_map_limit(struct alloc *a, size_t chunks);

/* The block count the allocator hands out blocks of (the filesystem's,
 * once an online grow has finished: alloc_grow). */
uint64_t alloc_block_count(struct alloc *a);

/* An online grow's change of the block bitmap, under h: the bits of
 * [old block_count - 1, block_count - 1) that the existing bitmap blocks
 * hold (the old backup superblock and the blocks past the old end, all
 * set now) are cleared; new groups' bitmap blocks are written whole
 * beforehand (grow.h).  The in-memory
 * map does not change (alloc_grow does, after the commit).  -EUCLEAN
 * with nothing changed if a bit is not as expected. */
int alloc_grow_mark(struct alloc *a, struct handle *h, uint64_t block_count);

/* The filesystem grew to grown (an online grow whose transaction has
 * committed: the bitmap blocks, new groups' included, hold the new bits).
 * The added blocks become allocatable; the old backup superblock's block
 * too.  -ENOMEM or an I/O error with nothing changed. */
int alloc_grow(struct alloc *a, const struct ordfs_super *grown);
struct alloc_map_use {
	size_t block_chunks_loaded, inode_chunks_loaded;
	size_t bytes;
};
void alloc_get_map_use(struct alloc *a, struct alloc_map_use *out);

/* Worst-case bitmap blocks one call can dirty, for handle credits. */
uint32_t alloc_credits(const struct alloc *a, uint32_t nblocks);

/* Tests and the checker: is block / inode marked in the on-disk bitmap? */
bool alloc_block_in_use(struct alloc *a, uint64_t blockno);
bool alloc_inode_in_use(struct alloc *a, uint32_t ino);
/* The online scrub: the first block of [start, start + len) the on-disk
 * bitmap has not marked, or UINT64_MAX (one lock, one lookup per bitmap
 * block, where alloc_block_in_use takes them per block). */
uint64_t alloc_first_unmarked(struct alloc *a, uint64_t start, uint64_t len);

#endif
