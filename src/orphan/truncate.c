/*
 * truncate.c - freeing a file's blocks past a point, crash-safely
 * (orphan.h): the truncate bracket and unmapping in bounded handles.
 *
 * Rules:
 *  - A truncate that frees blocks in several handles keeps the inode on
 *    the orphan list from the handle that lowers d.size to the last one,
 *    so a crash in between is finished by the next mount
 *    (orphan_process_list).  The handle that lowers d.size also logs the
 *    kept last block with its tail zeroed, so size and zeros are atomic.  An unlinked inode is on the list already and
 *    stays there.
 *  - Each handle removes a bounded number of extent records (as many as
 *    the journal's largest handle allows, up to 16), so a huge file never
 *    needs a huge transaction.
 *  - inode->lock held exclusively, no handle held [J8].
 */
#include <errno.h>

#include "fs.h"
#include "orphan.h"
#include "extent/extent.h"
#include "inode/inode.h"
#include "journal/journal.h"

int orphan_truncate_begin(struct ordfs *fs, struct handle *h, struct inode *inode)
{
	if (inode->d.flags & ORDFS_INODE_ORPHAN)
		return inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	return orphan_add(fs, h, inode);
}

int orphan_truncate_end(struct ordfs *fs, struct inode *inode)
{
	if (inode->d.links == 0 || !(inode->d.flags & ORDFS_INODE_ORPHAN))
		return 0;
	struct handle *h;
	int err = journal_start(fs->journal, 4, &h);
	if (err)
		return err;
	err = orphan_remove(fs, h, inode);
	if (!err)
		err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	int serr = journal_stop(h);
	return err ? err : serr;
}

int unmap_range(struct ordfs *fs, struct inode *inode, uint64_t first_lblk, uint64_t count)
{
	/* As many records per handle as the journal allows, up to 16. */
	uint32_t per_handle = extent_records_per_handle(fs, inode, 16, 1);
	for (;;) {
		struct handle *h;
		int err = journal_start(fs->journal, extent_credits(fs, inode, per_handle), &h);
		if (err)
			return err;
		int more = extent_remove(fs, h, inode, first_lblk, count, per_handle);
		int serr = journal_stop(h);
		if (more < 0)
			return more;
		if (serr)
			return serr;
		if (more == 0)
			return 0;
	}
}

int unmap_from(struct ordfs *fs, struct inode *inode, uint64_t first_lblk)
{
	return unmap_range(fs, inode, first_lblk, UINT64_MAX - first_lblk);
}

/* Writes the lowered size and puts the inode on the orphan list in one
 * handle, so a crash before the blocks are freed is finished at mount;
 * the zeroed last block (if any) goes into the same handle. */
static int truncate_lower_size(struct ordfs *fs, struct inode *inode,
			       const struct truncate_tail *tail)
{
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS + 2 + (tail ? 1 : 0), &h);
	if (err)
		return err;
	if (tail)
		err = journal_log_block(h, tail->phys, tail->data);
	if (!err)
		err = orphan_truncate_begin(fs, h, inode);
	int serr = journal_stop(h);
	return err ? err : serr;
}

int orphan_truncate_blocks(struct ordfs *fs, struct inode *inode, uint64_t keep_blocks,
			   const struct truncate_tail *tail)
{
	int err = truncate_lower_size(fs, inode, tail);
	if (!err)
		err = unmap_from(fs, inode, keep_blocks);
	if (!err)
		err = orphan_truncate_end(fs, inode);
	return err;
}
