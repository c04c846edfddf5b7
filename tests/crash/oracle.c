/*
 * oracle.c - what must hold on every crash image of a library workload.
 *
 * From the marks before the crash point (harness.h):
 *   - the mount (journal replay) succeeds;
 *   - a file whose fsync returned, unchanged since, is exact: content,
 *     size, mode, link count, xattr (after fdatasync: content and size);
 *     a directory's fsync also binds its mode and link count;
 *   - a name made durable (fsyncdir, sync, fsync of a directory) is there;
 *     a removal made durable is not;
 *   - a durable regular file being renamed is under exactly one of the two
 *     names; in data=ordered, a rename over a durable file leaves the old
 *     or the new bytes there (replace-via-rename);
 *   - in every mode, no file shows a byte that no write put in it at
 *     that offset (garbage, another file's blocks, stale data): every
 *     non-zero byte matches one of its writes' patterns;
 *   - in data=ordered and data=journal, a file is one of its versions
 *     from the last durable one on ("V" and "S" marks), byte by byte: its
 *     size is one of theirs (or a block boundary between the smallest and
 *     the largest: writeback raises the size a run of blocks at a time),
 *     and each byte is what one of them holds at that offset, so an
 *     appended file is a prefix of the new bytes at least as long as the
 *     old, and a truncate that did not happen has cut nothing away;
 *   - in every mode, growing a file after recovery shows zeros past its
 *     old end (no bytes a crash left past EOF come back);
 *   - every directory takes a new file and a new directory and gives them
 *     back; after unmount the checker finds nothing;
 *   - the block count after replay is the base image's until a grow began
 *     ("G old new"), old or new while it ran, new once it returned ("g");
 *     the backup superblock in that count's last block is valid and has
 *     that count (the checker does not read it; a grow writes the new one
 *     before its commit); a grown filesystem (the new count) takes a file
 *     in its new space: with every free block below the old count held,
 *     a file of three blocks is written, fsync'd and read back, and the
 *     blocks in use past the old count grow by at least its three; after
 *     the checker, both superblocks on the image have the count judged.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "ops.h"
#include "alloc/alloc.h"
#include "check/check.h"
#include "super/super.h"

static const struct ordfs_cred cred = { 0, 0 };

struct expectation {
	char path[128];
	bool binding, full;     /* D (full) or d */
	uint64_t fhash, dhash, size;
	bool either;            /* old (dhash, size) or the renamed file's */
	uint64_t alt_dhash, alt_size;
	char pair[128];         /* a durable file renamed to pair */
	bool exists, absent;    /* E, A */
};

struct data_write {
	uint32_t ino;
	uint64_t off, len;
	uint8_t fill;
};

#define MAX_EXP 96
#define MAX_WRITES 4096

struct promises {
	struct expectation e[MAX_EXP];
	unsigned n;
	struct data_write *w;
	size_t nw;
	bool *visible; /* [k]: "V ino k" came before the crash point */
	bool *durable; /* [k]: "S ino k" did */
	bool grow_began, grow_returned; /* "G", "g" */
	uint64_t grow_old, grow_new;
};

static struct expectation *find(struct promises *p, const char *path)
{
	for (unsigned k = 0; k < p->n; k++)
		if (strcmp(p->e[k].path, path) == 0)
			return &p->e[k];
	if (p->n == MAX_EXP)
		return NULL;
	struct expectation *e = &p->e[p->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->path, sizeof(e->path), "%s", path);
	return e;
}

static void on_rename(struct promises *p, const char *from, const char *to, uint64_t h,
		      uint64_t size)
{
	struct expectation *fe = find(p, from), *te = find(p, to);
	if (!fe || !te || strcmp(from, to) == 0)
		return;
	/* An earlier rename's promise ("under exactly one of X and from/to")
	 * ends when its file moves on or is replaced. */
	for (unsigned k = 0; k < p->n; k++)
		if (strcmp(p->e[k].pair, from) == 0 || strcmp(p->e[k].pair, to) == 0)
			p->e[k].pair[0] = 0;
	bool from_durable = fe->binding && fe->dhash == h && fe->size == size;
	bool to_durable = te->binding;
	uint64_t old_h = te->dhash, old_size = te->size;
	memset(te->pair, 0, sizeof(te->pair));
	te->binding = te->either = te->exists = te->absent = false;
	if (to_durable) {
		te->either = true; /* old bytes of to, or the renamed file */
		te->dhash = old_h;
		te->size = old_size;
		te->alt_dhash = h;
		te->alt_size = size;
	}
	fe->binding = fe->either = fe->exists = fe->absent = false;
	fe->pair[0] = 0;
	if (from_durable) {
		snprintf(fe->pair, sizeof(fe->pair), "%s", to);
		fe->dhash = h;
		fe->size = size;
	}
}

