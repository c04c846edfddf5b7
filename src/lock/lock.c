/*
 * lock.c - lock classes and the run-time lock-order check (see lock.h).
 *
 * Each thread keeps the locks it holds (a small stack); taking a lock
 * whose level is not above every held one is a lock-order violation:
 * logged with both locks, then abort().  Checked only with
 * ORDFS_DEBUG_CHECKS; the stack is per thread, so the check takes no lock.
 */
#include <stdlib.h>

#include "lock.h"
#include "base/log.h"
#include "base/ordfs_assert.h"

void ordfs_mutex_init(struct ordfs_mutex *m, enum lock_level level, const char *name)
{
	pthread_mutex_init(&m->m, NULL);
	m->level = (uint8_t)level;
	m->recursive = false;
	m->name = name;
}

void ordfs_mutex_init_recursive(struct ordfs_mutex *m, enum lock_level level, const char *name)
{
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&m->m, &attr);
	pthread_mutexattr_destroy(&attr);
	m->level = (uint8_t)level;
	m->recursive = true;
	m->name = name;
}

void ordfs_mutex_destroy(struct ordfs_mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

void ordfs_rwlock_init(struct ordfs_rwlock *l, enum lock_level level, const char *name)
{
	pthread_rwlock_init(&l->l, NULL);
	l->level = (uint8_t)level;
	l->name = name;
}

void ordfs_rwlock_destroy(struct ordfs_rwlock *l)
{
	pthread_rwlock_destroy(&l->l);
}

#ifdef ORDFS_DEBUG_CHECKS

#define HELD_MAX 32

struct held_lock {
	const void *lock;
	const char *name;
	unsigned level;
};

static __thread struct held_lock held[HELD_MAX];
static __thread unsigned nheld;

/* Classes whose locks may be held several at a time by one thread. */
static bool nests(unsigned level)
{
	return level == LOCK_INODE || level == LOCK_BUF_IO;
}

void lock_order_acquire(const void *lock, unsigned level, const char *name, bool recursive)
{
	for (unsigned i = 0; i < nheld; i++) {
		if (held[i].lock == lock) {
			if (recursive)
				break; /* taken again by its holder: allowed */
			ordfs_log(LOG_ERR, "lock order: %s taken twice by one thread", name);
			abort();
		}
		if (held[i].level > level || (held[i].level == level && !nests(level))) {
			ordfs_log(LOG_ERR, "lock order: %s (level %u) taken while %s (level %u) "
				  "is held", name, level, held[i].name, held[i].level);
			abort();
		}
	}
	ORDFS_ASSERT_CHEAP(nheld < HELD_MAX);
	held[nheld++] = (struct held_lock){ lock, name, level };
}

void lock_order_release(const void *lock)
{
	for (unsigned i = nheld; i-- > 0;) {
		if (held[i].lock == lock) {
			held[i] = held[--nheld]; /* the check does not need them in order */
			return;
		}
	}
	ordfs_log(LOG_ERR, "lock order: a lock released that this thread does not hold");
	abort();
}

#endif
