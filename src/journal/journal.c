/*
 * journal.c - journal lifetime, handles and the requests made of the commit
 * thread.
 *
 * Owns: journal_open/close, journal_start/stop, write access to buffers,
 * revokes and freed extents of the running transaction, commit and
 * checkpoint requests and the waits on them.
 *
 * Rules: the running transaction is never NULL while the journal is open; a
 * handle joins it unless it is locked for commit or full (then the handle
 * waits for the next one).  A buffer joins at most one transaction: the
 * running one.  Every buffer the journal references is pinned in the cache
 * by a reference the journal drops only when it no longer needs the buffer
 * (journal_buf_release).  Waiting for a commit with a handle open is a bug
 * [J8].
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal_internal.h"
#include "base/log.h"
#include "base/ordfs_assert.h"
#include "../blockdev/blockdev.h"
#include "../lock/lock.h"

uint64_t journal_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int vec_grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	void *nv = realloc(*v, (size_t)ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

struct transaction *transaction_new(uint64_t tid)
{
	struct transaction *tx = calloc(1, sizeof(*tx));
	if (tx)
		tx->tid = tid;
	return tx;
}

void transaction_free(struct transaction *tx)
{
	if (!tx)
		return;
	free(tx->bufs.v);
	free(tx->revokes.v);
	free(tx->freed.v);
	free(tx->copies);
	free(tx);
}

bool transaction_empty(const struct transaction *tx)
{
	return tx->bufs.n == 0 && tx->revokes.n == 0 && tx->freed.n == 0;
}

/* While the abort callback runs (on another thread), whoever would see
 * the abort waits for it to finish, so what the policy does (record the
 * error, stop the daemon) is in place before anyone acts on the abort.
 * The callback's own thread does not wait for itself.  state_lock held. */
void wait_abort_notified(struct journal *j)
{
	while (j->abort_notifying && !pthread_equal(j->abort_notifier, pthread_self()))
		ordfs_cond_wait(&j->done_cond, &j->state_lock);
}

/* Drops the journal's reference on b once nothing in the journal needs it. */
void journal_buf_release(struct journal *j, struct buf *b)
{
	bcache_put(j->cache, b);
}

/* ---- open / close ----------------------------------------------------- */

static int journal_read_super(struct blockdev *bd, const struct ordfs_super *sb,
			      struct ordfs_journal_super *js)
{
	uint32_t bs = ordfs_block_size(sb);
	uint8_t *blk = malloc(bs);
	if (!blk)
		return -ENOMEM;
	int err = blockdev_read(bd, blk, bs, sb->journal_start * bs);
	if (!err)
		err = ordfs_journal_super_decode(blk, bs, sb->csum_seed, js, NULL);
	if (!err && js->total_blocks != sb->journal_blocks)
		err = -EUCLEAN;
	free(blk);
	return err;
}

int journal_needs_recovery(struct blockdev *bd, const struct ordfs_super *sb)
{
	struct ordfs_journal_super js;
	int err = journal_read_super(bd, sb, &js);
	if (err)
		return err;
	return js.start != 0;
}

static void journal_free(struct journal *j)
{
	transaction_free(j->running);
	pthread_cond_destroy(&j->handle_cond);
	pthread_cond_destroy(&j->commit_cond);
	pthread_cond_destroy(&j->done_cond);
	ordfs_mutex_destroy(&j->state_lock);
	ordfs_mutex_destroy(&j->sb_write_lock);
	free(j);
}

