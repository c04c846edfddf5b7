/*
 * hostfs.c - the host filesystem under a sparse image (hostfs.h says the
 * rules): ENOSPC episodes, "full", the mount point for the log line.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "hostfs.h"
#include "blockdev.h"
#include "base/log.h"
#include "base/mountinfo.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void hostfs_init(struct hostfs *h, const char *image,
		 int (*space)(void *ctx, struct hostfs_space *out), void *ctx)
{
	memset(h, 0, sizeof(*h));
	h->image = image;
	h->space = space;
	h->ctx = ctx;
}

uint64_t hostfs_full_threshold(uint64_t host_size)
{
	uint64_t t = host_size / 20;
	return t < HOSTFS_FULL_MAX_BYTES ? t : HOSTFS_FULL_MAX_BYTES;
}

static void refresh(struct hostfs *h, uint64_t now, bool fresh)
{
	uint64_t at = __atomic_load_n(&h->refreshed_ns, __ATOMIC_ACQUIRE);
	if (!fresh && at && now - at < HOSTFS_REFRESH_MS * 1000000ull)
		return;
	struct hostfs_space sp;
	if (h->space(h->ctx, &sp) != 0)
		return; /* keep what we had: "full" then rests on ENOSPC alone */
	__atomic_store_n(&h->size, sp.size, __ATOMIC_RELAXED);
	__atomic_store_n(&h->free, sp.free, __ATOMIC_RELAXED);
	__atomic_store_n(&h->refreshed_ns, now ? now : 1, __ATOMIC_RELEASE);
}

static bool enospc_recent(const struct hostfs *h, uint64_t now)
{
	uint64_t last = __atomic_load_n(&h->last_enospc_ns, __ATOMIC_RELAXED);
	return last && now - last < HOSTFS_ENOSPC_MEMORY_S * 1000000000ull;
}

static void log_episode(struct hostfs *h)
{
	char mnt[PATH_MAX], type[64];
	hostfs_mount_point(h->image, mnt, sizeof(mnt), type, sizeof(type));
	ordfs_log(LOG_ERR, "the host filesystem holding the image is full: no space left on %s "
		  "(%s) for %s; operations that need new space in the image get ENOSPC, and "
		  "blocks freed in ordfs are given back to the host until it has room again",
		  mnt, type, h->image);
}

int hostfs_note(struct hostfs *h, int err)
{
	if (err != -ENOSPC)
		return err;
	uint64_t now = now_ns();
	__atomic_store_n(&h->last_enospc_ns, now ? now : 1, __ATOMIC_RELAXED);
	bool was = false;
	if (__atomic_compare_exchange_n(&h->episode, &was, true, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		log_episode(h);
	return err;
}

void hostfs_state(struct hostfs *h, bool fresh, struct blockdev_host *out)
{
	uint64_t now = now_ns();
	refresh(h, now, fresh);
	bool have = __atomic_load_n(&h->refreshed_ns, __ATOMIC_ACQUIRE) != 0;
	out->host_size = __atomic_load_n(&h->size, __ATOMIC_RELAXED);
	out->host_free = __atomic_load_n(&h->free, __ATOMIC_RELAXED);
	out->enospc_recent = enospc_recent(h, now);
	out->full = out->enospc_recent ||
		    (have && out->host_free < hostfs_full_threshold(out->host_size));
	bool was = true;
	if (!out->full && __atomic_compare_exchange_n(&h->episode, &was, false, false,
						      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		ordfs_log(LOG_NOTICE, "the host filesystem holding %s has room again "
			  "(%llu MiB free)", h->image,
			  (unsigned long long)(out->host_free >> 20));
}

/* Is mount point m path itself or a directory above it? */
static bool above(const char *m, const char *path)
{
	size_t n = strlen(m);
	if (strcmp(m, "/") == 0)
		return path[0] == '/';
	return strncmp(m, path, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

struct mount_point_ctx {
	const char *path;
	char want_dev[32];
	char *mnt, *type;
	size_t mnt_len, type_len;
	size_t best;   /* the longest mount point above path so far */
	bool best_dev; /* ... on path's device */
	bool found;
};

/* The longest mount point above path, on its device if one is (a btrfs
 * subvolume's st_dev is not its mount's). */
static bool mount_point_one(const struct mountinfo_entry *e, void *ctx)
{
	struct mount_point_ctx *c = ctx;
	if (!above(e->mountpoint, c->path))
		return true;
	bool same_dev = strcmp(e->dev, c->want_dev) == 0;
	size_t len = strlen(e->mountpoint);
	/* Later lines are mounts on top: >= keeps the newest. */
	if ((same_dev && !c->best_dev) || (same_dev == c->best_dev && len >= c->best)) {
		c->best = len;
		c->best_dev = same_dev;
		snprintf(c->mnt, c->mnt_len, "%s", e->mountpoint);
		snprintf(c->type, c->type_len, "%s", e->type);
		c->found = true;
	}
	return true;
}

int hostfs_mount_point(const char *path, char *mnt, size_t mnt_len, char *type,
		       size_t type_len)
{
	snprintf(mnt, mnt_len, "?");
	snprintf(type, type_len, "?");
	struct stat st;
	if (stat(path, &st) != 0)
		return -errno;
	struct mount_point_ctx c = { .path = path, .mnt = mnt, .mnt_len = mnt_len, .type = type,
				     .type_len = type_len };
	snprintf(c.want_dev, sizeof(c.want_dev), "%u:%u", major(st.st_dev), minor(st.st_dev));
	int err = mountinfo_each(mount_point_one, &c);
	return err ? err : c.found ? 0 : -ENOENT;
}
