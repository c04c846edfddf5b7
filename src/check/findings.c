/*
 * findings.c - what a check records for a repair (check.h: struct
 * check_findings): the helpers the passes call next to each problem.
 * Rules: without findings (a plain check) every helper does nothing; a
 * finding that cannot be recorded (out of memory) counts as unfixable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"

int fx_grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
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


void fx_unfixable(struct checker *c)
{
	if (c->fx)
		c->fx->unfixable++;
}

void fx_empty_inode(struct checker *c, uint32_t ino)
{
	if (!c->fx)
		return;
	for (uint32_t i = 0; i < c->fx->empty_inodes.n; i++)
		if (c->fx->empty_inodes.v[i] == ino)
			return;
	FX_PUSH(c, c->fx->empty_inodes, ino);
}

struct check_inode_fix *fx_inode(struct checker *c, uint32_t ino)
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

void fx_entry(struct checker *c, bool retype, uint32_t dir, const char *name, size_t len,
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
	free(f->clone_blocks.v);
	free(f->strip_flags.v);
	free(f->dir_sizes.v);
	free(f->drop_entries.v);
	free(f->retype_entries.v);
	free(f->unreachable.v);
	free(f->rehash_dirs.v);
	free(f->inode_fixes.v);
	free(f->blocks_found);
	free(f->inodes_found);
	memset(f, 0, sizeof(*f));
}
