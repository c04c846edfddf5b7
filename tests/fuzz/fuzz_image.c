/*
 * fuzz_image.c - libFuzzer target: a small valid ordfs image, patched by
 * the input, then everything that reads an untrusted image: the
 * superblock decoder, journal recovery, the checker, and read-only and
 * read-write mounts that list, stat, read and change what they find.
 *
 * Input format (any byte string is valid):
 *   repeated { u8 flags; u24 offset; u8 len; len bytes }
 * Each record writes its bytes at offset (modulo the image size).  With
 * flags bit 0 the checksum of what was hit is set again afterwards (the
 * inode slot, or the block's common header / journal block checksum), so
 * the fuzzer gets past the CRCs to the structure checks, as a hostile
 * image would.  The empty input is the valid image.
 *
 * Build and run: scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/endian_le.h"
#include "format/format.h"
#include "fs.h"
#include "inode/inode.h"
#include "ops.h"
#include "blockdev/blockdev.h"
#include "check/check.h"
#include "journal/journal.h"
#include "mkfs/mkfs.h"

#define IMG_SIZE (2u << 20)
#define BS 1024u

static uint8_t *template_image;
static struct ordfs_super template_sb;
static const struct ordfs_cred root = { 0, 0 };

static void die(const char *what)
{
	(void)what;
	abort();
}

/* mkfs, then a little of everything: a directory with enough entries for
 * an index, a fragmented file (an extent tree), symlinks, an xattr, a
 * hard link; the last transactions stay in the log (no unmount). */
static void build_template(void)
{
	struct blockdev *mem;
	if (blockdev_mem_create(IMG_SIZE, &mem))
		die("mem");
	struct mkfs_params p;
	memset(&p, 0, sizeof(p));
	p.block_size = BS;
	p.journal_blocks = 128;
	const char *why;
	if (ordfs_mkfs_plan(&p, IMG_SIZE, &template_sb, &why) || ordfs_mkfs_write(mem, &template_sb, &why))
		die("mkfs");
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	struct ordfs *fs;
	if (ordfs_mount(mem, &opts, &fs, &why))
		die("mount");
	struct inode *r, *d, *f;
	if (inode_get(fs, ORDFS_ROOT_INO, &r) || ordfs_mkdir(fs, r, "d", 0755, &root, &d))
		die("mkdir");
	for (int i = 0; i < 40; i++) {
		char name[32];
		memcpy(name, "file-with-a-name-", 17);
		name[17] = (char)('a' + i % 26);
		name[18] = (char)('a' + i / 26);
		name[19] = 0;
		if (ordfs_create(fs, d, name, 0644, &root, &f))
			die("create");
		ordfs_write(fs, f, name, 19, 0);
		if (i == 0) {
			ordfs_setxattr(fs, f, "user.x", "y", 1, 0);
			ordfs_link(fs, f, r, "hard");
		}
		inode_put(fs, f);
	}
	if (ordfs_create(fs, r, "frag", 0644, &root, &f))
		die("frag");
	uint8_t blk[BS];
	memset(blk, 7, sizeof(blk));
	for (int i = 0; i < 12; i++) {
		ordfs_write(fs, f, blk, BS, (uint64_t)i * 2 * BS);
		ordfs_fsync(fs, f, false);
	}
	inode_put(fs, f);
	char longt[300];
	memset(longt, 'l', sizeof(longt) - 1);
	longt[sizeof(longt) - 1] = 0;
	if (ordfs_symlink(fs, r, "fast", "t", &root, &f) == 0)
		inode_put(fs, f);
	if (ordfs_symlink(fs, d, "slow", longt, &root, &f) == 0)
		inode_put(fs, f);
	ordfs_sync(fs);
	inode_put(fs, d);
	inode_put(fs, r);
	/* No unmount: the image keeps a journal to replay.  The filesystem is
	 * leaked on purpose (its threads keep running; the copy is taken). */
	template_image = malloc(IMG_SIZE);
	if (!template_image)
		die("malloc");
	memcpy(template_image, blockdev_mem_bytes(mem), IMG_SIZE);
	(void)ordfs_unmount(fs);
	blockdev_destroy(mem);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	build_template();
	return 0;
}

