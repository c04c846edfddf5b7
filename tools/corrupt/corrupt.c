/*
 * corrupt.c - see corrupt.h.
 *
 * Targets are collected on a read-only mount (inodes in use, directory
 * blocks, extent-tree blocks, file data blocks) or from the geometry
 * (bitmaps, inode table, superblocks) or the journal superblock (log
 * blocks in use); one is picked with a splitmix64 stream seeded by the
 * caller, and its bytes are changed with raw device writes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "corrupt.h"
#include "format/endian_le.h"
#include "format/format.h"
#include "fs.h"
#include "inode/inode.h"
#include "ops.h"
#include "blockdev/blockdev.h"
#include "extent/extent.h"
#include "journal/journal.h"
#include "dir/dir.h"

static const char *const kind_names[CORRUPT_KINDS] = {
	"super-csum",   "inode-bits",    "inode-csum",   "inode-links",  "dir-zero",
	"dir-bits",     "dir-csum",      "extent-csum",  "bitmap-free",  "bitmap-bits",
	"journal-bits", "journal-csum",  "any-metadata", "file-size",    "block-count",
	"extent-range", "extent-dup",    "dir-parent",   "orphan-head",  "xattr-bits",
	"ibitmap-free", "xattr-range",   "dir-hardlink", "super-torn",   "flags-unknown",
	"flags-type",   "ibitmap-free-all", "bitmap-free-dir",
};

const char *corrupt_kind_name(enum corrupt_kind kind)
{
	return (unsigned)kind < CORRUPT_KINDS ? kind_names[kind] : NULL;
}

int corrupt_kind_parse(const char *name)
{
	for (int k = 0; k < CORRUPT_KINDS; k++)
		if (strcmp(name, kind_names[k]) == 0)
			return k;
	return -1;
}

static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t *state, uint64_t n)
{
	return n ? next_random(state) % n : 0;
}

/* ---- targets ------------------------------------------------------------ */

struct targets {
	uint64_t *v;
	size_t n, cap;
};

static int push(struct targets *t, uint64_t x)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uint64_t *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = x;
	return 0;
}

struct found {
	struct targets inodes, dir_blocks, extent_blocks, data_blocks;
	struct targets xattr_inodes; /* inodes with an xattr block */
	struct targets files;   /* regular files whose root holds extents */
	struct targets dirs;    /* directories other than the root */
	struct targets xattrs;  /* xattr blocks */
	struct targets subdir_blocks; /* directory blocks but the root's */
	bool in_dir, in_file, in_root;
};

static int node_cb(void *ctx, uint64_t blockno, unsigned depth, int bad)
{
	struct found *f = ctx;
	(void)depth;
	return bad ? 0 : push(&f->extent_blocks, blockno);
}

static int ext_cb(void *ctx, const struct ordfs_extent *e)
{
	struct found *f = ctx;
	for (uint32_t i = 0; i < e->len && i < 64; i++) {
		int err = 0;
		if (f->in_dir)
			err = push(&f->dir_blocks, e->physical + i);
		if (!err && f->in_dir && !f->in_root)
			err = push(&f->subdir_blocks, e->physical + i);
		else if (f->in_file && !(e->flags & ORDFS_EXT_UNWRITTEN))
			err = push(&f->data_blocks, e->physical + i);
		if (err)
			return err;
	}
	return 0;
}

