/*
 * show_inode.h - one inode as an administrator reads it (dump.ordfs -i,
 * debugfs's stat for ordfs): its type, mode, owner, links, size, blocks,
 * times and flags, the file flags as chattr letters among them.
 *
 * Rules: the slot is read from the image and decoded with its checksum
 * (the image is untrusted); file-flag bits no ordfs defines are shown, not
 * refused, since that is what someone looking at a damaged inode wants to
 * see.  Nothing is written.
 */
#ifndef ORDFS_TOOLS_SHOW_INODE_H
#define ORDFS_TOOLS_SHOW_INODE_H

#include <stdint.h>
#include <stdio.h>

#include "format/format.h"

struct blockdev;

/* Prints inode ino of the image on bd.  0, or -EINVAL (out of range),
 * -ENOENT (free), -EUCLEAN (fails its checksum or decode), an I/O error;
 * then a line says why. */
int show_inode(FILE *out, struct blockdev *bd, const struct ordfs_super *sb, uint32_t ino);

#endif
