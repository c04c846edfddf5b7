/*
 * test_mnt_kill9.c - kill -9 of the daemon under load, then recovery by a
 * fresh daemon: everything fsync said was durable is there, exactly.
 *
 * Owns: the kill -9 rounds (ORDFS_KILL_ROUNDS, default 20; seed from
 * ORDFS_KILL_SEED, default the clock, printed so a failure can be
 * replayed).  Each round: mount with -f (data=ordered or data=journal,
 * default or 1 s commit interval, or the kernel's writeback cache, in
 * turn); 4 worker processes loop over
 * create+write+fsync, overwrite+fsync, rename (in a directory, across
 * directories, over another file)+fsync of the directories, and
 * unlink+fsync of the directory, each in its own directories; after a
 * random 0.2-1.5 s the daemon gets SIGKILL, the mount is detached with
 * fusermount3 -u -z and the workers, seeing errors, exit; a new daemon
 * mounts (journal replay happens there) and unmounts, and the checker must
 * find nothing; then every manifest of every round so far is verified
 * through another mount, which unmounts, and the checker runs again.
 * Every EPOCH (20) rounds start over on a fresh image, so a long tier
 * (ORDFS_KILL_ROUNDS=1000 with meson test --timeout-multiplier) never
 * fills one.
 *
 * Manifests live outside the mount, one per worker and round, one line
 * per event:
 *   B <op>     begun (written before the system calls)
 *   C <op>     completed: the fsync(s) returned (appended, then fsync'd)
 *   A          the begun operation did not land (resolved by the verifier)
 *   E <errno> <ms>  the worker's first error and when (CLOCK_MONOTONIC)
 * where <op> is "W path size seed" (file created or rewritten, then
 * fsync'd), "R from to" (renamed, directories fsync'd) or "U path"
 * (unlinked, directory fsync'd).  Only completed operations must be
 * there exactly; an operation begun and not completed may have landed or
 * not, atomically for renames and unlinks, and a file written by it holds
 * only its own bytes or zeros (ordered mode: never another file's data).
 * The verifier resolves it (A, C, or removes a partly written file) so
 * later rounds check everything exactly.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define WORKERS 4
#define MAX_LIVE 12                /* live files per worker */
#define MAX_FILE (64u * 1024u)
#define PATH_LEN 64

/* ---- random numbers --------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static unsigned rng_below(uint64_t *s, unsigned n)
{
	return (unsigned)(rng_next(s) % n);
}

/* ---- sets of files ---------------------------------------------------- */

struct fentry {
	char path[PATH_LEN]; /* relative to the worker's directory: d0/n12 */
	size_t size;
	uint64_t seed;
};

struct fset {
	struct fentry *v;
	size_t n, cap;
};

static ssize_t fset_find(const struct fset *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].path, path) == 0)
			return (ssize_t)i;
	return -1;
}

static void fset_put(struct fset *s, const char *path, size_t size, uint64_t seed)
{
	ssize_t i = fset_find(s, path);
	if (i < 0) {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->v = realloc(s->v, s->cap * sizeof(*s->v));
			if (!s->v)
				abort();
		}
		i = (ssize_t)s->n++;
		snprintf(s->v[i].path, PATH_LEN, "%s", path);
	}
	s->v[i].size = size;
	s->v[i].seed = seed;
}

static void fset_del(struct fset *s, const char *path)
{
	ssize_t i = fset_find(s, path);
	if (i >= 0)
		s->v[i] = s->v[--s->n];
}

/* ---- the worker ------------------------------------------------------- */

struct worker {
	int dirfd[2];   /* d0, d1 on the mount */
	int manifest;   /* append-only, outside the mount */
	struct fset live;
	unsigned next_name;
	uint64_t rng;
	uint8_t buf[MAX_FILE];
};

static void worker_log(struct worker *w, bool durable, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void worker_log(struct worker *w, bool durable, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(w->manifest, line, (size_t)n) != n || (durable && fsync(w->manifest) != 0))
		_exit(3); /* the host file system failed us: not the daemon's fault */
}

static void worker_fail(struct worker *w, const char *what)
{
	int err = errno;
	worker_log(w, true, "E %d %" PRIu64 " %s\n", err, mnt_now_ms(), what);
	_exit(0);
}

static int dir_of(const char *path)
{
	return path[1] - '0';
}

