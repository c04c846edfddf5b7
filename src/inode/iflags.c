/*
 * iflags.c - the file-flag rules of iflags.h.
 *
 * Owns: the table of what each flag refuses, the type mask and the
 * inheritance mask, the order of the checks of a flag change, the
 * FS_XFLAG_* mapping.  Pure: no locks, no I/O.  The flag values are the
 * Linux FS_*_FL ones (format.h stores them as they are); the asserts
 * below keep format.h and linux/fs.h in agreement.
 */
#include <errno.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include "iflags.h"

_Static_assert(ORDFS_FL_SYNC == FS_SYNC_FL, "S");
_Static_assert(ORDFS_FL_IMMUTABLE == FS_IMMUTABLE_FL, "i");
_Static_assert(ORDFS_FL_APPEND == FS_APPEND_FL, "a");
_Static_assert(ORDFS_FL_NODUMP == FS_NODUMP_FL, "d");
_Static_assert(ORDFS_FL_NOATIME == FS_NOATIME_FL, "A");
_Static_assert(ORDFS_FL_JOURNAL_DATA == FS_JOURNAL_DATA_FL, "j");
_Static_assert(ORDFS_FL_DIRSYNC == FS_DIRSYNC_FL, "D");

/* What a new inode takes from its directory (ext4's EXT4_FL_INHERITED,
 * as far as ordfs keeps them). */
#define INHERITED                                                                      \
	(ORDFS_FL_SYNC | ORDFS_FL_DIRSYNC | ORDFS_FL_NOATIME | ORDFS_FL_NODUMP |        \
	 ORDFS_FL_JOURNAL_DATA)

uint32_t iflags_allowed(uint16_t mode)
{
	if (S_ISDIR(mode))
		return ORDFS_FL_KNOWN;
	if (S_ISREG(mode))
		return ORDFS_FL_KNOWN & ~ORDFS_FL_DIRSYNC;
	return ORDFS_FL_NODUMP | ORDFS_FL_NOATIME;
}

uint32_t iflags_inherited(uint32_t dir_flags, uint16_t mode)
{
	return dir_flags & INHERITED & iflags_allowed(mode);
}

int iflags_refuses(uint32_t flags, enum iflags_change what)
{
	/* Which flags refuse which change (the VFS's IS_IMMUTABLE and
	 * IS_APPEND checks: may_open, notify_change, vfs_fallocate,
	 * xattr_permission, vfs_link, may_delete, may_create). */
	static const uint32_t refused_by[] = {
		[IFLAGS_WRITE] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
		[IFLAGS_APPEND] = ORDFS_FL_IMMUTABLE,
		[IFLAGS_TRUNCATE] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
		[IFLAGS_PREALLOCATE] = ORDFS_FL_IMMUTABLE,
		[IFLAGS_PUNCH] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
		[IFLAGS_ATTR] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
		[IFLAGS_TOUCH] = ORDFS_FL_IMMUTABLE,
		[IFLAGS_XATTR] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
		[IFLAGS_UNLINK] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
		[IFLAGS_LINK] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
		[IFLAGS_DIR_ADD] = ORDFS_FL_IMMUTABLE,
		[IFLAGS_DIR_REMOVE] = ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND,
	};
	if ((unsigned)what >= sizeof(refused_by) / sizeof(refused_by[0]))
		return -EINVAL;
	return flags & refused_by[what] ? -EPERM : 0;
}

int iflags_may_set(uint16_t mode, uint32_t old, uint32_t new_flags,
		   const struct iflags_who *who)
{
	uint32_t changed = old ^ new_flags;
	if (!who->owner && !who->cap_fowner)
		return -EPERM; /* vfs_fileattr_set: inode_owner_or_capable */
	if ((changed & (ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND)) && !who->cap_linux_immutable)
		return -EPERM; /* fileattr_set_prepare */
	if (new_flags & ~iflags_allowed(mode))
		return -EOPNOTSUPP; /* not kept, or not for this type */
	if ((old & new_flags & ORDFS_FL_IMMUTABLE) && (changed & ~ORDFS_FL_IMMUTABLE))
		return -EPERM; /* ext4_ioctl_check_immutable */
	return 0;
}

/* The flags with an xflag, and the xflag of each. */
static const struct {
	uint32_t flag, xflag;
} xflag_map[] = {
	{ ORDFS_FL_SYNC, FS_XFLAG_SYNC },
	{ ORDFS_FL_IMMUTABLE, FS_XFLAG_IMMUTABLE },
	{ ORDFS_FL_APPEND, FS_XFLAG_APPEND },
	{ ORDFS_FL_NODUMP, FS_XFLAG_NODUMP },
	{ ORDFS_FL_NOATIME, FS_XFLAG_NOATIME },
};
#define XFLAG_MAP_LEN (sizeof(xflag_map) / sizeof(xflag_map[0]))

uint32_t iflags_to_xflags(uint32_t flags)
{
	uint32_t x = 0;
	for (unsigned i = 0; i < XFLAG_MAP_LEN; i++)
		if (flags & xflag_map[i].flag)
			x |= xflag_map[i].xflag;
	return x;
}

int iflags_from_xflags(uint32_t xflags, uint32_t *flags)
{
	uint32_t f = 0;
	for (unsigned i = 0; i < XFLAG_MAP_LEN; i++)
		if (xflags & xflag_map[i].xflag) {
			f |= xflag_map[i].flag;
			xflags &= ~xflag_map[i].xflag;
		}
	/* FS_XFLAG_HASATTR only says what a get found; the kernel strips it
	 * from a set, and it changes nothing. */
	if (xflags & ~FS_XFLAG_HASATTR)
		return -EOPNOTSUPP;
	*flags = f;
	return 0;
}

void iflags_letters(uint32_t flags, char *buf)
{
	static const struct {
		uint32_t flag;
		char letter;
	} letters[] = {
		{ ORDFS_FL_SYNC, 'S' },   { ORDFS_FL_DIRSYNC, 'D' }, { ORDFS_FL_IMMUTABLE, 'i' },
		{ ORDFS_FL_APPEND, 'a' }, { ORDFS_FL_NODUMP, 'd' },  { ORDFS_FL_NOATIME, 'A' },
		{ ORDFS_FL_JOURNAL_DATA, 'j' },
	};
	_Static_assert(sizeof(letters) / sizeof(letters[0]) < IFLAGS_LETTERS_LEN, "room");
	unsigned n = 0;
	for (unsigned i = 0; i < sizeof(letters) / sizeof(letters[0]); i++)
		if (flags & letters[i].flag)
			buf[n++] = letters[i].letter;
	if (n == 0)
		buf[n++] = '-';
	buf[n] = '\0';
}
