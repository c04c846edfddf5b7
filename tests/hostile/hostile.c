/*
 * hostile.c - the hostile-image harness's driver: builds the base images,
 * and for each seed mutates a copy (mutator.c), walks it through the
 * daemon's request handlers in a forked child (walk.c; an abort, a crash,
 * a sanitizer report or a hang is caught there), then runs the real
 * fsck.ordfs on the mutated image and on the image the walk left:
 * -fy, then -fn, which must be clean (fsck converges in one run).
 *
 * Usage: hostile FSCK [--count N] [--first SEED] [--long N] [--seconds S]
 *                [--jobs J] [--struct NAME] [--replay SEED] [--quiet]
 *   --count N     cases from --first (default 1) on (default 200)
 *   --seeds LIST  exactly these seeds (comma-separated): the regression
 *                 cases the long runs found (tests/hostile/meson.build)
 *   --long N      the long tier: N cases (same as --count N, jobs 2)
 *   --seconds S   stop starting cases after S seconds (0: no limit)
 *   --jobs J      cases run in J worker processes (default 1)
 *   --struct NAME only mutations of that structure (super, block-bitmap,
 *                 inode-bitmap, inode, extent, dir, xattr, journal-super,
 *                 journal-block, owner, loop)
 *   --replay SEED one case, everything it did and the daemon's log shown
 *   --save PATH   with --replay: the mutated image written to PATH too, the
 *                 image the walk left to PATH.walked
 *   --verbose     a line for every case, passed ones too (PASS seed=...)
 *   --undamaged   no mutation: the base images as built (odd seeds the live
 *                 one), which must pass: the harness's own control
 *   --stop-at-first-match TEXT  stop at the first failure whose line
 *                 contains TEXT and print the cases and seconds it took
 *                 (the controls of README.md)
 * Every failure is one line: FAIL seed=S struct=X base=B mutation='...'
 * what='...'; the end lists the cases per structure, the distinct failure
 * signatures with a seed to replay each, and "N passed, N failed".
 * Exit 0 when no case failed, 1 when one did, 2 on a harness error.
 *
 * Owns: the case's order (mutate, walk, fsck), the timeouts and the
 * classification of what went wrong.  Rules: a case is decided by its
 * seed alone (structure = seed % structures unless --struct; base image =
 * live for the journal-block structure and every third seed, else clean),
 * so `--replay SEED` repeats it; nothing is written outside a temporary
 * directory that is removed at the end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

#define WANT_NONE (-2) /* --undamaged: the base images as built */
#define WALK_TIMEOUT 20   /* seconds per walk (a walk takes ~0.1 s; ASan ~1 s) */
#define FSCK_TIMEOUT 30   /* seconds per fsck run (~0.03 s each; ASan ~0.3 s; a held
			     owner record: the protocol's wait, at most 11 s) */

enum outcome {
	OUT_PASS,
	OUT_SKIP,        /* no target of that kind in the image */
	OUT_CRASH,       /* the walk died of a signal */
	OUT_HANG,        /* the walk did not finish in time */
	OUT_SANITIZER,   /* an ASan/UBSan report */
	OUT_ORACLE,      /* live data overwritten, or an unmountable result */
	OUT_FSCK_CRASH,
	OUT_FSCK_HANG,
	OUT_FSCK_GAVE_UP,      /* -fy exit 4 or 8 */
	OUT_FSCK_NOT_CONVERGED, /* -fn after -fy not clean */
	OUT_HARNESS,
	OUT_FSCK_MISSED, /* the daemon answered EUCLEAN, fsck -fn says clean */
	OUT_XLINK,       /* passed: a file changed only because the damage
			    cross-linked it with one the walk wrote (a block
			    claimed twice before the walk: what only a full
			    cross-reference sees, left to fsck and scrub) */
	OUT_KINDS
};

static const char *const outcome_names[OUT_KINDS] = {
	"pass", "skip", "crash", "hang", "sanitizer", "overwrite-or-unmountable",
	"fsck-crash", "fsck-hang", "fsck-gave-up", "fsck-not-converged", "harness",
	"fsck-missed", "pass-crosslinked",
};

static bool is_failure(unsigned o)
{
	return o != OUT_PASS && o != OUT_SKIP && o != OUT_XLINK;
}

struct record {
	uint64_t seed;
	uint8_t st, outcome, base;
	unsigned mounted : 1, readonly : 1;
	uint32_t requests, euclean;
	char mutation[300];
	char what[600];
};

