/*
 * crash.c - crash-state enumeration with an oracle (issue 8, first part).
 *
 * Each workload runs through the core library on an in-memory image seen
 * through the recording device, which logs every write and flush plus
 * the workload's marks ("fsync of f returned with these bytes").  From
 * the log the harness builds the images a power cut could leave:
 *   (a) every prefix of the write log (the kill -9 model);
 *   (b) at each flush k: everything before flush k-1 durable plus subsets
 *       of the writes between the two flushes (all subsets up to 12
 *       writes, else every prefix, every subset of size <= 2 and a seeded
 *       sample), deduplicated;
 *   (c) torn writes: the crash during each write, its 512-byte sectors
 *       half old and half new (both ways), one sector new, or one sector
 *       of garbage;
 *   (d) a crash during recovery: for every fourth prefix state that needs
 *       replay, recovery is logged and cut after each of its writes, and
 *       the oracle judges what a second recovery makes of it;
 * and checks each one: the mount replays the journal; every file whose
 * fsync returned before the crash point (and was not touched since) has
 * exactly its bytes and size; a durable file being renamed is under
 * exactly one of its two names; in data=ordered a rename over a durable
 * file leaves the old or the new bytes there, never an empty or partial
 * file (replace-via-rename); a file and a directory can be created and
 * removed in every directory; after unmount the checker finds nothing.
 *
 * Usage: crash [--long] [--seed N]
 *   the bounded tier runs every handwritten workload and a seeded sample
 *   of generated 2-operation workloads, in data=ordered and writeback and
 *   with the smallest journal; --long runs many more generated workloads.
 *   One summary line: workloads, crash states checked, violations.
 *   Exit 0 only with no violation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"
#include "inode.h"
#include "ops.h"
#include "blockdev/blockdev.h"
#include "check/check.h"
#include "mkfs/mkfs.h"

#define IMG (8u << 20)
#define BS 4096u
#define MAX_STATES 5000u
#define SUBSET_ALL_MAX 12u

static const struct ordfs_cred cred = { 0, 0 };

/* ---- results ------------------------------------------------------------ */

static uint64_t states_checked, violations, workloads_run;
static bool verbose;

static void violation(const char *workload, const char *state, const char *fmt, ...)
{
	va_list ap;
	violations++;
	if (violations > 20)
		return; /* enough to act on */
	fprintf(stderr, "VIOLATION %s [%s]: ", workload, state);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* ---- the workload side: a filesystem, its log, its marks ----------------- */

struct run {
	struct blockdev *mem, *rec;
	struct ordfs *fs;
	uint8_t *base;          /* the image when logging began (before mount) */
	struct ordfs_options opts;
};

static int run_start(struct run *r, enum journal_data_mode mode, uint32_t journal_blocks)
{
	memset(r, 0, sizeof(*r));
	if (blockdev_mem_create(IMG, &r->mem))
		return -ENOMEM;
	struct mkfs_params p;
	memset(&p, 0, sizeof(p));
	p.block_size = BS;
	p.journal_blocks = journal_blocks;
	struct ordfs_super sb;
	const char *why;
	int err = ordfs_mkfs_plan(&p, IMG, &sb, &why);
	if (!err)
		err = ordfs_mkfs_write(r->mem, &sb, &why);
	r->base = malloc(IMG);
	if (err || !r->base)
		return err ? err : -ENOMEM;
	memcpy(r->base, blockdev_mem_bytes(r->mem), IMG);
	err = blockdev_record_create(r->mem, true, &r->rec);
	if (err)
		return err;
	ordfs_options_default(&r->opts);
	r->opts.commit_interval_ms = 0; /* commits only when the workload asks */
	r->opts.data_mode = mode;
	return ordfs_mount(r->rec, &r->opts, &r->fs, &why);
}

/* Looks up a path ("a/b/c") from the root; NULL if any part is missing. */
static struct inode *walk(struct ordfs *fs, const char *path)
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
		return walk(fs, "");
	char dir[128];
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return walk(fs, dir);
}

