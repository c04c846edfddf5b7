/*
 * repair.c - fsck's repairs: round after round, check the image, apply
 * the first stage that has work, check again.
 *
 * Owns: ordfs_repair and the four stages, applied one per round in this
 * order (each round's check sees the previous round's result, so each
 * stage starts from a consistent picture):
 *   A. inode slots (raw writes): clear the ones failing their checksum;
 *      rewrite without them the ones with file-flag bits no ordfs defines;
 *      truncate to nothing the ones with a damaged extent tree or
 *      directory, or blocks out of range (their data is lost; their name
 *      stays, so a damaged directory's children become unreachable and go
 *      to lost+found); give an inode its own copy of data blocks an
 *      earlier inode claimed (as e2fsck clones them), or truncate it when
 *      its extents are not all in the inode or there is no room;
 *   D. the bitmaps and summary counts (raw writes), rebuilt from what the
 *      check found in use (every block-bitmap block, the group bitmap
 *      blocks past the area too): before any stage that allocates, so a
 *      read-write mount never hands out a block in use; the superblock's
 *      FILE_FLAGS feature set when inodes have flags without it;
 *   B0. directory indexes (a read-write mount, journaled): a sound
 *      directory whose entries are hashed with another seed than the
 *      superblock's gets its index rebuilt from its entries (e2fsck -D);
 *      alone in its round, before any name is looked up;
 *   B. names (a read-write mount, journaled): remove entries that point
 *      at nothing or at a directory reached twice, retype entries of the
 *      wrong type, link unreachable inodes into /lost+found as "#INO";
 *   C. inode fields (the same mount): link counts, '..', block counts,
 *      sizes, a damaged xattr block dropped, file flags the inode's type
 *      may not carry cleared.
 * Rules: never touches what the check did not flag; stops when a check is
 * clean, when only unfixable problems are left, or after MAX_ROUNDS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"
#include "format/endian_le.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../ops.h"
#include "../blockdev/blockdev.h"
#include "../dir/dir.h"
#include "../journal/journal.h"
#include "../lock/lock.h"
#include "../file/file.h"

#define MAX_ROUNDS 12u
#define LOST_AND_FOUND "lost+found"

/* ---- stage A: inode slots ---------------------------------------------------- */

/* What stage A does to an inode slot. */
enum slot_rewrite {
	SLOT_CLEAR,       /* zero it */
	SLOT_EMPTY,       /* keep the inode, truncated to nothing (zeroed if it
			     does not decode) */
	SLOT_STRIP_FLAGS, /* keep it all but the file-flag bits no ordfs
			     defines (the decoder leaves them out) and
			     reserved bytes not zero */
	SLOT_SET_SIZE,    /* keep it, its size set to `size` (a directory's:
			     where its blocks end) */
	SLOT_NEW_ROOT,    /* whatever it held: an empty root directory, as mkfs
			     makes it (mode 0755, root's, two links, no blocks) */
};

static int rewrite_inode_slot(struct blockdev *bd, const struct ordfs_super *sb, uint32_t ino,
			      enum slot_rewrite how, uint64_t size)
{
	uint32_t bs = ordfs_block_size(sb);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(sb, ino, &blk, &off);
	uint8_t *b = malloc(bs);
	if (!b)
		return -ENOMEM;
	int err = blockdev_read(bd, b, bs, blk * bs);
	if (!err) {
		struct ordfs_inode d;
		uint32_t unknown; /* file-flag bits: decoded without them */
		if (how == SLOT_STRIP_FLAGS) /* and without reserved bytes */
			(void)ordfs_inode_clear_reserved(b + off, ino, sb->csum_seed);
		int derr = how == SLOT_CLEAR || how == SLOT_NEW_ROOT
				   ? -EUCLEAN
				   : ordfs_inode_decode_check(b + off, ino, sb->csum_seed, &d, &unknown);
		if (how == SLOT_NEW_ROOT) {
			memset(&d, 0, sizeof(d));
			d.mode = S_IFDIR | 0755;
			d.links = 2;
			d.parent = ORDFS_ROOT_INO;
			d.atime = ordfs_now();
			d.mtime = d.ctime = d.crtime = d.atime;
			ordfs_extent_root_init(d.data);
			ordfs_inode_encode(&d, ino, sb->csum_seed, b + off);
		} else if (derr && (how == SLOT_STRIP_FLAGS || how == SLOT_SET_SIZE)) {
			err = derr;
		} else if (derr) {
			memset(b + off, 0, ORDFS_INODE_SIZE);
		} else {
			if (how == SLOT_EMPTY) {
				/* Truncated to nothing: no extents, no size, no xattrs. */
				ordfs_extent_root_init(d.data);
				d.flags &= ~ORDFS_INODE_FAST_SYMLINK;
				d.size = 0;
				d.blocks = 0;
				d.xattr_block = 0;
			}
			if (how == SLOT_SET_SIZE)
				d.size = size;
			ordfs_inode_encode(&d, ino, sb->csum_seed, b + off);
		}
		if (!err)
			err = blockdev_write(bd, b, bs, blk * bs);
	}
	free(b);
	return err;
}