static const char *fsck_path;
static char tmpdir[64];
static struct h_image bases[H_BASES];
static bool replay_mode;
static const char *save_path; /* --save: the mutated image of --replay */
static bool verbose;          /* --verbose: a line for every case */

/* ---- running things with a timeout ---------------------------------------- */

/* Waits for pid at most seconds; kills it (and says so) when it overruns. */
static int wait_bounded(pid_t pid, unsigned seconds, bool *timed_out)
{
	int status = 0;
	*timed_out = false;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			return status;
		if (w < 0 && errno != EINTR)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= (time_t)seconds) {
			*timed_out = true;
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return status;
		}
		struct timespec nap = { 0, 2 * 1000 * 1000 };
		nanosleep(&nap, NULL);
	}
}

static bool read_text(const char *path, char *buf, size_t len)
{
	buf[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return true;
}

/* The first line of text containing needle (or the last line, needle
 * NULL), into out. */
static void pick_line(const char *text, const char *needle, char *out, size_t len)
{
	out[0] = 0;
	const char *p = text, *best = NULL;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l && (!needle || memmem(p, l, needle, strlen(needle)))) {
			best = p;
			if (needle)
				break;
		}
		p += l + (e ? 1 : 0);
	}
	if (best) {
		const char *e = strchr(best, '\n');
		size_t l = e ? (size_t)(e - best) : strlen(best);
		snprintf(out, len, "%.*s", (int)(l < len - 1 ? l : len - 1), best);
	}
}

static bool sanitizer_line(const char *text, char *out, size_t len)
{
	static const char *const marks[] = { "ERROR: AddressSanitizer", "runtime error:",
					     "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer" };
	for (unsigned i = 0; i < 4; i++) {
		const char *at = strstr(text, marks[i]);
		if (!at) {
			continue;
		}
		pick_line(text, marks[i], out, len);
		/* and where: the first frame of ordfs's own ("#1 0x... in f file:line") */
		for (const char *f = strstr(at, "    #"); f; f = strstr(f + 1, "    #")) {
			const char *in = strstr(f, " in "), *nl = strchr(f, '\n');
			if (!in || (nl && in > nl))
				continue;
			if (strncmp(in, " in __", 6) == 0 || strncmp(in, " in abort", 9) == 0 ||
			    strncmp(in, " in raise", 9) == 0 || strncmp(in, " in malloc", 10) == 0 ||
			    strncmp(in, " in free", 8) == 0 || strncmp(in, " in calloc", 10) == 0)
				continue;
			const char *slash = nl ? (const char *)memrchr(in, '/', (size_t)(nl - in)) : NULL;
			size_t l = strlen(out);
			int fl = (int)((nl ? nl : in + strlen(in)) - in);
			const char *fn_end = memchr(in + 4, ' ', (size_t)fl - 4);
			snprintf(out + l, len - l, " (in %.*s%s%.*s)",
				 (int)((fn_end ? fn_end : in + fl) - (in + 4)), in + 4, slash ? " " : "",
				 slash ? (int)(nl - slash - 1) : 0, slash ? slash + 1 : "");
			break;
		}
		return true;
	}
	return false;
}

/* Runs fsck.ordfs with flag (and flag2 unless NULL) on image; its exit
 * code, or -SIG, or -1000 on a timeout; its output in out. */
static int run_fsck2(const char *flag, const char *flag2, const char *image, char *out,
		     size_t len)
{
	char log[128];
	snprintf(log, sizeof(log), "%s/fsck.%d.log", tmpdir, (int)getpid());
	pid_t pid = fork();
	if (pid < 0)
		return -2000;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (flag2)
			execl(fsck_path, "fsck.ordfs", flag, flag2, image, (char *)NULL);
		else
			execl(fsck_path, "fsck.ordfs", flag, image, (char *)NULL);
		_exit(127);
	}
	bool to;
	int status = wait_bounded(pid, FSCK_TIMEOUT, &to);
	read_text(log, out, len);
	if (replay_mode)
		printf("--- fsck.ordfs %s%s%s: %s", flag, flag2 ? " " : "", flag2 ? flag2 : "", out);
	if (to)
		return -1000;
	if (WIFSIGNALED(status))
		return -WTERMSIG(status);
	return WEXITSTATUS(status);
}

static int run_fsck(const char *flag, const char *image, char *out, size_t len)
{
	return run_fsck2(flag, NULL, image, out, len);
}

