/*
 * pass_blocks.c - pass 2: the blocks of every inode in use: extent trees
 * walked, every block inside the data area and claimed once, the blocks
 * count and the size consistent with what is mapped (a long symlink's
 * target blocks all mapped, as readlink reads them); xattr blocks (the
 * ACL values in them included: a malformed one is named).
 * Hands on: the bit map of blocks in use (checker.blocks), with the group
 * bitmap blocks marked first (metadata no inode may claim).
 * Findings: inodes to truncate (bad tree, blocks out of range, blocks an
 * earlier inode claimed), block counts and sizes to set, xattr blocks to
 * drop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"
#include "format/endian_le.h"
#include "base/ordfs_assert.h"

static bool test_and_set_block(struct checker *c, uint64_t b)
{
	uint8_t mask = (uint8_t)(1u << (b % 8));
	bool was = c->blocks[b / 8] & mask;
	c->blocks[b / 8] |= mask;
	return was;
}

static bool block_claimed(const struct checker *c, uint64_t b)
{
	return (c->blocks[b / 8] >> (b % 8)) & 1;
}

/* Claims [start, start + len) for the current inode.  A data block an
 * earlier inode claimed is copied for this one (if its extents are all in
 * the inode); anything else claimed twice truncates it. */
static void claim_blocks(struct checker *c, uint64_t start, uint64_t len, bool data)
{
	const struct ordfs_super *sb = &c->fs->sb;
	if (start < sb->data_start || start >= sb->block_count - 1 ||
	    len > sb->block_count - 1 - start) {
		problem(c, CHK_BLOCK_RANGE, "inode %u: blocks %llu+%llu outside the data area",
			c->cur_ino, (unsigned long long)start, (unsigned long long)len);
		fx_empty_inode(c, c->cur_ino);
		return;
	}
	for (uint64_t b = start; b < start + len; b++) {
		if (test_and_set_block(c, b)) {
			problem(c, CHK_BLOCK_DUP, "inode %u: block %llu is claimed twice",
				c->cur_ino, (unsigned long long)b);
			if (data && c->cur_clonable) {
				struct check_block_ref ref = { c->cur_ino, b };
				FX_PUSH(c, c->fx->clone_blocks, ref);
			} else {
				fx_empty_inode(c, c->cur_ino); /* the later claimant */
			}
		} else
			c->blocks_found++;
	}
	c->cur_blocks += len;
}


static int node_cb(void *ctx, uint64_t blockno, unsigned depth, int bad)
{
	struct checker *c = ctx;
	(void)depth;
	if (bad) {
		problem(c, CHK_EXTENT_TREE, "inode %u: bad extent tree block %llu", c->cur_ino,
			(unsigned long long)blockno);
		fx_empty_inode(c, c->cur_ino);
		return 0;
	}
	claim_blocks(c, blockno, 1, false);
	return 0;
}

static int ext_cb(void *ctx, const struct ordfs_extent *e)
{
	struct checker *c = ctx;
	claim_blocks(c, e->physical, e->len, true);
	if (!(e->flags & ORDFS_EXT_UNWRITTEN)) {
		c->cur_has_blocks = true;
		c->cur_last_lblk = e->logical + e->len - 1;
	}
	return 0;
}

