/*
 * open.c - opens an image by the name a user gives: an NBD URI or a path.
 *
 * Owns: the choice of backend.  Every program that takes an IMAGE argument
 * (the daemon, mkfs, fsck, tune, dump) opens it here, so they all take the
 * same names.
 */
#include <stdio.h>
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