int journal_open(struct blockdev *bd, struct bcache *cache, const struct ordfs_super *sb,
		 const struct journal_config *cfg, struct journal **out)
{
	struct ordfs_journal_super js;
	int err = journal_read_super(bd, sb, &js);
	if (err)
		return err;
	if (js.start != 0)
		return -EUCLEAN; /* recovery must run first */

	struct journal *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->bd = bd;
	j->cache = cache;
	j->cfg = *cfg;
	j->block_size = ordfs_block_size(sb);
	j->csum_seed = sb->csum_seed;
	j->journal_start = sb->journal_start;
	j->log_first = js.first;
	j->log_total = js.total_blocks;
	memcpy(j->uuid, sb->uuid, ORDFS_UUID_LEN);
	/* A transaction must fit the log after a full checkpoint (which the
	 * commit runs when it does not fit otherwise): its blocks plus one
	 * descriptor per tags_per_descriptor (at most 1/62 of them at 1 KiB
	 * blocks), its revoke blocks and the commit block.  A sixteenth of the
	 * log covers the descriptors with room to spare. */
	uint32_t capacity = js.total_blocks - js.first;
	j->max_tx_blocks = capacity - capacity / 16 - 4;
	ordfs_mutex_init(&j->state_lock, LOCK_JOURNAL, "journal state_lock");
	/* Recursive: a failed superblock write can abort the journal, whose
	 * policy (remount-ro) writes the superblock again on this thread. */
	ordfs_mutex_init_recursive(&j->sb_write_lock, LOCK_JOURNAL_SB, "journal sb_write_lock");
	pthread_cond_init(&j->handle_cond, NULL);
	pthread_cond_init(&j->commit_cond, NULL);
	pthread_cond_init(&j->done_cond, NULL);
	/* A log due for a new run of sequences (ORDFS_JSEQ_RENEW, format.h)
	 * starts at 1: no mount could commit the 2^61 transactions that lie
	 * between it and a value the reader refuses.  Nothing holds a tid of
	 * the old run yet: it is safe only here. */
	bool renew = js.sequence >= ORDFS_JSEQ_RENEW;
	uint64_t first_seq = renew ? 1 : js.sequence;
	j->head = j->tail = j->log_first;
	j->committed_tid = first_seq - 1;
	j->commit_request = j->committed_tid;
	j->running = transaction_new(first_seq);
	j->stats.log_total = j->log_total - j->log_first;
	if (!j->running) {
		journal_free(j);
		return -ENOMEM;
	}

	/* The log is in use from now on: recovery must scan from `first`.
	 * Read-only: not yet (journal_set_writable writes the same). */
	j->readonly = cfg->start_readonly;
	j->renew_pending = renew && j->readonly;
	if (renew && !j->readonly) {
		ordfs_log(LOG_NOTICE, "journal sequence %llu is near the limit: log zeroed, "
			  "sequences start again at 1", (unsigned long long)js.sequence);
		err = journal_log_zero(bd, j->journal_start, j->block_size, j->log_total);
	}
	if (!err && !j->readonly)
		err = journal_write_super(j, j->log_first, first_seq);
	if (err) {
		journal_free(j);
		return err;
	}
	if (pthread_create(&j->thread, NULL, journal_commit_thread, j) != 0) {
		journal_free(j);
		return -EAGAIN;
	}
	j->thread_started = true;
	*out = j;
	return 0;
}

int journal_close(struct journal *j)
{
	/* Read-only: everything went home and the log was marked empty when
	 * it became so (or it was opened so): nothing to write. */
	ordfs_mutex_lock(&j->state_lock);
	bool readonly = j->readonly;
	ordfs_mutex_unlock(&j->state_lock);
	int err = readonly ? 0 : journal_flush_all(j);

	ordfs_mutex_lock(&j->state_lock);
	j->stopping = true;
	pthread_cond_broadcast(&j->commit_cond);
	ordfs_mutex_unlock(&j->state_lock);
	if (j->thread_started)
		pthread_join(j->thread, NULL);

	if (!err && !j->aborted && !readonly) {
		/* Everything is home: mark the log empty [J7]. */
		err = journal_write_super(j, 0, j->running->tid);
	}
	if (!err && j->aborted)
		err = j->aborted;

	/* Drop what an aborted journal still pins. */
	if (j->committing) {
		struct transaction *tx = j->committing;
		for (uint32_t i = 0; i < tx->bufs.n; i++) {
			tx->bufs.v[i]->in_commit = false;
			free(tx->copies[i]);
			journal_buf_release(j, tx->bufs.v[i]);
		}
		j->committing = NULL;
		transaction_free(tx);
	}
	for (uint32_t i = 0; i < j->running->bufs.n; i++) {
		j->running->bufs.v[i]->jtx = NULL;
		journal_buf_release(j, j->running->bufs.v[i]);
	}
	while (j->ckpt_head)
		journal_ckpt_drop(j, j->ckpt_head);
	journal_free(j);
	return err;
}

