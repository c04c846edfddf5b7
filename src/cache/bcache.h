/*
 * bcache.h - the metadata buffer cache.
 *
 * Owns: one in-memory copy ("buffer") per cached metadata block (bitmaps,
 * inode table blocks, extent, directory, xattr and symlink blocks, the
 * superblock).  File data does not live here: it lives in each inode's page
 * cache (see design/write-routes.md, "delayed allocation").
 *
 * Rules:
 *  - A buffer is returned with a reference; drop it with bcache_put().  Only
 *    buffers with no references are evicted (LRU), and the journal holds a
 *    reference on every buffer it still needs (in the running or committing
 *    transaction, or holding a committed copy not yet checkpointed), so a
 *    buffer newer than its home block is never evicted and re-read stale.
 *  - Buffer *contents* are changed only inside a journal handle, after
 *    journal_get_write_access(), and only by the thread holding the
 *    higher-level lock that owns those bytes (allocator lock for bitmaps,
 *    the inode's lock for its inode slot, extent and directory blocks).
 *    The cache itself never writes a buffer: home writes are the journal's
 *    checkpoint, which writes the committed copy, never the live one.
 *  - bcache->lock guards the hash table, LRU and reference counts; it is a
 *    leaf lock (nothing else is taken while holding it).  A buffer's io_lock
 *    serialises the first read of a block so concurrent readers read once.
 *
 * Design: docs/design/journal.md (copy at commit: pinned buffers).
 */
#ifndef ORDFS_BCACHE_H
#define ORDFS_BCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "../lock/lock.h"

struct blockdev;
struct transaction;

struct buf {
	uint64_t blockno;
	uint8_t *data; /* block_size bytes: the live contents */

	/* bcache->lock */
	uint32_t refcount;
	struct buf *hash_next;
	struct buf *lru_prev, *lru_next; /* on the LRU only while refcount == 0 */

	/* io_lock; also read without it (bcache_peek), so it is set with a
	 * release store after the data is in place */
	struct ordfs_mutex io_lock;
	bool uptodate;

	/* journal->state_lock (see journal.h) */
	struct transaction *jtx;     /* running transaction that will log it */
	bool csum_hdr;               /* common block header: csum set at commit */
	bool in_commit;              /* a copy is being written by a commit */
	uint8_t *committed;          /* newest committed copy not yet home */
	uint64_t committed_seq;      /* transaction that committed it */
	uint64_t freed_seq;          /* freed by this transaction (0 = in use) */
	struct buf *ckpt_next, *ckpt_prev; /* checkpoint list while committed */
};

struct bcache;

struct bcache_stats {
	uint64_t hits, misses, evictions;
	uint64_t cached; /* buffers currently allocated */
};

/* max_buffers bounds clean, unreferenced buffers kept for reuse; buffers the
 * journal pins do not count against it. */
int bcache_create(struct blockdev *bd, uint32_t block_size, uint64_t block_count,
		  uint32_t max_buffers, struct bcache **out);
void bcache_destroy(struct bcache *c);
/* Blocks past the old count become readable (an online grow; the count
 * only grows).  Safe while other threads use the cache. */
void bcache_grow(struct bcache *c, uint64_t block_count);

uint32_t bcache_block_size(const struct bcache *c);
/* The device under the cache: for reading long runs of blocks once (the
 * allocator's count at mount) where caching them would only evict others.
 * A block the cache holds must be read through it (it may be newer). */
struct blockdev *bcache_device(const struct bcache *c);

/* Returns the buffer for blockno, read from the device if not cached.
 * -EIO/-errno from the read leaves nothing cached; -EINVAL if blockno is
 * outside the device. */
int bcache_read(struct bcache *c, uint64_t blockno, struct buf **out);
/* A hint: brings up to BCACHE_READAHEAD_MAX blocks from start into the
 * cache, each run of blocks not yet there with one device read instead of
 * one per block (over NBD each read is a round trip).  Blocks already
 * cached are left as they are (they may be newer than the device).  A
 * failed read is not reported: bcache_read of the block tries again. */
#define BCACHE_READAHEAD_MAX 256u
void bcache_readahead(struct bcache *c, uint64_t start, uint32_t count);
/* Returns the buffer for a block the caller is about to initialise in full
 * (a freshly allocated metadata block): no read, contents zeroed. */
int bcache_get_new(struct bcache *c, uint64_t blockno, struct buf **out);
/* Returns the cached buffer for blockno with a reference, or NULL if it is
 * not cached (never reads). */
struct buf *bcache_peek(struct bcache *c, uint64_t blockno);
/* True if blockno has an up-to-date buffer (no reference taken). */
bool bcache_contains(struct bcache *c, uint64_t blockno);
/* Takes another reference on a buffer already held. */
void bcache_hold(struct bcache *c, struct buf *b);
void bcache_put(struct bcache *c, struct buf *b);

/* Drops every unreferenced buffer (tests; fsck between passes). */
void bcache_shrink(struct bcache *c);
void bcache_stats(struct bcache *c, struct bcache_stats *out);

#endif
