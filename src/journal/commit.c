/*
 * commit.c - the commit thread: turns the running transaction into a
 * durable one.
 *
 * Owns: the commit protocol and the log head.  One thread does every commit
 * and checkpoint, so log writes never race each other.  The phases of one
 * commit (journal.h has the rules cited):
 *
 *   1. Lock the running transaction; wait for its open handles to stop.
 *   2. Copy every buffer (setting block checksums in the copies), open the
 *      next running transaction, unlock.  Handles were blocked only for
 *      the copy.  Data blocks this transaction makes reachable were written
 *      before their handles started [J1].
 *   3. Make log room: if the transaction does not fit, checkpoint first [J4].
 *   4. Write descriptors + copies + revoke blocks at the log head.
 *   5. F1: flush (log blocks and ordered data durable) [J2], only if the
 *      transaction made data written before it reachable (data=ordered,
 *      journal_ordered_data).  Otherwise the commit block's CRC, chained
 *      over every log block of the transaction, is what orders them: a
 *      commit record that reached the disk without its blocks does not
 *      validate, and F2 makes both durable before anyone is told.
 *   6. Write the commit block (block count + CRC chained over the blocks).
 *      Without F1 it goes in the same write as step 4's blocks (one
 *      request, one round trip on a network device); after F1, on a
 *      device with FUA, it is written with FUA and step 7 is skipped.
 *   7. F2: flush; the transaction is committed [J3]: hand its copies to the
 *      checkpoint list, release the blocks it freed [J5], wake the waiters.
 *
 * An I/O error in any phase means the transaction is not committed: its
 * waiters get -EIO.  Then either the journal aborts (flush_error=
 * remount-ro, abort) or, with cfg.retry_failed_commits (report), the
 * transaction stays `committing` with its copies and is written again,
 * byte for byte at the same log position, when the next commit is asked
 * for or the commit interval passes.  Rewriting the identical log image is
 * what makes the retry safe: whatever mix of the old attempt's and the new
 * attempt's blocks the device holds, the commit block's CRC chained over
 * the whole transaction matches only a complete copy of it.  Later
 * transactions wait behind it (the log is written in order).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "journal_internal.h"
#include "../blockdev/blockdev.h"
#include "base/log.h"
#include "base/ordfs_assert.h"
#include "../lock/lock.h"

/* ---- log geometry ------------------------------------------------------ */

uint32_t journal_log_capacity(const struct journal *j)
{
	return j->log_total - j->log_first;
}

uint32_t journal_log_used(const struct journal *j)
{
	uint32_t cap = journal_log_capacity(j);
	return (j->head - j->tail + cap) % cap;
}

uint32_t journal_log_advance(const struct journal *j, uint32_t pos, uint32_t n)
{
	uint32_t cap = journal_log_capacity(j);
	return j->log_first + (pos - j->log_first + n) % cap;
}

int journal_barrier(struct journal *j)
{
	if (!__atomic_load_n(&j->cfg.barrier, __ATOMIC_RELAXED))
		return 0;
	int err = blockdev_flush(j->bd);
	ordfs_mutex_lock(&j->state_lock);
	j->stats.flushes++;
	ordfs_mutex_unlock(&j->state_lock);
	return err;
}

/* sb_write_lock held.  Never a sequence the reader refuses (format.h):
 * commit_write keeps every tid below the limit, so this is a bug's. */
static int write_super_locked(struct journal *j, uint32_t start, uint64_t sequence)
{
	if (sequence == 0 || sequence >= ORDFS_JSEQ_LIMIT)
		return -EOVERFLOW;
	ordfs_mutex_lock(&j->state_lock);
	struct ordfs_journal_super js = {
		.block_size = j->block_size,
		.total_blocks = j->log_total,
		.first = j->log_first,
		.start = start,
		.sequence = sequence,
		.err = j->aborted,
	};
	j->sb_start = start;
	j->sb_seq = sequence;
	ordfs_mutex_unlock(&j->state_lock);
	memcpy(js.uuid, j->uuid, ORDFS_UUID_LEN);
	uint8_t *blk = malloc(j->block_size);
	if (!blk)
		return -ENOMEM;
	ordfs_journal_super_encode(&js, j->csum_seed, blk);
	int err = blockdev_write(j->bd, blk, j->block_size, j->journal_start * j->block_size);
	free(blk);
	if (!err)
		err = journal_barrier(j);
	return err;
}

