/*
 * sparse.c - a sparse file: one 4 KiB block every STRIDE bytes.
 *
 * Built by bench/scale/run at run time (cc -O2).
 *
 *   sparse FILE SIZE STRIDE
 *
 * writes 4 KiB (the block's offset, then a fixed pattern) at offsets 0,
 * STRIDE, 2*STRIDE, ... below SIZE and a last 4 KiB ending at SIZE, so the
 * file is exactly SIZE bytes, then fsyncs it.  Every block is its own
 * extent when STRIDE > 4 KiB.  Prints writes, seconds and writes/s.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int put(int fd, uint8_t *blk, uint64_t off)
{
	memcpy(blk, &off, sizeof(off));
	if (pwrite(fd, blk, 4096, (off_t)off) != 4096) {
		fprintf(stderr, "sparse: pwrite at %llu: %s\n", (unsigned long long)off,
			strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: sparse FILE SIZE STRIDE\n");
		return 2;
	}
	uint64_t size = strtoull(argv[2], NULL, 0), stride = strtoull(argv[3], NULL, 0);
	if (size < 4096 || stride < 4096 || size % 4096 || stride % 4096) {
		fprintf(stderr, "sparse: SIZE and STRIDE: multiples of 4096\n");
		return 2;
	}
	int fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0) {
		perror("sparse: open");
		return 1;
	}
	uint8_t blk[4096];
	for (size_t i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 7);
	uint64_t writes = 0;
	double t0 = now();
	for (uint64_t off = 0; off + 4096 <= size - 4096; off += stride, writes++)
		if (put(fd, blk, off))
			return 1;
	if (put(fd, blk, size - 4096))
		return 1;
	writes++;
	if (fsync(fd) != 0) {
		perror("sparse: fsync");
		return 1;
	}
	close(fd);
	double s = now() - t0;
	printf("op=sparse size=%llu stride=%llu writes=%llu secs=%.3f rate=%.0f\n",
	       (unsigned long long)size, (unsigned long long)stride, (unsigned long long)writes,
	       s, writes / s);
	return 0;
}
