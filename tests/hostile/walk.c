/*
 * walk.c - one case's walk through the daemon's request handlers, and the
 * oracle.
 *
 * The walk: mount as the daemon does (main.c's checks: the superblock,
 * a journal superblock it can read, read-only when the image recorded an
 * error), then over the session (session.c): read everything reachable
 * from the root (READDIRPLUS, LOOKUP, GETATTR, OPEN, READ, READLINK,
 * LISTXATTR, GETXATTR), then write (CREATE, WRITE, MKDIR, SETXATTR,
 * FSYNC, RENAME, SETATTR truncate, UNLINK, RMDIR), FORGET everything the
 * kernel would hold, and unmount cleanly.
 *
 * The oracle (a crash, abort, sanitizer report or hang is the parent's
 * to see, hostile.c): no CREATE or MKDIR may be given an inode number the
 * walk saw live (a LOOKUP or READDIRPLUS entry with links); after the
 * clean unmount the image must mount again, and every file the walk read
 * whole and did not write, rename onto, truncate or unlink must read the
 * same bytes.  Allocation happens before anything is freed, so a changed
 * file is an overwrite of live data, not a legitimate reuse.
 *
 * Rules: bounded work per case (nodes, entries, bytes); every request's
 * error is tolerated (EUCLEAN is the right answer to damage) except where
 * the oracle says; the image bytes the caller passed end as the walk left
 * them (for fsck).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hostile.h"
#include "blockdev/blockdev.h"
#include "daemon/fuse_ops.h"
#include "fs.h"
#include "inode/inode.h"
#include "journal/journal.h"
#include "ops.h"
#include "super/super.h"
#include "check/scrub.h"

#define MAX_NODES 600
#define MAX_FILES 200
#define READ_MAX (256u * 1024)

struct node {
	uint64_t id;
	uint64_t nlookup;
	uint32_t mode, nlink;
	bool visited, touched;
	char name[64];
};

struct file_seen {
	uint64_t id;
	uint32_t crc;
	uint64_t size;
	char name[64];
};

struct walk {
	struct h_session *s;
	struct ordfs *fs;
	struct h_walk_result *r;
	struct node nodes[MAX_NODES];
	unsigned nnodes;
	struct file_seen files[MAX_FILES];
	unsigned nfiles;
	uint64_t dirs[64]; /* directories reached, for the writes */
	unsigned ndirs;
	uint8_t *buf;
};

static volatile int fatal_seen;

static void on_fatal(void *ctx, int err)
{
	(void)ctx;
	fatal_seen = err ? err : -EIO;
}

static void fail(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct walk *w, const char *fmt, ...)
{
	if (w->r->failure[0])
		return; /* the first one says it */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->r->failure, sizeof(w->r->failure), fmt, ap);
	va_end(ap);
	/* at once: the walk may not live to report it (a later FORGET of an
	 * overwritten inode aborts) */
	fprintf(stderr, "hostile: oracle: %s\n", w->r->failure);
	fflush(stderr);
}

static bool stopped(const struct walk *w)
{
	(void)w;
	return fatal_seen != 0;
}

static const char *op_name(uint32_t op)
{
	switch (op) {
	case FUSE_LOOKUP: return "LOOKUP";
	case FUSE_GETATTR: return "GETATTR";
	case FUSE_SETATTR: return "SETATTR";
	case FUSE_READLINK: return "READLINK";
	case FUSE_MKDIR: return "MKDIR";
	case FUSE_UNLINK: return "UNLINK";
	case FUSE_RMDIR: return "RMDIR";
	case FUSE_RENAME: return "RENAME";
	case FUSE_OPEN: return "OPEN";
	case FUSE_READ: return "READ";
	case FUSE_WRITE: return "WRITE";
	case FUSE_STATFS: return "STATFS";
	case FUSE_RELEASE: return "RELEASE";
	case FUSE_FSYNC: return "FSYNC";
	case FUSE_SETXATTR: return "SETXATTR";
	case FUSE_GETXATTR: return "GETXATTR";
	case FUSE_LISTXATTR: return "LISTXATTR";
	case FUSE_OPENDIR: return "OPENDIR";
	case FUSE_READDIRPLUS: return "READDIRPLUS";
	case FUSE_RELEASEDIR: return "RELEASEDIR";
	case FUSE_FSYNCDIR: return "FSYNCDIR";
	case FUSE_CREATE: return "CREATE";
	default: return "op";
	}
}

