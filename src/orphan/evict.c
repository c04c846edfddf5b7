/*
 * evict.c - freeing unlinked inodes (orphan.h): at their last reference
 * (the inode cache's eviction hook, set by the mount) and, after a crash,
 * at the next mount (orphan_process_list).
 *
 * Rules:
 *  - The blocks go first, in bounded handles, while the inode stays on the
 *    orphan list; then one handle frees the xattr block, takes the inode
 *    off the list, zeroes its slot and frees its number.  A crash anywhere
 *    in between leaves it on the list, and the next mount finishes it.
 *  - An error leaves the inode on the list (and in the cache): it is
 *    logged and goes through errors= (ordfs_report_error).
 *  - Called with no handle held [J8], never with the inode's lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "orphan.h"
#include "alloc/alloc.h"
#include "base/log.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "journal/journal.h"
#include "lock/lock.h"
#include "xattr/xattr.h"

void orphan_evict(struct ordfs *fs, struct inode *inode)
{
	ordfs_rwlock_wrlock(&inode->lock);
	int err = 0;
	if (S_ISREG(inode->d.mode)) {
		/* Its data dies with it: pages dropped, blocks freed. */
		err = pages_drop_range(fs, inode, 0, UINT64_MAX);
		if (!err) {
			inode->size = inode->d.size = 0;
			err = orphan_truncate_blocks(fs, inode, 0, NULL);
		}
	} else if (!(inode->d.flags & ORDFS_INODE_FAST_SYMLINK)) {
		err = unmap_from(fs, inode, 0); /* directory, long symlink: metadata */
	}
	if (!err) {
		struct handle *h;
		err = journal_start(fs->journal, 8 + xattr_credits(fs), &h);
		if (!err) {
			err = xattr_free_block_locked(fs, h, inode);
			if (err && err != -EUCLEAN)
				journal_abort_half_done(fs->journal, err);
			else if (err == -EUCLEAN)
				err = 0; /* not this inode's block: leave it to fsck */
			if (!err)
				err = orphan_remove(fs, h, inode);
			if (!err) {
				/* Zero the slot before freeing the number: once the
				 * number is free a create may take it and write the
				 * same slot, which our write must never follow. */
				uint32_t gen = inode->d.generation;
				memset(&inode->d, 0, sizeof(inode->d));
				inode->d.generation = gen + 1;
				err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
			}
			if (!err)
				err = alloc_free_inode(fs->alloc, h, inode->ino);
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
	}
	ordfs_rwlock_unlock(&inode->lock);
	if (err && err != -EROFS) {
		/* The inode stays on the orphan list for the next mount. */
		ordfs_log(LOG_ERR, "could not free unlinked inode %u (%s): it stays on the "
			  "orphan list until the next mount", inode->ino, strerror(-err));
		ordfs_report_error(fs, err, "freeing an unlinked inode");
	}
}

int orphan_process_list(struct ordfs *fs)
{
	struct inode **held;
	uint32_t n;
	int err = orphan_list_load(fs, &held, &n);
	if (err)
		return err;
	for (uint32_t i = 0; i < n; i++) {
		struct inode *inode = held[i];
		if (err) {
			inode_put_flags(fs, inode, INODE_PUT_NO_EVICT);
			continue;
		}
		if (inode->d.links > 0) {
			/* A truncate interrupted by the crash: d.size is already
			 * the new size; free what lies past it, then take the
			 * inode off the list. */
			ordfs_rwlock_wrlock(&inode->lock);
			err = unmap_from(fs, inode,
					 (inode->d.size + fs->block_size - 1) / fs->block_size);
			if (!err)
				err = orphan_truncate_end(fs, inode);
			ordfs_rwlock_unlock(&inode->lock);
		}
		uint32_t ino = inode->ino;
		inode_put(fs, inode); /* links == 0: evicts */
		if (!err && orphan_head(fs) == ino)
			err = -EUCLEAN; /* eviction failed to make progress */
	}
	free(held);
	return err;
}
