/*
 * copy_range.c - copy_file_range(2) inside one image (ops.h,
 * ordfs_copy_range): the source's bytes go into the destination's pages
 * without leaving the daemon.
 *
 * Rules:
 *  - The copy is a write of the destination made from the source's
 *    current contents: each chunk goes through the write path's own page
 *    loop (file_write_locked, read_write.c: file_page_get, which reserves
 *    a block for a page over a hole, the gap after EOF, size, mtime and
 *    ctime) and from there the write routes of writeback/
 *    (design/write-routes.md, "Write routes"), so data=ordered, data=journal and a file's j flag
 *    keep their rules for the new blocks exactly as for write(2), and the
 *    dirty-data bound holds (writeback_balance_dirty_locked per chunk).
 *    What is this file's own: the checks, the source read and its holes.
 *  - Read the source under its shared lock into a chunk buffer, then
 *    write the destination under its exclusive lock: never both locks at
 *    once, so no lock order between two inodes is needed, and a copy
 *    within one file takes the same path.
 *  - Bytes that come from holes in the source (blocks with no page,
 *    unmapped or unwritten) and land in a hole of the destination are
 *    not written: the hole stays, and reads as the zeros copied.  Over
 *    the destination's data they are written as zeros, as a read/write
 *    copy would write them.
 *  - As the kernel's generic checks (generic_copy_file_checks): ranges
 *    overlapping in one file are -EINVAL, a copy from at or past the
 *    source's EOF copies nothing, one running past it stops there (a
 *    short count), a position plus length that wraps is -EOVERFLOW, a
 *    destination end past the largest file size -EFBIG.  The
 *    destination's flags are asked as for a write at off_out (iflags.h:
 *    i and a refuse it, -EPERM), set-ID bits are left to the caller
 *    (ordfs_drop_privs), mtime/ctime move when bytes were copied, and
 *    with S on the destination the copy is durable before it returns.
 *  - Each chunk leaves the destination whole: a failure after some
 *    chunks returns the bytes copied so far, as a short write does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "base/ordfs_assert.h"
#include "file.h"
#include "ops.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "lock/lock.h"
#include "writeback/writeback.h"

/* The source is read and the destination written this many blocks at a
 * time (1 MiB at 4 KiB blocks): large device reads, a short hold of each
 * lock. */
#define COPY_CHUNK_BLOCKS 256u

/* One chunk of the source: whole blocks first..first+nblocks, and which
 * of them are holes (no page, no written extent). */
struct copy_chunk {
	uint64_t first;
	uint32_t nblocks;
	uint8_t *data; /* nblocks * block_size */
	bool hole[COPY_CHUNK_BLOCKS];
};

/* Reads the chunk's blocks of src (shared lock held) into c->data and
 * marks its holes.  Runs of written blocks go in one device read. */
static int chunk_read(struct ordfs *fs, struct inode *src, struct copy_chunk *c)
{
	uint32_t bs = fs->block_size;
	uint32_t i = 0;
	while (i < c->nblocks) {
		uint64_t lblk = c->first + i;
		uint8_t *out = c->data + (size_t)i * bs;
		struct page *page = pages_find(src, lblk);
		if (page) { /* the newest bytes, maybe not on the image yet */
			memcpy(out, page->data, bs);
			c->hole[i++] = false;
			continue;
		}
		int hole = file_block_is_hole(fs, src, lblk);
		if (hole < 0)
			return hole;
		c->hole[i] = hole;
		if (hole) {
			memset(out, 0, bs);
			i++;
			continue;
		}
		/* A written block with no page: its extent's run, up to the next
		 * page or cached buffer, in one read. */
		int n = file_read_blocks(fs, src, lblk, c->nblocks - i, out);
		if (n < 0)
			return n;
		for (int k = 1; k < n; k++)
			c->hole[i + (uint32_t)k] = false; /* a run of one extent: data */
		i += (uint32_t)n;
	}
	return 0;
}

/* Reads up to want bytes of src from pos into the chunk; *got: how many
 * (0 at or past EOF).  Takes and drops src's shared lock. */
static int source_read(struct ordfs *fs, struct inode *src, uint64_t pos, size_t want,
		       struct copy_chunk *c, size_t *got)
{
	uint32_t bs = fs->block_size;
	*got = 0;
	ordfs_rwlock_rdlock(&src->lock);
	int err = 0;
	if (pos < src->size) {
		uint64_t avail = src->size - pos;
		size_t n = avail < want ? (size_t)avail : want;
		c->first = pos / bs;
		c->nblocks = (uint32_t)((pos % bs + n + bs - 1) / bs);
		ORDFS_ASSERT(c->nblocks <= COPY_CHUNK_BLOCKS);
		err = chunk_read(fs, src, c);
		if (!err)
			*got = n;
	}
	ordfs_rwlock_unlock(&src->lock);
	return err;
}