static int req(struct walk *w, uint32_t op, uint64_t node, const void *a, size_t alen,
	       const void *b, size_t blen, const void *c, size_t clen, const uint8_t **out,
	       size_t *out_len)
{
	const uint8_t *o;
	size_t ol;
	int err = h_request(w->s, op, node, a, alen, b, blen, c, clen, &o, &ol);
	w->r->requests++;
	if (err == -EUCLEAN || err == -EIO)
		w->r->euclean++;
	if (err == -EUCLEAN && !w->r->first_euclean[0])
		snprintf(w->r->first_euclean, sizeof(w->r->first_euclean), "%s node %llu",
			 op_name(op), (unsigned long long)node);
	if (out) {
		*out = o;
		*out_len = ol;
	}
	return err;
}

static struct node *node_of(struct walk *w, uint64_t id, bool add)
{
	for (unsigned i = 0; i < w->nnodes; i++)
		if (w->nodes[i].id == id)
			return &w->nodes[i];
	if (!add || w->nnodes >= MAX_NODES)
		return NULL;
	struct node *n = &w->nodes[w->nnodes++];
	memset(n, 0, sizeof(*n));
	n->id = id;
	return n;
}

/* The kernel took an entry: one lookup more on its node. */
static void took_entry(struct walk *w, const struct fuse_entry_out *e, const char *name)
{
	if (!e->nodeid)
		return;
	struct node *n = node_of(w, e->nodeid, true);
	if (!n)
		return;
	n->nlookup++;
	n->mode = e->attr.mode;
	n->nlink = e->attr.nlink;
	if (!n->name[0])
		snprintf(n->name, sizeof(n->name), "%s", name);
}

static int lookup(struct walk *w, uint64_t dir, const char *name, struct fuse_entry_out *e)
{
	const uint8_t *o;
	size_t ol;
	int err = req(w, FUSE_LOOKUP, dir, name, strlen(name) + 1, NULL, 0, NULL, 0, &o, &ol);
	if (err)
		return err;
	if (ol < sizeof(*e))
		return -EPROTO;
	memcpy(e, o, sizeof(*e));
	took_entry(w, e, name);
	return e->nodeid ? 0 : -ENOENT;
}

static uint32_t crc_of(const uint8_t *p, size_t len, uint32_t crc)
{
	return ordfs_crc32c(crc, p, len);
}

/* Reads a regular file whole (up to READ_MAX); records it when every
 * read succeeded. */
static void read_file(struct walk *w, struct node *n, uint64_t size)
{
	struct fuse_open_in oi = { .flags = O_RDONLY };
	const uint8_t *o;
	size_t ol;
	if (req(w, FUSE_OPEN, n->id, &oi, sizeof(oi), NULL, 0, NULL, 0, &o, &ol) ||
	    ol < sizeof(struct fuse_open_out))
		return;
	struct fuse_open_out oo;
	memcpy(&oo, o, sizeof(oo));
	uint32_t crc = 0;
	uint64_t off = 0;
	bool ok = true;
	while (off < size && off < READ_MAX && !stopped(w)) {
		struct fuse_read_in ri = { .fh = oo.fh, .offset = off, .size = 65536,
					   .flags = O_RDONLY };
		int err = req(w, FUSE_READ, n->id, &ri, sizeof(ri), NULL, 0, NULL, 0, &o, &ol);
		if (err) {
			ok = false;
			break;
		}
		if (ol == 0)
			break;
		crc = crc_of(o, ol, crc);
		off += ol;
	}
	struct fuse_release_in rl = { .fh = oo.fh, .flags = O_RDONLY };
	req(w, FUSE_RELEASE, n->id, &rl, sizeof(rl), NULL, 0, NULL, 0, NULL, NULL);
	if (ok && w->nfiles < MAX_FILES && off <= READ_MAX) {
		struct file_seen *f = &w->files[w->nfiles++];
		f->id = n->id;
		f->crc = crc;
		f->size = off;
		memcpy(f->name, n->name, sizeof(f->name));
	}
}

