/*
 * truncate.c - truncate(2) of regular files (ops.h, file.h).
 *
 * Rules:
 *  - Shrinking drops the pages past the new end, zeroes the tail of the
 *    last block (growing the file later never shows old bytes) and frees
 *    the blocks inside the orphan bracket (orphan_truncate_blocks), so a
 *    crash in between is finished by the next mount.  Every block past
 *    the end goes, preallocated (KEEP_SIZE) ones too, as Linux does.
 *  - Growing only moves inode->size: a hole; d.size follows at writeback.
 */
#include <errno.h>

#include "fs.h"
#include "file.h"
#include "ops.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "journal/journal.h"
#include "lock/lock.h"
#include "orphan/orphan.h"

/* Zeroes the part of the last block past a new, smaller size so that
 * growing the file later never shows old bytes. */
static int zero_tail_of_last_block(struct ordfs *fs, struct inode *inode, uint64_t size)
{
	uint32_t in = (uint32_t)(size % fs->block_size);
	if (in == 0)
		return 0;
	return file_zero_partial(fs, inode, size / fs->block_size, in, fs->block_size);
}

int ordfs_truncate_locked(struct ordfs *fs, struct inode *inode, uint64_t size)
{
	uint32_t bs = fs->block_size;
	int err = 0;

	if (size > (1ull << 62))
		return -EFBIG;
	if (size <= inode->size) {
		/* Shrinking, or truncating to the same size: either way every
		 * block past the new end goes, preallocated (KEEP_SIZE) blocks
		 * included, as Linux's truncate does. */
		uint64_t keep_blocks = (size + bs - 1) / bs;
		err = pages_drop_range(fs, inode, keep_blocks, UINT64_MAX);
		if (!err)
			err = zero_tail_of_last_block(fs, inode, size);
		if (!err) {
			inode->size = size;
			if (inode->d.size > size)
				inode->d.size = size;
			err = orphan_truncate_blocks(fs, inode, keep_blocks);
		}
	} else if (size > inode->size) {
		inode->size = size; /* a hole; d.size follows at writeback */
	}
	if (!err) {
		struct handle *h;
		err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
		if (!err) {
			inode->d.mtime = inode->d.ctime = ordfs_now();
			if (!pages_has_dirty(inode))
				inode->d.size = inode->size;
			err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
	}
	return err;
}

int ordfs_truncate(struct ordfs *fs, struct inode *inode, uint64_t size)
{
	if (!fs->journal)
		return -EROFS;
	if ((inode->d.mode & 0170000) != 0100000)
		return -EINVAL;
	ordfs_rwlock_wrlock(&inode->lock);
	int err = ordfs_truncate_locked(fs, inode, size);
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}