/* First run of len blocks free in found (bit set = in use), from the
 * data area on; marks it used.  0 if there is none. */
static uint64_t take_free_run(const struct ordfs_super *sb, uint8_t *found, uint64_t len)
{
	uint64_t run = 0;
	for (uint64_t b = sb->data_start; b < sb->block_count - 1; b++) {
		run = (found[b / 8] >> (b % 8)) & 1 ? 0 : run + 1;
		if (run == len) {
			uint64_t start = b + 1 - len;
			for (uint64_t k = start; k <= b; k++)
				found[k / 8] |= (uint8_t)(1u << (k % 8));
			return start;
		}
	}
	return 0;
}

static bool listed(const struct check_findings *f, uint32_t ino, uint64_t first, uint64_t len)
{
	for (uint32_t i = 0; i < f->clone_blocks.n; i++)
		if (f->clone_blocks.v[i].ino == ino && f->clone_blocks.v[i].block >= first &&
		    f->clone_blocks.v[i].block - first < len)
			return true;
	return false;
}

/* Gives inode ino its own copy of every extent record (all in the inode:
 * the check made sure) that holds a block an earlier inode claimed: the
 * record's blocks are copied to a free run and the record points there.
 * Both inodes keep their data (the damaged one gets a copy of what the
 * other had).  No free run: the inode is truncated instead. */
static int clone_records(struct blockdev *bd, const struct ordfs_super *sb,
			 struct check_findings *f, uint32_t ino)
{
	uint32_t bs = ordfs_block_size(sb);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(sb, ino, &blk, &off);
	uint8_t *b = malloc(bs), *data = malloc(bs);
	struct ordfs_inode d;
	int err = b && data ? blockdev_read(bd, b, bs, blk * bs) : -ENOMEM;
	if (!err)
		err = ordfs_inode_decode(b + off, ino, sb->csum_seed, &d);
	uint32_t entries = err ? 0 : le_get16(d.data + 2);
	for (uint32_t r = 0; r < entries && r < ORDFS_INODE_ROOT_EXTENTS && !err; r++) {
		uint8_t *rec = d.data + ORDFS_EXTENT_NODE_HDR + r * ORDFS_EXTENT_REC;
		uint64_t phys = le_get64(rec + 8), len = le_get32(rec + 16);
		if (!listed(f, ino, phys, len))
			continue;
		uint64_t to = take_free_run(sb, f->blocks_found, len);
		if (!to) {
			err = -ENOSPC;
			break;
		}
		for (uint64_t k = 0; k < len && !err; k++) {
			err = blockdev_read(bd, data, bs, (phys + k) * bs);
			if (!err)
				err = blockdev_write(bd, data, bs, (to + k) * bs);
		}
		le_put64(rec + 8, to);
	}
	if (!err) {
		ordfs_inode_encode(&d, ino, sb->csum_seed, b + off);
		err = blockdev_write(bd, b, bs, blk * bs);
	}
	free(b);
	free(data);
	if (err == -ENOSPC)
		err = rewrite_inode_slot(bd, sb, ino, SLOT_EMPTY, 0); /* nowhere to copy to */
	return err;
}

