/*
 * states.c - the images a power cut could leave, from a log of writes,
 * flushes and marks (see harness.h).
 *
 *   (a) prefixes: the crash right after write w (the kill -9 model);
 *   (b) between flush k-1 and flush k: every write before flush k-1
 *       durable plus a subset of the writes between (all subsets up to 12
 *       writes, else every subset of at most two, every subset missing at
 *       most two, and a seeded sample);
 *   (c) torn writes: the crash during write w, its 512-byte sectors half
 *       old and half new (both ways), sector 0 alone new, sector 1 alone
 *       new, and garbage in one sector (a seeded one, and sector 0).
 *       Garbage only where a real disk could leave it and the filesystem
 *       must cope: journal and metadata writes, and data written to blocks
 *       never written before (newly allocated).  An in-place overwrite of
 *       file data may tear, but only into old and new sectors;
 *   (d) a crash during recovery: for every Nth prefix that needs replay,
 *       recovery is logged and cut after each of its writes, and the
 *       oracle judges what a second recovery makes of it.
 * Identical images are judged once (a signature of every block the log
 * touches).  Budget: max_states in all, prefixes and torn writes sampled
 * evenly when a long log has more of them than 40% and 30% of it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "format/format.h"
#include "journal/journal.h"

#define SUBSET_ALL_MAX 12u

struct tear {
	size_t write;      /* index into writes[] */
	uint64_t new_mask; /* bit i: sector i has the new bytes */
	int garbage;       /* a sector holding garbage, -1 none */
};

struct enum_state {
	const struct crash_log *log;
	const struct crash_enum_params *p;
	crash_oracle_fn oracle;
	void *ctx;
	size_t *writes, nwrites;
	size_t *flushes, nflushes;
	bool *include;
	bool *may_garbage;        /* per write */
	uint64_t *touched;        /* block numbers any write touches, sorted */
	size_t ntouched;
	uint64_t *seen;           /* signatures judged */
	size_t nseen, cap_seen;
	uint64_t judged, budget;
	/* Reused for every state (a fresh 8 MiB buffer per state costs more
	 * than filling one again, most of all under ASan). */
	struct blockdev *img, *again;
};

/* ---- images ---------------------------------------------------------------- */

static struct blockdev *build_image(struct enum_state *s, const struct tear *tear)
{
	const struct crash_log *log = s->log;
	struct blockdev *img = s->img;
	uint8_t *bytes = blockdev_mem_bytes(img);
	memcpy(bytes, log->base, log->size);
	for (size_t w = 0; w < s->nwrites; w++) {
		const struct blockdev_event *e = &log->ev[s->writes[w]];
		if (e->off + e->len > log->size)
			continue;
		if (s->include[w]) {
			memcpy(bytes + e->off, e->data, e->len);
		} else if (tear && tear->write == w) {
			for (size_t sct = 0; sct * CRASH_SECTOR < e->len; sct++) {
				size_t n = e->len - sct * CRASH_SECTOR;
				if (n > CRASH_SECTOR)
					n = CRASH_SECTOR;
				uint8_t *dst = bytes + e->off + sct * CRASH_SECTOR;
				if ((int)sct == tear->garbage)
					memset(dst, 0xa5, n);
				else if (sct < 64 && (tear->new_mask >> sct) & 1)
					memcpy(dst, e->data + sct * CRASH_SECTOR, n);
			}
		}
	}
	return img;
}

/* Two CRCs over every block the log touches: equal images, equal keys. */
static uint64_t signature(const struct enum_state *s, struct blockdev *img)
{
	const uint8_t *bytes = blockdev_mem_bytes(img);
	uint32_t a = 0, b = 0x9e3779b9u;
	for (size_t i = 0; i < s->ntouched; i++) {
		const uint8_t *blk = bytes + s->touched[i] * CRASH_SECTOR;
		a = ordfs_crc32c(a, blk, CRASH_SECTOR);
		b = ordfs_crc32c(b ^ (uint32_t)i, blk, CRASH_SECTOR);
	}
	return (uint64_t)a << 32 | b;
}

