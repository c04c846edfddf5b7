/*
 * check.c - whole-image consistency check (see check.h): the driver.
 *
 * Owns: the read-only mount the passes run on (check_mode: bitmap blocks
 * failing their checksum are tolerated and reported), the order of the
 * passes, problem reporting and the table of problem names.  The passes
 * (one file each, check_internal.h):
 *   1. pass_inodes.c   inode slots and the inode bitmap;
 *   2. pass_blocks.c   extent trees and block claims, counts, sizes;
 *   3. pass_dirs.c     directory structure, entries, '..';
 *   4. pass_links.c    link counts and reachability;
 *   5. pass_bitmaps.c  block bitmap and summary counts.
 * Rules: read-only, keeps going after a problem, bounded memory (two bits
 * per block, a few bytes per inode).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"
#include "../cache/bcache.h"

bool bitmap_cursor_bit(struct checker *c, struct bitmap_cursor *bc, uint64_t i)
{
	uint32_t per = ordfs_bits_per_bitmap_block(ordfs_block_size(&c->fs->sb));
	uint64_t index = i / per;
	if (!bc->held || bc->index != index) {
		bitmap_cursor_done(c, bc);
		bc->index = index;
		if (index >= bc->ahead_to && index < bc->blocks) {
			/* the walk goes in order: a request per 256 blocks of
			 * the area (a group bitmap block past it is read alone) */
			uint64_t n = bc->blocks - index;
			n = n < BCACHE_READAHEAD_MAX ? n : BCACHE_READAHEAD_MAX;
			bcache_readahead(c->fs->cache, bc->start + index, (uint32_t)n);
			bc->ahead_to = index + n;
		}
		uint64_t blockno = bc->block_bitmap ? ordfs_block_bitmap_block(&c->fs->sb, index)
						    : bc->start + index;
		if (bcache_read(c->fs->cache, blockno, &bc->held) != 0)
			bc->held = NULL;
	}
	return !bc->held || ordfs_bitmap_bit(bc->held->data, (uint32_t)(i % per));
}

void bitmap_cursor_done(struct checker *c, struct bitmap_cursor *bc)
{
	if (bc->held)
		bcache_put(c->fs->cache, bc->held);
	bc->held = NULL;
}

struct inode_info *info_mut(struct checker *c, uint32_t ino)
{
	static struct inode_info scratch;
	struct inode_info **page = &c->info_pages[ino / INFO_PAGE];
	if (!*page && !(*page = calloc(INFO_PAGE, sizeof(**page)))) {
		c->info_oom = true;
		memset(&scratch, 0, sizeof(scratch));
		return &scratch;
	}
	return &(*page)[ino % INFO_PAGE];
}

static const char *const problem_names[] = {
	[CHK_SUPER] = "superblock",
	[CHK_JOURNAL_NOT_EMPTY] = "journal-needs-replay",
	[CHK_INODE_CORRUPT] = "inode-corrupt",
	[CHK_INODE_BITMAP] = "inode-bitmap",
	[CHK_EXTENT_TREE] = "extent-tree",
	[CHK_BLOCK_RANGE] = "block-range",
	[CHK_BLOCK_DUP] = "block-claimed-twice",
	[CHK_BLOCK_BITMAP] = "block-bitmap",
	[CHK_BLOCK_COUNT] = "block-count",
	[CHK_SIZE] = "size",
	[CHK_DIR_STRUCT] = "directory-structure",
	[CHK_DIR_ENTRY] = "directory-entry",
	[CHK_DIR_PARENT] = "directory-parent",
	[CHK_DIR_LOOP] = "directory-reached-twice",
	[CHK_LINK_COUNT] = "link-count",
	[CHK_UNREACHABLE] = "unreachable",
	[CHK_ORPHAN] = "orphan-list",
	[CHK_SUMMARY] = "summary-counts",
	[CHK_XATTR] = "xattr-block",
	[CHK_SUPER_COPY] = "superblock-copy",
	[CHK_FILE_FLAGS] = "file-flags",
	[CHK_SYMLINK] = "symlink",
};

const char *check_problem_name(enum check_problem code)
{
	if ((unsigned)code < sizeof(problem_names) / sizeof(problem_names[0]) &&
	    problem_names[code])
		return problem_names[code];
	return "unknown";
}