/* A collapse or insert moved every byte of ino at or after `from` by
 * delta: each write reaching past from is also allowed at its new place
 * (its bytes keep their pattern; a part moved below offset 0 is cut). */
static void move_writes(struct promises *p, uint32_t ino, uint64_t from, int64_t delta)
{
	size_t n = p->nw;
	for (size_t i = 0; i < n && p->nw < MAX_WRITES; i++) {
		struct data_write w = p->w[i];
		if (w.ino != ino || w.off + w.len <= from)
			continue;
		int64_t to = (int64_t)w.off + delta;
		if (to < 0) {
			uint64_t cut = (uint64_t)-to;
			if (cut >= w.len)
				continue;
			w.fill = (uint8_t)(w.fill + cut * 7);
			w.len -= cut;
			to = 0;
		}
		w.off = (uint64_t)to;
		p->w[p->nw++] = w;
	}
}

static void gather(const struct crash_log *log, size_t limit, size_t nversions,
		   struct promises *p)
{
	for (size_t i = 0; i < limit && i < log->n; i++) {
		if (log->ev[i].type != BD_EV_MARK)
			continue;
		const char *m = (const char *)log->ev[i].data;
		char path[128], to[128];
		uint64_t fh = 0, dh = 0, size = 0, off, len;
		int64_t delta;
		unsigned ino, fill;
		struct expectation *e;
		switch (m[0]) {
		case 'R':
			if (sscanf(m, "R %127s %127s %" SCNu64 " %" SCNu64, path, to, &dh, &size) == 4)
				on_rename(p, path, to, dh, size);
			break;
		case 'D':
		case 'd':
			if (sscanf(m + 2, "%127s %" SCNu64 " %" SCNu64 " %" SCNu64, path, &fh, &dh,
				   &size) != 4 || !(e = find(p, path)))
				break;
			e->binding = true;
			e->full = m[0] == 'D';
			e->either = false;
			e->pair[0] = 0;
			e->fhash = fh;
			e->dhash = dh;
			e->size = size;
			e->absent = false;
			break;
		case 'T':
			if (sscanf(m, "T %127s", path) != 1 || !(e = find(p, path)))
				break;
			e->binding = e->either = false;
			e->pair[0] = 0;
			/* A change of a rename's target ends the rename's promise. */
			for (unsigned k = 0; k < p->n; k++)
				if (strcmp(p->e[k].pair, path) == 0)
					p->e[k].pair[0] = 0;
			break;
		case 'N':
		case 'E':
		case 'A':
			if (sscanf(m + 2, "%127s", path) != 1 || !(e = find(p, path)))
				break;
			e->exists = m[0] == 'E';
			e->absent = m[0] == 'A';
			if (m[0] == 'A')
				e->binding = e->either = false;
			break;
		case 'W':
			if (sscanf(m, "W %u %" SCNu64 " %" SCNu64 " %u", &ino, &off, &len, &fill) == 4 &&
			    p->nw < MAX_WRITES)
				p->w[p->nw++] = (struct data_write){ ino, off, len, (uint8_t)fill };
			break;
		case 'M':
			if (sscanf(m, "M %u %" SCNu64 " %" SCNd64, &ino, &off, &delta) == 3)
				move_writes(p, ino, off, delta);
			break;
		case 'G':
			if (sscanf(m, "G %" SCNu64 " %" SCNu64, &off, &len) == 2) {
				p->grow_began = true;
				p->grow_returned = false;
				p->grow_old = off;
				p->grow_new = len;
			}
			break;
		case 'g':
			p->grow_returned = p->grow_began;
			break;
		case 'V':
		case 'S':
			if (sscanf(m + 2, "%u %" SCNu64, &ino, &off) == 2 && off < nversions)
				(m[0] == 'V' ? p->visible : p->durable)[off] = true;
			break;
		default:
			break;
		}
	}
}

/* Every directory of the universe (and the root) takes a new file and a new
 * directory, and gives them back. */
