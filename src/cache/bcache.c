/*
 * bcache.c - metadata buffer cache: hash table + LRU of unreferenced buffers.
 *
 * Owns: buffer memory, lookup, first read, reference counting and eviction.
 * Rules (see bcache.h): only unreferenced buffers are evicted; the cache
 * never writes; c->lock is a leaf lock.  A buffer's first read happens under
 * its io_lock, outside c->lock, so a slow read blocks only readers of that
 * same block.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bcache.h"
#include "../blockdev/blockdev.h"
#include "../lock/lock.h"
#include "../base/ordfs_assert.h"

struct bcache {
	struct blockdev *bd;
	uint32_t block_size;
	uint64_t block_count;
	uint32_t max_unreferenced;

	struct ordfs_mutex lock;
	struct buf **table;
	uint64_t table_mask;
	struct buf *lru_head, *lru_tail; /* least recently used first */
	uint64_t lru_count;
	struct bcache_stats stats;
};

static uint64_t hash_block(uint64_t blockno)
{
	blockno ^= blockno >> 33;
	blockno *= 0xff51afd7ed558ccdull;
	return blockno ^ (blockno >> 33);
}

int bcache_create(struct blockdev *bd, uint32_t block_size, uint64_t block_count,
		  uint32_t max_buffers, struct bcache **out)
{
	struct bcache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	uint64_t slots = 1024;
	while (slots < (uint64_t)max_buffers * 2 && slots < (1u << 22))
		slots <<= 1;
	c->table = calloc(slots, sizeof(*c->table));
	if (!c->table) {
		free(c);
		return -ENOMEM;
	}
	c->table_mask = slots - 1;
	c->bd = bd;
	c->block_size = block_size;
	c->block_count = block_count;
	c->max_unreferenced = max_buffers ? max_buffers : 1;
	ordfs_mutex_init(&c->lock, LOCK_BCACHE, "bcache lock");
	*out = c;
	return 0;
}

static void buf_free(struct buf *b)
{
	ordfs_mutex_destroy(&b->io_lock);
	free(b->data);
	free(b);
}

void bcache_destroy(struct bcache *c)
{
	if (!c)
		return;
	for (uint64_t i = 0; i <= c->table_mask; i++) {
		struct buf *b = c->table[i];
		while (b) {
			struct buf *next = b->hash_next;
			buf_free(b);
			b = next;
		}
	}
	free(c->table);
	ordfs_mutex_destroy(&c->lock);
	free(c);
}

uint32_t bcache_block_size(const struct bcache *c)
{
	return c->block_size;
}

struct blockdev *bcache_device(const struct bcache *c)
{
	return c->bd;
}

static void lru_remove(struct bcache *c, struct buf *b)
{
	if (b->lru_prev)
		b->lru_prev->lru_next = b->lru_next;
	else
		c->lru_head = b->lru_next;
	if (b->lru_next)
		b->lru_next->lru_prev = b->lru_prev;
	else
		c->lru_tail = b->lru_prev;
	b->lru_prev = b->lru_next = NULL;
	c->lru_count--;
}

static void lru_append(struct bcache *c, struct buf *b)
{
	b->lru_next = NULL;
	b->lru_prev = c->lru_tail;
	if (c->lru_tail)
		c->lru_tail->lru_next = b;
	else
		c->lru_head = b;
	c->lru_tail = b;
	c->lru_count++;
}

static struct buf **hash_slot(struct bcache *c, uint64_t blockno)
{
	return &c->table[hash_block(blockno) & c->table_mask];
}

static void hash_unlink(struct bcache *c, struct buf *b)
{
	struct buf **pp = hash_slot(c, b->blockno);
	while (*pp != b)
		pp = &(*pp)->hash_next;
	*pp = b->hash_next;
}

/* Evicts least recently used buffers beyond the limit.  c->lock held. */
static void evict_excess(struct bcache *c)
{
	while (c->lru_count > c->max_unreferenced) {
		struct buf *b = c->lru_head;
		lru_remove(c, b);
		hash_unlink(c, b);
		c->stats.evictions++;
		c->stats.cached--;
		buf_free(b);
	}
}

