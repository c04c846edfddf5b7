/*
 * workload.c - the library side of the crash harness: an image behind the
 * recording device, the operations workloads use, and the marks each
 * leaves in the log (harness.h lists them).
 *
 * Rules: an operation marks what it is about to change before it changes
 * it, so a crash state cut anywhere inside the operation finds the old
 * promise already withdrawn; a durability operation marks what it made
 * durable only after it returned 0.  Everything is single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "ops.h"
#include "alloc/alloc.h"
#include "journal/journal.h"
#include "super/grow.h"
#include "writeback/writeback.h"
#include "mkfs/mkfs.h"

static const struct ordfs_cred cred = { 0, 0 };

/* ---- marks ------------------------------------------------------------------- */

/* Before the recorder exists (the setup), marks wait in a list and go
 * first into the log. */
static char **pending;
static size_t npending;

static void mark(struct crash_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mark(struct crash_run *r, const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (r->rec) {
		blockdev_record_mark(r->rec, m);
		return;
	}
	char **v = realloc(pending, (npending + 1) * sizeof(*v));
	if (!v)
		return;
	pending = v;
	pending[npending] = strdup(m);
	if (pending[npending])
		npending++;
}

/* ---- paths and hashes -------------------------------------------------------- */

struct inode *crash_walk(struct ordfs *fs, const char *path)
{
	struct inode *f;
	return ordfs_lookup_path(fs, path, &f) == 0 ? f : NULL;
}

/* The parent directory of path and the last component. */
static struct inode *parent_of(struct ordfs *fs, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	*name = slash ? slash + 1 : path;
	if (!slash)
		return crash_walk(fs, "");
	char dir[128];
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return crash_walk(fs, dir);
}

static void parent_path(const char *path, char *out, size_t n)
{
	const char *slash = strrchr(path, '/');
	snprintf(out, n, "%.*s", slash ? (int)(slash - path) : 0, path);
}

static uint64_t content_hash(struct ordfs *fs, struct inode *f, uint64_t *size)
{
	uint8_t buf[CRASH_BS];
	uint64_t h = 1469598103934665603ull, total = 0;
	for (uint64_t off = 0;; off += CRASH_BS) {
		ssize_t n = ordfs_read(fs, f, buf, CRASH_BS, off);
		if (n <= 0)
			break;
		h = crash_fnv(buf, (size_t)n, h);
		total += (uint64_t)n;
	}
	*size = total;
	return h;
}

bool crash_node_hash(struct ordfs *fs, const char *path, uint64_t *fhash, uint64_t *dhash,
		     uint64_t *size)
{
	struct inode *f = crash_walk(fs, path);
	if (!f)
		return false;
	uint32_t meta[2] = { f->d.mode, f->d.links };
	*dhash = 0;
	*size = 0;
	if (S_ISREG(f->d.mode)) {
		*dhash = content_hash(fs, f, size);
		char v[64];
		ssize_t n = ordfs_getxattr(fs, f, "user.k", v, sizeof(v));
		*fhash = crash_fnv(v, n > 0 ? (size_t)n : 0, crash_fnv(&n, sizeof(n), *dhash));
	} else if (S_ISLNK(f->d.mode)) {
		char t[256];
		ssize_t n = ordfs_readlink(fs, f, t, sizeof(t));
		*dhash = crash_fnv(t, n > 0 ? (size_t)n : 0, 1469598103934665603ull);
		*size = n > 0 ? (uint64_t)n : 0;
		*fhash = *dhash;
	} else {
		*fhash = 1469598103934665603ull;
	}
	*fhash = crash_fnv(meta, sizeof(meta), *fhash);
	inode_put(fs, f);
	return true;
}

/* ---- versions ------------------------------------------------------------------- */

/* The k of inode ino's newest version, or SIZE_MAX. */
static size_t newest_version(const struct crash_run *r, uint32_t ino)
{
	for (size_t k = r->nversions; k-- > 0;)
		if (r->versions[k].ino == ino)
			return k;
	return SIZE_MAX;
}

/* Before f changes: its next version may show on the image from here on
 * ("V ino k").  Returns k, for version_end (SIZE_MAX: out of memory; the
 * oracle then knows no version and checks nothing for that inode). */
static size_t version_begin(struct crash_run *r, const struct inode *f)
{
	if (!S_ISREG(f->d.mode))
		return SIZE_MAX;
	struct crash_version *v = realloc(r->versions, (r->nversions + 1) * sizeof(*v));
	if (!v)
		return SIZE_MAX;
	r->versions = v;
	size_t k = r->nversions++;
	v[k] = (struct crash_version){ f->ino, 0, NULL };
	mark(r, "V %u %zu", f->ino, k);
	return k;
}

/* After the change: version k is what f holds now (read without moving
 * atime, so keeping versions changes nothing the workload logs). */
static void version_end(struct crash_run *r, size_t k, struct inode *f)
{
	if (k == SIZE_MAX)
		return;
	struct crash_version *v = &r->versions[k];
	uint64_t cap = 0;
	for (;;) {
		if (v->size + CRASH_BS > cap) {
			uint8_t *d = realloc(v->data, cap + 16 * CRASH_BS);
			if (!d)
				break;
			v->data = d;
			cap += 16 * CRASH_BS;
		}
		ssize_t n = ordfs_read_for_write(r->fs, f, v->data + v->size, CRASH_BS, v->size);
		if (n <= 0)
			break;
		v->size += (uint64_t)n;
	}
}

/* The version of a file as it is now (a new, empty file). */
static void version_now(struct crash_run *r, struct inode *f)
{
	version_end(r, version_begin(r, f), f);
}

static void free_versions(struct crash_run *r)
{
	for (size_t k = 0; k < r->nversions; k++)
		free(r->versions[k].data);
	free(r->versions);
	r->versions = NULL;
	r->nversions = 0;
}

static uint32_t ino_of(struct crash_run *r, const char *path)
{
	struct inode *f = crash_walk(r->fs, path);
	if (!f)
		return 0;
	uint32_t ino = f->ino;
	inode_put(r->fs, f);
	return ino;
}

/* "T" for path and every universe path naming the same inode (its link
 * count or contents change for all of them). */
static void touch_inode(struct crash_run *r, const char *path)
{
	mark(r, "T %s", path);
	uint32_t ino = ino_of(r, path);
	for (unsigned i = 0; ino && r->universe && r->universe[i]; i++)
		if (strcmp(r->universe[i], path) != 0 && ino_of(r, r->universe[i]) == ino)
			mark(r, "T %s", r->universe[i]);
}

static void name_changes(struct crash_run *r, const char *path)
{
	mark(r, "N %s", path);
	mark(r, "T %s", path);
}

/* ---- the image and the mount ------------------------------------------------- */

static void mark_durable_all(struct crash_run *r);

/* Free data blocks of a real disk hold old data, not zeros: fill them with
 * CRASH_STALE so a file that shows a block it never wrote is caught; and
 * so every block past the filesystem's end (a device larger than it, for
 * a grow): the space a grow adds was never the filesystem's. */
static int fill_free_blocks(struct blockdev *bd)
{
	struct ordfs_super sb;
	const char *why;
	int err = ordfs_read_super(bd, false, &sb, &why);
	if (err)
		return err;
	uint32_t bs = ordfs_block_size(&sb);
	uint64_t bits_per = (uint64_t)(bs - 24) * 8;
	uint8_t *bitmap = malloc(bs), *stale = malloc(bs);
	if (!bitmap || !stale) {
		free(bitmap);
		free(stale);
		return -ENOMEM;
	}
	memset(stale, CRASH_STALE, bs);
	uint64_t loaded = UINT64_MAX;
	for (uint64_t b = sb.data_start; b < sb.block_count - 1 && !err; b++) {
		uint64_t which = b / bits_per, bit = b % bits_per;
		if (which != loaded) {
			err = blockdev_read(bd, bitmap, bs, ordfs_block_bitmap_block(&sb, which) * bs);
			loaded = which;
		}
		if (!err && !((bitmap[24 + bit / 8] >> (bit % 8)) & 1))
			err = blockdev_write(bd, stale, bs, b * bs);
	}
	for (uint64_t b = sb.block_count; b < bd->size / bs && !err; b++)
		err = blockdev_write(bd, stale, bs, b * bs);
	free(bitmap);
	free(stale);
	return err;
}

int crash_run_start(struct crash_run *r, enum journal_data_mode mode, uint32_t journal_blocks,
		    uint64_t fs_bytes, uint64_t dev_bytes, crash_setup_fn setup,
		    const char *const *universe)
{
	memset(r, 0, sizeof(*r));
	r->universe = universe;
	r->size = dev_bytes;
	if (fs_bytes > dev_bytes || blockdev_mem_create(dev_bytes, &r->mem))
		return -ENOMEM;
	struct mkfs_params p;
	memset(&p, 0, sizeof(p));
	p.block_size = CRASH_BS;
	p.journal_blocks = journal_blocks;
	struct ordfs_super sb;
	const char *why;
	int err = ordfs_mkfs_plan(&p, fs_bytes, &sb, &why);
	if (!err)
		err = ordfs_mkfs_write(r->mem, &sb, &why);
	if (err)
		return err;
	ordfs_options_default(&r->opts);
	r->opts.commit_interval_ms = 0; /* commits only when the workload asks */
	r->opts.data_mode = mode;
	if (setup) {
		err = ordfs_mount(r->mem, &r->opts, &r->fs, &why);
		if (err)
			return err;
		setup(r);
		mark_durable_all(r);
		err = ordfs_unmount(r->fs);
		r->fs = NULL;
		if (err)
			return err;
	}
	err = fill_free_blocks(r->mem);
	if (err)
		return err;
	r->base = malloc(dev_bytes);
	if (!r->base)
		return -ENOMEM;
	memcpy(r->base, blockdev_mem_bytes(r->mem), dev_bytes);
	err = blockdev_record_create(r->mem, true, &r->rec);
	if (err)
		return err;
	for (size_t i = 0; i < npending; i++) {
		blockdev_record_mark(r->rec, pending[i]);
		free(pending[i]);
	}
	npending = 0;
	return ordfs_mount(r->rec, &r->opts, &r->fs, &why);
}

void crash_run_end(struct crash_run *r)
{
	if (r->fs)
		(void)ordfs_unmount(r->fs);
	if (r->rec)
		blockdev_destroy(r->rec);
	if (r->mem)
		blockdev_destroy(r->mem);
	free(r->base);
	for (size_t i = 0; i < npending; i++)
		free(pending[i]);
	npending = 0;
	free_versions(r);
	memset(r, 0, sizeof(*r));
}

/* ---- operations ----------------------------------------------------------------- */

void op_write(struct crash_run *r, const char *path, uint64_t off, size_t len)
{
	const char *name;
	struct inode *dir = parent_of(r->fs, path, &name), *f = NULL;
	if (!dir)
		return;
	if (ordfs_lookup(r->fs, dir, name, &f) == -ENOENT) {
		name_changes(r, path);
		if (ordfs_create(r->fs, dir, name, 0644, &cred, &f) == 0)
			version_now(r, f);
	}
	inode_put(r->fs, dir);
	if (!f)
		return;
	uint8_t fill = (uint8_t)(r->next_fill++ * 37 + 11);
	touch_inode(r, path);
	mark(r, "W %u %" PRIu64 " %zu %u", f->ino, off, len, fill);
	size_t k = version_begin(r, f);
	uint8_t *buf = malloc(len);
	for (size_t i = 0; buf && i < len; i++)
		buf[i] = (uint8_t)(fill + i * 7);
	if (buf && S_ISREG(f->d.mode))
		(void)ordfs_write(r->fs, f, buf, len, off);
	free(buf);
	version_end(r, k, f);
	inode_put(r->fs, f);
}

void op_truncate(struct crash_run *r, const char *path, uint64_t size)
{
	struct inode *f = crash_walk(r->fs, path);
	if (!f)
		return;
	touch_inode(r, path);
	size_t k = version_begin(r, f);
	if (S_ISREG(f->d.mode))
		(void)ordfs_truncate(r->fs, f, size);
	version_end(r, k, f);
	inode_put(r->fs, f);
}

void op_fallocate(struct crash_run *r, const char *path, int mode, uint64_t off, uint64_t len)
{
	struct inode *f = crash_walk(r->fs, path);
	if (!f)
		return;
	touch_inode(r, path);
	/* Collapse and insert move bytes: the oracle's writes move with them
	 * ("M ino from delta": every byte at or after from, by delta). */
	if (mode == 0x08 /* COLLAPSE_RANGE */)
		mark(r, "M %u %" PRIu64 " -%" PRIu64, f->ino, off + len, len);
	else if (mode == 0x20 /* INSERT_RANGE */)
		mark(r, "M %u %" PRIu64 " %" PRIu64, f->ino, off, len);
	size_t k = version_begin(r, f);
	if (S_ISREG(f->d.mode))
		(void)ordfs_fallocate(r->fs, f, mode, off, len);
	version_end(r, k, f);
	inode_put(r->fs, f);
}

void op_create(struct crash_run *r, const char *path)
{
	const char *name;
	struct inode *dir = parent_of(r->fs, path, &name), *f;
	if (!dir)
		return;
	name_changes(r, path);
	if (ordfs_create(r->fs, dir, name, 0644, &cred, &f) == 0) {
		version_now(r, f);
		inode_put(r->fs, f);
	}
	inode_put(r->fs, dir);
}

void op_mkdir(struct crash_run *r, const char *path)
{
	const char *name;
	char parent[128];
	struct inode *dir = parent_of(r->fs, path, &name), *d;
	if (!dir)
		return;
	parent_path(path, parent, sizeof(parent));
	name_changes(r, path);
	mark(r, "T %s", parent); /* its link count */
	if (ordfs_mkdir(r->fs, dir, name, 0755, &cred, &d) == 0)
		inode_put(r->fs, d);
	inode_put(r->fs, dir);
}

void op_link(struct crash_run *r, const char *from, const char *to)
{
	const char *name;
	struct inode *f = crash_walk(r->fs, from), *dir = parent_of(r->fs, to, &name);
	if (f && dir) {
		touch_inode(r, from);
		name_changes(r, to);
		(void)ordfs_link(r->fs, f, dir, name);
	}
	if (f)
		inode_put(r->fs, f);
	if (dir)
		inode_put(r->fs, dir);
}

void op_unlink(struct crash_run *r, const char *path)
{
	const char *name;
	struct inode *dir = parent_of(r->fs, path, &name);
	if (!dir)
		return;
	touch_inode(r, path);
	name_changes(r, path);
	(void)ordfs_unlink(r->fs, dir, name);
	inode_put(r->fs, dir);
}

/* A regular file: "R from to dhash size" (the oracle holds it to
 * old-or-new); anything else: both names change. */
void op_rename(struct crash_run *r, const char *from, const char *to)
{
	const char *fname, *tname;
	struct inode *fd = parent_of(r->fs, from, &fname), *td = parent_of(r->fs, to, &tname);
	struct inode *f = crash_walk(r->fs, from);
	if (fd && td && f) {
		/* The inode `to` names loses a link: its other names change. */
		if (ino_of(r, to) && ino_of(r, to) != f->ino)
			touch_inode(r, to);
		if (S_ISREG(f->d.mode)) {
			uint64_t size;
			uint64_t h = content_hash(r->fs, f, &size);
			mark(r, "R %s %s %" PRIu64 " %" PRIu64, from, to, h, size);
		} else {
			char p1[128], p2[128];
			parent_path(from, p1, sizeof(p1));
			parent_path(to, p2, sizeof(p2));
			name_changes(r, from);
			name_changes(r, to);
			mark(r, "T %s", p1);
			mark(r, "T %s", p2);
		}
		(void)ordfs_rename(r->fs, fd, fname, td, tname, 0);
	}
	if (f)
		inode_put(r->fs, f);
	if (fd)
		inode_put(r->fs, fd);
	if (td)
		inode_put(r->fs, td);
}

void op_symlink(struct crash_run *r, const char *path, const char *target)
{
	const char *name;
	struct inode *dir = parent_of(r->fs, path, &name), *l;
	if (!dir)
		return;
	name_changes(r, path);
	if (ordfs_symlink(r->fs, dir, name, target, &cred, &l) == 0)
		inode_put(r->fs, l);
	inode_put(r->fs, dir);
}

void op_setxattr(struct crash_run *r, const char *path, const char *value)
{
	struct inode *f = crash_walk(r->fs, path);
	if (!f)
		return;
	touch_inode(r, path);
	(void)ordfs_setxattr(r->fs, f, "user.k", value, strlen(value), 0);
	inode_put(r->fs, f);
}

void op_removexattr(struct crash_run *r, const char *path)
{
	struct inode *f = crash_walk(r->fs, path);
	if (!f)
		return;
	touch_inode(r, path);
	(void)ordfs_removexattr(r->fs, f, "user.k");
	inode_put(r->fs, f);
}

/* The mark comes before the grow: a state cut anywhere inside it may show
 * either size; "g" only once it returned, committed. */
int op_grow(struct crash_run *r, uint64_t new_blocks)
{
	uint64_t old = fs_block_count(r->fs), was;
	const char *why;
	mark(r, "G %" PRIu64 " %" PRIu64, old, new_blocks);
	int err = ordfs_grow_online(r->fs, new_blocks, &was, &why);
	if (err == 0)
		mark(r, "g %" PRIu64, new_blocks);
	else if (crash_verbose)
		fprintf(stderr, "  grow to %" PRIu64 " blocks: %s\n", new_blocks, why);
	return err;
}

uint64_t crash_blocks_in_use(struct ordfs *fs, uint64_t lo, uint64_t hi)
{
	uint64_t n = 0;
	for (uint64_t b = lo; b < hi; b++)
		n += alloc_block_in_use(fs->alloc, b);
	return n;
}

/* ---- durability ------------------------------------------------------------------ */

/* D or d for path (A if it is gone), and S for a regular file's newest
 * version: no older one may show after a crash. */
static void mark_node(struct crash_run *r, const char *path, char kind)
{
	uint64_t fh, dh, size;
	if (!crash_node_hash(r->fs, path, &fh, &dh, &size)) {
		mark(r, "A %s", path);
		return;
	}
	mark(r, "%c %s %" PRIu64 " %" PRIu64 " %" PRIu64, kind, path, fh, dh, size);
	uint32_t ino = ino_of(r, path);
	size_t k = ino ? newest_version(r, ino) : SIZE_MAX;
	if (k != SIZE_MAX)
		mark(r, "S %u %zu", ino, k);
}

/* After dir's entries became durable: each universe name in it, and
 * `also` (a name outside the universe), is there or not for good. */
static void mark_entries(struct crash_run *r, const char *dir, const char *also)
{
	char parent[128];
	for (unsigned i = 0; r->universe && r->universe[i]; i++) {
		parent_path(r->universe[i], parent, sizeof(parent));
		if (strcmp(parent, dir) == 0)
			mark(r, "%c %s", ino_of(r, r->universe[i]) ? 'E' : 'A', r->universe[i]);
	}
	if (also)
		mark(r, "%c %s", ino_of(r, also) ? 'E' : 'A', also);
}

void op_fsync(struct crash_run *r, const char *path, bool datasync)
{
	struct inode *f = crash_walk(r->fs, path);
	if (!f)
		return;
	bool dir = S_ISDIR(f->d.mode), link = S_ISLNK(f->d.mode);
	int err = link ? -EBADF : ordfs_fsync(r->fs, f, datasync); /* no fd on a symlink */
	inode_put(r->fs, f);
	if (err)
		return;
	mark_node(r, path, datasync && !dir ? 'd' : 'D');
	if (dir)
		mark_entries(r, path, NULL);
}

void op_fsyncdir_parent(struct crash_run *r, const char *path)
{
	char parent[128];
	parent_path(path, parent, sizeof(parent));
	struct inode *d = crash_walk(r->fs, parent);
	if (!d)
		return;
	int err = ordfs_fsync(r->fs, d, false);
	inode_put(r->fs, d);
	if (!err)
		mark_entries(r, parent, path);
}

static void mark_durable_all(struct crash_run *r)
{
	for (unsigned i = 0; r->universe && r->universe[i]; i++)
		mark_node(r, r->universe[i], 'D');
}

void op_background_writeback(struct crash_run *r, uint64_t max_pages)
{
	if (max_pages == UINT64_MAX)
		(void)writeback_periodic(r->fs); /* the thread's periodic pass */
	else
		(void)writeback_slices(r->fs, max_pages); /* an early pass */
}

void op_periodic_commit(struct crash_run *r, uint64_t max_pages)
{
	op_background_writeback(r, max_pages);
	(void)journal_force_commit(r->fs->journal);
}

void op_sync(struct crash_run *r)
{
	if (ordfs_sync(r->fs) == 0)
		mark_durable_all(r);
}