static int write_image(const char *path, const uint8_t *img, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t at = 0;
	while (at < size) {
		ssize_t n = write(fd, img + at, size - at);
		if (n <= 0) {
			close(fd);
			return -EIO;
		}
		at += (size_t)n;
	}
	close(fd);
	return 0;
}

/* fsck -fy then -fn on image: false (and rec filled) on a failure. */
static bool fsck_pair(struct record *rec, const char *image, const char *which,
		      uint64_t backup_block)
{
	static char out[16384];
	char line[300];
	int rc = run_fsck("-fy", image, out, sizeof(out));
	if (!sanitizer_line(out, line, sizeof(line)))
		line[0] = 0;
	if (line[0]) {
		rec->outcome = OUT_SANITIZER;
		snprintf(rec->what, sizeof(rec->what), "fsck -fy on the %s image: %s", which, line);
		return false;
	}
	if (rc == -1000 || rc < -100) {
		rec->outcome = OUT_FSCK_HANG;
		snprintf(rec->what, sizeof(rec->what), "fsck -fy on the %s image did not finish in "
			 "%d s", which, FSCK_TIMEOUT);
		return false;
	}
	if (rc < 0) {
		pick_line(out, NULL, line, sizeof(line));
		rec->outcome = OUT_FSCK_CRASH;
		snprintf(rec->what, sizeof(rec->what), "fsck -fy on the %s image died of signal %d: "
			 "%s", which, -rc, line);
		return false;
	}
	if (rc == 8 && backup_block) {
		/* the primary superblock unusable: fsck -b with the backup, as
		 * e2fsck's user would (the daemon refused the image too) */
		char b[32];
		snprintf(b, sizeof(b), "-b%llu", (unsigned long long)backup_block);
		rc = run_fsck2("-fy", b, image, out, sizeof(out));
		if (rc >= 0 && rc < 4)
			goto second;
	}
	if (rc >= 4) {
		pick_line(out, "problem ", line, sizeof(line));
		if (!line[0])
			pick_line(out, "fsck.ordfs: ", line, sizeof(line));
		if (!line[0])
			pick_line(out, NULL, line, sizeof(line));
		rec->outcome = OUT_FSCK_GAVE_UP;
		snprintf(rec->what, sizeof(rec->what), "fsck -fy on the %s image exit %d: %s", which,
			 rc, line);
		return false;
	}
second:
	rc = run_fsck("-fn", image, out, sizeof(out));
	if (sanitizer_line(out, line, sizeof(line))) {
		rec->outcome = OUT_SANITIZER;
		snprintf(rec->what, sizeof(rec->what), "fsck -fn on the %s image: %s", which, line);
		return false;
	}
	if (rc != 0) {
		pick_line(out, NULL, line, sizeof(line));
		char first[300];
		pick_line(out, ":", first, sizeof(first));
		rec->outcome = rc < 0 ? OUT_FSCK_CRASH : OUT_FSCK_NOT_CONVERGED;
		snprintf(rec->what, sizeof(rec->what), "fsck -fn after -fy on the %s image exit %d: "
			 "%s", which, rc, first[0] ? first : line);
		return false;
	}
	return true;
}

/* A fatal signal in the walk: one line with the return addresses in this
 * program (offsets from its load address), which the parent names with
 * addr2line (the daemon's own aborts, "reference underflow" among them,
 * print nothing, and static functions have no dynamic symbol); then the
 * signal's default action, so the parent sees it. */