static bool in_list(const uint32_t *v, uint32_t n, uint32_t x)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static int stage_inodes(struct blockdev *bd, const struct ordfs_super *sb,
			struct check_findings *f, uint32_t *fixes)
{
	int err = 0;
	for (uint32_t i = 0; i < f->clear_inodes.n && !err; i++, ++*fixes)
		err = rewrite_inode_slot(bd, sb, f->clear_inodes.v[i], SLOT_CLEAR, 0);
	for (uint32_t i = 0; i < f->empty_inodes.n && !err; i++, ++*fixes)
		err = rewrite_inode_slot(bd, sb, f->empty_inodes.v[i], SLOT_EMPTY, 0);
	for (uint32_t i = 0; i < f->strip_flags.n && !err; i++, ++*fixes)
		if (!in_list(f->clear_inodes.v, f->clear_inodes.n, f->strip_flags.v[i]))
			err = rewrite_inode_slot(bd, sb, f->strip_flags.v[i], SLOT_STRIP_FLAGS, 0);
	for (uint32_t i = 0; i < f->dir_sizes.n && !err; i++, ++*fixes) {
		struct check_size_fix fix = f->dir_sizes.v[i];
		if (!in_list(f->clear_inodes.v, f->clear_inodes.n, fix.ino) &&
		    !in_list(f->empty_inodes.v, f->empty_inodes.n, fix.ino))
			err = rewrite_inode_slot(bd, sb, fix.ino, SLOT_SET_SIZE, fix.size);
	}
	/* Each inode once, and not one cleared or truncated above. */
	for (uint32_t i = 0; i < f->clone_blocks.n && !err; i++) {
		uint32_t ino = f->clone_blocks.v[i].ino;
		bool seen = false;
		for (uint32_t k = 0; k < i && !seen; k++)
			seen = f->clone_blocks.v[k].ino == ino;
		if (seen || in_list(f->clear_inodes.v, f->clear_inodes.n, ino) ||
		    in_list(f->empty_inodes.v, f->empty_inodes.n, ino))
			continue;
		err = clone_records(bd, sb, f, ino);
		++*fixes;
	}
	return err ? err : blockdev_flush(bd);
}

/* ---- stage D: bitmaps and summary -------------------------------------------- */

/* Writes one bitmap from found (bit i of found = item i of the bitmap):
 * the inode bitmap's area, or every block of the block bitmap, the group
 * bitmap blocks past its area included (ordfs_block_bitmap_block; found
 * has their own bits set: pass 5 counts them as in use). */
static int write_bitmap_area(struct blockdev *bd, const struct ordfs_super *sb, uint64_t start,
			     enum ordfs_block_type type, const uint8_t *found, uint64_t nbits)
{
	uint32_t bs = ordfs_block_size(sb);
	uint64_t per = ordfs_bits_per_bitmap_block(bs);
	uint8_t *blk = malloc(bs);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	for (uint64_t bi = 0; bi * per < nbits && !err; bi++) {
		uint64_t blockno = type == ORDFS_BT_BLOCK_BITMAP ? ordfs_block_bitmap_block(sb, bi)
								 : start + bi;
		memset(blk, 0, bs);
		ordfs_block_hdr_init(blk, type, 0, blockno);
		uint8_t *payload = blk + ORDFS_BLOCK_HDR_SIZE;
		for (uint64_t bit = 0; bit < per; bit++) {
			uint64_t i = bi * per + bit;
			/* Past the end: in use, as mkfs leaves it. */
			if (i >= nbits || (found[i / 8] >> (i % 8)) & 1)
				payload[bit / 8] |= (uint8_t)(1u << (bit % 8));
		}
		ordfs_block_csum_set(blk, bs, sb->csum_seed);
		err = blockdev_write(bd, blk, bs, blockno * bs);
	}
	free(blk);
	return err;
}

static uint64_t count_bits(const uint8_t *bits, uint64_t n)
{
	uint64_t c = 0;
	for (uint64_t i = 0; i < n; i++)
		c += (bits[i / 8] >> (i % 8)) & 1;
	return c;
}

