/*
 * guard.c - the flush guard (see guard.h for the policy it carries out).
 *
 * Retained copies live in a hash table keyed by block number.  Each entry
 * records the sequence number of the write it copies and whether the
 * device may have lost it (stale: a flush failed since it was written).
 * A flush writes the stale entries again, flushes the device, and on
 * success forgets every entry written before the flush began.
 * A size refresh is passed down and the guard then takes the size of what
 * it wraps: the copies are keyed by block number, nothing depends on the
 * size.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "base/block_pool.h"
#include "base/log.h"
#include "blockdev.h"
#include "lock/lock.h"

#define DEFAULT_RETAIN_LIMIT (64ull << 20)

struct retained {
	uint64_t blockno;
	uint64_t seq;      /* of the write this copies */
	bool stale;        /* the device may have dropped it: write again */
	struct retained *next;
	uint8_t *data;     /* block_size bytes from g->pool */
	struct block_slab *slab;
};

struct guard {
	struct blockdev bd;
	struct blockdev *inner;
	struct flush_guard_config cfg;

	struct ordfs_mutex lock;       /* everything below */
	struct ordfs_rwlock mode_lock; /* cfg.policy, cfg.retain (guard.h) */
	struct ordfs_mutex flush_lock; /* one flush at a time */
	struct retained **table;
	struct block_pool *pool;       /* the copies' bytes (every write makes one);
					  never trimmed: retain_limit bounds it */
	uint64_t buckets, count;
	uint64_t write_seq;
	uint64_t failed_flushes;    /* moves when a flush fails */
	uint64_t flushed_seq;       /* writes up to here are known durable */
	uint64_t flush_starts;      /* flushes begun (not skipped) so far */
	uint64_t good_start;        /* flush_starts value of the last good flush */
	bool unflushed_failure;     /* a flush failed and none has worked since */
	struct inflight { uint64_t first, n, seq; } *inflight; /* writes under way */
	uint32_t ninflight, cap_inflight;
	bool cannot_flush;
	bool logged_error;          /* ignore: the one line said */
	int last_error;             /* of the last failed write or flush (ENOSPC
				       stays ENOSPC when the guard refuses) */
	bool shut;                  /* flush_guard_shut: nothing more (atomic) */
	struct flush_guard_stats stats;
};

static struct guard *to_guard(struct blockdev *bd)
{
	return (struct guard *)bd;
}

static bool is_shut(const struct guard *g)
{
	return __atomic_load_n(&g->shut, __ATOMIC_ACQUIRE);
}