static uint64_t file_hash(struct ordfs *fs, struct inode *f, uint64_t *size)
{
	uint8_t buf[BS];
	uint64_t h = 1469598103934665603ull, total = 0;
	for (uint64_t off = 0;; off += BS) {
		ssize_t n = ordfs_read(fs, f, buf, BS, off);
		if (n <= 0)
			break;
		h = fnv(buf, (size_t)n, h);
		total += (uint64_t)n;
	}
	*size = total;
	return h;
}

/* Marks: "D path hash size" = fsync of path returned with these bytes;
 * "T path" = path changed since (its last D no longer binds). */
static void mark_durable(struct run *r, const char *path)
{
	struct inode *f = walk(r->fs, path);
	if (!f)
		return;
	uint64_t size, h = file_hash(r->fs, f, &size);
	inode_put(r->fs, f);
	char m[200];
	snprintf(m, sizeof(m), "D %s %" PRIu64 " %" PRIu64, path, h, size);
	blockdev_record_mark(r->rec, m);
}

static void mark_touched(struct run *r, const char *path)
{
	char m[160];
	snprintf(m, sizeof(m), "T %s", path);
	blockdev_record_mark(r->rec, m);
}

/* ---- operations (each records what it changes) ---------------------------- */

static void op_write(struct run *r, const char *path, uint64_t off, size_t len, uint8_t fill)
{
	const char *name;
	struct inode *dir = parent_of(r->fs, path, &name), *f = NULL;
	if (!dir)
		return;
	mark_touched(r, path);
	if (ordfs_lookup(r->fs, dir, name, &f) == -ENOENT)
		(void)ordfs_create(r->fs, dir, name, 0644, &cred, &f);
	inode_put(r->fs, dir);
	if (!f)
		return;
	uint8_t *buf = malloc(len);
	for (size_t i = 0; buf && i < len; i++)
		buf[i] = (uint8_t)(fill + i * 7);
	if (buf)
		(void)ordfs_write(r->fs, f, buf, len, off);
	free(buf);
	inode_put(r->fs, f);
}

static void op_fsync(struct run *r, const char *path, bool datasync)
{
	struct inode *f = walk(r->fs, path);
	if (!f)
		return;
	int err = ordfs_fsync(r->fs, f, datasync);
	inode_put(r->fs, f);
	if (!err)
		mark_durable(r, path);
}

static void op_truncate(struct run *r, const char *path, uint64_t size)
{
	struct inode *f = walk(r->fs, path);
	if (!f)
		return;
	mark_touched(r, path);
	(void)ordfs_truncate(r->fs, f, size);
	inode_put(r->fs, f);
}

static void op_unlink(struct run *r, const char *path)
{
	const char *name;
	struct inode *dir = parent_of(r->fs, path, &name);
	if (!dir)
		return;
	mark_touched(r, path);
	(void)ordfs_unlink(r->fs, dir, name);
	inode_put(r->fs, dir);
}

/* "R from to hash size": a rename of a file with these bytes; the oracle
 * holds it to old-or-new (the file under exactly one of the names if it
 * was durable under from; under to, the old or the new bytes, if to was
 * durable: replace-via-rename). */
static void op_rename(struct run *r, const char *from, const char *to)
{
	const char *fname, *tname;
	struct inode *fd = parent_of(r->fs, from, &fname), *td = parent_of(r->fs, to, &tname);
	struct inode *f = walk(r->fs, from);
	if (fd && td && f && S_ISREG(f->d.mode)) {
		uint64_t size, h = file_hash(r->fs, f, &size);
		char m[300];
		snprintf(m, sizeof(m), "R %s %s %" PRIu64 " %" PRIu64, from, to, h, size);
		blockdev_record_mark(r->rec, m);
		(void)ordfs_rename(r->fs, fd, fname, td, tname, 0);
	} else if (fd && td) {
		mark_touched(r, from);
		mark_touched(r, to);
		(void)ordfs_rename(r->fs, fd, fname, td, tname, 0);
	}
	if (f)
		inode_put(r->fs, f);
	if (fd)
		inode_put(r->fs, fd);
	if (td)
		inode_put(r->fs, td);
}

