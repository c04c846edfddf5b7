/*
 * check_internal.h - what the checker's passes share (not for use outside
 * src/check/).
 *
 * Owns: the checker's state (struct checker), problem reporting, and the
 * findings helpers that record what a repair can act on.  Each pass is a
 * file of its own (pass_*.c); check.c runs them in order.
 */
#ifndef ORDFS_CHECK_INTERNAL_H
#define ORDFS_CHECK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../alloc/alloc.h"
#include "../blockdev/blockdev.h"
#include "../dir/dir.h"
#include "../extent/extent.h"
#include "xattr/xattr.h"

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
	/* What pass 1 found per inode, in pages of INFO_PAGE inodes
	 * allocated for the pages that hold an inode in use: memory follows
	 * the inodes in use, not the inode count (2^30 on a 16 TiB image:
	 * 28 GiB as one array).  info_get / info_mut. */
	struct inode_info **info_pages;
	uint32_t info_npages;
	bool info_oom;           /* a page could not be allocated */
	uint8_t *blocks;         /* bit per block: found in use */
	uint64_t blocks_found;
	/* per-inode walk state */
	uint32_t cur_ino;
	bool cur_clonable;        /* its extents are all in the inode (depth 0) */
	uint64_t cur_blocks, cur_last_lblk;
	bool cur_has_blocks;
};

#define INFO_PAGE 4096u

/* The record of inode ino (all zeros where nothing was recorded). */
static inline const struct inode_info *info_get(const struct checker *c, uint32_t ino)
{
	static const struct inode_info none;
	const struct inode_info *page = c->info_pages[ino / INFO_PAGE];
	return page ? &page[ino % INFO_PAGE] : &none;
}

/* The record of inode ino, to change (its page allocated if need be; out
 * of memory: a scratch record, and info_oom makes the check fail). */
struct inode_info *info_mut(struct checker *c, uint32_t ino);

/* Reads an on-disk bitmap in order, one bitmap block held at a time (the
 * passes compare every bit; a lookup per bit through the allocator took
 * a lock each time). */
struct bitmap_cursor {
	uint64_t start;      /* first bitmap block */
	uint32_t blocks;     /* the bitmap's length in blocks (the area) */
	bool block_bitmap;   /* block i is group i's (ordfs_block_bitmap_block:
				in the area, or a group bitmap block past it) */
	struct buf *held;    /* the block of the last bit asked, or NULL */
	uint64_t index;      /* which block of the bitmap `held` is */
	uint64_t ahead_to;   /* blocks of the bitmap read ahead: [0, ahead_to) */
};
/* Bit i of the bitmap; an unreadable block reads as set, as the allocator
 * treats it. */
bool bitmap_cursor_bit(struct checker *c, struct bitmap_cursor *bc, uint64_t i);
void bitmap_cursor_done(struct checker *c, struct bitmap_cursor *bc);

/* Is the root inode's slot on bd unreadable, free or no directory (the
 * superblock itself reads)?  Read from the device, not through a mount. */
bool root_slot_unusable(struct blockdev *bd);
/* Counts and reports one problem (printf-style message). */
void problem(struct checker *c, enum check_problem code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void progress(struct checker *c, unsigned pass, uint64_t done, uint64_t total);
/* The dirent type of a mode (DT_*). */
uint8_t check_dtype_of_mode(uint16_t mode);

/* ---- findings (findings.c) ---- */
int fx_grow(void **v, uint32_t *cap, uint32_t need, size_t elem);
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
void fx_unfixable(struct checker *c);
/* The inode is to be truncated to nothing (once, however often found). */
void fx_empty_inode(struct checker *c, uint32_t ino);
/* The field fixes of ino, created on first use (NULL without findings). */
struct check_inode_fix *fx_inode(struct checker *c, uint32_t ino);
/* A name to remove (or, with retype, to point at ino with dtype). */
void fx_entry(struct checker *c, bool retype, uint32_t dir, const char *name, size_t len,
	      uint32_t ino, uint8_t dtype);

/* ---- the passes, in order ---- */
void pass_inodes(struct checker *c);
void pass_blocks(struct checker *c);
void pass_directories(struct checker *c);
void pass_links(struct checker *c);
void pass_bitmap(struct checker *c);

#endif
