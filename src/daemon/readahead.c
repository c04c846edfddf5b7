/*
 * readahead.c - the kernel's readahead window for the mount
 * (-o read_ahead_kb=N, default DAEMON_DEFAULT_READ_AHEAD_KB).
 *
 * FUSE's INIT reply can only shrink the window below the kernel's default
 * (128 KiB), while a cold sequential read through the daemon is about
 * twice as fast with a window of a few MiB (options.h gives the figures):
 * each request then carries up to max_write (1 MiB) and several are in
 * flight.  The window is the mount's backing_dev_info setting,
 * /sys/class/bdi/MAJ:MIN/read_ahead_kb, which is what blockdev --setra
 * sets for a disk.
 *
 * Rules: called once the mount exists (not from the FUSE loop: it waits
 * for a reply to a statfs, so INIT cannot undo the setting), with the mount point's absolute
 * path resolved before the mount (as mountinfo names it); only root may write the setting, so
 * a failure keeps the kernel's default and is logged (a warning when the
 * option was given, a debug line otherwise), never fatal.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "mountinfo.h"
#include "readahead.h"

int daemon_set_read_ahead(const char *mountpoint, unsigned kb)
{
	/* The kernel sets the window from INIT's reply (the smaller of ours
	 * and its default): wait for it, the first request after INIT. */
	struct statvfs sv;
	if (statvfs(mountpoint, &sv) != 0)
		return -errno;
	unsigned major, minor;
	int err = mountinfo_device_of(mountpoint, "fuse", &major, &minor);
	if (err)
		return err;
	char path[96];
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
	FILE *f = fopen(path, "we");
	if (!f)
		return -errno;
	int wrote = fprintf(f, "%u\n", kb);
	if (fclose(f) != 0 || wrote < 0)
		return errno ? -errno : -EIO;
	return 0;
}