static void xattrs(struct walk *w, uint64_t id)
{
	struct fuse_getxattr_in gi = { .size = 0 };
	const uint8_t *o;
	size_t ol;
	if (req(w, FUSE_LISTXATTR, id, &gi, sizeof(gi), NULL, 0, NULL, 0, &o, &ol))
		return;
	gi.size = 4096;
	if (req(w, FUSE_LISTXATTR, id, &gi, sizeof(gi), NULL, 0, NULL, 0, &o, &ol) || ol > 4096)
		return;
	char list[4097];
	memcpy(list, o, ol);
	list[ol] = 0;
	for (size_t at = 0; at < ol && !stopped(w);) {
		const char *name = list + at;
		size_t len = strlen(name);
		struct fuse_getxattr_in g2 = { .size = 4096 };
		req(w, FUSE_GETXATTR, id, &g2, sizeof(g2), name, len + 1, NULL, 0, NULL, NULL);
		at += len + 1;
	}
}

/* One directory: READDIRPLUS through it, then LOOKUP and the per-type
 * reads of what it names; subdirectories are queued. */
static void walk_dir(struct walk *w, uint64_t dir, uint64_t *queue, unsigned *qn)
{
	struct fuse_open_in oi = { .flags = O_RDONLY | O_DIRECTORY };
	const uint8_t *o;
	size_t ol;
	if (req(w, FUSE_OPENDIR, dir, &oi, sizeof(oi), NULL, 0, NULL, 0, &o, &ol) ||
	    ol < sizeof(struct fuse_open_out))
		return;
	struct fuse_open_out oo;
	memcpy(&oo, o, sizeof(oo));
	if (w->ndirs < 64)
		w->dirs[w->ndirs++] = dir;
	char names[128][64];
	unsigned nn = 0;
	uint64_t off = 0;
	for (int round = 0; round < 40 && !stopped(w); round++) {
		struct fuse_read_in ri = { .fh = oo.fh, .offset = off, .size = 4096 };
		if (req(w, FUSE_READDIRPLUS, dir, &ri, sizeof(ri), NULL, 0, NULL, 0, &o, &ol) ||
		    ol == 0)
			break;
		uint8_t page[4096];
		memcpy(page, o, ol < sizeof(page) ? ol : sizeof(page));
		size_t at = 0;
		uint64_t last = off;
		while (at + FUSE_NAME_OFFSET_DIRENTPLUS <= ol) {
			struct fuse_direntplus *d = (struct fuse_direntplus *)(page + at);
			size_t rec = FUSE_DIRENTPLUS_SIZE(d);
			if (d->dirent.namelen > 255 || at + rec > ol)
				break;
			char name[256];
			memcpy(name, d->dirent.name, d->dirent.namelen);
			name[d->dirent.namelen] = 0;
			if (strcmp(name, ".") && strcmp(name, "..")) {
				took_entry(w, &d->entry_out, name);
				if (nn < 128 && d->dirent.namelen < 64)
					memcpy(names[nn++], name, d->dirent.namelen + 1u);
			}
			last = d->dirent.off;
			at += rec;
		}
		if (last == off)
			break;
		off = last;
	}
	struct fuse_release_in rl = { .fh = oo.fh };
	req(w, FUSE_RELEASEDIR, dir, &rl, sizeof(rl), NULL, 0, NULL, 0, NULL, NULL);
	for (unsigned i = 0; i < nn && !stopped(w); i++) {
		struct fuse_entry_out e;
		if (lookup(w, dir, names[i], &e))
			continue;
		struct node *n = node_of(w, e.nodeid, false);
		if (!n || n->visited)
			continue;
		n->visited = true;
		struct fuse_getattr_in gi = { 0 };
		req(w, FUSE_GETATTR, e.nodeid, &gi, sizeof(gi), NULL, 0, NULL, 0, NULL, NULL);
		xattrs(w, e.nodeid);
		if (S_ISREG(e.attr.mode))
			read_file(w, n, e.attr.size);
		else if (S_ISLNK(e.attr.mode))
			req(w, FUSE_READLINK, e.nodeid, NULL, 0, NULL, 0, NULL, 0, NULL, NULL);
		else if (S_ISDIR(e.attr.mode) && *qn < MAX_NODES)
			queue[(*qn)++] = e.nodeid;
	}
	/* and the dots, as the kernel asks for them (NFS export, `..` walks) */
	struct fuse_entry_out e;
	if (lookup(w, dir, "..", &e) == 0 && dir != FUSE_ROOT_ID)
		(void)e;
}

