/*
 * checkpoint.c - writing committed blocks home and freeing log space.
 *
 * Owns: the checkpoint list (buffers holding a committed copy newer than
 * their home block) and the log tail.  Rules:
 *  - Only the newest committed copy of a block is kept; the checkpoint
 *    writes copies, never live buffers, so no uncommitted byte reaches a
 *    home location.
 *  - A copy whose block was freed by a committed transaction is dropped,
 *    not written [J5]: the block may already hold someone else's data.
 *  - The tail moves only after the home writes are flushed (F3), and the
 *    journal superblock recording it is flushed (F4) before the commit
 *    thread writes into the freed space [J4].
 *  - Runs only on the commit thread, so no commit races it; the list may
 *    shrink meanwhile (journal_get_write_access drops a reused block's copy).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "journal_internal.h"
#include "../blockdev/blockdev.h"
#include "../lock/lock.h"

#define CKPT_BATCH_BLOCKS 256u

/* state_lock held.  Takes over the caller's journal reference on b. */
void journal_ckpt_add(struct journal *j, struct buf *b, uint8_t *copy, uint64_t tid)
{
	if (b->committed) {
		free(b->committed); /* superseded; b already holds a ckpt ref */
		journal_buf_release(j, b);
	} else {
		b->ckpt_prev = NULL;
		b->ckpt_next = j->ckpt_head;
		if (j->ckpt_head)
			j->ckpt_head->ckpt_prev = b;
		j->ckpt_head = b;
		j->ckpt_count++;
	}
	b->committed = copy;
	b->committed_seq = tid;
}

/* state_lock held (or the journal is single-threaded at close).  Removes b
 * from the checkpoint list and drops the copy and its reference. */
void journal_ckpt_drop(struct journal *j, struct buf *b)
{
	if (b->ckpt_prev)
		b->ckpt_prev->ckpt_next = b->ckpt_next;
	else
		j->ckpt_head = b->ckpt_next;
	if (b->ckpt_next)
		b->ckpt_next->ckpt_prev = b->ckpt_prev;
	b->ckpt_next = b->ckpt_prev = NULL;
	free(b->committed);
	b->committed = NULL;
	b->committed_seq = 0;
	j->ckpt_count--;
	journal_buf_release(j, b);
}

struct ckpt_batch {
	uint64_t blockno[CKPT_BATCH_BLOCKS];
	uint8_t *data; /* CKPT_BATCH_BLOCKS * block_size */
	uint32_t n;
};

static int cmp_u32_by_block(const void *a, const void *b, void *ctx)
{
	const uint64_t *blocks = ctx;
	uint64_t x = blocks[*(const uint32_t *)a], y = blocks[*(const uint32_t *)b];
	return x < y ? -1 : x > y;
}

/* Writes a batch home in block order, one write per contiguous run. */
static int write_batch(struct journal *j, struct ckpt_batch *batch)
{
	uint32_t order[CKPT_BATCH_BLOCKS];
	uint32_t bs = j->block_size;
	uint8_t *run = malloc((size_t)CKPT_BATCH_BLOCKS * bs);
	int err = 0;

	if (!run)
		return -ENOMEM;
	for (uint32_t i = 0; i < batch->n; i++)
		order[i] = i;
	qsort_r(order, batch->n, sizeof(order[0]), cmp_u32_by_block, batch->blockno);

	for (uint32_t i = 0; i < batch->n && !err;) {
		uint32_t len = 0;
		uint64_t first = batch->blockno[order[i]];
		while (i + len < batch->n && batch->blockno[order[i + len]] == first + len) {
			memcpy(run + (size_t)len * bs, batch->data + (size_t)order[i + len] * bs, bs);
			len++;
		}
		err = blockdev_write(j->bd, run, (size_t)len * bs, first * bs);
		i += len;
	}
	free(run);
	return err;
}

/* Snapshot of the checkpoint list, each entry with a reference held. */
static int snapshot_list(struct journal *j, struct buf ***out, uint64_t *count)
{
	ordfs_mutex_lock(&j->state_lock);
	uint64_t n = j->ckpt_count;
	struct buf **v = malloc((n ? n : 1) * sizeof(*v));
	if (!v) {
		ordfs_mutex_unlock(&j->state_lock);
		return -ENOMEM;
	}
	uint64_t i = 0;
	for (struct buf *b = j->ckpt_head; b; b = b->ckpt_next) {
		bcache_hold(j->cache, b);
		v[i++] = b;
	}
	ordfs_mutex_unlock(&j->state_lock);
	*out = v;
	*count = i;
	return 0;
}

/* Copies entries [*pos, ...) of the snapshot into a batch, under the lock,
 * dropping copies of blocks whose free has committed [J5] and skipping
 * entries already dropped for reuse. */
static void gather_batch(struct journal *j, struct buf **v, uint64_t count, uint64_t *pos,
			 struct ckpt_batch *batch)
{
	batch->n = 0;
	ordfs_mutex_lock(&j->state_lock);
	while (*pos < count && batch->n < CKPT_BATCH_BLOCKS) {
		struct buf *b = v[(*pos)++];
		if (!b->committed)
			continue;
		if (b->freed_seq && b->freed_seq <= j->committed_tid) {
			journal_ckpt_drop(j, b);
			continue;
		}
		batch->blockno[batch->n] = b->blockno;
		memcpy(batch->data + (size_t)batch->n * j->block_size, b->committed,
		       j->block_size);
		batch->n++;
	}
	ordfs_mutex_unlock(&j->state_lock);
}

int journal_checkpoint_all(struct journal *j)
{
	struct ckpt_batch batch;
	struct buf **v = NULL;
	uint64_t count = 0, pos = 0, written = 0;
	int err;

	batch.data = malloc((size_t)CKPT_BATCH_BLOCKS * j->block_size);
	if (!batch.data)
		return -ENOMEM;
	err = snapshot_list(j, &v, &count);
	if (err)
		goto out_free;

	while (pos < count) {
		gather_batch(j, v, count, &pos, &batch);
		err = write_batch(j, &batch);
		if (err)
			goto out_put;
		written += batch.n;
	}
	err = journal_barrier(j); /* F3 */
	if (err)
		goto out_put;

	/* Every copy in the snapshot is home.  No commit ran meanwhile (this
	 * is the commit thread), so each remaining copy is the one written. */
	ordfs_mutex_lock(&j->state_lock);
	for (uint64_t i = 0; i < count; i++) {
		if (v[i]->committed)
			journal_ckpt_drop(j, v[i]);
	}
	uint32_t head = j->head;
	uint64_t next_seq = j->committed_tid + 1;
	ordfs_mutex_unlock(&j->state_lock);

	err = journal_write_super(j, head, next_seq); /* F4 [J4] */
	if (!err) {
		ordfs_mutex_lock(&j->state_lock);
		j->tail = head;
		j->stats.checkpoints++;
		j->stats.blocks_checkpointed += written;
		ordfs_mutex_unlock(&j->state_lock);
	}
out_put:
	for (uint64_t i = 0; i < count; i++)
		bcache_put(j->cache, v[i]);
	free(v);
out_free:
	free(batch.data);
	return err;
}
