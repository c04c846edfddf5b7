/*
 * offline_image.h - whether a tool may rewrite an unmounted image in
 * place (tune.ordfs, resize.ordfs).
 *
 * Rules: the caller holds the image (its lock and owner record); this only
 * reads.  Refused, each with one line naming the image and what to run
 * first: features this build does not know, an error recorded in the
 * superblock, a journal whose superblock is corrupt, that needs replay or
 * that recorded an error.  With need_clean, also an image not marked
 * cleanly unmounted (a tool that then writes through the journal itself,
 * as resize.ordfs does, must start from a clean one).
 */
#ifndef ORDFS_TOOLS_OFFLINE_IMAGE_H
#define ORDFS_TOOLS_OFFLINE_IMAGE_H

#include <stdbool.h>

#include "cli.h"

struct blockdev;

/* 0, or a negative errno after the one-line refusal. */
int cli_check_offline_image(const struct cli *cli, const char *image, struct blockdev *bd,
			    const struct ordfs_super *sb, bool need_clean);

#endif
