/*
 * errseq.c - see errseq.h.  Layout of the 32-bit value: bits 0..11 the
 * errno, bit 12 "seen", bits 13..31 a counter of distinct errors.
 */
#include "errseq.h"
#include "lock/lock.h"

#define ERRSEQ_ERRNO_MASK 0xfffu
#define ERRSEQ_SEEN (1u << 12)
#define ERRSEQ_CTR_INC (1u << 13)

void errseq_init(struct errseq *e)
{
	ordfs_mutex_init(&e->lock, LOCK_ERRSEQ, "errseq lock");
	e->value = 0;
}

void errseq_destroy(struct errseq *e)
{
	ordfs_mutex_destroy(&e->lock);
}

void errseq_set(struct errseq *e, int err)
{
	if (err >= 0 || -err > (int)ERRSEQ_ERRNO_MASK)
		return;
	ordfs_mutex_lock(&e->lock);
	errseq_t old = e->value;
	errseq_t next = (old & ~(ERRSEQ_ERRNO_MASK | ERRSEQ_SEEN)) | (errseq_t)-err;
	if (old & ERRSEQ_SEEN || old == 0)
		next += ERRSEQ_CTR_INC;
	e->value = next;
	ordfs_mutex_unlock(&e->lock);
}

errseq_t errseq_sample(struct errseq *e)
{
	ordfs_mutex_lock(&e->lock);
	errseq_t v = e->value;
	ordfs_mutex_unlock(&e->lock);
	/* An error nobody has seen must reach this opener too. */
	return (v & ERRSEQ_SEEN) ? v : 0;
}

int errseq_check_and_advance(struct errseq *e, errseq_t *since)
{
	int err = 0;
	ordfs_mutex_lock(&e->lock);
	errseq_t v = e->value;
	if ((v & ~ERRSEQ_SEEN) != (*since & ~ERRSEQ_SEEN) && v != 0) {
		v |= ERRSEQ_SEEN;
		e->value = v;
		err = -(int)(v & ERRSEQ_ERRNO_MASK);
		*since = v;
	}
	ordfs_mutex_unlock(&e->lock);
	return err;
}