/* Walks a read-only mount of the image for inodes and blocks. */
static int find_targets(struct blockdev *bd, struct found *f)
{
	struct ordfs_options opts;
	struct ordfs *fs;
	const char *why;
	ordfs_options_default(&opts);
	opts.readonly = true;
	int err = ordfs_mount(bd, &opts, &fs, &why);
	if (err)
		return err;
	for (uint32_t ino = 2; ino <= fs->sb.inode_count && !err; ino++) {
		struct inode *inode;
		if (inode_get(fs, ino, &inode) != 0)
			continue;
		err = push(&f->inodes, ino);
		f->in_dir = S_ISDIR(inode->d.mode);
		f->in_file = S_ISREG(inode->d.mode);
		f->in_root = ino == ORDFS_ROOT_INO;
		if (!err && f->in_file && le_get16(inode->d.data + 6) == 0 &&
		    le_get16(inode->d.data + 2) > 0)
			err = push(&f->files, ino);
		if (!err && f->in_dir && ino != ORDFS_ROOT_INO)
			err = push(&f->dirs, ino);
		if (!err && inode->d.xattr_block)
			err = push(&f->xattrs, inode->d.xattr_block);
		if (!err && inode->d.xattr_block)
			err = push(&f->xattr_inodes, ino);
		struct extent_walk_ops ops = { node_cb, ext_cb, f };
		if (!err && !(inode->d.flags & ORDFS_INODE_FAST_SYMLINK))
			err = extent_walk(fs, inode, &ops);
		inode_put(fs, inode);
	}
	ordfs_unmount(fs);
	return err;
}

static void found_free(struct found *f)
{
	free(f->inodes.v);
	free(f->dir_blocks.v);
	free(f->extent_blocks.v);
	free(f->data_blocks.v);
	free(f->files.v);
	free(f->dirs.v);
	free(f->xattrs.v);
	free(f->xattr_inodes.v);
	free(f->subdir_blocks.v);
}

/* A read-write mount that commits only when asked (the tool's own
 * changes: a populated tree, a second directory name). */
static int mount_rw(struct blockdev *bd, struct ordfs **fs)
{
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	const char *why;
	return ordfs_mount(bd, &opts, fs, &why);
}

/* ---- the damage --------------------------------------------------------- */

struct job {
	struct blockdev *bd;
	struct ordfs_super sb;
	uint32_t bs;
	uint64_t rng;
	uint64_t target; /* bitmap-free: the block whose bit to clear */
	enum corrupt_kind kind;
	char *what;
	unsigned what_len;
};

