/*
 * pass_links.c - pass 4: link counts against the entries found, and
 * inodes in use that nothing reaches (orphans being deleted excepted).
 * Findings: link counts to set, inodes for /lost+found.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"

void pass_links(struct checker *c)
{
	for (uint32_t ino = ORDFS_ROOT_INO; ino <= c->fs->sb.inode_count; ino++) {
		const struct inode_info *ii = info_get(c, ino);
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
