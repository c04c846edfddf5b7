/*
 * harness.h - the crash-state harness's parts and how they meet.
 *
 *   states.c    from a log of writes, flushes and marks, the images a power
 *               cut could leave (prefixes, reorderings between flushes, torn
 *               writes, crashes during recovery), each handed to an oracle;
 *   workload.c  the library side: an image behind the recording device, the
 *               operations of the workloads and the marks they leave;
 *   oracle.c    what must hold on a crash image of a library workload;
 *   workloads.c the handwritten workloads and the ACE-style generator;
 *   crash.c     the tiers (bounded, --long), workers and the summary;
 *   report.c    counters and violation lines (every tool);
 *   logfile.c   reads a log the daemon streamed (ORDFS_TEST_RECORD);
 *   sqlite.c    crash_sqlite: the states of a logged SQLite run on the
 *               real daemon, judged by SQLite itself.
 *
 * Marks (text, in the log between the writes):
 *   D path fhash dhash size   fsync of path returned (fhash: content, size,
 *                             mode, links and xattr; dhash: content)
 *   d path fhash dhash size   fdatasync of path returned (dhash binds)
 *   E path                    the name is durable (fsyncdir of its parent)
 *   A path                    the absence of the name is durable
 *   T path                    path's inode changed (D and d no longer bind)
 *   N path                    the name changed (E and A no longer bind)
 *   R from to dhash size      rename of a regular file with these bytes
 *   W ino off len fill        write of pattern fill + 7 * i at off (data
 *                             the file may show, data=ordered check)
 *   V ino k                   version k of inode ino may be on the image
 *                             from here on (its bytes: crash_run.versions)
 *   S ino k                   version k of ino is durable: no older one
 *                             of that inode may show any more
 *   G old new                 an online grow from old to new blocks begins:
 *                             the block count may be either from here on
 *   g new                     the grow returned 0: the block count is new
 *                             for good (it committed before returning)
 */
#ifndef ORDFS_CRASH_HARNESS_H
#define ORDFS_CRASH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs.h"
#include "inode/inode.h"
#include "blockdev/blockdev.h"

#define CRASH_IMG (8u << 20) /* the filesystem and the device, unless a workload asks */
#define CRASH_BS 4096u
#define CRASH_SECTOR 512u
#define CRASH_STALE 0xee /* every byte of a free data block in a base image */

/* ---- results (report.c) --------------------------------------------------- */