static bool directory_works(struct ordfs *fs, struct inode *dir)
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
	return ordfs_rmdir(fs, dir, ".crash-probe-d") == 0;
}

static void check_directories(const struct crash_oracle_ctx *c, struct ordfs *fs,
			      const struct promises *p, const char *state)
{
	struct inode *d = crash_walk(fs, "");
	if (d && !directory_works(fs, d))
		crash_violation(c->workload, state, "the root refuses create/delete");
	if (d)
		inode_put(fs, d);
	const char *const *u = c->run->universe;
	for (unsigned i = 0; u && u[i]; i++) {
		d = crash_walk(fs, u[i]);
		if (d && S_ISDIR(d->d.mode) && !directory_works(fs, d))
			crash_violation(c->workload, state, "%s refuses create/delete", u[i]);
		if (d)
			inode_put(fs, d);
	}
	(void)p;
}

/* Each non-zero byte of each written inode matches a write to it. */
static void check_no_stray_data(const struct crash_oracle_ctx *c, struct ordfs *fs,
				const struct promises *p, const char *state)
{
	uint8_t buf[CRASH_BS];
	for (size_t i = 0; i < p->nw; i++) {
		uint32_t ino = p->w[i].ino;
		bool first = true;
		for (size_t k = 0; k < i && first; k++)
			first = p->w[k].ino != ino;
		struct inode *f;
		if (!first || inode_get(fs, ino, &f) != 0)
			continue;
		if (!S_ISREG(f->d.mode) || f->d.links == 0) {
			inode_put(fs, f);
			continue;
		}
		for (uint64_t off = 0;; off += CRASH_BS) {
			ssize_t n = ordfs_read(fs, f, buf, CRASH_BS, off);
			if (n <= 0)
				break;
			for (ssize_t b = 0; b < n; b++) {
				if (!buf[b])
					continue;
				uint64_t x = off + (uint64_t)b;
				bool ok = false;
				for (size_t k = p->nw; k-- > 0 && !ok;) {
					const struct data_write *w = &p->w[k];
					ok = w->ino == ino && x >= w->off && x < w->off + w->len &&
					     buf[b] == (uint8_t)(w->fill + (x - w->off) * 7);
				}
				if (!ok) {
					crash_violation(c->workload, state,
							"inode %u byte %" PRIu64 " is %#x: no write put it "
							"there (stale or foreign data)", ino, x, buf[b]);
					for (size_t k = 0; crash_verbose && k < p->nw; k++)
						if (p->w[k].ino == ino)
							fprintf(stderr, "  write %zu: off %" PRIu64
								" len %" PRIu64 " fill %#x\n", k, p->w[k].off,
								p->w[k].len, p->w[k].fill);
					if (crash_verbose)
						fprintf(stderr, "  size %" PRIu64 ", links %u\n", f->size,
							f->d.links);
					inode_put(fs, f);
					return;
				}
			}
		}
		inode_put(fs, f);
	}
}

/* Reads all of f (without moving atime) into a buffer; its size in *size. */
static uint8_t *read_all(struct ordfs *fs, struct inode *f, uint64_t *size)
{
	uint8_t *buf = NULL;
	uint64_t cap = 0;
	*size = 0;
	for (;;) {
		if (*size + CRASH_BS > cap) {
			uint8_t *b = realloc(buf, cap + 16 * CRASH_BS);
			if (!b)
				break;
			buf = b;
			cap += 16 * CRASH_BS;
		}
		ssize_t n = ordfs_read_for_write(fs, f, buf + *size, CRASH_BS, *size);
		if (n <= 0)
			break;
		*size += (uint64_t)n;
	}
	return buf;
}

/* The versions inode ino may show: visible ones from its last durable one
 * on (all visible ones if none is durable yet), newest first.  Returns
 * how many, in cand[0..]. */
static size_t candidates(const struct crash_run *r, const struct promises *p, uint32_t ino,
			 const struct crash_version **cand)
{
	size_t floor = 0, n = 0;
	for (size_t k = 0; k < r->nversions; k++)
		if (r->versions[k].ino == ino && p->durable[k])
			floor = k;
	for (size_t k = r->nversions; k-- > floor;)
		if (r->versions[k].ino == ino && p->visible[k])
			cand[n++] = &r->versions[k];
	return n;
}

/* data=ordered and data=journal: the file is its versions' bytes (see the
 * header).  Returns false after reporting a violation. */
