/*
 * main.c - ordfs-corrupt IMAGE KIND SEED: damage one structure of an
 * unmounted image for tests (see corrupt.h); `ordfs-corrupt populate
 * IMAGE` fills a fresh image with a small tree to damage.  Not installed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corrupt.h"
#include "blockdev/blockdev.h"

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "populate") == 0) {
		struct blockdev *bd;
		int err = blockdev_file_open(argv[2], 0, &bd);
		if (!err) {
			err = corrupt_populate(bd);
			blockdev_destroy(bd);
		}
		if (err)
			fprintf(stderr, "ordfs-corrupt: %s: %s\n", argv[2], strerror(-err));
		return err ? 1 : 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: ordfs-corrupt IMAGE KIND SEED | ordfs-corrupt populate IMAGE\n"
				"kinds:");
		for (int k = 0; k < CORRUPT_KINDS; k++)
			fprintf(stderr, " %s", corrupt_kind_name((enum corrupt_kind)k));
		fprintf(stderr, "\n");
		return 2;
	}
	int kind = corrupt_kind_parse(argv[2]);
	char *end;
	unsigned long long seed = strtoull(argv[3], &end, 10);
	if (kind < 0 || *end || end == argv[3]) {
		fprintf(stderr, "ordfs-corrupt: bad kind '%s' or seed '%s'\n", argv[2], argv[3]);
		return 2;
	}
	struct blockdev *bd;
	int err = blockdev_file_open(argv[1], 0, &bd);
	if (err) {
		fprintf(stderr, "ordfs-corrupt: %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	char what[160] = "";
	err = corrupt_image(bd, (enum corrupt_kind)kind, seed, what, sizeof(what));
	blockdev_destroy(bd);
	if (err == -ENOENT) {
		fprintf(stderr, "ordfs-corrupt: %s: no %s target in this image\n", argv[1], argv[2]);
		return 3;
	}
	if (err) {
		fprintf(stderr, "ordfs-corrupt: %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	printf("%s\n", what);
	return 0;
}
