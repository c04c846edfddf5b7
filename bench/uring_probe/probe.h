/*
 * probe.h - fuse_transport_probe: a trivial in-memory filesystem served
 * over /dev/fuse (read/writev), over FUSE-over-io_uring, or through
 * libfuse, with a load driver and a self-test (issue 29, "Measure first").
 * See bench/uring_probe/README.md.
 */
#ifndef PROBE_H
#define PROBE_H

#include "fuse_uring_abi.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum transport {
	T_DEV,		/* read()/writev() on /dev/fuse */
	T_URING,	/* FUSE_OVER_IO_URING: rings, /dev/fuse for the rest */
	T_LIBFUSE,	/* libfuse 3.14's multi-threaded loop */
};

const char *transport_name(enum transport t);

struct probe_opts {
	enum transport transport;
	int dev_threads;	/* /dev/fuse reader threads (T_DEV) */
	int queues;		/* ring queues to register (0: one per possible CPU) */
	int depth;		/* entries per queue */
	size_t payload;		/* payload buffer per entry (0: what the kernel needs) */
	bool require_uring;	/* exit if the kernel does not offer io_uring */
	bool pin;		/* pin queue thread q to CPU q */
	int taskrun;		/* 0: default, 1: COOP_TASKRUN, 2: SINGLE_ISSUER|DEFER_TASKRUN */
	bool quiet;
};

/* Per server thread counters, in memory shared with the driver process. */
#define STAT_SLOTS 16
#define STAT_OPS 64
struct stat_slot {
	uint64_t ring;		/* requests answered from a ring */
	uint64_t dev;		/* requests read from /dev/fuse (INIT and FORGETs included) */
	uint64_t op[STAT_OPS];	/* by opcode (52 = STATX and above in op[63]) */
} __attribute__((aligned(64)));

/* Server state shared with the driver (MAP_SHARED before fork). */
enum { ST_STARTING = 0, ST_READY = 1, ST_FAILED = 2 };
struct shared_stats {
	struct stat_slot slot[STAT_SLOTS];
	int state;			/* ST_* */
	int uring_active;		/* requests go to the rings */
	int uring_offered;		/* the kernel offered FUSE_OVER_IO_URING */
	int uring_register_errno;	/* first failed REGISTER (positive errno) */
	int stalled;			/* READs held by a "stall" file */
	int queues, depth;		/* what was registered */
	uint32_t proto_minor;		/* the kernel's minor in INIT */
	char note[160];			/* one line: what the server did */
};

