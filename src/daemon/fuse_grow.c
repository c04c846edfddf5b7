/*
 * fuse_grow.c - the daemon's side of an online grow (ORDFS_IOC_GROW, what
 * resize.ordfs sends when the image is mounted): the device's new size,
 * the block count asked for, then ordfs_grow_online (mount/grow_online.c).
 *
 * Rules:
 *  - The device is asked for its size first (main.c's device_grew: the
 *    owner record moves to the new end with it), so `truncate -s +1G
 *    image` or a bigger NBD export followed by resize.ordfs is all it
 *    takes.
 *  - Whole blocks: size_bytes / block size, or with 0 every whole block
 *    of the device, less the room the owner record needs past the new
 *    backup superblock where one is held (an NBD export: its last 512
 *    bytes, as mkfs.ordfs and offline resize.ordfs leave them).
 *  - A size the filesystem already has (ordfs_grow_target's, so one block
 *    more that would make a one-block group is the same size) is success
 *    with nothing done; a smaller one, or one past the device or the
 *    format, a one-line reason and nothing changed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fuse_glue.h"
#include "../fs.h"
#include "../ordfs_ioctl.h"
#include "../blockdev/blockdev.h"
#include "../ops.h"
#include "../super/grow.h"
#include "../super/owner.h"

/* The largest block count the device holds: on NBD its last 512 bytes
 * stay outside the filesystem for the owner record (as mkfs.ordfs and an
 * offline resize.ordfs leave them); elsewhere a held record must still fit
 * past the backup superblock (1 KiB blocks: not in the last block). */
static uint64_t device_blocks(uint64_t dev_size, uint32_t bs, bool nbd, bool owner_record)
{
	if (nbd)
		return dev_size > ORDFS_OWNER_SIZE ? (dev_size - ORDFS_OWNER_SIZE) / bs : 0;
	uint64_t n = dev_size / bs;
	while (owner_record && n > 0 && !owner_record_fits(dev_size, n, bs))
		n--;
	return n;
}

int daemon_grow(struct daemon_ctx *dc, struct ordfs_grow *g)
{
	struct ordfs *fs = dc->fs;
	uint32_t bs = fs->block_size;
	g->block_size = bs;
	g->old_blocks = g->new_blocks = fs_block_count(fs);
	struct device_room room = { .size = blockdev_size(fs->bd) };
	int err = dc->device_grew ? dc->device_grew(dc, &room, g->reply, sizeof(g->reply)) : 0;
	if (err)
		return err;
	uint64_t fits = device_blocks(room.size, bs, blockdev_is_nbd(fs->raw_bd),
				      room.owner_record);
	uint64_t want = g->size_bytes ? g->size_bytes / bs : fits;
	if (want > fits) {
		snprintf(g->reply, sizeof(g->reply),
			 "the size is larger than the device (%" PRIu64 " blocks of %" PRIu32
			 " bytes fit)", fits, bs);
		return -EFBIG;
	}
	/* (the same size is nothing to do: ordfs_grow_online says 0, after
	 * finishing a grow that committed and could not finish before) */
	const char *why = NULL;
	uint64_t old;
	err = ordfs_grow_online(fs, want, &old, &why);
	g->old_blocks = old;
	if (err) {
		snprintf(g->reply, sizeof(g->reply), "%s", why ? why : strerror(-err));
		return err;
	}
	g->new_blocks = fs_block_count(fs);
	return 0;
}
