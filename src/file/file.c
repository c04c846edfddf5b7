/*
 * file.c - file data: read, write, truncate, writeback and fsync, with
 * delayed allocation.
 *
 * Owns: each regular file's page cache (file.h) and the data path to the
 * image.  The rules that make fsync cheap and ordered mode safe:
 *  - write() only copies into pages; a page over a hole reserves one block
 *    (ENOSPC is reported by write, never lost at writeback).
 *  - Writeback of a file claims blocks for its delayed pages, writes the
 *    data there, and only then starts the handle that marks the bitmap and
 *    maps the extent [J1].  So the transaction that makes the data
 *    reachable never has to wait for it, and a commit carries no other
 *    file's data: fsync of one file writes one file.
 *  - Pages over blocks already mapped are written in place (not ordered,
 *    as in jbd2) before the commit that fsync waits for.  Over UNWRITTEN
 *    blocks (fallocate) the data is written in place first and only then
 *    does a handle mark the blocks written, raising d.size past them: the
 *    conversion makes the data reachable, so it is ordered like an
 *    allocation [J1].  A page over an unwritten block starts from zeros.
 *  - inode->size is the size users see; d.size (on disk) becomes
 *    inode->size once the data below it is written back.
 *  - Dirty pages are bounded fs-wide (file_dirty_limit_pages: the
 *    dirty_limit option, or about a second of the image's measured write
 *    bandwidth): a writer past the bound writes back its own lowest
 *    pages, enough to get back under it, before returning, so the heavy
 *    writer is throttled, not the fsync caller.  Background writeback
 *    (that writer, the writeback thread) goes in chunks and lets
 *    waited-on syncs go first (flush/gate.h); the thread takes a file's
 *    lock for one slice at a time (BG_SLICE_BYTES), so its writer is
 *    never stopped for a whole file's writeback.
 *  - data=journal: no data is written in place.  Writeback copies each
 *    page into the block's cache buffer under the handle that maps it (or,
 *    for mapped blocks, a handle of its own), so the data is logged and
 *    committed with its metadata and reaches home only at checkpoint.  A
 *    run is cut to what one handle may log.
 *  - data=ordered logs data too, where that is cheaper: when an fsync
 *    waits for at most LOG_SMALL_BYTES of dirty data, its new blocks
 *    (delayed, or over unwritten extents: fallocate'd space) go into the
 *    log with the handle that maps or converts them instead of in place,
 *    so the commit makes nothing outside the log reachable and needs no
 *    flush before its commit record (F1): one flush per fsync, not two.
 *  - Coherence of logged data, in every mode: a data block that has a
 *    cached buffer is written through the log, never in place (a pinned
 *    older copy would otherwise be checkpointed over the newer bytes, and
 *    the cache would serve stale ones), and reads of mapped blocks look in
 *    the cache first (the newest contents may not be home yet).  A block
 *    with no cached buffer has no copy in the live log (journal_forget
 *    relies on the same fact), so in place is safe for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "file.h"
#include "inode/inode.h"
#include "ops.h"
#include "alloc/alloc.h"
#include "atime/atime.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "extent/extent.h"
#include "journal/journal.h"
#include "lock/lock.h"

#define PAGE_SLOTS_MIN 256u /* hash buckets of a file's page cache, at first */
#define DEFAULT_DIRTY_LIMIT_PAGES 16384u /* 64 MiB of 4 KiB pages */
/* New data an fsync waits for, up to this much, is logged in data=ordered
 * (see the header).  Logging costs a second write of the data at
 * checkpoint; the flush it saves costs more than writing 64 KiB here
 * (bench B1/B8). */
#define LOG_SMALL_BYTES (64u << 10)
/* Background writeback goes to the disk in chunks of this size, letting
 * waited-on syncs go first before each (flush/gate.h), but never waiting
 * longer than WB_YIELD_MAX_US per chunk.  bench B2: see DESIGN.md. */
#define WB_CHUNK_BYTES (128u << 10)
#define WB_YIELD_MAX_US 2000u
#define WB_BUFFER_BYTES (1u << 20) /* a sync's own writeback, per device write */
/* Early writeback: past half the dirty limit (as the kernel's background
 * ratio is half its dirty ratio) the writeback thread starts writing in
 * the background, BG_SLICE_BYTES of a file per hold of its lock, so the
 * disk works while writers go on and a writer rarely reaches the limit.
 * A lower threshold (32 MiB) was measured: bench B2's streaming writer
 * then went to the disk at once, and the disk under the fsync loop's
 * flushes took ~170 MiB/s of it, against ~1 GiB/s held in memory. */
#define BG_SLICE_BYTES (1u << 20)
/* The self-tuned dirty limit: about a second of the image's measured
 * write bandwidth, at least the default and at most this. */
#define DIRTY_LIMIT_MAX_BYTES (1ull << 30)

struct page {
	uint64_t lblk;
	bool reserved;   /* holds a block reservation (page over a hole) */
	struct page *next;
	uint8_t data[];
};

