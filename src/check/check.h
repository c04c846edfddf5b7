/*
 * check.h - the library's consistency checker (fsck.ordfs grows from it).
 *
 * Owns: a read-only walk of a whole image that compares what is reachable
 * with what is recorded: inodes against the inode bitmap, blocks of every
 * inode (extent trees, directories) against the block bitmap and against
 * each other, directory structure, link counts, ".." of directories, the
 * orphan list and the superblock's summary counts.
 *
 * Rules: never writes; never trusts a field (everything goes through the
 * verifying decoders); reports every problem through the callback with a
 * code from check_problem and a one-line message, and keeps going.
 */
#ifndef ORDFS_CHECK_H
#define ORDFS_CHECK_H

#include <stdint.h>

struct blockdev;

enum check_problem {
	CHK_SUPER = 1,          /* superblock unreadable or invalid */
	CHK_JOURNAL_NOT_EMPTY,  /* journal needs replay */
	CHK_INODE_CORRUPT,      /* inode fails its checksum or decode */
	CHK_INODE_BITMAP,       /* inode bitmap disagrees with the inode table */
	CHK_EXTENT_TREE,        /* bad extent tree block or record */
	CHK_BLOCK_RANGE,        /* block outside the data area */
	CHK_BLOCK_DUP,          /* block claimed twice */
	CHK_BLOCK_BITMAP,       /* block bitmap disagrees with what is in use */
	CHK_BLOCK_COUNT,        /* inode's blocks count is wrong */
	CHK_SIZE,               /* size disagrees with the blocks mapped */
	CHK_DIR_STRUCT,         /* directory block or index problem */
	CHK_DIR_ENTRY,          /* entry points at a free/bad inode or wrong type */
	CHK_DIR_PARENT,         /* ".." of a directory is wrong */
	CHK_DIR_LOOP,           /* directory reachable twice */
	CHK_LINK_COUNT,         /* link count disagrees with the entries */
	CHK_UNREACHABLE,        /* in-use inode not reachable and not orphaned */
	CHK_ORPHAN,             /* orphan list problem */
	CHK_SUMMARY,            /* superblock free counts wrong (clean image) */
	CHK_XATTR,              /* bad extended attribute block */
};

#define CHECK_PASSES 5u

struct check_result {
	uint32_t problems;
	uint64_t inodes_used, dirs, files, blocks_used;
	void (*report)(void *ctx, enum check_problem code, const char *msg);
	void *ctx;
	/* Optional: called as each pass (1..CHECK_PASSES) starts (done 0),
	 * now and then within it, and as it ends (done == total). */
	void (*progress)(void *ctx, unsigned pass, uint64_t done, uint64_t total);
};

/* The name of a pass, for progress output. */
const char *check_pass_name(unsigned pass);

/* Checks the image on bd (not modified).  Returns 0 when the check ran
 * (result->problems tells whether it found anything) or a negative errno
 * when it could not run at all (unreadable device, out of memory). */
int ordfs_check(struct blockdev *bd, struct check_result *result);

#endif