static void op_mkdir(struct run *r, const char *path)
{
	const char *name;
	struct inode *dir = parent_of(r->fs, path, &name), *d;
	if (!dir)
		return;
	if (ordfs_mkdir(r->fs, dir, name, 0755, &cred, &d) == 0)
		inode_put(r->fs, d);
	inode_put(r->fs, dir);
}

static void op_fallocate(struct run *r, const char *path, int mode, uint64_t off, uint64_t len)
{
	struct inode *f = walk(r->fs, path);
	if (!f)
		return;
	mark_touched(r, path);
	(void)ordfs_fallocate(r->fs, f, mode, off, len);
	inode_put(r->fs, f);
}

static void op_sync(struct run *r)
{
	(void)ordfs_sync(r->fs);
}

/* ---- states ------------------------------------------------------------- */

struct logview {
	const struct blockdev_event *ev;
	size_t n;
	size_t *writes;  /* event indices of the writes */
	size_t nwrites;
	size_t *flushes; /* event indices of the flushes */
	size_t nflushes;
};

/* The expectations binding at a crash point: the last D of each path
 * before `limit` (event index), unless a T of it came after. */
struct expectation {
	char path[128];
	uint64_t hash, size;
	bool binding;      /* exactly these bytes */
	bool either;       /* these bytes or alt (a replace-via-rename) */
	uint64_t alt_hash, alt_size;
	char pair[128];    /* a durable file renamed to pair: under exactly one */
};

static struct expectation *find_exp(struct expectation *v, unsigned *n, unsigned max,
				    const char *path)
{
	for (unsigned k = 0; k < *n; k++)
		if (strcmp(v[k].path, path) == 0)
			return &v[k];
	if (*n == max)
		return NULL;
	struct expectation *e = &v[(*n)++];
	memset(e, 0, sizeof(*e));
	snprintf(e->path, sizeof(e->path), "%s", path);
	return e;
}

static unsigned expectations(const struct logview *lv, size_t limit, struct expectation *out,
			     unsigned max)
{
	unsigned n = 0;
	for (size_t i = 0; i < limit && i < lv->n; i++) {
		if (lv->ev[i].type != BD_EV_MARK)
			continue;
		const char *m = (const char *)lv->ev[i].data;
		char path[128], to[128];
		uint64_t h = 0, size = 0;
		if (m[0] == 'R' &&
		    sscanf(m, "R %127s %127s %" SCNu64 " %" SCNu64, path, to, &h, &size) == 4) {
			struct expectation *fe = find_exp(out, &n, max, path);
			struct expectation *te = find_exp(out, &n, max, to);
			if (!fe || !te)
				continue;
			bool from_durable = fe->binding && fe->hash == h && fe->size == size;
			bool to_durable = te->binding;
			uint64_t old_h = te->hash, old_size = te->size;
			memset(te->pair, 0, sizeof(te->pair));
			te->binding = te->either = false;
			if (to_durable && strcmp(path, to) != 0) {
				te->either = true; /* old bytes of to, or the renamed file */
				te->hash = old_h;
				te->size = old_size;
				te->alt_hash = h;
				te->alt_size = size;
			}
			fe->binding = fe->either = false;
			if (from_durable && strcmp(path, to) != 0) {
				/* The file is under exactly one of the two names. */
				snprintf(fe->pair, sizeof(fe->pair), "%s", to);
				fe->hash = h;
				fe->size = size;
			} else {
				fe->pair[0] = 0;
			}
			continue;
		}
		bool durable = m[0] == 'D';
		if (durable && sscanf(m, "D %127s %" SCNu64 " %" SCNu64, path, &h, &size) != 3)
			continue;
		if (!durable && sscanf(m, "T %127s", path) != 1)
			continue;
		struct expectation *e = find_exp(out, &n, max, path);
		if (!e)
			continue;
		e->binding = durable;
		e->either = false;
		e->pair[0] = 0;
		e->hash = h;
		e->size = size;
		/* A change of a rename's target ends the rename's promise. */
		for (unsigned k = 0; k < n; k++)
			if (out[k].pair[0] && strcmp(out[k].pair, path) == 0)
				out[k].pair[0] = 0;
	}
	return n;
}

