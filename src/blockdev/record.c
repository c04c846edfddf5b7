/*
 * record.c - counting, recording, latching and fault-injecting wrapper.
 *
 * Owns: counters, the optional event log (a copy of every write and a mark
 * for every flush), the flush latch and the fail-the-Nth-operation faults.
 * Rules: one mutex guards all state; a flush waiting on the latch holds no
 * lock, so reads and writes proceed while a flush is "stuck in the disk".
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockdev.h"

struct record_dev {
	struct blockdev bd;
	struct blockdev *inner;
	bool log_writes;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct blockdev_counts counts;
	struct blockdev_event *events;
	size_t nevents, cap_events;

	bool latch_armed;
	unsigned latch_blocked;

	uint64_t fail_write_nth, fail_flush_nth;
	int fail_write_err, fail_flush_err;

	char *latch_path; /* flushes wait while this file exists */
};

static struct record_dev *to_rec(struct blockdev *bd)
{
	return (struct record_dev *)bd;
}

static int log_event(struct record_dev *r, enum blockdev_event_type type, const void *buf,
		     size_t len, uint64_t off)
{
	if (r->nevents == r->cap_events) {
		size_t cap = r->cap_events ? r->cap_events * 2 : 256;
		struct blockdev_event *ev = realloc(r->events, cap * sizeof(*ev));
		if (!ev)
			return -ENOMEM;
		r->events = ev;
		r->cap_events = cap;
	}
	struct blockdev_event *ev = &r->events[r->nevents];
	ev->type = type;
	ev->off = off;
	ev->len = len;
	ev->data = NULL;
	if (type == BD_EV_WRITE) {
		ev->data = malloc(len ? len : 1);
		if (!ev->data)
			return -ENOMEM;
		memcpy(ev->data, buf, len);
	}
	r->nevents++;
	return 0;
}

/* Counts down an armed fault; true when this operation must fail. */
static bool fault_fires(uint64_t *nth)
{
	if (*nth == 0)
		return false;
	return --*nth == 0;
}

static int record_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	r->counts.reads++;
	r->counts.bytes_read += len;
	pthread_mutex_unlock(&r->lock);
	return blockdev_read(r->inner, buf, len, off);
}

static int record_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct record_dev *r = to_rec(bd);
	int err = 0;

	pthread_mutex_lock(&r->lock);
	r->counts.writes++;
	r->counts.bytes_written += len;
	if (fault_fires(&r->fail_write_nth)) {
		pthread_mutex_unlock(&r->lock);
		return r->fail_write_err;
	}
	/* Write under the lock so the log order is the device order. */
	err = blockdev_write(r->inner, buf, len, off);
	if (!err && r->log_writes)
		err = log_event(r, BD_EV_WRITE, buf, len, off);
	pthread_mutex_unlock(&r->lock);
	return err;
}

static int record_flush(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	int err;

	pthread_mutex_lock(&r->lock);
	r->counts.flushes++;
	if (r->latch_armed) {
		r->latch_blocked++;
		pthread_cond_broadcast(&r->cond);
		while (r->latch_armed)
			pthread_cond_wait(&r->cond, &r->lock);
		r->latch_blocked--;
	}
	if (fault_fires(&r->fail_flush_nth)) {
		pthread_mutex_unlock(&r->lock);
		return r->fail_flush_err;
	}
	pthread_mutex_unlock(&r->lock);

	if (r->latch_path) {
		/* A latch another process controls: poll, holding no lock. */
		while (access(r->latch_path, F_OK) == 0)
			usleep(5000);
	}
	err = blockdev_flush(r->inner);
	if (!err && r->log_writes) {
		pthread_mutex_lock(&r->lock);
		err = log_event(r, BD_EV_FLUSH, NULL, 0, 0);
		pthread_mutex_unlock(&r->lock);
	}
	return err;
}

void blockdev_record_clear_events(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nevents; i++)
		free(r->events[i].data);
	r->nevents = 0;
	pthread_mutex_unlock(&r->lock);
}

static void record_destroy(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	blockdev_record_clear_events(bd);
	free(r->events);
	free(r->latch_path);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static const struct blockdev_ops record_ops = {
	.read = record_read,
	.write = record_write,
	.flush = record_flush,
	.destroy = record_destroy,
};

int blockdev_record_create(struct blockdev *inner, bool log_writes, struct blockdev **out)
{
	struct record_dev *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->bd.ops = &record_ops;
	r->bd.size = inner->size;
	r->inner = inner;
	r->log_writes = log_writes;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	*out = &r->bd;
	return 0;
}

void blockdev_record_counts(struct blockdev *bd, struct blockdev_counts *out)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	*out = r->counts;
	pthread_mutex_unlock(&r->lock);
}

void blockdev_record_reset_counts(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	memset(&r->counts, 0, sizeof(r->counts));
	pthread_mutex_unlock(&r->lock);
}

const struct blockdev_event *blockdev_record_events(struct blockdev *bd, size_t *count)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	*count = r->nevents;
	const struct blockdev_event *ev = r->events;
	pthread_mutex_unlock(&r->lock);
	return ev;
}

void blockdev_record_latch_arm(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	r->latch_armed = true;
	pthread_mutex_unlock(&r->lock);
}

void blockdev_record_latch_release(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	r->latch_armed = false;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

int blockdev_record_latch_wait_blocked(struct blockdev *bd, unsigned n, unsigned timeout_ms)
{
	struct record_dev *r = to_rec(bd);
	struct timespec deadline;
	int err = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->lock);
	while (r->latch_blocked < n && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &deadline);
	if (r->latch_blocked >= n)
		err = 0;
	pthread_mutex_unlock(&r->lock);
	return err ? -ETIMEDOUT : 0;
}

void blockdev_record_fail_write(struct blockdev *bd, uint64_t nth, int err)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	r->fail_write_nth = nth;
	r->fail_write_err = err;
	pthread_mutex_unlock(&r->lock);
}

void blockdev_record_fail_flush(struct blockdev *bd, uint64_t nth, int err)
{
	struct record_dev *r = to_rec(bd);
	pthread_mutex_lock(&r->lock);
	r->fail_flush_nth = nth;
	r->fail_flush_err = err;
	pthread_mutex_unlock(&r->lock);
}

int blockdev_record_latch_file(struct blockdev *bd, const char *path)
{
	struct record_dev *r = to_rec(bd);
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	free(r->latch_path);
	r->latch_path = copy;
	pthread_mutex_unlock(&r->lock);
	return 0;
}