int journal_write_super(struct journal *j, uint32_t start, uint64_t sequence)
{
	ordfs_mutex_lock(&j->sb_write_lock);
	int err = write_super_locked(j, start, sequence);
	ordfs_mutex_unlock(&j->sb_write_lock);
	return err;
}

int journal_rewrite_super(struct journal *j)
{
	ordfs_mutex_lock(&j->sb_write_lock);
	ordfs_mutex_lock(&j->state_lock);
	uint32_t start = j->sb_start;
	uint64_t seq = j->sb_seq;
	ordfs_mutex_unlock(&j->state_lock);
	int err = write_super_locked(j, start, seq);
	ordfs_mutex_unlock(&j->sb_write_lock);
	return err;
}

/* Writes n log blocks from `blocks` starting at log position pos, wrapping. */
static int write_log(struct journal *j, uint32_t pos, const uint8_t *blocks, uint32_t n)
{
	while (n > 0) {
		uint32_t run = j->log_total - pos;
		if (run > n)
			run = n;
		int err = blockdev_write(j->bd, blocks, (size_t)run * j->block_size,
					 (j->journal_start + pos) * j->block_size);
		if (err)
			return err;
		blocks += (size_t)run * j->block_size;
		n -= run;
		pos = journal_log_advance(j, pos, run);
	}
	return 0;
}

/* ---- building the log image of one transaction ------------------------- */

struct log_image {
	uint8_t *blocks;   /* nblocks * block_size, in log order */
	uint32_t nblocks;  /* without the commit block */
	uint32_t crc;      /* chained over the blocks */
};

static uint32_t log_blocks_needed(const struct journal *j, const struct transaction *tx)
{
	uint32_t tags = ordfs_jtags_per_descriptor(j->block_size);
	uint32_t revs = ordfs_jrevokes_per_block(j->block_size);
	return tx->bufs.n + (tx->bufs.n + tags - 1) / tags + (tx->revokes.n + revs - 1) / revs;
}

static void put_descriptor_tag(struct journal *j, uint8_t *desc, uint32_t idx,
			       uint64_t tid, uint64_t blockno, const uint8_t *copy,
			       uint8_t *logged)
{
	uint8_t seq[8];
	uint32_t flags = 0;

	le_put64(seq, tid);
	uint32_t crc = ordfs_crc32c(ordfs_crc32c(j->csum_seed, seq, 8), copy, j->block_size);
	memcpy(logged, copy, j->block_size);
	if (le_get32(copy) == ORDFS_JOURNAL_MAGIC) {
		/* A copy must never look like a journal block to recovery. */
		memset(logged, 0, 4);
		flags |= ORDFS_JTAG_ESCAPED;
	}
	uint8_t *tag = desc + ORDFS_JB_HDR + 8 + (size_t)idx * ORDFS_JTAG_SIZE;
	le_put64(tag + 0, blockno);
	le_put32(tag + 8, flags);
	le_put32(tag + 12, crc);
}

