/*
 * sqlite.c - crash_sqlite: the power-cut states of a SQLite run on the
 * real daemon, judged by SQLite itself.
 *
 * Usage: crash_sqlite LOG BASE [--db NAME] [--max-states N] [--seed N]
 *   LOG   what the daemon streamed with ORDFS_TEST_RECORD=LOG
 *   BASE  a copy of the image taken before that mount
 * The client (tests/mounted/test_mnt_sqlite.c) marks "B n" before it
 * begins transaction n and "C n" after COMMIT of n returned (n = 0: the
 * schema).  Each state of the log (states.c) is recovered by a library
 * mount; the database and its rollback journal or WAL are copied out to a
 * host directory, where SQLite opens them (rolling a hot journal back or
 * replaying the WAL, as after a real crash) and must find:
 * `PRAGMA integrity_check` ok; transactions 1..k all there, for some k
 * between the last C and the last B before the crash point; each one
 * whole (the counter row equals the row count).  The checker must find
 * the image clean after the recovery.
 * Summary: "crash_sqlite: S states checked, V violations".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "ops.h"
#include "check/check.h"

struct sqlite_ctx {
	const struct crash_log *log;
	const char *db;     /* name in the image's root */
	char dir[64];       /* host directory for the copies */
	struct ordfs_options opts;
};

