/*
 * pass_inodes.c - pass 1: every inode slot decodes (or is free), and in
 * use <=> marked in the inode bitmap.
 * Hands on: info[] (mode, links, parent, orphan flag) for every inode in
 * use, the counts of inodes, files and directories.
 * Findings: slots failing their checksum (cleared), bitmap disagreement.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"

void pass_inodes(struct checker *c)
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
