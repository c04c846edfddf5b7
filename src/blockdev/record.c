/*
 * record.c - counting, recording, latching and fault-injecting wrapper.
 *
 * Owns: counters, the optional event log (a copy of every write and a mark
 * for every flush), the flush latch and the fault injector: a device that
 * fails like a real disk.
 * Rules:
 *  - One mutex guards all state; a flush waiting on the latch holds no
 *    lock, so reads and writes proceed while a flush is "stuck in the disk".
 *  - Faults are deterministic by count: the Nth write or flush from arming
 *    fails.  A transient fault fails that one operation; a persistent one
 *    breaks the device: every write and flush fails until it is healed.
 *  - With drop_unflushed on, the device remembers what each write since
 *    the last successful flush overwrote; a failing flush puts those bytes
 *    back (newest first), as a disk whose cache was lost would.  A failed
 *    write changes nothing.
 *  - With a stream, every event is also appended to a file as it happens
 *    (the daemon's ORDFS_TEST_RECORD), in the order the device saw it.
 *  - A size refresh is passed down, not counted or logged (it changes no
 *    byte); the device then takes the size of what it wraps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockdev.h"
#include "format/endian_le.h"
#include "../lock/lock.h"

struct undo_entry {
	uint64_t off;
	size_t len;
	uint8_t *old; /* the bytes the write replaced */
};

struct record_dev {
	struct blockdev bd;
	struct blockdev *inner;
	bool log_writes;

	struct ordfs_mutex lock;
	pthread_cond_t cond;
	struct blockdev_counts counts;
	struct blockdev_event *events;
	size_t nevents, cap_events;

	bool latch_armed;
	unsigned latch_blocked;

	struct blockdev_fault fault_write, fault_flush;
	int broken;                 /* 0, or the errno a persistent fault left */
	uint64_t faults_fired;

	bool drop_unflushed;
	struct undo_entry *undo;    /* writes since the last good flush */
	size_t nundo, cap_undo;

	char *latch_path; /* flushes wait while this file exists */
	int stream_fd;    /* events appended here too; -1 none */
};

static struct record_dev *to_rec(struct blockdev *bd)
{
	return (struct record_dev *)bd;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One event of the stream format (blockdev.h).  Lock held. */
static int stream_event(struct record_dev *r, enum blockdev_event_type type, const void *buf,
			size_t len, uint64_t off)
{
	uint8_t hdr[BLOCKDEV_STREAM_HDR];
	le_put32(hdr, BLOCKDEV_STREAM_MAGIC);
	le_put32(hdr + 4, (uint32_t)type);
	le_put64(hdr + 8, off);
	le_put64(hdr + 16, len);
	int err = write_all(r->stream_fd, hdr, sizeof(hdr));
	return err || !len ? err : write_all(r->stream_fd, buf, len);
}

static int log_event(struct record_dev *r, enum blockdev_event_type type, const void *buf,
		     size_t len, uint64_t off)
{
	if (r->stream_fd >= 0) {
		int err = stream_event(r, type, buf, len, off);
		if (err || !r->log_writes)
			return err;
	}
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
	if (type == BD_EV_WRITE || type == BD_EV_MARK) {
		ev->data = malloc(len + 1);
		if (!ev->data)
			return -ENOMEM;
		memcpy(ev->data, buf, len);
		ev->data[len] = 0;
	}
	r->nevents++;
	return 0;
}

/* Counts down an armed fault.  Returns 0, or the error this operation
 * fails with (a broken device fails everything).  Lock held. */
static int fault_check(struct record_dev *r, struct blockdev_fault *f)
{
	if (r->broken)
		return r->broken;
	if (f->nth == 0 || --f->nth != 0)
		return 0;
	r->faults_fired++;
	if (f->persistent)
		r->broken = f->err;
	return f->err;
}

/* Keeps what the write at [off, off + len) is about to overwrite.  Lock
 * held. */
static int undo_save(struct record_dev *r, size_t len, uint64_t off)
{
	if (r->nundo == r->cap_undo) {
		size_t cap = r->cap_undo ? r->cap_undo * 2 : 64;
		struct undo_entry *u = realloc(r->undo, cap * sizeof(*u));
		if (!u)
			return -ENOMEM;
		r->undo = u;
		r->cap_undo = cap;
	}
	uint8_t *old = malloc(len ? len : 1);
	if (!old)
		return -ENOMEM;
	int err = blockdev_read(r->inner, old, len, off);
	if (err) {
		free(old);
		return err;
	}
	r->undo[r->nundo++] = (struct undo_entry){ off, len, old };
	return 0;
}

/* Forgets the undo log (after a good flush), or with restore puts every
 * overwritten byte back first (a failed flush lost the writes).  Lock
 * held. */
static void undo_finish(struct record_dev *r, bool restore)
{
	while (r->nundo > 0) {
		struct undo_entry *u = &r->undo[--r->nundo];
		if (restore)
			(void)blockdev_write(r->inner, u->old, u->len, u->off);
		free(u->old);
	}
}

static int record_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	r->counts.reads++;
	r->counts.bytes_read += len;
	ordfs_mutex_unlock(&r->lock);
	return blockdev_read(r->inner, buf, len, off);
}

