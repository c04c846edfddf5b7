/*
 * journal_internal.h - state shared by journal.c (handles), commit.c (the
 * commit thread) and checkpoint.c.  Not for use outside src/journal/.
 *
 * Locking: every field below marked (S) is guarded by j->state_lock;
 * fields marked (C) belong to the commit thread alone.
 */
#ifndef ORDFS_JOURNAL_INTERNAL_H
#define ORDFS_JOURNAL_INTERNAL_H

#include <pthread.h>
#include <time.h>

#include "journal.h"
#include "../cache/bcache.h"
#include "../lock/lock.h"

enum tx_state {
	TX_RUNNING,   /* handles may join */
	TX_LOCKED,    /* commit waits for open handles; new handles wait */
	TX_COMMITTING /* copies taken; log being written */
};

struct freed_extent {
	uint64_t start;
	uint32_t len;
};

/* A growable array of T. */
#define VEC(T) struct { T *v; uint32_t n, cap; }

struct transaction {
	uint64_t tid;
	enum tx_state state;     /* (S) */
	uint32_t handles;        /* (S) open handles */
	uint32_t reserved;       /* (S) credits open handles may still use */
	uint64_t start_ms;       /* (S) when the first buffer joined */
	VEC(struct buf *) bufs;  /* (S) buffers to log, each with a journal ref */
	VEC(uint64_t) revokes;   /* (S) */
	VEC(struct freed_extent) freed; /* (S) released after commit [J5] */
	bool ordered_data;       /* (S) makes data written before it reachable:
				  * F1 must cover that data before the commit
				  * record (data=ordered) */
	/* (C) filled when the commit starts: the copies to log */
	uint8_t **copies;
	struct timespec commit_time; /* (C) in the commit block, every attempt */
};

struct handle {
	struct journal *j;
	struct transaction *tx;
	uint32_t credits;
	uint32_t used;
};

struct journal {
	struct blockdev *bd;
	struct bcache *cache;
	struct journal_config cfg;
	uint32_t block_size;
	uint32_t csum_seed;
	uint64_t journal_start;   /* image block of log block 0 */
	uint32_t log_first;       /* first usable log block */
	uint32_t log_total;       /* log blocks including the journal sb */
	uint32_t max_tx_blocks;   /* credits one transaction may reserve */
	uint8_t uuid[ORDFS_UUID_LEN];

	struct ordfs_mutex state_lock;
	pthread_cond_t handle_cond;  /* (S) running transaction changed/unlocked */
	pthread_cond_t commit_cond;  /* (S) wakes the commit thread */
	pthread_cond_t done_cond;    /* (S) a commit or checkpoint finished */

	struct transaction *running;   /* (S) never NULL while open */
	struct transaction *committing;/* (S) or NULL; stays set while a failed
					* commit waits to be retried */
	bool commit_failed;            /* (S) committing holds a failed commit */
	uint64_t retry_at_ms;          /* (S) when to retry it unasked */
	int checkpoint_err;            /* (S) result of the last requested one */
	uint32_t sb_start;             /* (S) what the journal sb last said */
	uint64_t sb_seq;               /* (S) */
	uint64_t committed_tid;        /* (S) highest committed sequence */
	uint64_t commit_request;       /* (S) commit up to this tid */
	bool checkpoint_request;       /* (S) full checkpoint wanted */
	uint64_t checkpoint_done;      /* (S) full checkpoints completed */
	int aborted;                   /* (S) 0 or the negative errno */
	bool abort_notifying;          /* (S) cfg.aborted is running */
	pthread_t abort_notifier;      /* (S) on this thread */
	struct ordfs_mutex sb_write_lock; /* one journal superblock write at a time */
	bool stopping;                 /* (S) */
	bool readonly;                 /* (S) journal_set_readonly: no handles */
	bool ioprio_changed;           /* (S) journal_set_tunables: apply it */
	bool renew_pending;            /* opened read-only on a log due for a
					* new run of sequences: the running tid
					* is 1 already; journal_set_writable
					* zeroes the log before it writes */
	struct journal_stats stats;    /* (S) */

	/* Buffers with a committed copy not yet written home. (S) */
	struct buf *ckpt_head;
	uint64_t ckpt_count;

	/* Log positions, in log blocks. (S) written by the commit thread. */
	uint32_t head;  /* where the next transaction starts */
	uint32_t tail;  /* oldest transaction not yet checkpointed */

	pthread_t thread;
	bool thread_started;
};

/* journal.c */
uint64_t journal_now_ms(void);
void journal_buf_release(struct journal *j, struct buf *b);
int vec_grow(void **v, uint32_t *cap, uint32_t need, size_t elem);
#define VEC_PUSH(vec, val)                                                          \
	(vec_grow((void **)&(vec).v, &(vec).cap, (vec).n + 1, sizeof(*(vec).v)) ? -ENOMEM \
	 : ((vec).v[(vec).n++] = (val), 0))
struct transaction *transaction_new(uint64_t tid);
void transaction_free(struct transaction *tx);
bool transaction_empty(const struct transaction *tx);

/* commit.c */
void *journal_commit_thread(void *arg);
uint32_t journal_log_used(const struct journal *j);
uint32_t journal_log_capacity(const struct journal *j);
uint32_t journal_log_advance(const struct journal *j, uint32_t pos, uint32_t n);
int journal_write_super(struct journal *j, uint32_t start, uint64_t sequence);
/* Writes the journal superblock again with what it last said (and the
 * current errno), under the same lock, so it never goes backwards. */
int journal_rewrite_super(struct journal *j);
void wait_abort_notified(struct journal *j);
int journal_barrier(struct journal *j);

/* recovery.c: zeroes log blocks 1 .. total_blocks - 1 and flushes (before
 * a new run of sequences starts at 1: no old block can match one). */
int journal_log_zero(struct blockdev *bd, uint64_t journal_start, uint32_t bs,
		     uint32_t total_blocks);

/* checkpoint.c */
void journal_ckpt_add(struct journal *j, struct buf *b, uint8_t *copy, uint64_t tid);
void journal_ckpt_drop(struct journal *j, struct buf *b);
int journal_checkpoint_all(struct journal *j);

#endif
