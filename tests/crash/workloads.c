/*
 * workloads.c - the workloads of the crash harness and the tiers that
 * pick them.
 *
 * Handwritten workloads cover known hard cases (replace via rename before
 * writeback, truncate with fallocate, unlink of a durable file).  The
 * generator is ACE-style: a small file set (directories A, B, A/C; files
 * A/f with an xattr and B/h, made durable before logging starts) and an
 * operation space of 18 kinds x 2 target files x 5 persistence choices
 * (none, fsync, fdatasync, fsync of the parent directory, ordfs_sync as
 * `ordfsctl sync` does) = 180 operations, so the 1-operation and
 * 2-operation sequences can be run exhaustively (180 and 32,400
 * workloads), 3-operation sequences are sampled, and long fsx-style runs
 * draw hundreds of operations with varied offsets.
 *
 * Every workload runs in one data mode (ordered, writeback or journal:
 * the handwritten ones and long runs in all three, the samples mostly in
 * ordered) with the default or the smallest
 * (64-block) journal, so wrap-around, checkpoints and revokes are crossed
 * by crashes.  A workload's label names its tier index: `crash --index N`
 * with the same tier options runs that one again.  Handwritten workloads
 * added later (an online grow) run last, so that the indexes, and with
 * them the seeds of the sampled workloads, stay what they were.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fs.h"
#include "alloc/alloc.h"

uint64_t crash_workloads_run;

#define GEN_KINDS 18u
#define GEN_PERSIST 5u
#define GEN_OPS (GEN_KINDS * 2u * GEN_PERSIST) /* 180 */

/* ---- handwritten -------------------------------------------------------------- */

static const char *const fixed_universe[] = {
	"A", "B", "A/f", "A/C", "A/C/x", "A/y", "old", "other", "new.tmp", "t", NULL,
};

static void w_fsync_files(struct crash_run *r)
{
	op_mkdir(r, "A");
	op_write(r, "A/f", 0, 5000);
	op_fsync(r, "A/f", false);
	op_write(r, "B", 0, 100); /* a file named B at the root */
	op_fsync(r, "B", true);
	op_write(r, "A/f", 3000, 9000);
	op_fsync(r, "A/f", false);
}

static void w_rename_replace(struct crash_run *r)
{
	op_write(r, "old", 0, 6000);
	op_write(r, "other", 0, 100);
	op_fsync(r, "old", false);
	op_write(r, "new.tmp", 0, 7000);
	op_rename(r, "new.tmp", "old"); /* replace via rename, no fsync */
	/* Another file's fsync commits the rename before any writeback of
	 * new.tmp's data would: without auto_da_alloc, "old" is empty here. */
	op_write(r, "other", 0, 200);
	op_fsync(r, "other", false);
	op_sync(r);
	op_fsync(r, "old", false);
}

static void w_truncate_fallocate(struct crash_run *r)
{
	op_write(r, "t", 0, 40000);
	op_fsync(r, "t", false);
	op_truncate(r, "t", 5000);
	op_fsync(r, "t", false);
	op_fallocate(r, "t", 0x01 /* KEEP_SIZE */, 0, 80000);
	op_fallocate(r, "t", 0x02 | 0x01 /* PUNCH_HOLE */, 4096, 4096);
	op_fsync(r, "t", false);
	op_write(r, "t", 70000, 3000);
	op_fsync(r, "t", true);
}

/* Collapse and insert range: over delayed pages (written back inside the
 * operation), over preallocated blocks past EOF, with and without fsync
 * between them.  Each is one handle: the file shows its old or its new
 * shape. */
static void w_collapse_insert(struct crash_run *r)
{
	op_write(r, "t", 0, 90000);
	op_fsync(r, "t", false);
	op_fallocate(r, "t", 0x08 /* COLLAPSE_RANGE */, 8192, 16384);
	op_write(r, "t", 3000, 5000);
	op_fallocate(r, "t", 0x20 /* INSERT_RANGE */, 4096, 12288);
	op_fsync(r, "t", false);
	op_fallocate(r, "t", 0x01 /* KEEP_SIZE */, 0, 120000);
	op_fallocate(r, "t", 0x08, 40960, 8192);
	op_fallocate(r, "t", 0x20, 0, 4096);
	op_fsync(r, "t", true);
}

