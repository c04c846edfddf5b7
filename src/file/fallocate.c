/*
 * fallocate.c - space management of regular files: fallocate (preallocate,
 * punch a hole, zero a range) and SEEK_DATA / SEEK_HOLE.
 *
 * Owns the policy only: pages belong to the page index (inode/pages.h), extent records to
 * extent/.  The semantics, Linux's with the flags of <linux/falloc.h>:
 *
 *  - mode 0, KEEP_SIZE: every block of the range that is a hole and has no
 *    page becomes part of an UNWRITTEN extent (allocated, reads as zeros).
 *    Mapped blocks stay as they are, and so do delayed pages: a delayed
 *    page already holds a reservation, and writeback allocates it as usual.
 *    Without KEEP_SIZE the size grows to off + len; with it, blocks past
 *    EOF may be preallocated (the checker only refuses *written* blocks
 *    past the size).
 *  - ENOSPC: the holes are counted first against the blocks data may
 *    still take (free minus the metadata reserve, as for write()), so a
 *    request that cannot fit changes nothing.  If allocation still runs out
 *    (extent tree blocks, another writer), what was allocated stays
 *    allocated and the size is left alone: Linux keeps partial allocations.
 *  - PUNCH_HOLE (only with KEEP_SIZE): the partial blocks at the edges are
 *    zeroed through pages (written back like any data), pages of whole
 *    blocks inside are dropped (returning their reservations) and whole
 *    blocks are unmapped and freed in bounded handles -- past EOF too
 *    (preallocated blocks), as XFS does; ext4 stops at EOF.
 *  - ZERO_RANGE: edges zeroed through pages, pages inside dropped, written
 *    blocks inside marked UNWRITTEN (metadata only: the old bytes stay on
 *    disk, unreachable), then holes preallocated as in mode 0.  The size
 *    grows unless KEEP_SIZE.
 *  - COLLAPSE_RANGE, INSERT_RANGE: shift_range.c (each alone, block
 *    aligned, atomic: one handle).
 *  - Every mode sets mtime and ctime; set-user-ID is cleared by the kernel
 *    (a setattr before the call) for callers without CAP_FSETID, as for write.
 *  - File flags (iflags.h): i refuses every mode, a all but preallocation
 *    (mode 0, KEEP_SIZE); with S the change is durable before it returns.
 *  - Crashes: each handle is atomic and leaves a consistent tree; a range
 *    that took several handles may be half done after a crash unless it
 *    was followed by fsync, like a long write.  Zeroed edge bytes reach the
 *    disk with the next writeback of the file.
 *
 * Writing into UNWRITTEN blocks is writeback's business (writeback/): the data
 * is written in place, then a handle marks the blocks written [J1].
 *
 * SEEK_DATA / SEEK_HOLE: data is a page (delayed or not) or a written
 * extent; a hole is an unmapped block or an UNWRITTEN one without a page
 * (ext4 reports unwritten extents without cached data the same way).  The
 * answer is block granular and clipped to the size: -ENXIO for SEEK_DATA
 * at or past EOF or with no data after off; SEEK_HOLE finds EOF at worst.
 *
 * Locking: inode->lock exclusive for fallocate (shared for seek, like
 * read), then handles one at a time; none is held while another starts or
 * while waiting for anything [J8].
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "super/super.h"
#include "writeback/writeback.h"
#include "orphan/orphan.h"
#include "inode/pages.h"
#include "orphan/enospc.h"
#include "file.h"
#include "inode/iflags.h"
#include "inode/inode.h"
#include "ops.h"
#include "alloc/alloc.h"
#include "extent/extent.h"
#include "journal/journal.h"
#include "lock/lock.h"

#define FALLOC_SHIFT (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)
#define FALLOC_SUPPORTED \
	(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_SHIFT)
#define MAX_FILE_BYTES (1ull << 62)

/* One call's state: the file and the sorted blocks that have pages. */
struct space {
	struct ordfs *fs;
	struct inode *inode;
	uint64_t *pages;
	uint64_t npages;
	uint64_t need, limit; /* counting holes */
	uint64_t goal;        /* where the next allocation should start */
};

