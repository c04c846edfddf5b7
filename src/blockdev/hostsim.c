/*
 * hostsim.c - a simulated host filesystem under an image (tests): the
 * image is what inner holds; the host backs it in 4 KiB pages and has
 * room for `capacity` bytes of them (blockdev.h says what each call does).
 *
 * Owns: the page map (backed: holds host space; written: holds data, so
 * next_data sees it) and the capacity.  Rules:
 *  - A write backs the pages it touches, or fails with -ENOSPC without
 *    writing when they do not fit: a tmpfs (or a host that reserves at
 *    write time) under a full disk.  The refusal is noted in a struct
 *    hostfs, so the device's host() and its log line are the real ones.
 *  - discard and write_zeroes punch: whole pages lose data and space;
 *    allocate backs pages without data (they read as holes to next_data,
 *    as fallocated ranges do on tmpfs and ext4).
 *  - The lock covers the map only and is never held over a call to inner.
 *    It is an ordfs_mutex of LOCK_BLOCKDEV, so the device goes above any
 *    wrapper that holds its own lock over calls down (record.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blockdev.h"
#include "hostfs.h"
#include "../lock/lock.h"

#define PAGE 4096u

struct hostsim {
	struct blockdev bd;
	struct blockdev *inner;
	struct ordfs_mutex lock;
	uint64_t pages;
	uint8_t *backed, *written; /* a byte per page: simple, tests only */
	uint64_t capacity, used;   /* bytes */
	struct blockdev_hostsim_counts counts;
	struct hostfs host;
};

static struct hostsim *to_sim(struct blockdev *bd)
{
	return (struct hostsim *)bd;
}

static int sim_read(struct blockdev *bd, void *buf, size_t len, uint64_t off)
{
	return blockdev_read(to_sim(bd)->inner, buf, len, off);
}

/* Backs pages [first, end) (and marks them written with data): -ENOSPC
 * and nothing changed if they do not fit.  Lock held. */
static int back_pages(struct hostsim *s, uint64_t first, uint64_t end, bool data)
{
	uint64_t need = 0;
	for (uint64_t p = first; p < end; p++)
		need += !s->backed[p];
	if (s->used + need * PAGE > s->capacity) {
		s->counts.enospc++;
		return -ENOSPC;
	}
	for (uint64_t p = first; p < end; p++) {
		s->backed[p] = 1;
		if (data)
			s->written[p] = 1;
	}
	s->used += need * PAGE;
	return 0;
}

static bool in_range(const struct blockdev *bd, uint64_t off, uint64_t len)
{
	return off <= bd->size && len <= bd->size - off;
}

static int sim_write(struct blockdev *bd, const void *buf, size_t len, uint64_t off)
{
	struct hostsim *s = to_sim(bd);
	if (!in_range(bd, off, len))
		return -EIO;
	if (len == 0)
		return blockdev_write(s->inner, buf, len, off);
	ordfs_mutex_lock(&s->lock);
	int err = back_pages(s, off / PAGE, (off + len + PAGE - 1) / PAGE, true);
	s->counts.write_enospc += err != 0;
	ordfs_mutex_unlock(&s->lock);
	if (err)
		return hostfs_note(&s->host, err);
	return blockdev_write(s->inner, buf, len, off);
}

static int sim_flush(struct blockdev *bd)
{
	return blockdev_flush(to_sim(bd)->inner);
}

/* Whole pages inside [off, off + len) lose their data and space. */
static void punch_pages(struct hostsim *s, uint64_t off, uint64_t len)
{
	uint64_t first = (off + PAGE - 1) / PAGE, end = (off + len) / PAGE;
	ordfs_mutex_lock(&s->lock);
	for (uint64_t p = first; p < end; p++) {
		if (s->backed[p]) {
			s->used -= PAGE;
			s->counts.punched_bytes += PAGE;
		}
		s->backed[p] = s->written[p] = 0;
	}
	ordfs_mutex_unlock(&s->lock);
}

static int sim_discard(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct hostsim *s = to_sim(bd);
	if (!in_range(bd, off, len))
		return -EIO;
	/* The bytes read as zeros, as after a punched hole. */
	int err = blockdev_discard(s->inner, off, len);
	if (err == -EOPNOTSUPP)
		err = blockdev_write_zeroes(s->inner, off, len);
	if (!err)
		punch_pages(s, off, len);
	return err;
}

static int sim_allocate(struct blockdev *bd, uint64_t off, uint64_t len)
{
	struct hostsim *s = to_sim(bd);
	if (!in_range(bd, off, len))
		return -EIO;
	ordfs_mutex_lock(&s->lock);
	s->counts.allocate_calls++;
	int err = len ? back_pages(s, off / PAGE, (off + len + PAGE - 1) / PAGE, false) : 0;
	ordfs_mutex_unlock(&s->lock);
	return hostfs_note(&s->host, err);
}