static bool file_is_a_version(const struct crash_oracle_ctx *c, uint32_t ino, const uint8_t *buf,
			      uint64_t size, const struct crash_version **cand, size_t n,
			      const char *state)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	bool size_ok = false;
	for (size_t i = 0; i < n; i++) {
		if (cand[i]->size == size && memcmp(cand[i]->data, buf, size) == 0)
			return true;
		size_ok |= cand[i]->size == size;
		lo = cand[i]->size < lo ? cand[i]->size : lo;
		hi = cand[i]->size > hi ? cand[i]->size : hi;
	}
	if (!size_ok && !(size % CRASH_BS == 0 && size >= lo && size <= hi)) {
		crash_violation(c->workload, state,
				"inode %u has %" PRIu64 " bytes: no version from its last durable one "
				"on had that size (%zu versions, %" PRIu64 "..%" PRIu64 ")", ino, size,
				n, lo, hi);
		return false;
	}
	for (uint64_t x = 0; x < size; x++) {
		bool ok = false;
		for (size_t i = 0; i < n && !ok; i++)
			ok = x < cand[i]->size && cand[i]->data[x] == buf[x];
		if (ok)
			continue;
		crash_violation(c->workload, state,
				"inode %u byte %" PRIu64 " is %#x (size %" PRIu64 "): no version from "
				"its last durable one on had it there", ino, x, buf[x], size);
		for (size_t i = 0; crash_verbose && i < n; i++)
			fprintf(stderr, "  version of %" PRIu64 " bytes: %s%#x\n", cand[i]->size,
				x < cand[i]->size ? "" : "(past its end) ",
				x < cand[i]->size ? cand[i]->data[x] : 0);
		return false;
	}
	return true;
}

/* Every inode with versions: it is one of them (data=ordered and
 * data=journal), and growing it shows zeros past its end (every mode). */
static void check_versions(const struct crash_oracle_ctx *c, struct ordfs *fs,
			   const struct promises *p, bool ordered, const char *state)
{
	const struct crash_run *r = c->run;
	const struct crash_version **cand = calloc(r->nversions + 1, sizeof(*cand));
	uint32_t *done = calloc(r->nversions + 1, sizeof(*done)); /* inodes judged */
	size_t ndone = 0;
	if (!cand || !done) {
		free(cand);
		free(done);
		return;
	}
	for (size_t k = 0; k < r->nversions; k++) {
		uint32_t ino = r->versions[k].ino;
		bool first = p->visible[k];
		for (size_t j = 0; j < ndone && first; j++)
			first = done[j] != ino;
		struct inode *f;
		if (!first)
			continue;
		done[ndone++] = ino;
		if (inode_get(fs, ino, &f) != 0)
			continue;
		if (!S_ISREG(f->d.mode) || f->d.links == 0) {
			inode_put(fs, f);
			continue;
		}
		uint64_t size;
		uint8_t *buf = read_all(fs, f, &size);
		size_t n = candidates(r, p, ino, cand);
		bool ok = !buf || !ordered || n == 0 || file_is_a_version(c, ino, buf, size, cand, n,
									  state);
		free(buf);
		/* Growing it: bytes past the old end read as zeros. */
		uint64_t grown = size + 2 * CRASH_BS + 123;
		uint8_t *tail = ok ? calloc(1, grown - size) : NULL;
		if (tail && ordfs_truncate(fs, f, grown) == 0 &&
		    ordfs_read_for_write(fs, f, tail, grown - size, size) == (ssize_t)(grown - size)) {
			for (uint64_t x = 0; x < grown - size; x++)
				if (tail[x]) {
					crash_violation(c->workload, state,
							"inode %u grown from %" PRIu64 " bytes shows %#x at "
							"%" PRIu64 " (bytes past its old end came back)",
							ino, size, tail[x], size + x);
					break;
				}
		}
		free(tail);
		inode_put(fs, f);
	}
	free(cand);
	free(done);
}

/* The block count replay left, and the backup superblock at its end (see
 * the header).  Returns the count. */