static int pages_load(struct space *sp)
{
	free(sp->pages);
	sp->pages = NULL;
	return pages_blocks(sp->inode, &sp->pages, &sp->npages);
}

/* Index of the first page at or after lblk (npages if none). */
static uint64_t pages_from(const struct space *sp, uint64_t lblk)
{
	uint64_t lo = 0, hi = sp->npages;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (sp->pages[mid] < lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the extent map seen in spans ------------------------------------------ */

/* [lblk, end) is mapped with the same flags, or a hole. */
struct span {
	uint64_t end;
	int mapped;     /* 1 mapped, 0 hole */
	uint32_t flags; /* of a mapped span */
	uint64_t physical_end;
};

struct first_after {
	uint64_t lblk;
	uint64_t next; /* first mapped block after lblk, UINT64_MAX if none */
};

static int first_after_cb(void *ctx, const struct ordfs_extent *e)
{
	struct first_after *fa = ctx;
	if (e->logical + e->len <= fa->lblk)
		return 0;
	fa->next = e->logical;
	return 1;
}

/* The span that starts at lblk.  A lookup caps holes at ORDFS_EXT_MAX_LEN
 * blocks; a hole that long is measured by a walk instead, so a seek over a
 * huge hole costs one pass over the records, not one lookup per 2^27
 * blocks. */
static int span_at(struct space *sp, uint64_t lblk, struct span *out)
{
	struct ordfs_extent ext;
	int found = extent_lookup(sp->fs, sp->inode, lblk, &ext);
	if (found < 0)
		return found;
	out->mapped = found;
	out->flags = ext.flags;
	out->end = ext.logical + ext.len;
	out->physical_end = found ? ext.physical + ext.len : 0;
	if (found || ext.len < ORDFS_EXT_MAX_LEN)
		return 0;
	struct first_after fa = { lblk, UINT64_MAX };
	struct extent_walk_ops ops = { NULL, first_after_cb, &fa };
	int ret = extent_walk(sp->fs, sp->inode, &ops);
	if (ret < 0)
		return ret;
	out->end = fa.next;
	return 0;
}

static bool span_is_data(const struct span *s)
{
	return s->mapped && !(s->flags & ORDFS_EXT_UNWRITTEN);
}

/* Calls fn on every run of blocks in [first, end) that is a hole and has
 * no page.  fn may map the run (the walk looks the map up again after it);
 * a non-zero return stops the walk and is returned. */
static int for_each_bare_hole(struct space *sp, uint64_t first, uint64_t end,
			      int (*fn)(struct space *, uint64_t, uint64_t))
{
	uint64_t pos = first;
	while (pos < end) {
		struct span s;
		int err = span_at(sp, pos, &s);
		if (err)
			return err;
		uint64_t run_end = s.end < end ? s.end : end;
		if (s.mapped)
			sp->goal = s.physical_end;
		for (uint64_t k = pages_from(sp, pos); !s.mapped && pos < run_end; k++) {
			uint64_t page = k < sp->npages && sp->pages[k] < run_end ? sp->pages[k]
										    : run_end;
			err = page > pos ? fn(sp, pos, page - pos) : 0;
			if (err)
				return err;
			pos = page + 1;
		}
		pos = run_end;
	}
	return 0;
}

/* ---- preallocation ------------------------------------------------------- */

static int count_hole(struct space *sp, uint64_t lblk, uint64_t count)
{
	(void)lblk;
	sp->need += count;
	return sp->need > sp->limit ? -ENOSPC : 0;
}

/* -ENOSPC if the bare holes of [first, end) need more blocks than data may
 * still take (the metadata reserve stays back, as for write(); counting
 * stops as soon as they do). */
static int check_space(struct space *sp, uint64_t first, uint64_t end)
{
	struct alloc_counts c;
	alloc_get_counts(sp->fs->alloc, &c);
	sp->need = 0;
	sp->limit = c.data_blocks;
	return for_each_bare_hole(sp, first, end, count_hole);
}

/* Records claimed blocks [start, start + got) as an unwritten extent at
 * lblk, in one handle.  Nothing to order: the blocks read as zeros. */
static int map_unwritten(struct space *sp, uint64_t lblk, uint64_t start, uint32_t got)
{
	struct ordfs *fs = sp->fs;
	struct handle *h;
	int err = journal_start(fs->journal,
				extent_credits(fs, sp->inode, 1) + alloc_credits(fs->alloc, got) + 1,
				&h);
	if (err) {
		alloc_unclaim_blocks(fs->alloc, start, got, 0);
		return err;
	}
	err = alloc_mark_blocks(fs->alloc, h, start, got);
	if (!err) {
		struct ordfs_extent e = { lblk, start, got, ORDFS_EXT_UNWRITTEN };
		err = extent_insert(fs, h, sp->inode, &e);
		/* e.g. no block left for the tree: the marks never commit */
		if (err && alloc_unmark_blocks(fs->alloc, h, start, got) != 0)
			got = 0; /* the journal has aborted: leave the claim */
	}
	if (err)
		alloc_unclaim_blocks(fs->alloc, start, got, 0);
	int serr = journal_stop(h);
	return err ? err : serr;
}

static int alloc_hole(struct space *sp, uint64_t lblk, uint64_t count)
{
	while (count > 0) {
		struct alloc_counts c;
		alloc_get_counts(sp->fs->alloc, &c); /* keep off the metadata reserve */
		uint64_t want = count < ORDFS_EXT_MAX_LEN ? count : ORDFS_EXT_MAX_LEN;
		if (want > c.data_blocks)
			want = c.data_blocks;
		if (want == 0)
			return -ENOSPC;
		uint64_t start;
		uint32_t got;
		int err = alloc_claim_blocks(sp->fs->alloc, sp->goal, (uint32_t)want, 0, &start,
					     &got);
		if (!err)
			err = map_unwritten(sp, lblk, start, got);
		if (err)
			return err;
		sp->goal = start + got;
		lblk += got;
		count -= got;
	}
	return 0;
}

/* Preallocates the bare holes of blocks [first, end). */
static int preallocate(struct space *sp, uint64_t first, uint64_t end)
{
	sp->goal = 0;
	if (first > 0) {
		struct span s;
		int err = span_at(sp, first - 1, &s);
		if (err)
			return err;
		sp->goal = s.physical_end;
	}
	return for_each_bare_hole(sp, first, end, alloc_hole);
}

/* ---- punch and zero ------------------------------------------------------ */

/* Zeroes the bytes of [off, end) in the blocks the range covers only in
 * part. */
static int zero_edges(struct space *sp, uint64_t off, uint64_t end)
{
	uint32_t bs = sp->fs->block_size;
	uint64_t head = off / bs, tail = (end - 1) / bs;
	uint32_t from = (uint32_t)(off % bs), to = (uint32_t)((end - 1) % bs) + 1;
	int err = 0;
	if (head == tail) {
		if (from != 0 || to != bs)
			err = file_zero_partial(sp->fs, sp->inode, head, from, to);
		return err;
	}
	if (from != 0)
		err = file_zero_partial(sp->fs, sp->inode, head, from, bs);
	if (!err && to != bs)
		err = file_zero_partial(sp->fs, sp->inode, tail, 0, to);
	return err;
}

/* The whole blocks inside [off, end): [*first, *last). */
static void whole_blocks(uint32_t bs, uint64_t off, uint64_t end, uint64_t *first,
			 uint64_t *last)
{
	*first = off / bs + (off % bs != 0);
	*last = end / bs;
	if (*last < *first)
		*last = *first;
}

static int punch_hole(struct space *sp, uint64_t off, uint64_t end)
{
	uint64_t first, last;
	whole_blocks(sp->fs->block_size, off, end, &first, &last);
	int err = zero_edges(sp, off, end);
	if (!err && first < last)
		err = pages_drop_range(sp->fs, sp->inode, first, last);
	if (!err && first < last)
		err = unmap_range(sp->fs, sp->inode, first, last - first);
	return err;
}

static int zero_range(struct space *sp, uint64_t off, uint64_t end)
{
	uint32_t bs = sp->fs->block_size;
	uint64_t first, last, all_first = off / bs, all_end = (end - 1) / bs + 1;
	whole_blocks(bs, off, end, &first, &last);
	/* Dropped delayed pages give back as many reservations as their
	 * blocks then need, so the bare holes are the whole need. */
	int err = check_space(sp, all_first, all_end);
	if (!err)
		err = zero_edges(sp, off, end);
	if (!err && first < last)
		err = pages_drop_range(sp->fs, sp->inode, first, last);
	if (!err && first < last)
		err = writeback_set_extent_flags(sp->fs, sp->inode, first, last - first,
					    ORDFS_EXT_UNWRITTEN, 0, false);
	if (!err)
		err = pages_load(sp);
	if (!err)
		err = preallocate(sp, all_first, all_end);
	return err;
}

/* ---- fallocate ------------------------------------------------------------ */

/* The argument checks, in the order Linux's vfs_fallocate makes them. */
static int fallocate_check(struct ordfs *fs, const struct inode *inode, int mode, uint64_t off,
			   uint64_t len)
{
	if (len == 0 || off > INT64_MAX || len > INT64_MAX)
		return -EINVAL;
	if (mode & ~FALLOC_SUPPORTED)
		return -EOPNOTSUPP; /* UNSHARE_RANGE, WRITE_ZEROES, ... */
	/* Collapse and insert stand alone (since Linux 6.11 EOPNOTSUPP, before
	 * it EINVAL). */
	if ((mode & FALLOC_SHIFT) && mode != FALLOC_FL_COLLAPSE_RANGE &&
	    mode != FALLOC_FL_INSERT_RANGE)
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) &&
	    ((mode & FALLOC_FL_ZERO_RANGE) || !(mode & FALLOC_FL_KEEP_SIZE)))
		return -EOPNOTSUPP;
	if (S_ISFIFO(inode->d.mode))
		return -ESPIPE;
	if (S_ISDIR(inode->d.mode))
		return -EISDIR;
	if (!S_ISREG(inode->d.mode))
		return -ENODEV;
	if (off + len > MAX_FILE_BYTES)
		return -EFBIG;
	if (ordfs_writable(fs) != 0) /* read-only, remounted ro or aborted */
		return -EROFS;
	return 0;
}