static void on_fatal_signal(int sig)
{
	void *frames[24];
	int n = backtrace(frames, 24);
	Dl_info self;
	char line[512];
	int at = snprintf(line, sizeof(line), "hostile: signal %d at", sig);
	if (dladdr((void *)on_fatal_signal, &self)) {
		for (int i = 1; i < n && at < (int)sizeof(line) - 24; i++) {
			Dl_info d;
			if (!dladdr(frames[i], &d) || d.dli_fbase != self.dli_fbase)
				continue;
			at += snprintf(line + at, sizeof(line) - (size_t)at, " %lx",
				       (unsigned long)((char *)frames[i] - (char *)self.dli_fbase - 1));
		}
	}
	snprintf(line + at, sizeof(line) - (size_t)at, "\n");
	if (write(2, line, strlen(line)) < 0) {
		/* nothing to do */
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* "hostile: signal N at OFF..." named: the first three frames of ordfs's
 * own code, "f (file:line) <- g <- h". */
static void name_frames(const char *logline, char *out, size_t len)
{
	out[0] = 0;
	const char *p = strstr(logline, " at ");
	if (!p)
		return;
	char cmd[1024];
	int at = snprintf(cmd, sizeof(cmd), "addr2line -f -s -e /proc/%d/exe %s 2>/dev/null",
			  (int)getpid(), p + 4);
	if (at >= (int)sizeof(cmd))
		return;
	FILE *f = popen(cmd, "r");
	if (!f)
		return;
	char fn[256], loc[256];
	int shown = 0;
	size_t o = 0;
	while (shown < 3 && fgets(fn, sizeof(fn), f) && fgets(loc, sizeof(loc), f)) {
		fn[strcspn(fn, "\n")] = 0;
		loc[strcspn(loc, "\n")] = 0;
		if (strcmp(fn, "on_fatal_signal") == 0 || strcmp(fn, "??") == 0)
			continue;
		char *dot = strchr(fn, '.'); /* inode_put_flags.cold */
		if (dot)
			*dot = 0;
		char *paren = strchr(loc, ' ');
		if (paren)
			*paren = 0;
		o += (size_t)snprintf(out + o, len - o, shown ? " <- %s" : "%s (%s)", fn, loc);
		if (o >= len)
			break;
		shown++;
	}
	pclose(f);
}

/* The online scrub's block problems on the image at path (forked: a crash
 * in it is no crash of the harness): > 0 found, 0 none, < 0 could not run. */
static int scrub_block_problems(const char *path, size_t size)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		uint8_t *img = malloc(size);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (!img || fd < 0 || pread(fd, img, size, 0) != (ssize_t)size)
			_exit(200);
		int dn = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (dn >= 0 && !replay_mode)
			dup2(dn, 2);
		int n = h_scrub_block_problems(img, size);
		_exit(n < 0 ? 200 : n > 100 ? 100 : n);
	}
	bool to;
	int status = wait_bounded(pid, WALK_TIMEOUT, &to);
	if (to || !WIFEXITED(status) || WEXITSTATUS(status) == 200)
		return -1;
	if (replay_mode)
		printf("--- the online scrub of the damaged image: %d block problem(s)\n",
		       WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

/* The structure seed damages: seed % HS_COUNT, except that the owner
 * record (a few fields; a held one costs fsck the owner protocol's whole
 * wait, 11 s, on the damaged and on the walked image) keeps one seed in a
 * hundred of its share; the rest go round the other structures. */
static enum h_struct struct_of_seed(uint64_t seed)
{
	enum h_struct st = (enum h_struct)(seed % HS_COUNT);
	uint64_t round = seed / HS_COUNT;
	if (st != HS_OWNER || round % 100 == 0)
		return st;
	st = (enum h_struct)(round % (HS_COUNT - 1));
	return st >= HS_OWNER ? (enum h_struct)(st + 1) : st;
}

/* ---- one case ------------------------------------------------------------------- */

static void run_case(uint64_t seed, int want, struct record *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->seed = seed;
	bool undamaged = want == WANT_NONE;
	enum h_struct st = want >= 0 ? (enum h_struct)want : struct_of_seed(seed);
	enum h_base base = st == HS_JBLOCK || (seed / HS_COUNT) % 3 == 0 ? H_BASE_LIVE
									     : H_BASE_CLEAN;
	if (undamaged) {
		st = HS_SUPER; /* counted there */
		base = seed % 2 ? H_BASE_LIVE : H_BASE_CLEAN;
	}
	rec->st = (uint8_t)st;
	rec->base = (uint8_t)base;
	const struct h_image *b = &bases[base];
	uint8_t *img = malloc(b->size);
	if (!img) {
		rec->outcome = OUT_HARNESS;
		snprintf(rec->what, sizeof(rec->what), "out of memory");
		return;
	}
	memcpy(img, b->bytes, b->size);
	enum h_struct got;
	if (undamaged)
		snprintf(rec->mutation, sizeof(rec->mutation), "none (the %s base image as built)",
			 base == H_BASE_LIVE ? "live" : "clean");
	else if (h_mutate(img, b->size, &b->sb, seed, st, &got, rec->mutation,
			  sizeof(rec->mutation)) != 0) {
		rec->outcome = OUT_SKIP;
		free(img);
		return;
	}
	if (replay_mode)
		printf("seed %llu: struct %s, base %s: %s\n", (unsigned long long)seed,
		       h_struct_name(st), base == H_BASE_LIVE ? "live" : "clean", rec->mutation);
	char mpath[128], wpath[128], epath[128], rpath[128];
	int me = (int)getpid();
	snprintf(mpath, sizeof(mpath), "%s/mutated.%d.img", tmpdir, me);
	snprintf(wpath, sizeof(wpath), "%s/walked.%d.img", tmpdir, me);
	snprintf(epath, sizeof(epath), "%s/walk.%d.log", tmpdir, me);
	snprintf(rpath, sizeof(rpath), "%s/walk.%d.res", tmpdir, me);
	if (save_path && write_image(save_path, img, b->size) == 0)
		printf("mutated image saved as %s\n", save_path);
	if (write_image(mpath, img, b->size) != 0) {
		rec->outcome = OUT_HARNESS;
		snprintf(rec->what, sizeof(rec->what), "cannot write %s", mpath);
		free(img);
		return;
	}
	unlink(rpath);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(epath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0 && !replay_mode)
			dup2(fd, 2);
		signal(SIGABRT, on_fatal_signal);
		signal(SIGSEGV, on_fatal_signal);
		signal(SIGBUS, on_fatal_signal);
		signal(SIGFPE, on_fatal_signal);
		alarm(WALK_TIMEOUT);
		struct h_walk_result r;
		h_walk(img, b->size, &r);
		if (write_image(wpath, img, b->size) != 0)
			_exit(3);
		if (save_path) {
			char sp[600];
			snprintf(sp, sizeof(sp), "%s.walked", save_path);
			if (write_image(sp, img, b->size) == 0)
				printf("the image the walk left saved as %s\n", sp);
		}
		FILE *f = fopen(rpath, "we");
		if (!f)
			_exit(3);
		fprintf(f, "%d %d %u %u\n%s\n%s\n", r.mounted, r.readonly, r.requests, r.euclean,
			r.failure, r.first_euclean);
		fclose(f);
		_exit(0);
	}
	free(img);
	bool to;
	int status = wait_bounded(pid, WALK_TIMEOUT + 10, &to);
	static char log[65536];
	read_text(epath, log, sizeof(log));
	if (replay_mode)
		printf("--- the daemon's log:\n%s", log);
	char line[300];
	if (sanitizer_line(log, line, sizeof(line))) {
		rec->outcome = OUT_SANITIZER;
		snprintf(rec->what, sizeof(rec->what), "walk: %s", line);
		return;
	}
	if (to || (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)) {
		pick_line(log, NULL, line, sizeof(line));
		rec->outcome = OUT_HANG;
		snprintf(rec->what, sizeof(rec->what), "walk did not finish in %d s (last log: %s)",
			 WALK_TIMEOUT, line);
		return;
	}
	char oracle[400];
	pick_line(log, "hostile: oracle: ", oracle, sizeof(oracle));
	if (oracle[0] && WIFSIGNALED(status)) {
		/* the oracle saw it first; the crash followed from it */
		rec->outcome = OUT_ORACLE;
		snprintf(rec->what, sizeof(rec->what), "%s (then the walk died of signal %d)",
			 oracle + strlen("hostile: oracle: "), WTERMSIG(status));
		return;
	}
	if (WIFSIGNALED(status)) {
		/* the daemon's last words before the abort */
		pick_line(log, "lock order", line, sizeof(line));
		if (!line[0])
			pick_line(log, "internal error", line, sizeof(line));
		if (!line[0]) {
			char raw[300];
			pick_line(log, "hostile: signal", raw, sizeof(raw));
			name_frames(raw, line, sizeof(line));
		}
		if (!line[0])
			pick_line(log, NULL, line, sizeof(line));
		rec->outcome = OUT_CRASH;
		snprintf(rec->what, sizeof(rec->what), "walk died of signal %d (%s): %s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)), line);
		return;
	}
	char res[1024];
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !read_text(rpath, res, sizeof(res))) {
		rec->outcome = OUT_HARNESS;
		snprintf(rec->what, sizeof(rec->what), "walk child exit status 0x%x", status);
		return;
	}
	if (replay_mode)
		printf("--- walk result: %s", res);
	int mounted = 0, ro = 0;
	sscanf(res, "%d %d %u %u", &mounted, &ro, &rec->requests, &rec->euclean);
	rec->mounted = mounted != 0;
	rec->readonly = ro != 0;
	const char *fl = strchr(res, '\n');
	bool xlink = false;
	if (fl && fl[1] && fl[1] != '\n') {
		rec->outcome = OUT_ORACLE;
		snprintf(rec->what, sizeof(rec->what), "%.*s", (int)strcspn(fl + 1, "\n"), fl + 1);
		/* A file changed: was one of its blocks already another's, or
		 * marked free, in the damaged image (what only the whole
		 * cross-reference sees: fsck says so, and the online scrub,
		 * run on the damaged image before any write, must too)? */
		static char out[16384];
		if (!strstr(rec->what, "changed although") ||
		    run_fsck("-fn", mpath, out, sizeof(out)) < 0 ||
		    (!strstr(out, "(block-claimed-twice)") &&
		     !strstr(out, "is in use but the bitmap says free")))
			return;
		int found = scrub_block_problems(mpath, b->size);
		if (found <= 0) {
			size_t n = strlen(rec->what);
			snprintf(rec->what + n, sizeof(rec->what) - n,
				 "; the online scrub of the damaged image %s",
				 found == 0 ? "found no block problem" : "could not run");
			return;
		}
		xlink = true;
	}
	if (replay_mode)
		printf("walk: mounted %d read-only %d, %u requests, %u EUCLEAN/EIO replies\n",
		       mounted, ro, rec->requests, rec->euclean);
	/* fsck finds what the daemon refused: -fn on the damage as found */
	const char *fe = fl ? strchr(fl + 1, '\n') : NULL;
	char first_euclean[64] = "";
	if (fe && fe[1] && fe[1] != '\n')
		snprintf(first_euclean, sizeof(first_euclean), "%.*s", (int)strcspn(fe + 1, "\n"),
			 fe + 1);
	if (first_euclean[0]) {
		static char out[16384];
		int rc = run_fsck("-fn", mpath, out, sizeof(out));
		if (rc == 0) {
			rec->outcome = OUT_FSCK_MISSED;
			snprintf(rec->what, sizeof(rec->what), "the daemon answered EUCLEAN (first: "
				 "%s) but fsck -fn finds the damaged image clean", first_euclean);
			return;
		}
	}
	/* fsck on the damage as found, and on what the walk left */
	if (!fsck_pair(rec, mpath, "mutated", rec->mounted ? 0 : b->sb.block_count - 1))
		return;
	if (!fsck_pair(rec, wpath, "walked", rec->mounted ? 0 : b->sb.block_count - 1))
		return;
	rec->outcome = xlink ? OUT_XLINK : OUT_PASS;
}

/* ---- the summary ---------------------------------------------------------------- */

struct sig {
	char text[200];
	uint64_t seed;
	unsigned count;
};

static struct sig sigs[512];
static unsigned nsigs;
static unsigned per_struct[HS_COUNT][OUT_KINDS];

/* The failure with its numbers (decimal and hex tokens), quoted names and
 * the temporary directory taken out, so one bug is one signature. */
static void signature(const struct record *r, char *out, size_t len)
{
	char tmp[700];
	snprintf(tmp, sizeof(tmp), "%s %s: %s", h_struct_name(r->st), outcome_names[r->outcome],
		 r->what);
	size_t o = 0;
	const char *p = tmp;
	while (*p && o + 1 < len) {
		if ((*p == '"' || *p == '\'') && strchr(p + 1, *p)) { /* a name: "*" */
			char q = *p;
			p = strchr(p + 1, q) + 1;
			if (o + 4 < len) {
				out[o++] = q;
				out[o++] = '*';
				out[o++] = q;
			}
			continue;
		}
		if (strncmp(p, tmpdir, strlen(tmpdir)) == 0 && tmpdir[0]) {
			p += strlen(tmpdir);
			continue;
		}
		if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')) {
			/* a token: hex letters and digits only, with a digit? */
			size_t n = 0;
			bool digit = false;
			while ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f') ||
			       (n == 1 && p[n] == 'x')) {
				digit |= p[n] >= '0' && p[n] <= '9';
				n++;
			}
			bool starts_word = p == tmp || !((p[-1] >= 'a' && p[-1] <= 'z') ||
							 (p[-1] >= 'A' && p[-1] <= 'Z') || p[-1] == '_');
			bool ends_word = !((p[n] >= 'g' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
					   p[n] == '_');
			if (digit && starts_word && ends_word) {
				out[o++] = '#';
				p += n;
				continue;
			}
			while (n-- && o + 1 < len)
				out[o++] = *p++;
			continue;
		}
		out[o++] = *p++;
	}
	out[o] = 0;
}

