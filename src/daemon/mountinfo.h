/*
 * mountinfo.h - reading /proc/self/mountinfo, shared by the daemon and the
 * umount helper.
 *
 * Owns: undoing the kernel's octal escapes in its fields (a space in a
 * path is "\040"), so a field compares equal to the path it names.
 */
#ifndef ORDFS_MOUNTINFO_H
#define ORDFS_MOUNTINFO_H

/* Undoes mountinfo's octal escapes in place. */
void mountinfo_unescape(char *s);

#endif