static uint64_t check_size(const struct crash_oracle_ctx *c, struct blockdev *img,
			   struct ordfs *fs, const struct promises *p, const char *state)
{
	uint64_t count = fs_block_count(fs);
	struct ordfs_super base, backup;
	const char *why = "";
	if (p->grow_returned) {
		if (count != p->grow_new)
			crash_violation(c->workload, state, "%" PRIu64 " blocks after replay: the "
					"grow to %" PRIu64 " had returned", count, p->grow_new);
	} else if (p->grow_began) {
		if (count != p->grow_old && count != p->grow_new)
			crash_violation(c->workload, state, "%" PRIu64 " blocks after replay: "
					"neither the old %" PRIu64 " nor the new %" PRIu64, count,
					p->grow_old, p->grow_new);
	} else if (ordfs_super_decode(c->log->base, &base, &why) != 0 ||
		   count != base.block_count) {
		crash_violation(c->workload, state, "%" PRIu64 " blocks after replay, no grow "
				"begun (the base: %s)", count, why[0] ? why : "another count");
	}
	uint8_t raw[ORDFS_SB_SIZE];
	if (count == 0 || (count - 1) * fs->block_size + ORDFS_SB_SIZE > c->log->size ||
	    blockdev_read(img, raw, sizeof(raw), (count - 1) * fs->block_size) != 0) {
		crash_violation(c->workload, state, "no backup superblock at block %" PRIu64
				" (past the device)", count - 1);
	} else if (ordfs_super_decode(raw, &backup, &why) != 0) {
		crash_violation(c->workload, state, "the backup superblock at block %" PRIu64
				" is not valid: %s", count - 1, why);
	} else if (backup.block_count != count || backup.data_start != fs->sb.data_start) {
		crash_violation(c->workload, state, "the backup superblock at block %" PRIu64
				" says %" PRIu64 " blocks", count - 1, backup.block_count);
	}
	return count;
}

struct claimed_run {
	uint64_t start;
	uint32_t len;
};

/* A grown filesystem takes a file in its new space (see the header). */
static void check_new_space(const struct crash_oracle_ctx *c, struct ordfs *fs, uint64_t old,
			    const char *state)
{
	uint64_t count = fs_block_count(fs), from = 0;
	struct claimed_run *runs = NULL;
	size_t n = 0;
	for (;;) {
		uint64_t start;
		uint32_t len;
		alloc_claim_free_run(fs->alloc, from, UINT32_MAX, &start, &len);
		if (!len)
			break;
		if (start >= old) {
			alloc_unclaim_blocks(fs->alloc, start, len, 0);
			break;
		}
		if (start + len > old) {
			alloc_unclaim_blocks(fs->alloc, old, (uint32_t)(start + len - old), 0);
			len = (uint32_t)(old - start);
		}
		struct claimed_run *v = realloc(runs, (n + 1) * sizeof(*v));
		if (!v) {
			alloc_unclaim_blocks(fs->alloc, start, len, 0);
			break;
		}
		runs = v;
		runs[n++] = (struct claimed_run){ start, len };
		from = start + len;
	}
	enum { PROBE = 3 * CRASH_BS };
	static uint8_t want[PROBE], got[PROBE];
	for (size_t i = 0; i < PROBE; i++)
		want[i] = (uint8_t)(i * 13 + 5);
	uint64_t before = crash_blocks_in_use(fs, old, count - 1);
	struct inode *root = crash_walk(fs, ""), *f = NULL;
	int err = root ? ordfs_create(fs, root, ".grow-probe", 0644, &cred, &f) : -ENOENT;
	ssize_t wrote = err ? err : ordfs_write(fs, f, want, PROBE, 0);
	if (wrote == PROBE)
		err = ordfs_fsync(fs, f, false);
	else
		err = wrote < 0 ? (int)wrote : -EIO;
	if (!err && ordfs_read(fs, f, got, PROBE, 0) != PROBE)
		err = -EIO;
	uint64_t after = crash_blocks_in_use(fs, old, count - 1);
	if (err)
		crash_violation(c->workload, state, "grown to %" PRIu64 " blocks, a file of %u "
				"bytes in the new space fails: %d", count, (unsigned)PROBE, err);
	else if (memcmp(want, got, PROBE) != 0)
		crash_violation(c->workload, state, "a file in the new space reads back other bytes");
	else if (after < before + PROBE / CRASH_BS)
		crash_violation(c->workload, state, "a file written with every block below %" PRIu64
				" held took %" PRIu64 " blocks past it (%u expected)", old,
				after - before, (unsigned)(PROBE / CRASH_BS));
	if (f)
		inode_put(fs, f);
	if (root)
		inode_put(fs, root);
	for (size_t i = 0; i < n; i++)
		alloc_unclaim_blocks(fs->alloc, runs[i].start, runs[i].len, 0);
	free(runs);
}