/* Both copies of the journal superblock from the one that decodes. */
static int rewrite_journal_super(struct blockdev *bd, const struct ordfs_super *sb)
{
	uint32_t bs = ordfs_block_size(sb);
	uint8_t *blk = malloc(bs);
	struct ordfs_journal_super js;
	if (!blk)
		return -ENOMEM;
	int err = blockdev_read(bd, blk, bs, sb->journal_start * bs);
	if (!err)
		err = ordfs_journal_super_decode(blk, bs, sb->csum_seed, &js, NULL);
	if (!err) {
		ordfs_journal_super_encode(&js, sb->csum_seed, blk);
		err = blockdev_write(bd, blk, bs, sb->journal_start * bs);
	}
	free(blk);
	return err;
}

/* R: a new, empty root directory in inode 2's slot (raw write,
 * SLOT_NEW_ROOT).  The old root's blocks are found unclaimed and freed by
 * the bitmap stage, and every inode it named is found unreachable and
 * adopted into /lost+found, which the names stage makes under the new
 * root. */
static int stage_new_root(struct blockdev *bd, const struct ordfs_super *sb, uint32_t *fixes)
{
	int err = rewrite_inode_slot(bd, sb, ORDFS_ROOT_INO, SLOT_NEW_ROOT, 0);
	if (!err)
		err = blockdev_flush(bd);
	if (!err)
		++*fixes;
	return err;
}

static int stage_bitmaps(struct blockdev *bd, const struct check_findings *f, uint32_t *fixes)
{
	struct ordfs_super sb;
	const char *why;
	int err = ordfs_read_super(bd, false, &sb, &why);
	if (!err && f->bitmaps_wrong) {
		err = write_bitmap_area(bd, &sb, sb.block_bitmap_start, ORDFS_BT_BLOCK_BITMAP,
					f->blocks_found, sb.block_count);
		if (!err)
			err = write_bitmap_area(bd, &sb, sb.inode_bitmap_start, ORDFS_BT_INODE_BITMAP,
						f->inodes_found, sb.inode_count);
		++*fixes;
	}
	if (!err && f->file_flags_feature)
		sb.feature_ro_compat |= ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS;
	if (!err && (f->summary_wrong || f->bitmaps_wrong || f->clean_with_orphans ||
		     f->file_flags_feature)) {
		sb.free_blocks = sb.block_count - count_bits(f->blocks_found, sb.block_count);
		sb.free_inodes = sb.inode_count - (uint32_t)count_bits(f->inodes_found,
								    sb.inode_count);
		/* Orphans on a "clean" image: let the next mount finish them. */
		if (f->clean_with_orphans)
			sb.state &= ~ORDFS_STATE_CLEAN;
		err = ordfs_write_super(bd, &sb, true);
		++*fixes;
	} else if (!err && f->super_copy_stale) {
		err = ordfs_write_super(bd, &sb, false);
		++*fixes;
	}
	if (!err && f->journal_super_copy_stale) {
		err = rewrite_journal_super(bd, &sb);
		++*fixes;
	}
	return err ? err : blockdev_flush(bd);
}

/* ---- stages B and C: through a read-write mount -------------------------------- */

static uint32_t handle_credits(struct ordfs *fs)
{
	uint32_t max = journal_max_credits(fs->journal);
	return max < 64 ? max : 64;
}

/* Each repair below takes its inode locks, then runs its change in a
 * handle of its own (the lock order: inode locks before the handle), and
 * drops its references only after the handle is closed [J8]. */
static int repair_start(struct ordfs *fs, struct handle **h)
{
	return journal_start(fs->journal, handle_credits(fs), h);
}

static int repair_stop(struct handle *h, int err)
{
	int serr = journal_stop(h);
	return err ? err : serr;
}

struct entry_op {
	const struct check_entry_fix *e;
	bool retype;
};

static int do_entry(struct ordfs *fs, void *arg)
{
	const struct entry_op *op = arg;
	struct inode *dir;
	struct handle *h;
	int err = inode_get(fs, op->e->dir, &dir);
	if (err)
		return err;
	size_t len = strlen(op->e->name);
	ordfs_rwlock_wrlock(&dir->lock);
	err = repair_start(fs, &h);
	if (!err) {
		if (op->retype)
			err = dir_replace(fs, h, dir, op->e->name, len, op->e->ino, op->e->dtype);
		else
			err = dir_remove(fs, h, dir, op->e->name, len, NULL);
		err = repair_stop(h, err);
	}
	ordfs_rwlock_unlock(&dir->lock);
	inode_put_flags(fs, dir, INODE_PUT_NO_EVICT);
	return err;
}