static void read_phase(struct walk *w)
{
	static uint64_t queue[MAX_NODES];
	unsigned qn = 0, qi = 0;
	struct node *root = node_of(w, FUSE_ROOT_ID, true);
	root->visited = true;
	snprintf(root->name, sizeof(root->name), "/");
	struct fuse_getattr_in gi = { 0 };
	req(w, FUSE_GETATTR, FUSE_ROOT_ID, &gi, sizeof(gi), NULL, 0, NULL, 0, NULL, NULL);
	struct fuse_statfs_out *sf = NULL;
	(void)sf;
	req(w, FUSE_STATFS, FUSE_ROOT_ID, NULL, 0, NULL, 0, NULL, 0, NULL, NULL);
	queue[qn++] = FUSE_ROOT_ID;
	while (qi < qn && qi < 80 && !stopped(w))
		walk_dir(w, queue[qi++], queue, &qn);
}

/* Was this node id seen live by the walk (and not made by it)? */
static struct node *seen_live(struct walk *w, uint64_t id)
{
	struct node *n = node_of(w, id, false);
	return n && n->nlink > 0 && !n->touched ? n : NULL;
}

static void check_new(struct walk *w, const char *op, uint64_t dir, const char *name,
		      const struct fuse_entry_out *e)
{
	struct node *n = seen_live(w, e->nodeid);
	if (n)
		fail(w, "%s \"%s\" in dir %llu was given inode %llu, live (\"%s\", mode 0%o, "
		     "%u links) when the walk read it", op, name, (unsigned long long)dir,
		     (unsigned long long)e->nodeid, n->name, n->mode, n->nlink);
}

static uint64_t create_file(struct walk *w, uint64_t dir, const char *name, uint64_t *fh)
{
	struct fuse_create_in ci = { .flags = O_RDWR | O_CREAT | O_EXCL, .mode = S_IFREG | 0644,
				     .umask = 022 };
	const uint8_t *o;
	size_t ol;
	if (req(w, FUSE_CREATE, dir, &ci, sizeof(ci), name, strlen(name) + 1, NULL, 0, &o, &ol) ||
	    ol < sizeof(struct fuse_entry_out) + sizeof(struct fuse_open_out))
		return 0;
	struct fuse_entry_out e;
	struct fuse_open_out oo;
	memcpy(&e, o, sizeof(e));
	memcpy(&oo, o + sizeof(e), sizeof(oo));
	check_new(w, "CREATE", dir, name, &e);
	took_entry(w, &e, name);
	struct node *n = node_of(w, e.nodeid, false);
	if (n)
		n->touched = true;
	*fh = oo.fh;
	return e.nodeid;
}