static int build_log_image(struct journal *j, struct transaction *tx, struct log_image *li)
{
	uint32_t bs = j->block_size;
	uint32_t per_desc = ordfs_jtags_per_descriptor(bs);
	uint32_t per_rev = ordfs_jrevokes_per_block(bs);

	li->nblocks = log_blocks_needed(j, tx);
	/* One block more: the commit block goes right after them, so the
	 * two can go to the device in one write (commit_write). */
	li->blocks = calloc((size_t)li->nblocks + 1, bs);
	if (!li->blocks)
		return -ENOMEM;

	uint32_t pos = 0;
	for (uint32_t i = 0; i < tx->bufs.n; i += per_desc) {
		uint32_t n = tx->bufs.n - i < per_desc ? tx->bufs.n - i : per_desc;
		uint8_t *desc = li->blocks + (size_t)pos++ * bs;
		ordfs_jblock_hdr_init(desc, ORDFS_JB_DESCRIPTOR, tx->tid);
		le_put32(desc + 16, n);
		for (uint32_t k = 0; k < n; k++) {
			struct buf *b = tx->bufs.v[i + k];
			put_descriptor_tag(j, desc, k, tx->tid, b->blockno, tx->copies[i + k],
					   li->blocks + (size_t)pos++ * bs);
		}
		ordfs_jblock_csum_set(desc, bs, j->csum_seed);
	}
	for (uint32_t i = 0; i < tx->revokes.n; i += per_rev) {
		uint32_t n = tx->revokes.n - i < per_rev ? tx->revokes.n - i : per_rev;
		uint8_t *rb = li->blocks + (size_t)pos++ * bs;
		ordfs_jblock_hdr_init(rb, ORDFS_JB_REVOKE, tx->tid);
		le_put32(rb + 16, n);
		for (uint32_t k = 0; k < n; k++)
			le_put64(rb + ORDFS_JB_HDR + 8 + (size_t)k * 8, tx->revokes.v[i + k]);
		ordfs_jblock_csum_set(rb, bs, j->csum_seed);
	}

	li->crc = j->csum_seed;
	for (uint32_t i = 0; i < li->nblocks; i++)
		li->crc = ordfs_crc32c(li->crc, li->blocks + (size_t)i * bs, bs);
	return 0;
}

/* The commit time is taken at the first attempt and kept, so a retried
 * commit writes the same bytes as the failed one. */
static void build_commit_block(struct journal *j, struct transaction *tx,
			       const struct log_image *li, uint8_t *blk)
{
	if (tx->commit_time.tv_sec == 0 && tx->commit_time.tv_nsec == 0)
		clock_gettime(CLOCK_REALTIME, &tx->commit_time);
	memset(blk, 0, j->block_size);
	ordfs_jblock_hdr_init(blk, ORDFS_JB_COMMIT, tx->tid);
	le_put32(blk + 16, li->nblocks);
	le_put32(blk + 20, li->crc);
	le_put64(blk + 24, (uint64_t)tx->commit_time.tv_sec);
	le_put32(blk + 32, (uint32_t)tx->commit_time.tv_nsec);
	ordfs_jblock_csum_set(blk, j->block_size, j->csum_seed);
}

/* ---- phases ------------------------------------------------------------ */

/* Phases 1-2.  Called and returns with state_lock held.  Returns the
 * transaction now committing, or NULL if it was empty (it stays running). */
static struct transaction *commit_lock_and_copy(struct journal *j, int *err)
{
	struct transaction *tx = j->running;

	*err = 0;
	ORDFS_ASSERT(tx->state == TX_RUNNING && j->committing == NULL);
	tx->state = TX_LOCKED;
	while (tx->handles > 0)
		ordfs_cond_wait(&j->commit_cond, &j->state_lock);
	ORDFS_ASSERT(tx->reserved == 0);

	if (transaction_empty(tx)) {
		tx->state = TX_RUNNING;
		pthread_cond_broadcast(&j->handle_cond);
		pthread_cond_broadcast(&j->done_cond);
		return NULL;
	}

	struct transaction *next = transaction_new(tx->tid + 1);
	tx->copies = calloc(tx->bufs.n ? tx->bufs.n : 1, sizeof(*tx->copies));
	if (!next || !tx->copies) {
		transaction_free(next);
		*err = -ENOMEM;
		tx->state = TX_RUNNING;
		pthread_cond_broadcast(&j->handle_cond);
		return NULL;
	}
	for (uint32_t i = 0; i < tx->bufs.n; i++) {
		struct buf *b = tx->bufs.v[i];
		uint8_t *copy = malloc(j->block_size);
		if (!copy) {
			*err = -ENOMEM;
			break;
		}
		memcpy(copy, b->data, j->block_size);
		if (b->csum_hdr)
			ordfs_block_csum_set(copy, j->block_size, j->csum_seed);
		tx->copies[i] = copy;
	}
	if (*err) {
		for (uint32_t i = 0; i < tx->bufs.n; i++)
			free(tx->copies[i]);
		free(tx->copies);
		tx->copies = NULL;
		transaction_free(next);
		tx->state = TX_RUNNING;
		pthread_cond_broadcast(&j->handle_cond);
		return NULL;
	}
	for (uint32_t i = 0; i < tx->bufs.n; i++) {
		tx->bufs.v[i]->jtx = NULL;
		tx->bufs.v[i]->in_commit = true;
	}
	tx->state = TX_COMMITTING;
	j->committing = tx;
	j->running = next;
	pthread_cond_broadcast(&j->handle_cond);
	return tx;
}

