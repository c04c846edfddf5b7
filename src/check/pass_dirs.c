/*
 * pass_dirs.c - pass 3: directories, from the root: every block verified,
 * every entry pointing at an inode in use of the right type, each
 * directory reached once, '..' right.
 * Hands on: info[].refs and .subdirs (entries found), .reached_from.
 * Findings: names to remove or retype, directories to truncate (their
 * children become unreachable), directories whose index is to be rebuilt
 * (sound entries hashed with another seed), '..' to set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "check_internal.h"

struct dir_walk {
	struct checker *c;
	uint32_t dir;
	uint32_t *queue;
	uint32_t *qlen;
	uint32_t entries;    /* entries seen */
	uint32_t bad_hash;   /* entries whose hash is not their name's */
	uint32_t other_bad;  /* any other problem of the directory */
	bool last_bad_hash;  /* the entry entry_cb gets next has a bad hash */
	char (*bad)[80];     /* the first BAD_TOLD of them, told unless all are */
	uint32_t nbad;
};

#define BAD_TOLD 64u

static int entry_cb(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype)
{
	struct dir_walk *w = ctx;
	struct checker *c = w->c;
	int nlen = len > 64 ? 64 : (int)len;
	w->entries++;
	if (w->last_bad_hash && w->nbad < BAD_TOLD &&
	    (w->bad || (w->bad = calloc(BAD_TOLD, sizeof(*w->bad))))) {
		snprintf(w->bad[w->nbad++], sizeof(*w->bad), "'%.*s' (inode %u)", nlen, name, ino);
	}
	w->last_bad_hash = false;

	if (ino == 0 || ino > c->fs->sb.inode_count || !info_get(c, ino)->in_use) {
		problem(c, CHK_DIR_ENTRY, "dir %u: entry '%.*s' points at free inode %u", w->dir,
			nlen, name, ino);
		fx_entry(c, false, w->dir, name, len, ino, 0);
		return 0;
	}
	struct inode_info *ii = info_mut(c, ino);
	bool dir = S_ISDIR(ii->mode);
	if (dtype != check_dtype_of_mode(ii->mode)) {
		problem(c, CHK_DIR_ENTRY, "dir %u: entry '%.*s' has the wrong file type", w->dir,
			nlen, name);
		/* A name that goes below (a directory reached already: itself,
		 * the root, an ancestor) is not retyped too: the repair would
		 * meet it gone. */
		if (!(dir && ii->reached_from))
			fx_entry(c, true, w->dir, name, len, ino, check_dtype_of_mode(ii->mode));
	}
	if (dir && ii->reached_from) {
		/* The later name goes (it adds no reference, no subdirectory). */
		problem(c, CHK_DIR_LOOP, "directory %u is reachable twice", ino);
		fx_entry(c, false, w->dir, name, len, ino, 0);
		return 0;
	}
	ii->refs++;
	if (dir) {
		info_mut(c, w->dir)->subdirs++;
		ii->reached_from = w->dir;
		w->queue[(*w->qlen)++] = ino;
	}
	return 0;
}

static void dir_problem_cb(void *ctx, uint64_t lblk, const char *what)
{
	struct dir_walk *w = ctx;
	if (strcmp(what, DIR_VERIFY_BAD_HASH) == 0) {
		w->bad_hash++; /* told once for the directory, below */
		w->last_bad_hash = true;
		return;
	}
	w->other_bad++;
	problem(w->c, CHK_DIR_STRUCT, "dir %u block %llu: %s", w->dir, (unsigned long long)lblk,
		what);
	fx_empty_inode(w->c, w->dir); /* its entries' inodes go to lost+found */
}

void pass_directories(struct checker *c)
{
	uint32_t n = c->fs->sb.inode_count;
	uint32_t *queue = malloc(((size_t)n + 1) * sizeof(*queue));
	uint32_t qlen = 0;
	if (!queue) {
		problem(c, CHK_SUPER, "out of memory walking directories");
		return;
	}
	if (!info_get(c, ORDFS_ROOT_INO)->in_use || !S_ISDIR(info_get(c, ORDFS_ROOT_INO)->mode)) {
		problem(c, CHK_DIR_STRUCT, "root inode is not a directory");
		fx_unfixable(c);
		free(queue);
		return;
	}
	info_mut(c, ORDFS_ROOT_INO)->reached_from = ORDFS_ROOT_INO;
	queue[qlen++] = ORDFS_ROOT_INO;
	for (uint32_t qi = 0; qi < qlen; qi++) {
		uint32_t ino = queue[qi];
		struct inode *dir;
		if (inode_get(c->fs, ino, &dir) != 0)
			continue;
		struct dir_walk w = { .c = c, .dir = ino, .queue = queue, .qlen = &qlen };
		struct dir_verify_ops ops = { entry_cb, dir_problem_cb, &w };
		int err = dir_verify(c->fs, dir, &ops);
		if (err && err != -EUCLEAN) {
			problem(c, CHK_DIR_STRUCT, "dir %u unreadable (%d)", ino, err);
			fx_empty_inode(c, ino);
		} else if (w.bad_hash && !w.other_bad) {
			/* Every name hashed with another seed than the
			 * superblock's (its hash_seed changed): the index is
			 * rebuilt from them, as e2fsck -D does.  Some: it is
			 * rebuilt without them (a damaged name or hash). */
			bool all = w.bad_hash == w.entries;
			if (all)
				problem(c, CHK_DIR_STRUCT, "dir %u: all %u entries hashed with another "
					"seed than the superblock's: index to rebuild", ino, w.bad_hash);
			for (uint32_t i = 0; !all && i < w.nbad; i++)
				problem(c, CHK_DIR_STRUCT, "dir %u: entry %s: %s: left out of its index",
					ino, w.bad[i], DIR_VERIFY_BAD_HASH);
			if (!all && w.bad_hash > w.nbad)
				problem(c, CHK_DIR_STRUCT, "dir %u: %u more entries whose hash does not "
					"match their name", ino, w.bad_hash - w.nbad);
			struct check_rehash r = { .dir = ino, .drop_bad = !all };
			FX_PUSH(c, c->fx->rehash_dirs, r);
		} else if (w.bad_hash) {
			/* Told too, though the directory is emptied anyway. */
			problem(c, CHK_DIR_STRUCT, "dir %u: %u entries whose hash does not match "
				"their name", ino, w.bad_hash);
		}
		free(w.bad);
		inode_put(c->fs, dir);
		const struct inode_info *di = info_get(c, ino);
		if (di->parent != di->reached_from) {
			problem(c, CHK_DIR_PARENT, "dir %u: '..' is %u, reached from %u", ino,
				di->parent, di->reached_from);
			struct check_inode_fix *fix = fx_inode(c, ino);
			if (fix) {
				fix->fix_parent = true;
				fix->parent = di->reached_from;
			}
		}
	}
	free(queue);
}
