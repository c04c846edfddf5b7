/*
 * mountinfo.h - reading /proc/self/mountinfo, for the daemon, the tools
 * (umount.ordfs, fsck.ordfs, ordfsctl) and the host watch of a sparse
 * image (blockdev/hostfs.c).
 *
 * Owns: the one parser of its lines (mountinfo_each), with the kernel's
 * octal escapes undone in the paths (a space is "\040"), so a field
 * compares equal to the path it names; and the look-ups built on it.
 */
#ifndef ORDFS_MOUNTINFO_H
#define ORDFS_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>

/* One line, its fields NUL-terminated in place (valid during the call). */
struct mountinfo_entry {
	const char *dev;        /* "major:minor" */
	const char *mountpoint; /* unescaped */
	const char *options;    /* per-mount options: "rw,nosuid,relatime" */
	const char *type;       /* "fuse.ordfs" */
	const char *source;     /* unescaped */
};

/* Calls fn for every line, in order (later lines are mounts on top);
 * stops early when fn returns false.  0, or -errno if mountinfo cannot be
 * read. */
int mountinfo_each(bool (*fn)(const struct mountinfo_entry *e, void *ctx), void *ctx);

/* Undoes mountinfo's octal escapes in place. */
void mountinfo_unescape(char *s);

/* The source, type and device number ("major:minor", which also names
 * the mount's backing_dev_info in /sys/class/bdi) of the mount at target
 * (the last such line, the one on top).  0, or -ENOENT when nothing is
 * mounted there. */
int mountinfo_find(const char *target, char *source, size_t ssize, char *type, size_t tsize,
		   char *dev, size_t dsize);

/* The type and the per-mount options ("rw,nosuid,nodev,relatime") of
 * the mount at target (the one on top).  0 or -ENOENT. */
int mountinfo_find_options(const char *target, char *type, size_t tsize, char *opts,
			   size_t osize);

/* Is the file `image` the source of a live FUSE mount (this namespace)? */
bool mountinfo_image_mounted(const char *image);

/* The mount point of the first live FUSE mount whose source is `image`
 * (a file, by its absolute path; an NBD URI as written).  0 or -ENOENT. */
int mountinfo_image_mountpoint(const char *image, char *mountpoint, size_t size);

#endif