/* ---- handles ----------------------------------------------------------- */

static uint32_t revoke_blocks(const struct journal *j, uint32_t nrevokes)
{
	uint32_t per = ordfs_jrevokes_per_block(j->block_size);
	return (nrevokes + per - 1) / per;
}

/* Log blocks the running transaction may need if all reservations are used. */
static uint32_t tx_projected_blocks(const struct journal *j, const struct transaction *tx)
{
	return tx->bufs.n + tx->reserved + revoke_blocks(j, tx->revokes.n);
}

/* Handles this thread has open: a thread that holds one must not wait for
 * a commit [J8], and so must not start another (it may wait for room). */
static __thread unsigned handles_open_here;

bool journal_handle_held(void)
{
	return handles_open_here > 0;
}

int journal_start(struct journal *j, uint32_t credits, struct handle **out)
{
	ORDFS_ASSERT(handles_open_here == 0); /* [J8] */
	if (credits > j->max_tx_blocks)
		return -E2BIG;
	struct handle *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	/* A handle is a lock in the order (LOCK_HANDLE): the wait for room
	 * below must not happen under a lock a commit could need. */
	lock_order_acquire(&handles_open_here, LOCK_HANDLE, "journal handle", false);

	ordfs_mutex_lock(&j->state_lock);
	uint64_t failures = j->stats.failed_commits;
	bool waited_for_room = false;
	for (;;) {
		wait_abort_notified(j);
		if (j->aborted || j->readonly) {
			ordfs_mutex_unlock(&j->state_lock);
			lock_order_release(&handles_open_here);
			free(h);
			return -EROFS;
		}
		if (waited_for_room && j->stats.failed_commits != failures) {
			/* We waited for room and the commit that would make it
			 * failed: do not hang on a failing device.  (A wait for
			 * the running transaction to unlock is not this.) */
			ordfs_mutex_unlock(&j->state_lock);
			lock_order_release(&handles_open_here);
			free(h);
			return -EIO;
		}
		struct transaction *tx = j->running;
		if (tx->state != TX_RUNNING) {
			ordfs_cond_wait(&j->handle_cond, &j->state_lock);
			continue;
		}
		if (tx_projected_blocks(j, tx) + credits > j->max_tx_blocks) {
			/* Full: have it committed and join the next one. */
			if (!waited_for_room)
				failures = j->stats.failed_commits;
			waited_for_room = true;
			if (j->commit_request < tx->tid)
				j->commit_request = tx->tid;
			pthread_cond_broadcast(&j->commit_cond);
			ordfs_cond_wait(&j->handle_cond, &j->state_lock);
			continue;
		}
		ORDFS_ASSERT(tx->state == TX_RUNNING);
		tx->handles++;
		tx->reserved += credits;
		h->j = j;
		h->tx = tx;
		h->credits = credits;
		break;
	}
	ordfs_mutex_unlock(&j->state_lock);
	handles_open_here++;
	*out = h;
	return 0;
}

int journal_stop(struct handle *h)
{
	struct journal *j = h->j;
	int err;

	ORDFS_ASSERT_CHEAP(handles_open_here > 0);
	handles_open_here--;
	lock_order_release(&handles_open_here);
	ordfs_mutex_lock(&j->state_lock);
	struct transaction *tx = h->tx;
	/* A handle keeps its transaction from committing: it is running, or
	 * locked and waiting for this very handle. */
	ORDFS_ASSERT_CHEAP(tx->handles > 0 && tx->state != TX_COMMITTING);
	ORDFS_ASSERT(h->used <= h->credits);
	tx->reserved -= h->credits - h->used;
	if (--tx->handles == 0 && tx->state == TX_LOCKED)
		pthread_cond_broadcast(&j->commit_cond);
	err = j->aborted ? -EROFS : 0;
	ordfs_mutex_unlock(&j->state_lock);
	free(h);
	return err;
}

