/*
 * iflags.h - file flags (chattr, lsattr): what each one means for the
 * operations, as pure functions of the flags word (inode.d.attr_flags,
 * format.h ORDFS_FL_*), so every rule lives here once and every
 * operation asks (ext4 keeps them in ext4_mask_flags, fileattr_set and
 * the VFS's IS_IMMUTABLE / IS_APPEND checks).
 *
 * Rules, as ext4 and the VFS have them:
 *  - An inode carries only the flags its type may have (ext4_mask_flags):
 *    a directory any, a regular file all but D, anything else d and A.
 *  - A new inode inherits S, D, A, d and j from its directory
 *    (EXT4_FL_INHERITED), as far as its type may carry them; never i or a.
 *  - Who may change them (vfs_fileattr_set, fileattr_set_prepare,
 *    ext4_fileattr_set, in that order): the owner or CAP_FOWNER (else
 *    EPERM); i and a need CAP_LINUX_IMMUTABLE to set or clear (EPERM); a
 *    flag ordfs does not keep, or one the type may not carry, is
 *    EOPNOTSUPP; an immutable inode that stays immutable may not change
 *    any other flag (EPERM).  Unlike ext4, j needs no CAP_SYS_RESOURCE
 *    (design/flags.md, "File flags": what it costs is the file's own writes
 *    twice and log room, as data=journal for a user's own mount).
 *  - i refuses every change of the inode and of its names; a refuses all
 *    but appending data, preallocating and setting times to now; an i or a
 *    directory refuses removing names, an i directory also adding them.
 *    The table is iflags_refuses (iflags.c).
 *  - S and D decide what is durable before it returns; j routes the
 *    file's data through the journal; A exempts the inode from atime.
 */
#ifndef ORDFS_INODE_IFLAGS_H
#define ORDFS_INODE_IFLAGS_H

#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"

/* The flags an inode of this mode may carry. */
uint32_t iflags_allowed(uint16_t mode);
/* The flags a new inode of this mode gets from its directory's. */
uint32_t iflags_inherited(uint32_t dir_flags, uint16_t mode);

/* What an operation does to an inode, for iflags_refuses. */
enum iflags_change {
	IFLAGS_WRITE,        /* data written other than by appending (and an
				open for writing without O_APPEND) */
	IFLAGS_APPEND,       /* data appended at the end (O_APPEND) */
	IFLAGS_TRUNCATE,     /* the size set (truncate, O_TRUNC) */
	IFLAGS_PREALLOCATE,  /* fallocate mode 0 or KEEP_SIZE */
	IFLAGS_PUNCH,        /* other fallocate modes (punch, zero range) */
	IFLAGS_ATTR,         /* mode, owner, group, times set to a value */
	IFLAGS_TOUCH,        /* times set to now, set-ID bits dropped */
	IFLAGS_XATTR,        /* an extended attribute (or ACL) set or removed */
	IFLAGS_UNLINK,       /* the inode loses a name (unlink, rmdir, rename
				source, the target a rename replaces) */
	IFLAGS_LINK,         /* the inode gets another name (link) */
	IFLAGS_DIR_ADD,      /* a name is added to this directory */
	IFLAGS_DIR_REMOVE,   /* a name leaves this directory (or is replaced) */
};
/* -EPERM if an inode with these flags refuses the change, else 0. */
int iflags_refuses(uint32_t flags, enum iflags_change what);

/* Who asks to change flags (iflags_may_set): the owner or not, and the
 * capabilities that matter. */
struct iflags_who {
	bool owner;               /* the caller's uid is the inode's */
	bool cap_fowner;          /* acts as the owner of any file */
	bool cap_linux_immutable; /* may set or clear i and a */
};
/* May `who` change the flags of an inode of this mode from old to new?
 * 0, -EPERM or -EOPNOTSUPP by the rules above, in the kernel's order. */
int iflags_may_set(uint16_t mode, uint32_t old, uint32_t new_flags,
		   const struct iflags_who *who);

/* FS_IOC_FSGETXATTR / FSSETXATTR: the flags that have an FS_XFLAG_*
 * (S, i, a, d, A; D and j have none, and an FSSETXATTR leaves them). */
#define IFLAGS_XFLAG_MASK                                                              \
	(ORDFS_FL_SYNC | ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND | ORDFS_FL_NODUMP |       \
	 ORDFS_FL_NOATIME)
uint32_t iflags_to_xflags(uint32_t flags);
/* The flags an xflags word stands for: 0, or -EOPNOTSUPP when it holds an
 * xflag ordfs does not keep (realtime, extent size, project
 * inheritance, DAX, ...). */
int iflags_from_xflags(uint32_t xflags, uint32_t *flags);

/* A regular file's data goes through the journal whatever the mount's
 * data= mode: j (ext4's per-file data journaling). */
static inline bool iflags_journals_data(uint32_t flags)
{
	return flags & ORDFS_FL_JOURNAL_DATA;
}
/* Changes of the inode itself (data, attributes, flags) are durable
 * before the operation returns: S. */
static inline bool iflags_sync(uint32_t flags)
{
	return flags & ORDFS_FL_SYNC;
}
/* Changes of the names in this directory are durable before they
 * return: D, or S (ext4's IS_DIRSYNC). */
static inline bool iflags_dirsync(uint32_t flags)
{
	return flags & (ORDFS_FL_DIRSYNC | ORDFS_FL_SYNC);
}
/* Reads leave atime alone: A. */
static inline bool iflags_noatime(uint32_t flags)
{
	return flags & ORDFS_FL_NOATIME;
}

/* The flags set, as chattr letters in lsattr's order (S D i a d A j),
 * e.g. "iA"; "-" for none.  NUL-terminated in buf (IFLAGS_LETTERS_LEN). */
#define IFLAGS_LETTERS_LEN 8u
void iflags_letters(uint32_t flags, char *buf);

#endif
