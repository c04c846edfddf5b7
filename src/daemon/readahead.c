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
 * Rules: the kernel sets the window again when it reads INIT's reply, to
 * the smaller of the current window and the reply's max_readahead.  So
 * this runs after fuse_session_mount and before the loop answers INIT
 * (no request to our own mount, nothing to wait for), and op_init asks
 * for at least this much.  The mount point is an absolute path resolved
 * before the mount (as mountinfo names it).  Only root may write the
 * setting: a failure keeps the kernel's default and is logged (when the
 * option was given), never fatal.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/mountinfo.h"
#include "readahead.h"

int daemon_set_read_ahead(const char *mountpoint, unsigned kb)
{
	char source[PATH_MAX], type[64], dev[64];
	int err = mountinfo_find(mountpoint, source, sizeof(source), type, sizeof(type), dev,
				 sizeof(dev));
	if (err)
		return err;
	if (strncmp(type, "fuse", 4) != 0)
		return -ENOENT; /* not our mount on top */
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	FILE *f = fopen(path, "we");
	if (!f)
		return -errno;
	int wrote = fprintf(f, "%u\n", kb);
	if (fclose(f) != 0 || wrote < 0)
		return errno ? -errno : -EIO;
	return 0;
}
