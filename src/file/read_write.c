/*
 * read_write.c - read(2) and write(2) of regular files (ops.h).
 *
 * Rules:
 *  - write() only copies into pages (file_page_get: a page over a hole
 *    reserves its block) and raises inode->size; delayed allocation
 *    leaves the blocks to writeback (writeback/).  A writer past the
 *    dirty limit then writes back its own pages before returning.
 *  - One page loop (file_write_locked) for write() and for the
 *    destination of copy_file_range (copy_range.c): the gap after EOF
 *    zeroed, the bytes into pages, the size and mtime/ctime moved.  The
 *    copy only adds that bytes from source holes over a destination hole
 *    are not written.
 *  - read() serves pages first, then blocks (page_io.c), under the shared
 *    lock, and touches atime by the mount's policy (for the inode: A
 *    exempts it, atime_policy_for) without failing for it.
 *  - write() asks the file flags first (iflags.h): i refuses it, a takes
 *    only appends, which land at the end; with S the data is made durable
 *    (ordfs_fsync) before write() returns, as a kernel filesystem syncs
 *    an IS_SYNC file's writes (generic_write_sync).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "file.h"
#include "ops.h"
#include "atime/atime.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "inode/pages.h"
#include "lock/lock.h"
#include "writeback/writeback.h"

bool ordfs_open_keeps_cache(struct ordfs *fs, struct inode *inode)
{
	if (ordfs_writable(fs) != 0)
		return true; /* no atime changes on a read-only filesystem */
	struct atime_policy policy = fs_atime_policy(fs);
	ordfs_rwlock_rdlock(&inode->lock);
	struct atime_policy p; /* the mount's, or noatime for a file flagged A */
	atime_policy_for(&policy, inode->d.attr_flags, &p);
	bool keep = atime_reads_may_be_cached(&p, S_ISDIR(inode->d.mode), inode->d.atime,
					      inode->d.mtime, inode->d.ctime, ordfs_now());
	ordfs_rwlock_unlock(&inode->lock);
	return keep;
}

/* Copies the bytes under the shared lock; then, for a program's read,
 * moves atime as the mount's policy says. */
static ssize_t read_locked_then_atime(struct ordfs *fs, struct inode *inode, void *buf,
				      size_t len, uint64_t off, bool program_read)
{
	uint32_t bs = fs->block_size;
	uint8_t *out = buf;
	uint8_t *tmp = NULL; /* a block buffer, for partial blocks only */

	ordfs_rwlock_rdlock(&inode->lock);
	ssize_t done = 0;
	if (off < inode->size) {
		if (len > inode->size - off)
			len = (size_t)(inode->size - off);
		while ((size_t)done < len) {
			uint64_t pos = off + (uint64_t)done;
			uint64_t lblk = pos / bs;
			uint32_t in = (uint32_t)(pos % bs);
			size_t chunk = bs - in < len - (size_t)done ? bs - in : len - (size_t)done;
			struct page *page = pages_find(inode, lblk);
			if (page) {
				memcpy(out + done, page->data + in, chunk);
			} else if (in == 0 && chunk == bs) {
				/* Whole blocks straight into the reply. */
				size_t whole = (len - (size_t)done) / bs;
				uint32_t max = whole > UINT32_MAX ? UINT32_MAX : (uint32_t)whole;
				int n = file_read_blocks(fs, inode, lblk, max, out + done);
				if (n < 0) {
					if (done == 0)
						done = n;
					break;
				}
				done += (ssize_t)((size_t)n * bs);
				continue;
			} else {
				if (!tmp)
					tmp = malloc(bs);
				int err = tmp ? file_read_block(fs, inode, lblk, tmp) : -ENOMEM;
				if (err) {
					if (done == 0)
						done = err;
					break;
				}
				memcpy(out + done, tmp + in, chunk);
			}
			done += (ssize_t)chunk;
		}
	}
	/* The cheap check under the read lock; atime_touch decides again. */
	struct atime_policy p;
	struct atime_policy mount = fs_atime_policy(fs);
	atime_policy_for(&mount, inode->d.attr_flags, &p);
	bool touch = program_read && done >= 0 && p.mode != ATIME_NOATIME &&
		     atime_needs_update(&p, false, inode->d.atime, inode->d.mtime, inode->d.ctime,
					ordfs_now());
	ordfs_rwlock_unlock(&inode->lock);
	free(tmp);
	if (touch)
		(void)atime_touch(fs, inode); /* a read never fails for its atime */
	return done;
}

