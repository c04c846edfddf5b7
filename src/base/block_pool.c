/*
 * block_pool.c - slabs of equal blocks (block_pool.h says why and the
 * rules).
 *
 * A slab is SLAB_BLOCKS blocks in one anonymous mapping.  Its free blocks
 * are those on its free list (the first word of a free block links to the
 * next) and those from index `fresh` on, never handed out since the slab
 * was last wholly free.  A slab whose last block comes back forgets its
 * list (free = NULL, fresh = 0): nothing the pool needs is left in a
 * wholly free slab, so the kernel may drop its pages (MADV_FREE pages read
 * back as zeros) without harm.
 *
 * The pool keeps the slabs that have free blocks on a list: those in use
 * in front, the one most recently given a block back first; the wholly
 * free ones behind them, the most recently freed last.  A slab with no
 * free block is off the list until one comes back.
 */
#include "base/block_pool.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/ordfs_assert.h"
#include "lock/lock.h"

#define SLAB_BLOCKS 512u
#define HUGE_PAGE ((size_t)2 << 20) /* x86-64's and arm64's (4 KiB pages) */

struct block_slab {
	struct block_slab *prev, *next; /* on the pool's list of slabs with free blocks */
	uint8_t *base;
	void *free;                    /* freed blocks below `fresh` */
	uint32_t nfree;
	uint32_t fresh;                /* blocks from here on: free, never linked */
	uint64_t idle_gen;             /* trim_gen when it became wholly free */
	bool listed;
	bool cold;                     /* given to the kernel (MADV_FREE) since */
};

struct block_pool {
	struct ordfs_mutex lock;
	uint32_t block_size;
	struct block_slab *head, *tail; /* slabs with free blocks, warmest first */
	struct block_slab **slabs;      /* all of them, for destroy */
	size_t nslabs, cap;
	uint64_t free_blocks;
	uint64_t cold_blocks;           /* of the cold slabs: not warm */
	uint64_t in_use;
	uint64_t retain_blocks;
	uint64_t trim_gen;              /* block_pool_trim calls so far */
};

int block_pool_new(uint32_t block_size, struct block_pool **out)
{
	struct block_pool *pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	ORDFS_ASSERT(block_size >= sizeof(void *) && block_size % sizeof(void *) == 0);
	pool->block_size = block_size;
	pool->retain_blocks = BLOCK_POOL_RETAIN / block_size;
	ordfs_mutex_init(&pool->lock, LOCK_BLOCK_POOL, "page pool");
	*out = pool;
	return 0;
}

void block_pool_destroy(struct block_pool *pool)
{
	if (!pool)
		return;
	ORDFS_ASSERT(pool->in_use == 0); /* every page was given back */
	for (size_t i = 0; i < pool->nslabs; i++) {
		munmap(pool->slabs[i]->base, (size_t)SLAB_BLOCKS * pool->block_size);
		free(pool->slabs[i]);
	}
	free(pool->slabs);
	ordfs_mutex_destroy(&pool->lock);
	free(pool);
}

static void unlist(struct block_pool *pool, struct block_slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		pool->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		pool->tail = s->prev;
	s->prev = s->next = NULL;
	s->listed = false;
}

static void list_front(struct block_pool *pool, struct block_slab *s)
{
	s->prev = NULL;
	s->next = pool->head;
	if (pool->head)
		pool->head->prev = s;
	else
		pool->tail = s;
	pool->head = s;
	s->listed = true;
}

static void list_back(struct block_pool *pool, struct block_slab *s)
{
	s->next = NULL;
	s->prev = pool->tail;
	if (pool->tail)
		pool->tail->next = s;
	else
		pool->head = s;
	pool->tail = s;
	s->listed = true;
}

/* A slab's memory: when it is a whole number of huge pages (512 blocks of
 * 4 KiB: one), aligned to them and marked MADV_HUGEPAGE, so that the
 * kernel can fault it in with one fault a huge page instead of one a
 * block.  NULL without memory. */