/* Whether path exists as a regular file, with its bytes' hash. */
static bool has_bytes(struct ordfs *fs, const char *path, uint64_t *h, uint64_t *size)
{
	struct inode *f = walk(fs, path);
	if (!f)
		return false;
	bool reg = S_ISREG(f->d.mode);
	if (reg)
		*h = file_hash(fs, f, size);
	inode_put(fs, f);
	return reg;
}

/* Every directory of the image can take a new file and a new directory,
 * and give them back. */
static bool directories_work(struct ordfs *fs, struct inode *dir, int depth)
{
	struct inode *f, *d;
	if (ordfs_create(fs, dir, ".crash-probe", 0644, &cred, &f) != 0)
		return false;
	inode_put(fs, f);
	if (ordfs_unlink(fs, dir, ".crash-probe") != 0)
		return false;
	if (ordfs_mkdir(fs, dir, ".crash-probe-d", 0755, &cred, &d) != 0)
		return false;
	inode_put(fs, d);
	if (ordfs_rmdir(fs, dir, ".crash-probe-d") != 0)
		return false;
	static const char *const subdirs[] = { "A", "B", "A/C" };
	if (depth > 0)
		return true;
	for (unsigned i = 0; i < 3; i++) {
		struct inode *sub = walk(fs, subdirs[i]);
		if (!sub)
			continue;
		bool ok = !S_ISDIR(sub->d.mode) || directories_work(fs, sub, 1);
		inode_put(fs, sub);
		if (!ok)
			return false;
	}
	return true;
}

static void quiet(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	if (verbose)
		fprintf(stderr, "  checker: [%d] %s\n", (int)code, msg);
}

/* A torn write: which 512-byte sectors of it reached the disk, and
 * whether the one that did not holds garbage instead of the old bytes. */
struct tear {
	size_t write;      /* index into lv->writes */
	uint64_t new_mask; /* bit i: sector i has the new bytes */
	int garbage;       /* a sector with garbage (-1: none) */
};

#define SECTOR 512u

/* The image of one crash state: base + the chosen writes, in log order,
 * and optionally one torn write. */
static struct blockdev *build_image(const struct run *r, const struct logview *lv,
				    const bool *include, const struct tear *tear)
{
	struct blockdev *img;
	if (blockdev_mem_from(r->base, IMG, &img))
		return NULL;
	uint8_t *bytes = blockdev_mem_bytes(img);
	for (size_t w = 0; w < lv->nwrites; w++) {
		const struct blockdev_event *e = &lv->ev[lv->writes[w]];
		if (e->off + e->len > IMG)
			continue;
		if (include[w]) {
			memcpy(bytes + e->off, e->data, e->len);
		} else if (tear && tear->write == w) {
			for (size_t sct = 0; sct * SECTOR < e->len; sct++) {
				size_t n = e->len - sct * SECTOR < SECTOR ? e->len - sct * SECTOR : SECTOR;
				uint8_t *dst = bytes + e->off + sct * SECTOR;
				if ((int)sct == tear->garbage)
					memset(dst, 0xa5, n);
				else if (sct < 64 && (tear->new_mask >> sct) & 1)
					memcpy(dst, e->data + sct * SECTOR, n);
			}
		}
	}
	return img;
}

