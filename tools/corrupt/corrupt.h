/*
 * corrupt.h - damage one chosen structure of an ordfs image, deterministic
 * by seed: the test tool behind fsck's and the mount's hostile-image
 * tests (and the `ordfs-corrupt` command).
 *
 * Owns: the list of damage kinds and how each finds its target.  Targets
 * are found on a read-only mount of the (still valid) image, then the
 * bytes are changed on the device directly.  Kinds ending in _CSUM keep
 * the structure's checksum valid, as a hostile image would: the damage
 * must then be caught by the structure checks, not the CRC.
 *
 * The dirent and dotdot kinds are made through the filesystem's own
 * directory code in a handle on a read-write mount (valid checksums
 * everywhere), as dir-hardlink is: damage a buggy or hostile writer makes.
 *
 * Rules: the same image, kind and seed always give the same damage; a
 * kind whose target does not exist in the image (no directory blocks
 * beyond the root's, an empty journal) returns -ENOENT and changes
 * nothing.
 */
#ifndef ORDFS_CORRUPT_H
#define ORDFS_CORRUPT_H

#include <stdint.h>

struct blockdev;

enum corrupt_kind {
	CORRUPT_SUPER_CSUM,      /* a superblock field, checksum recomputed */
	CORRUPT_INODE_BITS,      /* bits of an in-use inode (checksum fails) */
	CORRUPT_INODE_CSUM,      /* bytes of an in-use inode, checksum recomputed */
	CORRUPT_INODE_LINKS,     /* an inode's link count, checksum recomputed */
	CORRUPT_DIR_ZERO,        /* a directory block zeroed */
	CORRUPT_DIR_BITS,        /* bits of a directory block */
	CORRUPT_DIR_CSUM,        /* bytes of a directory block, checksum recomputed */
	CORRUPT_EXTENT_CSUM,     /* bytes of an extent-tree block, checksum recomputed */
	CORRUPT_BITMAP_FREE,     /* a used block marked free, checksum recomputed */
	CORRUPT_BITMAP_BITS,     /* bits of a bitmap block, a group bitmap block
				    past the area among them (checksum fails) */
	CORRUPT_JOURNAL_BITS,    /* bits of a journal block in use (commit, tags) */
	CORRUPT_JOURNAL_CSUM,    /* a journal block in use, checksum recomputed */
	CORRUPT_ANY_METADATA,    /* bits of any metadata block */
	CORRUPT_FILE_SIZE,       /* a file's size below its data (valid checksum) */
	CORRUPT_BLOCK_COUNT,     /* an inode's blocks count (valid checksum) */
	CORRUPT_EXTENT_RANGE,    /* a file's extent past the end of the image */
	CORRUPT_EXTENT_DUP,      /* a file's extent onto another file's blocks */
	CORRUPT_DIR_PARENT,      /* a directory's '..' (valid checksum) */
	CORRUPT_ORPHAN_HEAD,     /* a clean image's orphan list not empty */
	CORRUPT_XATTR_BITS,      /* bits of an xattr block */
	CORRUPT_IBITMAP_FREE,    /* an inode in use marked free (valid checksum) */
	CORRUPT_XATTR_RANGE,     /* an xattr block past the end (valid checksum) */
	CORRUPT_DIR_HARDLINK,    /* a second name for a directory (a read-write
				    mount, through the journal) */
	CORRUPT_SUPER_TORN,      /* one sector copy of the superblock or of the
				  * journal superblock garbage (a torn write) */
	CORRUPT_FLAGS_UNKNOWN,   /* file-flag bits no ordfs defines on a file
				    (valid checksum) */
	CORRUPT_FLAGS_TYPE,      /* a regular file flagged D (and d), which only
				    a directory may carry, on an image without
				    the file_flags feature (valid checksum) */
	CORRUPT_DIRENT_SELF,     /* an entry "loop" in a directory other than the
				    root naming that directory itself */
	CORRUPT_DIRENT_ROOT,     /* an entry "loop" in a directory other than the
				    root naming the root */
	CORRUPT_DIRENT_ROOT_SELF, /* an entry "loop" in the root naming the root */
	CORRUPT_DIRENT_PARENT,   /* an entry "loop" in a directory two or more
				    levels deep naming its parent (-ENOENT
				    without one) */
	CORRUPT_DOTDOT_CYCLE,    /* a '..' cycle: directory b (two or more levels
				    deep) gets an entry "loop" naming its parent
				    a, and a's '..' names b (-ENOENT without
				    such a b) */
	CORRUPT_JOURNAL_RO_COMPAT, /* a committed transaction in the log whose copy
				      of block 0 sets an unknown ro_compat bit
				      (every checksum valid): replay brings it */
	CORRUPT_JOURNAL_SEQ_LIMIT, /* the (empty) journal's sequence at 2^62 - 1,
				      the largest the reader accepts */
	CORRUPT_JOURNAL_LIVE_LIMIT, /* two committed transactions, sequences
				       2^62 - 1 and 2^62 (what an ordfs before
				       the sequence limit wrote), to replay */
	CORRUPT_JOURNAL_ERRNO_MIN, /* the journal superblock's errno INT_MIN,
				      with a committed transaction to replay */
	CORRUPT_OWNER_HELD,      /* the owner record held by a silent holder of
				    another host claiming a heartbeat interval
				    of 0xffffffff ms */
	CORRUPT_DIRENT_TYPE_DIR, /* an entry of type regular file naming a
				    directory: in a directory D, D itself
				    (seed % 3 == 0) or the root (1); in the
				    root, another directory (2); added through
				    the journal of a read-write mount */
	CORRUPT_SYMLINK_SIZE,    /* a fast symlink's size 0 or 128 .. 4095
				    (valid checksum) */
	CORRUPT_IBITMAP_RESERVED,/* reserved inode 1's bit cleared in the inode
				    bitmap (valid checksum) */
	CORRUPT_EXTENT_FAR,      /* a file's last root extent moved to logical
				    block 2^62 or past (valid checksum) */
	CORRUPT_INODE_RESERVED,  /* a reserved byte of an inode slot (2..3 or
				    240..251) not zero (valid checksum) */
	CORRUPT_HASH_SEED,       /* the superblock's directory hash seed
				    changed (valid checksum) */
	CORRUPT_BLOCK_RESERVED,  /* the reserved field (offset 6) of a metadata
				    block's header not zero: a bitmap, directory,
				    extent-tree or xattr block (valid checksum) */
	CORRUPT_SUPER_RESERVED,  /* a reserved byte (288..507) of the primary
				    superblock's copies not zero (valid checksum) */
	CORRUPT_SYMLINK_HOLE,    /* a slow symlink's size past the blocks it
				    maps, at most 4095 (valid checksum; needs
				    blocks smaller than 4 KiB) */
	CORRUPT_IBITMAP_FREE_ALL, /* every inode in use past the root marked free
				     in the inode bitmap (valid checksums):
				     lost+found and every directory and file */
	CORRUPT_BITMAP_FREE_DIR,  /* a directory block other than the root's
				     marked free in the block bitmap (valid
				     checksum) */
	CORRUPT_ROOT_DAMAGED,    /* the root inode: a regular file (valid
				    checksum) or its checksum broken, by seed */
	CORRUPT_DIR_SIZE,        /* a directory's size 0 or a block past its
				    blocks (valid checksum) */
	CORRUPT_KINDS
};

/* The kind's name ("inode-bits", ...), or NULL past the end. */
const char *corrupt_kind_name(enum corrupt_kind kind);
/* The kind named, or -1. */
int corrupt_kind_parse(const char *name);

/* Fills an image (no mount: the library, on the file) with a small tree
 * every kind finds targets in: directories, files with data and one with
 * an extent tree, a hard link, symlinks, an xattr.  0 or a negative errno. */
int corrupt_populate(struct blockdev *bd);

/* Damages the image on bd.  0, -ENOENT (no target of that kind), or a
 * negative errno.  *what (if not NULL) gets a one-line description. */
int corrupt_image(struct blockdev *bd, enum corrupt_kind kind, uint64_t seed, char *what,
		  unsigned what_len);

#endif