static void check_inode_blocks(struct checker *c, struct inode *inode)
{
	struct extent_walk_ops ops = { node_cb, ext_cb, c };
	c->cur_ino = inode->ino;
	c->cur_clonable = !(inode->d.flags & ORDFS_INODE_FAST_SYMLINK) &&
			  le_get16(inode->d.data + 6) == 0;
	c->cur_blocks = 0;
	c->cur_has_blocks = false;
	c->cur_last_lblk = 0;

	uint64_t xb = inode->d.xattr_block;
	const struct ordfs_super *sb = &c->fs->sb;
	bool xattr_usable = xb != 0;
	bool xb_range = xb < sb->data_start || xb >= sb->block_count - 1 ||
			ordfs_is_group_bitmap_block(sb, xb);
	if (xb && (xb_range || block_claimed(c, xb))) {
		/* Only the attributes are lost, not the file. */
		bool range = xb_range;
		problem(c, range ? CHK_BLOCK_RANGE : CHK_BLOCK_DUP,
			"inode %u: xattr block %llu %s", inode->ino, (unsigned long long)xb,
			range ? "outside the data area" : "is claimed twice");
		struct check_inode_fix *fix = fx_inode(c, inode->ino);
		if (fix)
			fix->drop_xattr = true;
		xattr_usable = false;
	}
	if (xattr_usable) {
		claim_blocks(c, xb, 1, false);
		const char *acl_why;
		if (xattr_verify_acl(c->fs, inode, &acl_why) != 0) {
			if (acl_why) /* the block is sound but an ACL in it is not */
				problem(c, CHK_XATTR, "inode %u: xattr block %llu: %s", inode->ino,
					(unsigned long long)inode->d.xattr_block, acl_why);
			else
				problem(c, CHK_XATTR, "inode %u: bad xattr block %llu", inode->ino,
					(unsigned long long)inode->d.xattr_block);
			struct check_inode_fix *fix = fx_inode(c, inode->ino);
			if (fix)
				fix->drop_xattr = true;
		}
	}
	int err = 0;
	if (!(inode->d.flags & ORDFS_INODE_FAST_SYMLINK))
		err = extent_walk(c->fs, inode, &ops);
	if (err) {
		problem(c, CHK_EXTENT_TREE, "inode %u: extent tree unreadable (%d)", inode->ino, err);
		fx_empty_inode(c, inode->ino);
		return;
	}
	if (c->cur_blocks != inode->d.blocks) {
		problem(c, CHK_BLOCK_COUNT, "inode %u: blocks count %llu, found %llu", inode->ino,
			(unsigned long long)inode->d.blocks, (unsigned long long)c->cur_blocks);
		struct check_inode_fix *fix = fx_inode(c, inode->ino);
		if (fix) {
			fix->fix_blocks = true;
			fix->blocks = c->cur_blocks;
		}
	}
	uint64_t bs = c->fs->block_size;
	/* A directory's size is where its blocks end: the directory code
	 * reads only the blocks its size covers, so a wrong one hides entries
	 * (or shows holes) to the daemon and to pass 3 alike. */
	uint64_t dir_end = c->cur_has_blocks ? (c->cur_last_lblk + 1) * bs : 0;
	if (S_ISDIR(inode->d.mode) && inode->d.size != dir_end) {
		problem(c, CHK_SIZE, "dir %u: size %llu, its blocks end at %llu", inode->ino,
			(unsigned long long)inode->d.size, (unsigned long long)dir_end);
		struct check_size_fix fix = { inode->ino, dir_end };
		FX_PUSH(c, c->fx->dir_sizes, fix);
	}
	/* A long symlink, as readlink reads it (the same lookups): every
	 * block of its target mapped, else it is cleared (target lost). */
	if (S_ISLNK(inode->d.mode) && !(inode->d.flags & ORDFS_INODE_FAST_SYMLINK) &&
	    ordfs_symlink_check(&inode->d, NULL) == 0) {
		for (uint64_t lblk = 0; lblk < (inode->d.size + bs - 1) / bs; lblk++) {
			struct ordfs_extent e;
			if (extent_lookup(c->fs, inode, lblk, &e) != 1) {
				problem(c, CHK_SYMLINK, "inode %u: symlink target block %llu not "
					"mapped (size %llu), target lost", inode->ino,
					(unsigned long long)lblk, (unsigned long long)inode->d.size);
				FX_PUSH(c, c->fx->clear_inodes, inode->ino);
				break;
			}
		}
	}
	/* An inode on the orphan list may be half-way through a truncate that
	 * the next mount finishes: blocks past its size are expected then. */
	if (S_ISREG(inode->d.mode) && c->cur_has_blocks &&
	    !(inode->d.flags & ORDFS_INODE_ORPHAN) &&
	    c->cur_last_lblk >= (inode->d.size + bs - 1) / bs) {
		problem(c, CHK_SIZE, "inode %u: data mapped past its size %llu", inode->ino,
			(unsigned long long)inode->d.size);
		struct check_inode_fix *fix = fx_inode(c, inode->ino);
		if (fix) {
			fix->fix_size = true;
			fix->size = (c->cur_last_lblk + 1) * bs;
		}
	}
}

void pass_blocks(struct checker *c)
{
	/* The group bitmap blocks (format.h) are metadata in use that no
	 * inode owns: found before any inode is walked (pass 5 then compares
	 * their groups a word at a time, as any other).  An extent or tree
	 * block on one never gets here: the extent code refuses it (the tree
	 * is unreadable); an xattr block on one is out of range. */
	const struct ordfs_super *sb = &c->fs->sb;
	uint32_t per = ordfs_bits_per_bitmap_block(ordfs_block_size(sb));
	for (uint64_t g = sb->block_bitmap_blocks; g < ordfs_block_groups(sb); g++) {
		uint64_t b = ordfs_block_bitmap_block(sb, g);
		ORDFS_ASSERT(b == g * per && ordfs_is_group_bitmap_block(sb, b));
		if (!test_and_set_block(c, b))
			c->blocks_found++;
	}
	for (uint32_t ino = 1; ino <= c->fs->sb.inode_count; ino++) {
		if (!info_get(c, ino)->in_use)
			continue;
		struct inode *inode;
		if (inode_get(c->fs, ino, &inode) != 0)
			continue;
		check_inode_blocks(c, inode);
		inode_put(c->fs, inode);
	}
}