static void flip_bits(struct job *j, uint8_t *buf, size_t len)
{
	unsigned n = 1 + (unsigned)below(&j->rng, 8);
	for (unsigned i = 0; i < n; i++) {
		uint64_t bit = below(&j->rng, (uint64_t)len * 8);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

/* Random bytes at random places in [from, to). */
static void scribble(struct job *j, uint8_t *buf, size_t from, size_t to)
{
	unsigned n = 1 + (unsigned)below(&j->rng, 4);
	for (unsigned i = 0; i < n; i++)
		buf[from + below(&j->rng, to - from)] = (uint8_t)next_random(&j->rng);
}

static int rewrite_block(struct job *j, uint64_t blockno,
			 void (*change)(struct job *, uint8_t *, uint64_t))
{
	uint8_t *blk = malloc(j->bs);
	if (!blk)
		return -ENOMEM;
	int err = blockdev_read(j->bd, blk, j->bs, blockno * j->bs);
	if (!err) {
		change(j, blk, blockno);
		err = blockdev_write(j->bd, blk, j->bs, blockno * j->bs);
	}
	if (!err)
		err = blockdev_flush(j->bd);
	free(blk);
	return err;
}

static void change_bits(struct job *j, uint8_t *blk, uint64_t blockno)
{
	(void)blockno;
	flip_bits(j, blk, j->bs);
}

static void change_zero(struct job *j, uint8_t *blk, uint64_t blockno)
{
	(void)blockno;
	memset(blk, 0, j->bs);
}

/* Past the common header, then a valid checksum again. */
static void change_keep_csum(struct job *j, uint8_t *blk, uint64_t blockno)
{
	(void)blockno;
	scribble(j, blk, 24, j->bs - 4);
	ordfs_block_csum_set(blk, j->bs, j->sb.csum_seed);
}

static void change_journal_csum(struct job *j, uint8_t *blk, uint64_t blockno)
{
	(void)blockno;
	bool journal_block = le_get32(blk) == ORDFS_JOURNAL_MAGIC;
	scribble(j, blk, journal_block ? 8 : 0, j->bs - 4);
	if (journal_block)
		ordfs_jblock_csum_set(blk, j->bs, j->sb.csum_seed);
}

static int pick_block(struct job *j, const struct targets *t, const char *name,
		      void (*change)(struct job *, uint8_t *, uint64_t))
{
	if (t->n == 0)
		return -ENOENT;
	uint64_t b = t->v[below(&j->rng, t->n)];
	snprintf(j->what, j->what_len, "%s: block %llu", name, (unsigned long long)b);
	return rewrite_block(j, b, change);
}

/* Reads the block holding a random inode of inodes, lets change() alter
 * its 256-byte slot, writes it back.  change returns 0 or a negative
 * errno (nothing is written then). */
static int change_inode_slot(struct job *j, const struct targets *inodes, enum corrupt_kind kind,
			     int (*change)(struct job *, uint8_t *raw, uint32_t ino,
					   enum corrupt_kind kind, const struct found *f),
			     const struct found *f)
{
	if (inodes->n == 0)
		return -ENOENT;
	uint32_t ino = (uint32_t)inodes->v[below(&j->rng, inodes->n)];
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&j->sb, ino, &blk, &off);
	uint8_t *b = malloc(j->bs);
	if (!b)
		return -ENOMEM;
	int err = blockdev_read(j->bd, b, j->bs, blk * j->bs);
	if (!err)
		err = change(j, b + off, ino, kind, f);
	if (!err) {
		snprintf(j->what, j->what_len, "%s: inode %u", corrupt_kind_name(kind), ino);
		err = blockdev_write(j->bd, b, j->bs, blk * j->bs);
	}
	if (!err)
		err = blockdev_flush(j->bd);
	free(b);
	return err;
}

/* Raw damage: bits flipped, or bytes scribbled / the link count changed
 * with the checksum set again. */
static int change_raw(struct job *j, uint8_t *raw, uint32_t ino, enum corrupt_kind kind,
		      const struct found *f)
{
	(void)f;
	if (kind == CORRUPT_INODE_BITS) {
		flip_bits(j, raw, ORDFS_INODE_SIZE);
		return 0;
	}
	if (kind == CORRUPT_INODE_CSUM) {
		scribble(j, raw, 0, ORDFS_INODE_SIZE - 4);
	} else if (kind == CORRUPT_FLAGS_UNKNOWN) {
		/* Linux flags ordfs does not keep (compression, extents, ...), or
		 * bits nobody defines. */
		static const uint32_t unknown[] = { 0x4, 0x80000, 0x800, 0x100000, 0x80000000u };
		uint32_t bits = unknown[below(&j->rng, sizeof(unknown) / sizeof(unknown[0]))];
		le_put32(raw + 108, le_get32(raw + 108) | bits);
	} else {
		static const uint32_t counts[] = { 0, 1, 2, 3, 65000, 65535, 0xffffffffu };
		uint32_t links = counts[below(&j->rng, sizeof(counts) / sizeof(counts[0]))];
		if (links == le_get32(raw + 12))
			links++;
		le_put32(raw + 12, links);
	}
	ordfs_inode_csum_set(raw, ino, j->sb.csum_seed);
	return 0;
}

/* A field set through decode/encode (the checksum stays valid). */
static int change_field(struct job *j, uint8_t *raw, uint32_t ino, enum corrupt_kind kind,
			const struct found *f)
{
	struct ordfs_inode d;
	int err = ordfs_inode_decode(raw, ino, j->sb.csum_seed, &d);
	if (err)
		return err;
	uint8_t *rec = d.data + ORDFS_EXTENT_NODE_HDR; /* first root record */
	switch (kind) {
	case CORRUPT_FILE_SIZE:
		d.size = d.size > j->bs ? d.size / 2 / j->bs * j->bs : 0;
		break;
	case CORRUPT_BLOCK_COUNT:
		d.blocks += 1 + below(&j->rng, 100);
		break;
	case CORRUPT_EXTENT_RANGE:
		le_put64(rec + 8, j->sb.block_count + 10 + below(&j->rng, 1000));
		break;
	case CORRUPT_EXTENT_DUP: {
		/* Onto a block of another file: the first data block found that
		 * this inode does not map. */
		uint64_t mine = le_get64(rec + 8), len = le_get32(rec + 16);
		uint64_t other = 0;
		for (size_t i = 0; i < f->data_blocks.n && !other; i++) {
			uint64_t b2 = f->data_blocks.v[i];
			if (b2 < mine || b2 >= mine + len)
				other = b2;
		}
		if (!other)
			return -ENOENT;
		le_put64(rec + 8, other);
		le_put32(rec + 16, 1);
		break;
	}
	case CORRUPT_XATTR_RANGE:
		d.xattr_block = j->sb.block_count + 1 + below(&j->rng, 1000);
		break;
	case CORRUPT_FLAGS_TYPE:
		d.attr_flags |= ORDFS_FL_DIRSYNC | ORDFS_FL_NODUMP;
		break;
	default: /* CORRUPT_DIR_PARENT */
		d.parent = d.parent == ORDFS_ROOT_INO ? ino : ORDFS_ROOT_INO;
		break;
	}
	ordfs_inode_encode(&d, ino, j->sb.csum_seed, raw);
	return 0;
}

/* What a torn write of a superblock can leave: one of its two sector
 * copies garbage (the seed picks the superblock and the copy). */
static int damage_super_torn(struct job *j)
{
	bool journal = next_random(&j->rng) & 1;
	unsigned copy = (unsigned)(next_random(&j->rng) & 1);
	uint64_t off = (journal ? j->sb.journal_start * j->bs : 0) + copy * ORDFS_SB_COPY_SIZE;
	uint8_t sector[ORDFS_SB_COPY_SIZE];
	for (size_t i = 0; i < sizeof(sector); i++)
		sector[i] = (uint8_t)next_random(&j->rng);
	snprintf(j->what, j->what_len, "super-torn: %s superblock, copy %u",
		 journal ? "journal" : "filesystem", copy);
	int err = blockdev_write(j->bd, sector, sizeof(sector), off);
	return err ? err : blockdev_flush(j->bd);
}

/* A clean image whose orphan list names an inode. */
static int damage_orphan_head(struct job *j, const struct targets *inodes)
{
	if (inodes->n == 0)
		return -ENOENT;
	uint8_t raw[ORDFS_SB_SIZE];
	struct ordfs_super sb;
	const char *why;
	int err = blockdev_read(j->bd, raw, sizeof(raw), 0);
	if (!err)
		err = ordfs_super_decode(raw, &sb, &why);
	if (err)
		return err;
	sb.orphan_head = (uint32_t)inodes->v[below(&j->rng, inodes->n)];
	ordfs_super_encode(&sb, raw);
	snprintf(j->what, j->what_len, "orphan-head: inode %u", sb.orphan_head);
	err = blockdev_write(j->bd, raw, sizeof(raw), 0);
	return err ? err : blockdev_flush(j->bd);
}

/* A second name, in the root, for a directory that has one: the kind of
 * damage only a buggy filesystem makes, so it is made through the
 * filesystem's own directory code in a handle. */
static int damage_dir_hardlink(struct job *j, struct blockdev *bd)
{
	struct ordfs *fs;
	int err = mount_rw(bd, &fs);
	if (err)
		return err;
	struct inode *root = NULL, *dir = NULL;
	err = inode_get(fs, ORDFS_ROOT_INO, &root);
	struct targets dirs = { 0 };
	for (uint32_t ino = ORDFS_ROOT_INO + 1; ino <= fs->sb.inode_count && !err; ino++) {
		if (inode_get(fs, ino, &dir) != 0)
			continue;
		if (S_ISDIR(dir->d.mode))
			err = push(&dirs, ino);
		inode_put(fs, dir);
	}
	uint32_t target = dirs.n ? (uint32_t)dirs.v[below(&j->rng, dirs.n)] : 0;
	free(dirs.v);
	if (!err && !target)
		err = -ENOENT;
	if (!err)
		err = inode_get(fs, target, &dir);
	if (!err) {
		struct handle *h;
		ordfs_rwlock_wrlock(&root->lock); /* lock order: inode, then handle */
		err = journal_start(fs->journal, 16, &h);
		if (!err) {
			err = dir_add(fs, h, root, "second-name", 11, target, DT_DIR);
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
		ordfs_rwlock_unlock(&root->lock);
		inode_put(fs, dir);
		snprintf(j->what, j->what_len, "dir-hardlink: directory %u also named /second-name",
			 target);
	}
	if (root)
		inode_put(fs, root);
	int uerr = ordfs_unmount(fs);
	return err ? err : uerr;
}

/* One superblock field set to a random value, checksum recomputed. */
static int damage_super(struct job *j)
{
	uint8_t raw[ORDFS_SB_SIZE];
	int err = blockdev_read(j->bd, raw, sizeof(raw), 0);
	if (err)
		return err;
	struct ordfs_super sb;
	const char *why;
	err = ordfs_super_decode(raw, &sb, &why);
	if (err)
		return err;
	uint64_t v = next_random(&j->rng);
	static const char *const fields[] = {
		"block_count", "inode_count", "journal_start", "journal_blocks",
		"inode_table_start", "data_start", "log_block_size", "free_blocks",
		"orphan_head", "block_bitmap_start",
	};
	unsigned f = (unsigned)below(&j->rng, sizeof(fields) / sizeof(fields[0]));
	switch (f) {
	case 0: sb.block_count = v % (sb.block_count * 2 + 1); break;
	case 1: sb.inode_count = (uint32_t)v; break;
	case 2: sb.journal_start = v % 64; break;
	case 3: sb.journal_blocks = (uint32_t)(v % (sb.journal_blocks * 2 + 1)); break;
	case 4: sb.inode_table_start = v % sb.block_count; break;
	case 5: sb.data_start = v % (sb.block_count + 8); break;
	case 6: sb.log_block_size = (uint32_t)(v % 20); break;
	case 7: sb.free_blocks = v; break;
	case 8: sb.orphan_head = (uint32_t)(v % (sb.inode_count + 8)); break;
	default: sb.block_bitmap_start = v % sb.block_count; break;
	}
	ordfs_super_encode(&sb, raw);
	snprintf(j->what, j->what_len, "super-csum: field %s", fields[f]);
	err = blockdev_write(j->bd, raw, sizeof(raw), 0);
	if (!err)
		err = blockdev_flush(j->bd);
	return err;
}

/* Clears bit j->target (counted from the start of its bitmap area) in a
 * bitmap block, checksum recomputed. */
static void clear_bit(struct job *j, uint8_t *blk, uint64_t bitmap_block)
{
	(void)bitmap_block;
	uint32_t bit = (uint32_t)(j->target % ordfs_bits_per_bitmap_block(j->bs));
	blk[ORDFS_BLOCK_HDR_SIZE + bit / 8] &= (uint8_t)~(1u << (bit % 8));
	ordfs_block_csum_set(blk, j->bs, j->sb.csum_seed);
}

/* Something in use marked free: a data block in the block bitmap, or
 * (inodes) an inode in the inode bitmap, where bit i is inode i + 1. */
static int damage_mark_free(struct job *j, const struct targets *t, bool inodes)
{
	if (t->n == 0)
		return -ENOENT;
	uint64_t item = t->v[below(&j->rng, t->n)];
	uint64_t bit = inodes ? item - 1 : item;
	uint64_t index = bit / ordfs_bits_per_bitmap_block(j->bs);
	snprintf(j->what, j->what_len, "%s: %s %llu marked free", corrupt_kind_name(j->kind),
		 inodes ? "inode" : "block",
		 (unsigned long long)item);
	j->target = bit;
	return rewrite_block(j, inodes ? j->sb.inode_bitmap_start + index
				      : ordfs_block_bitmap_block(&j->sb, index),
			     clear_bit);
}

/* Clears the bits of every inode in t past the root (bit i is inode
 * i + 1) in the inode bitmap block given, checksum recomputed. */
static void clear_inode_bits(struct job *j, uint8_t *blk, uint64_t bitmap_block,
			     const struct targets *t)
{
	uint64_t per = ordfs_bits_per_bitmap_block(j->bs);
	uint64_t index = bitmap_block - j->sb.inode_bitmap_start;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t bit = t->v[i] - 1;
		if (t->v[i] <= ORDFS_ROOT_INO || bit / per != index)
			continue;
		uint32_t b = (uint32_t)(bit % per);
		blk[ORDFS_BLOCK_HDR_SIZE + b / 8] &= (uint8_t)~(1u << (b % 8));
	}
	ordfs_block_csum_set(blk, j->bs, j->sb.csum_seed);
}

/* Every inode in use past the root marked free (no randomness: the seed
 * does not matter), one rewrite per inode bitmap block. */
static int damage_mark_all_inodes_free(struct job *j, const struct targets *t)
{
	uint64_t per = ordfs_bits_per_bitmap_block(j->bs);
	uint64_t blocks = j->sb.inode_bitmap_blocks;
	size_t n = 0;
	int err = 0;
	for (size_t i = 0; i < t->n; i++)
		n += t->v[i] > ORDFS_ROOT_INO;
	if (n == 0)
		return -ENOENT;
	uint8_t *blk = malloc(j->bs);
	if (!blk)
		return -ENOMEM;
	for (uint64_t b = 0; b < blocks && b * per < j->sb.inode_count && !err; b++) {
		uint64_t blockno = j->sb.inode_bitmap_start + b;
		err = blockdev_read(j->bd, blk, j->bs, blockno * j->bs);
		if (!err) {
			clear_inode_bits(j, blk, blockno, t);
			err = blockdev_write(j->bd, blk, j->bs, blockno * j->bs);
		}
	}
	if (!err)
		err = blockdev_flush(j->bd);
	free(blk);
	snprintf(j->what, j->what_len, "ibitmap-free-all: %zu inodes marked free", n);
	return err;
}

/* Log blocks of the transactions in the journal (empty log: none). */
static int journal_targets(struct job *j, struct targets *t)
{
	uint8_t *blk = malloc(j->bs);
	if (!blk)
		return -ENOMEM;
	int err = blockdev_read(j->bd, blk, j->bs, j->sb.journal_start * j->bs);
	struct ordfs_journal_super js;
	if (!err)
		err = ordfs_journal_super_decode(blk, j->bs, j->sb.csum_seed, &js, NULL);
	if (!err && js.start != 0) {
		/* From the tail on, every block up to the first that is not a
		 * journal block of a live sequence or a copy after one. */
		uint32_t pos = js.start;
		for (uint32_t n = 0; n < js.total_blocks - js.first && !err; n++) {
			err = blockdev_read(j->bd, blk, j->bs, (j->sb.journal_start + pos) * j->bs);
			if (err)
				break;
			bool jb = le_get32(blk) == ORDFS_JOURNAL_MAGIC;
			if (jb && le_get64(blk + 8) < js.sequence)
				break;
			err = push(t, j->sb.journal_start + pos);
			pos = pos + 1 < js.total_blocks ? pos + 1 : js.first;
			if (t->n > 4096)
				break;
		}
	}
	free(blk);
	return err;
}

/* Every metadata block: superblock, journal superblock, bitmaps, inode
 * table, directory and extent-tree blocks. */
static int metadata_targets(struct job *j, const struct found *f, struct targets *t)
{
	int err = push(t, 0);
	if (!err)
		err = push(t, j->sb.journal_start);
	for (uint64_t b = j->sb.block_bitmap_start; b < j->sb.inode_table_start && !err; b++)
		err = push(t, b); /* block and inode bitmaps */
	for (uint64_t b = j->sb.inode_table_start; b < j->sb.data_start && !err; b++)
		err = push(t, b);
	for (size_t i = 0; i < f->dir_blocks.n && !err; i++)
		err = push(t, f->dir_blocks.v[i]);
	for (size_t i = 0; i < f->extent_blocks.n && !err; i++)
		err = push(t, f->extent_blocks.v[i]);
	/* last, so that an image without them picks as it always did */
	for (uint64_t g = j->sb.block_bitmap_blocks; g < ordfs_block_groups(&j->sb) && !err; g++)
		err = push(t, ordfs_block_bitmap_block(&j->sb, g));
	return err;
}

int corrupt_image(struct blockdev *bd, enum corrupt_kind kind, uint64_t seed, char *what,
		  unsigned what_len)
{
	char scratch[1];
	struct job j = { .bd = bd, .rng = seed, .kind = kind, .what = what ? what : scratch,
			 .what_len = what ? what_len : sizeof(scratch) };
	const char *why;
	if ((unsigned)kind >= CORRUPT_KINDS)
		return -EINVAL;
	int err = ordfs_read_super(bd, false, &j.sb, &why);
	if (err)
		return err;
	j.bs = ordfs_block_size(&j.sb);
	if (kind == CORRUPT_SUPER_CSUM)
		return damage_super(&j);
	if (kind == CORRUPT_SUPER_TORN)
		return damage_super_torn(&j);

	struct targets t = { 0 };
	if (kind == CORRUPT_JOURNAL_BITS || kind == CORRUPT_JOURNAL_CSUM) {
		err = journal_targets(&j, &t);
		if (!err)
			err = pick_block(&j, &t, corrupt_kind_name(kind),
					 kind == CORRUPT_JOURNAL_BITS ? change_bits
								      : change_journal_csum);
		free(t.v);
		return err;
	}
	if (kind == CORRUPT_BITMAP_BITS) {
		/* The two areas, then the group bitmap blocks past the block
		 * bitmap's area (numbered after them, so that an image without
		 * them picks as it always did). */
		uint64_t nbitmap = j.sb.inode_table_start - j.sb.block_bitmap_start;
		uint64_t pick = below(&j.rng, nbitmap + ordfs_block_groups(&j.sb) -
						   j.sb.block_bitmap_blocks);
		uint64_t b = pick < nbitmap ? j.sb.block_bitmap_start + pick
					    : ordfs_block_bitmap_block(&j.sb, j.sb.block_bitmap_blocks +
										      pick - nbitmap);
		snprintf(j.what, j.what_len, "bitmap-bits: block %llu", (unsigned long long)b);
		return rewrite_block(&j, b, change_bits);
	}

	struct found f = { 0 };
	err = find_targets(bd, &f);
	if (err) {
		found_free(&f);
		return err;
	}
	switch (kind) {
	case CORRUPT_INODE_BITS:
	case CORRUPT_INODE_CSUM:
	case CORRUPT_INODE_LINKS:
		err = change_inode_slot(&j, &f.inodes, kind, change_raw, &f);
		break;
	case CORRUPT_DIR_ZERO:
		err = pick_block(&j, &f.dir_blocks, "dir-zero", change_zero);
		break;
	case CORRUPT_DIR_BITS:
		err = pick_block(&j, &f.dir_blocks, "dir-bits", change_bits);
		break;
	case CORRUPT_DIR_CSUM:
		err = pick_block(&j, &f.dir_blocks, "dir-csum", change_keep_csum);
		break;
	case CORRUPT_EXTENT_CSUM:
		err = pick_block(&j, &f.extent_blocks, "extent-csum", change_keep_csum);
		break;
	case CORRUPT_BITMAP_FREE:
		err = damage_mark_free(&j, &f.data_blocks, false);
		break;
	case CORRUPT_FILE_SIZE:
	case CORRUPT_BLOCK_COUNT:
	case CORRUPT_EXTENT_RANGE:
	case CORRUPT_EXTENT_DUP:
		err = change_inode_slot(&j, &f.files, kind, change_field, &f);
		break;
	case CORRUPT_DIR_PARENT:
		err = change_inode_slot(&j, &f.dirs, kind, change_field, &f);
		break;
	case CORRUPT_ORPHAN_HEAD:
		err = damage_orphan_head(&j, &f.files);
		break;
	case CORRUPT_XATTR_BITS:
		err = pick_block(&j, &f.xattrs, "xattr-bits", change_bits);
		break;
	case CORRUPT_XATTR_RANGE:
		err = change_inode_slot(&j, &f.xattr_inodes, kind, change_field, &f);
		break;
	case CORRUPT_IBITMAP_FREE:
		err = damage_mark_free(&j, &f.inodes, true);
		break;
	case CORRUPT_DIR_HARDLINK:
		err = damage_dir_hardlink(&j, bd);
		break;
	case CORRUPT_FLAGS_UNKNOWN:
		err = change_inode_slot(&j, &f.files, kind, change_raw, &f);
		break;
	case CORRUPT_FLAGS_TYPE:
		err = change_inode_slot(&j, &f.files, kind, change_field, &f);
		break;
	case CORRUPT_IBITMAP_FREE_ALL:
		err = damage_mark_all_inodes_free(&j, &f.inodes);
		break;
	case CORRUPT_BITMAP_FREE_DIR:
		err = damage_mark_free(&j, &f.subdir_blocks, false);
		break;
	default: /* CORRUPT_ANY_METADATA */
		err = metadata_targets(&j, &f, &t);
		if (!err)
			err = pick_block(&j, &t, "any-metadata", change_bits);
		break;
	}
	free(t.v);
	found_free(&f);
	return err;
}

/* ---- a small tree for the tools' tests ------------------------------------ */

int corrupt_populate(struct blockdev *bd)
{
	struct ordfs *fs;
	int err = mount_rw(bd, &fs);
	if (err)
		return err;
	static const struct ordfs_cred cred = { 0, 0 };
	struct inode *root = NULL, *d = NULL, *f = NULL;
	uint32_t bs = fs->block_size;
	uint8_t *buf = calloc(1, bs);
	err = buf ? inode_get(fs, ORDFS_ROOT_INO, &root) : -ENOMEM;
	if (!err)
		err = ordfs_mkdir(fs, root, "d", 0755, &cred, &d);
	for (int i = 0; i < 30 && !err; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%02d", i);
		err = ordfs_create(fs, d, name, 0644, &cred, &f);
		for (uint32_t k = 0; k < 3 && !err; k++) {
			memset(buf, 'a' + i % 26, bs);
			ssize_t n = ordfs_write(fs, f, buf, bs, (uint64_t)k * bs);
			err = n == (ssize_t)bs ? 0 : n < 0 ? (int)n : -EIO;
		}
		if (!err && i == 0)
			err = ordfs_setxattr(fs, f, "user.note", "damage me", 9, 0);
		if (!err && i == 1)
			err = ordfs_link(fs, f, root, "hard");
		if (f)
			inode_put(fs, f);
		f = NULL;
	}
	/* Every other block: more extents than the inode root holds. */
	if (!err)
		err = ordfs_create(fs, root, "frag", 0644, &cred, &f);
	for (int k = 0; k < 12 && !err; k++) {
		memset(buf, 'z', bs);
		ssize_t n = ordfs_write(fs, f, buf, bs, (uint64_t)k * 2 * bs);
		err = n == (ssize_t)bs ? 0 : n < 0 ? (int)n : -EIO;
		if (!err)
			err = ordfs_fsync(fs, f, false);
	}
	if (f)
		inode_put(fs, f);
	f = NULL;
	if (!err && ordfs_symlink(fs, root, "link", "d/f00", &cred, &f) == 0)
		inode_put(fs, f);
	if (d)
		inode_put(fs, d);
	if (root)
		inode_put(fs, root);
	free(buf);
	int uerr = ordfs_unmount(fs);
	return err ? err : uerr;
}
