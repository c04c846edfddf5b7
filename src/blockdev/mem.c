/*
 * mem.c - in-memory block device for unit tests.
 *
 * Owns: one heap buffer holding the whole image.  Every write is "durable"
 * the moment it completes; tests that need to lose unflushed writes use the
 * record wrapper's event log instead.  A rwlock keeps concurrent readers and
 * writers from tearing each other's transfers.  Its size is fixed at
 * creation: blockdev_refresh_size is -EOPNOTSUPP.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "../lock/lock.h"

struct mem_dev {
	struct blockdev bd;
	struct ordfs_rwlock lock;
	uint8_t *bytes;
};

static struct mem_dev *to_mem(struct blockdev *bd)
{
	return (struct mem_dev *)bd;
}

/* The size is fixed: refresh_size is not offered (-EOPNOTSUPP). */
static bool mem_in_range(const struct blockdev *bd, uint64_t off, uint64_t len)
{
	uint64_t size = blockdev_size(bd);
	return off <= size && len <= size - off;
}

static int mem_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	struct mem_dev *m = to_mem(bd);
	if (!mem_in_range(bd, off, len))
		return -EIO;
	ordfs_rwlock_rdlock(&m->lock);
	memcpy(buf, m->bytes + off, len);
	ordfs_rwlock_unlock(&m->lock);
	return 0;
}

static int mem_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct mem_dev *m = to_mem(bd);
	if (!mem_in_range(bd, off, len))
		return -EIO;
	ordfs_rwlock_wrlock(&m->lock);
	memcpy(m->bytes + off, buf, len);
	ordfs_rwlock_unlock(&m->lock);
	return 0;
}

static int mem_flush(struct blockdev *bd)
{
	(void)bd;
	return 0;
}

static int mem_discard(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct mem_dev *m = to_mem(bd);
	if (!mem_in_range(bd, off, len))
		return -EIO;
	ordfs_rwlock_wrlock(&m->lock);
	memset(m->bytes + off, 0, len);
	ordfs_rwlock_unlock(&m->lock);
	return 0;
}

static void mem_destroy(struct blockdev *bd)
{
	struct mem_dev *m = to_mem(bd);
	ordfs_rwlock_destroy(&m->lock);
	free(m->bytes);
	free(m);
}

static const struct blockdev_ops mem_ops = {
	.read = mem_read,
	.write = mem_write,
	.flush = mem_flush,
	.destroy = mem_destroy,
	.discard = mem_discard,
};

int blockdev_mem_from(const void *image, uint64_t size, struct blockdev **out)
{
	struct mem_dev *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->bytes = calloc(1, size ? size : 1);
	if (!m->bytes) {
		free(m);
		return -ENOMEM;
	}
	if (image)
		memcpy(m->bytes, image, size);
	ordfs_rwlock_init(&m->lock, LOCK_BLOCKDEV_MEM, "memory device lock");
	m->bd.ops = &mem_ops;
	m->bd.size = size;
	*out = &m->bd;
	return 0;
}

int blockdev_mem_create(uint64_t size, struct blockdev **out)
{
	return blockdev_mem_from(NULL, size, out);
}

uint8_t *blockdev_mem_bytes(struct blockdev *bd)
{
	return to_mem(bd)->bytes;
}