static void account(const struct record *r, bool print)
{
	per_struct[r->st][r->outcome]++;
	if (verbose && !is_failure(r->outcome))
		printf("%s seed=%llu struct=%s base=%s mutation='%s' requests=%u euclean=%u%s\n",
		       r->outcome == OUT_SKIP ? "SKIP" : "PASS", (unsigned long long)r->seed,
		       h_struct_name(r->st), r->base == H_BASE_LIVE ? "live" : "clean", r->mutation,
		       r->requests, r->euclean, r->mounted ? "" : " (mount refused)");
	if (!is_failure(r->outcome))
		return;
	if (print)
		printf("FAIL seed=%llu struct=%s base=%s mutation='%s' outcome=%s what='%s'\n",
		       (unsigned long long)r->seed, h_struct_name(r->st),
		       r->base == H_BASE_LIVE ? "live" : "clean", r->mutation,
		       outcome_names[r->outcome], r->what);
	char s[200];
	signature(r, s, sizeof(s));
	for (unsigned i = 0; i < nsigs; i++) {
		if (strcmp(sigs[i].text, s) == 0) {
			sigs[i].count++;
			return;
		}
	}
	if (nsigs < 512) {
		snprintf(sigs[nsigs].text, sizeof(sigs[nsigs].text), "%s", s);
		sigs[nsigs].seed = r->seed;
		sigs[nsigs++].count = 1;
	}
}