static uint8_t *slab_map(size_t bytes)
{
	int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
	if (bytes % HUGE_PAGE != 0) {
		void *p = mmap(NULL, bytes, prot, flags, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	/* Map a huge page more than needed, keep the aligned part. */
	uint8_t *p = mmap(NULL, bytes + HUGE_PAGE, prot, flags, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t addr = (uintptr_t)p;
	size_t head = (HUGE_PAGE - addr % HUGE_PAGE) % HUGE_PAGE;
	if (head)
		munmap(p, head);
	if (HUGE_PAGE - head)
		munmap(p + head + bytes, HUGE_PAGE - head);
	/* Advice only: where THP is off, small pages as before. */
	(void)madvise(p + head, bytes, MADV_HUGEPAGE);
	return p + head;
}

/* A new slab on the list (lock held); NULL without memory. */
static struct block_slab *slab_new(struct block_pool *pool)
{
	if (pool->nslabs == pool->cap) {
		size_t cap = pool->cap ? 2 * pool->cap : 16;
		struct block_slab **v = realloc(pool->slabs, cap * sizeof(*v));
		if (!v)
			return NULL;
		pool->slabs = v;
		pool->cap = cap;
	}
	struct block_slab *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	size_t bytes = (size_t)SLAB_BLOCKS * pool->block_size;
	s->base = slab_map(bytes);
	if (!s->base) {
		free(s);
		return NULL;
	}
	/* Nothing touched: each block's page is faulted in by its first user. */
	s->nfree = SLAB_BLOCKS;
	pool->free_blocks += SLAB_BLOCKS;
	pool->slabs[pool->nslabs++] = s;
	list_front(pool, s);
	return s;
}

void *block_pool_get(struct block_pool *pool, struct block_slab **slab)
{
	ordfs_mutex_lock(&pool->lock);
	struct block_slab *s = pool->head;
	if (s && s->nfree == SLAB_BLOCKS && pool->tail != s) {
		/* None in use has a free block: the most recently freed
		 * slab (the warmest), to the front while it fills. */
		s = pool->tail;
		unlist(pool, s);
		list_front(pool, s);
	}
	if (!s)
		s = slab_new(pool);
	void *b = NULL;
	if (s) {
		if (s->free) {
			b = s->free;
			s->free = *(void **)b;
		} else {
			ORDFS_ASSERT(s->fresh < SLAB_BLOCKS);
			b = s->base + (size_t)s->fresh++ * pool->block_size;
		}
		if (s->cold) {
			s->cold = false;
			pool->cold_blocks -= SLAB_BLOCKS;
		}
		if (--s->nfree == 0)
			unlist(pool, s);
		pool->free_blocks--;
		pool->in_use++;
	}
	ordfs_mutex_unlock(&pool->lock);
	*slab = s;
	return b;
}

void block_pool_put(struct block_pool *pool, struct block_slab *s, void *block)
{
	ORDFS_ASSERT((uint8_t *)block >= s->base &&
		     (uint8_t *)block < s->base + (size_t)SLAB_BLOCKS * pool->block_size);
	ordfs_mutex_lock(&pool->lock);
	*(void **)block = s->free;
	s->free = block;
	s->nfree++;
	pool->free_blocks++;
	pool->in_use--;
	if (s->nfree == SLAB_BLOCKS) {
		/* Wholly free: its list forgotten (see the top), to the back;
		 * block_pool_trim gives it to the kernel once it has stayed
		 * free long enough. */
		s->free = NULL;
		s->fresh = 0;
		s->idle_gen = pool->trim_gen;
		if (s->listed)
			unlist(pool, s);
		list_back(pool, s);
	} else if (!s->listed) {
		list_front(pool, s);
	} else if (pool->head != s) {
		unlist(pool, s);
		list_front(pool, s);
	}
	ordfs_mutex_unlock(&pool->lock);
}

void block_pool_trim(struct block_pool *pool)
{
	ordfs_mutex_lock(&pool->lock);
	uint64_t gen = ++pool->trim_gen;
	/* The wholly free slabs are the back of the list, the longest free
	 * nearest the front of them (checked: none before a slab in use);
	 * a slab qualifies once it was already free at the previous call. */
	struct block_slab *in_use = pool->tail;
	while (in_use && in_use->nfree == SLAB_BLOCKS)
		in_use = in_use->prev;
	for (struct block_slab *s = in_use; s; s = s->prev)
		ORDFS_ASSERT(s->nfree < SLAB_BLOCKS);
	for (struct block_slab *s = pool->tail; s != in_use; s = s->prev) {
		if (pool->free_blocks - pool->cold_blocks < pool->retain_blocks + SLAB_BLOCKS)
			break;
		if (s->cold || s->idle_gen + 2 > gen)
			continue;
		madvise(s->base, (size_t)SLAB_BLOCKS * pool->block_size, MADV_FREE);
		s->cold = true;
		pool->cold_blocks += SLAB_BLOCKS;
	}
	ordfs_mutex_unlock(&pool->lock);
}

uint64_t block_pool_cold_bytes(struct block_pool *pool)
{
	ordfs_mutex_lock(&pool->lock);
	uint64_t n = pool->cold_blocks * pool->block_size;
	ordfs_mutex_unlock(&pool->lock);
	return n;
}

uint64_t block_pool_in_use(struct block_pool *pool)
{
	ordfs_mutex_lock(&pool->lock);
	uint64_t n = pool->in_use;
	ordfs_mutex_unlock(&pool->lock);
	return n;
}

uint64_t block_pool_mapped_bytes(struct block_pool *pool)
{
	ordfs_mutex_lock(&pool->lock);
	uint64_t n = (uint64_t)pool->nslabs * SLAB_BLOCKS * pool->block_size;
	ordfs_mutex_unlock(&pool->lock);
	return n;
}