static int write_at(struct walk *w, uint64_t id, uint64_t fh, uint64_t off, size_t len,
		    uint8_t fill)
{
	memset(w->buf, fill, len);
	struct fuse_write_in wi = { .fh = fh, .offset = off, .size = (uint32_t)len };
	return req(w, FUSE_WRITE, id, &wi, sizeof(wi), w->buf, len, NULL, 0, NULL, NULL);
}

static void release(struct walk *w, uint64_t id, uint64_t fh)
{
	struct fuse_release_in rl = { .fh = fh, .flags = O_RDWR };
	req(w, FUSE_RELEASE, id, &rl, sizeof(rl), NULL, 0, NULL, 0, NULL, NULL);
}

static struct node *touch_name(struct walk *w, uint64_t dir, const char *name)
{
	struct fuse_entry_out e;
	if (lookup(w, dir, name, &e))
		return NULL;
	struct node *n = node_of(w, e.nodeid, false);
	if (n)
		n->touched = true;
	return n;
}

static void write_phase(struct walk *w)
{
	char name[64];
	uint64_t made[8], fhs[8];
	unsigned nmade = 0;
	/* allocation first: files with data in a few directories, directories */
	for (unsigned i = 0; i < w->ndirs && i < 4 && !stopped(w); i++) {
		for (unsigned k = 0; k < 2 && !stopped(w); k++) {
			snprintf(name, sizeof(name), "hostile-new-%u-%u", i, k);
			uint64_t fh = 0, id = create_file(w, w->dirs[i], name, &fh);
			if (!id)
				continue;
			for (unsigned b = 0; b < 4 && !stopped(w); b++)
				write_at(w, id, fh, (uint64_t)b * 4096, 4096, (uint8_t)(0x30 + b + k));
			if (nmade < 8) {
				made[nmade] = id;
				fhs[nmade++] = fh;
			} else {
				release(w, id, fh);
			}
		}
	}
	for (unsigned i = 0; i < w->ndirs && i < 2 && !stopped(w); i++) {
		struct fuse_mkdir_in mi = { .mode = 0755, .umask = 022 };
		const uint8_t *o;
		size_t ol;
		snprintf(name, sizeof(name), "hostile-dir-%u", i);
		if (req(w, FUSE_MKDIR, w->dirs[i], &mi, sizeof(mi), name, strlen(name) + 1, NULL, 0,
			&o, &ol) == 0 && ol >= sizeof(struct fuse_entry_out)) {
			struct fuse_entry_out e;
			memcpy(&e, o, sizeof(e));
			check_new(w, "MKDIR", w->dirs[i], name, &e);
			took_entry(w, &e, name);
			struct node *n = node_of(w, e.nodeid, false);
			if (n)
				n->touched = true;
		}
	}
	/* an existing file appended to (allocation in an old tree) */
	for (unsigned i = 0; i < w->nfiles && !stopped(w); i++) {
		struct node *n = node_of(w, w->files[i].id, false);
		if (!n || n->touched)
			continue;
		n->touched = true;
		struct fuse_open_in oi = { .flags = O_WRONLY };
		const uint8_t *o;
		size_t ol;
		if (req(w, FUSE_OPEN, n->id, &oi, sizeof(oi), NULL, 0, NULL, 0, &o, &ol) == 0 &&
		    ol >= sizeof(struct fuse_open_out)) {
			struct fuse_open_out oo;
			memcpy(&oo, o, sizeof(oo));
			write_at(w, n->id, oo.fh, w->files[i].size, 3000, 0x5a);
			struct fuse_fsync_in fi = { .fh = oo.fh };
			req(w, FUSE_FSYNC, n->id, &fi, sizeof(fi), NULL, 0, NULL, 0, NULL, NULL);
			release(w, n->id, oo.fh);
		}
		break;
	}
	/* xattrs, fsync, then the changes that free */
	for (unsigned i = 0; i < nmade && !stopped(w); i++) {
		struct fuse_setxattr_in si = { .size = 5, .flags = 0 };
		const char *xn = "user.hostile";
		/* compat layout (no FUSE_SETXATTR_EXT): size, flags, name, value */
		uint8_t arg[8];
		memcpy(arg, &si, 8);
		char nv[32];
		memcpy(nv, xn, strlen(xn) + 1);
		req(w, FUSE_SETXATTR, made[i], arg, 8, nv, strlen(xn) + 1, "value", 5, NULL, NULL);
		struct fuse_fsync_in fi = { .fh = fhs[i] };
		req(w, FUSE_FSYNC, made[i], &fi, sizeof(fi), NULL, 0, NULL, 0, NULL, NULL);
	}
	if (w->ndirs && !stopped(w)) {
		/* a rename in the root, and a directory moved across parents */
		struct fuse_rename_in rn = { .newdir = FUSE_ROOT_ID };
		struct node *n = touch_name(w, FUSE_ROOT_ID, "x");
		(void)n;
		req(w, FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), "x", 2, "x-renamed", 10, NULL,
		    NULL);
		struct fuse_entry_out e;
		if (lookup(w, FUSE_ROOT_ID, "d2", &e) == 0) {
			struct fuse_entry_out a;
			if (lookup(w, FUSE_ROOT_ID, "a", &a) == 0) {
				struct fuse_rename_in r2 = { .newdir = e.nodeid };
				req(w, FUSE_RENAME, a.nodeid, &r2, sizeof(r2), "b", 2, "b-moved", 8,
				    NULL, NULL);
				/* and a directory into its own subtree: refused (EINVAL) */
				struct fuse_rename_in r3 = { .newdir = a.nodeid };
				req(w, FUSE_RENAME, FUSE_ROOT_ID, &r3, sizeof(r3), "d2", 3, "d2-in",
				    6, NULL, NULL);
				/* "a" under the last directory the walk reached (its own
				 * subtree, unless damage says otherwise): the '..' walk
				 * of rename must end, whatever the '..' fields say */
				struct fuse_rename_in r4 = { .newdir = w->dirs[w->ndirs - 1] };
				req(w, FUSE_RENAME, FUSE_ROOT_ID, &r4, sizeof(r4), "a", 2, "a-under",
				    8, NULL, NULL);
			}
		}
	}
	for (unsigned i = 0; i < nmade && !stopped(w); i++) {
		struct fuse_setattr_in sa = { .valid = FATTR_SIZE | FATTR_FH, .fh = fhs[i],
					      .size = 1000 + i };
		req(w, FUSE_SETATTR, made[i], &sa, sizeof(sa), NULL, 0, NULL, 0, NULL, NULL);
		release(w, made[i], fhs[i]);
	}
	/* an old file truncated, old names unlinked, a new directory removed */
	if (!stopped(w)) {
		struct node *n = touch_name(w, FUSE_ROOT_ID, "frag");
		if (n) {
			struct fuse_setattr_in sa = { .valid = FATTR_SIZE, .size = 5000 };
			req(w, FUSE_SETATTR, n->id, &sa, sizeof(sa), NULL, 0, NULL, 0, NULL, NULL);
		}
		touch_name(w, FUSE_ROOT_ID, "hard");
		req(w, FUSE_UNLINK, FUSE_ROOT_ID, "hard", 5, NULL, 0, NULL, 0, NULL, NULL);
		touch_name(w, FUSE_ROOT_ID, "slow");
		req(w, FUSE_UNLINK, FUSE_ROOT_ID, "slow", 5, NULL, 0, NULL, 0, NULL, NULL);
		if (w->ndirs)
			req(w, FUSE_RMDIR, w->dirs[0], "hostile-dir-0", 14, NULL, 0, NULL, 0, NULL,
			    NULL);
		req(w, FUSE_UNLINK, w->dirs[0], "hostile-new-0-1", 16, NULL, 0, NULL, 0, NULL, NULL);
	}
	struct fuse_fsync_in fi = { 0 };
	req(w, FUSE_FSYNCDIR, FUSE_ROOT_ID, &fi, sizeof(fi), NULL, 0, NULL, 0, NULL, NULL);
}