/* Phases 3-7, without the lock held.  Returns 0 once durable; on failure
 * *retryable says whether writing it again may succeed (the device failed,
 * or memory ran short), as opposed to a transaction that can never be
 * written (it outgrew the log: a bug). */
static int commit_write(struct journal *j, struct transaction *tx, bool *retryable)
{
	*retryable = true;
	struct log_image li = { 0 };
	int err = 0;
	if (tx->tid + 1 >= ORDFS_JSEQ_LIMIT) {
		/* The journal superblock could not say the next sequence.  A
		 * mount starts below ORDFS_JSEQ_RENEW (journal_open): 2^61
		 * commits away from here. */
		ordfs_log(LOG_ERR, "journal sequence %llu reached the limit: nothing more is "
			  "committed", (unsigned long long)tx->tid);
		*retryable = false;
		err = -EOVERFLOW;
		goto out;
	}
	err = build_log_image(j, tx, &li);
	if (err)
		goto out;

	uint32_t need = li.nblocks + 1;
	ordfs_mutex_lock(&j->state_lock);
	uint32_t room = journal_log_capacity(j) - journal_log_used(j) - 1;
	uint32_t head = j->head;
	ordfs_mutex_unlock(&j->state_lock);
	if (need > room) {
		err = journal_checkpoint_all(j); /* [J4] */
		if (err)
			goto out;
		ordfs_mutex_lock(&j->state_lock);
		room = journal_log_capacity(j) - journal_log_used(j) - 1;
		head = j->head;
		ordfs_mutex_unlock(&j->state_lock);
		if (need > room) {
			/* Cannot happen while credits are honoured. */
			ordfs_log(LOG_ERR, "internal error: transaction %llu needs %u log blocks, "
				  "the log has room for %u",
				  (unsigned long long)tx->tid, need, room);
			err = -EUCLEAN;
			*retryable = false;
			goto out;
		}
	}

	uint8_t *commit_blk = li.blocks + (size_t)li.nblocks * j->block_size;
	build_commit_block(j, tx, &li, commit_blk);
	if (!tx->ordered_data) {
		/* Nothing to order before the commit block: it goes with the
		 * log blocks in one write (the chained CRC makes a commit
		 * block that reached the disk without them invalid), and F2
		 * makes all of it durable.  On a network block device that is
		 * one round trip less per commit. */
		err = write_log(j, head, li.blocks, li.nblocks + 1);
		if (!err)
			err = journal_barrier(j); /* F2 [J3] */
		goto committed;
	}
	err = write_log(j, head, li.blocks, li.nblocks);
	if (!err)
		err = journal_barrier(j); /* F1 [J2] */
	if (err)
		goto out;

	uint32_t commit_pos = journal_log_advance(j, head, li.nblocks);
	if (__atomic_load_n(&j->cfg.barrier, __ATOMIC_RELAXED) && j->bd->fua) {
		/* F1 made the log blocks durable: only the commit block is
		 * left, and a FUA write of it replaces F2 (one round trip to
		 * the device instead of two). */
		err = blockdev_write_fua(j->bd, commit_blk, j->block_size,
					 (j->journal_start + commit_pos) * j->block_size);
	} else {
		err = write_log(j, commit_pos, commit_blk, 1);
		if (!err)
			err = journal_barrier(j); /* F2 [J3] */
	}
committed:
	if (!err) {
		ordfs_mutex_lock(&j->state_lock);
		j->head = journal_log_advance(j, head, need);
		j->stats.blocks_logged += tx->bufs.n;
		j->stats.revokes_logged += tx->revokes.n;
		ordfs_mutex_unlock(&j->state_lock);
	}
out:
	free(li.blocks);
	return err;
}

