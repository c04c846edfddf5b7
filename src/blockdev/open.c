/*
 * open.c - opens an image by the name a user gives: an NBD URI or a path;
 * and the helpers every backend shares (zeroing a range).
 *
 * Owns: the choice of backend.  Every program that takes an IMAGE argument
 * (the daemon, mkfs, fsck, tune, dump) opens it here, so they all take the
 * same names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"

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
	if (off > bd->size || len > bd->size - off)
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
