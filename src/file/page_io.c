/*
 * page_io.c - moving block contents into pages (file.h): reading a block
 * as the file sees it, and the page a write or a partial zeroing fills.
 *
 * Rules:
 *  - A page over a hole reserves one block as it is made (ENOSPC is
 *    reported by write, never lost at writeback); a page over an
 *    unwritten block starts from zeros.
 *  - Reads of mapped blocks look in the metadata cache first: with data
 *    logged (data=journal, or data=ordered's small fsyncs, or a block
 *    with a cached buffer) the newest contents may not be home yet.
 *  - A page never carries bytes past EOF from an old life of its block,
 *    and before the size grows, the last block's bytes past EOF are made
 *    zeros (file_zero_eof_block): on the image they may hold what a crash
 *    left there.
 *  - inode->lock held exclusively to make pages, shared to read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "base/ordfs_assert.h"
#include "file.h"
#include "alloc/alloc.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "extent/extent.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "orphan/enospc.h"

/* Reads the current contents of logical block lblk (zeros for holes and
 * unwritten extents) into buf. */
int file_read_block(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint8_t *buf)
{
	struct ordfs_extent ext;
	int found = extent_lookup(fs, inode, lblk, &ext);
	if (found < 0)
		return found;
	if (!found || (ext.flags & ORDFS_EXT_UNWRITTEN)) {
		memset(buf, 0, fs->block_size);
		return 0;
	}
	uint64_t phys = ext.physical + (lblk - ext.logical);
	/* The newest contents may be logged and not yet home. */
	struct buf *b = bcache_peek(fs->cache, phys);
	if (b) {
		memcpy(buf, b->data, fs->block_size);
		bcache_put(fs->cache, b);
		return 0;
	}
	return blockdev_read(fs->bd, buf, fs->block_size, phys * fs->block_size);
}

int file_block_is_hole(struct ordfs *fs, struct inode *inode, uint64_t lblk)
{
	if (pages_find(inode, lblk))
		return 0;
	struct ordfs_extent ext;
	int found = extent_lookup(fs, inode, lblk, &ext);
	if (found < 0)
		return found;
	return !found || (ext.flags & ORDFS_EXT_UNWRITTEN);
}

/* Does the metadata cache hold a buffer for block phys (whose contents,
 * logged and maybe not home yet, are then the newest)? */
static bool block_cached(struct ordfs *fs, uint64_t phys)
{
	struct buf *b = bcache_peek(fs->cache, phys);
	if (b)
		bcache_put(fs->cache, b);
	return b != NULL;
}

/* Whole blocks lblk.. (at most max) read into buf: the run of one extent
 * (or hole) that has no page and no cached buffer, in one device read.
 * Returns the number of blocks read (>= 1) or a negative errno. */
int file_read_blocks(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint32_t max,
		     uint8_t *buf)
{
	ORDFS_ASSERT(max >= 1);
	struct ordfs_extent ext;
	int found = extent_lookup(fs, inode, lblk, &ext);
	if (found < 0)
		return found;
	uint64_t in_extent = ext.logical + ext.len - lblk;
	uint32_t run = in_extent < max ? (uint32_t)in_extent : max;
	bool zeros = !found || (ext.flags & ORDFS_EXT_UNWRITTEN);
	uint64_t phys = ext.physical + (lblk - ext.logical);
	/* The run ends before the next block whose newest contents are
	 * elsewhere: a page (the caller found none for lblk) or, for mapped
	 * blocks, a cached buffer. */
	for (uint32_t i = 0; i < run; i++) {
		if ((i > 0 && pages_find(inode, lblk + i)) ||
		    (!zeros && block_cached(fs, phys + i))) {
			run = i;
			break;
		}
	}
	if (run == 0) { /* lblk itself is cached: file_read_block reads it there */
		int err = file_read_block(fs, inode, lblk, buf);
		return err ? err : 1;
	}
	if (zeros) {
		memset(buf, 0, (size_t)run * fs->block_size);
		return (int)run;
	}
	int err = blockdev_read(fs->bd, buf, (size_t)run * fs->block_size, phys * fs->block_size);
	return err ? err : (int)run;
}

int file_page_get(struct ordfs *fs, struct inode *inode, uint64_t lblk, bool whole,
		    struct page **out)
{
	struct page *page = pages_find(inode, lblk);
	if (page) {
		*out = page;
		return 0;
	}
	/* Not zeroed: a whole-page write overwrites it, a mapped block is
	 * read into it whole, and only a page over a hole starts from zeros
	 * (zeroing every page was 6% of the daemon's time creating small
	 * files, bench/results/2026-12-04_profile). */
	page = page_new(fs, lblk);
	if (!page)
		return -ENOMEM;

	struct ordfs_extent ext;
	int mapped = extent_lookup(fs, inode, lblk, &ext);
	int err = mapped < 0 ? mapped : 0;
	if (!err && mapped == 0) {
		unsigned retries = 0;
		do
			err = alloc_reserve(fs->alloc, 1);
		while (ordfs_should_retry_alloc(fs, err, &retries));
		page->reserved = !err;
	}
	if (!err && !whole && mapped == 1)
		err = file_read_block(fs, inode, lblk, page->data);
	else if (!err && !whole)
		memset(page->data, 0, fs->block_size);
	if (err) {
		page_free(fs, page);
		return err;
	}
	/* Never let bytes past EOF from an old life of the block through. */
	uint64_t block_start = lblk * fs->block_size;
	if (inode->size < block_start + fs->block_size) {
		uint64_t keep = inode->size > block_start ? inode->size - block_start : 0;
		memset(page->data + keep, 0, fs->block_size - keep);
	}
	err = pages_insert(fs, inode, page);
	if (err) {
		if (page->reserved)
			alloc_unreserve(fs->alloc, 1);
		page_free(fs, page);
		return err;
	}
	*out = page;
	return 0;
}

int file_zero_partial(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint32_t from,
		      uint32_t to)
{
	struct page *page = pages_find(inode, lblk);
	if (!page) {
		struct ordfs_extent ext;
		int mapped = extent_lookup(fs, inode, lblk, &ext);
		if (mapped <= 0 || (ext.flags & ORDFS_EXT_UNWRITTEN))
			return mapped < 0 ? mapped : 0; /* reads as zeros already */
		int err = file_page_get(fs, inode, lblk, false, &page);
		if (err)
			return err;
	}
	memset(page->data + from, 0, to - from);
	return 0;
}

int file_zero_eof_block(struct ordfs *fs, struct inode *inode)
{
	uint32_t bs = fs->block_size;
	uint32_t in = (uint32_t)(inode->size % bs);
	uint64_t lblk = inode->size / bs;
	if (in == 0 || pages_find(inode, lblk))
		return 0; /* no partial block, or a page: zeros past EOF already */
	struct ordfs_extent ext;
	int mapped = extent_lookup(fs, inode, lblk, &ext);
	if (mapped <= 0 || (ext.flags & ORDFS_EXT_UNWRITTEN))
		return mapped < 0 ? mapped : 0; /* reads as zeros */
	uint8_t *block = malloc(bs);
	if (!block)
		return -ENOMEM;
	int err = file_read_block(fs, inode, lblk, block);
	bool zeros = true;
	for (uint32_t i = in; !err && i < bs && zeros; i++)
		zeros = block[i] == 0;
	free(block);
	struct page *page;
	if (!err && !zeros)
		err = file_page_get(fs, inode, lblk, false, &page); /* zeroed past EOF */
	return err;
}