/* After a durable commit: the blocks it freed are released [J5], its copies
 * go to the checkpoint list, and only then are the waiters woken, so a
 * caller whose commit returned sees the freed space.  Called without the
 * lock.  (No checkpoint can run meanwhile: it runs on this thread.) */
static void commit_finish(struct journal *j, struct transaction *tx)
{
	ORDFS_ASSERT(tx->state == TX_COMMITTING && tx->handles == 0);
	for (uint32_t i = 0; i < tx->freed.n; i++) {
		if (j->cfg.release_freed)
			j->cfg.release_freed(j->cfg.release_ctx, tx->freed.v[i].start,
					     tx->freed.v[i].len);
	}

	ordfs_mutex_lock(&j->state_lock);
	for (uint32_t i = 0; i < tx->bufs.n; i++) {
		struct buf *b = tx->bufs.v[i];
		b->in_commit = false;
		journal_ckpt_add(j, b, tx->copies[i], tx->tid);
		tx->copies[i] = NULL;
	}
	j->committed_tid = tx->tid;
	j->committing = NULL;
	j->commit_failed = false;
	j->stats.commits++;
	pthread_cond_broadcast(&j->done_cond);
	ordfs_mutex_unlock(&j->state_lock);
}

/* A failed commit: the transaction does not count.  Returns true if it is
 * kept for a retry (tx stays j->committing), false if the journal aborted
 * and tx was let go. */
static bool commit_fail(struct journal *j, struct transaction *tx, int err, bool retryable)
{
	ordfs_mutex_lock(&j->state_lock);
	ORDFS_ASSERT(tx->state == TX_COMMITTING && j->committing == tx);
	j->stats.failed_commits++;
	if (retryable && __atomic_load_n(&j->cfg.retry_failed_commits, __ATOMIC_RELAXED) &&
	    !j->aborted && !j->stopping) {
		j->commit_failed = true;
		j->retry_at_ms = journal_now_ms() + j->cfg.commit_interval_ms;
		/* Everyone waiting is told now; a new request retries. */
		j->commit_request = j->committed_tid;
		pthread_cond_broadcast(&j->done_cond);
		pthread_cond_broadcast(&j->handle_cond);
		ordfs_mutex_unlock(&j->state_lock);
		return true;
	}
	ordfs_mutex_unlock(&j->state_lock);
	if (retryable) {
		journal_abort(j, err);
	} else {
		ordfs_log(LOG_ERR, "transaction %llu cannot be committed (%s) and is not retried: "
			  "the journal stops",
			  (unsigned long long)tx->tid, strerror(-err));
		journal_abort_internal(j, err);
	}
	ordfs_mutex_lock(&j->state_lock);
	for (uint32_t i = 0; i < tx->bufs.n; i++) {
		tx->bufs.v[i]->in_commit = false;
		free(tx->copies[i]);
		tx->copies[i] = NULL;
	}
	j->committing = NULL;
	j->commit_failed = false;
	ordfs_mutex_unlock(&j->state_lock);
	for (uint32_t i = 0; i < tx->bufs.n; i++)
		journal_buf_release(j, tx->bufs.v[i]);
	return false;
}

/* Writes tx (just copied, or kept after a failure) and settles it.
 * Called and returns without the lock. */
static void commit_attempt(struct journal *j, struct transaction *tx)
{
	bool retryable;
	int err = commit_write(j, tx, &retryable);
	if (err) {
		if (commit_fail(j, tx, err, retryable))
			return;
	} else {
		commit_finish(j, tx);
	}
	transaction_free(tx);
}

/* Commits the running transaction.  Called with state_lock held; returns
 * with it held. */
static void commit_running(struct journal *j)
{
	int err;
	struct transaction *tx = commit_lock_and_copy(j, &err);
	if (!tx) {
		if (err) {
			ordfs_mutex_unlock(&j->state_lock);
			journal_abort(j, err);
			ordfs_mutex_lock(&j->state_lock);
		}
		return;
	}
	ordfs_mutex_unlock(&j->state_lock);
	commit_attempt(j, tx);
	ordfs_mutex_lock(&j->state_lock);
}

