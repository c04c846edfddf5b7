/*
 * truncate.c - truncate(2) of regular files (ops.h, file.h).
 *
 * Rules:
 *  - Shrinking drops the pages past the new end, makes the kept last
 *    block's bytes past the new end zeros, and frees the blocks inside the
 *    orphan bracket (orphan_truncate_blocks), so a crash in between is
 *    finished by the next mount.  Every block past the end goes,
 *    preallocated (KEEP_SIZE) ones too, as Linux does.
 *  - The kept last block, when it holds bytes the size on disk still
 *    covers, is logged zeroed in the handle that lowers that size: a crash
 *    shows the file before the truncate or after it, never its data cut
 *    away while the old size still claims it.  Written in place (a page
 *    written back), the zeros could reach the disk before the truncate
 *    commits.  Otherwise only a page is zeroed (its bytes are not on the
 *    image's file yet).
 *  - Growing makes the old last block's bytes past EOF zeros first
 *    (file_zero_eof_block), then moves inode->size: a hole; d.size
 *    follows at writeback, or at once when nothing is dirty.
 *  - truncate(2) of a file flagged i or a is refused (iflags.h); with S it
 *    is durable before it returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "super/super.h"
#include "file.h"
#include "ops.h"
#include "extent/extent.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "journal/journal.h"
#include "lock/lock.h"
#include "orphan/orphan.h"

/* The new last block after a shrink to `size`: zeroes its page past size,
 * and when the block is written and the size on disk covers bytes of it
 * past size, fills *tail (its contents, zeroed past size, in `block`) for
 * the handle that lowers d.size.  *page: the block's page, if any. */
static int zero_new_tail(struct ordfs *fs, struct inode *inode, uint64_t size,
			 struct truncate_tail *tail, uint8_t *block, struct page **page)
{
	uint32_t bs = fs->block_size;
	uint32_t in = (uint32_t)(size % bs);
	uint64_t lblk = size / bs;
	*page = NULL;
	tail->data = NULL;
	if (in == 0)
		return 0;
	*page = pages_find(inode, lblk);
	if (*page)
		memset((*page)->data + in, 0, bs - in);
	if (inode->d.size <= size)
		return 0; /* nothing past size is on the image's file yet */
	struct ordfs_extent ext;
	int mapped = extent_lookup(fs, inode, lblk, &ext);
	if (mapped <= 0 || (ext.flags & ORDFS_EXT_UNWRITTEN))
		return mapped < 0 ? mapped : 0; /* a hole or a delayed page: zeros */
	int err = 0;
	if (*page)
		memcpy(block, (*page)->data, bs);
	else
		err = file_read_block(fs, inode, lblk, block);
	if (err)
		return err;
	memset(block + in, 0, bs - in);
	tail->phys = ext.physical + (lblk - ext.logical);
	tail->data = block;
	return 0;
}

static int shrink(struct ordfs *fs, struct inode *inode, uint64_t size)
{
	uint32_t bs = fs->block_size;
	uint64_t keep_blocks = (size + bs - 1) / bs;
	uint8_t *block = malloc(bs);
	if (!block)
		return -ENOMEM;
	struct truncate_tail tail;
	struct page *page;
	int err = pages_drop_range(fs, inode, keep_blocks, UINT64_MAX);
	if (!err)
		err = zero_new_tail(fs, inode, size, &tail, block, &page);
	if (!err) {
		inode->size = size;
		if (inode->d.size > size)
			inode->d.size = size;
		err = orphan_truncate_blocks(fs, inode, keep_blocks, tail.data ? &tail : NULL);
		/* The page's bytes are logged: the block's buffer holds them. */
		if (!err && tail.data && page)
			pages_remove(fs, inode, page);
	}
	free(block);
	return err;
}

int ordfs_truncate_locked(struct ordfs *fs, struct inode *inode, uint64_t size)
{
	int err = 0;

	if (size > (1ull << 62))
		return -EFBIG;
	if (size <= inode->size) {
		/* Shrinking, or truncating to the same size: either way every
		 * block past the new end goes, preallocated (KEEP_SIZE) blocks
		 * included, as Linux's truncate does. */
		err = shrink(fs, inode, size);
	} else {
		err = file_zero_eof_block(fs, inode);
		if (!err)
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
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro or aborted */
		return -EROFS;
	if ((inode->d.mode & 0170000) != 0100000)
		return -EINVAL;
	int err = ordfs_write_enter(fs); /* may dirty the EOF page */
	if (err)
		return err;
	ordfs_rwlock_wrlock(&inode->lock);
	err = iflags_refuses(inode->d.attr_flags, IFLAGS_TRUNCATE);
	bool sync = iflags_sync(inode->d.attr_flags);
	if (!err)
		err = ordfs_truncate_locked(fs, inode, size);
	ordfs_rwlock_unlock(&inode->lock);
	err = file_sync_after(fs, inode, sync, err); /* a remount,ro waits for it too */
	ordfs_write_exit(fs);
	return err;
}
