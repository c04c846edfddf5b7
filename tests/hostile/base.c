/*
 * base.c - the base images of the hostile-image harness: mkfs.ordfs's
 * library on a 4 MiB in-memory device (1 KiB blocks, a fixed UUID so
 * every run builds the same layout) and a tree with one of every
 * structure the mutator damages.
 *
 * Owns: the tree (what the walk finds on an undamaged image).  Rules: the
 * same kind always gives the same layout (names, sizes, the order of
 * allocation); the live kind leaves committed transactions in the journal
 * (the copy is taken before any checkpoint), so replay runs on every
 * case built from it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile.h"
#include "blockdev/blockdev.h"
#include "fs.h"
#include "inode/inode.h"
#include "mkfs/mkfs.h"
#include "ops.h"

static const struct ordfs_cred root_cred = { 0, 0 };

#define TRY(expr, what)                     \
	do {                                \
		if ((expr) != 0) {          \
			*why = (what);      \
			goto fail;          \
		}                           \
	} while (0)

static int make_file(struct ordfs *fs, struct inode *dir, const char *name, const void *data,
		     size_t len, struct inode **out)
{
	struct inode *f;
	int err = ordfs_create(fs, dir, name, 0644, &root_cred, &f);
	if (err)
		return err;
	if (len && ordfs_write(fs, f, data, len, 0) != (ssize_t)len) {
		inode_put(fs, f);
		return -EIO;
	}
	if (out)
		*out = f;
	else
		inode_put(fs, f);
	return 0;
}

/* The tree:
 *   /a/            a directory of 70 files (an indexed directory: its
 *                  root is an index node over several leaves)
 *   /a/b/c/        nested directories (for '..' loops)
 *   /a/b/data      a file of 3 blocks
 *   /frag          12 one-block extents with holes between (a tree block)
 *   /x             a file with two user. xattrs and one trusted.
 *   /hard, /a/f00  two names of one file
 *   /fast, /slow   a fast symlink and a 300-byte one (a block)
 *   /d2/           a second directory with a file (a target for loops)
 * The live kind adds /live and /a/live2 after the last sync, committed
 * (fsync) but not checkpointed. */
