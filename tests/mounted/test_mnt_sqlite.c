/*
 * test_mnt_sqlite.c - SQLite as a real client: numbered transactions on
 * the mounted filesystem, the daemon killed with SIGKILL at a random
 * moment, then remounted (journal replay).  Every transaction whose
 * COMMIT returned is there, none is half there (each one inserts a row
 * and bumps a counter: the counter equals the row count), and
 * `PRAGMA integrity_check` says ok.
 *
 * The client is killed, then the daemon, at a random moment (see
 * sqlite_rounds for why in that order).
 *
 * Both of SQLite's durable modes: the rollback journal with
 * synchronous=EXTRA (only then does SQLite fsync the directory after
 * deleting the journal, its commit point) and WAL with synchronous=FULL.
 * ORDFS_SQLITE_ROUNDS (default 3) rounds per mode; ORDFS_KILL_SEED seeds
 * the kill times.
 *
 * The manifest of committed transactions lives outside the mount: the
 * client appends the id after COMMIT returns and fsyncs the manifest.
 *
 * Power-cut states: the daemon runs with ORDFS_TEST_RECORD, which streams
 * every write and flush of the image to a log; the client marks "B n"
 * before each transaction and "C n" after its COMMIT returned
 * (ORDFS_IOC_TEST_MARK), and tests/crash/crash_sqlite rebuilds the images
 * a power cut could leave (prefixes, reorderings between flushes, torn
 * sectors, crashes during recovery) and lets SQLite judge each one.
 * ORDFS_SQLITE_STATES (default 1500) caps the states per journal mode.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

static unsigned rounds(void)
{
	const char *s = getenv("ORDFS_SQLITE_ROUNDS");
	return s && atoi(s) > 0 ? (unsigned)atoi(s) : 3;
}

static int exec_sql(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* The client: runs until an error (the daemon died) or it is killed. */
static void client(const char *db_path, const char *manifest, bool wal)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sqlite3 *db;
	if (sqlite3_open(db_path, &db) != SQLITE_OK)
		_exit(2);
	sqlite3_busy_timeout(db, 1000);
	if (exec_sql(db, wal ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
			     : "PRAGMA journal_mode=DELETE; PRAGMA synchronous=EXTRA;") != SQLITE_OK)
		_exit(3);
	if (exec_sql(db, "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, payload BLOB);"
			 "CREATE TABLE IF NOT EXISTS c(k INTEGER PRIMARY KEY, n INTEGER);"
			 "INSERT OR IGNORE INTO c VALUES (1, 0);") != SQLITE_OK)
		_exit(4);
	int mfd = open(manifest, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (mfd < 0)
		_exit(5);
	sqlite3_stmt *ins;
	if (sqlite3_prepare_v2(db, "INSERT INTO t(id, payload) VALUES (?, randomblob(?))", -1, &ins,
			       NULL) != SQLITE_OK)
		_exit(6);
	/* Go on from where the last round's database ended. */
	long first = 1;
	sqlite3_stmt *mx;
	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) + 1 FROM t", -1, &mx, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(mx) == SQLITE_ROW)
		first = (long)sqlite3_column_int64(mx, 0);
	sqlite3_finalize(mx);
	for (long id = first;; id++) {
		if (exec_sql(db, "BEGIN") != SQLITE_OK)
			_exit(0);
		sqlite3_bind_int64(ins, 1, id);
		sqlite3_bind_int(ins, 2, 100 + (int)(id % 3000));
		int rc = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (rc != SQLITE_DONE || exec_sql(db, "UPDATE c SET n = n + 1 WHERE k = 1") != SQLITE_OK ||
		    exec_sql(db, "COMMIT") != SQLITE_OK)
			_exit(0); /* the filesystem went away */
		char line[32];
		int len = snprintf(line, sizeof(line), "%ld\n", id);
		if (write(mfd, line, (size_t)len) != len || fsync(mfd) != 0)
			_exit(7);
	}
}

