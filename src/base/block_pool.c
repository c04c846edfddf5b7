/*
 * block_pool.c - slabs of equal blocks (block_pool.h says why and the
 * rules).
 *
 * A slab is SLAB_BLOCKS blocks in one anonymous mapping, with its own
 * free list (the first word of a free block links to the next).  The pool
 * keeps the slabs that have free blocks on a list, warmest first; a slab
 * with none left is off the list until a block comes back.
 */
#include "base/block_pool.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/ordfs_assert.h"
#include "lock/lock.h"

#define SLAB_BLOCKS 512u

struct block_slab {
	struct block_slab *prev, *next; /* on the pool's list of slabs with free blocks */
	uint8_t *base;
	void *free;                    /* this slab's free blocks */
	uint32_t nfree;
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
	uint64_t in_use;
	uint64_t retain_blocks;
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
	s->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->base == MAP_FAILED) {
		free(s);
		return NULL;
	}
	/* Link the blocks so the first handed out is the lowest address. */
	for (uint32_t i = SLAB_BLOCKS; i-- > 0;) {
		void *b = s->base + (size_t)i * pool->block_size;
		*(void **)b = s->free;
		s->free = b;
	}
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
	if (!s)
		s = slab_new(pool);
	void *b = NULL;
	if (s) {
		b = s->free;
		s->free = *(void **)b;
		s->cold = false;
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
		/* All free: to the back, and to the kernel if the pool keeps
		 * enough warm blocks without it. */
		if (s->listed)
			unlist(pool, s);
		list_back(pool, s);
		if (!s->cold && pool->free_blocks - SLAB_BLOCKS >= pool->retain_blocks) {
			madvise(s->base, (size_t)SLAB_BLOCKS * pool->block_size, MADV_FREE);
			s->cold = true;
		}
	} else if (!s->listed) {
		list_front(pool, s);
	} else if (pool->head != s) {
		unlist(pool, s);
		list_front(pool, s);
	}
	ordfs_mutex_unlock(&pool->lock);
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