static int record_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct record_dev *r = to_rec(bd);
	int err = 0;

	ordfs_mutex_lock(&r->lock);
	r->counts.writes++;
	r->counts.bytes_written += len;
	err = fault_check(r, &r->fault_write);
	if (!err && r->drop_unflushed)
		err = undo_save(r, len, off);
	if (err) {
		ordfs_mutex_unlock(&r->lock);
		return err;
	}
	/* Write under the lock so the log order is the device order. */
	err = blockdev_write(r->inner, buf, len, off);
	if (!err && (r->log_writes || r->stream_fd >= 0))
		err = log_event(r, BD_EV_WRITE, buf, len, off);
	ordfs_mutex_unlock(&r->lock);
	return err;
}

static int record_flush(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	int err;

	ordfs_mutex_lock(&r->lock);
	r->counts.flushes++;
	if (r->latch_armed) {
		r->latch_blocked++;
		pthread_cond_broadcast(&r->cond);
		while (r->latch_armed)
			ordfs_cond_wait(&r->cond, &r->lock);
		r->latch_blocked--;
	}
	err = fault_check(r, &r->fault_flush);
	if (err) {
		undo_finish(r, true); /* the disk lost its cache */
		ordfs_mutex_unlock(&r->lock);
		return err;
	}
	ordfs_mutex_unlock(&r->lock);

	if (r->latch_path) {
		/* A latch another process controls: poll, holding no lock. */
		while (access(r->latch_path, F_OK) == 0)
			usleep(5000);
	}
	err = blockdev_flush(r->inner);
	ordfs_mutex_lock(&r->lock);
	undo_finish(r, err != 0);
	if (!err && (r->log_writes || r->stream_fd >= 0))
		err = log_event(r, BD_EV_FLUSH, NULL, 0, 0);
	ordfs_mutex_unlock(&r->lock);
	return err;
}

int blockdev_record_mark(struct blockdev *bd, const char *label)
{
	struct record_dev *r = to_rec(bd);
	int err = 0;
	ordfs_mutex_lock(&r->lock);
	if (r->log_writes || r->stream_fd >= 0)
		err = log_event(r, BD_EV_MARK, label, strlen(label), 0);
	ordfs_mutex_unlock(&r->lock);
	return err;
}

void blockdev_record_clear_events(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nevents; i++)
		free(r->events[i].data);
	r->nevents = 0;
	ordfs_mutex_unlock(&r->lock);
}

static void record_destroy(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	blockdev_record_clear_events(bd);
	undo_finish(r, false);
	free(r->undo);
	free(r->events);
	free(r->latch_path);
	if (r->stream_fd >= 0)
		close(r->stream_fd);
	pthread_cond_destroy(&r->cond);
	ordfs_mutex_destroy(&r->lock);
	free(r);
}

/* Passed on, counted with the writes (not logged: a discard in a crash
 * state may or may not have happened, and both leave freed blocks). */
static int record_discard(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	r->counts.discards++;
	ordfs_mutex_unlock(&r->lock);
	return blockdev_discard(r->inner, off, len);
}

static int record_write_fua(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct record_dev *r = to_rec(bd);
	int err = record_write(bd, buf, len, off);
	if (err)
		return err;
	ordfs_mutex_lock(&r->lock);
	r->counts.fua_writes++;
	ordfs_mutex_unlock(&r->lock);
	return blockdev_flush(r->inner);
}

/* Passed on, not counted or logged: they change no byte (next_data and
 * next_hole read, allocate gives host space). */
static uint64_t record_next_data(struct blockdev *bd, uint64_t off)
{
	return blockdev_next_data(to_rec(bd)->inner, off);
}

static uint64_t record_next_hole(struct blockdev *bd, uint64_t off)
{
	return blockdev_next_hole(to_rec(bd)->inner, off);
}

static int record_allocate(struct blockdev *bd, uint64_t off, uint64_t len)
{
	return blockdev_allocate(to_rec(bd)->inner, off, len);
}

static int record_host(struct blockdev *bd, struct blockdev_host *out, bool fresh)
{
	return blockdev_host(to_rec(bd)->inner, out, fresh);
}

static void record_host_refused(struct blockdev *bd)
{
	blockdev_host_refused(to_rec(bd)->inner);
}