/* A failed commit is retried when a commit is asked for (of it or of
 * anything after it) or the interval has passed.  state_lock held. */
static bool retry_due(struct journal *j)
{
	if (j->commit_request > j->committed_tid || j->stopping)
		return true;
	return j->cfg.commit_interval_ms && journal_now_ms() >= j->retry_at_ms;
}

static bool commit_due(struct journal *j)
{
	struct transaction *tx = j->running;
	if (j->commit_request >= tx->tid)
		return true;
	if (j->cfg.commit_interval_ms == 0 || tx->bufs.n == 0)
		return false;
	return journal_now_ms() - tx->start_ms >= j->cfg.commit_interval_ms;
}

static void wait_for_work(struct journal *j)
{
	if (j->cfg.commit_interval_ms == 0) {
		ordfs_cond_wait(&j->commit_cond, &j->state_lock);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)(j->cfg.commit_interval_ms % 1000) * 1000000u;
	ts.tv_sec += j->cfg.commit_interval_ms / 1000 + (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	ordfs_cond_timedwait(&j->commit_cond, &j->state_lock, &ts);
}

/* journal_config.ioprio_plus1: the thread's best-effort I/O priority.
 * A hint: a host that refuses it (no permission, no such call) changes
 * only timing. */
static void set_commit_ioprio(unsigned ioprio_plus1)
{
	unsigned level = ioprio_plus1 ? ioprio_plus1 - 1 : JOURNAL_IOPRIO_DEFAULT;
	enum { WHO_PROCESS = 1, CLASS_BE = 2, CLASS_SHIFT = 13 };
	(void)syscall(SYS_ioprio_set, WHO_PROCESS, 0, (CLASS_BE << CLASS_SHIFT) | (int)level);
}

void *journal_commit_thread(void *arg)
{
	struct journal *j = arg;

	ordfs_mutex_lock(&j->state_lock);
	set_commit_ioprio(j->cfg.ioprio_plus1);
	for (;;) {
		if (j->ioprio_changed) { /* journal_set_tunables */
			j->ioprio_changed = false;
			set_commit_ioprio(j->cfg.ioprio_plus1);
		}
		if (j->aborted) {
			pthread_cond_broadcast(&j->done_cond);
			if (j->stopping)
				break;
			ordfs_cond_wait(&j->commit_cond, &j->state_lock);
			continue;
		}
		if (j->commit_failed) {
			if (retry_due(j)) {
				ordfs_mutex_unlock(&j->state_lock);
				commit_attempt(j, j->committing);
				ordfs_mutex_lock(&j->state_lock);
				if (j->commit_failed && j->stopping)
					break; /* the device is still failing: give up */
				continue;
			}
		} else if (commit_due(j)) {
			uint64_t tid = j->running->tid;
			bool requested = j->commit_request >= tid;
			uint64_t before = j->stats.commits;
			commit_running(j);
			if (requested && j->stats.commits > before)
				j->stats.commits_requested++;
			/* An empty transaction stays running; requests for it
			 * are satisfied (its waiters see it empty). */
			if (j->running->tid == tid && j->commit_request >= tid)
				j->commit_request = tid - 1;
			continue;
		}
		if (j->checkpoint_request) {
			j->checkpoint_request = false;
			ordfs_mutex_unlock(&j->state_lock);
			int err = journal_checkpoint_all(j);
			if (err && !__atomic_load_n(&j->cfg.retry_failed_commits, __ATOMIC_RELAXED))
				journal_abort(j, err);
			ordfs_mutex_lock(&j->state_lock);
			if (err)
				j->stats.failed_checkpoints++;
			j->checkpoint_err = err;
			j->checkpoint_done++;
			pthread_cond_broadcast(&j->done_cond);
			continue;
		}
		if (j->stopping)
			break;
		wait_for_work(j);
	}
	ordfs_mutex_unlock(&j->state_lock);
	return NULL;
}