/* The first page from off's whose written flag is `want`, as a byte offset. */
static uint64_t seek(struct hostsim *s, uint64_t off, bool want)
{
	uint64_t p = off / PAGE;
	ordfs_mutex_lock(&s->lock);
	while (p < s->pages && (s->written[p] != 0) != want)
		p++;
	ordfs_mutex_unlock(&s->lock);
	uint64_t at = p * PAGE;
	if (at < off)
		at = off;
	return at < s->bd.size ? at : s->bd.size;
}

static uint64_t sim_next_data(struct blockdev *bd, uint64_t off)
{
	return seek(to_sim(bd), off, true);
}

static uint64_t sim_next_hole(struct blockdev *bd, uint64_t off)
{
	return seek(to_sim(bd), off, false);
}

static int sim_space(void *ctx, struct hostfs_space *out)
{
	struct hostsim *s = ctx;
	ordfs_mutex_lock(&s->lock);
	out->size = s->capacity;
	out->free = s->capacity > s->used ? s->capacity - s->used : 0;
	ordfs_mutex_unlock(&s->lock);
	return 0;
}

static int sim_host(struct blockdev *bd, struct blockdev_host *out, bool fresh)
{
	struct hostsim *s = to_sim(bd);
	memset(out, 0, sizeof(*out));
	out->image = s->host.image;
	out->image_size = bd->size;
	ordfs_mutex_lock(&s->lock);
	out->image_allocated = s->used;
	ordfs_mutex_unlock(&s->lock);
	/* Always fresh: the model costs nothing to ask. */
	(void)fresh;
	hostfs_state(&s->host, true, out);
	return 0;
}

static void sim_host_refused(struct blockdev *bd)
{
	hostfs_note(&to_sim(bd)->host, -ENOSPC);
}

static void sim_destroy(struct blockdev *bd)
{
	struct hostsim *s = to_sim(bd);
	free(s->backed);
	free(s->written);
	ordfs_mutex_destroy(&s->lock);
	free(s);
}

static const struct blockdev_ops sim_ops = {
	.read = sim_read,
	.write = sim_write,
	.flush = sim_flush,
	.destroy = sim_destroy,
	.discard = sim_discard,
	.write_zeroes = sim_discard,
	.next_data = sim_next_data,
	.next_hole = sim_next_hole,
	.allocate = sim_allocate,
	.host = sim_host,
	.host_refused = sim_host_refused,
};

int blockdev_hostsim_create(struct blockdev *inner, uint64_t capacity, struct blockdev **out)
{
	struct hostsim *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->inner = inner;
	s->bd.ops = &sim_ops;
	s->bd.size = inner->size;
	s->bd.sparse = true;
	s->capacity = capacity;
	s->pages = (inner->size + PAGE - 1) / PAGE;
	s->backed = calloc(s->pages ? s->pages : 1, 1);
	s->written = calloc(s->pages ? s->pages : 1, 1);
	uint8_t *page = malloc(PAGE);
	int err = s->backed && s->written && page ? 0 : -ENOMEM;
	/* What holds data now is backed. */
	for (uint64_t p = 0; !err && p < s->pages; p++) {
		uint64_t len = inner->size - p * PAGE < PAGE ? inner->size - p * PAGE : PAGE;
		err = blockdev_read(inner, page, (size_t)len, p * PAGE);
		bool data = false;
		for (uint64_t i = 0; !err && i < len && !data; i++)
			data = page[i] != 0;
		if (data) {
			s->backed[p] = s->written[p] = 1;
			s->used += PAGE;
		}
	}
	free(page);
	if (err) {
		free(s->backed);
		free(s->written);
		free(s);
		return err;
	}
	ordfs_mutex_init(&s->lock, LOCK_BLOCKDEV, "simulated host lock");
	hostfs_init(&s->host, "(simulated host image)", sim_space, s);
	*out = &s->bd;
	return 0;
}

void blockdev_hostsim_set_capacity(struct blockdev *bd, uint64_t capacity)
{
	struct hostsim *s = to_sim(bd);
	ordfs_mutex_lock(&s->lock);
	s->capacity = capacity;
	ordfs_mutex_unlock(&s->lock);
}

void blockdev_hostsim_counts(struct blockdev *bd, struct blockdev_hostsim_counts *out)
{
	struct hostsim *s = to_sim(bd);
	ordfs_mutex_lock(&s->lock);
	*out = s->counts;
	out->backed_bytes = s->used;
	ordfs_mutex_unlock(&s->lock);
}

bool blockdev_hostsim_backed(struct blockdev *bd, uint64_t off)
{
	struct hostsim *s = to_sim(bd);
	ordfs_mutex_lock(&s->lock);
	bool on = off / PAGE < s->pages && s->backed[off / PAGE];
	ordfs_mutex_unlock(&s->lock);
	return on;
}