uint32_t journal_max_credits(struct journal *j)
{
	return j->max_tx_blocks;
}

uint64_t journal_handle_tid(const struct handle *h)
{
	return h->tx->tid;
}

int journal_get_write_access(struct handle *h, struct buf *b, unsigned flags)
{
	struct journal *j = h->j;
	struct transaction *tx = h->tx;
	int err = 0;

	ordfs_mutex_lock(&j->state_lock);
	if (j->aborted) {
		err = -EROFS;
		goto out;
	}
	ORDFS_ASSERT(tx->state != TX_COMMITTING);
	if (b->jtx == tx) {
		if (flags & JWA_CSUM_HDR)
			b->csum_hdr = true;
		goto out;
	}
	if (h->used >= h->credits) {
		/* More blocks than the handle asked for: the transaction could
		 * outgrow the log and fail at commit.  Refuse it now, loudly:
		 * it is a bug in the caller's credit count. */
		j->stats.credit_overruns++;
		ordfs_log(LOG_ERR, "internal error: a handle of transaction %llu needs block "
			  "%llu beyond its %u credits; the operation fails",
			  (unsigned long long)tx->tid, (unsigned long long)b->blockno, h->credits);
		err = -EIO;
		goto out;
	}
	err = VEC_PUSH(tx->bufs, b);
	if (err)
		goto out;
	/* What the block is now decides, not what it was: a freed extent-tree
	 * block reused as a symlink block or (data=journal) as file data must
	 * not get a header checksum stamped into its bytes 8..11. */
	b->csum_hdr = (flags & JWA_CSUM_HDR) != 0;
	if (b->freed_seq) {
		/* Reused after its free committed [J5]: the old committed copy
		 * must never be written home, and replay of older log copies is
		 * stopped by the revoke the free recorded [J6]. */
		if (b->committed)
			journal_ckpt_drop(j, b);
		b->freed_seq = 0;
	}
	b->jtx = tx;
	bcache_hold(j->cache, b);
	if (tx->bufs.n == 1)
		tx->start_ms = journal_now_ms();
	tx->reserved--;
	h->used++;
out:
	ordfs_mutex_unlock(&j->state_lock);
	return err;
}

int journal_log_block(struct handle *h, uint64_t blockno, const void *data)
{
	struct bcache *cache = h->j->cache;
	struct buf *b = bcache_peek(cache, blockno);
	int err = b ? 0 : bcache_get_new(cache, blockno, &b);
	if (err)
		return err;
	err = journal_get_write_access(h, b, 0);
	if (!err)
		memcpy(b->data, data, bcache_block_size(cache));
	bcache_put(cache, b);
	return err;
}

int journal_forget(struct handle *h, uint64_t blockno)
{
	struct journal *j = h->j;
	struct transaction *tx = h->tx;
	struct buf *b = bcache_peek(j->cache, blockno);
	struct buf *drop = NULL;
	int err = 0;

	if (!b)
		return 0; /* not cached, so not pinned, so not in the live log */

	ordfs_mutex_lock(&j->state_lock);
	if (b->jtx == tx) {
		/* Freed in the transaction that dirtied it: do not log it. */
		for (uint32_t i = 0; i < tx->bufs.n; i++) {
			if (tx->bufs.v[i] == b) {
				tx->bufs.v[i] = tx->bufs.v[--tx->bufs.n];
				break;
			}
		}
		b->jtx = NULL;
		drop = b;
	}
	if (b->in_commit || b->committed)
		err = VEC_PUSH(tx->revokes, blockno); /* [J6] */
	b->freed_seq = tx->tid;
	ordfs_mutex_unlock(&j->state_lock);

	if (drop)
		journal_buf_release(j, drop);
	bcache_put(j->cache, b);
	return err;
}