static void w_unlink_mkdir(struct crash_run *r)
{
	op_mkdir(r, "A");
	op_mkdir(r, "A/C");
	op_write(r, "A/C/x", 0, 12000);
	op_fsync(r, "A/C/x", false);
	op_unlink(r, "A/C/x");
	op_write(r, "A/y", 0, 3000);
	op_fsync(r, "A/y", false);
	op_rename(r, "A/y", "B");
	op_sync(r);
}

static const struct {
	const char *name;
	void (*fn)(struct crash_run *r);
} fixed[] = {
	{ "fsync-files", w_fsync_files },
	{ "rename-replace", w_rename_replace },
	{ "truncate-fallocate", w_truncate_fallocate },
	{ "unlink-mkdir", w_unlink_mkdir },
	{ "collapse-insert", w_collapse_insert },
};
#define NFIXED (sizeof(fixed) / sizeof(fixed[0]))

/* ---- the generator ------------------------------------------------------------ */

static const char *const gen_universe[] = {
	"A", "B", "A/C", "A/f", "B/h", "A/n", "B/m", "A/l", "B/l",
	"A/r", "B/r", "A/s", "B/s", "A/C/D", "B/D", NULL,
};

static void gen_setup(struct crash_run *r)
{
	op_mkdir(r, "A");
	op_mkdir(r, "B");
	op_mkdir(r, "A/C");
	op_write(r, "A/f", 0, 6000);
	op_write(r, "B/h", 0, 9000);
	op_setxattr(r, "A/f", "v0");
}

static uint64_t size_of(struct crash_run *r, const char *path)
{
	struct inode *f = crash_walk(r->fs, path);
	uint64_t size = f ? f->size : 0;
	if (f)
		inode_put(r->fs, f);
	return size;
}

/* Operation `op` (0 .. GEN_OPS-1) with variation v (0: the canonical
 * offsets and lengths, used by the exhaustive tiers). */