struct adopt_op {
	struct inode *lf;
	uint32_t ino;
};

/* Links an unreachable inode into lost+found as "#INO". */
static int do_adopt(struct ordfs *fs, void *arg)
{
	const struct adopt_op *op = arg;
	struct inode *inode;
	struct handle *h;
	int err = inode_get(fs, op->ino, &inode);
	if (err)
		return err;
	char name[16];
	snprintf(name, sizeof(name), "#%u", op->ino);
	ordfs_rwlock_wrlock(&op->lf->lock);
	ordfs_rwlock_wrlock(&inode->lock);
	err = repair_start(fs, &h);
	if (err)
		goto out;
	err = dir_add(fs, h, op->lf, name, strlen(name), op->ino, check_dtype_of_mode(inode->d.mode));
	if (!err && S_ISDIR(inode->d.mode)) {
		inode->d.parent = op->lf->ino;
		op->lf->d.links++;
		err = inode_write(fs, h, op->lf, INODE_WRITE_DATASYNC);
	}
	if (!err) {
		/* Stage C sets the exact count next round; not 0 meanwhile. */
		if (inode->d.links == 0)
			inode->d.links = 1;
		inode->d.flags &= ~ORDFS_INODE_ORPHAN;
		err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	}
	err = repair_stop(h, err);
out:
	ordfs_rwlock_unlock(&inode->lock);
	ordfs_rwlock_unlock(&op->lf->lock);
	inode_put_flags(fs, inode, INODE_PUT_NO_EVICT);
	return err;
}

static int do_inode_fix(struct ordfs *fs, void *arg)
{
	const struct check_inode_fix *fix = arg;
	struct inode *inode;
	struct handle *h;
	int err = inode_get(fs, fix->ino, &inode);
	if (err)
		return err;
	ordfs_rwlock_wrlock(&inode->lock);
	err = repair_start(fs, &h);
	if (err) {
		ordfs_rwlock_unlock(&inode->lock);
		inode_put_flags(fs, inode, INODE_PUT_NO_EVICT);
		return err;
	}
	if (fix->fix_links)
		inode->d.links = fix->links;
	if (fix->fix_parent)
		inode->d.parent = fix->parent;
	if (fix->drop_xattr) {
		/* The block stays marked until stage D frees it.  (A block
		 * count found by the check, below, already leaves it out.) */
		inode->d.blocks -= inode->d.blocks ? 1 : 0;
		inode->d.xattr_block = 0;
	}
	if (fix->fix_blocks)
		inode->d.blocks = fix->blocks;
	if (fix->fix_size)
		inode->size = inode->d.size = fix->size;
	if (fix->fix_flags)
		inode->d.attr_flags = fix->attr_flags;
	err = inode_write(fs, h, inode, INODE_WRITE_DATASYNC);
	err = repair_stop(h, err);
	ordfs_rwlock_unlock(&inode->lock);
	/* A link count fixed to 0 frees the inode at this put (orphan rules),
	 * in handles of its own: ours is closed. */
	inode_put(fs, inode);
	return err;
}

/* A directory called name in the root, with a reference (created if
 * missing); -ENOTDIR if the name is taken by something else. */
static int root_dir_named(struct ordfs *fs, struct inode *root, const char *name,
			  struct inode **out)
{
	int err = ordfs_lookup(fs, root, name, out);
	if (err == -ENOENT) {
		struct ordfs_cred cred = { 0, 0 };
		return ordfs_mkdir(fs, root, name, 0700, &cred, out);
	}
	if (!err && !S_ISDIR((*out)->d.mode)) {
		inode_put(fs, *out);
		err = -ENOTDIR;
	}
	return err;
}

/* /lost+found with a reference, created if missing; if that name is
 * taken by something that is not a directory, or by a directory the
 * lookup refuses (its '..' is not the root: a second name of a directory
 * elsewhere, which a later round's '..' fix settles), /lost+found.fsck. */