void journal_ordered_data(struct handle *h)
{
	ordfs_mutex_lock(&h->j->state_lock);
	h->tx->ordered_data = true;
	ordfs_mutex_unlock(&h->j->state_lock);
}

int journal_add_freed(struct handle *h, uint64_t start, uint32_t len)
{
	struct journal *j = h->j;
	struct freed_extent fe = { start, len };

	ordfs_mutex_lock(&j->state_lock);
	int err = VEC_PUSH(h->tx->freed, fe);
	ordfs_mutex_unlock(&j->state_lock);
	return err;
}

/* ---- commit requests --------------------------------------------------- */

uint64_t journal_running_tid(struct journal *j)
{
	ordfs_mutex_lock(&j->state_lock);
	uint64_t tid = j->running->tid;
	ordfs_mutex_unlock(&j->state_lock);
	return tid;
}

/* True if tid is the running transaction, it holds nothing and every
 * transaction before it has committed (none is committing or waiting for a
 * retry): everything a caller could need from it is already durable.
 * state_lock held. */
static bool running_is_idle(struct journal *j, uint64_t tid)
{
	return tid == j->running->tid && transaction_empty(j->running) &&
	       j->running->handles == 0 && j->committed_tid + 1 == tid;
}

int journal_commit_wait(struct journal *j, uint64_t tid)
{
	int err = 0;

	ORDFS_ASSERT(handles_open_here == 0); /* [J8] */
	ordfs_mutex_lock(&j->state_lock);
	if (running_is_idle(j, tid))
		tid = j->committed_tid;
	if (tid > j->committed_tid) {
		/* Commits go in log order, so any failure while we wait is of
		 * a transaction at or before ours. */
		uint64_t failures = j->stats.failed_commits;
		j->stats.commit_requests++;
		if (j->commit_request < tid)
			j->commit_request = tid;
		pthread_cond_broadcast(&j->commit_cond);
		while ((tid > j->committed_tid && !j->aborted && !running_is_idle(j, tid) &&
			j->stats.failed_commits == failures) ||
		       j->abort_notifying)
			ordfs_cond_wait(&j->done_cond, &j->state_lock);
	}
	if (tid > j->committed_tid && !running_is_idle(j, tid))
		err = j->aborted == -EROFS ? -EROFS : -EIO;
	ordfs_mutex_unlock(&j->state_lock);
	return err;
}

int journal_force_commit(struct journal *j)
{
	return journal_commit_wait(j, journal_running_tid(j));
}

void journal_set_tunables(struct journal *j, const struct journal_tunables *t)
{
	ordfs_mutex_lock(&j->state_lock);
	j->cfg.commit_interval_ms = t->commit_interval_ms;
	__atomic_store_n(&j->cfg.barrier, t->barrier, __ATOMIC_RELAXED);
	__atomic_store_n(&j->cfg.retry_failed_commits, t->retry_failed_commits,
			 __ATOMIC_RELAXED);
	if (j->cfg.ioprio_plus1 != t->ioprio_plus1) {
		j->cfg.ioprio_plus1 = t->ioprio_plus1;
		j->ioprio_changed = true;
	}
	/* The thread sleeps for the old interval: wake it to take the new. */
	pthread_cond_broadcast(&j->commit_cond);
	ordfs_mutex_unlock(&j->state_lock);
}

int journal_set_readonly(struct journal *j)
{
	ordfs_mutex_lock(&j->state_lock);
	j->readonly = true;
	ordfs_mutex_unlock(&j->state_lock);
	/* The running transaction commits when its handles stop (no new one
	 * can start), then everything goes home [J7]. */
	int err = journal_flush_all(j);
	if (!err) {
		ordfs_mutex_lock(&j->state_lock);
		ORDFS_ASSERT(j->running->bufs.n == 0 && !j->ckpt_head);
		uint64_t next = j->running->tid;
		ordfs_mutex_unlock(&j->state_lock);
		err = journal_write_super(j, 0, next);
	}
	if (err) {
		ordfs_mutex_lock(&j->state_lock);
		j->readonly = false;
		ordfs_mutex_unlock(&j->state_lock);
	}
	return err;
}