/* The oracle on one crash-state image (consumed). */
static void oracle(const char *workload, const struct run *r, const struct logview *lv,
		   struct blockdev *img, size_t limit, const char *state)
{
	states_checked++;
	struct ordfs_options opts = r->opts;
	struct ordfs *fs;
	const char *why = "";
	if (ordfs_mount(img, &opts, &fs, &why) != 0) {
		violation(workload, state, "mount (recovery) failed: %s", why);
		blockdev_destroy(img);
		return;
	}
	struct expectation ex[64];
	unsigned nex = expectations(lv, limit, ex, 64);
	bool ordered = opts.data_mode == JOURNAL_DATA_ORDERED;
	for (unsigned i = 0; i < nex; i++) {
		const struct expectation *e = &ex[i];
		if (e->binding || (e->either && ordered)) {
			uint64_t size = 0, h = 0;
			bool there = has_bytes(fs, e->path, &h, &size);
			bool ok = there && ((h == e->hash && size == e->size) ||
					    (e->either && h == e->alt_hash && size == e->alt_size));
			if (!ok)
				violation(workload, state, "%s: %s, found %s (%" PRIu64 " bytes)", e->path,
					  e->either ? "old or new bytes expected (replace via rename)"
						    : "fsync returned",
					  there ? "other bytes" : "no file", size);
		}
		if (e->pair[0]) {
			uint64_t s1 = 0, s2 = 0, h1 = 0, h2 = 0;
			bool a = has_bytes(fs, e->path, &h1, &s1) && h1 == e->hash && s1 == e->size;
			bool b = has_bytes(fs, e->pair, &h2, &s2) && h2 == e->hash && s2 == e->size;
			if (a == b)
				violation(workload, state, "rename %s -> %s: the file is under %s", e->path,
					  e->pair, a ? "both names" : "neither name");
		}
	}
	struct inode *root;
	if (inode_get(fs, ORDFS_ROOT_INO, &root) == 0) {
		if (!directories_work(fs, root, 0))
			violation(workload, state, "a directory refuses create/delete");
		inode_put(fs, root);
	}
	if (ordfs_unmount(fs) != 0)
		violation(workload, state, "unmount after recovery failed");
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = quiet;
	if (ordfs_check(img, &res) != 0 || res.problems)
		violation(workload, state, "checker: %u problems", res.problems);
	blockdev_destroy(img);
}


/* A crash during recovery: recovery of img is logged, then cut after each
 * of its writes and the oracle run on what a second recovery makes of it. */
static void crash_during_recovery(const char *workload, const struct run *r,
				  const struct logview *lv, struct blockdev *img, size_t limit,
				  const char *state)
{
	struct ordfs_super sb;
	const char *why;
	if (ordfs_read_super(img, false, &sb, &why) != 0 || journal_needs_recovery(img, &sb) != 1)
		return;
	struct blockdev *copy, *rec;
	if (blockdev_mem_from(blockdev_mem_bytes(img), IMG, &copy))
		return;
	if (blockdev_record_create(copy, true, &rec)) {
		blockdev_destroy(copy);
		return;
	}
	struct journal_recovery_info info;
	if (journal_recover(rec, &sb, 0, &info) == 0) {
		size_t n;
		const struct blockdev_event *ev = blockdev_record_events(rec, &n);
		size_t writes = 0;
		for (size_t i = 0; i < n; i++)
			writes += ev[i].type == BD_EV_WRITE;
		for (size_t cut = 0; cut < writes; cut++) {
			struct blockdev *again;
			if (blockdev_mem_from(blockdev_mem_bytes(img), IMG, &again))
				break;
			size_t applied = 0;
			for (size_t i = 0; i < n && applied < cut; i++) {
				if (ev[i].type != BD_EV_WRITE)
					continue;
				memcpy(blockdev_mem_bytes(again) + ev[i].off, ev[i].data, ev[i].len);
				applied++;
			}
			char st[160];
			snprintf(st, sizeof(st), "%s, recovery cut after %zu/%zu writes", state, cut,
				 writes);
			oracle(workload, r, lv, again, limit, st);
		}
	}
	blockdev_destroy(rec);
	blockdev_destroy(copy);
}

