/*
 * remount_client.h - asking a running ordfs daemon to remount: what
 * `mount -o remount,OPTS MNT` runs (mount(8) -> mount.fuse3 -> `ordfs
 * IMAGE MNT -o ...,remount,...`, main.c) and `ordfsctl remount MNT OPTS`.
 *
 * Owns: splitting a remount's option list into ordfs's options (sent to
 * the daemon, ORDFS_IOC_REMOUNT) and the kernel's mount flags (set with
 * mount(2) MS_REMOUNT when the caller is root), and their order: for ro
 * the kernel first (it refuses while files are open for writing, and
 * writes back the pages it holds), then the daemon, the kernel put back
 * if the daemon refuses; otherwise the daemon first, then the kernel.
 *
 * From mount(8) the list begins with the kernel's flags as they are now
 * (mount(8) merges the user's options into them): an access-time flag
 * that only repeats what the kernel shows is not passed on, and neither
 * are libfuse's user_id=, group_id=, default_permissions and the like.
 * So `mount -o remount,relatime` cannot be told from that echo when the
 * kernel already shows relatime (it does for every mount not made with
 * noatime): ordfsctl remount MNT relatime says it unambiguously.
 */
#ifndef ORDFS_REMOUNT_CLIENT_H
#define ORDFS_REMOUNT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

/* Remounts the ordfs mounted on mountpoint with opts.  from_mount_helper:
 * opts came from mount(8) (see above).  0, or -errno with one line in
 * err; on success the options in force afterwards are in err too. */
int remount_client(const char *mountpoint, const char *opts, bool from_mount_helper, char *err,
		   size_t errlen);

#endif
