/*
 * fuse_ops.h - the FUSE lowlevel operations table of the ordfs daemon.
 */
#ifndef ORDFS_FUSE_OPS_H
#define ORDFS_FUSE_OPS_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

struct ordfs;

struct blockdev;

struct daemon_ctx {
	struct ordfs *fs;
	double attr_timeout;  /* seconds the kernel may cache attributes */
	double entry_timeout; /* seconds the kernel may cache names */
	struct blockdev *test_faults; /* the fault device (ORDFS_TEST_FAULTS=1) */
};

extern const struct fuse_lowlevel_ops ordfs_fuse_ops;

#endif