/* The last id the manifest holds (0 if none). */
static long last_committed(const char *manifest)
{
	char *text = mnt_slurp(manifest, NULL);
	long last = 0;
	for (char *p = text; p && *p;) {
		last = strtol(p, &p, 10);
		while (*p == '\n')
			p++;
	}
	free(text);
	return last;
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

static void verify(const char *db_path, long committed, const char *mode, unsigned round)
{
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	const char *ok = (const char *)sqlite3_column_text(st, 0);
	ck_assert_msg(ok && strcmp(ok, "ok") == 0, "%s round %u: integrity_check: %s", mode, round,
		      ok ? ok : "(null)");
	sqlite3_finalize(st);
	long rows = query_long(db, "SELECT count(*) FROM t");
	long max = query_long(db, "SELECT coalesce(max(id), 0) FROM t");
	long counter = query_long(db, "SELECT n FROM c WHERE k = 1");
	ck_assert_msg(rows == max, "%s round %u: %ld rows but max id %ld (a hole)", mode, round,
		      rows, max);
	ck_assert_msg(counter == rows, "%s round %u: counter %ld, rows %ld (half a transaction)",
		      mode, round, counter, rows);
	ck_assert_msg(max >= committed, "%s round %u: COMMIT of %ld returned, only %ld there", mode,
		      round, committed, max);
	printf("  %s round %u: %ld transactions committed before the kill, %ld in the database\n",
	       mode, round, committed, max);
	sqlite3_close(db);
}

static void sqlite_rounds(bool wal)
{
	const char *mode = wal ? "WAL" : "rollback journal";
	const char *seed_env = getenv("ORDFS_KILL_SEED");
	unsigned seed = seed_env ? (unsigned)atoi(seed_env) : (unsigned)time(NULL);
	printf("sqlite %s: ORDFS_KILL_SEED=%u\n", mode, seed);
	srand(seed);
	struct mnt m;
	mnt_setup(&m, "256M");
	const char *manifest = mnt_host_path(&m, "manifest");
	char db_path[MNT_FILE_LEN + 16];
	snprintf(db_path, sizeof(db_path), "%s/test.db", m.mountpoint);
	for (unsigned r = 0; r < rounds(); r++) {
		mnt_start(&m, "commit=1");
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			client(db_path, manifest, wal);
		usleep((useconds_t)(300000 + rand() % 900000));
		/* The client dies first, then the daemon: as in a power cut, no
		 * COMMIT can return once the filesystem is gone.  (Killing only
		 * the daemon lets SQLite go on: when it cannot even open the
		 * directory to fsync it after deleting the rollback journal, it
		 * skips that fsync and still returns SQLITE_OK from COMMIT, so a
		 * transaction can be reported committed that the filesystem was
		 * never asked to make durable.) */
		int status;
		kill(pid, SIGKILL);
		ck_assert_int_eq(mnt_wait_pid(pid, 20000, &status), 0);
		mnt_kill9(&m);
		ck_assert_msg(WIFSIGNALED(status),
			      "%s round %u: the client stopped before the kill (exit %d)", mode, r,
			      WEXITSTATUS(status));
		long committed = last_committed(manifest);
		mnt_start(&m, "commit=1"); /* replays */
		verify(db_path, committed, mode, r);
		mnt_stop(&m);
		mnt_check(&m);
	}
	mnt_finish(&m);
}

/* ---- power-cut states of a recorded run -------------------------------------- */

static void test_mark(int dirfd, const char *fmt, long n)
{
	struct ordfs_test_mark tm;
	memset(&tm, 0, sizeof(tm));
	snprintf(tm.text, sizeof(tm.text), fmt, n);
	MNT_OK(ioctl(dirfd, ORDFS_IOC_TEST_MARK, &tm));
}

/* The client of a recorded run, in this process: the schema (C 0), then
 * `count` transactions, each marked before BEGIN and after COMMIT. */
static void recorded_client(const char *mountpoint, bool wal, long count)
{
	char db_path[MNT_FILE_LEN + 16];
	snprintf(db_path, sizeof(db_path), "%s/test.db", mountpoint);
	int dirfd = open(mountpoint, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	ck_assert_int_eq(exec_sql(db, wal ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
					  : "PRAGMA journal_mode=DELETE; PRAGMA synchronous=EXTRA;"),
			 SQLITE_OK);
	test_mark(dirfd, "B %ld", 0);
	ck_assert_int_eq(exec_sql(db, "BEGIN; CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB);"
				      "CREATE TABLE c(k INTEGER PRIMARY KEY, n INTEGER);"
				      "INSERT INTO c VALUES (1, 0); COMMIT;"),
			 SQLITE_OK);
	test_mark(dirfd, "C %ld", 0);
	for (long id = 1; id <= count; id++) {
		char sql[160];
		snprintf(sql, sizeof(sql),
			 "BEGIN; INSERT INTO t VALUES (%ld, randomblob(%ld));"
			 "UPDATE c SET n = n + 1 WHERE k = 1; COMMIT;", id, 200 + id * 397 % 5000);
		test_mark(dirfd, "B %ld", id);
		ck_assert_int_eq(exec_sql(db, sql), SQLITE_OK);
		test_mark(dirfd, "C %ld", id);
	}
	ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
	close(dirfd);
}

static void power_cut_states(bool wal)
{
	const char *bin = getenv("CRASH_SQLITE_BIN");
	ck_assert_msg(bin != NULL, "CRASH_SQLITE_BIN not set (run through meson)");
	const char *cap = getenv("ORDFS_SQLITE_STATES");
	struct mnt m;
	mnt_setup(&m, "16M");
	char base[MNT_FILE_LEN + 8], log[MNT_FILE_LEN + 8], env[MNT_FILE_LEN + 32];
	snprintf(base, sizeof(base), "%s", mnt_host_path(&m, "base.img"));
	snprintf(log, sizeof(log), "%s", mnt_host_path(&m, "record.log"));
	size_t len;
	char *img = mnt_slurp(m.image, &len);
	ck_assert(img);
	int fd = open(base, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	mnt_write_all(fd, img, len);
	MNT_OK(close(fd));
	free(img);
	snprintf(env, sizeof(env), "ORDFS_TEST_RECORD=%s", log);
	mnt_start_env(&m, NULL, env);
	recorded_client(m.mountpoint, wal, 12);
	mnt_stop(&m);
	mnt_check(&m);

	char cmd[4 * MNT_FILE_LEN];
	snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s' --max-states %s 2>&1", bin, log, base,
		 cap && atoi(cap) > 0 ? cap : "1500");
	FILE *out = popen(cmd, "r");
	ck_assert(out);
	char line[512];
	bool summary = false;
	while (fgets(line, sizeof(line), out)) {
		printf("  %s: %s", wal ? "WAL" : "rollback journal", line);
		fflush(stdout);
		summary |= strncmp(line, "crash_sqlite:", 13) == 0;
	}
	int status = pclose(out);
	ck_assert_msg(summary, "crash_sqlite printed no summary");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "crash_sqlite found violations (status %d)", status);
	mnt_finish(&m);
}

START_TEST(test_sqlite_power_cut_states_rollback)
{
	power_cut_states(false);
}
END_TEST

START_TEST(test_sqlite_power_cut_states_wal)
{
	power_cut_states(true);
}
END_TEST

START_TEST(test_sqlite_rollback_journal)
{
	sqlite_rounds(false);
}
END_TEST

START_TEST(test_sqlite_wal)
{
	sqlite_rounds(true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted sqlite");
	TCase *tc = tcase_create("sqlite");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_sqlite_rollback_journal);
	tcase_add_test(tc, test_sqlite_wal);
	/* These need the recording device (ORDFS_TEST_RECORD). */
	MNT_ADD_HOOK_TEST(tc, test_sqlite_power_cut_states_rollback);
	MNT_ADD_HOOK_TEST(tc, test_sqlite_power_cut_states_wal);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