/* Copies root/name out of the mounted image to dir/name; 1 copied, 0 absent. */
static int copy_out(struct ordfs *fs, const char *name, const char *dir)
{
	char host[256];
	snprintf(host, sizeof(host), "%s/%s", dir, name);
	unlink(host);
	struct inode *f;
	if (ordfs_lookup_path(fs, name, &f) != 0)
		return 0;
	int fd = open(host, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = fd < 0 ? -errno : 0;
	uint8_t buf[CRASH_BS];
	for (uint64_t off = 0; !err;) {
		ssize_t n = ordfs_read(fs, f, buf, sizeof(buf), off);
		if (n < 0)
			err = (int)n;
		if (n <= 0)
			break;
		if (write(fd, buf, (size_t)n) != n)
			err = -EIO;
		off += (uint64_t)n;
	}
	if (fd >= 0)
		close(fd);
	inode_put(fs, f);
	return err ? err : 1;
}

static long query_long(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = (long)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* The last "B n" and "C n" before limit (-1: none). */
static void client_marks(const struct crash_log *log, size_t limit, long *begun, long *committed)
{
	*begun = *committed = -1;
	for (size_t i = 0; i < limit && i < log->n; i++) {
		const struct blockdev_event *e = &log->ev[i];
		long v;
		if (e->type != BD_EV_MARK || sscanf((const char *)e->data + 1, " %ld", &v) != 1)
			continue;
		if (e->data[0] == 'B')
			*begun = v;
		else if (e->data[0] == 'C')
			*committed = v;
	}
}

static void judge_database(struct sqlite_ctx *c, size_t limit, const char *state)
{
	long begun, committed;
	client_marks(c->log, limit, &begun, &committed);
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", c->dir, c->db);
	if (access(path, F_OK) != 0) {
		if (committed >= 0)
			crash_violation("sqlite", state, "database missing after COMMIT %ld returned",
					committed);
		return;
	}
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK) {
		crash_violation("sqlite", state, "sqlite3_open: %s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return;
	}
	sqlite3_stmt *st;
	const char *ok = NULL;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		ok = (const char *)sqlite3_column_text(st, 0);
	if (!ok || strcmp(ok, "ok") != 0)
		crash_violation("sqlite", state, "integrity_check: %s", ok ? ok : sqlite3_errmsg(db));
	sqlite3_finalize(st);
	long tables = query_long(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('t', 'c')");
	if (tables != 2) {
		if (committed >= 0)
			crash_violation("sqlite", state, "schema missing after its COMMIT returned");
		sqlite3_close(db);
		return;
	}
	long rows = query_long(db, "SELECT count(*) FROM t");
	long max = query_long(db, "SELECT coalesce(max(id), 0) FROM t");
	long counter = query_long(db, "SELECT n FROM c WHERE k = 1");
	if (rows != max)
		crash_violation("sqlite", state, "%ld rows but max id %ld (a hole)", rows, max);
	else if (counter != rows)
		crash_violation("sqlite", state, "counter %ld, rows %ld (half a transaction)", counter,
				rows);
	else if (max < committed)
		crash_violation("sqlite", state, "COMMIT of %ld returned, only %ld there", committed,
				max);
	else if (max > begun && max > 0)
		crash_violation("sqlite", state, "transaction %ld there, never begun before the crash",
				max);
	sqlite3_close(db);
}

static void quiet(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	if (crash_verbose)
		fprintf(stderr, "  checker: [%d] %s\n", (int)code, msg);
}

static void sqlite_oracle(void *ctx, struct blockdev *img, size_t limit, const char *state)
{
	struct sqlite_ctx *c = ctx;
	crash_states_checked++;
	struct ordfs *fs;
	const char *why = "";
	if (ordfs_mount(img, &c->opts, &fs, &why) != 0) {
		crash_violation("sqlite", state, "mount (recovery) failed: %s", why);
		return;
	}
	static const char *const suffix[] = { "", "-journal", "-wal" };
	int err = 0;
	for (unsigned i = 0; i < 3 && err >= 0; i++) {
		char name[128];
		snprintf(name, sizeof(name), "%s%s", c->db, suffix[i]);
		err = copy_out(fs, name, c->dir);
	}
	char shm[256];
	snprintf(shm, sizeof(shm), "%s/%s-shm", c->dir, c->db);
	unlink(shm); /* the shared-memory index is rebuilt from the WAL */
	if (ordfs_unmount(fs) != 0)
		crash_violation("sqlite", state, "unmount after recovery failed");
	if (err < 0)
		crash_violation("sqlite", state, "cannot read the database out: %s", strerror(-err));
	else
		judge_database(c, limit, state);
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = quiet;
	if (ordfs_check(img, &res) != 0 || res.problems)
		crash_violation("sqlite", state, "checker: %u problems", res.problems);
}

int main(int argc, char **argv)
{
	struct sqlite_ctx c = { .db = "test.db" };
	struct crash_enum_params ep = { .max_states = 5000, .seed = 1, .recovery_every = 4 };
	const char *log_path = NULL, *base_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
			c.db = argv[++i];
		else if (strcmp(argv[i], "--max-states") == 0 && i + 1 < argc)
			ep.max_states = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			ep.seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-v") == 0)
			crash_verbose = true;
		else if (!log_path)
			log_path = argv[i];
		else if (!base_path)
			base_path = argv[i];
		else
			base_path = NULL, i = argc;
	}
	if (!log_path || !base_path) {
		fprintf(stderr, "usage: crash_sqlite LOG BASE [--db NAME] [--max-states N] [--seed N]\n");
		return 2;
	}
	struct blockdev_event *ev;
	size_t n;
	uint8_t *base;
	size_t size;
	int err = crash_read_stream(log_path, &ev, &n);
	if (err) {
		fprintf(stderr, "crash_sqlite: %s: %s\n", log_path, strerror(-err));
		return 2;
	}
	err = crash_read_file(base_path, &base, &size);
	if (err) {
		fprintf(stderr, "crash_sqlite: %s: %s\n", base_path, strerror(-err));
		return 2;
	}
	snprintf(c.dir, sizeof(c.dir), "%s/crash-sqlite.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(c.dir)) {
		perror("crash_sqlite: mkdtemp");
		return 2;
	}
	ordfs_options_default(&c.opts);
	c.opts.commit_interval_ms = 0;
	struct crash_log log = { .ev = ev, .n = n, .base = base, .size = size };
	c.log = &log;
	size_t writes = 0, marks = 0;
	for (size_t i = 0; i < n; i++) {
		writes += ev[i].type == BD_EV_WRITE;
		marks += ev[i].type == BD_EV_MARK;
	}
	crash_enumerate(&log, &ep, sqlite_oracle, &c);
	char path[256];
	static const char *const suffix[] = { "", "-journal", "-wal", "-shm" };
	for (unsigned i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s%s", c.dir, c.db, suffix[i]);
		unlink(path);
	}
	rmdir(c.dir);
	printf("crash_sqlite: %zu writes, %zu client marks, %" PRIu64 " states checked, %" PRIu64
	       " violations\n", writes, marks, crash_states_checked, crash_violations);
	crash_free_stream(ev, n);
	free(base);
	return crash_violations ? 1 : 0;
}