/* The size (unless 0), times and mode, in one handle. */
static int fallocate_finish(struct ordfs *fs, struct inode *inode, uint64_t new_size)
{
	if (new_size > inode->size) {
		int err = file_zero_eof_block(fs, inode); /* the gap reads as zeros */
		if (err)
			return err;
		inode->size = new_size;
		if (!pages_has_dirty(inode)) /* else d.size follows at writeback */
			inode->d.size = new_size;
	}
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
	if (err)
		return err;
	inode->d.mtime = inode->d.ctime = ordfs_now();
	/* set-user-ID: the kernel clears it for unprivileged callers (setattr) */
	err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	int serr = journal_stop(h);
	return err ? err : serr;
}

static int fallocate_once(struct ordfs *fs, struct inode *inode, int mode, uint64_t off,
			  uint64_t len)
{
	int err;
	uint32_t bs = fs->block_size;
	uint64_t end = off + len;
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	struct space sp = { .fs = fs, .inode = inode };

	ordfs_rwlock_wrlock(&inode->lock);
	/* vfs_fallocate: i refuses all of it, a all but preallocation. */
	err = iflags_refuses(inode->d.attr_flags, (mode & ~FALLOC_FL_KEEP_SIZE)
							  ? IFLAGS_PUNCH
							  : IFLAGS_PREALLOCATE);
	if (!err)
		err = pages_load(&sp);
	if (!err && (mode & FALLOC_SHIFT)) {
		/* the size and the times go with the shift, in its handle */
		err = file_shift_range(fs, inode, mode, off, len, MAX_FILE_BYTES);
		goto out;
	} else if (!err && (mode & FALLOC_FL_PUNCH_HOLE)) {
		err = punch_hole(&sp, off, end);
	} else if (!err && (mode & FALLOC_FL_ZERO_RANGE)) {
		err = zero_range(&sp, off, end);
	} else if (!err) {
		err = check_space(&sp, off / bs, (end - 1) / bs + 1);
		if (!err)
			err = preallocate(&sp, off / bs, (end - 1) / bs + 1);
	}
	if (!err)
		err = fallocate_finish(fs, inode, keep ? 0 : end);
out:
	ordfs_rwlock_unlock(&inode->lock);
	free(sp.pages);
	return err;
}