/* A hash of a file's pages by logical block; the buckets double whenever
 * the pages outnumber them, so a lookup stays O(1) however much a writer
 * has dirty (with 256 fixed buckets, 1 GiB of dirty data made page_get
 * 77% of the daemon's CPU in bench B4). */
struct page_cache {
	struct page **slots;
	uint32_t bits;     /* 1 << bits buckets */
	uint64_t count;
	uint64_t reserved; /* pages holding a reservation (st_blocks) */
	/* No page has a logical block below this: a writeback slice of a
	 * streaming writer's file probes upward from here instead of walking
	 * every page (walking 130k pages per 1 MiB slice was 38% of the
	 * daemon's CPU under bench B2's writer, all of it under the lock). */
	uint64_t low_lblk;
};

/* ---- the page cache --------------------------------------------------- */

uint64_t file_dirty_limit_pages(const struct ordfs *fs)
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

bool file_has_dirty(const struct inode *inode)
{
	return inode->pages && inode->pages->count > 0;
}

static uint64_t page_buckets(const struct page_cache *pc)
{
	return pc ? 1ull << pc->bits : 0;
}

uint64_t file_delayed_blocks(const struct inode *inode)
{
	return inode->pages ? inode->pages->reserved : 0;
}

static uint64_t page_hash(uint64_t lblk, uint32_t bits)
{
	return (lblk * 0x9e3779b97f4a7c15ull) >> (64 - bits);
}

static struct page **page_slot(struct page_cache *pc, uint64_t lblk)
{
	return &pc->slots[page_hash(lblk, pc->bits)];
}

static struct page_cache *page_cache_new(void)
{
	struct page_cache *pc = calloc(1, sizeof(*pc));
	if (pc)
		pc->slots = calloc(PAGE_SLOTS_MIN, sizeof(*pc->slots));
	if (pc && !pc->slots) {
		free(pc);
		return NULL;
	}
	if (pc)
		pc->bits = __builtin_ctz(PAGE_SLOTS_MIN);
	return pc;
}

/* Doubles the buckets once the pages outnumber them.  Failing to grow
 * only costs speed. */
static void page_cache_grow(struct page_cache *pc)
{
	if (pc->count < page_buckets(pc) || pc->bits >= 30)
		return;
	uint32_t bits = pc->bits + 1;
	struct page **slots = calloc(1ull << bits, sizeof(*slots));
	if (!slots)
		return;
	for (uint64_t i = 0; i < page_buckets(pc); i++) {
		struct page *p = pc->slots[i];
		while (p) {
			struct page *next = p->next;
			struct page **to = &slots[page_hash(p->lblk, bits)];
			p->next = *to;
			*to = p;
			p = next;
		}
	}
	free(pc->slots);
	pc->slots = slots;
	pc->bits = bits;
}

static struct page *page_find(struct inode *inode, uint64_t lblk)
{
	if (!inode->pages)
		return NULL;
	for (struct page *p = *page_slot(inode->pages, lblk); p; p = p->next)
		if (p->lblk == lblk)
			return p;
	return NULL;
}

static void page_remove(struct ordfs *fs, struct inode *inode, struct page *page)
{
	struct page **pp = page_slot(inode->pages, page->lblk);
	while (*pp != page)
		pp = &(*pp)->next;
	*pp = page->next;
	inode->pages->count--;
	__atomic_sub_fetch(&fs->dirty_pages, 1, __ATOMIC_RELAXED);
	if (page->reserved) {
		inode->pages->reserved--;
		alloc_unreserve(fs->alloc, 1);
	}
	free(page);
}

void file_pages_destroy(struct inode *inode)
{
	if (!inode->pages)
		return;
	for (uint64_t i = 0; i < page_buckets(inode->pages); i++) {
		struct page *p = inode->pages->slots[i];
		while (p) {
			struct page *next = p->next;
			free(p);
			p = next;
		}
	}
	free(inode->pages->slots);
	free(inode->pages);
	inode->pages = NULL;
}

/* Reads the current contents of logical block lblk (zeros for holes and
 * unwritten extents) into buf. */
static int read_block(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint8_t *buf)
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

/* Finds or creates the page for lblk, loaded with the block's contents
 * unless the caller overwrites it whole.  inode->lock held exclusively. */