static int lost_and_found(struct ordfs *fs, struct inode **out)
{
	struct inode *root;
	*out = NULL;
	int err = inode_get(fs, ORDFS_ROOT_INO, &root);
	if (err)
		return err;
	err = root_dir_named(fs, root, LOST_AND_FOUND, out);
	if (err == -ENOTDIR || err == -EUCLEAN)
		err = root_dir_named(fs, root, LOST_AND_FOUND ".fsck", out);
	if (err)
		*out = NULL;
	inode_put(fs, root);
	return err;
}

/* ---- B0: a directory's index rebuilt ---------------------------------------- */

struct rehash_entry {
	uint32_t ino;
	uint8_t dtype;
	uint8_t len;
	char name[256];
};

struct rehash_list {
	struct rehash_entry *v;
	uint32_t n, cap;
	bool drop_bad;  /* leave out entries whose hash is not their name's */
	bool last_bad;  /* the entry rehash_collect gets next is one */
	uint32_t max_ino;
	int err;
};

static int rehash_collect(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype)
{
	struct rehash_list *l = ctx;
	bool bad = l->last_bad;
	l->last_bad = false;
	if (bad && l->drop_bad)
		return 0;
	/* What dir_add would refuse (an inode number out of range, a type
	 * past DT_* or a name no entry may have) is left out: the check
	 * finds it pointing at nothing, and the name would go anyway. */
	if (ino < ORDFS_ROOT_INO || ino > l->max_ino || dtype > 15 || dir_check_name(name, len))
		return 0;
	if (len == 0 || len > 255) {
		l->err = -EUCLEAN; /* the check saw no such entry */
		return 1;
	}
	if (fx_grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v))) {
		l->err = -ENOMEM;
		return 1;
	}
	struct rehash_entry *e = &l->v[l->n++];
	e->ino = ino;
	e->dtype = dtype;
	e->len = (uint8_t)len;
	memcpy(e->name, name, len);
	return 0;
}

static void rehash_problem(void *ctx, uint64_t lblk, const char *what)
{
	struct rehash_list *l = ctx;
	(void)lblk;
	if (strcmp(what, DIR_VERIFY_BAD_HASH) != 0)
		l->err = -EUCLEAN; /* not what the check found: leave it */
	else
		l->last_bad = true; /* dir_verify tells it before the entry */
}

/* Rebuilds directory r->dir's index with the superblock's hash seed, as
 * e2fsck -D: its entries are read (the check found the directory sound
 * but for hashes), its blocks freed, and every entry added again (with
 * drop_bad, every entry whose hash was right), under the directory's
 * lock.  A name left out, or not added again after a crash part way, is
 * found unreachable by the next check: its inode goes to lost+found. */
static int do_rehash(struct ordfs *fs, const struct check_rehash *r, uint32_t *fixes)
{
	struct inode *dir;
	int err = inode_get(fs, r->dir, &dir);
	if (err)
		return err;
	struct rehash_list l = { .drop_bad = r->drop_bad, .max_ino = fs->sb.inode_count };
	ordfs_rwlock_wrlock(&dir->lock);
	struct dir_verify_ops ops = { rehash_collect, rehash_problem, &l };
	err = dir_verify(fs, dir, &ops);
	if (err == -EUCLEAN && !l.err)
		err = 0; /* the hashes it was asked to cure */
	if (!err)
		err = l.err;
	if (!err)
		err = ordfs_truncate_locked(fs, dir, 0);
	for (uint32_t i = 0; i < l.n && !err; i++) {
		struct handle *h;
		err = repair_start(fs, &h);
		if (!err) {
			err = dir_add(fs, h, dir, l.v[i].name, l.v[i].len, l.v[i].ino, l.v[i].dtype);
			err = repair_stop(h, err);
		}
	}
	ordfs_rwlock_unlock(&dir->lock);
	inode_put_flags(fs, dir, INODE_PUT_NO_EVICT);
	free(l.v);
	if (!err)
		++*fixes;
	return err;
}

