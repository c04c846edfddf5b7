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
 *  - A size refresh refreshes inner, then extends the map (the added pages
 *    unbacked: a file extended on the host is a hole) before the device
 *    takes inner's size, so every page below the size is in the map.
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
	uint64_t size = blockdev_size(bd);
	return off <= size && len <= size - off;
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
	uint64_t at = p * PAGE, size = blockdev_size(&s->bd);
	if (at < off)
		at = off;
	return at < size ? at : size;
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
	out->image_size = blockdev_size(bd);
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

/* The map grows to cover inner's new size (new pages zeroed: unbacked),
 * then the size follows.  -ENOMEM leaves the device as it was (inner has
 * grown: a refresh again finishes). */
static int sim_refresh_size(struct blockdev *bd, uint64_t *size)
{
	struct hostsim *s = to_sim(bd);
	int err = blockdev_refresh_size(s->inner, size);
	if (err)
		return err;
	uint64_t want = blockdev_size(s->inner);
	uint64_t pages = (want + PAGE - 1) / PAGE;
	ordfs_mutex_lock(&s->lock);
	for (int i = 0; i < 2 && pages > s->pages && !err; i++) {
		uint8_t **map = i == 0 ? &s->backed : &s->written;
		uint8_t *grown = realloc(*map, pages);
		if (!grown) {
			err = -ENOMEM;
			break;
		}
		memset(grown + s->pages, 0, pages - s->pages);
		*map = grown;
	}
	if (!err && pages > s->pages)
		s->pages = pages;
	ordfs_mutex_unlock(&s->lock);
	if (!err)
		*size = blockdev_grow_size(bd, want);
	return err;
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
	.refresh_size = sim_refresh_size,
};

int blockdev_hostsim_create(struct blockdev *inner, uint64_t capacity, struct blockdev **out)
{
	struct hostsim *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->inner = inner;
	s->bd.ops = &sim_ops;
	uint64_t size = blockdev_size(inner);
	s->bd.size = size;
	s->bd.sparse = true;
	s->capacity = capacity;
	s->pages = (size + PAGE - 1) / PAGE;
	s->backed = calloc(s->pages ? s->pages : 1, 1);
	s->written = calloc(s->pages ? s->pages : 1, 1);
	uint8_t *page = malloc(PAGE);
	int err = s->backed && s->written && page ? 0 : -ENOMEM;
	/* What holds data now is backed. */
	for (uint64_t p = 0; !err && p < s->pages; p++) {
		uint64_t len = size - p * PAGE < PAGE ? size - p * PAGE : PAGE;
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
