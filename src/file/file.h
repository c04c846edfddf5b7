/*
 * file.h - per-inode page cache with delayed allocation (internal to the
 * core; the public calls are in ops.h).
 *
 * Owns: the dirty data of regular files between write() and writeback.
 * A page is one filesystem block of one inode.  A page over a hole holds a
 * reservation of one block (alloc_reserve) until writeback allocates it,
 * writes the data and only then records the allocation in a handle [J1].
 * Pages are dropped once written back: the kernel page cache above FUSE is
 * the read cache; this one exists to delay allocation and batch writes.
 *
 * Rules: inode->lock (exclusive) guards the pages of that inode; writeback
 * of one inode never waits for another inode's data, so fsync of one file
 * writes only that file's data (plus the commit it needs).
 */
#ifndef ORDFS_FILE_H
#define ORDFS_FILE_H

#include <stdbool.h>
#include <stdint.h>

struct ordfs;
struct inode;
struct handle;

/* True if the inode has dirty pages (any lock may be held; it is a hint
 * for eviction, read under the inode cache lock). */
bool file_has_dirty(const struct inode *inode);
/* Dirty pages fs-wide past which a writer writes back its own pages. */
uint64_t file_dirty_limit_pages(const struct ordfs *fs);
/* Delayed pages (reserved, not yet allocated) of the inode. */
uint64_t file_delayed_blocks(const struct inode *inode);
/* Frees the page cache of an inode being dropped from memory. */
void file_pages_destroy(struct inode *inode);
/* Writes back every dirty page of the inode.  Caller holds inode->lock
 * exclusively and no handle.  `waited`: a caller waits for the commit
 * (fsync), so in data=ordered a little new data is logged (file.c). */
int file_writeback_locked(struct ordfs *fs, struct inode *inode, bool waited);
/* Writes back every dirty inode in the cache, each in one hold of its
 * lock (sync, unmount); `waited` as for file_writeback_locked. */
int file_writeback_all(struct ordfs *fs, bool waited);
/* The writeback thread's periodic pass: every dirty file, in slices with
 * its lock let go between them (data written meanwhile may wait for the
 * next pass). */
int file_writeback_periodic(struct ordfs *fs);
/* Dirty pages fs-wide past which the writeback thread starts early. */
uint64_t file_background_pages(const struct ordfs *fs);
/* Background writeback of the lowest max_pages dirty pages of every
 * file (one slice each). */
int file_writeback_slices(struct ordfs *fs, uint64_t max_pages);
/* The writeback thread's early pass: slices of every dirty file until
 * the dirty data is down to half the background threshold. */
int file_writeback_early(struct ordfs *fs);

/* Space management (fallocate.c).  inode->lock held exclusively, no handle,
 * unless said otherwise. */
/* The logical blocks that have pages, sorted (malloc'd; a shared lock is
 * enough). */
int file_page_blocks(struct inode *inode, uint64_t **out, uint64_t *n);
/* Drops the pages of blocks [first, end), giving back their reservations. */
int file_drop_pages(struct ordfs *fs, struct inode *inode, uint64_t first, uint64_t end);
/* Zeroes bytes [from, to) of block lblk if it holds data (a page or a
 * written block), through its page, written back like any data. */
int file_zero_partial(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint32_t from,
		      uint32_t to);
/* Gives the mapped blocks [lblk, lblk + count) extent flags `flags`
 * (extent_set_flags) in bounded handles, raising d.size to disk_size in each. */
int file_set_extent_flags(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint64_t count,
			  uint32_t flags, uint64_t disk_size, bool orders_data);
/* Unmaps (and frees) the blocks [first_lblk, first_lblk + count), a bounded
 * number of extent records per handle. */
int ordfs_unmap_range(struct ordfs *fs, struct inode *inode, uint64_t first_lblk,
		      uint64_t count);

/* Unmaps (and frees) every block from first_lblk on, a bounded number of
 * extent records per handle.  inode->lock held exclusively, no handle. */
int ordfs_unmap_from(struct ordfs *fs, struct inode *inode, uint64_t first_lblk);
/* Truncate with inode->lock held exclusively and no handle. */
int ordfs_truncate_locked(struct ordfs *fs, struct inode *inode, uint64_t size);

/* Frees an unlinked inode's blocks and the inode itself (last reference).
 * Errors are logged and leave the inode on the orphan list for the next
 * mount. */
void ordfs_inode_evict(struct ordfs *fs, struct inode *inode);
/* The orphan-list bracket of a truncate (namei.c): begin runs in the
 * handle that lowers d.size, end after the last block is freed. */
int ordfs_truncate_begin(struct ordfs *fs, struct handle *h, struct inode *inode);
int ordfs_truncate_end(struct ordfs *fs, struct inode *inode);
/* Frees every inode on the orphan list (mount, after a crash): evicts the
 * unlinked ones and finishes interrupted truncates of the others. */
int ordfs_process_orphans(struct ordfs *fs);

#endif