static int populate(struct ordfs *fs, bool live, const char **why)
{
	struct inode *r = NULL, *a = NULL, *b = NULL, *c = NULL, *d2 = NULL, *f = NULL;
	uint8_t blk[H_BS];
	char name[64];
	TRY(inode_get(fs, ORDFS_ROOT_INO, &r), "root");
	TRY(ordfs_mkdir(fs, r, "a", 0755, &root_cred, &a), "mkdir a");
	for (int i = 0; i < 70; i++) {
		snprintf(name, sizeof(name), "f%02d-a-longer-name-for-more-entries", i);
		if (i == 0)
			snprintf(name, sizeof(name), "f00");
		char content[64];
		int n = snprintf(content, sizeof(content), "content of %s\n", name);
		TRY(make_file(fs, a, name, content, (size_t)n, &f), "create in a");
		if (i == 0)
			TRY(ordfs_link(fs, f, r, "hard"), "link");
		inode_put(fs, f);
		f = NULL;
	}
	TRY(ordfs_mkdir(fs, a, "b", 0755, &root_cred, &b), "mkdir b");
	TRY(ordfs_mkdir(fs, b, "c", 0755, &root_cred, &c), "mkdir c");
	for (unsigned i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 7 + 3);
	TRY(make_file(fs, b, "data", blk, sizeof(blk), &f), "data");
	TRY(ordfs_write(fs, f, blk, sizeof(blk), H_BS) == H_BS ? 0 : -EIO, "data 2");
	TRY(ordfs_write(fs, f, blk, 100, 2 * H_BS) == 100 ? 0 : -EIO, "data 3");
	inode_put(fs, f);
	f = NULL;
	TRY(make_file(fs, r, "frag", NULL, 0, &f), "frag");
	for (int i = 0; i < 12; i++) {
		memset(blk, 'A' + i, sizeof(blk));
		TRY(ordfs_write(fs, f, blk, H_BS, (uint64_t)i * 2 * H_BS) == H_BS ? 0 : -EIO,
		    "frag write");
		TRY(ordfs_fsync(fs, f, false), "frag fsync");
	}
	inode_put(fs, f);
	f = NULL;
	TRY(make_file(fs, r, "x", "xattrs\n", 7, &f), "x");
	TRY(ordfs_setxattr(fs, f, "user.one", "1", 1, 0), "xattr 1");
	TRY(ordfs_setxattr(fs, f, "user.two", "second value", 12, 0), "xattr 2");
	TRY(ordfs_setxattr(fs, f, "trusted.t", "tv", 2, 0), "xattr 3");
	inode_put(fs, f);
	f = NULL;
	char longt[301];
	memset(longt, 'l', 300);
	longt[300] = 0;
	TRY(ordfs_symlink(fs, r, "fast", "a/b/data", &root_cred, &f), "fast");
	inode_put(fs, f);
	f = NULL;
	TRY(ordfs_symlink(fs, r, "slow", longt, &root_cred, &f), "slow");
	inode_put(fs, f);
	f = NULL;
	TRY(ordfs_mkdir(fs, r, "d2", 0755, &root_cred, &d2), "d2");
	TRY(make_file(fs, d2, "in-d2", "d2 file\n", 8, NULL), "in-d2");
	TRY(ordfs_sync(fs), "sync");
	if (live) {
		TRY(make_file(fs, r, "live", "live data\n", 10, &f), "live");
		TRY(ordfs_fsync(fs, f, false), "live fsync");
		inode_put(fs, f);
		f = NULL;
		TRY(make_file(fs, a, "live2", "live two\n", 9, &f), "live2");
		TRY(ordfs_setxattr(fs, f, "user.l", "v", 1, 0), "live2 xattr");
		TRY(ordfs_fsync(fs, f, false), "live2 fsync");
		inode_put(fs, f);
		f = NULL;
		TRY(ordfs_unlink(fs, d2, "in-d2"), "unlink in-d2");
		TRY(ordfs_fsync(fs, d2, false), "d2 fsync");
	}
	inode_put(fs, d2);
	inode_put(fs, c);
	inode_put(fs, b);
	inode_put(fs, a);
	inode_put(fs, r);
	return 0;
fail:
	if (f)
		inode_put(fs, f);
	if (d2)
		inode_put(fs, d2);
	if (c)
		inode_put(fs, c);
	if (b)
		inode_put(fs, b);
	if (a)
		inode_put(fs, a);
	if (r)
		inode_put(fs, r);
	return -EIO;
}

int h_base_build(enum h_base kind, struct h_image *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	struct blockdev *mem;
	if (blockdev_mem_create(H_IMG_SIZE, &mem)) {
		*why = "no memory for the image";
		return -ENOMEM;
	}
	struct mkfs_params p;
	memset(&p, 0, sizeof(p));
	p.size_bytes = H_IMG_SIZE - 4096; /* room for the owner record past the filesystem */
	p.block_size = H_BS;
	p.journal_blocks = 128;
	p.inode_count = 256;
	p.uuid_set = true;
	for (unsigned i = 0; i < ORDFS_UUID_LEN; i++)
		p.uuid[i] = (uint8_t)(0x40 + i);
	int err = ordfs_mkfs_plan(&p, H_IMG_SIZE, &out->sb, why);
	if (!err)
		err = ordfs_mkfs_write(mem, &out->sb, why);
	if (err) {
		blockdev_destroy(mem);
		return err;
	}
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	struct ordfs *fs;
	err = ordfs_mount(mem, &opts, &fs, why);
	if (err) {
		blockdev_destroy(mem);
		return err;
	}
	err = populate(fs, kind == H_BASE_LIVE, why);
	if (!err) {
		out->size = H_IMG_SIZE;
		out->bytes = malloc(H_IMG_SIZE);
		if (!out->bytes) {
			*why = "no memory";
			err = -ENOMEM;
		}
	}
	if (!err && kind == H_BASE_LIVE)
		memcpy(out->bytes, blockdev_mem_bytes(mem), H_IMG_SIZE); /* before checkpoint */
	int uerr = ordfs_unmount(fs);
	if (!err && kind != H_BASE_LIVE) {
		if (uerr) {
			*why = "unmount";
			err = uerr;
		} else {
			memcpy(out->bytes, blockdev_mem_bytes(mem), H_IMG_SIZE);
		}
	}
	blockdev_destroy(mem);
	if (err) {
		free(out->bytes);
		out->bytes = NULL;
	}
	return err;
}