static void quiet(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	if (crash_verbose)
		fprintf(stderr, "  checker: [%d] %s\n", (int)code, msg);
}

void crash_oracle(void *ctx, struct blockdev *img, size_t limit, const char *state)
{
	const struct crash_oracle_ctx *c = ctx;
	crash_states_checked++;
	const char *dump = getenv("CRASH_DUMP_STATE");
	if (dump && strstr(state, dump)) {
		FILE *out = fopen("/tmp/crash-state.img", "w");
		if (out) {
			fwrite(blockdev_mem_bytes(img), 1, c->log->size, out);
			fclose(out);
		}
	}
	struct ordfs_options opts = c->run->opts;
	struct ordfs *fs;
	uint64_t count = 0;
	const char *why = "";
	if (ordfs_mount(img, &opts, &fs, &why) != 0) {
		crash_violation(c->workload, state, "mount (recovery) failed: %s", why);
		return;
	}
	struct promises *p = calloc(1, sizeof(*p));
	size_t nv = c->run->nversions;
	if (p) {
		p->w = calloc(MAX_WRITES, sizeof(*p->w));
		p->visible = calloc(nv + 1, sizeof(bool));
		p->durable = calloc(nv + 1, sizeof(bool));
	}
	if (!p || !p->w || !p->visible || !p->durable) {
		crash_violation(c->workload, state, "out of memory");
		goto out;
	}
	gather(c->log, limit, nv, p);
	count = check_size(c, img, fs, p, state);
	/* data=journal promises at least what data=ordered does. */
	bool ordered = opts.data_mode != JOURNAL_DATA_WRITEBACK;
	for (unsigned i = 0; i < p->n; i++) {
		const struct expectation *e = &p->e[i];
		uint64_t fh = 0, dh = 0, size = 0;
		bool there = crash_node_hash(fs, e->path, &fh, &dh, &size);
		if (e->binding || (e->either && ordered)) {
			bool ok = there && ((dh == e->dhash && size == e->size &&
					     (!e->binding || !e->full || fh == e->fhash)) ||
					    (e->either && dh == e->alt_dhash && size == e->alt_size));
			if (!ok)
				crash_violation(c->workload, state, "%s: %s, found %s (%" PRIu64 " bytes)",
						e->path,
						e->either ? "old or new bytes expected (replace via rename)"
						: e->full ? "fsync returned"
							  : "fdatasync returned",
						!there ? "no file"
						: dh != e->dhash || size != e->size ? "other bytes"
										    : "other mode, links or xattr",
						size);
		}
		if (e->exists && !there)
			crash_violation(c->workload, state, "%s: durable name missing", e->path);
		if (e->absent && there)
			crash_violation(c->workload, state, "%s: durably removed name is back",
					e->path);
		if (e->pair[0]) {
			uint64_t f2, d1 = 0, d2 = 0, s1 = 0, s2 = 0;
			bool a = crash_node_hash(fs, e->path, &f2, &d1, &s1) && d1 == e->dhash &&
				 s1 == e->size;
			bool b = crash_node_hash(fs, e->pair, &f2, &d2, &s2) && d2 == e->dhash &&
				 s2 == e->size;
			if (a == b)
				crash_violation(c->workload, state, "rename %s -> %s: the file is under %s",
						e->path, e->pair, a ? "both names" : "neither name");
		}
	}
	check_no_stray_data(c, fs, p, state);
	check_versions(c, fs, p, ordered, state);
	check_directories(c, fs, p, state);
	if (p->grow_began && p->grow_new > p->grow_old && count == p->grow_new)
		check_new_space(c, fs, p->grow_old, state);
out:
	if (p) {
		free(p->w);
		free(p->visible);
		free(p->durable);
	}
	free(p);
	if (ordfs_unmount(fs) != 0)
		crash_violation(c->workload, state, "unmount after recovery failed");
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = quiet;
	if (ordfs_check(img, &res) != 0 || res.problems)
		crash_violation(c->workload, state, "checker: %u problems", res.problems);
	/* It checked the size judged above: the unmount wrote it to both. */
	struct ordfs_super sb;
	if (count && (ordfs_read_super(img, true, &sb, &why) != 0 || sb.block_count != count))
		crash_violation(c->workload, state, "after unmount the superblocks do not "
				"say %" PRIu64 " blocks", count);
}