/* The kernel forgets everything at unmount. */
static void forget_all(struct walk *w)
{
	for (unsigned i = 0; i < w->nnodes; i++) {
		struct node *n = &w->nodes[i];
		if (!n->nlookup || n->id == FUSE_ROOT_ID)
			continue;
		struct fuse_forget_in fi = { .nlookup = n->nlookup };
		h_request(w->s, FUSE_FORGET, n->id, &fi, sizeof(fi), NULL, 0, NULL, 0, NULL, NULL);
		n->nlookup = 0;
	}
}

/* main.c's checks before ordfs_mount: 0 (readonly set), or refused. */
static int daemon_precheck(struct blockdev *bd, bool *readonly, char *why, size_t wlen)
{
	struct ordfs_super sb;
	const char *w = NULL;
	int err = ordfs_read_super(bd, false, &sb, &w);
	if (err) {
		snprintf(why, wlen, "%s", w ? w : "bad superblock");
		return err;
	}
	int need = journal_needs_recovery(bd, &sb);
	if (need < 0) {
		snprintf(why, wlen, "journal superblock is corrupt (run fsck.ordfs)");
		return need;
	}
	*readonly = !need && (sb.state & ORDFS_STATE_ERROR);
	return 0;
}

static int mount_fs(struct blockdev *bd, bool readonly, struct daemon_ctx *dc, char *why,
		    size_t wlen)
{
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.readonly = readonly;
	opts.fatal = on_fatal;
	if (dc) {
		opts.attr_changed = daemon_attr_changed;
		opts.attr_changed_ctx = dc;
	}
	const char *w = NULL;
	struct ordfs *fs;
	int err = ordfs_mount(bd, &opts, &fs, &w);
	if (err) {
		snprintf(why, wlen, "%s (%s)", w ? w : "?", strerror(-err));
		return err;
	}
	if (dc)
		dc->fs = fs;
	return 0;
}