static void check_state(const char *workload, const struct run *r, const struct logview *lv,
			const bool *include, const struct tear *tear, size_t limit,
			const char *state, bool cut_recovery)
{
	struct blockdev *img = build_image(r, lv, include, tear);
	if (!img)
		return;
	if (cut_recovery)
		crash_during_recovery(workload, r, lv, img, limit, state);
	oracle(workload, r, lv, img, limit, state);
}

/* (a) every prefix of the write log, and (b) subsets between flushes. */
static void enumerate(const char *workload, const struct run *r, uint64_t seed)
{
	struct logview lv = { 0 };
	lv.ev = blockdev_record_events(r->rec, &lv.n);
	lv.writes = calloc(lv.n + 1, sizeof(size_t));
	lv.flushes = calloc(lv.n + 1, sizeof(size_t));
	bool *include = calloc(lv.n + 1, sizeof(bool));
	uint64_t *seen = calloc(MAX_STATES * 2, sizeof(uint64_t));
	if (!lv.writes || !lv.flushes || !include || !seen)
		goto out;
	for (size_t i = 0; i < lv.n; i++) {
		if (lv.ev[i].type == BD_EV_WRITE)
			lv.writes[lv.nwrites++] = i;
		else if (lv.ev[i].type == BD_EV_FLUSH)
			lv.flushes[lv.nflushes++] = i;
	}
	uint64_t budget = MAX_STATES, nseen = 0;
	char state[96];

	/* (a) prefixes: the crash right after write w (or before any). */
	for (size_t w = 0; w <= lv.nwrites && budget; w++, budget--) {
		for (size_t k = 0; k < lv.nwrites; k++)
			include[k] = k < w;
		size_t limit = w < lv.nwrites ? lv.writes[w] : lv.n;
		snprintf(state, sizeof(state), "prefix %zu/%zu", w, lv.nwrites);
		/* (d) every fourth prefix also crashes during its recovery */
		check_state(workload, r, &lv, include, NULL, limit, state, w % 4 == 1);
	}

	/* (c) torn writes: the crash during write w; sectors old or new, or
	 * one holding garbage. */
	for (size_t w = 0; w < lv.nwrites && budget; w++) {
		const struct blockdev_event *e = &lv.ev[lv.writes[w]];
		size_t sectors = (e->len + SECTOR - 1) / SECTOR;
		if (sectors < 2)
			continue;
		for (size_t k = 0; k < lv.nwrites; k++)
			include[k] = k < w;
		uint64_t all = sectors >= 64 ? ~0ull : (1ull << sectors) - 1;
		const struct tear tears[] = {
			{ w, all >> (sectors / 2 < 64 ? sectors / 2 : 63), -1 },  /* first half new */
			{ w, all & ~(all >> (sectors / 2 < 64 ? sectors / 2 : 63)), -1 }, /* last half */
			{ w, 1, -1 },                                            /* sector 0 */
			{ w, 2, -1 },                                            /* sector 1 */
			{ w, all, (int)(fnv(&w, sizeof(w), seed) % sectors) },    /* garbage */
			{ w, all, 0 },                                           /* garbage 0 */
		};
		/* Sectors 0 and 1 alone matter for the two superblocks, whose
		 * copies sit one per sector. */
		for (unsigned t = 0; t < sizeof(tears) / sizeof(tears[0]) && budget;
		     t++, budget--) {
			snprintf(state, sizeof(state), "torn write %zu/%zu variant %u", w, lv.nwrites,
				 t);
			check_state(workload, r, &lv, include, &tears[t], lv.writes[w], state, false);
		}
	}

	/* (b) between flush k-1 and flush k: the earlier writes all durable,
	 * any subset of these. */
	uint64_t rng = seed;
	for (size_t k = 0; k < lv.nflushes && budget; k++) {
		size_t lo = k ? lv.flushes[k - 1] : 0, hi = lv.flushes[k];
		size_t first = 0, count = 0;
		for (size_t w = 0; w < lv.nwrites; w++) {
			if (lv.writes[w] < lo)
				first = w + 1;
			else if (lv.writes[w] < hi)
				count++;
		}
		if (count < 2)
			continue; /* prefixes covered it */
		uint64_t total = count <= SUBSET_ALL_MAX ? (1ull << count) : 0;
		uint64_t tries = total ? total : 200 + count * count;
		for (uint64_t t = 0; t < tries && budget; t++) {
			uint64_t mask;
			if (total) {
				mask = t;
			} else if (t < count * count) {
				/* pairs: all but writes t/count and t%count */
				mask = ~0ull;
				mask &= ~(1ull << (t / count % 64));
				mask &= ~(1ull << (t % count % 64));
			} else {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				mask = rng;
			}
			for (size_t w = 0; w < lv.nwrites; w++)
				include[w] = w < first || (w < first + count && ((mask >> ((w - first) % 64)) & 1));
			uint64_t key = fnv(include, lv.nwrites, 1469598103934665603ull);
			bool dup = false;
			for (uint64_t s = 0; s < nseen && !dup; s++)
				dup = seen[s] == key;
			if (dup)
				continue;
			if (nseen < MAX_STATES * 2)
				seen[nseen++] = key;
			budget--;
			snprintf(state, sizeof(state), "flush %zu subset %#" PRIx64, k, mask);
			check_state(workload, r, &lv, include, NULL, hi, state, false);
		}
	}
out:
	free(lv.writes);
	free(lv.flushes);
	free(include);
	free(seen);
}

