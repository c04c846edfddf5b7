/*
 * hostfs.h - the host filesystem under a sparse image file: is it full,
 * the one log line per episode of ENOSPC, and where it is mounted.
 *
 * Owns: struct hostfs, which the sparse devices embed (file.c for image
 * files, hostsim.c for the tests' simulated host) and answer
 * blockdev_host() from.
 *
 * Rules:
 *  - "The host is full" means: an ENOSPC from it (a write, a flush or an
 *    allocate of the image) in the last HOSTFS_ENOSPC_MEMORY_S seconds, or
 *    less free space (f_bavail) than hostfs_full_threshold(): a twentieth
 *    of the host filesystem, at most HOSTFS_FULL_MAX_BYTES.  While it is
 *    full, blocks freed in ordfs are punched out of the image
 *    (alloc/discard.c), so deleting files gives the host its space back.
 *  - An episode begins with an ENOSPC while none is under way: one LOG_ERR
 *    line naming the image, the host filesystem's mount point and type.
 *    It ends when someone asks (hostfs_state) and the host is no longer
 *    full: one LOG_NOTICE line.  So a run of failing writes logs once.
 *  - statfs at most once per HOSTFS_REFRESH_MS unless asked for fresh
 *    numbers; hostfs_state without fresh makes no system call otherwise.
 *  - No locks, atomics only (two threads may refresh at once: harmless),
 *    so it may be called under any lock of the stack above it.
 */
#ifndef ORDFS_BLOCKDEV_HOSTFS_H
#define ORDFS_BLOCKDEV_HOSTFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct blockdev_host;

#define HOSTFS_ENOSPC_MEMORY_S 60u
#define HOSTFS_REFRESH_MS 1000u
#define HOSTFS_FULL_MAX_BYTES (1ull << 30)

struct hostfs_space {
	uint64_t size, free; /* bytes */
};

struct hostfs {
	const char *image; /* absolute path (the device's own string) */
	/* The host's size and free space now (statfs): 0 or -errno. */
	int (*space)(void *ctx, struct hostfs_space *out);
	void *ctx;
	/* all atomic */
	uint64_t last_enospc_ns; /* monotonic; 0: never */
	uint64_t refreshed_ns;   /* when size/free were read; 0: never */
	uint64_t size, free;
	bool episode;            /* the ENOSPC line was logged, no "room again" yet */
};

void hostfs_init(struct hostfs *h, const char *image,
		 int (*space)(void *ctx, struct hostfs_space *out), void *ctx);

/* err, from a write, flush or allocate of the image, passed through;
 * -ENOSPC is remembered and, if no episode is under way, begins one. */
int hostfs_note(struct hostfs *h, int err);

/* Fills host_size, host_free, full and enospc_recent of out (statfs again
 * if fresh or the numbers are older than HOSTFS_REFRESH_MS); ends an
 * episode when the host is no longer full. */
void hostfs_state(struct hostfs *h, bool fresh, struct blockdev_host *out);

/* Free space below which a host of host_size bytes counts as full. */
uint64_t hostfs_full_threshold(uint64_t host_size);

/* The mount point and filesystem type of the filesystem holding path
 * (/proc/self/mountinfo: the longest mount point above path on its
 * device): 0, or -errno with "?" in both. */
int hostfs_mount_point(const char *path, char *mnt, size_t mnt_len, char *type,
		       size_t type_len);

#endif