static int stage_mounted(struct blockdev *bd, const struct check_findings *f, uint32_t *fixes)
{
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	opts.fsck_repair = true;
	struct ordfs *fs;
	const char *why;
	int err = ordfs_mount(bd, &opts, &fs, &why);
	if (err)
		return err;
	/* B0: indexes rebuilt, alone in their round (names are looked up by
	 * their hash: nothing else here may run before the index is right). */
	for (uint32_t i = 0; i < f->rehash_dirs.n && !err; i++)
		err = do_rehash(fs, &f->rehash_dirs.v[i], fixes);
	if (f->rehash_dirs.n)
		goto out;
	/* B: names. */
	for (uint32_t i = 0; i < f->drop_entries.n && !err; i++, ++*fixes) {
		struct entry_op op = { &f->drop_entries.v[i], false };
		err = do_entry(fs, &op);
		if (err == -ENOENT)
			err = 0; /* gone already (a duplicate finding) */
	}
	for (uint32_t i = 0; i < f->retype_entries.n && !err; i++, ++*fixes) {
		struct entry_op op = { &f->retype_entries.v[i], true };
		err = do_entry(fs, &op);
	}
	if (!err && f->unreachable.n) {
		struct inode *lf = NULL;
		err = lost_and_found(fs, &lf);
		for (uint32_t i = 0; i < f->unreachable.n && !err; i++, ++*fixes) {
			struct adopt_op op = { lf, f->unreachable.v[i] };
			if (op.ino != lf->ino)
				err = do_adopt(fs, &op);
		}
		if (lf)
			inode_put(fs, lf);
	}
	/* C: inode fields (only when no names changed: their counts are
	 * recomputed by the next round's check). */
	bool names_changed = f->drop_entries.n || f->retype_entries.n || f->unreachable.n;
	for (uint32_t i = 0; i < f->inode_fixes.n && !err && !names_changed; i++, ++*fixes) {
		struct check_inode_fix fix = f->inode_fixes.v[i];
		err = do_inode_fix(fs, &fix);
	}
out:
	if (err)
		ordfs_report_error(fs, err, "fsck's repair");
	int uerr = ordfs_unmount(fs);
	return err ? err : uerr;
}

/* ---- the rounds ------------------------------------------------------------- */

int ordfs_repair(struct blockdev *bd, unsigned flags,
		 void (*report)(void *ctx, enum check_problem code, const char *msg), void *ctx,
		 struct repair_result *out)
{
	bool preen = flags & REPAIR_PREEN;
	memset(out, 0, sizeof(*out));
	int err = 0;
	for (;;) {
		struct check_findings f;
		struct check_result res;
		memset(&res, 0, sizeof(res));
		res.report = out->rounds == 0 ? report : NULL;
		res.ctx = ctx;
		res.findings = &f;
		err = ordfs_check(bd, &res);
		out->rounds++;
		out->problems = res.problems;
		if (err || res.problems == 0 || out->rounds > MAX_ROUNDS) {
			check_findings_free(&f);
			break;
		}
		struct ordfs_super sb;
		const char *why;
		err = ordfs_read_super(bd, false, &sb, &why);
		uint32_t before = out->fixes;
		if (err)
			;
		else if (f.root_unusable) /* loses the old root's names: not -p */
			err = preen ? 0 : stage_new_root(bd, &sb, &out->fixes);
		else if (f.clear_inodes.n || f.empty_inodes.n || f.clone_blocks.n ||
			 f.strip_flags.n || f.dir_sizes.n)
			err = preen ? 0 : stage_inodes(bd, &sb, &f, &out->fixes);
		else if (f.bitmaps_wrong || f.summary_wrong || f.clean_with_orphans ||
			 f.super_copy_stale || f.journal_super_copy_stale || f.file_flags_feature)
			err = stage_bitmaps(bd, &f, &out->fixes);
		else if (f.rehash_dirs.n) /* loses nothing: -p too */
			err = stage_mounted(bd, &f, &out->fixes);
		else if (f.drop_entries.n || f.retype_entries.n || f.unreachable.n)
			err = preen ? 0 : stage_mounted(bd, &f, &out->fixes);
		else if (f.inode_fixes.n)
			err = stage_mounted(bd, &f, &out->fixes);
		check_findings_free(&f);
		if (err || out->fixes == before)
			break; /* nothing more this code can fix */
	}
	return err;
}