static void summary(double secs)
{
	unsigned pass = 0, fail = 0, skip = 0, xlinks = 0;
	printf("\n%-14s %7s %7s %7s  failures by outcome\n", "structure", "cases", "skipped",
	       "failed");
	for (int s = 0; s < HS_COUNT; s++) {
		unsigned c = 0, f = 0;
		char by[300] = "";
		for (int o = 0; o < OUT_KINDS; o++) {
			c += per_struct[s][o];
			if (is_failure((unsigned)o) && per_struct[s][o]) {
				f += per_struct[s][o];
				size_t l = strlen(by);
				snprintf(by + l, sizeof(by) - l, " %s=%u", outcome_names[o],
					 per_struct[s][o]);
			}
		}
		pass += per_struct[s][OUT_PASS] + per_struct[s][OUT_XLINK];
		xlinks += per_struct[s][OUT_XLINK];
		skip += per_struct[s][OUT_SKIP];
		fail += f;
		printf("%-14s %7u %7u %7u %s\n", h_struct_name(s), c, per_struct[s][OUT_SKIP], f, by);
	}
	if (nsigs) {
		printf("\ndistinct failure signatures (count, a seed to replay: hostile FSCK "
		       "--replay SEED):\n");
		for (unsigned i = 0; i < nsigs; i++)
			printf("%6u  seed %-8llu %s\n", sigs[i].count,
			       (unsigned long long)sigs[i].seed, sigs[i].text);
	}
	printf("\n%.1f s, %u cases (%u skipped: no target; %u passed with a file changed through "
	       "a block the damage had cross-linked, which fsck reports: left to fsck)\n", secs,
	       pass + fail + skip, skip, xlinks);
	printf("%u passed, %u failed\n", pass, fail);
}