static bool seen_before(struct enum_state *s, uint64_t key)
{
	for (size_t i = 0; i < s->nseen; i++)
		if (s->seen[i] == key)
			return true;
	if (s->nseen == s->cap_seen) {
		size_t cap = s->cap_seen ? s->cap_seen * 2 : 1024;
		uint64_t *v = realloc(s->seen, cap * sizeof(*v));
		if (!v)
			return false;
		s->seen = v;
		s->cap_seen = cap;
	}
	s->seen[s->nseen++] = key;
	return false;
}

/* A crash during recovery of img: recovery logged, cut after each write. */
static void crash_during_recovery(struct enum_state *s, struct blockdev *img, size_t limit,
				  const char *state)
{
	struct ordfs_super sb;
	const char *why;
	size_t size = s->log->size;
	if (ordfs_read_super(img, false, &sb, &why) != 0 || journal_needs_recovery(img, &sb) != 1)
		return;
	struct blockdev *copy, *rec;
	if (blockdev_mem_from(blockdev_mem_bytes(img), size, &copy))
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
		for (size_t cut = 0; cut < writes && s->budget; cut++) {
			struct blockdev *again = s->again;
			memcpy(blockdev_mem_bytes(again), blockdev_mem_bytes(img), size);
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
			s->budget--;
			s->judged++;
			s->oracle(s->ctx, again, limit, st);
		}
	}
	blockdev_destroy(rec);
	blockdev_destroy(copy);
}

static void judge(struct enum_state *s, const struct tear *tear, size_t limit,
		  const char *state, bool cut_recovery)
{
	if (!s->budget)
		return;
	struct blockdev *img = build_image(s, tear);
	if (seen_before(s, signature(s, img)))
		return;
	s->budget--;
	s->judged++;
	if (cut_recovery)
		crash_during_recovery(s, img, limit, state);
	s->oracle(s->ctx, img, limit, state);
}

/* ---- classification -------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Never used: zero (as mkfs left it) or CRASH_STALE (free in the base). */
static bool unused(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != p[0])
			return false;
	return p[0] == 0 || p[0] == CRASH_STALE;
}

/* Which writes may leave a garbage sector, and the sectors the log
 * touches.  Garbage: outside the data area (superblocks, journal, bitmaps,
 * inode table), a metadata block (common header), or data blocks unused
 * in the base and never written before in the log. */
static int classify(struct enum_state *s)
{
	const struct crash_log *log = s->log;
	struct ordfs_super sb;
	const char *why;
	struct blockdev *b0;
	uint64_t data_start = 0, bs = CRASH_BS;
	if (blockdev_mem_from(log->base, log->size, &b0) == 0) {
		if (ordfs_read_super(b0, false, &sb, &why) == 0) {
			data_start = sb.data_start;
			bs = ordfs_block_size(&sb);
		}
		blockdev_destroy(b0);
	}
	size_t nsect = 0;
	for (size_t w = 0; w < s->nwrites; w++)
		nsect += (log->ev[s->writes[w]].len + CRASH_SECTOR - 1) / CRASH_SECTOR;
	s->touched = malloc((nsect + 1) * sizeof(uint64_t));
	uint8_t *written = calloc(log->size / bs + 1, 1);
	if (!s->touched || !written) {
		free(written);
		return -ENOMEM;
	}
	for (size_t w = 0; w < s->nwrites; w++) {
		const struct blockdev_event *e = &log->ev[s->writes[w]];
		for (uint64_t o = 0; o < e->len && e->off + o < log->size; o += CRASH_SECTOR)
			s->touched[s->ntouched++] = (e->off + o) / CRASH_SECTOR;
		uint64_t first = e->off / bs, last = (e->off + e->len - 1) / bs;
		bool fresh = e->off + e->len <= log->size;
		if (first >= data_start && fresh && !(e->len >= 4 &&
						      le_get32(e->data) == ORDFS_BLOCK_MAGIC)) {
			for (uint64_t b = first; b <= last && fresh; b++)
				fresh = !written[b] && unused(log->base + b * bs, bs);
		}
		s->may_garbage[w] = fresh;
		for (uint64_t b = first; b <= last && b < log->size / bs; b++)
			written[b] = 1;
	}
	free(written);
	qsort(s->touched, s->ntouched, sizeof(uint64_t), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < s->ntouched; i++)
		if (u == 0 || s->touched[u - 1] != s->touched[i])
			s->touched[u++] = s->touched[i];
	s->ntouched = u;
	return 0;
}

