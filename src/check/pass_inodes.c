/*
 * pass_inodes.c - pass 1: every inode slot decodes (or is free), and in
 * use <=> marked in the inode bitmap.
 * Hands on: info[] (mode, links, parent, orphan flag) for every inode in
 * use, the counts of inodes, files and directories.
 * Also the file flags (inode/iflags.h): bits no ordfs defines, flags the
 * inode's type may not carry (ext4_mask_flags: D on a regular file,
 * anything but d and A on a symlink or device node; j on a directory is
 * fine, it is inherited), and flags on an image whose superblock lacks
 * the FILE_FLAGS feature.
 * Symlinks by the daemon's readlink rule (ordfs_symlink_check).  A slot
 * whose only fault is reserved bytes not zero is kept (rewritten without
 * them), not cleared.
 * Findings: slots failing their checksum (cleared), bitmap disagreement,
 * unknown flag bits (the slot rewritten without them), flags the type may
 * not carry (cleared), the missing feature (set), a symlink's size (set
 * from its fast target) or the symlink (cleared, when its target is lost).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"
#include "../cache/bcache.h"
#include "inode/iflags.h"

/* What pass 1 knows about the inode table as it walks it in order: which
 * table blocks are holes (never written: all zeros). */
struct walk {
	uint64_t hole_end;   /* byte offset: [.., hole_end) is a hole */
	uint64_t known_to;   /* byte offset up to which hole_end is known */
	uint64_t ahead_to;   /* block: read ahead up to here */
	uint64_t block;      /* the table block last asked about, +1 (0: none) */
	bool block_in_hole;  /* and the answer, for its other slots */
};

/* Is inode-table block `blockno` all zeros without reading it: a hole of
 * the image (the device says so) that the cache holds no newer copy of?
 * The device is asked once per hole, and once per 256 blocks of data; the
 * cache once per block. */
static bool block_in_hole(struct checker *c, struct walk *w, uint64_t blockno)
{
	struct ordfs *fs = c->fs;
	uint32_t bs = ordfs_block_size(&fs->sb);
	uint64_t off = blockno * bs;
	if (off >= w->known_to) {
		uint64_t next = blockdev_next_data(fs->bd, off);
		if (next > off) {
			w->hole_end = next / bs * bs;
			w->known_to = w->hole_end > off ? w->hole_end : off + bs;
		} else {
			w->hole_end = 0;
			w->known_to = off + 256ull * bs;
		}
	}
	if (w->block != blockno + 1) {
		w->block = blockno + 1;
		w->block_in_hole = off + bs <= w->hole_end && !bcache_contains(fs->cache, blockno);
	}
	return w->block_in_hole;
}

/* Before inode-table block `blockno`, which holds data, the blocks up to
 * the end of that stretch of data (at most 256, never past the table) are
 * read ahead in one request: pass 1 reads the table in order, and over
 * NBD one block per request is one round trip each. */
static void read_ahead(struct checker *c, struct walk *w, uint64_t blockno)
{
	struct ordfs *fs = c->fs;
	uint32_t bs = ordfs_block_size(&fs->sb);
	if (blockno < w->ahead_to)
		return;
	uint64_t table_end = fs->sb.inode_table_start + fs->sb.inode_table_blocks;
	uint64_t data_end = w->known_to / bs;
	uint64_t end = data_end < table_end ? data_end : table_end;
	if (end > blockno + BCACHE_READAHEAD_MAX)
		end = blockno + BCACHE_READAHEAD_MAX;
	if (end > blockno + 1)
		bcache_readahead(fs->cache, blockno, (uint32_t)(end - blockno));
	w->ahead_to = end > blockno ? end : blockno + 1;
}

static const char *type_name(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	default: return "special file";
	}
}

/* The file flags of inode ino (d decoded, unknown: bits no ordfs
 * defines).  *feature_told: the missing feature was reported already. */
static void check_file_flags(struct checker *c, uint32_t ino, const struct ordfs_inode *d,
			     uint32_t unknown, bool *feature_told)
{
	if (unknown) {
		problem(c, CHK_FILE_FLAGS, "inode %u has file flags no ordfs defines (0x%x)", ino,
			unknown);
		FX_PUSH(c, c->fx->strip_flags, ino);
	}
	uint32_t wrong = d->attr_flags & ~iflags_allowed(d->mode);
	if (wrong) {
		char letters[IFLAGS_LETTERS_LEN];
		iflags_letters(wrong, letters);
		problem(c, CHK_FILE_FLAGS, "inode %u (a %s) has file flags a %s cannot have: %s",
			ino, type_name(d->mode), type_name(d->mode), letters);
		struct check_inode_fix *fix = fx_inode(c, ino);
		if (fix) {
			fix->fix_flags = true;
			fix->attr_flags = d->attr_flags & ~wrong;
		}
	}
	bool has = d->attr_flags & ~wrong; /* what stays once repaired */
	if (has && !(c->fs->sb.feature_ro_compat & ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS) &&
	    !*feature_told) {
		problem(c, CHK_FILE_FLAGS, "inode %u has file flags, but the superblock lacks "
			"the file_flags feature", ino);
		*feature_told = true;
		if (c->fx)
			c->fx->file_flags_feature = true;
	}
}

/* A symlink, by the daemon's own rule (ordfs_symlink_check): a fast one
 * whose target is whole in data[] (NUL-padded, 1 .. 127 bytes) gets that
 * length as its size; any other is cleared (its names go next round). */