extern uint64_t crash_states_checked, crash_violations;
extern bool crash_verbose;
void crash_violation(const char *workload, const char *state, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t crash_fnv(const void *p, size_t n, uint64_t h);

/* ---- logfile.c ------------------------------------------------------------ */

/* Reads a stream (blockdev_record_stream) into events (each with its own
 * NUL-terminated data) and a file into memory.  0 or a negative errno. */
int crash_read_stream(const char *path, struct blockdev_event **ev, size_t *n);
void crash_free_stream(struct blockdev_event *ev, size_t n);
int crash_read_file(const char *path, uint8_t **data, size_t *size);

/* ---- states.c ------------------------------------------------------------- */

/* Judges one crash-state image (borrowed: the enumerator reuses it).  limit
 * is the event index of the crash point: marks before it bind. */
typedef void (*crash_oracle_fn)(void *ctx, struct blockdev *img, size_t limit,
				const char *state);

struct crash_log {
	const struct blockdev_event *ev;
	size_t n;
	const uint8_t *base; /* the image before the first event */
	size_t size;         /* of the image */
};

struct crash_enum_params {
	uint64_t max_states;    /* states judged at most (default 5000) */
	uint64_t seed;          /* for sampled subsets */
	unsigned recovery_every; /* every Nth prefix also crashes its recovery; 0 never */
};

/* Enumerates and judges the states of log.  Returns the states judged. */
uint64_t crash_enumerate(const struct crash_log *log, const struct crash_enum_params *p,
			 crash_oracle_fn oracle, void *ctx);

/* ---- workload.c ----------------------------------------------------------- */

/* What a regular file held after one operation: the contents the oracle
 * holds a crash image to (a file is a version from its last durable one
 * on, byte by byte; see oracle.c). */
struct crash_version {
	uint32_t ino;
	uint64_t size;
	uint8_t *data;
};

struct crash_run {
	struct blockdev *mem, *rec;
	uint64_t size;              /* of the device (the image), bytes */
	const char *label;          /* the workload's, for its own violations */
	struct crash_version *versions; /* indexed by the k of "V ino k" */
	size_t nversions;
	struct ordfs *fs;
	uint8_t *base;              /* the image when logging began */
	struct ordfs_options opts;
	const char *const *universe; /* paths the generator uses (NULL-ended) */
	unsigned next_fill;
};

typedef void (*crash_setup_fn)(struct crash_run *r);

/* mkfs of fs_bytes at the start of a device of dev_bytes (larger for a
 * workload that grows the filesystem: the space past it holds stale bytes
 * too); setup (if any) on a plain mount, unmounted cleanly; then the image
 * is the base and the filesystem is mounted again behind the recorder,
 * with a mark for every setup file's bytes first. */
int crash_run_start(struct crash_run *r, enum journal_data_mode mode, uint32_t journal_blocks,
		    uint64_t fs_bytes, uint64_t dev_bytes, crash_setup_fn setup,
		    const char *const *universe);
void crash_run_end(struct crash_run *r);

struct inode *crash_walk(struct ordfs *fs, const char *path);
/* fhash covers content, size, mode, links and the user.k xattr (symlinks:
 * the target; directories: mode and links); dhash the content alone. */
bool crash_node_hash(struct ordfs *fs, const char *path, uint64_t *fhash, uint64_t *dhash,
		     uint64_t *size);

/* Operations: each leaves the marks of what it changes, then does it. */
void op_write(struct crash_run *r, const char *path, uint64_t off, size_t len);
void op_truncate(struct crash_run *r, const char *path, uint64_t size);
void op_fallocate(struct crash_run *r, const char *path, int mode, uint64_t off, uint64_t len);
void op_create(struct crash_run *r, const char *path);
void op_mkdir(struct crash_run *r, const char *path);
void op_link(struct crash_run *r, const char *from, const char *to);
void op_unlink(struct crash_run *r, const char *path);
void op_rename(struct crash_run *r, const char *from, const char *to);
void op_symlink(struct crash_run *r, const char *path, const char *target);
void op_setxattr(struct crash_run *r, const char *path, const char *value);
void op_removexattr(struct crash_run *r, const char *path);
/* An online grow to new_blocks (the device is that large already):
 * "G old new" before, "g new" once it returned 0.  0 or its error. */
int op_grow(struct crash_run *r, uint64_t new_blocks);
/* Durability: fsync or fdatasync of path (a file or directory), fsync of
 * path's parent directory, ordfs_sync (ordfsctl sync). */
void op_fsync(struct crash_run *r, const char *path, bool datasync);
void op_fsyncdir_parent(struct crash_run *r, const char *path);
void op_sync(struct crash_run *r);
/* A background writeback pass as the daemon's writeback thread makes
 * them (not waited for): the lowest max_pages dirty pages of every file
 * (an early pass), or UINT64_MAX: the periodic pass, every page in
 * slices; they go to the image, nothing becomes durable by promise. */
void op_background_writeback(struct crash_run *r, uint64_t max_pages);
/* The periodic commit as the daemon's threads make it: a background
 * writeback pass (max_pages as above), then a commit of the running
 * transaction.  Nothing is promised durable by it. */
void op_periodic_commit(struct crash_run *r, uint64_t max_pages);
/* Blocks in [lo, hi) marked in use in the block bitmap. */
uint64_t crash_blocks_in_use(struct ordfs *fs, uint64_t lo, uint64_t hi);

/* ---- oracle.c ------------------------------------------------------------- */

struct crash_oracle_ctx {
	const char *workload;
	const struct crash_run *run;
	const struct crash_log *log;
};
void crash_oracle(void *ctx, struct blockdev *img, size_t limit, const char *state);

/* ---- workloads.c ---------------------------------------------------------- */

/* Runs workload number `index` of a tier and enumerates its states. */
struct crash_tier {
	unsigned fixed;       /* handwritten workloads x modes x journals */
	unsigned one_op;      /* every 1-operation workload (ordered) */
	unsigned two_op;      /* 2-operation workloads: sampled, or all */
	bool two_op_all;
	unsigned two_op_other; /* sampled, in writeback and journal modes */
	unsigned three_op;    /* sampled 3-operation workloads */
	unsigned long_runs;   /* fsx-style runs of long_ops operations */
	unsigned long_ops;
	unsigned tail_one;    /* 1-operation tail workloads (at most 400: all) */
	unsigned tail_two;    /* 2-operation tail workloads: sampled, or all */
	bool tail_two_all;    /* the first 6400 are every pair on file t */
	unsigned logfile;     /* log-file workloads (modes in turn) */
	unsigned fixed_late;  /* handwritten workloads added since, x modes x
				 journals, last (the others keep their indexes) */
	uint64_t seed;
};
unsigned crash_tier_count(const struct crash_tier *t);
void crash_tier_run(const struct crash_tier *t, unsigned index);
extern uint64_t crash_workloads_run;

#endif