/* May the copy's bytes go into dst under its flags (a write at off, not
 * an append: i and a refuse it)?  dst->lock held. */
static int destination_allowed(struct inode *dst)
{
	return iflags_refuses(dst->d.attr_flags, IFLAGS_WRITE);
}

/* One chunk into dst at pos (n bytes of its data from byte `skip`): flags
 * asked, bytes written by the write path's loop with the chunk's holes,
 * the dirty bound kept.  Returns the bytes copied or a negative errno. */
static ssize_t chunk_write(struct ordfs *fs, struct inode *dst, uint64_t pos,
			   const struct copy_chunk *c, size_t skip, size_t n, bool *sync)
{
	ORDFS_ASSERT(skip + n <= (size_t)c->nblocks * fs->block_size); /* bytes the chunk holds */
	struct file_holes holes = { .hole = c->hole, .skip = skip };
	size_t done = 0;
	ordfs_rwlock_wrlock(&dst->lock);
	int err = destination_allowed(dst);
	*sync = iflags_sync(dst->d.attr_flags);
	if (!err)
		err = file_write_locked(fs, dst, pos, c->data + skip, n, &holes, &done);
	/* Past the dirty limit the copier writes back its own pages. */
	int werr = writeback_balance_dirty_locked(fs, dst);
	if (werr && !err && done == 0)
		err = werr;
	ordfs_rwlock_unlock(&dst->lock);
	return done > 0 ? (ssize_t)done : err;
}

/* The kernel's checks that need no lock: types, wrap-around, size, and
 * overlap within one file. */
static int copy_args_valid(struct inode *src, uint64_t off_in, struct inode *dst,
			   uint64_t off_out, size_t len)
{
	if (S_ISDIR(src->d.mode) || S_ISDIR(dst->d.mode))
		return -EISDIR;
	if (!S_ISREG(src->d.mode) || !S_ISREG(dst->d.mode))
		return -EINVAL;
	if (off_in + len < off_in || off_out + len < off_out || off_in > INT64_MAX ||
	    off_out > INT64_MAX)
		return -EOVERFLOW;
	if (off_out + len > (1ull << 62))
		return -EFBIG;
	if (src == dst && off_out + len > off_in && off_out < off_in + len)
		return -EINVAL;
	return 0;
}

/* The copy, chunk by chunk, inside the writers' gate. */
static ssize_t copy_chunks(struct ordfs *fs, struct inode *src, uint64_t off_in,
			   struct inode *dst, uint64_t off_out, size_t len, bool *sync)
{
	struct copy_chunk *c = malloc(sizeof(*c));
	uint8_t *data = malloc((size_t)COPY_CHUNK_BLOCKS * fs->block_size);
	if (!c || !data) {
		free(c);
		free(data);
		return -ENOMEM;
	}
	c->data = data;
	size_t max_bytes = (size_t)(COPY_CHUNK_BLOCKS - 1) * fs->block_size;
	size_t done = 0;
	int err = 0;
	while (done < len) {
		uint64_t pos = off_in + done;
		size_t want = len - done < max_bytes ? len - done : max_bytes;
		size_t got;
		err = source_read(fs, src, pos, want, c, &got);
		if (err || got == 0)
			break; /* an error, or the source's EOF */
		size_t skip = (size_t)(pos % fs->block_size);
		ssize_t n = chunk_write(fs, dst, off_out + done, c, skip, got, sync);
		if (n < 0) {
			err = (int)n;
			break;
		}
		ORDFS_ASSERT((size_t)n <= got);
		done += (size_t)n;
		if ((size_t)n < got)
			break;
	}
	free(data);
	free(c);
	if (done > 0)
		__atomic_add_fetch(&fs->copy_range_bytes, done, __ATOMIC_RELAXED);
	return done > 0 ? (ssize_t)done : err;
}

ssize_t ordfs_copy_range(struct ordfs *fs, struct inode *src, uint64_t off_in,
			 struct inode *dst, uint64_t off_out, size_t len)
{
	int err = copy_args_valid(src, off_in, dst, off_out, len);
	if (err || len == 0)
		return err;
	err = ordfs_write_enter(fs); /* a remount,ro waits for this copy */
	if (err)
		return err;
	bool sync = false;
	ssize_t done = copy_chunks(fs, src, off_in, dst, off_out, len, &sync);
	if (done > 0 && sync) {
		/* S: durable before it returns, as write(2). */
		int serr = ordfs_fsync(fs, dst, true);
		if (serr)
			done = serr;
	}
	ordfs_write_exit(fs);
	return done;
}
