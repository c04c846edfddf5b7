/*
 * populate.h - fill a new ordfs from a directory tree (mkfs.ordfs -d, as
 * mke2fs -d), without root and without a kernel mount: the new image is
 * mounted through the library on its block device, everything is made
 * through the ordinary operations (ops.h), and it is unmounted cleanly.
 *
 * Owns: the walk of the source tree and what is copied of each entry.
 *  - Regular files: only the ranges SEEK_DATA/SEEK_HOLE find are written,
 *    then the size is set, so holes stay holes (at the end of a file too).
 *  - Directories, symbolic links, device nodes, FIFOs, sockets (made as
 *    mknod(2) makes a socket inode: S_IFSOCK, no device number).
 *  - Hard links: a non-directory with st_nlink > 1 is made once, and every
 *    further name with the same st_dev/st_ino becomes a link to it.
 *  - The mode with set-user-ID, set-group-ID and sticky, atime and mtime
 *    (ctime and the creation time are the copy's), the extended
 *    attributes ordfs stores (user., trusted. where the caller can read
 *    them, security.) and POSIX ACLs (system.posix_acl_access/default, in
 *    the xattr form the kernel gives and ordfs_setxattr takes); others,
 *    which ordfs has no place for, are left out.
 *  - Owners: each file's uid and gid with keep_owners (a run as root),
 *    else everything is owner's.  The source directory's own mode, times,
 *    attributes and (by the same rule) owner go to the root directory; an
 *    explicit root_owner wins for the root directory's owner.
 *  - A directory lost+found at the top of the source fills the new
 *    filesystem's lost+found (mke2fs does the same); the image file
 *    itself, when it lies inside the source, is left out.
 *
 * Rules:
 *  - No recursion and no path length limit: the walk keeps its own stack,
 *    opens each entry relative to its directory (openat and friends), and
 *    keeps at most POPULATE_KEEP_FDS directory descriptors open; deeper,
 *    it climbs back with "..", checking it arrives where it left.
 *  - Every entry is looked at with lstat and opened with O_NOFOLLOW; an
 *    entry that is not the same file when opened (another inode or type)
 *    is an error, and so is a file that shrinks while it is read.
 *  - The first thing that cannot be read or copied stops the copy: the
 *    filesystem is still unmounted cleanly, the error is returned (a
 *    negative errno) with one line in *why naming the path as the user
 *    gave it plus the rest ("cannot read DIR/x/y: Permission denied",
 *    "cannot copy DIR/big: No space left on device"); control characters
 *    in names are shown escaped (\n, \t, \x1b, \\), so it stays one line.
 *    The caller decides what becomes of the image (mkfs.ordfs unmakes it).
 *  - Names longer than 255 bytes, symlink targets longer than 4095 bytes,
 *    device numbers that do not fit ordfs's 32 bits (major above 4095 or
 *    minor above 1048575) and unknown file types are refused with the path.
 */
#ifndef ORDFS_MKFS_POPULATE_H
#define ORDFS_MKFS_POPULATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ops.h"

struct blockdev;

#define POPULATE_KEEP_FDS 64u

struct mkfs_populate {
	const char *source;         /* DIR, as the user gave it */
	bool keep_owners;           /* copy each file's owner (a run as root) */
	struct ordfs_cred owner;    /* else every file's owner */
	bool root_owner_set;        /* -E root_owner: the root directory's owner */
	struct ordfs_cred root_owner;
	bool skip_set;              /* leave out this file (the image itself) */
	dev_t skip_dev;
	ino_t skip_ino;
};

struct mkfs_populate_stats {
	uint64_t inodes;            /* made, the root directory not counted */
	uint64_t links;             /* further names of hard-linked files */
	uint64_t data_bytes;        /* file data written (holes not counted) */
};

/* Mounts the filesystem on bd, copies p->source into its root directory,
 * unmounts.  0, or a negative errno with a one-line message in *why
 * (allocated; the caller frees it; NULL only when out of memory). */
int ordfs_mkfs_populate(struct blockdev *bd, const struct mkfs_populate *p,
			struct mkfs_populate_stats *stats, char **why);

#endif