static int page_get(struct ordfs *fs, struct inode *inode, uint64_t lblk, bool whole,
		    struct page **out)
{
	struct page *page = page_find(inode, lblk);
	if (page) {
		*out = page;
		return 0;
	}
	if (!inode->pages) {
		inode->pages = page_cache_new();
		if (!inode->pages)
			return -ENOMEM;
	}
	page = calloc(1, sizeof(*page) + fs->block_size);
	if (!page)
		return -ENOMEM;
	page->lblk = lblk;

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
		err = read_block(fs, inode, lblk, page->data);
	if (err) {
		free(page);
		return err;
	}
	/* Never let bytes past EOF from an old life of the block through. */
	uint64_t block_start = lblk * fs->block_size;
	if (inode->size < block_start + fs->block_size) {
		uint64_t keep = inode->size > block_start ? inode->size - block_start : 0;
		memset(page->data + keep, 0, fs->block_size - keep);
	}
	page_cache_grow(inode->pages);
	struct page **slot = page_slot(inode->pages, lblk);
	page->next = *slot;
	*slot = page;
	inode->pages->count++;
	inode->pages->reserved += page->reserved;
	if (lblk < inode->pages->low_lblk)
		inode->pages->low_lblk = lblk;
	__atomic_add_fetch(&fs->dirty_pages, 1, __ATOMIC_RELAXED);
	*out = page;
	return 0;
}

/* ---- writeback ---------------------------------------------------------- */

static int cmp_page_lblk(const void *a, const void *b)
{
	const struct page *x = *(struct page *const *)a, *y = *(struct page *const *)b;
	return x->lblk < y->lblk ? -1 : x->lblk > y->lblk;
}

/* Rearranges v[0..n) so that v[0..k) hold the k pages with the lowest
 * logical blocks, in any order (quickselect: linear on average, so a
 * slice of a file with a million dirty pages does not sort them all). */
static void select_lowest(struct page **v, uint64_t n, uint64_t k)
{
	/* v[0..lo) are among the k lowest; the rest of them lie in [lo, hi) */
	uint64_t lo = 0, hi = n;
	while (lo < k && k < hi) {
		/* Lomuto partition of [lo, hi) around the middle element
		 * (logical blocks are unique, so it is excluded from both
		 * sides and every round shrinks the range). */
		uint64_t mid = lo + (hi - lo) / 2;
		struct page *t = v[mid];
		v[mid] = v[hi - 1];
		v[hi - 1] = t;
		uint64_t pivot = t->lblk, p = lo;
		for (uint64_t i = lo; i < hi - 1; i++) {
			if (v[i]->lblk < pivot) {
				struct page *x = v[i];
				v[i] = v[p];
				v[p] = x;
				p++;
			}
		}
		v[hi - 1] = v[p];
		v[p] = t;
		/* [lo, p) < pivot = v[p] < (p, hi) */
		if (k <= p)
			hi = p;
		else
			lo = p + 1;
	}
}

/* The lowest max_pages pages of the inode, sorted, probing block by block
 * upward from pages->low_lblk; false if they are not dense enough there
 * to find within a few times max_pages probes. */
static bool collect_lowest_dense(struct page_cache *pc, struct page **v,
				 uint64_t max_pages, uint64_t *n)
{
	uint64_t k = 0;
	uint64_t probes = 4 * max_pages + 64;
	uint64_t lblk = pc->low_lblk;
	for (uint64_t i = 0; i < probes && k < max_pages && lblk < UINT64_MAX; i++, lblk++) {
		for (struct page *p = *page_slot(pc, lblk); p; p = p->next) {
			if (p->lblk == lblk) {
				if (k == 0)
					pc->low_lblk = lblk; /* nothing lies below it */
				v[k++] = p;
				break;
			}
		}
	}
	*n = k;
	return k == max_pages;
}

/* Dirty pages of the inode, the lowest max_pages of them (by logical
 * block) sorted first; *n is how many were collected: all of them, or
 * exactly max_pages when those were found densely from low_lblk. */
