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
#include "super/owner.h"

static const char *const kind_names[] = {
	"super-csum",        "inode-bits",        "inode-csum",         "inode-links",
	"dir-zero",          "dir-bits",          "dir-csum",           "extent-csum",
	"bitmap-free",       "bitmap-bits",       "journal-bits",       "journal-csum",
	"any-metadata",      "file-size",         "block-count",        "extent-range",
	"extent-dup",        "dir-parent",        "orphan-head",        "xattr-bits",
	"ibitmap-free",      "xattr-range",       "dir-hardlink",       "super-torn",
	"flags-unknown",     "flags-type",        "dirent-self",        "dirent-root",
	"dirent-root-self",  "dirent-parent",     "dotdot-cycle",       "journal-ro-compat",
	"journal-seq-limit", "journal-live-limit", "journal-errno-min", "owner-held",
	"dirent-type-dir",   "symlink-size",      "ibitmap-reserved",   "extent-far",
	"inode-reserved",    "hash-seed",         "block-reserved",     "super-reserved",
	"symlink-hole",      "ibitmap-free-all",  "bitmap-free-dir",    "root-damaged",
	"dir-size",
};

/* one name per kind, in the enum's order (a merge that adds kinds on two
 * sides must keep both lists whole) */
_Static_assert(sizeof(kind_names) / sizeof(kind_names[0]) == CORRUPT_KINDS,
	       "a corrupt kind without a name, or a name without a kind");

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
	struct targets fast_links; /* fast symlinks */
	struct targets slow_links; /* symlinks whose target is in blocks */
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
		if (!err && S_ISLNK(inode->d.mode) && (inode->d.flags & ORDFS_INODE_FAST_SYMLINK))
			err = push(&f->fast_links, ino);
		else if (!err && S_ISLNK(inode->d.mode))
			err = push(&f->slow_links, ino);
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
	free(f->fast_links.v);
	free(f->slow_links.v);
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
	} else if (kind == CORRUPT_INODE_RESERVED) {
		/* 14 reserved bytes: 2..3 and 240..251. */
		unsigned k = (unsigned)below(&j->rng, 14);
		raw[k < 2 ? 2 + k : 240 + (k - 2)] = (uint8_t)(1 + below(&j->rng, 255));
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
	case CORRUPT_SYMLINK_SIZE: {
		static const uint64_t sizes[] = { 0, ORDFS_FAST_SYMLINK_MAX + 1, 200,
						  ORDFS_SYMLINK_MAX };
		d.size = sizes[below(&j->rng, sizeof(sizes) / sizeof(sizes[0]))];
		break;
	}
	case CORRUPT_SYMLINK_HOLE: {
		/* Past the blocks its root maps (a long link's target is in
		 * one extent of at most 4 blocks). */
		uint32_t n = le_get16(d.data + 2);
		uint64_t mapped = 0;
		for (uint32_t r = 0; r < n && r < ORDFS_INODE_ROOT_EXTENTS; r++)
			mapped += le_get32(d.data + ORDFS_EXTENT_NODE_HDR + r * ORDFS_EXTENT_REC + 16);
		uint64_t from = mapped * j->bs + 1;
		if (le_get16(d.data + 6) != 0 || from > ORDFS_SYMLINK_MAX)
			return -ENOENT;
		d.size = from + below(&j->rng, ORDFS_SYMLINK_MAX - from + 1);
		break;
	}
	case CORRUPT_EXTENT_FAR: {
		/* The last record of the root leaf, far past any size. */
		uint32_t n = le_get16(d.data + 2);
		uint8_t *last = d.data + ORDFS_EXTENT_NODE_HDR + (n - 1) * ORDFS_EXTENT_REC;
		le_put64(last, (1ull << 62) + below(&j->rng, 1000));
		break;
	}
	case CORRUPT_DIR_SIZE:
		/* 0, or one block short or past where its blocks end */
		d.size = below(&j->rng, 2) ? 0 : d.size + j->bs;
		break;
	case CORRUPT_ROOT_DAMAGED:
		/* by seed: a regular file (valid checksum), or the
		 * checksum broken */
		if (below(&j->rng, 2) == 0) {
			d.mode = S_IFREG | (d.mode & 07777);
			break;
		}
		ordfs_inode_encode(&d, ino, j->sb.csum_seed, raw);
		raw[ORDFS_INODE_SIZE - 1] ^= 0x5a;
		return 0;
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

/* The primary superblock's first copy, raw and decoded, for a damage
 * that changes a field of it. */
static int read_primary_super(struct job *j, uint8_t raw[ORDFS_SB_SIZE], struct ordfs_super *sb)
{
	const char *why;
	int err = blockdev_read(j->bd, raw, ORDFS_SB_SIZE, 0);
	return err ? err : ordfs_super_decode(raw, sb, &why);
}

/* sb encoded (both sector copies, checksums set) over the primary, and
 * flushed. */
static int write_primary_super(struct job *j, uint8_t raw[ORDFS_SB_SIZE],
			       const struct ordfs_super *sb)
{
	ordfs_super_encode(sb, raw);
	int err = blockdev_write(j->bd, raw, ORDFS_SB_SIZE, 0);
	return err ? err : blockdev_flush(j->bd);
}

/* A clean image whose orphan list names an inode. */
static int damage_orphan_head(struct job *j, const struct targets *inodes)
{
	if (inodes->n == 0)
		return -ENOENT;
	uint8_t raw[ORDFS_SB_SIZE];
	struct ordfs_super sb;
	int err = read_primary_super(j, raw, &sb);
	if (err)
		return err;
	sb.orphan_head = (uint32_t)inodes->v[below(&j->rng, inodes->n)];
	snprintf(j->what, j->what_len, "orphan-head: inode %u", sb.orphan_head);
	return write_primary_super(j, raw, &sb);
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

/* The directories of the image, each with its depth below the root
 * (the root itself not listed). */
struct dir_depths {
	struct targets ino, depth;
};

static int list_dirs(struct ordfs *fs, struct dir_depths *out)
{
	int err = 0;
	for (uint32_t ino = ORDFS_ROOT_INO + 1; ino <= fs->sb.inode_count && !err; ino++) {
		struct inode *dir;
		if (inode_get(fs, ino, &dir) != 0)
			continue;
		bool is_dir = S_ISDIR(dir->d.mode);
		inode_put(fs, dir);
		if (!is_dir)
			continue;
		/* depth by '..' (a valid image: bounded by the inode count) */
		uint64_t depth = 0;
		uint32_t cur = ino;
		while (cur != ORDFS_ROOT_INO && depth <= fs->sb.inode_count && !err) {
			struct inode *p;
			err = inode_get(fs, cur, &p);
			if (!err) {
				cur = p->d.parent;
				inode_put(fs, p);
				depth++;
			}
		}
		if (!err)
			err = push(&out->ino, ino);
		if (!err)
			err = push(&out->depth, depth);
	}
	return err;
}

/* An entry "loop" naming another directory (or the directory itself), and
 * for dotdot-cycle also the named directory's '..' turned to the one
 * holding the entry: through the filesystem's directory code, in one
 * handle. */
static int damage_dirent_loop(struct job *j, struct blockdev *bd, enum corrupt_kind kind)
{
	struct ordfs *fs;
	int err = mount_rw(bd, &fs);
	if (err)
		return err;
	struct dir_depths dd = { 0 };
	struct targets pick = { 0 };
	err = list_dirs(fs, &dd);
	uint64_t min_depth = kind == CORRUPT_DIRENT_PARENT || kind == CORRUPT_DOTDOT_CYCLE ? 2 : 1;
	for (size_t i = 0; i < dd.ino.n && !err; i++)
		if (dd.depth.v[i] >= min_depth)
			err = push(&pick, dd.ino.v[i]);
	uint32_t holder = ORDFS_ROOT_INO;
	if (!err && pick.n == 0 && min_depth == 2 && dd.ino.n > 0) {
		/* No directory two levels deep: one is made, under a directory
		 * picked among those below the root. */
		static const struct ordfs_cred cred = { 0, 0 };
		struct inode *up = NULL, *sub = NULL;
		err = inode_get(fs, (uint32_t)dd.ino.v[below(&j->rng, dd.ino.n)], &up);
		if (!err)
			err = ordfs_mkdir(fs, up, "sub", 0755, &cred, &sub);
		if (!err)
			err = push(&pick, sub->ino);
		if (sub)
			inode_put(fs, sub);
		if (up)
			inode_put(fs, up);
	}
	if (!err && kind != CORRUPT_DIRENT_ROOT_SELF) {
		if (pick.n == 0)
			err = -ENOENT;
		else
			holder = (uint32_t)pick.v[below(&j->rng, pick.n)];
	}
	free(dd.ino.v);
	free(dd.depth.v);
	free(pick.v);

	struct inode *dir = NULL, *named = NULL;
	if (!err)
		err = inode_get(fs, holder, &dir);
	uint32_t target = 0;
	if (!err) {
		switch (kind) {
		case CORRUPT_DIRENT_SELF:
		case CORRUPT_DIRENT_ROOT_SELF:
			target = holder;
			break;
		case CORRUPT_DIRENT_ROOT:
			target = ORDFS_ROOT_INO;
			break;
		default: /* parent, dotdot-cycle */
			target = dir->d.parent;
			break;
		}
		err = inode_get(fs, target, &named);
	}
	if (!err) {
		struct handle *h;
		/* lock order: the named directory is the holder's parent (or
		 * the holder itself, or the root): it first, then a handle */
		if (named != dir)
			ordfs_rwlock_wrlock(&named->lock);
		ordfs_rwlock_wrlock(&dir->lock);
		err = journal_start(fs->journal, 24, &h);
		if (!err) {
			err = dir_add(fs, h, dir, "loop", 4, target, DT_DIR);
			if (!err && kind == CORRUPT_DOTDOT_CYCLE) {
				named->d.parent = holder;
				err = inode_write(fs, h, named, 0);
			}
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
		ordfs_rwlock_unlock(&dir->lock);
		if (named != dir)
			ordfs_rwlock_unlock(&named->lock);
		if (kind == CORRUPT_DOTDOT_CYCLE)
			snprintf(j->what, j->what_len,
				 "dotdot-cycle: directory %u names its parent %u as \"loop\", "
				 "whose '..' is now %u", holder, target, holder);
		else
			snprintf(j->what, j->what_len, "%s: directory %u has an entry \"loop\" naming %u",
				 corrupt_kind_name(kind), holder, target);
	}
	if (named)
		inode_put(fs, named);
	if (dir)
		inode_put(fs, dir);
	int uerr = ordfs_unmount(fs);
	return err ? err : uerr;
}

/* An entry of type regular file, added through the journal of a
 * read-write mount, naming a directory: in a directory D other than the
 * root (the first found), D itself (seed % 3 == 0) or the root (1); in
 * the root, another directory (2: the last found, D if it is the only
 * one). */
static int damage_dirent_type_dir(struct job *j, struct blockdev *bd, const struct targets *dirs)
{
	if (dirs->n == 0)
		return -ENOENT;
	struct ordfs *fs;
	int err = mount_rw(bd, &fs);
	if (err)
		return err;
	struct inode *root = NULL, *d = NULL;
	err = inode_get(fs, ORDFS_ROOT_INO, &root);
	if (!err)
		err = inode_get(fs, (uint32_t)dirs->v[0], &d);
	static const char *const names[] = { "self", "root", "other" };
	unsigned v = (unsigned)(next_random(&j->rng) % 3);
	if (!err) {
		struct inode *in = v == 2 ? root : d;
		uint32_t target = v == 0 ? d->ino : v == 1 ? ORDFS_ROOT_INO
							   : (uint32_t)dirs->v[dirs->n - 1];
		struct handle *h;
		ordfs_rwlock_wrlock(&in->lock); /* lock order: inode, then handle */
		err = journal_start(fs->journal, 16, &h);
		if (!err) {
			err = dir_add(fs, h, in, names[v], strlen(names[v]), target, DT_REG);
			int serr = journal_stop(h);
			if (!err)
				err = serr;
		}
		ordfs_rwlock_unlock(&in->lock);
		snprintf(j->what, j->what_len,
			 "dirent-type-dir: dir %u entry '%s' names directory %u as a file", in->ino,
			 names[v], target);
	}
	if (d)
		inode_put(fs, d);
	if (root)
		inode_put(fs, root);
	int uerr = ordfs_unmount(fs);
	return err ? err : uerr;
}

/* The header's reserved u16 (offset 6) not zero, checksum recomputed. */
static void change_hdr_reserved(struct job *j, uint8_t *blk, uint64_t blockno)
{
	(void)blockno;
	le_put16(blk + 6, (uint16_t)(1 + below(&j->rng, 0xffff)));
	ordfs_block_csum_set(blk, j->bs, j->sb.csum_seed);
}

/* A reserved byte of both copies of the primary superblock not zero,
 * checksums recomputed (the backup stays as it was). */
static int damage_super_reserved(struct job *j)
{
	uint8_t raw[ORDFS_SB_SIZE];
	int err = blockdev_read(j->bd, raw, sizeof(raw), 0);
	if (err)
		return err;
	uint32_t off = 288 + (uint32_t)below(&j->rng, 508 - 288);
	uint8_t v = (uint8_t)(1 + below(&j->rng, 255));
	for (uint32_t c = 0; c < 2; c++)
		raw[c * ORDFS_SB_COPY_SIZE + off] = v;
	ordfs_super_csum_set(raw);
	snprintf(j->what, j->what_len, "super-reserved: byte %u = 0x%02x", off, v);
	err = blockdev_write(j->bd, raw, sizeof(raw), 0);
	return err ? err : blockdev_flush(j->bd);
}

/* The superblock's hash seed changed, checksum recomputed: every name is
 * now in the wrong place of its directory's index. */
static int damage_hash_seed(struct job *j)
{
	uint8_t raw[ORDFS_SB_SIZE];
	struct ordfs_super sb;
	int err = read_primary_super(j, raw, &sb);
	if (err)
		return err;
	sb.hash_seed ^= (uint32_t)(1 + below(&j->rng, 0xfffffffeu));
	snprintf(j->what, j->what_len, "hash-seed: 0x%08x", sb.hash_seed);
	return write_primary_super(j, raw, &sb);
}

/* One superblock field set to a random value, checksum recomputed. */
static int damage_super(struct job *j)
{
	uint8_t raw[ORDFS_SB_SIZE];
	struct ordfs_super sb;
	int err = read_primary_super(j, raw, &sb);
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
	snprintf(j->what, j->what_len, "super-csum: field %s", fields[f]);
	return write_primary_super(j, raw, &sb);
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

/* ---- committed transactions written into the log ------------------------ */

/* The largest journal sequence the reader accepts (format.h). */
#define JSEQ_MAX ((1ull << 62) - 1)

/* Writes one committed transaction, sequence seq, at log block *pos: a
 * descriptor with one tag for block `target`, its copy (`home`, the block
 * as replay is to write it), the commit block; every checksum as ordfs's
 * own commit writes it.  *pos moves past it. */
static int write_transaction(struct job *j, uint32_t *pos, uint64_t seq, uint64_t target,
			     const uint8_t *home)
{
	uint8_t *desc = calloc(1, j->bs), *copy = malloc(j->bs), *commit = calloc(1, j->bs);
	int err = desc && copy && commit ? 0 : -ENOMEM;
	if (!err) {
		memcpy(copy, home, j->bs);
		uint32_t flags = 0;
		if (le_get32(copy) == ORDFS_JOURNAL_MAGIC) {
			le_put32(copy, 0);
			flags = ORDFS_JTAG_ESCAPED;
		}
		uint8_t le_seq[8];
		le_put64(le_seq, seq);
		ordfs_jblock_hdr_init(desc, ORDFS_JB_DESCRIPTOR, seq);
		le_put32(desc + 16, 1);
		le_put64(desc + ORDFS_JB_HDR + 8, target);
		le_put32(desc + ORDFS_JB_HDR + 16, flags);
		le_put32(desc + ORDFS_JB_HDR + 20,
			 ordfs_crc32c(ordfs_crc32c(j->sb.csum_seed, le_seq, 8), home, j->bs));
		ordfs_jblock_csum_set(desc, j->bs, j->sb.csum_seed);
		uint32_t crc = ordfs_crc32c(j->sb.csum_seed, desc, j->bs);
		crc = ordfs_crc32c(crc, copy, j->bs);
		ordfs_jblock_hdr_init(commit, ORDFS_JB_COMMIT, seq);
		le_put32(commit + 16, 2);
		le_put32(commit + 20, crc);
		le_put64(commit + 24, 1700000000ull);
		ordfs_jblock_csum_set(commit, j->bs, j->sb.csum_seed);
	}
	const uint8_t *blocks[3] = { desc, copy, commit };
	for (int i = 0; i < 3 && !err; i++) {
		err = blockdev_write(j->bd, blocks[i], j->bs, (j->sb.journal_start + *pos) * j->bs);
		*pos = *pos + 1 < j->sb.journal_blocks ? *pos + 1 : 1;
	}
	free(desc);
	free(copy);
	free(commit);
	return err;
}

/* Block 0 as the image holds it, superblock decoded into *sb. */
static int read_block0(struct job *j, uint8_t *blk, struct ordfs_super *sb)
{
	const char *why;
	int err = blockdev_read(j->bd, blk, j->bs, 0);
	return err ? err : ordfs_super_decode(blk, sb, &why);
}

/* The journal superblock rewritten: the log starts at log block `start`
 * (0: empty) with sequence seq; errno set to *err_field if not NULL. */
static int set_journal_super(struct job *j, uint32_t start, uint64_t seq, const int32_t *err_field)
{
	uint8_t *blk = malloc(j->bs);
	if (!blk)
		return -ENOMEM;
	struct ordfs_journal_super js;
	int err = blockdev_read(j->bd, blk, j->bs, j->sb.journal_start * j->bs);
	if (!err)
		err = ordfs_journal_super_decode(blk, j->bs, j->sb.csum_seed, &js, NULL);
	if (!err) {
		js.start = start;
		js.sequence = seq;
		if (err_field)
			js.err = *err_field;
		ordfs_journal_super_encode(&js, j->sb.csum_seed, blk);
		err = blockdev_write(j->bd, blk, j->bs, j->sb.journal_start * j->bs);
	}
	free(blk);
	return err;
}

/* The journal kinds on an unmounted image whose log is empty: what a
 * crash leaves (block 0 says RECOVER, not CLEAN) with committed
 * transactions in the log that replay brings home. */
static int damage_journal(struct job *j, enum corrupt_kind kind)
{
	uint8_t *home = malloc(j->bs), *copy = malloc(j->bs);
	struct ordfs_super sb;
	int err = home && copy ? read_block0(j, home, &sb) : -ENOMEM;
	if (!err && journal_needs_recovery(j->bd, &j->sb) != 0)
		err = -ENOENT; /* the log is in use: no room to write into it here */
	if (!err && kind == CORRUPT_JOURNAL_SEQ_LIMIT) {
		err = set_journal_super(j, 0, JSEQ_MAX, NULL);
		snprintf(j->what, j->what_len, "journal-seq-limit: empty log, sequence %llu",
			 (unsigned long long)JSEQ_MAX);
		goto out;
	}
	if (err)
		goto out;
	/* Block 0 as a crash leaves it; the copies in the log start from it. */
	sb.feature_incompat |= ORDFS_FEATURE_INCOMPAT_RECOVER;
	sb.state &= ~ORDFS_STATE_CLEAN;
	ordfs_super_encode(&sb, home);
	err = blockdev_write(j->bd, home, j->bs, 0);
	memcpy(copy, home, j->bs);
	uint32_t pos = 1;
	uint64_t seq = 1 + below(&j->rng, 1000);
	if (!err && kind == CORRUPT_JOURNAL_RO_COMPAT) {
		/* A bit no ordfs defines: the highest, or one just past the known. */
		uint32_t bit = next_random(&j->rng) & 1 ? 0x80u : 0x80000000u;
		sb.feature_ro_compat |= bit;
		ordfs_super_encode(&sb, copy);
		err = write_transaction(j, &pos, seq, 0, copy);
		if (!err)
			err = set_journal_super(j, 1, seq, NULL);
		snprintf(j->what, j->what_len,
			 "journal-ro-compat: transaction %llu logs block 0 with ro_compat 0x%x",
			 (unsigned long long)seq, sb.feature_ro_compat);
	} else if (!err && kind == CORRUPT_JOURNAL_LIVE_LIMIT) {
		seq = JSEQ_MAX;
		err = write_transaction(j, &pos, seq, 0, copy);
		if (!err)
			err = write_transaction(j, &pos, seq + 1, 0, copy);
		if (!err)
			err = set_journal_super(j, 1, seq, NULL);
		snprintf(j->what, j->what_len,
			 "journal-live-limit: transactions %llu and %llu in the log",
			 (unsigned long long)seq, (unsigned long long)seq + 1);
	} else if (!err) { /* CORRUPT_JOURNAL_ERRNO_MIN */
		int32_t errno_field = INT32_MIN;
		err = write_transaction(j, &pos, seq, 0, copy);
		if (!err)
			err = set_journal_super(j, 1, seq, &errno_field);
		snprintf(j->what, j->what_len,
			 "journal-errno-min: errno %d, transaction %llu in the log",
			 (int)errno_field, (unsigned long long)seq);
	}
out:
	if (!err)
		err = blockdev_flush(j->bd);
	free(home);
	free(copy);
	return err;
}

/* The owner record held by a holder on another host that never beats,
 * claiming the longest interval the field can say. */
static int damage_owner_held(struct job *j)
{
	if (!owner_record_fits(blockdev_size(j->bd), j->sb.block_count, j->bs))
		return -ENOENT;
	struct ordfs_owner rec = {
		.state = ORDFS_OWNER_HELD,
		.seq = 1 + below(&j->rng, 1000),
		.nonce = next_random(&j->rng),
		.pid = 1,
		.interval_ms = 0xffffffffu,
		.time = 1700000000ull,
		.program = "ordfs",
		.host = "elsewhere.invalid",
	};
	uint8_t raw[ORDFS_OWNER_SIZE];
	ordfs_owner_encode(&rec, raw);
	snprintf(j->what, j->what_len, "owner-held: by pid 1 on %s, interval %u ms", rec.host,
		 rec.interval_ms);
	int err = blockdev_write(j->bd, raw, sizeof(raw), blockdev_size(j->bd) - ORDFS_OWNER_SIZE);
	return err ? err : blockdev_flush(j->bd);
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
	if (kind == CORRUPT_JOURNAL_RO_COMPAT || kind == CORRUPT_JOURNAL_SEQ_LIMIT ||
	    kind == CORRUPT_JOURNAL_LIVE_LIMIT || kind == CORRUPT_JOURNAL_ERRNO_MIN)
		return damage_journal(&j, kind);
	if (kind == CORRUPT_OWNER_HELD)
		return damage_owner_held(&j);
	if (kind == CORRUPT_HASH_SEED)
		return damage_hash_seed(&j);
	if (kind == CORRUPT_SUPER_RESERVED)
		return damage_super_reserved(&j);
	if (kind == CORRUPT_IBITMAP_RESERVED) {
		struct targets one = { 0 };
		err = push(&one, 1);
		if (!err)
			err = damage_mark_free(&j, &one, true);
		free(one.v);
		return err;
	}

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
	case CORRUPT_DIRENT_SELF:
	case CORRUPT_DIRENT_ROOT:
	case CORRUPT_DIRENT_ROOT_SELF:
	case CORRUPT_DIRENT_PARENT:
	case CORRUPT_DOTDOT_CYCLE:
		err = damage_dirent_loop(&j, bd, kind);
		break;
	case CORRUPT_DIRENT_TYPE_DIR:
		err = damage_dirent_type_dir(&j, bd, &f.dirs);
		break;
	case CORRUPT_SYMLINK_SIZE:
		err = change_inode_slot(&j, &f.fast_links, kind, change_field, &f);
		break;
	case CORRUPT_EXTENT_FAR:
		err = change_inode_slot(&j, &f.files, kind, change_field, &f);
		break;
	case CORRUPT_SYMLINK_HOLE:
		err = change_inode_slot(&j, &f.slow_links, kind, change_field, &f);
		break;
	case CORRUPT_DIR_SIZE:
		err = change_inode_slot(&j, &f.dirs, kind, change_field, &f);
		break;
	case CORRUPT_ROOT_DAMAGED: {
		struct targets root = { 0 };
		err = push(&root, ORDFS_ROOT_INO);
		if (!err)
			err = change_inode_slot(&j, &root, kind, change_field, &f);
		free(root.v);
		break;
	}
	case CORRUPT_INODE_RESERVED:
		err = change_inode_slot(&j, &f.inodes, kind, change_raw, &f);
		break;
	case CORRUPT_BLOCK_RESERVED:
		/* bitmaps, directory, extent-tree and xattr blocks */
		for (uint64_t b = j.sb.block_bitmap_start; b < j.sb.inode_table_start && !err; b++)
			err = push(&t, b);
		for (size_t i = 0; i < f.dir_blocks.n && !err; i++)
			err = push(&t, f.dir_blocks.v[i]);
		for (size_t i = 0; i < f.extent_blocks.n && !err; i++)
			err = push(&t, f.extent_blocks.v[i]);
		for (size_t i = 0; i < f.xattrs.n && !err; i++)
			err = push(&t, f.xattrs.v[i]);
		if (!err)
			err = pick_block(&j, &t, "block-reserved", change_hdr_reserved);
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