/* The cached buffer for blockno in its slot, with a reference taken, or
 * NULL.  c->lock held. */
static struct buf *find_and_hold(struct bcache *c, struct buf **slot, uint64_t blockno)
{
	for (struct buf *b = *slot; b; b = b->hash_next) {
		if (b->blockno == blockno) {
			if (b->refcount++ == 0)
				lru_remove(c, b);
			c->stats.hits++;
			return b;
		}
	}
	return NULL;
}

/* block_count only grows (bcache_grow), read without the lock. */
static uint64_t cache_block_count(const struct bcache *c)
{
	return __atomic_load_n(&c->block_count, __ATOMIC_ACQUIRE);
}

void bcache_grow(struct bcache *c, uint64_t block_count)
{
	ORDFS_ASSERT(block_count >= cache_block_count(c));
	__atomic_store_n(&c->block_count, block_count, __ATOMIC_RELEASE);
}

/* Finds or creates the buffer for blockno with a reference taken. */
static int lookup_or_create(struct bcache *c, uint64_t blockno, struct buf **out)
{
	if (blockno >= cache_block_count(c))
		return -EINVAL;

	ordfs_mutex_lock(&c->lock);
	struct buf **slot = hash_slot(c, blockno);
	struct buf *hit = find_and_hold(c, slot, blockno);
	ordfs_mutex_unlock(&c->lock);
	if (hit) {
		*out = hit;
		return 0;
	}

	/* Allocate outside the lock, then insert unless someone beat us. */
	struct buf *nb = calloc(1, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	nb->data = aligned_alloc(4096, c->block_size < 4096 ? 4096 : c->block_size);
	if (!nb->data) {
		free(nb);
		return -ENOMEM;
	}
	nb->blockno = blockno;
	nb->refcount = 1;
	ordfs_mutex_init(&nb->io_lock, LOCK_BUF_IO, "buffer io_lock");

	ordfs_mutex_lock(&c->lock);
	hit = find_and_hold(c, slot, blockno);
	if (hit) {
		ordfs_mutex_unlock(&c->lock);
		buf_free(nb);
		*out = hit;
		return 0;
	}
	nb->hash_next = *slot;
	*slot = nb;
	c->stats.misses++;
	c->stats.cached++;
	ordfs_mutex_unlock(&c->lock);
	*out = nb;
	return 0;
}

int bcache_read(struct bcache *c, uint64_t blockno, struct buf **out)
{
	struct buf *b;
	int err = lookup_or_create(c, blockno, &b);
	if (err)
		return err;

	ordfs_mutex_lock(&b->io_lock);
	if (!b->uptodate) {
		err = blockdev_read(c->bd, b->data, c->block_size, blockno * c->block_size);
		if (!err) /* release: bcache_peek's acquire then sees the data */
			__atomic_store_n(&b->uptodate, true, __ATOMIC_RELEASE);
	}
	ordfs_mutex_unlock(&b->io_lock);
	if (err) {
		bcache_put(c, b);
		return err;
	}
	*out = b;
	return 0;
}

/* Fills the buffers of a run with one device read; a buffer that became
 * up to date meanwhile (another reader, then maybe a change) keeps its
 * contents.  The caller holds a reference on each, so none was evicted
 * and read again from the device in between. */
static void fill_run(struct bcache *c, struct buf **bufs, uint32_t n)
{
	uint8_t *tmp = malloc((size_t)n * c->block_size);
	if (!tmp)
		return;
	if (blockdev_read(c->bd, tmp, (size_t)n * c->block_size,
			  bufs[0]->blockno * c->block_size) == 0) {
		for (uint32_t i = 0; i < n; i++) {
			struct buf *b = bufs[i];
			ordfs_mutex_lock(&b->io_lock);
			if (!b->uptodate) {
				memcpy(b->data, tmp + (size_t)i * c->block_size, c->block_size);
				__atomic_store_n(&b->uptodate, true, __ATOMIC_RELEASE);
			}
			ordfs_mutex_unlock(&b->io_lock);
		}
	}
	free(tmp);
}

void bcache_readahead(struct bcache *c, uint64_t start, uint32_t count)
{
	uint64_t block_count = cache_block_count(c);
	if (start >= block_count)
		return;
	if (count > block_count - start)
		count = (uint32_t)(block_count - start);
	if (count > BCACHE_READAHEAD_MAX)
		count = BCACHE_READAHEAD_MAX;
	/* References first, then the read: see fill_run. */
	struct buf *bufs[BCACHE_READAHEAD_MAX];
	uint32_t held = 0;
	while (held < count && lookup_or_create(c, start + held, &bufs[held]) == 0)
		held++;
	for (uint32_t i = 0; i < held;) {
		if (__atomic_load_n(&bufs[i]->uptodate, __ATOMIC_ACQUIRE)) {
			i++;
			continue;
		}
		uint32_t end = i + 1;
		while (end < held && !__atomic_load_n(&bufs[end]->uptodate, __ATOMIC_ACQUIRE))
			end++;
		fill_run(c, bufs + i, end - i);
		i = end;
	}
	for (uint32_t i = 0; i < held; i++)
		bcache_put(c, bufs[i]);
}

int bcache_get_new(struct bcache *c, uint64_t blockno, struct buf **out)
{
	struct buf *b;
	int err = lookup_or_create(c, blockno, &b);
	if (err)
		return err;
	ordfs_mutex_lock(&b->io_lock);
	memset(b->data, 0, c->block_size);
	__atomic_store_n(&b->uptodate, true, __ATOMIC_RELEASE);
	ordfs_mutex_unlock(&b->io_lock);
	*out = b;
	return 0;
}

struct buf *bcache_peek(struct bcache *c, uint64_t blockno)
{
	struct buf *found = NULL;

	ordfs_mutex_lock(&c->lock);
	for (struct buf *b = *hash_slot(c, blockno); b; b = b->hash_next) {
		if (b->blockno == blockno && __atomic_load_n(&b->uptodate, __ATOMIC_ACQUIRE)) {
			if (b->refcount++ == 0)
				lru_remove(c, b);
			found = b;
			break;
		}
	}
	ordfs_mutex_unlock(&c->lock);
	return found;
}

bool bcache_contains(struct bcache *c, uint64_t blockno)
{
	bool found = false;
	ordfs_mutex_lock(&c->lock);
	for (struct buf *b = *hash_slot(c, blockno); b && !found; b = b->hash_next)
		found = b->blockno == blockno && __atomic_load_n(&b->uptodate, __ATOMIC_ACQUIRE);
	ordfs_mutex_unlock(&c->lock);
	return found;
}

void bcache_hold(struct bcache *c, struct buf *b)
{
	ordfs_mutex_lock(&c->lock);
	if (b->refcount++ == 0)
		lru_remove(c, b);
	ordfs_mutex_unlock(&c->lock);
}

void bcache_put(struct bcache *c, struct buf *b)
{
	ordfs_mutex_lock(&c->lock);
	if (b->refcount == 0)
		abort(); /* reference underflow: a bug, never continue */
	if (--b->refcount == 0) {
		if (__atomic_load_n(&b->uptodate, __ATOMIC_ACQUIRE)) {
			lru_append(c, b);
			evict_excess(c);
		} else {
			/* A failed first read: drop it so the next reader retries. */
			hash_unlink(c, b);
			c->stats.cached--;
			buf_free(b);
		}
	}
	ordfs_mutex_unlock(&c->lock);
}

void bcache_shrink(struct bcache *c)
{
	ordfs_mutex_lock(&c->lock);
	uint32_t saved = c->max_unreferenced;
	c->max_unreferenced = 0;
	evict_excess(c);
	c->max_unreferenced = saved;
	ordfs_mutex_unlock(&c->lock);
}

void bcache_stats(struct bcache *c, struct bcache_stats *out)
{
	ordfs_mutex_lock(&c->lock);
	*out = c->stats;
	ordfs_mutex_unlock(&c->lock);
}