static void fix_checksum(uint8_t *img, uint32_t off)
{
	uint64_t blockno = off / BS;
	uint8_t *blk = img + blockno * BS;
	const struct ordfs_super *sb = &template_sb;
	if (blockno >= sb->inode_table_start && blockno < sb->data_start) {
		uint32_t slot = (off % BS) / ORDFS_INODE_SIZE;
		uint32_t inum = (uint32_t)((blockno - sb->inode_table_start) * (BS / ORDFS_INODE_SIZE) +
					   slot + 1);
		ordfs_inode_csum_set(blk + slot * ORDFS_INODE_SIZE, inum, sb->csum_seed);
	} else if (blockno == sb->journal_start) {
		ordfs_journal_super_csum_set(blk, sb->csum_seed);
	} else if (blockno >= sb->journal_start && blockno < sb->journal_start + sb->journal_blocks) {
		if (le_get32(blk) == ORDFS_JOURNAL_MAGIC)
			ordfs_jblock_csum_set(blk, BS, sb->csum_seed);
	} else if (blockno == 0) {
		ordfs_super_csum_set(blk);
	} else {
		ordfs_block_csum_set(blk, BS, sb->csum_seed);
	}
}

static void quiet(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	(void)code;
	(void)msg;
}

static int list_cb(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
		   uint64_t next)
{
	unsigned *n = ctx;
	(void)name;
	(void)len;
	(void)ino;
	(void)dtype;
	(void)next;
	return ++*n > 500;
}

static void walk(struct ordfs *fs, struct inode *dir, int depth, bool rw)
{
	unsigned n = 0;
	(void)ordfs_readdir(fs, dir, 0, list_cb, &n);
	static const char *const names[] = { "d", "hard", "frag", "fast", "slow",
					     "file-with-a-name-aa", "file-with-a-name-ba" };
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct inode *c;
		if (ordfs_lookup(fs, dir, names[i], &c) != 0)
			continue;
		struct stat st;
		char buf[4096];
		ordfs_getattr(fs, c, &st);
		(void)ordfs_listxattr(fs, c, buf, sizeof(buf));
		if (S_ISREG(c->d.mode)) {
			(void)ordfs_read(fs, c, buf, sizeof(buf), 0);
			(void)ordfs_read(fs, c, buf, sizeof(buf), 20000);
			if (rw) {
				(void)ordfs_write(fs, c, "zz", 2, 5);
				(void)ordfs_truncate(fs, c, 3000);
			}
		} else if (S_ISLNK(c->d.mode)) {
			(void)ordfs_readlink(fs, c, buf, sizeof(buf));
		} else if (S_ISDIR(c->d.mode) && depth < 2) {
			walk(fs, c, depth + 1, rw);
		}
		inode_put(fs, c);
	}
	if (rw) {
		struct inode *f;
		if (ordfs_create(fs, dir, "new", 0644, &root, &f) == 0)
			inode_put(fs, f);
		(void)ordfs_unlink(fs, dir, "hard");
		(void)ordfs_rename(fs, dir, "frag", dir, "frag2", 0);
	}
}

static void exercise(struct blockdev *bd, bool readonly)
{
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	opts.readonly = readonly;
	struct ordfs *fs;
	const char *why;
	if (ordfs_mount(bd, &opts, &fs, &why) != 0)
		return;
	struct inode *r;
	if (inode_get(fs, ORDFS_ROOT_INO, &r) == 0) {
		walk(fs, r, 0, !readonly);
		if (!readonly)
			(void)ordfs_sync(fs);
		inode_put(fs, r);
	}
	(void)ordfs_unmount(fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct blockdev *bd;
	if (blockdev_mem_from(template_image, IMG_SIZE, &bd))
		return 0;
	uint8_t *img = blockdev_mem_bytes(bd);
	size_t i = 0;
	while (i + 5 <= size) {
		uint8_t flags = data[i];
		uint32_t off = ((uint32_t)data[i + 1] | (uint32_t)data[i + 2] << 8 |
				(uint32_t)data[i + 3] << 16) % IMG_SIZE;
		size_t len = data[i + 4];
		i += 5;
		if (len > size - i)
			len = size - i;
		if (len > IMG_SIZE - off)
			len = IMG_SIZE - off;
		memcpy(img + off, data + i, len);
		i += len;
		if (flags & 1)
			fix_checksum(img, off);
	}

	struct ordfs_super sb;
	const char *why;
	if (ordfs_read_super(bd, false, &sb, &why) == 0) {
		struct journal_recovery_info info;
		(void)journal_recover(bd, &sb, JOURNAL_RECOVER_DRY_RUN, &info);
		struct check_result res;
		memset(&res, 0, sizeof(res));
		res.report = quiet;
		(void)ordfs_check(bd, &res); /* refuses while the log needs replay */
		exercise(bd, false);          /* replays, then reads and writes */
		memset(&res, 0, sizeof(res));
		res.report = quiet;
		(void)ordfs_check(bd, &res);
		exercise(bd, true);
	}
	blockdev_destroy(bd);
	return 0;
}
