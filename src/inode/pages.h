/*
 * pages.h - the page index of a regular file: its dirty data between
 * write() and writeback, by logical block.
 *
 * Owns: struct page (one filesystem block of one inode, with its bytes)
 * and struct page_cache (a hash of an inode's pages that doubles as they
 * grow), the fs-wide count of dirty pages (fs->dirty_pages) and the
 * reservation a page over a hole holds (alloc_reserve, given back when the
 * page goes without becoming a block).  Reading blocks into pages is the
 * file operations' (file/page_io.c), writing them out the writeback layer's.
 *
 * Rules: inode->lock (exclusive) guards an inode's pages; a shared lock is
 * enough to look them up.  Pages are dropped once written back: the
 * kernel's page cache above FUSE is the read cache, this one exists to
 * delay allocation and batch writes.
 */
#ifndef ORDFS_INODE_PAGES_H
#define ORDFS_INODE_PAGES_H

#include <stdbool.h>
#include <stdint.h>

struct ordfs;
struct inode;
struct block_slab;

struct page {
	uint64_t lblk;
	bool reserved;   /* holds a block reservation (page over a hole) */
	struct page *next;
	uint8_t *data;   /* block_size bytes from fs->page_pool (base/block_pool.h) */
	struct block_slab *slab; /* ... to give them back to */
};

/* A page with its bytes (uninitialised) for block lblk, not in any index;
 * NULL without memory.  page_free gives both back. */
struct page *page_new(struct ordfs *fs, uint64_t lblk);
void page_free(struct ordfs *fs, struct page *page);

/* True if the inode has dirty pages (any lock may be held; it is a hint
 * for eviction, read under the inode cache lock). */
bool pages_has_dirty(const struct inode *inode);
/* Dirty pages of the inode. */
uint64_t pages_count(const struct inode *inode);
/* Delayed pages (reserved, not yet allocated) of the inode. */
uint64_t pages_delayed_blocks(const struct inode *inode);
/* The blocks st_blocks counts: allocated (d.blocks) and delayed. */
uint64_t pages_st_blocks(const struct inode *inode);
/* The page of lblk, or NULL. */
struct page *pages_find(struct inode *inode, uint64_t lblk);
/* Adds a filled page (no page of its block may exist), counting its
 * reservation.  -ENOMEM leaves the inode's pages as they were. */
int pages_insert(struct ordfs *fs, struct inode *inode, struct page *page);
/* Removes and frees a page, giving back its reservation if it still has
 * one. */
void pages_remove(struct ordfs *fs, struct inode *inode, struct page *page);
/* The page became the block it was reserved for. */
void pages_reservation_used(struct inode *inode, struct page *page);
/* Dirty pages of the inode, the lowest max_pages of them (by logical
 * block) sorted first, in a malloc'd array; *n is how many were
 * collected: all of them, or exactly max_pages when those were found
 * densely above the lowest page. */
int pages_collect(struct inode *inode, struct page ***out, uint64_t *n, uint64_t max_pages);
/* Drops the pages of blocks [first, end), giving back their reservations. */
int pages_drop_range(struct ordfs *fs, struct inode *inode, uint64_t first, uint64_t end);
/* The logical blocks that have pages, sorted (malloc'd). */
int pages_blocks(struct inode *inode, uint64_t **out, uint64_t *n);
/* Frees the pages of an inode being dropped from memory (no reservation
 * is given back: the whole fs is going, or the pages were dropped). */
void pages_destroy(struct inode *inode);

#endif
