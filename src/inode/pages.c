/*
 * pages.c - the page index of regular files (pages.h).
 *
 * A hash of an inode's pages by logical block; the buckets double whenever
 * the pages outnumber them, so a lookup stays O(1) however much a writer
 * has dirty (with 256 fixed buckets, 1 GiB of dirty data made the page
 * lookup 77% of the daemon's CPU in bench B4).
 */
#include <errno.h>
#include <stdlib.h>

#include "fs.h"
#include "inode.h"
#include "pages.h"
#include "base/block_pool.h"
#include "alloc/alloc.h"

/* Hash buckets of a file's page cache at first; they double as pages
 * come.  Small: most files have a page or two, and 256 zeroed buckets per
 * file were 2.5% of the daemon's time creating small files. */
#define PAGE_SLOTS_MIN 8u

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
	struct block_pool *pool; /* where the pages' bytes go back */
};

struct page *page_new(struct ordfs *fs, uint64_t lblk)
{
	struct page *page = malloc(sizeof(*page));
	if (!page)
		return NULL;
	page->data = block_pool_get(fs->page_pool, &page->slab);
	if (!page->data) {
		free(page);
		return NULL;
	}
	page->lblk = lblk;
	page->reserved = false;
	page->next = NULL;
	return page;
}

static void page_release(struct block_pool *pool, struct page *page)
{
	block_pool_put(pool, page->slab, page->data);
	free(page);
}

void page_free(struct ordfs *fs, struct page *page)
{
	page_release(fs->page_pool, page);
}

bool pages_has_dirty(const struct inode *inode)
{
	return inode->pages && inode->pages->count > 0;
}

uint64_t pages_count(const struct inode *inode)
{
	return inode->pages ? inode->pages->count : 0;
}

uint64_t pages_delayed_blocks(const struct inode *inode)
{
	return inode->pages ? inode->pages->reserved : 0;
}

uint64_t pages_st_blocks(const struct inode *inode)
{
	return inode->d.blocks + pages_delayed_blocks(inode);
}

static uint64_t page_buckets(const struct page_cache *pc)
{
	return pc ? 1ull << pc->bits : 0;
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

struct page *pages_find(struct inode *inode, uint64_t lblk)
{
	if (!inode->pages)
		return NULL;
	for (struct page *p = *page_slot(inode->pages, lblk); p; p = p->next)
		if (p->lblk == lblk)
			return p;
	return NULL;
}

void pages_remove(struct ordfs *fs, struct inode *inode, struct page *page)
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
	page_free(fs, page);
}

void pages_destroy(struct inode *inode)
{
	if (!inode->pages)
		return;
	for (uint64_t i = 0; i < page_buckets(inode->pages); i++) {
		struct page *p = inode->pages->slots[i];
		while (p) {
			struct page *next = p->next;
			page_release(inode->pages->pool, p);
			p = next;
		}
	}
	free(inode->pages->slots);
	free(inode->pages);
	inode->pages = NULL;
}

int pages_insert(struct ordfs *fs, struct inode *inode, struct page *page)
{
	if (!inode->pages) {
		inode->pages = page_cache_new();
		if (!inode->pages)
			return -ENOMEM;
		inode->pages->pool = fs->page_pool;
	}
	page_cache_grow(inode->pages);
	struct page **slot = page_slot(inode->pages, page->lblk);
	page->next = *slot;
	*slot = page;
	inode->pages->count++;
	inode->pages->reserved += page->reserved;
	if (page->lblk < inode->pages->low_lblk)
		inode->pages->low_lblk = page->lblk;
	__atomic_add_fetch(&fs->dirty_pages, 1, __ATOMIC_RELAXED);
	return 0;
}

void pages_reservation_used(struct inode *inode, struct page *page)
{
	if (page->reserved) {
		page->reserved = false;
		inode->pages->reserved--;
	}
}

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

int pages_collect(struct inode *inode, struct page ***out, uint64_t *n, uint64_t max_pages)
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

int pages_drop_range(struct ordfs *fs, struct inode *inode, uint64_t first, uint64_t end)
{
	struct page **v;
	uint64_t n;
	int err = pages_collect(inode, &v, &n, UINT64_MAX);
	if (err)
		return err;
	for (uint64_t i = 0; i < n; i++)
		if (v[i]->lblk >= first && v[i]->lblk < end)
			pages_remove(fs, inode, v[i]);
	free(v);
	return 0;
}

int pages_blocks(struct inode *inode, uint64_t **out, uint64_t *n)
{
	struct page **v;
	int err = pages_collect(inode, &v, n, UINT64_MAX);
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
