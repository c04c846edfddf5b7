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

/* Damage met by a namespace operation: the thread's corruption note
 * (ordfs_take_corruption_note) set from fmt; returns -EUCLEAN. */
int namei_corrupt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* dir is to lose a subdirectory's link: it has one per subdirectory past
 * its own two, so a count below 3 is damaged, and dropping it would take
 * a directory in use (the root included) to 0 and free it: -EUCLEAN. */
int namei_check_subdir_link(const struct inode *dir);
/* -EUCLEAN if the entry name -> ino of dir names dir itself or the root. */
int namei_check_entry_ino(const struct inode *dir, const char *name, size_t len, uint32_t ino);
/* namei_check_entry_ino, and a directory child's '..' must be dir; dir and
 * child locked by the caller (child: or not a directory). */
int namei_check_child_locked(const struct inode *dir, const char *name, size_t len,
			     const struct inode *child);

#endif
