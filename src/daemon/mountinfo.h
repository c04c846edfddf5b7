/*
 * mountinfo.h - reading /proc/self/mountinfo, shared by the daemon and the
 * umount helper.
 *
 * Owns: undoing the kernel's octal escapes in its fields (a space in a
 * path is "\040"), so a field compares equal to the path it names; and
 * finding the device number of the mount on a path.
 */
#ifndef ORDFS_MOUNTINFO_H
#define ORDFS_MOUNTINFO_H

/* Undoes mountinfo's octal escapes in place. */
void mountinfo_unescape(char *s);

/* The device number (major:minor, as the kernel names the mount's
 * backing_dev_info in /sys/class/bdi) of the newest mount on path, whose
 * filesystem type starts with fstype_prefix.  0, or -ENOENT. */
int mountinfo_device_of(const char *path, const char *fstype_prefix, unsigned *major,
			unsigned *minor);

#endif