static int record_refresh_size(struct blockdev *bd, uint64_t *size)
{
	struct blockdev *inner = to_rec(bd)->inner;
	int err = blockdev_refresh_size(inner, size);
	if (!err)
		*size = blockdev_grow_size(bd, blockdev_size(inner));
	return err;
}

static const struct blockdev_ops record_ops = {
	.read = record_read,
	.write = record_write,
	.flush = record_flush,
	.destroy = record_destroy,
	.discard = record_discard,
	.write_fua = record_write_fua,
	.next_data = record_next_data,
	.next_hole = record_next_hole,
	.allocate = record_allocate,
	.host = record_host,
	.host_refused = record_host_refused,
	.refresh_size = record_refresh_size,
};

void blockdev_record_set_fua(struct blockdev *bd, bool on)
{
	bd->fua = on;
}

int blockdev_record_create(struct blockdev *inner, bool log_writes, struct blockdev **out)
{
	struct record_dev *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->bd.ops = &record_ops;
	r->bd.size = blockdev_size(inner);
	r->bd.sparse = inner->sparse;
	r->inner = inner;
	r->log_writes = log_writes;
	r->stream_fd = -1;
	ordfs_mutex_init(&r->lock, LOCK_BLOCKDEV, "recording device lock");
	pthread_cond_init(&r->cond, NULL);
	*out = &r->bd;
	return 0;
}

void blockdev_record_counts(struct blockdev *bd, struct blockdev_counts *out)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	*out = r->counts;
	ordfs_mutex_unlock(&r->lock);
}

void blockdev_record_reset_counts(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	memset(&r->counts, 0, sizeof(r->counts));
	ordfs_mutex_unlock(&r->lock);
}

const struct blockdev_event *blockdev_record_events(struct blockdev *bd, size_t *count)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	*count = r->nevents;
	const struct blockdev_event *ev = r->events;
	ordfs_mutex_unlock(&r->lock);
	return ev;
}

void blockdev_record_latch_arm(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	r->latch_armed = true;
	ordfs_mutex_unlock(&r->lock);
}

void blockdev_record_latch_release(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	r->latch_armed = false;
	pthread_cond_broadcast(&r->cond);
	ordfs_mutex_unlock(&r->lock);
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
	ordfs_mutex_lock(&r->lock);
	while (r->latch_blocked < n && err == 0)
		err = ordfs_cond_timedwait(&r->cond, &r->lock, &deadline);
	if (r->latch_blocked >= n)
		err = 0;
	ordfs_mutex_unlock(&r->lock);
	return err ? -ETIMEDOUT : 0;
}

void blockdev_record_fault(struct blockdev *bd, enum blockdev_event_type op,
			   const struct blockdev_fault *f)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	if (op == BD_EV_WRITE)
		r->fault_write = *f;
	else
		r->fault_flush = *f;
	ordfs_mutex_unlock(&r->lock);
}

void blockdev_record_fail_write(struct blockdev *bd, uint64_t nth, int err)
{
	struct blockdev_fault f = { .nth = nth, .err = err };
	blockdev_record_fault(bd, BD_EV_WRITE, &f);
}

void blockdev_record_fail_flush(struct blockdev *bd, uint64_t nth, int err)
{
	struct blockdev_fault f = { .nth = nth, .err = err };
	blockdev_record_fault(bd, BD_EV_FLUSH, &f);
}

void blockdev_record_heal(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	r->broken = 0;
	memset(&r->fault_write, 0, sizeof(r->fault_write));
	memset(&r->fault_flush, 0, sizeof(r->fault_flush));
	ordfs_mutex_unlock(&r->lock);
}

uint64_t blockdev_record_faults_fired(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	uint64_t n = r->faults_fired;
	ordfs_mutex_unlock(&r->lock);
	return n;
}

void blockdev_record_power_cut(struct blockdev *bd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	undo_finish(r, true);
	ordfs_mutex_unlock(&r->lock);
}

void blockdev_record_drop_unflushed(struct blockdev *bd, bool on)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	if (!on)
		undo_finish(r, false);
	r->drop_unflushed = on;
	ordfs_mutex_unlock(&r->lock);
}

int blockdev_record_latch_file(struct blockdev *bd, const char *path)
{
	struct record_dev *r = to_rec(bd);
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	ordfs_mutex_lock(&r->lock);
	free(r->latch_path);
	r->latch_path = copy;
	ordfs_mutex_unlock(&r->lock);
	return 0;
}

int blockdev_record_stream(struct blockdev *bd, int fd)
{
	struct record_dev *r = to_rec(bd);
	ordfs_mutex_lock(&r->lock);
	if (r->stream_fd >= 0)
		close(r->stream_fd);
	r->stream_fd = fd;
	ordfs_mutex_unlock(&r->lock);
	return 0;
}