static void cleanup_tmp(void)
{
	for (int k = 0; k < H_BASES; k++) { /* LeakSanitizer looks at the end */
		free(bases[k].bytes);
		bases[k].bytes = NULL;
	}
	char cmd[128];
	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0) {
			/* nothing more to do */
		}
	}
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t first = 1, count = 200;
	enum { MAX_LISTED = 256 };
	static uint64_t listed[MAX_LISTED]; /* --seeds: these cases, not a range */
	uint64_t nlisted = 0;
	unsigned jobs = 1, seconds = 0;
	int want = -1;
	bool quiet = false, replay = false;
	const char *stop_match = NULL;
	uint64_t replay_seed = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: hostile FSCK [--count N] [--first SEED] [--seeds S,S,...] [--long N] "
			"[--seconds S] [--jobs J] [--struct NAME] [--replay SEED [--save PATH]] "
			"[--quiet] [--verbose] [--undamaged] [--stop-at-first-match TEXT]\n");
		return 2;
	}
	fsck_path = argv[1];
	/* glibc's own aborts (a double free) say why on stderr, not the tty */
	setenv("LIBC_FATAL_STDERR_", "1", 1);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--quiet") == 0) {
			quiet = true;
			continue;
		}
		if (strcmp(a, "--verbose") == 0) {
			verbose = true;
			continue;
		}
		if (strcmp(a, "--undamaged") == 0) {
			want = WANT_NONE;
			continue;
		}
		if (!v) {
			fprintf(stderr, "hostile: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--count") == 0)
			count = strtoull(v, NULL, 10);
		else if (strcmp(a, "--first") == 0)
			first = strtoull(v, NULL, 10);
		else if (strcmp(a, "--seeds") == 0) {
			for (const char *p = v; *p && nlisted < MAX_LISTED; p += strspn(p, ","))
				listed[nlisted++] = strtoull(p, (char **)&p, 10);
		}
		else if (strcmp(a, "--long") == 0) {
			count = strtoull(v, NULL, 10);
			jobs = 2;
		} else if (strcmp(a, "--seconds") == 0)
			seconds = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--jobs") == 0)
			jobs = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--struct") == 0) {
			want = h_struct_parse(v);
			if (want < 0) {
				fprintf(stderr, "hostile: no structure named %s\n", v);
				return 2;
			}
		} else if (strcmp(a, "--replay") == 0) {
			replay = true;
			replay_seed = strtoull(v, NULL, 10);
		} else if (strcmp(a, "--save") == 0)
			save_path = v;
		else if (strcmp(a, "--stop-at-first-match") == 0)
			stop_match = v;
		else {
			fprintf(stderr, "hostile: unknown option %s\n", a);
			return 2;
		}
	}
	if (access(fsck_path, X_OK) != 0) {
		fprintf(stderr, "hostile: cannot run %s\n", fsck_path);
		return 2;
	}
	if (jobs < 1 || jobs > 16)
		jobs = 1;
	/* The case images (4 MiB each, a few per worker) go to memory where
	 * the machine has it: fsck flushes each one, and on a disk that is
	 * the disk's latency, most of a case's time.  $TMPDIR first. */
	const char *base = getenv("TMPDIR");
	if (!base || !*base || strlen(base) > 40)
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(tmpdir, sizeof(tmpdir), "%s/hostile.XXXXXX", base);
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "hostile: cannot make a temporary directory\n");
		return 2;
	}
	for (int k = 0; k < H_BASES; k++) {
		const char *why = "";
		if (h_base_build((enum h_base)k, &bases[k], &why) != 0) {
			fprintf(stderr, "hostile: cannot build base image %d: %s\n", k, why);
			cleanup_tmp();
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (replay) {
		replay_mode = true;
		struct record r;
		run_case(replay_seed, want, &r);
		account(&r, true);
		if (!is_failure(r.outcome))
			printf("seed %llu %s\n", (unsigned long long)replay_seed,
			       outcome_names[r.outcome]);
		cleanup_tmp();
		return is_failure(r.outcome) ? 1 : 0;
	}
	double t0 = now_s();
	int pipefd[2];
	if (pipe(pipefd) != 0) {
		cleanup_tmp();
		return 2;
	}
	pid_t workers[16];
	for (unsigned j = 0; j < jobs; j++) {
		workers[j] = fork();
		if (workers[j] == 0) {
			close(pipefd[0]);
			for (uint64_t k = j; k < (nlisted ? nlisted : count); k += jobs) {
				if (seconds && now_s() - t0 > seconds)
					break;
				uint64_t s = nlisted ? listed[k] : first + k;
				struct record r;
				run_case(s, want, &r);
				if (write(pipefd[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
					_exit(2);
			}
			_exit(0);
		}
	}
	close(pipefd[1]);
	struct record r;
	unsigned done = 0;
	bool matched = false;
	while (read(pipefd[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
		done++;
		account(&r, !quiet || is_failure(r.outcome));
		if (stop_match && !matched && is_failure(r.outcome) &&
		    (strstr(r.what, stop_match) || strstr(r.mutation, stop_match))) {
			matched = true;
			printf("MATCH \"%s\": seed %llu, after %u cases, %.1f s\n", stop_match,
			       (unsigned long long)r.seed, done, now_s() - t0);
			for (unsigned j = 0; j < jobs; j++)
				kill(workers[j], SIGTERM);
			break;
		}
		if (!quiet && done % 500 == 0)
			fprintf(stderr, "hostile: %u cases, %.0f s\n", done, now_s() - t0);
	}
	for (unsigned j = 0; j < jobs; j++)
		waitpid(workers[j], NULL, 0);
	summary(now_s() - t0);
	cleanup_tmp();
	if (stop_match)
		return matched ? 0 : 1;
	unsigned failed = 0;
	for (int s = 0; s < HS_COUNT; s++)
		for (int o = 0; o < OUT_KINDS; o++)
			failed += is_failure((unsigned)o) ? per_struct[s][o] : 0;
	return failed ? 1 : 0;
}