int flush_error_policy_parse(const char *s)
{
	static const char *const names[] = { "report", "ignore", "remount-ro", "abort" };
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

const char *flush_error_policy_name(enum flush_error_policy p)
{
	switch (p) {
	case FLUSH_ERROR_REPORT: return "report";
	case FLUSH_ERROR_IGNORE: return "ignore";
	case FLUSH_ERROR_REMOUNT_RO: return "remount-ro";
	case FLUSH_ERROR_ABORT: return "abort";
	}
	return "?";
}

/* ---- the table of retained copies (lock held) ---------------------------- */

static struct retained **slot_of(struct guard *g, uint64_t blockno)
{
	return &g->table[(blockno * 0x9e3779b97f4a7c15ull) % g->buckets];
}

static void table_grow(struct guard *g)
{
	uint64_t nb = g->buckets * 2;
	struct retained **nt = calloc(nb, sizeof(*nt));
	if (!nt)
		return; /* longer chains, still correct */
	struct retained **old = g->table;
	uint64_t ob = g->buckets;
	g->table = nt;
	g->buckets = nb;
	for (uint64_t i = 0; i < ob; i++) {
		struct retained *e = old[i];
		while (e) {
			struct retained *next = e->next;
			struct retained **s = slot_of(g, e->blockno);
			e->next = *s;
			*s = e;
			e = next;
		}
	}
	free(old);
}

static void retained_free(struct guard *g, struct retained *e)
{
	block_pool_put(g->pool, e->slab, e->data);
	free(e);
}

/* Records the copy of one block written by write number seq; stale if a
 * flush failed while the write was under way. */
static int retain_block(struct guard *g, uint64_t blockno, const uint8_t *data, uint64_t seq,
			bool stale)
{
	struct retained **s = slot_of(g, blockno);
	struct retained *e = *s;
	while (e && e->blockno != blockno)
		e = e->next;
	if (!e) {
		e = malloc(sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->data = block_pool_get(g->pool, &e->slab);
		if (!e->data) {
			free(e);
			return -ENOMEM;
		}
		e->blockno = blockno;
		e->seq = 0;
		e->next = *s;
		*s = e;
		g->count++;
		if (g->count > g->buckets * 2)
			table_grow(g);
	}
	if (e->seq < seq) {
		memcpy(e->data, data, g->cfg.block_size);
		e->seq = seq;
		e->stale = stale;
	}
	return 0;
}

static int inflight_add(struct guard *g, uint64_t first, uint64_t n, uint64_t seq)
{
	if (g->ninflight == g->cap_inflight) {
		uint32_t cap = g->cap_inflight ? g->cap_inflight * 2 : 16;
		struct inflight *v = realloc(g->inflight, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		g->inflight = v;
		g->cap_inflight = cap;
	}
	g->inflight[g->ninflight++] = (struct inflight){ first, n, seq };
	return 0;
}

/* By sequence number: two writes of the same range are two entries. */
static void inflight_remove(struct guard *g, uint64_t seq)
{
	for (uint32_t i = 0; i < g->ninflight; i++)
		if (g->inflight[i].seq == seq) {
			g->inflight[i] = g->inflight[--g->ninflight];
			return;
		}
}

static bool inflight_covers(const struct guard *g, uint64_t blockno)
{
	for (uint32_t i = 0; i < g->ninflight; i++)
		if (blockno - g->inflight[i].first < g->inflight[i].n)
			return true;
	return false;
}

/* Removes entries for which drop(e) is true. */
static void table_remove_if(struct guard *g,
			    bool (*drop)(const struct retained *, const void *), const void *arg)
{
	for (uint64_t i = 0; i < g->buckets; i++) {
		struct retained **pp = &g->table[i];
		while (*pp) {
			struct retained *e = *pp;
			if (drop(e, arg)) {
				*pp = e->next;
				retained_free(g, e);
				g->count--;
			} else {
				pp = &e->next;
			}
		}
	}
}

static bool written_before(const struct retained *e, const void *seq)
{
	return e->seq <= *(const uint64_t *)seq && !e->stale;
}

/* The last write sequence a flush starting now covers: every write that
 * completed, so not the oldest still under way nor any after it. */
static uint64_t covered_seq(const struct guard *g)
{
	uint64_t seq = g->write_seq;
	for (uint32_t i = 0; i < g->ninflight; i++)
		if (g->inflight[i].seq <= seq)
			seq = g->inflight[i].seq - 1;
	return seq;
}

static bool always(const struct retained *e, const void *unused)
{
	(void)e;
	(void)unused;
	return true;
}

static void forget_range(struct guard *g, uint64_t first, uint64_t n, uint64_t seq)
{
	for (uint64_t b = first; b < first + n; b++) {
		struct retained **pp = slot_of(g, b);
		while (*pp && (*pp)->blockno != b)
			pp = &(*pp)->next;
		if (*pp && (*pp)->seq < seq) {
			struct retained *e = *pp;
			*pp = e->next;
			retained_free(g, e);
			g->count--;
		}
	}
}

/* [first, end) of block numbers, for table_remove_if. */
struct block_range {
	uint64_t first, end;
};

static bool in_range(const struct retained *e, const void *range)
{
	const struct block_range *r = range;
	return e->blockno >= r->first && e->blockno < r->end;
}

/* ---- device operations -------------------------------------------------- */

static int guard_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	return blockdev_read(to_guard(bd)->inner, buf, len, off);
}

/* A write or flush error under flush_error=ignore: logged once, then it
 * is as if it had worked. */
static int ignore_error(struct guard *g, bool is_flush, int err)
{
	const char *what = is_flush ? "a flush" : "a write";
	ordfs_mutex_lock(&g->lock);
	bool first = !g->logged_error;
	g->logged_error = true;
	if (is_flush)
		g->cannot_flush = true;
	ordfs_mutex_unlock(&g->lock);
	if (first)
		ordfs_log(LOG_ERR, "%s of the image failed (%s); flush_error=ignore: "
			  "continuing, data may be lost on power failure", what,
			  strerror(-err));
	return 0;
}

static int guard_flush(struct blockdev *bd);
static int flush_upto(struct guard *g, uint64_t token);

/* The on_error callback takes the caller's locks (the journal's, to
 * abort it): never under mode_lock.  While this thread holds mode_lock
 * the first error waits here and is told on release (mode_unlock). */
static _Thread_local unsigned mode_held;
static _Thread_local int mode_deferred_error;

static void notify_error(struct guard *g, int err)
{
	if (mode_held) {
		if (!mode_deferred_error)
			mode_deferred_error = err;
		return;
	}
	if (g->cfg.on_error)
		g->cfg.on_error(g->cfg.on_error_ctx, err);
}

static void mode_rdlock(struct guard *g)
{
	ordfs_rwlock_rdlock(&g->mode_lock);
	mode_held++;
}

static void mode_wrlock(struct guard *g)
{
	ordfs_rwlock_wrlock(&g->mode_lock);
	mode_held++;
}

static void mode_unlock(struct guard *g)
{
	ordfs_rwlock_unlock(&g->mode_lock);
	if (--mode_held == 0 && mode_deferred_error) {
		int err = mode_deferred_error;
		mode_deferred_error = 0;
		notify_error(g, err);
	}
}

void flush_guard_shut(struct blockdev *bd)
{
	struct guard *g = to_guard(bd);
	__atomic_store_n(&g->shut, true, __ATOMIC_RELEASE);
	/* Every write and flush holds mode_lock (read): once we have it, the
	 * ones that passed the check before are done. */
	mode_wrlock(g);
	mode_unlock(g);
}

/* Copies [off, off + len) into the table.  Unaligned writes (none in
 * ordfs today) are read back whole.  Lock held. */
static int retain_write(struct guard *g, const void *buf, size_t len, uint64_t off, uint64_t seq,
			bool stale)
{
	uint32_t bs = g->cfg.block_size;
	if (off % bs == 0 && len % bs == 0) {
		for (uint64_t i = 0; i < len / bs; i++) {
			int err = retain_block(g, off / bs + i, (const uint8_t *)buf + i * bs, seq,
					       stale);
			if (err)
				return err;
		}
		return 0;
	}
	uint64_t first = off / bs, last = (off + len - 1) / bs;
	uint8_t *tmp = malloc(bs);
	if (!tmp)
		return -ENOMEM;
	int err = 0;
	for (uint64_t b = first; b <= last && !err; b++) {
		err = blockdev_read(g->inner, tmp, bs, b * bs);
		if (!err)
			err = retain_block(g, b, tmp, seq, stale);
	}
	free(tmp);
	return err;
}

/* The inner write: with FUA only where asked (the device has it). */
static int inner_write(struct guard *g, const void *buf, size_t len, uint64_t off, bool fua)
{
	return fua ? blockdev_write_fua(g->inner, buf, len, off)
		   : blockdev_write(g->inner, buf, len, off);
}

static int guard_write_as(struct blockdev *bd, const void *buf, size_t len, uint64_t off,
			  bool fua)
{
	struct guard *g = to_guard(bd);
	if (is_shut(g))
		return -EIO;
	uint32_t bs = g->cfg.block_size;
	uint64_t limit = g->cfg.retain_limit;

	if (!g->cfg.retain) {
		/* Counted once complete, so a flush that began before it
		 * completed never lets the next flush be skipped. */
		int err = inner_write(g, buf, len, off, fua);
		ordfs_mutex_lock(&g->lock);
		g->write_seq++;
		ordfs_mutex_unlock(&g->lock);
		if (err) {
			ordfs_mutex_lock(&g->lock);
			g->stats.write_errors++;
			ordfs_mutex_unlock(&g->lock);
			if (g->cfg.policy == FLUSH_ERROR_IGNORE)
				return ignore_error(g, false, err);
			notify_error(g, err);
		}
		return err;
	}

	ordfs_mutex_lock(&g->lock);
	bool over = g->count * bs >= limit;
	ordfs_mutex_unlock(&g->lock);
	if (over) {
		/* mode_lock is held (read) by our caller */
		if (!is_shut(g))
			(void)flush_upto(g, UINT64_MAX); /* a failure leaves the copies stale */
		ordfs_mutex_lock(&g->lock);
		bool full = g->count * bs >= 2 * limit;
		/* What the device keeps failing with: a full host stays ENOSPC. */
		int why = g->last_error == -ENOSPC ? -ENOSPC : -EIO;
		ordfs_mutex_unlock(&g->lock);
		if (full) {
			notify_error(g, why);
			return why; /* the device keeps failing: do not grow */
		}
	}

	/* Announced before it starts, so a flush re-writing stale copies
	 * leaves these blocks to this newer write. */
	uint64_t first = off / bs, n = (off % bs + len + bs - 1) / bs;
	ordfs_mutex_lock(&g->lock);
	uint64_t seq = ++g->write_seq;
	uint64_t failures = g->failed_flushes;
	int err = inflight_add(g, first, n, seq);
	ordfs_mutex_unlock(&g->lock);
	if (err)
		return err;

	err = inner_write(g, buf, len, off, fua);

	ordfs_mutex_lock(&g->lock);
	inflight_remove(g, seq);
	if (err) {
		g->stats.write_errors++;
		g->last_error = err;
		forget_range(g, first, n, seq);
	} else {
		/* A flush that failed meanwhile may have lost this write too. */
		err = retain_write(g, buf, len, off, seq, g->failed_flushes != failures);
	}
	ordfs_mutex_unlock(&g->lock);
	if (err)
		notify_error(g, err);
	return err;
}

/* Every write runs under mode_lock (read): its policy cannot change under
 * it. */
static int guard_write_moded(struct blockdev *bd, const void *buf, size_t len, uint64_t off,
			     bool fua)
{
	struct guard *g = to_guard(bd);
	mode_rdlock(g);
	int err = guard_write_as(bd, buf, len, off, fua);
	mode_unlock(g);
	return err;
}

static int guard_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	return guard_write_moded(bd, buf, len, off, false);
}

/* A FUA write is handled as any write (its copy is kept until a flush: a
 * later failed flush says nothing about it, but keeping it is harmless);
 * only the device's durability of this one write differs. */
static int guard_write_fua(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	return guard_write_moded(bd, buf, len, off, true);
}

/* Writes every stale copy again.  flush_lock held, g->lock not.
 *
 * Everything happens under g->lock, the device write included: a copy is
 * written only while it is the newest recorded for its block and no
 * newer write of the block is in flight (that write brings its own, newer
 * copy).  Writing a snapshot taken earlier could put old bytes over a
 * newer write that completed meanwhile.  This path runs only after a
 * failed flush, so holding the lock over its I/O costs nothing in the
 * common case. */
static int reissue_stale(struct guard *g)
{
	uint32_t bs = g->cfg.block_size;
	int err = 0;
	ordfs_mutex_lock(&g->lock);
	for (uint64_t i = 0; i < g->buckets && !err; i++) {
		for (struct retained *e = g->table[i]; e && !err; e = e->next) {
			if (!e->stale || inflight_covers(g, e->blockno))
				continue;
			err = blockdev_write(g->inner, e->data, bs, e->blockno * bs);
			if (!err) {
				e->stale = false;
				g->stats.reissued_blocks++;
			}
		}
	}
	ordfs_mutex_unlock(&g->lock);
	return err;
}

/* Flushes unless nothing at all was written since the last good flush,
 * or (token != UINT64_MAX) a good flush began after the caller took
 * `token` (flush_guard_mark).  The test runs after flush_lock is taken,
 * so a caller that waited behind another flush skips when that flush
 * covered it. */
static int flush_upto(struct guard *g, uint64_t token)
{
	ordfs_mutex_lock(&g->flush_lock);
	ordfs_mutex_lock(&g->lock);
	uint64_t before = covered_seq(g); /* writes a good flush covers */
	/* Nothing written since the last good flush: nothing to make durable. */
	bool nothing_new = before == g->write_seq && before == g->flushed_seq;
	bool covered = token != UINT64_MAX && g->good_start > token;
	bool skip = g->cannot_flush || ((nothing_new || covered) && !g->unflushed_failure);
	if (skip)
		g->stats.flushes_skipped++;
	else
		g->stats.flushes++;
	uint64_t start = skip ? 0 : ++g->flush_starts;
	ordfs_mutex_unlock(&g->lock);
	if (skip) {
		ordfs_mutex_unlock(&g->flush_lock);
		return 0;
	}

	int err = g->cfg.retain ? reissue_stale(g) : 0;
	if (!err)
		err = blockdev_flush(g->inner);

	ordfs_mutex_lock(&g->lock);
	if (err == -EINVAL || err == -EOPNOTSUPP) {
		/* Not a failure: the backing store has no flush at all. */
		bool first = !g->cannot_flush;
		g->cannot_flush = true;
		table_remove_if(g, always, NULL);
		ordfs_mutex_unlock(&g->lock);
		ordfs_mutex_unlock(&g->flush_lock);
		if (first)
			ordfs_log(LOG_WARNING, "the image cannot be flushed (%s): "
				  "continuing without flushes, which is unsafe on power failure",
				  strerror(-err));
		return 0;
	}
	if (err) {
		g->stats.flush_errors++;
		g->last_error = err;
		g->failed_flushes++;
		g->unflushed_failure = true;
		/* The device may have lost anything written since its last good
		 * flush: every copy must be written again. */
		for (uint64_t i = 0; i < g->buckets; i++)
			for (struct retained *e = g->table[i]; e; e = e->next)
				e->stale = true;
	} else {
		g->flushed_seq = before;
		g->good_start = start;
		g->unflushed_failure = false;
		if (g->cfg.retain)
			table_remove_if(g, written_before, &before);
	}
	ordfs_mutex_unlock(&g->lock);
	ordfs_mutex_unlock(&g->flush_lock);

	if (err && g->cfg.policy == FLUSH_ERROR_IGNORE)
		return ignore_error(g, true, err);
	if (err)
		notify_error(g, err);
	return err;
}

/* flush_upto under mode_lock (read).  (A write past the retain limit
 * calls flush_upto itself: it holds mode_lock already.) */
static int flush_moded(struct guard *g, uint64_t token)
{
	if (is_shut(g))
		return -EIO;
	mode_rdlock(g);
	int err = flush_upto(g, token);
	mode_unlock(g);
	return err;
}

static int guard_flush(struct blockdev *bd)
{
	return flush_moded(to_guard(bd), UINT64_MAX);
}

int flush_guard_flush_since(struct blockdev *bd, uint64_t token)
{
	return flush_moded(to_guard(bd), token);
}

int flush_guard_set_policy(struct blockdev *bd, enum flush_error_policy policy, bool retain)
{
	struct guard *g = to_guard(bd);
	mode_wrlock(g);
	bool start_keeping = retain && !g->cfg.retain;
	ordfs_mutex_lock(&g->flush_lock);
	ordfs_mutex_lock(&g->lock);
	g->cfg.policy = policy;
	g->cfg.retain = retain;
	if (!retain)
		table_remove_if(g, always, NULL); /* nothing will drop or use them */
	ordfs_mutex_unlock(&g->lock);
	ordfs_mutex_unlock(&g->flush_lock);
	/* Writes made before without copies: flushed now, with the new
	 * policy's handling of a failure. */
	int err = start_keeping && !is_shut(g) ? flush_upto(g, UINT64_MAX) : 0;
	mode_unlock(g);
	return err;
}

uint64_t flush_guard_mark(struct blockdev *bd)
{
	struct guard *g = to_guard(bd);
	ordfs_mutex_lock(&g->lock);
	uint64_t token = g->flush_starts;
	ordfs_mutex_unlock(&g->lock);
	return token;
}

static void guard_destroy(struct blockdev *bd)
{
	struct guard *g = to_guard(bd);
	table_remove_if(g, always, NULL);
	block_pool_destroy(g->pool);
	free(g->table);
	free(g->inflight);
	ordfs_mutex_destroy(&g->lock);
	ordfs_mutex_destroy(&g->flush_lock);
	ordfs_rwlock_destroy(&g->mode_lock);
	free(g);
}

/* Passed on: a discard needs no durability.  Kept copies of whole blocks
 * discarded are dropped first: the blocks were freed (nothing reads them,
 * and recovery needs nothing of them [J6]), and written again after a
 * failed flush they would take back the host space the discard gives
 * (on a full host: fail for want of it, and fail the flush with them).
 * No write of them is in flight: a block is discarded only while nothing
 * can allocate it. */
static int guard_discard(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct guard *g = to_guard(bd);
	if (is_shut(g))
		return -EIO;
	uint32_t bs = g->cfg.block_size;
	uint64_t first = (off + bs - 1) / bs, end = (off + len) / bs;
	if (g->cfg.retain && end > first) {
		ordfs_mutex_lock(&g->lock);
		if (g->count >= end - first)
			forget_range(g, first, end - first, UINT64_MAX);
		else if (g->count) /* fewer copies than blocks: walk the table */
			table_remove_if(g, in_range, &(struct block_range){ first, end });
		ordfs_mutex_unlock(&g->lock);
	}
	return blockdev_discard(g->inner, off, len);
}

/* Passed on: every write the guard accepts is on the device already (the
 * copies it keeps are of bytes written there). */
static uint64_t guard_next_data(struct blockdev *bd, uint64_t off)
{
	return blockdev_next_data(to_guard(bd)->inner, off);
}

static uint64_t guard_next_hole(struct blockdev *bd, uint64_t off)
{
	return blockdev_next_hole(to_guard(bd)->inner, off);
}

/* Passed on: host space, no bytes: nothing to keep or flush. */
static int guard_allocate(struct blockdev *bd, uint64_t off, uint64_t len)
{
	if (is_shut(to_guard(bd)))
		return -EIO;
	return blockdev_allocate(to_guard(bd)->inner, off, len);
}

static int guard_host(struct blockdev *bd, struct blockdev_host *out, bool fresh)
{
	return blockdev_host(to_guard(bd)->inner, out, fresh);
}

static void guard_host_refused(struct blockdev *bd)
{
	blockdev_host_refused(to_guard(bd)->inner);
}

static int guard_refresh_size(struct blockdev *bd, uint64_t *size)
{
	struct blockdev *inner = to_guard(bd)->inner;
	int err = blockdev_refresh_size(inner, size);
	if (!err)
		*size = blockdev_grow_size(bd, blockdev_size(inner));
	return err;
}

static const struct blockdev_ops guard_ops = {
	.read = guard_read,
	.write = guard_write,
	.flush = guard_flush,
	.destroy = guard_destroy,
	.discard = guard_discard,
	.write_fua = guard_write_fua,
	.next_data = guard_next_data,
	.next_hole = guard_next_hole,
	.allocate = guard_allocate,
	.host = guard_host,
	.host_refused = guard_host_refused,
	.refresh_size = guard_refresh_size,
};

int flush_guard_create(struct blockdev *inner, const struct flush_guard_config *cfg,
		       struct blockdev **out)
{
	if (cfg->block_size == 0)
		return -EINVAL;
	struct guard *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->bd.ops = &guard_ops;
	g->bd.fua = inner->fua && inner->ops->write_fua;
	g->bd.size = blockdev_size(inner);
	g->bd.sparse = inner->sparse;
	g->inner = inner;
	g->cfg = *cfg;
	if (!g->cfg.retain_limit)
		g->cfg.retain_limit = DEFAULT_RETAIN_LIMIT;
	g->buckets = 1024;
	g->table = calloc(g->buckets, sizeof(*g->table));
	if (!g->table || block_pool_new(cfg->block_size, &g->pool) != 0) {
		free(g->table);
		free(g);
		return -ENOMEM;
	}
	ordfs_mutex_init(&g->lock, LOCK_GUARD, "flush guard lock");
	ordfs_mutex_init(&g->flush_lock, LOCK_GUARD_FLUSH, "flush guard flush_lock");
	ordfs_rwlock_init(&g->mode_lock, LOCK_GUARD_MODE, "flush guard mode_lock");
	*out = &g->bd;
	return 0;
}

void flush_guard_get_stats(struct blockdev *bd, struct flush_guard_stats *out)
{
	struct guard *g = to_guard(bd);
	ordfs_mutex_lock(&g->lock);
	*out = g->stats;
	out->retained_blocks = g->count;
	out->cannot_flush = g->cannot_flush;
	out->failing = g->unflushed_failure;
	ordfs_mutex_unlock(&g->lock);
}