static inline void stat_add(struct shared_stats *st, int slot, bool ring, uint32_t opcode)
{
	if (!st)
		return;
	struct stat_slot *s = &st->slot[slot % STAT_SLOTS];
	uint32_t o = opcode < STAT_OPS ? opcode : STAT_OPS - 1;
	/* one writer per slot: a load and a store, no locked instruction */
	uint64_t *c = ring ? &s->ring : &s->dev;
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->op[o], __atomic_load_n(&s->op[o], __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

struct stat_sum {
	uint64_t ring, dev, op[STAT_OPS];
};
void stats_sum(const struct shared_stats *st, struct stat_sum *sum);

/* ---- the filesystem (probefs.c) ---- */

struct probefs;
struct probefs *probefs_new(struct shared_stats *st);
void probefs_free(struct probefs *fs);

/* Size of an opcode's first argument (what io_uring puts in op_in); the
 * rest of a /dev/fuse request after it is the payload. */
size_t probefs_op_in_size(uint32_t opcode);

#define PROBE_NOREPLY INT_MIN	/* probefs_handle: the opcode has no reply */

/*
 * Answers one request.  op_in is the opcode's first argument
 * (probefs_op_in_size bytes, or less if the request is short), payload
 * the rest; the reply's arguments go to out (out_cap bytes), which may be
 * the payload's own buffer: every input is read before out is written.
 * Returns the reply's length (>= 0), a negative errno for an error reply,
 * or PROBE_NOREPLY.
 */
int probefs_handle(struct probefs *fs, const struct fuse_in_header *ih,
		   const void *op_in, size_t op_in_len,
		   const void *payload, size_t payload_len,
		   void *out, size_t out_cap);

/* For libfuse's lowlevel callbacks (transport_libfuse.c): the same
 * operations, by name. */
int probefs_lookup(struct probefs *fs, uint64_t parent, const char *name,
		   struct fuse_entry_out *eo);
int probefs_getattr(struct probefs *fs, uint64_t ino, struct fuse_attr_out *ao);
int probefs_setattr(struct probefs *fs, uint64_t ino, const struct fuse_setattr_in *in,
		    struct fuse_attr_out *ao);
int probefs_create(struct probefs *fs, uint64_t parent, const char *name, uint32_t mode,
		   struct fuse_entry_out *eo);
int probefs_open(struct probefs *fs, uint64_t ino, uint32_t flags);
int probefs_release(struct probefs *fs, uint64_t ino);
int probefs_unlink(struct probefs *fs, uint64_t parent, const char *name);
ssize_t probefs_read(struct probefs *fs, uint64_t ino, uint64_t off, uint32_t size, void *buf);
ssize_t probefs_write(struct probefs *fs, uint64_t ino, uint64_t off, uint32_t size,
		      const void *buf);
void probefs_forget(struct probefs *fs, uint64_t ino, uint64_t nlookup);
/* READDIR into buf as fuse_dirent records; returns bytes. */
ssize_t probefs_readdir(struct probefs *fs, uint64_t ino, uint64_t off, uint32_t size, void *buf);
void probefs_statfs(struct fuse_statfs_out *so);

/* ---- the server (server.c, transport_uring.c, transport_libfuse.c) ---- */

/*
 * Mounts the filesystem on mnt and serves it until it is unmounted (or
 * SIGINT/SIGTERM, which unmount it lazily).  Blocks SIGINT, SIGTERM and
 * SIGUSR1 in the calling thread.  st may be NULL.  Returns the process's
 * exit status: 0 clean, 1 error, 3 io_uring required but not offered.
 */
int server_run(const struct probe_opts *o, const char *mnt, struct shared_stats *st);
int server_run_libfuse(const struct probe_opts *o, const char *mnt, struct shared_stats *st);

/* The io_uring side of server_run (transport_uring.c).  uring_prepare
 * (before INIT's reply) makes one thread per queue with its ring and
 * buffers, or returns NULL; uring_go (after the reply) lets them register
 * their entries (go = false: they clean up and end); uring_join waits for
 * them (they end when the kernel completes every entry with an error at
 * unmount) and frees everything. */
struct server;
struct uring_pool;
#include "possible_cpus.h" /* src/daemon/transport/: the kernel's queue count */
struct uring_pool *uring_prepare(struct server *s);
void uring_go(struct uring_pool *p, bool go);
void uring_join(struct uring_pool *p);

/* What transport_uring.c needs of the server. */
struct server {
	const struct probe_opts *o;
	const char *mnt;
	int fd;			/* /dev/fuse */
	struct probefs *fs;
	struct shared_stats *st;
	uint32_t max_write;
	size_t max_payload;	/* the kernel's ring payload size */
	pthread_t main_thread;
	int running;		/* worker threads still serving */
	int exit_status;
	struct uring_pool *pool;
};
void server_thread_done(struct server *s);
/* Prints to stderr unless quiet: "fuse_transport_probe[server]: ..." */
void slog(const struct server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the kernel switch (kswitch.c) ---- */

#define ENABLE_URING_PATH "/sys/module/fuse/parameters/enable_uring"
/* Reads the switch: 1 on, 0 off, -1 missing. */
int kswitch_get(void);
/* Turns it to on (1) or off (0), remembering the first value seen so that
 * kswitch_restore puts it back; kswitch_restore is async-signal-safe and
 * registered with atexit on first use. */
int kswitch_set(int on);
void kswitch_restore(void);
/* In a forked child: leave the switch to the parent. */
void kswitch_forget(void);

#endif
