/*
 * ordfs_ioctl.h - the ioctls the ordfs daemon answers on any file or
 * directory of a mounted ordfs (ordfsctl is their user).
 *
 * Linux does not pass sync(2) or syncfs(2) on to a FUSE daemon (only
 * virtiofs gets them), so a plain `sync` makes nothing of ordfs durable
 * sooner: it waits for the next periodic commit.  ORDFS_IOC_SYNC is the
 * way to ask for it now.
 *
 * Rules: FUSE passes only ioctls whose size and direction are encoded in
 * the number (restricted ioctls), so every argument is a fixed struct.
 * ORDFS_IOC_TEST_FAULT works only in a daemon started with
 * ORDFS_TEST_FAULTS=1 in its environment, ORDFS_IOC_TEST_MARK only with
 * ORDFS_TEST_RECORD=PATH (ENOTTY otherwise).
 */
#ifndef ORDFS_IOCTL_H
#define ORDFS_IOCTL_H

#include <linux/ioctl.h>
#include <stdint.h>

/* Writes back all dirty data, commits the journal and flushes the image. */
#define ORDFS_IOC_SYNC _IO('o', 0x01)

/* Test only: a mark in the log of the recording device under the image (a
 * daemon started with ORDFS_TEST_RECORD=PATH streams every write and flush
 * of the image to PATH; tests/crash/crash_sqlite replays it).  text is
 * NUL-terminated. */
struct ordfs_test_mark {
	char text[248];
};
#define ORDFS_IOC_TEST_MARK _IOW('o', 0x7e, struct ordfs_test_mark)

/* Test only: arm the fault device under the image (see blockdev.h). */
struct ordfs_test_fault {
	uint32_t op;         /* 0 write, 1 flush, 2 heal (disarm and repair) */
	uint32_t persistent; /* nonzero: the device stays broken */
	int32_t err;         /* positive errno, e.g. EIO */
	uint32_t reserved;
	uint64_t nth;        /* 1 = the next operation */
};
#define ORDFS_IOC_TEST_FAULT _IOW('o', 0x7f, struct ordfs_test_fault)

#endif