/* ---- workloads ------------------------------------------------------------ */

typedef void (*workload_fn)(struct run *r, uint64_t seed);

static void w_fsync_files(struct run *r, uint64_t seed)
{
	(void)seed;
	op_mkdir(r, "A");
	op_write(r, "A/f", 0, 5000, 1);
	op_fsync(r, "A/f", false);
	op_write(r, "B", 0, 100, 2); /* a file named B at the root */
	op_fsync(r, "B", true);
	op_write(r, "A/f", 3000, 9000, 3);
	op_fsync(r, "A/f", false);
}

static void w_rename_replace(struct run *r, uint64_t seed)
{
	(void)seed;
	op_write(r, "old", 0, 6000, 4);
	op_write(r, "other", 0, 100, 6);
	op_fsync(r, "old", false);
	op_write(r, "new.tmp", 0, 7000, 5);
	op_rename(r, "new.tmp", "old"); /* replace via rename, no fsync */
	/* Another file's fsync commits the rename before any writeback of
	 * new.tmp's data would: without auto_da_alloc, "old" is empty here. */
	op_write(r, "other", 0, 200, 7);
	op_fsync(r, "other", false);
	op_sync(r);
	op_fsync(r, "old", false);
}

static void w_truncate_fallocate(struct run *r, uint64_t seed)
{
	(void)seed;
	op_write(r, "t", 0, 40000, 6);
	op_fsync(r, "t", false);
	op_truncate(r, "t", 5000);
	op_fsync(r, "t", false);
	op_fallocate(r, "t", 0x01 /* KEEP_SIZE */, 0, 80000);
	op_fallocate(r, "t", 0x02 | 0x01 /* PUNCH_HOLE */, 4096, 4096);
	op_fsync(r, "t", false);
	op_write(r, "t", 70000, 3000, 7);
	op_fsync(r, "t", true);
}

static void w_unlink_mkdir(struct run *r, uint64_t seed)
{
	(void)seed;
	op_mkdir(r, "A");
	op_mkdir(r, "A/C");
	op_write(r, "A/C/x", 0, 12000, 8);
	op_fsync(r, "A/C/x", false);
	op_unlink(r, "A/C/x");
	op_write(r, "A/y", 0, 3000, 9);
	op_fsync(r, "A/y", false);
	op_rename(r, "A/y", "B");
	op_sync(r);
}

/* Two generated operations on the small file set, each followed or not
 * by an fsync/fdatasync/sync (ACE-style). */
static const char *const gen_files[] = { "A/f", "A/g", "B/h", "A/C/i" };

