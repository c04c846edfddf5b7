/*
 * host_space.h - the mount and the host filesystem holding a sparse image
 * (blockdev.h's struct blockdev_host): the journal's host space, what a
 * mount or fsck says when the host has no room, and the mount's warning
 * about a host with less free space than the image may still take.
 *
 * Rules: nothing here changes a byte of the image (allocating host space
 * for the log is fallocate FALLOC_FL_KEEP_SIZE), so a refused mount still
 * leaves the image as it was.  design/allocation.md, "When the host fills up".
 */
#ifndef ORDFS_MOUNT_HOST_SPACE_H
#define ORDFS_MOUNT_HOST_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

struct blockdev;

/* "no space left on the filesystem holding IMAGE: free space there and
 * AGAIN (it is mounted on MNT)", or for a device without a host
 * filesystem "no space left on the device holding the image: free space
 * there and AGAIN"; again: "mount again", "run fsck.ordfs again".
 * Returns buf. */
const char *ordfs_no_space_reason(struct blockdev *bd, const char *again, char *buf,
				  size_t len);

/* Gives the whole log its host space, so a commit never needs new host
 * space (sparse images; 0 for other devices).  -ENOSPC when the host has
 * no room for it. */
int ordfs_host_space_for_log(struct blockdev *bd, const struct ordfs_super *sb);

/* Logs a warning when the image is sparse and its host filesystem has
 * less free space than the image may still take (its size minus what the
 * host holds for it): writes may then meet a full host before ordfs is
 * full. */
void ordfs_warn_host_space(struct blockdev *bd);

#endif