static int collect_pages(struct inode *inode, struct page ***out, uint64_t *n,
			 uint64_t max_pages)
{
	uint64_t count = inode->pages ? inode->pages->count : 0;
	struct page **v = malloc((count ? count : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (max_pages < count && collect_lowest_dense(inode->pages, v, max_pages, n)) {
		*out = v;
		return 0;
	}
	uint64_t k = 0;
	for (uint64_t i = 0; i < page_buckets(inode->pages); i++)
		for (struct page *p = inode->pages->slots[i]; p; p = p->next)
			v[k++] = p;
	uint64_t sorted = k;
	if (max_pages < k) {
		select_lowest(v, k, max_pages);
		sorted = max_pages;
	}
	qsort(v, sorted, sizeof(*v), cmp_page_lblk);
	if (k)
		inode->pages->low_lblk = v[0]->lblk; /* the lowest of all */
	*out = v;
	*n = k;
	return 0;
}

/* Feeds one timed bulk write into the bandwidth estimate (an average
 * over the last few MiB, in bytes per second) that sizes the dirty limit. */
static void note_bandwidth(struct ordfs *fs, size_t bytes, uint64_t ns)
{
	if (ns == 0)
		return;
	uint64_t bps = (uint64_t)((double)bytes * 1e9 / (double)ns);
	uint64_t old = __atomic_load_n(&fs->write_bandwidth, __ATOMIC_RELAXED);
	uint64_t avg = old ? old - old / 16 + bps / 16 : bps;
	__atomic_store_n(&fs->write_bandwidth, avg, __ATOMIC_RELAXED);
}

/* Writes pages v[0..n) (consecutive logical blocks) to physical blocks
 * starting at phys, through one aligned buffer of at most WB_BUFFER_BYTES
 * (reused, so a large run does not fault in fresh memory; aligned, so a
 * bulk write can go to the disk directly, BLOCKDEV_DIRECT_BULK).
 * Background writeback (`paced`) goes in chunks of WB_CHUNK_BYTES and lets
 * waited-on syncs go first before each (flush/gate.h); a sync's own
 * writeback goes in chunks as large as the buffer. */
static int write_run(struct ordfs *fs, struct page **v, uint32_t n, uint64_t phys, bool paced)
{
	uint32_t bs = fs->block_size;
	uint32_t per_chunk = (paced ? WB_CHUNK_BYTES : WB_BUFFER_BYTES) / bs;
	if (per_chunk == 0)
		per_chunk = 1;
	if (per_chunk > n)
		per_chunk = n;
	uint8_t *buf;
	if (posix_memalign((void **)&buf, BLOCKDEV_DIRECT_ALIGN, (size_t)per_chunk * bs) != 0)
		return -ENOMEM;
	int err = 0;
	for (uint32_t at = 0; at < n && !err; at += per_chunk) {
		uint32_t k = n - at < per_chunk ? n - at : per_chunk;
		for (uint32_t i = 0; i < k; i++)
			memcpy(buf + (size_t)i * bs, v[at + i]->data, bs);
		if (paced)
			sync_gate_yield(&fs->sync_gate, WB_YIELD_MAX_US);
		size_t len = (size_t)k * bs;
		uint64_t t0 = latency_now_ns();
		err = blockdev_write(fs->bd, buf, len, (phys + at) * bs);
		if (!err && len >= BLOCKDEV_DIRECT_MIN)
			note_bandwidth(fs, len, latency_now_ns() - t0);
	}
	free(buf);
	return err;
}

/* data=journal: pages v[0..n) become the contents of blocks phys.. in
 * handle h (logged with it, written home at checkpoint). */
static int log_run(struct ordfs *fs, struct handle *h, struct page **v, uint32_t n,
		   uint64_t phys)
{
	int err = 0;
	for (uint32_t i = 0; i < n && !err; i++) {
		struct buf *b = bcache_peek(fs->cache, phys + i);
		if (!b)
			err = bcache_get_new(fs->cache, phys + i, &b);
		if (err)
			break;
		err = journal_get_write_access(h, b, 0);
		if (!err)
			memcpy(b->data, v[i]->data, fs->block_size);
		bcache_put(fs->cache, b);
	}
	return err;
}

static bool data_logged(const struct ordfs *fs)
{
	return fs->opts.data_mode == JOURNAL_DATA_JOURNAL;
}

/* Number of blocks from phys on, at most n, whose cached state (see the
 * header: cached blocks are written through the log) is `cached`. */
static uint32_t cached_run(struct ordfs *fs, uint64_t phys, uint32_t n, bool cached)
{
	uint32_t k = 0;
	while (k < n && bcache_contains(fs->cache, phys + k) == cached)
		k++;
	return k;
}

/* The longest run one handle may log beside `overhead` other credits. */
static uint32_t loggable(struct ordfs *fs, uint32_t n, uint32_t overhead)
{
	uint32_t max = journal_max_credits(fs->journal);
	uint32_t room = max > overhead + 1 ? max - overhead - 1 : 1;
	return n < room ? n : room;
}

/* After background writeback (`paced`) wrote new data in place, makes it
 * durable itself, before the handle that makes it reachable: so no commit
 * someone waits for needs F1 for another file's data (the flush is the
 * heavy writer's to pay).  A sync's own data is left to its commit's F1
 * (one flush, not two).  Returns, in *needs_f1, whether the handle must
 * still order the data. */
static int flush_own_data(struct ordfs *fs, bool paced, bool *needs_f1)
{
	*needs_f1 = fs->opts.data_mode == JOURNAL_DATA_ORDERED;
	if (!paced || !*needs_f1 || !fs->opts.barrier)
		return 0;
	int err = flush_guard_flush_since(fs->bd, flush_guard_mark(fs->bd));
	if (!err)
		*needs_f1 = false;
	return err;
}

/* Allocates, writes [J1] and maps a run of delayed pages (consecutive
 * logical blocks, all reserved); with `log`, the data goes into the log
 * with the mapping instead of in place.  Returns the number of pages done. */
static int64_t writeback_delayed(struct ordfs *fs, struct inode *inode, struct page **v,
				 uint32_t n, uint64_t goal, bool log, bool paced)
{
	uint64_t start;
	uint32_t got;
	uint32_t meta = extent_credits(fs, inode, 1) + 1;
	if (log)
		n = loggable(fs, n, meta + alloc_credits(fs->alloc, n));
	int err = alloc_claim_blocks(fs->alloc, goal, n, ALLOC_FROM_RESERVATION, &start, &got);
	if (err)
		return err;
	if (!log) {
		/* A reused block whose old contents are still cached is
		 * written through the log (header: coherence). */
		uint32_t keep = cached_run(fs, start, got, false);
		if (keep == 0) {
			log = true;
			keep = loggable(fs, got, meta + alloc_credits(fs->alloc, got));
		}
		if (keep < got) {
			alloc_unclaim_blocks(fs->alloc, start + keep, got - keep,
					     ALLOC_FROM_RESERVATION);
			got = keep;
		}
	}
	if (!log)
		err = write_run(fs, v, got, start, paced);
	bool needs_f1 = false;
	if (!err && !log)
		err = flush_own_data(fs, paced, &needs_f1);
	if (err)
		goto unclaim;

	struct handle *h;
	err = journal_start(fs->journal, meta + alloc_credits(fs->alloc, got) + (log ? got : 0),
			    &h);
	if (err)
		goto unclaim;
	if (needs_f1)
		journal_ordered_data(h); /* the data written above becomes reachable */
	bool undo = false; /* nothing recorded: the claim can go back */
	err = alloc_mark_blocks(fs->alloc, h, start, got);
	if (err) {
		undo = true;
	} else {
		struct ordfs_extent e = { v[0]->lblk, start, got, 0 };
		err = extent_insert(fs, h, inode, &e); /* changes nothing if it fails */
		undo = err && alloc_unmark_blocks(fs->alloc, h, start, got) == 0;
	}
	if (!err && log)
		err = log_run(fs, h, v, got, start); /* fails only if the journal aborted */
	if (!err) {
		uint64_t end = (v[0]->lblk + got) * fs->block_size;
		uint64_t disk = end < inode->size ? end : inode->size;
		if (disk > inode->d.size)
			inode->d.size = disk;
		err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	}
	int serr = journal_stop(h);
	if (undo)
		goto unclaim; /* the pages stay delayed, their reservations back */
	if (!err)
		err = serr;
	if (err)
		return err; /* the journal has aborted: nothing to undo safely */
	for (uint32_t i = 0; i < got; i++)
		v[i]->reserved = false; /* the reservation became the block */
	inode->pages->reserved -= got;
	return got;
unclaim:
	alloc_unclaim_blocks(fs->alloc, start, got, ALLOC_FROM_RESERVATION);
	return err;
}

/* Gives the mapped blocks [lblk, lblk + count) the extent flags `flags`,
 * in as few handles as the journal allows.  Each handle also raises d.size
 * to disk_size (if larger), so no written block is ever past d.size.
 * `orders_data`: the change makes data written in place visible (an
 * unwritten extent becomes written), so in data=ordered its commit needs
 * F1 first. */
int file_set_extent_flags(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint64_t count,
			  uint32_t flags, uint64_t disk_size, bool orders_data)
{
	uint32_t per_handle = 8; /* record changes; a range inside one record needs 5 */
	while (per_handle > 2 &&
	       extent_credits(fs, inode, per_handle) > journal_max_credits(fs->journal))
		per_handle /= 2;
	for (;;) {
		struct handle *h;
		int err = journal_start(fs->journal, extent_credits(fs, inode, per_handle), &h);
		if (err)
			return err;
		if (orders_data && fs->opts.data_mode == JOURNAL_DATA_ORDERED)
			journal_ordered_data(h);
		int more = extent_set_flags(fs, h, inode, lblk, count, flags, per_handle);
		if (more >= 0 && disk_size > inode->d.size) {
			inode->d.size = disk_size;
			err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
		}
		int serr = journal_stop(h);
		if (more < 0)
			return more;
		if (err || serr)
			return err ? err : serr;
		if (more == 0)
			return 0;
	}
}

/* Writes a run of pages over mapped blocks, in place or through the log
 * (data=journal, blocks with cached buffers, and with `log_new` new data:
 * blocks of an unwritten extent).  Over an unwritten extent the data goes
 * first, then a handle marks the blocks written (and moves d.size past
 * them): the conversion is what makes the data visible, so like an
 * allocation it must not commit before the data is written [J1] (or
 * logged).  Returns pages done. */
static int64_t writeback_mapped(struct ordfs *fs, struct inode *inode, struct page **v,
				uint32_t n, const struct ordfs_extent *ext, bool log_new, bool paced)
{
	uint64_t off_in_ext = v[0]->lblk - ext->logical;
	uint64_t room = ext->len - off_in_ext;
	uint32_t len = n < room ? n : (uint32_t)room;
	uint64_t phys = ext->physical + off_in_ext;
	bool log = data_logged(fs) || (log_new && (ext->flags & ORDFS_EXT_UNWRITTEN));
	if (!log) {
		log = bcache_contains(fs->cache, phys);
		len = cached_run(fs, phys, len, log);
	}
	int err;
	if (log) {
		len = loggable(fs, len, 0);
		struct handle *h;
		err = journal_start(fs->journal, len, &h);
		if (!err) {
			err = log_run(fs, h, v, len, phys);
			/* fsync and fdatasync must wait for this transaction. */
			uint64_t tid = journal_handle_tid(h);
			if (tid > inode->sync_tid)
				inode->sync_tid = tid;
			if (tid > inode->datasync_tid)
				inode->datasync_tid = tid;
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
	} else {
		err = write_run(fs, v, len, phys, paced);
	}
	if (!err && (ext->flags & ORDFS_EXT_UNWRITTEN)) {
		uint64_t end = (v[0]->lblk + len) * fs->block_size;
		bool needs_f1 = false;
		if (!log)
			err = flush_own_data(fs, paced, &needs_f1);
		if (!err)
			err = file_set_extent_flags(fs, inode, v[0]->lblk, len, 0,
						    end < inode->size ? end : inode->size,
						    needs_f1);
	}
	return err ? (int64_t)err : (int64_t)len;
}

/* Length of the run of pages starting at v[0] with consecutive blocks and
 * the same reserved state. */
static uint32_t run_length(struct page **v, uint64_t n)
{
	uint32_t len = 1;
	while (len < n && len < ORDFS_EXT_MAX_LEN && v[len]->lblk == v[0]->lblk + len &&
	       v[len]->reserved == v[0]->reserved)
		len++;
	return len;
}

/* Writes the inode with d.size = inode->size; a datasync change only if
 * the size moved (fdatasync skips timestamp-only changes). */
static int update_disk_size(struct ordfs *fs, struct inode *inode)
{
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
	if (err)
		return err;
	unsigned flags = inode->d.size != inode->size ? INODE_WRITE_DATASYNC : 0;
	inode->d.size = inode->size;
	err = inode_write(fs, h, inode, flags);
	int serr = journal_stop(h);
	return err ? err : serr;
}

/* Writes back the inode's pages, lowest first, at most max_pages of them;
 * see file_writeback_locked. */
static int writeback_pages(struct ordfs *fs, struct inode *inode, bool waited,
			   uint64_t max_pages)
{
	struct page **v;
	uint64_t n;
	int err = collect_pages(inode, &v, &n, max_pages);
	if (err)
		return err;
	if (n > max_pages)
		n = max_pages;

	/* Little data that someone waits for: its new blocks (delayed, or
	 * over unwritten extents) are logged (header). */
	bool log_new = data_logged(fs) ||
		       (waited && fs->opts.data_mode == JOURNAL_DATA_ORDERED &&
			n * fs->block_size <= LOG_SMALL_BYTES);

	uint64_t goal = 0;
	uint64_t i = 0;
	while (i < n && !err) {
		uint32_t len = run_length(v + i, n - i);
		int64_t done;
		if (v[i]->reserved) {
			done = writeback_delayed(fs, inode, v + i, len, goal, log_new, !waited);
		} else {
			struct ordfs_extent ext;
			int found = extent_lookup(fs, inode, v[i]->lblk, &ext);
			if (found == 1)
				done = writeback_mapped(fs, inode, v + i, len, &ext, log_new,
							!waited);
			else
				done = found < 0 ? found : -EUCLEAN;
			if (found == 1)
				goal = ext.physical + ext.len;
		}
		if (done < 0) {
			err = (int)done;
			break;
		}
		for (int64_t k = 0; k < done; k++)
			page_remove(fs, inode, v[i + (uint64_t)k]);
		i += (uint64_t)done;
	}
	free(v);
	/* d.size moves to the size only once no page below it is left. */
	if (!err && !file_has_dirty(inode) &&
	    (inode->d.size != inode->size || inode->times_dirty || inode->atime_dirty))
		err = update_disk_size(fs, inode);
	return err;
}

/* Writes back up to max_pages pages; errors as file_writeback_locked. */
static int writeback_some_locked(struct ordfs *fs, struct inode *inode, bool waited,
				 uint64_t max_pages)
{
	int err;
	unsigned retries = 0;
	do /* metadata (extent blocks) may wait for freed blocks to commit */
		err = writeback_pages(fs, inode, waited, max_pages);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	if (err && err != -EROFS && err != -ENOMEM)
		errseq_set(&inode->wb_err, err);
	return err;
}

int file_writeback_locked(struct ordfs *fs, struct inode *inode, bool waited)
{
	int err;
	unsigned retries = 0;
	do /* metadata (extent blocks) may wait for freed blocks to commit */
		err = writeback_pages(fs, inode, waited, UINT64_MAX);
	while (ordfs_should_retry_alloc(fs, err, &retries));
	/* Pages that failed stay dirty (written again next time); every open
	 * file description of the file hears about it once. */
	if (err && err != -EROFS && err != -ENOMEM)
		errseq_set(&inode->wb_err, err);
	return err;
}

struct writeback_pass {
	bool waited;
	uint64_t max_pages; /* per file, per hold of its lock */
	bool sliced;        /* slice after slice, the file's pages at the start */
};

static bool has_writeback_work(const struct inode *inode)
{
	return file_has_dirty(inode) || inode->d.size != inode->size || inode->times_dirty;
}

static int writeback_one(struct ordfs *fs, struct inode *inode, void *ctx)
{
	const struct writeback_pass *pass = ctx;
	ordfs_rwlock_wrlock(&inode->lock);
	if ((inode->d.mode & 0170000) != 0100000 || inode->d.links == 0) {
		ordfs_rwlock_unlock(&inode->lock);
		return 0; /* an unlinked file's data dies with it */
	}
	int err = 0;
	if (has_writeback_work(inode))
		err = writeback_some_locked(fs, inode, pass->waited, pass->max_pages);
	if (pass->sliced && !err && inode->pages) {
		/* As many more slices as the file had pages when the pass came
		 * to it, the lock let go between them so its writer goes on;
		 * pages dirtied meanwhile may wait for the next pass. */
		uint64_t slices = inode->pages->count / pass->max_pages + 1;
		while (!err && slices-- > 0 && has_writeback_work(inode)) {
			ordfs_rwlock_unlock(&inode->lock);
			ordfs_rwlock_wrlock(&inode->lock);
			if (inode->d.links == 0)
				break;
			err = writeback_some_locked(fs, inode, false, pass->max_pages);
		}
	}
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}

int file_writeback_all(struct ordfs *fs, bool waited)
{
	struct writeback_pass pass = { waited, UINT64_MAX, false };
	return inode_cache_for_each(fs, writeback_one, &pass);
}

int file_writeback_periodic(struct ordfs *fs)
{
	struct writeback_pass pass = { false, BG_SLICE_BYTES / fs->block_size, true };
	return inode_cache_for_each(fs, writeback_one, &pass);
}

uint64_t file_background_pages(const struct ordfs *fs)
{
	return file_dirty_limit_pages(fs) / 2;
}

int file_writeback_slices(struct ordfs *fs, uint64_t max_pages)
{
	struct writeback_pass pass = { false, max_pages, false };
	return inode_cache_for_each(fs, writeback_one, &pass);
}

int file_writeback_early(struct ordfs *fs)
{
	int err = 0;
	/* Slices of every dirty file, round after round, down to half the
	 * threshold (or until a round changes nothing). */
	for (;;) {
		uint64_t before = __atomic_load_n(&fs->dirty_pages, __ATOMIC_RELAXED);
		if (before <= file_background_pages(fs) / 2)
			break;
		err = file_writeback_slices(fs, BG_SLICE_BYTES / fs->block_size);
		if (err || __atomic_load_n(&fs->dirty_pages, __ATOMIC_RELAXED) >= before)
			break;
	}
	return err;
}

/* ---- read / write ------------------------------------------------------- */

ssize_t ordfs_read(struct ordfs *fs, struct inode *inode, void *buf, size_t len, uint64_t off)
{
	uint32_t bs = fs->block_size;
	uint8_t *out = buf;
	uint8_t *tmp = malloc(bs);
	if (!tmp)
		return -ENOMEM;

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
			struct page *page = page_find(inode, lblk);
			if (page) {
				memcpy(out + done, page->data + in, chunk);
			} else {
				int err = read_block(fs, inode, lblk, tmp);
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
	bool touch = done >= 0 && fs->opts.atime.mode != ATIME_NOATIME &&
		     atime_needs_update(&fs->opts.atime, false, inode->d.atime, inode->d.mtime,
					inode->d.ctime, ordfs_now());
	ordfs_rwlock_unlock(&inode->lock);
	free(tmp);
	if (touch)
		(void)atime_touch(fs, inode); /* a read never fails for its atime */
	return done;
}

ssize_t ordfs_write(struct ordfs *fs, struct inode *inode, const void *buf, size_t len,
		    uint64_t off)
{
	uint32_t bs = fs->block_size;
	const uint8_t *in = buf;
	ssize_t done = 0;
	int err = 0;

	err = ordfs_writable(fs);
	if (err)
		return err;
	if (off + len < off || off + len > (1ull << 62))
		return -EFBIG;

	ordfs_rwlock_wrlock(&inode->lock);
	while ((size_t)done < len) {
		uint64_t pos = off + (uint64_t)done;
		uint64_t lblk = pos / bs;
		uint32_t at = (uint32_t)(pos % bs);
		size_t chunk = bs - at < len - (size_t)done ? bs - at : len - (size_t)done;
		struct page *page;
		err = page_get(fs, inode, lblk, at == 0 && chunk == bs, &page);
		if (err)
			break;
		memcpy(page->data + at, in + done, chunk);
		done += (ssize_t)chunk;
		if (pos + chunk > inode->size)
			inode->size = pos + chunk;
	}
	if (done > 0) {
		inode->d.mtime = inode->d.ctime = ordfs_now();
		/* Set-user-ID is not cleared here: the kernel does it, with a
		 * setattr before the write, for writers without CAP_FSETID. */
		inode->times_dirty = true;
	}
	uint64_t limit = file_dirty_limit_pages(fs);
	uint64_t dirty = __atomic_load_n(&fs->dirty_pages, __ATOMIC_RELAXED);
	if (dirty > file_background_pages(fs))
		ordfs_kick_writeback(fs);
	if (dirty > limit) {
		/* Throttled: the writer writes back its own lowest pages, what
		 * brings the dirty data under the limit plus a slice, not its
		 * whole file (with a 1 GiB limit that was seconds in one write). */
		uint64_t pages = dirty - limit + BG_SLICE_BYTES / fs->block_size;
		int werr = writeback_some_locked(fs, inode, false, pages);
		if (werr && done == 0)
			err = werr;
	}
	ordfs_rwlock_unlock(&inode->lock);
	return done > 0 ? done : err;
}

/* Zeroes the part of the last block past a new, smaller size so that
 * growing the file later never shows old bytes. */
static int zero_tail_of_last_block(struct ordfs *fs, struct inode *inode, uint64_t size)
{
	uint32_t in = (uint32_t)(size % fs->block_size);
	if (in == 0)
		return 0;
	return file_zero_partial(fs, inode, size / fs->block_size, in, fs->block_size);
}

int file_drop_pages(struct ordfs *fs, struct inode *inode, uint64_t first, uint64_t end)
{
	struct page **v;
	uint64_t n;
	int err = collect_pages(inode, &v, &n, UINT64_MAX);
	if (err)
		return err;
	for (uint64_t i = 0; i < n; i++)
		if (v[i]->lblk >= first && v[i]->lblk < end)
			page_remove(fs, inode, v[i]);
	free(v);
	return 0;
}

int file_page_blocks(struct inode *inode, uint64_t **out, uint64_t *n)
{
	struct page **v;
	int err = collect_pages(inode, &v, n, UINT64_MAX);
	if (err)
		return err;
	uint64_t *lblks = malloc((*n ? *n : 1) * sizeof(*lblks));
	for (uint64_t i = 0; lblks && i < *n; i++)
		lblks[i] = v[i]->lblk;
	free(v);
	if (!lblks)
		return -ENOMEM;
	*out = lblks;
	return 0;
}

int file_zero_partial(struct ordfs *fs, struct inode *inode, uint64_t lblk, uint32_t from,
		      uint32_t to)
{
	struct page *page = page_find(inode, lblk);
	if (!page) {
		struct ordfs_extent ext;
		int mapped = extent_lookup(fs, inode, lblk, &ext);
		if (mapped <= 0 || (ext.flags & ORDFS_EXT_UNWRITTEN))
			return mapped < 0 ? mapped : 0; /* reads as zeros already */
		int err = page_get(fs, inode, lblk, false, &page);
		if (err)
			return err;
	}
	memset(page->data + from, 0, to - from);
	return 0;
}

int ordfs_unmap_range(struct ordfs *fs, struct inode *inode, uint64_t first_lblk,
		      uint64_t count)
{
	/* As many records per handle as the journal allows, up to 16. */
	uint32_t per_handle = 16;
	while (per_handle > 1 &&
	       extent_credits(fs, inode, per_handle) > journal_max_credits(fs->journal))
		per_handle /= 2;
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

int ordfs_unmap_from(struct ordfs *fs, struct inode *inode, uint64_t first_lblk)
{
	return ordfs_unmap_range(fs, inode, first_lblk, UINT64_MAX - first_lblk);
}

/* Writes the lowered size and puts the inode on the orphan list in one
 * handle, so a crash before the blocks are freed is finished at mount. */
static int truncate_lower_size(struct ordfs *fs, struct inode *inode)
{
	struct handle *h;
	int err = journal_start(fs->journal, INODE_WRITE_CREDITS + 2, &h);
	if (err)
		return err;
	err = ordfs_truncate_begin(fs, h, inode);
	int serr = journal_stop(h);
	return err ? err : serr;
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
		err = file_drop_pages(fs, inode, keep_blocks, UINT64_MAX);
		if (!err)
			err = zero_tail_of_last_block(fs, inode, size);
		if (!err) {
			inode->size = size;
			if (inode->d.size > size)
				inode->d.size = size;
			err = truncate_lower_size(fs, inode);
		}
		if (!err)
			err = ordfs_unmap_from(fs, inode, keep_blocks);
		if (!err)
			err = ordfs_truncate_end(fs, inode);
	} else if (size > inode->size) {
		inode->size = size; /* a hole; d.size follows at writeback */
	}
	if (!err) {
		struct handle *h;
		err = journal_start(fs->journal, INODE_WRITE_CREDITS, &h);
		if (!err) {
			inode->d.mtime = inode->d.ctime = ordfs_now();
			if (!file_has_dirty(inode))
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