static void gen_op(struct run *r, uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	uint64_t x = *rng >> 11;
	const char *f = gen_files[x % 4];
	const char *g = gen_files[(x / 4) % 4];
	switch ((x / 16) % 8) {
	case 0: op_write(r, f, 0, 100 + x % 9000, (uint8_t)x); break;             /* overwrite */
	case 1: op_write(r, f, (x / 128) % 20000, 1 + x % 6000, (uint8_t)(x >> 8)); break;
	case 2: op_truncate(r, f, (x / 128) % 15000); break;
	case 3: op_unlink(r, f); break;
	case 4: op_rename(r, f, g); break;
	case 5: op_fallocate(r, f, (x / 128) % 2 ? 0x03 : 0x01, (x / 256) % 16384, 1 + x % 12000); break;
	case 6: op_fallocate(r, f, 0x10 /* ZERO_RANGE */, (x / 256) % 16384, 1 + x % 8000); break;
	default: op_mkdir(r, (x / 128) % 2 ? "A/C" : "B/D"); break;
	}
	switch ((x / 4096) % 4) {
	case 0: op_fsync(r, f, false); break;
	case 1: op_fsync(r, f, true); break;
	case 2: op_sync(r); break;
	default: break; /* no sync */
	}
}

static void w_generated(struct run *r, uint64_t seed)
{
	op_mkdir(r, "A");
	op_mkdir(r, "B");
	op_mkdir(r, "A/C");
	for (unsigned i = 0; i < 4; i++)
		op_write(r, gen_files[i], 0, 2000 + i * 3000, (uint8_t)(i + 10));
	op_sync(r);
	uint64_t rng = seed;
	gen_op(r, &rng);
	gen_op(r, &rng);
}

static void run_workload(const char *name, workload_fn fn, uint64_t seed,
			 enum journal_data_mode mode, uint32_t journal_blocks)
{
	struct run r;
	char label[96];
	snprintf(label, sizeof(label), "%s seed %" PRIu64 " %s journal %u", name, seed,
		 mode == JOURNAL_DATA_ORDERED ? "ordered" : "writeback", journal_blocks);
	if (run_start(&r, mode, journal_blocks) != 0) {
		violation(label, "setup", "could not make and mount the image");
		return;
	}
	fn(&r, seed);
	/* The crash may come before the unmount: enumerate what is logged. */
	enumerate(label, &r, seed);
	workloads_run++;
	(void)ordfs_unmount(r.fs);
	blockdev_destroy(r.rec);
	blockdev_destroy(r.mem);
	free(r.base);
}

int main(int argc, char **argv)
{
	bool longrun = false;
	uint64_t seed = 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--long") == 0)
			longrun = true;
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-v") == 0)
			verbose = true;
		else {
			fprintf(stderr, "usage: crash [--long] [--seed N] [-v]\n");
			return 2;
		}
	}
	static const struct { const char *name; workload_fn fn; } fixed[] = {
		{ "fsync-files", w_fsync_files },
		{ "rename-replace", w_rename_replace },
		{ "truncate-fallocate", w_truncate_fallocate },
		{ "unlink-mkdir", w_unlink_mkdir },
	};
	enum journal_data_mode modes[] = { JOURNAL_DATA_ORDERED, JOURNAL_DATA_WRITEBACK };
	for (unsigned m = 0; m < 2; m++)
		for (unsigned i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
			run_workload(fixed[i].name, fixed[i].fn, seed, modes[m], 0);
			run_workload(fixed[i].name, fixed[i].fn, seed, modes[m], 64);
		}
	unsigned generated = longrun ? 2000 : 40;
	for (unsigned i = 0; i < generated; i++)
		run_workload("generated-2op", w_generated, seed * 1000003u + i,
			     i % 4 == 3 ? JOURNAL_DATA_WRITEBACK : JOURNAL_DATA_ORDERED,
			     i % 2 ? 64 : 0);
	printf("crash: %" PRIu64 " workloads, %" PRIu64 " crash states checked, %" PRIu64
	       " violations\n", workloads_run, states_checked, violations);
	return violations ? 1 : 0;
}
