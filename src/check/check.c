/*
 * check.c - whole-image consistency check (see check.h).
 *
 * Owns: the passes, run on a read-only mount of the image:
 *   1. inodes: every slot decodes or is free; in use <=> inode bitmap;
 *   2. blocks: every in-use inode's extent tree walked; each block in the
 *      data area, claimed once, blocks count and size consistent;
 *   3. directories: structure verified, entries point at in-use inodes of
 *      the right type, each directory reached once, ".." right;
 *   4. link counts and reachability (orphans excepted);
 *   5. block bitmap against the blocks found; summary counts.
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

#include "check.h"
#include "../fs.h"
#include "../inode.h"
#include "../alloc/alloc.h"
#include "../blockdev/blockdev.h"
#include "../dir/dir.h"
#include "../extent/extent.h"
#include "../xattr.h"

struct inode_info {
	uint16_t mode;
	uint32_t links;       /* recorded */
	uint32_t refs;        /* entries found pointing at it */
	uint32_t subdirs;     /* directories: child directories found */
	uint32_t parent;      /* directories: recorded ".." */
	uint32_t reached_from;/* directories: the directory whose entry we used */
	bool in_use, orphan;
};

struct checker {
	struct ordfs *fs;
	struct check_result *res;
	struct check_findings *fx; /* NULL unless a repair asked */
	struct inode_info *info; /* index: inode number */
	uint8_t *blocks;         /* bit per block: found in use */
	uint64_t blocks_found;
	/* per-inode walk state */
	uint32_t cur_ino;
	uint64_t cur_blocks, cur_last_lblk;
	bool cur_has_blocks;
};

static void problem(struct checker *c, enum check_problem code, const char *fmt, ...)
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

/* ---- findings for a repair ------------------------------------------------ */

static int fx_grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t ncap = *cap ? *cap * 2 : 16;
	void *nv = realloc(*v, (size_t)ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* Appends to a findings list; out of memory marks the finding unfixable. */
#define FX_PUSH(c, vec, val)                                                            \
	do {                                                                            \
		if (!(c)->fx)                                                           \
			break;                                                          \
		if (fx_grow((void **)&(vec).v, &(vec).cap, (vec).n + 1, sizeof(*(vec).v))) \
			(c)->fx->unfixable++;                                           \
		else                                                                    \
			(vec).v[(vec).n++] = (val);                                     \
	} while (0)

static void fx_unfixable(struct checker *c)
{
	if (c->fx)
		c->fx->unfixable++;
}

static void fx_empty_inode(struct checker *c, uint32_t ino)
{
	if (!c->fx)
		return;
	for (uint32_t i = 0; i < c->fx->empty_inodes.n; i++)
		if (c->fx->empty_inodes.v[i] == ino)
			return;
	FX_PUSH(c, c->fx->empty_inodes, ino);
}

static struct check_inode_fix *fx_inode(struct checker *c, uint32_t ino)
{
	if (!c->fx)
		return NULL;
	struct check_findings *f = c->fx;
	for (uint32_t i = 0; i < f->inode_fixes.n; i++)
		if (f->inode_fixes.v[i].ino == ino)
			return &f->inode_fixes.v[i];
	struct check_inode_fix fix = { .ino = ino };
	FX_PUSH(c, f->inode_fixes, fix);
	return f->inode_fixes.n && f->inode_fixes.v[f->inode_fixes.n - 1].ino == ino
		       ? &f->inode_fixes.v[f->inode_fixes.n - 1]
		       : NULL;
}

static void fx_entry(struct checker *c, bool retype, uint32_t dir, const char *name, size_t len,
		     uint32_t ino, uint8_t dtype)
{
	if (!c->fx)
		return;
	struct check_entry_fix e = { .dir = dir, .ino = ino, .dtype = dtype };
	if (len >= sizeof(e.name)) {
		fx_unfixable(c);
		return;
	}
	memcpy(e.name, name, len);
	e.name[len] = 0;
	if (retype)
		FX_PUSH(c, c->fx->retype_entries, e);
	else
		FX_PUSH(c, c->fx->drop_entries, e);
}

void check_findings_free(struct check_findings *f)
{
	free(f->clear_inodes.v);
	free(f->empty_inodes.v);
	free(f->drop_entries.v);
	free(f->retype_entries.v);
	free(f->unreachable.v);
	free(f->inode_fixes.v);
	free(f->blocks_found);
	free(f->inodes_found);
	memset(f, 0, sizeof(*f));
}

static bool test_and_set_block(struct checker *c, uint64_t b)
{
	uint8_t mask = (uint8_t)(1u << (b % 8));
	bool was = c->blocks[b / 8] & mask;
	c->blocks[b / 8] |= mask;
	return was;
}

/* Claims [start, start + len) for the current inode. */
static void claim_blocks(struct checker *c, uint64_t start, uint64_t len)
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
			fx_empty_inode(c, c->cur_ino); /* the later claimant */
		} else
			c->blocks_found++;
	}
	c->cur_blocks += len;
}

