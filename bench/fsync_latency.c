/*
 * fsync_latency.c - latency of fsync and fdatasync on one file in DIR.
 *
 * Usage: fsync_latency DIR COUNT
 * Two workloads on a fresh file DIR/fsync-latency.dat, COUNT calls each:
 *   append     write 4 KiB at the end, fsync     (size and blocks change:
 *              a journal commit on ordfs)
 *   overwrite  write 4 KiB in place, fdatasync  (data only: a flush)
 * Prints one line per workload: "<name> median_us p99_us".  Only the
 * fsync/fdatasync call is timed.  The file is removed at the end.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IO_SIZE 4096

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *name, double *lat, int n)
{
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	int p99 = (int)((double)n * 0.99);
	if (p99 >= n)
		p99 = n - 1;
	printf("%s %.1f %.1f\n", name, lat[n / 2], lat[p99]);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fsync_latency DIR COUNT\n");
		return 2;
	}
	int n = atoi(argv[2]);
	if (n < 1) {
		fprintf(stderr, "fsync_latency: COUNT must be positive\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/fsync-latency.dat", argv[1]);
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	char buf[IO_SIZE];
	double *lat = malloc(sizeof(*lat) * (size_t)n);
	if (!lat)
		return 1;

	for (int i = 0; i < n; i++) {
		memset(buf, 'a' + i % 26, sizeof(buf));
		if (pwrite(fd, buf, IO_SIZE, (off_t)i * IO_SIZE) != IO_SIZE) {
			perror("pwrite");
			return 1;
		}
		double t = now_us();
		if (fsync(fd) != 0) {
			perror("fsync");
			return 1;
		}
		lat[i] = now_us() - t;
	}
	report("append", lat, n);

	for (int i = 0; i < n; i++) {
		memset(buf, 'A' + i % 26, sizeof(buf));
		if (pwrite(fd, buf, IO_SIZE, (off_t)(i % 16) * IO_SIZE) != IO_SIZE) {
			perror("pwrite");
			return 1;
		}
		double t = now_us();
		if (fdatasync(fd) != 0) {
			perror("fdatasync");
			return 1;
		}
		lat[i] = now_us() - t;
	}
	report("overwrite", lat, n);
	close(fd);
	unlink(path);
	free(lat);
	return 0;
}