/* ---- SEEK_DATA / SEEK_HOLE ------------------------------------------------ */

/* The first block in [lblk, limit) that holds data, or UINT64_MAX. */
static int next_data(struct space *sp, uint64_t lblk, uint64_t limit, uint64_t *out)
{
	uint64_t k = pages_from(sp, lblk);
	uint64_t page = k < sp->npages && sp->pages[k] < limit ? sp->pages[k] : UINT64_MAX;
	uint64_t stop = page < limit ? page : limit;
	while (lblk < stop) {
		struct span s;
		int err = span_at(sp, lblk, &s);
		if (err)
			return err;
		if (span_is_data(&s)) {
			*out = lblk;
			return 0;
		}
		lblk = s.end;
	}
	*out = page;
	return 0;
}

/* The first block in [lblk, limit) without data, or limit. */
static int next_hole(struct space *sp, uint64_t lblk, uint64_t limit, uint64_t *out)
{
	while (lblk < limit) {
		uint64_t k = pages_from(sp, lblk);
		if (k < sp->npages && sp->pages[k] == lblk) {
			while (k + 1 < sp->npages && sp->pages[k + 1] == sp->pages[k] + 1)
				k++;
			lblk = sp->pages[k] + 1;
			continue;
		}
		struct span s;
		int err = span_at(sp, lblk, &s);
		if (err)
			return err;
		if (!span_is_data(&s))
			break;
		lblk = s.end;
	}
	*out = lblk < limit ? lblk : limit;
	return 0;
}

