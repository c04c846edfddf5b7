/*
 * overlay.c - a copy-on-write view of a device: reads see the base with
 * every write made through the overlay on top; the base is never written.
 *
 * Owns: the written blocks, in memory.  Used by `fsck.ordfs -n` to replay
 * the journal and check the image as it would look after replay without
 * changing a byte of it.
 * Rules: writes are kept per block of block_size (partial blocks are
 * completed from the base first); flush does nothing (nothing reaches the
 * base); one mutex guards the table.  A size refresh refreshes the base
 * (that writes nothing) and takes its size: the table is keyed by block
 * number, so blocks past the old end are kept like any other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "../lock/lock.h"

#define OVERLAY_BUCKETS 4096u

struct overlay_block {
	uint64_t blockno;
	struct overlay_block *next;
	uint8_t data[];
};

struct overlay_dev {
	struct blockdev bd;
	struct blockdev *base;
	uint32_t block_size;
	struct ordfs_mutex lock;
	struct overlay_block *table[OVERLAY_BUCKETS];
	uint64_t blocks;
};

static struct overlay_dev *to_overlay(struct blockdev *bd)
{
	return (struct overlay_dev *)bd;
}

static struct overlay_block **slot(struct overlay_dev *o, uint64_t blockno)
{
	return &o->table[(blockno * 0x9e3779b97f4a7c15ull) >> 52 & (OVERLAY_BUCKETS - 1)];
}

static struct overlay_block *find(struct overlay_dev *o, uint64_t blockno)
{
	for (struct overlay_block *b = *slot(o, blockno); b; b = b->next)
		if (b->blockno == blockno)
			return b;
	return NULL;
}

static int overlay_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	struct overlay_dev *o = to_overlay(bd);
	uint64_t size = blockdev_size(bd);
	if (off > size || len > size - off)
		return -EIO;
	int err = blockdev_read(o->base, buf, len, off);
	if (err)
		return err;
	uint32_t bs = o->block_size;
	ordfs_mutex_lock(&o->lock);
	for (uint64_t b = off / bs; len && b <= (off + len - 1) / bs; b++) {
		struct overlay_block *ob = find(o, b);
		if (!ob)
			continue;
		uint64_t from = b * bs > off ? b * bs : off;
		uint64_t to = (b + 1) * bs < off + len ? (b + 1) * bs : off + len;
		memcpy((uint8_t *)buf + (from - off), ob->data + (from - b * bs), to - from);
	}
	ordfs_mutex_unlock(&o->lock);
	return 0;
}

static int overlay_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct overlay_dev *o = to_overlay(bd);
	uint64_t size = blockdev_size(bd);
	if (off > size || len > size - off)
		return -EIO;
	uint32_t bs = o->block_size;
	int err = 0;
	ordfs_mutex_lock(&o->lock);
	for (uint64_t b = off / bs; len && b <= (off + len - 1) / bs && !err; b++) {
		struct overlay_block *ob = find(o, b);
		if (!ob) {
			ob = malloc(sizeof(*ob) + bs);
			if (!ob) {
				err = -ENOMEM;
				break;
			}
			/* Completed from the current view, so a partial write
			 * keeps the bytes around it. */
			err = blockdev_read(o->base, ob->data, bs, b * bs);
			if (err) {
				free(ob);
				break;
			}
			ob->blockno = b;
			ob->next = *slot(o, b);
			*slot(o, b) = ob;
			o->blocks++;
		}
		uint64_t from = b * bs > off ? b * bs : off;
		uint64_t to = (b + 1) * bs < off + len ? (b + 1) * bs : off + len;
		memcpy(ob->data + (from - b * bs), (const uint8_t *)buf + (from - off), to - from);
	}
	ordfs_mutex_unlock(&o->lock);
	return err;
}

static int overlay_flush(struct blockdev *bd)
{
	(void)bd;
	return 0;
}

static void overlay_destroy(struct blockdev *bd)
{
	struct overlay_dev *o = to_overlay(bd);
	for (uint32_t i = 0; i < OVERLAY_BUCKETS; i++) {
		struct overlay_block *b = o->table[i];
		while (b) {
			struct overlay_block *next = b->next;
			free(b);
			b = next;
		}
	}
	ordfs_mutex_destroy(&o->lock);
	free(o);
}

static int overlay_refresh_size(struct blockdev *bd, uint64_t *size)
{
	struct blockdev *base = to_overlay(bd)->base;
	int err = blockdev_refresh_size(base, size);
	if (!err)
		*size = blockdev_grow_size(bd, blockdev_size(base));
	return err;
}

static const struct blockdev_ops overlay_ops = {
	.read = overlay_read,
	.write = overlay_write,
	.flush = overlay_flush,
	.destroy = overlay_destroy,
	.refresh_size = overlay_refresh_size,
};

int blockdev_overlay_create(struct blockdev *base, uint32_t block_size, struct blockdev **out)
{
	if (block_size == 0 || (block_size & (block_size - 1)))
		return -EINVAL;
	struct overlay_dev *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->bd.ops = &overlay_ops;
	o->bd.size = blockdev_size(base);
	o->base = base;
	o->block_size = block_size;
	ordfs_mutex_init(&o->lock, LOCK_BLOCKDEV, "overlay device lock");
	*out = &o->bd;
	return 0;
}

uint64_t blockdev_overlay_blocks(struct blockdev *bd)
{
	struct overlay_dev *o = to_overlay(bd);
	ordfs_mutex_lock(&o->lock);
	uint64_t n = o->blocks;
	ordfs_mutex_unlock(&o->lock);
	return n;
}
