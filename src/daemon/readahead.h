/*
 * readahead.h - setting the kernel's readahead window for the mount
 * (readahead.c says why and how).
 */
#ifndef ORDFS_DAEMON_READAHEAD_H
#define ORDFS_DAEMON_READAHEAD_H

/* Sets the readahead window of the FUSE mount on mountpoint (an absolute
 * path without symlinks) to kb KiB.
 * 0 or a negative errno (-ENOENT: no such mount; -EACCES/-EPERM: not
 * root). */
int daemon_set_read_ahead(const char *mountpoint, unsigned kb);

#endif