static void gen_apply(struct crash_run *r, unsigned op, uint64_t v)
{
	unsigned kind = op / (2 * GEN_PERSIST), target = op / GEN_PERSIST % 2;
	unsigned persist = op % GEN_PERSIST;
	const char *f = target ? "B/h" : "A/f", *other = target ? "A/f" : "B/h";
	const char *fresh = target ? "B/m" : "A/n", *link = target ? "A/l" : "B/l";
	const char *moved = target ? "A/r" : "B/r", *sym = target ? "B/s" : "A/s";
	const char *dir = target ? "B/D" : "A/C/D";
	uint64_t a = v % 4096, b = (v >> 12) % 8192;
	const char *t = f; /* what the persistence choice applies to */
	if (crash_verbose) {
		size_t n;
		blockdev_record_events(r->rec, &n);
		fprintf(stderr, "  op %u (kind %u, %s, persist %u, v %" PRIu64 ") at event %zu\n", op,
			kind, f, persist, v, n);
	}
	char value[16];
	switch (kind) {
	case 0: op_create(r, fresh); t = fresh; break;
	case 1: op_mkdir(r, dir); t = dir; break;
	case 2: op_write(r, f, size_of(r, f), 5000 + a); break;             /* append */
	case 3: op_write(r, f, 1000 + a, 3000 + b); break;                  /* overlap */
	case 4: op_write(r, f, 20000 + a, 100); break;                      /* extend */
	case 5: op_truncate(r, f, 1500 + a); break;
	case 6: op_truncate(r, f, 30000 + b); break;
	case 7: op_fallocate(r, f, 0, 0, 24000 + b); break;
	case 8: op_fallocate(r, f, 0x01 /* KEEP_SIZE */, 8192, 16384 + a); break;
	case 9: op_fallocate(r, f, 0x03 /* PUNCH_HOLE */, 1000 + a, 5000); break;
	case 10: op_fallocate(r, f, 0x10 /* ZERO_RANGE */, 2000 + a, 6000); break;
	case 11: op_link(r, f, link); t = link; break;
	case 12: op_unlink(r, f); break;
	case 13: op_rename(r, f, other); t = other; break;                  /* over a file */
	case 14: op_rename(r, f, moved); t = moved; break;                  /* across dirs */
	case 15: op_symlink(r, sym, target ? "../A/f" : "f"); t = sym; break;
	case 16:
		snprintf(value, sizeof(value), "v%" PRIu64, 1 + v % 1000);
		op_setxattr(r, f, value);
		break;
	default: op_removexattr(r, f); break;
	}
	switch (persist) {
	case 1: op_fsync(r, t, false); break;
	case 2: op_fsync(r, t, true); break;
	case 3: op_fsyncdir_parent(r, t); break;
	case 4: op_sync(r); break;
	default: break;
	}
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* ---- the tail workloads ---------------------------------------------------------- */

/* What happens at a file's end: appends into a partly filled last block,
 * writes across and past EOF, truncates to mid-block, zero-range and
 * punch-hole on partial blocks, preallocation past EOF.  Three files end
 * inside a block (6000, 29435 and 70000 bytes); each operation is tried
 * with each way its bytes reach the image: none (the crash comes first),
 * fsync, fdatasync, the periodic pass and commit, or an early pass of one
 * page and a commit. */
static const char *const tail_universe[] = { "A", "B", "A/f", "B/h", "t", NULL };
static const char *const tail_targets[] = { "A/f", "B/h", "t" };
#define TAIL_KINDS 16u
#define TAIL_PERSIST 5u
#define TAIL_OPS (TAIL_KINDS * TAIL_PERSIST) /* 80 per target */
#define TAIL_TARGETS 3u

static void tail_setup(struct crash_run *r)
{
	op_mkdir(r, "A");
	op_mkdir(r, "B");
	op_write(r, "A/f", 0, 6000);
	op_write(r, "B/h", 0, 29435);
	op_write(r, "t", 0, 70000);
}

static uint64_t below(uint64_t s, uint64_t by)
{
	return s > by ? s - by : 0;
}

/* Tail operation `op` (0 .. TAIL_OPS-1) on file f. */
static void tail_apply(struct crash_run *r, const char *f, unsigned op)
{
	unsigned kind = op / TAIL_PERSIST, persist = op % TAIL_PERSIST;
	uint64_t s = size_of(r, f);
	if (crash_verbose) {
		size_t n;
		blockdev_record_events(r->rec, &n);
		fprintf(stderr, "  tail op %u (kind %u, %s of %" PRIu64 " bytes, persist %u) at event %zu\n",
			op, kind, f, s, persist, n);
	}
	switch (kind) {
	case 0: op_write(r, f, s, 1); break;                          /* appends */
	case 1: op_write(r, f, s, 100); break;
	case 2: op_write(r, f, s, 1000); break;
	case 3: op_write(r, f, s, 5000); break;                       /* into new blocks */
	case 4: op_write(r, f, below(s, 500), 1500); break;           /* across EOF */
	case 5: op_write(r, f, s + 200, 100); break;                  /* a gap after EOF */
	case 6: op_write(r, f, s + 6000, 300); break;                 /* a later block */
	case 7: op_truncate(r, f, s / 2 + 333); break;                /* down, mid-block */
	case 8: op_truncate(r, f, s + 5000); break;                   /* up past EOF */
	case 9: op_fallocate(r, f, 0x10, below(s, 700), 2000); break; /* ZERO_RANGE, grows */
	case 10: op_fallocate(r, f, 0x10 | 0x01, below(s, 1500), 600); break; /* KEEP_SIZE */
	case 11: op_fallocate(r, f, 0x02 | 0x01, below(s, 1300), 500); break; /* PUNCH_HOLE */
	case 12: op_fallocate(r, f, 0, below(s, 100), 9000); break;   /* grows, preallocated */
	case 13:                                                      /* into preallocation */
		op_fallocate(r, f, 0x01, s, 8192);
		op_write(r, f, s, 2000);
		break;
	case 14:                                                      /* down, then append */
		op_truncate(r, f, below(s, 1000));
		op_write(r, f, below(s, 1000), 3000);
		break;
	default:                                                      /* append, then down */
		op_write(r, f, s, 100);
		op_truncate(r, f, below(s, 40));
		break;
	}
	switch (persist) {
	case 1: op_fsync(r, f, false); break;
	case 2: op_fsync(r, f, true); break;
	case 3: op_periodic_commit(r, UINT64_MAX); break;
	case 4: op_periodic_commit(r, 1); break;
	default: break;
	}
}

/* A log file: small appends, each made durable, now and then a periodic
 * pass in between (what a logger or a database's journal does). */
static void w_logfile(struct crash_run *r)
{
	for (unsigned i = 0; i < 12; i++) {
		op_write(r, "t", size_of(r, "t"), 100 + 37 * (i % 3));
		if (i % 4 == 3)
			op_periodic_commit(r, UINT64_MAX);
		else
			op_fsync(r, "t", i % 2);
	}
}

/* ---- handwritten, added later (at the tier's end) ---------------------------- */

/* grow-online: a 2 MiB filesystem on a 4 MiB device grows while mounted,
 * with files fsync'd before it, a file dirty across it, and more written
 * after it than the old size had left free (the setup fills most of the
 * old filesystem with a preallocated file, which costs the log nothing
 * and the oracle little: it reads as zeros).  Cut anywhere, the oracle
 * holds the block count to the old or the new size (the new one once the
 * grow returned), the backup superblock to that size, the checker to
 * clean, and writes a file into the new space of a grown image. */
#define GROW_OLD_BYTES (2u << 20)
#define GROW_NEW_BYTES (4u << 20)
#define GROW_LEFT_FREE 40u /* blocks for data the setup leaves at the old size */

static const char *const grow_universe[] = {
	"A", "A/f", "A/y", "t", "fill", "big", "A/big", NULL,
};

static void grow_setup(struct crash_run *r)
{
	struct alloc_counts c;
	op_mkdir(r, "A");
	op_create(r, "fill");
	alloc_get_counts(r->fs->alloc, &c);
	if (c.data_blocks > GROW_LEFT_FREE)
		op_fallocate(r, "fill", 0, 0, (c.data_blocks - GROW_LEFT_FREE) * CRASH_BS);
}

static void w_grow_online(struct crash_run *r)
{
	uint64_t old_blocks = fs_block_count(r->fs), new_blocks = GROW_NEW_BYTES / CRASH_BS;
	op_write(r, "A/f", 0, 20000);
	op_fsync(r, "A/f", false);
	op_write(r, "t", 0, 30000);
	op_fsync(r, "t", true);
	op_write(r, "A/y", 0, 9000); /* dirty across the grow */
	struct alloc_counts c;
	alloc_get_counts(r->fs->alloc, &c); /* free at the old size, the metadata reserve too */
	if (op_grow(r, new_blocks) != 0) {
		crash_violation(r->label, "workload", "the grow to %" PRIu64 " blocks failed",
				new_blocks);
		return;
	}
	/* More than the old size had left: part of it must go past it. */
	op_write(r, "big", 0, (c.free_blocks + 16) * CRASH_BS + 1000);
	op_fsync(r, "big", false);
	if (crash_blocks_in_use(r->fs, old_blocks, new_blocks - 1) == 0)
		crash_violation(r->label, "workload", "nothing was allocated past the old "
				"size (%" PRIu64 " blocks)", old_blocks);
	op_write(r, "A/f", 20000, 5000);
	op_fsync(r, "A/f", true);
	op_rename(r, "big", "A/big");
	op_unlink(r, "t");
	op_fsync(r, "A/y", false);
	op_sync(r);
}

static const struct {
	const char *name;
	void (*fn)(struct crash_run *r);
} fixed_late[] = {
	{ "grow-online", w_grow_online },
};
#define NFIXED_LATE (sizeof(fixed_late) / sizeof(fixed_late[0]))

/* ---- running one ---------------------------------------------------------------- */

struct plan {
	char label[128];
	enum journal_data_mode mode;
	uint32_t journal;
	void (*fixed)(struct crash_run *r);
	unsigned ops[3], nops;  /* generated: the operations */
	unsigned long_ops;      /* or a long run of this many */
	bool tail;              /* ops are tail operations on tail_target */
	const char *tail_target;
	uint64_t seed;
};

static void run_plan(const struct plan *pl)
{
	struct crash_run r;
	char label[192];
	static const char *const mode_names[] = { "ordered", "writeback", "journal" };
	snprintf(label, sizeof(label), "%s data=%s journal %u", pl->label, mode_names[pl->mode],
		 pl->journal);
	bool gen = !pl->fixed && !pl->tail;
	bool tail = pl->tail || pl->fixed == w_logfile;
	bool grow = pl->fixed == w_grow_online;
	crash_setup_fn setup = tail ? tail_setup : gen ? gen_setup : grow ? grow_setup : NULL;
	const char *const *universe = tail ? tail_universe : gen ? gen_universe
				      : grow ? grow_universe : fixed_universe;
	uint64_t fs_bytes = grow ? GROW_OLD_BYTES : CRASH_IMG;
	uint64_t dev_bytes = grow ? GROW_NEW_BYTES : CRASH_IMG;
	if (crash_run_start(&r, pl->mode, pl->journal, fs_bytes, dev_bytes, setup, universe) != 0) {
		crash_violation(label, "setup", "could not make and mount the image");
		crash_run_end(&r);
		return;
	}
	r.label = label;
	if (pl->fixed) {
		pl->fixed(&r);
	} else if (pl->tail) {
		for (unsigned i = 0; i < pl->nops; i++)
			tail_apply(&r, pl->tail_target, pl->ops[i]);
	} else if (pl->long_ops) {
		uint64_t rng = pl->seed;
		for (unsigned i = 0; i < pl->long_ops; i++) {
			rng = mix(rng);
			unsigned op = (unsigned)(rng % GEN_OPS);
			/* mostly without a persistence point, as real programs */
			if ((rng >> 20) % 3 != 0)
				op -= op % GEN_PERSIST;
			gen_apply(&r, op, rng >> 32);
			/* now and then the writeback thread's pass: all, or
			 * an early one's slices of a few pages */
			if ((rng >> 24) % 8 == 0)
				op_background_writeback(&r, (rng >> 28) % 2 ? UINT64_MAX
									    : 1 + (rng >> 29) % 3);
		}
	} else {
		for (unsigned i = 0; i < pl->nops; i++)
			gen_apply(&r, pl->ops[i], pl->nops > 2 ? mix(pl->seed + i) >> 40 : 0);
	}
	size_t n;
	struct crash_log log = { .base = r.base, .size = r.size };
	log.ev = blockdev_record_events(r.rec, &n);
	log.n = n;
	if (getenv("CRASH_DUMP_EVENTS")) {
		size_t lo = 0, hi = 0;
		sscanf(getenv("CRASH_DUMP_EVENTS"), "%zu-%zu", &lo, &hi);
		for (size_t i = lo; i <= hi && i < log.n; i++) {
			const struct blockdev_event *e = &log.ev[i];
			fprintf(stderr, "  event %zu: %s off %" PRIu64 " (block %" PRIu64 ") len %zu %s\n", i,
				e->type == BD_EV_WRITE ? "write" : e->type == BD_EV_FLUSH ? "flush" : "mark",
				e->off, e->off / CRASH_BS, e->len,
				e->type == BD_EV_MARK ? (const char *)e->data : "");
		}
	}
	struct crash_oracle_ctx oc = { .workload = label, .run = &r, .log = &log };
	struct crash_enum_params ep = { .max_states = 5000, .seed = pl->seed,
					.recovery_every = 4 };
	crash_enumerate(&log, &ep, crash_oracle, &oc);
	crash_workloads_run++;
	crash_run_end(&r);
}

/* ---- tiers ---------------------------------------------------------------------- */

unsigned crash_tier_count(const struct crash_tier *t)
{
	return t->fixed + t->one_op + t->two_op + t->two_op_other + t->three_op +
	       t->long_runs + t->tail_one + t->tail_two + t->logfile + t->fixed_late;
}

/* The tail workloads of a tier, after the others (so the indexes of the
 * others stay what they were); then the log-file runs and the later
 * handwritten workloads. */
static void tail_tier_run(const struct crash_tier *t, struct plan *pl, unsigned index,
			  unsigned i)
{
	static const char *const mode_names[] = { "ordered", "writeback", "journal" };
	pl->tail = true;
	if (i < t->tail_one) {
		/* every operation on every target in data=ordered, then every
		 * operation on t in data=writeback and data=journal */
		unsigned per_mode = TAIL_OPS * TAIL_TARGETS;
		if (i < per_mode) {
			pl->tail_target = tail_targets[i / TAIL_OPS];
		} else {
			pl->tail_target = "t";
			pl->mode = (i - per_mode) / TAIL_OPS % 2 ? JOURNAL_DATA_JOURNAL
								 : JOURNAL_DATA_WRITEBACK;
		}
		pl->ops[0] = i % TAIL_OPS;
		pl->nops = 1;
		snprintf(pl->label, sizeof(pl->label), "#%u tail %u %s", index, pl->ops[0],
			 pl->tail_target);
		run_plan(pl);
		return;
	}
	i -= t->tail_one;
	if (i < t->tail_two) {
		if (t->tail_two_all && i < TAIL_OPS * TAIL_OPS) {
			pl->tail_target = "t";
			pl->ops[0] = i / TAIL_OPS;
			pl->ops[1] = i % TAIL_OPS;
		} else {
			pl->tail_target = tail_targets[pl->seed % TAIL_TARGETS];
			pl->ops[0] = (unsigned)(pl->seed / TAIL_TARGETS % TAIL_OPS);
			pl->ops[1] = (unsigned)(pl->seed / TAIL_TARGETS / TAIL_OPS % TAIL_OPS);
			if (i % 4 >= 2)
				pl->mode = i % 4 == 2 ? JOURNAL_DATA_WRITEBACK : JOURNAL_DATA_JOURNAL;
		}
		pl->nops = 2;
		snprintf(pl->label, sizeof(pl->label), "#%u tail %u+%u %s", index, pl->ops[0],
			 pl->ops[1], pl->tail_target);
		run_plan(pl);
		return;
	}
	i -= t->tail_two;
	pl->tail = false;
	if (i >= t->logfile) {
		/* the later handwritten ones: as the first, each mode, each journal */
		i -= t->logfile;
		pl->fixed = fixed_late[i % NFIXED_LATE].fn;
		pl->mode = i / NFIXED_LATE % 3 == 0 ? JOURNAL_DATA_ORDERED
			   : i / NFIXED_LATE % 3 == 1 ? JOURNAL_DATA_WRITEBACK : JOURNAL_DATA_JOURNAL;
		pl->journal = i / NFIXED_LATE / 3 % 2 ? 64 : 0;
		snprintf(pl->label, sizeof(pl->label), "#%u %s", index, fixed_late[i % NFIXED_LATE].name);
		run_plan(pl);
		return;
	}
	pl->fixed = w_logfile;
	pl->mode = i % 3 == 0 ? JOURNAL_DATA_ORDERED
		   : i % 3 == 1 ? JOURNAL_DATA_WRITEBACK : JOURNAL_DATA_JOURNAL;
	snprintf(pl->label, sizeof(pl->label), "#%u logfile %s", index, mode_names[pl->mode]);
	run_plan(pl);
}

void crash_tier_run(const struct crash_tier *t, unsigned index)
{
	struct plan pl;
	memset(&pl, 0, sizeof(pl));
	unsigned i = index;
	pl.seed = mix(t->seed * 1000003u + index);
	pl.journal = index % 2 ? 64 : 0;
	pl.mode = JOURNAL_DATA_ORDERED;
	static const enum journal_data_mode modes[] = {
		JOURNAL_DATA_ORDERED, JOURNAL_DATA_WRITEBACK, JOURNAL_DATA_JOURNAL,
	};
	if (i < t->fixed) {
		pl.fixed = fixed[i % NFIXED].fn;
		pl.mode = modes[i / NFIXED % 3];
		pl.journal = i / NFIXED / 3 % 2 ? 64 : 0;
		snprintf(pl.label, sizeof(pl.label), "#%u %s", index, fixed[i % NFIXED].name);
		run_plan(&pl);
		return;
	}
	i -= t->fixed;
	if (i < t->one_op) {
		pl.ops[0] = i % GEN_OPS;
		pl.nops = 1;
		snprintf(pl.label, sizeof(pl.label), "#%u 1op %u", index, pl.ops[0]);
		run_plan(&pl);
		return;
	}
	i -= t->one_op;
	if (i < t->two_op + t->two_op_other) {
		bool other = i >= t->two_op;
		if (t->two_op_all && !other) {
			pl.ops[0] = i / GEN_OPS % GEN_OPS;
			pl.ops[1] = i % GEN_OPS;
		} else {
			pl.ops[0] = (unsigned)(pl.seed % GEN_OPS);
			pl.ops[1] = (unsigned)(pl.seed / GEN_OPS % GEN_OPS);
		}
		pl.nops = 2;
		if (other)
			pl.mode = i % 2 ? JOURNAL_DATA_WRITEBACK : JOURNAL_DATA_JOURNAL;
		snprintf(pl.label, sizeof(pl.label), "#%u 2op %u+%u", index, pl.ops[0], pl.ops[1]);
		run_plan(&pl);
		return;
	}
	i -= t->two_op + t->two_op_other;
	if (i < t->three_op) {
		for (unsigned k = 0; k < 3; k++)
			pl.ops[k] = (unsigned)(mix(pl.seed + k) % GEN_OPS);
		pl.nops = 3;
		if (i % 4 >= 2)
			pl.mode = modes[i % 4 - 1];
		snprintf(pl.label, sizeof(pl.label), "#%u 3op %u+%u+%u", index, pl.ops[0],
			 pl.ops[1], pl.ops[2]);
		run_plan(&pl);
		return;
	}
	i -= t->three_op;
	if (i >= t->long_runs) {
		tail_tier_run(t, &pl, index, i - t->long_runs);
		return;
	}
	pl.long_ops = t->long_ops;
	pl.mode = modes[i % 3];
	pl.journal = i / 3 % 2 ? 64 : 0;
	snprintf(pl.label, sizeof(pl.label), "#%u long %u ops", index, t->long_ops);
	run_plan(&pl);
}
