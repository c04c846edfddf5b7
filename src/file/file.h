/*
 * file.h - what the file operations share inside file/ (ops layer) (the
 * public calls are in ops.h): blocks into pages (page_io.c), the write
 * path's page loop that write(2) and copy_file_range share (read_write.c)
 * and truncate with the lock held (truncate.c).
 *
 * Rules: inode->lock held exclusively and no handle held, unless said
 * otherwise.
 *
 * Design: docs/design/write-routes.md.
 */
#ifndef ORDFS_FILE_H
#define ORDFS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ordfs;
struct inode;
struct page;

/* Reads the current contents of logical block lblk (zeros for holes and
 * unwritten extents) into buf; a shared lock is enough. */
int file_read_block(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint8_t *buf);
/* Reads whole blocks from lblk (at most max) into buf, as many as lie in
 * one extent or hole with no page and no cached buffer, in one device
 * read; returns how many (>= 1) or a negative errno.  A shared lock. */
int file_read_blocks(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint32_t max,
		     uint8_t *buf);
/* Is lblk a hole as the file reads it: no page and no written block
 * (unmapped, or an unwritten extent)?  1, 0 or a negative errno; a
 * shared lock is enough. */
int file_block_is_hole(struct ordfs *fs, struct inode *inode, uint64_t lblk);
/* Finds or creates the page for lblk, loaded with the block's contents
 * unless the caller overwrites it `whole`. */
int file_page_get(struct ordfs *fs, struct inode *inode, uint64_t lblk, bool whole,
		  struct page **out);
/* Which bytes of a buffer written by file_write_locked came from holes
 * (a copy's source): byte i of the buffer lies in block (skip + i) /
 * block_size of the source's chunk, and hole[b] says whether that block
 * was a hole. */
struct file_holes {
	const bool *hole;
	size_t skip;
};
/* The write path's page loop (read_write.c), for write(2) and a copy's
 * destination alike: with the file's flags already asked, len bytes of
 * buf go into the pages from pos (the gap after EOF zeroed first,
 * file_zero_eof_block), inode->size grows to cover them, and mtime and
 * ctime move when any byte landed.  With holes, bytes from source holes
 * that land in a hole of the file are not written (the hole reads as
 * them already) but count as done.  The dirty bound is the caller's
 * (writeback_balance_dirty_locked).  Returns 0 with *done == len, or a
 * negative errno with *done the bytes that landed before it. */
int file_write_locked(struct ordfs *fs, struct inode *inode, uint64_t pos, const uint8_t *buf,
		      size_t len, const struct file_holes *holes, size_t *done);
/* Zeroes bytes [from, to) of block lblk if it holds data (a page or a
 * written block), through its page, written back like any data. */
int file_zero_partial(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint32_t from,
		      uint32_t to);
/* Before the size grows: makes the last block's bytes past EOF read as
 * zeros once the size covers them.  A written block whose bytes there are
 * not zeros on the image (a crash can leave an append there that never
 * got its size) gets a page, zeroed past EOF and written back like any
 * data; that write extends the file (writeback/route.h).  Called with
 * inode->size still the old size. */
int file_zero_eof_block(struct ordfs *fs, struct inode *inode);
/* FALLOC_FL_COLLAPSE_RANGE or FALLOC_FL_INSERT_RANGE (`mode`, alone) of
 * [off, off + len) with ext4's rules, in one handle (shift_range.c);
 * max_bytes is the largest file size. */
int file_shift_range(struct ordfs *fs, struct inode *inode, int mode, uint64_t off,
		     uint64_t len, uint64_t max_bytes);
/* truncate(2) with the lock held. */
int ordfs_truncate_locked(struct ordfs *fs, struct inode *inode, uint64_t size);
/* After an operation changed inode (err: its result): when `sync` (the
 * inode's S, or a directory's S or D for a change of its names, as seen
 * under its lock during the operation), makes it durable before it
 * returns (ordfs_fsync), as ext4 commits IS_SYNC and IS_DIRSYNC handles.
 * No lock held.  Returns err, or the fsync's failure. */
int file_sync_after(struct ordfs *fs, struct inode *inode, bool sync, int err);

#endif