/* ---- the three families ---------------------------------------------------- */

static void prefixes(struct enum_state *s, uint64_t share)
{
	size_t n = s->nwrites + 1;
	size_t stride = share && n > share ? (n + share - 1) / share : 1;
	char state[96];
	for (size_t w = 0; w < n && s->budget; w++) {
		if (w % stride != 0 && w != s->nwrites)
			continue;
		for (size_t k = 0; k < s->nwrites; k++)
			s->include[k] = k < w;
		size_t limit = w < s->nwrites ? s->writes[w] : s->log->n;
		snprintf(state, sizeof(state), "prefix %zu/%zu, event %zu", w, s->nwrites, limit);
		bool cut = s->p->recovery_every && w % s->p->recovery_every == 1;
		judge(s, NULL, limit, state, cut);
	}
}

static void torn_writes(struct enum_state *s, uint64_t share)
{
	size_t per = 6;
	size_t stride = share && s->nwrites * per > share ? (s->nwrites * per + share - 1) / share : 1;
	char state[96];
	for (size_t w = 0; w < s->nwrites && s->budget; w++) {
		if (w % stride != 0)
			continue;
		const struct blockdev_event *e = &s->log->ev[s->writes[w]];
		size_t sectors = (e->len + CRASH_SECTOR - 1) / CRASH_SECTOR;
		if (sectors < 2)
			continue;
		for (size_t k = 0; k < s->nwrites; k++)
			s->include[k] = k < w;
		unsigned half = sectors / 2 < 64 ? (unsigned)(sectors / 2) : 63;
		uint64_t all = sectors >= 64 ? ~0ull : (1ull << sectors) - 1;
		int pick = (int)(crash_fnv(&w, sizeof(w), s->p->seed) % sectors);
		const struct tear tears[] = {
			{ w, all >> half, -1 },         /* first half new */
			{ w, all & ~(all >> half), -1 }, /* last half new */
			{ w, 1, -1 },                   /* sector 0 alone */
			{ w, 2, -1 },                   /* sector 1 alone */
			{ w, all, pick },               /* garbage in one sector */
			{ w, all, 0 },                  /* garbage in sector 0 */
		};
		for (unsigned t = 0; t < sizeof(tears) / sizeof(tears[0]); t++) {
			if (tears[t].garbage >= 0 && !s->may_garbage[w])
				continue;
			snprintf(state, sizeof(state), "torn write %zu/%zu variant %u", w, s->nwrites, t);
			judge(s, &tears[t], s->writes[w], state, false);
		}
	}
}

/* The writes [first, first + count) between two flushes: which of them
 * are in.  ONLY: just a and b (a == b: one write); ALL_BUT: all except a
 * and b; RANDOM: each with probability 1/2 from rng. */
enum subset_kind { ONLY, ALL_BUT, RANDOM };

static void choose(struct enum_state *s, size_t first, size_t count, enum subset_kind kind,
		   size_t a, size_t b, uint64_t *rng)
{
	for (size_t w = 0; w < s->nwrites; w++) {
		if (w < first || w >= first + count) {
			s->include[w] = w < first;
			continue;
		}
		size_t i = w - first;
		if (kind == RANDOM) {
			*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
			s->include[w] = (*rng >> 33) & 1;
		} else {
			bool named = i == a || i == b;
			s->include[w] = kind == ONLY ? named : !named;
		}
	}
}