bool journal_is_readonly(struct journal *j)
{
	ordfs_mutex_lock(&j->state_lock);
	bool readonly = j->readonly;
	ordfs_mutex_unlock(&j->state_lock);
	return readonly;
}

int journal_set_writable(struct journal *j)
{
	ordfs_mutex_lock(&j->state_lock);
	ORDFS_ASSERT(j->readonly);
	uint32_t head = j->head;
	uint64_t next = j->running->tid;
	int aborted = j->aborted;
	ordfs_mutex_unlock(&j->state_lock);
	if (aborted)
		return -EROFS;
	/* Opened read-only on a log due for a new run (journal_open): the old
	 * blocks go before sequence 1 is written anywhere. */
	int err = j->renew_pending ? journal_log_zero(j->bd, j->journal_start, j->block_size,
						      j->log_total) : 0;
	/* In use again: recovery scans from head, where the next commit
	 * goes, for sequence `next` on (as after a checkpoint, F4). */
	if (!err)
		err = journal_write_super(j, head, next);
	if (!err) {
		j->renew_pending = false;
		ordfs_mutex_lock(&j->state_lock);
		j->tail = head;
		j->readonly = false;
		pthread_cond_broadcast(&j->handle_cond);
		ordfs_mutex_unlock(&j->state_lock);
	}
	return err;
}

int journal_flush_all(struct journal *j)
{
	int err = journal_force_commit(j);
	if (err)
		return err;

	ordfs_mutex_lock(&j->state_lock);
	uint64_t target = j->checkpoint_done + 1;
	j->checkpoint_request = true;
	pthread_cond_broadcast(&j->commit_cond);
	while (j->checkpoint_done < target && !j->aborted)
		ordfs_cond_wait(&j->done_cond, &j->state_lock);
	err = j->checkpoint_done < target ? j->aborted : j->checkpoint_err;
	ordfs_mutex_unlock(&j->state_lock);
	return err;
}

static void abort_journal(struct journal *j, int err, bool internal)
{
	ordfs_mutex_lock(&j->state_lock);
	bool first = !j->aborted;
	if (first) {
		j->aborted = err < 0 ? err : -EIO;
		/* The policy acts before anyone waiting hears of the abort, so
		 * a caller that got EIO finds its consequences in place. */
		if (j->cfg.aborted) {
			j->abort_notifying = true;
			j->abort_notifier = pthread_self();
			ordfs_mutex_unlock(&j->state_lock);
			j->cfg.aborted(j->cfg.aborted_ctx, j->aborted, internal);
			ordfs_mutex_lock(&j->state_lock);
			j->abort_notifying = false;
		}
	} else {
		wait_abort_notified(j); /* a second caller returns after the policy ran */
	}
	pthread_cond_broadcast(&j->handle_cond);
	pthread_cond_broadcast(&j->commit_cond);
	pthread_cond_broadcast(&j->done_cond);
	ordfs_mutex_unlock(&j->state_lock);
}

void journal_abort(struct journal *j, int err)
{
	abort_journal(j, err, false);
}

int journal_abort_half_done(struct journal *j, int err)
{
	abort_journal(j, err, false);
	return err;
}

void journal_abort_internal(struct journal *j, int err)
{
	abort_journal(j, err, true);
}

int journal_record_error(struct journal *j)
{
	return journal_rewrite_super(j);
}

int journal_aborted(struct journal *j)
{
	ordfs_mutex_lock(&j->state_lock);
	wait_abort_notified(j);
	int err = j->aborted;
	ordfs_mutex_unlock(&j->state_lock);
	return err;
}

void journal_get_stats(struct journal *j, struct journal_stats *out)
{
	ordfs_mutex_lock(&j->state_lock);
	*out = j->stats;
	out->running_tid = j->running->tid;
	out->committed_tid = j->committed_tid;
	out->log_used = journal_log_used(j);
	ordfs_mutex_unlock(&j->state_lock);
}
