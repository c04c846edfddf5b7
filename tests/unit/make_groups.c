/*
 * make_groups.c - `make_groups IMAGE BLOCKS`: grows the unmounted, clean
 * filesystem in the image file IMAGE (already BLOCKS blocks long or more)
 * to BLOCKS blocks with block-bitmap groups past its area, by hand, as
 * the unit tests do (tfs_add_groups, helpers.h), for the command-line
 * tests of dump.ordfs and fsck.ordfs until resize.ordfs makes such
 * images.  Not a test, not installed.
 *
 * Rules: exit 0 when grown, 1 with one line on stderr otherwise (the
 * image may then be half grown: it is a scratch copy).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: make_groups IMAGE BLOCKS\n");
		return 1;
	}
	char *end;
	unsigned long long blocks = strtoull(argv[2], &end, 10);
	if (*end || end == argv[2]) {
		fprintf(stderr, "make_groups: bad block count '%s'\n", argv[2]);
		return 1;
	}
	struct blockdev *bd;
	int err = blockdev_file_open(argv[1], 0, &bd);
	if (!err) {
		err = tfs_add_groups(bd, blocks);
		blockdev_destroy(bd);
	}
	if (err) {
		fprintf(stderr, "make_groups: %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	return 0;
}