/* All subsets up to SUBSET_ALL_MAX writes; beyond, every subset of at
 * most two writes, every subset missing at most two, and a seeded sample
 * (prefixes of the interval are among the prefixes already judged). */
static void flush_subsets(struct enum_state *s)
{
	uint64_t rng = s->p->seed;
	char state[96];
	for (size_t k = 0; k < s->nflushes && s->budget; k++) {
		size_t lo = k ? s->flushes[k - 1] : 0, hi = s->flushes[k];
		size_t first = 0, count = 0;
		for (size_t w = 0; w < s->nwrites; w++) {
			if (s->writes[w] < lo)
				first = w + 1;
			else if (s->writes[w] < hi)
				count++;
		}
		if (count < 2)
			continue; /* the prefixes covered it */
		if (count <= SUBSET_ALL_MAX) {
			for (uint64_t mask = 0; mask < (1ull << count) && s->budget; mask++) {
				for (size_t w = 0; w < s->nwrites; w++)
					s->include[w] = w < first || (w < first + count &&
								      ((mask >> (w - first)) & 1));
				snprintf(state, sizeof(state), "flush %zu subset %#" PRIx64, k, mask);
				judge(s, NULL, hi, state, false);
			}
			continue;
		}
		for (unsigned kind = ONLY; kind <= ALL_BUT; kind++)
			for (size_t a = 0; a < count && s->budget; a++)
				for (size_t b = a; b < count && s->budget; b++) {
					choose(s, first, count, kind, a, b, &rng);
					snprintf(state, sizeof(state), "flush %zu %s %zu,%zu of %zu", k,
						 kind == ONLY ? "only" : "all but", a, b, count);
					judge(s, NULL, hi, state, false);
				}
		for (size_t t = 0; t < 64 + count && s->budget; t++) {
			choose(s, first, count, RANDOM, 0, 0, &rng);
			snprintf(state, sizeof(state), "flush %zu sample %zu of %zu", k, t, count);
			judge(s, NULL, hi, state, false);
		}
	}
}

uint64_t crash_enumerate(const struct crash_log *log, const struct crash_enum_params *p,
			 crash_oracle_fn oracle, void *ctx)
{
	struct enum_state s = { .log = log, .p = p, .oracle = oracle, .ctx = ctx };
	s.budget = p->max_states ? p->max_states : 5000;
	s.writes = calloc(log->n + 1, sizeof(size_t));
	s.flushes = calloc(log->n + 1, sizeof(size_t));
	s.include = calloc(log->n + 1, sizeof(bool));
	s.may_garbage = calloc(log->n + 1, sizeof(bool));
	if (!s.writes || !s.flushes || !s.include || !s.may_garbage ||
	    blockdev_mem_from(log->base, log->size, &s.img) != 0)
		goto out;
	if (blockdev_mem_from(log->base, log->size, &s.again) != 0)
		goto out;
	for (size_t i = 0; i < log->n; i++) {
		if (log->ev[i].type == BD_EV_WRITE)
			s.writes[s.nwrites++] = i;
		else if (log->ev[i].type == BD_EV_FLUSH)
			s.flushes[s.nflushes++] = i;
	}
	if (classify(&s))
		goto out;
	uint64_t cap = s.budget;
	prefixes(&s, cap * 4 / 10);
	torn_writes(&s, cap * 3 / 10);
	flush_subsets(&s);
out:
	free(s.writes);
	free(s.flushes);
	free(s.include);
	free(s.may_garbage);
	free(s.touched);
	free(s.seen);
	if (s.img)
		blockdev_destroy(s.img);
	if (s.again)
		blockdev_destroy(s.again);
	return s.judged;
}
