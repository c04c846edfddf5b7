/*
 * host_space.c - the mount and the host filesystem of a sparse image
 * (host_space.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "host_space.h"
#include "base/log.h"
#include "blockdev/blockdev.h"
#include "blockdev/hostfs.h"

const char *ordfs_no_space_reason(struct blockdev *bd, const char *again, char *buf,
				  size_t len)
{
	struct blockdev_host h;
	if (blockdev_host(bd, &h, false) != 0) {
		snprintf(buf, len, "no space left on the device holding the image: free space "
			 "there and %s", again);
		return buf;
	}
	char mnt[PATH_MAX], type[64];
	hostfs_mount_point(h.image, mnt, sizeof(mnt), type, sizeof(type));
	snprintf(buf, len, "no space left on the filesystem holding %s: free space there and %s "
		 "(it is mounted on %s, %s)", h.image, again, mnt, type);
	return buf;
}

int ordfs_host_space_for_log(struct blockdev *bd, const struct ordfs_super *sb)
{
	if (!bd->sparse)
		return 0;
	uint64_t bs = ordfs_block_size(sb);
	int err = blockdev_allocate(bd, sb->journal_start * bs, (uint64_t)sb->journal_blocks * bs);
	return err == -EOPNOTSUPP || err == -EINVAL ? 0 : err;
}

void ordfs_warn_host_space(struct blockdev *bd)
{
	struct blockdev_host h;
	if (!bd->sparse || blockdev_host(bd, &h, true) != 0 || h.image_allocated >= h.image_size)
		return;
	uint64_t may_take = h.image_size - h.image_allocated;
	if (h.host_free >= may_take)
		return;
	char mnt[PATH_MAX], type[64];
	hostfs_mount_point(h.image, mnt, sizeof(mnt), type, sizeof(type));
	ordfs_log(LOG_WARNING, "the image is sparse and its host filesystem (%s, %s) has %llu MiB "
		  "free, less than the %llu MiB the image may still take (%llu MiB of %llu MiB "
		  "allocated there): ordfs may get ENOSPC from the host before it is full itself "
		  "(df shows ordfs's own space)", mnt, type,
		  (unsigned long long)(h.host_free >> 20), (unsigned long long)(may_take >> 20),
		  (unsigned long long)(h.image_allocated >> 20),
		  (unsigned long long)(h.image_size >> 20));
}
