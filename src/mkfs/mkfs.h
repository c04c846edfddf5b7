/*
 * mkfs.h - make a new ordfs on a block device (library half of mkfs.ordfs).
 *
 * Owns: the choice of geometry (ordfs_mkfs_plan) and the writing of a fresh
 * filesystem: zeroed metadata areas with their block headers, the journal
 * superblock, the root directory, then lost+found created through the
 * ordinary filesystem operations (mount, ordfs_mkdir, unmount), so mkfs
 * never duplicates directory or inode code.
 *
 * Rules: plan first, validate the plan with ordfs_super_check_geometry(),
 * then write.  On failure the image may be partly written (mkfs destroys
 * what was there by definition), but the superblock is written last so a
 * half-made image never looks valid; a step after it that fails (filling
 * the new filesystem from a directory, populate.h) takes the superblocks
 * away again with ordfs_mkfs_unmake.
 *
 * The root directory is owned by root (ordfs_mkfs_write) or by the owner
 * given (ordfs_mkfs_write_owned: mke2fs's -E root_owner); lost+found by
 * root, always, as mke2fs makes it.
 *
 * Design: docs/design/README.md (mkfs -d in the library's tools layer).
 */
#ifndef ORDFS_MKFS_H
#define ORDFS_MKFS_H

#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"

struct blockdev;
struct ordfs_cred;

struct mkfs_params {
	uint64_t size_bytes;      /* 0 = the whole device */
	uint32_t block_size;      /* 0 = 4096 */
	uint32_t inode_count;     /* 0 = one per 16 KiB */
	uint32_t journal_blocks;  /* 0 = chosen from the size, like mke2fs */
	char label[ORDFS_LABEL_LEN + 1];
	char mount_opts[ORDFS_MOUNT_OPTS_LEN + 1];
	uint8_t uuid[ORDFS_UUID_LEN];
	bool uuid_set;            /* else a random UUID */
	uint32_t errors;          /* ORDFS_ERRORS_*, 0 = continue */
};

/* Computes the superblock a mkfs with these parameters would write.
 * -EINVAL with a one-line reason for parameters that cannot work. */
int ordfs_mkfs_plan(const struct mkfs_params *p, uint64_t device_bytes,
		    struct ordfs_super *sb, const char **why);
/* Writes a new filesystem described by a plan onto bd. */
int ordfs_mkfs_write(struct blockdev *bd, const struct ordfs_super *sb, const char **why);
/* The same with the root directory owned by root_owner's uid and gid. */
int ordfs_mkfs_write_owned(struct blockdev *bd, const struct ordfs_super *sb,
			   const struct ordfs_cred *root_owner, const char **why);
/* Zeroes both superblocks of the filesystem planned as sb, so an image
 * whose making failed after ordfs_mkfs_write never looks valid. */
int ordfs_mkfs_unmake(struct blockdev *bd, const struct ordfs_super *sb);

#endif
