/*
 * helpers.h - shared fixtures for the Check unit tests.
 *
 * A test filesystem is a fresh mkfs on an in-memory device, seen through a
 * recording wrapper (counts, latch, faults), mounted with the real mount
 * path.  Every test that mounts ends with tfs_unmount_and_check(), which
 * unmounts, remounts read-only and runs the library checker: a test that
 * leaves the filesystem inconsistent fails there.
 */
#ifndef ORDFS_TEST_HELPERS_H
#define ORDFS_TEST_HELPERS_H

#include <check.h>
#include <errno.h>
#include <stdint.h>

#include "fs.h"
#include "inode/inode.h"
#include "ops.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "journal/journal.h"
#include "alloc/alloc.h"
#include "check/check.h"

struct test_fs {
	struct blockdev *mem;  /* the image bytes */
	struct blockdev *rec;  /* recording wrapper the fs uses */
	struct ordfs *fs;
	struct ordfs_options opts;
};

/* mkfs (size bytes, block size, journal blocks; 0 = defaults) + mount. */
void tfs_setup(struct test_fs *t, uint64_t size, uint32_t block_size,
	       uint32_t journal_blocks);
/* Block-bitmap groups past the area (format.h, INCOMPAT_GROUP_BITMAPS),
 * made by hand until resize.ordfs makes them: grows the unmounted, clean
 * filesystem on bd to new_count blocks (bd that long), which must lie
 * past the bits the block bitmap area holds.  The area's bits of the old
 * backup block and of the blocks past the old end are cleared; each group
 * past the area gets its bitmap block in its first block (header and
 * checksum right, bit 0 set, the new last block's bit and the bits past
 * new_count set); then the superblock (flag set, free_blocks less one per
 * group bitmap block) goes to block 0 and to the new last block.  0, or
 * -EINVAL (not such an image or size), -EUCLEAN (an area bitmap block
 * fails its checksum), or the device's error. */
int tfs_add_groups(struct blockdev *bd, uint64_t new_count);
/* tfs_setup of an old_size-byte filesystem on a device of new_count
 * blocks, grown to all of it by tfs_add_groups, then mounted. */
void tfs_setup_groups(struct test_fs *t, uint64_t old_size, uint32_t block_size,
		      uint64_t new_count);
/* Mount again (after tfs_unmount or a simulated crash). */
void tfs_mount(struct test_fs *t);
void tfs_unmount(struct test_fs *t);
/* Unmount, run the checker on the image, assert it is clean, free all. */
void tfs_unmount_and_check(struct test_fs *t);
/* Free everything without unmounting cleanly (a crash: the image keeps
 * whatever was written so far). */
void tfs_crash(struct test_fs *t);
void tfs_free(struct test_fs *t);

/* Runs the checker on the image bytes; returns the number of problems and
 * prints them to stderr. */
int tfs_check_image(struct test_fs *t);
/* The same on any device (unmounted), with the checker's counts. */
struct check_result tfs_check_dev(struct blockdev *bd);

/* Handle convenience: start with credits, ck_assert on failure. */
struct handle *tfs_start(struct test_fs *t, uint32_t credits);
void tfs_stop(struct handle *h);

/* Root inode with a reference. */
struct inode *tfs_root(struct test_fs *t);
/* A new regular file NAME (0644, root's) in the root directory, or the
 * existing one; with a reference, ck_assert on failure. */
struct inode *tfs_create_file(struct test_fs *t, const char *name);
struct inode *tfs_open_file(struct test_fs *t, const char *name);
/* len bytes of the pattern numbered seed (deterministic, never all one
 * value over a block). */
void tfs_fill_pattern(uint8_t *buf, size_t len, uint32_t seed);

/* Step of the exhaustive fault and seed sweeps: 1 (every case) unless
 * ORDFS_TEST_SWEEP_STRIDE says more.  The ThreadSanitizer suite sets it:
 * the sweeps test error paths one case at a time, which the normal and
 * ASan builds run whole; under TSan it is the threads that are tested. */
unsigned tfs_sweep_stride(void);

#endif
