/*
 * namei_internal.h - what the namespace operations' files share.
 */
#ifndef ORDFS_NAMEI_INTERNAL_H
#define ORDFS_NAMEI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ordfs;
struct inode;
struct handle;

/* The directory entry type of a mode (DT_*). */
uint8_t namei_dtype_of(uint16_t mode);
bool namei_is_dir(const struct inode *inode);
/* A name in dir changed: its mtime and ctime are now. */
void namei_touch_dir(struct inode *dir);
/* What every change of a name in dir needs: a writable filesystem, a
 * directory, a valid name. */
int namei_check_change_in_dir(struct ordfs *fs, struct inode *dir, const char *name,
			      size_t len);
/* Drops one link (two for a directory) of child under h, putting it on
 * the orphan list at zero. */
int namei_drop_link(struct ordfs *fs, struct handle *h, struct inode *child);

#endif
