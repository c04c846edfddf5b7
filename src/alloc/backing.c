/*
 * backing.c - which blocks of a sparse image are holes, and host space
 * for blocks before the allocator hands them out (backing.h says the
 * rules).
 */
#include <errno.h>
#include <string.h>

#include "backing.h"
#include "../blockdev/blockdev.h"

void backing_init(struct backing *b, struct blockdev *bd, uint32_t block_size,
		  uint64_t block_count)
{
	memset(b, 0, sizeof(*b));
	b->bd = bd;
	b->block_size = block_size;
	b->block_count = block_count;
	b->on = bd->sparse && bd->ops->allocate && bd->ops->next_hole;
}

bool backing_on(const struct backing *b)
{
	return __atomic_load_n(&b->on, __ATOMIC_RELAXED);
}

static void set_bits(uint64_t *words, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		words[i / 64] |= 1ull << (i % 64);
}

void backing_load_holes(void *ctx, uint64_t first, uint32_t n, uint64_t *words)
{
	struct backing *b = ctx;
	uint64_t bs = b->block_size;
	uint64_t last = first + n < b->block_count ? first + n : b->block_count;
	if (!backing_on(b) || last <= first)
		return;
	uint64_t pos = first * bs, end = last * bs;
	unsigned calls = 0;
	while (pos < end) {
		if (calls + 2 > BACKING_WALK_MAX) {
			set_bits(words, (pos + bs - 1) / bs - first, n); /* unknown: holes */
			return;
		}
		uint64_t data = blockdev_next_data(b->bd, pos);
		calls++;
		if (data > end)
			data = end;
		/* [pos, data) reads as zeros: the blocks wholly inside it. */
		uint64_t h0 = (pos + bs - 1) / bs, h1 = data / bs;
		if (h1 > h0)
			set_bits(words, h0 - first, h1 - first);
		if (data >= end)
			return;
		uint64_t hole = blockdev_next_hole(b->bd, data);
		calls++;
		/* [data, hole) holds data; a device that answers nothing
		 * better moves on by a block. */
		pos = hole > data ? hole : data / bs * bs + bs;
	}
}

int backing_allocate(struct backing *b, uint64_t start, uint64_t n)
{
	if (!backing_on(b) || n == 0)
		return 0;
	int err = blockdev_allocate(b->bd, start * b->block_size, n * b->block_size);
	if (err == -EOPNOTSUPP || err == -EINVAL) {
		/* The host cannot say (no fallocate): writes allocate, as before. */
		__atomic_store_n(&b->on, false, __ATOMIC_RELAXED);
		return 0;
	}
	return err;
}

void backing_window(struct backing *b, uint64_t s, uint64_t n, uint64_t ahead, uint64_t min,
		    uint64_t max, uint64_t *lo, uint64_t *hi)
{
	*lo = s;
	*hi = s + n;
	if (ahead <= 1 || blockdev_host_full(b->bd))
		return;
	uint64_t l = s / ahead * ahead, h = (s + n + ahead - 1) / ahead * ahead;
	*lo = l > min ? l : min;
	*hi = h < max ? h : max;
}

bool backing_itable_known(const struct backing *b, uint64_t blk)
{
	for (unsigned k = 0; k < BACKING_ITABLE_RECENT; k++)
		if (blk - b->itable_recent[k].first < b->itable_recent[k].n)
			return true;
	return false;
}

void backing_itable_note(struct backing *b, uint64_t first, uint64_t n)
{
	b->itable_recent[b->itable_next++ % BACKING_ITABLE_RECENT].first = first;
	b->itable_recent[(b->itable_next - 1) % BACKING_ITABLE_RECENT].n = n;
}
