/*
 * open.c - opens an image by the name a user gives: an NBD URI or a path;
 * and the helpers every backend shares (zeroing a range, the size).
 *
 * Owns: the choice of backend.  Every program that takes an IMAGE argument
 * (the daemon, mkfs, fsck, tune, dump) opens it here, so they all take the
 * same names.  And the size's one rule (blockdev.h): it only grows, by a
 * release store after the backend readied the added bytes; a refresh
 * checks that no backend lowered it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "../base/ordfs_assert.h"

int blockdev_open_image(const char *name, unsigned flags, unsigned nbd_timeout_ms,
			struct blockdev **out, char *why, size_t why_len)
{
	if (blockdev_is_nbd_uri(name))
		return blockdev_nbd_open(name, flags & (BLOCKDEV_READONLY | BLOCKDEV_NO_FLUSH_OK | BLOCKDEV_NO_FUA),
					 nbd_timeout_ms, out, why, why_len);
	int err = blockdev_file_open(name, flags & ~(BLOCKDEV_NO_FLUSH_OK | BLOCKDEV_NO_FUA), out);
	if (err)
		snprintf(why, why_len, "%s", strerror(-err));
	return err;
}

#define ZERO_CHUNK (1u << 20)

int blockdev_write_zeroes(struct blockdev *bd, uint64_t off, uint64_t len)
{
	if (blockdev_fenced(bd))
		return -EROFS;
	uint64_t size = blockdev_size(bd);
	if (off > size || len > size - off)
		return -EIO;
	if (bd->ops->write_zeroes) {
		int err = bd->ops->write_zeroes(bd, off, len);
		if (err != -EOPNOTSUPP)
			return err;
	}
	uint8_t *zeros = calloc(1, ZERO_CHUNK);
	if (!zeros)
		return -ENOMEM;
	int err = 0;
	while (len > 0 && !err) {
		size_t n = len > ZERO_CHUNK ? ZERO_CHUNK : (size_t)len;
		err = blockdev_write(bd, zeros, n, off);
		off += n;
		len -= n;
	}
	free(zeros);
	return err;
}

uint64_t blockdev_grow_size(struct blockdev *bd, uint64_t size)
{
	uint64_t cur = __atomic_load_n(&bd->size, __ATOMIC_RELAXED);
	while (cur < size && !__atomic_compare_exchange_n(&bd->size, &cur, size, false,
							  __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		; /* cur is now what another raise left: retry if still less */
	return cur < size ? size : cur;
}

int blockdev_refresh_size(struct blockdev *bd, uint64_t *size)
{
	uint64_t before = blockdev_size(bd);
	uint64_t found = before;
	int err = bd->ops->refresh_size ? bd->ops->refresh_size(bd, &found) : -EOPNOTSUPP;
	uint64_t after = blockdev_size(bd);
	/* Only grows; a success left at least what the device said (a
	 * concurrent refresh may have raised it further since). */
	ORDFS_ASSERT(after >= before);
	ORDFS_ASSERT(err || found <= after);
	*size = after;
	return err;
}