/* After the walk: the image mounts, and the files read and not touched
 * read the same. */
static void verify(struct walk *w, const uint8_t *img, size_t size)
{
	struct blockdev *bd;
	if (blockdev_mem_from(img, size, &bd))
		return;
	bool ro = false;
	char why[256];
	int err = daemon_precheck(bd, &ro, why, sizeof(why));
	struct daemon_ctx dc;
	memset(&dc, 0, sizeof(dc));
	/* read-only when the walk recorded an error, as the daemon would */
	if (!err)
		err = mount_fs(bd, ro, &dc, why, sizeof(why));
	if (err) {
		fail(w, "the image the daemon left does not mount again: %s", why);
		blockdev_destroy(bd);
		return;
	}
	for (unsigned i = 0; i < w->nfiles; i++) {
		struct file_seen *f = &w->files[i];
		struct node *n = node_of(w, f->id, false);
		if (n && n->touched)
			continue;
		uint32_t ino = f->id == FUSE_ROOT_ID ? ORDFS_ROOT_INO : (uint32_t)f->id;
		struct inode *inode;
		err = inode_get(dc.fs, ino, &inode);
		if (err) {
			fail(w, "inode %u (\"%s\", %llu bytes read before the writes) cannot be read "
			     "after remount: %s; the walk did not write it", ino, f->name,
			     (unsigned long long)f->size, strerror(-err));
			break;
		}
		uint32_t crc = 0;
		uint64_t off = 0;
		while (off < f->size + 1 && off < READ_MAX) {
			ssize_t got = ordfs_read(dc.fs, inode, w->buf, 65536, off);
			if (got < 0) {
				err = (int)got;
				break;
			}
			if (got == 0)
				break;
			crc = crc_of(w->buf, (size_t)got, crc);
			off += (uint64_t)got;
		}
		inode_put(dc.fs, inode);
		if (err || off != f->size || crc != f->crc) {
			fail(w, "inode %u (\"%s\") changed although the walk did not write it: %llu "
			     "bytes crc %08x before the writes, after remount %s%llu bytes crc %08x",
			     ino, f->name, (unsigned long long)f->size, f->crc,
			     err ? strerror(-err) : "", (unsigned long long)off, crc);
			break;
		}
	}
	ordfs_unmount(dc.fs);
	blockdev_destroy(bd);
}