uint8_t check_dtype_of_mode(uint16_t mode)
{
	return S_ISREG(mode) ? DT_REG : S_ISDIR(mode) ? DT_DIR : S_ISLNK(mode) ? DT_LNK
	     : S_ISCHR(mode) ? DT_CHR : S_ISBLK(mode) ? DT_BLK : S_ISFIFO(mode) ? DT_FIFO
	     : S_ISSOCK(mode) ? DT_SOCK : DT_UNKNOWN;
}

void problem(struct checker *c, enum check_problem code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->res->problems++;
	if (c->res->report)
		c->res->report(c->res->ctx, code, msg);
}

void progress(struct checker *c, unsigned pass, uint64_t done, uint64_t total)
{
	if (c->res->progress)
		c->res->progress(c->res->ctx, pass, done, total);
}

const char *check_pass_name(unsigned pass)
{
	static const char *const names[] = { "", "inodes", "blocks", "directories",
					     "link counts", "bitmaps and counts" };
	return pass <= CHECK_PASSES ? names[pass] : "";
}

bool root_slot_unusable(struct blockdev *bd)
{
	struct ordfs_super sb;
	const char *why;
	if (ordfs_read_super(bd, false, &sb, &why) != 0)
		return false; /* the superblock is what is wrong */
	uint64_t blockno;
	uint32_t off;
	ordfs_inode_location(&sb, ORDFS_ROOT_INO, &blockno, &off);
	uint32_t bs = ordfs_block_size(&sb);
	uint8_t *blk = malloc(bs);
	if (!blk || blockdev_read(bd, blk, bs, blockno * bs) != 0) {
		free(blk);
		return false;
	}
	struct ordfs_inode d;
	uint32_t unknown;
	int err = ordfs_inode_decode_check(blk + off, ORDFS_ROOT_INO, sb.csum_seed, &d, &unknown);
	free(blk);
	return err != 0 || !S_ISDIR(d.mode);
}

int ordfs_check(struct blockdev *bd, struct check_result *res)
{
	struct ordfs_options opts;
	struct ordfs *fs;
	const char *why;

	res->problems = 0;
	res->inodes_used = res->dirs = res->files = res->blocks_used = 0;
	/* Empty before anything can fail: a repair reads them whatever
	 * happens (a mount refused left them uninitialized). */
	if (res->findings)
		memset(res->findings, 0, sizeof(*res->findings));
	ordfs_options_default(&opts);
	opts.readonly = true;
	opts.check_mode = true;
	int err = ordfs_mount(bd, &opts, &fs, &why);
	if (err) {
		struct checker c0 = { .res = res, .fx = res->findings };
		problem(&c0, err == -EROFS ? CHK_JOURNAL_NOT_EMPTY : CHK_SUPER, "%s", why);
		if (err == -EUCLEAN && c0.fx && root_slot_unusable(bd))
			c0.fx->root_unusable = true;
		else
			fx_unfixable(&c0);
		return 0;
	}

	struct checker c = { .fs = fs, .res = res, .fx = res->findings };
	if (c.fx) {
		c.fx->blocks_found = calloc((fs->sb.block_count + 7) / 8, 1);
		c.fx->inodes_found = calloc(((size_t)fs->sb.inode_count + 7) / 8, 1);
		if (!c.fx->blocks_found || !c.fx->inodes_found) {
			err = -ENOMEM;
			goto out;
		}
	}
	c.info_npages = fs->sb.inode_count / INFO_PAGE + 1;
	c.info_pages = calloc(c.info_npages, sizeof(*c.info_pages));
	c.blocks = calloc((fs->sb.block_count + 7) / 8, 1);
	if (!c.info_pages || !c.blocks) {
		err = -ENOMEM;
		goto out;
	}
	void (*const passes[CHECK_PASSES])(struct checker *) = {
		pass_inodes, pass_blocks, pass_directories, pass_links, pass_bitmap,
	};
	for (unsigned p = 0; p < CHECK_PASSES; p++) {
		progress(&c, p + 1, 0, 1);
		passes[p](&c);
		progress(&c, p + 1, 1, 1);
	}
	if (c.info_oom)
		err = -ENOMEM;
out:
	for (uint32_t i = 0; c.info_pages && i < c.info_npages; i++)
		free(c.info_pages[i]);
	free(c.info_pages);
	free(c.blocks);
	ordfs_unmount(fs);
	return err;
}
