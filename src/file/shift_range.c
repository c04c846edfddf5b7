/*
 * shift_range.c - FALLOC_FL_COLLAPSE_RANGE and FALLOC_FL_INSERT_RANGE
 * (fallocate.c dispatches here after the checks Linux's vfs_fallocate
 * makes).
 *
 * Owns: ext4's rules for the two modes, and carrying them out.
 *  - offset and length are multiples of the block size (-EINVAL);
 *    collapse: offset + length below the size (a range reaching EOF is a
 *    truncate: -EINVAL); insert: offset below the size (-EINVAL), the new
 *    size at most the largest file (-EFBIG).  Checked under the inode's
 *    lock, where the size cannot move, before anything changes.
 *  - Collapse unmaps [offset, offset + length) and moves every later
 *    record left by length; insert cuts the record that crosses offset
 *    and moves every record from offset on right by length, leaving a
 *    hole.  Blocks past EOF (preallocated) move with the rest; unwritten
 *    extents stay unwritten (extent_shift, E9).  The size moves by length.
 *  - Atomic: the file's dirty pages are written back first (the page
 *    index is keyed by logical block and is empty during the shift, as
 *    ext4 writes back and drops the page cache from offset on), so d.size
 *    equals the size; then the unmap or the cut, the shift, the new size
 *    and the times go into ONE handle.  After a power cut the file has its
 *    old shape or its new one, never a half-shifted tree; a step that
 *    fails after an earlier one changed the tree aborts the journal
 *    (journal_abort_half_done), so the half never commits.  A shift whose
 *    handle would need more blocks than the journal's largest handle is
 *    refused with -ENOSPC before anything changes (jbd2's answer to a
 *    handle larger than its journal allows); with the default journal
 *    that is a file of tens of thousands of extents past offset.
 *  - Bytes a size change exposes: none.  The last block keeps its offset
 *    inside the block, so its bytes past EOF are the ones that were past
 *    EOF before; the inserted range is a hole.
 *  - inode->lock held exclusively, no handle held [J8]; with data=journal
 *    or the j flag the data written back sits in logged buffers, keyed by
 *    physical block, which a shift does not move.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/falloc.h>

#include "fs.h"
#include "file.h"
#include "base/ordfs_assert.h"
#include "extent/extent.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "journal/journal.h"
#include "writeback/writeback.h"

/* ext4's checks of the range against the file, with the lock held. */
static int shift_check(const struct ordfs *fs, const struct inode *inode, int mode,
		       uint64_t off, uint64_t len, uint64_t max_bytes)
{
	uint32_t bs = fs->block_size;
	if (off % bs != 0 || len % bs != 0)
		return -EINVAL;
	if (mode == FALLOC_FL_COLLAPSE_RANGE)
		return off + len >= inode->size ? -EINVAL : 0;
	if (len > max_bytes - inode->size)
		return -EFBIG;
	return off >= inode->size ? -EINVAL : 0;
}

/* The file's pages are written back: nothing of it waits in the page index
 * and the size on disk is the size. */
static int settle_pages(struct ordfs *fs, struct inode *inode)
{
	int err = writeback_file_locked(fs, inode, false);
	if (err)
		return err;
	ORDFS_ASSERT(pages_count(inode) == 0 && inode->d.size == inode->size);
	return 0;
}

/* The credits of one shift handle that first changes `records` records;
 * -ENOSPC when the journal cannot hold it. */
static int shift_credits(struct ordfs *fs, struct inode *inode, uint64_t start,
			 uint32_t records, uint32_t *credits)
{
	uint32_t shift;
	int err = extent_shift_credits(fs, inode, start, &shift);
	if (err)
		return err;
	uint64_t total = (uint64_t)extent_credits(fs, inode, records) + shift +
			 INODE_WRITE_CREDITS;
	if (total > journal_max_credits(fs->journal))
		return -ENOSPC;
	*credits = (uint32_t)total;
	return 0;
}

/* The new size and the times, in the shift's handle. */
static int shift_finish(struct ordfs *fs, struct handle *h, struct inode *inode,
			uint64_t size)
{
	inode->size = inode->d.size = size;
	inode->d.mtime = inode->d.ctime = ordfs_now();
	return inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
}

/* Unmaps [first, first + count) in the open handle, one record change per
 * call, so *changed says whether a failure comes after a change. */
static int unmap_in_handle(struct ordfs *fs, struct handle *h, struct inode *inode,
			   uint64_t first, uint64_t count, uint32_t steps, bool *changed)
{
	int more = steps > 0;
	for (uint32_t i = 0; i < steps && more == 1; i++) {
		more = extent_remove(fs, h, inode, first, count, 1);
		*changed |= more >= 0;
	}
	ORDFS_ASSERT(more <= 0); /* the steps counted are all it takes [E5] */
	return more < 0 ? more : more > 0 ? -EIO : 0;
}

/* Ends the shift's handle.  A failure after the tree changed aborts the
 * journal, so half a shift never commits. */
static int shift_stop(struct ordfs *fs, struct handle *h, bool changed, int err)
{
	if (err && changed)
		journal_abort_half_done(fs->journal, err);
	int serr = journal_stop(h);
	return err ? err : serr;
}

static int collapse(struct ordfs *fs, struct inode *inode, uint64_t off, uint64_t len)
{
	uint32_t bs = fs->block_size;
	uint64_t first = off / bs, count = len / bs;
	uint32_t steps, credits;
	int err = extent_remove_steps(fs, inode, first, count, &steps);
	if (!err)
		err = shift_credits(fs, inode, first + count, steps, &credits);
	struct handle *h;
	if (!err)
		err = journal_start(fs->journal, credits, &h);
	if (err)
		return err;
	bool changed = false;
	err = unmap_in_handle(fs, h, inode, first, count, steps, &changed);
	if (!err)
		err = extent_shift(fs, h, inode, first + count, -(int64_t)count);
	changed |= !err; /* extent_shift changes all or nothing (E4) */
	if (!err)
		err = shift_finish(fs, h, inode, inode->size - len);
	return shift_stop(fs, h, changed, err);
}

static int insert(struct ordfs *fs, struct inode *inode, uint64_t off, uint64_t len)
{
	uint32_t bs = fs->block_size;
	uint64_t first = off / bs, count = len / bs;
	uint32_t credits;
	int err = shift_credits(fs, inode, first, 2, &credits);
	struct handle *h;
	if (!err)
		err = journal_start(fs->journal, credits, &h);
	if (err)
		return err;
	/* A record cut in two maps the same blocks: the file is unchanged. */
	err = extent_split_at(fs, h, inode, first);
	if (!err)
		err = extent_shift(fs, h, inode, first, (int64_t)count);
	bool changed = !err;
	if (!err)
		err = shift_finish(fs, h, inode, inode->size + len);
	return shift_stop(fs, h, changed, err);
}

int file_shift_range(struct ordfs *fs, struct inode *inode, int mode, uint64_t off,
		     uint64_t len, uint64_t max_bytes)
{
	ORDFS_ASSERT(mode == FALLOC_FL_COLLAPSE_RANGE || mode == FALLOC_FL_INSERT_RANGE);
	int err = shift_check(fs, inode, mode, off, len, max_bytes);
	if (!err)
		err = settle_pages(fs, inode);
	if (err)
		return err;
	if (mode == FALLOC_FL_COLLAPSE_RANGE)
		return collapse(fs, inode, off, len);
	return insert(fs, inode, off, len);
}