/* create (new name) or overwrite (existing name), write, fsync */
static void worker_write(struct worker *w, const char *path, bool create)
{
	size_t size = rng_below(&w->rng, MAX_FILE + 1);
	uint64_t seed = rng_next(&w->rng);
	worker_log(w, false, "B W %s %zu %" PRIu64 "\n", path, size, seed);
	int flags = O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_EXCL : O_TRUNC);
	int fd = openat(w->dirfd[dir_of(path)], path + 3, flags, 0644);
	if (fd < 0)
		worker_fail(w, "open");
	mnt_pattern_fill(w->buf, size, seed, 0);
	size_t done = 0;
	while (done < size) {
		ssize_t n = write(fd, w->buf + done, size - done);
		if (n <= 0)
			worker_fail(w, "write");
		done += (size_t)n;
	}
	if (fsync(fd) != 0)
		worker_fail(w, "fsync");
	worker_log(w, true, "C W %s %zu %" PRIu64 "\n", path, size, seed);
	fset_put(&w->live, path, size, seed);
	if (close(fd) != 0)
		worker_fail(w, "close");
}

static void worker_rename(struct worker *w, const char *from, const char *to)
{
	worker_log(w, false, "B R %s %s\n", from, to);
	int fd_from = w->dirfd[dir_of(from)], fd_to = w->dirfd[dir_of(to)];
	if (renameat(fd_from, from + 3, fd_to, to + 3) != 0)
		worker_fail(w, "rename");
	if (fsync(fd_to) != 0 || (fd_from != fd_to && fsync(fd_from) != 0))
		worker_fail(w, "fsync dir");
	worker_log(w, true, "C R %s %s\n", from, to);
	ssize_t i = fset_find(&w->live, from);
	struct fentry moved = w->live.v[i];
	fset_del(&w->live, from);
	fset_put(&w->live, to, moved.size, moved.seed);
}

static void worker_unlink(struct worker *w, const char *path)
{
	worker_log(w, false, "B U %s\n", path);
	int fd = w->dirfd[dir_of(path)];
	if (unlinkat(fd, path + 3, 0) != 0)
		worker_fail(w, "unlink");
	if (fsync(fd) != 0)
		worker_fail(w, "fsync dir");
	worker_log(w, true, "C U %s\n", path);
	fset_del(&w->live, path);
}

static void new_name(struct worker *w, char *path)
{
	snprintf(path, PATH_LEN, "d%u/n%u", rng_below(&w->rng, 2), w->next_name++);
}

static void worker_step(struct worker *w)
{
	char path[PATH_LEN], other[PATH_LEN];
	unsigned r = rng_below(&w->rng, 100);
	size_t n = w->live.n;
	if (n < 3 || (r < 35 && n < MAX_LIVE)) {
		new_name(w, path);
		worker_write(w, path, true);
		return;
	}
	snprintf(path, PATH_LEN, "%s", w->live.v[rng_below(&w->rng, (unsigned)n)].path);
	if (r < 55) {
		worker_write(w, path, false);
	} else if (r < 75) {
		new_name(w, other); /* same or the other directory */
		worker_rename(w, path, other);
	} else if (r < 87) {
		do {
			snprintf(other, PATH_LEN, "%s",
				 w->live.v[rng_below(&w->rng, (unsigned)n)].path);
		} while (strcmp(other, path) == 0);
		worker_rename(w, path, other); /* over a live file */
	} else {
		worker_unlink(w, path);
	}
}

