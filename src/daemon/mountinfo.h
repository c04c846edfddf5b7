/*
 * mountinfo.h - reading /proc/self/mountinfo, shared by the daemon and the
 * umount helper.
 *
 * Owns: undoing the kernel's octal escapes in its fields (a space in a
 * path is "\040"), so a field compares equal to the path it names; and
 * finding the mount on a path (its source, type and device number).
 */
#ifndef ORDFS_MOUNTINFO_H
#define ORDFS_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
