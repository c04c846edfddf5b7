/*
 * limit.c - the bound on dirty data (writeback.h).
 *
 * Dirty pages are bounded fs-wide: the dirty_limit option, or about a
 * second of the image's measured write bandwidth.  Past half the limit
 * (as the kernel's background ratio is half its dirty ratio) the
 * writeback thread starts writing in the background, so the disk works
 * while writers go on and a writer rarely reaches the limit; a lower
 * threshold (32 MiB) was measured: bench B2's streaming writer then went
 * to the disk at once, and the disk under the fsync loop's flushes took
 * ~170 MiB/s of it, against ~1 GiB/s held in memory.  A writer past the
 * limit writes back its own lowest pages, enough to get back under it
 * plus a slice, before returning, not its whole file (with a 1 GiB limit
 * that was seconds in one write).
 */
#include "fs.h"
#include "writeback.h"

#define DEFAULT_DIRTY_LIMIT_PAGES 16384u /* 64 MiB of 4 KiB pages */
/* The self-tuned dirty limit: about a second of the image's measured
 * write bandwidth, at least the default and at most this. */
#define DIRTY_LIMIT_MAX_BYTES (1ull << 30)

uint64_t writeback_dirty_limit_pages(const struct ordfs *fs)
{
	if (fs->dirty_limit_pages)
		return fs->dirty_limit_pages; /* set by the user */
	/* About one second of measured write bandwidth. */
	uint64_t bps = __atomic_load_n(&fs->write_bandwidth, __ATOMIC_RELAXED);
	uint64_t max = DIRTY_LIMIT_MAX_BYTES / fs->block_size;
	if (fs->dirty_limit_cap_pages && fs->dirty_limit_cap_pages < max)
		max = fs->dirty_limit_cap_pages;
	uint64_t pages = bps / fs->block_size;
	if (pages < DEFAULT_DIRTY_LIMIT_PAGES)
		pages = DEFAULT_DIRTY_LIMIT_PAGES;
	return pages < max ? pages : max;
}

uint64_t writeback_background_pages(const struct ordfs *fs)
{
	return writeback_dirty_limit_pages(fs) / 2;
}

/* An average over the last few MiB, in bytes per second. */
void writeback_note_bandwidth(struct ordfs *fs, size_t bytes, uint64_t ns)
{
	if (ns == 0)
		return;
	uint64_t bps = (uint64_t)((double)bytes * 1e9 / (double)ns);
	uint64_t old = __atomic_load_n(&fs->write_bandwidth, __ATOMIC_RELAXED);
	uint64_t avg = old ? old - old / 16 + bps / 16 : bps;
	__atomic_store_n(&fs->write_bandwidth, avg, __ATOMIC_RELAXED);
}

int writeback_balance_dirty_locked(struct ordfs *fs, struct inode *inode)
{
	uint64_t limit = writeback_dirty_limit_pages(fs);
	uint64_t dirty = __atomic_load_n(&fs->dirty_pages, __ATOMIC_RELAXED);
	if (dirty > writeback_background_pages(fs))
		writeback_kick(fs);
	if (dirty <= limit)
		return 0;
	uint64_t pages = dirty - limit + BG_SLICE_BYTES / fs->block_size;
	return writeback_some_locked(fs, inode, false, pages);
}