void h_walk(uint8_t *img, size_t size, struct h_walk_result *r)
{
	memset(r, 0, sizeof(*r));
	static struct walk w;
	memset(&w, 0, sizeof(w));
	w.r = r;
	w.buf = malloc(65536);
	struct blockdev *bd;
	if (!w.buf || blockdev_mem_from(img, size, &bd)) {
		free(w.buf);
		return;
	}
	char why[256];
	bool ro = false;
	static struct daemon_ctx dc;
	memset(&dc, 0, sizeof(dc));
	dc.attr_timeout = DAEMON_ATTR_TIMEOUT;
	dc.entry_timeout = DAEMON_ENTRY_TIMEOUT;
	dc.negative_timeout = DAEMON_NEGATIVE_TIMEOUT;
	dc.read_ahead_kb = 128;
	ordfs_mutex_init(&dc.files_lock, LOCK_FILES, "files_lock");
	if (daemon_precheck(bd, &ro, why, sizeof(why)) ||
	    mount_fs(bd, ro, &dc, why, sizeof(why))) {
		blockdev_destroy(bd);
		free(w.buf);
		return; /* refused: fine */
	}
	r->mounted = true;
	r->readonly = ro;
	w.fs = dc.fs;
	int err = h_session_new(&dc, &w.s);
	if (err) {
		fail(&w, "cannot start the in-process session: %s", strerror(-err));
	} else {
		read_phase(&w);
		if (!ro)
			write_phase(&w);
		forget_all(&w);
	}
	daemon_release_all_files(&dc);
	dc.se = NULL;
	int uerr = ordfs_unmount(dc.fs);
	h_session_free(w.s);
	memcpy(img, blockdev_mem_bytes(bd), size);
	blockdev_destroy(bd);
	if (!ro && !fatal_seen && !r->failure[0])
		verify(&w, img, size);
	(void)uerr;
	free(w.buf);
}

/* ---- the scrub's view of a damaged image ---------------------------------- */

static void count_block_problem(void *ctx, enum check_problem code, const char *msg)
{
	(void)msg;
	if (code == CHK_BLOCK_BITMAP || code == CHK_BLOCK_DUP)
		(*(unsigned *)ctx)++;
}

int h_scrub_block_problems(uint8_t *img, size_t size)
{
	struct blockdev *bd;
	if (blockdev_mem_from(img, size, &bd))
		return -ENOMEM;
	char why[256];
	bool ro = false;
	static struct daemon_ctx dc;
	memset(&dc, 0, sizeof(dc));
	int err = daemon_precheck(bd, &ro, why, sizeof(why));
	if (!err)
		err = mount_fs(bd, ro, &dc, why, sizeof(why));
	if (err) {
		blockdev_destroy(bd);
		return err;
	}
	unsigned found = 0;
	struct scrub_result res = { .report = count_block_problem, .ctx = &found };
	err = ordfs_scrub(dc.fs, &res);
	(void)ordfs_unmount(dc.fs);
	blockdev_destroy(bd);
	return err ? err : (int)found;
}