static void worker_main(const char *wdir, const char *manifest, uint64_t seed)
{
	static struct worker w;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(&w, 0, sizeof(w));
	w.rng = seed | 1;
	w.manifest = open(manifest, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (w.manifest < 0)
		_exit(2);
	for (int d = 0; d < 2; d++) {
		char p[PATH_MAX + 8];
		snprintf(p, sizeof(p), "%s/d%d", wdir, d);
		w.dirfd[d] = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (w.dirfd[d] < 0)
			worker_fail(&w, "open dir");
	}
	for (;;)
		worker_step(&w);
}

/* ---- reading the manifests back ---------------------------------------- */

struct pending {
	bool active;
	char op;
	char a[PATH_LEN], b[PATH_LEN];
	size_t size;
	uint64_t seed;
};

struct replay {
	struct fset live;
	struct pending pend;
	unsigned completed;
	bool had_error;
	int err;
	uint64_t err_ms;
	char err_what[32];
};

static void apply_op(struct replay *r, const struct pending *op)
{
	if (op->op == 'W') {
		fset_put(&r->live, op->a, op->size, op->seed);
	} else if (op->op == 'R') {
		ssize_t i = fset_find(&r->live, op->a);
		ck_assert_msg(i >= 0, "manifest renames %s, which is not live", op->a);
		struct fentry moved = r->live.v[i];
		fset_del(&r->live, op->a);
		fset_put(&r->live, op->b, moved.size, moved.seed);
	} else {
		fset_del(&r->live, op->a);
	}
}

static bool parse_op(const char *s, struct pending *op)
{
	memset(op, 0, sizeof(*op));
	op->op = s[0];
	switch (s[0]) {
	case 'W':
		return sscanf(s, "W %63s %zu %" SCNu64, op->a, &op->size, &op->seed) == 3;
	case 'R':
		return sscanf(s, "R %63s %63s", op->a, op->b) == 2;
	case 'U':
		return sscanf(s, "U %63s", op->a) == 1;
	default:
		return false;
	}
}

static void replay_manifest(const char *path, struct replay *r)
{
	memset(r, 0, sizeof(*r));
	char *text = mnt_slurp(path, NULL);
	ck_assert_msg(text, "manifest %s is missing", path);
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct pending op;
		switch (line[0]) {
		case 'B':
			ck_assert_msg(parse_op(line + 2, &r->pend), "bad manifest line '%s'", line);
			r->pend.active = true;
			break;
		case 'C':
			ck_assert_msg(parse_op(line + 2, &op), "bad manifest line '%s'", line);
			apply_op(r, &op);
			r->pend.active = false;
			r->completed++;
			break;
		case 'A':
			r->pend.active = false;
			break;
		case 'E':
			r->had_error = true;
			sscanf(line, "E %d %" SCNu64 " %31s", &r->err, &r->err_ms, r->err_what);
			break;
		default:
			ck_abort_msg("bad manifest line '%s' in %s", line, path);
		}
	}
	free(text);
}

/* ---- checking files against the replay ---------------------------------- */

/* Contents of a file on the mount; NULL if it does not exist. */
static uint8_t *read_mounted(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ck_assert_msg(errno == ENOENT, "open %s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	MNT_OK(fstat(fd, &st));
	ck_assert_msg(st.st_size <= (off_t)MAX_FILE, "%s: size %lld, larger than any write",
		      path, (long long)st.st_size);
	uint8_t *buf = malloc(MAX_FILE + 2);
	ck_assert(buf);
	*len = mnt_read_full(fd, buf, MAX_FILE + 1);
	close(fd);
	ck_assert_msg(*len == (size_t)st.st_size, "%s: read %zu bytes, size %lld", path, *len,
		      (long long)st.st_size);
	return buf;
}

static bool is_exact(const uint8_t *buf, size_t len, const struct fentry *e)
{
	return buf && len == e->size && mnt_pattern_mismatch(buf, len, e->seed, 0) == len;
}

/* Partly written: no longer than meant, every byte its own or zero. */
static bool is_partial(const uint8_t *buf, size_t len, size_t size, uint64_t seed)
{
	if (!buf || len > size)
		return false;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != 0 && buf[i] != mnt_pattern_byte(seed, i))
			return false;
	return true;
}

struct verify_ctx {
	struct mnt *m;
	const char *wdir;     /* rNN/wW relative to the mount */
	const char *manifest;
	unsigned exact_files; /* files verified exactly */
	int err;              /* the worker's first error */
};

static const char *worker_path(struct verify_ctx *v, const char *rel)
{
	return mnt_path(v->m, "%s/%s", v->wdir, rel);
}

