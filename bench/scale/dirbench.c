/*
 * dirbench.c - one big directory, timed: create, stat, readdir, unlink.
 *
 * Built by bench/scale/run at run time (cc -O2).  Names are "f%07u" so
 * every run makes the same names.  Each command prints one line of
 * key=value pairs that the driver parses:
 *
 *   dirbench create  DIR N          open(O_CREAT|O_EXCL|O_WRONLY) + close of
 *                                   f0000000 .. f(N-1): files/s
 *   dirbench stat    DIR N K SEED   stat of K distinct names drawn at random
 *                                   from the N that exist, each call timed:
 *                                   mean, p50, p99 in microseconds
 *   dirbench readdir DIR            every entry through readdir(3) (the
 *                                   kernel's getdents64): entries, seconds
 *   dirbench unlink  DIR N          unlink of all N names in order: files/s
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void name_of(char *buf, size_t len, const char *dir, uint32_t i)
{
	snprintf(buf, len, "%s/f%07u", dir, i);
}

static int die(const char *what, const char *path)
{
	fprintf(stderr, "dirbench: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

static int cmd_create(const char *dir, uint32_t n)
{
	char path[4096];
	double t0 = now();
	for (uint32_t i = 0; i < n; i++) {
		name_of(path, sizeof(path), dir, i);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			return die("create", path);
		if (close(fd) != 0)
			return die("close", path);
	}
	double s = now() - t0;
	printf("op=create n=%u secs=%.3f rate=%.0f\n", n, s, n / s);
	return 0;
}

/* xorshift64*: a seeded generator, so a run can be repeated. */
static uint64_t rng_state;
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmd_stat(const char *dir, uint32_t n, uint32_t k, uint64_t seed)
{
	if (k > n)
		k = n;
	uint32_t *idx = malloc((size_t)n * sizeof(*idx));
	double *lat = malloc((size_t)k * sizeof(*lat));
	if (!idx || !lat)
		return die("malloc", "");
	for (uint32_t i = 0; i < n; i++)
		idx[i] = i;
	rng_state = seed ? seed : 1;
	/* The first k of a partial Fisher-Yates shuffle: k distinct names. */
	for (uint32_t i = 0; i < k; i++) {
		uint32_t j = i + (uint32_t)(rng() % (n - i));
		uint32_t t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
	}
	char path[4096];
	struct stat st;
	double total = 0;
	for (uint32_t i = 0; i < k; i++) {
		name_of(path, sizeof(path), dir, idx[i]);
		double t0 = now();
		if (stat(path, &st) != 0)
			return die("stat", path);
		lat[i] = now() - t0;
		total += lat[i];
	}
	qsort(lat, k, sizeof(*lat), cmp_double);
	printf("op=stat n=%u k=%u secs=%.3f mean_us=%.2f p50_us=%.2f p99_us=%.2f max_us=%.1f\n",
	       n, k, total, total / k * 1e6, lat[k / 2] * 1e6, lat[(size_t)k * 99 / 100] * 1e6,
	       lat[k - 1] * 1e6);
	free(idx);
	free(lat);
	return 0;
}

static int cmd_readdir(const char *dir)
{
	double t0 = now();
	DIR *d = opendir(dir);
	if (!d)
		return die("opendir", dir);
	uint64_t count = 0;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			count++;
	if (errno)
		return die("readdir", dir);
	closedir(d);
	double s = now() - t0;
	printf("op=readdir entries=%llu secs=%.3f rate=%.0f\n", (unsigned long long)count, s,
	       count / s);
	return 0;
}

static int cmd_unlink(const char *dir, uint32_t n)
{
	char path[4096];
	double t0 = now();
	for (uint32_t i = 0; i < n; i++) {
		name_of(path, sizeof(path), dir, i);
		if (unlink(path) != 0)
			return die("unlink", path);
	}
	double s = now() - t0;
	printf("op=unlink n=%u secs=%.3f rate=%.0f\n", n, s, n / s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "create") == 0)
		return cmd_create(argv[2], (uint32_t)strtoul(argv[3], NULL, 0));
	if (argc >= 6 && strcmp(argv[1], "stat") == 0)
		return cmd_stat(argv[2], (uint32_t)strtoul(argv[3], NULL, 0),
				(uint32_t)strtoul(argv[4], NULL, 0), strtoull(argv[5], NULL, 0));
	if (argc >= 3 && strcmp(argv[1], "readdir") == 0)
		return cmd_readdir(argv[2]);
	if (argc >= 4 && strcmp(argv[1], "unlink") == 0)
		return cmd_unlink(argv[2], (uint32_t)strtoul(argv[3], NULL, 0));
	fprintf(stderr, "usage: dirbench create DIR N | stat DIR N K SEED | readdir DIR | "
			"unlink DIR N\n");
	return 2;
}