off_t ordfs_seek_data_hole(struct ordfs *fs, struct inode *inode, uint64_t off, int whence)
{
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (!S_ISREG(inode->d.mode))
		return -EINVAL;
	uint32_t bs = fs->block_size;
	struct space sp = { .fs = fs, .inode = inode };

	ordfs_rwlock_rdlock(&inode->lock);
	uint64_t size = inode->size;
	int64_t ret = -ENXIO;
	if (off < size) {
		uint64_t limit = (size - 1) / bs + 1, b = 0;
		int err = pages_load(&sp);
		if (!err)
			err = whence == SEEK_DATA ? next_data(&sp, off / bs, limit, &b)
						  : next_hole(&sp, off / bs, limit, &b);
		if (err)
			ret = err;
		else if (b >= limit)
			ret = whence == SEEK_DATA ? -ENXIO : (int64_t)size;
		else
			ret = (int64_t)(b * bs > off ? b * bs : off);
	}
	ordfs_rwlock_unlock(&inode->lock);
	free(sp.pages);
	return (off_t)ret;
}

int ordfs_fallocate(struct ordfs *fs, struct inode *inode, int mode, uint64_t off, uint64_t len)
{
	int err = fallocate_check(fs, inode, mode, off, len);
	if (err)
		return err;
	err = ordfs_write_enter(fs); /* may dirty pages: a remount,ro waits */
	if (err)
		return err;
	unsigned retries = 0;
	do
		err = fallocate_once(fs, inode, mode, off, len);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	err = file_sync_after(fs, inode, !err && iflags_sync(ordfs_get_flags(fs, inode)), err);
	ordfs_write_exit(fs);
	return err;
}