static void append_line(const char *manifest, const char *line)
{
	int fd = open(manifest, O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	mnt_write_all(fd, line, strlen(line));
	MNT_OK(fsync(fd));
	close(fd);
}

static bool involved(const struct pending *p, const char *rel)
{
	return p->active && (strcmp(p->a, rel) == 0 || (p->op == 'R' && strcmp(p->b, rel) == 0));
}

/* The names in d0 and d1 are the live files, plus what the unfinished
 * operation may have made. */
static void verify_listing(struct verify_ctx *v, const struct replay *r)
{
	unsigned seen = 0;
	for (int d = 0; d < 2; d++) {
		char sub[8];
		snprintf(sub, sizeof(sub), "d%d", d);
		DIR *dir = opendir(worker_path(v, sub));
		ck_assert_msg(dir, "opendir %s/%s: %s", v->wdir, sub, strerror(errno));
		struct dirent *e;
		while ((e = readdir(dir)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			char rel[sizeof(e->d_name) + 8];
			snprintf(rel, sizeof(rel), "%s/%s", sub, e->d_name);
			bool live = fset_find(&r->live, rel) >= 0;
			ck_assert_msg(live || involved(&r->pend, rel),
				      "%s/%s exists, but the manifest never completed it "
				      "(or completed its removal)",
				      v->wdir, rel);
			seen += live;
		}
		closedir(dir);
	}
	ck_assert_uint_le(seen, r->live.n);
}

/* Settles the unfinished operation: checks it landed atomically or not at
 * all, and records which in the manifest. */
static void resolve_pending(struct verify_ctx *v, struct replay *r)
{
	struct pending *p = &r->pend;
	if (!p->active)
		return;
	char line[256];
	size_t la = 0, lb = 0;
	uint8_t *ca = read_mounted(worker_path(v, p->a), &la);
	ssize_t ia = fset_find(&r->live, p->a);
	const struct fentry *olda = ia >= 0 ? &r->live.v[ia] : NULL;
	const char *verdict;

	if (p->op == 'W') {
		struct fentry want = { "", p->size, p->seed };
		if (is_exact(ca, la, &want)) {
			verdict = "landed";
			snprintf(line, sizeof(line), "C W %s %zu %" PRIu64 "\n", p->a, p->size,
				 p->seed);
		} else if (!ca && !olda) {
			verdict = "not created";
			snprintf(line, sizeof(line), "A\n");
		} else if (olda && is_exact(ca, la, olda)) {
			verdict = "not rewritten";
			snprintf(line, sizeof(line), "A\n");
		} else {
			ck_assert_msg(ca, "%s/%s vanished while being rewritten", v->wdir, p->a);
			ck_assert_msg(is_partial(ca, la, p->size, p->seed),
				      "%s/%s (written when the daemon died) holds %zu bytes that "
				      "are neither its own nor zeros",
				      v->wdir, p->a, la);
			verdict = "partly written (removed)";
			MNT_OK(unlink(worker_path(v, p->a)));
			snprintf(line, sizeof(line), "C U %s\n", p->a);
		}
	} else if (p->op == 'R') {
		ck_assert_msg(olda, "manifest renames %s, which is not live", p->a);
		uint8_t *cb = read_mounted(worker_path(v, p->b), &lb);
		ssize_t ib = fset_find(&r->live, p->b);
		const struct fentry *oldb = ib >= 0 ? &r->live.v[ib] : NULL;
		if (!ca && is_exact(cb, lb, olda)) {
			verdict = "renamed";
			snprintf(line, sizeof(line), "C R %s %s\n", p->a, p->b);
		} else {
			ck_assert_msg(is_exact(ca, la, olda) &&
					      (oldb ? is_exact(cb, lb, oldb) : cb == NULL),
				      "rename %s -> %s in %s was not atomic: source %s, target %s",
				      p->a, p->b, v->wdir, ca ? "present" : "absent",
				      cb ? "present" : "absent");
			verdict = "not renamed";
			snprintf(line, sizeof(line), "A\n");
		}
		free(cb);
	} else {
		ck_assert_msg(olda, "manifest unlinks %s, which is not live", p->a);
		if (!ca) {
			verdict = "unlinked";
			snprintf(line, sizeof(line), "C U %s\n", p->a);
		} else {
			ck_assert_msg(is_exact(ca, la, olda),
				      "%s/%s, being unlinked, has changed contents", v->wdir, p->a);
			verdict = "not unlinked";
			snprintf(line, sizeof(line), "A\n");
		}
	}
	free(ca);
	printf("    %s: unfinished %c %s%s%s: %s\n", v->wdir, p->op, p->a, p->op == 'R' ? " -> " : "",
	       p->op == 'R' ? p->b : "", verdict);
	append_line(v->manifest, line);
	struct pending op;
	if (line[0] == 'C') {
		parse_op(line + 2, &op);
		apply_op(r, &op);
	}
	p->active = false;
}

/* Verifies one worker's directory against its manifest. */
static unsigned verify_worker(struct verify_ctx *v, uint64_t killed_at, bool this_round)
{
	struct replay r;
	replay_manifest(v->manifest, &r);
	v->err = r.err;
	if (this_round) {
		ck_assert_msg(r.had_error, "worker %s ended without an error", v->wdir);
		ck_assert_msg(r.err_ms >= killed_at,
			      "worker %s failed (%s: %s) %" PRIu64 " ms before the kill", v->wdir,
			      r.err_what, strerror(r.err), killed_at - r.err_ms);
	}
	verify_listing(v, &r);
	for (size_t i = 0; i < r.live.n; i++) {
		const struct fentry *e = &r.live.v[i];
		if (involved(&r.pend, e->path))
			continue;
		size_t len = 0;
		uint8_t *buf = read_mounted(worker_path(v, e->path), &len);
		ck_assert_msg(buf, "%s/%s is gone, but its fsync had returned", v->wdir, e->path);
		ck_assert_msg(len == e->size, "%s/%s: size %zu, fsync'd with %zu", v->wdir, e->path,
			      len, e->size);
		size_t bad = mnt_pattern_mismatch(buf, len, e->seed, 0);
		ck_assert_msg(bad == len, "%s/%s: wrong byte at %zu of %zu", v->wdir, e->path, bad,
			      len);
		free(buf);
		v->exact_files++;
	}
	resolve_pending(v, &r);
	free(r.live.v);
	return r.completed;
}

/* ---- the rounds ----------------------------------------------------------------- */

static unsigned env_unsigned(const char *name, unsigned dflt)
{
	const char *s = getenv(name);
	return s && *s ? (unsigned)strtoul(s, NULL, 10) : dflt;
}

static void fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	MNT_OK(fsync(fd));
	close(fd);
}

/* Makes rNN/wW/{d0,d1} for every worker, durably. */
static void make_round_dirs(struct mnt *m, unsigned round)
{
	MNT_OK(mkdir(mnt_path(m, "r%02u", round), 0755));
	for (unsigned w = 0; w < WORKERS; w++) {
		MNT_OK(mkdir(mnt_path(m, "r%02u/w%u", round, w), 0755));
		MNT_OK(mkdir(mnt_path(m, "r%02u/w%u/d0", round, w), 0755));
		MNT_OK(mkdir(mnt_path(m, "r%02u/w%u/d1", round, w), 0755));
		fsync_path(mnt_path(m, "r%02u/w%u", round, w));
	}
	fsync_path(mnt_path(m, "r%02u", round));
	fsync_path(m->mountpoint);
}

static bool log_says_recovered(const char *log)
{
	char *text = mnt_slurp(log, NULL);
	bool rec = text && strstr(text, "recovered the journal") != NULL;
	free(text);
	return rec;
}

/* Rounds share an image in epochs of EPOCH rounds (a long tier must not
 * fill it); verification covers every round of the epoch so far. */
#define EPOCH 20

static void run_round(struct mnt *m, unsigned round, uint64_t *rng, unsigned *recovered)
{
	unsigned first = round - round % EPOCH;
	/* data=ordered and data=journal, with the default and a 1 s commit,
	 * and the kernel holding written pages (-o writeback_cache) */
	static const char *const round_opts[] = { NULL, "commit=1", "data=journal",
						  "data=journal,commit=1", "writeback_cache" };
	const char *opts = round_opts[round % 5];
	mnt_start(m, opts);
	make_round_dirs(m, round);

	pid_t workers[WORKERS];
	for (unsigned w = 0; w < WORKERS; w++) {
		char wdir[PATH_MAX], manifest[PATH_MAX];
		snprintf(wdir, sizeof(wdir), "%s", mnt_path(m, "r%02u/w%u", round, w));
		snprintf(manifest, sizeof(manifest), "%s",
			 mnt_host_path(m, "manifest.r%02u.w%u", round, w));
		uint64_t seed = rng_next(rng);
		fflush(NULL);
		workers[w] = fork();
		ck_assert_int_ge(workers[w], 0);
		if (workers[w] == 0)
			worker_main(wdir, manifest, seed);
	}

	unsigned delay = 200 + rng_below(rng, 1301);
	usleep(delay * 1000u);
	uint64_t killed_at = mnt_now_ms();
	MNT_OK(kill(m->daemon, SIGKILL));
	int status;
	/* Generous bounds (60 s): on a loaded machine a killed daemon's exit
	 * and the workers' errors take their time; neither is ordfs's rule. */
	ck_assert_int_eq(mnt_wait_pid(m->daemon, 60000, &status), 0);
	m->daemon = 0;
	ck_assert_int_eq(mnt_fusermount_u(m->mountpoint, true), 0);
	for (unsigned w = 0; w < WORKERS; w++) {
		if (mnt_wait_pid(workers[w], 60000, &status) != 0) {
			kill(workers[w], SIGKILL);
			waitpid(workers[w], &status, 0);
			ck_abort_msg("worker %u still running 60 s after the daemon died", w);
		}
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "worker %u exited with status 0x%x", w, status);
	}

	/* a fresh daemon recovers; what recovery alone leaves must check
	 * clean before anything else touches it */
	mnt_start(m, NULL);
	bool rec = log_says_recovered(m->log);
	*recovered += rec;
	mnt_stop(m);
	printf("round %2u: %s; checking the image as recovery left it\n", round,
	       rec ? "journal replayed" : "no replay needed");
	fflush(stdout);
	mnt_check(m);

	/* then verify every round of the epoch */
	mnt_start(m, NULL);
	ck_assert_msg(!log_says_recovered(m->log), "journal replayed again after a clean unmount");
	unsigned completed = 0, exact = 0;
	char errs[64] = "";
	for (unsigned r = first; r <= round; r++) {
		for (unsigned w = 0; w < WORKERS; w++) {
			char wdir[32], manifest[PATH_MAX];
			snprintf(wdir, sizeof(wdir), "r%02u/w%u", r, w);
			snprintf(manifest, sizeof(manifest), "%s",
				 mnt_host_path(m, "manifest.r%02u.w%u", r, w));
			struct verify_ctx v = { m, wdir, manifest, 0, 0 };
			unsigned c = verify_worker(&v, killed_at, r == round);
			if (r == round) {
				completed += c;
				size_t used = strlen(errs);
				snprintf(errs + used, sizeof(errs) - used, "%s%s", used ? "," : "",
					 strerrorname_np(v.err) ? strerrorname_np(v.err) : "?");
			}
			exact += v.exact_files;
		}
	}
	printf("round %2u: killed after %4u ms (-o %s), %u ops completed, workers saw %s, %s, "
	       "%u files exact since round %u\n",
	       round, delay, opts ? opts : "defaults", completed, errs,
	       rec ? "journal replayed" : "no replay needed", exact, first);
	fflush(stdout);
	mnt_stop(m);
	mnt_check(m);
}