ssize_t ordfs_read(struct ordfs *fs, struct inode *inode, void *buf, size_t len, uint64_t off)
{
	return read_locked_then_atime(fs, inode, buf, len, off, true);
}

ssize_t ordfs_read_for_write(struct ordfs *fs, struct inode *inode, void *buf, size_t len,
			     uint64_t off)
{
	return read_locked_then_atime(fs, inode, buf, len, off, false);
}

/* Do bytes [from, from + len) of the buffer all come from source holes? */
static bool from_holes(const struct file_holes *holes, uint32_t bs, size_t from, size_t len)
{
	for (size_t b = (holes->skip + from) / bs; b <= (holes->skip + from + len - 1) / bs; b++)
		if (!holes->hole[b])
			return false;
	return true;
}

int file_write_locked(struct ordfs *fs, struct inode *inode, uint64_t pos, const uint8_t *buf,
		      size_t len, const struct file_holes *holes, size_t *done)
{
	uint32_t bs = fs->block_size;
	int err = 0;
	*done = 0;
	if (pos > inode->size && len > 0) /* the gap after EOF reads as zeros */
		err = file_zero_eof_block(fs, inode);
	while (!err && *done < len) {
		uint64_t at_pos = pos + *done;
		uint64_t lblk = at_pos / bs;
		uint32_t at = (uint32_t)(at_pos % bs);
		size_t chunk = bs - at < len - *done ? bs - at : len - *done;
		int hole = 0;
		if (holes && from_holes(holes, bs, *done, chunk))
			hole = file_block_is_hole(fs, inode, lblk); /* then leave it */
		if (hole < 0) {
			err = hole;
			break;
		}
		if (!hole) {
			struct page *page;
			err = file_page_get(fs, inode, lblk, at == 0 && chunk == bs, &page);
			if (err)
				break;
			memcpy(page->data + at, buf + *done, chunk);
		}
		*done += chunk;
		if (at_pos + chunk > inode->size)
			inode->size = at_pos + chunk;
	}
	if (*done > 0) {
		inode->d.mtime = inode->d.ctime = ordfs_now();
		/* Set-user-ID is not cleared here: the kernel does it, with a
		 * setattr before the write, for writers without CAP_FSETID (and
		 * the daemon for a copy, ordfs_drop_privs). */
		inode->times_dirty = true;
	}
	return err;
}

ssize_t ordfs_write(struct ordfs *fs, struct inode *inode, const void *buf, size_t len,
		    uint64_t off)
{
	return ordfs_write_by(fs, inode, buf, len, off, 0);
}

/* May this write go ahead under the file's flags?  An append to an
 * append-only file moves *off to the end.  inode->lock held. */
static int write_allowed(struct inode *inode, unsigned how, uint64_t *off)
{
	uint32_t flags = inode->d.attr_flags;
	bool appends = how & (ORDFS_WRITE_APPEND | ORDFS_WRITE_CACHED);
	int err = iflags_refuses(flags, appends ? IFLAGS_APPEND : IFLAGS_WRITE);
	if (!err && (flags & ORDFS_FL_APPEND) && (how & ORDFS_WRITE_APPEND))
		*off = inode->size;
	return err;
}

ssize_t ordfs_write_by(struct ordfs *fs, struct inode *inode, const void *buf, size_t len,
		       uint64_t off, unsigned how)
{
	size_t landed = 0;
	ssize_t done = 0;
	int err = 0;

	err = ordfs_write_enter(fs); /* a remount,ro waits for this write */
	if (err)
		return err;
	ordfs_rwlock_wrlock(&inode->lock);
	err = write_allowed(inode, how, &off);
	bool sync = iflags_sync(inode->d.attr_flags);
	if (!err && (off + len < off || off + len > (1ull << 62)))
		err = -EFBIG;
	if (!err)
		err = file_write_locked(fs, inode, off, buf, len, NULL, &landed);
	done = (ssize_t)landed;
	if (done > 0)
		__atomic_add_fetch(&fs->write_bytes, (uint64_t)done, __ATOMIC_RELAXED);
	/* Past the dirty limit the writer writes back its own pages. */
	int werr = writeback_balance_dirty_locked(fs, inode);
	if (werr && done == 0)
		err = werr;
	ordfs_rwlock_unlock(&inode->lock);
	if (done > 0 && sync) {
		/* S: durable before it returns (the fsync's failure is also in
		 * the file's errseq, as any writeback failure). */
		int serr = ordfs_fsync(fs, inode, true);
		if (serr) {
			done = 0;
			err = serr;
		}
	}
	ordfs_write_exit(fs);
	return done > 0 ? done : err;
}
