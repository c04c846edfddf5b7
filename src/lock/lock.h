/*
 * lock.h - every lock of ordfs, with its place in the lock order.
 *
 * Owns: struct ordfs_mutex and struct ordfs_rwlock (a pthread lock plus
 * its class), the table of lock classes below (design/locking.md's lock
 * order in code), and the run-time check of that
 * order.
 *
 * Rules:
 *  - Every lock gets its class at init.  A thread may take a lock only if
 *    every lock it holds has a lower level; classes marked NESTS may also
 *    be taken at their own level (inode locks: the callers order them by
 *    the rules in design/locking.md, parent before child, else by inode
 *    number).
 *  - The check runs in debug and sanitizer builds (ORDFS_DEBUG_CHECKS):
 *    each thread keeps the locks it holds; taking one out of order logs
 *    both locks and aborts, so a test that only *could* deadlock fails.
 *    Release builds call pthread directly.
 *  - A journal handle counts as a lock of class LOCK_HANDLE (journal.c
 *    takes and drops it): nothing of a lower level, an inode lock above
 *    all, may be taken while a handle is open.
 *
 * Design: docs/design/locking.md.
 */
#ifndef ORDFS_LOCK_H
#define ORDFS_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The lock order, outermost first.  Gaps leave room. */
enum lock_level {
	LOCK_DEVICE_GROW = 3,    /* the daemon's online grow: the device's new
				    size and the owner record's move (main.c) */
	LOCK_REMOUNT = 5,        /* fs->remount_lock (mount/remount.c) */
	LOCK_RENAME = 10,        /* fs->rename_lock */
	LOCK_INODE = 20,         /* inode->lock (NESTS) */
	LOCK_HANDLE = 30,        /* an open journal handle (not a mutex) */
	LOCK_ORPHAN = 40,        /* fs->orphan_lock */
	LOCK_ALLOC = 42,         /* alloc->lock */
	LOCK_JOURNAL_SB = 50,    /* journal->sb_write_lock (recursive; a failed
				    write under it runs the abort policy,
				    which records the error: sb_lock) */
	LOCK_SB = 51,            /* fs->sb_lock */
	LOCK_JOURNAL = 52,       /* journal->state_lock */
	LOCK_INODE_RAW = 60,     /* inode->raw_lock */
	LOCK_ICACHE = 62,        /* the inode cache */
	LOCK_BCACHE = 64,        /* the buffer cache */
	LOCK_FILES = 66,         /* the daemon's open files */
	LOCK_WRITEBACK = 68,     /* fs->writeback_lock */
	LOCK_SYNC_GATE = 70,     /* fs->sync_gate */
	LOCK_ERRSEQ = 72,        /* an errseq (a file's write errors) */
	LOCK_OWNER = 74,         /* the owner record's heartbeat state (no I/O
				    under it) */
	LOCK_BUF_IO = 80,        /* a buffer's io_lock (NESTS: never two in
				    one thread by design, but buffers of
				    different blocks do not order) */
	LOCK_GUARD_MODE = 88,    /* the flush guard's policy: writes read it,
				    flush_guard_set_policy changes it */
	LOCK_GUARD_FLUSH = 90,   /* the flush guard: one flush at a time */
	LOCK_GUARD = 92,         /* the flush guard's state */
	LOCK_BLOCKDEV_REFRESH = 94, /* a device's size refresh, one at a time
				    (file, NBD: the NBD mutex and libnbd's
				    handle lock are taken under it) */
	LOCK_BLOCKDEV = 96,      /* a stacked block device's own lock */
	LOCK_BLOCKDEV_NBD = 97,  /* an NBD device's mutex (libnbd's handle lock
				    comes first: no libnbd call under it) */
	LOCK_BLOCKDEV_MEM = 98,  /* the memory device */
	LOCK_BLOCK_POOL = 99,    /* a block pool (base/block_pool.c: file data
				    pages, the flush guard's copies); a leaf */
	LOCK_TRANSPORT = 100,    /* the daemon's io_uring pool (its threads;
				    taken by a ring thread before it handles a
				    request, so under no other lock) */
};

struct ordfs_mutex {
	pthread_mutex_t m;
	uint8_t level;
	bool recursive;
	const char *name;
};

struct ordfs_rwlock {
	pthread_rwlock_t l;
	uint8_t level;
	const char *name;
};

void ordfs_mutex_init(struct ordfs_mutex *m, enum lock_level level, const char *name);
void ordfs_mutex_init_recursive(struct ordfs_mutex *m, enum lock_level level, const char *name);
void ordfs_mutex_destroy(struct ordfs_mutex *m);
void ordfs_rwlock_init(struct ordfs_rwlock *l, enum lock_level level, const char *name);
void ordfs_rwlock_destroy(struct ordfs_rwlock *l);

/* The order check (lock.c); no-ops in release builds. */
#ifdef ORDFS_DEBUG_CHECKS
void lock_order_acquire(const void *lock, unsigned level, const char *name, bool recursive);
void lock_order_release(const void *lock);
#else
static inline void lock_order_acquire(const void *lock, unsigned level, const char *name,
				      bool recursive)
{
	(void)lock, (void)level, (void)name, (void)recursive;
}
static inline void lock_order_release(const void *lock)
{
	(void)lock;
}
#endif

static inline void ordfs_mutex_lock(struct ordfs_mutex *m)
{
	lock_order_acquire(m, m->level, m->name, m->recursive);
	pthread_mutex_lock(&m->m);
}

static inline void ordfs_mutex_unlock(struct ordfs_mutex *m)
{
	pthread_mutex_unlock(&m->m);
	lock_order_release(m);
}

static inline void ordfs_rwlock_rdlock(struct ordfs_rwlock *l)
{
	lock_order_acquire(l, l->level, l->name, false);
	pthread_rwlock_rdlock(&l->l);
}

static inline void ordfs_rwlock_wrlock(struct ordfs_rwlock *l)
{
	lock_order_acquire(l, l->level, l->name, false);
	pthread_rwlock_wrlock(&l->l);
}

/* Takes l shared if no writer holds or awaits it now: true, or false at
 * once.  A try never waits, so it cannot close a cycle: it is how a lock
 * may be taken where the order gives no rule (the scrub's second inode,
 * which may be the first's parent or child). */
static inline bool ordfs_rwlock_tryrdlock(struct ordfs_rwlock *l)
{
	if (pthread_rwlock_tryrdlock(&l->l) != 0)
		return false;
	lock_order_acquire(l, l->level, l->name, false);
	return true;
}

static inline void ordfs_rwlock_unlock(struct ordfs_rwlock *l)
{
	pthread_rwlock_unlock(&l->l);
	lock_order_release(l);
}

/* Condition waits give the mutex back and take it again: the thread's
 * place in the order does not change. */
static inline int ordfs_cond_wait(pthread_cond_t *c, struct ordfs_mutex *m)
{
	return pthread_cond_wait(c, &m->m);
}

static inline int ordfs_cond_timedwait(pthread_cond_t *c, struct ordfs_mutex *m,
				       const struct timespec *until)
{
	return pthread_cond_timedwait(c, &m->m, until);
}

#endif