START_TEST(test_kill9_rounds)
{
	unsigned rounds = env_unsigned("ORDFS_KILL_ROUNDS", 20);
	uint64_t seed = env_unsigned("ORDFS_KILL_SEED", (unsigned)time(NULL));
	printf("kill -9 test: %u rounds, ORDFS_KILL_SEED=%" PRIu64 "\n", rounds, seed);
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
	struct mnt m;
	mnt_setup(&m, "256M");
	unsigned recovered = 0;
	uint64_t t0 = mnt_now_ms();
	for (unsigned round = 0; round < rounds; round++) {
		if (round > 0 && round % EPOCH == 0) {
			mnt_finish(&m);
			mnt_setup(&m, "256M");
		}
		run_round(&m, round, &rng, &recovered);
	}
	printf("kill -9 test: %u rounds in %.1f s, %u needed journal replay\n", rounds,
	       (double)(mnt_now_ms() - t0) / 1000.0, recovered);
	mnt_finish(&m);
}
END_TEST

static Suite *kill9_suite(void)
{
	Suite *s = suite_create("mounted_kill9");
	TCase *tc = tcase_create("kill9");
	/* 20 rounds take well under a minute; a long tier raises the rounds */
	unsigned rounds = env_unsigned("ORDFS_KILL_ROUNDS", 20);
	tcase_set_timeout(tc, 60.0 + 15.0 * rounds);
	tcase_add_test(tc, test_kill9_rounds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(kill9_suite());
}
