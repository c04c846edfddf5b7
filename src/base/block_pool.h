/*
 * block_pool.h - memory for blocks of one size that come and go at the
 * write rate: file data pages (struct page's bytes, inode/pages.h) and
 * the flush guard's retained copies (blockdev/guard.c).  Blocks are
 * carved from 512-block slabs mapped once and reused.
 *
 * Why not malloc: a streaming writer's pages are allocated by the request
 * threads and freed by writeback, the guard's copies made at every write
 * and dropped at every flush.  glibc gave each thread's arena its own
 * heaps and unmapped a heap as soon as it was empty, so the memory was
 * faulted in (zeroed by the kernel) again and again: page faults under
 * malloc were 45% of the daemon's CPU writing 512 MiB with an fdatasync
 * every 32 MiB (bench B2's writer, B4).
 *
 * Rules:
 *  - A slab is never unmapped before the pool is destroyed (when every
 *    block has been given back: asserted).  Memory goes back to the
 *    kernel only through block_pool_trim, a whole free slab at a time
 *    (MADV_FREE: the kernel may take it under memory pressure), and only
 *    slabs that have stayed wholly free from one call to the next, past
 *    BLOCK_POOL_RETAIN of warm free blocks.  Not at once when a slab
 *    empties: on this platform (a paravirtualised guest) touching a page
 *    given back costs a fault even when the kernel kept it, and giving
 *    memory back at every burst's end halved the streaming write rate
 *    (B4: 290 MiB/s with it, 400-720 without).
 *  - Nothing the pool needs is kept in a wholly free slab (block_pool.c),
 *    so a page the kernel dropped is never read.
 *  - Blocks are handed out from the slab most recently given a block back
 *    (warm memory first); a slab whose blocks are all free goes to the
 *    back.
 *  - pool->lock (LOCK_BLOCK_POOL) is a leaf: nothing is taken under it.
 */
#ifndef ORDFS_BASE_BLOCK_POOL_H
#define ORDFS_BASE_BLOCK_POOL_H

#include <stddef.h>
#include <stdint.h>

struct block_pool;
struct block_slab;

/* Free blocks kept warm before whole free slabs are given back. */
#define BLOCK_POOL_RETAIN (64u << 20)

/* 0, or -ENOMEM. */
int block_pool_new(uint32_t block_size, struct block_pool **out);
/* Every block must have been given back. */
void block_pool_destroy(struct block_pool *pool);

/* A block of block_size bytes (contents undefined) and the slab to give
 * it back to; NULL when memory runs out. */
void *block_pool_get(struct block_pool *pool, struct block_slab **slab);
void block_pool_put(struct block_pool *pool, struct block_slab *slab, void *block);

/* Gives the kernel the slabs wholly free since the previous call, beyond
 * BLOCK_POOL_RETAIN of warm free blocks.  Called periodically (the page
 * pool: by the writeback thread every commit interval). */
void block_pool_trim(struct block_pool *pool);

/* Blocks handed out and not given back; bytes mapped; bytes given to the
 * kernel by block_pool_trim and not taken again. */
uint64_t block_pool_in_use(struct block_pool *pool);
uint64_t block_pool_mapped_bytes(struct block_pool *pool);
uint64_t block_pool_cold_bytes(struct block_pool *pool);

#endif