/* ---- pass 1: inodes ------------------------------------------------------ */

static void progress(struct checker *c, unsigned pass, uint64_t done, uint64_t total)
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

static void pass_inodes(struct checker *c)
{
	struct ordfs *fs = c->fs;
	for (uint32_t ino = 1; ino <= fs->sb.inode_count; ino++) {
		if ((ino & 4095) == 0)
			progress(c, 1, ino, fs->sb.inode_count);
		struct ordfs_inode d;
		int err = inode_read_raw(fs, ino, &d);
		bool marked = alloc_inode_in_use(fs->alloc, ino);
		if (err == -EUCLEAN) {
			problem(c, CHK_INODE_CORRUPT, "inode %u is corrupt", ino);
			if (ino == ORDFS_ROOT_INO || ino == 1)
				fx_unfixable(c);
			else
				FX_PUSH(c, c->fx->clear_inodes, ino);
			continue;
		}
		bool used = err == 0;
		if (ino == 1) {
			if (c->fx)
				c->fx->inodes_found[0] |= 1u; /* reserved: always in use */
			if (!marked)
				problem(c, CHK_INODE_BITMAP, "reserved inode 1 not marked in use");
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
		struct inode_info *ii = &c->info[ino];
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
}

/* ---- pass 2: blocks of each inode ---------------------------------------- */

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
	claim_blocks(c, blockno, 1);
	return 0;
}

static int ext_cb(void *ctx, const struct ordfs_extent *e)
{
	struct checker *c = ctx;
	claim_blocks(c, e->physical, e->len);
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
	c->cur_blocks = 0;
	c->cur_has_blocks = false;
	c->cur_last_lblk = 0;

	if (inode->d.xattr_block) {
		claim_blocks(c, inode->d.xattr_block, 1);
		if (xattr_verify(c->fs, inode) != 0) {
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

static void pass_blocks(struct checker *c)
{
	for (uint32_t ino = 1; ino <= c->fs->sb.inode_count; ino++) {
		if (!c->info[ino].in_use)
			continue;
		struct inode *inode;
		if (inode_get(c->fs, ino, &inode) != 0)
			continue;
		check_inode_blocks(c, inode);
		inode_put(c->fs, inode);
	}
}

/* ---- pass 3: directories ------------------------------------------------ */

struct dir_walk {
	struct checker *c;
	uint32_t dir;
	uint32_t *queue;
	uint32_t *qlen;
};

static uint8_t dtype_of_mode(uint16_t mode)
{
	return S_ISREG(mode) ? DT_REG : S_ISDIR(mode) ? DT_DIR : S_ISLNK(mode) ? DT_LNK
	     : S_ISCHR(mode) ? DT_CHR : S_ISBLK(mode) ? DT_BLK : S_ISFIFO(mode) ? DT_FIFO
	     : S_ISSOCK(mode) ? DT_SOCK : DT_UNKNOWN;
}

static int entry_cb(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype)
{
	struct dir_walk *w = ctx;
	struct checker *c = w->c;
	int nlen = len > 64 ? 64 : (int)len;

	if (ino == 0 || ino > c->fs->sb.inode_count || !c->info[ino].in_use) {
		problem(c, CHK_DIR_ENTRY, "dir %u: entry '%.*s' points at free inode %u", w->dir,
			nlen, name, ino);
		fx_entry(c, false, w->dir, name, len, ino, 0);
		return 0;
	}
	struct inode_info *ii = &c->info[ino];
	if (dtype != dtype_of_mode(ii->mode)) {
		problem(c, CHK_DIR_ENTRY, "dir %u: entry '%.*s' has the wrong file type", w->dir,
			nlen, name);
		fx_entry(c, true, w->dir, name, len, ino, dtype_of_mode(ii->mode));
	}
	ii->refs++;
	if (S_ISDIR(ii->mode)) {
		c->info[w->dir].subdirs++;
		if (ii->reached_from) {
			problem(c, CHK_DIR_LOOP, "directory %u is reachable twice", ino);
			/* The later name goes; so does the reference it added. */
			ii->refs--;
			c->info[w->dir].subdirs--;
			fx_entry(c, false, w->dir, name, len, ino, 0);
			return 0;
		}
		ii->reached_from = w->dir;
		w->queue[(*w->qlen)++] = ino;
	}
	return 0;
}

static void dir_problem_cb(void *ctx, uint64_t lblk, const char *what)
{
	struct dir_walk *w = ctx;
	problem(w->c, CHK_DIR_STRUCT, "dir %u block %llu: %s", w->dir, (unsigned long long)lblk,
		what);
	fx_empty_inode(w->c, w->dir); /* its entries' inodes go to lost+found */
}

static void pass_directories(struct checker *c)
{
	uint32_t n = c->fs->sb.inode_count;
	uint32_t *queue = malloc(((size_t)n + 1) * sizeof(*queue));
	uint32_t qlen = 0;
	if (!queue) {
		problem(c, CHK_SUPER, "out of memory walking directories");
		return;
	}
	if (!c->info[ORDFS_ROOT_INO].in_use || !S_ISDIR(c->info[ORDFS_ROOT_INO].mode)) {
		problem(c, CHK_DIR_STRUCT, "root inode is not a directory");
		fx_unfixable(c);
		free(queue);
		return;
	}
	c->info[ORDFS_ROOT_INO].reached_from = ORDFS_ROOT_INO;
	queue[qlen++] = ORDFS_ROOT_INO;
	for (uint32_t qi = 0; qi < qlen; qi++) {
		uint32_t ino = queue[qi];
		struct inode *dir;
		if (inode_get(c->fs, ino, &dir) != 0)
			continue;
		struct dir_walk w = { c, ino, queue, &qlen };
		struct dir_verify_ops ops = { entry_cb, dir_problem_cb, &w };
		int err = dir_verify(c->fs, dir, &ops);
		if (err && err != -EUCLEAN) {
			problem(c, CHK_DIR_STRUCT, "dir %u unreadable (%d)", ino, err);
			fx_empty_inode(c, ino);
		}
		inode_put(c->fs, dir);
		if (c->info[ino].parent != c->info[ino].reached_from) {
			problem(c, CHK_DIR_PARENT, "dir %u: '..' is %u, reached from %u", ino,
				c->info[ino].parent, c->info[ino].reached_from);
			struct check_inode_fix *fix = fx_inode(c, ino);
			if (fix) {
				fix->fix_parent = true;
				fix->parent = c->info[ino].reached_from;
			}
		}
	}
	free(queue);
}

/* ---- pass 4: link counts and reachability --------------------------------- */

static void pass_links(struct checker *c)
{
	for (uint32_t ino = ORDFS_ROOT_INO; ino <= c->fs->sb.inode_count; ino++) {
		struct inode_info *ii = &c->info[ino];
		if (!ii->in_use)
			continue;
		uint32_t expect = S_ISDIR(ii->mode) ? (ii->refs || ino == ORDFS_ROOT_INO ? 2 : 0) +
							      ii->subdirs
						    : ii->refs;
		if (ii->refs == 0 && ino != ORDFS_ROOT_INO) {
			if (!ii->orphan || ii->links != 0) {
				problem(c, CHK_UNREACHABLE, "inode %u is in use but unreachable", ino);
				FX_PUSH(c, c->fx->unreachable, ino);
			}
			continue;
		}
		if (ii->links != expect) {
			problem(c, CHK_LINK_COUNT, "inode %u: link count %u, should be %u", ino,
				ii->links, expect);
			struct check_inode_fix *fix = fx_inode(c, ino);
			if (fix) {
				fix->fix_links = true;
				fix->links = expect;
			}
		}
	}
}

/* ---- pass 5: bitmaps and summary ----------------------------------------- */

static void pass_bitmap(struct checker *c)
{
	const struct ordfs_super *sb = &c->fs->sb;
	uint64_t used = 0, mismatches = 0;
	for (uint64_t b = 0; b < sb->block_count; b++) {
		bool meta = b < sb->data_start || b == sb->block_count - 1;
		bool found = meta || (c->blocks[b / 8] >> (b % 8)) & 1;
		bool marked = alloc_block_in_use(c->fs->alloc, b);
		used += found;
		if (found != marked && mismatches++ < 20)
			problem(c, CHK_BLOCK_BITMAP, "block %llu is %s but the bitmap says %s",
				(unsigned long long)b, found ? "in use" : "free",
				marked ? "in use" : "free");
		if (found && c->fx && c->fx->blocks_found)
			c->fx->blocks_found[b / 8] |= (uint8_t)(1u << (b % 8));
	}
	if (mismatches && c->fx)
		c->fx->bitmaps_wrong = true;
	uint32_t bad = alloc_bad_bitmap_blocks(c->fs->alloc);
	if (bad) {
		problem(c, CHK_BLOCK_BITMAP, "%u bitmap blocks fail their checksum", bad);
		if (c->fx)
			c->fx->bitmaps_wrong = true;
	}
	if (mismatches > 20)
		problem(c, CHK_BLOCK_BITMAP, "%llu more block bitmap differences",
			(unsigned long long)(mismatches - 20));
	c->res->blocks_used = used;

	if (sb->state & ORDFS_STATE_CLEAN) {
		uint64_t free_blocks = sb->block_count - used;
		uint32_t free_inodes = sb->inode_count - (uint32_t)c->res->inodes_used - 1;
		bool wrong = false;
		if (sb->free_blocks != free_blocks) {
			problem(c, CHK_SUMMARY, "free blocks count %llu, should be %llu",
				(unsigned long long)sb->free_blocks, (unsigned long long)free_blocks);
			wrong = true;
		}
		if (sb->free_inodes != free_inodes) {
			problem(c, CHK_SUMMARY, "free inodes count %u, should be %u",
				sb->free_inodes, free_inodes);
			wrong = true;
		}
		if (wrong && c->fx)
			c->fx->summary_wrong = true;
		if (sb->orphan_head) {
			problem(c, CHK_ORPHAN, "clean image with a non-empty orphan list");
			if (c->fx)
				c->fx->clean_with_orphans = true;
		}
	}
}

int ordfs_check(struct blockdev *bd, struct check_result *res)
{
	struct ordfs_options opts;
	struct ordfs *fs;
	const char *why;

	res->problems = 0;
	res->inodes_used = res->dirs = res->files = res->blocks_used = 0;
	ordfs_options_default(&opts);
	opts.readonly = true;
	opts.check_mode = true;
	int err = ordfs_mount(bd, &opts, &fs, &why);
	if (err) {
		struct checker c0 = { .res = res, .fx = res->findings };
		problem(&c0, err == -EROFS ? CHK_JOURNAL_NOT_EMPTY : CHK_SUPER, "%s", why);
		fx_unfixable(&c0);
		return 0;
	}

	struct checker c = { .fs = fs, .res = res, .fx = res->findings };
	if (c.fx) {
		memset(c.fx, 0, sizeof(*c.fx));
		c.fx->blocks_found = calloc((fs->sb.block_count + 7) / 8, 1);
		c.fx->inodes_found = calloc(((size_t)fs->sb.inode_count + 7) / 8, 1);
		if (!c.fx->blocks_found || !c.fx->inodes_found) {
			err = -ENOMEM;
			goto out;
		}
	}
	c.info = calloc((size_t)fs->sb.inode_count + 1, sizeof(*c.info));
	c.blocks = calloc((fs->sb.block_count + 7) / 8, 1);
	if (!c.info || !c.blocks) {
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
out:
	free(c.info);
	free(c.blocks);
	ordfs_unmount(fs);
	return err;
}