static void check_symlink(struct checker *c, uint32_t ino, const struct ordfs_inode *d)
{
	const char *why;
	if (ordfs_symlink_check(d, &why) == 0)
		return;
	size_t n = strnlen((const char *)d->data, ORDFS_FAST_SYMLINK_MAX + 1);
	bool fixable = (d->flags & ORDFS_INODE_FAST_SYMLINK) && n >= 1 &&
		       n <= ORDFS_FAST_SYMLINK_MAX;
	problem(c, CHK_SYMLINK, "inode %u: %s (size %llu)%s", ino, why,
		(unsigned long long)d->size, fixable ? "" : ", target lost");
	if (fixable) {
		struct check_inode_fix *fix = fx_inode(c, ino);
		if (fix) {
			fix->fix_size = true;
			fix->size = n;
		}
	} else {
		FX_PUSH(c, c->fx->clear_inodes, ino);
	}
}

/* An inode the decoder refused: is its only fault reserved bytes that are
 * not zero (the checksum verifies)?  Then *d gets it decoded without them
 * (the repair rewrites the slot so, keeping the inode). */
static bool only_reserved_bad(struct checker *c, uint32_t ino, uint64_t blockno,
			      uint32_t slot_off, struct ordfs_inode *d, uint32_t *unknown)
{
	struct buf *b;
	uint8_t raw[ORDFS_INODE_SIZE];
	if (bcache_read(c->fs->cache, blockno, &b) != 0)
		return false;
	memcpy(raw, b->data + slot_off, sizeof(raw));
	bcache_put(c->fs->cache, b);
	return ordfs_inode_clear_reserved(raw, ino, c->fs->csum_seed) == 1 &&
	       ordfs_inode_decode_check(raw, ino, c->fs->csum_seed, d, unknown) == 0 &&
	       d->mode != 0;
}

void pass_inodes(struct checker *c)
{
	struct ordfs *fs = c->fs;
	struct walk w = { 0 };
	struct bitmap_cursor bitmap = { .start = fs->sb.inode_bitmap_start,
					.blocks = fs->sb.inode_bitmap_blocks };
	bool feature_told = false;
	for (uint32_t ino = 1; ino <= fs->sb.inode_count; ino++) {
		if ((ino & 4095) == 0)
			progress(c, 1, ino, fs->sb.inode_count);
		struct ordfs_inode d;
		/* Never-written parts of a big inode table are not read: their
		 * slots are zeros, free (a 16 TiB image has 256 GiB of them). */
		uint64_t blockno;
		uint32_t slot_off;
		ordfs_inode_location(&fs->sb, ino, &blockno, &slot_off);
		bool hole = block_in_hole(c, &w, blockno);
		if (!hole)
			read_ahead(c, &w, blockno);
		uint32_t unknown_flags = 0;
		int err = hole ? -ENOENT : inode_read_for_check(fs, ino, &d, &unknown_flags);
		bool marked = bitmap_cursor_bit(c, &bitmap, ino - 1);
		if (err == -EUCLEAN && ino != 1 &&
		    only_reserved_bad(c, ino, blockno, slot_off, &d, &unknown_flags)) {
			problem(c, CHK_INODE_CORRUPT, "inode %u: reserved bytes not zero", ino);
			FX_PUSH(c, c->fx->strip_flags, ino); /* rewritten without them */
			err = 0;
		}
		if (err == -EUCLEAN) {
			problem(c, CHK_INODE_CORRUPT, "inode %u is corrupt", ino);
			/* cleared (reserved inode 1's slot is all zeros anyway);
			 * a root the mount could not read is stage R's */
			if (ino == ORDFS_ROOT_INO)
				fx_unfixable(c);
			else
				FX_PUSH(c, c->fx->clear_inodes, ino);
			continue;
		}
		bool used = err == 0;
		if (ino == 1) {
			if (c->fx)
				c->fx->inodes_found[0] |= 1u; /* reserved: always in use */
			if (!marked) {
				problem(c, CHK_INODE_BITMAP, "reserved inode 1 not marked in use");
				if (c->fx)
					c->fx->bitmaps_wrong = true; /* stage D sets it */
			}
			continue;
		}
		if (used != marked) {
			problem(c, CHK_INODE_BITMAP, "inode %u is %s but the bitmap says %s", ino,
				used ? "in use" : "free", marked ? "in use" : "free");
			if (c->fx)
				c->fx->bitmaps_wrong = true;
		}
		if (!used)
			continue;
		check_file_flags(c, ino, &d, unknown_flags, &feature_told);
		if (S_ISLNK(d.mode))
			check_symlink(c, ino, &d);
		struct inode_info *ii = info_mut(c, ino);
		ii->in_use = true;
		if (c->fx)
			c->fx->inodes_found[(ino - 1) / 8] |= (uint8_t)(1u << ((ino - 1) % 8));
		ii->mode = d.mode;
		ii->links = d.links;
		ii->parent = d.parent;
		ii->orphan = d.flags & ORDFS_INODE_ORPHAN;
		c->res->inodes_used++;
		if (S_ISDIR(d.mode))
			c->res->dirs++;
		else if (S_ISREG(d.mode))
			c->res->files++;
	}
	bitmap_cursor_done(c, &bitmap);
}
